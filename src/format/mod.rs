//! The .nc3z archive format, version 1.0: constants and the fixed-size structures.
//!
//! The byte-level specification is design/FORMAT.md; this module is its code. All integers are
//! little-endian. Every structure carries a CRC32C (Castagnoli) so that any damaged byte is
//! detected:
//!
//! ```text
//! lead (64 B) | header frame (36 + S B) | block frames ... | index (16 + 16 N B) | footer (32 B)
//! ```

/// First 8 bytes of every archive: `\x89 N C 3 Z \r \n \x1a` (PNG-style: a non-ASCII byte, then
/// line endings and a DOS EOF to detect text-mode transfer damage).
pub const LEAD_MAGIC: [u8; 8] = *b"\x89NC3Z\r\n\x1a";
/// Format major version: readers refuse other majors.
pub const VERSION_MAJOR: u16 = 1;
/// Format minor version: later minors add codecs, filters, flags or reserved-field meanings,
/// which older readers of the same major refuse by name (design/FORMAT.md, Versioning).
pub const VERSION_MINOR: u16 = 0;
/// Size of the lead.
pub const LEAD_LEN: usize = 64;
/// Sync magic at the start of every block frame.
pub const FRAME_MAGIC: [u8; 4] = *b"\xb7N3B";
/// Size of a frame header.
pub const FRAME_HEADER_LEN: usize = 36;
/// Magic at the start of the index section.
pub const INDEX_MAGIC: [u8; 4] = *b"N3ZI";
/// Size of the index section's own header.
pub const INDEX_HEADER_LEN: usize = 16;
/// Size of one index entry.
pub const INDEX_ENTRY_LEN: usize = 16;
/// Size of the footer.
pub const FOOTER_LEN: usize = 32;
/// Last 4 bytes of every archive.
pub const FOOTER_MAGIC: [u8; 4] = *b"N3Z\xef";
/// Frame variable id of the residual-bytes stream.
pub const RESIDUAL_ID: u32 = u32::MAX;
/// Frame variable id of the netCDF header frame (the original header, right after the lead).
pub const HEADER_ID: u32 = u32::MAX - 2;
/// Largest original header an archive may declare (1 GiB): the largest header the netCDF-3
/// parser takes (see design/FORMAT.md, "Limits").
pub use crate::nc3::MAX_HEADER_LEN;
/// Frame stream id of the early shared stream, which holds the small fixed variables of a large
/// file (see [`shared_max`], [`SPLIT_MIN`]).
pub const SHARED_EARLY_ID: u32 = u32::MAX - 3;
/// Frame stream id of the late shared stream, which holds the other small streams.
pub const SHARED_LATE_ID: u32 = u32::MAX - 4;
/// Files whose header declares data ending past this many bytes keep their small fixed
/// variables in the early shared stream, which is written as soon as they have been read (a cut
/// archive then keeps them); smaller files have one shared stream.
pub const SPLIT_MIN: u64 = 4 << 20;
/// Streams of at most this many bytes (and at most one block) live in a shared stream.
pub const SHARED_MAX: u64 = 4096;
/// Index entry flag: the block was lost (set by reindex); reading it is an error.
pub const FLAG_LOST: u16 = 1;
/// Index entry flag: the block is one element repeated and has no frame; the element is in the
/// entry's offset field (see [`IndexEntry::constant`]). Constants frames list these blocks so
/// that a scan can recover them.
pub const FLAG_CONSTANT: u16 = 2;
/// Frame stream id of a constants frame: a table of runs of constant blocks (see
/// [`ConstantRun`]), numbered 0, 1, 2, ... in the block field.
pub const CONSTANTS_ID: u32 = u32::MAX - 5;
/// Size of one run record in a constants frame.
pub const RUN_LEN: usize = 32;
/// Most runs in one constants frame (128 KiB decoded).
pub const MAX_RUNS_PER_FRAME: usize = 4096;
/// Largest block size an archive may declare (1 GiB).
pub const MAX_BLOCK_SIZE: u32 = 1 << 30;
/// Smallest block size an archive may declare: the largest element size.
pub const MIN_BLOCK_SIZE: u32 = 8;

pub(crate) mod codec;
pub(crate) mod pco;
pub(crate) mod streams;

