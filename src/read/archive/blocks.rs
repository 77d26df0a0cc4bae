//! Reading blocks: the spans of a stream, a block's frame read, checked and decoded (into the
//! caller's buffer or the cache), the shared streams' members, and the runs of a variable.

use super::*;
use crate::codec::PartDecoder;
use crate::format::Codec;
use crate::read::cache::{Claim, Ticket, Waiter};

/// Frames of at least this many bytes (header and payload) are decoded only as far as a
/// small read of a part of their block needs ([`Archive::read_part`]).
const STREAMED_MIN: u64 = 64 << 10;

impl<R: ReadAt> Archive<R> {
    /// [`BlockError::Lost`] if the index marks block `b` of stream `s` lost.
    pub(super) fn refuse_lost(&self, s: usize, b: u64) -> Result<()> {
        if self.entry(s, b).is_lost() {
            return Err(self.block_error(s, b, BlockError::Lost));
        }
        Ok(())
    }

    pub(super) fn block_error(&self, s: usize, b: u64, source: BlockError) -> Error {
        if let BlockError::Frame(FrameError::NoMemory { len }) = source {
            return self.no_memory(s, b, len);
        }
        Error::Block {
            path: self.source.path.clone(),
            var: self.index.stream_name(s),
            block: b,
            offset: Some(self.entry(s, b))
                .filter(|e| !e.is_constant())
                .map_or(0, |e| e.offset),
            source,
        }
    }

    /// [`Error::NoMemory`] for `len` bytes needed for block `b` of stream `s`.
    pub(super) fn no_memory(&self, s: usize, b: u64, len: u64) -> Error {
        Error::NoMemory {
            path: self.source.path.clone(),
            var: self.stream_name(s),
            block: b,
            len,
        }
    }

    /// A buffer of `len` zero bytes for block `b` of stream `s`, allocated fallibly: the length
    /// comes from the archive, and the machine may not have it ([`Error::NoMemory`]).
    pub(super) fn zeroed(&self, s: usize, b: u64, len: u64) -> Result<Vec<u8>> {
        let mut v = Vec::new();
        let n = usize::try_from(len).map_err(|_| self.no_memory(s, b, len))?;
        v.try_reserve_exact(n)
            .map_err(|_| self.no_memory(s, b, len))?;
        crate::codec::prefault(&mut v, n);
        v.resize(n, 0);
        Ok(v)
    }

    /// Reads the bytes `off..off + len` of stream `s` (more than one block) into `out`: the
    /// threads take the blocks one at a time, and read, decode and copy each block straight
    /// into its part of `out` (a whole block is decoded right there, with no copy; with
    /// `native`, its elements in native byte order), so decoding and copying overlap and memory
    /// holds one frame and one decompressed block per thread. Blocks go into the cache only when
    /// the whole span fits in half of it (a larger read would only evict its own blocks, and
    /// everything else), and whole blocks only if [`Archive::caches_whole_blocks`]; a
    /// `sequential` read (one that continues the last read of `s`: a scan, which does not come
    /// back to its blocks) caches none, and holds its last block, partly read, for the next
    /// read ([`Archive::decode_ahead`]). The threads are the calling one and the pool's helpers.
    pub(super) fn read_span(
        &self,
        s: usize,
        off: u64,
        len: u64,
        out: &mut [u8],
        native: bool,
        sequential: bool,
    ) -> Result<()> {
        let bb = self.index.streams[s].block_bytes;
        let (first, last) = (off / bb, (off + len - 1) / bb);
        self.plan_reads((first..=last).map(|b| (s, b)))?;
        let mut parts: Vec<(u64, usize, &mut [u8])> =
            Vec::with_capacity((last - first + 1) as usize);
        let mut rest = out;
        for b in first..=last {
            let (from, to) = (off.max(b * bb), (off + len).min((b + 1) * bb));
            let (head, tail) = std::mem::take(&mut rest).split_at_mut((to - from) as usize);
            parts.push((b, (from - b * bb) as usize, head));
            rest = tail;
        }
        let fits = (last - first + 1) * bb <= self.cache.stats().budget / 2;
        let keep = Retain {
            partial: fits && !sequential,
            whole: fits && !sequential && self.caches_whole_blocks(),
            carry: sequential,
        };
        // (A one-block read does not look up the machine's cores.)
        let helpers = match parts.len() {
            0 | 1 => 0,
            n => self.threads().min(n) - 1,
        };
        // The error reported is the first damaged block's, as a serial read finds.
        self.on_threads(
            s,
            parts,
            helpers,
            |p| p.0,
            |(b, within, dst), scratch| self.span_block(s, b, within, dst, keep, native, scratch),
        )
    }

