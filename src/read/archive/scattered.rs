//! Reads of many runs (a time series along the record dimension, a column, a strided slab):
//! the runs are cut at block boundaries and grouped by block, and the blocks are decoded on the
//! calling thread and the pool's helpers at once. A block the read takes only a little of,
//! in a read that decodes many blocks, is decoded into a buffer this thread reuses and not
//! cached the first time: caching it would cost a fresh allocation (its pages faulted in, as
//! long as decoding it) per block, for blocks a one-off time series never reads again. A block
//! read this way a second time ([`BlockCache::admit`]: a repeated series, the series of a
//! neighbouring point, the next tile of a tiled read) is cached.

use super::*;
use std::cell::Cell;

/// A block the read takes less than 1/`SPARSE_SHARE` of is read sparsely (not cached), when
/// the read decodes more than [`FEW_BLOCKS`] blocks.
const SPARSE_SHARE: u64 = 4;

/// A read that decodes at most this many blocks caches them all, as other reads do.
const FEW_BLOCKS: usize = 4;

/// The largest block buffer a thread keeps for the next read.
const KEPT_BLOCK_BYTES: usize = 4 << 20;

thread_local! {
    /// This thread's buffer for the blocks it reads sparsely, kept from read to read.
    static SPARSE_BLOCK: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// A piece of a read: bytes from `within` of block `b`, copied into `dst`.
struct Piece<'a> {
    b: u64,
    within: u64,
    dst: &'a mut [u8],
}

impl<R: ReadAt> Archive<R> {
    /// Reads the runs `runs` (byte offset and length, each run's bytes in order into `out`) of
    /// stream `s`, not a member of a shared stream. Cached blocks are copied from; the others
    /// are decoded by the calling thread and the pool's helpers, taking the blocks in ascending
    /// order from one queue, and cached, except those read sparsely (see the module's notes).
    /// The error reported is the lowest damaged block's, as a serial read finds.
    pub(super) fn read_scattered(
        &self,
        s: usize,
        runs: &[(u64, u64)],
        out: &mut [u8],
        native: bool,
    ) -> Result<()> {
        let (id, bb) = (self.index.streams[s].id, self.index.streams[s].block_bytes);
        let mut pieces: Vec<Piece> = Vec::with_capacity(runs.len());
        let mut rest = out;
        for &(off, len) in runs {
            let end = off + len;
            let mut at = off;
            while at < end {
                let b = at / bb;
                let to = end.min((b + 1) * bb);
                let (dst, tail) = std::mem::take(&mut rest).split_at_mut((to - at) as usize);
                pieces.push(Piece {
                    b,
                    within: at - b * bb,
                    dst,
                });
                rest = tail;
                at = to;
            }
        }
        // (Stable, and the pieces nearly always come in ascending order already.)
        pieces.sort_by_key(|p| p.b);
        let copy = |block: &Block, group: &mut [Piece]| {
            self.copy_pieces(s, group, native, &|w, dst| block.copy_to(w, dst))
        };
        // Cached and constant blocks first, on this thread; the others are left to decode.
        let mut todo: Vec<&mut [Piece]> = Vec::new();
        for group in pieces.chunk_by_mut(|x, y| x.b == y.b) {
            let b = group[0].b;
            if let Some(block) = self.cache.get((id, b)) {
                copy(&block, group)?;
            } else if self.entry(s, b).is_constant() && !self.entry(s, b).is_lost() {
                let block = self.constant(s, b);
                copy(&block, group)?;
                self.cache.insert((id, b), block);
            } else {
                todo.push(group);
            }
        }
        let many = todo.len() > FEW_BLOCKS;
        let helpers = self.threads().min(todo.len()).max(1) - 1;
        self.on_threads(
            s,
            todo,
            helpers,
            |group| group[0].b,
            |group, scratch| {
                let b = group[0].b;
                let taken: u64 = group.iter().map(|p| p.dst.len() as u64).sum();
                let sparse = many
                    && taken * SPARSE_SHARE < self.block_len(s, b)
                    && !self.cache.admit((id, b));
                if sparse {
                    self.sparse_block(s, b, group, native, scratch)
                } else {
                    self.load_with(s, b, scratch, None).and_then(|block| {
                        copy(&block, group)?;
                        self.cache.insert((id, b), block);
                        Ok(())
                    })
                }
            },
        )
    }

    /// Block `b` of stream `s` for the pieces `group`, not cached: taken from what
    /// [`Archive::decode_ahead`] holds, or decoded into this thread's reused buffer.
    fn sparse_block(
        &self,
        s: usize,
        b: u64,
        group: &mut [Piece],
        native: bool,
        scratch: &mut BlockScratch,
    ) -> Result<()> {
        self.refuse_lost(s, b)?;
        if let Some(block) = self.ahead_block(s, b, scratch)? {
            return self.copy_pieces(s, group, native, &|w, dst| block.copy_to(w, dst));
        }
        let len = self.block_len(s, b);
        let mut buf = SPARSE_BLOCK.try_with(Cell::take).unwrap_or_default();
        let n = usize::try_from(len).map_err(|_| self.no_memory(s, b, len))?;
        buf.try_reserve(n.saturating_sub(buf.len()))
            .map_err(|_| self.no_memory(s, b, len))?;
        // (Only the first use zeroes: the decoder overwrites every byte.)
        buf.resize(n, 0);
        let r = self.decode_block_into(s, b, &mut buf, scratch, false);
        let r = r.and_then(|()| {
            self.copy_pieces(s, group, native, &|w, dst| {
                let from = buf.get(w as usize..).and_then(|t| t.get(..dst.len()));
                from.map(|from| dst.copy_from_slice(from)).is_some()
            })
        });
        if buf.capacity() <= KEPT_BLOCK_BYTES {
            let _ = SPARSE_BLOCK.try_with(|c| c.set(buf));
        }
        r
    }

    /// Copies the pieces `group` of stream `s` out of a block with `from` (which copies the
    /// bytes from an offset into a buffer, false if the block is shorter); with `native`, in
    /// native byte order.
    fn copy_pieces(
        &self,
        s: usize,
        group: &mut [Piece],
        native: bool,
        from: &dyn Fn(u64, &mut [u8]) -> bool,
    ) -> Result<()> {
        for p in group {
            if !from(p.within, p.dst) {
                return Err(self.shorter(s, p.b));
            }
            if native {
                be_to_native(p.dst, self.index.streams[s].esize);
            }
        }
        Ok(())
    }
}
