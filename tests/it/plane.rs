//! The 2-D `plane` filter with codec pco (design/FORMAT.md, filter 6) on whole archives: grids
//! of 16- and 32-bit integers, floats and doubles pack, unpack byte for byte, and read back
//! (whole variables and hyperslabs) as the `netcdf3` crate reads the original.

use crate::util::{cut, temp_dir};
use nc3pack::format::{Codec, Filter};
use nc3pack::{pack_file, unpack_file, Archive, Dataset, Hyperslab, PackOptions, UnpackOptions};
use std::path::Path;

/// Rows of the grids (`x`), their count (`y`), records of `depth`.
const X: usize = 200;
const Y: usize = 60;
const T: usize = 2;

/// A `Y` x `X` field like an elevation grid: hills plus rough ground whose roughness is
/// correlated in both directions (each point the mean of its left and upper neighbours' plus a
/// small step), the case where a 2-D predictor beats a 1-D one.
fn terrain(seed: u64) -> Vec<f64> {
    let mut x = seed;
    let mut rough = vec![0.0f64; Y * X];
    for i in 0..Y * X {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let (r, c) = (i / X, i % X);
        let up = if r > 0 { rough[i - X] } else { 0.0 };
        let left = if c > 0 { rough[i - 1] } else { up };
        let up = if r > 0 { up } else { left };
        rough[i] = 0.5 * (up + left) + (x % 33) as f64 - 16.0;
    }
    (0..Y * X)
        .map(|i| {
            let (r, c) = ((i / X) as f64, (i % X) as f64);
            900.0 * (c / 37.0).sin() * (r / 23.0).cos()
                + 250.0 * ((c + 2.0 * r) / 17.0).sin()
                + rough[i]
        })
        .collect()
}

/// A grid file written by the `netcdf3` crate: `short elev(y, x)` (with the extremes and a
/// fill value mixed in), `int depth(time, y, x)` (records), `float temp(y, x)` (with NaNs with
/// payloads, -0.0, infinities and denormals), `double h(y, x)` and the 1-D `short line(x)`.
pub fn grid_file(path: &Path) {
    let mut ds = netcdf3::DataSet::new();
    ds.add_fixed_dim("y", Y).unwrap();
    ds.add_fixed_dim("x", X).unwrap();
    ds.set_unlimited_dim("time", T).unwrap();
    ds.add_var_i16("elev", &["y", "x"]).unwrap();
    ds.add_var_i32("depth", &["time", "y", "x"]).unwrap();
    ds.add_var_f32("temp", &["y", "x"]).unwrap();
    ds.add_var_f64("h", &["y", "x"]).unwrap();
    ds.add_var_i16("line", &["x"]).unwrap();
    let elev: Vec<i16> = terrain(1)
        .iter()
        .enumerate()
        .map(|(i, &v)| match i % 499 {
            0 => i16::MIN,
            1 => i16::MAX,
            2 => -32767,
            _ => v as i16,
        })
        .collect();
    let depth: Vec<i32> = [terrain(2), terrain(3)]
        .concat()
        .iter()
        .enumerate()
        .map(|(i, &v)| (v * 1000.0) as i32 - 5_000_000 * (i / X / Y) as i32)
        .collect();
    let specials = [
        f32::from_bits(0x7fc0_1234),
        f32::from_bits(0xffa0_0001),
        -0.0,
        f32::from_bits(1),
        f32::INFINITY,
        f32::NEG_INFINITY,
    ];
    let temp: Vec<f32> = terrain(4)
        .iter()
        .enumerate()
        .map(|(i, &v)| match i % 101 {
            k @ 0..=5 => specials[k],
            _ => (v * 0.01) as f32,
        })
        .collect();
    let h: Vec<f64> = terrain(5).iter().map(|v| v.round() * 0.5).collect();
    let line: Vec<i16> = (0..X as i16).map(|i| i * 3).collect();
    let mut w = netcdf3::FileWriter::open(path).unwrap();
    w.set_def(&ds, netcdf3::Version::Classic, 0).unwrap();
    w.write_var_i16("elev", &elev).unwrap();
    w.write_var_i32("depth", &depth).unwrap();
    w.write_var_f32("temp", &temp).unwrap();
    w.write_var_f64("h", &h).unwrap();
    w.write_var_i16("line", &line).unwrap();
    w.close().unwrap();
}

