//! Hyperslabs (start, count, stride per dimension, as netCDF's `nc_get_vars`) and the
//! contiguous byte runs of a variable they select.

/// Why a hyperslab does not fit a variable.
///
/// ```
/// use nc3pack::{Hyperslab, SlabError};
/// let e = Hyperslab::new(&[10, 4], &[0, 2], &[5, 3], &[1, 1]).unwrap_err();
/// assert_eq!(e, SlabError::OutOfBounds { dim: 1, start: 2, count: 3, stride: 1, len: 4 });
/// assert_eq!(e.to_string(), "dimension 1: start 2 + (count 3 - 1) * stride 1 is beyond its length 4");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SlabError {
    /// A start, count or stride vector does not have one entry per dimension.
    #[error("{what} has {got} entries, the variable has {rank} dimensions")]
    Rank {
        /// "start", "count" or "stride".
        what: &'static str,
        /// Entries given.
        got: usize,
        /// Dimensions of the variable.
        rank: usize,
    },
    /// The selection reaches past the end of a dimension.
    #[error("{}", out_of_bounds(*dim, *start, *count, *stride, *len))]
    OutOfBounds {
        /// Dimension index.
        dim: usize,
        /// Start.
        start: u64,
        /// Count.
        count: u64,
        /// Stride.
        stride: u64,
        /// Length of the dimension.
        len: u64,
    },
    /// A stride of zero.
    #[error("dimension {dim}: stride must be at least 1")]
    ZeroStride {
        /// Dimension index.
        dim: usize,
    },
    /// No variable of that name.
    #[error("no variable named {0:?}")]
    UnknownVariable(String),
    /// The requested element type does not match the variable's.
    #[error("variable {var:?} is of type {var_type}, not {requested}")]
    TypeMismatch {
        /// Variable name.
        var: String,
        /// Its netCDF type.
        var_type: &'static str,
        /// The type asked for.
        requested: &'static str,
    },
    /// The output buffer has the wrong length.
    #[error("output buffer holds {got} elements, the selection has {want}")]
    BufferLength {
        /// Elements in the buffer.
        got: usize,
        /// Elements selected.
        want: u64,
    },
}

fn out_of_bounds(dim: usize, start: u64, count: u64, stride: u64, len: u64) -> String {
    if count == 0 {
        format!("dimension {dim}: start {start} is beyond its length {len}")
    } else {
        format!("dimension {dim}: start {start} + (count {count} - 1) * stride {stride} is beyond its length {len}")
    }
}

/// A checked selection of a variable: per dimension a start, a count and a stride.
///
/// ```
/// use nc3pack::Hyperslab;
/// let s = Hyperslab::new(&[10, 4], &[1, 0], &[3, 2], &[3, 2]).unwrap();
/// assert_eq!(s.len(), 6);
/// assert_eq!(s.count(), &[3, 2]);
/// // Defaults: start 0, stride 1, count = all that fits.
/// let d = Hyperslab::with_defaults(&[10, 4], Some(&[8, 1]), None, Some(&[1, 2])).unwrap();
/// assert_eq!(d.count(), &[2, 2]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hyperslab {
    start: Vec<u64>,
    count: Vec<u64>,
    stride: Vec<u64>,
}

