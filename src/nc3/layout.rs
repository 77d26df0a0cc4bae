//! Where each variable's data lies in a netCDF-3 file, and what lies between.
//!
//! Sizes follow netcdf-c (`NC_var_shape`, `NC_computeshapes`), not the header's `vsize`, which
//! saturates for large variables: a variable's data is `product(shape) * element size` bytes; each
//! record variable contributes one slab per record, padded to 4 bytes, and the record size is the
//! sum of the padded slabs, except that with exactly one record variable there is no padding.
//!
//! The file is a partition into *segments* in file order: the header, each fixed variable's
//! data, each record's slab of each record variable, and *residual* bytes for everything else
//! (alignment padding, gaps, an incomplete last record, trailing bytes). Packing and unpacking
//! walk the same partition, which is what makes the round trip byte-exact.

use super::error::LayoutError;
use super::header::{Header, NumRecs};

/// Where one variable's data lies.
///
/// ```
/// use nc3pack::nc3::{Header, Layout};
/// let bytes = std::fs::read("samples/scalars.nc").unwrap();
/// let h = Header::parse(&bytes, bytes.len() as u64).unwrap();
/// let l = Layout::new(&h, bytes.len() as u64).unwrap();
/// let sd = &l.vars[h.var_id("sd").unwrap()]; // a scalar double
/// assert_eq!((sd.esize, sd.total, sd.is_record), (8, 8, false));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarLayout {
    /// Byte offset of the data (of record 0 for a record variable).
    pub begin: u64,
    /// Whether it is a record variable.
    pub is_record: bool,
    /// Element size in bytes.
    pub esize: usize,
    /// Bytes of one record's slab (record variable) or of the whole variable (fixed variable).
    pub slab: u64,
    /// Bytes of the materialized variable: `slab * numrecs` for a record variable.
    pub total: u64,
    /// Shape with the record dimension materialized to the number of records.
    pub shape: Vec<u64>,
}

/// What a segment of the file belongs to (see [`Segment`] for an example).
///
/// ```
/// use nc3pack::nc3::Target;
/// assert_ne!(Target::Var(0), Target::Residual);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The netCDF header.
    Header,
    /// Data of the variable with this id.
    Var(usize),
    /// Bytes that are neither header nor variable data.
    Residual,
}

/// A contiguous run of file bytes with one owner, as [`Layout::walk`] visits them.
///
/// ```
/// use nc3pack::nc3::{Header, Layout, Segment, Target};
/// let bytes = std::fs::read("samples/scalars.nc").unwrap();
/// let h = Header::parse(&bytes, bytes.len() as u64).unwrap();
/// let l = Layout::new(&h, bytes.len() as u64).unwrap();
/// let mut segs: Vec<Segment> = Vec::new();
/// l.walk(|s| -> Result<(), ()> { segs.push(s); Ok(()) }).unwrap();
/// assert_eq!(segs[0], Segment { offset: 0, len: h.len(), target: Target::Header });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// Offset in the file.
    pub offset: u64,
    /// Length in bytes (never 0).
    pub len: u64,
    /// Owner.
    pub target: Target,
}

/// The data layout of a netCDF-3 file.
///
/// ```
/// use nc3pack::nc3::{Header, Layout};
/// let mut bytes = b"CDF\x01".to_vec();
/// bytes.extend_from_slice(&[0u8; 28]);
/// bytes.extend_from_slice(b"tail");
/// let h = Header::parse(&bytes, bytes.len() as u64).unwrap();
/// let layout = Layout::new(&h, bytes.len() as u64).unwrap();
/// assert_eq!(layout.residual_len, 4);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Length of the original file.
    pub file_len: u64,
    /// Length of the header.
    pub header_len: u64,
    /// Number of complete records (the materialized length of the record dimension).
    pub numrecs: u64,
    /// Bytes from one record to the next.
    pub recsize: u64,
    /// Per variable, in header order.
    pub vars: Vec<VarLayout>,
    /// Total residual bytes.
    pub residual_len: u64,
    /// Where the data the header declares ends: after the fixed variables and the records the
    /// header counts (`u64::MAX` for the streaming record count). Known before any data is read.
    pub declared_end: u64,
    fixed_order: Vec<usize>,
    rec_order: Vec<usize>,
}