use crate::error::{ConstantsError, EntryError, FooterError, FrameError, IndexError, LeadError};

/// CRC32C of `b`.
pub fn crc(b: &[u8]) -> u32 {
    crc32c::crc32c(b)
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Block compression codec, recorded per block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// Stored as is.
    None = 0,
    /// Zstandard (RFC 8878) frame.
    Zstd = 1,
    /// Raw DEFLATE (RFC 1951) stream.
    Deflate = 2,
    /// Every element of the block is the same: the payload is that one element.
    Constant = 3,
    /// Pcodec: the block's numbers as one standalone pco file (numeric blocks only).
    Pco = 4,
}

impl Codec {
    /// The codec with id `id`.
    ///
    /// ```
    /// use nc3pack::format::Codec;
    /// assert_eq!(Codec::from_id(1), Some(Codec::Zstd));
    /// assert_eq!(Codec::from_id(9), None);
    /// ```
    pub fn from_id(id: u8) -> Option<Codec> {
        match id {
            0 => Some(Codec::None),
            1 => Some(Codec::Zstd),
            2 => Some(Codec::Deflate),
            3 => Some(Codec::Constant),
            4 => Some(Codec::Pco),
            _ => None,
        }
    }

    /// Name as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Zstd => "zstd",
            Codec::Deflate => "deflate",
            Codec::Constant => "constant",
            Codec::Pco => "pco",
        }
    }
}

/// Reversible transform applied before the codec, recorded per block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    /// No transform.
    None = 0,
    /// Byte shuffle by element size: all first bytes of the elements, then all second bytes, ...
    Shuffle = 1,
    /// Byte shuffle, then each byte stream replaced by its differences (Blosc2's "bytedelta").
    ByteDelta = 2,
    /// Each element replaced by its difference from the previous one (as an unsigned big-endian
    /// integer of the element size, wrapping), then byte shuffle.
    Delta = 3,
    /// Like [`Filter::Delta`], but each difference, viewed as a signed integer of the element
    /// size, is zigzag-encoded (0, -1, 1, -2, ... become 0, 1, 2, 3, ...) before the shuffle, so
    /// that small negative differences have small high bytes too.
    ZigZagDelta = 4,
}

impl Filter {
    /// The filter with id `id`.
    ///
    /// ```
    /// use nc3pack::format::Filter;
    /// assert_eq!(Filter::from_id(1), Some(Filter::Shuffle));
    /// ```
    pub fn from_id(id: u8) -> Option<Filter> {
        match id {
            0 => Some(Filter::None),
            1 => Some(Filter::Shuffle),
            2 => Some(Filter::ByteDelta),
            3 => Some(Filter::Delta),
            4 => Some(Filter::ZigZagDelta),
            _ => None,
        }
    }

    /// Name for display.
    pub fn name(self) -> &'static str {
        match self {
            Filter::None => "none",
            Filter::Shuffle => "shuffle",
            Filter::ByteDelta => "bytedelta",
            Filter::Delta => "delta",
            Filter::ZigZagDelta => "zzdelta",
        }
    }
}

/// The archive's fixed-size first structure.
///
/// ```
/// use nc3pack::format::Lead;
/// let lead = Lead { file_len: 1000, numrecs: 3, header_len: 200, block_size: 1 << 20, hash: 7 };
/// let bytes = lead.encode();
/// assert_eq!(Lead::decode(&bytes), Ok(lead));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lead {
    /// Length of the original netCDF-3 file.
    pub file_len: u64,
    /// Materialized number of records.
    pub numrecs: u64,
    /// Length of the netCDF-3 header that follows the lead.
    pub header_len: u64,
    /// Nominal block size in decoded bytes (each variable snaps it down to whole elements).
    pub block_size: u32,
    /// XXH3-128 of the original file.
    pub hash: u128,
}

