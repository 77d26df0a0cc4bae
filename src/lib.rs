//! # nc3pack
//!
//! Block-compressed archives of netCDF-3 files (CDF-1, CDF-2, CDF-5) that unpack to the original
//! bytes and can be read block by block. Unix only (Linux: `pread`, POSIX signals, `syncfs`).
//!
//! # The public API
//!
//! What users may rely on is what this page lists: the items re-exported at the crate root and
//! the public modules. Everything else is internal and may change in any release: the hidden
//! `__private` module (what the fuzz targets reach) and `testing` (the test seams of the
//! crate's own tests, benchmarks and doc examples, compiled only with the feature `testing`).
//!
//! **Packing.** [`pack_file`] packs a netCDF-3 file into an archive, [`pack_reader`] one that
//! arrives on a pipe, [`Packer`] either into any writer (memory, an upload); [`PackOptions`] (presets [`PackOptions::fast`], the default, and
//! [`PackOptions::max`]) carries codec, level, block size, filter mode ([`FilterMode`]),
//! threads, whether to overwrite and a [`Progress`] callback; [`PackSummary`] is the result.
//! Codec, filter and filter-mode names parse with [`FromStr`](std::str::FromStr) (error:
//! [`ParseNameError`]).
//!
//! ```no_run
//! use nc3pack::{format::Codec, pack_file, FilterMode, PackOptions};
//! let opts = PackOptions::max()
//!     .with_codec("deflate".parse::<Codec>()?)
//!     .with_filter("auto".parse::<FilterMode>()?)
//!     .with_force(true)
//!     .with_progress(|n| eprintln!("{n} bytes read"));
//! let summary = pack_file("in.nc".as_ref(), "out.nc3z".as_ref(), &opts)?;
//! println!("{} -> {} bytes", summary.input_len, summary.output_len);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **Collections.** [`pack_collection`] packs many files (and the netCDF files found in
//! directories) into a directory or an S3 prefix, in parallel, resumable, with a manifest, as
//! `nc3pack pack IN... -o OUT` does; [`CollectionOptions`] (shard, manifest, root, deleting the
//! inputs once proven, a progress callback), [`CollectionReport`]; [`verify_collection`]
//! verifies what the manifests list. See the [`collection`] module.
//!
//! ```no_run
//! let opts = nc3pack::CollectionOptions::default().with_threads(8);
//! let report = nc3pack::pack_collection(&["data"], "archives".as_ref(), &opts)?;
//! assert!(report.is_ok(), "{:?}", report.failures);
//! # Ok::<(), nc3pack::Error>(())
//! ```
//!
//! **Unpacking.** [`unpack_file`] restores the original file (checked by hash before it is
//! renamed into place), [`unpack_to_writer`] writes it to a stream; [`UnpackOptions`] carries
//! force, threads and progress.
//!
//! ```no_run
//! use nc3pack::{unpack_file, UnpackOptions};
//! let n = unpack_file("out.nc3z".as_ref(), "back.nc".as_ref(), &UnpackOptions::default())?;
//! # Ok::<(), nc3pack::Error>(())
//! ```
//!
//! **Reading.** [`open`] opens an archive or an original file (told apart by [`is_archive`])
//! as a [`Dataset`]: hyperslab reads ([`Hyperslab`], netCDF's start/count/stride) typed
//! ([`Element`]), dynamically typed or raw. [`Archive`] (an archive, with its block cache: [`CacheStats`], [`DEFAULT_CACHE_BYTES`])
//! and [`NcFile`] (an original file) are the two datasets, over any [`ReadAt`] source.
//! [`dump::write_slice`] prints a hyperslab as `nc3pack slice` does.
//!
//! ```no_run
//! use nc3pack::Dataset;
//! let ds = nc3pack::open("out.nc3z")?;
//! let slab = ds.slab("sst", Some(&[0, 100, 20]), Some(&[1, 1, 3]), None)?;
//! let values: Vec<f32> = ds.read("sst", &slab)?;
//! nc3pack::dump::write_slice(&*ds, "sst", &slab, nc3pack::dump::Format::Text, std::io::stdout())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **Object storage** (the `remote` feature). Where a path is read, an `s3://`, `http(s)://`
//! or `file://` URL may be given. How it is reached ([`remote::RemoteOptions`]: credentials,
//! endpoint, region, anonymous access) travels with each call: [`open_with`],
//! [`Archive::open_url`], `with_remote` on [`UnpackOptions`], [`VerifyOptions`],
//! [`info::InfoOptions`] and [`CollectionOptions`], [`collection::verify_collection_with`]. A
//! call given none reads [`remote::RemoteOptions::from_env`] then; nothing is process-wide.
//!
//! **Checking and repairing.** [`verify`] checks every checksum and the restored data's hash
//! ([`VerifyOptions`]: an original to compare with, threads; [`VerifyReport`], [`Damage`]);
//! [`reindex`] rebuilds a damaged archive's index ([`ReindexOptions`], [`ReindexReport`]);
//! [`info::describe`] describes either kind of file ([`info::Info`], which serializes to the
//! JSON of `nc3pack info --json`).
//!
//! ```no_run
//! let report = nc3pack::verify("out.nc3z".as_ref(), &nc3pack::VerifyOptions::default())?;
//! assert!(report.is_intact());
//! let text = nc3pack::info::describe("out.nc3z".as_ref())?.to_text("out");
//! # Ok::<(), nc3pack::Error>(())
//! ```
//!
//! **Errors.** [`Error`] (with [`Result`]), [`HeaderError`], [`SlabError`], and the
//! [`error`] module.
//!
//! **The format.** [`format`](mod@format) holds the archive format's documented constants and structures
//! (design/FORMAT.md), [`nc3`] the netCDF-3 header model and layout.
//!
//! **Signals.** [`cleanup::install_signal_handlers`] makes Ctrl-C and friends remove the
//! temporary outputs of operations in progress (the command line calls it first).
//!
//! Thread counts are bounded to 1..=[`MAX_THREADS`]; [`DEFAULT_BLOCK_SIZE`] is 1 MiB.
//!
//! # Building
//!
//! This library is the package `nc3pack-lib`, whose crate is named `nc3pack`:
//!
//! ```toml
//! [dependencies]
//! nc3pack-lib = { version = "0.1", features = ["remote"] }   # then `use nc3pack::...`
//! ```
//!
//! No feature is on by default. `remote` reads and writes `s3://` and `http(s)://` URLs
//! (object_store, reqwest, rustls and a small tokio runtime), `mount` is [`mount`] (fuser) and
//! `serve` is [`serve`] (hyper on tokio). The command line is the package `nc3pack` (`cargo
//! install nc3pack`): its arguments, progress bars and printed lines, and the crates only they
//! use (`clap`, `anyhow`, `indicatif`), are that package's, not this library's.

