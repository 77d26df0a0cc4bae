//! `pack --delete-input`: an input is deleted only when what is on disk at that moment is what
//! its complete, synced, verified and recorded archive holds (the parent module's docs, and
//! [`delete_group`], say how).

use super::{BatchPlan, Kept, Outcome};
use crate::collection::manifest::{check_ends, mtime_ns};
use crate::error::{io_err, Error, NotDeleted, Refusal, Result};
use crate::pack::PackSummary;
use crate::parallel::spawn_scoped;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What `--delete-input` is given to record a group of archives before their inputs are
/// deleted: called with the outcomes as they will be once the inputs are gone (`deleted`
/// set), it must make their records durable (a manifest line each, synced) and return `Ok`
/// only then. On an error every input of the group is kept, and fails saying why.
pub type RecordFn<'a> = dyn Fn(&[(usize, &Outcome)]) -> Result<()> + Sync + 'a;

/// An input whose archive is proven, waiting to be recorded and deleted: its outcome, and the
/// size and hash of the bytes the archive restores.
struct Proven {
    i: usize,
    outcome: Outcome,
    size: u64,
    hash: u128,
}

/// With `--delete-input`: for each of `outcomes`, in three steps, deletes a packed or skipped
/// input whose archive is proven, and reports every outcome through `on_done`.
///
/// 1. Prove (on up to `threads` threads): the input is a regular file with its packed size and
///    modification time, and its archive, in place and synced, verifies completely back to
///    the hash the packer computed of the input. Others go to `on_done` as they are (a
///    symbolic link, pipe or device is kept, [`Kept`]), or as failures saying why.
/// 2. Record: `record` makes the proven ones' records durable, all in one call; if it fails,
///    every input is kept (a failure each).
/// 3. Delete (on up to `threads` threads): each input is read again and deleted only if its
///    bytes still hash to what the archive restores, and the path still names the file that
///    was read ([`delete_if_unchanged`]); the directories the inputs were moved aside into are
///    removed, and the directories of the deleted inputs synced.
pub(super) fn delete_group(
    plan: &BatchPlan,
    outcomes: Vec<(usize, Outcome)>,
    threads: usize,
    record: &RecordFn<'_>,
    on_done: &(dyn Fn(usize, Outcome) + Sync),
) {
    let proven = Mutex::new(Vec::with_capacity(outcomes.len()));
    each_in_parallel(outcomes, threads, &|(i, o)| match prove(plan, i, o) {
        Ok(p) => proven.lock().unwrap_or_else(|p| p.into_inner()).push(p),
        Err(o) => on_done(i, *o),
    });
    let mut proven = proven.into_inner().unwrap_or_else(|p| p.into_inner());
    if proven.is_empty() {
        return;
    }
    proven.sort_by_key(|p| p.i);
    for p in &mut proven {
        if let Outcome::Packed { deleted, .. } | Outcome::Skipped { deleted, .. } = &mut p.outcome {
            *deleted = true;
        }
    }
    let refs: Vec<(usize, &Outcome)> = proven.iter().map(|p| (p.i, &p.outcome)).collect();
    if let Err(e) = record(&refs) {
        let why = e.to_string();
        for p in proven {
            let kept = NotDeleted::NotRecorded { why: why.clone() };
            on_done(p.i, not_deleted(plan, p.i, input_of(&p.outcome), kept));
        }
        return;
    }
    let dirs = Mutex::new(std::collections::BTreeSet::new());
    let aside = Aside::default();
    each_in_parallel(proven, threads, &|p: Proven| {
        let input = plan.input(p.i);
        match delete_if_unchanged(&input, p.size, p.hash, &aside) {
            Ok(()) => {
                if let Some(d) = input.parent() {
                    let d = if d.as_os_str().is_empty() {
                        PathBuf::from(".")
                    } else {
                        d.to_path_buf()
                    };
                    dirs.lock().unwrap_or_else(|p| p.into_inner()).insert(d);
                }
                on_done(p.i, p.outcome)
            }
            Err(error) => on_done(
                p.i,
                Outcome::Failed {
                    error,
                    input: input_of(&p.outcome),
                },
            ),
        }
    });
    aside.remove();
    // The deletions made durable. A directory that cannot be synced fails no input: each was
    // deleted after its archive was durable and recorded.
    for d in dirs.into_inner().unwrap_or_else(|p| p.into_inner()) {
        let _ = std::fs::File::open(&d).and_then(|d| d.sync_all());
    }
}

