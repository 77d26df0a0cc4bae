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

/// Why handing over blocks stopped.
enum Stop {
    /// A block could not be read.
    Read(Error),
    /// The caller asked to stop.
    Quit,
    /// A worker thread could not be started, or one panicked.
    Worker(WorkerError),
}

impl From<WorkerError> for Stop {
    fn from(e: WorkerError) -> Self {
        Stop::Worker(e)
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
        let Some(lv) = self.layout.vars.get(v) else {
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
        let bb = self.streams[v].block_bytes;
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
        let blocks: Vec<u64> = (first..=last).collect();
        // A remote archive fetches the frames with a few requests, in the order they are read.
        self.plan_reads(blocks.iter().map(|&b| (v, b)))?;
        // Buffers handed back by the caller, for reuse (u64 storage: aligned for any element
        // type). At most one per block in flight is ever made.
        let free: Mutex<Vec<Vec<u64>>> = Mutex::new(Vec::new());
        let decode = |&b: &u64| -> Result<Vec<u64>> {
            let reused = free.lock().unwrap_or_else(|p| p.into_inner()).pop();
            let mut buf = reused.unwrap_or_default();
            let n = self.block_len(v, b);
            let bytes = usize::try_from(n).map_err(|_| self.no_memory(v, b, n))?;
            let words = bytes.div_ceil(8);
            buf.try_reserve(words.saturating_sub(buf.len()))
                .map_err(|_| self.no_memory(v, b, n))?;
            // (A reused buffer has the length of a block already: nothing to clear.)
            buf.resize(words, 0);
            let dst = &mut bytemuck::cast_slice_mut::<u64, u8>(&mut buf)[..bytes];
            with_scratch(|scratch| self.block_native(v, b, dst, scratch))?;
            Ok(buf)
        };
        let consume = |i: usize, r: Result<Vec<u64>>| -> std::result::Result<(), Stop> {
            let buf = r.map_err(Stop::Read)?;
            let b = blocks[i];
            let (start, n) = (b * bb, self.block_len(v, b));
            let (from, to) = (off.max(start) - start, (off + len).min(start + n) - start);
            let block = bytemuck::cast_slice::<u64, u8>(&buf);
            let Some(piece) = block.get(from as usize..to as usize) else {
                return Err(Stop::Read(self.shorter(v, b)));
            };
            let go = put(piece);
            free.lock().unwrap_or_else(|p| p.into_inner()).push(buf);
            if go {
                Ok(())
            } else {
                Err(Stop::Quit)
            }
        };
        match crate::parallel::ordered_map(&blocks, threads, 2 * threads, decode, consume) {
            Ok(()) | Err(Stop::Quit) => Ok(()),
            Err(Stop::Read(e)) => Err(e),
            // No block was handed over (the threads start before any is): read the default way.
            Err(Stop::Worker(WorkerError::Spawn(_))) => default(put),
            Err(Stop::Worker(WorkerError::Panicked)) => Err(Error::Internal(format!(
                "{}: a block decoder panicked decoding {}",
                self.path.display(),
                self.stream_name(v)
            ))),
        }
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
        if let Some(block) = self.cache.get((self.streams[s].id, b)) {
            if !block.copy_to(0, dst) {
                return Err(self.shorter(s, b));
            }
            be_to_native(dst, self.streams[s].esize);
            return Ok(());
        }
        if self.ahead_into(s, b, dst, true, scratch)? {
            return Ok(());
        }
        self.decode_block_into(s, b, dst, scratch, true)
    }
}
