//! The decoder of the `fit` filter: a block rebuilt from its residuals, element by element
//! (the near taps) on sums over stretches of elements (the far taps), the working values held
//! a window at a time.

use super::{
    exact, far_sums, map, runs_of, supports, unzigzag, wrap, FitParams, Lane, Tap, Work, NEAR,
    STRETCH,
};
#[cfg(target_arch = "x86_64")]
use super::{MAGIC, MAX_TAPS};
use crate::codec::block::{front_esize, Coded, Form};
use crate::codec::error::FitError;
use crate::codec::error::FrameError;
use crate::codec::space::Scratch;
use crate::format::FrameHeader;

/// What the prefix of the `fit` frame being decoded says, kept from [`open`] to [`close`],
/// with the buffers of its undoing (reused from frame to frame).
#[derive(Default)]
pub(super) struct UndoScratch {
    /// The predictor.
    params: FitParams,
    /// The fill element, when the block has one.
    fill: Option<u64>,
    /// The bitmap of the fill elements.
    bits: Vec<u8>,
    /// The working values.
    work: Work,
}

impl crate::codec::space::KeptScratch for UndoScratch {
    /// The bytes its buffers hold.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.bits.capacity() + self.work.held()
    }
}

/// Reads the prefix of a `fit` frame's payload (after its CRC check and its codec's, pco),
/// kept in `kept`: checks the element size and the prefix, and reads the fill section. Pco
/// then decodes its residuals, exactly one per element the bitmap does not mark (or per
/// element without one), in native order.
pub(super) fn open<'p>(
    h: &FrameHeader,
    payload: &'p [u8],
    kept: &mut Scratch,
) -> Result<Coded<'p>, FrameError> {
    let esize = front_esize(h, supports, |esize| FitError::ElementSize { esize }.into())?;
    let n = h.decoded_len as usize / esize;
    let (params, has_fill, rest) = FitParams::decode(payload)?;
    let k = kept.get::<UndoScratch>();
    let (fill, m, pco) = if has_fill {
        let (fill, m, pco) = crate::codec::mask::decode(rest, esize, n, &mut k.bits)?;
        (Some(fill), m, pco)
    } else {
        (None, n, rest)
    };
    k.params = params;
    k.fill = fill;
    // At most the block's decoded length, which the layout bounds.
    Ok(Coded {
        payload: pco,
        len: m * esize,
        form: Form::Residuals,
    })
}

/// Rebuilds the block of a `fit` frame into `out` from pco's residuals `z`, with what
/// [`open`] kept.
pub(super) fn close(h: &FrameHeader, z: &[u8], out: &mut [u8], native: bool, kept: &mut Scratch) {
    let k = kept.get::<UndoScratch>();
    let fill = k.fill.map(|f| (f, &k.bits[..]));
    undo_into(
        z,
        usize::from(h.esize),
        &k.params,
        fill,
        out,
        native,
        &mut k.work,
    );
}

/// Rebuilds a block into `out` (n elements of `esize` bytes: 2, 4 or 8) from the residuals in
/// `z` (native numbers of `esize` bytes, one per element that is not the fill, aligned for
/// their type), the predictor and, when the block has one, its fill element and bitmap; `out`
/// is big-endian, or in native order when `native`. Writes nothing for another element size or
/// a misaligned `z`, and stops early (leaving the rest of `out` as it was) when `z` holds too
/// few residuals — the caller checks their count against the bitmap first.
pub(crate) fn undo_into(
    z: &[u8],
    esize: usize,
    p: &FitParams,
    fill: Option<(u64, &[u8])>,
    out: &mut [u8],
    native: bool,
    work: &mut Work,
) {
    #[cfg(target_arch = "x86_64")]
    if crate::codec::word::has_avx2() {
        // SAFETY: this CPU has the instructions `undo_avx2` is compiled for.
        unsafe { undo_avx2(z, esize, p, fill, out, native, work) };
        return;
    }
    undo_any::<false>(z, esize, p, fill, out, native, work);
}

/// [`undo_into`] compiled for CPUs with AVX2, FMA and BMI2: four sums a vector instruction
/// (a multiplication and an addition in one: the same exact sums), byte swaps in one shuffle,
/// shifts by a register without its count in `cl`. Same results.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi2,fma")]
fn undo_avx2(
    z: &[u8],
    esize: usize,
    p: &FitParams,
    fill: Option<(u64, &[u8])>,
    out: &mut [u8],
    native: bool,
    work: &mut Work,
) {
    undo_any::<true>(z, esize, p, fill, out, native, work);
}

