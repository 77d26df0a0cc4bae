//! [`RemoteReader`]: a remote object read by byte ranges, with the frames a read needs fetched
//! ahead in windows ([`ReadAt::prefetch`]).

use super::classify::{classify, is_range_not_satisfiable};
use super::options::RemoteOptions;
use super::runtime::runtime;
use super::store::store_for;
use crate::error::{Error, RemoteError, Result};
use crate::io::ReadAt;
use bytes::Bytes;
use object_store::path::Path as StorePath;
use object_store::{GetOptions, GetRange, ObjectStore};
use std::collections::BTreeMap;
use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

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
pub(super) type Rebuild =
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
    pub(super) fn open_in(
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
