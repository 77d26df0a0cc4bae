//! The resume set: what the manifests of earlier runs record as packed ([`Done`]), each
//! name's last [`Record`].

use super::*;
use crate::error::{io_err, Result};
use std::path::{Path, PathBuf};

/// A manifest is parsed in parts by several threads when each part has at least this many
/// bytes (about 3,500 files' `packed` lines).
pub(super) const PARALLEL_PART_BYTES: u64 = 1 << 20;

/// What the manifests say was packed, for a rerun to skip: each name's last `packed` or
/// `skipped` entry. Held compactly: 80 bytes a name (a 128-bit hash of the name and its
/// record) in one array sorted by the hash, with no room to spare, and a table of where each
/// range of hashes starts (4 bytes for every 8 names or so), so that a lookup reads a few
/// entries of one range.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Done {
    /// Each name's key ([`key`]) and last record, sorted by key, one entry a key.
    entries: Vec<(u128, Record)>,
    /// `starts[h]`: the first entry whose key's top `bits` bits are at least `h`, and
    /// `starts[2^bits]` the number of entries (empty when `bits` is 0).
    starts: Vec<u32>,
    bits: u32,
}

/// Hashes a `key` (itself a hash of the name) by taking its bits: no second hash.
#[derive(Debug, Default)]
pub struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not used for a u128 key; a plain FNV-1a for anything else.
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn write_u128(&mut self, k: u128) {
        self.0 ^= (k as u64) ^ ((k >> 64) as u64);
    }
}

/// What a manifest recorded for a packed input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// The input's length.
    pub size: u64,
    /// The input's modification time (ns since 1970).
    pub mtime_ns: i64,
    /// XXH3-128 of the file the archive restores, which its lead and footer record: the
    /// input's, or for a lossy archive the restored file's (`restored_xxh3`).
    pub hash: u128,
    /// The archive's length.
    pub output_size: u64,
    /// For a lossy archive: the length of the file it restores (`restored_size`); `None` when
    /// the archive restores its input.
    pub restored_size: Option<std::num::NonZeroU64>,
    /// Which file the archive was when it was recorded (`output_ino`, `output_ctime_ns`):
    /// while a stat finds it the same, with the recorded length, nothing has written to it
    /// since. `None` in an older manifest's line, and for objects.
    pub output_id: Option<FileId>,
}

/// Which file an archive is: its inode number and change time. Whatever writes to a file, or
/// renames, links, truncates or chmods it, sets its change time to the clock's time, which no
/// call sets back (short of setting the system clock); a file replaced by another has another inode or change time. So while a
/// stat finds the inode, the change time and the length a manifest recorded after renaming
/// the archive into place, the archive holds what was recorded (damage below the filesystem
/// aside, which `verify` finds).
///
/// ```
/// use nc3pack::testing::manifest::FileId;
/// let meta = std::fs::metadata("samples/scalars.nc").unwrap();
/// let id = FileId::of(&meta).unwrap();
/// assert_eq!(FileId::of(&std::fs::metadata("samples/scalars.nc").unwrap()), Some(id));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    /// The inode number (`st_ino`; never 0 for a file).
    pub ino: std::num::NonZeroU64,
    /// The change time (`st_ctime`), nanoseconds since 1970.
    pub ctime_ns: i64,
}

impl FileId {
    /// The identity `meta` gives; `None` for an inode number 0, which no file has.
    pub fn of(meta: &std::fs::Metadata) -> Option<FileId> {
        use std::os::unix::fs::MetadataExt;
        Some(FileId {
            ino: std::num::NonZeroU64::new(meta.ino())?,
            ctime_ns: meta
                .ctime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.ctime_nsec()),
        })
    }

    /// The identity of `(ino, ctime_ns)` as a manifest line holds them; `None` when the line
    /// lacks one or the inode number is 0.
    pub(crate) fn from_fields(ino: Option<u64>, ctime_ns: Option<i64>) -> Option<FileId> {
        Some(FileId {
            ino: std::num::NonZeroU64::new(ino?)?,
            ctime_ns: ctime_ns?,
        })
    }
}

