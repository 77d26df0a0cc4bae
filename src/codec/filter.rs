//! A block filter applied to, or undone on, a whole block: the dispatch over [`Filter`], the
//! payload forms of the numeric filters, and the members of shared streams.

#[cfg(any(test, feature = "testing"))]
use super::context;
#[cfg(any(test, feature = "testing"))]
use super::pcodec::pco_sample;
#[cfg(any(test, feature = "testing"))]
use crate::codec::pcodec::NumKind;
use crate::format::Filter;

/// Applies `filter` to `data` (elements of `esize` bytes) into `out`, replacing its contents.
///
/// ```
/// use nc3pack::{testing::{apply_filter, undo_filter}, format::Filter};
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
    super::registry::filter(filter).apply(data, esize, out);
}

/// The payload of a `plane` frame (filter 6, codec pco) for `data`, numbers of `kind` in rows of
/// `row` elements (at least 1; at most the block is used): the 9-byte prefix with the predictor
/// of the writer's four that costs least on `data`, then the pco file of the residuals. `None`
/// when pco cannot compress `data` (empty, or not whole elements).
///
/// ```
/// use nc3pack::{testing::{decode_payload, plane_payload, NumKind}, format::{crc, Codec, Filter, FrameHeader}};
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
#[cfg(any(test, feature = "testing"))]
pub fn plane_payload(data: &[u8], kind: NumKind, row: usize) -> Option<Vec<u8>> {
    let e = kind.esize();
    let n = data.len() / e;
    let row = u32::try_from(row.clamp(1, n.max(1))).unwrap_or(u32::MAX);
    let p = super::plane::choose(data, e, row, kind.is_float());
    let mut f = Vec::new();
    super::plane::apply(data, e, &p, &mut f);
    let mut out = p.encode().to_vec();
    super::pcodec::compress_residuals(kind.unsigned(), &f, super::pcodec::LEVEL, &mut out)
        .then_some(out)
}

/// The payload of a `mask` frame (filter 8, codec pco) for `data`, numbers of `kind`: the prefix
/// for the block's fill value (see the format's filter 8) and the pco file of its other
/// numbers. `None` when the block has no fill value (one at least 1 in 20 of its elements, in
/// runs, and not all of them) or pco cannot compress the others.
///
/// ```
/// use nc3pack::{testing::{decode_payload, mask_payload, NumKind}, format::{crc, Codec, Filter, FrameHeader}};
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
#[cfg(any(test, feature = "testing"))]
pub fn mask_payload(data: &[u8], kind: NumKind) -> Option<Vec<u8>> {
    let e = kind.esize();
    let fill = super::mask::fill_of(data, e)?;
    let (mut out, mut rest) = (Vec::new(), Vec::new());
    super::mask::apply(data, e, fill, &mut out, &mut rest)?;
    let mode = super::pcodec::block_float_mode(kind, &rest);
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
/// use nc3pack::{testing::{decode_payload, fit_payload, NumKind}, format::{crc, Codec, Filter, FrameHeader}};
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
#[cfg(any(test, feature = "testing"))]
pub fn fit_payload(data: &[u8], kind: NumKind, row: usize) -> Option<Vec<u8>> {
    let e = kind.esize();
    if !super::fit::supports(e) || !data.len().is_multiple_of(e) {
        return None;
    }
    let row = row.clamp(2, (data.len() / e).max(2));
    let fill = super::mask::fill_of(data, e);
    let mut out = Vec::new();
    let mut scratch = super::space::Scratch::default();
    super::fit::encode_block(kind, (row, fill), None, data, &mut scratch, &mut out).then_some(out)
}

/// The payload of a `context` frame (codec 6, filter none) for `data`, numbers of `kind` in rows
/// of `row` elements (at least 1; at most the block is used), with the predictor the `max`
/// preset would choose. `None` when the codec cannot encode `data` (not whole elements) or its
/// payload would not be smaller than `data`.
///
/// ```
/// use nc3pack::{testing::{context_payload, decode_payload, NumKind}, format::{crc, Codec, Filter, FrameHeader}};
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
#[cfg(any(test, feature = "testing"))]
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

/// Applies the `lorenzo` filter with rows of `row` elements (at least 1) to `data` (elements of
/// `esize` bytes, 4 or 8; for another size the bytes are copied as they are) into `out`,
/// replacing its contents. The frame payload is the row length as 4 big-endian bytes, then
/// the codec's encoding of `out`.
///
/// ```
/// use nc3pack::testing::{apply_lorenzo, undo_lorenzo};
/// // A 2 x 2 block of floats 1, 2 / 3, 4: predictions 0, 1, 1 and 2 + 3 - 1.
/// let data: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|x| x.to_be_bytes()).collect();
/// let mut f = Vec::new();
/// apply_lorenzo(&data, 4, 2, &mut f);
/// let mut back = vec![0; f.len()];
/// undo_lorenzo(&f, 4, 2, &mut back);
/// assert_eq!(back, data);
/// ```
#[cfg(any(test, feature = "testing"))]
pub fn apply_lorenzo(data: &[u8], esize: usize, row: usize, out: &mut Vec<u8>) {
    super::lorenzo::apply(data, esize, row, out);
}

/// Reverses [`apply_lorenzo`] into `out`, which must be as long as `data` (big-endian
/// elements).
#[cfg(any(test, feature = "testing"))]
pub fn undo_lorenzo(data: &[u8], esize: usize, row: usize, out: &mut [u8]) {
    super::lorenzo::undo_into(data, esize, row, out, false);
}

/// Reverses [`apply_filter`].
pub fn undo_filter(filter: Filter, data: &[u8], esize: usize, out: &mut Vec<u8>) {
    super::registry::filter(filter).undo(data, esize, out);
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
/// nc3pack::testing::member_encode(4, &[0, 0, 0, 5, 0, 0, 0, 6], &mut enc);
/// let mut back = Vec::new();
/// nc3pack::testing::member_decode(4, &enc, &mut back);
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

/// Reverses `member_encode`.
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
#[non_exhaustive]
pub enum FilterMode {
    /// Per block, the filter that compresses best: judged on a 32 KiB sample with zstd level 1,
    /// or (thorough encoders) on the whole block with zstd level 3.
    Auto,
    /// Always this filter.
    Fixed(Filter),
}
