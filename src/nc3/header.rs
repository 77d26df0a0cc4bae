//! The netCDF-3 header's data model: [`Header`] (compact: it owns its bytes, and names and
//! values are ranges of them), the views [`Dim`], [`Var`] and [`Attr`], and the types and tags
//! of the format. Parsing is in `parse.rs`, writing a new header in `write.rs`.

/// Largest netCDF-3 header parsed (1 GiB): a longer one is refused, naming this limit, since a
/// header is held whole in memory (see design/FORMAT.md, "Limits").
///
/// ```
/// assert_eq!(nc3pack::nc3::MAX_HEADER_LEN, 1 << 30);
/// ```
pub const MAX_HEADER_LEN: u64 = 1 << 30;

/// The environment variable that sets the header limit ([`header_limit`]): a byte count, with
/// an optional `K`, `M` or `G` suffix (powers of 1024), at most [`MAX_HEADER_LEN`].
///
/// ```
/// assert_eq!(nc3pack::nc3::HEADER_LIMIT_ENV, "NC3PACK_MAX_HEADER_BYTES");
/// ```
pub const HEADER_LIMIT_ENV: &str = "NC3PACK_MAX_HEADER_BYTES";

/// The header limit when [`HEADER_LIMIT_ENV`] is not set: 64 MiB, far more than a real header
/// needs (thousands of variables with their attributes take a few MiB), and a bound on what a
/// small archive whose header frame decompresses to a forged header of millions of items (a
/// "header bomb") costs a reader in memory.
///
/// ```
/// assert_eq!(nc3pack::nc3::DEFAULT_HEADER_LIMIT, 64 << 20);
/// ```
pub const DEFAULT_HEADER_LIMIT: u64 = 64 << 20;

/// The longest netCDF-3 header nc3pack reads, in bytes, from a file being packed or from an
/// archive: [`HEADER_LIMIT_ENV`] when it is set, else [`DEFAULT_HEADER_LIMIT`]. Read at every
/// parse, so a program (the CLI, the Python package, a netCDF-C program through the plugin) can
/// change it before opening a file. Every item of a header costs at least 12 bytes of it and at
/// most 48 bytes in memory, so a parsed header takes at most a few times this limit.
///
/// ```
/// // (NC3PACK_MAX_HEADER_BYTES is not set in the doc tests.)
/// assert_eq!(nc3pack::nc3::header_limit(), Ok(nc3pack::nc3::DEFAULT_HEADER_LIMIT));
/// ```
///
/// # Errors
///
/// [`HeaderProblem::LimitSetting`](super::error::HeaderProblem::LimitSetting) when the variable
/// is set to something other than a byte count of at most [`MAX_HEADER_LEN`].
pub fn header_limit() -> Result<u64, super::error::HeaderProblem> {
    match std::env::var_os(HEADER_LIMIT_ENV) {
        None => Ok(DEFAULT_HEADER_LIMIT),
        Some(v) => {
            let s = v.to_string_lossy();
            parse_header_limit(&s).ok_or_else(|| super::error::HeaderProblem::LimitSetting {
                value: s.into_owned(),
            })
        }
    }
}

/// A header limit as written in [`HEADER_LIMIT_ENV`]: `1048576`, `64M`, `1G`, ... (K, M and G
/// are powers of 1024, upper or lower case, optionally followed by `iB` or `B`); `None` when it
/// is not one or is more than [`MAX_HEADER_LEN`].
///
/// ```
/// use nc3pack::nc3::parse_header_limit;
/// assert_eq!(parse_header_limit("256M"), Some(256 << 20));
/// assert_eq!(parse_header_limit("1GiB"), Some(1 << 30));
/// assert_eq!(parse_header_limit("4096"), Some(4096));
/// assert_eq!(parse_header_limit("2G"), None); // more than the 1 GiB a header may be
/// assert_eq!(parse_header_limit("lots"), None);
/// ```
pub fn parse_header_limit(s: &str) -> Option<u64> {
    let s = s.trim();
    let lower = s.to_ascii_lowercase();
    let body = lower
        .strip_suffix("ib")
        .or_else(|| lower.strip_suffix('b'))
        .unwrap_or(&lower);
    let (digits, shift) = match body.as_bytes().last()? {
        b'k' => (&body[..body.len() - 1], 10),
        b'm' => (&body[..body.len() - 1], 20),
        b'g' => (&body[..body.len() - 1], 30),
        _ => (body, 0),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    n.checked_mul(1 << shift).filter(|&n| n <= MAX_HEADER_LEN)
}

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
pub(super) struct Extent {
    pub(super) at: u32,
    pub(super) len: u32,
}

impl Extent {
    fn range(self) -> std::ops::Range<usize> {
        self.at as usize..self.at as usize + self.len as usize
    }
}

/// A dimension's record: its name in the header bytes, and its length.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct DimRec {
    pub(super) name: Extent,
    pub(super) len: u64,
}

/// An attribute's record: its name and its big-endian values in the header bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct AttrRec {
    pub(super) name: Extent,
    pub(super) values: Extent,
    pub(super) nc_type: NcType,
}

/// A variable's record: name in the header bytes, dimension ids and attributes as ranges of the
/// header's shared lists.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct VarRec {
    pub(super) name: Extent,
    pub(super) dimids: Extent,
    pub(super) attrs: Extent,
    pub(super) nc_type: NcType,
    pub(super) vsize: u64,
    pub(super) begin: u64,
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
    pub(super) variant: Variant,
    pub(super) numrecs: NumRecs,
    /// The header's bytes, exactly: names and attribute values are ranges of them.
    pub(super) bytes: Vec<u8>,
    pub(super) dims: Vec<DimRec>,
    pub(super) vars: Vec<VarRec>,
    /// All attributes: the global ones first, then each variable's, in header order.
    pub(super) attrs: Vec<AttrRec>,
    /// How many of `attrs` are global.
    pub(super) ngatts: u32,
    /// All variables' dimension ids, one variable after the other.
    pub(super) dimids: Vec<u32>,
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

/// An [`Extent`] of `len` items at `at`; both are below 2^32 (offsets and counts within a header
/// of at most [`MAX_HEADER_LEN`] bytes, each item at least a byte).
pub(super) fn span(at: usize, len: usize) -> Extent {
    Extent {
        at: at as u32,
        len: len as u32,
    }
}

impl Header {
    /// A name or other text of the header: valid UTF-8, checked when parsed.
    fn text(&self, s: Extent) -> &str {
        std::str::from_utf8(&self.bytes[s.range()]).unwrap_or_default()
    }

    fn attr_views(
        &self,
        s: Extent,
    ) -> impl ExactSizeIterator<Item = Attr<'_>> + DoubleEndedIterator {
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
                    attrs: Extent::default(),
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
