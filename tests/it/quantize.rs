//! Lossy quantization (`--quantize`) and the netCDF-3 header writer it needs.
//!
//! Truths: `ncgen` (the header writer encodes what ncgen wrote, byte for byte), the `netcdf3`
//! crate (reads the original and the quantized file), netCDF4-python (netCDF-C quantizing the
//! same data), `ncdump` (reads the unpacked file), and hand bounds.

use crate::util::{nc3pack, sample, samples_dir, temp_dir};
use nc3pack::nc3::{Header, NewHeader};
use nc3pack::quantize::{Algorithm, Quantization, QuantizeRule};
use nc3pack::{pack_file, unpack_file, PackOptions};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `ncgen -k KIND -o out file.cdl` with the output size bounded; `None` if ncgen refuses.
fn ncgen(cdl: &Path, kind: &str, out: &Path) -> Option<Vec<u8>> {
    let ok = Command::new("sh")
        .arg("-c")
        .arg("ulimit -f 65536; exec ncgen -k \"$0\" -o \"$1\" \"$2\" 2>/dev/null")
        .arg(kind)
        .arg(out)
        .arg(cdl)
        .status()
        .ok()?
        .success();
    if !ok {
        return None;
    }
    std::fs::read(out).ok()
}

/// Encoding the parsed header of a file ncgen wrote gives ncgen's header bytes, with every
/// variable's `begin` and `vsize` as ncgen (netCDF-C) placed them: the samples' CDL and
/// netcdf-c's own CDL files (when /work/shared has them), in all three variants.
#[test]
fn header_writer_matches_ncgen() {
    if !crate::util::have_tool("ncgen", "apt-get install netcdf-bin") {
        return;
    }
    let mut cdls: Vec<PathBuf> = Vec::new();
    for dir in [
        samples_dir(),
        PathBuf::from("/work/shared/conformance/netcdf-c-cdl"),
    ] {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut v: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "cdl"))
            .collect();
        v.sort();
        cdls.extend(v);
    }
    let dir = temp_dir();
    let mut checked = 0;
    for cdl in &cdls {
        for kind in ["classic", "64-bit-offset", "cdf5"] {
            let out = dir.path().join("x.nc");
            let Some(bytes) = ncgen(cdl, kind, &out) else {
                continue;
            };
            let Ok(h) = Header::parse(&bytes, bytes.len() as u64) else {
                continue;
            };
            let (enc, places) = NewHeader::from_header(&h)
                .encode()
                .unwrap_or_else(|e| panic!("{} ({kind}): {e}", cdl.display()));
            assert_eq!(
                enc,
                &bytes[..h.len() as usize],
                "{} ({kind}): header bytes differ",
                cdl.display()
            );
            for (p, v) in places.iter().zip(h.vars()) {
                assert_eq!(p.begin, v.begin(), "{} {kind} {}", cdl.display(), v.name());
                assert_eq!(p.vsize.min(u32::MAX as u64), v.vsize().min(u32::MAX as u64));
            }
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} files checked");
}

/// The values of a float variable as the netcdf3 crate reads them.
fn read_f32(path: &Path, var: &str) -> Vec<f32> {
    let mut r = netcdf3::FileReader::open(path).unwrap();
    r.read_var(var).unwrap().get_f32_into().unwrap()
}

fn read_f64(path: &Path, var: &str) -> Vec<f64> {
    let mut r = netcdf3::FileReader::open(path).unwrap();
    r.read_var(var).unwrap().get_f64_into().unwrap()
}

/// Floats over many magnitudes and signs, with zeros, subnormals, NaN, infinities and the
/// specials `specials` mixed in (deterministic).
fn spread_f32(n: usize, specials: &[f32]) -> Vec<f32> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if i % 17 == 3 {
                return specials[(x as usize) % specials.len()];
            }
            let m = (x >> 40) as f32 / (1u64 << 24) as f32 + 0.5;
            let e = ((x >> 8) % 60) as i32 - 30;
            let s = if x & 1 == 0 { 1.0 } else { -1.0 };
            s * m * 2f32.powi(e)
        })
        .collect()
}

fn spread_f64(n: usize, specials: &[f64]) -> Vec<f64> {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if i % 13 == 5 {
                return specials[(x as usize) % specials.len()];
            }
            let m = (x >> 11) as f64 / (1u64 << 53) as f64 + 0.5;
            let e = ((x >> 3) % 200) as i32 - 100;
            let s = if x & 1 == 0 { 1.0 } else { -1.0 };
            s * m * 2f64.powi(e)
        })
        .collect()
}

const F32_SPECIALS: [f32; 8] = [
    0.0,
    -0.0,
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    1.0e-40, // subnormal
    -999.0,  // _FillValue of `t`
    1.0e20,  // missing_value of `t`
];

