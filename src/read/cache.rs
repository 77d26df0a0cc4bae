//! One LRU cache of decoded blocks for a whole archive, bounded in bytes.
//!
//! Policy: entries are decoded blocks keyed by (stream, block); the budget counts their decoded
//! bytes (a constant block is held as its element, and counts that element's bytes); inserting evicts least-recently-used entries until the new block fits; a block larger
//! than the whole budget is not cached; a budget of 0 disables caching. Lookups and inserts take
//! a short lock; decoding happens outside it. A reader that misses a block may claim it
//! ([`BlockCache::claim`]): a second reader that misses it while it is being decoded then waits
//! for that decode instead of decoding it again (readers of the original bytes, whose
//! neighbouring requests share blocks, served at once by several threads).
//!
//! When the cache does not help: reads that touch every block once (a full-variable read, a
//! sequential scan) only churn it, and reads of a time series across the record dimension touch
//! one block per record, of which they take one value: such a block is cached only when it is
//! read that way a second time (`BlockCache::admit`), and with a budget smaller than those
//! blocks each repeat decodes them again. Size the budget to the working set of blocks you
//! revisit.

use lru::LruCache;
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Key of a cached block: (stream id, block number).
pub type BlockKey = (u32, u64);

/// A decoded block: its bytes, or a constant block as its element and length, never built
/// (a constant block of 1 GiB costs 1 to 8 bytes until values are copied out of it).
///
/// ```
/// use nc3pack::testing::Block;
/// use std::sync::Arc;
/// let c = Block::constant(&[0, 1], 6);
/// let mut out = [9u8; 3];
/// c.copy_to(1, &mut out); // bytes 1, 2 and 3 of 0 1 0 1 0 1
/// assert_eq!(out, [1, 0, 1]);
/// assert_eq!((c.len(), c.held_bytes()), (6, 2));
/// let b = Block::from(Arc::new(vec![5, 6, 7]));
/// b.copy_to(1, &mut out[..2]);
/// assert_eq!(out, [6, 7, 1]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// The decoded bytes.
    Bytes(Arc<Vec<u8>>),
    /// Every element is `value[..esize]`; the block is `len` bytes (whole elements).
    Constant {
        /// The element, big-endian, in its first `esize` bytes.
        value: [u8; 8],
        /// Element size, 1 to 8.
        esize: usize,
        /// Decoded length of the block.
        len: u64,
    },
}

impl Block {
    /// A constant block of `len` bytes whose elements are `value` (1 to 8 bytes; longer ones
    /// are cut to 8, an empty one taken as one zero byte).
    ///
    /// ```
    /// let c = nc3pack::testing::Block::constant(&[7; 4], 4096);
    /// assert_eq!(c.len(), 4096);
    /// ```
    pub fn constant(value: &[u8], len: u64) -> Block {
        let esize = value.len().clamp(1, 8);
        let mut v = [0u8; 8];
        let n = value.len().min(8);
        v[..n].copy_from_slice(&value[..n]);
        Block::Constant {
            value: v,
            esize,
            len,
        }
    }

    /// Decoded length of the block.
    ///
    /// ```
    /// use std::sync::Arc;
    /// assert_eq!(nc3pack::testing::Block::from(Arc::new(vec![1, 2])).len(), 2);
    /// ```
    pub fn len(&self) -> u64 {
        match self {
            Block::Bytes(b) => b.len() as u64,
            Block::Constant { len, .. } => *len,
        }
    }

    /// Whether the block has no bytes.
    ///
    /// ```
    /// assert!(nc3pack::testing::Block::constant(&[1], 0).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the cache counts for the block: its length, or its element's for a constant block.
    ///
    /// ```
    /// assert_eq!(nc3pack::testing::Block::constant(&[1; 8], 1 << 30).held_bytes(), 8);
    /// ```
    pub fn held_bytes(&self) -> u64 {
        match self {
            Block::Bytes(b) => b.len() as u64,
            Block::Constant { esize, .. } => *esize as u64,
        }
    }

    /// Copies the block's bytes `within..within + dst.len()` into `dst`; false (and `dst`
    /// untouched) if they are not all in the block.
    ///
    /// ```
    /// let c = nc3pack::testing::Block::constant(&[1, 2, 3, 4], 8);
    /// let mut out = [0u8; 5];
    /// assert!(c.copy_to(3, &mut out));
    /// assert_eq!(out, [4, 1, 2, 3, 4]);
    /// assert!(!c.copy_to(4, &mut out));
    /// ```
    pub fn copy_to(&self, within: u64, dst: &mut [u8]) -> bool {
        let Some(end) = within
            .checked_add(dst.len() as u64)
            .filter(|&e| e <= self.len())
        else {
            return false;
        };
        match self {
            Block::Bytes(b) => dst.copy_from_slice(&b[within as usize..end as usize]),
            Block::Constant { value, esize, .. } => fill_pattern(&value[..*esize], within, dst),
        }
        true
    }
}

