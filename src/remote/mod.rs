//! Archives in object storage: a [`ReadAt`] source over `s3://`, `http(s)://` (and, through
//! [`crate::Input`], `file://`) URLs, with a sync API (the async runtime is internal).
//!
//! Reads cost few requests: opening fetches the front of the object (lead and header frame) and
//! its tail (footer and index) with two concurrent range requests ([`FRONT_BYTES`],
//! [`TAIL_BYTES`]), and a third only when the index is larger than the tail; a read that needs
//! many blocks tells the source its frames first ([`ReadAt::prefetch`]), which fetches them in
//! the background in windows (frames less than 1 MiB apart, up to 16 MiB: one range request
//! each), the next window requested as the last one's bytes arrive, and hands each frame to its
//! read as soon as its bytes have arrived.
//!
//! Credentials, region and endpoint come from [`RemoteOptions`]: by default the standard
//! environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`,
//! `AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`, as `object_store`'s `AmazonS3Builder::from_env` reads
//! them), anonymous access only when asked for (`anon`, or `NC3PACK_ANON=1`).
//!
//! Writing: [`upload_file`] (and [`pack_to_url`], [`pack_reader_to_url`]) make one object with a
//! multipart upload, aborted on an error or a signal; [`Prefix`] is a bucket and key prefix with
//! one client, which `pack IN... -o s3://BUCKET/PREFIX/` packs a collection into (objects
//! uploaded the same way, manifests put whole, listed and read back, archives' ends checked by
//! two range requests).
//!
//! ```no_run
//! use nc3pack::remote::{RemoteOptions, RemoteReader};
//! let opts = RemoteOptions::from_env().with_anon(true);
//! let r = RemoteReader::open("s3://bucket/sst.nc3z", &opts)?;
//! let a = nc3pack::Archive::from_reader(nc3pack::Input::Remote(r), "s3://bucket/sst.nc3z".as_ref())?;
//! println!("{} streams", a.stream_count());
//! # Ok::<(), nc3pack::Error>(())
//! ```

use crate::error::{Error, OptionError, RemoteError, Result};
use crate::io::ReadAt;
use bytes::Bytes;
use object_store::path::Path as StorePath;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};
use std::collections::BTreeMap;
use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::Duration;

/// Bytes read from the front of an object when it is opened: the lead and the header frame of a
/// typical archive (a header of a few thousand variables compresses to well under this).
pub const FRONT_BYTES: u64 = 64 << 10;

/// Bytes read from the end of an object when it is opened: the footer and the index of a typical
/// archive (16 000 blocks: 16 GiB of data in 1 MiB blocks). A larger index costs one more
/// request.
pub const TAIL_BYTES: u64 = 256 << 10;

/// Most bytes one request of a planned read asks for (a window: planned ranges less than
/// [`COALESCE_GAP`] apart, fetched as one range request; each range is staged as soon as its
/// bytes have arrived, so reads do not wait for the whole window).
const WINDOW_BYTES: u64 = 16 << 20;

/// Planned ranges this close are fetched with one request (the gap is read and dropped), as
/// `object_store`'s range coalescing does.
const COALESCE_GAP: u64 = 1 << 20;

/// The next window of a plan is requested when fewer than this many bytes of those requested
/// have not arrived yet: early enough that its answer comes while the last window's bytes
/// arrive, late enough that windows do not share the link (reads need them in order).
const IN_FLIGHT_BYTES: u64 = 4 << 20;

/// Most requests of planned reads on their way at once.
const MAX_REQUESTS_IN_FLIGHT: usize = 10;

/// Most bytes fetched ahead of their reads (staged, or on their way) before the next window
/// of a plan waits for reads to consume some.
const AHEAD_BYTES: u64 = 64 << 20;

/// Read-ahead for a reader going through the object in order: twice its last plan, within
/// these bounds, planned in pieces of [`READ_AHEAD_PIECE`] (each staged when it arrives).
const READ_AHEAD_MIN: u64 = 4 << 20;
const READ_AHEAD_MAX: u64 = 32 << 20;
const READ_AHEAD_PIECE: u64 = 1 << 20;

/// Most bytes of fetched frames held waiting to be read; a plan larger than this is dropped
/// (its frames are then read one request each) instead of holding memory without bound.
const MAX_STAGED_BYTES: u64 = 256 << 20;

/// How a remote object is reached: credentials, region, endpoint, anonymous access, retries.
///
/// [`RemoteOptions::from_env`] starts from the environment (what the command line uses);
/// explicit settings override it. [`RemoteOptions::set`] takes the keys Python's
/// `storage_options` use.
///
/// ```
/// let o = nc3pack::remote::RemoteOptions::default()
///     .with_endpoint("http://127.0.0.1:9000")
///     .with_allow_http(true)
///     .with_credentials("AKIA...", "secret", None);
/// assert!(!o.anon());
/// ```
#[derive(Clone, Debug)]
pub struct RemoteOptions {
    from_env: bool,
    anon: bool,
    endpoint: Option<String>,
    region: Option<String>,
    access_key_id: Option<String>,
    secret_access_key: Option<String>,
    session_token: Option<String>,
    allow_http: Option<bool>,
    max_retries: usize,
    retry_timeout: Duration,
    timeout: Duration,
}

impl Default for RemoteOptions {
    /// Nothing from the environment, signed requests, 5 retries within 60 s, a request timing
    /// out after 120 s.
    fn default() -> Self {
        RemoteOptions {
            from_env: false,
            anon: false,
            endpoint: None,
            region: None,
            access_key_id: None,
            secret_access_key: None,
            session_token: None,
            allow_http: None,
            max_retries: 5,
            retry_timeout: Duration::from_secs(60),
            timeout: Duration::from_secs(120),
        }
    }
}

impl RemoteOptions {
    /// Options read from the environment: the `AWS_*` variables (as `object_store` reads them)
    /// when the store is built, and anonymous access when `NC3PACK_ANON` is `1`, `true` or
    /// `yes`.
    ///
    /// ```
    /// let o = nc3pack::remote::RemoteOptions::from_env();
    /// # let _ = o;
    /// ```
    pub fn from_env() -> Self {
        let anon = std::env::var("NC3PACK_ANON")
            .is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes"));
        RemoteOptions {
            from_env: true,
            anon,
            ..RemoteOptions::default()
        }
    }

    /// Anonymous (unsigned) requests, for public buckets.
    pub fn with_anon(mut self, anon: bool) -> Self {
        self.anon = anon;
        self
    }

    /// Whether requests are anonymous.
    pub fn anon(&self) -> bool {
        self.anon
    }

    /// The S3 endpoint (e.g. `http://127.0.0.1:9000` for a local server).
    pub fn with_endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = Some(endpoint.into());
        self
    }

    /// The S3 region.
    pub fn with_region(mut self, region: impl Into<String>) -> Self {
        self.region = Some(region.into());
        self
    }

    /// Static credentials: access key id, secret, optional session token.
    pub fn with_credentials(
        mut self,
        key: impl Into<String>,
        secret: impl Into<String>,
        token: Option<String>,
    ) -> Self {
        self.access_key_id = Some(key.into());
        self.secret_access_key = Some(secret.into());
        self.session_token = token;
        self
    }

    /// Allows plain `http://` endpoints.
    pub fn with_allow_http(mut self, allow: bool) -> Self {
        self.allow_http = Some(allow);
        self
    }

    /// Retries of a transient failure (5xx, timeouts, connection resets), with exponential
    /// backoff, and the time after which no retry starts.
    pub fn with_retries(mut self, max_retries: usize, timeout: Duration) -> Self {
        self.max_retries = max_retries;
        self.retry_timeout = timeout;
        self
    }

    /// How long a request waits for its answer, and then for each next piece of the answer's
    /// body, before it times out (120 s by default): a timeout is a transient failure, retried
    /// as [`RemoteOptions::with_retries`] allows.
    ///
    /// ```
    /// let o = nc3pack::remote::RemoteOptions::default()
    ///     .with_timeout(std::time::Duration::from_secs(20));
    /// # let _ = o;
    /// ```
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets one option by the name Python's `storage_options` (s3fs) use: `anon`, `key`,
    /// `secret`, `token`, `endpoint_url`, `region` (or `region_name`), `allow_http`; the
    /// `aws_*` spellings (`aws_access_key_id`, ...) are accepted too.
    ///
    /// ```
    /// let o = nc3pack::remote::RemoteOptions::default().set("anon", "true").unwrap();
    /// assert!(o.anon());
    /// assert!(nc3pack::remote::RemoteOptions::default().set("colour", "red").is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Option`] for an unknown name or a value that is not a boolean where one is
    /// needed.
    pub fn set(mut self, name: &str, value: &str) -> Result<Self> {
        let flag = |v: &str| match v.to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" => Ok(true),
            "0" | "false" | "no" => Ok(false),
            _ => Err(Error::Option(OptionError::StorageBool {
                name: name.into(),
                value: v.into(),
            })),
        };
        match name {
            "anon" => self.anon = flag(value)?,
            "allow_http" | "aws_allow_http" => self.allow_http = Some(flag(value)?),
            "key" | "access_key_id" | "aws_access_key_id" => {
                self.access_key_id = Some(value.into())
            }
            "secret" | "secret_access_key" | "aws_secret_access_key" => {
                self.secret_access_key = Some(value.into())
            }
            "token" | "session_token" | "aws_session_token" => {
                self.session_token = Some(value.into())
            }
            "endpoint_url" | "endpoint" | "aws_endpoint_url" => self.endpoint = Some(value.into()),
            "region" | "region_name" | "aws_region" => self.region = Some(value.into()),
            _ => {
                return Err(Error::Option(OptionError::StorageName {
                    name: name.into(),
                }))
            }
        }
        Ok(self)
    }
}

static DEFAULT_OPTIONS: RwLock<Option<RemoteOptions>> = RwLock::new(None);

/// Sets the options that functions taking a path use when the path is a URL
/// ([`crate::open`], [`crate::Archive::open`], [`crate::info::describe`], [`crate::verify`],
/// [`crate::unpack_file`], ...). Until set, they use [`RemoteOptions::from_env`].
///
/// ```
/// nc3pack::remote::set_default_options(nc3pack::remote::RemoteOptions::from_env().with_anon(true));
/// ```
pub fn set_default_options(opts: RemoteOptions) {
    if let Ok(mut d) = DEFAULT_OPTIONS.write() {
        *d = Some(opts);
    }
}

/// The options set by [`set_default_options`], or [`RemoteOptions::from_env`].
pub fn default_options() -> RemoteOptions {
    DEFAULT_OPTIONS
        .read()
        .ok()
        .and_then(|d| d.clone())
        .unwrap_or_else(RemoteOptions::from_env)
}

