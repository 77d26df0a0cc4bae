//! `nc3pack._nc3pack`: the compiled part of the Python package.
//!
//! A thin layer over nc3pack's public API: it converts arguments and results and releases the
//! GIL while Rust reads, decodes, packs or unpacks. Everything Python users see (dtypes,
//! attribute values as netCDF4-python gives them, numpy-style indexing, the xarray backend) is
//! built on top of it in the pure-Python package `nc3pack`.

use nc3pack::error::RemoteError;
use nc3pack::nc3::Values;
use nc3pack::remote::RemoteOptions;
use nc3pack::Dataset;
use nc3pack::{Archive, Error, Hyperslab, Input, NcFile};
use numpy::{PyArray1, PyArrayDyn, PyArrayMethods};
use pyo3::exceptions::{
    PyException, PyFileExistsError, PyFileNotFoundError, PyMemoryError, PyOSError,
    PyPermissionError, PyRuntimeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::path::PathBuf;

pyo3::create_exception!(
    _nc3pack,
    ArchiveError,
    PyException,
    "A damaged archive or a malformed netCDF-3 file (the message names the file, the part and the byte offset)."
);

/// The library's messages name the command line's flags (`use --force to overwrite`); in
/// Python they name the arguments of the Python API instead. In order: a phrase before the
/// flags it contains.
const PYTHON_TERMS: [(&str, &str); 8] = [
    (
        "--anon (NC3PACK_ANON=1)",
        "storage_options={\"anon\": True}",
    ),
    (
        "pack -o OUT needs inputs: paths, or --files-from LIST",
        "pack_collection needs inputs: paths, or files_from",
    ),
    ("--delete-input", "delete_input=True"),
    ("--quantize", "quantize"),
    ("--force", "force=True"),
    ("(--root)", "(root)"),
    ("--var:", "variables:"),
    ("--files-from", "files_from"),
];

/// `msg` with the command line's flags named as the Python API's arguments ([`PYTHON_TERMS`]).
fn in_python_terms(msg: String) -> String {
    if !msg.contains("--") {
        return msg;
    }
    PYTHON_TERMS
        .iter()
        .fold(msg, |m, (flag, arg)| m.replace(flag, arg))
}

/// Turns an nc3pack error into the Python exception for its kind, with the Rust message (its
/// flags named as Python arguments: [`in_python_terms`]).
fn to_py(e: Error) -> PyErr {
    let msg = in_python_terms(e.to_string());
    match &e {
        Error::Io { source, .. } => match source.raw_os_error() {
            // OSError(errno, message) becomes the matching subclass (FileNotFoundError, ...).
            Some(errno) => PyOSError::new_err((errno, msg)),
            None => PyOSError::new_err(msg),
        },
        Error::OutputExists { .. } => PyFileExistsError::new_err(msg),
        // A file changed on disk while read: as an object replaced since it was opened.
        Error::Changed { .. } | Error::ChangedWhileRead { .. } => PyOSError::new_err(msg),
        // As fsspec/s3fs raise them: a missing object is FileNotFoundError, refused or
        // missing credentials PermissionError, a malformed URL or bad settings ValueError,
        // a request that failed (after its retries) OSError.
        Error::Remote { source, .. } => match source {
            RemoteError::NotFound | RemoteError::NoSuchBucket => PyFileNotFoundError::new_err(msg),
            RemoteError::AccessDenied { .. } | RemoteError::NoCredentials => {
                PyPermissionError::new_err(msg)
            }
            RemoteError::InvalidUrl { .. } | RemoteError::Config { .. } => {
                PyValueError::new_err(msg)
            }
            _ => PyOSError::new_err(msg),
        },
        Error::Option(_)
        | Error::Slab { .. }
        | Error::Refused { .. }
        | Error::NothingToSummarize { .. }
        | Error::NothingToVerify { .. } => PyValueError::new_err(msg),
        Error::Internal(_) => PyRuntimeError::new_err(msg),
        Error::NoMemory { .. } => PyMemoryError::new_err(msg),
        _ => ArchiveError::new_err(msg),
    }
}

/// An open archive or original netCDF-3 file (one per Python `Reader`: the size difference
/// of the variants does not matter).
#[allow(clippy::large_enum_variant)]
enum Source {
    Archive(Archive),
    Nc(NcFile),
    /// A netCDF-3 file read by URL.
    NcUrl(NcFile<Input>),
}

/// Storage options as `(name, value)` pairs, the names `RemoteOptions::set` takes (the Python
/// package maps s3fs-style `storage_options` onto them).
type StorageOptions = Vec<(String, String)>;

/// Whether `path` is a URL nc3pack reads (`s3://`, `http(s)://`, `file://`).
fn url_of(path: &std::path::Path) -> Option<&str> {
    let s = path.to_str()?;
    let is_url = ["s3://", "http://", "https://", "file://"]
        .iter()
        .any(|p| s.len() > p.len() && s[..p.len()].eq_ignore_ascii_case(p));
    is_url.then_some(s)
}

/// The environment's options (as the command line reads them) with `storage` set over them.
fn remote_options(storage: Option<StorageOptions>) -> nc3pack::Result<RemoteOptions> {
    let mut opts = RemoteOptions::from_env();
    for (name, value) in storage.unwrap_or_default() {
        opts = opts.set(&name, &value)?;
    }
    Ok(opts)
}

/// The remote options a call on `path` carries: for a URL, the environment's with `storage`
/// set over them (each call its own, nothing process-wide); for a local path, none.
fn call_remote(
    path: &std::path::Path,
    storage: Option<StorageOptions>,
) -> nc3pack::Result<Option<RemoteOptions>> {
    match url_of(path) {
        Some(_) => remote_options(storage).map(Some),
        None => Ok(None),
    }
}

/// A shard given as `"I/N"`; a bad one is a `ValueError`.
fn parse_shard(s: &str) -> PyResult<nc3pack::collection::Shard> {
    s.parse()
        .map_err(|e: nc3pack::collection::ParseShardError| PyValueError::new_err(e.to_string()))
}

/// The request counters of an object read by URL.
type Stats = Option<std::sync::Arc<nc3pack::remote::RequestStats>>;

impl Source {
    fn open(
        path: &std::path::Path,
        storage: Option<StorageOptions>,
    ) -> nc3pack::Result<(Source, Stats)> {
        if let Some(url) = url_of(path) {
            let opts = remote_options(storage)?;
            let (input, stats) = if url
                .get(..7)
                .is_some_and(|p| p.eq_ignore_ascii_case("file://"))
            {
                (Input::open_url(url, &opts)?, None)
            } else {
                let r = nc3pack::remote::RemoteReader::open(url, &opts)?;
                let stats = r.stats();
                (Input::Remote(r), Some(stats))
            };
            let src = if nc3pack::is_archive(&input) {
                Source::Archive(Archive::from_reader(input, path)?)
            } else {
                Source::NcUrl(NcFile::from_reader(input, path)?)
            };
            return Ok((src, stats));
        }
        // Told apart by content, as `nc3pack::open` does; kept as a concrete type so that the
        // archive's cache can be reached.
        let is_archive = std::fs::File::open(path).is_ok_and(|f| nc3pack::is_archive(&f));
        let src = if is_archive {
            Source::Archive(Archive::open(path)?)
        } else {
            Source::Nc(NcFile::open(path)?)
        };
        Ok((src, None))
    }

    fn ds(&self) -> &dyn Dataset {
        match self {
            Source::Archive(a) => a,
            Source::Nc(f) => f,
            Source::NcUrl(f) => f,
        }
    }
}

/// Attribute values: `char` as bytes, numbers as a 1-D numpy array of their type.
fn values_py<'py>(py: Python<'py>, v: &Values) -> Bound<'py, PyAny> {
    match v {
        Values::Char(c) => PyBytes::new(py, c).into_any(),
        Values::Byte(x) => PyArray1::from_slice(py, x).into_any(),
        Values::UByte(x) => PyArray1::from_slice(py, x).into_any(),
        Values::Short(x) => PyArray1::from_slice(py, x).into_any(),
        Values::UShort(x) => PyArray1::from_slice(py, x).into_any(),
        Values::Int(x) => PyArray1::from_slice(py, x).into_any(),
        Values::UInt(x) => PyArray1::from_slice(py, x).into_any(),
        Values::Int64(x) => PyArray1::from_slice(py, x).into_any(),
        Values::UInt64(x) => PyArray1::from_slice(py, x).into_any(),
        Values::Float(x) => PyArray1::from_slice(py, x).into_any(),
        Values::Double(x) => PyArray1::from_slice(py, x).into_any(),
    }
}