/// [`undo_into`] for any CPU (inlined into the versions for particular ones).
#[inline(always)]
pub(super) fn undo_any<const FMA: bool>(
    z: &[u8],
    esize: usize,
    p: &FitParams,
    fill: Option<(u64, &[u8])>,
    out: &mut [u8],
    native: bool,
    work: &mut Work,
) {
    match esize {
        2 => {
            if let Ok(z) = bytemuck::try_cast_slice::<u8, u16>(z) {
                undo_e::<u16, 2, FMA>(z, p, fill, out, native, work);
            }
        }
        4 => {
            if let Ok(z) = bytemuck::try_cast_slice::<u8, u32>(z) {
                undo_e::<u32, 4, FMA>(z, p, fill, out, native, work);
            }
        }
        8 => {
            if let Ok(z) = bytemuck::try_cast_slice::<u8, u64>(z) {
                undo_e::<u64, 8, FMA>(z, p, fill, out, native, work);
            }
        }
        _ => {}
    }
}

#[inline(always)]
fn undo_e<L: Lane, const E: usize, const FMA: bool>(
    z: &[L],
    p: &FitParams,
    fill: Option<(u64, &[u8])>,
    out: &mut [u8],
    native: bool,
    work: &mut Work,
) {
    if E <= 4 {
        let mut v = std::mem::take(&mut work.vf);
        undo_in::<L, f64, E, FMA>(z, p, fill, out, native, work, &mut v);
        work.vf = v;
    } else {
        let mut v = std::mem::take(&mut work.v);
        undo_in::<L, i64, E, FMA>(z, p, fill, out, native, work, &mut v);
        work.v = v;
    }
}

/// [`undo_e`] with the working values in `v` (see [`Slot`]).
#[inline(always)]
fn undo_in<L: Lane, S: Slot, const E: usize, const FMA: bool>(
    z: &[L],
    p: &FitParams,
    fill: Option<(u64, &[u8])>,
    out: &mut [u8],
    native: bool,
    work: &mut Work,
    v: &mut Vec<S>,
) {
    let n = out.len() / E;
    // The working values are held a window at a time (see `window_len`): every element of
    // the window is written before anything reads it (the taps reach back only), so the
    // buffer, grown once per thread, needs no clearing.
    let w = window_len(p, n);
    if v.len() < w {
        v.resize(w, S::default());
    }
    let v = &mut v[..w];
    // Each finished stretch of working values through the map (vectorized) into `out`.
    let float = p.float;
    let mut put = |vals: &[S], from: usize| {
        let o = &mut out[from * E..(from + vals.len()) * E];
        match (native, float) {
            (true, true) => write::<S, E, true, true>(vals, o),
            (true, false) => write::<S, E, true, false>(vals, o),
            (false, true) => write::<S, E, false, true>(vals, o),
            (false, false) => write::<S, E, false, false>(vals, o),
        }
    };
    let done = match fill {
        Some((_, bits)) => rebuild::<L, S, E, true, FMA>(z, p, bits, n, v, &mut put, work),
        None => rebuild::<L, S, E, false, FMA>(z, p, &[], n, v, &mut put, work),
    };
    if !done {
        return;
    }
    // Then the fill elements over them.
    if let Some((f, _)) = fill {
        let mut b = f.to_be_bytes();
        if native && cfg!(target_endian = "little") {
            b = f.to_le_bytes();
            b.copy_within(0..E, 8 - E);
        }
        let f = &b[8 - E..];
        // Between the runs of elements that are not the fill (`rebuild` found them).
        let mut i = 0;
        for &(start, end) in work.runs.iter().chain([(n, n)].iter()) {
            for o in out[i * E..start * E].chunks_exact_mut(E) {
                o.copy_from_slice(f);
            }
            i = end;
        }
    }
}

/// How the decoder holds the working values it rebuilds: as exact f64 for elements of at most
/// 4 bytes (the far taps' sums read them as they are, see [`exact`]), as i64 for 8-byte ones.
trait Slot: Copy + Default {
    /// A working value as held.
    fn put(x: i64) -> Self;
    /// A held working value.
    fn get(self) -> i64;
    /// The held values as the far taps' sums read them (f64 only; empty for i64).
    fn floats(v: &[Self]) -> &[f64];
    /// [`Slot::floats`], to write.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    fn floats_mut(v: &mut [Self]) -> &mut [f64];
}

impl Slot for f64 {
    #[inline(always)]
    fn put(x: i64) -> f64 {
        x as f64
    }
    #[inline(always)]
    fn get(self) -> i64 {
        exact(self)
    }
    fn floats(v: &[f64]) -> &[f64] {
        v
    }
    fn floats_mut(v: &mut [f64]) -> &mut [f64] {
        v
    }
}

impl Slot for i64 {
    #[inline(always)]
    fn put(x: i64) -> i64 {
        x
    }
    #[inline(always)]
    fn get(self) -> i64 {
        self
    }
    fn floats(_: &[i64]) -> &[f64] {
        &[]
    }
    fn floats_mut(_: &mut [i64]) -> &mut [f64] {
        &mut []
    }
}