/// Request counters of a [`RemoteReader`]: GET requests sent (a retry of a failed request is
/// not counted again) and bytes received.
#[derive(Debug, Default)]
pub struct RequestStats {
    requests: AtomicU64,
    bytes: AtomicU64,
}

impl RequestStats {
    /// GET requests sent so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
    /// Bytes received so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
}

/// The process's tokio runtime for object storage I/O: two worker threads, made on first use,
/// and made again in a child process made by `fork` (as Python's `multiprocessing` makes its
/// workers): the child has none of its parent's threads, so the parent's runtime would never
/// run a task there. The parent's runtime is then left alone (dropping it would wait for
/// threads that do not exist in the child).
fn runtime() -> io::Result<&'static tokio::runtime::Runtime> {
    static RT: Mutex<Option<(u32, &'static tokio::runtime::Runtime)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut rt = RT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((made_in, r)) = *rt {
        if made_in == pid {
            return Ok(r);
        }
    }
    let made = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("nc3pack-io")
        .enable_all()
        .build()
        .map_err(|e| io::Error::other(format!("cannot start the I/O runtime: {e}")))?;
    // One runtime per process, for the rest of its life.
    let made: &'static tokio::runtime::Runtime = Box::leak(Box::new(made));
    *rt = Some((pid, made));
    Ok(made)
}

/// Installs ring as the process's TLS crypto provider, once, before any client is built (an
/// application may have installed its own already, which is then used).
fn install_crypto() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Whether `s` is a URL nc3pack reads (`s3://`, `http://`, `https://`, `file://`).
pub(crate) fn is_url(s: &str) -> bool {
    ["s3://", "http://", "https://", "file://"]
        .iter()
        .any(|p| s.len() > p.len() && s[..p.len()].eq_ignore_ascii_case(p))
}

/// The local path of a `file://` URL (`file:///abs/path` or `file://localhost/abs/path`,
/// percent-decoded).
pub(crate) fn file_url_path(url: &str) -> std::result::Result<std::path::PathBuf, RemoteError> {
    let rest = &url["file://".len()..];
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return Err(RemoteError::InvalidUrl {
            why: "a file:// URL needs an absolute path (file:///path/to/file)".into(),
        });
    }
    let bytes = percent_decode(rest).ok_or_else(|| RemoteError::InvalidUrl {
        why: "bad percent-encoding".into(),
    })?;
    use std::os::unix::ffi::OsStringExt;
    Ok(std::ffi::OsString::from_vec(bytes).into())
}

fn percent_decode(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

/// Retries with exponential backoff (0.1 s doubling up to 5 s), as many and as long as `opts`
/// allow.
fn retry_config(opts: &RemoteOptions) -> object_store::RetryConfig {
    object_store::RetryConfig {
        backoff: object_store::BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            base: 2.0,
        },
        max_retries: opts.max_retries,
        retry_timeout: opts.retry_timeout,
    }
}

/// Builds the store and the object's path for an `s3://` or `http(s)://` URL.
fn store_for(
    url: &str,
    opts: &RemoteOptions,
) -> std::result::Result<(Arc<dyn ObjectStore>, StorePath), RemoteError> {
    use object_store::ClientOptions;
    install_crypto();
    let invalid = |why: &str| RemoteError::InvalidUrl { why: why.into() };
    let retry = retry_config(opts);
    // A timeout is waiting this long for an answer, or then for its body's next bytes (not
    // the time of the whole request: a large object streams for as long as it takes).
    let client = ClientOptions::new()
        .with_connect_timeout(Duration::from_secs(10))
        .with_read_timeout(opts.timeout)
        .with_timeout_disabled();
    let lower = url.to_ascii_lowercase();
    if url.contains('?') || url.contains('#') {
        return Err(invalid(
            "query strings and fragments are not supported (give the object's plain URL)",
        ));
    }
    if lower.starts_with("s3://") {
        let rest = &url[5..];
        let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() || key.is_empty() || key.ends_with('/') {
            return Err(invalid("an S3 URL is s3://BUCKET/KEY"));
        }
        let location =
            StorePath::parse(key).map_err(|e| invalid(&format!("bad object key: {e}")))?;
        Ok((s3_store(bucket, opts)?, location))
    } else if lower.starts_with("http://") || lower.starts_with("https://") {
        let scheme_end = url.find("://").unwrap_or(0) + 3;
        let path_at = url[scheme_end..]
            .find('/')
            .map(|i| scheme_end + i)
            .ok_or_else(|| invalid("the URL names no object"))?;
        let (base, path) = (&url[..path_at], &url[path_at + 1..]);
        if path.is_empty() || path.ends_with('/') {
            return Err(invalid("the URL names no object"));
        }
        let location = StorePath::from_url_path(path)
            .map_err(|e| invalid(&format!("bad object path: {e}")))?;
        let store = object_store::http::HttpBuilder::new()
            .with_url(base)
            .with_retry(retry)
            .with_client_options(client.with_allow_http(lower.starts_with("http://")))
            .build()
            .map_err(|e| RemoteError::Config {
                why: one_line(&e.to_string()),
            })?;
        Ok((Arc::new(store), location))
    } else {
        Err(invalid(
            "unknown scheme (use s3://, http://, https:// or file://)",
        ))
    }
}

/// The store of S3 bucket `bucket`, with the options' credentials, endpoint and retries.
fn s3_store(
    bucket: &str,
    opts: &RemoteOptions,
) -> std::result::Result<Arc<dyn ObjectStore>, RemoteError> {
    install_crypto();
    let retry = retry_config(opts);
    let mut b = if opts.from_env {
        object_store::aws::AmazonS3Builder::from_env()
    } else {
        object_store::aws::AmazonS3Builder::new()
    };
    let env = |k: &str| opts.from_env && std::env::var_os(k).is_some_and(|v| !v.is_empty());
    if opts.anon {
        b = b.with_skip_signature(true);
    } else {
        let has_key = opts.access_key_id.is_some() || env("AWS_ACCESS_KEY_ID");
        let has_secret = opts.secret_access_key.is_some() || env("AWS_SECRET_ACCESS_KEY");
        let other_source = env("AWS_WEB_IDENTITY_TOKEN_FILE")
            || env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
            || env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
        if !(has_key && has_secret || other_source && !has_key && !has_secret) {
            return Err(RemoteError::NoCredentials);
        }
    }
    if let Some(v) = &opts.access_key_id {
        b = b.with_access_key_id(v);
    }
    if let Some(v) = &opts.secret_access_key {
        b = b.with_secret_access_key(v);
    }
    if let Some(v) = &opts.session_token {
        b = b.with_token(v);
    }
    if let Some(v) = &opts.endpoint {
        b = b.with_endpoint(v);
    }
    if let Some(v) = &opts.region {
        b = b.with_region(v);
    }
    if let Some(v) = opts.allow_http {
        b = b.with_allow_http(v);
    }
    // Timeouts set one by one: client options as a whole would drop the environment's
    // (AWS_ALLOW_HTTP).
    use object_store::aws::AmazonS3ConfigKey as K;
    use object_store::ClientConfigKey as C;
    let store = b
        .with_bucket_name(bucket)
        .with_retry(retry)
        .with_config(K::Client(C::ConnectTimeout), "10s")
        .with_config(
            K::Client(C::ReadTimeout),
            format!("{}ms", opts.timeout.as_millis()),
        )
        // No bound on a whole request (the read timeout finds a stalled one): a day.
        .with_config(K::Client(C::Timeout), "86400s")
        .build()
        .map_err(|e| RemoteError::Config {
            why: one_line(&e.to_string()),
        })?;
    Ok(Arc::new(store))
}

/// An error message on one line, bounded in length.
fn one_line(s: &str) -> String {
    let mut t: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if t.len() > 400 {
        let mut cut = 400;
        while !t.is_char_boundary(cut) {
            cut -= 1;
        }
        t.truncate(cut);
        t.push_str("...");
    }
    t
}

/// The S3 error code in a response body (`<Code>AccessDenied</Code>`), if any.
fn s3_code(s: &str) -> Option<&str> {
    let at = s.find("<Code>")? + 6;
    let end = s[at..].find("</Code>")?;
    Some(&s[at..at + end])
}

/// Classifies an `object_store` error.
fn classify(e: &object_store::Error) -> RemoteError {
    use object_store::Error as E;
    let text = e.to_string();
    let mut chain = text.clone();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        chain.push_str(&s.to_string());
        src = s.source();
    }
    let code = s3_code(&chain).map(str::to_string);
    match e {
        // Found wrong by nc3pack itself (an answer's body, say).
        E::Generic { source, .. } if source.is::<RemoteError>() => source
            .downcast_ref::<RemoteError>()
            .cloned()
            .unwrap_or(RemoteError::Request {
                why: one_line(&text),
            }),
        // A 404 for a missing bucket says so in its body.
        _ if code.as_deref() == Some("NoSuchBucket") => RemoteError::NoSuchBucket,
        E::NotFound { .. } => RemoteError::NotFound,
        // 412: the `If-Match` sent (the ETag at open) no longer matches.
        E::Precondition { .. } => RemoteError::Changed {
            what: "the server says its ETag no longer matches the one when opened".into(),
        },
        E::PermissionDenied { .. } | E::Unauthenticated { .. } => RemoteError::AccessDenied {
            code: code.unwrap_or_else(|| "AccessDenied".into()),
        },
        E::NotSupported { .. } => RemoteError::NoRanges,
        _ if matches!(
            code.as_deref(),
            Some("AccessDenied" | "SignatureDoesNotMatch" | "InvalidAccessKeyId")
        ) =>
        {
            RemoteError::AccessDenied {
                code: code.unwrap_or_default(),
            }
        }
        _ => request_failure(&text, code, chain.contains("timed out")),
    }
}

/// A request that failed after its retries, from `object_store`'s message (`... Error
/// performing GET URL in 1.2s, after 5 retries, max_retries: 5, retry_timeout: 60s - Server
/// returned non-2xx status code: 503 Service Unavailable: BODY`): the status, or a timeout, or
/// the cause; with the number of tries and the time they took (the URL is named by the
/// caller).
fn request_failure(text: &str, code: Option<String>, timed_out: bool) -> RemoteError {
    let Some(at) = text.find("Error performing ") else {
        // A failure while an answer's body arrived.
        let why = if timed_out {
            "timed out while the answer arrived".to_string()
        } else {
            one_line(text)
        };
        return RemoteError::Request { why };
    };
    let text = &text[at..];
    let retries = text.find(", after ").and_then(|i| {
        let mut words = text[i + 8..].split(' ');
        let n = words.next()?.parse::<usize>().ok()?;
        (words.next() == Some("retries,")).then_some(n)
    });
    let tries = retries.unwrap_or(0).saturating_add(1);
    let millis = text
        .find(" in ")
        .and_then(|i| text[i + 4..].split([',', ' ']).next())
        .and_then(debug_millis)
        .unwrap_or(0);
    let cause = text.split_once(" - ").map_or(text, |(_, c)| c);
    if let Some(i) = cause.find("status code: ") {
        let rest = &cause[i + 13..];
        let status = rest.split(':').next().unwrap_or(rest).trim();
        return RemoteError::Server {
            status: one_line(status),
            code,
            tries,
            millis,
        };
    }
    if timed_out {
        return RemoteError::TimedOut { tries, millis };
    }
    let cause = cause.strip_prefix("HTTP error: ").unwrap_or(cause);
    let word = if tries == 1 { "try" } else { "tries" };
    RemoteError::Request {
        why: format!(
            "{}, after {tries} {word} in {:.1} s",
            one_line(cause),
            millis as f64 / 1000.0
        ),
    }
}

