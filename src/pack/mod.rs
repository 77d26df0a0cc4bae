//! Packing: netCDF-3 file in, .nc3z archive out (the bytes routed into blocks by
//! [`crate::pack::route`], the blocks encoded by [`crate::codec`] on all cores and written as they
//! finish).
//!
//! One pass over the input, in file order, with large sequential reads: every byte is hashed
//! and routed to the stream it belongs to (a variable's materialized data, the residual bytes,
//! or a shared stream for the small ones). When a stream has a full block, the block goes to a pool of encoder threads; a writer
//! thread appends finished frames in the order the blocks were routed (a bounded reorder window),
//! so the archive's bytes depend on the input and the options only, never on the thread count or
//! on which thread finished first. Memory stays bounded: a few blocks per thread in flight,
//! plus one open block per stream that is filling (one per record variable, since records
//! interleave them).

pub(crate) mod lossy;
mod packer;
pub(crate) mod route;
mod runs;
#[cfg(feature = "remote")]
mod upload;
mod var_plan;
pub(crate) mod writer;

use crate::atomic::Writeback;
use crate::codec::pcodec::NumKind;
use crate::codec::{Encoder, FilterMode};
use crate::error::{io_err, spawn_err, ArchiveError, CodecError, Error, OptionError, Result};
use crate::format::{self, Codec, Lead, FRAME_HEADER_LEN, LEAD_LEN};
use crate::nc3::{self, Header};
use crate::pack::writer::Sink;
use crate::parallel::spawn_scoped;
pub use packer::Packer;
pub use route::Source;
use route::{route, Routed, RoutedBlock};
use std::io::{BufWriter, Read, Seek, Write};
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};
#[cfg(feature = "remote")]
pub use upload::{pack_reader_to_url, pack_to_url};
use var_plan::{per_var, EncoderPlan};

/// Default nominal block size: 1 MiB of decoded data.
///
/// ```
/// assert_eq!(nc3pack::PackOptions::default().block_size(), nc3pack::DEFAULT_BLOCK_SIZE);
/// ```
pub const DEFAULT_BLOCK_SIZE: u32 = 1 << 20;

/// The block size the `max` preset gives variables larger than the nominal block size: 8 MiB,
/// xz -6's dictionary, so that lzma finds repeats up to that far apart (see
/// [`PackOptions::large_block_size`]).
///
/// ```
/// assert_eq!(nc3pack::PackOptions::max().large_block_size(), Some(nc3pack::MAX_PRESET_BLOCK_SIZE));
/// ```
pub const MAX_PRESET_BLOCK_SIZE: u32 = 8 << 20;

/// The `max` preset gives record variables large blocks only while their open blocks (one per
/// record variable, filled as records interleave) take at most this many bytes in all.
///
/// ```
/// // 32 record variables at most.
/// assert_eq!(nc3pack::LARGE_RECORD_BLOCKS_MAX, 32 * u64::from(nc3pack::MAX_PRESET_BLOCK_SIZE));
/// ```
pub const LARGE_RECORD_BLOCKS_MAX: u64 = 256 << 20;

/// How to pack: codec, level, block size, filters, threads, whether to overwrite, progress.
///
/// [`PackOptions::default`] is [`PackOptions::fast`]; [`PackOptions::max`] compresses more,
/// slowly, for cold archives. The `with_` methods change one option each.
///
/// ```
/// use nc3pack::{format::Codec, PackOptions};
/// let opts = PackOptions::default();
/// assert_eq!(opts.block_size(), 1 << 20);
/// assert_eq!(opts.codec(), Codec::Zstd);
/// let opts = PackOptions::max().with_codec(Codec::Deflate).with_threads(2).with_force(true);
/// assert_eq!((opts.level(), opts.threads(), opts.force()), (9, 2, true));
/// ```
#[derive(Debug, Clone)]
pub struct PackOptions {
    /// Codec for every block (blocks that do not shrink are stored raw).
    pub(crate) codec: Codec,
    /// Codec level.
    pub(crate) level: i32,
    /// Nominal block size in bytes of decoded data.
    pub(crate) block_size: u32,
    /// Larger blocks for large variables (the `max` preset: 8 MiB, see
    /// [`MAX_PRESET_BLOCK_SIZE`]): every variable larger than `block_size` without a block
    /// size of its own in [`PackOptions::vars`] gets blocks of this many bytes, record
    /// variables only while one such block each takes at most [`LARGE_RECORD_BLOCKS_MAX`] in
    /// all. `None` (the default, and after [`PackOptions::with_block_size`]): `block_size`.
    pub(crate) large_block_size: Option<u32>,
    /// Encoder threads (bounded to `1..=1024`); `None`: the number of cores, looked up only
    /// when a file needs more than one thread (the lookup reads several files, a noticeable
    /// part of packing one tiny file).
    pub(crate) threads: Option<usize>,
    /// How each block's filter is chosen.
    pub(crate) filter: FilterMode,
    /// Judge filters on whole blocks with the real codec (the `max` preset) instead of a sample.
    pub(crate) thorough: bool,
    /// Let each block use zstd level 1 when `level` does not pay on its sample (the `fast`
    /// preset).
    pub(crate) fast_blocks: bool,
    /// Let blocks of 16-, 32- and 64-bit numbers use the pco codec where it compresses better
    /// (on by default; only with `filter` [`FilterMode::Auto`] and a codec other than none).
    /// Archives without pco blocks are the ones earlier versions wrote, readable by them.
    pub(crate) pco: bool,
    /// Overwrite the output if it exists.
    pub(crate) force: bool,
    /// Called with the input bytes read so far.
    pub(crate) progress: crate::Progress,
    /// Per-variable settings (block size, codec, level, filter), in order: later rules override
    /// earlier ones, key by key (see [`crate::vars`]). A variable small enough to share a block
    /// with others (see design/FORMAT.md, Layout) is stored with the archive-wide settings.
    pub(crate) vars: Vec<crate::vars::VarRule>,
    /// Lossy quantization of the named `float`/`double` variables (empty: lossless, the
    /// default). See [`PackOptions::with_quantize`].
    pub(crate) quantize: Vec<crate::quantize::QuantizeRule>,
    /// Write the archive of a small file (at most [`format::compact::COMPACT_FILE_MAX`] bytes)
    /// in the compact form (format 1.2, or 1.3 where the header frame is smaller with the
    /// header dictionary; on by default; nc3pack versions before 1.2 refuse it).
    /// See [`PackOptions::with_compact`].
    pub(crate) compact: bool,
}

