//! The netCDF-3 header: data model and parser for CDF-1, CDF-2 and CDF-5.
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
//! Every count read from the file is checked against the bytes the file has left before anything is
//! allocated for it. A header may be at most [`MAX_HEADER_LEN`] bytes long (1 GiB, the largest an
//! archive carries): a field that would end past it is an error naming the limit, whether the
//! input is a file or a stream.

use super::error::{HeaderError, HeaderProblem};

/// Largest netCDF-3 header parsed (1 GiB): a longer one is refused, naming this limit, since a
/// header is held whole in memory (see design/FORMAT.md, "Limits").
///
/// ```
/// assert_eq!(nc3pack::nc3::MAX_HEADER_LEN, 1 << 30);
/// ```
pub const MAX_HEADER_LEN: u64 = 1 << 30;
use std::fmt::Display;

/// Tag of a dimension list (spec: `NC_DIMENSION`).
///
/// ```
/// assert_eq!(nc3pack::nc3::NC_DIMENSION, 0x0A);
/// ```
pub const NC_DIMENSION: u32 = 0x0A;
/// Tag of a variable list (spec: `NC_VARIABLE`).
///
/// ```
/// assert_eq!(nc3pack::nc3::NC_VARIABLE, 0x0B);
/// ```
pub const NC_VARIABLE: u32 = 0x0B;
/// Tag of an attribute list (spec: `NC_ATTRIBUTE`).
///
/// ```
/// assert_eq!(nc3pack::nc3::NC_ATTRIBUTE, 0x0C);
/// ```
pub const NC_ATTRIBUTE: u32 = 0x0C;

/// Which of the three classic formats a file is.
///
/// ```
/// use nc3pack::nc3::Variant;
/// assert_eq!(Variant::from_version(5), Some(Variant::Cdf5));
/// assert_eq!(Variant::Cdf2.name(), "64-bit offset");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// CDF-1, the classic format: 32-bit offsets and counts.
    Cdf1,
    /// CDF-2, the 64-bit offset format: 64-bit `begin`.
    Cdf2,
    /// CDF-5, the 64-bit data format: 64-bit counts and sizes, unsigned and 64-bit types.
    Cdf5,
}

impl Variant {
    /// The variant for a version byte (the fourth byte of the file).
    ///
    /// ```
    /// use nc3pack::nc3::Variant;
    /// assert_eq!(Variant::from_version(5), Some(Variant::Cdf5));
    /// assert_eq!(Variant::from_version(3), None);
    /// ```
    pub fn from_version(v: u8) -> Option<Variant> {
        match v {
            1 => Some(Variant::Cdf1),
            2 => Some(Variant::Cdf2),
            5 => Some(Variant::Cdf5),
            _ => None,
        }
    }

    /// The version byte.
    ///
    /// ```
    /// assert_eq!(nc3pack::nc3::Variant::Cdf2.version(), 2);
    /// ```
    pub fn version(self) -> u8 {
        match self {
            Variant::Cdf1 => 1,
            Variant::Cdf2 => 2,
            Variant::Cdf5 => 5,
        }
    }

    /// The name `ncdump -k` prints for this variant.
    ///
    /// ```
    /// assert_eq!(nc3pack::nc3::Variant::Cdf2.name(), "64-bit offset");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Variant::Cdf1 => "classic",
            Variant::Cdf2 => "64-bit offset",
            Variant::Cdf5 => "cdf5",
        }
    }

    /// Width in bytes of `nelems`, `dimid`, `dim_length`, `vsize` and `numrecs`.
    ///
    /// ```
    /// use nc3pack::nc3::Variant;
    /// assert_eq!(Variant::Cdf1.count_width(), 4);
    /// assert_eq!(Variant::Cdf5.count_width(), 8);
    /// ```
    pub fn count_width(self) -> usize {
        if self == Variant::Cdf5 {
            8
        } else {
            4
        }
    }

    /// Width in bytes of a variable's `begin` offset.
    ///
    /// ```
    /// use nc3pack::nc3::Variant;
    /// assert_eq!(Variant::Cdf1.offset_width(), 4);
    /// assert_eq!(Variant::Cdf2.offset_width(), 8);
    /// ```
    pub fn offset_width(self) -> usize {
        if self == Variant::Cdf1 {
            4
        } else {
            8
        }
    }
}

