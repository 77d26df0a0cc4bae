//! Where an archive's bytes come from: [`BlockSource`], a local file, a remote object or bytes
//! in memory (a compact archive expanded), and the reads of frames from it (by the reading
//! thread, or by the pool's threads through a duplicate of a local file's descriptor).

use crate::error::{io_err, Result};
use crate::format;
use crate::io::{FileState, ReadAt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// An archive's bytes as a read sees them (a compact archive in the full form it expands to),
/// and the path that names them in errors. Knows nothing of what the bytes are: the reads of
/// [`crate::Archive`] find frames with its index and read them here.
pub(crate) struct BlockSource<R: ReadAt> {
    /// The archive's path or URL, as given.
    pub(super) path: PathBuf,
    /// The source; a compact archive (format 1.2) expanded in memory.
    pub(super) reader: format::compact::Expanded<R>,
    /// The descriptor of the archive's file, when it is a local file in the full form
    /// (`reader` owns it, and outlives every use of it here).
    pub(super) fd: Option<std::os::fd::RawFd>,
    /// A duplicate of `fd` for the pool's threads, made when first needed (`None` if it cannot
    /// be made).
    pub(super) file: OnceLock<Option<Arc<std::fs::File>>>,
    /// The local file's state when it was opened ([`FileState`]); every read checks it after.
    pub(super) opened: Option<FileState>,
}

impl<R: ReadAt> BlockSource<R> {
    /// The archive's path, as given.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The archive's local file for the pool's threads, which read frames from it (decoding
    /// ahead of a sequential reader): a duplicate of the reader's descriptor, made at the
    /// first call. None for a remote archive, one in memory, or a compact one (whose frames
    /// are at their offsets in the full form it expands to, not in the file).
    pub(super) fn shared_file(&self) -> Option<Arc<std::fs::File>> {
        if self.is_compact() {
            return None;
        }
        self.file
            .get_or_init(|| {
                let fd = self.fd?;
                // SAFETY: `fd` is the descriptor of the archive's reader, open while the
                // source (which holds both) is; it is only borrowed to be duplicated.
                let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
                fd.try_clone_to_owned().ok().map(|fd| Arc::new(fd.into()))
            })
            .clone()
    }

    /// Whether the archive is stored in the compact form (read from memory).
    pub(super) fn is_compact(&self) -> bool {
        matches!(self.reader, format::compact::Expanded::Memory(..))
    }

    /// Length of the archive as stored (a compact archive's own length), when known.
    pub(super) fn stored_len(&self) -> Option<u64> {
        self.reader.stored_len().ok()
    }

    /// Whether the source is remote: reads are best planned and coalesced
    /// ([`BlockSource::prefetch`]), and made by the calling thread.
    pub(super) fn wants_prefetch(&self) -> bool {
        self.reader.wants_prefetch()
    }

    /// Tells the source which ranges (offset, length) will be read next, in order.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Io`] naming the path when fetching them fails.
    pub(super) fn prefetch(&self, ranges: &[(u64, u64)]) -> Result<()> {
        self.reader
            .prefetch(ranges)
            .map_err(io_err(&self.path, "read"))
    }

    /// Reads `buf.len()` bytes at `offset`.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Io`] naming the path.
    pub(super) fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.reader
            .read_exact_at(buf, offset)
            .map_err(io_err(&self.path, "read"))?;
        self.check_unchanged()
    }

    /// Whether a local archive is as it was when opened ([`FileState`]): called after its
    /// bytes were read (by this thread or the pool's), before they are used.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Changed`] when its change time or length is another; the error of the
    /// `fstat` naming the path.
    pub(super) fn check_unchanged(&self) -> Result<()> {
        let (Some(fd), Some(then)) = (self.fd, self.opened) else {
            return Ok(());
        };
        let now = FileState::of(fd).map_err(io_err(&self.path, "stat"))?;
        match now.changed_since(&then) {
            None => Ok(()),
            Some(what) => Err(crate::Error::Changed {
                path: self.path.clone(),
                what,
            }),
        }
    }

    /// Reads `buf.len()` bytes at `offset` of an archive that was `opened_len` bytes long
    /// when opened.
    ///
    /// # Errors
    ///
    /// As [`BlockSource::read_exact_at`]; a read that found the end of a file now shorter than
    /// `opened_len` says so, with both lengths.
    pub(super) fn read_frames_at(
        &self,
        buf: &mut [u8],
        offset: u64,
        opened_len: u64,
    ) -> Result<()> {
        let len = buf.len();
        self.reader
            .read_exact_at(buf, offset)
            .map_err(crate::error::read_err(
                &self.path,
                &self.reader,
                opened_len,
                offset,
                len,
            ))?;
        self.check_unchanged()
    }

    /// Whether the header frame is compressed with the header dictionary (codec 7, format 1.3
    /// in the compact form).
    pub(super) fn header_dict(&self) -> bool {
        let mut b = [0u8; format::FRAME_HEADER_LEN];
        self.reader
            .read_exact_at(&mut b, format::LEAD_LEN as u64)
            .ok()
            .and_then(|()| format::FrameHeader::decode(&b).ok())
            .is_some_and(|h| h.codec == format::Codec::ZstdDict)
    }
}
