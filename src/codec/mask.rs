//! The `mask` filter (id 8): the elements of a block equal to one value (its fill value: land in
//! an ocean field, missing data) set apart, so that codec pco codes the other numbers alone
//! (design/FORMAT.md specifies it byte for byte).
//!
//! A block of n elements of e = 2, 4 or 8 bytes (big-endian) becomes a prefix — the fill
//! element (e bytes, as stored), the length L of the mask (4 bytes, big-endian) and the mask: a
//! zstd frame of the bitmap of ⌈n / 8⌉ bytes whose bit 7 − (i mod 8) of byte ⌊i / 8⌋ is 1 when
//! element i is the fill element — followed by a pco file of the m elements that are not, in
//! their order. Fill values cost pco dearly where they sit among the data: they widen its bins,
//! break its deltas at every coastline and hide a decimal multiplier; the bitmap of a land mask
//! costs zstd little.

use super::block::{front_esize, Coded, Form};
use super::error::MaskError;
use super::front::{FrontEncode, Numbers};
use super::pcodec::pco_thorough;
use super::space::{KeptScratch, Scratch};
use crate::codec::error::FrameError;
use crate::format::FrameHeader;

/// Whether the filter is defined for elements of `esize` bytes (2, 4 or 8).
pub(crate) fn supports(esize: usize) -> bool {
    matches!(esize, 2 | 4 | 8)
}

/// The writer tries the filter on a block when its fill candidate (see [`fill_of`]) is at least
/// 1 in this many of its elements.
pub(crate) const MIN_SHARE: usize = 20;

/// The zstd level of the mask.
const LEVEL: i32 = 3;

/// An element's big-endian bytes (1 to 8) as an unsigned number: how the filter holds a fill
/// value.
#[inline]
pub(crate) fn element(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |w, &x| (w << 8) | u64::from(x))
}

/// Element `i` of `data` (elements of `E` bytes) as [`element`] reads it.
#[inline]
fn word<const E: usize>(data: &[u8], i: usize) -> u64 {
    element(&data[i * E..i * E + E])
}

/// The block's fill candidate, as an unsigned number of `esize` bytes (big-endian): the value
/// that most runs of equal elements hold (a majority vote among the elements equal to the one
/// before them, in windows spread over the block: [`VOTE_WINDOWS`]), when it is at least 1 in
/// [`MIN_SHARE`] of the elements and not all of them.
/// `None` for another element size, or a block without such a value.
pub(crate) fn fill_of(data: &[u8], esize: usize) -> Option<u64> {
    match esize {
        2 => fill_of_n::<2>(data),
        4 => fill_of_n::<4>(data),
        8 => fill_of_n::<8>(data),
        _ => None,
    }
}

fn fill_of_n<const E: usize>(data: &[u8]) -> Option<u64> {
    let n = data.len() / E;
    let (mut cand, mut votes) = (0u64, 0usize);
    for (from, to) in vote_windows(n) {
        let mut prev = word::<E>(data, from);
        for i in from + 1..to {
            let x = word::<E>(data, i);
            if x == prev {
                if votes == 0 {
                    cand = x;
                    votes = 1;
                } else if x == cand {
                    votes += 1;
                } else {
                    votes -= 1;
                }
            }
            prev = x;
        }
    }
    if votes == 0 {
        return None;
    }
    let mut want = [0u8; E];
    want.copy_from_slice(&cand.to_be_bytes()[8 - E..]);
    // Whole arrays compared (one word each), so that the count is vectorized.
    let count = data
        .as_chunks::<E>()
        .0
        .iter()
        .filter(|&x| *x == want)
        .count();
    (count * MIN_SHARE >= n && count < n).then_some(cand)
}

/// The vote of [`fill_of`] runs over this many windows of [`VOTE_WINDOW`] elements spread
/// evenly over a block (the whole block when it is not longer): a sixteenth of a block of
/// 2^18 elements, where a fill value's share of at least 1 in [`MIN_SHARE`] still holds
/// several windows. The vote over the whole block took 7 % of the default preset's CPU on
/// topo.nc.
const VOTE_WINDOWS: usize = 64;

/// The length (elements) of the windows of [`VOTE_WINDOWS`].
const VOTE_WINDOW: usize = 256;

