//! A read of a variable's bytes as a plan. [`Archive::plan_read`] decides, from the request
//! (the runs of bytes it wants), the index, the block cache and its [`CachePolicy`], how the
//! read is served: a [`ReadPlan`] (which blocks, from the cache or decoded, whole or in part,
//! grouped how, on how many threads). [`Archive::run_plan`] then carries it out. Every read of
//! a variable's bytes (each hyperslab read of [`Dataset`]) goes through here, so this file is
//! the read path from a request to its bytes, top to bottom; reading a block's frame from the
//! [`super::source::BlockSource`], checking it against the index and decoding it are below, in
//! `blocks.rs`.
//!
//! - A cold read of one value: [`Archive::runs_into`] → [`ReadPlan::Part`] →
//!   [`Archive::read_part`], which reads the block's frame (only as far as the value, for a
//!   large zstd frame), checks its header and decodes only the value's part of the block.
//! - A read of a whole variable: [`Archive::runs_into`] → [`ReadPlan::Span`] →
//!   [`Archive::read_span`]: the threads take the blocks from one queue, and each reads,
//!   decodes and copies its block straight into its part of the output.
//! - Many runs (a time series, a strided slab): [`ReadPlan::Scattered`] (`scattered.rs`).
//! - A sequential scan (each read continues the last): a [`ReadPlan::Span`] that caches
//!   nothing, while the next read's blocks are decoded ahead (`ahead.rs`).
//!
//! The reader of the original file's bytes (`crate::read::original`, under the mount and the
//! HTTP server) reads every stream's run of a byte range as whole blocks through the cache,
//! as [`ReadPlan::Windows`] does ([`Archive::fetch`]): a range of the original interleaves
//! records, so its runs are copied out of the blocks in the original's order, not planned
//! one variable at a time.

use super::*;
use crate::codec::PartDecoder;

/// Frames of at least this many bytes (header and payload) are decoded only as far as a
/// small read of a part of their block needs ([`Archive::read_part`]).
const STREAMED_MIN: u64 = 64 << 10;

/// How a read of a variable's bytes is served ([`Archive::plan_read`]).
#[derive(Clone, Debug)]
enum ReadPlan {
    /// The variable is a member of a shared stream (a small variable of a compact archive):
    /// the runs are copied out of its whole decoded data ([`Archive::member_bytes`], cached).
    Member,
    /// One run over more than one block, `off..off + len`: `threads` threads (the caller and
    /// the pool's helpers) take its blocks in order and decode each straight into its part of
    /// the output; what is cached of them is `retain`.
    Span {
        off: u64,
        len: u64,
        threads: usize,
        retain: Retain,
    },
    /// One run inside block `b`, which the cache holds: copied from `block`.
    Cached { b: u64, block: Block },
    /// One run inside block `b`, a first read of it that the cache policy does not keep: only
    /// that part of the block is decoded, and the block is not cached.
    Part { b: u64 },
    /// More than one run: cut at block boundaries and grouped by block, the blocks decoded on
    /// the threads ([`Archive::read_scattered`]).
    Scattered,
    /// One run, through the cache: its blocks fetched `window` at a time (cached, or read with
    /// one I/O per run of adjacent frames and decoded on the threads), then copied out.
    Windows { window: usize },
}

/// What a read of a span keeps of the blocks it decodes ([`Archive::span_block`]).
///
/// Derived per read ([`Archive::plan_read`]) from the archive's [`CachePolicy`] and the read
/// itself: `whole` is the policy's `whole_blocks` for a span that fits in half of the cache
/// and is not sequential; `partial` holds for such a span whatever the policy; `carry` for a
/// sequential one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Retain {
    /// Cache the blocks it reads part of.
    partial: bool,
    /// Cache the blocks it reads whole.
    whole: bool,
    /// Hold the last block, read in part, for the next read (a sequential reader's).
    carry: bool,
}

