//! Memory-type conversion as netCDF-C's classic library does it (its `ncx` layer), value for
//! value and error code for error code. A value outside the memory type's range makes the read
//! answer `NC_ERANGE`; what it stores depends on how netCDF-C was built ([`Erange`]):
//!
//! - built without `ERANGE_FILL` ([`Erange::Plain`]; netCDF-C 4.9 as Debian builds it):
//!   - integer to integer: the C cast (two's complement wrap) is stored;
//!   - floating point to integer: *nothing* is stored (the caller's memory keeps what it had);
//!   - `double` to `float`: `±FLT_MAX` is stored;
//! - built with `ERANGE_FILL` ([`Erange::Fill`]; what netCDF-C 4.10's CMake build does unless
//!   told otherwise, as in netCDF4-python's wheels): the memory type's default fill value
//!   (`NC_FILL_BYTE`, ...) is stored, for every conversion.
//!
//! In range, both store the same: NaN is not out of range and stores what x86-64's truncating
//! conversion gives; `long long` and `unsigned long long` take their extreme values exactly;
//! anything to `float`/`double` is the C cast (round to nearest), never an error.
//!
//! `char` never converts to or from a number (`NC_ECHAR`): the caller checks that first.

use crate::nc::{NC_ERANGE, NC_NOERR};
use nc3pack::nc3::NcType;
use std::mem::MaybeUninit;
use std::os::raw::c_int;

/// The type of the caller's memory (an atomic `nc_type` of netCDF-3, `NC_BYTE` to `NC_UINT64`).
///
/// ```
/// use nc3pack_netcdf::convert::Mem;
/// assert_eq!(Mem::from_code(6), Some(Mem::Double));
/// assert_eq!(Mem::Double.size(), 8);
/// assert_eq!(Mem::from_code(12), None); // NC_STRING is not a memory type of a classic file
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mem {
    /// `NC_BYTE`: `signed char`.
    Byte,
    /// `NC_CHAR`: `char`.
    Char,
    /// `NC_SHORT`: `short`.
    Short,
    /// `NC_INT`: `int`.
    Int,
    /// `NC_FLOAT`: `float`.
    Float,
    /// `NC_DOUBLE`: `double`.
    Double,
    /// `NC_UBYTE`: `unsigned char`.
    UByte,
    /// `NC_USHORT`: `unsigned short`.
    UShort,
    /// `NC_UINT`: `unsigned int`.
    UInt,
    /// `NC_INT64`: `long long`.
    Int64,
    /// `NC_UINT64`: `unsigned long long`.
    UInt64,
}

impl Mem {
    /// The memory type of an `nc_type` code (1 to 11), `None` for any other.
    ///
    /// ```
    /// use nc3pack_netcdf::convert::Mem;
    /// assert_eq!(Mem::from_code(1), Some(Mem::Byte));
    /// assert_eq!(Mem::from_code(0), None);
    /// ```
    pub fn from_code(code: c_int) -> Option<Mem> {
        Some(match code {
            1 => Mem::Byte,
            2 => Mem::Char,
            3 => Mem::Short,
            4 => Mem::Int,
            5 => Mem::Float,
            6 => Mem::Double,
            7 => Mem::UByte,
            8 => Mem::UShort,
            9 => Mem::UInt,
            10 => Mem::Int64,
            11 => Mem::UInt64,
            _ => return None,
        })
    }

    /// The `nc_type` code.
    ///
    /// ```
    /// use nc3pack_netcdf::convert::Mem;
    /// assert_eq!(Mem::UInt64.code(), 11);
    /// ```
    pub fn code(self) -> c_int {
        self as c_int + 1
    }

    /// The memory type that holds a file type unconverted.
    ///
    /// ```
    /// use nc3pack_netcdf::convert::Mem;
    /// assert_eq!(Mem::of(nc3pack::nc3::NcType::UShort), Mem::UShort);
    /// ```
    pub fn of(t: NcType) -> Mem {
        match t {
            NcType::Byte => Mem::Byte,
            NcType::Char => Mem::Char,
            NcType::Short => Mem::Short,
            NcType::Int => Mem::Int,
            NcType::Float => Mem::Float,
            NcType::Double => Mem::Double,
            NcType::UByte => Mem::UByte,
            NcType::UShort => Mem::UShort,
            NcType::UInt => Mem::UInt,
            NcType::Int64 => Mem::Int64,
            NcType::UInt64 => Mem::UInt64,
        }
    }

