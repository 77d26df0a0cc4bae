//! `nc3pack info`: a summary of a netCDF-3 file or an archive, as CDL-like text or JSON.

use crate::error::{Error, Result};
use crate::format::LEAD_MAGIC;
use crate::nc3::{self, Attr, Header, Layout, Values};
use crate::read::archive::Archive;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

/// Describes the file at `path` (a .nc or a .nc3z, told apart by content) as JSON.
///
/// This builds the whole description in memory (about 1.5 KB per dimension, variable or
/// attribute); [`write()`] prints the same description a dimension, variable or stream at a time.
///
/// ```no_run
/// let v = nc3pack::info::describe("samples/gridded_sst.nc".as_ref()).unwrap();
/// println!("{}", v["format"]);
/// ```
///
/// # Errors
///
/// The file does not open or is neither a netCDF-3 file nor an archive that opens.
pub fn describe(path: &Path) -> Result<Value> {
    let src = Source::open(path)?;
    let tree = src.tree();
    Ok(serde_json::to_value(&tree).unwrap_or(Value::Null))
}

/// Writes the description of the file at `path` to `out`: as pretty-printed JSON (the text of
/// [`describe`]'s value) or as CDL-like text ([`to_text`], with `name` as the dataset name).
/// Memory stays bounded by one item (a dimension, a variable with its attributes, a stream), not
/// the whole description, so a header of a million dimensions costs what its parse costs.
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
    let src = Source::open(path)?;
    let tree = src.tree();
    let werr = |e: std::io::Error| Error::Io {
        path: "<output>".into(),
        op: "write",
        source: e,
    };
    let mut out = std::io::BufWriter::new(out);
    if json {
        serde_json::to_writer_pretty(&mut out, &tree).map_err(|e| werr(e.into()))?;
        out.write_all(b"\n").map_err(werr)?;
    } else {
        text_of(&tree, name, &mut out).map_err(werr)?;
    }
    out.flush().map_err(werr)
}

/// An opened file to describe (one, held once: its size does not matter).
#[allow(clippy::large_enum_variant)]
enum Source {
    Archive(Archive),
    File(Header, Layout),
}

impl Source {
    fn open(path: &Path) -> Result<Source> {
        let f = crate::io::open_input(path, "info")?;
        let mut magic = [0u8; 8];
        let is_archive =
            crate::io::ReadAt::read_exact_at(&f, &mut magic, 0).is_ok() && magic == LEAD_MAGIC;
        if is_archive {
            Ok(Source::Archive(Archive::from_reader(f, path)?))
        } else {
            let (h, _, layout) = nc3::open(&f, path)?;
            Ok(Source::File(h, layout))
        }
    }

    fn header_layout(&self) -> (&Header, &Layout) {
        match self {
            Source::Archive(a) => (a.header(), a.layout()),
            Source::File(h, l) => (h, l),
        }
    }

    /// The description, its long lists made item by item as they are written.
    fn tree(&self) -> Node<'_> {
        let (h, layout) = self.header_layout();
        let mut top = vec![
            ("format", Node::Val(json!(h.variant().name()))),
            ("file_bytes", Node::Val(json!(layout.file_len))),
            ("header_bytes", Node::Val(json!(layout.header_len))),
            ("residual_bytes", Node::Val(json!(layout.residual_len))),
            (
                "dimensions",
                Node::Seq(Box::new(move || {
                    Box::new(h.dims().map(move |d| {
                        if d.is_record() {
                            json!({"name": d.name(), "length": layout.numrecs, "unlimited": true})
                        } else {
                            json!({"name": d.name(), "length": d.len(), "unlimited": false})
                        }
                    }))
                })),
            ),
            (
                "variables",
                Node::Seq(Box::new(move || {
                    Box::new(h.vars().zip(&layout.vars).map(move |(v, l)| {
                        json!({
                            "name": v.name(),
                            "type": v.nc_type().name(),
                            "dimensions": v.dims().map(|d| d.name()).collect::<Vec<_>>(),
                            "shape": l.shape,
                            "record": l.is_record,
                            "attributes": Value::Array(v.attrs().map(attr_json).collect()),
                        })
                    }))
                })),
            ),
            (
                "global_attributes",
                Node::Seq(Box::new(move || Box::new(h.global_attrs().map(attr_json)))),
            ),
        ];
        if let Source::Archive(a) = self {
            top.push(("archive", archive_node(a)));
        }
        Node::map(top)
    }
}