/// The size and modification time of the input an outcome is about.
fn input_of(o: &Outcome) -> Option<(u64, i64)> {
    match o {
        Outcome::Packed {
            summary, mtime_ns, ..
        } => Some((summary.input_len, *mtime_ns)),
        Outcome::Skipped { record, .. } => Some((record.size, record.mtime_ns)),
        Outcome::Failed { input, .. } => *input,
        Outcome::NotNetcdf => None,
    }
}

/// The failure of input `i`, kept for `why`.
fn not_deleted(plan: &BatchPlan, i: usize, input: Option<(u64, i64)>, why: NotDeleted) -> Outcome {
    Outcome::Failed {
        error: Error::Refused {
            path: plan.input(i),
            what: Refusal::NotDeleted(Box::new(why)),
        },
        input,
    }
}

/// Step 1 of [`delete_group`]: `Ok` with what to delete if the archive of input `i` is proven,
/// else `Err` with the outcome to report (as it is, kept, or a failure).
fn prove(plan: &BatchPlan, i: usize, mut o: Outcome) -> std::result::Result<Proven, Box<Outcome>> {
    let (size, mtime, hash, kept) = match &mut o {
        // A lossy archive never proves its input (`pack_all` refuses to quantize and delete;
        // this is an archive of an earlier run).
        Outcome::Packed {
            summary:
                PackSummary {
                    original: Some((size, _)),
                    ..
                },
            mtime_ns,
            ..
        } => {
            let why = NotDeleted::Lossy {
                archive: plan.output(i),
            };
            return Err(Box::new(not_deleted(
                plan,
                i,
                Some((*size, *mtime_ns)),
                why,
            )));
        }
        Outcome::Skipped { record, .. } if record.restored_size.is_some() => {
            let why = NotDeleted::Lossy {
                archive: plan.output(i),
            };
            let input = Some((record.size, record.mtime_ns));
            return Err(Box::new(not_deleted(plan, i, input, why)));
        }
        Outcome::Packed {
            summary,
            mtime_ns,
            kept,
            ..
        } => (summary.input_len, *mtime_ns, summary.hash, kept),
        // Skipped with the input gone: deleted by an earlier run.
        Outcome::Skipped { .. } if std::fs::symlink_metadata(plan.input(i)).is_err() => {
            return Err(Box::new(o))
        }
        Outcome::Skipped { record, kept, .. } => (record.size, record.mtime_ns, record.hash, kept),
        _ => return Err(Box::new(o)),
    };
    // Symbolic links, pipes and devices are kept (and need no verify).
    match std::fs::symlink_metadata(plan.input(i)) {
        Ok(m) if m.file_type().is_symlink() => {
            *kept = Some(Kept::SymbolicLink);
            return Err(Box::new(o));
        }
        Ok(m) if !m.is_file() => {
            *kept = Some(Kept::NotRegularFile);
            return Err(Box::new(o));
        }
        _ => {}
    }
    match check_proven(&plan.input(i), &plan.output(i), size, mtime, hash) {
        Ok(()) => Ok(Proven {
            i,
            outcome: o,
            size,
            hash,
        }),
        Err(error) => Err(Box::new(Outcome::Failed {
            error,
            input: Some((size, mtime)),
        })),
    }
}