    /// Runs `step` on each of `items` (one block's work each, of stream `s`, in ascending
    /// block order; `block` says which) on the calling thread and `helpers` of the pool, each
    /// with its thread's scratch: the threads take the items in order from one queue (so a
    /// thread slowed down by other work does not hold up the rest); after an error no thread
    /// takes another, and the error of the lowest block is the one returned (the items before
    /// it were all taken, so it is the first damaged block, as a serial read finds).
    ///
    /// # Errors
    ///
    /// The first failing block's error, or [`Error::Internal`] when a thread panicked.
    pub(super) fn on_threads<T: Send>(
        &self,
        s: usize,
        items: Vec<T>,
        helpers: usize,
        block: impl Fn(&T) -> u64 + Sync,
        step: impl Fn(T, &mut BlockScratch) -> Result<()> + Sync,
    ) -> Result<()> {
        let queue = std::sync::Mutex::new(items.into_iter());
        let failed = std::sync::atomic::AtomicBool::new(false);
        let first_err: std::sync::Mutex<Option<(u64, Error)>> = std::sync::Mutex::new(None);
        let work = || {
            with_scratch(|scratch| loop {
                if failed.load(std::sync::atomic::Ordering::Relaxed) {
                    return;
                }
                // (A poisoned lock still holds a valid iterator.)
                let next = queue.lock().unwrap_or_else(|p| p.into_inner()).next();
                let Some(item) = next else {
                    return;
                };
                let b = block(&item);
                if let Err(e) = step(item, scratch) {
                    failed.store(true, std::sync::atomic::Ordering::Relaxed);
                    let mut first = first_err.lock().unwrap_or_else(|p| p.into_inner());
                    if first.as_ref().is_none_or(|(fb, _)| b < *fb) {
                        *first = Some((b, e));
                    }
                    return;
                }
            })
        };
        if !crate::parallel::with_helpers(helpers, &work) {
            return Err(Error::Internal(format!(
                "{}: a block decoder panicked decoding {}",
                self.source.path().display(),
                self.stream_name(s)
            )));
        }
        let first = first_err.into_inner().unwrap_or_else(|p| p.into_inner());
        first.map_or(Ok(()), |(_, e)| Err(e))
    }

    /// One block of [`Archive::read_span`]: the bytes from `within` of block `b` of stream `s`
    /// into `dst`, from the cache or decoded (a whole block straight into `dst`), kept as
    /// `keep` says.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn span_block(
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

