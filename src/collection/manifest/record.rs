//! A manifest line: [`Entry`] and its [`Status`], written as JSON ([`Entry::to_json`]) and
//! parsed back ([`Entry::parse`]).

use serde_json::Value;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

/// What became of one input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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
    /// Which file the archive was once renamed into place (`output_ino`, `output_ctime_ns`):
    /// a rerun that stats it the same, with the same length, skips it without reading it.
    pub output_id: Option<super::FileId>,
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
pub(super) fn field_bytes(plain: Option<Value>, hex: Option<Value>) -> Option<Vec<u8>> {
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
pub(super) struct Fields {
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
    output_ino: Option<Value>,
    output_ctime_ns: Option<Value>,
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
                        "output_ino" => &mut f.output_ino,
                        "output_ctime_ns" => &mut f.output_ctime_ns,
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
    /// use nc3pack::testing::manifest::Entry;
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
    /// use nc3pack::testing::manifest::{Entry, Status};
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
            output_id: None,
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
    pub(super) fn push_done_before(name: &[u8], out: &mut Vec<u8>) {
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
        // A path's string (lossy when it is not UTF-8), and its `_hex` twin when it is not.
        let plain =
            |out: &mut String, key: &mut dyn FnMut(&mut String, &str), k: &str, b: &[u8]| {
                key(out, k);
                text(out, &String::from_utf8_lossy(b));
            };
        let hex = |out: &mut String, key: &mut dyn FnMut(&mut String, &str), k: &str, b: &[u8]| {
            if std::str::from_utf8(b).is_err() {
                key(out, &format!("{k}_hex"));
                out.push('"');
                for x in b {
                    let _ = write!(out, "{x:02x}");
                }
                out.push('"');
            }
        };
        let bytes =
            |out: &mut String, key: &mut dyn FnMut(&mut String, &str), k: &str, b: &[u8]| {
                plain(out, key, k, b);
                hex(out, key, k, b);
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
        // In the order of the names: `output`, `output_ctime_ns`, `output_hex`, `output_ino`.
        let output = self.output.as_os_str().as_bytes();
        if !output.is_empty() {
            plain(&mut out, &mut key, "output", output);
        }
        if let Some(id) = self.output_id {
            key(&mut out, "output_ctime_ns");
            let _ = write!(out, "{}", id.ctime_ns);
        }
        if !output.is_empty() {
            hex(&mut out, &mut key, "output", output);
        }
        if let Some(id) = self.output_id {
            key(&mut out, "output_ino");
            let _ = write!(out, "{}", id.ino);
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
            output_id: super::FileId::from_fields(
                f.output_ino.as_ref().and_then(Value::as_u64),
                f.output_ctime_ns.as_ref().and_then(Value::as_i64),
            ),
            restored,
            seconds: f.seconds.as_ref().and_then(Value::as_f64).unwrap_or(0.0),
            error: string(f.error),
            deleted: f.deleted.as_ref().and_then(Value::as_bool).unwrap_or(false),
            kept: string(f.kept),
        })
    }
}