/// Milliseconds of a duration as `Duration`'s `Debug` writes it (`1.416s`, `659.2ms`,
/// `12µs`), rounded down.
fn debug_millis(s: &str) -> Option<u64> {
    let (number, per_ms) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix("µs") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix("ns") {
        (n, 1e-6)
    } else {
        (s.strip_suffix('s')?, 1e3)
    };
    let v = number.parse::<f64>().ok()? * per_ms;
    (v.is_finite() && v >= 0.0).then_some(v as u64)
}

/// A remote object read by byte ranges: an `s3://` or `http(s)://` URL.
///
/// Opening reads the object's front ([`FRONT_BYTES`]) and tail ([`TAIL_BYTES`]) with two
/// concurrent requests, which also tell its size; reads inside them cost nothing more. Other
/// reads are range requests, except those a [`ReadAt::prefetch`] plan covers, which are fetched
/// together, coalesced. Share it between threads freely (`Send + Sync`).
///
/// ```no_run
/// use nc3pack::ReadAt;
/// let opts = nc3pack::remote::RemoteOptions::from_env();
/// let r = nc3pack::remote::RemoteReader::open("https://example.org/data/sst.nc3z", &opts)?;
/// let mut magic = [0u8; 8];
/// r.read_exact_at(&mut magic, 0).unwrap();
/// println!("{} bytes, {} requests", r.size().unwrap(), r.stats().requests());
/// # Ok::<(), nc3pack::Error>(())
/// ```
pub struct RemoteReader {
    url: String,
    size: u64,
    /// The front and the tail, read at open.
    pinned: Vec<(u64, Bytes)>,
    fetcher: Arc<Fetcher>,
}

/// Fetches planned ranges in the background, a window (one range request) at a time, a few
/// windows at once, and stages each range as soon as its bytes have arrived (shared with the
/// fetching tasks).
struct Fetcher {
    /// The store, and the process it was built in (see [`Fetcher::store`]).
    store: Mutex<(u32, Arc<dyn ObjectStore>)>,
    /// Builds the store again in a child process made by `fork`.
    rebuild: Rebuild,
    location: StorePath,
    /// The object's ETag when it was opened, sent with every range request (`If-Match`) and
    /// compared with every answer's: a replaced object is an error, not other bytes.
    etag: Option<String>,
    /// The object's length when it was opened, compared with every answer's (the only sign of
    /// a replaced object from a server that sends no ETag).
    size: u64,
    stats: Arc<RequestStats>,
    staged: Mutex<Staged>,
    /// Signalled when a range is staged or a fetch ends.
    arrived: Condvar,
}

/// Builds a reader's store again (the same URL and options): for a child process made by
/// `fork`, which cannot use its parent's.
type Rebuild =
    Box<dyn Fn() -> std::result::Result<Arc<dyn ObjectStore>, RemoteError> + Send + Sync>;

/// Ranges fetched ahead of their reads, and those planned and not requested yet.
#[derive(Default)]
struct Staged {
    /// Fetched ranges by offset, with their bytes not read yet: each is dropped once read
    /// (frames are read once).
    chunks: BTreeMap<u64, (Bytes, u64)>,
    bytes: u64,
    /// Planned ranges not requested yet: disjoint, end by start.
    plan: BTreeMap<u64, u64>,
    /// Spans being fetched now (a read inside one waits for it).
    pending: Vec<Range<u64>>,
    /// Bytes of the spans being fetched that have not arrived yet.
    in_flight: u64,
    /// Spans whose fetch failed, with the error: a read inside one reports it (once).
    failed: Vec<(Range<u64>, RemoteError)>,
    /// The span of the last plan, to tell a sequential reader (each plan starting where the
    /// last one ended) and read ahead for it.
    last: Option<Range<u64>>,
    /// Where read-ahead has been planned up to.
    ahead_to: u64,
}

/// What a read finds for its bytes that are not staged yet.
enum Cover {
    /// All of them are staged or on their way.
    Wait,
    /// Some are planned and not requested yet: the window starting at this planned range.
    Launch(u64),
    /// Some lie in a span whose fetch failed: the error.
    Failed(RemoteError),
    /// Some are neither staged, nor on their way, nor planned.
    Missing,
}

impl std::fmt::Debug for RemoteReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteReader")
            .field("url", &crate::error::redact_url(&self.url))
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl RemoteReader {
    /// Opens the object at `url` (`s3://BUCKET/KEY`, `http://...`, `https://...`): two
    /// concurrent range requests, for its front ([`FRONT_BYTES`]) and its tail
    /// ([`TAIL_BYTES`]); a third, for the rest of an object shorter than the tail read, when the
    /// front's answer comes first.
    ///
    /// # Errors
    ///
    /// [`Error::Remote`] naming the URL: a malformed URL, no credentials, access denied (wrong
    /// or insufficient credentials), no such object, a server that does not answer range
    /// requests, or a request that still failed after its retries.
    pub fn open(url: &str, opts: &RemoteOptions) -> Result<RemoteReader> {
        let (store, location) = store_for(url, opts).map_err(|source| Error::Remote {
            url: url.to_string(),
            source,
        })?;
        let (again, opts) = (url.to_string(), opts.clone());
        let rebuild: Rebuild = Box::new(move || store_for(&again, &opts).map(|(s, _)| s));
        RemoteReader::open_in(url, store, location, rebuild)
    }

    /// As [`RemoteReader::open`], for the object at `location` in `store` (whose URL is `url`;
    /// `rebuild` makes the store again in a child process made by `fork`).
    fn open_in(
        url: &str,
        store: Arc<dyn ObjectStore>,
        location: StorePath,
        rebuild: Rebuild,
    ) -> Result<RemoteReader> {
        let err = |source: RemoteError| Error::Remote {
            url: url.to_string(),
            source,
        };
        let stats = Arc::new(RequestStats::default());
        // A range request (with `If-Match: etag` when given); its answer's range, the object's
        // length and ETag, and the body, which must hold the range's bytes.
        let get = |range: GetRange, etag: Option<String>| {
            let (store, location, stats) = (Arc::clone(&store), location.clone(), &stats);
            stats.requests.fetch_add(1, Ordering::Relaxed);
            async move {
                let opts = GetOptions {
                    range: Some(range),
                    if_match: etag,
                    ..GetOptions::default()
                };
                let r = store.get_opts(&location, opts).await?;
                let (range, size, etag) = (r.range.clone(), r.meta.size, r.meta.e_tag.clone());
                let bytes = range_body(r).await?;
                Ok::<_, object_store::Error>((range, size, etag, bytes))
            }
        };
        let front = get(GetRange::Bounded(0..FRONT_BYTES), None);
        let tail = get(GetRange::Suffix(TAIL_BYTES), None);
        let rt = runtime().map_err(|e| err(RemoteError::Request { why: e.to_string() }))?;
        type Got =
            std::result::Result<(Range<u64>, u64, Option<String>, Bytes), object_store::Error>;
        // Whether one answer is all there is to know: the whole object, or an empty one.
        let enough = |r: &Got| match r {
            Ok((range, n, _, bytes)) => range.start == 0 && bytes.len() as u64 == *n,
            Err(e) => is_range_not_satisfiable(e),
        };
        let (f, t): (Option<Got>, Option<Got>) = rt.block_on(async {
            use futures_util::future::{select, Either};
            match select(Box::pin(front), Box::pin(tail)).await {
                Either::Left((f, _)) if enough(&f) => (Some(f), None),
                // The front told the size, and the object is shorter than the tail asked for:
                // some servers (s3s-fs 0.14) answer such a suffix range with 500 (retried, then
                // failed) where S3 gives the whole object. The rest by offsets too; whichever
                // answers first.
                Either::Left((Ok((range, n, etag, bytes)), tail)) if n <= TAIL_BYTES => {
                    let rest = get(GetRange::Bounded(range.end.min(n)..n), etag.clone());
                    let t = match select(tail, Box::pin(rest)).await {
                        Either::Left((Ok(t), _)) | Either::Right((Ok(t), _)) => Ok(t),
                        Either::Left((Err(_), rest)) => rest.await,
                        Either::Right((Err(_), tail)) => tail.await,
                    };
                    (Some(Ok((range, n, etag, bytes))), Some(t))
                }
                Either::Left((f, tail)) => (Some(f), Some(tail.await)),
                Either::Right((t, _)) if enough(&t) => (None, Some(t)),
                Either::Right((t, front)) => (Some(front.await), Some(t)),
            }
        });
        let mut pinned = Vec::new();
        let mut size = 0;
        // The ETag and length of the first answer; every other answer must state the same.
        let mut first: Option<(Option<String>, u64)> = None;
        let mut tail_failed = None;
        for (is_tail, r) in [(false, f), (true, t)] {
            match r {
                None => {}
                Some(Ok((range, n, etag, bytes))) => {
                    stats.bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
                    if let Some((e0, n0)) = &first {
                        same_object(e0.as_ref(), *n0, etag.as_ref(), n).map_err(err)?;
                    } else {
                        first = Some((etag, n));
                    }
                    size = n;
                    pinned.push((range.start, bytes));
                }
                // An empty object has no range to answer with: opening it says what it is.
                Some(Err(e)) if is_range_not_satisfiable(&e) => {
                    pinned.clear();
                    size = 0;
                    break;
                }
                Some(Err(e)) => match classify(&e) {
                    RemoteError::Request { .. } if is_tail => tail_failed = Some(e),
                    other => return Err(err(other)),
                },
            }
        }
        if let (Some(_), Some((0, front))) = (tail_failed, pinned.first()) {
            // A server that refuses a suffix range longer than the object (instead of
            // shortening it): the tail by offsets, now that the size is known.
            let from = size.saturating_sub(TAIL_BYTES).max(front.len() as u64);
            if from < size {
                let etag = first.as_ref().and_then(|f| f.0.clone());
                match rt.block_on(get(GetRange::Bounded(from..size), etag)) {
                    Ok((range, n, etag, bytes)) => {
                        if let Some((e0, n0)) = &first {
                            same_object(e0.as_ref(), *n0, etag.as_ref(), n).map_err(err)?;
                        }
                        stats.bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
                        pinned.push((range.start, bytes));
                    }
                    Err(e) => return Err(err(classify(&e))),
                }
            }
        }
        Ok(RemoteReader {
            url: url.to_string(),
            size,
            pinned,
            fetcher: Arc::new(Fetcher {
                store: Mutex::new((std::process::id(), store)),
                rebuild,
                location,
                etag: first.and_then(|f| f.0),
                size,
                stats,
                staged: Mutex::new(Staged::default()),
                arrived: Condvar::new(),
            }),
        })
    }

    /// The URL, as given.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The request counters (shared: a clone of the `Arc` keeps counting after the reader has
    /// been moved into an archive).
    pub fn stats(&self) -> Arc<RequestStats> {
        Arc::clone(&self.fetcher.stats)
    }
}

