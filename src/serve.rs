//! A directory of archives served read-only over HTTP/1.1 as the directory of their originals
//! (`nc3pack serve`; the `serve` feature): `NAME.nc3z` below the directory is served at
//! `/NAME` (subdirectories kept: `DIR/sub/x.nc.nc3z` at `/sub/x.nc`), with the original's
//! bytes rebuilt on demand by an [`OriginalReader`], decoding only the blocks that cover the
//! bytes asked for. Every other path answers 404 (no listings, no other files).
//!
//! - `GET` and `HEAD`; any other method answers 405 with `Allow: GET, HEAD`.
//! - `Range` with one range (`bytes=a-b`, `bytes=a-`, `bytes=-n`): 206 with `Content-Range`;
//!   416 with `Content-Range: bytes */LEN` when it starts past the end. A `Range` of several
//!   ranges, or one that does not parse, is ignored: 200 with the whole file (as RFC 9110
//!   allows). `If-Range` (an ETag or a date) is honoured; `If-None-Match` and
//!   `If-Modified-Since` answer 304.
//! - `Accept-Ranges: bytes`, `Content-Length`, `Content-Type: application/x-netcdf`,
//!   `Last-Modified` (the archive's modification time) and a strong `ETag` made of the hash of
//!   the original recorded in the archive (the same bytes, the same tag, whatever the packing).
//! - Bodies are streamed a chunk of [`CHUNK`] bytes at a time, each read on tokio's blocking
//!   threads, the next chunk read while one is sent; a response holds at most three chunks
//!   in memory.
//! - At most [`ServeOptions::with_max_requests`] bodies are sent at once (a semaphore; the
//!   others wait: answers without a body, 404, HEAD, 304, do not), by a bounded set of open archives sharing one cache budget; an archive
//!   whose state (device, inode, size, modification time) changed is opened again, and a
//!   response already started keeps reading the archive it started with.
//! - A client that takes no data of a body for [`ServeOptions::with_send_timeout`] (60 s by
//!   default, as nginx's `send_timeout`) has its connection closed, and its place with it:
//!   clients that stop reading cannot hold every place for ever.
//! - A read that touches a damaged block answers 500 when it is the first chunk, and cuts the
//!   connection when the headers were already sent (the `Content-Length` is then not reached,
//!   so no client takes the body as whole); either way one line on stderr names the file and
//!   the block. Never wrong bytes.
//! - Loopback addresses only, unless [`ServeOptions::with_public`]: the server has no
//!   authentication and no TLS.

use crate::error::{Error, Result};
use crate::read::originals::{Ident, Originals};
use crate::OriginalReader;
use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::HashSet;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

/// The suffix of the archives served.
const SUFFIX: &str = ".nc3z";

/// The bytes of a response body read at a time.
pub const CHUNK: usize = 1 << 20;

/// Most distinct lines about damaged blocks written to stderr.
const MAX_LOGGED: usize = 10_000;

/// How long a client may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// How often a connection checks whether its client still takes the body's data, at most.
const STALL_CHECK: Duration = Duration::from_secs(5);

/// How a directory of archives is served ([`Server::bind`]).
///
/// ```
/// let o = nc3pack::serve::ServeOptions::default().with_max_requests(16);
/// assert_eq!(o.max_requests(), 16);
/// assert!(o.listen().ip().is_loopback());
/// ```
#[derive(Debug, Clone)]
pub struct ServeOptions {
    listen: SocketAddr,
    public: bool,
    max_requests: usize,
    cache_bytes: u64,
    max_open: usize,
    send_timeout: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            public: false,
            max_requests: 64,
            cache_bytes: 512 << 20,
            max_open: 256,
            send_timeout: Duration::from_secs(60),
        }
    }
}

