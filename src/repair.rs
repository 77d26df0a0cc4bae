//! Damage: `verify` finds it, `reindex` recovers what is intact.
//!
//! Verification checks every checksum of the archive (lead, header frame, every frame header and
//! payload, index, footer), checks that the frames tile the data section with
//! no unaccounted bytes and that the constants frames list exactly the constant blocks, and then decodes everything to compare the XXH3-128 of the restored file
//! with the one recorded at pack time.
//!
//! Reindexing rebuilds the index and footer without them: from the end of the header frame it hops
//! from one frame to the next using each frame's stored length, checking each frame's header and
//! payload CRCs (it decompresses only the small constants frames, which list the constant blocks
//! that have no frame). After a damaged frame it resynchronizes on the next sync
//! magic whose header CRC checks. Every intact block is kept; blocks not found are marked lost in
//! the new index, so reading them is an error, `verify` reports them and `unpack` refuses.

use crate::error::{io_err, worker_err, ArchiveError, Error, Result};
use crate::format::streams::{streams_with, Stream};
use crate::format::{self, ConstantRun, FrameHeader, Lead, FRAME_HEADER_LEN, FRAME_MAGIC};
use crate::io::ReadAt;
use crate::nc3::{Header, Layout};
use crate::pack::writer::Sink;
use crate::parallel::WorkerError;
use crate::read::archive::{stream_name, Archive};
use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::Path;

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
pub enum Problem {
    /// An archive structure is damaged, as opening reports it.
    #[error(transparent)]
    Archive(#[from] crate::error::ArchiveError),
    /// A block is damaged or lost, as reading it reports.
    #[error(transparent)]
    Block(#[from] crate::error::BlockError),
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
        source: crate::error::LayoutError,
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

/// What `verify` found.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-repair-VerifyReport", std::process::id()));
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
/// assert!(!report.is_intact());
/// assert_eq!(report.damage.len(), 1);
/// assert_eq!(report.original_matches, None); // no original given
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Damaged parts; empty when the archive is intact.
    pub damage: Vec<Damage>,
    /// Blocks checked.
    pub blocks: u64,
    /// Whether the restored data was decoded and matched the recorded hash.
    pub hash_checked: bool,
    /// With `--against`: whether the original file matched (for a lossy archive: whether its
    /// hash is the one recorded, every quantized value is within its bound and everything else
    /// is equal; see `lossy`).
    pub original_matches: Option<bool>,
    /// With `--against`, for a lossy (quantized) archive: how its data compare with the
    /// original's.
    pub lossy: Option<crate::quantize::LossyComparison>,
}

impl VerifyReport {
    /// Whether nothing is damaged (and the original matches, if one was given).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-repair-is_intact", std::process::id()));
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
    /// assert!(!report.is_intact());
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_intact(&self) -> bool {
        self.damage.is_empty() && self.original_matches != Some(false)
    }
}

/// The result of scanning an archive's data section frame by frame.
#[derive(Debug, Default)]
pub struct Scan {
    /// Intact frames found: (stream id, block) -> (offset, frame header).
    pub frames: HashMap<(u32, u64), (u64, FrameHeader)>,
    /// Damaged or unreadable regions.
    pub damaged: Vec<Scanned>,
}

/// A region of an archive's data section that a scan could not use.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-repair-Scanned", std::process::id()));
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
/// let report = nc3pack::reindex(&z, &dir.join("fixed.nc3z"), &nc3pack::ReindexOptions::default())?;
/// let s = &report.damaged[0];
/// assert_eq!(s.offset as usize, at - 10 - FRAME_HEADER_LEN);
/// assert_eq!(s.what, nc3pack::ScanProblem::PayloadChecksum { stream: temp as u32, block: 0 });
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scanned {
    /// Archive offset of the region (0 for a problem of the constants frames as a whole).
    pub offset: u64,
    /// Its length in bytes (0 for a problem of the constants frames as a whole).
    pub len: u64,
    /// What is wrong there.
    pub what: ScanProblem,
}

/// What a scan found wrong with a region of the data section ([`Scanned`]).
///
/// ```
/// use nc3pack::ScanProblem;
/// let p = ScanProblem::PayloadChecksum { stream: 2, block: 7 };
/// assert_eq!(p.to_string(), "payload checksum mismatch (frame of stream 2 block 7)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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
pub enum ConstantsProblem {
    /// It decodes to more than a constants frame may hold.
    #[error("{decoded} bytes decoded is too large")]
    TooLarge {
        /// Decoded length in the frame header.
        decoded: u32,
    },
    /// Its payload or its runs are damaged.
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

/// Most blocks a repair indexes for a short archive (4 Mi blocks: 4 TiB of data in 1 MiB blocks).
const MAX_REPAIR_BLOCKS: u64 = 1 << 22;

/// Damage lines listed one by one before the rest are summarized.
const MAX_LISTED: usize = 1000;

/// Reads the lead and header frame, which a scan needs to know the layout, and bounds the
/// number of blocks the lead declares.
fn read_front_layout(
    r: &impl ReadAt,
    path: &Path,
    len: u64,
) -> Result<(Lead, Vec<u8>, Header, format::BlockSizes, Layout, u64)> {
    let bad = |part: &'static str, offset: u64, source: ArchiveError| Error::Archive {
        path: path.to_path_buf(),
        part,
        offset,
        source,
    };
    let (lead, hb, header, sizes, start) = crate::read::archive::read_front(r, path, len)?;
    let layout = Layout::with_numrecs(&header, lead.file_len, lead.numrecs)
        .map_err(|e| bad("lead", 24, ArchiveError::Layout(Box::new(e))))?;
    // The lead is untrusted: bound the index a repair would build (16 bytes a block).
    let blocks: u64 = streams_with(&layout, &sizes)
        .iter()
        .map(Stream::blocks)
        .sum();
    if blocks > len.max(MAX_REPAIR_BLOCKS) {
        return Err(bad("lead", 16, ArchiveError::TooManyBlocks { blocks, len }));
    }
    Ok((lead, hb, header, sizes, layout, start))
}

/// Scans the frames of `r` from `start` to `end`, hopping by stored lengths and resynchronizing
/// on the sync magic after damage. Reads frame headers and payloads (to check their CRCs), never
/// decompresses.
pub fn scan(r: &impl ReadAt, start: u64, end: u64) -> std::io::Result<Scan> {
    scan_for(r, start, end, |_| true)
}

/// Like [`scan`], but keeps only the intact frames that `accept` takes: for each (stream id,
/// block) the first one it takes wins, so a frame that does not fit the layout cannot hide a good
/// one found after it.
///
/// ```
/// let bytes: Vec<u8> = Vec::new();
/// let sc = nc3pack::__private::scan_for(&bytes, 0, 0, |h| h.stream == 0).unwrap();
/// assert!(sc.frames.is_empty());
/// ```
///
/// # Errors
///
/// An I/O error reading `r`.
pub fn scan_for(
    r: &impl ReadAt,
    start: u64,
    end: u64,
    accept: impl Fn(&FrameHeader) -> bool,
) -> std::io::Result<Scan> {
    let mut out = Scan::default();
    let mut pos = start;
    let mut hb = [0u8; FRAME_HEADER_LEN];
    let mut payload = Vec::new();
    while pos + FRAME_HEADER_LEN as u64 <= end {
        r.read_exact_at(&mut hb, pos)?;
        let frame = FrameHeader::decode(&hb)
            .ok()
            .filter(|h| pos + FRAME_HEADER_LEN as u64 + u64::from(h.stored_len) <= end);
        if let Some(h) = frame {
            payload.resize(h.stored_len as usize, 0);
            r.read_exact_at(&mut payload, pos + FRAME_HEADER_LEN as u64)?;
            let next = pos + FRAME_HEADER_LEN as u64 + u64::from(h.stored_len);
            if format::crc(&payload) == h.payload_crc {
                if accept(&h) {
                    out.frames.entry((h.stream, h.block)).or_insert((pos, h));
                }
            } else {
                out.damaged.push(Scanned {
                    offset: pos,
                    len: next - pos,
                    what: ScanProblem::PayloadChecksum {
                        stream: h.stream,
                        block: h.block,
                    },
                });
            }
            pos = next;
            continue;
        }
        // Resynchronize: the next sync magic whose frame header checks.
        let from = pos;
        match find_next_frame(r, pos + 1, end)? {
            Some(p) => {
                out.damaged.push(Scanned {
                    offset: from,
                    len: p - from,
                    what: ScanProblem::NotAFrame,
                });
                pos = p;
            }
            None => {
                out.damaged.push(Scanned {
                    offset: from,
                    len: end - from,
                    what: ScanProblem::NotAFrame,
                });
                break;
            }
        }
    }
    if pos < end && out.damaged.last().is_none_or(|d| d.offset + d.len != end) {
        out.damaged.push(Scanned {
            offset: pos,
            len: end - pos,
            what: ScanProblem::Trailing,
        });
    }
    Ok(out)
}

fn find_next_frame(r: &impl ReadAt, from: u64, end: u64) -> std::io::Result<Option<u64>> {
    const CHUNK: u64 = 1 << 20;
    let mut at = from;
    let mut buf = Vec::new();
    while at + FRAME_HEADER_LEN as u64 <= end {
        let n = CHUNK.min(end - at);
        buf.resize(n as usize, 0);
        r.read_exact_at(&mut buf, at)?;
        for i in 0..buf.len().saturating_sub(3) {
            if buf[i..i + 4] == FRAME_MAGIC {
                let p = at + i as u64;
                if p + FRAME_HEADER_LEN as u64 > end {
                    return Ok(None);
                }
                let mut hb = [0u8; FRAME_HEADER_LEN];
                r.read_exact_at(&mut hb, p)?;
                if FrameHeader::decode(&hb).is_ok() {
                    return Ok(Some(p));
                }
            }
        }
        // Overlap by 3 bytes so a magic across chunks is found.
        at += n.saturating_sub(3).max(1);
    }
    Ok(None)
}

/// Checks an archive completely (see the module docs), and compares it with the original file
/// if `opts.against` names it. Returns the report: damage is listed there, not returned as an
/// error.
///
/// ```no_run
/// use nc3pack::{verify, VerifyOptions};
/// let report = verify("/tmp/sst.nc3z".as_ref(), &VerifyOptions::default().with_threads(2))?;
/// assert!(report.is_intact());
/// let opts = VerifyOptions::default().with_against("/tmp/sst.nc");
/// assert_eq!(verify("/tmp/sst.nc3z".as_ref(), &opts)?.original_matches, Some(true));
/// # Ok::<(), nc3pack::Error>(())
/// ```
///
/// # Errors
///
/// Only when the archive cannot be checked at all: [`Error::Io`] when it (or the original)
/// cannot be opened or read, [`Error::NotSeekable`] for an archive that is a pipe or device,
/// [`Error::Thread`] when a worker thread cannot be started, [`Error::NoMemory`] when a block
/// or frame does not fit in memory.
pub fn verify(path: &Path, opts: &crate::VerifyOptions) -> Result<VerifyReport> {
    let (against, threads) = (opts.against.as_deref(), opts.threads);
    let f = crate::read::input::open_input(path, "verify")?;
    let len = f.size().map_err(io_err(path, "stat"))?;
    let mut report = VerifyReport::default();
    // Damage from the error's variant: the part, block and offset it names, and its cause.
    let to_damage = |e: Error| match e {
        Error::Archive {
            part,
            offset,
            source,
            ..
        } => Damage {
            part,
            block: None,
            offset,
            what: source.into(),
        },
        Error::Block {
            var,
            block,
            offset,
            source,
            ..
        } => Damage {
            part: "block",
            block: Some((var, block)),
            offset,
            what: source.into(),
        },
        other => Damage {
            part: "archive",
            block: None,
            offset: 0,
            what: Problem::Other(SharedError::new(other)),
        },
    };
    match Archive::from_reader(f, path) {
        Ok(mut a) => {
            a.set_threads(threads);
            a.set_cache_budget(0);
            verify_open(&a, &mut report, threads, &to_damage)?;
        }
        Err(Error::Io { path, op, source }) => return Err(Error::Io { path, op, source }),
        Err(e) => {
            report.damage.push(to_damage(e));
            // Without a usable index, scan the frames to list what else is damaged or missing.
            let f = crate::read::input::open_input(path, "verify")?;
            if let Ok((_, _, header, sizes, layout, start)) = read_front_layout(&f, path, len) {
                let all = streams_with(&layout, &sizes);
                let sc =
                    scan_for(&f, start, len, fits_layout(&all)).map_err(io_err(path, "read"))?;
                let mut damaged = sc.damaged.clone();
                let constants =
                    scanned_constants(&f, &sc, &all, &mut damaged).map_err(io_err(path, "read"))?;
                for d in damaged {
                    report.damage.push(Damage {
                        part: "data section",
                        block: None,
                        offset: d.offset,
                        what: Problem::Scanned {
                            what: d.what,
                            len: d.len,
                        },
                    });
                }
                let mut missing = 0u64;
                for s in all {
                    for b in 0..s.blocks() {
                        report.blocks += 1;
                        if !sc.frames.contains_key(&(s.id, b)) && constants.value(s.id, b).is_none()
                        {
                            missing += 1;
                            if report.damage.len() < MAX_LISTED {
                                report.damage.push(Damage {
                                    part: "block",
                                    block: Some((stream_name(&header, s.id), b)),
                                    offset: 0,
                                    what: Problem::NoIntactFrame,
                                });
                            }
                        }
                    }
                }
                let listed = report.damage.iter().filter(|d| d.block.is_some()).count() as u64;
                if missing > listed {
                    report.damage.push(Damage {
                        part: "data section",
                        block: None,
                        offset: start,
                        what: Problem::MoreMissing {
                            count: missing - listed,
                        },
                    });
                }
            }
        }
    }
    if let Some(orig) = against {
        if let Ok(a) = Archive::open(path) {
            if let Some(lossy) = crate::quantize::Lossy::of(a.header()) {
                let cmp = crate::pack::lossy::compare_with_original(&a, &lossy, orig)?;
                report.original_matches = Some(
                    cmp.original_recorded
                        && cmp.others_equal
                        && cmp.vars.iter().all(|v| v.within_bound),
                );
                report.lossy = Some(cmp);
                return Ok(report);
            }
        }
        let stored = Archive::open(path)
            .ok()
            .map(|a| (a.original_hash(), a.layout().file_len));
        // Read in order: the original may be a pipe.
        let of = std::fs::File::open(orig).map_err(io_err(orig, "open"))?;
        let (h, olen) = hash_stream(of).map_err(io_err(orig, "read"))?;
        report.original_matches = Some(stored == Some((h, olen)));
    }
    Ok(report)
}

fn verify_open<R: ReadAt>(
    a: &Archive<R>,
    report: &mut VerifyReport,
    threads: usize,
    to_damage: &dyn Fn(Error) -> Damage,
) -> Result<()> {
    // 1. Every frame's checksums (read, no decompression), in parallel.
    let blocks: Vec<(usize, u64)> = a.blocks().collect();
    report.blocks = blocks.len() as u64;
    a.plan_reads(blocks.iter().copied())?;
    let mut damaged = Vec::new();
    let threads = crate::parallel::bound_threads(threads);
    crate::parallel::ordered_map(
        &blocks,
        threads,
        threads * 4,
        |&(s, b)| a.check_block(s, b),
        |_, r| {
            if let Err(e) = r {
                damaged.push(e);
            }
            Ok::<(), WorkerError>(())
        },
    )
    .map_err(worker_err(a.path()))?;
    // Not damage: a frame the machine has no memory for cannot be checked.
    if let Some(i) = damaged
        .iter()
        .position(|e| matches!(e, Error::NoMemory { .. }))
    {
        return Err(damaged.swap_remove(i));
    }
    report.damage.extend(damaged.into_iter().map(to_damage));
    // 2. The frames tile the data section, from the header frame to the index.
    let mut spans: Vec<(u64, u64)> = blocks
        .iter()
        .map(|&(s, b)| a.entry(s, b))
        .chain(a.constants_frames())
        .filter(|e| !e.is_lost() && !e.is_constant())
        .map(|e| (e.offset, e.frame_len()))
        .collect();
    spans.sort_unstable();
    let mut pos = a.data_start();
    for (off, n) in spans {
        if off != pos {
            report.damage.push(Damage {
                part: "data section",
                block: None,
                offset: pos.min(off),
                what: if off > pos {
                    Problem::Unindexed { len: off - pos }
                } else {
                    Problem::Overlap
                },
            });
        }
        pos = pos.max(off + n);
    }
    if pos != a.index_offset() {
        report.damage.push(Damage {
            part: "data section",
            block: None,
            offset: pos,
            what: Problem::BeforeIndex,
        });
    }
    // 3. The constants frames list exactly the constant blocks, with their elements, so that
    // a scan would find them.
    check_constants(a, report, to_damage);
    // 4. The lead's record count is the one the header and the file length give (as the writer
    // counts them, for a file or a stream); where it changes no block, nothing else would notice.
    let lead = a.lead();
    match crate::nc3::Layout::new(a.header(), lead.file_len) {
        Ok(l) if l.numrecs == lead.numrecs => {}
        Ok(l) => report.damage.push(Damage {
            part: "lead",
            block: None,
            offset: 24,
            what: Problem::RecordCount {
                stored: lead.numrecs,
                expected: l.numrecs,
                file_len: lead.file_len,
            },
        }),
        Err(e) => report.damage.push(Damage {
            part: "lead",
            block: None,
            offset: 0,
            what: Problem::HeaderVsLength {
                file_len: lead.file_len,
                source: e,
            },
        }),
    }
    // 5. Decode everything and compare the restored file's hash.
    if report.damage.is_empty() {
        match crate::read::unpack::unpack_to(
            a,
            std::io::sink(),
            Path::new("(verify)"),
            threads,
            &|_| {},
        ) {
            Ok(h) if h == a.original_hash() => report.hash_checked = true,
            Ok(h) => report.damage.push(Damage {
                part: "hash",
                block: None,
                offset: 0,
                what: Problem::Hash {
                    got: h,
                    expected: a.original_hash(),
                },
            }),
            // Not damage: the check could not run (no thread, no memory), or nc3pack has a bug.
            Err(e @ (Error::Thread { .. } | Error::NoMemory { .. } | Error::Internal(_))) => {
                return Err(e)
            }
            Err(e) => report.damage.push(to_damage(e)),
        }
    }
    Ok(())
}

/// Checks that every constant block is listed by exactly one run of a constants frame, with its
/// element, and that every run lists constant blocks.
fn check_constants<R: ReadAt>(
    a: &Archive<R>,
    report: &mut VerifyReport,
    to_damage: &dyn Fn(Error) -> Damage,
) {
    let by_id: HashMap<u32, usize> = (0..a.stream_count())
        .filter(|&s| a.block_count(s) > 0)
        .map(|s| (a.stream_id(s), s))
        .collect();
    let mut listed: std::collections::HashSet<(usize, u64)> = std::collections::HashSet::new();
    for k in 0..a.constants_frames().len() {
        let offset = a.constants_frames()[k].offset;
        let mut bad = |what: Problem| {
            report.damage.push(Damage {
                part: "constants frame",
                block: None,
                offset,
                what,
            })
        };
        let runs = match a.constant_runs(k) {
            Ok(runs) => runs,
            Err(e) => {
                report.damage.push(to_damage(e));
                continue;
            }
        };
        for r in runs {
            let Some(&s) = by_id.get(&r.stream) else {
                bad(Problem::RunOfNoStream {
                    k,
                    stream: r.stream,
                });
                continue;
            };
            if r.first + r.count > a.block_count(s) {
                bad(Problem::RunPastEnd {
                    k,
                    first: r.first,
                    end: r.first + r.count,
                    stream: a.stream_name(s),
                    blocks: a.block_count(s),
                });
                continue;
            }
            for b in r.first..r.first + r.count {
                let e = a.entry(s, b);
                if !e.is_constant() || e.offset.to_le_bytes() != r.value {
                    bad(Problem::NotThatConstant {
                        k,
                        block: b,
                        stream: a.stream_name(s),
                    });
                    break;
                }
                if !listed.insert((s, b)) {
                    bad(Problem::ListedTwice {
                        k,
                        block: b,
                        stream: a.stream_name(s),
                    });
                    break;
                }
            }
        }
    }
    let unlisted: Vec<(usize, u64)> = a
        .blocks()
        .filter(|&(s, b)| a.entry(s, b).is_constant() && !listed.contains(&(s, b)))
        .collect();
    if let Some(&(s, b)) = unlisted.first() {
        report.damage.push(Damage {
            part: "index",
            block: Some((a.stream_name(s), b)),
            offset: a.index_offset(),
            what: Problem::Unlisted {
                count: unlisted.len(),
            },
        });
    }
}

/// The xxh3-128 hash and the length of everything `r` yields.
fn hash_stream(mut r: impl std::io::Read) -> std::io::Result<(u128, u64)> {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 4 << 20];
    let mut len = 0u64;
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => return Ok((h.digest128(), len)),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        h.update(&buf[..n]);
        len += n as u64;
    }
}