    /// Reads, checks and decodes block `b` of stream `s` (stream ids as in
    /// [`Archive::stream_count`]), bypassing the cache.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-read_block", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// let temp = a.header().var_id("temp").unwrap();
    /// let block = a.read_block(temp, 0)?;
    /// assert_eq!(block.len() as u64, a.stream_len(temp));
    /// let original = std::fs::read("samples/obs_points.nc")?;
    /// let begin = a.header().var(temp).begin() as usize;
    /// assert_eq!(block[..4], original[begin..begin + 4]); // record 0's big-endian value
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Archive::check_block`], a payload that does not decode to the block's length, and
    /// [`Error::NoMemory`] when the block (a constant one too: it is built here) or its frame
    /// does not fit in memory.
    pub fn read_block(&self, s: usize, b: u64) -> Result<Vec<u8>> {
        match self.load(s, b)? {
            Block::Bytes(block) => Ok(Arc::unwrap_or_clone(block)),
            Block::Constant { .. } => self.constant_bytes(s, b),
        }
    }

    /// Block `b` of stream `s` as [`Archive::read_block`] reads it, bypassing the cache, but a
    /// constant block as its element (not built).
    pub(crate) fn load(&self, s: usize, b: u64) -> Result<Block> {
        with_scratch(|scratch| self.load_with(s, b, scratch, None))
    }

    /// [`Archive::load`], a block that needs decoding decoded into `reuse` (a buffer of an
    /// earlier block, handed back: its bytes are overwritten, and it is not cleared first)
    /// instead of a new zeroed buffer: unpacking a file reuses a few buffers for all its
    /// blocks.
    pub(crate) fn load_reusing(&self, s: usize, b: u64, reuse: Option<Vec<u8>>) -> Result<Block> {
        with_scratch(|scratch| self.load_with(s, b, scratch, reuse))
    }

    /// [`Archive::load`] with this thread's reused buffers: the frame is read into
    /// `scratch.frame`, and only the decoded block is allocated.
    pub(super) fn load_with(
        &self,
        s: usize,
        b: u64,
        scratch: &mut BlockScratch,
        reuse: Option<Vec<u8>>,
    ) -> Result<Block> {
        self.refuse_lost(s, b)?;
        let e = *self.entry(s, b);
        if e.is_constant() {
            return Ok(self.constant(s, b));
        }
        if let Some(block) = self.ahead_block(s, b, scratch)? {
            return Ok(block);
        }
        let frame = self.read_frame(s, b, &mut scratch.frame)?;
        Ok(Block::Bytes(Arc::new(self.decode_frame_reusing(
            s,
            b,
            frame,
            &mut scratch.codec,
            reuse,
        )?)))
    }

    /// Reads the frame of block `b` of stream `s` (not constant) into `buf`, reused: grown
    /// fallibly to the frame's length ([`Error::NoMemory`]); returns the frame's bytes.
    pub(super) fn read_frame<'a>(
        &self,
        s: usize,
        b: u64,
        buf: &'a mut Vec<u8>,
    ) -> Result<&'a [u8]> {
        let e = *self.entry(s, b);
        self.read_frames(s, b, e.offset, e.frame_len(), buf)
    }

    /// The `len` bytes at `offset` (frames, the first of them block `b` of stream `s`'s,
    /// which errors name) read into `buf`, allocated fallibly: the length comes from the
    /// index.
    pub(super) fn read_frames<'a>(
        &self,
        s: usize,
        b: u64,
        offset: u64,
        len: u64,
        buf: &'a mut Vec<u8>,
    ) -> Result<&'a [u8]> {
        let n = usize::try_from(len).map_err(|_| self.no_memory(s, b, len))?;
        buf.try_reserve(n.saturating_sub(buf.len()))
            .map_err(|_| self.no_memory(s, b, len))?;
        if buf.len() < n {
            crate::codec::prefault(buf, n);
        }
        buf.resize(n, 0);
        self.source.read_frames_at(buf, offset, self.index.len)?;
        Ok(buf)
    }

    /// [`Error::Internal`]: block `b` of stream `s` is shorter than a read of it needs.
    pub(super) fn shorter(&self, s: usize, b: u64) -> Error {
        Error::Internal(format!(
            "block {b} of {} is shorter than the layout says",
            self.stream_name(s)
        ))
    }

    /// [`Archive::read_block`] into `out` (exactly the block's length), with the same checks,
    /// reusing `scratch`'s buffers; with `native`, elements in native byte order.
    pub(super) fn decode_block_into(
        &self,
        s: usize,
        b: u64,
        out: &mut [u8],
        scratch: &mut BlockScratch,
        native: bool,
    ) -> Result<()> {
        let e = *self.entry(s, b);
        if e.is_lost() {
            return Err(self.block_error(s, b, BlockError::Lost));
        }
        let esize = self.index.streams[s].esize;
        if e.is_constant() {
            let mut value = e.constant_value(esize.clamp(1, 8));
            if native {
                be_to_native(&mut value, esize);
            }
            if value.is_empty() || !out.len().is_multiple_of(value.len()) {
                return Err(Error::Internal(format!(
                    "block {b} of {} is not a whole number of elements",
                    self.stream_name(s)
                )));
            }
            for c in out.chunks_exact_mut(value.len()) {
                c.copy_from_slice(&value);
            }
            return Ok(());
        }
        let frame = self.read_frame(s, b, &mut scratch.frame)?;
        self.decode_frame_into(s, b, frame, out, &mut scratch.codec, native)
    }

    /// Block `b` of stream `s` from its `frame` (header checked) into `out`, as
    /// [`Archive::decode_block_into`] decodes it.
    pub(super) fn decode_frame_into(
        &self,
        s: usize,
        b: u64,
        frame: &[u8],
        out: &mut [u8],
        codec: &mut crate::codec::DecodeScratch,
        native: bool,
    ) -> Result<()> {
        let h = self.check_frame_header(s, b, frame)?;
        self.ahead.count_decode();
        decode_payload_into(&h, &frame[FRAME_HEADER_LEN..], out, codec, native)
            .map_err(|e| self.block_error(s, b, e.into()))
    }

    /// A read of the bytes `within..within + dst.len()` of block `b` of stream `s`, less than
    /// the block: when the block is neither cached nor decoded ahead, not constant or lost,
    /// and no such read of it came recently ([`crate::read::cache::BlockCache::admit`]; or the
    /// cache could not keep it anyway; [`Archive::set_cache_first_small_reads`] off), decodes
    /// only that part, big-endian, into `dst` without caching the block, and returns true. A later small read of the block decodes it whole
    /// and caches it, so a block read once costs no whole decoded copy, and one read again and
    /// again is decoded once more. False (nothing read) when it is not such a read.
    pub(super) fn read_part(&self, s: usize, b: u64, within: u64, dst: &mut [u8]) -> Result<bool> {
        let (id, n) = (self.index.streams[s].id, self.block_len(s, b));
        let e = *self.entry(s, b);
        if e.is_constant() || e.is_lost() || dst.len() as u64 >= n {
            return Ok(false);
        }
        // The cache remembers the blocks read in part, as those a scattered read passes over.
        if n <= self.cache.stats().budget
            && (self.caches_first_small_reads() || self.cache.admit((id, b)))
        {
            return Ok(false);
        }
        // (Counts the miss; another thread may have cached it since.)
        if let Some(block) = self.cache.get((id, b)) {
            if !block.copy_to(within, dst) {
                return Err(self.shorter(s, b));
            }
            return Ok(true);
        }
        with_scratch(|scratch| {
            if let Some(block) = self.ahead_block(s, b, scratch)? {
                if !block.copy_to(within, dst) {
                    return Err(self.shorter(s, b));
                }
                self.cache.insert((id, b), block);
                return Ok(true);
            }
            if self.read_part_streamed(s, b, within as usize, dst, scratch)? {
                return Ok(true);
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
            Ok(true)
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
        if !Codec::decodes_part(e.codec)
            || e.frame_len() < STREAMED_MIN
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

    /// Tells the reader which frames the blocks `blocks` (as (stream, block)) will be read from,
    /// in the order they will be read, leaving out blocks that are cached or need no frame: a
    /// remote reader fetches them with a few coalesced requests instead of one per block.
    pub(crate) fn plan_reads(&self, blocks: impl Iterator<Item = (usize, u64)>) -> Result<()> {
        if !self.source.wants_prefetch() {
            return Ok(());
        }
        let ranges: Vec<(u64, u64)> = blocks
            .filter(|&(s, b)| !self.cache.contains((self.index.streams[s].id, b)))
            .map(|(s, b)| *self.entry(s, b))
            .filter(|e| !e.is_constant() && !e.is_lost())
            .map(|e| (e.offset, e.frame_len()))
            .collect();
        if ranges.len() < 2 {
            return Ok(());
        }
        self.source.prefetch(&ranges)
    }

    /// Decoded length of block `b` of stream `s`, as the layout says.
    pub(super) fn block_len(&self, s: usize, b: u64) -> u64 {
        self.index.block_len(s, b)
    }

    /// A constant block, from its index entry alone ([`ArchiveIndex::constant`]).
    pub(super) fn constant(&self, s: usize, b: u64) -> Block {
        self.index.constant(s, b)
    }

    /// A constant block built whole, allocated fallibly.
    pub(super) fn constant_bytes(&self, s: usize, b: u64) -> Result<Vec<u8>> {
        let block = self.constant(s, b);
        let mut out = self.zeroed(s, b, block.len())?;
        if !block.copy_to(0, &mut out) {
            return Err(self.shorter(s, b));
        }
        Ok(out)
    }

    /// Checks a frame header against the index and the layout.
    pub(super) fn check_frame_header(&self, s: usize, b: u64, frame: &[u8]) -> Result<FrameHeader> {
        let st = &self.index.streams[s];
        let e = self.entry(s, b);
        let err = |e: BlockError| self.block_error(s, b, e);
        let expect_len = self.block_len(s, b);
        let h = FrameHeader::decode(frame).map_err(|e| err(e.into()))?;
        if h.stream != st.id
            || h.block != b
            || h.stored_len != e.stored_len
            || u64::from(h.decoded_len) != expect_len
            || h.codec != e.codec
            || h.filter != e.filter
        {
            return Err(err(BlockError::Mismatch {
                stream: h.stream,
                block: h.block,
                stored: h.stored_len,
                decoded: h.decoded_len,
                expect_stream: st.id,
                expect_block: b,
                expect_stored: e.stored_len,
                expect_decoded: expect_len,
            }));
        }
        if usize::from(h.esize) != st.esize {
            return Err(err(BlockError::ElementSize {
                frame: h.esize,
                stream: st.esize,
            }));
        }
        Ok(h)
    }

    /// Checks and decodes the frame bytes of block `b` of stream `s`.
    /// The output is allocated fallibly ([`Error::NoMemory`]), and decoded into in place.
    pub(super) fn decode_frame(
        &self,
        s: usize,
        b: u64,
        frame: &[u8],
        scratch: &mut DecodeScratch,
    ) -> Result<Vec<u8>> {
        self.decode_frame_reusing(s, b, frame, scratch, None)
    }

    /// [`Archive::decode_frame`] into `reuse` when given (its bytes overwritten: every byte of
    /// a block is decoded), grown fallibly to the block's length when shorter.
    fn decode_frame_reusing(
        &self,
        s: usize,
        b: u64,
        frame: &[u8],
        scratch: &mut DecodeScratch,
        reuse: Option<Vec<u8>>,
    ) -> Result<Vec<u8>> {
        let h = self.check_frame_header(s, b, frame)?;
        let n = u64::from(h.decoded_len);
        let mut out = match reuse {
            Some(mut v) => {
                let len = usize::try_from(n).map_err(|_| self.no_memory(s, b, n))?;
                v.truncate(len);
                v.try_reserve_exact(len - v.len())
                    .map_err(|_| self.no_memory(s, b, n))?;
                v.resize(len, 0);
                v
            }
            None => self.zeroed(s, b, n)?,
        };
        self.ahead.count_decode();
        decode_payload_into(&h, &frame[FRAME_HEADER_LEN..], &mut out, scratch, false)
            .map_err(|e| self.block_error(s, b, e.into()))?;
        Ok(out)
    }

    /// Decoded block `b` of stream `s`, from the cache or decoded (and then cached; a constant
    /// block is cached as its element, and built for the caller).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-block", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// let temp = a.header().var_id("temp").unwrap();
    /// let block = a.block(temp, 0)?;
    /// assert_eq!(*block, a.read_block(temp, 0)?);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Archive::read_block`].
    pub fn block(&self, s: usize, b: u64) -> Result<Arc<Vec<u8>>> {
        let mut got = self.fetch(s, &[b])?;
        match got.pop() {
            Some(Block::Bytes(block)) => Ok(block),
            Some(Block::Constant { .. }) => Ok(Arc::new(self.constant_bytes(s, b)?)),
            None => Err(Error::Internal(format!(
                "block {b} of {} was not fetched",
                self.stream_name(s)
            ))),
        }
    }

    /// How many block payloads this archive has decoded since it was opened, whole or in part,
    /// by every kind of read (its own threads' decoding ahead included; constant blocks, which
    /// need no decoding, and the header are not counted): what a test or a benchmark compares
    /// with the blocks a read needs, to see that each is decoded once.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-blocks_decoded", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// let temp = a.header().var_id("temp").unwrap();
    /// assert_eq!(a.blocks_decoded(), 0);
    /// a.block(temp, 0)?;
    /// a.block(temp, 0)?; // from the cache
    /// assert_eq!(a.blocks_decoded(), 1);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn blocks_decoded(&self) -> u64 {
        self.ahead.decoded()
    }

    /// The decoded blocks `blocks` (ascending) of stream `s` (not a member of a shared
    /// stream), through the cache, as [`Archive::fetch`] gives them: for readers outside this
    /// module that copy bytes out of whole blocks (the original file's bytes).
    pub(crate) fn cached_blocks(&self, s: usize, blocks: &[u64]) -> Result<Vec<Block>> {
        self.fetch(s, blocks)
    }

    /// Marks block `b` of stream `s` most recently used in the cache, if it is held there:
    /// for a reader that will come back to it first (the block a sequential read ended in).
    pub(crate) fn keep_recent(&self, s: usize, b: u64) {
        self.cache.touch((self.index.streams[s].id, b));
    }

    /// Fetches the blocks `blocks` (ascending) of stream `s`: cached ones from the cache, the
    /// others read with one I/O per run of adjacent frames and decoded on all threads; constant
    /// blocks as their element, not built.
    pub(super) fn fetch(&self, s: usize, blocks: &[u64]) -> Result<Vec<Block>> {
        let id = self.index.streams[s].id;
        // The blocks cached; those another thread is decoding, to wait for once this one has
        // decoded its own (tickets[i]: block i is this thread's to decode, and to hand over).
        let mut got: Vec<Option<Block>> = vec![None; blocks.len()];
        let mut tickets: Vec<Option<Ticket<'_>>> = Vec::with_capacity(blocks.len());
        let mut theirs: Vec<(usize, Waiter)> = Vec::new();
        for (i, &b) in blocks.iter().enumerate() {
            tickets.push(match self.cache.claim((id, b)) {
                Claim::Hit(block) => {
                    got[i] = Some(block);
                    None
                }
                Claim::Mine(ticket) => Some(ticket),
                Claim::Theirs(waiter) => {
                    theirs.push((i, waiter));
                    None
                }
            });
        }
        let mut put = |i: usize, block: &Block, got: &mut Vec<Option<Block>>| {
            if let Some(t) = tickets[i].take() {
                t.done(block.clone());
            }
            got[i] = Some(block.clone());
        };
        let mine = |i: usize, got: &Vec<Option<Block>>| {
            got[i].is_none() && !theirs.iter().any(|w| w.0 == i)
        };
        // Constant blocks need no I/O.
        for (i, &b) in blocks.iter().enumerate() {
            if mine(i, &got) && self.entry(s, b).is_constant() {
                put(i, &self.constant(s, b), &mut got);
            }
        }
        // Blocks decoded ahead of a sequential reader need no I/O either.
        with_scratch(|scratch| {
            for (i, &b) in blocks.iter().enumerate() {
                if mine(i, &got) {
                    if let Some(block) = self.ahead_block(s, b, scratch)? {
                        put(i, &block, &mut got);
                    }
                }
            }
            Ok::<_, Error>(())
        })?;
        let missing: Vec<usize> = (0..blocks.len()).filter(|&i| mine(i, &got)).collect();
        if missing.len() == 1 {
            let i = missing[0];
            put(i, &self.load(s, blocks[i])?, &mut got);
        } else if !missing.is_empty() {
            // Group misses whose frames are adjacent in the file into single reads.
            let mut groups: Vec<(u64, Vec<usize>)> = Vec::new();
            let mut end = u64::MAX;
            for &i in &missing {
                self.refuse_lost(s, blocks[i])?;
                let e = self.entry(s, blocks[i]);
                let frame_len = e.frame_len();
                match groups.last_mut() {
                    Some((start, members))
                        if e.offset == end && end - *start + frame_len <= MAX_COALESCED_READ =>
                    {
                        members.push(i)
                    }
                    _ => groups.push((e.offset, vec![i])),
                }
                end = e.offset + frame_len;
            }
            self.plan_reads(missing.iter().map(|&i| (s, blocks[i])))?;
            // One buffer per run of adjacent frames; the frames are decoded from it in place.
            let mut bufs: Vec<Vec<u8>> = Vec::with_capacity(groups.len());
            let mut frames: Vec<(usize, usize, usize, usize)> = Vec::with_capacity(missing.len());
            for (start, members) in groups {
                let last = self.entry(s, blocks[*members.last().unwrap_or(&0)]);
                let len = last.offset + last.frame_len() - start;
                let mut buf = self.zeroed(s, blocks[members[0]], len)?;
                self.source
                    .read_frames_at(&mut buf, start, self.index.len)?;
                for i in members {
                    let e = self.entry(s, blocks[i]);
                    let at = (e.offset - start) as usize;
                    frames.push((i, bufs.len(), at, e.frame_len() as usize));
                }
                bufs.push(buf);
            }
            // The calling thread and the pool's helpers take the frames from one queue.
            let queue = std::sync::Mutex::new(frames.iter());
            let done: std::sync::Mutex<Vec<(usize, Result<Vec<u8>>)>> =
                std::sync::Mutex::new(Vec::with_capacity(frames.len()));
            let work = || {
                with_scratch(|scratch| loop {
                    let next = queue.lock().unwrap_or_else(|p| p.into_inner()).next();
                    let Some(&(i, g, at, len)) = next else {
                        return;
                    };
                    let frame = &bufs[g][at..at + len];
                    let r = self.decode_frame(s, blocks[i], frame, &mut scratch.codec);
                    let failed = r.is_err();
                    done.lock().unwrap_or_else(|p| p.into_inner()).push((i, r));
                    if failed {
                        return;
                    }
                })
            };
            let helpers = self.threads().min(frames.len()).max(1) - 1;
            if !crate::parallel::with_helpers(helpers, &work) {
                // A decoder that panicked is a bug in nc3pack, not damage: say so.
                return Err(Error::Internal(format!(
                    "{}: a block decoder panicked decoding {}",
                    self.source.path().display(),
                    self.stream_name(s)
                )));
            }
            let mut decoded = done.into_inner().unwrap_or_else(|p| p.into_inner());
            // In block order: the error reported is the lowest block's, as a serial read's
            // (every frame before a failed one was taken, so decoded, before it failed).
            decoded.sort_by_key(|r| r.0);
            for (i, r) in decoded {
                put(i, &Block::Bytes(Arc::new(r?)), &mut got);
            }
        }
        // This thread's blocks are handed over: now those of the others (or, where another
        // thread failed, this one decodes the block, and says why it cannot).
        for (i, waiter) in theirs {
            got[i] = Some(match waiter.wait() {
                Some(block) => block,
                None => self.load(s, blocks[i])?,
            });
        }
        got.into_iter()
            .enumerate()
            .map(|(i, g)| {
                g.ok_or_else(|| {
                    Error::Internal(format!(
                        "block {} of {} was not decoded",
                        blocks[i],
                        self.stream_name(s)
                    ))
                })
            })
            .collect()
    }

    /// The whole data of stream `s`, a member of a shared stream: its bytes are cut from the
    /// shared stream's blocks and decoded, then cached like a block.
    pub(crate) fn member_bytes(&self, s: usize) -> Result<Arc<Vec<u8>>> {
        self.member_bytes_held(s, &mut HeldBlocks::default())
    }

    /// [`Archive::member_bytes`] for a reader that takes the members in their order in the
    /// shared streams (as unpacking does): the shared blocks the last member used are kept in
    /// `held` and reused, so that each shared block is decoded once even without a cache,
    /// instead of once per member (which made unpacking and verifying an archive of many small
    /// variables quadratic).
    pub(crate) fn member_bytes_held(
        &self,
        s: usize,
        held: &mut HeldBlocks,
    ) -> Result<Arc<Vec<u8>>> {
        let st = &self.index.streams[s];
        let Some((sh, at)) = st.shared else {
            return Err(Error::Internal(format!(
                "{} is not in a shared stream",
                self.stream_name(s)
            )));
        };
        let key = (st.id, 0);
        if let Some(Block::Bytes(b)) = self.cache.get(key) {
            return Ok(b);
        }
        let bb = self.index.streams[sh].block_bytes;
        let end = at + st.total;
        let blocks: Vec<u64> = (at / bb..=(end - 1) / bb).collect();
        let find = |b: u64| held.0.iter().find(|h| h.0 == sh && h.1 == b).map(|h| &h.2);
        let missing: Vec<u64> = blocks
            .iter()
            .copied()
            .filter(|&b| find(b).is_none())
            .collect();
        let mut fetched = self.fetch(sh, &missing)?.into_iter();
        let got: Vec<Block> = blocks
            .iter()
            .map(|&b| find(b).cloned().or_else(|| fetched.next()))
            .collect::<Option<_>>()
            .ok_or_else(|| {
                Error::Internal(format!(
                    "block {} of {} was not fetched",
                    blocks[0],
                    self.stream_name(sh)
                ))
            })?;
        held.0.retain(|h| h.0 != sh);
        held.0
            .extend(blocks.iter().zip(&got).map(|(&b, g)| (sh, b, g.clone())));
        let mut enc = vec![0u8; st.total as usize];
        let mut enc_at = 0usize;
        for (&b, block) in blocks.iter().zip(&got) {
            let from = at.max(b * bb) - b * bb;
            let to = end.min(b * bb + block.len()) - b * bb;
            let n = to.saturating_sub(from) as usize;
            let part = enc.get_mut(enc_at..enc_at + n);
            if to < from || !part.is_some_and(|part| block.copy_to(from, part)) {
                return Err(self.block_error(sh, b, BlockError::Short));
            }
            enc_at += n;
        }
        if enc_at != enc.len() {
            return Err(self.block_error(sh, blocks[blocks.len() - 1], BlockError::Short));
        }
        let mut out = Vec::with_capacity(enc.len());
        crate::codec::member_decode(st.esize, &enc, &mut out);
        let out = Arc::new(out);
        self.cache.insert(key, Arc::clone(&out));
        Ok(out)
    }

    /// Reads the whole materialized data of variable `v` as big-endian bytes (as stored in the
    /// netCDF file, with records de-interleaved).
    ///
    /// ```
    /// use nc3pack::Dataset;
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-read_var_bytes", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// let temp = a.header().var_id("temp").unwrap();
    /// let bytes = a.read_var_bytes(temp)?;
    /// assert_eq!(bytes.len(), 20000 * 4);
    /// let first: Vec<f32> = a.read("temp", &a.slab("temp", Some(&[0]), Some(&[1]), None)?)?;
    /// assert_eq!(f32::from_be_bytes(bytes[..4].try_into()?), first[0]);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Archive::read_block`], for any block of the variable.
    pub fn read_var_bytes(&self, v: usize) -> Result<Vec<u8>> {
        Dataset::read_var_bytes(self, v)
    }
}