impl ServeOptions {
    /// The address and port to listen on (default `127.0.0.1:8080`; port 0: any free port,
    /// [`Server::local_addr`] tells which).
    ///
    /// ```
    /// let o = nc3pack::serve::ServeOptions::default().with_listen("127.0.0.1:0".parse()?);
    /// assert_eq!(o.listen().port(), 0);
    /// # Ok::<(), std::net::AddrParseError>(())
    /// ```
    pub fn with_listen(mut self, addr: SocketAddr) -> Self {
        self.listen = addr;
        self
    }

    /// The address to listen on.
    ///
    /// ```
    /// assert_eq!(nc3pack::serve::ServeOptions::default().listen().port(), 8080);
    /// ```
    pub fn listen(&self) -> SocketAddr {
        self.listen
    }

    /// Allows listening on an address other than loopback (the server has no authentication:
    /// anyone who reaches the port reads every archive of the directory).
    ///
    /// ```
    /// let o = nc3pack::serve::ServeOptions::default()
    ///     .with_listen("0.0.0.0:8080".parse()?)
    ///     .with_public(true);
    /// # Ok::<(), std::net::AddrParseError>(())
    /// ```
    pub fn with_public(mut self, on: bool) -> Self {
        self.public = on;
        self
    }

    /// Most responses served at once (default 64; at least 1); further requests wait.
    ///
    /// ```
    /// assert_eq!(nc3pack::serve::ServeOptions::default().with_max_requests(0).max_requests(), 1);
    /// ```
    pub fn with_max_requests(mut self, n: usize) -> Self {
        self.max_requests = n.max(1);
        self
    }

    /// Most responses served at once.
    ///
    /// ```
    /// assert_eq!(nc3pack::serve::ServeOptions::default().max_requests(), 64);
    /// ```
    pub fn max_requests(&self) -> usize {
        self.max_requests
    }

    /// The budget of decoded blocks that the open archives' caches share (default 512 MiB).
    ///
    /// ```
    /// let o = nc3pack::serve::ServeOptions::default().with_cache_bytes(64 << 20);
    /// ```
    pub fn with_cache_bytes(mut self, bytes: u64) -> Self {
        self.cache_bytes = bytes;
        self
    }

    /// Most archives kept open at once (default 256; at least 1).
    ///
    /// ```
    /// let o = nc3pack::serve::ServeOptions::default().with_max_open(8);
    /// ```
    pub fn with_max_open(mut self, n: usize) -> Self {
        self.max_open = n.max(1);
        self
    }

    /// How long a client may take no data of a response's body before its connection is
    /// closed (default 60 s, as nginx's `send_timeout`; at least 1 ms). The clock runs only
    /// while the body waits on the client, not while the server reads the archive.
    ///
    /// ```
    /// use std::time::Duration;
    /// let o = nc3pack::serve::ServeOptions::default().with_send_timeout(Duration::from_secs(10));
    /// assert_eq!(o.send_timeout(), Duration::from_secs(10));
    /// ```
    pub fn with_send_timeout(mut self, t: Duration) -> Self {
        self.send_timeout = t.max(Duration::from_millis(1));
        self
    }

    /// How long a client may take no data of a response's body.
    ///
    /// ```
    /// let o = nc3pack::serve::ServeOptions::default();
    /// assert_eq!(o.send_timeout(), std::time::Duration::from_secs(60));
    /// ```
    pub fn send_timeout(&self) -> Duration {
        self.send_timeout
    }
}

