//! Error types of nc3pack.
//!
//! Every error names what is wrong precisely enough for a one-line message: the file, the field
//! or part of the format, and the byte offset where it applies. Library functions that work on
//! bytes return the narrower [`HeaderError`]; the file-level functions wrap it in [`Error`] with
//! the path.

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
    #[error("{}: invalid netCDF-3 data layout: {what}", path.display())]
    Layout {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the variable.
        what: String,
    },
    /// An archive structure (lead, header frame, index, footer) is damaged or malformed.
    #[error("{}: damaged archive: {part} at byte {offset}: {what}", path.display())]
    Archive {
        /// The archive file.
        path: PathBuf,
        /// Which part: "lead", "netCDF header", "index", "footer", ...
        part: &'static str,
        /// Byte offset of the part in the archive.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// A block frame is damaged or does not match the index.
    #[error("{}: damaged block {block} of {var} at byte {offset}: {what}", path.display())]
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
        what: String,
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
        source: crate::slab::SlabError,
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
