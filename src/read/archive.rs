//! Reading archives: open, check the structures, locate and decode blocks.

use crate::codec::word::be_to_native;
use crate::codec::{decode_payload, decode_payload_into, decode_payload_part, DecodeScratch};
use crate::error::{
    io_err, ArchiveError, BlockError, ConstantsError, Error, FooterError, FrameError, IndexError,
    Result,
};
use crate::format::streams::streams_with;
use crate::format::{
    self, Footer, FrameHeader, IndexDecoder, IndexEntry, Lead, FOOTER_LEN, FRAME_HEADER_LEN,
    LEAD_LEN,
};
use crate::io::ReadAt;
use crate::nc3::slab::Hyperslab;
use crate::nc3::{Header, Layout};
use crate::read::cache::{Block, BlockCache, CacheStats};
use crate::read::dataset::Dataset;
use crate::read::Input;
use std::path::Path;
use std::sync::Arc;

mod ahead;
mod blocks;
mod front;
mod index;
mod plan;
mod policy;
mod scattered;
mod source;
mod stream;

pub(crate) use front::{check_front, read_front};
pub(crate) use index::stream_name;
use index::ArchiveIndex;
pub use policy::CachePolicy;
use policy::PolicyCell;
use source::BlockSource;

/// Default byte budget of an archive's block cache: 64 MiB.
///
/// ```
/// assert_eq!(nc3pack::DEFAULT_CACHE_BYTES, 64 << 20);
/// ```
pub const DEFAULT_CACHE_BYTES: u64 = 64 << 20;

/// Largest single read when adjacent frames are fetched together.
const MAX_COALESCED_READ: u64 = 16 << 20;

/// The pieces a local archive's index is read in: 4,096 entries.
const INDEX_PIECE: u64 = 64 << 10;

/// An open .nc3z archive.
///
/// Opening reads the lead, the netCDF header frame and, from the end, the footer and index, and
/// checks all of their checksums; blocks are read on demand, through one LRU cache of decoded
/// blocks for the whole archive (its byte budget: [`Archive::set_cache_budget`], 64 MiB by default). Hyperslab reads are
/// the [`Dataset`] trait's. An `Archive` is `Send + Sync`: share it between threads with `Arc`
/// or scoped threads.
///
/// ```no_run
/// let a = nc3pack::Archive::open("/tmp/sst.nc3z").unwrap();
/// let sst = a.header().var_id("sst").unwrap();
/// let bytes = a.read_var_bytes(sst).unwrap(); // big-endian, as in the netCDF file
/// println!("{} bytes", bytes.len());
/// ```
pub struct Archive<R: ReadAt = Input> {
    /// Where the bytes come from, and the path that names them.
    source: BlockSource<R>,
    /// What opening read and checked: lead, header, layout, streams, index entries, footer.
    index: ArchiveIndex,
    cache: BlockCache,
    /// Which blocks reads cache beyond those every read does ([`Archive::set_cache_policy`]).
    policy: PolicyCell,
    /// Threads a large read decodes on; 0: as many as the machine has cores (looked up when a
    /// read first needs it, not at open).
    threads: usize,
    /// Where the last reads of each stream ended: which reads are sequential.
    ahead: ahead::Ahead,
}