impl Lead {
    /// Encodes the lead.
    pub fn encode(&self) -> [u8; LEAD_LEN] {
        let mut b = [0u8; LEAD_LEN];
        b[0..8].copy_from_slice(&LEAD_MAGIC);
        b[8..10].copy_from_slice(&VERSION_MAJOR.to_le_bytes());
        b[10..12].copy_from_slice(&VERSION_MINOR.to_le_bytes());
        // 12..16: flags, reserved, zero.
        b[16..24].copy_from_slice(&self.file_len.to_le_bytes());
        b[24..32].copy_from_slice(&self.numrecs.to_le_bytes());
        b[32..40].copy_from_slice(&self.header_len.to_le_bytes());
        b[40..44].copy_from_slice(&self.block_size.to_le_bytes());
        b[44..60].copy_from_slice(&self.hash.to_le_bytes());
        let c = crc(&b[..60]);
        b[60..64].copy_from_slice(&c.to_le_bytes());
        b
    }

    /// Decodes and checks a lead.
    ///
    /// # Errors
    ///
    /// A [`LeadError`] saying what is wrong.
    pub fn decode(b: &[u8]) -> Result<Lead, LeadError> {
        if b.len() < LEAD_LEN {
            return Err(LeadError::TooShort { len: b.len() });
        }
        if b[0..8] != LEAD_MAGIC {
            return Err(LeadError::Magic);
        }
        let stored = u32_at(b, 60);
        if crc(&b[..60]) != stored {
            return Err(LeadError::Checksum);
        }
        let major = u16_at(b, 8);
        if major != VERSION_MAJOR {
            return Err(LeadError::Version {
                major,
                minor: u16_at(b, 10),
            });
        }
        let flags = u32_at(b, 12);
        if flags != 0 {
            return Err(LeadError::Flags { flags });
        }
        let lead = Lead {
            file_len: u64_at(b, 16),
            numrecs: u64_at(b, 24),
            header_len: u64_at(b, 32),
            block_size: u32_at(b, 40),
            hash: u128::from_le_bytes(b[44..60].try_into().unwrap_or([0; 16])),
        };
        if !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&lead.block_size) {
            return Err(LeadError::BlockSize {
                block_size: lead.block_size,
            });
        }
        if lead.header_len > MAX_HEADER_LEN {
            return Err(LeadError::HeaderTooLong {
                header_len: lead.header_len,
            });
        }
        if lead.header_len > lead.file_len {
            return Err(LeadError::HeaderPastFile {
                header_len: lead.header_len,
                file_len: lead.file_len,
            });
        }
        Ok(lead)
    }
}

/// The header of a block frame.
///
/// ```
/// use nc3pack::format::{Codec, Filter, FrameHeader};
/// let h = FrameHeader { stored_len: 10, decoded_len: 40, var: 2, block: 7,
///     codec: Codec::Zstd, filter: Filter::Shuffle, esize: 4, payload_crc: 0xdeadbeef };
/// assert_eq!(FrameHeader::decode(&h.encode()), Ok(h));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// Bytes of payload after the header.
    pub stored_len: u32,
    /// Bytes after decoding.
    pub decoded_len: u32,
    /// Stream id: a variable's number, or [`RESIDUAL_ID`], [`HEADER_ID`], [`SHARED_EARLY_ID`],
    /// [`SHARED_LATE_ID`].
    pub var: u32,
    /// Block number within the variable.
    pub block: u64,
    /// Codec.
    pub codec: Codec,
    /// Filter.
    pub filter: Filter,
    /// Element size the filter used.
    pub esize: u16,
    /// CRC32C of the payload.
    pub payload_crc: u32,
}

impl FrameHeader {
    /// Encodes the frame header, with its own CRC at the end.
    pub fn encode(&self) -> [u8; FRAME_HEADER_LEN] {
        let mut b = [0u8; FRAME_HEADER_LEN];
        b[0..4].copy_from_slice(&FRAME_MAGIC);
        b[4..8].copy_from_slice(&self.stored_len.to_le_bytes());
        b[8..12].copy_from_slice(&self.decoded_len.to_le_bytes());
        b[12..16].copy_from_slice(&self.var.to_le_bytes());
        b[16..24].copy_from_slice(&self.block.to_le_bytes());
        b[24] = self.codec as u8;
        b[25] = self.filter as u8;
        b[26..28].copy_from_slice(&self.esize.to_le_bytes());
        b[28..32].copy_from_slice(&self.payload_crc.to_le_bytes());
        let c = crc(&b[..32]);
        b[32..36].copy_from_slice(&c.to_le_bytes());
        b
    }