impl Hyperslab {
    /// Checks a selection against a variable's `shape` (as `nc_get_vars` does: a count of 0
    /// selects nothing and then start may equal the length).
    ///
    /// ```
    /// use nc3pack::{Hyperslab, SlabError};
    /// let s = Hyperslab::new(&[10, 4], &[2, 0], &[4, 4], &[2, 1]).unwrap();
    /// assert_eq!(s.len(), 16);
    /// assert!(matches!(Hyperslab::new(&[10, 4], &[0, 0], &[1, 1], &[0, 1]), Err(SlabError::ZeroStride { .. })));
    /// assert!(matches!(Hyperslab::new(&[10, 4], &[9, 0], &[2, 1], &[1, 1]), Err(SlabError::OutOfBounds { .. })));
    /// assert!(matches!(Hyperslab::new(&[10, 4], &[0], &[1], &[1]), Err(SlabError::Rank { .. })));
    /// ```
    ///
    /// # Errors
    ///
    /// A [`SlabError`]: a start, count or stride with the wrong number of entries
    /// ([`SlabError::Rank`]), a zero stride ([`SlabError::ZeroStride`]), or a selection beyond
    /// a dimension's length ([`SlabError::OutOfBounds`]).
    pub fn new(
        shape: &[u64],
        start: &[u64],
        count: &[u64],
        stride: &[u64],
    ) -> Result<Hyperslab, SlabError> {
        let rank = shape.len();
        for (what, v) in [("start", start), ("count", count), ("stride", stride)] {
            if v.len() != rank {
                return Err(SlabError::Rank {
                    what,
                    got: v.len(),
                    rank,
                });
            }
        }
        for dim in 0..rank {
            let (st, c, sd, len) = (start[dim], count[dim], stride[dim], shape[dim]);
            if sd == 0 {
                return Err(SlabError::ZeroStride { dim });
            }
            let last = match c {
                0 => Some(st),
                _ => (c - 1).checked_mul(sd).and_then(|x| x.checked_add(st)),
            };
            let ok = match (c, last) {
                (0, Some(l)) => l <= len,
                (_, Some(l)) => l < len,
                _ => false,
            };
            if !ok {
                return Err(SlabError::OutOfBounds {
                    dim,
                    start: st,
                    count: c,
                    stride: sd,
                    len,
                });
            }
        }
        Ok(Hyperslab {
            start: start.to_vec(),
            count: count.to_vec(),
            stride: stride.to_vec(),
        })
    }

    /// Like [`Hyperslab::new`] with defaults for what is `None`: start 0, stride 1, and count
    /// as many elements as fit from start with that stride.
    ///
    /// ```
    /// use nc3pack::Hyperslab;
    /// let s = Hyperslab::with_defaults(&[10, 4], Some(&[5, 0]), None, None).unwrap();
    /// assert_eq!(s.count(), &[5, 4]);
    /// assert_eq!(s.stride(), &[1, 1]);
    /// assert!(Hyperslab::with_defaults(&[10, 4], Some(&[11, 0]), None, None).is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Hyperslab::new`].
    pub fn with_defaults(
        shape: &[u64],
        start: Option<&[u64]>,
        count: Option<&[u64]>,
        stride: Option<&[u64]>,
    ) -> Result<Hyperslab, SlabError> {
        let rank = shape.len();
        let start = start.map_or_else(|| vec![0; rank], <[u64]>::to_vec);
        let stride = stride.map_or_else(|| vec![1; rank], <[u64]>::to_vec);
        let count = match count {
            Some(c) => c.to_vec(),
            None => {
                if start.len() != rank || stride.len() != rank {
                    return Hyperslab::new(shape, &start, &vec![0; rank], &stride);
                }
                (0..rank)
                    .map(|d| {
                        if stride[d] == 0 || start[d] >= shape[d] {
                            0
                        } else {
                            (shape[d] - start[d]).div_ceil(stride[d])
                        }
                    })
                    .collect()
            }
        };
        Hyperslab::new(shape, &start, &count, &stride)
    }

    /// The whole of a variable of `shape`.
    ///
    /// ```
    /// use nc3pack::Hyperslab;
    /// let s = Hyperslab::all(&[3, 4]);
    /// assert_eq!((s.start(), s.count(), s.len()), (&[0, 0][..], &[3, 4][..], 12));
    /// ```
    pub fn all(shape: &[u64]) -> Hyperslab {
        Hyperslab {
            start: vec![0; shape.len()],
            count: shape.to_vec(),
            stride: vec![1; shape.len()],
        }
    }

    /// Start per dimension.
    ///
    /// ```
    /// let s = nc3pack::Hyperslab::new(&[10], &[3], &[2], &[1]).unwrap();
    /// assert_eq!(s.start(), &[3]);
    /// ```
    pub fn start(&self) -> &[u64] {
        &self.start
    }

    /// Count per dimension: the shape of the result.
    ///
    /// ```
    /// let s = nc3pack::Hyperslab::new(&[10], &[3], &[2], &[1]).unwrap();
    /// assert_eq!(s.count(), &[2]);
    /// ```
    pub fn count(&self) -> &[u64] {
        &self.count
    }

