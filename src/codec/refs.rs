//! The `refs` filter (id 7): each element of 4 or 8 bytes as a reference to an earlier equal
//! value, the distinct values once each in a table (design/FORMAT.md specifies it).
//!
//! The distinct values of a block, in the order of their first occurrence, form the table; an
//! element becomes the reference 0 when it is the table's next new entry, else the number of
//! entries so far minus its entry's index (1: the latest entry). The filtered bytes are the n
//! references as big-endian u32, shuffled (all first bytes, then all second bytes, ...), then
//! the table (d entries of e bytes, d the number of zero references), then any trailing bytes
//! of a partial element. Far repeats of whole values (the vertex coordinates of an unstructured
//! mesh, shared by the cells around each vertex, megabytes apart in the cell order) become
//! small numbers that LZMA codes better than matches at long distances.

use super::block::{Coded, Form};
use super::error::RefsError;
use super::space::{KeptScratch, Scratch};
use super::word::be_to_native;
use crate::codec::error::FrameError;
use crate::format::{Codec, FrameHeader};

/// Bytes before the codec's data in a `refs` frame's payload: the table's entry count d, as a
/// big-endian u32.
pub(crate) const PREFIX: usize = 4;

/// Whether the filter is defined for elements of `esize` bytes (4 and 8).
pub(crate) fn supports(esize: usize) -> bool {
    matches!(esize, 4 | 8)
}

/// The length of the filtered bytes of a block of `len` bytes (elements of `esize` bytes) with
/// `d` table entries: 4 n + esize d + t (n elements, t trailing bytes); `None` on overflow or for
/// an element size of 0.
pub(crate) fn filtered_len(len: usize, esize: usize, d: usize) -> Option<usize> {
    let n = len.checked_div(esize)?;
    let t = len % esize;
    n.checked_mul(4)?
        .checked_add(d.checked_mul(esize)?)?
        .checked_add(t)
}

/// A map from element values (up to 8 bytes, as a u64) to their table index: open addressing
/// with linear probing over table indices plus one (0: empty slot), keys compared against the
/// table itself, so any 64-bit value is a key.
struct IndexMap {
    slots: Vec<u32>,
    shift: u32,
}

impl IndexMap {
    fn with_capacity(n: usize) -> IndexMap {
        let len = (2 * n).next_power_of_two().max(16);
        IndexMap {
            slots: vec![0; len],
            shift: 64 - len.trailing_zeros(),
        }
    }

    /// The table index of `key`, or inserts it as `next` (the table's length) and returns
    /// `None`.
    fn get_or_insert(&mut self, key: u64, table: &[u64], next: u32) -> Option<u32> {
        let mask = self.slots.len() - 1;
        // Fibonacci hashing: the product's top bits.
        let mut i = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize & mask;
        loop {
            match self.slots[i] {
                0 => {
                    self.slots[i] = next + 1;
                    return None;
                }
                s if table[(s - 1) as usize] == key => return Some(s - 1),
                _ => i = (i + 1) & mask,
            }
        }
    }
}

/// The element at `e` (`esize` bytes, at most 8) as a u64 key (big-endian, zero-extended).
fn key(e: &[u8]) -> u64 {
    e.iter().fold(0u64, |a, &b| a << 8 | u64::from(b))
}

