//! The `fit` filter (id 9): a linear predictor fitted to the block, on up to [`MAX_TAPS`]
//! earlier elements, whose residuals codec pco compresses, with the block's fill value set
//! apart (design/FORMAT.md specifies it byte for byte).
//!
//! Element i of a block (e = 2, 4 or 8 bytes, big-endian) is read as a signed integer mᵢ of 8e
//! bits, as it is (integers) or through lorenzo's order map (floats). The working value vᵢ is
//! mᵢ, or vᵢ₋₁ where element i is the fill value (v₋₁ = 0). With taps (oₖ, cₖ) — an offset
//! back, at least 2, and a weight — and a shift s, the prediction is vᵢ₋₁ plus
//! ⌊(Σₖ cₖ·(vᵢ₋ₒₖ − vᵢ₋₁) + h) / 2^s⌋ once every tap is inside the block, and vᵢ₋₁ before
//! (0 for the first element). The residuals mᵢ − pᵢ (mod 2^(8e)) of the elements that are not
//! the fill, zigzag-encoded, are pco's numbers.
//!
//! A smooth field with noise (air temperature, sea surface temperature) is predicted best by a
//! weighted mean of many neighbours — two rows back and two elements to each side — whose
//! weights depend on the field: the writer fits them to the block by least squares
//! ([`fit`]). One neighbour's difference (pco's delta, `plane`'s three fixed weightings) adds
//! more of the noise to each residual.

use super::error::{FitError, FrameError};
use super::front::{FrontEncode, Numbers, Residuals};
use super::pcodec::{compress_residuals_native, Mode, NumKind, LEVEL};
use super::space::Scratch;
use crate::format::FrameHeader;

/// Bytes of a `fit` prefix before its taps: map, shift, flags, tap count.
pub(crate) const HEAD: usize = 4;

/// Bytes of a tap in the prefix: the offset (4, big-endian) and the weight (2, big-endian).
pub(crate) const TAP: usize = 6;

/// The most taps a `fit` prefix may hold.
pub(crate) const MAX_TAPS: usize = 32;

/// The largest shift a `fit` prefix may hold.
pub(crate) const MAX_SHIFT: u8 = 15;

/// Flags bit 0: a fill section (the fill element, the mask's length and the mask, as the
/// `mask` filter's prefix) follows the taps.
const FLAG_FILL: u8 = 1;

/// The shift the writer uses, unless a weight needs a smaller one to fit in 16 bits.
const WRITER_SHIFT: u8 = 12;

/// Taps with an offset below this are applied one element at a time when decoding (they reach
/// into elements decoded just before); the others, for a stretch of elements at once.
const NEAR: u32 = 8;

/// The longest stretch of elements the decoder predicts from the far taps at once.
const STRETCH: usize = 2048;

/// The writer fits the weights on about this many elements of the block.
const FIT_SAMPLES: usize = 2048;

/// Whether the filter is defined for elements of `esize` bytes (2, 4 or 8).
pub(crate) fn supports(esize: usize) -> bool {
    matches!(esize, 2 | 4 | 8)
}

/// One input of the predictor: the element `offset` places back (at least 2) and its weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tap {
    /// How many elements back, at least 2 (the element just before is the prediction's base).
    pub(crate) offset: u32,
    /// The weight of that element's difference from the element just before.
    pub(crate) weight: i16,
}

/// What a `fit` frame's prefix says of the predictor.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct FitParams {
    /// Whether elements are IEEE floats read through the order map (map byte 1).
    pub(crate) float: bool,
    /// The weighted sum (plus half of 2^shift) is divided by 2^shift, rounding down.
    pub(crate) shift: u8,
    /// The taps, at most [`MAX_TAPS`].
    pub(crate) taps: Vec<Tap>,
}

impl FitParams {
    /// Appends the prefix up to the fill section (which follows when `fill`) to `out`.
    pub(crate) fn encode(&self, fill: bool, out: &mut Vec<u8>) {
        out.push(u8::from(self.float));
        out.push(self.shift);
        out.push(if fill { FLAG_FILL } else { 0 });
        out.push(self.taps.len() as u8);
        for t in &self.taps {
            out.extend_from_slice(&t.offset.to_be_bytes());
            out.extend_from_slice(&t.weight.to_be_bytes());
        }
    }

