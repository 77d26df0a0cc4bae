//! The JSON scanner a rerun reads manifest lines with: only the fields [`super::Done`]
//! needs, borrowed from the line, every other field skipped unread.

use serde_json::Value;

/// The fields of a manifest line a rerun needs, borrowed from the line where they can be (a
/// string without escapes); every other field is skipped unread.
#[derive(Debug, Default, PartialEq)]
pub(super) struct DoneFields<'a> {
    pub(super) status: Option<Text<'a>>,
    pub(super) name: Option<Text<'a>>,
    pub(super) name_hex: Option<Text<'a>>,
    pub(super) size: Option<u64>,
    pub(super) mtime_ns: Option<i64>,
    pub(super) xxh3: Option<Text<'a>>,
    pub(super) output_size: Option<u64>,
    pub(super) restored_size: Option<u64>,
    pub(super) restored_xxh3: Option<Text<'a>>,
    pub(super) output_ino: Option<u64>,
    pub(super) output_ctime_ns: Option<i64>,
}

/// A JSON string, borrowed from the line when it has no escapes.
#[derive(Debug, PartialEq)]
pub(super) struct Text<'a>(pub(super) std::borrow::Cow<'a, str>);

impl<'de> serde_core::Deserialize<'de> for Text<'de> {
    fn deserialize<D: serde_core::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde_core::de::Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Text<'de>, E> {
                Ok(Text(v.into()))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Text<'de>, E> {
                Ok(Text(v.to_owned().into()))
            }
            fn visit_string<E>(self, v: String) -> std::result::Result<Text<'de>, E> {
                Ok(Text(v.into()))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> serde_core::Deserialize<'de> for DoneFields<'de> {
    fn deserialize<D: serde_core::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde_core::de::Visitor<'de> for V {
            type Value = DoneFields<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a manifest line (a JSON object)")
            }
            fn visit_map<A: serde_core::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<DoneFields<'de>, A::Error> {
                let mut f = DoneFields::default();
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    match &*key.0 {
                        "status" => f.status = Some(map.next_value()?),
                        "name" => f.name = Some(map.next_value()?),
                        "name_hex" => f.name_hex = Some(map.next_value()?),
                        "xxh3" => f.xxh3 = Some(map.next_value()?),
                        "restored_xxh3" => f.restored_xxh3 = Some(map.next_value()?),
                        // Numbers of another kind (or not numbers) are not recorded ones.
                        "size" => f.size = map.next_value::<Value>()?.as_u64(),
                        "mtime_ns" => f.mtime_ns = map.next_value::<Value>()?.as_i64(),
                        "output_size" => f.output_size = map.next_value::<Value>()?.as_u64(),
                        "restored_size" => f.restored_size = map.next_value::<Value>()?.as_u64(),
                        "output_ino" => f.output_ino = map.next_value::<Value>()?.as_u64(),
                        "output_ctime_ns" => {
                            f.output_ctime_ns = map.next_value::<Value>()?.as_i64();
                        }
                        _ => {
                            map.next_value::<serde_core::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(f)
            }
        }
        d.deserialize_map(V)
    }
}

