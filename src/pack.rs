//! Packing: netCDF-3 file in, .nc3z archive out.
//!
//! One pass over the input, in file order, with large sequential reads: every byte is hashed
//! and routed to the stream it belongs to (a variable's materialized data, or the residual
//! bytes). When a stream has a full block, the block goes to a pool of encoder threads; a writer
//! thread appends finished frames in whatever order they come and records where each went. The
//! index at the end makes file order free. Memory stays bounded: a few blocks per thread in flight,
//! plus one open block per stream that is filling (one per record variable, since records
//! interleave them).

use crate::codec::{Encoder, FilterMode};
use crate::error::{io_err, Error, Result};
use crate::format::{self, Codec, FrameHeader, IndexEntry, Lead, FRAME_HEADER_LEN, LEAD_LEN};
use crate::nc3::{self, Layout, Target};
use std::io::{BufReader, BufWriter, Read, Seek, Write};
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};
use xxhash_rust::xxh3::Xxh3;

/// Default nominal block size: 1 MiB of decoded data.
pub const DEFAULT_BLOCK_SIZE: u32 = 1 << 20;

/// How to pack.
///
/// ```
/// let opts = nc3pack::PackOptions::default();
/// assert_eq!(opts.block_size, 1 << 20);
/// assert_eq!(opts.codec, nc3pack::format::Codec::Zstd);
/// ```
#[derive(Debug, Clone)]
pub struct PackOptions {
    /// Codec for every block (blocks that do not shrink are stored raw).
    pub codec: Codec,
    /// Codec level.
    pub level: i32,
    /// Nominal block size in bytes of decoded data.
    pub block_size: u32,
    /// Encoder threads (at least 1).
    pub threads: usize,
    /// How each block's filter is chosen.
    pub filter: FilterMode,
    /// Judge filters on whole blocks with the real codec (the `max` preset) instead of a sample.
    pub thorough: bool,
}

impl Default for PackOptions {
    fn default() -> Self {
        PackOptions {
            codec: Codec::Zstd,
            level: crate::codec::default_level(Codec::Zstd),
            block_size: DEFAULT_BLOCK_SIZE,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            filter: FilterMode::Auto,
            thorough: false,
        }
    }
}

impl PackOptions {
    /// Checks the options; the error names the bad value.
    pub fn check(&self) -> Result<()> {
        crate::codec::check_level(self.codec, self.level).map_err(Error::Option)?;
        if !(format::MIN_BLOCK_SIZE..=format::MAX_BLOCK_SIZE).contains(&self.block_size) {
            return Err(Error::Option(format!(
                "block size {} is outside {}..={} bytes",
                self.block_size,
                format::MIN_BLOCK_SIZE,
                format::MAX_BLOCK_SIZE
            )));
        }
        Ok(())
    }
}

/// What packing produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackSummary {
    /// Bytes of the original file.
    pub input_len: u64,
    /// Bytes of the archive.
    pub output_len: u64,
    /// Number of block frames written.
    pub blocks: u64,
    /// xxh3-128 of the original file.
    pub hash: u128,
}

/// One stream of the archive: a variable's materialized data, or the residual bytes.
pub(crate) struct Stream {
    /// Frame variable id.
    pub id: u32,
    /// Element size (1 for residual bytes).
    pub esize: usize,
    /// Total bytes.
    pub total: u64,
    /// Bytes per block.
    pub block_bytes: u64,
    /// Index of the stream's first block in the index.
    pub first_slot: u64,
}

impl Stream {
    pub fn blocks(&self) -> u64 {
        format::block_count(self.total, self.block_bytes)
    }
}

/// The streams of a layout in index order: variables in header order, then residual bytes.
pub(crate) fn streams(layout: &Layout, block_size: u32) -> Vec<Stream> {
    let mut out = Vec::with_capacity(layout.vars.len() + 1);
    let mut slot = 0u64;
    let mut push = |id: u32, esize: usize, total: u64| {
        let block_bytes = format::var_block_bytes(block_size, esize);
        let s = Stream {
            id,
            esize,
            total,
            block_bytes,
            first_slot: slot,
        };
        slot += s.blocks();
        out.push(s);
    };
    for (i, v) in layout.vars.iter().enumerate() {
        push(i as u32, v.esize, v.total);
    }
    push(format::RESIDUAL_ID, 1, layout.residual_len);
    out
}

