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
//! lead records), `output_size`, `ratio`, `seconds`, and `error` for a failure. A lossy archive
//! (`--quantize`) restores a file other than its input: its line also has `restored_size` and
//! `restored_xxh3`, the length and hash of that file, which the archive's lead and footer
//! record. A path that is not valid UTF-8 is written as a string with U+FFFD for the bytes that
//! are not, and exactly, in hex, in a second field named after it with `_hex` (`name_hex`,
//! `input_hex`, `output_hex`); readers take the `_hex` field when there is one. A `skipped`
//! line of an input found done as recorded holds its name only (and `deleted` or `kept` when
//! set): its record is the earlier line's ([`Entry::done_before`]).
//!
//! A collection packed into object storage (`-o s3://BUCKET/PREFIX/`) has the same lines, with
//! its objects' URLs as `output`; its manifest is appended to locally and copied whole to
//! `PREFIX/.nc3pack/` in the bucket. [`verify_collection`] takes manifests by URL too (an
//! object, or a `.../.nc3pack/` prefix whose `*.jsonl` objects are read), and verifies the
//! archives they name in the bucket.

use crate::error::{io_err, Result};
pub use crate::format::error::EndsError;
use crate::format::{check_decoded, FOOTER_LEN, LEAD_LEN};
use serde_json::Value;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::Write;
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
    /// For a lossy archive: the length and XXH3-128 of the file it restores (`restored_size`,
    /// `restored_xxh3`), which its lead and footer record instead of the input's.
    pub restored: Option<(u64, u128)>,
    /// Seconds spent on this input in this run.
    pub seconds: f64,
    /// Why it failed.
    pub error: Option<String>,
    /// Whether the input was deleted once its archive was proven (`--delete-input`).
    pub deleted: bool,
    /// Why `--delete-input` kept the input of a done archive (a symbolic link: never deleted).
    pub kept: Option<String>,
}

/// The bytes of a path field: from its `_hex` twin when there is one (`None` if that is not
/// hex), else the string.
fn field_bytes(plain: Option<Value>, hex: Option<Value>) -> Option<Vec<u8>> {
    if let Some(hex) = hex.as_ref().and_then(Value::as_str) {
        if hex.len() % 2 != 0 || !hex.is_ascii() {
            return None;
        }
        return (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
            .collect();
    }
    match plain {
        Some(Value::String(s)) => Some(s.into_bytes()),
        _ => None,
    }
}

/// The fields of a manifest line that mean something to a reader, each as the JSON value
/// found (the last, if given twice); other fields are skipped without being built. Reading a
/// line this way costs a few allocations (its strings) rather than a map of every field.
#[derive(Default)]
struct Fields {
    status: Option<Value>,
    name: Option<Value>,
    name_hex: Option<Value>,
    input: Option<Value>,
    input_hex: Option<Value>,
    output: Option<Value>,
    output_hex: Option<Value>,
    size: Option<Value>,
    mtime_ns: Option<Value>,
    xxh3: Option<Value>,
    output_size: Option<Value>,
    restored_size: Option<Value>,
    restored_xxh3: Option<Value>,
    seconds: Option<Value>,
    error: Option<Value>,
    deleted: Option<Value>,
    kept: Option<Value>,
}

impl<'de> serde_core::Deserialize<'de> for Fields {
    fn deserialize<D: serde_core::Deserializer<'de>>(
        d: D,
    ) -> std::result::Result<Fields, D::Error> {
        struct V;
        impl<'de> serde_core::de::Visitor<'de> for V {
            type Value = Fields;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a manifest line (a JSON object)")
            }
            fn visit_map<A: serde_core::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Fields, A::Error> {
                let mut f = Fields::default();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    let slot = match &*key {
                        "status" => &mut f.status,
                        "name" => &mut f.name,
                        "name_hex" => &mut f.name_hex,
                        "input" => &mut f.input,
                        "input_hex" => &mut f.input_hex,
                        "output" => &mut f.output,
                        "output_hex" => &mut f.output_hex,
                        "size" => &mut f.size,
                        "mtime_ns" => &mut f.mtime_ns,
                        "xxh3" => &mut f.xxh3,
                        "output_size" => &mut f.output_size,
                        "restored_size" => &mut f.restored_size,
                        "restored_xxh3" => &mut f.restored_xxh3,
                        "seconds" => &mut f.seconds,
                        "error" => &mut f.error,
                        "deleted" => &mut f.deleted,
                        "kept" => &mut f.kept,
                        _ => {
                            map.next_value::<serde_core::de::IgnoredAny>()?;
                            continue;
                        }
                    };
                    *slot = Some(map.next_value::<Value>()?);
                }
                Ok(f)
            }
        }
        d.deserialize_map(V)
    }
}

impl Entry {
    /// The `skipped` line of an input that a manifest already records as done, with nothing
    /// changed since: its name only (plus `deleted` or `kept`, when set afterwards). The
    /// record (input, output, size, mtime, hash, archive size) is the earlier line's; a rerun
    /// of a large collection writes one of these a file, so they are kept short.
    ///
    /// ```
    /// use nc3pack::__private::manifest::Entry;
    /// let e = Entry::done_before(b"a/2001/x.nc".to_vec());
    /// assert_eq!(e.to_json(), r#"{"name":"a/2001/x.nc","status":"skipped"}"#);
    /// assert!(e.is_done_before());
    /// ```
    pub fn done_before(name: Vec<u8>) -> Entry {
        Entry::new(Status::Skipped, name)
    }

    /// An entry of `status` for `name` with nothing else recorded (empty paths, no sizes, no
    /// error), for the fields to be set on.
    ///
    /// ```
    /// use nc3pack::__private::manifest::{Entry, Status};
    /// let e = Entry { error: Some("bad".into()), ..Entry::new(Status::Failed, b"x.nc".to_vec()) };
    /// assert_eq!(e.to_json(), r#"{"error":"bad","name":"x.nc","seconds":0.0,"status":"failed"}"#);
    /// ```
    pub fn new(status: Status, name: Vec<u8>) -> Entry {
        Entry {
            status,
            name,
            input: PathBuf::new(),
            output: PathBuf::new(),
            size: None,
            mtime_ns: None,
            hash: None,
            output_size: None,
            restored: None,
            seconds: 0.0,
            error: None,
            deleted: false,
            kept: None,
        }
    }

    /// Appends the line of [`Entry::done_before`]`(name)` and its newline to `out`: written
    /// directly when the name is UTF-8 that needs no escape (the line of nearly every file of
    /// a rerun), else through [`Entry::to_json`]; the same bytes either way.
    fn push_done_before(name: &[u8], out: &mut Vec<u8>) {
        let plain = name.iter().all(|&c| c >= 0x20 && c != b'"' && c != b'\\')
            && std::str::from_utf8(name).is_ok();
        if plain {
            out.extend_from_slice(b"{\"name\":\"");
            out.extend_from_slice(name);
            out.extend_from_slice(b"\",\"status\":\"skipped\"}\n");
        } else {
            out.extend_from_slice(Entry::done_before(name.to_vec()).to_json().as_bytes());
            out.push(b'\n');
        }
    }

    /// Whether this is a `skipped` line that refers to an earlier line for its record (see
    /// [`Entry::done_before`]): a `skipped` line without a hash.
    pub fn is_done_before(&self) -> bool {
        self.status == Status::Skipped && self.hash.is_none()
    }