/// Writes the test file: `t(time, n)` float with `_FillValue` and `missing_value`, `d(n)`
/// double without (so the default fill is kept), `u(n)` float, `i(n)` int, `lat(n)` float.
fn write_original(path: &Path) -> (Vec<f32>, Vec<f64>) {
    let n = 1000;
    let t = spread_f32(3 * n, &F32_SPECIALS);
    let d = spread_f64(
        n,
        &[
            0.0,
            f64::NAN,
            f64::INFINITY,
            9.969_209_968_386_869e36,
            1e-310,
        ],
    );
    let mut ds = netcdf3::DataSet::new();
    ds.add_fixed_dim("n", n).unwrap();
    ds.set_unlimited_dim("time", 3).unwrap();
    ds.add_var_f32("t", &["time", "n"]).unwrap();
    ds.add_var_attr_f32("t", "_FillValue", vec![-999.0])
        .unwrap();
    ds.add_var_attr_f32("t", "missing_value", vec![1.0e20])
        .unwrap();
    ds.add_var_attr_string("t", "units", "K").unwrap();
    ds.add_var_f64("d", &["n"]).unwrap();
    ds.add_var_f32("u", &["time"]).unwrap();
    ds.add_var_i32("i", &["n"]).unwrap();
    ds.add_var_f32("lat", &["n"]).unwrap();
    ds.add_global_attr_string("title", "quantize test").unwrap();
    let mut w = netcdf3::FileWriter::open(path).unwrap();
    w.set_def(&ds, netcdf3::Version::Offset64Bit, 0).unwrap();
    w.write_var_f32("t", &t).unwrap();
    w.write_var_f64("d", &d).unwrap();
    w.write_var_f32("u", &[1.1, 2.2, 3.3]).unwrap();
    w.write_var_i32("i", &(0..n as i32).collect::<Vec<_>>())
        .unwrap();
    w.write_var_f32("lat", &spread_f32(n, &[0.0])).unwrap();
    w.close().unwrap();
    (t, d)
}

fn pack_unpack(orig: &Path, dir: &Path, rules: &[&str]) -> PathBuf {
    let opts = rules
        .iter()
        .fold(PackOptions::fast().with_threads(2), |o, r| {
            o.with_quantize(r.parse().unwrap())
        });
    let z = dir.join("q.nc3z");
    pack_file(orig, &z, &opts.with_force(true)).unwrap();
    let out = dir.join("q.nc");
    let _ = std::fs::remove_file(&out);
    unpack_file(&z, &out, &Default::default()).unwrap();
    out
}

/// Every element within the bound, against the netcdf3 crate's reading of the original; fill
/// values, missing values, NaN and infinities bit for bit; the other variables unchanged.
#[test]
fn bitround_bound_and_kept_values() {
    let dir = temp_dir();
    let orig = dir.path().join("orig.nc");
    let (t, d) = write_original(&orig);
    for (nsb_t, nsb_d) in [(1u8, 1u8), (7, 20), (10, 52), (23, 33)] {
        let q = pack_unpack(
            &orig,
            dir.path(),
            &[
                &format!("t=bitround:{nsb_t}"),
                &format!("d=bitround:{nsb_d}"),
            ],
        );
        let tq = read_f32(&q, "t");
        assert_eq!(tq.len(), t.len());
        for (k, (&a, &b)) in t.iter().zip(&tq).enumerate() {
            if a.is_nan() || a.is_infinite() || a == -999.0 || a == 1.0e20 || a == 0.0 {
                assert_eq!(a.to_bits(), b.to_bits(), "t[{k}] {a} must be kept");
                continue;
            }
            // Subnormals keep fewer significant bits than normal numbers: their bound is
            // absolute, half a unit of the NSB-th bit at the least normal exponent.
            let err = (b as f64 - a as f64).abs();
            let bound = if a.is_normal() {
                (a as f64).abs() * 2f64.powi(-(nsb_t as i32 + 1))
            } else {
                f32::MIN_POSITIVE as f64 * 2f64.powi(-(nsb_t as i32) - 1)
            };
            assert!(err <= bound, "t[{k}]: {a} -> {b}, nsb {nsb_t}");
        }
        let dq = read_f64(&q, "d");
        for (k, (&a, &b)) in d.iter().zip(&dq).enumerate() {
            if !a.is_finite() || a == 9.969_209_968_386_869e36 || a == 0.0 {
                assert_eq!(a.to_bits(), b.to_bits(), "d[{k}] {a} must be kept");
                continue;
            }
            let bound = if a.is_normal() {
                a.abs() * 2f64.powi(-(nsb_d as i32 + 1))
            } else {
                f64::MIN_POSITIVE * 2f64.powi(-(nsb_d as i32) - 1)
            };
            assert!((b - a).abs() <= bound, "d[{k}]: {a} -> {b}");
        }
        assert_eq!(read_f32(&q, "lat"), read_f32(&orig, "lat"));
        assert_eq!(read_f32(&q, "u"), read_f32(&orig, "u"));
        let mut r = netcdf3::FileReader::open(&q).unwrap();
        assert_eq!(
            r.read_var("i").unwrap().get_i32_into().unwrap(),
            (0..1000).collect::<Vec<i32>>()
        );
    }
}

