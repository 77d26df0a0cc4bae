//! Cheap checks of an archive against its record (its ends: lead and footer), and the
//! hashes and times a record holds.

use crate::error::{io_err, Result};
pub use crate::format::error::EndsError;
use crate::format::{check_decoded, FOOTER_LEN, LEAD_LEN};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

/// The cheap check of an archive a rerun trusts: its lead and footer decode (magic, version,
/// checksums), the footer's index ends where the footer starts, and the lead records an
/// original of `size` bytes (and hash `hash`, if given). Two reads of 64 and 32 bytes. Returns
/// the archive's length and the lead's hash.
///
/// # Errors
///
/// An [`EndsError`] saying what does not hold.
///
/// ```
/// use nc3pack::testing::manifest::{check_ends, EndsError};
/// let e = check_ends("samples/scalars.nc".as_ref(), 0, None).unwrap_err();
/// assert!(matches!(e, EndsError::TooShort { .. } | EndsError::Lead(_)), "{e}");
/// ```
pub fn check_ends(archive: &Path, size: u64, hash: Option<u128>) -> Result<(u64, u128), EndsError> {
    let f = open_archive(archive)?;
    let meta = f.metadata().map_err(|e| EndsError::Io {
        op: "stat",
        source: e,
    })?;
    if !meta.is_file() {
        return Err(EndsError::NotRegularFile);
    }
    let len = meta.len();
    if len < MIN_LEN {
        return Err(EndsError::TooShort { len });
    }
    // A compact archive (format 1.2) may be shorter than a full lead and footer.
    let mut lead = [0u8; LEAD_LEN];
    let lead = &mut lead[..LEAD_LEN.min(len as usize)];
    f.read_exact_at(lead, 0).map_err(|e| EndsError::Io {
        op: "read",
        source: e,
    })?;
    let mut foot = [0u8; FOOTER_LEN];
    let foot = &mut foot[..FOOTER_LEN.min(len as usize)];
    f.read_exact_at(foot, len - foot.len() as u64)
        .map_err(|e| EndsError::Io {
            op: "read",
            source: e,
        })?;
    let hash = check_decoded(lead, foot, len, size, hash)?;
    Ok((len, hash))
}

/// The shortest archive: a compact one (format 1.2) of a lead and a footer.
const MIN_LEN: u64 = crate::format::compact::COMPACT_MIN_LEN;

/// Archives up to this length are read whole, in one read, by [`check_recorded_ends`].
pub(super) const WHOLE_READ: u64 = 16 << 10;

/// [`check_ends`] of an archive whose length `len` a manifest recorded, with fewer system
/// calls (what a rerun does for every file): no `stat`, and an archive of up to 16 KiB read in
/// one read of one byte more than `len` (a larger one in two: its lead, and its footer with one
/// byte more), which finds that the file ends there. The archive must be exactly `len` bytes.
/// Returns the lead's hash.
///
/// # Errors
///
/// An [`EndsError`] saying what does not hold ([`EndsError::Length`] for a file of another
/// length; a directory or pipe fails to read).
///
/// ```
/// use nc3pack::testing::manifest::{check_recorded_ends, EndsError};
/// let len = std::fs::metadata("samples/scalars.nc").unwrap().len();
/// let e = check_recorded_ends("samples/scalars.nc".as_ref(), len, 0, None).unwrap_err();
/// assert!(matches!(e, EndsError::Lead(_)), "{e}");
/// let e = check_recorded_ends("samples/scalars.nc".as_ref(), len - 1, 0, None).unwrap_err();
/// assert!(matches!(e, EndsError::Length { .. }), "{e}");
/// ```
pub fn check_recorded_ends(
    archive: &Path,
    len: u64,
    size: u64,
    hash: Option<u128>,
) -> Result<u128, EndsError> {
    check_recorded_ends_of(|| open_archive(archive), len, size, hash, &mut Vec::new())
}

/// [`check_recorded_ends`] of the archive `open` opens (not called when `len` is too short
/// for one); `buf` is room to read into, kept by the caller for the next (it grows to 16 KiB
/// and a byte at most).
pub(crate) fn check_recorded_ends_of(
    open: impl FnOnce() -> Result<std::fs::File, EndsError>,
    len: u64,
    size: u64,
    hash: Option<u128>,
    buf: &mut Vec<u8>,
) -> Result<u128, EndsError> {
    if len < MIN_LEN {
        return Err(EndsError::TooShort { len });
    }
    let f = open()?;
    let wrong_length = || EndsError::Length { recorded: len };
    if len <= WHOLE_READ {
        // Only the bytes read are looked at: what the buffer held before is not cleared.
        if buf.len() < len as usize + 1 {
            buf.resize(len as usize + 1, 0);
        }
        let buf = &mut buf[..len as usize + 1];
        if read_at_most(&f, buf, 0)? != len as usize {
            return Err(wrong_length());
        }
        let end = len as usize;
        return check_decoded(
            &buf[..LEAD_LEN.min(end)],
            &buf[end.saturating_sub(FOOTER_LEN)..end],
            len,
            size,
            hash,
        );
    }
    let mut lead = [0u8; LEAD_LEN];
    if read_at_most(&f, &mut lead, 0)? != LEAD_LEN {
        return Err(wrong_length());
    }
    let mut foot = [0u8; FOOTER_LEN + 1];
    if read_at_most(&f, &mut foot, len - FOOTER_LEN as u64)? != FOOTER_LEN {
        return Err(wrong_length());
    }
    check_decoded(&lead, &foot[..FOOTER_LEN], len, size, hash)
}

/// Opens an archive to check its ends, without waiting (a FIFO would wait for a writer).
pub(super) fn open_archive(archive: &Path) -> Result<std::fs::File, EndsError> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(archive)
        .map_err(|e| EndsError::Io {
            op: "open",
            source: e,
        })
}

/// Reads into `buf` from `at` in one read (retried if interrupted before reading anything);
/// returns the bytes read. A read of a regular file returns fewer bytes than asked for only
/// where the file ends, so one read of one byte more than expected finds both the bytes and
/// the end. (Anything else that reads short is taken as ending there: a wrong length, and
/// the archive is packed again.)
pub(super) fn read_at_most(f: &std::fs::File, buf: &mut [u8], at: u64) -> Result<usize, EndsError> {
    loop {
        match f.read_at(buf, at) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(EndsError::Io {
                    op: "read",
                    source: e,
                })
            }
        }
    }
}

/// XXH3-128 of the file at `path`, read in 1 MiB pieces.
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) when it cannot be read.
pub fn hash_file(path: &Path) -> Result<u128> {
    let f = std::fs::File::open(path).map_err(io_err(path, "open"))?;
    hash_open_file(&f, path)
}

/// The xxh3-128 of what is left to read of `f` (opened from `path`, which errors name).
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) when it cannot be read.
pub(crate) fn hash_open_file(mut f: &std::fs::File, path: &Path) -> Result<u128> {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match std::io::Read::read(&mut f, &mut buf) {
            Ok(0) => return Ok(h.digest128()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err(path, "read")(e)),
        };
        h.update(&buf[..n]);
    }
}

/// Nanoseconds since 1970 of `meta`'s modification time.
pub fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    use std::os::unix::fs::MetadataExt;
    meta.mtime()
        .saturating_mul(1_000_000_000)
        .saturating_add(meta.mtime_nsec())
}