/// Applies the filter to `data` (elements of `esize` bytes, 4 or 8) into `out`, replacing its
/// contents: the shuffled references, the table, the trailing bytes. Returns d, the number of
/// table entries. `None` (and `out` empty) for another element size or more than `u32::MAX`
/// elements.
///
/// ```text
/// values 5, 7, 5, 5, 9, 7 (e = 4) -> refs 0, 0, 2, 2, 0, 2, table 5, 7, 9
/// ```
pub(crate) fn apply(data: &[u8], esize: usize, out: &mut Vec<u8>) -> Option<u32> {
    out.clear();
    if !supports(esize) {
        return None;
    }
    let n = data.len() / esize;
    let n32 = u32::try_from(n).ok()?;
    out.resize(4 * n, 0);
    let mut map = IndexMap::with_capacity(n);
    let mut table: Vec<u64> = Vec::new();
    for (i, e) in data[..n * esize].chunks_exact(esize).enumerate() {
        let k = key(e);
        // At most n entries, so the count fits in u32 (n32).
        let next = table.len() as u32;
        let r = match map.get_or_insert(k, &table, next) {
            Some(j) => next - j,
            None => {
                table.push(k);
                out.extend_from_slice(e);
                0
            }
        };
        let b = r.to_be_bytes();
        out[i] = b[0];
        out[n + i] = b[1];
        out[2 * n + i] = b[2];
        out[3 * n + i] = b[3];
    }
    debug_assert!(table.len() <= n32 as usize);
    out.extend_from_slice(&data[n * esize..]);
    u32::try_from(table.len()).ok()
}

/// Of the second half of `data`'s elements (`esize` bytes, 4 or 8), how many hold a value that
/// no element before them holds, and the half's element count: few when the values come from
/// a set the first half already holds (stations' coordinates repeated in every cycle of
/// reports). `None` for another element size or fewer than 2 elements.
///
/// ```text
/// values 5, 7, 5, 9 | 7, 5, 8, 5 -> (1, 4): only 8 is new in the second half
/// ```
pub(crate) fn late_new(data: &[u8], esize: usize) -> Option<(usize, usize)> {
    if !supports(esize) {
        return None;
    }
    let n = data.len() / esize;
    if n < 2 {
        return None;
    }
    let mut map = IndexMap::with_capacity(n);
    let mut table: Vec<u64> = Vec::new();
    let mut new = 0;
    for (i, e) in data[..n * esize].chunks_exact(esize).enumerate() {
        let k = key(e);
        let next = table.len() as u32;
        if map.get_or_insert(k, &table, next).is_none() {
            table.push(k);
            if i >= n / 2 {
                new += 1;
            }
        }
    }
    Some((new, n - n / 2))
}

/// Reverses [`apply`]: rebuilds the block of `out.len()` bytes (elements of `esize` bytes, 4 or
/// 8) from the filtered bytes `src` with `d` table entries, checking every part of them.
///
/// # Errors
///
/// [`RefsError`]: an element size other than 4 or 8; more entries than elements; `src` not
/// exactly 4 n + esize d + t bytes long (n elements and t trailing bytes of `out`); a reference larger than the entries so
/// far; more zero references than table entries, or fewer.
pub(crate) fn undo(src: &[u8], esize: usize, d: u32, out: &mut [u8]) -> Result<(), RefsError> {
    if !supports(esize) {
        return Err(RefsError::ElementSize { esize });
    }
    let d = d as usize;
    let n = out.len() / esize;
    if d > n {
        return Err(RefsError::Entries {
            entries: d,
            elements: n,
        });
    }
    if filtered_len(out.len(), esize, d) != Some(src.len()) {
        return Err(RefsError::Length {
            got: src.len(),
            entries: d,
            elements: n,
        });
    }
    let (refs, rest) = src.split_at(4 * n);
    let (table, trailing) = rest.split_at(d * esize);
    let streams: [&[u8]; 4] = std::array::from_fn(|j| &refs[j * n..(j + 1) * n]);
    let mut next = 0usize;
    for (i, o) in out[..n * esize].chunks_exact_mut(esize).enumerate() {
        let r = u32::from_be_bytes([streams[0][i], streams[1][i], streams[2][i], streams[3][i]])
            as usize;
        let j = if r == 0 {
            if next == d {
                return Err(RefsError::TableShort { entries: d });
            }
            next += 1;
            next - 1
        } else if r <= next {
            next - r
        } else {
            return Err(RefsError::Reference {
                element: i,
                reference: r as u32,
                entries: next,
            });
        };
        o.copy_from_slice(&table[j * esize..(j + 1) * esize]);
    }
    if next != d {
        return Err(RefsError::TableLong {
            used: next,
            entries: d,
        });
    }
    out[n * esize..].copy_from_slice(trailing);
    Ok(())
}

