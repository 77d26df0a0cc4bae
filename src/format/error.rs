//! Errors of the archive format's structures: what is wrong with a lead, a frame, an index
//! entry or section, a footer or a constants frame, and why an encoder cannot be made. Pure
//! values (no path, no I/O): [`crate::Error`] adds the file and the part.

use super::{Codec, Filter};

/// What is wrong with an archive's lead ([`crate::format::Lead::decode`]).
///
/// ```
/// use nc3pack::{error::LeadError, format::Lead};
/// assert_eq!(Lead::decode(&[0u8; 10]), Err(LeadError::TooShort { len: 10 }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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
    #[error("unknown flags {flags:#x} in a version 1.{minor} lead (this nc3pack knows flag 0x1, block sizes, from version 1.1)")]
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
}

/// What is wrong with a frame: its header ([`crate::format::FrameHeader::decode`]) or its
/// payload ([`crate::codec::decode_payload`]).
///
/// ```
/// use nc3pack::{error::FrameError, format::FrameHeader};
/// assert_eq!(FrameHeader::decode(&[0u8; 36]), Err(FrameError::NoMagic));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
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
    /// The payload given is not as long as the frame header says.
    #[error("payload is {got} bytes, the frame says {stored}")]
    PayloadLength {
        /// Bytes given.
        got: usize,
        /// Stored length in the frame header.
        stored: u32,
    },
    /// The payload's CRC does not match.
    #[error("payload checksum mismatch")]
    PayloadChecksum,
    /// A raw (codec none) payload whose length is not the decoded length.
    #[error("raw payload is {got} bytes, the frame says {decoded} decoded")]
    RawLength {
        /// Payload length.
        got: usize,
        /// Decoded length in the frame header.
        decoded: u32,
    },
    /// A constant payload that is not one element of a length dividing the block.
    #[error(
        "constant block of {decoded} bytes with a {value_len}-byte value and element size {esize}"
    )]
    Constant {
        /// Decoded length in the frame header.
        decoded: u32,
        /// Payload length.
        value_len: usize,
        /// Element size in the frame header.
        esize: u16,
    },
    /// zstd refused the payload (its message).
    #[error("zstd: {0}")]
    Zstd(String),
    /// DEFLATE refused the payload (its message).
    #[error("deflate: {0}")]
    Deflate(String),
    /// A pco payload that pco refuses or that does not decode to exactly the block (what is
    /// wrong).
    #[error("pco: {0}")]
    Pco(String),
    /// An lzma payload that is not one .xz stream decoding to exactly the block.
    #[error("lzma: {0}")]
    Lzma(LzmaError),
    /// The payload decoded to another length than the frame says.
    #[error("decoded to {got} bytes, the frame says {decoded}")]
    DecodedLength {
        /// Bytes decoded.
        got: usize,
        /// Decoded length in the frame header.
        decoded: u32,
    },
    /// A DEFLATE stream that ends early, runs past the payload or decodes to another length.
    #[error("deflate stream does not decode to exactly {decoded} bytes")]
    DeflateLength {
        /// Decoded length in the frame header.
        decoded: u32,
    },
    /// A filtered block whose length is not whole elements.
    #[error("filter element size {esize} does not divide the block length {decoded}")]
    FilterElementSize {
        /// Element size in the frame header.
        esize: u16,
        /// Decoded length in the frame header.
        decoded: u32,
    },
    /// A `lorenzo` frame whose element size is not 4 or 8.
    #[error("lorenzo filter with element size {esize} (it is defined for 4 and 8)")]
    LorenzoElementSize {
        /// Element size in the frame header.
        esize: u16,
    },
    /// A `lorenzo` frame whose payload is too short to hold the row length.
    #[error("lorenzo payload of {stored} bytes has no 4-byte row length")]
    LorenzoNoRow {
        /// Stored (payload) length.
        stored: u32,
    },
    /// A `lorenzo` frame whose row length is 0.
    #[error("lorenzo row length 0")]
    LorenzoZeroRow,
    /// A `plane` frame whose element size is not 2, 4 or 8.
    #[error("plane filter with element size {esize} (it is defined for 2, 4 and 8)")]
    PlaneElementSize {
        /// Element size in the frame header.
        esize: u16,
    },
    /// A `plane` frame with a codec other than pco.
    #[error("plane filter with codec {} (plane is defined with codec pco only)", codec.name())]
    PlaneCodec {
        /// Codec in the frame header.
        codec: Codec,
    },
    /// A `plane` frame whose payload is too short to hold the 9-byte prefix.
    #[error(
        "plane payload of {stored} bytes has no 9-byte prefix (row length, map, weights, shift)"
    )]
    PlanePrefix {
        /// Stored (payload) length.
        stored: usize,
    },
    /// A `plane` frame whose row length is 0.
    #[error("plane row length 0")]
    PlaneZeroRow,
    /// A `plane` frame whose map byte is not 0 (integers) or 1 (floats).
    #[error("plane map byte {map} (0 integers, 1 floats)")]
    PlaneMap {
        /// The map byte.
        map: u8,
    },
    /// A `plane` frame whose shift exceeds 6.
    #[error("plane shift {shift} (at most 6)")]
    PlaneShift {
        /// The shift byte.
        shift: u8,
    },
    /// A `mask` frame whose element size is not 2, 4 or 8.
    #[error("mask filter with element size {esize} (it is defined for 2, 4 and 8)")]
    MaskElementSize {
        /// Element size in the frame header.
        esize: u16,
    },
    /// A `mask` frame with a codec other than pco.
    #[error("mask filter with codec {} (mask is defined with codec pco only)", codec.name())]
    MaskCodec {
        /// Codec in the frame header.
        codec: Codec,
    },
    /// A `mask` frame whose payload is too short to hold the fill element and the mask's
    /// length.
    #[error("mask payload of {stored} bytes has no fill element and mask length")]
    MaskPrefix {
        /// Stored (payload) length.
        stored: usize,
    },
    /// A `mask` frame whose mask runs past the payload.
    #[error("mask of {len} bytes runs past the payload of {stored} bytes")]
    MaskLength {
        /// The mask's length in the prefix.
        len: u32,
        /// Stored (payload) length.
        stored: usize,
    },
    /// A `mask` frame whose mask is not a zstd frame of the block's bitmap.
    #[error("mask bitmap: {0}")]
    MaskBits(String),
    /// A `mask` frame whose bitmap marks every element as the fill (no frame needs that: such
    /// a block is a constant block).
    #[error("mask marks all {n} elements as the fill value")]
    MaskAllFill {
        /// Elements in the block.
        n: usize,
    },
    /// A `fit` frame whose element size is not 2, 4 or 8.
    #[error("fit filter with element size {esize} (it is defined for 2, 4 and 8)")]
    FitElementSize {
        /// Element size in the frame header.
        esize: u16,
    },
    /// A `fit` frame with a codec other than pco.
    #[error("fit filter with codec {} (fit is defined with codec pco only)", codec.name())]
    FitCodec {
        /// Codec in the frame header.
        codec: Codec,
    },
    /// A `fit` frame whose payload is too short for its prefix (the head, then the taps its
    /// head counts).
    #[error("fit payload of {stored} bytes has no {need}-byte prefix (map, shift, flags, taps)")]
    FitPrefix {
        /// Stored (payload) length.
        stored: usize,
        /// The prefix's length as far as it was read.
        need: usize,
    },
    /// A `fit` frame whose map byte is not 0 (integers) or 1 (floats).
    #[error("fit map byte {map} (0 integers, 1 floats)")]
    FitMap {
        /// The map byte.
        map: u8,
    },
    /// A `fit` frame whose shift exceeds 15.
    #[error("fit shift {shift} (at most 15)")]
    FitShift {
        /// The shift byte.
        shift: u8,
    },
    /// A `fit` frame whose flags set a bit other than bit 0 (a fill section).
    #[error("fit flags {flags:#04x} (only bit 0, a fill section, is defined)")]
    FitFlags {
        /// The flags byte.
        flags: u8,
    },
    /// A `fit` frame with more than 32 taps.
    #[error("fit prefix with {count} taps (at most 32)")]
    FitTaps {
        /// The tap count.
        count: u8,
    },
    /// A `fit` tap whose offset is below 2.
    #[error("fit tap {tap} has offset {offset} (at least 2)")]
    FitOffset {
        /// The tap's position in the prefix, from 0.
        tap: usize,
        /// Its offset.
        offset: u32,
    },
    /// A `refs` frame whose element size is not 4 or 8.
    #[error("refs filter with element size {esize} (it is defined for 4 and 8)")]
    RefsElementSize {
        /// Element size in the frame header.
        esize: u16,
    },
    /// A `refs` frame with a codec it does not go with (constant or pco).
    #[error("refs filter with codec {} (refs goes with none, zstd, deflate and lzma)", codec.name())]
    RefsCodec {
        /// Codec in the frame header.
        codec: Codec,
    },
    /// A `refs` frame whose payload is too short to hold the table's entry count.
    #[error("refs payload of {stored} bytes has no 4-byte table entry count")]
    RefsNoCount {
        /// Stored (payload) length.
        stored: u32,
    },
    /// A `refs` frame whose filtered bytes are wrong (see [`RefsError`]).
    #[error("refs: {0}")]
    Refs(RefsError),
    /// A `context` (codec 6) frame with a filter (its frames have none).
    #[error("filter {} with codec context (its frames have filter none)", filter.name())]
    ContextFilter {
        /// Filter in the frame header.
        filter: Filter,
    },
    /// A `context` (codec 6) payload that is wrong (see [`ContextError`]).
    #[error("context: {0}")]
    Context(#[from] ContextError),
    /// A buffer of `len` bytes that decoding the frame needs cannot be allocated.
    #[error("cannot allocate {len} bytes of memory to decode the frame")]
    NoMemory {
        /// Bytes asked for.
        len: u64,
    },
    /// The netCDF header frame's decoded length cannot be allocated.
    #[error("cannot allocate {len} bytes of memory for the header")]
    HeaderNoMemory {
        /// Decoded length in the frame header.
        len: u32,
    },
}

