//! The `context` codec (id 6): numbers of 2, 4 or 8 bytes coded as prediction residuals with an
//! adaptive binary range coder whose probabilities depend on the sizes of the neighbours'
//! residuals (design/FORMAT.md specifies it byte by byte).
//!
//! Each element, read as a big-endian unsigned integer of its width w (floats first mapped to
//! integers that keep their order), is predicted from the element before it (left) and the one a
//! row back (up), and the prediction's error is zigzag-encoded into z. The bit length k of z
//! (0 to w) is coded with a binary tree of adaptive probabilities chosen by the bit lengths of
//! the left and up residuals, the two bits of z just below its leading one with probabilities
//! chosen by k, and z's k − 3 lower bits go as they are into a second stream. Where noise varies over a
//! field (land against sea, cold against warm, ice edges), the neighbours' residual sizes say how
//! many bits the next residual needs, which byte filters, zstd, lzma and pco do not see.
//!
//! It decodes at about a tenth of zstd's speed, so only the `max` preset writes it.

use super::error::ContextError;
use super::error::FrameError;
use crate::format::FrameHeader;

/// Bytes before the range coder's stream in a payload: the number type, the predictor, the row
/// length (u32, big-endian) and the range coder stream's length (u32, big-endian).
pub(crate) const PREFIX: usize = 10;

/// Probabilities are 12-bit fixed-point chances of a 0 bit.
const PROB_BITS: u32 = 12;
/// Each probability is the mean of two estimates (16-bit fixed point) that move 1/2^FAST and
/// 1/2^SLOW of the way towards each bit coded: one follows local change, the other averages.
const FAST: u32 = 4;
const SLOW: u32 = 7;
/// A new probability: a 0 bit and a 1 bit equally likely.
const PROB_INIT: Prob = Prob([1 << 15, 1 << 15]);

/// The two estimates of a probability.
#[derive(Clone, Copy)]
struct Prob([u16; 2]);

impl Prob {
    /// The 12-bit chance of a 0 bit, 1 to 4095.
    #[inline]
    fn p(self) -> u32 {
        ((u32::from(self.0[0]) + u32::from(self.0[1])) >> 5).clamp(1, 4095)
    }

    #[inline]
    fn update(&mut self, bit: u32) {
        if bit == 0 {
            self.0[0] += (u16::MAX - self.0[0]) >> FAST;
            self.0[1] += (u16::MAX - self.0[1]) >> SLOW;
        } else {
            self.0[0] -= self.0[0] >> FAST;
            self.0[1] -= self.0[1] >> SLOW;
        }
    }
}

/// The range is renormalized (shifted by a byte) when it falls below this.
const TOP: u32 = 1 << 24;

/// How each element is predicted (the payload's second byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ContextPredictor {
    /// The element before (0 for the block's first).
    Left = 0,
    /// The floor of the mean of left and up (left where there is no up).
    Mean = 1,
    /// left + up − up-left, wrapping (left where there is no up-left).
    Lorenzo = 2,
}

impl ContextPredictor {
    fn from_id(id: u8) -> Option<ContextPredictor> {
        match id {
            0 => Some(ContextPredictor::Left),
            1 => Some(ContextPredictor::Mean),
            2 => Some(ContextPredictor::Lorenzo),
            _ => None,
        }
    }
}

/// Whether the codec is defined for elements of `esize` bytes (2, 4 and 8).
pub(crate) fn supports(esize: usize) -> bool {
    matches!(esize, 2 | 4 | 8)
}

/// The numbers' width w in bits, the mask of w ones, and T, the bits of the tree that codes a
/// bit length (0 to w): the least T with 2^T > w.
fn widths(esize: usize) -> (u32, u64, u32) {
    let w = 8 * esize as u32;
    let mask = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
    (w, mask, 32 - w.leading_zeros())
}

/// The integers the coder works on: the elements (big-endian, `E` bytes) of `data`, floats
/// mapped by [`to_ordered`].
fn integers<const E: usize>(data: &[u8], float: bool) -> Vec<u64> {
    let (w, mask, _) = widths(E);
    data.chunks_exact(E)
        .map(|e| {
            let mut b = [0u8; 8];
            b[8 - E..].copy_from_slice(e);
            let v = u64::from_be_bytes(b);
            if float {
                to_ordered(v, w, mask)
            } else {
                v
            }
        })
        .collect()
}