    /// Decodes and checks a frame header (magic, header CRC, codec and filter ids, and that the
    /// stored length does not exceed the decoded length).
    ///
    /// # Errors
    ///
    /// A [`FrameError`] saying what is wrong.
    pub fn decode(b: &[u8]) -> Result<FrameHeader, FrameError> {
        if b.len() < FRAME_HEADER_LEN {
            return Err(FrameError::Short);
        }
        if b[0..4] != FRAME_MAGIC {
            return Err(FrameError::NoMagic);
        }
        if crc(&b[..32]) != u32_at(b, 32) {
            return Err(FrameError::HeaderChecksum);
        }
        let codec = Codec::from_id(b[24]).ok_or(FrameError::UnknownCodec { id: b[24] })?;
        let filter = Filter::from_id(b[25]).ok_or(FrameError::UnknownFilter { id: b[25] })?;
        let h = FrameHeader {
            stored_len: u32_at(b, 4),
            decoded_len: u32_at(b, 8),
            var: u32_at(b, 12),
            block: u64_at(b, 16),
            codec,
            filter,
            esize: u16_at(b, 26),
            payload_crc: u32_at(b, 28),
        };
        if h.stored_len > h.decoded_len {
            return Err(FrameError::LengthMismatch {
                stored: h.stored_len,
                decoded: h.decoded_len,
            });
        }
        Ok(h)
    }
}

/// Where a block is, as recorded in the index.
///
/// ```
/// use nc3pack::format::{Codec, Filter, IndexEntry};
/// let e = IndexEntry { offset: 1234, stored_len: 99, codec: Codec::Deflate, filter: Filter::None, flags: 0 };
/// assert_eq!(IndexEntry::decode(&e.encode()), Ok(e));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexEntry {
    /// Archive offset of the frame header.
    pub offset: u64,
    /// Payload bytes (the frame is `FRAME_HEADER_LEN + stored_len` bytes).
    pub stored_len: u32,
    /// Codec (repeated from the frame, so a reader can plan without reading it).
    pub codec: Codec,
    /// Filter.
    pub filter: Filter,
    /// Flags: [`FLAG_LOST`].
    pub flags: u16,
}

impl IndexEntry {
    /// Encodes the entry.
    pub fn encode(&self) -> [u8; INDEX_ENTRY_LEN] {
        let mut b = [0u8; INDEX_ENTRY_LEN];
        b[0..8].copy_from_slice(&self.offset.to_le_bytes());
        b[8..12].copy_from_slice(&self.stored_len.to_le_bytes());
        b[12] = self.codec as u8;
        b[13] = self.filter as u8;
        b[14..16].copy_from_slice(&self.flags.to_le_bytes());
        b
    }

    /// Decodes an entry.
    ///
    /// # Errors
    ///
    /// [`IndexError::UnknownCodec`] or [`IndexError::UnknownFilter`].
    pub fn decode(b: &[u8]) -> Result<IndexEntry, IndexError> {
        Ok(IndexEntry {
            offset: u64_at(b, 0),
            stored_len: u32_at(b, 8),
            codec: Codec::from_id(b[12]).ok_or(IndexError::UnknownCodec { id: b[12] })?,
            filter: Filter::from_id(b[13]).ok_or(IndexError::UnknownFilter { id: b[13] })?,
            flags: u16_at(b, 14),
        })
    }

    /// Whether the block is marked lost.
    pub fn is_lost(&self) -> bool {
        self.flags & FLAG_LOST != 0
    }

    /// The entry of a block whose elements all equal `value` (1 to 8 bytes): no frame, the
    /// element in the offset field's first bytes (the rest zero), codec constant, stored
    /// length 0, flag [`FLAG_CONSTANT`].
    ///
    /// ```
    /// use nc3pack::format::IndexEntry;
    /// let e = IndexEntry::constant(&[0x7f, 0xc0, 0, 0]);
    /// assert!(e.is_constant());
    /// assert_eq!(e.offset.to_le_bytes(), [0x7f, 0xc0, 0, 0, 0, 0, 0, 0]);
    /// assert_eq!(e.constant_value(4), &[0x7f, 0xc0, 0, 0]);
    /// ```
    pub fn constant(value: &[u8]) -> IndexEntry {
        let mut v = [0u8; 8];
        let n = value.len().min(8);
        v[..n].copy_from_slice(&value[..n]);
        IndexEntry {
            offset: u64::from_le_bytes(v),
            stored_len: 0,
            codec: Codec::Constant,
            filter: Filter::None,
            flags: FLAG_CONSTANT,
        }
    }

