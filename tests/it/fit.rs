//! The `fit` filter with codec pco (design/FORMAT.md, filter 9) on whole archives: a smooth
//! air-temperature field with noise and ice sheets filled by a fill value (floats, as records)
//! and a packed short field pack with the predictor fitted to blocks, and with a double field
//! unpack byte for byte and read back (whole variables and hyperslabs) as the `netcdf3` crate
//! reads the original.

use crate::util::{cut, temp_dir};
use nc3pack::format::{Codec, Filter};
use nc3pack::{pack_file, unpack_file, Archive, Dataset, Hyperslab, PackOptions, UnpackOptions};
use std::path::Path;

const X: usize = 200;
const Y: usize = 90;
const T: usize = 3;

/// Whether point `i` of the grid is ice: the first 15 rows west of column 100 (a twelfth of
/// the grid).
fn ice(i: usize) -> bool {
    i / X < 15 && i % X < 100
}

/// A smooth field plus noise (the sum of four uniform numbers: near-Gaussian, standard
/// deviation `sd`) on the grid, `t` steps on.
fn field(t: usize, seed: u64, sd: f64) -> Vec<f64> {
    let mut x = seed;
    let mut uniform = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    (0..Y * X)
        .map(|i| {
            let (r, c) = ((i / X) as f64, (i % X + 5 * t) as f64);
            let smooth = 40.0 * (r / 60.0).sin() + 6.0 * (r / 9.0).cos() * (c / 13.0).sin();
            let noise: f64 = (0..4).map(|_| uniform()).sum();
            smooth + noise * sd * 3f64.sqrt()
        })
        .collect()
}

