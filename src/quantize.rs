//! Opt-in lossy quantization of `float` and `double` data (BitRound and Granular BitRound),
//! bit for bit as netCDF-C does it when writing a quantized variable.
//!
//! The algorithms follow netCDF-C's `nc4_convert_type` in `libsrc4/nc4var.c` (netcdf-c 4.9 and
//! later, `NC_QUANTIZE_BITROUND` and `NC_QUANTIZE_GRANULARBR`): BitRound adds half of the unit
//! of the last kept explicit mantissa bit to the value's bits and clears the bits below it
//! (round to nearest, ties away from zero in magnitude); Granular BitRound picks, per value, the
//! number of bits that keeps `NSD` significant decimal digits and then does the same. Values
//! equal to the fill value (`_FillValue`, else the type's default fill), zeros and NaN are left
//! alone, as netCDF-C leaves them; here values equal to `missing_value` are kept too, and so
//! is the one kind of value where netCDF-C's result leaves the bound: a finite value so close
//! to the type's largest that rounding would carry it into infinity. Infinities come through
//! the arithmetic unchanged, as in netCDF-C.
//!
//! ```
//! use nc3pack::quantize::{Algorithm, Quantization};
//! let q = Quantization::new(Algorithm::BitRound, 3);
//! // 1.1875 = 1.0011b: keeping 3 explicit bits rounds it to 1.010b = 1.25.
//! assert_eq!(q.apply_f32(1.1875), 1.25);
//! assert_eq!("bitround:7".parse::<Quantization>().unwrap().nsb_or_nsd, 7);
//! ```

use crate::nc3::{NcType, Values, Var};
use crate::vars::VarSelection;
use std::fmt;
use std::str::FromStr;

/// netCDF-C's attribute recording BitRound's number of significant bits.
pub const BITROUND_ATTR: &str = "_QuantizeBitRoundNumberOfSignificantBits";
/// netCDF-C's attribute recording Granular BitRound's number of significant digits.
pub const GRANULARBR_ATTR: &str = "_QuantizeGranularBitRoundNumberOfSignificantDigits";
/// The global attribute holding the original file's xxh3-128 and length, written into the
/// header of the quantized file an archive holds: `"<32 hex digits> <length in bytes>"`.
pub const ORIGINAL_ATTR: &str = "nc3pack_original_xxh3_128";
/// The `implementation` recorded in the CF quantization variable.
pub const IMPLEMENTATION: &str = concat!("nc3pack version ", env!("CARGO_PKG_VERSION"));

/// A quantization algorithm.
///
/// ```
/// use nc3pack::quantize::Algorithm;
/// assert_eq!(Algorithm::GranularBitRound.cf_name(), "granular_bitround");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Algorithm {
    /// BitRound: keep NSB explicit mantissa bits (netCDF-C's `NC_QUANTIZE_BITROUND`).
    BitRound,
    /// Granular BitRound: keep NSD significant decimal digits (netCDF-C's
    /// `NC_QUANTIZE_GRANULARBR`).
    GranularBitRound,
}

impl Algorithm {
    /// The name in CF's `algorithm` vocabulary.
    ///
    /// ```
    /// assert_eq!(nc3pack::quantize::Algorithm::BitRound.cf_name(), "bitround");
    /// ```
    pub fn cf_name(self) -> &'static str {
        match self {
            Algorithm::BitRound => "bitround",
            Algorithm::GranularBitRound => "granular_bitround",
        }
    }

    /// The name on the command line (`bitround`, `granularbr`).
    ///
    /// ```
    /// assert_eq!(nc3pack::quantize::Algorithm::GranularBitRound.cli_name(), "granularbr");
    /// ```
    pub fn cli_name(self) -> &'static str {
        match self {
            Algorithm::BitRound => "bitround",
            Algorithm::GranularBitRound => "granularbr",
        }
    }

    /// The CF attribute holding the parameter (`quantization_nsb` or `quantization_nsd`).
    ///
    /// ```
    /// assert_eq!(nc3pack::quantize::Algorithm::BitRound.cf_param(), "quantization_nsb");
    /// ```
    pub fn cf_param(self) -> &'static str {
        match self {
            Algorithm::BitRound => "quantization_nsb",
            Algorithm::GranularBitRound => "quantization_nsd",
        }
    }

    /// netCDF-C's attribute holding the parameter.
    ///
    /// ```
    /// use nc3pack::quantize::{Algorithm, BITROUND_ATTR};
    /// assert_eq!(Algorithm::BitRound.netcdf_attr(), BITROUND_ATTR);
    /// ```
    pub fn netcdf_attr(self) -> &'static str {
        match self {
            Algorithm::BitRound => BITROUND_ATTR,
            Algorithm::GranularBitRound => GRANULARBR_ATTR,
        }
    }

    /// The parameter's range for `float` (`is_double` false) or `double` data, as netCDF-C
    /// bounds it (`NC_QUANTIZE_MAX_FLOAT_NSB` 23, `_DOUBLE_NSB` 52, `_FLOAT_NSD` 6,
    /// `_DOUBLE_NSD` 15 in `netcdf.h`).
    ///
    /// ```
    /// use nc3pack::quantize::Algorithm;
    /// assert_eq!(Algorithm::BitRound.range(false), 1..=23);
    /// assert_eq!(Algorithm::GranularBitRound.range(true), 1..=15);
    /// ```
    pub fn range(self, is_double: bool) -> std::ops::RangeInclusive<u8> {
        match (self, is_double) {
            (Algorithm::BitRound, false) => 1..=23,
            (Algorithm::BitRound, true) => 1..=52,
            (Algorithm::GranularBitRound, false) => 1..=6,
            (Algorithm::GranularBitRound, true) => 1..=15,
        }
    }
}