/// What a read of a span keeps of the blocks it decodes ([`Archive::span_block`]).
///
/// Derived per read ([`Archive::read_span`]) from the archive's [`super::CachePolicy`] and the
/// read itself: `whole` is the policy's `whole_blocks` for a span that fits in half of the
/// cache and is not sequential; `partial` holds for such a span whatever the policy; `carry`
/// for a sequential one.
#[derive(Clone, Copy)]
pub(super) struct Retain {
    /// Cache the blocks it reads part of.
    partial: bool,
    /// Cache the blocks it reads whole.
    whole: bool,
    /// Hold the last block, read in part, for the next read (a sequential reader's).
    carry: bool,
}

impl<R: ReadAt> Archive<R> {
    /// [`Dataset::read_runs`] (`native` false) and [`Dataset::read_runs_native`] (true).
    pub(super) fn runs_into(
        &self,
        v: usize,
        runs: &[(u64, u64)],
        out: &mut [u8],
        native: bool,
    ) -> Result<()> {
        // A read of one run that starts where the last one of `v` ended: decode what follows
        // it while the caller works on this one.
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
        self.runs_now(v, runs, out, native, sequential.is_some())?;
        if let Some((off, len)) = sequential {
            self.decode_ahead(v, off + len, len);
        }
        Ok(())
    }