fn round4(n: u64) -> Option<u64> {
    n.checked_add(3).map(|x| x & !3)
}

impl Layout {
    /// Computes the layout of a file of `file_len` bytes with header `h`. The number of records
    /// is the stored count, or for the streaming marker what the file holds, and never more than
    /// the complete records the file holds.
    ///
    /// ```
    /// use nc3pack::nc3::{Header, Layout};
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// let l = Layout::new(&h, b.len() as u64).unwrap();
    /// assert_eq!(l.numrecs, 7);
    /// // Cut inside the fixed variables, the file cannot hold its layout.
    /// assert!(Layout::new(&h, h.len() + 1).is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// A [`LayoutError`] naming the variable and offsets when the layout is impossible.
    pub fn new(h: &Header, file_len: u64) -> Result<Layout, LayoutError> {
        let probe = Layout::build(h, file_len, 0)?;
        let fit = probe.records_that_fit();
        let numrecs = match h.numrecs() {
            NumRecs::Count(n) => n.min(fit),
            // With no record variables the file says nothing about the count (fit is unbounded).
            NumRecs::Streaming if probe.rec_order.is_empty() => 0,
            NumRecs::Streaming => fit,
        };
        if numrecs == 0 {
            return Ok(probe);
        }
        // Freed first: two layouts at once cost twice the per-variable memory.
        drop(probe);
        Layout::with_numrecs(h, file_len, numrecs)
    }

    /// Computes the layout with a given number of records, checking that everything lies inside
    /// the file and nothing overlaps.
    ///
    /// ```
    /// use nc3pack::nc3::{Header, Layout};
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert_eq!(Layout::with_numrecs(&h, b.len() as u64, 3).unwrap().numrecs, 3);
    /// assert!(Layout::with_numrecs(&h, b.len() as u64, 1000).is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// A [`LayoutError`] as for [`Layout::new`], or [`LayoutError::TooManyRecords`].
    pub fn with_numrecs(h: &Header, file_len: u64, numrecs: u64) -> Result<Layout, LayoutError> {
        Layout::build(h, file_len, numrecs)
    }

    fn build(h: &Header, file_len: u64, numrecs: u64) -> Result<Layout, LayoutError> {
        let mut vars = Vec::with_capacity(h.var_count());
        for v in h.vars() {
            let is_record = v.is_record();
            let esize = v.nc_type().size();
            let mut n: u64 = 1;
            let mut shape = Vec::with_capacity(v.dim_count());
            let overflow = || LayoutError::SizeOverflow {
                var: v.name().to_string(),
            };
            for (k, d) in v.dims().enumerate() {
                if k == 0 && is_record {
                    shape.push(numrecs);
                    continue;
                }
                let len = d.len();
                shape.push(len);
                n = n.checked_mul(len).ok_or_else(overflow)?;
            }
            let slab = n.checked_mul(esize as u64).ok_or_else(overflow)?;
            let total = if is_record {
                slab.checked_mul(numrecs).ok_or_else(overflow)?
            } else {
                slab
            };
            vars.push(VarLayout {
                begin: v.begin(),
                is_record,
                esize,
                slab,
                total,
                shape,
            });
        }
        let mut fixed_order: Vec<usize> = (0..vars.len()).filter(|&i| !vars[i].is_record).collect();
        let mut rec_order: Vec<usize> = (0..vars.len()).filter(|&i| vars[i].is_record).collect();
        fixed_order.sort_by_key(|&i| (vars[i].begin, i));
        rec_order.sort_by_key(|&i| (vars[i].begin, i));
        let recsize = if rec_order.len() == 1 {
            vars[rec_order[0]].slab
        } else {
            rec_order.iter().try_fold(0u64, |acc, &i| {
                round4(vars[i].slab)
                    .and_then(|s| acc.checked_add(s))
                    .ok_or(LayoutError::RecordSizeOverflow)
            })?
        };
        if recsize == 0 && !rec_order.is_empty() {
            return Err(LayoutError::EmptyRecords);
        }
        let mut l = Layout {
            file_len,
            header_len: h.len(),
            numrecs,
            recsize,
            vars,
            residual_len: 0,
            declared_end: 0,
            fixed_order,
            rec_order,
        };
        l.check(h)?;
        l.declared_end = l.declared_end(h);
        if numrecs > l.records_that_fit() {
            return Err(LayoutError::TooManyRecords {
                numrecs,
                fit: l.records_that_fit(),
                file_len,
            });
        }
        // Regions are disjoint and inside the file, so this cannot underflow; checked anyway.
        let data = l
            .vars
            .iter()
            .try_fold(0u64, |acc, v| acc.checked_add(v.total));
        l.residual_len = data
            .and_then(|d| file_len.checked_sub(l.header_len)?.checked_sub(d))
            .ok_or(LayoutError::DataPastFile)?;
        Ok(l)
    }

