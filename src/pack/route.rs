//! Routing: the original file's bytes, read once in order, into its streams' blocks.
//!
//! The walk over the file's segments ([`Layout::walk`]) says where each byte goes: a variable's
//! stream (records de-interleaved), the residual bytes, or, for a small stream, a shared stream
//! (see [`crate::format::streams`]). Blocks are handed on as they fill. Input of unknown length (a pipe)
//! is walked against a layout open at the end, counting records as they arrive. Records of up
//! to 64 KiB are read a chunk of records at a time and gathered variable by variable (see
//! [`Layout::record_pattern`]), the same way from a file and from a pipe.

use crate::error::{io_err, Error, LayoutError, Result};
use crate::format;
use crate::format::streams::{shared_order, streams_with, Stream};
use crate::nc3::{gather, Header, Layout, RecordPattern, Segment, Target, Walk};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use xxhash_rust::xxh3::Xxh3;

/// What is known about the input before it is read.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    /// A file of known length, with this layout.
    File(&'a Layout),
    /// A stream of unknown length: records are counted as they arrive.
    Stream,
}

/// A full block of one stream, ready to encode.
pub(crate) struct RoutedBlock {
    /// Stream number as in [`streams`].
    pub stream: usize,
    /// Frame stream id.
    pub id: u32,
    /// Block number in the stream.
    pub block: u64,
    /// Element size for the filters.
    pub esize: usize,
    /// The length of the stream's blocks (the last may be shorter).
    pub block_bytes: u64,
    /// The block's bytes.
    pub data: Vec<u8>,
    /// Whether it is the last block of a stream of known length (a fixed-size variable's, or
    /// a shared stream's): the stream's run of blocks ends with it.
    pub last: bool,
}

/// A reader that hashes everything read through it.
struct Hashing<R> {
    inner: R,
    hash: Xxh3,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
}

/// What routing found out: the layout of the file that was read, and its hash.
pub(crate) struct Routed {
    /// The layout of the file that was read (its length and record count now known).
    pub layout: Layout,
    /// Its streams ([`streams`]), each checked to have received exactly its bytes.
    pub streams: Vec<Stream>,
    /// XXH3-128 of every byte read.
    pub hash: u128,
}

/// Bytes read from the input at a time (see [`route`]).
const READ_BUFFER: usize = 256 << 10;

/// Largest record held in memory while packing from a stream (see [`route`]).
const RECORD_BUFFER_MAX: u64 = 64 << 20;

/// Length given to the layout of a stream of unknown length while it is read.
const OPEN_LEN: u64 = i64::MAX as u64;

/// Why a walk over the segments stopped early.
enum WalkStop {
    /// The input ended where the layout allows it (a stream's end).
    Eof,
    /// Something failed.
    Fail(Error),
}

impl From<Error> for WalkStop {
    fn from(e: Error) -> WalkStop {
        WalkStop::Fail(e)
    }
}

/// Reads the file in order, routing each segment's bytes into its stream's blocks and sending
/// full blocks to `emit`. For a [`Source::Stream`] the records are counted as they arrive, and a
/// record is routed only once it is complete: the bytes of an incomplete last record, like
/// anything after the last record, are residual bytes. Records over [`RECORD_BUFFER_MAX`] bytes
/// are routed as they arrive instead, and a stream that ends inside one is refused.
pub(crate) fn route<R: Read>(
    reader: R,
    input: &Path,
    header: &Header,
    source: Source<'_>,
    sizes: &format::BlockSizes,
    progress: &(dyn Fn(u64) + Sync),
    emit: &mut dyn FnMut(RoutedBlock) -> Result<()>,
) -> Result<Routed> {
    let (plan, limit) = match source {
        Source::File(l) => (l.clone(), l.file_len),
        Source::Stream => (
            Layout::new(header, OPEN_LEN).map_err(layout_err(input))?,
            u64::MAX,
        ),
    };
    // Reads of 256 KiB: the first block goes to the encoders after 1 MiB rather than 4, and
    // the bytes are still in the cache when they are hashed and copied into their blocks.
    let r = BufReader::with_capacity(
        READ_BUFFER.min(plan.file_len as usize + 1),
        Hashing {
            inner: reader.take(limit),
            hash: Xxh3::new(),
        },
    );
    // Small records are routed a chunk at a time; the walk skips the segments a chunk covered.
    let pattern = plan.record_pattern();
    let mut pass = Pass::new(r, &plan, header, input, source, progress, sizes, emit);
    match plan.walk_with(|seg| pass.visit(pattern.as_ref(), seg)) {
        Ok(()) | Err(WalkStop::Eof) => {}
        Err(WalkStop::Fail(e)) => return Err(e),
    }
    progress(pass.consumed);
    let layout = match source {
        Source::File(l) => l.clone(),
        Source::Stream => {
            // Without record data the count is the header's, as for a file.
            let numrecs = if pass.record_starts.is_some() {
                pass.records
            } else {
                plan.numrecs
            };
            Layout::with_numrecs(header, pass.consumed, numrecs).map_err(layout_err(input))?
        }
    };
    let streams = pass.router.finish(&layout)?;
    Ok(Routed {
        layout,
        streams,
        hash: pass.r.into_inner().hash.digest128(),
    })
}

