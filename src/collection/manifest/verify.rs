//! Verifying a whole collection: every archive its manifests list ([`verify_collection`]).

use super::*;
use crate::collection::Shard;
#[cfg(feature = "remote")]
use crate::error::io_err;
use crate::error::Result;
use crate::read::input::CallRemote;
use std::ffi::OsStr;
#[cfg(feature = "remote")]
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What is wrong with one archive (or input) of a collection, in
/// [`VerifyCollectionReport::failures`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CollectionProblem {
    /// The name's last manifest entry is a failure (its recorded error).
    #[error("not packed: {0}")]
    NotPacked(Box<str>),
    /// No manifest line read records a size and hash to check against (a `skipped` line
    /// refers to an earlier `packed` line for them).
    #[error(
        "no manifest line read records its size and xxh3 (a `skipped` line refers to an \
         earlier `packed` line: give every manifest of the collection)"
    )]
    NoSizeOrHash,
    /// The cheap check of its ends failed.
    #[error(transparent)]
    Ends(#[from] EndsError),
    /// Verifying it failed (it could not be opened or read).
    #[error("{0}")]
    Verify(Box<crate::Error>),
    /// It is damaged: its first damage, and how many more.
    #[error("damaged: {first}{}", if *more > 0 { format!(" (and {more} more)") } else { String::new() })]
    Damaged {
        /// The first damage found.
        first: Box<crate::Damage>,
        /// Damage found after it.
        more: usize,
    },
    /// It restores a file other than the original.
    #[error("does NOT match the original {}", original.display())]
    DiffersFromOriginal {
        /// The original compared with.
        original: PathBuf,
    },
}

/// What `verify --manifest` found.
#[derive(Debug, Default)]
pub struct VerifyCollectionReport {
    /// Archives checked.
    pub checked: usize,
    /// Archives (or inputs) that failed, each with what is wrong, in name order.
    pub failures: Vec<(PathBuf, CollectionProblem)>,
    /// Manifest lines that are not entries: (manifest, line number).
    pub bad_lines: Vec<(PathBuf, u64)>,
}

impl VerifyCollectionReport {
    /// Whether every archive verified and every line was read.
    pub fn is_ok(&self) -> bool {
        self.failures.is_empty() && self.bad_lines.is_empty()
    }
}

/// How [`verify_collection`] verifies: against the originals or not, on how many threads, and
/// which share of the collection. Built with the `with_*` setters from the default (no
/// originals, all cores, every name).
///
/// ```
/// use nc3pack::collection::VerifyCollectionOptions;
/// let opts = VerifyCollectionOptions::default()
///     .with_against("/archive/cmip")
///     .with_threads(8)
///     .with_shard("1/4".parse()?);
/// # let _ = opts;
/// # Ok::<(), nc3pack::collection::ParseShardError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct VerifyCollectionOptions {
    against: Option<PathBuf>,
    threads: Option<usize>,
    shard: Shard,
}

impl VerifyCollectionOptions {
    /// Also check that `ROOT/NAME` is still the original of each archive, byte for byte.
    ///
    /// ```
    /// let o = nc3pack::collection::VerifyCollectionOptions::default().with_against("/data");
    /// # let _ = o;
    /// ```
    pub fn with_against(mut self, root: impl Into<PathBuf>) -> Self {
        self.against = Some(root.into());
        self
    }

    /// Archives verified at once, each on one thread (bounded to 1..=[`crate::MAX_THREADS`];
    /// default: the machine's cores).
    ///
    /// ```
    /// let o = nc3pack::collection::VerifyCollectionOptions::default().with_threads(4);
    /// # let _ = o;
    /// ```
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads);
        self
    }

    /// Verify only this share of the names the manifests list: those it owns
    /// ([`Shard::owns`]), as `pack --shard` shares the inputs (each name's last entry, as
    /// always). N calls, one for each I, verify every name exactly once; the manifest lines
    /// that are not entries ([`VerifyCollectionReport::bad_lines`]) are reported by share 0
    /// only.
    ///
    /// ```
    /// let o = nc3pack::collection::VerifyCollectionOptions::default().with_shard("0/2".parse()?);
    /// # let _ = o;
    /// # Ok::<(), nc3pack::collection::ParseShardError>(())
    /// ```
    pub fn with_shard(mut self, shard: Shard) -> Self {
        self.shard = shard;
        self
    }
}