/// What `reindex` recovered.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-repair-ReindexReport", std::process::id()));
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
/// let report = nc3pack::reindex(&z, &dir.join("fixed.nc3z"), &nc3pack::ReindexOptions::default())?;
/// assert_eq!(report.lost, [(r#"variable "temp""#.to_string(), 0)]);
/// assert_eq!(report.recovered, report.blocks - 1);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReindexReport {
    /// Blocks the layout needs.
    pub blocks: u64,
    /// Blocks recovered intact.
    pub recovered: u64,
    /// Blocks lost: (stream name, `variable "x"`, `residual bytes`, ...; block number).
    pub lost: Vec<(String, u64)>,
    /// Damaged regions skipped while scanning.
    pub damaged: Vec<Scanned>,
}

/// Rebuilds `input`'s index and footer by scanning its frames, writing a valid archive to
/// `output` (atomically; refuses an existing `output` unless `opts.force`). Needs the lead and
/// header copy to be intact. Blocks not found are marked lost (listed in the report).
///
/// ```no_run
/// use nc3pack::{reindex, ReindexOptions};
/// let r = reindex("cut.nc3z".as_ref(), "fixed.nc3z".as_ref(), &ReindexOptions::default())?;
/// println!("{} of {} blocks recovered", r.recovered, r.blocks);
/// # Ok::<(), nc3pack::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::Archive`] when the lead or header frame is damaged (nothing to scan against), or
/// the lead's record count is not the one its header and original length give
/// ([`crate::error::ArchiveError::RecordCount`]), [`Error::Io`] when `input` cannot be read or `output` written, [`Error::NotSeekable`] for an
/// `input` that is a pipe or device, [`Error::OutputExists`] for an existing `output` without
/// `force`, [`Error::Refused`] for an `output` that is the input or a directory. On an error no
/// output is left behind.
pub fn reindex(input: &Path, output: &Path, opts: &crate::ReindexOptions) -> Result<ReindexReport> {
    let force = opts.force;
    let f = crate::read::open_seekable(input, "reindex")?;
    let len = f.size().map_err(io_err(input, "stat"))?;
    let (lead, hb, header, sizes, layout, start) = read_front_layout(&f, input, len)?;
    // The lead is copied to the output as it is: one whose record count the writer would not
    // have recorded (intact checksum, wrong count) cannot be repaired here, and an archive
    // rebuilt around it would not verify.
    let bad_lead = |source| Error::Archive {
        path: input.to_path_buf(),
        part: "lead",
        offset: 24,
        source,
    };
    match Layout::new(&header, lead.file_len) {
        Ok(l) if l.numrecs == lead.numrecs => {}
        Ok(l) => {
            return Err(bad_lead(ArchiveError::RecordCount {
                stored: lead.numrecs,
                expected: l.numrecs,
                file_len: lead.file_len,
            }))
        }
        Err(e) => return Err(bad_lead(ArchiveError::Layout(Box::new(e)))),
    }
    let all = streams_with(&layout, &sizes);
    let sc = scan_for(&f, start, len, fits_layout(&all)).map_err(io_err(input, "read"))?;
    let mut report = ReindexReport {
        damaged: sc.damaged.clone(),
        ..ReindexReport::default()
    };
    let constants =
        scanned_constants(&f, &sc, &all, &mut report.damaged).map_err(io_err(input, "read"))?;
    crate::atomic::write_atomically(output, force, Some(input), |out| {
        let mut w = BufWriter::with_capacity(1 << 20, out);
        let werr = |source| Error::Io {
            path: output.to_path_buf(),
            op: "write",
            source,
        };
        let mut head = lead.encode().to_vec();
        head.extend_from_slice(&format::header_frame(&hb));
        if lead.block_sizes_frame {
            head.extend_from_slice(&sizes.frame(header.var_count()));
        }
        w.write_all(&head).map_err(io_err(output, "write"))?;
        let mut sink = Sink::new(head.len() as u64);
        let mut frame = Vec::new();
        for (si, s) in all.iter().enumerate() {
            for b in 0..s.blocks() {
                report.blocks += 1;
                let found = sc
                    .frames
                    .get(&(s.id, b))
                    .filter(|(_, h)| frame_fits(s, b, h));
                if let Some(&(off, h)) = found {
                    frame.resize(FRAME_HEADER_LEN + h.stored_len as usize, 0);
                    f.read_exact_at(&mut frame, off)
                        .map_err(io_err(input, "read"))?;
                    sink.frame(&mut w, si, &h, &frame).map_err(werr)?;
                    report.recovered += 1;
                } else if let Some(v) = constants.value(s.id, b) {
                    let esize = s.esize.clamp(1, 8);
                    sink.constant(&mut w, si, s.id, b, &v[..esize])
                        .map_err(werr)?;
                    report.recovered += 1;
                } else {
                    sink.lost(si, b);
                    report.lost.push((stream_name(&header, s.id), b));
                }
            }
        }
        sink.finish(&mut w, &all, output)?;
        w.flush().map_err(io_err(output, "write"))?;
        Ok(())
    })?;
    Ok(report)
}

