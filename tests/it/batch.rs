//! `nc3pack pack IN... -o OUTDIR`: many files in parallel, bad ones reported at the end; inputs
//! found by magic, names relative to a root, shards, the manifest, resuming, and
//! `verify --manifest`.

use crate::util::{samples_dir, temp_dir, BIN};
use std::path::{Path, PathBuf};
use std::process::Command;

#[test]
fn packs_a_directory_tree_and_continues_past_bad_files() {
    let dir = temp_dir();
    let input = dir.path().join("in");
    std::fs::create_dir_all(input.join("sub")).unwrap();
    let good = ["classic_records.nc", "cdf5_types.nc", "scalars.nc"];
    for g in good {
        std::fs::copy(samples_dir().join(g), input.join(g)).unwrap();
    }
    std::fs::copy(
        samples_dir().join("fill_values.nc"),
        input.join("sub/fill_values.nc"),
    )
    .unwrap();
    std::fs::copy(samples_dir().join("bad/hdf5.nc"), input.join("sub/hdf5.nc")).unwrap();
    // Found by their first bytes, whatever their names.
    std::fs::copy(
        samples_dir().join("scalars.nc"),
        input.join("sub/no_suffix"),
    )
    .unwrap();
    std::fs::copy(samples_dir().join("scalars.nc"), input.join("sub/x.cdf")).unwrap();
    // Not netCDF: skipped silently (text named *.nc, a 2-byte file, an empty one).
    std::fs::write(input.join("notes.txt"), "not netCDF: skipped").unwrap();
    std::fs::write(input.join("text.nc"), "CD").unwrap();
    std::fs::write(input.join("empty.nc"), "").unwrap();
    let out = dir.path().join("out");
    let o = Command::new(BIN)
        .arg("pack")
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("hdf5.nc: not a netCDF-3 file"), "{err}");
    assert!(err.contains("packed 6 of 7 files"), "{err}");
    assert!(
        err.lines().last().unwrap().contains("1 of 7 files failed"),
        "{err}"
    );
    for g in good {
        let z = out.join(format!("{g}.nc3z"));
        let back = dir.path().join("back.nc");
        nc3pack::unpack_file(
            &z,
            &back,
            &nc3pack::UnpackOptions::default()
                .with_force(true)
                .with_threads(1),
        )
        .unwrap();
        assert_eq!(
            std::fs::read(&back).unwrap(),
            std::fs::read(samples_dir().join(g)).unwrap(),
            "{g}"
        );
    }
    assert_eq!(
        tree(&out),
        [
            "cdf5_types.nc.nc3z",
            "classic_records.nc.nc3z",
            "scalars.nc.nc3z",
            "sub/fill_values.nc.nc3z",
            "sub/no_suffix.nc3z",
            "sub/x.cdf.nc3z",
        ]
    );
    let leftovers: Vec<_> = walk(&out)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(".nc3pack-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // A second run skips what the manifest records as packed (the root, `in`, is the same
    // for a file given alone).
    let (code, err) = batch(&[], &[&input.join("scalars.nc")], &out);
    assert_eq!(code, 0, "{err}");
    // Without the manifest, an archive in place that holds the input's hash is kept; one that
    // does not is refused (without -f).
    std::fs::remove_dir_all(out.join(".nc3pack")).unwrap();
    std::fs::copy(
        out.join("cdf5_types.nc.nc3z"),
        out.join("classic_records.nc.nc3z"),
    )
    .unwrap();
    let (code, err) = batch(
        &[],
        &[&input.join("scalars.nc"), &input.join("classic_records.nc")],
        &out,
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        err.lines().filter(|l| l.starts_with("nc3pack: ")).count(),
        2,
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{}: output exists and is not recorded as this input's archive",
            out.join("classic_records.nc.nc3z").display()
        )),
        "{err}"
    );
    // Lines are written as files finish, in whichever order the threads finish them.
    let mut lines = manifest_lines(&out.join(".nc3pack"));
    lines.sort_by_key(|l| l["name"].as_str().map(str::to_string));
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["name"], "classic_records.nc");
    assert_eq!(lines[0]["status"], "failed");
    assert_eq!(lines[1]["name"], "scalars.nc");
    assert_eq!(lines[1]["status"], "packed");
}