/// The order-keeping integer of a float's bits `v` (w bits): negative floats have all bits
/// flipped, the others the sign bit set.
#[inline]
fn to_ordered(v: u64, w: u32, mask: u64) -> u64 {
    let sign = 1u64 << (w - 1);
    if v & sign != 0 {
        !v & mask
    } else {
        v | sign
    }
}

/// The inverse of [`to_ordered`].
#[inline]
fn from_ordered(u: u64, w: u32, mask: u64) -> u64 {
    let sign = 1u64 << (w - 1);
    if u & sign != 0 {
        u & !sign
    } else {
        !u & mask
    }
}

/// The prediction of element `i` from the integers `u` before it, with rows of `row` elements.
#[inline]
fn predict(p: ContextPredictor, u: &[u64], i: usize, row: usize, mask: u64) -> u64 {
    if i == 0 {
        return 0;
    }
    let left = u[i - 1];
    match p {
        ContextPredictor::Left => left,
        ContextPredictor::Mean if i >= row => {
            let up = u[i - row];
            (left >> 1) + (up >> 1) + (left & up & 1)
        }
        ContextPredictor::Lorenzo if i > row => {
            left.wrapping_add(u[i - row]).wrapping_sub(u[i - row - 1]) & mask
        }
        _ => left,
    }
}

/// The zigzag code of the w-bit difference `d` (viewed as signed): 0, −1, 1, −2, ... become
/// 0, 1, 2, 3, ...
#[inline]
fn zigzag(d: u64, w: u32, mask: u64) -> u64 {
    let neg = (d >> (w - 1)) & 1;
    ((d << 1) & mask) ^ (neg.wrapping_neg() & mask)
}

/// The inverse of [`zigzag`].
#[inline]
fn unzigzag(z: u64, mask: u64) -> u64 {
    (z >> 1) ^ ((z & 1).wrapping_neg() & mask)
}

/// Bit length of `z`: 0 for 0.
#[inline]
fn bit_len(z: u64) -> u32 {
    64 - z.leading_zeros()
}

/// The adaptive probabilities: for each context ((w + 1)² pairs of the left and up residuals'
/// bit lengths), the nodes 1 to 2^T − 1 of the bit-length tree (node 0 unused); for each bit
/// length k, four: the first bit below the leading one (index 1), and the second after a 0
/// (2) or a 1 (3).
struct Model {
    tree: Vec<Prob>,
    top: Vec<Prob>,
}

impl Model {
    /// The model at the start of a block: each context's tree starts from a prior that
    /// expects bit lengths near the mean of the two neighbours' (see [`prior`]), the top bits
    /// at even chances.
    fn new(w: u32, tree_bits: u32) -> Model {
        static PRIORS: [std::sync::OnceLock<Vec<Prob>>; 3] =
            [const { std::sync::OnceLock::new() }; 3];
        let side = w as usize + 1;
        let tree = PRIORS[(w / 16).trailing_zeros() as usize % 3]
            .get_or_init(|| {
                let leaves = 1usize << tree_bits;
                let mut tree = vec![PROB_INIT; (side * side) << tree_bits];
                for (c, probs) in tree.chunks_exact_mut(leaves).enumerate() {
                    prior(c / side + c % side, w, probs);
                }
                tree
            })
            .clone();
        Model {
            tree,
            top: vec![PROB_INIT; 4 * side],
        }
    }
}