/// An algorithm and its parameter (NSB for BitRound, NSD for Granular BitRound).
///
/// ```
/// use nc3pack::quantize::{Algorithm, Quantization};
/// let q: Quantization = "granularbr:3".parse().unwrap();
/// assert_eq!(q, Quantization::new(Algorithm::GranularBitRound, 3));
/// assert_eq!(q.to_string(), "granularbr:3");
/// assert!("bitround:x".parse::<Quantization>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Quantization {
    /// The algorithm.
    pub algorithm: Algorithm,
    /// NSB (BitRound) or NSD (Granular BitRound).
    pub nsb_or_nsd: u8,
}

impl fmt::Display for Quantization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.algorithm.cli_name(), self.nsb_or_nsd)
    }
}

impl FromStr for Quantization {
    type Err = QuantizeError;
    fn from_str(s: &str) -> Result<Self, QuantizeError> {
        let bad = || QuantizeError::Syntax { given: s.into() };
        let (alg, n) = s.split_once(':').ok_or_else(bad)?;
        let algorithm = match alg.trim().to_ascii_lowercase().as_str() {
            "bitround" => Algorithm::BitRound,
            "granularbr" | "granularbitround" | "granular_bitround" => Algorithm::GranularBitRound,
            _ => return Err(bad()),
        };
        let n: u8 = n.trim().parse().map_err(|_| bad())?;
        Ok(Quantization::new(algorithm, n))
    }
}

/// A quantization for the variables named by a list (a [`VarSelection`], as `--var` takes).
///
/// ```
/// let r: nc3pack::quantize::QuantizeRule = "t*,u=bitround:10".parse().unwrap();
/// assert!(r.vars.matches("tas") && r.vars.matches("u") && !r.vars.matches("v"));
/// assert_eq!(r.quantization.nsb_or_nsd, 10);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuantizeRule {
    /// Names and simple globs (`*`, `?`).
    pub vars: VarSelection,
    /// What to apply.
    pub quantization: Quantization,
}

impl FromStr for QuantizeRule {
    type Err = QuantizeError;
    fn from_str(s: &str) -> Result<Self, QuantizeError> {
        let syntax = || QuantizeError::Syntax {
            given: s.to_string(),
        };
        // The quantization follows the last `=` (a name may hold an escaped one).
        let (vars, q) = s.rsplit_once('=').ok_or_else(syntax)?;
        Ok(QuantizeRule {
            vars: vars.trim().parse().map_err(|_| syntax())?,
            quantization: q.parse().map_err(|_| syntax())?,
        })
    }
}

/// Why a quantization cannot be applied.
///
/// ```
/// let e = "x".parse::<nc3pack::quantize::QuantizeRule>().unwrap_err();
/// assert!(e.to_string().contains("VARS=bitround:NSB"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QuantizeError {
    /// The rule does not read as `VARS=bitround:NSB` or `VARS=granularbr:NSD`.
    #[error("--quantize {given:?}: expected VARS=bitround:NSB or VARS=granularbr:NSD")]
    Syntax {
        /// What was given.
        given: String,
    },
    /// A named variable is not `float` or `double`.
    #[error("--quantize: variable {var:?} is {nc_type}; only float and double variables can be quantized")]
    NotFloat {
        /// The variable.
        var: String,
        /// Its type's name.
        nc_type: &'static str,
    },
    /// The parameter is out of range for the variable's type.
    #[error("--quantize: {quantization} for {nc_type} variable {var:?}: {param} must be in {min}..={max}")]
    Range {
        /// The variable.
        var: String,
        /// Its type's name.
        nc_type: &'static str,
        /// The quantization asked for.
        quantization: Quantization,
        /// `NSB` or `NSD`.
        param: &'static str,
        /// Least value.
        min: u8,
        /// Greatest value.
        max: u8,
    },
    /// A name or pattern matches no variable of the file.
    #[error("--quantize: {pattern:?} matches no variable (variables: {known})")]
    NoMatch {
        /// The name or pattern.
        pattern: String,
        /// The file's variables, comma-separated.
        known: String,
    },
    /// A glob matches variables, but none of them `float` or `double`.
    #[error("--quantize: {pattern:?} matches no float or double variable (those: {known})")]
    NoFloatMatch {
        /// The pattern.
        pattern: String,
        /// The file's float and double variables, comma-separated.
        known: String,
    },
    /// Two rules name the same variable.
    #[error("--quantize: variable {var:?} is named by more than one rule")]
    Twice {
        /// The variable.
        var: String,
    },
    /// The quantized file cannot be laid out in the original's variant (with the added
    /// attributes, a CDF-1 offset would pass 2 GiB).
    #[error("--quantize: the quantized file cannot be written: {0}")]
    Layout(#[from] crate::nc3::WriteError),
    /// The name chosen for a CF quantization variable is already taken.
    #[error("--quantize: the file already has a variable named {name:?} (the quantization variable's name)")]
    NameTaken {
        /// The name.
        name: String,
    },
}

