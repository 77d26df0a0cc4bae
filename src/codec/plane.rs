//! The `plane` filter (id 6): a weighted 2-D predictor on the numbers of a block, whose residuals
//! codec pco compresses (design/FORMAT.md specifies it byte for byte).
//!
//! Element i of a block (e = 2, 4 or 8 bytes, big-endian) is read as a signed integer mᵢ of 8e
//! bits: as it is (map 0, integers) or after lorenzo's order map (map 1, IEEE floats). With the
//! row length w and the predictor (wL, wU, wUL, s) the prediction is p₀ = 0, pᵢ = mᵢ₋₁ for
//! 1 ≤ i ≤ w and pᵢ = ⌊(wL·mᵢ₋₁ + wU·mᵢ₋w + wUL·mᵢ₋w₋₁ + h) / 2^s⌋ for i > w (h = 2^(s−1), or 0
//! when s = 0), computed exactly and then wrapped into 8e bits; the residual mᵢ − pᵢ (mod
//! 2^(8e)) is zigzag-encoded and written big-endian as an unsigned number (not shuffled: pco
//! codes numbers). The frame's payload is a 9-byte prefix ([`Params::encode`]) followed by a
//! pco file of those unsigned numbers.

use super::block::{Coded, Form};
use super::error::PlaneError;
use super::front::{FrontEncode, Numbers, Residuals};
use super::pcodec::{compress_residuals_native, NumKind, LEVEL};
use super::space::Scratch;
use crate::codec::error::FrameError;
use crate::format::{Codec, FrameHeader};

/// Bytes of the prefix that starts a `plane` frame's payload: row length (4, big-endian), map,
/// wL, wU, wUL, shift.
pub const PREFIX: usize = 9;

/// The largest shift a `plane` prefix may hold.
pub const MAX_SHIFT: u8 = 6;

/// A predictor's weights of the left, up and up-left neighbours, and its shift.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Predictor {
    /// Weight of the left neighbour.
    pub wl: i8,
    /// Weight of the neighbour one row up.
    pub wu: i8,
    /// Weight of the up-left neighbour.
    pub wul: i8,
    /// The weighted sum (plus half of 2^shift) is divided by 2^shift, rounding down.
    pub shift: u8,
}

const fn pred(wl: i8, wu: i8, wul: i8, shift: u8) -> Predictor {
    Predictor { wl, wu, wul, shift }
}

/// The predictors the writer tries: (3L + 3U − 2UL) / 4, Lorenzo's L + U − UL, (L + U) / 2 and
/// left.
pub const PREDICTORS: [Predictor; 4] = [
    pred(3, 3, -2, 2),
    pred(1, 1, -1, 0),
    pred(1, 1, 0, 1),
    pred(1, 0, 0, 0),
];

/// What a `plane` frame's prefix says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Row length in elements, at least 1.
    pub row: u32,
    /// Whether elements are IEEE floats read through the order map (map byte 1).
    pub float: bool,
    /// The predictor.
    pub pred: Predictor,
}

impl Params {
    /// The prefix bytes.
    pub fn encode(&self) -> [u8; PREFIX] {
        let r = self.row.to_be_bytes();
        let p = self.pred;
        [
            r[0],
            r[1],
            r[2],
            r[3],
            u8::from(self.float),
            p.wl as u8,
            p.wu as u8,
            p.wul as u8,
            p.shift,
        ]
    }

    /// Reads a frame's prefix (refusing a short payload, a row length of 0, a map byte other
    /// than 0 and 1 and a shift above [`MAX_SHIFT`]) and returns it with the rest of the
    /// payload.
    ///
    /// # Errors
    ///
    /// The [`PlaneError`] naming what is wrong.
    pub fn decode(payload: &[u8]) -> Result<(Params, &[u8]), PlaneError> {
        let Some((p, rest)) = payload.split_first_chunk::<PREFIX>() else {
            return Err(PlaneError::Prefix {
                stored: payload.len(),
            });
        };
        let row = u32::from_be_bytes([p[0], p[1], p[2], p[3]]);
        if row == 0 {
            return Err(PlaneError::ZeroRow);
        }
        let float = match p[4] {
            0 => false,
            1 => true,
            map => return Err(PlaneError::Map { map }),
        };
        if p[8] > MAX_SHIFT {
            return Err(PlaneError::Shift { shift: p[8] });
        }
        let pred = pred(p[5] as i8, p[6] as i8, p[7] as i8, p[8]);
        Ok((Params { row, float, pred }, rest))
    }
}

