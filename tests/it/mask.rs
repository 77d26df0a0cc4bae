//! The `mask` filter with codec pco (design/FORMAT.md, filter 8) on whole archives: fields
//! with land filled by a fill value (floats in hundredths, doubles in thousandths, shorts, as
//! records too) pack with their fill values set apart, unpack byte for byte, and read back
//! (whole variables and hyperslabs) as the `netcdf3` crate reads the original.

use crate::util::{cut, temp_dir};
use nc3pack::format::{Codec, Filter};
use nc3pack::{pack_file, unpack_file, Archive, Dataset, Hyperslab, PackOptions, UnpackOptions};
use std::path::Path;

const X: usize = 180;
const Y: usize = 90;
const T: usize = 3;

/// Whether point `i` of a `Y` x `X` grid is land: a third of the rows, and a stretch of every
/// other row.
fn land(i: usize) -> bool {
    let (r, c) = (i / X, i % X);
    (r * 7919) % 100 < 33 || (r % 2 == 0 && (40..90).contains(&c))
}

/// A smooth field with some noise on the grid, `t` steps on.
fn field(t: usize, seed: u64) -> Vec<f64> {
    let mut x = seed;
    (0..Y * X)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (r, c) = ((i / X) as f64, (i % X + 3 * t) as f64);
            15.0 + 10.0 * (r / 15.0).sin() * (c / 25.0).cos() + (x % 100) as f64 / 500.0
        })
        .collect()
}

/// An ocean file written by the `netcdf3` crate: `float sst(time, y, x)` in hundredths,
/// `double ssh(y, x)` in thousandths and `short code(y, x)`, land filled with -1e34, 9.96921e36
/// and -32767 (some land points of sst hold NaN instead, which is not the fill value).
pub fn ocean_file(path: &Path) {
    let mut ds = netcdf3::DataSet::new();
    ds.add_fixed_dim("y", Y).unwrap();
    ds.add_fixed_dim("x", X).unwrap();
    ds.set_unlimited_dim("time", T).unwrap();
    ds.add_var_f32("sst", &["time", "y", "x"]).unwrap();
    ds.add_var_f64("ssh", &["y", "x"]).unwrap();
    ds.add_var_i16("code", &["y", "x"]).unwrap();
    let sst: Vec<f32> = (0..T)
        .flat_map(|t| {
            field(t, 3 + t as u64)
                .into_iter()
                .enumerate()
                .map(|(i, v)| match (land(i), i % 997) {
                    (true, 0) => f32::from_bits(0x7fc0_0042),
                    (true, _) => -1e34,
                    (false, _) => (v * 100.0).round() as i32 as f32 * 0.01,
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let ssh: Vec<f64> = field(0, 11)
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            if land(i) {
                9.969_209_968_386_869e36
            } else {
                (v * 1000.0).round() * 0.001
            }
        })
        .collect();
    let code: Vec<i16> = field(0, 17)
        .into_iter()
        .enumerate()
        .map(|(i, v)| if land(i) { -32767 } else { (v * 50.0) as i16 })
        .collect();
    let mut w = netcdf3::FileWriter::open(path).unwrap();
    w.set_def(&ds, netcdf3::Version::Classic, 0).unwrap();
    w.write_var_f32("sst", &sst).unwrap();
    w.write_var_f64("ssh", &ssh).unwrap();
    w.write_var_i16("code", &code).unwrap();
    w.close().unwrap();
}

#[test]
fn fields_with_land_pack_with_mask_and_read_back_exactly() {
    let dir = temp_dir();
    let nc = dir.path().join("ocean.nc");
    ocean_file(&nc);
    let original = std::fs::read(&nc).unwrap();
    let mut r = netcdf3::FileReader::open(&nc).unwrap();
    let sst = r.read_var_f32("sst").unwrap();
    let ssh = r.read_var_f64("ssh").unwrap();
    let code = r.read_var_i16("code").unwrap();
    let bits32 = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let bits64 = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for max in [false, true] {
        // Blocks of 16 KiB (blocks start inside rows) and of 1 MiB.
        for (block_size, threads) in [(16u32 << 10, 1usize), (1 << 20, 2)] {
            let ctx = format!("max {max} block size {block_size}");
            let z = dir.path().join(format!("o{max}{block_size}.nc3z"));
            let opts = if max {
                PackOptions::max()
            } else {
                PackOptions::default()
            };
            pack_file(
                &nc,
                &z,
                &opts.with_block_size(block_size).with_threads(threads),
            )
            .unwrap();
            let a = Archive::open(&z).unwrap();
            let uses = |name: &str| {
                let s = a.var_id(name).unwrap();
                (0..a.block_count(s)).any(|b| {
                    let e = a.entry(s, b);
                    (e.codec, e.filter) == (Codec::Pco, Filter::Mask)
                })
            };
            assert!(uses("sst") && uses("ssh"), "{ctx}: no mask");
            let back = dir.path().join(format!("o{max}{block_size}.nc"));
            unpack_file(&z, &back, &UnpackOptions::default()).unwrap();
            assert!(std::fs::read(&back).unwrap() == original, "{ctx}");
            let (s, c) = ([1usize, 7, 3], [2usize, 50, 171]);
            let shape = [T as u64, Y as u64, X as u64];
            let slab = Hyperslab::new(&shape, &[1, 7, 3], &[2, 50, 171], &[1, 1, 1]).unwrap();
            let got: Vec<f32> = a.read("sst", &slab).unwrap();
            assert_eq!(
                bits32(&got),
                bits32(&cut(&sst, &[T, Y, X], &s, &c)),
                "{ctx}"
            );
            let yx = [Y as u64, X as u64];
            let whole = Hyperslab::new(&yx, &[0, 0], &yx, &[1, 1]).unwrap();
            let got: Vec<f64> = a.read("ssh", &whole).unwrap();
            assert_eq!(bits64(&got), bits64(&ssh), "{ctx}");
            let slab = Hyperslab::new(&yx, &[5, 11], &[40, 50], &[2, 3]).unwrap();
            let got: Vec<i16> = a.read("code", &slab).unwrap();
            let strided: Vec<i16> = (0..40)
                .flat_map(|r| (0..50).map(move |c| (5 + 2 * r) * X + 11 + 3 * c))
                .map(|i| code[i])
                .collect();
            assert_eq!(got, strided, "{ctx}");
        }
    }
}