/// Verifies every archive the manifests list (each name's last entry: `packed` and `skipped`
/// entries name an archive, a short `skipped` line the one recorded before it; a name whose
/// last entry is `failed`, with no archive recorded before, is a failure). The archive of a manifest in `OUT/.nc3pack` is `OUT/NAME.nc3z`,
/// wherever OUT was when it was packed (a moved collection verifies where it is); a
/// manifest elsewhere names its archives by their recorded `output`, taken relative to the
/// manifest's directory if it is relative. Each is checked on `opts`' threads: completely
/// ([`crate::verify`]), that its lead records the manifest's hash and size, and with
/// [`VerifyCollectionOptions::with_against`] that `ROOT/NAME` is the original; with
/// [`VerifyCollectionOptions::with_shard`], only that share of the names is. `progress` is
/// called with the number of archives done.
///
/// ```no_run
/// use nc3pack::collection::{verify_collection, VerifyCollectionOptions};
/// let opts = VerifyCollectionOptions::default().with_against("data").with_shard("0/3".parse()?);
/// let r = verify_collection(&["archives/.nc3pack".into()], &opts, &|_| {})?;
/// println!("{} archives verified, {} failed", r.checked, r.failures.len());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) when a manifest cannot be read;
/// [`Error::NothingToVerify`](crate::Error::NothingToVerify), before anything is verified, when
/// one of `manifests` (a directory or an object-storage prefix) holds no manifest, or its
/// manifests hold no line (empty). A worker thread that cannot start is not an error: the
/// others (and the calling thread) do its share.
///
/// Manifests and archives given by URL are read with
/// [`RemoteOptions::from_env`](crate::remote::RemoteOptions::from_env), read at this call;
/// [`verify_collection_with`] takes the options to read them with.
pub fn verify_collection(
    manifests: &[PathBuf],
    opts: &VerifyCollectionOptions,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<VerifyCollectionReport> {
    verify_manifests(manifests, opts, None, progress)
}

/// [`verify_collection`] reading the manifests and archives given by URL (`s3://`,
/// `http(s)://`) with `remote` (credentials, endpoint, region, anonymous access): the call goes
/// by `remote` alone (it reads the environment only if `remote` was made by
/// [`RemoteOptions::from_env`](crate::remote::RemoteOptions::from_env)), nothing
/// process-wide.
///
/// ```no_run
/// use nc3pack::collection::{verify_collection_with, VerifyCollectionOptions};
/// use nc3pack::remote::RemoteOptions;
/// let (opts, remote) = (VerifyCollectionOptions::default().with_threads(4), RemoteOptions::from_env().with_anon(true));
/// let r = verify_collection_with(&["s3://bucket/cmip/.nc3pack/".into()], &opts, &remote, &|_| {})?;
/// assert!(r.is_ok());
/// # Ok::<(), nc3pack::Error>(())
/// ```
///
/// # Errors
///
/// As [`verify_collection`]; [`Error::Remote`](crate::Error::Remote) when a manifest given by
/// URL cannot be read.
#[cfg(feature = "remote")]
pub fn verify_collection_with(
    manifests: &[PathBuf],
    opts: &VerifyCollectionOptions,
    remote: &crate::remote::RemoteOptions,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<VerifyCollectionReport> {
    verify_manifests(manifests, opts, Some(remote), progress)
}

/// [`verify_collection`] with the remote options the call was given (`None`: the
/// environment's, read where a URL is opened).
fn verify_manifests(
    manifests: &[PathBuf],
    opts: &VerifyCollectionOptions,
    remote: Option<&CallRemote>,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<VerifyCollectionReport> {
    let against = opts.against.as_deref();
    let threads = opts
        .threads
        .unwrap_or_else(crate::parallel::default_threads);
    let mut report = VerifyCollectionReport::default();
    // Each share name's lines that count (by the name's hash and where the line is; folded
    // into each name's last archive and failure whenever they have doubled): a collection may
    // list millions of names, in manifests of many runs.
    let mut seen: Vec<Seen> = Vec::new();
    let mut fold_at = FOLD_MIN;
    // Manifests in object storage are read from local copies (kept until the end).
    // Local manifests first, then those in object storage; each with the argument it came
    // from (`manifests[i]`), whose manifests found and entry lines read are counted.
    let mut listed: Vec<(PathBuf, PathBuf, Option<PathBuf>, usize)> = Vec::new();
    for (i, p) in manifests.iter().enumerate() {
        if url_of(p).is_none() {
            for m in manifest_files(std::slice::from_ref(p))? {
                listed.push((m.clone(), m.clone(), collection_of(&m), i));
            }
        }
    }
    let mut _copies = Vec::new();
    for (i, p) in manifests.iter().enumerate() {
        if url_of(p).is_some() {
            let mut got = Vec::new();
            _copies.extend(fetch_remote_manifests(
                std::slice::from_ref(p),
                remote,
                &mut got,
            )?);
            listed.extend(got.into_iter().map(|(m, local, out)| (m, local, out, i)));
        }
    }
    // Per argument: manifests found, and lines read (entries or not).
    let mut found = vec![(0usize, 0u64); manifests.len()];
    for &(.., i) in &listed {
        found[i].0 += 1;
    }
    // The collections the manifests are in: an entry's archive below one is named by the
    // collection's index and the name, not by a path of its own.
    let mut outs: Vec<PathBuf> = Vec::new();
    let mut read_from: Vec<Listed> = Vec::with_capacity(listed.len());
    for (k, (m, local, out, i)) in listed.into_iter().enumerate() {
        let out = out.map(|o| match outs.iter().position(|x| *x == o) {
            Some(k) => k,
            None => {
                outs.push(o);
                outs.len() - 1
            }
        });
        let manifest = u32::try_from(k)
            .map_err(|_| crate::Error::Internal(format!("more than {} manifests", u32::MAX)))?;
        let file = std::fs::File::open(&local).map_err(crate::error::io_err(&local, "open"))?;
        read_line_range_at(&local, &file, 0, u64::MAX, |n, at, line| {
            found[i].1 += 1;
            let Some(e) = Entry::parse(line) else {
                report.bad_lines.push((m.clone(), n));
                return;
            };
            let key = key(&e.name);
            // Only the share's names are held.
            if opts.shard.owns_key(key) {
                seen.push(Seen {
                    key,
                    at,
                    manifest,
                    said: Said::of(&e),
                });
                if seen.len() >= fold_at {
                    fold(&mut seen);
                    fold_at = (2 * seen.len()).max(FOLD_MIN);
                }
            }
        })?;
        read_from.push(Listed { m, local, out });
    }
    for (p, &(files, lines)) in manifests.iter().zip(&found) {
        let why = if files == 0 {
            crate::error::NothingFound::NoManifest {
                prefix: url_of(p).is_some(),
            }
        } else if lines == 0 {
            crate::error::NothingFound::NoRecord { manifests: files }
        } else {
            continue;
        };
        return Err(crate::Error::NothingToVerify {
            what: p.display().to_string(),
            why,
        });
    }
    // Each share name's last archive, or its failure with none (its bad lines are share 0's).
    fold(&mut seen);
    if opts.shard.index != 0 {
        report.bad_lines.clear();
    }
    let mut todo = Vec::new();
    let mut not_packed = Vec::new();
    for (k, s) in seen.iter().enumerate() {
        let first = k == 0 || seen[k - 1].key != s.key;
        match s.said {
            Said::Archive | Said::DoneBefore => todo.push(*s),
            Said::Failed if first => not_packed.push(*s),
            Said::Failed => {}
        }
    }
    drop(seen);
    // The names that failed, in name order: their lines read again.
    let mut buf = Vec::new();
    let mut unpacked = Vec::with_capacity(not_packed.len());
    for s in &not_packed {
        let (e, _) = read_again(&read_from, s, &mut buf)?;
        let error = e
            .error
            .unwrap_or_else(|| "failed (no error recorded)".into());
        unpacked.push((e.name, e.input, CollectionProblem::NotPacked(error.into())));
    }
    unpacked.sort_by(|a, b| a.0.cmp(&b.0));
    report
        .failures
        .extend(unpacked.into_iter().map(|(_, p, w)| (p, w)));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::atomic::AtomicUsize::new(0);
    let results: Mutex<Vec<(Vec<u8>, PathBuf, CollectionProblem)>> = Mutex::new(Vec::new());
    let lines_failed: Mutex<Option<crate::Error>> = Mutex::new(None);
    let work = || {
        let mut buf = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(s) = todo.get(i) else {
                return;
            };
            let (e, m) = match read_again(&read_from, s, &mut buf) {
                Ok(got) => got,
                Err(e) => {
                    *lines_failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    return;
                }
            };
            let a = Archived::of(&e, s.said, m);
            if let Err(what) = verify_one(&e.name, &a, &outs, against, remote) {
                let path = a.path(&e.name, &outs);
                results
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((e.name, path, what));
            }
            progress(done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1);
        }
    };
    let threads = crate::parallel::bound_threads(threads).min(todo.len().max(1));
    std::thread::scope(|s| {
        // This thread works too: verifying goes on with fewer threads if some cannot start.
        for _ in 1..threads {
            if crate::parallel::spawn_scoped(s, "verify worker", work).is_err() {
                break;
            }
        }
        work();
    });
    if let Some(e) = lines_failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    let mut failed = results.into_inner().unwrap_or_else(|p| p.into_inner());
    failed.sort_by(|a, b| a.0.cmp(&b.0));
    report.checked = todo.len();
    report
        .failures
        .extend(failed.into_iter().map(|(_, p, w)| (p, w)));
    Ok(report)
}

/// Folds at the earliest when this many lines are held.
const FOLD_MIN: usize = 1 << 16;

/// A manifest [`verify_manifests`] read: as given (a path or URL, for messages and relative
/// outputs), the local file it was read from, and the index of the collection it is in.
struct Listed {
    m: PathBuf,
    local: PathBuf,
    out: Option<usize>,
}

/// A line of a name that counts for `verify --manifest`: the hash of the name ([`key`]), the
/// line's place (its first byte in the manifest of index `manifest` among [`Listed`]), and
/// what it says. 32 bytes; the line is read again to verify the archive.
#[derive(Clone, Copy, Debug)]
struct Seen {
    key: u128,
    at: u64,
    manifest: u32,
    said: Said,
}

/// What a manifest line says of its name's archive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Said {
    /// A `packed` or `skipped` line with a record: the name's archive from now on (a failure
    /// recorded before it is forgotten).
    Archive,
    /// A short `skipped` line: the archive recorded before it; with none, its own output, with
    /// no size and hash to check against.
    DoneBefore,
    /// A `failed` line: the name's failure, unless an archive was recorded.
    Failed,
}

impl Said {
    fn of(e: &Entry) -> Said {
        if e.is_done_before() {
            Said::DoneBefore
        } else if e.status == Status::Failed {
            Said::Failed
        } else {
            Said::Archive
        }
    }
}

/// Sorts `seen` by key, each name's lines (in their order) folded into what they leave: its
/// archive's line, then its failure's, each if any. Folding again gives the same.
fn fold(seen: &mut Vec<Seen>) {
    // (Stable: a name's lines stay in their order.)
    seen.sort_by_key(|s| s.key);
    let (mut i, mut kept) = (0, 0);
    while i < seen.len() {
        let key = seen[i].key;
        let (mut archive, mut failure) = (None, None);
        while let Some(&s) = seen.get(i).filter(|s| s.key == key) {
            match s.said {
                Said::Archive => (archive, failure) = (Some(s), None),
                Said::DoneBefore if archive.is_none() => archive = Some(s),
                Said::DoneBefore => {}
                Said::Failed => failure = Some(s),
            }
            i += 1;
        }
        // (Into the places of the lines just read.)
        for s in archive.into_iter().chain(failure) {
            seen[kept] = s;
            kept += 1;
        }
    }
    seen.truncate(kept);
    seen.shrink_to_fit();
}

/// The entry of the line `s` names, read again, and its manifest.
///
/// # Errors
///
/// [`crate::Error::Io`] naming the manifest when it cannot be read, or no longer holds that
/// name's line there (it was changed while being verified).
fn read_again<'l>(
    listed: &'l [Listed],
    s: &Seen,
    buf: &mut Vec<u8>,
) -> Result<(Entry, &'l Listed)> {
    let l = &listed[s.manifest as usize];
    let file = std::fs::File::open(&l.local).map_err(crate::error::io_err(&l.local, "open"))?;
    let entry = read_line_at(&l.local, &file, s.at, buf)?
        .then(|| Entry::parse(buf))
        .flatten()
        .filter(|e| key(&e.name) == s.key);
    match entry {
        Some(e) => Ok((e, l)),
        None => Err(crate::error::io_err(&l.m, "read again")(
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("the line at byte {} changed while it was verified", s.at),
            ),
        )),
    }
}