/// Checks that `input` is a regular file (not a symbolic link, pipe or device) of `size`
/// bytes and modification time `mtime` (unchanged since it was packed), and that `output`, in
/// place (renamed and synced before this is called), records that size and `hash` (the hash
/// the packer computed of the input as it read it) and decodes back to that hash with every
/// checksum intact (a complete verify).
fn check_proven(input: &Path, output: &Path, size: u64, mtime: i64, hash: u128) -> Result<()> {
    let kept = |why: NotDeleted| Error::Refused {
        path: input.to_path_buf(),
        what: Refusal::NotDeleted(Box::new(why)),
    };
    let meta = std::fs::symlink_metadata(input).map_err(io_err(input, "stat"))?;
    if !meta.is_file() {
        return Err(kept(NotDeleted::NotRegularFile));
    }
    if meta.len() != size || mtime_ns(&meta) != mtime {
        return Err(kept(NotDeleted::Changed));
    }
    check_ends(output, size, Some(hash)).map_err(|source| {
        kept(NotDeleted::Ends {
            archive: output.to_path_buf(),
            source,
        })
    })?;
    let report = crate::verify::verify(
        output,
        &crate::VerifyOptions {
            against: None,
            threads: 1,
            remote: None,
        },
    )?;
    if let Some(d) = report.damage.first() {
        return Err(kept(NotDeleted::Damaged {
            archive: output.to_path_buf(),
            first: d.clone(),
        }));
    }
    if !report.hash_checked {
        return Err(kept(NotDeleted::HashUnchecked {
            archive: output.to_path_buf(),
        }));
    }
    Ok(())
}

/// Deletes `input` only if what is at its path now is what its archive holds: the file is
/// opened (not following a symbolic link) and read whole, its bytes must be `size` long and
/// hash (xxh3-128) to `hash`, its change time, size and modification time must be the same
/// after the read as before it (nothing wrote to it meanwhile), and the path must still name
/// that file (same device, inode and change time: not renamed over). It is then moved aside,
/// under its own name, into a hidden directory of this process in its directory ([`Aside`]),
/// and unlinked there only if it is still that file (a file renamed over the path between the
/// check and the move is put back). A file's change time cannot be set back by a user, unlike
/// its modification time. A run killed after the move leaves the file in that directory, where
/// a rerun finds it by its name and puts it back (`collection::leftovers`).
///
/// # Errors
///
/// [`Error::Refused`] with [`NotDeleted::ContentsChanged`], [`NotDeleted::Changed`] or
/// [`NotDeleted::Replaced`] when the input is kept; [`Error::Io`] when it cannot be read or
/// deleted.
fn delete_if_unchanged(input: &Path, size: u64, hash: u128, aside: &Aside) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let kept = |why: NotDeleted| Error::Refused {
        path: input.to_path_buf(),
        what: Refusal::NotDeleted(Box::new(why)),
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(input)
        .map_err(io_err(input, "open"))?;
    let stamp = |m: &std::fs::Metadata| (m.dev(), m.ino(), m.len(), m.ctime(), m.ctime_nsec());
    let before = file.metadata().map_err(io_err(input, "stat"))?;
    if !before.is_file() {
        return Err(kept(NotDeleted::NotRegularFile));
    }
    if before.len() != size {
        return Err(kept(NotDeleted::Changed));
    }
    let now = crate::collection::manifest::hash_open_file(&file, input)?;
    if now != hash {
        return Err(kept(NotDeleted::ContentsChanged {
            now,
            archived: hash,
        }));
    }
    let after = file.metadata().map_err(io_err(input, "stat"))?;
    if stamp(&after) != stamp(&before) || mtime_ns(&after) != mtime_ns(&before) {
        return Err(kept(NotDeleted::Changed));
    }
    match std::fs::symlink_metadata(input) {
        Ok(at_path) if stamp(&at_path) == stamp(&before) => {}
        Ok(_) => return Err(kept(NotDeleted::Replaced)),
        Err(e) => return Err(io_err(input, "stat")(e)),
    }
    // Not unlinked by its name: a file renamed over the path right after the check above
    // would be the one deleted. The file is moved aside into a directory of this process,
    // atomically, and unlinked there only if it is the file that was read (same device and
    // inode).
    let aside = aside.path_for(input).map_err(io_err(input, "delete"))?;
    std::fs::rename(input, &aside).map_err(io_err(input, "delete"))?;
    // For the tests only (a debug build): die by SIGKILL here, as a kill at this instant would.
    #[cfg(debug_assertions)]
    if std::env::var_os("NC3PACK_TEST_KILL_AFTER_ASIDE").is_some() {
        // SAFETY: raise only sends a signal to this process.
        unsafe { libc::raise(libc::SIGKILL) };
    }
    let moved = std::fs::symlink_metadata(&aside).map_err(io_err(input, "stat"))?;
    if (moved.dev(), moved.ino()) == (before.dev(), before.ino()) {
        return std::fs::remove_file(&aside).map_err(io_err(input, "delete"));
    }
    // Another file was renamed over the path in between, and moved aside instead: put it
    // back without replacing a newer one (a hard link fails if the path is taken). If the path
    // is taken, a newer file replaced the one moved aside, as the rename over the path would
    // have: it goes, as it would have gone.
    match std::fs::hard_link(&aside, input) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => std::fs::rename(&aside, input).map_err(io_err(input, "restore"))?,
    }
    let _ = std::fs::remove_file(&aside);
    Err(kept(NotDeleted::Replaced))
}