type Attrs<'py> = Vec<(String, Bound<'py, PyAny>)>;

fn attrs_py<'py>(py: Python<'py>, attrs: &[nc3pack::nc3::Attribute]) -> Attrs<'py> {
    attrs
        .iter()
        .map(|a| (a.name.clone(), values_py(py, &a.values)))
        .collect()
}

/// Reads a hyperslab as `T` in native order straight into a new numpy array, with the GIL
/// released (an archive converts the byte order while it decodes each block). The array comes
/// from numpy's zeros, which asks the allocator for zeroed memory (calloc): a large array's
/// pages are zeroed by the system as the decoding threads first write them, not by one thread
/// beforehand.
fn read_typed<'py, T: nc3pack::Element + numpy::Element>(
    py: Python<'py>,
    ds: &dyn Dataset,
    v: usize,
    slab: &Hyperslab,
) -> PyResult<Bound<'py, PyAny>> {
    let shape: Vec<usize> = slab.count().iter().map(|&c| c as usize).collect();
    let array = PyArrayDyn::<T>::zeros(py, shape, false);
    {
        let mut rw = array.readwrite();
        let out: &mut [T] = rw.as_slice_mut()?;
        py.detach(|| ds.read_native_into(v, slab, bytemuck::cast_slice_mut(out)))
            .map_err(to_py)?;
    }
    Ok(array.into_any())
}

