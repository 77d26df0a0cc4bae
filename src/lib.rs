//! # nc3pack
//!
//! Block-compressed archives of netCDF-3 files (CDF-1, CDF-2, CDF-5) that unpack to the original
//! bytes and can be read block by block.
//!
//! The data path, one module a stage: [`nc3`] parses the netCDF-3 header and computes where each
//! variable's data lies; [`streams`] says which stream of the archive holds which bytes;
//! [`route`] reads the file once and cuts its bytes into the streams' blocks; [`pack`] compresses
//! them with [`codec`] on all cores into frames laid out as [`format`] specifies, which
//! [`writer`] writes with the index (constant blocks in the index only); [`archive`] opens an archive
//! and decodes blocks through one LRU [`cache`]; [`read`] serves hyperslab reads ([`slab`]) from an
//! archive or an original file alike; [`unpack`] restores the original file; [`info`] describes
//! either kind of file.
//!
//! ```no_run
//! use nc3pack::{pack_file, unpack_file, PackOptions};
//! pack_file("in.nc".as_ref(), "out.nc3z".as_ref(), &PackOptions::default())?;
//! unpack_file("out.nc3z".as_ref(), "back.nc".as_ref(), &nc3pack::UnpackOptions::default().with_threads(2))?;
//! # Ok::<(), nc3pack::Error>(())
//! ```

#![warn(missing_docs)]

// pread (`FileExt::read_exact_at`), POSIX signal handlers and `syncfs` (Linux's) have no
// portable fallback here: say so at compile time instead of with a wall of missing-item errors.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
compile_error!(
    "nc3pack supports Unix only, and builds on Linux (and Android): it uses pread, POSIX signal \
     handlers and syncfs"
);

pub mod archive;
pub mod atomic;
pub mod batch;
pub mod cache;
pub mod cleanup;
pub mod codec;
pub mod dump;
pub mod error;
pub mod format;
pub mod info;
pub mod io;
pub mod nc3;
pub mod options;
pub mod pack;
pub mod parallel;
pub mod read;
pub mod repair;
pub mod route;
pub mod slab;
pub mod streams;
pub mod unpack;
pub mod writer;

pub use archive::Archive;
pub use error::{Error, HeaderError, Result};
pub use options::{ParseNameError, Progress, UnpackOptions};
pub use pack::{pack_file, pack_reader, PackOptions, PackSummary};
pub use parallel::MAX_THREADS;
pub use read::{open, Dataset, DimInfo, Element, NcFile, VarInfo};
pub use slab::{Hyperslab, SlabError};
pub use unpack::{unpack_file, unpack_to_writer};