/// Whether the filter is defined for elements of `esize` bytes.
pub fn supports(esize: usize) -> bool {
    matches!(esize, 2 | 4 | 8)
}

macro_rules! lane {
    ($m:ident, $s:ty, $u:ty, $w:ty) => {
        mod $m {
            use super::Params;
            const E: usize = std::mem::size_of::<$s>();
            const BITS: u32 = <$s>::BITS;

            /// The order map of IEEE floats on the signed reading (its own inverse).
            #[inline(always)]
            fn map(x: $s, float: bool) -> $s {
                if float {
                    x ^ ((x >> (BITS - 1)) & <$s>::MAX)
                } else {
                    x
                }
            }

            #[inline(always)]
            fn weighted(p: &Params, l: $s, u: $s, ul: $s) -> $s {
                let w = p.pred;
                let half: $w = if w.shift > 0 { 1 << (w.shift - 1) } else { 0 };
                let sum = <$w>::from(w.wl) * <$w>::from(l)
                    + <$w>::from(w.wu) * <$w>::from(u)
                    + <$w>::from(w.wul) * <$w>::from(ul)
                    + half;
                // Floor division (arithmetic shift), then wrapped into the element's bits.
                (sum >> w.shift) as $s
            }

            #[inline(always)]
            fn zigzag(d: $s) -> $u {
                ((d << 1) ^ (d >> (BITS - 1))) as $u
            }

            #[inline(always)]
            fn unzigzag(z: $u) -> $s {
                ((z >> 1) as $s) ^ (-((z & 1) as $s))
            }

            /// The signed values mᵢ of the elements of `src` (big-endian).
            fn values(src: &[u8], float: bool) -> Vec<$s> {
                src.chunks_exact(E)
                    .map(|c| map(<$s>::from_be_bytes(c.try_into().unwrap_or_default()), float))
                    .collect()
            }

            /// Calls `f(i, zigzag residual)` for every element, in order.
            #[inline(always)]
            fn residuals(src: &[u8], p: &Params, mut f: impl FnMut(usize, $u)) {
                let m = values(src, p.float);
                let w = p.row as usize;
                for i in 0..m.len() {
                    let pr = if i == 0 {
                        0
                    } else if i <= w {
                        m[i - 1]
                    } else {
                        weighted(p, m[i - 1], m[i - w], m[i - w - 1])
                    };
                    f(i, zigzag(m[i].wrapping_sub(pr)));
                }
            }

            pub(super) fn apply(src: &[u8], p: &Params, dst: &mut [u8]) {
                let mut z = vec![0; src.len() / E];
                apply_native(src, p, &mut z);
                for (z, d) in z.iter().zip(dst.chunks_exact_mut(E)) {
                    d.copy_from_slice(&z.to_be_bytes());
                }
            }

            /// The zigzag residuals of `src`'s elements as native numbers into `out` (as many
            /// as `src` has elements): [`residuals`] without its per-element branches, the
            /// writer's predictors with their weights known to the compiler (vectorized).
            pub(super) fn apply_native(src: &[u8], p: &Params, out: &mut [$u]) {
                let m = values(src, p.float);
                let n = m.len().min(out.len());
                let w = p.row as usize;
                // The first row (and the first element): left only.
                let head = n.min(w.saturating_add(1));
                let mut prev: $s = 0;
                for (o, &x) in out[..head].iter_mut().zip(&m[..head]) {
                    *o = zigzag(x.wrapping_sub(prev));
                    prev = x;
                }
                if head < n {
                    let q = p.pred;
                    let (m, out) = (&m[..n], &mut out[head..n]);
                    match (q.wl, q.wu, q.wul, q.shift) {
                        (3, 3, -2, 2) => encode_rows::<3, 3, -2, 2>(m, w, head, out),
                        (1, 1, -1, 0) => encode_rows::<1, 1, -1, 0>(m, w, head, out),
                        (1, 1, 0, 1) => encode_rows::<1, 1, 0, 1>(m, w, head, out),
                        (1, 0, 0, 0) => encode_rows::<1, 0, 0, 0>(m, w, head, out),
                        _ => {
                            for (k, o) in out.iter_mut().enumerate() {
                                let i = head + k;
                                let pr = weighted(p, m[i - 1], m[i - w], m[i - w - 1]);
                                *o = zigzag(m[i].wrapping_sub(pr));
                            }
                        }
                    }
                }
            }

            /// The residuals of elements `head..` of `m` (`head` is w + 1) into `out` with the
            /// predictor (WL, WU, WUL, S).
            fn encode_rows<const WL: i8, const WU: i8, const WUL: i8, const S: u8>(
                m: &[$s],
                w: usize,
                head: usize,
                out: &mut [$u],
            ) {
                let half: $w = if S > 0 { 1 << (S.saturating_sub(1)) } else { 0 };
                let n = m.len();
                let cur = &m[head..];
                let left = &m[head - 1..n - 1];
                let up = &m[head - w..n - w];
                let ul = &m[head - w - 1..n - w - 1];
                let it = out.iter_mut().zip(cur).zip(left).zip(up).zip(ul);
                for ((((o, &x), &l), &u), &ul) in it {
                    let sum = <$w>::from(WL) * <$w>::from(l)
                        + <$w>::from(WU) * <$w>::from(u)
                        + <$w>::from(WUL) * <$w>::from(ul)
                        + half;
                    *o = zigzag(x.wrapping_sub((sum >> S) as $s));
                }
            }

            pub(super) fn cost(src: &[u8], p: &Params) -> u64 {
                let mut bits = 0u64;
                residuals(src, p, |_, z| {
                    bits += u64::from(<$u>::BITS - z.leading_zeros())
                });
                bits
            }

            /// Rebuilds the elements from `z` (the zigzag residuals as native numbers, replaced
            /// by the mᵢ on the way) into `dst`, big-endian or native.
            #[inline(always)]
            pub(super) fn undo(z: &mut [$u], p: &Params, dst: &mut [u8], native: bool) {
                let n = z.len();
                let w = p.row as usize;
                let m: &mut [$s] = bytemuck::cast_slice_mut(z);
                // Residuals first (vectorized), then the serial part on them alone.
                for x in m.iter_mut() {
                    *x = unzigzag(*x as $u);
                }
                // The first row (and the first element): left only, a running sum.
                let head = n.min(w.saturating_add(1));
                let mut prev: $s = 0;
                for x in &mut m[..head] {
                    prev = prev.wrapping_add(*x);
                    *x = prev;
                }
                // The writer's predictors with their weights known to the compiler (shifts and
                // adds instead of multiplications on the serial path), any other in general.
                let q = p.pred;
                match (q.wl, q.wu, q.wul, q.shift) {
                    (3, 3, -2, 2) => rows::<3, 3, -2, 2>(m, w, head),
                    (1, 1, -1, 0) => rows::<1, 1, -1, 0>(m, w, head),
                    (1, 1, 0, 1) => rows::<1, 1, 0, 1>(m, w, head),
                    (1, 0, 0, 0) => rows::<1, 0, 0, 0>(m, w, head),
                    _ => rows_any(m, w, head, p),
                }
                for (x, out) in m.iter().zip(dst.chunks_exact_mut(E)) {
                    let v = map(*x, p.float);
                    out.copy_from_slice(&if native {
                        v.to_ne_bytes()
                    } else {
                        v.to_be_bytes()
                    });
                }
            }

            /// Elements `head..` of `m` (residuals) rebuilt in place, a row at a time, with the
            /// predictor (WL, WU, WUL, S); `head` is w + 1 (or `m.len()`).
            #[inline(always)]
            fn rows<const WL: i8, const WU: i8, const WUL: i8, const S: u8>(
                m: &mut [$s],
                w: usize,
                head: usize,
            ) {
                let half: $w = if S > 0 { 1 << (S.saturating_sub(1)) } else { 0 };
                let mut at = head;
                while at < m.len() {
                    let len = w.min(m.len() - at);
                    let (done, rest) = m.split_at_mut(at);
                    let mut prev = <$w>::from(done[at - 1]);
                    let ups = done[at - w..].iter().zip(&done[at - w - 1..]);
                    for (x, (&u, &ul)) in rest[..len].iter_mut().zip(ups) {
                        let sum = <$w>::from(WL) * prev
                            + <$w>::from(WU) * <$w>::from(u)
                            + <$w>::from(WUL) * <$w>::from(ul)
                            + half;
                        let v = x.wrapping_add((sum >> S) as $s);
                        *x = v;
                        prev = <$w>::from(v);
                    }
                    at += len;
                }
            }

            /// [`rows`] for any predictor.
            #[inline(always)]
            fn rows_any(m: &mut [$s], w: usize, head: usize, p: &Params) {
                for i in head..m.len() {
                    let pr = weighted(p, m[i - 1], m[i - w], m[i - w - 1]);
                    m[i] = m[i].wrapping_add(pr);
                }
            }
        }
    };
}

