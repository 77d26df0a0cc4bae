//! [`NcFile`]: an original netCDF-3 file read through the [`Dataset`] API.

use super::dataset::Dataset;
use crate::error::{Error, Result};
use crate::io::ReadAt;
use crate::nc3::{self, Header, Layout};
use std::path::{Path, PathBuf};

/// An original netCDF-3 file opened for reading through the [`Dataset`] API (positional reads,
/// no cache beyond the operating system's).
///
/// ```no_run
/// use nc3pack::{Dataset, NcFile};
/// let f = NcFile::open("samples/gridded_sst.nc")?;
/// let lat: Vec<f32> = f.read("lat", &f.slab("lat", None, None, None)?)?;
/// # Ok::<(), nc3pack::Error>(())
/// ```
pub struct NcFile<R: ReadAt = std::fs::File> {
    path: PathBuf,
    reader: R,
    /// The header, which holds its bytes.
    header: Header,
    layout: Layout,
}

impl NcFile<std::fs::File> {
    /// Opens the netCDF-3 file at `path`.
    ///
    /// ```
    /// use nc3pack::Dataset;
    /// let nc = nc3pack::NcFile::open("samples/no_variables.nc")?;
    /// assert!(nc.variables().is_empty());
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Io`](crate::Error) when `path` cannot be opened or is not a regular file; a
    /// header or layout error naming the field and offset when it is not a valid netCDF-3 file.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let f = crate::read::open_seekable(path, "reading a netCDF-3 file")?;
        NcFile::from_reader(f, path)
    }
}

impl<R: ReadAt> NcFile<R> {
    /// The error of a read of `len` bytes at `offset` of the file: one that found the end of a
    /// file now shorter than when it was opened says so, with both lengths.
    fn read_err(&self, offset: u64, len: usize) -> impl FnOnce(std::io::Error) -> Error + '_ {
        crate::error::read_err(&self.path, &self.reader, self.layout.file_len, offset, len)
    }

    /// Opens a netCDF-3 file from any positional reader; `path` names it in errors.
    ///
    /// ```
    /// use nc3pack::Dataset;
    /// let bytes = std::fs::read("samples/no_variables.nc").unwrap();
    /// let nc = nc3pack::NcFile::from_reader(bytes, "in-memory".as_ref())?;
    /// assert!(nc.variables().is_empty());
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`NcFile::open`]: a read error, or a header or layout that is not valid netCDF-3,
    /// named with `path`.
    pub fn from_reader(reader: R, path: &Path) -> Result<Self> {
        let (header, _, layout) = nc3::open(&reader, path)?;
        Ok(NcFile {
            path: path.to_path_buf(),
            reader,
            header,
            layout,
        })
    }

    /// The header's bytes.
    ///
    /// ```
    /// let f = nc3pack::NcFile::open("samples/scalars.nc")?;
    /// let b = std::fs::read("samples/scalars.nc")?;
    /// assert!(f.header_bytes().starts_with(b"CDF\x01"));
    /// assert_eq!(f.header_bytes().len() as u64, nc3pack::nc3::Header::parse(&b, b.len() as u64)?.len());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn header_bytes(&self) -> &[u8] {
        self.header.bytes()
    }
}

impl<R: ReadAt> Dataset for NcFile<R> {
    fn path(&self) -> &Path {
        &self.path
    }
    fn header(&self) -> &Header {
        &self.header
    }
    fn layout(&self) -> &Layout {
        &self.layout
    }
    fn read_runs(&self, v: usize, runs: &[(u64, u64)], out: &mut [u8]) -> Result<()> {
        let lv = &self.layout.vars[v];
        // Small records: read the file a window at a time instead of one read per record.
        const WINDOW: u64 = 1 << 20;
        let windowed = lv.is_record && self.layout.recsize <= WINDOW / 16;
        // The file byte just past the last piece: windows never read beyond it.
        let span_end = runs.last().map_or(0, |&(off, len)| {
            let last = off + len - 1;
            if lv.is_record {
                lv.begin + (last / lv.slab) * self.layout.recsize + last % lv.slab + 1
            } else {
                lv.begin + last + 1
            }
        });
        let mut win: Vec<u8> = Vec::new();
        let mut win_start = 0u64;
        // Pending positional read: (file offset, out offset, len), extended while contiguous.
        let mut pending: Option<(u64, usize, usize)> = None;
        let flush = |p: Option<(u64, usize, usize)>, out: &mut [u8]| -> Result<()> {
            if let Some((f, o, n)) = p {
                self.reader
                    .read_exact_at(&mut out[o..o + n], f)
                    .map_err(self.read_err(f, n))?;
            }
            Ok(())
        };
        let mut out_at = 0usize;
        for &(off, len) in runs {
            let mut off = off;
            let mut left = len;
            while left > 0 {
                let (file_off, piece) = if lv.is_record {
                    let (r, within) = (off / lv.slab, off % lv.slab);
                    (
                        lv.begin + r * self.layout.recsize + within,
                        left.min(lv.slab - within),
                    )
                } else {
                    (lv.begin + off, left)
                };
                let n = piece as usize;
                if windowed && piece < WINDOW {
                    if file_off < win_start || file_off + piece > win_start + win.len() as u64 {
                        win_start = file_off;
                        win.resize(WINDOW.min(span_end - file_off).max(piece) as usize, 0);
                        self.reader
                            .read_exact_at(&mut win, file_off)
                            .map_err(self.read_err(file_off, win.len()))?;
                    }
                    let at = (file_off - win_start) as usize;
                    out[out_at..out_at + n].copy_from_slice(&win[at..at + n]);
                } else {
                    match &mut pending {
                        Some((f, o, pn)) if *f + *pn as u64 == file_off && *o + *pn == out_at => {
                            *pn += n
                        }
                        _ => {
                            flush(pending.take(), out)?;
                            pending = Some((file_off, out_at, n));
                        }
                    }
                }
                out_at += n;
                off += piece;
                left -= piece;
            }
        }
        flush(pending, out)
    }
}