/// Filter `refs`: each element a reference into a table of the values seen.
pub(crate) struct Refs;

impl super::block::NumericFront for Refs {
    fn apply(&self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        apply_refs_whole(data, esize, out);
    }
    fn undo(&self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        undo_refs_whole(data, esize, out);
    }
    /// Refs goes with the codecs whose registry line has `REFS`.
    fn wrong_codec(&self, codec: Codec) -> Option<FrameError> {
        Some(RefsError::Codec { codec }.into())
    }
    /// Checks the element size and the table's entry count, kept; the codec decodes the
    /// filtered bytes: exactly the length the count and the block's length give, at most 1.5
    /// times the block's for 8-byte elements, twice for 4-byte ones.
    fn open<'p>(
        &self,
        h: &FrameHeader,
        payload: &'p [u8],
        kept: &mut Scratch,
    ) -> Result<Coded<'p>, FrameError> {
        let esize = usize::from(h.esize);
        if !supports(esize) {
            return Err(RefsError::FrameElementSize { esize: h.esize }.into());
        }
        let block = h.decoded_len as usize;
        if !block.is_multiple_of(esize) {
            return Err(FrameError::FilterElementSize {
                esize: h.esize,
                decoded: h.decoded_len,
            });
        }
        let Some((count, payload)) = payload.split_first_chunk::<PREFIX>() else {
            return Err(RefsError::NoCount {
                stored: h.stored_len,
            }
            .into());
        };
        let d = u32::from_be_bytes(*count);
        let n = block / esize;
        // Bounded by the block's length before anything is allocated.
        let len = filtered_len(block, esize, d as usize)
            .filter(|_| d as usize <= n)
            .ok_or(RefsError::Entries {
                entries: d as usize,
                elements: n,
            })?;
        kept.get::<Entries>().0 = d;
        Ok(Coded {
            payload,
            len,
            form: Form::Bytes,
        })
    }
    /// Rebuilds the elements from the filtered bytes, in native order when `native`.
    fn close(
        &self,
        h: &FrameHeader,
        coded: &mut [u8],
        out: &mut [u8],
        native: bool,
        kept: &mut Scratch,
    ) -> Result<(), FrameError> {
        let esize = usize::from(h.esize);
        undo(coded, esize, kept.get::<Entries>().0, out)?;
        if native {
            be_to_native(out, esize);
        }
        Ok(())
    }
}

/// The table's entry count of the `refs` frame being decoded, kept from its prefix to its
/// undoing.
#[derive(Default)]
struct Entries(u32);

impl KeptScratch for Entries {
    #[cfg(test)]
    fn held(&self) -> usize {
        0
    }
}

/// The `refs` filter as [`apply_filter`](super::filter::apply_filter) gives it: the element count n and the table's entry
/// count d (big-endian u32 each), then the filtered bytes (in a frame, the decoded length gives
/// n, and the payload starts with d only). For an element size other than 4 or 8 (or more than
/// `u32::MAX` elements), the bytes as they are.
pub(crate) fn apply_refs_whole(data: &[u8], esize: usize, out: &mut Vec<u8>) {
    let mut f = Vec::new();
    match apply(data, esize, &mut f) {
        Some(d) => {
            out.clear();
            out.extend_from_slice(&((data.len() / esize) as u32).to_be_bytes());
            out.extend_from_slice(&d.to_be_bytes());
            out.append(&mut f);
        }
        None => {
            out.clear();
            out.extend_from_slice(data);
        }
    }
}

