//! `nc3pack info`: a summary of a netCDF-3 file or an archive, as CDL-like text or JSON.

use crate::archive::Archive;
use crate::error::Result;
use crate::format::{Codec, LEAD_MAGIC};
use crate::nc3::{self, Attribute, Header, Layout, Values};
use serde_json::{json, Value};
use std::path::Path;

/// Describes the file at `path` (a .nc or a .nc3z, told apart by content) as JSON.
///
/// ```no_run
/// let v = nc3pack::info::describe("samples/gridded_sst.nc".as_ref()).unwrap();
/// println!("{}", v["format"]);
/// ```
pub fn describe(path: &Path) -> Result<Value> {
    let f = crate::io::open_seekable(path, "info")?;
    let mut magic = [0u8; 8];
    let is_archive =
        crate::io::ReadAt::read_exact_at(&f, &mut magic, 0).is_ok() && magic == LEAD_MAGIC;
    if is_archive {
        let a = Archive::from_reader(f, path)?;
        let mut v = dataset_json(a.header(), a.layout());
        let mut vars = Vec::new();
        let mut stored_total = 0u64;
        for s in 0..a.stream_count() {
            let stored = a.stored_bytes(s);
            stored_total += stored;
            let raw = a.stream_len(s);
            let mut codecs = std::collections::BTreeMap::<&str, u64>::new();
            for b in 0..a.block_count(s) {
                *codecs.entry(a.entry(s, b).codec.name()).or_default() += 1;
            }
            // The two shared streams follow the residual stream: early, then late.
            let shared = |sh: usize| ["early", "late"][sh - a.residual_stream() - 1];
            let name = if s < a.residual_stream() {
                a.header().vars[s].name.clone()
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
            vars.push(st);
        }
        v["archive"] = json!({
            "archive_bytes": a.len(),
            "original_bytes": a.layout().file_len,
            "ratio": ratio(a.layout().file_len, a.len()),
            "block_size": a.lead().block_size,
            "blocks": (0..a.stream_count()).map(|s| a.block_count(s)).sum::<u64>(),
            "stored_block_bytes": stored_total,
            "constant_blocks": (0..a.stream_count())
                .flat_map(|s| (0..a.block_count(s)).map(move |b| (s, b)))
                .filter(|&(s, b)| a.entry(s, b).is_constant())
                .count(),
            "constants_frames": a.constants_frames().len(),
            "constants_frame_bytes": a
                .constants_frames()
                .iter()
                .map(|e| crate::format::FRAME_HEADER_LEN as u64 + u64::from(e.stored_len))
                .sum::<u64>(),
            "original_hash_xxh3_128": format!("{:032x}", a.original_hash()),
            "streams": vars,
        });
        Ok(v)
    } else {
        let (h, _, layout) = nc3::open(&f, path)?;
        Ok(dataset_json(&h, &layout))
    }
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

fn attrs_json(attrs: &[Attribute]) -> Value {
    Value::Array(
        attrs
            .iter()
            .map(|a| json!({"name": a.name, "type": type_of(&a.values), "values": values_json(&a.values)}))
            .collect(),
    )
}

fn dataset_json(h: &Header, layout: &Layout) -> Value {
    let dims: Vec<Value> = h
        .dims
        .iter()
        .map(|d| {
            if d.is_record() {
                json!({"name": d.name, "length": layout.numrecs, "unlimited": true})
            } else {
                json!({"name": d.name, "length": d.len, "unlimited": false})
            }
        })
        .collect();
    let vars: Vec<Value> = h
        .vars
        .iter()
        .zip(&layout.vars)
        .map(|(v, l)| {
            json!({
                "name": v.name,
                "type": v.nc_type.name(),
                "dimensions": v.dimids.iter().map(|&d| h.dims[d].name.clone()).collect::<Vec<_>>(),
                "shape": l.shape,
                "record": l.is_record,
                "attributes": attrs_json(&v.attrs),
            })
        })
        .collect();
    json!({
        "format": h.variant.name(),
        "file_bytes": layout.file_len,
        "header_bytes": layout.header_len,
        "residual_bytes": layout.residual_len,
        "dimensions": dims,
        "variables": vars,
        "global_attributes": attrs_json(&h.gatts),
    })
}

/// Renders [`describe`]'s JSON as CDL-like text in the spirit of `ncdump -h`, with archive
/// statistics as comments.
pub fn to_text(v: &Value, name: &str) -> String {
    let mut s = String::new();
    let str_of = |x: &Value| x.as_str().unwrap_or_default().to_string();
    s.push_str(&format!(
        "netcdf {name} {{ // format: {}\n",
        str_of(&v["format"])
    ));
    s.push_str("dimensions:\n");
    for d in v["dimensions"].as_array().into_iter().flatten() {
        if d["unlimited"].as_bool() == Some(true) {
            s.push_str(&format!(
                "\t{} = UNLIMITED ; // ({} currently)\n",
                str_of(&d["name"]),
                d["length"]
            ));
        } else {
            s.push_str(&format!("\t{} = {} ;\n", str_of(&d["name"]), d["length"]));
        }
    }
    let attr_line = |prefix: &str, a: &Value| {
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
        format!("\t\t{prefix}:{} = {text} ;\n", str_of(&a["name"]))
    };
    s.push_str("variables:\n");
    for var in v["variables"].as_array().into_iter().flatten() {
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
        s.push_str(&format!(
            "\t{} {}{dims} ;\n",
            str_of(&var["type"]),
            str_of(&var["name"])
        ));
        for a in var["attributes"].as_array().into_iter().flatten() {
            s.push_str(&attr_line(&str_of(&var["name"]), a));
        }
    }
    let gatts = v["global_attributes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !gatts.is_empty() {
        s.push_str("\n// global attributes:\n");
        for a in &gatts {
            s.push_str(&attr_line("", a));
        }
    }
    s.push_str("}\n");
    if let Some(a) = v.get("archive") {
        s.push_str(&format!(
            "// nc3z archive: {} bytes for {} original bytes (ratio {}), block size {}, {} blocks, original xxh3-128 {}\n",
            a["archive_bytes"], a["original_bytes"], a["ratio"], a["block_size"], a["blocks"], str_of(&a["original_hash_xxh3_128"])
        ));
        if a["constant_blocks"] != 0 {
            s.push_str(&format!(
                "// constant blocks (in the index only): {}, listed in {} constants frames of {} bytes\n",
                a["constant_blocks"], a["constants_frames"], a["constants_frame_bytes"]
            ));
        }
        s.push_str("// stream: blocks, raw bytes -> stored bytes (ratio), codecs\n");
        for st in a["streams"].as_array().into_iter().flatten() {
            if st["raw_bytes"] == 0 {
                continue;
            }
            if let Some(which) = st.get("shared_stream") {
                s.push_str(&format!(
                    "//   {}: {} bytes, in the {} shared stream\n",
                    str_of(&st["name"]),
                    st["raw_bytes"],
                    str_of(which)
                ));
                continue;
            }
            // A stream of constant blocks only stores nothing: no ratio.
            let ratio = match &st["ratio"] {
                Value::Null => "all in the index".to_string(),
                r => r.to_string(),
            };
            s.push_str(&format!(
                "//   {}: {} blocks, {} -> {} ({ratio}), {}\n",
                str_of(&st["name"]),
                st["blocks"],
                st["raw_bytes"],
                st["stored_bytes"],
                st["blocks_by_codec"]
            ));
        }
    }
    s
}

/// The codec name for the command line.
pub fn codec_from_name(name: &str) -> Option<Codec> {
    match name {
        "zstd" => Some(Codec::Zstd),
        "deflate" => Some(Codec::Deflate),
        "none" => Some(Codec::None),
        _ => None,
    }
}
