//! Values kept between uses for the next, shared by every thread ([`Kept`]): encoders and zstd
//! contexts, each of which costs more to set up than a small file costs to pack.

use std::sync::Mutex;

/// Values kept between uses, by key: a thread takes one ([`Kept::take`]), uses it and gives it
/// back ([`Kept::give`]). As many are kept as were in use at once (at most `cap`), however many
/// threads used one: a batch whose workers take turns packing keeps one set of encoders, not
/// one a worker, each grown to the largest file that worker met.
pub(crate) struct Kept<K, T> {
    items: Mutex<Vec<(K, T)>>,
    cap: usize,
}

impl<K: PartialEq, T> Kept<K, T> {
    /// Keeps at most `cap` values.
    pub(crate) const fn new(cap: usize) -> Kept<K, T> {
        Kept {
            items: Mutex::new(Vec::new()),
            cap,
        }
    }

    /// The value of `key` given back last, if one is kept.
    pub(crate) fn take(&self, key: &K) -> Option<T> {
        let mut items = self.items.lock().unwrap_or_else(|p| p.into_inner());
        let i = items.iter().rposition(|(k, _)| k == key)?;
        Some(items.remove(i).1)
    }

    /// Keeps `value` for the next [`Kept::take`] of `key`; past `cap` the value given back
    /// longest ago is dropped.
    pub(crate) fn give(&self, key: K, value: T) {
        let mut items = self.items.lock().unwrap_or_else(|p| p.into_inner());
        let old = (items.len() >= self.cap).then(|| items.remove(0));
        items.push((key, value));
        // The value given up is dropped outside the lock.
        drop(items);
        drop(old);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value is taken once, the last given back of its key first; past the cap the oldest
    /// goes; values used by many threads at once are kept as many as were in use.
    #[test]
    fn values_are_taken_once_last_first_and_kept_as_many_as_were_in_use() {
        let k: Kept<u8, u32> = Kept::new(3);
        assert_eq!(k.take(&1), None);
        k.give(1, 10);
        k.give(2, 20);
        k.give(1, 11);
        assert_eq!(k.take(&1), Some(11));
        assert_eq!(k.take(&1), Some(10));
        assert_eq!(k.take(&1), None);
        k.give(1, 12);
        k.give(1, 13);
        k.give(3, 30); // over the cap: (2, 20) goes
        assert_eq!(k.take(&2), None);
        assert_eq!(k.take(&3), Some(30));
        let k: Kept<u8, Box<u64>> = Kept::new(64);
        let made = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..100 {
                        let v = k.take(&0).unwrap_or_else(|| {
                            made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            Box::new(0)
                        });
                        k.give(0, v);
                    }
                });
            }
        });
        let made = made.into_inner();
        assert!((1..=8).contains(&made), "{made}");
        assert_eq!(k.items.lock().unwrap().len(), made);
    }
}