/// The element ranges `[from, to)` the vote of [`fill_of`] runs over, for a block of `n`.
fn vote_windows(n: usize) -> impl Iterator<Item = (usize, usize)> {
    let whole = n <= VOTE_WINDOWS * VOTE_WINDOW;
    let (count, len) = if whole {
        (1, n)
    } else {
        (VOTE_WINDOWS, VOTE_WINDOW)
    };
    (0..count).filter_map(move |k| {
        let from = if count > 1 {
            k * (n - len) / (count - 1)
        } else {
            0
        };
        (len > 0).then_some((from, from + len))
    })
}

/// Splits `data` (elements of `esize` bytes, 2, 4 or 8) at `fill`: writes the prefix (the fill
/// element, the mask's length and the mask) into `prefix` and the elements that are not `fill`
/// into `rest` (replacing both). Returns what it split ([`Split`]); `None` when zstd cannot
/// compress the bitmap (then there is no prefix to write).
pub(crate) fn apply(
    data: &[u8],
    esize: usize,
    fill: u64,
    prefix: &mut Vec<u8>,
    rest: &mut Vec<u8>,
) -> Option<Split> {
    let e = esize.clamp(1, 8);
    let n = data.len() / e;
    let mut bits = vec![0u8; n.div_ceil(8)];
    rest.clear();
    rest.resize(n * e, 0);
    let split = match e {
        2 => split_n::<2>(data, fill, &mut bits, rest),
        4 => split_n::<4>(data, fill, &mut bits, rest),
        8 => split_n::<8>(data, fill, &mut bits, rest),
        _ => split_n::<1>(data, fill, &mut bits, rest),
    };
    rest.truncate(split.others * e);
    let mask = zstd::bulk::compress(&bits, LEVEL).ok()?;
    prefix.clear();
    prefix.extend_from_slice(&fill.to_be_bytes()[8 - e..]);
    prefix.extend_from_slice(&u32::try_from(mask.len()).ok()?.to_be_bytes());
    prefix.extend_from_slice(&mask);
    Some(split)
}

/// As [`apply`], the prefix alone (the fill element, the mask's length and the mask) into
/// `prefix` (appended), for a filter that codes the other elements itself (`fit`).
pub(crate) fn section(data: &[u8], esize: usize, fill: u64, prefix: &mut Vec<u8>) -> Option<Split> {
    let e = esize.clamp(1, 8);
    let n = data.len() / e;
    let mut bits = vec![0u8; n.div_ceil(8)];
    let ones = bitmap(data, e, fill, &mut bits);
    // A run starts at a set bit whose element before is not set.
    let mut last = 0u8;
    let runs = bits
        .iter()
        .map(|&b| {
            let starts = b & !((b >> 1) | (last << 7));
            last = b & 1;
            starts.count_ones() as usize
        })
        .sum();
    let mask = zstd::bulk::compress(&bits, LEVEL).ok()?;
    prefix.extend_from_slice(&fill.to_be_bytes()[8 - e..]);
    prefix.extend_from_slice(&u32::try_from(mask.len()).ok()?.to_be_bytes());
    prefix.extend_from_slice(&mask);
    Some(Split {
        others: n - ones,
        runs,
    })
}

/// Sets the bits of the elements of `data` (of `e` bytes: 1, 2, 4 or 8) equal to `fill`,
/// eight elements to a byte of `bits`; returns how many it set.
fn bitmap(data: &[u8], e: usize, fill: u64, bits: &mut [u8]) -> usize {
    #[cfg(target_arch = "x86_64")]
    if super::word::has_avx2() {
        // SAFETY: this CPU has the instructions `bitmap_avx2` is compiled for.
        return unsafe { bitmap_avx2(data, e, fill, bits) };
    }
    bitmap_any(data, e, fill, bits)
}

/// [`bitmap`] compiled for CPUs with AVX2, FMA and BMI2 (eight comparisons a vector
/// instruction). Same results.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi2,fma")]
fn bitmap_avx2(data: &[u8], e: usize, fill: u64, bits: &mut [u8]) -> usize {
    bitmap_any(data, e, fill, bits)
}

/// [`bitmap`] for any CPU (inlined into the versions for particular ones).
#[inline(always)]
fn bitmap_any(data: &[u8], e: usize, fill: u64, bits: &mut [u8]) -> usize {
    match e {
        2 => bitmap_n::<2>(data, fill, bits),
        4 => bitmap_n::<4>(data, fill, bits),
        8 => bitmap_n::<8>(data, fill, bits),
        _ => bitmap_n::<1>(data, fill, bits),
    }
}

