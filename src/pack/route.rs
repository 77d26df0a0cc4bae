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
use crate::format::streams::{shared_order, streams, Stream};
use crate::nc3::{Header, Layout, RecordPattern, Target, Walk};
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
pub(crate) struct Job {
    /// Stream number as in [`streams`].
    pub stream: usize,
    /// Frame stream id.
    pub id: u32,
    /// Block number in the stream.
    pub block: u64,
    /// Element size for the filters.
    pub esize: usize,
    /// The block's bytes.
    pub data: Vec<u8>,
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

/// Largest record held in memory while packing from a stream (see [`route`]).
const RECORD_BUFFER_MAX: u64 = 64 << 20;

/// Routes the `k` whole records at the start of `buf`, as laid out by `p`: each variable's
/// slabs in bulk, then the padding in file order.
fn route_records(
    p: &RecordPattern,
    router: &mut Router,
    residual: usize,
    buf: &[u8],
    k: usize,
) -> Result<()> {
    let rs = p.recsize as usize;
    for &(off, len, s) in &p.vars {
        router.push_strided(s, buf, off, rs, len, k)?;
    }
    for r in 0..k {
        let at = r * rs;
        for &(off, len) in &p.gaps {
            router.push(residual, &buf[at + off..at + off + len])?;
        }
        if r + 1 < k && p.last_end < rs {
            router.push(residual, &buf[at + p.last_end..at + rs])?;
        }
    }
    Ok(())
}

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
pub(crate) fn route<R: Read>(
    reader: R,
    input: &Path,
    header: &Header,
    source: Source<'_>,
    block_size: u32,
    progress: &(dyn Fn(u64) + Sync),
    emit: &mut dyn FnMut(Job) -> Result<()>,
) -> Result<Routed> {
    let layout_err = |source: LayoutError| Error::Layout {
        path: input.to_path_buf(),
        source,
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
    // Small records are routed a chunk at a time; the walk skips the segments a chunk covered.
    let pattern = plan.record_pattern();
    let mut chunk: Vec<u8> = Vec::new();
    // A file shorter than when its layout was computed.
    let file_ended = |at: u64| {
        let what = format!(
            "the file ended at byte {at}, before its {} bytes (did it change while being packed?)",
            plan.file_len
        );
        Error::Io {
            path: input.to_path_buf(),
            op: "read",
            source: std::io::Error::new(std::io::ErrorKind::UnexpectedEof, what),
        }
    };
    // A record being read from a stream: its bytes, and which stream each run belongs to.
    let mut pending: Vec<u8> = Vec::new();
    let mut pieces: Vec<(usize, usize)> = Vec::new();
    let mut in_record = false;
    let mut records = 0u64;
    let mut eof_at: Option<u64> = None;
    let mut consumed = 0u64;
    let mut last_report = 0u64;
    let walked = plan.walk_with(|seg| -> std::result::Result<Walk, Stop> {
        let stream = match seg.target {
            Target::Header => None,
            Target::Var(i) => Some(i),
            Target::Residual => Some(residual),
        };
        if let Some(at) = eof_at {
            // The input ended in residual bytes before this segment: fine before a record
            // (there are none), an error before a fixed variable.
            return match seg.target {
                Target::Var(i) if !plan.vars[i].is_record => {
                    Err(Stop::Fail(layout_err(LayoutError::InputEndsInVar {
                        var: header.var(i).name().to_string(),
                        begin: seg.offset,
                        len: at,
                    })))
                }
                _ => Err(Stop::Eof),
            };
        }
        if let Some(p) = pattern
            .as_ref()
            .filter(|_| Some(seg.target) == record_starts)
        {
            // A chunk of records, from the start of this one.
            let want = p.per_chunk.min(plan.numrecs - records);
            let start = p.first_begin + records * p.recsize;
            if seg.offset != start {
                return Err(Stop::Fail(Error::Internal(format!(
                    "record {records} starts at byte {}, expected {start}",
                    seg.offset
                ))));
            }
            let span = p.span(want);
            chunk.clear();
            chunk.reserve(span as usize);
            (&mut r)
                .take(span)
                .read_to_end(&mut chunk)
                .map_err(io_err(input, "read"))?;
            let n = chunk.len();
            // Whole records read (all of them, unless the input ended).
            let k = if n as u64 == span {
                want
            } else {
                (0..want).take_while(|&i| p.span(i + 1) <= n as u64).count() as u64
            };
            if k > 0 {
                route_records(p, &mut router, residual, &chunk, k as usize)?;
            }
            records += k;
            consumed += n as u64;
            if consumed - last_report >= 8 << 20 {
                last_report = consumed;
                progress(consumed);
            }
            if k < want {
                if !streaming {
                    return Err(Stop::Fail(file_ended(consumed)));
                }
                // The input ended inside a record: what was read after the last whole record
                // is residual bytes, and there is nothing more.
                let done = if k > 0 { p.span(k) as usize } else { 0 };
                router.push(residual, &chunk[done..n])?;
                return Err(Stop::Eof);
            }
            return Ok(Walk::SkipRecords(want));
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
            let n = avail
                .len()
                .min(usize::try_from(seg.len - got).unwrap_or(usize::MAX));
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
                return Err(Stop::Fail(file_ended(consumed)));
            }
            if in_record {
                // An incomplete record: everything read of it is residual.
                router.push(residual, &pending)?;
                return Err(Stop::Eof);
            }
            match seg.target {
                Target::Var(i) if plan.vars[i].is_record => {
                    return Err(Stop::Fail(layout_err(LayoutError::IncompleteRecord {
                        len: consumed,
                        recsize: plan.recsize,
                        max: RECORD_BUFFER_MAX,
                    })))
                }
                Target::Var(i) => {
                    return Err(Stop::Fail(layout_err(LayoutError::InputPastEnd {
                        var: header.var(i).name().to_string(),
                        begin: seg.offset,
                        end: seg.offset + seg.len,
                        len: consumed,
                    })))
                }
                Target::Header => {
                    return Err(Stop::Fail(layout_err(LayoutError::InputEndsInHeader {
                        len: consumed,
                        header_len: plan.header_len,
                    })))
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
        Ok(Walk::Next)
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
    let streams = router.finish(&layout)?;
    Ok(Routed {
        layout,
        streams,
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
        crate::format::codec::member_encode(self.open[s].esize, &m, &mut enc);
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
        Ok(want)
    }
}

/// Appends `n` pieces of `len` bytes, `data[at..at + len]` and every `stride` bytes after, to
/// `out`; the common element sizes get fixed-size copies.
fn gather(out: &mut Vec<u8>, data: &[u8], at: usize, stride: usize, len: usize, n: usize) {
    fn fixed<const L: usize>(out: &mut Vec<u8>, data: &[u8], at: usize, stride: usize, n: usize) {
        for i in 0..n {
            let p = at + i * stride;
            out.extend_from_slice(&data[p..p + L]);
        }
    }
    out.reserve(n * len);
    match len {
        1 => fixed::<1>(out, data, at, stride, n),
        2 => fixed::<2>(out, data, at, stride, n),
        4 => fixed::<4>(out, data, at, stride, n),
        8 => fixed::<8>(out, data, at, stride, n),
        _ => {
            for i in 0..n {
                let p = at + i * stride;
                out.extend_from_slice(&data[p..p + len]);
            }
        }
    }
}
