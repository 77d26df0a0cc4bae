//! The words the filters work on: unsigned integers of 2, 4 and 8 bytes read and written
//! big-endian (netCDF's byte order), and the swap of such elements to native order.
//!
//! A leaf of the format: the block filters (`codec`), the 2-D predictors (`lorenzo`, `plane`)
//! and the pco codec path all take their elements from here.

/// Whether this CPU has AVX2, FMA and BMI2 (the x86-64 CPUs with AVX2 have the other two), for
/// the hot loops compiled a second time for them (`fit`, `plane`, `mask`: the same results,
/// chosen at run time; std caches the answer).
#[cfg(target_arch = "x86_64")]
pub(crate) fn has_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("fma")
        && std::arch::is_x86_feature_detected!("bmi2")
}

/// The element types of the delta filters: unsigned integers of 2, 4 and 8 bytes.
pub(crate) trait Word: Copy {
    const ZERO: Self;
    /// Every bit but the top one.
    const MAGNITUDE: Self;
    /// The integer whose big-endian bytes are `b` (as many as the type has).
    fn from_be(b: &[u8]) -> Self;
    /// Writes the big-endian bytes into `b` (as many as the type has).
    fn put_be(self, b: &mut [u8]);
    /// Big-endian byte `j`.
    fn be_byte(self, j: usize) -> u8;
    fn wrapping_sub(self, rhs: Self) -> Self;
    fn wrapping_add(self, rhs: Self) -> Self;
    /// Zigzag encoding of the value viewed as signed: 0, -1, 1, -2, ... become 0, 1, 2, 3, ...
    fn zigzag(self) -> Self;
    /// Reverses [`Word::zigzag`].
    fn unzigzag(self) -> Self;
    /// The value with its bytes in reverse order.
    fn swap(self) -> Self;
    /// The value whose native bytes are this one's big-endian bytes.
    fn to_be(self) -> Self;
    fn xor(self, rhs: Self) -> Self;
    fn and(self, rhs: Self) -> Self;
    /// All ones if the top bit is set, else zero.
    fn sign_fill(self) -> Self;
}

macro_rules! impl_word {
    ($($u:ty, $i:ty);*) => {$(
        impl Word for $u {
            const ZERO: Self = 0;
            const MAGNITUDE: Self = <$u>::MAX >> 1;
            fn from_be(b: &[u8]) -> Self {
                // Callers pass exact chunks of the type's size (asserted at compile time).
                Self::from_be_bytes(b.try_into().unwrap())
            }
            fn put_be(self, b: &mut [u8]) {
                b.copy_from_slice(&self.to_be_bytes());
            }
            fn be_byte(self, j: usize) -> u8 {
                self.to_be_bytes()[j]
            }
            fn wrapping_sub(self, rhs: Self) -> Self {
                <$u>::wrapping_sub(self, rhs)
            }
            fn wrapping_add(self, rhs: Self) -> Self {
                <$u>::wrapping_add(self, rhs)
            }
            fn zigzag(self) -> Self {
                let s = self as $i;
                ((s << 1) ^ (s >> (<$i>::BITS - 1))) as $u
            }
            fn unzigzag(self) -> Self {
                (self >> 1) ^ (self & 1).wrapping_neg()
            }
            fn swap(self) -> Self {
                self.swap_bytes()
            }
            fn to_be(self) -> Self {
                <$u>::to_be(self)
            }
            fn xor(self, rhs: Self) -> Self {
                self ^ rhs
            }
            fn and(self, rhs: Self) -> Self {
                self & rhs
            }
            fn sign_fill(self) -> Self {
                ((self as $i) >> (<$i>::BITS - 1)) as $u
            }
        }
    )*};
}

impl_word!(u16, i16; u32, i32; u64, i64);

/// Converts big-endian elements of `esize` bytes (2, 4 or 8; other sizes are left alone) to
/// native byte order in place.
pub(crate) fn be_to_native(bytes: &mut [u8], esize: usize) {
    if cfg!(target_endian = "big") {
        return;
    }
    match esize {
        2 => swap_n::<u16, 2>(bytes),
        4 => swap_n::<u32, 4>(bytes),
        8 => swap_n::<u64, 8>(bytes),
        _ => {}
    }
}