/// [`DoneFields`] of a line by a plain scan, for the lines a batch writes (a flat object of
/// strings without escapes, integers and other numbers, `true`, `false` and `null`): what
/// serde_json reads from such a line, in a fraction of the time (a rerun reads a line per
/// file). `None` when the line has anything else (an escape, a nested value, a number of
/// another form where a size or time is read, bytes that are not UTF-8, a syntax error):
/// serde_json reads it then, so every line reads as serde_json would read it.
pub(super) fn scan_done_fields(line: &[u8]) -> Option<DoneFields<'_>> {
    let text = std::str::from_utf8(line).ok()?;
    let b = text.as_bytes();
    // No control character anywhere (tabs between fields neither): strings end at the first
    // quote or backslash. Other lines are serde_json's to read.
    if !b.iter().fold(true, |ok, &c| ok & (c >= 0x20)) {
        return None;
    }
    let mut at = 0;
    let ws = |at: &mut usize| {
        while b
            .get(*at)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            *at += 1;
        }
    };
    // A string without escapes or control characters, from the quote at `at`.
    let string = |at: &mut usize| -> Option<&str> {
        if b.get(*at) != Some(&b'"') {
            return None;
        }
        let start = *at + 1;
        let len = memchr::memchr2(b'"', b'\\', &b[start..])?;
        if b[start + len] != b'"' {
            return None;
        }
        *at = start + len + 1;
        Some(&text[start..start + len])
    };
    let mut f = DoneFields::default();
    ws(&mut at);
    if b.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    ws(&mut at);
    if b.get(at) == Some(&b'}') {
        at += 1;
    } else {
        loop {
            let key = string(&mut at)?;
            ws(&mut at);
            if b.get(at) != Some(&b':') {
                return None;
            }
            at += 1;
            ws(&mut at);
            match b.get(at)? {
                b'"' => f.set_string(key, Text(string(&mut at)?.into())),
                b'-' | b'0'..=b'9' => f.set_number(key, number(text, &mut at)?)?,
                c => {
                    let word: &[u8] = match c {
                        b't' => b"true",
                        b'f' => b"false",
                        b'n' => b"null",
                        _ => return None,
                    };
                    if !b[at..].starts_with(word) {
                        return None;
                    }
                    at += word.len();
                    f.set_word(key)?;
                }
            }
            ws(&mut at);
            match b.get(at)? {
                b',' => {
                    at += 1;
                    ws(&mut at);
                }
                b'}' => {
                    at += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    ws(&mut at);
    (at == b.len()).then_some(f)
}

/// A JSON number's text in `text` (its grammar checked), from `at`.
fn number<'a>(text: &'a str, at: &mut usize) -> Option<&'a str> {
    let b = text.as_bytes();
    let start = *at;
    let digits = |at: &mut usize| {
        let from = *at;
        while b.get(*at).is_some_and(u8::is_ascii_digit) {
            *at += 1;
        }
        *at > from
    };
    if b.get(*at) == Some(&b'-') {
        *at += 1;
    }
    if b.get(*at) == Some(&b'0') {
        *at += 1;
    } else if !digits(at) {
        return None;
    }
    if b.get(*at) == Some(&b'.') {
        *at += 1;
        if !digits(at) {
            return None;
        }
    }
    if matches!(b.get(*at), Some(b'e' | b'E')) {
        *at += 1;
        if matches!(b.get(*at), Some(b'+' | b'-')) {
            *at += 1;
        }
        if !digits(at) {
            return None;
        }
    }
    Some(&text[start..*at])
}

/// An integer written plainly (no sign, fraction or exponent; `0` alone or no leading zero),
/// as serde_json reads it into a u64 or i64; anything else is left to serde_json.
fn plain(n: &str) -> Option<u64> {
    let digits = n.strip_prefix('-').unwrap_or(n);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    if digits.len() > 1 && digits.starts_with('0') || n == "-0" {
        return None;
    }
    digits.parse().ok()
}

impl<'a> DoneFields<'a> {
    /// Takes a string value of field `key`.
    fn set_string(&mut self, key: &str, s: Text<'a>) {
        match key {
            "status" => self.status = Some(s),
            "name" => self.name = Some(s),
            "name_hex" => self.name_hex = Some(s),
            "xxh3" => self.xxh3 = Some(s),
            "restored_xxh3" => self.restored_xxh3 = Some(s),
            // A string where a number is read: not a recorded one.
            "size" => self.size = None,
            "mtime_ns" => self.mtime_ns = None,
            "output_size" => self.output_size = None,
            "restored_size" => self.restored_size = None,
            "output_ino" => self.output_ino = None,
            "output_ctime_ns" => self.output_ctime_ns = None,
            _ => {}
        }
    }

    /// Takes a number value `n` (its text) of field `key`; `None` when serde_json would fail
    /// the line or read it otherwise.
    fn set_number(&mut self, key: &str, n: &str) -> Option<()> {
        let unsigned = || plain(n).filter(|_| !n.starts_with('-'));
        let signed = || {
            let v = plain(n)?;
            if n.starts_with('-') {
                0i64.checked_sub_unsigned(v)
            } else {
                i64::try_from(v).ok()
            }
        };
        match key {
            "size" => self.size = Some(unsigned()?),
            "mtime_ns" => self.mtime_ns = Some(signed()?),
            "output_size" => self.output_size = Some(unsigned()?),
            "output_ino" => self.output_ino = Some(unsigned()?),
            "output_ctime_ns" => self.output_ctime_ns = Some(signed()?),
            "restored_size" => self.restored_size = Some(unsigned()?),
            // A number where a string is read: serde_json fails the line.
            "status" | "name" | "name_hex" | "xxh3" | "restored_xxh3" => return None,
            _ => {}
        }
        Some(())
    }

    /// Takes `true`, `false` or `null` as the value of field `key`; `None` when serde_json
    /// would fail the line.
    fn set_word(&mut self, key: &str) -> Option<()> {
        match key {
            "status" | "name" | "name_hex" | "xxh3" | "restored_xxh3" => return None,
            "size" => self.size = None,
            "mtime_ns" => self.mtime_ns = None,
            "output_size" => self.output_size = None,
            "restored_size" => self.restored_size = None,
            "output_ino" => self.output_ino = None,
            "output_ctime_ns" => self.output_ctime_ns = None,
            _ => {}
        }
        Some(())
    }
}
