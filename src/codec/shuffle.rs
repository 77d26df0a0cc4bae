//! The byte shuffle and the byte delta filters (`shuffle`, `bytedelta`, `delta`, `zzdelta`):
//! each byte of every element in a stream of its own, after a difference of neighbours.

use crate::codec::word::{be_to_native, Word};

/// Byte-shuffles `src` (elements of `esize` bytes) into `dst`: the first byte of every element,
/// then the second byte of every element, and so on. A trailing partial element is copied as is.
///
/// ```
/// let mut out = Vec::new();
/// nc3pack::testing::shuffle(&[1, 2, 3, 4, 5, 6], 2, &mut out);
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

pub(crate) fn shuffle_n<const E: usize>(src: &[u8], dst: &mut [u8], n: usize) {
    let outs = streams_mut::<E>(dst, n);
    for (i, e) in src[..n * E].chunks_exact(E).enumerate() {
        for j in 0..E {
            outs[j][i] = e[j];
        }
    }
}

/// The first `E` streams of `n` bytes of `dst`.
pub(crate) fn streams_mut<const E: usize>(dst: &mut [u8], n: usize) -> [&mut [u8]; E] {
    let mut rest = &mut dst[..n * E];
    std::array::from_fn(|_| {
        let (stream, tail) = std::mem::take(&mut rest).split_at_mut(n);
        rest = tail;
        stream
    })
}

