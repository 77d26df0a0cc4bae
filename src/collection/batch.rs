//! Packing many files: `nc3pack pack IN... -o OUT` (and `--files-from LIST`).
//!
//! **Finding the inputs.** Inputs are files or directories. A directory is searched recursively
//! for netCDF files by their first bytes, whatever their names: `CDF\x01`, `CDF\x02` and
//! `CDF\x05` (netCDF-3) are packed; other files starting with `CDF`, and HDF5 files (netCDF-4),
//! are failures (reported: "not a netCDF-3 file", an unknown version) since they are surely
//! meant to be archived too; every other regular file found there (other bytes, or shorter than
//! 4 bytes) is skipped silently. A file found there that cannot be read (no permission, a
//! broken symbolic link, a path too long) is a failure, since it may be netCDF. A file given
//! by name (an argument or a line of the list) is packed whatever it is, and fails if it is
//! not netCDF-3. Hidden files and directories (a name starting with `.`) found in a directory
//! are not inputs, nor searched (editors' and tools' files, nc3pack's own temporaries and
//! manifests); named on the command line or in a list, a hidden file is an input, but never one
//! of nc3pack's temporary files (`.nc3pack-*.part`, `.nc3pack-deleting-*`): those are ignored,
//! and said so.
//!
//! Symbolic links are followed, both given and found: a link to a regular file is packed under
//! the link's name, and a link to a directory is searched as if the directory were there. Each
//! directory is searched once, wherever it is reached again (a link loop, two links to one
//! directory). In directories only regular files are read; a pipe or device given by name is
//! read as a stream.
//!
//! **Naming the outputs.** Every input has a path in the tree being archived: a given path is
//! made absolute with its directories resolved (symbolic links and `..` followed, as the
//! system does: `realpath` of the directory) and its own name kept; a file found in a
//! directory is that directory's path and the names below it. The root is `--root` (resolved
//! the same way) or, by default, the deepest directory holding every input (a given directory
//! counts as itself, a given file as its directory). Each input's path relative to the root,
//! its *name*, is the archive's path relative to OUT with `.nc3z` appended:
//! `ROOT/a/2001/x.nc` goes to `OUT/a/2001/x.nc.nc3z`. A name consists of plain names only
//! (no `.`, `..` or leading `/`), so an archive's path never leaves OUT; the directories made
//! for it are checked, once each, to resolve inside OUT (a symbolic link inside OUT that
//! leads elsewhere fails the files below it). An input outside the root, or a file whose
//! archive would be a directory another input's archive needs, is an error before any work
//! starts. A path given twice (or given and found) is packed once.
//!
//! **Sharding.** Shard `I/N` (0-based: I is 0 to N-1) takes the inputs whose names hash to
//! share I ([`Shard::owns`]), so N processes given the same inputs cover each file exactly
//! once; each packs its share's files as it finds them, handed out a few thousand paths at a
//! time (every shard walks the whole tree: [`find`] checks and counts, then
//! `Inputs::chunks` hands out), and keeps only its share's records of earlier runs. A shard
//! packs the files found in each directory given in the byte order of their paths, then the
//! files given by name (in byte order).
//!
//! **Resuming.** With the manifests of earlier runs ([`crate::collection::manifest::Done`]), an
//! input whose archive exists and is recorded as packed from the same input (same size and
//! modification time: the input is not read again, so a file rewritten with the same size and
//! the same mtime to the nanosecond is taken as done) is skipped if its archive is the file
//! recorded: a stat finds the recorded length, inode and change time
//! ([`crate::collection::manifest::FileId`]), and nothing is read. When the stat finds another
//! file, or the record has none (an older manifest), the archive is skipped if it has the
//! recorded length and its lead and footer are intact and record the manifest's size and hash
//! ([`crate::collection::manifest::check_recorded_ends`]: one small read, not a verify), and its
//! identity is recorded again (a full `skipped` line); an archive so recorded that fails that
//! check is packed again. An existing archive
//! with no record (a run killed after renaming it, before writing its line) is kept, and
//! counted as packed, if its ends are intact and it records the input's hash (the input is
//! read to check), or if it holds a quantized file whose original it names is the input
//! ([`LossyArchive`]); any other existing output is a failure without `--force`, as is an input
//! that changed since it was recorded. With `--force` every input is packed again.
//!
//! **Deleting the inputs** (`--delete-input`, off by default): an original is deleted only when
//! what is on disk at that moment is what a complete, synced, verified and recorded archive
//! holds. In order: its archive is renamed into place and synced, and verified completely
//! (decoded back to the hash the packer computed of the input; a commit group's archives in
//! parallel); the input must still be a regular file with the size and modification time it
//! had when packed; the archives' manifest records are written and synced (an input whose
//! record cannot be written is kept); then each input is opened (not through a symbolic link)
//! and read again, and deleted only if its bytes hash to what the archive restores, nothing
//! changed it while it was read (same size, modification and change time after as before), and
//! its path still names the file read (same device, inode and change time: not renamed over).
//! Its directory is synced after. What is not covered: a file replaced in the moment between
//! that last check and the unlink. A symbolic link (given or found), pipe or device is never
//! deleted, nor is a link's target through it: its archive is done and recorded, with the
//! reason it was kept ([`Kept`]), and that is not a failure. A rerun deletes the inputs of
//! archives already done the same way (verified, read again), and counts an input already
//! gone, whose archive is recorded and intact, as done.
//!
//! **Outputs are never inputs.** An existing output that is not an nc3pack archive (a netCDF
//! file of the batch named like `x.nc.nc3z`, any other file) is never replaced, with or
//! without `--force`: that input fails saying so.
//!
//! Files are packed in parallel, one per worker thread; a file that fails does not stop the
//! others.
//!
//! **Into object storage.** OUT may be an S3 prefix (`s3://BUCKET/PREFIX/`): the archive of
//! NAME is then the object `PREFIX/NAME.nc3z`, uploaded complete or not at all, and resuming
//! checks objects by range requests ([`pack_all_to_prefix`], module `to_prefix`). The manifest
//! is then kept locally and copied to the bucket by [`crate::collection`]
//! (docs/collections.md, "Into a bucket"); `--delete-input` is refused.