/// The external data types of netCDF-3 (CDF-5 adds the unsigned and 64-bit ones).
///
/// ```
/// use nc3pack::nc3::NcType;
/// assert_eq!(NcType::from_code(6), Some(NcType::Double));
/// assert_eq!(NcType::Double.size(), 8);
/// assert_eq!(NcType::Double.name(), "double");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NcType {
    /// `NC_BYTE`, signed 8-bit.
    Byte,
    /// `NC_CHAR`, 8-bit character.
    Char,
    /// `NC_SHORT`, signed 16-bit.
    Short,
    /// `NC_INT`, signed 32-bit.
    Int,
    /// `NC_FLOAT`, IEEE 754 32-bit.
    Float,
    /// `NC_DOUBLE`, IEEE 754 64-bit.
    Double,
    /// `NC_UBYTE` (CDF-5), unsigned 8-bit.
    UByte,
    /// `NC_USHORT` (CDF-5), unsigned 16-bit.
    UShort,
    /// `NC_UINT` (CDF-5), unsigned 32-bit.
    UInt,
    /// `NC_INT64` (CDF-5), signed 64-bit.
    Int64,
    /// `NC_UINT64` (CDF-5), unsigned 64-bit.
    UInt64,
}

impl NcType {
    /// All types, in code order.
    ///
    /// ```
    /// use nc3pack::nc3::NcType;
    /// assert_eq!(NcType::ALL.len(), 11);
    /// assert!(NcType::ALL.iter().all(|t| NcType::from_code(t.code()) == Some(*t)));
    /// ```
    pub const ALL: [NcType; 11] = [
        NcType::Byte,
        NcType::Char,
        NcType::Short,
        NcType::Int,
        NcType::Float,
        NcType::Double,
        NcType::UByte,
        NcType::UShort,
        NcType::UInt,
        NcType::Int64,
        NcType::UInt64,
    ];

    /// The type for an `nc_type` code (1..=11).
    ///
    /// ```
    /// use nc3pack::nc3::NcType;
    /// assert_eq!(NcType::from_code(5), Some(NcType::Float));
    /// assert_eq!(NcType::from_code(0), None);
    /// ```
    pub fn from_code(code: u32) -> Option<NcType> {
        let i = usize::try_from(code).ok()?.checked_sub(1)?;
        NcType::ALL.get(i).copied()
    }

    /// The `nc_type` code.
    ///
    /// ```
    /// assert_eq!(nc3pack::nc3::NcType::Double.code(), 6);
    /// ```
    pub fn code(self) -> u32 {
        NcType::ALL.iter().position(|&t| t == self).unwrap_or(0) as u32 + 1
    }

    /// Size of one element in bytes.
    ///
    /// ```
    /// use nc3pack::nc3::NcType;
    /// assert_eq!(NcType::Short.size(), 2);
    /// assert_eq!(NcType::UInt64.size(), 8);
    /// ```
    pub fn size(self) -> usize {
        match self {
            NcType::Byte | NcType::Char | NcType::UByte => 1,
            NcType::Short | NcType::UShort => 2,
            NcType::Int | NcType::Float | NcType::UInt => 4,
            NcType::Double | NcType::Int64 | NcType::UInt64 => 8,
        }
    }

    /// The CDL name of the type.
    ///
    /// ```
    /// assert_eq!(nc3pack::nc3::NcType::UShort.name(), "ushort");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            NcType::Byte => "byte",
            NcType::Char => "char",
            NcType::Short => "short",
            NcType::Int => "int",
            NcType::Float => "float",
            NcType::Double => "double",
            NcType::UByte => "ubyte",
            NcType::UShort => "ushort",
            NcType::UInt => "uint",
            NcType::Int64 => "int64",
            NcType::UInt64 => "uint64",
        }
    }

    /// Whether the type exists only in CDF-5.
    ///
    /// ```
    /// use nc3pack::nc3::NcType;
    /// assert!(NcType::Int64.is_cdf5_only());
    /// assert!(!NcType::Double.is_cdf5_only());
    /// ```
    pub fn is_cdf5_only(self) -> bool {
        matches!(
            self,
            NcType::UByte | NcType::UShort | NcType::UInt | NcType::Int64 | NcType::UInt64
        )
    }
}

/// Typed values, decoded from big-endian. Used for attribute values.
///
/// ```
/// use nc3pack::nc3::{NcType, Values};
/// let v = Values::from_be_bytes(NcType::Short, &[0, 1, 0xff, 0xff]);
/// assert_eq!(v, Values::Short(vec![1, -1]));
/// assert_eq!(v.len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// `byte` values.
    Byte(Vec<i8>),
    /// `char` values, as raw bytes.
    Char(Vec<u8>),
    /// `short` values.
    Short(Vec<i16>),
    /// `int` values.
    Int(Vec<i32>),
    /// `float` values.
    Float(Vec<f32>),
    /// `double` values.
    Double(Vec<f64>),
    /// `ubyte` values.
    UByte(Vec<u8>),
    /// `ushort` values.
    UShort(Vec<u16>),
    /// `uint` values.
    UInt(Vec<u32>),
    /// `int64` values.
    Int64(Vec<i64>),
    /// `uint64` values.
    UInt64(Vec<u64>),
}

macro_rules! be_vec {
    ($bytes:expr, $t:ty) => {
        $bytes
            .chunks_exact(std::mem::size_of::<$t>())
            .map(|c| <$t>::from_be_bytes(c.try_into().unwrap_or_default()))
            .collect()
    };
}