/// `p` as a URL (`s3://`, `http(s)://`, `file://`), if it is one.
pub(super) fn url_of(p: &Path) -> Option<&str> {
    p.to_str().filter(|s| {
        ["s3://", "http://", "https://", "file://"]
            .iter()
            .any(|u| s.len() > u.len() && s[..u.len()].eq_ignore_ascii_case(u))
    })
}

/// Fetches the manifests at `urls` (objects, or prefixes ending with `/` whose `*.jsonl`
/// objects are taken) into temporary files, adding each to `listed` as (its URL, the local
/// copy, its collection: the prefix holding its `.nc3pack/`, if it is in one). Returns the
/// copies, removed when dropped.
#[cfg(feature = "remote")]
pub(super) fn fetch_remote_manifests(
    urls: &[PathBuf],
    remote: Option<&CallRemote>,
    listed: &mut Vec<(PathBuf, PathBuf, Option<PathBuf>)>,
) -> Result<Vec<tempfile::TempPath>> {
    let mut copies = Vec::new();
    for u in urls {
        let u = url_of(u).unwrap_or_default();
        for (url, bytes) in crate::remote::fetch_manifests(u, remote)? {
            let dir = std::env::temp_dir();
            let mut f = tempfile::Builder::new()
                .prefix(".nc3pack-manifest-")
                .tempfile_in(&dir)
                .map_err(io_err(&dir, "create a temporary file in"))?;
            f.write_all(&bytes).map_err(io_err(f.path(), "write"))?;
            let copy = f.into_temp_path();
            let out = url
                .rsplit_once("/.nc3pack/")
                .filter(|(_, file)| !file.is_empty() && !file.contains('/'))
                .map(|(collection, _)| PathBuf::from(collection));
            listed.push((PathBuf::from(&url), copy.to_path_buf(), out));
            copies.push(copy);
        }
    }
    Ok(copies)
}

