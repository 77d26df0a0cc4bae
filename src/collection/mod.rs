//! Packing a collection: many netCDF-3 files into a directory (or an S3 prefix) of archives,
//! in parallel, resumable, with a manifest, as `nc3pack pack IN... -o OUT` does.
//!
//! [`pack_collection`] finds the inputs (files, and directories searched for netCDF files by
//! their first bytes), names each archive after the input's path relative to a root
//! (`ROOT/a/x.nc` to `OUT/a/x.nc.nc3z`), packs them on worker threads, and appends a line per
//! file to a manifest (`OUT/.nc3pack/manifest-I-of-N.jsonl`). A second call skips what a
//! manifest records as packed. A file that fails does not stop the others: it is listed in the
//! [`CollectionReport`]. [`CollectionOptions`] carries the packing options, a [`Shard`] (so
//! that N processes cover each file once), the manifest's path, `delete_input` (delete each
//! original once its archive is proven: verified, synced and recorded) and a progress callback
//! ([`CollectionEvent`]). [`verify_collection`] verifies every archive the manifests list, or a
//! share of them ([`VerifyCollectionOptions`]; [`verify_collection_with`]: those in object
//! storage read with given options).
//!
//! ```no_run
//! use nc3pack::collection::{pack_collection, CollectionOptions};
//! let opts = CollectionOptions::default().with_threads(4);
//! let report = pack_collection(&["data"], "archives".as_ref(), &opts)?;
//! println!("{} packed, {} skipped, {} failed", report.packed, report.skipped, report.failures.len());
//! let check = nc3pack::collection::verify_collection(
//!     &["archives/.nc3pack".into()],
//!     &nc3pack::collection::VerifyCollectionOptions::default().with_threads(4),
//!     &|_| {},
//! )?;
//! assert!(check.is_ok());
//! # Ok::<(), nc3pack::Error>(())
//! ```
//!
//! An output that is an S3 prefix (`s3://BUCKET/PREFIX/`, with the `remote` feature) makes each
//! archive the object `PREFIX/NAME.nc3z`, uploaded complete or not at all; the manifest is then
//! kept locally (by default `./.nc3pack/BUCKET/PREFIX/manifest-I-of-N.jsonl`) and copied to
//! `PREFIX/.nc3pack/` every [`CollectionOptions::with_manifest_copy_every`] and at the end.

use crate::collection::batch::{find, pack_all, BatchPlan, Found, Outcome};
use crate::collection::manifest::{Done, Entry, Manifest, Status};
use crate::error::OptionError;
use crate::{Error, PackOptions, PackSummary, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) mod batch;
#[cfg(feature = "remote")]
mod bucket;
mod leftovers;
mod list;
pub mod manifest;

pub use crate::collection::batch::{Kept, ParseShardError, Shard};
pub use crate::collection::leftovers::Leftover;
pub use crate::collection::manifest::{
    summarize_collection, verify_collection, CollectionProblem, CollectionSummary,
    VerifyCollectionOptions, VerifyCollectionReport,
};
#[cfg(feature = "remote")]
pub use crate::collection::manifest::{summarize_collection_with, verify_collection_with};

/// What happened, as [`pack_collection`] goes: given to [`CollectionOptions::with_progress`]'s
/// callback, from any worker thread.
///
/// ```
/// use nc3pack::collection::{CollectionEvent, FileOutcome};
/// fn show(e: &CollectionEvent) {
///     if let CollectionEvent::Finished { finished, input, outcome: FileOutcome::Failed { error }, .. } = e {
///         eprintln!("{finished}: {}: {error}", input.display());
///     }
/// }
/// # let _ = show;
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum CollectionEvent<'a> {
    /// The inputs are found: `inputs` paths to look at (this shard's), before any is packed.
    Planned {
        /// How many.
        inputs: usize,
    },
    /// One input is finished.
    Finished {
        /// How many are finished, this one included.
        finished: usize,
        /// The input's path.
        input: &'a Path,
        /// What became of it.
        outcome: FileOutcome<'a>,
    },
}

