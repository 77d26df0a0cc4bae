//! A directory of archives mounted read-only, through FUSE, as the directory of their originals
//! (`nc3pack mount`; the `mount` feature, Linux only): every `NAME.nc3z` below the directory
//! appears as `NAME` with the original's size and the archive's modification time, and a read
//! of it is served by an [`OriginalReader`] of the archive, decoding only the blocks that
//! cover the bytes asked for. Subdirectories appear as they are; every other file is hidden
//! (the mount shows what the archives restore and nothing else, and an original left beside
//! its archive, `x.nc` beside `x.nc.nc3z`, would otherwise show twice under one name).
//!
//! - Looking a file up (`ls -l`) opens its archive's lead, header and index, never a data
//!   block; the size is then kept with the file's inode.
//! - Each state of an archive (its device, inode, modification time and size) is an inode of
//!   its own: a replaced archive is a new file, whose first open reads the new archive, and
//!   whose page cache starts empty; a file opened before keeps reading the archive it opened.
//!   An open of a name whose archive changed since the kernel looked it up answers `ESTALE`,
//!   on which the kernel looks the name up again. So the kernel's page cache is kept across
//!   opens (`FOPEN_KEEP_CACHE`), and never serves bytes of two archives as one file.
//! - Archives are opened on demand and kept open in a bounded set (least recently used out),
//!   whose block caches together stay within one budget ([`MountOptions::with_cache_bytes`]).
//! - Requests are served by several threads; readahead is raised to 4 MiB so that a
//!   sequential read comes in requests of 1 MiB, several in flight. No `direct_io`:
//!   memory-mapped reads work.
//! - Writes answer `EROFS` (the mount is read-only). A read that touches a damaged block
//!   answers `EIO` and writes one line naming the file and the block on stderr; the rest of
//!   the file, and every other file, stays readable.

use crate::error::{Error, Result};
use crate::read::originals::{Ident, Originals};
use crate::OriginalReader;
use fuser::{
    Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    KernelConfig, LockOwner, MountOption, OpenAccMode, OpenFlags, ReplyAttr, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request, WriteFlags,
};
use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The suffix of the archives the mount shows.
const SUFFIX: &str = ".nc3z";

/// How long the kernel may keep a name's or a file's attributes before asking again: how soon
/// a replaced or new archive is seen.
const TTL: Duration = Duration::from_secs(1);

/// The block size `stat` reports (what `cat` and stdio read at a time), and the largest
/// request the kernel sends (its limit for FUSE, 256 pages, by default).
const READ_SIZE: u32 = 1 << 20;

/// The readahead asked of the kernel: a sequential read keeps this many bytes requested
/// ahead of the reader, in requests of [`READ_SIZE`] that the mount's threads serve at once.
const READAHEAD: u32 = 4 << 20;

/// Most distinct lines about damaged blocks written to stderr (one per file and block).
const MAX_LOGGED: usize = 10_000;

/// How a directory of archives is mounted ([`mount`]).
///
/// ```
/// let o = nc3pack::mount::MountOptions::default().with_threads(4).with_cache_bytes(1 << 30);
/// assert_eq!(o.threads(), 4);
/// ```
#[derive(Debug, Clone)]
pub struct MountOptions {
    threads: usize,
    cache_bytes: u64,
    max_open: usize,
    allow_other: bool,
    stats: bool,
}

impl Default for MountOptions {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        MountOptions {
            threads: cores.clamp(2, 16),
            cache_bytes: 512 << 20,
            max_open: 256,
            allow_other: false,
            stats: false,
        }
    }
}

impl MountOptions {
    /// Threads serving the kernel's requests (at least 1; default: the cores, 2 to 16).
    ///
    /// ```
    /// assert_eq!(nc3pack::mount::MountOptions::default().with_threads(0).threads(), 1);
    /// ```
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// The threads serving requests.
    ///
    /// ```
    /// assert!(nc3pack::mount::MountOptions::default().threads() >= 2);
    /// ```
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The budget of decoded blocks that the open archives' caches share (default 512 MiB).
    /// Each archive gets at least twice a block of each of its streams (what a sequential
    /// read of interleaved records needs), so one archive may go over a small budget.
    ///
    /// ```
    /// let o = nc3pack::mount::MountOptions::default().with_cache_bytes(64 << 20);
    /// assert_eq!(o.cache_bytes(), 64 << 20);
    /// ```
    pub fn with_cache_bytes(mut self, bytes: u64) -> Self {
        self.cache_bytes = bytes;
        self
    }

