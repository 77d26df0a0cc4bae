//! What damage `verify` and `reindex` find in an archive: the error hub's types for it, here so
//! that [`crate::error::Error`] can carry a [`Damage`] without the error module depending on the
//! modules that find it.

use super::{ArchiveError, BlockError, Error, LayoutError};

/// An [`Error`] that a [`Problem`] carries: shared, so that a `Problem` stays `Clone`, and
/// compared by message, so that it stays `PartialEq`.
///
/// ```
/// use nc3pack::{Error, Problem, SharedError};
/// let e = SharedError::new(Error::OutputExists { path: "out.nc".into() });
/// assert_eq!(e.to_string(), "out.nc: output exists (use --force to overwrite)");
/// assert!(matches!(e.error(), Error::OutputExists { .. }));
/// assert_eq!(Problem::Other(e.clone()).to_string(), e.to_string());
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[error(transparent)]
pub struct SharedError(std::sync::Arc<Error>);

impl SharedError {
    /// Wraps `error`.
    ///
    /// ```
    /// let e = nc3pack::SharedError::new(nc3pack::Error::OutputExists { path: "x".into() });
    /// assert!(e.to_string().starts_with("x: output exists"));
    /// ```
    pub fn new(error: Error) -> Self {
        Self(std::sync::Arc::new(error))
    }

    /// The error itself.
    ///
    /// ```
    /// use nc3pack::{Error, SharedError};
    /// let e = SharedError::new(Error::OutputExists { path: "x".into() });
    /// assert!(matches!(e.error(), Error::OutputExists { path } if path.as_os_str() == "x"));
    /// ```
    pub fn error(&self) -> &Error {
        &self.0
    }
}

impl PartialEq for SharedError {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

impl Eq for SharedError {}

/// One damaged part of an archive.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-repair-Damage", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let z = dir.join("obs.nc3z");
/// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
/// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
/// use nc3pack::format::FRAME_HEADER_LEN;
/// // Pack samples/obs_points.nc, then flip a byte in the payload of the block of "temp".
/// let a = nc3pack::Archive::open(&z)?;
/// let temp = a.header().var_id("temp").unwrap();
/// let at = a.entry(temp, 0).offset as usize + FRAME_HEADER_LEN + 10;
/// drop(a);
/// let mut bytes = std::fs::read(&z)?;
/// bytes[at] ^= 0xff;
/// std::fs::write(&z, &bytes)?;
/// let report = nc3pack::verify(&z, &nc3pack::VerifyOptions::default())?;
/// let d = &report.damage[0];
/// assert_eq!(d.part, "block");
/// assert_eq!(d.block, Some((r#"variable "temp""#.to_string(), 0)));
/// assert!(matches!(d.what, nc3pack::Problem::Block(_)));
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// Which part: "lead", "netCDF header", "block", "data section", "index",
    /// "footer", "hash".
    pub part: &'static str,
    /// For a block: its stream's name (`variable "x"`, `residual bytes`, ...) and the block
    /// number.
    pub block: Option<(String, u64)>,
    /// Byte offset in the archive.
    pub offset: u64,
    /// What is wrong.
    pub what: Problem,
}