/// What became of one input, in a [`CollectionEvent::Finished`].
#[derive(Debug)]
#[non_exhaustive]
pub enum FileOutcome<'a> {
    /// Packed now.
    Packed {
        /// What packing produced (its `moved_outside_valid` lists the values quantization
        /// moved outside a variable's valid range).
        summary: &'a PackSummary,
    },
    /// Found packed already (a manifest records it, or its archive is complete and holds the
    /// input's hash).
    Skipped,
    /// Found in a directory and not netCDF: ignored.
    NotNetcdf,
    /// Failed (also listed in [`CollectionReport::failures`]).
    Failed {
        /// Why.
        error: &'a Error,
    },
}

/// The callback of [`CollectionOptions::with_progress`].
type EventFn = dyn Fn(&CollectionEvent<'_>) + Send + Sync;

/// How [`pack_collection`] packs: the packing options of every file, and what to do around
/// them. Built with the `with_*` setters from the default (default packing options, one shard,
/// the manifest in `OUT/.nc3pack/`, inputs kept).
///
/// ```
/// use nc3pack::collection::CollectionOptions;
/// let opts = CollectionOptions::default()
///     .with_pack(nc3pack::PackOptions::max())
///     .with_shard("1/4".parse()?)
///     .with_manifest("run.jsonl")
///     .with_progress(|e| eprintln!("{e:?}"));
/// # let _ = opts;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct CollectionOptions {
    pack: PackOptions,
    files_from: Option<PathBuf>,
    root: Option<PathBuf>,
    shard: Shard,
    manifest: Option<PathBuf>,
    delete_input: bool,
    copy_every: Duration,
    write_manifest: bool,
    progress: Option<Arc<EventFn>>,
    #[cfg(feature = "remote")]
    remote: Option<crate::remote::RemoteOptions>,
}

impl Default for CollectionOptions {
    fn default() -> Self {
        CollectionOptions {
            pack: PackOptions::default(),
            files_from: None,
            root: None,
            shard: Shard::default(),
            manifest: None,
            delete_input: false,
            copy_every: Duration::from_secs(30),
            write_manifest: true,
            progress: None,
            #[cfg(feature = "remote")]
            remote: None,
        }
    }
}

impl std::fmt::Debug for CollectionOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CollectionOptions")
            .field("pack", &self.pack)
            .field("files_from", &self.files_from)
            .field("root", &self.root)
            .field("shard", &self.shard)
            .field("manifest", &self.manifest)
            .field("delete_input", &self.delete_input)
            .field("copy_every", &self.copy_every)
            .field("write_manifest", &self.write_manifest)
            .field("progress", &self.progress.as_ref().map(|_| "callback"))
            .finish_non_exhaustive()
    }
}

impl CollectionOptions {
    /// The packing options of every file (their `threads` is the number of files packed at
    /// once, each on one thread; `force` packs everything again, ignoring the manifests, and
    /// replaces existing archives; their progress callback is not called).
    ///
    /// ```
    /// let o = nc3pack::collection::CollectionOptions::default().with_pack(nc3pack::PackOptions::max());
    /// # let _ = o;
    /// ```
    pub fn with_pack(mut self, pack: PackOptions) -> Self {
        self.pack = pack;
        self
    }