/// A glob selects the float and double variables it matches and passes over the others (`*`
/// quantizes every float and double variable of a file with an int one); a glob that matches
/// only other types is refused, as a literal name of one is.
#[test]
fn glob_selects_float_and_double_variables() {
    let dir = temp_dir();
    let orig = dir.path().join("orig.nc");
    write_original(&orig);
    let q = pack_unpack(&orig, dir.path(), &["*=bitround:9"]);
    let bytes = std::fs::read(&q).unwrap();
    let h = Header::parse(&bytes, bytes.len() as u64).unwrap();
    let nsb = |var: &str| {
        h.var(h.var_id(var).unwrap())
            .attrs()
            .any(|a| a.name() == "_QuantizeBitRoundNumberOfSignificantBits")
    };
    assert!(nsb("t") && nsb("d") && nsb("u") && nsb("lat"));
    assert!(!nsb("i"));
    let mut r = netcdf3::FileReader::open(&q).unwrap();
    assert_eq!(
        r.read_var("i").unwrap().get_i32_into().unwrap(),
        (0..1000).collect::<Vec<i32>>()
    );
    let out = dir.path().join("refused.nc3z");
    let o = nc3pack(&[
        "pack".as_ref(),
        "--quantize".as_ref(),
        "i*=bitround:3".as_ref(),
        orig.as_os_str(),
        out.as_os_str(),
    ])
    .expect(2);
    assert!(
        o.stderr
            .contains("\"i*\" matches no float or double variable (those: t, d, u, lat)"),
        "{}",
        o.stderr.clone()
    );
    assert!(!out.exists());
}

/// The quantized file records the quantization as netCDF-C and CF 1.12 do, and the original's
/// hash and length; ncdump reads it (header and data).
#[test]
fn attributes_recorded_and_ncdump_reads() {
    let dir = temp_dir();
    let orig = dir.path().join("orig.nc");
    write_original(&orig);
    let q = pack_unpack(&orig, dir.path(), &["t=bitround:9", "d=granularbr:5"]);
    let bytes = std::fs::read(&q).unwrap();
    let h = Header::parse(&bytes, bytes.len() as u64).unwrap();
    let attr = |var: &str, name: &str| {
        h.var(h.var_id(var).unwrap())
            .attrs()
            .find(|a| a.name() == name)
            .map(|a| a.values())
    };
    use nc3pack::nc3::Values;
    assert_eq!(
        attr("t", "_QuantizeBitRoundNumberOfSignificantBits"),
        Some(Values::Int(vec![9]))
    );
    assert_eq!(attr("t", "quantization_nsb"), Some(Values::Int(vec![9])));
    assert_eq!(
        attr("t", "quantization"),
        Some(Values::Char(b"quantization_info_bitround".to_vec()))
    );
    assert_eq!(
        attr("d", "_QuantizeGranularBitRoundNumberOfSignificantDigits"),
        Some(Values::Int(vec![5]))
    );
    assert_eq!(attr("d", "quantization_nsd"), Some(Values::Int(vec![5])));
    assert_eq!(
        attr("quantization_info_granular_bitround", "algorithm"),
        Some(Values::Char(b"granular_bitround".to_vec()))
    );
    assert!(attr("lat", "quantization").is_none());
    let orig_bytes = std::fs::read(&orig).unwrap();
    let want = format!(
        "{:032x} {}",
        xxhash_rust::xxh3::xxh3_128(&orig_bytes),
        orig_bytes.len()
    );
    let g = h
        .global_attrs()
        .find(|a| a.name() == "nc3pack_original_xxh3_128")
        .map(|a| a.values());
    assert_eq!(g, Some(Values::Char(want.into_bytes())));
    // The header is what netCDF-C would write for it.
    let (enc, _) = NewHeader::from_header(&h).encode().unwrap();
    assert_eq!(enc, &bytes[..h.len() as usize]);
    let Ok(o) = Command::new("ncdump").arg(&q).output() else {
        crate::util::skip("needs ncdump (apt-get install netcdf-bin)");
        return;
    };
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for want in [
        "t:_QuantizeBitRoundNumberOfSignificantBits = 9 ;",
        "t:quantization = \"quantization_info_bitround\" ;",
        "t:quantization_nsb = 9 ;",
        "d:quantization_nsd = 5 ;",
        "char quantization_info_bitround ;",
        "quantization_info_bitround:algorithm = \"bitround\" ;",
        "quantization_info_granular_bitround:algorithm = \"granular_bitround\" ;",
        ":nc3pack_original_xxh3_128 = ",
        " t =",
    ] {
        assert!(
            text.contains(want),
            "ncdump lacks {want:?}:\n{}",
            &text[..2000.min(text.len())]
        );
    }
}

/// The Python interpreter the netCDF-C comparison runs: `NC3PACK_TEST_PYTHON` (scripts/test.sh
/// sets it to its virtual environment's, which has netCDF4), else `python3`.
fn python() -> std::ffi::OsString {
    std::env::var_os("NC3PACK_TEST_PYTHON").unwrap_or_else(|| "python3".into())
}

