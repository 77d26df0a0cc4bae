//! Parsing a netCDF-3 header (CDF-1, CDF-2 and CDF-5) into a [`Header`].
//!
//! Grammar (NetCDF Classic and 64-bit Offset Format spec, and the CDF-5 addendum):
//!
//! ```text
//! header    = magic numrecs dim_list gatt_list var_list
//! magic     = 'C' 'D' 'F' VERSION            // 1, 2 or 5
//! numrecs   = NON_NEG | STREAMING             // 4 bytes, 8 in CDF-5
//! dim_list  = ABSENT | NC_DIMENSION nelems [dim ...]
//! gatt_list = att_list
//! var_list  = ABSENT | NC_VARIABLE nelems [var ...]
//! dim       = name dim_length                 // dim_length 0: the record dimension
//! att_list  = ABSENT | NC_ATTRIBUTE nelems [attr ...]
//! attr      = name nc_type nelems [values ...] // values padded to 4 bytes
//! var       = name nelems [dimid ...] vatt_list nc_type vsize begin
//! name      = nelems namestring               // padded to 4 bytes
//! ```
//!
//! All integers are big-endian. `nelems`, `dimid`, `dim_length`, `vsize` and `numrecs` are 32-bit
//! in CDF-1/CDF-2 and 64-bit in CDF-5; `begin` is 32-bit in CDF-1 and 64-bit in CDF-2/CDF-5;
//! tags and `nc_type` are always 32-bit.
//!
//! Every count read from the file is checked against the bytes the file has left, and against the
//! header limit, before anything is allocated for it. A header may be at most [`MAX_HEADER_LEN`]
//! bytes long (1 GiB, the largest an archive carries), and at most the header limit
//! ([`super::header_limit`]: 64 MiB unless `NC3PACK_MAX_HEADER_BYTES` says otherwise): a field
//! that would end past it, or a count whose items cannot fit in it, is an error naming the limit,
//! whether the input is a file or a stream.

use super::error::{HeaderError, HeaderProblem};
use super::header::{
    span, AttrRec, DimRec, Extent, Header, NcType, NumRecs, VarRec, Variant, MAX_HEADER_LEN,
    NC_ATTRIBUTE, NC_DIMENSION, NC_VARIABLE,
};
use std::fmt::Display;

/// Outcome of parsing a prefix of a file that may stop short of the header's end.
///
/// ```
/// use nc3pack::nc3::{Header, ParseError};
/// assert!(matches!(Header::parse_prefix(b"CD", 100), Err(ParseError::NeedMore(4))));
/// assert!(matches!(Header::parse_prefix(b"CDF\x09", 100), Err(ParseError::Bad(_))));
/// ```
#[derive(Debug)]
pub enum ParseError {
    /// The prefix ended before the header did; parse again with at least this many bytes.
    NeedMore(u64),
    /// The header is malformed.
    Bad(HeaderError),
}

impl From<HeaderError> for ParseError {
    fn from(e: HeaderError) -> Self {
        ParseError::Bad(e)
    }
}

/// Most list items reserved ahead of parsing them: longer lists grow as their items parse, so
/// memory follows the bytes present, not a count field.
const PREALLOC_MAX: usize = 1024;

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    file_len: u64,
    variant: Variant,
    /// The header limit ([`super::header_limit`]), at most [`MAX_HEADER_LEN`].
    limit: u64,
}

type PResult<T> = Result<T, ParseError>;

/// The error for an allocation the parse could not make, instead of an abort. Every allocation
/// of the parser is fallible, and each is bounded by header bytes already read (a list grows as
/// its items parse), so what a header costs in memory is a small multiple of its length, and a
/// machine without that memory gets an error. The error carries no text ([`HeaderProblem::NoMemory`]
/// allocates nothing, and there may be no memory for text).
fn no_memory(at: u64) -> ParseError {
    ParseError::Bad(HeaderError::new(at, HeaderProblem::NoMemory))
}

/// Makes room for one more item in `v`, failing with [`no_memory`] instead of aborting.
fn room<T>(v: &mut Vec<T>, at: u64) -> PResult<()> {
    if v.len() == v.capacity() {
        v.try_reserve(v.capacity().max(4))
            .map_err(|_| no_memory(at))?;
    }
    Ok(())
}

/// A vector with room for exactly `n` items, or [`no_memory`].
fn vec_for<T>(n: usize, at: u64) -> PResult<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| no_memory(at))?;
    Ok(v)
}

/// A field named in messages as `kind "name"`, written only when a message needs it.
struct Named<'a>(&'static str, &'a str);