/// What is wrong with the filtered bytes of a `refs` (filter 7) frame.
///
/// ```
/// use nc3pack::format::error::RefsError;
/// assert_eq!(
///     RefsError::Reference { element: 4, reference: 9, entries: 2 }.to_string(),
///     "element 4 refers 9 entries back, but the table has 2 so far"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefsError {
    /// An element size other than 4 or 8.
    #[error("element size {esize} (refs is defined for 4 and 8)")]
    ElementSize {
        /// The element size.
        esize: usize,
    },
    /// Filtered bytes of another length than 4 n + e d + t (n elements of e bytes, t trailing
    /// bytes, d table entries).
    #[error(
        "{got} filtered bytes do not hold {elements} references and a table of {entries} entries"
    )]
    Length {
        /// Filtered bytes.
        got: usize,
        /// Table entries the frame states.
        entries: usize,
        /// Elements of the block.
        elements: usize,
    },
    /// More table entries than the block has elements.
    #[error("a table of {entries} entries for {elements} elements")]
    Entries {
        /// Table entries the frame states.
        entries: usize,
        /// Elements of the block.
        elements: usize,
    },
    /// A reference to an entry before the table's first.
    #[error(
        "element {element} refers {reference} entries back, but the table has {entries} so far"
    )]
    Reference {
        /// The element's index in the block.
        element: usize,
        /// The reference.
        reference: u32,
        /// Table entries before the element.
        entries: usize,
    },
    /// More zero references (new entries) than the table has.
    #[error("more new values than the table's {entries} entries")]
    TableShort {
        /// Table entries the frame states.
        entries: usize,
    },
    /// Fewer zero references than table entries.
    #[error("{used} new values, but the table has {entries} entries")]
    TableLong {
        /// Zero references.
        used: usize,
        /// Table entries the frame states.
        entries: usize,
    },
}