/// Whether [`python`] can import netCDF4; when it cannot, the test is skipped, unless `CI` is set.
fn have_netcdf4() -> bool {
    let ok = Command::new(python())
        .args(["-c", "import netCDF4, numpy"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok && std::env::var_os("CI").is_some() {
        panic!(
            "{:?} cannot import netCDF4 and numpy, required when CI is set \
             (pip install netCDF4, or set NC3PACK_TEST_PYTHON)",
            python()
        );
    }
    if !ok {
        crate::util::skip(&format!(
            "needs netCDF4-python: {:?} cannot import netCDF4 (pip install netCDF4, or set \
             NC3PACK_TEST_PYTHON)",
            python()
        ));
    }
    ok
}

/// netCDF-C (through netCDF4-python) quantizes the same data into a netCDF-4 file; its values
/// read back are ours bit for bit. The fill value is passed as `fill_value`, so netCDF-C keeps
/// it as we do.
const PY_QUANTIZE: &str = r#"
import sys, numpy as np, netCDF4
src, var, mode, n, out = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
with netCDF4.Dataset(src) as s:
    s.set_auto_maskandscale(False)
    v = s.variables[var]
    data = v[:]
    fill = v.getncattr("_FillValue") if "_FillValue" in v.ncattrs() else None
    dims = [(d, len(s.dimensions[d])) for d in v.dimensions]
with netCDF4.Dataset(out + ".nc4", "w", format="NETCDF4") as d:
    for name, size in dims:
        d.createDimension(name, size)
    w = d.createVariable(var, data.dtype, [x[0] for x in dims], fill_value=fill,
                         significant_digits=n, quantize_mode=mode)
    w.set_auto_maskandscale(False)
    w[:] = data
with netCDF4.Dataset(out + ".nc4") as d:
    d.set_auto_maskandscale(False)
    r = d.variables[var][:]
    r.astype(r.dtype.newbyteorder(">")).tofile(out)
"#;

/// Our quantized values equal netCDF-C's for BitRound and Granular BitRound, float and double.
#[test]
fn same_values_as_netcdf_c() {
    if !have_netcdf4() {
        return;
    }
    let dir = temp_dir();
    let orig = dir.path().join("orig.nc");
    write_original(&orig);
    for (var, alg, n) in [
        ("t", "bitround", 1u8),
        ("t", "bitround", 7),
        ("t", "bitround", 10),
        ("t", "bitround", 22),
        ("t", "granularbr", 1),
        ("t", "granularbr", 3),
        ("t", "granularbr", 6),
        ("d", "bitround", 5),
        ("d", "bitround", 40),
        ("d", "granularbr", 2),
        ("d", "granularbr", 9),
        ("d", "granularbr", 15),
    ] {
        let q = pack_unpack(&orig, dir.path(), &[&format!("{var}={alg}:{n}")]);
        let mode = if alg == "bitround" {
            "BitRound"
        } else {
            "GranularBitRound"
        };
        let out = dir.path().join("c.bin");
        let o = Command::new(python())
            .args(["-c", PY_QUANTIZE])
            .arg(&orig)
            .arg(var)
            .arg(mode)
            .arg(n.to_string())
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let theirs = std::fs::read(&out).unwrap();
        let ours: Vec<u8> = if var == "t" {
            read_f32(&q, var)
                .iter()
                .flat_map(|x| x.to_be_bytes())
                .collect()
        } else {
            read_f64(&q, var)
                .iter()
                .flat_map(|x| x.to_be_bytes())
                .collect()
        };
        assert_eq!(ours.len(), theirs.len());
        let esize = if var == "t" { 4 } else { 8 };
        let orig_bytes: Vec<u8> = if var == "t" {
            read_f32(&orig, var)
                .iter()
                .flat_map(|x| x.to_be_bytes())
                .collect()
        } else {
            read_f64(&orig, var)
                .iter()
                .flat_map(|x| x.to_be_bytes())
                .collect()
        };
        for k in 0..ours.len() / esize {
            let r = k * esize..(k + 1) * esize;
            // netCDF-C quantizes missing_value (we keep it, see the docs).
            if var == "t" && orig_bytes[r.clone()] == 1.0e20f32.to_be_bytes() {
                continue;
            }
            // netCDF-C's Granular BitRound turns infinities into garbage (0 here: frexp and
            // log10 of an infinity); we keep them.
            let inf = if esize == 4 {
                f32::from_be_bytes(orig_bytes[r.clone()].try_into().unwrap()).is_infinite()
            } else {
                f64::from_be_bytes(orig_bytes[r.clone()].try_into().unwrap()).is_infinite()
            };
            if inf {
                assert_eq!(ours[r.clone()], orig_bytes[r.clone()]);
                if alg == "granularbr" {
                    continue;
                }
            }
            assert_eq!(
                ours[r.clone()],
                theirs[r.clone()],
                "{var} {alg}:{n} element {k}: original {:02x?}",
                &orig_bytes[r]
            );
        }
    }
}

/// Usage errors name the variable: not float/double, NSB/NSD out of range, no match; exit 2.
#[test]
fn usage_errors() {
    let s = sample("gridded_sst.nc");
    let dir = temp_dir();
    let out = dir.path().join("x.nc3z");
    for (rule, want) in [
        ("sst=bitround:24", "\"sst\": NSB must be in 1..=23"),
        ("time=granularbr:16", "\"time\": NSD must be in 1..=15"),
        ("sst=granularbr:7", "NSD must be in 1..=6"),
        (
            "nope*=bitround:3",
            "\"nope*\" matches no variable (variables: time, lat, lon, sst)",
        ),
        (
            "sst=bitround",
            "expected VARS=bitround:NSB or VARS=granularbr:NSD",
        ),
    ] {
        let o = nc3pack(&[
            "pack".as_ref(),
            "--quantize".as_ref(),
            rule.as_ref(),
            s.as_os_str(),
            out.as_os_str(),
        ])
        .expect(2);
        let err = o.stderr.clone();
        assert!(err.contains(want), "{rule}: {err}");
        assert!(!out.exists());
    }
    // Batch packing that deletes its inputs would lose the originals: refused (batches
    // with --quantize: tests/it/batch.rs).
    let batch_out = dir.path().join("batch");
    let o = nc3pack(&[
        "pack".as_ref(),
        "--quantize".as_ref(),
        "sst=bitround:3".as_ref(),
        "--delete-input".as_ref(),
        s.as_os_str(),
        "-o".as_ref(),
        batch_out.as_os_str(),
    ])
    .expect(2);
    assert!(
        o.stderr.contains("--quantize") && o.stderr.contains("--delete-input"),
        "{}",
        o.stderr
    );
    assert!(!batch_out.exists() && s.exists());
    let dir = temp_dir();
    let orig = dir.path().join("o.nc");
    write_original(&orig);
    let o = nc3pack(&[
        "pack".as_ref(),
        "--quantize".as_ref(),
        "i=bitround:3".as_ref(),
        orig.as_os_str(),
        out.as_os_str(),
    ])
    .expect(2);
    assert!(
        o.stderr
            .contains("variable \"i\" is int; only float and double variables can be quantized"),
        "{}",
        o.stderr.clone()
    );
    // The same rule twice for one variable is refused.
    let rules: Vec<QuantizeRule> = vec![
        "t=bitround:3".parse().unwrap(),
        "t*=bitround:4".parse().unwrap(),
    ];
    let opts = rules
        .into_iter()
        .fold(PackOptions::fast(), PackOptions::with_quantize);
    let e = pack_file(&orig, &out, &opts).unwrap_err();
    assert!(
        e.to_string()
            .contains("\"t\" is named by more than one rule"),
        "{e}"
    );
    assert_eq!(
        Quantization::new(Algorithm::BitRound, 3).to_string(),
        "bitround:3"
    );
}

/// A pipe in gives the archive a file gives.
#[test]
fn stream_input_same_archive() {
    let dir = temp_dir();
    let orig = dir.path().join("o.nc");
    write_original(&orig);
    let a = dir.path().join("a.nc3z");
    let b = dir.path().join("b.nc3z");
    let opts = PackOptions::fast().with_quantize("t,d=bitround:8".parse().unwrap());
    pack_file(&orig, &a, &opts).unwrap();
    let f = std::fs::File::open(&orig).unwrap();
    nc3pack::pack_reader(f, &orig, &b, &opts).unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}

/// `info` says an archive is lossy, which variables and how, and the original's hash (text and
/// JSON); a lossless archive says nothing of it.
#[test]
fn info_says_lossy() {
    let dir = temp_dir();
    let orig = dir.path().join("orig.nc");
    write_original(&orig);
    pack_unpack(&orig, dir.path(), &["t=bitround:9", "d=granularbr:5"]);
    let z = dir.path().join("q.nc3z");
    let o = nc3pack(&["info".as_ref(), z.as_os_str()]).expect(0);
    let bytes = std::fs::read(&orig).unwrap();
    let hash = format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&bytes));
    let want = format!(
        "// LOSSY archive (quantized: d granularbr:5, t bitround:9); original before quantization: {} bytes, xxh3-128 {hash}",
        bytes.len()
    );
    assert!(o.stdout.contains(&want), "{}", o.stdout);
    let o = nc3pack(&["info".as_ref(), "--json".as_ref(), z.as_os_str()]).expect(0);
    let j: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(j["archive"]["lossy"]["variables"]["t"], "bitround:9");
    assert_eq!(j["archive"]["lossy"]["variables"]["d"], "granularbr:5");
    assert_eq!(j["archive"]["lossy"]["original_hash_xxh3_128"], hash);
    let l = dir.path().join("l.nc3z");
    pack_file(&orig, &l, &PackOptions::fast()).unwrap();
    let o = nc3pack(&["info".as_ref(), "--json".as_ref(), l.as_os_str()]).expect(0);
    let j: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert!(j["archive"].get("lossy").is_none());
    let o = nc3pack(&["info".as_ref(), l.as_os_str()]).expect(0);
    assert!(!o.stdout.contains("LOSSY"));
}