    /// Files packed at once (bounded to 1..=[`crate::MAX_THREADS`]).
    ///
    /// ```
    /// let o = nc3pack::collection::CollectionOptions::default().with_threads(8);
    /// # let _ = o;
    /// ```
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.pack.threads = Some(threads);
        self
    }

    /// Also pack the paths listed in this file, one a line (`-`: standard input); empty lines
    /// are skipped and a line's final carriage return is not part of the name.
    ///
    /// ```
    /// let o = nc3pack::collection::CollectionOptions::default().with_files_from("list.txt");
    /// # let _ = o;
    /// ```
    pub fn with_files_from(mut self, list: impl Into<PathBuf>) -> Self {
        self.files_from = Some(list.into());
        self
    }

    /// The directory the archives' names are relative to (default: the deepest directory
    /// holding every input).
    ///
    /// ```
    /// let o = nc3pack::collection::CollectionOptions::default().with_root("/data");
    /// # let _ = o;
    /// ```
    pub fn with_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.root = Some(root.into());
        self
    }

    /// Pack only this share of the inputs: the names it owns ([`Shard::owns`], a hash of the
    /// name), so that N runs, one for each share, pack every input once.
    ///
    /// ```
    /// let o = nc3pack::collection::CollectionOptions::default().with_shard("0/2".parse()?);
    /// # let _ = o;
    /// # Ok::<(), nc3pack::collection::ParseShardError>(())
    /// ```
    pub fn with_shard(mut self, shard: Shard) -> Self {
        self.shard = shard;
        self
    }

    /// Append the manifest here (default: `OUT/.nc3pack/manifest-I-of-N.jsonl`; with an S3
    /// output, `./.nc3pack/BUCKET/PREFIX/manifest-I-of-N.jsonl`).
    ///
    /// ```
    /// let o = nc3pack::collection::CollectionOptions::default().with_manifest("m.jsonl");
    /// # let _ = o;
    /// ```
    pub fn with_manifest(mut self, manifest: impl Into<PathBuf>) -> Self {
        self.manifest = Some(manifest.into());
        self
    }

    /// Delete each input once its archive is written, synced, renamed into place, verified by
    /// decoding it back to the input's hash and recorded (symbolic links, pipes and devices
    /// are kept: [`CollectionReport::kept`]). Not with an S3 output, nor with quantization.
    ///
    /// ```
    /// let o = nc3pack::collection::CollectionOptions::default().with_delete_input(true);
    /// # let _ = o;
    /// ```
    pub fn with_delete_input(mut self, delete: bool) -> Self {
        self.delete_input = delete;
        self
    }

    /// With an S3 output: the time between copies of the manifest to the bucket while lines
    /// are written (zero: after every line). The last copy is made at the end.
    ///
    /// ```
    /// let o = nc3pack::collection::CollectionOptions::default()
    ///     .with_manifest_copy_every(std::time::Duration::from_secs(5));
    /// # let _ = o;
    /// ```
    pub fn with_manifest_copy_every(mut self, every: Duration) -> Self {
        self.copy_every = every;
        self
    }

    /// Whether each file packed is recorded in the manifest (`true`, the default). `false` is
    /// for measuring what the manifest costs (bench/collection.sh): no line is written (nor,
    /// with an S3 output, copied to the bucket), so a rerun finds nothing recorded.
    ///
    /// ```
    /// let o = nc3pack::collection::CollectionOptions::default().with_write_manifest(false);
    /// # let _ = o;
    /// ```
    pub fn with_write_manifest(mut self, write: bool) -> Self {
        self.write_manifest = write;
        self
    }

    /// Calls `f` with each [`CollectionEvent`], from any thread.
    ///
    /// ```
    /// let o = nc3pack::collection::CollectionOptions::default().with_progress(|e| eprintln!("{e:?}"));
    /// # let _ = o;
    /// ```
    pub fn with_progress(
        mut self,
        f: impl Fn(&CollectionEvent<'_>) + Send + Sync + 'static,
    ) -> Self {
        self.progress = Some(Arc::new(f));
        self
    }

    /// The options of an S3 output (default: [`crate::remote::RemoteOptions::from_env`], read
    /// when [`crate::pack_collection`] is called).
    ///
    /// ```
    /// let o = nc3pack::collection::CollectionOptions::default()
    ///     .with_remote(nc3pack::remote::RemoteOptions::from_env().with_anon(true));
    /// # let _ = o;
    /// ```
    #[cfg(feature = "remote")]
    pub fn with_remote(mut self, remote: crate::remote::RemoteOptions) -> Self {
        self.remote = Some(remote);
        self
    }

    fn report(&self, e: &CollectionEvent<'_>) {
        if let Some(f) = &self.progress {
            f(e)
        }
    }
}