/// A JSON tree whose long lists are produced as they are serialized.
enum Node<'a> {
    Val(Value),
    Map(Vec<(&'static str, Node<'a>)>),
    #[allow(clippy::type_complexity)]
    Seq(Box<dyn Fn() -> Box<dyn Iterator<Item = Value> + 'a> + 'a>),
}

impl<'a> Node<'a> {
    /// A map, its keys in the order `serde_json` gives them (sorted).
    fn map(mut entries: Vec<(&'static str, Node<'a>)>) -> Node<'a> {
        entries.sort_by_key(|e| e.0);
        Node::Map(entries)
    }

    fn get(&self, key: &str) -> Option<&Node<'a>> {
        match self {
            Node::Map(m) => m.iter().find(|e| e.0 == key).map(|e| &e.1),
            _ => None,
        }
    }

    fn val(&self, key: &str) -> Value {
        match self.get(key) {
            Some(Node::Val(v)) => v.clone(),
            _ => Value::Null,
        }
    }

    fn items(&self, key: &str) -> Box<dyn Iterator<Item = Value> + '_> {
        match self.get(key) {
            Some(Node::Seq(f)) => f(),
            _ => Box::new(std::iter::empty()),
        }
    }
}

impl serde_core::Serialize for Node<'_> {
    fn serialize<S: serde_core::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Node::Val(v) => v.serialize(s),
            Node::Map(m) => s.collect_map(m.iter().map(|(k, v)| (k, v))),
            Node::Seq(f) => s.collect_seq(f()),
        }
    }
}

/// The archive part of the description: sizes, then one item per stream.
fn archive_node(a: &Archive) -> Node<'_> {
    let stored_total: u64 = (0..a.stream_count()).map(|s| a.stored_bytes(s)).sum();
    let streams = Node::Seq(Box::new(move || {
        Box::new((0..a.stream_count()).map(move |s| stream_json(a, s)))
    }));
    Node::map(vec![
        ("archive_bytes", Node::Val(json!(a.len()))),
        ("original_bytes", Node::Val(json!(a.layout().file_len))),
        (
            "ratio",
            Node::Val(json!(ratio(a.layout().file_len, a.len()))),
        ),
        ("block_size", Node::Val(json!(a.lead().block_size))),
        (
            "blocks",
            Node::Val(json!((0..a.stream_count())
                .map(|s| a.block_count(s))
                .sum::<u64>())),
        ),
        ("stored_block_bytes", Node::Val(json!(stored_total))),
        (
            "constant_blocks",
            Node::Val(json!((0..a.stream_count())
                .flat_map(|s| (0..a.block_count(s)).map(move |b| (s, b)))
                .filter(|&(s, b)| a.entry(s, b).is_constant())
                .count())),
        ),
        (
            "constants_frames",
            Node::Val(json!(a.constants_frames().len())),
        ),
        (
            "constants_frame_bytes",
            Node::Val(json!(a
                .constants_frames()
                .iter()
                .map(|e| crate::format::FRAME_HEADER_LEN as u64 + u64::from(e.stored_len))
                .sum::<u64>())),
        ),
        (
            "original_hash_xxh3_128",
            Node::Val(json!(format!("{:032x}", a.original_hash()))),
        ),
        ("streams", streams),
    ])
}