impl Record {
    /// The length of the file the archive restores (its lead and footer record it): the
    /// input's, or for a lossy archive the restored file's.
    ///
    /// ```
    /// use nc3pack::testing::manifest::Record;
    /// let r = Record {
    ///     size: 100, mtime_ns: 0, hash: 1, output_size: 40, restored_size: None, output_id: None,
    /// };
    /// assert_eq!(r.restored_len(), 100);
    /// let lossy = Record { restored_size: std::num::NonZeroU64::new(180), ..r };
    /// assert_eq!(lossy.restored_len(), 180);
    /// ```
    pub fn restored_len(&self) -> u64 {
        self.restored_size
            .map_or(self.size, std::num::NonZeroU64::get)
    }
}

impl Done {
    /// Reads the manifests that exist among `paths` (files, or directories of `*.jsonl`), in
    /// that order (a name's last record wins). A file named twice (a directory and a manifest
    /// in it) is read once, where it comes last: reading it earlier too would change nothing.
    ///
    /// # Errors
    ///
    /// [`Error::Io`](crate::Error::Io) when one cannot be read.
    pub fn load(paths: &[PathBuf]) -> Result<Done> {
        Done::load_share(paths, crate::collection::Shard::default())
    }

    /// [`Done::load`] keeping only the records of the names in `share`
    /// ([`crate::collection::Shard::owns`]): what a shard's run skips, in memory that grows
    /// with the share, not with the collection.
    ///
    /// # Errors
    ///
    /// As [`Done::load`].
    pub fn load_share(paths: &[PathBuf], share: crate::collection::Shard) -> Result<Done> {
        use std::os::unix::fs::MetadataExt;
        let existing: Vec<PathBuf> = paths.iter().filter(|p| p.exists()).cloned().collect();
        let mut found = Vec::new();
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        let files = manifest_files(&existing)?;
        let ids = files
            .iter()
            .map(|m| {
                std::fs::metadata(m)
                    .map(|meta| (meta.dev(), meta.ino()))
                    .map_err(io_err(m, "stat"))
            })
            .collect::<Result<Vec<_>>>()?;
        for (k, m) in files.iter().enumerate() {
            if ids[k + 1..].contains(&ids[k]) {
                continue;
            }
            let file = std::fs::File::open(m).map_err(io_err(m, "open"))?;
            let meta = file.metadata().map_err(io_err(m, "stat"))?;
            // A device or pipe may never end (/dev/zero): only regular files are read.
            if !meta.is_file() {
                let e = std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file");
                return Err(io_err(m, "read manifest")(e));
            }
            read_records(m, &file, meta.len(), threads, share, &mut found)?;
        }
        Ok(Done::from_records(found))
    }

    /// The resume set of `records` (key and record), in the order the manifests hold them:
    /// sorted by key, each key's last record kept.
    pub(super) fn from_records(mut records: Vec<(u128, Record)>) -> Done {
        // (Stable: a key's records stay in their order, the last one last.)
        records.sort_by_key(|r| r.0);
        let mut kept = 0;
        for i in 0..records.len() {
            if records
                .get(i + 1)
                .is_some_and(|next| next.0 == records[i].0)
            {
                continue;
            }
            records[kept] = records[i];
            kept += 1;
        }
        records.truncate(kept);
        records.shrink_to_fit();
        // About 8 entries a range; none for a few, or more than a u32 counts.
        let bits = match u32::try_from(records.len()) {
            Ok(n) if n >= 16 => (u32::BITS - n.leading_zeros() - 3).min(20),
            _ => 0,
        };
        let mut starts = Vec::new();
        if bits > 0 {
            starts.reserve_exact((1 << bits) + 1);
            let mut at = 0usize;
            for h in 0..=(1u128 << bits) {
                while at < records.len() && (records[at].0 >> (128 - bits)) < h {
                    at += 1;
                }
                starts.push(at as u32);
            }
        }
        Done {
            entries: records,
            starts,
            bits,
        }
    }

