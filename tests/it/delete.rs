//! `pack --delete-input`: an original is deleted only when what is on disk at that moment is
//! what its verified, recorded archive holds (rewritten in place with its size and time set
//! back, renamed over, or unrecordable: kept); and a batch never replaces one of its own
//! inputs, nor any file that is not an archive, even with `--force`.

use crate::util::{sample, temp_dir, BIN};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Copies the sample `classic_records.nc` to each of `names` under `dir`.
fn populate(dir: &Path, names: &[&str]) {
    for n in names {
        let p = dir.join(n);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::copy(sample("classic_records.nc"), &p).unwrap();
    }
}

/// `nc3pack pack ARGS...`, bounded to 120 s: (exit code, stderr).
fn pack(args: &[&std::ffi::OsStr]) -> (i32, String) {
    let mut child = Command::new(BIN)
        .arg("pack")
        .arg("-q")
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).unwrap();
        s
    });
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("nc3pack pack {args:?} did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (
        status.code().expect("killed by a signal"),
        reader.join().unwrap(),
    )
}

/// Rewrites the last 4 bytes of `path` in place and sets its modification time back to what
/// it was (to the nanosecond), as a careless tool or a user's `touch -r` would.
fn rewrite_keeping_size_and_mtime(path: &Path) {
    use std::io::{Seek, Write};
    let mtime = std::fs::metadata(path).unwrap().modified().unwrap();
    let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.seek(std::io::SeekFrom::End(-4)).unwrap();
    f.write_all(&[0xde, 0xad, 0xbe, 0xef]).unwrap();
    f.set_times(std::fs::FileTimes::new().set_modified(mtime))
        .unwrap();
}

/// Writes `bytes` to a temporary file beside `path`, gives it `path`'s modification time, and
/// renames it over `path` (as rsync does).
fn replace_by_rename(path: &Path, bytes: &[u8]) {
    let mtime = std::fs::metadata(path).unwrap().modified().unwrap();
    let tmp = path.with_extension("tmp-replace");
    let f = std::fs::File::create(&tmp).unwrap();
    std::io::Write::write_all(&mut &f, bytes).unwrap();
    f.set_times(std::fs::FileTimes::new().set_modified(mtime))
        .unwrap();
    drop(f);
    std::fs::rename(&tmp, path).unwrap();
}

/// What the archive `z` restores.
fn restored(z: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    nc3pack::unpack_to_writer(z, &mut out, "<memory>".as_ref(), &Default::default()).unwrap();
    out
}

/// Between runs: an input rewritten in place with its size and modification time set back is
/// not taken as packed when `--delete-input` would delete it: it is kept, the run fails and
/// says so, and the other originals (unchanged) are deleted.
#[test]
fn a_rerun_keeps_an_original_rewritten_with_its_size_and_mtime() {
    let dir = temp_dir();
    let (input, out) = (dir.path().join("in"), dir.path().join("out"));
    populate(&input, &["a.nc", "b.nc", "c.nc"]);
    let (code, err) = pack(&[input.as_os_str(), "-o".as_ref(), out.as_os_str()]);
    assert_eq!(code, 0, "{err}");
    let b = input.join("b.nc");
    rewrite_keeping_size_and_mtime(&b);
    let now = std::fs::read(&b).unwrap();
    let (code, err) = pack(&[
        input.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
        "--delete-input".as_ref(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!(
            "{}: not deleted: its bytes changed since it was packed",
            b.display()
        )),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&b).unwrap(),
        now,
        "the changed original is kept as it is"
    );
    assert!(!input.join("a.nc").exists() && !input.join("c.nc").exists());
    for n in ["a.nc", "c.nc"] {
        assert_eq!(
            restored(&out.join(format!("{n}.nc3z"))),
            std::fs::read(sample("classic_records.nc")).unwrap()
        );
    }
}