#[test]
fn names_are_relative_to_the_common_directory_and_a_file_cannot_be_another_archives_directory() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for d in [&a, &b] {
        std::fs::create_dir(d).unwrap();
        std::fs::copy(samples_dir().join("scalars.nc"), d.join("x.nc")).unwrap();
    }
    // x.nc and x.cdf side by side: .nc3z is appended, so their archives differ.
    std::fs::copy(samples_dir().join("scalars.nc"), a.join("x.cdf")).unwrap();
    let out = dir.path().join("out");
    let (code, err) = batch(
        &[],
        &[&a.join("x.nc"), &a.join("x.cdf"), &b.join("x.nc")],
        &out,
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(tree(&out), ["a/x.cdf.nc3z", "a/x.nc.nc3z", "b/x.nc.nc3z"]);
    // `t/x` goes to `t/x.nc3z`, and `t/x.nc3z/y` to `t/x.nc3z/y.nc3z`: refused before any work.
    let t = dir.path().join("t");
    std::fs::create_dir_all(t.join("x.nc3z")).unwrap();
    std::fs::copy(samples_dir().join("scalars.nc"), t.join("x")).unwrap();
    std::fs::copy(samples_dir().join("scalars.nc"), t.join("x.nc3z/y")).unwrap();
    std::fs::copy(samples_dir().join("scalars.nc"), t.join("first.nc")).unwrap();
    let out = dir.path().join("out2");
    let (code, err) = batch(&[], &[&t], &out);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!(
            "{}: both {} (its archive) and {} (a directory for its archive) would be here",
            out.join("x.nc3z").display(),
            t.join("x").display(),
            t.join("x.nc3z/y").display()
        )),
        "{err}"
    );
    assert!(!out.exists());
    // An input outside --root is refused before any work.
    let (code, err) = batch(&[], &[Path::new("--root"), &a, &b.join("x.nc")], &out);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!(
            "{}: is not under the root {}",
            b.join("x.nc").display(),
            a.display()
        )),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn a_batch_of_several_commit_groups_writes_every_archive_as_a_single_pack_would() {
    // More files than one commit group (256), in two output directories: every group must be
    // synced and renamed, and each archive must hold the bytes `pack_file` writes for its input.
    let dir = temp_dir();
    let input = dir.path().join("in");
    let names = ["classic_records.nc", "scalars.nc", "fill_values.nc"];
    let input_real = std::fs::canonicalize(&input).unwrap_or_else(|_| input.clone());
    let mut n = 0;
    for sub in ["a", "b"] {
        std::fs::create_dir_all(input.join(sub)).unwrap();
        for k in 0..300 {
            let name = names[k % names.len()];
            std::fs::copy(
                samples_dir().join(name),
                input.join(sub).join(format!("{k:03}.nc")),
            )
            .unwrap();
            n += 1;
        }
    }
    let out = dir.path().join("out");
    let opts = nc3pack::PackOptions::default().with_threads(2);
    let outcomes = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = outcomes.clone();
    let collection = nc3pack::CollectionOptions::default()
        .with_pack(opts.clone())
        .with_write_manifest(false)
        .with_progress(move |e| {
            use nc3pack::collection::{CollectionEvent, FileOutcome};
            if let CollectionEvent::Finished { input, outcome, .. } = e {
                let FileOutcome::Packed { summary } = outcome else {
                    panic!("{}: {outcome:?}", input.display())
                };
                seen.lock()
                    .unwrap()
                    .push((input.to_path_buf(), (*summary).clone()));
            }
        });
    let r = nc3pack::pack_collection(&[&input], &out, &collection).unwrap();
    assert!(r.is_ok() && r.packed == n, "{r:?}");
    // What `pack_file` writes for each sample (the archive does not depend on the file's name).
    let per_file = opts.clone().with_threads(1);
    let single: Vec<Vec<u8>> = names
        .iter()
        .map(|name| {
            let z = dir.path().join(name).with_extension("nc3z");
            nc3pack::pack_file(&samples_dir().join(name), &z, &per_file).unwrap();
            std::fs::read(z).unwrap()
        })
        .collect();
    let outcomes = std::mem::take(&mut *outcomes.lock().unwrap());
    assert_eq!(outcomes.len(), n);
    for (input, summary) in &outcomes {
        let k: usize = input
            .file_stem()
            .unwrap()
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        let output = out
            .join(input.strip_prefix(&input_real).unwrap())
            .with_extension("nc.nc3z");
        assert_eq!(
            std::fs::read(&output).unwrap(),
            single[k % names.len()],
            "{}",
            output.display()
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

/// Runs `nc3pack pack -q ARGS... -o out` (through `wrap`, e.g. `setpriv`, if given) with a time
/// limit; returns (exit code, stderr).
fn batch(wrap: &[&str], args: &[&Path], out: &Path) -> (i32, String) {
    let mut cmd = match wrap.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(BIN);
            c
        }
        None => Command::new(BIN),
    };
    let mut child = cmd
        .arg("pack")
        .args(args)
        .arg("-o")
        .arg(out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A walk that loops would never end: give it 60 s.
    let mut waited = 0;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if waited == 600 {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("nc3pack pack {args:?} did not finish in 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        waited += 1;
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (status.code().expect("killed by a signal"), err)
}

/// The archive `pack_file` writes for `input` with one thread (what each batch output must be).
fn packed_alone(input: &Path, dir: &Path) -> Vec<u8> {
    let z = dir.join("alone.nc3z");
    let opts = nc3pack::PackOptions::default().with_threads(1);
    nc3pack::pack_file(input, &z, &opts.clone().with_force(true)).unwrap();
    std::fs::read(z).unwrap()
}

/// Relative paths of every file under `d`, sorted, but for the manifests in `d/.nc3pack`.
fn tree(d: &Path) -> Vec<String> {
    if !d.exists() {
        return vec![];
    }
    let mut v: Vec<String> = walk(d)
        .iter()
        .filter(|p| !p.starts_with(d.join(".nc3pack")))
        .map(|p| p.strip_prefix(d).unwrap().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn symbolic_links_to_files_and_directories_are_followed_each_directory_once() {
    use std::os::unix::fs::symlink;
    let dir = temp_dir();
    let (input, elsewhere) = (dir.path().join("in"), dir.path().join("elsewhere"));
    std::fs::create_dir_all(input.join("real")).unwrap();
    std::fs::create_dir_all(elsewhere.join("deeper")).unwrap();
    std::fs::copy(
        samples_dir().join("scalars.nc"),
        input.join("real/plain.nc"),
    )
    .unwrap();
    std::fs::copy(samples_dir().join("cdf5_types.nc"), elsewhere.join("x.nc")).unwrap();
    std::fs::copy(
        samples_dir().join("fill_values.nc"),
        elsewhere.join("deeper/y.nc"),
    )
    .unwrap();
    // Links to files, relative and absolute; the link's name counts, not the target's.
    symlink("real/plain.nc", input.join("rel.nc")).unwrap();
    symlink(
        samples_dir().join("classic_records.nc"),
        input.join("abs.nc"),
    )
    .unwrap();
    symlink(
        samples_dir().join("classic_records.nc"),
        input.join("no_nc_name"),
    )
    .unwrap();
    // A link to a directory, which holds a link back up (a loop), and links to directories
    // already searched.
    symlink(&elsewhere, input.join("linked")).unwrap();
    symlink(&input, elsewhere.join("back")).unwrap();
    symlink(".", input.join("real/self")).unwrap();
    symlink("..", elsewhere.join("deeper/up")).unwrap();
    let out = dir.path().join("out");
    let (code, err) = batch(&[], &[&input], &out);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        tree(&out),
        [
            "abs.nc.nc3z",
            "linked/deeper/y.nc.nc3z",
            "linked/x.nc.nc3z",
            "no_nc_name.nc3z",
            "real/plain.nc.nc3z",
            "rel.nc.nc3z",
        ]
    );
    for (archive, original) in [
        ("abs.nc.nc3z", samples_dir().join("classic_records.nc")),
        ("no_nc_name.nc3z", samples_dir().join("classic_records.nc")),
        ("rel.nc.nc3z", samples_dir().join("scalars.nc")),
        ("linked/x.nc.nc3z", samples_dir().join("cdf5_types.nc")),
        (
            "linked/deeper/y.nc.nc3z",
            samples_dir().join("fill_values.nc"),
        ),
    ] {
        assert!(
            std::fs::read(out.join(archive)).unwrap() == packed_alone(&original, dir.path()),
            "{archive}"
        );
    }
    // Links given as arguments: a link to a file, a link to a directory.
    let out2 = dir.path().join("out2");
    let (code, err) = batch(&[], &[&input.join("abs.nc"), &input.join("linked")], &out2);
    assert_eq!(code, 0, "{err}");
    // The root is `in` (holding both); `in` is reached once more through `linked/back` (it
    // was not searched itself).
    assert_eq!(
        tree(&out2),
        [
            "abs.nc.nc3z",
            "linked/back/abs.nc.nc3z",
            "linked/back/no_nc_name.nc3z",
            "linked/back/real/plain.nc.nc3z",
            "linked/back/rel.nc.nc3z",
            "linked/deeper/y.nc.nc3z",
            "linked/x.nc.nc3z",
        ]
    );
}

#[test]
fn what_cannot_be_read_is_listed_at_the_end_and_the_rest_is_packed() {
    use std::os::unix::fs::symlink;
    let dir = temp_dir();
    let input = dir.path().join("in");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::copy(samples_dir().join("scalars.nc"), input.join("good.nc")).unwrap();
    // Broken links, whatever their names, may have been netCDF files: failures.
    symlink("nowhere.nc", input.join("gone.nc")).unwrap();
    symlink("loop.nc", input.join("loop.nc")).unwrap();
    symlink("nowhere", input.join("gone_dir")).unwrap();
    // A directory deeper than PATH_MAX (4096 bytes) allows, with a file in it.
    let long = "d".repeat(250);
    make_deep_file(
        &input,
        &long,
        20,
        &std::fs::read(samples_dir().join("scalars.nc")).unwrap(),
    );
    // A missing input argument, and a good one after it.
    let missing = dir.path().join("missing.nc");
    let other = dir.path().join("other.nc");
    std::fs::copy(samples_dir().join("cdf5_types.nc"), &other).unwrap();
    // A FIFO found in a directory is not opened (it would wait for a writer forever).
    let fifo = input.join("fifo.nc");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let out = dir.path().join("out");
    let (code, err) = batch(&[], &[&input, &missing, &other], &out);
    assert_eq!(code, 1, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // The names are relative to the directory holding `in` and `other.nc`.
    assert_eq!(tree(&out), ["in/good.nc.nc3z", "other.nc.nc3z"], "{err}");
    let lines: Vec<&str> = err.lines().collect();
    let has = |path: &Path, cause: &str| {
        let head = format!("nc3pack: {}: ", path.display());
        lines
            .iter()
            .any(|l| l.starts_with(&head) && l.ends_with(cause))
    };
    assert!(
        has(
            &input.join("gone.nc"),
            "No such file or directory (os error 2)"
        ),
        "{err}"
    );
    assert!(
        has(
            &input.join("loop.nc"),
            "Too many levels of symbolic links (os error 40)"
        ),
        "{err}"
    );
    assert!(
        has(&missing, "No such file or directory (os error 2)"),
        "{err}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&long) && l.ends_with("File name too long (os error 36)")),
        "{err}"
    );
    assert!(
        has(
            &input.join("gone_dir"),
            "No such file or directory (os error 2)"
        ),
        "{err}"
    );
    assert!(!err.contains("fifo"), "{err}");
    assert_eq!(
        lines.last().unwrap(),
        &"nc3pack: 0 of 2 files failed, 5 paths could not be read (listed above)",
        "{err}"
    );
}

/// A directory that cannot be read (mode 000) is reported and the rest is packed. Root reads
/// it anyway, so the batch runs as `nobody` (with `setpriv`).
#[test]
fn an_unreadable_directory_is_listed_and_the_rest_is_packed() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir();
    let perms = |p: &Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    perms(dir.path(), 0o755);
    let input = dir.path().join("in");
    for sub in ["a_locked", "b_open"] {
        std::fs::create_dir_all(input.join(sub)).unwrap();
        let f = input.join(sub).join("x.nc");
        std::fs::copy(samples_dir().join("scalars.nc"), &f).unwrap();
        perms(&f, 0o644);
    }
    perms(&input.join("a_locked"), 0o000);
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    perms(&out, 0o777);
    let (code, err) = if unsafe { libc::geteuid() } == 0 {
        batch(
            &[
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
            ],
            &[&input],
            &out,
        )
    } else {
        batch(&[], &[&input], &out)
    };
    perms(&input.join("a_locked"), 0o755);
    assert_eq!(code, 1, "{err}");
    assert_eq!(tree(&out), ["b_open/x.nc.nc3z"], "{err}");
    assert!(
        err.contains(&format!(
            "nc3pack: {}: read directory: Permission denied (os error 13)",
            input.join("a_locked").display()
        )),
        "{err}"
    );
    assert!(
        err.lines()
            .last()
            .unwrap()
            .ends_with("0 of 1 files failed, 1 path could not be read (listed above)"),
        "{err}"
    );
}

/// Makes `depth` nested directories named `name` under `dir` and writes `bytes` to `deep.nc` in
/// the last, each step relative to the one before (`mkdirat`, `openat`), so that the whole path
/// may be longer than PATH_MAX.
fn make_deep_file(dir: &Path, name: &str, depth: usize, bytes: &[u8]) {
    use std::ffi::CString;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    let c = CString::new(name).unwrap();
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
    let top = CString::new(dir.as_os_str().as_bytes()).unwrap();
    // SAFETY: plain system calls on C strings and descriptors owned here.
    let mut fd = unsafe { OwnedFd::from_raw_fd(libc::open(top.as_ptr(), flags)) };
    for _ in 0..depth {
        unsafe {
            assert_eq!(libc::mkdirat(fd.as_raw_fd(), c.as_ptr(), 0o755), 0);
            let next = libc::openat(fd.as_raw_fd(), c.as_ptr(), flags);
            assert!(next >= 0);
            fd = OwnedFd::from_raw_fd(next);
        }
    }
    let file = CString::new("deep.nc").unwrap();
    let f = unsafe {
        libc::openat(
            fd.as_raw_fd(),
            file.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC,
            0o644,
        )
    };
    assert!(f >= 0);
    let mut f = unsafe { std::fs::File::from_raw_fd(f) };
    std::io::Write::write_all(&mut f, bytes).unwrap();
}

/// The manifest lines in the `*.jsonl` files of `dir` (sorted by file), parsed.
fn manifest_lines(dir: &Path) -> Vec<serde_json::Value> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Runs `nc3pack ARGS...` with `stdin` (if any) and a time limit; returns (exit code, stdout,
/// stderr).
fn nc3pack(args: &[&std::ffi::OsStr], stdin: Option<&[u8]>) -> (i32, String, String) {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_nc3pack"))
        .args(args)
        .stdin(if stdin.is_some() {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        })
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(bytes) = stdin {
        child.stdin.take().unwrap().write_all(bytes).unwrap();
    }
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).unwrap();
        s
    });
    let mut e = String::new();
    std::io::Read::read_to_string(&mut err, &mut e).unwrap();
    let mut waited = 0;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if waited == 1200 {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("nc3pack {args:?} did not finish in 120 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        waited += 1;
    };
    (
        status.code().expect("killed by a signal"),
        reader.join().unwrap(),
        e,
    )
}

/// Copies `sample` to each of `names` under `dir`, making directories; returns the names.
fn populate(dir: &Path, names: &[String], sample: &str) {
    for n in names {
        let p = dir.join(n);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::copy(samples_dir().join(sample), &p).unwrap();
    }
}

/// The (status, name) of each line of the manifest `file`.
fn statuses_of(file: &Path) -> Vec<(String, String)> {
    crate::util::manifest_statuses(&std::fs::read_to_string(file).unwrap())
}

/// The (status, name) of each line of the manifests in `dir`.
fn statuses(dir: &Path) -> Vec<(String, String)> {
    manifest_lines(dir)
        .iter()
        .map(|l| {
            (
                l["status"].as_str().unwrap().to_string(),
                l["name"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Whether shard `i` of `n` owns the input named `name`.
fn owner(i: usize, n: u64, name: &str) -> bool {
    let shard = nc3pack::collection::Shard {
        index: i as u64,
        count: n,
    };
    shard.owns(name.as_bytes())
}

#[test]
fn three_shards_cover_a_tree_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    let mut names: Vec<String> = (0..31)
        .map(|k| format!("{}/f{k:02}.nc", ["a", "b/c", "d"][k % 3]))
        .collect();
    populate(&input, &names, "scalars.nc");
    std::fs::write(input.join("a/readme.txt"), "skipped").unwrap();
    let out = dir.path().join("out");
    for i in 0..3 {
        let shard = format!("{i}/3");
        let (code, err) = batch(
            &[],
            &[&input, Path::new("--shard"), Path::new(&shard)],
            &out,
        );
        assert_eq!(code, 0, "{shard}: {err}");
    }
    // The union is every input, once.
    let mut want: Vec<String> = names.iter().map(|n| format!("{n}.nc3z")).collect();
    want.sort();
    assert_eq!(tree(&out), want);
    // Shard i has the names it owns (`Shard::owns`: a hash of the name; the readme is an
    // input too, skipped as not netCDF by whichever shard has it).
    names.push("a/readme.txt".into());
    names.sort();
    let owns = |i: usize, n: &str| owner(i, 3, n);
    let records = out.join(".nc3pack");
    for i in 0..3 {
        let lines =
            std::fs::read_to_string(records.join(format!("manifest-{i}-of-3.jsonl"))).unwrap();
        let mut got: Vec<String> = lines
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                assert_eq!(v["status"], "packed", "{l}");
                v["name"].as_str().unwrap().to_string()
            })
            .collect();
        got.sort();
        let mine: Vec<String> = names
            .iter()
            .filter(|n| owns(i, n) && n.ends_with(".nc"))
            .cloned()
            .collect();
        assert!(!mine.is_empty(), "shard {i}");
        assert_eq!(got, mine, "shard {i}");
    }
    // Out-of-range shards are usage errors.
    for bad in ["3/3", "1/0", "-1/2", "1", "a/b"] {
        let (code, err) = batch(&[], &[&input, Path::new("--shard"), Path::new(bad)], &out);
        assert_eq!(code, 2, "{bad}: {err}");
    }
}

#[test]
fn verify_manifest_finds_one_flipped_byte_in_200_archives_and_a_changed_original() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    let names: Vec<String> = (0..200).map(|k| format!("d{}/x{k:03}.nc", k % 4)).collect();
    populate(&input, &names, "scalars.nc");
    let out = dir.path().join("out");
    let (code, err) = batch(&[], &[&input], &out);
    assert_eq!(code, 0, "{err}");
    let records = out.join(".nc3pack");
    let verify = |against: bool| {
        let mut args: Vec<&std::ffi::OsStr> = vec!["verify".as_ref(), "--manifest".as_ref()];
        args.push(records.as_os_str());
        if against {
            args.extend(["--against".as_ref(), input.as_os_str()]);
        }
        nc3pack(&args, None)
    };
    let (code, stdout, err) = verify(true);
    assert_eq!(code, 0, "{stdout}{err}");
    assert_eq!(
        stdout,
        "verified 200 archives against the originals: 0 failed\n"
    );
    // One byte flipped in the middle of one archive.
    let victim = out.join("d1/x137.nc.nc3z");
    let mut bytes = std::fs::read(&victim).unwrap();
    let good = bytes.clone();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x10;
    std::fs::write(&victim, &bytes).unwrap();
    let (code, stdout, _) = verify(false);
    assert_eq!(code, 1, "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(
        lines[0].starts_with(&format!("{}: damaged: ", victim.display())),
        "{stdout}"
    );
    assert_eq!(lines[1], "verified 200 archives: 1 failed");
    std::fs::write(&victim, &good).unwrap();
    // An original changed after packing (same size): found with --against only.
    let changed = input.join("d2/x042.nc");
    let mut orig = std::fs::read(&changed).unwrap();
    let last = orig.len() - 1;
    orig[last] ^= 1;
    std::fs::write(&changed, &orig).unwrap();
    let (code, stdout, err) = verify(false);
    assert_eq!(code, 0, "{stdout}{err}");
    let (code, stdout, _) = verify(true);
    assert_eq!(code, 1, "{stdout}");
    assert_eq!(
        stdout,
        format!(
            "{}: does NOT match the original {}\nverified 200 archives against the originals: 1 failed\n",
            out.join("d2/x042.nc.nc3z").display(),
            input.join("d2/x042.nc").display()
        )
    );
    // An archive replaced by another input's archive is caught by the recorded hash.
    std::fs::copy(samples_dir().join("scalars.nc"), &changed).unwrap();
    let other = out.join("d3/x003.nc.nc3z");
    nc3pack::pack_file(
        &samples_dir().join("fill_values.nc"),
        &other,
        &nc3pack::PackOptions::default().with_force(true),
    )
    .unwrap();
    let (code, stdout, _) = verify(false);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.starts_with(&format!("{}: the archive restores", other.display())),
        "{stdout}"
    );
}

/// `verify --manifest --shard I/N` (and `VerifyCollectionOptions::with_shard`) verifies the
/// names share I owns, as `pack --shard` shares them: the three shares of N=3 verify
/// every archive exactly once, a damaged archive is reported by the share owning it alone, and
/// a line that is not an entry by share 0 alone.
#[test]
fn verify_manifest_shards_verify_every_archive_once_and_a_damaged_one_in_its_share() {
    use nc3pack::collection::{verify_collection, VerifyCollectionOptions};
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    // Names whose byte order is not their number's (x10 < x9; "a-b" < "a/").
    let mut names: Vec<String> = (0..31).map(|k| format!("d{}/x{k}.nc", k % 3)).collect();
    names.push("d1-b/y.nc".into());
    populate(&input, &names, "scalars.nc");
    let out = dir.path().join("out");
    let (code, err) = batch(&[], &[&input], &out);
    assert_eq!(code, 0, "{err}");
    let records = out.join(".nc3pack");
    let mut sorted = names.clone();
    sorted.sort();
    let archive = |name: &str| out.join(format!("{name}.nc3z"));
    let flip = |path: &Path| {
        let mut bytes = std::fs::read(path).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x10;
        std::fs::write(path, &bytes).unwrap();
    };
    let share = |i: u64| {
        let opts = VerifyCollectionOptions::default()
            .with_threads(2)
            .with_against(&input)
            .with_shard(format!("{i}/3").parse().unwrap());
        verify_collection(std::slice::from_ref(&records), &opts, &|_| {}).unwrap()
    };
    // Intact: the shares' counts add up to every archive, each share its own.
    let mut checked = 0;
    for i in 0..3 {
        let r = share(i);
        assert!(r.is_ok(), "share {i}: {:?}", r.failures);
        let n = sorted.iter().filter(|n| owner(i as usize, 3, n)).count();
        assert!(n > 0, "share {i}");
        assert_eq!(r.checked, n);
        checked += r.checked;
    }
    assert_eq!(checked, names.len());
    // Every archive damaged: each share reports exactly the archives of its names, so
    // together every archive once.
    let good: Vec<Vec<u8>> = sorted
        .iter()
        .map(|n| std::fs::read(archive(n)).unwrap())
        .collect();
    for n in &sorted {
        flip(&archive(n));
    }
    let mut reported = Vec::new();
    for i in 0..3 {
        let r = share(i);
        let got: Vec<PathBuf> = r.failures.iter().map(|(p, _)| p.clone()).collect();
        let mine: Vec<PathBuf> = sorted
            .iter()
            .filter(|n| owner(i as usize, 3, n))
            .map(|n| archive(n))
            .collect();
        assert_eq!(got, mine, "share {i}");
        assert_eq!(r.checked, mine.len());
        reported.extend(got);
    }
    reported.sort();
    let mut all: Vec<PathBuf> = sorted.iter().map(|n| archive(n)).collect();
    all.sort();
    assert_eq!(reported, all);
    for (n, bytes) in sorted.iter().zip(&good) {
        std::fs::write(archive(n), bytes).unwrap();
    }
    // One archive damaged: found by the command line's share owning it, and by no other.
    let victim = "d1/x10.nc";
    let owner_of = (0..3).find(|&i| owner(i, 3, victim)).unwrap();
    flip(&archive(victim));
    for i in 0..3 {
        let shard = format!("{i}/3");
        let args: Vec<&std::ffi::OsStr> = vec![
            "verify".as_ref(),
            "--manifest".as_ref(),
            records.as_os_str(),
            "--shard".as_ref(),
            shard.as_ref(),
        ];
        let (code, stdout, err) = nc3pack(&args, None);
        let n = sorted.iter().filter(|n| owner(i, 3, n)).count();
        if i == owner_of {
            assert_eq!(code, 1, "{stdout}{err}");
            let prefix = format!("{}: damaged: ", archive(victim).display());
            assert!(stdout.starts_with(&prefix), "{stdout}");
            assert!(
                stdout.ends_with(&format!("\nverified {n} archives: 1 failed\n")),
                "{stdout}"
            );
        } else {
            assert_eq!(code, 0, "{stdout}{err}");
            assert_eq!(stdout, format!("verified {n} archives: 0 failed\n"));
        }
    }
    // A line that is not an entry: reported by share 0 only.
    let manifest = records.join("manifest-0-of-1.jsonl");
    let mut text = std::fs::read(&manifest).unwrap();
    text.extend_from_slice(b"not json\n");
    std::fs::write(&manifest, &text).unwrap();
    let bad: Vec<usize> = (0..3).map(|i| share(i).bad_lines.len()).collect();
    assert_eq!(bad, [1, 0, 0]);
    // --shard needs --manifest, and a shard out of range is a usage error.
    for args in [
        vec!["verify", "x.nc3z", "--shard", "0/2"],
        vec!["verify", "--manifest", "m", "--shard", "2/2"],
    ] {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
        let (code, _, err) = nc3pack(&args, None);
        assert_eq!(code, 2, "{err}");
    }
}

/// A collection moved with its `.nc3pack` directory verifies where it is now (each archive is
/// `OUT/NAME.nc3z` of the manifest's OUT, not the path recorded when it was packed), however
/// the manifest is named; a manifest kept elsewhere whose lines record relative outputs finds
/// them relative to its own directory.
#[test]
fn verify_manifest_finds_the_archives_of_a_moved_collection_and_relative_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    let names: Vec<String> = (0..6).map(|k| format!("d{}/x{k}.nc", k % 2)).collect();
    populate(&input, &names, "scalars.nc");
    let out = dir.path().join("out");
    let (code, err) = batch(&[], &[&input], &out);
    assert_eq!(code, 0, "{err}");
    let moved = dir.path().join("elsewhere/moved");
    std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
    std::fs::rename(&out, &moved).unwrap();
    let verify = |args: &[&std::ffi::OsStr], cwd: &Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_nc3pack"))
            .current_dir(cwd)
            .arg("verify")
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let records = moved.join(".nc3pack");
    let manifest = records.join("manifest-0-of-1.jsonl");
    let ok = "verified 6 archives: 0 failed\n";
    for (args, cwd) in [
        (vec![records.as_os_str()], dir.path()),
        (vec![manifest.as_os_str()], dir.path()),
        (vec![".nc3pack".as_ref()], moved.as_path()),
        (vec!["manifest-0-of-1.jsonl".as_ref()], records.as_path()),
    ] {
        let mut a = vec!["--manifest".as_ref()];
        a.extend(args);
        let (code, text) = verify(&a, cwd);
        assert_eq!((code, text.as_str()), (0, ok), "{a:?} in {}", cwd.display());
    }
    // Damage in the moved collection is found there.
    let victim = moved.join("d1/x3.nc.nc3z");
    let good = std::fs::read(&victim).unwrap();
    let mut bad = good.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 4;
    std::fs::write(&victim, &bad).unwrap();
    let (code, text) = verify(&["--manifest".as_ref(), records.as_os_str()], dir.path());
    assert_eq!(code, 1, "{text}");
    assert!(
        text.starts_with(&format!("{}: damaged: ", victim.display())),
        "{text}"
    );
    std::fs::write(&victim, &good).unwrap();
    // A manifest outside the collection, its outputs rewritten relative to its directory.
    let lists = dir.path().join("elsewhere/lists");
    std::fs::create_dir_all(&lists).unwrap();
    let text: String = manifest_lines(&records)
        .into_iter()
        .map(|mut l| {
            let name = l["name"].as_str().unwrap().to_string();
            l["output"] = format!("../moved/{name}.nc3z").into();
            l.to_string() + "\n"
        })
        .collect();
    let custom = lists.join("shard.jsonl");
    std::fs::write(&custom, text).unwrap();
    let (code, text) = verify(&["--manifest".as_ref(), custom.as_os_str()], dir.path());
    assert_eq!((code, text.as_str()), (0, ok));
    std::fs::remove_file(moved.join("d0/x2.nc.nc3z")).unwrap();
    let (code, text) = verify(&["--manifest".as_ref(), custom.as_os_str()], dir.path());
    assert_eq!(code, 1, "{text}");
    assert!(
        text.starts_with(&format!(
            "{}: open: ",
            lists.join("../moved/d0/x2.nc.nc3z").display()
        )),
        "{text}"
    );
}

#[test]
fn output_names_never_leave_out_whatever_dot_dot_and_symbolic_links_do() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let d = std::fs::canonicalize(dir.path()).unwrap();
    let (r, elsewhere, outside) = (d.join("r"), d.join("elsewhere"), d.join("outside"));
    populate(&r, &["a/x.nc".into(), "evil/z.nc".into()], "scalars.nc");
    populate(&elsewhere, &["y.nc".into()], "scalars.nc");
    std::fs::create_dir(&outside).unwrap();
    // A link to a directory outside the tree, a link up out of it (..), a link to a file
    // outside, and an absolute link.
    symlink("../elsewhere", r.join("b")).unwrap();
    symlink("../..", r.join("a/up")).unwrap();
    symlink("../../elsewhere/y.nc", r.join("a/y_link.nc")).unwrap();
    symlink(&elsewhere, r.join("abs")).unwrap();
    // In OUT, a link where an archive's directory goes, leading outside OUT.
    let out = d.join("out");
    std::fs::create_dir(&out).unwrap();
    symlink(&outside, out.join("evil")).unwrap();
    // Given paths with `..`, one leading out of r and back in.
    let (code, err) = batch(
        &[],
        &[
            &r,
            &r.join("a/../a/x.nc"),
            &r.join("../r/a/y_link.nc"),
            &r.join("b/../r/a/x.nc"),
        ],
        &out,
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!(
            "{}: leads to {}, outside the output directory {}",
            out.join("evil").display(),
            outside.display(),
            out.display()
        )),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    // Everything written is inside OUT, resolved.
    let mut written = vec![];
    for p in walk_no_follow(&out) {
        let real = std::fs::canonicalize(p.parent().unwrap()).unwrap();
        assert!(real.starts_with(&out), "{} written outside", p.display());
        written.push(p.strip_prefix(&out).unwrap().to_string_lossy().into_owned());
    }
    written.retain(|p| p.ends_with(".nc3z"));
    written.sort();
    // Names are paths in the tree under r: links under their own names, `..` resolved, each
    // path once (`a/../a/x.nc` is `a/x.nc`; `b/../r/a/x.nc` resolves `b/..` to `d`).
    assert!(written.contains(&"a/x.nc.nc3z".into()), "{written:?}");
    // `elsewhere` is searched once, through whichever link the walk meets first (`a/up` leads
    // to r's parent, which holds it).
    assert_eq!(
        written
            .iter()
            .filter(
                |w| ["b/y.nc.nc3z", "abs/y.nc.nc3z", "a/up/elsewhere/y.nc.nc3z"]
                    .contains(&w.as_str())
            )
            .count(),
        1,
        "{written:?}"
    );
    assert!(written.contains(&"a/y_link.nc.nc3z".into()), "{written:?}");
    assert!(
        written
            .iter()
            .all(|w| !w.split('/').any(|c| c == ".." || c == ".")),
        "{written:?}"
    );
    // With --root r, a path that resolves outside r is refused before any work.
    let out2 = d.join("out2");
    let (code, err) = batch(
        &[],
        &[Path::new("--root"), &r, &r.join("b/../elsewhere/y.nc")],
        &out2,
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!(
            "{}: is not under the root {}",
            d.join("elsewhere/y.nc").display(),
            r.display()
        )),
        "{err}"
    );
    assert!(!out2.exists());
}

/// Every path under `d`, not following symbolic links.
fn walk_no_follow(d: &Path) -> Vec<PathBuf> {
    let mut v = vec![];
    let mut todo = vec![d.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                todo.push(e.path());
            } else {
                v.push(e.path());
            }
        }
    }
    v
}