/// A file written by the `netcdf3` crate: `float t2m(time, y, x)` in kelvin with the ice
/// filled by 9.96921e36, `double z(y, x)` and `short packed(y, x)` (a field stored as
/// hundredths, as packed reanalysis fields are).
pub fn field_file(path: &Path) {
    let mut ds = netcdf3::DataSet::new();
    ds.add_fixed_dim("y", Y).unwrap();
    ds.add_fixed_dim("x", X).unwrap();
    ds.set_unlimited_dim("time", T).unwrap();
    ds.add_var_f32("t2m", &["time", "y", "x"]).unwrap();
    ds.add_var_f64("z", &["y", "x"]).unwrap();
    ds.add_var_i16("packed", &["y", "x"]).unwrap();
    let t2m: Vec<f32> = (0..T)
        .flat_map(|t| {
            field(t, 3 + t as u64, 0.25)
                .into_iter()
                .enumerate()
                .map(|(i, v)| {
                    if ice(i) {
                        9.96921e36
                    } else {
                        (260.0 + v) as f32
                    }
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let z: Vec<f64> = field(0, 11, 0.5)
        .iter()
        .map(|v| 5000.0 + 20.0 * v)
        .collect();
    let packed: Vec<i16> = field(0, 17, 0.3)
        .iter()
        .map(|v| (v * 100.0).round() as i16)
        .collect();
    let mut w = netcdf3::FileWriter::open(path).unwrap();
    w.set_def(&ds, netcdf3::Version::Classic, 0).unwrap();
    w.write_var_f32("t2m", &t2m).unwrap();
    w.write_var_f64("z", &z).unwrap();
    w.write_var_i16("packed", &packed).unwrap();
    w.close().unwrap();
}

#[test]
fn noisy_fields_pack_with_a_fitted_predictor_and_read_back_exactly() {
    let dir = temp_dir();
    let nc = dir.path().join("field.nc");
    field_file(&nc);
    let original = std::fs::read(&nc).unwrap();
    let mut r = netcdf3::FileReader::open(&nc).unwrap();
    let t2m = r.read_var_f32("t2m").unwrap();
    let z = r.read_var_f64("z").unwrap();
    let packed = r.read_var_i16("packed").unwrap();
    let bits32 = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let bits64 = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for max in [false, true] {
        // Blocks of 16 KiB (blocks start inside rows) and of 1 MiB.
        for (block_size, threads) in [(16u32 << 10, 1usize), (1 << 20, 2)] {
            let ctx = format!("max {max} block size {block_size}");
            let zp = dir.path().join(format!("f{max}{block_size}.nc3z"));
            let opts = if max {
                PackOptions::max()
            } else {
                PackOptions::default()
            };
            let opts = opts.with_block_size(block_size).with_threads(threads);
            pack_file(&nc, &zp, &opts).unwrap();
            let a = Archive::open(&zp).unwrap();
            let share = |name: &str| {
                let s = a.var_id(name).unwrap();
                let fit = (0..a.block_count(s))
                    .filter(|&b| {
                        let e = a.entry(s, b);
                        (e.codec, e.filter) == (Codec::Pco, Filter::Fit)
                    })
                    .count() as u64;
                (fit, a.block_count(s))
            };
            // Blocks of the temperatures (those fit makes at least 5 % smaller than zstd would:
            // in 16 KiB blocks, pco's tables weigh more and some are not).
            let (fit, all) = share("t2m");
            assert!(fit > 0, "{ctx}: t2m {fit} of {all}");
            // The packed field too, in the default preset (`max` finds other codecs smaller on
            // some blocks; the double's noise leaves fit short of 5 % below zstd).
            if !max {
                let (fit, all) = share("packed");
                assert!(fit > 0, "{ctx}: packed {fit} of {all}");
            }
            let back = dir.path().join(format!("f{max}{block_size}.nc"));
            unpack_file(&zp, &back, &UnpackOptions::default()).unwrap();
            assert!(std::fs::read(&back).unwrap() == original, "{ctx}");
            let (s, c) = ([1usize, 5, 3], [2usize, 60, 171]);
            let shape = [T as u64, Y as u64, X as u64];
            let slab = Hyperslab::new(&shape, &[1, 5, 3], &[2, 60, 171], &[1, 1, 1]).unwrap();
            let got: Vec<f32> = a.read("t2m", &slab).unwrap();
            assert_eq!(
                bits32(&got),
                bits32(&cut(&t2m, &[T, Y, X], &s, &c)),
                "{ctx}"
            );
            let yx = [Y as u64, X as u64];
            let whole = Hyperslab::new(&yx, &[0, 0], &yx, &[1, 1]).unwrap();
            let got: Vec<f64> = a.read("z", &whole).unwrap();
            assert_eq!(bits64(&got), bits64(&z), "{ctx}");
            let slab = Hyperslab::new(&yx, &[5, 11], &[40, 50], &[2, 3]).unwrap();
            let got: Vec<i16> = a.read("packed", &slab).unwrap();
            let strided: Vec<i16> = (0..40)
                .flat_map(|r| (0..50).map(move |c| (5 + 2 * r) * X + 11 + 3 * c))
                .map(|i| packed[i])
                .collect();
            assert_eq!(got, strided, "{ctx}");
        }
    }
}

#[test]
fn the_fitted_predictor_beats_the_other_numeric_filters_on_noisy_fields() {
    // The same file without pco (and so without plane, mask and fit), and with it: the
    // temperatures, whose noise no filter removes, are at least 3 % smaller with fit.
    let dir = temp_dir();
    let nc = dir.path().join("field.nc");
    field_file(&nc);
    let stored = |pco: bool| {
        let zp = dir.path().join(format!("p{pco}.nc3z"));
        let opts = PackOptions::default().with_pco(pco).with_threads(1);
        pack_file(&nc, &zp, &opts).unwrap();
        let a = Archive::open(&zp).unwrap();
        let s = a.var_id("t2m").unwrap();
        (0..a.block_count(s))
            .map(|b| u64::from(a.entry(s, b).stored_len))
            .sum::<u64>()
    };
    let (with, without) = (stored(true), stored(false));
    assert!(with * 100 < without * 97, "{with} {without}");
}