impl Fetcher {
    fn lock(&self) -> std::sync::MutexGuard<'_, Staged> {
        self.staged.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The store to send requests with. In a child process made by `fork` since it was built
    /// (a dataset opened before Python's `multiprocessing` forked its workers), a new one: the
    /// parent's HTTP connections, and the tasks that served them, belong to the parent; and
    /// the fetches the parent had on their way are forgotten (they never arrive here).
    /// Not called with the staged ranges locked.
    fn store(&self) -> io::Result<Arc<dyn ObjectStore>> {
        let pid = std::process::id();
        let mut s = self.store.lock().unwrap_or_else(|p| p.into_inner());
        if s.0 != pid {
            let fresh = (self.rebuild)().map_err(|e| {
                io::Error::other(format!("cannot reach the object again after fork: {e}"))
            })?;
            // Not dropped: what it holds (connections, their tasks) is the parent's.
            std::mem::forget(std::mem::replace(&mut s.1, fresh));
            s.0 = pid;
            let mut st = self.lock();
            st.pending.clear();
            st.in_flight = 0;
        }
        Ok(Arc::clone(&s.1))
    }

    /// The options of a range request for `range` of the object as it was opened.
    fn range_options(&self, range: Range<u64>) -> GetOptions {
        GetOptions {
            range: Some(GetRange::Bounded(range)),
            if_match: self.etag.clone(),
            ..GetOptions::default()
        }
    }

    /// Checks that an answer is from the object as it was opened (its ETag and length).
    fn check_answer(
        &self,
        meta: &object_store::ObjectMeta,
    ) -> std::result::Result<(), RemoteError> {
        same_object(
            self.etag.as_ref(),
            self.size,
            meta.e_tag.as_ref(),
            meta.size,
        )
    }

    /// Fetches `range` with one request, now (a read that nothing planned).
    fn fetch(&self, range: Range<u64>) -> io::Result<Bytes> {
        let store = self.store()?;
        let rt = runtime()?;
        self.stats.requests.fetch_add(1, Ordering::Relaxed);
        let got = rt.block_on(async {
            let r = store
                .get_opts(&self.location, self.range_options(range))
                .await
                .map_err(|e| classify(&e))?;
            self.check_answer(&r.meta)?;
            range_body(r).await.map_err(|e| classify(&e))
        });
        let got = got.map_err(io::Error::other)?;
        self.stats
            .bytes
            .fetch_add(got.len() as u64, Ordering::Relaxed);
        Ok(got)
    }

    /// Adds `r` to the plan, less what is staged, on its way or planned already.
    fn plan_insert(st: &mut Staged, r: Range<u64>) {
        let mut covered: Vec<Range<u64>> = Vec::new();
        if let Some((&s, (c, _))) = st.chunks.range(..r.start).next_back() {
            covered.push(s..s + c.len() as u64);
        }
        covered.extend(
            st.chunks
                .range(r.start..r.end)
                .map(|(&s, (c, _))| s..s + c.len() as u64),
        );
        if let Some((&s, &e)) = st.plan.range(..r.start).next_back() {
            covered.push(s..e);
        }
        covered.extend(st.plan.range(r.start..r.end).map(|(&s, &e)| s..e));
        covered.extend(st.pending.iter().cloned());
        covered.retain(|c| c.start < r.end && r.start < c.end);
        covered.sort_by_key(|c| c.start);
        let mut pos = r.start;
        for c in covered {
            if c.start > pos {
                st.plan.insert(pos, c.start.min(r.end));
            }
            pos = pos.max(c.end);
            if pos >= r.end {
                return;
            }
        }
        if pos < r.end {
            st.plan.insert(pos, r.end);
        }
    }

    /// Takes from the plan the window that starts with the planned range at `key`: the ranges
    /// that follow it less than [`COALESCE_GAP`] apart, up to [`WINDOW_BYTES`] in all (at
    /// least one range).
    fn take_window(st: &mut Staged, key: u64) -> Vec<Range<u64>> {
        let mut parts: Vec<Range<u64>> = Vec::new();
        let mut from = key;
        // Bounded: each turn takes a range out of the plan.
        while let Some((&s, &e)) = st.plan.range(from..).next() {
            if let (Some(first), Some(last)) = (parts.first(), parts.last()) {
                if s - last.end > COALESCE_GAP || e - first.start > WINDOW_BYTES {
                    break;
                }
            }
            st.plan.remove(&s);
            parts.push(s..e);
            from = e;
        }
        parts
    }

    /// Requests the window starting at the planned range `key`, in the background; false
    /// when nothing could be started.
    fn launch(self: &Arc<Self>, st: &mut Staged, key: u64) -> bool {
        let Ok(rt) = runtime() else { return false };
        let parts = Self::take_window(st, key);
        let (Some(first), Some(last)) = (parts.first(), parts.last()) else {
            return false;
        };
        let span = first.start..last.end;
        st.pending.push(span.clone());
        st.in_flight += span.end - span.start;
        self.stats.requests.fetch_add(1, Ordering::Relaxed);
        let me = Arc::clone(self);
        rt.spawn(async move { me.fetch_window(span, parts).await });
        true
    }

    /// Requests the next windows of the plan, in order, while few enough bytes are on their
    /// way and staged.
    fn pump(self: &Arc<Self>, st: &mut Staged) {
        // Bounded: each turn takes at least one range out of the plan.
        while let Some(&key) = st.plan.keys().next() {
            if st.pending.len() >= MAX_REQUESTS_IN_FLIGHT
                || st.in_flight >= IN_FLIGHT_BYTES
                || st.bytes + st.in_flight >= AHEAD_BYTES
                || !self.launch(st, key)
            {
                return;
            }
        }
    }

    /// Fetches one window and stages its ranges as they arrive; then, the next windows.
    async fn fetch_window(self: Arc<Self>, span: Range<u64>, parts: Vec<Range<u64>>) {
        let (received_to, failure) = self.stream_window(&span, &parts).await;
        let mut st = self.lock();
        st.pending.retain(|p| *p != span);
        // What has not arrived is not on its way any more.
        st.in_flight = st.in_flight.saturating_sub(span.end - received_to);
        if let Some((from, why)) = failure {
            if st.failed.len() >= 64 {
                st.failed.remove(0);
            }
            st.failed.push((from..span.end, why));
        }
        self.pump(&mut st);
        drop(st);
        self.arrived.notify_all();
    }

    /// Receives the window `span` (one range request) and stages each of its `parts` as soon
    /// as its last byte has arrived (with no copy when one piece of the body holds it all).
    /// Returns where the body arrived up to and, on a failure, the start of the first part not
    /// staged and the error.
    async fn stream_window(
        self: &Arc<Self>,
        span: &Range<u64>,
        parts: &[Range<u64>],
    ) -> (u64, Option<(u64, RemoteError)>) {
        use bytes::Buf;
        use futures_util::StreamExt;
        let opts = self.range_options(span.clone());
        let store = match self.store() {
            Ok(store) => store,
            Err(e) => {
                let why = e.to_string();
                return (span.start, Some((span.start, RemoteError::Request { why })));
            }
        };
        let got = match store.get_opts(&self.location, opts).await {
            Ok(got) => got,
            Err(e) => return (span.start, Some((span.start, classify(&e)))),
        };
        if let Err(e) = self.check_answer(&got.meta) {
            return (span.start, Some((span.start, e)));
        }
        if got.range != *span {
            let why = format!(
                "asked for bytes {}..{}, the server answered with {}..{}",
                span.start, span.end, got.range.start, got.range.end
            );
            return (span.start, Some((span.start, RemoteError::Request { why })));
        }
        let mut body = got.into_stream();
        let (mut pos, mut i) = (span.start, 0usize);
        let mut part = bytes::BytesMut::new();
        // Bounded by the body, which ends (or fails) after the bytes asked for.
        while let Some(piece) = body.next().await {
            let mut piece = match piece {
                Ok(p) => p,
                Err(e) => {
                    let from = parts.get(i).map_or(pos, |p| p.start);
                    return (pos, Some((from, classify(&e))));
                }
            };
            let n = piece.len() as u64;
            self.stats.bytes.fetch_add(n, Ordering::Relaxed);
            let mut done: Vec<(u64, Bytes)> = Vec::new();
            // Bounded: each turn consumes bytes of the piece or moves to the next part.
            while !piece.is_empty() && i < parts.len() {
                let p = &parts[i];
                if pos < p.start {
                    let skip = (p.start - pos).min(piece.len() as u64);
                    piece.advance(skip as usize);
                    pos += skip;
                    continue;
                }
                let want = p.end - pos;
                let take = want.min(piece.len() as u64) as usize;
                pos += take as u64;
                if part.is_empty() && take as u64 == want {
                    done.push((p.start, piece.split_to(take)));
                } else {
                    if part.is_empty() {
                        part.reserve((p.end - p.start) as usize);
                    }
                    part.extend_from_slice(&piece[..take]);
                    piece.advance(take);
                    if pos == p.end {
                        done.push((p.start, part.split().freeze()));
                    }
                }
                if pos == p.end {
                    i += 1;
                }
            }
            pos += piece.len() as u64;
            let mut guard = self.lock();
            let st = &mut *guard;
            st.in_flight = st.in_flight.saturating_sub(n);
            let staged_some = !done.is_empty();
            for (at, b) in done {
                let len = b.len() as u64;
                if let std::collections::btree_map::Entry::Vacant(v) = st.chunks.entry(at) {
                    st.bytes += len;
                    v.insert((b, len));
                }
            }
            self.pump(st);
            drop(guard);
            if staged_some {
                self.arrived.notify_all();
            }
        }
        match parts.get(i) {
            Some(p) => {
                let why = format!("the answer ended at byte {pos}, before byte {}", span.end);
                (pos, Some((p.start, RemoteError::Request { why })))
            }
            None => (pos.max(span.end), None),
        }
    }