/// A layout error of the file `input`.
fn layout_err(input: &Path) -> impl Fn(LayoutError) -> Error + '_ {
    move |source| Error::Layout {
        path: input.to_path_buf(),
        source,
    }
}

/// One pass over the input, segment by segment ([`Pass::visit`]), in file order.
struct Pass<'a, 'e, B> {
    r: B,
    plan: &'a Layout,
    header: &'a Header,
    input: &'a Path,
    /// Whether the input is a stream of unknown length.
    streaming: bool,
    progress: &'a (dyn Fn(u64) + Sync),
    router: Router<'e>,
    /// The residual bytes' stream.
    residual: usize,
    /// A record starts with the first record variable that has bytes and ends with the last.
    record_starts: Option<Target>,
    record_ends: Option<Target>,
    /// From a stream, a record is held until it is complete (an incomplete last record is
    /// residual bytes), unless records are too large to hold.
    buffer_records: bool,
    /// A chunk of records being routed (see [`RecordPattern`]).
    chunk: Vec<u8>,
    /// A record being read from a stream: its bytes, and which stream each run belongs to.
    pending: Vec<u8>,
    pieces: Vec<(usize, usize)>,
    in_record: bool,
    /// Records read so far.
    records: u64,
    /// Where the input ended, in residual bytes.
    eof_at: Option<u64>,
    /// Bytes read so far, and when progress was last reported.
    consumed: u64,
    last_report: u64,
}

impl<'a, 'e, B: BufRead> Pass<'a, 'e, B> {
    #[allow(clippy::too_many_arguments)]
    fn new(
        r: B,
        plan: &'a Layout,
        header: &'a Header,
        input: &'a Path,
        source: Source<'_>,
        progress: &'a (dyn Fn(u64) + Sync),
        sizes: &format::BlockSizes,
        emit: &'e mut dyn FnMut(RoutedBlock) -> Result<()>,
    ) -> Self {
        let streaming = matches!(source, Source::Stream);
        let with_bytes = |&&i: &&usize| plan.vars[i].slab > 0;
        let first_rec = plan.rec_order().iter().find(with_bytes).copied();
        let last_rec = plan.rec_order().iter().rev().find(with_bytes).copied();
        Pass {
            r,
            plan,
            header,
            input,
            streaming,
            progress,
            router: Router::new(plan, sizes, emit),
            residual: plan.vars.len(),
            record_starts: first_rec.map(Target::Var),
            record_ends: last_rec.map(Target::Var),
            buffer_records: streaming && plan.recsize <= RECORD_BUFFER_MAX,
            chunk: Vec::new(),
            pending: Vec::new(),
            pieces: Vec::new(),
            in_record: false,
            records: 0,
            eof_at: None,
            consumed: 0,
            last_report: 0,
        }
    }

    /// Routes the segment `seg`, or the chunk of records it starts when records have a
    /// `pattern`.
    fn visit(
        &mut self,
        pattern: Option<&RecordPattern>,
        seg: Segment,
    ) -> std::result::Result<Walk, WalkStop> {
        if let Some(at) = self.eof_at {
            // The input ended in residual bytes before this segment: fine before a record
            // (there are none), an error before a fixed variable.
            return match seg.target {
                Target::Var(i) if !self.plan.vars[i].is_record => {
                    Err(WalkStop::Fail(layout_err(self.input)(
                        LayoutError::InputEndsInVar {
                            var: self.header.var(i).name().to_string(),
                            begin: seg.offset,
                            len: at,
                        },
                    )))
                }
                _ => Err(WalkStop::Eof),
            };
        }
        match pattern {
            Some(p) if Some(seg.target) == self.record_starts => self.chunk(p, seg),
            _ => self.segment(seg),
        }
    }