    /// The memory type a read of a value of file type `t` asks for with `code` (`NC_NAT`: `t`
    /// itself), or the netCDF-C error code, in netCDF-C's order (`NC3_get_att`): `NC_ECHAR`
    /// for text read as anything else or anything else read as text, then `NC_EBADTYPE` for a
    /// code that is not a classic memory type (`NC_STRING`).
    ///
    /// ```
    /// use nc3pack::nc3::NcType;
    /// use nc3pack_netcdf::convert::Mem;
    /// assert_eq!(Mem::for_read(0, NcType::Short), Ok(Mem::Short));
    /// assert_eq!(Mem::for_read(6, NcType::Short), Ok(Mem::Double));
    /// assert_eq!(Mem::for_read(2, NcType::Short), Err(-56)); // NC_ECHAR
    /// assert_eq!(Mem::for_read(12, NcType::Short), Err(-45)); // NC_STRING: NC_EBADTYPE
    /// assert_eq!(Mem::for_read(12, NcType::Char), Err(-56)); // text as NC_STRING: NC_ECHAR
    /// ```
    ///
    /// # Errors
    ///
    /// `NC_ECHAR` or `NC_EBADTYPE`, as above.
    pub fn for_read(code: c_int, t: NcType) -> Result<Mem, c_int> {
        let code = if code == crate::nc::NC_NAT {
            Mem::of(t).code()
        } else {
            code
        };
        if (code == crate::nc::NC_CHAR) != (t == NcType::Char) {
            return Err(crate::nc::NC_ECHAR);
        }
        Mem::from_code(code).ok_or(crate::nc::NC_EBADTYPE)
    }

    /// Size of one value in bytes.
    ///
    /// ```
    /// assert_eq!(nc3pack_netcdf::convert::Mem::UShort.size(), 2);
    /// ```
    pub fn size(self) -> usize {
        match self {
            Mem::Byte | Mem::Char | Mem::UByte => 1,
            Mem::Short | Mem::UShort => 2,
            Mem::Int | Mem::Float | Mem::UInt => 4,
            Mem::Double | Mem::Int64 | Mem::UInt64 => 8,
        }
    }
}

/// What a conversion stores for a value out of the memory type's range (it answers `NC_ERANGE`
/// either way): netCDF-C's `ERANGE_FILL` build option, found out for each netCDF-C library when
/// the plugin registers with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Erange {
    /// Without `ERANGE_FILL`: the C cast for an integer, nothing for a floating-point value read
    /// as an integer, `±FLT_MAX` for a `double` read as `float`.
    #[default]
    Plain,
    /// With `ERANGE_FILL`: the memory type's default fill value.
    Fill,
}

/// The default fill value of memory type `m` (netcdf.h's `NC_FILL_*`), stored in `out`.
fn fill_to(m: Mem, out: &mut [MaybeUninit<u8>]) {
    match m {
        Mem::Byte => put(out, &(-127i8).to_ne_bytes()),
        Mem::Char => put(out, &[0]),
        Mem::Short => put(out, &(-32767i16).to_ne_bytes()),
        Mem::Int => put(out, &(-2147483647i32).to_ne_bytes()),
        Mem::Float => put(out, &9.969_21e36_f32.to_ne_bytes()),
        Mem::Double => put(out, &9.969_209_968_386_869e36_f64.to_ne_bytes()),
        Mem::UByte => put(out, &[255]),
        Mem::UShort => put(out, &65535u16.to_ne_bytes()),
        Mem::UInt => put(out, &4294967295u32.to_ne_bytes()),
        Mem::Int64 => put(out, &(-9223372036854775806i64).to_ne_bytes()),
        Mem::UInt64 => put(out, &18446744073709551614u64.to_ne_bytes()),
    }
}

