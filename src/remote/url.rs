//! The local path of a `file://` URL (telling URLs from paths: [`crate::is_url`]).

use crate::error::RemoteError;

/// The local path of a `file://` URL (`file:///abs/path` or `file://localhost/abs/path`,
/// percent-decoded).
pub(crate) fn file_url_path(url: &str) -> std::result::Result<std::path::PathBuf, RemoteError> {
    let rest = &url["file://".len()..];
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return Err(RemoteError::InvalidUrl {
            why: "a file:// URL needs an absolute path (file:///path/to/file)".into(),
        });
    }
    let bytes = percent_decode(rest).ok_or_else(|| RemoteError::InvalidUrl {
        why: "bad percent-encoding".into(),
    })?;
    use std::os::unix::ffi::OsStringExt;
    Ok(std::ffi::OsString::from_vec(bytes).into())
}

fn percent_decode(s: &str) -> Option<Vec<u8>> {
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