    /// Reads a frame's prefix up to the fill section: the parameters, whether a fill section
    /// follows, and the rest of the payload.
    ///
    /// # Errors
    ///
    /// [`FitError::Prefix`] for a payload too short for its head or taps,
    /// [`FitError::Map`], [`FitError::Shift`], [`FitError::Flags`],
    /// [`FitError::Taps`] and [`FitError::Offset`] for a field out of its range.
    pub(crate) fn decode(payload: &[u8]) -> Result<(FitParams, bool, &[u8]), FitError> {
        let Some((head, rest)) = payload.split_first_chunk::<HEAD>() else {
            return Err(FitError::Prefix {
                stored: payload.len(),
                need: HEAD,
            });
        };
        let float = match head[0] {
            0 => false,
            1 => true,
            map => return Err(FitError::Map { map }),
        };
        let shift = head[1];
        if shift > MAX_SHIFT {
            return Err(FitError::Shift { shift });
        }
        if head[2] & !FLAG_FILL != 0 {
            return Err(FitError::Flags { flags: head[2] });
        }
        let k = usize::from(head[3]);
        if k > MAX_TAPS {
            return Err(FitError::Taps { count: head[3] });
        }
        let Some(taps) = rest.get(..k * TAP) else {
            return Err(FitError::Prefix {
                stored: payload.len(),
                need: HEAD + k * TAP,
            });
        };
        let mut out = Vec::with_capacity(k);
        for (tap, t) in taps.chunks_exact(TAP).enumerate() {
            let offset = u32::from_be_bytes([t[0], t[1], t[2], t[3]]);
            if offset < 2 {
                return Err(FitError::Offset { tap, offset });
            }
            out.push(Tap {
                offset,
                weight: i16::from_be_bytes([t[4], t[5]]),
            });
        }
        let p = FitParams {
            float,
            shift,
            taps: out,
        };
        Ok((p, head[2] & FLAG_FILL != 0, &rest[k * TAP..]))
    }

    /// The first element whose every tap is inside the block: the largest offset (1 without
    /// taps).
    fn reach(&self) -> usize {
        self.taps
            .iter()
            .map(|t| t.offset as usize)
            .max()
            .unwrap_or(1)
    }

    /// The sum of the weights.
    fn weight_sum(&self) -> i64 {
        self.taps.iter().map(|t| i64::from(t.weight)).sum()
    }

    /// Half of 2^shift (0 for shift 0): the rounding term.
    fn half(&self) -> i64 {
        if self.shift > 0 {
            1 << (self.shift - 1)
        } else {
            0
        }
    }
}

/// The offsets the writer fits weights for, for rows of `row` elements in a block of `n`: the
/// element two back, and five of each of the two rows before (two to each side), those at
/// least 2 and below n / 2, without repeats.
pub(crate) fn offsets_for(row: usize, n: usize) -> Vec<u32> {
    let w = row as i64;
    let mut o: Vec<u32> = [2, w - 2, w - 1, w, w + 1, w + 2]
        .into_iter()
        .chain((-2..=2).map(|d| 2 * w + d))
        .filter(|&x| x >= 2 && (x as usize) < n / 2)
        .filter_map(|x| u32::try_from(x).ok())
        .collect();
    o.sort_unstable();
    o.dedup();
    o
}

/// Buffers for the filter, kept between blocks (one per thread).
#[derive(Debug, Default)]
pub(crate) struct Work {
    /// The working values vᵢ.
    v: Vec<i64>,
    /// The working values as floats (exact: elements of at most 4 bytes).
    vf: Vec<f64>,
    /// Sums of weighted elements.
    acc: Vec<f64>,
    /// Sums of weighted elements, for 8-byte elements (wrapping integers).
    acc64: Vec<i64>,
    /// The predictions of a stretch of elements.
    pred: Vec<i64>,
    /// Whether each element is the fill (empty for a block without one).
    fills: Vec<bool>,
    /// The decoder's runs of elements that are not the fill, as `start..end`.
    runs: Vec<(usize, usize)>,
}

impl super::space::KeptScratch for Work {
    /// The bytes its buffers hold.
    #[cfg(test)]
    fn held(&self) -> usize {
        8 * (self.v.capacity()
            + self.vf.capacity()
            + self.acc.capacity()
            + self.acc64.capacity()
            + self.pred.capacity())
            + self.fills.capacity()
            + 16 * self.runs.capacity()
    }
}