/// A netCDF-3 file or an nc3pack archive open for reading (thread-safe: many Python threads
/// may read at once; reads release the GIL).
#[pyclass(frozen, module = "nc3pack._nc3pack")]
struct Reader {
    src: Source,
    stats: Stats,
}

#[pymethods]
impl Reader {
    /// `storage_options`: `(name, value)` pairs for a URL (see `RemoteOptions::set`), over
    /// the environment's settings.
    #[new]
    #[pyo3(signature = (path, storage_options=None))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        storage_options: Option<StorageOptions>,
    ) -> PyResult<Self> {
        let (src, stats) = py
            .detach(|| Source::open(&path, storage_options))
            .map_err(to_py)?;
        Ok(Reader { src, stats })
    }

    /// The path as given.
    #[getter]
    fn path(&self) -> PathBuf {
        self.src.ds().path().to_path_buf()
    }

    /// Whether this is an archive (not an original netCDF-3 file).
    #[getter]
    fn is_archive(&self) -> bool {
        matches!(self.src, Source::Archive(_))
    }

    /// The netCDF-3 variant: "CDF-1", "CDF-2" or "CDF-5" (as `nc3pack info`).
    #[getter]
    fn variant(&self) -> &'static str {
        self.src.ds().header().variant().name()
    }

    /// `[(name, length, is_unlimited)]`; the record dimension has its number of records.
    fn dimensions(&self) -> Vec<(String, u64, bool)> {
        self.src
            .ds()
            .dimensions()
            .into_iter()
            .map(|d| (d.name, d.len, d.unlimited))
            .collect()
    }

    /// `[(name, type, dims, shape, attributes)]` in header order.
    #[allow(clippy::type_complexity)]
    fn variables<'py>(
        &self,
        py: Python<'py>,
    ) -> Vec<(String, &'static str, Vec<String>, Vec<u64>, Attrs<'py>)> {
        self.src
            .ds()
            .variables()
            .into_iter()
            .map(|v| {
                let attrs = attrs_py(py, &v.attrs);
                (v.name, v.nc_type.name(), v.dims, v.shape, attrs)
            })
            .collect()
    }

    /// `[(name, value)]`: the global attributes.
    fn global_attributes<'py>(&self, py: Python<'py>) -> Attrs<'py> {
        attrs_py(py, &self.src.ds().global_attributes())
    }

    /// Reads a hyperslab (netCDF start/count/stride; `None` for the defaults) as a numpy array
    /// in native byte order, shaped `count` (`char` comes back as uint8).
    #[pyo3(signature = (name, start=None, count=None, stride=None))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        start: Option<Vec<u64>>,
        count: Option<Vec<u64>>,
        stride: Option<Vec<u64>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        use nc3pack::nc3::NcType;
        let ds = self.src.ds();
        let slab = ds
            .slab(name, start.as_deref(), count.as_deref(), stride.as_deref())
            .map_err(to_py)?;
        let v = ds.var_id(name).map_err(to_py)?;
        match ds.header().var(v).nc_type() {
            NcType::Byte => read_typed::<i8>(py, ds, v, &slab),
            NcType::Char | NcType::UByte => read_typed::<u8>(py, ds, v, &slab),
            NcType::Short => read_typed::<i16>(py, ds, v, &slab),
            NcType::UShort => read_typed::<u16>(py, ds, v, &slab),
            NcType::Int => read_typed::<i32>(py, ds, v, &slab),
            NcType::UInt => read_typed::<u32>(py, ds, v, &slab),
            NcType::Int64 => read_typed::<i64>(py, ds, v, &slab),
            NcType::UInt64 => read_typed::<u64>(py, ds, v, &slab),
            NcType::Float => read_typed::<f32>(py, ds, v, &slab),
            NcType::Double => read_typed::<f64>(py, ds, v, &slab),
        }
    }

    /// How variable `name` is cut into blocks: `(bytes per block, blocks, shared)`, where
    /// `shared` means the variable is small and lives in a block shared with others. `None`
    /// for an original netCDF-3 file.
    fn block_layout(&self, name: &str) -> PyResult<Option<(u64, u64, bool)>> {
        let Source::Archive(a) = &self.src else {
            return Ok(None);
        };
        let v = a.var_id(name).map_err(to_py)?;
        Ok(Some((a.block_bytes(v), a.block_count(v), a.is_member(v))))
    }

    /// The block cache's counters (all zero for an original netCDF-3 file, which has none).
    fn cache_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = match &self.src {
            Source::Archive(a) => a.cache_stats(),
            Source::Nc(_) | Source::NcUrl(_) => nc3pack::CacheStats::default(),
        };
        let d = PyDict::new(py);
        d.set_item("hits", s.hits)?;
        d.set_item("misses", s.misses)?;
        d.set_item("evictions", s.evictions)?;
        d.set_item("bytes", s.bytes)?;
        d.set_item("entries", s.entries)?;
        d.set_item("budget", s.budget)?;
        Ok(d)
    }

    /// Sets the block cache's budget in decoded bytes (0 disables it; no effect on an original
    /// netCDF-3 file).
    fn set_cache_budget(&self, bytes: u64) {
        if let Source::Archive(a) = &self.src {
            a.set_cache_budget(bytes);
        }
    }

    /// Sets whether a read that spans several blocks also caches the blocks it covers whole
    /// (on by default; no effect on an original netCDF-3 file). See
    /// `nc3pack::Archive::set_cache_whole_blocks`.
    fn set_cache_whole_blocks(&self, on: bool) {
        if let Source::Archive(a) = &self.src {
            a.set_cache_whole_blocks(on);
        }
    }

    /// Whether a read that spans several blocks also caches the blocks it covers whole
    /// (false for an original netCDF-3 file, which has no cache).
    #[getter]
    fn cache_whole_blocks(&self) -> bool {
        match &self.src {
            Source::Archive(a) => a.caches_whole_blocks(),
            Source::Nc(_) | Source::NcUrl(_) => false,
        }
    }

    /// `(GET requests sent, bytes received)` so far for an object read by an `s3://` or
    /// `http(s)://` URL (opening included); `None` for a local file.
    fn request_stats(&self) -> Option<(u64, u64)> {
        self.stats.as_ref().map(|s| (s.requests(), s.bytes()))
    }

    /// Empties the block cache and zeroes its counters.
    fn clear_cache(&self) {
        if let Source::Archive(a) = &self.src {
            a.clear_cache();
        }
    }
}