/// One stream of an archive.
fn stream_json(a: &Archive, s: usize) -> Value {
    let stored = a.stored_bytes(s);
    let raw = a.stream_len(s);
    let mut codecs = std::collections::BTreeMap::<&str, u64>::new();
    for b in 0..a.block_count(s) {
        *codecs.entry(a.entry(s, b).codec.name()).or_default() += 1;
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
    let mut st = json!({
        "name": name,
        "blocks": a.block_count(s),
        "block_bytes": a.block_bytes(s),
        "raw_bytes": raw,
        "stored_bytes": stored,
        "ratio": ratio(raw, stored),
        "blocks_by_codec": codecs,
    });
    if let Some(sh) = a.shared_stream_of(s) {
        st["shared_stream"] = json!(shared(sh));
    }
    st
}

/// `raw / stored` to 3 decimals; none (JSON null) when nothing is stored (a stream of constant
/// blocks only, which live in the index).
fn ratio(raw: u64, stored: u64) -> Option<f64> {
    (stored > 0).then(|| (raw as f64 / stored as f64 * 1000.0).round() / 1000.0)
}

fn values_json(v: &Values) -> Value {
    match v {
        Values::Char(c) => json!(String::from_utf8_lossy(c)),
        Values::Byte(x) => json!(x),
        Values::Short(x) => json!(x),
        Values::Int(x) => json!(x),
        Values::Float(x) => json!(x),
        Values::Double(x) => json!(x),
        Values::UByte(x) => json!(x),
        Values::UShort(x) => json!(x),
        Values::UInt(x) => json!(x),
        Values::Int64(x) => json!(x),
        Values::UInt64(x) => json!(x),
    }
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

fn attr_json(a: Attr<'_>) -> Value {
    let values = a.values();
    json!({"name": a.name(), "type": type_of(&values), "values": values_json(&values)})
}

/// Renders [`describe`]'s JSON as CDL-like text in the spirit of `ncdump -h`, with archive
/// statistics as comments.
pub fn to_text(v: &Value, name: &str) -> String {
    let items = |key: &str| -> Box<dyn Iterator<Item = Value> + '_> {
        Box::new(v[key].as_array().into_iter().flatten().cloned())
    };
    let archive = v.get("archive").map(|a| Parts {
        field: Box::new(move |k: &str| a[k].clone()),
        items: Box::new(move |k: &str| -> Box<dyn Iterator<Item = Value> + '_> {
            Box::new(a[k].as_array().into_iter().flatten().cloned())
        }),
    });
    let top = Parts {
        field: Box::new(|k: &str| v[k].clone()),
        items: Box::new(items),
    };
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = render(&mut out, name, &top, archive.as_ref());
    String::from_utf8_lossy(&out).into_owned()
}

/// [`to_text`] of the lazily built description, written as it is made.
fn text_of(tree: &Node<'_>, name: &str, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let top = Parts {
        field: Box::new(|k: &str| tree.val(k)),
        items: Box::new(|k: &str| tree.items(k)),
    };
    let archive = tree.get("archive").map(|a| Parts {
        field: Box::new(move |k: &str| a.val(k)),
        items: Box::new(move |k: &str| a.items(k)),
    });
    render(out, name, &top, archive.as_ref())
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
    let str_of = |x: &Value| x.as_str().unwrap_or_default().to_string();
    writeln!(
        s,
        "netcdf {name} {{ // format: {}",
        str_of(&(v.field)("format"))
    )?;
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
    let attr_line = |s: &mut dyn std::io::Write, prefix: &str, a: &Value| {
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
    };
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
    let mut gatts = (v.items)("global_attributes").peekable();
    if gatts.peek().is_some() {
        writeln!(s, "\n// global attributes:")?;
        for a in gatts {
            attr_line(s, "", &a)?;
        }
    }
    writeln!(s, "}}")?;
    if let Some(parts) = archive {
        let a = |k: &str| (parts.field)(k);
        writeln!(
            s,
            "// nc3z archive: {} bytes for {} original bytes (ratio {}), block size {}, {} blocks, original xxh3-128 {}",
            a("archive_bytes"), a("original_bytes"), a("ratio"), a("block_size"), a("blocks"), str_of(&a("original_hash_xxh3_128"))
        )?;
        if a("constant_blocks") != 0 {
            writeln!(
                s,
                "// constant blocks (in the index only): {}, listed in {} constants frames of {} bytes",
                a("constant_blocks"), a("constants_frames"), a("constants_frame_bytes")
            )?;
        }
        writeln!(
            s,
            "// stream: blocks, raw bytes -> stored bytes (ratio), codecs"
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
                "//   {}: {} blocks, {} -> {} ({ratio}), {}",
                str_of(&st["name"]),
                st["blocks"],
                st["raw_bytes"],
                st["stored_bytes"],
                st["blocks_by_codec"]
            )?;
        }
    }
    Ok(())
}