    /// A line's name and record, if it is a `packed` or `skipped` entry with a size, mtime,
    /// hash and archive size (what [`Entry::parse`] would read, without the fields a rerun
    /// does not use).
    pub(super) fn parse(line: &[u8]) -> Option<(Vec<u8>, Record)> {
        let f = match scan_done_fields(line) {
            Some(f) => f,
            None => serde_json::from_slice(line).ok()?,
        };
        if !matches!(&*f.status?.0, "packed" | "skipped") {
            return None;
        }
        let name = match f.name_hex {
            Some(hex) => {
                let hex = hex.0;
                if hex.len() % 2 != 0 || !hex.is_ascii() {
                    return None;
                }
                (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
                    .collect::<Option<Vec<u8>>>()?
            }
            None => f.name?.0.into_owned().into_bytes(),
        };
        let hash = u128::from_str_radix(&f.xxh3?.0, 16).ok()?;
        // A lossy archive: what it restores (both fields, or the line is not a record).
        let (restored_size, hash) = match (f.restored_size, f.restored_xxh3) {
            (None, None) => (None, hash),
            (Some(size), Some(h)) => (
                Some(std::num::NonZeroU64::new(size)?),
                u128::from_str_radix(&h.0, 16).ok()?,
            ),
            _ => return None,
        };
        let record = Record {
            size: f.size?,
            mtime_ns: f.mtime_ns?,
            hash,
            output_size: f.output_size?,
            restored_size,
            output_id: FileId::from_fields(f.output_ino, f.output_ctime_ns),
        };
        Some((name, record))
    }

    /// The record of `name`, if any.
    pub fn get(&self, name: &[u8]) -> Option<&Record> {
        let k = key(name);
        let range = match self.bits {
            0 => &self.entries[..],
            bits => {
                let h = (k >> (128 - bits)) as usize;
                &self.entries[self.starts[h] as usize..self.starts[h + 1] as usize]
            }
        };
        let i = range.binary_search_by_key(&k, |r| r.0).ok()?;
        Some(&range[i].1)
    }

    /// Number of names recorded.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Adds to `found` the records (key and record) of the manifest `file` (at `path`, `len`
/// bytes when opened; lines appended since are read too) of the names in `share`, in the
/// file's order, parsed by up to `threads` threads when it is large: each parses a part.
pub(super) fn read_records(
    path: &Path,
    file: &std::fs::File,
    len: u64,
    threads: usize,
    share: crate::collection::Shard,
    found: &mut Vec<(u128, Record)>,
) -> Result<()> {
    let parts = threads.min((len / PARALLEL_PART_BYTES).max(1) as usize);
    // Part k starts at the k-th of `parts` equal shares; the last runs to the end.
    let bound = |k: usize| {
        if k == parts {
            u64::MAX
        } else {
            len / parts as u64 * k as u64
        }
    };
    let parse = |k: usize| -> Result<Vec<(u128, Record)>> {
        let mut part = Vec::new();
        read_line_range(path, file, bound(k), bound(k + 1), |_, line| {
            part.extend(
                Done::parse(line)
                    .map(|(name, r)| (key(&name), r))
                    .filter(|(k, _)| share.owns_key(*k)),
            );
        })?;
        Ok(part)
    };
    std::thread::scope(|s| {
        let rest: Vec<_> = (1..parts)
            .map(|k| {
                (
                    k,
                    std::thread::Builder::new().spawn_scoped(s, move || parse(k)),
                )
            })
            .collect();
        found.extend(parse(0)?);
        for (k, handle) in rest {
            // A part whose thread could not start (or ended abnormally) is parsed here.
            let records = match handle.map(|h| h.join()) {
                Ok(Ok(records)) => records?,
                _ => parse(k)?,
            };
            found.extend(records);
        }
        Ok(())
    })
}

/// The key of a name in [`Done`], and what [`crate::collection::Shard::owns`] shares by: its
/// XXH3-128.
pub(crate) fn key(name: &[u8]) -> u128 {
    xxhash_rust::xxh3::xxh3_128(name)
}
