//! Errors of netCDF-3 headers and layouts, from bytes (no path: [`crate::Error`] adds the
//! file).

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

/// Why a file is not a netCDF-3 file at all, in [`FileError::NotNetcdf3`] and
/// [`crate::Error::NotNetcdf3`].
///
/// ```
/// use nc3pack::nc3::error::NotNetcdf3;
/// let e = NotNetcdf3::BadMagic { found: b"PK\x03\x04".to_vec() };
/// assert_eq!(e.to_string(), "bad magic at byte 0: expected \"CDF\" then 1, 2 or 5, found bytes 504b0304");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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