    /// What a read of `off..end` finds for its bytes (see [`Cover`]); a failure found is
    /// reported once (a later read tries again).
    fn cover(st: &mut Staged, off: u64, end: u64) -> Cover {
        let mut pos = off;
        let mut wait = false;
        // Bounded: each turn moves past a chunk or a pending span, or returns.
        while pos < end {
            if let Some((&s, (c, _))) = st.chunks.range(..=pos).next_back() {
                if s + c.len() as u64 > pos {
                    pos = s + c.len() as u64;
                    continue;
                }
            }
            if let Some(i) = st.failed.iter().position(|(r, _)| r.contains(&pos)) {
                return Cover::Failed(st.failed.swap_remove(i).1);
            }
            if let Some(p) = st.pending.iter().find(|p| p.contains(&pos)) {
                wait = true;
                pos = p.end;
                continue;
            }
            if let Some((&s, &e)) = st.plan.range(..=pos).next_back() {
                if e > pos {
                    return Cover::Launch(s);
                }
            }
            return Cover::Missing;
        }
        if wait {
            Cover::Wait
        } else {
            Cover::Missing
        }
    }

    /// The staged chunks that together hold `off..end` (adjacent frames read with one read),
    /// or None.
    fn staged_cover(st: &Staged, off: u64, end: u64) -> Option<Vec<u64>> {
        let mut keys = Vec::new();
        let mut pos = off;
        // Bounded by the number of chunks: each step moves past one.
        while pos < end {
            let (&s, (c, _)) = st.chunks.range(..=pos).next_back()?;
            let cend = s + c.len() as u64;
            if cend <= pos {
                return None;
            }
            keys.push(s);
            pos = cend;
        }
        Some(keys)
    }

    /// Copies `buf.len()` bytes at `off` from the staged chunks, if they hold them; a chunk
    /// whose bytes have all been read is dropped.
    fn from_staged(st: &mut Staged, buf: &mut [u8], off: u64) -> bool {
        let end = off + buf.len() as u64;
        let Some(keys) = Self::staged_cover(st, off, end) else {
            return false;
        };
        for s in keys {
            let Some((c, left)) = st.chunks.get_mut(&s) else {
                return false;
            };
            let (from, to) = (off.max(s), end.min(s + c.len() as u64));
            buf[(from - off) as usize..(to - off) as usize]
                .copy_from_slice(&c[(from - s) as usize..(to - s) as usize]);
            *left = left.saturating_sub(to - from);
            if *left == 0 {
                let n = c.len() as u64;
                st.bytes -= n;
                st.chunks.remove(&s);
            }
        }
        true
    }
}

/// Checks that an answer stating ETag `etag` and length `size` is from the object opened with
/// `etag0` and `size0`: the ETags compared when both are known, the lengths always.
fn same_object(
    etag0: Option<&String>,
    size0: u64,
    etag: Option<&String>,
    size: u64,
) -> std::result::Result<(), RemoteError> {
    if let (Some(a), Some(b)) = (etag0, etag) {
        if a != b {
            return Err(RemoteError::Changed {
                what: format!("ETag {a} when opened, now {b}"),
            });
        }
    }
    if size0 != size {
        return Err(RemoteError::Changed {
            what: format!("{size0} bytes when opened, now {size}"),
        });
    }
    Ok(())
}

/// The body of the answer `r` to a range request: exactly the bytes of its range. A body that
/// goes on past them is an error as soon as that is seen (the rest is not read, nor held),
/// one that ends before them too.
async fn range_body(r: object_store::GetResult) -> object_store::Result<Bytes> {
    use futures_util::StreamExt;
    let range = r.range.clone();
    let asked = range.end - range.start;
    let fail = |e: RemoteError| object_store::Error::Generic {
        store: "nc3pack",
        source: Box::new(e),
    };
    let mut body = r.into_stream();
    let mut pieces: Vec<Bytes> = Vec::new();
    let mut got = 0u64;
    // Bounded: each turn receives a piece, and the pieces stop at the range's length.
    while let Some(piece) = body.next().await {
        let piece = piece?;
        got += piece.len() as u64;
        if got > asked {
            return Err(fail(RemoteError::BodyTooLong {
                start: range.start,
                asked,
            }));
        }
        pieces.push(piece);
    }
    if got < asked {
        return Err(fail(RemoteError::Request {
            why: format!(
                "the answer ended after {got} of the {asked} bytes asked at byte {}",
                range.start
            ),
        }));
    }
    if pieces.len() == 1 {
        return Ok(pieces.swap_remove(0));
    }
    let mut all = bytes::BytesMut::with_capacity(asked as usize);
    for p in pieces {
        all.extend_from_slice(&p);
    }
    Ok(all.freeze())
}

/// Whether the server answered 416 (Range Not Satisfiable: the object is empty), by the
/// status in the error (not any "416" in its text: a duration or a port may hold those digits)
/// or S3's `InvalidRange` code.
fn is_range_not_satisfiable(e: &object_store::Error) -> bool {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(x) = src {
        s.push_str(&x.to_string());
        src = x.source();
    }
    s.contains("status code: 416") || s3_code(&s) == Some("InvalidRange")
}

impl ReadAt for RemoteReader {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&e| e <= self.size)
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        if buf.is_empty() {
            return Ok(());
        }
        for (start, bytes) in &self.pinned {
            if *start <= offset && end <= start + bytes.len() as u64 {
                let at = (offset - start) as usize;
                buf.copy_from_slice(&bytes[at..at + buf.len()]);
                return Ok(());
            }
        }
        let f = &self.fetcher;
        // In a child process made by `fork`: the parent's fetches on their way are not waited for.
        f.store()?;
        let mut st = f.lock();
        // Bounded: each wait ends when a range is staged or a fetch ends, each launch takes a
        // range out of the plan, and the rest return.
        loop {
            if Fetcher::from_staged(&mut st, buf, offset) {
                f.pump(&mut st);
                return Ok(());
            }
            match Fetcher::cover(&mut st, offset, end) {
                Cover::Wait => {
                    f.pump(&mut st);
                    st = f.arrived.wait(st).unwrap_or_else(|p| p.into_inner());
                }
                Cover::Launch(key) => {
                    if !f.launch(&mut st, key) {
                        break;
                    }
                }
                Cover::Failed(e) => return Err(io::Error::other(e)),
                Cover::Missing => break,
            }
        }
        drop(st);
        let got = f.fetch(offset..end)?;
        buf.copy_from_slice(&got);
        Ok(())
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.size)
    }

    fn wants_prefetch(&self) -> bool {
        true
    }

    fn prefetch(&self, ranges: &[(u64, u64)]) -> io::Result<()> {
        let in_pinned = |r: &Range<u64>| {
            self.pinned
                .iter()
                .any(|(s, b)| *s <= r.start && r.end <= s + b.len() as u64)
        };
        let mut plan: Vec<Range<u64>> = ranges
            .iter()
            .filter(|&&(_, n)| n > 0)
            .map(|&(o, n)| o..o.saturating_add(n).min(self.size))
            .filter(|r| r.start < r.end && !in_pinned(r))
            .collect();
        plan.sort_by_key(|r| r.start);
        plan.dedup_by(|b, a| a.start <= b.start && b.end <= a.end);
        let (Some(s0), Some(e0)) = (
            plan.first().map(|r| r.start),
            plan.iter().map(|r| r.end).max(),
        ) else {
            return Ok(());
        };
        let f = &self.fetcher;
        f.store()?;
        let mut st = f.lock();
        // Ranges fetched for reads that never came (a read that failed half-way) are dropped
        // rather than held without bound; failures are tried again by a new plan.
        if st.bytes > MAX_STAGED_BYTES {
            st.chunks.clear();
            st.bytes = 0;
        }
        st.failed.clear();
        for r in plan {
            Fetcher::plan_insert(&mut st, r);
        }
        // A reader going through the object in order (each plan starting where the last
        // ended, as `slice` streaming a whole variable does): plan what follows too, so that
        // fetching overlaps decoding.
        // A plan inside the last one (a read inside a larger planned read) changes nothing.
        let inside = st
            .last
            .as_ref()
            .is_some_and(|l| s0 >= l.start && e0 <= l.end);
        let sequential = st
            .last
            .as_ref()
            .is_some_and(|l| s0 >= l.start && s0 <= l.end.saturating_add(1 << 20) && e0 > l.end);
        if !inside {
            st.last = Some(s0..e0);
        }
        if sequential {
            let from = e0.max(st.ahead_to);
            let want = (e0 - s0)
                .saturating_mul(2)
                .clamp(READ_AHEAD_MIN, READ_AHEAD_MAX);
            let to = e0.saturating_add(want).min(self.size);
            let mut at = from;
            // Bounded: each turn plans the next piece.
            while at < to {
                let next = (at + READ_AHEAD_PIECE).min(to);
                Fetcher::plan_insert(&mut st, at..next);
                at = next;
            }
            st.ahead_to = st.ahead_to.max(to);
        }
        f.pump(&mut st);
        Ok(())
    }
}

/// Size of the parts of a multipart upload (S3 wants at least 5 MiB but for the last).
const PART_BYTES: usize = 8 << 20;

/// Parts uploaded at once.
const PARTS_IN_FLIGHT: usize = 4;

/// Most time an upload interrupted by a signal waits for its parts in flight, and then for the
/// abort request, before the process dies (within [`crate::cleanup`]'s grace).
const ABORT_WAIT: Duration = Duration::from_secs(4);

/// Why an upload stopped before completing.
enum Stop {
    Failed(Error),
    /// A signal arrived (see [`crate::cleanup`]): abort, then die by it.
    Signal,
}

