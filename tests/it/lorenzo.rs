//! The 2-D `lorenzo` filter (design/FORMAT.md, filter 5) on whole archives: float grids pack
//! with it, unpack byte for byte, and read back (whole variables and hyperslabs) as the
//! `netcdf3` crate reads the original.

use crate::util::{cut, temp_dir};
use nc3pack::format::{Codec, Filter};
use nc3pack::{pack_file, unpack_file, Archive, Dataset, Hyperslab, PackOptions, UnpackOptions};
use std::path::Path;

/// Rows of the grids (`x`) and their count (`y`), records of `t`.
const X: usize = 150;
const Y: usize = 40;
const T: usize = 3;

/// A rotated-pole-like grid of 2-D coordinates and a field with special values, written by
/// the `netcdf3` crate: `float lat(y, x)`, `double lon(y, x)`, `float lat_bnds(y, x, nv)`,
/// `float t(time, y, x)` (records; fill values, NaNs with payloads, -0.0, denormals and
/// infinities scattered in a smooth field) and the 1-D `float line(x)`.
pub fn grid_file(path: &Path) {
    let mut ds = netcdf3::DataSet::new();
    ds.add_fixed_dim("y", Y).unwrap();
    ds.add_fixed_dim("x", X).unwrap();
    ds.add_fixed_dim("nv", 4).unwrap();
    ds.set_unlimited_dim("time", T).unwrap();
    ds.add_var_f32("lat", &["y", "x"]).unwrap();
    ds.add_var_f64("lon", &["y", "x"]).unwrap();
    ds.add_var_f32("lat_bnds", &["y", "x", "nv"]).unwrap();
    ds.add_var_f32("t", &["time", "y", "x"]).unwrap();
    ds.add_var_f32("line", &["x"]).unwrap();
    let rot = |r: f64, c: f64| {
        let (a, b) = (0.6f64, 0.8f64);
        (
            -20.0
                + a * 0.11 * r
                + b * 0.07 * c
                + 1.5 * (1.0 + 0.01 * r) * (0.05 * c + 0.02 * r).sin(),
            -40.0 - b * 0.11 * r
                + a * 0.07 * c
                + 0.0004 * c * r
                + 2.0 * (1.0 + 0.01 * r) * (0.04 * c - 0.03 * r).sin(),
        )
    };
    let lat: Vec<f32> = (0..Y * X)
        .map(|i| rot((i / X) as f64, (i % X) as f64).0 as f32)
        .collect();
    let lon: Vec<f64> = (0..Y * X)
        .map(|i| rot((i / X) as f64, (i % X) as f64).1)
        .collect();
    let bnds: Vec<f32> = (0..Y * X * 4)
        .map(|i| {
            let (r, c, k) = ((i / 4 / X) as f64, (i / 4 % X) as f64, i % 4);
            let (dr, dc) = ([-0.5, -0.5, 0.5, 0.5][k], [-0.5, 0.5, 0.5, -0.5][k]);
            rot(r + dr, c + dc).0 as f32
        })
        .collect();
    let specials = [
        f32::from_bits(0x7fc0_1234),
        f32::from_bits(0xffa0_0001),
        -0.0,
        f32::from_bits(1),
        f32::from_bits(0x8000_0003),
        f32::INFINITY,
        f32::NEG_INFINITY,
        9.969_21e36,
    ];
    let t: Vec<f32> = (0..T * Y * X)
        .map(|i| {
            let (k, r, c) = ((i / X / Y) as f32, (i / X % Y) as f32, (i % X) as f32);
            match i % 97 {
                0..=7 => specials[i % 97],
                _ => 280.0 + 10.0 * (0.05 * c + 0.03 * r + 0.2 * k).sin() + 0.01 * r,
            }
        })
        .collect();
    let line: Vec<f32> = (0..X).map(|i| i as f32 * 0.5).collect();
    let mut w = netcdf3::FileWriter::open(path).unwrap();
    w.set_def(&ds, netcdf3::Version::Classic, 0).unwrap();
    w.write_var_f32("lat", &lat).unwrap();
    w.write_var_f64("lon", &lon).unwrap();
    w.write_var_f32("lat_bnds", &bnds).unwrap();
    w.write_var_f32("t", &t).unwrap();
    w.write_var_f32("line", &line).unwrap();
    w.close().unwrap();
}

fn be32(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_be_bytes()).collect()
}

