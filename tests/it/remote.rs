//! Archives in object storage, against real servers on 127.0.0.1: `s3s-fs` (an S3
//! implementation over a directory that checks request signatures; `cargo install s3s-fs
//! --version 0.14.1 --features binary`) and a small HTTP server written here that honours
//! `Range`. Every read command on a URL must print what it prints for the local file, errors
//! must name the URL and the cause, and reads must cost the requests docs/object-storage.md states.
//!
//! Without `s3s-fs` the S3 tests are skipped and say so (`util::skip`: scripts/test.sh counts
//! and names them), except under CI (env `CI` set), where they fail.

use nc3pack::remote::{Prefix, RemoteOptions, RemoteReader};
use nc3pack::{Archive, Dataset, Input};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_nc3pack");
const KEY: &str = "nc3packtestkey";
const SECRET: &str = "nc3packtestsecret";
const BUCKET: &str = "bkt";

fn sample(name: &str) -> PathBuf {
    crate::util::root().join("samples").join(name)
}

/// A free port on 127.0.0.1 (bound, then released for the server to take).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The `s3s-fs` binary: on PATH or in cargo's bin directory.
fn s3s_fs() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Some(home) = std::env::var_os("CARGO_HOME") {
        dirs.push(PathBuf::from(home).join("bin"));
    }
    if let Some(home) = std::env::var_os("HOME") {
        dirs.push(PathBuf::from(home).join(".cargo/bin"));
    }
    dirs.into_iter()
        .map(|d| d.join("s3s-fs"))
        .find(|p| p.is_file())
}

/// A running `s3s-fs` over a temporary directory with one bucket; killed when dropped.
struct S3Server {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
    /// The credentials it checks signatures with.
    key: &'static str,
    secret: &'static str,
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl S3Server {
    /// Starts the server, or returns None (after saying so) when `s3s-fs` is not installed;
    /// under CI a missing server is a failure.
    fn start() -> Option<S3Server> {
        S3Server::start_with(true)
    }

    /// Starts the server; without `auth`, it answers anonymous (unsigned) requests, as a
    /// public bucket does.
    fn start_with(auth: bool) -> Option<S3Server> {
        S3Server::start_as(auth, KEY, SECRET)
    }

    /// Starts the server, checking signatures made with `key` and `secret` (when `auth`).
    fn start_as(auth: bool, key: &'static str, secret: &'static str) -> Option<S3Server> {
        let Some(bin) = s3s_fs() else {
            assert!(
                std::env::var_os("CI").is_none(),
                "s3s-fs is not installed (cargo install s3s-fs --version 0.14.1 --features \
                 binary --locked): the object storage tests cannot run"
            );
            crate::util::skip(
                "needs s3s-fs (cargo install s3s-fs --version 0.14.1 --features binary --locked)",
            );
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(BUCKET)).unwrap();
        // One start at a time: two tests probing at once could be given the same free port,
        // and the second would then talk to the first one's server.
        static STARTING: Mutex<()> = Mutex::new(());
        let _one = STARTING.lock().unwrap_or_else(|p| p.into_inner());
        // A port taken between the probe and the server's bind: try another, a few times.
        for _ in 0..5 {
            let port = free_port();
            let mut c = Command::new(&bin);
            c.args(["--host", "127.0.0.1", "--port", &port.to_string()]);
            if auth {
                c.args(["--access-key", key, "--secret-key", secret]);
            }
            let mut child = c
                .arg(dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("cannot start s3s-fs");
            // Up to 10 s for it to listen.
            for _ in 0..200 {
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return Some(S3Server {
                        child,
                        port,
                        dir,
                        key,
                        secret,
                    });
                }
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("s3s-fs did not start listening on 127.0.0.1");
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Puts a file into the bucket (the server stores objects as files).
    fn put(&self, key: &str, bytes: &[u8]) -> String {
        std::fs::write(self.dir.path().join(BUCKET).join(key), bytes).unwrap();
        format!("s3://{BUCKET}/{key}")
    }

    fn options(&self) -> RemoteOptions {
        RemoteOptions::default()
            .with_endpoint(self.endpoint())
            .with_allow_http(true)
            .with_region("us-east-1")
            .with_credentials(self.key, self.secret, None)
    }

    /// The command line with this server's endpoint and credentials in its environment.
    fn cmd(&self, secret: &str) -> Command {
        let mut c = Command::new(BIN);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("AWS_") || k == "NC3PACK_ANON" {
                c.env_remove(k);
            }
        }
        c.env("AWS_ACCESS_KEY_ID", KEY)
            .env("AWS_SECRET_ACCESS_KEY", secret)
            .env("AWS_ENDPOINT_URL", self.endpoint())
            .env("AWS_ALLOW_HTTP", "true")
            .env("AWS_REGION", "us-east-1");
        // The signals the tests send at their default disposition: a parent may ignore SIGINT
        // (a shell's background job does), which the child would inherit.
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut c, || {
                for s in [libc::SIGINT, libc::SIGTERM] {
                    libc::signal(s, libc::SIG_DFL);
                }
                Ok(())
            });
        }
        c
    }
}

/// Runs a command; returns (exit code, stdout bytes, stderr).
fn output(c: &mut Command) -> (i32, Vec<u8>, String) {
    let out = c.output().expect("cannot start nc3pack");
    (
        out.status.code().expect("nc3pack was killed by a signal"),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Packs a sample into `dir` with the given block size; returns the archive's path.
fn pack(name: &str, dir: &Path, block: &str) -> PathBuf {
    let z = dir.join(name.replace(".nc", ".nc3z"));
    let (code, _, err) = output(
        Command::new(BIN)
            .arg("pack")
            .arg(sample(name))
            .arg(&z)
            .args(["--block-size", block, "-q", "--force"]),
    );
    assert_eq!(code, 0, "{err}");
    z
}

/// Asserts `stderr` is one error line naming `url` and containing `cause`.
fn assert_error(code: i32, stderr: &str, url: &str, cause: &str) {
    assert_eq!(code, 1, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "not one line: {stderr:?}");
    assert!(
        stderr.starts_with(&format!("nc3pack: {url}: ")),
        "does not name {url}: {stderr:?}"
    );
    assert!(stderr.contains(cause), "no {cause:?} in {stderr:?}");
}

/// A variable and the `slice` options to read it with.
type Slice<'a> = (&'a str, &'a [&'a str]);

/// Every read command on `url` prints what it prints for the local archive `local`, and
/// unpacking restores `original` byte for byte. `cmd` makes a command with the right
/// environment.
fn check_commands_match(
    cmd: &dyn Fn() -> Command,
    url: &str,
    local: &Path,
    original: &Path,
    slices: &[Slice],
) {
    let lp = local.to_str().unwrap();
    for args in [vec!["info", "--json"], vec!["info"]] {
        let (c1, remote, e1) = output(cmd().args(&args).arg(url));
        let (c2, here, e2) = output(cmd().args(&args).arg(lp));
        assert_eq!((c1, c2), (0, 0), "{args:?}: {e1} {e2}");
        assert_eq!(
            String::from_utf8_lossy(&remote),
            String::from_utf8_lossy(&here),
            "{args:?} {url}"
        );
    }
    for (var, extra) in slices {
        for format in ["text", "raw"] {
            let (c1, remote, e1) = output(
                cmd()
                    .args(["slice", url, var, "--format", format])
                    .args(*extra),
            );
            let (c2, here, e2) = output(
                cmd()
                    .args(["slice", lp, var, "--format", format])
                    .args(*extra),
            );
            assert_eq!((c1, c2), (0, 0), "slice {var} {extra:?}: {e1} {e2}");
            assert!(remote == here, "slice {var} {extra:?} {format} differs");
        }
    }
    let (c1, v1, e1) = output(cmd().args(["verify", url]));
    let (c2, v2, e2) = output(cmd().args(["verify", lp]));
    assert_eq!((c1, c2), (0, 0), "verify: {e1} {e2}");
    assert_eq!(
        String::from_utf8_lossy(&v1).replace(url, "X"),
        String::from_utf8_lossy(&v2).replace(lp, "X")
    );
    let out = tempfile::tempdir().unwrap();
    let back = out.path().join("back.nc");
    let (c, _, e) = output(cmd().args(["unpack", "-q", url]).arg(&back));
    assert_eq!(c, 0, "unpack: {e}");
    assert!(
        std::fs::read(&back).unwrap() == std::fs::read(original).unwrap(),
        "unpack of {url} is not the original"
    );
    let (c, bytes, e) = output(cmd().args(["unpack", "-q", url, "-"]));
    assert_eq!(c, 0, "unpack to stdout: {e}");
    assert!(bytes == std::fs::read(original).unwrap());
}

#[test]
fn s3_every_read_command_equals_the_local_file() {
    let Some(s3) = S3Server::start() else { return };
    let work = tempfile::tempdir().unwrap();
    let cases: [(&str, &str, &[Slice]); 3] = [
        (
            "gridded_sst.nc",
            "64KiB",
            &[
                ("sst", &["--start", "3,10,10", "--count", "5,20,30"]),
                ("sst", &[]),
                ("lat", &[]),
            ],
        ),
        ("obs_points.nc", "1MiB", &[]),
        ("classic_records.nc", "4KiB", &[]),
    ];
    for (name, block, slices) in cases {
        let z = pack(name, work.path(), block);
        let url = s3.put(&name.replace(".nc", ".nc3z"), &std::fs::read(&z).unwrap());
        // Every variable of the smaller samples, whole.
        let names: Vec<String> = if slices.is_empty() {
            let ds = nc3pack::open(&z).unwrap();
            ds.header().vars().map(|v| v.name().to_string()).collect()
        } else {
            vec![]
        };
        let mut all: Vec<Slice> = slices.to_vec();
        all.extend(names.iter().map(|n| (n.as_str(), &[][..])));
        check_commands_match(&|| s3.cmd(SECRET), &url, &z, &sample(name), &all);
    }
    // A netCDF-3 file in the bucket reads too (info, slice).
    let url = s3.put(
        "plain.nc",
        &std::fs::read(sample("gridded_sst.nc")).unwrap(),
    );
    let (c1, a, _) = output(s3.cmd(SECRET).args(["info", "--json", &url]));
    let (c2, b, _) = output(
        s3.cmd(SECRET)
            .args(["info", "--json"])
            .arg(sample("gridded_sst.nc")),
    );
    assert_eq!((c1, c2), (0, 0));
    assert!(a == b);
}

#[test]
fn s3_wrong_or_missing_credentials_are_refused_never_anonymous() {
    let Some(s3) = S3Server::start() else { return };
    let work = tempfile::tempdir().unwrap();
    let z = pack("scalars.nc", work.path(), "1MiB");
    let url = s3.put("s.nc3z", &std::fs::read(&z).unwrap());
    let out = work.path().join("never.nc");
    for cmd in [
        &["info"][..],
        &["verify"],
        &["slice", "sb"],
        &["unpack", "-"],
    ] {
        let (code, bytes, err) = output(
            s3.cmd("not-the-secret")
                .arg(cmd[0])
                .arg(&url)
                .args(&cmd[1..]),
        );
        assert_error(code, &err, &url, "access denied (SignatureDoesNotMatch)");
        assert!(bytes.is_empty(), "{cmd:?} printed {} bytes", bytes.len());
    }
    let (code, _, err) = output(s3.cmd("not-the-secret").args(["unpack", &url]).arg(&out));
    assert_error(code, &err, &url, "access denied (SignatureDoesNotMatch)");
    assert!(!out.exists());
    // No credentials at all: refused before any request, not sent unsigned.
    let (code, _, err) = output(
        s3.cmd(SECRET)
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .args(["info", &url]),
    );
    assert_error(code, &err, &url, "no credentials");
    // Anonymous when asked: this server wants signatures, so it refuses.
    let (code, _, err) = output(s3.cmd(SECRET).args(["--anon", "info", &url]));
    assert_error(code, &err, &url, "access denied");
    let (code, _, err) = output(s3.cmd(SECRET).env("NC3PACK_ANON", "1").args(["info", &url]));
    assert_error(code, &err, &url, "access denied");
    // The library: the same refusal, typed, with the URL.
    let e = RemoteReader::open(
        &url,
        &s3.options().with_credentials(KEY, "not-the-secret", None),
    )
    .unwrap_err();
    match e {
        nc3pack::Error::Remote {
            url: u,
            source: nc3pack::error::RemoteError::AccessDenied { code },
        } => assert_eq!(
            (u.as_str(), code.as_str()),
            (url.as_str(), "SignatureDoesNotMatch")
        ),
        e => panic!("not access denied: {e}"),
    }
}

#[test]
fn s3_missing_objects_and_non_archives_are_named_errors() {
    let Some(s3) = S3Server::start() else { return };
    let missing = format!("s3://{BUCKET}/no/such.nc3z");
    for cmd in [&["info"][..], &["verify"], &["slice"], &["unpack"]] {
        let mut c = s3.cmd(SECRET);
        c.args(cmd).arg(&missing);
        if cmd[0] == "slice" {
            c.arg("x");
        }
        if cmd[0] == "unpack" {
            c.arg(tempfile::tempdir().unwrap().path().join("o.nc"));
        }
        let (code, _, err) = output(&mut c);
        assert_error(code, &err, &missing, "no such object");
    }
    let no_bucket = "s3://nobucket/x.nc3z";
    let (code, _, err) = output(s3.cmd(SECRET).args(["info", no_bucket]));
    assert_error(code, &err, no_bucket, "no such object");
    // Text, random bytes larger than the front read, and an empty object.
    let random = crate::util::noise_bytes(300_000, 0x2545_f491_4f6c_dd1d);
    for (key, bytes) in [
        ("text.txt", b"not an archive\n".to_vec()),
        ("random.bin", random),
        ("empty", vec![]),
    ] {
        let url = s3.put(key, &bytes);
        let out = tempfile::tempdir().unwrap();
        let (code, _, err) = output(
            s3.cmd(SECRET)
                .args(["unpack", &url])
                .arg(out.path().join("o.nc")),
        );
        assert_error(code, &err, &url, "archive");
        assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
        let (code, _, err) = output(s3.cmd(SECRET).args(["info", &url]));
        assert_error(code, &err, &url, "not a netCDF-3 file");
    }
    // A malformed URL.
    let (code, _, err) = output(s3.cmd(SECRET).args(["info", "s3://bucket-only"]));
    assert_error(code, &err, "s3://bucket-only", "s3://BUCKET/KEY");
}

/// An archive of gridded_sst in 64 KiB blocks (its `sst` spans about 95 blocks).
fn many_blocks(dir: &Path) -> PathBuf {
    pack("gridded_sst.nc", dir, "64KiB")
}

/// Checks the request costs on an opened source whose counter is `count`: opening, one value
/// cold, and a hyperslab over adjacent blocks.
fn check_costs(open: &dyn Fn() -> (Archive, Box<dyn Fn() -> u64>), local: &Path) {
    let here = Archive::open(local).unwrap();
    let sst = here.header().var_id("sst").unwrap();
    assert!(here.block_count(sst) > 20, "{}", here.block_count(sst));
    for threads in [1, 4] {
        // Open: the front and the tail.
        let (mut a, count) = open();
        a.set_threads(threads);
        assert_eq!(count(), 2, "open");
        // One value, cold: one more.
        let one = a
            .slab("sst", Some(&[7, 90, 180]), Some(&[1, 1, 1]), None)
            .unwrap();
        let v: Vec<f32> = a.read("sst", &one).unwrap();
        assert_eq!(v, here.read::<f32>("sst", &one).unwrap());
        assert_eq!(count(), 3, "one value cold ({threads} threads)");
        // Five whole time steps: about 24 adjacent blocks, one request.
        let slab = a
            .slab("sst", Some(&[10, 0, 0]), Some(&[5, 180, 360]), None)
            .unwrap();
        let v: Vec<f32> = a.read("sst", &slab).unwrap();
        assert!(v == here.read::<f32>("sst", &slab).unwrap());
        assert_eq!(
            count(),
            4,
            "a hyperslab over adjacent blocks ({threads} threads)"
        );
        // A strided slab (one value per time step: 24 blocks, not adjacent but less than
        // 1 MiB apart, some cached by the read above): one request.
        let slab = a
            .slab("sst", Some(&[0, 45, 45]), Some(&[24, 1, 1]), None)
            .unwrap();
        let before = count();
        let v: Vec<f32> = a.read("sst", &slab).unwrap();
        assert!(v == here.read::<f32>("sst", &slab).unwrap());
        assert_eq!(count() - before, 1, "strided ({threads} threads)");
    }
}

#[test]
fn s3_reads_cost_the_stated_requests() {
    let Some(s3) = S3Server::start() else { return };
    let work = tempfile::tempdir().unwrap();
    let z = many_blocks(work.path());
    let url = s3.put("sst.nc3z", &std::fs::read(&z).unwrap());
    let open = || {
        let r = RemoteReader::open(&url, &s3.options()).unwrap();
        let stats = r.stats();
        let a = Archive::from_reader(Input::Remote(r), url.as_ref()).unwrap();
        (
            a,
            Box::new(move || stats.requests()) as Box<dyn Fn() -> u64>,
        )
    };
    check_costs(&open, &z);
    // Archive::open_url does the same.
    let a = Archive::open_url(&url, &s3.options()).unwrap();
    assert_eq!(a.len(), std::fs::metadata(&z).unwrap().len());
    // So does an object opened through its prefix (as a batch rerun opens an object it has no
    // record of, to see whether it holds a quantized file): no more than the front and the
    // tail, not the whole object.
    let prefix = Prefix::new(&format!("s3://{BUCKET}/"), &s3.options()).unwrap();
    let open = || {
        let r = prefix.reader("sst.nc3z").unwrap();
        let stats = r.stats();
        let a = Archive::from_reader(Input::Remote(r), url.as_ref()).unwrap();
        (
            a,
            Box::new(move || stats.requests()) as Box<dyn Fn() -> u64>,
        )
    };
    check_costs(&open, &z);
    let r = prefix.reader("sst.nc3z").unwrap();
    let stats = r.stats();
    let a = Archive::from_reader(r, url.as_ref()).unwrap();
    assert!(a.header().var_id("sst").is_some());
    let len = std::fs::metadata(&z).unwrap().len();
    assert!(stats.bytes() * 4 < len, "{} of {len} bytes", stats.bytes());
    let err = prefix.reader("missing.nc3z").unwrap_err().to_string();
    assert!(
        err.contains(&format!("s3://{BUCKET}/missing.nc3z")),
        "{err}"
    );
}

/// A small HTTP/1.1 server for tests: GET and HEAD of the files it holds, honouring single
/// `Range` headers (`a-b`, `a-`, `-n`) with 206, and, unless `no_etags` is called, sending an
/// ETag (a hash of the content) and answering a GET whose `If-Match` does not name it with 412;
/// counts the requests it answers.
struct HttpServer {
    port: u16,
    requests: Arc<AtomicU64>,
    versions: Arc<Versions>,
    /// How many of the next requests get a 503 (a transient failure) instead of an answer.
    fail_next: Arc<AtomicU64>,
    /// Bytes of a body sent before the rest is held back (until this is set to `u64::MAX`,
    /// or for at most 60 s): a slow link, on which a body arrives over time.
    hold_after: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn parse_range(h: &str, len: u64) -> Option<(u64, u64)> {
    let spec = h.trim().strip_prefix("bytes=")?;
    let (a, b) = spec.split_once('-')?;
    let (start, end) = if a.is_empty() {
        let n: u64 = b.parse().ok()?;
        (len.saturating_sub(n), len)
    } else {
        let a: u64 = a.parse().ok()?;
        let end = if b.is_empty() {
            len
        } else {
            (b.parse::<u64>().ok()? + 1).min(len)
        };
        (a, end)
    };
    (start < end).then_some((start, end))
}

/// The files of an [`HttpServer`], which a test may replace while it runs.
struct Versions {
    files: Mutex<HashMap<String, Vec<u8>>>,
    /// Whether answers carry an ETag (and `If-Match` is honoured).
    etags: AtomicBool,
    /// A replacement made just before the request of this number is answered: (number, name,
    /// new content).
    swap: Mutex<Option<(u64, String, Vec<u8>)>>,
}

/// The ETag of `body`: a hash of its bytes, quoted.
fn etag_of(body: &[u8]) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    body.hash(&mut h);
    format!("\"{:016x}\"", h.finish())
}

fn serve(
    mut s: TcpStream,
    versions: &Versions,
    requests: &AtomicU64,
    fail_next: &AtomicU64,
    hold_after: &AtomicU64,
) {
    s.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let mut r = BufReader::new(s.try_clone().unwrap());
    // Keep-alive: up to 1000 requests on one connection.
    for _ in 0..1000 {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let (mut range, mut if_match) = (None, None);
        for _ in 0..100 {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                if k.eq_ignore_ascii_case("range") {
                    range = Some(v.trim().to_string());
                }
                if k.eq_ignore_ascii_case("if-match") {
                    if_match = Some(v.trim().to_string());
                }
            }
        }
        let number = requests.fetch_add(1, Ordering::SeqCst) + 1;
        let mut parts = line.split_whitespace();
        let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let head = method == "HEAD";
        let fail = fail_next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        let body = {
            let mut files = versions.files.lock().unwrap();
            let mut swap = versions.swap.lock().unwrap();
            if swap.as_ref().is_some_and(|(at, _, _)| number >= *at) {
                let (_, name, bytes) = swap.take().unwrap();
                files.insert(name, bytes);
            }
            files.get(path.trim_start_matches('/')).cloned()
        };
        let etags = versions.etags.load(Ordering::SeqCst);
        let etag = match (&body, etags) {
            (Some(b), true) => format!("ETag: {}\r\n", etag_of(b)),
            _ => String::new(),
        };
        let stale = etags && if_match.is_some() && body.as_deref().map(etag_of) != if_match;
        let reply = match body.as_ref() {
            _ if fail => "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n"
                .as_bytes()
                .to_vec(),
            None => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
                .as_bytes()
                .to_vec(),
            Some(_) if stale => "HTTP/1.1 412 Precondition Failed\r\nContent-Length: 0\r\n\r\n"
                .as_bytes()
                .to_vec(),
            Some(body) => {
                let len = body.len() as u64;
                match range.as_deref().map(|h| parse_range(h, len)) {
                    Some(None) => format!(
                        "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */{len}\r\n\
                         Content-Length: 0\r\n\r\n"
                    )
                    .into_bytes(),
                    Some(Some((a, b))) if !head && b - a > hold_after.load(Ordering::SeqCst) => {
                        let held = hold_after.load(Ordering::SeqCst);
                        let top = format!(
                            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {a}-{}/{len}\r\n\
                             {etag}Content-Length: {}\r\n\r\n",
                            b - 1,
                            b - a
                        );
                        let cut = (a + held) as usize;
                        if s.write_all(top.as_bytes()).is_err()
                            || s.write_all(&body[a as usize..cut]).is_err()
                            || s.flush().is_err()
                        {
                            return;
                        }
                        // Up to 60 s.
                        for _ in 0..6000 {
                            if hold_after.load(Ordering::SeqCst) == u64::MAX {
                                break;
                            }
                            std::thread::sleep(Duration::from_millis(10));
                        }
                        body[cut..b as usize].to_vec()
                    }
                    Some(Some((a, b))) => {
                        let mut v = format!(
                            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {a}-{}/{len}\r\n\
                             {etag}Content-Length: {}\r\n\r\n",
                            b - 1,
                            b - a
                        )
                        .into_bytes();
                        if !head {
                            v.extend_from_slice(&body[a as usize..b as usize]);
                        }
                        v
                    }
                    None => {
                        let mut v =
                            format!("HTTP/1.1 200 OK\r\n{etag}Content-Length: {len}\r\n\r\n")
                                .into_bytes();
                        if !head {
                            v.extend_from_slice(body);
                        }
                        v
                    }
                }
            }
        };
        if s.write_all(&reply).is_err() {
            return;
        }
    }
}