impl Values {
    /// Decodes big-endian bytes of type `t`; a trailing partial element is ignored.
    ///
    /// ```
    /// use nc3pack::nc3::{NcType, Values};
    /// let v = Values::from_be_bytes(NcType::Short, &[0, 1, 0xff, 0xfe]);
    /// assert_eq!(v, Values::Short(vec![1, -2]));
    /// ```
    pub fn from_be_bytes(t: NcType, b: &[u8]) -> Values {
        match t {
            NcType::Byte => Values::Byte(b.iter().map(|&x| x as i8).collect()),
            NcType::Char => Values::Char(b.to_vec()),
            NcType::UByte => Values::UByte(b.to_vec()),
            NcType::Short => Values::Short(be_vec!(b, i16)),
            NcType::UShort => Values::UShort(be_vec!(b, u16)),
            NcType::Int => Values::Int(be_vec!(b, i32)),
            NcType::UInt => Values::UInt(be_vec!(b, u32)),
            NcType::Float => Values::Float(be_vec!(b, f32)),
            NcType::Double => Values::Double(be_vec!(b, f64)),
            NcType::Int64 => Values::Int64(be_vec!(b, i64)),
            NcType::UInt64 => Values::UInt64(be_vec!(b, u64)),
        }
    }

    /// [`Values::from_be_bytes`] with a fallible allocation: `Err` carries the bytes that could
    /// not be allocated.
    ///
    /// ```
    /// use nc3pack::nc3::{NcType, Values};
    /// assert_eq!(Values::try_from_be_bytes(NcType::Int, &[0, 0, 0, 7]), Ok(Values::Int(vec![7])));
    /// ```
    ///
    /// # Errors
    ///
    /// The allocation failed.
    pub fn try_from_be_bytes(t: NcType, b: &[u8]) -> Result<Values, usize> {
        fn conv<T, const N: usize>(b: &[u8], f: fn([u8; N]) -> T) -> Result<Vec<T>, usize> {
            let n = b.len() / N;
            let mut v = Vec::new();
            v.try_reserve_exact(n)
                .map_err(|_| n * std::mem::size_of::<T>())?;
            v.extend(b.chunks_exact(N).map(|c| f(c.try_into().unwrap_or([0; N]))));
            Ok(v)
        }
        Ok(match t {
            NcType::Byte => Values::Byte(conv(b, |[x]: [u8; 1]| x as i8)?),
            NcType::Char => Values::Char(conv(b, |[x]: [u8; 1]| x)?),
            NcType::UByte => Values::UByte(conv(b, |[x]: [u8; 1]| x)?),
            NcType::Short => Values::Short(conv(b, i16::from_be_bytes)?),
            NcType::UShort => Values::UShort(conv(b, u16::from_be_bytes)?),
            NcType::Int => Values::Int(conv(b, i32::from_be_bytes)?),
            NcType::UInt => Values::UInt(conv(b, u32::from_be_bytes)?),
            NcType::Float => Values::Float(conv(b, f32::from_be_bytes)?),
            NcType::Double => Values::Double(conv(b, f64::from_be_bytes)?),
            NcType::Int64 => Values::Int64(conv(b, i64::from_be_bytes)?),
            NcType::UInt64 => Values::UInt64(conv(b, u64::from_be_bytes)?),
        })
    }

    /// Number of values.
    ///
    /// ```
    /// use nc3pack::nc3::Values;
    /// assert_eq!(Values::Double(vec![1.0, 2.0]).len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        match self {
            Values::Byte(v) => v.len(),
            Values::Char(v) | Values::UByte(v) => v.len(),
            Values::Short(v) => v.len(),
            Values::UShort(v) => v.len(),
            Values::Int(v) => v.len(),
            Values::UInt(v) => v.len(),
            Values::Float(v) => v.len(),
            Values::Double(v) => v.len(),
            Values::Int64(v) => v.len(),
            Values::UInt64(v) => v.len(),
        }
    }

    /// Whether there are no values.
    ///
    /// ```
    /// use nc3pack::nc3::Values;
    /// assert!(Values::Char(vec![]).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An attribute with its name and typed values, owned: what [`Attr::to_owned`] gives and what
/// the reading API ([`crate::read::Dataset`]) hands out. The parsed [`Header`] itself keeps no
/// such objects (see [`Attr`]).
///
/// ```
/// use nc3pack::nc3::{Attribute, Values};
/// let a = Attribute { name: "units".into(), values: Values::Char(b"K".to_vec()) };
/// assert_eq!(a.values.len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Attribute {
    /// Name.
    pub name: String,
    /// Typed values.
    pub values: Values,
}

/// The stored number of records.
///
/// ```
/// use nc3pack::nc3::{Header, NumRecs};
/// let bytes = std::fs::read("samples/classic_records.nc").unwrap();
/// let h = Header::parse(&bytes, bytes.len() as u64).unwrap();
/// assert!(matches!(h.numrecs(), NumRecs::Count(_)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumRecs {
    /// A count.
    Count(u64),
    /// The streaming marker (all bits set): the count follows from the file length.
    Streaming,
}