/// What [`pack_collection`] did.
///
/// ```
/// let r = nc3pack::collection::CollectionReport::default();
/// assert!(r.is_ok() && r.ratio().is_none());
/// ```
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct CollectionReport {
    /// Where the archives are: the output directory, or the S3 prefix's URL.
    pub output: PathBuf,
    /// The manifest appended to.
    pub manifest: PathBuf,
    /// Inputs looked at that are (or may be) netCDF files: those packed, skipped and failed.
    pub files: usize,
    /// Inputs packed now.
    pub packed: usize,
    /// Inputs found packed already.
    pub skipped: usize,
    /// Bytes of the inputs packed now (of the originals, for quantized files).
    pub input_bytes: u64,
    /// Bytes of their archives.
    pub output_bytes: u64,
    /// Inputs that failed, with why, in name order.
    pub failures: Vec<(PathBuf, Error)>,
    /// Paths that could not be read while finding the inputs (each error names its path).
    pub unreadable: Vec<Error>,
    /// Inputs `delete_input` kept although their archives are done, with why, in name order.
    pub kept: Vec<(PathBuf, Kept)>,
    /// The first error writing the manifest, or making it durable (or copying it to the
    /// bucket at the end): what was packed is then not (all) recorded.
    pub manifest_error: Option<Error>,
    /// What killed runs left among the inputs, and what was done with it: originals that
    /// `delete_input` had moved aside, put back under their names (or not, and why); given
    /// paths that are nc3pack's temporary files, ignored.
    pub leftovers: Vec<Leftover>,
    /// Temporary files (`.nc3pack-*.part`) under the output directory whose process is gone
    /// (killed), removed before packing.
    pub temporaries_removed: usize,
    /// Temporary files under the output directory left there: of a process of this host that
    /// is running, of another host, or named without their host and process (an earlier
    /// version's).
    pub temporaries_left: usize,
}

impl CollectionReport {
    /// Whether every input was packed (or found packed), every path read, every line of the
    /// manifest written, and no original moved aside by a killed run left hidden
    /// ([`Leftover::needs_attention`]).
    ///
    /// ```
    /// assert!(nc3pack::collection::CollectionReport::default().is_ok());
    /// ```
    pub fn is_ok(&self) -> bool {
        self.failures.is_empty()
            && self.unreadable.is_empty()
            && self.manifest_error.is_none()
            && !self.leftovers.iter().any(Leftover::needs_attention)
    }

    /// The inputs' bytes over the archives' of the files packed now, if any was.
    ///
    /// ```
    /// let r = nc3pack::collection::CollectionReport::default();
    /// assert_eq!(r.ratio(), None);
    /// ```
    pub fn ratio(&self) -> Option<f64> {
        (self.packed > 0).then(|| self.input_bytes as f64 / self.output_bytes.max(1) as f64)
    }
}