    /// Routes a chunk of records, from the start of the one `seg` starts.
    fn chunk(&mut self, p: &RecordPattern, seg: Segment) -> std::result::Result<Walk, WalkStop> {
        let want = p.chunk_records(self.records, self.plan.numrecs);
        let start = p.first_begin + self.records * p.recsize;
        if seg.offset != start {
            return Err(WalkStop::Fail(Error::Internal(format!(
                "record {} starts at byte {}, expected {start}",
                self.records, seg.offset
            ))));
        }
        let span = p.span(want);
        self.chunk.clear();
        self.chunk.reserve(span as usize);
        (&mut self.r)
            .take(span)
            .read_to_end(&mut self.chunk)
            .map_err(io_err(self.input, "read"))?;
        let n = self.chunk.len();
        // Whole records read (all of them, unless the input ended).
        let k = if n as u64 == span {
            want
        } else {
            (0..want).take_while(|&i| p.span(i + 1) <= n as u64).count() as u64
        };
        if k > 0 {
            // Each variable's slabs in bulk, then the padding in file order.
            let rs = p.recsize as usize;
            for &(off, len, s) in &p.vars {
                self.router
                    .push_strided(s, &self.chunk, off, rs, len, k as usize)?;
            }
            for gap in p.padding(k as usize) {
                self.router.push(self.residual, &self.chunk[gap])?;
            }
        }
        self.records += k;
        self.advance(n as u64);
        if k < want {
            if !self.streaming {
                return Err(WalkStop::Fail(self.file_ended()));
            }
            // The input ended inside a record: what was read after the last whole record
            // is residual bytes, and there is nothing more.
            let done = if k > 0 { p.span(k) as usize } else { 0 };
            self.router.push(self.residual, &self.chunk[done..n])?;
            return Err(WalkStop::Eof);
        }
        Ok(Walk::SkipRecords(want))
    }

    /// Routes one segment's bytes straight from the read buffer (or holds them, inside a
    /// record from a stream).
    fn segment(&mut self, seg: Segment) -> std::result::Result<Walk, WalkStop> {
        let stream = match seg.target {
            Target::Header => None,
            Target::Var(i) => Some(i),
            Target::Residual => Some(self.residual),
        };
        if self.buffer_records && Some(seg.target) == self.record_starts {
            self.in_record = true;
        }
        let mut got = 0u64;
        while got < seg.len {
            let avail = self.r.fill_buf().map_err(io_err(self.input, "read"))?;
            if avail.is_empty() {
                break;
            }
            let n = avail
                .len()
                .min(usize::try_from(seg.len - got).unwrap_or(usize::MAX));
            if self.in_record {
                self.pending.extend_from_slice(&avail[..n]);
            } else if let Some(s) = stream {
                self.router.push(s, &avail[..n])?;
            }
            self.r.consume(n);
            got += n as u64;
        }
        if self.in_record && got > 0 {
            self.pieces
                .push((stream.unwrap_or(self.residual), got as usize));
        }
        self.advance(got);
        if got < seg.len {
            self.ended_in(seg)?;
        }
        if Some(seg.target) == self.record_ends {
            // The record is complete: route it if it was held.
            let mut at = 0;
            for &(s, n) in &self.pieces {
                self.router.push(s, &self.pending[at..at + n])?;
                at += n;
            }
            self.pending.clear();
            self.pieces.clear();
            self.in_record = false;
            self.records += 1;
        }
        Ok(Walk::Next)
    }

    /// The input ended inside `seg`: the end of a stream where it may end (residual bytes, or
    /// a held record, which becomes residual bytes), otherwise an error.
    fn ended_in(&mut self, seg: Segment) -> std::result::Result<(), WalkStop> {
        if !self.streaming {
            return Err(WalkStop::Fail(self.file_ended()));
        }
        if self.in_record {
            // An incomplete record: everything read of it is residual.
            self.router.push(self.residual, &self.pending)?;
            return Err(WalkStop::Eof);
        }
        let len = self.consumed;
        let err = match seg.target {
            Target::Var(i) if self.plan.vars[i].is_record => LayoutError::IncompleteRecord {
                len,
                recsize: self.plan.recsize,
                max: RECORD_BUFFER_MAX,
            },
            Target::Var(i) => LayoutError::InputPastEnd {
                var: self.header.var(i).name().to_string(),
                begin: seg.offset,
                end: seg.offset + seg.len,
                len,
            },
            Target::Header => LayoutError::InputEndsInHeader {
                len,
                header_len: self.plan.header_len,
            },
            Target::Residual => {
                self.eof_at = Some(len);
                return Ok(());
            }
        };
        Err(WalkStop::Fail(layout_err(self.input)(err)))
    }

    /// Counts `n` more bytes read, reporting progress every 8 MiB.
    fn advance(&mut self, n: u64) {
        self.consumed += n;
        if self.consumed - self.last_report >= 8 << 20 {
            self.last_report = self.consumed;
            (self.progress)(self.consumed);
        }
    }