/// The working values `v` into `out` as elements of `E` bytes: through the order map when
/// `FLOAT`, in native byte order when `NATIVE`, else big-endian.
#[inline(always)]
fn write<S: Slot, const E: usize, const NATIVE: bool, const FLOAT: bool>(v: &[S], out: &mut [u8]) {
    for (&x, o) in v.iter().zip(out.chunks_exact_mut(E)) {
        let u = map::<E>(x.get(), FLOAT) as u64;
        if NATIVE && cfg!(target_endian = "little") {
            o.copy_from_slice(&u.to_le_bytes()[..E]);
        } else {
            o.copy_from_slice(&u.to_be_bytes()[8 - E..]);
        }
    }
}

/// The residuals of a block as the decoder reads them, element by element.
trait Residuals: Sized {
    /// The residual of element i (0 for a fill element).
    fn at(&self, i: usize) -> i64;
    /// Whether element i is the fill.
    fn fill(&self, i: usize) -> bool;
    /// Elements `at..at + len` (element i of the part is element at + i).
    fn part(&self, at: usize, len: usize) -> Self;
}

/// A stretch of elements with fewer than one run of elements that are not the fill in this
/// many is rebuilt a run at a time.
const FEW_RUNS: usize = 16;

/// Residuals already added into the sums the serial loops read, of elements none of which is
/// the fill: 0 for every element.
struct Zeros;

impl Residuals for Zeros {
    #[inline(always)]
    fn at(&self, _: usize) -> i64 {
        0
    }
    #[inline(always)]
    fn fill(&self, _: usize) -> bool {
        false
    }
    #[inline(always)]
    fn part(&self, _: usize, _: usize) -> Self {
        Zeros
    }
}

/// Residuals `R` already added into the sums the serial loops read: 0 for every element, with
/// the fill flags of `R`.
struct Folded<R>(R);

impl<R: Residuals> Residuals for Folded<R> {
    #[inline(always)]
    fn at(&self, _: usize) -> i64 {
        0
    }
    #[inline(always)]
    fn fill(&self, i: usize) -> bool {
        self.0.fill(i)
    }
    #[inline(always)]
    fn part(&self, at: usize, len: usize) -> Self {
        Folded(self.0.part(at, len))
    }
}

/// A block without a fill value: every element has its residual, read as it is needed.
struct Dense<'a, L>(&'a [L]);

impl<L: Lane> Residuals for Dense<'_, L> {
    #[inline(always)]
    fn at(&self, i: usize) -> i64 {
        unzigzag(self.0[i].to_z())
    }
    #[inline(always)]
    fn fill(&self, _: usize) -> bool {
        false
    }
    #[inline(always)]
    fn part(&self, at: usize, len: usize) -> Self {
        Dense(&self.0[at..at + len])
    }
}

/// A block with a fill value: each element's residual laid out beforehand (0 at the fill
/// elements) with its flag.
struct Spread<'a> {
    d: &'a [i64],
    fills: &'a [bool],
}

impl Residuals for Spread<'_> {
    #[inline(always)]
    fn at(&self, i: usize) -> i64 {
        self.d[i]
    }
    #[inline(always)]
    fn fill(&self, i: usize) -> bool {
        self.fills[i]
    }
    #[inline(always)]
    fn part(&self, at: usize, len: usize) -> Self {
        Spread {
            d: &self.d[at..at + len],
            fills: &self.fills[at..at + len],
        }
    }
}

/// How many working values the decoder holds at once for a block of `n` elements: the whole
/// block when it is short, else a window of four times the taps' reach and a stretch, so
/// that the values stay in the CPU's cache and the memory a decoding thread touches does not
/// grow with the block (the values before the reach are written out as the window fills).
pub(super) fn window_len(p: &FitParams, n: usize) -> usize {
    n.min(4 * (p.reach().max(2) + STRETCH))
}

