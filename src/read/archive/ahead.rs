//! Sequential readers and decode-ahead: a tool that reads a variable in consecutive slabs
//! (nccopy, ncdump, xarray and dask, `nc3pack slice` in pieces) gets the blocks after each slab
//! decoded on the pool's threads while it works on the slab, and finds them ready next time.
//!
//! A read that starts where the last read of its stream ended is sequential. After it, the
//! blocks that follow it (two reads' worth, at least two per thread, within [`AHEAD_BYTES`])
//! are read and decoded in the background into buffers held here, outside the block cache (a
//! scan would only churn it): a local file's frames by the pool's threads themselves, through a
//! duplicate of its descriptor; another reader's frames on the calling thread. The reads that
//! follow take them from here: decoded, or, if no thread has started on one yet, its frame
//! (when it was read already), decoded there and then. A block whose background decoding failed is read again the usual
//! way, which reports the damage. Memory: at most [`AHEAD_BYTES`] of decoded blocks (and their
//! frames), plus a few buffers kept for reuse.

use super::*;
use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};

/// Streams whose last read end is remembered.
const REMEMBERED: usize = 64;

/// Decoded bytes held ahead of the readers, at most (but always at least two blocks).
const AHEAD_BYTES: u64 = 8 << 20;

/// Blocks held ahead of the readers, at most.
const AHEAD_BLOCKS: u64 = 64;

/// Buffers kept for reuse, at most, of each kind (decoded blocks, frames).
const KEPT_BUFFERS: usize = 8;

/// Where the last reads of the most recently read streams ended, and the blocks decoded ahead.
///
/// In a child of `fork()` (a dask or multiprocessing worker that inherited an open archive)
/// none of it is used: a thread of the parent may have held its lock at the fork, and the
/// blocks the parent's threads were decoding will never be ready there. Such a child reads
/// without decoding ahead (with the pool of threads of its own otherwise).
pub(super) struct Ahead {
    /// The process that opened the archive.
    pid: u32,
    /// (stream, end of its last read), most recent last.
    ends: Mutex<Vec<(usize, u64)>>,
    store: Arc<Store>,
}

/// Blocks decoded ahead, by (stream, block), shared with the jobs that decode them.
#[derive(Default)]
struct Store {
    state: Mutex<StoreState>,
    changed: Condvar,
    /// Block payloads decoded by the archive, whole or in part, here and by its reads
    /// ([`Archive::blocks_decoded`]): kept here, where the background jobs can count theirs.
    decoded: std::sync::atomic::AtomicU64,
}

#[derive(Default)]
struct StoreState {
    /// Each block's decoded length, and its state.
    slots: HashMap<(usize, u64), (u64, BlockSlot)>,
    /// Decoded bytes of the blocks in `slots`.
    bytes: u64,
    /// Buffers to reuse: decoded blocks and frames.
    blocks: Vec<Vec<u8>>,
    frames: Vec<Vec<u8>>,
}

enum BlockSlot {
    /// No thread has started on it; its frame, read and checked, if it was read already.
    Queued(Option<(FrameHeader, Vec<u8>)>),
    /// A thread is decoding it.
    Running,
    /// Decoded (big-endian).
    Done(Vec<u8>),
    /// The background decoding failed: the reader reads the block the usual way.
    Failed,
}

/// What [`Ahead::take`] found for a block.
pub(super) enum Taken {
    /// The block, decoded (big-endian): give the buffer back with [`Ahead::give_back`].
    Decoded(Vec<u8>),
    /// Its frame, read and checked, still to decode.
    Frame(FrameHeader, Vec<u8>),
    /// Nothing.
    Nothing,
}