/// A range of a header's bytes or of one of its lists: start and length. Headers are at most
/// [`MAX_HEADER_LEN`] (1 GiB) long, so 32 bits hold every offset and count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Span {
    at: u32,
    len: u32,
}

impl Span {
    fn range(self) -> std::ops::Range<usize> {
        self.at as usize..self.at as usize + self.len as usize
    }
}

/// A dimension's record: its name in the header bytes, and its length.
#[derive(Debug, Clone, Copy, PartialEq)]
struct DimRec {
    name: Span,
    len: u64,
}

/// An attribute's record: its name and its big-endian values in the header bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
struct AttrRec {
    name: Span,
    values: Span,
    nc_type: NcType,
}

/// A variable's record: name in the header bytes, dimension ids and attributes as ranges of the
/// header's shared lists.
#[derive(Debug, Clone, Copy, PartialEq)]
struct VarRec {
    name: Span,
    dimids: Span,
    attrs: Span,
    nc_type: NcType,
    vsize: u64,
    begin: u64,
}

/// A parsed netCDF-3 header, compact: it owns its bytes, and dimensions, variables and
/// attributes are small fixed-size records whose names and values are ranges of those bytes
/// (no heap object per name, per attribute or per variable). Read it through the accessors,
/// which hand out views ([`Dim`], [`Var`], [`Attr`]) borrowing the header.
///
/// ```
/// use nc3pack::nc3::{Header, NumRecs, Variant};
/// // The smallest file: magic, numrecs 0, three ABSENT lists.
/// let mut bytes = b"CDF\x01".to_vec();
/// bytes.extend_from_slice(&[0u8; 28]);
/// let h = Header::parse(&bytes, bytes.len() as u64).unwrap();
/// assert_eq!(h.variant(), Variant::Cdf1);
/// assert_eq!(h.numrecs(), NumRecs::Count(0));
/// assert_eq!(h.len(), 32);
/// assert_eq!(h.bytes(), &bytes[..]);
/// assert_eq!((h.dim_count(), h.var_count()), (0, 0));
/// assert_eq!(h.global_attrs().len(), 0);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    variant: Variant,
    numrecs: NumRecs,
    /// The header's bytes, exactly: names and attribute values are ranges of them.
    bytes: Vec<u8>,
    dims: Vec<DimRec>,
    vars: Vec<VarRec>,
    /// All attributes: the global ones first, then each variable's, in header order.
    attrs: Vec<AttrRec>,
    /// How many of `attrs` are global.
    ngatts: u32,
    /// All variables' dimension ids, one variable after the other.
    dimids: Vec<u32>,
}

/// A dimension of a [`Header`]: a view borrowing it.
///
/// ```
/// # let f = std::fs::File::open("samples/classic_records.nc").unwrap();
/// # let (h, _) = nc3pack::nc3::read_header(&f, "classic_records.nc".as_ref()).unwrap();
/// let time = h.dim(0);
/// assert_eq!((time.name(), time.len(), time.is_record()), ("time", 0, true));
/// assert_eq!(h.dims().map(|d| d.name()).collect::<Vec<_>>(), ["time", "three", "five", "two"]);
/// assert_eq!(h.dim_name(2), "five");
/// ```
#[derive(Clone, Copy)]
pub struct Dim<'h> {
    h: &'h Header,
    id: usize,
}

impl<'h> Dim<'h> {
    /// The dimension id (its position in the header).
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert_eq!(h.dim(2).id(), 2);
    /// ```
    pub fn id(self) -> usize {
        self.id
    }

    /// Name.
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert_eq!(h.dim(0).name(), "time");
    /// ```
    pub fn name(self) -> &'h str {
        self.h.text(self.h.dims[self.id].name)
    }

    /// Length as stored in the header: 0 for the record (unlimited) dimension.
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert_eq!(h.dim(1).len(), 3); // "three"
    /// ```
    #[allow(clippy::len_without_is_empty)]
    pub fn len(self) -> u64 {
        self.h.dims[self.id].len
    }

    /// Whether this is the record (unlimited) dimension.
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert!(h.dim(0).is_record());
    /// assert!(!h.dim(1).is_record());
    /// ```
    pub fn is_record(self) -> bool {
        self.len() == 0
    }
}

impl std::fmt::Debug for Dim<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dim")
            .field("name", &self.name())
            .field("len", &self.len())
            .finish()
    }
}

