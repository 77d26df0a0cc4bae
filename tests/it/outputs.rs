//! What an output may replace, and the modes outputs get: device nodes, FIFOs, sockets and
//! directories are never replaced (with or without -f), a symbolic link is replaced itself
//! (never its target), and setuid, setgid and sticky bits are not copied.

use crate::util::{nc3pack, sample, temp_dir, BIN};
use std::ffi::OsStr;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

fn run(args: &[&OsStr]) -> (i32, String) {
    let o = nc3pack(args).output();
    (o.code.unwrap_or(-1), o.stderr)
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

/// Makes a special file of each kind it can at `dir/NAME`; returns (name, kind word in the
/// error). A character device (`mknod c 1 3`, i.e. /dev/null) needs root: skipped with a
/// message where it is not allowed.
fn make_specials(dir: &Path) -> Vec<(PathBuf, &'static str)> {
    use std::os::unix::ffi::OsStrExt;
    let mut v = Vec::new();
    let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    let dev = dir.join("chardev");
    // SAFETY: plain system calls on NUL-terminated paths.
    if unsafe { libc::mknod(c(&dev).as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) } == 0 {
        v.push((dev, "a character device"));
    } else {
        crate::util::skip("the device case: mknod not permitted here");
    }
    let blk = dir.join("blockdev");
    // SAFETY: as above (7, 0 is /dev/loop0's number; the node is never opened).
    if unsafe { libc::mknod(c(&blk).as_ptr(), libc::S_IFBLK | 0o600, libc::makedev(7, 0)) } == 0 {
        v.push((blk, "a block device"));
    }
    let fifo = dir.join("fifo");
    // SAFETY: as above.
    assert_eq!(unsafe { libc::mkfifo(c(&fifo).as_ptr(), 0o644) }, 0);
    v.push((fifo, "a FIFO"));
    let sock = dir.join("socket");
    std::mem::forget(std::os::unix::net::UnixListener::bind(&sock).unwrap());
    v.push((sock, "a socket"));
    let sub = dir.join("subdir");
    std::fs::create_dir(&sub).unwrap();
    v.push((sub, "a directory"));
    v
}

fn file_type(p: &Path) -> std::fs::FileType {
    std::fs::symlink_metadata(p).unwrap().file_type()
}

fn same_kind(a: std::fs::FileType, b: std::fs::FileType) -> bool {
    a.is_char_device() == b.is_char_device()
        && a.is_block_device() == b.is_block_device()
        && a.is_fifo() == b.is_fifo()
        && a.is_socket() == b.is_socket()
        && a.is_dir() == b.is_dir()
}

#[test]
fn special_files_are_never_replaced_by_any_command() {
    let dir = temp_dir();
    let input = sample("classic_records.nc");
    let archive = dir.path().join("a.nc3z");
    nc3pack::pack_file(&input, &archive, &nc3pack::PackOptions::default()).unwrap();
    let specials = make_specials(dir.path());
    for (special, kind) in &specials {
        let before = file_type(special);
        for force in [false, true] {
            let mut cases: Vec<Vec<&OsStr>> = vec![
                vec!["pack".as_ref(), input.as_ref(), special.as_ref()],
                vec!["unpack".as_ref(), archive.as_ref(), special.as_ref()],
                vec!["reindex".as_ref(), archive.as_ref(), special.as_ref()],
            ];
            if force {
                cases.iter_mut().for_each(|c| c.push("-f".as_ref()));
            }
            for args in cases {
                let (code, err) = run(&args);
                let what = format!("{args:?}");
                assert_eq!(code, 1, "{what}: {err}");
                assert_eq!(err.lines().count(), 1, "{what}: {err}");
                assert!(
                    err.starts_with(&format!("nc3pack: {}: output is {kind}", special.display())),
                    "{what}: {err}"
                );
                assert!(err.contains("not a regular file"), "{what}: {err}");
                assert!(same_kind(file_type(special), before), "{what}: replaced");
            }
        }
    }
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains(".nc3pack-")), "{names:?}");
}