fn swap_n<W: Word + bytemuck::Pod, const E: usize>(bytes: &mut [u8]) {
    // Aligned whole words (the usual case: a numpy array or a Vec of the element type) swap as
    // integers, which the compiler vectorizes; anything else byte by byte.
    match bytemuck::try_cast_slice_mut::<u8, W>(bytes) {
        Ok(words) => swap_words(words),
        Err(_) => {
            for c in bytes.chunks_exact_mut(E) {
                c.reverse();
            }
        }
    }
}

/// Swaps the bytes of every word: with AVX2 where the CPU has it (one shuffle per 32 bytes,
/// about twice the speed of the baseline's shifts).
fn swap_words<W: Word>(words: &mut [W]) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: this CPU has the instructions `swap_words_avx2` is compiled for.
        unsafe { swap_words_avx2(words) };
        return;
    }
    swap_words_any(words);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi2,fma")]
fn swap_words_avx2<W: Word>(words: &mut [W]) {
    swap_words_any(words);
}

#[inline(always)]
fn swap_words_any<W: Word>(words: &mut [W]) {
    for w in words {
        *w = w.swap();
    }
}

/// Copies big-endian elements of `esize` bytes (2, 4 or 8; other sizes are copied as they are)
/// from `src` into `dst` (the same length) in native byte order: one pass over the bytes
/// instead of a copy and then a swap.
pub(crate) fn copy_be_to_native(src: &[u8], dst: &mut [u8], esize: usize) {
    if cfg!(target_endian = "big") {
        dst.copy_from_slice(src);
        return;
    }
    match esize {
        2 => copy_swap_n::<u16>(src, dst, esize),
        4 => copy_swap_n::<u32>(src, dst, esize),
        8 => copy_swap_n::<u64>(src, dst, esize),
        _ => dst.copy_from_slice(src),
    }
}

fn copy_swap_n<W: Word + bytemuck::Pod>(src: &[u8], dst: &mut [u8], esize: usize) {
    match (
        bytemuck::try_cast_slice::<u8, W>(src),
        bytemuck::try_cast_slice_mut::<u8, W>(dst),
    ) {
        (Ok(from), Ok(to)) if from.len() == to.len() => copy_swap_words(from, to),
        _ => {
            dst.copy_from_slice(src);
            be_to_native(dst, esize);
        }
    }
}

/// `to[i] = from[i].swap()`, with AVX2 where the CPU has it.
fn copy_swap_words<W: Word>(from: &[W], to: &mut [W]) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: this CPU has the instructions `copy_swap_words_avx2` is compiled for.
        unsafe { copy_swap_words_avx2(from, to) };
        return;
    }
    copy_swap_words_any(from, to);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi2,fma")]
fn copy_swap_words_avx2<W: Word>(from: &[W], to: &mut [W]) {
    copy_swap_words_any(from, to);
}

#[inline(always)]
fn copy_swap_words_any<W: Word>(from: &[W], to: &mut [W]) {
    for (t, f) in to.iter_mut().zip(from) {
        *t = f.swap();
    }
}

/// The row length [`apply_filter`](super::filter::apply_filter) and [`undo_filter`](super::filter::undo_filter) give the `lorenzo` filter: the whole
/// block as one row (blocks of variables use the variable's rows; see [`apply_lorenzo`](super::filter::apply_lorenzo)).
pub(crate) fn whole_row(data: &[u8], esize: usize) -> usize {
    (data.len() / esize.max(1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fused copy gives what a copy and then the swap in place give, for every element
    /// size, aligned and not (a byte off), whole numbers of elements of odd counts.
    #[test]
    fn copy_be_to_native_is_a_copy_then_a_swap() {
        let words: Vec<u64> = (0..1001u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect();
        let all: &[u8] = bytemuck::cast_slice(&words);
        for esize in [1, 2, 3, 4, 8] {
            for (from, to_off) in [(0, 0), (1, 0), (0, 1), (8, 8)] {
                let n = (all.len() - 16) / esize * esize - esize;
                let src = &all[from..from + n];
                let mut want = src.to_vec();
                be_to_native(&mut want, esize);
                let mut space = vec![0u64; n.div_ceil(8) + 2];
                let dst = &mut bytemuck::cast_slice_mut::<u64, u8>(&mut space)[to_off..to_off + n];
                copy_be_to_native(src, dst, esize);
                assert!(
                    dst == want.as_slice(),
                    "esize {esize}, offsets {from} {to_off}"
                );
            }
        }
    }
}
