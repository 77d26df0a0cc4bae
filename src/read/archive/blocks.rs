//! Reading blocks: the spans of a stream, a block's frame read, checked and decoded (into the
//! caller's buffer or the cache), the shared streams' members, and the runs of a variable.

use super::*;
use crate::read::cache::{Claim, Ticket, Waiter};

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

    /// Tells the reader which frames the blocks `blocks` (as (stream, block)) will be read from,
    /// in the order they will be read, leaving out blocks that are cached or need no frame: a
    /// remote reader fetches them with a few coalesced requests instead of one per block.
    pub(crate) fn prefetch_blocks(&self, blocks: impl Iterator<Item = (usize, u64)>) -> Result<()> {
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

    /// Checks a frame header against the index and the layout
    /// ([`ArchiveIndex::check_frame_header`]), its error naming the archive and block.
    pub(super) fn check_frame_header(&self, s: usize, b: u64, frame: &[u8]) -> Result<FrameHeader> {
        self.index
            .check_frame_header(s, b, frame)
            .map_err(|e| self.block_error(s, b, e))
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
            self.prefetch_blocks(missing.iter().map(|&i| (s, blocks[i])))?;
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