/// Writes `b` to the start of `out` (as many bytes as both have).
fn put(out: &mut [MaybeUninit<u8>], b: &[u8]) {
    for (o, &x) in out.iter_mut().zip(b) {
        o.write(x);
    }
}

/// One file value, decoded.
#[derive(Clone, Copy)]
enum Val {
    Int(i128),
    F32(f32),
    F64(f64),
}

fn decode(x: NcType, b: &[u8]) -> Val {
    let a = |n: usize| -> [u8; 8] {
        let mut w = [0u8; 8];
        w[8 - n..].copy_from_slice(&b[..n]);
        w
    };
    match x {
        NcType::Byte => Val::Int(b[0] as i8 as i128),
        NcType::Char | NcType::UByte => Val::Int(b[0] as i128),
        NcType::Short => Val::Int(i16::from_be_bytes([b[0], b[1]]) as i128),
        NcType::UShort => Val::Int(u16::from_be_bytes([b[0], b[1]]) as i128),
        NcType::Int => Val::Int(i32::from_be_bytes([b[0], b[1], b[2], b[3]]) as i128),
        NcType::UInt => Val::Int(u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as i128),
        NcType::Int64 => Val::Int(i64::from_be_bytes(a(8)) as i128),
        NcType::UInt64 => Val::Int(u64::from_be_bytes(a(8)) as i128),
        NcType::Float => Val::F32(f32::from_be_bytes([b[0], b[1], b[2], b[3]])),
        NcType::Double => Val::F64(f64::from_be_bytes(a(8))),
    }
}

/// Stores an integer as memory type `m`: the C cast; whether it was in range.
fn int_to(m: Mem, v: i128, out: &mut [MaybeUninit<u8>]) -> bool {
    macro_rules! int {
        ($t:ty) => {{
            put(out, &(v as $t).to_ne_bytes());
            v >= <$t>::MIN as i128 && v <= <$t>::MAX as i128
        }};
    }
    match m {
        Mem::Byte => int!(i8),
        Mem::Char | Mem::UByte => int!(u8),
        Mem::Short => int!(i16),
        Mem::UShort => int!(u16),
        Mem::Int => int!(i32),
        Mem::UInt => int!(u32),
        Mem::Int64 => int!(i64),
        Mem::UInt64 => int!(u64),
        Mem::Float => {
            put(out, &(v as f32).to_ne_bytes());
            true
        }
        Mem::Double => {
            put(out, &(v as f64).to_ne_bytes());
            true
        }
    }
}

/// Stores a floating-point value as memory type `m`; whether it was in range. `f32` is the
/// value when the file's type is `float` (so that a `float` read stores its bits unchanged).
// The comparisons are netCDF-C's, written out: NaN compares false and is not out of range.
#[allow(clippy::manual_range_contains)]
fn float_to(m: Mem, xx: f64, f32v: Option<f32>, out: &mut [MaybeUninit<u8>]) -> bool {
    // An integer type other than the 64-bit ones: out of range stores nothing; NaN stores
    // what x86-64's cvtt* conversion leaves in the type's bits.
    macro_rules! small {
        ($t:ty, $nan:expr) => {{
            if xx > <$t>::MAX as f64 || xx < <$t>::MIN as f64 {
                return false;
            }
            let v: $t = if xx.is_nan() { $nan } else { xx as $t };
            put(out, &v.to_ne_bytes());
            true
        }};
    }
    const TWO63: f64 = 9_223_372_036_854_775_808.0;
    const TWO64: f64 = 18_446_744_073_709_551_616.0;
    match m {
        Mem::Byte => small!(i8, 0),
        Mem::Char | Mem::UByte => small!(u8, 0),
        Mem::Short => small!(i16, 0),
        Mem::UShort => small!(u16, 0),
        Mem::Int => small!(i32, i32::MIN),
        Mem::UInt => small!(u32, 0),
        Mem::Int64 => {
            let v = if xx == TWO63 {
                i64::MAX
            } else if xx == -TWO63 {
                i64::MIN
            } else if xx > TWO63 || xx < -TWO63 {
                return false;
            } else if xx.is_nan() {
                i64::MIN
            } else {
                xx as i64
            };
            put(out, &v.to_ne_bytes());
            true
        }
        Mem::UInt64 => {
            let v = if xx == TWO64 {
                u64::MAX
            } else if xx > TWO64 || xx < 0.0 {
                return false;
            } else if xx.is_nan() {
                1 << 63
            } else {
                xx as u64
            };
            put(out, &v.to_ne_bytes());
            true
        }
        Mem::Float => {
            let (v, ok) = match f32v {
                Some(f) => (f, true),
                None if xx > f32::MAX as f64 => (f32::MAX, false),
                None if xx < -(f32::MAX as f64) => (-f32::MAX, false),
                None => (xx as f32, true),
            };
            put(out, &v.to_ne_bytes());
            ok
        }
        Mem::Double => {
            put(out, &xx.to_ne_bytes());
            true
        }
    }
}

