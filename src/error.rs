//! Error types of nc3pack.
//!
//! Every error names what is wrong precisely enough for a one-line message: the file, the field
//! or part of the format, and the byte offset where it applies. Library functions that work on
//! bytes return the narrower [`HeaderError`]; the file-level functions wrap it in [`Error`] with
//! the path.

pub use crate::codec::{
    CodecError, ContextError, FitError, FrameError, LorenzoError, LzmaError, MaskError, PlaneError,
    RefsError,
};
pub use crate::format::error::{
    BlockSizesError, ConstantsError, EntryError, FooterError, FrameHeaderError, IndexError,
    LeadError,
};
pub use crate::nc3::error::{HeaderError, LayoutError};
pub mod damage;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

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
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O error on a file.
    #[error("{}: {op}: {source}", shown(path))]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done ("open", "read", "write", ...).
        op: &'static str,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The input is not a netCDF-3 file at all (bad magic, HDF5, empty).
    #[error("{}: not a netCDF-3 file: {reason}", shown(path))]
    NotNetcdf3 {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: crate::nc3::error::NotNetcdf3,
    },
    /// The netCDF-3 header is malformed.
    #[error("{}: invalid netCDF-3 header at byte {}: {}", shown(path), source.offset, source.what)]
    Header {
        /// The file.
        path: PathBuf,
        /// Field and offset.
        source: HeaderError,
    },
    /// The header parses but the data layout it declares is impossible for this file.
    #[error("{}: invalid netCDF-3 data layout: {source}", shown(path))]
    Layout {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the variable.
        source: LayoutError,
    },
    /// An archive structure (lead, header frame, index, footer) is damaged or malformed.
    #[error("{}: damaged archive: {part} at byte {offset}: {source}", shown(path))]
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
    #[error(
        "{}: damaged block {block} of {var} at byte {offset}: {source}",
        shown(path)
    )]
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
    /// A block needs more memory than can be allocated (the machine's, or a limit such as
    /// `ulimit -v`): not damage, so the archive may read elsewhere.
    ///
    /// ```
    /// let e = nc3pack::Error::NoMemory {
    ///     path: "a.nc3z".into(),
    ///     var: "variable \"v\"".into(),
    ///     block: 1,
    ///     len: 1 << 30,
    /// };
    /// assert_eq!(
    ///     e.to_string(),
    ///     "a.nc3z: cannot allocate 1073741824 bytes of memory for block 1 of variable \"v\""
    /// );
    /// ```
    #[error("{}: cannot allocate {len} bytes of memory for block {block} of {var}", path.display())]
    NoMemory {
        /// The archive file.
        path: PathBuf,
        /// Variable name (or "residual bytes").
        var: String,
        /// Block number within the variable.
        block: u64,
        /// Bytes that could not be allocated.
        len: u64,
    },
    /// The restored file does not hash to the value recorded at pack time.
    #[error("{}: restored data does not match the original's hash (stored {expected:032x}, got {actual:032x})", shown(path))]
    HashMismatch {
        /// The archive file.
        path: PathBuf,
        /// Hash stored in the archive.
        expected: u128,
        /// Hash of what was restored.
        actual: u128,
    },
    /// The output file exists and overwriting was not asked for.
    #[error("{}: output exists (use --force to overwrite)", shown(path))]
    OutputExists {
        /// The output path.
        path: PathBuf,
    },
    /// A read asked for something the variable does not have.
    #[error("{}: reading {var:?}: {source}", shown(path))]
    Slab {
        /// The file.
        path: PathBuf,
        /// The variable name as asked for.
        var: String,
        /// What is wrong.
        source: crate::nc3::slab::SlabError,
    },
    /// A file that must be read at any offset is a pipe, FIFO, device or socket, which can only
    /// be read in order (`nc3pack pack` reads such an input as a stream instead).
    #[error(
        "{}: is {kind}, not a regular file: {op} needs a regular file (save it to one first)",
        shown(path)
    )]
    NotSeekable {
        /// The file.
        path: PathBuf,
        /// What it is: "a pipe", "a character device", ...
        kind: &'static str,
        /// What needed to seek: "reading an archive", "verify", ...
        op: &'static str,
    },
    /// An object in object storage (an `s3://` or `http(s)://` URL) cannot be read: the URL and
    /// the cause.
    ///
    /// ```
    /// use nc3pack::{error::RemoteError, Error};
    /// let e = Error::Remote { url: "s3://b/k.nc3z".into(), source: RemoteError::NotFound };
    /// assert_eq!(e.to_string(), "s3://b/k.nc3z: no such object");
    /// ```
    #[error("{}: {source}", redact_url(url))]
    Remote {
        /// The URL, as given.
        url: String,
        /// What went wrong.
        source: RemoteError,
    },
    /// A local archive changed on disk while it was open (written in place, truncated, its
    /// times set): its change or modification time or its length is not what it was when it
    /// was opened (`what` says which). Reading on could mix two versions of it (an archive
    /// replaced by a rename is another file, and reads on as the one opened).
    ///
    /// ```
    /// let e = nc3pack::Error::Changed {
    ///     path: "a.nc3z".into(),
    ///     what: "length 100 bytes when opened, now 90".into(),
    /// };
    /// assert_eq!(
    ///     e.to_string(),
    ///     "a.nc3z: changed on disk since it was opened (length 100 bytes when opened, now 90); \
    ///      open it again to read the new one"
    /// );
    /// ```
    #[error(
        "{}: changed on disk since it was opened ({what}); open it again to read the new one",
        shown(path)
    )]
    Changed {
        /// The archive.
        path: PathBuf,
        /// What differs.
        what: String,
    },
    /// An input changed on disk while it was packed (a program still writing it): the
    /// archive would hold neither its old bytes nor its new, and none is made.
    ///
    /// ```
    /// let e = nc3pack::Error::ChangedWhileRead {
    ///     path: "a.nc".into(),
    ///     what: "length 100 bytes when opened, now 90".into(),
    /// };
    /// assert_eq!(
    ///     e.to_string(),
    ///     "a.nc: changed while it was packed (length 100 bytes when opened, now 90); \
    ///      pack it once nothing writes to it"
    /// );
    /// ```
    #[error(
        "{}: changed while it was packed ({what}); pack it once nothing writes to it",
        shown(path)
    )]
    ChangedWhileRead {
        /// The input.
        path: PathBuf,
        /// What differs.
        what: String,
    },
    /// The output cannot be written where asked (it is the input, or a directory).
    #[error("{}: {what}", shown(path))]
    Refused {
        /// The output path.
        path: PathBuf,
        /// Why.
        what: Refusal,
    },
    /// `verify --manifest` found nothing to verify where it was pointed: no manifest, or only
    /// manifests without an entry line (a mistyped directory or prefix, an empty manifest).
    ///
    /// ```
    /// use nc3pack::{error::NothingFound, Error};
    /// let e = Error::NothingToVerify {
    ///     what: "out/.nc3pack".into(),
    ///     why: NothingFound::NoRecord { manifests: 2 },
    /// };
    /// assert_eq!(
    ///     e.to_string(),
    ///     "out/.nc3pack: no manifest record found (its 2 manifests have no entry line); nothing verified"
    /// );
    /// ```
    #[error("{what}: {why}; nothing verified")]
    NothingToVerify {
        /// The manifest, directory or URL given, as given.
        what: String,
        /// What was found there.
        why: NothingFound,
    },
    /// A summary of a collection found no manifest where it was pointed (a mistyped directory
    /// or prefix).
    ///
    /// ```
    /// use nc3pack::{error::NothingFound, Error};
    /// let e = Error::NothingToSummarize {
    ///     what: "out".into(),
    ///     why: NothingFound::NoManifest { prefix: false },
    /// };
    /// assert_eq!(
    ///     e.to_string(),
    ///     "out: no manifest found (no *.jsonl file in this directory)"
    /// );
    /// ```
    #[error("{what}: {why}")]
    NothingToSummarize {
        /// The manifest, directory or URL given, as given.
        what: String,
        /// What was found there.
        why: NothingFound,
    },
    /// An option value is out of range (a usage error: the command line exits 2).
    #[error("invalid option: {0}")]
    Option(#[from] OptionError),
    /// A thread could not be started (the system's limit on threads or memory was reached).
    #[error("{}: {source}; try fewer threads (-j)", shown(path))]
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

/// What is wrong with an archive structure, in [`Error::Archive`] (which adds the part and
/// offset).
///
/// ```
/// use nc3pack::{error::ArchiveError, format::error::LeadError, Archive, Error};
/// // Not an archive: its lead's magic is wrong.
/// let err = Archive::from_reader(vec![0u8; 200], "zeros".as_ref()).err().unwrap();
/// assert!(matches!(err, Error::Archive { part: "lead", source: ArchiveError::Lead(LeadError::Magic), .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
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
    /// The block sizes frame (format 1.1).
    #[error(transparent)]
    BlockSizes(#[from] BlockSizesError),
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
    /// The lead's record count is not the one its header and original length give (what the
    /// writer records): `reindex` cannot rebuild such an archive.
    #[error("record count {stored} is not the {expected} the header and the file length ({file_len} bytes) give")]
    RecordCount {
        /// Record count in the lead.
        stored: u64,
        /// Record count the header and the original length give.
        expected: u64,
        /// The original's length, from the lead.
        file_len: u64,
    },
    /// The archive just written would not open (a bug in the writer).
    #[error("the archive written would not open: {0}")]
    WouldNotOpen(Box<ArchiveError>),
}

/// A damaged frame header is a damaged frame.
impl From<FrameHeaderError> for ArchiveError {
    fn from(e: FrameHeaderError) -> ArchiveError {
        ArchiveError::Frame(e.into())
    }
}

/// What is wrong with a block, in [`Error::Block`] (which adds the stream, block and offset).
///
/// ```
/// use nc3pack::error::BlockError;
/// assert_eq!(BlockError::Short.to_string(), "block is shorter than the layout");
/// assert!(matches!(BlockError::Lost, BlockError::Lost));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BlockError {
    /// `reindex` found no intact frame for the block.
    #[error("block was lost (marked by reindex)")]
    Lost,
    /// The frame is damaged.
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// The frame header does not match the index entry or the layout.
    #[error("frame says variable id {stream} block {block} ({stored} bytes stored, {decoded} decoded), index expects id {expect_stream} block {expect_block} ({expect_stored} stored, {expect_decoded} decoded)")]
    Mismatch {
        /// Stream id in the frame header.
        stream: u32,
        /// Block in the frame header.
        block: u64,
        /// Stored length in the frame header.
        stored: u32,
        /// Decoded length in the frame header.
        decoded: u32,
        /// The stream's id.
        expect_stream: u32,
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

/// A damaged frame header is a damaged frame.
impl From<FrameHeaderError> for BlockError {
    fn from(e: FrameHeaderError) -> BlockError {
        BlockError::Frame(e.into())
    }
}

impl From<crate::vars::NoSuchVar> for Error {
    fn from(e: crate::vars::NoSuchVar) -> Self {
        Error::Option(e.into())
    }
}

impl From<crate::nc3::error::FileError> for Error {
    fn from(e: crate::nc3::error::FileError) -> Self {
        use crate::nc3::error::FileError as F;
        match e {
            F::Io { path, op, source } => Error::Io { path, op, source },
            F::NotNetcdf3 { path, reason } => Error::NotNetcdf3 { path, reason },
            F::Header { path, source } => Error::Header { path, source },
            F::Layout { path, source } => Error::Layout { path, source },
        }
    }
}

/// Why an output is refused, in [`Error::Refused`].
///
/// ```
/// use nc3pack::error::Refusal;
/// assert_eq!(
///     Refusal::IsInput.to_string(),
///     "output is the input file; refusing to overwrite it"
/// );
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// The output exists and is not a regular file (nor a symbolic link).
    #[error("output is {kind}, not a regular file; refusing to replace it (even with --force)")]
    NotRegularFile {
        /// What it is: "a directory", "a pipe", ...
        kind: &'static str,
    },
    /// The output is the input file.
    #[error("output is the input file; refusing to overwrite it")]
    IsInput,
    /// Two inputs of a batch would be packed to this output.
    #[error("both {} and {} would be packed here", first.display(), second.display())]
    SameOutput {
        /// The first input.
        first: PathBuf,
        /// The second input.
        second: PathBuf,
    },
    /// An input of a batch is not under its root (`--root`).
    #[error("is not under the root {} (--root)", root.display())]
    OutsideRoot {
        /// The root.
        root: PathBuf,
    },
    /// A batch would put one input's archive where another's needs a directory.
    #[error(
        "both {} (its archive) and {} (a directory for its archive) would be here",
        file.display(),
        below.display()
    )]
    ArchiveAndDirectory {
        /// The input whose archive this would be.
        file: PathBuf,
        /// The input below, whose archive needs this as a directory.
        below: PathBuf,
    },
    /// A batch input changed since the manifest recorded it as packed.
    #[error(
        "changed since it was packed (the manifest has {recorded_size} bytes, mtime_ns \
         {recorded_mtime_ns}; now {size} bytes, mtime_ns {mtime_ns}); use --force to pack it again"
    )]
    ChangedSincePacked {
        /// Size the manifest records.
        recorded_size: u64,
        /// Modification time the manifest records (ns since 1970).
        recorded_mtime_ns: i64,
        /// Size now.
        size: u64,
        /// Modification time now.
        mtime_ns: i64,
    },
    /// A batch output exists but no manifest records it as this input's archive.
    #[error(
        "output exists and is not recorded as this input's archive (remove it to pack this input again, or use --force to pack every input again)"
    )]
    NotRecorded,
    /// A batch output exists and is not an nc3pack archive (it may be another input of the
    /// batch, a netCDF file named like an archive): never replaced, even with `--force`.
    #[error(
        "output exists and is not an nc3pack archive; refusing to replace it (even with --force)"
    )]
    NotAnArchive,
    /// A file given to a batch is where another of its inputs' archive goes: packing that
    /// input would replace it. The batch is refused before it starts.
    #[error(
        "is an input of this batch and where the archive of {} goes; refusing to start (give one of the two)",
        of.display()
    )]
    InputIsOutput {
        /// The input whose archive this is.
        of: PathBuf,
    },
    /// A batch's manifest path names a file that appending to would damage (an archive, a
    /// netCDF file) or where an archive of the batch may go.
    #[error("not a manifest: {what}; refusing to append to it (give a *.jsonl path)")]
    NotAManifest {
        /// What it is.
        what: &'static str,
    },
    /// The output's file name is longer than its filesystem holds.
    #[error("file name is {len} bytes long, more than the {max} its filesystem holds")]
    NameTooLong {
        /// The name's length in bytes.
        len: usize,
        /// The most the filesystem holds.
        max: usize,
    },
    /// An output directory resolves outside the batch's output directory.
    #[error(
        "leads to {}, outside the output directory {} (a symbolic link); refusing to write there",
        real.display(),
        out.display()
    )]
    OutsideOutput {
        /// Where it resolves.
        real: PathBuf,
        /// The output directory, resolved.
        out: PathBuf,
    },
    /// `--delete-input` kept this original.
    #[error("not deleted: {0}")]
    NotDeleted(Box<NotDeleted>),
}