#[test]
fn names_with_newlines_and_bytes_that_are_not_utf8_round_trip_through_the_manifest() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    let odd = input.join("we\nird \"name\".nc");
    let latin1 = input.join(std::ffi::OsStr::from_bytes(b"caf\xe9.nc"));
    for p in [&odd, &latin1] {
        std::fs::copy(samples_dir().join("scalars.nc"), p).unwrap();
    }
    let out = dir.path().join("out");
    let (code, err) = batch(&[], &[&input], &out);
    assert_eq!(code, 0, "{err}");
    let lines = manifest_lines(&out.join(".nc3pack"));
    assert_eq!(lines.len(), 2);
    let by_name = |n: &str| lines.iter().find(|l| l["name"] == n).unwrap().clone();
    let l = by_name("we\nird \"name\".nc");
    assert_eq!(l["input"].as_str().unwrap(), odd.to_str().unwrap());
    assert_eq!(
        l["output"].as_str().unwrap(),
        out.join("we\nird \"name\".nc.nc3z").to_str().unwrap()
    );
    assert!(out.join("we\nird \"name\".nc.nc3z").is_file());
    // The XXH3-128 of the input, as xxhash computes it.
    let want = xxhash_rust::xxh3::xxh3_128(&std::fs::read(&odd).unwrap());
    assert_eq!(l["xxh3"].as_str().unwrap(), format!("{want:032x}"));
    assert_eq!(l["size"], std::fs::metadata(&odd).unwrap().len());
    let l = by_name("caf\u{fffd}.nc");
    assert_eq!(l["name_hex"], "636166e92e6e63");
    assert!(out
        .join(std::ffi::OsStr::from_bytes(b"caf\xe9.nc.nc3z"))
        .is_file());
    // The manifest is read back exactly: verify finds both, a rerun skips both.
    let records = out.join(".nc3pack");
    let (code, stdout, err) = nc3pack(
        &[
            "verify".as_ref(),
            "--manifest".as_ref(),
            records.as_ref(),
            "--against".as_ref(),
            input.as_ref(),
        ],
        None,
    );
    assert_eq!(code, 0, "{stdout}{err}");
    assert_eq!(
        stdout,
        "verified 2 archives against the originals: 0 failed\n"
    );
    let (code, err) = batch(&[], &[&input], &out);
    assert_eq!(code, 0, "{err}");
    let s = statuses(&records);
    assert_eq!(
        s.iter().filter(|(st, _)| st == "skipped").count(),
        2,
        "{s:?}"
    );
}