    /// Whether the block is constant and lives in the index only.
    pub fn is_constant(&self) -> bool {
        self.flags & FLAG_CONSTANT != 0
    }

    /// The first `esize` bytes (at most 8) of the offset field: a constant block's element.
    pub fn constant_value(&self, esize: usize) -> Vec<u8> {
        self.offset.to_le_bytes()[..esize.min(8)].to_vec()
    }

    /// Checks the combination of fields: flags 0, [`FLAG_LOST`] (with every other field 0) or
    /// [`FLAG_CONSTANT`] (codec constant, no filter, stored length 0, and the offset field's
    /// bytes past `esize` zero).
    ///
    /// # Errors
    ///
    /// An [`EntryError`] saying what is wrong.
    pub fn check(&self, esize: usize) -> Result<(), EntryError> {
        match self.flags {
            0 if self.codec == Codec::Constant && self.stored_len == 0 => {
                Err(EntryError::ConstantWithoutFlag)
            }
            0 => Ok(()),
            FLAG_LOST
                if self.offset == 0
                    && self.stored_len == 0
                    && self.codec == Codec::None
                    && self.filter == Filter::None =>
            {
                Ok(())
            }
            FLAG_CONSTANT
                if self.stored_len == 0
                    && self.codec == Codec::Constant
                    && self.filter == Filter::None
                    && (1..=8).contains(&esize)
                    && (esize == 8 || self.offset >> (8 * esize) == 0) =>
            {
                Ok(())
            }
            flags => Err(EntryError::Invalid {
                flags,
                codec: self.codec,
                filter: self.filter,
                stored_len: self.stored_len,
            }),
        }
    }
}

/// A run of constant blocks, as a constants frame records it: blocks `first .. first + count`
/// of stream `stream` (a frame stream id) all hold the element `value` (its first esize bytes;
/// the rest zero).
///
/// On disk, 32 bytes little-endian: stream (4), reserved 0 (4), first (8), count (8), value (8).
///
/// ```
/// use nc3pack::format::ConstantRun;
/// let r = ConstantRun { stream: 3, first: 10, count: 5, value: [0, 0, 0x80, 0x3f, 0, 0, 0, 0] };
/// assert_eq!(ConstantRun::decode_all(&r.encode()), Ok(vec![r]));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConstantRun {
    /// Frame stream id (variable number, [`RESIDUAL_ID`], a shared stream's id).
    pub stream: u32,
    /// First block of the run.
    pub first: u64,
    /// Number of blocks (at least 1).
    pub count: u64,
    /// The element, in its first esize bytes.
    pub value: [u8; 8],
}

impl ConstantRun {
    /// Encodes the run record.
    pub fn encode(&self) -> [u8; RUN_LEN] {
        let mut b = [0u8; RUN_LEN];
        b[0..4].copy_from_slice(&self.stream.to_le_bytes());
        b[8..16].copy_from_slice(&self.first.to_le_bytes());
        b[16..24].copy_from_slice(&self.count.to_le_bytes());
        b[24..32].copy_from_slice(&self.value);
        b
    }

    /// Decodes a constants frame's decoded payload: whole records, reserved fields 0, counts at
    /// least 1 and no run past block 2^64.
    ///
    /// # Errors
    ///
    /// [`ConstantsError::Length`] or [`ConstantsError::Record`].
    pub fn decode_all(b: &[u8]) -> Result<Vec<ConstantRun>, ConstantsError> {
        if !b.len().is_multiple_of(RUN_LEN) {
            return Err(ConstantsError::Length { len: b.len() });
        }
        b.chunks_exact(RUN_LEN)
            .enumerate()
            .map(|(i, r)| {
                let run = ConstantRun {
                    stream: u32_at(r, 0),
                    first: u64_at(r, 8),
                    count: u64_at(r, 16),
                    value: r[24..32].try_into().unwrap_or([0; 8]),
                };
                if u32_at(r, 4) != 0 || run.count == 0 || run.first.checked_add(run.count).is_none()
                {
                    return Err(ConstantsError::Record { index: i });
                }
                Ok(run)
            })
            .collect()
    }
}

