//! Errors of netCDF-3 headers and layouts, from bytes (no path: [`crate::Error`] adds the
//! file).

use super::{NcType, MAX_HEADER_LEN};

/// A problem found while parsing a netCDF-3 header from bytes: where, and what.
///
/// ```
/// use nc3pack::nc3::{error::HeaderProblem, Header};
/// let err = Header::parse(b"CDX\x01", 4).unwrap_err();
/// assert_eq!(err.offset, 0);
/// assert_eq!(err.what, HeaderProblem::Magic { found: "CDX".into() });
/// assert_eq!(err.to_string(), "magic: expected \"CDF\", found \"CDX\" at byte 0");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} at byte {offset}")]
pub struct HeaderError {
    /// Byte offset in the file where the offending field starts.
    pub offset: u64,
    /// What is wrong, naming the field.
    pub what: HeaderProblem,
}

impl HeaderError {
    /// The error `what` at byte `offset`.
    ///
    /// ```
    /// use nc3pack::nc3::error::{HeaderError, HeaderProblem};
    /// let e = HeaderError::new(8, HeaderProblem::TwoUnlimited);
    /// assert_eq!(e.to_string(), "more than one dimension has length 0 (unlimited) at byte 8");
    /// ```
    pub fn new(offset: u64, what: HeaderProblem) -> Self {
        HeaderError { offset, what }
    }
}

/// What is wrong with a netCDF-3 header, in [`HeaderError`]. A `field` names the header field
/// as a path: `dimension 2 name`, `variable "t" attribute "units" values`, ...
///
/// ```
/// use nc3pack::nc3::{error::HeaderProblem, Header};
/// let e = Header::parse(b"CDF\x07", 4).unwrap_err();
/// assert_eq!((e.offset, e.what), (3, HeaderProblem::Version { version: 7 }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderProblem {
    /// The file is shorter than the magic.
    #[error("magic: file is only {file_len} bytes long")]
    FileTooShort {
        /// The file's length.
        file_len: u64,
    },
    /// The file does not start with `CDF`.
    #[error("magic: expected \"CDF\", found {found:?}")]
    Magic {
        /// The first three bytes (invalid UTF-8 replaced).
        found: String,
    },
    /// A version byte other than 1, 2 or 5.
    #[error("version byte {version} is not 1, 2 or 5")]
    Version {
        /// The version byte.
        version: u8,
    },
    /// A field that would end the header past [`MAX_HEADER_LEN`].
    #[error("{field}: needs {needed} bytes, which makes the header longer than {MAX_HEADER_LEN} bytes (1 GiB), the largest header nc3pack reads or packs")]
    TooLong {
        /// The field.
        field: String,
        /// Bytes it needs.
        needed: u64,
    },
    /// A field that runs past the end of the file.
    #[error("{field}: needs {needed} bytes but the file ends at byte {file_len}")]
    PastEnd {
        /// The field.
        field: String,
        /// Bytes it needs.
        needed: u64,
        /// The file's length.
        file_len: u64,
    },
    /// A count, length or id that is negative as a signed value.
    #[error("{field}: {value} is negative as a signed value")]
    Negative {
        /// The field.
        field: String,
        /// The value stored (unsigned).
        value: u64,
    },
    /// A variable's begin offset that is negative as a signed value.
    #[error("{field} begin {begin} is negative as a signed value")]
    NegativeBegin {
        /// The variable.
        field: String,
        /// The value stored (unsigned).
        begin: u64,
    },
    /// A count of items more than the rest of the file can hold.
    #[error("{field}: count {count} cannot fit in the {rest} bytes left in the file")]
    CountPastEnd {
        /// The field.
        field: String,
        /// The count stored.
        count: u64,
        /// Bytes left in the file.
        rest: u64,
    },
    /// A name that is not UTF-8.
    #[error("{field} name is not valid UTF-8")]
    NameNotUtf8 {
        /// The field.
        field: String,
    },
    /// An empty name.
    #[error("{field} name is empty")]
    NameEmpty {
        /// The field.
        field: String,
    },
    /// A list tagged ABSENT (0) with a non-zero count.
    #[error("{list} list is ABSENT but its count is {count}")]
    AbsentWithCount {
        /// The list.
        list: String,
        /// The count stored.
        count: u64,
    },
    /// A list tag other than the list's and 0.
    #[error("{list} list tag: expected 0x{expected:08X} or 0, found 0x{found:08X}")]
    ListTag {
        /// The list.
        list: String,
        /// The list's tag.
        expected: u32,
        /// The tag stored.
        found: u32,
    },
    /// An attribute's value count whose byte length overflows.
    #[error("{field} value count {count} overflows")]
    ValueCountOverflow {
        /// The attribute.
        field: String,
        /// The count stored.
        count: u64,
    },
    /// A CDF-5 type in a CDF-1 or CDF-2 file.
    #[error("{field} type {} exists only in CDF-5 files", nc_type.name())]
    Cdf5Type {
        /// The field.
        field: String,
        /// The type.
        nc_type: NcType,
    },
    /// A type code that is not a netCDF type.
    #[error("{field} type code {code} is not a netCDF type")]
    UnknownType {
        /// The field.
        field: String,
        /// The code stored.
        code: u32,
    },
    /// Two dimensions of length 0 (unlimited).
    #[error("more than one dimension has length 0 (unlimited)")]
    TwoUnlimited,
    /// A variable's dimension id that does not exist.
    #[error("{field} dimension id {id} does not exist ({count} dimensions)")]
    NoSuchDimension {
        /// The variable.
        field: String,
        /// The id stored.
        id: u64,
        /// Dimensions in the header.
        count: usize,
    },
    /// A variable using the unlimited dimension other than first.
    #[error("{field} uses the unlimited dimension at position {position}; only the first may be unlimited")]
    UnlimitedNotFirst {
        /// The variable.
        field: String,
        /// Position of the unlimited dimension in its list.
        position: usize,
    },
    /// The header continues past the bytes given to [`crate::nc3::Header::parse`].
    #[error("header continues past the bytes given")]
    PastBuffer,
    /// The file ends inside the header.
    #[error("header is truncated")]
    Truncated,
    /// A streamed header longer than [`MAX_HEADER_LEN`].
    #[error("header is longer than {MAX_HEADER_LEN} bytes")]
    StreamTooLong,
    /// The parsed header's items do not fit in memory.
    #[error("the machine has no memory left to hold the parsed header (its items from here on)")]
    NoMemory,
    /// A count of items that would make the header longer than the header limit
    /// ([`crate::nc3::header_limit`]): refused before anything is allocated for them.
    #[error("{field} {count}: {count} items take at least {min_bytes} bytes of header, more than the header limit of {limit} bytes{}", RAISE)]
    CountOverLimit {
        /// The field.
        field: String,
        /// The count stored.
        count: u64,
        /// The fewest bytes the items take (the count times the smallest item).
        min_bytes: u64,
        /// The header limit.
        limit: u64,
    },
    /// A field that would end the header past the header limit.
    #[error("{field}: needs {needed} bytes, which makes the header longer than the header limit of {limit} bytes{}", RAISE)]
    OverLimit {
        /// The field.
        field: String,
        /// Bytes it needs.
        needed: u64,
        /// The header limit.
        limit: u64,
    },
    /// An archive's header (its length as the lead records it) longer than the header limit.
    #[error("the header is {len} bytes long (as the archive's lead records it), more than the header limit of {limit} bytes{}", RAISE)]
    LongerThanLimit {
        /// The header's length.
        len: u64,
        /// The header limit.
        limit: u64,
    },
    /// [`crate::nc3::HEADER_LIMIT_ENV`] set to something other than a byte count of at most
    /// [`MAX_HEADER_LEN`].
    #[error("the header limit {}={value:?} is not a byte count of at most {MAX_HEADER_LEN} (1 GiB): write it as 268435456, 256M or 1G", crate::nc3::HEADER_LIMIT_ENV)]
    LimitSetting {
        /// The value set.
        value: String,
    },
}