/// Fills `dst` with the bytes from `within` on of `value` repeated without end.
pub(crate) fn fill_pattern(value: &[u8], within: u64, dst: &mut [u8]) {
    let n = value.len();
    if n <= 1 {
        dst.fill(value.first().copied().unwrap_or(0));
        return;
    }
    // The element turned so that it starts at `within`.
    let phase = (within % n as u64) as usize;
    let mut turned = [0u8; 8];
    for (i, t) in turned[..n].iter_mut().enumerate() {
        *t = value[(phase + i) % n];
    }
    let turned = &turned[..n];
    let mut chunks = dst.chunks_exact_mut(n);
    for c in &mut chunks {
        c.copy_from_slice(turned);
    }
    let rest = chunks.into_remainder();
    let k = rest.len();
    rest.copy_from_slice(&turned[..k]);
}

impl Default for Block {
    /// An empty block of bytes.
    fn default() -> Block {
        Block::Bytes(Arc::default())
    }
}

impl From<Arc<Vec<u8>>> for Block {
    fn from(b: Arc<Vec<u8>>) -> Block {
        Block::Bytes(b)
    }
}

/// Counters of an archive's block cache.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-cachestats", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let z = dir.join("obs.nc3z");
/// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
/// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
/// use nc3pack::{CacheStats, Dataset};
/// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
/// let slab = a.slab("temp", Some(&[0]), Some(&[5]), None)?;
/// let _: Vec<f32> = a.read("temp", &slab)?; // a first small read: its part, nothing kept
/// let _: Vec<f32> = a.read("temp", &slab)?; // the second: the block decoded and kept
/// let CacheStats { hits, misses, entries, budget, .. } = a.cache_stats();
/// assert_eq!((hits, misses, entries), (0, 2, 1));
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
    lru: LruCache<BlockKey, Block>,
    stats: CacheStats,
    /// Blocks read without being cached ([`BlockCache::admit`]), most recent last, at most
    /// [`GHOSTS`].
    ghosts: LruCache<BlockKey, ()>,
    /// Blocks a reader claimed and is decoding ([`BlockCache::claim`]).
    pending: HashMap<BlockKey, Arc<InFlight>>,
}

/// A block being decoded by the reader that claimed it: what it ends with, once it has.
#[derive(Default)]
struct InFlight {
    /// `None` while it is being decoded; then the block, or `None` if the decode failed.
    end: Mutex<Option<Option<Block>>>,
    done: Condvar,
}

/// What a reader that looked a block up is to do ([`BlockCache::claim`]).
pub(crate) enum Claim<'a> {
    /// The block, cached.
    Hit(Block),
    /// Nobody has it: decode it, and hand it over with [`Ticket::done`].
    Mine(Ticket<'a>),
    /// Another reader is decoding it: [`Waiter::wait`] for it.
    Theirs(Waiter),
}

/// A claim on a block to decode: [`Ticket::done`] caches the block and wakes the readers
/// waiting for it. Dropped without it (an error), the waiters are told to decode the block
/// themselves.
pub(crate) struct Ticket<'a> {
    cache: &'a BlockCache,
    key: BlockKey,
    pending: Option<Arc<InFlight>>,
}

/// The decode of a block another reader claimed.
pub(crate) struct Waiter(Arc<InFlight>);

/// Blocks read without being cached that the cache remembers, at most: a block read again
/// while it is remembered is cached.
const GHOSTS: usize = 4096;