fn threads_or_all(threads: Option<usize>) -> PyResult<usize> {
    match threads {
        Some(0) => Err(PyValueError::new_err("threads must be at least 1")),
        Some(n) => Ok(n),
        None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
    }
}

/// The packing options of `pack` and `pack_collection`: `level` ("fast", "max" or a number),
/// `var_rules` and `quantize` as the CLI's `--var` and `--quantize` take them.
#[allow(clippy::too_many_arguments)]
fn pack_options(
    level: &str,
    codec: &str,
    filter: &str,
    block_size: Option<u32>,
    threads: Option<usize>,
    force: bool,
    pco: bool,
    var_rules: &[String],
    quantize: &[String],
) -> PyResult<nc3pack::PackOptions> {
    let codec: nc3pack::format::Codec = codec
        .parse()
        .map_err(|e: nc3pack::ParseNameError| PyValueError::new_err(e.to_string()))?;
    let filter: nc3pack::FilterMode = filter
        .parse()
        .map_err(|e: nc3pack::ParseNameError| PyValueError::new_err(e.to_string()))?;
    // The preset first, then the codec (which sets the preset's level for it), then an
    // explicit level, which replaces it.
    let opts = match level {
        "fast" => nc3pack::PackOptions::fast().with_codec(codec),
        "max" => nc3pack::PackOptions::max().with_codec(codec),
        n => {
            let level = n.parse().map_err(|_| {
                PyValueError::new_err(format!(
                    "level {n:?}: expected an integer, \"fast\" or \"max\""
                ))
            })?;
            nc3pack::PackOptions::fast()
                .with_codec(codec)
                .with_level(level)
        }
    };
    // No block size given: the preset's (with `max`, 8 MiB for variables over 1 MiB).
    let opts = match block_size {
        Some(b) => opts.with_block_size(b),
        None => opts,
    };
    let mut opts = opts
        .with_filter(filter)
        .with_threads(threads_or_all(threads)?)
        .with_force(force)
        .with_pco(pco);
    for r in var_rules {
        let rule = r.parse().map_err(|e: nc3pack::vars::VarParseError| {
            PyValueError::new_err(format!("var rule {r:?}: {e}"))
        })?;
        opts = opts.with_var(rule);
    }
    for r in quantize {
        let rule = r.parse().map_err(|e: nc3pack::quantize::QuantizeError| {
            PyValueError::new_err(in_python_terms(e.to_string()))
        })?;
        opts = opts.with_quantize(rule);
    }
    Ok(opts)
}