#[test]
fn files_from_a_list_on_standard_input() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    populate(
        &input,
        &["a/one.nc".into(), "b/two.cdf".into(), "b/deep/three".into()],
        "scalars.nc",
    );
    std::fs::write(input.join("notes.txt"), "not netCDF").unwrap();
    let out = dir.path().join("out");
    // A file, a directory, an empty line, a given file that is not netCDF (a failure).
    let list = format!(
        "{}\n\n{}\n{}\n",
        input.join("a/one.nc").display(),
        input.join("b").display(),
        input.join("notes.txt").display()
    );
    let (code, _, err) = nc3pack(
        &[
            "pack".as_ref(),
            "-q".as_ref(),
            "--files-from".as_ref(),
            "-".as_ref(),
            "--root".as_ref(),
            input.as_ref(),
            "-o".as_ref(),
            out.as_ref(),
        ],
        Some(list.as_bytes()),
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!(
            "{}: not a netCDF-3 file",
            input.join("notes.txt").display()
        )),
        "{err}"
    );
    assert_eq!(
        tree(&out),
        ["a/one.nc.nc3z", "b/deep/three.nc3z", "b/two.cdf.nc3z"]
    );
    let s = statuses(&out.join(".nc3pack"));
    assert!(s.contains(&("failed".into(), "notes.txt".into())), "{s:?}");
    // No inputs at all, and batch options without -o, are usage errors.
    let (code, _, err) = nc3pack(&["pack".as_ref(), "-o".as_ref(), out.as_ref()], None);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = nc3pack(
        &[
            "pack".as_ref(),
            "--files-from".as_ref(),
            "-".as_ref(),
            "x.nc".as_ref(),
        ],
        None,
    );
    assert_eq!(code, 2, "{err}");
}