use crate::atomic::Pending;
use crate::collection::manifest::{
    check_ends, check_recorded_ends, check_recorded_ends_of, hash_file, mtime_ns, Done, EndsError,
    FileId, Record,
};
use crate::error::{io_err, spawn_err, Error, Refusal, Result};
use crate::pack::{pack_to_temp, PackOptions, PackSummary};
use crate::parallel::spawn_scoped;
use std::ffi::OsStr;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, SendError};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

mod delete;
mod find;
mod shard;
#[cfg(feature = "remote")]
mod to_prefix;
use delete::delete_group;
pub use delete::RecordFn;
pub(crate) use find::find;
#[cfg(any(test, feature = "testing"))]
pub use find::plan;
use find::{push_joined, List};
pub use shard::{ParseShardError, Shard};
#[cfg(feature = "remote")]
pub use to_prefix::pack_all_to_prefix;

/// The flag on an entry of [`BatchPlan`]'s list: given by name (not found in a directory).
const GIVEN: u64 = 1 << 63;

/// What a batch will pack (all of a shard's inputs, or a chunk of them). The list is held
/// compactly: the paths' bytes one after another, in the order found, with one offset each,
/// and, when that is not their byte order, that order as a list of positions (not a second
/// copy of the paths).
#[derive(Debug, Default)]
pub struct BatchPlan {
    out: PathBuf,
    /// The paths, as found.
    list: List,
    /// The entries in byte order, once each; empty when the list is in that order already.
    order: Vec<usize>,
    /// Length of the root's path and its `/`.
    skip: usize,
}

impl BatchPlan {
    /// Number of inputs.
    pub fn len(&self) -> usize {
        if self.order.is_empty() {
            self.list.ends.len()
        } else {
            self.order.len()
        }
    }

    /// Whether there is nothing to pack.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The list's entry of input `i`.
    fn entry(&self, i: usize) -> usize {
        if self.order.is_empty() {
            i
        } else {
            self.order[i]
        }
    }

    fn path_bytes(&self, i: usize) -> &[u8] {
        self.list.get(self.entry(i))
    }

    /// Input `i`'s path (absolute).
    pub fn input(&self, i: usize) -> PathBuf {
        PathBuf::from(OsStr::from_bytes(self.path_bytes(i)))
    }

    /// Input `i`'s name: its path relative to the root.
    pub fn name(&self, i: usize) -> &[u8] {
        &self.path_bytes(i)[self.skip..]
    }

    /// Input `i`'s archive: `OUT/NAME.nc3z`.
    pub fn output(&self, i: usize) -> PathBuf {
        let mut o = Vec::new();
        self.output_into(i, &mut o);
        PathBuf::from(std::ffi::OsString::from_vec(o))
    }

    /// [`BatchPlan::output`] into `buf` (emptied first): OUT joined with the name as
    /// [`Path::join`] joins, and `.nc3z`.
    fn output_into(&self, i: usize, buf: &mut Vec<u8>) {
        let name = self.name(i);
        buf.clear();
        // An absolute name would replace OUT, as in `Path::join` (names never are).
        if name.starts_with(b"/") {
            buf.extend_from_slice(name);
        } else {
            push_joined(buf, self.out.as_os_str().as_bytes(), name);
        }
        buf.extend_from_slice(b".nc3z");
    }

    /// Whether input `i` was given by name (else found in a directory).
    pub fn given(&self, i: usize) -> bool {
        self.list.ends[self.entry(i)] & GIVEN != 0
    }

    /// The output directory.
    pub fn out(&self) -> &Path {
        &self.out
    }
}

/// What became of one input of a batch.
#[derive(Debug)]
pub enum Outcome {
    /// Packed by this run.
    Packed {
        /// What packing produced.
        summary: PackSummary,
        /// The input's modification time (ns since 1970) before it was packed.
        mtime_ns: i64,
        /// Seconds spent on it.
        seconds: f64,
        /// Whether the input was deleted (`--delete-input`).
        deleted: bool,
        /// Why `--delete-input` kept it although its archive is done.
        kept: Option<Kept>,
        /// Which file the archive is, as a stat found it once renamed into place (`None` if
        /// that stat failed, and for objects).
        output_id: Option<FileId>,
    },
    /// Its archive was in place: recorded by a manifest, or found complete and holding the
    /// input's hash with no record (a run killed before writing its line): `found` says which.
    Skipped {
        /// What the manifest recorded, or what was found (with the archive's identity as it
        /// is now, when a stat found it).
        record: Record,
        /// How the archive was found.
        found: Found,
        /// Seconds spent checking.
        seconds: f64,
        /// Whether the input was deleted (`--delete-input`).
        deleted: bool,
        /// Why `--delete-input` kept it although its archive is done.
        kept: Option<Kept>,
        /// The input's xxh3-128 when that is not the record's (an archive of a quantized file,
        /// found with no record: the record holds the quantized file's hash).
        input_hash: Option<u128>,
    },
    /// Found in a directory, and not a netCDF-3 file: ignored.
    NotNetcdf,
    /// Failed.
    Failed {
        /// Why.
        error: Error,
        /// The input's size and modification time, if known.
        input: Option<(u64, i64)>,
    },
}