/// [`bitmap`] for elements of `E` bytes.
#[inline(always)]
fn bitmap_n<const E: usize>(data: &[u8], fill: u64, bits: &mut [u8]) -> usize {
    let f: [u8; E] = std::array::from_fn(|k| fill.to_be_bytes()[8 - E + k]);
    let mut ones = 0;
    for (byte, eight) in bits
        .iter_mut()
        .zip(data[..data.len() / E * E].chunks(8 * E))
    {
        let mut b = 0u8;
        for (k, x) in eight.chunks_exact(E).enumerate() {
            b |= u8::from(x == f) << (7 - k);
        }
        *byte = b;
        ones += b.count_ones() as usize;
    }
    ones
}

/// What [`apply`] made of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Split {
    /// How many elements are not the fill value (those `rest` holds).
    pub(crate) others: usize,
    /// How many runs of fill values the block holds (where one starts after another element
    /// or at the block's start).
    pub(crate) runs: usize,
}

/// Sets the bits of the elements of `data` (of `E` bytes) equal to `fill` and copies the others
/// to the start of `rest` (as long as `data`); returns how many it copied and how many runs of
/// `fill` it found.
fn split_n<const E: usize>(data: &[u8], fill: u64, bits: &mut [u8], rest: &mut [u8]) -> Split {
    let (mut m, mut runs, mut in_run) = (0, 0, false);
    for (i, x) in data.chunks_exact(E).enumerate() {
        let is_fill = element(x) == fill;
        if is_fill {
            bits[i / 8] |= 0x80 >> (i % 8);
        } else {
            rest[m * E..m * E + E].copy_from_slice(x);
            m += 1;
        }
        runs += usize::from(is_fill && !in_run);
        in_run = is_fill;
    }
    Split { others: m, runs }
}

/// What a `mask` frame's prefix says, for a block of `n` elements of `esize` bytes (2, 4 or 8):
/// the fill element (as an unsigned number), how many elements are not it (m, at least 1), and
/// the payload after the prefix (the pco file). The bitmap is left in `bits`.
///
/// # Errors
///
/// [`MaskError::Prefix`] when the payload is shorter than the fill element and the mask's
/// length, [`MaskError::Length`] when the mask runs past the payload,
/// [`MaskError::Bits`] when it is not a zstd frame of ⌈n / 8⌉ bytes or sets a bit past
/// element n − 1, [`MaskError::AllFill`] when every element is the fill.
pub(crate) fn decode<'p>(
    payload: &'p [u8],
    esize: usize,
    n: usize,
    bits: &mut Vec<u8>,
) -> Result<(u64, usize, &'p [u8]), MaskError> {
    let e = esize.clamp(1, 8);
    if payload.len() < e + 4 {
        return Err(MaskError::Prefix {
            stored: payload.len(),
        });
    }
    let fill = element(&payload[..e]);
    let len = u32::from_be_bytes([payload[e], payload[e + 1], payload[e + 2], payload[e + 3]]);
    let after = &payload[e + 4..];
    let Some(mask) = after.get(..len as usize) else {
        return Err(MaskError::Length {
            len,
            stored: payload.len(),
        });
    };
    let want = n.div_ceil(8);
    // At most an eighth of the block's decoded length, which the layout bounds.
    bits.clear();
    bits.reserve(want);
    zstd::stream::copy_decode(
        mask,
        LimitedWriter {
            out: bits,
            max: want,
        },
    )
    .map_err(|e| MaskError::Bits(e.to_string()))?;
    if bits.len() != want {
        return Err(MaskError::Bits(format!(
            "{} bytes of bitmap for {n} elements (want {want})",
            bits.len()
        )));
    }
    if !n.is_multiple_of(8) && bits[want - 1] & (0xFF >> (n % 8)) != 0 {
        return Err(MaskError::Bits(format!("bits set past element {}", n - 1)));
    }
    let ones: usize = bits.iter().map(|b| b.count_ones() as usize).sum();
    if ones >= n {
        return Err(MaskError::AllFill { n });
    }
    Ok((fill, n - ones, &after[len as usize..]))
}

/// A writer into a vector that refuses to grow it past `max` bytes.
struct LimitedWriter<'a> {
    out: &'a mut Vec<u8>,
    max: usize,
}

