//! `nc3pack pack IN... -o OUTDIR`: many files in parallel, bad ones reported at the end; inputs
//! found by magic, names relative to a root, shards, the manifest, resuming, and
//! `verify --manifest`.

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
    // Found by their first bytes, whatever their names.
    std::fs::copy(samples().join("scalars.nc"), input.join("sub/no_suffix")).unwrap();
    std::fs::copy(samples().join("scalars.nc"), input.join("sub/x.cdf")).unwrap();
    // Not netCDF: skipped silently (text named *.nc, a 2-byte file, an empty one).
    std::fs::write(input.join("notes.txt"), "not netCDF: skipped").unwrap();
    std::fs::write(input.join("text.nc"), "CD").unwrap();
    std::fs::write(input.join("empty.nc"), "").unwrap();
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
            std::fs::read(samples().join(g)).unwrap(),
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
    let lines = manifest_lines(&out.join(".nc3pack"));
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
        std::fs::copy(samples().join("scalars.nc"), d.join("x.nc")).unwrap();
    }
    // x.nc and x.cdf side by side: .nc3z is appended, so their archives differ.
    std::fs::copy(samples().join("scalars.nc"), a.join("x.cdf")).unwrap();
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
    std::fs::copy(samples().join("scalars.nc"), t.join("x")).unwrap();
    std::fs::copy(samples().join("scalars.nc"), t.join("x.nc3z/y")).unwrap();
    std::fs::copy(samples().join("scalars.nc"), t.join("first.nc")).unwrap();
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
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    let names = ["classic_records.nc", "scalars.nc", "fill_values.nc"];
    let input_real = std::fs::canonicalize(&input).unwrap_or_else(|_| input.clone());
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
    let plan = nc3pack::__private::plan(
        [Ok(input.clone())],
        &out,
        None,
        nc3pack::__private::Shard::default(),
    )
    .unwrap();
    assert!(plan.unreadable.is_empty(), "{:?}", plan.unreadable);
    assert_eq!(plan.len(), n);
    let opts = nc3pack::PackOptions {
        threads: 2,
        ..Default::default()
    };
    let outcomes = std::sync::Mutex::new(vec![None; n]);
    nc3pack::__private::pack_all(&plan, &opts, &Default::default(), &|i, o| match o {
        nc3pack::__private::Outcome::Packed { summary, .. } => {
            assert!(outcomes.lock().unwrap()[i].replace(summary).is_none());
        }
        o => panic!("{}: {o:?}", plan.input(i).display()),
    })
    .unwrap();
    // What `pack_file` writes for each sample (the archive does not depend on the file's name).
    let per_file = nc3pack::PackOptions {
        threads: 1,
        ..opts.clone()
    };
    let single: Vec<Vec<u8>> = names
        .iter()
        .map(|name| {
            let z = dir.path().join(name).with_extension("nc3z");
            nc3pack::pack_file(&samples().join(name), &z, &per_file).unwrap();
            std::fs::read(z).unwrap()
        })
        .collect();
    let outcomes = outcomes.into_inner().unwrap();
    for (i, summary) in outcomes.iter().enumerate() {
        let summary = summary.as_ref().unwrap();
        let input = plan.input(i);
        let k: usize = input
            .file_stem()
            .unwrap()
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        let output = plan.output(i);
        assert_eq!(
            output,
            out.join(input.strip_prefix(&input_real).unwrap())
                .with_extension("nc.nc3z")
        );
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
            c.args(rest).arg(env!("CARGO_BIN_EXE_nc3pack"));
            c
        }
        None => Command::new(env!("CARGO_BIN_EXE_nc3pack")),
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
    let opts = nc3pack::PackOptions {
        threads: 1,
        ..Default::default()
    };
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
    let dir = tempfile::tempdir().unwrap();
    let (input, elsewhere) = (dir.path().join("in"), dir.path().join("elsewhere"));
    std::fs::create_dir_all(input.join("real")).unwrap();
    std::fs::create_dir_all(elsewhere.join("deeper")).unwrap();
    std::fs::copy(samples().join("scalars.nc"), input.join("real/plain.nc")).unwrap();
    std::fs::copy(samples().join("cdf5_types.nc"), elsewhere.join("x.nc")).unwrap();
    std::fs::copy(
        samples().join("fill_values.nc"),
        elsewhere.join("deeper/y.nc"),
    )
    .unwrap();
    // Links to files, relative and absolute; the link's name counts, not the target's.
    symlink("real/plain.nc", input.join("rel.nc")).unwrap();
    symlink(samples().join("classic_records.nc"), input.join("abs.nc")).unwrap();
    symlink(
        samples().join("classic_records.nc"),
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
        ("abs.nc.nc3z", samples().join("classic_records.nc")),
        ("no_nc_name.nc3z", samples().join("classic_records.nc")),
        ("rel.nc.nc3z", samples().join("scalars.nc")),
        ("linked/x.nc.nc3z", samples().join("cdf5_types.nc")),
        ("linked/deeper/y.nc.nc3z", samples().join("fill_values.nc")),
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
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::copy(samples().join("scalars.nc"), input.join("good.nc")).unwrap();
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
        &std::fs::read(samples().join("scalars.nc")).unwrap(),
    );
    // A missing input argument, and a good one after it.
    let missing = dir.path().join("missing.nc");
    let other = dir.path().join("other.nc");
    std::fs::copy(samples().join("cdf5_types.nc"), &other).unwrap();
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
    let dir = tempfile::tempdir().unwrap();
    let perms = |p: &Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    perms(dir.path(), 0o755);
    let input = dir.path().join("in");
    for sub in ["a_locked", "b_open"] {
        std::fs::create_dir_all(input.join(sub)).unwrap();
        let f = input.join(sub).join("x.nc");
        std::fs::copy(samples().join("scalars.nc"), &f).unwrap();
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