lane!(l16, i16, u16, i32);
lane!(l32, i32, u32, i64);
lane!(l64, i64, u64, i128);

/// Filters `src` (elements of `esize` bytes: 2, 4 or 8) into `dst`, replacing its contents with
/// as many bytes as `src` has: the zigzag residuals, big-endian. Bytes past the last whole
/// element, and the whole block for another element size, are copied as they are.
pub fn apply(src: &[u8], esize: usize, p: &Params, dst: &mut Vec<u8>) {
    dst.clear();
    dst.resize(src.len(), 0);
    let n = if supports(esize) {
        src.len() / esize
    } else {
        0
    };
    let (body, tail) = src.split_at(n * esize);
    match esize {
        2 => l16::apply(body, p, dst),
        4 => l32::apply(body, p, dst),
        8 => l64::apply(body, p, dst),
        _ => {}
    }
    dst[n * esize..].copy_from_slice(tail);
}

/// As [`apply`], into the residuals as native unsigned numbers: `out` receives one per whole
/// element of `src` (elements of 2, 4 or 8 bytes; any other size gives none).
pub(crate) fn apply_native(src: &[u8], esize: usize, p: &Params, out: &mut Vec<u64>) -> usize {
    let n = if supports(esize) {
        src.len() / esize
    } else {
        0
    };
    out.clear();
    out.resize((n * esize).div_ceil(8), 0);
    let body = &src[..n * esize];
    // A `u64` buffer is aligned for every lane, and a whole number of any lane's numbers.
    let words = out.as_mut_slice();
    match esize {
        2 => l16::apply_native(
            body,
            p,
            &mut bytemuck::cast_slice_mut::<u64, u16>(words)[..n],
        ),
        4 => l32::apply_native(
            body,
            p,
            &mut bytemuck::cast_slice_mut::<u64, u32>(words)[..n],
        ),
        8 => l64::apply_native(body, p, &mut words[..n]),
        _ => {}
    }
    n
}

