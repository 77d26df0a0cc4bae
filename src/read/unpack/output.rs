//! The file an unpack writes: its space reserved up front, and its bytes written with direct
//! I/O (Linux `O_DIRECT`) by two I/O threads while the block decoders go on.
//!
//! An unpacked file is synced before it is renamed into place, so every byte goes to the disk
//! before the unpack returns in any case. Written through the page cache, each byte is first
//! copied into it by the writing thread (about as much system time as decoding it took user
//! time, on the cores the decoders need), then written to the disk by the kernel. Written
//! directly, the bytes go from a few aligned chunks of memory to the disk, the threads waiting
//! on the disk and not on a core. Only files on a local disk's file system (ext4, XFS, btrfs)
//! are written directly; on other file systems (network and cluster ones among them), and where
//! direct I/O is refused (the flag, or a write with it), the file is written through the page
//! cache instead, as before: same bytes, same sync.

use crate::error::{io_err, Result};
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Mutex;

/// The alignment direct I/O needs of memory, file offsets and lengths (the largest logical
/// block size of common disks; a multiple of the smaller ones).
const ALIGN: usize = 4096;

/// Bytes written to the disk at a time.
const CHUNK: usize = 2 << 20;

/// Chunks in memory: the one being filled and those being written.
const CHUNKS: usize = 4;

/// Threads writing chunks: two keep the disk busy while one waits for it (1.2 → 1.6 GB/s
/// here, a virtual disk on ext4).
const IO_THREADS: usize = 2;

/// Reserves `len` bytes of disk for `file` (Linux `fallocate`): a disk without the room fails
/// now, not after the work, and the file system allocates the file at once rather than page by
/// page as it is written. A file system that cannot reserve space is written as before.
///
/// # Errors
///
/// [`Error::Io`] (naming `path`) when the disk or the user's quota has no room for `len` bytes.
pub(super) fn reserve(file: &File, len: u64, path: &Path) -> Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let Ok(len) = i64::try_from(len) else {
            return Ok(());
        };
        if len == 0 {
            return Ok(());
        }
        // SAFETY: a valid descriptor; fallocate only changes the file's allocation.
        if unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) } != 0 {
            let e = io::Error::last_os_error();
            // No room is an error; anything else (not supported here, a file size limit the
            // writes will report) leaves the file as it was.
            if matches!(e.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT)) {
                return Err(io_err(path, "reserve space for")(e));
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, len, path);
    Ok(())
}

/// Whether `file` lives on a local disk file system where direct I/O is well trodden (ext4,
/// XFS, btrfs). Elsewhere (NFS, Lustre, GPFS, CIFS, FUSE, tmpfs) a direct write may be
/// synchronous over the network, or emulated, or refused: such files are written through the
/// page cache, as `cp` and `zstd -d` write them.
#[cfg(target_os = "linux")]
fn on_local_disk(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    const EXT4: i64 = 0xEF53;
    const XFS: i64 = 0x5846_5342;
    const BTRFS: i64 = 0x9123_683E;
    let mut st = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: a valid descriptor and room for one statfs, which fstatfs fills on success.
    if unsafe { libc::fstatfs(file.as_raw_fd(), st.as_mut_ptr()) } != 0 {
        return false;
    }
    // SAFETY: filled, as fstatfs returned 0. (`f_type`'s integer type differs by platform.)
    #[allow(clippy::unnecessary_cast)]
    let kind = unsafe { st.assume_init() }.f_type as i64;
    matches!(kind, EXT4 | XFS | BTRFS)
}

/// Whether `file` is written with direct I/O now.
#[cfg(target_os = "linux")]
fn is_direct(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid descriptor; F_GETFL only reads its flags.
    let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
    flags >= 0 && flags & libc::O_DIRECT != 0
}

/// Turns direct I/O on or off for `file`; false if the file system refuses.
#[cfg(target_os = "linux")]
fn set_direct(file: &File, on: bool) -> bool {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: a valid descriptor; F_GETFL and F_SETFL only read and set its status flags.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 {
            return false;
        }
        let flags = if on {
            flags | libc::O_DIRECT
        } else {
            flags & !libc::O_DIRECT
        };
        libc::fcntl(fd, libc::F_SETFL, flags) == 0
    }
}

