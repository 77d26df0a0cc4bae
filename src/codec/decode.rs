//! Decoding a frame payload: the one path from a payload to the block, into the caller's
//! buffer. A frame's chain runs in data order ([`decode_frame`]): its codec decodes the
//! payload (to bytes or to numbers), then its filter is undone (a byte filter on the codec's
//! bytes, or a numeric front-end, whose prefix says what the codec decodes, rebuilding the
//! block).

use super::block::{BlockCodec, ByteFilter, Form};
use super::error::FrameError;
use super::pages::PageBuf;
use super::registry::{self, Stage};
use super::space::{grow, Space};
use crate::format::{crc, FrameHeader};

/// Checks that `payload` is the `h.stored_len` bytes whose CRC the frame header records.
pub(crate) fn check_payload(h: &FrameHeader, payload: &[u8]) -> Result<(), FrameError> {
    if payload.len() != h.stored_len as usize {
        return Err(FrameError::PayloadLength {
            got: payload.len(),
            stored: h.stored_len,
        });
    }
    if crc(payload) != h.payload_crc {
        return Err(FrameError::PayloadChecksum);
    }
    Ok(())
}

/// Checks a frame payload's CRC and decodes it into `out` (replacing its contents): the
/// `Vec` form of `decode_payload_into`, sharing its decoding (one decode path), with a scratch
/// space of its own and elements in big-endian order. `out` is grown (fallibly) to exactly
/// `h.decoded_len` bytes after the CRC check (a payload failing it leaves `out` as it was),
/// and left empty when decoding fails.
///
/// ```
/// use nc3pack::{FilterMode, testing::{Encoder, decode_payload}, format::{Codec, FrameHeader, FRAME_HEADER_LEN}};
/// let data: Vec<u8> = (0..1000u32).flat_map(|i| (i / 7).to_be_bytes()).collect();
/// let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false)?;
/// let mut frame = Vec::new();
/// let h = enc.encode_block(0, 0, 4, &data, &mut frame).frame().unwrap();
/// let mut out = Vec::new();
/// decode_payload(&h, &frame[FRAME_HEADER_LEN..], &mut out)?;
/// assert_eq!(out, data);
/// let mut bad = frame[FRAME_HEADER_LEN..].to_vec();
/// bad[0] ^= 1;
/// assert!(decode_payload(&h, &bad, &mut out).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// A [`FrameError`] saying what is wrong with the payload, or [`FrameError::NoMemory`] when
/// the machine has no memory for `h.decoded_len` bytes.
pub fn decode_payload(
    h: &FrameHeader,
    payload: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), FrameError> {
    decode_payload_with(h, payload, out, &mut DecodeScratch::default())
}

/// [`decode_payload`] through `scratch` (its zstd context and buffers).
pub(crate) fn decode_payload_with(
    h: &FrameHeader,
    payload: &[u8],
    out: &mut Vec<u8>,
    scratch: &mut DecodeScratch,
) -> Result<(), FrameError> {
    check_payload(h, payload)?;
    out.clear();
    let r = grow(out, h.decoded_len as usize)
        .and_then(|()| decode_checked_into(h, payload, out, scratch, false));
    if r.is_err() {
        out.clear();
    }
    r
}