/// Within a run, between the archive's verification and the deletion (where the records are
/// written): an input renamed over with other bytes, one rewritten in place (both with their
/// times set back) are kept; one renamed over with the same bytes, and one left alone, are
/// deleted (what is on disk is what the archive holds). Deterministic: the changes are made by
/// the library's record step itself.
#[test]
fn inputs_replaced_or_rewritten_after_they_were_read_are_kept() {
    use nc3pack::testing::{manifest::Done, pack_all, plan, Outcome, Shard};
    let dir = temp_dir();
    let (input, out) = (dir.path().join("in"), dir.path().join("out"));
    let names = [
        "renamed.nc",
        "rewritten.nc",
        "same_bytes.nc",
        "untouched.nc",
    ];
    populate(&input, &names);
    let original = std::fs::read(sample("classic_records.nc")).unwrap();
    let mut other = original.clone();
    let k = other.len() - 1;
    other[k] ^= 0x55;
    let p = plan([Ok(input.clone())], &out, None, Shard::default()).unwrap();
    let opts = nc3pack::PackOptions::default().with_threads(2);
    let outcomes = std::sync::Mutex::new(Vec::new());
    let recorded = std::sync::Mutex::new(Vec::new());
    let record = |group: &[(usize, &Outcome)]| -> nc3pack::Result<()> {
        for (i, o) in group {
            let name = p.input(*i);
            recorded.lock().unwrap().push(name.clone());
            assert!(matches!(o, Outcome::Packed { deleted: true, .. }), "{o:?}");
            match name.file_name().unwrap().to_str().unwrap() {
                "renamed.nc" => replace_by_rename(&name, &other),
                "rewritten.nc" => rewrite_keeping_size_and_mtime(&name),
                "same_bytes.nc" => replace_by_rename(&name, &original),
                _ => {}
            }
        }
        Ok(())
    };
    pack_all(&p, &opts, &Done::default(), Some(&record), &|i, o| {
        outcomes.lock().unwrap().push((p.input(i), o))
    })
    .unwrap();
    assert_eq!(recorded.into_inner().unwrap().len(), 4);
    let mut outcomes = outcomes.into_inner().unwrap();
    outcomes.sort_by(|a, b| a.0.cmp(&b.0));
    let described: Vec<(PathBuf, String)> = outcomes
        .iter()
        .map(|(p, o)| {
            let what = match o {
                Outcome::Packed { deleted: true, .. } => "deleted".to_string(),
                Outcome::Failed { error, .. } => error.to_string(),
                o => format!("{o:?}"),
            };
            (p.clone(), what)
        })
        .collect();
    let changed = |n: &str| {
        format!(
            "{}: not deleted: its bytes changed since it was packed",
            input.join(n).display()
        )
    };
    assert_eq!(described.len(), 4, "{described:?}");
    assert!(
        described[0].1.starts_with(&changed("renamed.nc")),
        "{described:?}"
    );
    assert!(
        described[1].1.starts_with(&changed("rewritten.nc")),
        "{described:?}"
    );
    assert_eq!(described[2].1, "deleted", "{described:?}");
    assert_eq!(described[3].1, "deleted", "{described:?}");
    assert_eq!(std::fs::read(input.join("renamed.nc")).unwrap(), other);
    assert!(input.join("rewritten.nc").exists());
    assert!(!input.join("same_bytes.nc").exists() && !input.join("untouched.nc").exists());
    for n in names {
        assert_eq!(restored(&out.join(format!("{n}.nc3z"))), original, "{n}");
    }
}