/// A server bound to its address ([`Server::bind`]), serving once [`Server::run`] is called.
pub struct Server {
    runtime: tokio::runtime::Runtime,
    listener: tokio::net::TcpListener,
    addr: SocketAddr,
    shared: Arc<ServeState>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("root", &self.shared.root)
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Binds the listening socket for serving the directory `archives` (see the module's
    /// documentation for what is served).
    ///
    /// ```no_run
    /// let opts = nc3pack::serve::ServeOptions::default().with_listen("127.0.0.1:0".parse()?);
    /// let server = nc3pack::serve::Server::bind("/data/archives".as_ref(), &opts)?;
    /// println!("http://{}/", server.local_addr());
    /// server.run()?; // serves until the process ends
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when `archives` is not a directory, when the address is not a loopback
    /// address and [`ServeOptions::with_public`] was not given, or when it cannot be bound
    /// (in use, not permitted).
    pub fn bind(archives: &Path, opts: &ServeOptions) -> Result<Server> {
        let root = archives.canonicalize().map_err(|source| Error::Io {
            path: archives.to_path_buf(),
            op: "open",
            source,
        })?;
        if !root.is_dir() {
            return Err(Error::Io {
                path: archives.to_path_buf(),
                op: "serve",
                source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
            });
        }
        let addr_path = PathBuf::from(opts.listen.to_string());
        let listen_err = |source| Error::Io {
            path: addr_path.clone(),
            op: "listen",
            source,
        };
        if !opts.public && !opts.listen.ip().is_loopback() {
            return Err(listen_err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "not a loopback address: the server has no authentication; allow it with --public",
            )));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .max_blocking_threads(opts.max_requests.clamp(4, 512))
            .thread_name("nc3pack-serve")
            .enable_io()
            .enable_time()
            .build()
            .map_err(listen_err)?;
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(opts.listen))
            .map_err(listen_err)?;
        let addr = listener.local_addr().map_err(listen_err)?;
        Ok(Server {
            runtime,
            listener,
            addr,
            shared: Arc::new(ServeState::new(root, opts)),
        })
    }

    /// The address bound (with the port chosen when port 0 was asked for).
    ///
    /// ```no_run
    /// let opts = nc3pack::serve::ServeOptions::default().with_listen("127.0.0.1:0".parse()?);
    /// let server = nc3pack::serve::Server::bind("/data/archives".as_ref(), &opts)?;
    /// assert_ne!(server.local_addr().port(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves requests until the process ends. A connection that cannot be accepted (out of
    /// file descriptors while clients hold connections open) is logged once and accepting
    /// tried again 100 ms later, however long that lasts: no client can end the server.
    ///
    /// ```no_run
    /// let opts = nc3pack::serve::ServeOptions::default();
    /// nc3pack::serve::Server::bind("/data/archives".as_ref(), &opts)?.run()?;
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// None: it returns only when the process ends (the `Result` keeps the signature of a
    /// server that may stop).
    pub fn run(self) -> Result<()> {
        let Server {
            runtime,
            listener,
            shared,
            ..
        } = self;
        runtime.block_on(accept_loop(listener, shared));
        Ok(())
    }
}

/// Accepts connections and serves each on a task of its own, for ever.
async fn accept_loop(listener: tokio::net::TcpListener, shared: Arc<ServeState>) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors (clients holding connections open until their
                // header timeout), a connection aborted before it was taken: wait and try
                // again, however long it lasts (as axum's server does), so that no client can
                // end the server.
                shared.log_once(format!("accept: {e} (trying again)"));
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let sending = Arc::new(Sending::new());
            let timeout = shared.send_timeout;
            let service = {
                let (shared, sending) = (Arc::clone(&shared), Arc::clone(&sending));
                hyper::service::service_fn(move |req| {
                    let (shared, sending) = (Arc::clone(&shared), Arc::clone(&sending));
                    async move { Ok::<_, std::convert::Infallible>(respond(shared, sending, req).await) }
                })
            };
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT);
            let conn = http.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(conn);
            let mut check = tokio::time::interval((timeout / 4).min(STALL_CHECK));
            loop {
                tokio::select! {
                    // Ended by the client, or cut for a damaged block: nothing to do.
                    _ = conn.as_mut() => break,
                    _ = check.tick() => {
                        if sending.stalled(timeout) {
                            // Dropping the connection closes it and gives its place back.
                            shared.log_once(format!(
                                "closed connections whose client took no data for {:?} \
                                 (first: {peer})",
                                timeout
                            ));
                            break;
                        }
                    }
                }
            }
        });
    }
}