/// What to keep bit for bit in one variable: its fill values.
///
/// ```
/// use nc3pack::quantize::Keep;
/// let k = Keep { fill: vec![-999.0] };
/// assert!(k.keeps(-999.0) && k.keeps(f64::NAN) && !k.keeps(1.0));
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Keep {
    /// Values kept as they are (compared as the variable's type compares them).
    pub fill: Vec<f64>,
}

impl Keep {
    /// The values of variable `v` to keep: its `_FillValue` (else the type's default fill,
    /// as netCDF-C compares with it) and its `missing_value`s.
    ///
    /// ```
    /// let bytes = std::fs::read("samples/fill_values.nc").unwrap();
    /// let h = nc3pack::nc3::Header::parse(&bytes, bytes.len() as u64).unwrap();
    /// let k = nc3pack::quantize::Keep::of(h.vars().next().unwrap());
    /// assert!(!k.fill.is_empty());
    /// ```
    pub fn of(v: Var<'_>) -> Keep {
        let mut fill = Vec::new();
        let mut has_fill = false;
        for a in v.attrs() {
            let is_fill = a.name() == "_FillValue";
            if !is_fill && a.name() != "missing_value" {
                continue;
            }
            has_fill |= is_fill;
            fill.extend(values_f64(&a.values()));
        }
        if !has_fill {
            // NC_FILL_FLOAT and NC_FILL_DOUBLE are both 9.9692099683868690e+36 (as f32, the
            // float nearest it).
            fill.push(9.969_209_968_386_869e36);
        }
        Keep { fill }
    }

    /// Whether `x` is kept as it is: a fill value, or NaN.
    ///
    /// ```
    /// assert!(nc3pack::quantize::Keep::default().keeps(f64::NAN));
    /// ```
    pub fn keeps(&self, x: f64) -> bool {
        x.is_nan() || self.fill.contains(&x)
    }

    fn keeps_f32(&self, x: f32) -> bool {
        x.is_nan() || self.fill.iter().any(|&f| f as f32 == x)
    }
}

fn values_f64(v: &Values) -> Vec<f64> {
    match v {
        Values::Byte(x) => x.iter().map(|&x| x as f64).collect(),
        Values::Short(x) => x.iter().map(|&x| x as f64).collect(),
        Values::Int(x) => x.iter().map(|&x| x as f64).collect(),
        Values::Float(x) => x.iter().map(|&x| x as f64).collect(),
        Values::Double(x) => x.clone(),
        Values::UByte(x) => x.iter().map(|&x| x as f64).collect(),
        Values::UShort(x) => x.iter().map(|&x| x as f64).collect(),
        Values::UInt(x) => x.iter().map(|&x| x as f64).collect(),
        Values::Int64(x) => x.iter().map(|&x| x as f64).collect(),
        Values::UInt64(x) => x.iter().map(|&x| x as f64).collect(),
        Values::Char(_) => Vec::new(),
    }
}

/// `frexp`: `x = m * 2^e` with `0.5 <= |m| < 1`, for finite nonzero `x` (exact).
fn frexp(x: f64) -> (f64, i32) {
    let (x, adj) = if x.abs() < f64::MIN_POSITIVE {
        (x * f64::from_bits(0x4350_0000_0000_0000), -54) // * 2^54
    } else {
        (x, 0)
    };
    let bits = x.to_bits();
    let e = ((bits >> 52) & 0x7ff) as i32 - 1022;
    let m = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    (m, e + adj)
}

/// Granular BitRound's explicit bits to keep for `val` and `nsd`, exactly as netCDF-C computes
/// them (`prc_bnr_xpl_rqr`, an unsigned short, decremented by one), as an `i32` of the
/// number of bits to clear for a mantissa of `mant_bits` explicit bits; `None` when netCDF-C's
/// shift would be undefined (nothing is changed then).
fn granular_zero_bits(val: f64, nsd: u8, mant_bits: i32) -> Option<i32> {
    let bit_per_dgt = std::f64::consts::LN_10 / std::f64::consts::LN_2;
    let dgt_per_bit = std::f64::consts::LN_2 / std::f64::consts::LN_10;
    let (mnt, xpn_bs2) = frexp(val);
    let mnt_fabs = mnt.abs();
    let mnt_log10_fabs = mnt_fabs.log10();
    let dgt_nbr = (xpn_bs2 as f64 * dgt_per_bit + mnt_log10_fabs).floor() as i32 + 1;
    let qnt_pwr = (bit_per_dgt * (dgt_nbr - nsd as i32) as f64).floor() as i32;
    let prc = ((xpn_bs2 as f64 - bit_per_dgt * mnt_log10_fabs).floor() as i32 - qnt_pwr)
        .unsigned_abs() as u16;
    let prc = prc.wrapping_sub(1);
    let zero = mant_bits - prc as i32;
    (0..=mant_bits).contains(&zero).then_some(zero)
}

