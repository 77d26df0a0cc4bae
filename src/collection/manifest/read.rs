//! Reading manifests: their files ([`manifest_files`]) and lines ([`read`]), in byte ranges
//! for parallel parsing.

use super::*;
use crate::error::{io_err, Result};
use std::path::{Path, PathBuf};

/// Reads the manifest at `path` line by line, calling `f` with each line's number (from 1) and
/// entry, or `None` for a line that is not one. A last line without its newline (cut short by
/// a kill) is skipped.
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) when the file cannot be opened or read.
pub fn read(path: &Path, mut f: impl FnMut(u64, Option<Entry>)) -> Result<()> {
    read_lines(path, |n, line| f(n, Entry::parse(line)))
}

/// Reads the manifest at `path` line by line, calling `f` with each line's number (from 1) and
/// bytes (without the newline), as [`read`] does.
pub(super) fn read_lines(path: &Path, f: impl FnMut(u64, &[u8])) -> Result<()> {
    let file = std::fs::File::open(path).map_err(io_err(path, "open"))?;
    read_line_range(path, &file, 0, u64::MAX, f)
}

/// Reads the lines of `file` (the manifest at `path`) that start at a byte offset in
/// `start..end`, calling `f` with each line's number (from 1: counted from `start`, so the
/// file's own line numbers when `start` is 0) and bytes (without the newline). A line that
/// starts before `end` is read to its newline, past `end`; a last line without one (cut short
/// by a kill) is ignored. Ranges that meet cover each line once.
pub(super) fn read_line_range(
    path: &Path,
    file: &std::fs::File,
    start: u64,
    end: u64,
    mut f: impl FnMut(u64, &[u8]),
) -> Result<()> {
    read_line_range_at(path, file, start, end, |n, _, line| f(n, line))
}

/// [`read_line_range`], calling `f` also with each line's byte offset in the file.
pub(super) fn read_line_range_at(
    path: &Path,
    file: &std::fs::File,
    start: u64,
    end: u64,
    mut f: impl FnMut(u64, u64, &[u8]),
) -> Result<()> {
    use std::os::unix::fs::FileExt;
    // Large reads, and lines taken where they lie in the buffer (a collection's manifest has a
    // line per file and run): only a line cut by the end of the buffer is moved.
    let mut buf = vec![0u8; 1 << 20];
    // From the byte before `start`: the first line of the range is the one after its newline.
    let mut at = start.saturating_sub(1);
    let mut skip = start > 0;
    // The file offset of `buf[0]`, and the bytes held there.
    let (mut base, mut held, mut n) = (at, 0, 0);
    loop {
        if held == buf.len() {
            // A line longer than the buffer: the buffer grows (by a line's length at most).
            buf.resize(buf.len() * 2, 0);
        }
        let got = match file.read_at(&mut buf[held..], at) {
            Ok(got) => got,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err(path, "read")(e)),
        };
        // The end: what is held has no newline (a last line cut short by a kill): ignored.
        if got == 0 {
            return Ok(());
        }
        at += got as u64;
        let stop = held + got;
        let mut from = 0;
        while let Some(k) = memchr::memchr(b'\n', &buf[from..stop]) {
            if base + from as u64 >= end {
                return Ok(());
            }
            let (line, line_at) = (&buf[from..from + k], base + from as u64);
            from += k + 1;
            if std::mem::take(&mut skip) {
                continue;
            }
            n += 1;
            if !line.iter().all(u8::is_ascii_whitespace) {
                f(n, line_at, line);
            }
        }
        if base + from as u64 >= end {
            return Ok(());
        }
        buf.copy_within(from..stop, 0);
        base += from as u64;
        held = stop - from;
    }
}

/// The manifests named by `paths`: files as given, directories' `*.jsonl` files (sorted).
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) when a path or directory cannot be read.
pub fn manifest_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(io_err(p, "stat"))?;
        if meta.is_dir() {
            let mut found = Vec::new();
            for e in std::fs::read_dir(p).map_err(io_err(p, "read directory"))? {
                let e = e.map_err(io_err(p, "read directory"))?;
                let q = e.path();
                if q.extension().is_some_and(|x| x == "jsonl") && q.is_file() {
                    found.push(q);
                }
            }
            found.sort();
            files.extend(found);
        } else {
            files.push(p.clone());
        }
    }
    Ok(files)
}

/// The line of `file` that starts at byte `at` (without its newline) into `buf` (emptied
/// first), read in pieces of 4 KiB: what [`read_line_range_at`] gave the offset of. False if
/// the file ends before a newline.
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) naming `path` when it cannot be read.
pub(super) fn read_line_at(
    path: &Path,
    file: &std::fs::File,
    at: u64,
    buf: &mut Vec<u8>,
) -> Result<bool> {
    use std::os::unix::fs::FileExt;
    buf.clear();
    let mut piece = [0u8; 4096];
    loop {
        let got = match file.read_at(&mut piece, at + buf.len() as u64) {
            Ok(got) => got,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err(path, "read")(e)),
        };
        if got == 0 {
            return Ok(false);
        }
        if let Some(k) = memchr::memchr(b'\n', &piece[..got]) {
            buf.extend_from_slice(&piece[..k]);
            return Ok(true);
        }
        buf.extend_from_slice(&piece[..got]);
    }
}