/// How a skipped input's archive was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Found {
    /// As a manifest recorded it: a short `skipped` line refers to that record.
    AsRecorded,
    /// As a manifest recorded it, but its ends had to be read to tell (the record has no
    /// identity of the archive, from an older version, or the stat found another: a tree
    /// copied, a file touched): a full `skipped` line records it as it is now, so that the
    /// next rerun needs only the stat.
    Rechecked,
    /// Complete and holding the input's hash, with no record (a run killed between renaming
    /// it and writing its line): a `packed` line.
    Unrecorded,
}

/// Why `--delete-input` kept an input whose archive is done: it is not a file of the
/// collection's own but a name for one (a symbolic link: deleting it would not free its
/// target, and deleting the target would break other links to it), or a pipe or device (its
/// data was read from it, there is nothing to delete). Not a failure: the archive is done and
/// recorded as such, and the manifest line says `"kept"` and why.
///
/// ```
/// use nc3pack::collection::Kept;
/// assert_eq!(Kept::SymbolicLink.to_string(), "a symbolic link: never deleted (nor its target)");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Kept {
    /// The input is a symbolic link.
    #[error("a symbolic link: never deleted (nor its target)")]
    SymbolicLink,
    /// The input is a pipe, a FIFO or a device.
    #[error("not a regular file: never deleted")]
    NotRegularFile,
}

/// Archives made durable and renamed into place together (one `syncfs` per group).
const COMMIT_GROUP: usize = 256;

/// What a worker decided to do with an input before packing it.
enum Decision {
    Finished(Outcome),
    Pack { force: bool, size: u64, mtime: i64 },
}

