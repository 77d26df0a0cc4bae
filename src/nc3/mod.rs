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
mod parse;
mod range;
mod records;
pub(crate) mod slab;
mod write;

pub use header::{
    header_limit, parse_header_limit, Attr, Attribute, Dim, Header, NcType, NumRecs, Values, Var,
    Variant, DEFAULT_HEADER_LIMIT, HEADER_LIMIT_ENV, MAX_HEADER_LEN, NC_ATTRIBUTE, NC_DIMENSION,
    NC_VARIABLE,
};
pub use layout::{Layout, Segment, Target, VarLayout, Walk};
pub use parse::ParseError;
pub use range::Span;
pub use records::RecordPattern;
pub(crate) use records::{gather, scatter};
pub use write::{NewAttr, NewHeader, NewVar, VarPlace, WriteError};

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

/// Why `start`, the first bytes of a file (all of them if `complete`), cannot be the start of a
/// netCDF-3 file: the HDF5 signature (netCDF-4), or no "CDF" magic. `None` when it can, or when
/// more bytes are needed to tell.
fn magic_problem(start: &[u8], complete: bool) -> Option<NotNetcdf3> {
    if start.starts_with(HDF5_MAGIC) {
        return Some(NotNetcdf3::Hdf5);
    }
    if (start.len() >= 3 || complete) && !start.starts_with(b"CDF") {
        return Some(NotNetcdf3::BadMagic {
            found: start.iter().take(4).copied().collect(),
        });
    }
    None
}

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
        if let Some(reason) = magic_problem(&buf, true) {
            return Err(not_nc3(reason));
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
        if let Some(reason) = magic_problem(&buf, eof) {
            return Err(not_nc3(reason));
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

#[cfg(test)]
mod tests {
    use super::magic_problem;

    #[test]
    fn magic_sniff() {
        use super::NotNetcdf3;
        assert_eq!(magic_problem(b"CDF\x01\0\0\0\0", true), None);
        // Too short to tell while more may come; refused once the input is complete.
        assert_eq!(magic_problem(b"CD", false), None);
        assert_eq!(
            magic_problem(b"CD", true),
            Some(NotNetcdf3::BadMagic {
                found: b"CD".to_vec()
            })
        );
        assert_eq!(
            magic_problem(b"CDX\x01\x02", false),
            Some(NotNetcdf3::BadMagic {
                found: b"CDX\x01".to_vec()
            })
        );
        assert_eq!(
            magic_problem(b"\x89HDF\r\n\x1a\n....", false),
            Some(NotNetcdf3::Hdf5)
        );
    }
}