/// In a batch, a special file where an archive would go fails that file only, with or without
/// -f; the others are packed.
#[test]
fn a_batch_does_not_replace_special_files() {
    let dir = temp_dir();
    let input = dir.path().join("in");
    let out = dir.path().join("out");
    std::fs::create_dir(&input).unwrap();
    std::fs::create_dir(&out).unwrap();
    let specials = make_specials(&out);
    for (special, _) in &specials {
        let name = Path::new(special.file_name().unwrap()).with_extension("nc");
        std::fs::copy(sample("scalars.nc"), input.join(&name)).unwrap();
        std::fs::rename(special, special.with_extension("nc.nc3z")).unwrap();
    }
    std::fs::copy(sample("scalars.nc"), input.join("plain.nc")).unwrap();
    for force in [false, true] {
        let mut args: Vec<&OsStr> =
            vec!["pack".as_ref(), input.as_ref(), "-o".as_ref(), out.as_ref()];
        if force {
            args.push("-f".as_ref());
        }
        let (code, err) = run(&args);
        assert_eq!(code, 1, "{err}");
        for (special, kind) in &specials {
            let z = special.with_extension("nc.nc3z");
            assert!(
                err.contains(&format!("{}: output is {kind}", z.display())),
                "{err}"
            );
            assert!(!file_type(&z).is_file(), "{} replaced", z.display());
        }
        assert!(out.join("plain.nc.nc3z").is_file());
        std::fs::remove_file(out.join("plain.nc.nc3z")).unwrap();
    }
}

/// A symbolic link as output is an existing output: refused without -f; with -f the link itself
/// is replaced and its target left alone (as gzip does).
#[test]
fn a_symlink_output_is_replaced_itself_only_with_force() {
    let dir = temp_dir();
    let target = dir.path().join("target");
    std::fs::write(&target, b"keep me").unwrap();
    let link = dir.path().join("link.nc3z");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let input = sample("classic_records.nc");
    let (code, err) = run(&[input.as_ref(), link.as_ref()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("output exists"), "{err}");
    assert!(file_type(&link).is_symlink());
    let (code, err) = run(&[input.as_ref(), link.as_ref(), "-f".as_ref()]);
    assert_eq!(code, 0, "{err}");
    assert!(file_type(&link).is_file());
    assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
    // A dangling link too.
    let dangling = dir.path().join("dangling.nc3z");
    std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
    let (code, err) = run(&[input.as_ref(), dangling.as_ref()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("output exists"), "{err}");
    assert!(!dir.path().join("nowhere").exists());
}

/// Archives and restored files get the input's permission bits without setuid, setgid and
/// sticky (as gzip); from standard input, a new file's mode (0666 less the umask).
#[test]
fn outputs_get_the_input_mode_without_setuid_setgid_or_sticky() {
    let dir = temp_dir();
    let input = dir.path().join("in.nc");
    std::fs::copy(sample("classic_records.nc"), &input).unwrap();
    for (input_mode, expected) in [(0o6755, 0o755), (0o1640, 0o640), (0o4700, 0o700)] {
        std::fs::set_permissions(&input, std::fs::Permissions::from_mode(input_mode)).unwrap();
        assert_eq!(mode(&input), input_mode, "chmod did not take");
        let z = dir.path().join("a.nc3z");
        let back = dir.path().join("back.nc");
        let fixed = dir.path().join("fixed.nc3z");
        let (code, err) = run(&[input.as_ref(), z.as_ref(), "-f".as_ref()]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(mode(&z), expected, "archive of a {input_mode:o} file");
        // The archive's mode goes on: give it the special bits too.
        std::fs::set_permissions(&z, std::fs::Permissions::from_mode(input_mode)).unwrap();
        let (code, err) = run(&["unpack".as_ref(), z.as_ref(), back.as_ref(), "-f".as_ref()]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            mode(&back),
            expected,
            "restored from a {input_mode:o} archive"
        );
        let (code, err) = run(&[
            "reindex".as_ref(),
            z.as_ref(),
            fixed.as_ref(),
            "-f".as_ref(),
        ]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            mode(&fixed),
            expected,
            "reindexed from a {input_mode:o} archive"
        );
        let out = dir.path().join("out");
        let (code, err) = run(&[
            "pack".as_ref(),
            input.as_ref(),
            "-o".as_ref(),
            out.as_ref(),
            "-f".as_ref(),
        ]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            mode(&out.join("in.nc.nc3z")),
            expected,
            "batch, {input_mode:o}"
        );
    }
    for (umask, expected) in [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)] {
        let z = dir.path().join(format!("stdin{umask:o}.nc3z"));
        let mut c = Command::new(BIN);
        c.args([OsStr::new("-"), z.as_ref()])
            .stdin(std::fs::File::open(&input).unwrap());
        // SAFETY: umask is async-signal-safe.
        unsafe {
            c.pre_exec(move || {
                libc::umask(umask);
                Ok(())
            });
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(mode(&z), expected, "from stdin under umask {umask:o}");
    }
}