#[cfg(not(feature = "remote"))]
pub(super) fn fetch_remote_manifests(
    urls: &[PathBuf],
    _remote: Option<&CallRemote>,
    _listed: &mut Vec<(PathBuf, PathBuf, Option<PathBuf>)>,
) -> Result<Vec<()>> {
    match urls.first() {
        Some(u) => Err(crate::Error::Remote {
            url: u.display().to_string(),
            source: crate::error::RemoteError::NotBuilt,
        }),
        None => Ok(Vec::new()),
    }
}

/// The OUT directory of a collection whose manifest is at `manifest`: the directory holding
/// the manifest's directory when that is named `.nc3pack`, else `None`. The path is taken as
/// given (resolved only when it ends in `.` or `..`, or is the current directory).
pub(super) fn collection_of(manifest: &Path) -> Option<PathBuf> {
    let dir = manifest
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = match dir.file_name() {
        Some(_) => dir.to_path_buf(),
        None => std::fs::canonicalize(dir).ok()?,
    };
    if dir.file_name() != Some(OsStr::new(".nc3pack")) {
        return None;
    }
    dir.parent().map(Path::to_path_buf)
}

/// Where `verify --manifest` finds the archive of an entry named `name` (whose line records
/// `output`) of the manifest at `manifest` (in collection `out`, an index in the caller's list
/// of collections, if it is in `OUT/.nc3pack`): `OUT/NAME.nc3z` when the manifest is in
/// `OUT/.nc3pack` and the name is plain names (so a collection moved with its `.nc3pack`
/// directory verifies where it is now); else the recorded output, relative to the manifest's
/// directory if it is relative.
pub(super) fn archive_output(
    out: Option<usize>,
    manifest: &Path,
    name: &[u8],
    output: PathBuf,
) -> ArchivePlace {
    let name = Path::new(OsStr::from_bytes(name));
    let plain = !name.as_os_str().is_empty()
        && name
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    let at = |p: PathBuf| ArchivePlace::At(p.into_boxed_path());
    match out {
        Some(k) if plain => ArchivePlace::Below(k),
        _ if url_of(&output).is_some() => at(output),
        _ if output.is_relative() => at(manifest.parent().unwrap_or(Path::new(".")).join(output)),
        _ => at(output),
    }
}

