//! `nc3pack info`: a summary of a netCDF-3 file or an archive, as CDL-like text or JSON.

use crate::error::{Error, Result};
use crate::format::{Filter, IndexEntry};
use crate::nc3::{self, Attr, Header, Layout, Values};
use crate::read::archive::Archive;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// Describes the file at `path` (a .nc or a .nc3z, told apart by content).
///
/// The [`Info`] holds the opened file, not the description: its lists (dimensions, variables,
/// attributes, streams) are made an item at a time as they are read or serialized, so a header
/// of a million dimensions costs what its parse costs.
///
/// ```
/// let info = nc3pack::info::describe("samples/gridded_sst.nc".as_ref()).unwrap();
/// assert_eq!(info.format(), "64-bit offset");
/// assert!(info.archive().is_none());
/// let json = serde_json::to_value(&info).unwrap();
/// assert_eq!(json["format"], "64-bit offset");
/// ```
///
/// # Errors
///
/// The file does not open or is neither a netCDF-3 file nor an archive that opens.
pub fn describe(path: &Path) -> Result<Info> {
    describe_with(path, &InfoOptions::default())
}

/// How to describe a file (see [`describe_with`]): how a URL is reached.
///
/// ```
/// use nc3pack::{info::InfoOptions, remote::RemoteOptions};
/// let opts = InfoOptions::default().with_remote(RemoteOptions::default().with_anon(true));
/// assert!(opts.remote().is_some_and(|r| r.anon()));
/// ```
#[derive(Debug, Clone, Default)]
pub struct InfoOptions {
    /// How a file given by URL is reached (`None`: the environment's,
    /// [`crate::remote::RemoteOptions::from_env`], read at the call).
    remote: Option<crate::read::input::CallRemote>,
}

impl InfoOptions {
    /// These options, reaching a file given by URL (`s3://`, `http(s)://`) with `remote`
    /// (credentials, endpoint, region, anonymous access) instead of the environment's
    /// ([`crate::remote::RemoteOptions::from_env`]): the call goes by `remote` alone (it reads
    /// the environment only if `remote` was made by `from_env`), nothing process-wide, so calls
    /// on different threads with different credentials do not meet.
    ///
    /// ```
    /// use nc3pack::{info::InfoOptions, remote::RemoteOptions};
    /// let opts = InfoOptions::default()
    ///     .with_remote(RemoteOptions::default().with_endpoint("http://127.0.0.1:9000"));
    /// # let _ = opts;
    /// ```
    #[cfg(feature = "remote")]
    pub fn with_remote(mut self, remote: crate::remote::RemoteOptions) -> Self {
        self.remote = Some(remote);
        self
    }

    /// The remote options given with [`InfoOptions::with_remote`], if any.
    ///
    /// ```
    /// assert!(nc3pack::info::InfoOptions::default().remote().is_none());
    /// ```
    #[cfg(feature = "remote")]
    pub fn remote(&self) -> Option<&crate::remote::RemoteOptions> {
        self.remote.as_ref()
    }
}

/// [`describe`] with options: a URL is read with the remote options they carry.
///
/// ```
/// use nc3pack::info::{describe_with, InfoOptions};
/// let info = describe_with("samples/gridded_sst.nc".as_ref(), &InfoOptions::default())?;
/// assert_eq!(info.format(), "64-bit offset");
/// # Ok::<(), nc3pack::Error>(())
/// ```
///
/// # Errors
///
/// As [`describe`]; [`Error::Remote`] when a URL cannot be read.
pub fn describe_with(path: &Path, opts: &InfoOptions) -> Result<Info> {
    Ok(Info {
        src: Opened::open(path, opts.remote.as_ref())?,
    })
}

/// Writes the description of the file at `path` to `out`: as pretty-printed JSON (the
/// serialization of [`describe`]'s [`Info`]) or as CDL-like text ([`Info::to_text`], with `name`
/// as the dataset name). Memory stays bounded by one item (a dimension, a variable with its
/// attributes, a stream), not the whole description.
///
/// ```no_run
/// let mut out = Vec::new();
/// nc3pack::info::write("samples/gridded_sst.nc".as_ref(), false, "gridded_sst", &mut out).unwrap();
/// assert!(String::from_utf8(out).unwrap().starts_with("netcdf gridded_sst {"));
/// ```
///
/// # Errors
///
/// As [`describe`], and write errors on `out` (as [`Error::Io`] naming `<output>`).
pub fn write(path: &Path, json: bool, name: &str, out: &mut dyn std::io::Write) -> Result<()> {
    write_with(path, &InfoOptions::default(), json, name, out)
}

/// [`write()`] with options: a URL is read with the remote options they carry (as
/// [`describe_with`]).
///
/// ```no_run
/// use nc3pack::{info::InfoOptions, remote::RemoteOptions};
/// let opts = InfoOptions::default().with_remote(RemoteOptions::from_env().with_anon(true));
/// let mut out = Vec::new();
/// nc3pack::info::write_with("s3://bucket/sst.nc3z".as_ref(), &opts, true, "sst", &mut out)?;
/// # Ok::<(), nc3pack::Error>(())
/// ```
///
/// # Errors
///
/// As [`write()`]; [`Error::Remote`] when a URL cannot be read.
pub fn write_with(
    path: &Path,
    opts: &InfoOptions,
    json: bool,
    name: &str,
    out: &mut dyn std::io::Write,
) -> Result<()> {
    let info = describe_with(path, opts)?;
    let werr = |e: std::io::Error| Error::Io {
        path: "<output>".into(),
        op: "write",
        source: e,
    };
    let mut out = std::io::BufWriter::new(out);
    if json {
        serde_json::to_writer_pretty(&mut out, &info).map_err(|e| werr(e.into()))?;
        out.write_all(b"\n").map_err(werr)?;
    } else {
        info.write_text(name, &mut out).map_err(werr)?;
    }
    out.flush().map_err(werr)
}

