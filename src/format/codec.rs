//! Codecs and filters: turning a block of variable data into a frame payload and back.
//!
//! Encoding applies the filter (byte shuffle for multi-byte elements) and then the codec; if the
//! result is not smaller than the input, the block is stored raw (codec `none`, filter `none`),
//! so a stored payload is never larger than the block.

use crate::format::context;
use crate::format::error::{CodecError, FrameError};
use crate::format::pco::NumKind;
use crate::format::word::{be_to_native, Word};
use crate::format::{crc, Codec, Filter, FrameHeader};

/// Byte-shuffles `src` (elements of `esize` bytes) into `dst`: the first byte of every element,
/// then the second byte of every element, and so on. A trailing partial element is copied as is.
///
/// ```
/// let mut out = Vec::new();
/// nc3pack::__private::shuffle(&[1, 2, 3, 4, 5, 6], 2, &mut out);
/// assert_eq!(out, [1, 3, 5, 2, 4, 6]);
/// ```
pub fn shuffle(src: &[u8], esize: usize, dst: &mut Vec<u8>) {
    dst.clear();
    dst.resize(src.len(), 0);
    let n = src.len() / esize.max(1);
    match esize {
        2 => shuffle_n::<2>(src, dst, n),
        4 => shuffle_n::<4>(src, dst, n),
        8 => shuffle_n::<8>(src, dst, n),
        _ => {
            dst.copy_from_slice(src);
            return;
        }
    }
    dst[n * esize..].copy_from_slice(&src[n * esize..]);
}

fn shuffle_n<const E: usize>(src: &[u8], dst: &mut [u8], n: usize) {
    let outs = streams_mut::<E>(dst, n);
    for (i, e) in src[..n * E].chunks_exact(E).enumerate() {
        for j in 0..E {
            outs[j][i] = e[j];
        }
    }
}

/// The first `E` streams of `n` bytes of `dst`.
fn streams_mut<const E: usize>(dst: &mut [u8], n: usize) -> [&mut [u8]; E] {
    let mut rest = &mut dst[..n * E];
    std::array::from_fn(|_| {
        let (stream, tail) = std::mem::take(&mut rest).split_at_mut(n);
        rest = tail;
        stream
    })
}

fn unshuffle_n<const E: usize>(src: &[u8], dst: &mut [u8], n: usize) {
    if n == 0 {
        return;
    }
    let ins: [&[u8]; E] = std::array::from_fn(|j| &src[j * n..(j + 1) * n]);
    for (i, e) in dst[..n * E].chunks_exact_mut(E).enumerate() {
        for j in 0..E {
            e[j] = ins[j][i];
        }
    }
}

/// Reverses [`shuffle`].
///
/// ```
/// let mut out = Vec::new();
/// nc3pack::__private::unshuffle(&[1, 3, 5, 2, 4, 6], 2, &mut out);
/// assert_eq!(out, [1, 2, 3, 4, 5, 6]);
/// ```
pub fn unshuffle(src: &[u8], esize: usize, dst: &mut Vec<u8>) {
    dst.clear();
    dst.resize(src.len(), 0);
    let n = src.len() / esize.max(1);
    match esize {
        2 => unshuffle_n::<2>(src, dst, n),
        4 => unshuffle_n::<4>(src, dst, n),
        8 => unshuffle_n::<8>(src, dst, n),
        _ => {
            dst.copy_from_slice(src);
            return;
        }
    }
    dst[n * esize..].copy_from_slice(&src[n * esize..]);
}

/// The default compression level of a codec.
///
/// ```
/// use nc3pack::{__private::default_level, format::Codec};
/// assert_eq!(default_level(Codec::Zstd), 3);
/// ```
pub fn default_level(codec: Codec) -> i32 {
    match codec {
        Codec::Zstd => 3,
        Codec::Deflate => 6,
        Codec::Pco => super::pco::LEVEL as i32,
        Codec::Lzma => super::lzma::DEFAULT_LEVEL,
        Codec::None | Codec::Constant | Codec::Context => 0,
    }
}

/// The level of the `max` preset: zstd 19, deflate 9, lzma 9.
///
/// ```
/// use nc3pack::{__private::max_level, format::Codec};
/// assert_eq!(max_level(Codec::Zstd), 19);
/// ```
pub fn max_level(codec: Codec) -> i32 {
    match codec {
        Codec::Zstd => 19,
        Codec::Deflate => 9,
        Codec::Pco => 12,
        Codec::Lzma => super::lzma::MAX_LEVEL,
        Codec::None | Codec::Constant | Codec::Context => 0,
    }
}

/// Checks a level for a codec.
///
/// # Errors
///
/// [`CodecError::Level`], naming the valid range.
pub fn check_level(codec: Codec, level: i32) -> Result<(), CodecError> {
    let range = match codec {
        Codec::Zstd => -7..=22,
        Codec::Deflate => 0..=9,
        Codec::Pco => 0..=12,
        Codec::Lzma => 0..=super::lzma::MAX_LEVEL,
        Codec::None | Codec::Constant | Codec::Context => 0..=0,
    };
    if range.contains(&level) {
        Ok(())
    } else {
        Err(CodecError::Level {
            codec,
            level,
            min: *range.start(),
            max: *range.end(),
        })
    }
}

/// Applies `filter` to `data` (elements of `esize` bytes) into `out`, replacing its contents.
///
/// ```
/// use nc3pack::{__private::{apply_filter, undo_filter}, format::Filter};
/// let data = [0, 10, 0, 11, 0, 13];
/// let mut f = Vec::new();
/// apply_filter(Filter::Delta, &data, 2, &mut f);
/// // Elements 10, 11, 13 become 10, 1, 2, then the high and low bytes are shuffled apart.
/// assert_eq!(f, [0, 0, 0, 10, 1, 2]);
/// let mut back = Vec::new();
/// undo_filter(Filter::Delta, &f, 2, &mut back);
/// assert_eq!(back, data);
///
/// // Elements 10, 11, 9 become 10, 1, -2, zigzag-encoded 20, 2, 3, then shuffled.
/// let data = [0, 10, 0, 11, 0, 9];
/// apply_filter(Filter::ZigZagDelta, &data, 2, &mut f);
/// assert_eq!(f, [0, 0, 0, 20, 2, 3]);
/// undo_filter(Filter::ZigZagDelta, &f, 2, &mut back);
/// assert_eq!(back, data);
/// ```
pub fn apply_filter(filter: Filter, data: &[u8], esize: usize, out: &mut Vec<u8>) {
    match filter {
        Filter::None => {
            out.clear();
            out.extend_from_slice(data);
        }
        Filter::Shuffle => shuffle(data, esize, out),
        Filter::ByteDelta => {
            shuffle(data, esize, out);
            let n = data.len() / esize.max(1);
            for stream in out[..n * esize.max(1)].chunks_exact_mut(n.max(1)) {
                for i in (1..stream.len()).rev() {
                    stream[i] = stream[i].wrapping_sub(stream[i - 1]);
                }
            }
        }
        Filter::Delta => delta_shuffle(data, esize, false, out),
        Filter::ZigZagDelta => delta_shuffle(data, esize, true, out),
        Filter::Lorenzo => super::lorenzo::apply(data, esize, whole_row(data, esize), out),
        Filter::Plane => super::plane::apply(data, esize, &whole_plane(data, esize), out),
        Filter::Refs => apply_refs_whole(data, esize, out),
        Filter::Mask => apply_mask_whole(data, esize, out),
        Filter::Fit => apply_fit_whole(data, esize, out),
    }
}

/// The `refs` filter as [`apply_filter`] gives it: the element count n and the table's entry
/// count d (big-endian u32 each), then the filtered bytes (in a frame, the decoded length gives
/// n, and the payload starts with d only). For an element size other than 4 or 8 (or more than
/// `u32::MAX` elements), the bytes as they are.
fn apply_refs_whole(data: &[u8], esize: usize, out: &mut Vec<u8>) {
    let mut f = Vec::new();
    match super::refs::apply(data, esize, &mut f) {
        Some(d) => {
            out.clear();
            out.extend_from_slice(&((data.len() / esize) as u32).to_be_bytes());
            out.extend_from_slice(&d.to_be_bytes());
            out.append(&mut f);
        }
        None => {
            out.clear();
            out.extend_from_slice(data);
        }
    }
}

/// Reverses [`apply_refs_whole`]; leaves `out` empty for bytes it cannot have made.
fn undo_refs_whole(data: &[u8], esize: usize, out: &mut Vec<u8>) {
    out.clear();
    if !super::refs::supports(esize) {
        out.extend_from_slice(data);
        return;
    }
    let Some((head, rest)) = data.split_first_chunk::<8>() else {
        return;
    };
    let n = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let d = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
    // The trailing bytes: what is left of the filtered bytes after the refs and the table.
    let Some(t) = super::refs::filtered_len(n * esize, esize, d as usize)
        .and_then(|l| rest.len().checked_sub(l))
        .filter(|&t| t < esize)
    else {
        return;
    };
    out.resize(n * esize + t, 0);
    if super::refs::undo(rest, esize, d, out).is_err() {
        out.clear();
    }
}

/// The `mask` filter as [`apply_filter`] gives it: byte 1, the element count n (big-endian
/// u32), the prefix (with the block's fill candidate, or its first element) and the other
/// elements as they are; byte 0 and the bytes as they are for an element size other than 2,
/// 4 or 8, a length that is not a whole number of elements, more than `u32::MAX` elements, or
/// elements all equal.
fn apply_mask_whole(data: &[u8], esize: usize, out: &mut Vec<u8>) {
    out.clear();
    let n = data.len() / esize.max(1);
    let fill =
        super::mask::fill_of(data, esize).or_else(|| data.get(..esize).map(super::mask::element));
    let whole = super::mask::supports(esize) && data.len().is_multiple_of(esize);
    if let (true, Some(fill), Ok(count)) = (whole, fill, u32::try_from(n)) {
        let (mut prefix, mut rest) = (Vec::new(), Vec::new());
        if super::mask::apply(data, esize, fill, &mut prefix, &mut rest)
            .is_some_and(|s| s.others > 0)
        {
            out.push(1);
            out.extend_from_slice(&count.to_be_bytes());
            out.append(&mut prefix);
            out.append(&mut rest);
            return;
        }
    }
    out.push(0);
    out.extend_from_slice(data);
}

/// Reverses [`apply_mask_whole`]; leaves `out` empty for bytes it cannot have made.
fn undo_mask_whole(data: &[u8], esize: usize, out: &mut Vec<u8>) {
    out.clear();
    match data.split_first() {
        Some((0, rest)) => out.extend_from_slice(rest),
        Some((1, rest)) => {
            let Some((count, payload)) = rest.split_first_chunk::<4>() else {
                return;
            };
            let n = u32::from_be_bytes(*count) as usize;
            let mut bits = Vec::new();
            let Ok((fill, m, others)) = super::mask::decode(payload, esize, n, &mut bits) else {
                return;
            };
            if others.len() != m * esize {
                return;
            }
            out.resize(n * esize, 0);
            super::mask::undo_into(others, &bits, fill, esize, out, false);
        }
        _ => {}
    }
}

/// The taps [`apply_filter`] gives the `fit` filter: the block as one row, so the two
/// elements before the one before.
const WHOLE_FIT_TAPS: [u32; 2] = [2, 3];

/// The `fit` filter as [`apply_filter`] gives it: byte 1, the prefix (integers, no fill, the
/// weights fitted for [`WHOLE_FIT_TAPS`]) and the zigzag residuals as big-endian numbers of
/// the element size; byte 0 and the bytes as they are for an element size other than 2, 4 or
/// 8, or a length that is not a whole number of elements.
fn apply_fit_whole(data: &[u8], esize: usize, out: &mut Vec<u8>) {
    use super::fit;
    out.clear();
    if !fit::supports(esize) || !data.len().is_multiple_of(esize) {
        out.push(0);
        out.extend_from_slice(data);
        return;
    }
    let mut work = fit::Work::default();
    let p = fit::fit(data, esize, false, None, &WHOLE_FIT_TAPS, &mut work);
    let mut words = Vec::new();
    let m = fit::apply_native(data, esize, &p, None, &mut words, &mut work);
    out.push(1);
    p.encode(false, out);
    for i in 0..m {
        let z = match esize {
            2 => u64::from(bytemuck::cast_slice::<u64, u16>(&words)[i]),
            4 => u64::from(bytemuck::cast_slice::<u64, u32>(&words)[i]),
            _ => words[i],
        };
        out.extend_from_slice(&z.to_be_bytes()[8 - esize..]);
    }
}

/// Reverses [`apply_fit_whole`]; leaves `out` empty for bytes it cannot have made.
fn undo_fit_whole(data: &[u8], esize: usize, out: &mut Vec<u8>) {
    use super::{fit, mask::element as mask_element};
    out.clear();
    match data.split_first() {
        Some((0, rest)) => out.extend_from_slice(rest),
        Some((1, rest)) if fit::supports(esize) => {
            let Ok((p, false, z)) = fit::Params::decode(rest) else {
                return;
            };
            if !z.len().is_multiple_of(esize) {
                return;
            }
            // The residuals in native order, aligned for their type.
            let mut words = vec![0u64; z.len().div_ceil(8)];
            for (i, x) in z.chunks_exact(esize).enumerate() {
                let u = mask_element(x);
                match esize {
                    2 => bytemuck::cast_slice_mut::<u64, u16>(&mut words)[i] = u as u16,
                    4 => bytemuck::cast_slice_mut::<u64, u32>(&mut words)[i] = u as u32,
                    _ => words[i] = u,
                }
            }
            let native = &bytemuck::cast_slice::<u64, u8>(&words)[..z.len()];
            out.resize(z.len(), 0);
            fit::undo_into(
                native,
                esize,
                &p,
                None,
                out,
                false,
                &mut fit::Work::default(),
            );
        }
        _ => {}
    }
}

/// The parameters [`apply_filter`] and [`undo_filter`] give the `plane` filter: the whole block
/// as one row (so the left predictor), integers (blocks of variables use the variable's rows
/// and a chosen predictor; see [`plane_payload`]).
fn whole_plane(data: &[u8], esize: usize) -> super::plane::Params {
    super::plane::Params {
        row: u32::try_from(whole_row(data, esize)).unwrap_or(u32::MAX),
        float: false,
        pred: super::plane::PREDICTORS[3],
    }
}

/// The payload of a `plane` frame (filter 6, codec pco) for `data`, numbers of `kind` in rows of
/// `row` elements (at least 1; at most the block is used): the 9-byte prefix with the predictor
/// of the writer's four that costs least on `data`, then the pco file of the residuals. `None`
/// when pco cannot compress `data` (empty, or not whole elements).
///
/// ```
/// use nc3pack::{__private::{decode_payload, plane_payload, NumKind}, format::{crc, Codec, Filter, FrameHeader}};
/// // A 3 x 4 grid of int16 heights.
/// let grid: Vec<i16> = (0..12).map(|i| 100 + 3 * (i % 4) + 5 * (i / 4)).collect();
/// let data: Vec<u8> = grid.iter().flat_map(|x| x.to_be_bytes()).collect();
/// let payload = plane_payload(&data, NumKind::I16, 4).unwrap();
/// assert_eq!(&payload[..5], &[0, 0, 0, 4, 0]); // row length 4, map 0 (integers)
/// let h = FrameHeader {
///     stored_len: payload.len() as u32, decoded_len: 24, stream: 0, block: 0,
///     codec: Codec::Pco, filter: Filter::Plane, esize: 2, payload_crc: crc(&payload),
/// };
/// let mut back = Vec::new();
/// decode_payload(&h, &payload, &mut back).unwrap();
/// assert_eq!(back, data);
/// ```
pub fn plane_payload(data: &[u8], kind: NumKind, row: usize) -> Option<Vec<u8>> {
    let e = kind.esize();
    let n = data.len() / e;
    let row = u32::try_from(row.clamp(1, n.max(1))).unwrap_or(u32::MAX);
    let p = super::plane::choose(data, e, row, kind.is_float());
    let mut f = Vec::new();
    super::plane::apply(data, e, &p, &mut f);
    let mut out = p.encode().to_vec();
    super::pco::compress_residuals(kind.unsigned(), &f, super::pco::LEVEL, &mut out).then_some(out)
}

/// The payload of a `mask` frame (filter 8, codec pco) for `data`, numbers of `kind`: the prefix
/// for the block's fill value (see the format's filter 8) and the pco file of its other
/// numbers. `None` when the block has no fill value (one at least 1 in 20 of its elements, in
/// runs, and not all of them) or pco cannot compress the others.
///
/// ```
/// use nc3pack::{__private::{decode_payload, mask_payload, NumKind}, format::{crc, Codec, Filter, FrameHeader}};
/// // Temperatures in hundredths, land filled with -1e34.
/// let temps: Vec<f32> = (0..400)
///     .map(|i| if (i / 20) % 3 == 0 { -1e34 } else { (1500 + i % 37) as f32 * 0.01 })
///     .collect();
/// let data: Vec<u8> = temps.iter().flat_map(|x| x.to_be_bytes()).collect();
/// let payload = mask_payload(&data, NumKind::F32).unwrap();
/// assert_eq!(&payload[..4], &(-1e34f32).to_be_bytes()); // the fill element
/// let h = FrameHeader {
///     stored_len: payload.len() as u32, decoded_len: 1600, stream: 0, block: 0,
///     codec: Codec::Pco, filter: Filter::Mask, esize: 4, payload_crc: crc(&payload),
/// };
/// let mut back = Vec::new();
/// decode_payload(&h, &payload, &mut back).unwrap();
/// assert_eq!(back, data);
/// ```
pub fn mask_payload(data: &[u8], kind: NumKind) -> Option<Vec<u8>> {
    let e = kind.esize();
    let fill = super::mask::fill_of(data, e)?;
    let (mut out, mut rest) = (Vec::new(), Vec::new());
    super::mask::apply(data, e, fill, &mut out, &mut rest)?;
    let mode = super::pco::block_float_mode(kind, &rest);
    let mut p = Vec::new();
    pco_sample(kind, &rest, mode, &mut p)?;
    out.append(&mut p);
    Some(out)
}

/// The payload of a `fit` frame (filter 9, codec pco) for `data`, numbers of `kind` in rows of
/// `row` elements (at least 2; the block's length when shorter), as the writer makes it: the
/// predictor fitted to the block on the element two back and five elements of each of the two
/// rows before, the block's fill value (if it has one: see [`mask_payload`]) set apart. `None`
/// when `data` is not whole elements of 2, 4 or 8 bytes, pco cannot compress the residuals, or
/// the payload would not be smaller than `data`.
///
/// ```
/// use nc3pack::{__private::{decode_payload, fit_payload, NumKind}, format::{crc, Codec, Filter, FrameHeader}};
/// // A 40 x 50 grid of floats: a smooth field plus noise, a fill value over a "continent".
/// let mut x = 1u32;
/// let data: Vec<u8> = (0..2000)
///     .flat_map(|i| {
///         x = x.wrapping_mul(1664525).wrapping_add(1013904223);
///         let (r, c) = ((i / 50) as f32, (i % 50) as f32);
///         let land = (10..20).contains(&(i / 50)) && c < 20.0;
///         let t = 280.0 + r * 0.3 + (c * 0.2).sin() + (x >> 24) as f32 * 1e-3;
///         (if land { 9.96921e36f32 } else { t }).to_be_bytes()
///     })
///     .collect();
/// let payload = fit_payload(&data, NumKind::F32, 50).unwrap();
/// assert_eq!(payload[..3], [1, 12, 1]); // floats, shift 12, a fill section
/// let h = FrameHeader {
///     stored_len: payload.len() as u32, decoded_len: 8000, stream: 0, block: 0,
///     codec: Codec::Pco, filter: Filter::Fit, esize: 4, payload_crc: crc(&payload),
/// };
/// let mut back = Vec::new();
/// decode_payload(&h, &payload, &mut back).unwrap();
/// assert_eq!(back, data);
/// ```
pub fn fit_payload(data: &[u8], kind: NumKind, row: usize) -> Option<Vec<u8>> {
    let e = kind.esize();
    if !super::fit::supports(e) || !data.len().is_multiple_of(e) {
        return None;
    }
    let row = row.clamp(2, (data.len() / e).max(2));
    let fill = super::mask::fill_of(data, e);
    let (mut out, mut words) = (Vec::new(), Vec::new());
    let mut work = super::fit::Work::default();
    fit_encode(kind, row, fill, None, data, &mut work, &mut words, &mut out)?;
    Some(out)
}

/// Encodes the block `data` (numbers of `kind` in rows of `row`) with the `fit` predictor
/// fitted to it and pco into `c` (replacing it), the elements equal to `fill` set apart: the
/// prefix, the fill section (`section` where the caller made it, else made here), pco's file.
/// `None` (and `c` unspecified) when pco fails or the result is not smaller than the block.
#[allow(clippy::too_many_arguments)]
fn fit_encode(
    kind: NumKind,
    row: usize,
    fill: Option<u64>,
    section: Option<&[u8]>,
    data: &[u8],
    work: &mut super::fit::Work,
    words: &mut Vec<u64>,
    c: &mut Vec<u8>,
) -> Option<(Codec, Filter)> {
    use super::fit;
    let e = kind.esize();
    let n = data.len() / e;
    fit::load(data, e, kind.is_float(), fill, work);
    let p = fit::fit_loaded(e, kind.is_float(), &fit::offsets_for(row, n), work);
    let m = fit::residuals(e, &p, 0..n, words, work);
    c.clear();
    p.encode(fill.is_some(), c);
    match (fill, section) {
        (Some(_), Some(section)) => c.extend_from_slice(section),
        (Some(f), None) => {
            super::mask::section(data, e, f, c)?;
        }
        (None, _) => {}
    }
    let done =
        super::pco::compress_residuals_native(kind.unsigned(), words, m, super::pco::LEVEL, c);
    (done && c.len() < data.len()).then_some((Codec::Pco, Filter::Fit))
}

/// The payload of a `context` frame (codec 6, filter none) for `data`, numbers of `kind` in rows
/// of `row` elements (at least 1; at most the block is used), with the predictor the `max`
/// preset would choose. `None` when the codec cannot encode `data` (not whole elements) or its
/// payload would not be smaller than `data`.
///
/// ```
/// use nc3pack::{__private::{context_payload, decode_payload, NumKind}, format::{crc, Codec, Filter, FrameHeader}};
/// // A 40 x 50 grid of floats with noise.
/// let mut x = 1u32;
/// let data: Vec<u8> = (0..2000)
///     .flat_map(|i| {
///         x = x.wrapping_mul(1664525).wrapping_add(1013904223);
///         (280.0 + (i / 50) as f32 * 0.1 + (x >> 24) as f32 * 1e-3).to_be_bytes()
///     })
///     .collect();
/// let payload = context_payload(&data, NumKind::F32, 50).unwrap();
/// assert_eq!(&payload[2..6], &[0, 0, 0, 50]); // row length 50
/// let h = FrameHeader {
///     stored_len: payload.len() as u32, decoded_len: 8000, stream: 0, block: 0,
///     codec: Codec::Context, filter: Filter::None, esize: 4, payload_crc: crc(&payload),
/// };
/// let mut back = Vec::new();
/// decode_payload(&h, &payload, &mut back).unwrap();
/// assert_eq!(back, data);
/// ```
pub fn context_payload(data: &[u8], kind: NumKind, row: usize) -> Option<Vec<u8>> {
    let e = kind.esize();
    let n = data.len() / e;
    let mut out = Vec::new();
    context::compress_best(
        data,
        e,
        kind.is_float(),
        row.clamp(1, n.max(1)),
        data.len(),
        &mut out,
    )
    .map(|_| out)
}

/// The row length [`apply_filter`] and [`undo_filter`] give the `lorenzo` filter: the whole
/// block as one row (blocks of variables use the variable's rows; see [`apply_lorenzo`]).
fn whole_row(data: &[u8], esize: usize) -> usize {
    (data.len() / esize.max(1)).max(1)
}

/// Applies the `lorenzo` filter with rows of `row` elements (at least 1) to `data` (elements of
/// `esize` bytes, 4 or 8; for another size the bytes are copied as they are) into `out`,
/// replacing its contents. The frame payload is the row length as 4 big-endian bytes, then
/// the codec's encoding of `out`.
///
/// ```
/// use nc3pack::__private::{apply_lorenzo, undo_lorenzo};
/// // A 2 x 2 block of floats 1, 2 / 3, 4: predictions 0, 1, 1 and 2 + 3 - 1.
/// let data: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|x| x.to_be_bytes()).collect();
/// let mut f = Vec::new();
/// apply_lorenzo(&data, 4, 2, &mut f);
/// let mut back = vec![0; f.len()];
/// undo_lorenzo(&f, 4, 2, &mut back);
/// assert_eq!(back, data);
/// ```
pub fn apply_lorenzo(data: &[u8], esize: usize, row: usize, out: &mut Vec<u8>) {
    super::lorenzo::apply(data, esize, row, out);
}

/// Reverses [`apply_lorenzo`] into `out`, which must be as long as `data` (big-endian
/// elements).
pub fn undo_lorenzo(data: &[u8], esize: usize, row: usize, out: &mut [u8]) {
    super::lorenzo::undo_into(data, esize, row, out, false);
}

/// Reverses [`apply_filter`].
pub fn undo_filter(filter: Filter, data: &[u8], esize: usize, out: &mut Vec<u8>) {
    match filter {
        Filter::None => {
            out.clear();
            out.extend_from_slice(data);
        }
        Filter::Shuffle => unshuffle(data, esize, out),
        Filter::ByteDelta => {
            let mut d = data.to_vec();
            let n = data.len() / esize.max(1);
            for stream in d[..n * esize.max(1)].chunks_exact_mut(n.max(1)) {
                for i in 1..stream.len() {
                    stream[i] = stream[i].wrapping_add(stream[i - 1]);
                }
            }
            unshuffle(&d, esize, out);
        }
        Filter::Delta => unshuffle_undelta(data, esize, false, out),
        Filter::ZigZagDelta => unshuffle_undelta(data, esize, true, out),
        Filter::Lorenzo => {
            out.clear();
            out.resize(data.len(), 0);
            super::lorenzo::undo_into(data, esize, whole_row(data, esize), out, false);
        }
        Filter::Plane => {
            out.clear();
            out.resize(data.len(), 0);
            super::plane::undo_be(data, esize, &whole_plane(data, esize), out);
        }
        Filter::Refs => undo_refs_whole(data, esize, out),
        Filter::Mask => undo_mask_whole(data, esize, out),
        Filter::Fit => undo_fit_whole(data, esize, out),
    }
}

/// The `delta` filter (`zigzag` false) or the `zzdelta` filter (`zigzag` true) of `src` into
/// `dst`. For elements of 2, 4 or 8 bytes: element differences, optionally zigzag-encoded, then
/// shuffled, in one pass; a trailing partial element is copied as is. For any other element
/// size: each byte replaced by its difference from the previous byte, without zigzag.
fn delta_shuffle(src: &[u8], esize: usize, zigzag: bool, dst: &mut Vec<u8>) {
    dst.clear();
    dst.resize(src.len(), 0);
    let n = src.len() / esize.max(1);
    let f = match (esize, zigzag) {
        (2, false) => delta_shuffle_n::<u16, 2, false>,
        (2, true) => delta_shuffle_n::<u16, 2, true>,
        (4, false) => delta_shuffle_n::<u32, 4, false>,
        (4, true) => delta_shuffle_n::<u32, 4, true>,
        (8, false) => delta_shuffle_n::<u64, 8, false>,
        (8, true) => delta_shuffle_n::<u64, 8, true>,
        _ => {
            let mut prev = 0u8;
            for (d, &x) in dst.iter_mut().zip(src) {
                *d = x.wrapping_sub(prev);
                prev = x;
            }
            return;
        }
    };
    f(src, dst, n);
    dst[n * esize..].copy_from_slice(&src[n * esize..]);
}