/// Converts the big-endian values of file type `x` in `src` to memory type `m` in `dst`
/// (native order, `dst.len() / m.size()` values), as netCDF-C's classic library does; returns
/// `NC_NOERR`, or `NC_ERANGE` when a value did not fit (every other value is still converted;
/// `erange` says what one that did not fit stores). `byte_as_ubyte`: a `byte` read as
/// `unsigned char` is copied unchecked (netCDF-C does so for variables of CDF-1 and CDF-2
/// files).
///
/// ```
/// use nc3pack_netcdf::convert::{convert, Erange, Mem};
/// use nc3pack::nc3::NcType;
/// let src = [0x01, 0x2c, 0xff, 0xff]; // short 300, -1
/// let mut dst = [0u8; 2];
/// assert_eq!(convert(NcType::Short, &src, Mem::UByte, &mut dst, false, Erange::Plain), -60);
/// assert_eq!(dst, [44, 255]); // the C casts, with NC_ERANGE
/// assert_eq!(convert(NcType::Short, &src, Mem::UByte, &mut dst, false, Erange::Fill), -60);
/// assert_eq!(dst, [255, 255]); // NC_FILL_UBYTE
/// ```
pub fn convert(
    x: NcType,
    src: &[u8],
    m: Mem,
    dst: &mut [u8],
    byte_as_ubyte: bool,
    erange: Erange,
) -> c_int {
    // SAFETY: `[MaybeUninit<u8>]` has the layout of `[u8]` (same length, size and alignment),
    // and every byte `dst` holds is initialised, as `MaybeUninit<u8>` allows. Seen as
    // `MaybeUninit`, the slice could be given uninitialised bytes, which `&mut [u8]` forbids;
    // `convert_uninit` only writes initialised bytes into it (`put`), so `dst` stays a valid
    // `[u8]`. The reborrow ends with the call, while `dst` is borrowed.
    let dst = unsafe { &mut *(std::ptr::from_mut::<[u8]>(dst) as *mut [MaybeUninit<u8>]) };
    convert_uninit(x, src, m, dst, byte_as_ubyte, erange)
}