impl Default for PackOptions {
    fn default() -> Self {
        PackOptions::fast()
    }
}

impl PackOptions {
    /// The `fast` preset (the default): zstd level 3, or level 1 for the blocks where 3 does
    /// not pay on a sample; each block's filter judged on a sample.
    ///
    /// ```
    /// let fast = nc3pack::PackOptions::fast();
    /// assert_eq!((fast.level(), fast.thorough(), fast.fast_blocks()), (3, false, true));
    /// ```
    pub fn fast() -> Self {
        PackOptions {
            codec: Codec::Zstd,
            level: crate::codec::default_level(Codec::Zstd),
            block_size: DEFAULT_BLOCK_SIZE,
            large_block_size: None,
            threads: None,
            filter: FilterMode::Auto,
            thorough: false,
            fast_blocks: true,
            pco: true,
            force: false,
            progress: crate::Progress::default(),
            vars: Vec::new(),
            quantize: Vec::new(),
            compact: true,
        }
    }

    /// The `max` preset: zstd level 19, each block's filter judged on the whole block (also
    /// trying no filter and delta), lzma where it pays, and blocks of 8 MiB for variables
    /// larger than 1 MiB (see [`PackOptions::large_block_size`]). Slower to pack; blocks
    /// that use lzma are slower to decode, and reading one value decodes its whole block.
    ///
    /// ```
    /// let max = nc3pack::PackOptions::max();
    /// assert_eq!((max.level(), max.thorough(), max.fast_blocks()), (19, true, false));
    /// assert_eq!(max.large_block_size(), Some(8 << 20));
    /// ```
    pub fn max() -> Self {
        PackOptions {
            large_block_size: Some(MAX_PRESET_BLOCK_SIZE),
            level: crate::codec::max_level(Codec::Zstd),
            thorough: true,
            fast_blocks: false,
            ..PackOptions::fast()
        }
    }

    /// These options with `codec`, at the level of the preset they follow for it: the `max`
    /// level if `thorough`, else the default level (zstd 3 / 19, deflate 6 / 9, none 0).
    ///
    /// ```
    /// use nc3pack::{format::Codec, PackOptions};
    /// assert_eq!(PackOptions::fast().with_codec(Codec::Deflate).level(), 6);
    /// assert_eq!(PackOptions::max().with_codec(Codec::Deflate).level(), 9);
    /// ```
    pub fn with_codec(mut self, codec: Codec) -> Self {
        self.codec = codec;
        self.level = if self.thorough {
            crate::codec::max_level(codec)
        } else {
            crate::codec::default_level(codec)
        };
        self
    }

    /// These options at codec level `level` (checked when packing), with no per-block level.
    ///
    /// ```
    /// let o = nc3pack::PackOptions::fast().with_level(5);
    /// assert_eq!((o.level(), o.fast_blocks()), (5, false));
    /// ```
    pub fn with_level(mut self, level: i32) -> Self {
        self.level = level;
        self.fast_blocks = false;
        self
    }

    /// These options with the pco codec allowed for numeric blocks (`true`, the default) or not.
    ///
    /// ```
    /// assert!(!nc3pack::PackOptions::max().with_pco(false).pco());
    /// ```
    pub fn with_pco(mut self, on: bool) -> Self {
        self.pco = on;
        self
    }

    /// These options judging each block's filter on the whole block with the real codec
    /// (`true`, as the `max` preset does) or on a sample (`false`); the level is left as it is.
    ///
    /// ```
    /// let o = nc3pack::PackOptions::fast().with_thorough(true);
    /// assert!(o.thorough());
    /// assert_eq!(o.level(), 3);
    /// ```
    pub fn with_thorough(mut self, thorough: bool) -> Self {
        self.thorough = thorough;
        self
    }

    /// These options letting each block use zstd level 1 when the level does not pay on its
    /// sample (`true`, as the `fast` preset does) or not.
    ///
    /// ```
    /// assert!(!nc3pack::PackOptions::fast().with_fast_blocks(false).fast_blocks());
    /// ```
    pub fn with_fast_blocks(mut self, on: bool) -> Self {
        self.fast_blocks = on;
        self
    }

    /// These options with `block_size` decoded bytes per block, for every variable (no
    /// [`PackOptions::large_block_size`]; per-variable rules may still set their own).
    ///
    /// ```
    /// let o = nc3pack::PackOptions::max().with_block_size(65536);
    /// assert_eq!((o.block_size(), o.large_block_size()), (65536, None));
    /// ```
    pub fn with_block_size(mut self, block_size: u32) -> Self {
        self.block_size = block_size;
        self.large_block_size = None;
        self
    }

    /// These options choosing filters by `filter`.
    ///
    /// ```
    /// use nc3pack::{format::Filter, FilterMode};
    /// let o = nc3pack::PackOptions::fast().with_filter(FilterMode::Fixed(Filter::None));
    /// assert_eq!(o.filter().to_string(), "none");
    /// ```
    pub fn with_filter(mut self, filter: FilterMode) -> Self {
        self.filter = filter;
        self
    }