/// What is wrong with a `context` (codec 6) payload.
///
/// ```
/// use nc3pack::format::error::ContextError;
/// assert_eq!(
///     ContextError::BitLength { element: 7, bits: 40, width: 32 }.to_string(),
///     "element 7 has a residual of 40 bits (numbers of 32 bits)"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContextError {
    /// An element size other than 2, 4 or 8.
    #[error("element size {esize} (context is defined for 2, 4 and 8)")]
    ElementSize {
        /// The element size.
        esize: usize,
    },
    /// A block that is not a whole number of elements.
    #[error("{len} bytes are not whole elements of {esize} bytes")]
    PartialElement {
        /// Decoded length.
        len: usize,
        /// The element size.
        esize: usize,
    },
    /// A payload shorter than its 10-byte prefix.
    #[error("payload of {len} bytes has no 10-byte prefix")]
    Prefix {
        /// Payload length.
        len: usize,
    },
    /// A number type byte other than 0 (integers) or 1 (floats).
    #[error("number type {byte} (0: integers, 1: floats)")]
    NumberType {
        /// The byte.
        byte: u8,
    },
    /// A predictor byte other than 0, 1 or 2.
    #[error("predictor {byte} (0: left, 1: mean, 2: lorenzo)")]
    Predictor {
        /// The byte.
        byte: u8,
    },
    /// A row length of 0.
    #[error("row length 0")]
    ZeroRow,
    /// A range coder stream length beyond the payload.
    #[error("range coder stream of {stated} bytes, but {left} bytes follow the prefix")]
    RangeLength {
        /// Stated length.
        stated: usize,
        /// Bytes after the prefix.
        left: usize,
    },
    /// A range coder stream that ends before the block does.
    #[error("range coder stream of {len} bytes ends before the block")]
    RangeShort {
        /// Stream length.
        len: usize,
    },
    /// A range coder stream that does not start with a 0 byte.
    #[error("range coder stream starts with {byte} (not 0)")]
    RangeFirstByte {
        /// The first byte.
        byte: u8,
    },
    /// A range coder stream with bytes the block does not use.
    #[error("the block uses {used} of the range coder stream's {len} bytes")]
    RangeTrailing {
        /// Bytes used.
        used: usize,
        /// Stream length.
        len: usize,
    },
    /// A residual bit length greater than the numbers' width.
    #[error("element {element} has a residual of {bits} bits (numbers of {width} bits)")]
    BitLength {
        /// The element's index in the block.
        element: usize,
        /// The decoded bit length.
        bits: u32,
        /// The numbers' width in bits.
        width: u32,
    },
    /// A low-bits stream that ends before the block does.
    #[error("low-bits stream of {len} bytes ends before the block")]
    RawShort {
        /// Stream length.
        len: usize,
    },
    /// A low-bits stream with bytes (or nonzero padding bits) the block does not use.
    #[error(
        "the block uses {used} of the low-bits stream's {len} bytes (or its padding is not zero)"
    )]
    RawTrailing {
        /// Bytes used.
        used: usize,
        /// Stream length.
        len: usize,
    },
}