/// How to raise the header limit, ending each message of a header over it.
const RAISE: &str = " (a bound on what a header may cost in memory; to read this file, set the environment variable NC3PACK_MAX_HEADER_BYTES to a larger limit, e.g. 256M, at most 1G)";

/// Why a netCDF-3 header's data layout is impossible for the file ([`crate::nc3::Layout`]), or
/// for the input being packed.
///
/// ```
/// use nc3pack::error::LayoutError;
/// let e = LayoutError::Overlap { var: "b".into(), other: "a".into(), begin: 100, end: 104 };
/// assert_eq!(e.to_string(), "variables \"a\" and \"b\" overlap (begin 100 < 104)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
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

/// Why a file is not a netCDF-3 file at all, in [`FileError::NotNetcdf3`] and
/// [`crate::Error::NotNetcdf3`].
///
/// ```
/// use nc3pack::nc3::error::NotNetcdf3;
/// let e = NotNetcdf3::BadMagic { found: b"PK\x03\x04".to_vec() };
/// assert_eq!(e.to_string(), "bad magic at byte 0: expected \"CDF\" then 1, 2 or 5, found bytes 504b0304");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotNetcdf3 {
    /// The file has no bytes.
    #[error("the file is empty")]
    EmptyFile,
    /// The input stream has no bytes.
    #[error("the input is empty")]
    EmptyInput,
    /// The file starts with the HDF5 signature (netCDF-4).
    #[error("it is an HDF5 file (netCDF-4 or HDF5); nc3pack reads netCDF-3 only")]
    Hdf5,
    /// The file does not start with `CDF`.
    #[error(
        "bad magic at byte 0: expected \"CDF\" then 1, 2 or 5, found bytes {}",
        hex(found)
    )]
    BadMagic {
        /// The first bytes of the file (at most 4).
        found: Vec<u8>,
    },
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

/// Why a netCDF-3 file's header cannot be read ([`crate::nc3::read_header`],
/// [`crate::nc3::read_header_stream`], [`crate::nc3::open`]), naming the file. Converts into
/// [`crate::Error`] (the variants of the same names, with the same messages).
///
/// ```
/// use nc3pack::nc3::{self, error::{FileError, NotNetcdf3}};
/// let e = nc3::read_header(&Vec::new(), "x.nc".as_ref()).unwrap_err();
/// assert!(matches!(e, FileError::NotNetcdf3 { reason: NotNetcdf3::EmptyFile, .. }));
/// assert_eq!(nc3pack::Error::from(e).to_string(), "x.nc: not a netCDF-3 file: the file is empty");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// An I/O error reading the file.
    #[error("{}: {op}: {source}", path.display())]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// What was being done ("read", "stat").
        op: &'static str,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file is not a netCDF-3 file at all.
    #[error("{}: not a netCDF-3 file: {reason}", path.display())]
    NotNetcdf3 {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        reason: NotNetcdf3,
    },
    /// The header is malformed.
    #[error("{}: invalid netCDF-3 header at byte {}: {}", path.display(), source.offset, source.what)]
    Header {
        /// The file.
        path: std::path::PathBuf,
        /// Field and offset.
        source: HeaderError,
    },
    /// The data layout the header declares is impossible for this file.
    #[error("{}: invalid netCDF-3 data layout: {source}", path.display())]
    Layout {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong, naming the variable.
        source: LayoutError,
    },
}