    /// These options with `threads` encoder threads.
    ///
    /// ```
    /// assert_eq!(nc3pack::PackOptions::fast().with_threads(1).threads(), 1);
    /// ```
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads);
        self
    }

    /// These options, overwriting the output if `force`.
    ///
    /// ```
    /// assert!(nc3pack::PackOptions::fast().with_force(true).force());
    /// ```
    pub fn with_force(mut self, force: bool) -> Self {
        self.force = force;
        self
    }

    /// These options, writing the archive of a file of at most
    /// [`format::compact::COMPACT_FILE_MAX`] bytes (16 KiB) in the compact form if `compact`
    /// (the default): the same frames, index and hashes with every field in as few bytes as
    /// its value needs, about 125 bytes smaller (design/FORMAT.md, "The compact form"; format
    /// 1.2, which nc3pack versions before it refuse). With `false`, or for larger files, the
    /// full form. A stream (a pipe) of at most 16 KiB is read whole and packed as the file of
    /// its bytes.
    ///
    /// ```
    /// assert!(nc3pack::PackOptions::default().compact());
    /// assert!(!nc3pack::PackOptions::fast().with_compact(false).compact());
    /// ```
    pub fn with_compact(mut self, compact: bool) -> Self {
        self.compact = compact;
        self
    }

    /// Whether the archives of small files are written in the compact form
    /// ([`PackOptions::with_compact`]).
    ///
    /// ```
    /// assert!(nc3pack::PackOptions::max().compact());
    /// ```
    pub fn compact(&self) -> bool {
        self.compact
    }

    /// These options, reporting the input bytes read so far to `f`.
    ///
    /// ```
    /// let o = nc3pack::PackOptions::fast().with_progress(|n| eprintln!("{n} bytes read"));
    /// # let _ = o;
    /// ```
    pub fn with_progress(mut self, f: impl Fn(u64) + Send + Sync + 'static) -> Self {
        self.progress = crate::Progress::new(f);
        self
    }

    /// These options with one more per-variable rule (applied after the ones already given).
    ///
    /// ```
    /// use nc3pack::{vars::VarRule, PackOptions};
    /// let o = PackOptions::fast()
    ///     .with_var("u,v:block-size=64KiB".parse::<VarRule>()?)
    ///     .with_var("time*:codec=none".parse::<VarRule>()?);
    /// assert_eq!(o.vars().len(), 2);
    /// # Ok::<(), nc3pack::vars::VarParseError>(())
    /// ```
    ///
    /// A name or glob that matches no variable of the file packed is an error then
    /// ([`crate::error::OptionError::NoSuchVar`], listing the file's variables).
    pub fn with_var(mut self, rule: crate::vars::VarRule) -> Self {
        self.vars.push(rule);
        self
    }

    /// These options, quantizing (lossy) the variables `rule` names before packing; may be given
    /// more than once, for different variables. The archive then holds a new netCDF-3 file: the
    /// original's header plus netCDF-C's and CF's quantization attributes (and the CF
    /// quantization variable), the quantized variables' values quantized as netCDF-C would, and
    /// the original's xxh3-128 and length in the global attribute
    /// [`crate::quantize::ORIGINAL_ATTR`]; unpacking restores that file.
    ///
    /// ```
    /// let o = nc3pack::PackOptions::fast()
    ///     .with_quantize("t*,u=bitround:10".parse().unwrap())
    ///     .with_quantize("p=granularbr:4".parse().unwrap());
    /// assert_eq!(o.quantize().len(), 2);
    /// ```
    ///
    /// # Errors
    ///
    /// None here; packing fails with [`Error::Option`] (a
    /// [`crate::quantize::QuantizeError`]) when a name or pattern matches no variable, a variable
    /// named is not `float` or `double`, its NSB/NSD is out of netCDF-C's range, or two rules
    /// name the same variable.
    pub fn with_quantize(mut self, rule: crate::quantize::QuantizeRule) -> Self {
        self.quantize.push(rule);
        self
    }

    /// Checks the options; the error names the bad value.
    ///
    /// ```
    /// assert!(nc3pack::PackOptions::fast().check().is_ok());
    /// assert!(nc3pack::PackOptions::fast().with_level(99).check().is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Option`] for a level outside the codec's range or a block size (or large
    /// block size) outside 8 B..=1 GiB.
    pub fn check(&self) -> Result<()> {
        crate::codec::check_level(self.codec, self.level).map_err(OptionError::from)?;
        for block_size in std::iter::once(self.block_size).chain(self.large_block_size) {
            if !(format::MIN_BLOCK_SIZE..=format::MAX_BLOCK_SIZE).contains(&block_size) {
                return Err(OptionError::BlockSize {
                    block_size,
                    min: format::MIN_BLOCK_SIZE,
                    max: format::MAX_BLOCK_SIZE,
                }
                .into());
            }
        }
        Ok(())
    }
}

/// Read access: each option as set (the getters are named as the options).
impl PackOptions {
    /// Codec for every block (blocks that do not shrink are stored raw).
    ///
    /// ```
    /// use nc3pack::{format::Codec, PackOptions};
    /// assert_eq!(PackOptions::fast().with_codec(Codec::Lzma).codec(), Codec::Lzma);
    /// ```
    pub fn codec(&self) -> Codec {
        self.codec
    }

    /// Codec level (checked when packing: [`PackOptions::check`]).
    ///
    /// ```
    /// assert_eq!(nc3pack::PackOptions::max().level(), 19);
    /// ```
    pub fn level(&self) -> i32 {
        self.level
    }

    /// Nominal block size in bytes of decoded data.
    ///
    /// ```
    /// assert_eq!(nc3pack::PackOptions::fast().with_block_size(4096).block_size(), 4096);
    /// ```
    pub fn block_size(&self) -> u32 {
        self.block_size
    }

    /// The block size of variables larger than [`PackOptions::block_size`] without one of
    /// their own (the `max` preset: [`MAX_PRESET_BLOCK_SIZE`]; record variables only while one
    /// such block each takes at most [`LARGE_RECORD_BLOCKS_MAX`] in all); `None`: the block
    /// size. [`PackOptions::with_block_size`] resets it.
    ///
    /// ```
    /// assert_eq!(nc3pack::PackOptions::fast().large_block_size(), None);
    /// assert_eq!(nc3pack::PackOptions::max().large_block_size(), Some(8 << 20));
    /// ```
    pub fn large_block_size(&self) -> Option<u32> {
        self.large_block_size
    }