/// A variable of a [`Header`], as declared: a view borrowing the header.
///
/// ```
/// # let f = std::fs::File::open("samples/classic_records.nc").unwrap();
/// # let (h, _) = nc3pack::nc3::read_header(&f, "classic_records.nc".as_ref()).unwrap();
/// let v = h.var(h.var_id("f3").unwrap());
/// assert_eq!(v.name(), "f3");
/// assert_eq!(v.nc_type(), nc3pack::nc3::NcType::Float);
/// assert_eq!(v.dims().map(|d| d.name()).collect::<Vec<_>>(), ["time", "three"]);
/// assert_eq!(v.dim_ids().collect::<Vec<_>>(), [0, 1]);
/// assert!(v.is_record());
/// assert_eq!(h.vars().filter(|v| v.dim_count() == 0).count(), 4);
/// ```
#[derive(Clone, Copy)]
pub struct Var<'h> {
    h: &'h Header,
    id: usize,
}

impl<'h> Var<'h> {
    fn rec(self) -> &'h VarRec {
        &self.h.vars[self.id]
    }

    /// The variable id (its position in the header).
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert_eq!(h.var(3).id(), 3);
    /// ```
    pub fn id(self) -> usize {
        self.id
    }

    /// Name.
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert_eq!(h.var(0).name(), "time");
    /// ```
    pub fn name(self) -> &'h str {
        self.h.text(self.rec().name)
    }

    /// Element type.
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert_eq!(h.var(0).nc_type(), nc3pack::nc3::NcType::Double);
    /// ```
    pub fn nc_type(self) -> NcType {
        self.rec().nc_type
    }

    /// `vsize` as stored (informational; nc3pack computes sizes itself, as netcdf-c does).
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// let s3 = h.var(h.var_id("s3").unwrap());
    /// assert_eq!(s3.vsize(), 8); // 3 shorts, padded to 4 bytes
    /// ```
    pub fn vsize(self) -> u64 {
        self.rec().vsize
    }

    /// Byte offset of the data (of the first record for a record variable).
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert!(h.vars().all(|v| v.begin() >= h.len()));
    /// ```
    pub fn begin(self) -> u64 {
        self.rec().begin
    }

    /// Number of dimensions (0 for a scalar).
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert_eq!(h.var(h.var_id("s3").unwrap()).dim_count(), 2);
    /// ```
    pub fn dim_count(self) -> usize {
        self.rec().dimids.len as usize
    }

    /// Dimension ids, outermost first.
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// let s3 = h.var(h.var_id("s3").unwrap());
    /// assert_eq!(s3.dim_ids().collect::<Vec<_>>(), [0, 1]);
    /// ```
    pub fn dim_ids(self) -> impl ExactSizeIterator<Item = usize> + DoubleEndedIterator + 'h {
        self.h.dimids[self.rec().dimids.range()]
            .iter()
            .map(|&d| d as usize)
    }

    /// Dimensions, outermost first.
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// let c5 = h.var(h.var_id("c5").unwrap());
    /// let names: Vec<&str> = c5.dims().map(|d| d.name()).collect();
    /// assert_eq!(names, ["time", "five"]);
    /// ```
    pub fn dims(self) -> impl ExactSizeIterator<Item = Dim<'h>> + DoubleEndedIterator + 'h {
        let h = self.h;
        self.dim_ids().map(move |id| Dim { h, id })
    }

    /// Attributes, in header order.
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// let f3 = h.var(h.var_id("f3").unwrap());
    /// assert_eq!(f3.attrs().map(|a| a.name()).collect::<Vec<_>>(), ["units"]);
    /// ```
    pub fn attrs(self) -> impl ExactSizeIterator<Item = Attr<'h>> + DoubleEndedIterator + 'h {
        self.h.attr_views(self.rec().attrs)
    }

    /// Whether this is a record variable (its first dimension is the record dimension).
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert!(h.var(h.var_id("s3").unwrap()).is_record());
    /// assert!(!h.var(h.var_id("fixed_s").unwrap()).is_record());
    /// ```
    pub fn is_record(self) -> bool {
        self.dims().next().is_some_and(Dim::is_record)
    }
}

impl std::fmt::Debug for Var<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Var")
            .field("name", &self.name())
            .field("nc_type", &self.nc_type())
            .field("dim_ids", &self.dim_ids().collect::<Vec<_>>())
            .field("begin", &self.begin())
            .finish()
    }
}

/// An attribute of a [`Header`] (global or of a variable): a view borrowing the header, whose
/// values stay big-endian in the header bytes until asked for.
///
/// ```
/// use nc3pack::nc3::{NcType, Values};
/// # let f = std::fs::File::open("samples/classic_records.nc").unwrap();
/// # let (h, _) = nc3pack::nc3::read_header(&f, "classic_records.nc".as_ref()).unwrap();
/// let f3 = h.var(h.var_id("f3").unwrap());
/// let units = f3.attrs().find(|a| a.name() == "units").unwrap();
/// assert_eq!(units.nc_type(), NcType::Char);
/// assert_eq!(units.values(), Values::Char(b"m s-1".to_vec()));
/// assert_eq!(units.be_bytes(), b"m s-1");
/// assert_eq!(units.len(), 5);
/// assert_eq!(units.to_owned().name, "units");
/// assert_eq!(h.global_attrs().map(|a| a.name()).collect::<Vec<_>>(), ["title", "source"]);
/// ```
#[derive(Clone, Copy)]
pub struct Attr<'h> {
    h: &'h Header,
    rec: &'h AttrRec,
}