impl Display for Named<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {:?}", self.0, self.1)
    }
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: u64, field: &dyn Display) -> PResult<&'a [u8]> {
        let end = (self.pos as u64).checked_add(n);
        match end {
            Some(end) if end <= self.buf.len() as u64 && end <= self.limit => {
                let s = &self.buf[self.pos..end as usize];
                self.pos = end as usize;
                Ok(s)
            }
            Some(end) if end <= self.file_len && end > self.limit => {
                let field = field.to_string();
                // Past the format's own limit, no setting reads it: say that.
                let what = if end > MAX_HEADER_LEN {
                    HeaderProblem::TooLong { field, needed: n }
                } else {
                    HeaderProblem::OverLimit {
                        field,
                        needed: n,
                        limit: self.limit,
                    }
                };
                Err(HeaderError::new(self.pos as u64, what).into())
            }
            Some(end) if end <= self.file_len => Err(ParseError::NeedMore(
                end.max(self.buf.len() as u64 * 2).min(self.limit),
            )),
            _ => Err(HeaderError::new(
                self.pos as u64,
                HeaderProblem::PastEnd {
                    field: field.to_string(),
                    needed: n,
                    file_len: self.file_len,
                },
            )
            .into()),
        }
    }

    fn u32(&mut self, field: &dyn Display) -> PResult<u32> {
        let b = self.take(4, field)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, field: &dyn Display) -> PResult<u64> {
        let b = self.take(8, field)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }

    /// A NON_NEG: 32-bit (63-bit in CDF-5) non-negative integer.
    fn non_neg(&mut self, field: &dyn Display) -> PResult<u64> {
        let at = self.pos as u64;
        let v = if self.variant == Variant::Cdf5 {
            self.u64(field)?
        } else {
            u64::from(self.u32(field)?)
        };
        let max = if self.variant == Variant::Cdf5 {
            i64::MAX as u64
        } else {
            i32::MAX as u64
        };
        if v > max {
            return Err(HeaderError::new(
                at,
                HeaderProblem::Negative {
                    field: field.to_string(),
                    value: v,
                },
            )
            .into());
        }
        Ok(v)
    }

    /// Checks that `count` items of at least `min_size` bytes each fit in the rest of the file,
    /// and within the header limit: a count that cannot is refused before anything is
    /// allocated for its items.
    fn bound(&self, count: u64, min_size: u64, at: u64, field: &dyn Display) -> PResult<usize> {
        let rest = self.file_len.saturating_sub(self.pos as u64);
        let room = self.limit.saturating_sub(self.pos as u64);
        match count.checked_mul(min_size) {
            Some(need) if need <= rest && need <= room => Ok(count as usize),
            Some(need) if need <= rest => Err(HeaderError::new(
                at,
                HeaderProblem::CountOverLimit {
                    field: field.to_string(),
                    count,
                    min_bytes: need,
                    limit: self.limit,
                },
            )
            .into()),
            _ => Err(HeaderError::new(
                at,
                HeaderProblem::CountPastEnd {
                    field: field.to_string(),
                    count,
                    rest,
                },
            )
            .into()),
        }
    }

    fn pad4(&mut self, n: u64, field: &dyn Display) -> PResult<()> {
        let pad = (4 - n % 4) % 4;
        self.take(pad, field).map(|_| ())
    }

    /// A name: checked (non-empty, UTF-8) and returned as its range of the header bytes.
    fn name(&mut self, field: &dyn Display) -> PResult<(Extent, &'a str)> {
        let at = self.pos as u64;
        let n = self.non_neg(&format_args!("{field} name length"))?;
        let start = self.pos;
        let bytes = self.take(n, &format_args!("{field} name"))?;
        let s = std::str::from_utf8(bytes).map_err(|_| {
            HeaderError::new(
                start as u64,
                HeaderProblem::NameNotUtf8 {
                    field: field.to_string(),
                },
            )
        })?;
        if s.is_empty() {
            return Err(HeaderError::new(
                at,
                HeaderProblem::NameEmpty {
                    field: field.to_string(),
                },
            )
            .into());
        }
        self.pad4(n, &format_args!("{field} name padding"))?;
        // `take` keeps every end within MAX_HEADER_LEN (1 GiB): offsets fit in 32 bits.
        Ok((span(start, bytes.len()), s))
    }

    fn list_header(&mut self, tag: u32, what: &dyn Display, min_item: u64) -> PResult<usize> {
        let at = self.pos as u64;
        let t = self.u32(&format_args!("{what} list tag"))?;
        let count_at = self.pos as u64;
        let n = self.non_neg(&format_args!("{what} count"))?;
        // An empty list is empty whatever its tag says: netCDF-C reads the count first and looks
        // at the tag only when the count is not zero (libsrc/v1hpg.c), so ABSENT (zero tag), the
        // list's own tag and any other tag with a count of 0 all read as an empty list.
        if n == 0 {
            return Ok(0);
        }
        if t == 0 {
            return Err(HeaderError::new(
                count_at,
                HeaderProblem::AbsentWithCount {
                    list: what.to_string(),
                    count: n,
                },
            )
            .into());
        }
        if t != tag {
            return Err(HeaderError::new(
                at,
                HeaderProblem::ListTag {
                    list: what.to_string(),
                    expected: tag,
                    found: t,
                },
            )
            .into());
        }
        self.bound(n, min_item, count_at, &format_args!("{what} count"))
    }

    /// An attribute list, appended to `out`; returns its range of `out`.
    fn attrs(&mut self, what: &dyn Display, out: &mut Vec<AttrRec>) -> PResult<Extent> {
        let cw = self.variant.count_width() as u64;
        let n = self.list_header(NC_ATTRIBUTE, what, 4 + cw + 4 + cw)?;
        let first = out.len();
        for _ in 0..n {
            room(out, self.pos as u64)?;
            let (name, s) = self.name(&format_args!("{what} attribute"))?;
            let field = Named("attribute", s);
            let t_at = self.pos as u64;
            let code = self.u32(&format_args!("{field} type"))?;
            let t = self.nc_type(code, t_at, &field)?;
            let count_at = self.pos as u64;
            let count = self.non_neg(&format_args!("{field} value count"))?;
            let nbytes = count.checked_mul(t.size() as u64).ok_or_else(|| {
                HeaderError::new(
                    count_at,
                    HeaderProblem::ValueCountOverflow {
                        field: field.to_string(),
                        count,
                    },
                )
            })?;
            let v_at = self.pos;
            let bytes = self.take(nbytes, &format_args!("{field} values"))?;
            let values = span(v_at, bytes.len());
            self.pad4(nbytes, &format_args!("{field} value padding"))?;
            out.push(AttrRec {
                name,
                values,
                nc_type: t,
            });
        }
        Ok(span(first, n))
    }

    fn nc_type(&self, code: u32, at: u64, field: &dyn Display) -> PResult<NcType> {
        match NcType::from_code(code) {
            Some(t) if t.is_cdf5_only() && self.variant != Variant::Cdf5 => Err(HeaderError::new(
                at,
                HeaderProblem::Cdf5Type {
                    field: field.to_string(),
                    nc_type: t,
                },
            )
            .into()),
            Some(t) => Ok(t),
            None => Err(HeaderError::new(
                at,
                HeaderProblem::UnknownType {
                    field: field.to_string(),
                    code,
                },
            )
            .into()),
        }
    }
}

