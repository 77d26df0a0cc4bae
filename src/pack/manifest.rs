//! The manifest of a collection: one JSON object a line, appended as each file of a batch
//! finishes (`OUT/.nc3pack/manifest-I-of-N.jsonl`, or `--manifest PATH`).
//!
//! A line is written with one `write` on a file opened for appending, as soon as the file's
//! outcome is final (for a packed file: once its archive is synced and renamed into place), so
//! a run that is killed loses at most the lines of the files in flight; a line cut short by a
//! kill (the last one, without its newline) is ignored when the manifest is read, and the next
//! run starts on a new line.
//!
//! Fields (see README, "Packing a collection"): `status` (`packed`, `skipped` or `failed`),
//! `name` (the input's path relative to the root, which is also the archive's path relative to
//! OUT, less `.nc3z`), `input`, `output` (absolute paths), `size` and `mtime_ns` of the input
//! when it was packed, `xxh3` (the XXH3-128 of the input, 32 hex digits, the hash the archive's
//! lead records), `output_size`, `ratio`, `seconds`, and `error` for a failure. A path that is
//! not valid UTF-8 is written as a string with U+FFFD for the bytes that are not, and exactly,
//! in hex, in a second field named after it with `_hex` (`name_hex`, `input_hex`,
//! `output_hex`); readers take the `_hex` field when there is one.

use crate::error::{io_err, Result};
use crate::format::{Footer, Lead, FOOTER_LEN, LEAD_LEN};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{BufRead, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What became of one input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Packed by this run (or found packed with no line yet: a run killed between renaming
    /// the archive and writing its line).
    Packed,
    /// Already packed by an earlier run, and its archive is in place.
    Skipped,
    /// Could not be packed (`error` says why).
    Failed,
}

impl Status {
    /// The name written in the manifest.
    pub fn name(self) -> &'static str {
        match self {
            Status::Packed => "packed",
            Status::Skipped => "skipped",
            Status::Failed => "failed",
        }
    }
}

/// One line of a manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// What became of the input.
    pub status: Status,
    /// The input's path relative to the root (the archive's relative to OUT, less `.nc3z`).
    pub name: Vec<u8>,
    /// The input.
    pub input: PathBuf,
    /// The archive.
    pub output: PathBuf,
    /// The input's length (when known).
    pub size: Option<u64>,
    /// The input's modification time, nanoseconds since 1970 (when known).
    pub mtime_ns: Option<i64>,
    /// XXH3-128 of the input (packed and skipped).
    pub hash: Option<u128>,
    /// The archive's length (packed and skipped).
    pub output_size: Option<u64>,
    /// Seconds spent on this input in this run.
    pub seconds: f64,
    /// Why it failed.
    pub error: Option<String>,
    /// Whether the input was deleted once its archive was proven (`--delete-input`).
    pub deleted: bool,
}

/// Puts `bytes` under `key` as a string; when they are not UTF-8, lossily, and exactly in hex
/// under `key_hex`.
fn put_bytes(m: &mut Map<String, Value>, key: &str, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(s) => {
            m.insert(key.into(), s.into());
        }
        Err(_) => {
            m.insert(key.into(), String::from_utf8_lossy(bytes).into());
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            m.insert(format!("{key}_hex"), hex.into());
        }
    }
}