impl HttpServer {
    fn start(files: HashMap<String, Vec<u8>>) -> HttpServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(AtomicU64::new(0));
        let fail_next = Arc::new(AtomicU64::new(0));
        let hold_after = Arc::new(AtomicU64::new(u64::MAX));
        let stop = Arc::new(AtomicBool::new(false));
        let versions = Arc::new(Versions {
            files: Mutex::new(files),
            etags: AtomicBool::new(true),
            swap: Mutex::new(None),
        });
        let (rq, st, fl, ho) = (
            Arc::clone(&requests),
            Arc::clone(&stop),
            Arc::clone(&fail_next),
            Arc::clone(&hold_after),
        );
        let files = Arc::clone(&versions);
        let thread = std::thread::spawn(move || {
            let conns = Mutex::new(Vec::new());
            for s in listener.incoming() {
                if st.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(s) = s else { continue };
                let (files, rq, fl, ho) = (
                    Arc::clone(&files),
                    Arc::clone(&rq),
                    Arc::clone(&fl),
                    Arc::clone(&ho),
                );
                conns
                    .lock()
                    .unwrap()
                    .push(std::thread::spawn(move || serve(s, &files, &rq, &fl, &ho)));
            }
        });
        HttpServer {
            port,
            requests,
            versions,
            fail_next,
            hold_after,
            stop,
            thread: Some(thread),
        }
    }

    fn url(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/{name}", self.port)
    }

    /// Replaces the file `name` now.
    fn replace(&self, name: &str, bytes: Vec<u8>) {
        self.versions
            .files
            .lock()
            .unwrap()
            .insert(name.to_string(), bytes);
    }

    /// Replaces the file `name` just before the `n`th request from now is answered.
    fn replace_at_request(&self, n: u64, name: &str, bytes: Vec<u8>) {
        let at = self.requests.load(Ordering::SeqCst) + n;
        *self.versions.swap.lock().unwrap() = Some((at, name.to_string(), bytes));
    }

    /// Answers without ETags from now on (and ignores `If-Match`), as some servers do.
    fn no_etags(&self) {
        self.versions.etags.store(false, Ordering::SeqCst);
    }
}

#[test]
fn http_reads_equal_the_local_file_and_cost_the_stated_requests() {
    let work = tempfile::tempdir().unwrap();
    let z = many_blocks(work.path());
    let small = pack("obs_points.nc", work.path(), "1MiB");
    let files = HashMap::from([
        ("gridded_sst.nc3z".to_string(), std::fs::read(&z).unwrap()),
        (
            "obs_points.nc3z".to_string(),
            std::fs::read(&small).unwrap(),
        ),
        ("text.txt".to_string(), b"hello".to_vec()),
        ("empty".to_string(), Vec::new()),
    ]);
    let server = HttpServer::start(files);
    let cmd = || {
        let mut c = Command::new(BIN);
        c.env_remove("NC3PACK_ANON");
        c
    };
    let slices: &[Slice] = &[("sst", &["--start", "3,10,10", "--count", "5,20,30"])];
    check_commands_match(
        &cmd,
        &server.url("gridded_sst.nc3z"),
        &z,
        &sample("gridded_sst.nc"),
        slices,
    );
    check_commands_match(
        &cmd,
        &server.url("obs_points.nc3z"),
        &small,
        &sample("obs_points.nc"),
        &[],
    );
    // Counted at the server this time.
    let requests = Arc::clone(&server.requests);
    let url = server.url("gridded_sst.nc3z");
    let open = || {
        let before = requests.load(Ordering::SeqCst);
        let r = RemoteReader::open(&url, &RemoteOptions::default()).unwrap();
        let a = Archive::from_reader(Input::Remote(r), url.as_ref()).unwrap();
        let rq = Arc::clone(&requests);
        (
            a,
            Box::new(move || rq.load(Ordering::SeqCst) - before) as Box<dyn Fn() -> u64>,
        )
    };
    check_costs(&open, &z);
    // The command line costs the same: counted at the server around each run.
    let cli_requests = |args: &[&str]| {
        let before = requests.load(Ordering::SeqCst);
        let (code, _, err) = output(cmd().args(args));
        assert_eq!(code, 0, "{args:?}: {err}");
        requests.load(Ordering::SeqCst) - before
    };
    assert_eq!(cli_requests(&["info", &url]), 2, "info");
    let one = [
        "slice", &url, "sst", "--start", "7,90,180", "--count", "1,1,1",
    ];
    assert_eq!(cli_requests(&one), 3, "slice of one value");
    let steps = [
        "slice",
        &url,
        "sst",
        "--start",
        "10,0,0",
        "--count",
        "5,180,360",
    ];
    assert_eq!(cli_requests(&steps), 3, "slice of 5 time steps");
    // The whole variable (6.2 MB of values), which `slice` reads in pieces of 4 MiB: planned
    // as one selection, its frames (2 MB) come with one request, not one or two per piece.
    let whole = ["slice", "--format", "raw", &url, "sst"];
    assert_eq!(cli_requests(&whole), 3, "slice of the whole variable");
    // Errors name the URL.
    let missing = server.url("nope.nc3z");
    let (code, _, err) = output(cmd().args(["info", &missing]));
    assert_error(code, &err, &missing, "no such object");
    let text = server.url("text.txt");
    let (code, _, err) = output(cmd().args(["verify", &text]));
    assert_eq!(code, 1, "{err}");
    let (code, _, err) = output(cmd().args(["info", &text]));
    assert_error(code, &err, &text, "not a netCDF-3 file");
    // An empty object: the server answers 416 to the range requests.
    let empty = server.url("empty");
    let (code, _, err) = output(cmd().args(["info", &empty]));
    assert_error(code, &err, &empty, "not a netCDF-3 file: the file is empty");
}

