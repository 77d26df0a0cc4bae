//! Reproducible archives: the same input and options give the same archive bytes whatever the
//! thread count and whichever encoder thread finishes first, from a file or from a pipe.

use crate::util::temp_dir;
use nc3pack::{pack_file, PackOptions};
use std::path::Path;

/// A classic file of about 6 MiB (above the size packed without the encoder pipeline) whose
/// blocks cost very different times to encode: noise, a smooth field, constant runs, and
/// record variables that interleave.
fn write(path: &Path) {
    let n = 1 << 20;
    let mut ds = netcdf3::DataSet::new();
    ds.add_fixed_dim("n", n).unwrap();
    ds.add_fixed_dim("x", 4096).unwrap();
    ds.set_unlimited_dim("time", 40).unwrap();
    ds.add_var_f32("noise", &["n"]).unwrap();
    ds.add_var_f32("smooth", &["n"]).unwrap();
    ds.add_var_i32("rec", &["time", "x"]).unwrap();
    ds.add_var_f64("rec2", &["time", "x"]).unwrap();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let noise: Vec<f32> = (0..n).map(|_| (next() >> 40) as f32).collect();
    let smooth: Vec<f32> = (0..n)
        .map(|i| {
            if i % 200_000 < 90_000 {
                0.0
            } else {
                (i as f32 * 1e-4).sin()
            }
        })
        .collect();
    let rec: Vec<i32> = (0..40 * 4096).map(|i: i32| i / 7).collect();
    let rec2: Vec<f64> = (0..40 * 4096).map(|_| (next() % 1000) as f64).collect();
    let mut w = netcdf3::FileWriter::open(path).unwrap();
    w.set_def(&ds, netcdf3::Version::Offset64Bit, 0).unwrap();
    w.write_var_f32("noise", &noise).unwrap();
    w.write_var_f32("smooth", &smooth).unwrap();
    w.write_var_i32("rec", &rec).unwrap();
    w.write_var_f64("rec2", &rec2).unwrap();
    w.close().unwrap();
}

#[test]
fn archives_are_identical_for_every_thread_count_and_from_a_pipe() {
    let dir = temp_dir();
    let nc = dir.path().join("in.nc");
    write(&nc);
    assert!(std::fs::metadata(&nc).unwrap().len() > 4 << 20);
    let pack = |threads: usize, pipe: bool| {
        let out = dir.path().join(format!("j{threads}{pipe}.nc3z"));
        let opts = PackOptions::default()
            .with_block_size(32 << 10)
            .with_threads(threads);
        if pipe {
            let f = std::fs::File::open(&nc).unwrap();
            nc3pack::pack_reader(f, &nc, &out, &opts.clone().with_force(true)).unwrap();
        } else {
            pack_file(&nc, &out, &opts.clone().with_force(true)).unwrap();
        }
        std::fs::read(&out).unwrap()
    };
    let reference = pack(1, false);
    // Several runs per thread count: the encoder threads finish in a different order each time.
    for (threads, pipe) in [
        (2, false),
        (3, false),
        (8, false),
        (2, true),
        (2, false),
        (5, true),
    ] {
        let got = pack(threads, pipe);
        assert!(
            got == reference,
            "{threads} threads{}: {} bytes, differs from 1 thread ({} bytes) at byte {:?}",
            if pipe { " from a pipe" } else { "" },
            got.len(),
            reference.len(),
            got.iter().zip(&reference).position(|(a, b)| a != b)
        );
    }
}