/// Writes `file` (named `path` in errors) from its start with what `write` writes to the
/// writer it is given, and returns what `write` returns once every byte is in the file (not
/// yet synced): with direct I/O where the file system takes it and an I/O thread can start,
/// through the page cache otherwise.
///
/// # Errors
///
/// What `write` returns (a write error of the file among them: the writer reports it).
pub(super) fn write_with<T>(
    file: &mut File,
    path: &Path,
    write: impl FnOnce(Output<'_>) -> Result<T>,
) -> Result<T> {
    #[cfg(target_os = "linux")]
    let write = if on_local_disk(file) && set_direct(file, true) {
        match write_direct(file, write) {
            Ok(done) => return done,
            // No I/O thread could start: the page cache, on this thread.
            Err(write) => {
                if !set_direct(file, false) {
                    return Err(io_err(path, "write")(io::Error::other(
                        "cannot turn direct I/O off",
                    )));
                }
                write
            }
        }
    } else {
        write
    };
    #[cfg(not(target_os = "linux"))]
    let _ = path;
    write(Output::Buffered(crate::atomic::Writeback::new(file)))
}

/// [`write_with`] with direct I/O (already on for `file`), written by up to [`IO_THREADS`]
/// threads; `write` given back if none can start.
#[cfg(target_os = "linux")]
fn write_direct<T, W: FnOnce(Output<'_>) -> Result<T>>(
    file: &File,
    write: W,
) -> std::result::Result<Result<T>, W> {
    let (jobs_tx, jobs_rx) = sync_channel::<(Chunk, u64)>(CHUNKS);
    let (done_tx, done_rx) = sync_channel::<io::Result<Chunk>>(CHUNKS);
    let jobs_rx = Mutex::new(jobs_rx);
    std::thread::scope(|sc| {
        let mut started = 0;
        for _ in 0..IO_THREADS {
            let (jobs, done) = (&jobs_rx, done_tx.clone());
            let spawned = crate::parallel::spawn_scoped(sc, "file writer", move || {
                write_chunks(file, jobs, &done)
            });
            started += usize::from(spawned.is_ok());
        }
        drop(done_tx);
        if started == 0 {
            return Err(write);
        }
        // The threads stop once `jobs_tx` is gone: when `write` drops its writer.
        Ok(write(Output::Direct(Direct {
            file,
            cur: Chunk::new(),
            pos: 0,
            made: 1,
            in_flight: 0,
            jobs: jobs_tx,
            done: done_rx,
        })))
    })
}

/// An I/O thread: writes the chunks `jobs` hands it where they go, and gives each back on
/// `done` (or why it could not be written), until no more come.
fn write_chunks(
    file: &File,
    jobs: &Mutex<Receiver<(Chunk, u64)>>,
    done: &SyncSender<io::Result<Chunk>>,
) {
    loop {
        // (A poisoned lock still holds a valid receiver.)
        let job = jobs.lock().unwrap_or_else(|p| p.into_inner()).recv();
        let Ok((chunk, at)) = job else {
            return;
        };
        let r = write_at(file, chunk.bytes(), at).map(|()| chunk);
        if done.send(r).is_err() {
            return;
        }
    }
}

/// Writes `bytes` at `at`; a write refused with EINVAL (with direct I/O: an alignment this
/// file system does not take) turns direct I/O off for the file and is tried once more through
/// the page cache, as are the writes after it. (Both I/O threads may be refused at once, so it
/// is tried again even if the other thread turned direct I/O off first.)
fn write_at(file: &File, bytes: &[u8], at: u64) -> io::Result<()> {
    match file.write_all_at(bytes, at) {
        #[cfg(target_os = "linux")]
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            if is_direct(file) && !set_direct(file, false) {
                return Err(e);
            }
            file.write_all_at(bytes, at)
        }
        r => r,
    }
}

/// A chunk of bytes in memory aligned for direct I/O, and how many of them are used.
struct Chunk {
    pages: Vec<Page>,
    len: usize,
}

/// [`ALIGN`] bytes, aligned to [`ALIGN`]: a `Vec` of them is aligned memory.
#[derive(Clone, Copy)]
#[repr(C, align(4096))]
struct Page([u8; ALIGN]);

impl Chunk {
    fn new() -> Chunk {
        Chunk {
            pages: vec![Page([0; ALIGN]); CHUNK / ALIGN],
            len: 0,
        }
    }