/// A CDF-1 file of one NC_BYTE variable of `n` zero bytes.
fn zeros_nc(n: u32) -> Vec<u8> {
    let mut nc = noise_nc(n);
    nc[80..].fill(0);
    nc
}

#[test]
fn an_index_larger_than_the_tail_read_costs_one_more_request() {
    let work = tempfile::tempdir().unwrap();
    // 1.6 MB of zeros in 64-byte blocks: 25 000 constant blocks, an index of 16 bytes each
    // (design/FORMAT.md), larger than the 256 KiB read from the tail at open.
    let nc = work.path().join("zeros.nc");
    std::fs::write(&nc, zeros_nc(1_600_000)).unwrap();
    let z = work.path().join("zeros.nc3z");
    let (code, _, err) = output(
        Command::new(BIN)
            .args(["pack", "-q", "--block-size", "64"])
            .arg(&nc)
            .arg(&z),
    );
    assert_eq!(code, 0, "{err}");
    let bytes = std::fs::read(&z).unwrap();
    // The footer (last 32 bytes) by hand: index_len at 8..16, little-endian.
    let footer = &bytes[bytes.len() - 32..];
    let index_len = u64::from_le_bytes(footer[8..16].try_into().unwrap());
    assert!(
        index_len > nc3pack::remote::TAIL_BYTES,
        "index of {index_len} bytes"
    );
    // A small archive beside it, whose index fits in the tail.
    let small = pack("gridded_sst.nc", work.path(), "1MiB");
    let server = HttpServer::start(HashMap::from([
        ("zeros.nc3z".to_string(), bytes),
        ("small.nc3z".to_string(), std::fs::read(&small).unwrap()),
    ]));
    let count = |args: &[&str]| {
        let before = server.requests.load(Ordering::SeqCst);
        let (code, out, err) = output(Command::new(BIN).env_remove("NC3PACK_ANON").args(args));
        assert_eq!(code, 0, "{args:?}: {err}");
        (server.requests.load(Ordering::SeqCst) - before, out)
    };
    let big = server.url("zeros.nc3z");
    let (n, out) = count(&["info", "--json", &big]);
    assert_eq!(n, 3, "open of an archive with a large index");
    let (code, local, _) = output(Command::new(BIN).args(["info", "--json"]).arg(&z));
    assert_eq!(code, 0);
    assert!(out == local, "info differs from the local file's");
    assert_eq!(
        count(&["info", &server.url("small.nc3z")]).0,
        2,
        "small index"
    );
    // The library counts the same.
    let r = RemoteReader::open(&big, &RemoteOptions::default()).unwrap();
    let stats = r.stats();
    let a = Archive::from_reader(Input::Remote(r), big.as_ref()).unwrap();
    assert_eq!(stats.requests(), 3);
    // Every value is zero (constant blocks are read from the index: no more requests).
    let slab = a.slab("v", None, None, None).unwrap();
    let v: Vec<i8> = a.read("v", &slab).unwrap();
    assert!(v.len() == 1_600_000 && v.iter().all(|&x| x == 0));
    assert_eq!(stats.requests(), 3);
}

#[test]
fn transient_5xx_are_retried_and_a_persisting_one_is_one_error_line() {
    let work = tempfile::tempdir().unwrap();
    let z = pack("gridded_sst.nc", work.path(), "64KiB");
    let server = HttpServer::start(HashMap::from([
        ("sst.nc3z".to_string(), std::fs::read(&z).unwrap()),
        (
            "sst.nc".to_string(),
            std::fs::read(sample("gridded_sst.nc")).unwrap(),
        ),
    ]));
    let url = server.url("sst.nc3z");
    let cmd = || {
        let mut c = Command::new(BIN);
        c.env_remove("NC3PACK_ANON");
        c
    };
    // Two failures, then answers: each command succeeds, printing what the local file gives.
    let slice = ["sst", "--start", "3,10,10", "--count", "5,20,30"];
    for args in [&["info", "--json"][..], &["slice"], &["verify"]] {
        let (extra, local_path): (&[&str], &Path) = if args[0] == "slice" {
            (&slice, &z)
        } else {
            (&[], &z)
        };
        server.fail_next.store(2, Ordering::SeqCst);
        let (code, remote, err) = output(cmd().args(args).arg(&url).args(extra));
        assert_eq!(code, 0, "{args:?}: {err}");
        assert_eq!(server.fail_next.load(Ordering::SeqCst), 0);
        let (code, local, _) = output(cmd().args(args).arg(local_path).args(extra));
        assert_eq!(code, 0);
        if args[0] != "verify" {
            assert!(remote == local, "{args:?} differs from the local file's");
        }
    }
    // pack from the URL, after two failures: the archive a local pack makes.
    server.fail_next.store(2, Ordering::SeqCst);
    let out = work.path().join("from-url.nc3z");
    let (code, _, err) = output(
        cmd()
            .args(["pack", "-q", "--block-size", "64KiB", &server.url("sst.nc")])
            .arg(&out),
    );
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read(&out).unwrap() == std::fs::read(&z).unwrap());
    // A failure that persists: one line naming the URL, exit 1, after the retries (5).
    server.fail_next.store(1_000, Ordering::SeqCst);
    let before = server.requests.load(Ordering::SeqCst);
    let (code, _, err) = output(cmd().args(["info", &url]));
    assert_error(code, &err, &url, "503");
    let tried = server.requests.load(Ordering::SeqCst) - before;
    assert!((6..=12).contains(&tried), "{tried} requests");
    // Short: the status, how many tries (the first and 5 retries) and how long they took,
    // not the HTTP client's retry settings.
    let prefix = format!("nc3pack: {url}: server error 503 Service Unavailable, after 6 tries in ");
    assert!(
        err.trim_end()
            .strip_prefix(&prefix)
            .and_then(|t| t.strip_suffix(" s"))
            .is_some_and(|t| t.parse::<f64>().is_ok()),
        "{err:?}"
    );
    let out = work.path().join("never.nc3z");
    let (code, _, err) = output(cmd().args(["pack", &server.url("sst.nc")]).arg(&out));
    assert_error(code, &err, &server.url("sst.nc"), "503");
    assert!(!out.exists());
    server.fail_next.store(0, Ordering::SeqCst);
}

#[test]
fn s3_anonymous_access_reads_a_public_bucket() {
    let Some(s3) = S3Server::start_with(false) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let z = pack("gridded_sst.nc", work.path(), "1MiB");
    let url = s3.put("sst.nc3z", &std::fs::read(&z).unwrap());
    let (code, local, _) = output(Command::new(BIN).args(["info", "--json"]).arg(&z));
    assert_eq!(code, 0);
    let anon = || {
        let mut c = s3.cmd(SECRET);
        c.env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY");
        c
    };
    let (code, out, err) = output(anon().args(["--anon", "info", "--json", &url]));
    assert_eq!(code, 0, "{err}");
    assert!(out == local);
    let (code, out, err) = output(
        anon()
            .env("NC3PACK_ANON", "1")
            .args(["info", "--json", &url]),
    );
    assert_eq!(code, 0, "{err}");
    assert!(out == local);
    let (code, bytes, err) = output(anon().args(["--anon", "unpack", "-q", &url, "-"]));
    assert_eq!(code, 0, "{err}");
    assert!(bytes == std::fs::read(sample("gridded_sst.nc")).unwrap());
    // Without --anon and without credentials: refused, not sent unsigned.
    let (code, _, err) = output(anon().args(["info", &url]));
    assert_error(code, &err, &url, "no credentials");
    // The library.
    let a = Archive::open_url(&url, &s3.options().with_anon(true)).unwrap();
    assert_eq!(a.len(), std::fs::metadata(&z).unwrap().len());
}

/// A planned read larger than one window: the next window is fetched in the background while
/// the first is read (so that fetching overlaps decoding), and every byte read is the object's.
#[test]
fn planned_reads_fetch_the_next_window_ahead() {
    use nc3pack::ReadAt;
    // 48 MiB of xorshift bytes, planned as 1 MiB frames (clear of the front and tail that
    // opening reads).
    let data = crate::util::noise_bytes(48 << 20, 0x9e37_79b9_7f4a_7c15u64);
    let server = HttpServer::start(HashMap::from([("big.bin".to_string(), data.clone())]));
    let r = RemoteReader::open(&server.url("big.bin"), &RemoteOptions::default()).unwrap();
    let frames: Vec<(u64, u64)> = (1..47u64).map(|i| (i << 20, 1 << 20)).collect();
    r.prefetch(&frames).unwrap();
    // Opening (2), the first window (1), and the next window asked for without a read
    // reaching it: wait for that request at the server, up to 10 s.
    let mut ahead = false;
    for _ in 0..200 {
        if server.requests.load(Ordering::SeqCst) >= 4 {
            ahead = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(ahead, "the next window was not fetched ahead of the reads");
    let mut buf = vec![0u8; 1 << 20];
    for &(off, n) in &frames {
        r.read_exact_at(&mut buf, off).unwrap();
        assert!(
            buf[..] == data[off as usize..(off + n) as usize],
            "frame at {off}"
        );
    }
    // 46 MiB in windows of 16 + 16 + 14 MiB, after the 2 requests of opening.
    assert_eq!(server.requests.load(Ordering::SeqCst), 5);
    assert_eq!(r.stats().requests(), 5);
}

#[test]
fn planned_reads_get_each_frame_as_soon_as_it_arrives() {
    use nc3pack::ReadAt;
    // 32 MiB of xorshift bytes, planned as 1 MiB frames; the server sends the first 3 MiB of
    // an answer larger than that, then holds the rest back until released.
    let data = crate::util::noise_bytes(32 << 20, 0x2545_f491_4f6c_dd1du64);
    let server = HttpServer::start(HashMap::from([("big.bin".to_string(), data.clone())]));
    let r = RemoteReader::open(&server.url("big.bin"), &RemoteOptions::default()).unwrap();
    let frames: Vec<(u64, u64)> = (1..31u64).map(|i| (i << 20, 1 << 20)).collect();
    server.hold_after.store(3 << 20, Ordering::SeqCst);
    // Planning and reading the first frame, while the rest of its window is held back.
    let (tx, rx) = std::sync::mpsc::channel();
    let expect = data[1 << 20..2 << 20].to_vec();
    let plan = frames.clone();
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 20];
        let got = r
            .prefetch(&plan)
            .and_then(|()| r.read_exact_at(&mut buf, 1 << 20));
        let _ = tx.send(got.is_ok() && buf == expect);
        r
    });
    let first = rx.recv_timeout(Duration::from_secs(20));
    // Only the first window was asked for: the windows of a plan come one after the other
    // (a read needs them in order), not all at once sharing the link.
    let asked = server.requests.load(Ordering::SeqCst);
    server.hold_after.store(u64::MAX, Ordering::SeqCst);
    let r = reader.join().unwrap();
    assert_eq!(
        first,
        Ok(true),
        "the first frame was not read while the rest of its window was on its way"
    );
    assert_eq!(asked, 3, "requests while the first window was on its way");
    let mut buf = vec![0u8; 1 << 20];
    for &(off, n) in &frames[1..] {
        r.read_exact_at(&mut buf, off).unwrap();
        assert!(
            buf[..] == data[off as usize..(off + n) as usize],
            "frame at {off}"
        );
    }
    // 30 MiB in windows of 16 + 14 MiB, after the 2 requests of opening.
    assert_eq!(server.requests.load(Ordering::SeqCst), 4);
}

#[test]
fn file_urls_read_the_local_file() {
    let work = tempfile::tempdir().unwrap();
    let z = pack("scalars.nc", work.path(), "1MiB");
    let url = format!("file://{}", z.display());
    let (c1, a, e) = output(Command::new(BIN).args(["info", "--json", &url]));
    let (c2, b, _) = output(Command::new(BIN).args(["info", "--json"]).arg(&z));
    assert_eq!((c1, c2), (0, 0), "{e}");
    assert!(a == b);
    let (code, _, err) = output(Command::new(BIN).args(["info", "file://relative/x.nc3z"]));
    assert_error(code, &err, "file://relative/x.nc3z", "absolute path");
}

#[test]
fn pack_refuses_non_s3_outputs_clearly() {
    let url = "https://example.org/out.nc3z";
    let (code, _, err) = output(
        Command::new(BIN)
            .arg("pack")
            .arg(sample("scalars.nc"))
            .arg(url),
    );
    assert_error(code, &err, url, "writing needs an s3:// URL");
}

#[test]
fn pack_reads_its_input_from_an_http_url_as_a_stream() {
    let work = tempfile::tempdir().unwrap();
    let names = ["gridded_sst.nc", "obs_points.nc", "classic_records.nc"];
    let mut files: HashMap<String, Vec<u8>> = names
        .iter()
        .map(|n| (n.to_string(), std::fs::read(sample(n)).unwrap()))
        .collect();
    files.insert("text.txt".into(), b"not netCDF\n".to_vec());
    let server = HttpServer::start(files);
    let cmd = || {
        let mut c = Command::new(BIN);
        c.env_remove("NC3PACK_ANON");
        c
    };
    for name in names {
        let local = pack(name, work.path(), "1MiB");
        let out = work.path().join(format!("from-url-{name}3z"));
        let before = server.requests.load(Ordering::SeqCst);
        let (code, _, err) = output(
            cmd()
                .args(["pack", "-q", "--block-size", "1MiB", &server.url(name)])
                .arg(&out),
        );
        assert_eq!(code, 0, "{name}: {err}");
        assert!(
            std::fs::read(&out).unwrap() == std::fs::read(&local).unwrap(),
            "{name}: the archive differs from the local file's"
        );
        // One pass: one request.
        assert_eq!(server.requests.load(Ordering::SeqCst) - before, 1, "{name}");
    }
    // A missing object and one that is not netCDF: one line naming the URL, no output.
    let out = work.path().join("never.nc3z");
    let missing = server.url("nope.nc");
    let (code, _, err) = output(cmd().args(["pack", &missing]).arg(&out));
    assert_error(code, &err, &missing, "no such object");
    let text = server.url("text.txt");
    let (code, _, err) = output(cmd().args(["pack", &text]).arg(&out));
    assert_error(code, &err, &text, "not a netCDF-3 file");
    assert!(!out.exists());
}