/// The directories a group's inputs are moved aside into before they are unlinked: one in each
/// input's directory, `.nc3pack-deleting-HOST@PID-N` (hidden, and unique to this process and
/// group), made when first needed and removed once the group is done. The file keeps its name
/// in it, so that a rerun can put it back if this process is killed before the unlink.
#[derive(Default)]
struct Aside(Mutex<std::collections::HashMap<PathBuf, PathBuf>>);

impl Aside {
    /// Where `input` goes: its name in the directory of its own directory.
    fn path_for(&self, input: &Path) -> std::io::Result<PathBuf> {
        use std::os::unix::fs::DirBuilderExt;
        use std::sync::atomic::{AtomicU64, Ordering};
        static GROUPS: AtomicU64 = AtomicU64::new(0);
        let (Some(dir), Some(name)) = (input.parent(), input.file_name()) else {
            return Err(std::io::ErrorKind::InvalidInput.into());
        };
        let mut made = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(a) = made.get(dir) {
            return Ok(a.join(name));
        }
        let n = GROUPS.fetch_add(1, Ordering::Relaxed);
        let tag = crate::atomic::writer_tag();
        let a = dir.join(format!(".nc3pack-deleting-{tag}-{n}"));
        crate::collection::leftovers::note_ours(&a, true);
        if let Err(e) = std::fs::DirBuilder::new().mode(0o700).create(&a) {
            crate::collection::leftovers::note_ours(&a, false);
            return Err(e);
        }
        let path = a.join(name);
        made.insert(dir.to_path_buf(), a);
        Ok(path)
    }

    /// Removes the directories, which are empty (one holding a file that could not be unlinked
    /// or put back stays, for a rerun to put back).
    fn remove(self) {
        for a in self
            .0
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .into_values()
        {
            let _ = std::fs::remove_dir(&a);
            crate::collection::leftovers::note_ours(&a, false);
        }
    }
}

/// Calls `f` with each of `items` on up to `threads` threads (this one included: fewer if some
/// cannot be started).
fn each_in_parallel<T: Send>(items: Vec<T>, threads: usize, f: &(dyn Fn(T) + Sync)) {
    let threads = threads.min(items.len());
    let items = Mutex::new(items.into_iter());
    let work = || loop {
        let next = items.lock().unwrap_or_else(|p| p.into_inner()).next();
        match next {
            Some(x) => f(x),
            None => return,
        }
    };
    std::thread::scope(|s| {
        for _ in 1..threads {
            if spawn_scoped(s, "batch verifier", work).is_err() {
                break;
            }
        }
        work();
    });
}