/// The first element from `from` on (before `n`) that is the fill when `fill`, or is not
/// when not; `n` when there is none. Whole bytes of the bitmap, then eight of them at once.
fn next_where(bits: &[u8], from: usize, n: usize, fill: bool) -> usize {
    let flip = if fill { 0 } else { u8::MAX };
    let mut i = from;
    while i < n {
        // Beyond the bitmap nothing is the fill.
        let byte = (bits.get(i / 8).copied().unwrap_or(0) ^ flip) & (u8::MAX >> (i % 8));
        if byte != 0 {
            return (i / 8 * 8 + byte.leading_zeros() as usize).min(n);
        }
        i = i / 8 * 8 + 8;
        while let Some(w) = bits.get(i / 8..i / 8 + 8).filter(|_| i + 64 <= n) {
            let w = u64::from_be_bytes(w.try_into().unwrap_or_default())
                ^ (u64::from(flip) * 0x0101_0101_0101_0101);
            if w != 0 {
                break;
            }
            i += 64;
        }
    }
    n
}

/// The runs of elements of a block of `n` that are not the fill (by the bitmap `bits`) into
/// `runs`, as `start..end` in order.
fn runs_of(bits: &[u8], n: usize, runs: &mut Vec<(usize, usize)>) {
    runs.clear();
    let mut i = 0;
    while i < n {
        let start = next_where(bits, i, n, false);
        if start == n {
            break;
        }
        let end = next_where(bits, start, n, true);
        runs.push((start, end));
        i = end;
    }
}

/// What an element size means to the filter: the reading, wrapping and zigzag of its numbers.
trait Lane: bytemuck::Pod + Default {
    /// The zigzag residual as a number of the lane's unsigned type.
    fn from_z(z: u64) -> Self;
    /// The number back as a zigzag residual.
    fn to_z(self) -> u64;
}

impl Lane for u16 {
    fn from_z(z: u64) -> u16 {
        z as u16
    }
    fn to_z(self) -> u64 {
        u64::from(self)
    }
}

impl Lane for u32 {
    fn from_z(z: u64) -> u32 {
        z as u32
    }
    fn to_z(self) -> u64 {
        u64::from(self)
    }
}

impl Lane for u64 {
    fn from_z(z: u64) -> u64 {
        z
    }
    fn to_z(self) -> u64 {
        self
    }
}

/// `x` wrapped into `E` bytes and sign-extended back.
#[inline(always)]
fn wrap<const E: usize>(x: i64) -> i64 {
    let s = 64 - 8 * E as u32;
    (x << s) >> s
}

/// The order map of IEEE floats on a sign-extended number of `E` bytes (its own inverse).
#[inline(always)]
fn map<const E: usize>(x: i64, float: bool) -> i64 {
    if float {
        x ^ ((x >> 63) & (i64::MAX >> (64 - 8 * E as u32)))
    } else {
        x
    }
}

#[inline(always)]
fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

#[inline(always)]
fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// The working values of `data` (elements of `E` bytes) into `v`: mᵢ, or vᵢ₋₁ for the fill
/// element `fill` (compared as `E`-byte strings). Returns how many are not the fill.
fn working<const E: usize>(data: &[u8], float: bool, fill: Option<u64>, work: &mut Work) -> usize {
    let n = data.len() / E;
    let (v, fills) = (&mut work.v, &mut work.fills);
    v.clear();
    v.reserve(n);
    fills.clear();
    let read = |c: &[u8]| {
        let mut b = [0u8; 8];
        b[8 - E..].copy_from_slice(c);
        u64::from_be_bytes(b)
    };
    let Some(fill) = fill else {
        v.extend(
            data.chunks_exact(E)
                .map(|c| map::<E>(wrap::<E>(read(c) as i64), float)),
        );
        return n;
    };
    fills.resize(n, false);
    v.resize(n, 0);
    let mut prev = 0i64;
    let mut others = 0;
    for ((c, x), f) in data.chunks_exact(E).zip(v.iter_mut()).zip(fills.iter_mut()) {
        let u = read(c);
        let is_fill = u == fill;
        // Without branches: fill values sit in runs, but the runs are short at coastlines.
        prev = if is_fill {
            prev
        } else {
            map::<E>(wrap::<E>(u as i64), float)
        };
        *x = prev;
        *f = is_fill;
        others += usize::from(!is_fill);
    }
    others
}