/// Checks a frame payload's CRC and decodes only the bytes `from..from + dst.len()` of its
/// block into `dst`, big-endian, with the checks of [`decode_payload_into`] (the codec's output
/// is the frame's whole decoded length): for a small read, which then needs no buffer of its
/// own for the whole block. A frame whose codec decompresses bytes that a filter of the
/// shuffle family (or none) turns into the block is decompressed into `scratch` and only the
/// part is unfiltered; any other is decoded whole into `scratch` and the part copied.
///
/// # Errors
///
/// As [`decode_payload_into`]; [`FrameError::DecodedLength`] when the part ends after the
/// block.
pub(crate) fn decode_payload_part(
    h: &FrameHeader,
    payload: &[u8],
    from: usize,
    dst: &mut [u8],
    scratch: &mut DecodeScratch,
) -> Result<(), FrameError> {
    check_payload(h, payload)?;
    let n = h.decoded_len as usize;
    let end = from.saturating_add(dst.len());
    check_part_end(h, end)?;
    let space = &mut scratch.space;
    if let Some(f) = registry::part_filter(h.filter, h.codec) {
        let esize = check_filter_esize(h)?;
        grow(&mut space.filtered, n)?;
        let filtered = &mut space.filtered[..n];
        registry::codec(h.codec).decompress_into(h, payload, filtered, &mut space.codecs)?;
        if f.undo_part(filtered, n, esize, from, dst) {
            return Ok(());
        }
    }
    let mut block = std::mem::take(&mut space.block);
    let r =
        grow(&mut block, n).and_then(|()| decode_frame(h, payload, &mut block[..n], false, space));
    if r.is_ok() {
        dst.copy_from_slice(&block[from..end]);
    }
    space.block = block;
    r
}

/// [`FrameError::DecodedLength`] when a part ending at `end` ends after the block of frame `h`.
fn check_part_end(h: &FrameHeader, end: usize) -> Result<(), FrameError> {
    if end > h.decoded_len as usize {
        return Err(FrameError::DecodedLength {
            got: end,
            decoded: h.decoded_len,
        });
    }
    Ok(())
}

/// The element size of frame `h`, with the checks of a byte filter's decoding (filter
/// `none`, which leaves the bytes as they are, decodes without them):
/// [`FrameError::FilterElementSize`] for a filtered block that is not whole elements.
fn check_filter_esize(h: &FrameHeader) -> Result<usize, FrameError> {
    let esize = usize::from(h.esize);
    let n = h.decoded_len as usize;
    if !h.filter.is_same() && (esize == 0 || !n.is_multiple_of(esize)) {
        return Err(FrameError::FilterElementSize {
            esize: h.esize,
            decoded: h.decoded_len,
        });
    }
    Ok(esize)
}

/// A small read's decoding of a zstd frame: [`decode_payload_part`], with the payload read
/// (by the caller, into [`PartDecoder::payload_mut`]) into the same buffer the block is
/// decompressed into, and zstd stopped once it has the bytes the part needs
/// ([`ByteFilter::part_needs`]: the start of each byte stream of a shuffled block); the rest
/// of the payload is only checksummed. The buffer ([`PageBuf`]) is one huge page for a block
/// of up to about 1 MiB where the system gives one, and is kept for the next such read, so a
/// cold read maps little new memory, and zstd decodes each of its blocks from the payload
/// where it lies, with no buffer of its own.
pub(crate) struct PartDecoder<'a> {
    h: FrameHeader,
    f: &'static dyn ByteFilter,
    codec: &'static dyn BlockCodec,
    from: usize,
    len: usize,
    /// Decompressed bytes the part needs.
    need: usize,
    /// Where the payload starts in the buffer (after room for the block).
    at: usize,
    space: &'a mut Space,
}

impl<'a> PartDecoder<'a> {
    /// A decoder of the bytes `from..from + len` of the block of frame `h` (its header
    /// checked), or None when the frame's codec does not decode part of a block or its filter
    /// cannot undo a part ([`registry::decodes_part`], from the registries' lines: zstd with
    /// `none` or a filter of the shuffle family; the caller then decodes the frame whole).
    ///
    /// # Errors
    ///
    /// [`FrameError::DecodedLength`] when the part ends after the block,
    /// [`FrameError::FilterElementSize`] for a filtered block that is not whole elements,
    /// [`FrameError::NoMemory`] when the buffer cannot be made.
    pub(crate) fn new(
        h: &FrameHeader,
        from: usize,
        len: usize,
        scratch: &'a mut DecodeScratch,
    ) -> Result<Option<Self>, FrameError> {
        let Some(f) = registry::early_part_filter(h.codec, h.filter) else {
            return Ok(None);
        };
        let codec = registry::codec(h.codec);
        let n = h.decoded_len as usize;
        let end = from.saturating_add(len);
        check_part_end(h, end)?;
        let esize = check_filter_esize(h)?;
        let space = &mut scratch.space;
        // Room for the whole block (the codec may not write more), then the payload.
        let at = n.next_multiple_of(64);
        let stored = h.stored_len as usize;
        let want = at.saturating_add(stored);
        if space.part.as_ref().is_none_or(|p| p.len() < want) {
            // (The old buffer freed first.)
            space.part = None;
            let buf = PageBuf::new(want).ok_or(FrameError::NoMemory { len: want as u64 })?;
            space.part = Some(buf);
        }
        let need = f.part_needs(n, esize, end);
        // The pages the codec and the read will write, mapped with one call each (not those of the
        // block after the part's needs).
        if let Some(p) = &mut space.part {
            p.prefault(0, need);
            p.prefault(at, at + stored);
        }
        Ok(Some(PartDecoder {
            h: *h,
            f,
            from,
            len,
            codec,
            need,
            at,
            space,
        }))
    }

