//! Which bytes a byte range of the file holds, found from the layout alone: the header's, a
//! variable's (at which offset of its materialized data, records de-interleaved) or residual
//! bytes (at which offset of all of them, in file order) — without walking the file from its
//! start, so that a range deep inside a file of millions of records costs a few binary searches.
//!
//! These are the same owners and offsets as [`Layout::walk`]'s segments give, taken in order
//! (the integration tests check it for every sample): an archive keeps each owner's bytes as a
//! stream in that order, so this is what rebuilds any byte range of the original from the
//! streams (`crate::read::original`), as unpacking rebuilds the whole file from the walk.

use super::layout::{Layout, Target};

/// A run of a file's bytes with one owner, and where they lie in the owner's bytes: the header's
/// bytes, a variable's materialized data (a record variable's records one after the other), or
/// the residual bytes in file order ([`Layout::walk_range`]).
///
/// ```
/// use nc3pack::nc3::{Header, Layout, Span, Target};
/// let b = std::fs::read("samples/classic_records.nc").unwrap();
/// let h = Header::parse(&b, b.len() as u64).unwrap();
/// let l = Layout::new(&h, b.len() as u64).unwrap();
/// let mut spans: Vec<Span> = Vec::new();
/// l.walk_range(0, 4, |s| -> Result<(), ()> { spans.push(s); Ok(()) }).unwrap();
/// assert_eq!(spans, [Span { offset: 0, len: 4, target: Target::Header, at: 0 }]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Offset in the file.
    pub offset: u64,
    /// Length in bytes (never 0).
    pub len: u64,
    /// Owner.
    pub target: Target,
    /// Offset of the first byte in the owner's bytes.
    pub at: u64,
}

impl Layout {
    /// How many of `target`'s bytes lie before file offset `p`: of the header, of a
    /// variable's materialized data, or residual bytes. At the end of the file, a variable's
    /// `total`, and the residual bytes' [`Layout::residual_len`].
    ///
    /// ```
    /// use nc3pack::nc3::{Header, Layout, Target};
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// let l = Layout::new(&h, b.len() as u64).unwrap();
    /// let t = h.var_id("time").unwrap(); // a record variable
    /// assert_eq!(l.owned_before(Target::Var(t), l.file_len), l.vars[t].total);
    /// // One record later, one more slab of it.
    /// let second = l.vars[t].begin + l.recsize;
    /// assert_eq!(l.owned_before(Target::Var(t), second), l.vars[t].slab);
    /// assert_eq!(l.owned_before(Target::Residual, l.file_len), l.residual_len);
    /// ```
    pub fn owned_before(&self, target: Target, p: u64) -> u64 {
        let p = p.min(self.file_len);
        match target {
            Target::Header => p.min(self.header_len),
            Target::Var(i) => self.var_before(i, p),
            Target::Residual => {
                let vars: u64 = (0..self.vars.len()).map(|i| self.var_before(i, p)).sum();
                p.saturating_sub(p.min(self.header_len))
                    .saturating_sub(vars)
            }
        }
    }

    /// Bytes of variable `i`'s materialized data before file offset `p` (≤ `file_len`).
    fn var_before(&self, i: usize, p: u64) -> u64 {
        let v = &self.vars[i];
        if p <= v.begin || v.total == 0 {
            return 0;
        }
        let q = p - v.begin;
        if !v.is_record {
            return q.min(v.total);
        }
        // Records whose slab ends by `p`, then the part of the next one (a slab is at most
        // `recsize`, so at most one record is cut).
        let n = self.numrecs;
        let whole = if q >= v.slab {
            ((q - v.slab) / self.recsize + 1).min(n)
        } else {
            0
        };
        let part = if whole < n {
            q.saturating_sub(whole * self.recsize).min(v.slab)
        } else {
            0
        };
        whole * v.slab + part
    }

    /// Where the records lie: from the first record variable's `begin` to the end of the last
    /// record's last variable with bytes; `None` without records.
    fn records_extent(&self) -> Option<(u64, u64)> {
        let &first = self.rec_order().first()?;
        if self.numrecs == 0 || self.recsize == 0 {
            return None;
        }
        let start = self.vars[first].begin;
        let last_end = self
            .rec_order()
            .iter()
            .map(|&i| &self.vars[i])
            .filter(|v| v.slab > 0)
            .map(|v| v.begin + v.slab - start)
            .max()?;
        Some((start, start + (self.numrecs - 1) * self.recsize + last_end))
    }