    /// All its bytes.
    fn all(&mut self) -> &mut [u8] {
        // SAFETY: `pages` is `CHUNK / ALIGN` pages of plain bytes, laid out one after the
        // other (`repr(C)` arrays, whose size is their alignment), borrowed mutably with `self`.
        unsafe { std::slice::from_raw_parts_mut(self.pages.as_mut_ptr().cast::<u8>(), CHUNK) }
    }

    /// The bytes used.
    fn bytes(&self) -> &[u8] {
        // SAFETY: as in `all`; `len <= CHUNK`.
        unsafe { std::slice::from_raw_parts(self.pages.as_ptr().cast::<u8>(), self.len) }
    }
}

/// The writer [`write_with`] gives: direct, or through the page cache.
pub(super) enum Output<'f> {
    Direct(Direct<'f>),
    Buffered(crate::atomic::Writeback<'f>),
}

impl Write for Output<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Output::Direct(d) => d.write(buf),
            Output::Buffered(w) => w.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Output::Direct(d) => d.flush(),
            Output::Buffered(w) => w.flush(),
        }
    }
}

/// Writes a file from its start in chunks, which the I/O threads write while the next is
/// filled. A flush writes what is left and waits for every chunk to be written.
pub(super) struct Direct<'f> {
    file: &'f File,
    /// The chunk being filled.
    cur: Chunk,
    /// Where in the file `cur` goes.
    pos: u64,
    /// Chunks made so far (at most [`CHUNKS`]).
    made: usize,
    /// Chunks handed to the I/O threads and not given back yet.
    in_flight: usize,
    jobs: SyncSender<(Chunk, u64)>,
    done: Receiver<io::Result<Chunk>>,
}

impl Direct<'_> {
    /// A chunk given back by the I/O threads, emptied (or why it could not be written).
    fn written(&mut self) -> io::Result<Chunk> {
        let r = self
            .done
            .recv()
            .map_err(|_| io::Error::other("the file's writer threads stopped"))?;
        self.in_flight -= 1;
        let mut chunk = r?;
        chunk.len = 0;
        Ok(chunk)
    }

    /// Hands the full chunk to the I/O threads and takes an empty one to fill.
    fn submit(&mut self) -> io::Result<()> {
        let next = if self.made < CHUNKS {
            self.made += 1;
            Chunk::new()
        } else {
            self.written()?
        };
        let full = std::mem::replace(&mut self.cur, next);
        let at = self.pos;
        self.pos += full.len as u64;
        self.jobs
            .send((full, at))
            .map_err(|_| io::Error::other("the file's writer threads stopped"))?;
        self.in_flight += 1;
        Ok(())
    }
}