impl<R: ReadAt> Archive<R> {
    /// [`Dataset::read_runs`] (`native` false) and [`Dataset::read_runs_native`] (true): the
    /// runs `runs` (byte offset and length in the variable's data, ascending) of variable `v`
    /// into `out`, one after the other. Plans the read ([`Archive::plan_read`]) and runs the
    /// plan ([`Archive::run_plan`]); a read that continues the last one of `v` (a sequential
    /// scan) drops the block before it from the cache and has the next read's blocks decoded
    /// meanwhile ([`Archive::decode_ahead`]).
    pub(super) fn runs_into(
        &self,
        v: usize,
        runs: &[(u64, u64)],
        out: &mut [u8],
        native: bool,
    ) -> Result<()> {
        let sequential = match *runs {
            [(off, len)] if len > 0 && !self.is_member(v) => {
                self.ahead.follows(v, off, len).then_some((off, len))
            }
            _ => None,
        };
        if let Some((off, _)) = sequential {
            // The block before this read's: a sequential reader is done with it.
            let (id, bb) = (self.index.streams[v].id, self.index.streams[v].block_bytes);
            if off / bb > 0 {
                self.cache.remove((id, off / bb - 1));
            }
        }
        let plan = self.plan_read(v, runs, sequential.is_some());
        self.run_plan(v, plan, runs, out, native)?;
        if let Some((off, len)) = sequential {
            self.decode_ahead(v, off + len, len);
        }
        Ok(())
    }

    /// How to read the runs `runs` of variable `v` (`sequential`: the read continues the last
    /// one of `v`). In this order:
    ///
    /// 1. a member of a shared stream: [`ReadPlan::Member`];
    /// 2. one run over more than one block, when there is more than one thread, or the policy
    ///    caches no whole blocks, or the read is sequential: [`ReadPlan::Span`] (with one
    ///    thread and whole blocks cached, a [`ReadPlan::Windows`] reads the frames with one
    ///    I/O per run of adjacent frames and caches them all);
    /// 3. one run inside one block: [`ReadPlan::Cached`] if the cache holds the block, else
    ///    [`ReadPlan::Part`] if this is a first read of the block that the policy does not
    ///    cache ([`Archive::reads_in_part`]; not for a sequential read);
    /// 4. more than one run: [`ReadPlan::Scattered`];
    /// 5. otherwise [`ReadPlan::Windows`], of 8 blocks for a read of at most 8 blocks, else of
    ///    4 per thread.
    ///
    /// The cache is looked up (and, for step 3, told of the read: [`BlockCache::admit`]) but
    /// nothing is read or decoded. The machine's cores are looked up only for a read of more
    /// than one block.
    fn plan_read(&self, v: usize, runs: &[(u64, u64)], sequential: bool) -> ReadPlan {
        if self.is_member(v) {
            return ReadPlan::Member;
        }
        let (id, bb) = (self.index.streams[v].id, self.index.streams[v].block_bytes);
        let policy = self.policy.get();
        if let [(off, len)] = *runs {
            if len > 0 {
                let (first, last) = (off / bb, (off + len - 1) / bb);
                if last > first {
                    if self.threads() > 1 || !policy.whole_blocks || sequential {
                        let n = last - first + 1;
                        let fits = n * bb <= self.cache.stats().budget / 2;
                        let retain = Retain {
                            partial: fits && !sequential,
                            whole: fits && !sequential && policy.whole_blocks,
                            carry: sequential,
                        };
                        let threads = self.threads().min(usize::try_from(n).unwrap_or(usize::MAX));
                        return ReadPlan::Span {
                            off,
                            len,
                            threads,
                            retain,
                        };
                    }
                } else {
                    // One run inside one block (a small read, as nccopy's one record at a
                    // time): from the cache if it holds the block.
                    if let Some(block) = self.cache.get_held((id, first)) {
                        return ReadPlan::Cached { b: first, block };
                    }
                    if !sequential && self.reads_in_part(v, first, len, policy) {
                        return ReadPlan::Part { b: first };
                    }
                }
            }
        }
        if runs.len() > 1 {
            return ReadPlan::Scattered;
        }
        // (A read of a few blocks does not look up the machine's cores.)
        let blocks_read = match runs.first() {
            Some(&(off, len)) => (off + len).div_ceil(bb).saturating_sub(off / bb),
            None => 0,
        };
        let window = match blocks_read {
            0..=8 => 8,
            _ => (self.threads() * 4).max(8),
        };
        ReadPlan::Windows { window }
    }