impl<'h> Attr<'h> {
    /// Name.
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// let time = h.var(0);
    /// assert_eq!(time.attrs().next().unwrap().name(), "units");
    /// ```
    pub fn name(self) -> &'h str {
        self.h.text(self.rec.name)
    }

    /// Type of the values.
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// let units = h.var(0).attrs().next().unwrap();
    /// assert_eq!(units.nc_type(), nc3pack::nc3::NcType::Char);
    /// ```
    pub fn nc_type(self) -> NcType {
        self.rec.nc_type
    }

    /// Number of values.
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// let units = h.var(0).attrs().next().unwrap();
    /// assert_eq!(units.len(), "hours since 2000-01-01 00:00:00".len());
    /// ```
    #[allow(clippy::len_without_is_empty)]
    pub fn len(self) -> usize {
        self.rec.values.len as usize / self.rec.nc_type.size()
    }

    /// The values as stored: big-endian, without padding.
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// let units = h.var(0).attrs().next().unwrap();
    /// assert_eq!(units.be_bytes(), b"hours since 2000-01-01 00:00:00");
    /// ```
    pub fn be_bytes(self) -> &'h [u8] {
        &self.h.bytes[self.rec.values.range()]
    }

    /// The values, decoded (allocates them; see [`Attr::be_bytes`] for the stored bytes).
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// let units = h.var(0).attrs().next().unwrap();
    /// assert_eq!(units.values(), nc3pack::nc3::Values::Char(b"hours since 2000-01-01 00:00:00".to_vec()));
    /// ```
    pub fn values(self) -> Values {
        Values::from_be_bytes(self.nc_type(), self.be_bytes())
    }

    /// The attribute as an owned [`Attribute`] (name and decoded values).
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// let units = h.var(0).attrs().next().unwrap().to_owned();
    /// assert_eq!(units.name, "units");
    /// ```
    #[allow(clippy::wrong_self_convention)]
    pub fn to_owned(self) -> Attribute {
        Attribute {
            name: self.name().to_string(),
            values: self.values(),
        }
    }
}

impl std::fmt::Debug for Attr<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attr")
            .field("name", &self.name())
            .field("values", &self.values())
            .finish()
    }
}

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