/// The description of a netCDF-3 file or an archive, as `nc3pack info` prints it. It serializes
/// (serde) to the JSON of `nc3pack info --json`, an object with the keys in this order:
/// `archive` (archives only: [`ArchiveInfo`]), `dimensions` ([`Dimension`]s), `file_bytes`,
/// `format`, `global_attributes` ([`AttributeInfo`]s), `header_bytes`, `residual_bytes`,
/// `variables` ([`Variable`]s). The lists are made as they are serialized.
///
/// ```
/// let info = nc3pack::info::describe("samples/classic_records.nc".as_ref()).unwrap();
/// let time = info.dimensions().find(|d| d.unlimited).unwrap();
/// assert_eq!(time.name, "time");
/// for v in info.variables() {
///     println!("{} {}({})", v.nc_type, v.name, v.dimensions.join(", "));
/// }
/// assert!(info.to_text("classic_records").starts_with("netcdf classic_records {"));
/// ```
///
/// ```
/// let info = nc3pack::info::describe("samples/classic_records.nc".as_ref())?;
/// assert_eq!(info.format(), "classic");
/// assert!(info.archive().is_none()); // a netCDF-3 file, not an archive
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Info {
    src: Opened,
}

impl Info {
    /// The netCDF variant: "classic", "64-bit offset" or "64-bit data" ([`Variant::name`]).
    ///
    /// [`Variant::name`]: crate::nc3::Variant::name
    ///
    /// ```
    /// let info = nc3pack::info::describe("samples/classic_records.nc".as_ref())?;
    /// assert_eq!(info.format(), "classic");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn format(&self) -> &'static str {
        self.src.header_layout().0.variant().name()
    }

    /// Length of the (original) netCDF-3 file.
    ///
    /// ```
    /// let info = nc3pack::info::describe("samples/classic_records.nc".as_ref())?;
    /// assert_eq!(info.file_bytes(), std::fs::metadata("samples/classic_records.nc")?.len());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn file_bytes(&self) -> u64 {
        self.src.header_layout().1.file_len
    }

    /// Length of its header.
    ///
    /// ```
    /// let info = nc3pack::info::describe("samples/classic_records.nc".as_ref())?;
    /// let b = std::fs::read("samples/classic_records.nc")?;
    /// assert_eq!(info.header_bytes(), nc3pack::nc3::Header::parse(&b, b.len() as u64)?.len());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn header_bytes(&self) -> u64 {
        self.src.header_layout().1.header_len
    }

    /// Bytes of the file outside the header and the variables' data.
    ///
    /// ```
    /// let info = nc3pack::info::describe("samples/classic_records.nc".as_ref())?;
    /// assert!(info.residual_bytes() < info.file_bytes() - info.header_bytes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn residual_bytes(&self) -> u64 {
        self.src.header_layout().1.residual_len
    }

    /// The dimensions, in header order; the unlimited one with the number of records.
    ///
    /// ```
    /// let info = nc3pack::info::describe("samples/classic_records.nc".as_ref())?;
    /// let time = info.dimensions().next().unwrap();
    /// assert_eq!((time.name, time.length, time.unlimited), ("time", 7, true)); // 7 records
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dimensions(&self) -> impl Iterator<Item = Dimension<'_>> + '_ {
        let (h, layout) = self.src.header_layout();
        h.dims().map(move |d| Dimension {
            name: d.name(),
            length: if d.is_record() {
                layout.numrecs
            } else {
                d.len()
            },
            unlimited: d.is_record(),
        })
    }

    /// The variables, in header order.
    ///
    /// ```
    /// let info = nc3pack::info::describe("samples/classic_records.nc".as_ref())?;
    /// let s3 = info.variables().find(|v| v.name == "s3").unwrap();
    /// assert_eq!((s3.nc_type, s3.shape, s3.record), ("short", &[7, 3][..], true));
    /// assert_eq!(s3.dimensions, ["time", "three"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn variables(&self) -> impl Iterator<Item = Variable<'_>> + '_ {
        let (h, layout) = self.src.header_layout();
        h.vars().zip(&layout.vars).map(|(v, l)| Variable {
            name: v.name(),
            nc_type: v.nc_type().name(),
            dimensions: v.dims().map(|d| d.name()).collect(),
            shape: &l.shape,
            record: l.is_record,
            attributes: v.attrs().map(AttributeInfo::of).collect(),
        })
    }

    /// The global attributes, in header order.
    ///
    /// ```
    /// let info = nc3pack::info::describe("samples/classic_records.nc".as_ref())?;
    /// let names: Vec<&str> = info.global_attributes().map(|a| a.name).collect();
    /// assert_eq!(names, ["title", "source"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn global_attributes(&self) -> impl Iterator<Item = AttributeInfo<'_>> + '_ {
        self.src
            .header_layout()
            .0
            .global_attrs()
            .map(AttributeInfo::of)
    }

    /// The archive's sizes and streams (`None` for a netCDF-3 file).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-info-archive", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let info = nc3pack::info::describe(&z)?; // samples/obs_points.nc, packed
    /// let archive = info.archive().unwrap();
    /// assert_eq!(archive.original_bytes, std::fs::metadata("samples/obs_points.nc")?.len());
    /// assert_eq!(archive.archive_bytes, std::fs::metadata(&z)?.len());
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn archive(&self) -> Option<ArchiveInfo<'_>> {
        match &self.src {
            Opened::Archive(a) => Some(ArchiveInfo::of(a)),
            Opened::File(..) => None,
        }
    }

    /// The description as one line of JSON (`nc3pack info --json` without the indentation).
    ///
    /// ```
    /// let info = nc3pack::info::describe("samples/classic_records.nc".as_ref())?;
    /// let json: serde_json::Value = serde_json::from_str(&info.to_json())?;
    /// assert_eq!(json["format"], "classic");
    /// assert_eq!(json["dimensions"][0]["length"], 7);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_json(&self) -> String {
        // Serializing to memory fails only on a map with non-string keys, which this has not.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The description as CDL-like text in the spirit of `ncdump -h` (`name` is the dataset
    /// name), with archive statistics as comments: what `nc3pack info` prints.
    ///
    /// ```
    /// let info = nc3pack::info::describe("samples/classic_records.nc".as_ref())?;
    /// let text = info.to_text("classic_records");
    /// assert!(text.starts_with("netcdf classic_records {"));
    /// assert!(text.contains("short s3(time, three) ;"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_text(&self, name: &str) -> String {
        let mut out = Vec::new();
        // Writing to a Vec cannot fail.
        let _ = self.write_text(name, &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Writes [`Info::to_text`] to `out`, an item at a time.
    ///
    /// ```
    /// let info = nc3pack::info::describe("samples/classic_records.nc".as_ref())?;
    /// let mut out = Vec::new();
    /// info.write_text("classic_records", &mut out)?;
    /// assert_eq!(String::from_utf8(out)?, info.to_text("classic_records"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The write errors of `out`.
    pub fn write_text(&self, name: &str, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let top = Parts {
            field: Box::new(|k: &str| match k {
                "format" => Value::from(self.format()),
                _ => Value::Null,
            }),
            items: Box::new(|k: &str| -> Box<dyn Iterator<Item = Value> + '_> {
                match k {
                    "dimensions" => Box::new(self.dimensions().map(to_value)),
                    "variables" => Box::new(self.variables().map(to_value)),
                    "global_attributes" => Box::new(self.global_attributes().map(to_value)),
                    _ => Box::new(std::iter::empty()),
                }
            }),
        };
        let arch = self.archive();
        let whole = arch.as_ref().map(to_value);
        let archive = arch.as_ref().map(|a| Parts {
            field: Box::new(|k: &str| {
                whole
                    .as_ref()
                    .and_then(|w| w.get(k))
                    .cloned()
                    .unwrap_or(Value::Null)
            }),
            items: Box::new(move |k: &str| -> Box<dyn Iterator<Item = Value> + '_> {
                match k {
                    "streams" => Box::new(a.streams().map(to_value)),
                    _ => Box::new(std::iter::empty()),
                }
            }),
        });
        render(out, name, &top, archive.as_ref())
    }
}

