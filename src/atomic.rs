//! Output files that appear complete or not at all: written to a temporary file beside the
//! destination, made durable, then renamed into place.

use crate::error::{io_err, Error, Result};
use std::fs::File;
use std::path::{Path, PathBuf};

/// A finished temporary file waiting to be renamed over its output.
pub struct Pending {
    tmp: tempfile::TempPath,
    output: PathBuf,
    force: bool,
}

impl Pending {
    /// Renames the temporary file over the output (refusing an existing one unless forced), then
    /// syncs the directory so that the new name is durable too.
    pub fn commit(self) -> Result<()> {
        let output = self.output.clone();
        self.rename()?;
        sync_dir(&output)
    }

    /// Renames the temporary file over the output (refusing an existing one unless forced),
    /// without syncing the directory: for batches, which sync the filesystem once afterwards
    /// ([`sync_filesystem`]).
    pub fn rename(self) -> Result<()> {
        let output = self.output;
        let persisted = if self.force {
            self.tmp.persist(&output).map_err(|e| e.error)
        } else {
            self.tmp.persist_noclobber(&output).map_err(|e| e.error)
        };
        persisted.map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                Error::OutputExists {
                    path: output.clone(),
                }
            } else {
                io_err(&output, "rename")(e)
            }
        })
    }
}

/// Writes `output` through `write` into a temporary file in the same directory, synced to disk
/// if `sync`, and returns it for [`Pending::commit`]. On any error the temporary file is removed.
/// Refuses an existing `output` unless `force`, and refuses to overwrite `protect` (the input) in
/// any case. The output gets `protect`'s permission bits, as gzip does.
pub fn write_to_temp<T>(
    output: &Path,
    force: bool,
    protect: &Path,
    sync: bool,
    write: impl FnOnce(&mut File) -> Result<T>,
) -> Result<(Pending, T)> {
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
    if let Ok(meta) = std::fs::metadata(protect) {
        tmp.as_file()
            .set_permissions(meta.permissions())
            .map_err(io_err(output, "set permissions"))?;
    }
    let value = write(tmp.as_file_mut())?;
    if sync {
        tmp.as_file().sync_all().map_err(io_err(output, "sync"))?;
    }
    Ok((
        Pending {
            tmp: tmp.into_temp_path(),
            output: output.to_path_buf(),
            force,
        },
        value,
    ))
}

/// Writes `output` through `write`, into a temporary file in the same directory that is synced and
/// renamed over `output` only if `write` succeeds: on any error nothing is left at `output` (an
/// existing file there is untouched). See [`write_to_temp`] for the rules.
pub fn write_atomically<T>(
    output: &Path,
    force: bool,
    protect: &Path,
    write: impl FnOnce(&mut File) -> Result<T>,
) -> Result<T> {
    let (pending, value) = write_to_temp(output, force, protect, true, write)?;
    pending.commit()?;
    Ok(value)
}

/// Flushes every file of the filesystem holding `dir` to disk (`syncfs`): one call makes a whole
/// batch of unsynced temporary files durable before they are renamed.
pub fn sync_filesystem(dir: &Path) -> Result<()> {
    use std::os::fd::AsRawFd;
    let d = File::open(dir).map_err(io_err(dir, "open"))?;
    // SAFETY: syncfs only reads the descriptor, which `d` keeps open for the call.
    if unsafe { libc::syncfs(d.as_raw_fd()) } != 0 {
        return Err(io_err(dir, "sync")(std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Syncs the directory holding `path`, so that an entry renamed into it is durable.
fn sync_dir(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err(dir, "sync directory"))
}

fn is_same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}
