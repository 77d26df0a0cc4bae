//! Packing many files: `nc3pack pack IN... -o OUTDIR`.
//!
//! Inputs are files or directories (searched recursively for `*.nc` files). Each input
//! `dir/sub/x.nc` found under a directory argument `dir` goes to `OUTDIR/sub/x.nc3z`; a file
//! argument `path/x.nc` goes to `OUTDIR/x.nc3z`. Files are packed in parallel, one per worker
//! thread; a file that fails does not stop the others.
//!
//! Symbolic links are followed, both given and found: a link named `*.nc` to a regular file is
//! packed under the link's name, and a link to a directory is searched as if the directory were
//! there. Each directory is searched once, wherever it is reached again (a link loop, two links
//! to one directory). In directories only regular files are packed; a pipe or device given as an
//! argument is read as a stream. An input, directory or `*.nc` entry that cannot be read (no
//! permission, a broken link, a path too long) is reported, and the others are still packed.

use crate::atomic::Pending;
use crate::error::{io_err, spawn_err, Error, Result};
use crate::pack::{pack_to_temp, PackOptions, PackSummary};
use crate::parallel::spawn_scoped;
use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, SendError};
use std::sync::{Condvar, Mutex};

/// One file of a batch: where it comes from and where its archive goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// The netCDF-3 file.
    pub input: PathBuf,
    /// The archive to write.
    pub output: PathBuf,
}

/// What a batch will pack, and what could not be read while finding it.
#[derive(Debug, Default)]
pub struct Plan {
    /// The files to pack, each input's in path order.
    pub jobs: Vec<Job>,
    /// Inputs, directories and `*.nc` entries that could not be read, each error naming the
    /// path and the cause. The batch packs the jobs anyway and reports these as failures.
    pub unreadable: Vec<Error>,
}

/// Lists the jobs for `inputs` (files or directories) into `out_dir`, following symbolic links
/// (see the module docs). What cannot be read is listed in [`Plan::unreadable`], not an error.
///
/// # Errors
///
/// Two inputs that would write the same archive: [`Error::Refused`] naming both.
///
/// ```no_run
/// let plan = nc3pack::__private::plan(&["samples".into()], "/tmp/out".as_ref()).unwrap();
/// assert!(plan.jobs.iter().all(|j| j.output.extension().unwrap() == "nc3z"));
/// assert!(plan.unreadable.is_empty());
/// ```
pub fn plan(inputs: &[PathBuf], out_dir: &Path) -> Result<Plan> {
    let mut plan = Plan::default();
    for input in inputs {
        let meta = match std::fs::metadata(input) {
            Ok(m) => m,
            Err(e) => {
                plan.unreadable.push(io_err(input, "stat")(e));
                continue;
            }
        };
        if meta.is_dir() {
            let mut found = Vec::new();
            walk(input, &meta, &mut found, &mut plan.unreadable);
            found.sort();
            for f in found {
                let rel = f.strip_prefix(input).unwrap_or(&f).to_path_buf();
                plan.jobs.push(Job {
                    output: out_dir.join(rel).with_extension("nc3z"),
                    input: f,
                });
            }
        } else {
            let name = input
                .file_name()
                .map_or_else(|| "input".into(), PathBuf::from);
            plan.jobs.push(Job {
                output: out_dir.join(name).with_extension("nc3z"),
                input: input.clone(),
            });
        }
    }
    let mut seen = std::collections::HashMap::new();
    for j in &plan.jobs {
        if let Some(other) = seen.insert(j.output.clone(), j.input.clone()) {
            return Err(Error::Refused {
                path: j.output.clone(),
                what: crate::error::Refusal::SameOutput {
                    first: other,
                    second: j.input.clone(),
                },
            });
        }
    }
    Ok(plan)
}

