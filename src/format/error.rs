//! Errors of the archive format's structures: what is wrong with a lead, a frame header, an
//! index entry or section, a footer or a constants frame. They know nothing of codecs: what is
//! wrong with a frame's payload, and what a codec or filter refuses, is
//! [`FrameError`](crate::error::FrameError) (in `crate::codec`, which wraps a
//! [`FrameHeaderError`] too). Pure values (no path, no I/O): [`crate::Error`] adds the file and
//! the part.

use super::{Codec, Filter};

/// What is wrong with an archive's lead ([`crate::format::Lead::decode`]).
///
/// ```
/// use nc3pack::{error::LeadError, format::Lead};
/// assert_eq!(Lead::decode(&[0u8; 10]), Err(LeadError::TooShort { len: 10 }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LeadError {
    /// Fewer bytes than a lead.
    #[error(
        "file is only {len} bytes long, shorter than the {}-byte lead",
        super::LEAD_LEN
    )]
    TooShort {
        /// Bytes available.
        len: usize,
    },
    /// The first 8 bytes are not the archive magic.
    #[error("bad magic: not an nc3pack archive")]
    Magic,
    /// The lead's CRC does not match.
    #[error("checksum mismatch")]
    Checksum,
    /// A format major version this reader does not read.
    #[error(
        "format version {major}.{minor} is not supported (this nc3pack reads {}.x)",
        super::VERSION_MAJOR
    )]
    Version {
        /// Major version stored.
        major: u16,
        /// Minor version stored.
        minor: u16,
    },
    /// Flags this reader does not know are set (or the block sizes flag in a 1.0 lead).
    #[error("unknown flags {flags:#x} in a version 1.{minor} lead (this nc3pack knows flag 0x1, block sizes, from version 1.1; in a compact lead 0x2, compact, from 1.2, and 0x4, header dictionary, from 1.3)")]
    Flags {
        /// The flags stored.
        flags: u32,
        /// The minor version stored.
        minor: u16,
    },
    /// The block size is outside the allowed range.
    #[error(
        "block size {block_size} is outside {}..={}",
        super::MIN_BLOCK_SIZE,
        super::MAX_BLOCK_SIZE
    )]
    BlockSize {
        /// The block size stored.
        block_size: u32,
    },
    /// The header length exceeds [`crate::format::MAX_HEADER_LEN`].
    #[error("header length {header_len} exceeds {} bytes (1 GiB), the largest header an archive may carry", super::MAX_HEADER_LEN)]
    HeaderTooLong {
        /// The header length stored.
        header_len: u64,
    },
    /// The header is longer than the original file.
    #[error("header length {header_len} exceeds the original file length {file_len}")]
    HeaderPastFile {
        /// The header length stored.
        header_len: u64,
        /// The original file length stored.
        file_len: u64,
    },
    /// A compact archive (format 1.2) longer than a reader expands in memory.
    #[error(
        "compact archive of {len} bytes is longer than {max} bytes, the most a compact archive may be"
    )]
    CompactTooLong {
        /// The archive's length.
        len: u64,
        /// The most a compact archive may be (`crate::format::compact::COMPACT_MAX`).
        max: u64,
    },
}

/// What is wrong with a frame header ([`crate::format::FrameHeader::decode`]).
///
/// ```
/// use nc3pack::format::{error::FrameHeaderError, FrameHeader};
/// assert_eq!(FrameHeader::decode(&[0u8; 36]), Err(FrameHeaderError::NoMagic));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameHeaderError {
    /// Fewer bytes than a frame header.
    #[error("frame header is cut short")]
    Short,
    /// No sync magic where the frame should start.
    #[error("no frame sync magic")]
    NoMagic,
    /// The frame header's CRC does not match.
    #[error("frame header checksum mismatch")]
    HeaderChecksum,
    /// A codec id this reader does not know.
    #[error("unknown codec id {id}")]
    UnknownCodec {
        /// The id stored.
        id: u8,
    },
    /// A filter id this reader does not know.
    #[error("unknown filter id {id}")]
    UnknownFilter {
        /// The id stored.
        id: u8,
    },
    /// The stored length exceeds the decoded length (an encoder stores raw instead).
    #[error("stored length {stored} exceeds decoded length {decoded}")]
    LengthMismatch {
        /// Stored (payload) length.
        stored: u32,
        /// Decoded length.
        decoded: u32,
    },
}

/// What is wrong with one index entry ([`crate::format::IndexEntry::check`]).
///
/// ```
/// use nc3pack::{error::EntryError, format::{Codec, Filter, IndexEntry}};
/// let e = IndexEntry { offset: 0, stored_len: 0, codec: Codec::Constant, filter: Filter::None, flags: 0 };
/// assert_eq!(e.check(4), Err(EntryError::ConstantWithoutFlag));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EntryError {
    /// Codec constant, no payload, but not flagged constant.
    #[error("constant block entry without the constant flag")]
    ConstantWithoutFlag,
    /// A combination of flags and fields no writer makes.
    #[error("entry with flags 0x{flags:04x}, codec {}, filter {}, {stored_len} bytes stored is not valid", codec.name(), filter.name())]
    Invalid {
        /// Flags.
        flags: u16,
        /// Codec.
        codec: Codec,
        /// Filter.
        filter: Filter,
        /// Stored length.
        stored_len: u32,
    },
    /// The frame lies (partly) outside the data section, or is longer than a block.
    #[error("points outside the data section")]
    OutsideData,
}