/// When the records cannot be written, no input is deleted: each is kept and fails saying why.
/// Through the library (a record step that fails) and the command line (the manifest is
/// /dev/full, where every write fails as on a full disk).
#[test]
fn no_original_is_deleted_when_its_record_cannot_be_written() {
    use nc3pack::testing::{manifest::Done, pack_all, plan, Outcome, Shard};
    let dir = temp_dir();
    let (input, out) = (dir.path().join("in"), dir.path().join("out"));
    let names = ["a.nc", "b.nc", "c.nc"];
    populate(&input, &names);
    let p = plan([Ok(input.clone())], &out, None, Shard::default()).unwrap();
    let failures = std::sync::atomic::AtomicUsize::new(0);
    let full = |_: &[(usize, &Outcome)]| -> nc3pack::Result<()> {
        Err(nc3pack::Error::Io {
            path: "manifest.jsonl".into(),
            op: "write",
            source: std::io::Error::from_raw_os_error(libc::ENOSPC),
        })
    };
    pack_all(
        &p,
        &Default::default(),
        &Done::default(),
        Some(&full),
        &|_, o| {
            let Outcome::Failed { error, .. } = o else {
                panic!("{o:?}")
            };
            assert!(
                error
                    .to_string()
                    .contains("not deleted: its archive could not be recorded in the manifest: "),
                "{error}"
            );
            failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        },
    )
    .unwrap();
    assert_eq!(failures.into_inner(), 3);
    for n in names {
        assert!(input.join(n).exists(), "{n}");
    }
    let out = dir.path().join("out2");
    let into_dev_full = |more: &[&str]| {
        let mut args = vec![
            input.as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
            "--manifest".as_ref(),
            "/dev/full".as_ref(),
            "--delete-input".as_ref(),
        ];
        args.extend(more.iter().map(|m| std::ffi::OsStr::new(*m)));
        pack(&args)
    };
    // Read to resume from, a device is refused (/dev/full reads as endless zeros).
    let (code, err) = into_dev_full(&[]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("/dev/full: read manifest: not a regular file"),
        "{err}"
    );
    assert!(!out.exists(), "{err}");
    // With --force nothing is read from it: it is only written to, and every write fails.
    let (code, err) = into_dev_full(&["--force"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("could not be recorded in the manifest"),
        "{err}"
    );
    for n in names {
        assert!(input.join(n).exists(), "{n}: {err}");
    }
}

/// Replacement races on the command line: while a batch with `--delete-input` runs, another
/// process keeps renaming new versions (alternately other bytes and the original's, each with
/// the same size and modification time) over one input, as rsync would. Whenever that input
/// is gone at the end, its archive holds the last version written before it went; and every
/// other original that is gone is restored by its archive. Bounded: 3 runs of 60 files.
#[test]
fn an_input_renamed_over_during_the_run_is_deleted_only_if_its_archive_holds_it() {
    let original = std::fs::read(sample("classic_records.nc")).unwrap();
    let mut other = original.clone();
    let k = other.len() - 1;
    other[k] ^= 0x55;
    for trial in 0..3 {
        let dir = temp_dir();
        let (input, out) = (dir.path().join("in"), dir.path().join("out"));
        let names: Vec<String> = (0..60).map(|k| format!("f{k:02}.nc")).collect();
        populate(
            &input,
            &names.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        // The victim is packed early (names are packed in order) and sits in the first group.
        let victim = input.join("f03.nc");
        let stop = std::sync::atomic::AtomicBool::new(false);
        let last_written = std::sync::Mutex::new(original.clone());
        std::thread::scope(|s| {
            s.spawn(|| {
                let t = Instant::now();
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed)
                    && t.elapsed() < Duration::from_secs(60)
                {
                    if std::fs::symlink_metadata(&victim).is_err() {
                        break;
                    }
                    let bytes = if n.is_multiple_of(2) {
                        &other
                    } else {
                        &original
                    };
                    // Recorded first: the rename below may be the last before the deletion.
                    *last_written.lock().unwrap() = bytes.clone();
                    replace_by_rename(&victim, bytes);
                    n += 1;
                    std::thread::sleep(Duration::from_micros(200));
                }
            });
            let (code, err) = pack(&[
                "-j".as_ref(),
                "2".as_ref(),
                input.as_os_str(),
                "-o".as_ref(),
                out.as_os_str(),
                "--delete-input".as_ref(),
            ]);
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            assert!(code == 0 || code == 1, "{err}");
        });
        let z = out.join("f03.nc.nc3z");
        if !victim.exists() {
            assert_eq!(
                restored(&z),
                *last_written.lock().unwrap(),
                "trial {trial}: the victim was deleted, its archive does not hold its last bytes"
            );
        }
        for n in &names {
            if n != "f03.nc" && !input.join(n).exists() {
                assert_eq!(restored(&out.join(format!("{n}.nc3z"))), original, "{n}");
            }
        }
        // Nothing is left moved aside (an original is moved aside, then unlinked or put back).
        for e in std::fs::read_dir(&input).unwrap() {
            let name = e.unwrap().file_name();
            assert!(
                !name.to_string_lossy().starts_with(".nc3pack-deleting"),
                "trial {trial}: {name:?} left"
            );
        }
    }
}

/// A batch whose output directory is its input directory, with `--force`: a netCDF file named
/// `a.nc.nc3z` is an input, and where `a.nc`'s archive would go. It is never replaced: `a.nc`
/// fails saying so, `a.nc.nc3z` is packed like any input; a file that is not an archive is not
/// replaced either (with or without `--force`).
#[test]
fn a_batch_never_replaces_its_own_input_nor_a_file_that_is_not_an_archive() {
    let dir = temp_dir();
    let input = dir.path().join("in");
    populate(&input, &["a.nc", "a.nc.nc3z", "b.nc"]);
    let before = std::fs::read(input.join("a.nc.nc3z")).unwrap();
    let (code, err) = pack(&[
        input.as_os_str(),
        "-o".as_ref(),
        input.as_os_str(),
        "-f".as_ref(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!(
            "{}: output exists and is not an nc3pack archive; refusing to replace it (even with --force)",
            input.join("a.nc.nc3z").display()
        )),
        "{err}"
    );
    assert!(
        err.ends_with("1 of 3 files failed (listed above)\n"),
        "{err}"
    );
    assert_eq!(std::fs::read(input.join("a.nc.nc3z")).unwrap(), before);
    // The netCDF file named like an archive is packed as an input.
    assert_eq!(restored(&input.join("a.nc.nc3z.nc3z")), before);
    assert!(nc3pack::is_archive(
        &std::fs::File::open(input.join("b.nc.nc3z")).unwrap()
    ));
    // Any other file in an archive's place is kept too.
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("b.nc.nc3z"), b"notes, not an archive\n").unwrap();
    for force in [false, true] {
        let mut args = vec![input.join("b.nc").into_os_string(), "-o".into()];
        args.push(out.clone().into_os_string());
        if force {
            args.push("-f".into());
        }
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let (code, err) = pack(&args);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("is not an nc3pack archive"), "{err}");
        assert_eq!(
            std::fs::read(out.join("b.nc.nc3z")).unwrap(),
            b"notes, not an archive\n"
        );
    }
}

