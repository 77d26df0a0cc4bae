//! The `context` codec (design/FORMAT.md, codec 6) on whole archives: the `max` preset uses it
//! on noisy smooth fields whose noise varies from place to place, the default preset never
//! does, and such archives unpack byte for byte and read back as the `netcdf3` crate reads the
//! original.

use crate::util::{nc3pack, preset_options, temp_dir};
use nc3pack::format::{Codec, Filter};
use nc3pack::{pack_file, unpack_file, Archive, Dataset, Hyperslab, UnpackOptions};
use std::path::Path;

/// Rows and columns of the fields the tests make with [`field_file`].
pub const NY: usize = 180;
pub const NX: usize = 360;

/// A noisy smooth field of `ny` rows of `nx`: a gradient and waves plus noise that is ten times larger on "land" (a
/// band of columns) than on "sea", with a block of fill values. `float t(y, x)`, the same in
/// `double d(y, x)`, and in whole hundredths as `short h(y, x)`. Returns t, d and h.
pub fn field_file(path: &Path, ny: usize, nx: usize) -> (Vec<f32>, Vec<f64>, Vec<i16>) {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut uniform = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut d = Vec::with_capacity(ny * nx);
    for r in 0..ny {
        for c in 0..nx {
            let (lat, lon) = (r as f64 / ny as f64, c as f64 / nx as f64);
            let smooth = 280.0 + 30.0 * lat + 3.0 * (6.0 * std::f64::consts::TAU * lon).sin();
            // A sum of four uniforms: near-Gaussian noise, ten times larger on land.
            let noise: f64 = (0..4).map(|_| uniform() - 0.5).sum();
            let land = (nx * 5 / 18..nx * 11 / 18).contains(&c);
            let v = smooth + noise * if land { 2.0 } else { 0.2 };
            let ice = r < ny / 9 && c < nx / 4;
            d.push(if ice { 9.969_209_968_386_869e36 } else { v });
        }
    }
    let t: Vec<f32> = d.iter().map(|&v| v as f32).collect();
    let h: Vec<i16> = d
        .iter()
        .map(|&v| {
            if v > 1e30 {
                -32767
            } else {
                ((v - 280.0) * 100.0) as i16
            }
        })
        .collect();
    let mut ds = netcdf3::DataSet::new();
    ds.add_fixed_dim("y", ny).unwrap();
    ds.add_fixed_dim("x", nx).unwrap();
    ds.add_var_f32("t", &["y", "x"]).unwrap();
    ds.add_var_f64("d", &["y", "x"]).unwrap();
    ds.add_var_i16("h", &["y", "x"]).unwrap();
    let mut w = netcdf3::FileWriter::open(path).unwrap();
    w.set_def(&ds, netcdf3::Version::Offset64Bit, 0).unwrap();
    w.write_var_f32("t", &t).unwrap();
    w.write_var_f64("d", &d).unwrap();
    w.write_var_i16("h", &h).unwrap();
    w.close().unwrap();
    (t, d, h)
}

/// Elements [3, 7] + [4, 3] · [i, j] (i < 40, j < 100) of a field of [`field_file`].
fn strided<T: Copy>(v: &[T]) -> Vec<T> {
    (0..40)
        .flat_map(|i| (0..100).map(move |j| v[(3 + 4 * i) * NX + 7 + 3 * j]))
        .collect()
}

/// Blocks of variable `name` with codec context.
fn context_blocks(a: &Archive, name: &str) -> usize {
    let s = a.var_id(name).unwrap();
    (0..a.block_count(s))
        .filter(|&b| {
            let e = a.entry(s, b);
            assert!(e.codec != Codec::Context || e.filter == Filter::None);
            e.codec == Codec::Context
        })
        .count()
}

#[test]
fn max_uses_context_on_noisy_fields_and_reads_back_exactly() {
    let dir = temp_dir();
    let nc = dir.path().join("field.nc");
    let (t, d, h) = field_file(&nc, NY, NX);
    let original = std::fs::read(&nc).unwrap();
    // Whole variables in one block each (the `max` preset's), blocks of 64 KiB (rows cut
    // across blocks: "up" restarts in each), and the default preset, which never uses it.
    for (max, block_size, threads) in [(true, None, 2), (true, Some(64 << 10), 1), (false, None, 2)]
    {
        let ctx = format!("max {max} block size {block_size:?}");
        let z = dir.path().join(format!("f{max}{block_size:?}.nc3z"));
        pack_file(&nc, &z, &preset_options(max, block_size, threads)).unwrap();
        let a = Archive::open(&z).unwrap();
        let info = nc3pack(&["info".as_ref(), z.as_os_str()]).expect(0).stdout;
        let all = context_blocks(&a, "t") + context_blocks(&a, "d") + context_blocks(&a, "h");
        if max {
            // With whole variables, the float and the double; in small blocks, where the
            // coder has less to learn from, some blocks.
            if block_size.is_none() {
                assert!(context_blocks(&a, "t") > 0, "{ctx}: {info}");
                assert!(context_blocks(&a, "d") > 0, "{ctx}: {info}");
            }
            assert!(all > 0, "{ctx}: {info}");
            assert!(info.contains("\"context\""), "{ctx}: {info}");
        } else {
            assert_eq!(all, 0, "{ctx}: {info}");
        }
        // Byte for byte, verified, and values as generated (strided, across blocks).
        let back = dir.path().join(format!("f{max}{block_size:?}.nc"));
        unpack_file(&z, &back, &UnpackOptions::default()).unwrap();
        assert!(std::fs::read(&back).unwrap() == original, "{ctx}");
        nc3pack(&["verify".as_ref(), z.as_os_str()]).expect(0);
        let slab = Hyperslab::new(&[NY as u64, NX as u64], &[3, 7], &[40, 100], &[4, 3]).unwrap();
        let got: Vec<f32> = a.read("t", &slab).unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&strided(&t)), "{ctx}");
        let got: Vec<f64> = a.read("d", &slab).unwrap();
        let want = strided(&d);
        assert!(
            got.iter()
                .map(|v| v.to_bits())
                .eq(want.iter().map(|v| v.to_bits())),
            "{ctx}"
        );
        let got: Vec<i16> = a.read("h", &slab).unwrap();
        let want = strided(&h);
        assert_eq!(got, want, "{ctx}");
    }
}

/// The netcdf3 crate, an independent reader, reads what `unpack` restores from a `max`
/// archive with context blocks exactly as it reads the original.
#[test]
fn the_netcdf3_crate_reads_the_unpacked_field_as_the_original() {
    let dir = temp_dir();
    let nc = dir.path().join("field.nc");
    let (t, d, h) = field_file(&nc, NY, NX);
    let z = dir.path().join("field.nc3z");
    nc3pack(&[
        "pack".as_ref(),
        "--level".as_ref(),
        "max".as_ref(),
        nc.as_os_str(),
        z.as_os_str(),
    ])
    .expect(0);
    let back = dir.path().join("back.nc");
    nc3pack(&["unpack".as_ref(), z.as_os_str(), back.as_os_str()]).expect(0);
    let mut r = netcdf3::FileReader::open(&back).unwrap();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&r.read_var_f32("t").unwrap()), bits(&t));
    let got = r.read_var_f64("d").unwrap();
    assert!(got
        .iter()
        .map(|x| x.to_bits())
        .eq(d.iter().map(|x| x.to_bits())));
    assert_eq!(r.read_var_i16("h").unwrap(), h);
}