/// What is wrong with an archive's index section ([`crate::format::decode_index`]), as read
/// by [`crate::Archive`].
///
/// ```
/// use nc3pack::{error::IndexError, format::decode_index};
/// assert_eq!(decode_index(b"N3ZX", 0), Err(IndexError::NoMagic));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// No index magic.
    #[error("no index magic")]
    NoMagic,
    /// The index section's CRC (in the footer) does not match.
    #[error("checksum mismatch")]
    Checksum,
    /// The number of block entries is not the one the layout needs.
    #[error("index has {found} entries, the layout needs {expected}")]
    Count {
        /// Block entries the index declares.
        found: u64,
        /// Block entries the layout needs.
        expected: u64,
    },
    /// The section's length does not match its entry counts.
    #[error("index length {len} does not match its {blocks} block entries and {constants_frames} constants frames")]
    Length {
        /// Section length.
        len: usize,
        /// Block entries declared.
        blocks: u64,
        /// Constants frame entries declared.
        constants_frames: u32,
    },
    /// An entry with a codec id this reader does not know.
    #[error("unknown codec id {id}")]
    UnknownCodec {
        /// The id stored.
        id: u8,
    },
    /// An entry with a filter id this reader does not know.
    #[error("unknown filter id {id}")]
    UnknownFilter {
        /// The id stored.
        id: u8,
    },
    /// A constants frame entry with flags, or a codec or filter such a frame cannot have.
    #[error("constants frame entry with flags 0x{flags:04x}, codec {} and filter {}", codec.name(), filter.name())]
    ConstantsEntry {
        /// Flags.
        flags: u16,
        /// Codec.
        codec: Codec,
        /// Filter.
        filter: Filter,
    },
    /// A block's entry is not valid.
    #[error("entry for block {block} of {stream}: {source}")]
    Entry {
        /// Block number.
        block: u64,
        /// The stream's name (`variable "x"`, `residual bytes`, ...).
        stream: String,
        /// What is wrong.
        source: EntryError,
    },
    /// A constants frame's entry points outside the data section.
    #[error("entry for constants frame {k} points outside the data section")]
    ConstantsFrameOutside {
        /// Constants frame number.
        k: usize,
    },
}

/// What is wrong with an archive's footer ([`crate::format::Footer::decode`]) or where it says
/// the index is.
///
/// ```
/// use nc3pack::{error::FooterError, format::Footer};
/// assert_eq!(Footer::decode(&[0u8; 8]), Err(FooterError::Short));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FooterError {
    /// Fewer bytes than a footer.
    #[error("footer is cut short")]
    Short,
    /// The archive ends before it has room for a footer.
    #[error("the archive ends before its footer (truncated? try `nc3pack reindex`)")]
    Truncated,
    /// The last 4 bytes are not the footer magic.
    #[error("no footer magic at the end of the file (truncated archive? try `nc3pack reindex`)")]
    NoMagic,
    /// The footer's CRC does not match.
    #[error("footer checksum mismatch")]
    Checksum,
    /// Footer flags this reader does not know.
    #[error("unknown footer flags 0x{flags:08x}")]
    Flags {
        /// The flags stored.
        flags: u32,
    },
    /// A compact footer (format 1.2) whose checksum does not match the index and index length
    /// it covers: one of them is damaged.
    #[error("the compact footer's checksum 0x{stored:08x} does not match its index and index length (0x{computed:08x}): the footer or the index is damaged (offset in the compact archive; try `nc3pack reindex`)")]
    CompactChecksum {
        /// The checksum stored.
        stored: u32,
        /// The checksum of the bytes it covers.
        computed: u32,
    },
    /// A compact footer whose index length puts the index before the end of the lead.
    #[error("the compact footer's index length {index_len} puts the index before the end of the lead at byte {lead_end} (offset in the compact archive; try `nc3pack reindex`)")]
    CompactIndexLength {
        /// The index length stored.
        index_len: u64,
        /// Where the compact lead ends.
        lead_end: u64,
    },
    /// A compact archive whose last 4 bytes are not the footer magic.
    #[error("no footer magic at the end of the compact archive (truncated archive? try `nc3pack reindex`)")]
    CompactNoMagic,
    /// The index the footer points to does not lie between the data section and the footer, or
    /// is too short for the layout's blocks.
    #[error("index at {index_offset} of {index_len} bytes does not fit the archive (at least {min_len} bytes ending at {footer_at} expected)")]
    IndexPlacement {
        /// Index offset stored.
        index_offset: u64,
        /// Index length stored.
        index_len: u64,
        /// Least length the layout's blocks need.
        min_len: u64,
        /// Offset of the footer (where the index must end).
        footer_at: u64,
    },
}