#![warn(missing_docs)]

// pread (`FileExt::read_exact_at`), POSIX signal handlers and `syncfs` (Linux's) have no
// portable fallback here: say so at compile time instead of with a wall of missing-item errors.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
compile_error!(
    "nc3pack supports Unix only, and builds on Linux (and Android): it uses pread, POSIX signal \
     handlers and syncfs"
);

// The public API: the modules below that are `pub`, and what the crate root re-exports.
mod atomic;
pub mod cleanup;
mod codec;
pub mod collection;
pub mod dump;
pub mod error;
pub mod format;
pub mod info;
mod io;
mod kept;
#[cfg(all(feature = "mount", target_os = "linux"))]
pub mod mount;
pub mod nc3;
mod options;
mod pack;
mod parallel;
#[cfg(any(feature = "remote", feature = "serve"))]
mod percent;
pub mod quantize;
mod read;
#[cfg(feature = "remote")]
pub mod remote;
mod repair;
#[cfg(feature = "serve")]
pub mod serve;
pub mod vars;
mod verify;

pub use codec::FilterMode;
pub use collection::{
    pack_collection, verify_collection, CollectionOptions, CollectionReport,
    VerifyCollectionOptions,
};
pub use error::{Error, HeaderError, Result};
pub use io::{is_url, ReadAt};
pub use nc3::slab::{Hyperslab, SlabError};
pub use options::{ParseNameError, Progress, ReindexOptions, UnpackOptions, VerifyOptions};

