//! A netCDF-3 header *writer*: an owned, editable description of a file's dimensions,
//! attributes and variables ([`NewHeader`]) that encodes to the bytes netCDF-C writes for it,
//! with each variable's `vsize` and `begin` computed as netCDF-C computes them when a new file
//! leaves define mode (`nc_enddef`, i.e. `NC_begins(ncp, 0, 1, 0, 1)` in netcdf-c's
//! `libsrc/nc3internal.c`; `NC_var_shape` in `libsrc/var.c` for the sizes; `v1h_put_NC_var` in
//! `libsrc/v1hpg.c` for the `2^32 - 1` `vsize` of a CDF-1/2 variable over `2^32 - 4` bytes):
//! no free space after the header, variables not aligned beyond 4 bytes, fixed variables in
//! header order right after the header, record variables after them, each `vsize` rounded up to
//! 4 bytes.
//!
//! ```
//! use nc3pack::nc3::{Header, NewHeader};
//! let bytes = std::fs::read("samples/scalars.nc").unwrap();
//! let h = Header::parse(&bytes, bytes.len() as u64).unwrap();
//! let new = NewHeader::from_header(&h);
//! let (encoded, _vars) = new.encode().unwrap();
//! assert_eq!(&encoded[..], &bytes[..h.len() as usize]); // ncgen wrote it the same way
//! ```

use super::header::{Header, NcType, NumRecs, Variant, NC_ATTRIBUTE, NC_DIMENSION, NC_VARIABLE};

/// An attribute to write: name, type, and its values as big-endian bytes (no padding).
///
/// ```
/// use nc3pack::nc3::{NcType, NewAttr};
/// let a = NewAttr::text("units", "K");
/// assert_eq!((a.nc_type, a.bytes.as_slice()), (NcType::Char, &b"K"[..]));
/// assert_eq!(NewAttr::int("n", 7).bytes, vec![0, 0, 0, 7]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAttr {
    /// Name.
    pub name: String,
    /// External type.
    pub nc_type: NcType,
    /// Values, big-endian, `nelems * size` bytes.
    pub bytes: Vec<u8>,
}

impl NewAttr {
    /// A `char` attribute holding `text`.
    ///
    /// ```
    /// assert_eq!(nc3pack::nc3::NewAttr::text("a", "bc").bytes, b"bc".to_vec());
    /// ```
    pub fn text(name: &str, text: &str) -> NewAttr {
        NewAttr {
            name: name.into(),
            nc_type: NcType::Char,
            bytes: text.as_bytes().to_vec(),
        }
    }

    /// An `int` attribute holding one value.
    ///
    /// ```
    /// assert_eq!(nc3pack::nc3::NewAttr::int("a", -1).bytes, vec![0xff; 4]);
    /// ```
    pub fn int(name: &str, value: i32) -> NewAttr {
        NewAttr {
            name: name.into(),
            nc_type: NcType::Int,
            bytes: value.to_be_bytes().to_vec(),
        }
    }

    fn nelems(&self) -> u64 {
        (self.bytes.len() / self.nc_type.size()) as u64
    }
}

/// A variable to write: name, type, dimension ids, attributes.
///
/// ```
/// use nc3pack::nc3::{NcType, NewVar};
/// let v = NewVar { name: "x".into(), nc_type: NcType::Char, dims: vec![], attrs: vec![] };
/// assert!(v.dims.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewVar {
    /// Name.
    pub name: String,
    /// External type.
    pub nc_type: NcType,
    /// Dimension ids, slowest varying first.
    pub dims: Vec<usize>,
    /// Attributes, in order.
    pub attrs: Vec<NewAttr>,
}

/// A netCDF-3 header to write (see the module docs for how sizes and offsets are computed).
///
/// ```
/// use nc3pack::nc3::{NcType, NewHeader, NewVar, Variant};
/// let h = NewHeader {
///     variant: Variant::Cdf1,
///     numrecs: 0,
///     dims: vec![("n".into(), 3)],
///     attrs: vec![],
///     vars: vec![NewVar { name: "v".into(), nc_type: NcType::Short, dims: vec![0], attrs: vec![] }],
/// };
/// let (bytes, vars) = h.encode().unwrap();
/// assert_eq!(vars[0].vsize, 8); // 3 shorts, rounded up to 4 bytes
/// assert_eq!(vars[0].begin, bytes.len() as u64);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewHeader {
    /// Format variant.
    pub variant: Variant,
    /// Number of records.
    pub numrecs: u64,
    /// Dimensions: name and length (0 for the record dimension).
    pub dims: Vec<(String, u64)>,
    /// Global attributes.
    pub attrs: Vec<NewAttr>,
    /// Variables.
    pub vars: Vec<NewVar>,
}