/// An archive found for a request path, opened.
#[derive(Clone)]
struct Found {
    path: PathBuf,
    reader: OriginalReader,
    mtime: SystemTime,
}

/// Whether a connection's body waits on its client, and since when: what its send timeout
/// looks at.
struct Sending {
    start: Instant,
    /// Milliseconds after `start` when hyper last took data of the body or asked for more
    /// (the client took what came before), or [`Sending::IDLE`] when no body waits on the
    /// client (none is being sent, or the server is reading the archive).
    since: AtomicU64,
}

impl Sending {
    const IDLE: u64 = u64::MAX;

    fn new() -> Sending {
        Sending {
            start: Instant::now(),
            since: AtomicU64::new(Sending::IDLE),
        }
    }

    /// The body waits on the client from now.
    fn waiting(&self) {
        let ms = self.start.elapsed().as_millis() as u64;
        self.since
            .store(ms.min(Sending::IDLE - 1), Ordering::Relaxed);
    }

    /// No body waits on the client.
    fn idle(&self) {
        self.since.store(Sending::IDLE, Ordering::Relaxed);
    }

    /// Whether a body has waited on the client for longer than `timeout`.
    fn stalled(&self, timeout: Duration) -> bool {
        let since = self.since.load(Ordering::Relaxed);
        since != Sending::IDLE
            && self.start.elapsed().as_millis() as u64
                > since.saturating_add(timeout.as_millis() as u64)
    }
}

