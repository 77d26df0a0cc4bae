//! Small records a chunk at a time: where the bytes of a record go ([`RecordPattern`]), and the
//! copies both directions make with it.
//!
//! A record of many small variables is many tiny segments, and visiting them one by one costs
//! more than copying them. So packing reads a chunk of records whole, gathers each variable's
//! slabs out of it ([`gather`]) and then passes on the padding ([`RecordPattern::padding`]);
//! unpacking fills a chunk the same way, scattering each variable's slabs into it ([`scatter`])
//! and then the padding. Both go variable by variable, then padding in file order, so the
//! streams' bytes are the same whichever way the records are visited.

use super::layout::Layout;
use std::ops::Range;

/// Records up to this size have a [`RecordPattern`] (see [`Layout::record_pattern`]).
pub(crate) const BATCH_RECSIZE_MAX: u64 = 64 << 10;

/// Bytes of records handled at a time with a [`RecordPattern`]: whole records, at least one.
pub(crate) const BATCH_BYTES: u64 = 4 << 20;

/// Where the bytes of one record go, for handling many small records at once: a record of many
/// small variables is many tiny segments, and visiting them one by one costs more than copying
/// them. Packing reads a chunk of [`RecordPattern::per_chunk`] records whole and gathers each
/// variable's slabs, then the residual bytes (padding) in file order; unpacking scatters them
/// back the same way. The chunks depend on the record index alone, so a file and the same bytes
/// from a pipe are handled identically.
///
/// ```
/// use nc3pack::nc3::{Header, Layout};
/// let b = std::fs::read("samples/classic_records.nc").unwrap();
/// let h = Header::parse(&b, b.len() as u64).unwrap();
/// let l = Layout::new(&h, b.len() as u64).unwrap();
/// let p = l.record_pattern().unwrap();
/// assert_eq!(p.recsize, l.recsize);
/// assert_eq!(p.vars.len(), 9); // every record variable has bytes
/// assert!(p.per_chunk >= 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordPattern {
    /// Offset of the first record (its first record variable with bytes).
    pub first_begin: u64,
    /// Bytes from one record to the next.
    pub recsize: u64,
    /// (offset in the record, length, variable) of each record variable with bytes, in file
    /// order.
    pub vars: Vec<(usize, usize, usize)>,
    /// (offset in the record, length) of the padding between them, in file order.
    pub gaps: Vec<(usize, usize)>,
    /// Where the last variable of a record ends: the record's bytes after it (padding) are
    /// residual bytes, in file order before the next record.
    pub last_end: usize,
    /// Records a chunk holds: 4 MiB of them (`BATCH_BYTES`), at least one.
    pub per_chunk: u64,
}

impl Layout {
    /// The pattern of the records, if they are at most 64 KiB (`BATCH_RECSIZE_MAX`) and regular
    /// (variables in increasing order of offset, not overlapping, within `recsize`).
    ///
    /// ```
    /// use nc3pack::nc3::{Header, Layout};
    /// let bytes = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&bytes, bytes.len() as u64).unwrap();
    /// let p = Layout::new(&h, bytes.len() as u64).unwrap().record_pattern().unwrap();
    /// assert_eq!(p.span(1), p.last_end as u64);
    /// ```
    pub fn record_pattern(&self) -> Option<RecordPattern> {
        if self.recsize == 0 || self.recsize > BATCH_RECSIZE_MAX {
            return None;
        }
        let recs: Vec<usize> = self
            .rec_order()
            .iter()
            .copied()
            .filter(|&i| self.vars[i].slab > 0)
            .collect();
        let first_begin = self.vars[*recs.first()?].begin;
        let (mut vars, mut gaps, mut pos) = (Vec::new(), Vec::new(), 0u64);
        for i in recs {
            let v = &self.vars[i];
            let off = v.begin - first_begin;
            if off < pos {
                return None;
            }
            if off > pos {
                gaps.push((pos as usize, (off - pos) as usize));
            }
            vars.push((off as usize, v.slab as usize, i));
            pos = off + v.slab;
        }
        if pos > self.recsize {
            return None;
        }
        Some(RecordPattern {
            first_begin,
            recsize: self.recsize,
            vars,
            gaps,
            last_end: pos as usize,
            per_chunk: (BATCH_BYTES / self.recsize).max(1),
        })
    }
}