    /// The line's JSON (without the newline): the fields in the order of their names, as
    /// serde_json writes a map of them, written directly (a line per file of a batch).
    /// Empty `input` and `output` paths are left out, and so are `seconds` in a line that
    /// [`Entry::is_done_before`].
    pub fn to_json(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::with_capacity(384);
        let mut key = |out: &mut String, k: &str| {
            out.push(if out.is_empty() { '{' } else { ',' });
            out.push('"');
            out.push_str(k);
            out.push_str("\":");
        };
        let text = |out: &mut String, s: &str| {
            // Most strings need no escape: copied as they are (what serde_json writes).
            if s.bytes().all(|c| c >= 0x20 && c != b'"' && c != b'\\') {
                out.push('"');
                out.push_str(s);
                out.push('"');
            } else {
                out.push_str(&serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into()));
            }
        };
        let bytes =
            |out: &mut String, key: &mut dyn FnMut(&mut String, &str), k: &str, b: &[u8]| {
                key(out, k);
                match std::str::from_utf8(b) {
                    Ok(s) => text(out, s),
                    Err(_) => {
                        text(out, &String::from_utf8_lossy(b));
                        key(out, &format!("{k}_hex"));
                        out.push('"');
                        for x in b {
                            let _ = write!(out, "{x:02x}");
                        }
                        out.push('"');
                    }
                }
            };
        let float = |out: &mut String, f: f64| {
            out.push_str(&serde_json::to_string(&f).unwrap_or_else(|_| "null".into()));
        };
        if self.deleted {
            key(&mut out, "deleted");
            out.push_str("true");
        }
        if let Some(e) = &self.error {
            key(&mut out, "error");
            text(&mut out, e);
        }
        if !self.input.as_os_str().is_empty() {
            bytes(
                &mut out,
                &mut key,
                "input",
                self.input.as_os_str().as_bytes(),
            );
        }
        if let Some(k) = &self.kept {
            key(&mut out, "kept");
            text(&mut out, k);
        }
        if let Some(t) = self.mtime_ns {
            key(&mut out, "mtime_ns");
            let _ = write!(out, "{t}");
        }
        bytes(&mut out, &mut key, "name", &self.name);
        if !self.output.as_os_str().is_empty() {
            bytes(
                &mut out,
                &mut key,
                "output",
                self.output.as_os_str().as_bytes(),
            );
        }
        if let Some(o) = self.output_size {
            key(&mut out, "output_size");
            let _ = write!(out, "{o}");
            if let Some(s) = self.size {
                let ratio = s as f64 / o.max(1) as f64;
                key(&mut out, "ratio");
                float(&mut out, (ratio * 1000.0).round() / 1000.0);
            }
        }
        if let Some((size, hash)) = self.restored {
            key(&mut out, "restored_size");
            let _ = write!(out, "{size}");
            key(&mut out, "restored_xxh3");
            let _ = write!(out, "\"{hash:032x}\"");
        }
        if !self.is_done_before() {
            key(&mut out, "seconds");
            float(&mut out, (self.seconds * 1e6).round() / 1e6);
        }
        if let Some(s) = self.size {
            key(&mut out, "size");
            let _ = write!(out, "{s}");
        }
        key(&mut out, "status");
        text(&mut out, self.status.name());
        if let Some(h) = self.hash {
            key(&mut out, "xxh3");
            let _ = write!(out, "\"{h:032x}\"");
        }
        out.push('}');
        out
    }

    /// Parses one line; `None` if it is not a manifest entry.
    pub fn parse(line: &[u8]) -> Option<Entry> {
        let f: Fields = serde_json::from_slice(line).ok()?;
        let status = match f.status.as_ref()?.as_str()? {
            "packed" => Status::Packed,
            "skipped" => Status::Skipped,
            "failed" => Status::Failed,
            _ => return None,
        };
        // A path absent (no field, no `_hex` twin) is an empty one: in a `skipped` line that
        // refers to an earlier one, and in the `failed` line of a path that could not be read.
        let path = |plain: Option<Value>, hex: Option<Value>| match (&plain, &hex) {
            (None, None) => Some(PathBuf::new()),
            _ => field_bytes(plain, hex).map(|b| PathBuf::from(std::ffi::OsString::from_vec(b))),
        };
        let hash = match &f.xxh3 {
            Some(v) => Some(u128::from_str_radix(v.as_str()?, 16).ok()?),
            None => None,
        };
        // Both or neither: a lossy archive's line with one of them is not an entry.
        let restored = match (&f.restored_size, &f.restored_xxh3) {
            (None, None) => None,
            (Some(size), Some(hash)) => Some((
                size.as_u64()?,
                u128::from_str_radix(hash.as_str()?, 16).ok()?,
            )),
            _ => return None,
        };
        let string = |v: Option<Value>| match v {
            Some(Value::String(s)) => Some(s),
            _ => None,
        };
        Some(Entry {
            status,
            name: field_bytes(f.name, f.name_hex)?,
            input: path(f.input, f.input_hex)?,
            output: path(f.output, f.output_hex)?,
            size: f.size.as_ref().and_then(Value::as_u64),
            mtime_ns: f.mtime_ns.as_ref().and_then(Value::as_i64),
            hash,
            output_size: f.output_size.as_ref().and_then(Value::as_u64),
            restored,
            seconds: f.seconds.as_ref().and_then(Value::as_f64).unwrap_or(0.0),
            error: string(f.error),
            deleted: f.deleted.as_ref().and_then(Value::as_bool).unwrap_or(false),
            kept: string(f.kept),
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
    read_lines(path, |n, line| f(n, Entry::parse(line)))
}

/// Reads the manifest at `path` line by line, calling `f` with each line's number (from 1) and
/// bytes (without the newline), as [`read`] does.
fn read_lines(path: &Path, f: impl FnMut(u64, &[u8])) -> Result<()> {
    let file = std::fs::File::open(path).map_err(io_err(path, "open"))?;
    read_line_range(path, &file, 0, u64::MAX, f)
}

/// Reads the lines of `file` (the manifest at `path`) that start at a byte offset in
/// `start..end`, calling `f` with each line's number (from 1: counted from `start`, so the
/// file's own line numbers when `start` is 0) and bytes (without the newline). A line that
/// starts before `end` is read to its newline, past `end`; a last line without one (cut short
/// by a kill) is ignored. Ranges that meet cover each line once.
fn read_line_range(
    path: &Path,
    file: &std::fs::File,
    start: u64,
    end: u64,
    mut f: impl FnMut(u64, &[u8]),
) -> Result<()> {
    use std::os::unix::fs::FileExt;
    // Large reads, and lines taken where they lie in the buffer (a collection's manifest has a
    // line per file and run): only a line cut by the end of the buffer is moved.
    let mut buf = vec![0u8; 1 << 20];
    // From the byte before `start`: the first line of the range is the one after its newline.
    let mut at = start.saturating_sub(1);
    let mut skip = start > 0;
    // The file offset of `buf[0]`, and the bytes held there.
    let (mut base, mut held, mut n) = (at, 0, 0);
    loop {
        if held == buf.len() {
            // A line longer than the buffer: the buffer grows (by a line's length at most).
            buf.resize(buf.len() * 2, 0);
        }
        let got = match file.read_at(&mut buf[held..], at) {
            Ok(got) => got,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err(path, "read")(e)),
        };
        // The end: what is held has no newline (a last line cut short by a kill): ignored.
        if got == 0 {
            return Ok(());
        }
        at += got as u64;
        let stop = held + got;
        let mut from = 0;
        while let Some(k) = memchr::memchr(b'\n', &buf[from..stop]) {
            if base + from as u64 >= end {
                return Ok(());
            }
            let line = &buf[from..from + k];
            from += k + 1;
            if std::mem::take(&mut skip) {
                continue;
            }
            n += 1;
            if !line.iter().all(u8::is_ascii_whitespace) {
                f(n, line);
            }
        }
        if base + from as u64 >= end {
            return Ok(());
        }
        buf.copy_within(from..stop, 0);
        base += from as u64;
        held = stop - from;
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

/// A manifest is parsed in parts by several threads when each part has at least this many
/// bytes (about 3,500 files' `packed` lines).
const PARALLEL_PART_BYTES: u64 = 1 << 20;

/// What the manifests say was packed, for a rerun to skip: each name's last `packed` or
/// `skipped` entry. Held compactly (a 128-bit hash of the name and 40 bytes an entry).
#[derive(Debug, Default)]
pub struct Done(HashMap<u128, Record, std::hash::BuildHasherDefault<KeyHasher>>);

/// Hashes a `key` (itself a hash of the name) by taking its bits: no second hash.
#[derive(Debug, Default)]
pub struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not used for a u128 key; a plain FNV-1a for anything else.
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn write_u128(&mut self, k: u128) {
        self.0 ^= (k as u64) ^ ((k >> 64) as u64);
    }
}

/// What a manifest recorded for a packed input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// The input's length.
    pub size: u64,
    /// The input's modification time (ns since 1970).
    pub mtime_ns: i64,
    /// XXH3-128 of the file the archive restores, which its lead and footer record: the
    /// input's, or for a lossy archive the restored file's (`restored_xxh3`).
    pub hash: u128,
    /// The archive's length.
    pub output_size: u64,
    /// For a lossy archive: the length of the file it restores (`restored_size`); `None` when
    /// the archive restores its input.
    pub restored_size: Option<std::num::NonZeroU64>,
}

impl Record {
    /// The length of the file the archive restores (its lead and footer record it): the
    /// input's, or for a lossy archive the restored file's.
    ///
    /// ```
    /// use nc3pack::__private::manifest::Record;
    /// let r = Record { size: 100, mtime_ns: 0, hash: 1, output_size: 40, restored_size: None };
    /// assert_eq!(r.restored_len(), 100);
    /// let lossy = Record { restored_size: std::num::NonZeroU64::new(180), ..r };
    /// assert_eq!(lossy.restored_len(), 180);
    /// ```
    pub fn restored_len(&self) -> u64 {
        self.restored_size
            .map_or(self.size, std::num::NonZeroU64::get)
    }
}

/// The fields of a manifest line a rerun needs, borrowed from the line where they can be (a
/// string without escapes); every other field is skipped unread.
#[derive(Debug, Default, PartialEq)]
struct DoneFields<'a> {
    status: Option<Text<'a>>,
    name: Option<Text<'a>>,
    name_hex: Option<Text<'a>>,
    size: Option<u64>,
    mtime_ns: Option<i64>,
    xxh3: Option<Text<'a>>,
    output_size: Option<u64>,
    restored_size: Option<u64>,
    restored_xxh3: Option<Text<'a>>,
}