/// A constants frame: the runs `runs` (at most [`MAX_RUNS_PER_FRAME`]) as a frame of stream
/// [`CONSTANTS_ID`] and block `seq`, zstd-compressed when that is smaller.
///
/// ```
/// use nc3pack::format::{constants_frame, ConstantRun, FrameHeader, CONSTANTS_ID};
/// let runs = [ConstantRun { stream: 0, first: 0, count: 9, value: [0; 8] }];
/// let f = constants_frame(2, &runs);
/// let h = FrameHeader::decode(&f).unwrap();
/// assert_eq!((h.var, h.block, h.decoded_len), (CONSTANTS_ID, 2, 32));
/// ```
pub fn constants_frame(seq: u64, runs: &[ConstantRun]) -> Vec<u8> {
    let table: Vec<u8> = runs.iter().flat_map(|r| r.encode()).collect();
    let packed = zstd::bulk::compress(&table, 3)
        .ok()
        .filter(|c| c.len() < table.len());
    let (codec, payload) = match &packed {
        Some(c) => (Codec::Zstd, c.as_slice()),
        None => (Codec::None, table.as_slice()),
    };
    bytes_frame(CONSTANTS_ID, seq, table.len(), codec, payload)
}

/// Whether a constants frame may have this codec and filter: none or zstd, no filter, as
/// [`constants_frame`] writes it.
pub fn is_constants_codec(codec: Codec, filter: Filter) -> bool {
    matches!(codec, Codec::None | Codec::Zstd) && filter == Filter::None
}

/// A frame of bytes (esize 1, no filter) of stream `id`, block `block`: `payload`, which `codec`
/// decodes to `decoded_len` bytes.
fn bytes_frame(id: u32, block: u64, decoded_len: usize, codec: Codec, payload: &[u8]) -> Vec<u8> {
    let h = FrameHeader {
        stored_len: payload.len() as u32,
        decoded_len: decoded_len as u32,
        var: id,
        block,
        codec,
        filter: Filter::None,
        esize: 1,
        payload_crc: crc(payload),
    };
    let mut out = h.encode().to_vec();
    out.extend_from_slice(payload);
    out
}

/// Encodes an index section: its header, the block entries, then the entries of the constants
/// frames (their count in the header's second word).
pub fn encode_index(entries: &[IndexEntry], tables: &[IndexEntry]) -> Vec<u8> {
    let n = entries.len() + tables.len();
    let mut b = Vec::with_capacity(INDEX_HEADER_LEN + n * INDEX_ENTRY_LEN);
    b.extend_from_slice(&INDEX_MAGIC);
    b.extend_from_slice(&(tables.len() as u32).to_le_bytes());
    b.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    for e in entries.iter().chain(tables) {
        b.extend_from_slice(&e.encode());
    }
    b
}

/// Length of an index section of `blocks` block entries and `tables` constants frame entries.
pub fn index_len(blocks: u64, tables: u64) -> Option<u64> {
    blocks
        .checked_add(tables)?
        .checked_mul(INDEX_ENTRY_LEN as u64)?
        .checked_add(INDEX_HEADER_LEN as u64)
}

/// Decodes an index section of which `expected` block entries are expected: returns the block
/// entries and the constants frames' entries.
///
/// # Errors
///
/// An [`IndexError`] saying what is wrong.
pub fn decode_index(
    b: &[u8],
    expected: u64,
) -> Result<(Vec<IndexEntry>, Vec<IndexEntry>), IndexError> {
    if b.len() < INDEX_HEADER_LEN || b[0..4] != INDEX_MAGIC {
        return Err(IndexError::NoMagic);
    }
    let tables = u32_at(b, 4);
    let n = u64_at(b, 8);
    if n != expected {
        return Err(IndexError::Count { found: n, expected });
    }
    if index_len(n, u64::from(tables)) != Some(b.len() as u64) {
        return Err(IndexError::Length {
            len: b.len(),
            blocks: n,
            tables,
        });
    }
    let all: Vec<IndexEntry> = b[INDEX_HEADER_LEN..]
        .chunks_exact(INDEX_ENTRY_LEN)
        .map(IndexEntry::decode)
        .collect::<Result<_, _>>()?;
    let (blocks, tables) = all.split_at(n as usize);
    if let Some(t) = tables
        .iter()
        .find(|t| t.flags != 0 || !is_constants_codec(t.codec, t.filter))
    {
        return Err(IndexError::ConstantsEntry {
            flags: t.flags,
            codec: t.codec,
            filter: t.filter,
        });
    }
    Ok((blocks.to_vec(), tables.to_vec()))
}

