//! The `lorenzo` filter (id 5): a 2-D Lorenzo predictor on the order-preserving integer image
//! of IEEE floats (design/FORMAT.md specifies it byte for byte).
//!
//! Element i of a block (e = 4 or 8 bytes, big-endian) is read as an unsigned integer u of 8e
//! bits and mapped to m = u XOR ((u >> (8e − 1)) × (2^(8e−1) − 1)) (negative floats get their
//! magnitude bits flipped, so that m read as a signed integer grows with the float; the map is
//! its own inverse). With the row length w (elements of the variable's innermost dimension),
//! the prediction is p₀ = 0, pᵢ = mᵢ₋₁ for 1 ≤ i ≤ w and pᵢ = mᵢ₋₁ + mᵢ₋w − mᵢ₋w₋₁ for i > w
//! (mod 2^(8e)); the residual mᵢ − pᵢ is zigzag-encoded and written big-endian, then the block
//! is byte-shuffled. The frame's payload is w as a 4-byte big-endian integer followed by the
//! codec's encoding of those filtered bytes.

use super::block::{Coded, Form};
use super::error::LorenzoError;
use super::space::{KeptScratch, Scratch};
use crate::codec::error::FrameError;
use crate::format::FrameHeader;

use super::word::Word;

/// Bytes of the row length that start a `lorenzo` frame's payload.
pub const ROW_PREFIX: usize = 4;

/// Whether the filter is defined for elements of `esize` bytes (the 32- and 64-bit floats).
pub fn supports(esize: usize) -> bool {
    matches!(esize, 4 | 8)
}

/// Filters `src` (elements of `esize` bytes, 4 or 8; rows of `row` elements, at least 1) into
/// `dst`, replacing its contents with as many bytes as `src` has. Bytes past the last whole
/// element, and the whole block for another element size, are copied as they are.
pub fn apply(src: &[u8], esize: usize, row: usize, dst: &mut Vec<u8>) {
    dst.clear();
    dst.resize(src.len(), 0);
    let n = src.len() / esize.max(1);
    let row = row.max(1);
    match esize {
        4 => apply_n::<u32, 4>(src, dst, n, row),
        8 => apply_n::<u64, 8>(src, dst, n, row),
        _ => {
            dst.copy_from_slice(src);
            return;
        }
    }
    dst[n * esize..].copy_from_slice(&src[n * esize..]);
}

/// Reverses [`apply`] from `src` into `dst` (the same length), elements in native byte order
/// when `native` (big-endian otherwise).
pub fn undo_into(src: &[u8], esize: usize, row: usize, dst: &mut [u8], native: bool) {
    let n = src.len() / esize.max(1);
    let row = row.max(1);
    match (esize, native) {
        (4, false) => undo_n::<u32, 4, false>(src, dst, n, row),
        (4, true) => undo_n::<u32, 4, true>(src, dst, n, row),
        (8, false) => undo_n::<u64, 8, false>(src, dst, n, row),
        (8, true) => undo_n::<u64, 8, true>(src, dst, n, row),
        _ => {
            dst.copy_from_slice(src);
            return;
        }
    }
    dst[n * esize..].copy_from_slice(&src[n * esize..]);
}

/// The sign map: flips the magnitude bits of values whose top bit is set (its own inverse).
fn map<W: Word>(u: W) -> W {
    u.xor(u.sign_fill().and(W::MAGNITUDE))
}

fn predict<W: Word>(m: &[W], i: usize, row: usize) -> W {
    if i == 0 {
        W::ZERO
    } else if i <= row {
        m[i - 1]
    } else {
        m[i - 1]
            .wrapping_add(m[i - row])
            .wrapping_sub(m[i - row - 1])
    }
}