/// Whether the file at `path` looks like netCDF: it starts with `CDF` (netCDF-3 has version
/// byte 1, 2 or 5 next; others are packed to be reported) or with HDF5's signature (netCDF-4,
/// which is reported as not netCDF-3).
fn is_netcdf(path: &Path) -> std::io::Result<bool> {
    let mut f = std::fs::File::open(path)?;
    let mut magic = [0u8; 8];
    let mut got = 0;
    while got < 8 {
        match std::io::Read::read(&mut f, &mut magic[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got >= 4 && &magic[..3] == b"CDF" || got == 8 && magic == *b"\x89HDF\r\n\x1a\n")
}

/// The directory of the last file a worker looked at, kept open: the files of a batch come in
/// path order, so a worker's next file is mostly in the same directory, and a system call
/// relative to it (`fstatat`, `openat`) does not look up every directory of the path again
/// (a rerun makes a few such calls a file and little else).
#[derive(Default)]
struct OpenDir {
    /// The directory's path (as it was split from a file's path).
    path: Vec<u8>,
    fd: Option<std::fs::File>,
    /// The last file's name, with a NUL.
    name: Vec<u8>,
}

impl OpenDir {
    /// The open directory of `path` (the one kept, if it is the same) and `path`'s name; None
    /// when `path` has no plain name (no `/`, or a name that is `.` or `..`) or its directory
    /// cannot be opened (the caller then uses the whole path, and the error, if any, is that
    /// call's). The path is taken as bytes, split at its last `/`: no allocation when the
    /// directory is the one kept.
    fn at(&mut self, path: &[u8]) -> Option<(std::os::fd::RawFd, &std::ffi::CStr)> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        let slash = memchr::memrchr(b'/', path)?;
        let (dir, name) = (&path[..slash], &path[slash + 1..]);
        if name.is_empty() || name == b"." || name == b".." {
            return None;
        }
        let dir: &[u8] = if dir.is_empty() { b"/" } else { dir };
        if self.fd.is_none() || self.path != dir {
            self.fd = None;
            let fd = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
                .open(OsStr::from_bytes(dir))
                .ok()?;
            self.fd = Some(fd);
            self.path.clear();
            self.path.extend_from_slice(dir);
        }
        self.name.clear();
        self.name.extend_from_slice(name);
        self.name.push(0);
        let name = std::ffi::CStr::from_bytes_with_nul(&self.name).ok()?;
        Some((self.fd.as_ref()?.as_raw_fd(), name))
    }

    /// What `std::fs::metadata(path)` tells of it (symbolic links followed).
    fn stat(&mut self, path: &[u8]) -> std::io::Result<InputStat> {
        let Some((dir, name)) = self.at(path) else {
            let m = std::fs::metadata(OsStr::from_bytes(path))?;
            return Ok(InputStat {
                len: m.len(),
                mtime_ns: mtime_ns(&m),
                is_file: m.is_file(),
                id: FileId::of(&m),
            });
        };
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: `dir` is an open directory, `name` a NUL-terminated string, `st` as large
        // as the kernel writes.
        if unsafe { libc::fstatat(dir, name.as_ptr(), st.as_mut_ptr(), 0) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fstatat succeeded, so it filled `st`.
        let st = unsafe { st.assume_init() };
        // `time_t` and the nanoseconds are i64 on 64-bit Linux only.
        #[allow(clippy::unnecessary_cast)]
        let ns = |s, ns| {
            (s as i64)
                .saturating_mul(1_000_000_000)
                .saturating_add(ns as i64)
        };
        #[allow(clippy::unnecessary_cast)]
        Ok(InputStat {
            len: st.st_size as u64,
            mtime_ns: ns(st.st_mtime, st.st_mtime_nsec),
            is_file: st.st_mode & libc::S_IFMT == libc::S_IFREG,
            id: std::num::NonZeroU64::new(st.st_ino as u64).map(|ino| FileId {
                ino,
                ctime_ns: ns(st.st_ctime, st.st_ctime_nsec),
            }),
        })
    }

    /// Opens the archive at `path` to check its ends, without waiting (as
    /// [`check_recorded_ends`] does).
    fn open_archive(&mut self, path: &[u8]) -> std::result::Result<std::fs::File, EndsError> {
        use std::os::fd::FromRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        let Some((dir, name)) = self.at(path) else {
            return std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(OsStr::from_bytes(path))
                .map_err(|source| EndsError::Io { op: "open", source });
        };
        // Without updating its access time where the system allows (the archive's owner): a
        // rerun reading 100,000 archives written since their last read would otherwise make
        // as many inodes dirty, to be written back.
        let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC;
        // SAFETY (both calls): `dir` is an open directory, `name` a NUL-terminated string.
        let mut fd = unsafe { libc::openat(dir, name.as_ptr(), flags | libc::O_NOATIME) };
        if fd < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) {
            fd = unsafe { libc::openat(dir, name.as_ptr(), flags) };
        }
        if fd < 0 {
            return Err(EndsError::Io {
                op: "open",
                source: std::io::Error::last_os_error(),
            });
        }
        // SAFETY: `fd` was just opened, and nothing else owns it.
        Ok(unsafe { std::fs::File::from_raw_fd(fd) })
    }
}

/// A file's length, modification time, kind and identity, as a rerun needs them (of an input,
/// or of an archive).
struct InputStat {
    len: u64,
    mtime_ns: i64,
    is_file: bool,
    id: Option<FileId>,
}

/// Where a batch's archives are, as [`decide`] looks at them: files under OUT ([`Files`]), or
/// objects under an object-store prefix.
trait Archives: Sync {
    /// [`check_recorded_ends`] of input `i`'s archive (recorded `len` bytes long).
    fn recorded_ends(
        &self,
        plan: &BatchPlan,
        i: usize,
        len: u64,
        size: u64,
        hash: u128,
    ) -> std::result::Result<u128, crate::format::error::EndsError>;
    /// The length and identity of input `i`'s archive now, if a stat finds a regular file
    /// there: what a record's `output_id` is compared with. None for objects (no stat proves
    /// an object unchanged).
    fn id(&self, plan: &BatchPlan, i: usize) -> Option<(u64, FileId)> {
        let _ = (plan, i);
        None
    }
    /// Whether anything is at input `i`'s archive's name.
    fn exists(&self, plan: &BatchPlan, i: usize) -> Result<bool>;
    /// [`check_ends`] of input `i`'s existing archive, found with no record; None when it is
    /// not a regular file (the writer then refuses it).
    fn ends(
        &self,
        plan: &BatchPlan,
        i: usize,
        size: u64,
    ) -> Option<std::result::Result<(u64, u128), crate::format::error::EndsError>>;
    /// What input `i`'s existing archive records of a quantized original (`--quantize`);
    /// None when it holds a lossless file or cannot be opened.
    fn lossy_original(&self, plan: &BatchPlan, i: usize) -> Option<LossyArchive>;
}

/// An intact archive of a quantized file, as a rerun with no record of it needs it: what the
/// archive restores and the original the quantized file came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LossyArchive {
    /// The archive's length.
    pub(crate) output_size: u64,
    /// The length and xxh3-128 of the quantized file the archive restores (its lead's).
    pub(crate) restored: (u64, u128),
    /// The length and xxh3-128 of the original (the quantized file's
    /// `nc3pack_original_xxh3_128` attribute).
    pub(crate) original: (u64, u128),
}

impl LossyArchive {
    /// What `a` records, if it holds a quantized file that names its original.
    pub(crate) fn of<R: crate::io::ReadAt>(a: &crate::Archive<R>) -> Option<LossyArchive> {
        let (hash, len) = crate::quantize::Lossy::of(a.header())?.original?;
        Some(LossyArchive {
            output_size: a.len(),
            restored: (a.lead().file_len, a.original_hash()),
            original: (len, hash),
        })
    }
}

/// Archives as files under OUT, looked at by one worker (which keeps the directory of the
/// last one open, a buffer for the archive's path and one to read its ends into).
#[derive(Default)]
struct Files(Mutex<(OpenDir, Vec<u8>, Vec<u8>)>);

impl Archives for Files {
    fn recorded_ends(
        &self,
        plan: &BatchPlan,
        i: usize,
        len: u64,
        size: u64,
        hash: u128,
    ) -> std::result::Result<u128, crate::format::error::EndsError> {
        let Ok(mut held) = self.0.lock() else {
            return check_recorded_ends(&plan.output(i), len, size, Some(hash));
        };
        let (dir, output, buf) = &mut *held;
        plan.output_into(i, output);
        check_recorded_ends_of(|| dir.open_archive(output), len, size, Some(hash), buf)
    }