    /// Where the caller reads the frame's payload (`h.stored_len` bytes).
    pub(crate) fn payload_mut(&mut self) -> &mut [u8] {
        let (at, stored) = (self.at, self.h.stored_len as usize);
        match &mut self.space.part {
            Some(p) => &mut p[at..at + stored],
            None => &mut [],
        }
    }

    /// The part into `dst` (`len` bytes), once the payload was read: false (nothing written)
    /// when the filter cannot undo this part, which the caller then decodes whole.
    ///
    /// # Errors
    ///
    /// [`FrameError::PayloadChecksum`] when the payload fails its CRC (whatever the codec
    /// would say), else the codec's error, or [`FrameError::DecodedLength`] when the frame
    /// decompresses to another length than the block's (found when it ends before the part's
    /// needs).
    pub(crate) fn finish(self, dst: &mut [u8]) -> Result<bool, FrameError> {
        let (n, at, stored) = (
            self.h.decoded_len as usize,
            self.at,
            self.h.stored_len as usize,
        );
        if dst.len() != self.len {
            return Err(FrameError::DecodedLength {
                got: dst.len(),
                decoded: self.h.decoded_len,
            });
        }
        let Some(buf) = self.space.part.as_mut() else {
            return Err(FrameError::NoMemory {
                len: (at + stored) as u64,
            });
        };
        let (out, rest) = buf.split_at_mut(at);
        let payload = &rest[..stored];
        if crc(payload) != self.h.payload_crc {
            return Err(FrameError::PayloadChecksum);
        }
        let out = &mut out[..n];
        // (Frames that ended with the payload must be the whole block.)
        let (got, ended) =
            self.codec
                .decompress_upto(&self.h, payload, out, self.need, &mut self.space.codecs)?;
        if ended && got != n {
            return Err(FrameError::DecodedLength {
                got,
                decoded: self.h.decoded_len,
            });
        }
        if got < self.need {
            return Err(FrameError::DecodedLength {
                got,
                decoded: self.h.decoded_len,
            });
        }
        let esize = usize::from(self.h.esize);
        Ok(self.f.undo_part(&out[..got], n, esize, self.from, dst))
    }
}

/// Per-thread state of [`decode_payload_into`]: a zstd context and the buffers a payload is
/// decoded through, reused from block to block by the thread that holds it (a reading thread
/// keeps one for its life: the archive's per-thread scratch). Its memory is that of the
/// largest block it decoded, and is freed with it: nothing is kept process-wide.
#[derive(Default)]
pub struct DecodeScratch {
    space: Space,
}

impl DecodeScratch {
    /// An empty decoding space (it grows with the first blocks it decodes).
    ///
    /// ```
    /// use nc3pack::{FilterMode, testing::{DecodeScratch, Encoder, decode_payload_into}, format::{Codec, FRAME_HEADER_LEN}};
    /// let data: Vec<u8> = (0..1000u32).flat_map(|i| (i / 7).to_be_bytes()).collect();
    /// let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false)?;
    /// let mut frame = Vec::new();
    /// let h = enc.encode_block(0, 0, 4, &data, &mut frame).frame().unwrap();
    /// let mut scratch = DecodeScratch::new();
    /// let mut out = vec![0; data.len()];
    /// decode_payload_into(&h, &frame[FRAME_HEADER_LEN..], &mut out, &mut scratch, false)?;
    /// assert_eq!(out, data);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(any(test, feature = "testing"))]
    pub fn new() -> Self {
        Self::default()
    }