/// The working values of the `n` elements of a block from the residuals `z`, a window `v` at
/// a time, each finished part handed to `put` with the index of its first element; false
/// (and nothing handed over) when `z` runs out first. `FILL`: whether `bits` marks fill
/// elements.
#[inline(always)]
fn rebuild<L: Lane, S: Slot, const E: usize, const FILL: bool, const FMA: bool>(
    z: &[L],
    p: &FitParams,
    bits: &[u8],
    n: usize,
    v: &mut [S],
    put: &mut impl FnMut(&[S], usize),
    work: &mut Work,
) -> bool {
    if !FILL {
        if z.len() < n {
            return false;
        }
        rebuild_with::<S, E, FMA>(&Dense(&z[..n]), None, p, n, v, put, work);
        return true;
    }
    // The residuals in place (0 at the fill elements, flagged in `fills`), checked to be
    // enough before anything is rebuilt: a run of elements that are not the fill at a time.
    let mut d = std::mem::take(&mut work.pred);
    let mut fills = std::mem::take(&mut work.fills);
    let mut runs = std::mem::take(&mut work.runs);
    runs_of(bits, n, &mut runs);
    let enough = runs.iter().map(|(s, e)| e - s).sum::<usize>() <= z.len();
    if enough {
        // Every element is written: no clearing.
        d.resize(n, 0);
        fills.resize(n, false);
        let (mut i, mut zs) = (0, z.iter());
        for &(start, end) in runs.iter().chain([(n, n)].iter()) {
            d[i..start].fill(0);
            fills[i..start].fill(true);
            fills[start..end].fill(false);
            for (x, z) in d[start..end].iter_mut().zip(&mut zs) {
                *x = unzigzag(z.to_z());
            }
            i = end;
        }
        let res = Spread {
            d: &d,
            fills: &fills,
        };
        rebuild_with::<S, E, FMA>(&res, Some(&runs), p, n, v, put, work);
    }
    work.pred = d;
    work.fills = fills;
    work.runs = runs;
    enough
}

/// The working values of the `n` elements of a block from residuals `res` (one for each
/// element), `runs` being those of the elements that are not the fill, for a block with a fill
/// value: held in the window `v` (at least the block, or the taps' reach and a stretch long),
/// whose element j is element `base` + j of the block; when a stretch does not fit, the values
/// before the reach go to `put` and the reach's move to the window's start.
#[inline(always)]
fn rebuild_with<S: Slot, const E: usize, const FMA: bool>(
    res: &impl Residuals,
    runs: Option<&[(usize, usize)]>,
    p: &FitParams,
    n: usize,
    v: &mut [S],
    put: &mut impl FnMut(&[S], usize),
    work: &mut Work,
) {
    let mut prev = 0i64;
    let r = p.reach().min(n);
    // Up to the reach: the element before is the prediction.
    for (i, x) in v[..r].iter_mut().enumerate() {
        if !res.fill(i) {
            prev = wrap::<E>(prev.wrapping_add(res.at(i)));
        }
        *x = S::put(prev);
    }
    if r >= n {
        put(&v[..n], 0);
        return;
    }
    // The values the next stretch may read: the reach, and two back for `two_back`.
    let keep = p.reach().max(2);
    let mut base = 0;
    let (half, shift, sum_w) = (p.half(), p.shift, p.weight_sum());
    let near: Vec<Tap> = p.taps.iter().copied().filter(|t| t.offset < NEAR).collect();
    let far: Vec<Tap> = p
        .taps
        .iter()
        .copied()
        .filter(|t| t.offset >= NEAR)
        .collect();
    #[cfg(target_arch = "x86_64")]
    let far_w: Vec<(usize, f64)> = far
        .iter()
        .map(|t| (t.offset as usize, f64::from(t.weight)))
        .collect();
    // A stretch of elements no far tap reaches into: its far sums are known before it starts.
    let stretch = far
        .iter()
        .map(|t| t.offset as usize)
        .min()
        .unwrap_or(STRETCH)
        .min(STRETCH);
    // A whole number of `Step`'s groups, where it can be: none left over at a stretch's end.
    let stretch = if stretch >= GROUP {
        stretch / GROUP * GROUP
    } else {
        stretch
    };
    // The writer's predictors: one near tap two back, its shift, and a power of two 2^q
    // (q ≤ s) for the weights' sum. Then (t − 2^q·a) / 2^s rounded down is
    // ((t div 2^q) − a) / 2^(s−q) rounded down (both floors of the same number), so the
    // serial path has no multiplication by the sum, and none of a at all when q = s. The
    // sums have no room to wrap only for elements of at most 4 bytes.
    let pow = (E <= 4 && sum_w > 0 && sum_w.count_ones() == 1)
        .then(|| sum_w.trailing_zeros())
        .filter(|&q| q <= u32::from(shift));
    let two_back = match near.as_slice() {
        [t] if t.offset == 2 => Some(i64::from(t.weight)),
        _ => None,
    };
    let (acc, g) = (&mut work.acc, &mut work.acc64);
    let mut at = r;
    let mut run = 0;
    while at < n {
        let len = stretch.min(n - at);
        if at + len - base > v.len() {
            let from = at - keep.min(at);
            put(&v[..from - base], base);
            v.copy_within(from - base..at - base, 0);
            base = from;
        }
        let vat = at - base;
        // The far taps' weighted sum for each element of the stretch (exact, as in
        // `predict`), plus the rounding term.
        if E <= 4 {
            let end = at + len;
            // The runs of the stretch (from the first that ends after it starts), if few:
            // rows of land, say.
            let few = runs.and_then(|runs| {
                while run < runs.len() && runs[run].1 <= at {
                    run += 1;
                }
                let here = runs[run..].iter().take_while(|r| r.0 < end).count();
                (here * FEW_RUNS <= len).then(|| &runs[run..run + here])
            });
            // With the writer's predictors, the far sums and the serial loop in one pass
            // (`Step`; the CPUs that have FMA here have AVX2 and BMI2 as well).
            #[cfg(target_arch = "x86_64")]
            if FMA && few.is_none() {
                let step = Step {
                    far: &far_w,
                    res,
                    half,
                    shift,
                    base,
                };
                if let Some(c) = two_back {
                    if step.fused::<S, E>(c, pow, v, at, len) {
                        at += len;
                        continue;
                    }
                }
            }
            // With each element's residual times 2^s in its sum (vectorized here, not in
            // the serial loop): dᵢ + ⌊t / 2^s⌋ is ⌊(t + dᵢ·2^s) / 2^s⌋, and no sum wraps
            // (|t| < 2^52). Only the far taps' products are summed in floats, in
            // [−2^51, 2^51], `exact`'s range (32 weights of −32768 on values of −2^31 reach
            // 2^51 itself); the rounding term and the residual are added as integers.
            far_sums::<FMA>(&far, S::floats(v), vat, len, 0.0, acc);
            let part = res.part(at, len);
            // Every element of g is written: no clearing (the stretches have one length but
            // the last).
            g.resize(len, 0);
            for (j, (x, &a)) in g.iter_mut().zip(acc.iter()).enumerate() {
                *x = exact(a) + half + (part.at(j) << shift);
            }
            match few {
                // The fill elements between the runs copy the one before, and the runs have
                // no fill element to check.
                Some(few) => {
                    let mut i = at;
                    for &(s, e) in few.iter().chain([(end, end)].iter()) {
                        let (s, e) = (s.max(i), e.min(end));
                        let a = v[i - 1 - base];
                        v[i - base..s - base].fill(a);
                        if e > s {
                            let part = Serial {
                                g: &g[s - at..],
                                res: &Zeros,
                                sum_w,
                                base,
                            };
                            serial::<_, S, E>(&part, two_back, pow, &near, shift, v, s, e - s);
                        }
                        i = e;
                    }
                }
                None => {
                    let all = Serial {
                        g,
                        res: &Folded(res.part(0, n)),
                        sum_w,
                        base,
                    };
                    serial::<_, S, E>(&all, two_back, pow, &near, shift, v, at, len);
                }
            }
        } else {
            g.clear();
            g.resize(len, half);
            for t in &far {
                let (c, o) = (i64::from(t.weight), t.offset as usize);
                for (a, x) in g.iter_mut().zip(&v[vat - o..vat - o + len]) {
                    *a = a.wrapping_add(c.wrapping_mul(x.get()));
                }
            }
            let all = Serial {
                g,
                res,
                sum_w,
                base,
            };
            serial::<_, S, E>(&all, two_back, pow, &near, shift, v, at, len);
        }
        at += len;
    }
    put(&v[..n - base], base);
}