/// The predictions pᵢ for `i` in `from..to` (from ≥ the reach) of the working values `v`,
/// appended to `pred`.
#[inline(always)]
fn predict<const E: usize, const FMA: bool>(
    v: &[i64],
    p: &FitParams,
    work: &mut Work,
    from: usize,
    to: usize,
) {
    let (half, shift, sum_w) = (p.half(), p.shift, p.weight_sum());
    let pred = &mut work.pred;
    if E <= 4 {
        // Exact in f64: −2^31 ≤ vᵢ < 2^31, −2^15 ≤ cₖ < 2^15, at most 32 taps, so every
        // partial sum is an integer in [−2^51, 2^51] (2^51 itself for 32 weights of −32768
        // on values of −2^31), which `exact` reads exactly. A stretch at a time, so that the
        // sums stay in the cache while each tap adds to them.
        let (vf, acc) = (&mut work.vf, &mut work.acc);
        // The values the taps reach, from the first (the largest offset back).
        let low = from - p.reach().max(1);
        vf.clear();
        vf.extend(v[low..to].iter().map(|&x| x as f64));
        let mut at = from;
        while at < to {
            let end = to.min(at + STRETCH);
            far_sums::<FMA>(&p.taps, &vf[..], at - low, end - at, 0.0, acc);
            pred.extend(acc.iter().zip(&v[at - 1..end - 1]).map(|(&a, &l)| {
                let s = exact(a).wrapping_sub(sum_w.wrapping_mul(l));
                wrap::<E>(l.wrapping_add(s.wrapping_add(half) >> shift))
            }));
            at = end;
        }
    } else {
        let acc = &mut work.acc64;
        let mut at = from;
        while at < to {
            let end = to.min(at + STRETCH);
            acc.clear();
            acc.resize(end - at, 0);
            for t in &p.taps {
                let (c, o) = (i64::from(t.weight), t.offset as usize);
                let taps = v[at - o..end - o].iter().zip(&v[at - 1..end - 1]);
                for (a, (&x, &l)) in acc.iter_mut().zip(taps) {
                    *a = a.wrapping_add(c.wrapping_mul(x.wrapping_sub(l)));
                }
            }
            pred.extend(
                acc.iter()
                    .zip(&v[at - 1..end - 1])
                    .map(|(&s, &l)| l.wrapping_add(s.wrapping_add(half) >> shift)),
            );
            at = end;
        }
    }
}

/// Reads `data` (elements of `esize` bytes: 2, 4 or 8; whole elements) into the working
/// values of [`Work`], the elements equal to `fill` carrying the value before them, for
/// [`residuals`] and [`fit_loaded`]. Returns how many elements are not the fill (0 for
/// another element size).
pub(crate) fn load(
    data: &[u8],
    esize: usize,
    float: bool,
    fill: Option<u64>,
    work: &mut Work,
) -> usize {
    match esize {
        2 => working::<2>(data, float, fill, work),
        4 => working::<4>(data, float, fill, work),
        8 => working::<8>(data, float, fill, work),
        _ => {
            work.v.clear();
            work.fills.clear();
            0
        }
    }
}

/// Filters `data` (elements of `esize` bytes: 2, 4 or 8; whole elements) with `p`, the
/// elements equal to `fill` set apart: the zigzag residuals of the other elements, in order,
/// go to `words` as native numbers of `esize` bytes (packed, as pco takes them). Returns how
/// many.
pub(crate) fn apply_native(
    data: &[u8],
    esize: usize,
    p: &FitParams,
    fill: Option<u64>,
    words: &mut Vec<u64>,
    work: &mut Work,
) -> usize {
    load(data, esize, p.float, fill, work);
    residuals(esize, p, 0..data.len() / esize.max(1), words, work)
}

/// As [`apply_native`], for the elements in `range` only, from the working values [`load`]
/// left in `work` (read with `p`'s map).
pub(crate) fn residuals(
    esize: usize,
    p: &FitParams,
    range: std::ops::Range<usize>,
    words: &mut Vec<u64>,
    work: &mut Work,
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if super::word::has_avx2() {
        // SAFETY: this CPU has the instructions `residuals_avx2` is compiled for.
        return unsafe { residuals_avx2(esize, p, range, words, work) };
    }
    residuals_any::<false>(esize, p, range, words, work)
}

/// [`residuals`] compiled for CPUs with AVX2, FMA and BMI2 (as [`undo_into`]). Same results.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi2,fma")]
fn residuals_avx2(
    esize: usize,
    p: &FitParams,
    range: std::ops::Range<usize>,
    words: &mut Vec<u64>,
    work: &mut Work,
) -> usize {
    residuals_any::<true>(esize, p, range, words, work)
}