/// What the connections share.
struct ServeState {
    root: PathBuf,
    permits: Arc<Semaphore>,
    send_timeout: Duration,
    /// The archives open.
    originals: Originals,
    logged: Mutex<HashSet<String>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl ServeState {
    fn new(root: PathBuf, opts: &ServeOptions) -> ServeState {
        ServeState {
            root,
            permits: Arc::new(Semaphore::new(opts.max_requests)),
            send_timeout: opts.send_timeout,
            originals: Originals::new(opts.cache_bytes, opts.max_open),
            logged: Mutex::new(HashSet::new()),
        }
    }

    /// Writes `msg` on stderr, once.
    fn log_once(&self, msg: String) {
        let mut logged = lock(&self.logged);
        if logged.len() < MAX_LOGGED && logged.insert(msg.clone()) {
            eprintln!("nc3pack serve: {msg}");
        }
    }

    /// The archive a request path names, or `None` (404).
    fn find(&self, uri_path: &str) -> Result<Option<Found>> {
        let Some(rel) = archive_path(uri_path) else {
            return Ok(None);
        };
        let path = self.root.join(rel);
        let Ok(md) = std::fs::metadata(&path) else {
            return Ok(None);
        };
        if !md.is_file() {
            return Ok(None);
        }
        let reader = self.originals.reader(&path, Ident::of(&md))?;
        Ok(Some(Found {
            path,
            reader,
            mtime: md.modified().unwrap_or(UNIX_EPOCH),
        }))
    }
}

/// The archive's path below the root for a request path: `/a/b/x.nc` → `a/b/x.nc.nc3z`;
/// `None` for a path that is not one (empty, a directory, `.` or `..`, an encoded `/` or NUL).
fn archive_path(uri_path: &str) -> Option<PathBuf> {
    let rest = uri_path.strip_prefix('/')?;
    // An encoded `/` would join two names into one.
    if rest.to_ascii_lowercase().contains("%2f") {
        return None;
    }
    let decoded = crate::percent::decode(rest)?;
    let mut out = PathBuf::new();
    let parts: Vec<&[u8]> = decoded.split(|&b| b == b'/').collect();
    for (i, part) in parts.iter().enumerate() {
        if part.is_empty() || *part == b"." || *part == b".." || part.contains(&0) {
            return None;
        }
        let mut name = part.to_vec();
        if i + 1 == parts.len() {
            name.extend_from_slice(SUFFIX.as_bytes());
        }
        out.push(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(&name));
    }
    Some(out)
}

/// What a `Range` header asks of a file of `len` bytes.
#[derive(Debug, PartialEq, Eq)]
enum Ranged {
    /// No range, or one to ignore: the whole file.
    Whole,
    /// Bytes `[start, end)`.
    Part(u64, u64),
    /// Nothing of the file (416).
    Unsatisfiable,
}

/// Parses a `Range` header value (RFC 9110 §14.1.2): one range only; several, another unit,
/// or bad syntax give [`Ranged::Whole`].
fn parse_range(value: &str, len: u64) -> Ranged {
    let Some(spec) = value.trim().strip_prefix("bytes=") else {
        return Ranged::Whole;
    };
    let spec = spec.trim();
    if spec.contains(',') {
        return Ranged::Whole;
    }
    let Some((a, b)) = spec.split_once('-') else {
        return Ranged::Whole;
    };
    let (a, b) = (a.trim(), b.trim());
    let num = |s: &str| -> Option<u64> {
        if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        // Too many digits for u64: as large as can be.
        Some(s.parse().unwrap_or(u64::MAX))
    };
    if a.is_empty() {
        // A suffix: the last n bytes.
        return match num(b) {
            None => Ranged::Whole,
            Some(0) => Ranged::Unsatisfiable,
            Some(_) if len == 0 => Ranged::Unsatisfiable,
            Some(n) => Ranged::Part(len - n.min(len), len),
        };
    }
    let Some(first) = num(a) else {
        return Ranged::Whole;
    };
    let last = if b.is_empty() {
        None
    } else {
        match num(b) {
            Some(l) if l >= first => Some(l),
            _ => return Ranged::Whole,
        }
    };
    if first >= len {
        return Ranged::Unsatisfiable;
    }
    let end = last.map_or(len, |l| l.saturating_add(1).min(len));
    Ranged::Part(first, end)
}

/// A strong entity tag for the original: its hash recorded in the archive.
fn etag(reader: &OriginalReader) -> String {
    format!("\"xxh3-{:032x}\"", reader.archive().lead().hash)
}

/// Whether an `If-None-Match` value matches `tag` (weak comparison, as RFC 9110 wants there).
fn none_match(value: &str, tag: &str) -> bool {
    value.split(',').any(|t| {
        let t = t.trim();
        t == "*" || t.strip_prefix("W/").unwrap_or(t) == tag
    })
}

/// Whether an `If-Match` value matches `tag` (strong comparison, as RFC 9110 wants there: a
/// weak tag never matches).
fn strong_match(value: &str, tag: &str) -> bool {
    value.split(',').any(|t| {
        let t = t.trim();
        t == "*" || t == tag
    })
}

/// The response to one request.
async fn respond(
    shared: Arc<ServeState>,
    sending: Arc<Sending>,
    req: Request<Incoming>,
) -> Response<FileBody> {
    let head = match *req.method() {
        Method::GET => false,
        Method::HEAD => true,
        _ => {
            let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            return r;
        }
    };
    let uri_path = req.uri().path().to_owned();
    let s = Arc::clone(&shared);
    let found = match tokio::task::spawn_blocking(move || s.find(&uri_path)).await {
        Ok(Ok(Some(found))) => found,
        Ok(Ok(None)) => return plain(StatusCode::NOT_FOUND, "not found\n"),
        Ok(Err(e)) => {
            shared.log_once(format!("{e}"));
            return plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "cannot open the archive\n",
            );
        }
        Err(_) => return plain(StatusCode::INTERNAL_SERVER_ERROR, "internal error\n"),
    };
    let len = found.reader.len();
    let tag = etag(&found.reader);
    let modified = httpdate::fmt_http_date(found.mtime);
    let h = req.headers();
    let text = |name: header::HeaderName| h.get(name).and_then(|v| v.to_str().ok());
    // The seconds since 1970 of an HTTP date, and of the archive's modification time.
    let secs = |date: &str| {
        httpdate::parse_http_date(date)
            .ok()
            .and_then(|d| d.duration_since(UNIX_EPOCH).ok())
            .map(|d| d.as_secs())
    };
    let mtime = found
        .mtime
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // RFC 9110 13.2.2: If-Match (else If-Unmodified-Since) first, a client pinning the file
    // it has part of; then If-None-Match (else If-Modified-Since); then If-Range.
    let precondition_failed = match (text(header::IF_MATCH), text(header::IF_UNMODIFIED_SINCE)) {
        (Some(v), _) => !strong_match(v, &tag),
        (None, Some(since)) => secs(since).is_some_and(|since| mtime > since),
        (None, None) => false,
    };
    let not_modified = match (text(header::IF_NONE_MATCH), text(header::IF_MODIFIED_SINCE)) {
        (Some(v), _) => none_match(v, &tag),
        (None, Some(since)) => secs(since).is_some_and(|since| mtime <= since),
        (None, None) => false,
    };
    let mut ranged = match text(header::RANGE) {
        Some(v) => parse_range(v, len),
        None => Ranged::Whole,
    };
    // If-Range: the range only if the file is still the one the client has part of.
    if let Some(cond) = text(header::IF_RANGE) {
        if cond != tag && cond != modified {
            ranged = Ranged::Whole;
        }
    }
    let mut builder = Response::builder()
        .header(header::ACCEPT_RANGES, "bytes")
        .header(header::ETAG, &tag)
        .header(header::LAST_MODIFIED, &modified);
    if precondition_failed {
        let builder = builder
            .status(StatusCode::PRECONDITION_FAILED)
            .header(header::CONTENT_TYPE, "text/plain");
        return built(
            builder,
            FileBody::bytes("precondition failed: the file is not the one asked for\n"),
        );
    }
    if not_modified {
        return built(builder.status(StatusCode::NOT_MODIFIED), FileBody::empty());
    }
    let (status, start, end) = match ranged {
        Ranged::Whole => (StatusCode::OK, 0, len),
        Ranged::Part(a, b) => {
            builder = builder.header(header::CONTENT_RANGE, format!("bytes {a}-{}/{len}", b - 1));
            (StatusCode::PARTIAL_CONTENT, a, b)
        }
        Ranged::Unsatisfiable => {
            let builder = builder
                .status(StatusCode::RANGE_NOT_SATISFIABLE)
                .header(header::CONTENT_RANGE, format!("bytes */{len}"))
                .header(header::CONTENT_TYPE, "text/plain");
            return built(builder, FileBody::bytes("range not satisfiable\n"));
        }
    };
    let builder = builder
        .status(status)
        .header(header::CONTENT_TYPE, "application/x-netcdf")
        .header(header::CONTENT_LENGTH, end - start);
    if head {
        return built(builder, FileBody::empty());
    }
    // A place among the bodies sent at once, held until the body is sent (it moves into the
    // body): what has no body (404, HEAD, 304, 412, 416) never waits behind slow clients.
    let Ok(permit) = Arc::clone(&shared.permits).acquire_owned().await else {
        return plain(StatusCode::SERVICE_UNAVAILABLE, "shutting down\n");
    };
    let mut body = FileBody::File(FileStream {
        found,
        shared: Arc::clone(&shared),
        sent: start,
        end,
        pending: None,
        sending,
        _permit: permit,
    });
    // The first chunk before the headers: damage there answers 500 instead of a cut body.
    let first = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
    match first {
        Some(Err(_)) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the archive is damaged where this range lies\n",
        ),
        Some(Ok(frame)) => {
            let FileBody::File(stream) = body else {
                unreachable!("a file body")
            };
            let data = frame.into_data().unwrap_or_default();
            built(builder, FileBody::Started(Some(data), stream))
        }
        None => built(builder, FileBody::empty()),
    }
}

