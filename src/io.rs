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
    /// Announces the byte ranges, as (offset, length), that are about to be read: a read
    /// planned in advance. A remote source fetches them together, with one coalesced,
    /// concurrent request set, and serves the reads that follow from what it fetched; a local
    /// one ignores the hint (the default).
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

/// What a path or URL opens to: a local file, or (with the `remote` feature) an object in
/// object storage. [`crate::Archive::open`] and [`crate::open`] read through it.
///
/// ```
/// use nc3pack::{Input, ReadAt};
/// let f = Input::File(std::fs::File::open("samples/scalars.nc")?);
/// assert!(f.size()? > 0);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub enum Input {
    /// A local file (a path, or a `file://` URL).
    File(std::fs::File),
    /// An object read by range requests (`s3://`, `http(s)://`).
    #[cfg(feature = "remote")]
    Remote(crate::remote::RemoteReader),
}

impl ReadAt for Input {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match self {
            Input::File(f) => ReadAt::read_exact_at(f, buf, offset),
            #[cfg(feature = "remote")]
            Input::Remote(r) => r.read_exact_at(buf, offset),
        }
    }
    fn size(&self) -> io::Result<u64> {
        match self {
            Input::File(f) => ReadAt::size(f),
            #[cfg(feature = "remote")]
            Input::Remote(r) => r.size(),
        }
    }
    fn prefetch(&self, ranges: &[(u64, u64)]) -> io::Result<()> {
        match self {
            Input::File(f) => f.prefetch(ranges),
            #[cfg(feature = "remote")]
            Input::Remote(r) => r.prefetch(ranges),
        }
    }
    fn wants_prefetch(&self) -> bool {
        match self {
            Input::File(_) => false,
            #[cfg(feature = "remote")]
            Input::Remote(_) => true,
        }
    }
}

/// Opens a path, or a URL (`s3://`, `http(s)://`, `file://`; with the options of
/// [`crate::remote::set_default_options`]), for reading at any offset; `op` says what needs to
/// seek, for the message (as [`open_seekable`]).
pub(crate) fn open_input(path: &Path, op: &'static str) -> Result<Input> {
    match path.to_str() {
        #[cfg(feature = "remote")]
        Some(s) if crate::remote::is_url(s) => open_url(s, &crate::remote::default_options(), op),
        #[cfg(not(feature = "remote"))]
        Some(s) if is_url_syntax(s) => Err(Error::Remote {
            url: s.into(),
            source: crate::error::RemoteError::NotBuilt,
        }),
        _ => open_seekable(path, op).map(Input::File),
    }
}

/// Opens a URL with explicit options: a `file://` URL as the local file, others as a
/// [`crate::remote::RemoteReader`].
#[cfg(feature = "remote")]
pub(crate) fn open_url(
    url: &str,
    opts: &crate::remote::RemoteOptions,
    op: &'static str,
) -> Result<Input> {
    if url.len() > 7 && url[..7].eq_ignore_ascii_case("file://") {
        let p = crate::remote::file_url_path(url).map_err(|source| Error::Remote {
            url: url.into(),
            source,
        })?;
        return open_seekable(&p, op).map(Input::File);
    }
    crate::remote::RemoteReader::open(url, opts).map(Input::Remote)
}

#[cfg(not(feature = "remote"))]
fn is_url_syntax(s: &str) -> bool {
    ["s3://", "http://", "https://", "file://"]
        .iter()
        .any(|p| s.len() > p.len() && s[..p.len()].eq_ignore_ascii_case(p))
}