impl Store {
    fn lock(&self) -> MutexGuard<'_, StoreState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A background job: decodes the block at `key` if no reader has taken it, reading its
    /// frame first (with `read`: from `file`, and checked as [`Expect`] says) if it was not.
    fn decode(&self, key: (usize, u64), len: usize, read: Option<(Arc<std::fs::File>, Expect)>) {
        let (frame, spare, mut out) = {
            let mut st = self.lock();
            let Some((_, slot @ BlockSlot::Queued(_))) = st.slots.get_mut(&key) else {
                return;
            };
            let BlockSlot::Queued(frame) = std::mem::replace(slot, BlockSlot::Running) else {
                return;
            };
            let spare = st.frames.pop().unwrap_or_default();
            (frame, spare, st.blocks.pop().unwrap_or_default())
        };
        let frame = match (frame, read) {
            (Some(frame), _) => Some(frame),
            (None, Some((file, expect))) => {
                let mut buf = spare;
                expect.read(&file, &mut buf).map(|h| (h, buf))
            }
            (None, None) => None,
        };
        let ok = frame.as_ref().is_some_and(|(h, frame)| {
            out.try_reserve(len.saturating_sub(out.len())).is_ok() && {
                out.resize(len, 0);
                self.decoded
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                with_scratch(|scratch| {
                    decode_payload_into(
                        h,
                        &frame[FRAME_HEADER_LEN..],
                        &mut out,
                        &mut scratch.codec,
                        false,
                    )
                })
                .is_ok()
            }
        });
        let mut st = self.lock();
        if let Some((_, frame)) = frame {
            keep(&mut st.frames, frame);
        }
        if let Some((_, slot)) = st.slots.get_mut(&key) {
            *slot = if ok {
                BlockSlot::Done(out)
            } else {
                BlockSlot::Failed
            };
        }
        drop(st);
        self.changed.notify_all();
    }
}

/// What the frame of a block must be, for a pool thread that reads it: where it is and what
/// its header must say (as [`Archive::check_frame_header`] checks it).
struct Expect {
    entry: IndexEntry,
    stream: u32,
    block: u64,
    decoded: u64,
    esize: usize,
}

impl Expect {
    /// Reads the frame into `buf` (reused); its header if it agrees, `None` if it cannot be
    /// read or disagrees (the reader then reads it the usual way, and reports what is wrong).
    fn read(&self, file: &std::fs::File, buf: &mut Vec<u8>) -> Option<FrameHeader> {
        let n = usize::try_from(self.entry.frame_len()).ok()?;
        buf.try_reserve(n.saturating_sub(buf.len())).ok()?;
        buf.resize(n, 0);
        ReadAt::read_exact_at(file, buf, self.entry.offset).ok()?;
        let h = FrameHeader::decode(buf).ok()?;
        let e = &self.entry;
        (h.stream == self.stream
            && h.block == self.block
            && h.stored_len == e.stored_len
            && u64::from(h.decoded_len) == self.decoded
            && h.codec == e.codec
            && h.filter == e.filter
            && usize::from(h.esize) == self.esize)
            .then_some(h)
    }
}

/// Drops what no reader will take: the blocks of stream `s` before `first` (a sequential
/// reader of `s` is past them), then, if `n` more bytes would not fit in `max_bytes`, those of
/// the streams not in `recent` (readers that stopped) — but not the ones a thread is
/// decoding.
fn make_room(st: &mut StoreState, s: usize, first: u64, n: u64, max_bytes: u64, recent: &[usize]) {
    let idle = |slot: &BlockSlot| !matches!(slot, BlockSlot::Running);
    let before = st.slots.len();
    st.slots
        .retain(|&(ks, kb), (_, slot)| !(ks == s && kb < first && idle(slot)));
    if st.bytes + n > max_bytes {
        st.slots
            .retain(|&(ks, _), (_, slot)| recent.contains(&ks) || !idle(slot));
    }
    if st.slots.len() != before {
        st.bytes = st.slots.values().map(|(n, _)| n).sum();
    }
}

/// Keeps `buf` in `list` for reuse, if there is room.
fn keep(list: &mut Vec<Vec<u8>>, buf: Vec<u8>) {
    if list.len() < KEPT_BUFFERS && buf.capacity() > 0 {
        list.push(buf);
    }
}

impl Default for Ahead {
    fn default() -> Ahead {
        Ahead {
            pid: crate::parallel::process_id(),
            ends: Mutex::default(),
            store: Arc::default(),
        }
    }
}

impl Ahead {
    /// Whether this is the process that opened the archive (not a child of `fork()`).
    fn here(&self) -> bool {
        crate::parallel::process_id() == self.pid
    }