/// Ends once a signal is pending ([`crate::cleanup::pending_signal`]); looks every 20 ms.
async fn signal_noticed() {
    while crate::cleanup::pending_signal().is_none() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `f`'s output, or None if a signal arrives first.
async fn unless_signalled<F: std::future::Future>(f: F) -> Option<F::Output> {
    use futures_util::future::{select, Either};
    match select(Box::pin(f), Box::pin(signal_noticed())).await {
        Either::Left((v, _)) => Some(v),
        Either::Right(_) => None,
    }
}

/// Reads up to a full part from `f`.
fn read_part(f: &mut std::fs::File, buf: &mut [u8]) -> io::Result<usize> {
    use std::io::Read;
    let mut n = 0;
    // Bounded: each turn reads at least a byte or ends.
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Sends the parts of `f`, `PARTS_IN_FLIGHT` at once, and completes the upload; stops at the
/// first failure or at a signal (after letting the parts in flight end, for a while).
async fn send_parts(
    up: &mut dyn object_store::MultipartUpload,
    f: &mut std::fs::File,
    local: &std::path::Path,
    url: &str,
) -> std::result::Result<u64, Stop> {
    let failed = |e: object_store::Error| {
        Stop::Failed(Error::Remote {
            url: url.to_string(),
            source: classify(&e),
        })
    };
    let joined = |r: std::result::Result<object_store::Result<()>, tokio::task::JoinError>| {
        r.map_err(|e| {
            Stop::Failed(Error::Remote {
                url: url.to_string(),
                source: RemoteError::Request { why: e.to_string() },
            })
        })?
        .map_err(failed)
    };
    let mut in_flight = tokio::task::JoinSet::new();
    let mut total = 0u64;
    let stop = loop {
        if crate::cleanup::pending_signal().is_some() {
            break Stop::Signal;
        }
        let mut buf = vec![0u8; PART_BYTES];
        let n = match read_part(f, &mut buf) {
            Ok(n) => n,
            Err(e) => return Err(Stop::Failed(crate::error::io_err(local, "read")(e))),
        };
        if n == 0 {
            // Every part sent: wait for them, then complete.
            loop {
                match unless_signalled(in_flight.join_next()).await {
                    None => break,
                    Some(None) => {
                        up.complete().await.map_err(failed)?;
                        return Ok(total);
                    }
                    Some(Some(r)) => joined(r)?,
                }
            }
            break Stop::Signal;
        }
        buf.truncate(n);
        let mut signalled = false;
        // Bounded: each turn ends one part in flight, or stops.
        while in_flight.len() >= PARTS_IN_FLIGHT {
            match unless_signalled(in_flight.join_next()).await {
                None => {
                    signalled = true;
                    break;
                }
                Some(Some(r)) => joined(r)?,
                Some(None) => {}
            }
        }
        if signalled {
            break Stop::Signal;
        }
        in_flight.spawn(up.put_part(buf.into()));
        total += n as u64;
    };
    // A signal: parts still arriving would be refused after the abort, or, on some servers,
    // stored after it; let them end first (for a while).
    let _ = tokio::time::timeout(ABORT_WAIT, async {
        // Bounded by the parts in flight.
        while in_flight.join_next().await.is_some() {}
    })
    .await;
    Err(stop)
}

/// Writing goes to S3 only (plain HTTP servers take range GETs, not uploads).
fn check_writable(url: &str) -> std::result::Result<(), RemoteError> {
    if url.to_ascii_lowercase().starts_with("s3://") {
        Ok(())
    } else {
        Err(RemoteError::InvalidUrl {
            why: "writing needs an s3:// URL".into(),
        })
    }
}

/// Uploads the local file `local` to the object at `url` (`s3://BUCKET/KEY`) with a multipart
/// upload, parts in parallel: the object appears only when the upload completes; on any error
/// the upload is aborted, which removes its parts. An existing object is refused unless
/// `force`. Returns the bytes uploaded.
///
/// In a program that installed [`crate::cleanup::install_signal_handlers`], SIGINT, SIGTERM
/// and SIGHUP during the upload abort it (no parts left in the bucket), remove the registered
/// temporary files, and then end the process by the signal; if aborting takes more than 10
/// seconds, the process ends anyway.
///
/// ```no_run
/// let opts = nc3pack::remote::RemoteOptions::from_env();
/// let n = nc3pack::remote::upload_file("/tmp/sst.nc3z".as_ref(), "s3://bucket/sst.nc3z", &opts, false)?;
/// println!("{n} bytes uploaded");
/// # Ok::<(), nc3pack::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::Remote`] naming the URL (not an `s3://` URL, no credentials, access denied, a
/// request that failed after its retries), [`Error::OutputExists`] for an existing object
/// without `force`, [`Error::Io`] when `local` cannot be read.
pub fn upload_file(
    local: &std::path::Path,
    url: &str,
    opts: &RemoteOptions,
    force: bool,
) -> Result<u64> {
    let err = |source: RemoteError| Error::Remote {
        url: url.to_string(),
        source,
    };
    check_writable(url).map_err(err)?;
    let (store, location) = store_for(url, opts).map_err(err)?;
    upload_to(&store, &location, local, url, force)
}

/// [`upload_file`] to `location` of `store` (`url` names it in errors).
fn upload_to(
    store: &Arc<dyn ObjectStore>,
    location: &StorePath,
    local: &std::path::Path,
    url: &str,
    force: bool,
) -> Result<u64> {
    let err = |source: RemoteError| Error::Remote {
        url: url.to_string(),
        source,
    };
    let mut f = std::fs::File::open(local).map_err(crate::error::io_err(local, "open"))?;
    let rt = runtime().map_err(|e| err(RemoteError::Request { why: e.to_string() }))?;
    // From here on a signal lets the upload abort before the process dies.
    let abortable = crate::cleanup::Abortable::new();
    // A signal already received (another upload of a batch is aborting): start nothing.
    if crate::cleanup::pending_signal().is_some() {
        drop(abortable);
        return Ok(0);
    }
    let location = location.clone();
    let r = rt.block_on(async {
        match store.head(&location).await {
            Ok(_) if !force => return Err(Error::OutputExists { path: url.into() }),
            Ok(_) => {}
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(err(classify(&e))),
        }
        let mut up = store
            .put_multipart(&location)
            .await
            .map_err(|e| err(classify(&e)))?;
        match send_parts(up.as_mut(), &mut f, local, url).await {
            Ok(total) => Ok(total),
            Err(stop) => {
                // Bounded: a server that does not answer is not waited for long.
                let _ = tokio::time::timeout(ABORT_WAIT, up.abort()).await;
                match stop {
                    Stop::Failed(e) => Err(e),
                    Stop::Signal => Ok(0),
                }
            }
        }
    });
    // Dies by a signal that came during the upload, now that it is aborted.
    drop(abortable);
    r
}

/// Packs the netCDF-3 file `input` into an archive at `url` (`s3://BUCKET/KEY`): into a
/// temporary file first (in the temporary directory, `TMPDIR`), then uploaded with
/// [`upload_file`]. An existing object is refused unless `opts.force` (checked before packing,
/// and again before uploading).
///
/// ```no_run
/// let remote = nc3pack::remote::RemoteOptions::from_env();
/// let s = nc3pack::remote::pack_to_url("in.nc".as_ref(), "s3://bucket/out.nc3z",
///     &nc3pack::PackOptions::default(), &remote)?;
/// println!("{} bytes", s.output_len);
/// # Ok::<(), nc3pack::Error>(())
/// ```
///
/// # Errors
///
/// As [`crate::pack_file`] for the packing, as [`upload_file`] for the upload.
pub fn pack_to_url(
    input: &std::path::Path,
    url: &str,
    opts: &crate::PackOptions,
    remote: &RemoteOptions,
) -> Result<crate::PackSummary> {
    pack_then_upload(url, opts, remote, |tmp, opts| {
        crate::pack_file(input, tmp, opts)
    })
}

/// Packs a netCDF-3 file arriving on `reader` (in one pass, as [`crate::pack_reader`] does;
/// `input` names it in errors) into an archive at `url` (`s3://BUCKET/KEY`), as
/// [`pack_to_url`] does.
///
/// ```no_run
/// let remote = nc3pack::remote::RemoteOptions::from_env();
/// let input = nc3pack::remote::open_stream("https://example.org/in.nc", &remote)?;
/// let s = nc3pack::remote::pack_reader_to_url(input, "https://example.org/in.nc".as_ref(),
///     "s3://bucket/out.nc3z", &nc3pack::PackOptions::default(), &remote)?;
/// println!("{} bytes", s.output_len);
/// # Ok::<(), nc3pack::Error>(())
/// ```
///
/// # Errors
///
/// As [`crate::pack_reader`] for the packing, as [`upload_file`] for the upload.
pub fn pack_reader_to_url<R: io::Read>(
    reader: R,
    input: &std::path::Path,
    url: &str,
    opts: &crate::PackOptions,
    remote: &RemoteOptions,
) -> Result<crate::PackSummary> {
    pack_then_upload(url, opts, remote, |tmp, opts| {
        crate::pack_reader(reader, input, tmp, opts)
    })
}

/// Checks `url` (an `s3://` URL, no object there unless `opts.force`), packs with `pack` into
/// a temporary archive, and uploads it.
fn pack_then_upload(
    url: &str,
    opts: &crate::PackOptions,
    remote: &RemoteOptions,
    pack: impl FnOnce(&std::path::Path, &crate::PackOptions) -> Result<crate::PackSummary>,
) -> Result<crate::PackSummary> {
    let err = |source: RemoteError| Error::Remote {
        url: url.to_string(),
        source,
    };
    check_writable(url).map_err(err)?;
    if !opts.force {
        let (store, location) = store_for(url, remote).map_err(err)?;
        let rt = runtime().map_err(|e| err(RemoteError::Request { why: e.to_string() }))?;
        match rt.block_on(store.head(&location)) {
            Ok(_) => return Err(Error::OutputExists { path: url.into() }),
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(err(classify(&e))),
        }
    }
    let tmp = temp_archive()?;
    let summary = pack(&tmp.path, &opts.clone().with_force(true))?;
    upload_file(&tmp.path, url, remote, opts.force)?;
    Ok(summary)
}

/// A bucket and a key prefix (`s3://BUCKET/PREFIX/`) that `pack IN... -o s3://...` packs a
/// collection into: one client for all its requests. Keys under it are given relative to the
/// prefix (`a/2001/x.nc.nc3z`, `.nc3pack/manifest-0-of-1.jsonl`).
///
/// ```no_run
/// let opts = nc3pack::remote::RemoteOptions::from_env();
/// let p = nc3pack::remote::Prefix::new("s3://bucket/cmip/", &opts)?;
/// assert_eq!(p.url_of("a/x.nc.nc3z"), "s3://bucket/cmip/a/x.nc.nc3z");
/// println!("{:?}", p.list(".nc3pack/")?);
/// # Ok::<(), nc3pack::Error>(())
/// ```
pub struct Prefix {
    bucket: String,
    /// Empty, or ending with `/`.
    prefix: String,
    store: Arc<dyn ObjectStore>,
    /// What the store was built with (a reader's store is built again after `fork`).
    opts: RemoteOptions,
}

impl std::fmt::Debug for Prefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prefix")
            .field("url", &self.url())
            .finish_non_exhaustive()
    }
}