/// A short text response.
fn plain(status: StatusCode, text: &'static str) -> Response<FileBody> {
    let builder = Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "text/plain");
    built(builder, FileBody::bytes(text))
}

/// The response `builder` makes with `body`. Every header value is made here, from numbers
/// and the archive's identity and date, so building cannot fail; should it, a bare 500
/// rather than a panic in the connection's task.
fn built(builder: hyper::http::response::Builder, body: FileBody) -> Response<FileBody> {
    builder.body(body).unwrap_or_else(|_| {
        let mut r = Response::new(FileBody::empty());
        *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        r
    })
}

/// A response body: a short text, or the original's bytes read a chunk at a time.
enum FileBody {
    Bytes(Option<Bytes>),
    File(FileStream),
    /// A file whose first chunk was read already.
    Started(Option<Bytes>, FileStream),
}

impl FileBody {
    fn empty() -> FileBody {
        FileBody::Bytes(None)
    }

    fn bytes(text: &'static str) -> FileBody {
        FileBody::Bytes(Some(Bytes::from_static(text.as_bytes())))
    }
}

/// The bytes `[sent, end)` of an archive's original, being sent: the chunk from `sent` is
/// read (or has been) by the read under way, so that reading the next chunk overlaps sending
/// this one.
struct FileStream {
    found: Found,
    shared: Arc<ServeState>,
    /// The first byte not handed to hyper yet.
    sent: u64,
    end: u64,
    /// The read of the chunk at `sent`, when one is under way.
    pending: Option<JoinHandle<Result<Vec<u8>>>>,
    /// The connection's send clock: waiting from each chunk handed to hyper.
    sending: Arc<Sending>,
    /// The response's place among those served at once, given back when the body is dropped.
    _permit: OwnedSemaphorePermit,
}