/// Packs `src` into the archive `dst`; returns `(input bytes, output bytes, blocks, hash)`.
/// `var_rules` and `quantize` are rules as the CLI's `--var` and `--quantize` take them.
#[pyfunction]
#[pyo3(signature = (src, dst, level, codec, filter, block_size, threads, force, pco=true, var_rules=Vec::new(), quantize=Vec::new()))]
#[allow(clippy::too_many_arguments)]
fn pack(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    level: &str,
    codec: &str,
    filter: &str,
    block_size: Option<u32>,
    threads: Option<usize>,
    force: bool,
    pco: bool,
    var_rules: Vec<String>,
    quantize: Vec<String>,
) -> PyResult<(u64, u64, u64, String)> {
    let opts = pack_options(
        level, codec, filter, block_size, threads, force, pco, &var_rules, &quantize,
    )?;
    let s = py
        .detach(|| nc3pack::pack_file(&src, &dst, &opts))
        .map_err(to_py)?;
    Ok((
        s.input_len,
        s.output_len,
        s.blocks,
        format!("{:032x}", s.hash),
    ))
}

/// What `pack_collection` returns: `(output, manifest, files, packed, skipped, input bytes,
/// output bytes, failures (input, message), unreadable (message), kept (input, why))`.
type CollectionTuple = (
    PathBuf,
    PathBuf,
    usize,
    usize,
    usize,
    u64,
    u64,
    Vec<(PathBuf, String)>,
    Vec<String>,
    Vec<(PathBuf, String)>,
);