/// The runs of constant blocks that the constants frames found by a scan list, by stream id,
/// sorted by first block, without overlaps.
#[derive(Debug, Default)]
pub struct ScannedConstants(HashMap<u32, Vec<ConstantRun>>);

impl ScannedConstants {
    /// The element of block `b` of the stream with frame id `id`, if a run lists it.
    pub fn value(&self, id: u32, b: u64) -> Option<&[u8; 8]> {
        let runs = self.0.get(&id)?;
        let r = &runs[runs.partition_point(|r| r.first <= b).checked_sub(1)?];
        (b - r.first < r.count).then_some(&r.value)
    }
}

/// Reads the constants frames a scan found (in frame order) and keeps the runs that fit the
/// layout's streams `all`; what does not fit is added to `damaged`. Keeps at most as many runs as
/// the layout has blocks, so a hostile archive cannot make it allocate more than its index.
pub fn scanned_constants(
    r: &impl ReadAt,
    sc: &Scan,
    all: &[Stream],
    damaged: &mut Vec<Scanned>,
) -> std::io::Result<ScannedConstants> {
    let by_id: HashMap<u32, &Stream> = all.iter().map(|s| (s.id, s)).collect();
    let max_runs: u64 = all.iter().map(Stream::blocks).sum();
    let mut frames: Vec<(u64, u64, FrameHeader)> = sc
        .frames
        .iter()
        .filter(|((id, _), _)| *id == format::CONSTANTS_ID)
        .map(|(&(_, k), &(off, h))| (k, off, h))
        .collect();
    frames.sort_unstable_by_key(|t| t.0);
    let mut per: HashMap<u32, Vec<ConstantRun>> = HashMap::new();
    let mut kept = 0u64;
    let mut payload = Vec::new();
    let mut table = Vec::new();
    for (k, off, h) in frames {
        let frame_len = FRAME_HEADER_LEN as u64 + u64::from(h.stored_len);
        let mut bad = |problem: ConstantsProblem| {
            damaged.push(Scanned {
                offset: off,
                len: frame_len,
                what: ScanProblem::ConstantsFrame { k, problem },
            })
        };
        if h.decoded_len as usize > format::MAX_RUNS_PER_FRAME * format::RUN_LEN {
            bad(ConstantsProblem::TooLarge {
                decoded: h.decoded_len,
            });
            continue;
        }
        payload.resize(h.stored_len as usize, 0);
        r.read_exact_at(&mut payload, off + FRAME_HEADER_LEN as u64)?;
        let runs = crate::codec::decode_payload(&h, &payload, &mut table)
            .map_err(crate::error::ConstantsError::from)
            .and_then(|()| ConstantRun::decode_all(&table));
        let runs = match runs {
            Ok(runs) => runs,
            Err(e) => {
                bad(ConstantsProblem::Damaged(e));
                continue;
            }
        };
        for run in runs {
            let Some(s) = by_id.get(&run.stream) else {
                bad(ConstantsProblem::NoSuchStream { stream: run.stream });
                continue;
            };
            let esize = s.esize.clamp(1, 8);
            if run.first + run.count > s.blocks() || run.value[esize..].iter().any(|&x| x != 0) {
                bad(ConstantsProblem::RunMisfit {
                    stream: s.id,
                    first: run.first,
                    end: run.first + run.count,
                    blocks: s.blocks(),
                });
                continue;
            }
            if kept >= max_runs {
                bad(ConstantsProblem::TooManyRuns);
                break;
            }
            kept += 1;
            per.entry(run.stream).or_default().push(run);
        }
    }
    for (id, runs) in &mut per {
        runs.sort_by_key(|r| r.first);
        let mut end = 0u64;
        runs.retain(|r| {
            let keep = r.first >= end;
            if keep {
                end = r.first + r.count;
            } else {
                damaged.push(Scanned {
                    offset: 0,
                    len: 0,
                    what: ScanProblem::RunOverlap {
                        stream: *id,
                        first: r.first,
                        end: r.first + r.count,
                    },
                });
            }
            keep
        });
    }
    Ok(ScannedConstants(per))
}

