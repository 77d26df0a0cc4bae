//! Unpacking: .nc3z archive in, the original netCDF-3 file out, byte for byte.
//!
//! The output is written in file order by walking the same segment partition that packing
//! walked, pulling each variable's bytes from its decoded blocks; blocks are decoded in parallel,
//! a bounded number ahead, in the order the walk first needs them (a constant block as its
//! element, its bytes made a piece at a time as they are written). Small records are written a
//! chunk of records at a time, each variable's slabs scattered in bulk (the reverse of packing).
//! The output is hashed as it is written and compared with the hash recorded at pack time before
//! it is renamed into place. A file's space is reserved first and its bytes go to the disk with
//! direct I/O, written by I/O threads while the decoders go on ([`output`]).

use crate::error::{io_err, spawn_err, BlockError, Error, Result};
use crate::io::ReadAt;
use crate::nc3::{scatter, RecordPattern, Target, Walk};
use crate::parallel::{spawn_scoped, SpawnError, WorkerError};
use crate::read::archive::{Archive, HeldBlocks};
use crate::read::cache::{fill_pattern, Block};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};
use xxhash_rust::xxh3::Xxh3;

mod output;

/// Restores the original file from the archive `input` into `output`, atomically (see
/// [`crate::pack_file`]), after checking the restored bytes against the recorded hash. Returns
/// the number of bytes written. An existing `output` is refused unless `opts.force`;
/// `opts.progress` is called with the bytes written so far.
///
/// ```no_run
/// use nc3pack::{unpack_file, UnpackOptions};
/// let n = unpack_file("/tmp/sst.nc3z".as_ref(), "/tmp/sst.nc".as_ref(),
///     &UnpackOptions::default().with_threads(2))?;
/// println!("{n} bytes restored");
/// # Ok::<(), nc3pack::Error>(())
/// ```
///
/// # Errors
///
/// The archive's errors (a damaged lead, index or block, naming it; a block lost, refused
/// before anything is written), [`Error::Io`] when the output cannot be written,
/// [`Error::OutputExists`] for an existing `output` without `force`, [`Error::HashMismatch`]
/// when the restored bytes are not the original's. On an error no output is left behind.
pub fn unpack_file(input: &Path, output: &Path, opts: &crate::UnpackOptions) -> Result<u64> {
    let archive = open_complete(input, opts)?;
    let progress = |n: u64| opts.progress.report(n);
    let len = archive.layout().file_len;
    crate::atomic::write_atomically(output, opts.force, Some(input), |f| {
        output::reserve(f, len, output)?;
        let hash = output::write_with(f, output, |out| {
            unpack_to(&archive, out, output, opts.threads, &progress)
        })?;
        check_hash(&archive, input, hash)?;
        Ok(len)
    })
}

/// Restores the original file from the archive `input` into `out` (a stream such as standard
/// output, named `out_name` in errors), then checks the bytes written against the recorded hash.
/// Returns the number of bytes written. Unlike [`unpack_file`], the bytes are out before they
/// are checked: on an error, what was written must be discarded. `opts.force` does not apply.
///
/// ```no_run
/// let n = nc3pack::unpack_to_writer("/tmp/sst.nc3z".as_ref(), std::io::sink(),
///     "<sink>".as_ref(), &nc3pack::UnpackOptions::default())?;
/// println!("{n} bytes restored and verified");
/// # Ok::<(), nc3pack::Error>(())
/// ```
///
/// # Errors
///
/// The archive's errors (including a block lost, refused before anything is written), a write
/// error on `out`, or [`Error::HashMismatch`] once everything was written.
pub fn unpack_to_writer<W: Write + Send>(
    input: &Path,
    out: W,
    out_name: &Path,
    opts: &crate::UnpackOptions,
) -> Result<u64> {
    let archive = open_complete(input, opts)?;
    let progress = |n: u64| opts.progress.report(n);
    let hash = unpack_to(&archive, out, out_name, opts.threads, &progress)?;
    check_hash(&archive, input, hash)?;
    Ok(archive.layout().file_len)
}

/// Opens the archive (a URL with `opts`' remote options, if given), refusing one with blocks
/// lost (the original cannot be restored exactly).
fn open_complete(input: &Path, opts: &crate::UnpackOptions) -> Result<Archive> {
    let f = crate::read::input::open_input_with(input, opts.remote.as_ref(), "reading an archive")?;
    let archive = Archive::from_input(f, input)?;
    let lost = archive.lost_blocks();
    if let Some(&(s, b)) = lost.first() {
        return Err(Error::Block {
            path: input.to_path_buf(),
            var: archive.stream_name(s),
            block: b,
            offset: 0,
            source: BlockError::Unrestorable {
                others: lost.len() - 1,
            },
        });
    }
    Ok(archive)
}