impl FileStream {
    /// Starts reading the chunk at `sent`, if any is left.
    fn start_read(&mut self) {
        if self.pending.is_some() || self.sent >= self.end {
            return;
        }
        let n = (self.end - self.sent).min(CHUNK as u64) as usize;
        let (reader, pos) = (self.found.reader.clone(), self.sent);
        self.pending = Some(tokio::task::spawn_blocking(move || {
            let mut buf = vec![0u8; n];
            let got = reader.read_at(pos, &mut buf)?;
            buf.truncate(got);
            Ok(buf)
        }));
    }

    fn poll_chunk(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<std::result::Result<Bytes, std::io::Error>>> {
        self.start_read();
        let Some(handle) = self.pending.as_mut() else {
            self.sending.idle();
            return Poll::Ready(None);
        };
        let done = match Pin::new(handle).poll(cx) {
            Poll::Pending => {
                // The server's own read: not the client's time.
                self.sending.idle();
                return Poll::Pending;
            }
            Poll::Ready(done) => done,
        };
        self.pending = None;
        let err = match done {
            Ok(Ok(buf)) if !buf.is_empty() => {
                self.sent += buf.len() as u64;
                self.sending.waiting();
                // The next chunk is read while hyper sends this one.
                self.start_read();
                return Poll::Ready(Some(Ok(Bytes::from(buf))));
            }
            Ok(Ok(_)) => format!(
                "{}: the original ended at {} instead of {}",
                self.found.path.display(),
                self.sent,
                self.end
            ),
            Ok(Err(e)) => format!("{e}"),
            Err(e) => format!("{}: read task failed: {e}", self.found.path.display()),
        };
        self.shared.log_once(err.clone());
        self.sent = self.end;
        self.sending.idle();
        Poll::Ready(Some(Err(std::io::Error::other(err))))
    }
}

impl Drop for FileStream {
    /// Sent (hyper drops a body it has written), cut or abandoned: nothing waits on the client.
    fn drop(&mut self) {
        self.sending.idle();
    }
}

impl Body for FileBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<std::result::Result<Frame<Bytes>, std::io::Error>>> {
        let this = self.get_mut();
        let polled = match this {
            FileBody::Bytes(b) => return Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            FileBody::Started(first, stream) => match first.take() {
                Some(b) => return Poll::Ready(Some(Ok(Frame::data(b)))),
                None => stream.poll_chunk(cx),
            },
            FileBody::File(stream) => stream.poll_chunk(cx),
        };
        polled.map(|o| o.map(|r| r.map(Frame::data)))
    }