    /// Checks that the regions are in the file and do not overlap (for record 0; later records
    /// repeat record 0's pattern at `recsize` strides).
    fn check(&self, h: &Header) -> Result<(), LayoutError> {
        let name = |i: usize| h.var(i).name().to_string();
        let mut pos = self.header_len;
        let mut prev: Option<usize> = None;
        for &i in &self.fixed_order {
            let v = &self.vars[i];
            if v.begin < pos {
                return Err(match prev {
                    Some(p) => LayoutError::Overlap {
                        var: name(i),
                        other: name(p),
                        begin: v.begin,
                        end: pos,
                    },
                    None => LayoutError::InHeader {
                        var: name(i),
                        begin: v.begin,
                        header_end: pos,
                    },
                });
            }
            pos = v
                .begin
                .checked_add(v.total)
                .ok_or_else(|| LayoutError::EndOverflows {
                    var: name(i),
                    begin: v.begin,
                    len: v.total,
                    file_len: self.file_len,
                })?;
            if pos > self.file_len {
                return Err(LayoutError::PastEnd {
                    var: name(i),
                    begin: v.begin,
                    end: pos,
                    file_len: self.file_len,
                });
            }
            prev = Some(i);
        }
        if let Some(&first) = self.rec_order.first() {
            let rec_start = self.vars[first].begin;
            if rec_start < pos {
                return Err(match prev {
                    Some(p) => LayoutError::RecordBeforeFixed {
                        var: name(first),
                        begin: rec_start,
                        other: name(p),
                        end: pos,
                    },
                    None => LayoutError::RecordInHeader {
                        var: name(first),
                        begin: rec_start,
                        header_end: pos,
                    },
                });
            }
            let mut end = rec_start;
            for &i in &self.rec_order {
                let v = &self.vars[i];
                if v.begin < end {
                    return Err(LayoutError::RecordOverlap {
                        var: name(i),
                        begin: v.begin,
                        end,
                    });
                }
                end = v
                    .begin
                    .checked_add(v.slab)
                    .filter(|&e| e <= i64::MAX as u64)
                    .ok_or_else(|| LayoutError::RecordOverflow {
                        var: name(i),
                        begin: v.begin,
                        slab: v.slab,
                    })?;
            }
            if end - rec_start > self.recsize {
                return Err(LayoutError::RecordSpan {
                    span: end - rec_start,
                    recsize: self.recsize,
                });
            }
        }
        Ok(())
    }

    fn declared_end(&self, h: &Header) -> u64 {
        let fixed = self
            .fixed_order
            .iter()
            .map(|&i| self.vars[i].begin.saturating_add(self.vars[i].total))
            .max()
            .unwrap_or(0);
        let records = match (self.rec_order.first(), h.numrecs()) {
            (None, _) => 0,
            (Some(_), NumRecs::Streaming) => u64::MAX,
            (Some(&i), NumRecs::Count(n)) => self.vars[i]
                .begin
                .saturating_add(n.saturating_mul(self.recsize)),
        };
        self.header_len.max(fixed).max(records)
    }