/// Rounds the bits of a value, netCDF-C's way: add the most significant of the `zero` low bits,
/// then clear them. `None` if that would carry a finite value into infinity.
macro_rules! round_bits {
    ($bits:expr, $zero:expr, $t:ty, $exp_mask:expr) => {{
        let bits: $t = $bits;
        let zero: u32 = $zero;
        if zero == 0 {
            Some(bits)
        } else {
            let msk_zro: $t = <$t>::MAX << zero;
            let hshv: $t = !msk_zro & (msk_zro >> 1);
            let r = bits.wrapping_add(hshv) & msk_zro;
            let inf = |b: $t| b & $exp_mask == $exp_mask;
            if inf(r) && !inf(bits) {
                None
            } else {
                Some(r)
            }
        }
    }};
}

impl Quantization {
    /// `algorithm` with parameter `nsb_or_nsd` (checked against a variable's type when
    /// packing, see [`Algorithm::range`]).
    ///
    /// ```
    /// use nc3pack::quantize::{Algorithm, Quantization};
    /// assert_eq!(Quantization::new(Algorithm::BitRound, 9).nsb_or_nsd, 9);
    /// ```
    pub fn new(algorithm: Algorithm, nsb_or_nsd: u8) -> Quantization {
        Quantization {
            algorithm,
            nsb_or_nsd,
        }
    }

    /// Checks the parameter for a variable named `var` of type `t`.
    ///
    /// ```
    /// use nc3pack::{nc3::NcType, quantize::Quantization};
    /// let q: Quantization = "bitround:40".parse().unwrap();
    /// assert!(q.check("t", NcType::Double).is_ok());
    /// assert!(q.check("t", NcType::Float).is_err());
    /// assert!(q.check("n", NcType::Int).is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// [`QuantizeError::NotFloat`] for a type other than `float` and `double`,
    /// [`QuantizeError::Range`] for a parameter out of netCDF-C's range.
    pub fn check(&self, var: &str, t: NcType) -> Result<(), QuantizeError> {
        let is_double = match t {
            NcType::Float => false,
            NcType::Double => true,
            _ => {
                return Err(QuantizeError::NotFloat {
                    var: var.into(),
                    nc_type: t.name(),
                })
            }
        };
        let r = self.algorithm.range(is_double);
        if !r.contains(&self.nsb_or_nsd) {
            return Err(QuantizeError::Range {
                var: var.into(),
                nc_type: t.name(),
                quantization: *self,
                param: match self.algorithm {
                    Algorithm::BitRound => "NSB",
                    Algorithm::GranularBitRound => "NSD",
                },
                min: *r.start(),
                max: *r.end(),
            });
        }
        Ok(())
    }

    /// One `float`, quantized (not checking fill values; zeros, NaN and infinities come back
    /// unchanged).
    ///
    /// ```
    /// use nc3pack::quantize::Quantization;
    /// let q: Quantization = "bitround:1".parse().unwrap();
    /// assert_eq!(q.apply_f32(1.3), 1.5);
    /// assert_eq!(q.apply_f32(f32::INFINITY), f32::INFINITY);
    /// ```
    pub fn apply_f32(&self, x: f32) -> f32 {
        if x == 0.0 || !x.is_finite() {
            return x;
        }
        let zero = match self.algorithm {
            Algorithm::BitRound => 23 - self.nsb_or_nsd.min(23) as i32,
            Algorithm::GranularBitRound => {
                match granular_zero_bits(x as f64, self.nsb_or_nsd, 23) {
                    Some(z) => z,
                    None => return x,
                }
            }
        };
        match round_bits!(x.to_bits(), zero as u32, u32, 0x7f80_0000u32) {
            Some(b) => f32::from_bits(b),
            None => x,
        }
    }

    /// One `double`, quantized (as [`Quantization::apply_f32`]).
    ///
    /// ```
    /// use nc3pack::quantize::Quantization;
    /// let q: Quantization = "bitround:2".parse().unwrap();
    /// assert_eq!(q.apply_f64(1.1), 1.0);
    /// ```
    pub fn apply_f64(&self, x: f64) -> f64 {
        if x == 0.0 || !x.is_finite() {
            return x;
        }
        let zero = match self.algorithm {
            Algorithm::BitRound => 52 - self.nsb_or_nsd.min(52) as i32,
            Algorithm::GranularBitRound => match granular_zero_bits(x, self.nsb_or_nsd, 52) {
                Some(z) => z,
                None => return x,
            },
        };
        match round_bits!(x.to_bits(), zero as u32, u64, 0x7ff0_0000_0000_0000u64) {
            Some(b) => f64::from_bits(b),
            None => x,
        }
    }