/// Finds the `*.nc` regular files under `root` (whose metadata is `root_meta`), following
/// symbolic links and searching each directory once; what cannot be read goes to `unreadable`.
fn walk(
    root: &Path,
    root_meta: &std::fs::Metadata,
    found: &mut Vec<PathBuf>,
    unreadable: &mut Vec<Error>,
) {
    let mut visited = HashSet::from([(root_meta.dev(), root_meta.ino())]);
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) => {
                unreadable.push(io_err(&dir, "read directory")(e));
                continue;
            }
        };
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    unreadable.push(io_err(&dir, "read directory")(e));
                    break;
                }
            };
            let p = entry.path();
            let is_nc = p.extension().is_some_and(|e| e == "nc");
            let ft = match entry.file_type() {
                Ok(ft) => ft,
                Err(e) => {
                    unreadable.push(io_err(&p, "stat")(e));
                    continue;
                }
            };
            if ft.is_file() {
                if is_nc {
                    found.push(p);
                }
                continue;
            }
            if !ft.is_dir() && !ft.is_symlink() {
                continue; // pipes, devices and sockets are packed only when given
            }
            // A directory's identity, or where a link leads (a broken link is only worth
            // reporting if it was to be packed).
            let meta = match std::fs::metadata(&p) {
                Ok(m) => m,
                Err(e) if ft.is_dir() || is_nc => {
                    let op = if ft.is_dir() { "stat" } else { "follow link" };
                    unreadable.push(io_err(&p, op)(e));
                    continue;
                }
                Err(_) => continue,
            };
            if meta.is_dir() {
                if visited.insert((meta.dev(), meta.ino())) {
                    todo.push(p);
                }
            } else if meta.is_file() && is_nc {
                found.push(p);
            }
        }
    }
}

/// Archives made durable and renamed into place together (one `syncfs` per group).
const COMMIT_GROUP: usize = 256;