/// The stretch of `len` elements from `at` one at a time, by the shortest of [`Serial`]'s
/// paths for the predictor: `two_back` the weight of its one near tap two back, if that is all
/// it has, `pow` the weights' sum's power of two when it is one (at most the shift).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn serial<R: Residuals, S: Slot, const E: usize>(
    s: &Serial<'_, R>,
    two_back: Option<i64>,
    pow: Option<u32>,
    near: &[Tap],
    shift: u8,
    v: &mut [S],
    at: usize,
    len: usize,
) {
    match (two_back, pow.map(|q| u32::from(shift) - q)) {
        (Some(c), Some(0)) => s.two_back::<S, E, 0>(c, shift, v, at, len),
        (Some(c), Some(1)) => s.two_back::<S, E, 1>(c, shift - 1, v, at, len),
        (Some(c), Some(2)) => s.two_back::<S, E, 2>(c, shift - 2, v, at, len),
        (Some(c), Some(3)) => s.two_back::<S, E, 3>(c, shift - 3, v, at, len),
        (Some(c), _) => s.two_back_times::<S, E>(c, shift, v, at, len),
        _ => s.any::<S, E>(near, shift, v, at, len),
    }
}

/// A stretch of elements to rebuild one at a time: the far taps' sums plus the rounding term
/// (`g`), the residuals and the weights' sum.
struct Serial<'a, R> {
    g: &'a [i64],
    res: &'a R,
    sum_w: i64,
    /// The element of the block that element 0 of the working values' window is.
    base: usize,
}

