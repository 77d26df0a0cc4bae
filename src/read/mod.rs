//! Reading variables: one API, [`Dataset`], for archives ([`Archive`]) and original netCDF-3
//! files ([`NcFile`]), with hyperslab reads as netCDF's `nc_get_vars`.
//!
//! A read turns its [`Hyperslab`] into contiguous byte runs of the variable's row-major data
//! (with the record dimension materialized) and asks the source for those bytes: an archive
//! serves them from decoded blocks through its cache, a netCDF-3 file by positional reads. Values
//! come back big-endian from both and are converted to native order at the end.
//!
//! ```no_run
//! use nc3pack::Dataset;
//! let ds = nc3pack::open("/tmp/sst.nc3z")?; // or the original .nc
//! let slab = ds.slab("sst", Some(&[0, 90, 180]), Some(&[1, 1, 1]), None)?;
//! let v: Vec<f32> = ds.read("sst", &slab)?;
//! println!("{v:?}");
//! # Ok::<(), nc3pack::Error>(())
//! ```

pub(crate) mod archive;
pub(crate) mod cache;
pub(crate) mod dataset;
pub(crate) mod input;
mod ncfile;
pub(crate) mod original;
#[cfg(any(all(feature = "mount", target_os = "linux"), feature = "serve"))]
pub(crate) mod originals;
pub(crate) mod unpack;

pub use dataset::{Dataset, DimInfo, Element, VarInfo};
pub use input::Input;
pub use ncfile::NcFile;

use crate::error::{io_err, Error, Result};
use crate::io::ReadAt;
use archive::Archive;
use std::path::Path;

/// Opens a netCDF-3 file or an archive (told apart by content) for reading.
///
/// ```no_run
/// use nc3pack::Dataset;
/// let ds = nc3pack::open("samples/gridded_sst.nc")?;
/// println!("{} variables", ds.header().var_count());
/// # Ok::<(), nc3pack::Error>(())
/// ```
///
/// # Errors
///
/// As [`Archive::open`](crate::Archive::open) for a file that starts with the archive magic,
/// as [`NcFile::open`] for any other (a file that is not netCDF-3 is refused by its header).
pub fn open(path: impl AsRef<Path>) -> Result<Box<dyn Dataset>> {
    let path = path.as_ref();
    open_dataset(crate::read::input::open_input(path, "random access")?, path)
}

/// [`open`] with the options a URL (`s3://`, `http(s)://`, `file://`) is read with
/// (credentials, endpoint, region, anonymous access): this call goes by `remote` alone (it
/// reads the environment only if `remote` was made by
/// [`RemoteOptions::from_env`](crate::remote::RemoteOptions::from_env), which [`open`] uses),
/// nothing process-wide. A local path is opened as [`open`] opens it.
///
/// ```no_run
/// use nc3pack::{remote::RemoteOptions, Dataset};
/// let opts = RemoteOptions::default().with_endpoint("http://127.0.0.1:9000").with_allow_http(true);
/// let ds = nc3pack::open_with("s3://bucket/sst.nc3z", &opts)?;
/// println!("{} variables", ds.header().var_count());
/// # Ok::<(), nc3pack::Error>(())
/// ```
///
/// # Errors
///
/// As [`open`]; [`Error::Remote`](crate::Error::Remote) naming the URL when it cannot be read.
#[cfg(feature = "remote")]
pub fn open_with(
    path: impl AsRef<Path>,
    remote: &crate::remote::RemoteOptions,
) -> Result<Box<dyn Dataset>> {
    let path = path.as_ref();
    let f = crate::read::input::open_input_with(path, Some(remote), "random access")?;
    open_dataset(f, path)
}

/// The dataset `f` (opened from `path`) holds: an archive or a netCDF-3 file, told apart by
/// content.
fn open_dataset(f: Input, path: &Path) -> Result<Box<dyn Dataset>> {
    if is_archive(&f) {
        Ok(Box::new(Archive::from_input(f, path)?))
    } else {
        Ok(Box::new(NcFile::from_reader(f, path)?))
    }
}

/// Whether `r` starts with the archive magic ([`crate::format::LEAD_MAGIC`]): how [`open`]
/// tells an archive from a netCDF-3 file. A file too short to hold it, or that cannot be read,
/// is not an archive.
///
/// ```
/// let f = std::fs::File::open("samples/gridded_sst.nc")?;
/// assert!(!nc3pack::is_archive(&f));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn is_archive(r: &impl ReadAt) -> bool {
    let mut magic = [0u8; 8];
    r.read_exact_at(&mut magic, 0).is_ok() && magic == crate::format::LEAD_MAGIC
}

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
/// let f = nc3pack::testing::open_seekable("samples/scalars.nc".as_ref(), "reading").unwrap();
/// let e = nc3pack::testing::open_seekable("/dev/null".as_ref(), "reading").unwrap_err();
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

/// [`crate::format::compact::Expanded::new`] with the error of opening an archive: a compact lead that does not decode
/// is [`crate::Error::Archive`] naming the lead, an I/O error names `path`.
pub(crate) fn open_expanded<R: ReadAt>(
    r: R,
    path: &Path,
) -> Result<crate::format::compact::Expanded<R>> {
    crate::format::compact::Expanded::new(r).map_err(|e| {
        match e
            .get_ref()
            .and_then(|e| e.downcast_ref::<crate::error::LeadError>())
        {
            Some(lead) => crate::Error::Archive {
                path: path.to_path_buf(),
                part: "lead",
                offset: 0,
                source: lead.clone().into(),
            },
            None => io_err(path, "read")(e),
        }
    })
}