    /// Records a read of `len` bytes from `off` of stream `s`, and says whether it starts
    /// where the last read of `s` ended: part of a sequential scan, whose blocks will not be
    /// read again. Always false in a child of `fork()`.
    pub(super) fn follows(&self, s: usize, off: u64, len: u64) -> bool {
        self.near(s, off, len, 0)
    }

    /// As [`Ahead::follows`], for reads that several threads serve at once and that may
    /// arrive a little out of order (a kernel's readahead of a mounted file): the read is part
    /// of a scan if it starts within `slack` bytes of where the last read of `s` ended; the
    /// end remembered then never moves back.
    pub(super) fn near(&self, s: usize, off: u64, len: u64, slack: u64) -> bool {
        if !self.here() {
            return false;
        }
        let mut ends = self.ends.lock().unwrap_or_else(|p| p.into_inner());
        let at = ends.iter().position(|e| e.0 == s);
        let last = at.map(|i| ends.remove(i).1);
        let near = last.is_some_and(|end| end.abs_diff(off) <= slack);
        if at.is_none() && ends.len() == REMEMBERED {
            ends.remove(0);
        }
        let end = off.saturating_add(len);
        ends.push((
            s,
            if near {
                end.max(last.unwrap_or(0))
            } else {
                end
            },
        ));
        near
    }

    /// Where the last read of stream `s` ended (the furthest, for [`Ahead::near`]'s scans),
    /// if it is remembered.
    fn end_of(&self, s: usize) -> Option<u64> {
        let ends = self.ends.lock().unwrap_or_else(|p| p.into_inner());
        ends.iter().find(|e| e.0 == s).map(|e| e.1)
    }

    /// The streams read most recently.
    fn recent(&self) -> Vec<usize> {
        let ends = self.ends.lock().unwrap_or_else(|p| p.into_inner());
        ends.iter().map(|e| e.0).collect()
    }

    /// Takes block `b` of stream `s` if it is held here, decoded or as its frame; waits for
    /// it if a thread is decoding it.
    pub(super) fn take(&self, s: usize, b: u64) -> Taken {
        if !self.here() {
            return Taken::Nothing;
        }
        let store = &self.store;
        let mut st = store.lock();
        loop {
            match st.slots.get(&(s, b)) {
                None => return Taken::Nothing,
                Some((_, BlockSlot::Running)) => {
                    st = store.changed.wait(st).unwrap_or_else(|p| p.into_inner());
                }
                Some(_) => break,
            }
        }
        let Some((n, slot)) = st.slots.remove(&(s, b)) else {
            return Taken::Nothing;
        };
        st.bytes -= n;
        match slot {
            BlockSlot::Done(block) => Taken::Decoded(block),
            BlockSlot::Queued(Some((h, frame))) => Taken::Frame(h, frame),
            BlockSlot::Queued(None) | BlockSlot::Running | BlockSlot::Failed => Taken::Nothing,
        }
    }

    /// Holds block `b` of stream `s`, decoded (big-endian), for the next read: the block a
    /// sequential read ended inside.
    pub(super) fn hold(&self, s: usize, b: u64, block: Vec<u8>) {
        if !self.here() {
            return;
        }
        let mut st = self.store.lock();
        let n = block.len() as u64;
        if let Some((old, _)) = st.slots.insert((s, b), (n, BlockSlot::Done(block))) {
            st.bytes -= old;
        }
        st.bytes += n;
    }