/// Packs `inputs` (files and directories; and [`CollectionOptions::with_files_from`]'s list)
/// into `output` as `output/NAME.nc3z`, in parallel, skipping what the manifests of earlier
/// runs record as packed, appending a manifest line per file (see the [module
/// docs](self)). A file that fails, or a path that cannot be read, is listed in the report and
/// does not stop the others.
///
/// ```no_run
/// use nc3pack::collection::{pack_collection, CollectionOptions};
/// let r = pack_collection(&["in/a.nc", "in/b"], "out".as_ref(), &CollectionOptions::default())?;
/// for (input, error) in &r.failures {
///     eprintln!("{}: {error}", input.display());
/// }
/// # Ok::<(), nc3pack::Error>(())
/// ```
///
/// # Errors
///
/// Before any file is packed: no inputs ([`OptionError::BatchInputs`]); `delete_input` with an
/// S3 output or with quantization ([`Error::Option`]); an S3 output whose bucket cannot be
/// listed or whose manifests cannot be fetched ([`Error::Remote`]); a list that cannot be
/// opened or read, a root that cannot be resolved, an output directory that cannot be made,
/// the manifests of earlier runs that cannot be read ([`Error::Io`]); an input outside the
/// root or whose archive would be where another's needs a directory ([`Error::Refused`]); a
/// worker thread that cannot be started ([`Error::Thread`]: the inputs are handed to the
/// workers a few thousand at a time, and those handed out before are then packed and
/// recorded).
pub fn pack_collection<P: AsRef<Path>>(
    inputs: &[P],
    output: &Path,
    opts: &CollectionOptions,
) -> Result<CollectionReport> {
    if inputs.is_empty() && opts.files_from.is_none() {
        return Err(OptionError::BatchInputs.into());
    }
    // Refused before anything is looked at or made (`pack_all` refuses it too).
    if opts.delete_input && !opts.pack.quantize().is_empty() {
        return Err(OptionError::DeleteInputLossy.into());
    }
    let bucket = open_bucket(output, opts)?;
    #[cfg(feature = "remote")]
    let out_dir = bucket
        .as_ref()
        .map_or_else(|| output.to_path_buf(), |b| PathBuf::from(b.prefix.url()));
    #[cfg(not(feature = "remote"))]
    let out_dir = output.to_path_buf();
    let dir = out_dir.as_path();
    let listed = list::lines(opts.files_from.as_deref())?;
    let inputs = inputs
        .iter()
        .map(|p| Ok(p.as_ref().to_path_buf()))
        .chain(listed);
    let (records, manifest_path) = manifests(&bucket, dir, opts);
    if bucket.is_none() {
        crate::collection::manifest::check_manifest_path(&manifest_path)?;
    }
    // The manifests of earlier runs are read while the inputs are found.
    let load = || {
        if opts.pack.force {
            Ok(Done::default())
        } else {
            let mut all = records.clone();
            all.push(manifest_path.clone());
            Done::load_share(&all, opts.shard)
        }
    };
    // The temporary files of killed runs in OUT (their process gone) are removed meanwhile.
    let tidy = || match &bucket {
        None => leftovers::remove_dead_temporaries(dir),
        Some(_) => (0, 0),
    };
    let (found, done, temporaries) = std::thread::scope(|s| {
        let loading = std::thread::Builder::new().spawn_scoped(s, load);
        let tidying = std::thread::Builder::new().spawn_scoped(s, tidy);
        let found = find(inputs, dir, opts.root.as_deref(), opts.shard);
        let done = match loading {
            Ok(h) => h.join().unwrap_or_else(|_| load()),
            Err(_) => load(),
        };
        let temporaries = match tidying {
            Ok(h) => h.join().unwrap_or_default(),
            Err(_) => tidy(),
        };
        (found, done, temporaries)
    });
    let (mut found, done) = (found?, done?);
    opts.report(&CollectionEvent::Planned {
        inputs: found.count,
    });
    let leftovers = std::mem::take(&mut found.leftovers);
    let run = CollectionRun {
        root: found.root().to_path_buf(),
        opts,
        manifest: Manifest::new(&manifest_path),
        bucket: bucket.as_ref(),
        no_manifest: !opts.write_manifest,
        counts: Default::default(),
        failures: Mutex::new(Vec::new()),
        write_error: Mutex::new(None),
        last_copy: Mutex::new(Instant::now()),
        kept: Mutex::new(Vec::new()),
    };
    // The inputs are handed out in chunks by a walker thread while the chunk before is packed
    // (or, if no thread can start, by this one, the first chunk then failing as it starts).
    let mut packed = Ok(());
    let found = Mutex::new(Some(found));
    let take = || lock(&found).take();
    let unreadable = std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<BatchPlan>(1);
        let walker = crate::parallel::spawn_scoped(s, "batch walker", move || {
            take().map(|f| f.chunks(CHUNK, &mut |chunk| tx.send(chunk).is_ok()))
        });
        let mut pack = |chunk: BatchPlan| {
            packed = run.pack(&chunk, &done);
            release_free_memory();
            packed.is_ok()
        };
        match walker {
            Ok(walker) => {
                // Stops at a chunk that could not be started; the walker stops with it.
                rx.into_iter().all(&mut pack);
                walker.join().ok().flatten().unwrap_or_default()
            }
            Err(_) => take().map_or_else(Vec::new, |f| f.chunks(CHUNK, &mut pack)),
        }
    });
    packed?;
    let mut report = run.finish(out_dir, manifest_path, &unreadable);
    report.unreadable = unreadable;
    report.leftovers = leftovers;
    (report.temporaries_removed, report.temporaries_left) = temporaries;
    Ok(report)
}

#[cfg(feature = "remote")]
type Bucket = bucket::Bucket;
/// Without the `remote` feature there is no object-store output.
#[cfg(not(feature = "remote"))]
type Bucket = std::convert::Infallible;

