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
use crate::nc3::{self, Header, Layout, Target};
use std::io::{BufRead, BufReader, BufWriter, Read, Seek, Write};
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

/// One stream of the archive: a variable's materialized data, the residual bytes, or one of the
/// two shared streams that hold the small ones of those.
#[derive(Debug, Clone)]
pub(crate) struct Stream {
    /// Frame stream id.
    pub id: u32,
    /// Element size (1 for residual bytes and the shared streams).
    pub esize: usize,
    /// Total bytes.
    pub total: u64,
    /// Bytes per block.
    pub block_bytes: u64,
    /// Index of the stream's first block in the index.
    pub first_slot: u64,
    /// For a member of a shared stream: that stream (numbered as in [`streams`]) and where the
    /// member's encoded bytes start in it. A member has no blocks of its own.
    pub shared: Option<(usize, u64)>,
}

impl Stream {
    fn new(id: u32, esize: usize, total: u64, block_size: u32) -> Stream {
        Stream {
            id,
            esize,
            total,
            block_bytes: format::var_block_bytes(block_size, esize),
            first_slot: 0,
            shared: None,
        }
    }

    /// Number of blocks of its own (0 for a member of a shared stream).
    pub fn blocks(&self) -> u64 {
        match self.shared {
            Some(_) => 0,
            None => format::block_count(self.total, self.block_bytes),
        }
    }
}

/// The streams of a layout in index order: variables in header order, the residual bytes, the
/// early shared stream, then the late shared stream. Every stream of 1 to
/// [`format::shared_max`] bytes is a member of a shared stream, which holds its members' encoded
/// bytes one after another in the order of [`shared_order`].
pub(crate) fn streams(layout: &Layout, block_size: u32) -> Vec<Stream> {
    let mut out: Vec<Stream> = layout
        .vars
        .iter()
        .enumerate()
        .map(|(i, v)| Stream::new(i as u32, v.esize, v.total, block_size))
        .collect();
    out.push(Stream::new(
        format::RESIDUAL_ID,
        1,
        layout.residual_len,
        block_size,
    ));
    let small = format::shared_max(block_size);
    let mut totals = [0u64; 2];
    for (s, k) in shared_order(layout) {
        let st = &mut out[s];
        if (1..=small).contains(&st.total) {
            st.shared = Some((layout.vars.len() + 1 + k, totals[k]));
            totals[k] += st.total;
        }
    }
    out.push(Stream::new(
        format::SHARED_EARLY_ID,
        1,
        totals[0],
        block_size,
    ));
    out.push(Stream::new(
        format::SHARED_LATE_ID,
        1,
        totals[1],
        block_size,
    ));
    let mut slot = 0u64;
    for s in &mut out {
        s.first_slot = slot;
        slot += s.blocks();
    }
    out
}

/// The candidates for the shared streams in order, as (stream, 0 for the early shared stream or
/// 1 for the late one): the fixed variables in file order (early when the header declares more
/// than [`format::SPLIT_MIN`] bytes of data), then the record variables in record order, then
/// the residual bytes.
fn shared_order(layout: &Layout) -> impl Iterator<Item = (usize, usize)> + '_ {
    let residual = layout.vars.len();
    let early = usize::from(layout.declared_end <= format::SPLIT_MIN);
    let fixed = layout.fixed_order().iter().map(move |&i| (i, early));
    let rec = layout.rec_order().iter().map(|&i| (i, 1));
    fixed.chain(rec).chain(std::iter::once((residual, 1)))
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
    let (header, header_bytes, layout) = nc3::open(&file, input)?;
    crate::atomic::write_to_temp(output, force, input, sync, |out| {
        let source = Source::File(&layout);
        pack_stream(
            file,
            input,
            &header,
            &header_bytes,
            source,
            opts,
            out,
            output,
            progress,
        )
    })
}