    /// A file shorter than when its layout was computed.
    fn file_ended(&self) -> Error {
        let what = format!(
            "the file ended at byte {}, before its {} bytes (did it change while being packed?)",
            self.consumed, self.plan.file_len
        );
        Error::Io {
            path: self.input.to_path_buf(),
            op: "read",
            source: std::io::Error::new(std::io::ErrorKind::UnexpectedEof, what),
        }
    }
}

/// Assembles the streams' blocks as bytes arrive.
struct Router<'e> {
    open: Vec<OpenStream>,
    sizes: format::BlockSizes,
    emit: &'e mut dyn FnMut(RoutedBlock) -> Result<()>,
}

/// A stream being assembled.
struct OpenStream {
    id: u32,
    esize: usize,
    block_bytes: u64,
    /// The most bytes it may have and be a member of a shared stream.
    small: u64,
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
        sizes: &format::BlockSizes,
        emit: &'e mut dyn FnMut(RoutedBlock) -> Result<()>,
    ) -> Router<'e> {
        let size_of = |id: u32| {
            if (id as usize) < plan.vars.len() {
                sizes.var(id as usize)
            } else {
                sizes.default
            }
        };
        let mut open: Vec<OpenStream> = Vec::with_capacity(plan.vars.len() + 2);
        let mut add = |id: u32, esize: usize, total: Option<u64>, fixed: bool| {
            let small = format::shared_max(size_of(id));
            open.push(OpenStream {
                id,
                esize,
                block_bytes: format::var_block_bytes(size_of(id), esize),
                small,
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
            .filter(|&&i| {
                split && (1..=format::shared_max(sizes.var(i))).contains(&plan.vars[i].total)
            })
            .map(|&i| plan.vars[i].total)
            .sum();
        add(format::SHARED_EARLY_ID, 1, Some(early), false);
        add(format::SHARED_LATE_ID, 1, None, false);
        for o in open.iter_mut().rev().take(2) {
            o.member = None;
        }
        Router {
            open,
            sizes: sizes.clone(),
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

    /// Routes `count` pieces of `len` bytes of stream `s`: `data[at..at + len]`, then every
    /// `stride` bytes. The same as pushing them one by one, with the copying done in bulk while
    /// they fit in the open block.
    fn push_strided(
        &mut self,
        s: usize,
        data: &[u8],
        mut at: usize,
        stride: usize,
        len: usize,
        mut count: usize,
    ) -> Result<()> {
        while count > 0 {
            let o = &mut self.open[s];
            // Pieces that fit without filling the block (push's fast path).
            let fit = if o.member.is_none() && o.limit > o.block.len() {
                (o.limit - o.block.len() - 1) / len
            } else {
                0
            };
            if fit == 0 {
                self.push(s, &data[at..at + len])?;
                at += stride;
                count -= 1;
                continue;
            }
            let n = fit.min(count);
            gather(&mut o.block, data, at, stride, len, n);
            o.seen += (n * len) as u64;
            at += n * stride;
            count -= n;
        }
        Ok(())
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
        let o = &mut self.open[s];
        o.seen += data.len() as u64;
        if let Some(m) = &mut o.member {
            if o.seen <= o.small {
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
                // A block of a known length is reserved whole; one of a shared stream, whose
                // length is not known, grows as members join (a small file's is a few KiB,
                // not a block's 1 MiB: made and freed for every file of a batch, that
                // allocation is a fresh mapping each time in a process whose allocator maps
                // large blocks afresh, as a dask worker's does).
                if o.total.is_some() {
                    o.block.reserve_exact(o.limit);
                }
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
        let last = o
            .total
            .is_some_and(|t| o.next_block.saturating_mul(o.block_bytes) >= t);
        (self.emit)(RoutedBlock {
            stream: s,
            id: o.id,
            block,
            esize: o.esize,
            block_bytes: o.block_bytes,
            data,
            last,
        })
    }

    /// Ends the input: the remaining members join the shared stream, the last partial blocks
    /// are emitted, and what was routed is checked against the final `layout`'s streams, which
    /// are returned.
    fn finish(mut self, layout: &Layout) -> Result<Vec<Stream>> {
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
        let want = streams_with(layout, &self.sizes);
        for (s, o) in self.open.iter().enumerate() {
            if want.get(s).map(|w| w.total) != Some(o.seen) {
                return Err(Error::Internal(format!(
                    "stream {s} got {} bytes, the layout says {:?}",
                    o.seen,
                    want.get(s).map(|w| w.total)
                )));
            }
        }
        Ok(want)
    }
}