    /// Fixed variables in file order (by `begin`).
    ///
    /// ```
    /// use nc3pack::nc3::{Header, Layout};
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// let l = Layout::new(&h, b.len() as u64).unwrap();
    /// assert_eq!(l.fixed_order().len(), 8);
    /// assert!(l.fixed_order().windows(2).all(|w| h.var(w[0]).begin() < h.var(w[1]).begin()));
    /// ```
    pub fn fixed_order(&self) -> &[usize] {
        &self.fixed_order
    }

    /// Record variables in the order of their slabs within a record (by `begin`).
    ///
    /// ```
    /// use nc3pack::nc3::{Header, Layout};
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// let l = Layout::new(&h, b.len() as u64).unwrap();
    /// assert_eq!(l.rec_order().len(), 9);
    /// assert_eq!(h.var(l.rec_order()[0]).name(), "time");
    /// ```
    pub fn rec_order(&self) -> &[usize] {
        &self.rec_order
    }

    /// How many complete records (every record variable's slab present) the file holds.
    fn records_that_fit(&self) -> u64 {
        let (Some(&first), Some(&last)) = (self.rec_order.first(), self.rec_order.last()) else {
            return u64::MAX;
        };
        let start = self.vars[first].begin;
        let span = self.vars[last].begin + self.vars[last].slab - start;
        match start.checked_add(span) {
            Some(end) if end <= self.file_len => (self.file_len - end) / self.recsize + 1,
            _ => 0,
        }
    }

    /// Visits every segment of the file in order. Segments are contiguous, non-empty and cover
    /// `[0, file_len)` exactly.
    ///
    /// ```
    /// use nc3pack::nc3::{Header, Layout};
    /// let bytes = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&bytes, bytes.len() as u64).unwrap();
    /// let l = Layout::new(&h, bytes.len() as u64).unwrap();
    /// let mut end = 0;
    /// l.walk(|s| -> Result<(), ()> { assert_eq!(s.offset, end); end += s.len; Ok(()) }).unwrap();
    /// assert_eq!(end, l.file_len);
    /// ```
    ///
    /// # Errors
    ///
    /// The first error `f` returns, which stops the walk.
    pub fn walk<E>(&self, mut f: impl FnMut(Segment) -> Result<(), E>) -> Result<(), E> {
        self.walk_with(|seg| f(seg).map(|()| Walk::Next))
    }

    /// Like [`Layout::walk`], but the visitor may take over whole records: answering
    /// [`Walk::SkipRecords`]`(n)` to the segment of record r's first record variable with bytes
    /// means it has consumed records r .. r + n, up to the end of the last record variable
    /// with bytes of record r + n − 1; the walk goes on from there (the padding after it is
    /// the next segment). Other answers to other segments are [`Walk::Next`].
    ///
    /// ```
    /// use nc3pack::nc3::{Header, Layout, Target, Walk};
    /// let bytes = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&bytes, bytes.len() as u64).unwrap();
    /// let l = Layout::new(&h, bytes.len() as u64).unwrap();
    /// let first = l.rec_order().iter().copied().find(|&i| l.vars[i].slab > 0).unwrap();
    /// let mut seen = 0u64;
    /// l.walk_with(|seg| -> Result<Walk, ()> {
    ///     seen += seg.len;
    ///     Ok(if seg.target == Target::Var(first) { Walk::SkipRecords(l.numrecs) } else { Walk::Next })
    /// }).unwrap();
    /// assert!(seen < l.file_len);
    /// ```
    ///
    /// # Errors
    ///
    /// The first error `f` returns, which stops the walk.
    pub fn walk_with<E>(&self, mut f: impl FnMut(Segment) -> Result<Walk, E>) -> Result<(), E> {
        let mut pos = 0u64;
        let mut emit = |offset: u64, len: u64, target: Target, pos: &mut u64| -> Result<Walk, E> {
            if offset > *pos {
                f(Segment {
                    offset: *pos,
                    len: offset - *pos,
                    target: Target::Residual,
                })?;
            }
            let next = if len > 0 {
                f(Segment {
                    offset,
                    len,
                    target,
                })?
            } else {
                Walk::Next
            };
            *pos = offset + len;
            Ok(next)
        };
        emit(0, self.header_len, Target::Header, &mut pos)?;
        for &i in &self.fixed_order {
            emit(
                self.vars[i].begin,
                self.vars[i].total,
                Target::Var(i),
                &mut pos,
            )?;
        }
        let records = if self.rec_order.is_empty() {
            0
        } else {
            self.numrecs
        };
        let with_bytes = || self.rec_order.iter().filter(|&&i| self.vars[i].slab > 0);
        let first = with_bytes().next().copied();
        let last_end = with_bytes()
            .map(|&i| self.vars[i].begin + self.vars[i].slab)
            .max()
            .unwrap_or(0);
        let mut r = 0;
        'records: while r < records {
            for &i in &self.rec_order {
                let v = &self.vars[i];
                let next = emit(v.begin + r * self.recsize, v.slab, Target::Var(i), &mut pos)?;
                if let Walk::SkipRecords(n) = next {
                    if Some(i) == first && n > 0 && n <= records - r {
                        r += n;
                        pos = last_end + (r - 1) * self.recsize;
                        continue 'records;
                    }
                }
            }
            r += 1;
        }
        emit(self.file_len, 0, Target::Residual, &mut pos)?;
        Ok(())
    }
}