impl Header {
    /// Parses a header from the start of a file whose first bytes are `buf` and whose total
    /// length is `file_len`. `buf` may be the whole file or a prefix of it; if the prefix is too
    /// short, see [`Header::parse_prefix`].
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let bytes = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&bytes, bytes.len() as u64).unwrap();
    /// assert_eq!(h.bytes().len() as u64, h.len());
    /// ```
    ///
    /// # Errors
    ///
    /// A [`HeaderError`]: where and what is wrong; [`HeaderProblem::PastBuffer`] when `buf` ends
    /// before the header does.
    pub fn parse(buf: &[u8], file_len: u64) -> Result<Header, HeaderError> {
        match Header::parse_prefix(buf, file_len) {
            Ok(h) => Ok(h),
            Err(ParseError::Bad(e)) => Err(e),
            Err(ParseError::NeedMore(_)) => Err(HeaderError::new(
                buf.len() as u64,
                HeaderProblem::PastBuffer,
            )),
        }
    }

    /// Parses a header from a prefix of a file; `Err(NeedMore(n))` asks for a prefix of `n` bytes.
    /// The header may be at most [`MAX_HEADER_LEN`] bytes long; a machine without the memory to
    /// hold the parsed header gets an error (at the offset of the item that did not fit), not an
    /// abort.
    ///
    /// # Errors
    ///
    /// `NeedMore` when `buf` ends before the header does, `Bad` when the header is malformed, too
    /// long, or does not fit in memory.
    ///
    /// ```
    /// use nc3pack::nc3::{Header, ParseError};
    /// let bytes = std::fs::read("samples/classic_records.nc").unwrap();
    /// let len = bytes.len() as u64;
    /// let Err(ParseError::NeedMore(n)) = Header::parse_prefix(&bytes[..20], len) else { panic!() };
    /// assert!(n > 20); // asks for more
    /// assert!(Header::parse_prefix(&bytes, len).is_ok());
    /// ```
    pub fn parse_prefix(buf: &[u8], file_len: u64) -> Result<Header, ParseError> {
        let limit = super::header_limit().map_err(|p| HeaderError::new(0, p))?;
        Header::parse_prefix_with_limit(buf, file_len, limit)
    }

    /// [`Header::parse_prefix`] with the header limit `limit` (at most [`MAX_HEADER_LEN`])
    /// instead of [`super::header_limit`]: a field that would end the header past it, or a
    /// count of items that cannot fit in it, is an error naming the field and the limit
    /// ([`HeaderProblem::OverLimit`], [`HeaderProblem::CountOverLimit`]).
    ///
    /// ```
    /// use nc3pack::nc3::{error::HeaderProblem, Header, ParseError};
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let len = b.len() as u64;
    /// assert!(Header::parse_prefix_with_limit(&b, len, 1 << 20).is_ok());
    /// let Err(ParseError::Bad(e)) = Header::parse_prefix_with_limit(&b, len, 64) else { panic!() };
    /// assert!(matches!(e.what, HeaderProblem::CountOverLimit { limit: 64, .. } | HeaderProblem::OverLimit { limit: 64, .. }), "{e}");
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Header::parse_prefix`].
    pub fn parse_prefix_with_limit(
        buf: &[u8],
        file_len: u64,
        limit: u64,
    ) -> Result<Header, ParseError> {
        let file_len = file_len.max(buf.len() as u64);
        let variant = magic(buf, file_len)?;
        let mut c = Cursor {
            buf,
            pos: 4,
            file_len,
            variant,
            limit: limit.min(MAX_HEADER_LEN),
        };
        let numrecs = c.numrecs()?;
        let mut dims = c.dims()?;
        let mut attrs: Vec<AttrRec> = Vec::new();
        let gatts = c.attrs(&"global", &mut attrs)?;
        let (mut vars, mut dimids) = c.vars(&dims, &mut attrs)?;
        let len = c.pos;
        let mut bytes = vec_for(len, len as u64)?;
        bytes.extend_from_slice(&buf[..len]);
        // Lists grown item by item may hold up to twice the room they need: give it back.
        dims.shrink_to_fit();
        vars.shrink_to_fit();
        attrs.shrink_to_fit();
        dimids.shrink_to_fit();
        Ok(Header {
            variant,
            numrecs,
            bytes,
            dims,
            vars,
            ngatts: gatts.len,
            attrs,
            dimids,
        })
    }
}

/// The variant the magic number (the first 4 bytes of `buf`, of a file `file_len` long) names.
fn magic(buf: &[u8], file_len: u64) -> PResult<Variant> {
    if file_len < 4 {
        if buf.len() as u64 == file_len {
            return Err(HeaderError::new(0, HeaderProblem::FileTooShort { file_len }).into());
        }
        return Err(ParseError::NeedMore(4));
    }
    if buf.len() < 4 {
        return Err(ParseError::NeedMore(4));
    }
    if &buf[..3] != b"CDF" {
        return Err(HeaderError::new(
            0,
            HeaderProblem::Magic {
                found: String::from_utf8_lossy(&buf[..3]).into_owned(),
            },
        )
        .into());
    }
    let variant = Variant::from_version(buf[3])
        .ok_or_else(|| HeaderError::new(3, HeaderProblem::Version { version: buf[3] }))?;
    Ok(variant)
}

impl Cursor<'_> {
    /// `numrecs`: a count, or the streaming marker.
    fn numrecs(&mut self) -> PResult<NumRecs> {
        let (v, marker, max) = if self.variant == Variant::Cdf5 {
            (self.u64(&"numrecs")?, u64::MAX, i64::MAX as u64)
        } else {
            let v = self.u32(&"numrecs")?;
            (u64::from(v), u64::from(u32::MAX), i32::MAX as u64)
        };
        if v == marker {
            Ok(NumRecs::Streaming)
        } else if v > max {
            Err(HeaderError::new(
                4,
                HeaderProblem::Negative {
                    field: "numrecs".into(),
                    value: v,
                },
            )
            .into())
        } else {
            Ok(NumRecs::Count(v))
        }
    }

    /// The dimension list (at most one record dimension).
    fn dims(&mut self) -> PResult<Vec<DimRec>> {
        let cw = self.variant.count_width() as u64;
        let ndims = self.list_header(NC_DIMENSION, &"dimension", cw + 4 + cw)?;
        let mut dims: Vec<DimRec> = vec_for(ndims.min(PREALLOC_MAX), self.pos as u64)?;
        let mut records = 0;
        for i in 0..ndims {
            room(&mut dims, self.pos as u64)?;
            let (name, s) = self.name(&format_args!("dimension {i}"))?;
            let len = self.non_neg(&format_args!("dimension {s:?} length"))?;
            records += usize::from(len == 0);
            dims.push(DimRec { name, len });
        }
        if records > 1 {
            return Err(HeaderError::new(8, HeaderProblem::TwoUnlimited).into());
        }
        Ok(dims)
    }

    /// The variable list, and all variables' dimension ids; their attributes go to `attrs`.
    fn vars(
        &mut self,
        dims: &[DimRec],
        attrs: &mut Vec<AttrRec>,
    ) -> PResult<(Vec<VarRec>, Vec<u32>)> {
        let cw = self.variant.count_width() as u64;
        let ow = self.variant.offset_width() as u64;
        let nvars =
            self.list_header(NC_VARIABLE, &"variable", cw + 4 + cw + 4 + cw + 4 + cw + ow)?;
        let mut vars: Vec<VarRec> = vec_for(nvars.min(PREALLOC_MAX), self.pos as u64)?;
        let mut dimids: Vec<u32> = Vec::new();
        for i in 0..nvars {
            room(&mut vars, self.pos as u64)?;
            vars.push(self.var(i, dims, &mut dimids, attrs)?);
        }
        Ok((vars, dimids))
    }

    /// Variable `i`: its dimension ids go to `dimids`, its attributes to `attrs`.
    fn var(
        &mut self,
        i: usize,
        dims: &[DimRec],
        dimids: &mut Vec<u32>,
        attrs: &mut Vec<AttrRec>,
    ) -> PResult<VarRec> {
        let cw = self.variant.count_width() as u64;
        let (name, s) = self.name(&format_args!("variable {i}"))?;
        let field = Named("variable", s);
        let nd_at = self.pos as u64;
        let nd = self.non_neg(&format_args!("{field} dimension count"))?;
        let nd = self.bound(nd, cw, nd_at, &format_args!("{field} dimension count"))?;
        let first = dimids.len();
        for k in 0..nd {
            let at = self.pos as u64;
            let idx = self.dim_id(&field, k, dims)?;
            room(dimids, at)?;
            // Fewer than 2^32 dimensions fit in a header of at most 1 GiB.
            dimids.push(idx as u32);
        }
        let var_attrs = self.attrs(&field, attrs)?;
        let t_at = self.pos as u64;
        let code = self.u32(&format_args!("{field} type"))?;
        let nc_type = self.nc_type(code, t_at, &field)?;
        let vsize = if self.variant == Variant::Cdf5 {
            self.u64(&format_args!("{field} vsize"))?
        } else {
            u64::from(self.u32(&format_args!("{field} vsize"))?)
        };
        let b_at = self.pos as u64;
        let begin = if self.variant == Variant::Cdf1 {
            u64::from(self.u32(&format_args!("{field} begin"))?)
        } else {
            self.u64(&format_args!("{field} begin"))?
        };
        if begin > i64::MAX as u64 {
            return Err(HeaderError::new(
                b_at,
                HeaderProblem::NegativeBegin {
                    field: field.to_string(),
                    begin,
                },
            )
            .into());
        }
        Ok(VarRec {
            name,
            dimids: span(first, nd),
            attrs: var_attrs,
            nc_type,
            vsize,
            begin,
        })
    }

    /// Dimension id `k` of variable `field`: an index into `dims`, the record dimension first
    /// only.
    fn dim_id(&mut self, field: &Named<'_>, k: usize, dims: &[DimRec]) -> PResult<usize> {
        let at = self.pos as u64;
        let id = self.non_neg(&format_args!("{field} dimension id {k}"))?;
        let idx = usize::try_from(id)
            .ok()
            .filter(|&i| i < dims.len())
            .ok_or_else(|| {
                HeaderError::new(
                    at,
                    HeaderProblem::NoSuchDimension {
                        field: field.to_string(),
                        id,
                        count: dims.len(),
                    },
                )
            })?;
        if k > 0 && dims[idx].len == 0 {
            return Err(HeaderError::new(
                at,
                HeaderProblem::UnlimitedNotFirst {
                    field: field.to_string(),
                    position: k,
                },
            )
            .into());
        }
        Ok(idx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nc3::{Attr, Attribute, Values};

    /// A CDF-1 header built field by field: dims x=2, t=UNLIMITED; global attr; two variables.
    fn classic_bytes() -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(b"CDF\x01"); // 0: magic
        b.extend_from_slice(&3u32.to_be_bytes()); // 4: numrecs
        b.extend_from_slice(&NC_DIMENSION.to_be_bytes()); // 8: dim_list tag
        b.extend_from_slice(&2u32.to_be_bytes()); // 12: two dims
        b.extend_from_slice(&1u32.to_be_bytes()); // 16: name len 1
        b.extend_from_slice(b"x\0\0\0"); // 20: "x" padded
        b.extend_from_slice(&2u32.to_be_bytes()); // 24: x = 2
        b.extend_from_slice(&1u32.to_be_bytes()); // 28
        b.extend_from_slice(b"t\0\0\0"); // 32
        b.extend_from_slice(&0u32.to_be_bytes()); // 36: t = UNLIMITED
        b.extend_from_slice(&NC_ATTRIBUTE.to_be_bytes()); // 40: gatt_list
        b.extend_from_slice(&1u32.to_be_bytes()); // 44
        b.extend_from_slice(&5u32.to_be_bytes()); // 48: name len 5
        b.extend_from_slice(b"title\0\0\0"); // 52
        b.extend_from_slice(&2u32.to_be_bytes()); // 60: NC_CHAR
        b.extend_from_slice(&3u32.to_be_bytes()); // 64: 3 chars
        b.extend_from_slice(b"abc\0"); // 68
        b.extend_from_slice(&NC_VARIABLE.to_be_bytes()); // 72: var_list
        b.extend_from_slice(&2u32.to_be_bytes()); // 76
                                                  // var "a": short a(t, x), no attributes
        b.extend_from_slice(&1u32.to_be_bytes()); // 80
        b.extend_from_slice(b"a\0\0\0"); // 84
        b.extend_from_slice(&2u32.to_be_bytes()); // 88: ndims
        b.extend_from_slice(&1u32.to_be_bytes()); // 92: t
        b.extend_from_slice(&0u32.to_be_bytes()); // 96: x
        b.extend_from_slice(&[0u8; 8]); // 100: ABSENT attrs
        b.extend_from_slice(&3u32.to_be_bytes()); // 108: NC_SHORT
        b.extend_from_slice(&4u32.to_be_bytes()); // 112: vsize
        b.extend_from_slice(&200u32.to_be_bytes()); // 116: begin
                                                    // var "d": double d(x) with one int attribute
        b.extend_from_slice(&1u32.to_be_bytes()); // 120
        b.extend_from_slice(b"d\0\0\0"); // 124
        b.extend_from_slice(&1u32.to_be_bytes()); // 128
        b.extend_from_slice(&0u32.to_be_bytes()); // 132
        b.extend_from_slice(&NC_ATTRIBUTE.to_be_bytes()); // 136
        b.extend_from_slice(&1u32.to_be_bytes()); // 140
        b.extend_from_slice(&1u32.to_be_bytes()); // 144
        b.extend_from_slice(b"k\0\0\0"); // 148
        b.extend_from_slice(&4u32.to_be_bytes()); // 152: NC_INT
        b.extend_from_slice(&1u32.to_be_bytes()); // 156
        b.extend_from_slice(&(-7i32).to_be_bytes()); // 160
        b.extend_from_slice(&6u32.to_be_bytes()); // 164: NC_DOUBLE
        b.extend_from_slice(&16u32.to_be_bytes()); // 168
        b.extend_from_slice(&184u32.to_be_bytes()); // 172: begin
        assert_eq!(b.len(), 176);
        b
    }

    #[test]
    fn parses_a_hand_built_classic_header() {
        let b = classic_bytes();
        let h = Header::parse(&b, 1000).unwrap();
        assert_eq!(h.variant(), Variant::Cdf1);
        assert_eq!(h.numrecs(), NumRecs::Count(3));
        assert_eq!(h.len(), 176);
        assert_eq!(h.bytes(), &b[..]);
        assert_eq!((h.dim(1).name(), h.dim(1).len()), ("t", 0));
        assert_eq!(h.dims().map(|d| d.name()).collect::<Vec<_>>(), ["x", "t"]);
        assert_eq!(h.record_dim(), Some(1));
        let gatts: Vec<_> = h.global_attrs().map(Attr::to_owned).collect();
        assert_eq!(
            gatts,
            [Attribute {
                name: "title".into(),
                values: Values::Char(b"abc".to_vec())
            }]
        );
        assert_eq!(h.var(0).dim_ids().collect::<Vec<_>>(), vec![1, 0]);
        assert!(h.is_record_var(0));
        assert!(!h.is_record_var(1));
        assert_eq!(h.var(0).nc_type(), NcType::Short);
        assert_eq!(h.var(0).attrs().len(), 0);
        assert_eq!(h.var(0).vsize(), 4);
        let k: Vec<_> = h.var(1).attrs().collect();
        assert_eq!((k.len(), k[0].name(), k[0].len()), (1, "k", 1));
        assert_eq!(k[0].values(), Values::Int(vec![-7]));
        assert_eq!(k[0].be_bytes(), (-7i32).to_be_bytes());
        assert_eq!(h.var(1).begin(), 184);
        assert_eq!((h.var_id("d"), h.var_id("z")), (Some(1), None));
    }

    #[test]
    fn every_truncation_is_an_error_or_a_request_for_more() {
        let b = classic_bytes();
        for cut in 0..b.len() {
            match Header::parse_prefix(&b[..cut], cut as u64) {
                Err(ParseError::Bad(e)) => assert!(e.offset <= cut as u64, "cut {cut}: {e}"),
                other => panic!("cut {cut}: {other:?}"),
            }
            // With the real file length, a short prefix asks for more.
            assert!(matches!(
                Header::parse_prefix(&b[..cut], 1000),
                Err(ParseError::NeedMore(_))
            ));
        }
    }

    #[test]
    fn names_the_bad_field_and_offset() {
        let mut b = classic_bytes();
        b[12..16].copy_from_slice(&0x7fff_ffffu32.to_be_bytes());
        let e = Header::parse(&b, b.len() as u64).unwrap_err();
        assert_eq!(e.offset, 12);
        assert!(
            matches!(&e.what, HeaderProblem::CountPastEnd { field, count: 0x7fff_ffff, .. } if field == "dimension count"),
            "{e}"
        );

        let mut b = classic_bytes();
        b[12..16].copy_from_slice(&0xffff_fff0u32.to_be_bytes());
        let e = Header::parse(&b, 176).unwrap_err();
        assert!(
            matches!(&e.what, HeaderProblem::Negative { field, value: 0xffff_fff0 } if field == "dimension count"),
            "{e}"
        );

        let mut b = classic_bytes();
        b[20] = 0xff;
        let e = Header::parse(&b, 176).unwrap_err();
        assert_eq!(e.offset, 20);
        assert!(matches!(e.what, HeaderProblem::NameNotUtf8 { .. }), "{e}");

        let mut b = classic_bytes();
        b[108..112].copy_from_slice(&10u32.to_be_bytes()); // int64 in CDF-1
        let e = Header::parse(&b, 176).unwrap_err();
        assert!(
            matches!(
                e.what,
                HeaderProblem::Cdf5Type {
                    nc_type: NcType::Int64,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("exists only in CDF-5 files"), "{e}");

        let mut b = classic_bytes();
        b[96..100].copy_from_slice(&1u32.to_be_bytes()); // a(t, t)
        let e = Header::parse(&b, 176).unwrap_err();
        assert!(
            matches!(e.what, HeaderProblem::UnlimitedNotFirst { position: 1, .. }),
            "{e}"
        );

        let mut b = classic_bytes();
        b[132..136].copy_from_slice(&9u32.to_be_bytes());
        let e = Header::parse(&b, 176).unwrap_err();
        assert_eq!(e.offset, 132);
        assert!(
            matches!(
                e.what,
                HeaderProblem::NoSuchDimension {
                    id: 9,
                    count: 2,
                    ..
                }
            ),
            "{e}"
        );
    }

    /// A CDF-2 header of one global byte attribute of `n` values, cut after the count.
    fn big_attribute_prefix(n: u32) -> (Vec<u8>, u64) {
        let mut b = b"CDF\x02".to_vec();
        b.extend_from_slice(&[0u8; 12]); // numrecs, dimensions ABSENT
        for v in [NC_ATTRIBUTE, 1, 3] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        b.extend_from_slice(b"big\0");
        b.extend_from_slice(&1u32.to_be_bytes()); // NC_BYTE
        b.extend_from_slice(&n.to_be_bytes());
        let len = b.len() as u64 + u64::from(n).next_multiple_of(4) + 8;
        (b, len)
    }

    #[test]
    fn a_header_may_end_at_the_limit_but_not_past_it() {
        // 40 bytes before the values, 8 after: values of MAX - 48 bytes end the header at MAX.
        let at_limit = (MAX_HEADER_LEN - 48) as u32;
        let (b, len) = big_attribute_prefix(at_limit);
        assert_eq!(len, MAX_HEADER_LEN);
        match Header::parse_prefix_with_limit(&b, len, MAX_HEADER_LEN) {
            Err(ParseError::NeedMore(n)) => assert!(n <= MAX_HEADER_LEN, "{n}"),
            other => panic!("{other:?}"),
        }
        // Values that themselves end one byte past the limit: refused at once, before any of
        // them are read, from a file or a stream (unknown length).
        let (b, len) = big_attribute_prefix(at_limit + 9);
        assert_eq!(len, MAX_HEADER_LEN + 12);
        for file_len in [len, u64::MAX] {
            match Header::parse_prefix_with_limit(&b, file_len, MAX_HEADER_LEN) {
                Err(ParseError::Bad(e)) => {
                    assert_eq!(e.offset, 40);
                    assert!(
                        e.to_string().contains("longer than 1073741824 bytes"),
                        "{e}"
                    );
                    assert!(
                        matches!(&e.what, HeaderProblem::TooLong { field, .. } if field == "attribute \"big\" values"),
                        "{e}"
                    );
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn a_count_that_cannot_fit_in_the_header_limit_is_refused_at_the_count() {
        // A header bomb: a dimension count of 89,000,000 at byte 12 of a file long enough to
        // hold them (12 bytes a dimension): refused from its first 16 bytes, before anything is
        // allocated for the dimensions.
        let mut b = b"CDF\x01".to_vec();
        b.extend_from_slice(&0u32.to_be_bytes());
        b.extend_from_slice(&NC_DIMENSION.to_be_bytes());
        b.extend_from_slice(&89_000_000u32.to_be_bytes());
        let file_len = 32 + 89_000_000 * 12;
        let limit = 64 << 20;
        match Header::parse_prefix_with_limit(&b, file_len, limit) {
            Err(ParseError::Bad(e)) => {
                assert_eq!(e.offset, 12);
                assert_eq!(
                    e.what,
                    HeaderProblem::CountOverLimit {
                        field: "dimension count".into(),
                        count: 89_000_000,
                        min_bytes: 1_068_000_000,
                        limit,
                    }
                );
                let m = e.to_string();
                assert!(m.starts_with("dimension count 89000000: "), "{m}");
                assert!(m.contains("NC3PACK_MAX_HEADER_BYTES"), "{m}");
            }
            other => panic!("{other:?}"),
        }
        // Under the format's own limit the count fits: the parser asks for the dimensions.
        assert!(matches!(
            Header::parse_prefix_with_limit(&b, file_len, MAX_HEADER_LEN),
            Err(ParseError::NeedMore(_))
        ));
        // A field that ends past the limit: named, with the limit.
        let b = classic_bytes();
        let e = Header::parse(&b[..], 176).unwrap();
        assert_eq!(e.len(), 176);
        match Header::parse_prefix_with_limit(&b, 176, 70) {
            Err(ParseError::Bad(e)) => {
                assert_eq!(e.offset, 68);
                assert!(
                    matches!(&e.what, HeaderProblem::OverLimit { field, needed: 3, limit: 70 } if field == "attribute \"title\" values"),
                    "{e}"
                );
            }
            other => panic!("{other:?}"),
        }
        // A request for more never asks past the limit.
        match Header::parse_prefix_with_limit(&b[..20], 176, 100) {
            Err(ParseError::NeedMore(n)) => assert!(n <= 100, "{n}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn cdf5_uses_64_bit_counts() {
        let mut b = b"CDF\x05".to_vec();
        b.extend_from_slice(&u64::MAX.to_be_bytes()); // streaming
        b.extend_from_slice(&NC_DIMENSION.to_be_bytes());
        b.extend_from_slice(&1u64.to_be_bytes());
        b.extend_from_slice(&1u64.to_be_bytes());
        b.extend_from_slice(b"n\0\0\0");
        b.extend_from_slice(&5_000_000_000u64.to_be_bytes());
        b.extend_from_slice(&[0u8; 12]); // gatts ABSENT: tag 4 bytes + count 8 bytes
        b.extend_from_slice(&[0u8; 12]); // vars ABSENT
        let h = Header::parse(&b, b.len() as u64).unwrap();
        assert_eq!(h.numrecs(), NumRecs::Streaming);
        assert_eq!(h.dim(0).len(), 5_000_000_000);
        assert_eq!(h.len(), b.len() as u64);
    }
}