    /// Whether a read of `len` bytes inside block `b` of stream `s`, which the cache does not
    /// hold, decodes only its part ([`ReadPlan::Part`]): the block is not constant or lost,
    /// the read is less than the block, and either the block is larger than the cache (which
    /// could not keep it), or the policy does not cache a first small read
    /// ([`CachePolicy::first_small_reads`]) and no such read of the block came recently
    /// ([`BlockCache::admit`], which remembers this one). A later small read of the block
    /// decodes it whole and caches it, so a block read once costs no whole decoded copy, and
    /// one read again and again is decoded once more.
    fn reads_in_part(&self, s: usize, b: u64, len: u64, policy: CachePolicy) -> bool {
        let (id, n) = (self.index.streams[s].id, self.block_len(s, b));
        let e = self.entry(s, b);
        if e.is_constant() || e.is_lost() || len >= n {
            return false;
        }
        // The cache remembers the blocks read in part, as those a scattered read passes over.
        !(n <= self.cache.stats().budget && (policy.first_small_reads || self.cache.admit((id, b))))
    }

    /// Carries out `plan` ([`Archive::plan_read`]'s for these `runs` of variable `v`): the
    /// runs' bytes into `out`, big-endian, or with `native` each element in native byte order.
    ///
    /// # Errors
    ///
    /// As [`Archive::read_block`], for the first damaged block the read needs.
    fn run_plan(
        &self,
        v: usize,
        plan: ReadPlan,
        runs: &[(u64, u64)],
        out: &mut [u8],
        native: bool,
    ) -> Result<()> {
        let esize = self.index.streams[v].esize;
        let bb = self.index.streams[v].block_bytes;
        match plan {
            ReadPlan::Member => {
                let data = self.member_bytes(v)?;
                let mut out_at = 0usize;
                for &(off, len) in runs {
                    let (off, len) = (off as usize, len as usize);
                    out[out_at..out_at + len].copy_from_slice(&data[off..off + len]);
                    out_at += len;
                }
                if native {
                    be_to_native(out, esize);
                }
                Ok(())
            }
            ReadPlan::Span {
                off,
                len,
                threads,
                retain,
            } => self.read_span(v, off, len, out, native, threads, retain),
            ReadPlan::Cached { b, block } => {
                let (off, len) = runs[0];
                let piece = &mut out[..len as usize];
                if !block.copy_to(off - b * bb, piece) {
                    return Err(self.shorter(v, b));
                }
                if native {
                    be_to_native(piece, esize);
                }
                Ok(())
            }
            ReadPlan::Part { b } => {
                let (off, len) = runs[0];
                let piece = &mut out[..len as usize];
                self.read_part(v, b, off - b * bb, piece)?;
                if native {
                    be_to_native(piece, esize);
                }
                Ok(())
            }
            ReadPlan::Scattered => {
                self.prefetch_runs(v, runs)?;
                self.read_scattered(v, runs, out, native)
            }
            ReadPlan::Windows { window } => {
                self.prefetch_runs(v, runs)?;
                self.read_windows(v, runs, out, native, window)
            }
        }
    }

    /// A remote archive fetches the frames of the blocks the runs `runs` of stream `s` touch
    /// with one request set ([`Archive::prefetch_blocks`]).
    fn prefetch_runs(&self, s: usize, runs: &[(u64, u64)]) -> Result<()> {
        let bb = self.index.streams[s].block_bytes;
        let planned = runs
            .iter()
            .filter(|r| r.1 > 0)
            .flat_map(|&(off, len)| off / bb..=(off + len - 1) / bb);
        let mut last = None;
        self.prefetch_blocks(
            planned
                .filter(|&b| last.replace(b) != Some(b))
                .map(|b| (s, b)),
        )
    }