/// The writer's cheap estimate of what the residuals cost: the sum of their bit lengths.
pub fn cost(src: &[u8], esize: usize, p: &Params) -> u64 {
    let n = if supports(esize) {
        src.len() / esize
    } else {
        0
    };
    let body = &src[..n * esize];
    match esize {
        2 => l16::cost(body, p),
        4 => l32::cost(body, p),
        8 => l64::cost(body, p),
        _ => u64::MAX,
    }
}

/// The predictor of [`PREDICTORS`] with the smallest [`cost`] on `src`, as [`Params`] with row
/// length `row`.
pub fn choose(src: &[u8], esize: usize, row: u32, float: bool) -> Params {
    let params = PREDICTORS.map(|pred| Params { row, float, pred });
    let mut best = (u64::MAX, params[0]);
    for p in params {
        let c = cost(src, esize, &p);
        if c < best.0 {
            best = (c, p);
        }
    }
    best.1
}

/// Reverses [`apply`]: `z` holds the residuals as native unsigned numbers of `esize` bytes
/// (2, 4 or 8; the bytes of a `&[u16]`, `&[u32]` or `&[u64]`, so aligned), which it overwrites;
/// the elements go to `dst` (as long as `z`), big-endian or, with `native`, in native order.
/// Nothing is written for another element size or a misaligned `z`.
pub fn undo_into(z: &mut [u8], esize: usize, p: &Params, dst: &mut [u8], native: bool) {
    #[cfg(target_arch = "x86_64")]
    if super::word::has_avx2() {
        // SAFETY: this CPU has the instructions `undo_avx2` is compiled for.
        unsafe { undo_avx2(z, esize, p, dst, native) };
        return;
    }
    undo_any(z, esize, p, dst, native);
}