/// [`residuals`] for any CPU (inlined into the versions for particular ones); `FMA` as in
/// [`far_sums`].
#[inline(always)]
fn residuals_any<const FMA: bool>(
    esize: usize,
    p: &FitParams,
    range: std::ops::Range<usize>,
    words: &mut Vec<u64>,
    work: &mut Work,
) -> usize {
    match esize {
        2 => residuals_e::<u16, 2, FMA>(p, range, words, work),
        4 => residuals_e::<u32, 4, FMA>(p, range, words, work),
        8 => residuals_e::<u64, 8, FMA>(p, range, words, work),
        _ => 0,
    }
}

#[inline(always)]
fn residuals_e<L: Lane, const E: usize, const FMA: bool>(
    p: &FitParams,
    range: std::ops::Range<usize>,
    words: &mut Vec<u64>,
    work: &mut Work,
) -> usize {
    let v = std::mem::take(&mut work.v);
    let n = v.len();
    let (from, to) = (range.start.min(n), range.end.min(n));
    let fills = &work.fills;
    let others = if fills.is_empty() {
        to - from
    } else {
        fills[from..to].iter().filter(|&&f| !f).count()
    };
    words.clear();
    words.resize((others * E).div_ceil(8), 0);
    let out: &mut [L] = &mut bytemuck::cast_slice_mut(words.as_mut_slice())[..others];
    // Up to the reach, the element before is the prediction; then the predictor's.
    let r = p.reach().min(n).clamp(from, to);
    work.pred.clear();
    work.pred
        .extend((from..r).map(|i| if i == 0 { 0 } else { v[i - 1] }));
    if r < to {
        predict::<E, FMA>(&v, p, work, r, to);
    }
    let (preds, fills) = (&work.pred, &work.fills);
    if fills.is_empty() {
        for ((o, &x), &q) in out.iter_mut().zip(&v[from..to]).zip(preds) {
            *o = L::from_z(zigzag(wrap::<E>(x.wrapping_sub(q))));
        }
    } else {
        let mut j = 0;
        for ((&x, &q), &f) in v[from..to].iter().zip(preds).zip(&fills[from..to]) {
            // A fill element has no residual (its working value is the one before it).
            if !f {
                out[j] = L::from_z(zigzag(wrap::<E>(x.wrapping_sub(q))));
                j += 1;
            }
        }
    }
    work.v = v;
    others
}

/// The weighted sums `base` + Σₖ cₖ·vf[at + j − oₖ] for j in 0..len into `acc` (exact: see
/// [`exact`]), five taps to a pass over the stretch (the writer's two rows back, five taps
/// each: two passes). `FMA`: with fused multiply-adds (the CPU must have them), which give the
/// same sums since every product and partial sum is exact.
#[inline(always)]
fn far_sums<const FMA: bool>(
    taps: &[Tap],
    vf: &[f64],
    at: usize,
    len: usize,
    base: f64,
    acc: &mut Vec<f64>,
) {
    let src = |t: &Tap| &vf[at - t.offset as usize..at - t.offset as usize + len];
    let w = |t: &Tap| f64::from(t.weight);
    let madd = |a: f64, c: f64, x: f64| if FMA { x.mul_add(c, a) } else { a + c * x };
    // Every element is written by the first pass (from `base`): no clearing.
    acc.resize(len, 0.0);
    let mut fives = taps.chunks_exact(5);
    let mut first = true;
    for q in &mut fives {
        let c = [w(&q[0]), w(&q[1]), w(&q[2]), w(&q[3]), w(&q[4])];
        let x = [src(&q[0]), src(&q[1]), src(&q[2]), src(&q[3]), src(&q[4])];
        if first {
            five::<FMA, true>(acc, base, c, x);
        } else {
            five::<FMA, false>(acc, base, c, x);
        }
        first = false;
    }
    for t in fives.remainder() {
        let (c, x) = (w(t), src(t));
        for (a, &x) in acc.iter_mut().zip(x) {
            *a = madd(if first { base } else { *a }, c, x);
        }
        first = false;
    }
    if first {
        acc.fill(base);
    }
}

