//! `nc3pack serve`: a directory of archives served over HTTP as the directory of the originals,
//! checked with curl — HEAD, whole GETs, single, open-ended, suffix and unsatisfiable ranges
//! against the originals' bytes for CDF-1, CDF-2, CDF-5 and record files; 404 for what is not
//! an archive's original, 405 for other methods; a damaged block gives 500 (or a cut body)
//! and one line on stderr, never wrong bytes; a non-loopback address is refused without
//! `--public`. Each test ends its server whatever happens (a guard), and every wait is
//! bounded. Without curl the tests are skipped (`util::skip`), which fails under CI.

use crate::util::{have_tool, nc3pack, sample, temp_dir, BIN};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Block size the archives are packed with: small, so that ranges cross many blocks.
const BLOCK: u32 = 4096;

/// A running `nc3pack serve`; dropping it kills it.
struct Server {
    child: Child,
    addr: String,
    log: PathBuf,
}

impl Server {
    /// Serves `archives` on a free loopback port, waiting (at most 20 s) for the address.
    fn start(archives: &Path, scratch: &Path) -> Server {
        Server::start_with(archives, scratch, None, &[])
    }

    /// [`Server::start`] with at most `nofile` file descriptors, if given, and `args`.
    fn start_with(archives: &Path, scratch: &Path, nofile: Option<u64>, args: &[&str]) -> Server {
        use std::os::unix::process::CommandExt;
        let log = scratch.join("serve.log");
        let mut cmd = Command::new(BIN);
        if let Some(n) = nofile {
            let limit = libc::rlimit {
                rlim_cur: n,
                rlim_max: n,
            };
            // SAFETY: between fork and exec the child calls only setrlimit, which is
            // async-signal-safe, on a value of its own.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                });
            }
        }
        let child = cmd
            .arg("serve")
            .arg(archives)
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start nc3pack serve");
        let mut s = Server {
            child,
            addr: String::new(),
            log,
        };
        let t = Instant::now();
        loop {
            let text = s.log();
            if let Some(at) = text.find("http://") {
                let rest = &text[at + "http://".len()..];
                s.addr = rest[..rest.find('/').expect("an address")].to_owned();
                return s;
            }
            if let Some(status) = s.child.try_wait().unwrap() {
                panic!("nc3pack serve ended ({status}) before serving:\n{text}");
            }
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "no address after 20 s:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// What the server wrote on stderr so far.
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A response as curl got it.
#[derive(Debug)]
struct Got {
    /// curl's exit code (0: the whole body arrived).
    code: i32,
    status: u16,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

impl Got {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// `curl -sS ARGS URL` with a 30 s limit, headers and body apart.
fn curl(args: &[&str], url: &str, scratch: &Path) -> Got {
    let head = scratch.join(format!("curl-{:?}.head", std::thread::current().id()));
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "30", "-D"])
        .arg(&head)
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .output()
        .expect("run curl");
    let text = std::fs::read_to_string(&head).unwrap_or_default();
    let mut lines = text.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Got {
        code: out.status.code().unwrap_or(-1),
        status,
        headers,
        body: out.stdout,
    }
}

/// Packs `original` into `dir/NAME.nc3z`.
fn pack(original: &Path, dir: &Path, name: &str) {
    let opts = crate::util::preset_options(false, Some(BLOCK), 1).with_force(true);
    std::fs::create_dir_all(dir).unwrap();
    nc3pack::pack_file(original, &dir.join(format!("{name}.nc3z")), &opts)
        .unwrap_or_else(|e| panic!("pack {}: {e}", original.display()));
}

/// The samples served, by their path on the server: CDF-1 with records, CDF-1 fixed-size,
/// CDF-2 (6 MB: many chunks), CDF-5, and one in a subdirectory.
const CASES: [(&str, &str); 5] = [
    ("classic_records.nc", "/classic_records.nc"),
    ("obs_points.nc", "/obs_points.nc"),
    ("gridded_sst.nc", "/sub/dir/gridded_sst.nc"),
    ("cdf5_types.nc", "/cdf5_types.nc"),
    ("offset64_mixed.nc", "/offset64_mixed.nc"),
];

/// The archives of [`CASES`] in `scratch/archives`, with other files beside them.
fn archives(scratch: &Path) -> PathBuf {
    let dir = scratch.join("archives");
    for (name, at) in CASES {
        let at = Path::new(at.trim_start_matches('/'));
        let parent = dir.join(at.parent().unwrap());
        pack(
            &sample(name),
            &parent,
            at.file_name().unwrap().to_str().unwrap(),
        );
    }
    std::fs::write(dir.join("notes.txt"), b"not served").unwrap();
    std::fs::copy(sample("obs_points.nc"), dir.join("plain.nc")).unwrap();
    dir
}

#[test]
fn serves_the_originals_with_byte_ranges() {
    if !have_tool("curl", "apt-get install curl") {
        return;
    }
    let scratch = temp_dir();
    let dir = archives(scratch.path());
    let server = Server::start(&dir, scratch.path());
    let tmp = scratch.path();
    for (name, at) in CASES {
        let original = std::fs::read(sample(name)).unwrap();
        let len = original.len();
        let url = server.url(at);
        let what = |w: &str| format!("{at} {w}: {}", server.log());

        let h = curl(&["-I"], &url, tmp);
        assert_eq!((h.code, h.status), (0, 200), "{}", what("HEAD"));
        assert_eq!(h.header("content-length"), Some(&*len.to_string()));
        assert_eq!(h.header("accept-ranges"), Some("bytes"));
        assert_eq!(h.header("content-type"), Some("application/x-netcdf"));
        let etag = h.header("etag").expect("an ETag").to_owned();
        assert!(etag.starts_with('"') && etag.len() > 10, "{etag}");
        let modified = h.header("last-modified").expect("Last-Modified").to_owned();

        let g = curl(&[], &url, tmp);
        assert_eq!((g.code, g.status), (0, 200), "{}", what("GET"));
        assert!(g.body == original, "{}", what("GET: not the original"));
        assert_eq!(g.header("etag"), Some(&*etag));

        // Single ranges: inside, across the end, open-ended, suffix, one byte, the last byte.
        let mid = len / 3;
        let ranges: Vec<(String, usize, usize)> = vec![
            (format!("{mid}-{}", mid + len / 4), mid, mid + len / 4 + 1),
            (format!("{}-{}", len - 10, len + 1000), len - 10, len),
            (format!("{mid}-"), mid, len),
            ("-100".to_owned(), len - 100.min(len), len),
            (format!("-{}", len + 5), 0, len),
            ("0-0".to_owned(), 0, 1),
            (format!("{}-", len - 1), len - 1, len),
        ];
        for (spec, a, b) in ranges {
            let header = format!("Range: bytes={spec}");
            let r = curl(&["-H", &header], &url, tmp);
            let w = what(&format!("bytes={spec}"));
            assert_eq!((r.code, r.status), (0, 206), "{w}");
            assert!(r.body == original[a..b], "{w}: not the original's bytes");
            let range = format!("bytes {a}-{}/{len}", b - 1);
            assert_eq!(r.header("content-range"), Some(&*range), "{w}");
            assert_eq!(r.header("content-length"), Some(&*(b - a).to_string()));
        }
        // HEAD of a range: its headers, no body.
        let r = curl(&["-I", "-H", "Range: bytes=4-7"], &url, tmp);
        assert_eq!(r.status, 206, "{}", what("HEAD range"));
        assert_eq!(r.header("content-length"), Some("4"));

        // Unsatisfiable: from the end on, and an empty suffix.
        for spec in [
            format!("{len}-"),
            format!("{}-{}", len + 10, len + 20),
            "-0".into(),
        ] {
            let header = format!("Range: bytes={spec}");
            let r = curl(&["-H", &header], &url, tmp);
            assert_eq!(r.status, 416, "{}", what(&spec));
            let want = format!("bytes */{len}");
            assert_eq!(r.header("content-range"), Some(&*want), "{}", what(&spec));
        }
        // Several ranges, and a range that does not parse: the whole file.
        for spec in ["bytes=0-1,5-6", "bytes=9-3", "lines=1-2"] {
            let header = format!("Range: {spec}");
            let r = curl(&["-H", &header], &url, tmp);
            assert_eq!((r.code, r.status), (0, 200), "{}", what(spec));
            assert!(r.body == original, "{}", what(spec));
        }
        // Conditional requests: the same ETag or date answers 304; an If-Range of another
        // tag gives the whole file instead of the range.
        let inm = format!("If-None-Match: {etag}");
        assert_eq!(curl(&["-H", &inm], &url, tmp).status, 304);
        let ims = format!("If-Modified-Since: {modified}");
        assert_eq!(curl(&["-H", &ims], &url, tmp).status, 304);
        let r = curl(
            &["-H", "Range: bytes=0-3", "-H", "If-Range: \"other\""],
            &url,
            tmp,
        );
        assert_eq!(r.status, 200, "{}", what("If-Range"));
        let ifr = format!("If-Range: {etag}");
        let r = curl(&["-H", "Range: bytes=0-3", "-H", &ifr], &url, tmp);
        assert_eq!((r.status, &r.body[..]), (206, &original[..4]));
        // If-Match (strong: the tag, a list holding it, or *; not a weak tag) and
        // If-Unmodified-Since: the range, or 412 when the file is not the one asked for.
        let weak = format!("If-Match: W/{etag}");
        let listed = format!("If-Match: \"other\", {etag}");
        for (cond, status) in [
            (format!("If-Match: {etag}"), 206),
            (listed, 206),
            ("If-Match: *".to_string(), 206),
            ("If-Match: \"other\"".to_string(), 412),
            (weak, 412),
            (format!("If-Unmodified-Since: {modified}"), 206),
            (
                "If-Unmodified-Since: Thu, 01 Jan 1970 00:00:00 GMT".to_string(),
                412,
            ),
            ("If-Unmodified-Since: not a date".to_string(), 206),
        ] {
            let r = curl(&["-H", "Range: bytes=0-3", "-H", &cond], &url, tmp);
            assert_eq!(r.status, status, "{}", what(&cond));
            if status == 206 {
                assert!(r.body == original[..4], "{}", what(&cond));
            }
        }
    }

    // Not an archive's original: 404.
    for path in [
        "/",
        "/missing.nc",
        "/obs_points.nc.nc3z",
        "/notes.txt",
        "/plain.nc",
        "/sub",
        "/sub/",
        "/sub/dir",
        "/../archives/obs_points.nc",
        "/sub/%2e%2e/obs_points.nc",
        "/sub%2fdir/gridded_sst.nc",
    ] {
        let r = curl(&["--path-as-is"], &server.url(path), tmp);
        assert_eq!(r.status, 404, "{path}: {r:?}");
    }
    // Percent-encoded names are decoded.
    let r = curl(&["-I"], &server.url("/sub/dir/gridded%5Fsst.nc"), tmp);
    assert_eq!(r.status, 200);
    // Read-only: other methods 405, with Allow.
    for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"] {
        let r = curl(&["-X", method], &server.url("/obs_points.nc"), tmp);
        assert_eq!(r.status, 405, "{method}");
        assert_eq!(r.header("allow"), Some("GET, HEAD"), "{method}");
    }
    assert_eq!(server.log().lines().count(), 1, "{}", server.log());
}

#[test]
fn many_range_requests_at_once_read_the_right_bytes() {
    if !have_tool("curl", "apt-get install curl") {
        return;
    }
    let scratch = temp_dir();
    let dir = scratch.path().join("archives");
    pack(&sample("gridded_sst.nc"), &dir, "sst.nc");
    let server = Server::start(&dir, scratch.path());
    let original = std::fs::read(sample("gridded_sst.nc")).unwrap();
    let len = original.len();
    let url = server.url("/sst.nc");
    std::thread::scope(|s| {
        for t in 0..8usize {
            let (url, original, tmp) = (&url, &original, scratch.path());
            s.spawn(move || {
                for k in 0..6usize {
                    let a = (t * 7919 + k * 104_729) * 37 % len;
                    let b = (a + 300_000 + k * 1000).min(len);
                    let header = format!("Range: bytes={a}-{}", b - 1);
                    let r = curl(&["-H", &header], url, tmp);
                    assert_eq!(r.status, 206);
                    assert!(r.body == original[a..b], "{header}");
                }
            });
        }
    });
}

#[test]
fn a_damaged_block_gives_a_500_or_a_cut_body_never_wrong_bytes() {
    if !have_tool("curl", "apt-get install curl") {
        return;
    }
    let scratch = temp_dir();
    let dir = scratch.path().join("archives");
    let original_path = sample("gridded_sst.nc");
    pack(&original_path, &dir, "sst.nc");
    pack(&original_path, &dir, "intact.nc");
    // A block past the first MiB.
    crate::util::damage_a_block(&dir.join("sst.nc.nc3z"), "sst", |n| n / 2);

    let server = Server::start(&dir, scratch.path());
    let original = std::fs::read(&original_path).unwrap();
    let tmp = scratch.path();
    // The whole file: the headers promise every byte, the body stops short (curl fails).
    let g = curl(&[], &server.url("/sst.nc"), tmp);
    assert_eq!(g.status, 200);
    assert_ne!(g.code, 0, "curl took a cut body as whole");
    assert!(g.body.len() < original.len() && g.body[..] == original[..g.body.len()]);
    // Ranges of 64 KiB over the whole file: the original's bytes, or 500.
    let piece = 64 << 10;
    let mut failed = Vec::new();
    for (k, want) in original.chunks(piece).enumerate() {
        let a = k * piece;
        let header = format!("Range: bytes={a}-{}", a + want.len() - 1);
        let r = curl(&["-H", &header], &server.url("/sst.nc"), tmp);
        match r.status {
            206 => assert!(r.code == 0 && r.body == want, "{header}: wrong bytes"),
            500 => failed.push(k),
            other => panic!("{header}: status {other}"),
        }
    }
    // One block of 4 KiB: at most two pieces of 64 KiB, next to each other.
    assert!(!failed.is_empty() && failed.len() <= 2, "{failed:?}");
    assert_eq!(failed.last().unwrap() - failed[0] + 1, failed.len());
    // The other archive is unaffected.
    let g = curl(&[], &server.url("/intact.nc"), tmp);
    assert!(g.code == 0 && g.body == original);
    let log = server.log();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("sst.nc.nc3z")).collect();
    assert_eq!(lines.len(), 1, "one line about the damage:\n{log}");
    assert!(lines[0].contains("block"), "{}", lines[0]);
}

