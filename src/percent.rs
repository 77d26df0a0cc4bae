//! Percent-decoding of URL paths (`%XX` escapes), for `file://` URLs and the HTTP server's
//! request paths.

/// `s` with its `%XX` escapes decoded; `None` when an escape is malformed.
pub(crate) fn decode(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_are_decoded_and_malformed_ones_refused() {
        assert_eq!(super::decode("a%20b%2F").as_deref(), Some(&b"a b/"[..]));
        assert_eq!(super::decode("100%"), None);
        assert_eq!(super::decode("%zz"), None);
        assert_eq!(super::decode("%e2%82%ac").as_deref(), Some("€".as_bytes()));
    }
}