/// One pass of [`far_sums`]: five taps of weights `c` over the values `x` (as long as `acc`)
/// added into `acc`, or to `base` when `FIRST`.
#[inline(always)]
fn five<const FMA: bool, const FIRST: bool>(
    acc: &mut [f64],
    base: f64,
    c: [f64; 5],
    x: [&[f64]; 5],
) {
    let madd = |a: f64, c: f64, x: f64| if FMA { x.mul_add(c, a) } else { a + c * x };
    let len = acc.len();
    let [x0, x1, x2, x3, x4] = x.map(|x| &x[..len]);
    for (j, a) in acc.iter_mut().enumerate() {
        // Two chains of additions (any order: the sums are exact).
        let a0 = if FIRST { base } else { *a };
        let s = madd(madd(a0, c[0], x0[j]), c[1], x1[j]);
        let t = madd(madd(c[2] * x2[j], c[3], x3[j]), c[4], x4[j]);
        *a = s + t;
    }
}

/// `x`, an integer of magnitude at most 2^51 held exactly in an f64, as an i64: through the
/// bits of x + 1.5 · 2^52 (whose unit in the last place is 1), which compiles to vector
/// instructions where `as i64` does not. Past 2^51 in magnitude the result is wrong (x + 1.5 ·
/// 2^52 is rounded, or its exponent changes): the callers keep their sums inside.
#[inline(always)]
fn exact(x: f64) -> i64 {
    (x + MAGIC).to_bits() as i64 - MAGIC.to_bits() as i64
}

/// 1.5 · 2^52, for [`exact`].
const MAGIC: f64 = 6_755_399_441_055_744.0;

/// The predictor the writer fits to `data` (elements of `esize` bytes, 2, 4 or 8) for the
/// taps at `offsets`: the least-squares weights of the differences vᵢ₋ₒ − vᵢ₋₁ for the
/// difference vᵢ − vᵢ₋₁, over about [`FIT_SAMPLES`] elements spread over the block that are
/// not `fill`, rounded to 16-bit weights of 2^-shift. Taps whose weight rounds to 0 are left
/// out; with no sample (or a singular system) the predictor has no taps (the element before).
pub(crate) fn fit(
    data: &[u8],
    esize: usize,
    float: bool,
    fill: Option<u64>,
    offsets: &[u32],
    work: &mut Work,
) -> FitParams {
    load(data, esize, float, fill, work);
    fit_loaded(esize, float, offsets, work)
}

/// As [`fit`], from the working values [`load`] left in `work` (read with the map `float`).
pub(crate) fn fit_loaded(esize: usize, float: bool, offsets: &[u32], work: &Work) -> FitParams {
    let none = FitParams {
        float,
        shift: 0,
        taps: Vec::new(),
    };
    let v = &work.v;
    if !supports(esize) {
        return none;
    }
    let is_other = |i: usize| work.fills.get(i) != Some(&true);
    let n = v.len();
    let k = offsets.len().min(MAX_TAPS);
    let offsets = &offsets[..k];
    let r = offsets.iter().map(|&o| o as usize).max().unwrap_or(1);
    if k == 0 || r >= n {
        return none;
    }
    let step = ((n - r) / FIT_SAMPLES).max(1);
    // Normal equations (XᵀX) c = Xᵀy, accumulated over the samples.
    let mut xtx = vec![0f64; k * k];
    let mut xty = vec![0f64; k];
    let mut x = vec![0f64; k];
    let mut count = 0usize;
    let mut i = r;
    while i < n {
        if is_other(i) && is_other(i - 1) {
            let l = v[i - 1] as f64;
            for (xk, &o) in x.iter_mut().zip(offsets) {
                *xk = v[i - o as usize] as f64 - l;
            }
            let y = v[i] as f64 - l;
            for a in 0..k {
                xty[a] += x[a] * y;
                for b in 0..=a {
                    xtx[a * k + b] += x[a] * x[b];
                }
            }
            count += 1;
        }
        i += step;
    }
    match solve(&mut xtx, &xty, k).filter(|_| count >= 4 * k) {
        Some(c) => quantize(float, offsets, &c),
        None => none,
    }
}

/// Factors the symmetric matrix whose lower triangle `a` (k × k, row-major) holds as L Lᵀ in
/// place (L in the lower triangle), with a small ridge; false when it is not positive definite.
fn cholesky(a: &mut [f64], k: usize) -> bool {
    let trace: f64 = (0..k).map(|i| a[i * k + i]).sum();
    let ridge = 1e-9 * trace / k as f64 + f64::MIN_POSITIVE;
    for i in 0..k {
        a[i * k + i] += ridge;
    }
    for j in 0..k {
        let mut d = a[j * k + j];
        for m in 0..j {
            d -= a[j * k + m] * a[j * k + m];
        }
        if !(d > 0.0 && d.is_finite()) {
            return false;
        }
        let d = d.sqrt();
        a[j * k + j] = d;
        for i in j + 1..k {
            let mut s = a[i * k + j];
            for m in 0..j {
                s -= a[i * k + m] * a[j * k + m];
            }
            a[i * k + j] = s / d;
        }
    }
    true
}

