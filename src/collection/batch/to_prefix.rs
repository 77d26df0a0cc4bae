//! Packing a batch into an object-store prefix: `nc3pack pack IN... -o s3://BUCKET/PREFIX/`.
//!
//! Inputs are found, named and sharded as for a directory (see the parent module): the archive
//! of the input named NAME is the object `PREFIX/NAME.nc3z` (a name that is not UTF-8, or holds
//! a control character, cannot be an object key: that input fails). Each input is packed into
//! a temporary file in the temporary directory (`TMPDIR`), then uploaded with a multipart
//! upload ([`Prefix::upload`]): the object appears only when complete, an upload that fails is
//! aborted (no parts are left), and an existing object is refused unless forced (checked again
//! just before uploading: two runs packing the same file do not overwrite each other). A
//! signal (SIGINT, SIGTERM, SIGHUP) aborts every upload in flight before the process dies by
//! it ([`crate::cleanup`]); no new upload starts once one has arrived.
//!
//! Resuming follows the same rules as for files, by range requests instead of reads: an input
//! recorded as packed with the same size and modification time is skipped if its object has the
//! recorded length and its lead and footer are intact and record the input's size and hash (two
//! concurrent range requests, which also tell the object's length; the recorded objects are
//! checked 32 at a time before the packing starts, since one after another
//! a rerun would wait two round trips a file); an object with no record is
//! kept if its ends are intact and it records the input's hash (the input is read to check);
//! any other existing object is a failure without `--force`.

use super::{decide, Archives, BatchPlan, Decision, Done, OpenDir, Outcome};
use crate::collection::manifest::EndsError;
use crate::error::{Error, RemoteError, Result};
use crate::pack::{pack_to_temp, PackOptions};
use crate::remote::Prefix;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Archives as objects under a prefix.
struct Objects<'a> {
    prefix: &'a Prefix,
    /// One bit an input: its recorded object was checked before the workers started (all at
    /// once, [`Prefix::recorded_ends_many`]) and passed.
    passed: Vec<u64>,
}

impl Objects<'_> {
    fn passed(&self, i: usize) -> bool {
        self.passed
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
}

/// The key of input `i`'s archive, relative to the prefix: its name and `.nc3z`.
fn key(prefix: &Prefix, plan: &BatchPlan, i: usize) -> Result<String> {
    let name = std::str::from_utf8(plan.name(i)).map_err(|_| Error::Remote {
        url: prefix.url_of(&format!("{}.nc3z", String::from_utf8_lossy(plan.name(i)))),
        source: RemoteError::InvalidUrl {
            why: "the input's name is not UTF-8, which an object key must be".into(),
        },
    })?;
    let key = format!("{name}.nc3z");
    prefix.check_key(&key)?;
    Ok(key)
}

/// An error checking an object's ends when its key is not usable (not reached: keys are
/// checked before [`decide`]).
fn bad_key(e: Error) -> EndsError {
    EndsError::Io {
        op: "read",
        source: std::io::Error::other(e.to_string()),
    }
}

impl Archives for Objects<'_> {
    fn recorded_ends(
        &self,
        plan: &BatchPlan,
        i: usize,
        len: u64,
        size: u64,
        hash: u128,
    ) -> std::result::Result<u128, EndsError> {
        // Checked already with these arguments: `decide` passes the record of input i that
        // `pack_all_to_prefix` checked (its lead then recorded this `hash`).
        if self.passed(i) {
            return Ok(hash);
        }
        let key = key(self.prefix, plan, i).map_err(bad_key)?;
        self.prefix
            .ends(&key, Some(len), size, Some(hash))
            .map(|r| r.1)
    }

    fn exists(&self, plan: &BatchPlan, i: usize) -> Result<bool> {
        Ok(self.prefix.head(&key(self.prefix, plan, i)?)?.is_some())
    }

    fn ends(
        &self,
        plan: &BatchPlan,
        i: usize,
        size: u64,
    ) -> Option<std::result::Result<(u64, u128), EndsError>> {
        Some(
            key(self.prefix, plan, i)
                .map_err(bad_key)
                .and_then(|key| self.prefix.ends(&key, None, size, None)),
        )
    }

    fn lossy_original(&self, plan: &BatchPlan, i: usize) -> Option<super::LossyArchive> {
        // By range requests, as `info` reads an archive: its lead, index and header frame,
        // not its data (the object may be large and hold a lossless file).
        let key = key(self.prefix, plan, i).ok()?;
        let reader = self.prefix.reader(&key).ok()?;
        let url = self.prefix.url_of(&key);
        super::LossyArchive::of(&crate::Archive::from_reader(reader, url.as_ref()).ok()?)
    }
}