/// A [`Span`] of `len` items at `at`; both are below 2^32 (offsets and counts within a header
/// of at most [`MAX_HEADER_LEN`] bytes, each item at least a byte).
fn span(at: usize, len: usize) -> Span {
    Span {
        at: at as u32,
        len: len as u32,
    }
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
            Some(end) if end <= self.buf.len() as u64 && end <= MAX_HEADER_LEN => {
                let s = &self.buf[self.pos..end as usize];
                self.pos = end as usize;
                Ok(s)
            }
            Some(end) if end <= self.file_len && end > MAX_HEADER_LEN => Err(HeaderError::new(
                self.pos as u64,
                HeaderProblem::TooLong {
                    field: field.to_string(),
                    needed: n,
                },
            )
            .into()),
            Some(end) if end <= self.file_len => Err(ParseError::NeedMore(
                end.max(self.buf.len() as u64 * 2).min(MAX_HEADER_LEN),
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

    /// Checks that `count` items of at least `min_size` bytes each fit in the rest of the file.
    fn bound(&self, count: u64, min_size: u64, at: u64, field: &dyn Display) -> PResult<usize> {
        let rest = self.file_len.saturating_sub(self.pos as u64);
        match count.checked_mul(min_size) {
            Some(need) if need <= rest => Ok(count as usize),
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
    fn name(&mut self, field: &dyn Display) -> PResult<(Span, &'a str)> {
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
    fn attrs(&mut self, what: &dyn Display, out: &mut Vec<AttrRec>) -> PResult<Span> {
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
        Header::parse_items(buf, file_len)
    }

    fn parse_items(buf: &[u8], file_len: u64) -> Result<Header, ParseError> {
        let file_len = file_len.max(buf.len() as u64);
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
        let mut c = Cursor {
            buf,
            pos: 4,
            file_len,
            variant,
        };
        let numrecs = if variant == Variant::Cdf5 {
            let v = c.u64(&"numrecs")?;
            if v == u64::MAX {
                NumRecs::Streaming
            } else if v > i64::MAX as u64 {
                return Err(HeaderError::new(
                    4,
                    HeaderProblem::Negative {
                        field: "numrecs".into(),
                        value: v,
                    },
                )
                .into());
            } else {
                NumRecs::Count(v)
            }
        } else {
            let v = c.u32(&"numrecs")?;
            if v == u32::MAX {
                NumRecs::Streaming
            } else if v > i32::MAX as u32 {
                return Err(HeaderError::new(
                    4,
                    HeaderProblem::Negative {
                        field: "numrecs".into(),
                        value: u64::from(v),
                    },
                )
                .into());
            } else {
                NumRecs::Count(u64::from(v))
            }
        };
        let cw = variant.count_width() as u64;

        let ndims = c.list_header(NC_DIMENSION, &"dimension", cw + 4 + cw)?;
        let mut dims: Vec<DimRec> = vec_for(ndims.min(PREALLOC_MAX), c.pos as u64)?;
        let mut records = 0;
        for i in 0..ndims {
            room(&mut dims, c.pos as u64)?;
            let (name, s) = c.name(&format_args!("dimension {i}"))?;
            let len = c.non_neg(&format_args!("dimension {s:?} length"))?;
            records += usize::from(len == 0);
            dims.push(DimRec { name, len });
        }
        if records > 1 {
            return Err(HeaderError::new(8, HeaderProblem::TwoUnlimited).into());
        }

        let mut attrs: Vec<AttrRec> = Vec::new();
        let gatts = c.attrs(&"global", &mut attrs)?;

        let ow = variant.offset_width() as u64;
        let nvars = c.list_header(NC_VARIABLE, &"variable", cw + 4 + cw + 4 + cw + 4 + cw + ow)?;
        let mut vars: Vec<VarRec> = vec_for(nvars.min(PREALLOC_MAX), c.pos as u64)?;
        let mut dimids: Vec<u32> = Vec::new();
        for i in 0..nvars {
            room(&mut vars, c.pos as u64)?;
            let (name, s) = c.name(&format_args!("variable {i}"))?;
            let field = Named("variable", s);
            let nd_at = c.pos as u64;
            let nd = c.non_neg(&format_args!("{field} dimension count"))?;
            let nd = c.bound(nd, cw, nd_at, &format_args!("{field} dimension count"))?;
            let first = dimids.len();
            for k in 0..nd {
                let at = c.pos as u64;
                let id = c.non_neg(&format_args!("{field} dimension id {k}"))?;
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
                room(&mut dimids, at)?;
                // Fewer than 2^32 dimensions fit in a header of at most 1 GiB.
                dimids.push(idx as u32);
            }
            let var_attrs = c.attrs(&field, &mut attrs)?;
            let t_at = c.pos as u64;
            let code = c.u32(&format_args!("{field} type"))?;
            let nc_type = c.nc_type(code, t_at, &field)?;
            let vsize = if variant == Variant::Cdf5 {
                c.u64(&format_args!("{field} vsize"))?
            } else {
                u64::from(c.u32(&format_args!("{field} vsize"))?)
            };
            let b_at = c.pos as u64;
            let begin = if variant == Variant::Cdf1 {
                u64::from(c.u32(&format_args!("{field} begin"))?)
            } else {
                c.u64(&format_args!("{field} begin"))?
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
            vars.push(VarRec {
                name,
                dimids: span(first, nd),
                attrs: var_attrs,
                nc_type,
                vsize,
                begin,
            });
        }
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

    /// A name or other text of the header: valid UTF-8, checked when parsed.
    fn text(&self, s: Span) -> &str {
        std::str::from_utf8(&self.bytes[s.range()]).unwrap_or_default()
    }

    fn attr_views(&self, s: Span) -> impl ExactSizeIterator<Item = Attr<'_>> + DoubleEndedIterator {
        self.attrs[s.range()]
            .iter()
            .map(move |rec| Attr { h: self, rec })
    }

    /// Format variant.
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert_eq!(h.variant(), nc3pack::nc3::Variant::Cdf1);
    /// ```
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// Stored number of records.
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert_eq!(h.numrecs(), nc3pack::nc3::NumRecs::Count(7));
    /// ```
    pub fn numrecs(&self) -> NumRecs {
        self.numrecs
    }

    /// Length of the header in bytes (where parsing ended).
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert!(h.len() > 0 && h.len() <= b.len() as u64);
    /// ```
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// The header's bytes, verbatim (the first [`Header::len`] bytes of the file).
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert_eq!(h.bytes(), &b[..h.len() as usize]);
    /// ```
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Number of dimensions.
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert_eq!(h.dim_count(), 4);
    /// ```
    pub fn dim_count(&self) -> usize {
        self.dims.len()
    }

    /// Dimension `id` (panics if there is no such dimension: ids come from the header).
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert_eq!(h.dim(3).name(), "two");
    /// ```
    pub fn dim(&self, id: usize) -> Dim<'_> {
        assert!(id < self.dims.len(), "no dimension {id}");
        Dim { h: self, id }
    }

    /// Name of dimension `id` (panics if there is no such dimension).
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert_eq!(h.dim_name(2), "five");
    /// ```
    pub fn dim_name(&self, id: usize) -> &str {
        self.dim(id).name()
    }

    /// The dimensions, in header order.
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert_eq!(h.dims().map(|d| d.len()).collect::<Vec<_>>(), [0, 3, 5, 2]);
    /// ```
    pub fn dims(&self) -> impl ExactSizeIterator<Item = Dim<'_>> + DoubleEndedIterator {
        (0..self.dims.len()).map(move |id| Dim { h: self, id })
    }

    /// Number of variables.
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert_eq!(h.var_count(), 17);
    /// ```
    pub fn var_count(&self) -> usize {
        self.vars.len()
    }

    /// Variable `id` (panics if there is no such variable: ids come from the header).
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert_eq!(h.var(1).name(), "c5");
    /// ```
    pub fn var(&self, id: usize) -> Var<'_> {
        assert!(id < self.vars.len(), "no variable {id}");
        Var { h: self, id }
    }

    /// The variables, in header order.
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert_eq!(h.vars().filter(|v| v.is_record()).count(), 9);
    /// ```
    pub fn vars(&self) -> impl ExactSizeIterator<Item = Var<'_>> + DoubleEndedIterator {
        (0..self.vars.len()).map(move |id| Var { h: self, id })
    }

    /// The id of the variable named `name` (a linear search).
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert_eq!(h.var_id("c5"), Some(1));
    /// assert_eq!(h.var_id("nope"), None);
    /// ```
    pub fn var_id(&self, name: &str) -> Option<usize> {
        self.vars
            .iter()
            .position(|v| self.bytes[v.name.range()] == *name.as_bytes())
    }

    /// The global attributes, in header order.
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert!(h.global_attrs().any(|a| a.name() == "title"));
    /// ```
    pub fn global_attrs(&self) -> impl ExactSizeIterator<Item = Attr<'_>> + DoubleEndedIterator {
        self.attr_views(span(0, self.ngatts as usize))
    }

    /// Index of the record dimension, if there is one.
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert_eq!(h.record_dim(), Some(0));
    /// ```
    pub fn record_dim(&self) -> Option<usize> {
        self.dims.iter().position(|d| d.len == 0)
    }

    /// Whether variable `v` is a record variable (its first dimension is the record dimension).
    ///
    /// ```
    /// use nc3pack::nc3::Header;
    /// let b = std::fs::read("samples/classic_records.nc").unwrap();
    /// let h = Header::parse(&b, b.len() as u64).unwrap();
    /// assert!(h.is_record_var(0));
    /// assert!(!h.is_record_var(h.var_id("scalar_i").unwrap()));
    /// ```
    pub fn is_record_var(&self, v: usize) -> bool {
        self.var(v).is_record()
    }
}

/// A variable for [`Header::from_parts`]: name, dimension ids, type, `begin`.
#[cfg(test)]
pub(crate) type TestVar<'a> = (&'a str, Vec<usize>, NcType, u64);