impl RecordPattern {
    /// Bytes from the start of the first of `k` (≥ 1) records to the end of the last one's
    /// last variable.
    ///
    /// ```
    /// use nc3pack::nc3::{Header, Layout};
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// let l = Layout::new(&h, b.len() as u64).unwrap();
    /// let p = l.record_pattern().unwrap();
    /// assert_eq!(p.span(1), p.last_end as u64);
    /// assert_eq!(p.span(3), 2 * p.recsize + p.last_end as u64);
    /// ```
    pub fn span(&self, k: u64) -> u64 {
        (k - 1) * self.recsize + self.last_end as u64
    }

    /// The record variable whose segment starts a chunk (the first with bytes).
    pub(crate) fn first_var(&self) -> usize {
        self.vars[0].2
    }

    /// Records in the chunk that starts after `done` of `numrecs` records.
    pub(crate) fn chunk_records(&self, done: u64, numrecs: u64) -> u64 {
        self.per_chunk.min(numrecs - done)
    }

    /// Where the padding (residual bytes) lies in the first [`span`](Self::span)`(k)` bytes of
    /// `k` (≥ 1) records, in file order: each record's gaps, then, but for the last record,
    /// its bytes after its last variable.
    pub(crate) fn padding(&self, k: usize) -> impl Iterator<Item = Range<usize>> + '_ {
        let rs = self.recsize as usize;
        (0..k).flat_map(move |r| {
            let at = r * rs;
            let tail = (r + 1 < k && self.last_end < rs).then_some(at + self.last_end..at + rs);
            (self
                .gaps
                .iter()
                .map(move |&(off, len)| at + off..at + off + len))
            .chain(tail)
        })
    }

    /// Bytes of [`padding`](Self::padding)`(k)`.
    pub(crate) fn padding_len(&self, k: u64) -> u64 {
        let gaps: u64 = self.gaps.iter().map(|g| g.1 as u64).sum();
        k * gaps + (k - 1) * (self.recsize - self.last_end as u64)
    }
}

/// Appends `n` pieces of `len` bytes, `data[at..at + len]` and every `stride` bytes after, to
/// `out`; the common element sizes get fixed-size copies.
pub(crate) fn gather(
    out: &mut Vec<u8>,
    data: &[u8],
    at: usize,
    stride: usize,
    len: usize,
    n: usize,
) {
    fn fixed<const L: usize>(out: &mut Vec<u8>, data: &[u8], at: usize, stride: usize, n: usize) {
        for i in 0..n {
            let p = at + i * stride;
            out.extend_from_slice(&data[p..p + L]);
        }
    }
    out.reserve(n * len);
    match len {
        1 => fixed::<1>(out, data, at, stride, n),
        2 => fixed::<2>(out, data, at, stride, n),
        4 => fixed::<4>(out, data, at, stride, n),
        8 => fixed::<8>(out, data, at, stride, n),
        _ => {
            for i in 0..n {
                let p = at + i * stride;
                out.extend_from_slice(&data[p..p + len]);
            }
        }
    }
}