    /// [`ReadPlan::Windows`]: the blocks of the runs `runs` of stream `s` are needed in
    /// ascending order; they are fetched through the cache ([`Archive::fetch`]) `window`
    /// distinct blocks at a time, so a large read decodes in parallel while memory stays
    /// bounded, and what falls in each window is copied out.
    fn read_windows(
        &self,
        s: usize,
        runs: &[(u64, u64)],
        out: &mut [u8],
        native: bool,
        window: usize,
    ) -> Result<()> {
        let (esize, bb) = (
            self.index.streams[s].esize,
            self.index.streams[s].block_bytes,
        );
        let mut out_at = 0usize;
        let mut run_i = 0usize;
        let mut run_done = 0u64; // bytes of runs[run_i] already copied
        while run_i < runs.len() {
            // Collect the next window of distinct blocks, starting where we are.
            let mut blocks: Vec<u64> = Vec::with_capacity(window);
            let (mut ri, mut rd) = (run_i, run_done);
            while ri < runs.len() && blocks.len() < window {
                let (off, len) = runs[ri];
                let first = (off + rd) / bb;
                let last = (off + len - 1) / bb;
                for b in first..=last {
                    if blocks.last() != Some(&b) {
                        if blocks.len() == window {
                            break;
                        }
                        blocks.push(b);
                    }
                }
                ri += 1;
                rd = 0;
            }
            let fetched = self.fetch(s, &blocks)?;
            let (first_b, last_b) = (blocks[0], blocks[blocks.len() - 1]);
            // Copy everything that falls in the fetched blocks.
            while run_i < runs.len() {
                let (off, len) = runs[run_i];
                let pos = off + run_done;
                let b = pos / bb;
                if b > last_b || b < first_b {
                    break;
                }
                let Ok(k) = blocks.binary_search(&b) else {
                    break;
                };
                let block = &fetched[k];
                let within = pos - b * bb;
                let take = (len - run_done).min(block.len().saturating_sub(within)) as usize;
                let piece = &mut out[out_at..out_at + take];
                if take == 0 || !block.copy_to(within, piece) {
                    return Err(self.shorter(s, b));
                }
                if native {
                    be_to_native(piece, esize);
                }
                out_at += take;
                run_done += take as u64;
                if run_done == len {
                    run_i += 1;
                    run_done = 0;
                }
            }
        }
        Ok(())
    }
    /// Reads the bytes `off..off + len` of stream `s` (more than one block) into `out`: the
    /// threads take the blocks one at a time, and read, decode and copy each block straight
    /// into its part of `out` (a whole block is decoded right there, with no copy; with
    /// `native`, its elements in native byte order), so decoding and copying overlap and memory
    /// holds one frame and one decompressed block per thread. What is cached is `keep`
    /// ([`Archive::plan_read`]: blocks go into the cache only when the whole span fits in half
    /// of it, as a larger read would only evict its own blocks, and everything else; whole
    /// blocks only if the policy says so; a sequential read, a scan which does not come back to
    /// its blocks, caches none and holds its last block, partly read, for the next read). The
    /// `threads` are the calling one and the pool's helpers.
    #[allow(clippy::too_many_arguments)]
    fn read_span(
        &self,
        s: usize,
        off: u64,
        len: u64,
        out: &mut [u8],
        native: bool,
        threads: usize,
        keep: Retain,
    ) -> Result<()> {
        let bb = self.index.streams[s].block_bytes;
        let (first, last) = (off / bb, (off + len - 1) / bb);
        self.prefetch_blocks((first..=last).map(|b| (s, b)))?;
        let mut parts: Vec<(u64, usize, &mut [u8])> =
            Vec::with_capacity((last - first + 1) as usize);
        let mut rest = out;
        for b in first..=last {
            let (from, to) = (off.max(b * bb), (off + len).min((b + 1) * bb));
            let (head, tail) = std::mem::take(&mut rest).split_at_mut((to - from) as usize);
            parts.push((b, (from - b * bb) as usize, head));
            rest = tail;
        }
        let helpers = threads.clamp(1, parts.len().max(1)) - 1;
        // The error reported is the first damaged block's, as a serial read finds.
        self.on_threads(
            s,
            parts,
            helpers,
            |p| p.0,
            |(b, within, dst), scratch| self.span_block(s, b, within, dst, keep, native, scratch),
        )
    }