    /// The shared budget of decoded blocks.
    ///
    /// ```
    /// assert_eq!(nc3pack::mount::MountOptions::default().cache_bytes(), 512 << 20);
    /// ```
    pub fn cache_bytes(&self) -> u64 {
        self.cache_bytes
    }

    /// Most archives kept open at once (default 256; at least 1).
    ///
    /// ```
    /// let o = nc3pack::mount::MountOptions::default().with_max_open(8);
    /// ```
    pub fn with_max_open(mut self, n: usize) -> Self {
        self.max_open = n.max(1);
        self
    }

    /// Lets other users than the one mounting read the mount (FUSE's `allow_other`; a
    /// non-root user needs `user_allow_other` in /etc/fuse.conf).
    ///
    /// ```
    /// let o = nc3pack::mount::MountOptions::default().with_allow_other(true);
    /// ```
    pub fn with_allow_other(mut self, on: bool) -> Self {
        self.allow_other = on;
        self
    }

    /// Writes, when the mount ends, one line on stderr with the read requests served, their
    /// mean size and the blocks decoded.
    ///
    /// ```
    /// let o = nc3pack::mount::MountOptions::default().with_stats(true);
    /// ```
    pub fn with_stats(mut self, on: bool) -> Self {
        self.stats = on;
        self
    }
}

/// What a mount has served so far ([`Mounted::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MountStats {
    /// Read requests answered with data.
    pub reads: u64,
    /// Bytes those requests returned.
    pub bytes: u64,
    /// Read requests answered with `EIO`.
    pub errors: u64,
    /// Blocks decoded by the archives opened.
    pub blocks_decoded: u64,
    /// Archives opened (again after leaving the set of open archives, or replaced, counted
    /// again).
    pub archives_opened: u64,
    /// Inodes held now: the files and directories the kernel holds (looked up and not
    /// forgotten) or an open listing shows, and the root.
    pub inodes: u64,
}

/// A mounted directory of archives ([`mount`]); dropping it unmounts.
pub struct Mounted {
    session: Option<fuser::BackgroundSession>,
    mountpoint: PathBuf,
    shared: Arc<MountState>,
    stats: bool,
}

/// Mounts the directory `archives` at `mountpoint` (an existing directory), read-only, as the
/// directory of the archives' originals, served by threads of this process until the
/// returned [`Mounted`] is dropped, unmounted ([`Mounted::unmount`]) or waited on
/// ([`Mounted::wait`]).
///
/// ```no_run
/// let m = nc3pack::mount::mount(
///     "/data/archives".as_ref(),
///     "/mnt/originals".as_ref(),
///     &nc3pack::mount::MountOptions::default(),
/// )?;
/// let sst = std::fs::read("/mnt/originals/sst.nc")?; // /data/archives/sst.nc.nc3z, restored
/// m.unmount()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`Error::Io`] when `archives` or `mountpoint` is not a directory that can be read, or the
/// mount fails (no `/dev/fuse`, no permission: a non-root user needs `fusermount3`, from
/// Debian's `fuse3`).
pub fn mount(archives: &Path, mountpoint: &Path, opts: &MountOptions) -> Result<Mounted> {
    let io = |path: &Path, op: &'static str| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, op, source }
    };
    let root = archives.canonicalize().map_err(io(archives, "open"))?;
    let not_dir = |p: &Path| Error::Io {
        path: p.to_path_buf(),
        op: "mount",
        source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
    };
    if !root.is_dir() {
        return Err(not_dir(archives));
    }
    let md = std::fs::metadata(mountpoint).map_err(io(mountpoint, "mount"))?;
    if !md.is_dir() {
        return Err(not_dir(mountpoint));
    }
    // Mounted over the archives (or a directory above them), the mount would read its
    // archives through itself and wait on itself for ever, deaf to signals.
    let over = mountpoint.canonicalize().map_err(io(mountpoint, "mount"))?;
    if root.starts_with(&over) {
        return Err(Error::Io {
            path: mountpoint.to_path_buf(),
            op: "mount",
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "is {} or a directory above it: the mount would hide the archives it reads \
                     (mount on a directory elsewhere)",
                    root.display()
                ),
            ),
        });
    }
    let shared = Arc::new(MountState::new(root, opts));
    let fs = MountFs {
        shared: Arc::clone(&shared),
    };
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::RO,
        MountOption::FSName("nc3pack".into()),
        MountOption::Subtype("nc3pack".into()),
        MountOption::NoDev,
        MountOption::NoSuid,
        MountOption::DefaultPermissions,
    ];
    if opts.allow_other {
        config.acl = fuser::SessionACL::All;
    }
    config.n_threads = Some(opts.threads);
    config.clone_fd = true;
    let session = fuser::Session::new(fs, mountpoint, &config).map_err(io(mountpoint, "mount"))?;
    let session = session.spawn().map_err(io(mountpoint, "mount"))?;
    raise_readahead(mountpoint);
    Ok(Mounted {
        session: Some(session),
        mountpoint: mountpoint.to_path_buf(),
        shared,
        stats: opts.stats,
    })
}

