//! Error types of nc3pack.
//!
//! Every error names what is wrong precisely enough for a one-line message: the file, the field
//! or part of the format, and the byte offset where it applies. Library functions that work on
//! bytes return the narrower [`HeaderError`]; the file-level functions wrap it in [`Error`] with
//! the path.

use crate::format::{Codec, Filter};
use std::path::PathBuf;

/// A problem found while parsing a netCDF-3 header from bytes.
///
/// ```
/// use nc3pack::nc3::Header;
/// let err = Header::parse(b"CDX\x01", 4).unwrap_err();
/// assert!(err.to_string().contains("byte 0"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} at byte {offset}")]
pub struct HeaderError {
    /// Byte offset in the file where the offending field starts.
    pub offset: u64,
    /// What is wrong, naming the field.
    pub what: String,
}

impl HeaderError {
    /// Builds an error at `offset` with a description naming the field.
    pub fn new(offset: u64, what: impl Into<String>) -> Self {
        HeaderError {
            offset,
            what: what.into(),
        }
    }
}

/// Any error nc3pack reports.
///
/// The `Display` form is one line that starts with the file it concerns.
///
/// ```
/// use nc3pack::Error;
/// let e = Error::OutputExists { path: "out.nc3z".into() };
/// assert_eq!(e.to_string(), "out.nc3z: output exists (use --force to overwrite)");
/// ```
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operating-system I/O error on a file.
    #[error("{}: {op}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done ("open", "read", "write", ...).
        op: &'static str,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The input is not a netCDF-3 file at all (bad magic, HDF5, empty).
    #[error("{}: not a netCDF-3 file: {reason}", path.display())]
    NotNetcdf3 {
        /// The file.
        path: PathBuf,
        /// Why, e.g. "HDF5 signature (netCDF-4 file)".
        reason: String,
    },
    /// The netCDF-3 header is malformed.
    #[error("{}: invalid netCDF-3 header at byte {}: {}", path.display(), source.offset, source.what)]
    Header {
        /// The file.
        path: PathBuf,
        /// Field and offset.
        source: HeaderError,
    },
    /// The header parses but the data layout it declares is impossible for this file.
    #[error("{}: invalid netCDF-3 data layout: {source}", path.display())]
    Layout {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the variable.
        source: LayoutError,
    },
    /// An archive structure (lead, header frame, index, footer) is damaged or malformed.
    #[error("{}: damaged archive: {part} at byte {offset}: {source}", path.display())]
    Archive {
        /// The archive file.
        path: PathBuf,
        /// Which part: "lead", "netCDF header", "index", "footer", ...
        part: &'static str,
        /// Byte offset of the part in the archive.
        offset: u64,
        /// What is wrong.
        source: ArchiveError,
    },
    /// A block frame is damaged or does not match the index.
    #[error("{}: damaged block {block} of {var} at byte {offset}: {source}", path.display())]
    Block {
        /// The archive file.
        path: PathBuf,
        /// Variable name (or "residual bytes").
        var: String,
        /// Block number within the variable.
        block: u64,
        /// Byte offset of the frame in the archive.
        offset: u64,
        /// What is wrong.
        source: BlockError,
    },
    /// The restored file does not hash to the value recorded at pack time.
    #[error("{}: restored data does not match the original's hash (stored {expected:032x}, got {actual:032x})", path.display())]
    HashMismatch {
        /// The archive file.
        path: PathBuf,
        /// Hash stored in the archive.
        expected: u128,
        /// Hash of what was restored.
        actual: u128,
    },
    /// The output file exists and overwriting was not asked for.
    #[error("{}: output exists (use --force to overwrite)", path.display())]
    OutputExists {
        /// The output path.
        path: PathBuf,
    },
    /// A read asked for something the variable does not have.
    #[error("{}: reading {var:?}: {source}", path.display())]
    Slab {
        /// The file.
        path: PathBuf,
        /// The variable name as asked for.
        var: String,
        /// What is wrong.
        source: crate::read::slab::SlabError,
    },
    /// A file that must be read at any offset is a pipe, FIFO, device or socket, which can only
    /// be read in order (`nc3pack pack` reads such an input as a stream instead).
    #[error("{}: is {kind}, not a regular file: {op} needs a regular file (save it to one first)", path.display())]
    NotSeekable {
        /// The file.
        path: PathBuf,
        /// What it is: "a pipe", "a character device", ...
        kind: &'static str,
        /// What needed to seek: "reading an archive", "verify", ...
        op: &'static str,
    },
    /// The output cannot be written where asked (it is the input, or a directory).
    #[error("{}: {what}", path.display())]
    Refused {
        /// The output path.
        path: PathBuf,
        /// Why.
        what: String,
    },
    /// An option value is out of range (a usage error: the command line exits 2).
    #[error("invalid option: {0}")]
    Option(String),
    /// A thread could not be started (the system's limit on threads or memory was reached).
    #[error("{}: {source}; try fewer threads (-j)", path.display())]
    Thread {
        /// The file being worked on.
        path: PathBuf,
        /// Which thread, and the operating system's error.
        source: crate::parallel::SpawnError,
    },
    /// A bug in nc3pack (a worker thread stopped or panicked).
    #[error("internal error: {0}")]
    Internal(String),
}

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
        crate::format::LEAD_LEN
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
        crate::format::VERSION_MAJOR
    )]
    Version {
        /// Major version stored.
        major: u16,
        /// Minor version stored.
        minor: u16,
    },
    /// The reserved flags are set.
    #[error("reserved flags are not zero")]
    Flags {
        /// The flags stored.
        flags: u32,
    },
    /// The block size is outside the allowed range.
    #[error(
        "block size {block_size} is outside {}..={}",
        crate::format::MIN_BLOCK_SIZE,
        crate::format::MAX_BLOCK_SIZE
    )]
    BlockSize {
        /// The block size stored.
        block_size: u32,
    },
    /// The header length exceeds [`crate::format::MAX_HEADER_LEN`].
    #[error("header length {header_len} exceeds {} bytes (1 GiB), the largest header an archive may carry", crate::format::MAX_HEADER_LEN)]
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
/// payload ([`crate::format::codec::decode_payload`]).
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
    /// The netCDF header frame's decoded length cannot be allocated.
    #[error("cannot allocate {len} bytes of memory for the header")]
    HeaderNoMemory {
        /// Decoded length in the frame header.
        len: u32,
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
    #[error("index length {len} does not match its {blocks} block entries and {tables} constants frames")]
    Length {
        /// Section length.
        len: usize,
        /// Block entries declared.
        blocks: u64,
        /// Constants frame entries declared.
        tables: u32,
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
        crate::format::RUN_LEN
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

/// Why a netCDF-3 header's data layout is impossible for the file ([`crate::nc3::Layout`]), or
/// for the input being packed.
///
/// ```
/// use nc3pack::error::LayoutError;
/// let e = LayoutError::Overlap { var: "b".into(), other: "a".into(), begin: 100, end: 104 };
/// assert_eq!(e.to_string(), "variables \"a\" and \"b\" overlap (begin 100 < 104)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// A variable's size does not fit 64 bits.
    #[error("variable {var:?}: size overflows")]
    SizeOverflow {
        /// The variable.
        var: String,
    },
    /// The record size does not fit 64 bits.
    #[error("record size overflows")]
    RecordSizeOverflow,
    /// There are record variables, but a record holds no bytes.
    #[error("record variables hold no data (record size 0)")]
    EmptyRecords,
    /// More records than the file holds.
    #[error("{numrecs} records do not fit in the file ({fit} complete records end before byte {file_len})")]
    TooManyRecords {
        /// Records asked for.
        numrecs: u64,
        /// Complete records the file holds.
        fit: u64,
        /// File length.
        file_len: u64,
    },
    /// The variables' data add up to more than the file.
    #[error("variables take more bytes than the file has")]
    DataPastFile,
    /// A fixed variable begins before the previous one ends.
    #[error("variables {other:?} and {var:?} overlap (begin {begin} < {end})")]
    Overlap {
        /// The variable that begins too early.
        var: String,
        /// The variable before it.
        other: String,
        /// Where `var` begins.
        begin: u64,
        /// Where `other` ends.
        end: u64,
    },
    /// A fixed variable begins inside the header.
    #[error("variable {var:?} begins at byte {begin} inside the header (which ends at byte {header_end})")]
    InHeader {
        /// The variable.
        var: String,
        /// Where it begins.
        begin: u64,
        /// Where the header ends.
        header_end: u64,
    },
    /// A fixed variable's end does not fit 64 bits.
    #[error("variable {var:?} data at byte {begin} of {len} bytes extends past the end of the file ({file_len} bytes)")]
    EndOverflows {
        /// The variable.
        var: String,
        /// Where it begins.
        begin: u64,
        /// Its length.
        len: u64,
        /// File length.
        file_len: u64,
    },
    /// A fixed variable extends past the end of the file.
    #[error("variable {var:?} data [{begin}, {end}) extends past the end of the file ({file_len} bytes)")]
    PastEnd {
        /// The variable.
        var: String,
        /// Where it begins.
        begin: u64,
        /// Where it ends.
        end: u64,
        /// File length.
        file_len: u64,
    },
    /// The first record variable begins before the last fixed variable ends.
    #[error("record variable {var:?} begins at byte {begin}, before fixed variable {other:?} ends at byte {end}")]
    RecordBeforeFixed {
        /// The record variable.
        var: String,
        /// Where it begins.
        begin: u64,
        /// The fixed variable.
        other: String,
        /// Where that ends.
        end: u64,
    },
    /// The first record variable begins inside the header.
    #[error("record variable {var:?} begins at byte {begin} inside the header (which ends at byte {header_end})")]
    RecordInHeader {
        /// The record variable.
        var: String,
        /// Where it begins.
        begin: u64,
        /// Where the header ends.
        header_end: u64,
    },
    /// A record variable begins before the previous one's slab ends.
    #[error("record variables overlap: {var:?} begins at byte {begin} before byte {end}")]
    RecordOverlap {
        /// The variable that begins too early.
        var: String,
        /// Where it begins.
        begin: u64,
        /// Where the previous slab ends.
        end: u64,
    },
    /// A record variable's slab ends past 2^63.
    #[error("record variable {var:?} at byte {begin} of {slab} bytes a record overflows")]
    RecordOverflow {
        /// The variable.
        var: String,
        /// Where it begins.
        begin: u64,
        /// Bytes of its slab.
        slab: u64,
    },
    /// The record variables' slabs span more than a record.
    #[error("record variables span {span} bytes, more than the record size {recsize}")]
    RecordSpan {
        /// Bytes from the first slab's start to the last one's end.
        span: u64,
        /// The record size.
        recsize: u64,
    },
    /// A pack input ends inside a fixed variable's data.
    #[error(
        "variable {var:?} data at byte {begin} extends past the end of the input ({len} bytes)"
    )]
    InputEndsInVar {
        /// The variable.
        var: String,
        /// Where it begins.
        begin: u64,
        /// Bytes the input held.
        len: u64,
    },
    /// A streamed input ends inside its header.
    #[error("the input ends at byte {len}, inside its {header_len}-byte header")]
    InputEndsInHeader {
        /// Bytes the input held.
        len: u64,
        /// The header's length.
        header_len: u64,
    },
    /// A streamed input ends inside a variable's data.
    #[error(
        "variable {var:?} data [{begin}, {end}) extends past the end of the input ({len} bytes)"
    )]
    InputPastEnd {
        /// The variable.
        var: String,
        /// Where its data begins.
        begin: u64,
        /// Where its data ends.
        end: u64,
        /// Bytes the input held.
        len: u64,
    },
    /// A streamed input ends inside a record too large to buffer.
    #[error("the input ends at byte {len}, inside a record of {recsize} bytes: records over {} MiB are not buffered, so an incomplete one cannot be packed from a stream (pack the file instead)", max >> 20)]
    IncompleteRecord {
        /// Bytes the input held.
        len: u64,
        /// The record size.
        recsize: u64,
        /// Largest record buffered.
        max: u64,
    },
}