    /// One block of [`Archive::read_span`]: the bytes from `within` of block `b` of stream `s`
    /// into `dst`, from the cache or decoded (a whole block straight into `dst`), kept as
    /// `keep` says.
    #[allow(clippy::too_many_arguments)]
    fn span_block(
        &self,
        s: usize,
        b: u64,
        within: usize,
        dst: &mut [u8],
        keep: Retain,
        native: bool,
        scratch: &mut BlockScratch,
    ) -> Result<()> {
        let (id, esize) = (self.index.streams[s].id, self.index.streams[s].esize);
        let whole = within == 0 && dst.len() as u64 == self.block_len(s, b);
        let block = match self.cache.get((id, b)) {
            Some(block) => block,
            None if whole => {
                if self.ahead_into(s, b, dst, native, scratch)? {
                    return Ok(());
                }
                self.decode_block_into(s, b, dst, scratch, native)?;
                if keep.whole {
                    if self.entry(s, b).is_constant() {
                        self.cache.insert((id, b), self.constant(s, b));
                        return Ok(());
                    }
                    let mut block = dst.to_vec();
                    if native {
                        // Back to the big-endian bytes the cache holds.
                        be_to_native(&mut block, esize);
                    }
                    self.cache.insert((id, b), Arc::new(block));
                }
                return Ok(());
            }
            None => {
                let block = self.load_with(s, b, scratch, None)?;
                if !block.copy_to(within as u64, dst) {
                    return Err(self.shorter(s, b));
                }
                if native {
                    be_to_native(dst, esize);
                }
                if keep.partial {
                    self.cache.insert((id, b), block);
                } else if keep.carry && within == 0 {
                    // The last block of a sequential read: the next read starts in it.
                    if let Block::Bytes(bytes) = block {
                        self.ahead.hold(s, b, Arc::unwrap_or_clone(bytes));
                    }
                }
                return Ok(());
            }
        };
        if !block.copy_to(within as u64, dst) {
            return Err(self.shorter(s, b));
        }
        if native {
            be_to_native(dst, esize);
        }
        Ok(())
    }

    /// [`ReadPlan::Part`]: the bytes `within..within + dst.len()` of block `b` of stream `s`
    /// (less than the block; not constant or lost) into `dst`, big-endian, decoding only that
    /// part and not caching the block, unless another thread cached it since the plan, or it
    /// was decoded ahead (then copied, and cached).
    fn read_part(&self, s: usize, b: u64, within: u64, dst: &mut [u8]) -> Result<()> {
        let id = self.index.streams[s].id;
        // (Counts the miss; another thread may have cached it since.)
        if let Some(block) = self.cache.get((id, b)) {
            if !block.copy_to(within, dst) {
                return Err(self.shorter(s, b));
            }
            return Ok(());
        }
        with_scratch(|scratch| {
            if let Some(block) = self.ahead_block(s, b, scratch)? {
                if !block.copy_to(within, dst) {
                    return Err(self.shorter(s, b));
                }
                self.cache.insert((id, b), block);
                return Ok(());
            }
            if self.read_part_streamed(s, b, within as usize, dst, scratch)? {
                return Ok(());
            }
            let frame = self.read_frame(s, b, &mut scratch.frame)?;
            let h = self.check_frame_header(s, b, frame)?;
            self.ahead.count_decode();
            decode_payload_part(
                &h,
                &frame[FRAME_HEADER_LEN..],
                within as usize,
                dst,
                &mut scratch.codec,
            )
            .map_err(|e| self.block_error(s, b, e.into()))?;
            Ok(())
        })
    }

