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
