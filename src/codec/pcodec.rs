//! The `pco` codec (codec id 4): a block of numbers compressed with Pcodec, the Rust `pco`
//! crate (format 1.x), as one standalone pco file.
//!
//! A block's bytes are big-endian netCDF values; the encoder reads them as numbers of the
//! variable's type ([`NumKind`]), compresses them in stream order, and the decoder writes the
//! numbers back big-endian (or in native order for typed reads). Pcodec maps floats to
//! integers by their bits, so every bit pattern (NaN payloads, -0.0, denormals, infinities)
//! comes back unchanged. design/FORMAT.md specifies the payload.

use super::block::Form;
use super::error::CodecError;
use super::error::FrameError;
use crate::format::FrameHeader;
use crate::nc3::NcType;
use ::pco::standalone::{DecompressorItem, FileDecompressor};

/// The number type a numeric block is compressed as: netCDF's 16-, 32- and 64-bit types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NumKind {
    /// `short`.
    I16,
    /// `ushort`.
    U16,
    /// `int`.
    I32,
    /// `uint`.
    U32,
    /// `float`.
    F32,
    /// `int64`.
    I64,
    /// `uint64`.
    U64,
    /// `double`.
    F64,
}

impl NumKind {
    /// The kind of a netCDF type; `None` for the one-byte types (byte, char, ubyte), which
    /// pco is not for.
    ///
    /// ```
    /// use nc3pack::{nc3::NcType, testing::NumKind};
    /// assert_eq!(NumKind::of(NcType::Float), Some(NumKind::F32));
    /// assert_eq!(NumKind::of(NcType::Char), None);
    /// ```
    pub fn of(t: NcType) -> Option<NumKind> {
        Some(match t {
            NcType::Short => NumKind::I16,
            NcType::UShort => NumKind::U16,
            NcType::Int => NumKind::I32,
            NcType::UInt => NumKind::U32,
            NcType::Float => NumKind::F32,
            NcType::Int64 => NumKind::I64,
            NcType::UInt64 => NumKind::U64,
            NcType::Double => NumKind::F64,
            NcType::Byte | NcType::Char | NcType::UByte => return None,
        })
    }

    /// Whether the numbers are IEEE floats.
    pub fn is_float(self) -> bool {
        matches!(self, NumKind::F32 | NumKind::F64)
    }

    /// The unsigned kind of the same size (what `plane` residuals are coded as).
    pub fn unsigned(self) -> NumKind {
        match self.esize() {
            2 => NumKind::U16,
            4 => NumKind::U32,
            _ => NumKind::U64,
        }
    }

    /// Bytes per element.
    pub fn esize(self) -> usize {
        match self {
            NumKind::I16 | NumKind::U16 => 2,
            NumKind::I32 | NumKind::U32 | NumKind::F32 => 4,
            NumKind::I64 | NumKind::U64 | NumKind::F64 => 8,
        }
    }
}

/// The pco compression level the encoder uses (pco's default).
pub const LEVEL: usize = ::pco::DEFAULT_COMPRESSION_LEVEL;

/// Compresses `data` (big-endian elements of `kind`) as one standalone pco file appended to
/// `out`, at pco compression level `level`; false (and `out` unchanged) if `data` is not a
/// whole number of elements, is empty, or pco fails.
pub(crate) fn compress(kind: NumKind, data: &[u8], level: usize, out: &mut Vec<u8>) -> bool {
    compress_choosing(kind, data, level, out).is_some()
}

/// As [`compress`], also returning what pco chose for the first chunk (see [`Choice`]); `None`
/// where [`compress`] is false.
pub(crate) fn compress_choosing(
    kind: NumKind,
    data: &[u8],
    level: usize,
    out: &mut Vec<u8>,
) -> Option<Choice> {
    let config = ::pco::ChunkConfig::default().with_compression_level(level);
    compress_with(kind, data, &config, out)
}

/// As [`compress`], told what pco chose on a sample of `data` ([`compress_choosing`]): where
/// that was the lookback delta encoding, pco takes it without searching again (the search
/// costs a fifth of pco's time on such a block: 2 of 9 ms on 1 MiB of doubles).
pub(crate) fn compress_chosen(
    kind: NumKind,
    data: &[u8],
    level: usize,
    choice: Choice,
    out: &mut Vec<u8>,
) -> bool {
    let mut config = ::pco::ChunkConfig::default().with_compression_level(level);
    if choice.lookback {
        config = config.with_delta_spec(::pco::DeltaSpec::TryLookback);
    }
    if let Some(mode) = choice.mode.filter(|_| choice.forced) {
        config = config.with_mode_spec(mode.spec());
    }
    compress_with(kind, data, &config, out).is_some()
}

/// What pco chose for a chunk, as far as a block's run takes it from its sample's: whether
/// the delta encoding is lookback (far repeats). Only that: the order of a consecutive delta
/// encoding found on a block's first 32 KiB is often not the block's (2 for 3 on a block of
/// numeric.nc's lat, which then grows by a third), and pco's mode search costs little.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Choice {
    lookback: bool,
    /// The mode the first chunk was compressed in, if a float [`Mode`].
    mode: Option<Mode>,
    /// Whether `mode` was given (not pco's own choice): the block's run takes it too.
    forced: bool,
    /// The first chunk's metadata size in bytes (a few over): its bins, mode and delta
    /// encoding.
    meta: usize,
}

impl Choice {
    /// The first chunk's metadata size in bytes, up to a few over (see [`Choice::meta`]).
    pub(crate) fn meta(&self) -> usize {
        self.meta
    }

    /// The float mode pco compressed the first chunk in, if any.
    pub(crate) fn mode(&self) -> Option<Mode> {
        self.mode
    }

    /// Whether pco took the floats as multiples of a base or with their last bits apart (its
    /// float multiplier or quantization mode): decimals or whole numbers.
    pub(crate) fn decimal(&self) -> bool {
        matches!(self.mode, Some(Mode::FloatMult(_) | Mode::FloatQuant(_)))
    }
}

/// A pco mode for floats, as nc3pack tells it to pco (a `pco::ModeSpec`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Mode {
    /// Each number is its own latent.
    Classic,
    /// Multiples of a base, plus an adjustment in units in the last place.
    FloatMult(f64),
    /// The number's bits but the last `k`, and those.
    FloatQuant(u32),
}

impl Mode {
    fn spec(self) -> ::pco::ModeSpec {
        match self {
            Mode::Classic => ::pco::ModeSpec::Classic,
            Mode::FloatMult(base) => ::pco::ModeSpec::TryFloatMult(base),
            Mode::FloatQuant(k) => ::pco::ModeSpec::TryFloatQuant(k),
        }
    }

    /// A chunk's mode, if one of floats (f32 or f64). A float multiplier's base is stored as
    /// its "ordered" bits: the sign bit flipped for a positive number, every bit for a
    /// negative one.
    fn of_chunk(mode: &::pco::metadata::Mode) -> Option<Mode> {
        use ::pco::metadata::{DynLatent, Mode as M};
        match mode {
            M::Classic => Some(Mode::Classic),
            M::FloatQuant(k) => Some(Mode::FloatQuant(*k)),
            M::FloatMult(DynLatent::U32(l)) => {
                let bits = if l >> 31 == 1 { l ^ (1 << 31) } else { !l };
                Some(Mode::FloatMult(f64::from(f32::from_bits(bits))))
            }
            M::FloatMult(DynLatent::U64(l)) => {
                let bits = if l >> 63 == 1 { l ^ (1 << 63) } else { !l };
                Some(Mode::FloatMult(f64::from_bits(bits)))
            }
            _ => None,
        }
    }
}