/// Reverses [`delta_shuffle`].
fn unshuffle_undelta(src: &[u8], esize: usize, zigzag: bool, dst: &mut Vec<u8>) {
    dst.clear();
    dst.resize(src.len(), 0);
    let n = src.len() / esize.max(1);
    let f = match (esize, zigzag) {
        (2, false) => unshuffle_undelta_n::<u16, 2, false>,
        (2, true) => unshuffle_undelta_n::<u16, 2, true>,
        (4, false) => unshuffle_undelta_n::<u32, 4, false>,
        (4, true) => unshuffle_undelta_n::<u32, 4, true>,
        (8, false) => unshuffle_undelta_n::<u64, 8, false>,
        (8, true) => unshuffle_undelta_n::<u64, 8, true>,
        _ => {
            let mut prev = 0u8;
            for (x, &d) in dst.iter_mut().zip(src) {
                prev = prev.wrapping_add(d);
                *x = prev;
            }
            return;
        }
    };
    f(src, dst, n);
    dst[n * esize..].copy_from_slice(&src[n * esize..]);
}

/// Delta (and with `ZIGZAG`, zigzag) encodes the first `n` elements of `src`, big-endian
/// integers `W` of `E` bytes, and writes them shuffled into `dst`. (Native integer types let the
/// compiler vectorize the loop.)
fn delta_shuffle_n<W: Word, const E: usize, const ZIGZAG: bool>(
    src: &[u8],
    dst: &mut [u8],
    n: usize,
) {
    const { assert!(std::mem::size_of::<W>() == E) };
    let mut outs = streams_mut::<E>(dst, n);
    let mut prev = W::ZERO;
    for (i, e) in src[..n * E].chunks_exact(E).enumerate() {
        let x = W::from_be(e);
        let mut d = x.wrapping_sub(prev);
        prev = x;
        if ZIGZAG {
            d = d.zigzag();
        }
        for (j, out) in outs.iter_mut().enumerate() {
            out[i] = d.be_byte(j);
        }
    }
}

/// Reverses [`delta_shuffle_n`]: unshuffles (and un-zigzags) the first `n` elements in one
/// pass, which the compiler vectorizes, then takes running sums.
fn unshuffle_undelta_n<W: Word, const E: usize, const ZIGZAG: bool>(
    src: &[u8],
    dst: &mut [u8],
    n: usize,
) {
    const { assert!(std::mem::size_of::<W>() == E) };
    let ins: [&[u8]; E] = std::array::from_fn(|j| &src[j * n..(j + 1) * n]);
    for (i, e) in dst[..n * E].chunks_exact_mut(E).enumerate() {
        let d = W::from_be(&std::array::from_fn::<u8, E, _>(|j| ins[j][i]));
        if ZIGZAG {
            d.unzigzag().put_be(e);
        } else {
            d.put_be(e);
        }
    }
    let mut prev = W::ZERO;
    for e in dst[..n * E].chunks_exact_mut(E) {
        prev = prev.wrapping_add(W::from_be(e));
        prev.put_be(e);
    }
}

/// The filter each member of the shared stream is stored with: a small variable's bytes are
/// filtered as a whole, with its own element size, before they join the shared stream (whose
/// blocks then get a byte-wise filter of their own). Single-byte elements are stored as they are.
pub const MEMBER_FILTER: Filter = Filter::ZigZagDelta;

/// Encodes a member of the shared stream (elements of `esize` bytes) into `out`, replacing its
/// contents: `MEMBER_FILTER` for multi-byte elements, a copy otherwise. Same length as `data`.
///
/// ```
/// let mut enc = Vec::new();
/// nc3pack::__private::member_encode(4, &[0, 0, 0, 5, 0, 0, 0, 6], &mut enc);
/// let mut back = Vec::new();
/// nc3pack::__private::member_decode(4, &enc, &mut back);
/// assert_eq!(back, [0, 0, 0, 5, 0, 0, 0, 6]);
/// ```
pub fn member_encode(esize: usize, data: &[u8], out: &mut Vec<u8>) {
    let filter = if esize > 1 {
        MEMBER_FILTER
    } else {
        Filter::None
    };
    apply_filter(filter, data, esize, out);
}

/// Reverses [`member_encode`].
pub fn member_decode(esize: usize, data: &[u8], out: &mut Vec<u8>) {
    let filter = if esize > 1 {
        MEMBER_FILTER
    } else {
        Filter::None
    };
    undo_filter(filter, data, esize, out);
}

/// How the encoder chooses a block's filter.
///
/// ```
/// use nc3pack::{format::Filter, FilterMode};
/// assert_eq!("auto".parse::<FilterMode>()?, FilterMode::Auto);
/// assert_eq!("shuffle".parse::<FilterMode>()?, FilterMode::Fixed(Filter::Shuffle));
/// assert!("fastest".parse::<FilterMode>().is_err());
/// # Ok::<(), nc3pack::ParseNameError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterMode {
    /// Per block, the filter that compresses best: judged on a 32 KiB sample with zstd level 1,
    /// or (thorough encoders) on the whole block with zstd level 3.
    Auto,
    /// Always this filter.
    Fixed(Filter),
}

/// Size of the sample a fast encoder judges filters on.
const FILTER_SAMPLE: usize = 32 << 10;

/// With fast blocks (see [`Encoder::fast_blocks`]), a block uses level 1 unless the encoder's
/// level makes the sample smaller than this fraction of level 1's result.
const FAST_ENOUGH: f64 = 0.98;

/// A reusable block encoder (one per thread): holds the codec contexts and scratch space.
///
/// ```
/// use nc3pack::{FilterMode, __private::{Encoder, decode_payload}, format::{Codec, FrameHeader, FRAME_HEADER_LEN}};
/// let data: Vec<u8> = (0..4000u32).flat_map(|i| (i / 10).to_be_bytes()).collect();
/// let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false).unwrap();
/// let mut frame = Vec::new();
/// let h = enc.encode_block(0, 0, 4, &data, &mut frame).frame().unwrap();
/// assert!(h.stored_len < data.len() as u32);
/// let h2 = FrameHeader::decode(&frame).unwrap();
/// let mut out = Vec::new();
/// decode_payload(&h2, &frame[FRAME_HEADER_LEN..], &mut out).unwrap();
/// assert_eq!(out, data);
/// ```
pub struct Encoder {
    codec: Codec,
    level: i32,
    mode: FilterMode,
    thorough: bool,
    zstd: Option<zstd::bulk::Compressor<'static>>,
    probe: Option<zstd::bulk::Compressor<'static>>,
    /// A zstd level 1 context, when blocks may use it (see [`Encoder::fast_blocks`]).
    fast: Option<zstd::bulk::Compressor<'static>>,
    /// Whether the block being encoded uses `fast`.
    use_fast: bool,
    filtered: Vec<u8>,
    scratch: Vec<u8>,
    /// The `plane` residuals of the block being encoded, as native numbers.
    words: Vec<u64>,
    /// Whether numeric blocks may use the pco codec (see [`Encoder::numeric`]).
    pco: bool,
    /// The number type of the block being encoded, when it is numeric.
    kind: Option<NumKind>,
    /// Whether the block being encoded uses pco (its sample said so).
    use_pco: bool,
    /// What pco chose on the sample that set `use_pco`, for the block's run.
    pco_choice: Option<super::pco::Choice>,
    /// For thorough encoders, the float mode found over the block being encoded (see
    /// `pco::block_float_mode`).
    block_mode: Option<super::pco::Mode>,
    /// What pco chose on the sample of the block's elements other than its fill value, when
    /// the sample said to set them apart (filter `mask`) for the block's run.
    use_mask: Option<super::pco::Choice>,
    /// The `mask` prefix of the block being encoded (see [`super::mask::apply`]).
    mask_prefix: Vec<u8>,
    /// The block's elements other than its fill value (see [`super::mask::apply`]).
    mask_rest: Vec<u8>,
    /// The row length of the block being encoded when it may use the `lorenzo` filter (floats
    /// of a variable of at least two dimensions; see [`Encoder::encode_block_numeric`]).
    row: Option<usize>,
    /// The row length of the block being encoded when it may use the `plane` filter (numbers
    /// that may use pco, of a variable of at least two dimensions).
    plane_row: Option<usize>,
    /// The `plane` parameters when the block's sample chose plane with pco.
    use_plane: Option<super::plane::Params>,
    /// The row length and fill value when the block's sample chose `fit` with pco.
    use_fit: Option<(usize, Option<u64>)>,
    /// Buffers for the `fit` filter.
    fit_work: super::fit::Work,
    /// `mask`'s estimated result on the block, when the sample chose it.
    mask_est: f64,
    /// Whether the sample chose `plane` over the block codec (not over pco alone): then the
    /// whole block checks that choice (see [`PLANE_MARGIN`]).
    plane_check: bool,
    /// Where the sample's values come from a small set (see [`REFS_LATE_NEW`]) and no numeric
    /// codec took the block, which then also tries `refs` with zstd (see
    /// [`Encoder::plain_block`]): the block codec's result on the block estimated from the
    /// sample's best filter with the probe level, scaled to the block's length.
    refs_est: Option<f64>,
    /// The size the chosen filter got with the probe level on the judged sample (for thorough
    /// encoders, the whole block); 0 when no filter was judged.
    probe_size: usize,
    /// Whether blocks may use the lzma codec instead where it pays (the `max` preset with
    /// zstd; see [`Encoder::lzma_block`]).
    lzma_alt: bool,
    /// Block-codec runs on whole blocks (counted for tests).
    #[cfg(test)]
    codec_runs: usize,
    /// Whether the last block's `plane` choice went to [`Encoder::check_plane`] (for tests).
    #[cfg(test)]
    plane_checked: bool,
}

impl Encoder {
    /// An encoder for `codec` at `level` choosing filters by `mode`; a `thorough` encoder judges
    /// filters on whole blocks (slower, for the `max` preset).
    ///
    /// # Errors
    ///
    /// [`CodecError::Level`] for a level outside the codec's range, [`CodecError::Zstd`] when
    /// zstd cannot make a context.
    pub fn new(
        codec: Codec,
        level: i32,
        mode: FilterMode,
        thorough: bool,
    ) -> Result<Encoder, CodecError> {
        check_level(codec, level)?;
        let ctx = |l| zstd::bulk::Compressor::new(l).map_err(|e| CodecError::Zstd(e.to_string()));
        Ok(Encoder {
            codec,
            level,
            mode,
            thorough,
            zstd: if codec == Codec::Zstd {
                Some(ctx(level)?)
            } else {
                None
            },
            probe: if mode == FilterMode::Auto && codec != Codec::None {
                Some(ctx(if thorough { 3 } else { 1 })?)
            } else {
                None
            },
            fast: None,
            use_fast: false,
            filtered: Vec::new(),
            scratch: Vec::new(),
            words: Vec::new(),
            pco: false,
            kind: None,
            use_pco: false,
            pco_choice: None,
            block_mode: None,
            use_mask: None,
            mask_prefix: Vec::new(),
            mask_rest: Vec::new(),
            row: None,
            plane_row: None,
            use_plane: None,
            use_fit: None,
            fit_work: super::fit::Work::default(),
            mask_est: 0.0,
            plane_check: false,
            refs_est: None,
            probe_size: 0,
            lzma_alt: thorough && codec == Codec::Zstd && mode == FilterMode::Auto,
            #[cfg(test)]
            codec_runs: 0,
            #[cfg(test)]
            plane_checked: false,
        })
    }

    /// Lets each block use zstd level 1 (the level filters are judged with) instead of the
    /// encoder's level when the encoder's level does not make the block's filtered sample at
    /// least 2 % smaller (the `fast` preset: on noisy floats level 1 compresses as well as level
    /// 3 in half the time, while record data with repeats gains from level 3). Only with zstd,
    /// filters chosen per block ([`FilterMode::Auto`]) and not thorough; otherwise nothing
    /// changes.
    ///
    /// ```
    /// use nc3pack::{FilterMode, __private::{decode_payload, Encoder}, format::{Codec, FrameHeader}};
    /// let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false).unwrap().fast_blocks(true).unwrap();
    /// let noise: Vec<u8> = (0..65536u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    /// let mut frame = Vec::new();
    /// let h = enc.encode_block(0, 0, 4, &noise, &mut frame).frame().unwrap();
    /// let mut back = Vec::new();
    /// decode_payload(&h, &frame[36..], &mut back).unwrap();
    /// assert_eq!(back, noise);
    /// ```
    ///
    /// # Errors
    ///
    /// [`CodecError::Zstd`] when zstd cannot make the level 1 context.
    pub fn fast_blocks(mut self, on: bool) -> Result<Encoder, CodecError> {
        self.fast =
            if on && self.codec == Codec::Zstd && self.mode == FilterMode::Auto && !self.thorough {
                Some(zstd::bulk::Compressor::new(1).map_err(|e| CodecError::Zstd(e.to_string()))?)
            } else {
                None
            };
        Ok(self)
    }

    /// Lets numeric blocks (given a [`NumKind`] by [`Encoder::encode_block_numeric`]) use the
    /// pco codec instead of the filter and block codec where it compresses better: judged on
    /// the filters' sample, where pco must be at least 20 % (10 % for floats that pco takes as
    /// decimals or whole numbers) smaller than the best filter with zstd level 1, or
    /// (thorough encoders) on the whole block against the block codec's
    /// result. Only with filters chosen per block ([`FilterMode::Auto`]) and a codec other
    /// than none; otherwise nothing changes.
    ///
    /// ```
    /// use nc3pack::{FilterMode, __private::{decode_payload, Encoder, NumKind}, format::Codec};
    /// let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false).unwrap().numeric(true);
    /// // A random walk in steps of 0.01 as floats: noise to byte filters, integers to pco.
    /// let (mut k, mut x) = (2000i64, 1u64);
    /// let data: Vec<u8> = (0..65536)
    ///     .flat_map(|_| {
    ///         x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    ///         k += (x >> 61) as i64 - 3;
    ///         ((k as f64 * 0.01) as f32).to_be_bytes()
    ///     })
    ///     .collect();
    /// let mut frame = Vec::new();
    /// let h = enc.encode_block_numeric(0, 0, 4, (Some(NumKind::F32), 0), &data, &mut frame);
    /// let h = h.frame().unwrap();
    /// assert_eq!(h.codec, Codec::Pco);
    /// let mut back = Vec::new();
    /// decode_payload(&h, &frame[36..], &mut back).unwrap();
    /// assert_eq!(back, data);
    /// ```
    pub fn numeric(mut self, on: bool) -> Encoder {
        self.pco = on && self.mode == FilterMode::Auto && self.codec != Codec::None;
        self
    }

    /// As [`Encoder::encode_block`], for a block whose elements of `esize` bytes are numbers of
    /// `kind` (`None`: not numbers, or of one byte; a kind of another size is ignored), which
    /// may then use the pco codec (see [`Encoder::numeric`]). A block of identical elements is
    /// still [`Encoded::Constant`].
    ///
    /// The second item of the pair, `row`, is the length of the variable's innermost dimension when the variable has at
    /// least two dimensions (0 otherwise): then blocks of floats (`float`, `double`) may use
    /// the `lorenzo` filter, a 2-D predictor with "up" one row back, when filters are chosen
    /// per block ([`FilterMode::Auto`]), judged like the other filters (on the sample, which
    /// must hold at least two rows, or on the whole block).
    ///
    /// ```
    /// use nc3pack::{FilterMode, __private::{Encoded, Encoder, NumKind}, format::Codec};
    /// let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false).unwrap().numeric(true);
    /// let mut frame = Vec::new();
    /// let same = 1.5f32.to_be_bytes().repeat(1024);
    /// let done = enc.encode_block_numeric(0, 0, 4, (Some(NumKind::F32), 0), &same, &mut frame);
    /// assert!(matches!(done, Encoded::Constant(_)) && frame.is_empty());
    /// ```
    pub fn encode_block_numeric(
        &mut self,
        stream: u32,
        block: u64,
        esize: usize,
        (kind, row): (Option<NumKind>, usize),
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> Encoded {
        let whole = esize > 0 && data.len().is_multiple_of(esize);
        self.row = kind
            .filter(|k| {
                matches!(k, NumKind::F32 | NumKind::F64)
                    && k.esize() == esize
                    && whole
                    && matches!(
                        self.mode,
                        FilterMode::Auto | FilterMode::Fixed(Filter::Lorenzo)
                    )
                    && self.codec != Codec::None
            })
            .and_then(|_| u32::try_from(row).ok())
            .filter(|&r| r >= 2)
            .map(|r| r as usize);
        self.kind = kind.filter(|k| self.pco && k.esize() == esize && whole);
        self.plane_row = self
            .kind
            .and_then(|_| u32::try_from(row).ok())
            .filter(|&r| r >= 2)
            .map(|r| r as usize);
        let done = self.encode_block(stream, block, esize, data, out);
        self.kind = None;
        self.row = None;
        self.plane_row = None;
        done
    }

    /// The row length the `lorenzo` filter uses on a block of `len` bytes (elements of `esize`
    /// bytes): the variable's, or the whole block when that is shorter.
    fn lorenzo_row(&self, esize: usize, len: usize) -> usize {
        let n = (len / esize.max(1)).max(1);
        self.row.unwrap_or(n).min(n)
    }

    /// The filters worth trying for elements of `esize` bytes.
    fn candidates(&self, esize: usize) -> &'static [Filter] {
        match (esize, self.thorough) {
            (1, _) => &[Filter::None, Filter::ByteDelta],
            (_, false) => &[Filter::Shuffle, Filter::ByteDelta, Filter::ZigZagDelta],
            (_, true) => &[
                Filter::None,
                Filter::Shuffle,
                Filter::ByteDelta,
                Filter::Delta,
                Filter::ZigZagDelta,
            ],
        }
    }

    /// Compresses `input` with the block codec into `out` (replacing it); false if the result
    /// is not smaller than `limit`.
    fn compress(&mut self, input: &[u8], limit: usize, out: &mut Vec<u8>) -> bool {
        out.clear();
        #[cfg(test)]
        {
            self.codec_runs += 1;
        }
        match self.codec {
            Codec::Zstd if self.use_fast => compress_zstd(self.fast.as_mut(), input, limit, out),
            Codec::Zstd => compress_zstd(self.zstd.as_mut(), input, limit, out),
            Codec::Deflate => compress_deflate(self.level, input, limit, out),
            Codec::Lzma => super::lzma::compress(input, self.level as u32, limit, out),
            Codec::None | Codec::Constant | Codec::Pco | Codec::Context => false,
        }
    }

    fn choose_filter(&mut self, esize: usize, data: &[u8]) -> Filter {
        let cands = self.candidates(esize);
        match self.mode {
            // The 2-D predictor is for the rows of float variables of 2+ dimensions (see
            // `encode_block_numeric`); other blocks take the 1-D difference instead.
            FilterMode::Fixed(Filter::Lorenzo)
                if self.row.is_none()
                    || !super::lorenzo::supports(esize)
                    || !data.len().is_multiple_of(esize) =>
            {
                if esize == 1 {
                    Filter::ByteDelta
                } else {
                    Filter::ZigZagDelta
                }
            }
            // `plane` and `mask` go with codec pco only, which only the per-block choice makes;
            // `refs` (whose payload holds its table's entry count) only the `max` preset's lzma
            // path.
            FilterMode::Fixed(Filter::Plane | Filter::Refs | Filter::Mask | Filter::Fit) => {
                Filter::Shuffle
            }
            FilterMode::Fixed(f) => f,
            FilterMode::Auto if cands.len() == 1 => cands[0],
            FilterMode::Auto => {
                let sample = if self.thorough {
                    data.len()
                } else {
                    data.len().min(FILTER_SAMPLE) / esize * esize
                };
                let sample = sample.max(esize).min(data.len());
                let at = if self.thorough {
                    0
                } else {
                    sample_start(data, esize, sample)
                };
                let sample = &data[at..at + sample];
                let mut best = (usize::MAX, cands[0]);
                let (mut f, mut c) = (
                    std::mem::take(&mut self.filtered),
                    std::mem::take(&mut self.scratch),
                );
                for &cand in cands {
                    apply_filter(cand, sample, esize, &mut f);
                    c.clear();
                    let size = if compress_zstd(self.probe.as_mut(), &f, usize::MAX, &mut c) {
                        c.len()
                    } else {
                        f.len()
                    };
                    if size < best.0 {
                        best = (size, cand);
                    }
                }
                let plain = best;
                // The 2-D predictor, on at least two rows: its payload holds the row length.
                if let Some(row) = self.row.filter(|&r| 2 * r * esize <= sample.len()) {
                    super::lorenzo::apply(sample, esize, row, &mut f);
                    c.clear();
                    let size = if compress_zstd(self.probe.as_mut(), &f, usize::MAX, &mut c) {
                        c.len()
                    } else {
                        f.len()
                    } + super::lorenzo::ROW_PREFIX;
                    let margin = if self.thorough { 1.0 } else { LORENZO_MARGIN };
                    if (size as f64) < margin * best.0 as f64 {
                        best = (size, Filter::Lorenzo);
                    }
                }
                if let Some(kind) = self.kind.filter(|_| !self.thorough) {
                    c.clear();
                    // Floats in the mode pco finds on the block (see `block_float_mode`),
                    // which the block's run then takes too.
                    let block_mode = super::pco::block_float_mode(kind, data);
                    // A block of floats with a fill value tries pco on its other elements
                    // (`mask`, below) instead of pco on all of them, which the fill values cost
                    // dearly; integers try both (a flag's most common value is no fill).
                    let fill = super::mask::fill_of(data, esize);
                    // A predictor fitted to the block, on rows of a variable of at least two
                    // dimensions (not for floats pco takes as decimals or whole numbers, whose
                    // multiplier the residuals lose): tried first, as where it is clearly
                    // below the best filter with zstd nothing else beats it by much, and the
                    // other trials are skipped; else judged against their choice.
                    let scale = data.len() as f64 / sample.len() as f64;
                    let classic = block_mode.is_none_or(|m| m == super::pco::Mode::Classic);
                    let window = at / esize..(at + sample.len()) / esize;
                    let fit_row = self
                        .plane_row
                        .filter(|_| classic && super::fit::supports(esize));
                    // The block's fill section (kept for the block's run) and how many of its
                    // elements are not the fill.
                    self.mask_prefix.clear();
                    let others = match (fit_row, fill) {
                        (Some(_), Some(f)) => {
                            super::mask::section(data, esize, f, &mut self.mask_prefix)
                                .map(|split| split.others)
                        }
                        _ => None,
                    };
                    // zstd's result on the block from the sample's, scaled by the elements
                    // that are not the fill (which cost zstd little): a sample in a polar
                    // row's ice makes zstd look twice as good as it does on the block.
                    let zstd_est = match (fill, others) {
                        (Some(f), Some(others)) => {
                            let in_sample = sample
                                .chunks_exact(esize)
                                .filter(|x| super::mask::element(x) != f)
                                .count()
                                .max(sample.len() / esize / 8);
                            best.0 as f64 * others as f64 / in_sample as f64
                        }
                        _ => best.0 as f64 * scale,
                    };
                    let fit = fit_row.and_then(|row| {
                        let others = others.unwrap_or(data.len() / esize);
                        let (est, mask) =
                            self.fit_sample(kind, data, row, (fill, others), window, block_mode)?;
                        Some((row, est, mask))
                    });
                    // Clearly below zstd, and below mask where the block has a fill value.
                    let sure = kind.is_float()
                        && fit.is_some_and(|(_, est, mask)| {
                            est < FIT_SURE * zstd_est
                                && mask.is_none_or(|mask| est < FIT_MARGIN * mask)
                        });
                    let fit = fit.map(|(row, est, _)| (row, est));
                    if let Some((row, _)) = fit.filter(|_| sure) {
                        self.take_fit(row, fill);
                    } else {
                        self.pco_choice = match fill {
                            Some(_) if kind.is_float() => None,
                            _ => pco_sample(kind, sample, block_mode, &mut c),
                        };
                        let pco = self.pco_choice.is_some();
                        let decimal = self.pco_choice.is_some_and(|ch| ch.decimal());
                        let margin = if decimal {
                            PCO_MARGIN_DECIMAL
                        } else {
                            PCO_MARGIN
                        };
                        self.use_pco = pco && (c.len() as f64) < margin * best.0 as f64;
                        let pco_size = if pco { c.len() } else { usize::MAX };
                        // The 2-D predictor with pco, on at least two rows.
                        if let Some(row) = self.plane_row.filter(|&r| 2 * r * esize <= sample.len())
                        {
                            let p =
                                super::plane::choose(sample, esize, row as u32, kind.is_float());
                            super::plane::apply(sample, esize, &p, &mut f);
                            c.clear();
                            if super::pco::compress_residuals(
                                kind.unsigned(),
                                &f,
                                super::pco::LEVEL,
                                &mut c,
                            ) {
                                let size = c.len() + super::plane::PREFIX;
                                if (size as f64) < PLANE_MARGIN * best.0 as f64 {
                                    // pco alone where it does as well (it decodes faster).
                                    self.plane_check = !self.use_pco;
                                    self.use_pco = pco_size <= size;
                                    self.use_plane = Some(p).filter(|_| pco_size > size);
                                }
                            }
                        }
                        let taken = match (self.use_plane.is_some(), self.use_pco) {
                            (true, _) => c.len() + super::plane::PREFIX,
                            (false, true) => pco_size,
                            (false, false) => usize::MAX,
                        };
                        if let Some(fill) = fill {
                            let judged = Judged {
                                at,
                                len: sample.len(),
                                best: best.0,
                                plain,
                                taken,
                            };
                            self.mask_sample(kind, data, fill, judged, block_mode);
                        }
                        // The fitted predictor where it beats what the sample chose.
                        if let Some((row, est)) = fit {
                            // Against pco's choices (as dear to pack and to read) by a small
                            // margin; against zstd by the margin that takes it first.
                            let (chosen, margin) = if self.use_mask.is_some() {
                                (self.mask_est, FIT_MARGIN)
                            } else if taken != usize::MAX {
                                (taken as f64 * scale, FIT_MARGIN)
                            } else {
                                (zstd_est, FIT_SURE)
                            };
                            if est < margin * chosen {
                                self.take_fit(row, fill);
                            }
                        }
                        // Values from a small set (the coordinates of stations reporting in cycles):
                        // where no numeric codec took the block, it tries `refs` with zstd.
                        let small_set = self.codec == Codec::Zstd
                            && taken == usize::MAX
                            && self.use_mask.is_none()
                            && super::refs::late_new(sample, esize)
                                .is_some_and(|(new, half)| new * REFS_LATE_NEW < half);
                        self.refs_est = small_set
                            .then(|| best.0 as f64 * data.len() as f64 / sample.len() as f64);
                    }
                }
                if self.fast.is_some() {
                    // The probe is the fast level: does the block's level pay on the sample?
                    let row = self.lorenzo_row(esize, sample.len());
                    apply_filter_rows(best.1, sample, esize, row, &mut f);
                    c.clear();
                    let slow = if compress_zstd(self.zstd.as_mut(), &f, usize::MAX, &mut c) {
                        c.len()
                    } else {
                        f.len()
                    };
                    self.use_fast = slow as f64 >= FAST_ENOUGH * best.0 as f64;
                }
                (self.filtered, self.scratch) = (f, c);
                self.probe_size = best.0;
                best.1
            }
        }
    }

