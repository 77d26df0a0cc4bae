//! netCDF-3 files: the header model and parser ([`Header`]), and where data lies ([`Layout`]).
//!
//! ```no_run
//! let f = std::fs::File::open("samples/classic_records.nc").unwrap();
//! let (header, _bytes) = nc3pack::nc3::read_header(&f, "samples/classic_records.nc".as_ref()).unwrap();
//! println!("{} variables", header.var_count());
//! ```

mod header;
mod layout;
mod records;

pub use header::{
    Attr, Attribute, Dim, Header, NcType, NumRecs, ParseError, Values, Var, Variant,
    MAX_HEADER_LEN, NC_ATTRIBUTE, NC_DIMENSION, NC_VARIABLE,
};
pub use layout::{Layout, Segment, Target, VarLayout, Walk};
pub use records::RecordPattern;
pub(crate) use records::{gather, scatter};

use crate::error::{io_err, Error, Result};
use crate::io::ReadAt;
use std::io::Read;
use std::path::Path;

/// The HDF5 signature, which starts every netCDF-4 file.
const HDF5_MAGIC: &[u8; 8] = b"\x89HDF\r\n\x1a\n";

/// Why `start`, the first bytes of a file (all of them if `complete`), cannot be the start of a
/// netCDF-3 file: the HDF5 signature (netCDF-4), or no "CDF" magic. `None` when it can, or when
/// more bytes are needed to tell.
fn magic_problem(start: &[u8], complete: bool) -> Option<String> {
    if start.starts_with(HDF5_MAGIC) {
        return Some("it is an HDF5 file (netCDF-4 or HDF5); nc3pack reads netCDF-3 only".into());
    }
    if (start.len() >= 3 || complete) && !start.starts_with(b"CDF") {
        let shown: String = start.iter().take(4).map(|b| format!("{b:02x}")).collect();
        return Some(format!(
            "bad magic at byte 0: expected \"CDF\" then 1, 2 or 5, found bytes {shown}"
        ));
    }
    None
}

/// Reads and parses the header of the netCDF-3 file `r` (named `path` in errors). Returns the
/// header and its bytes. Reads only as much as the header needs, starting with 64 KiB.
pub fn read_header(r: &impl ReadAt, path: &Path) -> Result<(Header, Vec<u8>)> {
    let file_len = r.size().map_err(io_err(path, "stat"))?;
    let not_nc3 = |reason: String| Error::NotNetcdf3 {
        path: path.to_path_buf(),
        reason,
    };
    if file_len == 0 {
        return Err(not_nc3("the file is empty".into()));
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
                return Err(Error::Header {
                    path: path.to_path_buf(),
                    source: crate::HeaderError::new(want, "header is truncated"),
                })
            }
            Err(ParseError::Bad(e)) => {
                return Err(Error::Header {
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
pub fn read_header_stream(r: &mut impl std::io::Read, path: &Path) -> Result<(Header, Vec<u8>)> {
    let not_nc3 = |reason: String| Error::NotNetcdf3 {
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
            return Err(not_nc3("the input is empty".into()));
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
                    "header is truncated".to_string()
                } else {
                    format!("header is longer than {} bytes", MAX_HEADER_LEN)
                };
                return Err(Error::Header {
                    path: path.to_path_buf(),
                    source: crate::HeaderError::new(n.min(buf.len() as u64), what),
                });
            }
            Err(ParseError::Bad(e)) => {
                return Err(Error::Header {
                    path: path.to_path_buf(),
                    source: e,
                })
            }
        }
    }
}

/// Reads the header and computes the layout of a netCDF-3 file.
pub fn open(r: &impl ReadAt, path: &Path) -> Result<(Header, Vec<u8>, Layout)> {
    let (h, bytes) = read_header(r, path)?;
    let file_len = r.size().map_err(io_err(path, "stat"))?;
    let layout = Layout::new(&h, file_len).map_err(|source| Error::Layout {
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
        assert_eq!(magic_problem(b"CDF\x01\0\0\0\0", true), None);
        // Too short to tell while more may come; refused once the input is complete.
        assert_eq!(magic_problem(b"CD", false), None);
        assert!(magic_problem(b"CD", true)
            .unwrap()
            .contains("found bytes 4344"));
        assert!(magic_problem(b"CDX\x01", false)
            .unwrap()
            .contains("found bytes 43445801"));
        let hdf5 = magic_problem(b"\x89HDF\r\n\x1a\n....", false).unwrap();
        assert!(hdf5.contains("HDF5"), "{hdf5}");
    }
}