    fn id(&self, plan: &BatchPlan, i: usize) -> Option<(u64, FileId)> {
        let st = match self.0.lock() {
            Ok(mut held) => {
                let (dir, output, _) = &mut *held;
                plan.output_into(i, output);
                dir.stat(output)
            }
            Err(_) => OpenDir::default().stat(plan.output(i).as_os_str().as_bytes()),
        };
        st.ok()
            .filter(|st| st.is_file)
            .and_then(|st| Some((st.len, st.id?)))
    }

    fn exists(&self, plan: &BatchPlan, i: usize) -> Result<bool> {
        let output = plan.output(i);
        match std::fs::symlink_metadata(&output) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(io_err(&output, "stat")(e)),
        }
    }

    fn ends(
        &self,
        plan: &BatchPlan,
        i: usize,
        size: u64,
    ) -> Option<std::result::Result<(u64, u128), crate::format::error::EndsError>> {
        let output = plan.output(i);
        if !std::fs::metadata(&output).is_ok_and(|m| m.is_file()) {
            return None;
        }
        Some(check_ends(&output, size, None))
    }

    fn lossy_original(&self, plan: &BatchPlan, i: usize) -> Option<LossyArchive> {
        LossyArchive::of(&crate::Archive::open(plan.output(i)).ok()?)
    }
}

/// Decides what to do with input `i` (see the module docs, "Resuming"), its archive looked at
/// through `archives`.
fn decide(
    plan: &BatchPlan,
    archives: &dyn Archives,
    inputs: &mut OpenDir,
    i: usize,
    done: &Done,
    force: bool,
    t: Instant,
) -> Decision {
    let input = || plan.input(i);
    let meta = match inputs.stat(plan.path_bytes(i)) {
        Ok(m) => m,
        Err(e) => return gone(plan, archives, i, done, e, t),
    };
    let (size, mtime) = (meta.len, meta.mtime_ns);
    let failed = |error| {
        Decision::Finished(Outcome::Failed {
            error,
            input: Some((size, mtime)),
        })
    };
    // A file found in a directory is packed only if it looks like netCDF (others are ignored).
    let not_netcdf = || match found_not_netcdf(plan, i, meta.is_file) {
        Ok(false) => None,
        Ok(true) => Some(Decision::Finished(Outcome::NotNetcdf)),
        Err(e) => Some(failed(e)),
    };
    let foreign = || foreign_output(plan, i).map(failed);
    if force {
        return not_netcdf()
            .or_else(foreign)
            .unwrap_or(Decision::Pack { force, size, mtime });
    }
    let record = done.get(plan.name(i));
    // The common case of a rerun first, with the fewest system calls: a stat of the input
    // (above) and one of its archive. The input is not read: the same size and mtime are
    // trusted to be the same contents.
    if let Some(r) = record.filter(|r| r.size == size && r.mtime_ns == mtime) {
        if let Some(step) = as_recorded(plan, archives, i, r, t) {
            return step;
        }
    }
    let exists = match archives.exists(plan, i) {
        Ok(exists) => exists,
        Err(e) => return failed(e),
    };
    if let Some(step) = exists.then(foreign).flatten() {
        return step;
    }
    if exists && record.is_some_and(|r| r.size == size && r.mtime_ns == mtime) {
        // Recorded as this input's archive, and damaged: pack it again.
        return Decision::Pack {
            force: true,
            size,
            mtime,
        };
    }
    if let Some(step) = not_netcdf() {
        return step;
    }
    if !exists {
        return Decision::Pack {
            force: false,
            size,
            mtime,
        };
    }
    if let Some(r) = record {
        return failed(Error::Refused {
            path: input(),
            what: Refusal::ChangedSincePacked {
                recorded_size: r.size,
                recorded_mtime_ns: r.mtime_ns,
                size,
                mtime_ns: mtime,
            },
        });
    }
    unrecorded(plan, archives, i, (size, mtime), t)
}

/// Skipped, if input `i`'s archive is the one record `r` holds: a stat finds it the same file
/// (inode and change time) of the recorded length, and nothing is read; or, when the stat
/// cannot tell (no identity recorded, or another), its ends are intact and record `r`'s
/// size and hash (then the record takes the identity the stat found, to be written).
fn as_recorded(
    plan: &BatchPlan,
    archives: &dyn Archives,
    i: usize,
    r: &Record,
    t: Instant,
) -> Option<Decision> {
    // The stat before the read: a file changed between the two has a newer change time than
    // the one recorded, and is checked again by the next run.
    let now = archives.id(plan, i);
    if now.is_some() && now == r.output_id.map(|id| (r.output_size, id)) {
        return Some(skipped(*r, Found::AsRecorded, t, None));
    }
    archives
        .recorded_ends(plan, i, r.output_size, r.restored_len(), r.hash)
        .ok()?;
    let id = now.filter(|n| n.0 == r.output_size).map(|n| n.1);
    let found = if id.is_some() && id != r.output_id {
        Found::Rechecked
    } else {
        Found::AsRecorded
    };
    let record = Record {
        output_id: id,
        ..*r
    };
    Some(skipped(record, found, t, None))
}

