//! The original file's bytes, rebuilt on demand from an archive: any byte range `[a, b)` is
//! the header's bytes (kept verbatim), the residual bytes (padding, gaps, trailing bytes) and
//! the variables' bytes of the decoded blocks that cover it, put where the original had them
//! ([`crate::nc3::Layout::walk_range`], the positional form of the walk that unpacking
//! follows). In the records, the original interleaves the record variables, so a range there
//! takes a run of each record variable's stream (records de-interleaved in the archive).
//!
//! Blocks come through the archive's block cache. A reader raises the cache's budget to hold
//! a block of every stream, one decoded ahead of each, and as much again (at most
//! [`MAX_AUTO_BUDGET`]), so that a sequential read of interleaved records finds the block of
//! each record variable it is in the middle of still cached, and decodes each block once. A
//! read that continues a scan has the blocks after it decoded into the cache on the archive's
//! threads meanwhile ([`Archive::scan_ahead`]; the block before it, done with, goes first out
//! of the cache); a block that one thread is decoding, another waits for instead of decoding
//! it again (requests for neighbouring ranges share blocks). A large read is served a
//! window at a time ([`WINDOW`]), each window's missing blocks of a stream decoded on the
//! archive's threads.

use crate::error::{Error, Result};
use crate::io::ReadAt;
use crate::nc3::Target;
use crate::read::archive::Archive;
use crate::read::cache::Block;
use crate::read::Input;
use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

/// The most bytes of the original rebuilt at a time by one read (a longer read is served in
/// windows of this size, so that it holds at most about this much of decoded blocks at once,
/// beyond the cache).
const WINDOW: u64 = 16 << 20;

/// The largest cache budget [`OriginalReader::new`] sets on its own (it never lowers one).
const MAX_AUTO_BUDGET: u64 = 1 << 30;

/// A reader of an archive's original file: positional reads of its bytes
/// ([`OriginalReader::read_at`], from many threads at once), and `std::io::Read + Seek`
/// through a cursor ([`OriginalReader::cursor`]). Its length is the original's, known at open
/// without decoding any block. Works for any archive, local or remote (`s3://`, `https://`),
/// through the archive's block cache. Cloning is cheap: clones share the archive.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-original", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let z = dir.join("obs.nc3z");
/// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
/// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
/// use std::io::Read;
/// let r = nc3pack::OriginalReader::open(&z)?; // samples/obs_points.nc, packed
/// let original = std::fs::read("samples/obs_points.nc")?;
/// assert_eq!(r.len(), original.len() as u64);
/// let mut buf = [0u8; 100];
/// assert_eq!(r.read_at(1000, &mut buf)?, 100);
/// assert_eq!(buf[..], original[1000..1100]);
/// let mut all = Vec::new();
/// r.cursor().read_to_end(&mut all)?;
/// assert!(all == original);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct OriginalReader<R: ReadAt = Input> {
    archive: Arc<Archive<R>>,
    /// How many reads apart the reads of one scan may arrive
    /// ([`OriginalReader::with_in_flight`]).
    in_flight: u64,
}

impl<R: ReadAt> Clone for OriginalReader<R> {
    fn clone(&self) -> Self {
        OriginalReader {
            archive: Arc::clone(&self.archive),
            in_flight: self.in_flight,
        }
    }
}