/// Sets the nodes 1 to 2^T − 1 of a bit-length tree (`probs`, 2^T long) to the prior of a
/// context whose two neighbours' bit lengths add up to `sum`: bit length k (0 to w) weighs
/// 2^(48 − min(|2k − sum|, 48)), lengths above w weigh 0, and a node's chance of a 0 bit is
/// the weight of its lower half over its whole subtree's, as 16-bit estimates
/// floor(65535 · lower / whole) clamped to 64 ..= 65471 (both estimates alike).
fn prior(sum: usize, w: u32, probs: &mut [Prob]) {
    let leaves = probs.len();
    let weight = |k: usize| -> u64 {
        if k > w as usize {
            0
        } else {
            // 2^(48 − d/2): a factor 1/2 a unit of k away from the mean, √2 ≈ 181/128 for
            // half units.
            let d = (2 * k).abs_diff(sum).min(96);
            if d.is_multiple_of(2) {
                1u64 << (48 - d / 2)
            } else {
                (181u64 << (48 - d.div_ceil(2))) >> 7
            }
        }
    };
    for (node, prob) in probs.iter_mut().enumerate().skip(1) {
        let depth = usize::BITS - 1 - node.leading_zeros();
        let span = leaves >> depth;
        let lo = (node - (1 << depth)) * span;
        let lower: u128 = (lo..lo + span / 2).map(|k| u128::from(weight(k))).sum();
        let whole: u128 = lower
            + (lo + span / 2..lo + span)
                .map(|k| u128::from(weight(k)))
                .sum::<u128>();
        let p = (65535 * lower)
            .checked_div(whole)
            .map_or(1 << 15, |p| p.clamp(64, 65471) as u16);
        *prob = Prob([p, p]);
    }
}

/// The bit lengths' context of element `i`: the left residual's bit length a and the up
/// residual's b (a again where there is no up), as a · (w + 1) + b.
#[inline]
fn context(ks: &[u8], i: usize, row: usize, w: u32) -> usize {
    let left = if i > 0 { ks[i - 1] } else { 0 };
    let up = if i >= row { ks[i - row] } else { left };
    usize::from(left) * (w as usize + 1) + usize::from(up)
}

/// The range encoder (LZMA's): `low` holds 33 bits, a carry propagates into the bytes held back
/// (`cache` and `pending` bytes of 0xFF).
struct ContextEncoder {
    low: u64,
    range: u32,
    cache: u8,
    pending: u64,
    out: Vec<u8>,
}

impl ContextEncoder {
    fn new(out: Vec<u8>) -> ContextEncoder {
        ContextEncoder {
            low: 0,
            range: u32::MAX,
            cache: 0,
            pending: 1,
            out,
        }
    }

    #[inline(always)]
    fn bit(&mut self, p: &mut Prob, bit: u32) {
        let bound = (self.range >> PROB_BITS) * p.p();
        p.update(bit);
        if bit == 0 {
            self.range = bound;
        } else {
            self.low += u64::from(bound);
            self.range -= bound;
        }
        while self.range < TOP {
            self.range <<= 8;
            self.shift_low();
        }
    }

    #[inline(never)]
    fn shift_low(&mut self) {
        if self.low < 0xFF00_0000 || self.low > 0xFFFF_FFFF {
            let carry = (self.low >> 32) as u8;
            let mut b = self.cache;
            loop {
                self.out.push(b.wrapping_add(carry));
                b = 0xFF;
                self.pending -= 1;
                if self.pending == 0 {
                    break;
                }
            }
            self.cache = (self.low >> 24) as u8;
        }
        self.pending += 1;
        self.low = (self.low & 0x00FF_FFFF) << 8;
    }

    fn finish(mut self) -> Vec<u8> {
        for _ in 0..5 {
            self.shift_low();
        }
        self.out
    }
}

/// The range decoder.
struct Decoder<'a> {
    code: u32,
    range: u32,
    data: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    fn new(data: &'a [u8]) -> Result<Decoder<'a>, ContextError> {
        if data.len() < 5 {
            return Err(ContextError::RangeShort { len: data.len() });
        }
        if data[0] != 0 {
            return Err(ContextError::RangeFirstByte { byte: data[0] });
        }
        Ok(Decoder {
            code: u32::from_be_bytes([data[1], data[2], data[3], data[4]]),
            range: u32::MAX,
            data,
            pos: 5,
        })
    }

    #[inline]
    fn bit(&mut self, p: &mut Prob) -> Result<u32, ContextError> {
        let bound = (self.range >> PROB_BITS) * p.p();
        let bit = if self.code < bound {
            self.range = bound;
            0
        } else {
            self.code -= bound;
            self.range -= bound;
            1
        };
        p.update(bit);
        while self.range < TOP {
            let Some(&b) = self.data.get(self.pos) else {
                return Err(ContextError::RangeShort {
                    len: self.data.len(),
                });
            };
            self.pos += 1;
            self.range <<= 8;
            self.code = (self.code << 8) | u32::from(b);
        }
        Ok(bit)
    }
}

