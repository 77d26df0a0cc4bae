//! Packing many files: `nc3pack pack IN... -o OUTDIR`.
//!
//! Inputs are files or directories (searched recursively for `*.nc` files). Each input
//! `dir/sub/x.nc` found under a directory argument `dir` goes to `OUTDIR/sub/x.nc3z`; a file
//! argument `path/x.nc` goes to `OUTDIR/x.nc3z`. Files are packed in parallel, one per worker
//! thread; a file that fails does not stop the others.

use crate::atomic::Pending;
use crate::error::{io_err, spawn_err, Error, Result};
use crate::pack::{pack_to_temp, PackOptions, PackSummary};
use crate::parallel::spawn_scoped;
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

/// Lists the jobs for `inputs` (files or directories) into `out_dir`. Two inputs that would
/// write the same archive are an error naming both.
///
/// ```no_run
/// let jobs = nc3pack::batch::plan(&["samples".into()], "/tmp/out".as_ref()).unwrap();
/// assert!(jobs.iter().all(|j| j.output.extension().unwrap() == "nc3z"));
/// ```
pub fn plan(inputs: &[PathBuf], out_dir: &Path) -> Result<Vec<Job>> {
    let mut jobs = Vec::new();
    for input in inputs {
        let meta = std::fs::metadata(input).map_err(io_err(input, "stat"))?;
        if meta.is_dir() {
            let mut found = Vec::new();
            walk(input, &mut found)?;
            found.sort();
            for f in found {
                let rel = f.strip_prefix(input).unwrap_or(&f).to_path_buf();
                jobs.push(Job {
                    output: out_dir.join(rel).with_extension("nc3z"),
                    input: f,
                });
            }
        } else {
            let name = input
                .file_name()
                .map_or_else(|| "input".into(), PathBuf::from);
            jobs.push(Job {
                output: out_dir.join(name).with_extension("nc3z"),
                input: input.clone(),
            });
        }
    }
    let mut seen = std::collections::HashMap::new();
    for j in &jobs {
        if let Some(other) = seen.insert(j.output.clone(), j.input.clone()) {
            return Err(Error::Refused {
                path: j.output.clone(),
                what: format!(
                    "both {} and {} would be packed here",
                    other.display(),
                    j.input.display()
                ),
            });
        }
    }
    Ok(jobs)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).map_err(io_err(dir, "read directory"))? {
        let entry = entry.map_err(io_err(dir, "read directory"))?;
        let p = entry.path();
        let ft = entry.file_type().map_err(io_err(&p, "stat"))?;
        if ft.is_dir() {
            walk(&p, out)?;
        } else if ft.is_file() && p.extension().is_some_and(|e| e == "nc") {
            out.push(p);
        }
    }
    Ok(())
}

/// Archives made durable and renamed into place together (one `syncfs` per group).
const COMMIT_GROUP: usize = 256;

/// Packs every job on `threads` worker threads (bounded by
/// [`crate::parallel::bound_threads`]; each file with one encoder thread), creating output
/// directories as needed. Returns each job's outcome, in job order. `progress` is called with
/// the number of files done.
///
/// # Errors
///
/// [`Error::Thread`] when a worker thread cannot be started; then no job was started.
///
/// Durability is batched: archives are written to temporary files unsynced, and every
/// [`COMMIT_GROUP`] files one `syncfs` flushes them all before they are renamed into place, so an
/// output never appears before its data is on disk, without one `fsync` per small file. Groups
/// are synced and renamed by a committer thread while the workers go on packing.
pub fn pack_all(
    jobs: &[Job],
    opts: &PackOptions,
    threads: usize,
    force: bool,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<Vec<Result<PackSummary>>> {
    let per_file = PackOptions {
        threads: 1,
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