fn apply_n<W: Word, const E: usize>(src: &[u8], dst: &mut [u8], n: usize, row: usize) {
    const { assert!(std::mem::size_of::<W>() == E) };
    let m: Vec<W> = src[..n * E]
        .chunks_exact(E)
        .map(|e| map(W::from_be(e)))
        .collect();
    let (head, _) = dst.split_at_mut(n * E);
    let mut outs: Vec<&mut [u8]> = head.chunks_mut(n.max(1)).collect();
    for (i, &x) in m.iter().enumerate() {
        let z = x.wrapping_sub(predict(&m, i, row)).zigzag();
        for (j, out) in outs.iter_mut().enumerate() {
            out[i] = z.be_byte(j);
        }
    }
}

fn undo_n<W: Word + bytemuck::Pod, const E: usize, const NATIVE: bool>(
    src: &[u8],
    dst: &mut [u8],
    n: usize,
    row: usize,
) {
    const { assert!(std::mem::size_of::<W>() == E) };
    if n == 0 {
        return;
    }
    thread_local! {
        static WORDS: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    WORDS.with_borrow_mut(|words| {
        // Reused from block to block: every word used is overwritten first.
        let need = (n * E).div_ceil(8);
        if words.len() < need {
            words.resize(need, 0);
        }
        let g: &mut [W] = &mut bytemuck::cast_slice_mut(&mut words[..need])[..n];
        // Residuals, unshuffled and un-zigzagged (vectorized).
        let ins: [&[u8]; E] = std::array::from_fn(|j| &src[j * n..(j + 1) * n]);
        for (i, w) in g.iter_mut().enumerate() {
            *w = W::from_be(&std::array::from_fn::<u8, E, _>(|j| ins[j][i])).unzigzag();
        }
        // With gᵢ = mᵢ − mᵢ₋₁, the prediction says gᵢ = dᵢ + gᵢ₋w for i > w (and gᵢ = dᵢ up to
        // w): add each row's predecessor, a row at a time (no overlap, so vectorized) ...
        let mut at = row + 1;
        while at < n {
            let len = row.min(n - at);
            let (done, rest) = g.split_at_mut(at);
            for (x, &up) in rest[..len].iter_mut().zip(&done[at - row..at - row + len]) {
                *x = x.wrapping_add(up);
            }
            at += len;
        }
        // ... then m is the running sum of g, mapped back and stored.
        let mut m = W::ZERO;
        for (&x, e) in g.iter().zip(dst[..n * E].chunks_exact_mut(E)) {
            m = m.wrapping_add(x);
            let u = map(m);
            if NATIVE {
                e.copy_from_slice(bytemuck::bytes_of(&u));
            } else {
                u.put_be(e);
            }
        }
    });
}

/// Filter `lorenzo`: each element less its prediction from its neighbours (one row for a whole block).
pub(crate) struct Lorenzo;

impl super::block::NumericFront for Lorenzo {
    fn apply(&self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        apply(data, esize, super::word::whole_row(data, esize), out);
    }
    fn undo(&self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        out.clear();
        out.resize(data.len(), 0);
        undo_into(data, esize, super::word::whole_row(data, esize), out, false);
    }
    /// The row length that starts the payload (its checks), kept; the codec decodes the
    /// filtered bytes, as long as the block.
    fn open<'p>(
        &self,
        h: &FrameHeader,
        payload: &'p [u8],
        kept: &mut Scratch,
    ) -> Result<Coded<'p>, FrameError> {
        let (row, payload) = split_row(h, payload)?;
        let len = h.decoded_len as usize;
        if !len.is_multiple_of(usize::from(h.esize)) {
            return Err(FrameError::FilterElementSize {
                esize: h.esize,
                decoded: h.decoded_len,
            });
        }
        kept.get::<Row>().0 = row;
        Ok(Coded {
            payload,
            len,
            form: Form::Bytes,
        })
    }
    fn close(
        &self,
        h: &FrameHeader,
        coded: &mut [u8],
        out: &mut [u8],
        native: bool,
        kept: &mut Scratch,
    ) -> Result<(), FrameError> {
        undo_into(
            coded,
            usize::from(h.esize),
            kept.get::<Row>().0,
            out,
            native,
        );
        Ok(())
    }
}