    /// Stride per dimension.
    ///
    /// ```
    /// let s = nc3pack::Hyperslab::new(&[10], &[0], &[5], &[2]).unwrap();
    /// assert_eq!(s.stride(), &[2]);
    /// ```
    pub fn stride(&self) -> &[u64] {
        &self.stride
    }

    /// Number of elements selected (1 for a scalar).
    ///
    /// ```
    /// use nc3pack::Hyperslab;
    /// assert_eq!(Hyperslab::all(&[3, 4, 5]).len(), 60);
    /// assert_eq!(Hyperslab::all(&[]).len(), 1); // a scalar
    /// ```
    pub fn len(&self) -> u64 {
        self.count.iter().product()
    }

    /// Whether nothing is selected.
    ///
    /// ```
    /// use nc3pack::Hyperslab;
    /// assert!(Hyperslab::new(&[10], &[10], &[0], &[1]).unwrap().is_empty());
    /// assert!(!Hyperslab::all(&[1]).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f(offset, len)` for each contiguous run of bytes the selection covers in the
    /// row-major data of a variable of `shape` with `esize`-byte elements, in the order of the
    /// result (so offsets increase). Adjacent rows merge into one run when whole trailing
    /// dimensions are selected.
    ///
    /// ```
    /// use nc3pack::Hyperslab;
    /// let s = Hyperslab::new(&[3, 4], &[1, 1], &[2, 2], &[1, 1]).unwrap();
    /// let mut runs = vec![];
    /// s.for_each_run(&[3, 4], 2, |o, n| { runs.push((o, n)); Ok::<(), ()>(()) }).unwrap();
    /// assert_eq!(runs, [(10, 4), (18, 4)]);
    /// ```
    ///
    /// # Errors
    ///
    /// The first error `f` returns (then no further run is visited).
    pub fn for_each_run<E>(
        &self,
        shape: &[u64],
        esize: u64,
        mut f: impl FnMut(u64, u64) -> Result<(), E>,
    ) -> Result<(), E> {
        let rank = shape.len();
        if self.is_empty() {
            return Ok(());
        }
        if rank == 0 {
            return f(0, esize);
        }
        // Elements from one index of dimension k to the next.
        let mut step = vec![1u64; rank];
        for k in (0..rank - 1).rev() {
            step[k] = step[k + 1] * shape[k + 1];
        }
        // Dimensions d.. are selected whole: they form one contiguous chunk per index above.
        let mut d = rank;
        while d > 0
            && self.start[d - 1] == 0
            && self.stride[d - 1] == 1
            && self.count[d - 1] == shape[d - 1]
        {
            d -= 1;
        }
        if d == 0 {
            return f(0, step[0] * shape[0] * esize);
        }
        let rd = d - 1;
        let (run_elems, runs_in_rd) = if self.stride[rd] == 1 {
            (self.count[rd] * step[rd], 1)
        } else {
            (step[rd], self.count[rd])
        };
        let mut idx = vec![0u64; rd];
        loop {
            let base: u64 = (0..rd)
                .map(|k| (self.start[k] + idx[k] * self.stride[k]) * step[k])
                .sum();
            for j in 0..runs_in_rd {
                let e = base + (self.start[rd] + j * self.stride[rd]) * step[rd];
                f(e * esize, run_elems * esize)?;
            }
            let mut k = rd;
            loop {
                if k == 0 {
                    return Ok(());
                }
                k -= 1;
                idx[k] += 1;
                if idx[k] < self.count[k] {
                    break;
                }
                idx[k] = 0;
            }
        }
    }

