//! Reading archives: open, check the structures, locate and decode blocks.

use crate::codec::word::be_to_native;
use crate::codec::{decode_payload, decode_payload_into, DecodeScratch};
use crate::error::{
    io_err, spawn_err, ArchiveError, BlockError, ConstantsError, EntryError, Error, FooterError,
    FrameError, IndexError, Result,
};
use crate::format::streams::{streams_with, Stream};
use crate::format::{
    self, Footer, FrameHeader, IndexEntry, Lead, FOOTER_LEN, FRAME_HEADER_LEN, LEAD_LEN,
};
use crate::io::ReadAt;
use crate::nc3::slab::Hyperslab;
use crate::nc3::{Header, Layout};
use crate::parallel::spawn_scoped;
use crate::read::cache::{Block, BlockCache, CacheStats};
use crate::read::dataset::Dataset;
use crate::read::Input;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Default byte budget of an archive's block cache: 64 MiB.
///
/// ```
/// assert_eq!(nc3pack::DEFAULT_CACHE_BYTES, 64 << 20);
/// ```
pub const DEFAULT_CACHE_BYTES: u64 = 64 << 20;

/// Largest single read when adjacent frames are fetched together.
const MAX_COALESCED_READ: u64 = 16 << 20;

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
    path: PathBuf,
    reader: R,
    lead: Lead,
    /// The header, which holds its bytes.
    header: Header,
    layout: Layout,
    /// Block size of each stream (the lead's, or per variable from the block sizes frame).
    block_sizes: format::BlockSizes,
    streams: Vec<Stream>,
    index: Vec<IndexEntry>,
    /// Index entries of the constants frames.
    constants_frames: Vec<IndexEntry>,
    footer: Footer,
    len: u64,
    data_start: u64,
    cache: BlockCache,
    /// Whether blocks a read decodes whole straight into its output are cached too
    /// ([`Archive::set_cache_whole_blocks`]).
    cache_whole: std::sync::atomic::AtomicBool,
    threads: usize,
}