/// Where a written variable's data goes.
///
/// ```
/// let p = nc3pack::nc3::VarPlace { vsize: 4, begin: 80, is_record: false };
/// assert!(!p.is_record);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VarPlace {
    /// The padded size (of one record, for a record variable), as netCDF-C computes it (the
    /// header may hold `2^32 - 1` instead, see the module docs).
    pub vsize: u64,
    /// Offset of the data (of record 0 for a record variable).
    pub begin: u64,
    /// Whether it is a record variable.
    pub is_record: bool,
}

/// Why a [`NewHeader`] cannot be encoded.
///
/// ```
/// use nc3pack::nc3::{NcType, NewHeader, NewVar, Variant};
/// let h = NewHeader { variant: Variant::Cdf1, numrecs: 0, dims: vec![],
///     attrs: vec![], vars: vec![NewVar { name: "v".into(), nc_type: NcType::Int,
///     dims: vec![3], attrs: vec![] }] };
/// assert!(h.encode().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// A variable names a dimension that does not exist.
    #[error("variable {var:?} uses dimension id {dim}, but there are {count} dimensions")]
    BadDim {
        /// Variable.
        var: String,
        /// The dimension id.
        dim: usize,
        /// How many dimensions there are.
        count: usize,
    },
    /// A size or an offset does not fit in the variant's fields.
    #[error("variable {var:?}: size or offset does not fit in a {variant} header")]
    TooLarge {
        /// Variable.
        var: String,
        /// The variant's name.
        variant: &'static str,
    },
}

