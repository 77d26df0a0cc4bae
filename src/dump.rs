//! Printing values read by `nc3pack slice`: ncdump-like text, JSON, or raw native bytes.
//!
//! [`write_slice`] streams a hyperslab of any size: it reads the selection a piece of at most
//! [`PIECE_BYTES`] at a time ([`Hyperslab::pieces`], through the [`Dataset`] API and so an
//! archive's block cache) and formats and writes each piece as it comes, so its memory stays
//! bounded whatever the selection. [`data_text`], [`to_json`] and [`to_native_bytes`] format
//! values already in memory the same way.

use crate::nc3::slab::Hyperslab;
use crate::nc3::{NcType, Values};
use crate::read::Dataset;
use serde_json::{json, Value};
use std::io::{self, Write};

/// Output formats of [`write_slice`].
///
/// ```
/// use nc3pack::{dump::{write_slice, Format}, Dataset, Hyperslab};
/// let ds = nc3pack::open("samples/scalars.nc")?;
/// let mut out = Vec::new();
/// write_slice(&*ds, "ss", &Hyperslab::all(&[]), Format::Json, &mut out)?;
/// assert_eq!(String::from_utf8(out)?, "{\"data\":[1234],\"shape\":[]}\n");
/// let mut raw = Vec::new();
/// write_slice(&*ds, "ss", &Hyperslab::all(&[]), Format::Raw, &mut raw)?;
/// assert_eq!(raw, 1234i16.to_ne_bytes());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// Like the data section of `ncdump -v`, as [`data_text`] prints it.
    Text,
    /// `{"data":[...],"shape":[...]}` on one line, as [`to_json`] gives it, then a newline.
    Json,
    /// The values in native byte order, C order, as [`to_native_bytes`] gives them.
    Raw,
}

/// Bytes of values [`write_slice`] reads at a time (4 MiB).
///
/// ```
/// assert_eq!(nc3pack::dump::PIECE_BYTES, 4 << 20);
/// ```
pub const PIECE_BYTES: usize = 4 << 20;

/// Formatted bytes collected before they are written out.
const OUT_CHUNK: usize = 1 << 18;