impl std::io::Write for LimitedWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.out.len() + buf.len() > self.max {
            return Err(std::io::Error::other(format!(
                "bitmap longer than {} bytes",
                self.max
            )));
        }
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Rebuilds a block into `out` (n elements of `esize` bytes) from the elements that are not
/// the fill (`rest`, in order, at least as many as the bitmap's zero bits), the bitmap and the
/// fill element; `rest` and `out` are big-endian, or both in native order when `native`.
pub(crate) fn undo_into(
    rest: &[u8],
    bits: &[u8],
    fill: u64,
    esize: usize,
    out: &mut [u8],
    native: bool,
) {
    let e = esize.clamp(1, 8);
    let be = fill.to_be_bytes();
    let mut f = [0u8; 8];
    f[..e].copy_from_slice(&be[8 - e..]);
    if native && cfg!(target_endian = "little") {
        f[..e].reverse();
    }
    match e {
        2 => undo_n::<2>(rest, bits, &f, out),
        4 => undo_n::<4>(rest, bits, &f, out),
        8 => undo_n::<8>(rest, bits, &f, out),
        _ => undo_n::<1>(rest, bits, &f, out),
    }
}

/// [`undo_into`] for elements of `E` bytes, eight at a time: a bitmap byte of no fill copies
/// eight elements at once, one of all fill writes eight fills.
fn undo_n<const E: usize>(rest: &[u8], bits: &[u8], fill: &[u8; 8], out: &mut [u8]) {
    let fill: [u8; E] = std::array::from_fn(|k| fill[k]);
    let mut r = 0;
    let (whole, tail) = out.split_at_mut(out.len() / (8 * E) * (8 * E));
    for (eight, &byte) in whole.chunks_exact_mut(8 * E).zip(bits) {
        match byte {
            0 => {
                let Some(src) = rest.get(r..r + 8 * E) else {
                    return;
                };
                eight.copy_from_slice(src);
                r += 8 * E;
            }
            0xFF => eight
                .chunks_exact_mut(E)
                .for_each(|x| x.copy_from_slice(&fill)),
            _ => {
                for (k, x) in eight.chunks_exact_mut(E).enumerate() {
                    if byte & (0x80 >> k) != 0 {
                        x.copy_from_slice(&fill);
                    } else if let Some(src) = rest.get(r..r + E) {
                        x.copy_from_slice(src);
                        r += E;
                    }
                }
            }
        }
    }
    let first = whole.len() / E;
    for (k, x) in tail.chunks_exact_mut(E).enumerate() {
        let i = first + k;
        if bits.get(i / 8).is_some_and(|b| b & (0x80 >> (i % 8)) != 0) {
            x.copy_from_slice(&fill);
        } else if let Some(src) = rest.get(r..r + E) {
            x.copy_from_slice(src);
            r += E;
        }
    }
}

/// Filter `mask`: a bitmap of the fill elements, and the others.
pub(crate) struct Mask;

impl super::block::NumericFront for Mask {
    fn apply(&self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        apply_mask_whole(data, esize, out);
    }
    fn undo(&self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        undo_mask_whole(data, esize, out);
    }
    /// Mask is defined with codec pco only.
    fn wrong_codec(&self, codec: crate::format::Codec) -> Option<FrameError> {
        Some(MaskError::Codec { codec }.into())
    }
    /// Checks the element size and the prefix, the fill element and the bitmap kept; pco
    /// decodes exactly as many numbers as the bitmap leaves.
    fn open<'p>(
        &self,
        h: &FrameHeader,
        payload: &'p [u8],
        kept: &mut Scratch,
    ) -> Result<Coded<'p>, FrameError> {
        let esize = front_esize(h, supports, |esize| MaskError::ElementSize { esize }.into())?;
        let n = h.decoded_len as usize / esize;
        let k = kept.get::<Bitmap>();
        let (fill, m, pco) = decode(payload, esize, n, &mut k.bits)?;
        k.fill = fill;
        // At most the block's decoded length, which the layout bounds.
        Ok(Coded {
            payload: pco,
            len: m * esize,
            form: Form::Numbers,
        })
    }
    /// Puts pco's numbers and the fill element in place.
    fn close(
        &self,
        h: &FrameHeader,
        coded: &mut [u8],
        out: &mut [u8],
        native: bool,
        kept: &mut Scratch,
    ) -> Result<(), FrameError> {
        let k = kept.get::<Bitmap>();
        undo_into(coded, &k.bits, k.fill, usize::from(h.esize), out, native);
        Ok(())
    }
}