impl<R: Residuals> Serial<'_, R> {
    /// The stretch of `len` elements from element `at` of the block (of the window `v`, from
    /// its element `at - base`), with one near tap of weight
    /// `c` two back, the weights' sum 2^q and the shift q + `K` (`q` given): vᵢ is
    /// vᵢ₋₁ + dᵢ + ⌊(⌊t / 2^q⌋ − vᵢ₋₁) / 2^K⌋ wrapped, t being the taps' sum (two back and
    /// far) plus the rounding term; for `K` = 0, dᵢ + ⌊t / 2^q⌋ (vᵢ₋₁ cancels out). Only
    /// for elements of at most 4 bytes, whose sums cannot wrap.
    #[inline(always)]
    fn two_back<S: Slot, const E: usize, const K: u32>(
        &self,
        c: i64,
        q: u8,
        v: &mut [S],
        at: usize,
        len: usize,
    ) {
        let va = at - self.base;
        let (mut a, mut b) = (v[va - 1].get(), v[va - 2].get());
        let q = u32::from(q);
        let res = self.res.part(at, len);
        for (k, (x, &g)) in v[va..va + len].iter_mut().zip(&self.g[..len]).enumerate() {
            let t = g.wrapping_add(c.wrapping_mul(b)) >> q;
            let d = res.at(k);
            // vᵢ₋₁ + ⌊(t − vᵢ₋₁) / 2^K⌋ is ⌊(t + (2^K − 1)·vᵢ₋₁) / 2^K⌋: one step less
            // after vᵢ₋₁ (a multiplication by 3 or 7 is an address computation).
            let y = wrap::<E>(d.wrapping_add(t.wrapping_add(((1 << K) - 1) * a) >> K));
            let y = if res.fill(k) { a } else { y };
            *x = S::put(y);
            (a, b) = (y, a);
        }
    }

    /// One near tap of weight `c` two back, any weights' sum W and shift s: vᵢ is
    /// vᵢ₋₁ + dᵢ + ⌊(t − W·vᵢ₋₁) / 2^s⌋ wrapped once (t as in `two_back`), with the two
    /// elements before in registers.
    #[inline(always)]
    fn two_back_times<S: Slot, const E: usize>(
        &self,
        c: i64,
        shift: u8,
        v: &mut [S],
        at: usize,
        len: usize,
    ) {
        let va = at - self.base;
        let (mut a, mut b) = (v[va - 1].get(), v[va - 2].get());
        let (w, shift) = (self.sum_w, u32::from(shift));
        let res = self.res.part(at, len);
        for (k, (x, &g)) in v[va..va + len].iter_mut().zip(&self.g[..len]).enumerate() {
            let t = g.wrapping_add(c.wrapping_mul(b));
            let y = wrap::<E>(
                a.wrapping_add(res.at(k))
                    .wrapping_add(t.wrapping_sub(w.wrapping_mul(a)) >> shift),
            );
            let y = if res.fill(k) { a } else { y };
            *x = S::put(y);
            (a, b) = (y, a);
        }
    }

    /// Any near taps, any shift: element i is vᵢ₋₁ + dᵢ + ⌊(t − W·vᵢ₋₁) / 2^s⌋ wrapped once,
    /// or vᵢ₋₁ for a fill element, W being the weights' sum and t as in `two_back`.
    #[inline(always)]
    fn any<S: Slot, const E: usize>(
        &self,
        near: &[Tap],
        shift: u8,
        v: &mut [S],
        at: usize,
        len: usize,
    ) {
        let w = self.sum_w;
        for k in 0..len {
            // Element i of the block, element j of the window.
            let (i, j) = (at + k, at + k - self.base);
            let t = near.iter().fold(self.g[k], |s, t| {
                s.wrapping_add(i64::from(t.weight).wrapping_mul(v[j - t.offset as usize].get()))
            });
            let a = v[j - 1].get();
            let y = wrap::<E>(
                a.wrapping_add(self.res.at(i))
                    .wrapping_add(t.wrapping_sub(w.wrapping_mul(a)) >> shift),
            );
            v[j] = S::put(if self.res.fill(i) { a } else { y });
        }
    }
}

/// The far taps' sums and the serial loop of a stretch in one pass, [`GROUP`] elements at a
/// time: the sums do not wait on the serial chain (a stretch is no longer than the shortest
/// far offset, so they read only elements before it), and the CPU computes those of a group
/// in the idle slots of the chain of the one before (see [`stretch`]).
#[cfg(target_arch = "x86_64")]
struct Step<'a, R> {
    /// The far taps: offset and weight.
    far: &'a [(usize, f64)],
    res: &'a R,
    half: i64,
    shift: u8,
    /// The element of the block that element 0 of the working values' window is.
    base: usize,
}