/// Input `i`, with its size and modification time `(size, mtime)`, has an archive and no
/// record: a run killed between renaming the archive and writing its line. Done if the
/// archive is complete and holds this input's hash (or is a quantized file's whose original
/// is this input); else a failure (the archive is not replaced).
fn unrecorded(
    plan: &BatchPlan,
    archives: &dyn Archives,
    i: usize,
    (size, mtime): (u64, i64),
    t: Instant,
) -> Decision {
    let failed = |error| {
        Decision::Finished(Outcome::Failed {
            error,
            input: Some((size, mtime)),
        })
    };
    // No record: a run killed between renaming the archive and writing its line, if the
    // archive is complete and holds this input's hash. (Its identity first: see `as_recorded`.)
    let now = archives.id(plan, i);
    let id_of = |len: u64| now.filter(|n| n.0 == len).map(|n| n.1);
    let Some(ends) = archives.ends(plan, i, size) else {
        // Not a regular file (a directory, a FIFO, a dangling link): the writer refuses it.
        return Decision::Pack {
            force: false,
            size,
            mtime,
        };
    };
    let input = plan.input(i);
    let mut input_hash = None;
    if let Ok((output_size, hash)) = ends {
        match hash_file(&input) {
            Ok(h) if h == hash => {
                let record = Record {
                    size,
                    mtime_ns: mtime,
                    hash,
                    output_size,
                    restored_size: None,
                    output_id: id_of(output_size),
                };
                return skipped(record, Found::Unrecorded, t, None);
            }
            Ok(h) => input_hash = Some(h),
            Err(e) => return failed(e),
        }
    }
    // Or a quantized file's archive (`--quantize`), which holds this input's hash as its
    // original's.
    if let Some(lossy) = archives
        .lossy_original(plan, i)
        .filter(|l| l.original.0 == size)
    {
        let h = match input_hash {
            Some(h) => h,
            None => match hash_file(&input) {
                Ok(h) => h,
                Err(e) => return failed(e),
            },
        };
        if h == lossy.original.1 {
            let record = Record {
                size,
                mtime_ns: mtime,
                hash: lossy.restored.1,
                output_size: lossy.output_size,
                restored_size: std::num::NonZeroU64::new(lossy.restored.0),
                output_id: id_of(lossy.output_size),
            };
            return skipped(record, Found::Unrecorded, t, Some(h));
        }
    }
    failed(Error::Refused {
        path: plan.output(i),
        what: Refusal::NotRecorded,
    })
}

/// Input `i` could not be looked at (`e`): done if it is gone (deleted by `--delete-input`
/// once packed) with its archive recorded and in place, else a failure.
fn gone(
    plan: &BatchPlan,
    archives: &dyn Archives,
    i: usize,
    done: &Done,
    e: std::io::Error,
    t: Instant,
) -> Decision {
    let r = done.get(plan.name(i));
    if let Some(r) = r.filter(|_| e.kind() == std::io::ErrorKind::NotFound) {
        if let Some(step) = as_recorded(plan, archives, i, r, t) {
            return step;
        }
    }
    Decision::Finished(Outcome::Failed {
        error: io_err(&plan.input(i), "stat")(e),
        input: None,
    })
}

/// A skipped input's decision: found done as `record` says, the way `found` says.
fn skipped(record: Record, found: Found, t: Instant, input_hash: Option<u128>) -> Decision {
    Decision::Finished(Outcome::Skipped {
        record,
        found,
        seconds: t.elapsed().as_secs_f64(),
        deleted: false,
        kept: None,
        input_hash,
    })
}

/// Whether input `i`, found in a directory (not given) and a regular file (`is_file`), is
/// not netCDF (then it is ignored).
///
/// # Errors
///
/// [`Error::Io`] when its first bytes cannot be read.
fn found_not_netcdf(plan: &BatchPlan, i: usize, is_file: bool) -> Result<bool> {
    if plan.given(i) || !is_file {
        return Ok(false);
    }
    let input = plan.input(i);
    is_netcdf(&input)
        .map(|netcdf| !netcdf)
        .map_err(io_err(&input, "read"))
}

/// An existing output of input `i` that is not an archive (a netCDF file of this batch named
/// like `x.nc.nc3z`, any other file), which is never replaced, with or without `--force`:
/// the refusal. Only a regular file is looked at (opening a FIFO would wait for a writer);
/// special files are refused later whatever they hold, and a symbolic link is replaced itself.
fn foreign_output(plan: &BatchPlan, i: usize) -> Option<Error> {
    use std::os::unix::fs::OpenOptionsExt;
    let output = plan.output(i);
    if !std::fs::symlink_metadata(&output).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&output)
        .ok()?;
    let is_file = f.metadata().is_ok_and(|m| m.is_file());
    (is_file && !crate::is_archive(&f)).then_some(Error::Refused {
        path: output,
        what: Refusal::NotAnArchive,
    })
}

/// One packed file waiting for its group's commit.
struct Packed {
    i: usize,
    pending: Pending,
    summary: PackSummary,
    mtime: i64,
    seconds: f64,
}

