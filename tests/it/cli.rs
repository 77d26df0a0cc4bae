//! The `nc3pack` binary as a user runs it: commands, exit codes, messages, output safety, and
//! what it does with malformed inputs and damaged archives.

use crate::util::{assert_text_eq, nc3pack, sample, temp_dir, BIN};
use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

/// Lead, footer and frame header sizes of the archive format (design/FORMAT.md).
const LEAD_LEN: usize = 64;
const FOOTER_LEN: usize = 32;
const FRAME_HEADER_LEN: usize = 36;

/// Runs the binary with `args`; returns (exit code, stdout, stderr).
fn run<S: AsRef<OsStr>>(args: &[S]) -> (i32, String, String) {
    let o = nc3pack(args).output();
    let code = o.code.unwrap_or_else(|| panic!("killed by a signal:\n{o}"));
    (code, o.stdout, o.stderr)
}

fn p(path: &Path) -> &OsStr {
    path.as_os_str()
}

/// Asserts `stderr` is exactly one error line naming `path`, and no panic.
fn assert_one_line_error(stderr: &str, path: &Path) {
    assert!(!stderr.contains("panicked"), "panic: {stderr}");
    assert!(stderr.starts_with("nc3pack: "), "{stderr:?}");
    assert!(stderr.ends_with('\n'), "{stderr:?}");
    assert_eq!(stderr.lines().count(), 1, "not one line: {stderr:?}");
    assert!(
        stderr.contains(&*path.to_string_lossy()),
        "does not name {}: {stderr:?}",
        path.display()
    );
}

/// Names of nc3pack's temporary files left in `dir`.
fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".nc3pack-"))
        .collect()
}

/// Bytes and modification time of a file, to check it was not touched.
fn snapshot(path: &Path) -> (Vec<u8>, SystemTime) {
    let bytes = std::fs::read(path).unwrap();
    let mtime = std::fs::metadata(path).unwrap().modified().unwrap();
    (bytes, mtime)
}

/// Packs `input` to `dir/name` quietly with extra `opts`; panics on failure.
fn pack(input: &Path, dir: &Path, name: &str, opts: &[&str]) -> PathBuf {
    let out = dir.join(name);
    let mut args: Vec<&OsStr> = vec![OsStr::new("pack"), OsStr::new("-q")];
    args.extend(opts.iter().map(OsStr::new));
    args.push(p(input));
    args.push(p(&out));
    nc3pack(&args).expect(0);
    out
}

/// Unpacks `archive` to `out` quietly and asserts the result equals `original`.
fn unpack_matches(archive: &Path, out: &Path, original: &Path) {
    let o = nc3pack(&[OsStr::new("unpack"), "-q".as_ref(), p(archive), p(out)]).expect(0);
    assert_eq!((o.stdout.as_str(), o.stderr.as_str()), ("", ""), "{o}");
    assert!(
        std::fs::read(out).unwrap() == std::fs::read(original).unwrap(),
        "{} does not restore {} byte for byte",
        archive.display(),
        original.display()
    );
}

fn info_json(file: &Path) -> serde_json::Value {
    let out = nc3pack(&[OsStr::new("info"), p(file), "--json".as_ref()])
        .expect(0)
        .stdout;
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("info --json is not JSON ({e}): {out}"))
}