/// Writes bits most significant first.
struct BitWriter {
    acc: u64,
    n: u32,
    out: Vec<u8>,
}

impl BitWriter {
    /// Appends the low `width` bits of `v` (`width` ≤ 62).
    #[inline]
    fn put(&mut self, v: u64, width: u32) {
        if width > 32 {
            self.put(v >> 32, width - 32);
            self.put(v & 0xFFFF_FFFF, 32);
            return;
        }
        self.acc = (self.acc << width) | v;
        self.n += width;
        while self.n >= 8 {
            self.n -= 8;
            self.out.push((self.acc >> self.n) as u8);
        }
        self.acc &= (1u64 << self.n) - 1;
    }

    /// The bytes, the last one padded with zero bits.
    fn finish(mut self) -> Vec<u8> {
        if self.n > 0 {
            self.out.push((self.acc << (8 - self.n)) as u8);
        }
        self.out
    }
}

/// Reads bits most significant first.
struct BitReader<'a> {
    data: &'a [u8],
    pos: usize,
    acc: u64,
    n: u32,
}

impl BitReader<'_> {
    /// The next `width` bits (`width` ≤ 62).
    #[inline]
    fn get(&mut self, width: u32) -> Result<u64, ContextError> {
        if width > 32 {
            let hi = self.get(width - 32)?;
            return Ok((hi << 32) | self.get(32)?);
        }
        while self.n < width {
            let Some(&b) = self.data.get(self.pos) else {
                return Err(ContextError::RawShort {
                    len: self.data.len(),
                });
            };
            self.pos += 1;
            self.acc = (self.acc << 8) | u64::from(b);
            self.n += 8;
        }
        self.n -= width;
        let v = (self.acc >> self.n) & ((1u64 << width) - 1);
        self.acc &= (1u64 << self.n) - 1;
        Ok(v)
    }
}

/// An estimate of the payload's bytes with predictor `p` for the integers `u` of
/// [`integers`] (of `esize` bytes): the bit lengths' entropy in their contexts (counted over the
/// block), two coded bits and the low bits.
fn estimate(u: &[u64], esize: usize, row: usize, p: ContextPredictor) -> f64 {
    let (w, mask, _) = widths(esize);
    let n = u.len();
    let side = w as usize + 1;
    let mut ks = vec![0u8; n];
    let mut counts = vec![0u32; side * side * side];
    for i in 0..n {
        let d = u[i].wrapping_sub(predict(p, u, i, row, mask)) & mask;
        let k = bit_len(zigzag(d, w, mask));
        ks[i] = k as u8;
        counts[context(&ks, i, row, w) * side + k as usize] += 1;
    }
    let mut bits = 0f64;
    for ctx in counts.chunks_exact(side) {
        let total = ctx.iter().map(|&c| u64::from(c)).sum::<u64>();
        for (k, &c) in ctx.iter().enumerate().filter(|&(_, &c)| c > 0) {
            let c = f64::from(c);
            let coded = (k as f64 - 1.0).clamp(0.0, 2.0) + (k as f64 - 3.0).max(0.0);
            bits += c * (coded - (c / total as f64).log2());
        }
    }
    bits / 8.0
}

/// How much smaller than its [`estimate`] a payload may come out (the adaptive coder, the two
/// coded bits): a predictor whose estimate is not below `limit` / this is not tried.
const ESTIMATE_MARGIN: f64 = 0.98;

/// Predictors whose estimate exceeds the best one's by more than this fraction are not tried.
const RANK_MARGIN: f64 = 1.01;