impl OriginalReader<Input> {
    /// Opens the archive at `path` (a file, or a URL as [`Archive::open`] takes) for reading
    /// its original file's bytes.
    ///
    /// ```no_run
    /// let r = nc3pack::OriginalReader::open("/tmp/sst.nc3z")?;
    /// println!("the original has {} bytes", r.len());
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Archive::open`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Ok(OriginalReader::new(Archive::open(path)?))
    }
}

impl<R: ReadAt + 'static> OriginalReader<R> {
    /// A reader of `archive`'s original file (an archive, or one shared as `Arc<Archive>`).
    /// Raises the archive's cache budget, if lower, to three times a block of every stream
    /// (or two blocks per thread more, if larger; at most 1 GiB): what a sequential read of
    /// interleaved records needs to decode each block once, with the blocks after it decoded
    /// meanwhile.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-original-new", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("records.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/classic_records.nc".as_ref(), &z, &opts)?;
    /// let a = std::sync::Arc::new(nc3pack::Archive::open(&z)?);
    /// let r = nc3pack::OriginalReader::new(a.clone());
    /// assert_eq!(r.len(), a.layout().file_len);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(archive: impl Into<Arc<Archive<R>>>) -> Self {
        let archive = archive.into();
        // A block of every stream being read, one decoded ahead of each (or two per thread
        // of the largest), and as much again: what is decoded ahead is never evicted unread.
        let ws = working_set(&archive);
        let ahead = ws.max(2 * archive.threads() as u64 * largest_block(&archive));
        let want = ws
            .saturating_mul(2)
            .saturating_add(ahead)
            .min(MAX_AUTO_BUDGET);
        if archive.cache_stats().budget < want {
            archive.set_cache_budget(want);
        }
        OriginalReader {
            archive,
            in_flight: 4,
        }
    }

    /// Says that the reads of one sequential scan may arrive up to `reads` reads apart, out
    /// of order (a kernel's readahead has several requests served at once): such reads are
    /// still taken for the scan (and the blocks after them decoded ahead), and the blocks the
    /// scan left are let go only that far behind it. Default (and at least) 4.
    ///
    /// ```no_run
    /// let r = nc3pack::OriginalReader::open("/tmp/sst.nc3z")?.with_in_flight(16);
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    pub fn with_in_flight(mut self, reads: u64) -> Self {
        self.in_flight = reads;
        self
    }

    /// The archive read.
    ///
    /// ```no_run
    /// let r = nc3pack::OriginalReader::open("/tmp/sst.nc3z")?;
    /// println!("{} blocks decoded so far", r.archive().blocks_decoded());
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    pub fn archive(&self) -> &Archive<R> {
        &self.archive
    }

    /// Length of the original file in bytes (from the archive's lead: no block is decoded).
    ///
    /// ```no_run
    /// let r = nc3pack::OriginalReader::open("/tmp/sst.nc3z")?;
    /// assert_eq!(r.len(), r.archive().lead().file_len);
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    pub fn len(&self) -> u64 {
        self.archive.layout().file_len
    }

