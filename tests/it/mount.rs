//! `nc3pack mount`: a directory of archives mounted through FUSE reads as the directory of the
//! originals — `cmp`-equal, 10,000 random `pread`s across block, record and end-of-file
//! boundaries, `ncdump` (without the plugin), `ncks`, `cdo -s sinfo`, `infon` and `infon
//! -timmean` (the time mean) and `scipy.io.netcdf_file` with `mmap=True` give what they give
//! for the originals; writes fail with EROFS; a damaged block
//! gives EIO for the reads that touch it only; a replaced archive reads as the new one; SIGTERM
//! and `fusermount3 -u` leave no mount behind. Each test unmounts whatever happens (a guard),
//! and every wait is bounded. Without /dev/fuse or fusermount3 the tests are skipped
//! (`util::skip`), which fails under CI.

use crate::util::Rng;
use crate::util::{have_tool, root, sample, samples_dir, skip, temp_dir, BIN};
use std::os::unix::fs::FileExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Block size the archives are packed with: small, so that reads cross many blocks.
const BLOCK: u32 = 4096;

/// Whether FUSE can be used here; skips (visibly) when not.
fn fuse_or_skip() -> bool {
    if !Path::new("/dev/fuse").exists() {
        skip("needs /dev/fuse (FUSE: `modprobe fuse`; in a container, `--device /dev/fuse`)");
        return false;
    }
    have_tool("fusermount3", "apt-get install fuse3")
}

/// Whether `mp` is a mount point now (/proc/self/mountinfo).
fn is_mounted(mp: &Path) -> bool {
    let mp = mp.canonicalize().unwrap_or_else(|_| mp.to_path_buf());
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    info.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .any(|p| Path::new(p) == mp)
}

/// What each thread of process `pid` is doing, for a test that finds it stuck: its state
/// (`R`, `S`, `D` for a wait in the kernel that no signal ends), where it waits (`wchan`) and,
/// as root, its kernel stack.
fn threads_of(pid: u32) -> String {
    // The signals it ignores and catches first (a shell starts a background job with SIGINT
    // ignored, and the mount keeps a signal ignored that it was started with).
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let mut out: String = status
        .lines()
        .filter(|l| l.starts_with("SigIgn") || l.starts_with("SigCgt"))
        .map(|l| format!("{l}\n"))
        .collect();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return format!("(no /proc/{pid}/task)");
    };
    for t in tasks.flatten().take(64) {
        let dir = t.path();
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
        let stat = read("stat");
        // The state follows the command's closing parenthesis.
        let state = stat.rsplit_once(") ").map_or("?", |(_, r)| &r[..1]);
        out += &format!(
            "thread {} {} {} wchan {}\n{}",
            t.file_name().to_string_lossy(),
            read("comm").trim(),
            state,
            read("wchan"),
            read("stack")
        );
    }
    out
}

/// A running `nc3pack mount`; dropping it unmounts (fusermount3 -u -z) and ends the process,
/// whatever the test did.
struct Mount {
    child: Option<Child>,
    mp: PathBuf,
    log: PathBuf,
}

impl Mount {
    /// Mounts `archives` on a new directory in `scratch`, waiting (at most 20 s) until it is
    /// mounted and has said so on stderr (a test that counts what the mount writes starts
    /// after that line).
    fn start(archives: &Path, scratch: &Path) -> Mount {
        Mount::start_with(archives, scratch, &[])
    }