/// The predictors worth trying on `data` (rows of `row` elements; those that use up only with
/// a row shorter than the block) for a payload under `limit` bytes: those whose [`estimate`]
/// promises that and is within [`RANK_MARGIN`] of the best, the smallest estimate first.
pub(crate) fn candidates(
    data: &[u8],
    esize: usize,
    float: bool,
    row: usize,
    limit: usize,
) -> Vec<ContextPredictor> {
    let u = match esize {
        2 => integers::<2>(data, float),
        4 => integers::<4>(data, float),
        8 => integers::<8>(data, float),
        _ => return Vec::new(),
    };
    let mut all = vec![ContextPredictor::Left];
    if row < u.len() {
        all.extend([ContextPredictor::Mean, ContextPredictor::Lorenzo]);
    }
    let mut all: Vec<(ContextPredictor, f64)> = all
        .into_iter()
        .map(|p| (p, estimate(&u, esize, row, p)))
        .collect();
    all.sort_by(|a, b| a.1.total_cmp(&b.1));
    let best = all[0].1;
    all.retain(|&(_, est)| ESTIMATE_MARGIN * est < limit as f64 && est <= RANK_MARGIN * best);
    all.into_iter().map(|(p, _)| p).collect()
}

/// Encodes `data` with each of the [`candidates`] whose low-bits stream leaves room under
/// `limit`, into `out` (replacing it): the predictor of the smallest payload, or `None` (and
/// `out` unspecified) when no payload is smaller than `limit` bytes.
pub(crate) fn compress_best(
    data: &[u8],
    esize: usize,
    float: bool,
    row: usize,
    mut limit: usize,
    out: &mut Vec<u8>,
) -> Option<ContextPredictor> {
    let mut best = None;
    let mut z = Vec::new();
    for p in candidates(data, esize, float, row, limit) {
        if compress(data, esize, float, row, p, limit, &mut z) {
            limit = z.len();
            std::mem::swap(out, &mut z);
            best = Some(p);
        }
    }
    best
}

/// Encodes `data` (elements of `esize` bytes, 2, 4 or 8: IEEE floats when `float`, else
/// integers; rows of `row` elements, at least 1) with predictor `p` into `out` (replacing it).
/// False (and `out` unspecified) when the payload would not be smaller than `limit` bytes or
/// the block is not whole elements.
pub(crate) fn compress(
    data: &[u8],
    esize: usize,
    float: bool,
    row: usize,
    p: ContextPredictor,
    limit: usize,
    out: &mut Vec<u8>,
) -> bool {
    out.clear();
    if !supports(esize) || !data.len().is_multiple_of(esize) || row == 0 {
        return false;
    }
    let Ok(row32) = u32::try_from(row) else {
        return false;
    };
    let mut rc = ContextEncoder::new(Vec::with_capacity(data.len() / 4));
    let mut raw = BitWriter {
        acc: 0,
        n: 0,
        out: Vec::with_capacity(data.len() / 4),
    };
    let how = (p, float, row, limit);
    let done = match esize {
        2 => encode_elements::<2>(data, how, &mut rc, &mut raw),
        4 => encode_elements::<4>(data, how, &mut rc, &mut raw),
        _ => encode_elements::<8>(data, how, &mut rc, &mut raw),
    };
    if !done {
        return false;
    }
    let rc = rc.finish();
    let raw = raw.finish();
    let Ok(rc_len) = u32::try_from(rc.len()) else {
        return false;
    };
    if PREFIX + rc.len() + raw.len() >= limit {
        return false;
    }
    out.push(u8::from(float));
    out.push(p as u8);
    out.extend_from_slice(&row32.to_be_bytes());
    out.extend_from_slice(&rc_len.to_be_bytes());
    out.extend_from_slice(&rc);
    out.extend_from_slice(&raw);
    true
}