impl Archive<Input> {
    /// Opens the archive at `path`: a file, or a URL (`s3://BUCKET/KEY`, `http(s)://...`,
    /// `file://...`, read with [`crate::remote::RemoteOptions::from_env`], read at this call;
    /// needs the `remote` feature). [`Archive::open_url`] reads a URL with given options.
    ///
    /// ```no_run
    /// let archive = nc3pack::Archive::open("/tmp/sst.nc3z")?;
    /// println!("{} streams in {} bytes", archive.stream_count(), archive.len());
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when `path` cannot be opened or is not a regular file; [`Error::Remote`]
    /// when a URL cannot be read; [`Error::Archive`] and header errors naming the field and
    /// offset when the lead, header frame, footer or index is damaged, truncated or
    /// inconsistent.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let f = crate::read::input::open_input(path, "reading an archive")?;
        Archive::from_input(f, path)
    }

    /// [`Archive::from_reader`] for an [`Input`]: a local file's frames can also be read by
    /// the pool's threads (decoding ahead of a sequential reader).
    pub(crate) fn from_input(f: Input, path: &Path) -> Result<Self> {
        let fd = match &f {
            Input::File(f) => Some(std::os::fd::AsRawFd::as_raw_fd(f)),
            #[cfg(feature = "remote")]
            Input::Remote(_) => None,
            Input::Memory(_) => None,
        };
        let opened = fd
            .map(crate::io::FileState::of)
            .transpose()
            .map_err(crate::error::io_err(path, "stat"))?;
        let mut a = Archive::from_reader(f, path)?;
        // (A compact archive is read into memory whole, and its file closed.)
        if !a.source.is_compact() {
            a.source.fd = fd;
            a.source.opened = opened;
            // (The lead, header and index were read from the file as it was then.)
            a.source.check_unchanged()?;
        }
        Ok(a)
    }

    /// Opens the archive at a URL with explicit options (credentials, endpoint, anonymous
    /// access): two concurrent range requests for a typical archive, a third when its index is
    /// larger than [`crate::remote::TAIL_BYTES`].
    ///
    /// ```no_run
    /// let opts = nc3pack::remote::RemoteOptions::from_env().with_anon(true);
    /// let a = nc3pack::Archive::open_url("s3://bucket/sst.nc3z", &opts)?;
    /// println!("{} bytes", a.len());
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Remote`] naming the URL and the cause (no credentials, access denied, no such
    /// object, ...), and the errors of [`Archive::open`] for an object that is not an archive.
    #[cfg(feature = "remote")]
    pub fn open_url(url: &str, opts: &crate::remote::RemoteOptions) -> Result<Self> {
        let f = crate::read::input::open_url(url, opts, "reading an archive")?;
        Archive::from_reader(f, Path::new(url))
    }
}

impl<R: ReadAt> Archive<R> {
    /// Opens an archive from any positional reader; `path` names it in errors.
    ///
    /// ```
    /// // An archive held in memory (here: the samples' smallest file, packed).
    /// let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let z = dir.join("x.nc3z");
    /// let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// nc3pack::pack_file("samples/no_variables.nc".as_ref(), &z, &opts)?;
    /// let bytes: Vec<u8> = std::fs::read(&z)?;
    /// let archive = nc3pack::Archive::from_reader(bytes, "in-memory".as_ref())?;
    /// assert_eq!(archive.lost_blocks(), vec![]);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Archive::open`]: a read error, or a damaged, truncated or inconsistent lead, header
    /// frame, footer or index, named with `path`.
    pub fn from_reader(reader: R, path: &Path) -> Result<Self> {
        let bad = |part: &'static str, offset: u64, source: ArchiveError| Error::Archive {
            path: path.to_path_buf(),
            part,
            offset,
            source,
        };
        let reader = crate::read::open_expanded(reader, path)?;
        let len = reader.size().map_err(io_err(path, "stat"))?;
        let (lead, hb, header, sizes, data_start) = read_front(&reader, path, len)?;
        // The header keeps its own copy of these bytes.
        drop(hb);
        // A compact archive's footer that does not check is left out of its full form: say
        // what is wrong with it, at its offset in the compact archive, not that the full form
        // (longer than the file) has no footer.
        if let format::compact::Expanded::Memory(_, _, Some((at, what))) = &reader {
            return Err(bad("footer", *at, what.clone().into()));
        }
        if data_start + FOOTER_LEN as u64 > len {
            return Err(bad("footer", len, FooterError::Truncated.into()));
        }
        let layout = Layout::with_numrecs(&header, lead.file_len, lead.numrecs)
            .map_err(|e| bad("lead", 24, ArchiveError::Layout(Box::new(e))))?;
        let streams = streams_with(&layout, &sizes);
        let total_blocks = streams.last().map_or(0, |s| s.first_slot + s.blocks());

        let footer_at = len - FOOTER_LEN as u64;
        let mut fb = [0u8; FOOTER_LEN];
        reader
            .read_exact_at(&mut fb, footer_at)
            .map_err(io_err(path, "read"))?;
        let footer = Footer::decode(&fb).map_err(|e| bad("footer", footer_at, e.into()))?;
        // The index holds an entry per block, then one per constants frame.
        let min_len = format::index_len(total_blocks, 0);
        if footer.index_offset < data_start
            || footer.index_offset.checked_add(footer.index_len) != Some(footer_at)
            || min_len.is_none_or(|m| footer.index_len < m)
        {
            return Err(bad(
                "footer",
                footer_at,
                FooterError::IndexPlacement {
                    index_offset: footer.index_offset,
                    index_len: footer.index_len,
                    min_len: min_len.unwrap_or(u64::MAX),
                    footer_at,
                }
                .into(),
            ));
        }
        // A local file's index is read in pieces through one buffer, each decoded as it
        // arrives (an index of many blocks is not held twice, as bytes and as entries); a
        // remote one with one request.
        let mut index = IndexDecoder::new(footer.index_len, total_blocks);
        let piece = if reader.wants_prefetch() {
            footer.index_len
        } else {
            INDEX_PIECE.min(footer.index_len)
        };
        let mut ib = vec![0u8; piece as usize];
        let mut at = 0;
        while at < footer.index_len {
            let k = piece.min(footer.index_len - at) as usize;
            reader
                .read_exact_at(&mut ib[..k], footer.index_offset + at)
                .map_err(io_err(path, "read"))?;
            index.push(&ib[..k]);
            at += k as u64;
        }
        drop(ib);
        if index.crc() != footer.index_crc {
            return Err(bad(
                "index",
                footer.index_offset,
                IndexError::Checksum.into(),
            ));
        }
        let (entries, constants_frames) = index
            .finish()
            .map_err(|e| bad("index", footer.index_offset, e.into()))?;
        let index = ArchiveIndex {
            lead,
            header,
            layout,
            block_sizes: sizes,
            streams,
            entries,
            constants_frames,
            footer,
            len,
            data_start,
        };
        index
            .check()
            .map_err(|e| bad("index", index.footer.index_offset, e.into()))?;
        Ok(Archive {
            source: BlockSource {
                path: path.to_path_buf(),
                reader,
                fd: None,
                file: std::sync::OnceLock::new(),
                opened: None,
            },
            index,
            cache: BlockCache::new(DEFAULT_CACHE_BYTES),
            policy: PolicyCell::new(CachePolicy::default()),
            threads: 0,
            ahead: ahead::Ahead::default(),
        })
    }

    /// The netCDF-3 header of the original file.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-header", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// assert_eq!(a.header().var_count(), 8);
    /// assert_eq!(a.header().var(4).name(), "temp");
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn header(&self) -> &Header {
        &self.index.header
    }

    /// The original header's bytes, verbatim.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-header_bytes", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// let original = std::fs::read("samples/obs_points.nc")?;
    /// assert_eq!(a.header_bytes(), &original[..a.header_bytes().len()]);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn header_bytes(&self) -> &[u8] {
        self.index.header.bytes()
    }

    /// The data layout of the original file, with the record dimension materialized.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-layout", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// assert_eq!(a.layout().numrecs, 20000);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn layout(&self) -> &Layout {
        &self.index.layout
    }

    /// The archive's lead (original length, records, block size).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-lead", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// assert_eq!(a.lead().file_len, std::fs::metadata("samples/obs_points.nc")?.len());
    /// assert_eq!(a.lead().numrecs, 20000);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lead(&self) -> &Lead {
        &self.index.lead
    }

    /// Whether the archive is stored in the compact form (format 1.2; it reads as the full
    /// form it expands to).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-is_compact", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// let z = dir.join("empty_attrs.nc3z");
    /// let opts = nc3pack::PackOptions::default().with_force(true);
    /// nc3pack::pack_file("samples/empty_attrs.nc".as_ref(), &z, &opts)?;
    /// assert!(nc3pack::Archive::open(&z)?.is_compact()); // a small file: compact by default
    /// nc3pack::pack_file("samples/empty_attrs.nc".as_ref(), &z, &opts.with_compact(false))?;
    /// assert!(!nc3pack::Archive::open(&z)?.is_compact());
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_compact(&self) -> bool {
        self.source.is_compact()
    }

    /// Whether the header frame is compressed with the header dictionary (codec 7, format 1.3
    /// in the compact form).
    pub(crate) fn header_dict(&self) -> bool {
        self.source.header_dict()
    }

    /// The nominal block size of each stream: the lead's, or per variable (format 1.1).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-block_sizes", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true)
    ///     .with_var("temp:block-size=4KiB".parse()?);
    /// nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?;
    /// let temp = a.header().var_id("temp").unwrap();
    /// assert_eq!(a.block_sizes().var(temp), 4096);
    /// assert_eq!(a.block_sizes().var(0), 1 << 20);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn block_sizes(&self) -> &format::BlockSizes {
        &self.index.block_sizes
    }

    /// The xxh3-128 hash of the original file, as recorded at pack time.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-original_hash", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// let original = std::fs::read("samples/obs_points.nc")?;
    /// assert_eq!(a.original_hash(), xxhash_rust::xxh3::xxh3_128(&original));
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn original_hash(&self) -> u128 {
        self.index.lead.hash
    }

    /// Length of the archive in bytes.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-len", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// assert_eq!(a.len(), std::fs::metadata(&z)?.len());
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> u64 {
        // A compact archive's own length, not that of the full form it reads as.
        self.source.stored_len().unwrap_or(self.index.len)
    }

    /// Whether the archive is empty (never true for an archive that opened).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-is_empty", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// assert!(!a.is_empty());
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.index.len == 0
    }

    /// The archive's path, as given.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-path", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// assert_eq!(a.path(), z.as_path());
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &Path {
        self.source.path()
    }

    /// Number of streams: one per variable (in header order), then the residual bytes, then
    /// the early and the late shared stream, which hold the small ones.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-stream_count", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// // One stream per variable, the residual bytes, two shared streams.
    /// assert_eq!(a.stream_count(), a.header().var_count() + 3);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stream_count(&self) -> usize {
        self.index.stream_count()
    }

    /// The stream of the residual bytes (the one after the variables').
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-residual_stream", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// assert_eq!(a.residual_stream(), a.header().var_count());
    /// assert_eq!(a.stream_name(a.residual_stream()), "residual bytes");
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn residual_stream(&self) -> usize {
        self.index.residual_stream()
    }

    /// The shared stream that holds stream `s`, if `s` is small enough to be a member of one
    /// (it then has no blocks of its own).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-shared_stream_of", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// let temp = a.header().var_id("temp").unwrap();
    /// // temp (80 000 bytes) has blocks of its own.
    /// assert_eq!(a.shared_stream_of(temp), None);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shared_stream_of(&self, s: usize) -> Option<usize> {
        self.index.shared_stream_of(s)
    }

    /// Whether stream `s` is a member of a shared stream.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-is_member", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// let temp = a.header().var_id("temp").unwrap();
    /// assert!(!a.is_member(temp));
    /// assert!((0..a.stream_count()).all(|s| a.is_member(s) == a.shared_stream_of(s).is_some()));
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_member(&self, s: usize) -> bool {
        self.index.is_member(s)
    }

    /// Frame stream id of stream `s`: the variable's number, or [`format::RESIDUAL_ID`],
    /// [`format::SHARED_EARLY_ID`], [`format::SHARED_LATE_ID`].
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-stream_id", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// let temp = a.header().var_id("temp").unwrap();
    /// assert_eq!(a.stream_id(temp), temp as u32);
    /// assert_eq!(a.stream_id(a.residual_stream()), nc3pack::format::RESIDUAL_ID);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stream_id(&self, s: usize) -> u32 {
        self.index.streams[s].id
    }

    /// Bytes of stream `s` (a variable's materialized data, the residual bytes, or a shared
    /// stream's encoded members).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-stream_len", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// let temp = a.header().var_id("temp").unwrap();
    /// assert_eq!(a.stream_len(temp), 20000 * 4); // 20 000 floats
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stream_len(&self, s: usize) -> u64 {
        self.index.streams[s].total
    }

    /// Number of blocks of stream `s`.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-block_count", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// let temp = a.header().var_id("temp").unwrap();
    /// assert_eq!(a.block_count(temp), 1); // 80 000 bytes, 1 MiB blocks
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn block_count(&self, s: usize) -> u64 {
        self.index.block_count(s)
    }

    /// Decoded bytes per block of stream `s` (the last block may be shorter).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-block_bytes", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// let temp = a.header().var_id("temp").unwrap();
    /// assert_eq!(a.block_bytes(temp), 1 << 20);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn block_bytes(&self, s: usize) -> u64 {
        self.index.streams[s].block_bytes
    }

    /// Index entry of block `b` of stream `s`.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-entry", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// let temp = a.header().var_id("temp").unwrap();
    /// let e = a.entry(temp, 0);
    /// assert!(!e.is_lost());
    /// assert!(e.offset >= a.data_start());
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn entry(&self, s: usize, b: u64) -> &IndexEntry {
        self.index.entry(s, b)
    }

    /// Stored (compressed) bytes of stream `s`, frame headers included (constant blocks,
    /// which have no frame, count 0).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-stored_bytes", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// let temp = a.header().var_id("temp").unwrap();
    /// let e = a.entry(temp, 0);
    /// assert_eq!(a.stored_bytes(temp), e.frame_len());
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stored_bytes(&self, s: usize) -> u64 {
        self.index.stored_bytes(s)
    }

    /// Index entries of the constants frames, which list the runs of constant blocks.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-constants_frames", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// // No block of this file is one value repeated.
    /// assert!(a.blocks().all(|(s, b)| !a.entry(s, b).is_constant()));
    /// assert!(a.constants_frames().is_empty());
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn constants_frames(&self) -> &[IndexEntry] {
        &self.index.constants_frames
    }

    /// Reads, checks and decodes constants frame `k`: the runs of constant blocks it lists.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-constant_runs", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// let runs: usize = (0..a.constants_frames().len())
    ///     .map(|k| a.constant_runs(k).map(|r| r.len()))
    ///     .sum::<Result<usize, _>>()?;
    /// assert_eq!(runs, 0);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A read error, or a constants frame whose header, checksum or runs are damaged (naming
    /// the frame).
    pub fn constant_runs(&self, k: usize) -> Result<Vec<format::ConstantRun>> {
        let bad = |source: ArchiveError| Error::Archive {
            path: self.source.path.clone(),
            part: "constants frame",
            offset: self.index.constants_frames.get(k).map_or(0, |e| e.offset),
            source,
        };
        let e = *self
            .index
            .constants_frames
            .get(k)
            .ok_or_else(|| bad(ConstantsError::NoSuchFrame { k }.into()))?;
        let mut buf = vec![0u8; e.frame_len() as usize];
        self.source.read_exact_at(&mut buf, e.offset)?;
        let h = FrameHeader::decode(&buf).map_err(|e| bad(e.into()))?;
        let max = format::MAX_RUNS_PER_FRAME * format::RUN_LEN;
        if h.stream != format::CONSTANTS_ID
            || h.block != k as u64
            || h.stored_len != e.stored_len
            || h.codec != e.codec
            || h.filter != format::Filter::None
            || h.decoded_len as usize > max
        {
            return Err(bad(ConstantsError::Mismatch {
                stream: h.stream,
                block: h.block,
                stored: h.stored_len,
                decoded: h.decoded_len,
                codec: h.codec,
                k,
                expect_stored: e.stored_len,
                max,
                expect_codec: e.codec,
            }
            .into()));
        }
        let mut table = Vec::new();
        decode_payload(&h, &buf[FRAME_HEADER_LEN..], &mut table).map_err(|e| bad(e.into()))?;
        format::ConstantRun::decode_all(&table).map_err(|e| bad(e.into()))
    }

    /// Offset of the index section.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-index_offset", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// use nc3pack::format::FOOTER_LEN;
    /// assert!(a.index_offset() > a.data_start());
    /// assert!(a.index_offset() < a.len() - FOOTER_LEN as u64);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn index_offset(&self) -> u64 {
        self.index.footer.index_offset
    }

    /// Every block of every stream, as (stream, block), in index order (members of the shared
    /// streams have no blocks of their own).
    ///
    /// ```no_run
    /// let a = nc3pack::Archive::open("/tmp/sst.nc3z")?;
    /// let constant = a.blocks().filter(|&(s, b)| a.entry(s, b).is_constant()).count();
    /// println!("{constant} constant blocks");
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    pub fn blocks(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.index.blocks()
    }

    /// Blocks marked lost, as (stream, block).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-lost_blocks", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// assert!(a.lost_blocks().is_empty()); // a fresh archive
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lost_blocks(&self) -> Vec<(usize, u64)> {
        self.blocks()
            .filter(|&(s, b)| self.entry(s, b).is_lost())
            .collect()
    }

    /// Name of stream `s` for messages: `variable "x"` or `residual bytes`.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-stream_name", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// let temp = a.header().var_id("temp").unwrap();
    /// assert_eq!(a.stream_name(temp), "variable \"temp\"");
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stream_name(&self, s: usize) -> String {
        self.index.stream_name(s)
    }

    /// Checks block `b` of stream `s` without decompressing: frame header, agreement with the
    /// index and layout, and payload CRC.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-check_block", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// for (s, b) in a.blocks() {
    ///     a.check_block(s, b)?;
    /// }
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The first problem found, as an [`Error::Block`] naming the stream, block and offset: a
    /// read error, a damaged frame header, a frame that disagrees with the index or layout, a
    /// payload checksum mismatch, a lost block; [`Error::NoMemory`] when the frame does not fit
    /// in memory.
    pub fn check_block(&self, s: usize, b: u64) -> Result<()> {
        self.refuse_lost(s, b)?;
        let e = *self.entry(s, b);
        if e.is_constant() {
            // No frame: the index entry is the block (checked when the archive was opened).
            return Ok(());
        }
        let mut buf = self.zeroed(s, b, e.frame_len())?;
        self.source.read_exact_at(&mut buf, e.offset)?;
        let h = self.check_frame_header(s, b, &buf)?;
        if format::crc(&buf[FRAME_HEADER_LEN..]) != h.payload_crc {
            return Err(self.block_error(s, b, FrameError::PayloadChecksum.into()));
        }
        Ok(())
    }

    /// Offset just past the header frame: where the block frames start.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-data_start", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// use nc3pack::format::{FRAME_HEADER_LEN, LEAD_LEN};
    /// assert!(a.data_start() > (LEAD_LEN + FRAME_HEADER_LEN) as u64);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn data_start(&self) -> u64 {
        self.index.data_start
    }

    /// Sets the cache's byte budget (0 disables caching), evicting as needed.
    ///
    /// ```
    /// use nc3pack::Dataset;
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-set_cache_budget", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// a.set_cache_budget(1 << 20);
    /// assert_eq!(a.cache_stats().budget, 1 << 20);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_cache_budget(&self, bytes: u64) {
        self.cache.set_budget(bytes);
    }

    /// The cache's counters: hits, misses, evictions, bytes held.
    ///
    /// ```
    /// use nc3pack::Dataset;
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-cache_stats", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// let slab = a.slab("temp", Some(&[0]), Some(&[10]), None)?;
    /// let _: Vec<f32> = a.read("temp", &slab)?; // a first small read: its part, nothing kept
    /// let _: Vec<f32> = a.read("temp", &slab)?; // the second: the block decoded and kept
    /// let _: Vec<f32> = a.read("temp", &slab)?; // from the cache
    /// let stats = a.cache_stats();
    /// assert_eq!((stats.misses, stats.hits), (2, 1));
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }

    /// Empties the cache and zeroes its counters.
    ///
    /// ```
    /// use nc3pack::Dataset;
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-clear_cache", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// let _: Vec<f32> = a.read("temp", &a.slab("temp", Some(&[0]), Some(&[10]), None)?)?;
    /// a.clear_cache();
    /// assert_eq!(a.cache_stats().entries, 0);
    /// assert_eq!(a.cache_stats().hits + a.cache_stats().misses, 0);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn clear_cache(&self) {
        self.cache.clear();
    }

    /// Sets whether a large read also caches the blocks it covers whole (on by default).
    ///
    /// A read of one contiguous range of a variable that spans more than one block decodes each
    /// block it covers whole straight into its output (on [`Archive::set_threads`] threads);
    /// when the whole range fits in half of the cache's budget, it also copies each such block
    /// into the cache, so that reading it again is a copy instead of a decode.
    /// A caller that keeps what it read (xarray's loaded arrays, dask chunks that each cover
    /// whole blocks) never reads those blocks again, and can turn this off to save that copy.
    /// The partial blocks at the ends of a read are cached either way, as are the blocks of
    /// every other kind of read; lookups still count as hits and misses in
    /// [`Archive::cache_stats`], and blocks already cached are still used.
    ///
    /// ```no_run
    /// use nc3pack::Dataset;
    /// let a = nc3pack::Archive::open("/tmp/sst.nc3z")?;
    /// a.set_cache_whole_blocks(false);
    /// // A variable of many blocks: decoded on all threads, its blocks not kept.
    /// let sst: Vec<f32> = a.read("sst", &a.slab("sst", None, None, None)?)?;
    /// println!("{} values, {} blocks cached", sst.len(), a.cache_stats().entries);
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    pub fn set_cache_whole_blocks(&self, on: bool) {
        self.policy.update(|p| CachePolicy {
            whole_blocks: on,
            ..p
        });
    }

    /// Sets whether the first small read of a block (less than the block, inside it) caches
    /// the block (off by default).
    ///
    /// Off, such a read of a block that is not cached decodes only the bytes it asks for and
    /// does not keep the block: a cold open that reads a few values pays for no decoded copy
    /// of their blocks. The next small read of the same block (the cache remembers the last
    /// 4,096 blocks read in part) decodes it whole and caches it, so values read again and again come from the
    /// cache from their second read on. On, the first small read caches the block, as every
    /// other read does. Misses and hits are counted either way ([`Archive::cache_stats`]).
    ///
    /// ```no_run
    /// use nc3pack::Dataset;
    /// let a = nc3pack::Archive::open("/tmp/sst.nc3z")?;
    /// let one = a.slab("sst", Some(&[0, 10, 20]), Some(&[1, 1, 1]), None)?;
    /// a.read::<f32>("sst", &one)?;
    /// assert_eq!(a.cache_stats().entries, 0); // its block decoded in part, not kept
    /// a.set_cache_first_small_reads(true);
    /// let other = a.slab("sst", Some(&[5, 10, 20]), Some(&[1, 1, 1]), None)?;
    /// a.read::<f32>("sst", &other)?;
    /// assert_eq!(a.cache_stats().entries, 1);
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    pub fn set_cache_first_small_reads(&self, on: bool) {
        self.policy.update(|p| CachePolicy {
            first_small_reads: on,
            ..p
        });
    }

    /// Whether the first small read of a block caches it
    /// ([`Archive::set_cache_first_small_reads`]).
    ///
    /// ```no_run
    /// let a = nc3pack::Archive::open("/tmp/sst.nc3z")?;
    /// assert!(!a.caches_first_small_reads());
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    pub fn caches_first_small_reads(&self) -> bool {
        self.policy.get().first_small_reads
    }

    /// Whether a large read also caches the blocks it covers whole
    /// ([`Archive::set_cache_whole_blocks`]).
    ///
    /// ```no_run
    /// let a = nc3pack::Archive::open("/tmp/sst.nc3z")?;
    /// assert!(a.caches_whole_blocks());
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    pub fn caches_whole_blocks(&self) -> bool {
        self.policy.get().whole_blocks
    }

    /// Which blocks reads cache beyond those every read does: [`CachePolicy`], the two
    /// settings of [`Archive::set_cache_whole_blocks`] and
    /// [`Archive::set_cache_first_small_reads`] as one value.
    ///
    /// ```no_run
    /// let a = nc3pack::Archive::open("/tmp/sst.nc3z")?;
    /// assert_eq!(a.cache_policy(), nc3pack::CachePolicy::default());
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    pub fn cache_policy(&self) -> CachePolicy {
        self.policy.get()
    }

    /// Sets both settings of [`CachePolicy`] at once (what
    /// [`Archive::set_cache_whole_blocks`] and [`Archive::set_cache_first_small_reads`] set
    /// one at a time); reads under way see it from their next block on.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-set_cache_policy", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// use nc3pack::CachePolicy;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// a.set_cache_policy(CachePolicy { whole_blocks: false, first_small_reads: true });
    /// assert!(!a.caches_whole_blocks() && a.caches_first_small_reads());
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_cache_policy(&self, p: CachePolicy) {
        self.policy.set(p);
    }

    /// Sets how many threads a large read decodes blocks on (bounded to
    /// `1..=`[`crate::parallel::MAX_THREADS`]).
    ///
    /// ```
    /// use nc3pack::Dataset;
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-set_threads", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// let mut a = a;
    /// a.set_threads(2);
    /// let temp: Vec<f32> = a.read("temp", &a.slab("temp", None, None, None)?)?;
    /// assert_eq!(temp.len(), 20000);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_threads(&mut self, threads: usize) {
        self.threads = crate::parallel::bound_threads(threads);
    }

    /// Threads a large read decodes on: [`Archive::set_threads`]'s, or the machine's cores.
    pub(crate) fn threads(&self) -> usize {
        match self.threads {
            0 => crate::parallel::default_threads(),
            n => n,
        }
    }
}