    /// Encodes block `block` of the stream with frame stream id `stream` (elements of `esize`
    /// bytes). Unless the codec is `none`, a block of identical elements (of 1 to 8 bytes) is
    /// [`Encoded::Constant`] and nothing is appended to `out`: the writer records it in the index
    /// and a constants frame. Any other block is appended to `out` as a complete frame (header and
    /// payload), [`Encoded::Frame`]; a block that does not shrink is stored raw.
    pub fn encode_block(
        &mut self,
        stream: u32,
        block: u64,
        esize: usize,
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> Encoded {
        let e = esize.max(1);
        if self.codec != Codec::None
            && (1..=8).contains(&esize)
            && data.len() >= 2 * e
            && data.len().is_multiple_of(e)
            && data.chunks_exact(e).all(|c| c == &data[..e])
        {
            let mut value = [0u8; 8];
            value[..e].copy_from_slice(&data[..e]);
            return Encoded::Constant(ConstantBlock {
                stream,
                block,
                esize: e as u8,
                value,
            });
        }
        let start = out.len();
        out.resize(start + crate::format::FRAME_HEADER_LEN, 0);
        let payload_at = out.len();
        let (codec, filter) = if self.codec == Codec::None {
            out.extend_from_slice(data);
            (Codec::None, Filter::None)
        } else {
            self.use_pco = false;
            self.pco_choice = None;
            self.use_mask = None;
            self.use_plane = None;
            self.use_fit = None;
            self.mask_prefix.clear();
            self.plane_check = false;
            self.refs_est = None;
            self.probe_size = 0;
            let filter = self.choose_filter(e, data);
            let mut f = std::mem::take(&mut self.filtered);
            let mut c = std::mem::take(&mut self.scratch);
            let numeric = self.kind.filter(|_| self.use_pco || self.thorough);
            let plane = self.kind.zip(self.use_plane.take());
            // The `max` preset: lzma where a sample says it pays, instead of the block codec's
            // run when it surely does.
            let plan = if self.lzma_alt {
                self.lzma_plan(filter, data, e, &mut f)
            } else {
                None
            };
            self.block_mode = numeric
                .filter(|k| self.thorough && k.is_float())
                .and_then(|k| super::pco::block_float_mode(k, data));
            // Not before `plane` has been tried: lzma must beat its result, known only after.
            // Nor before pco has been tried on floats it takes as decimals or whole numbers:
            // there pco in the block's mode is often far below what lzma's sample promises
            // (ocean_atlas_subset's temperatures among fill values: 5 % smaller and 3× faster).
            let decimal = self
                .block_mode
                .is_some_and(|m| m != super::pco::Mode::Classic);
            let sure = plan
                .filter(|p| p.sure() && plane.is_none() && !decimal)
                .and_then(|p| self.lzma_sure(p, data, e, &mut f, &mut c));
            let result = match sure {
                Some(r) => self.context_block(data, e, r, &mut c),
                None => {
                    let fitted = self
                        .kind
                        .zip(self.use_fit.take())
                        .and_then(|(k, (row, fill))| self.fit_block(k, row, fill, data, &mut c));
                    let masked = fitted.or_else(|| {
                        self.kind
                            .zip(self.use_mask.take())
                            .and_then(|(k, choice)| self.mask_block(k, choice, data.len(), &mut c))
                    });
                    let numeric_result = match masked.or_else(|| {
                        plane.and_then(|(k, p)| plane_block(k, &p, data, &mut self.words, &mut c))
                    }) {
                        Some(_) if self.plane_check => {
                            self.check_plane(e, filter, data, &mut f, &mut c)
                        }
                        Some(r) => Some(r),
                        None => {
                            numeric.and_then(|k| self.pco_block(k, filter, data, &mut f, &mut c))
                        }
                    };
                    let result = match numeric_result {
                        Some(r) => r,
                        None => self.plain_block(filter, data, e, &mut f, &mut c),
                    };
                    let result = self.context_block(data, e, result, &mut c);
                    match plan {
                        Some(p) => self.lzma_block(p, data, e, result, &mut f, &mut c),
                        None => self.lzma_after_context(data, e, result, &mut f, &mut c),
                    }
                }
            };
            out.extend_from_slice(&c);
            (self.filtered, self.scratch) = (f, c);
            result
        };
        let payload = &out[payload_at..];
        let h = FrameHeader {
            stored_len: payload.len() as u32,
            decoded_len: data.len() as u32,
            stream,
            block,
            codec,
            filter,
            esize: esize as u16,
            payload_crc: crc(payload),
        };
        out[start..payload_at].copy_from_slice(&h.encode());
        Encoded::Frame(h)
    }
}

/// What a sample says of lzma on a block (see [`Encoder::lzma_plan`]).
#[derive(Debug, Clone, Copy)]
struct LzmaPlan {
    /// The filter before lzma.
    filter: Filter,
    /// lzma's estimated result on the block (0: not judged).
    est: f64,
    /// The block codec's estimated result on the block (0: not judged).
    slow: f64,
    /// Whether to try the `refs` filter before lzma too (values of 4 or 8 bytes repeated far
    /// apart; see [`Encoder::lzma_block`]).
    refs: bool,
}

impl LzmaPlan {
    /// Whether lzma is so clearly smaller than the block codec's estimated result that the
    /// block codec need not run.
    fn sure(&self) -> bool {
        self.est < LZMA_MARGIN * self.slow
    }
}

/// What [`Encoder::encode_block`] made of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoded {
    /// A frame, appended to the output; its header.
    Frame(FrameHeader),
    /// A block whose elements are all the same: no frame (it lives in the index).
    Constant(ConstantBlock),
}

impl Encoded {
    /// The frame's header, or `None` for a constant block.
    pub fn frame(self) -> Option<FrameHeader> {
        match self {
            Encoded::Frame(h) => Some(h),
            Encoded::Constant(_) => None,
        }
    }
}

/// A block whose elements all equal one value, which the writer records in the index and a
/// constants frame instead of writing a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConstantBlock {
    /// Frame stream id.
    pub stream: u32,
    /// Block number within the stream.
    pub block: u64,
    /// Element size, 1 to 8.
    pub esize: u8,
    /// The element, in its first `esize` bytes (the rest zero).
    pub value: [u8; 8],
}

impl ConstantBlock {
    /// The element's bytes.
    pub fn value(&self) -> &[u8] {
        &self.value[..usize::from(self.esize).min(8)]
    }
}

/// What the default preset's sample found on a block, for [`Encoder::mask_sample`].
#[derive(Debug, Clone, Copy)]
struct Judged {
    /// Where the sample starts in the block (bytes).
    at: usize,
    /// The sample's length (bytes).
    len: usize,
    /// The sample's best result with zstd (the probe level), after any filter.
    best: usize,
    /// The best result and filter among the 1-D filters (the 2-D `lorenzo` left out).
    plain: (usize, Filter),
    /// The sample's result with `plane` and pco, when it chose them (else `usize::MAX`).
    taken: usize,
}

impl Encoder {
    /// Judges the `mask` filter on a block (default preset) whose elements include the fill
    /// value `fill` (see [`super::mask::fill_of`]): sets [`Encoder::use_mask`] when pco on the
    /// other elements plus the mask is estimated below the mask margin × the best filter's
    /// result with zstd, and below the result with `plane` or pco alone where the sample chose
    /// them (`judged`).
    ///
    /// The estimates are for the whole block, from a piece of the other elements as long as
    /// the sample and from the same place (scaled). `mask`: pco on the piece in the block's
    /// float mode `mode`, scaled to all the other elements, with pco's metadata and the mask
    /// counted once. zstd: the sample's best 1-D filter and zstd on the same piece, scaled the
    /// same way (and by what `lorenzo` gained on the sample, if it won), plus an element's
    /// bytes wherever a run of fill values starts or ends. Against the sample's own zstd
    /// result, where fill values cost little, `mask` was taken or not by where the sample fell:
    /// a sample in a polar row's ice made zstd look twice as good.
    fn mask_sample(
        &mut self,
        kind: NumKind,
        data: &[u8],
        fill: u64,
        judged: Judged,
        mode: Option<super::pco::Mode>,
    ) {
        let e = kind.esize();
        let (mut prefix, mut rest) = (
            std::mem::take(&mut self.mask_prefix),
            std::mem::take(&mut self.mask_rest),
        );
        prefix.clear();
        let split = super::mask::apply(data, e, fill, &mut prefix, &mut rest);
        let take = judged.len.min(rest.len()) / e * e;
        let mut c = std::mem::take(&mut self.scratch);
        c.clear();
        let start = (judged.at as u128 * rest.len() as u128 / data.len().max(1) as u128) as usize;
        let start = (start / e * e).min(rest.len() - take);
        let piece = &rest[start..start + take];
        let choice = split
            .and_then(|split| Some((split, pco_sample(kind, piece, mode, &mut c)?)))
            .filter(|_| take > 0 && !c.is_empty());
        if let Some((split, choice)) = choice {
            let (take_n, rest_n) = ((take / e) as f64, (rest.len() / e) as f64);
            // pco's metadata and the mask once, the rest of pco's result scaled.
            let meta = choice.meta().min(c.len()) as f64;
            let pco = prefix.len() as f64 + meta + (c.len() as f64 - meta) * rest_n / take_n;
            // The best filter with zstd on the same piece, scaled as pco's, plus what the fill
            // values cost zstd where they start and end: an element's bytes at each.
            let mut f = Vec::new();
            apply_filter(judged.plain.1, piece, e, &mut f);
            c.clear();
            let zstd = if compress_zstd(self.probe.as_mut(), &f, usize::MAX, &mut c) {
                c.len()
            } else {
                f.len()
            };
            let zstd = zstd as f64 * judged.best as f64 / judged.plain.0.max(1) as f64;
            let zstd = zstd * rest_n / take_n + (2 * split.runs * e) as f64;
            let margin = if choice.decimal() {
                PCO_MARGIN_DECIMAL
            } else {
                MASK_MARGIN
            };
            let share = pco / zstd.max(1.0);
            // plane's or pco's result on the sample, scaled to the block, as before `mask`.
            let taken = judged.taken as f64 * data.len() as f64 / judged.len.max(1) as f64;
            if share < margin && pco < taken {
                self.use_mask = Some(choice);
                self.mask_est = pco;
                self.use_pco = false;
                self.use_plane = None;
                self.plane_check = false;
            }
        }
        (self.mask_prefix, self.mask_rest, self.scratch) = (prefix, rest, c);
    }

    /// Encodes the block (of `data_len` bytes) the `mask` filter split (see
    /// [`Encoder::mask_sample`]) into `c`: its prefix, then pco on the other elements as
    /// `choice` says. `None` (and `c` unspecified) when pco fails or the result is not smaller
    /// than the block.
    fn mask_block(
        &mut self,
        kind: NumKind,
        choice: super::pco::Choice,
        data_len: usize,
        c: &mut Vec<u8>,
    ) -> Option<(Codec, Filter)> {
        c.clear();
        c.extend_from_slice(&self.mask_prefix);
        let mut p = Vec::new();
        let done =
            super::pco::compress_chosen(kind, &self.mask_rest, super::pco::LEVEL, choice, &mut p);
        (done && c.len() + p.len() < data_len).then(|| {
            c.append(&mut p);
            (Codec::Pco, Filter::Mask)
        })
    }

    /// Estimates the `fit` filter's result on a block (default preset) of numbers of `kind` in
    /// rows of `row`, its fill value `fill` (if any) set apart: fits the predictor to the
    /// sample's elements (`window`, widened to hold about as many elements that are not the
    /// fill) and the two rows before them, codes their residuals with pco and scales that to
    /// the block's `others` elements that are not the fill, adding the prefix (with the fill
    /// section in `mask_prefix`). With a fill value, also `mask`'s result estimated the same
    /// way: pco (in the block's float mode `mode`) on the window's elements that are not the
    /// fill. `None` when the sample has too few elements to fit or pco fails.
    fn fit_sample(
        &mut self,
        kind: NumKind,
        data: &[u8],
        row: usize,
        (fill, others): (Option<u64>, usize),
        window: std::ops::Range<usize>,
        mode: Option<super::pco::Mode>,
    ) -> Option<(f64, Option<f64>)> {
        use super::fit;
        let e = kind.esize();
        let n = data.len() / e;
        // A window with about as many elements that are not the fill as the sample has in all
        // (pco's metadata, scaled from a few numbers, would swamp the estimate).
        let len = (window.len() as u128 * n as u128 / others.max(1) as u128) as usize;
        let len = len.clamp(window.len(), n);
        let start = window.start.min(n - len);
        let window = start..start + len;
        let offsets = fit::offsets_for(row, n);
        let reach = offsets.iter().map(|&o| o as usize).max().unwrap_or(1);
        let from = window.start.saturating_sub(reach);
        let region = &data[from * e..window.end * e];
        let mut work = std::mem::take(&mut self.fit_work);
        fit::load(region, e, kind.is_float(), fill, &mut work);
        let p = fit::fit_loaded(e, kind.is_float(), &offsets, &work);
        let window = window.start - from..window.end - from;
        let m = fit::residuals(e, &p, window, &mut self.words, &mut work);
        self.fit_work = work;
        let mut c = std::mem::take(&mut self.scratch);
        c.clear();
        let coded = !p.taps.is_empty()
            && m > 0
            && super::pco::compress_residuals_native(
                kind.unsigned(),
                &self.words,
                m,
                super::pco::LEVEL,
                &mut c,
            );
        let head = fit::HEAD + fit::TAP * p.taps.len() + self.mask_prefix.len();
        let est = coded.then(|| head as f64 + c.len() as f64 * others as f64 / m as f64);
        // With a fill value, what `mask` makes of the same elements: pco on those of the window
        // that are not the fill (scattered fill values, as gaps in ship-track coverage, leave
        // the predictor few whole neighbourhoods, and pco on the others alone can be smaller).
        let mut piece = std::mem::take(&mut self.mask_rest);
        let mask = fill.zip(est).and_then(|(f, _)| {
            piece.clear();
            let window = data[start * e..(start + len) * e].chunks_exact(e);
            window
                .filter(|x| super::mask::element(x) != f)
                .for_each(|x| piece.extend_from_slice(x));
            c.clear();
            pco_sample(kind, &piece, mode, &mut c)?;
            let meta = self.mask_prefix.len() as f64;
            Some(meta + c.len() as f64 * others as f64 / (piece.len() / e).max(1) as f64)
        });
        self.mask_rest = piece;
        self.scratch = c;
        est.map(|est| (est, mask))
    }

    /// Sets the block to use `fit` with pco (rows of `row`, the fill value `fill` set apart)
    /// instead of what the sample chose before.
    fn take_fit(&mut self, row: usize, fill: Option<u64>) {
        self.use_fit = Some((row, fill));
        self.use_mask = None;
        self.use_pco = false;
        self.use_plane = None;
        self.plane_check = false;
    }

    /// Encodes the block `data` (numbers of `kind` in rows of `row`) with the `fit` predictor
    /// fitted to it and pco into `c`, the elements equal to `fill` set apart (the fill section
    /// [`Encoder::fit_sample`] made, or made afresh). `None` (and `c` unspecified) when pco
    /// fails or the result is not smaller than the block.
    fn fit_block(
        &mut self,
        kind: NumKind,
        row: usize,
        fill: Option<u64>,
        data: &[u8],
        c: &mut Vec<u8>,
    ) -> Option<(Codec, Filter)> {
        let mut work = std::mem::take(&mut self.fit_work);
        let section = (!self.mask_prefix.is_empty()).then_some(self.mask_prefix.as_slice());
        let r = fit_encode(
            kind,
            row,
            fill,
            section,
            data,
            &mut work,
            &mut self.words,
            c,
        );
        self.fit_work = work;
        r
    }

    /// Encodes a numeric block with pco into `c` when that is the choice: always if the sample
    /// chose it (`use_pco`), else (thorough encoders) when pco's result is smaller than the
    /// block codec's after `filter`, which it then leaves in `c`. `None` when pco is not used:
    /// the caller encodes as usual.
    fn pco_block(
        &mut self,
        kind: NumKind,
        filter: Filter,
        data: &[u8],
        f: &mut Vec<u8>,
        c: &mut Vec<u8>,
    ) -> Option<(Codec, Filter)> {
        c.clear();
        let mut pco_filter = Filter::None;
        // As the sample chose (the default preset), or searching afresh (thorough encoders).
        let done = match self.pco_choice.filter(|_| self.use_pco) {
            Some(choice) => super::pco::compress_chosen(kind, data, super::pco::LEVEL, choice, c),
            None if self.thorough => pco_thorough(kind, data, self.block_mode, c),
            None => super::pco::compress(kind, data, super::pco::LEVEL, c),
        };
        if !done || c.len() >= data.len() {
            c.clear();
        }
        // Thorough encoders also try the 2-D predictor with pco on the whole block (two rows at
        // least), kept where it is smaller than pco alone.
        let row = self
            .plane_row
            .filter(|&r| self.thorough && 2 * r * kind.esize() <= data.len());
        if let Some(row) = row {
            let p = super::plane::choose(data, kind.esize(), row as u32, kind.is_float());
            let mut r = Vec::new();
            if plane_block(kind, &p, data, &mut self.words, &mut r).is_some()
                && (c.is_empty() || r.len() < c.len())
            {
                *c = r;
                pco_filter = Filter::Plane;
            }
        }
        // And the block's fill values set apart (`mask`), kept where that is smaller still.
        let fill = super::mask::fill_of(data, kind.esize()).filter(|_| self.thorough);
        if let Some(fill) = fill {
            let (mut m, mut rest) = (Vec::new(), Vec::new());
            let mut p = Vec::new();
            // The block's mode (found without runs of equal numbers: the fill values' too).
            if super::mask::apply(data, kind.esize(), fill, &mut m, &mut rest).is_some()
                && pco_thorough(kind, &rest, self.block_mode, &mut p)
                && m.len() + p.len() < data.len()
                && (c.is_empty() || m.len() + p.len() < c.len())
            {
                m.append(&mut p);
                *c = m;
                pco_filter = Filter::Mask;
            }
        }
        // And the predictor fitted to the block (rows of two dimensions at least), kept where
        // smaller still; not for floats pco takes as decimals or whole numbers.
        let classic = self
            .block_mode
            .is_none_or(|m| m == super::pco::Mode::Classic);
        let row = self
            .plane_row
            .filter(|_| self.thorough && classic && super::fit::supports(kind.esize()));
        if let Some(row) = row {
            let fill = super::mask::fill_of(data, kind.esize());
            self.mask_prefix.clear();
            let mut r = Vec::new();
            if self.fit_block(kind, row, fill, data, &mut r).is_some()
                && (c.is_empty() || r.len() < c.len())
            {
                *c = r;
                pco_filter = Filter::Fit;
            }
        }
        if c.is_empty() {
            return None;
        }
        // Thorough encoders: pco far below what the probe level made of the block is out of
        // reach of the block codec's level too; skip that (slow) run.
        let sure = self.thorough && (c.len() as f64) < PCO_SURE * self.probe_size as f64;
        if self.use_pco || sure {
            return Some((Codec::Pco, pco_filter));
        }
        // Closer: estimate the block codec's result from its gain over the probe level on a
        // sample, and skip its run when pco is still clearly smaller. (The slow level hardly
        // ever does worse than the probe level: no estimate where pco loses to the latter.)
        if self.thorough && (c.len() as f64) < PCO_LIKELY * self.probe_size as f64 {
            let est = self.estimate_slow(filter, data, kind.esize(), f);
            if est.is_some_and(|est| (c.len() as f64) < PCO_LIKELY * est) {
                return Some((Codec::Pco, pco_filter));
            }
        }
        let prefix = self.apply_block_filter(filter, data, kind.esize(), f);
        let mut other = Vec::new();
        if c.len() > prefix.len() && self.compress(f, c.len() - prefix.len(), &mut other) {
            other.splice(0..0, prefix);
            *c = other;
            Some((self.codec, filter))
        } else {
            Some((Codec::Pco, pco_filter))
        }
    }
}

/// Encodes a block of numbers of `kind` with the `plane` filter `p` and pco into `c` (the
/// payload: prefix, then pco's file), using `words` for the residuals (handed to pco in native
/// order); `None` (and `c` empty) when that is not smaller than the block.
fn plane_block(
    kind: NumKind,
    p: &super::plane::Params,
    data: &[u8],
    words: &mut Vec<u64>,
    c: &mut Vec<u8>,
) -> Option<(Codec, Filter)> {
    let n = super::plane::apply_native(data, kind.esize(), p, words);
    c.clear();
    c.extend_from_slice(&p.encode());
    if super::pco::compress_residuals_native(kind.unsigned(), words, n, super::pco::LEVEL, c)
        && c.len() < data.len()
    {
        Some((Codec::Pco, Filter::Plane))
    } else {
        c.clear();
        None
    }
}

impl Encoder {
    /// Checks a block's `plane` payload in `c` (made because the sample chose it over the
    /// block codec) against the block codec after `filter` on the whole block: keeps it unless
    /// it is not smaller than [`PLANE_MARGIN`] times that result, which it then leaves in `c`
    /// (what the block would have been without `plane`). A payload already smaller than
    /// [`PLANE_SURE`] times the block codec's result estimated on a spread sample (see
    /// [`Encoder::spread_estimate`]) is kept without that run.
    fn check_plane(
        &mut self,
        esize: usize,
        filter: Filter,
        data: &[u8],
        f: &mut Vec<u8>,
        c: &mut Vec<u8>,
    ) -> Option<(Codec, Filter)> {
        #[cfg(test)]
        {
            self.plane_checked = true;
        }
        if self
            .spread_estimate(filter, data, esize, f)
            .is_some_and(|est| (c.len() as f64) < PLANE_SURE * est)
        {
            return Some((Codec::Pco, Filter::Plane));
        }
        let prefix = self.apply_block_filter(filter, data, esize, f);
        let mut other = Vec::new();
        if self.compress(f, data.len() - prefix.len(), &mut other)
            && (c.len() as f64) >= PLANE_MARGIN * (other.len() + prefix.len()) as f64
        {
            other.splice(0..0, prefix);
            *c = other;
            return Some((self.codec, filter));
        }
        Some((Codec::Pco, Filter::Plane))
    }

    /// The block codec on `data` after `filter` into `c` (the bytes as they are, codec none,
    /// where that is not smaller). A block whose values come from a small set (`refs_est`)
    /// tries `refs` first and keeps it without that run where it is smaller than [`REFS_SURE`]
    /// times the estimate, else where it is smaller than [`REFS_MARGIN`] times the run's result.
    fn plain_block(
        &mut self,
        filter: Filter,
        data: &[u8],
        esize: usize,
        f: &mut Vec<u8>,
        c: &mut Vec<u8>,
    ) -> (Codec, Filter) {
        let refs = match self
            .refs_est
            .and_then(|est| Some((est, self.refs_payload(data, esize, f)?)))
        {
            Some((est, z)) if (z.len() as f64) < REFS_SURE * est => {
                *c = z;
                return (self.codec, Filter::Refs);
            }
            refs => refs.map(|(_, z)| z),
        };
        let prefix = self.apply_block_filter(filter, data, esize, f);
        let result = if self.compress(f, data.len() - prefix.len(), c) {
            c.splice(0..0, prefix);
            (self.codec, filter)
        } else {
            c.clear();
            c.extend_from_slice(data);
            (Codec::None, Filter::None)
        };
        match refs {
            Some(z) if (z.len() as f64) < REFS_MARGIN * c.len() as f64 => {
                *c = z;
                (self.codec, Filter::Refs)
            }
            _ => result,
        }
    }

    /// The default preset's `refs` trial: the table's entry count and the block codec's result
    /// on the `refs` filter's bytes of `data` (using `f`); `None` where the filter does not
    /// apply or that is not smaller than the block.
    fn refs_payload(&mut self, data: &[u8], esize: usize, f: &mut Vec<u8>) -> Option<Vec<u8>> {
        let d = super::refs::apply(data, esize, f)?;
        let mut z = Vec::new();
        if !self.compress(f, data.len().saturating_sub(super::refs::PREFIX), &mut z) {
            return None;
        }
        z.splice(0..0, d.to_be_bytes());
        Some(z)
    }

    /// The size the block codec would make of `data` after `filter`, estimated from
    /// [`SPREAD_PIECES`] pieces of [`SPREAD_PIECE`] bytes spread evenly over the block (the first
    /// at its start, the last at its end), compressed together and scaled to the block's
    /// length; `None` for a block of less than twice their total, or when the codec is not
    /// zstd. Pieces cut apart lose some of the block's long matches, so the estimate is a few
    /// percent above the real result (measured: 3-4 % on topo.nc's elevation, whose pieces of
    /// 64 KiB were 1-3 % above it at four times the cost).
    fn spread_estimate(
        &mut self,
        filter: Filter,
        data: &[u8],
        esize: usize,
        f: &mut Vec<u8>,
    ) -> Option<f64> {
        let piece = SPREAD_PIECE / esize * esize;
        let total = piece * SPREAD_PIECES;
        if self.codec != Codec::Zstd || piece == 0 || 2 * total > data.len() {
            return None;
        }
        let n = data.len() / esize - piece / esize;
        let mut sample = Vec::with_capacity(total);
        for i in 0..SPREAD_PIECES {
            let at = n * i / (SPREAD_PIECES - 1) * esize;
            sample.extend_from_slice(data.get(at..at + piece)?);
        }
        apply_filter_rows(filter, &sample, esize, self.lorenzo_row(esize, total), f);
        let mut z = Vec::new();
        let size = if compress_zstd(self.zstd.as_mut(), f, usize::MAX, &mut z) {
            z.len()
        } else {
            f.len()
        };
        Some(size as f64 * data.len() as f64 / total as f64)
    }