/// What `verify --manifest` found where it found nothing to verify, in
/// [`Error::NothingToVerify`].
///
/// ```
/// use nc3pack::error::NothingFound;
/// assert_eq!(
///     NothingFound::NoManifest { prefix: false }.to_string(),
///     "no manifest found (no *.jsonl file in this directory)"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NothingFound {
    /// A directory (or an object-storage prefix) holds no `*.jsonl` manifest.
    #[error("no manifest found (no *.jsonl {} in this {})",
        if *prefix { "object" } else { "file" }, if *prefix { "prefix" } else { "directory" })]
    NoManifest {
        /// Whether it is an object-storage prefix (else a local directory).
        prefix: bool,
    },
    /// The manifests found hold no entry line (they are empty, or blank lines only).
    #[error("no manifest record found ({})", if *manifests == 1 {
        "the manifest has no entry line".to_string()
    } else {
        format!("its {manifests} manifests have no entry line")
    })]
    NoRecord {
        /// How many manifests were read.
        manifests: usize,
    },
}

/// Why `pack --delete-input` kept an original, in [`Refusal::NotDeleted`].
///
/// ```
/// use nc3pack::error::NotDeleted;
/// assert_eq!(NotDeleted::Changed.to_string(), "changed since it was packed");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NotDeleted {
    /// Symbolic links, pipes and devices are never deleted.
    #[error("not a regular file (symbolic links, pipes and devices are never deleted)")]
    NotRegularFile,
    /// It changed since it was packed (another size or modification time).
    #[error("changed since it was packed")]
    Changed,
    /// Read again right before it would have been deleted, its bytes are not the ones its
    /// archive holds (rewritten since it was packed, even if with the same size and time).
    #[error("its bytes changed since it was packed (xxh3-128 now {now:032x}, the archive holds {archived:032x})")]
    ContentsChanged {
        /// The hash of its bytes now.
        now: u128,
        /// The hash its archive restores.
        archived: u128,
    },
    /// Another file took its path while it was read to be checked (renamed over it).
    #[error("replaced by another file while it was checked")]
    Replaced,
    /// The manifest record of its archive could not be made durable, so it was kept (an
    /// original is deleted only once its archive is recorded).
    #[error("its archive could not be recorded in the manifest: {why}")]
    NotRecorded {
        /// The error writing or syncing the manifest.
        why: String,
    },
    /// Its archive's lead or footer does not hold.
    #[error("its archive {}: {source}", archive.display())]
    Ends {
        /// The archive.
        archive: PathBuf,
        /// What is wrong.
        source: crate::format::error::EndsError,
    },
    /// Its archive is damaged.
    #[error("its archive {} does not verify: {first}", archive.display())]
    Damaged {
        /// The archive.
        archive: PathBuf,
        /// The first damage found.
        first: damage::Damage,
    },
    /// Its archive could not be decoded back to the hash.
    #[error("its archive {} could not be decoded back to the hash", archive.display())]
    HashUnchecked {
        /// The archive.
        archive: PathBuf,
    },
    /// Its archive is lossy (`--quantize`): it restores a quantized file, not the original.
    #[error("its archive {} is lossy (quantized): it does not restore the original", archive.display())]
    Lossy {
        /// The archive.
        archive: PathBuf,
    },
}

