//! One LRU cache of decoded blocks for a whole archive, bounded in bytes.
//!
//! Policy: entries are decoded blocks keyed by (stream, block); the budget counts their decoded
//! bytes; inserting evicts least-recently-used entries until the new block fits; a block larger
//! than the whole budget is not cached; a budget of 0 disables caching. Lookups and inserts take
//! a short lock; decoding happens outside it, so two threads that miss the same block at once
//! may both decode it (the second insert replaces the first).
//!
//! When the cache does not help: reads that touch every block once (a full-variable read, a
//! sequential scan) only churn it, and reads of a time series across the record dimension touch
//! one block per record — with a budget smaller than those blocks, each repeat decodes them again.
//! Size the budget to the working set of blocks you revisit.

use lru::LruCache;
use std::sync::{Arc, Mutex, MutexGuard};

/// Key of a cached block: (stream id, block number).
pub type BlockKey = (u32, u64);

/// Counters of a [`BlockCache`].
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-cachestats", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let z = dir.join("obs.nc3z");
/// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
/// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
/// use nc3pack::{CacheStats, Dataset};
/// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
/// let _: Vec<f32> = a.read("temp", &a.slab("temp", Some(&[0]), Some(&[5]), None)?)?;
/// let CacheStats { hits, misses, entries, budget, .. } = a.cache_stats();
/// assert_eq!((hits, misses, entries), (0, 1, 1)); // one block decoded and kept
/// assert_eq!(budget, nc3pack::DEFAULT_CACHE_BYTES);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups that found the block.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Blocks evicted to make room.
    pub evictions: u64,
    /// Decoded bytes held now.
    pub bytes: u64,
    /// Blocks held now.
    pub entries: u64,
    /// The byte budget.
    pub budget: u64,
}

struct Inner {
    lru: LruCache<BlockKey, Arc<Vec<u8>>>,
    stats: CacheStats,
}

/// A byte-bounded LRU cache of decoded blocks, safe to share between threads.
///
/// ```
/// use nc3pack::__private::BlockCache;
/// use std::sync::Arc;
/// let c = BlockCache::new(10);
/// c.insert((0, 0), Arc::new(vec![0; 6]));
/// c.insert((0, 1), Arc::new(vec![0; 6])); // evicts (0, 0)
/// assert!(c.get((0, 0)).is_none());
/// assert!(c.get((0, 1)).is_some());
/// let s = c.stats();
/// assert_eq!((s.hits, s.misses, s.evictions, s.bytes), (1, 1, 1, 6));
/// ```
pub struct BlockCache {
    inner: Mutex<Inner>,
}

impl BlockCache {
    /// A cache holding at most `budget` decoded bytes (0: no caching).
    pub fn new(budget: u64) -> BlockCache {
        BlockCache {
            inner: Mutex::new(Inner {
                lru: LruCache::unbounded(),
                stats: CacheStats {
                    budget,
                    ..CacheStats::default()
                },
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Looks a block up, marking it most recently used; counts a hit or a miss.
    pub fn get(&self, key: BlockKey) -> Option<Arc<Vec<u8>>> {
        let mut g = self.lock();
        let found = g.lru.get(&key).cloned();
        if found.is_some() {
            g.stats.hits += 1;
        } else {
            g.stats.misses += 1;
        }
        found
    }

    /// Whether a block is held, without counting a hit or miss or changing its recency.
    pub fn contains(&self, key: BlockKey) -> bool {
        self.lock().lru.contains(&key)
    }

    /// Inserts a decoded block, evicting least-recently-used blocks to stay within budget.
    pub fn insert(&self, key: BlockKey, block: Arc<Vec<u8>>) {
        let mut g = self.lock();
        let size = block.len() as u64;
        if size > g.stats.budget {
            return;
        }
        if let Some(old) = g.lru.pop(&key) {
            g.stats.bytes -= old.len() as u64;
        }
        while g.stats.bytes + size > g.stats.budget {
            match g.lru.pop_lru() {
                Some((_, old)) => {
                    g.stats.bytes -= old.len() as u64;
                    g.stats.evictions += 1;
                }
                None => break,
            }
        }
        g.stats.bytes += size;
        g.lru.put(key, block);
    }

    /// Changes the budget, evicting as needed.
    pub fn set_budget(&self, budget: u64) {
        let mut g = self.lock();
        g.stats.budget = budget;
        while g.stats.bytes > budget {
            match g.lru.pop_lru() {
                Some((_, old)) => {
                    g.stats.bytes -= old.len() as u64;
                    g.stats.evictions += 1;
                }
                None => break,
            }
        }
    }

    /// The counters.
    pub fn stats(&self) -> CacheStats {
        let g = self.lock();
        CacheStats {
            entries: g.lru.len() as u64,
            ..g.stats
        }
    }

    /// Drops every block and zeroes the counters (the budget stays).
    pub fn clear(&self) {
        let mut g = self.lock();
        g.lru.clear();
        g.stats = CacheStats {
            budget: g.stats.budget,
            ..CacheStats::default()
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_in_lru_order_and_never_exceeds_the_budget() {
        let c = BlockCache::new(30);
        for b in 0..3 {
            c.insert((1, b), Arc::new(vec![0; 10]));
        }
        assert!(c.get((1, 0)).is_some()); // 0 is now most recent; 1 is least
        c.insert((1, 3), Arc::new(vec![0; 10]));
        assert!(c.get((1, 1)).is_none());
        assert!(c.get((1, 0)).is_some() && c.get((1, 2)).is_some() && c.get((1, 3)).is_some());
        c.insert((1, 4), Arc::new(vec![0; 25]));
        let s = c.stats();
        assert!(s.bytes <= 30);
        assert_eq!((s.entries, s.bytes), (1, 25));
        c.insert((1, 5), Arc::new(vec![0; 31])); // larger than the budget: not cached
        assert!(c.get((1, 5)).is_none());
        c.set_budget(0);
        assert_eq!(c.stats().bytes, 0);
        c.insert((1, 6), Arc::new(vec![0; 1]));
        assert_eq!(c.stats().entries, 0);
    }
}