/// Packs every input of `plan` on `opts.threads` worker threads (bounded by
/// [`crate::parallel::bound_threads`]; each file with one encoder thread), creating output
/// directories as needed, skipping what `done` records as packed (unless `opts.force`; see the
/// module docs). `on_done` is called with each input's index and outcome as it becomes final
/// (a packed file's once its archive is synced and renamed into place), from any thread, in
/// no particular order (`opts.progress` is not called).
///
/// # Errors
///
/// [`Error::Io`] when OUT cannot be created; [`Error::Thread`] when a worker thread cannot be
/// started; [`Error::Option`] for `delete_input` with quantization (`opts.quantize`), which
/// makes archives that do not restore their inputs; then no input was started.
///
/// Durability is batched: archives are written to temporary files unsynced, and every
/// `COMMIT_GROUP` (256) files one `syncfs` flushes them all before they are renamed into place,
/// and one more after, so an output never appears before its data is on disk, without one
/// `fsync` per small file. Groups are synced and renamed by a committer thread while the
/// workers go on packing.
pub fn pack_all(
    plan: &BatchPlan,
    opts: &PackOptions,
    done_before: &Done,
    delete_input: Option<&RecordFn<'_>>,
    on_done: &(dyn Fn(usize, Outcome) + Sync),
) -> Result<()> {
    if delete_input.is_some() && !opts.quantize.is_empty() {
        return Err(crate::error::OptionError::DeleteInputLossy.into());
    }
    // With `delete_input`, a packed or skipped input is deleted once its archive is proven
    // and recorded (a commit group's archives are verified in parallel, recorded together).
    let finish = |i: usize, o: Outcome| match delete_input {
        Some(record) => delete_group(plan, vec![(i, o)], 1, record, on_done),
        None => on_done(i, o),
    };
    let finish = &finish;
    let (threads, force) = (opts.threads(), opts.force);
    let per_file = PackOptions {
        threads: Some(1),
        progress: crate::Progress::default(),
        ..opts.clone()
    };
    let out = plan.out();
    // Threads verifying a group's archives before deleting their inputs.
    let verifiers = crate::parallel::bound_threads(threads);
    // OUT, resolved: made once every worker has started.
    let out_real = std::sync::OnceLock::new();
    let next = AtomicUsize::new(0);
    // A rerun's look at an input and its archive waits on the disk (their inodes, the
    // archive's ends), not on a core: more workers than packing threads look, and at most
    // `threads` of them pack at once. (Not while deleting inputs: a skipped input's archive
    // is then verified, on the worker's core.)
    let packers = crate::parallel::bound_threads(threads);
    let checkers = if delete_input.is_some() {
        packers
    } else {
        packers.max(CHECKERS)
    };
    let workers = checkers.min(plan.len().max(1));
    let permits = Permits(Mutex::new(packers), Condvar::new());
    let pending: Mutex<Vec<Packed>> = Mutex::new(Vec::new());
    let commit = |group: Vec<Packed>| commit(plan, group, delete_input, verifiers, on_done);
    let commit = &commit;
    // Workers start packing once all have started, or stop if one cannot be started: a batch
    // runs completely or not at all.
    let go = Gate::default();
    let (set_go, wait_go) = (|v| go.set(v), || go.wait());
    let first = || {
        if plan.is_empty() {
            PathBuf::from("(batch)")
        } else {
            plan.input(0)
        }
    };
    std::thread::scope(|s| {
        // One group waiting while one is committed; a worker with a third waits.
        let (group_tx, group_rx) = sync_channel::<Vec<Packed>>(1);
        spawn_scoped(s, "batch committer", move || {
            group_rx.into_iter().for_each(commit)
        })
        .map_err(|e| spawn_err(&first())(e))?;
        for _ in 0..workers {
            let group_tx = group_tx.clone();
            let (next, pending, per_file, wait_go) = (&next, &pending, &per_file, &wait_go);
            let permits = &permits;
            let out_real: &std::sync::OnceLock<PathBuf> = &out_real;
            let started = spawn_scoped(s, "batch worker", move || {
                if !wait_go() {
                    return;
                }
                // The output directory this worker last made (or found) and checked: inputs
                // come in path order, so most share it.
                let mut made: Option<PathBuf> = None;
                // The directories of the last input and archive looked at, kept open.
                let (mut inputs, files) = (OpenDir::default(), Files::default());
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= plan.len() {
                        return;
                    }
                    let t = Instant::now();
                    let step = decide(plan, &files, &mut inputs, i, done_before, force, t);
                    let (force, size, mtime) = match step {
                        Decision::Finished(o) => {
                            finish(i, o);
                            continue;
                        }
                        Decision::Pack { force, size, mtime } => (force, size, mtime),
                    };
                    let _packing = permits.take();
                    let output = plan.output(i);
                    let r = match output.parent() {
                        Some(d) if made.as_deref() != Some(d) => make_dir_inside(d, out_real.get())
                            .map(|()| made = Some(d.to_path_buf())),
                        _ => Ok(()),
                    }
                    .and_then(|()| {
                        pack_to_temp(&plan.input(i), &output, per_file, force, false, &|_| {})
                    });
                    match r {
                        Ok((p, summary)) => {
                            let group = pending.lock().ok().and_then(|mut g| {
                                g.push(Packed {
                                    i,
                                    pending: p,
                                    summary,
                                    mtime,
                                    seconds: t.elapsed().as_secs_f64(),
                                });
                                (g.len() >= COMMIT_GROUP).then(|| std::mem::take(&mut *g))
                            });
                            if let Some(group) = group {
                                // Without a committer (it panicked), commit here.
                                if let Err(SendError(group)) = group_tx.send(group) {
                                    commit(group);
                                }
                            }
                        }
                        Err(error) => finish(
                            i,
                            Outcome::Failed {
                                error,
                                input: Some((size, mtime)),
                            },
                        ),
                    }
                }
            });
            if let Err(e) = started {
                set_go(false);
                return Err(spawn_err(&first())(e));
            }
        }
        let made = std::fs::create_dir_all(out)
            .map_err(io_err(out, "create directory"))
            .and_then(|()| std::fs::canonicalize(out).map_err(io_err(out, "resolve")))
            .map(|real| out_real.set(real));
        if let Err(e) = made {
            set_go(false);
            return Err(e);
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
    Ok(())
}

/// How many workers of a batch at least look at inputs (each packing only with one of the
/// batch's `threads` permits): on a cold cache a rerun waits for the disk, one read at a time
/// a worker. A rerun of 500,000 files (of 10^6) with `-j 1` after dropping the caches: 25.5 s
/// with one worker, 14.9 s with 4, 15.1 s with 8 (then the kernel's work is what is left).
const CHECKERS: usize = 4;

/// Permits to pack: as many as the batch's threads.
struct Permits(Mutex<usize>, Condvar);

/// A permit taken: given back when dropped.
struct Permit<'a>(&'a Permits);

impl Permits {
    /// Waits for a permit.
    fn take(&self) -> Permit<'_> {
        let mut free = self.0.lock().unwrap_or_else(|p| p.into_inner());
        while *free == 0 {
            free = self.1.wait(free).unwrap_or_else(|p| p.into_inner());
        }
        *free -= 1;
        Permit(self)
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        *self.0 .0.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        self.0 .1.notify_one();
    }
}