/// [`undo_into`] compiled for CPUs with AVX2, FMA and BMI2 (wider residual and byte-order passes,
/// shifts by a register without its count in `cl`). Same results.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi2,fma")]
fn undo_avx2(z: &mut [u8], esize: usize, p: &Params, dst: &mut [u8], native: bool) {
    undo_any(z, esize, p, dst, native);
}

/// [`undo_into`] for any CPU (inlined into the versions for particular ones).
#[inline(always)]
fn undo_any(z: &mut [u8], esize: usize, p: &Params, dst: &mut [u8], native: bool) {
    let n = z.len() / esize.max(1);
    let z = &mut z[..n * esize.max(1)];
    let dst = &mut dst[..n * esize.max(1)];
    match esize {
        2 => {
            if let Ok(z) = bytemuck::try_cast_slice_mut::<u8, u16>(z) {
                l16::undo(z, p, dst, native);
            }
        }
        4 => {
            if let Ok(z) = bytemuck::try_cast_slice_mut::<u8, u32>(z) {
                l32::undo(z, p, dst, native);
            }
        }
        8 => {
            if let Ok(z) = bytemuck::try_cast_slice_mut::<u8, u64>(z) {
                l64::undo(z, p, dst, native);
            }
        }
        _ => {}
    }
}

/// Reverses [`apply`] from its output bytes `src` (big-endian residuals) into `dst` (as long as
/// `src`, big-endian elements); bytes past the last whole element, and the whole block for
/// another element size, are copied as they are.
pub fn undo_be(src: &[u8], esize: usize, p: &Params, dst: &mut [u8]) {
    let n = if supports(esize) {
        src.len() / esize
    } else {
        0
    };
    let mut words = vec![0u64; (n * esize).div_ceil(8)];
    let z = &mut bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..n * esize];
    z.copy_from_slice(&src[..n * esize]);
    crate::codec::word::be_to_native(z, esize);
    undo_into(z, esize, p, dst, false);
    dst[n * esize..].copy_from_slice(&src[n * esize..]);
}

/// Filter `plane`: each element less its fitted plane (the parameters of a whole block).
pub(crate) struct Plane;

impl super::block::NumericFront for Plane {
    fn apply(&self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        apply(data, esize, &whole_plane(data, esize), out);
    }
    fn undo(&self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        out.clear();
        out.resize(data.len(), 0);
        undo_be(data, esize, &whole_plane(data, esize), out);
    }
    /// Plane is defined with codec pco only.
    fn wrong_codec(&self, codec: Codec) -> Option<FrameError> {
        Some(PlaneError::Codec { codec }.into())
    }
    /// Checks the element size and the prefix, kept; pco decodes the unsigned residuals, one
    /// per element, in native order.
    fn open<'p>(
        &self,
        h: &FrameHeader,
        payload: &'p [u8],
        kept: &mut Scratch,
    ) -> Result<Coded<'p>, FrameError> {
        if !supports(usize::from(h.esize)) {
            return Err(PlaneError::ElementSize { esize: h.esize }.into());
        }
        let (params, payload) = Params::decode(payload)?;
        kept.get::<PlanePrefix>().0 = Some(params);
        Ok(Coded {
            payload,
            len: h.decoded_len as usize,
            form: Form::Residuals,
        })
    }
    /// Rebuilds the elements from the residuals.
    fn close(
        &self,
        h: &FrameHeader,
        coded: &mut [u8],
        out: &mut [u8],
        native: bool,
        kept: &mut Scratch,
    ) -> Result<(), FrameError> {
        if let Some(params) = &kept.get::<PlanePrefix>().0 {
            undo_into(coded, usize::from(h.esize), params, out, native);
        }
        Ok(())
    }
}