/// What is wrong with an archive structure, in [`Error::Archive`] (which adds the part and
/// offset).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArchiveError {
    /// The lead.
    #[error(transparent)]
    Lead(#[from] LeadError),
    /// A frame (the netCDF header frame's).
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// The index section.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// The footer.
    #[error(transparent)]
    Footer(#[from] FooterError),
    /// A constants frame.
    #[error(transparent)]
    Constants(#[from] ConstantsError),
    /// The original file's layout the lead and header declare is impossible (boxed: the
    /// largest variant, kept out of every other error's size).
    #[error("layout of the original file: {0}")]
    Layout(#[source] Box<LayoutError>),
    /// The original netCDF header does not parse.
    #[error(transparent)]
    Header(#[from] HeaderError),
    /// The archive is too short to hold a lead and a header frame.
    #[error("file is only {len} bytes long, too short for an archive")]
    TooShort {
        /// Archive length.
        len: u64,
    },
    /// The header frame runs past the end of the archive.
    #[error("frame of {stored} bytes does not fit in the {len}-byte archive")]
    HeaderFrameTooLong {
        /// Stored length of the frame.
        stored: u32,
        /// Archive length.
        len: u64,
    },
    /// The frame after the lead is not the header frame the lead declares.
    #[error("frame is stream {stream} of {decoded} bytes, not the header of {header_len} bytes the lead declares")]
    NotHeaderFrame {
        /// Stream id of the frame.
        stream: u32,
        /// Decoded length of the frame.
        decoded: u32,
        /// Header length the lead declares.
        header_len: u64,
    },
    /// The header parses to another length than the lead says.
    #[error("header parses to {parsed} bytes, the lead says {lead}")]
    HeaderLength {
        /// Length the header parses to.
        parsed: u64,
        /// Length the lead declares.
        lead: u64,
    },
    /// The lead declares more blocks than a repair would index.
    #[error("it declares {blocks} blocks, more than a {len}-byte archive can hold or a repair will index")]
    TooManyBlocks {
        /// Blocks the layout needs.
        blocks: u64,
        /// Archive length.
        len: u64,
    },
    /// The archive just written would not open (a bug in the writer).
    #[error("the archive written would not open: {0}")]
    WouldNotOpen(Box<ArchiveError>),
}

/// What is wrong with a block, in [`Error::Block`] (which adds the stream, block and offset).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlockError {
    /// `reindex` found no intact frame for the block.
    #[error("block was lost (marked by reindex)")]
    Lost,
    /// The frame is damaged.
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// The frame header does not match the index entry or the layout.
    #[error("frame says variable id {id} block {block} ({stored} bytes stored, {decoded} decoded), index expects id {expect_id} block {expect_block} ({expect_stored} stored, {expect_decoded} decoded)")]
    Mismatch {
        /// Stream id in the frame header.
        id: u32,
        /// Block in the frame header.
        block: u64,
        /// Stored length in the frame header.
        stored: u32,
        /// Decoded length in the frame header.
        decoded: u32,
        /// The stream's id.
        expect_id: u32,
        /// The block asked for.
        expect_block: u64,
        /// Stored length in the index entry.
        expect_stored: u32,
        /// Decoded length the layout gives.
        expect_decoded: u64,
    },
    /// The frame's element size is not the stream's.
    #[error("frame says element size {frame}, the stream's is {stream}")]
    ElementSize {
        /// Element size in the frame header.
        frame: u16,
        /// The stream's element size.
        stream: usize,
    },
    /// Blocks were lost (marked by reindex), so the original cannot be restored; `others` more
    /// besides this one.
    #[error("block was lost (marked by reindex){}; the original cannot be restored exactly", if *others > 0 { format!(" and {others} more") } else { String::new() })]
    Unrestorable {
        /// Lost blocks besides this one.
        others: usize,
    },
    /// A shared stream's block is shorter than its members need.
    #[error("block is shorter than the layout")]
    Short,
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

/// Result type of nc3pack.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Attaches a path to a failure to start a thread.
pub(crate) fn spawn_err(
    path: &std::path::Path,
) -> impl FnOnce(crate::parallel::SpawnError) -> Error + '_ {
    move |source| Error::Thread {
        path: path.to_path_buf(),
        source,
    }
}

/// Attaches a path to a worker thread's failure: one that could not start is
/// [`Error::Thread`], one that panicked (a bug) [`Error::Internal`], never damage.
pub(crate) fn worker_err(
    path: &std::path::Path,
) -> impl FnOnce(crate::parallel::WorkerError) -> Error + '_ {
    move |e| match e {
        crate::parallel::WorkerError::Spawn(source) => Error::Thread {
            path: path.to_path_buf(),
            source,
        },
        crate::parallel::WorkerError::Panicked => {
            Error::Internal(format!("{}: a worker thread panicked", path.display()))
        }
    }
}

/// Attaches a path and operation to an I/O error.
pub(crate) fn io_err<'a>(
    path: &'a std::path::Path,
    op: &'static str,
) -> impl FnOnce(std::io::Error) -> Error + 'a {
    move |source| Error::Io {
        path: path.to_path_buf(),
        op,
        source,
    }
}
