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
    let bytes = crate::percent::decode(rest).ok_or_else(|| RemoteError::InvalidUrl {
        why: "bad percent-encoding".into(),
    })?;
    use std::os::unix::ffi::OsStringExt;
    Ok(std::ffi::OsString::from_vec(bytes).into())
}
