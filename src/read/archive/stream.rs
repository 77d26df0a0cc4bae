//! Large selections handed over block by block ([`Dataset::read_native_pieces`]): a selection
//! that is one run of bytes over several blocks (a whole variable, whole records) is decoded
//! by worker threads, each block in native byte order into a buffer of its own, and the
//! buffers go to the caller in order, trimmed to the selection, with no copy on the calling
//! thread. Memory: at most two decoded blocks per thread ahead of the caller, and their
//! frames.

use super::*;
use crate::parallel::WorkerError;
use std::sync::Mutex;

/// Fewest blocks a selection covers for it to be handed over block by block (fewer are read
/// the default way, into one buffer, without starting threads).
const MIN_BLOCKS: u64 = 3;

/// Blocks smaller than this are decoded and handed over in groups of consecutive blocks of
/// about this many bytes, their frames read at once where they lie one after another.
const GROUP_BYTES: u64 = 1 << 20;

/// Why handing over blocks stopped.
enum HandoverStop {
    /// A block could not be read.
    Read(Error),
    /// The caller asked to stop.
    Quit,
    /// A worker thread could not be started, or one panicked.
    Worker(WorkerError),
}

impl From<WorkerError> for HandoverStop {
    fn from(e: WorkerError) -> Self {
        HandoverStop::Worker(e)
    }
}

