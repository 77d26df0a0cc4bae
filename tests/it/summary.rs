//! `nc3pack info --manifest` and `collection::summarize_collection`: what the manifests of a
//! collection record, checked against the files on disk.

use crate::util::{nc3pack, sample};
use std::path::{Path, PathBuf};

/// Every file under `d` (recursively) whose name ends with `suffix`, hidden directories left out.
fn files(d: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![d.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                if !name.starts_with('.') {
                    todo.push(p);
                }
            } else if name.ends_with(suffix) {
                found.push(p);
            }
        }
    }
    found.sort();
    found
}

fn total_size(paths: &[PathBuf]) -> u64 {
    paths
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum()
}

fn summary_json(args: &[&Path]) -> serde_json::Value {
    let mut a: Vec<&std::ffi::OsStr> =
        vec!["info".as_ref(), "--json".as_ref(), "--manifest".as_ref()];
    a.extend(args.iter().map(|p| p.as_os_str()));
    let out = nc3pack(&a).expect(0);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}:\n{out}"))
}

#[test]
fn a_collection_packed_by_shards_then_rerun_with_delete_input_sums_what_is_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    let samples = [
        "classic_records.nc",
        "gridded_sst.nc",
        "fill_values.nc",
        "cdf5_types.nc",
    ];
    for k in 0..12 {
        let p = input.join(format!("d{}/f{k:02}.nc", k % 3));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::copy(sample(samples[k % samples.len()]), &p).unwrap();
    }
    let bad = input.join("d0/bad.nc");
    std::fs::write(&bad, b"CDF\x09 not a version that exists").unwrap();
    let originals = files(&input, ".nc");
    let good: Vec<PathBuf> = originals.iter().filter(|p| **p != bad).cloned().collect();
    let in_bytes = total_size(&good);
    let out = dir.path().join("out");
    for shard in ["0/2", "1/2"] {
        let a = ["pack", "-q", "--shard", shard, "-o"];
        let mut args: Vec<&std::ffi::OsStr> = a.iter().map(|s| s.as_ref()).collect();
        args.push(out.as_os_str());
        args.push(input.as_os_str());
        let run = nc3pack(&args).output();
        assert!(matches!(run.code, Some(0 | 1)), "{run}");
    }
    let archives = files(&out, ".nc3z");
    assert_eq!(archives.len(), 12);
    let out_bytes = total_size(&archives);

    let s = summary_json(&[&out]);
    assert_eq!(s["manifests"], 2, "{s}");
    assert_eq!(
        (s["files"].as_u64(), s["packed"].as_u64()),
        (Some(13), Some(12)),
        "{s}"
    );
    assert_eq!(s["input_bytes"].as_u64(), Some(in_bytes), "{s}");
    assert_eq!(s["output_bytes"].as_u64(), Some(out_bytes), "{s}");
    let ratio = in_bytes as f64 / out_bytes as f64;
    assert!((s["ratio"].as_f64().unwrap() - ratio).abs() < 1e-9, "{s}");
    assert_eq!(s["failed"], 1, "{s}");
    assert_eq!(s["failures"][0]["input"].as_str(), bad.to_str(), "{s}");
    assert_eq!(
        (s["deleted"].as_u64(), s["unknown_size"].as_u64()),
        (Some(0), Some(0))
    );

    // A rerun into a manifest of its own writes short `skipped` lines that refer to the first
    // runs' records: read alone, they name archives without their sizes.
    let rerun = dir.path().join("rerun.jsonl");
    let mut args: Vec<&std::ffi::OsStr> = ["pack", "-q", "--manifest"]
        .iter()
        .map(|s| s.as_ref())
        .collect();
    args.extend([
        rerun.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
        input.as_os_str(),
    ]);
    nc3pack(&args).expect(1);
    let s = summary_json(&[&rerun]);
    assert_eq!(
        (s["packed"].as_u64(), s["unknown_size"].as_u64()),
        (Some(12), Some(12)),
        "{s}"
    );
    assert_eq!(
        (s["input_bytes"].as_u64(), s["ratio"].as_f64()),
        (Some(0), None),
        "{s}"
    );
    // With the manifests holding the records, in either order, the sizes are known.
    for order in [[rerun.clone(), out.clone()], [out.clone(), rerun.clone()]] {
        let s = summary_json(&[&order[0], &order[1]]);
        assert_eq!(
            (s["packed"].as_u64(), s["unknown_size"].as_u64()),
            (Some(12), Some(0)),
            "{s}"
        );
        assert_eq!(s["input_bytes"].as_u64(), Some(in_bytes), "{s}");
    }

    // A rerun with --delete-input: short `skipped` lines that refer to the first runs' records,
    // each saying its original is deleted.
    let mut args: Vec<&std::ffi::OsStr> = ["pack", "-q", "--delete-input", "-o"]
        .iter()
        .map(|s| s.as_ref())
        .collect();
    args.push(out.as_os_str());
    args.push(input.as_os_str());
    nc3pack(&args).expect(1);
    assert_eq!(files(&input, ".nc"), vec![bad.clone()]);
    let lines: usize = files(&out.join(".nc3pack"), ".jsonl")
        .iter()
        .map(|m| std::fs::read_to_string(m).unwrap().lines().count())
        .sum();
    let s = summary_json(&[&out.join(".nc3pack")]);
    assert_eq!(
        (s["manifests"].as_u64(), s["lines"].as_u64()),
        (Some(3), Some(lines as u64))
    );
    assert_eq!(
        (s["files"].as_u64(), s["packed"].as_u64()),
        (Some(13), Some(12)),
        "{s}"
    );
    assert_eq!(s["input_bytes"].as_u64(), Some(in_bytes), "{s}");
    assert_eq!(s["deleted"], 12, "{s}");
    assert_eq!(s["failed"], 1, "{s}");

    // The text: a first line of counts, the sizes, the deletions and the failure.
    let text = nc3pack(&["info".as_ref(), "--manifest".as_ref(), out.as_os_str()]).expect(0);
    let first = format!("3 manifests, {lines} lines: 13 files, 12 packed, 1 failed");
    assert_eq!(text.stdout.lines().next(), Some(&*first), "{text}");
    assert!(text.stdout.contains("12 originals deleted"), "{text}");
    let failed = format!("failed: {}: ", bad.display());
    assert!(
        text.stdout.lines().any(|l| l.starts_with(&failed)),
        "{text}"
    );
}

#[test]
fn a_directory_without_manifests_is_an_error_that_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = nc3pack(&[
        "info".as_ref(),
        "--manifest".as_ref(),
        dir.path().as_os_str(),
    ])
    .expect(1);
    let want = format!("nc3pack: {}: no manifest found", dir.path().display());
    assert!(out.stderr.starts_with(&want), "{out}");
    assert!(out.stdout.is_empty(), "{out}");
}