impl serde_core::Serialize for Info {
    fn serialize<S: serde_core::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde_core::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        if let Some(a) = self.archive() {
            m.serialize_entry("archive", &a)?;
        }
        m.serialize_entry("dimensions", &Lazy(|| self.dimensions()))?;
        m.serialize_entry("file_bytes", &self.file_bytes())?;
        m.serialize_entry("format", self.format())?;
        m.serialize_entry("global_attributes", &Lazy(|| self.global_attributes()))?;
        m.serialize_entry("header_bytes", &self.header_bytes())?;
        m.serialize_entry("residual_bytes", &self.residual_bytes())?;
        m.serialize_entry("variables", &Lazy(|| self.variables()))?;
        m.end()
    }
}

/// An opened file to describe (one, held once: its size does not matter).
#[allow(clippy::large_enum_variant)]
enum Opened {
    Archive(Archive),
    File(Header, Layout),
}

impl Opened {
    fn open(path: &Path, remote: Option<&crate::read::input::CallRemote>) -> Result<Opened> {
        let f = crate::read::input::open_input_with(path, remote, "info")?;
        if crate::read::is_archive(&f) {
            Ok(Opened::Archive(Archive::from_reader(f, path)?))
        } else {
            let (h, _, layout) = nc3::open(&f, path)?;
            Ok(Opened::File(h, layout))
        }
    }

    fn header_layout(&self) -> (&Header, &Layout) {
        match self {
            Opened::Archive(a) => (a.header(), a.layout()),
            Opened::File(h, l) => (h, l),
        }
    }
}

/// One item per element of the iterator `f` makes, serialized as a sequence as they are made.
struct Lazy<F>(F);

impl<F: Fn() -> I, I: Iterator> serde_core::Serialize for Lazy<F>
where
    I::Item: serde_core::Serialize,
{
    fn serialize<S: serde_core::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_seq((self.0)())
    }
}

/// One item as JSON (for the text form).
fn to_value(item: impl serde_core::Serialize) -> Value {
    serde_json::to_value(item).unwrap_or(Value::Null)
}