/// Why [`write_slice`] failed.
///
/// ```
/// use nc3pack::dump::SliceError;
/// let e = SliceError::Write(std::io::ErrorKind::BrokenPipe.into());
/// assert!(matches!(&e, SliceError::Write(w) if w.kind() == std::io::ErrorKind::BrokenPipe));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SliceError {
    /// Reading failed: no such variable, a selection that does not fit it, a damaged block, an
    /// I/O error on the file.
    #[error(transparent)]
    Read(#[from] crate::Error),
    /// Writing the output failed (a reader that went away gives
    /// [`std::io::ErrorKind::BrokenPipe`]).
    #[error("writing the output: {0}")]
    Write(#[source] io::Error),
}

/// Writes the hyperslab `slab` of variable `var` of `ds` to `out` in `format`, reading and
/// formatting it a piece of at most [`PIECE_BYTES`] at a time: memory stays bounded (a few
/// MiB beyond an archive's block cache) however large the selection. The output is what
/// [`data_text`], [`to_json`] (then a newline) or [`to_native_bytes`] give for the whole selection
/// read at once. `out` is written in chunks of a few hundred KiB (no need for a `BufWriter`) and
/// flushed at the end.
///
/// ```
/// use nc3pack::dump::{write_slice, Format};
/// use nc3pack::Dataset;
/// let ds = nc3pack::open(concat!(env!("CARGO_MANIFEST_DIR"), "/samples/classic_records.nc"))?;
/// let slab = ds.slab("s3", Some(&[0, 1]), Some(&[2, 2]), None)?;
/// let mut out = Vec::new();
/// write_slice(&ds, "s3", &slab, Format::Json, &mut out)?;
/// assert!(out.starts_with(b"{\"data\":[") && out.ends_with(b"],\"shape\":[2,2]}\n"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`SliceError::Read`] if `var` is not a variable of `ds`, `slab` does not fit it, or reading
/// fails (output may then have been written up to the failing piece);
/// [`SliceError::Write`] if writing to `out` fails.
pub fn write_slice<D: Dataset + ?Sized, W: Write>(
    ds: &D,
    var: &str,
    slab: &Hyperslab,
    format: Format,
    out: W,
) -> Result<(), SliceError> {
    write_slice_in_pieces(ds, var, slab, format, PIECE_BYTES, out)
}

/// [`write_slice`] with pieces of at most `piece_bytes` bytes of values (at least one value):
/// the output is the same for any piece size; small ones exercise the piece boundaries in
/// tests.
///
/// ```
/// use nc3pack::dump::{write_slice_in_pieces, Format};
/// use nc3pack::Dataset;
/// let ds = nc3pack::open(concat!(env!("CARGO_MANIFEST_DIR"), "/samples/classic_records.nc"))?;
/// let slab = ds.slab("s3", None, None, None)?;
/// let (mut whole, mut bits) = (Vec::new(), Vec::new());
/// write_slice_in_pieces(&ds, "s3", &slab, Format::Text, 1 << 20, &mut whole)?;
/// write_slice_in_pieces(&ds, "s3", &slab, Format::Text, 1, &mut bits)?;
/// assert_eq!(whole, bits);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// As [`write_slice`].
pub fn write_slice_in_pieces<D: Dataset + ?Sized, W: Write>(
    ds: &D,
    var: &str,
    slab: &Hyperslab,
    format: Format,
    piece_bytes: usize,
    out: W,
) -> Result<(), SliceError> {
    let v = ds.var_id(var)?;
    let t = ds.header().var(v).nc_type();
    // Check the selection once, also when it selects nothing and no piece is read.
    Hyperslab::new(
        &ds.layout().vars[v].shape,
        slab.start(),
        slab.count(),
        slab.stride(),
    )
    .map_err(|e| ds.slab_error(var, e))?;
    let esize = t.size();
    let per = (piece_bytes / esize).max(1) as u64;
    if slab.len() > per {
        // Read in pieces: a remote archive fetches the whole selection ahead of them.
        ds.plan_slab(v, slab)?;
    }
    let mut w = SliceWriter::new(out, format, var, slab.count());
    w.begin().map_err(SliceError::Write)?;
    // Native order straight from the source: an archive's decoding threads swap each block's
    // bytes as they decode it, and hand over their own buffers, not this thread afterwards.
    let mut failed = None;
    // A source that hands over pieces not aligned for the element type: copied into this.
    let mut aligned: Vec<u64> = Vec::new();
    ds.read_native_pieces(v, slab, piece_bytes, &mut |bytes| {
        let bytes = if bytes.as_ptr().align_offset(esize) == 0 {
            bytes
        } else {
            aligned.clear();
            aligned.resize(bytes.len().div_ceil(8), 0);
            let copy = &mut bytemuck::cast_slice_mut::<u64, u8>(&mut aligned)[..bytes.len()];
            copy.copy_from_slice(bytes);
            copy
        };
        // (Whole elements only: a source's pieces are.)
        let whole = &bytes[..bytes.len() / esize * esize];
        match w.put(TypedValues::native(t, whole)) {
            Ok(()) => true,
            Err(e) => {
                failed = Some(e);
                false
            }
        }
    })?;
    if let Some(e) = failed {
        return Err(SliceError::Write(e));
    }
    w.finish().map_err(SliceError::Write)?;
    Ok(())
}

/// Formats `values` of variable `name` with result shape `shape` like the data section of
/// `ncdump -v`: `name =` then one line per row of the last dimension, values separated by
/// `, `, rows by `,` and a final ` ;`. Char data prints as one quoted string per row, trailing
/// NULs removed. Floating-point values print as the shortest text that reads back to the same
/// value, like C's `%g` in exponent notation below 1e-5 and from 1e15 on (`1e30`).
///
/// ```
/// use nc3pack::{dump::data_text, nc3::Values};
/// let t = data_text("v", &[2, 2], &Values::Short(vec![1, 2, 3, 4]));
/// assert_eq!(t, " v =\n  1, 2,\n  3, 4 ;\n");
/// let t = data_text("f", &[3], &Values::Float(vec![0.1, 1e30, f32::NAN]));
/// assert_eq!(t, " f =\n  0.1, 1e30, NaN ;\n");
/// ```
pub fn data_text(name: &str, shape: &[u64], values: &Values) -> String {
    let mut w = SliceWriter::new(Vec::new(), Format::Text, name, shape);
    // Writing to a Vec cannot fail.
    let _ = w.begin().and_then(|()| w.put(TypedValues::of(values)));
    let out = w.finish().unwrap_or_default();
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Formats values as `{"shape": [...], "data": [...]}` with data flat in row-major order;
/// char data as one string per row of the last dimension; NaN and infinities as null.
///
/// ```
/// use nc3pack::{dump::to_json, nc3::Values};
/// let j = to_json(&[3], &Values::Float(vec![1.5, f32::NAN, 2.0]));
/// assert_eq!(j.to_string(), r#"{"data":[1.5,null,2.0],"shape":[3]}"#);
/// ```
pub fn to_json(shape: &[u64], values: &Values) -> Value {
    let row = shape.last().copied().unwrap_or(1).max(1) as usize;
    let data = match values {
        Values::Char(c) => json!(c
            .chunks(row)
            .map(|r| {
                let end = r.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
                String::from_utf8_lossy(&r[..end]).into_owned()
            })
            .collect::<Vec<_>>()),
        Values::Byte(v) => json!(v),
        Values::UByte(v) => json!(v),
        Values::Short(v) => json!(v),
        Values::UShort(v) => json!(v),
        Values::Int(v) => json!(v),
        Values::UInt(v) => json!(v),
        Values::Int64(v) => json!(v),
        Values::UInt64(v) => json!(v),
        Values::Float(v) => json!(v
            .iter()
            .map(|x| x.is_finite().then_some(*x))
            .collect::<Vec<_>>()),
        Values::Double(v) => json!(v
            .iter()
            .map(|x| x.is_finite().then_some(*x))
            .collect::<Vec<_>>()),
    };
    json!({"shape": shape, "data": data})
}

/// The values as bytes in native byte order (C order; char as bytes), for piping.
///
/// ```
/// use nc3pack::{dump::to_native_bytes, nc3::Values};
/// assert_eq!(to_native_bytes(&Values::Short(vec![1])), 1i16.to_ne_bytes());
/// ```
pub fn to_native_bytes(values: &Values) -> Vec<u8> {
    TypedValues::of(values).as_bytes().to_vec()
}

/// Values of one type in native order, borrowed.
enum TypedValues<'a> {
    Byte(&'a [i8]),
    Char(&'a [u8]),
    UByte(&'a [u8]),
    Short(&'a [i16]),
    UShort(&'a [u16]),
    Int(&'a [i32]),
    UInt(&'a [u32]),
    Int64(&'a [i64]),
    UInt64(&'a [u64]),
    Float(&'a [f32]),
    Double(&'a [f64]),
}

impl<'a> TypedValues<'a> {
    fn of(values: &'a Values) -> TypedValues<'a> {
        match values {
            Values::Byte(v) => TypedValues::Byte(v),
            Values::Char(v) => TypedValues::Char(v),
            Values::UByte(v) => TypedValues::UByte(v),
            Values::Short(v) => TypedValues::Short(v),
            Values::UShort(v) => TypedValues::UShort(v),
            Values::Int(v) => TypedValues::Int(v),
            Values::UInt(v) => TypedValues::UInt(v),
            Values::Int64(v) => TypedValues::Int64(v),
            Values::UInt64(v) => TypedValues::UInt64(v),
            Values::Float(v) => TypedValues::Float(v),
            Values::Double(v) => TypedValues::Double(v),
        }
    }

    /// Views values of type `t` already in native order. `bytes` must be aligned for `t` and
    /// hold whole values.
    fn native(t: NcType, bytes: &'a [u8]) -> TypedValues<'a> {
        use bytemuck::cast_slice as c;
        match t {
            NcType::Byte => TypedValues::Byte(c(bytes)),
            NcType::Char => TypedValues::Char(bytes),
            NcType::UByte => TypedValues::UByte(bytes),
            NcType::Short => TypedValues::Short(c(bytes)),
            NcType::UShort => TypedValues::UShort(c(bytes)),
            NcType::Int => TypedValues::Int(c(bytes)),
            NcType::UInt => TypedValues::UInt(c(bytes)),
            NcType::Int64 => TypedValues::Int64(c(bytes)),
            NcType::UInt64 => TypedValues::UInt64(c(bytes)),
            NcType::Float => TypedValues::Float(c(bytes)),
            NcType::Double => TypedValues::Double(c(bytes)),
        }
    }

    fn as_bytes(&self) -> &'a [u8] {
        match *self {
            TypedValues::Byte(v) => bytemuck::cast_slice(v),
            TypedValues::Char(v) | TypedValues::UByte(v) => v,
            TypedValues::Short(v) => bytemuck::cast_slice(v),
            TypedValues::UShort(v) => bytemuck::cast_slice(v),
            TypedValues::Int(v) => bytemuck::cast_slice(v),
            TypedValues::UInt(v) => bytemuck::cast_slice(v),
            TypedValues::Int64(v) => bytemuck::cast_slice(v),
            TypedValues::UInt64(v) => bytemuck::cast_slice(v),
            TypedValues::Float(v) => bytemuck::cast_slice(v),
            TypedValues::Double(v) => bytemuck::cast_slice(v),
        }
    }
}

/// Reused buffers for formatting numbers.
struct Num {
    int: itoa::Buffer,
    float: zmij::Buffer,
}

/// A number that prints as text (ncdump-like) and as JSON.
trait Printable: Copy {
    fn text(self, nb: &mut Num, out: &mut Vec<u8>);
    fn json(self, nb: &mut Num, out: &mut Vec<u8>);
}

macro_rules! printable_int {
    ($($t:ty)*) => {$(
        impl Printable for $t {
            fn text(self, nb: &mut Num, out: &mut Vec<u8>) {
                out.extend_from_slice(nb.int.format(self).as_bytes());
            }
            fn json(self, nb: &mut Num, out: &mut Vec<u8>) {
                out.extend_from_slice(nb.int.format(self).as_bytes());
            }
        }
    )*};
}

printable_int!(i8 u8 i16 u16 i32 u32 i64 u64);

impl Printable for f32 {
    fn text(self, nb: &mut Num, out: &mut Vec<u8>) {
        let shortest = if self.is_finite() && self != 0.0 {
            nb.float.format_finite(self)
        } else {
            ""
        };
        push_g(out, f64::from(self), shortest);
    }
    fn json(self, nb: &mut Num, out: &mut Vec<u8>) {
        // As serde_json prints an f32 it holds: the f64 of the same value.
        f64::from(self).json(nb, out);
    }
}

impl Printable for f64 {
    fn text(self, nb: &mut Num, out: &mut Vec<u8>) {
        let shortest = if self.is_finite() && self != 0.0 {
            nb.float.format_finite(self)
        } else {
            ""
        };
        push_g(out, self, shortest);
    }
    fn json(self, nb: &mut Num, out: &mut Vec<u8>) {
        if self.is_finite() {
            out.extend_from_slice(nb.float.format_finite(self).as_bytes());
        } else {
            out.extend_from_slice(b"null");
        }
    }
}

/// Appends `x` like C's `%g` with the shortest round-trip digits (as Rust's `{}` and `{:e}`
/// print them): plain notation for magnitudes in [1e-5, 1e15) and for zero, exponent notation
/// (`1e30`, `-1.5e-7`) otherwise, `NaN`, `inf`, `-inf`. `shortest` is the shortest round-trip
/// text of a finite nonzero `x` in any notation (`1.5`, `1.5e30`, `1.5e+30`, `0.00015`).
fn push_g(out: &mut Vec<u8>, x: f64, shortest: &str) {
    if x.is_nan() {
        out.extend_from_slice(b"NaN");
        return;
    }
    if x.is_infinite() {
        out.extend_from_slice(if x > 0.0 { b"inf" } else { b"-inf" });
        return;
    }
    if x == 0.0 {
        out.extend_from_slice(if x.is_sign_negative() { b"-0" } else { b"0" });
        return;
    }
    let in_plain_range = (1e-5..1e15).contains(&x.abs());
    if in_plain_range {
        // Already plain (`281.82812`, `0.00015`, `7.0`)? Rust prints it without a `.0`, and
        // differently only where x is a tie, which needs e2 + 1 + s = 0 (see `ties_away`).
        let b = shortest.as_bytes();
        let mut dot = None;
        let mut plain = true;
        for (i, &c) in b.iter().enumerate() {
            match c {
                b'.' => dot = Some(i),
                b'e' | b'E' => {
                    plain = false;
                    break;
                }
                _ => {}
            }
        }
        if plain {
            let (b, dot) = match b {
                [head @ .., b'.', b'0'] => (head, None),
                _ => (b, dot),
            };
            let s = match dot {
                Some(dot) => (b.len() - dot - 1) as i32,
                None => -(b.iter().rev().take_while(|&&c| c == b'0').count() as i32),
            };
            if odd_mantissa(x).1 + 1 + s != 0 {
                out.extend_from_slice(b);
                return;
            }
        }
    }
    // The significant digits and where the decimal point goes: x = ±0.DIGITS × 10^point.
    let mut digits = [0u8; 40];
    let mut n = 0usize;
    let mut point: Option<i32> = None;
    let mut exp = 0i32;
    let b = shortest.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        match c {
            // A leading zero after the point moves the point left; before it, it is nothing.
            b'0' if n == 0 && point.is_some() => exp -= 1,
            b'0' if n == 0 => {}
            b'0'..=b'9' => {
                if n < digits.len() {
                    digits[n] = c;
                    n += 1;
                } else if point.is_none() {
                    exp += 1; // (only zeros beyond the shortest digits)
                }
            }
            b'.' => point = Some(n as i32),
            b'e' | b'E' => {
                let e = &shortest[i + 1..];
                exp += e.trim_start_matches('+').parse::<i32>().unwrap_or(0);
                break;
            }
            _ => {}
        }
    }
    let mut point = point.unwrap_or(n as i32) + exp;
    while n > 1 && digits[n - 1] == b'0' {
        n -= 1;
    }
    if n == 0 {
        // Not a nonzero number's text: cannot happen, but print what Rust would.
        digits[0] = b'0';
        n = 1;
        point = 1;
    }
    ties_away(x, &mut digits, &mut n, &mut point);
    let digits = &digits[..n];
    if x < 0.0 {
        out.push(b'-');
    }
    if in_plain_range {
        if point <= 0 {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', (-point) as usize));
            out.extend_from_slice(digits);
        } else if (point as usize) < n {
            out.extend_from_slice(&digits[..point as usize]);
            out.push(b'.');
            out.extend_from_slice(&digits[point as usize..]);
        } else {
            out.extend_from_slice(digits);
            out.extend(std::iter::repeat_n(b'0', point as usize - n));
        }
    } else {
        out.push(digits[0]);
        if n > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        let mut ib = itoa::Buffer::new();
        out.extend_from_slice(ib.format(point - 1).as_bytes());
    }
}

/// `(m, e2)` with |x| = m × 2^e2 and m odd, for a finite nonzero `x` (m = 0 for zero).
fn odd_mantissa(x: f64) -> (u64, i32) {
    let bits = x.abs().to_bits();
    let (frac, bexp) = (bits & ((1 << 52) - 1), (bits >> 52) as i32);
    let (m, e2) = if bexp == 0 {
        (frac, -1074)
    } else {
        (frac | (1 << 52), bexp - 1075)
    };
    if m == 0 {
        return (0, 0);
    }
    (m >> m.trailing_zeros(), e2 + m.trailing_zeros() as i32)
}

/// Where `x` lies exactly halfway between two decimals of `n` significant digits, the shortest
/// round-trip digits `digits[..n]` (x ≈ 0.DIGITS × 10^point) may be either neighbour: this makes
/// them the one of larger magnitude, as Rust's `{}` prints (the digit generator used here
/// rounds such ties to even). Other values are left alone.
fn ties_away(x: f64, digits: &mut [u8; 40], n: &mut usize, point: &mut i32) {
    if *n > 19 {
        return; // more digits than a shortest f64 has: not from the digit generator
    }
    let d: u64 = digits[..*n]
        .iter()
        .fold(0, |a, &c| a * 10 + u64::from(c - b'0'));
    let (m, e2) = odd_mantissa(x);
    if m == 0 {
        return;
    }
    // s digits after the decimal point: x is a tie iff 2|x| × 10^s = m × 2^(e2 + 1 + s) × 5^s
    // is an odd integer, i.e. e2 + 1 + s = 0 (m odd) and that odd integer is 2d ± 1.
    let s = *n as i32 - *point;
    if e2 + 1 + s != 0 {
        return;
    }
    let five = |k: u32| 5u128.checked_pow(k);
    let twice = if s >= 0 {
        five(s as u32).and_then(|p| p.checked_mul(u128::from(m)))
    } else {
        five(s.unsigned_abs()).and_then(|p| (u128::from(m) % p == 0).then(|| u128::from(m) / p))
    };
    if twice != Some(2 * u128::from(d) + 1) {
        return; // not a tie, or the digits are already the upper neighbour
    }
    let up = d + 1;
    let mut ib = itoa::Buffer::new();
    let t = ib.format(up).as_bytes();
    if t.len() > *n {
        *point += 1; // 99.5 → 100
    }
    digits[..t.len()].copy_from_slice(t);
    *n = t.len();
    while *n > 1 && digits[*n - 1] == b'0' {
        *n -= 1;
    }
}

/// Appends byte `b` of a char row as ncdump quotes it.
fn push_cdl_char(out: &mut Vec<u8>, b: u8) {
    match b {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\t' => out.extend_from_slice(b"\\t"),
        0x20..=0x7e => out.push(b),
        _ => out.extend_from_slice(&[
            b'\\',
            b'0' + (b >> 6),
            b'0' + ((b >> 3) & 7),
            b'0' + (b & 7),
        ]),
    }
}

/// Appends `s` escaped for a JSON string as serde_json escapes it.
fn push_json_str(out: &mut Vec<u8>, s: &str) {
    for &b in s.as_bytes() {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0..=0x1f => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 15)]);
            }
            _ => out.push(b),
        }
    }
}

/// The formatter of a slice's output, fed its values a piece at a time, in order.
struct SliceWriter<'a, W: Write> {
    out: W,
    format: Format,
    name: &'a str,
    shape: &'a [u64],
    /// Values per row (the last dimension; 1 for a scalar).
    row: u64,
    /// Position in the current row.
    col: u64,
    /// Whether any value was printed.
    any: bool,
    /// Whether a char row's string is open.
    in_string: bool,
    buf: Vec<u8>,
    num: Num,
    /// Char rows: NULs seen but not printed yet (dropped if they end the row).
    nuls: u64,
    /// JSON char rows: the start of a UTF-8 sequence cut by a piece boundary.
    carry: Vec<u8>,
    /// JSON char rows: `carry` and the next bytes, to decode together.
    scratch: Vec<u8>,
}

impl<'a, W: Write> SliceWriter<'a, W> {
    fn new(out: W, format: Format, name: &'a str, shape: &'a [u64]) -> Self {
        SliceWriter {
            out,
            format,
            name,
            shape,
            row: shape.last().copied().unwrap_or(1).max(1),
            col: 0,
            any: false,
            in_string: false,
            buf: Vec::with_capacity(if format == Format::Raw {
                0
            } else {
                OUT_CHUNK + 64
            }),
            num: Num {
                int: itoa::Buffer::new(),
                float: zmij::Buffer::new(),
            },
            nuls: 0,
            carry: Vec::new(),
            scratch: Vec::new(),
        }
    }

    fn begin(&mut self) -> io::Result<()> {
        if self.format == Format::Json {
            self.buf.extend_from_slice(b"{\"data\":[");
        }
        Ok(())
    }

    /// Writes out what is collected once it is a chunk.
    fn spill(&mut self) -> io::Result<()> {
        if self.buf.len() >= OUT_CHUNK {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    fn put(&mut self, piece: TypedValues<'_>) -> io::Result<()> {
        match (self.format, piece) {
            (Format::Raw, p) => self.out.write_all(p.as_bytes()),
            (_, TypedValues::Char(c)) => self.chars(c),
            (_, TypedValues::Byte(v)) => self.nums(v),
            (_, TypedValues::UByte(v)) => self.nums(v),
            (_, TypedValues::Short(v)) => self.nums(v),
            (_, TypedValues::UShort(v)) => self.nums(v),
            (_, TypedValues::Int(v)) => self.nums(v),
            (_, TypedValues::UInt(v)) => self.nums(v),
            (_, TypedValues::Int64(v)) => self.nums(v),
            (_, TypedValues::UInt64(v)) => self.nums(v),
            (_, TypedValues::Float(v)) => self.nums(v),
            (_, TypedValues::Double(v)) => self.nums(v),
        }
    }

    fn nums<T: Printable>(&mut self, xs: &[T]) -> io::Result<()> {
        let text = self.format == Format::Text;
        for &x in xs {
            if text {
                if !self.any {
                    self.buf.push(b' ');
                    self.buf.extend_from_slice(self.name.as_bytes());
                    self.buf.extend_from_slice(b" =\n  ");
                } else if self.col == 0 {
                    self.buf.extend_from_slice(b",\n  ");
                } else {
                    self.buf.extend_from_slice(b", ");
                }
                self.col += 1;
                if self.col == self.row {
                    self.col = 0;
                }
                x.text(&mut self.num, &mut self.buf);
            } else {
                if self.any {
                    self.buf.push(b',');
                }
                x.json(&mut self.num, &mut self.buf);
            }
            self.any = true;
            self.spill()?;
        }
        Ok(())
    }

    /// Char values: one string per row; a piece may start or end inside a row.
    fn chars(&mut self, mut c: &[u8]) -> io::Result<()> {
        while !c.is_empty() {
            if self.col == 0 {
                match (self.format, self.any) {
                    (Format::Text, false) => {
                        self.buf.push(b' ');
                        self.buf.extend_from_slice(self.name.as_bytes());
                        self.buf.extend_from_slice(b" =\n  ");
                    }
                    (Format::Text, true) => self.buf.extend_from_slice(b",\n  "),
                    (_, true) => self.buf.push(b','),
                    (_, false) => {}
                }
                self.any = true;
                self.in_string = true;
                self.buf.push(b'"');
            }
            let take = ((self.row - self.col) as usize).min(c.len());
            let (part, rest) = c.split_at(take);
            // A long row goes out a chunk at a time.
            for part in part.chunks(OUT_CHUNK) {
                if self.format == Format::Text {
                    self.text_chars(part);
                } else {
                    self.json_chars(part);
                }
                self.spill()?;
            }
            self.col += take as u64;
            c = rest;
            if self.col == self.row {
                self.end_string();
                self.col = 0;
            }
        }
        self.spill()
    }

    /// Closes a char row's string.
    fn end_string(&mut self) {
        if !self.carry.is_empty() {
            // An incomplete UTF-8 sequence ends the row: one replacement character.
            self.carry.clear();
            self.buf.extend_from_slice("\u{fffd}".as_bytes());
        }
        self.nuls = 0;
        self.buf.push(b'"');
        self.in_string = false;
    }

    /// Bytes within a row, quoted as ncdump does; trailing NULs held back.
    fn text_chars(&mut self, part: &[u8]) {
        for &b in part {
            if b == 0 {
                self.nuls += 1;
                continue;
            }
            for _ in 0..self.nuls {
                self.buf.extend_from_slice(b"\\000");
            }
            self.nuls = 0;
            push_cdl_char(&mut self.buf, b);
        }
    }

    /// Bytes within a row, decoded as UTF-8 with replacement characters for invalid sequences
    /// (as `String::from_utf8_lossy` on the whole row) and escaped for JSON; trailing NULs and
    /// a trailing incomplete sequence held back.
    fn json_chars(&mut self, part: &[u8]) {
        let body = part.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        if body > 0 {
            // NULs followed by more text are text (no sequence is pending before them).
            for _ in 0..self.nuls {
                self.buf.extend_from_slice(b"\\u0000");
            }
            self.nuls = 0;
            let mut bytes = std::mem::take(&mut self.scratch);
            bytes.clear();
            bytes.append(&mut self.carry);
            bytes.extend_from_slice(&part[..body]);
            let mut s = &bytes[..];
            loop {
                match std::str::from_utf8(s) {
                    Ok(t) => {
                        push_json_str(&mut self.buf, t);
                        break;
                    }
                    Err(e) => {
                        let (good, bad) = s.split_at(e.valid_up_to());
                        push_json_str(&mut self.buf, std::str::from_utf8(good).unwrap_or(""));
                        match e.error_len() {
                            Some(n) => {
                                self.buf.extend_from_slice("\u{fffd}".as_bytes());
                                s = &bad[n..];
                            }
                            None => {
                                // Cut by the end of this part: may continue in the next.
                                self.carry.extend_from_slice(bad);
                                break;
                            }
                        }
                    }
                }
            }
            self.scratch = bytes;
        }
        let tail = (part.len() - body) as u64;
        if tail > 0 {
            if !self.carry.is_empty() {
                // A NUL follows: the sequence is invalid.
                self.carry.clear();
                self.buf.extend_from_slice("\u{fffd}".as_bytes());
            }
            self.nuls += tail;
        }
    }

    /// Ends the output and flushes it; returns the writer.
    fn finish(mut self) -> io::Result<W> {
        if self.in_string {
            // Values that end inside a row (only from `data_text` given fewer values than the
            // shape says): the row prints as far as it goes.
            self.end_string();
        }
        match self.format {
            Format::Text if !self.any => {
                self.buf.push(b' ');
                self.buf.extend_from_slice(self.name.as_bytes());
                self.buf.extend_from_slice(b" = ;\n");
            }
            Format::Text => self.buf.extend_from_slice(b" ;\n"),
            Format::Json => {
                self.buf.extend_from_slice(b"],\"shape\":[");
                for (i, &n) in self.shape.iter().enumerate() {
                    if i > 0 {
                        self.buf.push(b',');
                    }
                    self.buf
                        .extend_from_slice(self.num.int.format(n).as_bytes());
                }
                self.buf.extend_from_slice(b"]}\n");
            }
            Format::Raw => {}
        }
        self.out.write_all(&self.buf)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text formatting before output was streamed (a String per value), as the reference.
    fn old_data_text(name: &str, shape: &[u64], values: &Values) -> String {
        let row = shape.last().copied().unwrap_or(1).max(1) as usize;
        let rows: Vec<String> = match values {
            Values::Char(c) => c.chunks(row).map(old_quote_chars).collect(),
            _ => old_items(values)
                .chunks(row)
                .map(|r| r.join(", "))
                .collect(),
        };
        if rows.is_empty() {
            return format!(" {name} = ;\n");
        }
        format!(" {name} =\n  {} ;\n", rows.join(",\n  "))
    }

    fn old_quote_chars(c: &[u8]) -> String {
        let end = c.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        let mut s = String::from("\"");
        for &b in &c[..end] {
            match b {
                b'"' => s.push_str("\\\""),
                b'\\' => s.push_str("\\\\"),
                b'\n' => s.push_str("\\n"),
                b'\t' => s.push_str("\\t"),
                0x20..=0x7e => s.push(b as char),
                _ => s.push_str(&format!("\\{b:03o}")),
            }
        }
        s.push('"');
        s
    }

    fn old_items(values: &Values) -> Vec<String> {
        fn f<T: std::fmt::Display>(v: &[T]) -> Vec<String> {
            v.iter().map(|x| x.to_string()).collect()
        }
        match values {
            Values::Byte(v) => f(v),
            Values::Char(v) | Values::UByte(v) => f(v),
            Values::Short(v) => f(v),
            Values::UShort(v) => f(v),
            Values::Int(v) => f(v),
            Values::UInt(v) => f(v),
            Values::Int64(v) => f(v),
            Values::UInt64(v) => f(v),
            Values::Float(v) => v.iter().map(|&x| old_f32(x)).collect(),
            Values::Double(v) => v.iter().map(|&x| old_f64(x)).collect(),
        }
    }

    fn old_f32(x: f32) -> String {
        old_g(f64::from(x), x.to_string(), format!("{x:e}"))
    }

    fn old_f64(x: f64) -> String {
        old_g(x, x.to_string(), format!("{x:e}"))
    }

    fn old_g(x: f64, plain: String, exp: String) -> String {
        let a = x.abs();
        if a != 0.0 && a.is_finite() && !(1e-5..1e15).contains(&a) {
            exp
        } else {
            plain
        }
    }

    /// Formats `values` fed to the writer `piece` values at a time.
    fn in_pieces(
        format: Format,
        name: &str,
        shape: &[u64],
        values: &Values,
        piece: usize,
    ) -> Vec<u8> {
        let mut w = SliceWriter::new(Vec::new(), format, name, shape);
        w.begin().unwrap();
        macro_rules! feed {
            ($v:expr, $p:ident) => {
                for c in $v.chunks(piece) {
                    w.put(TypedValues::$p(c)).unwrap();
                }
            };
        }
        match values {
            Values::Byte(v) => feed!(v, Byte),
            Values::Char(v) => feed!(v, Char),
            Values::UByte(v) => feed!(v, UByte),
            Values::Short(v) => feed!(v, Short),
            Values::UShort(v) => feed!(v, UShort),
            Values::Int(v) => feed!(v, Int),
            Values::UInt(v) => feed!(v, UInt),
            Values::Int64(v) => feed!(v, Int64),
            Values::UInt64(v) => feed!(v, UInt64),
            Values::Float(v) => feed!(v, Float),
            Values::Double(v) => feed!(v, Double),
        }
        w.finish().unwrap()
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn text_of<T: Printable>(x: T) -> String {
        let mut out = vec![];
        x.text(
            &mut Num {
                int: itoa::Buffer::new(),
                float: zmij::Buffer::new(),
            },
            &mut out,
        );
        String::from_utf8(out).unwrap()
    }

    /// Floats print exactly as Rust's `{}` / `{:e}` (shortest round trip) printed them before,
    /// ties between two shortest candidates included (281.828125f32 prints as 281.82813).
    #[test]
    fn floats_print_as_rust_formatting_does() {
        let specials32 = [
            0.0f32,
            -0.0,
            1.0,
            -1.0,
            0.1,
            281.828_13, // exactly 281.828125: a tie
            9.5,
            99.5,
            0.5,
            1e-5,
            1e15,
            1e30,
            -1.5e-7,
            f32::MIN_POSITIVE,
            f32::MAX,
            f32::MIN,
            f32::EPSILON,
            1e-45,
            9.96921e36,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            16777216.0,
            16777217.0,
            123456790.0,
        ];
        for x in specials32 {
            assert_eq!(text_of::<f32>(x), old_f32(x), "{x:e}");
        }
        for x in [1e-5f32, 1e15] {
            for d in [-2i32, -1, 1, 2] {
                let y = f32::from_bits(x.to_bits().wrapping_add_signed(d));
                assert_eq!(text_of::<f32>(y), old_f32(y), "{y:e}");
            }
        }
        // Every f32 from 256 to 272 (ties are common there), and random ones.
        for bits in 0x4380_0000u32..0x4388_0000 {
            let x = f32::from_bits(bits);
            assert_eq!(text_of::<f32>(x), old_f32(x), "{bits:#x}");
        }
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..300_000 {
            let x = f32::from_bits(rng.next() as u32);
            assert_eq!(text_of::<f32>(x), old_f32(x), "{:#x}", x.to_bits());
        }
        let specials64 = [
            0.0f64,
            -0.0,
            0.1,
            0.3,
            2.5,
            1e-5,
            1e15,
            1e22,
            1e23,
            5e-324,
            f64::MIN_POSITIVE,
            f64::MAX,
            9.969209968386869e36,
            4503599627370496.5,
            9007199254740993.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            281.828125,
            // 2040884272922261.25: a tie, 2.0408842729222613e15 in Rust's formatting.
            f64::from_bits(0x431d_00b1_9875_fa55),
        ];
        for x in specials64 {
            assert_eq!(text_of::<f64>(x), old_f64(x), "{x:e}");
        }
        for _ in 0..300_000 {
            let x = f64::from_bits(rng.next());
            assert_eq!(text_of::<f64>(x), old_f64(x), "{:#x}", x.to_bits());
        }
        // Doubles with few digits (where ties sit).
        for i in 0..100_000u64 {
            for x in [i as f64 / 1024.0, (i as f64 + 0.5) * 1e15, i as f64 * 1e-7] {
                assert_eq!(text_of::<f64>(x), old_f64(x), "{:#x}", x.to_bits());
            }
        }
    }

    /// Random values of every type in random shapes.
    fn random_values(rng: &mut Rng) -> (Vec<u64>, Values) {
        let rank = rng.below(4) as usize;
        let shape: Vec<u64> = (0..rank).map(|_| rng.below(6)).collect();
        let n = shape.iter().product::<u64>() as usize;
        let chars = |rng: &mut Rng| -> Vec<u8> {
            const PICK: &[u8] = b"\0\0\0ab\"\\\n\t\r\x08\x0c\x01\x1f\x7f~ ";
            let utf8 = ["é", "€", "𝄞"];
            let mut v = Vec::with_capacity(n);
            while v.len() < n {
                match rng.below(6) {
                    0 => v.push(rng.next() as u8),
                    1 => v.extend_from_slice(utf8[rng.below(3) as usize].as_bytes()),
                    2 => {
                        // A cut multibyte sequence.
                        let s = utf8[rng.below(3) as usize].as_bytes();
                        v.extend_from_slice(&s[..1 + rng.below(s.len() as u64 - 1) as usize]);
                    }
                    _ => v.push(PICK[rng.below(PICK.len() as u64) as usize]),
                }
            }
            v.truncate(n);
            v
        };
        let kind = rng.below(11);
        let chars = if kind == 1 { chars(rng) } else { vec![] };
        let mut bits = |_| rng.next();
        let values = match kind {
            0 => Values::Byte((0..n).map(|_| bits(0) as i8).collect()),
            1 => Values::Char(chars),
            2 => Values::UByte((0..n).map(|_| bits(0) as u8).collect()),
            3 => Values::Short((0..n).map(|_| bits(0) as i16).collect()),
            4 => Values::UShort((0..n).map(|_| bits(0) as u16).collect()),
            5 => Values::Int((0..n).map(|_| bits(0) as i32).collect()),
            6 => Values::UInt((0..n).map(|_| bits(0) as u32).collect()),
            7 => Values::Int64((0..n).map(|_| bits(0) as i64).collect()),
            8 => Values::UInt64((0..n).map(|_| bits(0)).collect()),
            9 => Values::Float((0..n).map(|_| f32::from_bits(bits(0) as u32)).collect()),
            _ => Values::Double((0..n).map(|_| f64::from_bits(bits(0))).collect()),
        };
        (shape, values)
    }

    /// Fed in pieces of any size, text is what the old formatting printed, JSON what
    /// serde_json prints for `to_json`, raw the values' native bytes.
    #[test]
    fn output_in_pieces_matches_the_whole() {
        let mut rng = Rng(77);
        let mut chars = 0;
        for case in 0..3000 {
            let (shape, values) = random_values(&mut rng);
            chars += usize::from(matches!(values, Values::Char(_)));
            let text = old_data_text("v_1", &shape, &values);
            let json = to_json(&shape, &values).to_string() + "\n";
            let raw: Vec<u8> = match &values {
                Values::Byte(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
                Values::Char(v) | Values::UByte(v) => v.clone(),
                Values::Short(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
                Values::UShort(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
                Values::Int(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
                Values::UInt(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
                Values::Int64(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
                Values::UInt64(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
                Values::Float(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
                Values::Double(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
            };
            assert_eq!(data_text("v_1", &shape, &values), text, "case {case}");
            assert_eq!(to_native_bytes(&values), raw, "case {case}");
            for piece in [1, 2, 3, 5, 7, 1000] {
                let ctx = format!("case {case}, pieces of {piece}: {shape:?} {values:?}");
                let got = in_pieces(Format::Text, "v_1", &shape, &values, piece);
                assert_eq!(String::from_utf8(got).unwrap(), text, "{ctx}");
                let got = in_pieces(Format::Json, "v_1", &shape, &values, piece);
                assert_eq!(String::from_utf8(got).unwrap(), json, "{ctx}");
                let got = in_pieces(Format::Raw, "v_1", &shape, &values, piece);
                assert_eq!(got, raw, "{ctx}");
            }
        }
        assert!(chars > 100, "{chars}");
    }

    /// A long char row split anywhere: escapes, NULs (kept inside, dropped at the end) and
    /// UTF-8 sequences cut by a piece boundary print as for the whole row.
    #[test]
    fn char_rows_cut_anywhere_print_as_whole() {
        let row: Vec<u8> = [
            "a\0\0b".as_bytes(),
            "é€𝄞".as_bytes(),
            &[0xe2, 0x82],
            b"\0",
            &[0xf0, 0x9d],
            b"x\\\"\n",
            &[0xe2, 0x82],
            b"\0\0\0",
        ]
        .concat();
        let values = Values::Char(row.clone());
        let shape = [row.len() as u64];
        let text = old_data_text("c", &shape, &values);
        let json = to_json(&shape, &values).to_string() + "\n";
        for piece in 1..=row.len() {
            let got = in_pieces(Format::Text, "c", &shape, &values, piece);
            assert_eq!(String::from_utf8(got).unwrap(), text, "pieces of {piece}");
            let got = in_pieces(Format::Json, "c", &shape, &values, piece);
            assert_eq!(String::from_utf8(got).unwrap(), json, "pieces of {piece}");
        }
        // The reference itself, checked by hand.
        assert!(
            text.starts_with(" c =\n  \"a\\000\\000b\\303\\251"),
            "{text}"
        );
        assert!(text.ends_with("x\\\\\\\"\\n\\342\\202\" ;\n"), "{text}");
        let want = "{\"data\":[\"a\\u0000\\u0000bé€𝄞\u{fffd}\\u0000\u{fffd}x\\\\\\\"\\n\u{fffd}\"],\"shape\":[27]}\n";
        assert_eq!(json, want);
    }
}