/// Writes a CDF-1 file of `records` records of 1 MiB of pseudo-random floats (slow to pack).
fn write_big(path: &Path, records: u32) {
    use std::io::Write;
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

/// A shard killed (SIGKILL) after its first commit group, then run again: every file of the
/// shard is packed once (one `packed` line each over both runs, a `skipped` line in the rerun
/// for each file the first run recorded), nothing partial sits under an archive's name, and
/// the other shard's run completes the tree.
#[test]
fn a_killed_shard_reruns_to_completion_with_each_file_packed_once() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    // Shard 1/2 gets about 300 small files of a/, then the big one (a name it owns), then
    // about 50 more of z/.
    let mut names: Vec<String> = (0..600).map(|k| format!("a/{k:03}.nc")).collect();
    names.extend((0..100).map(|k| format!("z/{k:03}.nc")));
    populate(&input, &names, "classic_records.nc");
    let big = (0..100)
        .map(|k| format!("m{k}.nc"))
        .find(|n| owner(1, 2, n))
        .unwrap();
    write_big(&input.join(&big), 48);
    let a_mine = names
        .iter()
        .filter(|n| n.starts_with("a/") && owner(1, 2, n))
        .count();
    assert!(a_mine > 256, "{a_mine}");
    let all_mine = names.iter().filter(|n| owner(1, 2, n)).count() + 1;
    let out = dir.path().join("out");
    let manifest = out.join(".nc3pack/manifest-1-of-2.jsonl");
    let count = |p: &Path| std::fs::read_to_string(p).map_or(0, |s| s.lines().count());
    let mut child = Command::new(env!("CARGO_BIN_EXE_nc3pack"))
        .args(["pack", "-q", "-j", "1", "--shard", "1/2"])
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed once the first group's lines are written (at most 60 s).
    let mut polls = 0;
    while count(&manifest) < 256 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "finished before the kill"
        );
        assert!(polls < 60_000, "no manifest lines in 60 s");
        std::thread::sleep(std::time::Duration::from_millis(1));
        polls += 1;
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    let first = statuses_of(&manifest);
    assert!(
        first.len() >= 256 && first.len() < all_mine,
        "{} of {all_mine}",
        first.len()
    );
    // What is under an archive's name is complete (its ends intact); the rest are temporaries.
    for p in walk(&out) {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".nc3z") {
            let r =
                nc3pack::verify(&p, &nc3pack::VerifyOptions::default().with_threads(1)).unwrap();
            assert!(r.is_intact(), "{}: {r:?}", p.display());
        } else {
            assert!(
                name.ends_with(".jsonl")
                    || name.starts_with(".nc3pack-") && name.ends_with(".part"),
                "{}",
                p.display()
            );
        }
    }
    // The rerun, and the other shard.
    for shard in ["1/2", "0/2"] {
        let (code, err) = batch(&[], &[&input, Path::new("--shard"), Path::new(shard)], &out);
        assert_eq!(code, 0, "{shard}: {err}");
    }
    let mut want: Vec<String> = names.iter().map(|n| format!("{n}.nc3z")).collect();
    want.push(format!("{big}.nc3z"));
    want.sort();
    let got: Vec<String> = tree(&out)
        .into_iter()
        .filter(|p| p.ends_with(".nc3z"))
        .collect();
    assert_eq!(got, want);
    // Shard 1's manifest: every file of the shard packed exactly once, each file the killed
    // run recorded skipped once by the rerun, no failures.
    let all = statuses_of(&manifest);
    let shard1: Vec<&(String, String)> = all.iter().collect();
    let mut packed: Vec<&str> = shard1
        .iter()
        .filter(|(s, _)| s == "packed")
        .map(|(_, n)| n.as_str())
        .collect();
    packed.sort();
    let mut mine: Vec<String> = names.clone();
    mine.push(big.clone());
    mine.sort();
    let mine: Vec<&str> = mine
        .iter()
        .filter(|n| owner(1, 2, n))
        .map(String::as_str)
        .collect();
    assert_eq!(packed, mine);
    let mut skipped: Vec<&str> = shard1
        .iter()
        .filter(|(s, _)| s == "skipped")
        .map(|(_, n)| n.as_str())
        .collect();
    skipped.sort();
    let mut recorded: Vec<&str> = first.iter().map(|(_, n)| n.as_str()).collect();
    recorded.sort();
    assert_eq!(skipped, recorded);
    assert_eq!(shard1.len(), packed.len() + skipped.len());
    // And the collection verifies.
    let (code, stdout, err) = nc3pack(
        &[
            "verify".as_ref(),
            "--manifest".as_ref(),
            out.join(".nc3pack").as_ref(),
            "--against".as_ref(),
            input.as_ref(),
        ],
        None,
    );
    assert_eq!(code, 0, "{stdout}{err}");
    assert_eq!(
        stdout,
        "verified 701 archives against the originals: 0 failed\n"
    );
}

/// A rerun skips archives recorded as packed from the same input whose ends are intact, packs
/// again one whose footer is damaged, refuses an input that changed since (until --force).
#[test]
fn a_rerun_skips_what_is_done_repacks_a_damaged_archive_and_refuses_a_changed_input() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    populate(
        &input,
        &["a.nc".into(), "b.nc".into(), "c.nc".into()],
        "classic_records.nc",
    );
    let out = dir.path().join("out");
    let records = out.join(".nc3pack");
    let manifest = records.join("manifest-0-of-1.jsonl");
    let (code, err) = batch(&[], &[&input], &out);
    assert_eq!(code, 0, "{err}");
    let rerun = |extra: &[&Path]| {
        let before = statuses_of(&manifest).len();
        let mut args = vec![input.as_path()];
        args.extend(extra);
        let (code, err) = batch(&[], &args, &out);
        let mut new = statuses_of(&manifest).split_off(before);
        new.sort_by(|x, y| x.1.cmp(&y.1));
        (code, err, new)
    };
    let st = |s: &str, n: &str| (s.to_string(), n.to_string());
    let (code, err, new) = rerun(&[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        new,
        [
            st("skipped", "a.nc"),
            st("skipped", "b.nc"),
            st("skipped", "c.nc")
        ]
    );
    // a: its footer damaged (found by the cheap check: packed again); b: a byte in the middle
    // (not looked at: the check reads the ends only); c: the input grew.
    let flip = |p: &Path, at: fn(usize) -> usize| {
        let mut b = std::fs::read(p).unwrap();
        let i = at(b.len());
        b[i] ^= 0x40;
        std::fs::write(p, b).unwrap();
    };
    flip(&out.join("a.nc.nc3z"), |n| n - 10);
    flip(&out.join("b.nc.nc3z"), |n| n / 2);
    let mut c = std::fs::OpenOptions::new()
        .append(true)
        .open(input.join("c.nc"))
        .unwrap();
    std::io::Write::write_all(&mut c, &[0; 100]).unwrap();
    drop(c);
    let (code, err, new) = rerun(&[]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        new,
        [
            st("packed", "a.nc"),
            st("skipped", "b.nc"),
            st("failed", "c.nc")
        ]
    );
    assert!(
        err.contains(&format!(
            "{}: changed since it was packed",
            input.join("c.nc").display()
        )),
        "{err}"
    );
    assert!(nc3pack::verify(
        &out.join("a.nc.nc3z"),
        &nc3pack::VerifyOptions::default().with_threads(1)
    )
    .unwrap()
    .is_intact());
    // --force packs everything again.
    let (code, err, new) = rerun(&[Path::new("-f")]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        new,
        [
            st("packed", "a.nc"),
            st("packed", "b.nc"),
            st("packed", "c.nc")
        ]
    );
    let (code, stdout, err) = nc3pack(
        &[
            "verify".as_ref(),
            "--manifest".as_ref(),
            records.as_ref(),
            "--against".as_ref(),
            input.as_ref(),
        ],
        None,
    );
    assert_eq!(code, 0, "{stdout}{err}");
}

/// A rerun reads each archive's ends without updating its access time (it is the archives'
/// owner): 100,000 archives read would otherwise be as many inodes written back. An access
/// time older than the modification time is one that a read updates under `relatime`.
#[test]
fn a_rerun_leaves_the_archives_access_times_alone() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    populate(
        &input,
        &["a.nc".into(), "b/c.nc".into()],
        "classic_records.nc",
    );
    let out = dir.path().join("out");
    let (code, err) = batch(&[], &[&input], &out);
    assert_eq!(code, 0, "{err}");
    let day_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(86_400);
    let archives = [out.join("a.nc.nc3z"), out.join("b/c.nc.nc3z")];
    for a in &archives {
        let f = std::fs::File::options().write(true).open(a).unwrap();
        f.set_times(std::fs::FileTimes::new().set_accessed(day_ago))
            .unwrap();
    }
    let (code, err) = batch(&[], &[&input], &out);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("packed 0 of 2 files, 2 already packed (skipped)"),
        "{err}"
    );
    for a in &archives {
        let atime = std::fs::metadata(a).unwrap().accessed().unwrap();
        assert_eq!(atime, day_ago, "{}", a.display());
    }
}