#[test]
fn float_grids_pack_with_lorenzo_and_read_back_exactly() {
    let dir = temp_dir();
    let nc = dir.path().join("grid.nc");
    grid_file(&nc);
    let original = std::fs::read(&nc).unwrap();
    let mut r = netcdf3::FileReader::open(&nc).unwrap();
    let lat = r.read_var_f32("lat").unwrap();
    let lon = r.read_var_f64("lon").unwrap();
    let bnds = r.read_var_f32("lat_bnds").unwrap();
    let t = r.read_var_f32("t").unwrap();
    for max in [false, true] {
        let configs = [
            (8192u32, 1usize, false),
            (1 << 20, 2, false),
            (8192, 2, true),
        ];
        for (block_size, threads, pco) in configs {
            let ctx = format!("max {max} block size {block_size} pco {pco}");
            let z = dir.path().join(format!("g{max}{block_size}{pco}.nc3z"));
            let opts = if max {
                PackOptions::max()
            } else {
                PackOptions::default()
            };
            let opts = opts
                .with_block_size(block_size)
                .with_threads(threads)
                .with_pco(pco);
            pack_file(&nc, &z, &opts).unwrap();
            let a = Archive::open(&z).unwrap();
            // Which variables' blocks use the 2-D filter: the grids (without pco, which wins
            // on these exact synthetic fields), never the 1-D variable. With `max`, the
            // corner bounds may use lzma instead: each corner repeats exactly in the
            // neighbouring cells, which LZMA codes better than a predictor.
            let uses = |name: &str| {
                let s = a.var_id(name).unwrap();
                (0..a.block_count(s)).any(|b| a.entry(s, b).filter == Filter::Lorenzo)
            };
            let lzma = |name: &str| {
                let s = a.var_id(name).unwrap();
                (0..a.block_count(s)).any(|b| a.entry(s, b).codec == Codec::Lzma)
            };
            for name in ["lat", "lon", "lat_bnds"].into_iter().filter(|_| !pco) {
                let other = max && name == "lat_bnds" && lzma(name);
                assert!(uses(name) || other, "{ctx}: {name} does not use lorenzo");
            }
            assert!(!uses("line"), "{ctx}");
            // Byte for byte, and every value as the netcdf3 crate reads it.
            let back = dir.path().join(format!("g{max}{block_size}{pco}.nc"));
            unpack_file(&z, &back, &UnpackOptions::default()).unwrap();
            assert!(std::fs::read(&back).unwrap() == original, "{ctx}");
            let v = |n: &str| a.var_id(n).unwrap();
            assert!(a.read_var_bytes(v("lat")).unwrap() == be32(&lat), "{ctx}");
            assert!(
                a.read_var_bytes(v("lat_bnds")).unwrap() == be32(&bnds),
                "{ctx}"
            );
            assert!(a.read_var_bytes(v("t")).unwrap() == be32(&t), "{ctx}");
            // Hyperslabs across block and row boundaries.
            let slab = Hyperslab::new(&[Y as u64, X as u64], &[3, 7], &[30, 131], &[1, 1]);
            let got: Vec<f64> = a.read("lon", &slab.unwrap()).unwrap();
            let want = cut(&lon, &[Y, X], &[3, 7], &[30, 131]);
            assert!(
                got.iter()
                    .map(|x| x.to_bits())
                    .eq(want.iter().map(|x| x.to_bits())),
                "{ctx}"
            );
            let shape = [T as u64, Y as u64, X as u64];
            let slab = Hyperslab::new(&shape, &[1, 5, 0], &[2, 33, 150], &[1, 1, 1]).unwrap();
            let got: Vec<f32> = a.read("t", &slab).unwrap();
            let want = cut(&t, &[T, Y, X], &[1, 5, 0], &[2, 33, 150]);
            assert!(be32(&got) == be32(&want), "{ctx}");
        }
    }
}

/// `--filter lorenzo` (and `--var NAME:filter=lorenzo`) forces the 2-D predictor on every
/// block of the float grids (rows of the variable's last dimension), not on `t` when only the
/// grids are named; the archive unpacks byte for byte. (The 1-D fallback: a codec unit test.)
#[test]
fn a_forced_lorenzo_filter_is_used_on_the_grids_and_zzdelta_elsewhere() {
    use crate::util::nc3pack;
    let dir = temp_dir();
    let nc = dir.path().join("grid.nc");
    grid_file(&nc);
    let original = std::fs::read(&nc).unwrap();
    let whole = ["--filter", "lorenzo"];
    let named = ["--var", "lat,lon:filter=lorenzo"];
    for (k, args) in [&whole[..], &named[..]].into_iter().enumerate() {
        let z = dir.path().join(format!("f{k}.nc3z"));
        let mut argv: Vec<std::ffi::OsString> = ["pack", "--block-size", "8KiB"]
            .iter()
            .chain(args)
            .map(|a| a.into())
            .collect();
        argv.extend([nc.clone().into_os_string(), z.clone().into_os_string()]);
        nc3pack(&argv).expect(0);
        let a = Archive::open(&z).unwrap();
        let filters = |name: &str| {
            let s = a.var_id(name).unwrap();
            let mut f: Vec<Filter> = (0..a.block_count(s))
                .map(|b| a.entry(s, b).filter)
                .collect();
            f.dedup();
            f
        };
        let grids: &[&str] = if k == 0 {
            &["lat", "lon", "lat_bnds", "t"]
        } else {
            &["lat", "lon"]
        };
        for name in grids {
            assert_eq!(filters(name), [Filter::Lorenzo], "{args:?}: {name}");
        }
        if k == 1 {
            assert!(!filters("t").contains(&Filter::Lorenzo), "{args:?}");
        }
        let back = dir.path().join(format!("f{k}.nc"));
        unpack_file(&z, &back, &UnpackOptions::default()).unwrap();
        assert!(std::fs::read(&back).unwrap() == original, "{args:?}");
    }
}