/// Which option is out of range, in [`Error::Option`].
///
/// ```
/// use nc3pack::{error::OptionError, Error, PackOptions};
/// let e = PackOptions::fast().with_block_size(4).check().unwrap_err();
/// assert!(matches!(e, Error::Option(OptionError::BlockSize { block_size: 4, .. })));
/// assert_eq!(e.to_string(), "invalid option: block size 4 is outside 8..=1073741824 bytes");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OptionError {
    /// The codec level is out of range, or the codec cannot be set up.
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// A `--quantize` rule cannot apply to the file.
    #[error(transparent)]
    Quantize(#[from] crate::quantize::QuantizeError),
    /// The block size is outside the range an archive may declare.
    #[error("block size {block_size} is outside {min}..={max} bytes")]
    BlockSize {
        /// The block size asked for.
        block_size: u32,
        /// Least block size.
        min: u32,
        /// Greatest block size.
        max: u32,
    },
    /// `pack` given other than an input and an output (without an output directory).
    #[error("pack takes IN OUT, or IN... -o OUTDIR ({given} paths given)")]
    PackPaths {
        /// Paths given.
        given: usize,
    },
    /// A storage option that takes true or false was given something else.
    #[error("storage option {name}: {value:?} is not true or false")]
    StorageBool {
        /// The option.
        name: String,
        /// The value given.
        value: String,
    },
    /// An unknown storage option.
    #[error(
        "unknown storage option {name:?} (known: anon, key, secret, token, endpoint_url, region, \
         allow_http)"
    )]
    StorageName {
        /// The option given.
        name: String,
    },
    /// `pack -o OUT` given no inputs.
    #[error("pack -o OUT needs inputs: paths, or --files-from LIST")]
    BatchInputs,
    /// A name or glob of a per-variable option (`--var`) matches no variable of the file.
    #[error(transparent)]
    NoSuchVar(#[from] crate::vars::NoSuchVar),
    /// A per-variable codec or level is not valid for that variable's codec.
    #[error("--var: variable {var:?}: {source}")]
    VarCodec {
        /// The variable.
        var: String,
        /// What is wrong.
        source: CodecError,
    },
    /// `pack -o s3://...` asked to delete its inputs.
    #[error("--delete-input cannot be used with an object-store output ({url}): nc3pack deletes an original only once its archive is proven on disk; verify the collection with `nc3pack verify --manifest {url}.nc3pack/` and delete the originals yourself")]
    DeleteInputToUrl {
        /// The output prefix.
        url: String,
    },
    /// `pack` asked to write to standard output.
    #[error("pack writes an archive to a file, not to standard output (`-`): its lead is rewritten when packing ends, which needs a seekable file")]
    PackToStdout,
    /// `pack --delete-input` asked to quantize.
    #[error("--delete-input cannot be used with --quantize: a quantized archive does not restore the original, so the original would be lost")]
    DeleteInputLossy,
}