/// Reverses [`apply_refs_whole`]; leaves `out` empty for bytes it cannot have made.
pub(crate) fn undo_refs_whole(data: &[u8], esize: usize, out: &mut Vec<u8>) {
    out.clear();
    if !supports(esize) {
        out.extend_from_slice(data);
        return;
    }
    let Some((head, rest)) = data.split_first_chunk::<8>() else {
        return;
    };
    let n = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let d = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
    // The trailing bytes: what is left of the filtered bytes after the refs and the table.
    let Some(t) = filtered_len(n * esize, esize, d as usize)
        .and_then(|l| rest.len().checked_sub(l))
        .filter(|&t| t < esize)
    else {
        return;
    };
    out.resize(n * esize + t, 0);
    if undo(rest, esize, d, out).is_err() {
        out.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(data: &[u8], esize: usize) -> (Vec<u8>, u32) {
        let mut f = vec![9; 5];
        let d = apply(data, esize, &mut f).unwrap();
        assert_eq!(Some(f.len()), filtered_len(data.len(), esize, d as usize));
        let mut back = vec![0xAA; data.len()];
        undo(&f, esize, d, &mut back).unwrap();
        assert_eq!(back, data, "esize {esize} len {}", data.len());
        (f, d)
    }

    /// The filter as design/FORMAT.md defines it, one element at a time with a linear search.
    fn reference(data: &[u8], esize: usize) -> (Vec<u8>, u32) {
        let n = data.len() / esize;
        let mut table: Vec<&[u8]> = Vec::new();
        let mut refs = Vec::new();
        for e in data[..n * esize].chunks_exact(esize) {
            match table.iter().position(|t| *t == e) {
                Some(j) => refs.push((table.len() - j) as u32),
                None => {
                    refs.push(0);
                    table.push(e);
                }
            }
        }
        let mut out = Vec::new();
        for j in 0..4 {
            out.extend(refs.iter().map(|r| r.to_be_bytes()[j]));
        }
        for t in &table {
            out.extend_from_slice(t);
        }
        out.extend_from_slice(&data[n * esize..]);
        (out, table.len() as u32)
    }

    #[test]
    fn worked_example_of_format_md() {
        // FORMAT.md: the ints 5, 7, 5, 5, 9, 7 (e = 4).
        let data: Vec<u8> = [5u32, 7, 5, 5, 9, 7]
            .iter()
            .flat_map(|x| x.to_be_bytes())
            .collect();
        let (f, d) = roundtrip(&data, 4);
        assert_eq!(d, 3);
        #[rustfmt::skip]
        let expected = [
            0, 0, 0, 0, 0, 0,  // first bytes of the refs 0, 0, 2, 2, 0, 2
            0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0,
            0, 0, 2, 2, 0, 2,  // last bytes
            0, 0, 0, 5,  0, 0, 0, 7,  0, 0, 0, 9,  // the table
        ];
        assert_eq!(f, expected);
    }

    #[test]
    fn doubles_with_nan_payloads_signed_zeros_and_trailing_bytes() {
        let vals = [
            0.0f64,
            -0.0,
            f64::NAN,
            f64::from_bits(0x7FF8_0000_0000_0001),
            f64::from_bits(0xFFF0_0000_0000_0001),
            1.5,
            -0.0,
            0.0,
            f64::from_bits(0x7FF8_0000_0000_0001),
            f64::NAN,
            f64::INFINITY,
            1.5,
        ];
        let mut data: Vec<u8> = vals.iter().flat_map(|x| x.to_be_bytes()).collect();
        let (f, d) = roundtrip(&data, 8);
        // -0.0 and 0.0 are different bit patterns, and so are the NaNs: 7 distinct.
        assert_eq!(d, 7);
        assert_eq!((f.clone(), d), reference(&data, 8));
        for t in 1..8 {
            data.push(t as u8);
            let (f, d) = roundtrip(&data, 8);
            assert_eq!((f, d), reference(&data, 8));
        }
    }

    #[test]
    fn all_distinct_all_equal_empty_and_random_blocks_match_the_definition() {
        let distinct: Vec<u8> = (0..1000u32).flat_map(|x| x.to_be_bytes()).collect();
        let (f, d) = roundtrip(&distinct, 4);
        assert_eq!(d, 1000);
        assert!(f[..4000].iter().all(|&b| b == 0));
        assert_eq!(&f[4000..], &distinct[..]);

        let equal = 7u64.to_be_bytes().repeat(500);
        let (f, d) = roundtrip(&equal, 8);
        assert_eq!(d, 1);
        assert_eq!((f, d), reference(&equal, 8));

        for esize in [4, 8] {
            let (f, d) = roundtrip(&[], esize);
            assert!(f.is_empty() && d == 0);
            let (f, d) = roundtrip(&[1, 2, 3], esize);
            assert_eq!((f, d), (vec![1, 2, 3], 0));
        }

        // Random values from a small set, and u64::MAX / 0 keys (the map's edge cases).
        let mut x = 12345u64;
        for (esize, len, set) in [(4, 4003, 50u64), (8, 8005, 300), (8, 800, 3)] {
            let data: Vec<u8> = (0..len / esize)
                .flat_map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let v = match x % set {
                        0 => u64::MAX,
                        1 => 0,
                        k => k.wrapping_mul(0x9E37_79B9_7F4A_7C15),
                    };
                    v.to_be_bytes()[8 - esize..].to_vec()
                })
                .chain([0xEE; 3])
                .collect();
            let got = roundtrip(&data, esize);
            assert_eq!(got, reference(&data, esize), "esize {esize} len {len}");
        }
    }

    #[test]
    fn other_element_sizes_are_refused() {
        let mut f = Vec::new();
        assert_eq!(apply(&[1, 2, 3, 4], 2, &mut f), None);
        assert_eq!(
            undo(&[], 2, 0, &mut [0; 4]),
            Err(RefsError::ElementSize { esize: 2 })
        );
    }

    #[test]
    fn hostile_filtered_bytes_give_errors() {
        // 3 ints: 5, 5, 6 -> refs 0, 1, 0, table 5, 6.
        let data: Vec<u8> = [5u32, 5, 6].iter().flat_map(|x| x.to_be_bytes()).collect();
        let mut f = Vec::new();
        let d = apply(&data, 4, &mut f).unwrap();
        assert_eq!(d, 2);
        let mut out = [0u8; 12];
        // Truncated, one byte too many, a table entry short or long, an absurd count.
        for (len, dd) in [
            (f.len() - 1, d),
            (f.len() + 1, d),
            (f.len(), 3),
            (f.len(), 1),
        ] {
            let mut g = f.clone();
            g.resize(len, 0);
            assert!(matches!(
                undo(&g, 4, dd, &mut out),
                Err(RefsError::Length { .. })
            ));
        }
        assert_eq!(
            undo(&f, 4, u32::MAX, &mut out),
            Err(RefsError::Entries {
                entries: u32::MAX as usize,
                elements: 3
            })
        );
        // The second ref (last bytes at 3 n + 1 = 10) made 2: only one entry so far.
        let mut g = f.clone();
        g[10] = 2;
        assert_eq!(
            undo(&g, 4, d, &mut out),
            Err(RefsError::Reference {
                element: 1,
                reference: 2,
                entries: 1
            })
        );
        // A high byte set: a reference of 2^24 + 1.
        let mut g = f.clone();
        g[1] = 1;
        assert!(matches!(
            undo(&g, 4, d, &mut out),
            Err(RefsError::Reference { element: 1, .. })
        ));
        // More zero refs than entries: the refs 0, 0, 0 with a table of 2.
        let mut g = f.clone();
        g[10] = 0;
        assert_eq!(
            undo(&g, 4, d, &mut out),
            Err(RefsError::TableShort { entries: 2 })
        );
        // Fewer zero refs than entries: refs 0, 1, 1 with a table of 2.
        let mut g = f.clone();
        g[11] = 1;
        assert_eq!(
            undo(&g, 4, d, &mut out),
            Err(RefsError::TableLong {
                used: 1,
                entries: 2
            })
        );
    }

    #[test]
    fn random_filtered_bytes_never_panic() {
        let mut x = 777u64;
        for round in 0..2000 {
            let esize = if round % 2 == 0 { 4 } else { 8 };
            let len = (round % 37) as usize;
            let d = (round % 5) as u32;
            let src: Vec<u8> = (0..(round % 61))
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x % 4) as u8
                })
                .collect();
            let mut out = vec![0u8; len];
            let _ = undo(&src, esize, d, &mut out);
        }
    }
}