    /// Splits the selection into consecutive pieces of at most `max_len` elements (at least 1)
    /// whose results, concatenated in order, are this selection's result. The outer dimensions
    /// are cut first: a piece is some indices of one dimension with everything inside them,
    /// and only a last dimension longer than `max_len` is cut inside its rows. Selects nothing:
    /// no pieces; a scalar: one.
    ///
    /// ```
    /// use nc3pack::Hyperslab;
    /// let s = Hyperslab::new(&[4, 3, 5], &[1, 0, 0], &[3, 3, 5], &[1, 1, 1]).unwrap();
    /// let pieces: Vec<Hyperslab> = s.pieces(32).collect();
    /// // Two of the 15-element planes fit in 32 elements.
    /// assert_eq!(pieces.len(), 2);
    /// assert_eq!((pieces[0].start(), pieces[0].count()), (&[1, 0, 0][..], &[2, 3, 5][..]));
    /// assert_eq!((pieces[1].start(), pieces[1].count()), (&[3, 0, 0][..], &[1, 3, 5][..]));
    /// ```
    pub fn pieces(&self, max_len: u64) -> Pieces<'_> {
        let max_len = max_len.max(1);
        // Dimensions k.. fit whole in one piece, with k as small as possible.
        let mut inner = 1u64;
        let mut k = self.count.len();
        while k > 0 {
            match inner.checked_mul(self.count[k - 1]) {
                Some(n) if n <= max_len => {
                    inner = n;
                    k -= 1;
                }
                _ => break,
            }
        }
        // Dimension k - 1 is cut into runs of `per` indices; the dimensions before it go one
        // index at a time.
        let split = k.checked_sub(1);
        Pieces {
            slab: self,
            split,
            per: max_len / inner.max(1),
            idx: vec![0; k],
            done: self.is_empty(),
        }
    }
}

/// The pieces of a [`Hyperslab`], in order: see [`Hyperslab::pieces`].
#[derive(Debug, Clone)]
pub struct Pieces<'a> {
    slab: &'a Hyperslab,
    /// The dimension cut into runs of `per` indices; `None`: the whole selection is one piece.
    split: Option<usize>,
    per: u64,
    /// Next piece's index in dimensions `..=split`, in the result's coordinates.
    idx: Vec<u64>,
    done: bool,
}