/// The prefix of the `plane` frame being decoded, kept from [`NumericFront::open`] to its
/// undoing.
///
/// [`NumericFront::open`]: super::block::NumericFront::open
#[derive(Default)]
struct PlanePrefix(Option<Params>);

impl super::space::KeptScratch for PlanePrefix {
    #[cfg(test)]
    fn held(&self) -> usize {
        0
    }
}

/// Encodes a block of numbers of `kind` with the `plane` filter `p` and pco into `c` (its
/// contents replaced): the prefix, then pco's file of the residuals, handed to pco in native
/// order from the [`Residuals`] kept in `scratch`. False (and `c` empty) when that is not
/// smaller than the block.
pub(crate) fn encode_block(
    kind: NumKind,
    p: &Params,
    data: &[u8],
    scratch: &mut Scratch,
    c: &mut Vec<u8>,
) -> bool {
    let words = &mut scratch.get::<Residuals>().0;
    let n = apply_native(data, kind.esize(), p, words);
    c.clear();
    c.extend_from_slice(&p.encode());
    let done =
        compress_residuals_native(kind.unsigned(), words, n, LEVEL, c) && c.len() < data.len();
    if !done {
        c.clear();
    }
    done
}

/// The `max` preset's trial: on the variable's rows (two at least), the predictor of the four
/// that costs least on the block ([`choose`]).
impl FrontEncode for Plane {
    fn encode(&self, block: &Numbers<'_>, scratch: &mut Scratch, out: &mut Vec<u8>) -> bool {
        let e = block.kind.esize();
        let Some(row) = block.row.filter(|&r| 2 * r * e <= block.data.len()) else {
            return false;
        };
        let p = choose(block.data, e, row as u32, block.kind.is_float());
        encode_block(block.kind, &p, block.data, scratch, out)
    }
}