    /// Quantizes big-endian values of type `t` (`float` or `double`; other types are left
    /// alone) in place, keeping what `keep` keeps.
    ///
    /// ```
    /// use nc3pack::{nc3::NcType, quantize::{Keep, Quantization}};
    /// let q: Quantization = "bitround:1".parse().unwrap();
    /// let mut b = [1.3f32.to_be_bytes(), 1.3f32.to_be_bytes()].concat();
    /// q.apply_be(NcType::Float, &mut b, &Keep { fill: vec![1.3f32 as f64] });
    /// assert_eq!(f32::from_be_bytes(b[..4].try_into().unwrap()), 1.3);
    /// ```
    pub fn apply_be(&self, t: NcType, bytes: &mut [u8], keep: &Keep) {
        match t {
            NcType::Float => {
                for c in bytes.chunks_exact_mut(4) {
                    let x = f32::from_be_bytes([c[0], c[1], c[2], c[3]]);
                    if !keep.keeps_f32(x) {
                        c.copy_from_slice(&self.apply_f32(x).to_be_bytes());
                    }
                }
            }
            NcType::Double => {
                for c in bytes.chunks_exact_mut(8) {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(c);
                    let x = f64::from_be_bytes(a);
                    if !keep.keeps(x) {
                        c.copy_from_slice(&self.apply_f64(x).to_be_bytes());
                    }
                }
            }
            _ => {}
        }
    }
}

/// What a file's header says of its quantization: the quantized variables and how (from
/// netCDF-C's attributes, else CF's `quantization` attribute and its quantization variable),
/// and the original file's hash and length (from [`ORIGINAL_ATTR`]) when nc3pack made it.
///
/// ```
/// let bytes = std::fs::read("samples/gridded_sst.nc").unwrap();
/// let h = nc3pack::nc3::Header::parse(&bytes, bytes.len() as u64).unwrap();
/// assert!(nc3pack::quantize::Lossy::of(&h).is_none()); // a lossless file
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lossy {
    /// Quantized variables: id, name, quantization.
    pub vars: Vec<(usize, String, Quantization)>,
    /// The original file's xxh3-128 and length, if recorded.
    pub original: Option<(u128, u64)>,
}

fn int_attr(v: &Var<'_>, name: &str) -> Option<u8> {
    let a = v.attrs().find(|a| a.name() == name)?;
    let x = values_f64(&a.values()).first().copied()?;
    (1.0..=255.0).contains(&x).then_some(x as u8)
}

fn text_attr<'h>(attrs: impl Iterator<Item = crate::nc3::Attr<'h>>, name: &str) -> Option<String> {
    attrs
        .filter(|a| a.name() == name && a.nc_type() == NcType::Char)
        .map(|a| {
            String::from_utf8_lossy(a.be_bytes())
                .trim_end_matches('\0')
                .to_string()
        })
        .next()
}

impl Lossy {
    /// The quantization recorded in `h`; `None` when it records none.
    ///
    /// ```
    /// let bytes = std::fs::read("samples/scalars.nc").unwrap();
    /// let h = nc3pack::nc3::Header::parse(&bytes, bytes.len() as u64).unwrap();
    /// assert_eq!(nc3pack::quantize::Lossy::of(&h), None);
    /// ```
    pub fn of(h: &crate::nc3::Header) -> Option<Lossy> {
        let mut vars = Vec::new();
        for v in h.vars() {
            let q = if let Some(n) = int_attr(&v, BITROUND_ATTR) {
                Some(Quantization::new(Algorithm::BitRound, n))
            } else if let Some(n) = int_attr(&v, GRANULARBR_ATTR) {
                Some(Quantization::new(Algorithm::GranularBitRound, n))
            } else {
                text_attr(v.attrs(), "quantization")
                    .and_then(|c| h.var_id(&c))
                    .and_then(|c| text_attr(h.var(c).attrs(), "algorithm"))
                    .and_then(|alg| match alg.to_ascii_lowercase().as_str() {
                        "bitround" => int_attr(&v, "quantization_nsb")
                            .map(|n| Quantization::new(Algorithm::BitRound, n)),
                        "granular_bitround" => int_attr(&v, "quantization_nsd")
                            .map(|n| Quantization::new(Algorithm::GranularBitRound, n)),
                        _ => None,
                    })
            };
            if let Some(q) = q {
                vars.push((v.id(), v.name().to_string(), q));
            }
        }
        let original = text_attr(h.global_attrs(), ORIGINAL_ATTR).and_then(|t| {
            let (hash, len) = t.split_once(' ')?;
            Some((
                u128::from_str_radix(hash, 16).ok()?,
                len.trim().parse().ok()?,
            ))
        });
        (!vars.is_empty() || original.is_some()).then_some(Lossy { vars, original })
    }
}

impl fmt::Display for Lossy {
    /// `sst bitround:7, d granularbr:5; original xxh3-128 <hex>, <n> bytes`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let vars: Vec<String> = self
            .vars
            .iter()
            .map(|(_, n, q)| format!("{n} {q}"))
            .collect();
        write!(
            f,
            "quantized: {}",
            if vars.is_empty() {
                "none".into()
            } else {
                vars.join(", ")
            }
        )?;
        if let Some((h, n)) = self.original {
            write!(f, "; original xxh3-128 {h:032x}, {n} bytes")?;
        }
        Ok(())
    }
}

/// How a lossy archive's data compares with the original file (`verify --against`).
///
/// ```
/// let r = nc3pack::quantize::LossyComparison::default();
/// assert!(r.vars.is_empty() && r.others_equal);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct LossyComparison {
    /// Whether the original's xxh3-128 and length are the ones the archive records.
    pub original_recorded: bool,
    /// Per quantized variable: the largest error.
    pub vars: Vec<VarError>,
    /// Whether every other variable of the original is equal, byte for byte, in the archive.
    pub others_equal: bool,
    /// The variables that differ though not quantized.
    pub differing: Vec<String>,
}