/// The fill element and bitmap of the `mask` frame being decoded, kept from its prefix to its
/// undoing (the bitmap's buffer reused from frame to frame).
#[derive(Default)]
struct Bitmap {
    fill: u64,
    bits: Vec<u8>,
}

impl KeptScratch for Bitmap {
    #[cfg(test)]
    fn held(&self) -> usize {
        self.bits.capacity()
    }
}

/// The `max` preset's trial: the block's fill value ([`fill_of`]) set apart, pco on the other
/// elements (in the block's float mode where pco finds one: fill values hide it). Its buffers
/// are the call's own: kept between blocks, they would add a block's worth to every encoder
/// while the other front-ends run.
impl FrontEncode for Mask {
    fn encode(&self, block: &Numbers<'_>, _scratch: &mut Scratch, out: &mut Vec<u8>) -> bool {
        let e = block.kind.esize();
        let Some(fill) = fill_of(block.data, e) else {
            return false;
        };
        let (mut rest, mut coded) = (Vec::new(), Vec::new());
        let done = apply(block.data, e, fill, out, &mut rest).is_some()
            && pco_thorough(block.kind, &rest, block.mode, &mut coded)
            && out.len() + coded.len() < block.data.len();
        if done {
            out.append(&mut coded);
        }
        done
    }
}