    /// Encoder threads (bounded to `1..=1024` when packing); the default is the number of
    /// cores.
    ///
    /// ```
    /// assert_eq!(nc3pack::PackOptions::fast().with_threads(3).threads(), 3);
    /// ```
    pub fn threads(&self) -> usize {
        self.threads.unwrap_or_else(crate::options::default_threads)
    }

    /// How each block's filter is chosen.
    ///
    /// ```
    /// use nc3pack::{FilterMode, PackOptions};
    /// assert_eq!(PackOptions::fast().filter(), FilterMode::Auto);
    /// ```
    pub fn filter(&self) -> FilterMode {
        self.filter
    }

    /// Whether filters are judged on whole blocks with the real codec (the `max` preset)
    /// instead of a sample.
    ///
    /// ```
    /// assert!(nc3pack::PackOptions::max().thorough());
    /// ```
    pub fn thorough(&self) -> bool {
        self.thorough
    }

    /// Whether a block may use zstd level 1 when the level does not pay on its sample (the
    /// `fast` preset; off after [`PackOptions::with_level`]).
    ///
    /// ```
    /// assert!(nc3pack::PackOptions::fast().fast_blocks());
    /// assert!(!nc3pack::PackOptions::fast().with_level(3).fast_blocks());
    /// ```
    pub fn fast_blocks(&self) -> bool {
        self.fast_blocks
    }

    /// Whether blocks of 16-, 32- and 64-bit numbers may use the pco codec (on by default; only
    /// with [`FilterMode::Auto`] and a codec other than none).
    ///
    /// ```
    /// assert!(nc3pack::PackOptions::fast().pco());
    /// ```
    pub fn pco(&self) -> bool {
        self.pco
    }

    /// Whether an existing output is overwritten.
    ///
    /// ```
    /// assert!(!nc3pack::PackOptions::fast().force());
    /// ```
    pub fn force(&self) -> bool {
        self.force
    }

    /// The callback given the input bytes read so far ([`PackOptions::with_progress`]).
    ///
    /// ```
    /// let o = nc3pack::PackOptions::fast().with_progress(|n| eprintln!("{n}"));
    /// o.progress().report(10); // prints 10
    /// ```
    pub fn progress(&self) -> &crate::Progress {
        &self.progress
    }

    /// The per-variable rules, in the order given ([`PackOptions::with_var`]).
    ///
    /// ```
    /// let o = nc3pack::PackOptions::fast().with_var("t:codec=none".parse()?);
    /// assert_eq!(o.vars()[0].to_string(), "t:codec=none");
    /// # Ok::<(), nc3pack::vars::VarParseError>(())
    /// ```
    pub fn vars(&self) -> &[crate::vars::VarRule] {
        &self.vars
    }

    /// The quantization rules, in the order given ([`PackOptions::with_quantize`]; empty:
    /// lossless).
    ///
    /// ```
    /// assert!(nc3pack::PackOptions::fast().quantize().is_empty());
    /// ```
    pub fn quantize(&self) -> &[crate::quantize::QuantizeRule] {
        &self.quantize
    }
}

/// What packing produced.
///
/// ```no_run
/// let s = nc3pack::pack_file("in.nc".as_ref(), "out.nc3z".as_ref(), &Default::default())?;
/// println!("{} -> {} bytes in {} blocks, xxh3 {:032x}", s.input_len, s.output_len, s.blocks, s.hash);
/// # Ok::<(), nc3pack::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackSummary {
    /// Bytes of the file the archive restores: the original (for a lossy archive, the
    /// quantized file; see `original`).
    pub input_len: u64,
    /// Bytes of the archive.
    pub output_len: u64,
    /// Number of blocks (entries in the index).
    pub blocks: u64,
    /// xxh3-128 of the file the archive restores (the hash its lead and footer record): the
    /// original's, or for a lossy archive the quantized file's.
    pub hash: u128,
    /// For a lossy archive ([`PackOptions::with_quantize`]): the original file's length and
    /// xxh3-128, which differ from what the archive restores; `None` when the archive restores
    /// the original itself.
    pub original: Option<(u64, u128)>,
    /// For a lossy archive: values the quantization moved from inside a variable's valid range
    /// (`valid_range`, else `valid_min`/`valid_max`) to outside it, which netCDF readers take
    /// as missing (netCDF-C's quantization does the same); per variable and attribute, only
    /// those with values.
    pub moved_outside_valid: Vec<crate::quantize::MovedOutside>,
}

/// Packs the netCDF-3 file `input` into the archive `output`, atomically: the archive is written
/// to a temporary file beside `output`, synced, and renamed into place only when complete. An
/// existing `output` is refused unless `opts.force`; `opts.progress` is called with the input
/// bytes read so far. An `input` that is not a regular file (a pipe such as `<(...)` or
/// `/dev/stdin`, a FIFO) is read as a stream, in one pass, as [`pack_reader`] reads it: the
/// archive is the same.
///
/// ```no_run
/// use nc3pack::{pack_file, PackOptions};
/// let summary = pack_file("samples/gridded_sst.nc".as_ref(), "/tmp/sst.nc3z".as_ref(),
///     &PackOptions::default())?;
/// println!("ratio {:.2}", summary.input_len as f64 / summary.output_len as f64);
/// # Ok::<(), nc3pack::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::Option`] for options out of range; [`Error::Io`] when `input` cannot be read or
/// the output cannot be written; [`Error::OutputExists`] for an existing `output` without
/// `force`; a header
/// or layout error naming what is wrong with `input`; [`Error::Thread`] or
/// [`Error::Internal`] when a worker thread cannot start or fails. On an error no output is
/// left behind.
pub fn pack_file(input: &Path, output: &Path, opts: &PackOptions) -> Result<PackSummary> {
    let progress = |n: u64| opts.progress.report(n);
    let (pending, summary) = pack_to_temp(input, output, opts, opts.force, true, &progress)?;
    pending.commit()?;
    Ok(summary)
}