impl Default for LossyComparison {
    fn default() -> Self {
        LossyComparison {
            original_recorded: false,
            vars: Vec::new(),
            others_equal: true,
            differing: Vec::new(),
        }
    }
}

/// The largest error of one quantized variable against the original.
///
/// ```
/// let e = nc3pack::quantize::VarError { name: "t".into(), quantization: "bitround:3".parse().unwrap(),
///     max_abs: 0.5, max_rel: 0.01, subnormal: 0, kept_changed: 0, within_bound: true,
///     moved_outside_valid: vec![] };
/// assert!(e.within_bound);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct VarError {
    /// The variable.
    pub name: String,
    /// Its quantization.
    pub quantization: Quantization,
    /// Largest absolute error.
    pub max_abs: f64,
    /// Largest relative error, over every value quantization may change (finite, nonzero,
    /// not a fill value): subnormal values included, whose relative error can reach 1 (a
    /// subnormal rounded to 0).
    pub max_rel: f64,
    /// Subnormal values compared (nonzero, below the type's least normal value), whose
    /// relative error is not bounded as the normal values' is (see `within_bound`).
    pub subnormal: u64,
    /// Values that must be kept (fill, NaN, infinities) but differ.
    pub kept_changed: u64,
    /// Whether every value is within the algorithm's bound and nothing kept changed.
    /// BitRound: an absolute error at most 2^-(NSB+1) times the value, or times the least
    /// normal value for a subnormal value. Granular BitRound: half a unit in the NSD-th
    /// significant digit, for normal values; subnormal values are not held to a bound
    /// (netCDF-C's algorithm keeps fewer digits of them, down to none: rounded to 0).
    pub within_bound: bool,
    /// Values the quantization moved from inside the variable's valid range (`valid_range`,
    /// else `valid_min` and `valid_max`) to outside it: netCDF readers take them as missing.
    /// Not a failure: netCDF-C's quantization does the same.
    pub moved_outside_valid: Vec<MovedOutside>,
}

// The errors are maxima that start at 0 and skip NaN (`f64::max`), never NaN: equality is
// reflexive.
impl Eq for VarError {}
impl Eq for LossyComparison {}

impl VarError {
    /// Compares big-endian values of type `t`: `orig` against `quant`, keeping what `keep` keeps.
    pub(crate) fn compare(
        name: &str,
        q: Quantization,
        t: NcType,
        (orig, quant): (&[u8], &[u8]),
        keep: &Keep,
        valid: Option<ValidRange>,
    ) -> VarError {
        let mut e = VarError {
            name: name.into(),
            quantization: q,
            max_abs: 0.0,
            max_rel: 0.0,
            subnormal: 0,
            kept_changed: 0,
            within_bound: orig.len() == quant.len(),
            moved_outside_valid: Vec::new(),
        };
        let esize = t.size();
        let least_normal = match t {
            NcType::Float => f32::MIN_POSITIVE as f64,
            _ => f64::MIN_POSITIVE,
        };
        let mut moved = valid.map(MovedCount::new);
        let mut out_of_bound = false;
        for (a, b) in orig.chunks_exact(esize).zip(quant.chunks_exact(esize)) {
            let (x, y, normal) = match t {
                NcType::Float => {
                    let x = f32::from_be_bytes([a[0], a[1], a[2], a[3]]);
                    let y = f32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                    (x as f64, y as f64, x.is_normal())
                }
                _ => {
                    let mut ab = [0u8; 8];
                    ab.copy_from_slice(a);
                    let mut bb = [0u8; 8];
                    bb.copy_from_slice(b);
                    let x = f64::from_be_bytes(ab);
                    (x, f64::from_be_bytes(bb), x.is_normal())
                }
            };
            if keep.keeps(x) || x.is_infinite() || x == 0.0 {
                if a != b {
                    e.kept_changed += 1;
                }
                continue;
            }
            if let Some(m) = &mut moved {
                m.count(x, y);
            }
            let abs = (y - x).abs();
            e.max_abs = e.max_abs.max(abs);
            e.max_rel = e.max_rel.max(abs / x.abs());
            if !normal {
                e.subnormal += 1;
            }
            let bound = match q.algorithm {
                Algorithm::BitRound => {
                    x.abs().max(least_normal) * 2f64.powi(-(q.nsb_or_nsd as i32) - 1)
                }
                Algorithm::GranularBitRound if normal => {
                    10f64.powi(x.abs().log10().floor() as i32 + 1 - q.nsb_or_nsd as i32) / 2.0
                }
                Algorithm::GranularBitRound => f64::INFINITY,
            };
            out_of_bound |= abs > bound;
        }
        e.within_bound &= !out_of_bound && e.kept_changed == 0;
        e.moved_outside_valid = moved.map_or_else(Vec::new, |m| m.finish(name, q));
        e
    }
}