    /// Whether the original file is empty.
    ///
    /// ```no_run
    /// let r = nc3pack::OriginalReader::open("/tmp/sst.nc3z")?;
    /// assert!(!r.is_empty()); // a netCDF-3 file has a header at least
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A `std::io::Read + Seek` over the original file, at offset 0 (it shares the archive).
    ///
    /// ```no_run
    /// use std::io::{Read, Seek, SeekFrom};
    /// let r = nc3pack::OriginalReader::open("/tmp/sst.nc3z")?;
    /// let mut c = r.cursor();
    /// c.seek(SeekFrom::End(-4))?;
    /// let mut tail = Vec::new();
    /// c.read_to_end(&mut tail)?;
    /// assert_eq!(tail.len(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cursor(&self) -> OriginalCursor<R> {
        OriginalCursor {
            reader: self.clone(),
            pos: 0,
        }
    }

    /// Reads the original's bytes from `offset` into `buf`: as many as `buf` holds, or as are
    /// left before the end. Returns how many (0 at or past the end). Many threads may read at
    /// once.
    ///
    /// ```no_run
    /// let r = nc3pack::OriginalReader::open("/tmp/sst.nc3z")?;
    /// let mut magic = [0u8; 4];
    /// r.read_at(0, &mut magic)?;
    /// assert_eq!(&magic[..3], b"CDF");
    /// assert_eq!(r.read_at(r.len(), &mut magic)?, 0);
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The error of the first block of the range that cannot be read or decoded
    /// ([`Error::Block`] naming the stream, the block and its offset in the archive: damage,
    /// a lost block; [`Error::Io`] or [`Error::Remote`] when the archive cannot be read;
    /// [`Error::NoMemory`]). Nothing of `buf` is to be used then; the bytes of other ranges
    /// still read.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let len = self.len();
        if offset >= len || buf.is_empty() {
            return Ok(0);
        }
        let n = (buf.len() as u64).min(len - offset) as usize;
        let mut done = 0usize;
        while done < n {
            let w = (n - done).min(WINDOW as usize);
            self.fill(offset + done as u64, &mut buf[done..done + w])?;
            done += w;
        }
        Ok(n)
    }

    /// Fills `out` with the original's bytes from `a` (all inside the file).
    fn fill(&self, a: u64, out: &mut [u8]) -> Result<()> {
        let archive = &*self.archive;
        let layout = archive.layout();
        let b = a + out.len() as u64;
        let stream = |t: Target| match t {
            Target::Var(i) => i,
            _ => archive.residual_stream(),
        };
        // Each owner's bytes in the range are one run of its stream: (stream, first, length).
        let mut runs: Vec<(usize, u64, u64)> = Vec::new();
        let mut slot: HashMap<usize, usize> = HashMap::new();
        let walked = layout.walk_range(a, b, |sp| {
            if sp.target != Target::Header {
                let s = stream(sp.target);
                let k = *slot.entry(s).or_insert_with(|| {
                    runs.push((s, sp.at, 0));
                    runs.len() - 1
                });
                runs[k].2 += sp.len;
            }
            Ok::<(), std::convert::Infallible>(())
        });
        let Ok(()) = walked;
        // A remote archive fetches all the frames with one request set.
        archive.prefetch_blocks(runs.iter().filter(|r| !archive.is_member(r.0)).flat_map(
            |&(s, first, len)| {
                let bb = archive.block_bytes(s);
                (first / bb..=(first + len - 1) / bb).map(move |b| (s, b))
            },
        ))?;
        // First the block each run starts in, for every stream (where a sequential read
        // ended: cached, as the last blocks are kept most recent below), then the rest: the
        // new blocks' insertions cannot evict a block this read still has to take.
        let mut sources = runs
            .iter()
            .map(|&(s, first, _)| StreamBytes::fetch(archive, s, first, 1))
            .collect::<Result<Vec<StreamBytes>>>()?;
        for (src, &(s, first, len)) in sources.iter_mut().zip(&runs) {
            src.fetch_rest(archive, s, first, len)?;
        }
        // A scan has the blocks after this read decoded meanwhile.
        let streams = runs.iter().filter(|r| !archive.is_member(r.0)).count();
        for &(s, first, len) in &runs {
            self.archive
                .scan_ahead(s, (first, len), streams, self.in_flight);
        }
        // The block each run ends in is where a sequential read goes on from.
        for src in &sources {
            if let StreamBytes::Blocks {
                stream,
                first,
                blocks,
                ..
            } = src
            {
                archive.keep_recent(*stream, first + blocks.len() as u64 - 1);
            }
        }
        let header = archive.header_bytes();
        layout.walk_range(a, b, |sp| {
            let at = (sp.offset - a) as usize;
            let dst = &mut out[at..at + sp.len as usize];
            if sp.target == Target::Header {
                let from = sp.at as usize;
                let src = header.get(from..from + dst.len()).ok_or_else(|| {
                    Error::Internal("the header is shorter than the layout".into())
                })?;
                dst.copy_from_slice(src);
                return Ok(());
            }
            let k = slot[&stream(sp.target)];
            sources[k].copy(archive, sp.at, dst)
        })
    }
}

/// The decoded bytes of one stream that a range needs.
enum StreamBytes {
    /// Stream `s`, a member of a shared stream: its whole data.
    Member { stream: usize, data: Arc<Vec<u8>> },
    /// Blocks `first..` of a stream of `bb`-byte blocks.
    Blocks {
        stream: usize,
        first: u64,
        bb: u64,
        blocks: Vec<Block>,
    },
}

impl StreamBytes {
    /// The bytes `from..from + len` of stream `s`, through the cache.
    fn fetch<R: ReadAt>(
        archive: &Archive<R>,
        s: usize,
        from: u64,
        len: u64,
    ) -> Result<StreamBytes> {
        if archive.is_member(s) {
            return Ok(StreamBytes::Member {
                stream: s,
                data: archive.member_bytes(s)?,
            });
        }
        let bb = archive.block_bytes(s);
        let (first, last) = (from / bb, (from + len - 1) / bb);
        let wanted: Vec<u64> = (first..=last).collect();
        Ok(StreamBytes::Blocks {
            stream: s,
            first,
            bb,
            blocks: archive.cached_blocks(s, &wanted)?,
        })
    }