impl Iterator for Pieces<'_> {
    type Item = Hyperslab;

    fn next(&mut self) -> Option<Hyperslab> {
        if self.done {
            return None;
        }
        let s = self.slab;
        let Some(d) = self.split else {
            self.done = true;
            return Some(s.clone());
        };
        let mut piece = s.clone();
        for (k, &i) in self.idx.iter().enumerate() {
            piece.start[k] = s.start[k] + i * s.stride[k];
            piece.count[k] = if k == d {
                self.per.min(s.count[k] - i)
            } else {
                1
            };
        }
        // Advance: dimension d by `per`, the ones before it by 1, with carries.
        self.idx[d] += self.per;
        let mut k = d;
        while self.idx[k] >= s.count[k] {
            self.idx[k] = 0;
            if k == 0 {
                self.done = true;
                break;
            }
            k -= 1;
            self.idx[k] += 1;
        }
        Some(piece)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Element offsets selected, computed the slow way.
    fn naive(shape: &[u64], s: &Hyperslab) -> Vec<u64> {
        let mut out = vec![];
        let n = s.len();
        for i in 0..n {
            let mut rem = i;
            let mut off = 0;
            let mut mult = 1;
            for k in (0..shape.len()).rev() {
                let c = rem % s.count()[k];
                rem /= s.count()[k];
                off += (s.start()[k] + c * s.stride()[k]) * mult;
                mult *= shape[k];
            }
            out.push(off);
        }
        out
    }

    #[test]
    fn runs_match_the_naive_enumeration() {
        let shape = [3u64, 4, 5];
        let mut checked = 0;
        for st0 in 0..2 {
            for c1 in 0..=4u64 {
                for sd2 in 1..=3u64 {
                    for st2 in 0..2u64 {
                        let Ok(s) = Hyperslab::with_defaults(
                            &shape,
                            Some(&[st0, 0, st2]),
                            None,
                            Some(&[1, 1, sd2]),
                        ) else {
                            continue;
                        };
                        let s = Hyperslab::new(
                            &shape,
                            s.start(),
                            &[s.count()[0], c1, s.count()[2]],
                            s.stride(),
                        )
                        .unwrap();
                        let mut got = vec![];
                        s.for_each_run(&shape, 1, |o, n| {
                            got.extend(o..o + n);
                            Ok::<(), ()>(())
                        })
                        .unwrap();
                        assert_eq!(got, naive(&shape, &s), "{s:?}");
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 50);
    }

    #[test]
    fn pieces_concatenate_to_the_selection_and_stay_small() {
        let shape = [4u64, 3, 5];
        let mut checked = 0;
        for (start, stride) in [
            ([0, 0, 0], [1, 1, 1]),
            ([1, 1, 1], [2, 1, 2]),
            ([3, 2, 4], [1, 1, 1]),
        ] {
            let all = Hyperslab::with_defaults(&shape, Some(&start), None, Some(&stride)).unwrap();
            let mut counts = vec![all.count().to_vec()];
            counts.push(vec![all.count()[0], 0, all.count()[2]]);
            counts.push(vec![1, 1, all.count()[2]]);
            for count in counts {
                let s = Hyperslab::new(&shape, &start, &count, &stride).unwrap();
                for max in 1..=70u64 {
                    let mut got = vec![];
                    let mut n = 0;
                    for p in s.pieces(max) {
                        assert!(p.len() <= max && !p.is_empty(), "{s:?} {max}: {p:?}");
                        got.extend(naive(&shape, &p));
                        n += 1;
                        assert!(n <= 60, "{s:?} {max}: too many pieces");
                    }
                    assert_eq!(got, naive(&shape, &s), "{s:?} in pieces of {max}");
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 3 * 3 * 70);
        // A scalar is one piece of one element.
        let scalar = Hyperslab::new(&[], &[], &[], &[]).unwrap();
        assert_eq!(
            scalar.pieces(1).collect::<Vec<_>>(),
            std::slice::from_ref(&scalar)
        );
        // Rows longer than a piece are cut inside; pieces are as large as allowed.
        let s = Hyperslab::new(&[2, 10], &[0, 1], &[2, 7], &[1, 1]).unwrap();
        let p: Vec<(Vec<u64>, Vec<u64>)> = s
            .pieces(3)
            .map(|p| (p.start().to_vec(), p.count().to_vec()))
            .collect();
        let want = [
            ([0, 1], [1, 3]),
            ([0, 4], [1, 3]),
            ([0, 7], [1, 1]),
            ([1, 1], [1, 3]),
            ([1, 4], [1, 3]),
            ([1, 7], [1, 1]),
        ];
        let want: Vec<(Vec<u64>, Vec<u64>)> =
            want.iter().map(|(a, b)| (a.to_vec(), b.to_vec())).collect();
        assert_eq!(p, want);
    }

    #[test]
    fn whole_variable_is_one_run_and_scalars_work() {
        let mut runs = vec![];
        Hyperslab::all(&[2, 3])
            .for_each_run(&[2, 3], 4, |o, n| {
                runs.push((o, n));
                Ok::<(), ()>(())
            })
            .unwrap();
        assert_eq!(runs, [(0, 24)]);
        let s = Hyperslab::new(&[], &[], &[], &[]).unwrap();
        assert_eq!(s.len(), 1);
        let mut runs = vec![];
        s.for_each_run(&[], 8, |o, n| {
            runs.push((o, n));
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(runs, [(0, 8)]);
    }

    #[test]
    fn errors_name_the_offending_values() {
        assert_eq!(
            Hyperslab::new(&[4], &[0, 0], &[1], &[1]).unwrap_err(),
            SlabError::Rank {
                what: "start",
                got: 2,
                rank: 1
            }
        );
        assert_eq!(
            Hyperslab::new(&[4], &[0], &[1], &[0]).unwrap_err(),
            SlabError::ZeroStride { dim: 0 }
        );
        assert!(Hyperslab::new(&[4], &[4], &[0], &[1]).is_ok());
        assert!(Hyperslab::new(&[4], &[5], &[0], &[1]).is_err());
        assert!(Hyperslab::new(&[4], &[1], &[2], &[2]).is_ok());
        assert!(Hyperslab::new(&[4], &[1], &[3], &[2]).is_err());
        assert!(Hyperslab::new(&[4], &[1], &[u64::MAX], &[u64::MAX]).is_err());
    }
}
