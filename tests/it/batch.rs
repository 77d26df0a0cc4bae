//! `nc3pack pack IN... -o OUTDIR`: many files in parallel, bad ones reported at the end.

use std::path::{Path, PathBuf};
use std::process::Command;

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("samples")
}

#[test]
fn packs_a_directory_tree_and_continues_past_bad_files() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir_all(input.join("sub")).unwrap();
    let good = ["classic_records.nc", "cdf5_types.nc", "scalars.nc"];
    for g in good {
        std::fs::copy(samples().join(g), input.join(g)).unwrap();
    }
    std::fs::copy(
        samples().join("fill_values.nc"),
        input.join("sub/fill_values.nc"),
    )
    .unwrap();
    std::fs::copy(samples().join("bad/hdf5.nc"), input.join("sub/hdf5.nc")).unwrap();
    std::fs::write(input.join("notes.txt"), "not a .nc file: skipped").unwrap();
    let out = dir.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_nc3pack"))
        .arg("pack")
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("hdf5.nc: not a netCDF-3 file"), "{err}");
    assert!(err.contains("packed 4 of 5 files"), "{err}");
    assert!(
        err.lines().last().unwrap().contains("1 of 5 files failed"),
        "{err}"
    );
    for g in good {
        let z = out.join(g).with_extension("nc3z");
        let back = dir.path().join("back.nc");
        nc3pack::unpack_file(&z, &back, true, 1, &|_| {}).unwrap();
        assert_eq!(
            std::fs::read(&back).unwrap(),
            std::fs::read(samples().join(g)).unwrap(),
            "{g}"
        );
    }
    assert!(out.join("sub/fill_values.nc3z").exists());
    assert!(!out.join("sub/hdf5.nc3z").exists());
    let leftovers: Vec<_> = walk(&out)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(".nc3pack-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // A second run refuses existing outputs (without -f) but still reports every file.
    let o = Command::new(env!("CARGO_BIN_EXE_nc3pack"))
        .args(["pack", "-q"])
        .arg(input.join("scalars.nc"))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("exists"));
}

#[test]
fn two_inputs_that_would_write_one_archive_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for d in [&a, &b] {
        std::fs::create_dir(d).unwrap();
        std::fs::copy(samples().join("scalars.nc"), d.join("x.nc")).unwrap();
    }
    let out = dir.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_nc3pack"))
        .arg("pack")
        .arg(a.join("x.nc"))
        .arg(b.join("x.nc"))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("would be packed here"));
    assert!(!out.join("x.nc3z").exists());
}

#[test]
fn a_batch_of_several_commit_groups_writes_every_archive_as_a_single_pack_would() {
    // More files than one commit group (256), in two output directories: every group must be
    // synced and renamed, and each archive must hold the bytes `pack_file` writes for its input.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    let names = ["classic_records.nc", "scalars.nc", "fill_values.nc"];
    let mut n = 0;
    for sub in ["a", "b"] {
        std::fs::create_dir_all(input.join(sub)).unwrap();
        for k in 0..300 {
            let name = names[k % names.len()];
            std::fs::copy(
                samples().join(name),
                input.join(sub).join(format!("{k:03}.nc")),
            )
            .unwrap();
            n += 1;
        }
    }
    let out = dir.path().join("out");
    let jobs = nc3pack::batch::plan(std::slice::from_ref(&input), &out).unwrap();
    assert_eq!(jobs.len(), n);
    let opts = nc3pack::PackOptions {
        threads: 2,
        ..Default::default()
    };
    let reported = std::sync::atomic::AtomicUsize::new(0);
    let results = nc3pack::batch::pack_all(&jobs, &opts, 2, false, &|k| {
        reported.fetch_max(k, std::sync::atomic::Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!(results.len(), n);
    assert_eq!(reported.into_inner(), n);
    // What `pack_file` writes for each sample (the archive does not depend on the file's name).
    let per_file = nc3pack::PackOptions {
        threads: 1,
        ..opts.clone()
    };
    let single: Vec<Vec<u8>> = names
        .iter()
        .map(|name| {
            let z = dir.path().join(name).with_extension("nc3z");
            nc3pack::pack_file(&samples().join(name), &z, &per_file, false, &|_| {}).unwrap();
            std::fs::read(z).unwrap()
        })
        .collect();
    for (job, r) in jobs.iter().zip(&results) {
        let summary = r.as_ref().unwrap();
        let k: usize = job
            .input
            .file_stem()
            .unwrap()
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            std::fs::read(&job.output).unwrap(),
            single[k % names.len()],
            "{}",
            job.output.display()
        );
        assert_eq!(summary.output_len, single[k % names.len()].len() as u64);
    }
    let files = walk(&out);
    assert_eq!(files.len(), n, "{files:?}");
    assert!(files
        .iter()
        .all(|p| !p.to_string_lossy().contains(".nc3pack-")));
}

fn walk(d: &Path) -> Vec<PathBuf> {
    let mut v = vec![];
    for e in std::fs::read_dir(d).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            v.extend(walk(&p));
        } else {
            v.push(p);
        }
    }
    v
}