    /// Adds the blocks after those fetched that the bytes `from..from + len` of stream `s`
    /// need (a member's data is whole already).
    fn fetch_rest<R: ReadAt>(
        &mut self,
        archive: &Archive<R>,
        s: usize,
        from: u64,
        len: u64,
    ) -> Result<()> {
        if let StreamBytes::Blocks {
            first, bb, blocks, ..
        } = self
        {
            let next = *first + blocks.len() as u64;
            let last = (from + len - 1) / *bb;
            if next <= last {
                let wanted: Vec<u64> = (next..=last).collect();
                blocks.extend(archive.cached_blocks(s, &wanted)?);
            }
        }
        Ok(())
    }

    /// Copies the stream's bytes from `at` into `dst`.
    fn copy<R: ReadAt>(&self, archive: &Archive<R>, at: u64, dst: &mut [u8]) -> Result<()> {
        let short = |s: usize| {
            Error::Internal(format!(
                "{} is shorter than the layout says",
                archive.stream_name(s)
            ))
        };
        match self {
            StreamBytes::Member { stream, data } => {
                let from = at as usize;
                let src = data
                    .get(from..from + dst.len())
                    .ok_or_else(|| short(*stream))?;
                dst.copy_from_slice(src);
            }
            &StreamBytes::Blocks {
                stream,
                first,
                bb,
                ref blocks,
            } => {
                let (mut x, mut done) = (at, 0usize);
                while done < dst.len() {
                    let b = x / bb;
                    let within = x - b * bb;
                    let block = usize::try_from(b - first)
                        .ok()
                        .and_then(|k| blocks.get(k))
                        .ok_or_else(|| short(stream))?;
                    let take = (dst.len() - done).min(block.len().saturating_sub(within) as usize);
                    if take == 0 || !block.copy_to(within, &mut dst[done..done + take]) {
                        return Err(short(stream));
                    }
                    done += take;
                    x += take as u64;
                }
            }
        }
        Ok(())
    }
}

/// Decoded bytes of a block of every stream (a member of a shared stream: its data): what a
/// read of interleaved records holds at once.
fn working_set<R: ReadAt>(a: &Archive<R>) -> u64 {
    (0..a.stream_count())
        .map(|s| {
            if a.is_member(s) {
                a.stream_len(s)
            } else {
                a.block_bytes(s).min(a.stream_len(s))
            }
        })
        .sum()
}

/// The largest block of a stream with blocks (not a member of a shared stream): what one
/// block decoded ahead of a scan may hold.
fn largest_block<R: ReadAt>(a: &Archive<R>) -> u64 {
    (0..a.stream_count())
        .filter(|&s| !a.is_member(s))
        .map(|s| a.block_bytes(s).min(a.stream_len(s)))
        .max()
        .unwrap_or(0)
}

/// `std::io::Read + Seek` over an archive's original file ([`OriginalReader::cursor`]).
/// Reading past the end gives 0 bytes; seeking past it is allowed, before 0 is an error.
///
/// ```no_run
/// use std::io::Read;
/// let mut c = nc3pack::OriginalReader::open("/tmp/sst.nc3z")?.cursor();
/// std::io::copy(&mut c, &mut std::fs::File::create("/tmp/sst.nc")?)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct OriginalCursor<R: ReadAt = Input> {
    reader: OriginalReader<R>,
    pos: u64,
}

impl<R: ReadAt> OriginalCursor<R> {
    /// The reader this cursor reads.
    ///
    /// ```no_run
    /// let c = nc3pack::OriginalReader::open("/tmp/sst.nc3z")?.cursor();
    /// println!("{} bytes", c.reader().len());
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    pub fn reader(&self) -> &OriginalReader<R> {
        &self.reader
    }
}

/// An error of the library as an I/O error (its message kept; the error itself as the source).
fn to_io(e: Error) -> std::io::Error {
    let kind = match &e {
        Error::Io { source, .. } => source.kind(),
        Error::NoMemory { .. } => std::io::ErrorKind::OutOfMemory,
        _ => std::io::ErrorKind::InvalidData,
    };
    std::io::Error::new(kind, e)
}