/// Encodes the elements (of `E` bytes) of `data` into the two streams with the predictor, the
/// number type and the row length of `how`; false when their bytes reach its limit first.
fn encode_elements<const E: usize>(
    data: &[u8],
    (p, float, row, limit): (ContextPredictor, bool, usize, usize),
    rc: &mut ContextEncoder,
    raw: &mut BitWriter,
) -> bool {
    let (w, mask, tree_bits) = widths(E);
    let n = data.len() / E;
    let mut model = Model::new(w, tree_bits);
    let mut u = Vec::with_capacity(n);
    let mut ks = vec![0u8; n];
    for (i, e) in data.chunks_exact(E).enumerate() {
        let mut b = [0u8; 8];
        b[8 - E..].copy_from_slice(e);
        let v = u64::from_be_bytes(b);
        u.push(if float { to_ordered(v, w, mask) } else { v });
        let d = u[i].wrapping_sub(predict(p, &u, i, row, mask)) & mask;
        let z = zigzag(d, w, mask);
        let k = bit_len(z);
        let ctx = context(&ks, i, row, w) << tree_bits;
        let tree = &mut model.tree[ctx..ctx + (1 << tree_bits)];
        let mut node = 1usize;
        for b in (0..tree_bits).rev() {
            let bit = (k >> b) & 1;
            rc.bit(&mut tree[node], bit);
            node = 2 * node + bit as usize;
        }
        if k >= 2 {
            let top = &mut model.top[4 * k as usize..4 * k as usize + 4];
            let b1 = ((z >> (k - 2)) & 1) as u32;
            rc.bit(&mut top[1], b1);
            if k >= 3 {
                let b2 = ((z >> (k - 3)) & 1) as u32;
                rc.bit(&mut top[2 + b1 as usize], b2);
                if k > 3 {
                    raw.put(z & ((1u64 << (k - 3)) - 1), k - 3);
                }
            }
        }
        ks[i] = k as u8;
        if i % 4096 == 4095 && PREFIX + rc.out.len() + raw.out.len() >= limit {
            return false;
        }
    }
    true
}

/// Decodes a payload into `out` (the block: a whole number of elements of `esize` bytes),
/// big-endian, or in native byte order when `native`.
///
/// # Errors
///
/// A [`ContextError`] saying what is wrong with the payload; `out` is then unspecified.
pub(crate) fn decompress_into(
    payload: &[u8],
    esize: usize,
    out: &mut [u8],
    native: bool,
) -> Result<(), ContextError> {
    if !supports(esize) {
        return Err(ContextError::ElementSize { esize });
    }
    if !out.len().is_multiple_of(esize) {
        return Err(ContextError::PartialElement {
            len: out.len(),
            esize,
        });
    }
    if payload.len() < PREFIX {
        return Err(ContextError::Prefix { len: payload.len() });
    }
    let float = match payload[0] {
        0 => false,
        1 => true,
        t => return Err(ContextError::NumberType { byte: t }),
    };
    let p = ContextPredictor::from_id(payload[1])
        .ok_or(ContextError::Predictor { byte: payload[1] })?;
    let row = u32::from_be_bytes([payload[2], payload[3], payload[4], payload[5]]) as usize;
    if row == 0 {
        return Err(ContextError::ZeroRow);
    }
    let rc_len = u32::from_be_bytes([payload[6], payload[7], payload[8], payload[9]]) as usize;
    let rest = &payload[PREFIX..];
    if rc_len > rest.len() {
        return Err(ContextError::RangeLength {
            stated: rc_len,
            left: rest.len(),
        });
    }
    let (rc_bytes, raw_bytes) = rest.split_at(rc_len);
    let mut rc = Decoder::new(rc_bytes)?;
    let mut raw = BitReader {
        data: raw_bytes,
        pos: 0,
        acc: 0,
        n: 0,
    };
    let how = (p, float, native, row);
    match esize {
        2 => decode_elements::<2>(how, &mut rc, &mut raw, out)?,
        4 => decode_elements::<4>(how, &mut rc, &mut raw, out)?,
        _ => decode_elements::<8>(how, &mut rc, &mut raw, out)?,
    }
    if rc.pos != rc_bytes.len() {
        return Err(ContextError::RangeTrailing {
            used: rc.pos,
            len: rc_bytes.len(),
        });
    }
    if raw.pos != raw_bytes.len() || raw.acc != 0 {
        return Err(ContextError::RawTrailing {
            used: raw.pos,
            len: raw_bytes.len(),
        });
    }
    Ok(())
}