/// A dimension, in [`Info::dimensions`]; JSON `{"length", "name", "unlimited"}`.
///
/// ```
/// let info = nc3pack::info::describe("samples/classic_records.nc".as_ref())?;
/// let five = info.dimensions().find(|d| d.name == "five").unwrap();
/// assert_eq!((five.length, five.unlimited), (5, false));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dimension<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its length; for the unlimited dimension, the number of records.
    pub length: u64,
    /// Whether it is the unlimited (record) dimension.
    pub unlimited: bool,
}

impl serde_core::Serialize for Dimension<'_> {
    fn serialize<S: serde_core::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde_core::ser::SerializeStruct;
        let mut m = s.serialize_struct("Dimension", 3)?;
        m.serialize_field("length", &self.length)?;
        m.serialize_field("name", self.name)?;
        m.serialize_field("unlimited", &self.unlimited)?;
        m.end()
    }
}

/// A variable, in [`Info::variables`]; JSON `{"attributes", "dimensions", "name", "record",
/// "shape", "type"}`.
///
/// ```
/// let info = nc3pack::info::describe("samples/classic_records.nc".as_ref())?;
/// let time = info.variables().next().unwrap();
/// assert_eq!((time.name, time.nc_type), ("time", "double"));
/// assert_eq!(time.attributes[0].name, "units");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Variable<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its type's CDL name ("float", "int64", ...).
    pub nc_type: &'static str,
    /// Its dimensions' names.
    pub dimensions: Vec<&'a str>,
    /// Its shape (the record dimension with the number of records).
    pub shape: &'a [u64],
    /// Whether it is a record variable.
    pub record: bool,
    /// Its attributes.
    pub attributes: Vec<AttributeInfo<'a>>,
}

impl serde_core::Serialize for Variable<'_> {
    fn serialize<S: serde_core::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde_core::ser::SerializeStruct;
        let mut m = s.serialize_struct("Variable", 6)?;
        m.serialize_field("attributes", &self.attributes)?;
        m.serialize_field("dimensions", &self.dimensions)?;
        m.serialize_field("name", self.name)?;
        m.serialize_field("record", &self.record)?;
        m.serialize_field("shape", self.shape)?;
        m.serialize_field("type", self.nc_type)?;
        m.end()
    }
}

/// What an attribute holds, in [`Info::global_attributes`] and [`Variable::attributes`]: its
/// name and decoded values (the header's record of an attribute, with its type and padded
/// bytes, is [`crate::nc3::Attribute`]); JSON `{"name", "type", "values"}` (text for
/// `char`, else an array of numbers).
///
/// ```
/// let info = nc3pack::info::describe("samples/classic_records.nc".as_ref())?;
/// use nc3pack::nc3::Values;
/// let title = info.global_attributes().next().unwrap();
/// assert_eq!(title.name, "title");
/// assert_eq!(title.values, Values::Char(b"classic record padding sample".to_vec()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct AttributeInfo<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its values.
    pub values: Values,
}

impl<'a> AttributeInfo<'a> {
    fn of(a: Attr<'a>) -> AttributeInfo<'a> {
        AttributeInfo {
            name: a.name(),
            values: a.values(),
        }
    }
}

impl serde_core::Serialize for AttributeInfo<'_> {
    fn serialize<S: serde_core::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde_core::ser::SerializeStruct;
        let mut m = s.serialize_struct("AttributeInfo", 3)?;
        m.serialize_field("name", self.name)?;
        m.serialize_field("type", type_of(&self.values))?;
        m.serialize_field("values", &ValuesJson(&self.values))?;
        m.end()
    }
}

/// Attribute values as JSON: `char` as text (invalid UTF-8 replaced), numbers as an array
/// (floats as doubles, as `nc3pack info --json` has always printed them).
struct ValuesJson<'a>(&'a Values);

impl serde_core::Serialize for ValuesJson<'_> {
    fn serialize<S: serde_core::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self.0 {
            Values::Char(c) => s.serialize_str(&String::from_utf8_lossy(c)),
            Values::Byte(x) => x.serialize(s),
            Values::Short(x) => x.serialize(s),
            Values::Int(x) => x.serialize(s),
            Values::Float(x) => s.collect_seq(x.iter().map(|&f| f64::from(f))),
            Values::Double(x) => x.serialize(s),
            Values::UByte(x) => x.serialize(s),
            Values::UShort(x) => x.serialize(s),
            Values::UInt(x) => x.serialize(s),
            Values::Int64(x) => x.serialize(s),
            Values::UInt64(x) => x.serialize(s),
        }
    }
}