impl Write for Direct<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let used = self.cur.len;
        let n = buf.len().min(CHUNK - used);
        self.cur.all()[used..used + n].copy_from_slice(&buf[..n]);
        self.cur.len += n;
        if self.cur.len == CHUNK {
            self.submit()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        let mut first_err = None;
        while self.in_flight > 0 {
            if let Err(e) = self.written() {
                first_err.get_or_insert(e);
            }
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        if self.cur.len > 0 {
            // A tail that is not whole pages goes through the page cache: direct I/O takes
            // whole pages only, and the file is not to be longer than its bytes.
            #[cfg(target_os = "linux")]
            if !self.cur.len.is_multiple_of(ALIGN)
                && is_direct(self.file)
                && !set_direct(self.file, false)
            {
                return Err(io::Error::other("cannot turn direct I/O off for the tail"));
            }
            write_at(self.file, self.cur.bytes(), self.pos)?;
            self.pos += self.cur.len as u64;
            self.cur.len = 0;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use std::io::Read;

    /// A file on tmpfs (where `/dev/shm` is one) is not on a local disk: it is written through
    /// the page cache; a file in the temporary directory is on whatever that is.
    #[test]
    #[cfg(target_os = "linux")]
    fn only_local_disk_file_systems_are_written_directly() {
        let shm = Path::new("/dev/shm");
        let is_tmpfs = std::process::Command::new("stat")
            .args(["-f", "-c", "%T", "/dev/shm"])
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"tmpfs"));
        if is_tmpfs {
            let dir = tempfile::tempdir_in(shm).unwrap();
            let file = File::create_new(dir.path().join("out.nc")).unwrap();
            assert!(!on_local_disk(&file));
        }
        let dir = tempfile::tempdir().unwrap();
        let file = File::create_new(dir.path().join("out.nc")).unwrap();
        let kind = std::process::Command::new("stat")
            .args(["-f", "-c", "%T"])
            .arg(dir.path())
            .output()
            .unwrap();
        let kind = String::from_utf8_lossy(&kind.stdout);
        let local = ["ext2/ext3", "xfs", "btrfs"].contains(&kind.trim());
        assert_eq!(on_local_disk(&file), local, "{kind}");
    }

    /// Writes `pieces` through [`write_with`] into a new file in a temporary directory and
    /// returns the file's bytes and what was written.
    fn round_trip(pieces: &[usize], flushes: &[usize]) -> (Vec<u8>, Vec<u8>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.nc");
        let mut file = File::create_new(&path).unwrap();
        let mut want = Vec::new();
        write_with(&mut file, &path, |mut out| {
            for (i, &len) in pieces.iter().enumerate() {
                let piece: Vec<u8> = (0..len).map(|j| ((i * 31 + j * 7) % 253) as u8).collect();
                out.write_all(&piece).unwrap();
                want.extend_from_slice(&piece);
                if flushes.contains(&i) {
                    out.flush().unwrap();
                }
            }
            out.flush().unwrap();
            Ok(())
        })
        .unwrap();
        let mut got = Vec::new();
        File::open(&path).unwrap().read_to_end(&mut got).unwrap();
        (got, want)
    }

    /// Many chunks in pieces of odd lengths (none ends at a chunk's end), a tail of less than a
    /// page: the file holds exactly the bytes written, however the chunks fall.
    #[test]
    fn direct_writes_land_in_order_with_an_odd_tail() {
        let pieces: Vec<usize> = (0..40)
            .map(|i| 300_007 + (i * 65_537) % 1_000_003)
            .collect();
        let (got, want) = round_trip(&pieces, &[]);
        assert!(want.len() > (CHUNKS + 3) * CHUNK, "{}", want.len());
        assert!(
            got == want,
            "{} bytes written, {} read back",
            want.len(),
            got.len()
        );
    }

    /// A flush in the middle (a tail of part of a page, written through the page cache) and
    /// writes after it: still every byte in place.
    #[test]
    fn a_flush_in_the_middle_keeps_the_bytes_in_place() {
        let pieces = [CHUNK + 4097, 13, 3 * CHUNK + 1, ALIGN, 5];
        let (got, want) = round_trip(&pieces, &[1, 3]);
        assert!(
            got == want,
            "{} bytes written, {} read back",
            want.len(),
            got.len()
        );
        let (got, want) = round_trip(&[0, 1, 0], &[0]);
        assert_eq!(got, want);
    }

    /// A write that direct I/O refuses (memory, offset and length not aligned: EINVAL on ext4,
    /// XFS and btrfs) is written through the page cache instead: the bytes land.
    #[test]
    fn a_write_direct_io_refuses_lands_through_the_page_cache() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.nc");
        let file = File::create_new(&path).unwrap();
        if !set_direct(&file, true) {
            return; // No direct I/O on this file system: nothing to refuse.
        }
        let bytes: Vec<u8> = (0..9000u32).map(|i| (i % 251) as u8).collect();
        write_at(&file, &bytes[1..], 4097).unwrap();
        drop(file);
        let got = std::fs::read(&path).unwrap();
        assert_eq!(got.len(), 4097 + bytes.len() - 1);
        assert!(got[..4097].iter().all(|&b| b == 0));
        assert!(got[4097..] == bytes[1..]);
    }

    /// A file the writes cannot go to (opened read-only): the error comes back from a write
    /// or the flush, not a panic or a hang.
    #[test]
    fn a_write_error_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.nc");
        File::create_new(&path).unwrap();
        let mut file = File::open(&path).unwrap();
        let r = write_with(&mut file, &path, |mut out| {
            let piece = vec![7u8; 1 << 20];
            for _ in 0..(3 * CHUNKS * CHUNK) >> 20 {
                out.write_all(&piece).map_err(io_err(&path, "write"))?;
            }
            out.flush().map_err(io_err(&path, "write"))?;
            Ok(())
        });
        assert!(matches!(r, Err(Error::Io { .. })), "{r:?}");
    }
}