/// Decodes the elements of `out` (of `E` bytes) from the two streams, with the predictor, the
/// number type, the byte order and the row length of `how`.
fn decode_elements<const E: usize>(
    (p, float, native, row): (ContextPredictor, bool, bool, usize),
    rc: &mut Decoder<'_>,
    raw: &mut BitReader<'_>,
    out: &mut [u8],
) -> Result<(), ContextError> {
    let (w, mask, tree_bits) = widths(E);
    let n = out.len() / E;
    let mut model = Model::new(w, tree_bits);
    let mut u: Vec<u64> = Vec::with_capacity(n);
    let mut ks = vec![0u8; n];
    for (i, o) in out.chunks_exact_mut(E).enumerate() {
        let ctx = context(&ks, i, row, w) << tree_bits;
        let tree = &mut model.tree[ctx..ctx + (1 << tree_bits)];
        let mut node = 1usize;
        for _ in 0..tree_bits {
            node = 2 * node + rc.bit(&mut tree[node])? as usize;
        }
        let k = (node - (1usize << tree_bits)) as u32;
        if k > w {
            return Err(ContextError::BitLength {
                element: i,
                bits: k,
                width: w,
            });
        }
        let z = match k {
            0 => 0,
            1 => 1,
            2 => 2 | u64::from(rc.bit(&mut model.top[9])?),
            _ => {
                let top = &mut model.top[4 * k as usize..4 * k as usize + 4];
                let b1 = rc.bit(&mut top[1])?;
                let b2 = rc.bit(&mut top[2 + b1 as usize])?;
                let low = if k > 3 { raw.get(k - 3)? } else { 0 };
                (1u64 << (k - 1)) | (u64::from(b1) << (k - 2)) | (u64::from(b2) << (k - 3)) | low
            }
        };
        ks[i] = k as u8;
        let x = unzigzag(z, mask).wrapping_add(predict(p, &u, i, row, mask)) & mask;
        u.push(x);
        let v = if float { from_ordered(x, w, mask) } else { x };
        let bytes = if native {
            v.to_ne_bytes()
        } else {
            v.to_be_bytes()
        };
        if native && cfg!(target_endian = "little") {
            o.copy_from_slice(&bytes[..E]);
        } else {
            o.copy_from_slice(&bytes[8 - E..]);
        }
    }
    Ok(())
}

/// Codec `context`: the block's numbers, modelled and range coded.
pub(crate) struct Context;

impl super::block::BlockCodec for Context {
    fn decompress_into(
        &self,
        h: &FrameHeader,
        payload: &[u8],
        out: &mut [u8],
        _scratch: &mut super::space::Scratch,
    ) -> Result<(), FrameError> {
        decompress_into(payload, usize::from(h.esize), out, false)?;
        Ok(())
    }
    fn decode_into(
        &self,
        h: &FrameHeader,
        payload: &[u8],
        out: &mut [u8],
        native: bool,
        _space: &mut super::space::Space,
    ) -> Result<(), FrameError> {
        decompress_into(payload, usize::from(h.esize), out, native)?;
        Ok(())
    }
    /// Context frames have filter none only.
    fn wrong_filter(&self, h: &FrameHeader) -> FrameError {
        ContextError::Filter { filter: h.filter }.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(data: &[u8], esize: usize, float: bool, row: usize) -> usize {
        let mut out = Vec::new();
        compress_best(data, esize, float, row, usize::MAX, &mut out).unwrap();
        let mut back = vec![0u8; data.len()];
        decompress_into(&out, esize, &mut back, false).unwrap();
        assert_eq!(back, data);
        out.len()
    }

    #[test]
    fn every_width_and_predictor_round_trips() {
        let mut x = 1u64;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 11
        };
        for esize in [2, 4, 8] {
            for float in [false, true] {
                if float && esize == 2 {
                    continue;
                }
                let data: Vec<u8> = (0..5000u64)
                    .flat_map(|i| {
                        let v = if float && esize == 4 {
                            u64::from(
                                ((i % 70) as f32 * 0.3 + (next() % 100) as f32 * 1e-3).to_bits(),
                            )
                        } else if float {
                            ((i % 70) as f64 * 0.3 - (next() % 100) as f64 * 1e-3).to_bits()
                        } else {
                            (i % 70 * 3).wrapping_add(next() % 7).wrapping_sub(9)
                        };
                        v.to_be_bytes()[8 - esize..].to_vec()
                    })
                    .collect();
                for p in [
                    ContextPredictor::Left,
                    ContextPredictor::Mean,
                    ContextPredictor::Lorenzo,
                ] {
                    for row in [1, 70, 5000, 9999] {
                        let mut out = Vec::new();
                        assert!(compress(&data, esize, float, row, p, usize::MAX, &mut out));
                        let mut back = vec![0u8; data.len()];
                        decompress_into(&out, esize, &mut back, false).unwrap();
                        assert_eq!(back, data, "{esize} {float} {p:?} {row}");
                    }
                }
                assert!(round_trip(&data, esize, float, 70) < data.len());
            }
        }
    }

