//! What a path or URL opens to ([`Input`]): a local file, or an object in object storage.

use super::open_seekable;
use crate::error::{Error, Result};
use crate::io::ReadAt;
use std::io;
use std::path::Path;

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
#[non_exhaustive]
pub enum Input {
    /// A local file (a path, or a `file://` URL).
    File(std::fs::File),
    /// An object read by range requests (`s3://`, `http(s)://`).
    #[cfg(feature = "remote")]
    Remote(crate::remote::RemoteReader),
    /// Bytes in memory (an archive a program holds in a buffer, as netCDF-C's `nc_open_mem`).
    ///
    /// ```
    /// use nc3pack::{Input, ReadAt};
    /// let bytes = std::fs::read("samples/scalars.nc")?;
    /// let m = Input::Memory(bytes.clone().into());
    /// assert_eq!(m.size()?, bytes.len() as u64);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    Memory(std::sync::Arc<[u8]>),
}

impl ReadAt for Input {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match self {
            Input::File(f) => ReadAt::read_exact_at(f, buf, offset),
            #[cfg(feature = "remote")]
            Input::Remote(r) => r.read_exact_at(buf, offset),
            Input::Memory(m) => read_memory(m, buf, offset),
        }
    }
    fn size(&self) -> io::Result<u64> {
        match self {
            Input::File(f) => ReadAt::size(f),
            #[cfg(feature = "remote")]
            Input::Remote(r) => r.size(),
            Input::Memory(m) => Ok(m.len() as u64),
        }
    }
    fn prefetch(&self, ranges: &[(u64, u64)]) -> io::Result<()> {
        match self {
            Input::File(f) => f.prefetch(ranges),
            #[cfg(feature = "remote")]
            Input::Remote(r) => r.prefetch(ranges),
            Input::Memory(_) => Ok(()),
        }
    }
    fn wants_prefetch(&self) -> bool {
        match self {
            Input::File(_) | Input::Memory(_) => false,
            #[cfg(feature = "remote")]
            Input::Remote(_) => true,
        }
    }
}

/// `buf.len()` bytes of `m` at `offset`, or `UnexpectedEof` when they run past its end.
fn read_memory(m: &[u8], buf: &mut [u8], offset: u64) -> io::Result<()> {
    let src = usize::try_from(offset)
        .ok()
        .and_then(|at| m.get(at..at.checked_add(buf.len())?))
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{} bytes at offset {offset} are past the end of {} bytes in memory",
                    buf.len(),
                    m.len()
                ),
            )
        })?;
    buf.copy_from_slice(src);
    Ok(())
}

#[cfg(feature = "remote")]
impl Input {
    /// Opens a URL with explicit options (credentials, endpoint, anonymous access): a
    /// `file://` URL as the local file, `s3://` and `http(s)://` as a
    /// [`crate::remote::RemoteReader`] (two concurrent range requests).
    ///
    /// ```no_run
    /// use nc3pack::{Input, ReadAt};
    /// let opts = nc3pack::remote::RemoteOptions::from_env().with_anon(true);
    /// let input = Input::open_url("s3://bucket/sst.nc3z", &opts)?;
    /// println!("{} bytes, archive: {}", input.size().unwrap(), nc3pack::is_archive(&input));
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Remote`] naming the URL and the cause (malformed URL, no credentials, access
    /// denied, no such object, ...); [`Error::Io`] for a `file://` URL that cannot be opened.
    pub fn open_url(url: &str, opts: &crate::remote::RemoteOptions) -> Result<Input> {
        open_url(url, opts, "random access")
    }
}

/// The remote options a call was given (`with_remote` of [`crate::UnpackOptions`],
/// [`crate::VerifyOptions`], [`crate::info::InfoOptions`], [`crate::open_with`], ...); without the `remote` feature there
/// are none (a URL is refused).
#[cfg(feature = "remote")]
pub(crate) type CallRemote = crate::remote::RemoteOptions;
/// The remote options a call was given: none without the `remote` feature.
#[cfg(not(feature = "remote"))]
pub(crate) type CallRemote = std::convert::Infallible;

/// Opens a path, or a URL (`s3://`, `http(s)://`, `file://`; with
/// [`crate::remote::RemoteOptions::from_env`], read now), for reading at any offset; `op`
/// says what needs to seek, for the message (as [`open_seekable`]).
pub(crate) fn open_input(path: &Path, op: &'static str) -> Result<Input> {
    open_input_with(path, None, op)
}

/// [`open_input`] with the remote options the call was given: a URL is read with `remote`,
/// or, when it is `None`, with the environment's options (read now). The environment is not
/// read when `remote` is given, and nothing process-wide is read either way.
pub(crate) fn open_input_with(
    path: &Path,
    remote: Option<&CallRemote>,
    op: &'static str,
) -> Result<Input> {
    match path.to_str() {
        #[cfg(feature = "remote")]
        Some(s) if crate::io::is_url(s) => match remote {
            Some(r) => open_url(s, r, op),
            None => open_url(s, &crate::remote::RemoteOptions::from_env(), op),
        },
        #[cfg(not(feature = "remote"))]
        Some(s) if crate::io::is_url(s) => {
            let _ = remote;
            Err(Error::Remote {
                url: s.into(),
                source: crate::error::RemoteError::NotBuilt,
            })
        }
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