/// At most how many numbers pco puts in one chunk (its default paging, which nc3pack uses:
/// a block of more is cut into equal chunks of at most this many), each with its own mode.
pub(crate) const CHUNK_NUMBERS: usize = ::pco::DEFAULT_MAX_PAGE_N;

/// How many of a block's numbers [`block_float_mode`] looks at in its first pick, at most
/// (about; the second pick takes a third as many).
const MODE_NUMBERS: usize = 1 << 16;

/// The picks [`block_float_mode`] asks pco about: (stride in units of its first stride, first
/// number). Strides and starts differ, so that no two picks see the same columns of a grid.
const MODE_PICKS: [(usize, usize); 2] = [(1, 1), (3, 2)];

/// The mode pco chooses for a block of floats of `kind` (big-endian), as it would on the whole
/// block but from at most about [`MODE_NUMBERS`] of its numbers at a time (every second or
/// fourth of a block of 1 MiB; pco then judges 1 in 40 of those): `None` for integers, or when
/// pco finds no mode.
///
/// A block's first 32 KiB alone often holds too few numbers, or too many fill values, for pco
/// to find the decimal multiplier the block has (ocean temperatures in steps of 0.0001 among
/// land fill values): judged without it, pco looked a third larger there than it makes the
/// block. Fill values hide a multiplier from pco even over the whole block (its bid for the
/// multiplier falls below its bid for none): so a number equal to the one before it, as in a
/// run of fill values, is left out of the picks; the mode then still fits the fill values,
/// which repeat. And pco's bid for a multiplier is close to its bid for none on such data, so
/// one pick of numbers finds it or not by chance (levitus TEMP, 20 × 180 × 360: 4 of 10 picks
/// missed it, where it makes the block a third smaller): pco is asked about two picks
/// ([`MODE_PICKS`]), and a mode other than classic that either finds is the block's.
pub(crate) fn block_float_mode(kind: NumKind, data: &[u8]) -> Option<Mode> {
    let config = ::pco::ChunkConfig::default();
    let e = kind.esize();
    let every = (data.len() / e / MODE_NUMBERS).max(1);
    let mut found = None;
    let n = data.len() / e;
    for (stride, first) in MODE_PICKS {
        // Every `every * stride`-th number from `first` on, but one equal to the number
        // before it (in a run of fill values).
        let picks = (first..n).step_by(every * stride);
        let mode = match kind {
            NumKind::F32 => {
                ::pco::wrapped::choose_mode(&picked(data, picks, f32::from_be_bytes), &config)
            }
            NumKind::F64 => {
                ::pco::wrapped::choose_mode(&picked(data, picks, f64::from_be_bytes), &config)
            }
            _ => return None,
        };
        match mode.ok().as_ref().and_then(Mode::of_chunk) {
            Some(Mode::Classic) => found = found.or(Some(Mode::Classic)),
            Some(m) => return Some(m),
            None => {}
        }
    }
    found
}

/// The numbers of `data` (big-endian, of `E` bytes) at `picks`, read by `num`, but those whose
/// bytes equal the number's before them (in a run of fill values; pick 0 is left out too).
fn picked<const E: usize, T>(
    data: &[u8],
    picks: impl Iterator<Item = usize>,
    num: impl Fn([u8; E]) -> T,
) -> Vec<T> {
    let bytes = |i: usize| -> [u8; E] {
        data.get(E * i..E * i + E)
            .and_then(|b| b.try_into().ok())
            .unwrap_or([0; E])
    };
    picks
        .filter_map(|i| {
            let x = bytes(i);
            (bytes(i.saturating_sub(1)) != x).then(|| num(x))
        })
        .collect()
}

/// As [`compress`], in chunks of at most `page_n` numbers (pco's default: [`CHUNK_NUMBERS`]),
/// in float mode `mode` where given (else as pco chooses per chunk).
pub(crate) fn compress_paged(
    kind: NumKind,
    data: &[u8],
    level: usize,
    mode: Option<Mode>,
    page_n: usize,
    out: &mut Vec<u8>,
) -> bool {
    let mut config = ::pco::ChunkConfig::default()
        .with_compression_level(level)
        .with_paging_spec(::pco::PagingSpec::EqualPagesUpTo(page_n.max(1)));
    if let Some(mode) = mode {
        config = config.with_mode_spec(mode.spec());
    }
    compress_with(kind, data, &config, out).is_some()
}

/// As [`compress_choosing`], in float mode `mode` (which the block's run then takes too).
pub(crate) fn compress_choosing_in(
    kind: NumKind,
    data: &[u8],
    level: usize,
    mode: Mode,
    out: &mut Vec<u8>,
) -> Option<Choice> {
    let config = ::pco::ChunkConfig::default()
        .with_compression_level(level)
        .with_mode_spec(mode.spec());
    let choice = compress_with(kind, data, &config, out)?;
    Some(Choice {
        forced: true,
        ..choice
    })
}

/// As [`compress`], for the residuals of the `plane` filter: without pco's own delta encoding
/// and mode search (the residuals are already differences, and zigzag-encoded they have no
/// common multiplier to find), which saves most of pco's time for the same size.
pub(crate) fn compress_residuals(
    kind: NumKind,
    data: &[u8],
    level: usize,
    out: &mut Vec<u8>,
) -> bool {
    compress_with(kind, data, &residual_config(level), out).is_some()
}

/// pco's settings for prediction residuals: no delta, no mode search (see
/// [`compress_residuals`]).
fn residual_config(level: usize) -> ::pco::ChunkConfig {
    ::pco::ChunkConfig::default()
        .with_compression_level(level)
        .with_delta_spec(::pco::DeltaSpec::NoOp)
        .with_mode_spec(::pco::ModeSpec::Classic)
}

/// As [`compress_residuals`], for residuals already in native order: the first `n` numbers of
/// `kind`'s unsigned type (u16, u32 or u64) packed in `words` (as
/// [`plane::apply_native`](super::plane::apply_native) leaves them); false (and `out`
/// unchanged) if there are not `n` of them, `n` is 0, or pco fails.
pub(crate) fn compress_residuals_native(
    kind: NumKind,
    words: &[u64],
    n: usize,
    level: usize,
    out: &mut Vec<u8>,
) -> bool {
    let config = residual_config(level);
    let start = out.len();
    let ok = match kind.esize() {
        2 => compress_native(bytemuck::cast_slice::<u64, u16>(words), n, &config, out),
        4 => compress_native(bytemuck::cast_slice::<u64, u32>(words), n, &config, out),
        _ => compress_native(words, n, &config, out),
    };
    if !ok {
        out.truncate(start);
    }
    ok
}

fn compress_native<T: ::pco::data_types::Number>(
    nums: &[T],
    n: usize,
    config: &::pco::ChunkConfig,
    out: &mut Vec<u8>,
) -> bool {
    match nums.get(..n) {
        Some(nums) if n > 0 => write_file(nums, config, out).is_ok(),
        _ => false,
    }
}