/// The parameters [`apply_filter`](super::filter::apply_filter) and [`undo_filter`](super::filter::undo_filter) give the `plane` filter: the whole block
/// as one row (so the left predictor), integers (blocks of variables use the variable's rows
/// and a chosen predictor; see [`plane_payload`](super::filter::plane_payload)).
pub(crate) fn whole_plane(data: &[u8], esize: usize) -> Params {
    Params {
        row: u32::try_from(super::word::whole_row(data, esize)).unwrap_or(u32::MAX),
        float: false,
        pred: PREDICTORS[3],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::quickcheck;

    /// The filter as design/FORMAT.md defines it, one element at a time in i128 arithmetic
    /// (independent of the per-size code): read, map, predict with floor division, wrap,
    /// subtract, zigzag, big-endian; trailing bytes copied.
    fn reference(data: &[u8], e: usize, p: &Params) -> Vec<u8> {
        let bits = 8 * e as u32;
        let modulus = 1i128 << bits;
        let top = 1u128 << (bits - 1);
        let signed = |u: u128| -> i128 {
            if u & top != 0 {
                u as i128 - modulus
            } else {
                u as i128
            }
        };
        let n = data.len() / e;
        let m: Vec<i128> = data[..n * e]
            .chunks_exact(e)
            .map(|c| c.iter().fold(0u128, |a, &b| a << 8 | u128::from(b)))
            .map(|u| {
                if p.float && u & top != 0 {
                    u ^ (top - 1)
                } else {
                    u
                }
            })
            .map(signed)
            .collect();
        let w = p.row as usize;
        let mut out = Vec::new();
        for i in 0..n {
            let pred = match i {
                0 => 0,
                i if i <= w => m[i - 1],
                i => {
                    let q = p.pred;
                    let sum = i128::from(q.wl) * m[i - 1]
                        + i128::from(q.wu) * m[i - w]
                        + i128::from(q.wul) * m[i - w - 1]
                        + if q.shift > 0 { 1 << (q.shift - 1) } else { 0 };
                    sum.div_euclid(1 << q.shift)
                }
            };
            let d = signed((m[i] - pred).rem_euclid(modulus) as u128);
            let z = if d >= 0 { 2 * d } else { -2 * d - 1 } as u128;
            out.extend_from_slice(&z.to_be_bytes()[16 - e..]);
        }
        out.extend_from_slice(&data[n * e..]);
        out
    }

    /// Filters with `apply`, checks it against [`reference`], and undoes it big-endian (with
    /// [`undo_be`]) and native (with [`undo_into`] on native residuals).
    fn check(data: &[u8], e: usize, p: &Params) -> bool {
        let mut f = vec![7; 5];
        apply(data, e, p, &mut f);
        if f != reference(data, e, p) {
            return false;
        }
        // The residuals as native numbers: the same numbers.
        let mut words = vec![9u64; 3];
        let k = apply_native(data, e, p, &mut words);
        let bytes = bytemuck::cast_slice::<u64, u8>(&words);
        let same = bytes[..k * e]
            .chunks_exact(e)
            .zip(f.chunks_exact(e))
            .all(|(a, b)| {
                let mut b = b.to_vec();
                if cfg!(target_endian = "little") {
                    b.reverse();
                }
                a == &b[..]
            });
        if k != data.len() / e || !same {
            return false;
        }
        let mut back = vec![0x5a; data.len()];
        undo_be(&f, e, p, &mut back);
        if back != data {
            return false;
        }
        let n = data.len() / e;
        let mut words = vec![0u64; (n * e).div_ceil(8)];
        let z = &mut bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..n * e];
        for (x, r) in z.chunks_exact_mut(e).zip(f.chunks_exact(e)) {
            x.copy_from_slice(r);
            if cfg!(target_endian = "little") {
                x.reverse();
            }
        }
        let mut native = vec![0x5a; n * e];
        let mut z_any = z.to_vec();
        undo_into(z, e, p, &mut native, true);
        // The version for any CPU, whichever `undo_into` chose here.
        let mut any = vec![0x5a; n * e];
        undo_any(&mut z_any, e, p, &mut any, true);
        if any != native {
            return false;
        }
        native
            .chunks_exact(e)
            .zip(data.chunks_exact(e))
            .all(|(a, b)| {
                a.iter().eq(if cfg!(target_endian = "little") {
                    b.iter().rev().collect::<Vec<_>>()
                } else {
                    b.iter().collect()
                })
            })
    }

    /// Elements of `e` bytes from `bits`, with special values (float NaNs with payloads, ±0,
    /// ±infinity, denormals, integer extremes) or a smooth ramp mixed in by `pick`.
    fn elements(e: usize, bits: &[u64], pick: &[u8]) -> Vec<u8> {
        let specials: &[u64] = match e {
            2 => &[0x7fff, 0x8000, 0xffff, 0, 1, 0x7e00, 0xfc00],
            4 => &[
                0x7fc0_1234,
                0xffc0_0001,
                0x8000_0000,
                0,
                0x7f80_0000,
                0xff80_0000,
                1,
            ],
            _ => &[
                0x7ff8_0000_0000_0001,
                0xfff0_0000_0000_0000,
                0x8000_0000_0000_0000,
                0x8000_0000_0000_0001,
                0x7fff_ffff_ffff_ffff,
                0,
                1,
            ],
        };
        (0..bits.len())
            .flat_map(|i| {
                let v = match pick.get(i).map(|p| p % 16) {
                    Some(p @ 0..=6) => specials[usize::from(p)],
                    Some(7..=12) => match e {
                        2 => (1000 + 3 * (i % 37) + 5 * (i / 37)) as u64,
                        4 => u64::from((280.0f32 + 0.25 * i as f32).to_bits()),
                        _ => (-20.0f64 + 0.125 * i as f64).to_bits(),
                    },
                    _ => bits[i],
                };
                v.to_be_bytes()[8 - e..].to_vec()
            })
            .collect()
    }

    quickcheck! {
        fn any_block_any_predictor_roundtrips(
            bits: Vec<u64>,
            pick: Vec<u8>,
            size: u8,
            row: u16,
            weights: (i8, i8, i8, u8),
            float: bool,
            tail: u8
        ) -> bool {
            let e = [2, 4, 8][usize::from(size % 3)];
            let mut data = elements(e, &bits, &pick);
            data.extend(std::iter::repeat_n(0xab, usize::from(tail) % e));
            let p = Params {
                row: u32::from(row % 70).max(1),
                float,
                pred: Predictor { wl: weights.0, wu: weights.1, wul: weights.2, shift: weights.3 % 7 },
            };
            check(&data, e, &p)
        }
    }

    #[test]
    fn the_writers_predictors_roundtrip_on_odd_shapes() {
        let mut x = 7u64;
        for n in [0usize, 1, 2, 3, 5, 17, 1000, 1001] {
            let bits: Vec<u64> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                })
                .collect();
            for e in [2, 4, 8] {
                let data = elements(e, &bits, &[9; 600]);
                for row in [1, 2, 3, 31, n.saturating_sub(1), n, n + 1, 1 << 20] {
                    for (pred, float) in PREDICTORS.iter().zip([false, true, true, false]) {
                        let row = (row as u32).max(1);
                        let p = Params {
                            row,
                            float,
                            pred: *pred,
                        };
                        assert!(check(&data, e, &p), "n {n} e {e} row {row} {p:?}");
                    }
                }
            }
        }
    }

    /// The worked example of design/FORMAT.md, bytes checked by hand there.
    #[test]
    fn worked_example_bytes() {
        let data: Vec<u8> = [10i16, 12, 15, 11, 14, -4, 0]
            .iter()
            .flat_map(|x| x.to_be_bytes())
            .collect();
        let p = Params {
            row: 3,
            float: false,
            pred: PREDICTORS[0],
        };
        assert_eq!(p.encode(), [0, 0, 0, 3, 0, 3, 3, 0xfe, 2]);
        assert_eq!(Params::decode(&p.encode()), Ok((p, &[][..])));
        let mut f = Vec::new();
        apply(&data, 2, &p, &mut f);
        assert_eq!(f, [0, 20, 0, 4, 0, 6, 0, 7, 0, 4, 0, 39, 0, 4]);
        let mut back = vec![0; f.len()];
        undo_be(&f, 2, &p, &mut back);
        assert_eq!(back, data);
    }

    #[test]
    fn bad_prefixes_are_refused() {
        let good = [0, 0, 0, 3, 1, 3, 3, 0xfe, 6, 9];
        assert!(Params::decode(&good).is_ok());
        let e = |b: &[u8]| Params::decode(b).unwrap_err().to_string();
        assert!(e(&good[..8]).contains("plane payload of 8 bytes has no 9-byte prefix"));
        let mut b = good;
        b[3] = 0;
        assert_eq!(e(&b), "plane row length 0");
        let mut b = good;
        b[4] = 2;
        assert_eq!(e(&b), "plane map byte 2 (0 integers, 1 floats)");
        let mut b = good;
        b[8] = 7;
        assert_eq!(e(&b), "plane shift 7 (at most 6)");
    }

    #[test]
    fn choose_picks_the_cheapest_predictor() {
        // A plane z = 7x + 3y: only Lorenzo predicts it exactly ((3L + 3U - 2UL) / 4 is
        // z - 10/4, rounded to z - 2).
        let data: Vec<u8> = (0..400i32)
            .flat_map(|i| (7 * (i % 20) + 3 * (i / 20)).to_be_bytes())
            .collect();
        assert_eq!(choose(&data, 4, 20, false).pred, PREDICTORS[1]);
        // Rows that repeat with a wiggle along them: up is exact, left is not.
        let data: Vec<u8> = (0..400u16)
            .flat_map(|i| [0u16, 9, 1, 8, 2][usize::from(i % 20 % 5)].to_be_bytes())
            .collect();
        let p = choose(&data, 2, 20, false);
        assert!(
            cost(&data, 2, &p)
                < cost(
                    &data,
                    2,
                    &Params {
                        pred: PREDICTORS[3],
                        ..p
                    }
                )
        );
    }
}