/// Packs every input of `plan` into objects under `prefix` (see the module docs), on
/// `opts.threads` worker threads (bounded by [`crate::parallel::bound_threads`]; each file
/// with one encoder thread, each upload sending its parts 4 at a time), skipping what `done`
/// records as packed unless `opts.force`. `on_done` is called with each input's index and
/// outcome as it becomes final (a packed file's once its object is complete), from any
/// thread, in no particular order. A worker thread that cannot be started is not an error:
/// the others (and the calling thread) do its share.
///
/// It serves [`crate::collection::pack_collection`] with an S3 output:
///
/// ```no_run
/// use nc3pack::collection::{pack_collection, CollectionOptions};
/// let r = pack_collection(&["data"], "s3://bucket/collection/".as_ref(), &CollectionOptions::default())?;
/// # Ok::<(), nc3pack::Error>(())
/// ```
///
/// # Errors
///
/// None at present: every failure is one input's, given to `on_done`.
pub fn pack_all_to_prefix(
    plan: &BatchPlan,
    opts: &PackOptions,
    done_before: &Done,
    prefix: &Prefix,
    on_done: &(dyn Fn(usize, Outcome) + Sync),
) -> Result<()> {
    let per_file = PackOptions {
        threads: Some(1),
        progress: crate::Progress::default(),
        ..opts.clone()
    };
    // A rerun: the recorded objects are checked first, many at a time (one after another,
    // each would cost two round trips).
    let mut passed = vec![0u64; plan.len().div_ceil(64)];
    if !opts.force && !done_before.is_empty() {
        let items = (0..plan.len()).filter_map(|i| {
            let r = done_before.get(plan.name(i))?;
            let key = key(prefix, plan, i).ok()?;
            Some((i, key, r.output_size, r.restored_len(), r.hash))
        });
        // Without a runtime, each worker checks its objects itself.
        let _ = prefix.recorded_ends_many(items, &mut |i| passed[i / 64] |= 1 << (i % 64));
    }
    let objects = Objects { prefix, passed };
    let tmp = std::env::temp_dir();
    let next = AtomicUsize::new(0);
    let work = || {
        // The directory of the last input looked at, kept open.
        let mut inputs = OpenDir::default();
        loop {
            // After a signal, the uploads in flight abort and the process dies: start no more.
            if crate::cleanup::pending_signal().is_some() {
                return;
            }
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= plan.len() {
                return;
            }
            let t = Instant::now();
            let key = match key(prefix, plan, i) {
                Ok(k) => k,
                Err(error) => {
                    on_done(i, Outcome::Failed { error, input: None });
                    continue;
                }
            };
            let step = decide(plan, &objects, &mut inputs, i, done_before, opts.force, t);
            let (force, size, mtime) = match step {
                Decision::Finished(o) => {
                    on_done(i, o);
                    continue;
                }
                Decision::Pack { force, size, mtime } => (force, size, mtime),
            };
            // Packed next to a name in the temporary directory that is never made: the temporary
            // file (registered for removal on a signal) is uploaded, then removed.
            let nominal = tmp.join(format!(".nc3pack-upload-{}-{i}.nc3z", std::process::id()));
            let r = pack_to_temp(&plan.input(i), &nominal, &per_file, true, false, &|_| {})
                .and_then(|(pending, summary)| {
                    prefix.upload(pending.path(), &key, force).map(|_| summary)
                });
            match r {
                Ok(summary) => on_done(
                    i,
                    Outcome::Packed {
                        summary,
                        mtime_ns: mtime,
                        seconds: t.elapsed().as_secs_f64(),
                        deleted: false,
                        kept: None,
                        output_id: None,
                    },
                ),
                Err(error) => on_done(
                    i,
                    Outcome::Failed {
                        error,
                        input: Some((size, mtime)),
                    },
                ),
            }
        }
    };
    let threads = crate::parallel::bound_threads(opts.threads()).min(plan.len().max(1));
    std::thread::scope(|s| {
        for _ in 1..threads {
            if crate::parallel::spawn_scoped(s, "batch uploader", work).is_err() {
                break;
            }
        }
        work();
    });
    Ok(())
}
