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
mod ncfile;
pub(crate) mod slab;
pub(crate) mod unpack;

pub use dataset::{Dataset, DimInfo, Element, VarInfo};
pub use ncfile::NcFile;

use crate::error::Result;
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
    let f = crate::io::open_input(path, "random access")?;
    let mut magic = [0u8; 8];
    if f.read_exact_at(&mut magic, 0).is_ok() && magic == crate::format::LEAD_MAGIC {
        Ok(Box::new(Archive::from_reader(f, path)?))
    } else {
        Ok(Box::new(NcFile::from_reader(f, path)?))
    }
}