/// The bytes under `key` (from `key_hex` when there is one).
fn get_bytes(m: &Map<String, Value>, key: &str) -> Option<Vec<u8>> {
    if let Some(hex) = m.get(&format!("{key}_hex")).and_then(Value::as_str) {
        if hex.len() % 2 != 0 || !hex.is_ascii() {
            return None;
        }
        return (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
            .collect();
    }
    m.get(key)
        .and_then(Value::as_str)
        .map(|s| s.as_bytes().to_vec())
}

impl Entry {
    /// The line's JSON (without the newline).
    pub fn to_json(&self) -> String {
        let mut m = Map::new();
        m.insert("status".into(), self.status.name().into());
        put_bytes(&mut m, "name", &self.name);
        put_bytes(&mut m, "input", self.input.as_os_str().as_bytes());
        put_bytes(&mut m, "output", self.output.as_os_str().as_bytes());
        if let Some(s) = self.size {
            m.insert("size".into(), s.into());
        }
        if let Some(t) = self.mtime_ns {
            m.insert("mtime_ns".into(), t.into());
        }
        if let Some(h) = self.hash {
            m.insert("xxh3".into(), format!("{h:032x}").into());
        }
        if let Some(o) = self.output_size {
            m.insert("output_size".into(), o.into());
            if let Some(s) = self.size {
                let ratio = s as f64 / o.max(1) as f64;
                m.insert("ratio".into(), ((ratio * 1000.0).round() / 1000.0).into());
            }
        }
        m.insert(
            "seconds".into(),
            ((self.seconds * 1e6).round() / 1e6).into(),
        );
        if let Some(e) = &self.error {
            m.insert("error".into(), e.as_str().into());
        }
        if self.deleted {
            m.insert("deleted".into(), true.into());
        }
        Value::Object(m).to_string()
    }

    /// Parses one line; `None` if it is not a manifest entry.
    pub fn parse(line: &[u8]) -> Option<Entry> {
        let Value::Object(m) = serde_json::from_slice(line).ok()? else {
            return None;
        };
        let status = match m.get("status")?.as_str()? {
            "packed" => Status::Packed,
            "skipped" => Status::Skipped,
            "failed" => Status::Failed,
            _ => return None,
        };
        let path = |k| get_bytes(&m, k).map(|b| PathBuf::from(std::ffi::OsString::from_vec(b)));
        let hash = match m.get("xxh3") {
            Some(v) => Some(u128::from_str_radix(v.as_str()?, 16).ok()?),
            None => None,
        };
        Some(Entry {
            status,
            name: get_bytes(&m, "name")?,
            input: path("input")?,
            output: path("output")?,
            size: m.get("size").and_then(Value::as_u64),
            mtime_ns: m.get("mtime_ns").and_then(Value::as_i64),
            hash,
            output_size: m.get("output_size").and_then(Value::as_u64),
            seconds: m.get("seconds").and_then(Value::as_f64).unwrap_or(0.0),
            error: m.get("error").and_then(Value::as_str).map(String::from),
            deleted: m.get("deleted").and_then(Value::as_bool).unwrap_or(false),
        })
    }
}

/// Reads the manifest at `path` line by line, calling `f` with each line's number (from 1) and
/// entry, or `None` for a line that is not one. A last line without its newline (cut short by
/// a kill) is skipped.
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) when the file cannot be opened or read.
pub fn read(path: &Path, mut f: impl FnMut(u64, Option<Entry>)) -> Result<()> {
    let file = std::fs::File::open(path).map_err(io_err(path, "open"))?;
    let mut r = std::io::BufReader::new(file);
    let mut line = Vec::new();
    let mut n = 0;
    loop {
        line.clear();
        let got = r
            .read_until(b'\n', &mut line)
            .map_err(io_err(path, "read"))?;
        if got == 0 || line.last() != Some(&b'\n') {
            return Ok(());
        }
        n += 1;
        line.pop();
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        f(n, Entry::parse(&line));
    }
}

/// The manifests named by `paths`: files as given, directories' `*.jsonl` files (sorted).
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) when a path or directory cannot be read.
pub fn manifest_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(io_err(p, "stat"))?;
        if meta.is_dir() {
            let mut found = Vec::new();
            for e in std::fs::read_dir(p).map_err(io_err(p, "read directory"))? {
                let e = e.map_err(io_err(p, "read directory"))?;
                let q = e.path();
                if q.extension().is_some_and(|x| x == "jsonl") && q.is_file() {
                    found.push(q);
                }
            }
            found.sort();
            files.extend(found);
        } else {
            files.push(p.clone());
        }
    }
    Ok(files)
}