/// The object-store prefix `output` names, if it is a URL: checked (URL, credentials, bucket)
/// before any work, and its uploaded manifests fetched.
fn open_bucket(output: &Path, opts: &CollectionOptions) -> Result<Option<Bucket>> {
    let Some(url) = output.to_str().filter(|s| crate::io::is_url(s)) else {
        return Ok(None);
    };
    if opts.delete_input {
        return Err(OptionError::DeleteInputToUrl {
            url: url.to_string(),
        }
        .into());
    }
    #[cfg(feature = "remote")]
    {
        let remote = opts
            .remote
            .clone()
            .unwrap_or_else(crate::remote::RemoteOptions::from_env);
        bucket::Bucket::open(url, opts.manifest.as_deref(), opts.shard, &remote).map(Some)
    }
    #[cfg(not(feature = "remote"))]
    Err(Error::Remote {
        url: url.to_string(),
        source: crate::error::RemoteError::NotBuilt,
    })
}

/// The manifests of earlier runs to read, and the one to append to.
fn manifests(
    bucket: &Option<Bucket>,
    dir: &Path,
    opts: &CollectionOptions,
) -> (Vec<PathBuf>, PathBuf) {
    #[cfg(feature = "remote")]
    if let Some(b) = bucket {
        return (b.records.clone(), b.manifest.clone());
    }
    #[cfg(not(feature = "remote"))]
    let _ = bucket;
    let records = dir.join(".nc3pack");
    let manifest = opts
        .manifest
        .clone()
        .unwrap_or_else(|| records.join(format!("manifest-{}.jsonl", opts.shard)));
    (vec![records], manifest)
}

/// Files packed, skipped, ignored and finished; bytes in and out.
#[derive(Default)]
struct Counts {
    /// Inputs handed out.
    inputs: AtomicUsize,
    packed: AtomicUsize,
    skipped: AtomicUsize,
    ignored: AtomicUsize,
    finished: AtomicUsize,
    input_bytes: AtomicU64,
    output_bytes: AtomicU64,
}

/// Inputs handed out together (a chunk of the walk) by [`pack_collection`]: what a batch
/// holds of its inputs' paths at once, whatever the collection's size (three chunks: one
/// packed, one waiting, one being walked; about 100 KiB each for paths of 100 bytes).
const CHUNK: usize = 1024;

/// One call of [`pack_collection`], once its inputs are found: what the workers share.
struct CollectionRun<'a> {
    /// The root the inputs' names are relative to.
    root: PathBuf,
    opts: &'a CollectionOptions,
    manifest: Manifest,
    bucket: Option<&'a Bucket>,
    no_manifest: bool,
    counts: Counts,
    failures: Mutex<Vec<(PathBuf, Error)>>,
    write_error: Mutex<Option<Error>>,
    last_copy: Mutex<Instant>,
    kept: Mutex<Vec<(PathBuf, Kept)>>,
}