/// A byte-bounded LRU cache of decoded blocks, safe to share between threads.
///
/// ```
/// use nc3pack::testing::BlockCache;
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
                ghosts: LruCache::unbounded(),
                pending: HashMap::new(),
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
    pub fn get(&self, key: BlockKey) -> Option<Block> {
        let mut g = self.lock();
        let found = g.lru.get(&key).cloned();
        if found.is_some() {
            g.stats.hits += 1;
        } else {
            g.stats.misses += 1;
        }
        found
    }

    /// As [`BlockCache::get`], but a miss is not counted: for a caller that then fetches the
    /// block through a path that counts it.
    pub(crate) fn get_held(&self, key: BlockKey) -> Option<Block> {
        let mut g = self.lock();
        let found = g.lru.get(&key).cloned();
        if found.is_some() {
            g.stats.hits += 1;
        }
        found
    }

    /// Looks a block up as [`BlockCache::get`] does, and on a miss claims it for this reader
    /// to decode ([`Claim::Mine`]), unless another reader has claimed it and not finished
    /// ([`Claim::Theirs`]). A reader holding tickets must finish them (or drop them) before
    /// it waits for another's: then no two readers wait for each other.
    pub(crate) fn claim(&self, key: BlockKey) -> Claim<'_> {
        self.claim_counted(key, true)
    }

    /// As [`BlockCache::claim`], counting no hit or miss: for a block decoded ahead of the
    /// readers, which no reader has asked for yet.
    pub(crate) fn claim_ahead(&self, key: BlockKey) -> Claim<'_> {
        self.claim_counted(key, false)
    }

    fn claim_counted(&self, key: BlockKey, count: bool) -> Claim<'_> {
        let mut g = self.lock();
        if let Some(found) = g.lru.get(&key).cloned() {
            g.stats.hits += u64::from(count);
            return Claim::Hit(found);
        }
        g.stats.misses += u64::from(count);
        if let Some(p) = g.pending.get(&key) {
            return Claim::Theirs(Waiter(Arc::clone(p)));
        }
        let p = Arc::new(InFlight::default());
        g.pending.insert(key, Arc::clone(&p));
        Claim::Mine(Ticket {
            cache: self,
            key,
            pending: Some(p),
        })
    }

    /// Whether a block is held or claimed by a reader decoding it, without counting a hit or
    /// a miss or changing its recency.
    pub(crate) fn held_or_claimed(&self, key: BlockKey) -> bool {
        let g = self.lock();
        g.lru.contains(&key) || g.pending.contains_key(&key)
    }

    /// Whether a block is held, without counting a hit or miss or changing its recency.
    pub fn contains(&self, key: BlockKey) -> bool {
        self.lock().lru.contains(&key)
    }

    /// Inserts a decoded block, evicting least-recently-used blocks to stay within budget.
    pub fn insert(&self, key: BlockKey, block: impl Into<Block>) {
        Self::put(&mut self.lock(), key, block.into());
    }

    fn put(g: &mut Inner, key: BlockKey, block: Block) {
        let size = block.held_bytes();
        if size > g.stats.budget {
            return;
        }
        if let Some(old) = g.lru.pop(&key) {
            g.stats.bytes -= old.held_bytes();
        }
        while g.stats.bytes + size > g.stats.budget {
            match g.lru.pop_lru() {
                Some((_, old)) => {
                    g.stats.bytes -= old.held_bytes();
                    g.stats.evictions += 1;
                }
                None => break,
            }
        }
        g.stats.bytes += size;
        g.lru.put(key, block);
    }

    /// Whether a reader that needs only a little of a block it does not find here should
    /// cache it after decoding it: true if the block was passed over this way recently (a
    /// block read a second time is likely to be read again), false the first time (it is then
    /// remembered) or when the budget is 0. A read of one value of each of many blocks (a time
    /// series) then decodes them without allocating and caching each, and a repeated or
    /// neighbouring read caches them.
    pub(crate) fn admit(&self, key: BlockKey) -> bool {
        let mut g = self.lock();
        if g.stats.budget == 0 {
            return false;
        }
        if g.ghosts.pop(&key).is_some() {
            return true;
        }
        if g.ghosts.len() >= GHOSTS {
            g.ghosts.pop_lru();
        }
        g.ghosts.put(key, ());
        false
    }

    /// Marks a block most recently used if it is held, without counting a hit or a miss.
    pub(crate) fn touch(&self, key: BlockKey) {
        self.lock().lru.promote(&key);
    }

    /// Marks a block least recently used if it is held (the first to be evicted), without
    /// counting a hit or a miss: for a block a scan is done with.
    pub(crate) fn demote(&self, key: BlockKey) {
        self.lock().lru.demote(&key);
    }

    /// Drops a block if it is held (not counted as an eviction).
    pub(crate) fn remove(&self, key: BlockKey) {
        let mut g = self.lock();
        if let Some(old) = g.lru.pop(&key) {
            g.stats.bytes -= old.held_bytes();
        }
    }

    /// Changes the budget, evicting as needed.
    pub fn set_budget(&self, budget: u64) {
        let mut g = self.lock();
        g.stats.budget = budget;
        while g.stats.bytes > budget {
            match g.lru.pop_lru() {
                Some((_, old)) => {
                    g.stats.bytes -= old.held_bytes();
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
        g.ghosts.clear();
        g.stats = CacheStats {
            budget: g.stats.budget,
            ..CacheStats::default()
        };
    }
}

impl Ticket<'_> {
    /// Caches `block` (as [`BlockCache::insert`]) and hands it to the readers waiting for it.
    pub(crate) fn done(mut self, block: Block) {
        self.end(Some(block));
    }

    fn end(&mut self, block: Option<Block>) {
        let Some(p) = self.pending.take() else {
            return;
        };
        {
            let mut g = self.cache.lock();
            if let Some(b) = &block {
                BlockCache::put(&mut g, self.key, b.clone());
            }
            g.pending.remove(&self.key);
        }
        *p.end.lock().unwrap_or_else(|e| e.into_inner()) = Some(block);
        p.done.notify_all();
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        self.end(None);
    }
}

impl Waiter {
    /// Waits until the reader that claimed the block is done with it: the block, or `None`
    /// if that reader failed (this one then decodes the block itself, and reports why it
    /// cannot).
    pub(crate) fn wait(self) -> Option<Block> {
        let mut end = self.0.end.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(block) = &*end {
                return block.clone();
            }
            end = self.0.done.wait(end).unwrap_or_else(|e| e.into_inner());
        }
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

    #[test]
    fn a_block_is_admitted_when_passed_over_a_second_time() {
        let c = BlockCache::new(100);
        assert!(!c.admit((1, 0)));
        assert!(!c.admit((1, 1)));
        assert!(c.admit((1, 0)));
        // Admitted once: forgotten, as clear() forgets every block.
        assert!(!c.admit((1, 0)));
        c.clear();
        assert!(!c.admit((1, 1)));
        // At most GHOSTS blocks are remembered, the oldest forgotten first.
        for b in 0..GHOSTS as u64 {
            assert!(!c.admit((2, b)));
        }
        assert!(c.admit((2, 1)));
        assert!(!c.admit((1, 1)), "forgotten: the oldest");
        // No budget, nothing to admit to.
        c.set_budget(0);
        assert!(!c.admit((3, 0)) && !c.admit((3, 0)));
    }

    #[test]
    fn a_constant_block_is_held_as_its_element() {
        let c = BlockCache::new(16);
        let block = Block::constant(&[1, 2, 3, 4], 1 << 30);
        c.insert((2, 0), block.clone());
        c.insert((2, 1), Arc::new(vec![7; 12]));
        let s = c.stats();
        assert_eq!((s.entries, s.bytes, s.evictions), (2, 16, 0));
        let got = c.get((2, 0)).unwrap();
        assert_eq!(got, block);
        // The last bytes of the block, across elements, and past its end.
        let mut out = [0u8; 6];
        assert!(got.copy_to((1 << 30) - 6, &mut out));
        assert_eq!(out, [3, 4, 1, 2, 3, 4]);
        assert!(!got.copy_to((1 << 30) - 5, &mut out));
        assert!(!got.copy_to(u64::MAX, &mut out));
    }

    #[test]
    fn a_claimed_block_is_decoded_once_and_waited_for() {
        let c = BlockCache::new(100);
        let Claim::Mine(ticket) = c.claim((4, 0)) else {
            panic!("nobody had claimed it")
        };
        let Claim::Theirs(waiter) = c.claim((4, 0)) else {
            panic!("claimed already")
        };
        assert!(c.held_or_claimed((4, 0)) && !c.contains((4, 0)));
        let t = std::thread::spawn(move || waiter.wait());
        std::thread::sleep(std::time::Duration::from_millis(20));
        ticket.done(Block::from(Arc::new(vec![3; 8])));
        assert_eq!(t.join().unwrap(), Some(Block::from(Arc::new(vec![3; 8]))));
        assert!(matches!(c.claim((4, 0)), Claim::Hit(_)));
        // A ticket dropped (its decode failed): the waiters are told, nothing is cached, and
        // the block can be claimed again.
        let Claim::Mine(ticket) = c.claim((4, 1)) else {
            panic!("nobody had claimed it")
        };
        let Claim::Theirs(waiter) = c.claim((4, 1)) else {
            panic!("claimed already")
        };
        drop(ticket);
        assert_eq!(waiter.wait(), None);
        assert!(!c.held_or_claimed((4, 1)));
        assert!(matches!(c.claim((4, 1)), Claim::Mine(_)));
    }

    #[test]
    fn fill_pattern_matches_the_element_repeated() {
        let value = [9u8, 8, 7];
        let whole = value.repeat(20);
        for within in 0..6 {
            for len in 0..20 {
                let mut out = vec![0u8; len];
                fill_pattern(&value, within as u64, &mut out);
                assert_eq!(out, whole[within..within + len], "{within} {len}");
            }
        }
        let mut out = [5u8; 3];
        fill_pattern(&[], 0, &mut out);
        assert_eq!(out, [0; 3]);
    }
}