pub use pack::{
    pack_file, pack_reader, PackOptions, PackSummary, Packer, DEFAULT_BLOCK_SIZE,
    LARGE_RECORD_BLOCKS_MAX, MAX_PRESET_BLOCK_SIZE,
};
#[cfg(feature = "remote")]
pub use pack::{pack_reader_to_url, pack_to_url};
pub use parallel::MAX_THREADS;
pub use read::archive::{Archive, CachePolicy, DEFAULT_CACHE_BYTES};
pub use read::cache::CacheStats;
#[cfg(feature = "remote")]
pub use read::open_with;
pub use read::original::{OriginalCursor, OriginalReader};
pub use read::unpack::{unpack_file, unpack_to_writer};
pub use read::Input;
pub use read::{is_archive, open, Dataset, DimInfo, Element, NcFile, VarInfo};
pub use repair::{reindex, ConstantsProblem, ReindexReport, ScanProblem, Scanned};
pub use verify::{verify, Damage, Problem, SharedError, VerifyReport};

/// Internals the fuzz targets reach (they build the library without its test seams): the
/// frame scan that `reindex` and `verify` run (`scan`, `scanned_constants`, `streams_with`),
/// one payload's decoders (`decode_payload`, `member_decode`) and unpacking into any writer
/// with a thread count (`unpack_to`), fed hostile bytes in memory. Not part of the API: anything
/// here may change or go in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::codec::{decode_payload, member_decode};
    pub use crate::format::streams::streams_with;
    pub use crate::read::unpack::unpack_to;
    pub use crate::repair::{scan, scanned_constants};
}

/// Test seams (feature `testing`, which the crate's own tests, benchmarks and doc examples turn
/// on): internals reachable for what the public API does not do and should not promise. Not
/// part of the API: anything here may change or go in any release.
///
/// - The codec kernels (`Encoder`, `decode_payload`, the filters' `*_payload` and
///   `apply_`/`undo_` functions, `shuffle`, `member_*`, `NumKind`, the levels):
///   `benches/read.rs` times each decoder alone, and their doc examples run through here; the
///   public way to a block is an [`Archive`].
/// - `plan`, `pack_all`, `Outcome`, `manifest`: the steps of [`collection::pack_collection`],
///   with seams tests need to make a run fail or race deterministically (a record step that
///   fails or changes an input between verification and deletion).
/// - `pack_stream`, `Source`: packing a reader whose bytes end before the layout's.
/// - `ordered_map`, `WorkerError`: a test of a worker thread that cannot start.
/// - The rest (`write_to_temp`, `Sink`, `bound_threads`, `SpawnError`, `BlockCache`, `Block`,
///   `Pieces`, `open_seekable`, ...): crate helpers whose doc examples run through here.
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing {
    pub use crate::__private::*;
    pub use crate::atomic::write_to_temp;
    pub use crate::codec::pcodec::NumKind;
    pub use crate::codec::{
        apply_filter, apply_lorenzo, context_payload, decode_payload_into, default_level,
        fit_payload, mask_payload, max_level, member_encode, plane_payload, shuffle, undo_filter,
        undo_lorenzo, unshuffle, ConstantBlock, DecodeScratch, Encoded, Encoder,
    };
    pub use crate::collection::batch::{pack_all, plan, BatchPlan, Found, Outcome, Shard};
    pub use crate::collection::manifest;
    pub use crate::format::streams::streams;
    pub use crate::nc3::slab::Pieces;
    pub use crate::pack::writer::Sink;
    pub use crate::pack::{pack_stream, Source};
    pub use crate::parallel::{bound_threads, ordered_map, SpawnError, WorkerError};
    pub use crate::read::cache::{Block, BlockCache};
    pub use crate::read::open_seekable;
    pub use crate::repair::{scan_for, Scan, ScannedConstants};
}