/// Result type of nc3pack.
///
/// ```
/// fn file_bytes(path: &str) -> nc3pack::Result<u64> {
///     Ok(nc3pack::info::describe(path.as_ref())?.file_bytes())
/// }
/// assert_eq!(file_bytes("samples/scalars.nc")?, 560);
/// assert!(file_bytes("samples/no-such-file.nc").is_err());
/// # Ok::<(), nc3pack::Error>(())
/// ```
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

/// Why an object in object storage cannot be read (see [`Error::Remote`]).
///
/// ```
/// let e = nc3pack::error::RemoteError::AccessDenied { code: "SignatureDoesNotMatch".into() };
/// assert!(e.to_string().starts_with("access denied (SignatureDoesNotMatch)"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    /// The URL is malformed or of an unknown scheme.
    #[error("not a usable URL: {}", redact_url(why))]
    InvalidUrl {
        /// What is wrong with it.
        why: String,
    },
    /// No credentials were given for a signed request.
    #[error(
        "no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN \
         for temporary ones), or use --anon (NC3PACK_ANON=1) for a public bucket"
    )]
    NoCredentials,
    /// The server refused the credentials, or they do not allow the request.
    #[error(
        "access denied ({code}): the credentials are wrong or do not allow reading this object"
    )]
    AccessDenied {
        /// The server's error code (`AccessDenied`, `SignatureDoesNotMatch`,
        /// `InvalidAccessKeyId`, ...).
        code: String,
    },
    /// There is no object at the URL.
    #[error("no such object")]
    NotFound,
    /// There is no such bucket.
    #[error("no such bucket")]
    NoSuchBucket,
    /// The server answered a range request with the whole object (or not at all).
    #[error("the server does not answer range requests (HTTP 206), which reading needs")]
    NoRanges,
    /// The store could not be set up from the options and environment.
    #[error("bad object storage settings: {}", redact_url(why))]
    Config {
        /// The cause.
        why: String,
    },
    /// The server kept answering with an error status (a 5xx, say) through the retries.
    ///
    /// ```
    /// use nc3pack::error::RemoteError;
    /// let e = RemoteError::Server {
    ///     status: "503 Service Unavailable".into(),
    ///     code: None,
    ///     tries: 6,
    ///     millis: 3_150,
    /// };
    /// assert_eq!(e.to_string(), "server error 503 Service Unavailable, after 6 tries in 3.1 s");
    /// ```
    #[error(
        "server error {status}{}, after {tries} {} in {:.1} s",
        code.as_ref().map(|c| format!(" ({c})")).unwrap_or_default(),
        if *tries == 1 { "try" } else { "tries" },
        *millis as f64 / 1000.0
    )]
    Server {
        /// The HTTP status of the last answer (`503 Service Unavailable`).
        status: String,
        /// The S3 error code in the last answer (`SlowDown`, `InternalError`), if any.
        code: Option<String>,
        /// Requests sent: the first and its retries.
        tries: usize,
        /// Milliseconds from the first request to the last answer.
        millis: u64,
    },
    /// Every try of a request timed out (the server sent nothing for the options' timeout),
    /// until no retry was left or the time for retries was over.
    ///
    /// ```
    /// use nc3pack::error::RemoteError;
    /// let e = RemoteError::TimedOut { tries: 1, millis: 120_004 };
    /// assert_eq!(e.to_string(), "request failed: timed out, after 1 try in 120.0 s");
    /// ```
    #[error(
        "request failed: timed out, after {tries} {} in {:.1} s",
        if *tries == 1 { "try" } else { "tries" },
        *millis as f64 / 1000.0
    )]
    TimedOut {
        /// Requests sent: the first and its retries.
        tries: usize,
        /// Milliseconds from the first request to the last timeout.
        millis: u64,
    },
    /// The object is not the one that was opened: its ETag (or, from a server that sends
    /// none, its length) differs. Reading on would mix two versions of it.
    ///
    /// ```
    /// use nc3pack::error::RemoteError;
    /// let e = RemoteError::Changed { what: "ETag \"a\" when opened, now \"b\"".into() };
    /// assert!(e.to_string().starts_with("object changed since it was opened"));
    /// ```
    #[error("object changed since it was opened ({what}); open it again to read the new one")]
    Changed {
        /// What differs.
        what: String,
    },
    /// The server answered a range request with more bytes than the range holds (reading
    /// stopped there).
    ///
    /// ```
    /// use nc3pack::error::RemoteError;
    /// let e = RemoteError::BodyTooLong { start: 0, asked: 10 };
    /// assert_eq!(
    ///     e.to_string(),
    ///     "the server sent more bytes than the range asked (10 bytes at byte 0)"
    /// );
    /// ```
    #[error("the server sent more bytes than the range asked ({asked} bytes at byte {start})")]
    BodyTooLong {
        /// The first byte asked for.
        start: u64,
        /// Bytes asked for.
        asked: u64,
    },
    /// A request failed after its retries (timeout, connection failure, ...).
    #[error("request failed: {}", redact_url(why))]
    Request {
        /// The cause.
        why: String,
    },
    /// This build of nc3pack has no object storage support.
    #[error("URLs need nc3pack built with the `remote` cargo feature")]
    NotBuilt,
}