/// Packs a netCDF-3 file arriving on `reader` (standard input, a pipe) into `output`,
/// atomically, in one pass: nothing is read twice and nothing seeks. `input` names the source
/// in errors. Memory is bounded by the block pipeline, one open block per record variable and
/// one record of the input, held until the record is known to be complete (records over 64 MiB
/// are not held, and an input that ends inside one is refused).
///
/// ```no_run
/// let stdin = std::io::stdin().lock();
/// let s = nc3pack::pack::pack_reader(stdin, "-".as_ref(), "/tmp/out.nc3z".as_ref(),
///     &nc3pack::PackOptions::default(), false, &|_| {}).unwrap();
/// println!("{} bytes in", s.input_len);
/// ```
pub fn pack_reader<R: Read>(
    mut reader: R,
    input: &Path,
    output: &Path,
    opts: &PackOptions,
    force: bool,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<PackSummary> {
    opts.check()?;
    let (header, prefix) = nc3::read_header_stream(&mut reader, input)?;
    let header_bytes = prefix[..header.len as usize].to_vec();
    let reader = std::io::Cursor::new(prefix).chain(reader);
    let (pending, summary) = crate::atomic::write_to_temp(output, force, input, true, |out| {
        pack_stream(
            reader,
            input,
            &header,
            &header_bytes,
            Source::Stream,
            opts,
            out,
            output,
            progress,
        )
    })?;
    pending.commit()?;
    Ok(summary)
}

/// What is known about the input before it is read.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    /// A file of known length, with this layout.
    File(&'a Layout),
    /// A stream of unknown length: records are counted as they arrive.
    Stream,
}

/// Packs from `reader`, positioned at the start of a netCDF-3 file with the given header (and
/// its bytes), into `out` (positioned at 0). `input` and `out_path` name the files in errors.
#[allow(clippy::too_many_arguments)] // each argument is a distinct input of the pipeline
pub fn pack_stream<R: Read, W: Write + Seek + Send>(
    reader: R,
    input: &Path,
    header: &Header,
    header_bytes: &[u8],
    source: Source<'_>,
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
    let mut w = BufWriter::with_capacity(1 << 20, out);
    // The lead is rewritten at the end, when the hash (and for a stream the length and record
    // count) are known.
    let mut lead = Lead {
        file_len: header.len,
        numrecs: 0,
        header_len: header.len,
        block_size: opts.block_size,
        hash: 0,
    };
    if let Source::File(l) = source {
        (lead.file_len, lead.numrecs) = (l.file_len, l.numrecs);
    }
    w.write_all(&lead.encode()).map_err(werr)?;
    let header_frame = format::header_frame(header_bytes);
    w.write_all(&header_frame).map_err(werr)?;
    let data_start = (LEAD_LEN + header_frame.len()) as u64;

    let threads = opts.threads.max(1);
    let inline = threads == 1 || matches!(source, Source::File(l) if l.file_len <= INLINE_MAX);
    let (entries, pos, mut w, routed) = if inline {
        // Small input or one thread: encode and write in this thread, no pipeline.
        let mut entries = Entries::default();
        let mut pos = data_start;
        let mut frame = Vec::new();
        let mut write_err = None;
        let routed = with_encoder(opts, |enc| {
            route(
                reader,
                input,
                header,
                source,
                opts.block_size,
                progress,
                &mut |job: Job| {
                    frame.clear();
                    let h = enc.encode_frame(job.id, job.block, job.esize, &job.data, &mut frame);
                    if let Err(e) = w.write_all(&frame) {
                        write_err = Some(e);
                        return Err(Error::Internal("write failed".into()));
                    }
                    entries.put(job.stream, job.block, entry_at(pos, &h));
                    pos += frame.len() as u64;
                    Ok(())
                },
            )
        })?;
        if let Some(e) = write_err {
            return Err(werr(e));
        }
        (entries, pos, w, routed?)
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
            let writer =
                s.spawn(move || write_frames(&mut w, frame_rx, data_start).map(|(e, p)| (e, p, w)));
            let stopped = || Error::Internal("encoder threads stopped".into());
            let read_result = route(
                reader,
                input,
                header,
                source,
                opts.block_size,
                progress,
                &mut |job| job_tx.send(job).map_err(|_| stopped()),
            );
            drop(job_tx);
            (read_result, writer.join())
        });
        let writer_result =
            writer_result.unwrap_or_else(|_| Err(std::io::Error::other("writer thread panicked")));
        // A failed write makes the reader's sends fail; report the write error first.
        let (entries, pos, w) = writer_result.map_err(werr)?;
        (entries, pos, w, read_result?)
    };
    let layout = &routed.layout;
    let entries = entries.in_index_order(&streams(layout, opts.block_size))?;

    let index_offset = pos;
    let index = format::encode_index(&entries);
    w.write_all(&index).map_err(werr)?;
    let footer = format::Footer {
        index_offset,
        index_len: index.len() as u64,
        index_crc: format::crc(&index),
        flags: 0,
    };
    w.write_all(&footer.encode()).map_err(werr)?;
    let out = w.into_inner().map_err(|e| werr(e.into_error()))?;
    let lead = Lead {
        file_len: layout.file_len,
        numrecs: layout.numrecs,
        header_len: layout.header_len,
        block_size: opts.block_size,
        hash: routed.hash,
    };
    out.seek(std::io::SeekFrom::Start(0)).map_err(werr)?;
    out.write_all(&lead.encode()).map_err(werr)?;
    out.flush().map_err(werr)?;
    Ok(PackSummary {
        input_len: layout.file_len,
        output_len: index_offset + index.len() as u64 + format::FOOTER_LEN as u64,
        blocks: entries.len() as u64,
        hash: routed.hash,
    })
}