#[cfg(test)]
impl Header {
    /// A header made of parts, unchecked, for tests of what uses headers: dimensions (name,
    /// length) and variables without attributes; its bytes are the names, then zeros up to
    /// `len`.
    pub(crate) fn from_parts(
        variant: Variant,
        numrecs: NumRecs,
        len: usize,
        dims: &[(&str, u64)],
        vars: &[TestVar<'_>],
    ) -> Header {
        let mut bytes = Vec::new();
        let mut name = |s: &str| {
            bytes.extend_from_slice(s.as_bytes());
            span(bytes.len() - s.len(), s.len())
        };
        let dims: Vec<DimRec> = dims
            .iter()
            .map(|&(s, len)| DimRec { name: name(s), len })
            .collect();
        let mut dimids = Vec::new();
        let vars: Vec<VarRec> = vars
            .iter()
            .map(|(s, ids, nc_type, begin)| {
                let first = dimids.len();
                dimids.extend(ids.iter().map(|&d| d as u32));
                VarRec {
                    name: name(s),
                    dimids: span(first, ids.len()),
                    attrs: Span::default(),
                    nc_type: *nc_type,
                    vsize: 0,
                    begin: *begin,
                }
            })
            .collect();
        assert!(bytes.len() <= len);
        bytes.resize(len, 0);
        Header {
            variant,
            numrecs,
            bytes,
            dims,
            vars,
            attrs: vec![],
            ngatts: 0,
            dimids,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        match Header::parse_prefix(&b, len) {
            Err(ParseError::NeedMore(n)) => assert!(n <= MAX_HEADER_LEN, "{n}"),
            other => panic!("{other:?}"),
        }
        // Values that themselves end one byte past the limit: refused at once, before any of
        // them are read, from a file or a stream (unknown length).
        let (b, len) = big_attribute_prefix(at_limit + 9);
        assert_eq!(len, MAX_HEADER_LEN + 12);
        for file_len in [len, u64::MAX] {
            match Header::parse_prefix(&b, file_len) {
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