/// What a visitor of [`Layout::walk_with`] says after a segment (see its example).
///
/// ```
/// use nc3pack::nc3::Walk;
/// assert_ne!(Walk::Next, Walk::SkipRecords(1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Walk {
    /// Go on with the next segment.
    Next,
    /// The visitor consumed this many whole records, from the current one (see
    /// [`Layout::walk_with`]).
    SkipRecords(u64),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nc3::header::{NcType, TestVar};

    fn var(name: &str, dimids: Vec<usize>, t: NcType, begin: u64) -> TestVar<'_> {
        (name, dimids, t, begin)
    }

    fn header(vars: Vec<TestVar<'_>>, numrecs: NumRecs) -> Header {
        Header::from_parts(
            crate::nc3::Variant::Cdf1,
            numrecs,
            100,
            &[("t", 0), ("x", 3)],
            &vars,
        )
    }

    fn segments(l: &Layout) -> Vec<(u64, u64, Target)> {
        let mut v = vec![];
        l.walk(|s| {
            v.push((s.offset, s.len, s.target));
            Ok::<(), ()>(())
        })
        .unwrap();
        v
    }

    /// byte f(x) at 100 (3 bytes, padded to 4), then records of short a(t,3) at 104 (6 bytes,
    /// padded to 8) and int b(t) at 112 (4 bytes): recsize 12; the header says `numrecs`.
    fn two_record_vars(numrecs: u64) -> Header {
        header(
            vec![
                var("f", vec![1], NcType::Byte, 100),
                var("a", vec![0, 1], NcType::Short, 104),
                var("b", vec![0], NcType::Int, 112),
            ],
            NumRecs::Count(numrecs),
        )
    }

    #[test]
    fn record_padding_and_partial_last_record() {
        let h = two_record_vars(3);
        // Room for two whole records and a partial third (a present, b cut).
        let file_len = 104 + 12 * 2 + 8;
        let l = Layout::new(&h, file_len).unwrap();
        assert_eq!(l.recsize, 12);
        assert_eq!(l.numrecs, 2);
        assert_eq!(
            segments(&l),
            vec![
                (0, 100, Target::Header),
                (100, 3, Target::Var(0)),
                (103, 1, Target::Residual),
                (104, 6, Target::Var(1)),
                (110, 2, Target::Residual),
                (112, 4, Target::Var(2)),
                (116, 6, Target::Var(1)),
                (122, 2, Target::Residual),
                (124, 4, Target::Var(2)),
                (128, 8, Target::Residual),
            ]
        );
        assert_eq!(l.residual_len, 1 + 2 + 2 + 8);
    }

    #[test]
    fn a_visitor_can_take_over_whole_records() {
        // 5 whole records and 3 trailing bytes.
        let h = two_record_vars(5);
        let l = Layout::new(&h, 104 + 12 * 5 + 3).unwrap();
        let mut got = vec![];
        l.walk_with(|s| {
            got.push((s.offset, s.len, s.target));
            // Take records 1 and 2 at record 1's first variable.
            Ok::<Walk, ()>(if s.offset == 116 {
                Walk::SkipRecords(2)
            } else {
                Walk::Next
            })
        })
        .unwrap();
        assert_eq!(
            got,
            vec![
                (0, 100, Target::Header),
                (100, 3, Target::Var(0)),
                (103, 1, Target::Residual),
                (104, 6, Target::Var(1)),
                (110, 2, Target::Residual),
                (112, 4, Target::Var(2)),
                (116, 6, Target::Var(1)),
                // Records 1 and 2 end at 140 (b of record 2): record 3 follows.
                (140, 6, Target::Var(1)),
                (146, 2, Target::Residual),
                (148, 4, Target::Var(2)),
                (152, 6, Target::Var(1)),
                (158, 2, Target::Residual),
                (160, 4, Target::Var(2)),
                (164, 3, Target::Residual),
            ]
        );
        // A skip answered to another segment, or past the last record, is ignored.
        let mut n = 0;
        l.walk_with(|s| {
            n += 1;
            Ok::<Walk, ()>(match s.target {
                Target::Var(2) => Walk::SkipRecords(1),
                Target::Var(1) if s.offset == 152 => Walk::SkipRecords(9),
                _ => Walk::Next,
            })
        })
        .unwrap();
        assert_eq!(n, segments(&l).len());
    }

    #[test]
    fn single_record_variable_is_not_padded() {
        let h = header(
            vec![var("a", vec![0, 1], NcType::Byte, 100)],
            NumRecs::Streaming,
        );
        let l = Layout::new(&h, 100 + 3 * 5 + 1).unwrap();
        assert_eq!(l.recsize, 3);
        assert_eq!(l.numrecs, 5);
        assert_eq!(l.residual_len, 1);
    }

    #[test]
    fn streaming_count_without_record_variables_is_zero() {
        // Found by fuzzing: the count became 2^64-1 and the walk looped over it.
        let h = header(
            vec![var("f", vec![1], NcType::Byte, 100)],
            NumRecs::Streaming,
        );
        let l = Layout::new(&h, 103).unwrap();
        assert_eq!(l.numrecs, 0);
        let l = Layout::with_numrecs(&h, 103, u64::MAX).unwrap();
        let mut n = 0;
        l.walk(|_| {
            n += 1;
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(n, 2);
    }

    #[test]
    fn record_variables_without_bytes_are_an_error() {
        // `a(t, t)`: the second dimension is the record dimension again, whose stored length is
        // 0, so a record holds no bytes; counting records would divide by zero.
        let h = header(
            vec![var("a", vec![0, 0], NcType::Int, 100)],
            NumRecs::Streaming,
        );
        assert_eq!(Layout::new(&h, 200), Err(LayoutError::EmptyRecords));
    }

    #[test]
    fn overlap_and_eof_are_errors() {
        let h = header(
            vec![
                var("f", vec![1], NcType::Int, 100),
                var("g", vec![1], NcType::Int, 104),
            ],
            NumRecs::Count(0),
        );
        assert_eq!(
            Layout::new(&h, 200),
            Err(LayoutError::Overlap {
                var: "g".into(),
                other: "f".into(),
                begin: 104,
                end: 112
            })
        );
        let h = header(vec![var("f", vec![1], NcType::Int, 198)], NumRecs::Count(0));
        assert_eq!(
            Layout::new(&h, 200),
            Err(LayoutError::PastEnd {
                var: "f".into(),
                begin: 198,
                end: 210,
                file_len: 200
            })
        );
        let h = header(vec![var("f", vec![1], NcType::Int, 50)], NumRecs::Count(0));
        assert!(matches!(
            Layout::new(&h, 200),
            Err(LayoutError::InHeader { begin: 50, .. })
        ));
    }
}