fn entry_at(offset: u64, h: &FrameHeader) -> IndexEntry {
    IndexEntry {
        offset,
        stored_len: h.stored_len,
        codec: h.codec,
        filter: h.filter,
        flags: 0,
    }
}

/// Index entries as frames are written, by stream (numbered as in [`streams`]) and block.
#[derive(Default)]
struct Entries(Vec<Vec<Option<IndexEntry>>>);

impl Entries {
    fn put(&mut self, stream: usize, block: u64, e: IndexEntry) {
        if self.0.len() <= stream {
            self.0.resize_with(stream + 1, Vec::new);
        }
        let blocks = &mut self.0[stream];
        let b = block as usize;
        if blocks.len() <= b {
            blocks.resize(b + 1, None);
        }
        blocks[b] = Some(e);
    }

    /// The entries in index order; every block of `streams` must have been written, and nothing
    /// else.
    fn in_index_order(mut self, streams: &[Stream]) -> Result<Vec<IndexEntry>> {
        self.0
            .resize_with(self.0.len().max(streams.len()), Vec::new);
        let mut out = Vec::new();
        for (i, blocks) in self.0.into_iter().enumerate() {
            let want = streams.get(i).map_or(0, Stream::blocks);
            if blocks.len() as u64 != want || blocks.iter().any(Option::is_none) {
                return Err(Error::Internal(format!(
                    "stream {i}: {} blocks written, {want} expected",
                    blocks.iter().flatten().count()
                )));
            }
            out.extend(blocks.into_iter().flatten());
        }
        Ok(out)
    }
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
    /// Stream number as in [`streams`].
    stream: usize,
    id: u32,
    block: u64,
    esize: usize,
    data: Vec<u8>,
}

struct Done {
    stream: usize,
    block: u64,
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
                stream: job.stream,
                block: job.block,
                header,
                frame,
            })
            .is_err()
        {
            return;
        }
    }
}