/// A JSON string, borrowed from the line when it has no escapes.
#[derive(Debug, PartialEq)]
struct Text<'a>(std::borrow::Cow<'a, str>);

impl<'de> serde_core::Deserialize<'de> for Text<'de> {
    fn deserialize<D: serde_core::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde_core::de::Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Text<'de>, E> {
                Ok(Text(v.into()))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Text<'de>, E> {
                Ok(Text(v.to_owned().into()))
            }
            fn visit_string<E>(self, v: String) -> std::result::Result<Text<'de>, E> {
                Ok(Text(v.into()))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> serde_core::Deserialize<'de> for DoneFields<'de> {
    fn deserialize<D: serde_core::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde_core::de::Visitor<'de> for V {
            type Value = DoneFields<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a manifest line (a JSON object)")
            }
            fn visit_map<A: serde_core::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<DoneFields<'de>, A::Error> {
                let mut f = DoneFields::default();
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    match &*key.0 {
                        "status" => f.status = Some(map.next_value()?),
                        "name" => f.name = Some(map.next_value()?),
                        "name_hex" => f.name_hex = Some(map.next_value()?),
                        "xxh3" => f.xxh3 = Some(map.next_value()?),
                        "restored_xxh3" => f.restored_xxh3 = Some(map.next_value()?),
                        // Numbers of another kind (or not numbers) are not recorded ones.
                        "size" => f.size = map.next_value::<Value>()?.as_u64(),
                        "mtime_ns" => f.mtime_ns = map.next_value::<Value>()?.as_i64(),
                        "output_size" => f.output_size = map.next_value::<Value>()?.as_u64(),
                        "restored_size" => f.restored_size = map.next_value::<Value>()?.as_u64(),
                        _ => {
                            map.next_value::<serde_core::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(f)
            }
        }
        d.deserialize_map(V)
    }
}

