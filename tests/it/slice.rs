//! `nc3pack slice` streams its output: the selection is read and formatted a piece at a time.
//!
//! - In any piece size (pieces cut inside rows, across blocks, with strides and starts), the
//!   output of each format is the same and holds the values the `netcdf3` crate reads; for
//!   CDF-5 types (which that crate cannot read) it equals the formatting of the whole selection
//!   read at once, which `read::slice_cli_matches_ncdump_golden` checks against ncdump.
//! - Memory stays bounded: slicing a 384 MiB variable works under a 256 MiB address-space limit.
//! - A reader that goes away early (`| head`) is not an error.

use crate::util::{sample, temp_dir, BIN};
use nc3pack::dump::{self, Format};
use nc3pack::format::Codec;
use nc3pack::Dataset;
use nc3pack::{pack_file, Hyperslab, PackOptions};
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

/// Packs with small blocks, so that pieces and blocks cut the data at different places.
fn pack_small_blocks(input: &Path, output: &Path) {
    let opts = PackOptions::default()
        .with_codec(Codec::Zstd)
        .with_block_size(96)
        .with_threads(2);
    pack_file(input, output, &opts).unwrap_or_else(|e| panic!("packing {}: {e}", input.display()));
}

/// Deterministic pseudo-random numbers (xorshift).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// The whole selection and random ones (starts, strides, counts of zero included).
fn slabs(shape: &[u64], rng: &mut Rng) -> Vec<Hyperslab> {
    let mut out = vec![Hyperslab::all(shape)];
    for _ in 0..8 {
        let (mut st, mut c, mut sd) = (vec![], vec![], vec![]);
        for &len in shape {
            let stride = 1 + rng.below(3);
            let start = rng.below(len + 1);
            let max = if start == len {
                0
            } else {
                (len - 1 - start) / stride + 1
            };
            // Mostly everything that fits, sometimes fewer.
            let count = if rng.below(3) == 0 {
                rng.below(max + 1)
            } else {
                max
            };
            st.push(start);
            c.push(count);
            sd.push(stride);
        }
        out.push(Hyperslab::new(shape, &st, &c, &sd).unwrap());
    }
    out
}

/// One value as the netcdf3 crate reads it: an integer, a real (bits compared), or a char.
#[derive(Debug, Clone, Copy, PartialEq)]
enum V {
    Int(i64),
    F32(u32),
    F64(u64),
    Char(u8),
}

fn netcdf3_values(r: &mut netcdf3::FileReader, var: &str) -> Vec<V> {
    match r.read_var(var).unwrap() {
        netcdf3::DataVector::I8(v) => v.into_iter().map(|x| V::Int(x.into())).collect(),
        netcdf3::DataVector::U8(v) => v.into_iter().map(V::Char).collect(),
        netcdf3::DataVector::I16(v) => v.into_iter().map(|x| V::Int(x.into())).collect(),
        netcdf3::DataVector::I32(v) => v.into_iter().map(|x| V::Int(x.into())).collect(),
        netcdf3::DataVector::F32(v) => v.into_iter().map(|x| V::F32(x.to_bits())).collect(),
        netcdf3::DataVector::F64(v) => v.into_iter().map(|x| V::F64(x.to_bits())).collect(),
    }
}

