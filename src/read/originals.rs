//! The archives a server of original files ([`crate::mount`], [`crate::serve`]) holds open: a
//! reader of each archive's original ([`OriginalReader`]), keyed by the archive's path and its
//! state on disk ([`Ident`]: an archive replaced or rewritten is another file, opened anew),
//! at most `max_open` of them and their cache budgets within the server's, least recently used
//! out first.

use crate::error::Result;
use crate::read::archive::Archive;
use crate::OriginalReader;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// How many requests apart the requests of one sequential read may arrive: the kernel's
/// readahead of a mounted file (windows of 4 requests of 1 MiB, the next one requested before
/// the last is served), an HTTP client's parallel ranges.
const IN_FLIGHT: u64 = 16;

/// The state of an archive file: a change of any of these makes it another file. (The change
/// time tells a file written in place whose modification time was set back, as `rsync
/// --inplace -t` leaves it; an archive open in that state fails its next read of the file,
/// [`crate::Error::Changed`].)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Ident {
    dev: u64,
    ino: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    size: u64,
}

impl Ident {
    /// The state `md` describes.
    pub(crate) fn of(md: &std::fs::Metadata) -> Ident {
        Ident {
            dev: md.dev(),
            ino: md.ino(),
            mtime_ns: i128::from(md.mtime()) * 1_000_000_000 + i128::from(md.mtime_nsec()),
            ctime_ns: i128::from(md.ctime()) * 1_000_000_000 + i128::from(md.ctime_nsec()),
            size: md.size(),
        }
    }
}

/// The open archives of a server, least recently used first out.
pub(crate) struct Originals {
    /// The budget of the open archives' caches together.
    cache_bytes: u64,
    /// The most archives open at once.
    max_open: usize,
    open: Mutex<lru::LruCache<(PathBuf, Ident), OriginalReader>>,
    /// Archives opened so far.
    opened: AtomicU64,
    /// Blocks decoded by the archives closed so far.
    decoded_closed: AtomicU64,
}

impl Originals {
    /// At most `max_open` archives open (at least one), their caches within `cache_bytes`.
    pub(crate) fn new(cache_bytes: u64, max_open: usize) -> Originals {
        Originals {
            cache_bytes,
            max_open: max_open.max(1),
            open: Mutex::new(lru::LruCache::unbounded()),
            opened: AtomicU64::new(0),
            decoded_closed: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, lru::LruCache<(PathBuf, Ident), OriginalReader>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The reader of the archive at `path` in the state `ident`: an open one, or opened now
    /// with its share of the budget (an eighth, at most what its original holds;
    /// [`OriginalReader::new`] raises it to what a sequential read needs), closing the least
    /// recently used others while there are too many or their budgets exceed the server's.
    /// Readers handed out before stay usable after their archive leaves the set.
    ///
    /// # Errors
    ///
    /// As [`Archive::open`].
    pub(crate) fn reader(&self, path: &Path, ident: Ident) -> Result<OriginalReader> {
        let key = (path.to_path_buf(), ident);
        if let Some(r) = self.lock().get(&key) {
            return Ok(r.clone());
        }
        let archive = Archive::open(path)?;
        let share = (self.cache_bytes / 8).min(archive.layout().file_len);
        archive.set_cache_budget(share);
        let reader = OriginalReader::new(archive).with_in_flight(IN_FLIGHT);
        self.opened.fetch_add(1, Ordering::Relaxed);
        let mut open = self.lock();
        open.put(key, reader.clone());
        let budget = |r: &OriginalReader| r.archive().cache_stats().budget;
        let mut total: u64 = open.iter().map(|(_, r)| budget(r)).sum();
        while open.len() > 1 && (open.len() > self.max_open || total > self.cache_bytes) {
            let Some((_, old)) = open.pop_lru() else {
                break;
            };
            total -= budget(&old);
            self.decoded_closed
                .fetch_add(old.archive().blocks_decoded(), Ordering::Relaxed);
        }
        Ok(reader)
    }

    /// Archives opened so far (again after leaving the set, or replaced, counted again).
    pub(crate) fn opened(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }

    /// Blocks decoded so far by the archives opened.
    pub(crate) fn blocks_decoded(&self) -> u64 {
        let open: u64 = self
            .lock()
            .iter()
            .map(|(_, r)| r.archive().blocks_decoded())
            .sum();
        open + self.decoded_closed.load(Ordering::Relaxed)
    }
}