/// Solves L Lᵀ x = b with the factor [`cholesky`] left in `a`.
fn substitute(a: &[f64], b: &[f64], k: usize) -> Vec<f64> {
    let mut x = b.to_vec();
    for i in 0..k {
        let mut s = x[i];
        for m in 0..i {
            s -= a[i * k + m] * x[m];
        }
        x[i] = s / a[i * k + i];
    }
    for i in (0..k).rev() {
        let mut s = x[i];
        for m in i + 1..k {
            s -= a[m * k + i] * x[m];
        }
        x[i] = s / a[i * k + i];
    }
    x
}

/// The least-squares weights for the normal equations `a` c = `b` (a's lower triangle, k × k),
/// their sum moved to the nearest of 1, 1/2, 1/4 and 1/8 where it lies between 1/16 and 2
/// (the decoder then multiplies by the sum with a shift: `Serial`), by the least change
/// in the squared error (a Lagrange multiplier). `None` for a system that is not positive
/// definite or weights that are not finite.
fn solve(a: &mut [f64], b: &[f64], k: usize) -> Option<Vec<f64>> {
    if !cholesky(a, k) {
        return None;
    }
    let u = substitute(a, b, k);
    let sum: f64 = u.iter().sum();
    let c = if sum > 1.0 / 16.0 && sum < 2.0 {
        let target = (0..4)
            .map(|j| 0.5f64.powi(j))
            .min_by(|x, y| {
                (x.ln() - sum.ln())
                    .abs()
                    .total_cmp(&(y.ln() - sum.ln()).abs())
            })
            .unwrap_or(1.0);
        let z = substitute(a, &vec![1.0; k], k);
        let zs: f64 = z.iter().sum();
        let m = (sum - target) / zs;
        u.iter().zip(&z).map(|(u, z)| u - m * z).collect()
    } else {
        u
    };
    c.iter().all(|x| x.is_finite()).then_some(c)
}

/// Weights of 2^-shift in 16 bits for the real weights `c` of the taps at `offsets`: the
/// writer's shift, or less where a weight needs it; taps whose weight rounds to 0 left out.
fn quantize(float: bool, offsets: &[u32], c: &[f64]) -> FitParams {
    let big = c.iter().fold(0f64, |m, x| m.max(x.abs()));
    let mut shift = WRITER_SHIFT;
    while shift > 0 && big * f64::from(1u32 << shift) > f64::from(i16::MAX - 16) {
        shift -= 1;
    }
    let scale = f64::from(1u32 << shift);
    let round = |w: f64| {
        (w * scale)
            .round()
            .clamp(f64::from(i16::MIN), f64::from(i16::MAX))
    };
    let mut weights: Vec<i64> = c.iter().map(|&w| round(w) as i64).collect();
    // The rounded weights keep the sum's value (a power of two the decoder shifts by): the
    // largest weight takes the difference.
    let want = round(c.iter().sum());
    let got: i64 = weights.iter().sum();
    if let Some(top) = (0..weights.len()).max_by_key(|&i| weights[i].abs()) {
        weights[top] = (weights[top] + want as i64 - got).clamp(i16::MIN.into(), i16::MAX.into());
    }
    let taps = offsets
        .iter()
        .zip(weights)
        .map(|(&offset, w)| Tap {
            offset,
            weight: w as i16,
        })
        .filter(|t| t.weight != 0)
        .collect();
    FitParams { float, shift, taps }
}

/// Filter `fit`: each element less its prediction from fitted taps.
pub(crate) struct Fit;

impl super::block::NumericFront for Fit {
    fn apply(&self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        apply_fit_whole(data, esize, out);
    }
    fn undo(&self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        undo_fit_whole(data, esize, out);
    }
    /// Fit is defined with codec pco only.
    fn wrong_codec(&self, codec: crate::format::Codec) -> Option<FrameError> {
        Some(FitError::Codec { codec }.into())
    }
    fn open<'p>(
        &self,
        h: &FrameHeader,
        payload: &'p [u8],
        kept: &mut super::space::Scratch,
    ) -> Result<super::block::Coded<'p>, FrameError> {
        undo::open(h, payload, kept)
    }
    fn close(
        &self,
        h: &FrameHeader,
        coded: &mut [u8],
        out: &mut [u8],
        native: bool,
        kept: &mut super::space::Scratch,
    ) -> Result<(), FrameError> {
        undo::close(h, coded, out, native, kept);
        Ok(())
    }
}

