//! What killed runs leave, found by a rerun: originals that `--delete-input` had moved aside
//! (put back under their names), and temporary files in the output (removed when the process
//! that wrote them is gone).
//!
//! `--delete-input` moves an original aside into a hidden directory beside it,
//! `.nc3pack-deleting-HOST@PID-N/NAME`, before unlinking it there (see `batch/delete.rs`).
//! A run killed in between leaves that directory. A rerun that finds one whose process is gone
//! puts each file in it back under its name (a hard link, which never replaces a file that took
//! the name meanwhile: then both are kept, and it says so); the file is then an input like any
//! other, and `--delete-input` deletes it only once its archive is proven, as it deletes any.

use crate::atomic::{writer_of, Writer};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The start of the name of a directory an original is moved into before it is unlinked.
pub(crate) const ASIDE: &[u8] = b".nc3pack-deleting-";

/// The directories this process is moving originals aside into now: one named for this
/// process but not here was left by an earlier process that had the same id (a container's
/// process 1, run again), and is gone.
static OURS: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Notes (`true`) or forgets a directory this process moves originals aside into.
pub(crate) fn note_ours(dir: &Path, live: bool) {
    let mut ours = OURS.lock().unwrap_or_else(|p| p.into_inner());
    if live {
        ours.push(dir.to_path_buf());
    } else if let Some(k) = ours.iter().position(|d| d == dir) {
        ours.swap_remove(k);
    }
}

/// What a run found left by a killed run, and did: one line each
/// ([`crate::CollectionReport::leftovers`]).
///
/// ```
/// use nc3pack::collection::Leftover;
/// let l = Leftover::PutBack { path: "in/a.nc".into(), aside: "in/.nc3pack-deleting-h@7-0".into() };
/// assert_eq!(l.to_string(), "in/a.nc: put back from in/.nc3pack-deleting-h@7-0 (a run killed while deleting it)");
/// assert!(!l.needs_attention());
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Leftover {
    /// An original moved aside by a run killed while deleting it, put back under its name
    /// (then packed, or deleted once its archive is proven, as any input).
    PutBack {
        /// The original's path.
        path: PathBuf,
        /// The directory it was found in.
        aside: PathBuf,
    },
    /// An original moved aside by a killed run, not put back: another file has its name now.
    /// Both are kept.
    NameTaken {
        /// The name, taken.
        path: PathBuf,
        /// The moved-aside original's path.
        aside: PathBuf,
    },
    /// An original moved aside by a killed run, that could not be put back.
    NotPutBack {
        /// The original's path.
        path: PathBuf,
        /// The moved-aside original's path.
        aside: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A file moved aside by an earlier version of nc3pack (`.nc3pack-deleting-PID-N`), whose
    /// name does not say the original's: left alone.
    NameUnknown {
        /// The file.
        aside: PathBuf,
    },
    /// Moved aside by a process of another host (or under a name this version does not
    /// read), which may still be at work: left alone.
    OtherHost {
        /// The directory.
        aside: PathBuf,
    },
    /// A path given by name that is one of nc3pack's temporary files: never an input.
    Ignored {
        /// The path.
        path: PathBuf,
    },
}

impl Leftover {
    /// Whether a user must look at it: a moved-aside original that is still hidden.
    ///
    /// ```
    /// let l = nc3pack::collection::Leftover::NameUnknown { aside: "in/.nc3pack-deleting-7-0".into() };
    /// assert!(l.needs_attention());
    /// ```
    pub fn needs_attention(&self) -> bool {
        matches!(
            self,
            Leftover::NameTaken { .. } | Leftover::NotPutBack { .. } | Leftover::NameUnknown { .. }
        )
    }
}

impl std::fmt::Display for Leftover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Leftover::PutBack { path, aside } => write!(
                f,
                "{}: put back from {} (a run killed while deleting it)",
                path.display(),
                aside.display()
            ),
            Leftover::NameTaken { path, aside } => write!(
                f,
                "{}: moved aside by a run killed while deleting it, not put back: {} exists \
                 (both kept)",
                aside.display(),
                path.display()
            ),
            Leftover::NotPutBack { path, aside, error } => write!(
                f,
                "{}: moved aside by a run killed while deleting it, could not be put back as \
                 {}: {error}",
                aside.display(),
                path.display()
            ),
            Leftover::NameUnknown { aside } => write!(
                f,
                "{}: an original moved aside by an earlier nc3pack killed while deleting it; \
                 its name is not known: left alone",
                aside.display()
            ),
            Leftover::OtherHost { aside } => write!(
                f,
                "{}: moved aside by a process of another host, which may be at work: left alone",
                aside.display()
            ),
            Leftover::Ignored { path } => {
                write!(
                    f,
                    "{}: an nc3pack temporary file: not an input",
                    path.display()
                )
            }
        }
    }
}

/// Whether `name` is one of nc3pack's temporary files or directories: `.nc3pack-*.part`,
/// `.nc3pack-deleting-*`.
pub(super) fn is_temporary(name: &[u8]) -> bool {
    name.starts_with(ASIDE) || (name.starts_with(b".nc3pack-") && name.ends_with(b".part"))
}