fn compress_with(
    kind: NumKind,
    data: &[u8],
    config: &::pco::ChunkConfig,
    out: &mut Vec<u8>,
) -> Option<Choice> {
    let e = kind.esize();
    if data.is_empty() || !data.len().is_multiple_of(e) {
        return None;
    }
    match kind {
        NumKind::I16 => compress_as::<i16>(data, config, out),
        NumKind::U16 => compress_as::<u16>(data, config, out),
        NumKind::I32 => compress_as::<i32>(data, config, out),
        NumKind::U32 => compress_as::<u32>(data, config, out),
        NumKind::F32 => compress_as::<f32>(data, config, out),
        NumKind::I64 => compress_as::<i64>(data, config, out),
        NumKind::U64 => compress_as::<u64>(data, config, out),
        NumKind::F64 => compress_as::<f64>(data, config, out),
    }
}

fn compress_as<T: ::pco::data_types::Number + bytemuck::Pod>(
    data: &[u8],
    config: &::pco::ChunkConfig,
    out: &mut Vec<u8>,
) -> Option<Choice> {
    let e = std::mem::size_of::<T>();
    let mut nums = vec![T::zeroed(); data.len() / e];
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut nums);
    bytes.copy_from_slice(data);
    super::word::be_to_native(bytes, e);
    let start = out.len();
    let written = write_file(&nums, config, out);
    if written.is_err() {
        out.truncate(start);
    }
    written.ok()
}

/// Writes `nums` as one standalone pco file, as `pco::standalone::simple_compress_into` does
/// (the header, which names the number type as its "uniform type", one chunk per page of
/// `config`'s paging, the footer), returning what pco chose for the first chunk.
fn write_file<T: ::pco::data_types::Number>(
    nums: &[T],
    config: &::pco::ChunkConfig,
    out: &mut Vec<u8>,
) -> ::pco::errors::PcoResult<Choice> {
    let file = ::pco::standalone::FileCompressor::default()
        .with_n_hint(nums.len())
        .with_uniform_type(Some(::pco::data_types::NumberType::new::<T>()));
    file.write_header(&mut *out)?;
    let mut chunk_config = config.clone();
    let mut choice = None;
    let mut start = 0;
    for n in config.paging_spec.n_per_page(nums.len())? {
        chunk_config.paging_spec = ::pco::PagingSpec::Exact(vec![n]);
        let chunk = nums.get(start..start + n).unwrap_or_default();
        let mut compressor = file.chunk_compressor(chunk, &chunk_config)?;
        choice.get_or_insert(Choice {
            lookback: matches!(
                compressor.meta().delta_encoding,
                ::pco::metadata::DeltaEncoding::Lookback { .. }
            ),
            mode: Mode::of_chunk(&compressor.meta().mode),
            forced: false,
            meta: compressor.meta_size_hint(),
        });
        compressor.write(&mut *out)?;
        start += n;
    }
    file.write_footer(&mut *out)?;
    Ok(choice.unwrap_or(Choice {
        lookback: false,
        mode: None,
        forced: false,
        meta: 0,
    }))
}

/// Reusable space for decoding into an output that is not aligned for its elements.
#[derive(Default)]
pub(crate) struct PcoScratch {
    words: Vec<u64>,
}

impl super::space::KeptScratch for PcoScratch {
    /// The bytes its buffer holds.
    #[cfg(test)]
    fn held(&self) -> usize {
        8 * self.words.capacity()
    }
}

/// Decodes a pco payload into `out` (exactly the block's decoded length): elements of
/// `esize` bytes, big-endian, or in native order when `native`. Checks that the payload is one
/// standalone pco file of a number type of `esize` bytes (one of [`NumKind`]'s) holding exactly
/// `out.len() / esize` numbers, with nothing after its end.
///
/// # Errors
///
/// [`CodecError::Pco`] saying what is wrong.
pub(crate) fn decompress_into(
    esize: u16,
    payload: &[u8],
    out: &mut [u8],
    native: bool,
    scratch: &mut PcoScratch,
) -> Result<(), CodecError> {
    decompress_checked(esize, payload, out, native, scratch, false)
}

/// As [`decompress_into`], for the residuals of a `plane` frame: the number type must be
/// unsigned (u16, u32 or u64).
///
/// # Errors
///
/// [`CodecError::Pco`] saying what is wrong.
pub(crate) fn decompress_residuals_into(
    esize: u16,
    payload: &[u8],
    out: &mut [u8],
    native: bool,
    scratch: &mut PcoScratch,
) -> Result<(), CodecError> {
    decompress_checked(esize, payload, out, native, scratch, true)
}

fn decompress_checked(
    esize: u16,
    payload: &[u8],
    out: &mut [u8],
    native: bool,
    scratch: &mut PcoScratch,
    unsigned: bool,
) -> Result<(), CodecError> {
    let perr = |e: ::pco::errors::PcoError| CodecError::Pco(e.to_string());
    let e = usize::from(esize);
    if !matches!(e, 2 | 4 | 8) || !out.len().is_multiple_of(e) {
        return Err(CodecError::Pco(format!(
            "element size {esize} with {} decoded bytes (pco needs 2, 4 or 8 and whole elements)",
            out.len()
        )));
    }
    let (fd, rest) = FileDecompressor::new(payload).map_err(perr)?;
    let type_byte = match fd.peek_number_type_or_termination(rest).map_err(perr)? {
        Some(t) => t as u8,
        // No chunk: an empty file, right only for an empty block (never written).
        None => 0,
    };
    let size = match type_byte {
        0 => e,
        7 | 8 => 2,
        1 | 3 | 5 => 4,
        2 | 4 | 6 => 8,
        b => {
            return Err(CodecError::Pco(format!(
                "number type {b} is not one this format allows"
            )))
        }
    };
    if unsigned && !matches!(type_byte, 0 | 7 | 1 | 2) {
        return Err(CodecError::Pco(format!(
            "number type {type_byte} for plane residuals (they are u16, u32 or u64: 7, 1 or 2)"
        )));
    }
    if size != e {
        return Err(CodecError::Pco(format!(
            "number type {type_byte} has {size}-byte elements, the frame's element size is {esize}"
        )));
    }
    match type_byte {
        0 | 7 => decode_as::<u16>(&fd, rest, out, native, scratch),
        8 => decode_as::<i16>(&fd, rest, out, native, scratch),
        1 => decode_as::<u32>(&fd, rest, out, native, scratch),
        3 => decode_as::<i32>(&fd, rest, out, native, scratch),
        5 => decode_as::<f32>(&fd, rest, out, native, scratch),
        2 => decode_as::<u64>(&fd, rest, out, native, scratch),
        4 => decode_as::<i64>(&fd, rest, out, native, scratch),
        _ => decode_as::<f64>(&fd, rest, out, native, scratch),
    }
}

fn decode_as<T: ::pco::data_types::Number + bytemuck::Pod>(
    fd: &FileDecompressor,
    src: &[u8],
    out: &mut [u8],
    native: bool,
    scratch: &mut PcoScratch,
) -> Result<(), CodecError> {
    let e = std::mem::size_of::<T>();
    let aligned = bytemuck::try_cast_slice_mut::<u8, T>(out).is_ok();
    if aligned {
        let nums: &mut [T] = bytemuck::cast_slice_mut(out);
        // Big-endian: each batch swapped right after pco wrote it, while it is in cache (one
        // pass over the block instead of two).
        let mut swap = |b: &mut [T]| super::word::be_to_native(bytemuck::cast_slice_mut(b), e);
        let mut keep = |_: &mut [T]| {};
        let post: &mut dyn FnMut(&mut [T]) = if native { &mut keep } else { &mut swap };
        return decode_numbers(fd, src, nums, post);
    } else {
        // The output's size is the frame's decoded length, already bounded by the layout.
        let words = out.len().div_ceil(8);
        if scratch.words.len() < words {
            scratch.words.resize(words, 0);
        }
        let bytes: &mut [u8] = &mut bytemuck::cast_slice_mut(&mut scratch.words)[..out.len()];
        decode_numbers(
            fd,
            src,
            bytemuck::cast_slice_mut::<u8, T>(bytes),
            &mut |_| {},
        )?;
        out.copy_from_slice(bytes);
    }
    if !native {
        // Native to big-endian: the same byte swap.
        super::word::be_to_native(out, e);
    }
    Ok(())
}