/// An archive's sizes and streams, in [`Info::archive`]; JSON `{"archive_bytes", "block_size",
/// "blocks", "blocks_by_method", "constant_blocks", "constants_frame_bytes", "constants_frames",
/// "format_version" ("1.0", "1.1", "1.2" or "1.3"), "original_bytes",
/// "original_hash_xxh3_128" (32 hex digits), "ratio", "stored_block_bytes", "streams"}`.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-info-ArchiveInfo", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let z = dir.join("obs.nc3z");
/// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
/// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
/// let info = nc3pack::info::describe(&z)?; // samples/obs_points.nc, packed
/// let archive = info.archive().unwrap();
/// assert_eq!(archive.block_size, nc3pack::DEFAULT_BLOCK_SIZE);
/// assert_eq!(archive.constant_blocks, 0);
/// assert!(archive.ratio.unwrap() > 1.0);
/// // How often each codec (and filter) encoded a block, over all streams.
/// assert_eq!(archive.blocks_by_method().values().sum::<u64>(), archive.blocks);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy)]
pub struct ArchiveInfo<'a> {
    archive: &'a Archive,
    /// The archive's length.
    pub archive_bytes: u64,
    /// The original file's length.
    pub original_bytes: u64,
    /// `original_bytes / archive_bytes` to 3 decimals.
    pub ratio: Option<f64>,
    /// The nominal block size (the lead's; with per-variable block sizes, that of the
    /// variables without one of their own, the residual and shared streams).
    pub block_size: u32,
    /// The archive format's version: "1.0", "1.1" with per-variable block sizes, "1.2" in
    /// the compact form, "1.3" in the compact form with the header dictionary.
    pub format_version: &'static str,
    /// Blocks of all streams.
    pub blocks: u64,
    /// Bytes of all block frames.
    pub stored_block_bytes: u64,
    /// Blocks that are constant (in the index only).
    pub constant_blocks: u64,
    /// Number of constants frames.
    pub constants_frames: u64,
    /// Bytes of the constants frames.
    pub constants_frame_bytes: u64,
    /// XXH3-128 of the original file.
    pub original_hash: u128,
}

impl<'a> ArchiveInfo<'a> {
    fn of(a: &'a Archive) -> ArchiveInfo<'a> {
        let n = a.stream_count();
        ArchiveInfo {
            archive: a,
            archive_bytes: a.len(),
            original_bytes: a.layout().file_len,
            ratio: ratio(a.layout().file_len, a.len()),
            block_size: a.lead().block_size,
            format_version: if a.is_compact() && a.header_dict() {
                "1.3"
            } else if a.is_compact() {
                "1.2"
            } else if a.lead().block_sizes_frame {
                "1.1"
            } else {
                "1.0"
            },
            blocks: (0..n).map(|s| a.block_count(s)).sum(),
            stored_block_bytes: (0..n).map(|s| a.stored_bytes(s)).sum(),
            constant_blocks: a
                .blocks()
                .filter(|&(s, b)| a.entry(s, b).is_constant())
                .count() as u64,
            constants_frames: a.constants_frames().len() as u64,
            constants_frame_bytes: a.constants_frames().iter().map(|e| e.frame_len()).sum(),
            original_hash: a.original_hash(),
        }
    }

    /// The streams, in stream order (the variables, the residual bytes, the shared streams).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-info-streams", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let info = nc3pack::info::describe(&z)?; // samples/obs_points.nc, packed
    /// let archive = info.archive().unwrap();
    /// let temp = archive.streams().find(|s| s.name == "temp").unwrap();
    /// assert_eq!(temp.raw_bytes, 20000 * 4);
    /// assert_eq!(temp.blocks, 1);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn streams(&self) -> impl Iterator<Item = StreamInfo> + 'a {
        let a = self.archive;
        (0..a.stream_count()).map(move |s| StreamInfo::of(a, s))
    }

    /// Blocks of all streams by what encodes them, as in [`StreamInfo::blocks_by_method`]: how
    /// often each codec and filter won in the whole archive.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-info-methods", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("obs.nc3z");
    /// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
    /// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
    /// let info = nc3pack::info::describe(&z)?; // samples/obs_points.nc, packed
    /// let methods = info.archive().unwrap().blocks_by_method();
    /// assert_eq!(methods.get("pco"), Some(&3)); // lat, lon and quality_flag
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn blocks_by_method(&self) -> BTreeMap<String, u64> {
        let a = self.archive;
        let mut m = BTreeMap::new();
        for (s, b) in a.blocks() {
            *m.entry(method(a.entry(s, b))).or_default() += 1;
        }
        m
    }

    /// For a lossy archive (packed with `--quantize`): the quantized variables and the
    /// original's hash, from the attributes of its header; `None` for a lossless archive.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-info-lossy", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let z = dir.join("sst.nc3z");
    /// let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true)
    ///     .with_quantize("sst=bitround:7".parse()?);
    /// nc3pack::pack_file("samples/gridded_sst.nc".as_ref(), &z, &opts)?;
    /// let info = nc3pack::info::describe(&z)?;
    /// let lossy = info.archive().unwrap().lossy().unwrap();
    /// assert_eq!(lossy.vars[0].1, "sst");
    /// assert_eq!(lossy.original.unwrap().1, 6224420);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lossy(&self) -> Option<crate::quantize::Lossy> {
        crate::quantize::Lossy::of(self.archive.header())
    }
}