/// Whether `path` is one of nc3pack's temporary files, or in a directory an original was moved
/// aside into.
pub(super) fn is_temporary_path(path: &Path) -> bool {
    path.file_name().is_some_and(|n| is_temporary(n.as_bytes()))
        || path.parent().is_some_and(|d| {
            d.components()
                .any(|c| c.as_os_str().as_bytes().starts_with(ASIDE))
        })
}

/// `dir/name`, a `.nc3pack-deleting-*` entry: if it is a directory of a process of this host
/// that is gone, puts each file in it back under its name in `dir` (`found` is called with
/// each path put back), then removes it. What it did, or why not, goes to `notes`: nothing for
/// a process still running (a run at work now).
pub(super) fn put_back(
    dir: &Path,
    name: &OsStr,
    found: &mut dyn FnMut(&Path),
    notes: &mut Vec<Leftover>,
) {
    let aside = dir.join(name);
    let Ok(meta) = std::fs::symlink_metadata(&aside) else {
        return;
    };
    let rest = &name.as_bytes()[ASIDE.len()..];
    if !meta.is_dir() {
        if meta.is_file() {
            notes.push(Leftover::NameUnknown { aside });
        }
        return;
    }
    let an_earlier_process = || {
        let tag = format!("{}-", crate::atomic::writer_tag());
        rest.starts_with(tag.as_bytes())
            && !OURS
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(&aside)
    };
    match writer_of(rest) {
        Writer::Gone => {}
        // This process's id, but not a directory of this process: an earlier one's.
        Writer::Running if an_earlier_process() => {}
        Writer::Running => return,
        Writer::OtherHost | Writer::Unknown => {
            notes.push(Leftover::OtherHost { aside });
            return;
        }
    }
    let names: Vec<_> = match std::fs::read_dir(&aside) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .collect(),
        Err(error) => {
            notes.push(Leftover::NotPutBack {
                path: dir.to_path_buf(),
                aside,
                error,
            });
            return;
        }
    };
    let mut put = false;
    for n in names {
        let (from, to) = (aside.join(&n), dir.join(&n));
        match put_back_one(&from, &to) {
            Ok(()) => {
                found(&to);
                put = true;
                notes.push(Leftover::PutBack {
                    path: to,
                    aside: aside.clone(),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                notes.push(Leftover::NameTaken {
                    path: to,
                    aside: from,
                })
            }
            Err(error) => notes.push(Leftover::NotPutBack {
                path: to,
                aside: from,
                error,
            }),
        }
    }
    // Empty now, unless a file could not be put back.
    let _ = std::fs::remove_dir(&aside);
    if put {
        let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
    }
}

/// Gives `from` the name `to` (in the same directory's parent) without replacing a file there:
/// a hard link, then `from` unlinked. `AlreadyExists` when another file has that name.
fn put_back_one(from: &Path, to: &Path) -> std::io::Result<()> {
    match std::fs::hard_link(from, to) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            // Linked by a run killed after the link, before the unlink: the same file.
            let (a, b) = (
                std::fs::symlink_metadata(from)?,
                std::fs::symlink_metadata(to)?,
            );
            if (a.dev(), a.ino()) != (b.dev(), b.ino()) {
                return Err(e);
            }
        }
        // A filesystem without hard links: renamed, if the name is free.
        Err(_) => {
            if std::fs::symlink_metadata(to).is_ok() {
                return Err(std::io::ErrorKind::AlreadyExists.into());
            }
            return std::fs::rename(from, to);
        }
    }
    std::fs::remove_file(from)
}

/// For a given input that does not exist: puts back what killed runs moved aside in its
/// directory (each directory once: `seen`). Whether anything was put back.
pub(super) fn put_back_beside(
    input: &Path,
    seen: &mut std::collections::HashSet<PathBuf>,
    notes: &mut Vec<Leftover>,
) -> bool {
    let dir = match input.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !seen.insert(dir.to_path_buf()) {
        return false;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    let mut put = false;
    for e in entries.flatten() {
        let name = e.file_name();
        if name.as_bytes().starts_with(ASIDE) {
            put_back(dir, &name, &mut |_| put = true, notes);
        }
    }
    put
}

/// The temporary files (`.nc3pack-*.part`) under the output directory `out`: those whose
/// process is gone are removed; the others (a process of this host still running, another
/// host's, or a name without `HOST@PID`) are left. (removed, left).
pub(super) fn remove_dead_temporaries(out: &Path) -> (usize, usize) {
    let (mut removed, mut left) = (0, 0);
    let mut todo = vec![out.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(ft) = e.file_type() else { continue };
            let name = e.file_name();
            let n = name.as_bytes();
            if ft.is_dir() {
                todo.push(e.path());
            } else if ft.is_file() && !n.starts_with(ASIDE) && is_temporary(n) {
                let rest = &n[b".nc3pack-".len()..];
                if writer_of(rest) == Writer::Gone && std::fs::remove_file(e.path()).is_ok() {
                    removed += 1;
                } else {
                    left += 1;
                }
            }
        }
    }
    (removed, left)
}
