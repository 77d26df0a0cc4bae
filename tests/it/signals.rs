//! Interrupting the command line: SIGINT, SIGTERM, SIGHUP (and SIGABRT, what an allocation
//! failure raises, and SIGQUIT, SIGUSR1, SIGUSR2, SIGXCPU and SIGXFSZ) remove every temporary file and the process dies by the signal it got, as the
//! shell expects; a batch keeps the archives it had already renamed into place.

use crate::util::{sample, temp_dir, BIN};
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Every signal that removes the temporary files.
const ALL: [libc::c_int; 9] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGABRT,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGXCPU,
    libc::SIGXFSZ,
];

/// The command, with the signals tested at their default disposition (a parent may ignore
/// SIGINT or SIGHUP, which the child would inherit) and no core dumps.
fn command(args: &[&std::ffi::OsStr]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args).stdout(Stdio::null()).stderr(Stdio::piped());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        c.pre_exec(|| {
            for s in ALL {
                libc::signal(s, libc::SIG_DFL);
            }
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            Ok(())
        });
    }
    c
}

/// Every path under `dir` (recursively), relative to it.
fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p.clone());
            }
            out.push(p.strip_prefix(dir).unwrap().to_string_lossy().into_owned());
        }
    }
    out.sort();
    out
}

fn temporaries(dir: &Path) -> Vec<String> {
    files(dir)
        .into_iter()
        .filter(|f| f.contains(".nc3pack-") && f.ends_with(".part"))
        .collect()
}

/// `nc3pack pack -q -j 2 INPUT -o OUT`, started.
fn batch_on_two_workers(input: &Path, out: &Path) -> Child {
    command(&[
        "pack".as_ref(),
        "-q".as_ref(),
        "-j".as_ref(),
        "2".as_ref(),
        input.as_ref(),
        "-o".as_ref(),
        out.as_ref(),
    ])
    .spawn()
    .unwrap()
}

/// How many archives (`*.nc3z`) are in `out` (not below it).
fn archives(out: &Path) -> usize {
    std::fs::read_dir(out).map_or(0, |d| {
        d.filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".nc3z"))
        })
        .count()
    })
}