impl std::fmt::Debug for Mounted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mounted")
            .field("root", &self.shared.root)
            .field("mountpoint", &self.mountpoint)
            .finish_non_exhaustive()
    }
}

impl Mounted {
    /// The mount point.
    ///
    /// ```no_run
    /// # let opts = nc3pack::mount::MountOptions::default();
    /// let m = nc3pack::mount::mount("/data".as_ref(), "/mnt".as_ref(), &opts)?;
    /// assert_eq!(m.mountpoint(), std::path::Path::new("/mnt"));
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// What the mount has served so far.
    ///
    /// ```no_run
    /// # let opts = nc3pack::mount::MountOptions::default();
    /// let m = nc3pack::mount::mount("/data".as_ref(), "/mnt".as_ref(), &opts)?;
    /// println!("{} reads", m.stats().reads);
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    pub fn stats(&self) -> MountStats {
        self.shared.stats()
    }

    /// Unmounts and waits for the threads serving the mount to end. A mount point in use (a
    /// process has a file open there, or it is its working directory) is detached lazily:
    /// it leaves the directory tree at once and ends when the last file is closed.
    ///
    /// ```no_run
    /// # let opts = nc3pack::mount::MountOptions::default();
    /// let m = nc3pack::mount::mount("/data".as_ref(), "/mnt".as_ref(), &opts)?;
    /// m.unmount()?;
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when neither the unmount nor the lazy detach works.
    pub fn unmount(mut self) -> Result<()> {
        self.end()
    }

