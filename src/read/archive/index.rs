//! An archive's index as plain data: the structures opening reads and checks (lead, header,
//! layout, streams, index entries, footer) and the lookups that need nothing else, with no
//! I/O.

use crate::error::{BlockError, EntryError, IndexError};
use crate::format::streams::Stream;
use crate::format::{self, BlockSizes, Footer, FrameHeader, IndexEntry, Lead};
use crate::nc3::{Header, Layout};
use crate::read::cache::Block;

/// What opening an archive read from it and checked: everything a read looks up to find a
/// block, none of how the bytes are read or what is cached ([`crate::Archive`] holds one).
pub(crate) struct ArchiveIndex {
    pub(super) lead: Lead,
    /// The header, which holds its bytes.
    pub(super) header: Header,
    pub(super) layout: Layout,
    /// Block size of each stream (the lead's, or per variable from the block sizes frame).
    pub(super) block_sizes: BlockSizes,
    pub(super) streams: Vec<Stream>,
    /// The index entry of each block, stream after stream (each stream's from its
    /// `first_slot`).
    pub(super) entries: Vec<IndexEntry>,
    /// Index entries of the constants frames.
    pub(super) constants_frames: Vec<IndexEntry>,
    pub(super) footer: Footer,
    /// Length of the archive as read (a compact archive's full form).
    pub(super) len: u64,
    /// Offset just past the header frame: where the block frames start.
    pub(super) data_start: u64,
}

impl ArchiveIndex {
    /// Checks that every block's entry agrees with its stream and, unless lost or constant,
    /// lies in the data section, as each constants frame does.
    ///
    /// # Errors
    ///
    /// The first entry that does not ([`IndexError::Entry`], naming the stream and block), or
    /// the first constants frame outside the data ([`IndexError::ConstantsFrameOutside`]).
    pub(super) fn check(&self) -> Result<(), IndexError> {
        let (data_start, data_end) = (self.data_start, self.footer.index_offset);
        let in_data = |e: &IndexEntry, max: u64| {
            let end = e.offset.checked_add(e.frame_len());
            e.offset >= data_start
                && end.is_some_and(|end| end <= data_end)
                && u64::from(e.stored_len) <= max
        };
        for s in &self.streams {
            for b in 0..s.blocks() {
                let e = &self.entries[(s.first_slot + b) as usize];
                let source = match e.check(s.esize) {
                    Err(e) => e,
                    Ok(()) if e.is_lost() || e.is_constant() || in_data(e, s.block_bytes) => {
                        continue
                    }
                    Ok(()) => EntryError::OutsideData,
                };
                return Err(IndexError::Entry {
                    block: b,
                    stream: stream_name(&self.header, s.id),
                    source,
                });
            }
        }
        let constants_max = (format::MAX_RUNS_PER_FRAME * format::RUN_LEN) as u64;
        if let Some(k) = self
            .constants_frames
            .iter()
            .position(|t| !in_data(t, constants_max))
        {
            return Err(IndexError::ConstantsFrameOutside { k });
        }
        Ok(())
    }

    /// Number of streams ([`crate::Archive::stream_count`]).
    pub(super) fn stream_count(&self) -> usize {
        self.streams.len()
    }

    /// The stream of the residual bytes ([`crate::Archive::residual_stream`]).
    pub(super) fn residual_stream(&self) -> usize {
        self.layout.vars.len()
    }

    /// The shared stream that holds stream `s` ([`crate::Archive::shared_stream_of`]).
    pub(super) fn shared_stream_of(&self, s: usize) -> Option<usize> {
        self.streams[s].shared.map(|(sh, _)| sh)
    }

    /// Whether stream `s` is a member of a shared stream ([`crate::Archive::is_member`]).
    pub(super) fn is_member(&self, s: usize) -> bool {
        self.streams[s].shared.is_some()
    }