    /// Thorough zstd encoders: whether lzma may pay on a block whose filter is `filter`.
    /// lzma runs on the block's first [`LZMA_SAMPLE`] bytes after the chosen filter and
    /// unfiltered (LZMA finds repeated multi-byte values whole); its result, scaled by the
    /// zstd probe's result on the whole block over the sample's, estimates lzma's on the
    /// block (conservatively: a whole block holds more repeats), and likewise the block
    /// codec's level on the sample estimates that. `None` when
    /// lzma cannot beat the probe's result by [`LZMA_MARGIN`] (then the level cannot either).
    /// A block shorter than twice the sample is not judged: its plan is to try lzma after it.
    fn lzma_plan(
        &mut self,
        filter: Filter,
        data: &[u8],
        esize: usize,
        f: &mut Vec<u8>,
    ) -> Option<LzmaPlan> {
        use super::lzma;
        let mut cands = [Filter::None; 2];
        let cands = match filter {
            Filter::None | Filter::Lorenzo => &cands[..1],
            g => {
                cands[0] = g;
                &cands[..]
            }
        };
        let n = LZMA_SAMPLE / esize * esize;
        let unit = repeat_unit(esize, self.kind);
        // Values judged one by one (8 bytes, 4-byte integers): not 4-byte floats, where
        // station coordinates repeated in runs of the same order (points.nc) lose with refs
        // and cost a second lzma run.
        let refs =
            super::refs::supports(esize) && unit == Some(esize) && data.len().is_multiple_of(esize);
        if n == 0 || 2 * n > data.len() || self.probe_size == 0 {
            // Tried after the block codec; after `refs` too where values repeat.
            let repeats = unit
                .and_then(|u| repeat_shares(data, u, u))
                .is_some_and(|(all, _)| all >= REFS_REPEATS);
            return Some(LzmaPlan {
                filter: cands[0],
                est: 0.0,
                slow: 0.0,
                refs: refs && repeats,
            });
        }
        let sample = &data[..n];
        let shares = unit.and_then(|u| repeat_shares(data, n, u));
        if far_repeats(shares) {
            // Values repeat across the block far more than within the sample: the sample
            // cannot see what LZMA finds, so lzma is tried on the whole block, unfiltered
            // (a filter would turn repeated values into differences that do not repeat), and
            // after `refs`, which turns them into references to a table of the values.
            return Some(LzmaPlan {
                filter: Filter::None,
                est: 0.0,
                slow: 0.0,
                refs,
            });
        }
        let (mut best, mut g) = (usize::MAX, cands[0]);
        let mut z = Vec::new();
        for &cand in cands {
            apply_filter(cand, sample, esize, f);
            z.clear();
            if lzma::compress(f, lzma::AUTO_LEVEL, best, &mut z) {
                (best, g) = (z.len(), cand);
            }
        }
        // `refs` where values repeat (within the sample too: else the block's far repeats took
        // the branch above), judged on the sample like the others.
        if refs && shares.is_some_and(|(all, _)| all >= REFS_REPEATS) {
            z.clear();
            if lzma_payload(Filter::Refs, sample, esize, f, best, &mut z) {
                (best, g) = (z.len(), Filter::Refs);
            }
        }
        let mut size = |ctx: Option<&mut zstd::bulk::Compressor<'static>>, f: &Vec<u8>| {
            z.clear();
            if compress_zstd(ctx, f, usize::MAX, &mut z) {
                z.len()
            } else {
                f.len()
            }
        };
        apply_filter_rows(filter, sample, esize, self.lorenzo_row(esize, n), f);
        let probe = size(self.probe.as_mut(), f).max(1) as f64;
        let scale = self.probe_size as f64 / probe;
        let est = best as f64 * scale;
        if best == usize::MAX || est >= LZMA_MARGIN * self.probe_size as f64 {
            return None;
        }
        let slow = size(self.zstd.as_mut(), f) as f64 * scale;
        Some(LzmaPlan {
            filter: g,
            est,
            slow,
            refs: false,
        })
    }

    /// Encodes the block with lzma into `c` when its plan is sure of it: kept when it is
    /// smaller than [`LZMA_MARGIN`] of the block codec's estimated result and, for numeric
    /// blocks that may use pco, of pco's result (not tried when the plan's estimate is not). `None` (and `c` unspecified) when lzma is not used.
    fn lzma_sure(
        &mut self,
        plan: LzmaPlan,
        data: &[u8],
        esize: usize,
        f: &mut Vec<u8>,
        c: &mut Vec<u8>,
    ) -> Option<(Codec, Filter)> {
        let mut limit = LZMA_MARGIN * plan.slow;
        if let Some(kind) = self.kind {
            // pco's result is exact and cheap to get: lzma must promise to beat it too (the
            // block codec's path then runs pco again: a small cost beside lzma's).
            let mut p = Vec::new();
            if super::pco::compress(kind, data, super::pco::LEVEL, &mut p) {
                limit = limit.min(LZMA_MARGIN * p.len() as f64);
                if plan.est >= limit {
                    return None;
                }
            }
        }
        let limit = (limit as usize).min(data.len());
        lzma_payload(plan.filter, data, esize, f, limit, c).then_some((Codec::Lzma, plan.filter))
    }

    /// Replaces the block's payload `c` (encoded as `current`) by an lzma one where that is
    /// smaller than [`LZMA_MARGIN`] of it, when the plan's estimate promises that (or the
    /// block was too short to judge). Where lzma did not run on the block unfiltered, a
    /// `context` result may still try that ([`Encoder::lzma_after_context`]).
    fn lzma_block(
        &mut self,
        plan: LzmaPlan,
        data: &[u8],
        esize: usize,
        current: (Codec, Filter),
        f: &mut Vec<u8>,
        c: &mut Vec<u8>,
    ) -> (Codec, Filter) {
        let mut target = (LZMA_MARGIN * c.len() as f64) as usize;
        if plan.est >= target as f64 {
            return self.lzma_after_context(data, esize, current, f, c);
        }
        let mut result = current;
        let mut z = Vec::new();
        // `refs` first: its input is shorter (4 bytes an element and the distinct values once)
        // and lzma on it runs two to three times faster than on the block; the block itself
        // then has to beat it (the run gives up as soon as its output reaches that size).
        // Not where the block codec already made the block tiny (a column of times repeated
        // by every station, which pco codes in a few kB): lzma on either form runs through the
        // whole block, and refs cannot win much there.
        let small = c.len().saturating_mul(REFS_RATIO) < data.len();
        if plan.refs && !small && lzma_payload(Filter::Refs, data, esize, f, target, &mut z) {
            target = z.len();
            std::mem::swap(c, &mut z);
            result = (Codec::Lzma, Filter::Refs);
        }
        if lzma_payload(plan.filter, data, esize, f, target, &mut z) {
            *c = z;
            (Codec::Lzma, plan.filter)
        } else if plan.filter == Filter::None {
            result
        } else {
            self.lzma_after_context(data, esize, result, f, c)
        }
    }

    /// Replaces a `context` payload `c` that left the block larger than [`NOISE_SHARE`] of it
    /// by lzma's on the whole block, unfiltered, where that is smaller (`max` only; called
    /// where lzma's plan did not run lzma so: there is no plan, its sample judged lzma no
    /// better than the block codec, or lzma after a filter lost). Such a block is mostly noise, whose values may still come from a
    /// limited set that LZMA finds repeated one by one across the block, which its first
    /// 128 KiB do not show: monthly_navy_winds.cdf's UWND (context 4,030,071 bytes, lzma after
    /// zzdelta 4,121,560, lzma 3,891,552).
    fn lzma_after_context(
        &mut self,
        data: &[u8],
        esize: usize,
        current: (Codec, Filter),
        f: &mut Vec<u8>,
        c: &mut Vec<u8>,
    ) -> (Codec, Filter) {
        if !self.lzma_alt
            || current.0 != Codec::Context
            || (c.len() as f64) < NOISE_SHARE * data.len() as f64
        {
            return current;
        }
        let mut z = Vec::new();
        if lzma_payload(Filter::None, data, esize, f, c.len(), &mut z) {
            *c = z;
            (Codec::Lzma, Filter::None)
        } else {
            current
        }
    }

    /// Replaces the block's payload `c` (encoded as `current`) by a `context` one where that is
    /// smaller: thorough encoders only, on numeric blocks of 2, 4 or 8 bytes an element (with
    /// the variable's rows where it has two dimensions or more).
    fn context_block(
        &mut self,
        data: &[u8],
        esize: usize,
        current: (Codec, Filter),
        c: &mut Vec<u8>,
    ) -> (Codec, Filter) {
        let Some(kind) = self
            .kind
            .filter(|_| self.thorough && context::supports(esize))
        else {
            return current;
        };
        let n = data.len() / esize;
        let row = self.plane_row.unwrap_or(n).clamp(1, n.max(1));
        let mut z = Vec::new();
        if context::compress_best(data, esize, kind.is_float(), row, c.len(), &mut z).is_some() {
            *c = z;
            (Codec::Context, Filter::None)
        } else {
            current
        }
    }

    /// Applies `filter` to a whole block into `f`; returns the bytes that precede the codec's
    /// output in the payload (the row length for `lorenzo`, else none).
    fn apply_block_filter(
        &self,
        filter: Filter,
        data: &[u8],
        esize: usize,
        f: &mut Vec<u8>,
    ) -> Vec<u8> {
        let row = self.lorenzo_row(esize, data.len());
        apply_filter_rows(filter, data, esize, row, f);
        if filter == Filter::Lorenzo {
            (row as u32).to_be_bytes().to_vec()
        } else {
            Vec::new()
        }
    }

    /// The size the block codec's level would make of `data` after `filter`, estimated as the
    /// probe level's result on the whole block (`probe_size`) times the level's gain over the
    /// probe level on the block's first [`GAIN_SAMPLE`] bytes; `None` for a block of less than
    /// twice that (running the level on it costs little more) or without a probe result.
    fn estimate_slow(
        &mut self,
        filter: Filter,
        data: &[u8],
        esize: usize,
        f: &mut Vec<u8>,
    ) -> Option<f64> {
        let n = GAIN_SAMPLE / esize * esize;
        if self.probe_size == 0 || n == 0 || 2 * n > data.len() {
            return None;
        }
        apply_filter_rows(filter, &data[..n], esize, self.lorenzo_row(esize, n), f);
        let mut c = Vec::new();
        let fast = if compress_zstd(self.probe.as_mut(), f, usize::MAX, &mut c) {
            c.len()
        } else {
            f.len()
        };
        c.clear();
        let slow = if compress_zstd(self.zstd.as_mut(), f, usize::MAX, &mut c) {
            c.len()
        } else {
            f.len()
        };
        Some(self.probe_size as f64 * slow as f64 / fast.max(1) as f64)
    }
}

/// The payload of an lzma frame for `data` after `filter` into `out` (replacing it; `f` is
/// scratch space for the filtered bytes): for `refs`, the table's entry count and then the .xz
/// stream of the filtered bytes; for the others (not `lorenzo` nor `plane`), the .xz stream of
/// [`apply_filter`]'s result. False (and `out` empty) when that is not smaller than `limit`
/// bytes.
fn lzma_payload(
    filter: Filter,
    data: &[u8],
    esize: usize,
    f: &mut Vec<u8>,
    limit: usize,
    out: &mut Vec<u8>,
) -> bool {
    use super::{lzma, refs};
    out.clear();
    if filter == Filter::Refs {
        let Some(d) = refs::apply(data, esize, f) else {
            return false;
        };
        out.extend_from_slice(&d.to_be_bytes());
        let ok = lzma::compress(f, lzma::AUTO_LEVEL, limit.saturating_sub(refs::PREFIX), out);
        if !ok {
            out.clear();
        }
        return ok;
    }
    apply_filter(filter, data, esize, f);
    lzma::compress(f, lzma::AUTO_LEVEL, limit, out)
}

/// Where a block's sample of `len` bytes starts: at the block's start, unless more than half
/// of the elements there (of `esize` bytes) equal the first (fill values: a polar or land
/// region heading a gridded field), then at 3/8 or 5/8 of the block, if that window is not
/// so; else at the start. A sample of fill values would judge the block by what zstd makes
/// of repeats.
fn sample_start(data: &[u8], esize: usize, len: usize) -> usize {
    let e = esize.max(1);
    let dominated = |w: &[u8]| {
        let first = &w[..e.min(w.len())];
        2 * w.chunks_exact(e).filter(|c| *c == first).count() > w.len() / e
    };
    if len == 0 || len >= data.len() || !dominated(&data[..len]) {
        return 0;
    }
    for (num, den) in [(3, 8), (5, 8)] {
        let at = (data.len() / e * num / den * e).min((data.len() - len) / e * e);
        if !dominated(&data[at..at + len]) {
            return at;
        }
    }
    0
}

/// [`apply_filter`], with rows of `row` elements for the `lorenzo` filter.
fn apply_filter_rows(filter: Filter, data: &[u8], esize: usize, row: usize, out: &mut Vec<u8>) {
    if filter == Filter::Lorenzo {
        super::lorenzo::apply(data, esize, row, out);
    } else {
        apply_filter(filter, data, esize, out);
    }
}

/// In the default preset, a block uses the `lorenzo` filter when it makes the sample smaller
/// than this fraction of the best other filter's: a few rows of a sample favour it over the
/// whole block (measured on gridded.nc of the bench corpus, where a bare win on the sample
/// made blocks of noisy fields larger), and it decodes a little slower than zzdelta.
const LORENZO_MARGIN: f64 = 0.97;

/// In the default preset, a numeric block of a variable of at least two dimensions uses the
/// `plane` filter with pco when that makes its sample smaller than this fraction of the best
/// filter's with zstd level 1 (and smaller than pco alone): a margin for its slower decoding
/// (see README "Numbers").
const PLANE_MARGIN: f64 = 0.93;

/// In the default preset, a block whose sample chose `plane` keeps it without running the
/// block codec on the whole block when its payload is smaller than this fraction of the block
/// codec's result estimated on a spread sample ([`Encoder::spread_estimate`]): on topo.nc's
/// elevation blocks the payload is 0.87 of that estimate (0.90 of the real result). The
/// estimate runs 3-4 % high, so this is [`PLANE_MARGIN`] less that.
const PLANE_SURE: f64 = 0.89;

/// In the default preset, a block whose sample's second half has fewer than 1 in this many
/// elements with a value new to the sample tries the `refs` filter with zstd (see
/// [`Encoder::plain_block`]).
const REFS_LATE_NEW: usize = 8;

/// In the default preset, the `refs` filter with zstd is kept where it is smaller than this
/// fraction of the block's result without it (its decoding looks each value up in the table).
const REFS_MARGIN: f64 = 0.97;

/// In the default preset, the `refs` filter with zstd is kept without the block codec's run on
/// the block when it is smaller than this fraction of that run's result estimated from the
/// sample (`Encoder::refs_est`; the probe level on the sample: a few percent above the block
/// level's result). points.nc's ten blocks that try `refs` (lat, lon, time and obs_time):
/// 0.19 to 0.78 of it.
const REFS_SURE: f64 = 0.8;

/// Pieces of a block [`Encoder::spread_estimate`] compresses.
const SPREAD_PIECES: usize = 4;

/// Bytes of each piece [`Encoder::spread_estimate`] compresses.
const SPREAD_PIECE: usize = 16 << 10;

/// Bytes of a block the `max` preset runs both zstd levels on to estimate the slow level's
/// gain (see [`Encoder::estimate_slow`]).
const GAIN_SAMPLE: usize = 128 << 10;

/// In thorough encoders, a numeric block uses pco without the block codec's run when pco is
/// smaller than this fraction of that run's estimated result (a margin for the estimate's
/// error).
const PCO_LIKELY: f64 = 0.97;

/// Bytes of a block the `max` preset compresses with lzma to judge whether lzma pays on the
/// block (see [`Encoder::lzma_block`]).
const LZMA_SAMPLE: usize = 128 << 10;

/// In the `max` preset, lzma is tried on the whole block when the share of its units (see
/// [`repeat_unit`]) that repeat an earlier one of the block exceeds that share within the
/// sample by this much (see [`far_repeats`]).
const FAR_REPEATS: f64 = 0.1;

/// In the `max` preset, a block whose values repeat far apart tries the `refs` filter before
/// lzma only when the block codec's result is not below 1 / this of the block (mesh.nc's
/// coordinates: 1 / 3 to 1 / 16; points.nc's repeated times, with pco: 1 / 1200).
const REFS_RATIO: usize = 32;

/// In the `max` preset, a block of 4- or 8-byte values judged on a sample also tries the `refs`
/// filter before lzma on the sample when at least this share of its values (see
/// [`repeat_unit`]) repeat an earlier one of the block (and not the one just before): fields
/// of noisy floats, where refs cannot pay, repeat next to none.
const REFS_REPEATS: f64 = 0.2;

/// The bytes [`far_repeats`] judges a block of `esize`-byte numbers by: 8-byte numbers one by
/// one, 4-byte integers one by one, 4-byte floats (or numbers of unknown type) in pairs;
/// `None` for other sizes. Lone repeated 4-byte floats are not judged: noisy float fields of a
/// few million distinct values repeat them by chance (gridded.nc's t2m), where lzma loses;
/// repeated integers (a mesh's vertex numbers) are what LZMA finds.
fn repeat_unit(esize: usize, kind: Option<NumKind>) -> Option<usize> {
    match esize {
        8 => Some(8),
        4 if kind.is_some_and(|k| !k.is_float()) => Some(4),
        4 => Some(8),
        _ => None,
    }
}

/// Whether the shares [`repeat_shares`] gives say the block's pieces repeat more than the
/// sample's by [`FAR_REPEATS`]: repeats farther apart than the sample, which a sample cannot
/// show (the shared vertex coordinates of unstructured meshes, repeated longitudes).
fn far_repeats(shares: Option<(f64, f64)>) -> bool {
    shares.is_some_and(|(all, head)| all >= head + FAR_REPEATS)
}

/// The share of the `unit`-byte pieces (4 or 8) of `data` equal to an earlier piece, and that
/// share among the first `n` bytes (see [`far_repeats`]); `None` for another unit or when
/// `data` is shorter than twice `n`. A piece equal to the one just before it is a run (fill
/// values, constants), which a sample shows and zstd codes as well: not counted.
fn repeat_shares(data: &[u8], n: usize, unit: usize) -> Option<(f64, f64)> {
    if !matches!(unit, 4 | 8) || n < unit || data.len() < 2 * n {
        return None;
    }
    let count = data.len() / unit;
    let head = n / unit;
    let mut seen = RepeatSet::with_capacity(count);
    let mut repeats_head = 0usize;
    let mut repeats = 0usize;
    let mut prev = None;
    for (i, v) in data.chunks_exact(unit).enumerate() {
        let mut x = [0u8; 8];
        x[..unit].copy_from_slice(v);
        let x = u64::from_le_bytes(x);
        if !seen.insert(x) && prev != Some(x) {
            repeats += 1;
            if i < head {
                repeats_head += 1;
            }
        }
        prev = Some(x);
    }
    let share = |r: usize, of: usize| r as f64 / of.max(1) as f64;
    Some((share(repeats, count), share(repeats_head, head)))
}

/// A set of 64-bit values (open addressing, linear probing): faster than a `HashSet` for the
/// million values of an 8 MiB block, and allocation-free once made.
struct RepeatSet {
    /// Slots: a value plus one (0: empty), so that the value `u64::MAX` wraps to 0 and is
    /// kept apart in `max_seen`.
    slots: Vec<u64>,
    max_seen: bool,
}

impl RepeatSet {
    fn with_capacity(n: usize) -> RepeatSet {
        RepeatSet {
            slots: vec![0; (2 * n).next_power_of_two().max(16)],
            max_seen: false,
        }
    }

    /// Inserts `v`; false when it was there already.
    fn insert(&mut self, v: u64) -> bool {
        if v == u64::MAX {
            return !std::mem::replace(&mut self.max_seen, true);
        }
        let key = v + 1;
        let mask = self.slots.len() - 1;
        // Fibonacci hashing: the product's top bits.
        let shift = 64 - self.slots.len().trailing_zeros();
        let mut i = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize & mask;
        loop {
            match self.slots[i] {
                0 => {
                    self.slots[i] = key;
                    return true;
                }
                k if k == key => return false,
                _ => i = (i + 1) & mask,
            }
        }
    }
}

/// In the `max` preset, a block uses lzma when lzma makes it smaller than this fraction of
/// the best other codec's result: lzma decodes several times slower than zstd.
const LZMA_MARGIN: f64 = 0.97;

/// A `context` result above this share of its block leaves it to lzma to try the whole block
/// (see `Encoder::lzma_after_context`): noise, at ratios below 1.6. gridded.nc's t2m (context
/// at 0.46 of it) is not tried, and its `max` pack time stays as it was.
const NOISE_SHARE: f64 = 0.625;

/// In the default preset, a numeric block uses pco when pco makes its sample smaller than
/// this fraction of the best filter's with zstd level 1 (a margin for pco's slower decoding
/// and the sample's bias: pco compresses about 5 times slower than zstd level 1 and decodes
/// slower too, so it must pay for that).
const PCO_MARGIN: f64 = 0.80;

/// As [`PCO_MARGIN`], for floats that pco takes as multiples of a base or with their last
/// bits apart (its float multiplier or quantization mode, found over the whole block: see
/// `pco::block_float_mode`): whole numbers and decimals, which byte filters cannot see and
/// where the sample's estimate is close to the block's. 0.90 made Debian's ferret-datasets
/// files 0.7 % smaller as a whole (ETOPO5 1 %, ETOPO20 8 %) and left the bench corpus as it
/// was. Not for other floats (a smooth field where zstd's whole-block run gains most) nor
/// integers (mesh.nc's vertex indices grew and packed 6 % slower).
const PCO_MARGIN_DECIMAL: f64 = 0.90;

/// As [`PCO_MARGIN`], for `mask` and pco on a float block with a fill value (see
/// `Encoder::mask_sample`): mask and pco decode faster than pco on the same block, and the
/// estimate compares like with like. 0.93 took it for all of gridded.nc's sst blocks (the
/// variable 7 % smaller) and a tenth of its t2m blocks, made gridded.nc 1.6 % smaller in
/// 15 % more pack time, and left Debian's ferret-datasets files as they were (with
/// coads_climatology's UWND, 12 % smaller with it). Most t2m blocks (noise over a smooth
/// field), estimated at 0.94 to 0.96, are 3 % smaller with it, for a third more pack time:
/// not taken.
const MASK_MARGIN: f64 = 0.93;

/// The default preset takes `fit` with pco on a block where its estimated result (see
/// `Encoder::fit_sample`) is below this fraction of what the sample chose otherwise.
const FIT_MARGIN: f64 = 0.97;

/// The default preset takes `fit` with pco on a block of floats without trying pco, `plane` or
/// `mask` where its estimated result is below this fraction of the best filter's with zstd,
/// and on any block instead of zstd only where it is: fit and pco take about twice zstd's
/// pack time and three times its decode time, for 3 % on big5.nc's records (estimates at 0.95
/// to 0.957: packing 2.2 times as long), 4–5 % on gridded.nc's t2m (0.93 at the median).
const FIT_SURE: f64 = 0.95;

/// In thorough encoders, a numeric block uses pco without trying the block codec's level when
/// pco makes the block smaller than this fraction of what the best filter gets with the probe
/// level (zstd 3) on the whole block: zstd 19 makes numeric blocks 1-5 % smaller than zstd 3
/// after the same filter, and that run takes most of the `max` preset's time.
const PCO_SURE: f64 = 0.85;

/// Compresses into `out` if the result is smaller than `limit` bytes.
fn compress_zstd(
    c: Option<&mut zstd::bulk::Compressor<'static>>,
    input: &[u8],
    limit: usize,
    out: &mut Vec<u8>,
) -> bool {
    let Some(c) = c else { return false };
    let cap = limit.min(zstd::zstd_safe::compress_bound(input.len()));
    let mut buf = Vec::with_capacity(cap);
    match c.compress_to_buffer(input, &mut buf) {
        Ok(_) if buf.len() < limit => {
            out.extend_from_slice(&buf);
            true
        }
        _ => false,
    }
}

fn compress_deflate(level: i32, input: &[u8], limit: usize, out: &mut Vec<u8>) -> bool {
    let mut c = flate2::Compress::new(flate2::Compression::new(level as u32), false);
    let mut buf = Vec::with_capacity(limit.min(input.len() + input.len() / 100 + 1024));
    match c.compress_vec(input, &mut buf, flate2::FlushCompress::Finish) {
        Ok(flate2::Status::StreamEnd) if buf.len() < limit => {
            out.extend_from_slice(&buf);
            true
        }
        _ => false,
    }
}

/// Level of the header frame's zstd compression.
pub(crate) const HEADER_LEVEL: i32 = 19;
/// Level of the constants frames' zstd compression.
pub(crate) const CONSTANTS_LEVEL: i32 = 3;