/// `verify --against ORIGINAL` of a lossy archive reports the largest error per quantized
/// variable (the one computed here from the netcdf3 crate's readings) and that the rest is
/// equal; against another file it fails.
#[test]
fn verify_against_reports_largest_error() {
    let dir = temp_dir();
    let orig = dir.path().join("orig.nc");
    let (t, _) = write_original(&orig);
    let q = pack_unpack(&orig, dir.path(), &["t=bitround:4"]);
    let tq = read_f32(&q, "t");
    let max_abs = t
        .iter()
        .zip(&tq)
        .filter(|(a, _)| a.is_finite() && **a != -999.0 && **a != 1.0e20)
        .map(|(&a, &b)| (b as f64 - a as f64).abs())
        .fold(0.0f64, f64::max);
    assert!(max_abs > 0.0);
    let z = dir.path().join("q.nc3z");
    let o = nc3pack(&[
        "verify".as_ref(),
        z.as_os_str(),
        "--against".as_ref(),
        orig.as_os_str(),
    ])
    .expect(0);
    let want = format!("t (bitround:4): largest error {max_abs:e} (relative ");
    assert!(o.stdout.contains(&want), "{want}\n{}", o.stdout);
    assert!(o.stdout.contains("within the bound"), "{}", o.stdout);
    assert!(o.stdout.contains("is the original recorded in the archive"));
    assert!(o.stdout.contains("every other variable equals"));
    // Without --against: says it is lossy.
    let o = nc3pack(&["verify".as_ref(), z.as_os_str()]).expect(0);
    assert!(o
        .stdout
        .contains("lossy archive: quantized: t bitround:4; original xxh3-128"));
    // Another file: not the original, and its variables differ.
    let other = dir.path().join("other.nc");
    write_original(&other);
    let mut b = std::fs::read(&other).unwrap();
    let n = b.len();
    b[n - 1] ^= 1; // last byte of the last record of `u`
    std::fs::write(&other, &b).unwrap();
    let o = nc3pack(&[
        "verify".as_ref(),
        z.as_os_str(),
        "--against".as_ref(),
        other.as_os_str(),
    ])
    .expect(1);
    assert!(
        o.stdout.contains("is NOT the original recorded"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("though not quantized: u"), "{}", o.stdout);
}

/// The largest relative error over the values of `orig` and `quant` that quantization may
/// change (finite, nonzero, not `keep`), computed here from the netcdf3 crate's readings;
/// also the largest over the normal values alone.
fn true_max_rel(orig: &[f64], quant: &[f64], normal: impl Fn(f64) -> bool) -> (f64, f64) {
    assert_eq!(orig.len(), quant.len());
    let (mut all, mut normals) = (0f64, 0f64);
    for (&x, &y) in orig.iter().zip(quant) {
        if !x.is_finite() || x == 0.0 || x == 9.969_209_968_386_869e36 {
            continue;
        }
        let rel = (y - x).abs() / x.abs();
        all = all.max(rel);
        if normal(x) {
            normals = normals.max(rel);
        }
    }
    (all, normals)
}

/// `verify --against` reports the true largest relative error, subnormals and values near zero
/// included: a subnormal float that BitRound rounds to 0 (relative error exactly 1), subnormal
/// floats under Granular BitRound at NSD 6, subnormal doubles; each compared with the maximum
/// computed here from the netcdf3 crate's readings of the original and the restored file.
#[test]
fn verify_against_reports_the_true_largest_relative_error() {
    let dir = temp_dir();
    let orig = dir.path().join("hand.nc");
    let s: Vec<f32> = vec![1.0, 1.0e-40, 2.5, -3.75, 1.0e-38, 1.2e-38, 3.0e-39];
    let g: Vec<f32> = vec![
        1.234_567, 1.0e-37, 1.0e-44, 3.3e-42, -1.0e-39, 7.77e-41, 0.5,
    ];
    let d: Vec<f64> = vec![1.0e-310, 4.9e-324, 1.0, 3.3, -2.0e-308];
    let near: Vec<f32> = vec![1.2e-38, 1.5e-38, -2.0e-38, 1.0e-30, 3.3e-37];
    let mut ds = netcdf3::DataSet::new();
    for (name, n) in [("s", 7), ("g", 7), ("d", 5), ("near", 5)] {
        ds.add_fixed_dim(format!("n_{name}"), n).unwrap();
    }
    ds.add_var_f32("s", &["n_s"]).unwrap();
    ds.add_var_f32("g", &["n_g"]).unwrap();
    ds.add_var_f64("d", &["n_d"]).unwrap();
    ds.add_var_f32("near", &["n_near"]).unwrap();
    let mut w = netcdf3::FileWriter::open(&orig).unwrap();
    w.set_def(&ds, netcdf3::Version::Classic, 0).unwrap();
    w.write_var_f32("s", &s).unwrap();
    w.write_var_f32("g", &g).unwrap();
    w.write_var_f64("d", &d).unwrap();
    w.write_var_f32("near", &near).unwrap();
    w.close().unwrap();
    let rules = [
        "s=bitround:4",
        "g=granularbr:6",
        "d=bitround:10",
        "near=bitround:2",
    ];
    let q = pack_unpack(&orig, dir.path(), &rules);
    let z = dir.path().join("q.nc3z");
    let f32_normal = |x: f64| (x as f32).is_normal();
    let widen = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
    let want = [
        (
            "s",
            true_max_rel(&widen(&s), &widen(&read_f32(&q, "s")), f32_normal),
        ),
        (
            "g",
            true_max_rel(&widen(&g), &widen(&read_f32(&q, "g")), f32_normal),
        ),
        ("d", true_max_rel(&d, &read_f64(&q, "d"), f64::is_normal)),
        (
            "near",
            true_max_rel(&widen(&near), &widen(&read_f32(&q, "near")), f32_normal),
        ),
    ];
    // By hand: 1e-40 is 71362 units of 2^-149; BitRound at NSB 4 clears the 19 low bits and
    // adds 2^18 first: 0.
    assert_eq!(read_f32(&q, "s")[1], 0.0);
    assert_eq!(want[0].1 .0, 1.0);
    // The subnormals' errors are the largest: leaving them out under-reports.
    for (name, (all, normals)) in &want[..3] {
        assert!(all > normals, "{name}: {all} vs {normals}");
    }
    assert!(want[1].1 .0 > 1e-3, "{want:?}");
    let report =
        nc3pack::verify(&z, &nc3pack::VerifyOptions::default().with_against(&orig)).unwrap();
    let lossy = report.lossy.expect("a lossy comparison");
    // Subnormal values, counted here: BitRound holds them to the bound of the least normal
    // value (within it), Granular BitRound to none.
    let subnormals_f32 = |v: &[f32]| v.iter().filter(|x| x.is_subnormal()).count() as u64;
    let subnormals = [
        ("s", subnormals_f32(&s)),
        ("g", subnormals_f32(&g)),
        ("d", d.iter().filter(|x| x.is_subnormal()).count() as u64),
        ("near", 0),
    ];
    for ((name, (all, _)), (_, sub)) in want.iter().zip(subnormals) {
        let v = lossy.vars.iter().find(|v| v.name == *name).unwrap();
        assert_eq!(v.max_rel, *all, "{name}");
        assert_eq!(v.subnormal, sub, "{name}");
        assert!(v.within_bound, "{name}");
    }
    assert_eq!(subnormals.map(|s| s.1), [3, 4, 3, 0]);
    let o = nc3pack(&[
        "verify".as_ref(),
        z.as_os_str(),
        "--against".as_ref(),
        orig.as_os_str(),
    ])
    .expect(0);
    for (name, (all, _)) in want {
        let line = o
            .stdout
            .lines()
            .find(|l| l.contains(&format!(": {name} (")))
            .unwrap_or_else(|| panic!("{name}: {}", o.stdout));
        assert!(line.contains(&format!("(relative {all:e}")), "{line}");
    }
}

/// Quantizing can move a value outside its variable's `valid_range` (or below `valid_min`,
/// above `valid_max`): netCDF readers then take it as missing. Packing warns, one line per
/// variable and attribute with the count, and `verify --against` counts them; both counts are
/// the ones computed here from the netcdf3 crate's readings.
#[test]
fn quantizing_outside_the_valid_range_is_warned_and_counted() {
    let dir = temp_dir();
    let orig = dir.path().join("valid.nc");
    // 100 = 1.1001b x 64: BitRound at NSB 3 rounds it up to 1.101b x 64 = 104.
    let t: Vec<f32> = vec![
        100.0, 99.0, 50.0, 0.0, 0.001, 101.0, -0.5, 97.0, 98.5, 100.0,
    ];
    // valid_min 1.1: 1.12 (1.000111b) at NSB 2 is 1.0, below.
    let d: Vec<f64> = vec![1.12, 1.1, 1.2, 5.0, 1.13, 0.5];
    // valid_max 9.5: 9.4 (1.001011b x 8) at NSB 2 is 1.01b x 8 = 10, above.
    let u: Vec<f32> = vec![9.4, 9.3, 1.0, 9.5, 9.0];
    // valid_range beats valid_min and valid_max (as netCDF4-python reads them).
    let r: Vec<f32> = vec![100.0, 50.0];
    let mut ds = netcdf3::DataSet::new();
    ds.add_fixed_dim("nt", t.len()).unwrap();
    ds.add_fixed_dim("nd", d.len()).unwrap();
    ds.add_fixed_dim("nu", u.len()).unwrap();
    ds.add_fixed_dim("nr", r.len()).unwrap();
    ds.add_var_f32("t", &["nt"]).unwrap();
    ds.add_var_attr_f32("t", "valid_range", vec![0.0, 100.0])
        .unwrap();
    ds.add_var_f64("d", &["nd"]).unwrap();
    ds.add_var_attr_f64("d", "valid_min", vec![1.1]).unwrap();
    ds.add_var_f32("u", &["nu"]).unwrap();
    ds.add_var_attr_f32("u", "valid_max", vec![9.5]).unwrap();
    ds.add_var_f32("r", &["nr"]).unwrap();
    ds.add_var_attr_f64("r", "valid_range", vec![0.0, 100.0])
        .unwrap();
    ds.add_var_attr_f64("r", "valid_max", vec![1000.0]).unwrap();
    let mut w = netcdf3::FileWriter::open(&orig).unwrap();
    w.set_def(&ds, netcdf3::Version::Classic, 0).unwrap();
    w.write_var_f32("t", &t).unwrap();
    w.write_var_f64("d", &d).unwrap();
    w.write_var_f32("u", &u).unwrap();
    w.write_var_f32("r", &r).unwrap();
    w.close().unwrap();
    let z = dir.path().join("q.nc3z");
    let o = nc3pack(&[
        "pack".as_ref(),
        "--quantize".as_ref(),
        "t,r=bitround:3".as_ref(),
        "--quantize".as_ref(),
        "d,u=bitround:2".as_ref(),
        orig.as_os_str(),
        z.as_os_str(),
    ])
    .expect(0);
    let q = dir.path().join("q.nc");
    nc3pack(&["unpack".as_ref(), z.as_os_str(), q.as_os_str()]).expect(0);
    // Values inside before, outside after.
    let moved = |orig: &[f64], quant: &[f64], lo: f64, hi: f64| {
        orig.iter()
            .zip(quant)
            .filter(|&(&x, &y)| (lo..=hi).contains(&x) && !(lo..=hi).contains(&y))
            .count()
    };
    let widen = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
    let inf = f64::INFINITY;
    let counts = [
        (
            "t",
            "bitround:3",
            "valid_range [0, 100]",
            moved(&widen(&t), &widen(&read_f32(&q, "t")), 0.0, 100.0),
        ),
        (
            "d",
            "bitround:2",
            "valid_min 1.1",
            moved(&d, &read_f64(&q, "d"), 1.1, inf),
        ),
        (
            "u",
            "bitround:2",
            "valid_max 9.5",
            moved(&widen(&u), &widen(&read_f32(&q, "u")), -inf, 9.5),
        ),
        (
            "r",
            "bitround:3",
            "valid_range [0, 100]",
            moved(&widen(&r), &widen(&read_f32(&q, "r")), 0.0, 100.0),
        ),
    ];
    assert_eq!(read_f32(&q, "t")[0], 104.0);
    assert_eq!(read_f64(&q, "d")[0], 1.0);
    assert_eq!(read_f32(&q, "u")[0], 10.0);
    for (name, quant, attr, n) in counts {
        assert!(n > 0, "{name}");
        let warning = format!(
            "nc3pack: warning: {}: variable \"{name}\": {quant} moved {n} values outside {attr}; netCDF readers take them as missing",
            orig.display()
        );
        assert_eq!(
            o.stderr
                .lines()
                .filter(|l| l.contains("warning"))
                .filter(|l| *l == warning)
                .count(),
            1,
            "{warning}\n{}",
            o.stderr
        );
    }
    assert_eq!(
        o.stderr.lines().filter(|l| l.contains("warning")).count(),
        4,
        "{}",
        o.stderr
    );
    // A batch warns the same, naming the input.
    let tree = dir.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::copy(&orig, tree.join("valid.nc")).unwrap();
    let b = nc3pack(&[
        "pack".as_ref(),
        "-q".as_ref(),
        "--quantize".as_ref(),
        "t,r=bitround:3".as_ref(),
        "--quantize".as_ref(),
        "d,u=bitround:2".as_ref(),
        tree.as_os_str(),
        "-o".as_ref(),
        dir.path().join("out").as_os_str(),
    ])
    .expect(0);
    let warned: Vec<&str> = b.stderr.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warned.len(), 4, "{}", b.stderr);
    let t_line = format!(
        "variable \"t\": bitround:3 moved {} values outside valid_range [0, 100]; netCDF readers take them as missing",
        counts[0].3
    );
    assert!(
        warned.iter().any(|l| l.starts_with("nc3pack: warning: ")
            && l.contains("valid.nc: ")
            && l.ends_with(&t_line)),
        "{}",
        b.stderr
    );
    let v = nc3pack(&[
        "verify".as_ref(),
        z.as_os_str(),
        "--against".as_ref(),
        orig.as_os_str(),
    ])
    .expect(0);
    for (name, quant, attr, n) in counts {
        let line = v
            .stdout
            .lines()
            .find(|l| l.contains(&format!(": {name} ({quant})")))
            .unwrap_or_else(|| panic!("{name}: {}", v.stdout));
        assert!(
            line.ends_with(&format!(
                "within the bound; {n} values moved outside {attr}"
            )),
            "{line}"
        );
    }
}