impl<R: ReadAt + 'static> Read for OriginalCursor<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.reader.read_at(self.pos, buf).map_err(to_io)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: ReadAt + 'static> Seek for OriginalCursor<R> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        let (base, delta) = match to {
            SeekFrom::Start(n) => {
                self.pos = n;
                return Ok(n);
            }
            SeekFrom::End(d) => (self.reader.len(), d),
            SeekFrom::Current(d) => (self.pos, d),
        };
        match base.checked_add_signed(delta) {
            Some(p) => {
                self.pos = p;
                Ok(p)
            }
            None => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("seek to {delta} from {base}: before the start of the file"),
            )),
        }
    }
}

impl<R: ReadAt + 'static> ReadAt for OriginalReader<R> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let n = self.read_at(offset, buf).map_err(to_io)?;
        if n < buf.len() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!(
                    "{} bytes at offset {offset} are past the end of the original's {} bytes",
                    buf.len(),
                    self.len()
                ),
            ));
        }
        Ok(())
    }
    fn size(&self) -> std::io::Result<u64> {
        Ok(self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Barrier, Condvar, Mutex};

    /// Runs `f` while every thread of the process's pool is held (the jobs `f` queues wait
    /// behind), then lets them go and returns once each job queued before has finished.
    fn with_pool_held(f: impl FnOnce()) {
        let threads = crate::parallel::pool_threads();
        assert!(threads > 0);
        let held = Arc::new(Barrier::new(threads + 1));
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        for _ in 0..threads {
            let (held, gate) = (Arc::clone(&held), Arc::clone(&gate));
            assert!(crate::parallel::spawn(move || {
                held.wait();
                let mut open = gate.0.lock().unwrap();
                while !*open {
                    open = gate.1.wait(open).unwrap();
                }
            }));
        }
        held.wait();
        f();
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
        // Each thread takes one of these only once it has finished the jobs queued before.
        let drained = Arc::new(Barrier::new(threads + 1));
        for _ in 0..threads {
            let drained = Arc::clone(&drained);
            assert!(crate::parallel::spawn(move || {
                drained.wait();
            }));
        }
        drained.wait();
    }

    #[test]
    fn blocks_decoded_ahead_too_late_for_the_scan_are_not_decoded() {
        let dir = std::env::temp_dir().join(format!("nc3pack-late-ahead-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (nc, z) = (dir.join("records.nc"), dir.join("records.nc3z"));
        let mut ds = netcdf3::DataSet::new();
        ds.set_unlimited_dim("time", 2000).unwrap();
        ds.add_var_i32("a", &["time"]).unwrap();
        ds.add_var_f64("b", &["time"]).unwrap();
        let mut w = netcdf3::FileWriter::open(&nc).unwrap();
        w.set_def(&ds, netcdf3::Version::Classic, 0).unwrap();
        let a: Vec<i32> = (0..2000).map(|i| i * i % 977).collect();
        let b: Vec<f64> = (0..2000).map(|i| (f64::from(i) * 0.37).sin()).collect();
        w.write_var_i32("a", &a).unwrap();
        w.write_var_f64("b", &b).unwrap();
        w.close().unwrap();
        let original = std::fs::read(&nc).unwrap();
        let opts = crate::PackOptions::default()
            .with_block_size(1024)
            .with_compact(false)
            .with_force(true);
        crate::pack_file(&nc, &z, &opts).unwrap();
        let mut a = Archive::open(&z).unwrap();
        a.set_threads(2);
        // As small as the reader lets it be (it raises it to what a scan needs): the blocks
        // the scan has passed leave it.
        a.set_cache_budget(1);
        let need = a
            .blocks()
            .filter(|&(s, b)| !a.entry(s, b).is_constant())
            .count() as u64;
        assert!(need >= 20, "{need} blocks");
        let r = OriginalReader::new(a);
        with_pool_held(|| {
            // The scan's jobs wait behind the held threads while the reader reads on.
            let mut at = 0;
            let mut buf = vec![0u8; 512];
            while at < original.len() {
                let n = r.read_at(at as u64, &mut buf).unwrap();
                assert!(n > 0 && buf[..n] == original[at..at + n], "at {at}");
                at += n;
            }
        });
        // The jobs ran after the scan had passed their blocks: each did nothing.
        assert_eq!(r.archive().blocks_decoded(), need);
        std::fs::remove_dir_all(&dir).ok();
    }
}