#[test]
fn pack_reads_its_input_from_an_s3_url_as_a_stream() {
    let Some(s3) = S3Server::start() else { return };
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(s3.dir.path().join(BUCKET).join("in")).unwrap();
    for name in ["gridded_sst.nc", "obs_points.nc"] {
        let local = pack(name, work.path(), "1MiB");
        let input = s3.put(&format!("in/{name}"), &std::fs::read(sample(name)).unwrap());
        // To a local file.
        let out = work.path().join(format!("from-s3-{name}3z"));
        let (code, _, err) = output(
            s3.cmd(SECRET)
                .args(["pack", "-q", "--block-size", "1MiB", &input])
                .arg(&out),
        );
        assert_eq!(code, 0, "{name}: {err}");
        assert!(std::fs::read(&out).unwrap() == std::fs::read(&local).unwrap());
        // From the bucket to the bucket.
        let key = format!("{}3z", name);
        let (code, _, err) = output(s3.cmd(SECRET).args([
            "pack",
            "-q",
            "--block-size",
            "1MiB",
            &input,
            &format!("s3://{BUCKET}/{key}"),
        ]));
        assert_eq!(code, 0, "{name}: {err}");
        let stored = std::fs::read(s3.dir.path().join(BUCKET).join(&key)).unwrap();
        assert!(stored == std::fs::read(&local).unwrap());
    }
    // Wrong credentials and a missing key: one line naming the input URL.
    let input = format!("s3://{BUCKET}/in/gridded_sst.nc");
    let out = work.path().join("never.nc3z");
    let (code, _, err) = output(s3.cmd("not-the-secret").args(["pack", &input]).arg(&out));
    assert_error(code, &err, &input, "access denied (SignatureDoesNotMatch)");
    let missing = format!("s3://{BUCKET}/in/nope.nc");
    let (code, _, err) = output(s3.cmd(SECRET).args(["pack", &missing]).arg(&out));
    assert_error(code, &err, &missing, "no such object");
    assert!(!out.exists());
    assert_eq!(incomplete_uploads(&s3), Vec::<String>::new());
}

/// Files s3s-fs keeps for multipart uploads not completed nor aborted: `.upload-ID.json` (the
/// upload), `.upload_id-ID.part-N` (its parts), `.bucket-B.object-K.upload-ID.metadata.json`.
fn incomplete_uploads(s3: &S3Server) -> Vec<String> {
    std::fs::read_dir(s3.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".upload"))
        .collect()
}