/// `text` with the secrets of every URL in it hidden, for printing: the password of a
/// `user:password@` (`user:***@`; a user name alone, which may be a token, as `***@`) and the
/// query string (a presigned URL's signature: `?***`). Text that is not a URL, and a URL
/// without these parts, are unchanged. Errors, progress lines and Python's exceptions and
/// reprs print URLs through it.
///
/// ```
/// use nc3pack::error::redact_url;
/// assert_eq!(
///     redact_url("https://me:pw@example.org/a.nc3z?X-Amz-Signature=ab12"),
///     "https://me:***@example.org/a.nc3z?***"
/// );
/// assert_eq!(redact_url("GET http://tok@h:80/x failed"), "GET http://***@h:80/x failed");
/// assert_eq!(redact_url("s3://bkt/k.nc3z: no such object"), "s3://bkt/k.nc3z: no such object");
/// assert_eq!(redact_url("/data/a?b@c.nc"), "/data/a?b@c.nc");
/// ```
pub fn redact_url(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    // Bounded: each turn consumes at least the "://" it found.
    while let Some(at) = rest.find("://") {
        let scheme = rest[..at]
            .bytes()
            .rev()
            .take_while(|b| b.is_ascii_alphanumeric() || b"+-.".contains(b))
            .count();
        let body = at + 3;
        out.push_str(&rest[..body]);
        if scheme == 0 || !rest.as_bytes()[at - scheme].is_ascii_alphabetic() {
            rest = &rest[body..];
            continue;
        }
        // The URL ends at white space or a quote.
        let end = rest[body..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>'))
            .map_or(rest.len(), |i| body + i);
        let url = &rest[body..end];
        let (authority, tail) = url.split_at(url.find(['/', '?', '#']).unwrap_or(url.len()));
        match authority.rfind('@') {
            Some(i) => {
                if let Some((user, _)) = authority[..i].split_once(':') {
                    out.push_str(user);
                    out.push(':');
                }
                out.push_str("***");
                out.push_str(&authority[i..]);
            }
            None => out.push_str(authority),
        }
        match tail.find('?') {
            Some(q) => {
                out.push_str(&tail[..q]);
                out.push_str("?***");
            }
            None => out.push_str(tail),
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// A path as errors print it: a URL (opened by URL, the path is the URL) through
/// [`redact_url`].
fn shown(path: &Path) -> Cow<'_, str> {
    match path.to_string_lossy() {
        Cow::Borrowed(s) => redact_url(s),
        Cow::Owned(s) => Cow::Owned(redact_url(&s).into_owned()),
    }
}

/// What a read found when the file it read is shorter than it was when it was opened (it was
/// truncated or rewritten while open): the [`std::io::Error`] (of kind `UnexpectedEof`) in an
/// [`Error::Io`] of a read, whose message it becomes.
///
/// ```
/// use nc3pack::error::Shrunk;
/// let e = Shrunk { was: 5000, now: 1000, offset: 4000, len: 600 };
/// assert_eq!(
///     e.to_string(),
///     "the file got shorter since it was opened: it was 5000 bytes long and is now 1000 \
///      (a read of 600 bytes at byte 4000 found its end); was it truncated or rewritten while open?"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the file got shorter since it was opened: it was {was} bytes long and is now {now} (a read of {len} bytes at byte {offset} found its end); was it truncated or rewritten while open?")]
pub struct Shrunk {
    /// The file's length when it was opened.
    pub was: u64,
    /// Its length now.
    pub now: u64,
    /// Where the read started.
    pub offset: u64,
    /// Bytes the read asked for.
    pub len: u64,
}

/// [`io_err`] for a read of `len` bytes at `offset` through `reader`, a file `was` bytes long
/// when it was opened: a read that found the end of a file now shorter than that says so
/// ([`Shrunk`]) instead of a bare "failed to fill whole buffer".
pub(crate) fn read_err<'a, R: crate::io::ReadAt + ?Sized>(
    path: &'a std::path::Path,
    reader: &'a R,
    was: u64,
    offset: u64,
    len: usize,
) -> impl FnOnce(std::io::Error) -> Error + 'a {
    move |source| {
        if source.kind() == std::io::ErrorKind::UnexpectedEof {
            if let Ok(now) = reader.size() {
                if now < was {
                    let shrunk = Shrunk {
                        was,
                        now,
                        offset,
                        len: len as u64,
                    };
                    return Error::Io {
                        path: path.to_path_buf(),
                        op: "read",
                        source: std::io::Error::new(std::io::ErrorKind::UnexpectedEof, shrunk),
                    };
                }
            }
        }
        io_err(path, "read")(source)
    }
}

/// Attaches a path and operation to an I/O error. An error of reading a remote object (a
/// [`RemoteError`] carried by the I/O error) becomes [`Error::Remote`] naming the path (its
/// URL).
pub(crate) fn io_err<'a>(
    path: &'a std::path::Path,
    op: &'static str,
) -> impl FnOnce(std::io::Error) -> Error + 'a {
    move |source| match source
        .get_ref()
        .and_then(|e| e.downcast_ref::<RemoteError>())
    {
        Some(remote) => Error::Remote {
            url: path.to_string_lossy().into_owned(),
            source: remote.clone(),
        },
        None => Error::Io {
            path: path.to_path_buf(),
            op,
            source,
        },
    }
}
