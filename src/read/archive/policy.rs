//! What an archive's block cache keeps of the blocks reads decode: [`CachePolicy`].

use std::sync::atomic::{AtomicU8, Ordering};

/// Which decoded blocks an [`crate::Archive`]'s reads put in its block cache, beyond the
/// blocks every read caches (the partial blocks at the ends of a large read, the blocks of a
/// scattered read).
///
/// A plain value: read it with [`crate::Archive::cache_policy`], set it with
/// [`crate::Archive::set_cache_policy`] (or one field at a time with
/// [`crate::Archive::set_cache_whole_blocks`] and
/// [`crate::Archive::set_cache_first_small_reads`]). The default caches whole blocks and not a
/// block's first small read.
///
/// ```
/// use nc3pack::CachePolicy;
/// let p = CachePolicy::default();
/// assert!(p.whole_blocks && !p.first_small_reads);
/// // A reader that keeps what it reads, and reads few values again.
/// let keep_nothing_twice = CachePolicy { whole_blocks: false, ..CachePolicy::default() };
/// assert_ne!(keep_nothing_twice, p);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CachePolicy {
    /// A large read (one contiguous range over more than one block) also caches the blocks it
    /// decodes whole, when the range fits in half of the cache's budget
    /// ([`crate::Archive::set_cache_whole_blocks`]).
    pub whole_blocks: bool,
    /// The first small read of a block (less than the block, inside it) decodes and caches the
    /// whole block, instead of decoding only its part
    /// ([`crate::Archive::set_cache_first_small_reads`]).
    pub first_small_reads: bool,
}

impl Default for CachePolicy {
    fn default() -> Self {
        CachePolicy {
            whole_blocks: true,
            first_small_reads: false,
        }
    }
}

impl CachePolicy {
    const WHOLE: u8 = 1;
    const FIRST: u8 = 2;

    fn bits(self) -> u8 {
        (if self.whole_blocks { Self::WHOLE } else { 0 })
            | (if self.first_small_reads {
                Self::FIRST
            } else {
                0
            })
    }

    fn from_bits(bits: u8) -> Self {
        CachePolicy {
            whole_blocks: bits & Self::WHOLE != 0,
            first_small_reads: bits & Self::FIRST != 0,
        }
    }
}

/// An archive's [`CachePolicy`], changed through a shared reference (reads on other threads
/// see a change from their next block on).
pub(crate) struct PolicyCell(AtomicU8);

impl PolicyCell {
    pub(crate) fn new(p: CachePolicy) -> Self {
        PolicyCell(AtomicU8::new(p.bits()))
    }

    pub(crate) fn get(&self) -> CachePolicy {
        CachePolicy::from_bits(self.0.load(Ordering::Relaxed))
    }

    pub(crate) fn set(&self, p: CachePolicy) {
        self.0.store(p.bits(), Ordering::Relaxed);
    }

    /// Changes one part of the policy, leaving the other as another thread may have just set
    /// it.
    pub(crate) fn update(&self, f: impl Fn(CachePolicy) -> CachePolicy) {
        // (The closure always returns Some: the update cannot fail.)
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                Some(f(CachePolicy::from_bits(bits)).bits())
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip() {
        for whole_blocks in [false, true] {
            for first_small_reads in [false, true] {
                let p = CachePolicy {
                    whole_blocks,
                    first_small_reads,
                };
                let cell = PolicyCell::new(p);
                assert_eq!(cell.get(), p);
                cell.update(|q| CachePolicy {
                    whole_blocks: !q.whole_blocks,
                    ..q
                });
                assert_eq!(cell.get().whole_blocks, !whole_blocks);
                assert_eq!(cell.get().first_small_reads, first_small_reads);
            }
        }
    }
}