/// [`convert`] into memory that may be uninitialised (a C caller's buffer, of which it writes
/// every value that converts, and leaves the others as they were: a floating-point value out of
/// an integer type's range, without `ERANGE_FILL`).
///
/// ```
/// use nc3pack_netcdf::convert::{convert_uninit, Erange, Mem};
/// use nc3pack::nc3::NcType;
/// use std::mem::MaybeUninit;
/// let mut dst = [MaybeUninit::<u8>::uninit(); 4];
/// let src = 7i32.to_be_bytes();
/// assert_eq!(convert_uninit(NcType::Int, &src, Mem::Float, &mut dst, false, Erange::Plain), 0);
/// // SAFETY: the conversion wrote all four bytes (an `int` always converts to `float`).
/// let bytes: Vec<u8> = dst.iter().map(|b| unsafe { b.assume_init() }).collect();
/// assert_eq!(bytes, 7f32.to_ne_bytes());
/// ```
pub fn convert_uninit(
    x: NcType,
    src: &[u8],
    m: Mem,
    dst: &mut [MaybeUninit<u8>],
    byte_as_ubyte: bool,
    erange: Erange,
) -> c_int {
    let (xs, ms) = (x.size(), m.size());
    let mut status = NC_NOERR;
    if byte_as_ubyte && x == NcType::Byte && m == Mem::UByte {
        let n = dst.len().min(src.len());
        put(&mut dst[..n], &src[..n]);
        return status;
    }
    for (s, d) in src.chunks_exact(xs).zip(dst.chunks_exact_mut(ms)) {
        let ok = match decode(x, s) {
            Val::Int(v) => int_to(m, v, d),
            Val::F32(f) => float_to(m, f as f64, Some(f), d),
            Val::F64(f) => float_to(m, f, None, d),
        };
        if !ok {
            status = NC_ERANGE;
            if erange == Erange::Fill {
                fill_to(m, d);
            }
        }
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(x: NcType, be: &[u8], m: Mem, init: u8) -> (Vec<u8>, c_int) {
        let mut d = vec![init; m.size()];
        let r = convert(x, be, m, &mut d, false, Erange::Plain);
        (d, r)
    }

    fn filled(x: NcType, be: &[u8], m: Mem) -> (Vec<u8>, c_int) {
        let mut d = vec![0xa5; m.size()];
        let r = convert(x, be, m, &mut d, false, Erange::Fill);
        (d, r)
    }

    #[test]
    fn float_out_of_range_keeps_memory() {
        let (d, r) = one(NcType::Float, &1e10f32.to_be_bytes(), Mem::UByte, 44);
        assert_eq!((d, r), (vec![44], NC_ERANGE));
        let (d, r) = one(NcType::Float, &f32::NAN.to_be_bytes(), Mem::Int, 1);
        assert_eq!((d, r), (i32::MIN.to_ne_bytes().to_vec(), NC_NOERR));
        let (d, r) = one(NcType::Double, &1e300f64.to_be_bytes(), Mem::Float, 0);
        assert_eq!((d, r), (f32::MAX.to_ne_bytes().to_vec(), NC_ERANGE));
    }

    #[test]
    fn integers_wrap_and_report() {
        let (d, r) = one(NcType::Int, &70000i32.to_be_bytes(), Mem::Short, 0);
        assert_eq!((d, r), (4464i16.to_ne_bytes().to_vec(), NC_ERANGE));
        let (d, r) = one(NcType::Byte, &[0xff], Mem::UInt, 0);
        assert_eq!((d, r), (u32::MAX.to_ne_bytes().to_vec(), NC_ERANGE));
    }

    /// netCDF-C 4.10.1 built with ERANGE_FILL (netCDF4-python's wheel), read through ctypes
    /// from a classic file: an int 1000 as `signed char` is -127, a float 1e10 as `short`
    /// -32767, a double 1e300 as `float` 9.96921e36 and as `long long` -9223372036854775806, a
    /// short -1 as `unsigned int` 4294967295; all with NC_ERANGE, in range values unchanged.
    #[test]
    fn erange_fill_stores_the_memory_types_fill_value() {
        assert_eq!(
            filled(NcType::Int, &1000i32.to_be_bytes(), Mem::Byte),
            ((-127i8).to_ne_bytes().to_vec(), NC_ERANGE)
        );
        assert_eq!(
            filled(NcType::Float, &1e10f32.to_be_bytes(), Mem::Short),
            ((-32767i16).to_ne_bytes().to_vec(), NC_ERANGE)
        );
        assert_eq!(
            filled(NcType::Double, &1e300f64.to_be_bytes(), Mem::Float),
            (9.969_21e36_f32.to_ne_bytes().to_vec(), NC_ERANGE)
        );
        assert_eq!(
            filled(NcType::Double, &1e300f64.to_be_bytes(), Mem::Int64),
            ((-9223372036854775806i64).to_ne_bytes().to_vec(), NC_ERANGE)
        );
        assert_eq!(
            filled(NcType::Short, &(-1i16).to_be_bytes(), Mem::UInt),
            (u32::MAX.to_ne_bytes().to_vec(), NC_ERANGE)
        );
        assert_eq!(
            filled(NcType::Int, &5i32.to_be_bytes(), Mem::Byte),
            (vec![5], NC_NOERR)
        );
    }
}