impl Archive<Input> {
    /// Opens the archive at `path`: a file, or a URL (`s3://BUCKET/KEY`, `http(s)://...`,
    /// `file://...`, read with the options of [`crate::remote::set_default_options`]; needs
    /// the `remote` feature).
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
        Archive::from_reader(f, path)
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
        let len = reader.size().map_err(io_err(path, "stat"))?;
        let bad = |part: &'static str, offset: u64, source: ArchiveError| Error::Archive {
            path: path.to_path_buf(),
            part,
            offset,
            source,
        };
        let (lead, hb, header, sizes, data_start) = read_front(&reader, path, len)?;
        // The header keeps its own copy of these bytes.
        drop(hb);
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
        let mut ib = vec![0u8; footer.index_len as usize];
        reader
            .read_exact_at(&mut ib, footer.index_offset)
            .map_err(io_err(path, "read"))?;
        if format::crc(&ib) != footer.index_crc {
            return Err(bad(
                "index",
                footer.index_offset,
                IndexError::Checksum.into(),
            ));
        }
        let (index, constants_frames) = format::decode_index(&ib, total_blocks)
            .map_err(|e| bad("index", footer.index_offset, e.into()))?;
        let in_data = |e: &IndexEntry, max: u64| {
            let end = e.offset.checked_add(e.frame_len());
            e.offset >= data_start
                && end.is_some_and(|end| end <= footer.index_offset)
                && u64::from(e.stored_len) <= max
        };
        for s in &streams {
            for b in 0..s.blocks() {
                let e = &index[(s.first_slot + b) as usize];
                let source = match e.check(s.esize) {
                    Err(e) => e,
                    Ok(()) if e.is_lost() || e.is_constant() || in_data(e, s.block_bytes) => {
                        continue
                    }
                    Ok(()) => EntryError::OutsideData,
                };
                return Err(bad(
                    "index",
                    footer.index_offset,
                    IndexError::Entry {
                        block: b,
                        stream: stream_name(&header, s.id),
                        source,
                    }
                    .into(),
                ));
            }
        }
        let constants_max = (format::MAX_RUNS_PER_FRAME * format::RUN_LEN) as u64;
        if let Some(k) = constants_frames
            .iter()
            .position(|t| !in_data(t, constants_max))
        {
            return Err(bad(
                "index",
                footer.index_offset,
                IndexError::ConstantsFrameOutside { k }.into(),
            ));
        }
        Ok(Archive {
            path: path.to_path_buf(),
            reader,
            lead,
            header,
            layout,
            block_sizes: sizes,
            streams,
            index,
            constants_frames,
            footer,
            len,
            data_start,
            cache: BlockCache::new(DEFAULT_CACHE_BYTES),
            cache_whole: std::sync::atomic::AtomicBool::new(true),
            threads: crate::parallel::bound_threads(
                std::thread::available_parallelism().map_or(1, |n| n.get()),
            ),
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
        &self.header
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
        self.header.bytes()
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
        &self.layout
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
        &self.lead
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
        &self.block_sizes
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
        self.lead.hash
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
        self.len
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
        self.len == 0
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
        &self.path
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
        self.streams.len()
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
        self.layout.vars.len()
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
        self.streams[s].shared.map(|(sh, _)| sh)
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
        self.streams[s].shared.is_some()
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
        self.streams[s].id
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
        self.streams[s].total
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
        self.streams[s].blocks()
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
        self.streams[s].block_bytes
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
        &self.index[(self.streams[s].first_slot + b) as usize]
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
        (0..self.block_count(s))
            .map(|b| self.entry(s, b))
            .filter(|e| !e.is_constant())
            .map(|e| e.frame_len())
            .sum()
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
        &self.constants_frames
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
        let bad = |e: ConstantsError| Error::Archive {
            path: self.path.clone(),
            part: "constants frame",
            offset: self.constants_frames.get(k).map_or(0, |e| e.offset),
            source: e.into(),
        };
        let e = *self
            .constants_frames
            .get(k)
            .ok_or_else(|| bad(ConstantsError::NoSuchFrame { k }))?;
        let mut buf = vec![0u8; e.frame_len() as usize];
        self.reader
            .read_exact_at(&mut buf, e.offset)
            .map_err(io_err(&self.path, "read"))?;
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
            }));
        }
        let mut table = Vec::new();
        decode_payload(&h, &buf[FRAME_HEADER_LEN..], &mut table).map_err(|e| bad(e.into()))?;
        format::ConstantRun::decode_all(&table).map_err(bad)
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
        self.footer.index_offset
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
        (0..self.stream_count()).flat_map(|s| (0..self.block_count(s)).map(move |b| (s, b)))
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
        stream_name(&self.header, self.streams[s].id)
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
        self.reader
            .read_exact_at(&mut buf, e.offset)
            .map_err(io_err(&self.path, "read"))?;
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
        self.data_start
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
    /// let _: Vec<f32> = a.read("temp", &slab)?;
    /// let _: Vec<f32> = a.read("temp", &slab)?;
    /// let stats = a.cache_stats();
    /// assert_eq!((stats.misses, stats.hits), (1, 1));
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
        self.cache_whole
            .store(on, std::sync::atomic::Ordering::Relaxed);
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
        self.cache_whole.load(std::sync::atomic::Ordering::Relaxed)
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

    /// [`BlockError::Lost`] if the index marks block `b` of stream `s` lost.
    fn refuse_lost(&self, s: usize, b: u64) -> Result<()> {
        if self.entry(s, b).is_lost() {
            return Err(self.block_error(s, b, BlockError::Lost));
        }
        Ok(())
    }

    fn block_error(&self, s: usize, b: u64, source: BlockError) -> Error {
        if let BlockError::Frame(FrameError::NoMemory { len }) = source {
            return self.no_memory(s, b, len);
        }
        Error::Block {
            path: self.path.clone(),
            var: stream_name(&self.header, self.streams[s].id),
            block: b,
            offset: Some(self.entry(s, b))
                .filter(|e| !e.is_constant())
                .map_or(0, |e| e.offset),
            source,
        }
    }

    /// [`Error::NoMemory`] for `len` bytes needed for block `b` of stream `s`.
    fn no_memory(&self, s: usize, b: u64, len: u64) -> Error {
        Error::NoMemory {
            path: self.path.clone(),
            var: self.stream_name(s),
            block: b,
            len,
        }
    }

    /// A buffer of `len` zero bytes for block `b` of stream `s`, allocated fallibly: the length
    /// comes from the archive, and the machine may not have it ([`Error::NoMemory`]).
    fn zeroed(&self, s: usize, b: u64, len: u64) -> Result<Vec<u8>> {
        let mut v = Vec::new();
        let n = usize::try_from(len).map_err(|_| self.no_memory(s, b, len))?;
        v.try_reserve_exact(n)
            .map_err(|_| self.no_memory(s, b, len))?;
        v.resize(n, 0);
        Ok(v)
    }

    /// Reads the bytes `off..off + len` of stream `s` (more than one block) into `out`: the
    /// threads take the blocks one at a time, and read, decode and copy each block straight
    /// into its part of `out` (a whole block is decoded right there, with no copy; with
    /// `native`, its elements in native byte order), so decoding and copying overlap and memory
    /// holds one frame and one decompressed block per thread. Blocks go into the cache only when
    /// the whole span fits in half of it (a larger read would only evict its own blocks, and
    /// everything else), and whole blocks only if [`Archive::caches_whole_blocks`].
    fn read_span(&self, s: usize, off: u64, len: u64, out: &mut [u8], native: bool) -> Result<()> {
        let bb = self.streams[s].block_bytes;
        let (first, last) = (off / bb, (off + len - 1) / bb);
        self.plan_reads((first..=last).map(|b| (s, b)))?;
        let mut parts: Vec<(u64, usize, &mut [u8])> =
            Vec::with_capacity((last - first + 1) as usize);
        let mut rest = out;
        for b in first..=last {
            let (from, to) = (off.max(b * bb), (off + len).min((b + 1) * bb));
            let (head, tail) = std::mem::take(&mut rest).split_at_mut((to - from) as usize);
            parts.push((b, (from - b * bb) as usize, head));
            rest = tail;
        }
        let keep = (last - first + 1) * bb <= self.cache.stats().budget / 2;
        let threads = self.threads.min(parts.len()).max(1);
        // The threads take the blocks in ascending order from one queue (so a thread slowed
        // down by other work does not hold up the read); after an error no thread takes another
        // block, and the error of the lowest block is the one reported (the blocks before it
        // were all taken, so it is the first damaged block of the span, as a serial read finds).
        let queue = std::sync::Mutex::new(parts.into_iter());
        let failed = std::sync::atomic::AtomicBool::new(false);
        // Returns the error of the block that failed, if one did.
        let work = || -> Option<(u64, Error)> {
            let mut scratch = BlockScratch::default();
            loop {
                if failed.load(std::sync::atomic::Ordering::Relaxed) {
                    return None;
                }
                // (A poisoned lock still holds a valid iterator.)
                let next = queue.lock().unwrap_or_else(|p| p.into_inner()).next();
                let (b, within, dst) = next?;
                if let Err(e) = self.span_block(s, b, within, dst, keep, native, &mut scratch) {
                    failed.store(true, std::sync::atomic::Ordering::Relaxed);
                    return Some((b, e));
                }
            }
        };
        std::thread::scope(|sc| {
            let handles = (0..threads)
                .map(|_| spawn_scoped(sc, "block decoder", work))
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(spawn_err(&self.path))?;
            let mut first: Option<(u64, Error)> = None;
            for h in handles {
                let r = h.join().map_err(|_| {
                    Error::Internal(format!(
                        "{}: a block decoder thread panicked decoding {}",
                        self.path.display(),
                        self.stream_name(s)
                    ))
                })?;
                if let Some((b, e)) = r {
                    if first.as_ref().is_none_or(|(fb, _)| b < *fb) {
                        first = Some((b, e));
                    }
                }
            }
            first.map_or(Ok(()), |(_, e)| Err(e))
        })
    }

    /// One block of [`Archive::read_span`]: the bytes from `within` of block `b` of stream `s`
    /// into `dst`, from the cache or decoded (a whole block straight into `dst`), cached if
    /// `keep` (a whole block only if [`Archive::caches_whole_blocks`] too).
    #[allow(clippy::too_many_arguments)]
    fn span_block(
        &self,
        s: usize,
        b: u64,
        within: usize,
        dst: &mut [u8],
        keep: bool,
        native: bool,
        scratch: &mut BlockScratch,
    ) -> Result<()> {
        let (id, esize) = (self.streams[s].id, self.streams[s].esize);
        let whole = within == 0 && dst.len() as u64 == self.block_len(s, b);
        let block = match self.cache.get((id, b)) {
            Some(block) => block,
            None if whole => {
                self.decode_block_into(s, b, dst, scratch, native)?;
                if keep && self.caches_whole_blocks() {
                    if self.entry(s, b).is_constant() {
                        self.cache.insert((id, b), self.constant(s, b));
                        return Ok(());
                    }
                    let mut block = dst.to_vec();
                    if native {
                        // Back to the big-endian bytes the cache holds.
                        be_to_native(&mut block, esize);
                    }
                    self.cache.insert((id, b), Arc::new(block));
                }
                return Ok(());
            }
            None => {
                let block = self.load(s, b)?;
                if keep {
                    self.cache.insert((id, b), block.clone());
                }
                block
            }
        };
        if !block.copy_to(within as u64, dst) {
            return Err(self.shorter(s, b));
        }
        if native {
            be_to_native(dst, esize);
        }
        Ok(())
    }

    /// Reads, checks and decodes block `b` of stream `s` (stream ids as in
    /// [`Archive::stream_count`]), bypassing the cache.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-read_block", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// let temp = a.header().var_id("temp").unwrap();
    /// let block = a.read_block(temp, 0)?;
    /// assert_eq!(block.len() as u64, a.stream_len(temp));
    /// let original = std::fs::read("samples/obs_points.nc")?;
    /// let begin = a.header().var(temp).begin() as usize;
    /// assert_eq!(block[..4], original[begin..begin + 4]); // record 0's big-endian value
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Archive::check_block`], a payload that does not decode to the block's length, and
    /// [`Error::NoMemory`] when the block (a constant one too: it is built here) or its frame
    /// does not fit in memory.
    pub fn read_block(&self, s: usize, b: u64) -> Result<Vec<u8>> {
        match self.load(s, b)? {
            Block::Bytes(block) => Ok(Arc::unwrap_or_clone(block)),
            Block::Constant { .. } => self.constant_bytes(s, b),
        }
    }

    /// Block `b` of stream `s` as [`Archive::read_block`] reads it, bypassing the cache, but a
    /// constant block as its element (not built).
    pub(crate) fn load(&self, s: usize, b: u64) -> Result<Block> {
        self.refuse_lost(s, b)?;
        let e = *self.entry(s, b);
        if e.is_constant() {
            return Ok(self.constant(s, b));
        }
        let mut buf = self.zeroed(s, b, e.frame_len())?;
        self.reader
            .read_exact_at(&mut buf, e.offset)
            .map_err(io_err(&self.path, "read"))?;
        Ok(Block::Bytes(Arc::new(self.decode_frame(s, b, &buf)?)))
    }

    /// [`Error::Internal`]: block `b` of stream `s` is shorter than a read of it needs.
    fn shorter(&self, s: usize, b: u64) -> Error {
        Error::Internal(format!(
            "block {b} of {} is shorter than the layout says",
            self.stream_name(s)
        ))
    }

    /// [`Archive::read_block`] into `out` (exactly the block's length), with the same checks,
    /// reusing `scratch`'s buffers; with `native`, elements in native byte order.
    fn decode_block_into(
        &self,
        s: usize,
        b: u64,
        out: &mut [u8],
        scratch: &mut BlockScratch,
        native: bool,
    ) -> Result<()> {
        let e = *self.entry(s, b);
        if e.is_lost() {
            return Err(self.block_error(s, b, BlockError::Lost));
        }
        let esize = self.streams[s].esize;
        if e.is_constant() {
            let mut value = e.constant_value(esize.clamp(1, 8));
            if native {
                be_to_native(&mut value, esize);
            }
            if value.is_empty() || !out.len().is_multiple_of(value.len()) {
                return Err(Error::Internal(format!(
                    "block {b} of {} is not a whole number of elements",
                    self.stream_name(s)
                )));
            }
            for c in out.chunks_exact_mut(value.len()) {
                c.copy_from_slice(&value);
            }
            return Ok(());
        }
        let frame = &mut scratch.frame;
        let frame_len = FRAME_HEADER_LEN + e.stored_len as usize;
        frame
            .try_reserve(frame_len.saturating_sub(frame.len()))
            .map_err(|_| self.no_memory(s, b, frame_len as u64))?;
        frame.resize(frame_len, 0);
        self.reader
            .read_exact_at(frame, e.offset)
            .map_err(io_err(&self.path, "read"))?;
        let h = self.check_frame_header(s, b, frame)?;
        decode_payload_into(
            &h,
            &frame[FRAME_HEADER_LEN..],
            out,
            &mut scratch.codec,
            native,
        )
        .map_err(|e| self.block_error(s, b, e.into()))
    }

    /// Tells the reader which frames the blocks `blocks` (as (stream, block)) will be read from,
    /// in the order they will be read, leaving out blocks that are cached or need no frame: a
    /// remote reader fetches them with a few coalesced requests instead of one per block.
    pub(crate) fn plan_reads(&self, blocks: impl Iterator<Item = (usize, u64)>) -> Result<()> {
        if !self.reader.wants_prefetch() {
            return Ok(());
        }
        let ranges: Vec<(u64, u64)> = blocks
            .filter(|&(s, b)| !self.cache.contains((self.streams[s].id, b)))
            .map(|(s, b)| *self.entry(s, b))
            .filter(|e| !e.is_constant() && !e.is_lost())
            .map(|e| (e.offset, e.frame_len()))
            .collect();
        if ranges.len() < 2 {
            return Ok(());
        }
        self.reader
            .prefetch(&ranges)
            .map_err(io_err(&self.path, "read"))
    }

    /// Decoded length of block `b` of stream `s`, as the layout says.
    fn block_len(&self, s: usize, b: u64) -> u64 {
        self.streams[s].block_len(b)
    }

    /// A constant block, from its index entry alone, as its element and length (the block
    /// length is a whole number of elements: a stream's blocks are whole elements, and its
    /// length too).
    fn constant(&self, s: usize, b: u64) -> Block {
        let esize = self.streams[s].esize.clamp(1, 8);
        Block::constant(
            &self.entry(s, b).constant_value(esize),
            self.block_len(s, b),
        )
    }

    /// A constant block built whole, allocated fallibly.
    fn constant_bytes(&self, s: usize, b: u64) -> Result<Vec<u8>> {
        let block = self.constant(s, b);
        let mut out = self.zeroed(s, b, block.len())?;
        if !block.copy_to(0, &mut out) {
            return Err(self.shorter(s, b));
        }
        Ok(out)
    }

    /// Checks a frame header against the index and the layout.
    fn check_frame_header(&self, s: usize, b: u64, frame: &[u8]) -> Result<FrameHeader> {
        let st = &self.streams[s];
        let e = self.entry(s, b);
        let err = |e: BlockError| self.block_error(s, b, e);
        let expect_len = self.block_len(s, b);
        let h = FrameHeader::decode(frame).map_err(|e| err(e.into()))?;
        if h.stream != st.id
            || h.block != b
            || h.stored_len != e.stored_len
            || u64::from(h.decoded_len) != expect_len
            || h.codec != e.codec
            || h.filter != e.filter
        {
            return Err(err(BlockError::Mismatch {
                stream: h.stream,
                block: h.block,
                stored: h.stored_len,
                decoded: h.decoded_len,
                expect_stream: st.id,
                expect_block: b,
                expect_stored: e.stored_len,
                expect_decoded: expect_len,
            }));
        }
        if usize::from(h.esize) != st.esize {
            return Err(err(BlockError::ElementSize {
                frame: h.esize,
                stream: st.esize,
            }));
        }
        Ok(h)
    }

    /// Checks and decodes the frame bytes of block `b` of stream `s`.
    /// The output is allocated fallibly ([`Error::NoMemory`]), and decoded into in place.
    fn decode_frame(&self, s: usize, b: u64, frame: &[u8]) -> Result<Vec<u8>> {
        let h = self.check_frame_header(s, b, frame)?;
        let mut out = self.zeroed(s, b, u64::from(h.decoded_len))?;
        let mut scratch = DecodeScratch::default();
        decode_payload_into(
            &h,
            &frame[FRAME_HEADER_LEN..],
            &mut out,
            &mut scratch,
            false,
        )
        .map_err(|e| self.block_error(s, b, e.into()))?;
        Ok(out)
    }

    /// Decoded block `b` of stream `s`, from the cache or decoded (and then cached; a constant
    /// block is cached as its element, and built for the caller).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-block", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// let temp = a.header().var_id("temp").unwrap();
    /// let block = a.block(temp, 0)?;
    /// assert_eq!(*block, a.read_block(temp, 0)?);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Archive::read_block`].
    pub fn block(&self, s: usize, b: u64) -> Result<Arc<Vec<u8>>> {
        let mut got = self.fetch(s, &[b])?;
        match got.pop() {
            Some(Block::Bytes(block)) => Ok(block),
            Some(Block::Constant { .. }) => Ok(Arc::new(self.constant_bytes(s, b)?)),
            None => Err(Error::Internal(format!(
                "block {b} of {} was not fetched",
                self.stream_name(s)
            ))),
        }
    }

    /// Fetches the blocks `blocks` (ascending) of stream `s`: cached ones from the cache, the
    /// others read with one I/O per run of adjacent frames and decoded on all threads; constant
    /// blocks as their element, not built.
    fn fetch(&self, s: usize, blocks: &[u64]) -> Result<Vec<Block>> {
        let id = self.streams[s].id;
        let mut got: Vec<Option<Block>> = blocks.iter().map(|&b| self.cache.get((id, b))).collect();
        // Constant blocks need no I/O.
        for (i, &b) in blocks.iter().enumerate() {
            if got[i].is_none() && self.entry(s, b).is_constant() {
                let block = self.constant(s, b);
                self.cache.insert((id, b), block.clone());
                got[i] = Some(block);
            }
        }
        let missing: Vec<usize> = (0..blocks.len()).filter(|&i| got[i].is_none()).collect();
        if missing.len() == 1 {
            let i = missing[0];
            let block = self.load(s, blocks[i])?;
            self.cache.insert((id, blocks[i]), block.clone());
            got[i] = Some(block);
        } else if !missing.is_empty() {
            // Group misses whose frames are adjacent in the file into single reads.
            let mut groups: Vec<(u64, Vec<usize>)> = Vec::new();
            let mut end = u64::MAX;
            for &i in &missing {
                self.refuse_lost(s, blocks[i])?;
                let e = self.entry(s, blocks[i]);
                let frame_len = e.frame_len();
                match groups.last_mut() {
                    Some((start, members))
                        if e.offset == end && end - *start + frame_len <= MAX_COALESCED_READ =>
                    {
                        members.push(i)
                    }
                    _ => groups.push((e.offset, vec![i])),
                }
                end = e.offset + frame_len;
            }
            self.plan_reads(missing.iter().map(|&i| (s, blocks[i])))?;
            let mut frames: Vec<(usize, Vec<u8>)> = Vec::with_capacity(missing.len());
            for (start, members) in groups {
                let last = self.entry(s, blocks[*members.last().unwrap_or(&0)]);
                let len = last.offset + last.frame_len() - start;
                let mut buf = self.zeroed(s, blocks[members[0]], len)?;
                self.reader
                    .read_exact_at(&mut buf, start)
                    .map_err(io_err(&self.path, "read"))?;
                for i in members {
                    let e = self.entry(s, blocks[i]);
                    let at = (e.offset - start) as usize;
                    frames.push((i, buf[at..at + e.frame_len() as usize].to_vec()));
                }
            }
            let threads = self.threads.min(frames.len()).max(1);
            let chunk = frames.len().div_ceil(threads);
            let decoded: Vec<Result<(usize, Vec<u8>)>> = std::thread::scope(|sc| {
                // A thread that cannot start is an error; those started finish their part.
                let handles = frames
                    .chunks(chunk)
                    .map(|part| {
                        spawn_scoped(sc, "block decoder", move || {
                            part.iter()
                                .map(|(i, f)| self.decode_frame(s, blocks[*i], f).map(|d| (*i, d)))
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(spawn_err(&self.path))?;
                // A decoder that panicked is a bug in nc3pack, not damage: say so.
                let mut all = Vec::with_capacity(frames.len());
                for h in handles {
                    all.extend(h.join().map_err(|_| {
                        Error::Internal(format!(
                            "{}: a block decoder thread panicked decoding {}",
                            self.path.display(),
                            self.stream_name(s)
                        ))
                    })?);
                }
                Ok::<_, Error>(all)
            })?;
            for r in decoded {
                let (i, d) = r?;
                let block = Block::Bytes(Arc::new(d));
                self.cache.insert((id, blocks[i]), block.clone());
                got[i] = Some(block);
            }
        }
        got.into_iter()
            .enumerate()
            .map(|(i, g)| {
                g.ok_or_else(|| {
                    Error::Internal(format!(
                        "block {} of {} was not decoded",
                        blocks[i],
                        self.stream_name(s)
                    ))
                })
            })
            .collect()
    }

    /// The whole data of stream `s`, a member of a shared stream: its bytes are cut from the
    /// shared stream's blocks and decoded, then cached like a block.
    pub(crate) fn member_bytes(&self, s: usize) -> Result<Arc<Vec<u8>>> {
        self.member_bytes_held(s, &mut HeldBlocks::default())
    }

    /// [`Archive::member_bytes`] for a reader that takes the members in their order in the
    /// shared streams (as unpacking does): the shared blocks the last member used are kept in
    /// `held` and reused, so that each shared block is decoded once even without a cache,
    /// instead of once per member (which made unpacking and verifying an archive of many small
    /// variables quadratic).
    pub(crate) fn member_bytes_held(
        &self,
        s: usize,
        held: &mut HeldBlocks,
    ) -> Result<Arc<Vec<u8>>> {
        let st = &self.streams[s];
        let Some((sh, at)) = st.shared else {
            return Err(Error::Internal(format!(
                "{} is not in a shared stream",
                self.stream_name(s)
            )));
        };
        let key = (st.id, 0);
        if let Some(Block::Bytes(b)) = self.cache.get(key) {
            return Ok(b);
        }
        let bb = self.streams[sh].block_bytes;
        let end = at + st.total;
        let blocks: Vec<u64> = (at / bb..=(end - 1) / bb).collect();
        let find = |b: u64| held.0.iter().find(|h| h.0 == sh && h.1 == b).map(|h| &h.2);
        let missing: Vec<u64> = blocks
            .iter()
            .copied()
            .filter(|&b| find(b).is_none())
            .collect();
        let mut fetched = self.fetch(sh, &missing)?.into_iter();
        let got: Vec<Block> = blocks
            .iter()
            .map(|&b| find(b).cloned().or_else(|| fetched.next()))
            .collect::<Option<_>>()
            .ok_or_else(|| {
                Error::Internal(format!(
                    "block {} of {} was not fetched",
                    blocks[0],
                    self.stream_name(sh)
                ))
            })?;
        held.0.retain(|h| h.0 != sh);
        held.0
            .extend(blocks.iter().zip(&got).map(|(&b, g)| (sh, b, g.clone())));
        let mut enc = vec![0u8; st.total as usize];
        let mut enc_at = 0usize;
        for (&b, block) in blocks.iter().zip(&got) {
            let from = at.max(b * bb) - b * bb;
            let to = end.min(b * bb + block.len()) - b * bb;
            let n = to.saturating_sub(from) as usize;
            let part = enc.get_mut(enc_at..enc_at + n);
            if to < from || !part.is_some_and(|part| block.copy_to(from, part)) {
                return Err(self.block_error(sh, b, BlockError::Short));
            }
            enc_at += n;
        }
        if enc_at != enc.len() {
            return Err(self.block_error(sh, blocks[blocks.len() - 1], BlockError::Short));
        }
        let mut out = Vec::with_capacity(enc.len());
        crate::codec::member_decode(st.esize, &enc, &mut out);
        let out = Arc::new(out);
        self.cache.insert(key, Arc::clone(&out));
        Ok(out)
    }

    /// Reads the whole materialized data of variable `v` as big-endian bytes (as stored in the
    /// netCDF file, with records de-interleaved).
    ///
    /// ```
    /// use nc3pack::Dataset;
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-read_var_bytes", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let a = nc3pack::Archive::open(&z)?; // samples/obs_points.nc, packed
    /// let temp = a.header().var_id("temp").unwrap();
    /// let bytes = a.read_var_bytes(temp)?;
    /// assert_eq!(bytes.len(), 20000 * 4);
    /// let first: Vec<f32> = a.read("temp", &a.slab("temp", Some(&[0]), Some(&[1]), None)?)?;
    /// assert_eq!(f32::from_be_bytes(bytes[..4].try_into()?), first[0]);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Archive::read_block`], for any block of the variable.
    pub fn read_var_bytes(&self, v: usize) -> Result<Vec<u8>> {
        Dataset::read_var_bytes(self, v)
    }
}

impl<R: ReadAt> Dataset for Archive<R> {
    fn path(&self) -> &Path {
        &self.path
    }
    fn header(&self) -> &Header {
        &self.header
    }
    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn read_runs(&self, v: usize, runs: &[(u64, u64)], out: &mut [u8]) -> Result<()> {
        self.runs_into(v, runs, out, false)
    }

    fn read_runs_native(&self, v: usize, runs: &[(u64, u64)], out: &mut [u8]) -> Result<()> {
        self.runs_into(v, runs, out, true)
    }

    fn plan_slab(&self, v: usize, slab: &Hyperslab) -> Result<()> {
        if !self.reader.wants_prefetch() || self.is_member(v) {
            return Ok(());
        }
        let shape = &self.layout.vars[v].shape;
        let Ok(slab) = Hyperslab::new(shape, slab.start(), slab.count(), slab.stride()) else {
            return Ok(());
        };
        let (esize, bb) = (self.streams[v].esize as u64, self.streams[v].block_bytes);
        // The blocks the runs touch, ascending (runs come in ascending order).
        let mut blocks: Vec<u64> = Vec::new();
        slab.for_each_run(shape, esize, |off, len| {
            if len > 0 {
                let from = blocks.last().map_or(off / bb, |&l| (off / bb).max(l + 1));
                blocks.extend(from..=(off + len - 1) / bb);
            }
            Ok::<_, Error>(())
        })?;
        self.plan_reads(blocks.into_iter().map(|b| (v, b)))
    }
}

impl<R: ReadAt> Archive<R> {
    /// [`Dataset::read_runs`] (`native` false) and [`Dataset::read_runs_native`] (true).
    fn runs_into(&self, v: usize, runs: &[(u64, u64)], out: &mut [u8], native: bool) -> Result<()> {
        let esize = self.streams[v].esize;
        if self.is_member(v) {
            let data = self.member_bytes(v)?;
            let mut out_at = 0usize;
            for &(off, len) in runs {
                let (off, len) = (off as usize, len as usize);
                out[out_at..out_at + len].copy_from_slice(&data[off..off + len]);
                out_at += len;
            }
            if native {
                be_to_native(out, esize);
            }
            return Ok(());
        }
        let bb = self.streams[v].block_bytes;
        if let [(off, len)] = *runs {
            // (With one thread, only when whole blocks are not cached: otherwise the blocks are
            // fetched, with one I/O per run of adjacent frames, and all cached.)
            let spans = len > 0 && (off + len - 1) / bb > off / bb;
            if spans && (self.threads > 1 || !self.caches_whole_blocks()) {
                return self.read_span(v, off, len, out, native);
            }
        }
        // One run inside one cached block (a small read, as nccopy's one record at a time):
        // copied from the cache, nothing planned, fetched or allocated.
        if let [(off, len)] = *runs {
            let b = off / bb;
            if len > 0 && (off + len - 1) / bb == b {
                if let Some(block) = self.cache.get_held((self.streams[v].id, b)) {
                    let piece = &mut out[..len as usize];
                    if !block.copy_to(off - b * bb, piece) {
                        return Err(self.shorter(v, b));
                    }
                    if native {
                        be_to_native(piece, esize);
                    }
                    return Ok(());
                }
            }
        }
        // A remote archive fetches the frames of the whole read with one request set.
        let planned = runs
            .iter()
            .filter(|r| r.1 > 0)
            .flat_map(|&(off, len)| off / bb..=(off + len - 1) / bb);
        let mut last = None;
        self.plan_reads(
            planned
                .filter(|&b| last.replace(b) != Some(b))
                .map(|b| (v, b)),
        )?;
        // Blocks are needed in ascending order; fetch them a window at a time so a large read
        // decodes in parallel while memory stays bounded.
        let window = (self.threads * 4).max(8);
        let mut out_at = 0usize;
        let mut run_i = 0usize;
        let mut run_done = 0u64; // bytes of runs[run_i] already copied
        while run_i < runs.len() {
            // Collect the next window of distinct blocks, starting where we are.
            let mut blocks: Vec<u64> = Vec::with_capacity(window);
            let (mut ri, mut rd) = (run_i, run_done);
            while ri < runs.len() && blocks.len() < window {
                let (off, len) = runs[ri];
                let first = (off + rd) / bb;
                let last = (off + len - 1) / bb;
                for b in first..=last {
                    if blocks.last() != Some(&b) {
                        if blocks.len() == window {
                            break;
                        }
                        blocks.push(b);
                    }
                }
                ri += 1;
                rd = 0;
            }
            let fetched = self.fetch(v, &blocks)?;
            let (first_b, last_b) = (blocks[0], blocks[blocks.len() - 1]);
            // Copy everything that falls in the fetched blocks.
            while run_i < runs.len() {
                let (off, len) = runs[run_i];
                let pos = off + run_done;
                let b = pos / bb;
                if b > last_b || b < first_b {
                    break;
                }
                let Ok(k) = blocks.binary_search(&b) else {
                    break;
                };
                let block = &fetched[k];
                let within = pos - b * bb;
                let take = (len - run_done).min(block.len().saturating_sub(within)) as usize;
                let piece = &mut out[out_at..out_at + take];
                if take == 0 || !block.copy_to(within, piece) {
                    return Err(self.shorter(v, b));
                }
                if native {
                    be_to_native(piece, esize);
                }
                out_at += take;
                run_done += take as u64;
                if run_done == len {
                    run_i += 1;
                    run_done = 0;
                }
            }
        }
        Ok(())
    }
}

/// Reads and checks the lead and the netCDF header frame of an archive of `len` bytes: returns
/// the lead, the original header's bytes, the parsed header, and the offset just past the
/// header frame.
pub(crate) fn read_front<R: ReadAt>(
    reader: &R,
    path: &Path,
    len: u64,
) -> Result<(Lead, Vec<u8>, Header, format::BlockSizes, u64)> {
    let bad = |part: &'static str, offset: u64, source: ArchiveError| Error::Archive {
        path: path.to_path_buf(),
        part,
        offset,
        source,
    };
    if len < (LEAD_LEN + FRAME_HEADER_LEN) as u64 {
        return Err(bad("lead", 0, ArchiveError::TooShort { len }));
    }
    let mut front = [0u8; LEAD_LEN + FRAME_HEADER_LEN];
    reader
        .read_exact_at(&mut front, 0)
        .map_err(io_err(path, "read"))?;
    let (lead, h) = check_front(&front).map_err(|(part, at, w)| bad(part, at, w))?;
    let at = LEAD_LEN as u64;
    let end = at + (FRAME_HEADER_LEN as u64) + u64::from(h.stored_len);
    if end > len {
        return Err(bad(
            "netCDF header",
            at,
            ArchiveError::HeaderFrameTooLong {
                stored: h.stored_len,
                len,
            },
        ));
    }
    let mut payload = vec![0u8; h.stored_len as usize];
    reader
        .read_exact_at(&mut payload, at + FRAME_HEADER_LEN as u64)
        .map_err(io_err(path, "read"))?;
    let hb = decode_header_payload(&h, &payload).map_err(|e| bad("netCDF header", at, e.into()))?;
    let header =
        Header::parse(&hb, lead.header_len).map_err(|e| bad("netCDF header", at, e.into()))?;
    if header.len() != lead.header_len {
        return Err(bad(
            "netCDF header",
            at,
            ArchiveError::HeaderLength {
                parsed: header.len(),
                lead: lead.header_len,
            },
        ));
    }
    if !lead.block_sizes_frame {
        return Ok((
            lead,
            hb,
            header,
            format::BlockSizes::uniform(lead.block_size),
            end,
        ));
    }
    let (sizes, end) = read_block_sizes(reader, path, len, &lead, &header, end)?;
    Ok((lead, hb, header, sizes, end))
}

/// Reads and checks the block sizes frame at `at` (format 1.1: right after the header frame)
/// for the variables of `header`; returns the block sizes and where the frame ends.
fn read_block_sizes<R: ReadAt>(
    reader: &R,
    path: &Path,
    len: u64,
    lead: &Lead,
    header: &Header,
    at: u64,
) -> Result<(format::BlockSizes, u64)> {
    let bad = |source: ArchiveError| Error::Archive {
        path: path.to_path_buf(),
        part: "block sizes",
        offset: at,
        source,
    };
    let mut fh = [0u8; FRAME_HEADER_LEN];
    if at + FRAME_HEADER_LEN as u64 > len {
        return Err(bad(FrameError::Short.into()));
    }
    reader
        .read_exact_at(&mut fh, at)
        .map_err(io_err(path, "read"))?;
    let h = FrameHeader::decode(&fh).map_err(|e| bad(e.into()))?;
    format::BlockSizes::check_frame(&h, header.var_count()).map_err(|e| bad(e.into()))?;
    let end = at + (FRAME_HEADER_LEN as u64) + u64::from(h.stored_len);
    if end > len {
        return Err(bad(FrameError::Short.into()));
    }
    let mut payload = vec![0u8; h.stored_len as usize];
    reader
        .read_exact_at(&mut payload, at + FRAME_HEADER_LEN as u64)
        .map_err(io_err(path, "read"))?;
    let mut table = Vec::new();
    decode_payload(&h, &payload, &mut table).map_err(|e| bad(e.into()))?;
    let sizes = format::BlockSizes::decode(&table, lead.block_size).map_err(|e| bad(e.into()))?;
    Ok((sizes, end))
}

/// Decodes the header frame's payload into a buffer of exactly `h.decoded_len` bytes (checked
/// against the lead, so at most [`format::MAX_HEADER_LEN`]), allocated fallibly after the CRC
/// check: a header the machine has no memory for is an error, not an abort. The codec decodes
/// into that buffer and stops at its end, so no frame content makes it grow.
fn decode_header_payload(
    h: &FrameHeader,
    payload: &[u8],
) -> std::result::Result<Vec<u8>, FrameError> {
    let mut out = Vec::new();
    decode_payload(h, payload, &mut out).map_err(|e| match e {
        FrameError::NoMemory { .. } => FrameError::HeaderNoMemory { len: h.decoded_len },
        e => e,
    })?;
    Ok(out)
}

/// Decodes and checks the first `LEAD_LEN + FRAME_HEADER_LEN` bytes of an archive, the lead and
/// the header of the netCDF header frame, as opening does; the error names the part and offset.
/// The writer runs it on what it wrote, so that it never reports success for an archive whose
/// front a reader refuses.
pub(crate) fn check_front(
    front: &[u8],
) -> std::result::Result<(Lead, FrameHeader), (&'static str, u64, ArchiveError)> {
    let lead = Lead::decode(front).map_err(|e| ("lead", 0, e.into()))?;
    let at = LEAD_LEN as u64;
    let fh = front
        .get(LEAD_LEN..LEAD_LEN + FRAME_HEADER_LEN)
        .unwrap_or(&[]);
    let h = FrameHeader::decode(fh).map_err(|e| ("netCDF header", at, e.into()))?;
    if h.stream != format::HEADER_ID || h.block != 0 || u64::from(h.decoded_len) != lead.header_len
    {
        return Err((
            "netCDF header",
            at,
            ArchiveError::NotHeaderFrame {
                stream: h.stream,
                decoded: h.decoded_len,
                header_len: lead.header_len,
            },
        ));
    }
    Ok((lead, h))
}

/// A block decoder thread's reused buffers: the frame it reads, and the decoder's.
#[derive(Default)]
struct BlockScratch {
    frame: Vec<u8>,
    codec: DecodeScratch,
}

/// Decoded blocks of the shared streams that [`Archive::member_bytes_held`] keeps between calls:
/// those the last member of each shared stream used.
#[derive(Default)]
pub(crate) struct HeldBlocks(Vec<(usize, u64, Block)>);

/// Name of a stream for messages: the variable's name, or "residual bytes".
pub(crate) fn stream_name(h: &Header, id: u32) -> String {
    match id {
        format::RESIDUAL_ID => "residual bytes".into(),
        format::HEADER_ID => "netCDF header".into(),
        format::SHARED_EARLY_ID => "early shared stream".into(),
        format::SHARED_LATE_ID => "late shared stream".into(),
        format::CONSTANTS_ID => "constants frames".into(),
        format::BLOCK_SIZES_ID => "block sizes".into(),
        i if (i as usize) < h.var_count() => format!("variable {:?}", h.var(i as usize).name()),
        i => format!("variable id {i}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn front(lead: &Lead, header_len: u32) -> Vec<u8> {
        let mut b = lead.encode().to_vec();
        let h = FrameHeader {
            stored_len: 1,
            decoded_len: header_len,
            stream: format::HEADER_ID,
            block: 0,
            codec: format::Codec::Zstd,
            filter: format::Filter::None,
            esize: 1,
            payload_crc: 0,
        };
        b.extend_from_slice(&h.encode());
        b
    }

    #[test]
    fn check_front_refuses_a_header_over_the_limit_naming_it() {
        let h = (format::MAX_HEADER_LEN + 1) as u32;
        let lead = Lead {
            file_len: 1 << 31,
            numrecs: 0,
            header_len: u64::from(h),
            block_size: 1 << 20,
            hash: 0,
            block_sizes_frame: false,
        };
        let (part, at, what) = check_front(&front(&lead, h)).unwrap_err();
        assert_eq!((part, at), ("lead", 0));
        assert_eq!(
            what,
            ArchiveError::Lead(crate::error::LeadError::HeaderTooLong {
                header_len: lead.header_len
            })
        );
        assert!(
            what.to_string().contains("1073741824 bytes (1 GiB)"),
            "{what}"
        );
        let ok = Lead {
            header_len: 32,
            ..lead
        };
        assert_eq!(check_front(&front(&ok, 32)).unwrap().0, ok);
        let (part, _, what) = check_front(&front(&ok, 33)).unwrap_err();
        assert_eq!(part, "netCDF header");
        assert_eq!(
            what,
            ArchiveError::NotHeaderFrame {
                stream: format::HEADER_ID,
                decoded: 33,
                header_len: 32
            }
        );
    }
}