thread_local! {
    /// This thread's zstd contexts for header and constants frames, by level, kept between calls:
    /// setting up a zstd context (which probes the CPU with `cpuid`, slow in a virtual machine)
    /// costs more than compressing a small file's header. A reused context compresses to the same
    /// bytes as a fresh one (zstd resets the session at every one-shot compression; the tests
    /// check it).
    static BYTES_ZSTD: std::cell::RefCell<Vec<(i32, zstd::bulk::Compressor<'static>)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The payload and codec of a frame of bytes (the header frame, a constants frame): `data`
/// compressed by zstd at `level` (one zstd frame) when that is smaller, else `data` raw.
pub(crate) fn compress_bytes(data: &[u8], level: i32) -> (Codec, std::borrow::Cow<'_, [u8]>) {
    match zstd_if_smaller(data, level) {
        Some(c) => (Codec::Zstd, std::borrow::Cow::Owned(c)),
        None => (Codec::None, std::borrow::Cow::Borrowed(data)),
    }
}

/// `data` compressed by zstd at `level` if that is smaller than `data`; `None` if not, or on
/// failure.
fn zstd_if_smaller(data: &[u8], level: i32) -> Option<Vec<u8>> {
    BYTES_ZSTD.with(|cell| {
        let mut ctxs = cell.try_borrow_mut().ok()?;
        let k = match ctxs.iter().position(|(l, _)| *l == level) {
            Some(k) => k,
            None => {
                ctxs.push((level, zstd::bulk::Compressor::new(level).ok()?));
                ctxs.len() - 1
            }
        };
        let packed = ctxs[k].1.compress(data);
        if packed.is_err() {
            // Start the next frame from a fresh context.
            ctxs.swap_remove(k);
        }
        packed.ok().filter(|c| c.len() < data.len())
    })
}

/// Checks that `payload` is the `h.stored_len` bytes whose CRC the frame header records.
fn check_payload(h: &FrameHeader, payload: &[u8]) -> Result<(), FrameError> {
    if payload.len() != h.stored_len as usize {
        return Err(FrameError::PayloadLength {
            got: payload.len(),
            stored: h.stored_len,
        });
    }
    if crc(payload) != h.payload_crc {
        return Err(FrameError::PayloadChecksum);
    }
    Ok(())
}

/// Checks a frame payload's CRC and decodes it into `out` (replacing its contents). `out` never
/// grows beyond `h.decoded_len` bytes.
///
/// # Errors
///
/// A [`FrameError`] saying what is wrong with the payload.
pub fn decode_payload(
    h: &FrameHeader,
    payload: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), FrameError> {
    check_payload(h, payload)?;
    if h.filter == Filter::Plane {
        out.clear();
        out.resize(h.decoded_len as usize, 0);
        let r = decode_plane(
            h,
            payload,
            out,
            false,
            &mut Vec::new(),
            &mut Default::default(),
        );
        if r.is_err() {
            out.clear();
        }
        return r;
    }
    if h.filter == Filter::Refs {
        out.clear();
        out.resize(h.decoded_len as usize, 0);
        let r = decode_refs(h, payload, out, false, &mut Vec::new(), &mut None);
        if r.is_err() {
            out.clear();
        }
        return r;
    }
    if h.filter == Filter::Mask {
        out.clear();
        out.resize(h.decoded_len as usize, 0);
        let r = decode_mask(h, payload, out, false, &mut DecodeScratch::default());
        if r.is_err() {
            out.clear();
        }
        return r;
    }
    if h.filter == Filter::Fit {
        out.clear();
        out.resize(h.decoded_len as usize, 0);
        let r = decode_fit(h, payload, out, false, &mut DecodeScratch::default());
        if r.is_err() {
            out.clear();
        }
        return r;
    }
    let (row, payload) = split_row(h, payload)?;
    let n = h.decoded_len as usize;
    let decoded: Vec<u8> = match h.codec {
        Codec::None => {
            if payload.len() != n {
                return Err(FrameError::RawLength {
                    got: payload.len(),
                    decoded: h.decoded_len,
                });
            }
            payload.to_vec()
        }
        Codec::Constant => {
            let e = usize::from(h.esize);
            if e == 0 || payload.len() != e || !n.is_multiple_of(e) {
                return Err(FrameError::Constant {
                    decoded: h.decoded_len,
                    value_len: payload.len(),
                    esize: h.esize,
                });
            }
            payload.repeat(n / e)
        }
        Codec::Zstd => {
            let d =
                zstd::bulk::decompress(payload, n).map_err(|e| FrameError::Zstd(e.to_string()))?;
            if d.len() != n {
                return Err(FrameError::DecodedLength {
                    got: d.len(),
                    decoded: h.decoded_len,
                });
            }
            d
        }
        Codec::Deflate => {
            let mut dec = flate2::Decompress::new(false);
            let mut d = Vec::with_capacity(n);
            let st = dec
                .decompress_vec(payload, &mut d, flate2::FlushDecompress::Finish)
                .map_err(|e| FrameError::Deflate(e.to_string()))?;
            if st != flate2::Status::StreamEnd
                || d.len() != n
                || dec.total_in() != payload.len() as u64
            {
                return Err(FrameError::DeflateLength {
                    decoded: h.decoded_len,
                });
            }
            d
        }
        Codec::Lzma => {
            let mut d = vec![0u8; n];
            super::lzma::decompress_into(payload, &mut d)?;
            d
        }
        Codec::Pco => {
            // Into `out` itself (no filter follows), reusing its allocation.
            check_pco_filter(h)?;
            out.clear();
            out.resize(n, 0);
            let r =
                super::pco::decompress_into(h.esize, payload, out, false, &mut Default::default());
            if r.is_err() {
                out.clear();
            }
            return r;
        }
        Codec::Context => {
            check_context_filter(h)?;
            out.clear();
            out.resize(n, 0);
            let r = super::context::decompress_into(payload, usize::from(h.esize), out, false);
            if r.is_err() {
                out.clear();
            }
            return Ok(r?);
        }
    };
    if h.filter == Filter::None {
        *out = decoded;
        return Ok(());
    }
    let esize = usize::from(h.esize);
    if esize == 0 || !n.is_multiple_of(esize) {
        return Err(FrameError::FilterElementSize {
            esize: h.esize,
            decoded: h.decoded_len,
        });
    }
    if h.filter == Filter::Lorenzo {
        out.clear();
        out.resize(n, 0);
        super::lorenzo::undo_into(&decoded, esize, row, out, false);
    } else {
        undo_filter(h.filter, &decoded, esize, out);
    }
    Ok(())
}

/// Decodes the payload of a `plane` frame (after its CRC check) into `out` (`h.decoded_len`
/// bytes): checks the codec (pco only), the element size and the prefix, decodes pco's
/// unsigned residuals in native order into `words` and rebuilds the elements from them.
fn decode_plane(
    h: &FrameHeader,
    payload: &[u8],
    out: &mut [u8],
    native: bool,
    words: &mut Vec<u64>,
    pco: &mut super::pco::PcoScratch,
) -> Result<(), FrameError> {
    if h.codec != Codec::Pco {
        return Err(FrameError::PlaneCodec { codec: h.codec });
    }
    let esize = usize::from(h.esize);
    if !super::plane::supports(esize) {
        return Err(FrameError::PlaneElementSize { esize: h.esize });
    }
    let (params, payload) = super::plane::Params::decode(payload)?;
    let n = out.len();
    // The output's size is the frame's decoded length, already bounded by the layout; the
    // buffer grows once per thread, and pco overwrites all of it.
    grow(words, n.div_ceil(8))?;
    let z = &mut bytemuck::cast_slice_mut::<u64, u8>(words)[..n];
    super::pco::decompress_residuals_into(h.esize, payload, z, true, pco)?;
    super::plane::undo_into(z, esize, &params, out, native);
    Ok(())
}

/// The element size of a frame whose filter goes with codec pco only and elements of the sizes
/// `supports` allows (`mask`, `fit`), decoding to `len` bytes: the filter's own error (from
/// `codec` or `size`) for another codec or element size, and [`FrameError::FilterElementSize`]
/// when `len` is not whole elements.
fn pco_filter_esize(
    h: &FrameHeader,
    len: usize,
    supports: fn(usize) -> bool,
    codec: fn(Codec) -> FrameError,
    size: fn(u16) -> FrameError,
) -> Result<usize, FrameError> {
    if h.codec != Codec::Pco {
        return Err(codec(h.codec));
    }
    let esize = usize::from(h.esize);
    if !supports(esize) {
        return Err(size(h.esize));
    }
    if !len.is_multiple_of(esize) {
        return Err(FrameError::FilterElementSize {
            esize: h.esize,
            decoded: h.decoded_len,
        });
    }
    Ok(esize)
}

/// Decodes the payload of a `mask` frame (after its CRC check) into `out` (`h.decoded_len`
/// bytes): checks the codec (pco only), the element size and the prefix, decodes pco's numbers
/// (exactly as many as the bitmap leaves, in native order when `native`) into the scratch
/// space and puts them and the fill element in place.
fn decode_mask(
    h: &FrameHeader,
    payload: &[u8],
    out: &mut [u8],
    native: bool,
    scratch: &mut DecodeScratch,
) -> Result<(), FrameError> {
    let esize = pco_filter_esize(
        h,
        out.len(),
        super::mask::supports,
        |codec| FrameError::MaskCodec { codec },
        |esize| FrameError::MaskElementSize { esize },
    )?;
    let n = out.len() / esize;
    let mut bits = std::mem::take(&mut scratch.bits);
    let r = super::mask::decode(payload, esize, n, &mut bits).and_then(|(fill, m, pco)| {
        // At most the block's decoded length, which the layout bounds.
        let rest = &mut scratch.filtered;
        rest.clear();
        grow(rest, m * esize)?;
        super::pco::decompress_into(h.esize, pco, rest, native, &mut scratch.pco)?;
        super::mask::undo_into(rest, &bits, fill, esize, out, native);
        Ok(())
    });
    scratch.bits = bits;
    r
}

/// Decodes the payload of a `fit` frame (after its CRC check) into `out` (`h.decoded_len`
/// bytes): checks the codec (pco only), the element size and the prefix, decodes pco's
/// residuals (exactly one per element the bitmap does not mark, or per element without one)
/// into the scratch space and rebuilds the elements from them.
fn decode_fit(
    h: &FrameHeader,
    payload: &[u8],
    out: &mut [u8],
    native: bool,
    scratch: &mut DecodeScratch,
) -> Result<(), FrameError> {
    let esize = pco_filter_esize(
        h,
        out.len(),
        super::fit::supports,
        |codec| FrameError::FitCodec { codec },
        |esize| FrameError::FitElementSize { esize },
    )?;
    let n = out.len() / esize;
    let (params, has_fill, rest) = super::fit::Params::decode(payload)?;
    let mut bits = std::mem::take(&mut scratch.bits);
    let r = (|| {
        let (fill, m, pco) = if has_fill {
            let (fill, m, pco) = super::mask::decode(rest, esize, n, &mut bits)?;
            (Some(fill), m, pco)
        } else {
            (None, n, rest)
        };
        // At most the block's decoded length, which the layout bounds; pco overwrites it all.
        let words = &mut scratch.words;
        grow(words, (m * esize).div_ceil(8))?;
        let z = &mut bytemuck::cast_slice_mut::<u64, u8>(words)[..m * esize];
        super::pco::decompress_residuals_into(h.esize, pco, z, true, &mut scratch.pco)?;
        let fill = fill.map(|f| (f, &bits[..]));
        super::fit::undo_into(z, esize, &params, fill, out, native, &mut scratch.fit);
        Ok(())
    })();
    scratch.bits = bits;
    r
}

/// Decodes the payload of a `refs` frame (after its CRC check) into `out` (`h.decoded_len`
/// bytes): checks the codec, the element size and the table's entry count, decodes the codec's
/// data into `filtered` (exactly the length the count and the block's length give, at most
/// 1.5 times the block's for 8-byte elements, twice for 4-byte ones) and rebuilds the elements
/// from it, in native order when `native`.
fn decode_refs(
    h: &FrameHeader,
    payload: &[u8],
    out: &mut [u8],
    native: bool,
    filtered: &mut Vec<u8>,
    zstd_ctx: &mut Option<zstd::bulk::Decompressor<'static>>,
) -> Result<(), FrameError> {
    use super::refs;
    if !matches!(
        h.codec,
        Codec::None | Codec::Zstd | Codec::Deflate | Codec::Lzma
    ) {
        return Err(FrameError::RefsCodec { codec: h.codec });
    }
    let esize = usize::from(h.esize);
    if !refs::supports(esize) {
        return Err(FrameError::RefsElementSize { esize: h.esize });
    }
    if !out.len().is_multiple_of(esize) {
        return Err(FrameError::FilterElementSize {
            esize: h.esize,
            decoded: h.decoded_len,
        });
    }
    let Some((count, payload)) = payload.split_first_chunk::<{ refs::PREFIX }>() else {
        return Err(FrameError::RefsNoCount {
            stored: h.stored_len,
        });
    };
    let d = u32::from_be_bytes(*count);
    let n = out.len() / esize;
    // Bounded by the block's length before anything is allocated.
    let len = refs::filtered_len(out.len(), esize, d as usize)
        .filter(|_| d as usize <= n)
        .ok_or(FrameError::Refs(super::error::RefsError::Entries {
            entries: d as usize,
            elements: n,
        }))?;
    // Grows once per thread, then reused: decompression overwrites all of it.
    grow(filtered, len)?;
    let f = &mut filtered[..len];
    decompress_into(h, payload, f, zstd_ctx)?;
    refs::undo(f, esize, d, out).map_err(FrameError::Refs)?;
    if native {
        be_to_native(out, esize);
    }
    Ok(())
}

/// The row length that starts the payload of a `lorenzo` frame, and the codec's part of the
/// payload after it; for any other filter, 0 and the whole payload.
fn split_row<'p>(h: &FrameHeader, payload: &'p [u8]) -> Result<(usize, &'p [u8]), FrameError> {
    use super::lorenzo::{supports, ROW_PREFIX};
    if h.filter != Filter::Lorenzo {
        return Ok((0, payload));
    }
    if !supports(usize::from(h.esize)) {
        return Err(FrameError::LorenzoElementSize { esize: h.esize });
    }
    let Some((prefix, rest)) = payload.split_first_chunk::<ROW_PREFIX>() else {
        return Err(FrameError::LorenzoNoRow {
            stored: h.stored_len,
        });
    };
    match u32::from_be_bytes(*prefix) {
        0 => Err(FrameError::LorenzoZeroRow),
        row => Ok((row as usize, rest)),
    }
}

/// Per-thread state of [`decode_payload_into`]: a zstd context and the buffer a filtered
/// payload is decompressed into, both reused from block to block.
#[derive(Default)]
pub struct DecodeScratch {
    zstd: Option<zstd::bulk::Decompressor<'static>>,
    filtered: Vec<u8>,
    pco: super::pco::PcoScratch,
    /// The residuals of a `plane` frame, as native numbers (aligned).
    words: Vec<u64>,
    /// The bitmap of a `mask` or `fit` frame.
    bits: Vec<u8>,
    /// The working values of a `fit` frame.
    fit: super::fit::Work,
}

/// As [`decode_payload`], with the same checks, but into `out`, which must be exactly
/// `h.decoded_len` bytes long: a payload without a filter is decompressed straight into `out`,
/// a filtered one into `scratch` and unfiltered from there into `out`. With `native`, elements
/// of 2, 4 or 8 bytes (`h.esize`) come out in native byte order instead of big-endian (the
/// conversion done in the same pass, while the block is in the CPU's cache).
///
/// # Errors
///
/// A [`FrameError`] saying what is wrong with the payload (as [`decode_payload`]), or
/// [`FrameError::DecodedLength`] when `out` is not `h.decoded_len` bytes long.
pub fn decode_payload_into(
    h: &FrameHeader,
    payload: &[u8],
    out: &mut [u8],
    scratch: &mut DecodeScratch,
    native: bool,
) -> Result<(), FrameError> {
    check_payload(h, payload)?;
    let n = h.decoded_len as usize;
    if out.len() != n {
        return Err(FrameError::DecodedLength {
            got: out.len(),
            decoded: h.decoded_len,
        });
    }
    if h.filter == Filter::Plane {
        let s = &mut *scratch;
        return decode_plane(h, payload, out, native, &mut s.words, &mut s.pco);
    }
    if h.filter == Filter::Refs {
        let s = &mut *scratch;
        return decode_refs(h, payload, out, native, &mut s.filtered, &mut s.zstd);
    }
    if h.filter == Filter::Mask {
        return decode_mask(h, payload, out, native, scratch);
    }
    if h.filter == Filter::Fit {
        return decode_fit(h, payload, out, native, scratch);
    }
    let (row, payload) = split_row(h, payload)?;
    let esize = usize::from(h.esize);
    if h.codec == Codec::Pco {
        // Numbers decode in native order: the swap to big-endian, if any, is pco's last pass.
        check_pco_filter(h)?;
        return super::pco::decompress_into(h.esize, payload, out, native, &mut scratch.pco);
    }
    if h.codec == Codec::Context {
        check_context_filter(h)?;
        return Ok(super::context::decompress_into(
            payload, esize, out, native,
        )?);
    }
    if h.filter == Filter::None {
        decompress_into(h, payload, out, &mut scratch.zstd)?;
        if native {
            be_to_native(out, esize);
        }
        return Ok(());
    }
    if esize == 0 || !n.is_multiple_of(esize) {
        return Err(FrameError::FilterElementSize {
            esize: h.esize,
            decoded: h.decoded_len,
        });
    }
    // Grows once per thread, then reused: decompression overwrites all of it.
    grow(&mut scratch.filtered, n)?;
    let filtered = &mut scratch.filtered[..n];
    decompress_into(h, payload, filtered, &mut scratch.zstd)?;
    undo_filter_into(h.filter, filtered, esize, row, out, native);
    Ok(())
}

/// Grows `v` to at least `n` elements (the new ones zero), or [`FrameError::NoMemory`]: the
/// buffers of decoding are sized by a frame's decoded length, which the machine may not have.
fn grow<T: Clone + Default>(v: &mut Vec<T>, n: usize) -> Result<(), FrameError> {
    if v.len() < n {
        v.try_reserve(n - v.len())
            .map_err(|_| FrameError::NoMemory {
                len: n.saturating_mul(std::mem::size_of::<T>()) as u64,
            })?;
        v.resize(n, T::default());
    }
    Ok(())
}

/// Decompresses `payload` (codec `h.codec`) into `out`, checking that it fills `out` exactly
/// (`out` is `h.decoded_len` bytes; nothing is written past it).
fn decompress_into(
    h: &FrameHeader,
    payload: &[u8],
    out: &mut [u8],
    zstd_ctx: &mut Option<zstd::bulk::Decompressor<'static>>,
) -> Result<(), FrameError> {
    let n = out.len();
    match h.codec {
        Codec::None => {
            if payload.len() != n {
                return Err(FrameError::RawLength {
                    got: payload.len(),
                    decoded: h.decoded_len,
                });
            }
            out.copy_from_slice(payload);
        }
        Codec::Constant => {
            let e = usize::from(h.esize);
            if e == 0 || payload.len() != e || !n.is_multiple_of(e) {
                return Err(FrameError::Constant {
                    decoded: h.decoded_len,
                    value_len: payload.len(),
                    esize: h.esize,
                });
            }
            for c in out.chunks_exact_mut(e) {
                c.copy_from_slice(payload);
            }
        }
        Codec::Zstd => {
            let zerr = |e: std::io::Error| FrameError::Zstd(e.to_string());
            let d = match zstd_ctx {
                Some(d) => d,
                None => zstd_ctx.insert(zstd::bulk::Decompressor::new().map_err(zerr)?),
            };
            let got = d.decompress_to_buffer(payload, out).map_err(zerr)?;
            if got != n {
                return Err(FrameError::DecodedLength {
                    got,
                    decoded: h.decoded_len,
                });
            }
        }
        Codec::Deflate => {
            let mut dec = flate2::Decompress::new(false);
            let st = dec
                .decompress(payload, out, flate2::FlushDecompress::Finish)
                .map_err(|e| FrameError::Deflate(e.to_string()))?;
            if st != flate2::Status::StreamEnd
                || dec.total_out() != n as u64
                || dec.total_in() != payload.len() as u64
            {
                return Err(FrameError::DeflateLength {
                    decoded: h.decoded_len,
                });
            }
        }
        Codec::Pco => {
            check_pco_filter(h)?;
            super::pco::decompress_into(h.esize, payload, out, false, &mut Default::default())?;
        }
        Codec::Lzma => super::lzma::decompress_into(payload, out)?,
        Codec::Context => {
            check_context_filter(h)?;
            super::context::decompress_into(payload, usize::from(h.esize), out, false)?;
        }
    }
    Ok(())
}

/// A `context` payload is the block itself: its frame has no filter.
fn check_context_filter(h: &FrameHeader) -> Result<(), FrameError> {
    if h.filter == Filter::None {
        Ok(())
    } else {
        Err(FrameError::ContextFilter { filter: h.filter })
    }
}

/// A pco payload without the `plane` filter (decoded before this check) is the block itself:
/// its frame has no filter.
fn check_pco_filter(h: &FrameHeader) -> Result<(), FrameError> {
    if h.filter == Filter::None {
        Ok(())
    } else {
        Err(FrameError::Pco(format!(
            "filter {} with codec pco (pco frames have filter none, plane or mask)",
            h.filter.name()
        )))
    }
}

/// Compresses `data` with pco into `c` as thorough encoders do: as pco chooses, and for floats
/// also in the mode found over the block (`mode`, see `pco::block_float_mode`) where pco took
/// another for the first chunk, or where there are more chunks and it is not classic (pco
/// chooses a mode per chunk, and may miss it in some); the smaller stays. Then, on a block of
/// more than [`PCO_HALF_CHUNK`] numbers, in chunks of at most that many (in the mode that
/// won), kept where smaller. False (and `c` unspecified) when pco fails.
fn pco_thorough(
    kind: NumKind,
    data: &[u8],
    mode: Option<super::pco::Mode>,
    c: &mut Vec<u8>,
) -> bool {
    let Some(ch) = super::pco::compress_choosing(kind, data, super::pco::LEVEL, c) else {
        return false;
    };
    let n = data.len() / kind.esize();
    let chunks = n > super::pco::CHUNK_NUMBERS;
    let mode = mode.filter(|&m| ch.mode() != Some(m) || (chunks && m != super::pco::Mode::Classic));
    let mut forced = None;
    let mut other = Vec::new();
    if let Some(mode) = mode {
        if super::pco::compress_choosing_in(kind, data, super::pco::LEVEL, mode, &mut other)
            .is_some()
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
        if super::pco::compress_paged(
            kind,
            data,
            super::pco::LEVEL,
            forced,
            PCO_HALF_CHUNK,
            &mut other,
        ) && other.len() < c.len()
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
const PCO_HALF_CHUNK: usize = super::pco::CHUNK_NUMBERS / 2;

/// Compresses a block's `sample` with pco into `c`: in the block's float mode `mode` (see
/// `pco::block_float_mode`), or as pco chooses when there is none.
fn pco_sample(
    kind: NumKind,
    sample: &[u8],
    mode: Option<super::pco::Mode>,
    c: &mut Vec<u8>,
) -> Option<super::pco::Choice> {
    match mode {
        Some(mode) => super::pco::compress_choosing_in(kind, sample, super::pco::LEVEL, mode, c),
        None => super::pco::compress_choosing(kind, sample, super::pco::LEVEL, c),
    }
}

/// Reverses [`apply_filter`] from `src` (which it may use as scratch space) into `dst` (the same
/// length), elements of 2, 4 or 8 bytes in native order when `native`.
fn undo_filter_into(
    filter: Filter,
    src: &mut [u8],
    esize: usize,
    row: usize,
    dst: &mut [u8],
    native: bool,
) {
    let swap = native && cfg!(target_endian = "little");
    let n = src.len() / esize.max(1);
    match filter {
        Filter::Lorenzo => {
            super::lorenzo::undo_into(src, esize, row, dst, native);
            return;
        }
        // Decoded by `decode_plane`, `decode_refs`, `decode_mask` and `decode_fit` before the
        // codec's generic paths: never here.
        Filter::Plane | Filter::Refs | Filter::Mask | Filter::Fit | Filter::None => {
            dst.copy_from_slice(src);
            if native {
                be_to_native(dst, esize);
            }
            return;
        }
        Filter::Shuffle => {}
        Filter::ByteDelta => {
            for stream in src[..n * esize.max(1)].chunks_exact_mut(n.max(1)) {
                for i in 1..stream.len() {
                    stream[i] = stream[i].wrapping_add(stream[i - 1]);
                }
            }
        }
        Filter::Delta | Filter::ZigZagDelta => {
            let zz = filter == Filter::ZigZagDelta;
            let f = match (esize, zz, native) {
                (2, false, false) => unshuffle_undelta_into::<u16, 2, false, false>,
                (2, true, false) => unshuffle_undelta_into::<u16, 2, true, false>,
                (2, false, true) => unshuffle_undelta_into::<u16, 2, false, true>,
                (2, true, true) => unshuffle_undelta_into::<u16, 2, true, true>,
                (4, false, false) => unshuffle_undelta_into::<u32, 4, false, false>,
                (4, true, false) => unshuffle_undelta_into::<u32, 4, true, false>,
                (4, false, true) => unshuffle_undelta_into::<u32, 4, false, true>,
                (4, true, true) => unshuffle_undelta_into::<u32, 4, true, true>,
                (8, false, false) => unshuffle_undelta_into::<u64, 8, false, false>,
                (8, true, false) => unshuffle_undelta_into::<u64, 8, true, false>,
                (8, false, true) => unshuffle_undelta_into::<u64, 8, false, true>,
                (8, true, true) => unshuffle_undelta_into::<u64, 8, true, true>,
                _ => {
                    let mut prev = 0u8;
                    for (x, &d) in dst.iter_mut().zip(src.iter()) {
                        prev = prev.wrapping_add(d);
                        *x = prev;
                    }
                    return;
                }
            };
            f(src, dst, n);
            dst[n * esize..].copy_from_slice(&src[n * esize..]);
            return;
        }
    }
    // Shuffle, and ByteDelta whose byte streams now hold their running sums.
    match (esize, swap) {
        (2, false) => unshuffle_into::<2, false>(src, dst, n),
        (2, true) => unshuffle_into::<2, true>(src, dst, n),
        (4, false) => unshuffle_into::<4, false>(src, dst, n),
        (4, true) => unshuffle_into::<4, true>(src, dst, n),
        (8, false) => unshuffle_into::<8, false>(src, dst, n),
        (8, true) => unshuffle_into::<8, true>(src, dst, n),
        _ => {
            dst.copy_from_slice(src);
            return;
        }
    }
    dst[n * esize..].copy_from_slice(&src[n * esize..]);
}

/// [`unshuffle_n`], writing each element's bytes reversed when `SWAP`.
fn unshuffle_into<const E: usize, const SWAP: bool>(src: &[u8], dst: &mut [u8], n: usize) {
    if n == 0 {
        return;
    }
    let ins: [&[u8]; E] = std::array::from_fn(|j| &src[j * n..(j + 1) * n]);
    for (i, e) in dst[..n * E].chunks_exact_mut(E).enumerate() {
        for j in 0..E {
            e[if SWAP { E - 1 - j } else { j }] = ins[j][i];
        }
    }
}

/// [`unshuffle_undelta_n`] into `dst`, elements in native order when `NATIVE` (big-endian
/// otherwise). When `dst` is aligned for `W` (as the bytes of a `&mut [T]` of the element type
/// are), it works on native words: one pass unshuffles and un-zigzags (vectorized), a second
/// takes the running sums and stores them in the wanted order; otherwise it runs the big-endian
/// passes of [`unshuffle_undelta_n`] and swaps after.
fn unshuffle_undelta_into<
    W: Word + bytemuck::Pod,
    const E: usize,
    const ZIGZAG: bool,
    const NATIVE: bool,
>(
    src: &[u8],
    dst: &mut [u8],
    n: usize,
) {
    const { assert!(std::mem::size_of::<W>() == E) };
    let Ok(words) = bytemuck::try_cast_slice_mut::<u8, W>(&mut dst[..n * E]) else {
        unshuffle_undelta_n::<W, E, ZIGZAG>(src, dst, n);
        if NATIVE {
            be_to_native(&mut dst[..n * E], E);
        }
        return;
    };
    let words = &mut words[..n];
    let ins: [&[u8]; E] = std::array::from_fn(|j| &src[j * n..(j + 1) * n]);
    for i in 0..n {
        let d = W::from_be(&std::array::from_fn::<u8, E, _>(|j| ins[j][i]));
        words[i] = if ZIGZAG { d.unzigzag() } else { d };
    }
    let mut prev = W::ZERO;
    for w in words {
        prev = prev.wrapping_add(*w);
        *w = if NATIVE { prev } else { prev.to_be() };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::error::RefsError;
    use crate::format::FRAME_HEADER_LEN;

    /// Encodes `data` as block 0 of stream 0 into `frame` (header then payload), a constant
    /// block as the codec-3 frame a reader must still decode (the encoder puts those in the
    /// index instead). Returns the frame's header.
    fn encode_any(
        enc: &mut Encoder,
        esize: usize,
        data: &[u8],
        frame: &mut Vec<u8>,
    ) -> FrameHeader {
        match enc.encode_block(0, 0, esize, data, frame) {
            Encoded::Frame(h) => h,
            Encoded::Constant(c) => {
                let value = &c.value[..usize::from(c.esize)];
                let h = FrameHeader {
                    stored_len: value.len() as u32,
                    decoded_len: data.len() as u32,
                    stream: 0,
                    block: 0,
                    codec: Codec::Constant,
                    filter: Filter::None,
                    esize: u16::from(c.esize),
                    payload_crc: crate::format::crc(value),
                };
                frame.clear();
                frame.extend_from_slice(&h.encode());
                frame.extend_from_slice(value);
                h
            }
        }
    }

    fn roundtrip(codec: Codec, esize: usize, data: &[u8]) -> FrameHeader {
        let mut enc = Encoder::new(codec, default_level(codec), FilterMode::Auto, false).unwrap();
        let mut frame = vec![9u8; 3];
        let h = enc
            .encode_block(1, 2, esize, data, &mut frame)
            .frame()
            .unwrap();
        let h2 = FrameHeader::decode(&frame[3..]).unwrap();
        assert_eq!(h, h2);
        assert_eq!(frame.len(), 3 + FRAME_HEADER_LEN + h.stored_len as usize);
        let mut out = vec![1, 2, 3];
        decode_payload(&h2, &frame[3 + FRAME_HEADER_LEN..], &mut out).unwrap();
        assert_eq!(out, data);
        h
    }

    #[test]
    fn every_codec_roundtrips_and_incompressible_data_is_stored_raw() {
        let smooth: Vec<u8> = (0..10000u32)
            .flat_map(|i| ((i as f32).sin()).to_be_bytes())
            .collect();
        let mut x = 12345u64;
        let noise: Vec<u8> = (0..5000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        for codec in [Codec::None, Codec::Zstd, Codec::Deflate] {
            for esize in [1, 2, 4, 8] {
                let h = roundtrip(codec, esize, &smooth);
                if codec != Codec::None {
                    assert!(h.stored_len < smooth.len() as u32);
                    assert_eq!(
                        h.filter == Filter::None,
                        esize == 1 && h.filter != Filter::ByteDelta
                    );
                }
                let h = roundtrip(codec, esize, &noise);
                assert_eq!(
                    (h.codec, h.filter, h.stored_len),
                    (Codec::None, Filter::None, 5000)
                );
            }
            roundtrip(codec, 4, &[]);
        }
    }

    #[test]
    fn shuffle_inverts_for_every_size_and_length() {
        for esize in [1, 2, 3, 4, 8] {
            for len in [0, 1, 7, 8, 9, 64, 1001] {
                let src: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
                let (mut a, mut b) = (Vec::new(), Vec::new());
                shuffle(&src, esize, &mut a);
                unshuffle(&a, esize, &mut b);
                assert_eq!(b, src, "esize {esize} len {len}");
                if esize == 2 && len == 8 {
                    assert_eq!(
                        a,
                        [src[0], src[2], src[4], src[6], src[1], src[3], src[5], src[7]]
                    );
                }
            }
        }
    }

    const ALL_FILTERS: [Filter; 10] = [
        Filter::None,
        Filter::Shuffle,
        Filter::ByteDelta,
        Filter::Delta,
        Filter::ZigZagDelta,
        Filter::Lorenzo,
        Filter::Plane,
        Filter::Refs,
        Filter::Mask,
        Filter::Fit,
    ];

    #[test]
    fn every_filter_id_is_listed() {
        let ids: Vec<Filter> = (0..=255).filter_map(Filter::from_id).collect();
        assert_eq!(ids, ALL_FILTERS);
    }

    /// `delta` and `zzdelta` as design/FORMAT.md defines them, one element at a time.
    fn reference_delta(data: &[u8], esize: usize, zigzag: bool) -> Vec<u8> {
        if ![2, 4, 8].contains(&esize) {
            let mut out = data.to_vec();
            for i in 1..out.len() {
                out[i] = data[i].wrapping_sub(data[i - 1]);
            }
            return out;
        }
        let bits = 8 * esize as u32;
        let mask = u64::MAX >> (64 - bits);
        let n = data.len() / esize;
        let mut elements = Vec::new();
        let mut prev = 0u64;
        for e in data[..n * esize].chunks_exact(esize) {
            let x = e.iter().fold(0u64, |a, &b| a << 8 | u64::from(b));
            let mut d = x.wrapping_sub(prev) & mask;
            prev = x;
            if zigzag {
                let negative = d >> (bits - 1) == 1;
                d = ((d << 1) ^ if negative { u64::MAX } else { 0 }) & mask;
            }
            elements.extend_from_slice(&d.to_be_bytes()[8 - esize..]);
        }
        elements.extend_from_slice(&data[n * esize..]);
        let mut out = Vec::new();
        shuffle(&elements, esize, &mut out);
        out
    }

    #[test]
    fn filters_invert_for_every_size_and_length_and_deltas_match_their_definition() {
        let mut x = 99u64;
        for esize in [1, 2, 3, 4, 8] {
            for len in [0, 1, 7, 8, 9, 64, 1001] {
                // Elements of either sign and mostly small (zigzag's case): random last bytes,
                // the other bytes mostly all 0x00 or 0xff, sometimes random (large jumps).
                let src: Vec<u8> = (0..len)
                    .map(|i| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        match (i % esize == esize - 1, x % 8) {
                            (true, _) | (_, 0) => (x >> 8) as u8,
                            (false, r) => [0, 0xff][r as usize % 2],
                        }
                    })
                    .collect();
                for f in ALL_FILTERS {
                    let (mut a, mut b) = (vec![7; 3], vec![7; 3]);
                    apply_filter(f, &src, esize, &mut a);
                    match f {
                        Filter::Delta => assert_eq!(a, reference_delta(&src, esize, false)),
                        Filter::ZigZagDelta => assert_eq!(a, reference_delta(&src, esize, true)),
                        // The element and entry counts, then 4 bytes a reference and the table.
                        Filter::Refs if [4, 8].contains(&esize) => {
                            let n = len / esize;
                            let d = u32::from_be_bytes(a[4..8].try_into().unwrap()) as usize;
                            assert_eq!(a[..4], (n as u32).to_be_bytes());
                            assert_eq!(a.len(), 8 + 4 * n + esize * d + len % esize);
                        }
                        // A flag byte, then the count and the prefix, or the bytes as they are.
                        Filter::Mask => assert!(a.len() > src.len(), "{esize} {len}"),
                        // A flag byte, then the prefix and a residual for each element.
                        Filter::Fit if [2, 4, 8].contains(&esize) && len % esize == 0 => {
                            let k = usize::from(a[4]);
                            assert_eq!(a.len(), 1 + 4 + 6 * k + len, "{esize} {len}");
                        }
                        Filter::Fit => assert_eq!(a.len(), 1 + src.len()),
                        _ => assert_eq!(a.len(), src.len()),
                    }
                    undo_filter(f, &a, esize, &mut b);
                    assert_eq!(b, src, "{f:?} esize {esize} len {len}");
                }
            }
        }
        // Extremes of the signed range: 0 -> 0x8000 is -32768 (zigzag 0xffff), then +32767
        // (zigzag 0xfffe) to 0xffff, then +1 wrapping to 0 (zigzag 2).
        let src = [0, 0, 0x80, 0, 0xff, 0xff, 0, 0];
        let mut a = Vec::new();
        apply_filter(Filter::ZigZagDelta, &src, 2, &mut a);
        assert_eq!(a, [0, 0xff, 0xff, 0, 0, 0xff, 0xfe, 2]);
    }

    #[test]
    fn constant_blocks_store_one_element_and_filters_invert() {
        let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false).unwrap();
        let data: Vec<u8> = std::iter::repeat_n([0x7f, 0x80, 0, 1], 500)
            .flatten()
            .collect();
        let mut frame = Vec::new();
        assert_eq!(
            enc.encode_block(5, 6, 4, &data, &mut frame),
            Encoded::Constant(ConstantBlock {
                stream: 5,
                block: 6,
                esize: 4,
                value: [0x7f, 0x80, 0, 1, 0, 0, 0, 0]
            })
        );
        assert!(frame.is_empty());
        // Not constant when elements differ only in their last byte.
        let mut d2 = data.clone();
        d2[1999] = 2;
        let h = enc.encode_block(0, 0, 4, &d2, &mut frame).frame().unwrap();
        assert_ne!(h.codec, Codec::Constant);
        let mut out = Vec::new();
        decode_payload(&h, &frame[FRAME_HEADER_LEN..], &mut out).unwrap();
        assert_eq!(out, d2);
        for f in ALL_FILTERS {
            for esize in [1, 2, 4, 8] {
                let src: Vec<u8> = (0..96u32).map(|i| (i * i % 251) as u8).collect();
                let (mut a, mut b) = (Vec::new(), Vec::new());
                apply_filter(f, &src, esize, &mut a);
                undo_filter(f, &a, esize, &mut b);
                assert_eq!(b, src, "{f:?} esize {esize}");
                let mut enc = Encoder::new(Codec::Deflate, 6, FilterMode::Fixed(f), false).unwrap();
                let mut frame = Vec::new();
                let h = enc
                    .encode_block(0, 0, esize, &src, &mut frame)
                    .frame()
                    .unwrap();
                decode_payload(&h, &frame[FRAME_HEADER_LEN..], &mut out).unwrap();
                assert_eq!(out, src);
            }
        }
    }

    /// `decode_payload_into` gives what `decode_payload` gives (big-endian, or each element's
    /// bytes reversed for native order on a little-endian machine) for every codec, filter and
    /// element size, into aligned and unaligned outputs, and refuses exactly what it refuses.
    #[test]
    fn decoding_into_a_slice_matches_decode_payload() {
        let mut x = 7u64;
        let mut scratch = DecodeScratch::default();
        for esize in [1usize, 2, 4, 8] {
            // Smooth elements (the filters pay) with noisy low bytes, and a constant block.
            let smooth: Vec<u8> = (0..3000u64)
                .flat_map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let v = (i * i / 7) << 8 | (x & 0xff);
                    v.to_be_bytes()[8 - esize..].to_vec()
                })
                .collect();
            let constant: Vec<u8> = std::iter::repeat_n(&smooth[..esize], 500)
                .flatten()
                .copied()
                .collect();
            for codec in [Codec::None, Codec::Zstd, Codec::Deflate] {
                for f in ALL_FILTERS {
                    for data in [&smooth, &constant] {
                        let level = default_level(codec);
                        let mut enc =
                            Encoder::new(codec, level, FilterMode::Fixed(f), false).unwrap();
                        let mut frame = Vec::new();
                        let h = encode_any(&mut enc, esize, data, &mut frame);
                        let payload = &frame[FRAME_HEADER_LEN..];
                        let ctx = format!("{:?}/{:?} esize {esize}", h.codec, h.filter);
                        let mut want = Vec::new();
                        decode_payload(&h, payload, &mut want).unwrap();
                        assert_eq!(&want, data, "{ctx}");
                        let mut native = want.clone();
                        if cfg!(target_endian = "little") && esize > 1 {
                            for e in native.chunks_exact_mut(esize) {
                                e.reverse();
                            }
                        }
                        // Aligned for u64 (so for every element size), and one byte off.
                        let mut words = vec![0u64; data.len() / 8 + 2];
                        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
                        for at in [0, 1] {
                            let out = &mut bytes[at..at + data.len()];
                            for (order, expect) in [(false, &want), (true, &native)] {
                                out.fill(0xa5);
                                decode_payload_into(&h, payload, out, &mut scratch, order).unwrap();
                                assert_eq!(out, &expect[..], "{ctx} at {at} native {order}");
                            }
                        }
                        // Damage: the same error as decode_payload, and a wrong-length output.
                        let mut bad = payload.to_vec();
                        let mid = bad.len() / 2;
                        bad[mid] ^= 4;
                        let mut out = vec![0u8; data.len()];
                        assert_eq!(
                            decode_payload_into(&h, &bad, &mut out, &mut scratch, true),
                            decode_payload(&h, &bad, &mut Vec::new()),
                            "{ctx}"
                        );
                        let mut short = vec![0u8; data.len() - 1];
                        assert!(
                            decode_payload_into(&h, payload, &mut short, &mut scratch, false)
                                .is_err(),
                            "{ctx}"
                        );
                    }
                }
            }
        }
        // A frame that lies about its decoded length (CRC intact) fails the same way.
        let data: Vec<u8> = (0..4000u32).flat_map(|i| (i / 3).to_be_bytes()).collect();
        let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false).unwrap();
        let mut frame = Vec::new();
        let h = encode_any(&mut enc, 4, &data, &mut frame);
        for decoded in [h.decoded_len - 4, h.decoded_len + 4] {
            let lying = FrameHeader {
                decoded_len: decoded,
                ..h
            };
            let mut out = vec![0u8; decoded as usize];
            let got = decode_payload_into(
                &lying,
                &frame[FRAME_HEADER_LEN..],
                &mut out,
                &mut scratch,
                false,
            );
            let want = decode_payload(&lying, &frame[FRAME_HEADER_LEN..], &mut Vec::new());
            assert!(want.is_err() && got.is_err(), "{decoded}: {got:?} {want:?}");
        }
    }

    /// A random walk in steps of 0.01 stored as floats: byte filters see noisy mantissas,
    /// pco finds the multiplier (pco's case).
    fn decimal_walk(n: u32) -> Vec<u8> {
        let (mut k, mut x) = (2000i64, 0x9E37_79B9_7F4A_7C15u64);
        (0..n)
            .flat_map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                k += (x % 7) as i64 - 3;
                ((k as f64 * 0.01) as f32).to_be_bytes()
            })
            .collect()
    }

    /// A block's sample moves past fill values heading it: to 3/8 of the block, or 5/8 if
    /// that is fill too, and stays at the start when every window is (or none is) mostly
    /// fill. "Mostly": more than half the elements equal the window's first.
    #[test]
    fn samples_skip_fill_values_heading_a_block() {
        let n = 262_144usize;
        let len = FILTER_SAMPLE;
        let fill = (-1e10f32).to_be_bytes();
        let block = |fill_at: &dyn Fn(usize) -> bool| -> Vec<u8> {
            (0..n)
                .flat_map(|i| {
                    if fill_at(i) {
                        fill
                    } else {
                        ((i % 1000) as f32 * 0.01).to_be_bytes()
                    }
                })
                .collect()
        };
        let at = |num: usize, den: usize| n * num / den * 4;
        assert_eq!(sample_start(&block(&|i| i < 8192), 4, len), at(3, 8));
        assert_eq!(sample_start(&block(&|i| i < n / 2), 4, len), at(5, 8));
        assert_eq!(sample_start(&block(&|_| true), 4, len), 0);
        assert_eq!(sample_start(&block(&|_| false), 4, len), 0);
        // Half fill is not "mostly": more than half of the 8,192 elements must be.
        assert_eq!(sample_start(&block(&|i| i < 4096), 4, len), 0);
        assert_eq!(sample_start(&block(&|i| i <= 4096), 4, len), at(3, 8));
        // A block no longer than a sample has only the one.
        assert_eq!(sample_start(&fill.repeat(8192), 4, len), 0);
    }

    /// A block of decimals (steps of 0.0001) whose first 32 KiB is mostly fill values: pco's
    /// own choice on that sample misses the decimal multiplier, which the block's mode (found
    /// over the whole block) has, so the block is pco's and a quarter smaller than zstd makes it.
    #[test]
    fn a_block_of_decimals_behind_fill_values_uses_pco_in_the_block_s_mode() {
        let data: Vec<u8> = super::super::pco::tests::decimals_behind_fill()
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect();
        let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false)
            .unwrap()
            .fast_blocks(true)
            .unwrap()
            .numeric(true);
        let mut frame = Vec::new();
        let h = enc
            .encode_block_numeric(0, 0, 4, (Some(NumKind::F32), 0), &data, &mut frame)
            .frame()
            .unwrap();
        assert_eq!((h.codec, h.filter), (Codec::Pco, Filter::None));
        let mut back = Vec::new();
        decode_payload(&h, &frame[FRAME_HEADER_LEN..], &mut back).unwrap();
        assert_eq!(back, data);
        let zstd = zstd::bulk::compress(&data, 3).unwrap().len();
        assert!(
            h.stored_len as usize * 4 < zstd * 3,
            "{} {zstd}",
            h.stored_len
        );
        // The `max` preset's pco is never larger than pco's own choice on the whole block.
        let mut own = Vec::new();
        let pco_level = super::super::pco::LEVEL;
        assert!(super::super::pco::compress(
            NumKind::F32,
            &data,
            pco_level,
            &mut own
        ));
        let mut max = Encoder::new(Codec::Zstd, 19, FilterMode::Auto, true)
            .unwrap()
            .numeric(true);
        frame.clear();
        let h = max
            .encode_block_numeric(0, 0, 4, (Some(NumKind::F32), 0), &data, &mut frame)
            .frame()
            .unwrap();
        assert!(
            h.stored_len as usize <= own.len(),
            "{} {}",
            h.stored_len,
            own.len()
        );
        back.clear();
        decode_payload(&h, &frame[FRAME_HEADER_LEN..], &mut back).unwrap();
        assert_eq!(back, data);
    }

    /// Two pco chunks (2 MiB) of a smooth field in rows of 360, in whole thousandths
    /// (`k as f32 * 0.001`), plus noise of `noise` thousandths; from number `fill_from` on,
    /// about `fill_pct` % of the rows are all the fill value -1e34.
    fn thousandths_in_fill_rows(noise: f64, fill_pct: u32, fill_from: u32) -> Vec<u8> {
        let mut x = 3u64;
        (0..2u32 << 18)
            .flat_map(|i| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let (row, col) = (i / 360, i % 360);
                let wave = (f64::from(row) * 0.02).sin() * (f64::from(col) * 0.03).cos();
                let jitter = ((x >> 40) as f64 / f64::from(1u32 << 24) - 0.5) * 0.001 * noise;
                let k = ((15.0 + 10.0 * wave + jitter) * 1000.0).round() as i32;
                let v = if i >= fill_from && (row * 7919) % 100 < fill_pct {
                    -1e34f32
                } else {
                    k as f32 * 0.001f32
                };
                v.to_be_bytes()
            })
            .collect()
    }

    /// Damaged `mask` payloads (every byte of the prefix and bytes through the pco file
    /// changed, the payload cut at every prefix length) decode to an error or to some block,
    /// never a panic, in both decoders.
    #[test]
    fn damaged_fit_payloads_fail_cleanly() {
        // Floats with land (a fill section) and shorts without: every byte of the prefix and of
        // the fill section flipped, a spread of the pco file's bytes, every truncation of the
        // prefix; decoding gives an error or some bytes, never a panic, and both decoders agree.
        let floats = field_with_land()[..4 << 16].to_vec();
        let shorts: Vec<u8> = (0..40_000u32)
            .flat_map(|i| {
                ((i / 200 * 3 + i % 200 * 7 + (i.wrapping_mul(2_654_435_761) >> 28)) as i16)
                    .to_be_bytes()
            })
            .collect();
        for (data, kind, row, e) in [
            (floats, NumKind::F32, 360, 4u16),
            (shorts, NumKind::I16, 200, 2),
        ] {
            let payload = fit_payload(&data, kind, row).unwrap();
            let h = FrameHeader {
                stored_len: payload.len() as u32,
                decoded_len: data.len() as u32,
                stream: 0,
                block: 0,
                codec: Codec::Pco,
                filter: Filter::Fit,
                esize: e,
                payload_crc: crc(&payload),
            };
            let mut back = Vec::new();
            decode_payload(&h, &payload, &mut back).unwrap();
            assert!(back == data);
            let mut scratch = DecodeScratch::default();
            let mut out = vec![0u8; data.len()];
            let mut try_one = |p: &[u8]| {
                let h = FrameHeader {
                    stored_len: p.len() as u32,
                    payload_crc: crc(p),
                    ..h
                };
                let mut v = Vec::new();
                let a = decode_payload(&h, p, &mut v);
                let b = decode_payload_into(&h, p, &mut out, &mut scratch, true);
                assert_eq!(a.is_ok(), b.is_ok());
            };
            let k = usize::from(payload[3]);
            let mut end = 4 + 6 * k;
            if payload[2] & 1 == 1 {
                let e = usize::from(e);
                end += e
                    + 4
                    + u32::from_be_bytes(payload[end + e..end + e + 4].try_into().unwrap())
                        as usize;
            }
            for at in (0..end + 64).chain((0..200).map(|j| j * payload.len() / 200)) {
                for flip in [0x01u8, 0x80, 0xFF] {
                    let mut p = payload.clone();
                    p[at] ^= flip;
                    try_one(&p);
                }
            }
            for len in 0..end + 8 {
                try_one(&payload[..len]);
            }
        }
    }

    #[test]
    fn damaged_mask_payloads_fail_cleanly() {
        let data = field_with_land();
        let payload = mask_payload(&data, NumKind::F32).unwrap();
        let h = FrameHeader {
            stored_len: payload.len() as u32,
            decoded_len: data.len() as u32,
            stream: 0,
            block: 0,
            codec: Codec::Pco,
            filter: Filter::Mask,
            esize: 4,
            payload_crc: crc(&payload),
        };
        let mut scratch = DecodeScratch::default();
        let mut out = vec![0u8; data.len()];
        let mut try_one = |p: &[u8]| {
            let h = FrameHeader {
                stored_len: p.len() as u32,
                payload_crc: crc(p),
                ..h
            };
            let mut v = Vec::new();
            let a = decode_payload(&h, p, &mut v);
            let b = decode_payload_into(&h, p, &mut out, &mut scratch, true);
            assert_eq!(a.is_ok(), b.is_ok());
        };
        let prefix_end = 8 + u32::from_be_bytes(payload[4..8].try_into().unwrap()) as usize;
        let mut x = 1u64;
        for at in (0..prefix_end + 64).chain((0..200).map(|k| k * payload.len() / 200)) {
            for flip in [0x01u8, 0x80, 0xFF] {
                let mut p = payload.clone();
                p[at] ^= flip;
                try_one(&p);
            }
        }
        for len in 0..prefix_end + 8 {
            try_one(&payload[..len]);
        }
        for _ in 0..200 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            let mut p = payload.clone();
            p[(x >> 33) as usize % payload.len()] = (x >> 13) as u8;
            try_one(&p);
        }
    }

    /// The `max` preset packs decimals among fill values with pco in the mode found over the
    /// block (see `pco::block_float_mode`), no larger than pco in that mode alone: where lzma's
    /// sample looked sure to beat the block codec (noisy, 60 % fill: lzma was 37 % larger),
    /// and where pco's own choice took the mode for the first chunk but not the second (the
    /// fill values starting there: 14 % larger).
    #[test]
    fn max_packs_decimals_among_fill_values_with_pco_in_the_block_s_mode() {
        let pco_level = super::super::pco::LEVEL;
        for (noise, fill_pct, fill_from) in [(100.0, 60, 0), (0.0, 20, 1 << 18)] {
            let data = thousandths_in_fill_rows(noise, fill_pct, fill_from);
            let mode = super::super::pco::block_float_mode(NumKind::F32, &data).unwrap();
            assert_eq!(
                mode,
                super::super::pco::Mode::FloatMult(f64::from(0.001f32))
            );
            let mut in_mode = Vec::new();
            super::super::pco::compress_choosing_in(
                NumKind::F32,
                &data,
                pco_level,
                mode,
                &mut in_mode,
            )
            .unwrap();
            let (h, frame) = encode_floats(true, &data, 360);
            assert_eq!(h.codec, Codec::Pco, "{noise} {fill_pct} {fill_from}");
            let stored = h.stored_len as usize;
            assert!(stored <= in_mode.len(), "{stored} {}", in_mode.len());
            let mut back = Vec::new();
            decode_payload(&h, &frame[FRAME_HEADER_LEN..], &mut back).unwrap();
            assert_eq!(back, data);
        }
    }

    /// pco on big-endian f32 `data` at nc3pack's level, as one standalone file.
    fn pco_f32(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        assert!(super::super::pco::compress(
            NumKind::F32,
            data,
            super::super::pco::LEVEL,
            &mut out
        ));
        out
    }

    /// A preset's encoder of numeric blocks (`max`: thorough, zstd 19; else the default: zstd 3
    /// with fast blocks), and the frame it makes of the floats `data` (rows of `row`).
    fn encode_floats(max: bool, data: &[u8], row: usize) -> (FrameHeader, Vec<u8>) {
        let enc = Encoder::new(Codec::Zstd, if max { 19 } else { 3 }, FilterMode::Auto, max)
            .unwrap()
            .fast_blocks(!max)
            .unwrap();
        let mut enc = enc.numeric(true);
        let mut frame = Vec::new();
        let h = enc
            .encode_block_numeric(0, 0, 4, (Some(NumKind::F32), row), data, &mut frame)
            .frame()
            .unwrap();
        (h, frame)
    }

    /// Station latitudes, one per observation (`n` big-endian floats): 1,800 stations at
    /// random places (4 decimals) report in cycles, a random 85 % of them each cycle, in a fixed
    /// order; a point-observation file in time order stores its coordinates so.
    fn station_lats(n: usize) -> Vec<u8> {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let lats: Vec<f32> = (0..1800)
            .map(|_| ((next() % 1_350_000) as f32 * 1e-4) - 60.0)
            .collect();
        let mut out = Vec::with_capacity(4 * n);
        while out.len() < 4 * n {
            for &lat in &lats {
                if next() % 100 < 85 && out.len() < 4 * n {
                    out.extend_from_slice(&lat.to_be_bytes());
                }
            }
        }
        out
    }

    #[test]
    fn station_coordinates_take_refs_with_zstd_in_the_default_preset() {
        let data = station_lats(1 << 18);
        let (h, frame) = encode_floats(false, &data, 0);
        assert_eq!((h.codec, h.filter), (Codec::Zstd, Filter::Refs));
        let p = &frame[FRAME_HEADER_LEN..];
        decodes_every_way(&h, p, &data);
        // Less than half of zstd 3 after each 1-D filter on the whole block, and below pco.
        let mut z3 = zstd::bulk::Compressor::new(3).unwrap();
        for f in [Filter::Shuffle, Filter::ByteDelta, Filter::ZigZagDelta] {
            let mut x = Vec::new();
            apply_filter(f, &data, 4, &mut x);
            let z = z3.compress(&x).unwrap().len();
            assert!((p.len() as f64) < 0.5 * z as f64, "{f:?}: {} {z}", p.len());
        }
        assert!(p.len() < pco_f32(&data).len());

        // Values that keep changing (noise) do not try it.
        let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false)
            .unwrap()
            .numeric(true)
            .fast_blocks(true)
            .unwrap();
        let mut x = 1u64;
        let noise: Vec<u8> = (0..1u32 << 18)
            .flat_map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                (280.0 + (x >> 40) as f32 * 1e-6).to_be_bytes()
            })
            .collect();
        let mut frame = Vec::new();
        let h = enc
            .encode_block_numeric(0, 0, 4, (Some(NumKind::F32), 0), &noise, &mut frame)
            .frame()
            .unwrap();
        assert!(enc.refs_est.is_none() && h.filter != Filter::Refs, "{h:?}");
        let (new, half) = super::super::refs::late_new(&noise[..32 << 10], 4).unwrap();
        assert!(new * REFS_LATE_NEW >= half, "{new} of {half}");
    }

    #[test]
    fn late_new_counts_the_values_new_in_the_second_half() {
        let be = |v: &[u32]| v.iter().flat_map(|x| x.to_be_bytes()).collect::<Vec<u8>>();
        let late = super::super::refs::late_new;
        assert_eq!(late(&be(&[5, 7, 5, 9, 7, 5, 8, 5]), 4), Some((1, 4)));
        // An odd count: the second half (3, 1, 4) is the longer; 3 and 4 are new.
        assert_eq!(late(&be(&[1, 2, 3, 1, 4]), 4), Some((2, 3)));
        assert_eq!(late(&be(&[1]), 4), None);
        assert_eq!(late(&[0; 16], 2), None);
        let eight: Vec<u8> = [3u64, 3, 4, 3]
            .iter()
            .flat_map(|x| x.to_be_bytes())
            .collect();
        assert_eq!(late(&eight, 8), Some((1, 2)));
    }

    /// A block (1 MiB) of a smooth field in hundredths (`k as f32 * 0.01`, as sea surface
    /// temperatures often are) in rows of 360 with noise, where whole rows and a stretch of
    /// every other row are land, the fill value -1e34.
    fn field_with_land() -> Vec<u8> {
        let mut x = 5u64;
        (0..1u32 << 18)
            .flat_map(|i| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let (row, col) = (i / 360, i % 360);
                let land = (row * 7919) % 100 < 30 || (row % 2 == 0 && (100..160).contains(&col));
                let wave = (f64::from(row) * 0.02).sin() * (f64::from(col) * 0.03).cos();
                let noise = (x >> 40) as f64 / f64::from(1u32 << 24) - 0.5;
                let k = ((15.0 + 10.0 * wave + 0.2 * noise) * 100.0).round() as i32;
                let v = if land { -1e34f32 } else { k as f32 * 0.01f32 };
                v.to_be_bytes()
            })
            .collect()
    }

    /// Both presets set the fill values of a field with land apart (filter `mask`), which pco
    /// then codes far smaller than with them, and the frames decode back bit for bit, to
    /// big-endian and native numbers.
    #[test]
    fn fill_values_are_set_apart_for_pco() {
        let data = field_with_land();
        let own = pco_f32(&data);
        let mut scratch = DecodeScratch::default();
        for thorough in [false, true] {
            let (h, frame) = encode_floats(thorough, &data, 360);
            assert_eq!(
                (h.codec, h.filter),
                (Codec::Pco, Filter::Mask),
                "{thorough}"
            );
            let stored = h.stored_len as usize;
            assert!(
                stored * 10 < own.len() * 8,
                "{thorough}: {stored} {}",
                own.len()
            );
            let payload = &frame[FRAME_HEADER_LEN..];
            let mut back = Vec::new();
            decode_payload(&h, payload, &mut back).unwrap();
            assert_eq!(back, data);
            let mut native = vec![0u8; data.len()];
            decode_payload_into(&h, payload, &mut native, &mut scratch, true).unwrap();
            let want: Vec<u8> = data
                .chunks_exact(4)
                .flat_map(|b| f32::from_be_bytes([b[0], b[1], b[2], b[3]]).to_ne_bytes())
                .collect();
            assert_eq!(native, want);
            // Another codec with the filter, or another element size, is refused.
            let pco_only = FrameHeader {
                codec: Codec::Zstd,
                ..h
            };
            assert!(matches!(
                decode_mask(&pco_only, payload, &mut native, false, &mut scratch),
                Err(FrameError::MaskCodec { codec: Codec::Zstd })
            ));
            let three = FrameHeader { esize: 3, ..h };
            assert!(matches!(
                decode_mask(&three, payload, &mut native, false, &mut scratch),
                Err(FrameError::MaskElementSize { esize: 3 })
            ));
            // A pco file of one number fewer than the bitmap leaves is refused.
            let mut bits = Vec::new();
            let (_, m, pco) =
                super::super::mask::decode(payload, 4, data.len() / 4, &mut bits).unwrap();
            let mut shorter = payload[..payload.len() - pco.len()].to_vec();
            let rest: Vec<u8> = {
                let mut r = vec![0u8; m * 4];
                super::super::pco::decompress_into(4, pco, &mut r, false, &mut Default::default())
                    .unwrap();
                r
            };
            shorter.extend_from_slice(&pco_f32(&rest[4..]));
            assert!(decode_mask(&h, &shorter, &mut native, false, &mut scratch).is_err());
        }
    }

    /// `max`'s pco tries chunks of half pco's default size: on a block whose spread changes
    /// along it (four stretches of noise, each ten times the last), their bins fit each
    /// stretch and the result is smaller than pco's default chunks, and decodes.
    #[test]
    fn max_tries_pco_chunks_of_half_the_size() {
        let n = 4 * PCO_HALF_CHUNK;
        let mut rnd = xorshift(0x9e37_79b9_7f4a_7c15);
        let data: Vec<u8> = (0..n)
            .flat_map(|i| {
                let noise = (rnd() >> 40) as f32 / (1u32 << 24) as f32 - 0.5;
                let spread = [0.001f32, 0.01, 0.1, 1.0][i / PCO_HALF_CHUNK];
                (100.0 + spread * noise).to_be_bytes()
            })
            .collect();
        let default = pco_f32(&data);
        let mut c = Vec::new();
        assert!(pco_thorough(NumKind::F32, &data, None, &mut c));
        assert!(
            c.len() * 100 < default.len() * 99,
            "{} {}",
            c.len(),
            default.len()
        );
        let mut back = vec![0u8; data.len()];
        super::super::pco::decompress_into(4, &c, &mut back, false, &mut Default::default())
            .unwrap();
        assert_eq!(back, data);
    }

    /// A block whose sample (its first 32 KiB) is half fill values (a polar row's ice) and the
    /// rest of it one fifteenth, in short runs (islands): `mask` is judged on the elements
    /// that are not the fill value, and taken where it beats the filters and zstd on the whole
    /// block. Judged
    /// against the sample's zstd result as it stood, the sample's cheap fill values made zstd
    /// look twice as good and kept the block from `mask`.
    #[test]
    fn mask_is_judged_on_the_elements_that_are_not_fill_values() {
        let mut rnd = xorshift(0x2545_f491_4f6c_dd1d);
        let mut noise = || {
            // The sum of four uniform numbers: near-Gaussian, variance 1/3.
            (0..4)
                .map(|_| (rnd() >> 40) as f64 / f64::from(1u32 << 24) - 0.5)
                .sum::<f64>()
        };
        let data: Vec<u8> = (0..1u32 << 18)
            .flat_map(|i| {
                let (row, col) = (i / 720, i % 720);
                let ice = (row < 12 && col < 280) || (col + row % 7) % 120 < 8;
                let wave = (f64::from(row) * 0.05).sin() * (f64::from(col) * 0.02).cos();
                let v = 285.0 + 8.0 * wave + 0.1 * noise();
                if ice { 9.96921e36f32 } else { v as f32 }.to_be_bytes()
            })
            .collect();
        let fill = data
            .chunks_exact(4)
            .filter(|b| *b == 9.96921e36f32.to_be_bytes())
            .count();
        assert!(
            fill * 20 > data.len() / 4 && fill * 10 < data.len() / 4,
            "{fill}"
        );
        let first = &data[..32 << 10];
        let ice = first.chunks_exact(4).filter(|b| *b == &data[..4]).count();
        assert!(
            ice * 5 > 2 * first.len() / 4 && ice * 2 < first.len() / 4,
            "{ice}"
        );
        // As a variable of one dimension (no rows for `fit`).
        let (h, frame) = encode_floats(false, &data, 0);
        assert_eq!((h.codec, h.filter), (Codec::Pco, Filter::Mask));
        // Smaller than the filters with zstd on the whole block (by at least 3 %).
        let mut best = usize::MAX;
        for filter in [Filter::Shuffle, Filter::ByteDelta, Filter::ZigZagDelta] {
            let mut f = Vec::new();
            apply_filter(filter, &data, 4, &mut f);
            best = best.min(zstd::bulk::compress(&f, 3).unwrap().len());
        }
        assert!(
            h.stored_len as usize * 100 < best * 97,
            "{} {best}",
            h.stored_len
        );
        decodes_every_way(&h, &frame[FRAME_HEADER_LEN..], &data);
        // In rows of 720 the fitted predictor, with the same fill section, is smaller still:
        // judged the same way (its window widened past the sample's ice).
        let (hf, frame) = encode_floats(false, &data, 720);
        assert_eq!((hf.codec, hf.filter), (Codec::Pco, Filter::Fit));
        assert!(
            hf.stored_len < h.stored_len,
            "{} {}",
            hf.stored_len,
            h.stored_len
        );
        let payload = &frame[FRAME_HEADER_LEN..];
        assert_eq!(payload[..3], [1, 12, 1], "floats, shift 12, a fill section");
        decodes_every_way(&hf, payload, &data);
    }

    /// A climatology of sparse observations (as COADS): a field of monthly means on a 2-degree
    /// grid, noisy, with a fill value wherever no ship passed — 45 % of the cells, scattered.
    /// The fitted predictor finds few whole neighbourhoods there, and pco on the other elements
    /// (`mask`) is smaller: the writer must see that, not take `fit` for being below zstd.
    #[test]
    fn scattered_fill_values_keep_mask_where_it_beats_fit() {
        let mut rnd = xorshift(0x1234_5678_9abc_def1);
        let data: Vec<u8> = (0..12 * 90 * 180u32)
            .flat_map(|i| {
                let (row, col) = ((i / 180) % 90, i % 180);
                let r = rnd();
                let gap = r % 100 < 45;
                let noise = ((r >> 20) % 2001) as f64 / 1000.0 - 1.0;
                let v =
                    15.0 * (f64::from(row) * 0.03).cos() + (f64::from(col) * 0.05).sin() + noise;
                if gap { -1e34f32 } else { v as f32 }.to_be_bytes()
            })
            .collect();
        let (h, frame) = encode_floats(false, &data, 180);
        let fit = fit_payload(&data, NumKind::F32, 180).unwrap();
        let mask = mask_payload(&data, NumKind::F32).unwrap();
        assert!(mask.len() < fit.len(), "{} {}", mask.len(), fit.len());
        assert_eq!((h.codec, h.filter), (Codec::Pco, Filter::Mask));
        decodes_every_way(&h, &frame[FRAME_HEADER_LEN..], &data);
    }

    #[test]
    fn numeric_blocks_use_pco_where_it_pays_and_decode_every_way() {
        let data = decimal_walk(65536);
        let smooth: Vec<u8> = (0..65536u32)
            .flat_map(|i| (1000.0 + (i as f32 * 0.001).sin()).to_be_bytes())
            .collect();
        let mut scratch = DecodeScratch::default();
        for thorough in [false, true] {
            let level = if thorough { 19 } else { 3 };
            let mk = || Encoder::new(Codec::Zstd, level, FilterMode::Auto, thorough).unwrap();
            let mut frame = Vec::new();
            let h = mk()
                .numeric(true)
                .encode_block_numeric(0, 0, 4, (Some(NumKind::F32), 0), &data, &mut frame)
                .frame()
                .unwrap();
            assert_eq!((h.codec, h.filter), (Codec::Pco, Filter::None));
            let payload = &frame[FRAME_HEADER_LEN..];
            // Smaller than the best the filters and zstd give for the same block.
            let mut other = Vec::new();
            let h0 = mk()
                .encode_block(0, 0, 4, &data, &mut other)
                .frame()
                .unwrap();
            assert!(
                h.stored_len < h0.stored_len,
                "{} {}",
                h.stored_len,
                h0.stored_len
            );
            let mut out = Vec::new();
            decode_payload(&h, payload, &mut out).unwrap();
            assert_eq!(out, data);
            let mut native = vec![0u8; data.len()];
            decode_payload_into(&h, payload, &mut native, &mut scratch, true).unwrap();
            let want: Vec<u8> = data
                .chunks_exact(4)
                .flat_map(|c| f32::from_be_bytes(c.try_into().unwrap()).to_ne_bytes())
                .collect();
            assert_eq!(native, want);
            // Off: no kind, another element size, numeric(false), a fixed filter.
            for (enc, kind, esize) in [
                (mk().numeric(true), None, 4),
                (mk().numeric(true), Some(NumKind::I16), 4),
                (mk().numeric(false), Some(NumKind::F32), 4),
                (
                    Encoder::new(Codec::Zstd, 3, FilterMode::Fixed(Filter::Shuffle), thorough)
                        .unwrap()
                        .numeric(true),
                    Some(NumKind::F32),
                    4,
                ),
            ] {
                let mut enc = enc;
                frame.clear();
                let h = enc
                    .encode_block_numeric(0, 0, esize, (kind, 0), &data, &mut frame)
                    .frame()
                    .unwrap();
                assert_ne!(h.codec, Codec::Pco);
            }
            // A smooth field where byte filters do well: the default keeps zstd (pco does not
            // win by its margin on the sample).
            frame.clear();
            let h = mk()
                .numeric(true)
                .encode_block_numeric(0, 0, 4, (Some(NumKind::F32), 0), &smooth, &mut frame)
                .frame()
                .unwrap();
            let mut out = Vec::new();
            decode_payload(&h, &frame[FRAME_HEADER_LEN..], &mut out).unwrap();
            assert_eq!(out, smooth);
            if !thorough {
                assert_eq!(h.codec, Codec::Zstd);
            }
        }
    }

    /// The `max` preset's slow level runs only where it can change the choice: a block where
    /// pco is far below zstd 3's result skips it (and stays pco), a block where they are close
    /// gets both and keeps the smaller, which is never larger than the zstd 19 frame alone.
    #[test]
    fn thorough_encoders_skip_the_slow_level_where_pco_wins_clearly() {
        let mk = || {
            Encoder::new(Codec::Zstd, 19, FilterMode::Auto, true)
                .unwrap()
                .numeric(true)
        };
        let walk = decimal_walk(65536);
        let mut enc = mk();
        let mut frame = Vec::new();
        let h = enc
            .encode_block_numeric(0, 0, 4, (Some(NumKind::F32), 0), &walk, &mut frame)
            .frame()
            .unwrap();
        assert_eq!(h.codec, Codec::Pco);
        assert_eq!(enc.codec_runs, 0, "zstd 19 ran on a block pco wins clearly");
        // pco's result, computed apart, against zstd 3 of every filter: far below.
        let p = pco_f32(&walk);
        assert_eq!(p.len(), h.stored_len as usize);
        let mut z3 = zstd::bulk::Compressor::new(3).unwrap();
        for f in [
            Filter::None,
            Filter::Shuffle,
            Filter::ByteDelta,
            Filter::Delta,
        ] {
            let mut x = Vec::new();
            apply_filter(f, &walk, 4, &mut x);
            let z = z3.compress(&x).unwrap().len();
            assert!((p.len() as f64) < 0.85 * z as f64, "{f:?}: {} {z}", p.len());
        }
        // Integers 0..n as shorts with a period: pco and zstd close; both run, smaller kept.
        let ramp: Vec<u8> = (0..262144u32)
            .flat_map(|i| ((i % 4099) as i16).to_be_bytes())
            .collect();
        let mut enc = mk();
        frame.clear();
        let h = enc
            .encode_block_numeric(0, 0, 2, (Some(NumKind::I16), 0), &ramp, &mut frame)
            .frame()
            .unwrap();
        let mut plain = Vec::new();
        let h19 = Encoder::new(Codec::Zstd, 19, FilterMode::Auto, true)
            .unwrap()
            .encode_block(0, 0, 2, &ramp, &mut plain)
            .frame()
            .unwrap();
        assert!(h.stored_len <= h19.stored_len, "{h:?} {h19:?}");
        let mut out = Vec::new();
        decode_payload(&h, &frame[FRAME_HEADER_LEN..], &mut out).unwrap();
        assert_eq!(out, ramp);
    }

    #[test]
    fn pco_frames_with_a_filter_or_a_wrong_length_are_refused() {
        let data = decimal_walk(4096);
        let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false)
            .unwrap()
            .numeric(true);
        let mut frame = Vec::new();
        let h = enc
            .encode_block_numeric(0, 0, 4, (Some(NumKind::F32), 0), &data, &mut frame)
            .frame()
            .unwrap();
        assert_eq!(h.codec, Codec::Pco);
        let payload = &frame[FRAME_HEADER_LEN..];
        let mut scratch = DecodeScratch::default();
        let filtered = FrameHeader {
            filter: Filter::Shuffle,
            ..h
        };
        let mut out = vec![0u8; data.len()];
        let e = decode_payload(&filtered, payload, &mut Vec::new()).unwrap_err();
        assert!(
            e.to_string().contains("filter shuffle with codec pco"),
            "{e}"
        );
        let e2 = decode_payload_into(&filtered, payload, &mut out, &mut scratch, false);
        assert_eq!(e2, Err(e));
        for decoded in [h.decoded_len - 4, h.decoded_len + 4] {
            let lying = FrameHeader {
                decoded_len: decoded,
                ..h
            };
            let mut out = vec![0u8; decoded as usize];
            let got = decode_payload_into(&lying, payload, &mut out, &mut scratch, true);
            let want = decode_payload(&lying, payload, &mut Vec::new());
            assert!(got.is_err() && want.is_err(), "{decoded}: {got:?} {want:?}");
            assert_eq!(got, want);
        }
    }

    /// A smooth 2-D float field (waves whose phase and amplitude drift from row to row: rows of
    /// `w`), big-endian.
    fn grid(w: usize, h: usize, double: bool) -> Vec<u8> {
        (0..w * h)
            .flat_map(|i| {
                let (r, c) = ((i / w) as f64, (i % w) as f64);
                let v = 30.0 * (0.05 * c + 0.01 * r).sin() * (1.0 + 0.003 * r);
                if double {
                    v.to_be_bytes().to_vec()
                } else {
                    (v as f32).to_be_bytes().to_vec()
                }
            })
            .collect()
    }

    #[test]
    fn float_grids_use_the_2d_predictor_with_their_row_length() {
        for thorough in [false, true] {
            for (double, kind) in [(false, NumKind::F32), (true, NumKind::F64)] {
                let e = kind.esize();
                // 300 rows of 120, cut so that the last row is partial.
                let data = &grid(120, 300, double)[..(120 * 299 + 17) * e];
                for pco in [false, true] {
                    let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, thorough)
                        .unwrap()
                        .numeric(pco);
                    let mut frame = Vec::new();
                    let h = enc
                        .encode_block_numeric(0, 0, e, (Some(kind), 120), data, &mut frame)
                        .frame()
                        .unwrap();
                    let ctx = format!("thorough {thorough} {kind:?} pco {pco}");
                    // With pco, the weighted predictor `plane` may do better still.
                    let two_d = [Filter::Lorenzo, Filter::Plane];
                    assert_eq!(h.filter, two_d[usize::from(h.codec == Codec::Pco)], "{ctx}");
                    let payload = &frame[FRAME_HEADER_LEN..];
                    assert_eq!(payload[..4], 120u32.to_be_bytes(), "{ctx}");
                    let mut back = Vec::new();
                    decode_payload(&h, payload, &mut back).unwrap();
                    assert!(back == data, "{ctx}");
                    // Without a row length (a 1-D variable), or as integers: never.
                    for (kind, row) in [(Some(kind), 0), (None, 120)] {
                        frame.clear();
                        let h = enc
                            .encode_block_numeric(0, 0, e, (kind, row), data, &mut frame)
                            .frame()
                            .unwrap();
                        assert!(!two_d.contains(&h.filter), "{ctx} {kind:?} {row}");
                    }
                }
            }
        }
    }

    /// A fixed `lorenzo` filter (`--filter lorenzo`) is the 2-D predictor on float blocks with
    /// rows (with the row length in the payload), and the 1-D difference on every other
    /// block: 1-D or integer variables, one-byte elements. Each frame decodes to its block.
    #[test]
    fn a_fixed_lorenzo_filter_falls_back_to_a_1d_difference_without_rows() {
        let floats: Vec<u8> = (0..4096)
            .flat_map(|i| (280.0f32 + (i % 64) as f32 * 0.25 + (i / 64) as f32).to_be_bytes())
            .collect();
        let ints: Vec<u8> = (0..4096i32)
            .flat_map(|i| (i * 7 % 300).to_be_bytes())
            .collect();
        let bytes: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8).collect();
        type Case<'a> = (&'a [u8], usize, Option<NumKind>, usize, Filter);
        let cases: [Case; 5] = [
            (&floats, 4, Some(NumKind::F32), 64, Filter::Lorenzo),
            (&floats, 4, Some(NumKind::F32), 0, Filter::ZigZagDelta),
            (&floats, 4, None, 64, Filter::ZigZagDelta),
            (&ints, 4, Some(NumKind::I32), 64, Filter::ZigZagDelta),
            (&bytes, 1, None, 64, Filter::ByteDelta),
        ];
        for (data, esize, kind, row, want) in cases {
            let mode = FilterMode::Fixed(Filter::Lorenzo);
            let mut enc = Encoder::new(Codec::Zstd, 3, mode, false)
                .unwrap()
                .numeric(false);
            let mut frame = Vec::new();
            let done = enc.encode_block_numeric(0, 0, esize, (kind, row), data, &mut frame);
            let Encoded::Frame(h) = done else {
                panic!("{kind:?} row {row}: not a frame")
            };
            assert_eq!(
                (h.codec, h.filter),
                (Codec::Zstd, want),
                "{kind:?} row {row}"
            );
            if want == Filter::Lorenzo {
                // The row length leads the payload (after the frame header).
                let at = FRAME_HEADER_LEN;
                assert_eq!(frame[at..at + 4], (row as u32).to_be_bytes());
            }
            let mut out = Vec::new();
            decode_payload(&h, &frame[FRAME_HEADER_LEN..], &mut out).unwrap();
            assert!(out == data, "{kind:?} row {row}");
        }
    }

    /// The worked example of design/FORMAT.md as a whole frame: the row length, then a zstd
    /// frame of the filtered bytes (checked by hand in src/format/lorenzo.rs).
    #[test]
    fn a_lorenzo_frame_decodes_and_bad_ones_are_refused() {
        let data: Vec<u8> = [1.0f32, 1.5, 2.0, -0.0]
            .iter()
            .flat_map(|x| x.to_be_bytes())
            .collect();
        let filtered = [
            0x7f, 0x00, 0x00, 0x80, 0x00, 0x80, 0x80, 0x80, 0, 0, 0, 0, 0, 0, 0, 1,
        ];
        // A raw zstd block is the bytes themselves: magic, frame header (single segment,
        // content size 16), block header (last, raw, 16 bytes), the bytes.
        let mut payload = vec![
            0, 0, 0, 2, 0x28, 0xb5, 0x2f, 0xfd, 0x20, 0x10, 0x81, 0x00, 0x00,
        ];
        payload.extend_from_slice(&filtered);
        let mk = |payload: &[u8], esize: u16| FrameHeader {
            stored_len: payload.len() as u32,
            decoded_len: 16,
            stream: 0,
            block: 0,
            codec: Codec::Zstd,
            filter: Filter::Lorenzo,
            esize,
            payload_crc: crc(payload),
        };
        let mut out = Vec::new();
        decode_payload(&mk(&payload, 4), &payload, &mut out).unwrap();
        assert_eq!(out, data);
        let mut scratch = DecodeScratch::default();
        let mut into = vec![0; 16];
        decode_payload_into(&mk(&payload, 4), &payload, &mut into, &mut scratch, false).unwrap();
        assert_eq!(into, data);
        // Row length 0, no room for the row length, and an element size it is not for.
        let mut zero = payload.clone();
        zero[3] = 0;
        let cases = [
            (mk(&zero, 4), zero.clone(), "lorenzo row length 0"),
            (
                mk(&payload[..3], 4),
                payload[..3].to_vec(),
                "no 4-byte row length",
            ),
            (mk(&payload, 2), payload.clone(), "element size 2"),
        ];
        for (h, p, want) in cases {
            let e = decode_payload(&h, &p, &mut out).unwrap_err();
            assert!(e.to_string().contains(want), "{e}");
            let e2 = decode_payload_into(&h, &p, &mut into, &mut scratch, true);
            assert_eq!(e2, Err(e));
        }
    }

    /// A topography-like field of `w` x `h` integers of `e` bytes (2, 4 or 8), big-endian:
    /// smooth hills plus a little noise, scaled by `scale`.
    fn int_grid(w: usize, h: usize, e: usize, scale: i64) -> Vec<u8> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        (0..w * h)
            .flat_map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let (r, c) = ((i / w) as f64, (i % w) as f64);
                let v =
                    800.0 * (0.02 * c).sin() * (0.03 * r).cos() + 300.0 * (0.011 * (c + r)).sin();
                let v = (v as i64 + (x % 7) as i64 - 3) * scale;
                v.to_be_bytes()[8 - e..].to_vec()
            })
            .collect()
    }

    /// A `w` x `h` grid of shorts like an elevation field: smooth hills plus rough ground
    /// correlated in both directions (each point the mean of its left and upper neighbours'
    /// roughness plus a random step), where a 2-D predictor wins over byte filters but pco
    /// alone does not win by much.
    fn rough_terrain(w: usize, h: usize) -> Vec<u8> {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rough = vec![0i64; w * h];
        for i in 0..w * h {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (r, c) = (i / w, i % w);
            let up = if r > 0 { rough[i - w] } else { 0 };
            let left = if c > 0 { rough[i - 1] } else { up };
            let up = if r > 0 { up } else { left };
            rough[i] = (up + left) / 2 + (x % 17) as i64 - 8;
        }
        (0..w * h)
            .flat_map(|i| {
                let (r, c) = ((i / w) as f64, (i % w) as f64);
                let v = 900.0 * (c / 37.0).sin() * (r / 23.0).cos()
                    + 250.0 * ((c + 2.0 * r) / 17.0).sin();
                ((v as i64 + rough[i]) as i16).to_be_bytes()
            })
            .collect()
    }

    /// The default preset checks a `plane` choice of the sample on the whole block, unless a
    /// spread sample already shows it well below the block codec's result: a terrain block
    /// keeps `plane` without a block-codec run; a block whose first rows are terrain but whose
    /// rest is exact repeats far apart (zstd's case, not pco's) is checked, and drops `plane`.
    #[test]
    fn the_plane_check_runs_only_where_the_spread_sample_is_not_sure() {
        let mk = || {
            Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false)
                .unwrap()
                .numeric(true)
                .fast_blocks(true)
                .unwrap()
        };
        let (w, h) = (1000, 500);
        let terrain = rough_terrain(w, h);
        let mut enc = mk();
        let mut frame = Vec::new();
        let hd = enc
            .encode_block_numeric(0, 0, 2, (Some(NumKind::I16), w), &terrain, &mut frame)
            .frame()
            .unwrap();
        assert_eq!((hd.codec, hd.filter), (Codec::Pco, Filter::Plane));
        assert!(enc.plane_checked, "the sample did not ask for the check");
        assert_eq!(enc.codec_runs, 0, "zstd ran on the whole terrain block");
        decodes_every_way(&hd, &frame[FRAME_HEADER_LEN..], &terrain);
        // Well below zstd's best on the whole block: what the check would have said.
        let p = &frame[FRAME_HEADER_LEN..];
        let mut z3 = zstd::bulk::Compressor::new(3).unwrap();
        for f in [Filter::Shuffle, Filter::ByteDelta, Filter::ZigZagDelta] {
            let mut x = Vec::new();
            apply_filter(f, &terrain, 2, &mut x);
            let z = z3.compress(&x).unwrap().len();
            assert!(
                (p.len() as f64) < PLANE_MARGIN * z as f64,
                "{f:?}: {} {z}",
                p.len()
            );
        }

        // Terrain rows first, then 64 KiB of noise repeated: zstd finds the repeats.
        let mut noise = Vec::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..(64 << 10) / 8 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            noise.extend_from_slice(&x.to_be_bytes());
        }
        let mut mixed = terrain[..64 << 10].to_vec();
        while mixed.len() < terrain.len() {
            mixed.extend_from_slice(&noise);
        }
        mixed.truncate(terrain.len());
        let mut enc = mk();
        let mut frame = Vec::new();
        let hd = enc
            .encode_block_numeric(0, 0, 2, (Some(NumKind::I16), w), &mixed, &mut frame)
            .frame()
            .unwrap();
        assert!(enc.plane_checked, "the sample did not ask for the check");
        assert_eq!(enc.codec_runs, 1);
        assert_eq!(hd.codec, Codec::Zstd);
        decodes_every_way(&hd, &frame[FRAME_HEADER_LEN..], &mixed);
        let p = plane_payload(&mixed, NumKind::I16, w).unwrap();
        assert!(hd.stored_len as f64 * 2.0 < p.len() as f64);
    }

    /// Decodes a frame every way (into a vector; into aligned and unaligned slices, big-endian
    /// and native) and checks each against `data`.
    fn decodes_every_way(h: &FrameHeader, payload: &[u8], data: &[u8]) {
        let e = usize::from(h.esize);
        let mut out = Vec::new();
        decode_payload(h, payload, &mut out).unwrap();
        assert!(out == data);
        let mut native = data.to_vec();
        be_to_native(&mut native, e);
        let mut words = vec![0u64; data.len() / 8 + 2];
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
        let mut scratch = DecodeScratch::default();
        for at in [0, 1] {
            for (nat, want) in [(false, data), (true, &native[..])] {
                let out = &mut bytes[at..at + data.len()];
                out.fill(0x5a);
                decode_payload_into(h, payload, out, &mut scratch, nat).unwrap();
                assert!(out == want, "at {at} native {nat}");
            }
        }
    }

    /// A smooth field with noise ten times larger in a band of columns (as land against sea),
    /// `ny` rows of `nx`, as floats of `e` bytes (big-endian).
    fn patchy_field(ny: usize, nx: usize, e: usize) -> Vec<u8> {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        (0..ny * nx)
            .flat_map(|i| {
                let (r, c) = (i / nx, i % nx);
                let noise: f64 = (0..4)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5
                    })
                    .sum();
                let scale = if c % 100 < 40 { 2.0 } else { 0.2 };
                let v = 280.0 + 0.1 * r as f64 + 3.0 * (c as f64 * 0.05).sin() + noise * scale;
                if e == 4 {
                    (v as f32).to_be_bytes().to_vec()
                } else {
                    v.to_be_bytes().to_vec()
                }
            })
            .collect()
    }

    /// After a `context` result above [`NOISE_SHARE`] of its block, `max` tries lzma on the
    /// whole block unfiltered and keeps it where smaller (values from a small set, repeated one
    /// by one), and the frame decodes; not after another codec, nor after a small result, nor
    /// in the default preset.
    #[test]
    fn lzma_is_tried_after_a_poor_context_result() {
        let mut rnd = xorshift(0x51_7cc1_b727_220a);
        let pool: Vec<f32> = (0..256).map(|_| (rnd() % 100_000) as f32 * 0.37).collect();
        let data: Vec<u8> = (0..1usize << 18)
            .flat_map(|_| pool[(rnd() % 256) as usize].to_be_bytes())
            .collect();
        let poor = vec![7u8; data.len() * 9 / 10];
        let mut enc = Encoder::new(Codec::Zstd, 19, FilterMode::Auto, true).unwrap();
        let (mut f, mut c) = (Vec::new(), poor.clone());
        let got = enc.lzma_after_context(&data, 4, (Codec::Context, Filter::None), &mut f, &mut c);
        assert_eq!(got, (Codec::Lzma, Filter::None));
        assert!(c.len() < data.len() / 2, "{}", c.len());
        let h = FrameHeader {
            codec: Codec::Lzma,
            filter: Filter::None,
            esize: 4,
            stored_len: c.len() as u32,
            decoded_len: data.len() as u32,
            stream: 0,
            block: 0,
            payload_crc: crate::format::crc(&c),
        };
        let mut back = Vec::new();
        decode_payload(&h, &c, &mut back).unwrap();
        assert_eq!(back, data);
        // Left alone: another codec's result, a result below the share, the default preset.
        for (current, len, thorough) in [
            ((Codec::Pco, Filter::None), poor.len(), true),
            ((Codec::Context, Filter::None), data.len() / 2, true),
            ((Codec::Context, Filter::None), poor.len(), false),
        ] {
            let mut enc = Encoder::new(Codec::Zstd, 19, FilterMode::Auto, thorough).unwrap();
            let mut c = vec![7u8; len];
            assert_eq!(
                enc.lzma_after_context(&data, 4, current, &mut f, &mut c),
                current
            );
            assert_eq!(c, vec![7u8; len]);
        }
    }

    #[test]
    fn noisy_fields_use_the_context_codec_with_max_only() {
        for kind in [NumKind::F32, NumKind::F64] {
            let e = kind.esize();
            let data = patchy_field(200, 300, e);
            for (thorough, numeric) in [(true, true), (false, true), (true, false)] {
                let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, thorough)
                    .unwrap()
                    .numeric(numeric);
                let mut frame = Vec::new();
                let h = enc
                    .encode_block_numeric(0, 0, e, (Some(kind), 300), &data, &mut frame)
                    .frame()
                    .unwrap();
                let ctx = format!("{kind:?} thorough {thorough} numeric {numeric}");
                let payload = &frame[FRAME_HEADER_LEN..];
                if thorough && numeric {
                    assert_eq!((h.codec, h.filter), (Codec::Context, Filter::None), "{ctx}");
                    // Floats, row 300.
                    assert_eq!(
                        (payload[0], &payload[2..6]),
                        (1, &[0, 0, 1, 44][..]),
                        "{ctx}"
                    );
                } else {
                    assert_ne!(h.codec, Codec::Context, "{ctx}");
                }
                decodes_every_way(&h, payload, &data);
            }
        }
    }

    #[test]
    fn integer_grids_use_the_plane_predictor_with_pco() {
        for (kind, scale) in [(NumKind::I16, 1), (NumKind::I32, 1000), (NumKind::I64, -1)] {
            let e = kind.esize();
            let data = int_grid(300, 200, e, scale);
            for thorough in [false, true] {
                let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, thorough)
                    .unwrap()
                    .numeric(true);
                let mut frame = Vec::new();
                let h = enc
                    .encode_block_numeric(0, 0, e, (Some(kind), 300), &data, &mut frame)
                    .frame()
                    .unwrap();
                let ctx = format!("{kind:?} thorough {thorough}");
                let payload = &frame[FRAME_HEADER_LEN..];
                if thorough && h.codec == Codec::Context {
                    // `max` may find the context codec smaller still (with the same rows).
                    assert_eq!(&payload[2..6], &[0, 0, 1, 44], "{ctx}: row 300");
                } else if h.filter == Filter::Fit {
                    // Or the predictor fitted to the block (at least 3 % below plane's).
                    assert_eq!(h.codec, Codec::Pco, "{ctx}");
                    assert_eq!(payload[0], 0, "{ctx}: map 0");
                    let plane = plane_payload(&data, kind, 300).unwrap();
                    assert!(h.stored_len as usize * 100 < plane.len() * 97, "{ctx}");
                } else {
                    assert_eq!((h.codec, h.filter), (Codec::Pco, Filter::Plane), "{ctx}");
                    assert_eq!(&payload[..5], &[0, 0, 1, 44, 0], "{ctx}: row 300, map 0");
                }
                decodes_every_way(&h, payload, &data);
                // Without a row length (a 1-D variable) the block does not use it.
                let mut frame = Vec::new();
                let h = enc
                    .encode_block_numeric(0, 0, e, (Some(kind), 0), &data, &mut frame)
                    .frame()
                    .unwrap();
                assert!(!matches!(h.filter, Filter::Plane | Filter::Fit), "{ctx}");
            }
        }
        // Nor without pco.
        let data = int_grid(300, 200, 2, 1);
        let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false).unwrap();
        let mut frame = Vec::new();
        let h = enc
            .encode_block_numeric(0, 0, 2, (Some(NumKind::I16), 300), &data, &mut frame)
            .frame()
            .unwrap();
        assert_ne!(h.codec, Codec::Pco);
    }

    #[test]
    fn plane_payloads_of_floats_with_special_values_decode_every_way() {
        let specials = [
            0x7fc0_1234u32,
            0xffa0_0001,
            0x8000_0000,
            1,
            0x7f80_0000,
            0xff80_0000,
        ];
        let vals: Vec<u32> = (0..5000u32)
            .map(|i| match i % 53 {
                k @ 0..=5 => specials[k as usize],
                _ => (280.0f32 + 10.0 * (0.05 * (i % 70) as f32).sin() + 0.01 * (i / 70) as f32)
                    .to_bits(),
            })
            .collect();
        let f32s: Vec<u8> = vals.iter().flat_map(|x| x.to_be_bytes()).collect();
        let f64s: Vec<u8> = vals
            .iter()
            .flat_map(|&x| (f64::from(f32::from_bits(x)) * -3.0).to_be_bytes())
            .collect();
        for (kind, data) in [(NumKind::F32, f32s), (NumKind::F64, f64s)] {
            for row in [1, 69, 70, 5000, 9999] {
                let payload = plane_payload(&data, kind, row).unwrap();
                assert_eq!(payload[4], 1, "map 1 for floats");
                let h = FrameHeader {
                    stored_len: payload.len() as u32,
                    decoded_len: data.len() as u32,
                    stream: 0,
                    block: 0,
                    codec: Codec::Pco,
                    filter: Filter::Plane,
                    esize: kind.esize() as u16,
                    payload_crc: crc(&payload),
                };
                decodes_every_way(&h, &payload, &data);
            }
        }
    }

    /// The worked example of design/FORMAT.md as a frame, and frames a reader refuses.
    #[test]
    fn a_plane_frame_decodes_and_bad_ones_are_refused() {
        let data: Vec<u8> = [10i16, 12, 15, 11, 14, -4, 0]
            .iter()
            .flat_map(|x| x.to_be_bytes())
            .collect();
        let p = super::super::plane::Params {
            row: 3,
            float: false,
            pred: super::super::plane::PREDICTORS[0],
        };
        let mut payload = p.encode().to_vec();
        let residuals = [0, 20, 0, 4, 0, 6, 0, 7, 0, 4, 0, 39, 0, 4];
        assert!(super::super::pco::compress(
            NumKind::U16,
            &residuals,
            8,
            &mut payload
        ));
        // The pco file: magic, standalone version 3, number type u16 (7).
        assert_eq!(&payload[9..15], &[0x70, 0x63, 0x6f, 0x21, 0x03, 0x07]);
        let mk = |payload: &[u8], codec: Codec, esize: u16| FrameHeader {
            stored_len: payload.len() as u32,
            decoded_len: 14,
            stream: 0,
            block: 0,
            codec,
            filter: Filter::Plane,
            esize,
            payload_crc: crc(payload),
        };
        decodes_every_way(&mk(&payload, Codec::Pco, 2), &payload, &data);
        let with = |at: usize, v: u8| {
            let mut b = payload.clone();
            b[at] = v;
            b
        };
        let mut signed = p.encode().to_vec();
        assert!(super::super::pco::compress(
            NumKind::I16,
            &residuals,
            8,
            &mut signed
        ));
        let cases = [
            (
                Codec::Zstd,
                2,
                payload.clone(),
                "plane filter with codec zstd",
            ),
            (
                Codec::None,
                2,
                payload.clone(),
                "plane filter with codec none",
            ),
            (
                Codec::Pco,
                1,
                payload.clone(),
                "plane filter with element size 1",
            ),
            (Codec::Pco, 2, payload[..8].to_vec(), "no 9-byte prefix"),
            (Codec::Pco, 2, with(3, 0), "plane row length 0"),
            (Codec::Pco, 2, with(4, 2), "plane map byte 2"),
            (Codec::Pco, 2, with(8, 7), "plane shift 7"),
            (Codec::Pco, 2, signed, "number type 8 for plane residuals"),
            (Codec::Pco, 4, payload.clone(), "pco: "),
        ];
        let mut scratch = DecodeScratch::default();
        for (codec, esize, p, want) in cases {
            let h = mk(&p, codec, esize);
            let e = decode_payload(&h, &p, &mut Vec::new()).unwrap_err();
            assert!(e.to_string().contains(want), "{e}");
            let mut into = vec![0; 14];
            let e2 = decode_payload_into(&h, &p, &mut into, &mut scratch, true);
            assert_eq!(e2, Err(e));
        }
    }

    #[test]
    fn corrupt_payload_is_reported() {
        let data: Vec<u8> = (0..1000).map(|i| (i / 10) as u8).collect();
        let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false).unwrap();
        let mut frame = Vec::new();
        let h = enc
            .encode_block(0, 0, 1, &data, &mut frame)
            .frame()
            .unwrap();
        let mut payload = frame[FRAME_HEADER_LEN..].to_vec();
        payload[0] ^= 1;
        let mut out = Vec::new();
        assert_eq!(
            decode_payload(&h, &payload, &mut out),
            Err(FrameError::PayloadChecksum)
        );
        // A frame that lies about its decoded length, with a matching CRC.
        let mut lying = h;
        lying.decoded_len = 999;
        let e = decode_payload(&lying, &frame[FRAME_HEADER_LEN..], &mut out).unwrap_err();
        assert!(
            matches!(
                e,
                FrameError::Zstd(_) | FrameError::DecodedLength { decoded: 999, .. }
            ),
            "{e}"
        );
    }

    /// The zstd level a frame was compressed at, told by recompressing its filtered block at
    /// `levels` and comparing bytes (zstd output is deterministic for a level).
    fn level_of(frame: &[u8], data: &[u8], esize: usize, levels: &[i32]) -> Option<i32> {
        let h = FrameHeader::decode(frame).unwrap();
        assert_eq!(h.codec, Codec::Zstd);
        let mut f = Vec::new();
        apply_filter(h.filter, data, esize, &mut f);
        let payload = &frame[FRAME_HEADER_LEN..];
        levels
            .iter()
            .copied()
            .find(|&l| zstd::bulk::compress(&f, l).unwrap() == payload)
    }

    #[test]
    fn fast_blocks_use_level_1_only_where_level_3_does_not_pay() {
        // Noise in the low bytes of floats: level 3 gains nothing over level 1.
        let mut rnd = xorshift(0x9E37_79B9_7F4A_7C15);
        let noisy: Vec<u8> = (0..65536)
            .flat_map(|i| {
                (20.0 + (i as f32 * 0.001).sin() + (rnd() % 1000) as f32 * 1e-4).to_be_bytes()
            })
            .collect();
        // 5-byte station codes drawn from 2000, in random order: level 3 matches 5 bytes,
        // level 1 needs 6, so level 3 pays.
        let stations: Vec<[u8; 5]> = (0..2000)
            .map(|_| rnd().to_le_bytes()[..5].try_into().unwrap())
            .collect();
        let records: Vec<u8> = (0..40000)
            .flat_map(|_| stations[(rnd() % 2000) as usize])
            .collect();
        for (data, esize, fast_level) in [(&noisy, 4, 1), (&records, 1, 3)] {
            let mut frame = Vec::new();
            let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false)
                .unwrap()
                .fast_blocks(true)
                .unwrap();
            enc.encode_block(0, 0, esize, data, &mut frame);
            assert_eq!(level_of(&frame, data, esize, &[1, 3]), Some(fast_level));
            // Without fast blocks, or with a fixed filter, the level is the encoder's.
            frame.clear();
            let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false).unwrap();
            enc.encode_block(0, 0, esize, data, &mut frame);
            assert_eq!(level_of(&frame, data, esize, &[1, 3]), Some(3));
            frame.clear();
            let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Fixed(Filter::Shuffle), false)
                .unwrap()
                .fast_blocks(true)
                .unwrap();
            enc.encode_block(0, 0, esize, data, &mut frame);
            assert_eq!(level_of(&frame, data, esize, &[1, 3]), Some(3));
        }
    }

    /// xorshift64 values from `seed`.
    fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    #[test]
    fn repeat_set_finds_exactly_the_repeats_a_hash_set_finds() {
        let mut rnd = xorshift(0x2545_f491_4f6c_dd1d);
        // Few distinct values (many repeats), the extremes among them.
        let mut values: Vec<u64> = (0..50_000).map(|_| rnd() % 20_000).collect();
        values.extend([
            0,
            u64::MAX,
            u64::MAX - 1,
            0,
            u64::MAX,
            u64::MAX - 1,
            1 << 63,
        ]);
        let mut set = RepeatSet::with_capacity(values.len());
        let mut truth = std::collections::HashSet::new();
        for v in values {
            assert_eq!(set.insert(v), truth.insert(v), "{v}");
        }
    }

    #[test]
    fn far_repeats_are_repeats_the_sample_does_not_show() {
        let mut rnd = xorshift(0x9e37_79b9_7f4a_7c15);
        let pool: Vec<u64> = (0..40_000).map(|_| rnd()).collect();
        let n = LZMA_SAMPLE;
        // The pool in order (the sample sees no repeat), then picks from it: 60 % repeats.
        let far: Vec<u8> = pool
            .iter()
            .copied()
            .chain((0..60_000).map(|_| pool[(rnd() % 40_000) as usize]))
            .flat_map(u64::to_be_bytes)
            .collect();
        assert!(far_repeats(repeat_shares(&far, n, 8)));
        // 4-byte floats are judged in pairs: repeated pairs count, lone repeated values do
        // not (each value of a pool of 4-byte values repeated, never beside the same one);
        // 4-byte integers one by one; 2-byte values are not judged.
        let unit = |e, k| repeat_unit(e, Some(k)).unwrap();
        assert!(far_repeats(repeat_shares(&far, n, unit(4, NumKind::F32))));
        let lone4: Vec<u8> = pool
            .iter()
            .map(|&v| v as u32)
            .chain((0..120_000).map(|_| pool[(rnd() % 40_000) as usize] as u32))
            .flat_map(u32::to_be_bytes)
            .collect();
        assert!(!far_repeats(repeat_shares(
            &lone4,
            n,
            unit(4, NumKind::F32)
        )));
        assert_eq!(repeat_unit(4, None), Some(8));
        assert!(far_repeats(repeat_shares(&lone4, n, unit(4, NumKind::I32))));
        assert_eq!(repeat_unit(2, Some(NumKind::I16)), None);
        assert!(!far_repeats(repeat_shares(&far, n, 2)));
        // Runs of one value (fill values) after distinct values: not far repeats.
        let runs: Vec<u8> = pool
            .iter()
            .copied()
            .chain(std::iter::repeat_n(pool[7], 60_000))
            .flat_map(u64::to_be_bytes)
            .collect();
        assert!(!far_repeats(repeat_shares(&runs, n, 8)));
        // Every value twice in a row: as many repeats in the sample as in the block.
        let near: Vec<u8> = pool
            .iter()
            .flat_map(|&v| [v, v])
            .flat_map(u64::to_be_bytes)
            .collect();
        assert!(!far_repeats(repeat_shares(&near, n, 8)));
        // No repeats at all, and a block too short to have a sample.
        let unique: Vec<u8> = pool.iter().copied().flat_map(u64::to_be_bytes).collect();
        assert!(!far_repeats(repeat_shares(&unique, n, 8)));
        assert!(!far_repeats(repeat_shares(&far[..2 * n - 8], n, 8)));
    }

    #[test]
    fn max_tries_lzma_on_blocks_whose_values_repeat_beyond_the_sample() {
        // Random bits (no filter helps), the first 48,000 values distinct (more than the
        // sample's 16,384), then 150,000 picks among them: LZMA codes each repeat as a
        // match, several times smaller than zstd's.
        let mut rnd = xorshift(0x0123_4567_89ab_cdef);
        let pool: Vec<u64> = (0..48_000).map(|_| rnd()).collect();
        let data: Vec<u8> = pool
            .iter()
            .copied()
            .chain((0..150_000).map(|_| pool[(rnd() % 48_000) as usize]))
            .flat_map(u64::to_be_bytes)
            .collect();
        let mut enc = Encoder::new(Codec::Zstd, 19, FilterMode::Auto, true).unwrap();
        let mut frame = Vec::new();
        enc.encode_block(0, 0, 8, &data, &mut frame);
        let h = FrameHeader::decode(&frame[..FRAME_HEADER_LEN]).unwrap();
        // Random picks: the references are as random as the matches' distances; either form.
        assert!(
            h.codec == Codec::Lzma && matches!(h.filter, Filter::None | Filter::Refs),
            "{h:?}"
        );
        let mut back = Vec::new();
        decode_payload(&h, &frame[FRAME_HEADER_LEN..], &mut back).unwrap();
        assert!(back == data);
    }

    /// The vertex coordinates of a triangulated grid (random bits a vertex), its cells in rows
    /// of quads, the even rows first, then the odd ones: each vertex recurs in the cells next to
    /// it and again half the block away.
    fn mesh_vertices(w: usize, h: usize) -> Vec<u8> {
        let mut rnd = xorshift(0x5eed_1234_abcd_0001);
        let lon: Vec<u64> = (0..w * h).map(|_| rnd()).collect();
        let mut out = Vec::new();
        for parity in 0..2 {
            for r in (parity..h - 1).step_by(2) {
                for c in 0..w - 1 {
                    let (a, b) = (r * w + c, (r + 1) * w + c);
                    for v in [a, a + 1, b, a + 1, b + 1, b] {
                        out.extend_from_slice(&lon[v].to_be_bytes());
                    }
                }
            }
        }
        out
    }

    #[test]
    fn max_uses_refs_where_it_beats_plain_lzma() {
        // 1.6 MiB of far and near repeats: refs with lzma, smaller than lzma alone.
        let data = mesh_vertices(200, 180);
        let mut enc = Encoder::new(Codec::Zstd, 19, FilterMode::Auto, true).unwrap();
        let mut frame = Vec::new();
        let h = enc
            .encode_block(0, 0, 8, &data, &mut frame)
            .frame()
            .unwrap();
        assert_eq!((h.codec, h.filter), (Codec::Lzma, Filter::Refs));
        let (mut f, mut plain) = (Vec::new(), Vec::new());
        assert!(lzma_payload(
            Filter::None,
            &data,
            8,
            &mut f,
            usize::MAX,
            &mut plain
        ));
        assert!(
            (h.stored_len as usize) < plain.len(),
            "{h:?} {}",
            plain.len()
        );
        let payload = &frame[FRAME_HEADER_LEN..];
        let mut back = Vec::new();
        decode_payload(&h, payload, &mut back).unwrap();
        assert!(back == data);
        // Straight into a buffer, big-endian and native.
        let mut out = vec![0u8; data.len()];
        let mut scratch = DecodeScratch::default();
        decode_payload_into(&h, payload, &mut out, &mut scratch, false).unwrap();
        assert!(out == data);
        decode_payload_into(&h, payload, &mut out, &mut scratch, true).unwrap();
        assert!(out
            .chunks_exact(8)
            .zip(data.chunks_exact(8))
            .all(|(a, b)| u64::from_ne_bytes(a.try_into().unwrap())
                == u64::from_be_bytes(b.try_into().unwrap())));
        // The default preset never writes refs.
        let mut fast = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false).unwrap();
        let h = fast
            .encode_block(0, 0, 8, &data, &mut frame)
            .frame()
            .unwrap();
        assert_ne!(h.filter, Filter::Refs);
    }

    #[test]
    fn hostile_refs_frames_are_refused() {
        // The ints 5, 7, 5, 5, 9, 7 of design/FORMAT.md's example.
        let data: Vec<u8> = [5u32, 7, 5, 5, 9, 7]
            .iter()
            .flat_map(|x| x.to_be_bytes())
            .collect();
        let mut filtered = Vec::new();
        assert_eq!(super::super::refs::apply(&data, 4, &mut filtered), Some(3));
        let mk = |payload: &[u8], codec: Codec, esize: u16, decoded: u32| FrameHeader {
            stored_len: payload.len() as u32,
            decoded_len: decoded,
            stream: 0,
            block: 0,
            codec,
            filter: Filter::Refs,
            esize,
            payload_crc: crc(payload),
        };
        let decode = |payload: &[u8], codec: Codec, esize: u16, decoded: u32| {
            let h = mk(payload, codec, esize, decoded);
            let mut out = vec![1, 2];
            let r = decode_payload(&h, payload, &mut out);
            assert!(r.is_ok() || out.is_empty(), "{r:?}");
            let mut into = vec![0u8; decoded as usize];
            let r2 =
                decode_payload_into(&h, payload, &mut into, &mut DecodeScratch::default(), false);
            assert_eq!(r.is_ok(), r2.is_ok(), "{r:?} {r2:?}");
            r.map(|_| out)
        };
        // Codec none (only hand-made: 40 bytes for a block of 24), and lzma.
        let mut raw = 3u32.to_be_bytes().to_vec();
        raw.extend_from_slice(&filtered);
        assert_eq!(decode(&raw, Codec::None, 4, 24).unwrap(), data);
        let mut z = Vec::new();
        let mut f = Vec::new();
        assert!(lzma_payload(
            Filter::Refs,
            &data,
            4,
            &mut f,
            usize::MAX,
            &mut z
        ));
        assert_eq!(decode(&z, Codec::Lzma, 4, 24).unwrap(), data);
        // No entry count; an element size or a codec refs does not go with.
        assert!(matches!(
            decode(&raw[..3], Codec::None, 4, 24),
            Err(FrameError::RefsNoCount { .. })
        ));
        assert!(matches!(
            decode(&raw, Codec::None, 2, 24),
            Err(FrameError::RefsElementSize { esize: 2 })
        ));
        for codec in [Codec::Pco, Codec::Constant] {
            assert!(matches!(
                decode(&raw, codec, 4, 24),
                Err(FrameError::RefsCodec { .. })
            ));
        }
        // Not whole elements.
        assert!(matches!(
            decode(&raw, Codec::None, 4, 22),
            Err(FrameError::FilterElementSize { .. })
        ));
        // More entries than elements (nothing allocated for it), one more or one fewer.
        let mut bad = raw.clone();
        bad[..4].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(
            decode(&bad, Codec::None, 4, 24),
            Err(FrameError::Refs(RefsError::Entries { .. }))
        ));
        for d in [2u32, 4] {
            bad[..4].copy_from_slice(&d.to_be_bytes());
            assert!(matches!(
                decode(&bad, Codec::None, 4, 24),
                Err(FrameError::RawLength { .. })
            ));
            let mut z2 = d.to_be_bytes().to_vec();
            z2.extend_from_slice(&z[4..]);
            assert!(matches!(
                decode(&z2, Codec::Lzma, 4, 24),
                Err(FrameError::Lzma(_))
            ));
        }
        // A reference past the table's start (the third, last bytes at 3 n + 2 = 20).
        let mut bad = raw.clone();
        bad[4 + 20] = 3;
        assert!(matches!(
            decode(&bad, Codec::None, 4, 24),
            Err(FrameError::Refs(RefsError::Reference {
                element: 2,
                reference: 3,
                entries: 2
            }))
        ));
        // The lzma stream of other filtered bytes: it decodes, and refs refuses them.
        let mut wrong = filtered.clone();
        wrong[3 * 6 + 5] = 0;
        let mut z3 = 3u32.to_be_bytes().to_vec();
        assert!(crate::format::lzma::compress(
            &wrong,
            6,
            usize::MAX,
            &mut z3
        ));
        assert!(matches!(
            decode(&z3, Codec::Lzma, 4, 24),
            Err(FrameError::Refs(RefsError::TableShort { entries: 3 }))
        ));
    }
}