impl<R: ReadAt> Archive<R> {
    /// [`Dataset::read_native_pieces`]: block by block when the selection is one run of bytes
    /// over at least [`MIN_BLOCKS`] blocks of a stream of its own and the archive reads on
    /// more than one thread; otherwise the default way.
    pub(super) fn native_pieces(
        &self,
        v: usize,
        slab: &Hyperslab,
        piece_bytes: usize,
        put: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<()> {
        let default = |put: &mut dyn FnMut(&[u8]) -> bool| {
            crate::read::dataset::read_pieces(self, v, slab, piece_bytes, put)
        };
        let Some(lv) = self.index.layout.vars.get(v) else {
            return default(put);
        };
        if self.is_member(v) {
            return default(put);
        }
        let Ok(slab) = Hyperslab::new(&lv.shape, slab.start(), slab.count(), slab.stride()) else {
            return default(put);
        };
        // The selection's one run of bytes, if it is one.
        let mut run = None;
        let one = slab.for_each_run(&lv.shape, lv.esize as u64, |off, len| match run {
            None => {
                run = Some((off, len));
                Ok(())
            }
            Some(_) => Err(()),
        });
        let bb = self.index.streams[v].block_bytes;
        let Some((off, len)) = run.filter(|&(_, len)| one.is_ok() && len > 0) else {
            return default(put);
        };
        let (first, last) = (off / bb, (off + len - 1) / bb);
        if last - first + 1 < MIN_BLOCKS {
            return default(put);
        }
        // (The core count only now: a small read never looks it up.)
        let threads = self.threads();
        if threads < 2 {
            return default(put);
        }
        // Small blocks go in groups of about a megabyte, so that what a block costs apart
        // from its decoding (its turn in the queue, its read) is paid once a group.
        let per = (GROUP_BYTES / bb).max(1);
        let groups: Vec<(u64, u64)> = (first..=last)
            .step_by(per as usize)
            .map(|g| (g, (g + per - 1).min(last)))
            .collect();
        // A remote archive fetches the frames with a few requests, in the order they are read.
        self.prefetch_blocks((first..=last).map(|b| (v, b)))?;
        // Buffers handed back by the caller, for reuse (u64 storage: aligned for any element
        // type). At most one per group in flight is ever made.
        let free: Mutex<Vec<Vec<u64>>> = Mutex::new(Vec::new());
        let group_len = |g0: u64, g1: u64| -> u64 { (g0..=g1).map(|b| self.block_len(v, b)).sum() };
        let decode = |&(g0, g1): &(u64, u64)| -> Result<Vec<u64>> {
            let reused = free.lock().unwrap_or_else(|p| p.into_inner()).pop();
            let mut buf = reused.unwrap_or_default();
            let n = group_len(g0, g1);
            let bytes = usize::try_from(n).map_err(|_| self.no_memory(v, g0, n))?;
            let words = bytes.div_ceil(8);
            buf.try_reserve(words.saturating_sub(buf.len()))
                .map_err(|_| self.no_memory(v, g0, n))?;
            // (A reused buffer has the length of a group already, but maybe the last's:
            // every byte is written.)
            buf.resize(words, 0);
            let dst = &mut bytemuck::cast_slice_mut::<u64, u8>(&mut buf)[..bytes];
            with_scratch(|scratch| self.group_native(v, g0, g1, dst, scratch))?;
            Ok(buf)
        };
        let consume = |i: usize, r: Result<Vec<u64>>| -> std::result::Result<(), HandoverStop> {
            let buf = r.map_err(HandoverStop::Read)?;
            let (g0, g1) = groups[i];
            let start = g0 * bb;
            let n = group_len(g0, g1);
            let (from, to) = (off.max(start) - start, (off + len).min(start + n) - start);
            let group = bytemuck::cast_slice::<u64, u8>(&buf);
            let Some(piece) = group.get(from as usize..to as usize) else {
                return Err(HandoverStop::Read(self.shorter(v, g0)));
            };
            let go = put(piece);
            free.lock().unwrap_or_else(|p| p.into_inner()).push(buf);
            if go {
                Ok(())
            } else {
                Err(HandoverStop::Quit)
            }
        };
        match crate::parallel::ordered_map(&groups, threads, 2 * threads, decode, consume) {
            Ok(()) | Err(HandoverStop::Quit) => Ok(()),
            Err(HandoverStop::Read(e)) => Err(e),
            // No block was handed over (the threads start before any is): read the default way.
            Err(HandoverStop::Worker(WorkerError::Spawn(_))) => default(put),
            Err(HandoverStop::Worker(WorkerError::Panicked)) => Err(Error::Internal(format!(
                "{}: a block decoder panicked decoding {}",
                self.source.path().display(),
                self.stream_name(v)
            ))),
        }
    }

    /// Blocks `g0..=g1` of stream `s`, one after another, into `dst` in native byte order:
    /// in a local archive, when none is cached, constant or lost and their frames lie one
    /// after another, the frames are read with one read and decoded from there; otherwise
    /// block by block ([`Archive::block_native`]).
    fn group_native(
        &self,
        s: usize,
        g0: u64,
        g1: u64,
        dst: &mut [u8],
        scratch: &mut BlockScratch,
    ) -> Result<()> {
        let id = self.index.streams[s].id;
        let mut end = self.entry(s, g0).offset;
        // (A remote archive has the frames fetched ahead as planned, frame by frame.)
        let together = g1 > g0
            && !self.source.wants_prefetch()
            && (g0..=g1).all(|b| {
                let e = self.entry(s, b);
                let next = e.offset == end && !e.is_constant() && !e.is_lost();
                end = e.offset + e.frame_len();
                next && !self.cache.contains((id, b))
            });
        if !together {
            let mut at = 0;
            for b in g0..=g1 {
                let n = self.block_len(s, b) as usize;
                let Some(out) = dst.get_mut(at..at + n) else {
                    return Err(self.shorter(s, b));
                };
                self.block_native(s, b, out, scratch)?;
                at += n;
            }
            return Ok(());
        }
        let start = self.entry(s, g0).offset;
        let mut frames = std::mem::take(&mut scratch.frame);
        let r = (|| {
            let bytes = self.read_frames(s, g0, start, end - start, &mut frames)?;
            let (mut at, mut out_at) = (0usize, 0usize);
            for b in g0..=g1 {
                let (flen, n) = (
                    self.entry(s, b).frame_len() as usize,
                    self.block_len(s, b) as usize,
                );
                let Some(out) = dst.get_mut(out_at..out_at + n) else {
                    return Err(self.shorter(s, b));
                };
                let frame = &bytes[at..at + flen];
                self.decode_frame_into(s, b, frame, out, &mut scratch.codec, true)?;
                (at, out_at) = (at + flen, out_at + n);
            }
            Ok(())
        })();
        scratch.frame = frames;
        r
    }

    /// Block `b` of stream `s`, whole, into `dst` in native byte order: from the cache, from
    /// what was decoded ahead, or read and decoded (and not cached: a large selection would
    /// only evict its own blocks).
    fn block_native(
        &self,
        s: usize,
        b: u64,
        dst: &mut [u8],
        scratch: &mut BlockScratch,
    ) -> Result<()> {
        if let Some(block) = self.cache.get((self.index.streams[s].id, b)) {
            if !block.copy_to(0, dst) {
                return Err(self.shorter(s, b));
            }
            be_to_native(dst, self.index.streams[s].esize);
            return Ok(());
        }
        if self.ahead_into(s, b, dst, true, scratch)? {
            return Ok(());
        }
        self.decode_block_into(s, b, dst, scratch, true)
    }
}