/// A rerun's `skipped` lines hold the name only and refer to the `packed` line for the
/// record: later reruns still skip everything (through several reruns' lines), and `verify
/// --manifest` checks each archive against the packed line's hash; a manifest holding only
/// such lines verifies nothing it cannot check and says why.
#[test]
fn skipped_lines_are_short_and_refer_to_the_packed_record() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    let names: Vec<String> = ["a.nc", "d/b.nc", "d/e/c.nc"].map(String::from).to_vec();
    populate(&input, &names, "classic_records.nc");
    let out = dir.path().join("out");
    let records = out.join(".nc3pack");
    let manifest = records.join("manifest-0-of-1.jsonl");
    let (code, err) = batch(&[], &[&input], &out);
    assert_eq!(code, 0, "{err}");
    let packed_lines = std::fs::read_to_string(&manifest).unwrap();
    for _ in 0..2 {
        let (code, err) = batch(&[], &[&input], &out);
        assert_eq!(code, 0, "{err}");
        assert!(
            err.contains("packed 0 of 3 files, 3 already packed (skipped)"),
            "{err}"
        );
    }
    let text = std::fs::read_to_string(&manifest).unwrap();
    let rerun_lines: Vec<&str> = text[packed_lines.len()..].lines().collect();
    assert_eq!(rerun_lines.len(), 6, "{text}");
    let mut got: Vec<serde_json::Value> = rerun_lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    got.sort_by_key(|v| v["name"].as_str().unwrap().to_string());
    let want: Vec<serde_json::Value> = ["a.nc", "a.nc", "d/b.nc", "d/b.nc", "d/e/c.nc", "d/e/c.nc"]
        .iter()
        .map(|n| serde_json::json!({"name": n, "status": "skipped"}))
        .collect();
    assert_eq!(got, want);
    // verify --manifest takes the packed line's record: an archive replaced by another
    // input's (intact, of another hash) is caught, as is one byte flipped.
    let verify = |m: &Path| {
        nc3pack(
            &["verify".as_ref(), "--manifest".as_ref(), m.as_os_str()],
            None,
        )
    };
    let (code, stdout, err) = verify(&records);
    assert_eq!(
        (code, stdout.as_str()),
        (0, "verified 3 archives: 0 failed\n"),
        "{err}"
    );
    let b = out.join("d/b.nc.nc3z");
    let good = std::fs::read(&b).unwrap();
    nc3pack::pack_file(
        &samples_dir().join("fill_values.nc"),
        &b,
        &nc3pack::PackOptions::default().with_force(true),
    )
    .unwrap();
    let (code, stdout, _) = verify(&records);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.starts_with(&format!("{}: the archive restores", b.display())),
        "{stdout}"
    );
    std::fs::write(&b, &good).unwrap();
    // A manifest of the reruns' lines alone: nothing records the size and hash.
    let alone = dir.path().join("reruns.jsonl");
    std::fs::write(&alone, &text.as_bytes()[packed_lines.len()..]).unwrap();
    let (code, stdout, _) = verify(&alone);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("no manifest line read records its size and xxh3"),
        "{stdout}"
    );
    assert!(
        stdout.ends_with("verified 3 archives: 3 failed\n"),
        "{stdout}"
    );
}

/// Each `packed` line records which file its archive is (`output_ino`, `output_ctime_ns`: its
/// inode and change time as a stat finds them once it is in place), and a rerun that finds
/// them so writes a short `skipped` line. An archive whose change time moved (a chmod: the
/// same bytes) has its ends read and is recorded again as it is now (a full `skipped` line),
/// so that the next rerun needs the stat only; so are the archives of a manifest without
/// the identity (an earlier version's).
#[test]
fn packed_lines_record_which_file_each_archive_is_and_a_rerun_records_a_changed_one_again() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    let names: Vec<String> = ["a.nc", "b.nc", "d/c.nc"].map(String::from).to_vec();
    populate(&input, &names, "classic_records.nc");
    let out = dir.path().join("out");
    let records = out.join(".nc3pack");
    let manifest = records.join("manifest-0-of-1.jsonl");
    let id_of = |name: &str| {
        let m = std::fs::metadata(out.join(format!("{name}.nc3z"))).unwrap();
        (m.ino(), m.ctime() * 1_000_000_000 + m.ctime_nsec())
    };
    let id_in = |l: &serde_json::Value| {
        (
            l["output_ino"].as_u64().unwrap(),
            l["output_ctime_ns"].as_i64().unwrap(),
        )
    };
    let (code, err) = batch(&[], &[&input], &out);
    assert_eq!(code, 0, "{err}");
    let lines = manifest_lines(&records);
    assert_eq!(lines.len(), 3);
    for l in &lines {
        assert_eq!(l["status"], "packed", "{l}");
        assert_eq!(id_in(l), id_of(l["name"].as_str().unwrap()), "{l}");
    }
    // The lines of a rerun, by name.
    let rerun = || {
        let before = std::fs::read_to_string(&manifest).unwrap().len();
        let (code, err) = batch(&[], &[&input], &out);
        assert_eq!(code, 0, "{err}");
        assert!(
            err.contains("packed 0 of 3 files, 3 already packed (skipped)"),
            "{err}"
        );
        let text = std::fs::read_to_string(&manifest).unwrap();
        let mut new: Vec<serde_json::Value> = text[before..]
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        new.sort_by_key(|v| v["name"].as_str().unwrap().to_string());
        new
    };
    let short = |n: &str| serde_json::json!({"name": n, "status": "skipped"});
    assert_eq!(rerun(), names.iter().map(|n| short(n)).collect::<Vec<_>>());
    // b's archive chmodded: the same bytes, a later change time (after the clock's tick).
    std::thread::sleep(std::time::Duration::from_millis(50));
    let b = out.join("b.nc.nc3z");
    let mode = std::fs::metadata(&b).unwrap().permissions().mode();
    std::fs::set_permissions(&b, std::fs::Permissions::from_mode(mode ^ 0o004)).unwrap();
    let new = rerun();
    assert_eq!((&new[0], &new[2]), (&short("a.nc"), &short("d/c.nc")));
    let full = &new[1];
    assert_eq!(
        (&full["status"], &full["name"]),
        (&"skipped".into(), &"b.nc".into())
    );
    assert_eq!(full["xxh3"], lines[1]["xxh3"], "{full}");
    assert_eq!(full["output_size"], lines[1]["output_size"], "{full}");
    assert_eq!(id_in(full), id_of("b.nc"), "{full}");
    assert_ne!(id_in(full), id_in(&lines[1]), "{full}");
    assert_eq!(rerun(), names.iter().map(|n| short(n)).collect::<Vec<_>>());
    // A manifest of an earlier version: no identities. Each is recorded once, then trusted.
    let text = std::fs::read_to_string(&manifest).unwrap();
    let older: String = text
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            let m = v.as_object_mut().unwrap();
            m.remove("output_ino");
            m.remove("output_ctime_ns");
            v.to_string() + "\n"
        })
        .collect();
    std::fs::write(&manifest, older).unwrap();
    let new = rerun();
    for (l, n) in new.iter().zip(&names) {
        assert_eq!(
            (&l["status"], &l["name"]),
            (&"skipped".into(), &n.as_str().into())
        );
        assert_eq!(id_in(l), id_of(n), "{l}");
    }
    assert_eq!(rerun(), names.iter().map(|n| short(n)).collect::<Vec<_>>());
}

/// `--delete-input` deletes an original only once its archive is in place and decodes back to
/// its hash: not a symbolic link, not an input whose archive cannot be renamed into place, not
/// one whose archive is damaged (found by the complete verify a rerun runs before deleting),
/// and never an original whose archive is missing or does not verify when the run is killed
/// (SIGKILL) at any point; a rerun finishes, skipping what is done and gone.
#[test]
fn delete_input_deletes_only_originals_whose_archives_are_proven() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    let names: Vec<String> = (0..40).map(|k| format!("d{}/f{k:02}.nc", k % 2)).collect();
    populate(&input, &names, "classic_records.nc");
    let original = std::fs::read(samples_dir().join("classic_records.nc")).unwrap();
    let hash = xxhash_rust::xxh3::xxh3_128(&original);
    std::os::unix::fs::symlink(input.join("d0/f00.nc"), input.join("link.nc")).unwrap();
    let out = dir.path().join("out");
    // Where d1/f01.nc's archive goes, a directory: the rename fails.
    std::fs::create_dir_all(out.join("d1/f01.nc.nc3z")).unwrap();
    let del = Path::new("--delete-input");
    let (code, err) = batch(&[], &[&input, del], &out);
    assert_eq!(code, 1, "{err}");
    // The link is kept, said so, and not a failure: its archive is done and recorded.
    assert!(
        err.contains(&format!(
            "nc3pack: {}: kept: a symbolic link: never deleted (nor its target)\n",
            input.join("link.nc").display()
        )),
        "{err}"
    );
    assert!(
        err.ends_with("1 of 41 files failed (listed above)\n"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{}: output is a directory",
            out.join("d1/f01.nc.nc3z").display()
        )),
        "{err}"
    );
    // Kept: the link (its archive made), its target's archive made and the target deleted
    // (the link now dangles), the one whose archive could not be renamed.
    let mut left = tree(&input);
    left.sort();
    assert_eq!(left, ["d1/f01.nc", "link.nc"]);
    let lines = manifest_lines(&out.join(".nc3pack"));
    assert_eq!(
        lines.iter().filter(|l| l["deleted"] == true).count(),
        39,
        "{lines:?}"
    );
    let link: Vec<_> = lines.iter().filter(|l| l["name"] == "link.nc").collect();
    assert_eq!(link.len(), 1, "{link:?}");
    assert_eq!(link[0]["status"], "packed", "{link:?}");
    assert_eq!(
        link[0]["kept"], "a symbolic link: never deleted (nor its target)",
        "{link:?}"
    );
    assert!(link[0].get("deleted").is_none(), "{link:?}");
    // verify --manifest takes the link's archive as done: the one failure is d1/f01.nc.
    let (code, stdout, _) = nc3pack(
        &[
            "verify".as_ref(),
            "--manifest".as_ref(),
            out.join(".nc3pack").as_os_str(),
        ],
        None,
    );
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.ends_with("verified 40 archives: 1 failed\n") && !stdout.contains("link.nc"),
        "{stdout}"
    );
    // Every archive of a deleted original restores it.
    let proven = |z: &Path| {
        let r = nc3pack::verify(z, &nc3pack::VerifyOptions::default().with_threads(1)).unwrap();
        r.is_intact()
            && r.hash_checked
            && nc3pack::Archive::open(z).unwrap().original_hash() == hash
    };
    for n in &names {
        if !input.join(n).exists() {
            assert!(proven(&out.join(format!("{n}.nc3z"))), "{n}");
        }
    }
    // Fault at the verification: a byte in the middle of an archive flipped (the cheap check
    // passes), its original put back. The rerun skips it, verifies it completely before
    // deleting, and keeps the original.
    std::fs::remove_dir(out.join("d1/f01.nc.nc3z")).unwrap();
    std::fs::remove_file(input.join("link.nc")).unwrap();
    let victim = out.join("d0/f10.nc.nc3z");
    let mut b = std::fs::read(&victim).unwrap();
    let mid = b.len() / 2;
    b[mid] ^= 1;
    std::fs::write(&victim, &b).unwrap();
    // The manifest records the original's mtime: restore it with the same mtime.
    let rec = lines.iter().find(|l| l["name"] == "d0/f10.nc").unwrap();
    std::fs::write(input.join("d0/f10.nc"), &original).unwrap();
    let mtime = rec["mtime_ns"].as_i64().unwrap();
    let ts = libc::timespec {
        tv_sec: mtime / 1_000_000_000,
        tv_nsec: mtime % 1_000_000_000,
    };
    let c = std::ffi::CString::new(input.join("d0/f10.nc").to_str().unwrap()).unwrap();
    // SAFETY: a plain system call on a NUL-terminated path and two timespecs.
    assert_eq!(
        unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), [ts, ts].as_ptr(), 0) },
        0
    );
    let (code, err) = batch(&[], &[&input, del], &out);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!(
            "{}: not deleted: its archive {} does not verify",
            input.join("d0/f10.nc").display(),
            victim.display()
        )),
        "{err}"
    );
    assert_eq!(tree(&input), ["d0/f10.nc"]);
    assert!(proven(&out.join("d1/f01.nc.nc3z")));
    // Killed at many points of a run: an original is gone only if its archive is proven.
    let big = dir.path().join("big");
    let many: Vec<String> = (0..300).map(|k| format!("{k:03}.nc")).collect();
    for kill_after in [1, 40, 120, 260] {
        let _ = std::fs::remove_dir_all(&big);
        let _ = std::fs::remove_dir_all(dir.path().join("bigout"));
        populate(&big, &many, "classic_records.nc");
        let bigout = dir.path().join("bigout");
        let manifest = bigout.join(".nc3pack/manifest-0-of-1.jsonl");
        let mut child = Command::new(env!("CARGO_BIN_EXE_nc3pack"))
            .args(["pack", "-q", "-j", "1", "--delete-input"])
            .arg(&big)
            .arg("-o")
            .arg(&bigout)
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let gone = || many.iter().filter(|n| !big.join(n).exists()).count();
        let mut polls = 0;
        while gone() < kill_after && child.try_wait().unwrap().is_none() {
            assert!(polls < 60_000, "nothing deleted in 60 s");
            std::thread::sleep(std::time::Duration::from_millis(1));
            polls += 1;
        }
        let _ = child.kill();
        let status = child.wait().unwrap();
        for n in &many {
            if !big.join(n).exists() {
                assert!(
                    proven(&bigout.join(format!("{n}.nc3z"))),
                    "{n} deleted without a proven archive (killed after {kill_after}: {status:?})"
                );
            }
        }
        let _ = status.signal();
        // The rerun finishes: everything packed, every original deleted.
        let (code, err) = batch(&[], &[&big, del], &bigout);
        assert_eq!(code, 0, "{err}");
        assert_eq!(tree(&big), Vec::<String>::new());
        for n in &many {
            assert!(proven(&bigout.join(format!("{n}.nc3z"))), "{n}");
        }
        assert!(std::fs::metadata(&manifest).is_ok());
    }
}

