//! Pipes given as paths (`<(...)`, `/dev/stdin`, a FIFO): `pack` reads them as a stream, as it
//! reads `-`, and writes the archive the file gives; the commands that need to seek say so.

use crate::util::{nc3pack, sample, temp_dir};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A FIFO with a thread writing `bytes` into it once a reader opens it.
struct Fifo {
    path: PathBuf,
    writer: std::thread::JoinHandle<()>,
}

impl Fifo {
    fn new(path: &Path, bytes: Vec<u8>) -> Fifo {
        let st = Command::new("mkfifo").arg(path).status().unwrap();
        assert!(st.success());
        let p = path.to_path_buf();
        let writer = std::thread::spawn(move || {
            // Blocks until a reader opens the FIFO; a reader that stops early is no error here.
            if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&p) {
                let _ = std::io::Write::write_all(&mut f, &bytes);
            }
        });
        Fifo {
            path: path.to_path_buf(),
            writer,
        }
    }

    /// Waits for the writer, first opening the FIFO for reading (and closing it) in case nobody
    /// did, so that the writer's open returns; then removes the FIFO.
    fn finish(self) {
        use std::os::unix::fs::OpenOptionsExt;
        let r = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&self.path);
        drop(r);
        self.writer.join().unwrap();
        std::fs::remove_file(&self.path).unwrap();
    }
}

/// Runs the binary with `args` (and `stdin` on its standard input, if given); returns (exit
/// code, stdout, stderr).
fn run(args: &[&OsStr], stdin: Option<&[u8]>) -> (i32, String, String) {
    let mut r = nc3pack(args);
    if let Some(bytes) = stdin {
        // nc3pack may stop reading early (refusing the input): not a test failure.
        r = r.stdin(bytes);
    }
    let o = r.output();
    let code = o.code.unwrap_or_else(|| panic!("killed by a signal:\n{o}"));
    (code, o.stdout, o.stderr)
}

/// What `pack_file` writes for a regular file with one thread.
fn packed_from_file(input: &Path, dir: &Path) -> Vec<u8> {
    let z = dir.join("from_file.nc3z");
    let opts = nc3pack::PackOptions::default().with_threads(1);
    nc3pack::pack_file(input, &z, &opts.clone().with_force(true)).unwrap();
    std::fs::read(z).unwrap()
}

#[test]
fn a_fifo_or_dev_stdin_given_as_input_packs_to_the_archive_of_the_file() {
    let dir = temp_dir();
    let d = dir.path();
    let one = nc3pack::PackOptions::default().with_threads(1);
    for name in [
        "gridded_sst.nc",
        "classic_records.nc",
        "truncated_record.nc",
        "trailing_bytes.nc",
    ] {
        let input = sample(name);
        let bytes = std::fs::read(&input).unwrap();
        let want = packed_from_file(&input, d);
        let fifo_path = d.join(name);
        let out = d.join("out.nc3z");

        // The library, given the FIFO's path.
        let fifo = Fifo::new(&fifo_path, bytes.clone());
        let s = nc3pack::pack_file(&fifo_path, &out, &one);
        fifo.finish();
        let s = s.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(s.input_len, bytes.len() as u64, "{name}");
        assert!(
            std::fs::read(&out).unwrap() == want,
            "{name}: library, FIFO"
        );
        std::fs::remove_file(&out).unwrap();

        // The command line, given the FIFO.
        let fifo = Fifo::new(&fifo_path, bytes.clone());
        let r = run(
            &[
                "-q".as_ref(),
                "-j".as_ref(),
                "1".as_ref(),
                fifo_path.as_ref(),
                out.as_ref(),
            ],
            None,
        );
        fifo.finish();
        assert_eq!(r, (0, String::new(), String::new()), "{name}: FIFO");
        assert!(std::fs::read(&out).unwrap() == want, "{name}: CLI, FIFO");
        std::fs::remove_file(&out).unwrap();

        // The command line, given /dev/stdin (a pipe).
        let (code, stdout, err) = run(
            &[
                "-j".as_ref(),
                "1".as_ref(),
                "/dev/stdin".as_ref(),
                out.as_ref(),
            ],
            Some(&bytes),
        );
        assert_eq!((code, stdout.as_str()), (0, ""), "{name}: {err}");
        assert!(err.starts_with("/dev/stdin -> "), "{name}: {err}");
        assert!(
            std::fs::read(&out).unwrap() == want,
            "{name}: CLI, /dev/stdin"
        );
        std::fs::remove_file(&out).unwrap();

        // A batch given the FIFO and a regular file.
        let outdir = d.join("outdir");
        let fifo = Fifo::new(&fifo_path, bytes.clone());
        // Beside the FIFO: the archives' names are relative to the directory holding both.
        let other = d.join("other_scalars.nc");
        std::fs::copy(sample("scalars.nc"), &other).unwrap();
        let r = run(
            &[
                "pack".as_ref(),
                "-q".as_ref(),
                "-j".as_ref(),
                "1".as_ref(),
                fifo_path.as_ref(),
                other.as_ref(),
                "-o".as_ref(),
                outdir.as_ref(),
            ],
            None,
        );
        fifo.finish();
        assert_eq!(r, (0, String::new(), String::new()), "{name}: batch");
        let z = outdir.join(format!("{name}.nc3z"));
        assert!(std::fs::read(&z).unwrap() == want, "{name}: batch, FIFO");
        assert!(
            std::fs::read(outdir.join("other_scalars.nc.nc3z")).unwrap()
                == packed_from_file(&other, d),
            "{name}: batch, file"
        );
        std::fs::remove_dir_all(&outdir).unwrap();
    }
}