impl Prefix {
    /// The prefix `url` (`s3://BUCKET/`, `s3://BUCKET/PREFIX` or `s3://BUCKET/PREFIX/`: the
    /// same prefix with or without its last `/`), reached with `opts`. Sends no request.
    ///
    /// # Errors
    ///
    /// [`Error::Remote`] naming the URL: not an `s3://` URL, no bucket, an empty, `.` or `..`
    /// segment or a control character in the prefix, no credentials, or settings the store
    /// cannot be built from.
    pub fn new(url: &str, opts: &RemoteOptions) -> Result<Prefix> {
        let err = |source: RemoteError| Error::Remote {
            url: url.to_string(),
            source,
        };
        let invalid = |why: &str| err(RemoteError::InvalidUrl { why: why.into() });
        check_writable(url).map_err(err)?;
        if url.contains('?') || url.contains('#') {
            return Err(invalid(
                "query strings and fragments are not supported (give the plain URL)",
            ));
        }
        let rest = &url[5..];
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(invalid("an S3 prefix is s3://BUCKET/PREFIX/"));
        }
        let prefix = prefix.strip_suffix('/').unwrap_or(prefix);
        if !prefix.is_empty() {
            let bad = prefix.split('/').any(|seg| {
                seg.is_empty() || seg == "." || seg == ".." || seg.chars().any(|c| c.is_control())
            });
            if bad {
                return Err(invalid(
                    "an empty, `.` or `..` segment, or a control character, in the prefix",
                ));
            }
        }
        let store = s3_store(bucket, opts).map_err(err)?;
        Ok(Prefix {
            bucket: bucket.to_string(),
            prefix: if prefix.is_empty() {
                String::new()
            } else {
                format!("{prefix}/")
            },
            store,
            opts: opts.clone(),
        })
    }

    /// The prefix's URL, ending with `/`.
    pub fn url(&self) -> String {
        format!("s3://{}/{}", self.bucket, self.prefix)
    }

    /// The bucket.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The key prefix: empty, or ending with `/`.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The URL of the object `rel` under the prefix.
    pub fn url_of(&self, rel: &str) -> String {
        format!("s3://{}/{}{rel}", self.bucket, self.prefix)
    }

    fn err(&self, rel: &str) -> impl Fn(RemoteError) -> Error + '_ {
        let url = self.url_of(rel);
        move |source| Error::Remote {
            url: url.clone(),
            source,
        }
    }

    /// The object key of `rel`, checked (no empty, `.` or `..` segment, no control character).
    fn location(&self, rel: &str) -> Result<StorePath> {
        StorePath::parse(format!("{}{rel}", self.prefix)).map_err(|e| {
            self.err(rel)(RemoteError::InvalidUrl {
                why: format!("not a usable object key: {}", one_line(&e.to_string())),
            })
        })
    }

    /// The object `rel`, opened for range reads as [`RemoteReader::open`] opens a URL (with the
    /// prefix's settings): two range requests, for its front and its tail.
    ///
    /// ```no_run
    /// let opts = nc3pack::remote::RemoteOptions::from_env();
    /// let p = nc3pack::remote::Prefix::new("s3://bucket/cmip/", &opts)?;
    /// let a = nc3pack::Archive::from_reader(p.reader("x.nc.nc3z")?, "x.nc.nc3z".as_ref())?;
    /// println!("{} bytes", a.len());
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`RemoteReader::open`], naming the object's URL: an unusable key, no such object, a
    /// request that failed.
    pub fn reader(&self, rel: &str) -> Result<RemoteReader> {
        let location = self.location(rel)?;
        let (bucket, opts) = (self.bucket.clone(), self.opts.clone());
        let rebuild: Rebuild = Box::new(move || s3_store(&bucket, &opts));
        RemoteReader::open_in(
            &self.url_of(rel),
            Arc::clone(&self.store),
            location,
            rebuild,
        )
    }

    /// Checks that `rel` makes a usable object key under the prefix.
    ///
    /// # Errors
    ///
    /// [`Error::Remote`] naming its URL when it does not.
    pub fn check_key(&self, rel: &str) -> Result<()> {
        self.location(rel).map(|_| ())
    }

    /// The length of the object `rel`, or None if there is none.
    ///
    /// # Errors
    ///
    /// [`Error::Remote`] naming its URL when the request fails.
    pub fn head(&self, rel: &str) -> Result<Option<u64>> {
        let location = self.location(rel)?;
        let rt =
            runtime().map_err(|e| self.err(rel)(RemoteError::Request { why: e.to_string() }))?;
        match rt.block_on(self.store.head(&location)) {
            Ok(m) => Ok(Some(m.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.err(rel)(classify(&e))),
        }
    }

    /// The object `rel`'s bytes, or None if there is none.
    ///
    /// # Errors
    ///
    /// [`Error::Remote`] naming its URL when the request fails.
    pub fn get(&self, rel: &str) -> Result<Option<Vec<u8>>> {
        let location = self.location(rel)?;
        let rt =
            runtime().map_err(|e| self.err(rel)(RemoteError::Request { why: e.to_string() }))?;
        let got = rt.block_on(async {
            let r = self.store.get(&location).await?;
            r.bytes().await
        });
        match got {
            Ok(b) => Ok(Some(b.to_vec())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.err(rel)(classify(&e))),
        }
    }

    /// Writes `bytes` as the object `rel` with one PUT: the object is replaced whole or not at
    /// all.
    ///
    /// # Errors
    ///
    /// [`Error::Remote`] naming its URL when the request fails.
    pub fn put(&self, rel: &str, bytes: Vec<u8>) -> Result<()> {
        let location = self.location(rel)?;
        let rt =
            runtime().map_err(|e| self.err(rel)(RemoteError::Request { why: e.to_string() }))?;
        rt.block_on(self.store.put(&location, bytes.into()))
            .map(|_| ())
            .map_err(|e| self.err(rel)(classify(&e)))
    }

    /// The keys (relative to the prefix) of the objects whose keys start with the prefix and
    /// `rel_dir` (a directory: empty, or ending with `/`), at any depth, sorted. Also what checks,
    /// before a batch starts, that the bucket exists and the credentials are accepted.
    ///
    /// # Errors
    ///
    /// [`Error::Remote`] naming the directory's URL when the request fails.
    pub fn list(&self, rel_dir: &str) -> Result<Vec<String>> {
        use futures_util::TryStreamExt;
        let dir = format!("{}{rel_dir}", self.prefix);
        let location = if dir.is_empty() {
            None
        } else {
            Some(self.location(rel_dir)?)
        };
        let rt = runtime()
            .map_err(|e| self.err(rel_dir)(RemoteError::Request { why: e.to_string() }))?;
        let metas: Vec<object_store::ObjectMeta> = rt
            .block_on(self.store.list(location.as_ref()).try_collect())
            .map_err(|e| self.err(rel_dir)(classify(&e)))?;
        let mut keys: Vec<String> = metas
            .into_iter()
            .filter_map(|m| {
                m.location
                    .as_ref()
                    .strip_prefix(self.prefix.as_str())
                    .map(str::to_string)
            })
            .collect();
        keys.sort();
        Ok(keys)
    }

    /// Uploads the local file `local` as the object `rel`, as [`upload_file`] does (multipart,
    /// complete or nothing; aborted on an error or a signal; an existing object refused unless
    /// `force`). Returns the bytes uploaded (0 when a signal stopped it).
    ///
    /// # Errors
    ///
    /// As [`upload_file`].
    pub fn upload(&self, local: &std::path::Path, rel: &str, force: bool) -> Result<u64> {
        let location = self.location(rel)?;
        upload_to(&self.store, &location, local, &self.url_of(rel), force)
    }

    /// Checks the object `rel` as [`crate::pack::manifest::check_recorded_ends`] checks a
    /// file (with `len`, a recorded length; without, as `check_ends` does): two concurrent
    /// range requests, for the lead and the footer, which also tell the object's length.
    pub(crate) fn ends(
        &self,
        rel: &str,
        len: Option<u64>,
        size: u64,
        hash: Option<u128>,
    ) -> std::result::Result<(u64, u128), crate::format::error::EndsError> {
        let location = self.location(rel).map_err(|e| ends_io(e.to_string()))?;
        object_ends(&self.store, &location, len, size, hash)
    }
}

/// How many objects [`Prefix::recorded_ends_many`] checks at a time (two range requests each).
const ENDS_AT_ONCE: usize = 32;

impl Prefix {
    /// Checks the objects of many `(tag, key, len, size, hash)` items as [`Prefix::ends`]
    /// checks one with a recorded length, [`ENDS_AT_ONCE`] at a time, and calls `passed` with
    /// the tag of each whose object passed (in no particular order). The items are taken from
    /// the iterator as requests finish, so memory does not grow with their number. For a
    /// rerun of a batch into a bucket: one request after another, each file would cost two
    /// round trips.
    ///
    /// # Errors
    ///
    /// [`io::Error`] when the runtime cannot start. An object that does not pass (or a request
    /// that fails) is not an error: its tag is not given to `passed`.
    pub(crate) fn recorded_ends_many<T>(
        &self,
        items: impl Iterator<Item = (T, String, u64, u64, u128)>,
        passed: &mut dyn FnMut(T),
    ) -> io::Result<()> {
        use futures_util::StreamExt;
        let rt = runtime()?;
        let checks = futures_util::stream::iter(items)
            .map(|(tag, key, len, size, hash)| async move {
                let location = self.location(&key).ok()?;
                object_ends_async(&self.store, &location, Some(len), size, Some(hash))
                    .await
                    .ok()
                    .map(|_| tag)
            })
            .buffer_unordered(ENDS_AT_ONCE);
        rt.block_on(checks.for_each(|r| {
            if let Some(tag) = r {
                passed(tag);
            }
            futures_util::future::ready(())
        }));
        Ok(())
    }
}

fn ends_io(why: String) -> crate::format::error::EndsError {
    crate::format::error::EndsError::Io {
        op: "read",
        source: io::Error::other(why),
    }
}

/// Reads the lead and the footer of the object at `location` (two concurrent range requests)
/// and checks them as a local archive's ends are checked; returns its length and hash.
fn object_ends(
    store: &Arc<dyn ObjectStore>,
    location: &StorePath,
    len: Option<u64>,
    size: u64,
    hash: Option<u128>,
) -> std::result::Result<(u64, u128), crate::format::error::EndsError> {
    let rt = runtime().map_err(|e| crate::format::error::EndsError::Io {
        op: "read",
        source: e,
    })?;
    rt.block_on(object_ends_async(store, location, len, size, hash))
}