fn check_hash<R: ReadAt>(archive: &Archive<R>, input: &Path, hash: u128) -> Result<()> {
    if hash != archive.original_hash() {
        return Err(Error::HashMismatch {
            path: input.to_path_buf(),
            expected: archive.original_hash(),
            actual: hash,
        });
    }
    Ok(())
}

/// Writes the original file's bytes to `out` (named `out_path` in errors); returns their xxh3-128 hash (the caller compares it
/// with [`Archive::original_hash`]).
pub fn unpack_to<R: ReadAt, W: Write + Send>(
    archive: &Archive<R>,
    out: W,
    out_path: &Path,
    threads: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<u128> {
    let order = block_order(archive);
    // A remote archive fetches the frames in this order, a window of them per request set.
    archive.prefetch_blocks(order.iter().copied())?;
    let (tx, rx) = sync_channel::<Result<Block>>(1);
    let threads = crate::parallel::bound_threads(threads);
    // The buffers of blocks written out, handed back to the decoders: no new zeroed buffer a
    // block (zeroing them was an eighth of unpacking's CPU).
    let pool = BufferPool {
        free: Mutex::new(Vec::new()),
        keep: 2 * threads + 4,
    };
    std::thread::scope(|sc| {
        let pool = &pool;
        let writer = spawn_scoped(sc, "file writer", move || {
            write_file(archive, &rx, out, out_path, progress, pool)
        })
        .map_err(spawn_err(archive.path()))?;
        let decode = crate::parallel::ordered_map(
            &order,
            threads,
            threads * 2,
            |&(s, b)| archive.load_reusing(s, b, pool.take()),
            |_, r| {
                let failed = r.is_err();
                tx.send(r).map_err(|_| DecodeStop::Failed)?;
                if failed {
                    Err(DecodeStop::Failed)
                } else {
                    Ok(())
                }
            },
        );
        drop(tx);
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(Error::Internal("writer panicked".into())));
        match decode {
            // The writer then stopped for want of blocks: the cause is the thread.
            Err(DecodeStop::Spawn(e)) => Err(spawn_err(archive.path())(e)),
            // A bug, not damage: the writer then stopped for want of blocks.
            Err(DecodeStop::Panicked) => Err(Error::Internal(format!(
                "{}: a block decoder thread panicked",
                archive.path().display()
            ))),
            _ => written,
        }
    })
}

/// Decoded blocks' buffers the writer is done with, for the decoders to decode the next
/// blocks into: at most `keep` of them (about as many as are in flight at once).
struct BufferPool {
    free: Mutex<Vec<Vec<u8>>>,
    keep: usize,
}

impl BufferPool {
    /// A buffer handed back, if there is one.
    fn take(&self) -> Option<Vec<u8>> {
        self.free.lock().unwrap_or_else(|p| p.into_inner()).pop()
    }

    /// Hands back the buffer of `block` when no one else holds it (a shared or cached block is
    /// left alone) and fewer than `keep` are waiting.
    fn give(&self, block: Block) {
        if let Block::Bytes(bytes) = block {
            if let Ok(v) = Arc::try_unwrap(bytes) {
                let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
                if free.len() < self.keep && !v.is_empty() {
                    free.push(v);
                }
            }
        }
    }
}

/// What the original file is made of, in file order, as unpacking writes it ([`walk_file`]).
enum FilePart<'p> {
    /// The header.
    Header,
    /// The next `len` bytes of a stream.
    Bytes { stream: usize, len: u64 },
    /// `k` records, a chunk (see [`RecordPattern`]).
    Records { pattern: &'p RecordPattern, k: u64 },
}