#[test]
fn force_still_ignores_files_found_that_are_not_netcdf() {
    // A rerun with --force packs everything again, but a text file found in the tree is still
    // not an input (it was ignored by the first run, and must not become a failure).
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    populate(&input, &["a/x.nc".into(), "b/y.cdf".into()], "scalars.nc");
    std::fs::write(input.join("a/README.txt"), "notes, not netCDF").unwrap();
    let out = dir.path().join("out");
    for force in [false, true] {
        let mut args: Vec<&std::ffi::OsStr> = vec!["pack".as_ref(), "-q".as_ref()];
        if force {
            args.push("--force".as_ref());
        }
        args.extend([input.as_os_str(), "-o".as_ref(), out.as_os_str()]);
        let (code, _, err) = nc3pack(&args, None);
        assert_eq!(code, 0, "force {force}: {err}");
        assert_eq!(err, "", "force {force}");
    }
    assert_eq!(tree(&out), ["a/x.nc.nc3z", "b/y.cdf.nc3z"]);
    let mut st = statuses(&out.join(".nc3pack"));
    st.sort();
    let packed = |n: &str| ("packed".to_string(), n.to_string());
    assert_eq!(
        st,
        [
            packed("a/x.nc"),
            packed("a/x.nc"),
            packed("b/y.cdf"),
            packed("b/y.cdf")
        ]
    );
}

#[test]
fn var_rules_apply_to_every_file_of_a_batch_and_a_missing_name_fails_that_file_only() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    populate(
        &input,
        &["a/g1.nc".into(), "b/g2.nc".into()],
        "gridded_sst.nc",
    );
    populate(&input, &["c/s.nc".into()], "scalars.nc");
    let out = dir.path().join("out");
    let (code, _, err) = nc3pack(
        &[
            "pack".as_ref(),
            "--var".as_ref(),
            "sst:block-size=40000,codec=deflate".as_ref(),
            input.as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
        ],
        None,
    );
    assert_eq!(code, 1, "{err}");
    // The file without `sst` fails, naming the pattern and its variables; the others are packed.
    let failure = err
        .lines()
        .find(|l| l.contains("s.nc"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        failure.contains("no variable of") && failure.contains("\"sst\""),
        "{err}"
    );
    assert!(err.contains("packed 2 of 3 files"), "{err}");
    assert!(
        err.lines().last().unwrap().contains("1 of 3 files failed"),
        "{err}"
    );
    assert_eq!(tree(&out), ["a/g1.nc.nc3z", "b/g2.nc.nc3z"]);
    let mut st = statuses(&out.join(".nc3pack"));
    st.sort();
    assert_eq!(
        st,
        [
            ("failed".to_string(), "c/s.nc".to_string()),
            ("packed".to_string(), "a/g1.nc".to_string()),
            ("packed".to_string(), "b/g2.nc".to_string()),
        ]
    );
    // Each packed file has the rule applied: sst (float, 24 x 180 x 360) in blocks of 40000
    // bytes, each compressed with deflate; the other variables keep the defaults (1 MiB).
    for name in ["a/g1.nc.nc3z", "b/g2.nc.nc3z"] {
        let a = nc3pack::Archive::open(out.join(name)).unwrap();
        let sst = a.header().var_id("sst").unwrap();
        assert_eq!(a.block_bytes(sst), 40000, "{name}");
        assert_eq!(a.block_count(sst), (24 * 180 * 360 * 4u64).div_ceil(40000));
        assert!(
            (0..a.block_count(sst))
                .any(|b| a.entry(sst, b).codec == nc3pack::format::Codec::Deflate),
            "{name}"
        );
        let time = a.header().var_id("time").unwrap();
        assert_eq!(a.block_sizes().var(time), 1 << 20, "{name}");
        // And it restores the original exactly.
        let back = dir.path().join("back.nc");
        nc3pack::unpack_file(
            &out.join(name),
            &back,
            &nc3pack::UnpackOptions::default().with_force(true),
        )
        .unwrap();
        assert!(
            std::fs::read(&back).unwrap()
                == std::fs::read(samples_dir().join("gridded_sst.nc")).unwrap()
        );
    }
}

/// XXH3-128 of a file, as the manifest writes it (32 hex digits).
fn xxh3_hex(path: &Path) -> String {
    format!(
        "{:032x}",
        xxhash_rust::xxh3::xxh3_128(&std::fs::read(path).unwrap())
    )
}

/// `--quantize` in a batch: each file is quantized as `pack IN OUT --quantize` would (a file
/// without the named variable fails, named); the manifest records the input's size and hash
/// and, as `restored_size`/`restored_xxh3`, those of the quantized file the archive restores;
/// a rerun skips what is done; `verify --manifest` (with `--against` too) passes, then finds a
/// flipped byte and a changed original; and no original is ever deleted for a lossy archive.
#[test]
fn a_quantized_batch_records_both_files_resumes_verifies_and_never_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    populate(
        &input,
        &["a/g1.nc".into(), "b/g2.nc".into()],
        "gridded_sst.nc",
    );
    populate(&input, &["c/obs.nc".into()], "obs_points.nc");
    let out = dir.path().join("out");
    let pack = |extra: &[&str]| {
        let mut args: Vec<&std::ffi::OsStr> = vec!["pack".as_ref()];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        args.extend([input.as_os_str(), "-o".as_ref(), out.as_os_str()]);
        nc3pack(&args, None)
    };
    let q = ["--quantize", "sst=bitround:7"];
    // Quantizing and deleting the originals is refused before anything is done.
    let (code, _, err) = pack(&[q[0], q[1], "--delete-input"]);
    assert_eq!(code, 2, "{err}");
    assert!(!out.exists());
    let (code, _, err) = pack(&q);
    assert_eq!(code, 1, "{err}");
    let failure = err
        .lines()
        .find(|l| l.contains("obs.nc"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(failure.contains("\"sst\" matches no variable"), "{err}");
    assert!(err.contains("packed 2 of 3 files"), "{err}");
    // Each archive as the single-file pack makes it; the manifest line names both files.
    let single = dir.path().join("single.nc3z");
    let (code, _, err) = nc3pack(
        &[
            "pack".as_ref(),
            q[0].as_ref(),
            q[1].as_ref(),
            input.join("a/g1.nc").as_os_str(),
            single.as_os_str(),
        ],
        None,
    );
    assert_eq!(code, 0, "{err}");
    let restored = dir.path().join("restored.nc");
    nc3pack::unpack_file(&single, &restored, &nc3pack::UnpackOptions::default()).unwrap();
    let original = samples_dir().join("gridded_sst.nc");
    assert_ne!(xxh3_hex(&restored), xxh3_hex(&original));
    let lines = manifest_lines(&out.join(".nc3pack"));
    for name in ["a/g1.nc", "b/g2.nc"] {
        let archive = out.join(format!("{name}.nc3z"));
        assert!(std::fs::read(&archive).unwrap() == std::fs::read(&single).unwrap());
        let l = lines.iter().find(|l| l["name"] == name).unwrap();
        assert_eq!(l["status"], "packed");
        assert_eq!(l["size"], std::fs::metadata(&original).unwrap().len());
        assert_eq!(l["xxh3"], xxh3_hex(&original));
        assert_eq!(
            l["restored_size"],
            std::fs::metadata(&restored).unwrap().len()
        );
        assert_eq!(l["restored_xxh3"], xxh3_hex(&restored));
    }
    let obs = lines.iter().find(|l| l["name"] == "c/obs.nc").unwrap();
    assert!(obs.get("restored_xxh3").is_none() && obs["status"] == "failed");
    std::fs::remove_file(input.join("c/obs.nc")).unwrap();
    // A rerun skips both; the collection verifies, against the originals too.
    let (code, _, err) = pack(&q);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("2 already packed (skipped)"), "{err}");
    let verify = |against: bool| {
        let m = out.join(".nc3pack");
        let mut args: Vec<&std::ffi::OsStr> = vec!["verify".as_ref(), "--manifest".as_ref()];
        args.push(m.as_os_str());
        if against {
            args.extend(["--against".as_ref(), input.as_os_str()]);
        }
        let (code, stdout, err) = nc3pack(&args, None);
        (code, format!("{stdout}{err}"))
    };
    // The manifest still lists obs.nc's failure: the last line of every other name verifies.
    for against in [false, true] {
        let (code, text) = verify(against);
        assert_eq!(code, 1, "{text}");
        assert!(
            text.contains("2 archives") && text.contains("1 failed"),
            "{text}"
        );
        assert!(text.contains("obs.nc: not packed"), "{text}");
    }
    // A byte of an original changed (same size and time): found with --against only.
    let g2 = input.join("b/g2.nc");
    let mut bytes = std::fs::read(&g2).unwrap();
    let mtime = std::fs::metadata(&g2).unwrap().modified().unwrap();
    let n = bytes.len();
    bytes[n - 10] ^= 1;
    std::fs::write(&g2, &bytes).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&g2)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let (_, text) = verify(true);
    assert!(
        text.contains("g2.nc.nc3z: does NOT match the original"),
        "{text}"
    );
    assert!(text.contains("2 failed"), "{text}");
    let (_, text) = verify(false);
    assert!(text.contains("1 failed"), "{text}");
    // A flipped byte in an archive's data.
    let z1 = out.join("a/g1.nc.nc3z");
    let mut z = std::fs::read(&z1).unwrap();
    z[5000] ^= 1;
    std::fs::write(&z1, &z).unwrap();
    let (_, text) = verify(false);
    assert!(text.contains("g1.nc.nc3z: damaged"), "{text}");
    assert!(text.contains("2 failed"), "{text}");
    // Deleting inputs of lossy archives (a rerun without --quantize): refused, each kept.
    let (code, _, err) = pack(&["--delete-input"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("is lossy (quantized)"), "{err}");
    assert!(input.join("a/g1.nc").exists() && g2.exists());
}