/// [`object_ends`], as a future to run on the runtime.
async fn object_ends_async(
    store: &Arc<dyn ObjectStore>,
    location: &StorePath,
    len: Option<u64>,
    size: u64,
    hash: Option<u128>,
) -> std::result::Result<(u64, u128), crate::format::error::EndsError> {
    use crate::format::error::EndsError;
    use crate::format::{FOOTER_LEN, LEAD_LEN};
    let get = |range: GetRange| async move {
        let opts = GetOptions {
            range: Some(range),
            ..GetOptions::default()
        };
        let r = store.get_opts(location, opts).await?;
        let n = r.meta.size;
        Ok::<_, object_store::Error>((n, r.bytes().await?))
    };
    let (front, tail) = futures_util::future::join(
        get(GetRange::Bounded(0..LEAD_LEN as u64)),
        get(GetRange::Suffix(FOOTER_LEN as u64)),
    )
    .await;
    let failed = |e: object_store::Error| match e {
        object_store::Error::NotFound { .. } => EndsError::Io {
            op: "open",
            source: io::Error::new(io::ErrorKind::NotFound, "no such object"),
        },
        e if is_range_not_satisfiable(&e) => EndsError::TooShort { len: 0 },
        e => ends_io(classify(&e).to_string()),
    };
    let (n, lead) = front.map_err(failed)?;
    let (_, foot) = tail.map_err(failed)?;
    if let Some(len) = len.filter(|&l| l != n) {
        return Err(EndsError::Length { recorded: len });
    }
    if n < (LEAD_LEN + FOOTER_LEN) as u64 {
        return Err(EndsError::TooShort { len: n });
    }
    if lead.len() != LEAD_LEN || foot.len() != FOOTER_LEN {
        return Err(EndsError::Length { recorded: n });
    }
    let h = crate::format::check_decoded(&lead, &foot, n, size, hash)?;
    Ok((n, h))
}

/// [`Prefix::ends`] of the object at `url` (`s3://BUCKET/KEY`), with the default options
/// ([`default_options`]): for `verify --manifest`.
pub(crate) fn check_url_ends(
    url: &str,
    size: u64,
    hash: Option<u128>,
) -> std::result::Result<(u64, u128), crate::format::error::EndsError> {
    let (store, location) =
        store_for(url, &default_options()).map_err(|e| ends_io(e.to_string()))?;
    object_ends(&store, &location, None, size, hash)
}

/// The manifests at `url`: the object itself (`s3://BUCKET/KEY`), or, for a URL ending with
/// `/`, every `*.jsonl` object directly under it; each with its URL and bytes.
///
/// # Errors
///
/// [`Error::Remote`] naming the URL when a request fails or there is no such object.
pub(crate) fn fetch_manifests(url: &str) -> Result<Vec<(String, Vec<u8>)>> {
    let opts = default_options();
    if url.ends_with('/') {
        let dir = Prefix::new(url, &opts)?;
        let mut out = Vec::new();
        for k in dir.list("")? {
            if k.ends_with(".jsonl") && !k.contains('/') {
                if let Some(b) = dir.get(&k)? {
                    out.push((dir.url_of(&k), b));
                }
            }
        }
        return Ok(out);
    }
    let err = |source: RemoteError| Error::Remote {
        url: url.to_string(),
        source,
    };
    let (store, location) = store_for(url, &opts).map_err(err)?;
    let rt = runtime().map_err(|e| err(RemoteError::Request { why: e.to_string() }))?;
    let got = rt.block_on(async {
        let r = store.get(&location).await?;
        r.bytes().await
    });
    got.map(|b| vec![(url.to_string(), b.to_vec())])
        .map_err(|e| err(classify(&e)))
}

/// An object read from its start to its end in one pass, as from a pipe: one GET for a remote
/// object (its body arrives as it is read), or the local file of a `file://` URL. Made by
/// [`open_stream`].
pub struct ObjectStream {
    inner: StreamInner,
}

enum StreamInner {
    File(std::fs::File),
    Remote {
        body:
            std::pin::Pin<Box<dyn futures_util::Stream<Item = object_store::Result<Bytes>> + Send>>,
        /// What is left of the last piece received.
        piece: Bytes,
    },
}

impl std::fmt::Debug for ObjectStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectStream").finish_non_exhaustive()
    }
}

/// Opens the object at `url` (`s3://`, `http(s)://`, `file://`) to be read once, in order:
/// one GET request, whose body is read as it arrives (what `pack` does with a URL input).
///
/// ```no_run
/// use std::io::Read;
/// let opts = nc3pack::remote::RemoteOptions::from_env();
/// let mut s = nc3pack::remote::open_stream("https://example.org/in.nc", &opts)?;
/// let mut magic = [0u8; 4];
/// s.read_exact(&mut magic).unwrap();
/// # Ok::<(), nc3pack::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::Remote`] naming the URL: a malformed URL, no credentials, access denied, no such
/// object, or a request that still failed after its retries; [`Error::Io`] for a `file://`
/// URL whose file cannot be opened. A failure later, while the body arrives, is an I/O error
/// of the read.
pub fn open_stream(url: &str, opts: &RemoteOptions) -> Result<ObjectStream> {
    let err = |source: RemoteError| Error::Remote {
        url: url.to_string(),
        source,
    };
    if url.len() > 7 && url[..7].eq_ignore_ascii_case("file://") {
        let p = file_url_path(url).map_err(err)?;
        let f = std::fs::File::open(&p).map_err(crate::error::io_err(&p, "open"))?;
        return Ok(ObjectStream {
            inner: StreamInner::File(f),
        });
    }
    let (store, location) = store_for(url, opts).map_err(err)?;
    let rt = runtime().map_err(|e| err(RemoteError::Request { why: e.to_string() }))?;
    let got = rt
        .block_on(store.get(&location))
        .map_err(|e| err(classify(&e)))?;
    Ok(ObjectStream {
        inner: StreamInner::Remote {
            body: got.into_stream(),
            piece: Bytes::new(),
        },
    })
}

impl io::Read for ObjectStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let (body, piece) = match &mut self.inner {
            StreamInner::File(f) => return f.read(buf),
            StreamInner::Remote { body, piece } => (body, piece),
        };
        if buf.is_empty() {
            return Ok(0);
        }
        // Bounded: each turn receives a piece; empty pieces are skipped.
        while piece.is_empty() {
            use futures_util::StreamExt;
            match runtime()?.block_on(body.next()) {
                None => return Ok(0),
                Some(Ok(b)) => *piece = b,
                Some(Err(e)) => return Err(io::Error::other(classify(&e))),
            }
        }
        let n = buf.len().min(piece.len());
        buf[..n].copy_from_slice(&piece.split_to(n));
        Ok(n)
    }
}

/// A temporary archive in the temporary directory, removed when dropped, and by the signal
/// handlers of [`crate::cleanup`] (a signal must not leave it behind). Named as every temporary
/// file is, `.nc3pack-*.part` (`.nc3pack-upload-XXXXXX.part`), so that what SIGKILL leaves is
/// found by one `find -name '.nc3pack-*.part'`.
pub(crate) struct TempArchive {
    pub(crate) path: std::path::PathBuf,
    // Dropped in this order: the file removed, then taken out of the registry.
    _file: tempfile::TempPath,
    _registered: Option<crate::cleanup::Registered>,
}

pub(crate) fn temp_archive() -> Result<TempArchive> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = std::env::temp_dir();
    // Absolute: the signal handler does not know the working directory of the moment.
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    // Registered before the file is created, so a signal never misses it.
    let mut registered = None;
    let file = tempfile::Builder::new()
        .prefix(".nc3pack-upload-")
        .suffix(".part")
        .make_in(&dir, |path| {
            let (r, f) = crate::cleanup::Registered::create(path, || {
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(path)
            })?;
            registered = Some(r);
            Ok(f)
        })
        .map_err(crate::error::io_err(&dir, "create a temporary file in"))?
        .into_temp_path();
    Ok(TempArchive {
        path: file.to_path_buf(),
        _file: file,
        _registered: registered,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generic(text: &str) -> object_store::Error {
        object_store::Error::Generic {
            store: "HTTP",
            source: text.into(),
        }
    }

    #[test]
    fn a_request_that_failed_after_its_retries_says_the_status_and_the_tries() {
        let e = generic(
            "Error performing GET http://127.0.0.1:4161/x in 1.416s, after 5 retries, \
             max_retries: 5, retry_timeout: 60s  - Server returned non-2xx status code: \
             503 Service Unavailable: <Error><Code>SlowDown</Code></Error>",
        );
        assert_eq!(
            classify(&e).to_string(),
            "server error 503 Service Unavailable (SlowDown), after 6 tries in 1.4 s"
        );
        let e = generic(
            "Error performing GET http://h/x in 3ms - Server returned non-2xx status code: \
             500 Internal Server Error: ",
        );
        assert_eq!(
            classify(&e).to_string(),
            "server error 500 Internal Server Error, after 1 try in 0.0 s"
        );
        let e = generic(
            "Error performing GET http://h/x in 659ms, after 5 retries, max_retries: 5, \
             retry_timeout: 60s - HTTP error: error sending request",
        );
        assert_eq!(
            classify(&e).to_string(),
            "request failed: error sending request, after 6 tries in 0.7 s"
        );
        // Anything else as it was said, on one line.
        assert_eq!(
            classify(&generic("bad\n  thing")).to_string(),
            "request failed: Generic HTTP error: bad thing"
        );
    }

    #[test]
    fn a_timeout_says_the_tries_and_the_time_and_a_missing_bucket_is_not_a_missing_object() {
        let e = generic(
            "Error performing GET http://h/x in 120.004s - HTTP error: error sending request: \
             operation timed out",
        );
        assert_eq!(
            classify(&e).to_string(),
            "request failed: timed out, after 1 try in 120.0 s"
        );
        let e = object_store::Error::NotFound {
            path: "k".into(),
            source: "Server returned non-2xx status code: 404 Not Found: \
                     <Error><Code>NoSuchBucket</Code></Error>"
                .into(),
        };
        assert_eq!(classify(&e), RemoteError::NoSuchBucket);
        assert_eq!(debug_millis("659.2ms"), Some(659));
        assert_eq!(debug_millis("1.416s"), Some(1416));
        assert_eq!(debug_millis("12µs"), Some(0));
        assert_eq!(debug_millis("soon"), None);
    }

    #[test]
    fn only_a_416_answer_is_range_not_satisfiable() {
        // A 503 whose message happens to hold the digits 416 (a duration, a port) is not.
        let e = generic(
            "Error performing GET http://127.0.0.1:4161/x in 1.416s, after 5 retries - \
             Server returned non-2xx status code: 503 Service Unavailable: ",
        );
        assert!(!is_range_not_satisfiable(&e));
        let e = generic(
            "Error performing GET http://h/x in 3ms - Server returned non-2xx status code: \
             416 Range Not Satisfiable: ",
        );
        assert!(is_range_not_satisfiable(&e));
        let e = generic(
            "Error performing GET http://h/x in 3ms - Server returned error response: \
             <Error><Code>InvalidRange</Code><Message>no</Message></Error>",
        );
        assert!(is_range_not_satisfiable(&e));
    }
}
