//! Thread counts: `-j` out of range is a usage error (exit 2), and a thread the system refuses
//! to start is an error (exit 1, one line, no output left), never a panic; reading needs no thread.
//!
//! A refused thread is provoked with `RUST_MIN_STACK` set to 1 PiB: every thread the Rust
//! standard library starts then asks for a stack that cannot be mapped, and `pthread_create`
//! fails (EAGAIN), for root too. (`ulimit -u`, RLIMIT_NPROC, does not bind root, which runs
//! these tests.) The variable is read when a process starts, so the library-level checks run in
//! a child process: this test binary, re-run on one test.

use crate::util::{nc3pack, sample, temp_dir};
use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

/// A stack size no thread can get.
const HUGE_STACK: &str = "1125899906842624";

fn run(args: &[&OsStr], env: &[(&str, &str)]) -> (i32, String, String) {
    let o = env
        .iter()
        .fold(nc3pack(args), |r, (k, v)| r.env(k, v))
        .output();
    let code = o.code.unwrap_or_else(|| panic!("killed by a signal:\n{o}"));
    (code, o.stdout, o.stderr)
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn thread_counts_outside_1_to_1024_are_usage_errors() {
    let dir = temp_dir();
    let input = sample("gridded_sst.nc");
    let archive = dir.path().join("a.nc3z");
    nc3pack::pack_file(&input, &archive, &nc3pack::PackOptions::default()).unwrap();
    let out = dir.path().join("out");
    let outdir = dir.path().join("outdir");
    let commands: [Vec<&OsStr>; 5] = [
        vec!["pack".as_ref(), input.as_ref(), out.as_ref()],
        vec![
            "pack".as_ref(),
            input.as_ref(),
            "-o".as_ref(),
            outdir.as_ref(),
        ],
        vec!["unpack".as_ref(), archive.as_ref(), out.as_ref()],
        vec!["verify".as_ref(), archive.as_ref()],
        vec!["reindex".as_ref(), archive.as_ref(), out.as_ref()],
    ];
    for j in [
        "0",
        "1025",
        "100000",
        "18446744073709551615",
        "99999999999999999999999",
    ] {
        for cmd in &commands {
            let mut args = cmd.clone();
            args.extend([OsStr::new("-j"), OsStr::new(j)]);
            let (code, stdout, err) = run(&args, &[]);
            assert_eq!((code, stdout.as_str()), (2, ""), "{args:?}: {err}");
            assert!(!err.contains("panicked"), "{args:?}: {err}");
            assert!(
                err.starts_with(&format!(
                    "error: invalid value '{j}' for '--threads <THREADS>'"
                )),
                "{args:?}: {err}"
            );
            assert!(!out.exists() && !outdir.exists(), "{args:?}");
        }
    }
    // The help says the range.
    let (code, help, _) = run(&["pack".as_ref(), "--help".as_ref()], &[]);
    assert_eq!(code, 0);
    assert!(help.contains("Worker threads, 1 to 1024"), "{help}");
    // The top of the range works: 1024 encoder threads, then 1024 decoder threads.
    let (code, _, err) = run(
        &[
            "pack".as_ref(),
            "-q".as_ref(),
            "-j".as_ref(),
            "1024".as_ref(),
            input.as_ref(),
            out.as_ref(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    let back = dir.path().join("back.nc");
    let (code, _, err) = run(
        &[
            "unpack".as_ref(),
            "-q".as_ref(),
            "-j".as_ref(),
            "1024".as_ref(),
            out.as_ref(),
            back.as_ref(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read(&back).unwrap() == std::fs::read(&input).unwrap());
}

#[test]
fn a_thread_that_cannot_start_is_a_one_line_error_and_leaves_nothing() {
    let dir = temp_dir();
    // Over 4 MiB, so packing with 2 threads starts encoder threads.
    let input = sample("gridded_sst.nc");
    let archive = dir.path().join("a.nc3z");
    nc3pack::pack_file(&input, &archive, &nc3pack::PackOptions::default()).unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let out = work.join("out");
    let outdir = work.join("outdir");
    let j2: [&OsStr; 2] = ["-j".as_ref(), "2".as_ref()];
    let cases: [(Vec<&OsStr>, &Path); 4] = [
        (vec!["pack".as_ref(), input.as_ref(), out.as_ref()], &input),
        (
            vec![
                "pack".as_ref(),
                input.as_ref(),
                "-o".as_ref(),
                outdir.as_ref(),
            ],
            &input,
        ),
        (
            vec!["unpack".as_ref(), archive.as_ref(), out.as_ref()],
            &archive,
        ),
        (vec!["verify".as_ref(), archive.as_ref()], &archive),
    ];
    for (mut args, named) in cases {
        if args[0] != "slice" {
            args.extend(j2);
        }
        let (code, stdout, err) = run(&args, &[("RUST_MIN_STACK", HUGE_STACK)]);
        assert_eq!((code, stdout.as_str()), (1, ""), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with(&format!(
                "nc3pack: {}: cannot start a thread (",
                named.display()
            )),
            "{args:?}: {err}"
        );
        assert!(
            err.trim_end().ends_with("try fewer threads (-j)"),
            "{args:?}: {err}"
        );
        assert!(
            files_in(&work).is_empty(),
            "{args:?}: {:?}",
            files_in(&work)
        );
    }
    // Reading needs no thread: the reading threads are a pool started on first use, and
    // without it the calling thread decodes every block (a whole variable of 8 blocks here).
    let want = run(&["slice".as_ref(), archive.as_ref(), "sst".as_ref()], &[]).1;
    for format in ["text", "raw"] {
        let args: [&OsStr; 5] = [
            "slice".as_ref(),
            archive.as_ref(),
            "sst".as_ref(),
            "--format".as_ref(),
            format.as_ref(),
        ];
        let (code, stdout, err) = run(&args, &[("RUST_MIN_STACK", HUGE_STACK)]);
        assert_eq!(code, 0, "{args:?}: {err}");
        let (_, again, _) = run(&args, &[]);
        assert!(stdout == again && !stdout.is_empty(), "{args:?}");
        if format == "text" {
            assert!(stdout == want, "{args:?}");
        }
    }
}

/// The library returns `Error::Thread` where a thread cannot start: run in a child process
/// started with a stack size no thread can get (see the module docs).
#[test]
fn library_functions_return_an_error_when_a_thread_cannot_start() {
    const CHILD: &str = "NC3PACK_TEST_THREADS_CHILD";
    if let Some(dir) = std::env::var_os(CHILD) {
        return child(Path::new(&dir));
    }
    let dir = temp_dir();
    nc3pack::pack_file(
        &sample("gridded_sst.nc"),
        &dir.path().join("a.nc3z"),
        &nc3pack::PackOptions::default(),
    )
    .unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "threads::library_functions_return_an_error_when_a_thread_cannot_start",
            "--exact",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(CHILD, dir.path())
        .env("RUST_MIN_STACK", HUGE_STACK)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "the child ran no test: {text}");
    assert!(text.contains("child: every check ran"), "{text}");
}

/// The checks of [`library_functions_return_an_error_when_a_thread_cannot_start`], in a process
/// where no thread can start.
fn child(dir: &Path) {
    use nc3pack::Error;
    let thread_error = |r: Result<(), Error>, path: &Path, what: &str| match r {
        Err(Error::Thread { path: p, source }) => {
            assert_eq!(p, path, "{what}");
            assert_eq!(
                source.source.kind(),
                std::io::ErrorKind::WouldBlock,
                "{what}"
            );
        }
        other => panic!("{what}: expected Error::Thread, got {other:?}"),
    };
    // Threads really cannot start here.
    assert!(std::thread::Builder::new().spawn(|| ()).is_err());
    let input = sample("gridded_sst.nc");
    let archive = dir.join("a.nc3z");
    let opts = nc3pack::PackOptions::default().with_threads(2);
    let out = dir.join("out.nc3z");
    thread_error(
        nc3pack::pack_file(&input, &out, &opts).map(drop),
        &input,
        "pack_file",
    );
    let stream = Path::new("<stream>");
    let reader = std::fs::File::open(&input).unwrap();
    thread_error(
        nc3pack::pack_reader(reader, stream, &out, &opts).map(drop),
        stream,
        "pack_reader",
    );
    // With one thread, packing needs none.
    let one = nc3pack::PackOptions::default().with_threads(1);
    nc3pack::pack_file(&input, &out, &one).unwrap();
    std::fs::remove_file(&out).unwrap();
    let back = dir.join("back.nc");
    thread_error(
        nc3pack::unpack_file(
            &archive,
            &back,
            &nc3pack::UnpackOptions::default().with_threads(2),
        )
        .map(drop),
        &archive,
        "unpack_file",
    );
    thread_error(
        nc3pack::verify(&archive, &nc3pack::VerifyOptions::default().with_threads(2)).map(drop),
        &archive,
        "verify",
    );
    // Reading needs no thread (the calling thread decodes every block).
    let mut a = nc3pack::Archive::open(&archive).unwrap();
    a.set_threads(2);
    let sst = a.header().var_id("sst").unwrap();
    let original = nc3pack::NcFile::open(&input).unwrap();
    assert!(
        a.read_var_bytes(sst).unwrap() == nc3pack::Dataset::read_var_bytes(&original, sst).unwrap(),
        "read_var_bytes"
    );
    let collection = nc3pack::CollectionOptions::default().with_pack(opts.clone().with_threads(2));
    thread_error(
        nc3pack::pack_collection(&[&input], &dir.join("batch"), &collection).map(drop),
        &input,
        "pack_collection",
    );
    let r = nc3pack::testing::ordered_map(&[1, 2, 3], 2, 4, |&x| x, |_, _| Ok(()));
    assert!(
        matches!(r, Err(nc3pack::testing::WorkerError::Spawn(_))),
        "ordered_map: {r:?}"
    );
    // Nothing was left behind.
    let mut left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    left.sort();
    assert_eq!(left, ["a.nc3z"], "files left behind");
    println!("child: every check ran");
}