pub(crate) fn unshuffle_n<const E: usize>(src: &[u8], dst: &mut [u8], n: usize) {
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
/// nc3pack::testing::unshuffle(&[1, 3, 5, 2, 4, 6], 2, &mut out);
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

/// The `delta` filter (`zigzag` false) or the `zzdelta` filter (`zigzag` true) of `src` into
/// `dst`. For elements of 2, 4 or 8 bytes: element differences, optionally zigzag-encoded, then
/// shuffled, in one pass; a trailing partial element is copied as is. For any other element
/// size: each byte replaced by its difference from the previous byte, without zigzag.
pub(crate) fn delta_shuffle(src: &[u8], esize: usize, zigzag: bool, dst: &mut Vec<u8>) {
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
pub(crate) fn unshuffle_undelta(src: &[u8], esize: usize, zigzag: bool, dst: &mut Vec<u8>) {
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
pub(crate) fn delta_shuffle_n<W: Word, const E: usize, const ZIGZAG: bool>(
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
pub(crate) fn unshuffle_undelta_n<W: Word, const E: usize, const ZIGZAG: bool>(
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

/// [`unshuffle_n`], writing each element's bytes reversed when `SWAP`.
pub(crate) fn unshuffle_into<const E: usize, const SWAP: bool>(
    src: &[u8],
    dst: &mut [u8],
    n: usize,
) {
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
pub(crate) fn unshuffle_undelta_into<
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
    #[cfg(target_arch = "x86_64")]
    if super::word::has_avx2() {
        // SAFETY: this CPU has the instructions `undelta_words_avx2` is compiled for.
        unsafe { undelta_words_avx2::<W, E, ZIGZAG, NATIVE>(&src[..n * E], words) };
        return;
    }
    undelta_words::<W, E, ZIGZAG, NATIVE>(&src[..n * E], words);
}

/// [`undelta_words`] compiled for CPUs with AVX2 (the byte gathering of the first pass in
/// wider vectors; 2- and 4-byte words in one pass, [`undelta_u16_avx2`], [`undelta_u32_avx2`]).
/// Same results.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi2,fma")]
fn undelta_words_avx2<
    W: Word + bytemuck::Pod,
    const E: usize,
    const ZIGZAG: bool,
    const NATIVE: bool,
>(
    src: &[u8],
    words: &mut [W],
) {
    // (2- and 4-byte words are u16, i16, u32 or i32: always cast.)
    if E == 2 {
        if let Ok(w) = bytemuck::try_cast_slice_mut::<W, u16>(words) {
            return undelta_u16_avx2::<ZIGZAG, NATIVE>(src, w);
        }
    }
    match bytemuck::try_cast_slice_mut::<W, u32>(words) {
        Ok(w) if E == 4 => undelta_u32_avx2::<ZIGZAG, NATIVE>(src, w),
        _ => undelta_words::<W, E, ZIGZAG, NATIVE>(src, words),
    }
}

/// [`undelta_words`] for 2-byte words in one pass, sixteen words a vector, as
/// [`undelta_u32_avx2`] does with 4-byte ones (the sums within a vector in four steps).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn undelta_u16_avx2<const ZIGZAG: bool, const NATIVE: bool>(src: &[u8], words: &mut [u16]) {
    use std::arch::x86_64::*;
    let n = words.len();
    let ins: [&[u8]; 2] = std::array::from_fn(|j| &src[j * n..(j + 1) * n]);
    // Reverses the bytes of each 2-byte word.
    let swap = _mm256_setr_epi8(
        1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10,
        13, 12, 15, 14,
    );
    // The last word of each half, in every word of that half.
    let last_word = _mm256_setr_epi8(
        14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14,
        15, 14, 15, 14, 15, 14, 15, 14, 15,
    );
    let (one, zero) = (_mm256_set1_epi16(1), _mm256_setzero_si256());
    let mut before = zero;
    let mut chunks = words.chunks_exact_mut(16);
    for (k, c) in (&mut chunks).enumerate() {
        let at = k * 16;
        // Bytes at..at + 16 of plane j, one a word.
        let plane = |j: usize| {
            let b: [u8; 16] = ins[j][at..at + 16].try_into().unwrap_or_default();
            _mm256_cvtepu8_epi16(bytemuck::cast::<[u8; 16], __m128i>(b))
        };
        let mut x = _mm256_or_si256(_mm256_slli_epi16::<8>(plane(0)), plane(1));
        if ZIGZAG {
            let sign = _mm256_sub_epi16(zero, _mm256_and_si256(x, one));
            x = _mm256_xor_si256(_mm256_srli_epi16::<1>(x), sign);
        }
        // Sums within each half, then the lower half's total added to the upper half.
        x = _mm256_add_epi16(x, _mm256_slli_si256::<2>(x));
        x = _mm256_add_epi16(x, _mm256_slli_si256::<4>(x));
        x = _mm256_add_epi16(x, _mm256_slli_si256::<8>(x));
        let ends = _mm256_shuffle_epi8(x, last_word);
        x = _mm256_add_epi16(x, _mm256_permute2x128_si256::<0x08>(ends, ends));
        let total = _mm256_shuffle_epi8(_mm256_permute2x128_si256::<0x11>(x, x), last_word);
        x = _mm256_add_epi16(x, before);
        // Off the dependency chain: only this addition links one vector to the next.
        before = _mm256_add_epi16(before, total);
        if !NATIVE {
            x = _mm256_shuffle_epi8(x, swap);
        }
        let y: [u16; 16] = bytemuck::cast(x);
        c.copy_from_slice(&y);
    }
    let mut prev = _mm256_extract_epi16::<0>(before) as u16;
    let rest = chunks.into_remainder();
    let from = n - rest.len();
    for (i, w) in rest.iter_mut().enumerate() {
        let d = u16::from_be_bytes([ins[0][from + i], ins[1][from + i]]);
        let d = if ZIGZAG { d.unzigzag() } else { d };
        prev = prev.wrapping_add(d);
        *w = if NATIVE { prev } else { prev.to_be() };
    }
}

/// [`undelta_words`] for 4-byte words in one pass, 32 words at a time: 32 bytes of each of
/// the four byte planes interleaved into words by byte and then 16-bit unpacks (within each
/// 128-bit lane, so each vector holds two runs of four consecutive words), un-zigzagged,
/// summed within each run of four, then each run given the total of the runs before it (each
/// stored native, or big-endian). The wrapping sums are those of the one-at-a-time loop
/// (addition modulo 2^32 is associative).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn undelta_u32_avx2<const ZIGZAG: bool, const NATIVE: bool>(src: &[u8], words: &mut [u32]) {
    use std::arch::x86_64::*;
    let n = words.len();
    let ins: [&[u8]; 4] = std::array::from_fn(|j| &src[j * n..(j + 1) * n]);
    // Reverses the bytes of each 4-byte word.
    let swap = _mm256_setr_epi8(
        3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12, 3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8,
        15, 14, 13, 12,
    );
    let (one, zero) = (_mm256_set1_epi32(1), _mm256_setzero_si256());
    let load = |j: usize, at: usize| {
        let b: [u8; 32] = ins[j][at..at + 32].try_into().unwrap_or([0; 32]);
        bytemuck::cast::<[u8; 32], __m256i>(b)
    };
    // The running total before the next words, in every word.
    let mut before = zero;
    let mut chunks = words.chunks_exact_mut(32);
    for (k, c) in (&mut chunks).enumerate() {
        let at = k * 32;
        let (p0, p1, p2, p3) = (load(0, at), load(1, at), load(2, at), load(3, at));
        // Big-endian words: byte 3 (plane 3) lowest. Within each lane: the low and high
        // 8 bytes of the planes' 16.
        let (lo32, hi32) = (_mm256_unpacklo_epi8(p3, p2), _mm256_unpackhi_epi8(p3, p2));
        let (lo10, hi10) = (_mm256_unpacklo_epi8(p1, p0), _mm256_unpackhi_epi8(p1, p0));
        // Words 0-3 and 16-19, 4-7 and 20-23, 8-11 and 24-27, 12-15 and 28-31.
        let mut v = [
            _mm256_unpacklo_epi16(lo32, lo10),
            _mm256_unpackhi_epi16(lo32, lo10),
            _mm256_unpacklo_epi16(hi32, hi10),
            _mm256_unpackhi_epi16(hi32, hi10),
        ];
        for x in &mut v {
            if ZIGZAG {
                let sign = _mm256_sub_epi32(zero, _mm256_and_si256(*x, one));
                *x = _mm256_xor_si256(_mm256_srli_epi32::<1>(*x), sign);
            }
            // Sums within each run of four.
            *x = _mm256_add_epi32(*x, _mm256_slli_si256::<4>(*x));
            *x = _mm256_add_epi32(*x, _mm256_slli_si256::<8>(*x));
        }
        // Each run's total, in its four words.
        let t = v.map(|x| _mm256_shuffle_epi32::<0xFF>(x));
        // The first 16 words' total, for the upper lanes (the words 16-31).
        let lanes = _mm256_add_epi32(_mm256_add_epi32(t[0], t[1]), _mm256_add_epi32(t[2], t[3]));
        let base = _mm256_add_epi32(before, _mm256_permute2x128_si256::<0x08>(lanes, lanes));
        let c1 = _mm256_add_epi32(base, t[0]);
        let c2 = _mm256_add_epi32(c1, t[1]);
        let c3 = _mm256_add_epi32(c2, t[2]);
        v = [
            _mm256_add_epi32(v[0], base),
            _mm256_add_epi32(v[1], c1),
            _mm256_add_epi32(v[2], c2),
            _mm256_add_epi32(v[3], c3),
        ];
        // Off the chain of sums within the vectors: only this addition links one piece to the
        // next (both lanes' totals, in every word).
        before = _mm256_add_epi32(
            before,
            _mm256_add_epi32(lanes, _mm256_permute2x128_si256::<0x01>(lanes, lanes)),
        );
        if !NATIVE {
            v = v.map(|x| _mm256_shuffle_epi8(x, swap));
        }
        // Words in order: the lower lanes, then the upper ones.
        let out = [
            _mm256_permute2x128_si256::<0x20>(v[0], v[1]),
            _mm256_permute2x128_si256::<0x20>(v[2], v[3]),
            _mm256_permute2x128_si256::<0x31>(v[0], v[1]),
            _mm256_permute2x128_si256::<0x31>(v[2], v[3]),
        ];
        let y: [u32; 32] = bytemuck::cast(out);
        c.copy_from_slice(&y);
    }
    let mut prev = _mm256_extract_epi32::<0>(before) as u32;
    let rest = chunks.into_remainder();
    let from = n - rest.len();
    for (i, w) in rest.iter_mut().enumerate() {
        let d = u32::from_be_bytes(std::array::from_fn(|j| ins[j][from + i]));
        let d = if ZIGZAG { d.unzigzag() } else { d };
        prev = prev.wrapping_add(d);
        *w = if NATIVE { prev } else { prev.to_be() };
    }
}

/// Words read in pieces of this many, both passes over a piece before the next: the second
/// finds the first's words in the L1 cache.
const UNDELTA_PIECE: usize = 2048;

/// The two passes of [`unshuffle_undelta_into`] on aligned words: `src` is the `E` byte planes
/// of `words.len()` elements; `words` gets their running sums, native or big-endian.
#[inline(always)]
fn undelta_words<W: Word, const E: usize, const ZIGZAG: bool, const NATIVE: bool>(
    src: &[u8],
    words: &mut [W],
) {
    let n = words.len();
    let ins: [&[u8]; E] = std::array::from_fn(|j| &src[j * n..(j + 1) * n]);
    let mut prev = W::ZERO;
    for (k, piece) in words.chunks_mut(UNDELTA_PIECE).enumerate() {
        let at = k * UNDELTA_PIECE;
        let planes: [&[u8]; E] = std::array::from_fn(|j| &ins[j][at..at + piece.len()]);
        for (i, w) in piece.iter_mut().enumerate() {
            let d = W::from_be(&std::array::from_fn::<u8, E, _>(|j| planes[j][i]));
            *w = if ZIGZAG { d.unzigzag() } else { d };
        }
        for w in piece.iter_mut() {
            prev = prev.wrapping_add(*w);
            *w = if NATIVE { prev } else { prev.to_be() };
        }
    }
}

/// Filter `none`: the bytes as they are (`SAME` on its registry line: a frame's codec decodes
/// straight into the block).
pub(crate) struct NoFilter;

impl super::block::ByteFilter for NoFilter {
    fn apply(&self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        let _ = esize;
        out.clear();
        out.extend_from_slice(data);
    }
    fn undo(&self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        let _ = esize;
        out.clear();
        out.extend_from_slice(data);
    }
    fn undo_part(&self, src: &[u8], len: usize, _: usize, from: usize, dst: &mut [u8]) -> bool {
        let Some(part) = src
            .get(from..from + dst.len())
            .filter(|_| from + dst.len() <= len)
        else {
            return false;
        };
        dst.copy_from_slice(part);
        true
    }
    fn part_needs(&self, _: usize, _: usize, end: usize) -> usize {
        end
    }
}

/// Filter `shuffle`: the bytes of the elements grouped by position.
pub(crate) struct Shuffle;

impl super::block::ByteFilter for Shuffle {
    fn apply(&self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        shuffle(data, esize, out);
    }
    fn undo(&self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        unshuffle(data, esize, out);
    }
    fn undo_into(&self, src: &mut [u8], esize: usize, dst: &mut [u8], native: bool) {
        unshuffle_native(src, esize, dst, native);
    }
    fn undo_part(&self, src: &[u8], len: usize, esize: usize, from: usize, dst: &mut [u8]) -> bool {
        part(src, len, esize, from, dst, Part::Shuffle)
    }
    fn part_needs(&self, len: usize, esize: usize, end: usize) -> usize {
        part_needs(len, esize, end)
    }
}

/// Filter `bytedelta`: shuffled, then each byte stream delta coded.
pub(crate) struct ByteDelta;

impl super::block::ByteFilter for ByteDelta {
    fn apply(&self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        shuffle(data, esize, out);
        let n = data.len() / esize.max(1);
        for stream in out[..n * esize.max(1)].chunks_exact_mut(n.max(1)) {
            for i in (1..stream.len()).rev() {
                stream[i] = stream[i].wrapping_sub(stream[i - 1]);
            }
        }
    }
    fn undo(&self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        let mut d = data.to_vec();
        let n = data.len() / esize.max(1);
        for stream in d[..n * esize.max(1)].chunks_exact_mut(n.max(1)) {
            for i in 1..stream.len() {
                stream[i] = stream[i].wrapping_add(stream[i - 1]);
            }
        }
        unshuffle(&d, esize, out);
    }
    fn undo_into(&self, src: &mut [u8], esize: usize, dst: &mut [u8], native: bool) {
        // The byte streams' running sums in place, then unshuffled.
        let n = src.len() / esize.max(1);
        for stream in src[..n * esize.max(1)].chunks_exact_mut(n.max(1)) {
            for i in 1..stream.len() {
                stream[i] = stream[i].wrapping_add(stream[i - 1]);
            }
        }
        unshuffle_native(src, esize, dst, native);
    }
    fn undo_part(&self, src: &[u8], len: usize, esize: usize, from: usize, dst: &mut [u8]) -> bool {
        part(src, len, esize, from, dst, Part::ByteDelta)
    }
    fn part_needs(&self, len: usize, esize: usize, end: usize) -> usize {
        part_needs(len, esize, end)
    }
}

/// Filter `delta`: element deltas, then shuffled.
pub(crate) struct Delta;

impl super::block::ByteFilter for Delta {
    fn apply(&self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        delta_shuffle(data, esize, false, out);
    }
    fn undo(&self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        unshuffle_undelta(data, esize, false, out);
    }
    fn undo_into(&self, src: &mut [u8], esize: usize, dst: &mut [u8], native: bool) {
        unshuffle_undelta_native::<false>(src, esize, dst, native);
    }
    fn undo_part(&self, src: &[u8], len: usize, esize: usize, from: usize, dst: &mut [u8]) -> bool {
        part(src, len, esize, from, dst, Part::Delta { zigzag: false })
    }
    fn part_needs(&self, len: usize, esize: usize, end: usize) -> usize {
        part_needs(len, esize, end)
    }
}

/// Filter `zzdelta`: element deltas zigzag coded, then shuffled.
pub(crate) struct ZigZagDelta;

impl super::block::ByteFilter for ZigZagDelta {
    fn apply(&self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        delta_shuffle(data, esize, true, out);
    }
    fn undo(&self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        unshuffle_undelta(data, esize, true, out);
    }
    fn undo_into(&self, src: &mut [u8], esize: usize, dst: &mut [u8], native: bool) {
        unshuffle_undelta_native::<true>(src, esize, dst, native);
    }
    fn undo_part(&self, src: &[u8], len: usize, esize: usize, from: usize, dst: &mut [u8]) -> bool {
        part(src, len, esize, from, dst, Part::Delta { zigzag: true })
    }
    fn part_needs(&self, len: usize, esize: usize, end: usize) -> usize {
        part_needs(len, esize, end)
    }
}

/// The sum (wrapping; each zigzag decoded when `ZZ`) of the first `upto` element deltas of the
/// shuffled block `src` of `n` elements of `E` bytes, as big-endian bytes (the first `E`):
/// element `upto - 1` of the block under `delta` (`zzdelta`). One pass the compiler
/// vectorizes, as [`unshuffle_undelta_into`]'s.
fn delta_prefix<W: Word, const E: usize, const ZZ: bool>(
    src: &[u8],
    n: usize,
    upto: usize,
) -> [u8; 8] {
    #[cfg(target_arch = "x86_64")]
    if super::word::has_avx2() {
        let ins: [&[u8]; E] = std::array::from_fn(|j| &src[j * n..j * n + upto]);
        // SAFETY: this CPU has the instructions `plane_sums_avx2` is compiled for.
        let sums = unsafe { plane_sums_avx2::<E>(&ins) };
        return sums.delta_sum::<ZZ>();
    }
    delta_prefix_serial::<W, E, ZZ>(src, n, upto)
}

/// [`delta_prefix`] one element at a time.
fn delta_prefix_serial<W: Word, const E: usize, const ZZ: bool>(
    src: &[u8],
    n: usize,
    upto: usize,
) -> [u8; 8] {
    let ins: [&[u8]; E] = std::array::from_fn(|j| &src[j * n..j * n + upto]);
    let mut sum = W::ZERO;
    // (Indexing the `E` streams at `i`, as `unshuffle_undelta_into` does.)
    #[allow(clippy::needless_range_loop)]
    for i in 0..upto {
        let d = W::from_be(&std::array::from_fn::<u8, E, _>(|j| ins[j][i]));
        sum = sum.wrapping_add(if ZZ { d.unzigzag() } else { d });
    }
    let mut out = [0u8; 8];
    sum.put_be(&mut out[..E]);
    out
}

/// The sums of each byte stream of a shuffled block's first elements, split by whether the
/// element is odd (the low bit of its last, least significant, byte): enough for the sum of
/// the elements as numbers, with or without zigzag decoding ([`PlaneSums::delta_sum`]),
/// without putting one element together.
struct PlaneSums<const E: usize> {
    /// Stream j's bytes of the even elements, summed.
    even: [u64; E],
    /// Stream j's bytes of the odd elements, summed.
    odd: [u64; E],
    /// How many elements are odd.
    odds: u64,
}

impl<const E: usize> PlaneSums<E> {
    /// The wrapping sum of the elements (each zigzag decoded when `ZZ`), as big-endian bytes
    /// (the first `E`), as [`delta_prefix_serial`] gives it.
    ///
    /// An element d is Σⱼ bⱼ·2^(8(E−1−j)) over its bytes, so the sums of the even elements
    /// (Dₑ) and of the odd ones (Dₒ) follow from the streams' sums, exactly (below 2^104).
    /// Zigzag decoding takes d to d/2 for an even d and to −(d−1)/2 − 1 for an odd one, so the
    /// decoded elements sum to (Dₑ − Dₒ − k)/2, k being the count of odd elements (an even
    /// number: exact). Reduced modulo 2^(8E), that is the wrapping sum.
    fn delta_sum<const ZZ: bool>(&self) -> [u8; 8] {
        let value = |s: &[u64; E]| -> i128 {
            s.iter()
                .enumerate()
                .map(|(j, &x)| i128::from(x) << (8 * (E - 1 - j)))
                .sum()
        };
        let (de, dodd) = (value(&self.even), value(&self.odd));
        let total = if ZZ {
            (de - dodd - i128::from(self.odds)) / 2
        } else {
            de + dodd
        };
        let mut out = [0u8; 8];
        out[..E].copy_from_slice(&(total as u64).to_be_bytes()[8 - E..]);
        out
    }
}

/// [`PlaneSums`] of the first `ins[0].len()` elements of the `E` byte streams `ins` (all as
/// long), 32 elements a vector: a mask of the odd elements from the last stream, then each
/// stream's bytes summed under the mask and outside it (sums of absolute differences from
/// zero: eight bytes into each 64-bit lane).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn plane_sums_avx2<const E: usize>(ins: &[&[u8]; E]) -> PlaneSums<E> {
    use std::arch::x86_64::*;
    let upto = ins.iter().map(|s| s.len()).min().unwrap_or(0);
    let (one, zero) = (_mm256_set1_epi8(1), _mm256_setzero_si256());
    let mut even = [zero; E];
    let mut odd = [zero; E];
    let mut odds = zero;
    let load = |s: &[u8], at: usize| {
        let b: [u8; 32] = s[at..at + 32].try_into().unwrap_or([0; 32]);
        bytemuck::cast::<[u8; 32], __m256i>(b)
    };
    let whole = upto / 32 * 32;
    for at in (0..whole).step_by(32) {
        let m = _mm256_cmpeq_epi8(_mm256_and_si256(load(ins[E - 1], at), one), one);
        odds = _mm256_add_epi64(odds, _mm256_sad_epu8(_mm256_and_si256(m, one), zero));
        for j in 0..E {
            let b = load(ins[j], at);
            even[j] = _mm256_add_epi64(even[j], _mm256_sad_epu8(_mm256_andnot_si256(m, b), zero));
            odd[j] = _mm256_add_epi64(odd[j], _mm256_sad_epu8(_mm256_and_si256(m, b), zero));
        }
    }
    let lanes = |v: __m256i| bytemuck::cast::<__m256i, [u64; 4]>(v).iter().sum::<u64>();
    let mut sums = PlaneSums {
        even: std::array::from_fn(|j| lanes(even[j])),
        odd: std::array::from_fn(|j| lanes(odd[j])),
        odds: lanes(odds),
    };
    // (Indexing the `E` streams at `i`.)
    #[allow(clippy::needless_range_loop)]
    for i in whole..upto {
        let is_odd = ins[E - 1][i] & 1 == 1;
        sums.odds += u64::from(is_odd);
        for j in 0..E {
            let s = if is_odd {
                &mut sums.odd
            } else {
                &mut sums.even
            };
            s[j] += u64::from(ins[j][i]);
        }
    }
    sums
}

/// The filters [`part`] reverses on a part of a block.
#[derive(Clone, Copy)]
enum Part {
    Shuffle,
    ByteDelta,
    Delta { zigzag: bool },
}

/// How many bytes from the start of a shuffled block's filter bytes (`len` bytes, elements of
/// `esize` bytes) [`part`] reads to give the block's bytes before `end`: the first `last + 1`
/// bytes of each byte stream, `last` being the last element the part touches, so always some
/// of the last stream (the bytes after the last whole element, where the part reaches them,
/// lie after the streams). All of them for an element size [`part`] leaves to the whole block.
fn part_needs(len: usize, esize: usize, end: usize) -> usize {
    if !matches!(esize, 1 | 2 | 4 | 8) {
        return len;
    }
    if esize == 1 || end == 0 {
        return end.min(len);
    }
    let n = len / esize;
    let whole = n * esize;
    if end > whole {
        return end.min(len);
    }
    (esize - 1) * n + (end - 1) / esize + 1
}

/// The bytes `from..from + dst.len()` of the block of `len` bytes whose filter `f` made `src`
/// (the start of the filter's bytes, at least [`part_needs`] of them), big-endian, as the
/// filter's `undo_into` would give them: element `i` from the `i`th byte of each of the
/// `esize` byte streams (a running sum over the streams' or the elements' first `i + 1`
/// values for the delta filters, so only the part up to the last element asked for is read),
/// the bytes after the last whole element as they are. Element sizes other than 1, 2, 4 and 8
/// (which the filters' `undo_into` treat as single bytes), a part past `len` and a `src` too
/// short are left to the whole block's decoding: false.
fn part(src: &[u8], len: usize, esize: usize, from: usize, dst: &mut [u8], f: Part) -> bool {
    let end = from + dst.len();
    if end > len || !matches!(esize, 1 | 2 | 4 | 8) || src.len() < part_needs(len, esize, end) {
        return false;
    }
    if dst.is_empty() {
        return true;
    }
    if esize == 1 {
        // One byte stream: a shuffle is a copy, both deltas a running sum of the bytes.
        match f {
            Part::Shuffle => dst.copy_from_slice(&src[from..end]),
            Part::ByteDelta | Part::Delta { .. } => {
                let mut prev = src[..from].iter().fold(0u8, |a, &d| a.wrapping_add(d));
                for (x, &d) in dst.iter_mut().zip(&src[from..end]) {
                    prev = prev.wrapping_add(d);
                    *x = prev;
                }
            }
        }
        return true;
    }
    let n = len / esize;
    let whole = n * esize;
    // Elements `first..=last` hold the part's bytes before `whole`.
    let (first, last) = (from / esize, (end.min(whole).max(from + 1) - 1) / esize);
    let mask = if esize == 8 {
        u64::MAX
    } else {
        (1u64 << (8 * esize)) - 1
    };
    // The running values before element `first`: one per byte stream (bytedelta) or the
    // element's (delta).
    let upto = first.min(n);
    let mut sums = [0u8; 8];
    let mut prev = 0u64;
    match f {
        Part::Shuffle => {}
        Part::ByteDelta => {
            for (j, sum) in sums[..esize].iter_mut().enumerate() {
                *sum = src[j * n..j * n + upto]
                    .iter()
                    .fold(0u8, |a, &d| a.wrapping_add(d));
            }
        }
        Part::Delta { zigzag } => {
            let sum = match (esize, zigzag) {
                (2, false) => delta_prefix::<u16, 2, false>(src, n, upto),
                (2, true) => delta_prefix::<u16, 2, true>(src, n, upto),
                (4, false) => delta_prefix::<u32, 4, false>(src, n, upto),
                (4, true) => delta_prefix::<u32, 4, true>(src, n, upto),
                (8, false) => delta_prefix::<u64, 8, false>(src, n, upto),
                _ => delta_prefix::<u64, 8, true>(src, n, upto),
            };
            prev = sum[..esize]
                .iter()
                .fold(0u64, |v, &b| (v << 8) | u64::from(b));
        }
    }
    for i in first..=last.min(n.saturating_sub(1)) {
        if from >= whole {
            break;
        }
        let mut bytes = [0u8; 8];
        for (j, b) in bytes[..esize].iter_mut().enumerate() {
            *b = src[j * n + i];
        }
        match f {
            Part::Shuffle => {}
            Part::ByteDelta => {
                for j in 0..esize {
                    sums[j] = sums[j].wrapping_add(bytes[j]);
                }
                bytes = sums;
            }
            Part::Delta { zigzag } => {
                let mut d = bytes[..esize]
                    .iter()
                    .fold(0u64, |v, &b| (v << 8) | u64::from(b));
                if zigzag {
                    d = ((d >> 1) ^ (d & 1).wrapping_neg()) & mask;
                }
                prev = prev.wrapping_add(d) & mask;
                for (j, b) in bytes[..esize].iter_mut().enumerate() {
                    *b = (prev >> (8 * (esize - 1 - j))) as u8;
                }
            }
        }
        // This element's bytes that fall in the part.
        let (lo, hi) = ((i * esize).max(from), ((i + 1) * esize).min(end));
        for p in lo..hi {
            dst[p - from] = bytes[p - i * esize];
        }
    }
    // The bytes after the last whole element, as they are.
    if end > whole {
        let lo = from.max(whole);
        dst[lo - from..].copy_from_slice(&src[lo..end]);
    }
    true
}

/// Unshuffles `src` (elements of `esize` bytes) into `dst` (the same length), elements of 2,
/// 4 or 8 bytes in native order when `native`; trailing bytes of a partial element copied.
fn unshuffle_native(src: &[u8], esize: usize, dst: &mut [u8], native: bool) {
    let swap = native && cfg!(target_endian = "little");
    let n = src.len() / esize.max(1);
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

/// Reverses `delta` (`ZZ`: `zzdelta`) from `src` into `dst` (the same length), elements of 2,
/// 4 or 8 bytes in native order when `native`; other element sizes are single bytes delta
/// coded.
fn unshuffle_undelta_native<const ZZ: bool>(
    src: &[u8],
    esize: usize,
    dst: &mut [u8],
    native: bool,
) {
    let n = src.len() / esize.max(1);
    let f = match (esize, native) {
        (2, false) => unshuffle_undelta_into::<u16, 2, ZZ, false>,
        (2, true) => unshuffle_undelta_into::<u16, 2, ZZ, true>,
        (4, false) => unshuffle_undelta_into::<u32, 4, ZZ, false>,
        (4, true) => unshuffle_undelta_into::<u32, 4, ZZ, true>,
        (8, false) => unshuffle_undelta_into::<u64, 8, ZZ, false>,
        (8, true) => unshuffle_undelta_into::<u64, 8, ZZ, true>,
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The running sums of `E`-byte words `W` as [`unshuffle_undelta_into`] takes them (with
    /// AVX2, 4- and 2-byte words eight or sixteen a vector; otherwise one at a time) equal the
    /// one-at-a-time big-endian passes: every count of words around the vectors' and the
    /// pieces' lengths, zigzag or not, native or big-endian, on planes of random bytes (sums
    /// that wrap included).
    fn undelta_equals_the_serial_passes<W: Word + bytemuck::Pod, const E: usize>(mut x: u64) {
        let mut bytes = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        };
        type Undelta = fn(&[u8], &mut [u8], usize);
        let ways: [(Undelta, bool, bool); 4] = [
            (unshuffle_undelta_into::<W, E, true, true>, true, true),
            (unshuffle_undelta_into::<W, E, true, false>, true, false),
            (unshuffle_undelta_into::<W, E, false, true>, false, true),
            (unshuffle_undelta_into::<W, E, false, false>, false, false),
        ];
        let counts = (0..70).chain([255, 256, 257, UNDELTA_PIECE + 9, 3 * UNDELTA_PIECE]);
        for n in counts {
            let src: Vec<u8> = (0..n * E).map(|_| bytes()).collect();
            for (f, zigzag, native) in ways {
                let mut want = vec![0u8; n * E];
                if zigzag {
                    unshuffle_undelta_n::<W, E, true>(&src, &mut want, n);
                } else {
                    unshuffle_undelta_n::<W, E, false>(&src, &mut want, n);
                }
                if native {
                    be_to_native(&mut want, E);
                }
                let mut words = vec![W::zeroed(); n];
                let got = bytemuck::cast_slice_mut::<W, u8>(&mut words);
                f(&src, got, n);
                assert!(
                    got == want.as_slice(),
                    "{E}-byte words: {n}, zigzag {zigzag}, native {native}"
                );
            }
        }
    }

    /// The prefix sums of a delta (and zigzag delta) block from its streams' sums (AVX2, when
    /// this CPU has it) equal the one-at-a-time sums: every element size, lengths around the
    /// vectors' 32, random bytes (sums that wrap, odd and even elements) and all-0xFF bytes
    /// (the largest sums).
    #[test]
    fn delta_prefix_equals_the_serial_sums() {
        fn check<W: Word, const E: usize>(src: &[u8], n: usize) {
            for upto in [0, 1, 2, 31, 32, 33, 63, 64, 65, 100, n - 1, n] {
                assert_eq!(
                    delta_prefix::<W, E, true>(src, n, upto),
                    delta_prefix_serial::<W, E, true>(src, n, upto),
                    "E={E} zigzag upto={upto}"
                );
                assert_eq!(
                    delta_prefix::<W, E, false>(src, n, upto),
                    delta_prefix_serial::<W, E, false>(src, n, upto),
                    "E={E} upto={upto}"
                );
            }
        }
        let mut next = crate::codec::tests::xorshift(0x9E37_79B9_7F4A_7C15);
        let n = 1000;
        let random: Vec<u8> = (0..8 * n).map(|_| next() as u8).collect();
        for src in [random, vec![0xFF; 8 * n]] {
            check::<u16, 2>(&src[..2 * n], n);
            check::<u32, 4>(&src[..4 * n], n);
            check::<u64, 8>(&src, n);
        }
    }

    #[test]
    fn undelta_of_4_byte_words_equals_the_serial_passes() {
        undelta_equals_the_serial_passes::<u32, 4>(0x9E37_79B9_7F4A_7C15);
    }

    #[test]
    fn undelta_of_2_byte_words_equals_the_serial_passes() {
        undelta_equals_the_serial_passes::<u16, 2>(0x2545_F491_4F6C_DD1D);
    }

    #[test]
    fn undelta_of_8_byte_words_equals_the_serial_passes() {
        undelta_equals_the_serial_passes::<u64, 8>(0xD1B5_4A32_D192_ED03);
    }
}