#[test]
fn commands_that_seek_refuse_a_pipe_in_one_clear_line() {
    let dir = temp_dir();
    let d = dir.path();
    let input = sample("gridded_sst.nc");
    let archive = d.join("a.nc3z");
    std::fs::write(&archive, packed_from_file(&input, d)).unwrap();
    let fifo_path = d.join("pipe");
    let out = d.join("out");
    let a_bytes = std::fs::read(&archive).unwrap();
    let nc_bytes = std::fs::read(&input).unwrap();
    let cases: [(&str, Vec<&OsStr>, &[u8]); 7] = [
        (
            "reading an archive",
            vec!["unpack".as_ref(), fifo_path.as_ref(), out.as_ref()],
            &a_bytes,
        ),
        ("info", vec!["info".as_ref(), fifo_path.as_ref()], &a_bytes),
        ("info", vec!["info".as_ref(), fifo_path.as_ref()], &nc_bytes),
        (
            "random access",
            vec!["slice".as_ref(), fifo_path.as_ref(), "sst".as_ref()],
            &a_bytes,
        ),
        (
            "random access",
            vec!["slice".as_ref(), fifo_path.as_ref(), "sst".as_ref()],
            &nc_bytes,
        ),
        (
            "verify",
            vec!["verify".as_ref(), fifo_path.as_ref()],
            &a_bytes,
        ),
        (
            "reindex",
            vec!["reindex".as_ref(), fifo_path.as_ref(), out.as_ref()],
            &a_bytes,
        ),
    ];
    for (op, args, bytes) in cases {
        let fifo = Fifo::new(&fifo_path, bytes.to_vec());
        let (code, stdout, err) = run(&args, None);
        fifo.finish();
        assert_eq!((code, stdout.as_str()), (1, ""), "{args:?}: {err}");
        assert_eq!(
            err,
            format!(
                "nc3pack: {}: is a pipe, not a regular file: {op} needs a regular file (save it to one first)\n",
                fifo_path.display()
            ),
            "{args:?}"
        );
        assert!(!out.exists(), "{args:?}");
    }
    // /dev/stdin as a pipe, and a character device.
    let (code, _, err) = run(&["info".as_ref(), "/dev/stdin".as_ref()], Some(&a_bytes));
    assert_eq!(code, 1, "{err}");
    assert!(
        err.starts_with("nc3pack: /dev/stdin: is a pipe, not a regular file: "),
        "{err}"
    );
    let (code, _, err) = run(
        &["unpack".as_ref(), "/dev/null".as_ref(), out.as_ref()],
        None,
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.starts_with("nc3pack: /dev/null: is a character device, not a regular file: "),
        "{err}"
    );
    // `verify --against` reads the original in order: a pipe will do.
    let fifo = Fifo::new(&fifo_path, nc_bytes.clone());
    let (code, stdout, err) = run(
        &[
            "verify".as_ref(),
            archive.as_ref(),
            "--against".as_ref(),
            fifo_path.as_ref(),
        ],
        None,
    );
    fifo.finish();
    assert_eq!(code, 0, "{err}");
    assert!(
        stdout.starts_with(&format!(
            "{}: matches {}\n",
            archive.display(),
            fifo_path.display()
        )),
        "{stdout}"
    );
}

/// `nc3pack unpack ARCHIVE - | head`: the reader closing the pipe early ends unpack quietly
/// with exit status 0 (as `slice` does), with no error and no summary line.
#[test]
fn unpack_into_a_closed_pipe_exits_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    let dir = temp_dir();
    let z = dir.path().join("sst.nc3z");
    nc3pack::pack_file(
        &sample("gridded_sst.nc"),
        &z,
        &nc3pack::PackOptions::default(),
    )
    .unwrap();
    // 6 MB restored: far more than a pipe holds.
    let mut child = Command::new(crate::util::BIN)
        .args(["unpack".as_ref(), z.as_os_str(), "-".as_ref()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut head = [0u8; 100];
    child.stdout.take().unwrap().read_exact(&mut head).unwrap();
    assert_eq!(&head[..3], b"CDF");
    // The pipe's read end is closed here.
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}