    /// The bytes its buffers hold.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.space.held()
    }
}

/// As [`decode_payload`], with the same checks, but into `out`, which must be exactly
/// `h.decoded_len` bytes long: a payload without a filter is decompressed straight into `out`,
/// a filtered one into `scratch` and unfiltered from there into `out`. With `native`, elements
/// of 2, 4 or 8 bytes (`h.esize`) come out in native byte order instead of big-endian (the
/// conversion done in the same pass, while the block is in the CPU's cache).
///
/// # Errors
///
/// A [`FrameError`] saying what is wrong with the payload (as [`decode_payload`]), or
/// [`FrameError::DecodedLength`] when `out` is not `h.decoded_len` bytes long.
pub fn decode_payload_into(
    h: &FrameHeader,
    payload: &[u8],
    out: &mut [u8],
    scratch: &mut DecodeScratch,
    native: bool,
) -> Result<(), FrameError> {
    check_payload(h, payload)?;
    decode_checked_into(h, payload, out, scratch, native)
}

/// [`decode_payload_into`] after the payload's CRC check: the decoding both it and
/// [`decode_payload`] share.
fn decode_checked_into(
    h: &FrameHeader,
    payload: &[u8],
    out: &mut [u8],
    scratch: &mut DecodeScratch,
    native: bool,
) -> Result<(), FrameError> {
    if out.len() != h.decoded_len as usize {
        return Err(FrameError::DecodedLength {
            got: out.len(),
            decoded: h.decoded_len,
        });
    }
    decode_frame(h, payload, out, native, &mut scratch.space)
}

/// Decodes the payload of frame `h` (its CRC checked) into `out` (`h.decoded_len` bytes,
/// checked), elements of 2, 4 or 8 bytes in native order when `native`, reusing `space`: the
/// frame's chain in data order. The pair of filter and codec is checked against the
/// registries' lines first ([`check_pair`]). Then, by the filter's kind:
///
/// - a filter that leaves the bytes as they are (`none`): the codec decodes straight into
///   `out` (bytes, or numbers for a codec of numbers);
/// - a byte filter: the codec decodes bytes into `space.filtered`, and the filter is undone
///   from there into `out`;
/// - a numeric front-end: its prefix says what the codec decodes the rest of the payload to
///   (bytes or numbers, into `space.filtered`; residuals, into the aligned `space.words`), the
///   codec decodes that, and the front-end rebuilds the block into `out` from it.
pub(crate) fn decode_frame(
    h: &FrameHeader,
    payload: &[u8],
    out: &mut [u8],
    native: bool,
    space: &mut Space,
) -> Result<(), FrameError> {
    let codec = registry::codec(h.codec);
    let stage = registry::filter(h.filter);
    check_pair(h, codec, stage)?;
    match stage {
        Stage::Bytes(_) if h.filter.is_same() => codec.decode_into(h, payload, out, native, space),
        Stage::Bytes(f) => {
            let (esize, n) = (check_filter_esize(h)?, out.len());
            // Grows once per thread, then reused: decompression overwrites all of it.
            grow(&mut space.filtered, n)?;
            let filtered = &mut space.filtered[..n];
            codec.decompress_into(h, payload, filtered, &mut space.codecs)?;
            f.undo_into(filtered, esize, out, native);
            Ok(())
        }
        Stage::Front(f) => {
            let coded = f.open(h, payload, &mut space.codecs)?;
            // Each buffer is at most the block's length or a bound of it that `open` checked
            // (refs: 2 times for 4-byte elements); grown once per thread, then reused: the codec
            // overwrites all of it.
            let buf = if coded.form == Form::Residuals {
                grow(&mut space.words, coded.len.div_ceil(8))?;
                &mut bytemuck::cast_slice_mut::<u64, u8>(&mut space.words)[..coded.len]
            } else {
                grow(&mut space.filtered, coded.len)?;
                &mut space.filtered[..coded.len]
            };
            match coded.form {
                Form::Bytes => codec.decompress_into(h, coded.payload, buf, &mut space.codecs)?,
                form => {
                    codec.decode_numbers(h, coded.payload, buf, form, native, &mut space.codecs)?;
                }
            }
            f.close(h, buf, out, native, &mut space.codecs)
        }
    }
}

