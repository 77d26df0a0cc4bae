//! The list of [`super::CollectionOptions::with_files_from`]: one path a line.

use crate::{Error, Result};
use std::io::BufRead;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

/// The lines of `list` (`-`: standard input; none without a list), empty ones skipped and a
/// line's final CR dropped, read as they are needed.
///
/// # Errors
///
/// [`Error::Io`] when the list cannot be opened; a line that cannot be read is an `Err` item.
pub(super) fn lines(list: Option<&Path>) -> Result<Box<dyn Iterator<Item = Result<PathBuf>>>> {
    let Some(list) = list else {
        return Ok(Box::new(std::iter::empty()));
    };
    let reader: Box<dyn BufRead> = if list.as_os_str() == "-" {
        Box::new(std::io::BufReader::new(std::io::stdin()))
    } else {
        let f = std::fs::File::open(list).map_err(|source| Error::Io {
            path: list.to_path_buf(),
            op: "open",
            source,
        })?;
        Box::new(std::io::BufReader::new(f))
    };
    let list = list.to_path_buf();
    Ok(Box::new(reader.split(b'\n').filter_map(
        move |line| match line {
            Ok(l) if l.is_empty() || l == b"\r" => None,
            // A list written on Windows: its lines end in CR LF.
            Ok(mut l) => {
                if l.last() == Some(&b'\r') {
                    l.pop();
                }
                Some(Ok(PathBuf::from(std::ffi::OsString::from_vec(l))))
            }
            Err(source) => Some(Err(Error::Io {
                path: list.clone(),
                op: "read",
                source,
            })),
        },
    )))
}