/// Clients holding more connections open than the server has file descriptors, for longer
/// than 10 s (the server once gave up then): the server waits, logs it once, and answers
/// again once they close.
#[test]
fn a_server_out_of_file_descriptors_waits_and_serves_again() {
    if !have_tool("curl", "apt-get install curl") {
        return;
    }
    let scratch = temp_dir();
    let dir = archives(scratch.path());
    let mut server = Server::start_with(&dir, scratch.path(), Some(48), &[]);
    let addr: std::net::SocketAddr = server.addr.parse().unwrap();
    let held: Vec<std::net::TcpStream> = (0..80)
        .filter_map(|_| std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok())
        .collect();
    assert_eq!(held.len(), 80);
    std::thread::sleep(Duration::from_secs(11));
    assert!(
        server.child.try_wait().unwrap().is_none(),
        "the server ended:\n{}",
        server.log()
    );
    drop(held);
    let t = Instant::now();
    loop {
        let got = curl(&["-I"], &server.url("/classic_records.nc"), scratch.path());
        if got.status == 200 {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "no answer after 20 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let log = server.log();
    assert!(log.contains("accept: Too many open files"), "{log}");
    assert_eq!(log.matches("accept:").count(), 1, "{log}");
}

/// `DIR/big.nc.nc3z`: the archive of a CDF-1 file of one int variable of 16 Mi zeros (64 MiB;
/// its original is made sparse in `scratch`), packed small.
fn big_archive(scratch: &Path, dir: &Path) {
    use std::io::Write;
    let n: u32 = 16 << 20;
    let name = |b: &mut Vec<u8>, s: &str| {
        b.extend_from_slice(&(s.len() as u32).to_be_bytes());
        b.extend_from_slice(s.as_bytes());
        b.resize(b.len().next_multiple_of(4), 0);
    };
    let mut h = b"CDF\x01\0\0\0\0\0\0\0\x0a\0\0\0\x01".to_vec();
    name(&mut h, "x");
    h.extend_from_slice(&n.to_be_bytes());
    h.extend_from_slice(&[0; 8]);
    h.extend_from_slice(&[0, 0, 0, 0x0b, 0, 0, 0, 1]);
    name(&mut h, "v");
    h.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4]);
    h.extend_from_slice(&(4 * n).to_be_bytes());
    let begin = h.len() as u32 + 4;
    h.extend_from_slice(&begin.to_be_bytes());
    let original = scratch.join("big.nc");
    let mut f = std::fs::File::create(&original).unwrap();
    f.write_all(&h).unwrap();
    f.set_len(u64::from(begin) + 4 * u64::from(n)).unwrap();
    drop(f);
    std::fs::create_dir_all(dir).unwrap();
    nc3pack::pack_file(
        &original,
        &dir.join("big.nc.nc3z"),
        &nc3pack::PackOptions::default().with_threads(1),
    )
    .unwrap();
}