    fn is_end_stream(&self) -> bool {
        match self {
            FileBody::Bytes(b) => b.is_none(),
            FileBody::File(s) => s.sent >= s.end && s.pending.is_none(),
            FileBody::Started(first, s) => {
                first.is_none() && s.sent >= s.end && s.pending.is_none()
            }
        }
    }

    fn size_hint(&self) -> SizeHint {
        let left = |s: &FileStream| s.end - s.sent;
        match self {
            FileBody::Bytes(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            FileBody::File(s) => SizeHint::with_exact(left(s)),
            FileBody::Started(first, s) => {
                SizeHint::with_exact(first.as_ref().map_or(0, |b| b.len() as u64) + left(s))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_stalls_only_while_it_waits_on_the_client() {
        let s = Sending::new();
        assert!(!s.stalled(Duration::ZERO), "no body yet");
        s.waiting();
        std::thread::sleep(Duration::from_millis(5));
        assert!(s.stalled(Duration::from_millis(1)));
        assert!(!s.stalled(Duration::from_secs(60)));
        s.idle();
        assert!(
            !s.stalled(Duration::ZERO),
            "the server reading, or the body sent"
        );
    }

    #[test]
    fn ranges_parse_as_rfc_9110_has_them() {
        use Ranged::*;
        assert_eq!(parse_range("bytes=0-99", 1000), Part(0, 100));
        assert_eq!(parse_range("bytes=990-2000", 1000), Part(990, 1000));
        assert_eq!(parse_range("bytes=10-", 1000), Part(10, 1000));
        assert_eq!(parse_range("bytes=-10", 1000), Part(990, 1000));
        assert_eq!(parse_range("bytes=-5000", 1000), Part(0, 1000));
        assert_eq!(parse_range("bytes=1000-", 1000), Unsatisfiable);
        assert_eq!(parse_range("bytes=-0", 1000), Unsatisfiable);
        assert_eq!(parse_range("bytes=0-", 0), Unsatisfiable);
        assert_eq!(parse_range("bytes=5-2", 1000), Whole);
        assert_eq!(parse_range("bytes=0-1,5-6", 1000), Whole);
        assert_eq!(parse_range("items=0-1", 1000), Whole);
        assert_eq!(parse_range("bytes=x-1", 1000), Whole);
        assert_eq!(
            parse_range("bytes=0-99999999999999999999999", 1000),
            Part(0, 1000)
        );
    }

    #[test]
    fn request_paths_map_to_archives_below_the_root() {
        let p = |s: &str| archive_path(s).map(|p| p.to_string_lossy().into_owned());
        assert_eq!(p("/x.nc").as_deref(), Some("x.nc.nc3z"));
        assert_eq!(p("/a/b/x%20y.nc").as_deref(), Some("a/b/x y.nc.nc3z"));
        assert_eq!(p("/"), None);
        assert_eq!(p("/a/"), None);
        assert_eq!(p("/../x.nc"), None);
        assert_eq!(p("/a/%2e%2e/x"), None);
        assert_eq!(p("/a%2fb"), None);
        assert_eq!(p("/a%00b"), None);
        assert_eq!(p("/a%zz"), None);
        assert_eq!(p("//x"), None);
    }
}