/// Waits (at most 60 s) for `child` to end; returns its status.
fn wait_bounded(child: &mut Child) -> std::process::ExitStatus {
    for _ in 0..6000 {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    panic!("nc3pack did not end within 60 s");
}

/// Waits (at most 60 s) until the server lists more than `before` incomplete multipart uploads,
/// `child` (an upload to it) still running.
fn wait_for_upload(s3: &S3Server, child: &mut std::process::Child, before: usize) {
    for _ in 0..6000 {
        if incomplete_uploads(s3).len() > before {
            return;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "nc3pack ended before its upload began"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("no upload began within 60 s");
}

/// Sends `sig` to `child` with the server (process `server`) paused, so that no upload can
/// complete meanwhile, and resumes the server 300 ms later.
fn signal_with_the_server_paused(server: libc::pid_t, child: &std::process::Child, sig: i32) {
    // SAFETY: plain kill(2) calls on the processes this test started.
    unsafe {
        assert_eq!(libc::kill(server, libc::SIGSTOP), 0);
        assert_eq!(libc::kill(child.id() as libc::pid_t, sig), 0);
    }
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: as above.
    unsafe { assert_eq!(libc::kill(server, libc::SIGCONT), 0) };
}

#[test]
fn s3_pack_interrupted_mid_upload_aborts_it_and_dies_by_the_signal() {
    use std::os::unix::process::ExitStatusExt;
    let Some(s3) = S3Server::start() else { return };
    let work = tempfile::tempdir().unwrap();
    let big = work.path().join("big.nc");
    // 64 MB of noise stored raw: eight parts.
    std::fs::write(&big, noise_nc(64_000_000)).unwrap();
    let url = format!("s3://{BUCKET}/big.nc3z");
    let server = s3.child.id() as libc::pid_t;
    for sig in [libc::SIGTERM, libc::SIGINT] {
        // nc3pack's temporary archive goes here, to check that it is removed.
        let tmp = tempfile::tempdir().unwrap();
        let mut child = s3
            .cmd(SECRET)
            .env("TMPDIR", tmp.path())
            .args(["pack", "-q", "--codec", "none"])
            .arg(&big)
            .arg(&url)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for_upload(&s3, &mut child, 0);
        signal_with_the_server_paused(server, &child, sig);
        let status = wait_bounded(&mut child);
        let mut err = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
        assert_eq!(status.signal(), Some(sig), "{status:?} {err}");
        assert!(
            !s3.dir.path().join(BUCKET).join("big.nc3z").exists(),
            "a partial object"
        );
        assert_eq!(
            incomplete_uploads(&s3),
            Vec::<String>::new(),
            "signal {sig}"
        );
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
        assert!(left.is_empty(), "temporary files left: {left:?}");
    }
}

#[test]
fn s3_pack_interrupted_with_the_server_not_answering_still_dies_by_the_signal() {
    use std::os::unix::process::ExitStatusExt;
    let Some(s3) = S3Server::start() else { return };
    let work = tempfile::tempdir().unwrap();
    let big = work.path().join("big.nc");
    std::fs::write(&big, noise_nc(64_000_000)).unwrap();
    let server = s3.child.id() as libc::pid_t;
    // The server stays paused: the abort cannot be sent. The process dies by the signal all
    // the same, after its bounded wait, or at once on a second signal.
    for (i, second) in [None, Some(libc::SIGINT)].into_iter().enumerate() {
        let url = format!("s3://{BUCKET}/big{i}.nc3z");
        let tmp = tempfile::tempdir().unwrap();
        let mut child = s3
            .cmd(SECRET)
            .env("TMPDIR", tmp.path())
            .args(["pack", "-q", "--codec", "none"])
            .arg(&big)
            .arg(&url)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let before = incomplete_uploads(&s3).len();
        wait_for_upload(&s3, &mut child, before);
        // SAFETY: plain kill(2) calls on the processes this test started.
        unsafe {
            assert_eq!(libc::kill(server, libc::SIGSTOP), 0);
            assert_eq!(libc::kill(child.id() as libc::pid_t, libc::SIGTERM), 0);
        }
        if let Some(sig) = second {
            std::thread::sleep(Duration::from_millis(200));
            // SAFETY: as above.
            unsafe { assert_eq!(libc::kill(child.id() as libc::pid_t, sig), 0) };
        }
        let status = wait_bounded(&mut child);
        // SAFETY: as above.
        unsafe { assert_eq!(libc::kill(server, libc::SIGCONT), 0) };
        assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
        assert!(left.is_empty(), "temporary files left: {left:?}");
        assert!(!s3
            .dir
            .path()
            .join(BUCKET)
            .join(format!("big{i}.nc3z"))
            .exists());
    }
}

/// A minimal S3 server for multipart uploads (no signature checks): HEAD answers 404,
/// CreateMultipartUpload gives upload id `U`, UploadPart answers with an ETag except part
/// `fail_part`, which always gets a 500; AbortMultipartUpload and CompleteMultipartUpload are
/// recorded. Returns the port and the log of `METHOD query` lines.
fn failing_s3(fail_part: u32) -> (u16, Arc<Mutex<Vec<String>>>) {
    fake_s3(fail_part, Duration::ZERO)
}

/// [`failing_s3`], whose UploadPart answers come `part_delay` late (a slow link: an upload
/// then stays in flight that long).
fn fake_s3(fail_part: u32, part_delay: Duration) -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let log = Arc::new(Mutex::new(Vec::new()));
    let log2 = Arc::clone(&log);
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            let log = Arc::clone(&log2);
            std::thread::spawn(move || {
                s.set_read_timeout(Some(Duration::from_secs(10))).ok();
                let mut r = BufReader::new(s.try_clone().unwrap());
                for _ in 0..1000 {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let mut len = 0usize;
                    for _ in 0..100 {
                        let mut h = String::new();
                        if r.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                            break;
                        }
                        if let Some((k, v)) = h.split_once(':') {
                            if k.eq_ignore_ascii_case("content-length") {
                                len = v.trim().parse().unwrap_or(0);
                            }
                        }
                    }
                    let mut body = vec![0u8; len.min(64 << 20)];
                    if std::io::Read::read_exact(&mut r, &mut body).is_err() {
                        return;
                    }
                    let mut parts = line.split_whitespace();
                    let method = parts.next().unwrap_or("").to_string();
                    let target = parts.next().unwrap_or("");
                    let query = target.split_once('?').map_or("", |(_, q)| q).to_string();
                    log.lock().unwrap().push(format!("{method} {query}"));
                    let part: Option<u32> = query
                        .split('&')
                        .find_map(|kv| kv.strip_prefix("partNumber="))
                        .and_then(|n| n.parse().ok());
                    let (status, headers, body) = match (method.as_str(), part) {
                        ("HEAD", _) => ("404 Not Found", String::new(), String::new()),
                        ("POST", _) if query.starts_with("uploads") => (
                            "200 OK",
                            String::new(),
                            "<InitiateMultipartUploadResult><Bucket>bkt</Bucket><Key>k</Key>\
                             <UploadId>U</UploadId></InitiateMultipartUploadResult>"
                                .to_string(),
                        ),
                        ("PUT", Some(_)) if !part_delay.is_zero() => {
                            std::thread::sleep(part_delay);
                            ("200 OK", "ETag: \"e\"\r\n".to_string(), String::new())
                        }
                        ("PUT", Some(n)) if n == fail_part => (
                            "500 Internal Server Error",
                            String::new(),
                            "<Error><Code>InternalError</Code><Message>disk on fire</Message>\
                             </Error>"
                                .to_string(),
                        ),
                        ("PUT", Some(n)) => {
                            ("200 OK", format!("ETag: \"e{n}\"\r\n"), String::new())
                        }
                        ("DELETE", _) => ("204 No Content", String::new(), String::new()),
                        _ => (
                            "200 OK",
                            String::new(),
                            "<CompleteMultipartUploadResult><ETag>\"x\"</ETag>\
                             </CompleteMultipartUploadResult>"
                                .to_string(),
                        ),
                    };
                    let reply = format!(
                        "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if s.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (port, log)
}

#[test]
fn s3_pack_failing_mid_upload_aborts_it_with_one_error_line() {
    let work = tempfile::tempdir().unwrap();
    let big = work.path().join("big.nc");
    // 40 MB of noise stored raw: five parts, the third refused by the server for good.
    std::fs::write(&big, noise_nc(40_000_000)).unwrap();
    let (port, log) = failing_s3(3);
    let url = format!("s3://{BUCKET}/big.nc3z");
    let tmp = tempfile::tempdir().unwrap();
    let mut c = Command::new(BIN);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("AWS_") || k == "NC3PACK_ANON" {
            c.env_remove(k);
        }
    }
    let (code, _, err) = output(
        c.env("AWS_ACCESS_KEY_ID", KEY)
            .env("AWS_SECRET_ACCESS_KEY", SECRET)
            .env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}"))
            .env("AWS_ALLOW_HTTP", "true")
            .env("AWS_REGION", "us-east-1")
            .env("TMPDIR", tmp.path())
            .args(["pack", "-q", "--codec", "none"])
            .arg(&big)
            .arg(&url),
    );
    assert_error(code, &err, &url, "500");
    let log = log.lock().unwrap().clone();
    assert!(
        log.iter().any(|l| l.starts_with("DELETE uploadId=U")),
        "not aborted: {log:?}"
    );
    assert!(
        !log.iter().any(|l| l.starts_with("POST uploadId=U")),
        "completed: {log:?}"
    );
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

/// Every temporary file is named `.nc3pack-*.part`, the name docs/safety.md's `find` recipe
/// looks for: SIGKILL during an upload (which nothing can clean up after) leaves only such
/// names in `TMPDIR`, and SIGTERM leaves nothing.
#[test]
fn s3_pack_killed_mid_upload_leaves_only_part_named_temporaries() {
    use std::os::unix::process::ExitStatusExt;
    let work = tempfile::tempdir().unwrap();
    let big = work.path().join("big.nc");
    // 20 MB of noise stored raw: three parts, each answered 20 s late.
    std::fs::write(&big, noise_nc(20_000_000)).unwrap();
    let (port, log) = fake_s3(0, Duration::from_secs(20));
    for sig in [libc::SIGKILL, libc::SIGTERM] {
        let tmp = tempfile::tempdir().unwrap();
        let mut c = Command::new(BIN);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("AWS_") || k == "NC3PACK_ANON" {
                c.env_remove(k);
            }
        }
        let mut child = c
            .env("AWS_ACCESS_KEY_ID", KEY)
            .env("AWS_SECRET_ACCESS_KEY", SECRET)
            .env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}"))
            .env("AWS_ALLOW_HTTP", "true")
            .env("AWS_REGION", "us-east-1")
            .env("TMPDIR", tmp.path())
            .args(["pack", "-q", "--codec", "none"])
            .arg(&big)
            .arg(format!("s3://{BUCKET}/big{sig}.nc3z"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let before = log.lock().unwrap().len();
        // Up to 60 s for the first part to be on its way.
        let mut uploading = false;
        for _ in 0..6000 {
            if log.lock().unwrap()[before..]
                .iter()
                .any(|l| l.starts_with("PUT partNumber="))
            {
                uploading = true;
                break;
            }
            assert!(child.try_wait().unwrap().is_none(), "nc3pack ended early");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(uploading, "no part was sent within 60 s");
        // SAFETY: a plain kill(2) of the process this test started.
        unsafe { assert_eq!(libc::kill(child.id() as libc::pid_t, sig), 0) };
        let status = wait_bounded(&mut child);
        assert_eq!(status.signal(), Some(sig), "{status:?}");
        let left: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        if sig == libc::SIGKILL {
            assert!(!left.is_empty(), "SIGKILL left no temporary archive");
            for name in &left {
                assert!(
                    name.starts_with(".nc3pack-") && name.ends_with(".part"),
                    "a temporary file not named .nc3pack-*.part: {name}"
                );
            }
        } else {
            assert!(left.is_empty(), "temporary files left: {left:?}");
        }
    }
}

/// A CDF-1 file of one NC_BYTE variable of `n` bytes of noise (stored raw when packed with
/// `--codec none`). Header by hand (netCDF classic format spec): magic, numrecs, one dimension
/// "x", no global attributes, one variable "v"(x) of NC_BYTE at offset 80.
fn noise_nc(n: u32) -> Vec<u8> {
    let mut nc = b"CDF\x01".to_vec();
    for w in [0u32, 0x0A, 1, 1] {
        nc.extend_from_slice(&w.to_be_bytes());
    }
    nc.extend_from_slice(b"x\0\0\0");
    for w in [n, 0, 0, 0x0B, 1, 1] {
        nc.extend_from_slice(&w.to_be_bytes());
    }
    nc.extend_from_slice(b"v\0\0\0");
    for w in [1u32, 0, 0, 0, 1, n, 80] {
        nc.extend_from_slice(&w.to_be_bytes());
    }
    assert_eq!(nc.len(), 80);
    nc.extend(crate::util::noise_bytes(n as usize, 0x9e37_79b9_7f4a_7c15));
    nc
}

/// Objects of every size around the front and tail reads (64 KiB, 256 KiB) open and read
/// back, by URL and through a prefix, and `info` shows them: a server that answers a suffix
/// range longer than the object with an error (s3s-fs does, with 500) is read by offsets.
#[test]
fn s3_objects_shorter_than_the_tail_read_open() {
    let Some(s3) = S3Server::start() else { return };
    let work = tempfile::tempdir().unwrap();
    let prefix = Prefix::new(&format!("s3://{BUCKET}/"), &s3.options()).unwrap();
    let front = nc3pack::remote::FRONT_BYTES as u32;
    let tail = nc3pack::remote::TAIL_BYTES as u32;
    for n in [
        1000,
        front - 200,
        front + 1000,
        2 * front,
        tail - 200,
        tail + 1000,
    ] {
        let nc = work.path().join(format!("n{n}.nc"));
        std::fs::write(&nc, noise_nc(n)).unwrap();
        let z = work.path().join(format!("n{n}.nc3z"));
        let (code, _, err) = output(
            Command::new(BIN)
                .args(["pack", "-q", "--codec", "none"])
                .arg(&nc)
                .arg(&z),
        );
        assert_eq!(code, 0, "{err}");
        let bytes = std::fs::read(&z).unwrap();
        let key = format!("n{n}.nc3z");
        let url = s3.put(&key, &bytes);
        let here = Archive::open(&z).unwrap();
        let want: Vec<i8> = here
            .read("v", &here.slab("v", None, None, None).unwrap())
            .unwrap();
        for a in [
            Archive::open_url(&url, &s3.options()).unwrap(),
            Archive::from_reader(Input::Remote(prefix.reader(&key).unwrap()), url.as_ref())
                .unwrap(),
        ] {
            assert_eq!(a.len(), bytes.len() as u64, "{n}");
            let got: Vec<i8> = a
                .read("v", &a.slab("v", None, None, None).unwrap())
                .unwrap();
            assert!(got == want, "{n}");
        }
        let (code, out, err) = output(s3.cmd(SECRET).args(["info", &url]));
        assert_eq!(code, 0, "{n}: {err}");
        let out = String::from_utf8(out).unwrap();
        assert!(
            out.contains(&format!("{} bytes", bytes.len())),
            "{n}: {out}"
        );
    }
}

#[test]
fn s3_pack_into_the_bucket_then_unpack_is_byte_exact() {
    let Some(s3) = S3Server::start() else { return };
    let work = tempfile::tempdir().unwrap();
    // 20 MB of noise, stored raw: its archive takes three 8 MiB parts.
    let nc = noise_nc(20_000_000);
    let big = work.path().join("big.nc");
    std::fs::write(&big, &nc).unwrap();
    let url = format!("s3://{BUCKET}/big.nc3z");
    let (code, _, err) = output(
        s3.cmd(SECRET)
            .args(["pack", "-q", "--codec", "none"])
            .arg(&big)
            .arg(&url),
    );
    assert_eq!(code, 0, "{err}");
    let stored = std::fs::metadata(s3.dir.path().join(BUCKET).join("big.nc3z")).unwrap();
    assert!(
        stored.len() > 16 << 20,
        "{} bytes: not three parts",
        stored.len()
    );
    let (code, bytes, err) = output(s3.cmd(SECRET).args(["unpack", "-q", &url, "-"]));
    assert_eq!(code, 0, "{err}");
    assert!(bytes == nc, "unpack of the uploaded archive differs");
    // Smaller archives: one part each.
    for name in ["gridded_sst.nc", "obs_points.nc"] {
        let url = format!("s3://{BUCKET}/packed/{}", name.replace(".nc", ".nc3z"));
        std::fs::create_dir_all(s3.dir.path().join(BUCKET).join("packed")).unwrap();
        let (code, _, err) = output(
            s3.cmd(SECRET)
                .args(["pack", "-q"])
                .arg(sample(name))
                .arg(&url),
        );
        assert_eq!(code, 0, "{err}");
        let back = work.path().join(name);
        let (code, _, err) = output(s3.cmd(SECRET).args(["unpack", "-q", &url]).arg(&back));
        assert_eq!(code, 0, "{err}");
        assert!(std::fs::read(&back).unwrap() == std::fs::read(sample(name)).unwrap());
        // The object is the archive a local pack makes.
        let local = pack(name, work.path(), "1MiB");
        let key = s3
            .dir
            .path()
            .join(BUCKET)
            .join("packed")
            .join(name.replace(".nc", ".nc3z"));
        assert!(std::fs::read(&key).unwrap() == std::fs::read(&local).unwrap());
        // Existing: refused without --force, the object untouched; replaced with it.
        let before = std::fs::read(&key).unwrap();
        let (code, _, err) = output(
            s3.cmd(SECRET)
                .args(["pack", "-q"])
                .arg(sample("scalars.nc"))
                .arg(&url),
        );
        assert_error(code, &err, &url, "output exists");
        assert!(std::fs::read(&key).unwrap() == before);
        let (code, _, err) = output(
            s3.cmd(SECRET)
                .args(["pack", "-q", "--force"])
                .arg(sample("scalars.nc"))
                .arg(&url),
        );
        assert_eq!(code, 0, "{err}");
        let (code, _, err) = output(s3.cmd(SECRET).args(["verify", &url]));
        assert_eq!(code, 0, "{err}");
        assert!(std::fs::read(&key).unwrap() != before);
    }
    // Wrong credentials: refused, nothing written.
    let url = format!("s3://{BUCKET}/denied.nc3z");
    let (code, _, err) = output(
        s3.cmd("not-the-secret")
            .args(["pack", "-q"])
            .arg(sample("scalars.nc"))
            .arg(&url),
    );
    assert_error(code, &err, &url, "access denied");
    assert!(!s3.dir.path().join(BUCKET).join("denied.nc3z").exists());
    assert_eq!(incomplete_uploads(&s3), Vec::<String>::new());
}

#[test]
fn storage_options_are_checked() {
    let o = RemoteOptions::default()
        .set("key", "k")
        .and_then(|o| o.set("secret", "s"))
        .and_then(|o| o.set("endpoint_url", "http://127.0.0.1:1"))
        .and_then(|o| o.set("anon", "false"))
        .unwrap();
    assert!(!o.anon());
    assert!(RemoteOptions::default().set("anon", "maybe").is_err());
    assert!(RemoteOptions::default().set("nope", "1").is_err());
    // Nothing listens on port 1: a connection failure, reported after the retries.
    let o = o
        .with_allow_http(true)
        .with_retries(1, Duration::from_secs(2));
    let e = RemoteReader::open("s3://b/k.nc3z", &o).unwrap_err();
    assert!(
        e.to_string().starts_with("s3://b/k.nc3z: request failed: "),
        "{e}"
    );
}

/// Two servers with different credentials hold different archives under the same URL; two
/// threads at once call `describe_with`, `verify` and `unpack_file` on it, each with its
/// server's options (`with_remote`): every call reaches its own server (nothing process-wide
/// is read, so one call's credentials and endpoint never serve another's).
#[test]
fn s3_each_call_reaches_the_server_of_its_own_options() {
    let (Some(a), Some(b)) = (
        S3Server::start(),
        S3Server::start_as(true, "nc3packotherkey", "nc3packothersecret"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let files = [("a", "classic_records.nc", &a), ("b", "fill_values.nc", &b)];
    let mut url = String::new();
    for (who, name, server) in files {
        std::fs::create_dir(dir.path().join(who)).unwrap();
        let z = pack(name, &dir.path().join(who), "64KiB");
        url = server.put("same-name.nc3z", &std::fs::read(z).unwrap());
    }
    std::thread::scope(|s| {
        for (who, name, server) in files {
            let (url, dir) = (&url, dir.path());
            s.spawn(move || {
                let original = std::fs::read(sample(name)).unwrap();
                let z = dir.join(who).join(name.replace(".nc", ".nc3z"));
                let local = nc3pack::info::describe(&z).unwrap().to_json();
                let remote = server.options();
                let info = nc3pack::info::InfoOptions::default().with_remote(remote.clone());
                let verify = nc3pack::VerifyOptions::default()
                    .with_threads(1)
                    .with_remote(remote.clone());
                let unpack = nc3pack::UnpackOptions::default()
                    .with_threads(1)
                    .with_force(true)
                    .with_remote(remote);
                let out = dir.join(format!("{who}.nc"));
                for _ in 0..10 {
                    let got = nc3pack::info::describe_with(url.as_ref(), &info).unwrap();
                    assert_eq!(got.to_json(), local, "server {who}");
                    assert!(nc3pack::verify(url.as_ref(), &verify).unwrap().is_intact());
                    nc3pack::unpack_file(url.as_ref(), &out, &unpack).unwrap();
                    assert_eq!(std::fs::read(&out).unwrap(), original, "server {who}");
                }
            });
        }
    });
}

/// Set in a process that runs one test alone with an environment of its own: the endpoint of
/// the server it reads.
const ENV_ROLE: &str = "NC3PACK_TEST_OWN_ENVIRONMENT";

/// A call given remote options goes by them alone, never by the environment: in a process
/// whose environment names a dead endpoint, other credentials and anonymous access
/// (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `NC3PACK_ANON=1`), every call given the server's
/// options reads the archives in its bucket (`open_with`, `Archive::open_url`, `describe_with`,
/// `write_with`, `verify`, `unpack_file`, `verify_collection_with` of a collection in the
/// bucket), with options made from nothing and with the environment's overridden; a call given
/// none (`open`, `verify_collection`) reads the environment at the call, so reaches the dead
/// endpoint and fails.
#[test]
fn s3_calls_given_options_never_read_the_environment() {
    const NAME: &str = "remote::s3_calls_given_options_never_read_the_environment";
    if let Some(endpoint) = std::env::var_os(ENV_ROLE) {
        return calls_given_options_in_this_environment(&endpoint.to_string_lossy());
    }
    let Some(s3) = S3Server::start() else {
        return;
    };
    // A collection of two archives, packed into the server's directory: the objects
    // `coll/NAME.nc3z` and the manifest `coll/.nc3pack/*.jsonl`.
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("data");
    std::fs::create_dir(&data).unwrap();
    for name in ["classic_records.nc", "fill_values.nc"] {
        std::fs::copy(sample(name), data.join(name)).unwrap();
    }
    let coll = s3.dir.path().join(BUCKET).join("coll");
    let opts = nc3pack::CollectionOptions::default().with_threads(1);
    let r = nc3pack::pack_collection(&[&data], &coll, &opts).unwrap();
    assert!(r.is_ok() && r.packed == 2, "{:?}", r.failures);
    let (out, err) = (work.path().join("out"), work.path().join("err"));
    let mut c = Command::new(std::env::current_exe().unwrap());
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("AWS_") || k == "NC3PACK_ANON" {
            c.env_remove(k);
        }
    }
    let dead = format!("http://127.0.0.1:{}", free_port());
    let mut child = c
        .args(["--exact", NAME, "--test-threads=1", "--nocapture"])
        .env(ENV_ROLE, s3.endpoint())
        .env("AWS_ENDPOINT_URL", &dead)
        .env("AWS_ACCESS_KEY_ID", "nc3packnotthekey")
        .env("AWS_SECRET_ACCESS_KEY", "nc3packnotthesecret")
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_REGION", "us-east-1")
        .env("NC3PACK_ANON", "1")
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let status = wait_bounded(&mut child);
    let (out, err) = (
        std::fs::read_to_string(&out).unwrap(),
        std::fs::read_to_string(&err).unwrap(),
    );
    assert!(status.success(), "{out}\n{err}");
    assert!(
        out.contains("1 passed"),
        "the test did not run: {out}\n{err}"
    );
}

/// The calls of [`s3_calls_given_options_never_read_the_environment`], in the process whose
/// environment names a dead endpoint; the server's is `endpoint`.
fn calls_given_options_in_this_environment(endpoint: &str) {
    let work = tempfile::tempdir().unwrap();
    let url = format!("s3://{BUCKET}/coll/classic_records.nc.nc3z");
    let original = std::fs::read(sample("classic_records.nc")).unwrap();
    let local = nc3pack::info::describe(&sample("classic_records.nc")).unwrap();
    let given = RemoteOptions::default()
        .with_endpoint(endpoint)
        .with_allow_http(true)
        .with_region("us-east-1")
        .with_credentials(KEY, SECRET, None);
    // The environment's options with every one it names overridden, as the command line and
    // the Python package make them.
    let over_env = RemoteOptions::from_env()
        .with_anon(false)
        .with_endpoint(endpoint)
        .with_credentials(KEY, SECRET, None);
    for remote in [given, over_env] {
        let ds = nc3pack::open_with(&url, &remote).unwrap();
        assert_eq!(ds.header().var_count(), local.variables().count());
        let a = Archive::open_url(&url, &remote).unwrap();
        for v in 0..a.header().var_count() {
            a.read_var_bytes(v).unwrap();
        }
        let info = nc3pack::info::InfoOptions::default().with_remote(remote.clone());
        let got = nc3pack::info::describe_with(url.as_ref(), &info).unwrap();
        assert_eq!(got.format(), local.format());
        let mut text = Vec::new();
        nc3pack::info::write_with(url.as_ref(), &info, true, "x", &mut text).unwrap();
        assert!(text.starts_with(b"{"));
        let verify = nc3pack::VerifyOptions::default()
            .with_threads(1)
            .with_remote(remote.clone());
        assert!(nc3pack::verify(url.as_ref(), &verify).unwrap().is_intact());
        let unpack = nc3pack::UnpackOptions::default()
            .with_threads(1)
            .with_force(true)
            .with_remote(remote.clone());
        let back = work.path().join("back.nc");
        nc3pack::unpack_file(url.as_ref(), &back, &unpack).unwrap();
        assert_eq!(std::fs::read(&back).unwrap(), original);
        let manifests = [PathBuf::from(format!("s3://{BUCKET}/coll/.nc3pack/"))];
        let one = nc3pack::collection::VerifyCollectionOptions::default().with_threads(1);
        let r = nc3pack::collection::verify_collection_with(&manifests, &one, &remote, &|_| {})
            .unwrap();
        assert!(r.is_ok() && r.checked == 2, "{:?}", r.failures);
    }
    // Given nothing: the environment, read at the call (the dead endpoint, anonymous).
    match nc3pack::open(&url) {
        Ok(_) => panic!("{url} opened with the environment's dead endpoint"),
        Err(e) => assert!(matches!(e, nc3pack::Error::Remote { .. }), "{e}"),
    }
    let manifests = [PathBuf::from(format!("s3://{BUCKET}/coll/.nc3pack/"))];
    let one = nc3pack::collection::VerifyCollectionOptions::default().with_threads(1);
    assert!(nc3pack::verify_collection(&manifests, &one, &|_| {}).is_err());
}

// ---- `pack IN... -o s3://BUCKET/PREFIX/`: a collection packed into a bucket ----

/// The keys of the objects under `prefix/` in the bucket (the server keeps each object as a
/// file, and its bookkeeping outside the bucket's directory), relative to it, sorted.
fn keys(s3: &S3Server, prefix: &str) -> Vec<String> {
    let top = s3.dir.path().join(BUCKET).join(prefix);
    let mut found = Vec::new();
    let mut todo = vec![top.clone()];
    // Bounded by the tree: each directory is read once.
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                found.push(p.strip_prefix(&top).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    found.sort();
    found
}

/// A small tree of netCDF-3 files (and a text file, which is not one) under `root`; returns
/// each input's name and sample.
fn collection(root: &Path) -> Vec<(&'static str, &'static str)> {
    let files = [
        ("a/x.nc", "scalars.nc"),
        ("a/2001/y.cdf", "classic_records.nc"),
        ("b/no suffix", "cdf5_types.nc"),
        ("b/c/z.nc", "fill_values.nc"),
    ];
    for (name, sample_name) in files {
        let p = root.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::copy(sample(sample_name), &p).unwrap();
    }
    std::fs::write(root.join("a/notes.txt"), "not netCDF: not an input").unwrap();
    files.to_vec()
}

/// The (status, name) of each line of a manifest.
fn manifest_statuses(bytes: &[u8]) -> Vec<(String, String)> {
    crate::util::manifest_statuses(&String::from_utf8_lossy(bytes))
}

/// Runs the command with a time limit of 120 s; returns (exit code, stdout, stderr).
fn output_bounded(c: &mut Command) -> (i32, Vec<u8>, String) {
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start nc3pack");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut b).unwrap();
        b
    });
    let mut e = String::new();
    std::io::Read::read_to_string(&mut err, &mut e).unwrap();
    let mut status = None;
    for _ in 0..12000 {
        if let Some(s) = child.try_wait().unwrap() {
            status = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let Some(status) = status else {
        let _ = child.kill();
        panic!("nc3pack did not end within 120 s: {e}");
    };
    (
        status.code().expect("nc3pack was killed by a signal"),
        reader.join().unwrap(),
        e,
    )
}

#[test]
fn s3_batch_mirrors_the_tree_under_a_prefix_resumes_and_verifies() {
    let Some(s3) = S3Server::start() else { return };
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("tree");
    let files = collection(&tree);
    // The local manifest goes under the working directory: one for each of two machines.
    let (here, there) = (work.path().join("here"), work.path().join("there"));
    std::fs::create_dir_all(&here).unwrap();
    std::fs::create_dir_all(&there).unwrap();
    let run = |cwd: &Path, extra: &[&str]| {
        output_bounded(
            s3.cmd(SECRET)
                .current_dir(cwd)
                .args(["pack", "-j", "2"])
                .args(extra)
                .arg(&tree)
                .args(["-o", &format!("s3://{BUCKET}/coll/")]),
        )
    };
    let (code, _, err) = run(&here, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("packed 4 of 4 files"), "{err}");
    // Exactly the mirrored names, and the manifest.
    let mut expected: Vec<String> = files.iter().map(|(n, _)| format!("{n}.nc3z")).collect();
    expected.push(".nc3pack/manifest-0-of-1.jsonl".into());
    expected.sort();
    assert_eq!(keys(&s3, "coll"), expected);
    assert_eq!(incomplete_uploads(&s3), Vec::<String>::new());
    // Each object unpacks to its original, byte for byte, and is what a local pack makes.
    for (name, sample_name) in &files {
        let url = format!("s3://{BUCKET}/coll/{name}.nc3z");
        let (code, bytes, err) = output(s3.cmd(SECRET).args(["unpack", "-q", &url, "-"]));
        assert_eq!(code, 0, "{url}: {err}");
        assert!(
            bytes == std::fs::read(sample(sample_name)).unwrap(),
            "{url}"
        );
    }
    // The uploaded manifest equals the local one, a line per file, each naming its object.
    let local = here.join(format!(".nc3pack/{BUCKET}/coll/manifest-0-of-1.jsonl"));
    let uploaded = s3
        .dir
        .path()
        .join(BUCKET)
        .join("coll/.nc3pack/manifest-0-of-1.jsonl");
    let lines = std::fs::read(&local).unwrap();
    assert!(lines == std::fs::read(&uploaded).unwrap());
    let mut st = manifest_statuses(&lines);
    st.sort();
    let want = |status: &str| {
        let mut v: Vec<(String, String)> = files
            .iter()
            .map(|(n, _)| (status.to_string(), n.to_string()))
            .collect();
        v.sort();
        v
    };
    assert_eq!(st, want("packed"));
    for l in String::from_utf8_lossy(&lines).lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let name = v["name"].as_str().unwrap();
        assert_eq!(v["output"], format!("s3://{BUCKET}/coll/{name}.nc3z"));
    }
    // A rerun skips everything: here from the local manifest, there (another machine, no
    // local manifest) from the uploaded one.
    for cwd in [&here, &there] {
        let (code, _, err) = run(cwd, &[]);
        assert_eq!(code, 0, "{err}");
        assert!(
            err.contains("packed 0 of 4 files, 4 already packed (skipped)"),
            "{err}"
        );
        let m = cwd.join(format!(".nc3pack/{BUCKET}/coll/manifest-0-of-1.jsonl"));
        let st = manifest_statuses(&std::fs::read(m).unwrap());
        let mut last: Vec<_> = st[st.len() - 4..].to_vec();
        last.sort();
        assert_eq!(last, want("skipped"), "{}", cwd.display());
    }
    // --force packs everything again.
    let (code, _, err) = run(&here, &["--force"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("packed 4 of 4 files"), "{err}");
    let st = manifest_statuses(&std::fs::read(&uploaded).unwrap());
    let mut last: Vec<_> = st[st.len() - 4..].to_vec();
    last.sort();
    assert_eq!(last, want("packed"));
    // verify --manifest, from the bucket (the manifest, or its directory) and from the local
    // manifest whose outputs are URLs: every archive verifies...
    let m_url = format!("s3://{BUCKET}/coll/.nc3pack/manifest-0-of-1.jsonl");
    let dir_url = format!("s3://{BUCKET}/coll/.nc3pack/");
    let local_m = local.to_str().unwrap().to_string();
    for m in [&m_url, &dir_url, &local_m] {
        let (code, out, err) = output_bounded(s3.cmd(SECRET).args(["verify", "--manifest", m]));
        assert_eq!(code, 0, "{m}: {err}");
        assert_eq!(
            String::from_utf8_lossy(&out),
            "verified 4 archives: 0 failed\n",
            "{m}"
        );
    }
    // A mistyped prefix (no manifest under it) and a prefix whose one manifest is empty
    // vouch for nothing: exit 1, naming the URL given, nothing verified.
    let empty = s3.dir.path().join(BUCKET).join("empty/.nc3pack");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("manifest-0-of-1.jsonl"), b"").unwrap();
    for (m, why) in [
        (
            format!("s3://{BUCKET}/col/.nc3pack/"),
            "no manifest found (no *.jsonl object in this prefix)",
        ),
        (
            format!("s3://{BUCKET}/empty/.nc3pack/"),
            "no manifest record found (the manifest has no entry line)",
        ),
    ] {
        let (code, out, err) = output_bounded(s3.cmd(SECRET).args(["verify", "--manifest", &m]));
        assert_eq!(
            (code, String::from_utf8_lossy(&out).as_ref(), err.as_str()),
            (
                1,
                "",
                format!("nc3pack: {m}: {why}; nothing verified\n").as_str()
            ),
        );
    }
    // ...and a flipped byte in one object is found and named by its URL.
    let victim = s3.dir.path().join(BUCKET).join("coll/a/2001/y.cdf.nc3z");
    let mut bytes = std::fs::read(&victim).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x10;
    std::fs::write(&victim, &bytes).unwrap();
    for m in [&m_url, &dir_url, &local_m] {
        let (code, out, err) = output_bounded(s3.cmd(SECRET).args(["verify", "--manifest", m]));
        let out = String::from_utf8_lossy(&out);
        assert_eq!(code, 1, "{m}: {out} {err}");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert!(
            lines[0].starts_with(&format!("s3://{BUCKET}/coll/a/2001/y.cdf.nc3z: ")),
            "{out}"
        );
        assert_eq!(lines[1], "verified 4 archives: 1 failed");
    }
    // A rerun checks the recorded objects' ends (many at once): one whose footer was damaged
    // is not taken as done but packed again (it is recorded as this batch's), while the other
    // three are skipped.
    let victim = s3.dir.path().join(BUCKET).join("coll/b/c/z.nc.nc3z");
    let mut bytes = std::fs::read(&victim).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    std::fs::write(&victim, &bytes).unwrap();
    let (code, _, err) = run(&here, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("packed 1 of 4 files, 3 already packed (skipped)"),
        "{err}"
    );
    let url = format!("s3://{BUCKET}/coll/b/c/z.nc.nc3z");
    let (code, bytes, err) = output(s3.cmd(SECRET).args(["unpack", "-q", &url, "-"]));
    assert_eq!(code, 0, "{url}: {err}");
    assert!(bytes == std::fs::read(sample("fill_values.nc")).unwrap());
}

#[test]
fn s3_batch_three_shards_to_one_prefix_cover_the_tree_once() {
    let Some(s3) = S3Server::start() else { return };
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("tree");
    let mut names = Vec::new();
    for i in 0..14 {
        let name = format!("d{}/f{i:02}.nc", i % 3);
        let p = tree.join(&name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::copy(sample("scalars.nc"), &p).unwrap();
        names.push(name);
    }
    names.sort();
    // Three shards in parallel, each from its own working directory (its own machine).
    let children: Vec<(Child, tempfile::TempDir)> = (0..3)
        .map(|i| {
            let cwd = tempfile::tempdir().unwrap();
            let child = s3
                .cmd(SECRET)
                .current_dir(cwd.path())
                .args(["pack", "-q", "-j", "1", "--shard", &format!("{i}/3")])
                .arg(&tree)
                .args(["-o", &format!("s3://{BUCKET}/sharded")])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            (child, cwd)
        })
        .collect();
    for (mut child, _cwd) in children {
        assert!(wait_bounded(&mut child).success());
    }
    let mut expected: Vec<String> = names.iter().map(|n| format!("{n}.nc3z")).collect();
    for i in 0..3 {
        expected.push(format!(".nc3pack/manifest-{i}-of-3.jsonl"));
    }
    expected.sort();
    assert_eq!(keys(&s3, "sharded"), expected);
    // The shards' manifests: each name packed by exactly one of them.
    let mut packed = Vec::new();
    for i in 0..3 {
        let m = s3
            .dir
            .path()
            .join(BUCKET)
            .join(format!("sharded/.nc3pack/manifest-{i}-of-3.jsonl"));
        for (status, name) in manifest_statuses(&std::fs::read(m).unwrap()) {
            assert_eq!(status, "packed");
            packed.push(name);
        }
    }
    packed.sort();
    assert_eq!(packed, names);
    let (code, out, err) = output_bounded(s3.cmd(SECRET).args([
        "verify",
        "--manifest",
        &format!("s3://{BUCKET}/sharded/.nc3pack/"),
    ]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        String::from_utf8_lossy(&out),
        "verified 14 archives: 0 failed\n"
    );
}

#[test]
fn s3_batch_killed_mid_upload_leaves_no_partial_object_and_its_rerun_completes() {
    use std::os::unix::process::ExitStatusExt;
    let Some(s3) = S3Server::start() else { return };
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    // Four files of noise stored raw: two 8 MiB parts each, two uploads at a time.
    let mut originals = Vec::new();
    for i in 0..4u32 {
        let p = tree.join(format!("big{i}.nc"));
        let mut nc = noise_nc(10_000_000);
        // Each different, so that each archive holds its own hash.
        let n = nc.len();
        nc[n - 1] = i as u8;
        std::fs::write(&p, &nc).unwrap();
        originals.push((format!("big{i}.nc"), nc));
    }
    let cwd = work.path().join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let url = format!("s3://{BUCKET}/killed/");
    let tmp = tempfile::tempdir().unwrap();
    let server = s3.child.id() as libc::pid_t;
    let mut child = s3
        .cmd(SECRET)
        .current_dir(&cwd)
        .env("TMPDIR", tmp.path())
        .args(["pack", "-q", "-j", "2", "--codec", "none"])
        .arg(&tree)
        .args(["-o", &url])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_upload(&s3, &mut child, 0);
    signal_with_the_server_paused(server, &child, libc::SIGTERM);
    let status = wait_bounded(&mut child);
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?} {err}");
    // No orphaned upload, no temporary file; every object there is complete.
    assert_eq!(incomplete_uploads(&s3), Vec::<String>::new());
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
    let done_before = keys(&s3, "killed");
    assert!(
        done_before.len() < 4,
        "nothing was interrupted: {done_before:?}"
    );
    for k in done_before.iter().filter(|k| k.ends_with(".nc3z")) {
        let (code, _, err) = output(s3.cmd(SECRET).args(["verify", &format!("{url}{k}")]));
        assert_eq!(code, 0, "a partial object {k}: {err}");
    }
    // The rerun completes: every object, each restoring its original.
    let (code, _, err) = output_bounded(
        s3.cmd(SECRET)
            .current_dir(&cwd)
            .args(["pack", "-q", "-j", "2", "--codec", "none"])
            .arg(&tree)
            .args(["-o", &url]),
    );
    assert_eq!(code, 0, "{err}");
    let mut expected: Vec<String> = originals.iter().map(|(n, _)| format!("{n}.nc3z")).collect();
    expected.push(".nc3pack/manifest-0-of-1.jsonl".into());
    expected.sort();
    assert_eq!(keys(&s3, "killed"), expected);
    assert_eq!(incomplete_uploads(&s3), Vec::<String>::new());
    for (name, nc) in &originals {
        let (code, bytes, err) =
            output(
                s3.cmd(SECRET)
                    .args(["unpack", "-q", &format!("{url}{name}.nc3z"), "-"]),
            );
        assert_eq!(code, 0, "{err}");
        assert!(bytes == *nc, "{name}");
    }
    // The manifest lists every file once as packed (with the lines of the first run, if it
    // wrote any before the kill).
    let m =
        std::fs::read(cwd.join(format!(".nc3pack/{BUCKET}/killed/manifest-0-of-1.jsonl"))).unwrap();
    let mut packed: Vec<String> = manifest_statuses(&m)
        .into_iter()
        .filter(|(s, _)| s == "packed")
        .map(|(_, n)| n)
        .collect();
    packed.sort();
    let names: Vec<String> = originals.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(packed, names);
}

#[test]
fn s3_batch_bad_urls_credentials_and_delete_input_fail_before_any_work() {
    let Some(s3) = S3Server::start() else { return };
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("tree");
    collection(&tree);
    let attempt = |secret: &str, url: &str, extra: &[&str], drop_key: bool| {
        let mut c = s3.cmd(secret);
        if drop_key {
            c.env_remove("AWS_ACCESS_KEY_ID");
        }
        output_bounded(
            c.current_dir(work.path())
                .args(["pack", "-q"])
                .args(extra)
                .arg(&tree)
                .args(["-o", url]),
        )
    };
    for (secret, url, extra, drop_key, code, named, cause) in [
        (
            SECRET,
            "s3:///coll/",
            &[][..],
            false,
            1,
            "s3:///coll/",
            "not a usable URL",
        ),
        (
            SECRET,
            "s3://bkt/a//b/",
            &[][..],
            false,
            1,
            "s3://bkt/a//b/",
            "not a usable URL",
        ),
        (
            SECRET,
            "https://example.org/coll/",
            &[][..],
            false,
            1,
            "https://example.org/coll/",
            "writing needs an s3:// URL",
        ),
        (
            SECRET,
            "s3://bkt/coll/",
            &[][..],
            true,
            1,
            "s3://bkt/coll/",
            "no credentials",
        ),
        (
            "wrong",
            "s3://bkt/coll/",
            &[][..],
            false,
            1,
            "s3://bkt/coll/.nc3pack/",
            "access denied",
        ),
        (
            SECRET,
            "s3://nobucket/coll/",
            &[][..],
            false,
            1,
            "s3://nobucket/coll/.nc3pack/",
            "no such bucket",
        ),
        (
            SECRET,
            "s3://bkt/coll/",
            &["--delete-input"][..],
            false,
            2,
            "",
            "--delete-input cannot be used with an object-store output",
        ),
    ] {
        let (c, _, err) = attempt(secret, url, extra, drop_key);
        assert_eq!(c, code, "{url}: {err}");
        assert_eq!(err.lines().count(), 1, "{url}: not one line: {err}");
        assert!(
            err.starts_with(&format!("nc3pack: {named}")),
            "{url}: {err}"
        );
        assert!(err.contains(cause), "{url}: {err}");
    }
    // Nothing was done: no object, no upload, no local manifest.
    assert_eq!(keys(&s3, ""), Vec::<String>::new());
    assert_eq!(incomplete_uploads(&s3), Vec::<String>::new());
    assert!(!work.path().join(".nc3pack").exists());
}

/// Writes `bytes` to the FIFO at `path` once a reader has it open (at most 60 s), then closes
/// it (the reader sees the end).
fn feed_fifo(path: &Path, bytes: &[u8], child: &mut Child) {
    use std::os::unix::fs::OpenOptionsExt;
    for _ in 0..6000 {
        // Without a reader, a non-blocking open for writing fails (ENXIO).
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
        {
            // Blocking again: the reader takes the bytes as it goes.
            // SAFETY: fcntl on a descriptor this function owns.
            unsafe {
                let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
                let flags = libc::fcntl(fd, libc::F_GETFL);
                assert_eq!(libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK), 0);
            }
            f.write_all(bytes).unwrap();
            return;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "nc3pack ended before reading {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("nobody opened {} within 60 s", path.display());
}

#[test]
fn s3_batch_copies_its_manifest_to_the_bucket_while_running_and_a_rerun_elsewhere_uses_it() {
    let Some(s3) = S3Server::start() else { return };
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("root");
    // Sorted by name: a/ (10 files), the FIFO b.nc, c/ (10 files), the FIFO d.nc. With one
    // thread the batch packs them in that order, and waits at each FIFO for the test.
    let mut names = Vec::new();
    for d in ["a", "c"] {
        for i in 0..10 {
            let name = format!("{d}/f{i}.nc");
            let p = root.join(&name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::copy(sample("scalars.nc"), &p).unwrap();
            names.push(name);
        }
    }
    for fifo in ["b.nc", "d.nc"] {
        let st = Command::new("mkfifo")
            .arg(root.join(fifo))
            .status()
            .unwrap();
        assert!(st.success());
    }
    let url = format!("s3://{BUCKET}/copied/");
    let copy = s3
        .dir
        .path()
        .join(BUCKET)
        .join("copied/.nc3pack/manifest-0-of-1.jsonl");
    let (first, second) = (work.path().join("first"), work.path().join("second"));
    std::fs::create_dir_all(&first).unwrap();
    std::fs::create_dir_all(&second).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let every = Duration::from_secs(2);
    let started = std::time::Instant::now();
    let mut child = s3
        .cmd(SECRET)
        .current_dir(&first)
        .env("TMPDIR", tmp.path())
        .args([
            "pack",
            "-q",
            "-j",
            "1",
            "--manifest-copy-every",
            "2",
            "--root",
        ])
        .arg(&root)
        .arg(root.join("a"))
        .arg(root.join("b.nc"))
        .arg(root.join("c"))
        .arg(root.join("d.nc"))
        .args(["-o", &url])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kills the batch if the test fails before it does.
    struct KillOnDrop<'a>(&'a mut Child);
    impl Drop for KillOnDrop<'_> {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let child = KillOnDrop(&mut child);
    // a/ is uploaded, and the batch waits at b.nc.
    let uploaded = |d: &str| {
        keys(&s3, "copied")
            .iter()
            .filter(|k| k.starts_with(d) && k.ends_with(".nc3z"))
            .count()
    };
    for _ in 0..6000 {
        if uploaded("a/") == 10 {
            break;
        }
        assert!(child.0.try_wait().unwrap().is_none(), "nc3pack ended early");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(uploaded("a/"), 10, "a/ was not uploaded within 60 s");
    // No copy before the interval has passed (the batch started after `started`).
    if started.elapsed() < every {
        assert!(!copy.exists(), "a copy before the interval");
    }
    // Once the interval has passed, the next line (b.nc's) brings a copy, while the batch
    // goes on (it then waits at d.nc).
    std::thread::sleep(every.saturating_sub(started.elapsed()) + Duration::from_millis(200));
    feed_fifo(
        &root.join("b.nc"),
        &std::fs::read(sample("scalars.nc")).unwrap(),
        child.0,
    );
    for _ in 0..6000 {
        if copy.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(copy.exists(), "no copy of the manifest within 60 s");
    for _ in 0..6000 {
        if uploaded("c/") == 10 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(uploaded("c/"), 10, "c/ was not uploaded within 60 s");
    assert!(child.0.try_wait().unwrap().is_none(), "nc3pack ended early");
    // Killed at d.nc: no final copy. The copy in the bucket records a/ and b.nc at least.
    drop(child);
    let copied = std::fs::read(&copy).unwrap();
    let recorded: Vec<String> = manifest_statuses(&copied)
        .into_iter()
        .filter(|(s, _)| s == "packed")
        .map(|(_, n)| n)
        .collect();
    for n in names.iter().filter(|n| n.starts_with("a/")) {
        assert!(recorded.contains(n), "{n} not in the copy: {recorded:?}");
    }
    assert!(recorded.contains(&"b.nc".to_string()), "{recorded:?}");
    // A rerun from another, empty, working directory reads only the bucket's copy: it skips
    // what the copy records, and keeps the other objects (complete, with no record) as
    // packed after reading their inputs.
    let (code, _, err) = output_bounded(
        s3.cmd(SECRET)
            .current_dir(&second)
            .env("TMPDIR", tmp.path())
            .args(["pack", "-j", "1", "--root"])
            .arg(&root)
            .arg(root.join("a"))
            .arg(root.join("c"))
            .args(["-o", &url]),
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("packed 0 of 20 files, 20 already packed"),
        "{err}"
    );
    let m = std::fs::read(second.join(format!(".nc3pack/{BUCKET}/copied/manifest-0-of-1.jsonl")))
        .unwrap();
    let st = manifest_statuses(&m);
    // The local manifest starts as the copy; the rerun's 20 lines follow.
    let (start, rerun) = st.split_at(st.len() - 20);
    assert!(m.starts_with(&copied));
    assert_eq!(start.len(), manifest_statuses(&copied).len());
    for (status, name) in rerun {
        let want = if recorded.contains(name) {
            "skipped"
        } else {
            "packed"
        };
        assert_eq!(status, want, "{name}");
    }
}

/// A quantized file's object whose manifest line was lost (a kill between the upload and the
/// line): the rerun opens the object, finds the input as its original, skips it and writes the
/// lost line; the object is not uploaded again.
#[test]
fn s3_batch_skips_a_quantized_object_whose_line_was_lost() {
    let Some(s3) = S3Server::start() else { return };
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("tree");
    std::fs::create_dir_all(tree.join("a")).unwrap();
    std::fs::copy(sample("gridded_sst.nc"), tree.join("a/g.nc")).unwrap();
    let run = || {
        output_bounded(
            s3.cmd(SECRET)
                .current_dir(work.path())
                .args(["pack", "--quantize", "sst=bitround:7"])
                .arg(&tree)
                .args(["-o", &format!("s3://{BUCKET}/q/")]),
        )
    };
    let (code, _, err) = run();
    assert_eq!(code, 0, "{err}");
    let object = s3.dir.path().join(BUCKET).join("q/a/g.nc.nc3z");
    let before = std::fs::read(&object).unwrap();
    let local = work
        .path()
        .join(format!(".nc3pack/{BUCKET}/q/manifest-0-of-1.jsonl"));
    let first: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&local).unwrap().trim()).unwrap();
    // Both copies of the manifest gone.
    std::fs::remove_file(&local).unwrap();
    std::fs::remove_file(
        s3.dir
            .path()
            .join(BUCKET)
            .join("q/.nc3pack/manifest-0-of-1.jsonl"),
    )
    .unwrap();
    let (code, _, err) = run();
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("1 already packed (skipped)"), "{err}");
    assert!(std::fs::read(&object).unwrap() == before);
    let line: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&local).unwrap().trim()).unwrap();
    assert_eq!(line["status"], "packed");
    for key in crate::util::LOSSY_LINE_KEYS {
        assert_eq!(line[key], first[key], "{key}");
    }
}

/// Set in the environment of the process that [`a_forked_child_reads_urls_its_parent_opened_and_opens_them_anew`]
/// starts to fork in.
const FORK_ROLE: &str = "NC3PACK_TEST_FORKING_PROCESS";

/// Forks; the child runs `f` and exits with 0 if it returns true, 1 if not (or if it panics),
/// without running destructors. Returns the child's exit code, or None when it was still
/// running after 20 s (it is then killed).
fn in_forked_child(f: impl FnOnce() -> bool) -> Option<i32> {
    // SAFETY: the process runs one test, on one thread (see the test below); the child only
    // runs `f` and exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(false);
        // SAFETY: ends the child at once, as a forked child should.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let mut status = 0;
    // Up to 20 s (2000 turns of 10 ms).
    for _ in 0..2000 {
        // SAFETY: waits for our own child.
        if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid {
            return Some(if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                -1
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: kills and reaps our own child.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, &mut status, 0);
    }
    None
}

/// A process forked after reading an archive by URL (as Python's `multiprocessing` forks its
/// workers) reads it in the child, both through the archive opened in the parent and opened
/// anew: the I/O runtime's threads and the HTTP connections do not survive `fork`, so the
/// child must make its own instead of waiting for ever.
#[test]
fn a_forked_child_reads_urls_its_parent_opened_and_opens_them_anew() {
    const NAME: &str = "remote::a_forked_child_reads_urls_its_parent_opened_and_opens_them_anew";
    if std::env::var_os(FORK_ROLE).is_none() {
        // Forking happens in a process of its own that runs this test alone: the test
        // harness's other threads could hold locks the child would then wait for.
        let work = tempfile::tempdir().unwrap();
        let (out, err) = (work.path().join("out"), work.path().join("err"));
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", NAME, "--test-threads=1", "--nocapture"])
            .env(FORK_ROLE, "1")
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap();
        let status = wait_bounded(&mut child);
        let (out, err) = (
            std::fs::read_to_string(&out).unwrap(),
            std::fs::read_to_string(&err).unwrap(),
        );
        assert!(status.success(), "{out}\n{err}");
        assert!(
            out.contains("1 passed"),
            "the test did not run: {out}\n{err}"
        );
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let z = many_blocks(work.path());
    let server = HttpServer::start(HashMap::from([(
        "sst.nc3z".to_string(),
        std::fs::read(&z).unwrap(),
    )]));
    let url = server.url("sst.nc3z");
    let opts = RemoteOptions::default();
    let read_sst = |a: &Archive| a.read_var_bytes(a.var_id("sst").unwrap());
    let want = read_sst(&Archive::open(&z).unwrap()).unwrap();
    let a = Archive::open_url(&url, &opts).unwrap();
    assert!(read_sst(&a).unwrap() == want);
    // Read again, not from the cache: from the server, in the child.
    a.clear_cache();
    let inherited = in_forked_child(|| read_sst(&a).is_ok_and(|got| got == want));
    assert_eq!(
        inherited,
        Some(0),
        "reading the parent's archive in a forked child (None: still running after 20 s)"
    );
    let reopened = in_forked_child(|| {
        Archive::open_url(&url, &opts).is_ok_and(|b| read_sst(&b).is_ok_and(|got| got == want))
    });
    assert_eq!(
        reopened,
        Some(0),
        "opening and reading the URL in a forked child (None: still running after 20 s)"
    );
    // The parent still reads.
    a.clear_cache();
    assert!(read_sst(&a).unwrap() == want);
}

/// A URL's password and a presigned URL's query string (its signature) are never printed:
/// not in error lines (those of nc3pack, and the causes they quote), not in the lines that
/// report what was done.
#[test]
fn passwords_and_query_strings_of_urls_are_not_printed() {
    const PASSWORD: &str = "pw-7d1e93b0";
    const SIGNATURE: &str = "sig-5c2a8f41";
    let work = tempfile::tempdir().unwrap();
    let z = pack("obs_points.nc", work.path(), "64KiB");
    let server = HttpServer::start(HashMap::from([
        ("obs.nc3z".to_string(), std::fs::read(&z).unwrap()),
        (
            "obs.nc".to_string(),
            std::fs::read(sample("obs_points.nc")).unwrap(),
        ),
    ]));
    let with_password = |name: &str| {
        server
            .url(name)
            .replacen("http://", &format!("http://reader:{PASSWORD}@"), 1)
    };
    let presigned = |name: &str| {
        format!(
            "{}?X-Amz-Credential=AKIA1234&X-Amz-Signature={SIGNATURE}",
            server.url(name)
        )
    };
    let clean = |what: &str, text: &str| {
        assert!(
            !text.contains(PASSWORD),
            "{what}: the password shows: {text:?}"
        );
        assert!(
            !text.contains(SIGNATURE),
            "{what}: the signature shows: {text:?}"
        );
        assert!(!text.contains("panicked"), "{what}: {text:?}");
    };
    // Errors: no such object, a query string refused, a server that is not there (the
    // request's own error quotes the URL).
    let closed = format!("http://reader:{PASSWORD}@127.0.0.1:{}/x.nc3z", free_port());
    for url in [with_password("missing.nc3z"), presigned("obs.nc3z"), closed] {
        for cmd in [
            &["info", "URL"][..],
            &["verify", "URL"],
            &["unpack", "URL", "-"],
        ] {
            let args = cmd
                .iter()
                .map(|&a| if a == "URL" { url.as_str() } else { a });
            let (code, out, err) = output(Command::new(BIN).args(args));
            assert_eq!(code, 1, "{cmd:?} {url}: {err}");
            assert_eq!(err.lines().count(), 1, "{cmd:?}: not one line: {err:?}");
            clean(&format!("{cmd:?} {url}"), &err);
            clean(&format!("{cmd:?} {url}"), &String::from_utf8_lossy(&out));
        }
    }
    // What a command reports of its work names the URL without the password.
    let url = with_password("obs.nc3z");
    let (code, out, err) = output(Command::new(BIN).arg("verify").arg(&url));
    assert_eq!(code, 0, "{err}");
    let out = String::from_utf8_lossy(&out);
    assert!(out.contains("reader:***@127.0.0.1"), "{out}");
    clean("verify", &out);
    let restored = work.path().join("restored.nc");
    let (code, _, err) = output(Command::new(BIN).arg("unpack").arg(&url).arg(&restored));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("reader:***@127.0.0.1"), "{err}");
    clean("unpack", &err);
    let packed = work.path().join("packed.nc3z");
    let (code, _, err) = output(
        Command::new(BIN)
            .arg("pack")
            .arg(with_password("obs.nc"))
            .arg(&packed),
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("reader:***@127.0.0.1"), "{err}");
    clean("pack", &err);
}

/// A remote archive is read as the version that was opened: replaced after opening, a read of
/// a block not read yet fails with "object changed since it was opened" naming the URL (in the
/// library a typed error, on the command line one line and exit 1), never the new object's
/// bytes read through the old index. Without ETags, an answer stating another length is the
/// sign.
#[test]
fn http_object_replaced_after_open_is_an_error_not_other_bytes() {
    use nc3pack::error::RemoteError;
    let work = tempfile::tempdir().unwrap();
    let z = pack("gridded_sst.nc", work.path(), "64KiB");
    let bytes = std::fs::read(&z).unwrap();
    // The same length, one byte of a block's payload changed: only its ETag tells.
    let mut same_len = bytes.clone();
    let mid = same_len.len() / 2;
    same_len[mid] ^= 0x5a;
    let server = HttpServer::start(HashMap::from([("sst.nc3z".to_string(), bytes.clone())]));
    let url = server.url("sst.nc3z");
    let changed = |e: &nc3pack::Error| matches!(e, nc3pack::Error::Remote { url: u, source: RemoteError::Changed { .. } } if *u == url);
    let a = Archive::open_url(&url, &RemoteOptions::default()).unwrap();
    server.replace("sst.nc3z", same_len.clone());
    let slab = a.slab("sst", None, None, None).unwrap();
    let err = a.read::<f32>("sst", &slab).unwrap_err();
    assert!(changed(&err), "{err:?}");
    assert!(
        err.to_string()
            .starts_with(&format!("{url}: object changed since it was opened")),
        "{err}"
    );
    // The command line: replaced between opening (two requests) and the first block's read.
    server.replace("sst.nc3z", bytes.clone());
    server.replace_at_request(3, "sst.nc3z", same_len);
    let one = [
        "slice", &url, "sst", "--start", "7,90,180", "--count", "1,1,1",
    ];
    let (code, _, err) = output(Command::new(BIN).env_remove("NC3PACK_ANON").args(one));
    assert_error(code, &err, &url, "object changed since it was opened");
    // A server without ETags: another archive of another length in its place.
    server.no_etags();
    server.replace("sst.nc3z", bytes.clone());
    std::fs::create_dir(work.path().join("other")).unwrap();
    let other = pack("gridded_sst.nc", &work.path().join("other"), "1MiB");
    let other = std::fs::read(other).unwrap();
    assert_ne!(other.len(), bytes.len());
    let a = Archive::open_url(&url, &RemoteOptions::default()).unwrap();
    server.replace("sst.nc3z", other);
    let err = a.read::<f32>("sst", &slab).unwrap_err();
    assert!(changed(&err), "{err:?}");
    // Unchanged, it reads as the local file does.
    server.replace("sst.nc3z", bytes);
    let a = Archive::open_url(&url, &RemoteOptions::default()).unwrap();
    let local = Archive::open(&z).unwrap();
    let v: Vec<f32> = a.read("sst", &slab).unwrap();
    let w: Vec<f32> = local.read("sst", &slab).unwrap();
    assert!(v
        .iter()
        .map(|x| x.to_bits())
        .eq(w.iter().map(|x| x.to_bits())));
}

/// The object of an archive on the S3 server replaced after opening: a read of a block not
/// read yet fails, naming the URL.
#[test]
fn s3_object_replaced_after_open_is_an_error() {
    use nc3pack::error::RemoteError;
    let Some(s3) = S3Server::start() else { return };
    let work = tempfile::tempdir().unwrap();
    let z = pack("gridded_sst.nc", work.path(), "64KiB");
    let mut bytes = std::fs::read(&z).unwrap();
    let url = s3.put("sst.nc3z", &bytes);
    let a = Archive::open_url(&url, &s3.options()).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x5a;
    s3.put("sst.nc3z", &bytes);
    let slab = a.slab("sst", None, None, None).unwrap();
    let err = a.read::<f32>("sst", &slab).unwrap_err();
    assert!(
        matches!(&err, nc3pack::Error::Remote { url: u, source: RemoteError::Changed { .. } } if *u == url),
        "{err:?}"
    );
}

/// A server for misbehaving on purpose: each request (its request line and `Range` header, if
/// any) gets the bytes `answer` gives, or, for None, no answer at all (the connection is held
/// open, for at most 20 s). Returns the port and the count of requests received.
fn misbehaving(
    answer: impl Fn(&str, Option<&str>) -> Option<Vec<u8>> + Send + Sync + 'static,
) -> (u16, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicU64::new(0));
    let (answer, n) = (Arc::new(answer), Arc::clone(&count));
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            let (answer, n) = (Arc::clone(&answer), Arc::clone(&n));
            std::thread::spawn(move || {
                s.set_read_timeout(Some(Duration::from_secs(20))).ok();
                let mut r = BufReader::new(s.try_clone().unwrap());
                for _ in 0..100 {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let mut range = None;
                    for _ in 0..100 {
                        let mut h = String::new();
                        if r.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                            break;
                        }
                        if let Some((k, v)) = h.split_once(':') {
                            if k.eq_ignore_ascii_case("range") {
                                range = Some(v.trim().to_string());
                            }
                        }
                    }
                    n.fetch_add(1, Ordering::SeqCst);
                    match answer(line.trim(), range.as_deref()) {
                        Some(reply) => {
                            if s.write_all(&reply).is_err() {
                                return;
                            }
                        }
                        None => {
                            std::thread::sleep(Duration::from_secs(20));
                            return;
                        }
                    }
                }
            });
        }
    });
    (port, count)
}

/// An answer with this status line, headers and body.
fn reply(status: &str, headers: &str, body: &[u8]) -> Vec<u8> {
    let mut v = format!(
        "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    v.extend_from_slice(body);
    v
}

/// The command line with an S3 endpoint at `port` and credentials in its environment.
fn s3_cmd(port: u16) -> Command {
    let mut c = Command::new(BIN);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("AWS_") || k == "NC3PACK_ANON" {
            c.env_remove(k);
        }
    }
    c.env("AWS_ACCESS_KEY_ID", KEY)
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}"))
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_REGION", "us-east-1");
    c
}

/// A missing bucket, a missing object and a server error are three different messages, for a
/// streamed input (`pack URL`) as for a ranged read (`info URL`).
#[test]
fn a_missing_bucket_and_a_server_error_are_not_a_missing_object() {
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("never.nc3z");
    let (port, _) = misbehaving(|line, _| {
        let (status, code) = if line.contains("/nobucket/") {
            ("404 Not Found", "NoSuchBucket")
        } else if line.contains("/bkt/missing") {
            ("404 Not Found", "NoSuchKey")
        } else {
            ("500 Internal Server Error", "InternalError")
        };
        let body = format!("<Error><Code>{code}</Code><Message>m</Message></Error>");
        Some(reply(status, "", body.as_bytes()))
    });
    for cmd in ["pack", "info"] {
        let run = |url: &str| {
            let mut c = s3_cmd(port);
            c.args([cmd, url]);
            if cmd == "pack" {
                c.arg(&out);
            }
            output(&mut c)
        };
        let url = "s3://nobucket/in.nc";
        let (code, _, err) = run(url);
        assert_error(code, &err, url, "no such bucket");
        let url = "s3://bkt/missing.nc";
        let (code, _, err) = run(url);
        assert_error(code, &err, url, "no such object");
        let url = "s3://bkt/in.nc";
        let (code, _, err) = run(url);
        assert_error(
            code,
            &err,
            url,
            "server error 500 Internal Server Error (InternalError)",
        );
    }
    // Plain HTTP: a 500 is a server error, a 404 no such object.
    let (port, _) = misbehaving(|line, _| {
        Some(if line.contains("/missing") {
            reply("404 Not Found", "", b"")
        } else {
            reply("500 Internal Server Error", "", b"")
        })
    });
    for cmd in ["pack", "info"] {
        for (name, cause) in [
            ("in.nc", "server error 500 Internal Server Error"),
            ("missing.nc", "no such object"),
        ] {
            let url = format!("http://127.0.0.1:{port}/{name}");
            let mut c = Command::new(BIN);
            c.env_remove("NC3PACK_ANON").args([cmd, &url]);
            if cmd == "pack" {
                c.arg(&out);
            }
            let (code, _, err) = output(&mut c);
            assert_error(code, &err, &url, cause);
        }
    }
    assert!(!out.exists());
}

/// A server that sends more bytes than a range asked for: the message says so (not
/// "unexpected end of file").
#[test]
fn a_body_longer_than_the_range_asked_is_named() {
    let work = tempfile::tempdir().unwrap();
    let z = pack("gridded_sst.nc", work.path(), "64KiB");
    let bytes = std::fs::read(&z).unwrap();
    let len = bytes.len() as u64;
    let (port, _) = misbehaving(move |_, range| {
        let (a, b) = range.and_then(|r| parse_range(r, len))?;
        // The range asked for, as Content-Range says, and 100 bytes more.
        let mut body = bytes[a as usize..b as usize].to_vec();
        body.extend_from_slice(&[0u8; 100]);
        let headers = format!("Content-Range: bytes {a}-{}/{len}\r\n", b - 1);
        Some(reply("206 Partial Content", &headers, &body))
    });
    let url = format!("http://127.0.0.1:{port}/sst.nc3z");
    let (code, _, err) = output(
        Command::new(BIN)
            .env_remove("NC3PACK_ANON")
            .args(["info", &url]),
    );
    assert_error(
        code,
        &err,
        &url,
        "the server sent more bytes than the range asked",
    );
    let err = RemoteReader::open(&url, &RemoteOptions::default()).unwrap_err();
    assert!(
        matches!(
            &err,
            nc3pack::Error::Remote {
                source: nc3pack::error::RemoteError::BodyTooLong { .. },
                ..
            }
        ),
        "{err:?}"
    );
}

/// A server that never answers: the request times out after the options' timeout, is retried
/// while the retry time allows, and the message says how many tries and how long it took.
#[test]
fn a_stalled_server_fails_after_the_timeout_saying_its_tries_and_time() {
    let (port, count) = misbehaving(|_, _| None);
    let url = format!("http://127.0.0.1:{port}/in.nc");
    // Requests time out after 1 s; no retry starts after 2 s.
    let opts = RemoteOptions::default()
        .with_timeout(Duration::from_secs(1))
        .with_retries(5, Duration::from_secs(2));
    let t = std::time::Instant::now();
    let err = nc3pack::remote::open_stream(&url, &opts).unwrap_err();
    let took = t.elapsed();
    let msg = err.to_string();
    assert!(took < Duration::from_secs(15), "{took:?}: {msg}");
    let tries = count.load(Ordering::SeqCst);
    assert!(tries >= 2, "not retried: {msg}");
    let prefix = format!("{url}: request failed: timed out, after {tries} tries in ");
    assert!(
        msg.starts_with(&prefix),
        "{msg:?} does not start with {prefix:?}"
    );
    // The time it took, in seconds.
    let secs: f64 = msg[prefix.len()..]
        .strip_suffix(" s")
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no time in {msg:?}"));
    assert!(
        secs >= 2.0 && secs <= took.as_secs_f64() + 0.1,
        "{secs} s in {msg:?}, took {took:?}"
    );
}