/// Numbers decoded per call of pco's chunk reader (a multiple of pco's batch of 256), so that
/// a batch is still in cache when [`decode_numbers`]'s `post` runs on it.
const READ_BATCH: usize = 4096;

/// Decodes every chunk of a standalone file into `dst`, which it must fill exactly, running
/// `post` on each batch of up to [`READ_BATCH`] numbers as soon as it is decoded.
fn decode_numbers<T: ::pco::data_types::Number>(
    fd: &FileDecompressor,
    mut src: &[u8],
    mut dst: &mut [T],
    post: &mut dyn FnMut(&mut [T]),
) -> Result<(), CodecError> {
    let perr = |e: ::pco::errors::PcoError| CodecError::Pco(e.to_string());
    let want = dst.len();
    // Every chunk holds at least one number and no more than what is left of `dst`, so this
    // ends after at most `want + 1` chunks.
    loop {
        match fd.chunk_decompressor::<T, &[u8]>(src).map_err(perr)? {
            DecompressorItem::Chunk(mut cd) => {
                let k = cd.n();
                if k == 0 || k > dst.len() {
                    return Err(CodecError::Pco(format!(
                        "a chunk of {k} numbers after {} of {want}",
                        want - dst.len()
                    )));
                }
                let (head, tail) = std::mem::take(&mut dst).split_at_mut(k);
                let mut done = 0;
                // At most k / READ_BATCH + 1 reads, each of at least one number.
                for batch in head.chunks_mut(READ_BATCH) {
                    let p = cd.read(batch).map_err(perr)?;
                    done += p.n_processed;
                    let last = done == k;
                    if p.n_processed != batch.len() || p.finished != last {
                        return Err(CodecError::Pco(format!(
                            "a chunk of {k} numbers decoded {done}"
                        )));
                    }
                    post(batch);
                }
                dst = tail;
                src = cd.into_src();
            }
            DecompressorItem::EndOfData(rest) => {
                if !dst.is_empty() {
                    return Err(CodecError::Pco(format!(
                        "{} numbers, the frame says {want}",
                        want - dst.len()
                    )));
                }
                if !rest.is_empty() {
                    return Err(CodecError::Pco(format!(
                        "{} bytes after the end of the pco data",
                        rest.len()
                    )));
                }
                return Ok(());
            }
        }
    }
}

/// Compresses `data` with pco into `c` as thorough encoders do: as pco chooses, and for floats
/// also in the mode found over the block (`mode`, see `pco::block_float_mode`) where pco took
/// another for the first chunk, or where there are more chunks and it is not classic (pco
/// chooses a mode per chunk, and may miss it in some); the smaller stays. Then, on a block of
/// more than [`PCO_HALF_CHUNK`] numbers, in chunks of at most that many (in the mode that
/// won), kept where smaller. False (and `c` unspecified) when pco fails.
pub(crate) fn pco_thorough(
    kind: NumKind,
    data: &[u8],
    mode: Option<Mode>,
    c: &mut Vec<u8>,
) -> bool {
    let Some(ch) = compress_choosing(kind, data, LEVEL, c) else {
        return false;
    };
    let n = data.len() / kind.esize();
    let chunks = n > CHUNK_NUMBERS;
    let mode = mode.filter(|&m| ch.mode() != Some(m) || (chunks && m != Mode::Classic));
    let mut forced = None;
    let mut other = Vec::new();
    if let Some(mode) = mode {
        if compress_choosing_in(kind, data, LEVEL, mode, &mut other).is_some()
            && other.len() < c.len()
        {
            std::mem::swap(c, &mut other);
            forced = Some(mode);
        }
    }
    // Chunks of half the size, each with bins of its own: where the numbers' spread changes
    // along the block (depth levels, latitudes) they fit better.
    if n > PCO_HALF_CHUNK {
        other.clear();
        if compress_paged(kind, data, LEVEL, forced, PCO_HALF_CHUNK, &mut other)
            && other.len() < c.len()
        {
            *c = other;
        }
    }
    true
}

/// The `max` preset also tries pco chunks of at most this many numbers (half pco's default) on
/// blocks of more: Levitus' TEMP and SALT 0.4 % smaller, ETOPO20 0.9 %, so that `max` is no
/// longer larger than the default preset's 1 MiB blocks there; gridded.nc and numeric.nc as
/// they were.
pub(crate) const PCO_HALF_CHUNK: usize = CHUNK_NUMBERS / 2;

/// Compresses a block's `sample` with pco into `c`: in the block's float mode `mode` (see
/// `pco::block_float_mode`), or as pco chooses when there is none.
pub(crate) fn pco_sample(
    kind: NumKind,
    sample: &[u8],
    mode: Option<Mode>,
    c: &mut Vec<u8>,
) -> Option<Choice> {
    match mode {
        Some(mode) => compress_choosing_in(kind, sample, LEVEL, mode, c),
        None => compress_choosing(kind, sample, LEVEL, c),
    }
}

/// Codec `pco`: the block's numbers, compressed by pco.
pub(crate) struct Pco;