/// [`DoneFields`] of a line by a plain scan, for the lines a batch writes (a flat object of
/// strings without escapes, integers and other numbers, `true`, `false` and `null`): what
/// serde_json reads from such a line, in a fraction of the time (a rerun reads a line per
/// file). `None` when the line has anything else (an escape, a nested value, a number of
/// another form where a size or time is read, bytes that are not UTF-8, a syntax error):
/// serde_json reads it then, so every line reads as serde_json would read it.
fn scan_done_fields(line: &[u8]) -> Option<DoneFields<'_>> {
    let text = std::str::from_utf8(line).ok()?;
    let b = text.as_bytes();
    // No control character anywhere (tabs between fields neither): strings end at the first
    // quote or backslash. Other lines are serde_json's to read.
    if !b.iter().fold(true, |ok, &c| ok & (c >= 0x20)) {
        return None;
    }
    let mut at = 0;
    let ws = |at: &mut usize| {
        while b
            .get(*at)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            *at += 1;
        }
    };
    // A string without escapes or control characters, from the quote at `at`.
    let string = |at: &mut usize| -> Option<&str> {
        if b.get(*at) != Some(&b'"') {
            return None;
        }
        let start = *at + 1;
        let len = memchr::memchr2(b'"', b'\\', &b[start..])?;
        if b[start + len] != b'"' {
            return None;
        }
        *at = start + len + 1;
        Some(&text[start..start + len])
    };
    // A JSON number's text (its grammar checked), from `at`.
    let number = |at: &mut usize| -> Option<&str> {
        let start = *at;
        let digits = |at: &mut usize| {
            let from = *at;
            while b.get(*at).is_some_and(u8::is_ascii_digit) {
                *at += 1;
            }
            *at > from
        };
        if b.get(*at) == Some(&b'-') {
            *at += 1;
        }
        if b.get(*at) == Some(&b'0') {
            *at += 1;
        } else if !digits(at) {
            return None;
        }
        if b.get(*at) == Some(&b'.') {
            *at += 1;
            if !digits(at) {
                return None;
            }
        }
        if matches!(b.get(*at), Some(b'e' | b'E')) {
            *at += 1;
            if matches!(b.get(*at), Some(b'+' | b'-')) {
                *at += 1;
            }
            if !digits(at) {
                return None;
            }
        }
        Some(&text[start..*at])
    };
    // An integer written plainly (no sign, fraction or exponent; `0` alone or no leading
    // zero), as serde_json reads it into a u64 or i64; anything else is left to serde_json.
    let plain = |n: &str| -> Option<u64> {
        let digits = n.strip_prefix('-').unwrap_or(n);
        if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        if digits.len() > 1 && digits.starts_with('0') || n == "-0" {
            return None;
        }
        digits.parse().ok()
    };
    let mut f = DoneFields::default();
    ws(&mut at);
    if b.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    ws(&mut at);
    if b.get(at) == Some(&b'}') {
        at += 1;
    } else {
        loop {
            let key = string(&mut at)?;
            ws(&mut at);
            if b.get(at) != Some(&b':') {
                return None;
            }
            at += 1;
            ws(&mut at);
            match b.get(at)? {
                b'"' => {
                    let s = Text(string(&mut at)?.into());
                    match key {
                        "status" => f.status = Some(s),
                        "name" => f.name = Some(s),
                        "name_hex" => f.name_hex = Some(s),
                        "xxh3" => f.xxh3 = Some(s),
                        "restored_xxh3" => f.restored_xxh3 = Some(s),
                        // A string where a number is read: not a recorded one.
                        "size" => f.size = None,
                        "mtime_ns" => f.mtime_ns = None,
                        "output_size" => f.output_size = None,
                        "restored_size" => f.restored_size = None,
                        _ => {}
                    }
                }
                b'-' | b'0'..=b'9' => {
                    let n = number(&mut at)?;
                    match key {
                        "size" => f.size = Some(plain(n).filter(|_| !n.starts_with('-'))?),
                        "mtime_ns" => {
                            let v = plain(n)?;
                            f.mtime_ns = Some(if n.starts_with('-') {
                                0i64.checked_sub_unsigned(v)?
                            } else {
                                i64::try_from(v).ok()?
                            });
                        }
                        "output_size" => {
                            f.output_size = Some(plain(n).filter(|_| !n.starts_with('-'))?)
                        }
                        "restored_size" => {
                            f.restored_size = Some(plain(n).filter(|_| !n.starts_with('-'))?)
                        }
                        // A number where a string is read: serde_json fails the line.
                        "status" | "name" | "name_hex" | "xxh3" | "restored_xxh3" => return None,
                        _ => {}
                    }
                }
                c => {
                    let word: &[u8] = match c {
                        b't' => b"true",
                        b'f' => b"false",
                        b'n' => b"null",
                        _ => return None,
                    };
                    if !b[at..].starts_with(word) {
                        return None;
                    }
                    at += word.len();
                    match key {
                        "status" | "name" | "name_hex" | "xxh3" | "restored_xxh3" => return None,
                        "size" => f.size = None,
                        "mtime_ns" => f.mtime_ns = None,
                        "output_size" => f.output_size = None,
                        "restored_size" => f.restored_size = None,
                        _ => {}
                    }
                }
            }
            ws(&mut at);
            match b.get(at)? {
                b',' => {
                    at += 1;
                    ws(&mut at);
                }
                b'}' => {
                    at += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    ws(&mut at);
    (at == b.len()).then_some(f)
}

impl Done {
    /// Reads the manifests that exist among `paths` (files, or directories of `*.jsonl`), in
    /// that order (a name's last record wins). A file named twice (a directory and a manifest
    /// in it) is read once, where it comes last: reading it earlier too would change nothing.
    ///
    /// # Errors
    ///
    /// [`Error::Io`](crate::Error::Io) when one cannot be read.
    pub fn load(paths: &[PathBuf]) -> Result<Done> {
        use std::os::unix::fs::MetadataExt;
        let existing: Vec<PathBuf> = paths.iter().filter(|p| p.exists()).cloned().collect();
        let mut done = Done::default();
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        let files = manifest_files(&existing)?;
        let ids = files
            .iter()
            .map(|m| {
                std::fs::metadata(m)
                    .map(|meta| (meta.dev(), meta.ino()))
                    .map_err(io_err(m, "stat"))
            })
            .collect::<Result<Vec<_>>>()?;
        for (k, m) in files.iter().enumerate() {
            if ids[k + 1..].contains(&ids[k]) {
                continue;
            }
            let file = std::fs::File::open(m).map_err(io_err(m, "open"))?;
            let meta = file.metadata().map_err(io_err(m, "stat"))?;
            // A device or pipe may never end (/dev/zero): only regular files are read.
            if !meta.is_file() {
                let e = std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file");
                return Err(io_err(m, "read manifest")(e));
            }
            done.read(m, &file, meta.len(), threads)?;
        }
        Ok(done)
    }

    /// Adds the records of the manifest `file` (at `path`, `len` bytes when opened; lines
    /// appended since are read too), parsed by up to `threads` threads when it is large: each
    /// parses a part, and the records go into the map in the file's order (a name's last
    /// record wins).
    fn read(&mut self, path: &Path, file: &std::fs::File, len: u64, threads: usize) -> Result<()> {
        let parts = threads.min((len / PARALLEL_PART_BYTES).max(1) as usize);
        // Part k starts at the k-th of `parts` equal shares; the last runs to the end.
        let bound = |k: usize| {
            if k == parts {
                u64::MAX
            } else {
                len / parts as u64 * k as u64
            }
        };
        let parse = |k: usize| -> Result<Vec<(u128, Record)>> {
            let mut found = Vec::new();
            read_line_range(path, file, bound(k), bound(k + 1), |_, line| {
                found.extend(Done::parse(line).map(|(name, r)| (key(&name), r)));
            })?;
            Ok(found)
        };
        let map = &mut self.0;
        std::thread::scope(|s| {
            let rest: Vec<_> = (1..parts)
                .map(|k| {
                    (
                        k,
                        std::thread::Builder::new().spawn_scoped(s, move || parse(k)),
                    )
                })
                .collect();
            map.extend(parse(0)?);
            for (k, handle) in rest {
                // A part whose thread could not start (or ended abnormally) is parsed here.
                let records = match handle.map(|h| h.join()) {
                    Ok(Ok(records)) => records?,
                    _ => parse(k)?,
                };
                map.extend(records);
            }
            Ok(())
        })
    }

    /// A line's name and record, if it is a `packed` or `skipped` entry with a size, mtime,
    /// hash and archive size (what [`Entry::parse`] would read, without the fields a rerun
    /// does not use).
    fn parse(line: &[u8]) -> Option<(Vec<u8>, Record)> {
        let f = match scan_done_fields(line) {
            Some(f) => f,
            None => serde_json::from_slice(line).ok()?,
        };
        if !matches!(&*f.status?.0, "packed" | "skipped") {
            return None;
        }
        let name = match f.name_hex {
            Some(hex) => {
                let hex = hex.0;
                if hex.len() % 2 != 0 || !hex.is_ascii() {
                    return None;
                }
                (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
                    .collect::<Option<Vec<u8>>>()?
            }
            None => f.name?.0.into_owned().into_bytes(),
        };
        let hash = u128::from_str_radix(&f.xxh3?.0, 16).ok()?;
        // A lossy archive: what it restores (both fields, or the line is not a record).
        let (restored_size, hash) = match (f.restored_size, f.restored_xxh3) {
            (None, None) => (None, hash),
            (Some(size), Some(h)) => (
                Some(std::num::NonZeroU64::new(size)?),
                u128::from_str_radix(&h.0, 16).ok()?,
            ),
            _ => return None,
        };
        let record = Record {
            size: f.size?,
            mtime_ns: f.mtime_ns?,
            hash,
            output_size: f.output_size?,
            restored_size,
        };
        Some((name, record))
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
    state: Mutex<Appending>,
    path: PathBuf,
}

/// The file once opened, and the deferred lines not yet written to it.
#[derive(Debug, Default)]
struct Appending {
    file: Option<std::fs::File>,
    deferred: Vec<u8>,
    /// Whether a line written with [`Manifest::write`] may not be durable yet.
    unsynced: bool,
    /// How many times the file was synced.
    syncs: usize,
    /// Whether a write failed (a full disk), which may have left a line cut short: the next
    /// write starts on a new line.
    cut: bool,
}

/// Deferred lines are written once they reach this many bytes (or with the next line that is
/// not deferred, or at [`Manifest::sync`]).
const DEFERRED_BYTES: usize = 64 << 10;

impl Manifest {
    /// The manifest at `path`; nothing is done on disk until the first line is written.
    pub fn new(path: &Path) -> Manifest {
        Manifest {
            state: Mutex::new(Appending::default()),
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

    /// Writes the deferred lines and `line` (if any) in one write, and empties the deferred.
    fn flush_with(&self, st: &mut Appending, line: Option<&[u8]>) -> Result<()> {
        if st.deferred.is_empty() && line.is_none() {
            return Ok(());
        }
        if st.file.is_none() {
            st.file = Some(Manifest::open(&self.path)?);
        }
        if let Some(line) = line {
            st.deferred.extend_from_slice(line);
        }
        if std::mem::take(&mut st.cut) {
            st.deferred.insert(0, b'\n');
        }
        let r = match st.file.as_mut() {
            Some(f) => f
                .write_all(&st.deferred)
                .map_err(io_err(&self.path, "write")),
            None => Ok(()),
        };
        st.cut = r.is_err();
        st.deferred.clear();
        r
    }

    /// Appends `entry` as one line, in one write (with the deferred lines before it).
    ///
    /// # Errors
    ///
    /// [`Error::Io`](crate::Error::Io) when it cannot be written.
    pub fn write(&self, entry: &Entry) -> Result<()> {
        let mut line = entry.to_json();
        line.push('\n');
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.unsynced = true;
        self.flush_with(&mut st, Some(line.as_bytes()))
    }

    /// Appends `entry` later: with the next [`Manifest::write`], once the deferred lines reach
    /// 64 KiB, or at [`Manifest::sync`]. For lines a kill may lose without harm (a `skipped`
    /// line only repeats what an earlier line recorded): one write for hundreds of them.
    ///
    /// # Errors
    ///
    /// [`Error::Io`](crate::Error::Io) when the lines cannot be written.
    pub fn write_deferred(&self, entry: &Entry) -> Result<()> {
        let line = entry.to_json();
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.deferred.extend_from_slice(line.as_bytes());
        st.deferred.push(b'\n');
        if st.deferred.len() >= DEFERRED_BYTES {
            return self.flush_with(&mut st, None);
        }
        Ok(())
    }

    /// [`Manifest::write_deferred`] of [`Entry::done_before`]`(name)`, without building the
    /// entry (a rerun writes one a file).
    ///
    /// # Errors
    ///
    /// [`Error::Io`](crate::Error::Io) when the lines cannot be written.
    pub fn write_done_before(&self, name: &[u8]) -> Result<()> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        Entry::push_done_before(name, &mut st.deferred);
        if st.deferred.len() >= DEFERRED_BYTES {
            return self.flush_with(&mut st, None);
        }
        Ok(())
    }

    /// Writes the deferred lines and makes the lines written with [`Manifest::write`]
    /// durable. The file is not synced when only deferred lines were written since it last
    /// was (a rerun with everything done writes only those, tens of megabytes for a large
    /// collection, which a crash may lose without harm).
    ///
    /// # Errors
    ///
    /// [`Error::Io`](crate::Error::Io) when the write or the sync fails.
    pub fn sync(&self) -> Result<()> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        self.flush_with(&mut st, None)?;
        if !st.unsynced {
            return Ok(());
        }
        match st.file.as_ref() {
            Some(f) => {
                f.sync_all().map_err(io_err(&self.path, "sync"))?;
                st.unsynced = false;
                st.syncs += 1;
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Manifest {
    /// Writes the deferred lines (an error here is lost: [`Manifest::sync`] reports it).
    fn drop(&mut self) {
        let mut st = std::mem::take(self.state.get_mut().unwrap_or_else(|p| p.into_inner()));
        let _ = self.flush_with(&mut st, None);
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
    let f = open_archive(archive)?;
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
    let mut foot = [0u8; FOOTER_LEN];
    f.read_exact_at(&mut foot, len - FOOTER_LEN as u64)
        .map_err(|e| EndsError::Io {
            op: "read",
            source: e,
        })?;
    let hash = check_decoded(&lead, &foot, len, size, hash)?;
    Ok((len, hash))
}

/// Archives up to this length are read whole, in one read, by [`check_recorded_ends`].
const WHOLE_READ: u64 = 16 << 10;

/// [`check_ends`] of an archive whose length `len` a manifest recorded, with fewer system
/// calls (what a rerun does for every file): no `stat`, and an archive of up to 16 KiB read in
/// one read of one byte more than `len` (a larger one in two: its lead, and its footer with one
/// byte more), which finds that the file ends there. The archive must be exactly `len` bytes.
/// Returns the lead's hash.
///
/// # Errors
///
/// An [`EndsError`] saying what does not hold ([`EndsError::Length`] for a file of another
/// length; a directory or pipe fails to read).
///
/// ```
/// use nc3pack::__private::manifest::{check_recorded_ends, EndsError};
/// let len = std::fs::metadata("samples/scalars.nc").unwrap().len();
/// let e = check_recorded_ends("samples/scalars.nc".as_ref(), len, 0, None).unwrap_err();
/// assert!(matches!(e, EndsError::Lead(_)), "{e}");
/// let e = check_recorded_ends("samples/scalars.nc".as_ref(), len - 1, 0, None).unwrap_err();
/// assert!(matches!(e, EndsError::Length { .. }), "{e}");
/// ```
pub fn check_recorded_ends(
    archive: &Path,
    len: u64,
    size: u64,
    hash: Option<u128>,
) -> Result<u128, EndsError> {
    check_recorded_ends_of(|| open_archive(archive), len, size, hash, &mut Vec::new())
}

/// [`check_recorded_ends`] of the archive `open` opens (not called when `len` is too short
/// for one); `buf` is room to read into, kept by the caller for the next (it grows to 16 KiB
/// and a byte at most).
pub(crate) fn check_recorded_ends_of(
    open: impl FnOnce() -> Result<std::fs::File, EndsError>,
    len: u64,
    size: u64,
    hash: Option<u128>,
    buf: &mut Vec<u8>,
) -> Result<u128, EndsError> {
    if len < (LEAD_LEN + FOOTER_LEN) as u64 {
        return Err(EndsError::TooShort { len });
    }
    let f = open()?;
    let wrong_length = || EndsError::Length { recorded: len };
    if len <= WHOLE_READ {
        // Only the bytes read are looked at: what the buffer held before is not cleared.
        if buf.len() < len as usize + 1 {
            buf.resize(len as usize + 1, 0);
        }
        let buf = &mut buf[..len as usize + 1];
        if read_at_most(&f, buf, 0)? != len as usize {
            return Err(wrong_length());
        }
        let end = len as usize;
        return check_decoded(
            &buf[..LEAD_LEN],
            &buf[end - FOOTER_LEN..end],
            len,
            size,
            hash,
        );
    }
    let mut lead = [0u8; LEAD_LEN];
    if read_at_most(&f, &mut lead, 0)? != LEAD_LEN {
        return Err(wrong_length());
    }
    let mut foot = [0u8; FOOTER_LEN + 1];
    if read_at_most(&f, &mut foot, len - FOOTER_LEN as u64)? != FOOTER_LEN {
        return Err(wrong_length());
    }
    check_decoded(&lead, &foot[..FOOTER_LEN], len, size, hash)
}

/// Opens an archive to check its ends, without waiting (a FIFO would wait for a writer).
fn open_archive(archive: &Path) -> Result<std::fs::File, EndsError> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(archive)
        .map_err(|e| EndsError::Io {
            op: "open",
            source: e,
        })
}

/// Reads into `buf` from `at` in one read (retried if interrupted before reading anything);
/// returns the bytes read. A read of a regular file returns fewer bytes than asked for only
/// where the file ends, so one read of one byte more than expected finds both the bytes and
/// the end. (Anything else that reads short is taken as ending there: a wrong length, and
/// the archive is packed again.)
fn read_at_most(f: &std::fs::File, buf: &mut [u8], at: u64) -> Result<usize, EndsError> {
    loop {
        match f.read_at(buf, at) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(EndsError::Io {
                    op: "read",
                    source: e,
                })
            }
        }
    }
}

/// XXH3-128 of the file at `path`, read in 1 MiB pieces.
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) when it cannot be read.
pub fn hash_file(path: &Path) -> Result<u128> {
    let f = std::fs::File::open(path).map_err(io_err(path, "open"))?;
    hash_open_file(&f, path)
}

/// The xxh3-128 of what is left to read of `f` (opened from `path`, which errors name).
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) when it cannot be read.
pub(crate) fn hash_open_file(mut f: &std::fs::File, path: &Path) -> Result<u128> {
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

/// What is wrong with one archive (or input) of a collection, in
/// [`CollectionReport::failures`].
#[derive(Debug, thiserror::Error)]
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
/// entries name an archive, a short `skipped` line the one recorded before it; a name whose
/// last entry is `failed`, with no archive recorded before, is a failure). The archive of a manifest in `OUT/.nc3pack` is `OUT/NAME.nc3z`,
/// wherever OUT was when it was packed (a moved collection verifies where it is); a
/// manifest elsewhere names its archives by their recorded `output`, taken relative to the
/// manifest's directory if it is relative. Each is checked on `threads` threads: completely
/// ([`crate::verify`]), that its lead records the manifest's hash and size, and with `against`
/// that `against/NAME` is the original. `progress` is called with the number of archives done.
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) when a manifest cannot be read;
/// [`Error::NothingToVerify`](crate::Error::NothingToVerify), before anything is verified, when
/// one of `manifests` (a directory or an object-storage prefix) holds no manifest, or its
/// manifests hold no line (empty). A worker thread that cannot start is not an error: the
/// others (and the calling thread) do its share.
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
            _copies.extend(fetch_remote_manifests(std::slice::from_ref(p), &mut got)?);
            listed.extend(got.into_iter().map(|(m, local, out)| (m, local, out, i)));
        }
    }
    // Per argument: manifests found, and lines read (entries or not).
    let mut found = vec![(0usize, 0u64); manifests.len()];
    for &(.., i) in &listed {
        found[i].0 += 1;
    }
    for (m, local, out, i) in listed {
        read(&local, |n, e| {
            found[i].1 += 1;
            record(&mut report, &mut last, &m, out.as_deref(), n, e);
        })?;
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

/// Takes line `n` of the manifest `m` (in collection `out`, if in one), entry `e` (`None`: not
/// an entry) into `last`, each name's last archive or failure, or `report`'s unreadable lines.
fn record(
    report: &mut CollectionReport,
    last: &mut HashMap<Box<[u8]>, Last>,
    m: &Path,
    out: Option<&Path>,
    n: u64,
    e: Option<Entry>,
) {
    match e {
        None => report.bad_lines.push((m.to_path_buf(), n)),
        // A `skipped` line that refers to an earlier one keeps that one's record; with
        // none read (a manifest of the collection not given), the archive is checked
        // without a recorded size and hash, which is a failure that says so.
        Some(e) if e.is_done_before() => {
            let slot = last.entry(e.name.clone().into_boxed_slice()).or_default();
            if slot.0.is_none() {
                let output = archive_path(out, m, &e.name, e.output);
                slot.0 = Some(Archived {
                    output: output.into_boxed_path(),
                    size: None,
                    hash: None,
                });
            }
        }
        Some(e) => {
            let output =
                (e.status != Status::Failed).then(|| archive_path(out, m, &e.name, e.output));
            let slot = last.entry(e.name.into_boxed_slice()).or_default();
            if let Some(output) = output {
                // What the archive records: for a lossy one, the restored file's.
                let (size, hash) = match e.restored {
                    Some((size, hash)) => (Some(size), Some(hash)),
                    None => (e.size, e.hash),
                };
                let archive = Archived {
                    output: output.into_boxed_path(),
                    size,
                    hash,
                };
                *slot = (Some(archive), None);
            } else {
                let error = e
                    .error
                    .unwrap_or_else(|| "failed (no error recorded)".into());
                slot.1 = Some((e.input.into_boxed_path(), error.into_boxed_str()));
            }
        }
    }
}

/// `p` as a URL (`s3://`, `http(s)://`, `file://`), if it is one.
fn url_of(p: &Path) -> Option<&str> {
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
fn fetch_remote_manifests(
    urls: &[PathBuf],
    listed: &mut Vec<(PathBuf, PathBuf, Option<PathBuf>)>,
) -> Result<Vec<tempfile::TempPath>> {
    let mut copies = Vec::new();
    for u in urls {
        let u = url_of(u).unwrap_or_default();
        for (url, bytes) in crate::remote::fetch_manifests(u)? {
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
fn fetch_remote_manifests(
    urls: &[PathBuf],
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
fn collection_of(manifest: &Path) -> Option<PathBuf> {
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
/// `output`) of the manifest at `manifest` (in collection `out`, if it is in `OUT/.nc3pack`):
/// `OUT/NAME.nc3z` when the manifest is in `OUT/.nc3pack` and the name is plain names (so a
/// collection moved with its `.nc3pack` directory verifies where it is now); else the
/// recorded output, relative to the manifest's directory if it is relative.
fn archive_path(out: Option<&Path>, manifest: &Path, name: &[u8], output: PathBuf) -> PathBuf {
    let name = Path::new(OsStr::from_bytes(name));
    let plain = !name.as_os_str().is_empty()
        && name
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    match out {
        Some(out) if plain => {
            let mut p = out.join(name).into_os_string();
            p.push(".nc3z");
            p.into()
        }
        _ if url_of(&output).is_some() => output,
        _ if output.is_relative() => manifest.parent().unwrap_or(Path::new(".")).join(output),
        _ => output,
    }
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
    match url_of(&e.output) {
        #[cfg(feature = "remote")]
        Some(url) if url.len() > 5 && url[..5].eq_ignore_ascii_case("s3://") => {
            crate::remote::check_url_ends(url, size, Some(hash))?;
        }
        // Other URLs are checked by the complete verify below.
        Some(_) => {}
        None => {
            check_ends(&e.output, size, Some(hash))?;
        }
    }
    let original = against.map(|root| root.join(OsStr::from_bytes(name)));
    let opts = crate::VerifyOptions {
        against: original.clone(),
        threads: 1,
    };
    let r = crate::verify::verify(&e.output, &opts)
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
    use serde_json::Map;

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
            restored: None,
            seconds: 0.25,
            error: None,
            deleted: true,
            kept: None,
        }
    }

    #[test]
    fn a_manifest_named_twice_counts_where_it_comes_last() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
        for (path, size) in [(&a, 1), (&b, 2)] {
            let line = Entry {
                size: Some(size),
                ..entry(b"x.nc")
            };
            std::fs::write(path, line.to_json() + "\n").unwrap();
        }
        let size = |paths: &[PathBuf]| Done::load(paths).unwrap().get(b"x.nc").unwrap().size;
        let d = dir.path().to_path_buf();
        // The directory's files in order: b's line is the last.
        assert_eq!(size(std::slice::from_ref(&d)), 2);
        assert_eq!(size(&[d.clone(), b.clone()]), 2);
        // a named again after the directory: read after b (as it always was), so it wins.
        assert_eq!(size(&[d.clone(), a.clone()]), 1);
        assert_eq!(size(&[a.clone(), d.clone()]), 2);
        assert_eq!(size(&[b, d, a]), 1);
    }

    #[test]
    fn the_short_skipped_line_is_written_as_its_entry_would_be() {
        let mut out = Vec::new();
        for name in [
            &b"a/2001/x.nc"[..],
            b"",
            b"q\"uote\\back\ttab\nnl\x7f.nc",
            b"\x1f.nc",
            b"caf\xe9/\xff\xfe.nc",
            "ü/ñ/日本.nc".as_bytes(),
        ] {
            out.clear();
            Entry::push_done_before(name, &mut out);
            let want = Entry::done_before(name.to_vec()).to_json() + "\n";
            assert_eq!(out, want.as_bytes(), "{}", want);
        }
        // Through the manifest, deferred: the same lines as `write_deferred` of the entries.
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
        let (ma, mb) = (Manifest::new(&a), Manifest::new(&b));
        for name in [&b"x.nc"[..], b"y\\.nc", b"\xff.nc"] {
            ma.write_done_before(name).unwrap();
            mb.write_deferred(&Entry::done_before(name.to_vec()))
                .unwrap();
        }
        drop((ma, mb));
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
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

    /// Lines are read across the reads' boundaries, longer than a read, blank, or ended by
    /// CRLF, with their numbers; the whole file split at newlines is the reference.
    #[test]
    fn lines_longer_than_a_read_and_across_reads_come_whole_and_numbered() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.jsonl");
        let long = |n: usize, c: u8| vec![c; n];
        let mut lines: Vec<Vec<u8>> = vec![
            b"first".to_vec(),
            long((1 << 20) - 3, b'a'),
            b"".to_vec(),
            long(3 << 20, b'b'),
            b"  \t".to_vec(),
            b"crlf\r".to_vec(),
        ];
        lines.extend((0..20_000).map(|k| format!("line {k}").into_bytes()));
        lines.push(long(5 << 20, b'c'));
        let mut text = lines.join(&b'\n');
        text.extend_from_slice(b"\ncut short");
        std::fs::write(&p, &text).unwrap();
        let mut seen = vec![];
        read_lines(&p, |n, l| seen.push((n, l.to_vec()))).unwrap();
        let want: Vec<(u64, Vec<u8>)> = (1..)
            .zip(lines)
            .filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace))
            .collect();
        assert_eq!(seen.len(), want.len());
        assert!(seen == want);
    }

    /// Ranges that meet, cut anywhere (inside a line, at a newline, just after one, inside
    /// a line longer than a read), read every line once and in order, as the whole file does.
    #[test]
    fn ranges_that_meet_read_each_line_once() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.jsonl");
        let mut lines: Vec<Vec<u8>> = vec![b"a".to_vec(), b"".to_vec(), vec![b'x'; 3 << 20]];
        lines.extend((0..5000).map(|k| format!("line {k}").into_bytes()));
        lines.push(b"z".to_vec());
        let mut text = lines.join(&b'\n');
        text.extend_from_slice(b"\ncut short");
        std::fs::write(&p, &text).unwrap();
        let mut want = vec![];
        read_lines(&p, |_, l| want.push(l.to_vec())).unwrap();
        assert_eq!(want.len(), lines.len() - 1, "the blank line is left out");
        let file = std::fs::File::open(&p).unwrap();
        let len = text.len() as u64;
        let newline = 2 + (3 << 20) + 1; // the offset of the newline after the long line
        let cuts: Vec<Vec<u64>> = vec![
            vec![1],
            vec![2],
            vec![3],
            vec![4],
            vec![100],
            vec![newline, newline + 1, newline + 2],
            vec![newline - 1, len - 10, len - 1],
            vec![len / 3, len / 2, 2 * len / 3],
            (1..64).map(|k| len * k / 64).collect(),
            vec![len],
            vec![len + 5],
        ];
        for cut in cuts {
            let bounds: Vec<u64> = std::iter::once(0)
                .chain(cut.iter().copied())
                .chain(std::iter::once(u64::MAX))
                .collect();
            let mut seen = vec![];
            for w in bounds.windows(2) {
                read_line_range(&p, &file, w[0], w[1], |_, l| seen.push(l.to_vec())).unwrap();
            }
            assert_eq!(seen.len(), want.len(), "cut at {cut:?}");
            assert!(seen == want, "cut at {cut:?}");
        }
    }

    /// A manifest parsed by several threads holds what one thread reads: each name's last
    /// record, also when its lines lie in different parts.
    #[test]
    fn done_read_in_parts_equals_done_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.jsonl");
        let mut text = String::new();
        // 40,000 names, each packed twice far apart (the later wins), with short `skipped`
        // lines (no record of their own) between.
        for round in 0..2u64 {
            for k in 0..40_000u64 {
                let mut e = entry(format!("set/{k}.nc").as_bytes());
                e.size = Some(k + round);
                e.hash = Some(u128::from(k) << 64 | u128::from(round));
                text.push_str(&e.to_json());
                text.push('\n');
                if k % 7 == 0 {
                    text.push_str(
                        &Entry::done_before(format!("set/{k}.nc").into_bytes()).to_json(),
                    );
                    text.push('\n');
                }
            }
        }
        std::fs::write(&p, &text).unwrap();
        let file = std::fs::File::open(&p).unwrap();
        let len = text.len() as u64;
        assert!(
            len > 8 * PARALLEL_PART_BYTES,
            "{len} bytes: parts of 1 MiB and more"
        );
        let mut whole = Done::default();
        read_lines(&p, |_, line| {
            if let Some((name, r)) = Done::parse(line) {
                whole.0.insert(key(&name), r);
            }
        })
        .unwrap();
        assert_eq!(whole.len(), 40_000);
        for threads in [1, 2, 3, 8] {
            let mut parts = Done::default();
            parts.read(&p, &file, len, threads).unwrap();
            assert_eq!(parts.0, whole.0, "{threads} threads");
        }
        let r = whole.get(b"set/123.nc").unwrap();
        assert_eq!((r.size, r.hash), (124, 123 << 64 | 1));
    }

    /// What the line says read through serde_json's own map of every field (independent of
    /// the reader of a few fields): the fields an entry takes, the last when one is repeated.
    fn through_value(line: &str) -> Option<Entry> {
        let Value::Object(m) = serde_json::from_str(line).ok()? else {
            return None;
        };
        let bytes = |k: &str| -> Option<Vec<u8>> {
            match m.get(&format!("{k}_hex")) {
                Some(h) => {
                    let h = h.as_str()?;
                    (0..h.len())
                        .step_by(2)
                        .map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok())
                        .collect()
                }
                None => Some(m.get(k)?.as_str()?.as_bytes().to_vec()),
            }
        };
        // An absent path (no field, no `_hex` twin) is an empty one.
        let path = |k: &str| match (m.get(k), m.get(&format!("{k}_hex"))) {
            (None, None) => Some(PathBuf::new()),
            _ => bytes(k).map(|b| PathBuf::from(std::ffi::OsString::from_vec(b))),
        };
        Some(Entry {
            status: match m.get("status")?.as_str()? {
                "packed" => Status::Packed,
                "skipped" => Status::Skipped,
                "failed" => Status::Failed,
                _ => return None,
            },
            name: bytes("name")?,
            input: path("input")?,
            output: path("output")?,
            size: m.get("size").and_then(Value::as_u64),
            mtime_ns: m.get("mtime_ns").and_then(Value::as_i64),
            hash: match m.get("xxh3") {
                Some(v) => Some(u128::from_str_radix(v.as_str()?, 16).ok()?),
                None => None,
            },
            output_size: m.get("output_size").and_then(Value::as_u64),
            restored: match (m.get("restored_size"), m.get("restored_xxh3")) {
                (None, None) => None,
                (Some(s), Some(h)) => {
                    Some((s.as_u64()?, u128::from_str_radix(h.as_str()?, 16).ok()?))
                }
                _ => return None,
            },
            seconds: m.get("seconds").and_then(Value::as_f64).unwrap_or(0.0),
            error: m.get("error").and_then(Value::as_str).map(String::from),
            deleted: m.get("deleted").and_then(Value::as_bool).unwrap_or(false),
            kept: m.get("kept").and_then(Value::as_str).map(String::from),
        })
    }

    #[test]
    fn a_line_reads_as_a_map_of_all_its_fields_would_give_it() {
        let lines = [
            entry(b"plain").to_json(),
            entry(b"caf\xe9\n\"q\"").to_json(),
            // Repeated fields (the last counts), unknown ones of every kind, odd types.
            r#"{"status":"failed","status":"packed","name":"a","name":"b","input":"/i","output":"/o","x":{"y":[1,{"z":null}]},"size":"12","mtime_ns":-3.5,"seconds":"no","deleted":1}"#.into(),
            r#"{"input":"/i\u00e9\n","output":"/o","name":"n","status":"skipped","size":7,"mtime_ns":-9,"xxh3":"ff","output_size":99,"ratio":0.07,"error":null,"deleted":true}"#.into(),
            r#"{"status":"packed","name":"n","name_hex":"6e0a","input":"/i","output":"/o","kept":"a link"}"#.into(),
            // No output (a path that could not be read), no paths (a short skipped line).
            r#"{"status":"packed","name":"n","input":"/i"}"#.into(),
            Entry::done_before(b"n\xff".to_vec()).to_json(),
            // A lossy archive's line: both of what it restores.
            Entry {
                restored: Some((1234, 0xabc << 64 | 0xdef)),
                ..entry(b"lossy")
            }
            .to_json(),
            // Not entries: one of the two alone, or of another type.
            r#"{"status":"packed","name":"n","size":1,"mtime_ns":2,"xxh3":"ff","output_size":3,"restored_size":4}"#.into(),
            r#"{"status":"packed","name":"n","size":1,"mtime_ns":2,"xxh3":"ff","output_size":3,"restored_xxh3":"ee"}"#.into(),
            r#"{"status":"packed","name":"n","size":1,"mtime_ns":2,"xxh3":"ff","output_size":3,"restored_size":"4","restored_xxh3":"ee"}"#.into(),
            r#"{"status":"packed","name":"n","size":1,"mtime_ns":2,"xxh3":"ff","output_size":3,"restored_size":4,"restored_xxh3":"zz"}"#.into(),
            // Not entries.
            r#"{"status":"packed","name":"n","name_hex":"6","input":"/i","output":"/o"}"#.into(),
            r#"{"status":"packed","name":"n","input":"/i","output":"/o","xxh3":"zz"}"#.into(),
            r#"{"status":"done","name":"n","input":"/i","output":"/o"}"#.into(),
            r#"{"status":"packed","name":"n","input":"/i","output_hex":"zz"}"#.into(),
            r#"{"status":"packed","name":7,"input":"/i","output":"/o"}"#.into(),
            r#"["status","packed"]"#.into(),
            r#"{"status":"packed","name":"n","input":"/i","output":"/o"} trailing"#.into(),
            "".into(),
        ];
        let mut entries = 0;
        for line in &lines {
            let want = through_value(line);
            entries += usize::from(want.is_some());
            assert_eq!(Entry::parse(line.as_bytes()), want, "{line}");
        }
        assert_eq!(entries, 8);
        // A rerun reads the same records from each line (for a lossy archive, the hash and
        // length of what it restores, which its ends record).
        for line in &lines {
            let want = Entry::parse(line.as_bytes()).and_then(|e| {
                let (hash, restored_size) = match e.restored {
                    Some((size, hash)) => (hash, Some(std::num::NonZeroU64::new(size)?)),
                    None => (e.hash?, None),
                };
                e.hash?;
                let r = Record {
                    size: e.size?,
                    mtime_ns: e.mtime_ns?,
                    hash,
                    output_size: e.output_size?,
                    restored_size,
                };
                (e.status != Status::Failed).then_some((e.name, r))
            });
            assert_eq!(Done::parse(line.as_bytes()), want, "{line}");
        }
    }

    #[test]
    fn deferred_lines_are_written_in_order_before_the_next_line_at_sync_and_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d/m.jsonl");
        let names = |p: &Path| {
            let mut seen = vec![];
            if p.exists() {
                read(p, |_, e| seen.push(e.unwrap().name)).unwrap();
            }
            seen
        };
        let m = Manifest::new(&p);
        m.write_deferred(&entry(b"1")).unwrap();
        m.write_deferred(&entry(b"2")).unwrap();
        assert_eq!(names(&p), Vec::<Vec<u8>>::new());
        m.write(&entry(b"3")).unwrap();
        assert_eq!(names(&p), [b"1", b"2", b"3"]);
        m.write_deferred(&entry(b"4")).unwrap();
        m.sync().unwrap();
        assert_eq!(names(&p), [b"1", b"2", b"3", b"4"]);
        m.write_deferred(&entry(b"5")).unwrap();
        drop(m);
        assert_eq!(names(&p), [b"1", b"2", b"3", b"4", b"5"]);
        // Many deferred lines are written once they fill the buffer, whole lines only.
        let m = Manifest::new(&p);
        let line = entry(b"6").to_json().len() + 1;
        let n = DEFERRED_BYTES / line + 1;
        for _ in 0..n {
            m.write_deferred(&entry(b"6")).unwrap();
        }
        assert_eq!(names(&p).len(), 5 + n);
        std::mem::forget(m);
    }

    /// An archive of `samples/NAME` packed into `dir`, and the sample's length.
    fn packed(dir: &Path, name: &str) -> (PathBuf, u64) {
        let input = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("samples")
            .join(name);
        let out = dir.join(format!("{name}.nc3z"));
        crate::pack_file(&input, &out, &crate::PackOptions::fast().with_threads(1)).unwrap();
        (out, std::fs::metadata(&input).unwrap().len())
    }

    #[test]
    fn the_recorded_length_check_takes_exactly_that_length_and_what_check_ends_takes() {
        let dir = tempfile::tempdir().unwrap();
        let mut lens = vec![];
        for sample in ["scalars.nc", "classic_records.nc", "obs_points.nc"] {
            let (z, size) = packed(dir.path(), sample);
            let bytes = std::fs::read(&z).unwrap();
            let len = bytes.len() as u64;
            lens.push(len);
            let (full_len, hash) = check_ends(&z, size, None).unwrap();
            assert_eq!(full_len, len);
            assert_eq!(
                check_recorded_ends(&z, len, size, Some(hash)).unwrap(),
                hash
            );
            assert!(matches!(
                check_recorded_ends(&z, len, size, Some(hash ^ 1)),
                Err(EndsError::Hash { .. })
            ));
            assert!(matches!(
                check_recorded_ends(&z, len, size + 1, None),
                Err(EndsError::Size { .. })
            ));
            // Another length recorded than the file has: longer, shorter.
            for recorded in [len + 1, len - 1] {
                assert!(
                    matches!(
                        check_recorded_ends(&z, recorded, size, None),
                        Err(EndsError::Length { .. } | EndsError::Footer(_))
                    ),
                    "{sample} {recorded}"
                );
            }
            // Bytes appended after an intact footer: the footer is not at the end any more.
            let longer = dir.path().join("longer.nc3z");
            std::fs::write(
                &longer,
                [&bytes[..], &bytes[bytes.len() - FOOTER_LEN..]].concat(),
            )
            .unwrap();
            assert!(matches!(
                check_recorded_ends(&longer, len, size, None),
                Err(EndsError::Length { .. })
            ));
            // A flipped byte in the footer.
            let mut bad = bytes.clone();
            let i = bad.len() - 10;
            bad[i] ^= 0x40;
            std::fs::write(&longer, &bad).unwrap();
            assert!(check_recorded_ends(&longer, len, size, None).is_err());
            assert!(check_ends(&longer, size, None).is_err());
        }
        // Small (read whole) and large (read in two) archives both covered.
        assert!(lens.iter().any(|&l| l <= WHOLE_READ), "{lens:?}");
        assert!(lens.iter().any(|&l| l > WHOLE_READ), "{lens:?}");
        // Not a file: a directory, a FIFO (not waited on).
        let d = dir.path().join("dir.nc3z");
        std::fs::create_dir(&d).unwrap();
        assert!(check_recorded_ends(&d, 200, 1, None).is_err());
        let fifo = dir.path().join("fifo.nc3z");
        let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a plain system call on a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(check_recorded_ends(&fifo, 200, 1, None).is_err());
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

    /// The line's JSON through a serde_json map of its fields (what `to_json` wrote before it
    /// wrote them directly).
    fn through_map(e: &Entry) -> String {
        let mut m = Map::new();
        m.insert("status".into(), e.status.name().into());
        put_bytes(&mut m, "name", &e.name);
        put_bytes(&mut m, "input", e.input.as_os_str().as_bytes());
        put_bytes(&mut m, "output", e.output.as_os_str().as_bytes());
        if let Some(s) = e.size {
            m.insert("size".into(), s.into());
        }
        if let Some(t) = e.mtime_ns {
            m.insert("mtime_ns".into(), t.into());
        }
        if let Some(h) = e.hash {
            m.insert("xxh3".into(), format!("{h:032x}").into());
        }
        if let Some(o) = e.output_size {
            m.insert("output_size".into(), o.into());
            if let Some(s) = e.size {
                let ratio = s as f64 / o.max(1) as f64;
                m.insert("ratio".into(), ((ratio * 1000.0).round() / 1000.0).into());
            }
        }
        if let Some((size, hash)) = e.restored {
            m.insert("restored_size".into(), size.into());
            m.insert("restored_xxh3".into(), format!("{hash:032x}").into());
        }
        m.insert("seconds".into(), ((e.seconds * 1e6).round() / 1e6).into());
        if let Some(e) = &e.error {
            m.insert("error".into(), e.as_str().into());
        }
        if e.deleted {
            m.insert("deleted".into(), true.into());
        }
        if let Some(k) = &e.kept {
            m.insert("kept".into(), k.as_str().into());
        }
        Value::Object(m).to_string()
    }

    #[test]
    fn lines_are_written_as_a_serde_json_map_of_the_fields_would_be() {
        let mut entries = vec![];
        for name in [
            &b"plain.nc"[..],
            b"a \"q\"\n\t\\/\x01.nc",
            b"caf\xe9/\xff.nc",
            "ü/ñ.nc".as_bytes(),
        ] {
            let mut e = entry(name);
            entries.push(e.clone());
            e.output = PathBuf::from(OsStr::from_bytes(&[b"/o/", name].concat()));
            e.deleted = false;
            e.kept = Some("a symbolic link: \"kept\"".into());
            e.error = Some("bad\nthing \u{7f}".into());
            entries.push(e.clone());
            e.size = None;
            e.mtime_ns = Some(i64::MIN);
            e.hash = None;
            e.seconds = 1e-9;
            entries.push(e.clone());
            e.restored = Some((u64::MAX, 7));
            entries.push(e.clone());
            e.output_size = None;
            e.size = Some(u64::MAX);
            e.seconds = 12_345.678_901_2;
            e.status = Status::Failed;
            entries.push(e.clone());
            e.output_size = Some(0);
            e.seconds = f64::NAN;
            entries.push(e);
        }
        for e in &entries {
            assert_eq!(e.to_json(), through_map(e));
        }
    }

    #[test]
    fn the_scan_of_a_line_reads_what_serde_json_reads_or_leaves_it_to_serde_json() {
        fn serde(l: &[u8]) -> Option<DoneFields<'_>> {
            serde_json::from_slice(l).ok()
        }
        let mut e = entry(b"set00/caf\xc3\xa9 x.nc");
        e.size = Some(1588);
        e.mtime_ns = Some(1_795_408_855_757_575_307);
        e.hash = Some(0xa1e1_3234_c6b9_99ca_87ef_1066_7db9_e939);
        e.output_size = Some(788);
        e.restored = Some((1620, 0x5eed << 64 | 0xfeed));
        e.seconds = 0.001086;
        let written = e.to_json();
        // The lines a batch writes are read by the scan, as serde_json reads them.
        let scanned = scan_done_fields(written.as_bytes());
        assert!(scanned.is_some(), "{written}");
        assert_eq!(scanned, serde(written.as_bytes()));
        assert_eq!(scanned.unwrap().size, Some(1588));
        let lines = [
            r#"{}"#,
            r#" { } "#,
            r#"{"status":"packed","size":0,"mtime_ns":-9,"output_size":18446744073709551615}"#,
            r#"{"size":18446744073709551616}"#,
            r#"{"mtime_ns":9223372036854775807,"x":-9223372036854775808}"#,
            r#"{"mtime_ns":9223372036854775808}"#,
            r#"{"mtime_ns":-9223372036854775808}"#,
            r#"{"mtime_ns":-9223372036854775809}"#,
            r#"{"size":-0,"mtime_ns":-0}"#,
            r#"{"size":1.0}"#,
            r#"{"size":1e3}"#,
            r#"{"size":-1}"#,
            r#"{"size":01}"#,
            r#"{"size":"7","mtime_ns":null,"output_size":true}"#,
            r#"{"size":7,"size":null}"#,
            r#"{"restored_size":7,"restored_xxh3":"ff"}"#,
            r#"{"restored_size":"7","restored_xxh3":7}"#,
            r#"{"restored_size":-7,"restored_xxh3":null}"#,
            r#"{"restored_size":true,"restored_xxh3":false}"#,
            r#"{"size":null,"size":7}"#,
            r#"{"ratio":1.5e-3,"seconds":-0.0,"x":1E+400,"y":0}"#,
            r#"{"ratio":1.}"#,
            r#"{"ratio":.5}"#,
            r#"{"ratio":1e}"#,
            r#"{"ratio":-}"#,
            r#"{"status":null}"#,
            r#"{"status":7}"#,
            r#"{"status":true}"#,
            r#"{"name":"a\"b"}"#,
            r#"{"name":"a\\b"}"#,
            r#"{"name":"\u0041"}"#,
            "{\"name\":\"a\tb\"}",
            r#"{"name":"a","name":"b","xxh3":"ff"}"#,
            r#"{"x":{"status":"failed"},"status":"packed"}"#,
            r#"{"x":[1,2],"status":"packed"}"#,
            r#"{"x":tru}"#,
            r#"{"x":nul,"y":1}"#,
            r#"{"x":true,"y":false,"z":null}"#,
            r#"{"status":"packed",}"#,
            r#"{"status":"packed""name":"n"}"#,
            r#"{"status" : "packed" , "name" :	"n"}"#,
            r#"{"status":"packed"} x"#,
            r#"{"status":"packed"}}"#,
            r#"{"status":"packed""#,
            r#"{"status":"packed"#,
            r#"{"status""#,
            r#"{"status"}"#,
            r#"{"#,
            r#"[]"#,
            r#""status""#,
            "",
            "   ",
        ];
        let mut scanned = 0;
        for l in lines {
            if let Some(f) = scan_done_fields(l.as_bytes()) {
                scanned += 1;
                assert_eq!(Some(f), serde(l.as_bytes()), "{l}");
            }
        }
        assert!(scanned >= 11, "{scanned}");
        // Bytes that are not UTF-8, in a field a rerun skips.
        assert_eq!(scan_done_fields(b"{\"x\":\"\xff\"}"), None);
        // Every line made by changing one byte of a written one, or cutting it short.
        let w = written.as_bytes();
        for at in 0..w.len() {
            for c in *b"\"\\{}[],:0-.e+ tfn\x01a\xff" {
                let mut l = w.to_vec();
                l[at] = c;
                if let Some(f) = scan_done_fields(&l) {
                    assert_eq!(Some(f), serde(&l), "{}", String::from_utf8_lossy(&l));
                }
            }
            if let Some(f) = scan_done_fields(&w[..at]) {
                assert_eq!(Some(f), serde(&w[..at]), "{}", &written[..at]);
            }
        }
    }

    #[test]
    fn only_lines_written_undeferred_make_sync_sync_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.jsonl");
        let m = Manifest::new(&p);
        let syncs = |m: &Manifest| m.state.lock().unwrap().syncs;
        m.write_deferred(&entry(b"1")).unwrap();
        m.write_deferred(&entry(b"2")).unwrap();
        m.sync().unwrap();
        // Written, not synced.
        assert_eq!(std::fs::read_to_string(&p).unwrap().lines().count(), 2);
        assert_eq!(syncs(&m), 0);
        m.write(&entry(b"3")).unwrap();
        m.write_deferred(&entry(b"4")).unwrap();
        m.sync().unwrap();
        assert_eq!(syncs(&m), 1);
        assert_eq!(std::fs::read_to_string(&p).unwrap().lines().count(), 4);
        m.write_deferred(&entry(b"5")).unwrap();
        m.sync().unwrap();
        assert_eq!(syncs(&m), 1);
        m.write(&entry(b"6")).unwrap();
        m.sync().unwrap();
        assert_eq!(syncs(&m), 2);
    }
}