    /// Serves the mount until it is unmounted from outside (`fusermount3 -u MOUNTPOINT`,
    /// `umount`), or until SIGINT, SIGTERM or SIGHUP when the program installed
    /// [`crate::cleanup::install_signal_handlers`] (as the command line does): then it
    /// unmounts ([`Mounted::unmount`]) and the process ends by that signal.
    ///
    /// ```no_run
    /// nc3pack::cleanup::install_signal_handlers()?;
    /// # let opts = nc3pack::mount::MountOptions::default();
    /// let m = nc3pack::mount::mount("/data".as_ref(), "/mnt".as_ref(), &opts)?;
    /// m.wait()?; // Ctrl-C unmounts
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Mounted::unmount`]; [`Error::Io`] when the threads serving the mount failed.
    pub fn wait(mut self) -> Result<()> {
        // While it is held, the signals are recorded instead of ending the process at once
        // (for at most 10 s, cleanup::ABORT_GRACE_SECS); dropping it with one recorded ends
        // the process by it.
        let abortable = crate::cleanup::Abortable::new();
        loop {
            if crate::cleanup::pending_signal().is_some() {
                let ended = self.end();
                if let Err(e) = ended {
                    eprintln!("nc3pack: {e}");
                }
                drop(abortable);
                return Ok(());
            }
            if self.session.as_ref().is_none_or(|s| s.guard.is_finished()) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        drop(abortable);
        self.end()
    }

    fn end(&mut self) -> Result<()> {
        let Some(session) = self.session.take() else {
            return Ok(());
        };
        let result = if session.guard.is_finished() {
            session.join()
        } else {
            match session.umount_and_join() {
                Ok(()) => Ok(()),
                Err(_) => lazy_unmount(&self.mountpoint),
            }
        };
        if self.stats {
            let s = self.shared.stats();
            let mean = s.bytes.checked_div(s.reads).unwrap_or(0);
            eprintln!(
                "nc3pack mount: {} read requests, mean {} KiB, {} failed; {} archives opened, {} blocks decoded",
                s.reads,
                mean >> 10,
                s.errors,
                s.archives_opened,
                s.blocks_decoded
            );
        }
        result.map_err(|source| Error::Io {
            path: self.mountpoint.clone(),
            op: "unmount",
            source,
        })
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if let Err(e) = self.end() {
            eprintln!("nc3pack: {e}");
        }
    }
}

/// Raises the mount's readahead to [`READAHEAD`]: the kernel offers FUSE its default of
/// 128 KiB at the start, and reads ahead no further whatever the filesystem answers; its
/// sysfs file can be written by root only (for other users the mount keeps 128 KiB).
fn raise_readahead(mountpoint: &Path) {
    let Ok(md) = std::fs::metadata(mountpoint) else {
        return;
    };
    let dev = md.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let file = format!("/sys/class/bdi/{major}:{minor}/read_ahead_kb");
    let _ = std::fs::write(file, format!("{}\n", READAHEAD >> 10));
}

/// Detaches a busy mount point (`umount2(MNT_DETACH)` as root, else `fusermount3 -u -z`).
fn lazy_unmount(mountpoint: &Path) -> std::io::Result<()> {
    let c = std::ffi::CString::new(mountpoint.as_os_str().as_bytes())?;
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } == 0 {
        return Ok(());
    }
    let out = std::process::Command::new("fusermount3")
        .args(["-u", "-z", "--"])
        .arg(mountpoint)
        .output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "fusermount3 -u -z: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// An inode of the mount.
#[derive(Debug)]
enum Node {
    Dir {
        path: PathBuf,
    },
    File {
        /// The archive.
        path: PathBuf,
        ident: Ident,
        /// The original's length.
        len: u64,
        mode: u32,
        uid: u32,
        gid: u32,
        mtime: SystemTime,
    },
}

/// A directory's entries: inode number, type, name.
type Listing = Vec<(u64, FileType, OsString)>;

/// The identity of an inode: a directory's path, or an archive's path and state.
type Key = (PathBuf, Option<Ident>);

/// A [`Key`] as the inodes keep it: once for both their maps.
type SharedKey = Arc<Key>;

/// The inodes handed to the kernel: a directory per path, a file per archive path and state.
/// A directory listing gives each entry its number before any lookup makes its node, so that
/// `readdir`'s `d_ino` is the `st_ino` a later `stat` gives. An inode lives while the kernel
/// holds it (from the lookups that gave it until the kernel forgets them) or an open
/// listing shows it: a mount over many archives holds only those in use, not every name
/// ever listed.
#[derive(Default)]
struct Inodes {
    entries: HashMap<u64, Inode>,
    by_key: HashMap<SharedKey, u64>,
    next: u64,
}

/// An inode's identity, its node (once looked up), and what holds it.
struct Inode {
    key: SharedKey,
    node: Option<Arc<Node>>,
    /// Lookups the kernel has not forgotten.
    lookups: u64,
    /// Open listings that show it.
    listings: u64,
}

impl Inodes {
    /// `key`'s inode and its number, made now if it had none.
    fn entry(&mut self, key: Key) -> (u64, &mut Inode) {
        let (shared, ino) = match self.by_key.get_key_value(&key) {
            Some((shared, &ino)) => (Arc::clone(shared), ino),
            None => {
                let ino = self.next;
                self.next += 1;
                let shared = Arc::new(key);
                self.by_key.insert(Arc::clone(&shared), ino);
                (shared, ino)
            }
        };
        let e = self.entries.entry(ino).or_insert_with(|| Inode {
            key: shared,
            node: None,
            lookups: 0,
            listings: 0,
        });
        (ino, e)
    }

    /// The number of `key`'s inode, held by an open listing until [`Inodes::unlist`].
    fn list(&mut self, key: Key) -> u64 {
        let (ino, e) = self.entry(key);
        e.listings += 1;
        ino
    }

    /// A lookup of `key`: its inode's number and node (made by `node` if it had none), held
    /// until the kernel forgets the lookup ([`Inodes::forget`]).
    fn look_up(&mut self, key: Key, node: impl FnOnce() -> Node) -> (u64, Arc<Node>) {
        let (ino, e) = self.entry(key);
        e.lookups += 1;
        let node = e.node.get_or_insert_with(|| Arc::new(node()));
        (ino, Arc::clone(node))
    }

    /// The node of inode `ino`, if it was looked up and is held.
    fn node(&self, ino: u64) -> Option<Arc<Node>> {
        self.entries.get(&ino).and_then(|e| e.node.clone())
    }

    /// The kernel forgets `n` lookups of `ino`.
    fn forget(&mut self, ino: u64, n: u64) {
        if let Some(e) = self.entries.get_mut(&ino) {
            e.lookups = e.lookups.saturating_sub(n);
            self.drop_unused(ino);
        }
    }

    /// A listing that showed the inodes `inos` is closed.
    fn unlist(&mut self, inos: impl IntoIterator<Item = u64>) {
        for ino in inos {
            if let Some(e) = self.entries.get_mut(&ino) {
                e.listings = e.listings.saturating_sub(1);
                self.drop_unused(ino);
            }
        }
    }

    /// Drops inode `ino` if nothing holds it (never the root's).
    fn drop_unused(&mut self, ino: u64) {
        let unused = self
            .entries
            .get(&ino)
            .is_some_and(|e| e.lookups == 0 && e.listings == 0);
        if ino != ROOT && unused {
            if let Some(e) = self.entries.remove(&ino) {
                self.by_key.remove(&e.key);
            }
        }
    }
}

/// The root directory's inode number (FUSE's).
const ROOT: u64 = 1;

/// What the threads serving the mount share.
struct MountState {
    root: PathBuf,
    inodes: Mutex<Inodes>,
    /// The archives open.
    originals: Originals,
    /// Open files: the reader each open got.
    handles: Mutex<HashMap<u64, (PathBuf, OriginalReader)>>,
    /// Open directories: their listing, taken at opendir.
    dirs: Mutex<HashMap<u64, Arc<Listing>>>,
    next_handle: AtomicU64,
    logged: Mutex<HashSet<String>>,
    reads: AtomicU64,
    bytes: AtomicU64,
    errors: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl MountState {
    fn new(root: PathBuf, opts: &MountOptions) -> MountState {
        let mut inodes = Inodes {
            next: ROOT,
            ..Inodes::default()
        };
        inodes.look_up((root.clone(), None), || Node::Dir { path: root.clone() });
        MountState {
            root,
            inodes: Mutex::new(inodes),
            originals: Originals::new(opts.cache_bytes, opts.max_open),
            handles: Mutex::new(HashMap::new()),
            dirs: Mutex::new(HashMap::new()),
            next_handle: AtomicU64::new(1),
            logged: Mutex::new(HashSet::new()),
            reads: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            errors: AtomicU64::new(0),
        }
    }

    fn stats(&self) -> MountStats {
        MountStats {
            reads: self.reads.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            blocks_decoded: self.originals.blocks_decoded(),
            archives_opened: self.originals.opened(),
            inodes: self.inodes_held(),
        }
    }

    /// Writes `msg` on stderr, once.
    fn log_once(&self, msg: String) {
        let mut logged = lock(&self.logged);
        if logged.len() < MAX_LOGGED && logged.insert(msg.clone()) {
            eprintln!("nc3pack mount: {msg}");
        }
    }

    fn node(&self, ino: INodeNo) -> Option<Arc<Node>> {
        lock(&self.inodes).node(ino.0)
    }

    /// The inode of `name` in the directory `dir`: the archive `name.nc3z`, or the
    /// subdirectory `name`.
    fn lookup(&self, dir: &Path, name: &OsStr) -> std::result::Result<(u64, Arc<Node>), Errno> {
        if name.as_bytes().contains(&b'/') {
            return Err(Errno::ENOENT);
        }
        let mut archive_name = name.to_os_string();
        archive_name.push(SUFFIX);
        let archive = dir.join(&archive_name);
        if let Ok(md) = std::fs::metadata(&archive) {
            if md.is_file() {
                let ident = Ident::of(&md);
                let reader = self.originals.reader(&archive, ident).map_err(|e| {
                    self.log_once(format!("{}: cannot open: {e}", archive.display()));
                    Errno::EIO
                })?;
                let len = reader.len();
                let key = (archive.clone(), Some(ident));
                return Ok(lock(&self.inodes).look_up(key, || Node::File {
                    path: archive.clone(),
                    ident,
                    len,
                    mode: md.mode(),
                    uid: md.uid(),
                    gid: md.gid(),
                    mtime: md.modified().unwrap_or(UNIX_EPOCH),
                }));
            }
        }
        let sub = dir.join(name);
        match std::fs::metadata(&sub) {
            Ok(md) if md.is_dir() && !self.loops_back(dir, &sub) => {
                Ok(lock(&self.inodes).look_up((sub.clone(), None), || Node::Dir { path: sub }))
            }
            _ => Err(Errno::ENOENT),
        }
    }

    fn attr(&self, ino: u64, node: &Node) -> std::result::Result<FileAttr, Errno> {
        let (kind, size, mode, uid, gid, mtime, nlink) = match node {
            Node::Dir { path } => {
                let md = std::fs::metadata(path).map_err(|_| Errno::ENOENT)?;
                let mtime = md.modified().unwrap_or(UNIX_EPOCH);
                let kind = FileType::Directory;
                (kind, 0, md.mode(), md.uid(), md.gid(), mtime, 2)
            }
            Node::File {
                len,
                mode,
                uid,
                gid,
                mtime,
                ..
            } => (FileType::RegularFile, *len, *mode, *uid, *gid, *mtime, 1),
        };
        Ok(FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: mtime,
            mtime,
            ctime: mtime,
            crtime: mtime,
            kind,
            // Read-only: the write bits off.
            perm: (mode & 0o7555) as u16,
            nlink,
            uid,
            gid,
            rdev: 0,
            blksize: READ_SIZE,
            flags: 0,
        })
    }

    /// Whether `sub`, a directory found in `dir` (a symbolic link to one), is `dir` or a
    /// directory above it up to the mount's root, each as the system resolves it: shown, it
    /// would make the tree endless (`ln -s . loop` gives `loop/loop/...`, and two such links
    /// 2^40 paths), so it is not, as a scan of `pack` visits each directory once.
    fn loops_back(&self, dir: &Path, sub: &Path) -> bool {
        // (Only a link can lead back.)
        if !std::fs::symlink_metadata(sub).is_ok_and(|m| m.file_type().is_symlink()) {
            return false;
        }
        let Ok(target) = std::fs::canonicalize(sub) else {
            return false;
        };
        let mut at = Some(dir);
        while let Some(d) = at {
            if std::fs::canonicalize(d).is_ok_and(|c| c == target) {
                return true;
            }
            if d == self.root {
                break;
            }
            at = d.parent();
        }
        false
    }

    /// The entries of the directory `dir`: its subdirectories and its archives (named as
    /// their originals), sorted by name, after `.` and `..`; their inodes are held until
    /// [`MountState::close_listing`].
    fn listing(&self, ino: u64, dir: &Path) -> std::io::Result<Listing> {
        let mut out: Listing = vec![
            (ino, FileType::Directory, ".".into()),
            (ino, FileType::Directory, "..".into()),
        ];
        let mut entries: Vec<(OsString, u64, FileType)> = Vec::new();
        for e in std::fs::read_dir(dir)? {
            let Ok(e) = e else { continue };
            let Ok(mut t) = e.file_type() else { continue };
            if t.is_symlink() {
                match std::fs::metadata(e.path()) {
                    Ok(md) if md.is_dir() && self.loops_back(dir, &e.path()) => continue,
                    Ok(md) => t = md.file_type(),
                    Err(_) => continue,
                }
            }
            let name = e.file_name();
            // The numbers lookup gives (the same keys): by path for a directory, by path and
            // state for an archive (a stat, as `ls` makes anyway; no archive is opened).
            if t.is_dir() {
                let ino = lock(&self.inodes).list((e.path(), None));
                entries.push((name, ino, FileType::Directory));
            } else if t.is_file() {
                let b = name.as_bytes();
                let shown = &b[..b.len().saturating_sub(SUFFIX.len())];
                // (`..nc3z` and `...nc3z` would show as `.` and `..`: not shown.)
                if b.ends_with(SUFFIX.as_bytes()) && !matches!(shown, b"" | b"." | b"..") {
                    let Ok(md) = std::fs::metadata(e.path()) else {
                        continue;
                    };
                    let key = (e.path(), Some(Ident::of(&md)));
                    let ino = lock(&self.inodes).list(key);
                    let shown = OsStr::from_bytes(shown).to_os_string();
                    entries.push((shown, ino, FileType::RegularFile));
                }
            }
        }
        // A name that is both an archive's original and a directory is the archive (as
        // lookup has it).
        entries.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then((a.2 == FileType::Directory).cmp(&(b.2 == FileType::Directory)))
        });
        let mut hidden = Vec::new();
        entries.dedup_by(|b, a| {
            let same = a.0 == b.0;
            if same {
                hidden.push(b.1);
            }
            same
        });
        lock(&self.inodes).unlist(hidden);
        out.extend(entries.into_iter().map(|(n, i, t)| (i, t, n)));
        Ok(out)
    }

    /// A listing [`MountState::listing`] gave is closed: its entries' inodes are no longer
    /// held by it.
    fn close_listing(&self, list: &Listing) {
        // (`.` and `..` are the directory's own, not held by the listing.)
        lock(&self.inodes).unlist(list.iter().skip(2).map(|e| e.0));
    }

    /// Inodes held now.
    fn inodes_held(&self) -> u64 {
        lock(&self.inodes).entries.len() as u64
    }
}

/// The filesystem fuser serves.
struct MountFs {
    shared: Arc<MountState>,
}

impl Filesystem for MountFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        if let Err(most) = config.set_max_readahead(READAHEAD) {
            let _ = config.set_max_readahead(most);
        }
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let s = &self.shared;
        let Some(node) = s.node(parent) else {
            return reply.error(Errno::ENOENT);
        };
        let Node::Dir { path } = &*node else {
            return reply.error(Errno::ENOTDIR);
        };
        let (ino, node) = match s.lookup(path, name) {
            Ok(found) => found,
            Err(e) => return reply.error(e),
        };
        match s.attr(ino, &node) {
            Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
            Err(e) => {
                // Not given to the kernel: not held for it.
                lock(&s.inodes).forget(ino, 1);
                reply.error(e);
            }
        }
    }

    // (fuser's `batch_forget` calls this for each inode.)
    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        lock(&self.shared.inodes).forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let s = &self.shared;
        match s
            .node(ino)
            .ok_or(Errno::ENOENT)
            .and_then(|n| s.attr(ino.0, &n))
        {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let s = &self.shared;
        if flags.acc_mode() != OpenAccMode::O_RDONLY {
            return reply.error(Errno::EROFS);
        }
        let Some(node) = s.node(ino) else {
            return reply.error(Errno::ENOENT);
        };
        let Node::File { path, ident, .. } = &*node else {
            return reply.error(Errno::EISDIR);
        };
        // The archive must still be in the state this inode is: otherwise ESTALE, on which
        // the kernel looks the name up again (and finds the new inode).
        let now = |p: &Path| std::fs::metadata(p).ok().map(|md| Ident::of(&md));
        if now(path) != Some(*ident) {
            return reply.error(Errno::ESTALE);
        }
        let reader = match s.originals.reader(path, *ident) {
            Ok(r) => r,
            Err(e) => {
                s.log_once(format!("{}: cannot open: {e}", path.display()));
                return reply.error(Errno::EIO);
            }
        };
        // Replaced while being opened: the reader may hold the new archive.
        if now(path) != Some(*ident) {
            return reply.error(Errno::ESTALE);
        }
        let fh = s.next_handle.fetch_add(1, Ordering::Relaxed);
        lock(&s.handles).insert(fh, (path.clone(), reader));
        reply.opened(FileHandle(fh), FopenFlags::FOPEN_KEEP_CACHE);
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let s = &self.shared;
        let Some((path, reader)) = lock(&s.handles).get(&fh.0).cloned() else {
            return reply.error(Errno::EBADF);
        };
        let n = u64::from(size).min(reader.len().saturating_sub(offset)) as usize;
        // Each thread reuses one buffer (a request is at most READ_SIZE bytes, unless the
        // kernel was told otherwise): no allocation and no zeroing of pages per request.
        thread_local! {
            static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        BUF.with_borrow_mut(|buf| {
            if buf.len() < n {
                buf.resize(n, 0);
            }
            match reader.read_at(offset, &mut buf[..n]) {
                Ok(got) => {
                    s.reads.fetch_add(1, Ordering::Relaxed);
                    s.bytes.fetch_add(got as u64, Ordering::Relaxed);
                    reply.data(&buf[..got]);
                }
                Err(e) => {
                    s.errors.fetch_add(1, Ordering::Relaxed);
                    // The library's errors name the archive already: name it once.
                    let (msg, name) = (e.to_string(), path.display().to_string());
                    s.log_once(if msg.contains(&name) {
                        msg
                    } else {
                        format!("{name}: {msg}")
                    });
                    reply.error(Errno::EIO);
                }
            }
            // A request larger than usual does not keep its buffer.
            if buf.len() > READ_SIZE as usize {
                *buf = Vec::new();
            }
        });
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        lock(&self.shared.handles).remove(&fh.0);
        reply.ok();
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let s = &self.shared;
        let Some(node) = s.node(ino) else {
            return reply.error(Errno::ENOENT);
        };
        let Node::Dir { path } = &*node else {
            return reply.error(Errno::ENOTDIR);
        };
        match s.listing(ino.0, path) {
            Ok(list) => {
                let fh = s.next_handle.fetch_add(1, Ordering::Relaxed);
                lock(&s.dirs).insert(fh, Arc::new(list));
                reply.opened(FileHandle(fh), FopenFlags::empty());
            }
            Err(e) => {
                s.log_once(format!("{}: cannot list: {e}", path.display()));
                reply.error(Errno::EIO);
            }
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let Some(list) = lock(&self.shared.dirs).get(&fh.0).cloned() else {
            return reply.error(Errno::EBADF);
        };
        for (i, (ino, kind, name)) in list.iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(*ino), i as u64 + 1, *kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        let list = lock(&self.shared.dirs).remove(&fh.0);
        if let Some(list) = list {
            self.shared.close_listing(&list);
        }
        reply.ok();
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: u64,
        _data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        reply.error(Errno::EROFS);
    }

    fn access(&self, _req: &Request, _ino: INodeNo, mask: fuser::AccessFlags, reply: ReplyEmpty) {
        if mask.contains(fuser::AccessFlags::W_OK) {
            reply.error(Errno::EROFS);
        } else {
            reply.ok();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inode_lives_while_a_lookup_or_a_listing_holds_it() {
        let mut ino = Inodes {
            next: ROOT,
            ..Inodes::default()
        };
        let root = ino
            .look_up(("/".into(), None), || Node::Dir { path: "/".into() })
            .0;
        assert_eq!(root, ROOT);
        let key = |n: &str| (PathBuf::from(n), None);
        let dir = || Node::Dir { path: "/a".into() };
        // Listed, then looked up twice: one number throughout.
        let a = ino.list(key("/a"));
        assert!(ino.node(a).is_none(), "not looked up yet");
        assert_eq!(ino.look_up(key("/a"), dir).0, a);
        assert_eq!(ino.look_up(key("/a"), dir).0, a);
        ino.unlist([a]);
        ino.forget(a, 1);
        assert!(ino.node(a).is_some(), "one lookup still held");
        ino.forget(a, 1);
        assert!(ino.node(a).is_none());
        assert_eq!(ino.entries.len(), 1, "the root only");
        // A name listed again after all that is a new inode.
        let b = ino.list(key("/a"));
        assert_ne!(b, a);
        ino.unlist([b]);
        assert_eq!((ino.entries.len(), ino.by_key.len()), (1, 1));
        // The root is never dropped.
        ino.forget(ROOT, 5);
        assert!(ino.node(ROOT).is_some());
    }

    #[test]
    fn a_directory_lists_its_archives_as_originals_and_hides_other_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.nc.nc3z"), b"x").unwrap();
        std::fs::write(dir.path().join("a.nc"), b"x").unwrap();
        std::fs::write(dir.path().join(".nc3z"), b"x").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"x").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::create_dir(dir.path().join("b")).unwrap();
        std::fs::write(dir.path().join("b.nc3z"), b"x").unwrap();
        let s = MountState::new(dir.path().to_path_buf(), &MountOptions::default());
        let list = s.listing(1, dir.path()).unwrap();
        // Held by the listing: the root, `a.nc`, `b` (the archive's, not the directory's)
        // and `sub`; by nothing once it is closed but the root.
        assert_eq!(s.inodes_held(), 4);
        s.close_listing(&list);
        assert_eq!(s.inodes_held(), 1);
        let names: Vec<(String, FileType)> = list
            .into_iter()
            .map(|(_, t, n)| (n.to_string_lossy().into_owned(), t))
            .collect();
        let want = [
            (".", FileType::Directory),
            ("..", FileType::Directory),
            ("a.nc", FileType::RegularFile),
            ("b", FileType::RegularFile),
            ("sub", FileType::Directory),
        ];
        let want: Vec<(String, FileType)> = want.iter().map(|(n, t)| (n.to_string(), *t)).collect();
        assert_eq!(names, want);
    }
}