/// What the manifests say was packed, for a rerun to skip: each name's last `packed` or
/// `skipped` entry. Held compactly (a 128-bit hash of the name and 40 bytes an entry).
#[derive(Debug, Default)]
pub struct Done(HashMap<u128, Record>);

/// What a manifest recorded for a packed input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// The input's length.
    pub size: u64,
    /// The input's modification time (ns since 1970).
    pub mtime_ns: i64,
    /// XXH3-128 of the input.
    pub hash: u128,
    /// The archive's length.
    pub output_size: u64,
}

impl Done {
    /// Reads the manifests that exist among `paths` (files, or directories of `*.jsonl`).
    ///
    /// # Errors
    ///
    /// [`Error::Io`](crate::Error::Io) when one cannot be read.
    pub fn load(paths: &[PathBuf]) -> Result<Done> {
        let existing: Vec<PathBuf> = paths.iter().filter(|p| p.exists()).cloned().collect();
        let mut done = Done::default();
        for m in manifest_files(&existing)? {
            read(&m, |_, e| {
                let Some(e) = e else { return };
                if let (Status::Packed | Status::Skipped, Some(size), Some(t), Some(h), Some(o)) =
                    (e.status, e.size, e.mtime_ns, e.hash, e.output_size)
                {
                    done.0.insert(
                        key(&e.name),
                        Record {
                            size,
                            mtime_ns: t,
                            hash: h,
                            output_size: o,
                        },
                    );
                }
            })?;
        }
        Ok(done)
    }

    /// The record of `name`, if any.
    pub fn get(&self, name: &[u8]) -> Option<&Record> {
        self.0.get(&key(name))
    }

    /// Number of names recorded.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn key(name: &[u8]) -> u128 {
    xxhash_rust::xxh3::xxh3_128(name)
}

/// A manifest to append to, shared by the workers of a batch: opened (and created, with its
/// directory) when the first line is written.
#[derive(Debug)]
pub struct Manifest {
    file: Mutex<Option<std::fs::File>>,
    path: PathBuf,
}

impl Manifest {
    /// The manifest at `path`; nothing is done on disk until the first line is written.
    pub fn new(path: &Path) -> Manifest {
        Manifest {
            file: Mutex::new(None),
            path: path.to_path_buf(),
        }
    }

    /// Opens (creating it and its directory) the manifest at `path` for appending; if its last
    /// line was cut short, the next line starts on a new one.
    fn open(path: &Path) -> Result<std::fs::File> {
        if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(d).map_err(io_err(d, "create directory"))?;
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(path)
            .map_err(io_err(path, "open"))?;
        let len = file.metadata().map_err(io_err(path, "stat"))?.len();
        if len > 0 {
            let mut last = [0u8];
            file.read_exact_at(&mut last, len - 1)
                .map_err(io_err(path, "read"))?;
            if last[0] != b'\n' {
                file.write_all(b"\n").map_err(io_err(path, "write"))?;
            }
        }
        Ok(file)
    }

    /// Appends `entry` as one line, in one write.
    ///
    /// # Errors
    ///
    /// [`Error::Io`](crate::Error::Io) when it cannot be written.
    pub fn write(&self, entry: &Entry) -> Result<()> {
        let mut line = entry.to_json();
        line.push('\n');
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if f.is_none() {
            *f = Some(Manifest::open(&self.path)?);
        }
        match f.as_mut() {
            Some(f) => f
                .write_all(line.as_bytes())
                .map_err(io_err(&self.path, "write")),
            None => Ok(()),
        }
    }