    /// Counts a block payload decoded (whole or in part) by the archive.
    pub(super) fn count_decode(&self) {
        self.store
            .decoded
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Block payloads decoded so far ([`Ahead::count_decode`], and the background jobs').
    pub(super) fn decoded(&self) -> u64 {
        self.store
            .decoded
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Gives back a buffer [`Ahead::take`] returned, for reuse.
    pub(super) fn give_back(&self, block: Vec<u8>) {
        keep(&mut self.store.lock().blocks, block);
    }

    /// Gives back a frame buffer [`Ahead::take`] returned, for reuse.
    pub(super) fn give_back_frame(&self, frame: Vec<u8>) {
        keep(&mut self.store.lock().frames, frame);
    }
}

impl<R: ReadAt> Archive<R> {
    /// After a sequential read of stream `s` that ended at byte `end` and was `len` bytes
    /// long: reads the frames of the blocks from the one holding `end` on (those not cached
    /// or held already, twice as many as the read covered and at least two per thread, within
    /// [`AHEAD_BYTES`] and [`AHEAD_BLOCKS`]) and has the pool's threads decode them. Does
    /// nothing with one thread, for a remote archive (its reader fetches ahead on its own),
    /// or when a frame cannot be read or is damaged (the read of that block will say so).
    pub(super) fn decode_ahead(&self, s: usize, end: u64, len: u64) {
        let threads = self.threads() as u64;
        let st = &self.index.streams[s];
        let (id, bb) = (st.id, st.block_bytes);
        if threads < 2 || self.source.wants_prefetch() || st.shared.is_some() || end >= st.total {
            return;
        }
        let max_bytes = AHEAD_BYTES.max(2 * bb);
        // Two reads' worth (so that the pool's threads are still busy when the next read
        // comes), at least two blocks per thread.
        let want = len.saturating_mul(2).max(2 * threads * bb).min(max_bytes);
        let (first, last) = (end / bb, ((end + want - 1) / bb).min(st.blocks() - 1));
        let store = &self.ahead.store;
        let file = self.source.shared_file();
        let recent = self.ahead.recent();
        for b in first..=last {
            let e = *self.entry(s, b);
            let n = self.block_len(s, b);
            if e.is_constant() || e.is_lost() || self.cache.held_or_claimed((id, b)) {
                continue;
            }
            {
                let mut g = store.lock();
                if g.slots.contains_key(&(s, b)) {
                    continue;
                }
                make_room(&mut g, s, first, n, max_bytes, &recent);
                if g.bytes + n > max_bytes || g.slots.len() as u64 >= AHEAD_BLOCKS {
                    return;
                }
            }
            let (frame, read) = match &file {
                // A pool thread reads the frame.
                Some(file) => {
                    let expect = Expect {
                        entry: e,
                        stream: id,
                        block: b,
                        decoded: n,
                        esize: st.esize,
                    };
                    (None, Some((Arc::clone(file), expect)))
                }
                // This thread reads it.
                None => {
                    let mut frame = store.lock().frames.pop().unwrap_or_default();
                    let Ok(bytes) = self.read_frame(s, b, &mut frame) else {
                        return;
                    };
                    let Ok(h) = self.check_frame_header(s, b, bytes) else {
                        return;
                    };
                    (Some((h, frame)), None)
                }
            };
            {
                let mut g = store.lock();
                g.bytes += n;
                g.slots.insert((s, b), (n, BlockSlot::Queued(frame)));
            }
            let job_store = Arc::clone(store);
            if !crate::parallel::spawn(move || job_store.decode((s, b), n as usize, read)) {
                // No pool: the reader reads the block itself.
                return;
            }
        }
    }

    /// Block `b` of stream `s` from what [`Archive::decode_ahead`] holds, into `dst` (the whole
    /// block; with `native`, in native byte order); false if it holds nothing for it.
    pub(super) fn ahead_into(
        &self,
        s: usize,
        b: u64,
        dst: &mut [u8],
        native: bool,
        scratch: &mut BlockScratch,
    ) -> Result<bool> {
        let taken = self.ahead.take(s, b);
        if !matches!(taken, Taken::Nothing) {
            // (A pool thread may have read the frame: the file is checked before it is used.)
            self.source.check_unchanged()?;
        }
        match taken {
            Taken::Nothing => Ok(false),
            Taken::Decoded(block) => {
                if block.len() != dst.len() {
                    self.ahead.give_back(block);
                    return Err(self.shorter(s, b));
                }
                if native {
                    crate::codec::word::copy_be_to_native(&block, dst, self.index.streams[s].esize);
                } else {
                    dst.copy_from_slice(&block);
                }
                self.ahead.give_back(block);
                Ok(true)
            }
            Taken::Frame(h, frame) => {
                self.ahead.count_decode();
                let r = decode_payload_into(
                    &h,
                    &frame[FRAME_HEADER_LEN..],
                    dst,
                    &mut scratch.codec,
                    native,
                );
                self.ahead.give_back_frame(frame);
                r.map_err(|e| self.block_error(s, b, e.into()))?;
                Ok(true)
            }
        }
    }

    /// Block `b` of stream `s` from what [`Archive::decode_ahead`] holds, as a block to cache;
    /// `None` if it holds nothing for it.
    pub(super) fn ahead_block(
        &self,
        s: usize,
        b: u64,
        scratch: &mut BlockScratch,
    ) -> Result<Option<Block>> {
        let taken = self.ahead.take(s, b);
        if !matches!(taken, Taken::Nothing) {
            // (As in `ahead_into`.)
            self.source.check_unchanged()?;
        }
        match taken {
            Taken::Nothing => Ok(None),
            Taken::Decoded(block) => Ok(Some(Block::Bytes(Arc::new(block)))),
            Taken::Frame(h, frame) => {
                let mut out = self.zeroed(s, b, u64::from(h.decoded_len))?;
                self.ahead.count_decode();
                let r = decode_payload_into(
                    &h,
                    &frame[FRAME_HEADER_LEN..],
                    &mut out,
                    &mut scratch.codec,
                    false,
                );
                self.ahead.give_back_frame(frame);
                r.map_err(|e| self.block_error(s, b, e.into()))?;
                Ok(Some(Block::Bytes(Arc::new(out))))
            }
        }
    }
}

impl<R: ReadAt + 'static> Archive<R> {
    /// For a reader of the original's bytes ([`crate::OriginalReader`]), after it read `len`
    /// bytes from `off` of stream `s`, one of the `streams` streams the read took: if the read
    /// continues a scan of `s` (it starts within four times its length, or `in_flight` times,
    /// of where the last one ended: requests that several threads serve arrive out of order),
    /// has the
    /// pool's threads decode the blocks that follow into the cache, two per thread shared
    /// among the streams (at least one each), each claimed there ([`BlockCache::claim`]) so
    /// that no reader decodes it again meanwhile; a job that starts only once the scan has
    /// passed its block (a busy machine) does nothing. Nothing for a member of a shared stream,
    /// with one thread, or for a remote archive (its reader fetches ahead on its own).
    pub(crate) fn scan_ahead(
        self: &Arc<Self>,
        s: usize,
        (off, len): (u64, u64),
        streams: usize,
        in_flight: u64,
    ) {
        let st = &self.index.streams[s];
        let threads = self.threads() as u64;
        if len == 0 || st.shared.is_some() || threads < 2 || self.source.wants_prefetch() {
            return;
        }
        let bb = st.block_bytes;
        let slack = len.saturating_mul(in_flight.max(4));
        if !self.ahead.near(s, off, len, slack) {
            return;
        }
        // The block before those that reads of the scan still in flight may need: the scan
        // is done with it, so it goes first out of the cache (not the blocks decoded ahead,
        // which nobody has read yet).
        let behind = off.saturating_sub(slack) / bb;
        if behind > 0 {
            self.cache.demote((st.id, behind - 1));
        }
        let n = (2 * threads / streams.max(1) as u64).max(1);
        let next = (off + len - 1) / bb + 1;
        let end = (next + n).min(st.blocks());
        for b in next..end {
            let e = self.entry(s, b);
            if e.is_constant() || e.is_lost() || self.cache.held_or_claimed((st.id, b)) {
                continue;
            }
            let archive = Arc::clone(self);
            let job = move || {
                // A job that starts after the scan has passed its block (a busy machine) would
                // decode it for nobody, and push a block still to come out of the cache.
                if archive
                    .ahead
                    .end_of(s)
                    .is_some_and(|end| end >= (b + 1) * bb)
                {
                    return;
                }
                let key = (archive.index.streams[s].id, b);
                if let crate::read::cache::Claim::Mine(ticket) = archive.cache.claim_ahead(key) {
                    // A block that cannot be read is left to the reader, which says why.
                    if let Ok(block) = archive.load(s, b) {
                        ticket.done(block);
                    }
                }
            };
            if !crate::parallel::spawn(job) {
                return;
            }
        }
    }
}