/// Encodes the block `data` (numbers of `kind` in rows of `row`) with the predictor fitted to
/// it and pco into `c` (its contents replaced), the elements equal to `fill` set apart: the
/// prefix, the fill section (`section` where the caller made it, else made here), pco's file
/// of the residuals. Its buffers ([`Work`], [`Residuals`]) are kept in `scratch`. False (and
/// `c` unspecified) when pco fails or the result is not smaller than the block.
pub(crate) fn encode_block(
    kind: NumKind,
    (row, fill): (usize, Option<u64>),
    section: Option<&[u8]>,
    data: &[u8],
    scratch: &mut Scratch,
    c: &mut Vec<u8>,
) -> bool {
    let e = kind.esize();
    let n = data.len() / e;
    let mut work = std::mem::take(scratch.get::<Work>());
    load(data, e, kind.is_float(), fill, &mut work);
    let p = fit_loaded(e, kind.is_float(), &offsets_for(row, n), &work);
    let words = &mut scratch.get::<Residuals>().0;
    let m = residuals(e, &p, 0..n, words, &mut work);
    *scratch.get::<Work>() = work;
    c.clear();
    p.encode(fill.is_some(), c);
    let sectioned = match (fill, section) {
        (Some(_), Some(section)) => {
            c.extend_from_slice(section);
            true
        }
        (Some(f), None) => super::mask::section(data, e, f, c).is_some(),
        (None, _) => true,
    };
    let words = &scratch.get::<Residuals>().0;
    sectioned
        && compress_residuals_native(kind.unsigned(), words, m, LEVEL, c)
        && c.len() < data.len()
}

/// The `max` preset's trial: on the variable's rows, the block's fill value ([`mask`]'s) set
/// apart; not for floats pco takes as decimals or whole numbers, whose multiplier the
/// residuals lose.
///
/// [`mask`]: super::mask::fill_of
impl FrontEncode for Fit {
    fn encode(&self, block: &Numbers<'_>, scratch: &mut Scratch, out: &mut Vec<u8>) -> bool {
        let e = block.kind.esize();
        let classic = block.mode.is_none_or(|m| m == Mode::Classic);
        let Some(row) = block.row.filter(|_| classic && supports(e)) else {
            return false;
        };
        let fill = super::mask::fill_of(block.data, e);
        encode_block(block.kind, (row, fill), None, block.data, scratch, out)
    }
}

/// The taps [`apply_filter`](super::filter::apply_filter) gives the `fit` filter: the block as one row, so the two
/// elements before the one before.
pub(crate) const WHOLE_FIT_TAPS: [u32; 2] = [2, 3];

/// The `fit` filter as [`apply_filter`](super::filter::apply_filter) gives it: byte 1, the prefix (integers, no fill, the
/// weights fitted for [`WHOLE_FIT_TAPS`]) and the zigzag residuals as big-endian numbers of
/// the element size; byte 0 and the bytes as they are for an element size other than 2, 4 or
/// 8, or a length that is not a whole number of elements.
pub(crate) fn apply_fit_whole(data: &[u8], esize: usize, out: &mut Vec<u8>) {
    out.clear();
    if !supports(esize) || !data.len().is_multiple_of(esize) {
        out.push(0);
        out.extend_from_slice(data);
        return;
    }
    let mut work = Work::default();
    let p = fit(data, esize, false, None, &WHOLE_FIT_TAPS, &mut work);
    let mut words = Vec::new();
    let m = apply_native(data, esize, &p, None, &mut words, &mut work);
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
pub(crate) fn undo_fit_whole(data: &[u8], esize: usize, out: &mut Vec<u8>) {
    use super::mask::element as mask_element;
    out.clear();
    match data.split_first() {
        Some((0, rest)) => out.extend_from_slice(rest),
        Some((1, rest)) if supports(esize) => {
            let Ok((p, false, z)) = FitParams::decode(rest) else {
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
            undo_into(native, esize, &p, None, out, false, &mut Work::default());
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
mod undo;

pub(crate) use undo::undo_into;
