//! [`Packer`]: packing from any reader, or a file, into any writer.

use super::{file_into, stream_into, PackOptions, PackSummary};
use crate::error::{io_err, Result};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// Packs netCDF-3 files into archives written to any writer (a `Vec<u8>` in a
/// [`std::io::Cursor`], a socket's buffer, an object-storage upload), from a reader or a file:
/// the archive is the one [`pack_file`](crate::pack_file) writes of the same bytes with the same
/// options. Unlike [`pack_file`](crate::pack_file), nothing is atomic: what was written before an
/// error stays in the writer (discard it).
///
/// ```
/// use nc3pack::{Packer, PackOptions};
/// let nc = std::fs::read("samples/classic_records.nc")?;
/// let mut archive = std::io::Cursor::new(Vec::new());
/// let packer = Packer::new(PackOptions::default()).with_names("records.nc", "records.nc3z");
/// let s = packer.pack(&nc[..], &mut archive)?;
/// assert_eq!(s.input_len, nc.len() as u64);
/// // It opens as an archive, whose original bytes are the file's.
/// let z = nc3pack::Archive::from_reader(archive.into_inner(), "records.nc3z".as_ref())?;
/// let mut back = Vec::new();
/// std::io::Read::read_to_end(&mut nc3pack::OriginalReader::new(z).cursor(), &mut back)?;
/// assert_eq!(back, nc);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Packer {
    opts: PackOptions,
    input: PathBuf,
    output: PathBuf,
}

impl Packer {
    /// A packer with these options (their `force` does not apply: there is no output file).
    /// Errors name the input `<input>` and the output `<output>` until
    /// [`Packer::with_names`] names them.
    ///
    /// ```
    /// let p = nc3pack::Packer::new(nc3pack::PackOptions::max());
    /// ```
    pub fn new(opts: PackOptions) -> Packer {
        Packer {
            opts,
            input: PathBuf::from("<input>"),
            output: PathBuf::from("<output>"),
        }
    }

    /// Names the input and the output in errors (and, for a quantized file, the temporary
    /// copy goes beside `output` when it is a path in a writable directory, else into the
    /// temporary directory).
    ///
    /// ```
    /// let p = nc3pack::Packer::new(Default::default()).with_names("in.nc", "out.nc3z");
    /// ```
    pub fn with_names(mut self, input: impl Into<PathBuf>, output: impl Into<PathBuf>) -> Packer {
        self.input = input.into();
        self.output = output.into();
        self
    }

    /// Packs the netCDF-3 file arriving on `reader` into `out`, in one pass (nothing is read
    /// twice, the reader never seeks), as [`pack_reader`](crate::pack_reader) does. `out` is
    /// written from its current position on, which is taken as the archive's start; the
    /// archive's index goes in last, so `out` must seek back to write the lead's offsets.
    ///
    /// # Errors
    ///
    /// As [`pack_reader`](crate::pack_reader): options out of range ([`Error::Option`](crate::Error::Option)),
    /// a header or layout error naming the input, a stream that ends early, a read or write
    /// error ([`Error::Io`](crate::Error::Io), naming the input or the output).
    pub fn pack<R: Read, W: Write + Seek + Send>(
        &self,
        reader: R,
        out: &mut W,
    ) -> Result<PackSummary> {
        self.opts.check()?;
        let progress = |n: u64| self.opts.progress.report(n);
        let mut at = Offset::new(out, &self.output)?;
        stream_into(
            reader,
            &self.input,
            &self.opts,
            &mut at,
            &self.output,
            &progress,
        )
    }

    /// Packs the netCDF-3 file `input` into `out`, reading it as [`pack_file`](crate::pack_file)
    /// does (at any offset, on several threads; a pipe or device is read as a stream).
    /// Errors name `input` (not the input name of [`Packer::with_names`]).
    ///
    /// ```
    /// let mut out = std::io::Cursor::new(Vec::new());
    /// let s = nc3pack::Packer::new(Default::default())
    ///     .pack_file("samples/gridded_sst.nc".as_ref(), &mut out)?;
    /// assert_eq!(s.output_len, out.get_ref().len() as u64);
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Packer::pack`], and [`Error::Io`](crate::Error::Io) when `input` cannot be opened.
    pub fn pack_file<W: Write + Seek + Send>(
        &self,
        input: &Path,
        out: &mut W,
    ) -> Result<PackSummary> {
        self.opts.check()?;
        let progress = |n: u64| self.opts.progress.report(n);
        let file = std::fs::File::open(input).map_err(io_err(input, "open"))?;
        let meta = file.metadata().map_err(io_err(input, "stat"))?;
        let mut at = Offset::new(out, &self.output)?;
        if meta.is_file() {
            file_into(file, input, &self.opts, &mut at, &self.output, &progress)
        } else {
            stream_into(file, input, &self.opts, &mut at, &self.output, &progress)
        }
    }
}

/// A writer seen from the position it was at: the packer writes an archive at offset 0.
struct Offset<'a, W> {
    inner: &'a mut W,
    start: u64,
}

impl<'a, W: Seek> Offset<'a, W> {
    fn new(inner: &'a mut W, name: &Path) -> Result<Offset<'a, W>> {
        let start = inner.stream_position().map_err(io_err(name, "seek"))?;
        Ok(Offset { inner, start })
    }
}

impl<W: Write> Write for Offset<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl<W: Seek> Seek for Offset<'_, W> {
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        let pos = match pos {
            std::io::SeekFrom::Start(n) => std::io::SeekFrom::Start(self.start + n),
            other => other,
        };
        let at = self.inner.seek(pos)?;
        at.checked_sub(self.start).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "seek before the archive's start",
            )
        })
    }
}