/// How many elements [`Step`] sums at once.
const GROUP: usize = 32;

#[cfg(target_arch = "x86_64")]
impl<R: Residuals> Step<'_, R> {
    /// The stretch of `len` elements from `at` as [`Serial::two_back`] rebuilds it (one near
    /// tap of weight `c` two back, the weights' sum 2^q with q = s − K, K = `pow`'s
    /// difference, at most 3), its values computed without wrapping: true when every one of
    /// them is inside the range of `E` bytes, which makes them those of the wrapping formula
    /// (each step the same numbers); false (the stretch to be redone) otherwise, or for
    /// another predictor.
    #[inline(always)]
    fn fused<S: Slot, const E: usize>(
        &self,
        c: i64,
        pow: Option<u32>,
        v: &mut [S],
        at: usize,
        len: usize,
    ) -> bool {
        match pow.map(|q| u32::from(self.shift) - q) {
            Some(0) => self.two_back::<S, E, 0>(c, v, at, len),
            Some(1) => self.two_back::<S, E, 1>(c, v, at, len),
            Some(2) => self.two_back::<S, E, 2>(c, v, at, len),
            Some(3) => self.two_back::<S, E, 3>(c, v, at, len),
            _ => false,
        }
    }

    #[inline(always)]
    fn two_back<S: Slot, const E: usize, const K: u32>(
        &self,
        c: i64,
        v: &mut [S],
        at: usize,
        len: usize,
    ) -> bool {
        let va = at - self.base;
        let (done, rest) = S::floats_mut(v).split_at_mut(va);
        // The float sums `stretch` reads with `exact` hold the far taps' products, the
        // residual times 2^s and the rounding term: with at most 31 far taps (the near tap
        // two back is the 32nd a prefix may hold), weights of at most 2^15 and values and
        // residuals of at most 2^31 in magnitude, they lie in (−2^51, 2^51): at most
        // 31·2^46 + (2^31 − 1)·2^15 + 2^14 = 2^51 − 2^14, at least 31·(−2^46 + 2^15) − 2^46.
        if rest.len() < len || self.far.len() >= MAX_TAPS {
            // Not floats (8-byte elements: not called), or more far taps than a prefix with
            // a near tap holds.
            return false;
        }
        // SAFETY: `undo_avx2` alone (compiled for AVX2, BMI2 and FMA) calls this.
        unsafe { stretch::<R, E, K>(self, c, done, &mut rest[..len], at) }
    }
}