    /// [`Archive::read_part`]'s decoding of a zstd frame of a local archive of at least
    /// [`STREAMED_MIN`] bytes whose filter undoes a part ([`PartDecoder`]): the payload is read
    /// into the buffer the block is decompressed into, and zstd stops once it has what the
    /// part needs, so a cold small read maps about one block of new memory, in one huge page
    /// where the system gives it. The rest of the frame is read for its CRC only. False
    /// (nothing written) for another frame, which the caller reads whole.
    fn read_part_streamed(
        &self,
        s: usize,
        b: u64,
        within: usize,
        dst: &mut [u8],
        scratch: &mut BlockScratch,
    ) -> Result<bool> {
        let e = *self.entry(s, b);
        if e.frame_len() < STREAMED_MIN
            || self.source.wants_prefetch()
            || !crate::codec::registry::decodes_part(e.codec, e.filter)
        {
            return Ok(false);
        }
        let mut head = [0u8; FRAME_HEADER_LEN];
        self.source
            .read_frames_at(&mut head, e.offset, self.index.len)?;
        let h = self.check_frame_header(s, b, &head)?;
        let err = |e: crate::codec::FrameError| self.block_error(s, b, e.into());
        let Some(mut d) =
            PartDecoder::new(&h, within, dst.len(), &mut scratch.codec).map_err(err)?
        else {
            return Ok(false);
        };
        let at = e.offset + FRAME_HEADER_LEN as u64;
        self.source
            .read_frames_at(d.payload_mut(), at, self.index.len)?;
        self.ahead.count_decode();
        d.finish(dst).map_err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sample` packed with default options into `dir`, opened.
    fn packed(dir: &Path, sample: &str) -> Archive {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let z = dir.join(format!("{sample}.nc3z"));
        let opts = crate::PackOptions::default().with_threads(1);
        crate::pack_file(&root.join("samples").join(sample), &z, &opts).unwrap();
        Archive::open(&z).unwrap()
    }

    /// The bytes of the runs of stream `s`, cut from its blocks as `read_block` decodes them
    /// (no cache, no plan).
    fn expected(a: &Archive, s: usize, runs: &[(u64, u64)]) -> Vec<u8> {
        let bb = a.block_bytes(s);
        let mut out = Vec::new();
        for &(off, len) in runs {
            for at in off..off + len {
                let block = a.read_block(s, at / bb).unwrap();
                out.push(block[(at % bb) as usize]);
            }
        }
        out
    }

    /// Plans and runs a read of `runs` of stream `s`, checks its bytes, and gives the plan.
    fn read(a: &Archive, s: usize, runs: &[(u64, u64)], sequential: bool) -> ReadPlan {
        let plan = a.plan_read(s, runs, sequential);
        let kind = format!("{plan:?}");
        let n: u64 = runs.iter().map(|r| r.1).sum();
        let mut out = vec![0u8; n as usize];
        a.run_plan(s, plan.clone(), runs, &mut out, false).unwrap();
        if n <= 64 {
            assert_eq!(out, expected(a, s, runs), "{kind}");
        } else {
            // (A whole variable: checked block by block.)
            let bb = a.block_bytes(s);
            let (off, _) = runs[0];
            for (i, chunk) in out.chunks(bb as usize).enumerate() {
                assert_eq!(off % bb, 0);
                let block = a.read_block(s, off / bb + i as u64).unwrap();
                assert_eq!(chunk, &block[..chunk.len()], "{kind}, block {i}");
            }
        }
        plan
    }

    #[test]
    fn a_small_read_is_planned_in_part_then_whole_then_from_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let a = packed(dir.path(), "gridded_sst.nc");
        let sst = a.header().var_id("sst").unwrap();
        let bb = a.block_bytes(sst);
        assert!(a.stream_len(sst) > 3 * bb, "the test needs blocks");
        let one = [(bb + 40, 4)];
        // (Planning a read of a block not cached tells the cache of the read: this plan is
        // the block's first read.)
        assert!(matches!(
            a.plan_read(sst, &one, false),
            ReadPlan::Part { b: 1 }
        ));
        assert_eq!(a.cache_stats().entries, 0);
        // The second read of the block decodes it whole, through the cache...
        assert!(matches!(
            read(&a, sst, &one, false),
            ReadPlan::Windows { window: 8 }
        ));
        assert_eq!(a.cache_stats().entries, 1);
        // ...and the third copies from it.
        assert!(matches!(
            read(&a, sst, &one, false),
            ReadPlan::Cached { b: 1, .. }
        ));
        // A cold small read of another block, run: its part only.
        let decoded = a.blocks_decoded();
        let other = [(2 * bb + 8, 8)];
        let plan = a.plan_read(sst, &other, false);
        assert!(matches!(plan, ReadPlan::Part { b: 2 }));
        let mut out = [0u8; 8];
        a.run_plan(sst, plan, &other, &mut out, false).unwrap();
        assert_eq!(a.blocks_decoded(), decoded + 1, "its part, once");
        assert_eq!(out[..], expected(&a, sst, &other)[..]);
        assert_eq!(a.cache_stats().entries, 1);
        // A policy that caches first small reads plans none in part.
        a.set_cache_first_small_reads(true);
        assert!(matches!(
            a.plan_read(sst, &[(3 * bb, 4)], false),
            ReadPlan::Windows { .. }
        ));
    }

    #[test]
    fn a_large_read_is_a_span_on_the_threads_or_windows_on_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = packed(dir.path(), "gridded_sst.nc");
        let sst = a.header().var_id("sst").unwrap();
        let all = [(0, a.stream_len(sst))];
        a.set_threads(2);
        let ReadPlan::Span {
            threads, retain, ..
        } = read(&a, sst, &all, false)
        else {
            panic!("a whole variable on two threads is a span");
        };
        assert_eq!(threads, 2);
        let fits = a.stream_len(sst).div_ceil(a.block_bytes(sst)) * a.block_bytes(sst)
            <= a.cache_stats().budget / 2;
        assert_eq!(
            retain,
            Retain {
                partial: fits,
                whole: fits,
                carry: false
            }
        );
        // A sequential read caches nothing, and carries its last block.
        let ReadPlan::Span { retain, .. } = a.plan_read(sst, &all, true) else {
            panic!("a sequential read is a span");
        };
        assert_eq!(
            retain,
            Retain {
                partial: false,
                whole: false,
                carry: true
            }
        );
        // One thread, whole blocks cached: windows (one I/O per run of adjacent frames).
        a.set_threads(1);
        a.clear_cache();
        assert!(matches!(
            read(&a, sst, &all, false),
            ReadPlan::Windows { window: 8 }
        ));
        // One thread, no whole blocks cached: a span on the one thread.
        a.set_cache_whole_blocks(false);
        let ReadPlan::Span {
            threads, retain, ..
        } = read(&a, sst, &all, false)
        else {
            panic!("no whole blocks cached: a span");
        };
        assert_eq!(threads, 1);
        assert!(!retain.whole);
    }

    #[test]
    fn runs_are_scattered_and_a_member_is_copied() {
        let dir = tempfile::tempdir().unwrap();
        let a = packed(dir.path(), "gridded_sst.nc");
        let sst = a.header().var_id("sst").unwrap();
        let bb = a.block_bytes(sst);
        let runs = [(4, 4), (bb + 4, 4), (2 * bb + 4, 8)];
        assert!(matches!(read(&a, sst, &runs, false), ReadPlan::Scattered));
        // A small file's variables share a stream.
        let small = packed(dir.path(), "classic_records.nc");
        let member = (0..small.header().vars().len())
            .find(|&v| small.is_member(v) && small.stream_len(v) >= 8)
            .expect("a member of a shared stream");
        let runs = [(0, 4), (4, 4)];
        let plan = small.plan_read(member, &runs, false);
        assert!(matches!(plan, ReadPlan::Member));
        let mut out = [0u8; 8];
        small
            .run_plan(member, plan, &runs, &mut out, false)
            .unwrap();
        assert_eq!(out[..], small.member_bytes(member).unwrap()[..8]);
    }
}