    /// As [`Mount::start`], with more arguments for `nc3pack mount`.
    fn start_with(archives: &Path, scratch: &Path, args: &[&str]) -> Mount {
        let mp = scratch.join("mnt");
        std::fs::create_dir_all(&mp).unwrap();
        let log = scratch.join("mount.log");
        let mut command = Command::new(BIN);
        // The signals the tests send at their default action in the mount, whatever the tests
        // were started with: a shell starts a background job (`cargo test &`, a CI runner's
        // `nohup`) with SIGINT and SIGHUP ignored, and the mount, as gzip does, keeps a signal
        // ignored that it was started with, so a stop by SIGINT would never come.
        // SAFETY: between fork and exec the closure calls only signal(2), which is
        // async-signal-safe, and allocates nothing.
        unsafe {
            command.pre_exec(|| {
                for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                    libc::signal(sig, libc::SIG_DFL);
                }
                Ok(())
            });
        }
        let child = command
            .arg("mount")
            .arg(archives)
            .arg(&mp)
            .arg("--stats")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start nc3pack mount");
        let mut m = Mount {
            child: Some(child),
            mp,
            log,
        };
        let t = Instant::now();
        while !is_mounted(&m.mp) || !m.log().contains(" mounted on ") {
            if let Some(status) = m.child.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "nc3pack mount ended ({status}) before mounting:\n{}",
                    m.log()
                );
            }
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "not mounted after 20 s:\n{}",
                m.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        m
    }

    /// The mounted file `name`.
    fn path(&self, name: &str) -> PathBuf {
        self.mp.join(name)
    }

    /// What the command wrote on stderr so far.
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends `signal` (or runs `fusermount3 -u` when `None`) and waits (at most 20 s) for the
    /// command to end; checks the mount is gone. Returns the command's log.
    fn stop(&mut self, signal: Option<libc::c_int>) -> String {
        let child = self.child.as_mut().expect("running");
        let pid = child.id();
        match signal {
            // SAFETY: kill with the id of a child not yet waited for.
            Some(sig) => unsafe {
                libc::kill(child.id() as libc::pid_t, sig);
            },
            None => {
                // "Device or resource busy" for a moment after a file of the mount was closed
                // while another test's thread was starting a process (the child holds a copy
                // of every descriptor until it calls exec): try again, for at most 5 s.
                let mut tries = 0;
                loop {
                    let out = Command::new("fusermount3")
                        .arg("-u")
                        .arg(&self.mp)
                        .output()
                        .unwrap();
                    if out.status.success() {
                        break;
                    }
                    let busy = String::from_utf8_lossy(&out.stderr).contains("busy");
                    tries += 1;
                    assert!(busy && tries < 50, "fusermount3 -u: {out:?}");
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
        let t = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "nc3pack mount still running 20 s after being stopped:\n{}\n{}",
                self.log(),
                threads_of(pid)
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        self.child = None;
        let log = self.log();
        assert!(
            !is_mounted(&self.mp),
            "still mounted after the command ended:\n{log}"
        );
        if signal.is_none() {
            assert!(status.success(), "{status} after fusermount3 -u:\n{log}");
        } else {
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(status.signal(), signal, "{status}:\n{log}");
        }
        log
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if is_mounted(&self.mp) {
            let _ = Command::new("fusermount3")
                .args(["-u", "-z"])
                .arg(&self.mp)
                .output();
        }
        if let Some(mut c) = self.child.take() {
            let t = Instant::now();
            while c.try_wait().ok().flatten().is_none() && t.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A file mounted: its name in the mount and its original.
#[derive(Clone)]
struct Case {
    name: String,
    original: PathBuf,
}

/// Packs `original` into `dir/NAME.nc3z`; false when it does not pack.
fn pack(original: &Path, dir: &Path, name: &str) -> bool {
    let opts = crate::util::preset_options(false, Some(BLOCK), 1).with_force(true);
    match nc3pack::pack_file(original, &dir.join(format!("{name}.nc3z")), &opts) {
        Ok(_) => true,
        Err(e) => {
            eprintln!(
                "not packed (not a test failure): {}: {e}",
                original.display()
            );
            false
        }
    }
}

/// Every sample, and (with ncgen) every third conformance CDL as CDF-1, CDF-2 and CDF-5,
/// packed into `dir`.
fn pack_cases(dir: &Path, scratch: &Path) -> Vec<Case> {
    let mut cases = Vec::new();
    let mut samples: Vec<PathBuf> = std::fs::read_dir(samples_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "nc"))
        .collect();
    samples.sort();
    for s in samples {
        let name = s.file_name().unwrap().to_string_lossy().into_owned();
        if pack(&s, dir, &name) {
            cases.push(Case { name, original: s });
        }
    }
    let cdl_dir = std::env::var_os("CONFORMANCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/conformance/netcdf-c-cdl"));
    let ncgen = Command::new("ncgen").arg("-h").output().is_ok();
    if !ncgen || !cdl_dir.is_dir() {
        eprintln!(
            "no conformance files (ncgen or {} missing)",
            cdl_dir.display()
        );
        return cases;
    }
    std::fs::create_dir_all(dir.join("conformance")).unwrap();
    let mut cdls: Vec<PathBuf> = std::fs::read_dir(&cdl_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cdl"))
        .filter(|p| !p.to_string_lossy().contains("big"))
        .collect();
    cdls.sort();
    for cdl in cdls.iter().step_by(3) {
        let stem = cdl.file_stem().unwrap().to_string_lossy().into_owned();
        for kind in ["classic", "64-bit-offset", "cdf5"] {
            let nc = scratch.join(format!("{stem}-{kind}.nc"));
            if !crate::util::ncgen_at_most(cdl, kind, &nc, 8 << 20) {
                continue;
            }
            let name = format!("conformance/{stem}-{kind}.nc");
            if pack(&nc, dir, &name) {
                cases.push(Case { name, original: nc });
            }
        }
    }
    cases
}

/// Offsets where reads are likely to go wrong: each variable's start and end, each record's
/// start (the first 64), the header's end, every multiple of the block size near those, and the
/// end of the file.
fn boundaries(original: &Path) -> Vec<u64> {
    use nc3pack::Dataset;
    let nc = nc3pack::NcFile::open(original);
    let mut b = vec![0];
    if let Ok(nc) = nc {
        let l = nc.layout();
        b.push(l.header_len);
        for v in &l.vars {
            b.push(v.begin);
            b.push(v.begin + u64::from(BLOCK));
            if v.is_record {
                for k in 0..l.numrecs.min(64) {
                    b.push(v.begin + k * l.recsize);
                }
            } else {
                b.push(v.begin + v.total);
            }
        }
    }
    let len = std::fs::metadata(original).unwrap().len();
    b.extend((0..16).map(|k| k * u64::from(BLOCK)));
    b.push(len);
    b
}

/// 10,000 random preads across the mounted files (seeded): each equal to the original's.
fn random_preads(m: &Mount, cases: &[Case]) {
    let files: Vec<(Vec<u8>, std::fs::File, Vec<u64>)> = cases
        .iter()
        .map(|c| {
            let original = std::fs::read(&c.original).unwrap();
            let f = std::fs::File::open(m.path(&c.name)).unwrap();
            (original, f, boundaries(&c.original))
        })
        .collect();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut buf = vec![0u8; 300 << 10];
    for i in 0..10_000 {
        let k = rng.below(files.len() as u64) as usize;
        let (original, f, marks) = &files[k];
        let len = original.len() as u64;
        let at = match rng.below(4) {
            0 | 1 => {
                let mark = marks[rng.below(marks.len() as u64) as usize];
                (mark + rng.below(200)).saturating_sub(100)
            }
            2 => len.saturating_sub(rng.below(2 * u64::from(BLOCK))) + rng.below(4),
            _ => rng.below(len + 1),
        };
        let n = match rng.below(8) {
            0 => 1 + rng.below(buf.len() as u64),
            _ => 1 + rng.below(3 * u64::from(BLOCK)),
        } as usize;
        let got = f
            .read_at(&mut buf[..n], at)
            .unwrap_or_else(|e| panic!("read {i}: {} at {at}, {n} bytes: {e}", cases[k].name));
        let want = &original[(at.min(len) as usize)..((at + n as u64).min(len) as usize)];
        assert!(
            buf[..got] == *want,
            "read {i}: {} at {at}, {n} bytes: {got} bytes read, {} expected, or other bytes",
            cases[k].name,
            want.len()
        );
    }
}

/// `program args... FILE` on the original and on the mounted file: the same output (when the
/// original's run succeeds). netCDF-C's tools run without the plugin (no LD_PRELOAD, a HOME
/// with no .ncrc). Returns how many files were compared.
fn same_output(m: &Mount, cases: &[Case], program: &str, args: &[&str], home: &Path) -> usize {
    let run = |path: &Path| {
        Command::new(program)
            .args(args)
            .arg(path)
            .env_remove("LD_PRELOAD")
            .env("HOME", home)
            .current_dir(home)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let mut compared = 0;
    for c in cases {
        let want = run(&c.original);
        if !want.status.success() {
            continue;
        }
        let got = run(&m.path(&c.name));
        assert!(
            got.status.success(),
            "{program} {}: {}",
            c.name,
            String::from_utf8_lossy(&got.stderr)
        );
        crate::util::assert_text_eq(
            &format!("{program} {args:?} of {}", c.name),
            &String::from_utf8_lossy(&want.stdout),
            &String::from_utf8_lossy(&got.stdout),
        );
        compared += 1;
    }
    compared
}

/// A Python with scipy: the test venv's, the system's, or the one on the PATH.
fn python_with_scipy() -> Option<PathBuf> {
    let candidates = [
        root().join("target/pyvenv/bin/python"),
        PathBuf::from("/usr/bin/python3"),
        PathBuf::from("python3"),
    ];
    candidates.into_iter().find(|p| {
        Command::new(p)
            .args(["-c", "import scipy.io"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Reads every pair (original, mounted) with scipy.io.netcdf_file(mmap=True) and compares
/// dimensions, attributes and every variable's values; prints how many pairs scipy could read.
const SCIPY_CHECK: &str = r#"
import sys, numpy as np
from scipy.io import netcdf_file
n = 0
args = sys.argv[1:]
for orig, mounted in zip(args[::2], args[1::2]):
    try:
        a = netcdf_file(orig, "r", mmap=True)
    except Exception:
        continue
    b = netcdf_file(mounted, "r", mmap=True)
    assert a.dimensions == b.dimensions, mounted
    assert set(a.variables) == set(b.variables), mounted
    assert repr(a._attributes) == repr(b._attributes), mounted
    for k, va in a.variables.items():
        vb = b.variables[k]
        assert repr(va._attributes) == repr(vb._attributes), (mounted, k)
        x, y = np.asarray(va.data), np.asarray(vb.data)
        assert x.dtype == y.dtype and x.shape == y.shape, (mounted, k)
        assert x.tobytes() == y.tobytes(), (mounted, k)
    va = vb = x = y = None
    a.close(); b.close()
    n += 1
print(n)
"#;

#[test]
fn a_mounted_directory_reads_as_the_originals() {
    if !fuse_or_skip() {
        return;
    }
    let scratch = temp_dir();
    let archives = scratch.path().join("archives");
    std::fs::create_dir_all(&archives).unwrap();
    std::fs::write(archives.join("notes.txt"), b"not an archive\n").unwrap();
    let cases = pack_cases(&archives, scratch.path());
    assert!(cases.len() >= 20, "{} files packed", cases.len());
    eprintln!("{} files mounted", cases.len());
    let mut m = Mount::start(&archives, scratch.path());

    // The listing: the originals' names and sizes, the other file hidden.
    let mut listed: Vec<String> = std::fs::read_dir(&m.mp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    listed.sort();
    assert!(
        !listed
            .iter()
            .any(|n| n.ends_with(".nc3z") || n == "notes.txt"),
        "{listed:?}"
    );
    for c in &cases {
        let md = std::fs::metadata(m.path(&c.name)).unwrap();
        assert_eq!(
            md.len(),
            std::fs::metadata(&c.original).unwrap().len(),
            "{}",
            c.name
        );
    }

    // cmp: every file whole.
    for c in &cases {
        let got = std::fs::read(m.path(&c.name)).unwrap();
        assert!(
            got == std::fs::read(&c.original).unwrap(),
            "{} differs",
            c.name
        );
    }
    random_preads(&m, &cases);

    // Writes: EROFS.
    let erofs = |r: std::io::Result<std::fs::File>| {
        assert_eq!(r.err().and_then(|e| e.raw_os_error()), Some(libc::EROFS));
    };
    let first = m.path(&cases[0].name);
    erofs(std::fs::OpenOptions::new().write(true).open(&first));
    erofs(std::fs::File::create(m.path("new.nc")));
    assert_eq!(
        std::fs::remove_file(&first)
            .err()
            .and_then(|e| e.raw_os_error()),
        Some(libc::EROFS)
    );

    let home = scratch.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    if have_tool("ncdump", "apt-get install netcdf-bin") {
        let n = same_output(&m, &cases, "ncdump", &[], &home);
        eprintln!("ncdump: {n} mounted files as their originals");
        assert!(n >= 20, "ncdump compared {n} files");
    }
    if have_tool("cdo", "apt-get install cdo") {
        // CDO reads what it can (gridded data); the others fail on the original too.
        let samples: Vec<Case> = cases
            .iter()
            .filter(|c| !c.name.starts_with("conformance/"))
            .cloned()
            .collect();
        for args in [
            &["-s", "sinfo"][..],
            &["-s", "infon"],
            // The time mean, printed (`cdo timmean IN OUT` would also write the input's
            // path into the output's history).
            &["-s", "infon", "-timmean"],
        ] {
            let n = same_output(&m, &samples, "cdo", args, &home);
            eprintln!("cdo {args:?}: {n} mounted files as their originals");
            assert!(n >= 2, "cdo {args:?} compared {n} files");
        }
    }
    if have_tool("ncks", "apt-get install nco") {
        // Not the file whose header says its records are streamed (numrecs 2^32 - 1): ncks
        // takes that count as it is and prints 4 billion records, holding them in memory.
        let cases: Vec<Case> = cases
            .iter()
            .filter(|c| !c.name.contains("streaming_numrecs"))
            .cloned()
            .collect();
        let n = same_output(&m, &cases, "ncks", &[], &home);
        eprintln!("ncks: {n} mounted files as their originals");
        assert!(n >= 20, "ncks compared {n} files");
    }
    match python_with_scipy() {
        None => skip("needs scipy (apt-get install python3-scipy)"),
        Some(py) => {
            let mut cmd = Command::new(py);
            cmd.args(["-c", SCIPY_CHECK]);
            for c in &cases {
                cmd.arg(&c.original).arg(m.path(&c.name));
            }
            let out = cmd.output().unwrap();
            assert!(
                out.status.success(),
                "scipy: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let n: usize = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
            eprintln!("scipy.io.netcdf_file(mmap=True): {n} mounted files as their originals");
            assert!(n >= 10, "scipy read {n} files");
        }
    }
    let log = m.stop(Some(libc::SIGTERM));
    assert!(log.contains("read requests"), "{log}");
}

#[test]
fn a_damaged_block_gives_eio_for_its_reads_only() {
    if !fuse_or_skip() {
        return;
    }
    let scratch = temp_dir();
    let archives = scratch.path().join("archives");
    std::fs::create_dir_all(&archives).unwrap();
    let original_path = sample("gridded_sst.nc");
    assert!(pack(&original_path, &archives, "sst.nc"));
    assert!(pack(&original_path, &archives, "intact.nc"));
    // Damage the middle of the payload of one block of sst.
    crate::util::damage_a_block(&archives.join("sst.nc.nc3z"), "sst", |_| 40);

    let mut m = Mount::start(&archives, scratch.path());
    let original = std::fs::read(&original_path).unwrap();
    let f = std::fs::File::open(m.path("sst.nc")).unwrap();
    let chunk = 4096usize;
    let mut bad = Vec::new();
    let mut buf = vec![0u8; chunk];
    // Twice: the second pass reads from the page cache what it can, and asks again for the rest.
    for pass in 0..2 {
        let mut bad_now = Vec::new();
        for (k, want) in original.chunks(chunk).enumerate() {
            match f.read_at(&mut buf[..want.len()], (k * chunk) as u64) {
                Ok(n) => assert!(buf[..n] == *want && n == want.len(), "chunk {k} differs"),
                Err(e) => {
                    assert_eq!(e.raw_os_error(), Some(libc::EIO), "chunk {k}: {e}");
                    bad_now.push(k);
                }
            }
        }
        if pass == 1 {
            assert_eq!(bad_now, bad, "the same chunks fail twice");
        }
        bad = bad_now;
    }
    // One block of 4 KiB decoded: at most two chunks of the original (and the 8 bytes of a
    // record's time between), in one run.
    assert!(!bad.is_empty() && bad.len() <= 3, "failing chunks {bad:?}");
    assert_eq!(bad.last().unwrap() - bad[0] + 1, bad.len(), "{bad:?}");
    // The other file, and cmp of it, unaffected.
    assert!(std::fs::read(m.path("intact.nc")).unwrap() == original);
    drop(f);
    let log = m.stop(None);
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("sst.nc.nc3z")).collect();
    assert_eq!(lines.len(), 1, "one line about the damage:\n{log}");
    assert!(lines[0].contains("block"), "{}", lines[0]);
    assert_eq!(lines[0].matches("sst.nc.nc3z").count(), 1, "{}", lines[0]);
}

#[test]
fn a_replaced_archive_reads_as_the_new_one_and_an_open_file_as_the_old() {
    if !fuse_or_skip() {
        return;
    }
    let scratch = temp_dir();
    let archives = scratch.path().join("archives");
    std::fs::create_dir_all(&archives).unwrap();
    let (a, b) = (sample("obs_points.nc"), sample("classic_records.nc"));
    assert!(pack(&a, &archives, "x.nc"));
    assert!(pack(&b, scratch.path(), "next.nc"));
    let mut m = Mount::start(&archives, scratch.path());
    let old = std::fs::File::open(m.path("x.nc")).unwrap();
    let mut head = vec![0u8; 1000];
    old.read_at(&mut head, 0).unwrap();
    std::fs::rename(
        scratch.path().join("next.nc.nc3z"),
        archives.join("x.nc.nc3z"),
    )
    .unwrap();
    // The kernel keeps names and attributes for 1 s.
    std::thread::sleep(Duration::from_millis(1100));
    assert!(std::fs::read(m.path("x.nc")).unwrap() == std::fs::read(&b).unwrap());
    assert_eq!(
        std::fs::metadata(m.path("x.nc")).unwrap().len(),
        std::fs::metadata(&b).unwrap().len()
    );
    // The file opened before reads the old archive to its end.
    let want = std::fs::read(&a).unwrap();
    let mut all = vec![0u8; want.len() + 10];
    let mut n = 0;
    while n < all.len() {
        match old.read_at(&mut all[n..], n as u64).unwrap() {
            0 => break,
            k => n += k,
        }
    }
    assert!(
        all[..n] == want[..],
        "the open file read {n} bytes, not the old original"
    );
    drop(old);
    // Written over in place (the same inode, its modification time set back, as `rsync
    // --inplace -t` leaves it): a file opened before fails what it had not read, never giving
    // the new archive's bytes as the old one's; a file opened after reads the new one.
    let c = sample("gridded_sst.nc");
    assert!(pack(&c, &archives, "x.nc"));
    std::thread::sleep(Duration::from_millis(1100));
    let want = std::fs::read(&c).unwrap();
    let open = std::fs::File::open(m.path("x.nc")).unwrap();
    // (No readahead: each read below is a request to the mount.)
    // SAFETY: posix_fadvise only reads its arguments; the descriptor is open.
    let r = unsafe {
        libc::posix_fadvise(
            std::os::fd::AsRawFd::as_raw_fd(&open),
            0,
            0,
            libc::POSIX_FADV_RANDOM,
        )
    };
    assert_eq!(r, 0);
    let mut page = vec![0u8; 4096];
    open.read_exact_at(&mut page, 0).unwrap();
    assert!(page == want[..4096]);
    let z = archives.join("x.nc.nc3z");
    let mtime = std::fs::metadata(&z).unwrap().modified().unwrap();
    let over = scratch.path().join("over");
    std::fs::create_dir_all(&over).unwrap();
    assert!(pack(&a, &over, "x.nc"));
    std::fs::write(&z, std::fs::read(over.join("x.nc.nc3z")).unwrap()).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&z)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    // Every page not read before: the old original's bytes (a block held in memory, or one
    // of a single value, which the index holds) or EIO (a block to be read from the file).
    let mut failed = 0;
    for at in (4096..want.len()).step_by(4096) {
        let n = 4096.min(want.len() - at);
        match open.read_exact_at(&mut page[..n], at as u64) {
            Ok(()) => assert!(
                page[..n] == want[at..at + n],
                "bytes at {at} not the old original's"
            ),
            Err(e) => {
                assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
                failed += 1;
            }
        }
    }
    assert!(failed > 0, "no read failed");
    drop(open);
    std::thread::sleep(Duration::from_millis(1100));
    assert!(std::fs::read(m.path("x.nc")).unwrap() == std::fs::read(&a).unwrap());
    let log = m.stop(Some(libc::SIGINT));
    assert!(log.contains("changed on disk since it was opened"), "{log}");
}

/// Symbolic links to a directory above, in the tree or through a directory outside it, are
/// not shown (the tree would be endless: `find` of two such links ran on for good); other
/// links to directories are; an archive named `..nc3z` does not show as `.`.
#[test]
fn links_back_up_the_tree_are_not_shown() {
    if !fuse_or_skip() {
        return;
    }
    let scratch = temp_dir();
    let archives = scratch.path().join("c");
    let out = scratch.path().join("out");
    std::fs::create_dir_all(archives.join("sub")).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    let s = sample("classic_records.nc");
    assert!(pack(&s, &archives, "a.nc"));
    assert!(pack(&s, &archives.join("sub"), "b.nc"));
    assert!(pack(&s, &archives, "."));
    let link = |to: &str, at: &Path| std::os::unix::fs::symlink(to, at).unwrap();
    link(".", &archives.join("loop"));
    link("..", &archives.join("sub/up"));
    link("../out", &archives.join("away"));
    link("../c", &out.join("back"));
    link("sub", &archives.join("sublink"));
    let mut m = Mount::start(&archives, scratch.path());
    let mut found = Vec::new();
    let mut dirs = vec![PathBuf::new()];
    while let Some(d) = dirs.pop() {
        assert!(found.len() < 100, "an endless tree: {found:?}");
        for e in std::fs::read_dir(m.path(d.to_str().unwrap())).unwrap() {
            let e = e.unwrap();
            let name = d.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                dirs.push(name.clone());
            }
            found.push(name.to_str().unwrap().to_owned());
        }
    }
    found.sort();
    assert_eq!(
        found,
        ["a.nc", "away", "sub", "sub/b.nc", "sublink", "sublink/b.nc"]
    );
    assert!(std::fs::metadata(m.path("loop")).is_err());
    assert!(std::fs::metadata(m.path("sub/up")).is_err());
    assert!(std::fs::read(m.path("sublink/b.nc")).unwrap() == std::fs::read(&s).unwrap());
    m.stop(None);
}

/// A mount over its own archives' directory, or a directory above it, would read the
/// archives through itself and hang: it is refused before mounting.
#[test]
fn a_mount_over_its_archives_is_refused() {
    let scratch = temp_dir();
    let archives = scratch.path().join("d/e");
    std::fs::create_dir_all(&archives).unwrap();
    for over in [scratch.path().join("d/e"), scratch.path().join("d")] {
        let out = Command::new(BIN)
            .arg("mount")
            .arg(&archives)
            .arg(&over)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("the mount would hide the archives it reads"),
            "{err}"
        );
    }
}

#[test]
fn listing_and_stat_decode_no_block() {
    if !fuse_or_skip() {
        return;
    }
    let scratch = temp_dir();
    let archives = scratch.path().join("archives");
    std::fs::create_dir_all(archives.join("sub")).unwrap();
    for (i, name) in ["gridded_sst.nc", "obs_points.nc", "classic_records.nc"]
        .iter()
        .enumerate()
    {
        assert!(pack(&sample(name), &archives, &format!("{i}-{name}")));
        assert!(pack(&sample(name), &archives.join("sub"), name));
    }
    let mut m = Mount::start(&archives, scratch.path());
    // What `ls -lR` does: list, then stat every entry. An entry's number in the listing
    // (`d_ino`, what `ls -i` and `find -inum` may use) is its `st_ino`.
    use std::os::unix::fs::{DirEntryExt, MetadataExt};
    let mut files = 0;
    let mut dirs = vec![m.mp.clone()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let path = e.path();
            let md = std::fs::metadata(&path).unwrap();
            assert_eq!(e.ino(), md.ino(), "{}", path.display());
            if md.is_dir() {
                dirs.push(path);
            } else {
                assert!(md.len() > 0);
                files += 1;
            }
        }
    }
    assert_eq!(files, 6);
    let log = m.stop(None);
    assert!(log.contains(" 0 blocks decoded"), "{log}");
    assert!(log.contains("0 read requests"), "{log}");
}

#[test]
fn inodes_the_kernel_forgets_are_let_go() {
    if !fuse_or_skip() {
        return;
    }
    let scratch = temp_dir();
    let archives = scratch.path().join("archives");
    std::fs::create_dir_all(archives.join("sub")).unwrap();
    assert!(pack(&sample("obs_points.nc"), &archives, "a"));
    let z = archives.join("a.nc3z");
    const FILES: usize = 300;
    for i in 0..FILES {
        std::fs::copy(&z, archives.join("sub").join(format!("f{i:03}.nc3z"))).unwrap();
    }
    let mp = scratch.path().join("mnt");
    std::fs::create_dir(&mp).unwrap();
    let m =
        nc3pack::mount::mount(&archives, &mp, &nc3pack::mount::MountOptions::default()).unwrap();
    // In this process: the mount's own count of the inodes it holds.
    let held = || m.stats().inodes;
    assert_eq!(held(), 1, "the root only");
    // `ls -l sub`: a listing, and a lookup of every name in it.
    let mut seen = 0;
    for e in std::fs::read_dir(mp.join("sub")).unwrap() {
        let md = e.unwrap().metadata().unwrap();
        assert_eq!(
            md.len(),
            std::fs::metadata(sample("obs_points.nc")).unwrap().len()
        );
        seen += 1;
    }
    assert_eq!(seen, FILES);
    // The listing is closed; the kernel holds what it looked up: the files and `sub`.
    assert!(held() > FILES as u64, "{} inodes held", held());
    // The kernel lets its cached names and inodes go, and forgets them (FUSE_FORGET).
    if let Err(e) = std::fs::write("/proc/sys/vm/drop_caches", "2") {
        drop(m);
        return skip(&format!(
            "cannot write /proc/sys/vm/drop_caches ({e}): run as root"
        ));
    }
    let t0 = Instant::now();
    while held() > 2 && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        held() <= 2,
        "{} inodes held after the kernel forgot them",
        held()
    );
    // A name looked up again reads as before.
    let back = std::fs::read(mp.join("sub/f007")).unwrap();
    assert!(back == std::fs::read(sample("obs_points.nc")).unwrap());
    m.unmount().unwrap();
}

/// A CDF-2 file of `n` floats in one variable `big`, written sparse (every value 0) but for
/// `regions` of pseudo-random values: (its path, the offset of the variable's data).
fn sparse_big_file(path: &Path, n: u64, regions: &[(u64, u64)], rng: &mut Rng) -> u64 {
    let mut h: Vec<u8> = Vec::new();
    let be32 = |h: &mut Vec<u8>, v: u32| h.extend_from_slice(&v.to_be_bytes());
    let name = |h: &mut Vec<u8>, s: &str| {
        h.extend_from_slice(&(s.len() as u32).to_be_bytes());
        h.extend_from_slice(s.as_bytes());
        h.resize(h.len().next_multiple_of(4), 0);
    };
    h.extend_from_slice(b"CDF\x02");
    be32(&mut h, 0); // numrecs
    be32(&mut h, 0x0A); // NC_DIMENSION
    be32(&mut h, 1);
    name(&mut h, "n");
    be32(&mut h, u32::try_from(n).unwrap());
    h.extend_from_slice(&[0; 8]); // no global attributes
    be32(&mut h, 0x0B); // NC_VARIABLE
    be32(&mut h, 1);
    name(&mut h, "big");
    be32(&mut h, 1); // one dimension: n
    be32(&mut h, 0);
    h.extend_from_slice(&[0; 8]); // no attributes
    be32(&mut h, 5); // NC_FLOAT
    be32(&mut h, u32::try_from(n * 4).unwrap()); // vsize
    let begin = h.len() as u64 + 8;
    h.extend_from_slice(&begin.to_be_bytes());
    let f = std::fs::File::create(path).unwrap();
    f.write_all_at(&h, 0).unwrap();
    f.set_len(begin + n * 4).unwrap();
    for &(at, len) in regions {
        // A smooth field with noise: neither constant nor incompressible.
        let bytes: Vec<u8> = (0..len / 4)
            .flat_map(|i| {
                let v = 280.0
                    + 10.0 * ((at / 4 + i) as f32 * 1e-3).sin()
                    + (rng.below(1000) as f32) * 1e-3;
                v.to_be_bytes()
            })
            .collect();
        f.write_all_at(&bytes, begin + at).unwrap();
    }
    begin
}

#[test]
fn four_kib_deep_in_a_1_gib_original_decode_only_the_blocks_that_cover_them() {
    if !fuse_or_skip() {
        return;
    }
    let scratch = temp_dir();
    let archives = scratch.path().join("archives");
    std::fs::create_dir_all(&archives).unwrap();
    let original = scratch.path().join("big.nc");
    let mut rng = Rng(52);
    // 2^28 floats: a 1 GiB variable, all zero but 32 regions of 192 KiB of data 32 MiB apart.
    let n: u64 = 1 << 28;
    let regions: Vec<(u64, u64)> = (0..32u64)
        .map(|i| (i * (32 << 20) + rng.below(16 << 20) / 4 * 4, 192 << 10))
        .collect();
    let begin = sparse_big_file(&original, n, &regions, &mut rng);
    // The netcdf3 crate reads it as one variable of 2^28 floats.
    let ds = netcdf3::FileReader::open(&original).unwrap();
    assert_eq!(
        ds.data_set().get_var("big").map(|v| v.len()),
        Some(n as usize)
    );
    drop(ds);
    let opts = nc3pack::PackOptions::default()
        .with_threads(2)
        .with_force(true);
    nc3pack::pack_file(&original, &archives.join("big.nc.nc3z"), &opts).unwrap();
    let a = nc3pack::Archive::open(archives.join("big.nc.nc3z")).unwrap();
    let bb = a.block_bytes(0);
    let data_blocks = a
        .blocks()
        .filter(|&(s, b)| s == 0 && !a.entry(0, b).is_constant())
        .count();
    assert!(data_blocks >= 32, "{data_blocks} blocks with data");

    // 64 reads of 4 KiB, each alone in its 16 MiB of the file (none continues another, so
    // none is taken for a scan): one inside each region of data, one in the zeros after it.
    let mut reads: Vec<u64> = regions
        .iter()
        .flat_map(|&(at, len)| {
            let inside = at + rng.below(len - 4096);
            let zeros = at + len + (4 << 20) + rng.below(8 << 20);
            [begin + inside, begin + zeros]
        })
        .collect();
    for i in (1..reads.len()).rev() {
        reads.swap(i, rng.below(i as u64 + 1) as usize);
    }
    // The blocks with data that the pages of those reads cover: what may be decoded.
    let mut covering = std::collections::BTreeSet::new();
    for &off in &reads {
        let (p0, p1) = (off / 4096 * 4096, (off + 4096).div_ceil(4096) * 4096);
        for b in (p0.max(begin) - begin) / bb..=(p1 - 1 - begin) / bb {
            if !a.entry(0, b).is_constant() {
                covering.insert(b);
            }
        }
    }
    drop(a);

    let mut m = Mount::start(&archives, scratch.path());
    let mounted = std::fs::File::open(m.path("big.nc")).unwrap();
    assert_eq!(mounted.metadata().unwrap().len(), begin + n * 4);
    // No readahead: the kernel asks for the pages read, no more.
    // SAFETY: posix_fadvise on an open descriptor, with no pointers.
    let r = unsafe {
        libc::posix_fadvise(
            std::os::fd::AsRawFd::as_raw_fd(&mounted),
            0,
            0,
            libc::POSIX_FADV_RANDOM,
        )
    };
    assert_eq!(r, 0);
    let pid = m.child.as_ref().unwrap().id();
    let field = |text: &str, key: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
            .unwrap_or_else(|| panic!("no {key} in {text}"))
    };
    // Bytes the mount has had written to storage (its log's first line, so far).
    let written = || {
        let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap();
        field(&io, "write_bytes:")
    };
    let written_before = written();
    let orig = std::fs::File::open(&original).unwrap();
    let (mut got, mut want) = (vec![0u8; 4096], vec![0u8; 4096]);
    for &off in &reads {
        mounted.read_exact_at(&mut got, off).unwrap();
        orig.read_exact_at(&mut want, off).unwrap();
        assert!(got == want, "4 KiB at {off}");
    }
    // Nothing written to disk by the reads, and nothing like the original held in memory.
    assert_eq!(
        written(),
        written_before,
        "bytes written to storage by the mount"
    );
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let peak_kib = field(&status, "VmHWM:");
    assert!(
        peak_kib < 256 << 10,
        "the mount's peak memory: {peak_kib} KiB"
    );
    drop(mounted);
    let log = m.stop(Some(libc::SIGTERM));
    let decoded = blocks_decoded(&log);
    eprintln!(
        "64 reads of 4 KiB: {decoded} blocks decoded; {} blocks with data cover them, \
         {data_blocks} of {} blocks have data; peak memory {peak_kib} KiB",
        covering.len(),
        (n * 4).div_ceil(bb)
    );
    assert!(
        decoded >= 1 && decoded <= covering.len() as u64,
        "{decoded} blocks decoded for reads that {} blocks with data cover",
        covering.len()
    );
}

#[test]
fn a_sequential_read_of_a_mounted_file_decodes_each_block_once() {
    if !fuse_or_skip() {
        return;
    }
    let scratch = temp_dir();
    let archives = scratch.path().join("archives");
    std::fs::create_dir_all(&archives).unwrap();
    // Records of two variables interleaved, in blocks of 16 KiB: a read of 1 MiB (the mount's
    // requests, several in flight) needs many blocks of each.
    let name = "gridded_sst.nc";
    let z = archives.join(format!("{name}.nc3z"));
    let opts = crate::util::preset_options(false, Some(16 << 10), 2).with_force(true);
    nc3pack::pack_file(&sample(name), &z, &opts).unwrap();
    let a = nc3pack::Archive::open(&z).unwrap();
    let need = a
        .blocks()
        .filter(|&(s, b)| !a.entry(s, b).is_constant() && !a.entry(s, b).is_lost())
        .count() as u64;
    drop(a);
    assert!(need > 300, "{need} blocks");
    // A cache of 1 MiB for the archive (the mount gives each an eighth): blocks are let go
    // as the read goes, and must not be while a request still in flight needs them.
    let mut m = Mount::start_with(&archives, scratch.path(), &["--cache", "8MiB"]);
    let got = std::fs::read(m.path(name)).unwrap();
    assert!(got == std::fs::read(sample(name)).unwrap());
    let log = m.stop(Some(libc::SIGTERM));
    let decoded = blocks_decoded(&log);
    eprintln!("{decoded} blocks decoded for {need}");
    assert!(
        decoded >= need && decoded as f64 <= need as f64 * 1.1,
        "{decoded} blocks decoded for {need}"
    );
}

/// The count of blocks decoded in the line `nc3pack mount --stats` writes when it ends.
fn blocks_decoded(log: &str) -> u64 {
    log.lines()
        .flat_map(|l| l.split(", "))
        .find_map(|p| p.strip_suffix(" blocks decoded"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no count of blocks decoded in {log}"))
}