/// A variable's valid range as netCDF readers take it: `valid_range` (two values), else
/// `valid_min` and `valid_max` (either or both), the attributes' values as numbers (NaN
/// values ignored).
///
/// ```
/// use nc3pack::quantize::ValidRange;
/// let bytes = std::fs::read("samples/gridded_sst.nc").unwrap();
/// let h = nc3pack::nc3::Header::parse(&bytes, bytes.len() as u64).unwrap();
/// let sst = h.var(h.var_id("sst").unwrap());
/// let r = ValidRange { from_valid_range: false, min: Some(268.0), max: Some(310.0) };
/// assert_eq!(ValidRange::of(sst), Some(r)); // its valid_min and valid_max
/// assert!(r.contains(310.0) && !r.contains(312.0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ValidRange {
    /// Whether the bounds are `valid_range`'s (else `valid_min`'s and `valid_max`'s).
    pub from_valid_range: bool,
    /// Least valid value, if bounded below.
    pub min: Option<f64>,
    /// Greatest valid value, if bounded above.
    pub max: Option<f64>,
}

// NaN attribute values are never taken as bounds: equality is reflexive.
impl Eq for ValidRange {}

impl ValidRange {
    /// The valid range of `v`, if it has one.
    ///
    /// ```
    /// let bytes = std::fs::read("samples/gridded_sst.nc").unwrap();
    /// let h = nc3pack::nc3::Header::parse(&bytes, bytes.len() as u64).unwrap();
    /// let lat = h.var(h.var_id("lat").unwrap());
    /// assert_eq!(nc3pack::quantize::ValidRange::of(lat), None); // it has none
    /// ```
    pub fn of(v: Var<'_>) -> Option<ValidRange> {
        let values = |name: &str| {
            v.attrs()
                .find(|a| a.name() == name)
                .map(|a| values_f64(&a.values()))
        };
        let one = |name: &str| {
            values(name)
                .and_then(|x| x.first().copied())
                .filter(|x| !x.is_nan())
        };
        let r = match values("valid_range") {
            Some(r) if r.len() == 2 => ValidRange {
                from_valid_range: true,
                min: Some(r[0]).filter(|x| !x.is_nan()),
                max: Some(r[1]).filter(|x| !x.is_nan()),
            },
            _ => ValidRange {
                from_valid_range: false,
                min: one("valid_min"),
                max: one("valid_max"),
            },
        };
        (r.min.is_some() || r.max.is_some()).then_some(r)
    }

    /// Whether `x` is valid: neither below the least nor above the greatest valid value.
    ///
    /// ```
    /// let r = nc3pack::quantize::ValidRange { from_valid_range: false, min: Some(1.5), max: None };
    /// assert!(r.contains(1.5) && !r.contains(1.0) && !r.contains(f64::NAN));
    /// ```
    pub fn contains(&self, x: f64) -> bool {
        !x.is_nan() && self.min.is_none_or(|m| x >= m) && self.max.is_none_or(|m| x <= m)
    }
}

/// Values quantization moved from inside a variable's valid range to outside it (netCDF
/// readers take them as missing), for one attribute: `valid_range`, or `valid_min` (moved
/// below it) or `valid_max` (moved above it).
///
/// ```
/// use nc3pack::quantize::MovedOutside;
/// let m = MovedOutside { var: "t".into(), quantization: "bitround:3".parse().unwrap(),
///     attr: "valid_range", min: Some(0.0), max: Some(100.0), count: 2 };
/// assert_eq!(m.to_string(), r#"variable "t": bitround:3 moved 2 values outside valid_range [0, 100]"#);
/// assert_eq!(m.outside(), "2 values moved outside valid_range [0, 100]");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct MovedOutside {
    /// The variable.
    pub var: String,
    /// Its quantization.
    pub quantization: Quantization,
    /// The attribute: `valid_range`, `valid_min` or `valid_max`.
    pub attr: &'static str,
    /// Its least valid value (`valid_range`'s first, `valid_min`).
    pub min: Option<f64>,
    /// Its greatest valid value (`valid_range`'s second, `valid_max`).
    pub max: Option<f64>,
    /// How many values.
    pub count: u64,
}

// Bounds are never NaN (see `ValidRange::of`): equality is reflexive.
impl Eq for MovedOutside {}

impl MovedOutside {
    /// `N values moved outside ATTR VALUE`.
    ///
    /// ```
    /// use nc3pack::quantize::MovedOutside;
    /// let m = MovedOutside { var: "d".into(), quantization: "bitround:2".parse().unwrap(),
    ///     attr: "valid_min", min: Some(1.1), max: None, count: 1 };
    /// assert_eq!(m.outside(), "1 values moved outside valid_min 1.1");
    /// ```
    pub fn outside(&self) -> String {
        format!(
            "{} values moved outside {}",
            self.count,
            self.attr_and_bounds()
        )
    }

    /// `valid_range [MIN, MAX]`, `valid_min MIN` or `valid_max MAX`.
    fn attr_and_bounds(&self) -> String {
        let bound = |b: Option<f64>| b.map_or_else(|| "-".to_string(), |b| b.to_string());
        match self.attr {
            "valid_min" => format!("valid_min {}", bound(self.min)),
            "valid_max" => format!("valid_max {}", bound(self.max)),
            a => format!("{a} [{}, {}]", bound(self.min), bound(self.max)),
        }
    }
}

impl fmt::Display for MovedOutside {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "variable {:?}: {} moved {} values outside {}",
            self.var,
            self.quantization,
            self.count,
            self.attr_and_bounds()
        )
    }
}