/// Walks the archive's original file in order, as pieces: small records a chunk at a time.
/// Both the order in which blocks are decoded ([`block_order`]) and the writing
/// ([`write_file`]) follow it.
fn walk_file<R: ReadAt, E>(
    archive: &Archive<R>,
    mut visit: impl FnMut(FilePart<'_>) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    let layout = archive.layout();
    let residual = archive.residual_stream();
    let pattern = layout.record_pattern();
    let mut records = 0u64;
    layout.walk_with(|seg| {
        if let Some(p) = pattern.as_ref() {
            if seg.target == Target::Var(p.first_var()) {
                let k = p.chunk_records(records, layout.numrecs);
                visit(FilePart::Records { pattern: p, k })?;
                records += k;
                return Ok(Walk::SkipRecords(k));
            }
        }
        let stream = match seg.target {
            Target::Header => return visit(FilePart::Header).map(|()| Walk::Next),
            Target::Var(i) => i,
            Target::Residual => residual,
        };
        visit(FilePart::Bytes {
            stream,
            len: seg.len,
        })?;
        Ok(Walk::Next)
    })
}

/// The order in which the writer first needs each (stream, block) it decodes (members of the
/// shared streams come whole, through the archive).
fn block_order<R: ReadAt>(archive: &Archive<R>) -> Vec<(usize, u64)> {
    let residual = archive.residual_stream();
    let mut order: Vec<(usize, u64)> = Vec::new();
    let mut consumed = vec![0u64; archive.stream_count()];
    let mut need = |s: usize, n: u64| {
        if !archive.is_member(s) {
            let bb = archive.block_bytes(s);
            let first = consumed[s].div_ceil(bb);
            consumed[s] += n;
            let last = consumed[s].div_ceil(bb);
            order.extend((first..last).map(|b| (s, b)));
        }
    };
    let walked = walk_file(archive, |piece| {
        match piece {
            FilePart::Header => {}
            FilePart::Bytes { stream, len } => need(stream, len),
            FilePart::Records { pattern: p, k } => {
                for &(_, len, v) in &p.vars {
                    need(v, k * len as u64);
                }
                need(residual, p.padding_len(k));
            }
        }
        Ok::<(), std::convert::Infallible>(())
    });
    let Ok(()) = walked;
    order
}

/// The writer's buffer for small pieces: what is at least this long is written directly.
const WRITE_BUFFER: usize = 256 << 10;

/// The writer: the original file's bytes to `out` (named `out_path` in errors), from the
/// blocks decoded ahead on `rx`; returns their hash.
fn write_file<R: ReadAt, W: Write>(
    archive: &Archive<R>,
    rx: &Receiver<Result<Block>>,
    out: W,
    out_path: &Path,
    progress: &(dyn Fn(u64) + Sync),
    pool: &BufferPool,
) -> Result<u128> {
    // Small pieces (headers, small variables, padding) are gathered; a block's bytes (and a
    // chunk of records) are at least this long and go to the file as they are, not copied
    // through the buffer first.
    let mut w = BufWriter::with_capacity(
        WRITE_BUFFER,
        HashingWriter {
            inner: out,
            hash: Xxh3::new(),
            count: 0,
        },
    );
    let werr = || io_err(out_path, "write");
    let mut src = Sources {
        archive,
        rx,
        cur: vec![(Block::default(), 0); archive.stream_count()],
        held: HeldBlocks::default(),
        done: Arc::default(),
        pattern: Vec::new(),
        pool,
    };
    let mut last_report = 0u64;
    let mut chunk = Vec::new();
    walk_file(archive, |piece| {
        match piece {
            FilePart::Header => w.write_all(archive.header_bytes()).map_err(werr())?,
            FilePart::Records { pattern, k } => {
                src.records(pattern, k as usize, &mut chunk)?;
                w.write_all(&chunk).map_err(werr())?;
            }
            FilePart::Bytes { stream, len } => {
                let mut left = len as usize;
                while left > 0 {
                    let part = src.next(stream, left)?;
                    w.write_all(part).map_err(werr())?;
                    left -= part.len();
                }
                let count = w.get_ref().count;
                if count - last_report >= 8 << 20 {
                    last_report = count;
                    progress(count);
                }
            }
        }
        Ok::<_, Error>(())
    })?;
    w.flush().map_err(werr())?;
    progress(archive.layout().file_len);
    Ok(w.get_ref().hash.digest128())
}

/// Why block decoding stopped: a block could not be decoded or the writer stopped (the writer
/// reports why), a decoder thread could not be started, or one panicked.
enum DecodeStop {
    Failed,
    Spawn(SpawnError),
    Panicked,
}

impl From<WorkerError> for DecodeStop {
    fn from(e: WorkerError) -> Self {
        match e {
            WorkerError::Spawn(e) => DecodeStop::Spawn(e),
            WorkerError::Panicked => DecodeStop::Panicked,
        }
    }
}

/// Most bytes of a constant block made at a time.
const PATTERN_BYTES: usize = 64 << 10;

/// The decoded bytes of every stream, consumed in order: a member of a shared stream comes
/// whole, the others block by block from `rx`, decoded ahead in the order the writer needs them.
struct Sources<'a, R: ReadAt> {
    archive: &'a Archive<R>,
    rx: &'a Receiver<Result<Block>>,
    /// Per stream: the current block and how much of it was used.
    cur: Vec<(Block, u64)>,
    /// The shared blocks the last members were taken from.
    held: HeldBlocks,
    /// The buffer last used up, held while its last part is borrowed.
    done: Arc<Vec<u8>>,
    /// The bytes of a constant block, at most [`PATTERN_BYTES`] at a time.
    pattern: Vec<u8>,
    /// Where the buffers of the blocks used up go back to the decoders.
    pool: &'a BufferPool,
}