/// The library refuses to quantize and delete inputs in one batch (the CLI's usage error),
/// before any input is looked at.
#[test]
fn pack_collection_refuses_to_delete_the_inputs_of_lossy_archives() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    populate(&input, &["g.nc".into()], "gridded_sst.nc");
    let out = dir.path().join("out");
    let pack = nc3pack::PackOptions::default().with_quantize("sst=bitround:7".parse().unwrap());
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = calls.clone();
    let opts = nc3pack::CollectionOptions::default()
        .with_pack(pack)
        .with_delete_input(true)
        .with_progress(move |_| {
            // No event at all: not even the plan of the inputs.
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        });
    let r = nc3pack::pack_collection(&[&input], &out, &opts);
    assert!(
        matches!(
            r,
            Err(nc3pack::Error::Option(
                nc3pack::error::OptionError::DeleteInputLossy
            ))
        ),
        "{r:?}"
    );
    assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 0);
    assert!(input.join("g.nc").exists() && !out.exists());
}

/// Without writing the manifest (what bench/collection.sh measures against), the files are
/// packed and no line is recorded; by default each file packed gets its line.
#[test]
fn pack_collection_without_writing_the_manifest_records_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    populate(
        &input,
        &["a.nc".into(), "b.nc".into()],
        "classic_records.nc",
    );
    let bare = nc3pack::CollectionOptions::default().with_write_manifest(false);
    let r = nc3pack::pack_collection(&[&input], &dir.path().join("bare"), &bare).unwrap();
    assert!(r.is_ok() && r.packed == 2, "{r:?}");
    assert!(dir.path().join("bare/a.nc.nc3z").exists());
    let lines = std::fs::read_to_string(&r.manifest).unwrap_or_default();
    assert_eq!(lines, "", "{}", r.manifest.display());
    let opts = nc3pack::CollectionOptions::default();
    let r = nc3pack::pack_collection(&[&input], &dir.path().join("out"), &opts).unwrap();
    assert!(r.is_ok() && r.packed == 2, "{r:?}");
    let statuses = statuses_of(&r.manifest);
    assert_eq!(statuses.len(), 2, "{statuses:?}");
}

/// A run killed after renaming a quantized file's archive and before writing its manifest
/// line: the rerun finds the archive complete, holding that input as its original (the
/// quantized file's `nc3pack_original_xxh3_128` attribute), skips it and writes the lost line
/// (both files' sizes and hashes); an input changed since is refused, its archive kept.
#[test]
fn a_quantized_archive_without_its_line_is_skipped_when_it_holds_that_input() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    populate(
        &input,
        &["a/g1.nc".into(), "b/g2.nc".into()],
        "gridded_sst.nc",
    );
    let out = dir.path().join("out");
    let pack = || {
        nc3pack(
            &[
                "pack".as_ref(),
                "--quantize".as_ref(),
                "sst=bitround:7".as_ref(),
                input.as_os_str(),
                "-o".as_ref(),
                out.as_os_str(),
            ],
            None,
        )
    };
    let (code, _, err) = pack();
    assert_eq!(code, 0, "{err}");
    let first = manifest_lines(&out.join(".nc3pack"));
    let archives: Vec<Vec<u8>> = ["a/g1.nc", "b/g2.nc"]
        .iter()
        .map(|n| std::fs::read(out.join(format!("{n}.nc3z"))).unwrap())
        .collect();
    // The lines lost (as if the run died before writing them).
    std::fs::remove_dir_all(out.join(".nc3pack")).unwrap();
    let (code, _, err) = pack();
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("2 already packed (skipped)"), "{err}");
    let lines = manifest_lines(&out.join(".nc3pack"));
    for (name, archive) in ["a/g1.nc", "b/g2.nc"].iter().zip(&archives) {
        let z = out.join(format!("{name}.nc3z"));
        assert!(std::fs::read(&z).unwrap() == *archive, "{name} rewritten");
        let l = lines.iter().find(|l| l["name"] == *name).unwrap();
        let f = first.iter().find(|l| l["name"] == *name).unwrap();
        // The line the killed run lost, written now.
        assert_eq!(l["status"], "packed", "{l}");
        for key in crate::util::LOSSY_LINE_KEYS {
            assert_eq!(l[key], f[key], "{name}: {key}");
        }
        assert_eq!(l["xxh3"], xxh3_hex(&input.join(name)));
    }
    // The collection verifies from the new lines, against the originals too.
    let m = out.join(".nc3pack");
    let (code, stdout, err) = nc3pack(
        &[
            "verify".as_ref(),
            "--manifest".as_ref(),
            m.as_os_str(),
            "--against".as_ref(),
            input.as_os_str(),
        ],
        None,
    );
    assert_eq!(code, 0, "{stdout}{err}");
    // A changed original (same size) with no line: not this archive's original, refused.
    std::fs::remove_dir_all(&m).unwrap();
    let g2 = input.join("b/g2.nc");
    let mut bytes = std::fs::read(&g2).unwrap();
    let n = bytes.len();
    bytes[n - 10] ^= 1;
    std::fs::write(&g2, &bytes).unwrap();
    let (code, _, err) = pack();
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("g2.nc.nc3z: output exists and is not recorded as this input's archive"),
        "{err}"
    );
    assert!(err.contains("1 already packed (skipped)"), "{err}");
    assert!(std::fs::read(out.join("b/g2.nc.nc3z")).unwrap() == archives[1]);
}

/// `verify --manifest` vouches only for what it read: a directory holding no manifest (an empty
/// or mistyped one), an empty manifest, a manifest of blank lines and a directory of empty
/// manifests each fail (exit 1) with one line naming what was looked at, and nothing is
/// verified, even beside a good manifest.
#[test]
fn verify_manifest_refuses_to_vouch_for_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    populate(&input, &["a.nc".to_string()], "scalars.nc");
    let out = dir.path().join("out");
    let (code, err) = batch(&[], &[&input], &out);
    assert_eq!(code, 0, "{err}");
    let records = out.join(".nc3pack");
    let verify = |ms: &[&Path]| {
        let mut args: Vec<&std::ffi::OsStr> = vec!["verify".as_ref(), "--manifest".as_ref()];
        args.extend(ms.iter().map(|m| m.as_os_str()));
        nc3pack(&args, None)
    };
    // The good manifest verifies its one archive.
    let (code, stdout, err) = verify(&[&records]);
    assert_eq!(
        (code, stdout.as_str()),
        (0, "verified 1 archives: 0 failed\n"),
        "{err}"
    );
    // A directory with no manifest in it (here: the input tree).
    let empty_dir = dir.path().join("empty");
    std::fs::create_dir(&empty_dir).unwrap();
    let empty_file = dir.path().join("empty.jsonl");
    std::fs::write(&empty_file, b"").unwrap();
    let blank_file = dir.path().join("blank.jsonl");
    std::fs::write(&blank_file, b"\n  \n\t\n").unwrap();
    let empties = dir.path().join("empties");
    std::fs::create_dir(&empties).unwrap();
    std::fs::write(empties.join("manifest-0-of-2.jsonl"), b"").unwrap();
    std::fs::write(empties.join("manifest-1-of-2.jsonl"), b"\n").unwrap();
    let no_manifest = |p: &Path| {
        format!(
            "nc3pack: {}: no manifest found (no *.jsonl file in this directory); nothing verified\n",
            p.display()
        )
    };
    let no_record = |p: &Path, n: usize| {
        let what = if n == 1 {
            "the manifest has no entry line".to_string()
        } else {
            format!("its {n} manifests have no entry line")
        };
        format!(
            "nc3pack: {}: no manifest record found ({what}); nothing verified\n",
            p.display()
        )
    };
    let cases: Vec<(Vec<&Path>, String)> = vec![
        (vec![&empty_dir], no_manifest(&empty_dir)),
        (vec![&input], no_manifest(&input)),
        (vec![&records, &empty_dir], no_manifest(&empty_dir)),
        (vec![&empty_file], no_record(&empty_file, 1)),
        (vec![&blank_file], no_record(&blank_file, 1)),
        (vec![&empties], no_record(&empties, 2)),
        (vec![&records, &empty_file], no_record(&empty_file, 1)),
    ];
    for (ms, want) in cases {
        let (code, stdout, err) = verify(&ms);
        assert_eq!(
            (code, stdout.as_str(), err.as_str()),
            (1, "", want.as_str()),
            "{ms:?}"
        );
    }
    // A mistyped path: the error names it.
    let typo = dir.path().join("out/.nc3pak");
    let (code, stdout, err) = verify(&[&typo]);
    assert_eq!((code, stdout.as_str()), (1, ""), "{err}");
    assert!(
        err.starts_with(&format!("nc3pack: {}: ", typo.display())) && err.lines().count() == 1,
        "{err}"
    );
}