/// The archive's fixed-size last structure.
///
/// ```
/// use nc3pack::format::Footer;
/// let f = Footer { index_offset: 500, index_len: 48, index_crc: 7, flags: 0 };
/// assert_eq!(Footer::decode(&f.encode()), Ok(f));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// Archive offset of the index section.
    pub index_offset: u64,
    /// Length of the index section.
    pub index_len: u64,
    /// CRC32C of the index section.
    pub index_crc: u32,
    /// Flags: reserved, 0.
    pub flags: u32,
}

impl Footer {
    /// Encodes the footer.
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut b = [0u8; FOOTER_LEN];
        b[0..8].copy_from_slice(&self.index_offset.to_le_bytes());
        b[8..16].copy_from_slice(&self.index_len.to_le_bytes());
        b[16..20].copy_from_slice(&self.index_crc.to_le_bytes());
        b[20..24].copy_from_slice(&self.flags.to_le_bytes());
        let c = crc(&b[..24]);
        b[24..28].copy_from_slice(&c.to_le_bytes());
        b[28..32].copy_from_slice(&FOOTER_MAGIC);
        b
    }

    /// Decodes and checks a footer.
    ///
    /// # Errors
    ///
    /// A [`FooterError`] saying what is wrong.
    pub fn decode(b: &[u8]) -> Result<Footer, FooterError> {
        if b.len() < FOOTER_LEN {
            return Err(FooterError::Short);
        }
        if b[28..32] != FOOTER_MAGIC {
            return Err(FooterError::NoMagic);
        }
        if crc(&b[..24]) != u32_at(b, 24) {
            return Err(FooterError::Checksum);
        }
        let flags = u32_at(b, 20);
        if flags != 0 {
            return Err(FooterError::Flags { flags });
        }
        Ok(Footer {
            index_offset: u64_at(b, 0),
            index_len: u64_at(b, 8),
            index_crc: u32_at(b, 16),
            flags,
        })
    }
}

/// The header frame: the original netCDF-3 header, zstd-compressed (level 19) when that is
/// smaller, else raw.
///
/// ```
/// let h = vec![b'C'; 300];
/// let f = nc3pack::format::header_frame(&h);
/// assert!(f.len() < 300);
/// ```
pub fn header_frame(header: &[u8]) -> Vec<u8> {
    let packed = compress_header(header).filter(|c| c.len() < header.len());
    let (codec, payload) = match &packed {
        Some(c) => (Codec::Zstd, c.as_slice()),
        None => (Codec::None, header),
    };
    bytes_frame(HEADER_ID, 0, header.len(), codec, payload)
}

/// Level of the header frame's zstd compression.
const HEADER_LEVEL: i32 = 19;

thread_local! {
    /// This thread's header compressor, kept between calls: setting up a zstd context (which
    /// probes the CPU with `cpuid`, slow in a virtual machine) costs more than compressing a small
    /// file's header. A reused context compresses to the same bytes as a fresh one (zstd resets
    /// the session at every one-shot compression; the tests check it).
    static HEADER_ZSTD: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// `header` compressed by zstd at [`HEADER_LEVEL`] (a one-shot frame), or `None` on failure.
fn compress_header(header: &[u8]) -> Option<Vec<u8>> {
    HEADER_ZSTD.with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        if slot.is_none() {
            *slot = zstd::bulk::Compressor::new(HEADER_LEVEL).ok();
        }
        let packed = slot.as_mut()?.compress(header);
        if packed.is_err() {
            // Start the next header from a fresh context.
            *slot = None;
        }
        packed.ok()
    })
}

