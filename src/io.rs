//! Positional reads: the one I/O primitive the readers need.

use crate::error::{io_err, Error, Result};
use std::io;
use std::path::Path;

/// Opens `path` for [`ReadAt`]: refuses a pipe, FIFO, device or socket, which cannot be read at
/// any offset nor tell its length, with a clear error instead of reading it as empty. `op` says
/// what needs to seek, for the message.
///
/// # Errors
///
/// [`Error::Io`] when the file cannot be opened, [`Error::NotSeekable`] when it is not a regular
/// file (directories are left to the caller's first read, which names them).
///
/// ```
/// let f = nc3pack::__private::open_seekable("samples/scalars.nc".as_ref(), "reading").unwrap();
/// let e = nc3pack::__private::open_seekable("/dev/null".as_ref(), "reading").unwrap_err();
/// assert_eq!(
///     e.to_string(),
///     "/dev/null: is a character device, not a regular file: reading needs a regular file \
///      (save it to one first)"
/// );
/// ```
pub fn open_seekable(path: &Path, op: &'static str) -> Result<std::fs::File> {
    use std::os::unix::fs::FileTypeExt;
    let f = std::fs::File::open(path).map_err(io_err(path, "open"))?;
    let ft = f.metadata().map_err(io_err(path, "stat"))?.file_type();
    let kind = if ft.is_fifo() {
        "a pipe"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        return Ok(f);
    };
    Err(Error::NotSeekable {
        path: path.to_path_buf(),
        kind,
        op,
    })
}

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
    /// # Errors
    ///
    /// The source's I/O error; `UnexpectedEof` when fewer than `buf.len()` bytes lie at
    /// `offset`.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Total length in bytes.
    ///
    /// # Errors
    ///
    /// The source's I/O error.
    fn size(&self) -> io::Result<u64>;
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