fn put_count(out: &mut Vec<u8>, variant: Variant, n: u64) {
    if variant == Variant::Cdf5 {
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

fn put_padded(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(bytes);
    out.resize(out.len() + (4 - bytes.len() % 4) % 4, 0);
}

fn put_name(out: &mut Vec<u8>, variant: Variant, name: &str) {
    put_count(out, variant, name.len() as u64);
    put_padded(out, name.as_bytes());
}

fn put_attrs(out: &mut Vec<u8>, variant: Variant, attrs: &[NewAttr]) {
    if attrs.is_empty() {
        // ABSENT: ZERO ZERO.
        out.extend_from_slice(&[0; 4]);
        put_count(out, variant, 0);
        return;
    }
    out.extend_from_slice(&NC_ATTRIBUTE.to_be_bytes());
    put_count(out, variant, attrs.len() as u64);
    for a in attrs {
        put_name(out, variant, &a.name);
        out.extend_from_slice(&a.nc_type.code().to_be_bytes());
        put_count(out, variant, a.nelems());
        put_padded(out, &a.bytes);
    }
}

impl NewHeader {
    /// The header of `h` as it stands, ready to be edited (the number of records is the
    /// stored count, 0 for the streaming marker).
    ///
    /// ```
    /// let bytes = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = nc3pack::nc3::Header::parse(&bytes, bytes.len() as u64).unwrap();
    /// let new = nc3pack::nc3::NewHeader::from_header(&h);
    /// assert_eq!(new.vars.len(), h.var_count());
    /// ```
    pub fn from_header(h: &Header) -> NewHeader {
        let attr = |a: super::header::Attr<'_>| NewAttr {
            name: a.name().to_string(),
            nc_type: a.nc_type(),
            bytes: a.be_bytes().to_vec(),
        };
        NewHeader {
            variant: h.variant(),
            numrecs: match h.numrecs() {
                NumRecs::Count(n) => n,
                NumRecs::Streaming => 0,
            },
            dims: h.dims().map(|d| (d.name().to_string(), d.len())).collect(),
            attrs: h.global_attrs().map(attr).collect(),
            vars: h
                .vars()
                .map(|v| NewVar {
                    name: v.name().to_string(),
                    nc_type: v.nc_type(),
                    dims: v.dim_ids().collect(),
                    attrs: v.attrs().map(attr).collect(),
                })
                .collect(),
        }
    }

    /// Whether variable `v` is a record variable (its first dimension has length 0).
    fn is_record(&self, v: &NewVar) -> bool {
        v.dims
            .first()
            .is_some_and(|&d| self.dims.get(d).is_some_and(|x| x.1 == 0))
    }

    /// The header's bytes and each variable's place, as netCDF-C lays out a new file.
    ///
    /// ```
    /// let bytes = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = nc3pack::nc3::Header::parse(&bytes, bytes.len() as u64).unwrap();
    /// let (enc, places) = nc3pack::nc3::NewHeader::from_header(&h).encode().unwrap();
    /// assert_eq!(enc.len() as u64, h.len());
    /// assert!(places.iter().zip(h.vars()).all(|(p, v)| p.begin == v.begin()));
    /// ```
    ///
    /// # Errors
    ///
    /// [`WriteError::BadDim`] for a dimension id out of range, [`WriteError::TooLarge`] when
    /// a size or an offset overflows (or, in CDF-1, an offset passes 2^31 - 1).
    pub fn encode(&self) -> Result<(Vec<u8>, Vec<VarPlace>), WriteError> {
        let variant = self.variant;
        let too_large = |v: &NewVar| WriteError::TooLarge {
            var: v.name.clone(),
            variant: variant.name(),
        };
        // Sizes (NC_var_shape): the product of the non-record dimensions times the element
        // size, rounded up to 4.
        let mut places = Vec::with_capacity(self.vars.len());
        for v in &self.vars {
            let mut n: u64 = 1;
            let rec = self.is_record(v);
            for (k, &d) in v.dims.iter().enumerate() {
                let len = self
                    .dims
                    .get(d)
                    .ok_or_else(|| WriteError::BadDim {
                        var: v.name.clone(),
                        dim: d,
                        count: self.dims.len(),
                    })?
                    .1;
                if k == 0 && rec {
                    continue;
                }
                n = n.checked_mul(len).ok_or_else(|| too_large(v))?;
            }
            let vsize = n
                .checked_mul(v.nc_type.size() as u64)
                .and_then(|b| b.checked_add(3))
                .map(|b| b & !3)
                .ok_or_else(|| too_large(v))?;
            places.push(VarPlace {
                vsize,
                begin: 0,
                is_record: rec,
            });
        }
        // The header's length does not depend on the begins' values: encode once with zeros to
        // measure it, then place the variables and encode again.
        let len = self.encode_with(&places).len() as u64;
        let mut index = len;
        for (p, v) in places.iter_mut().zip(&self.vars) {
            if !p.is_record {
                p.begin = index;
                index = index.checked_add(p.vsize).ok_or_else(|| too_large(v))?;
            }
        }
        for (p, v) in places.iter_mut().zip(&self.vars) {
            if p.is_record {
                p.begin = index;
                index = index.checked_add(p.vsize).ok_or_else(|| too_large(v))?;
            }
        }
        if variant == Variant::Cdf1 {
            if let Some((_, v)) = places
                .iter()
                .zip(&self.vars)
                .find(|(p, _)| p.begin > i32::MAX as u64)
            {
                return Err(too_large(v));
            }
        }
        Ok((self.encode_with(&places), places))
    }

    fn encode_with(&self, places: &[VarPlace]) -> Vec<u8> {
        let variant = self.variant;
        let mut out = Vec::new();
        out.extend_from_slice(b"CDF");
        out.push(variant.version());
        put_count(&mut out, variant, self.numrecs);
        if self.dims.is_empty() {
            out.extend_from_slice(&[0; 4]);
            put_count(&mut out, variant, 0);
        } else {
            out.extend_from_slice(&NC_DIMENSION.to_be_bytes());
            put_count(&mut out, variant, self.dims.len() as u64);
            for (name, len) in &self.dims {
                put_name(&mut out, variant, name);
                put_count(&mut out, variant, *len);
            }
        }
        put_attrs(&mut out, variant, &self.attrs);
        if self.vars.is_empty() {
            out.extend_from_slice(&[0; 4]);
            put_count(&mut out, variant, 0);
            return out;
        }
        out.extend_from_slice(&NC_VARIABLE.to_be_bytes());
        put_count(&mut out, variant, self.vars.len() as u64);
        for (v, p) in self.vars.iter().zip(places) {
            put_name(&mut out, variant, &v.name);
            put_count(&mut out, variant, v.dims.len() as u64);
            for &d in &v.dims {
                put_count(&mut out, variant, d as u64);
            }
            put_attrs(&mut out, variant, &v.attrs);
            out.extend_from_slice(&v.nc_type.code().to_be_bytes());
            let vsize = if variant != Variant::Cdf5 && p.vsize > 4_294_967_292 {
                4_294_967_295
            } else {
                p.vsize
            };
            put_count(&mut out, variant, vsize);
            if variant == Variant::Cdf1 {
                out.extend_from_slice(&(p.begin as u32).to_be_bytes());
            } else {
                out.extend_from_slice(&p.begin.to_be_bytes());
            }
        }
        out
    }
}