/// [`Step::two_back`] on the window's values before the stretch (`done`) and the stretch's
/// (`rest`, from element `at` of the block): while the serial loop rebuilds a group of
/// elements, the far sums of the next are computed a tap at a time between its steps (close
/// in the order of instructions, so that the CPU runs them while the chain waits).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi2,fma")]
fn stretch<R: Residuals, const E: usize, const K: u32>(
    step: &Step<'_, R>,
    c: i64,
    done: &[f64],
    rest: &mut [f64],
    at: usize,
) -> bool {
    use std::arch::x86_64::*;
    let (va, len) = (done.len(), rest.len());
    // Each far tap's values for the stretch (len of them), all before it.
    let mut xs = [std::ptr::null::<f64>(); MAX_TAPS];
    let mut ws = [_mm256_setzero_pd(); MAX_TAPS];
    let nt = step.far.len();
    for ((x, w), &(o, c)) in xs.iter_mut().zip(&mut ws).zip(step.far) {
        (*x, *w) = (done[va - o..va - o + len].as_ptr(), _mm256_set1_pd(c));
    }
    let (xs, ws) = (&xs[..nt], &ws[..nt]);
    // The serial steps done after each tap's sums.
    let mut upto = [0u8; MAX_TAPS];
    for (t, u) in upto[..nt].iter_mut().enumerate() {
        *u = ((t + 1) * GROUP / nt) as u8;
    }
    let (mut a, mut b) = (exact(done[va - 1]), exact(done[va - 2]));
    let (shift, q) = (u32::from(step.shift), u32::from(step.shift) - K);
    let res = step.res;
    let magic = _mm256_set1_pd(MAGIC);
    let bits = _mm256_set1_epi64x(MAGIC.to_bits() as i64);
    let half = _mm256_set1_pd(step.half as f64);
    let scale = _mm256_set1_pd(f64::from(1u32 << shift));
    let add = |acc: &mut [__m256d; GROUP / 4], x: *const f64, w: __m256d| {
        for (i, a) in acc.iter_mut().enumerate() {
            // SAFETY: x points at GROUP values (see the caller), 4 from 4·i.
            *a = _mm256_fmadd_pd(unsafe { _mm256_loadu_pd(x.add(4 * i)) }, w, *a);
        }
    };
    // `exact`, four at a time.
    let finish = |acc: [__m256d; GROUP / 4], g: &mut [i64; GROUP]| {
        for (i, a) in acc.into_iter().enumerate() {
            let int = _mm256_sub_epi64(_mm256_castpd_si256(_mm256_add_pd(a, magic)), bits);
            // SAFETY: g holds GROUP values, 4 from 4·i.
            unsafe { _mm256_storeu_si256(g.as_mut_ptr().add(4 * i).cast(), int) };
        }
    };
    let mut one = |g: i64, fill: bool| {
        let y = if K == 1 {
            // ⌊(⌊u / 2^q⌋ + a) / 2⌋ is ⌊(u + a·2^q) / 2^s⌋: one step less two back (the
            // longer way round the chain), if u is summed first.
            let mut u = g.wrapping_add(c.wrapping_mul(b));
            // SAFETY: no instructions; u as it is, but the compiler cannot move a's term
            // before it (a step more after a).
            unsafe { std::arch::asm!("/* {0} */", inout(reg) u, options(pure, nomem, nostack)) };
            u.wrapping_add(a << q) >> shift
        } else {
            let t = g.wrapping_add(c.wrapping_mul(b)) >> q;
            t.wrapping_add(((1 << K) - 1i64).wrapping_mul(a)) >> K
        };
        let y = if fill { a } else { y };
        (a, b) = (y, a);
        y
    };
    // Every value's bits above the range of E bytes, once moved into 0..2^(8E).
    let off = _mm256_set1_epi64x(1 << (8 * E - 1));
    let mut any = _mm256_setzero_si256();
    let groups = len / GROUP;
    let mut g = [0i64; GROUP];
    // Step i: the sums of group i (if any), and the serial steps of group i − 1 (if any).
    for i in 0..(groups + 1) * usize::from(groups > 0) {
        let next = i < groups;
        let mut acc = [_mm256_setzero_pd(); GROUP / 4];
        if next {
            // The residuals of the group (times 2^s) plus the rounding term: where its sums
            // start.
            let part = res.part(at + i * GROUP, GROUP);
            // 32-bit numbers (E ≤ 4: |dᵢ| ≤ 2^31), to floats four at a time.
            let d: [i32; GROUP] = std::array::from_fn(|l| part.at(l) as i32);
            for (j, a) in acc.iter_mut().enumerate() {
                // SAFETY: d holds GROUP values, 4 from 4·j.
                let d = unsafe { _mm_loadu_si128(d.as_ptr().add(4 * j).cast()) };
                *a = _mm256_fmadd_pd(_mm256_cvtepi32_pd(d), scale, half);
            }
        }
        let k = i.max(1) * GROUP - GROUP;
        let part = res.part(at + k, GROUP);
        let mut y = [0i64; GROUP];
        let mut l = if i > 0 { 0 } else { GROUP };
        for ((x, &w), &u) in xs.iter().zip(ws).zip(&upto) {
            if next {
                // SAFETY: x points at the `len` values of a tap, and next means
                // (i + 1)·GROUP ≤ len.
                add(&mut acc, unsafe { x.add(i * GROUP) }, w);
            }
            while l < usize::from(u) {
                y[l] = one(g[l], part.fill(l));
                l += 1;
            }
        }
        while l < GROUP {
            y[l] = one(g[l], part.fill(l));
            l += 1;
        }
        if next {
            finish(acc, &mut g);
        }
        if i > 0 {
            // The values as floats (exact for |y| < 2^51), and their range.
            for (j, o) in rest[k..k + GROUP].chunks_exact_mut(4).enumerate() {
                // SAFETY: y holds GROUP values, 4 from 4·j; o holds 4.
                unsafe {
                    let y = _mm256_loadu_si256(y.as_ptr().add(4 * j).cast());
                    any = _mm256_or_si256(any, _mm256_add_epi64(y, off));
                    let f = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_add_epi64(y, bits)), magic);
                    _mm256_storeu_pd(o.as_mut_ptr(), f);
                }
            }
        }
    }
    let any = _mm_or_si128(
        _mm256_castsi256_si128(any),
        _mm256_extracti128_si256::<1>(any),
    );
    let mut out = (_mm_cvtsi128_si64(any) | _mm_extract_epi64::<1>(any)) as u64;
    let whole = groups * GROUP;
    for (k, x) in (whole..len).zip(&mut rest[whole..]) {
        let sum = step.far.iter().fold(step.half as f64, |s, &(o, w)| {
            done[va - o + k].mul_add(w, s)
        });
        let y = one(exact(sum) + (res.at(at + k) << shift), res.fill(at + k));
        out |= y.wrapping_add(1 << (8 * E - 1)) as u64;
        *x = y as f64;
    }
    out >> (8 * E) == 0
}