/// The `mask` filter as [`apply_filter`](super::filter::apply_filter) gives it: byte 1, the element count n (big-endian
/// u32), the prefix (with the block's fill candidate, or its first element) and the other
/// elements as they are; byte 0 and the bytes as they are for an element size other than 2,
/// 4 or 8, a length that is not a whole number of elements, more than `u32::MAX` elements, or
/// elements all equal.
pub(crate) fn apply_mask_whole(data: &[u8], esize: usize, out: &mut Vec<u8>) {
    out.clear();
    let n = data.len() / esize.max(1);
    let fill = fill_of(data, esize).or_else(|| data.get(..esize).map(element));
    let whole = supports(esize) && data.len().is_multiple_of(esize);
    if let (true, Some(fill), Ok(count)) = (whole, fill, u32::try_from(n)) {
        let (mut prefix, mut rest) = (Vec::new(), Vec::new());
        if apply(data, esize, fill, &mut prefix, &mut rest).is_some_and(|s| s.others > 0) {
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
pub(crate) fn undo_mask_whole(data: &[u8], esize: usize, out: &mut Vec<u8>) {
    out.clear();
    match data.split_first() {
        Some((0, rest)) => out.extend_from_slice(rest),
        Some((1, rest)) => {
            let Some((count, payload)) = rest.split_first_chunk::<4>() else {
                return;
            };
            let n = u32::from_be_bytes(*count) as usize;
            let mut bits = Vec::new();
            let Ok((fill, m, others)) = decode(payload, esize, n, &mut bits) else {
                return;
            };
            if others.len() != m * esize {
                return;
            }
            out.resize(n * esize, 0);
            undo_into(others, &bits, fill, esize, out, false);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bitmap_is_the_same_on_any_cpu() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for e in [1, 2, 4, 8] {
            for n in [0usize, 1, 7, 8, 9, 1000, 4099] {
                let fill = 0x0102_0304_0506_0708u64 >> (64 - 8 * e);
                let data: Vec<u8> = (0..n)
                    .flat_map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let w = if x.is_multiple_of(3) {
                            fill
                        } else {
                            x >> (64 - 8 * e)
                        };
                        w.to_be_bytes()[8 - e..].to_vec()
                    })
                    .collect();
                let mut a = vec![0u8; n.div_ceil(8)];
                let mut b = vec![0u8; n.div_ceil(8)];
                let ones = bitmap(&data, e, fill, &mut a);
                assert_eq!(ones, bitmap_any(&data, e, fill, &mut b));
                assert_eq!(a, b, "e {e} n {n}");
                let want = data
                    .chunks_exact(e)
                    .filter(|c| c == &&fill.to_be_bytes()[8 - e..]);
                assert_eq!(ones, want.count(), "e {e} n {n}");
            }
        }
    }

    fn shorts(v: &[i16]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_be_bytes()).collect()
    }

    #[test]
    fn a_fill_value_in_runs_is_found_and_set_apart() {
        // 7, -1, -1, 9, -1 and so on: -1 is 3 in 5 and makes the runs.
        let data = shorts(&[7, -1, -1, 9, -1, -1, -1, 3]);
        let fill = fill_of(&data, 2).unwrap();
        assert_eq!(fill, 0xFFFF);
        let (mut prefix, mut rest) = (Vec::new(), Vec::new());
        assert_eq!(
            apply(&data, 2, fill, &mut prefix, &mut rest),
            Some(Split { others: 3, runs: 2 })
        );
        assert_eq!(rest, shorts(&[7, 9, 3]));
        assert_eq!(&prefix[..2], &[0xFF, 0xFF]);
        let len = u32::from_be_bytes(prefix[2..6].try_into().unwrap()) as usize;
        assert_eq!(prefix.len(), 6 + len);
        assert_eq!(
            zstd::bulk::decompress(&prefix[6..], 1).unwrap(),
            [0b0110_1110]
        );
        let mut bits = Vec::new();
        let (f, m, after) = decode(&prefix, 2, 8, &mut bits).unwrap();
        assert_eq!((f, m, after.len()), (0xFFFF, 3, 0));
        let mut out = vec![0u8; data.len()];
        undo_into(&rest, &bits, fill, 2, &mut out, false);
        assert_eq!(out, data);
        // Native order: the fill and the rest as native numbers.
        let native_rest: Vec<u8> = [7i16, 9, 3].iter().flat_map(|x| x.to_ne_bytes()).collect();
        undo_into(&native_rest, &bits, fill, 2, &mut out, true);
        let want: Vec<u8> = [7i16, -1, -1, 9, -1, -1, -1, 3]
            .iter()
            .flat_map(|x| x.to_ne_bytes())
            .collect();
        assert_eq!(out, want);
    }

    /// design/FORMAT.md's example, byte for byte.
    #[test]
    fn the_format_s_example() {
        let data = shorts(&[7, -1, -1, 9, -1]);
        let (mut prefix, mut rest) = (Vec::new(), Vec::new());
        assert_eq!(
            apply(&data, 2, 0xFFFF, &mut prefix, &mut rest),
            Some(Split { others: 2, runs: 2 })
        );
        assert_eq!(
            prefix,
            [0xFF, 0xFF, 0, 0, 0, 10, 0x28, 0xB5, 0x2F, 0xFD, 0x20, 0x01, 0x09, 0x00, 0x00, 0x68]
        );
        assert_eq!(rest, [0, 7, 0, 9]);
        let mut bits = Vec::new();
        assert_eq!(
            decode(&prefix, 2, 5, &mut bits).unwrap(),
            (0xFFFF, 2, &[][..])
        );
        assert_eq!(bits, [0x68]);
    }

    #[test]
    fn runs_of_the_fill_value_are_counted() {
        let runs = |v: &[i16]| {
            let (mut prefix, mut rest) = (Vec::new(), Vec::new());
            apply(&shorts(v), 2, 0xFFFF, &mut prefix, &mut rest).map(|s| s.runs)
        };
        assert_eq!(runs(&[-1, -1, -1, 4]), Some(1));
        assert_eq!(runs(&[1, 2, 3]), Some(0));
        assert_eq!(runs(&[-1, 2, -1, 2, -1]), Some(3));
        assert_eq!(runs(&[2, -1, -1, 2, 2, -1, -1]), Some(2));
    }

    #[test]
    fn the_section_alone_is_the_prefix_apply_writes() {
        // Runs across bitmap bytes, a block of 8k + 3 elements, every element size.
        let v: Vec<i16> = (0..8 * 37 + 3)
            .map(|i| {
                if (i / 5) % 3 == 0 || i % 17 == 0 {
                    -1
                } else {
                    i as i16
                }
            })
            .collect();
        for e in [2usize, 4, 8] {
            let data: Vec<u8> = v
                .iter()
                .flat_map(|&x| i64::from(x).to_be_bytes()[8 - e..].to_vec())
                .collect();
            let fill = u64::MAX >> (64 - 8 * e);
            let (mut prefix, mut rest) = (Vec::new(), Vec::new());
            let split = apply(&data, e, fill, &mut prefix, &mut rest);
            let mut alone = vec![9];
            assert_eq!(section(&data, e, fill, &mut alone), split, "{e}");
            assert_eq!(alone[1..], prefix[..], "{e}");
        }
    }

    #[test]
    fn blocks_without_a_frequent_run_value_have_no_fill() {
        // No runs at all; a run value below 1 in 20; every element the same.
        let ramp: Vec<i16> = (0..100).collect();
        assert_eq!(fill_of(&shorts(&ramp), 2), None);
        let mut rare = ramp.clone();
        rare[10] = 5;
        rare[11] = 5;
        assert_eq!(fill_of(&shorts(&rare), 2), None);
        assert_eq!(fill_of(&shorts(&[4; 50]), 2), None);
        assert_eq!(fill_of(&shorts(&[1, 1, 2, 2]), 3), None);
        // Four in a hundred (runs of two) is below 1 in 20; five is not.
        let mut four = ramp.clone();
        for i in [10, 11, 50, 51] {
            four[i] = -9;
        }
        assert_eq!(fill_of(&shorts(&four), 2), None);
        let mut five = four.clone();
        five[80] = -9;
        assert_eq!(fill_of(&shorts(&five), 2), Some(0xFFF7));
    }

    /// In a block longer than the vote's windows, the vote sees a fill value wherever it
    /// sits: one stretch of a twentieth of the block (at its start, middle or end) or short
    /// runs scattered over all of it; the windows stay inside the block and cover it evenly.
    #[test]
    fn the_vote_finds_fill_values_anywhere_in_a_long_block() {
        let n = 1usize << 18;
        let windows: Vec<_> = vote_windows(n).collect();
        assert_eq!(windows.len(), VOTE_WINDOWS);
        assert_eq!(windows[0], (0, VOTE_WINDOW));
        assert_eq!(windows[VOTE_WINDOWS - 1], (n - VOTE_WINDOW, n));
        assert!(windows.windows(2).all(|w| w[0].1 <= w[1].0));
        assert_eq!(vote_windows(100).collect::<Vec<_>>(), [(0, 100)]);
        assert_eq!(vote_windows(0).count(), 0);
        // A ramp of distinct values (no runs), with -9 over a twentieth of it.
        let ramp = |i: usize| (i % 30_000) as i16 + 100;
        for start in [0, n / 2, n - n / 20 - 1] {
            let v: Vec<i16> = (0..n)
                .map(|i| {
                    if (start..=start + n / 20).contains(&i) {
                        -9
                    } else {
                        ramp(i)
                    }
                })
                .collect();
            assert_eq!(fill_of(&shorts(&v), 2), Some(0xFFF7), "{start}");
        }
        // Runs of three in every 40 elements.
        let v: Vec<i16> = (0..n)
            .map(|i| if i % 40 < 3 { -9 } else { ramp(i) })
            .collect();
        assert_eq!(fill_of(&shorts(&v), 2), Some(0xFFF7));
    }

    #[test]
    fn bad_prefixes_are_refused() {
        let mut bits = Vec::new();
        let err = |p: &[u8], n| decode(p, 4, n, &mut Vec::new()).unwrap_err();
        assert!(matches!(err(&[0; 7], 8), MaskError::Prefix { stored: 7 }));
        let mut p = vec![0u8; 4];
        p.extend_from_slice(&100u32.to_be_bytes());
        p.extend_from_slice(&[1, 2, 3]);
        assert!(matches!(err(&p, 8), MaskError::Length { len: 100, .. }));
        let with = |bitmap: &[u8]| {
            let z = zstd::bulk::compress(bitmap, 3).unwrap();
            let mut p = vec![0u8; 4];
            p.extend_from_slice(&(z.len() as u32).to_be_bytes());
            p.extend_from_slice(&z);
            p
        };
        // Not zstd; a bitmap of the wrong length; a bit past the last element; all fill.
        let mut junk = vec![0u8; 4];
        junk.extend_from_slice(&2u32.to_be_bytes());
        junk.extend_from_slice(&[9, 9]);
        assert!(matches!(err(&junk, 8), MaskError::Bits(_)));
        assert!(matches!(err(&with(&[0, 0]), 8), MaskError::Bits(_)));
        assert!(matches!(err(&with(&[0b0000_0100]), 5), MaskError::Bits(_)));
        assert!(matches!(
            err(&with(&[0xF8]), 5),
            MaskError::AllFill { n: 5 }
        ));
        let (f, m, _) = decode(&with(&[0b1010_0000]), 4, 5, &mut bits).unwrap();
        assert_eq!((f, m), (0, 3));
    }
}
