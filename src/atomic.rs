//! Output files that appear complete or not at all.

use crate::error::{io_err, Error, Result};
use std::fs::File;
use std::path::Path;

/// Writes `output` through `write`, into a temporary file in the same directory that is synced and
/// renamed over `output` only if `write` succeeds. On any error nothing is left at `output` (an
/// existing file there is untouched) and the temporary file is removed. Refuses an existing
/// `output` unless `force`, and refuses to overwrite `protect` (the input) in any case. The output
/// gets `protect`'s permission bits.
pub fn write_atomically<T>(
    output: &Path,
    force: bool,
    protect: &Path,
    write: impl FnOnce(&mut File) -> Result<T>,
) -> Result<T> {
    if let Ok(meta) = std::fs::metadata(output) {
        if !force {
            return Err(Error::OutputExists {
                path: output.to_path_buf(),
            });
        }
        if is_same_file(output, protect) {
            return Err(Error::Refused {
                path: output.to_path_buf(),
                what: "output is the input file; refusing to overwrite it".into(),
            });
        }
        if meta.is_dir() {
            return Err(Error::Refused {
                path: output.to_path_buf(),
                what: "output is a directory".into(),
            });
        }
    }
    let dir = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".nc3pack-")
        .suffix(".part")
        .tempfile_in(dir)
        .map_err(io_err(output, "create temporary file"))?;
    // Like gzip, give the output the input's permission bits (the temporary file is 0600).
    if let Ok(meta) = std::fs::metadata(protect) {
        tmp.as_file()
            .set_permissions(meta.permissions())
            .map_err(io_err(output, "set permissions"))?;
    }
    let value = write(tmp.as_file_mut())?;
    tmp.as_file().sync_all().map_err(io_err(output, "sync"))?;
    let persisted = if force {
        tmp.persist(output).map_err(|e| e.error)
    } else {
        tmp.persist_noclobber(output).map_err(|e| e.error)
    };
    persisted.map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            Error::OutputExists {
                path: output.to_path_buf(),
            }
        } else {
            io_err(output, "rename")(e)
        }
    })?;
    Ok(value)
}

fn is_same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}