impl CollectionRun<'_> {
    /// Packs every input of `plan` (a chunk).
    fn pack(&self, plan: &BatchPlan, done: &Done) -> Result<()> {
        self.counts.inputs.fetch_add(plan.len(), Relaxed);
        let on_done = |i: usize, o: Outcome| self.on_done(plan, i, o);
        #[cfg(feature = "remote")]
        if let Some(b) = self.bucket {
            return crate::collection::batch::pack_all_to_prefix(
                plan,
                &self.opts.pack,
                done,
                &b.prefix,
                &on_done,
            );
        }
        let record = |group: &[(usize, &Outcome)]| self.record(plan, group);
        let record: &crate::collection::batch::RecordFn<'_> = &record;
        pack_all(
            plan,
            &self.opts.pack,
            done,
            self.opts.delete_input.then_some(record),
            &on_done,
        )
    }

    /// Notes a write's error (the first one is reported).
    fn note_write(&self, written: Result<()>) {
        if let Err(err) = written {
            lock(&self.write_error).get_or_insert(err);
        }
    }

    /// Writes a manifest line.
    fn write_line(&self, e: &Entry) {
        if !self.no_manifest {
            self.note_write(self.manifest.write(e));
        }
    }

    /// Writes a manifest line, then copies the manifest to the bucket if it is time to.
    fn write(&self, e: &Entry) {
        self.write_line(e);
        let Some(b) = self.bucket else { return };
        let Ok(mut last) = self.last_copy.try_lock() else {
            return;
        };
        if last.elapsed() >= self.opts.copy_every {
            // A failed copy is tried again later, and at the end, where it is an error.
            #[cfg(feature = "remote")]
            let _ = b.copy_manifest(&self.manifest);
            #[cfg(not(feature = "remote"))]
            let _ = b;
            *last = Instant::now();
        }
    }

    /// With `delete_input`: the records of a group of archives, written and synced before
    /// their inputs are deleted (the outcomes then reported say `deleted` and are not written
    /// again).
    fn record(&self, plan: &BatchPlan, group: &[(usize, &Outcome)]) -> Result<()> {
        for (i, o) in group {
            if let Some(e) = entry_of(plan, *i, o) {
                self.manifest.write(&e)?;
            }
        }
        self.manifest.sync()
    }

    /// Takes one input's final outcome: counts it, writes its manifest line, tells the
    /// progress callback.
    fn on_done(&self, plan: &BatchPlan, i: usize, outcome: Outcome) {
        let c = &self.counts;
        let kept = match &outcome {
            Outcome::Packed { kept, .. } | Outcome::Skipped { kept, .. } => *kept,
            _ => None,
        };
        if let Some(k) = kept {
            lock(&self.kept).push((plan.input(i), k));
        }
        match &outcome {
            Outcome::Packed {
                summary, deleted, ..
            } => {
                c.packed.fetch_add(1, Relaxed);
                c.output_bytes.fetch_add(summary.output_len, Relaxed);
                let input_len = summary.original.map_or(summary.input_len, |o| o.0);
                c.input_bytes.fetch_add(input_len, Relaxed);
                if !deleted {
                    if let Some(e) = entry_of(plan, i, &outcome) {
                        self.write(&e);
                    }
                }
            }
            Outcome::Skipped { found, deleted, .. } => {
                c.skipped.fetch_add(1, Relaxed);
                // Found done as recorded, and nothing else to say: a short line that refers
                // to the earlier one (written later, with others: a kill may lose it).
                // (A lossy archive's is always short: it is never deleted nor kept, since
                // `delete_input` fails it instead.)
                if *found == Found::AsRecorded && !deleted && kept.is_none() {
                    // `Entry::done_before`'s line, written without building the entry.
                    if !self.no_manifest {
                        self.note_write(self.manifest.write_done_before(plan.name(i)));
                    }
                } else if !deleted {
                    if let Some(e) = entry_of(plan, i, &outcome) {
                        self.write_line(&e);
                    }
                }
            }
            Outcome::NotNetcdf => {
                c.ignored.fetch_add(1, Relaxed);
            }
            Outcome::Failed { .. } => {
                if let Some(e) = entry_of(plan, i, &outcome) {
                    self.write(&e);
                }
            }
        }
        let finished = c.finished.fetch_add(1, Relaxed) + 1;
        let input = plan.input(i);
        let event = |outcome| CollectionEvent::Finished {
            finished,
            input: &input,
            outcome,
        };
        match outcome {
            Outcome::Packed { summary, .. } => self
                .opts
                .report(&event(FileOutcome::Packed { summary: &summary })),
            Outcome::Skipped { .. } => self.opts.report(&event(FileOutcome::Skipped)),
            Outcome::NotNetcdf => self.opts.report(&event(FileOutcome::NotNetcdf)),
            Outcome::Failed { error, .. } => {
                self.opts
                    .report(&event(FileOutcome::Failed { error: &error }));
                lock(&self.failures).push((input, error));
            }
        }
    }

    /// Records what could not be read, makes the manifest durable (copies it to the bucket),
    /// and sums up.
    fn finish(self, output: PathBuf, manifest: PathBuf, unreadable: &[Error]) -> CollectionReport {
        // What could not be read while finding the inputs: one line each, written by the first
        // shard only (every shard finds the same).
        if self.opts.shard.index == 0 {
            for e in unreadable {
                if let Error::Io { path, .. } = e {
                    use std::os::unix::ffi::OsStrExt;
                    let bytes = path.as_os_str().as_bytes();
                    let name = path
                        .strip_prefix(&self.root)
                        .map_or(bytes, |r| r.as_os_str().as_bytes());
                    self.write(&Entry {
                        input: path.clone(),
                        error: Some(e.to_string()),
                        ..Entry::new(Status::Failed, name.to_vec())
                    });
                }
            }
        }
        #[cfg(feature = "remote")]
        let synced = match self.bucket {
            Some(b) if !self.no_manifest => b.copy_manifest(&self.manifest),
            _ => self.manifest.sync(),
        };
        #[cfg(not(feature = "remote"))]
        let synced = self.manifest.sync();
        let CollectionRun {
            counts,
            failures,
            write_error,
            kept,
            ..
        } = self;
        let mut kept = kept.into_inner().unwrap_or_else(|p| p.into_inner());
        kept.sort_by(|a, b| a.0.as_os_str().cmp(b.0.as_os_str()));
        let mut failures = failures.into_inner().unwrap_or_else(|p| p.into_inner());
        failures.sort_by(|a, b| a.0.as_os_str().cmp(b.0.as_os_str()));
        let write_error = write_error.into_inner().unwrap_or_else(|p| p.into_inner());
        CollectionReport {
            output,
            manifest,
            files: counts.inputs.into_inner() - counts.ignored.into_inner(),
            packed: counts.packed.into_inner(),
            skipped: counts.skipped.into_inner(),
            input_bytes: counts.input_bytes.into_inner(),
            output_bytes: counts.output_bytes.into_inner(),
            failures,
            unreadable: Vec::new(),
            kept,
            manifest_error: write_error.or(synced.err()),
            leftovers: Vec::new(),
            temporaries_removed: 0,
            temporaries_left: 0,
        }
    }
}

