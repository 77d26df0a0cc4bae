//! Printing values read by `nc3pack slice`: ncdump-like text, JSON, or raw native bytes.

use crate::nc3::Values;
use serde_json::{json, Value};

/// Formats `values` of variable `name` with result shape `shape` like the data section of
/// `ncdump -v`: `name =` then one line per row of the last dimension, values separated by
/// `, `, rows by `,` and a final ` ;`. Char data prints as one quoted string per row, trailing
/// NULs removed.
///
/// ```
/// use nc3pack::{dump::to_text, nc3::Values};
/// let t = to_text("v", &[2, 2], &Values::Short(vec![1, 2, 3, 4]));
/// assert_eq!(t, " v =\n  1, 2,\n  3, 4 ;\n");
/// ```
pub fn to_text(name: &str, shape: &[u64], values: &Values) -> String {
    let row = shape.last().copied().unwrap_or(1).max(1) as usize;
    let rows: Vec<String> = match values {
        Values::Char(c) => c.chunks(row).map(quote_chars).collect(),
        _ => {
            let items = items(values);
            items.chunks(row).map(|r| r.join(", ")).collect()
        }
    };
    if rows.is_empty() {
        return format!(" {name} = ;\n");
    }
    format!(" {name} =\n  {} ;\n", rows.join(",\n  "))
}

fn quote_chars(c: &[u8]) -> String {
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

fn items(values: &Values) -> Vec<String> {
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
        Values::Float(v) => v
            .iter()
            .map(|&x| g(f64::from(x), x.to_string(), format!("{x:e}")))
            .collect(),
        Values::Double(v) => v
            .iter()
            .map(|&x| g(x, x.to_string(), format!("{x:e}")))
            .collect(),
    }
}

/// Like C's `%g`: plain notation for moderate magnitudes, exponent notation (`1e30`) for very
/// large or small ones; both are the shortest text that reads back to the same value.
fn g(x: f64, plain: String, exp: String) -> String {
    let a = x.abs();
    if a != 0.0 && a.is_finite() && !(1e-5..1e15).contains(&a) {
        exp
    } else {
        plain
    }
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
    fn ne<T: bytemuck::Pod>(v: &[T]) -> Vec<u8> {
        bytemuck::cast_slice(v).to_vec()
    }
    match values {
        Values::Byte(v) => ne(v),
        Values::Char(v) | Values::UByte(v) => v.clone(),
        Values::Short(v) => ne(v),
        Values::UShort(v) => ne(v),
        Values::Int(v) => ne(v),
        Values::UInt(v) => ne(v),
        Values::Int64(v) => ne(v),
        Values::UInt64(v) => ne(v),
        Values::Float(v) => ne(v),
        Values::Double(v) => ne(v),
    }
}
