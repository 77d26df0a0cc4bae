//! The words the filters work on: unsigned integers of 2, 4 and 8 bytes read and written
//! big-endian (netCDF's byte order), and the swap of such elements to native order.
//!
//! A leaf of the format: the block filters (`codec`), the 2-D predictors (`lorenzo`, `plane`)
//! and the pco codec path all take their elements from here.

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
        Ok(words) => {
            for w in words {
                *w = w.swap();
            }
        }
        Err(_) => {
            for c in bytes.chunks_exact_mut(E) {
                c.reverse();
            }
        }
    }
}