/// Gives the memory freed by a chunk's files back to the system: glibc keeps what the packers'
/// buffers of one file freed in pieces among what later files hold, so that a process's
/// resident size would creep up over a long batch although what it holds stays level.
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory of the allocator's to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The manifest line of an outcome (a `skipped` one in full, not referring to an earlier).
fn entry_of(plan: &BatchPlan, i: usize, outcome: &Outcome) -> Option<Entry> {
    let entry = |status, seconds| Entry {
        input: plan.input(i),
        output: plan.output(i),
        seconds,
        ..Entry::new(status, plan.name(i).to_vec())
    };
    Some(match outcome {
        Outcome::Packed {
            summary,
            mtime_ns,
            seconds,
            deleted,
            kept,
            output_id,
        } => {
            // A lossy archive restores another file than its input: both recorded.
            let (size, hash) = summary
                .original
                .unwrap_or((summary.input_len, summary.hash));
            Entry {
                size: Some(size),
                mtime_ns: Some(*mtime_ns),
                hash: Some(hash),
                output_size: Some(summary.output_len),
                output_id: *output_id,
                restored: summary.original.map(|_| (summary.input_len, summary.hash)),
                deleted: *deleted,
                kept: kept.map(|k| k.to_string()),
                ..entry(Status::Packed, *seconds)
            }
        }
        Outcome::Skipped {
            record,
            found,
            seconds,
            deleted,
            kept,
            input_hash,
        } => Entry {
            size: Some(record.size),
            mtime_ns: Some(record.mtime_ns),
            hash: Some(input_hash.unwrap_or(record.hash)),
            output_size: Some(record.output_size),
            output_id: record.output_id,
            // A lossy archive's record holds the quantized file's hash.
            restored: record.restored_size.map(|r| (r.get(), record.hash)),
            deleted: *deleted,
            kept: kept.map(|k| k.to_string()),
            ..entry(
                match found {
                    Found::AsRecorded | Found::Rechecked => Status::Skipped,
                    Found::Unrecorded => Status::Packed,
                },
                *seconds,
            )
        },
        Outcome::Failed { error, input } => Entry {
            size: input.map(|x| x.0),
            mtime_ns: input.map(|x| x.1),
            error: Some(error.to_string()),
            ..entry(Status::Failed, 0.0)
        },
        Outcome::NotNetcdf => return None,
    })
}