impl<R: ReadAt> Dataset for Archive<R> {
    fn path(&self) -> &Path {
        self.source.path()
    }
    fn header(&self) -> &Header {
        &self.index.header
    }
    fn layout(&self) -> &Layout {
        &self.index.layout
    }

    fn read_runs(&self, v: usize, runs: &[(u64, u64)], out: &mut [u8]) -> Result<()> {
        self.runs_into(v, runs, out, false)
    }

    fn read_runs_native(&self, v: usize, runs: &[(u64, u64)], out: &mut [u8]) -> Result<()> {
        self.runs_into(v, runs, out, true)
    }

    fn read_native_pieces(
        &self,
        v: usize,
        slab: &Hyperslab,
        piece_bytes: usize,
        put: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<()> {
        self.native_pieces(v, slab, piece_bytes, put)
    }

    fn plan_slab(&self, v: usize, slab: &Hyperslab) -> Result<()> {
        if !self.source.wants_prefetch() || self.is_member(v) {
            return Ok(());
        }
        let shape = &self.index.layout.vars[v].shape;
        let Ok(slab) = Hyperslab::new(shape, slab.start(), slab.count(), slab.stride()) else {
            return Ok(());
        };
        let (esize, bb) = (
            self.index.streams[v].esize as u64,
            self.index.streams[v].block_bytes,
        );
        // The blocks the runs touch, ascending (runs come in ascending order).
        let mut blocks: Vec<u64> = Vec::new();
        slab.for_each_run(shape, esize, |off, len| {
            if len > 0 {
                let from = blocks.last().map_or(off / bb, |&l| (off / bb).max(l + 1));
                blocks.extend(from..=(off + len - 1) / bb);
            }
            Ok::<_, Error>(())
        })?;
        self.prefetch_blocks(blocks.into_iter().map(|b| (v, b)))
    }
}

/// A block decoder thread's reused buffers: the frame it reads, and the decoder's.
#[derive(Default)]
struct BlockScratch {
    frame: Vec<u8>,
    codec: DecodeScratch,
}

thread_local! {
    /// This thread's [`BlockScratch`], kept from read to read: no frame buffer or decoder
    /// context is allocated (and its pages faulted in) per block or per read.
    static SCRATCH: std::cell::Cell<BlockScratch> = std::cell::Cell::new(BlockScratch::default());
}

/// Runs `f` with this thread's [`BlockScratch`] (a fresh one if it is in use further up the
/// stack, or the thread is exiting).
fn with_scratch<T>(f: impl FnOnce(&mut BlockScratch) -> T) -> T {
    let mut scratch = SCRATCH.try_with(|c| c.take()).unwrap_or_default();
    let out = f(&mut scratch);
    let _ = SCRATCH.try_with(|c| c.set(scratch));
    out
}

/// Decoded blocks of the shared streams that [`Archive::member_bytes_held`] keeps between calls:
/// those the last member of each shared stream used.
#[derive(Default)]
pub(crate) struct HeldBlocks(Vec<(usize, u64, Block)>);
