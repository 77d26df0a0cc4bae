//! How often a block's values repeat beyond its sample (for lzma and `refs`).

use super::*;
use crate::codec::pcodec::NumKind;

/// The bytes [`far_repeats`] judges a block of `esize`-byte numbers by: 8-byte numbers one by
/// one, 4-byte integers one by one, 4-byte floats (or numbers of unknown type) in pairs;
/// `None` for other sizes. Lone repeated 4-byte floats are not judged: noisy float fields of a
/// few million distinct values repeat them by chance (gridded.nc's t2m), where lzma loses;
/// repeated integers (a mesh's vertex numbers) are what LZMA finds.
pub(crate) fn repeat_unit(esize: usize, kind: Option<NumKind>) -> Option<usize> {
    match esize {
        8 => Some(8),
        4 if kind.is_some_and(|k| !k.is_float()) => Some(4),
        4 => Some(8),
        _ => None,
    }
}

/// Whether the shares [`repeat_shares`] gives say the block's pieces repeat more than the
/// sample's by [`FAR_REPEATS`]: repeats farther apart than the sample, which a sample cannot
/// show (the shared vertex coordinates of unstructured meshes, repeated longitudes).
pub(crate) fn far_repeats(shares: Option<(f64, f64)>) -> bool {
    shares.is_some_and(|(all, head)| all >= head + FAR_REPEATS)
}

/// The share of the `unit`-byte pieces (4 or 8) of `data` equal to an earlier piece, and that
/// share among the first `n` bytes (see [`far_repeats`]); `None` for another unit or when
/// `data` is shorter than twice `n`. A piece equal to the one just before it is a run (fill
/// values, constants), which a sample shows and zstd codes as well: not counted.
pub(crate) fn repeat_shares(data: &[u8], n: usize, unit: usize) -> Option<(f64, f64)> {
    if !matches!(unit, 4 | 8) || n < unit || data.len() < 2 * n {
        return None;
    }
    let count = data.len() / unit;
    let head = n / unit;
    let mut seen = RepeatSet::with_capacity(count);
    let mut repeats_head = 0usize;
    let mut repeats = 0usize;
    let mut prev = None;
    for (i, v) in data.chunks_exact(unit).enumerate() {
        let mut x = [0u8; 8];
        x[..unit].copy_from_slice(v);
        let x = u64::from_le_bytes(x);
        if !seen.insert(x) && prev != Some(x) {
            repeats += 1;
            if i < head {
                repeats_head += 1;
            }
        }
        prev = Some(x);
    }
    let share = |r: usize, of: usize| r as f64 / of.max(1) as f64;
    Some((share(repeats, count), share(repeats_head, head)))
}

/// A set of 64-bit values (open addressing, linear probing): faster than a `HashSet` for the
/// million values of an 8 MiB block, and allocation-free once made.
pub(crate) struct RepeatSet {
    /// Slots: a value plus one (0: empty), so that the value `u64::MAX` wraps to 0 and is
    /// kept apart in `max_seen`.
    slots: Vec<u64>,
    max_seen: bool,
}

impl RepeatSet {
    pub(crate) fn with_capacity(n: usize) -> RepeatSet {
        RepeatSet {
            slots: vec![0; (2 * n).next_power_of_two().max(16)],
            max_seen: false,
        }
    }

    /// Inserts `v`; false when it was there already.
    pub(crate) fn insert(&mut self, v: u64) -> bool {
        if v == u64::MAX {
            return !std::mem::replace(&mut self.max_seen, true);
        }
        let key = v + 1;
        let mask = self.slots.len() - 1;
        // Fibonacci hashing: the product's top bits.
        let shift = 64 - self.slots.len().trailing_zeros();
        let mut i = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize & mask;
        loop {
            match self.slots[i] {
                0 => {
                    self.slots[i] = key;
                    return true;
                }
                k if k == key => return false,
                _ => i = (i + 1) & mask,
            }
        }
    }
}