/// Checks that frame `h`'s filter goes with its codec (design/FORMAT.md, "Valid pairs"): the
/// codec has the capability the filter's registry line asks for. Else the front-end's error
/// for the codec, if it has one, or the codec's for the filter.
fn check_pair(h: &FrameHeader, codec: &dyn BlockCodec, stage: Stage) -> Result<(), FrameError> {
    if h.filter.goes_with(h.codec) {
        return Ok(());
    }
    let own = match stage {
        Stage::Front(f) => f.wrong_codec(h.codec),
        Stage::Bytes(_) => None,
    };
    Err(own.unwrap_or_else(|| codec.wrong_filter(h)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::pages::prefault;
    use crate::format::Codec;

    /// A scratch's space is its own: a new one starts empty whatever others held and
    /// dropped (no store shared by the process), and one keeps its buffers from block to
    /// block.
    #[test]
    fn a_scratch_keeps_its_own_space_and_a_new_one_starts_empty() {
        let data: Vec<u8> = (0..50_000u32).flat_map(|i| (i / 7).to_be_bytes()).collect();
        let mut enc = crate::codec::Encoder::new(
            Codec::Zstd,
            3,
            crate::FilterMode::Fixed(crate::format::Filter::Shuffle),
            false,
        )
        .unwrap();
        let mut frame = Vec::new();
        let h = enc
            .encode_block(0, 0, 4, &data, &mut frame)
            .frame()
            .unwrap();
        let payload = &frame[crate::format::FRAME_HEADER_LEN..];
        let mut out = vec![0u8; data.len()];
        let mut s = DecodeScratch::new();
        decode_payload_into(&h, payload, &mut out, &mut s, false).unwrap();
        assert_eq!(out, data);
        let held = s.held();
        assert!(held >= data.len(), "the filtered bytes are kept: {held}");
        decode_payload_into(&h, payload, &mut out, &mut s, false).unwrap();
        assert_eq!(s.held(), held, "reused, not grown again");
        drop(s);
        for _ in 0..8 {
            assert_eq!(DecodeScratch::new().held(), 0, "a new scratch starts empty");
        }
    }

    /// This thread's minor page faults so far.
    #[cfg(target_os = "linux")]
    fn thread_faults() -> i64 {
        // SAFETY: getrusage writes the struct it is given.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) }, 0);
        u.ru_minflt
    }

    /// A buffer grown for decoding has its pages mapped at once: writing all of it then
    /// takes almost no page faults (it took one per page), and what it held is kept.
    #[cfg(target_os = "linux")]
    #[test]
    fn grown_buffers_are_mapped_in_one_call() {
        let mut v: Vec<u8> = vec![7; 100];
        let n = 4 << 20;
        grow(&mut v, n).unwrap();
        assert_eq!(v.len(), n);
        assert!(v[..100].iter().all(|&b| b == 7) && v[100..].iter().all(|&b| b == 0));
        // A fresh buffer, prefaulted, then written whole.
        let mut w: Vec<u8> = Vec::with_capacity(n);
        let mapped = prefault(&mut w, n);
        let before = thread_faults();
        w.resize(n, 1);
        let faults = thread_faults() - before;
        assert!(w.iter().all(|&b| b == 1));
        if mapped {
            assert!(
                faults < 64,
                "{faults} page faults writing a prefaulted 4 MiB buffer"
            );
        }
        // Too small to bother: nothing done.
        assert!(!prefault(&mut Vec::<u8>::with_capacity(4096), 4096));
    }
}