impl super::block::BlockCodec for Pco {
    fn levels(&self) -> std::ops::RangeInclusive<i32> {
        0..=12
    }
    fn default_level(&self) -> i32 {
        LEVEL as i32
    }
    fn max_level(&self) -> i32 {
        12
    }
    fn decompress_into(
        &self,
        h: &FrameHeader,
        payload: &[u8],
        out: &mut [u8],
        scratch: &mut super::space::Scratch,
    ) -> Result<(), FrameError> {
        decompress_into(h.esize, payload, out, false, scratch.get())?;
        Ok(())
    }
    fn decode_into(
        &self,
        h: &FrameHeader,
        payload: &[u8],
        out: &mut [u8],
        native: bool,
        space: &mut super::space::Space,
    ) -> Result<(), FrameError> {
        decompress_into(h.esize, payload, out, native, space.codecs.get())?;
        Ok(())
    }
    /// The numbers of a `mask` frame ([`Form::Numbers`]), or the unsigned residuals of a
    /// `plane` or `fit` frame ([`Form::Residuals`], whose number type pco's file must record).
    fn decode_numbers(
        &self,
        h: &FrameHeader,
        payload: &[u8],
        out: &mut [u8],
        form: Form,
        native: bool,
        scratch: &mut super::space::Scratch,
    ) -> Result<(), FrameError> {
        match form {
            Form::Residuals => {
                decompress_residuals_into(h.esize, payload, out, true, scratch.get())
            }
            _ => decompress_into(h.esize, payload, out, native, scratch.get()),
        }?;
        Ok(())
    }
    /// Pco frames have filter none or a front-end of numbers.
    fn wrong_filter(&self, h: &FrameHeader) -> FrameError {
        CodecError::Pco(format!(
            "filter {} with codec pco (pco frames have filter none, plane or mask)",
            h.filter.name()
        ))
        .into()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use quickcheck::quickcheck;

    /// Big-endian bytes of `nums` (the netCDF layout), computed independently of the codec.
    fn be<T: Copy, const E: usize>(nums: &[T], to_be: fn(T) -> [u8; E]) -> Vec<u8> {
        nums.iter().flat_map(|&x| to_be(x)).collect()
    }

    /// The vendored pco's bin optimization runs in two passes per bin (vendor/pco/NC3PACK.md):
    /// it must choose the bins the published one-pass DP chooses, for every latent width.
    #[test]
    fn the_vendored_bin_optimization_chooses_the_published_bins() {
        use ::pco::nc3pack_checks::check_two_pass_dp;
        let mut split = [0; 4];
        for seed in 1..40 {
            split[0] += check_two_pass_dp::<u16>(seed, 40, 3).unwrap();
            split[1] += check_two_pass_dp::<u32>(seed, 1 << 20, 1 << 10).unwrap();
            split[2] += check_two_pass_dp::<u64>(seed, 1 << 40, 1 << 30).unwrap();
            split[3] += check_two_pass_dp::<u64>(seed, 3, 1).unwrap();
        }
        // Of 39 × 8 histograms of each kind, most keep several bins: the DP's choice matters.
        assert!(split.iter().all(|&k| k > 39 * 4), "{split:?}");
    }

    /// The vendored pco's lookback search is compiled for this CPU as well as for any
    /// (vendor/pco/NC3PACK.md): both must choose the same lookbacks.
    #[test]
    fn the_vendored_lookback_search_is_the_same_on_any_cpu() {
        use ::pco::nc3pack_checks::check_lookbacks;
        let compared =
            check_lookbacks::<u32>(3, 24).unwrap() + check_lookbacks::<u64>(5, 24).unwrap();
        assert!(compared > 24 * 1000, "{compared}");
    }

    /// The vendored pco puts many latents of a wide range in buckets before its partial
    /// quicksort (vendor/pco/NC3PACK.md): the histogram must be the quicksort's alone.
    #[test]
    fn the_vendored_bucketed_histogram_is_the_quicksort_s() {
        use ::pco::nc3pack_checks::check_bucketed;
        let took = [
            check_bucketed::<u32>(7, 12).unwrap(),
            check_bucketed::<u64>(11, 12).unwrap(),
            check_bucketed::<u16>(13, 8).unwrap(),
        ];
        // Every wide set took the bucketed path (u16 ranges may be narrow: counted instead).
        assert_eq!(&took[..2], &[36, 36], "{took:?}");
    }

    /// Compresses, then decodes big-endian and native, into aligned and unaligned outputs;
    /// every way gives the input's bits back.
    fn roundtrip(kind: NumKind, data: &[u8]) -> Vec<u8> {
        let mut c = vec![0xee];
        assert!(compress(kind, data, LEVEL, &mut c), "{kind:?}");
        assert_eq!(c[0], 0xee, "appends");
        let payload = &c[1..];
        let e = kind.esize();
        let mut native = data.to_vec();
        if cfg!(target_endian = "little") {
            for x in native.chunks_exact_mut(e) {
                x.reverse();
            }
        }
        let mut words = vec![0u64; data.len() / 8 + 2];
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
        let mut scratch = PcoScratch::default();
        for at in [0, 1] {
            for (nat, want) in [(false, data), (true, &native[..])] {
                let out = &mut bytes[at..at + data.len()];
                out.fill(0x5a);
                decompress_into(e as u16, payload, out, nat, &mut scratch).unwrap();
                assert!(out == want, "{kind:?} at {at} native {nat}");
            }
        }
        // The vendored decoder's loops as published, and those for BMI2 without AVX-512, not
        // only those this CPU can run (vendor/pco/NC3PACK.md), give the same numbers.
        use ::pco::nc3pack_checks::{with_bmi2_decoding, with_portable_decoding};
        for loops in ["published", "BMI2"] {
            let out = &mut bytes[..data.len()];
            out.fill(0x5a);
            let go = || decompress_into(e as u16, payload, out, false, &mut scratch);
            match loops {
                "published" => with_portable_decoding(go),
                _ => with_bmi2_decoding(go),
            }
            .unwrap();
            assert!(out == data, "{kind:?} on the {loops} loops");
        }
        payload.to_vec()
    }

    quickcheck! {
        fn any_f32_bits_roundtrip(bits: Vec<u32>) -> bool {
            let nums: Vec<f32> = bits.iter().map(|&b| f32::from_bits(b)).collect();
            if nums.is_empty() {
                return true;
            }
            let data = be(&nums, |x: f32| x.to_be_bytes());
            roundtrip(NumKind::F32, &data);
            true
        }
        fn any_f64_bits_roundtrip(bits: Vec<u64>) -> bool {
            let nums: Vec<f64> = bits.iter().map(|&b| f64::from_bits(b)).collect();
            if nums.is_empty() {
                return true;
            }
            roundtrip(NumKind::F64, &be(&nums, |x: f64| x.to_be_bytes()));
            true
        }
        fn any_integers_roundtrip(a: Vec<i16>, b: Vec<u32>, c: Vec<i64>) -> bool {
            if !a.is_empty() {
                roundtrip(NumKind::I16, &be(&a, |x: i16| x.to_be_bytes()));
                let u: Vec<u16> = a.iter().map(|&x| x as u16).collect();
                roundtrip(NumKind::U16, &be(&u, |x: u16| x.to_be_bytes()));
            }
            if !b.is_empty() {
                roundtrip(NumKind::U32, &be(&b, |x: u32| x.to_be_bytes()));
                let i: Vec<i32> = b.iter().map(|&x| x as i32).collect();
                roundtrip(NumKind::I32, &be(&i, |x: i32| x.to_be_bytes()));
            }
            if !c.is_empty() {
                roundtrip(NumKind::I64, &be(&c, |x: i64| x.to_be_bytes()));
                let u: Vec<u64> = c.iter().map(|&x| x as u64).collect();
                roundtrip(NumKind::U64, &be(&u, |x: u64| x.to_be_bytes()));
            }
            true
        }
    }

    /// 64-bit numbers at both ends of their range (bins a whole 2^64 apart, each a few
    /// thousand wide): the encoder's bin lookup table must see the span as too wide, not
    /// overflow on it, and the numbers come back.
    #[test]
    fn numbers_spanning_the_whole_64_bit_range_roundtrip() {
        let mut r = Lcg(7);
        let u: Vec<u64> = (0..20_000)
            .map(|i| {
                let small = r.next() % 3000;
                if i % 2 == 0 {
                    small
                } else {
                    u64::MAX - small
                }
            })
            .collect();
        roundtrip(NumKind::U64, &be(&u, |x: u64| x.to_be_bytes()));
        let i: Vec<i64> = u.iter().map(|&x| (x ^ (1 << 63)) as i64).collect();
        roundtrip(NumKind::I64, &be(&i, |x: i64| x.to_be_bytes()));
    }

    /// Special floats inside data pco compresses well (whole numbers, a multiplier to find):
    /// NaNs with payloads (quiet, signalling, negative), ±0, ±infinity, denormals, extremes.
    #[test]
    fn special_floats_come_back_bit_for_bit() {
        let specials32 = [
            0x7fc0_0000u32,
            0x7fc0_0001,
            0x7f80_0001,
            0xffff_ffff,
            0xff80_0000,
            0x7f80_0000,
            0x8000_0000,
            0,
            1,
            0x8000_0001,
            0x007f_ffff,
            0x7f7f_ffff,
            0xff7f_ffff,
        ];
        let mut f: Vec<f32> = (0..20000).map(|i| ((i * 7919) % 3001) as f32).collect();
        for (k, &s) in specials32.iter().enumerate() {
            f[k * 1013 + 5] = f32::from_bits(s);
        }
        let data = be(&f, |x: f32| x.to_be_bytes());
        let payload = roundtrip(NumKind::F32, &data);
        assert!(payload.len() < data.len() / 3, "{}", payload.len());
        let specials64 = [
            0x7ff8_0000_0000_0000u64,
            0x7ff0_0000_dead_beef,
            0xfff8_0000_0000_0001,
            0x8000_0000_0000_0000,
            0x7ff0_0000_0000_0000,
            0xfff0_0000_0000_0000,
            1,
            0x000f_ffff_ffff_ffff,
        ];
        let mut d: Vec<f64> = (0..20000).map(|i| f64::from(i % 977) * 0.01).collect();
        for (k, &s) in specials64.iter().enumerate() {
            d[k * 2011 + 3] = f64::from_bits(s);
        }
        roundtrip(NumKind::F64, &be(&d, |x: f64| x.to_be_bytes()));
    }

    /// A payload made by pco itself from numbers (no glue of ours on the way in) decodes to the
    /// numbers' big-endian bytes: the element order and byte order FORMAT.md specifies.
    #[test]
    fn a_plain_pco_file_decodes_to_big_endian_values() {
        let nums: Vec<i32> = (0..5000).map(|i| i * i - 7 * i).collect();
        let payload =
            ::pco::standalone::simple_compress(&nums, &::pco::ChunkConfig::default()).unwrap();
        let mut out = vec![0u8; nums.len() * 4];
        decompress_into(4, &payload, &mut out, false, &mut PcoScratch::default()).unwrap();
        assert_eq!(out, be(&nums, |x: i32| x.to_be_bytes()));
        assert_eq!(&out[4..8], &[0xff, 0xff, 0xff, 0xfa]);
    }

    /// Doubles that repeat far apart, as the corners of an unstructured grid's cells (each
    /// vertex in several cells): 700 random values read in a scattered order.
    fn far_repeats(n: usize) -> Vec<f64> {
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let table: Vec<f64> = (0..700)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 11) as f64 / (1u64 << 53) as f64 * 360.0 - 180.0
            })
            .collect();
        (0..n).map(|i| table[(i * 7919 + i / 3) % 700]).collect()
    }

    /// Our writer makes the very file pco's own `simple_compress_into` makes (which names the
    /// number type in the header), over one chunk and over several, and reports pco's choice
    /// of delta encoding.
    #[test]
    fn files_are_pco_s_own_and_the_choice_is_reported() {
        let smooth: Vec<f64> = (0..300_000).map(|i| (i as f64 * 1e-3).sin()).collect();
        for (nums, lookback) in [(far_repeats(4096), true), (smooth, false)] {
            let data = be(&nums, |x: f64| x.to_be_bytes());
            let mut ours = Vec::new();
            let choice = compress_choosing(NumKind::F64, &data, LEVEL, &mut ours).unwrap();
            let config = ::pco::ChunkConfig::default().with_compression_level(LEVEL);
            let theirs =
                ::pco::standalone::simple_compress_into(&nums, &config, Vec::new()).unwrap();
            assert_eq!(ours, theirs, "{} numbers", nums.len());
            assert_eq!(choice.lookback, lookback, "{} numbers", nums.len());
        }
    }

    /// A float multiplier's base read back from a chunk's metadata is the base pco was told
    /// (positive and negative, f32 and f64), and quantization keeps its bit count.
    #[test]
    fn chunk_modes_read_back_as_given() {
        let walk: Vec<f64> = (0..4096)
            .map(|i| f64::from((i * 37) % 1000) * 0.01)
            .collect();
        let f32s: Vec<f32> = walk.iter().map(|&x| x as f32).collect();
        let cases = [
            (NumKind::F64, be(&walk, |x: f64| x.to_be_bytes()), 0.01),
            (NumKind::F64, be(&walk, |x: f64| x.to_be_bytes()), -0.01),
            (
                NumKind::F32,
                be(&f32s, |x: f32| x.to_be_bytes()),
                f64::from(0.01f32),
            ),
            (
                NumKind::F32,
                be(&f32s, |x: f32| x.to_be_bytes()),
                f64::from(-0.01f32),
            ),
        ];
        for (kind, data, base) in cases {
            for mode in [Mode::FloatMult(base), Mode::FloatQuant(3), Mode::Classic] {
                let mut out = Vec::new();
                let choice = compress_choosing_in(kind, &data, LEVEL, mode, &mut out).unwrap();
                assert_eq!(choice.mode, Some(mode), "{kind:?}");
                assert!(choice.forced);
                assert_eq!(choice.decimal(), mode != Mode::Classic);
                let mut back = vec![0u8; data.len()];
                decompress_into(
                    kind.esize() as u16,
                    &out,
                    &mut back,
                    false,
                    &mut PcoScratch::default(),
                )
                .unwrap();
                assert_eq!(back, data, "{kind:?} {mode:?}");
            }
        }
    }

    /// A block's worth (262,144) of floats: `value` of a random walk of integers k from
    /// `start` (steps of -2^(63 - shift) to 2^(63 - shift) - 1), or -1e10 (a fill value) at
    /// the numbers `fill` picks.
    fn walk_among_fill(
        start: i64,
        shift: u32,
        fill: impl Fn(u32) -> bool,
        value: impl Fn(i64) -> f32,
    ) -> Vec<f32> {
        let (mut x, mut k) = (7u64, start);
        (0..262_144u32)
            .map(|i| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                k += (x >> shift) as i64 - (1 << (63 - shift));
                if fill(i) {
                    -1e10
                } else {
                    value(k)
                }
            })
            .collect()
    }

    /// A block's worth (1 MiB) of floats: a random walk in steps of 0.0001 near 15, but for
    /// three in four runs of 32 of its first 8,192 numbers, which are the fill value -1e10.
    pub(crate) fn decimals_behind_fill() -> Vec<f32> {
        walk_among_fill(
            150_000,
            58,
            |i| i < 8192 && !(i / 32).is_multiple_of(4),
            |k| (k as f64 * 1e-4) as f32,
        )
    }

    /// Decimals with fill values crowding the block's start: pco's own choice on the first
    /// 32 KiB is classic, while the mode found over the block is the decimal multiplier, in
    /// which both the sample and the block compress far smaller.
    #[test]
    fn a_block_s_mode_is_found_over_the_block_not_its_start() {
        let nums = decimals_behind_fill();
        let data = be(&nums, |x: f32| x.to_be_bytes());
        let sample = &data[..32 << 10];
        let mut own = Vec::new();
        let own_choice = compress_choosing(NumKind::F32, sample, LEVEL, &mut own).unwrap();
        assert_eq!(own_choice.mode, Some(Mode::Classic));
        let mode = block_float_mode(NumKind::F32, &data).unwrap();
        assert_eq!(mode, Mode::FloatMult(f64::from(1e-4f32)));
        let mut in_mode = Vec::new();
        let choice = compress_choosing_in(NumKind::F32, sample, LEVEL, mode, &mut in_mode).unwrap();
        assert!(
            in_mode.len() * 10 < own.len() * 9,
            "{} {}",
            in_mode.len(),
            own.len()
        );
        let (mut chosen, mut searched) = (Vec::new(), Vec::new());
        assert!(compress_chosen(
            NumKind::F32,
            &data,
            LEVEL,
            choice,
            &mut chosen
        ));
        assert!(compress(NumKind::F32, &data, LEVEL, &mut searched));
        assert!(
            chosen.len() <= searched.len(),
            "{} {}",
            chosen.len(),
            searched.len()
        );
        let mut back = vec![0u8; data.len()];
        decompress_into(4, &chosen, &mut back, false, &mut PcoScratch::default()).unwrap();
        assert_eq!(back, data);
        assert_eq!(block_float_mode(NumKind::I32, &data), None);
    }

    /// A block's worth of floats: whole thousandths (`k as f32 * 0.001`, which is not always
    /// the float nearest k / 1000) in a random walk, in rows of 360 of which about half are
    /// all the fill value -1e10, as land in an ocean field.
    fn thousandths_among_fill_rows() -> Vec<f32> {
        walk_among_fill(
            15_000,
            60,
            |i| (i / 360 * 7919) % 100 < 50,
            |k| k as f32 * 0.001f32,
        )
    }

    /// pco's own choice over the whole block misses the multiplier behind the fill values;
    /// the block's mode, found without the runs, has it, and in it the block is far smaller
    /// and decodes back bit for bit.
    #[test]
    fn a_multiplier_behind_runs_of_fill_values_is_found() {
        let nums = thousandths_among_fill_rows();
        let data = be(&nums, |x: f32| x.to_be_bytes());
        let config = ::pco::ChunkConfig::default();
        let own = ::pco::wrapped::choose_mode(&nums, &config).unwrap();
        assert_eq!(Mode::of_chunk(&own), Some(Mode::Classic));
        let mode = block_float_mode(NumKind::F32, &data).unwrap();
        assert_eq!(mode, Mode::FloatMult(f64::from(0.001f32)));
        let (mut classic, mut in_mode) = (Vec::new(), Vec::new());
        compress_choosing_in(NumKind::F32, &data, LEVEL, Mode::Classic, &mut classic).unwrap();
        let choice = compress_choosing_in(NumKind::F32, &data, LEVEL, mode, &mut in_mode).unwrap();
        assert_eq!(choice.mode, Some(mode));
        assert!(
            in_mode.len() * 10 < classic.len() * 7,
            "{} {}",
            in_mode.len(),
            classic.len()
        );
        let mut back = vec![0u8; data.len()];
        decompress_into(4, &in_mode, &mut back, false, &mut PcoScratch::default()).unwrap();
        assert_eq!(back, data);
    }

    /// A block whose sample chose lookback is compressed with it, without pco's search, to the
    /// bytes the search gives (and they decode back); a sample that did not choose it leaves
    /// the search to pco.
    #[test]
    fn a_sample_s_lookback_choice_is_taken_for_the_block() {
        let nums = far_repeats(131_072);
        let data = be(&nums, |x: f64| x.to_be_bytes());
        let mut sample_out = Vec::new();
        let choice =
            compress_choosing(NumKind::F64, &data[..32 << 10], LEVEL, &mut sample_out).unwrap();
        assert!(choice.lookback);
        let f64s = NumKind::F64;
        let (mut searched, mut chosen, mut unchosen) = (Vec::new(), Vec::new(), Vec::new());
        assert!(compress(f64s, &data, LEVEL, &mut searched));
        assert!(compress_chosen(f64s, &data, LEVEL, choice, &mut chosen));
        let plain = Choice {
            lookback: false,
            mode: None,
            forced: false,
            meta: 0,
        };
        assert!(compress_chosen(f64s, &data, LEVEL, plain, &mut unchosen));
        assert_eq!(chosen, searched);
        assert_eq!(unchosen, searched);
        assert!(chosen.len() * 3 < data.len(), "{}", chosen.len());
        let mut out = vec![0u8; data.len()];
        decompress_into(8, &chosen, &mut out, false, &mut PcoScratch::default()).unwrap();
        assert_eq!(out, data);
    }

    /// The example of design/FORMAT.md: 1.5 and -0.0 as f32.
    #[test]
    fn format_example() {
        let data = [0x3f, 0xc0, 0, 0, 0x80, 0, 0, 0];
        let payload = roundtrip(NumKind::F32, &data);
        assert_eq!(&payload[..6], &[0x70, 0x63, 0x6f, 0x21, 0x03, 0x05]);
        assert_eq!(payload.last(), Some(&0));
    }

    #[test]
    fn damaged_or_mismatched_payloads_are_refused() {
        let nums: Vec<f32> = (0..3000).map(|i| (i % 100) as f32 * 0.5).collect();
        let data = be(&nums, |x: f32| x.to_be_bytes());
        let mut good = Vec::new();
        assert!(compress(NumKind::F32, &data, LEVEL, &mut good));
        let mut s = PcoScratch::default();
        let mut dec = |esize: u16, p: &[u8], len: usize| {
            let mut out = vec![0u8; len];
            decompress_into(esize, p, &mut out, false, &mut s).map_err(|e| e.to_string())
        };
        assert!(dec(4, &good, data.len()).is_ok());
        // The header names the type: f32 (5), as does the chunk.
        assert_eq!((&good[..4], good[4], good[5]), (&b"pco!"[..], 3, 5));
        // Element count: one element more or fewer than the pco data holds.
        let e = dec(4, &good, data.len() + 4).unwrap_err();
        assert!(e.contains("3000 numbers, the frame says 3001"), "{e}");
        let e = dec(4, &good, data.len() - 4).unwrap_err();
        assert!(e.contains("a chunk of 3000 numbers after 0 of 2999"), "{e}");
        // The element size does not match the number type.
        let e = dec(8, &good, data.len()).unwrap_err();
        assert!(
            e.contains("4-byte elements, the frame's element size is 8"),
            "{e}"
        );
        let e = dec(1, &good, data.len()).unwrap_err();
        assert!(e.contains("element size 1"), "{e}");
        // The header's number type changed to u64, or to one the format does not allow (f16).
        for (t, what) in [(2u8, "8-byte elements"), (9, "number type 9 is not")] {
            let mut b = good.clone();
            b[5] = t;
            let e = dec(4, &b, data.len()).unwrap_err();
            assert!(e.contains(what), "{t}: {e}");
        }
        // Trailing bytes, a cut, a bad magic, and every single-byte change: an error or (pco
        // has no checksum of its own; the frame's CRC covers it) some numbers, never a panic.
        let mut b = good.clone();
        b.push(0);
        let e = dec(4, &b, data.len()).unwrap_err();
        assert!(e.contains("1 bytes after the end"), "{e}");
        for cut in [0, 3, 6, good.len() / 2, good.len() - 1] {
            assert!(dec(4, &good[..cut], data.len()).is_err(), "cut at {cut}");
        }
        let mut b = good.clone();
        b[1] = b'x';
        assert!(dec(4, &b, data.len()).unwrap_err().contains("magic"));
        for i in 0..good.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut b = good.clone();
                b[i] ^= flip;
                let _ = dec(4, &b, data.len());
            }
        }
    }

    /// A small deterministic generator (64-bit LCG, high bits) for the inputs below.
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }
    }

    fn fnv(b: &[u8]) -> u64 {
        b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &x| {
            (h ^ u64::from(x)).wrapping_mul(0x100_0000_01b3)
        })
    }

    /// The vendored encoder writes its pages a batch at a time from packed bits, groups the
    /// short numbers it writes and keeps its ANS tables flat (vendor/pco/NC3PACK.md): it
    /// must write the bytes the published pco 1.1.0 wrote for the same numbers and settings
    /// (their length and FNV-1a hash, recorded from that crate as published). The inputs take
    /// two latents a number (lookback delta for far repeats, the float multiplier for
    /// decimals, both checked here), several pages with a delta, 64-bit offsets wider than one
    /// write, and narrow 16-bit numbers at the top level, each a length no multiple of a batch.
    #[test]
    fn the_vendored_encoder_writes_what_published_pco_wrote() {
        use ::pco::standalone::simple_compress;
        use ::pco::{ChunkConfig, DeltaSpec, PagingSpec};
        let mut r = Lcg(7);
        let table: Vec<f64> = (0..500).map(|_| r.next() as f64 / 7.0).collect();
        let repeats: Vec<f64> = (0..20_000)
            .map(|i| {
                if i % 3 == 0 {
                    r.next() as f64
                } else {
                    table[(r.next() % 500) as usize]
                }
            })
            .collect();
        let lookback = ChunkConfig::default().with_delta_spec(DeltaSpec::TryLookback);
        let c = simple_compress(&repeats, &lookback).unwrap();
        assert_eq!(
            (c.len(), fnv(&c)),
            (58600, 0x005e_e406_658c_7336),
            "repeats"
        );
        let decimals: Vec<f32> = (0..30_001)
            .map(|i| ((i as f32 * 0.37).sin() * 2000.0 + (r.next() % 50) as f32).round() * 0.01)
            .collect();
        let c = simple_compress(&decimals, &ChunkConfig::default()).unwrap();
        assert_eq!(
            (c.len(), fnv(&c)),
            (24947, 0x631d_2ae3_c6ff_236c),
            "decimals"
        );
        let mut x = 0i32;
        let smooth: Vec<i32> = (0..10_000)
            .map(|_| {
                x = x.wrapping_add((r.next() % 1000) as i32 - 300);
                x
            })
            .collect();
        let paged = ChunkConfig::default().with_paging_spec(PagingSpec::EqualPagesUpTo(3000));
        let c = simple_compress(&smooth, &paged).unwrap();
        assert_eq!((c.len(), fnv(&c)), (12576, 0xbd82_2306_50a9_07dd), "smooth");
        let wide: Vec<u64> = (0..5_000).map(|_| (r.next() << 31) ^ r.next()).collect();
        let level4 = ChunkConfig::default().with_compression_level(4);
        let c = simple_compress(&wide, &level4).unwrap();
        assert_eq!((c.len(), fnv(&c)), (38779, 0x4163_f706_eb70_2d86), "wide");
        let narrow: Vec<i16> = (0..7_777).map(|_| (r.next() % 37) as i16 - 18).collect();
        let level12 = ChunkConfig::default().with_compression_level(12);
        let c = simple_compress(&narrow, &level12).unwrap();
        assert_eq!((c.len(), fnv(&c)), (5103, 0xd6c4_da63_18ae_ed34), "narrow");

        // The first two take two latents a number, as meant.
        let mut out = Vec::new();
        let choice = write_file(&repeats, &lookback, &mut out).unwrap();
        assert!(choice.lookback);
        let choice = write_file(&decimals, &ChunkConfig::default(), &mut out).unwrap();
        assert!(
            matches!(choice.mode, Some(Mode::FloatMult(_))),
            "{choice:?}"
        );
    }

    /// Residuals through the patched pco encoder (vendor/pco: counting sort and bin lookup
    /// table for narrow ranges) come out as the same bytes as the published pco 1.1.0 made of
    /// them (length and FNV-1a hash of `simple_compress` recorded from that crate, unpatched,
    /// with the same settings; our own path's payload has the same length), and decode back
    /// to the residuals. The inputs take each path: narrow (counting
    /// and table), far outliers (neither), u16 over its whole range (table only), u64 around a
    /// large base (both), and wide random words (neither).
    #[test]
    fn residuals_encode_as_published_pco_did_and_decode_back() {
        fn check(kind: NumKind, words: &[u64], n: usize, want: (usize, u64), name: &str) {
            let mut c = Vec::new();
            assert!(
                compress_residuals_native(kind, words, n, LEVEL, &mut c),
                "{name}"
            );
            let published = match kind.esize() {
                2 => simple(&bytemuck::cast_slice::<u64, u16>(words)[..n]),
                4 => simple(&bytemuck::cast_slice::<u64, u32>(words)[..n]),
                _ => simple(&words[..n]),
            };
            assert_eq!((published.len(), fnv(&published)), want, "{name}");
            assert_eq!(c.len(), want.0, "{name}");
            let e = kind.esize();
            let mut out = vec![0u64; words.len()];
            let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
            decompress_residuals_into(
                e as u16,
                &c,
                &mut bytes[..n * e],
                true,
                &mut PcoScratch::default(),
            )
            .unwrap();
            let orig: &[u8] = bytemuck::cast_slice(words);
            assert!(bytes[..n * e] == orig[..n * e], "{name}");
        }
        fn simple<T: ::pco::data_types::Number>(nums: &[T]) -> Vec<u8> {
            ::pco::standalone::simple_compress(nums, &residual_config(LEVEL)).unwrap()
        }
        fn words_of<T: bytemuck::Pod>(v: &[T]) -> Vec<u64> {
            let mut w = vec![0u64; (std::mem::size_of_val(v)).div_ceil(8)];
            bytemuck::cast_slice_mut::<u64, u8>(&mut w)[..std::mem::size_of_val(v)]
                .copy_from_slice(bytemuck::cast_slice(v));
            w
        }
        let n = 1 << 18;
        let mut r = Lcg(1);
        let a: Vec<u32> = (0..n)
            .map(|_| (r.next() % 1000 + r.next() % 1000) as u32)
            .collect();
        check(
            NumKind::U32,
            &words_of(&a),
            n,
            (350864, 0x1bff9a31bdd9cf33),
            "narrow",
        );
        let mut r = Lcg(2);
        let b: Vec<u32> = (0..n)
            .map(|i| {
                if i % 997 == 0 {
                    3_000_000 + (r.next() % 5) as u32
                } else {
                    (r.next() % 300) as u32
                }
            })
            .collect();
        check(
            NumKind::U32,
            &words_of(&b),
            n,
            (272807, 0x02abb3437dbe281c),
            "outliers",
        );
        let mut r = Lcg(3);
        let c: Vec<u16> = (0..n)
            .map(|i| {
                if i % 513 == 0 {
                    u16::MAX - (r.next() % 3) as u16
                } else {
                    (r.next() % 40) as u16
                }
            })
            .collect();
        check(
            NumKind::U16,
            &words_of(&c),
            n,
            (174909, 0xb297e0307ef5c8cf),
            "u16 edge",
        );
        let mut r = Lcg(4);
        let d: Vec<u64> = (0..n / 2).map(|_| (1u64 << 50) + r.next() % 5000).collect();
        check(
            NumKind::U64,
            &d,
            n / 2,
            (201635, 0x57b08895eec638f4),
            "u64 based",
        );
        let mut r = Lcg(5);
        let e: Vec<u32> = (0..n)
            .map(|_| (r.next() as u32) ^ ((r.next() as u32) << 16))
            .collect();
        check(
            NumKind::U32,
            &words_of(&e),
            n,
            (1048602, 0x5a41cf2450d117b6),
            "wide",
        );
    }
}