/// With one place for bodies, held by a client that asked for 64 MB and reads nothing, a
/// HEAD, a 404 and a 304 still answer (they send no body, so they take no place).
#[test]
fn answers_without_a_body_do_not_wait_behind_a_client_that_does_not_read() {
    if !have_tool("curl", "apt-get install curl") {
        return;
    }
    use std::io::Write;
    let scratch = temp_dir();
    let dir = scratch.path().join("archives");
    big_archive(scratch.path(), &dir);
    let server = Server::start_with(&dir, scratch.path(), None, &["--max-requests", "1"]);
    let addr: std::net::SocketAddr = server.addr.parse().unwrap();
    let mut held = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    held.write_all(b"GET /big.nc HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    // The body has filled the sockets' buffers and holds the one place.
    std::thread::sleep(Duration::from_millis(1500));
    let url = server.url("/big.nc");
    let head = curl(&["-I", "--max-time", "10"], &url, scratch.path());
    assert_eq!((head.code, head.status), (0, 200));
    let missing = curl(
        &["--max-time", "10"],
        &server.url("/nope.nc"),
        scratch.path(),
    );
    assert_eq!((missing.code, missing.status), (0, 404));
    let etag = head.headers.get("etag").expect("an ETag").clone();
    let inm = format!("If-None-Match: {etag}");
    let same = curl(&["-H", &inm, "--max-time", "10"], &url, scratch.path());
    assert_eq!((same.code, same.status), (0, 304));
    drop(held);
}

/// `--send-timeout`: a client that asked for 64 MB and reads nothing loses its connection and
/// its place (the only one) after the timeout, so the next GET is served; a client that reads
/// slowly but steadily, with pauses shorter than the timeout, gets its whole body.
#[test]
fn a_client_that_stops_reading_is_cut_after_the_send_timeout() {
    if !have_tool("curl", "apt-get install curl") {
        return;
    }
    use std::io::{Read, Write};
    let scratch = temp_dir();
    let dir = scratch.path().join("archives");
    big_archive(scratch.path(), &dir);
    let server = Server::start_with(
        &dir,
        scratch.path(),
        None,
        &["--max-requests", "1", "--send-timeout", "2"],
    );
    let addr: std::net::SocketAddr = server.addr.parse().unwrap();

    // Steady but slow: 6 MiB taken 256 KiB every 0.25 s (about 1 MiB/s), pauses far below 2 s.
    let mut slow = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    slow.write_all(
        b"GET /big.nc HTTP/1.1\r\nHost: x\r\nRange: bytes=0-6291455\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 256 << 10];
    for _ in 0..200 {
        std::thread::sleep(Duration::from_millis(250));
        let mut piece = 0;
        while piece < buf.len() {
            match slow.read(&mut buf[piece..]) {
                Ok(0) => break,
                Ok(k) => piece += k,
                Err(e) => panic!("the slow client was cut after {} bytes: {e}", got.len()),
            }
        }
        got.extend_from_slice(&buf[..piece]);
        if piece < buf.len() {
            break;
        }
    }
    let body_at = got
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("headers")
        + 4;
    assert!(got.starts_with(b"HTTP/1.1 206"), "{:?}", &got[..body_at]);
    assert_eq!(got.len() - body_at, 6 << 20, "the slow client's body");

    // Stopped: the one place is held until the timeout closes the connection.
    let mut held = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    held.write_all(b"GET /big.nc HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let started = std::time::Instant::now();
    let next = curl(
        &["-r", "0-99", "--max-time", "30"],
        &server.url("/big.nc"),
        scratch.path(),
    );
    assert_eq!(
        (next.code, next.status),
        (0, 206),
        "the GET after the stalled one"
    );
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    // The stalled connection was closed: what is left in the buffers, then the end.
    held.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut total = 0usize;
    loop {
        match held.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(k) => total += k,
        }
    }
    assert!(total < 64 << 20, "the stalled client got the whole body");
    assert!(
        server.log().contains("took no data for 2s"),
        "{}",
        server.log()
    );
}

#[test]
fn a_non_loopback_address_needs_public() {
    let scratch = temp_dir();
    let dir = scratch.path().to_str().unwrap();
    let out = nc3pack(&["serve", dir, "--listen", "0.0.0.0:0"]).expect(1);
    assert!(out.stderr.contains("loopback"), "{}", out.stderr);
    assert!(out.stderr.contains("--public"), "{}", out.stderr);
    let out = nc3pack(&["serve", "/nonexistent-dir", "--listen", "127.0.0.1:0"]).expect(1);
    assert!(out.stderr.contains("nonexistent-dir"), "{}", out.stderr);
}

/// `ncdump -h 'http://…/x.nc#mode=bytes'` equals `ncdump -h` of the original, where netCDF-C
/// was built with byte-range support (`nc-config --has-byterange`); Debian's netCDF-C 4.9.0 is
/// not (docs/serve.md), so there this checks nothing and says so on stderr.
#[test]
fn ncdump_reads_a_served_original_with_mode_bytes() {
    if !have_tool("ncdump", "apt-get install netcdf-bin") {
        return;
    }
    let has = Command::new("nc-config")
        .arg("--has-byterange")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "yes")
        .unwrap_or(false);
    if !has {
        eprintln!("not tried: this netCDF-C has no byte-range support (nc-config --has-byterange)");
        return;
    }
    let scratch = temp_dir();
    let dir = archives(scratch.path());
    let server = Server::start(&dir, scratch.path());
    for (name, at) in CASES {
        let want = Command::new("ncdump")
            .arg("-h")
            .arg(sample(name))
            .output()
            .unwrap();
        let url = format!("{}#mode=bytes", server.url(at));
        let got = Command::new("ncdump").arg("-h").arg(&url).output().unwrap();
        assert!(got.status.success(), "{url}: {got:?}");
        // The first line names the dataset: by its file name in the one, the URL's in the other.
        let body = |o: &[u8]| {
            String::from_utf8_lossy(o)
                .lines()
                .skip(1)
                .collect::<Vec<_>>()
                .join("\n")
        };
        crate::util::assert_text_eq(&url, &body(&want.stdout), &body(&got.stdout));
    }
}
