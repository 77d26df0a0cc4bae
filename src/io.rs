//! Positional reads: the one I/O primitive the readers need (a leaf: it imports nothing of the
//! crate, so the netCDF-3 parser can read through it), and what names a URL rather than a path.

use std::io;

/// A source of bytes that can be read at any offset, from many threads at once.
///
/// Implemented for [`std::fs::File`] (with `pread`, no shared cursor) and for byte vectors.
///
/// ```
/// use nc3pack::ReadAt;
/// let v = b"hello".to_vec();
/// let mut buf = [0u8; 3];
/// v.read_exact_at(&mut buf, 1).unwrap();
/// assert_eq!(&buf, b"ell");
/// assert_eq!(v.size().unwrap(), 5);
/// ```
pub trait ReadAt: Send + Sync {
    /// Fills `buf` with the bytes at `offset`, or fails with `UnexpectedEof`.
    ///
    /// ```
    /// use nc3pack::ReadAt;
    /// let v = b"netCDF".to_vec();
    /// let mut buf = [0u8; 3];
    /// v.read_exact_at(&mut buf, 3)?;
    /// assert_eq!(&buf, b"CDF");
    /// let err = v.read_exact_at(&mut buf, 5).unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The source's I/O error; `UnexpectedEof` when fewer than `buf.len()` bytes lie at
    /// `offset`.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Total length in bytes.
    ///
    /// ```
    /// use nc3pack::ReadAt;
    /// let f = std::fs::File::open("samples/scalars.nc")?;
    /// assert_eq!(f.size()?, std::fs::metadata("samples/scalars.nc")?.len());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The source's I/O error.
    fn size(&self) -> io::Result<u64>;
    /// Announces the byte ranges, as (offset, length), that are about to be read: a read
    /// planned in advance. A remote source fetches them with a few coalesced range requests,
    /// in the background, and serves the reads that follow from what has arrived; a local one
    /// ignores the hint (the default).
    ///
    /// # Errors
    ///
    /// The source's I/O error, when fetching failed.
    fn prefetch(&self, ranges: &[(u64, u64)]) -> io::Result<()> {
        let _ = ranges;
        Ok(())
    }
    /// Whether [`ReadAt::prefetch`] does anything (readers skip planning when it does not).
    fn wants_prefetch(&self) -> bool {
        false
    }
}

impl ReadAt for std::fs::File {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(self, buf, offset)
    }
    fn size(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
}

impl ReadAt for Vec<u8> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
        let src = start
            .checked_add(buf.len())
            .and_then(|end| self.get(start..end))
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn size(&self) -> io::Result<u64> {
        Ok(self.len() as u64)
    }
}

/// Whether `s` is a URL nc3pack reads or writes (`s3://`, `http://`, `https://`, `file://`, any
/// case) rather than a local path.
///
/// ```
/// assert!(nc3pack::is_url("S3://bucket/a.nc3z"));
/// assert!(!nc3pack::is_url("s3:/bucket/a.nc3z"));
/// assert!(!nc3pack::is_url("https://"));
/// ```
pub fn is_url(s: &str) -> bool {
    ["s3://", "http://", "https://", "file://"]
        .iter()
        .any(|p| s.len() > p.len() && s[..p.len()].eq_ignore_ascii_case(p))
}

/// A local file's state: what tells whether its bytes are the ones it held when opened.
/// Whatever writes to a file or truncates it sets its modification and change times to the
/// clock's (before the data changes); setting the modification time back (`touch -d`,
/// `rsync --inplace -t`) sets the change time, which nothing sets back. The change time also
/// moves when the file is unlinked or renamed over (its link count drops: its bytes stay), and
/// when it is renamed, linked or its permissions change (which cannot be told from a write
/// whose modification time was set back, and so count as a change).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileState {
    ctime_ns: i128,
    mtime_ns: i128,
    len: u64,
    nlink: libc::nlink_t,
}

impl FileState {
    /// The state of the file open as `fd`.
    pub(crate) fn of(fd: std::os::fd::RawFd) -> std::io::Result<FileState> {
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: fstat only writes a `stat` into the buffer it is given (a descriptor that
        // is not open fails with EBADF).
        if unsafe { libc::fstat(fd, st.as_mut_ptr()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fstat succeeded, so it filled the buffer.
        let st = unsafe { st.assume_init() };
        let ns = |s: i64, ns: i64| i128::from(s) * 1_000_000_000 + i128::from(ns);
        Ok(FileState {
            ctime_ns: ns(st.st_ctime, st.st_ctime_nsec),
            mtime_ns: ns(st.st_mtime, st.st_mtime_nsec),
            len: st.st_size as u64,
            nlink: st.st_nlink,
        })
    }

    /// What differs between the state `then` and this one that may have changed the file's
    /// bytes; None when nothing did (nothing differs, or only the change time with the link
    /// count: unlinked, renamed over).
    pub(crate) fn changed_since(&self, then: &FileState) -> Option<String> {
        if self.len != then.len {
            Some(format!(
                "length {} bytes when opened, now {}",
                then.len, self.len
            ))
        } else if self.mtime_ns != then.mtime_ns {
            Some("its modification time is another: written to".to_string())
        } else if self.ctime_ns != then.ctime_ns && self.nlink == then.nlink {
            Some(
                "its change time is another: written to with its modification time set \
                 back, or renamed, or its permissions changed"
                    .to_string(),
            )
        } else {
            None
        }
    }
}