/// Whether the workers of a batch may go: `None` until said, then go (`Some(true)`) or stop.
#[derive(Default)]
struct Gate(Mutex<Option<bool>>, Condvar);

impl Gate {
    /// Says go (`true`) or stop, to every waiting worker.
    fn set(&self, v: bool) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(v);
        self.1.notify_all();
    }

    /// Waits until go or stop is said; whether it is go.
    fn wait(&self) -> bool {
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            match *g {
                Some(v) => return v,
                None => g = self.1.wait(g).unwrap_or_else(|p| p.into_inner()),
            }
        }
    }
}

/// Syncs the filesystems of a group's outputs, renames them into place, and syncs again so
/// that the names are durable too. Every file of the group was written and closed before
/// the group was formed, so the first sync covers its data.
fn commit(
    plan: &BatchPlan,
    group: Vec<Packed>,
    delete_input: Option<&RecordFn<'_>>,
    verifiers: usize,
    on_done: &(dyn Fn(usize, Outcome) + Sync),
) {
    if group.is_empty() {
        return;
    }
    let dirs: std::collections::BTreeSet<PathBuf> = group
        .iter()
        .filter_map(|p| plan.output(p.i).parent().map(Path::to_path_buf))
        .collect();
    let synced = sync_filesystems(dirs.iter().map(PathBuf::as_path));
    let mut renamed = Vec::with_capacity(group.len());
    for p in group {
        let r = match &synced {
            Ok(()) => p.pending.rename(),
            Err(e) => Err(Error::Internal(format!("sync before rename failed: {e}"))),
        };
        renamed.push((p.i, p.summary, p.mtime, p.seconds, r));
    }
    let synced = sync_filesystems(dirs.iter().map(PathBuf::as_path));
    let mut outcomes = Vec::with_capacity(renamed.len());
    let mut archives = OpenDir::default();
    for (i, summary, mtime, seconds, r) in renamed {
        let r = r.and_then(|()| {
            synced.as_ref().map_err(|e| {
                Error::Internal(format!(
                    "renamed into place, but the sync after the renames failed: {e}"
                ))
            })
        });
        outcomes.push((
            i,
            match r {
                Ok(_) => Outcome::Packed {
                    // Which file the archive is, now that it is in place (renaming it set its
                    // change time): what a rerun's stat compares.
                    output_id: archives
                        .stat(plan.output(i).as_os_str().as_bytes())
                        .ok()
                        .filter(|st| st.is_file && st.len == summary.output_len)
                        .and_then(|st| st.id),
                    summary,
                    mtime_ns: mtime,
                    seconds,
                    deleted: false,
                    kept: None,
                },
                Err(error) => Outcome::Failed {
                    error,
                    input: Some((summary.input_len, mtime)),
                },
            },
        ));
    }
    match delete_input {
        Some(record) => delete_group(plan, outcomes, verifiers, record, on_done),
        None => outcomes.into_iter().for_each(|(i, o)| on_done(i, o)),
    }
}

/// Makes directory `d` (and its parents) and checks that it resolves inside `out_real` (OUT,
/// resolved): a symbolic link inside OUT must not lead the archives elsewhere.
fn make_dir_inside(d: &Path, out_real: Option<&PathBuf>) -> Result<()> {
    let Some(out_real) = out_real else {
        return Err(Error::Internal("output directory not made".into()));
    };
    std::fs::create_dir_all(d).map_err(io_err(d, "create directory"))?;
    let real = std::fs::canonicalize(d).map_err(io_err(d, "resolve"))?;
    if !real.starts_with(out_real) {
        return Err(Error::Refused {
            path: d.to_path_buf(),
            what: Refusal::OutsideOutput {
                real,
                out: out_real.to_path_buf(),
            },
        });
    }
    Ok(())
}

/// Syncs each filesystem holding one of `dirs` once (`syncfs`).
fn sync_filesystems<'a>(dirs: impl Iterator<Item = &'a Path>) -> Result<()> {
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
        if seen.insert(std::os::unix::fs::MetadataExt::dev(&meta)) {
            crate::atomic::sync_filesystem(d)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