/// An archive given by name where another input's archive goes refuses the batch, with
/// `--force` too; a `--manifest` that is an archive, is named like one, or is an input refuses
/// it before anything is packed, written or deleted (appending to it would damage it after it
/// was verified, and its original be deleted).
#[test]
fn an_archive_given_as_input_or_as_manifest_refuses_the_batch() {
    let dir = temp_dir();
    let input = dir.path().join("in");
    populate(&input, &["a.nc", "b.nc"]);
    let (code, err) = pack(&[input.as_os_str(), "-o".as_ref(), input.as_os_str()]);
    assert_eq!(code, 0, "{err}");
    let archive = input.join("a.nc.nc3z");
    let before = std::fs::read(&archive).unwrap();
    let (code, err) = pack(&[
        archive.as_os_str(),
        input.as_os_str(),
        "-o".as_ref(),
        input.as_os_str(),
        "-f".as_ref(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!(
            "{}: is an input of this batch and where the archive of {} goes; refusing to start",
            archive.display(),
            input.join("a.nc").display()
        )),
        "{err}"
    );
    assert_eq!(std::fs::read(&archive).unwrap(), before);
    let out = dir.path().join("out");
    let fresh = out.join("a.nc.nc3z");
    for (manifest, what) in [
        (&fresh, "is named like an archive"),
        (&archive, "is named like an archive"),
        (&input.join("b.nc"), "is a netCDF file"),
    ] {
        let kept = std::fs::read(manifest).ok();
        let (code, err) = pack(&[
            input.as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
            "--manifest".as_ref(),
            manifest.as_os_str(),
            "--delete-input".as_ref(),
        ]);
        assert_eq!(code, 1, "{err}");
        assert!(
            err.starts_with(&format!(
                "nc3pack: {}: not a manifest: {what}",
                manifest.display()
            )),
            "{err}"
        );
        assert_eq!(std::fs::read(manifest).ok(), kept);
        assert!(input.join("a.nc").exists() && input.join("b.nc").exists());
        assert!(!fresh.exists());
    }
}

/// `--files-from` with CR LF line ends (a list written on Windows) names the files without the
/// CR; an output name longer than the filesystem holds fails before any packing, naming the
/// limit.
#[test]
fn a_crlf_list_names_its_files_and_a_too_long_name_fails_first() {
    let dir = temp_dir();
    let input = dir.path().join("in");
    populate(&input, &["a.nc", "b.nc"]);
    let list = dir.path().join("list.txt");
    std::fs::write(
        &list,
        format!(
            "{}\r\n{}\r\n",
            input.join("a.nc").display(),
            input.join("b.nc").display()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let (code, err) = pack(&[
        "--files-from".as_ref(),
        list.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.join("a.nc.nc3z").exists() && out.join("b.nc.nc3z").exists());
    // A 255-byte name: its archive's name (260 bytes) cannot exist.
    let long = input.join(format!("{}.nc", "x".repeat(252)));
    std::fs::copy(sample("gridded_sst.nc"), &long).unwrap();
    let z = dir.path().join(format!("{}.nc.nc3z", "x".repeat(252)));
    let out = crate::util::nc3pack(&[long.as_os_str(), z.as_os_str()]).output();
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr
            .contains("file name is 260 bytes long, more than the 255 its filesystem holds"),
        "{out:?}"
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with(".nc3pack-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// Every path under `dir`, relative to it, sorted.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if std::fs::symlink_metadata(&p).unwrap().is_dir() {
                todo.push(p.clone());
            }
            out.push(p.strip_prefix(dir).unwrap().to_string_lossy().into_owned());
        }
    }
    out.sort();
    out
}

/// `nc3pack pack -q -j 1 --delete-input IN -o OUT` run by a debug build that kills itself
/// (SIGKILL) right after moving the first original aside, before unlinking it: the state a
/// kill at that instant leaves. `a.nc` is the one moved aside (one thread, name order).
fn killed_while_deleting(input: &Path, out: &Path) {
    use std::os::unix::process::ExitStatusExt;
    populate(input, &["a.nc", "b.nc"]);
    let status = Command::new(BIN)
        .args(["pack", "-q", "-j", "1", "--delete-input"])
        .arg(input)
        .arg("-o")
        .arg(out)
        .env("NC3PACK_TEST_KILL_AFTER_ASIDE", "1")
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    assert!(!input.join("a.nc").exists(), "{:?}", tree(input));
    assert!(input.join("b.nc").exists(), "{:?}", tree(input));
    assert!(tree(input).iter().any(|p| p.contains(".nc3pack-deleting-")));
}

/// A run killed between moving an original aside and unlinking it (a real SIGKILL at that
/// instant): the rerun never packs the moved-aside file as an original of its own (it once
/// wrote `out/.nc3pack-deleting-PID-0.nc3z` and recorded it); it puts the original back under
/// its name, says so, and deletes it as any other (its archive verified, its bytes read
/// again). Nothing hidden is left in the input tree, and every archive restores its original.
#[test]
fn a_run_killed_while_deleting_an_original_is_finished_by_the_rerun() {
    let dir = temp_dir();
    let (input, out) = (dir.path().join("in"), dir.path().join("out"));
    killed_while_deleting(&input, &out);
    let (code, err) = pack(&[
        input.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
        "--delete-input".as_ref(),
    ]);
    assert_eq!(code, 0, "{err}");
    let archives: Vec<String> = tree(&out)
        .into_iter()
        .filter(|p| !p.starts_with(".nc3pack/") && p != ".nc3pack")
        .collect();
    assert_eq!(archives, ["a.nc.nc3z", "b.nc.nc3z"], "{err}");
    assert_eq!(tree(&input), Vec::<String>::new(), "{err}");
    let a = input.join("a.nc");
    assert!(
        err.contains(&format!("{}: put back from ", a.display())),
        "{err}"
    );
    for n in ["a.nc", "b.nc"] {
        assert!(
            restored(&out.join(format!("{n}.nc3z")))
                == std::fs::read(sample("classic_records.nc")).unwrap()
        );
    }
    let manifest = std::fs::read_to_string(out.join(".nc3pack/manifest-0-of-1.jsonl")).unwrap();
    assert!(!manifest.contains(".nc3pack-deleting"), "{manifest}");
}

/// After a run killed while deleting `a.nc`: a rerun without `--delete-input` puts it back and
/// keeps it; and when a new `a.nc` took its name meanwhile, the rerun replaces nothing and
/// deletes nothing of the two: both are kept, and it says so.
#[test]
fn a_moved_aside_original_is_put_back_and_never_over_a_new_file() {
    let dir = temp_dir();
    let (input, out) = (dir.path().join("in"), dir.path().join("out"));
    killed_while_deleting(&input, &out);
    let (code, err) = pack(&[input.as_os_str(), "-o".as_ref(), out.as_os_str()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(tree(&input), ["a.nc", "b.nc"], "{err}");
    let a = input.join("a.nc");
    assert!(
        err.contains(&format!("{}: put back from ", a.display())),
        "{err}"
    );
    assert!(std::fs::read(&a).unwrap() == std::fs::read(sample("classic_records.nc")).unwrap());

    let dir = temp_dir();
    let (input, out) = (dir.path().join("in"), dir.path().join("out"));
    killed_while_deleting(&input, &out);
    let a = input.join("a.nc");
    std::fs::write(&a, b"a new file, not netCDF").unwrap();
    let (code, err) = pack(&[
        input.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
        "--delete-input".as_ref(),
    ]);
    assert!(
        err.contains(&format!("not put back: {} exists (both kept)", a.display())),
        "{err}"
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(std::fs::read(&a).unwrap(), b"a new file, not netCDF");
    let aside: Vec<String> = tree(&input)
        .into_iter()
        .filter(|p| p.contains(".nc3pack-deleting-") && p.ends_with("/a.nc"))
        .collect();
    assert_eq!(aside.len(), 1, "{:?}", tree(&input));
    assert!(
        std::fs::read(input.join(&aside[0])).unwrap()
            == std::fs::read(sample("classic_records.nc")).unwrap()
    );
    // Nothing hidden was packed.
    assert!(
        tree(&out).iter().all(|p| !p.contains(".nc3pack-deleting")),
        "{:?}",
        tree(&out)
    );
}

/// Hidden files and directories found in a directory are not inputs (nor deleted with
/// `--delete-input`): a hidden netCDF file, one in a hidden directory, and files named as
/// nc3pack's own temporaries (an earlier version's moved-aside original among them: it was
/// packed as an original of its own and deleted) are left alone; a hidden file named on the
/// command line is packed.
#[test]
fn hidden_files_found_in_a_directory_are_not_inputs() {
    let dir = temp_dir();
    let (input, out) = (dir.path().join("in"), dir.path().join("out"));
    let hidden = [
        ".h.nc",
        ".d/x.nc",
        "sub/.nc3pack-deleting-4242-0",
        "sub/.nc3pack-ab12cd.part",
    ];
    populate(&input, &["a.nc", "sub/b.nc"]);
    populate(&input, &hidden);
    let (code, err) = pack(&[
        input.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
        "--delete-input".as_ref(),
    ]);
    let mut want: Vec<String> = hidden.iter().map(|h| h.to_string()).collect();
    want.extend([".d".into(), "sub".into()]);
    want.sort();
    assert_eq!(tree(&input), want, "{err}");
    let archives: Vec<String> = tree(&out)
        .into_iter()
        .filter(|p| p.ends_with(".nc3z"))
        .collect();
    assert_eq!(archives, ["a.nc.nc3z", "sub/b.nc.nc3z"], "{err}");
    // The name an earlier version moved an original aside under does not say whose it is: the
    // run says so, and fails for it (it needs a look).
    let legacy = input.join("sub/.nc3pack-deleting-4242-0");
    assert!(
        err.contains(&format!("{}: an original moved aside", legacy.display())),
        "{err}"
    );
    assert_eq!(code, 1, "{err}");
    // Named on the command line, a hidden file is an input.
    let h = input.join(".h.nc");
    let (code, err) = pack(&[h.as_os_str(), "-o".as_ref(), out.as_os_str()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.join(".h.nc.nc3z").exists(), "{:?}", tree(&out));
}

/// The moved-aside original of a file given by name (not found in a directory) is put back
/// too: the rerun names it, finds it missing, and looks beside it. And a directory named for
/// this very process (an earlier process that had its id: a container's process 1, run again)
/// is not taken for one of this process's own at work: its original is put back.
#[test]
fn a_moved_aside_original_given_by_name_or_of_an_earlier_process_with_this_id_is_put_back() {
    let dir = temp_dir();
    let (input, out) = (dir.path().join("in"), dir.path().join("out"));
    killed_while_deleting(&input, &out);
    let (a, b) = (input.join("a.nc"), input.join("b.nc"));
    let (code, err) = pack(&[
        a.as_os_str(),
        b.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
        "--delete-input".as_ref(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(tree(&input), Vec::<String>::new(), "{err}");
    assert!(
        err.contains(&format!("{}: put back from ", a.display())),
        "{err}"
    );
    assert!(
        restored(&out.join("a.nc.nc3z")) == std::fs::read(sample("classic_records.nc")).unwrap()
    );

    let dir = temp_dir();
    let (input, out) = (dir.path().join("in"), dir.path().join("out"));
    killed_while_deleting(&input, &out);
    // `.nc3pack-deleting-HOST@PID-N`, renamed to this process's id.
    let aside = tree(&input)
        .into_iter()
        .find(|p| p.starts_with(".nc3pack-deleting-") && !p.contains('/'))
        .unwrap();
    let (host, rest) = aside["deleting-".len() + 9..].split_once('@').unwrap();
    let n = rest.split_once('-').unwrap().1;
    let mine = format!(".nc3pack-deleting-{host}@{}-{n}", std::process::id());
    std::fs::rename(input.join(&aside), input.join(&mine)).unwrap();
    let r = nc3pack::pack_collection(
        &[&input],
        &out,
        &nc3pack::CollectionOptions::default().with_threads(1),
    )
    .unwrap();
    assert!(r.is_ok(), "{r:?}");
    let put: Vec<String> = r.leftovers.iter().map(|l| l.to_string()).collect();
    assert_eq!(
        put,
        [format!(
            "{}: put back from {} (a run killed while deleting it)",
            input.join("a.nc").display(),
            input.join(&mine).display()
        )]
    );
    assert_eq!(tree(&input), ["a.nc", "b.nc"]);
}