    /// The owner of the byte at `pos` (< `file_len`), and where its run of bytes ends (after
    /// `pos`; a residual run may end early, at a run of zero bytes).
    fn owner_at(&self, pos: u64) -> (Target, u64) {
        if pos < self.header_len {
            return (Target::Header, self.header_len);
        }
        // Fixed variables: by `begin`, so their ends ascend too (they do not overlap).
        let fixed = self.fixed_order();
        let end = |i: usize| self.vars[i].begin + self.vars[i].total;
        let k = fixed.partition_point(|&i| end(i) <= pos);
        if let Some(&i) = fixed.get(k) {
            let v = &self.vars[i];
            return if v.begin <= pos {
                (Target::Var(i), end(i))
            } else {
                (Target::Residual, v.begin)
            };
        }
        let Some((start, stop)) = self.records_extent() else {
            return (Target::Residual, self.file_len);
        };
        if pos < start {
            return (Target::Residual, start);
        }
        if pos >= stop {
            return (Target::Residual, self.file_len);
        }
        // Inside record r, at `rel` from its start: the pattern of record 0, `recsize` on.
        let r = (pos - start) / self.recsize;
        let base = start + r * self.recsize;
        let rel = pos - base;
        let recs = self.rec_order();
        let rel_end = |i: usize| self.vars[i].begin - start + self.vars[i].slab;
        let k = recs.partition_point(|&i| rel_end(i) <= rel);
        match recs.get(k) {
            Some(&i) if self.vars[i].begin - start <= rel => (Target::Var(i), base + rel_end(i)),
            Some(&i) => (Target::Residual, base + self.vars[i].begin - start),
            None => (Target::Residual, base + self.recsize),
        }
    }

    /// Offset in variable `i`'s materialized data of the file byte `pos`, which it owns.
    fn var_at(&self, i: usize, pos: u64) -> u64 {
        let v = &self.vars[i];
        let d = pos - v.begin;
        if !v.is_record {
            return d;
        }
        let r = d / self.recsize;
        r * v.slab + (d - r * self.recsize)
    }

    /// Visits the bytes `[a, b)` of the file (cut to the file's length) in order, as runs with
    /// one owner each, and where each run lies in its owner's bytes ([`Span`]): the header's,
    /// a variable's materialized data (a record variable's records one after the other) or the
    /// residual bytes. The runs are contiguous and cover the range exactly; a variable's bytes
    /// in the range are one contiguous run of its data, as are the residual bytes.
    ///
    /// ```
    /// use nc3pack::nc3::{Header, Layout, Span, Target};
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// let l = Layout::new(&h, b.len() as u64).unwrap();
    /// let t = h.var_id("time").unwrap(); // the first record variable, a double
    /// let third = l.vars[t].begin + 2 * l.recsize; // record 2's time
    /// let mut spans: Vec<Span> = Vec::new();
    /// l.walk_range(third, third + 8, |s| -> Result<(), ()> { spans.push(s); Ok(()) }).unwrap();
    /// assert_eq!(spans, [Span { offset: third, len: 8, target: Target::Var(t), at: 16 }]);
    /// ```
    ///
    /// # Errors
    ///
    /// The first error `f` returns, which stops the walk.
    pub fn walk_range<E>(
        &self,
        a: u64,
        b: u64,
        mut f: impl FnMut(Span) -> Result<(), E>,
    ) -> Result<(), E> {
        let b = b.min(self.file_len);
        if a >= b {
            return Ok(());
        }
        let mut residual = self.owned_before(Target::Residual, a);
        let mut pos = a;
        while pos < b {
            let (target, end) = self.owner_at(pos);
            // (Every run ends after `pos`: a guard against a layout this code did not foresee
            // looping forever.)
            let end = end.clamp(pos + 1, b);
            let at = match target {
                Target::Header => pos,
                Target::Var(i) => self.var_at(i, pos),
                Target::Residual => {
                    residual += end - pos;
                    residual - (end - pos)
                }
            };
            f(Span {
                offset: pos,
                len: end - pos,
                target,
                at,
            })?;
            pos = end;
        }
        Ok(())
    }
}