/// What is wrong with an lzma (codec 5) payload.
///
/// ```
/// use nc3pack::format::error::LzmaError;
/// assert_eq!(
///     LzmaError::Trailing { extra: 3 }.to_string(),
///     "3 bytes follow the end of the .xz stream"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LzmaError {
    /// liblzma refused the payload (its message: not an .xz stream, corrupt data, ...).
    #[error("{0}")]
    Xz(String),
    /// The stream needs a dictionary larger than a block of this length allows.
    #[error("the stream needs a dictionary larger than {limit} bytes (the most a block of its length may use)")]
    Dictionary {
        /// The largest dictionary allowed, in bytes.
        limit: u64,
    },
    /// The payload ends before the stream does.
    #[error("truncated .xz stream: the payload ends before the stream does ({got} of {decoded} bytes decoded)")]
    Truncated {
        /// Bytes decoded when the payload ran out.
        got: usize,
        /// Decoded length in the frame header.
        decoded: usize,
    },
    /// The stream decodes to more bytes than the block has.
    #[error("the .xz stream decodes to more than the frame's {decoded} bytes")]
    TooLong {
        /// Decoded length in the frame header.
        decoded: usize,
    },
    /// The stream ends before the block is complete.
    #[error("the .xz stream decodes to {got} bytes, the frame says {decoded}")]
    Short {
        /// Bytes decoded.
        got: usize,
        /// Decoded length in the frame header.
        decoded: usize,
    },
    /// Bytes follow the end of the stream inside the payload.
    #[error("{extra} bytes follow the end of the .xz stream")]
    Trailing {
        /// How many.
        extra: usize,
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
    /// The frame itself is damaged.
    #[error(transparent)]
    Frame(#[from] FrameError),
}

/// Why an encoder cannot be made (when the codec level is out of range).
///
/// ```
/// use nc3pack::{error::CodecError, format::Codec};
/// let e = CodecError::Level { codec: Codec::Deflate, level: 12, min: 0, max: 9 };
/// assert_eq!(e.to_string(), "level 12 is outside 0..=9 for codec deflate");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// The level is outside the codec's range.
    #[error("level {level} is outside {min}..={max} for codec {}", codec.name())]
    Level {
        /// The codec.
        codec: Codec,
        /// The level asked for.
        level: i32,
        /// Least level.
        min: i32,
        /// Greatest level.
        max: i32,
    },
    /// zstd could not make a compression context (its message).
    #[error("zstd: {0}")]
    Zstd(String),
}

/// What is wrong with a block sizes frame (format 1.1, [`crate::format::BlockSizes`]).
///
/// ```
/// use nc3pack::format::{error::BlockSizesError, BlockSizes};
/// assert_eq!(BlockSizes::decode(&[1, 2, 3], 64), Err(BlockSizesError::Length { len: 3 }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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

/// What the cheap check of an archive's ends ([`check_ends`](crate::__private::manifest::check_ends)) found wrong.
///
/// ```
/// use nc3pack::__private::manifest::EndsError;
/// assert_eq!(EndsError::TooShort { len: 9 }.to_string(), "9 bytes, too short for an archive");
/// ```
#[derive(Debug, thiserror::Error)]
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