/// Where an entry's archive is ([`archive_output`]).
pub(super) enum ArchivePlace {
    /// `NAME.nc3z` in the collection of this index: most entries, held without a path.
    Below(usize),
    /// A path of its own.
    At(Box<Path>),
}

/// What a manifest recorded of an archive, for `verify --manifest`.
pub(super) struct Archived {
    output: ArchivePlace,
    size: Option<u64>,
    hash: Option<u128>,
}

impl Archived {
    /// What the line `e` (which says `said`), read from the manifest `l`, records of its
    /// archive: a lossy archive's size and hash are the restored file's, and a short `skipped`
    /// line records none.
    fn of(e: &Entry, said: Said, l: &Listed) -> Archived {
        let output = archive_output(l.out, &l.m, &e.name, e.output.clone());
        let (size, hash) = match (said, e.restored) {
            (Said::DoneBefore, _) => (None, None),
            (_, Some((size, hash))) => (Some(size), Some(hash)),
            (_, None) => (e.size, e.hash),
        };
        Archived { output, size, hash }
    }

    /// The archive's path, for the entry named `name`, in the collections `outs`.
    fn path(&self, name: &[u8], outs: &[PathBuf]) -> PathBuf {
        match &self.output {
            ArchivePlace::Below(k) => {
                let mut p = outs[*k].join(OsStr::from_bytes(name)).into_os_string();
                p.push(".nc3z");
                p.into()
            }
            ArchivePlace::At(p) => p.to_path_buf(),
        }
    }
}