    /// Number of blocks of stream `s`.
    pub(super) fn block_count(&self, s: usize) -> u64 {
        self.streams[s].blocks()
    }

    /// Decoded length of block `b` of stream `s`, as the layout says.
    pub(super) fn block_len(&self, s: usize, b: u64) -> u64 {
        self.streams[s].block_len(b)
    }

    /// Index entry of block `b` of stream `s`.
    pub(super) fn entry(&self, s: usize, b: u64) -> &IndexEntry {
        &self.entries[(self.streams[s].first_slot + b) as usize]
    }

    /// Stored bytes of stream `s`, frame headers included ([`crate::Archive::stored_bytes`]).
    pub(super) fn stored_bytes(&self, s: usize) -> u64 {
        (0..self.block_count(s))
            .map(|b| self.entry(s, b))
            .filter(|e| !e.is_constant())
            .map(|e| e.frame_len())
            .sum()
    }

    /// Every block of every stream, as (stream, block), in index order.
    pub(super) fn blocks(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        (0..self.stream_count()).flat_map(|s| (0..self.block_count(s)).map(move |b| (s, b)))
    }

    /// Checks the header of `frame` (at least its first [`format::FRAME_HEADER_LEN`] bytes),
    /// read as block `b` of stream `s`, against the index entry and the layout: the stream,
    /// block, stored and decoded lengths, codec, filter and element size it names must be the
    /// ones expected.
    ///
    /// # Errors
    ///
    /// [`BlockError::Frame`] for a header that does not decode, [`BlockError::Mismatch`] and
    /// [`BlockError::ElementSize`] for one that names another block or another shape.
    pub(super) fn check_frame_header(
        &self,
        s: usize,
        b: u64,
        frame: &[u8],
    ) -> Result<FrameHeader, BlockError> {
        let st = &self.streams[s];
        let e = self.entry(s, b);
        let expect_len = self.block_len(s, b);
        let h = FrameHeader::decode(frame).map_err(BlockError::from)?;
        if h.stream != st.id
            || h.block != b
            || h.stored_len != e.stored_len
            || u64::from(h.decoded_len) != expect_len
            || h.codec != e.codec
            || h.filter != e.filter
        {
            return Err(BlockError::Mismatch {
                stream: h.stream,
                block: h.block,
                stored: h.stored_len,
                decoded: h.decoded_len,
                expect_stream: st.id,
                expect_block: b,
                expect_stored: e.stored_len,
                expect_decoded: expect_len,
            });
        }
        if usize::from(h.esize) != st.esize {
            return Err(BlockError::ElementSize {
                frame: h.esize,
                stream: st.esize,
            });
        }
        Ok(h)
    }

    /// Name of stream `s` for messages.
    pub(super) fn stream_name(&self, s: usize) -> String {
        stream_name(&self.header, self.streams[s].id)
    }

    /// Block `b` of stream `s` (constant), from its index entry alone, as its element and
    /// length (the block length is a whole number of elements: a stream's blocks are whole
    /// elements, and its length too).
    pub(super) fn constant(&self, s: usize, b: u64) -> Block {
        let esize = self.streams[s].esize.clamp(1, 8);
        Block::constant(
            &self.entry(s, b).constant_value(esize),
            self.block_len(s, b),
        )
    }
}

/// Name of a stream for messages: the variable's name, or "residual bytes".
pub(crate) fn stream_name(h: &Header, id: u32) -> String {
    match id {
        format::RESIDUAL_ID => "residual bytes".into(),
        format::HEADER_ID => "netCDF header".into(),
        format::SHARED_EARLY_ID => "early shared stream".into(),
        format::SHARED_LATE_ID => "late shared stream".into(),
        format::CONSTANTS_ID => "constants frames".into(),
        format::BLOCK_SIZES_ID => "block sizes".into(),
        i if (i as usize) < h.var_count() => format!("variable {:?}", h.var(i as usize).name()),
        i => format!("variable id {i}"),
    }
}
