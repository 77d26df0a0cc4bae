//! The `lzma` codec (design/FORMAT.md, codec 5) on whole archives: the `max` preset uses it
//! where text and far-apart exact repeats make it pay, the default preset never does, and
//! such archives unpack byte for byte and read back as the `netcdf3` crate reads the original.

use crate::util::{nc3pack, temp_dir};
use nc3pack::format::Codec;
use nc3pack::{pack_file, unpack_file, Archive, Dataset, Hyperslab, PackOptions, UnpackOptions};
use std::f64::consts::{PI, TAU};
use std::path::Path;

const CELLS: usize = 40_000;
const VERTS: usize = 20_000;
const REPORTS: usize = 4_000;
const LEN: usize = 80;

/// An unstructured mesh in miniature, written by the `netcdf3` crate: `double
/// clon_vertices(cell, nv)` whose values (random bits: no byte filter helps) each repeat in
/// about 6 cells scattered over the whole variable, and `char report(report, report_len)`,
/// station report text of a few templates with varying codes and numbers.
fn mesh_file(path: &Path) -> (Vec<f64>, Vec<u8>) {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let verts: Vec<f64> = (0..VERTS)
        .map(|_| (next() >> 11) as f64 / (1u64 << 53) as f64 * TAU - PI)
        .collect();
    let cv: Vec<f64> = (0..CELLS * 3)
        .map(|_| verts[next() as usize % VERTS])
        .collect();
    let stations = [
        "EDDF", "KJFK", "RJTT", "LFPG", "EGLL", "YSSY", "SBGR", "FACT",
    ];
    let mut report = Vec::with_capacity(REPORTS * LEN);
    for i in 0..REPORTS {
        let r = next();
        let line = format!(
            "METAR {} {:02}{:02}50Z {:03}{:02}KT {:04} {} {:02}/{:02} Q{:04} NOSIG",
            stations[r as usize % 8],
            i % 28 + 1,
            (r >> 8) % 24,
            (r >> 16) % 36 * 10,
            (r >> 24) % 30,
            [9999, 8000, 4000, 1200][(r >> 32) as usize % 4],
            ["FEW020", "SCT035", "BKN012", "OVC008", "CAVOK"][(r >> 36) as usize % 5],
            (r >> 40) % 35,
            (r >> 46) % 20,
            990 + (r >> 52) % 40,
        );
        let mut b = line.into_bytes();
        b.resize(LEN, b' ');
        report.extend_from_slice(&b);
    }
    let mut ds = netcdf3::DataSet::new();
    ds.add_fixed_dim("cell", CELLS).unwrap();
    ds.add_fixed_dim("nv", 3).unwrap();
    ds.add_fixed_dim("report", REPORTS).unwrap();
    ds.add_fixed_dim("report_len", LEN).unwrap();
    ds.add_var_f64("clon_vertices", &["cell", "nv"]).unwrap();
    ds.add_var_u8("report", &["report", "report_len"]).unwrap();
    let mut w = netcdf3::FileWriter::open(path).unwrap();
    w.set_def(&ds, netcdf3::Version::Classic, 0).unwrap();
    w.write_var_f64("clon_vertices", &cv).unwrap();
    w.write_var_u8("report", &report).unwrap();
    w.close().unwrap();
    (cv, report)
}

#[test]
fn max_uses_lzma_on_text_and_far_repeats_and_reads_back_exactly() {
    let dir = temp_dir();
    let nc = dir.path().join("mesh.nc");
    mesh_file(&nc);
    let original = std::fs::read(&nc).unwrap();
    let mut r = netcdf3::FileReader::open(&nc).unwrap();
    let cv = r.read_var_f64("clon_vertices").unwrap();
    let report = r.read_var_u8("report").unwrap();
    // 512 KiB blocks: clon_vertices has 2 (judged on a sample), report 1 (tried whole).
    for (max, threads) in [(true, 1), (true, 2), (false, 2)] {
        let ctx = format!("max {max} threads {threads}");
        let z = dir.path().join(format!("m{max}{threads}.nc3z"));
        let opts = if max {
            PackOptions::max()
        } else {
            PackOptions::default()
        };
        let opts = opts.with_block_size(512 << 10).with_threads(threads);
        pack_file(&nc, &z, &opts).unwrap();
        let a = Archive::open(&z).unwrap();
        let uses = |name: &str| {
            let s = a.var_id(name).unwrap();
            (0..a.block_count(s)).all(|b| a.entry(s, b).codec == Codec::Lzma)
        };
        assert_eq!(uses("clon_vertices"), max, "{ctx}");
        assert_eq!(uses("report"), max, "{ctx}");
        let info = nc3pack(&["info".as_ref(), z.as_os_str()]).expect(0).stdout;
        assert_eq!(info.contains("\"lzma\""), max, "{ctx}: {info}");
        // Byte for byte, and every value as the netcdf3 crate reads it.
        let back = dir.path().join(format!("m{max}{threads}.nc"));
        unpack_file(&z, &back, &UnpackOptions::default()).unwrap();
        assert!(std::fs::read(&back).unwrap() == original, "{ctx}");
        let slab = Hyperslab::new(&[CELLS as u64, 3], &[12_345, 1], &[20_000, 2], &[1, 1]);
        let got: Vec<f64> = a.read("clon_vertices", &slab.unwrap()).unwrap();
        let want: Vec<f64> = (12_345..32_345)
            .flat_map(|c| [cv[3 * c + 1], cv[3 * c + 2]])
            .collect();
        assert!(
            got.iter()
                .map(|x| x.to_bits())
                .eq(want.iter().map(|x| x.to_bits())),
            "{ctx}"
        );
        let s = a.var_id("report").unwrap();
        assert!(a.read_var_bytes(s).unwrap() == report, "{ctx}");
    }
}

#[test]
fn codec_lzma_packs_every_block_it_shrinks_with_lzma() {
    let dir = temp_dir();
    let nc = dir.path().join("mesh.nc");
    mesh_file(&nc);
    let z = dir.path().join("m.nc3z");
    let out = nc3pack(&[
        "pack".as_ref(),
        "--codec".as_ref(),
        "lzma".as_ref(),
        "--level".as_ref(),
        "3".as_ref(),
        "--block-size".as_ref(),
        "256KiB".as_ref(),
        nc.as_os_str(),
        z.as_os_str(),
    ])
    .expect(0);
    assert!(out.stderr.contains("ratio"), "{out}");
    let a = Archive::open(&z).unwrap();
    for name in ["clon_vertices", "report"] {
        let s = a.var_id(name).unwrap();
        assert!(a.block_count(s) >= 2);
        for b in 0..a.block_count(s) {
            assert_eq!(a.entry(s, b).codec, Codec::Lzma, "{name} block {b}");
        }
    }
    let back = dir.path().join("m.nc");
    unpack_file(&z, &back, &UnpackOptions::default()).unwrap();
    assert!(std::fs::read(&back).unwrap() == std::fs::read(&nc).unwrap());
    // Levels beyond xz's presets are a usage error.
    let bad = nc3pack(&[
        "pack".as_ref(),
        "--codec".as_ref(),
        "lzma".as_ref(),
        "--level".as_ref(),
        "10".as_ref(),
        nc.as_os_str(),
        dir.path().join("x.nc3z").as_os_str(),
    ])
    .output();
    assert!(matches!(bad.code, Some(1 | 2)), "{bad}");
    assert!(bad.stderr.contains("level"), "{bad}");
    assert!(!dir.path().join("x.nc3z").exists());
}
