//! Appending to a manifest: [`Manifest`], shared by the workers of a batch.

use super::*;
use crate::error::{io_err, Result};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A manifest to append to, shared by the workers of a batch: opened (and created, with its
/// directory) when the first line is written.
#[derive(Debug)]
pub struct Manifest {
    pub(super) state: Mutex<Appending>,
    path: PathBuf,
}

/// The file once opened, and the deferred lines not yet written to it.
#[derive(Debug, Default)]
pub(super) struct Appending {
    file: Option<std::fs::File>,
    deferred: Vec<u8>,
    /// Whether a line written with [`Manifest::write`] may not be durable yet.
    unsynced: bool,
    /// How many times the file was synced.
    pub(super) syncs: usize,
    /// Whether a write failed (a full disk), which may have left a line cut short: the next
    /// write starts on a new line.
    cut: bool,
}

/// Deferred lines are written once they reach this many bytes (or with the next line that is
/// not deferred, or at [`Manifest::sync`]).
pub(super) const DEFERRED_BYTES: usize = 64 << 10;

/// Refuses a manifest path that a batch would damage a file through: a name ending in
/// `.nc3z` (where an archive of the batch may go, or one already is: the lines would be
/// appended to it, or it replaced by one), or an existing file that is not a manifest (an
/// archive, a netCDF file, anything whose first byte after blanks is not the `{` every line
/// starts with). A manifest that does not exist, or is empty, is fine.
///
/// # Errors
///
/// [`Error::Refused`](crate::Error::Refused) with [`Refusal::NotAManifest`]; an existing file
/// that cannot be read, [`Error::Io`](crate::Error::Io).
pub(crate) fn check_manifest_path(path: &Path) -> Result<()> {
    use crate::error::{Error, Refusal};
    use std::io::Read;
    let refuse = |what: &'static str| {
        Err(Error::Refused {
            path: path.to_path_buf(),
            what: Refusal::NotAManifest { what },
        })
    };
    if path
        .file_name()
        .is_some_and(|n| n.as_encoded_bytes().ends_with(b".nc3z"))
    {
        return refuse("is named like an archive (*.nc3z), where an archive of the batch may go");
    }
    // (Only a regular file is opened: a FIFO would wait for a writer; other kinds are refused
    // when opened for appending.)
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return Ok(());
    }
    let mut head = Vec::with_capacity(4096);
    std::fs::File::open(path)
        .and_then(|f| f.take(4096).read_to_end(&mut head))
        .map_err(io_err(path, "read"))?;
    match head.iter().find(|b| !b.is_ascii_whitespace()) {
        None | Some(b'{') => Ok(()),
        Some(_) if head.starts_with(&crate::format::LEAD_MAGIC) => refuse("is an nc3pack archive"),
        Some(_) if head.starts_with(b"CDF") || head.starts_with(b"\x89HDF") => {
            refuse("is a netCDF file")
        }
        Some(_) => refuse("does not start with a JSON object, as every manifest line does"),
    }
}

impl Manifest {
    /// The manifest at `path`; nothing is done on disk until the first line is written.
    pub fn new(path: &Path) -> Manifest {
        Manifest {
            state: Mutex::new(Appending::default()),
            path: path.to_path_buf(),
        }
    }

    /// Opens (creating it and its directory) the manifest at `path` for appending; if its last
    /// line was cut short, the next line starts on a new one.
    fn open(path: &Path) -> Result<std::fs::File> {
        if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(d).map_err(io_err(d, "create directory"))?;
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(path)
            .map_err(io_err(path, "open"))?;
        let len = file.metadata().map_err(io_err(path, "stat"))?.len();
        if len > 0 {
            let mut last = [0u8];
            file.read_exact_at(&mut last, len - 1)
                .map_err(io_err(path, "read"))?;
            if last[0] != b'\n' {
                file.write_all(b"\n").map_err(io_err(path, "write"))?;
            }
        }
        Ok(file)
    }

    /// Writes the deferred lines and `line` (if any) in one write, and empties the deferred.
    fn flush_with(&self, st: &mut Appending, line: Option<&[u8]>) -> Result<()> {
        if st.deferred.is_empty() && line.is_none() {
            return Ok(());
        }
        if st.file.is_none() {
            st.file = Some(Manifest::open(&self.path)?);
        }
        if let Some(line) = line {
            st.deferred.extend_from_slice(line);
        }
        if std::mem::take(&mut st.cut) {
            st.deferred.insert(0, b'\n');
        }
        let r = match st.file.as_mut() {
            Some(f) => f
                .write_all(&st.deferred)
                .map_err(io_err(&self.path, "write")),
            None => Ok(()),
        };
        st.cut = r.is_err();
        st.deferred.clear();
        r
    }

    /// Appends `entry` as one line, in one write (with the deferred lines before it).
    ///
    /// # Errors
    ///
    /// [`Error::Io`](crate::Error::Io) when it cannot be written.
    pub fn write(&self, entry: &Entry) -> Result<()> {
        let mut line = entry.to_json();
        line.push('\n');
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.unsynced = true;
        self.flush_with(&mut st, Some(line.as_bytes()))
    }

    /// Appends `entry` later: with the next [`Manifest::write`], once the deferred lines reach
    /// 64 KiB, or at [`Manifest::sync`]. For lines a kill may lose without harm (a `skipped`
    /// line only repeats what an earlier line recorded): one write for hundreds of them.
    ///
    /// # Errors
    ///
    /// [`Error::Io`](crate::Error::Io) when the lines cannot be written.
    pub fn write_deferred(&self, entry: &Entry) -> Result<()> {
        let line = entry.to_json();
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.deferred.extend_from_slice(line.as_bytes());
        st.deferred.push(b'\n');
        if st.deferred.len() >= DEFERRED_BYTES {
            return self.flush_with(&mut st, None);
        }
        Ok(())
    }

    /// [`Manifest::write_deferred`] of [`Entry::done_before`]`(name)`, without building the
    /// entry (a rerun writes one a file).
    ///
    /// # Errors
    ///
    /// [`Error::Io`](crate::Error::Io) when the lines cannot be written.
    pub fn write_done_before(&self, name: &[u8]) -> Result<()> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        Entry::push_done_before(name, &mut st.deferred);
        if st.deferred.len() >= DEFERRED_BYTES {
            return self.flush_with(&mut st, None);
        }
        Ok(())
    }

    /// Writes the deferred lines and makes the lines written with [`Manifest::write`]
    /// durable. The file is not synced when only deferred lines were written since it last
    /// was (a rerun with everything done writes only those, tens of megabytes for a large
    /// collection, which a crash may lose without harm).
    ///
    /// # Errors
    ///
    /// [`Error::Io`](crate::Error::Io) when the write or the sync fails.
    pub fn sync(&self) -> Result<()> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        self.flush_with(&mut st, None)?;
        if !st.unsynced {
            return Ok(());
        }
        match st.file.as_ref() {
            Some(f) => {
                f.sync_all().map_err(io_err(&self.path, "sync"))?;
                st.unsynced = false;
                st.syncs += 1;
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Manifest {
    /// Writes the deferred lines (an error here is lost: [`Manifest::sync`] reports it).
    fn drop(&mut self) {
        let mut st = std::mem::take(self.state.get_mut().unwrap_or_else(|p| p.into_inner()));
        let _ = self.flush_with(&mut st, None);
    }
}