impl serde_core::Serialize for ArchiveInfo<'_> {
    fn serialize<S: serde_core::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde_core::ser::SerializeStruct;
        let mut m = s.serialize_struct("ArchiveInfo", 12)?;
        m.serialize_field("archive_bytes", &self.archive_bytes)?;
        m.serialize_field("block_size", &self.block_size)?;
        m.serialize_field("blocks", &self.blocks)?;
        m.serialize_field("blocks_by_method", &self.blocks_by_method())?;
        m.serialize_field("constant_blocks", &self.constant_blocks)?;
        m.serialize_field("constants_frame_bytes", &self.constants_frame_bytes)?;
        m.serialize_field("constants_frames", &self.constants_frames)?;
        m.serialize_field("format_version", self.format_version)?;
        if let Some(l) = self.lossy() {
            // Lossy archives only: {"original_bytes", "original_hash_xxh3_128", "variables":
            // {name: "bitround:NSB" | "granularbr:NSD"}}.
            let vars: serde_json::Map<String, Value> = l
                .vars
                .iter()
                .map(|(_, n, q)| (n.clone(), Value::String(q.to_string())))
                .collect();
            let mut o = serde_json::Map::new();
            if let Some((h, n)) = l.original {
                o.insert("original_bytes".into(), n.into());
                o.insert("original_hash_xxh3_128".into(), format!("{h:032x}").into());
            }
            o.insert("variables".into(), Value::Object(vars));
            m.serialize_field("lossy", &Value::Object(o))?;
        }
        m.serialize_field("original_bytes", &self.original_bytes)?;
        m.serialize_field(
            "original_hash_xxh3_128",
            &format!("{:032x}", self.original_hash),
        )?;
        m.serialize_field("ratio", &self.ratio)?;
        m.serialize_field("stored_block_bytes", &self.stored_block_bytes)?;
        m.serialize_field("streams", &Lazy(|| self.streams()))?;
        m.end()
    }
}

/// One stream of an archive, in [`ArchiveInfo::streams`]; JSON `{"block_bytes", "blocks",
/// "blocks_by_codec", "blocks_by_method", "name", "ratio", "raw_bytes", "shared_stream" (if shared),
/// "stored_bytes"}`.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-info-StreamInfo", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let z = dir.join("obs.nc3z");
/// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
/// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
/// let info = nc3pack::info::describe(&z)?; // samples/obs_points.nc, packed
/// let archive = info.archive().unwrap();
/// let temp = archive.streams().find(|s| s.name == "temp").unwrap();
/// assert_eq!(temp.blocks_by_codec.get("zstd"), Some(&1)); // the default codec
/// assert_eq!(temp.blocks_by_method.get("zstd+shuffle"), Some(&1)); // and the filter that won
/// assert!(temp.shared_stream.is_none());
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct StreamInfo {
    /// The variable's name, `(residual bytes)`, `(early shared stream)` or `(late shared
    /// stream)`.
    pub name: String,
    /// Number of blocks.
    pub blocks: u64,
    /// Decoded bytes of a full block.
    pub block_bytes: u64,
    /// Decoded bytes of the stream.
    pub raw_bytes: u64,
    /// Bytes of its frames.
    pub stored_bytes: u64,
    /// `raw_bytes / stored_bytes` to 3 decimals; `None` when nothing is stored (constant blocks
    /// only).
    pub ratio: Option<f64>,
    /// Blocks by codec name.
    pub blocks_by_codec: BTreeMap<&'static str, u64>,
    /// Blocks by what encodes them: the codec's name, then `+` and the filter's name when the
    /// block has a filter (`"zstd+bytedelta"`, `"zstd+zzdelta"`, `"pco"`, `"none"` for stored
    /// raw, `"constant"` for constant blocks): how often each codec and filter won.
    pub blocks_by_method: BTreeMap<String, u64>,
    /// The shared stream holding this one: "early" or "late".
    pub shared_stream: Option<&'static str>,
}

impl StreamInfo {
    fn of(a: &Archive, s: usize) -> StreamInfo {
        let stored = a.stored_bytes(s);
        let raw = a.stream_len(s);
        let mut codecs = BTreeMap::<&str, u64>::new();
        let mut methods = BTreeMap::<String, u64>::new();
        for b in 0..a.block_count(s) {
            let e = a.entry(s, b);
            *codecs.entry(e.codec.name()).or_default() += 1;
            *methods.entry(method(e)).or_default() += 1;
        }
        // The two shared streams follow the residual stream: early, then late.
        let shared = |sh: usize| ["early", "late"][sh - a.residual_stream() - 1];
        let name = if s < a.residual_stream() {
            a.header().var(s).name().to_string()
        } else if s == a.residual_stream() {
            "(residual bytes)".into()
        } else {
            format!("({} shared stream)", shared(s))
        };
        StreamInfo {
            name,
            blocks: a.block_count(s),
            block_bytes: a.block_bytes(s),
            raw_bytes: raw,
            stored_bytes: stored,
            ratio: ratio(raw, stored),
            blocks_by_codec: codecs,
            blocks_by_method: methods,
            shared_stream: a.shared_stream_of(s).map(shared),
        }
    }
}

impl serde_core::Serialize for StreamInfo {
    fn serialize<S: serde_core::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde_core::ser::SerializeStruct;
        let mut m = s.serialize_struct("StreamInfo", 9)?;
        m.serialize_field("block_bytes", &self.block_bytes)?;
        m.serialize_field("blocks", &self.blocks)?;
        m.serialize_field("blocks_by_codec", &self.blocks_by_codec)?;
        m.serialize_field("blocks_by_method", &self.blocks_by_method)?;
        m.serialize_field("name", &self.name)?;
        m.serialize_field("ratio", &self.ratio)?;
        m.serialize_field("raw_bytes", &self.raw_bytes)?;
        if let Some(sh) = self.shared_stream {
            m.serialize_field("shared_stream", sh)?;
        }
        m.serialize_field("stored_bytes", &self.stored_bytes)?;
        m.end()
    }
}

/// What encodes a block, for [`StreamInfo::blocks_by_method`]: the codec's name, then `+` and
/// the filter's name when there is a filter.
fn method(e: &IndexEntry) -> String {
    match e.filter {
        Filter::None => e.codec.name().to_string(),
        f => format!("{}+{}", e.codec.name(), f.name()),
    }
}