/// Packs `input` into a temporary file beside `output` (synced if `sync`), ready to be renamed
/// into place with [`crate::atomic::Pending::commit`]. An input that is not a regular file (a
/// pipe such as `<(...)` or `/dev/stdin`, a FIFO, a device) cannot seek nor tell its length: it
/// is packed as a stream, as [`pack_reader`] does.
pub(crate) fn pack_to_temp(
    input: &Path,
    output: &Path,
    opts: &PackOptions,
    force: bool,
    sync: bool,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(crate::atomic::Pending, PackSummary)> {
    opts.check()?;
    let file = std::fs::File::open(input).map_err(io_err(input, "open"))?;
    let meta = file.metadata().map_err(io_err(input, "stat"))?;
    if !meta.is_file() {
        return stream_to_temp(file, input, output, opts, force, sync, progress);
    }
    // The input's state before and after it is read: a file written to meanwhile (a model
    // still writing its output) would give an archive of neither its old bytes nor its new.
    let watch = file.try_clone().map_err(io_err(input, "open"))?;
    let state = |f: &std::fs::File| {
        crate::io::FileState::of(std::os::fd::AsRawFd::as_raw_fd(f)).map_err(io_err(input, "stat"))
    };
    let before = state(&watch)?;
    crate::atomic::write_to_temp(output, force, Some(input), sync, |out| {
        let summary = file_into(
            file,
            input,
            opts,
            &mut Writeback::new(out),
            output,
            progress,
        )?;
        match state(&watch)?.changed_since(&before) {
            None => Ok(summary),
            Some(what) => Err(Error::ChangedWhileRead {
                path: input.to_path_buf(),
                what,
            }),
        }
    })
}

/// Packs the regular file `file` (named `input`), read at any offset, into `out` (positioned
/// at 0; named `out_path` in errors, and beside which a quantized copy is made).
fn file_into<W: Write + Seek + Send>(
    file: std::fs::File,
    input: &Path,
    opts: &PackOptions,
    out: &mut W,
    out_path: &Path,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<PackSummary> {
    let (file, original, moved_outside_valid) = if opts.quantize.is_empty() {
        (file, None, Vec::new())
    } else {
        let (q, original, moved) =
            lossy::quantized_temp(&file, input, out_path, &opts.quantize, progress)?;
        (q, Some(original), moved)
    };
    let (header, header_bytes, layout) = nc3::open(&file, input)?;
    let summary = pack_stream(
        file,
        input,
        &header,
        &header_bytes,
        Source::File(&layout),
        opts,
        out,
        out_path,
        progress,
    )?;
    Ok(PackSummary {
        original,
        moved_outside_valid,
        ..summary
    })
}

/// Packs a netCDF-3 file arriving on `reader` (standard input, a pipe) into `output`,
/// atomically, in one pass: nothing is read twice and nothing seeks. `input` names the source
/// in errors. Memory is bounded by the block pipeline, one open block per record variable and
/// one record of the input, held until the record is known to be complete (records over 64 MiB
/// are not held, and an input that ends inside one is refused). The archive is the one
/// [`pack_file`] makes of the same bytes.
///
/// ```no_run
/// let stdin = std::io::stdin().lock();
/// let s = nc3pack::pack_reader(stdin, "-".as_ref(), "/tmp/out.nc3z".as_ref(),
///     &nc3pack::PackOptions::default())?;
/// println!("{} bytes in", s.input_len);
/// # Ok::<(), nc3pack::Error>(())
/// ```
///
/// # Errors
///
/// As [`pack_file`]; besides, a stream that ends early (inside the header or a record) is
/// refused, naming `input`.
pub fn pack_reader<R: Read>(
    reader: R,
    input: &Path,
    output: &Path,
    opts: &PackOptions,
) -> Result<PackSummary> {
    opts.check()?;
    let progress = |n: u64| opts.progress.report(n);
    let (pending, summary) =
        stream_to_temp(reader, input, output, opts, opts.force, true, &progress)?;
    pending.commit()?;
    Ok(summary)
}

/// [`pack_reader`] into a temporary file beside `output` (synced if `sync`), not yet renamed.
fn stream_to_temp<R: Read>(
    reader: R,
    input: &Path,
    output: &Path,
    opts: &PackOptions,
    force: bool,
    sync: bool,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(crate::atomic::Pending, PackSummary)> {
    crate::atomic::write_to_temp(output, force, None, sync, |out| {
        stream_into(
            reader,
            input,
            opts,
            &mut Writeback::new(out),
            output,
            progress,
        )
    })
}

/// Packs the netCDF-3 file arriving on `reader` (named `input`) into `out` (positioned at 0;
/// named `out_path` in errors, and beside which a quantized copy is made), in one pass.
fn stream_into<R: Read, W: Write + Seek + Send>(
    mut reader: R,
    input: &Path,
    opts: &PackOptions,
    out: &mut W,
    out_path: &Path,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<PackSummary> {
    if !opts.quantize.is_empty() {
        // Quantizing needs the whole file: spooled to an anonymous temporary file first, then
        // packed as that file.
        let tmp = lossy::spool(&mut reader, input, out_path)?;
        return file_into(tmp, input, opts, out, out_path, progress);
    }
    let (header, mut prefix) = nc3::read_header_stream(&mut reader, input)?;
    // A stream of at most COMPACT_FILE_MAX bytes is read whole and packed as the file of its
    // bytes: the archive is the one `pack_file` makes of them (compact, if it is on).
    let small = format::compact::COMPACT_FILE_MAX;
    if prefix.len() as u64 <= small {
        let more = small + 1 - prefix.len() as u64;
        (&mut reader)
            .take(more)
            .read_to_end(&mut prefix)
            .map_err(io_err(input, "read"))?;
    }
    if prefix.len() as u64 <= small {
        let (header, header_bytes, layout) = nc3::open(&prefix, input).map_err(input_ends)?;
        return pack_stream(
            &prefix[..],
            input,
            &header,
            &header_bytes,
            Source::File(&layout),
            opts,
            out,
            out_path,
            progress,
        );
    }
    let header_bytes = prefix[..header.len() as usize].to_vec();
    let reader = std::io::Cursor::new(prefix).chain(reader);
    pack_stream(
        reader,
        input,
        &header,
        &header_bytes,
        Source::Stream,
        opts,
        out,
        out_path,
        progress,
    )
}

/// A small stream's layout error in a stream's words: a fixed variable that extends past the
/// end of the input (of the bytes a pipe held), not of a file.
fn input_ends(e: nc3::error::FileError) -> nc3::error::FileError {
    use nc3::error::{FileError, LayoutError};
    match e {
        FileError::Layout {
            path,
            source:
                LayoutError::PastEnd {
                    var,
                    begin,
                    end,
                    file_len,
                },
        } => FileError::Layout {
            path,
            source: LayoutError::InputPastEnd {
                var,
                begin,
                end,
                len: file_len,
            },
        },
        e => e,
    }
}

/// Packs from `reader`, positioned at the start of a netCDF-3 file with the given header (and
/// its bytes), into `out` (positioned at 0). `input` and `out_path` name the files in errors.
///
/// With [`PackOptions::with_compact`] (the default; see `design/FORMAT.md`, "The compact
/// form"), a file of at most [`format::compact::COMPACT_FILE_MAX`] bytes of known length
/// ([`Source::File`]) is packed in memory and written in the compact form (format 1.2) with one
/// write; any other, and every file with `with_compact(false)`, in the full form.
#[allow(clippy::too_many_arguments)] // each argument is a distinct input of the pipeline
pub fn pack_stream<R: Read, W: Write + Seek + Send>(
    reader: R,
    input: &Path,
    header: &Header,
    header_bytes: &[u8],
    source: Source<'_>,
    opts: &PackOptions,
    out: &mut W,
    out_path: &Path,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<PackSummary> {
    let tiny = opts.compact
        && matches!(source, Source::File(l) if l.file_len <= format::compact::COMPACT_FILE_MAX);
    if !tiny {
        return pack_full(
            reader,
            input,
            header,
            header_bytes,
            source,
            opts,
            out,
            out_path,
            progress,
        );
    }
    let mut buf = std::io::Cursor::new(Vec::new());
    let summary = pack_full(
        reader,
        input,
        header,
        header_bytes,
        source,
        opts,
        &mut buf,
        out_path,
        progress,
    )?;
    let full = buf.into_inner();
    // Written compact only when it reads back as the archive just made (it always should).
    let bytes = format::compact::compact(&full)
        .filter(|c| format::compact::expand(c).is_ok_and(|e| e == full))
        .unwrap_or(full);
    let werr = |e: std::io::Error| Error::Io {
        path: out_path.to_path_buf(),
        op: "write",
        source: e,
    };
    out.write_all(&bytes).map_err(werr)?;
    out.flush().map_err(werr)?;
    Ok(PackSummary {
        output_len: bytes.len() as u64,
        ..summary
    })
}

/// [`pack_stream`] in the full form.
#[allow(clippy::too_many_arguments)] // each argument is a distinct input of the pipeline
fn pack_full<R: Read, W: Write + Seek + Send>(
    reader: R,
    input: &Path,
    header: &Header,
    header_bytes: &[u8],
    source: Source<'_>,
    opts: &PackOptions,
    out: &mut W,
    out_path: &Path,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<PackSummary> {
    let werr = |e: std::io::Error| Error::Io {
        path: out_path.to_path_buf(),
        op: "write",
        source: e,
    };
    let file_len = match source {
        Source::File(l) => Some(l.file_len),
        Source::Stream => None,
    };
    let (sizes, plan) = per_var(opts, header, input, file_len)?;
    let block_sizes_frame = !sizes.is_uniform();
    // Writes of up to 1 MiB, or of the input's length (with a page to spare) when that is
    // smaller: a small file's archive needs no 1 MiB buffer.
    let buffer = file_len.map_or(1 << 20, |l| (l as usize).saturating_add(4096).min(1 << 20));
    let mut w = BufWriter::with_capacity(buffer, out);
    // The lead is rewritten at the end, when the hash (and for a stream the length and record
    // count) are known.
    let mut lead = Lead {
        file_len: header.len(),
        numrecs: 0,
        header_len: header.len(),
        block_size: opts.block_size,
        hash: 0,
        block_sizes_frame,
    };
    if let Source::File(l) = source {
        (lead.file_len, lead.numrecs) = (l.file_len, l.numrecs);
    }
    w.write_all(&lead.encode()).map_err(werr)?;
    // The archive of a small file is written in the compact form (`pack_stream`): its header
    // frame may use the header dictionary (codec 7, which only the compact form's writer
    // uses), so that every other archive keeps its bytes.
    let compact = opts.compact
        && matches!(source, Source::File(l) if l.file_len <= format::compact::COMPACT_FILE_MAX);
    let header_frame = crate::codec::header_frame(header_bytes, compact);
    w.write_all(&header_frame).map_err(werr)?;
    let mut data_start = (LEAD_LEN + header_frame.len()) as u64;
    if block_sizes_frame {
        let f = crate::codec::block_sizes_frame(&sizes, header.var_count());
        w.write_all(&f).map_err(werr)?;
        data_start += f.len() as u64;
    }

    // The number type of each variable's blocks, for the pco codec.
    // and its row length (the innermost dimension's, for variables of two or more dimensions)
    // for the 2-D predictor.
    let kinds: Vec<(Option<NumKind>, usize)> = header
        .vars()
        .map(|v| (NumKind::of(v.nc_type()), row_length(v)))
        .collect();
    let kinds = &kinds[..];
    // A small file is encoded in this thread: the cores are not even looked up.
    let small = matches!(source, Source::File(l) if l.file_len <= INLINE_MAX);
    let threads = if small {
        1
    } else {
        crate::parallel::bound_threads(opts.threads())
    };
    let inline = threads == 1;
    let blocks = Blocks {
        input,
        header,
        source,
        sizes: &sizes,
        opts,
        plan: &plan,
        kinds,
        progress,
        out_path,
    };
    let (sink, mut w, routed) = if inline {
        // Small input or one thread: encode and write in this thread, no pipeline.
        blocks.encode_inline(reader, w, data_start)?
    } else {
        blocks.encode_pipelined(reader, w, data_start, threads)?
    };
    let layout = &routed.layout;
    let done = sink.finish(&mut w, &routed.streams, out_path)?;
    let out = w.into_inner().map_err(|e| werr(e.into_error()))?;
    let lead = Lead {
        file_len: layout.file_len,
        numrecs: layout.numrecs,
        header_len: layout.header_len,
        block_size: opts.block_size,
        hash: routed.hash,
        block_sizes_frame,
    };
    // Never report success for an archive that opening would refuse: check the lead and the
    // header frame as `Archive::open` does (the header itself parsed under the same limits).
    let mut front = [0u8; LEAD_LEN + FRAME_HEADER_LEN];
    front[..LEAD_LEN].copy_from_slice(&lead.encode());
    front[LEAD_LEN..].copy_from_slice(&header_frame[..FRAME_HEADER_LEN]);
    crate::read::archive::check_front(&front).map_err(|(part, offset, e)| Error::Archive {
        path: out_path.to_path_buf(),
        part,
        offset,
        source: ArchiveError::WouldNotOpen(Box::new(e)),
    })?;
    out.seek(std::io::SeekFrom::Start(0)).map_err(werr)?;
    out.write_all(&front[..LEAD_LEN]).map_err(werr)?;
    out.flush().map_err(werr)?;
    Ok(PackSummary {
        input_len: layout.file_len,
        output_len: done.len,
        blocks: done.blocks,
        hash: routed.hash,
        original: None,
        moved_outside_valid: Vec::new(),
    })
}

/// What encoding the blocks needs: the input and its header, how blocks are cut and encoded,
/// where progress goes, and the output's name for errors.
struct Blocks<'a> {
    input: &'a Path,
    header: &'a Header,
    source: Source<'a>,
    sizes: &'a format::BlockSizes,
    opts: &'a PackOptions,
    plan: &'a EncoderPlan,
    kinds: &'a [(Option<NumKind>, usize)],
    progress: &'a (dyn Fn(u64) + Sync),
    out_path: &'a Path,
}

impl Blocks<'_> {
    fn werr(&self, e: std::io::Error) -> Error {
        Error::Io {
            path: self.out_path.to_path_buf(),
            op: "write",
            source: e,
        }
    }

    /// Routes the blocks from `reader` and encodes and writes each in this thread, to `w` at
    /// `data_start`.
    fn encode_inline<R: Read, W: Write>(
        &self,
        reader: R,
        mut w: W,
        data_start: u64,
    ) -> Result<(Sink, W, Routed)> {
        let Blocks {
            input,
            header,
            source,
            sizes,
            opts,
            plan,
            kinds,
            progress,
            ..
        } = *self;
        let mut sink = Sink::new(data_start);
        let mut write_err = None;
        let mut others = plan.others();
        let mut runs = runs::Runs::default();
        let routed = with_encoder(opts, |enc| {
            let mut encode = |run: runs::Run| {
                let Some(id) = run.first().map(|b| b.id) else {
                    return Ok(());
                };
                let enc = match plan.key_of(id) {
                    0 => &mut *enc,
                    k => others.get(plan, k)?,
                };
                for (stream, done, frame) in runs::encode_run(enc, kinds, run) {
                    if let Err(e) = sink.encoded(&mut w, stream, &done, &frame) {
                        write_err = Some(e);
                        return Err(Error::Internal("write failed".into()));
                    }
                }
                Ok(())
            };
            let routed = route(
                reader,
                input,
                header,
                source,
                sizes,
                progress,
                &mut |job: RoutedBlock| match runs.push(job, plan) {
                    Some(run) => encode(run),
                    None => Ok(()),
                },
            )?;
            for run in std::mem::take(&mut runs).rest() {
                encode(run)?;
            }
            Ok::<_, Error>(routed)
        })?;
        if let Some(e) = write_err {
            return Err(self.werr(e));
        }
        Ok((sink, w, routed?))
    }

    /// Routes the blocks from `reader` to `threads` encoder threads, and writes the encoded
    /// frames in routing order to `w` at `data_start` in a writer thread.
    fn encode_pipelined<R: Read, W: Write + Send>(
        &self,
        reader: R,
        mut w: W,
        data_start: u64,
        threads: usize,
    ) -> Result<(Sink, W, Routed)> {
        let Blocks {
            input,
            header,
            source,
            sizes,
            opts,
            plan,
            kinds,
            progress,
            ..
        } = *self;
        let (job_tx, job_rx) = sync_channel::<(u64, runs::Run)>(threads * 2);
        let (frame_tx, frame_rx) = sync_channel::<EncodedRun>(threads * 2);
        let job_rx = Arc::new(Mutex::new(job_rx));
        let window = Window::new(threads as u64 * 4 + 2);
        let (read_result, writer_result) = std::thread::scope(|s| {
            // Nothing is routed before every thread has started: a thread that cannot start
            // returns its error here, dropping the job sender, which stops the started ones.
            for _ in 0..threads {
                let rx = Arc::clone(&job_rx);
                let tx = frame_tx.clone();
                spawn_scoped(s, "block encoder", move || {
                    encode_worker(rx, tx, opts, plan, kinds)
                })
                .map_err(spawn_err(input))?;
            }
            drop(frame_tx);
            // Only the workers hold the job receiver: when they stop (the writer failed), sends fail.
            drop(job_rx);
            let window = &window;
            let writer = spawn_scoped(s, "archive writer", move || {
                let _closed = window.close_on_drop();
                write_frames(&mut w, frame_rx, data_start, window).map(|k| (k, w))
            })
            .map_err(spawn_err(input))?;
            let stopped = || Error::Internal("encoder threads stopped".into());
            let mut seq = 0u64;
            let mut send = |run: runs::Run| {
                if !window.enter(seq) {
                    return Err(stopped());
                }
                job_tx.send((seq, run)).map_err(|_| stopped())?;
                seq += 1;
                Ok(())
            };
            let mut runs = runs::Runs::default();
            let read_result =
                route(
                    reader,
                    input,
                    header,
                    source,
                    sizes,
                    progress,
                    &mut |job| match runs.push(job, plan) {
                        Some(run) => send(run),
                        None => Ok(()),
                    },
                )
                .and_then(|routed| {
                    runs.rest().try_for_each(&mut send)?;
                    Ok(routed)
                });
            drop(job_tx);
            Ok::<_, Error>((read_result, writer.join()))
        })?;
        let writer_result =
            writer_result.unwrap_or_else(|_| Err(std::io::Error::other("writer thread panicked")));
        // A failed write makes the reader's sends fail; report the write error first.
        let (sink, w) = writer_result.map_err(|e| self.werr(e))?;
        Ok((sink, w, read_result?))
    }
}

/// Inputs up to this size are packed in the calling thread, without a pipeline.
const INLINE_MAX: u64 = 4 << 20;

/// What an encoder is set up for: codec, level, filter mode, thoroughness.
type EncoderKey = (Codec, i32, FilterMode, bool, bool, bool);

/// The encoders of inline packs, kept for the next (a zstd context costs more to set up than a
/// small file costs to compress): as many as packed at once, not one a thread.
static ENCODERS: crate::kept::Kept<EncoderKey, Encoder> = crate::kept::Kept::new(16);

/// Runs `f` with a kept encoder for `opts` (a new one if none is kept for those options), then
/// keeps it for the next.
fn with_encoder<T>(opts: &PackOptions, f: impl FnOnce(&mut Encoder) -> T) -> Result<T> {
    let key = var_plan::encoder_key(opts);
    let mut enc = match ENCODERS.take(&key) {
        Some(enc) => enc,
        None => new_encoder(opts).map_err(OptionError::from)?,
    };
    let r = f(&mut enc);
    ENCODERS.give(key, enc);
    Ok(r)
}

fn new_encoder(opts: &PackOptions) -> std::result::Result<Encoder, CodecError> {
    var_plan::make_encoder(&var_plan::encoder_key(opts))
}

struct EncodedRun {
    /// Position of the run in routing order.
    seq: u64,
    /// The run's blocks, encoded.
    blocks: Vec<runs::EncodedBlock>,
}

/// The length of a variable's innermost dimension when it has two or more dimensions (its rows
/// for the 2-D `lorenzo` filter), else 0.
fn row_length(v: crate::nc3::Var<'_>) -> usize {
    match v.dims().last() {
        Some(d) if v.dim_count() >= 2 && !d.is_record() => usize::try_from(d.len()).unwrap_or(0),
        _ => 0,
    }
}

fn encode_worker(
    rx: Arc<Mutex<Receiver<(u64, runs::Run)>>>,
    tx: std::sync::mpsc::SyncSender<EncodedRun>,
    opts: &PackOptions,
    plan: &EncoderPlan,
    kinds: &[(Option<NumKind>, usize)],
) {
    let Ok(mut default) = new_encoder(opts) else {
        return;
    };
    let mut others = plan.others();
    loop {
        let job = match rx.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok((seq, run)) = job else { return };
        let Some(id) = run.first().map(|b| b.id) else {
            return;
        };
        let enc = match plan.key_of(id) {
            0 => &mut default,
            k => match others.get(plan, k) {
                Ok(e) => e,
                Err(_) => return,
            },
        };
        let blocks = runs::encode_run(enc, kinds, run);
        if tx.send(EncodedRun { seq, blocks }).is_err() {
            return;
        }
    }
}

/// Writes the encoded frames in routing order (`seq` 0, 1, 2, ...), holding the ones that
/// finish early until their turn; `window` keeps the router from getting more than its width
/// ahead of the writer, which bounds what is held.
fn write_frames<W: Write>(
    w: &mut W,
    rx: Receiver<EncodedRun>,
    pos: u64,
    window: &Window,
) -> std::io::Result<Sink> {
    let mut sink = Sink::new(pos);
    let mut early = std::collections::BTreeMap::new();
    let mut next = 0u64;
    for done in rx {
        early.insert(done.seq, done);
        while let Some(done) = early.remove(&next) {
            for (stream, encoded, frame) in &done.blocks {
                sink.encoded(w, *stream, encoded, frame)?;
            }
            next += 1;
            window.advance(next);
        }
    }
    if !early.is_empty() {
        return Err(std::io::Error::other(format!(
            "block {next} in routing order was never encoded"
        )));
    }
    Ok(sink)
}

/// How far the router may run ahead of the writer: block `seq` may be routed once fewer than
/// `width` blocks are routed but not yet written.
struct Window {
    width: u64,
    /// Blocks written so far, and whether the writer has stopped.
    state: Mutex<(u64, bool)>,
    cv: std::sync::Condvar,
}

impl Window {
    fn new(width: u64) -> Window {
        Window {
            width: width.max(1),
            state: Mutex::new((0, false)),
            cv: std::sync::Condvar::new(),
        }
    }

    /// Waits until block `seq` may be routed; false if the writer has stopped.
    fn enter(&self, seq: u64) -> bool {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while !st.1 && seq >= st.0 + self.width {
            st = self.cv.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        !st.1
    }

    /// Records that `written` blocks have been written.
    fn advance(&self, written: u64) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).0 = written;
        self.cv.notify_all();
    }

    /// A guard that marks the writer stopped when dropped (however the writer ends), so the
    /// router never waits for a writer that is gone.
    fn close_on_drop(&self) -> impl Drop + '_ {
        struct Close<'a>(&'a Window);
        impl Drop for Close<'_> {
            fn drop(&mut self) {
                self.0.state.lock().unwrap_or_else(|p| p.into_inner()).1 = true;
                self.0.cv.notify_all();
            }
        }
        Close(self)
    }
}