/// Checks one archive of a collection (one given by URL read with `remote`, or, when `None`,
/// the environment's options); the error says what is wrong.
pub(super) fn verify_one(
    name: &[u8],
    e: &Archived,
    outs: &[PathBuf],
    against: Option<&Path>,
    remote: Option<&CallRemote>,
) -> Result<(), CollectionProblem> {
    let (Some(size), Some(hash)) = (e.size, e.hash) else {
        return Err(CollectionProblem::NoSizeOrHash);
    };
    let output = e.path(name, outs);
    match url_of(&output) {
        #[cfg(feature = "remote")]
        Some(url) if url.len() > 5 && url[..5].eq_ignore_ascii_case("s3://") => {
            crate::remote::check_url_ends(url, size, Some(hash), remote)?;
        }
        // Other URLs are checked by the complete verify below.
        Some(_) => {}
        None => {
            check_ends(&output, size, Some(hash))?;
        }
    }
    let original = against.map(|root| root.join(OsStr::from_bytes(name)));
    let opts = crate::VerifyOptions {
        against: original.clone(),
        threads: 1,
        remote: remote.cloned(),
    };
    let r = crate::verify::verify(&output, &opts)
        .map_err(|e| CollectionProblem::Verify(Box::new(e)))?;
    if let Some(first) = r.damage.first() {
        return Err(CollectionProblem::Damaged {
            first: Box::new(first.clone()),
            more: r.damage.len() - 1,
        });
    }
    if r.original_matches == Some(false) {
        return Err(CollectionProblem::DiffersFromOriginal {
            original: original.unwrap_or_default(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Each key's (archive line, failure line) by the rules of [`Said`], line by line.
    fn by_rules(lines: &[Seen]) -> HashMap<u128, (Option<u64>, Option<u64>)> {
        let mut last: HashMap<u128, (Option<u64>, Option<u64>)> = HashMap::new();
        for s in lines {
            let slot = last.entry(s.key).or_default();
            match s.said {
                Said::Archive => *slot = (Some(s.at), None),
                Said::DoneBefore => {
                    slot.0.get_or_insert(s.at);
                }
                Said::Failed => slot.1 = Some(s.at),
            }
        }
        last.retain(|_, v| v.0.is_some() || v.1.is_some());
        last
    }

    /// What `seen`, folded, holds of each key.
    fn held(seen: &[Seen]) -> HashMap<u128, (Option<u64>, Option<u64>)> {
        let mut got: HashMap<u128, (Option<u64>, Option<u64>)> = HashMap::new();
        for s in seen {
            let slot = got.entry(s.key).or_default();
            match s.said {
                Said::Failed => {
                    assert!(slot.1.is_none(), "one failure a key");
                    slot.1 = Some(s.at);
                }
                _ => {
                    assert!(slot.0.is_none() && slot.1.is_none(), "the archive first");
                    slot.0 = Some(s.at);
                }
            }
        }
        got
    }

    #[test]
    fn folding_keeps_each_names_last_archive_and_failure_wherever_it_folds() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) % n
        };
        for round in 0..200 {
            let n = 1 + next(300) as usize;
            let keys = 1 + next(40);
            let lines: Vec<Seen> = (0..n)
                .map(|i| Seen {
                    key: u128::from(next(keys)) << 70,
                    at: i as u64,
                    manifest: 0,
                    said: [Said::Archive, Said::DoneBefore, Said::Failed][next(3) as usize],
                })
                .collect();
            let want = by_rules(&lines);
            // Folded once at the end, and folded at random points on the way.
            let mut once = lines.clone();
            fold(&mut once);
            assert_eq!(held(&once), want, "round {round}: folded once");
            let mut seen = Vec::new();
            for s in &lines {
                seen.push(*s);
                if next(10) == 0 {
                    fold(&mut seen);
                }
            }
            fold(&mut seen);
            assert_eq!(held(&seen), want, "round {round}: folded on the way");
            assert!(seen.windows(2).all(|w| w[0].key <= w[1].key), "sorted");
        }
    }
}