impl<R: ReadAt> Sources<'_, R> {
    /// The next at most `max` (> 0) bytes of stream `s` (of a constant block, at most
    /// [`PATTERN_BYTES`]).
    fn next(&mut self, s: usize, max: usize) -> Result<&[u8]> {
        let (buf, pos) = &mut self.cur[s];
        if *pos == buf.len() {
            *buf = if self.archive.is_member(s) {
                Block::Bytes(self.archive.member_bytes_held(s, &mut self.held)?)
            } else {
                self.rx
                    .recv()
                    .map_err(|_| Error::Internal("decoder stopped".into()))??
            };
            *pos = 0;
            if buf.is_empty() {
                return Err(Error::Internal(format!(
                    "{} has fewer bytes than the layout",
                    self.archive.stream_name(s)
                )));
            }
        }
        let left = buf.len() - *pos;
        let at = *pos;
        if matches!(buf, Block::Bytes(_)) && max as u64 >= left {
            // Used up: release it now rather than when the stream's next buffer comes (for the
            // last one of a stream, never), so that what is held stays bounded by the streams
            // in use, not by all the streams of the file.
            if let Block::Bytes(bytes) = std::mem::take(buf) {
                let old = std::mem::replace(&mut self.done, bytes);
                self.pool.give(Block::Bytes(old));
            }
            *pos = 0;
            return Ok(&self.done[self.done.len() - left as usize..]);
        }
        match buf {
            Block::Constant { value, esize, .. } => {
                let take = (max.min(PATTERN_BYTES) as u64).min(left) as usize;
                self.pattern.resize(take, 0);
                fill_pattern(&value[..*esize], at, &mut self.pattern);
                *pos += take as u64;
                if *pos == buf.len() {
                    (*buf, *pos) = (Block::default(), 0);
                }
                Ok(&self.pattern)
            }
            Block::Bytes(bytes) => {
                // Less than what is left.
                let (from, to) = (at as usize, at as usize + max);
                *pos = to as u64;
                Ok(&bytes[from..to])
            }
        }
    }

    /// Fills `out` with the next bytes of stream `s`.
    fn take(&mut self, s: usize, out: &mut [u8]) -> Result<()> {
        let mut at = 0;
        while at < out.len() {
            let part = self.next(s, out.len() - at)?;
            out[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        Ok(())
    }

    /// Fills `chunk` with `k` records laid out as `p`: each variable's slabs in bulk, then the
    /// padding in file order (the reverse of packing).
    fn records(&mut self, p: &RecordPattern, k: usize, chunk: &mut Vec<u8>) -> Result<()> {
        chunk.resize(p.span(k as u64) as usize, 0);
        let rs = p.recsize as usize;
        for &(off, len, v) in &p.vars {
            self.scatter(v, chunk, off, rs, len, k)?;
        }
        let residual = self.archive.residual_stream();
        for gap in p.padding(k) {
            self.take(residual, &mut chunk[gap])?;
        }
        Ok(())
    }

    /// Fills `count` pieces of `len` bytes of `out`, at `at` and every `stride` bytes after,
    /// with the next bytes of stream `s`; in bulk while whole pieces are in the current buffer.
    fn scatter(
        &mut self,
        s: usize,
        out: &mut [u8],
        mut at: usize,
        stride: usize,
        len: usize,
        mut count: usize,
    ) -> Result<()> {
        while count > 0 {
            let (buf, pos) = &mut self.cur[s];
            let whole = ((buf.len() - *pos) / len as u64) as usize;
            if whole == 0 {
                self.take(s, &mut out[at..at + len])?;
                at += stride;
                count -= 1;
                continue;
            }
            let n = whole.min(count);
            match buf {
                Block::Bytes(bytes) => {
                    let p = *pos as usize;
                    scatter(out, at, stride, &bytes[p..p + n * len], len);
                }
                Block::Constant { value, esize, .. } => {
                    for i in 0..n {
                        let piece = &mut out[at + i * stride..at + i * stride + len];
                        fill_pattern(&value[..*esize], *pos + (i * len) as u64, piece);
                    }
                }
            }
            *pos += (n * len) as u64;
            if *pos == buf.len() {
                self.pool.give(std::mem::take(buf));
                *pos = 0;
            }
            at += n * stride;
            count -= n;
        }
        Ok(())
    }
}

struct HashingWriter<W> {
    inner: W,
    hash: Xxh3,
    count: u64,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}