/// `raw / stored` to 3 decimals; none (JSON null) when nothing is stored (a stream of constant
/// blocks only, which live in the index).
fn ratio(raw: u64, stored: u64) -> Option<f64> {
    (stored > 0).then(|| (raw as f64 / stored as f64 * 1000.0).round() / 1000.0)
}

fn type_of(v: &Values) -> &'static str {
    match v {
        Values::Char(_) => "char",
        Values::Byte(_) => "byte",
        Values::Short(_) => "short",
        Values::Int(_) => "int",
        Values::Float(_) => "float",
        Values::Double(_) => "double",
        Values::UByte(_) => "ubyte",
        Values::UShort(_) => "ushort",
        Values::UInt(_) => "uint",
        Values::Int64(_) => "int64",
        Values::UInt64(_) => "uint64",
    }
}

/// Access to a part of the description: its scalar fields and its lists.
struct Parts<'a> {
    field: Box<dyn Fn(&str) -> Value + 'a>,
    #[allow(clippy::type_complexity)]
    items: Box<dyn Fn(&str) -> Box<dyn Iterator<Item = Value> + 'a> + 'a>,
}

fn render(
    s: &mut dyn std::io::Write,
    name: &str,
    v: &Parts<'_>,
    archive: Option<&Parts<'_>>,
) -> std::io::Result<()> {
    render_dims(s, name, v)?;
    render_vars(s, v)?;
    render_global_attrs(s, v)?;
    writeln!(s, "}}")?;
    if let Some(parts) = archive {
        render_archive(s, parts)?;
        render_streams(s, parts)?;
    }
    Ok(())
}

/// A string value's text (empty for any other value).
fn str_of(x: &Value) -> String {
    x.as_str().unwrap_or_default().to_string()
}

/// The first line and the dimensions, as `ncdump -h` writes them.
fn render_dims(s: &mut dyn std::io::Write, name: &str, v: &Parts<'_>) -> std::io::Result<()> {
    write!(s, "netcdf {name} {{")?;
    writeln!(s, " // format: {}", str_of(&(v.field)("format")))?;
    writeln!(s, "dimensions:")?;
    for d in (v.items)("dimensions") {
        if d["unlimited"].as_bool() == Some(true) {
            writeln!(
                s,
                "\t{} = UNLIMITED ; // ({} currently)",
                str_of(&d["name"]),
                d["length"]
            )?;
        } else {
            writeln!(s, "\t{} = {} ;", str_of(&d["name"]), d["length"])?;
        }
    }
    Ok(())
}