/// The elements of `full` (row-major, shape `shape`) that `slab` selects, the obvious way.
fn select<T: Copy>(full: &[T], shape: &[u64], slab: &Hyperslab) -> Vec<T> {
    let n = slab.len() as usize;
    let rank = shape.len();
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0u64; rank];
    for _ in 0..n {
        let mut flat = 0u64;
        for k in 0..rank {
            flat = flat * shape[k] + slab.start()[k] + idx[k] * slab.stride()[k];
        }
        out.push(full[flat as usize]);
        for k in (0..rank).rev() {
            idx[k] += 1;
            if idx[k] < slab.count()[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    out
}

/// The native-order bytes of float or char values (integers are checked by their type).
fn native(vals: &[V]) -> Vec<u8> {
    vals.iter()
        .flat_map(|v| match *v {
            V::F32(b) => b.to_ne_bytes().to_vec(),
            V::F64(b) => b.to_ne_bytes().to_vec(),
            V::Char(c) => vec![c],
            V::Int(_) => panic!("integers are checked by their type"),
        })
        .collect()
}

/// Splits char values into rows of `row` with trailing NULs removed.
fn char_rows(vals: &[V], row: usize) -> Vec<Vec<u8>> {
    let bytes: Vec<u8> = vals
        .iter()
        .map(|v| match v {
            V::Char(c) => *c,
            v => panic!("{v:?} is not a char"),
        })
        .collect();
    bytes
        .chunks(row)
        .map(|r| {
            let end = r.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
            r[..end].to_vec()
        })
        .collect()
}

/// Undoes ncdump's quoting of a char row (`"..."` with `\"`, `\\`, `\n`, `\t`, `\ooo`).
fn unquote(s: &str) -> Vec<u8> {
    let b = s
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or_else(|| panic!("not a quoted row: {s:?}"))
        .as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        match b[i + 1] {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'0'..=b'7' => {
                let o = std::str::from_utf8(&b[i + 1..i + 4]).unwrap();
                out.push(u8::from_str_radix(o, 8).unwrap());
                i += 2;
            }
            c => out.push(c),
        }
        i += 2;
    }
    out
}

/// The rows of `slice --format text` output for `var`: the data between ` var =` and ` ;`.
fn text_rows(text: &str, var: &str) -> Vec<String> {
    if text == format!(" {var} = ;\n") {
        return vec![];
    }
    let body = text
        .strip_prefix(&format!(" {var} =\n  "))
        .and_then(|t| t.strip_suffix(" ;\n"))
        .unwrap_or_else(|| panic!("not a data section of {var}: {text:?}"));
    body.split(",\n  ").map(str::to_string).collect()
}

/// Checks text, JSON and raw output of `slab` against the values `want` (netcdf3's).
fn check_against(var: &str, slab: &Hyperslab, want: &[V], out: [&[u8]; 3], ctx: &str) {
    let [text, json, raw] = out;
    let row = slab.count().last().copied().unwrap_or(1).max(1) as usize;
    let is_char = matches!(want.first(), Some(V::Char(_)));
    // Text: one line per row of the last dimension.
    let text = std::str::from_utf8(text).unwrap();
    let rows = text_rows(text, var);
    if is_char {
        let got: Vec<Vec<u8>> = rows.iter().map(|r| unquote(r)).collect();
        assert_eq!(got, char_rows(want, row), "{ctx} (text)");
    } else {
        assert_eq!(rows.len(), want.len() / row, "{ctx} (text rows)");
        let got: Vec<V> = rows
            .iter()
            .flat_map(|r| r.split(", "))
            .zip(want)
            .map(|(s, w)| match w {
                V::Int(_) => V::Int(s.parse().unwrap()),
                V::F32(_) => V::F32(s.parse::<f32>().unwrap().to_bits()),
                V::F64(_) => V::F64(s.parse::<f64>().unwrap().to_bits()),
                V::Char(_) => unreachable!(),
            })
            .collect();
        assert_eq!(got, want, "{ctx} (text)");
    }
    // JSON: {"data": [...], "shape": [...]}.
    let text = std::str::from_utf8(json).unwrap();
    let json: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_eq!(
        json["shape"],
        serde_json::json!(slab.count()),
        "{ctx} (json)"
    );
    if is_char {
        let want: Vec<String> = char_rows(want, row)
            .iter()
            .map(|r| String::from_utf8_lossy(r).into_owned())
            .collect();
        let data = json["data"].as_array().unwrap();
        let got: Vec<&str> = data.iter().map(|x| x.as_str().unwrap()).collect();
        assert_eq!(got, want, "{ctx} (json)");
    } else {
        // Numbers parsed by Rust (serde_json's default parser may be off by an ulp).
        let data = text
            .strip_prefix("{\"data\":[")
            .and_then(|t| t.split_once(']'))
            .unwrap_or_else(|| panic!("{ctx} (json): {text}"))
            .0;
        let data: Vec<&str> = data.split(',').filter(|x| !x.is_empty()).collect();
        assert_eq!(data.len(), want.len(), "{ctx} (json)");
        for (x, w) in data.iter().zip(want) {
            let ok = match *w {
                V::Int(i) => x.parse() == Ok(i),
                V::F32(b) => {
                    let f = f32::from_bits(b);
                    if f.is_finite() {
                        x.parse() == Ok(f64::from(f))
                    } else {
                        *x == "null"
                    }
                }
                V::F64(b) => {
                    let f = f64::from_bits(b);
                    if f.is_finite() {
                        x.parse() == Ok(f)
                    } else {
                        *x == "null"
                    }
                }
                V::Char(_) => unreachable!(),
            };
            assert!(ok, "{ctx} (json): {x} for {w:?}");
        }
    }
    // Raw: floats and chars byte for byte (integers: see the caller).
    if matches!(want.first(), Some(V::F32(_) | V::F64(_) | V::Char(_))) {
        assert_eq!(raw, native(want), "{ctx} (raw)");
    }
}

/// Writes a slice with pieces of `piece` bytes.
fn streamed<D: Dataset + ?Sized>(
    ds: &D,
    var: &str,
    slab: &Hyperslab,
    format: Format,
    piece: usize,
) -> Vec<u8> {
    let mut out = vec![];
    dump::write_slice_in_pieces(ds, var, slab, format, piece, &mut out)
        .unwrap_or_else(|e| panic!("{var} {slab:?} {format:?} in pieces of {piece}: {e}"));
    out
}

/// Piece sizes in bytes: one value (whatever the type), a few values, more than most
/// variables here, and the default.
const PIECES: [usize; 5] = [1, 6, 24, 500, dump::PIECE_BYTES];

/// Every variable of real files, from the original and from an archive of 96-byte blocks, in
/// random selections: every piece size gives the same output, and it holds netcdf3's values.
#[test]
fn streamed_slices_match_netcdf3_in_any_piece_size() {
    let dir = temp_dir();
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut checked = 0;
    for name in [
        "classic_records",
        "offset64_mixed",
        "fill_values",
        "scalars",
        "zero_records",
        "header_gap",
    ] {
        let nc = sample(&format!("{name}.nc"));
        let z = dir.path().join(format!("{name}.nc3z"));
        pack_small_blocks(&nc, &z);
        let sources = [nc3pack::open(&nc).unwrap(), nc3pack::open(&z).unwrap()];
        let mut r = netcdf3::FileReader::open(&nc).unwrap();
        let vars: Vec<String> = r
            .data_set()
            .get_vars()
            .iter()
            .map(|v| v.name().to_string())
            .collect();
        for var in vars {
            let full = netcdf3_values(&mut r, &var);
            let id = sources[0].var_id(&var).unwrap();
            let shape = sources[0].layout().vars[id].shape.clone();
            for slab in slabs(&shape, &mut rng) {
                let want = select(&full, &shape, &slab);
                for ds in &sources {
                    let ctx = format!("{} {var} {slab:?}", ds.path().display());
                    let outs: Vec<Vec<u8>> = [Format::Text, Format::Json, Format::Raw]
                        .iter()
                        .map(|&f| streamed(ds, &var, &slab, f, dump::PIECE_BYTES))
                        .collect();
                    for piece in PIECES {
                        for (f, whole) in
                            [Format::Text, Format::Json, Format::Raw].iter().zip(&outs)
                        {
                            let got = streamed(ds, &var, &slab, *f, piece);
                            assert!(
                                got == *whole,
                                "{ctx} {f:?} in pieces of {piece}:\n{}\nvs whole:\n{}",
                                String::from_utf8_lossy(&got),
                                String::from_utf8_lossy(whole)
                            );
                        }
                    }
                    check_against(&var, &slab, &want, [&outs[0], &outs[1], &outs[2]], &ctx);
                    // Integer raw output: the values read the typed way, in native order.
                    let raw = &outs[2];
                    let nc_type = ds.header().var(id).nc_type();
                    let got: Vec<i64> = match nc_type {
                        nc3pack::nc3::NcType::Byte => {
                            raw.iter().map(|&b| (b as i8).into()).collect()
                        }
                        nc3pack::nc3::NcType::Short => raw
                            .chunks_exact(2)
                            .map(|c| i16::from_ne_bytes(c.try_into().unwrap()).into())
                            .collect(),
                        nc3pack::nc3::NcType::Int => raw
                            .chunks_exact(4)
                            .map(|c| i32::from_ne_bytes(c.try_into().unwrap()).into())
                            .collect(),
                        _ => continue,
                    };
                    let want: Vec<i64> = want
                        .iter()
                        .map(|v| match v {
                            V::Int(i) => *i,
                            v => panic!("{ctx}: {v:?}"),
                        })
                        .collect();
                    assert_eq!(got, want, "{ctx} (raw)");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 300, "{checked}");
}

/// CDF-5 types (which the netcdf3 crate cannot read): in any piece size, each format equals
/// the formatting of the selection read at once (which the ncdump golden test checks).
#[test]
fn streamed_cdf5_slices_equal_the_whole_read() {
    let dir = temp_dir();
    let mut rng = Rng(0x0cdf_5000_0000_0005);
    let nc = sample("cdf5_types.nc");
    let z = dir.path().join("cdf5_types.nc3z");
    pack_small_blocks(&nc, &z);
    let mut checked = 0;
    for path in [&nc, &z] {
        let ds = nc3pack::open(path).unwrap();
        for v in ds.variables() {
            for slab in slabs(&v.shape, &mut rng) {
                let values = ds.read_values(&v.name, &slab).unwrap();
                let wants = [
                    dump::data_text(&v.name, slab.count(), &values).into_bytes(),
                    (dump::to_json(slab.count(), &values).to_string() + "\n").into_bytes(),
                    dump::to_native_bytes(&values),
                ];
                for (f, want) in [Format::Text, Format::Json, Format::Raw].iter().zip(&wants) {
                    for piece in PIECES {
                        let got = streamed(&ds, &v.name, &slab, *f, piece);
                        assert!(
                            got == *want,
                            "{} {} {slab:?} {f:?} in pieces of {piece}:\n{}\nwant:\n{}",
                            path.display(),
                            v.name,
                            String::from_utf8_lossy(&got),
                            String::from_utf8_lossy(want)
                        );
                    }
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 100, "{checked}");
}

/// A selection that does not fit the variable is refused before anything is written, also
/// when it selects nothing; an unknown variable likewise.
#[test]
fn bad_selections_write_nothing() {
    let ds = nc3pack::open(sample("classic_records.nc")).unwrap();
    let other = Hyperslab::all(&[3, 3, 3]);
    let empty = Hyperslab::new(&[3, 3, 3], &[0, 0, 0], &[0, 0, 0], &[1, 1, 1]).unwrap();
    for (var, slab) in [("s3", &other), ("s3", &empty), ("nope", &other)] {
        let mut out = vec![];
        let e = dump::write_slice(&ds, var, slab, Format::Text, &mut out).unwrap_err();
        assert!(
            matches!(e, dump::SliceError::Read(nc3pack::Error::Slab { .. })),
            "{var}: {e:?}"
        );
        assert!(out.is_empty(), "{var}: {out:?}");
    }
}

/// `nc3pack slice ... | head`: the reader closing the pipe early ends slice quietly with exit
/// status 0, in every format, from the original and the archive.
#[test]
fn slice_into_a_closed_pipe_exits_quietly() {
    let dir = temp_dir();
    let nc = sample("gridded_sst.nc");
    let z = dir.path().join("sst.nc3z");
    pack_file(&nc, &z, &PackOptions::default()).unwrap();
    for file in [&nc, &z] {
        for format in ["text", "json", "raw"] {
            // Megabytes of output (sst is 24 × 180 × 360 floats): far more than a pipe holds.
            let mut child = Command::new(BIN)
                .arg("slice")
                .arg(file)
                .args(["sst", "--format", format])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut head = [0u8; 100];
            child.stdout.take().unwrap().read_exact(&mut head).unwrap();
            // The pipe's read end is closed here.
            let out = child.wait_with_output().unwrap();
            let ctx = format!("{} --format {format}", file.display());
            assert_eq!(out.status.code(), Some(0), "{ctx}");
            assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{ctx}");
        }
    }
}

/// Writes a CDF-1 file holding one float variable `v(t, y, x)` of zeros, without writing its
/// data (a sparse file): `shape` = (t, y, x).
fn sparse_float_file(path: &Path, shape: [u32; 3]) {
    fn name(h: &mut Vec<u8>, s: &str) {
        h.extend_from_slice(&(s.len() as u32).to_be_bytes());
        h.extend_from_slice(s.as_bytes());
        h.resize(h.len().next_multiple_of(4), 0);
    }
    let mut h = b"CDF\x01".to_vec();
    h.extend_from_slice(&0u32.to_be_bytes()); // numrecs
    h.extend_from_slice(&[0, 0, 0, 0x0A, 0, 0, 0, 3]); // NC_DIMENSION, 3
    for (d, len) in ["t", "y", "x"].iter().zip(shape) {
        name(&mut h, d);
        h.extend_from_slice(&len.to_be_bytes());
    }
    h.extend_from_slice(&[0; 8]); // no global attributes
    h.extend_from_slice(&[0, 0, 0, 0x0B, 0, 0, 0, 1]); // NC_VARIABLE, 1
    name(&mut h, "v");
    h.extend_from_slice(&3u32.to_be_bytes());
    for d in 0..3u32 {
        h.extend_from_slice(&d.to_be_bytes());
    }
    h.extend_from_slice(&[0; 8]); // no attributes
    h.extend_from_slice(&5u32.to_be_bytes()); // NC_FLOAT
    let size = 4 * u64::from(shape[0]) * u64::from(shape[1]) * u64::from(shape[2]);
    h.extend_from_slice(&(size as u32).to_be_bytes());
    let begin = h.len() as u32 + 4;
    h.extend_from_slice(&begin.to_be_bytes());
    std::fs::write(path, &h).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.set_len(u64::from(begin) + size).unwrap();
}

/// Limit on the address space of `nc3pack slice` in the memory test: less than the variable
/// it slices, and ample for the piece buffers, formatting and a full 64 MiB block cache (about
/// 80 MiB were needed on the machine this was written on, 2 cores).
const ADDRESS_SPACE_KIB: u64 = 256 << 10;

/// Runs `nc3pack args` under `ulimit -v ADDRESS_SPACE_KIB`; returns its exit status, the
/// number of bytes it wrote to stdout and their last 16, and its stderr.
#[cfg(unix)]
fn run_limited(args: &[&std::ffi::OsStr]) -> (Option<i32>, u64, Vec<u8>, String) {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {ADDRESS_SPACE_KIB} && exec \"$0\" \"$@\""
        ))
        .arg(BIN)
        .args(args)
        // glibc reserves address space per malloc arena (one per thread): keep that small.
        .env("MALLOC_ARENA_MAX", "2")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut buf = vec![0u8; 1 << 16];
    let (mut n, mut tail) = (0u64, vec![]);
    loop {
        let k = stdout.read(&mut buf).unwrap();
        if k == 0 {
            break;
        }
        n += k as u64;
        tail.extend_from_slice(&buf[..k]);
        tail.drain(..tail.len().saturating_sub(16));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), n, tail, err)
}

/// Slicing a 384 MiB variable whole (raw, which took twice that before output was streamed),
/// and a 64 MiB part of it as text and JSON (about 17 times that before), works under a
/// 256 MiB address-space limit, from the original and from an archive.
#[cfg(unix)]
#[test]
fn slicing_a_large_variable_keeps_memory_bounded() {
    let dir = temp_dir();
    let nc = dir.path().join("big.nc");
    let shape = [96u32, 1024, 1024];
    sparse_float_file(&nc, shape);
    let z = dir.path().join("big.nc3z");
    let opts = PackOptions::default().with_level(1);
    pack_file(&nc, &z, &opts).unwrap();
    let values = |c: [u32; 3]| c.iter().map(|&x| u64::from(x)).product::<u64>();
    for file in [&nc, &z] {
        for (format, count) in [
            ("raw", shape),
            ("text", [16, 1024, 1024]),
            ("json", [16, 1024, 1024]),
        ] {
            let count_arg = format!("{},{},{}", count[0], count[1], count[2]);
            let (status, n, tail, err) = run_limited(&[
                "slice".as_ref(),
                file.as_os_str(),
                "v".as_ref(),
                "--count".as_ref(),
                count_arg.as_ref(),
                "--format".as_ref(),
                format.as_ref(),
            ]);
            let ctx = format!("{} --format {format} --count {count_arg}", file.display());
            assert_eq!((status, err.as_str()), (Some(0), ""), "{ctx}");
            match format {
                "raw" => assert_eq!(n, 4 * values(count), "{ctx}"),
                // "0, " or "0.0," per value (the data is all zeros), and the end intact.
                "text" => {
                    assert!(
                        n > 3 * values(count) && tail.ends_with(b"0, 0 ;\n"),
                        "{ctx}: {n}"
                    );
                }
                _ => assert!(
                    n > 4 * values(count) && tail.ends_with(b",1024,1024]}\n"),
                    "{ctx}: {n}"
                ),
            }
        }
    }
}