/// What `verify` found wrong with one part of an archive: the error opening or reading reports
/// for it, or what only `verify`'s own checks see.
///
/// ```
/// use nc3pack::{error::BlockError, Problem};
/// assert_eq!(Problem::Block(BlockError::Lost).to_string(), "block was lost (marked by reindex)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    /// An archive structure is damaged, as opening reports it.
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    /// A block is damaged or lost, as reading it reports.
    #[error(transparent)]
    Block(#[from] BlockError),
    /// Any other error the decoding check met, kept whole (its message is the error's).
    #[error(transparent)]
    Other(SharedError),
    /// A region a scan of the frames could not read as intact frames.
    #[error("{what} ({len} bytes)")]
    Scanned {
        /// What the scan found there.
        what: ScanProblem,
        /// Length of the region.
        len: u64,
    },
    /// A scan found no intact frame for the block.
    #[error("no intact frame found")]
    NoIntactFrame,
    /// Blocks with no intact frame beyond those listed one by one.
    #[error("{count} more blocks with no intact frame")]
    MoreMissing {
        /// How many.
        count: u64,
    },
    /// Bytes of the data section no indexed frame covers.
    #[error("{len} bytes belong to no indexed frame")]
    Unindexed {
        /// How many.
        len: u64,
    },
    /// Two indexed frames overlap.
    #[error("indexed frames overlap")]
    Overlap,
    /// Bytes between the last frame and the index.
    #[error("bytes between the last frame and the index belong to no indexed frame")]
    BeforeIndex,
    /// The lead's record count is not the one the header and file length give.
    #[error("record count {stored} is not the {expected} the header and the file length ({file_len} bytes) give")]
    RecordCount {
        /// Record count in the lead.
        stored: u64,
        /// Record count the header and file length give.
        expected: u64,
        /// Original file length in the lead.
        file_len: u64,
    },
    /// The header's layout does not fit the original file length in the lead.
    #[error("the header does not fit the file length {file_len}: {source}")]
    HeaderVsLength {
        /// Original file length in the lead.
        file_len: u64,
        /// Why.
        source: LayoutError,
    },
    /// A constants frame lists a run of a stream that has no blocks.
    #[error("constants frame {k}: run of stream id {stream}, which has no blocks")]
    RunOfNoStream {
        /// Constants frame number.
        k: usize,
        /// Stream id of the run.
        stream: u32,
    },
    /// A constants frame lists a run past the stream's blocks.
    #[error(
        "constants frame {k}: run of blocks {first}..{end} of {stream} past its {blocks} blocks"
    )]
    RunPastEnd {
        /// Constants frame number.
        k: usize,
        /// First block of the run.
        first: u64,
        /// Block after the run.
        end: u64,
        /// The stream's name.
        stream: String,
        /// The stream's blocks.
        blocks: u64,
    },
    /// A constants frame lists a block whose index entry is not that constant.
    #[error("constants frame {k}: lists block {block} of {stream}, whose index entry is not that constant")]
    NotThatConstant {
        /// Constants frame number.
        k: usize,
        /// The block.
        block: u64,
        /// The stream's name.
        stream: String,
    },
    /// A block is listed by more than one run.
    #[error("constants frame {k}: lists block {block} of {stream} twice")]
    ListedTwice {
        /// Constants frame number.
        k: usize,
        /// The block.
        block: u64,
        /// The stream's name.
        stream: String,
    },
    /// Constant blocks that no constants frame lists.
    #[error("constant block listed in no constants frame ({count} such blocks): a scan could not recover it")]
    Unlisted {
        /// How many.
        count: usize,
    },
    /// The restored data does not hash to the recorded value.
    #[error("restored data hashes to {got:032x}, the archive records {expected:032x}")]
    Hash {
        /// Hash of the restored data.
        got: u128,
        /// Hash recorded at pack time.
        expected: u128,
    },
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.block {
            Some((var, b)) => write!(
                f,
                "block {b} of {var} at byte {}: {}",
                self.offset, self.what
            ),
            None => write!(f, "{} at byte {}: {}", self.part, self.offset, self.what),
        }
    }
}

/// What a scan found wrong with a region of the data section ([`crate::Scanned`]).
///
/// ```
/// use nc3pack::ScanProblem;
/// let p = ScanProblem::PayloadChecksum { stream: 2, block: 7 };
/// assert_eq!(p.to_string(), "payload checksum mismatch (frame of stream 2 block 7)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScanProblem {
    /// An intact frame header whose payload's CRC does not match.
    #[error("payload checksum mismatch (frame of stream {stream} block {block})")]
    PayloadChecksum {
        /// Stream id in the frame header.
        stream: u32,
        /// Block in the frame header.
        block: u64,
    },
    /// Bytes up to the next intact frame header (or the end).
    #[error("bytes that are not an intact frame")]
    NotAFrame,
    /// Bytes at the end, too few for a frame header.
    #[error("trailing bytes too short for a frame")]
    Trailing,
    /// A constants frame, or one of its runs, that cannot be used.
    #[error("constants frame {k}: {problem}")]
    ConstantsFrame {
        /// The constants frame's number.
        k: u64,
        /// What is wrong.
        problem: ConstantsProblem,
    },
    /// A run of constant blocks that overlaps an earlier one of the same stream.
    #[error(
        "constants frames: run of blocks {first}..{end} of stream id {stream} overlaps another"
    )]
    RunOverlap {
        /// Stream id of the run.
        stream: u32,
        /// First block of the run.
        first: u64,
        /// Block after its last.
        end: u64,
    },
}

/// What is wrong with a constants frame a scan found ([`ScanProblem::ConstantsFrame`]).
///
/// ```
/// use nc3pack::ConstantsProblem;
/// let p = ConstantsProblem::NoSuchStream { stream: 9 };
/// assert_eq!(p.to_string(), "a run of stream id 9 that has no blocks");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConstantsProblem {
    /// It decodes to more than a constants frame may hold.
    #[error("{decoded} bytes decoded is too large")]
    TooLarge {
        /// Decoded length in the frame header.
        decoded: u32,
    },
    /// Its frame (header or payload) is damaged.
    #[error(transparent)]
    Frame(#[from] crate::error::FrameError),
    /// Its runs are damaged.
    #[error(transparent)]
    Damaged(#[from] crate::error::ConstantsError),
    /// A run of a stream id that has no blocks.
    #[error("a run of stream id {stream} that has no blocks")]
    NoSuchStream {
        /// Stream id of the run.
        stream: u32,
    },
    /// A run past the stream's blocks, or with a value longer than its element.
    #[error("run of blocks {first}..{end} of {stream} does not fit its {blocks} blocks")]
    RunMisfit {
        /// Stream id of the run.
        stream: u32,
        /// First block of the run.
        first: u64,
        /// Block after its last.
        end: u64,
        /// Blocks of the stream.
        blocks: u64,
    },
    /// More runs than the layout has blocks (the rest are ignored).
    #[error("more runs than the layout has blocks")]
    TooManyRuns,
}