fn write_frames<W: Write>(
    w: &mut W,
    rx: Receiver<Done>,
    mut pos: u64,
) -> std::io::Result<(Entries, u64)> {
    let mut entries = Entries::default();
    for done in rx {
        w.write_all(&done.frame)?;
        entries.put(done.stream, done.block, entry_at(pos, &done.header));
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

/// What routing found out: the layout of the file that was read, and its hash.
struct Routed {
    layout: Layout,
    hash: u128,
}

/// Largest record held in memory while packing from a stream (see [`route`]).
const RECORD_BUFFER_MAX: u64 = 64 << 20;

/// Length given to the layout of a stream of unknown length while it is read.
const OPEN_LEN: u64 = i64::MAX as u64;

/// Why a walk over the segments stopped early.
enum Stop {
    /// The input ended where the layout allows it (a stream's end).
    Eof,
    /// Something failed.
    Fail(Error),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Stop {
        Stop::Fail(e)
    }
}

/// Reads the file in order, routing each segment's bytes into its stream's blocks and sending
/// full blocks to `emit`. For a [`Source::Stream`] the records are counted as they arrive, and a
/// record is routed only once it is complete: the bytes of an incomplete last record, like
/// anything after the last record, are residual bytes. Records over [`RECORD_BUFFER_MAX`] bytes
/// are routed as they arrive instead, and a stream that ends inside one is refused.
fn route<R: Read>(
    reader: R,
    input: &Path,
    header: &Header,
    source: Source<'_>,
    block_size: u32,
    progress: &(dyn Fn(u64) + Sync),
    emit: &mut dyn FnMut(Job) -> Result<()>,
) -> Result<Routed> {
    let layout_err = |what: String| Error::Layout {
        path: input.to_path_buf(),
        what,
    };
    let (plan, limit) = match source {
        Source::File(l) => (l.clone(), l.file_len),
        Source::Stream => (Layout::new(header, OPEN_LEN).map_err(layout_err)?, u64::MAX),
    };
    let streaming = matches!(source, Source::Stream);
    let mut r = BufReader::with_capacity(
        (4 << 20).min(plan.file_len as usize + 1),
        Hashing {
            inner: reader.take(limit),
            hash: Xxh3::new(),
            count: 0,
        },
    );
    let mut router = Router::new(&plan, block_size, emit);
    let residual = plan.vars.len();
    // A record starts with the first record variable that has bytes and ends with the last.
    let with_bytes = |&&i: &&usize| plan.vars[i].slab > 0;
    let first_rec = plan.rec_order().iter().find(with_bytes).copied();
    let last_rec = plan.rec_order().iter().rev().find(with_bytes).copied();
    let (record_starts, record_ends) = (first_rec.map(Target::Var), last_rec.map(Target::Var));
    // From a stream, a record is held until it is complete (an incomplete last record is
    // residual bytes), unless records are too large to hold.
    let buffer_records = streaming && plan.recsize <= RECORD_BUFFER_MAX;
    // A record being read from a stream: its bytes, and which stream each run belongs to.
    let mut pending: Vec<u8> = Vec::new();
    let mut pieces: Vec<(usize, usize)> = Vec::new();
    let mut in_record = false;
    let mut records = 0u64;
    let mut eof_at: Option<u64> = None;
    let mut consumed = 0u64;
    let mut last_report = 0u64;
    let walked = plan.walk(|seg| -> std::result::Result<(), Stop> {
        let stream = match seg.target {
            Target::Header => None,
            Target::Var(i) => Some(i),
            Target::Residual => Some(residual),
        };
        if let Some(at) = eof_at {
            // The input ended in residual bytes before this segment: fine before a record
            // (there are none), an error before a fixed variable.
            return match seg.target {
                Target::Var(i) if !plan.vars[i].is_record => Err(Stop::Fail(layout_err(
                    format!(
                        "variable {:?} data at byte {} extends past the end of the input ({at} bytes)",
                        header.vars[i].name, seg.offset
                    ),
                ))),
                _ => Err(Stop::Eof),
            };
        }
        if buffer_records && Some(seg.target) == record_starts {
            in_record = true;
        }
        // Pass the segment's bytes on straight from the read buffer.
        let mut got = 0u64;
        while got < seg.len {
            let avail = r.fill_buf().map_err(io_err(input, "read"))?;
            if avail.is_empty() {
                break;
            }
            let n = avail.len().min(usize::try_from(seg.len - got).unwrap_or(usize::MAX));
            if in_record {
                pending.extend_from_slice(&avail[..n]);
            } else if let Some(s) = stream {
                router.push(s, &avail[..n])?;
            }
            r.consume(n);
            got += n as u64;
        }
        if in_record && got > 0 {
            pieces.push((stream.unwrap_or(residual), got as usize));
        }
        consumed += got;
        if consumed - last_report >= 8 << 20 {
            last_report = consumed;
            progress(consumed);
        }
        if got < seg.len {
            if !streaming {
                return Err(Stop::Fail(Error::Io {
                    path: input.to_path_buf(),
                    op: "read",
                    source: std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        format!(
                            "the file ended at byte {consumed}, before its {} bytes (did it change while being packed?)",
                            plan.file_len
                        ),
                    ),
                }));
            }
            if in_record {
                // An incomplete record: everything read of it is residual.
                router.push(residual, &pending)?;
                return Err(Stop::Eof);
            }
            match seg.target {
                Target::Var(i) if plan.vars[i].is_record => {
                    return Err(Stop::Fail(layout_err(format!(
                        "the input ends at byte {consumed}, inside a record of {} bytes: records over {} MiB are not buffered, so an incomplete one cannot be packed from a stream (pack the file instead)",
                        plan.recsize,
                        RECORD_BUFFER_MAX >> 20
                    ))))
                }
                Target::Var(i) => {
                    return Err(Stop::Fail(layout_err(format!(
                        "variable {:?} data [{}, {}) extends past the end of the input ({consumed} bytes)",
                        header.vars[i].name,
                        seg.offset,
                        seg.offset + seg.len
                    ))))
                }
                Target::Header => {
                    return Err(Stop::Fail(layout_err(format!(
                        "the input ends at byte {consumed}, inside its {}-byte header",
                        plan.header_len
                    ))))
                }
                Target::Residual => eof_at = Some(consumed),
            }
        }
        if Some(seg.target) == record_ends {
            // The record is complete: route it if it was held.
            let mut at = 0;
            for &(s, n) in &pieces {
                router.push(s, &pending[at..at + n])?;
                at += n;
            }
            pending.clear();
            pieces.clear();
            in_record = false;
            records += 1;
        }
        Ok(())
    });
    match walked {
        Ok(()) | Err(Stop::Eof) => {}
        Err(Stop::Fail(e)) => return Err(e),
    }
    progress(consumed);
    let layout = match source {
        Source::File(l) => l.clone(),
        Source::Stream => {
            // Without record data the count is the header's, as for a file.
            let numrecs = if first_rec.is_some() {
                records
            } else {
                plan.numrecs
            };
            Layout::with_numrecs(header, consumed, numrecs).map_err(layout_err)?
        }
    };
    router.finish(&layout)?;
    Ok(Routed {
        layout,
        hash: r.into_inner().hash.digest128(),
    })
}

/// Assembles the streams' blocks as bytes arrive.
struct Router<'e> {
    open: Vec<OpenStream>,
    small: u64,
    block_size: u32,
    emit: &'e mut dyn FnMut(Job) -> Result<()>,
}