/// Whether a scanned frame is the block the layout expects (right decoded length), and one an
/// index entry can point to (a constant frame has a payload: its element).
/// Whether a scanned frame can be a block of one of the streams `all` (or a constants frame, whose
/// runs are checked when they are read).
fn fits_layout(all: &[Stream]) -> impl Fn(&FrameHeader) -> bool + '_ {
    let by_id: HashMap<u32, &Stream> = all.iter().map(|s| (s.id, s)).collect();
    move |h| {
        (h.stream == format::CONSTANTS_ID
            && h.esize == 1
            && format::is_constants_codec(h.codec, h.filter))
            || by_id
                .get(&h.stream)
                .is_some_and(|s| h.block < s.blocks() && frame_fits(s, h.block, h))
    }
}

fn frame_fits(s: &Stream, b: u64, h: &FrameHeader) -> bool {
    u64::from(h.decoded_len) == s.block_len(b)
        && usize::from(h.esize) == s.esize
        && !(h.codec == format::Codec::Constant && h.stored_len == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A raw frame of stream `stream`, block `block`, holding `payload`.
    fn frame(stream: u32, block: u64, payload: &[u8]) -> Vec<u8> {
        let h = FrameHeader {
            stored_len: payload.len() as u32,
            decoded_len: payload.len() as u32,
            stream,
            block,
            codec: format::Codec::None,
            filter: format::Filter::None,
            esize: 1,
            payload_crc: crc32c::crc32c(payload),
        };
        let mut f = h.encode().to_vec();
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn scan_reports_each_damaged_region_by_kind() {
        // good frame (0..44) | frame with a flipped payload byte (44..88) | 10 bytes of junk
        // (88..98) | good frame (98..142) | 20 trailing bytes (142..162).
        let mut b = frame(0, 0, b"abcdefgh");
        let mut bad = frame(3, 9, b"ijklmnop");
        bad[FRAME_HEADER_LEN + 2] ^= 1;
        b.extend_from_slice(&bad);
        b.extend_from_slice(&[0x55; 10]);
        b.extend_from_slice(&frame(0, 1, b"qrstuvwx"));
        b.extend_from_slice(&[0u8; 20]);
        let sc = scan(&b, 0, b.len() as u64).unwrap();
        assert_eq!(sc.frames.len(), 2);
        assert_eq!(
            sc.damaged,
            vec![
                Scanned {
                    offset: 44,
                    len: 44,
                    what: ScanProblem::PayloadChecksum {
                        stream: 3,
                        block: 9
                    },
                },
                Scanned {
                    offset: 88,
                    len: 10,
                    what: ScanProblem::NotAFrame,
                },
                Scanned {
                    offset: 142,
                    len: 20,
                    what: ScanProblem::Trailing,
                },
            ]
        );
    }
}