fn u64_le(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn u32_le(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// Where the parts of an archive are.
struct Parts {
    /// Payload bytes of the header frame that follows the lead.
    header_stored: usize,
    index_offset: usize,
    /// (frame offset, stored_len) of every indexed block, in index order.
    frames: Vec<(usize, usize)>,
}

fn parts(a: &[u8]) -> Parts {
    let header_stored = u32_le(a, LEAD_LEN + 4) as usize;
    let footer = a.len() - FOOTER_LEN;
    let index_offset = u64_le(a, footer) as usize;
    assert_eq!(&a[index_offset..index_offset + 4], b"N3ZI");
    let n = u64_le(a, index_offset + 8) as usize;
    let frames = (0..n)
        .map(|i| {
            let e = index_offset + 16 + 16 * i;
            (u64_le(a, e) as usize, u32_le(a, e + 8) as usize)
        })
        .collect();
    Parts {
        header_stored,
        index_offset,
        frames,
    }
}

const ROUNDTRIP_SAMPLES: [&str; 3] = ["classic_records.nc", "cdf5_types.nc", "gridded_sst.nc"];

// ---------------------------------------------------------------------------------------------
// 1. Commands and options

#[test]
fn default_command_and_pack_spelling_both_roundtrip() {
    let dir = temp_dir();
    for name in ROUNDTRIP_SAMPLES {
        let input = sample(name);
        let a = dir.path().join(format!("{name}.default.nc3z"));
        let b = dir.path().join(format!("{name}.pack.nc3z"));
        let (code, out, err) = run(&[OsStr::new("-j"), "1".as_ref(), p(&input), p(&a)]);
        assert_eq!((code, out.as_str()), (0, ""), "{err}");
        let (code, out, err) = run(&[
            OsStr::new("pack"),
            "-j".as_ref(),
            "1".as_ref(),
            p(&input),
            p(&b),
        ]);
        assert_eq!((code, out.as_str()), (0, ""), "{err}");
        // `nc3pack IN OUT` is `nc3pack pack IN OUT`: with one thread, the same archive.
        assert!(
            std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(),
            "{name}: default command and `pack` made different archives"
        );
        unpack_matches(&a, &dir.path().join(format!("{name}.a.nc")), &input);
        unpack_matches(&b, &dir.path().join(format!("{name}.b.nc")), &input);
    }
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn codecs_and_block_size_roundtrip() {
    let dir = temp_dir();
    let cases: [(&str, &[&str]); 5] = [
        ("deflate", &["--codec", "deflate"]),
        ("none", &["--codec", "none"]),
        ("zstd", &["--codec", "zstd", "--level", "1"]),
        ("bs4k", &["--block-size", "4KiB"]),
        ("noshuffle", &["--filter", "none", "--block-size", "65536"]),
    ];
    for name in ROUNDTRIP_SAMPLES {
        let input = sample(name);
        for (tag, opts) in cases {
            let a = pack(&input, dir.path(), &format!("{name}.{tag}.nc3z"), opts);
            unpack_matches(&a, &dir.path().join(format!("{name}.{tag}.nc")), &input);
            let v = info_json(&a);
            let arch = &v["archive"];
            let codecs: BTreeSet<String> = arch["streams"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|s| s["blocks_by_codec"].as_object().unwrap().keys().cloned())
                .collect();
            match tag {
                // Blocks that do not shrink are stored with codec none, and blocks of one
                // repeated value as constant, whatever was asked (except none: raw throughout);
                // numeric blocks use pco where it wins, whatever the block codec.
                "deflate" => assert!(codecs
                    .iter()
                    .all(|c| ["deflate", "none", "constant", "pco"].contains(&c.as_str()))),
                "none" => assert_eq!(codecs, BTreeSet::from(["none".to_string()]), "{name}"),
                "zstd" => assert!(codecs
                    .iter()
                    .all(|c| ["zstd", "none", "constant", "pco"].contains(&c.as_str()))),
                "bs4k" => assert_eq!(arch["block_size"], 4096, "{name}"),
                _ => assert_eq!(arch["block_size"], 65536, "{name}"),
            }
        }
    }
    // On the large sample the codecs really are used (where pco does not take the blocks:
    // its field with land takes mask and pco), and 4 KiB blocks make many blocks.
    let input = sample("gridded_sst.nc");
    let opts = ["--codec", "deflate", "--no-pco"];
    let a = pack(&input, dir.path(), "deflate_no_pco.nc3z", &opts);
    unpack_matches(&a, &dir.path().join("deflate_no_pco.nc"), &input);
    let v = info_json(&a);
    assert!(v["archive"]["streams"][3]["blocks_by_codec"]["deflate"].as_u64() > Some(0));
    let v = info_json(&dir.path().join("gridded_sst.nc.bs4k.nc3z"));
    assert!(v["archive"]["blocks"].as_u64().unwrap() >= 6_220_800 / 4096);
    assert!(leftovers(dir.path()).is_empty());
}

/// `info` counts, per stream and for the archive, how often each codec and filter encoded a
/// block ("codec+filter", or the codec alone without a filter): checked against counts taken
/// from the archive's bytes by the layout design/FORMAT.md documents (frames hopped from the
/// first after the header frame up to the index; constant blocks from the index's flags).
#[test]
fn info_counts_each_codec_and_filter_as_the_archive_records_them() {
    use std::collections::BTreeMap;
    const CODECS: [&str; 6] = ["none", "zstd", "deflate", "constant", "pco", "lzma"];
    let dir = temp_dir();
    // Small blocks so that several choices win: pco and zstd on the station records, the
    // filters, pco with mask and constant blocks (land) on the gridded field.
    let cases: [(&str, &[&str]); 3] = [
        ("obs_points.nc", &["--block-size", "16KiB"]),
        ("gridded_sst.nc", &["--block-size", "64KiB"]),
        // The full form: the frames are read at the index's offsets below.
        (
            "classic_records.nc",
            &["--block-size", "16", "--no-compact"],
        ),
    ];
    let mut seen = BTreeSet::new();
    for (name, opts) in cases {
        let z = pack(&sample(name), dir.path(), &format!("{name}.nc3z"), opts);
        let b = std::fs::read(&z).unwrap();
        let v = info_json(&z);
        let streams = v["archive"]["streams"].as_array().unwrap();
        // Stream order: the variables, the residual bytes, the early and late shared streams.
        let nvars = streams.len() - 3;
        let at = |id: u32| match id {
            0xFFFF_FFFF => nvars,
            0xFFFF_FFFC => nvars + 1,
            0xFFFF_FFFB => nvars + 2,
            id => id as usize,
        };
        let mut want = vec![BTreeMap::<String, u64>::new(); streams.len()];
        let key = |codec: u8, filter: u8| match filter {
            0 => CODECS[usize::from(codec)].to_string(),
            f => format!(
                "{}+{}",
                CODECS[usize::from(codec)],
                nc3pack::format::Filter::from_id(f).map_or("?", |f| f.name())
            ),
        };
        // Frames: the header frame at 64, then each `36 + stored_len` bytes on, to the index.
        let footer = b.len() - 32;
        let index = u64_le(&b, footer) as usize;
        let mut pos = 64;
        for _ in 0..b.len() / 36 {
            if pos >= index {
                break;
            }
            assert_eq!(&b[pos..pos + 4], b"\xb7N3B", "{name}: frame at {pos}");
            let stream = u32_le(&b, pos + 12);
            if stream != 0xFFFF_FFFD && stream != 0xFFFF_FFFA {
                *want[at(stream)]
                    .entry(key(b[pos + 24], b[pos + 25]))
                    .or_default() += 1;
            }
            pos += 36 + u32_le(&b, pos + 4) as usize;
        }
        assert_eq!(pos, index, "{name}: frames do not end at the index");
        // Constant blocks: index entries (ordered by stream, then block) with flag bit 1.
        let mut entry = index + 16;
        for (s, st) in streams.iter().enumerate() {
            for _ in 0..st["blocks"].as_u64().unwrap() {
                if u16::from_le_bytes([b[entry + 14], b[entry + 15]]) & 2 != 0 {
                    *want[s].entry("constant".into()).or_default() += 1;
                }
                entry += 16;
            }
        }
        assert_eq!(entry, index + 16 + 16 * u64_le(&b, index + 8) as usize);
        let mut total = BTreeMap::<String, u64>::new();
        for (s, st) in streams.iter().enumerate() {
            let got: BTreeMap<String, u64> =
                serde_json::from_value(st["blocks_by_method"].clone()).unwrap();
            assert_eq!(got, want[s], "{name}: stream {}", st["name"]);
            for (k, n) in &want[s] {
                *total.entry(k.clone()).or_default() += n;
                seen.insert(k.clone());
            }
        }
        let got: BTreeMap<String, u64> =
            serde_json::from_value(v["archive"]["blocks_by_method"].clone()).unwrap();
        assert_eq!(got, total, "{name}: archive");
        // The text output shows each stream's counts.
        let text = nc3pack(&[OsStr::new("info"), p(&z)]).expect(0).stdout;
        let first = streams.iter().find(|s| s["stored_bytes"] != 0).unwrap();
        let line = format!(
            "//   {}: {} blocks of",
            first["name"].as_str().unwrap(),
            first["blocks"]
        );
        let shown = text.lines().find(|l| l.starts_with(&line)).unwrap();
        assert!(
            shown.ends_with(&first["blocks_by_method"].to_string()),
            "{name}: {shown}"
        );
        assert!(text.contains(&format!(
            "// blocks by codec+filter: {}",
            v["archive"]["blocks_by_method"]
        )));
    }
    // The test sees pco, zstd with filters and constant blocks win.
    assert!(
        seen.contains("pco") && seen.contains("constant"),
        "{seen:?}"
    );
    assert!(
        seen.iter().filter(|k| k.starts_with("zstd+")).count() >= 2,
        "{seen:?}"
    );
}

/// Names of the filters an archive's index records.
fn filters_used(archive: &Path) -> BTreeSet<&'static str> {
    let a = nc3pack::Archive::open(archive).unwrap();
    (0..a.stream_count())
        .flat_map(|s| (0..a.block_count(s)).map(move |b| (s, b)))
        .map(|(s, b)| a.entry(s, b).filter.name())
        .collect()
}

#[test]
fn every_filter_option_roundtrips_and_is_recorded() {
    let dir = temp_dir();
    for name in ROUNDTRIP_SAMPLES {
        let input = sample(name);
        for filter in [
            "none",
            "shuffle",
            "bytedelta",
            "delta",
            "zzdelta",
            "lorenzo",
        ] {
            // lorenzo is for float variables of 2+ dimensions; other blocks take the 1-D
            // difference (zzdelta, or bytedelta for one-byte elements).
            let also: &[&str] = if filter == "lorenzo" {
                &["none", "zzdelta", "bytedelta"]
            } else {
                &["none"]
            };
            let a = pack(
                &input,
                dir.path(),
                &format!("{name}.{filter}.nc3z"),
                &["--filter", filter],
            );
            unpack_matches(&a, &dir.path().join(format!("{name}.{filter}.nc")), &input);
            // Blocks stored raw or as one constant element record filter none.
            let used = filters_used(&a);
            assert!(
                used.iter().all(|f| *f == filter || also.contains(f)),
                "{name} --filter {filter}: {used:?}"
            );
            if name == "gridded_sst.nc" {
                assert!(used.contains(filter), "{name} --filter {filter}: {used:?}");
            }
        }
    }
    // The automatic choice takes mask (with pco) for the smooth, noisy float field with land,
    // and without pco zzdelta.
    let a = pack(&sample("gridded_sst.nc"), dir.path(), "auto.nc3z", &[]);
    assert!(filters_used(&a).contains("mask"));
    let a = pack(
        &sample("gridded_sst.nc"),
        dir.path(),
        "no_pco.nc3z",
        &["--no-pco"],
    );
    assert!(filters_used(&a).contains("zzdelta"));
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn quiet_prints_nothing_and_default_prints_a_summary_line() {
    let dir = temp_dir();
    let input = sample("classic_records.nc");
    let a = dir.path().join("a.nc3z");
    let (code, out, err) = run(&[OsStr::new("pack"), "-q".as_ref(), p(&input), p(&a)]);
    assert_eq!((code, out.as_str(), err.as_str()), (0, "", ""));
    let (code, out, err) = run(&[
        OsStr::new("unpack"),
        "--quiet".as_ref(),
        p(&a),
        p(&dir.path().join("q.nc")),
    ]);
    assert_eq!((code, out.as_str(), err.as_str()), (0, "", ""));

    let b = dir.path().join("b.nc3z");
    let (code, out, err) = run(&[p(&input), p(&b)]);
    assert_eq!((code, out.as_str()), (0, ""));
    assert_eq!(err.lines().count(), 1, "{err:?}");
    assert!(err.contains("ratio"), "{err:?}");
    assert!(err.contains(&*input.to_string_lossy()) && err.contains(&*b.to_string_lossy()));
    assert!(err.contains(", 1 block, "), "{err:?}");

    let c = dir.path().join("c.nc");
    let (code, out, err) = run(&[OsStr::new("unpack"), p(&b), p(&c)]);
    assert_eq!((code, out.as_str()), (0, ""));
    assert_eq!(err.lines().count(), 1, "{err:?}");
    assert!(err.contains("restored and verified"), "{err:?}");
    assert!(std::fs::read(&c).unwrap() == std::fs::read(&input).unwrap());
}

// ---------------------------------------------------------------------------------------------
// 2. Output safety

#[test]
fn existing_output_is_refused_without_force_and_replaced_with_it() {
    let dir = temp_dir();
    let input = sample("classic_records.nc");
    let out = dir.path().join("out.nc3z");
    std::fs::write(&out, b"precious").unwrap();

    for cmd in [&["pack"][..], &[][..]] {
        let mut args: Vec<&OsStr> = cmd.iter().map(OsStr::new).collect();
        args.extend([p(&input), p(&out)]);
        let (code, stdout, err) = run(&args);
        assert_eq!((code, stdout.as_str()), (1, ""));
        assert_one_line_error(&err, &out);
        assert!(err.contains("exists") && err.contains("--force"), "{err}");
        assert_eq!(std::fs::read(&out).unwrap(), b"precious");
    }

    let (code, _, err) = run(&[
        OsStr::new("pack"),
        "-q".as_ref(),
        "-f".as_ref(),
        p(&input),
        p(&out),
    ]);
    assert_eq!(code, 0, "{err}");
    unpack_matches(&out, &dir.path().join("r.nc"), &input);

    // The same for unpack.
    let restored = dir.path().join("restored.nc");
    std::fs::write(&restored, b"precious").unwrap();
    let (code, _, err) = run(&[OsStr::new("unpack"), p(&out), p(&restored)]);
    assert_eq!(code, 1);
    assert_one_line_error(&err, &restored);
    assert!(err.contains("exists") && err.contains("--force"), "{err}");
    assert_eq!(std::fs::read(&restored).unwrap(), b"precious");
    let (code, _, err) = run(&[
        OsStr::new("unpack"),
        "-q".as_ref(),
        "--force".as_ref(),
        p(&out),
        p(&restored),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read(&restored).unwrap() == std::fs::read(&input).unwrap());
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn writing_onto_the_input_is_refused_even_with_force() {
    let dir = temp_dir();
    let nc = dir.path().join("in.nc");
    std::fs::copy(sample("classic_records.nc"), &nc).unwrap();
    let hard = dir.path().join("hard.nc");
    std::fs::hard_link(&nc, &hard).unwrap();
    let soft = dir.path().join("soft.nc");
    std::os::unix::fs::symlink("in.nc", &soft).unwrap();
    let before = snapshot(&nc);

    for out in [&nc, &hard, &soft] {
        for force in [false, true] {
            let mut args = vec![OsStr::new("pack")];
            if force {
                args.push("-f".as_ref());
            }
            args.extend([p(&nc), p(out)]);
            let (code, stdout, err) = run(&args);
            assert_eq!((code, stdout.as_str()), (1, ""), "{err}");
            assert_one_line_error(&err, out);
            if force {
                assert!(err.contains("output is the input file"), "{err}");
            } else {
                assert!(err.contains("exists"), "{err}");
            }
            assert!(
                snapshot(&nc) == before,
                "input modified by pack onto {}",
                out.display()
            );
        }
    }

    let archive = pack(&nc, dir.path(), "a.nc3z", &[]);
    let abefore = snapshot(&archive);
    let (code, _, err) = run(&[
        OsStr::new("unpack"),
        "-f".as_ref(),
        p(&archive),
        p(&archive),
    ]);
    assert_eq!(code, 1);
    assert_one_line_error(&err, &archive);
    assert!(err.contains("output is the input file"), "{err}");
    assert!(snapshot(&archive) == abefore);
    assert!(leftovers(dir.path()).is_empty());

    // Through the standard streams: `pack -f - in.nc < in.nc` and
    // `unpack a.nc3z - >> a.nc3z` (a file, not a pipe, on the stream).
    let status = |args: &[&OsStr], stdin: &Path, stdout: Option<&Path>| {
        let out = match stdout {
            Some(o) => {
                std::process::Stdio::from(std::fs::OpenOptions::new().append(true).open(o).unwrap())
            }
            None => std::process::Stdio::null(),
        };
        let o = std::process::Command::new(BIN)
            .args(args)
            .stdin(std::fs::File::open(stdin).unwrap())
            .stdout(out)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, err) = status(
        &["pack".as_ref(), "-f".as_ref(), "-".as_ref(), p(&soft)],
        &nc,
        None,
    );
    assert_eq!(code, Some(1), "{err}");
    assert_one_line_error(&err, &soft);
    assert!(err.contains("output is the input file"), "{err}");
    let (code, err) = status(
        &["unpack".as_ref(), p(&archive), "-".as_ref()],
        &nc,
        Some(&archive),
    );
    assert_eq!(code, Some(1), "{err}");
    assert_one_line_error(&err, &archive);
    assert!(err.contains("standard output is this archive"), "{err}");
    assert!(snapshot(&nc) == before && snapshot(&archive) == abefore);
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn output_that_is_a_directory_or_in_a_missing_directory_fails_cleanly() {
    let dir = temp_dir();
    let input = sample("classic_records.nc");
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let (code, _, err) = run(&[OsStr::new("pack"), "-f".as_ref(), p(&input), p(&sub)]);
    assert_eq!(code, 1);
    assert_one_line_error(&err, &sub);
    assert!(err.contains("directory"), "{err}");
    assert!(sub.is_dir() && std::fs::read_dir(&sub).unwrap().next().is_none());

    let missing = dir.path().join("nope").join("out.nc3z");
    let (code, _, err) = run(&[OsStr::new("pack"), p(&input), p(&missing)]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("nc3pack: ") && err.contains(&*missing.to_string_lossy()),
        "{err}"
    );
    assert!(!err.contains("panicked"));
    assert!(!missing.exists());
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn errors_leave_no_output_and_no_temporary_files() {
    let dir = temp_dir();
    let bad = dir.path().join("bad.nc");
    std::fs::copy(sample("bad/var_beyond_eof.nc"), &bad).unwrap();
    let before = snapshot(&bad);
    let out = dir.path().join("out.nc3z");
    let (code, _, err) = run(&[OsStr::new("pack"), p(&bad), p(&out)]);
    assert_eq!(code, 1);
    assert_one_line_error(&err, &bad);
    assert!(!out.exists());

    // With --force over an existing file, a failure leaves that file alone.
    std::fs::write(&out, b"precious").unwrap();
    let (code, _, err) = run(&[OsStr::new("pack"), "-f".as_ref(), p(&bad), p(&out)]);
    assert_eq!(code, 1);
    assert_one_line_error(&err, &bad);
    assert_eq!(std::fs::read(&out).unwrap(), b"precious");
    std::fs::remove_file(&out).unwrap();

    // A missing input.
    let missing = dir.path().join("missing.nc");
    let (code, _, err) = run(&[OsStr::new("pack"), p(&missing), p(&out)]);
    assert_eq!(code, 1);
    assert_one_line_error(&err, &missing);
    assert!(err.contains("No such file"), "{err}");
    assert!(!out.exists());

    // A directory as input.
    let (code, _, err) = run(&[OsStr::new("pack"), p(dir.path()), p(&out)]);
    assert_eq!(code, 1);
    assert_one_line_error(&err, dir.path());
    assert!(!out.exists());

    // Unpacking something that is not an archive.
    let (code, _, err) = run(&[OsStr::new("unpack"), p(&bad), p(&out)]);
    assert_eq!(code, 1);
    assert_one_line_error(&err, &bad);
    assert!(!out.exists());

    assert!(snapshot(&bad) == before, "input was modified");
    assert_eq!(leftovers(dir.path()), Vec::<String>::new());
}

#[test]
fn inputs_are_never_modified() {
    let dir = temp_dir();
    let nc = dir.path().join("in.nc");
    std::fs::copy(sample("gridded_sst.nc"), &nc).unwrap();
    let nc_before = snapshot(&nc);
    let archive = pack(&nc, dir.path(), "a.nc3z", &["--block-size", "256KiB"]);
    assert!(snapshot(&nc) == nc_before);
    let a_before = snapshot(&archive);
    unpack_matches(&archive, &dir.path().join("out.nc"), &nc);
    assert!(snapshot(&archive) == a_before);
    for f in [&nc, &archive] {
        let (code, _, err) = run(&[OsStr::new("info"), p(f)]);
        assert_eq!(code, 0, "{err}");
        info_json(f);
    }
    // Packing again with --force over an existing archive does not touch the input either.
    pack(&nc, dir.path(), "a.nc3z", &["-f", "--codec", "none"]);
    assert!(snapshot(&nc) == nc_before);
    assert!(
        snapshot(&archive) != a_before,
        "-f did not replace the archive"
    );
}

// ---------------------------------------------------------------------------------------------
// 3. Malformed netCDF inputs

/// For every file in samples/bad: the kind of error, the specific cause the message gives, and
/// the byte offset of the offending header field where there is one.
const BAD: [(&str, &str, &str, Option<u64>); 12] = [
    (
        "bad_magic.nc",
        "not a netCDF-3 file",
        "bad magic at byte 0: expected \"CDF\" then 1, 2 or 5, found bytes 43445801",
        Some(0),
    ),
    (
        "bad_utf8_name.nc",
        "invalid netCDF-3 header",
        "dimension 0 name is not valid UTF-8",
        Some(20),
    ),
    (
        "bad_version.nc",
        "invalid netCDF-3 header",
        "version byte 3 is not 1, 2 or 5",
        Some(3),
    ),
    (
        "empty_file.nc",
        "not a netCDF-3 file",
        "the file is empty",
        None,
    ),
    (
        "hdf5.nc",
        "not a netCDF-3 file",
        "HDF5 file (netCDF-4 or HDF5); nc3pack reads netCDF-3 only",
        None,
    ),
    (
        "huge_dim.nc",
        "invalid netCDF-3 data layout",
        "variable \"x\" data [80, 2147483727) extends past the end of the file (84 bytes)",
        None,
    ),
    (
        "huge_name.nc",
        "invalid netCDF-3 header",
        "dimension 0 name: needs 2147483632 bytes but the file ends at byte 28",
        Some(20),
    ),
    (
        "huge_nattrs.nc",
        "invalid netCDF-3 header",
        "count 2147483647 cannot fit in the 20 bytes left in the file",
        Some(20),
    ),
    (
        "negative_count.nc",
        "invalid netCDF-3 header",
        "dimension count: 4294967280 is negative as a signed value",
        Some(12),
    ),
    (
        "text_file.nc",
        "not a netCDF-3 file",
        "bad magic at byte 0: expected \"CDF\" then 1, 2 or 5, found bytes 54686973",
        Some(0),
    ),
    (
        "truncated_header.nc",
        "invalid netCDF-3 header",
        "count 1 cannot fit in the 2 bytes left in the file",
        Some(44),
    ),
    (
        "var_beyond_eof.nc",
        "invalid netCDF-3 data layout",
        "variable \"v\" data [1000000, 1000012) extends past the end of the file (172 bytes)",
        None,
    ),
];

#[test]
fn every_bad_sample_is_listed() {
    let listed: BTreeSet<&str> = BAD.iter().map(|b| b.0).collect();
    let present: BTreeSet<String> = std::fs::read_dir(sample("bad"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".nc"))
        .collect();
    let present: BTreeSet<&str> = present.iter().map(String::as_str).collect();
    assert_eq!(listed, present);
}

#[test]
fn bad_inputs_are_refused_with_a_precise_one_line_error() {
    let dir = temp_dir();
    for (name, kind, cause, offset) in BAD {
        let input = sample(&format!("bad/{name}"));
        let before = snapshot(&input);
        let out = dir.path().join(format!("{name}.nc3z"));
        let (code, stdout, err) = run(&[OsStr::new("pack"), p(&input), p(&out)]);
        assert_eq!((code, stdout.as_str()), (1, ""), "{name}: {err}");
        assert_one_line_error(&err, &input);
        let prefix = format!("nc3pack: {}: {kind}", input.display());
        assert!(
            err.starts_with(&prefix),
            "{name}: {err:?} should start with {prefix:?}"
        );
        assert!(err.contains(cause), "{name}: {err:?} lacks {cause:?}");
        if let Some(at) = offset {
            let at = format!("at byte {at}");
            assert!(err.contains(&at), "{name}: {err:?} lacks {at:?}");
        }
        assert!(!out.exists(), "{name}: output left behind");
        assert!(snapshot(&input) == before, "{name} was modified");

        // The default command says the same.
        let (code, _, err2) = run(&[p(&input), p(&out)]);
        assert_eq!((code, &err2), (1, &err), "{name}");

        // info refuses it as well (an empty file is "not a netCDF-3 file" for info too).
        let (code, stdout, err) = run(&[OsStr::new("info"), p(&input)]);
        assert_eq!((code, stdout.as_str()), (1, ""), "info {name}: {err}");
        assert_one_line_error(&err, &input);
        assert!(err.contains(cause), "info {name}: {err:?} lacks {cause:?}");
        let (code, stdout, err) = run(&[OsStr::new("info"), "--json".as_ref(), p(&input)]);
        assert_eq!(
            (code, stdout.as_str()),
            (1, ""),
            "info --json {name}: {err}"
        );
        assert_one_line_error(&err, &input);
        // and so does slice.
        let (code, stdout, err) = run(&[OsStr::new("slice"), p(&input), "v".as_ref()]);
        assert_eq!((code, stdout.as_str()), (1, ""), "slice {name}: {err}");
        assert_one_line_error(&err, &input);
    }
    assert!(leftovers(dir.path()).is_empty());
}

/// BUG: a header error's cause is printed twice
/// ("invalid netCDF-3 header at byte N: X: X at byte N"). `Error::Header` shows its `source`'s
/// `what` and `offset` in its own message, and because the field is named `source` thiserror also
/// makes it the error's `source()`; the binary appends each cause from `anyhow::Error::chain()`
/// whose text is not already in the message, and `HeaderError`'s text ("X at byte N") is not.
#[test]
fn error_messages_state_their_cause_once() {
    let dir = temp_dir();
    let out = dir.path().join("out.nc3z");
    for (name, _, cause, _) in BAD {
        let input = sample(&format!("bad/{name}"));
        let (_, _, err) = run(&[OsStr::new("pack"), p(&input), p(&out)]);
        assert_eq!(err.matches(cause).count(), 1, "{name}: {err:?}");
    }
    let missing = dir.path().join("missing.nc");
    let (_, _, err) = run(&[OsStr::new("pack"), p(&missing), p(&out)]);
    assert_eq!(
        err.matches("No such file or directory").count(),
        1,
        "{err:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// 4. Damaged archives

#[test]
fn damaged_archives_are_refused_naming_the_damaged_part() {
    let dir = temp_dir();
    let input = sample("gridded_sst.nc");
    let good = pack(&input, dir.path(), "good.nc3z", &["--block-size", "64KiB"]);
    let a = std::fs::read(&good).unwrap();
    let pa = parts(&a);
    assert!(pa.frames.len() > 50, "{} blocks", pa.frames.len());
    let (mid_frame, mid_len) = pa.frames[pa.frames.len() / 2];
    // Frames are listed in index order: those of the streams before sst's come first.
    let arch = nc3pack::Archive::open(&good).unwrap();
    let sst = arch.header().var_id("sst").unwrap();
    let before = (0..sst).map(|s| arch.block_count(s)).sum::<u64>() as usize;
    let flip = |at: usize| {
        let mut b = a.clone();
        b[at] ^= 0x10;
        b
    };
    let cases: Vec<(&str, Vec<u8>, String)> = vec![
        ("lead", flip(17), "damaged archive: lead at byte 0".into()),
        (
            "netCDF header",
            flip(LEAD_LEN + FRAME_HEADER_LEN + pa.header_stored / 2),
            format!("damaged archive: netCDF header at byte {LEAD_LEN}"),
        ),
        (
            "header frame",
            flip(LEAD_LEN + 2),
            format!("damaged archive: netCDF header at byte {LEAD_LEN}"),
        ),
        (
            "block",
            flip(mid_frame + FRAME_HEADER_LEN + mid_len / 2),
            format!(
                "damaged block {} of variable \"sst\" at byte {mid_frame}: payload checksum mismatch",
                pa.frames.len() / 2 - before
            ),
        ),
        (
            "frame header",
            flip(mid_frame + 9),
            format!(
                "damaged block {} of variable \"sst\" at byte {mid_frame}: frame header checksum mismatch",
                pa.frames.len() / 2 - before
            ),
        ),
        (
            "index",
            flip(pa.index_offset + 16 + 16 * 5 + 1),
            format!("damaged archive: index at byte {}", pa.index_offset),
        ),
        (
            "footer",
            flip(a.len() - FOOTER_LEN + 3),
            format!("damaged archive: footer at byte {}", a.len() - FOOTER_LEN),
        ),
        (
            "truncated",
            a[..a.len() - 10].to_vec(),
            format!(
                "damaged archive: footer at byte {}",
                a.len() - 10 - FOOTER_LEN
            ),
        ),
    ];
    for (what, bytes, expect) in cases {
        let damaged = dir.path().join(format!("{what}.nc3z"));
        std::fs::write(&damaged, &bytes).unwrap();
        let out = dir.path().join(format!("{what}.nc"));
        let (code, stdout, err) = run(&[OsStr::new("unpack"), p(&damaged), p(&out)]);
        assert_eq!((code, stdout.as_str()), (1, ""), "{what}: {err}");
        assert_one_line_error(&err, &damaged);
        assert!(err.contains(&expect), "{what}: {err:?} lacks {expect:?}");
        assert!(!out.exists(), "{what}: output left behind");
        assert_eq!(leftovers(dir.path()), Vec::<String>::new(), "{what}");

        // Over an existing file with --force, that file is kept as it was.
        std::fs::write(&out, b"precious").unwrap();
        let (code, _, err) = run(&[OsStr::new("unpack"), "-f".as_ref(), p(&damaged), p(&out)]);
        assert_eq!(code, 1, "{what}: {err}");
        assert_eq!(std::fs::read(&out).unwrap(), b"precious", "{what}");
        assert!(
            std::fs::read(&damaged).unwrap() == bytes,
            "{what}: archive modified"
        );
    }
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn archives_cut_anywhere_fail_without_panicking() {
    let dir = temp_dir();
    let good = pack(&sample("classic_records.nc"), dir.path(), "good.nc3z", &[]);
    let a = std::fs::read(&good).unwrap();
    let out = dir.path().join("out.nc");
    let mut cuts: Vec<usize> = vec![0, 1, 7, 8, 47, 48, 49, a.len() - 48, a.len() - 47];
    cuts.extend((50..a.len()).step_by(97));
    for cut in cuts {
        let damaged = dir.path().join(format!("cut{cut}.nc3z"));
        std::fs::write(&damaged, &a[..cut]).unwrap();
        let (code, _, err) = run(&[OsStr::new("unpack"), p(&damaged), p(&out)]);
        assert_eq!(code, 1, "cut at {cut}: {err}");
        assert_one_line_error(&err, &damaged);
        assert!(!out.exists());
    }
    assert!(leftovers(dir.path()).is_empty());
}

/// BUG: a truncated archive's error tells the user to "try `nc3pack reindex`", but there is no
/// such command: `nc3pack reindex X` is taken as `nc3pack pack reindex X`.
#[test]
fn error_hints_name_commands_that_exist() {
    let dir = temp_dir();
    let good = pack(&sample("classic_records.nc"), dir.path(), "good.nc3z", &[]);
    let a = std::fs::read(&good).unwrap();
    let cut = dir.path().join("cut.nc3z");
    std::fs::write(&cut, &a[..a.len() - 10]).unwrap();
    let (code, _, err) = run(&[OsStr::new("unpack"), p(&cut), p(&dir.path().join("o.nc"))]);
    assert_eq!(code, 1);
    let (code, help, _) = run(&["--help"]);
    assert_eq!(code, 0);
    for cmd in ["pack", "unpack", "info", "reindex"] {
        if err.contains(&format!("nc3pack {cmd}`")) {
            assert!(
                help.lines().any(|l| l.trim_start().starts_with(cmd)),
                "the error suggests `nc3pack {cmd}`, which --help does not list: {err:?}\n{help}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 7. Unpack verifies what it writes

#[test]
fn unpack_verifies_the_whole_file_hash() {
    let dir = temp_dir();
    let input = sample("gridded_sst.nc");
    let good = pack(
        &input,
        dir.path(),
        "good.nc3z",
        &["--codec", "none", "--filter", "none"],
    );
    unpack_matches(&good, &dir.path().join("good.nc"), &input);

    // Change one data byte of a stored (codec none) block and fix both frame CRCs, so that only
    // the whole-file hash can tell.
    let mut a = std::fs::read(&good).unwrap();
    let pa = parts(&a);
    let (f, len) = *pa.frames.iter().max_by_key(|fr| fr.1).unwrap();
    assert_eq!(a[f + 24], 0, "expected codec none");
    assert_eq!(u32_le(&a, f + 28), crc32c::crc32c(&a[f + 36..f + 36 + len]));
    a[f + FRAME_HEADER_LEN + len / 2] ^= 0x01;
    let c = crc32c::crc32c(&a[f + 36..f + 36 + len]);
    a[f + 28..f + 32].copy_from_slice(&c.to_le_bytes());
    let c = crc32c::crc32c(&a[f..f + 32]);
    a[f + 32..f + 36].copy_from_slice(&c.to_le_bytes());
    let forged = dir.path().join("forged.nc3z");
    std::fs::write(&forged, &a).unwrap();

    let out = dir.path().join("forged.nc");
    let (code, _, err) = run(&[OsStr::new("unpack"), p(&forged), p(&out)]);
    assert_eq!(code, 1, "{err}");
    assert_one_line_error(&err, &forged);
    assert!(err.contains("does not match the original's hash"), "{err}");
    assert!(!out.exists());
    assert!(leftovers(dir.path()).is_empty());

    // To standard output (`-`): the original bytes, then the hash is checked; a mismatch is
    // found only once the bytes are out, so it must say to discard them and exit 1.
    let to_stdout = |archive: &Path| {
        Command::new(BIN)
            .current_dir(dir.path())
            .args([
                OsStr::new("unpack"),
                "-q".as_ref(),
                p(archive),
                "-".as_ref(),
            ])
            .output()
            .unwrap()
    };
    let o = to_stdout(&good);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout == std::fs::read(&input).unwrap(), "stdout differs");
    let o = to_stdout(&forged);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_one_line_error(&err, &forged);
    assert!(err.contains("does not match the original's hash"), "{err}");
    assert!(
        err.contains("written to standard output are not the original"),
        "{err}"
    );
    // Every byte was written (the damage is inside), only then found wrong.
    assert_eq!(
        o.stdout.len() as u64,
        std::fs::metadata(&input).unwrap().len()
    );
    assert!(!dir.path().join("-").exists());
    assert!(leftovers(dir.path()).is_empty());
}

// ---------------------------------------------------------------------------------------------
// 5. Usage errors

/// Regression: `nc3pack IN -` created a file named `-` in the working directory; packing to
/// standard output is not possible (the lead is rewritten at the end), so it is a usage error.
#[test]
fn packing_to_standard_output_is_a_usage_error() {
    let dir = temp_dir();
    let input = sample("classic_records.nc");
    for args in [
        vec![input.as_os_str(), OsStr::new("-")],
        vec![OsStr::new("pack"), input.as_os_str(), OsStr::new("-")],
    ] {
        let out = Command::new(BIN)
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("standard output") && err.lines().count() == 1,
            "{err}"
        );
        assert!(out.stdout.is_empty());
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "{args:?} wrote a file"
        );
    }
}

#[test]
fn usage_errors_exit_2() {
    let dir = temp_dir();
    let input = sample("classic_records.nc");
    let out = dir.path().join("out.nc3z");
    let (i, o) = (input.to_str().unwrap(), out.to_str().unwrap());
    let cases: [&[&str]; 11] = [
        &[],
        &["pack"],
        &["pack", i],
        &["info"],
        &["--codec", "lz4", i, o],
        &["pack", "--codec", "lz4", i, o],
        &["pack", "--block-size", "abc", i, o],
        &["pack", "--block-size", "4XB", i, o],
        &["--bogus", i, o],
        &["unpack", "--codec", "zstd", i, o],
        &["pack", "--level", "high", i, o],
    ];
    for args in cases {
        let (code, stdout, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {stdout}{err}");
        assert!(
            !err.is_empty() && !err.contains("panicked"),
            "{args:?}: {err}"
        );
        assert!(!out.exists(), "{args:?} wrote output");
    }
    let (_, _, err) = run(&["pack", "--block-size", "abc", i, o]);
    assert!(err.contains("abc") && err.contains("64KiB"), "{err}");
    let (_, _, err) = run(&["--codec", "lz4", i, o]);
    assert!(err.contains("zstd, deflate, lzma, none"), "{err}");

    // --help and --version are not errors.
    for args in [&["--help"][..], &["-V"], &["pack", "--help"], &["help"]] {
        let (code, stdout, _) = run(args);
        assert_eq!(code, 0, "{args:?}");
        assert!(!stdout.is_empty(), "{args:?}");
    }
}

/// Values the parser accepts but the library rejects are usage errors too: exit 2, with a message
/// naming the option and its range.
#[test]
fn out_of_range_level_and_block_size_exit_2() {
    let dir = temp_dir();
    let input = sample("classic_records.nc");
    let out = dir.path().join("out.nc3z");
    let cases: [(&[&str], &str); 6] = [
        (
            &["--level", "99"],
            "level 99 is outside -7..=22 for codec zstd",
        ),
        (
            &["--codec", "deflate", "--level", "99"],
            "level 99 is outside 0..=9 for codec deflate",
        ),
        (
            &["--codec", "deflate", "--level", "-1"],
            "level -1 is outside 0..=9 for codec deflate",
        ),
        (
            &["--codec", "none", "--level", "3"],
            "level 3 is outside 0..=0 for codec none",
        ),
        (
            &["--block-size", "0"],
            "block size 0 is outside 8..=1073741824 bytes",
        ),
        (
            &["--block-size", "2GiB"],
            "block size 2147483648 is outside 8..=1073741824 bytes",
        ),
    ];
    for (opts, msg) in cases {
        let mut args: Vec<&OsStr> = vec![OsStr::new("pack")];
        args.extend(opts.iter().map(OsStr::new));
        args.extend([p(&input), p(&out)]);
        let (code, stdout, err) = run(&args);
        assert_eq!((code, stdout.as_str()), (2, ""), "{opts:?}: {err}");
        assert_eq!(err, format!("nc3pack: invalid option: {msg}\n"), "{opts:?}");
        assert!(!out.exists());
    }
    // The ends of the ranges are accepted.
    for opts in [
        &["--level", "22"][..],
        &["--level", "-7"],
        &["--codec", "deflate", "--level", "0"],
        &["--block-size", "8"],
        &["--block-size", "1GiB"],
    ] {
        let mut o = opts.to_vec();
        o.push("-f");
        let a = pack(&input, dir.path(), "ok.nc3z", &o);
        unpack_matches(&a, &dir.path().join("ok.nc"), &input);
        std::fs::remove_file(dir.path().join("ok.nc")).unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// 6. info

/// The CDL-like body of `info` text: from "dimensions:" to the closing brace.
fn cdl_body(text: &str) -> String {
    let start = text.find("dimensions:").expect("no dimensions:");
    let end = text.find("\n}").expect("no closing brace");
    text[start..end].to_string()
}

#[test]
fn info_of_a_file_and_of_its_archive_agree() {
    let dir = temp_dir();
    for name in
        ROUNDTRIP_SAMPLES
            .iter()
            .chain(&["offset64_mixed.nc", "empty.nc", "no_variables.nc"])
    {
        let input = sample(name);
        let archive = pack(&input, dir.path(), &format!("{name}.nc3z"), &[]);

        let (code, nc_text, err) = run(&[OsStr::new("info"), p(&input)]);
        assert_eq!((code, err.as_str()), (0, ""), "{name}");
        let (code, z_text, err) = run(&[OsStr::new("info"), p(&archive)]);
        assert_eq!((code, err.as_str()), (0, ""), "{name}");
        let stem = name.strip_suffix(".nc").unwrap();
        assert!(
            nc_text.starts_with(&format!("netcdf {stem} {{")),
            "{nc_text}"
        );
        assert_text_eq(
            &format!("info of {name}'s archive"),
            &cdl_body(&nc_text),
            &cdl_body(&z_text),
        );
        assert!(
            z_text.contains("nc3z archive") && z_text.contains("ratio"),
            "{z_text}"
        );

        let nc = info_json(&input);
        let z = info_json(&archive);
        assert!(nc["format"].is_string(), "{name}: {nc}");
        for key in ["format", "dimensions", "variables", "global_attributes"] {
            assert_eq!(nc[key], z[key], "{name}: {key}");
        }
        assert!(nc.get("archive").is_none(), "{name}");
        let arch = z["archive"].as_object().expect("no archive object");
        assert!(arch["ratio"].as_f64().unwrap() > 0.0, "{name}");
        assert_eq!(
            arch["original_bytes"],
            std::fs::metadata(&input).unwrap().len(),
            "{name}"
        );
        assert_eq!(
            arch["archive_bytes"],
            std::fs::metadata(&archive).unwrap().len(),
            "{name}"
        );

        for v in nc["variables"].as_array().unwrap() {
            let vname = v["name"].as_str().unwrap();
            assert!(
                nc_text.contains(&format!(" {vname}")),
                "{name}: {vname} missing"
            );
        }
    }
    // Known content: classic_records.
    let (_, text, _) = run(&[OsStr::new("info"), p(&sample("classic_records.nc"))]);
    assert!(
        text.contains("format: classic") && text.contains("time = UNLIMITED ; // (7 currently)")
    );
    for var in [
        "time", "c5", "b", "b5", "s", "s3", "i", "f3", "d", "fixed_s", "scalar_b",
    ] {
        assert!(
            text.contains(&format!(" {var}(")) || text.contains(&format!(" {var} ;")),
            "{var}"
        );
    }
    let v = info_json(&sample("cdf5_types.nc"));
    assert_eq!(v["format"], "cdf5");
}

/// Runs the binary with `args` and `input` on its standard input.
fn run_stdin<S: AsRef<OsStr>>(args: &[S], input: &[u8]) -> (i32, String, String) {
    // A refused input may be closed before all of it is written: that is not a test failure.
    let o = nc3pack(args).stdin(input).output();
    let code = o.code.unwrap_or_else(|| panic!("killed by a signal:\n{o}"));
    (code, o.stdout, o.stderr)
}

#[test]
fn standard_input_packs_in_one_pass_to_the_same_archive() {
    let dir = temp_dir();
    for name in [
        "gridded_sst.nc",
        "classic_records.nc",
        "truncated_record.nc",
        "streaming_numrecs.nc",
        "trailing_bytes.nc",
        "cdf5_types.nc",
    ] {
        let input = sample(name);
        let bytes = std::fs::read(&input).unwrap();
        let from_file = pack(&input, dir.path(), "file.nc3z", &["-f", "-j", "1"]);
        let z = dir.path().join("stdin.nc3z");
        let (code, out, err) = run_stdin(&["-j", "1", "-", p(&z).to_str().unwrap()], &bytes);
        assert_eq!((code, out.as_str()), (0, ""), "{name}: {err}");
        assert!(err.starts_with("<stdin> -> "), "{name}: {err}");
        assert_eq!(
            std::fs::read(&z).unwrap(),
            std::fs::read(&from_file).unwrap(),
            "{name}: the archive differs from the one packed from the file"
        );
        unpack_matches(&z, &dir.path().join("back.nc"), &input);
        std::fs::remove_file(&z).unwrap();
        std::fs::remove_file(dir.path().join("back.nc")).unwrap();
    }
}

#[test]
fn bad_standard_input_is_refused_with_one_line_and_no_output() {
    let dir = temp_dir();
    let z = dir.path().join("x.nc3z");
    let base = std::fs::read(sample("classic_records.nc")).unwrap();
    let hdf5 = std::fs::read(sample("bad/hdf5.nc")).unwrap();
    // Cut one byte into the first fixed variable's data.
    let h = nc3pack::nc3::Header::parse(&base, base.len() as u64).unwrap();
    let fixed = h.vars().filter(|v| !v.is_record());
    let begin = fixed.map(|v| v.begin()).min().unwrap() as usize;
    let cases: [(&str, &[u8], &str); 5] = [
        ("empty", b"", "not a netCDF-3 file: the input is empty"),
        ("hdf5", &hdf5, "it is an HDF5 file"),
        ("text", b"hello, world\n", "bad magic at byte 0"),
        ("cut header", &base[..40], "invalid netCDF-3 header"),
        (
            "cut inside a fixed variable",
            &base[..begin + 1],
            "extends past the end of the input",
        ),
    ];
    for (what, input, expect) in cases {
        let (code, out, err) = run_stdin(&["pack", "-", p(&z).to_str().unwrap()], input);
        assert_eq!((code, out.as_str()), (1, ""), "{what}: {err}");
        assert_one_line_error(&err, Path::new("<stdin>"));
        assert!(err.contains(expect), "{what}: {err:?} lacks {expect:?}");
        assert!(!z.exists(), "{what}: output left behind");
        assert!(leftovers(dir.path()).is_empty(), "{what}");
    }
}

/// A CDF-1 header for `float v(time, n)` with `n` floats a record and `numrecs` records; returns
/// the header bytes (the data starts right after them).
fn one_record_var_header(n: u32, numrecs: u32) -> Vec<u8> {
    let name = |h: &mut Vec<u8>, s: &str| {
        h.extend_from_slice(&(s.len() as u32).to_be_bytes());
        h.extend_from_slice(s.as_bytes());
        h.resize(h.len().div_ceil(4) * 4, 0);
    };
    let mut h = b"CDF\x01".to_vec();
    h.extend_from_slice(&numrecs.to_be_bytes());
    h.extend_from_slice(&[0, 0, 0, 0x0A, 0, 0, 0, 2]);
    name(&mut h, "time");
    h.extend_from_slice(&0u32.to_be_bytes());
    name(&mut h, "n");
    h.extend_from_slice(&n.to_be_bytes());
    h.extend_from_slice(&[0; 8]); // no global attributes
    h.extend_from_slice(&[0, 0, 0, 0x0B, 0, 0, 0, 1]);
    name(&mut h, "v");
    h.extend_from_slice(&[0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1]); // dims time, n
    h.extend_from_slice(&[0; 8]); // no attributes
    h.extend_from_slice(&5u32.to_be_bytes()); // NC_FLOAT
    h.extend_from_slice(&(4 * n).to_be_bytes());
    let begin = h.len() as u32 + 4;
    h.extend_from_slice(&begin.to_be_bytes());
    h
}

/// Records over 64 MiB are not held in memory when packing from a stream: a complete stream of
/// them packs (to the file's archive), one that ends inside one is refused and leaves nothing.
#[test]
fn standard_input_with_huge_records_packs_or_refuses_a_cut_record() {
    let dir = temp_dir();
    let n = 17_000_000u32; // 68 MB a record
    let mut bytes = one_record_var_header(n, 2);
    let header_len = bytes.len();
    bytes.resize(header_len + 2 * 4 * n as usize, 0);
    for (i, b) in bytes[header_len..].iter_mut().enumerate().step_by(4096) {
        *b = (i / 4096) as u8;
    }
    let nc = dir.path().join("huge.nc");
    std::fs::write(&nc, &bytes).unwrap();
    let from_file = pack(&nc, dir.path(), "file.nc3z", &["-j", "1"]);
    let z = dir.path().join("stdin.nc3z");
    let (code, _, err) = run_stdin(&["-q", "-j", "1", "-", p(&z).to_str().unwrap()], &bytes);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read(&z).unwrap() == std::fs::read(&from_file).unwrap());
    std::fs::remove_file(&z).unwrap();

    let cut = &bytes[..header_len + 4 * n as usize + 1000];
    let (code, _, err) = run_stdin(&["-q", "-", p(&z).to_str().unwrap()], cut);
    assert_eq!(code, 1, "{err}");
    assert_one_line_error(&err, Path::new("<stdin>"));
    assert!(err.contains("inside a record of 68000000 bytes"), "{err}");
    assert!(!z.exists() && leftovers(dir.path()).is_empty());
    // The same cut file packs from disk: the incomplete record is kept as residual bytes.
    let cut_nc = dir.path().join("cut.nc");
    std::fs::write(&cut_nc, cut).unwrap();
    let a = pack(&cut_nc, dir.path(), "cut.nc3z", &[]);
    let info = info_json(&a);
    assert_eq!(info["archive"]["original_bytes"], cut.len() as u64);
}

/// On Linux the command is linked at a fixed address (build.rs): a position-independent
/// executable is relocated at every start, about a tenth of the time of packing a tiny file.
/// `NC3PACK_PIE=1` when building keeps a PIE.
#[cfg(target_os = "linux")]
#[test]
fn the_command_is_a_fixed_address_executable_unless_built_with_nc3pack_pie() {
    use std::io::Read;
    let mut head = [0u8; 18];
    std::fs::File::open(BIN)
        .and_then(|mut f| f.read_exact(&mut head))
        .unwrap();
    assert_eq!(&head[..4], b"\x7fELF");
    let e_type = match head[5] {
        1 => u16::from_le_bytes([head[16], head[17]]),
        _ => u16::from_be_bytes([head[16], head[17]]),
    };
    let pie = option_env!("NC3PACK_PIE").is_some_and(|v| !v.is_empty() && v != "0");
    // ET_EXEC = 2 (fixed address), ET_DYN = 3 (position-independent).
    assert_eq!(e_type, if pie { 3 } else { 2 }, "ELF type of {BIN}");
}