/// Packs every job on `opts.threads` worker threads (bounded by
/// [`crate::parallel::bound_threads`]; each file with one encoder thread), creating output
/// directories as needed; existing outputs are refused unless `opts.force`. Returns each job's
/// outcome, in job order. `progress` is called with the number of files done (`opts.progress`
/// is not called).
///
/// # Errors
///
/// [`Error::Thread`] when a worker thread cannot be started; then no job was started.
///
/// Durability is batched: archives are written to temporary files unsynced, and every
/// `COMMIT_GROUP` (256) files one `syncfs` flushes them all before they are renamed into place, so an
/// output never appears before its data is on disk, without one `fsync` per small file. Groups
/// are synced and renamed by a committer thread while the workers go on packing.
pub fn pack_all(
    jobs: &[Job],
    opts: &PackOptions,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<Vec<Result<PackSummary>>> {
    let (threads, force) = (opts.threads, opts.force);
    let per_file = PackOptions {
        threads: 1,
        progress: crate::Progress::default(),
        ..opts.clone()
    };
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<PackSummary>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    let pending: Mutex<Vec<(usize, Pending, PackSummary)>> = Mutex::new(Vec::new());
    let record = |i: usize, r: Result<PackSummary>| {
        if let Ok(mut g) = results.lock() {
            g[i] = Some(r);
        }
    };
    // Syncs the filesystems of a group's outputs, then renames them into place. Every file of the
    // group was written and closed before the group was formed, so the sync covers its data.
    let commit = |group: Vec<(usize, Pending, PackSummary)>| {
        let synced = sync_filesystems(group.iter().filter_map(|(i, ..)| jobs[*i].output.parent()));
        for (i, p, summary) in group {
            let r = match &synced {
                Ok(()) => p.rename().map(|()| summary),
                Err(e) => Err(Error::Internal(format!("sync before rename failed: {e}"))),
            };
            record(i, r);
            progress(done.fetch_add(1, Ordering::Relaxed) + 1);
        }
    };
    let commit = &commit;
    // Workers start packing once all have started (`Some(true)`), or stop (`Some(false)`) if
    // one cannot be started: a batch runs completely or not at all.
    let go: (Mutex<Option<bool>>, Condvar) = (Mutex::new(None), Condvar::new());
    let set_go = |v: bool| {
        *go.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(v);
        go.1.notify_all();
    };
    let wait_go = || {
        let mut g = go.0.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            match *g {
                Some(v) => return v,
                None => g = go.1.wait(g).unwrap_or_else(|p| p.into_inner()),
            }
        }
    };
    let no_job = || PathBuf::from("(batch)");
    std::thread::scope(|s| {
        // One group waiting while one is committed; a worker with a third waits.
        let (group_tx, group_rx) = sync_channel::<Vec<(usize, Pending, PackSummary)>>(1);
        spawn_scoped(s, "batch committer", move || {
            group_rx.into_iter().for_each(commit)
        })
        .map_err(|e| {
            spawn_err(
                jobs.first()
                    .map_or_else(no_job, |j| j.input.clone())
                    .as_path(),
            )(e)
        })?;
        let threads = crate::parallel::bound_threads(threads).min(jobs.len().max(1));
        for k in 0..threads {
            let group_tx = group_tx.clone();
            let (next, done, pending, per_file, record, wait_go) =
                (&next, &done, &pending, &per_file, &record, &wait_go);
            let started = spawn_scoped(s, "batch worker", move || {
                if !wait_go() {
                    return;
                }
                // The output directory this worker last created (or found): jobs come in path
                // order, so most share it.
                let mut made: Option<&Path> = None;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = jobs.get(i) else { return };
                    let r = match job.output.parent() {
                        Some(d) if made != Some(d) => std::fs::create_dir_all(d)
                            .map(|()| made = Some(d))
                            .map_err(io_err(d, "create directory")),
                        _ => Ok(()),
                    }
                    .and_then(|()| {
                        pack_to_temp(&job.input, &job.output, per_file, force, false, &|_| {})
                    });
                    match r {
                        Ok((p, summary)) => {
                            let group = pending.lock().ok().and_then(|mut g| {
                                g.push((i, p, summary));
                                (g.len() >= COMMIT_GROUP).then(|| std::mem::take(&mut *g))
                            });
                            if let Some(group) = group {
                                // Without a committer (it panicked), commit here.
                                if let Err(SendError(group)) = group_tx.send(group) {
                                    commit(group);
                                }
                            }
                        }
                        Err(e) => {
                            record(i, Err(e));
                            progress(done.fetch_add(1, Ordering::Relaxed) + 1);
                        }
                    }
                }
            });
            if let Err(e) = started {
                set_go(false);
                let path = jobs.get(k).map_or_else(no_job, |j| j.input.clone());
                return Err(spawn_err(&path)(e));
            }
        }
        set_go(true);
        // The committer stops when every worker has finished and dropped its sender.
        drop(group_tx);
        Ok(())
    })?;
    let rest = pending
        .lock()
        .map(|mut g| std::mem::take(&mut *g))
        .unwrap_or_default();
    commit(rest);
    // The renames themselves: one more sync per filesystem written to, so that every output's
    // name is durable when the batch returns.
    let synced = sync_filesystems(jobs.iter().filter_map(|j| j.output.parent()));
    let mut results = results.into_inner().unwrap_or_default();
    if let Err(e) = synced {
        for r in results.iter_mut().filter(|r| matches!(r, Some(Ok(_)))) {
            *r = Some(Err(Error::Internal(format!(
                "renamed into place, but the sync after the renames failed: {e}"
            ))));
        }
    }
    Ok(results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(Error::Internal("a batch worker stopped".into()))))
        .collect())
}

/// Syncs each filesystem holding one of `dirs` once (`syncfs`).
fn sync_filesystems<'a>(dirs: impl Iterator<Item = &'a Path>) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let dirs: std::collections::BTreeSet<&Path> = dirs.collect();
    let mut seen = std::collections::BTreeSet::new();
    for d in dirs {
        let d = if d.as_os_str().is_empty() {
            Path::new(".")
        } else {
            d
        };
        // A directory that is not there (its job failed) has nothing to sync.
        let Ok(meta) = std::fs::metadata(d) else {
            continue;
        };
        if seen.insert(meta.dev()) {
            crate::atomic::sync_filesystem(d)?;
        }
    }
    Ok(())
}