/// Packs the files `inputs` (and the files found in the directories among them) into
/// `output_dir`, resumable, with a manifest (nc3pack::pack_collection). A file that fails is
/// listed, not raised; an error before packing, or one writing the manifest, is raised.
/// `storage_options`: `(name, value)` pairs for an `output_dir` that is an S3 prefix, over
/// the environment's.
#[pyfunction]
#[pyo3(signature = (inputs, output_dir, level, codec, filter, block_size, threads, force, pco, var_rules, quantize, root=None, shard=None, manifest=None, delete_input=false, files_from=None, storage_options=None))]
#[allow(clippy::too_many_arguments)]
fn pack_collection(
    py: Python<'_>,
    inputs: Vec<PathBuf>,
    output_dir: PathBuf,
    level: &str,
    codec: &str,
    filter: &str,
    block_size: Option<u32>,
    threads: Option<usize>,
    force: bool,
    pco: bool,
    var_rules: Vec<String>,
    quantize: Vec<String>,
    root: Option<PathBuf>,
    shard: Option<&str>,
    manifest: Option<PathBuf>,
    delete_input: bool,
    files_from: Option<PathBuf>,
    storage_options: Option<StorageOptions>,
) -> PyResult<CollectionTuple> {
    let pack = pack_options(
        level, codec, filter, block_size, threads, force, pco, &var_rules, &quantize,
    )?;
    let mut opts = nc3pack::CollectionOptions::default()
        .with_pack(pack)
        .with_delete_input(delete_input);
    if let Some(s) = shard {
        opts = opts.with_shard(parse_shard(s)?);
    }
    if let Some(r) = root {
        opts = opts.with_root(r);
    }
    if let Some(m) = manifest {
        opts = opts.with_manifest(m);
    }
    if let Some(f) = files_from {
        opts = opts.with_files_from(f);
    }
    if let Some(remote) = call_remote(&output_dir, storage_options).map_err(to_py)? {
        opts = opts.with_remote(remote);
    }
    let r = py
        .detach(|| nc3pack::pack_collection(&inputs, &output_dir, &opts))
        .map_err(to_py)?;
    if let Some(e) = r.manifest_error {
        return Err(to_py(e));
    }
    let failures = r
        .failures
        .into_iter()
        .map(|(p, e)| (p, in_python_terms(e.to_string())));
    let kept = r.kept.into_iter().map(|(p, k)| (p, k.to_string()));
    Ok((
        r.output,
        r.manifest,
        r.files,
        r.packed,
        r.skipped,
        r.input_bytes,
        r.output_bytes,
        failures.collect(),
        r.unreadable.iter().map(ToString::to_string).collect(),
        kept.collect(),
    ))
}

/// Restores the original file from the archive `src` into `dst`, verified by hash; returns
/// the bytes written.
#[pyfunction]
#[pyo3(signature = (src, dst, force, threads, storage_options=None))]
fn unpack(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    force: bool,
    threads: Option<usize>,
    storage_options: Option<StorageOptions>,
) -> PyResult<u64> {
    let threads = threads_or_all(threads)?;
    let mut opts = nc3pack::UnpackOptions::default()
        .with_threads(threads)
        .with_force(force);
    if let Some(remote) = call_remote(&src, storage_options).map_err(to_py)? {
        opts = opts.with_remote(remote);
    }
    py.detach(|| nc3pack::unpack_file(&src, &dst, &opts))
        .map_err(to_py)
}