/// Counts the values quantization moves out of a valid range.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MovedCount {
    range: ValidRange,
    below: u64,
    above: u64,
}

impl MovedCount {
    pub(crate) fn new(range: ValidRange) -> Self {
        MovedCount {
            range,
            below: 0,
            above: 0,
        }
    }

    /// Counts `x` quantized to `y` if `x` is valid and `y` is not.
    pub(crate) fn count(&mut self, x: f64, y: f64) {
        if self.range.contains(x) && !self.range.contains(y) {
            if self.range.min.is_some_and(|m| y < m) {
                self.below += 1;
            } else {
                self.above += 1;
            }
        }
    }

    /// What was counted, for variable `var` quantized with `q`: one entry for `valid_range`,
    /// else one for `valid_min` and one for `valid_max`; none with no value.
    pub(crate) fn finish(&self, var: &str, q: Quantization) -> Vec<MovedOutside> {
        let r = self.range;
        let entry = |attr, count| MovedOutside {
            var: var.to_string(),
            quantization: q,
            attr,
            min: r.min,
            max: r.max,
            count,
        };
        let all = if r.from_valid_range {
            vec![entry("valid_range", self.below + self.above)]
        } else {
            vec![
                entry("valid_min", self.below),
                entry("valid_max", self.above),
            ]
        };
        all.into_iter().filter(|m| m.count > 0).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// BitRound keeps every value within 2^-(NSB+1) relative error, for every NSB, over a
    /// spread of magnitudes (hand bound, not our output).
    #[test]
    fn bitround_bound() {
        for nsb in 1..=23u8 {
            let q = Quantization::new(Algorithm::BitRound, nsb);
            let mut x = 1.0e-30f32;
            for k in 0..4000 {
                let v = if k % 2 == 0 { x } else { -x };
                let r = q.apply_f32(v);
                let err = ((r as f64 - v as f64) / v as f64).abs();
                assert!(err <= 2f64.powi(-(nsb as i32 + 1)), "{v} -> {r} nsb {nsb}");
                // Only NSB explicit bits may remain.
                assert_eq!(r.to_bits() & ((1u32 << (23 - nsb)) - 1), 0);
                x *= 1.037;
            }
        }
        for nsb in [1u8, 10, 30, 52] {
            let q = Quantization::new(Algorithm::BitRound, nsb);
            let mut x = 1.0e-300f64;
            for _ in 0..20000 {
                let r = q.apply_f64(x);
                assert!(((r - x) / x).abs() <= 2f64.powi(-(nsb as i32 + 1)));
                x *= 1.037;
            }
        }
    }

    /// Hand-worked BitRound cases: halfway rounds up in magnitude (netCDF-C adds half a unit).
    #[test]
    fn bitround_by_hand() {
        let q = Quantization::new(Algorithm::BitRound, 2);
        // 1.125 = 1.001b, halfway between 1.00b and 1.01b: netCDF-C rounds up to 1.25.
        assert_eq!(q.apply_f32(1.125), 1.25);
        assert_eq!(q.apply_f32(-1.125), -1.25);
        assert_eq!(q.apply_f32(1.124), 1.0);
        assert_eq!(q.apply_f32(1.875), 2.0); // carries into the exponent
        assert_eq!(q.apply_f64(1.875), 2.0);
        // Near the largest float, rounding would give infinity: kept instead.
        assert_eq!(q.apply_f32(f32::MAX), f32::MAX);
        assert_eq!(q.apply_f64(f64::MAX), f64::MAX);
    }

    #[test]
    fn frexp_matches_definition() {
        for x in [
            1.0,
            0.75,
            -3.0,
            1e-310,
            5e-324,
            1e300,
            f32::MIN_POSITIVE as f64 / 8.0,
        ] {
            let (m, e) = frexp(x);
            assert!((0.5..1.0).contains(&m.abs()), "{x}");
            assert_eq!(m * 2f64.powi(e), x);
        }
    }

    /// Granular BitRound keeps NSD significant digits: the error is at most half a unit in the
    /// NSD-th digit.
    #[test]
    fn granular_keeps_digits() {
        for nsd in 1..=6u8 {
            let q = Quantization::new(Algorithm::GranularBitRound, nsd);
            let mut x = 1.0e-20f64;
            for _ in 0..3000 {
                let v = x as f32;
                let r = q.apply_f32(v) as f64;
                let unit = 10f64.powi((v as f64).abs().log10().floor() as i32 + 1 - nsd as i32);
                assert!((r - v as f64).abs() <= unit / 2.0, "{v} -> {r} nsd {nsd}");
                x *= 1.041;
            }
        }
    }

    #[test]
    fn rules_parse() {
        let r: QuantizeRule = "u,v = granularbr:4".parse().unwrap();
        assert_eq!(r.vars, "u,v".parse().unwrap());
        assert_eq!(
            r.quantization,
            Quantization::new(Algorithm::GranularBitRound, 4)
        );
        for bad in [
            "u",
            "=bitround:3",
            "u=round:3",
            "u=bitround:",
            "u=bitround:300",
        ] {
            assert!(bad.parse::<QuantizeRule>().is_err(), "{bad}");
        }
    }
}