/// Block size of variable data with element size `esize` for the nominal `block_size`: the
/// largest whole number of elements that fits, at least one element.
///
/// ```
/// assert_eq!(nc3pack::format::var_block_bytes(1000, 8), 1000);
/// assert_eq!(nc3pack::format::var_block_bytes(1001, 8), 1000);
/// assert_eq!(nc3pack::format::var_block_bytes(8, 8), 8);
/// ```
pub fn var_block_bytes(block_size: u32, esize: usize) -> u64 {
    let e = esize.max(1) as u64;
    (u64::from(block_size) / e).max(1) * e
}

/// Largest stream, in bytes, stored as a member of a shared stream for the nominal
/// `block_size`: [`SHARED_MAX`] or one block, whichever is smaller.
///
/// ```
/// assert_eq!(nc3pack::format::shared_max(1 << 20), 4096);
/// assert_eq!(nc3pack::format::shared_max(64), 64);
/// ```
pub fn shared_max(block_size: u32) -> u64 {
    SHARED_MAX.min(u64::from(block_size))
}

/// Number of blocks for `total` bytes in blocks of `block_bytes`.
pub fn block_count(total: u64, block_bytes: u64) -> u64 {
    total.div_ceil(block_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_frames_from_a_reused_context_match_a_fresh_one() {
        // Headers of varied sizes and contents, large ones before small ones, in one thread (so
        // one reused context): each frame must hold the bytes a fresh context makes.
        let mut headers: Vec<Vec<u8>> = Vec::new();
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let text = b"CDF\x01time value status units seconds";
        for &len in &[300usize, 200_000, 40, 5_000, 70_000, 1, 300, 0, 12_345, 300] {
            let h = (0..len)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // Mostly repetitive text with some noise, so that zstd finds matches.
                    if x.is_multiple_of(5) {
                        x as u8
                    } else {
                        text[i % text.len()]
                    }
                })
                .collect();
            headers.push(h);
        }
        for h in &headers {
            let fresh = zstd::bulk::compress(h, HEADER_LEVEL).unwrap();
            let frame = header_frame(h);
            let payload = &frame[FRAME_HEADER_LEN..];
            if fresh.len() < h.len() {
                assert_eq!(payload, &fresh[..], "header of {} bytes", h.len());
            } else {
                assert_eq!(payload, &h[..], "header of {} bytes", h.len());
            }
        }
    }

    #[test]
    fn crc32c_check_value_matches_the_spec() {
        // The standard check value of CRC-32C (iSCSI), as design/FORMAT.md states.
        assert_eq!(crc(b"123456789"), 0xE306_9283);
    }

    #[test]
    fn lead_fields_sit_at_the_documented_offsets() {
        let b = Lead {
            file_len: 0x0102_0304_0506_0708,
            numrecs: 9,
            header_len: 10,
            block_size: 4096,
            hash: 0x1112_1314_1516_1718_191a_1b1c_1d1e_1f20,
        }
        .encode();
        assert_eq!(&b[0..8], b"\x89NC3Z\r\n\x1a");
        assert_eq!(&b[8..12], &[1, 0, 0, 0]);
        assert_eq!(&b[16..24], &[8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(b[24], 9);
        assert_eq!(b[32], 10);
        assert_eq!(&b[40..44], &[0, 0x10, 0, 0]);
        assert_eq!((b[44], b[59]), (0x20, 0x11));
        assert_eq!(&b[60..64], &crc(&b[..60]).to_le_bytes());
        let mut bad = b;
        bad[20] ^= 1;
        assert_eq!(Lead::decode(&bad), Err(LeadError::Checksum));
    }

    #[test]
    fn frame_and_footer_reject_damage() {
        let h = FrameHeader {
            stored_len: 5,
            decoded_len: 4,
            var: 0,
            block: 0,
            codec: Codec::None,
            filter: Filter::None,
            esize: 1,
            payload_crc: 0,
        };
        assert_eq!(
            FrameHeader::decode(&h.encode()),
            Err(FrameError::LengthMismatch {
                stored: 5,
                decoded: 4
            })
        );
        let f = Footer {
            index_offset: 1,
            index_len: 2,
            index_crc: 3,
            flags: 0,
        }
        .encode();
        for i in 0..FOOTER_LEN {
            let mut g = f;
            g[i] ^= 0x40;
            assert!(Footer::decode(&g).is_err(), "flip at {i} not caught");
        }
    }
}