/// One damaged part: `(part, variable or None, block or None, offset, what, message)`.
type DamageTuple = (
    &'static str,
    Option<String>,
    Option<u64>,
    u64,
    String,
    String,
);

/// Checks an archive completely; returns `(damage, blocks, hash_checked, original_matches)`.
#[pyfunction]
#[pyo3(signature = (path, against, threads, storage_options=None))]
fn verify(
    py: Python<'_>,
    path: PathBuf,
    against: Option<PathBuf>,
    threads: Option<usize>,
    storage_options: Option<StorageOptions>,
) -> PyResult<(Vec<DamageTuple>, u64, bool, Option<bool>)> {
    let mut opts = nc3pack::VerifyOptions::default().with_threads(threads_or_all(threads)?);
    if let Some(original) = against {
        opts = opts.with_against(original);
    }
    if let Some(remote) = call_remote(&path, storage_options).map_err(to_py)? {
        opts = opts.with_remote(remote);
    }
    let r = py.detach(|| nc3pack::verify(&path, &opts)).map_err(to_py)?;
    let damage = r
        .damage
        .iter()
        .map(|d| {
            let (var, block) = match &d.block {
                Some((v, b)) => (Some(v.clone()), Some(*b)),
                None => (None, None),
            };
            (
                d.part,
                var,
                block,
                d.offset,
                d.what.to_string(),
                d.to_string(),
            )
        })
        .collect();
    Ok((damage, r.blocks, r.hash_checked, r.original_matches))
}

/// `nc3pack info --json` of a file, as JSON text.
#[pyfunction]
#[pyo3(signature = (path, storage_options=None))]
fn info_json(
    py: Python<'_>,
    path: PathBuf,
    storage_options: Option<StorageOptions>,
) -> PyResult<String> {
    let mut opts = nc3pack::info::InfoOptions::default();
    if let Some(remote) = call_remote(&path, storage_options).map_err(to_py)? {
        opts = opts.with_remote(remote);
    }
    py.detach(|| nc3pack::info::describe_with(&path, &opts).map(|info| info.to_json()))
        .map_err(to_py)
}

/// What a collection's manifests record (`nc3pack info --manifest`): `(manifests, lines,
/// files, packed, input_bytes, output_bytes, unknown_size, lossy, deleted, seconds, failures,
/// bad_lines)`.
#[pyfunction]
#[pyo3(signature = (manifests, storage_options=None))]
fn collection_summary(
    py: Python<'_>,
    manifests: Vec<PathBuf>,
    storage_options: Option<StorageOptions>,
) -> PyResult<SummaryTuple> {
    let remote = remote_options(storage_options).map_err(to_py)?;
    let s = py
        .detach(|| nc3pack::collection::summarize_collection_with(&manifests, &remote))
        .map_err(to_py)?;
    Ok((
        s.manifests,
        s.lines,
        s.files,
        s.packed,
        s.input_bytes,
        s.output_bytes,
        s.unknown_size,
        s.lossy,
        s.deleted,
        s.seconds,
        s.failures,
        s.bad_lines,
    ))
}

/// Verifies every archive the manifests list, or share `shard` ("I/N") of their names
/// (nc3pack::collection::verify_collection); returns `(checked, failures (archive, message),
/// bad_lines (manifest, line number))`.
#[pyfunction]
#[pyo3(signature = (manifests, against=None, threads=None, shard=None, storage_options=None))]
fn verify_collection(
    py: Python<'_>,
    manifests: Vec<PathBuf>,
    against: Option<PathBuf>,
    threads: Option<usize>,
    shard: Option<&str>,
    storage_options: Option<StorageOptions>,
) -> PyResult<VerifyCollectionTuple> {
    let mut opts = nc3pack::collection::VerifyCollectionOptions::default()
        .with_threads(threads_or_all(threads)?);
    if let Some(s) = shard {
        opts = opts.with_shard(parse_shard(s)?);
    }
    if let Some(root) = against {
        opts = opts.with_against(root);
    }
    let remote = remote_options(storage_options).map_err(to_py)?;
    let r = py
        .detach(|| nc3pack::collection::verify_collection_with(&manifests, &opts, &remote, &|_| {}))
        .map_err(to_py)?;
    let failures = r
        .failures
        .into_iter()
        .map(|(p, e)| (p, in_python_terms(e.to_string())));
    Ok((r.checked, failures.collect(), r.bad_lines))
}