/// Packs the netCDF-3 file `input` into the archive `output`, atomically: the archive is written
/// to a temporary file beside `output`, synced, and renamed into place only when complete. An
/// existing `output` is refused unless `force`. `progress` is called with the input bytes read
/// so far.
///
/// ```no_run
/// let summary = nc3pack::pack_file(
///     "samples/gridded_sst.nc".as_ref(), "/tmp/sst.nc3z".as_ref(),
///     &nc3pack::PackOptions::default(), false, &|_| {}).unwrap();
/// println!("ratio {:.2}", summary.input_len as f64 / summary.output_len as f64);
/// ```
pub fn pack_file(
    input: &Path,
    output: &Path,
    opts: &PackOptions,
    force: bool,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<PackSummary> {
    let (pending, summary) = pack_to_temp(input, output, opts, force, true, progress)?;
    pending.commit()?;
    Ok(summary)
}

/// Packs `input` into a temporary file beside `output` (synced if `sync`), ready to be renamed
/// into place with [`crate::atomic::Pending::commit`].
pub(crate) fn pack_to_temp(
    input: &Path,
    output: &Path,
    opts: &PackOptions,
    force: bool,
    sync: bool,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(crate::atomic::Pending, PackSummary)> {
    opts.check()?;
    let file = std::fs::File::open(input).map_err(io_err(input, "open"))?;
    let (_header, header_bytes, layout) = nc3::open(&file, input)?;
    crate::atomic::write_to_temp(output, force, input, sync, |out| {
        pack_stream(
            file,
            input,
            &layout,
            &header_bytes,
            opts,
            out,
            output,
            progress,
        )
    })
}

/// Packs from `reader`, positioned at the start of a netCDF-3 file with the given layout and
/// header bytes, into `out` (positioned at 0). `input` and `out_path` name the files in errors.
#[allow(clippy::too_many_arguments)] // each argument is a distinct input of the pipeline
pub fn pack_stream<R: Read + Send, W: Write + Seek + Send>(
    reader: R,
    input: &Path,
    layout: &Layout,
    header_bytes: &[u8],
    opts: &PackOptions,
    out: &mut W,
    out_path: &Path,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<PackSummary> {
    let werr = |e: std::io::Error| Error::Io {
        path: out_path.to_path_buf(),
        op: "write",
        source: e,
    };
    let streams = streams(layout, opts.block_size);
    let total_blocks = streams.last().map_or(0, |s| s.first_slot + s.blocks());
    let lead = Lead {
        file_len: layout.file_len,
        numrecs: layout.numrecs,
        header_len: layout.header_len,
        block_size: opts.block_size,
    };
    let mut w = BufWriter::with_capacity(1 << 20, out);
    w.write_all(&lead.encode()).map_err(werr)?;
    let header_frame = format::header_frame(header_bytes);
    w.write_all(&header_frame).map_err(werr)?;
    // The metadata frame comes next, so that a cut anywhere later keeps the hash; it is
    // written now as a placeholder and rewritten once the hash is known.
    let meta_at = (LEAD_LEN + header_frame.len()) as u64;
    let placeholder = format::meta_frame(0);
    w.write_all(&placeholder).map_err(werr)?;
    let data_start = meta_at + placeholder.len() as u64;

    let threads = opts.threads.max(1);
    let (entries, pos, mut w, hash) = if threads == 1 || layout.file_len <= INLINE_MAX {
        // Small input or one thread: encode and write in this thread, no pipeline.
        let mut entries: Vec<Option<IndexEntry>> = vec![None; total_blocks as usize];
        let mut pos = data_start;
        let mut frame = Vec::new();
        let mut write_err = None;
        let hash = with_encoder(opts, |enc| {
            route(
                reader,
                input,
                layout,
                &streams,
                progress,
                &mut |job: Job| {
                    frame.clear();
                    let h = enc.encode_frame(job.id, job.block, job.esize, &job.data, &mut frame);
                    if let Err(e) = w.write_all(&frame) {
                        write_err = Some(e);
                        return Err(Error::Internal("write failed".into()));
                    }
                    entries[job.slot as usize] = Some(IndexEntry {
                        offset: pos,
                        stored_len: h.stored_len,
                        codec: h.codec,
                        filter: h.filter,
                        flags: 0,
                    });
                    pos += frame.len() as u64;
                    Ok(())
                },
            )
        })?;
        if let Some(e) = write_err {
            return Err(werr(e));
        }
        (entries, pos, w, hash?)
    } else {
        let (job_tx, job_rx) = sync_channel::<Job>(threads * 2);
        let (frame_tx, frame_rx) = sync_channel::<Done>(threads * 2);
        let job_rx = Arc::new(Mutex::new(job_rx));
        let (read_result, writer_result) = std::thread::scope(|s| {
            for _ in 0..threads {
                let rx = Arc::clone(&job_rx);
                let tx = frame_tx.clone();
                s.spawn(move || encode_worker(rx, tx, opts));
            }
            drop(frame_tx);
            // Only the workers hold the job receiver: when they stop (the writer failed), sends fail.
            drop(job_rx);
            let writer = s.spawn(move || {
                write_frames(&mut w, frame_rx, data_start, total_blocks).map(|(e, p)| (e, p, w))
            });
            let stopped = || Error::Internal("encoder threads stopped".into());
            let read_result = route(reader, input, layout, &streams, progress, &mut |job| {
                job_tx.send(job).map_err(|_| stopped())
            });
            drop(job_tx);
            (read_result, writer.join())
        });
        let writer_result =
            writer_result.unwrap_or_else(|_| Err(std::io::Error::other("writer thread panicked")));
        // A failed write makes the reader's sends fail; report the write error first.
        let (entries, pos, w) = writer_result.map_err(werr)?;
        (entries, pos, w, read_result?)
    };
    if let Some(i) = entries.iter().position(Option::is_none) {
        return Err(Error::Internal(format!("block slot {i} was not written")));
    }
    let entries: Vec<IndexEntry> = entries.into_iter().flatten().collect();

    let index_offset = pos;
    let index = format::encode_index(&entries);
    w.write_all(&index).map_err(werr)?;
    let footer = format::Footer {
        index_offset,
        index_len: index.len() as u64,
        index_crc: format::crc(&index),
        flags: 0,
        hash,
    };
    w.write_all(&footer.encode()).map_err(werr)?;
    let out = w.into_inner().map_err(|e| werr(e.into_error()))?;
    out.seek(std::io::SeekFrom::Start(meta_at)).map_err(werr)?;
    out.write_all(&format::meta_frame(hash)).map_err(werr)?;
    out.flush().map_err(werr)?;
    Ok(PackSummary {
        input_len: layout.file_len,
        output_len: index_offset + index.len() as u64 + format::FOOTER_LEN as u64,
        blocks: entries.len() as u64,
        hash,
    })
}

/// Inputs up to this size are packed in the calling thread, without a pipeline.
const INLINE_MAX: u64 = 4 << 20;

/// What an encoder is set up for: codec, level, filter mode, thoroughness.
type EncoderKey = (Codec, i32, FilterMode, bool);

thread_local! {
    /// The encoder of the last inline pack on this thread, kept for the next (a zstd context
    /// costs more to set up than a small file costs to compress).
    static ENCODER: std::cell::RefCell<Option<(EncoderKey, Encoder)>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with this thread's encoder for `opts`, creating it if the options changed.
fn with_encoder<T>(opts: &PackOptions, f: impl FnOnce(&mut Encoder) -> T) -> Result<T> {
    let key = (opts.codec, opts.level, opts.filter, opts.thorough);
    ENCODER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_none_or(|(k, _)| *k != key) {
            let enc = Encoder::new(opts.codec, opts.level, opts.filter, opts.thorough)
                .map_err(Error::Option)?;
            *slot = Some((key, enc));
        }
        match slot.as_mut() {
            Some((_, enc)) => Ok(f(enc)),
            None => Err(Error::Internal("no encoder".into())),
        }
    })
}

struct Job {
    slot: u64,
    id: u32,
    block: u64,
    esize: usize,
    data: Vec<u8>,
}

struct Done {
    slot: u64,
    header: FrameHeader,
    frame: Vec<u8>,
}

fn encode_worker(
    rx: Arc<Mutex<Receiver<Job>>>,
    tx: std::sync::mpsc::SyncSender<Done>,
    opts: &PackOptions,
) {
    let Ok(mut enc) = Encoder::new(opts.codec, opts.level, opts.filter, opts.thorough) else {
        return;
    };
    loop {
        let job = match rx.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(job) = job else { return };
        let mut frame = Vec::with_capacity(job.data.len() / 2 + FRAME_HEADER_LEN);
        let header = enc.encode_frame(job.id, job.block, job.esize, &job.data, &mut frame);
        if tx
            .send(Done {
                slot: job.slot,
                header,
                frame,
            })
            .is_err()
        {
            return;
        }
    }
}

type WriterOutput = (Vec<Option<IndexEntry>>, u64);

fn write_frames<W: Write>(
    w: &mut W,
    rx: Receiver<Done>,
    mut pos: u64,
    total_blocks: u64,
) -> std::io::Result<WriterOutput> {
    let mut entries: Vec<Option<IndexEntry>> = vec![None; total_blocks as usize];
    for done in rx {
        w.write_all(&done.frame)?;
        entries[done.slot as usize] = Some(IndexEntry {
            offset: pos,
            stored_len: done.header.stored_len,
            codec: done.header.codec,
            filter: done.header.filter,
            flags: 0,
        });
        pos += done.frame.len() as u64;
    }
    Ok((entries, pos))
}

/// A reader that hashes and counts everything read through it.
struct Hashing<R> {
    inner: R,
    hash: Xxh3,
    count: u64,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }
}

/// Reads the file in order, routing segments into stream blocks and sending full blocks to the
/// encoders. Returns the file's hash.
fn route<R: Read>(
    reader: R,
    input: &Path,
    layout: &Layout,
    streams: &[Stream],
    progress: &(dyn Fn(u64) + Sync),
    emit: &mut dyn FnMut(Job) -> Result<()>,
) -> Result<u128> {
    let mut r = BufReader::with_capacity(
        (4 << 20).min(layout.file_len as usize + 1),
        Hashing {
            inner: reader.take(layout.file_len),
            hash: Xxh3::new(),
            count: 0,
        },
    );
    let residual = streams.len() - 1;
    let mut open: Vec<Vec<u8>> = streams.iter().map(|_| Vec::new()).collect();
    let mut next_block: Vec<u64> = vec![0; streams.len()];
    let mut skip = vec![0u8; 0];
    let mut last_report = 0u64;
    layout.walk(|seg| -> Result<()> {
        let si = match seg.target {
            Target::Header => {
                skip.resize(seg.len as usize, 0);
                r.read_exact(&mut skip).map_err(io_err(input, "read"))?;
                return Ok(());
            }
            Target::Var(i) => i,
            Target::Residual => residual,
        };
        let s = &streams[si];
        let mut left = seg.len;
        while left > 0 {
            let buf = &mut open[si];
            if buf.capacity() == 0 {
                let remaining = s.total - next_block[si] * s.block_bytes;
                buf.reserve_exact(remaining.min(s.block_bytes) as usize);
            }
            let room = s.block_bytes - buf.len() as u64;
            let take = left.min(room) as usize;
            let at = buf.len();
            buf.resize(at + take, 0);
            r.read_exact(&mut buf[at..])
                .map_err(io_err(input, "read"))?;
            left -= take as u64;
            let done_bytes = next_block[si] * s.block_bytes + buf.len() as u64;
            if buf.len() as u64 == s.block_bytes || done_bytes == s.total {
                let data = std::mem::take(buf);
                let block = next_block[si];
                next_block[si] += 1;
                emit(Job {
                    slot: s.first_slot + block,
                    id: s.id,
                    block,
                    esize: s.esize,
                    data,
                })?;
            }
        }
        let count = r.get_ref().count;
        if count - last_report >= 8 << 20 {
            last_report = count;
            progress(count);
        }
        Ok(())
    })?;
    progress(layout.file_len);
    Ok(r.into_inner().hash.digest128())
}