/// Copies `src`, pieces of `len` bytes, to `out` at `at` and every `stride` bytes after (the
/// reverse of [`gather`]); the common element sizes get fixed-size copies.
pub(crate) fn scatter(out: &mut [u8], at: usize, stride: usize, src: &[u8], len: usize) {
    fn fixed<const L: usize>(out: &mut [u8], at: usize, stride: usize, src: &[u8]) {
        for (i, piece) in src.chunks_exact(L).enumerate() {
            let p = at + i * stride;
            out[p..p + L].copy_from_slice(piece);
        }
    }
    match len {
        1 => fixed::<1>(out, at, stride, src),
        2 => fixed::<2>(out, at, stride, src),
        4 => fixed::<4>(out, at, stride, src),
        8 => fixed::<8>(out, at, stride, src),
        _ => {
            for (i, piece) in src.chunks_exact(len).enumerate() {
                let p = at + i * stride;
                out[p..p + len].copy_from_slice(piece);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nc3::header::{Header, NcType, NumRecs, Variant};

    /// byte f(x) at 100 (3 bytes), then records of short a(t,3) at 104 (6 bytes, padded to 8)
    /// and byte c(t,3) at 112 (3 bytes, padded to 4): recsize 12, a gap of 2 bytes after `a`
    /// and 1 byte of padding after `c`.
    fn layout(numrecs: u64) -> Layout {
        let h = Header::from_parts(
            Variant::Cdf1,
            NumRecs::Count(numrecs),
            100,
            &[("t", 0), ("x", 3)],
            &[
                ("f", vec![1], NcType::Byte, 100),
                ("a", vec![0, 1], NcType::Short, 104),
                ("c", vec![0, 1], NcType::Byte, 112),
            ],
        );
        Layout::new(&h, 104 + 12 * numrecs).unwrap()
    }

    #[test]
    fn pattern_of_a_record_with_gaps_and_trailing_padding() {
        let p = layout(3).record_pattern().unwrap();
        assert_eq!(
            p,
            RecordPattern {
                first_begin: 104,
                recsize: 12,
                vars: vec![(0, 6, 1), (8, 3, 2)],
                gaps: vec![(6, 2)],
                last_end: 11,
                per_chunk: (4 << 20) / 12,
            }
        );
        assert_eq!(p.first_var(), 1);
        assert_eq!(p.span(1), 11);
        assert_eq!(p.span(3), 35);
        assert_eq!(p.chunk_records(0, 3), 3);
        assert_eq!(p.chunk_records(2, 3), 1);
    }

    #[test]
    fn padding_of_a_chunk_in_file_order() {
        let p = layout(3).record_pattern().unwrap();
        // Record r starts at 12r: gap 12r+6..12r+8, tail 12r+11..12r+12 but after the last.
        let want = vec![6..8, 11..12, 18..20, 23..24, 30..32];
        assert_eq!(p.padding(3).collect::<Vec<_>>(), want);
        assert_eq!(p.padding_len(3), 8);
        assert_eq!(p.padding(1).collect::<Vec<_>>(), vec![6..8]);
        assert_eq!(p.padding_len(1), 2);
    }

    #[test]
    fn records_too_large_or_absent_have_no_pattern() {
        // One record variable of 70000 bytes: a record over 64 KiB.
        let big = Header::from_parts(
            Variant::Cdf1,
            NumRecs::Count(1),
            100,
            &[("t", 0), ("x", 70000)],
            &[("a", vec![0, 1], NcType::Byte, 100)],
        );
        assert_eq!(Layout::new(&big, 70100).unwrap().record_pattern(), None);
        // No records at all.
        let fixed = Header::from_parts(
            Variant::Cdf1,
            NumRecs::Count(0),
            100,
            &[("x", 3)],
            &[("f", vec![0], NcType::Byte, 100)],
        );
        assert_eq!(Layout::new(&fixed, 103).unwrap().record_pattern(), None);
    }

    #[test]
    fn gather_and_scatter_a_chunk_by_hand() {
        let p = layout(3).record_pattern().unwrap();
        let chunk: Vec<u8> = (0..35).collect();
        let (mut a, mut c) = (Vec::new(), Vec::new());
        gather(&mut a, &chunk, 0, 12, 6, 3);
        gather(&mut c, &chunk, 8, 12, 3, 3);
        assert_eq!(
            a,
            [0, 1, 2, 3, 4, 5, 12, 13, 14, 15, 16, 17, 24, 25, 26, 27, 28, 29]
        );
        assert_eq!(c, [8, 9, 10, 20, 21, 22, 32, 33, 34]);
        // Back: both variables, then the padding, give the chunk again.
        let mut back = vec![0xffu8; 35];
        scatter(&mut back, 0, 12, &a, 6);
        scatter(&mut back, 8, 12, &c, 3);
        for r in p.padding(3) {
            back[r.clone()].copy_from_slice(&chunk[r]);
        }
        assert_eq!(back, chunk);
    }

    #[test]
    fn gather_and_scatter_fixed_sizes() {
        let data: Vec<u8> = (0..40).collect();
        // Three pieces starting at byte 1, every 13 bytes.
        let cases: [(usize, &[u8]); 4] = [
            (1, &[1, 14, 27]),
            (2, &[1, 2, 14, 15, 27, 28]),
            (4, &[1, 2, 3, 4, 14, 15, 16, 17, 27, 28, 29, 30]),
            (
                8,
                &[
                    1, 2, 3, 4, 5, 6, 7, 8, 14, 15, 16, 17, 18, 19, 20, 21, 27, 28, 29, 30, 31, 32,
                    33, 34,
                ],
            ),
        ];
        for (len, want) in cases {
            let mut out = vec![9];
            gather(&mut out, &data, 1, 13, len, 3);
            assert_eq!(out[0], 9, "gather appends");
            assert_eq!(&out[1..], want, "gather, len {len}");
            let mut back = vec![0u8; 40];
            scatter(&mut back, 1, 13, want, len);
            let mut expect = vec![0u8; 40];
            for i in 0..3 {
                expect[1 + 13 * i..1 + 13 * i + len]
                    .copy_from_slice(&data[1 + 13 * i..1 + 13 * i + len]);
            }
            assert_eq!(back, expect, "scatter, len {len}");
        }
    }
}