/// What is wrong with a constants frame ([`crate::format::ConstantRun::decode_all`],
/// [`crate::Archive::constant_runs`]).
///
/// ```
/// use nc3pack::{error::ConstantsError, format::ConstantRun};
/// assert_eq!(ConstantRun::decode_all(&[0u8; 33]), Err(ConstantsError::Length { len: 33 }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConstantsError {
    /// The decoded table is not whole run records.
    #[error(
        "constants table of {len} bytes is not whole {}-byte records",
        super::RUN_LEN
    )]
    Length {
        /// Decoded length.
        len: usize,
    },
    /// A run record with reserved bytes set, a count of 0 or a run past block 2^64.
    #[error("constants table record {index} is not valid")]
    Record {
        /// Record number in the table.
        index: usize,
    },
    /// No constants frame of this number.
    #[error("there is no constants frame {k}")]
    NoSuchFrame {
        /// The number asked for.
        k: usize,
    },
    /// The frame is not the constants frame the index entry describes.
    #[error("frame says stream {stream} block {block} ({stored} bytes stored, {decoded} decoded, codec {}), the index expects constants frame {k} ({expect_stored} stored, at most {max} decoded, codec {})", codec.name(), expect_codec.name())]
    Mismatch {
        /// Stream id in the frame header.
        stream: u32,
        /// Block in the frame header.
        block: u64,
        /// Stored length in the frame header.
        stored: u32,
        /// Decoded length in the frame header.
        decoded: u32,
        /// Codec in the frame header.
        codec: Codec,
        /// The constants frame's number.
        k: usize,
        /// Stored length in the index entry.
        expect_stored: u32,
        /// Largest decoded length of a constants frame.
        max: usize,
        /// Codec in the index entry.
        expect_codec: Codec,
    },
}

/// What is wrong with a block sizes frame (format 1.1, [`crate::format::BlockSizes`]).
///
/// ```
/// use nc3pack::format::{error::BlockSizesError, BlockSizes};
/// assert_eq!(BlockSizes::decode(&[1, 2, 3], 64), Err(BlockSizesError::Length { len: 3 }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BlockSizesError {
    /// The frame after the header frame is not a block sizes frame for this header.
    #[error("the lead says a block sizes frame follows the header frame, but the frame there has stream id {stream:#x}, block {block} and {decoded} decoded bytes (expected stream id 0xfffffff9, block 0, esize 1, codec none or zstd, no filter, and 4 bytes for each of the {nvars} variables)")]
    NotBlockSizesFrame {
        /// Stream id found.
        stream: u32,
        /// Block number found.
        block: u64,
        /// Decoded length found.
        decoded: u32,
        /// Variables of the header.
        nvars: u64,
    },
    /// The decoded table is not whole 4-byte entries.
    #[error("block sizes table of {len} bytes is not whole 4-byte entries")]
    Length {
        /// Decoded length.
        len: usize,
    },
    /// A variable's block size is out of range.
    #[error(
        "variable id {var}: block size {block_size} is outside {}..={}",
        super::MIN_BLOCK_SIZE,
        super::MAX_BLOCK_SIZE
    )]
    OutOfRange {
        /// The variable id.
        var: u64,
        /// The block size stored.
        block_size: u32,
    },
}

/// What the cheap check of an archive's ends ([`check_ends`](crate::collection::manifest::check_ends)) found wrong.
///
/// ```
/// use nc3pack::testing::manifest::EndsError;
/// assert_eq!(EndsError::TooShort { len: 9 }.to_string(), "9 bytes, too short for an archive");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EndsError {
    /// Opening, inspecting or reading the archive failed.
    #[error("{op}: {source}")]
    Io {
        /// What was being done: "open", "stat", "read".
        op: &'static str,
        /// The I/O error.
        source: std::io::Error,
    },
    /// It is not a regular file.
    #[error("not a regular file")]
    NotRegularFile,
    /// The archive is not as long as the manifest recorded.
    #[error("not the recorded {recorded} bytes long")]
    Length {
        /// The recorded length.
        recorded: u64,
    },
    /// Too short to hold a lead and a footer.
    #[error("{len} bytes, too short for an archive")]
    TooShort {
        /// Its length.
        len: u64,
    },
    /// The lead does not decode.
    #[error("lead: {0}")]
    Lead(LeadError),
    /// The footer does not decode.
    #[error("footer: {0}")]
    Footer(FooterError),
    /// The footer's index does not end where the footer starts.
    #[error("footer: the index does not end where the footer starts")]
    IndexEnd,
    /// The archive restores a file of another size.
    #[error("the archive restores {restores} bytes, the input has {size}")]
    Size {
        /// What the lead records.
        restores: u64,
        /// The input's size.
        size: u64,
    },
    /// The archive restores a file with another hash.
    #[error("the archive's hash {found:032x} is not the recorded {recorded:032x}")]
    Hash {
        /// What the lead records.
        found: u128,
        /// What the manifest records.
        recorded: u128,
    },
}