    /// A bit length above the numbers' width (the tree can code up to 2^T − 1) is refused,
    /// naming the element; so are cut and damaged payloads, without a panic.
    #[test]
    fn forged_and_damaged_payloads_are_refused() {
        // Element 0 of 16-bit integers with a bit length of 20 (T = 5 tree bits).
        let (w, _, tree_bits) = widths(2);
        let mut model = Model::new(w, tree_bits);
        let mut rc = ContextEncoder::new(Vec::new());
        let mut node = 1;
        for b in (0..tree_bits).rev() {
            let bit = (20 >> b) & 1;
            rc.bit(&mut model.tree[node], bit);
            node = 2 * node + bit as usize;
        }
        let rc = rc.finish();
        let mut payload = vec![0, 0, 0, 0, 0, 1];
        payload.extend_from_slice(&(rc.len() as u32).to_be_bytes());
        payload.extend_from_slice(&rc);
        payload.extend_from_slice(&[0; 8]);
        let mut out = [0u8; 4];
        assert_eq!(
            decompress_into(&payload, 2, &mut out, false),
            Err(ContextError::BitLength {
                element: 0,
                bits: 20,
                width: 16
            })
        );
        // A real payload, cut at every length and with every byte flipped.
        let data: Vec<u8> = (0..3000u32)
            .flat_map(|i| ((i as f32 * 0.01).sin() * 100.0 + (i % 7) as f32 * 0.001).to_be_bytes())
            .collect();
        let mut good = Vec::new();
        compress_best(&data, 4, true, 100, usize::MAX, &mut good).unwrap();
        let mut back = vec![0u8; data.len()];
        for n in 0..good.len() {
            assert!(
                decompress_into(&good[..n], 4, &mut back, false).is_err(),
                "cut at {n}"
            );
        }
        // A flip decodes to other data or fails (the frame's CRC catches it first anyway),
        // except in the range coder's last 4 bytes, whose low bits the flush leaves free.
        let rc_end = PREFIX + u32::from_be_bytes(good[6..10].try_into().unwrap()) as usize;
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x10;
            if decompress_into(&bad, 4, &mut back, false).is_ok() && back == data {
                assert!(
                    (rc_end - 4..rc_end).contains(&i),
                    "flip at {i} went unnoticed"
                );
            }
        }
        assert_eq!(
            decompress_into(&good, 3, &mut back, false),
            Err(ContextError::ElementSize { esize: 3 })
        );
        assert_eq!(
            decompress_into(&good, 4, &mut back[..6], false),
            Err(ContextError::PartialElement { len: 6, esize: 4 })
        );
    }

    /// design/FORMAT.md's example, byte for byte.
    #[test]
    fn the_format_example() {
        let vals: [i16; 8] = [100, 101, 103, 102, 110, 108, 90, -5];
        let data: Vec<u8> = vals.iter().flat_map(|v| v.to_be_bytes()).collect();
        let mut out = Vec::new();
        assert!(compress(
            &data,
            2,
            false,
            4,
            ContextPredictor::Left,
            usize::MAX,
            &mut out
        ));
        let payload = [
            0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x0B, // prefix
            0x00, 0xFE, 0xF0, 0x91, 0x8D, 0xB1, 0x8A, 0xF2, 0x6A, 0x5C, 0x00, // range coder
            0x40, 0xFA, // low bits
        ];
        assert_eq!(out, payload);
        let mut back = vec![0u8; data.len()];
        decompress_into(&payload, 2, &mut back, false).unwrap();
        assert_eq!(back, data);
    }
}