/// One attribute's line, of variable `prefix` (empty for a global attribute).
fn attr_line(s: &mut dyn std::io::Write, prefix: &str, a: &Value) -> std::io::Result<()> {
    let vals = &a["values"];
    let text = match vals {
        Value::String(t) => format!("{t:?}"),
        Value::Array(xs) => {
            let suffix = match a["type"].as_str().unwrap_or("") {
                "byte" => "b",
                "short" => "s",
                "float" => "f",
                "ubyte" => "ub",
                "ushort" => "us",
                "uint" => "u",
                "int64" => "ll",
                "uint64" => "ull",
                _ => "",
            };
            xs.iter()
                .map(|x| format!("{x}{suffix}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
        _ => String::new(),
    };
    writeln!(s, "\t\t{prefix}:{} = {text} ;", str_of(&a["name"]))
}

/// The variables, each with its attributes.
fn render_vars(s: &mut dyn std::io::Write, v: &Parts<'_>) -> std::io::Result<()> {
    writeln!(s, "variables:")?;
    for var in (v.items)("variables") {
        let dims: Vec<String> = var["dimensions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(str_of)
            .collect();
        let dims = if dims.is_empty() {
            String::new()
        } else {
            format!("({})", dims.join(", "))
        };
        writeln!(
            s,
            "\t{} {}{dims} ;",
            str_of(&var["type"]),
            str_of(&var["name"])
        )?;
        for a in var["attributes"].as_array().into_iter().flatten() {
            attr_line(s, &str_of(&var["name"]), a)?;
        }
    }
    Ok(())
}

/// The global attributes, if any.
fn render_global_attrs(s: &mut dyn std::io::Write, v: &Parts<'_>) -> std::io::Result<()> {
    let mut gatts = (v.items)("global_attributes").peekable();
    if gatts.peek().is_some() {
        writeln!(s, "\n// global attributes:")?;
        for a in gatts {
            attr_line(s, "", &a)?;
        }
    }
    Ok(())
}

/// An archive's summary: sizes and ratio, what is lossy, constant blocks, blocks by method.
fn render_archive(s: &mut dyn std::io::Write, parts: &Parts<'_>) -> std::io::Result<()> {
    let a = |k: &str| (parts.field)(k);
    writeln!(
        s,
        "// nc3z archive (format {}): {} bytes for {} original bytes (ratio {}), block size {}, {} blocks, original xxh3-128 {}",
        str_of(&a("format_version")), a("archive_bytes"), a("original_bytes"), a("ratio"), a("block_size"), a("blocks"), str_of(&a("original_hash_xxh3_128"))
    )?;
    if let Value::Object(l) = a("lossy") {
        let vars: Vec<String> = l
            .get("variables")
            .and_then(|v| v.as_object())
            .into_iter()
            .flatten()
            .map(|(n, q)| format!("{n} {}", q.as_str().unwrap_or_default()))
            .collect();
        write!(s, "// LOSSY archive (quantized: {})", vars.join(", "))?;
        if let Some(h) = l.get("original_hash_xxh3_128") {
            write!(
                s,
                "; original before quantization: {} bytes, xxh3-128 {}",
                l.get("original_bytes").unwrap_or(&Value::Null),
                str_of(h)
            )?;
        }
        writeln!(s)?;
    }
    if a("constant_blocks") != 0 {
        writeln!(
            s,
            "// constant blocks (in the index only): {}, listed in {} constants frames of {} bytes",
            a("constant_blocks"),
            a("constants_frames"),
            a("constants_frame_bytes")
        )?;
    }
    writeln!(s, "// blocks by codec+filter: {}", a("blocks_by_method"))
}

/// An archive's streams, one line each (streams with no bytes left out).
fn render_streams(s: &mut dyn std::io::Write, parts: &Parts<'_>) -> std::io::Result<()> {
    writeln!(
        s,
        "// stream: blocks of block bytes, raw bytes -> stored bytes (ratio), blocks by codec+filter"
    )?;
    for st in (parts.items)("streams") {
        if st["raw_bytes"] == 0 {
            continue;
        }
        if let Some(which) = st.get("shared_stream") {
            writeln!(
                s,
                "//   {}: {} bytes, in the {} shared stream",
                str_of(&st["name"]),
                st["raw_bytes"],
                str_of(which)
            )?;
            continue;
        }
        // A stream of constant blocks only stores nothing: no ratio.
        let ratio = match &st["ratio"] {
            Value::Null => "all in the index".to_string(),
            r => r.to_string(),
        };
        writeln!(
            s,
            "//   {}: {} blocks of {}, {} -> {} ({ratio}), {}",
            str_of(&st["name"]),
            st["blocks"],
            st["block_bytes"],
            st["raw_bytes"],
            st["stored_bytes"],
            st["blocks_by_method"]
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("samples")
            .join(name)
    }

    /// The JSON of `nc3pack info --json` is a stable interface: the keys, their order, and the
    /// values as `ncdump -h samples/scalars.nc` shows them (no dimensions; 6 scalar variables;
    /// header 532 bytes, data 4 x 4 + 2 x 8 = 20 bytes, 8 of them padding; title "scalars only").
    #[test]
    fn info_json_of_a_file_is_the_documented_object() {
        let info = describe(&sample("scalars.nc")).unwrap();
        let mut out = Vec::new();
        write(&sample("scalars.nc"), true, "scalars", &mut out).unwrap();
        let expected = r#"{
  "dimensions": [],
  "file_bytes": 560,
  "format": "classic",
  "global_attributes": [
    {
      "name": "title",
      "type": "char",
      "values": "scalars only"
    }
  ],
  "header_bytes": 532,
  "residual_bytes": 8,
  "variables": [
    {
      "attributes": [
        {
          "name": "long_name",
          "type": "char",
          "values": "scalar byte"
        }
      ],
      "dimensions": [],
      "name": "sb",
      "record": false,
      "shape": [],
      "type": "byte"
    },
    {
      "attributes": [
        {
          "name": "long_name",
          "type": "char",
          "values": "scalar char"
        }
      ],
      "dimensions": [],
      "name": "sc",
      "record": false,
      "shape": [],
      "type": "char"
    },
    {
      "attributes": [
        {
          "name": "long_name",
          "type": "char",
          "values": "scalar short"
        },
        {
          "name": "units",
          "type": "char",
          "values": "1"
        }
      ],
      "dimensions": [],
      "name": "ss",
      "record": false,
      "shape": [],
      "type": "short"
    },
    {
      "attributes": [
        {
          "name": "valid_min",
          "type": "int",
          "values": [
            0
          ]
        }
      ],
      "dimensions": [],
      "name": "si",
      "record": false,
      "shape": [],
      "type": "int"
    },
    {
      "attributes": [
        {
          "name": "units",
          "type": "char",
          "values": "K"
        },
        {
          "name": "scale",
          "type": "float",
          "values": [
            2.0
          ]
        }
      ],
      "dimensions": [],
      "name": "sf",
      "record": false,
      "shape": [],
      "type": "float"
    },
    {
      "attributes": [
        {
          "name": "units",
          "type": "char",
          "values": "m"
        },
        {
          "name": "coeffs",
          "type": "double",
          "values": [
            1.0,
            2.0,
            3.0
          ]
        }
      ],
      "dimensions": [],
      "name": "sd",
      "record": false,
      "shape": [],
      "type": "double"
    }
  ]
}
"#;
        assert_eq!(String::from_utf8(out).unwrap(), expected);
        assert_eq!(
            serde_json::to_string_pretty(&info).unwrap() + "\n",
            expected
        );
    }

    /// Float attributes print as the exact doubles of their float values (as they always have):
    /// 0.1f is 0.100000001490116119384765625.
    #[test]
    fn float_attributes_print_as_their_double_values() {
        let info = describe(&sample("attrs_all_types.nc")).unwrap();
        let v = info.variables().find(|v| v.name == "v").unwrap();
        let f_one = v.attributes.iter().find(|a| a.name == "f_one").unwrap();
        assert_eq!(
            serde_json::to_string(f_one).unwrap(),
            r#"{"name":"f_one","type":"float","values":[0.10000000149011612]}"#
        );
    }
}