/// A stream being assembled.
struct OpenStream {
    id: u32,
    esize: usize,
    block_bytes: u64,
    /// Its length, when known before reading (fixed variables, the early shared stream).
    total: Option<u64>,
    /// Bytes routed to it so far.
    seen: u64,
    /// The block being filled.
    block: Vec<u8>,
    /// Length at which the block being filled is complete (0: no block is open).
    limit: usize,
    next_block: u64,
    /// While the stream may still be a member of the shared stream: its bytes so far.
    member: Option<Vec<u8>>,
    /// A member of the early shared stream: it joins as soon as it is complete.
    join_when_complete: bool,
}

impl<'e> Router<'e> {
    fn new(
        plan: &Layout,
        block_size: u32,
        emit: &'e mut dyn FnMut(Job) -> Result<()>,
    ) -> Router<'e> {
        let small = format::shared_max(block_size);
        let mut open: Vec<OpenStream> = Vec::with_capacity(plan.vars.len() + 2);
        let mut add = |id: u32, esize: usize, total: Option<u64>, fixed: bool| {
            open.push(OpenStream {
                id,
                esize,
                block_bytes: format::var_block_bytes(block_size, esize),
                total,
                seen: 0,
                block: Vec::new(),
                limit: 0,
                next_block: 0,
                member: total
                    .is_none_or(|t| (1..=small).contains(&t))
                    .then(Vec::new),
                join_when_complete: fixed,
            });
        };
        // Record variables and the residual bytes end with the file: their last blocks are
        // written at the end, as for a stream, whose length is unknown (so a file and the same
        // bytes from a pipe give the same archive).
        let split = plan.declared_end > format::SPLIT_MIN;
        for (i, v) in plan.vars.iter().enumerate() {
            let total = (!v.is_record).then_some(v.total);
            add(i as u32, v.esize, total, split && !v.is_record);
        }
        add(format::RESIDUAL_ID, 1, None, false);
        // The early shared stream's length is known from the header; it is complete (and its
        // last block written) as soon as the last small fixed variable is.
        let early: u64 = plan
            .fixed_order()
            .iter()
            .map(|&i| plan.vars[i].total)
            .filter(|t| split && (1..=small).contains(t))
            .sum();
        add(format::SHARED_EARLY_ID, 1, Some(early), false);
        add(format::SHARED_LATE_ID, 1, None, false);
        for o in open.iter_mut().rev().take(2) {
            o.member = None;
        }
        Router {
            open,
            small,
            block_size,
            emit,
        }
    }

    /// The shared stream member `s` joins.
    fn shared_for(&self, s: usize) -> usize {
        let fixed = self.open.len() - 2;
        if self.open[s].join_when_complete {
            fixed
        } else {
            fixed + 1
        }
    }

    /// Routes `data`, the next bytes of stream `s`.
    #[inline]
    fn push(&mut self, s: usize, data: &[u8]) -> Result<()> {
        // The common case, many times per record: the bytes fit in the open block.
        let o = &mut self.open[s];
        if o.block.len() + data.len() < o.limit {
            o.seen += data.len() as u64;
            o.block.extend_from_slice(data);
            return Ok(());
        }
        self.push_slow(s, data)
    }

    fn push_slow(&mut self, s: usize, data: &[u8]) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let small = self.small;
        let o = &mut self.open[s];
        o.seen += data.len() as u64;
        if let Some(m) = &mut o.member {
            if o.seen <= small {
                m.extend_from_slice(data);
                if o.join_when_complete && o.total == Some(o.seen) {
                    self.join(s)?;
                }
                return Ok(());
            }
            // Too long for the shared stream after all: a stream of its own.
            let m = std::mem::take(m);
            o.member = None;
            self.fill(s, &m)?;
        }
        self.fill(s, data)
    }

    /// Appends member `s`'s bytes, encoded, to the shared stream.
    fn join(&mut self, s: usize) -> Result<()> {
        let Some(m) = self.open[s].member.take() else {
            return Ok(());
        };
        let mut enc = Vec::with_capacity(m.len());
        crate::codec::member_encode(self.open[s].esize, &m, &mut enc);
        let shared = self.shared_for(s);
        self.open[shared].seen += enc.len() as u64;
        self.fill(shared, &enc)
    }

    /// Appends `data` to stream `s`'s blocks, emitting each as it fills (or completes the
    /// stream, when its length is known).
    fn fill(&mut self, s: usize, mut data: &[u8]) -> Result<()> {
        while !data.is_empty() {
            let o = &mut self.open[s];
            if o.limit == 0 {
                // A new block: it ends after a block's bytes or where the stream does.
                let left = o.total.map_or(o.block_bytes, |t| {
                    t.saturating_sub(o.next_block * o.block_bytes)
                });
                o.limit = left.clamp(1, o.block_bytes) as usize;
                o.block.reserve_exact(o.limit);
            }
            let take = (o.limit - o.block.len()).min(data.len());
            o.block.extend_from_slice(&data[..take]);
            data = &data[take..];
            if o.block.len() == o.limit {
                self.emit_block(s)?;
            }
        }
        Ok(())
    }

    fn emit_block(&mut self, s: usize) -> Result<()> {
        let o = &mut self.open[s];
        let data = std::mem::take(&mut o.block);
        o.limit = 0;
        let block = o.next_block;
        o.next_block += 1;
        (self.emit)(Job {
            stream: s,
            id: o.id,
            block,
            esize: o.esize,
            data,
        })
    }

    /// Ends the input: the remaining members join the shared stream, the last partial blocks
    /// are emitted, and what was routed is checked against the final `layout`.
    fn finish(mut self, layout: &Layout) -> Result<()> {
        let order: Vec<usize> = shared_order(layout).map(|(s, _)| s).collect();
        for s in order {
            if self.open[s].member.as_ref().is_some_and(|m| !m.is_empty()) {
                self.join(s)?;
            }
        }
        for s in 0..self.open.len() {
            if !self.open[s].block.is_empty() {
                self.emit_block(s)?;
            }
        }
        let want = streams(layout, self.block_size);
        for (s, o) in self.open.iter().enumerate() {
            if want.get(s).map(|w| w.total) != Some(o.seen) {
                return Err(Error::Internal(format!(
                    "stream {s} got {} bytes, the layout says {:?}",
                    o.seen,
                    want.get(s).map(|w| w.total)
                )));
            }
        }
        Ok(())
    }
}