/// The row length of the `lorenzo` frame being decoded, kept from its prefix to its undoing.
#[derive(Default)]
struct Row(usize);

impl KeptScratch for Row {
    #[cfg(test)]
    fn held(&self) -> usize {
        0
    }
}

/// The row length that starts the payload of a `lorenzo` frame `h`, and the codec's part of
/// the payload after it.
fn split_row<'p>(h: &FrameHeader, payload: &'p [u8]) -> Result<(usize, &'p [u8]), FrameError> {
    if !supports(usize::from(h.esize)) {
        return Err(LorenzoError::ElementSize { esize: h.esize }.into());
    }
    let Some((prefix, rest)) = payload.split_first_chunk::<ROW_PREFIX>() else {
        return Err(LorenzoError::NoRow {
            stored: h.stored_len,
        }
        .into());
    };
    match u32::from_be_bytes(*prefix) {
        0 => Err(LorenzoError::ZeroRow.into()),
        row => Ok((row as usize, rest)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::quickcheck;

    /// The filter as design/FORMAT.md defines it, one element at a time in u64 arithmetic
    /// (independent of the generic code): map, predict, zigzag, big-endian, shuffle.
    fn reference(data: &[u8], e: usize, w: usize) -> Vec<u8> {
        let bits = 8 * e as u32;
        let mask = u64::MAX >> (64 - bits);
        let top = 1u64 << (bits - 1);
        let n = data.len() / e;
        let m: Vec<u64> = data[..n * e]
            .chunks_exact(e)
            .map(|c| c.iter().fold(0u64, |a, &b| a << 8 | u64::from(b)))
            .map(|u| if u & top != 0 { u ^ (top - 1) } else { u })
            .collect();
        let mut zs = Vec::new();
        for i in 0..n {
            let p = match i {
                0 => 0,
                i if i <= w => m[i - 1],
                i => m[i - 1].wrapping_add(m[i - w]).wrapping_sub(m[i - w - 1]) & mask,
            };
            let d = m[i].wrapping_sub(p) & mask;
            let z = if d & top != 0 {
                (!(d << 1)) & mask // -(d) * 2 - 1 for negative d
            } else {
                d << 1
            };
            zs.extend_from_slice(&z.to_be_bytes()[8 - e..]);
        }
        let mut out: Vec<u8> = (0..e)
            .flat_map(|j| (0..n).map(move |i| (i, j)))
            .map(|(i, j)| zs[i * e + j])
            .collect();
        out.extend_from_slice(&data[n * e..]);
        out
    }

    /// Filters with `apply`, checks it against [`reference`], and undoes it big-endian and
    /// native, into aligned and unaligned outputs.
    fn check(data: &[u8], e: usize, w: usize) -> bool {
        let mut f = vec![9; 3];
        apply(data, e, w, &mut f);
        if f != reference(data, e, w.max(1)) {
            return false;
        }
        let n = data.len() / e;
        let mut native = data.to_vec();
        if cfg!(target_endian = "little") {
            for x in native[..n * e].chunks_exact_mut(e) {
                x.reverse();
            }
        }
        let mut words = vec![0u64; data.len() / 8 + 2];
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
        for at in [0, 1] {
            for (nat, want) in [(false, data), (true, &native[..])] {
                let out = &mut bytes[at..at + data.len()];
                out.fill(0x5a);
                undo_into(&f, e, w, out, nat);
                if out != want {
                    return false;
                }
            }
        }
        true
    }

    /// Floats with special values mixed in: NaNs with payloads and either sign, ±0, ±inf,
    /// denormals, the extremes; `pick` chooses, with an index into `bits` or a smooth ramp.
    fn f32_specials(bits: &[u32], pick: &[u8]) -> Vec<u8> {
        const S: [u32; 10] = [
            0x7fc0_0000,
            0xffc0_0001,
            0x7f80_0001,
            0x8000_0000,
            0,
            0x7f80_0000,
            0xff80_0000,
            1,
            0x8000_0001,
            0x7f7f_ffff,
        ];
        (0..bits.len())
            .map(|i| match pick.get(i).map(|p| p % 16) {
                Some(p @ 0..=9) => S[p as usize],
                Some(10..=13) => (300.0f32 + i as f32 * 0.25).to_bits(),
                _ => bits[i],
            })
            .flat_map(u32::to_be_bytes)
            .collect()
    }

    fn f64_specials(bits: &[u64], pick: &[u8]) -> Vec<u8> {
        const S: [u64; 8] = [
            0x7ff8_0000_0000_0000,
            0xfff8_0000_0000_0001,
            0x8000_0000_0000_0000,
            0,
            0x7ff0_0000_0000_0000,
            0xfff0_0000_0000_0000,
            1,
            0x8000_0000_0000_0001,
        ];
        (0..bits.len())
            .map(|i| match pick.get(i).map(|p| p % 16) {
                Some(p @ 0..=7) => S[p as usize],
                Some(8..=13) => (-20.0f64 + i as f64 * 0.125).to_bits(),
                _ => bits[i],
            })
            .flat_map(u64::to_be_bytes)
            .collect()
    }

    quickcheck! {
        fn f32_blocks_roundtrip(bits: Vec<u32>, pick: Vec<u8>, row: u16, tail: u8) -> bool {
            let mut data = f32_specials(&bits, &pick);
            // A partial trailing element (never in a frame, but the bytes must survive).
            data.extend(std::iter::repeat_n(0xab, usize::from(tail % 4)));
            check(&data, 4, usize::from(row % 70))
        }
        fn f64_blocks_roundtrip(bits: Vec<u64>, pick: Vec<u8>, row: u16) -> bool {
            check(&f64_specials(&bits, &pick), 8, usize::from(row % 70))
        }
    }

    #[test]
    fn rows_longer_than_the_block_and_odd_lengths_roundtrip() {
        let mut x = 7u64;
        for n in [0usize, 1, 2, 3, 5, 17, 1000, 1001] {
            let bits: Vec<u32> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u32
                })
                .collect();
            for row in [0, 1, 2, 3, 31, n.saturating_sub(1), n, n + 1, 1 << 20] {
                assert!(check(&f32_specials(&bits, &[]), 4, row), "n {n} row {row}");
                let wide: Vec<u64> = bits.iter().map(|&b| u64::from(b) << 29 | 5).collect();
                assert!(check(&f64_specials(&wide, &[]), 8, row), "n {n} row {row}");
            }
        }
    }

    /// The worked example of design/FORMAT.md, bytes checked by hand there.
    #[test]
    fn worked_example_bytes() {
        let data: Vec<u8> = [1.0f32, 1.5, 2.0, -0.0]
            .iter()
            .flat_map(|x| x.to_be_bytes())
            .collect();
        let mut f = Vec::new();
        apply(&data, 4, 2, &mut f);
        assert_eq!(
            f,
            [
                0x7f, 0x00, 0x00, 0x80, 0x00, 0x80, 0x80, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                0x00, 0x01
            ]
        );
        let mut back = vec![0; 16];
        undo_into(&f, 4, 2, &mut back, false);
        assert_eq!(back, data);
    }

    #[test]
    fn map_orders_floats_and_is_its_own_inverse() {
        let xs = [f32::NEG_INFINITY, -2.0, -1.0, -0.0, 0.0, 1e-45, 1.0, 2.0];
        let ms: Vec<i32> = xs
            .iter()
            .map(|x| map(x.to_bits()) as i32)
            .collect::<Vec<_>>();
        assert!(ms.windows(2).all(|w| w[0] < w[1]), "{ms:?}");
        assert_eq!(map((-0.0f32).to_bits()), u32::MAX);
        for x in [0u32, 1, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 0xdead_beef] {
            assert_eq!(map(map(x)), x);
        }
    }
}