    /// [`Archive::runs_into`] without decoding ahead; `sequential`: the read continues the
    /// last one of `v`.
    fn runs_now(
        &self,
        v: usize,
        runs: &[(u64, u64)],
        out: &mut [u8],
        native: bool,
        sequential: bool,
    ) -> Result<()> {
        let esize = self.index.streams[v].esize;
        if self.is_member(v) {
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
            return Ok(());
        }
        let bb = self.index.streams[v].block_bytes;
        if let [(off, len)] = *runs {
            // (With one thread, only when whole blocks are not cached, or the read is
            // sequential: otherwise the blocks are fetched, with one I/O per run of adjacent
            // frames, and all cached.)
            let spans = len > 0 && (off + len - 1) / bb > off / bb;
            if spans && (self.threads() > 1 || !self.caches_whole_blocks() || sequential) {
                return self.read_span(v, off, len, out, native, sequential);
            }
        }
        // One run inside one cached block (a small read, as nccopy's one record at a time):
        // copied from the cache, nothing planned, fetched or allocated.
        if let [(off, len)] = *runs {
            let b = off / bb;
            if len > 0 && (off + len - 1) / bb == b {
                if let Some(block) = self.cache.get_held((self.index.streams[v].id, b)) {
                    let piece = &mut out[..len as usize];
                    if !block.copy_to(off - b * bb, piece) {
                        return Err(self.shorter(v, b));
                    }
                    if native {
                        be_to_native(piece, esize);
                    }
                    return Ok(());
                }
                // Not cached: a first small read of the block decodes only its part.
                let piece = &mut out[..len as usize];
                if !sequential && self.read_part(v, b, off - b * bb, piece)? {
                    if native {
                        be_to_native(piece, esize);
                    }
                    return Ok(());
                }
            }
        }
        // A remote archive fetches the frames of the whole read with one request set.
        let planned = runs
            .iter()
            .filter(|r| r.1 > 0)
            .flat_map(|&(off, len)| off / bb..=(off + len - 1) / bb);
        let mut last = None;
        self.plan_reads(
            planned
                .filter(|&b| last.replace(b) != Some(b))
                .map(|b| (v, b)),
        )?;
        if runs.len() > 1 {
            return self.read_scattered(v, runs, out, native);
        }
        // Blocks are needed in ascending order; fetch them a window at a time so a large read
        // decodes in parallel while memory stays bounded.
        // (A read of a few blocks does not look up the machine's cores.)
        let blocks_read = match (runs.first(), runs.last()) {
            (Some(&(a, _)), Some(&(z, n))) => (z + n).div_ceil(bb).saturating_sub(a / bb),
            _ => 0,
        };
        let window = match blocks_read {
            0..=8 => 8,
            _ => (self.threads() * 4).max(8),
        };
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
            let fetched = self.fetch(v, &blocks)?;
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
                    return Err(self.shorter(v, b));
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
}