    /// Makes what was written durable.
    ///
    /// # Errors
    ///
    /// [`Error::Io`](crate::Error::Io) when the sync fails.
    pub fn sync(&self) -> Result<()> {
        let f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        match f.as_ref() {
            Some(f) => f.sync_all().map_err(io_err(&self.path, "sync")),
            None => Ok(()),
        }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The cheap check of an archive a rerun trusts: its lead and footer decode (magic, version,
/// checksums), the footer's index ends where the footer starts, and the lead records an
/// original of `size` bytes (and hash `hash`, if given). Two reads of 64 and 32 bytes. Returns
/// the archive's length and the lead's hash.
///
/// # Errors
///
/// An [`EndsError`] saying what does not hold.
///
/// ```
/// use nc3pack::__private::manifest::{check_ends, EndsError};
/// let e = check_ends("samples/scalars.nc".as_ref(), 0, None).unwrap_err();
/// assert!(matches!(e, EndsError::TooShort { .. } | EndsError::Lead(_)), "{e}");
/// ```
pub fn check_ends(archive: &Path, size: u64, hash: Option<u128>) -> Result<(u64, u128), EndsError> {
    // Opened without waiting (a FIFO would wait for a writer), and read only if a regular file.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(archive)
        .map_err(|e| EndsError::Io {
            op: "open",
            source: e,
        })?;
    let meta = f.metadata().map_err(|e| EndsError::Io {
        op: "stat",
        source: e,
    })?;
    if !meta.is_file() {
        return Err(EndsError::NotRegularFile);
    }
    let len = meta.len();
    if len < (LEAD_LEN + FOOTER_LEN) as u64 {
        return Err(EndsError::TooShort { len });
    }
    let mut lead = [0u8; LEAD_LEN];
    f.read_exact_at(&mut lead, 0).map_err(|e| EndsError::Io {
        op: "read",
        source: e,
    })?;
    let lead = Lead::decode(&lead).map_err(EndsError::Lead)?;
    let mut foot = [0u8; FOOTER_LEN];
    f.read_exact_at(&mut foot, len - FOOTER_LEN as u64)
        .map_err(|e| EndsError::Io {
            op: "read",
            source: e,
        })?;
    let foot = Footer::decode(&foot).map_err(EndsError::Footer)?;
    if foot.index_offset.checked_add(foot.index_len) != Some(len - FOOTER_LEN as u64) {
        return Err(EndsError::IndexEnd);
    }
    if lead.file_len != size {
        return Err(EndsError::Size {
            restores: lead.file_len,
            size,
        });
    }
    if let Some(h) = hash.filter(|&h| h != lead.hash) {
        return Err(EndsError::Hash {
            found: lead.hash,
            recorded: h,
        });
    }
    Ok((len, lead.hash))
}

/// XXH3-128 of the file at `path`, read in 1 MiB pieces.
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) when it cannot be read.
pub fn hash_file(path: &Path) -> Result<u128> {
    let mut f = std::fs::File::open(path).map_err(io_err(path, "open"))?;
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match std::io::Read::read(&mut f, &mut buf) {
            Ok(0) => return Ok(h.digest128()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err(path, "read")(e)),
        };
        h.update(&buf[..n]);
    }
}

/// What the cheap check of an archive's ends ([`check_ends`]) found wrong.
///
/// ```
/// use nc3pack::__private::manifest::EndsError;
/// assert_eq!(EndsError::TooShort { len: 9 }.to_string(), "9 bytes, too short for an archive");
/// ```
#[derive(Debug, thiserror::Error)]
pub enum EndsError {
    /// Opening, inspecting or reading the archive failed.
    #[error("{op}: {source}")]
    Io {
        /// What was being done: "open", "stat", "read".
        op: &'static str,
        /// The I/O error.
        source: std::io::Error,
    },
    /// It is not a regular file.
    #[error("not a regular file")]
    NotRegularFile,
    /// Too short to hold a lead and a footer.
    #[error("{len} bytes, too short for an archive")]
    TooShort {
        /// Its length.
        len: u64,
    },
    /// The lead does not decode.
    #[error("lead: {0}")]
    Lead(crate::format::error::LeadError),
    /// The footer does not decode.
    #[error("footer: {0}")]
    Footer(crate::format::error::FooterError),
    /// The footer's index does not end where the footer starts.
    #[error("footer: the index does not end where the footer starts")]
    IndexEnd,
    /// The archive restores a file of another size.
    #[error("the archive restores {restores} bytes, the input has {size}")]
    Size {
        /// What the lead records.
        restores: u64,
        /// The input's size.
        size: u64,
    },
    /// The archive restores a file with another hash.
    #[error("the archive's hash {found:032x} is not the recorded {recorded:032x}")]
    Hash {
        /// What the lead records.
        found: u128,
        /// What the manifest records.
        recorded: u128,
    },
}

/// What is wrong with one archive (or input) of a collection, in
/// [`CollectionReport::failures`].
#[derive(Debug, thiserror::Error)]
pub enum CollectionProblem {
    /// The name's last manifest entry is a failure (its recorded error).
    #[error("not packed: {0}")]
    NotPacked(Box<str>),
    /// The manifest line has no size or hash to check against.
    #[error("the manifest line has no size or xxh3")]
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
pub struct CollectionReport {
    /// Archives checked.
    pub checked: usize,
    /// Archives (or inputs) that failed, each with what is wrong, in name order.
    pub failures: Vec<(PathBuf, CollectionProblem)>,
    /// Manifest lines that are not entries: (manifest, line number).
    pub bad_lines: Vec<(PathBuf, u64)>,
}

impl CollectionReport {
    /// Whether every archive verified and every line was read.
    pub fn is_ok(&self) -> bool {
        self.failures.is_empty() && self.bad_lines.is_empty()
    }
}

/// Verifies every archive the manifests list (each name's last entry: `packed` and `skipped`
/// entries name an archive; a name whose last entry is `failed`, with no archive recorded
/// before, is a failure) on `threads` threads: completely ([`crate::verify`]), that its lead
/// records the manifest's hash and size, and with `against` that `against/NAME` is the
/// original. `progress` is called with the number of archives done.
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) when a manifest cannot be read. A worker thread that cannot
/// start is not an error: the others (and the calling thread) do its share.
pub fn verify_collection(
    manifests: &[PathBuf],
    against: Option<&Path>,
    threads: usize,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<CollectionReport> {
    let mut report = CollectionReport::default();
    // Each name's last archive, and its failure if the last entry failed (held compactly: a
    // collection may list millions).
    let mut last: HashMap<Box<[u8]>, Last> = HashMap::new();
    for m in manifest_files(manifests)? {
        read(&m, |n, e| match e {
            None => report.bad_lines.push((m.clone(), n)),
            Some(e) => {
                let slot = last.entry(e.name.into_boxed_slice()).or_default();
                if e.status == Status::Failed {
                    let error = e
                        .error
                        .unwrap_or_else(|| "failed (no error recorded)".into());
                    slot.1 = Some((e.input.into_boxed_path(), error.into_boxed_str()));
                } else {
                    let archive = Archived {
                        output: e.output.into_boxed_path(),
                        size: e.size,
                        hash: e.hash,
                    };
                    *slot = (Some(archive), None);
                }
            }
        })?;
    }
    let mut entries: Vec<_> = last.into_iter().collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut todo = Vec::new();
    for (name, (archive, failed)) in entries {
        match (archive, failed) {
            (Some(a), _) => todo.push((name, a)),
            (None, Some((input, error))) => report
                .failures
                .push((input.into(), CollectionProblem::NotPacked(error))),
            (None, None) => {}
        }
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::atomic::AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, PathBuf, CollectionProblem)>> = Mutex::new(Vec::new());
    let work = || loop {
        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let Some((name, a)) = todo.get(i) else {
            return;
        };
        if let Err(what) = verify_one(name, a, against) {
            results.lock().unwrap_or_else(|p| p.into_inner()).push((
                i,
                a.output.to_path_buf(),
                what,
            ));
        }
        progress(done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1);
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
    let mut failed = results.into_inner().unwrap_or_else(|p| p.into_inner());
    failed.sort_by_key(|f| f.0);
    report.checked = todo.len();
    report
        .failures
        .extend(failed.into_iter().map(|(_, p, w)| (p, w)));
    Ok(report)
}

/// A failure a manifest recorded: the input and the error.
type Failure = (Box<Path>, Box<str>);

/// A name's last archive, and its failure if its last entry failed.
type Last = (Option<Archived>, Option<Failure>);

/// What a manifest recorded of an archive, for `verify --manifest`.
struct Archived {
    output: Box<Path>,
    size: Option<u64>,
    hash: Option<u128>,
}

/// Checks one archive of a collection; the error says what is wrong.
fn verify_one(name: &[u8], e: &Archived, against: Option<&Path>) -> Result<(), CollectionProblem> {
    let (Some(size), Some(hash)) = (e.size, e.hash) else {
        return Err(CollectionProblem::NoSizeOrHash);
    };
    check_ends(&e.output, size, Some(hash))?;
    let original = against.map(|root| root.join(OsStr::from_bytes(name)));
    let opts = crate::VerifyOptions {
        against: original.clone(),
        threads: 1,
    };
    let r = crate::repair::verify(&e.output, &opts)
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

/// Nanoseconds since 1970 of `meta`'s modification time.
pub fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    use std::os::unix::fs::MetadataExt;
    meta.mtime()
        .saturating_mul(1_000_000_000)
        .saturating_add(meta.mtime_nsec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &[u8]) -> Entry {
        Entry {
            status: Status::Packed,
            name: name.to_vec(),
            input: PathBuf::from(OsStr::from_bytes(&[b"/in/", name].concat())),
            output: PathBuf::from("/out/x.nc3z"),
            size: Some(1000),
            mtime_ns: Some(-5),
            hash: Some(0x0123_4567_89ab_cdef_0011_2233_4455_6677),
            output_size: Some(300),
            seconds: 0.25,
            error: None,
            deleted: true,
        }
    }

    #[test]
    fn names_with_newlines_quotes_and_bytes_that_are_not_utf8_round_trip() {
        for name in [
            &b"a b/c\nd.nc"[..],
            b"q\"uote\\back\ttab.nc",
            b"caf\xe9/\xff\xfe.nc",
            "ü/ñ.nc".as_bytes(),
        ] {
            let e = entry(name);
            let line = e.to_json();
            assert!(!line.contains('\n'), "{line}");
            // Standard JSON: serde_json (independent of the writer's escaping) reads it.
            let v: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(v["status"], "packed");
            if std::str::from_utf8(name).is_err() {
                assert!(v.get("name_hex").is_some(), "{line}");
                assert!(v.get("input_hex").is_some(), "{line}");
            } else {
                assert_eq!(v["name"].as_str().unwrap().as_bytes(), name);
            }
            assert_eq!(Entry::parse(line.as_bytes()), Some(e));
        }
        // The hex of a non-UTF-8 name is its bytes.
        let v: Value = serde_json::from_str(&entry(b"\xe9").to_json()).unwrap();
        assert_eq!(v["name_hex"], "e9");
        assert_eq!(v["name"], "\u{fffd}");
    }

    #[test]
    fn the_hash_is_written_as_32_hex_digits() {
        let mut e = entry(b"x");
        e.hash = Some(1);
        let v: Value = serde_json::from_str(&e.to_json()).unwrap();
        assert_eq!(v["xxh3"], "00000000000000000000000000000001");
    }

    #[test]
    fn a_cut_last_line_is_skipped_and_the_next_write_starts_a_new_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.jsonl");
        let full = entry(b"one").to_json();
        let cut = &entry(b"two").to_json()[..20];
        std::fs::write(&p, format!("{full}\n{cut}")).unwrap();
        let mut seen = vec![];
        read(&p, |n, e| seen.push((n, e.map(|e| e.name)))).unwrap();
        assert_eq!(seen, [(1, Some(b"one".to_vec()))]);
        let m = Manifest::new(&p);
        m.write(&entry(b"three")).unwrap();
        drop(m);
        let mut seen = vec![];
        read(&p, |n, e| seen.push((n, e.map(|e| e.name)))).unwrap();
        assert_eq!(
            seen,
            [
                (1, Some(b"one".to_vec())),
                (2, None),
                (3, Some(b"three".to_vec()))
            ]
        );
    }
}
