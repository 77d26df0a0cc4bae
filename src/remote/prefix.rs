//! [`Prefix`]: a bucket and key prefix that a collection is packed into, and the checks of
//! archives' ends and the manifests read back from object storage.

use super::classify::{classify, is_range_not_satisfiable, one_line};
use super::options::RemoteOptions;
use super::reader::{Rebuild, RemoteReader};
use super::runtime::runtime;
use super::store::{s3_store, store_for};
use super::upload::{check_writable, upload_to};
use crate::error::{Error, RemoteError, Result};
use object_store::path::Path as StorePath;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};
use std::io;
use std::sync::Arc;

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

    /// Uploads the local file `local` as the object `rel`, as [`super::upload_file`] does (multipart,
    /// complete or nothing; aborted on an error or a signal; an existing object refused unless
    /// `force`). Returns the bytes uploaded (0 when a signal stopped it).
    ///
    /// # Errors
    ///
    /// As [`super::upload_file`].
    pub fn upload(&self, local: &std::path::Path, rel: &str, force: bool) -> Result<u64> {
        let location = self.location(rel)?;
        upload_to(&self.store, &location, local, &self.url_of(rel), force)
    }

    /// Checks the object `rel` as a manifest's check of a local archive's ends checks a
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
    if n < crate::format::compact::COMPACT_MIN_LEN {
        return Err(EndsError::TooShort { len: n });
    }
    // A compact archive (format 1.2) may be shorter than a full lead and footer.
    if lead.len() as u64 != n.min(LEAD_LEN as u64) || foot.len() as u64 != n.min(FOOTER_LEN as u64)
    {
        return Err(EndsError::Length { recorded: n });
    }
    let h = crate::format::check_decoded(&lead, &foot, n, size, hash)?;
    Ok((n, h))
}

/// [`Prefix::ends`] of the object at `url` (`s3://BUCKET/KEY`), with `opts` (`None`:
/// [`RemoteOptions::from_env`], read now): for `verify --manifest`.
pub(crate) fn check_url_ends(
    url: &str,
    size: u64,
    hash: Option<u128>,
    opts: Option<&RemoteOptions>,
) -> std::result::Result<(u64, u128), crate::format::error::EndsError> {
    let store = match opts {
        Some(o) => store_for(url, o),
        None => store_for(url, &RemoteOptions::from_env()),
    };
    let (store, location) = store.map_err(|e| ends_io(e.to_string()))?;
    object_ends(&store, &location, None, size, hash)
}

/// The manifests at `url`: the object itself (`s3://BUCKET/KEY`), or, for a URL ending with
/// `/`, every `*.jsonl` object directly under it; each with its URL and bytes. Read with
/// `opts` (`None`: [`RemoteOptions::from_env`], read now).
///
/// # Errors
///
/// [`Error::Remote`] naming the URL when a request fails or there is no such object.
pub(crate) fn fetch_manifests(
    url: &str,
    opts: Option<&RemoteOptions>,
) -> Result<Vec<(String, Vec<u8>)>> {
    let env;
    let opts = match opts {
        Some(o) => o,
        None => {
            env = RemoteOptions::from_env();
            &env
        }
    };
    if url.ends_with('/') {
        let dir = Prefix::new(url, opts)?;
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
    let (store, location) = store_for(url, opts).map_err(err)?;
    let rt = runtime().map_err(|e| err(RemoteError::Request { why: e.to_string() }))?;
    let got = rt.block_on(async {
        let r = store.get(&location).await?;
        r.bytes().await
    });
    got.map(|b| vec![(url.to_string(), b.to_vec())])
        .map_err(|e| err(classify(&e)))
}