#[test]
fn integer_and_float_grids_pack_with_plane_and_read_back_exactly() {
    let dir = temp_dir();
    let nc = dir.path().join("grid.nc");
    grid_file(&nc);
    let original = std::fs::read(&nc).unwrap();
    let mut r = netcdf3::FileReader::open(&nc).unwrap();
    let elev = r.read_var_i16("elev").unwrap();
    let depth = r.read_var_i32("depth").unwrap();
    let temp = r.read_var_f32("temp").unwrap();
    let h = r.read_var_f64("h").unwrap();
    for max in [false, true] {
        // Blocks of 16 KiB (rows of 400 and 800 bytes: blocks start inside rows) and of 1 MiB.
        for (block_size, threads) in [(16u32 << 10, 1usize), (1 << 20, 2)] {
            let ctx = format!("max {max} block size {block_size}");
            let z = dir.path().join(format!("g{max}{block_size}.nc3z"));
            let opts = if max {
                PackOptions::max()
            } else {
                PackOptions::default()
            };
            let opts = opts.with_block_size(block_size).with_threads(threads);
            pack_file(&nc, &z, &opts).unwrap();
            let a = Archive::open(&z).unwrap();
            let uses = |name: &str| {
                let s = a.var_id(name).unwrap();
                (0..a.block_count(s)).any(|b| {
                    let e = a.entry(s, b);
                    (e.codec, e.filter) == (Codec::Pco, Filter::Plane)
                })
            };
            assert!(uses("elev"), "{ctx}: elev does not use plane");
            assert!(!uses("line"), "{ctx}");
            let back = dir.path().join(format!("g{max}{block_size}.nc"));
            unpack_file(&z, &back, &UnpackOptions::default()).unwrap();
            assert!(std::fs::read(&back).unwrap() == original, "{ctx}");
            // Whole variables and hyperslabs across block and row boundaries, as the netcdf3
            // crate reads them.
            let yx = [Y as u64, X as u64];
            let slab = Hyperslab::new(&yx, &[3, 7], &[50, 181], &[1, 1]).unwrap();
            let want = |s: &[usize], c: &[usize]| (s.to_vec(), c.to_vec());
            let (s, c) = want(&[3, 7], &[50, 181]);
            let got: Vec<i16> = a.read("elev", &slab).unwrap();
            assert_eq!(got, cut(&elev, &[Y, X], &s, &c), "{ctx}");
            let got: Vec<f32> = a.read("temp", &slab).unwrap();
            let exp = cut(&temp, &[Y, X], &s, &c);
            assert!(
                got.iter()
                    .map(|x| x.to_bits())
                    .eq(exp.iter().map(|x| x.to_bits())),
                "{ctx}"
            );
            let got: Vec<f64> = a.read("h", &slab).unwrap();
            let exp = cut(&h, &[Y, X], &s, &c);
            assert!(
                got.iter()
                    .map(|x| x.to_bits())
                    .eq(exp.iter().map(|x| x.to_bits())),
                "{ctx}"
            );
            let shape = [T as u64, Y as u64, X as u64];
            let slab = Hyperslab::new(&shape, &[0, 5, 3], &[2, 41, 190], &[1, 1, 1]).unwrap();
            let got: Vec<i32> = a.read("depth", &slab).unwrap();
            assert_eq!(
                got,
                cut(&depth, &[T, Y, X], &[0, 5, 3], &[2, 41, 190]),
                "{ctx}"
            );
            let whole = Hyperslab::new(&yx, &[0, 0], &[Y as u64, X as u64], &[1, 1]).unwrap();
            let got: Vec<i16> = a.read("elev", &whole).unwrap();
            assert_eq!(got, elev, "{ctx}");
        }
    }
}