/// Polls `until` every millisecond for at most 20 s.
fn wait_for(what: &str, mut until: impl FnMut() -> bool) {
    for _ in 0..20_000 {
        if until() {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("gave up waiting for {what}");
}

fn kill(child: &Child, sig: libc::c_int) {
    // SAFETY: kill only sends a signal to our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
}

/// Waits at most 20 s for the child to end; returns its status and stderr.
fn finish(mut child: Child) -> (std::process::ExitStatus, String) {
    let mut status = None;
    wait_for("the process to end", || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (status.unwrap(), err)
}

/// A classic file of one float record variable, `records` records of 1 MiB of noise (which
/// compresses slowly and badly): large enough to be still packing or unpacking when signalled.
fn write_big(path: &Path, records: u32) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut h = b"CDF\x01".to_vec();
    h.extend_from_slice(&records.to_be_bytes()); // numrecs
    h.extend_from_slice(&[0, 0, 0, 0x0A, 0, 0, 0, 2]); // two dims
    h.extend_from_slice(&[0, 0, 0, 1, b't', 0, 0, 0, 0, 0, 0, 0]); // t = UNLIMITED
    h.extend_from_slice(&[0, 0, 0, 1, b'x', 0, 0, 0, 0, 4, 0, 0]); // x = 262144
    h.extend_from_slice(&[0; 8]); // no global attributes
    h.extend_from_slice(&[0, 0, 0, 0x0B, 0, 0, 0, 1]); // one variable
    h.extend_from_slice(&[
        0, 0, 0, 1, b'v', 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1,
    ]);
    h.extend_from_slice(&[0; 8]); // no attributes
    h.extend_from_slice(&[0, 0, 0, 5, 0, 0x10, 0, 0]); // float, vsize 1 MiB
    let begin = h.len() as u32 + 4;
    h.extend_from_slice(&begin.to_be_bytes());
    f.write_all(&h).unwrap();
    let mut x = 1u32;
    for _ in 0..records {
        let rec: Vec<u8> = (0..262144)
            .flat_map(|_| {
                x = x.wrapping_mul(1664525).wrapping_add(1013904223);
                ((x >> 8) as f32).to_be_bytes()
            })
            .collect();
        f.write_all(&rec).unwrap();
    }
}

/// Pack from a pipe that stops mid-file: the process waits for input with its temporary file
/// open, for as long as the test wants. Each signal removes it, leaves no output and kills the
/// process by that signal.
#[test]
fn a_signal_during_pack_removes_the_temporary_file() {
    let input = std::fs::read(sample("gridded_sst.nc")).unwrap();
    for sig in ALL {
        let dir = temp_dir();
        let out = dir.path().join("out.nc3z");
        let mut child = command(&["pack".as_ref(), "-q".as_ref(), "-".as_ref(), out.as_ref()])
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(&input[..input.len() / 3]).unwrap();
        wait_for("the temporary file", || !temporaries(dir.path()).is_empty());
        kill(&child, sig);
        // stdin stays open until the process has ended: it cannot finish the pack.
        let (status, err) = finish(child);
        drop(stdin);
        assert_eq!(status.signal(), Some(sig), "signal {sig}: {status:?} {err}");
        assert_eq!(files(dir.path()), Vec::<String>::new(), "signal {sig}");
    }
}

/// Stops the child as soon as `ready` holds (so that it cannot finish meanwhile), sends `sig`,
/// lets it go on, and returns how it ended.
fn interrupt_when(
    child: Child,
    sig: libc::c_int,
    ready: impl FnMut() -> bool,
) -> (std::process::ExitStatus, String) {
    wait_for("the process to be under way", ready);
    kill(&child, libc::SIGSTOP);
    kill(&child, sig);
    kill(&child, libc::SIGCONT);
    finish(child)
}

#[test]
fn a_signal_during_unpack_or_reindex_removes_the_temporary_file() {
    let dir = temp_dir();
    let big = dir.path().join("big.nc");
    write_big(&big, 48);
    let archive = dir.path().join("big.nc3z");
    nc3pack::pack_file(&big, &archive, &nc3pack::PackOptions::default()).unwrap();
    std::fs::remove_file(&big).unwrap();
    for (cmd, sig) in [
        ("unpack", libc::SIGINT),
        ("unpack", libc::SIGTERM),
        ("unpack", libc::SIGHUP),
        ("reindex", libc::SIGTERM),
    ] {
        let out = dir.path().join("out");
        let child = command(&[
            cmd.as_ref(),
            "-q".as_ref(),
            "-j".as_ref(),
            "1".as_ref(),
            archive.as_ref(),
            out.as_ref(),
        ])
        .spawn()
        .unwrap();
        let (status, err) = interrupt_when(child, sig, || !temporaries(dir.path()).is_empty());
        assert_eq!(status.signal(), Some(sig), "{cmd} {sig}: {status:?} {err}");
        assert_eq!(files(dir.path()), ["big.nc3z"], "{cmd} {sig}");
    }
}

/// A batch of 300 small files and one large one, interrupted while the large one is packed:
/// the first commit group (renamed into place, complete) stays; the files finished since, still
/// waiting in the next group, and the one being written are removed.
#[test]
fn a_signal_during_a_batch_keeps_committed_archives_and_removes_the_rest() {
    let dir = temp_dir();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    let small = sample("classic_records.nc");
    for i in 0..300 {
        std::fs::copy(&small, input.join(format!("a{i:03}.nc"))).unwrap();
    }
    // Large enough that the batch is still at work when the test, polling every millisecond
    // on a loaded machine, sees the first group of archives.
    write_big(&input.join("z.nc"), 128);
    let out = dir.path().join("out");
    let child = batch_on_two_workers(&input, &out);
    let (status, err) = interrupt_when(child, libc::SIGINT, || archives(&out) >= 256);
    assert_eq!(status.signal(), Some(libc::SIGINT), "{status:?} {err}");
    assert_eq!(temporaries(&out), Vec::<String>::new());
    let kept: Vec<String> = files(&out)
        .into_iter()
        .filter(|f| f.ends_with(".nc3z"))
        .collect();
    assert_eq!(kept.len(), 256, "{kept:?}");
    assert!(!kept.contains(&"z.nc.nc3z".to_string()));
    for name in [&kept[0], &kept[255]] {
        let back = dir.path().join("back.nc");
        nc3pack::unpack_file(
            &out.join(name),
            &back,
            &nc3pack::UnpackOptions::default()
                .with_force(true)
                .with_threads(1),
        )
        .unwrap();
        assert!(std::fs::read(&back).unwrap() == std::fs::read(&small).unwrap());
    }
}

/// SIGTERM to a batch of 1,500 small files on two workers, after its first commit group:
/// nothing temporary is left, however many files the workers were creating while the handler
/// removed the others (it once left 28 to 180 of them). Three runs.
#[test]
fn a_signal_during_a_batch_of_many_small_files_leaves_no_temporary_file() {
    let dir = temp_dir();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    let small = sample("scalars.nc");
    for i in 0..1500 {
        std::fs::copy(&small, input.join(format!("f{i:04}.nc"))).unwrap();
    }
    for trial in 0..3 {
        let out = dir.path().join(format!("out{trial}"));
        let child = batch_on_two_workers(&input, &out);
        // Not stopped first (as `interrupt_when` does): the workers must be running.
        wait_for("the first commit group", || archives(&out) >= 256);
        kill(&child, libc::SIGTERM);
        let (status, err) = finish(child);
        if status.success() {
            // Finished before the signal came (a fast machine): nothing to check.
            continue;
        }
        assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?} {err}");
        assert_eq!(temporaries(&out), Vec::<String>::new(), "run {trial}");
    }
}

/// An allocation failure removes the temporary file too: unpacking an archive of one 48 MiB
/// block under address-space limits from tight to ample, each run either succeeds, fails with
/// one line (a block's buffers are allocated fallibly: "cannot allocate N bytes of memory for
/// block 0 of ...") or dies by SIGABRT (an allocation that Rust aborts on: "memory allocation of
/// N bytes failed"), leaving nothing behind; at least one limit must make it run out of memory.
#[test]
fn an_allocation_failure_removes_the_temporary_file() {
    let dir = temp_dir();
    let big = dir.path().join("big.nc");
    write_big(&big, 48);
    let archive = dir.path().join("big.nc3z");
    let opts = nc3pack::PackOptions::default().with_block_size(64 << 20);
    nc3pack::pack_file(&big, &archive, &opts).unwrap();
    let original = std::fs::read(&big).unwrap();
    std::fs::remove_file(&big).unwrap();
    let out = dir.path().join("out.nc");
    let mut no_memory = 0;
    for mib in [96u64, 128, 160, 192, 224, 256, 320, 384] {
        let limit = mib << 20;
        let mut c = command(&[
            "unpack".as_ref(),
            "-q".as_ref(),
            "-j".as_ref(),
            "1".as_ref(),
            archive.as_ref(),
            out.as_ref(),
        ]);
        // SAFETY: setrlimit is async-signal-safe.
        unsafe {
            c.pre_exec(move || {
                let r = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                libc::setrlimit(libc::RLIMIT_AS, &r);
                Ok(())
            });
        }
        let (status, err) = finish(c.spawn().unwrap());
        if status.signal() == Some(libc::SIGABRT) {
            no_memory += 1;
            assert!(err.contains("memory allocation"), "{mib} MiB: {err}");
            assert_eq!(files(dir.path()), ["big.nc3z"], "{mib} MiB: {err}");
        } else if status.success() {
            assert!(std::fs::read(&out).unwrap() == original, "{mib} MiB");
            std::fs::remove_file(&out).unwrap();
        } else {
            // No memory for the block, or too tight to start (a thread or the archive's first
            // read refused): an error, and nothing left either.
            assert_eq!(status.code(), Some(1), "{mib} MiB: {status:?} {err}");
            assert_eq!(err.lines().count(), 1, "{mib} MiB: {err}");
            if err.contains("cannot allocate") {
                no_memory += 1;
            }
            assert_eq!(files(dir.path()), ["big.nc3z"], "{mib} MiB: {err}");
        }
    }
    assert!(no_memory > 0, "no limit made unpack run out of memory");
}

/// SIGKILL cannot be caught: a batch killed while packing leaves its temporary files. A rerun
/// into the same output removes those whose process is gone and says how many; a temporary
/// named for a process that is running (this test's) or for another host is left alone, and
/// counted.
#[test]
fn a_rerun_removes_the_temporary_files_of_a_killed_batch() {
    let dir = temp_dir();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    for n in ["a.nc", "b.nc"] {
        write_big(&input.join(n), 24);
    }
    let out = dir.path().join("out");
    let child = batch_on_two_workers(&input, &out);
    // (Listed directly: the directory may not be made yet, and files come and go.)
    wait_for("a temporary file", || {
        std::fs::read_dir(&out).is_ok_and(|d| {
            d.flatten().any(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.starts_with(".nc3pack-") && n.ends_with(".part")
            })
        })
    });
    kill(&child, libc::SIGKILL);
    let (status, _) = finish(child);
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    let left = temporaries(&out);
    assert!(!left.is_empty());
    let rerun = command(&["pack".as_ref(), input.as_ref(), "-o".as_ref(), out.as_ref()]);
    let (status, err) = finish(rerun_spawn(rerun));
    assert!(status.success(), "{status:?} {err}");
    let plural = if left.len() == 1 { "" } else { "s" };
    assert!(
        err.contains(&format!(
            "removed {} temporary file{plural} of killed runs from {}",
            left.len(),
            out.display()
        )),
        "{left:?} {err}"
    );
    assert_eq!(temporaries(&out), Vec::<String>::new(), "{err}");
    // `.nc3pack-HOST@PID-XXXXXX.part`: the same names with this (running) process's id, and
    // with another host's name.
    let name = &left[0];
    let (host, rest) = name
        .strip_prefix(".nc3pack-")
        .and_then(|r| r.split_once('@'))
        .expect(name);
    let (_, tail) = rest.split_once('-').expect(name);
    let live = format!(".nc3pack-{host}@{}-{tail}", std::process::id());
    let other = format!(".nc3pack-elsewhere.example@1-{tail}");
    for n in [&live, &other] {
        std::fs::write(out.join(n), b"partial").unwrap();
    }
    let rerun = command(&["pack".as_ref(), input.as_ref(), "-o".as_ref(), out.as_ref()]);
    let (status, err) = finish(rerun_spawn(rerun));
    assert!(status.success(), "{status:?} {err}");
    assert!(!err.contains("removed"), "{err}");
    assert!(
        err.contains(&format!("left 2 temporary files in {}", out.display())),
        "{err}"
    );
    let mut want = vec![live, other];
    want.sort();
    assert_eq!(temporaries(&out), want);
}

fn rerun_spawn(mut c: Command) -> Child {
    c.spawn().unwrap()
}
