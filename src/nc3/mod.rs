//! netCDF-3 files: the header model and parser ([`Header`]), and where data lies ([`Layout`]).
//!
//! ```no_run
//! let f = std::fs::File::open("samples/classic_records.nc").unwrap();
//! let (header, _bytes) = nc3pack::nc3::read_header(&f, "samples/classic_records.nc".as_ref()).unwrap();
//! println!("{} variables", header.var_count());
//! ```

pub mod error;
mod header;
mod layout;

pub use header::{
    Attr, Attribute, Dim, Header, NcType, NumRecs, ParseError, Values, Var, Variant,
    MAX_HEADER_LEN, NC_ATTRIBUTE, NC_DIMENSION, NC_VARIABLE,
};
pub use layout::{Layout, RecordPattern, Segment, Target, VarLayout, Walk};

use crate::io::ReadAt;
use error::{FileError, HeaderError, HeaderProblem, NotNetcdf3};
use std::io::Read;
use std::path::Path;

/// Attaches a path and operation to an I/O error.
fn io_err<'a>(path: &'a Path, op: &'static str) -> impl FnOnce(std::io::Error) -> FileError + 'a {
    move |source| FileError::Io {
        path: path.to_path_buf(),
        op,
        source,
    }
}

/// The HDF5 signature, which starts every netCDF-4 file.
const HDF5_MAGIC: &[u8; 8] = b"\x89HDF\r\n\x1a\n";

/// Reads and parses the header of the netCDF-3 file `r` (named `path` in errors). Returns the
/// header and its bytes. Reads only as much as the header needs, starting with 64 KiB.
///
/// # Errors
///
/// A [`FileError`] naming the file: the read error, not a netCDF-3 file, a malformed header.
///
/// ```
/// let f = std::fs::File::open("samples/scalars.nc").unwrap();
/// let (h, bytes) = nc3pack::nc3::read_header(&f, "samples/scalars.nc".as_ref()).unwrap();
/// assert_eq!((h.var_count(), bytes.len() as u64), (6, h.len()));
/// ```
pub fn read_header(r: &impl ReadAt, path: &Path) -> Result<(Header, Vec<u8>), FileError> {
    let file_len = r.size().map_err(io_err(path, "stat"))?;
    let not_nc3 = |reason: NotNetcdf3| FileError::NotNetcdf3 {
        path: path.to_path_buf(),
        reason,
    };
    if file_len == 0 {
        return Err(not_nc3(NotNetcdf3::EmptyFile));
    }
    let mut want = file_len.min(64 * 1024);
    loop {
        let mut buf = vec![0u8; want as usize];
        r.read_exact_at(&mut buf, 0).map_err(io_err(path, "read"))?;
        if buf.len() >= 8 && &buf[..8] == HDF5_MAGIC {
            return Err(not_nc3(NotNetcdf3::Hdf5));
        }
        if buf.len() < 3 || &buf[..3] != b"CDF" {
            return Err(not_nc3(NotNetcdf3::BadMagic {
                found: buf.iter().take(4).copied().collect(),
            }));
        }
        match Header::parse_prefix(&buf, file_len) {
            Ok(h) => {
                buf.truncate(h.len() as usize);
                return Ok((h, buf));
            }
            Err(ParseError::NeedMore(n)) if n > want && want < file_len => {
                want = n.max(want.saturating_mul(2)).min(file_len);
            }
            Err(ParseError::NeedMore(_)) => {
                return Err(FileError::Header {
                    path: path.to_path_buf(),
                    source: HeaderError::new(want, HeaderProblem::Truncated),
                })
            }
            Err(ParseError::Bad(e)) => {
                return Err(FileError::Header {
                    path: path.to_path_buf(),
                    source: e,
                })
            }
        }
    }
}

/// Reads and parses the header of a netCDF-3 file arriving on `r` (standard input, a pipe),
/// named `path` in errors. Returns the header and every byte read so far, which starts with the
/// header and may run past it. Reads only what the header needs, in 64 KiB steps, and never more
/// than [`MAX_HEADER_LEN`] bytes of header.
///
/// # Errors
///
/// A [`FileError`] naming the input: the read error, not a netCDF-3 file, a malformed or
/// truncated header, or one longer than [`MAX_HEADER_LEN`].
///
/// ```
/// let mut input = std::fs::File::open("samples/scalars.nc").unwrap();
/// let (h, read) = nc3pack::nc3::read_header_stream(&mut input, "-".as_ref()).unwrap();
/// assert!(read.len() as u64 >= h.len());
/// ```
pub fn read_header_stream(
    r: &mut impl std::io::Read,
    path: &Path,
) -> Result<(Header, Vec<u8>), FileError> {
    let not_nc3 = |reason: NotNetcdf3| FileError::NotNetcdf3 {
        path: path.to_path_buf(),
        reason,
    };
    let mut buf: Vec<u8> = Vec::new();
    let mut want = 64 * 1024u64;
    let mut eof = false;
    loop {
        if !eof && (buf.len() as u64) < want {
            let before = buf.len();
            std::io::Read::take(&mut *r, want - before as u64)
                .read_to_end(&mut buf)
                .map_err(io_err(path, "read"))?;
            eof = (buf.len() as u64) < want;
        }
        if buf.is_empty() {
            return Err(not_nc3(NotNetcdf3::EmptyInput));
        }
        if buf.len() >= 8 && &buf[..8] == HDF5_MAGIC {
            return Err(not_nc3(NotNetcdf3::Hdf5));
        }
        if (buf.len() >= 3 || eof) && !buf.starts_with(b"CDF") {
            return Err(not_nc3(NotNetcdf3::BadMagic {
                found: buf.iter().take(4).copied().collect(),
            }));
        }
        // Until the input ends, its length is unknown: let the parser ask for more.
        let len = if eof { buf.len() as u64 } else { u64::MAX };
        match Header::parse_prefix(&buf, len) {
            Ok(h) => return Ok((h, buf)),
            Err(ParseError::NeedMore(n)) if !eof && n <= MAX_HEADER_LEN => {
                want = n.max(want.saturating_mul(2)).min(MAX_HEADER_LEN);
            }
            Err(ParseError::NeedMore(n)) => {
                let what = if eof {
                    HeaderProblem::Truncated
                } else {
                    HeaderProblem::StreamTooLong
                };
                return Err(FileError::Header {
                    path: path.to_path_buf(),
                    source: HeaderError::new(n.min(buf.len() as u64), what),
                });
            }
            Err(ParseError::Bad(e)) => {
                return Err(FileError::Header {
                    path: path.to_path_buf(),
                    source: e,
                })
            }
        }
    }
}

/// Reads the header and computes the layout of a netCDF-3 file.
///
/// # Errors
///
/// As [`read_header`], and [`FileError::Layout`] when the layout the header declares is
/// impossible for the file.
///
/// ```
/// let f = std::fs::File::open("samples/scalars.nc").unwrap();
/// let (_, _, layout) = nc3pack::nc3::open(&f, "samples/scalars.nc".as_ref()).unwrap();
/// assert_eq!(layout.file_len, 560);
/// ```
pub fn open(r: &impl ReadAt, path: &Path) -> Result<(Header, Vec<u8>, Layout), FileError> {
    let (h, bytes) = read_header(r, path)?;
    let file_len = r.size().map_err(io_err(path, "stat"))?;
    let layout = Layout::new(&h, file_len).map_err(|source| FileError::Layout {
        path: path.to_path_buf(),
        source,
    })?;
    Ok((h, bytes, layout))
}