/// What [`verify_collection`] returns.
type VerifyCollectionTuple = (usize, Vec<(PathBuf, String)>, Vec<(PathBuf, u64)>);

/// What [`collection_summary`] returns.
type SummaryTuple = (
    usize,
    u64,
    usize,
    usize,
    u64,
    u64,
    usize,
    usize,
    usize,
    f64,
    Vec<(PathBuf, String)>,
    Vec<(PathBuf, u64)>,
);

/// `text` with the password and the query string of every URL in it hidden (as errors print
/// URLs): for reprs and messages made in Python.
#[pyfunction]
fn redact_url(text: &str) -> String {
    nc3pack::error::redact_url(text).into_owned()
}

/// Registers the archive format with every netCDF-C library loaded in this process (netCDF4-
/// python's own copy included): how many accepted it.
#[pyfunction]
fn netcdf_register() -> PyResult<usize> {
    nc3pack_netcdf::register_all()
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))
}

/// An archive's original file, as bytes at any offset (`nc3pack.open_original` wraps it in a
/// Python binary file object): the header and other kept bytes as stored, variable data
/// decoded from the blocks that cover a read, through the archive's block cache.
#[pyclass(frozen, module = "nc3pack._nc3pack")]
struct Original {
    reader: nc3pack::OriginalReader,
}

#[pymethods]
impl Original {
    /// Opens the archive at `path` (a path or URL; `storage_options` as for `Reader`).
    #[new]
    #[pyo3(signature = (path, storage_options=None))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        storage_options: Option<StorageOptions>,
    ) -> PyResult<Self> {
        let (src, _) = py
            .detach(|| Source::open(&path, storage_options))
            .map_err(to_py)?;
        match src {
            Source::Archive(a) => Ok(Original {
                reader: nc3pack::OriginalReader::new(a),
            }),
            _ => Err(PyValueError::new_err(format!(
                "{}: not an nc3pack archive (a netCDF-3 file is its own original: open it as a file)",
                path.display()
            ))),
        }
    }

    /// The original file's size in bytes.
    #[getter]
    fn size(&self) -> u64 {
        self.reader.len()
    }

    /// Up to `n` bytes of the original at `offset` (fewer only at its end), with the GIL
    /// released while blocks are decoded.
    fn pread<'py>(&self, py: Python<'py>, offset: u64, n: usize) -> PyResult<Bound<'py, PyBytes>> {
        let n = n.min(self.reader.len().saturating_sub(offset) as usize);
        let mut buf = vec![0u8; n];
        let got = py
            .detach(|| self.reader.read_at(offset, &mut buf))
            .map_err(to_py)?;
        Ok(PyBytes::new(py, &buf[..got]))
    }
}

#[pymodule]
fn _nc3pack(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Reader>()?;
    m.add_class::<Original>()?;
    m.add_function(wrap_pyfunction!(redact_url, m)?)?;
    m.add_function(wrap_pyfunction!(pack, m)?)?;
    m.add_function(wrap_pyfunction!(pack_collection, m)?)?;
    m.add_function(wrap_pyfunction!(unpack, m)?)?;
    m.add_function(wrap_pyfunction!(verify, m)?)?;
    m.add_function(wrap_pyfunction!(info_json, m)?)?;
    m.add_function(wrap_pyfunction!(collection_summary, m)?)?;
    m.add_function(wrap_pyfunction!(verify_collection, m)?)?;
    m.add_function(wrap_pyfunction!(netcdf_register, m)?)?;
    m.add("ArchiveError", m.py().get_type::<ArchiveError>())?;
    m.add("DEFAULT_BLOCK_SIZE", nc3pack::DEFAULT_BLOCK_SIZE)?;
    Ok(())
}
