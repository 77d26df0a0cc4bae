//! Decoding a frame payload: the one path from a payload to the block, into the caller's
//! buffer.

use super::block::{BlockFilter, ZstdContext};
use super::error::FrameError;
use crate::format::{crc, Codec, FrameHeader};

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
/// `Vec` form of [`decode_payload_into`], sharing its decoding (one decode path), with a scratch
/// space of its own and elements in big-endian order. `out` is grown (fallibly) to exactly
/// `h.decoded_len` bytes after the CRC check (a payload failing it leaves `out` as it was),
/// and left empty when decoding fails.
///
/// ```
/// use nc3pack::{FilterMode, __private::{Encoder, decode_payload}, format::{Codec, FrameHeader, FRAME_HEADER_LEN}};
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
    check_payload(h, payload)?;
    out.clear();
    let r = grow(out, h.decoded_len as usize)
        .and_then(|()| decode_checked_into(h, payload, out, &mut DecodeScratch::default(), false));
    if r.is_err() {
        out.clear();
    }
    r
}

/// The element size of a frame whose filter goes with codec pco only and elements of the sizes
/// `supports` allows (`mask`, `fit`), decoding to `len` bytes: the filter's own error (from
/// `codec` or `size`) for another codec or element size, and [`FrameError::FilterElementSize`]
/// when `len` is not whole elements.
pub(crate) fn pco_filter_esize(
    h: &FrameHeader,
    len: usize,
    supports: fn(usize) -> bool,
    codec: fn(Codec) -> FrameError,
    size: fn(u16) -> FrameError,
) -> Result<usize, FrameError> {
    if h.codec != Codec::Pco {
        return Err(codec(h.codec));
    }
    let esize = usize::from(h.esize);
    if !supports(esize) {
        return Err(size(h.esize));
    }
    if !len.is_multiple_of(esize) {
        return Err(FrameError::FilterElementSize {
            esize: h.esize,
            decoded: h.decoded_len,
        });
    }
    Ok(esize)
}

/// Per-thread state of [`decode_payload_into`]: a zstd context and the buffers a payload is
/// decoded through, reused from block to block. A new one takes the space a dropped one left
/// (kept process-wide, a few of them, up to 48 MiB each and 64 MiB in all), so
/// that threads which come and go, or calls that make one per block, do not allocate and
/// first touch their buffers again at every block.
pub struct DecodeScratch {
    space: Space,
}

/// The most one kept decoding space may hold (blocks of up to about 16 MiB).
pub(crate) const KEEP_SPACE: usize = 48 << 20;

/// The most the kept decoding spaces may hold in all.
pub(crate) const KEEP_ALL: usize = 64 << 20;

/// The decoding spaces dropped [`DecodeScratch`]es left, for the next ones.
static KEPT: std::sync::Mutex<Vec<Space>> = std::sync::Mutex::new(Vec::new());

impl Default for DecodeScratch {
    fn default() -> Self {
        Self::new()
    }
}

impl DecodeScratch {
    /// A decoding space: one a dropped one left if there is one, else a new (empty) one.
    ///
    /// ```
    /// use nc3pack::{FilterMode, __private::{DecodeScratch, Encoder, decode_payload_into}, format::{Codec, FRAME_HEADER_LEN}};
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
    pub fn new() -> Self {
        // (A poisoned lock still holds valid spaces.)
        let kept = KEPT.lock().unwrap_or_else(|p| p.into_inner()).pop();
        DecodeScratch {
            space: kept.unwrap_or_default(),
        }
    }
}

impl Drop for DecodeScratch {
    fn drop(&mut self) {
        let space = std::mem::take(&mut self.space);
        keep(&mut KEPT.lock().unwrap_or_else(|p| p.into_inner()), space);
    }
}

/// Adds `space` to the kept spaces `kept` unless it holds nothing, more than [`KEEP_SPACE`],
/// or more than the room [`KEEP_ALL`] leaves (it is then freed).
fn keep(kept: &mut Vec<Space>, space: Space) {
    let held = space.held();
    if held > 0
        && held <= KEEP_SPACE
        && kept.iter().map(Space::held).sum::<usize>() + held <= KEEP_ALL
    {
        kept.push(space);
    }
}

/// The buffers of a [`DecodeScratch`].
#[derive(Default)]
pub(crate) struct Space {
    pub(crate) zstd: Option<zstd::bulk::Decompressor<'static>>,
    pub(crate) filtered: Vec<u8>,
    pub(crate) pco: super::pco::PcoScratch,
    /// The residuals of a `plane` frame, as native numbers (aligned).
    pub(crate) words: Vec<u64>,
    /// The bitmap of a `mask` or `fit` frame.
    pub(crate) bits: Vec<u8>,
    /// The working values of a `fit` frame.
    pub(crate) fit: super::fit::Work,
}

impl Space {
    /// The bytes its buffers hold (their capacity; a zstd context counts as 1).
    fn held(&self) -> usize {
        self.filtered.capacity()
            + self.bits.capacity()
            + 8 * self.words.capacity()
            + self.pco.held()
            + self.fit.held()
            + usize::from(self.zstd.is_some())
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
    super::block::filter(h.filter).decode_frame(h, payload, out, native, &mut scratch.space)
}

/// The decoding of a frame with filter `f` whose codec decompresses bytes that `f` then turns
/// into the block (the default of [`BlockFilter::decode_frame`]): the codec's output goes to
/// `space.filtered` and [`BlockFilter::undo_into`] (with the frame's row length `row`) makes
/// `out` of it. A codec that decodes numbers itself (pco, context) decodes straight into `out`
/// instead, refusing a filter other than `none`.
pub(crate) fn codec_then_undo<F: BlockFilter + ?Sized>(
    f: &F,
    h: &FrameHeader,
    payload: &[u8],
    row: usize,
    out: &mut [u8],
    native: bool,
    space: &mut Space,
) -> Result<(), FrameError> {
    let codec = super::block::codec(h.codec);
    if codec.decodes_numbers() {
        // Numbers decode in native order: the swap to big-endian, if any, is the codec's last
        // pass.
        return codec.decode_into(h, payload, out, native, space);
    }
    let (esize, n) = (usize::from(h.esize), out.len());
    if esize == 0 || !n.is_multiple_of(esize) {
        return Err(FrameError::FilterElementSize {
            esize: h.esize,
            decoded: h.decoded_len,
        });
    }
    // Grows once per thread, then reused: decompression overwrites all of it.
    grow(&mut space.filtered, n)?;
    let filtered = &mut space.filtered[..n];
    codec.decompress_into(h, payload, filtered, &mut space.zstd)?;
    f.undo_into(filtered, esize, row, out, native);
    Ok(())
}

/// Grows `v` to at least `n` elements (the new ones zero), or [`FrameError::NoMemory`]: the
/// buffers of decoding are sized by a frame's decoded length, which the machine may not have.
pub(crate) fn grow<T: Clone + Default>(v: &mut Vec<T>, n: usize) -> Result<(), FrameError> {
    if v.len() < n {
        v.try_reserve(n - v.len())
            .map_err(|_| FrameError::NoMemory {
                len: n.saturating_mul(std::mem::size_of::<T>()) as u64,
            })?;
        v.resize(n, T::default());
    }
    Ok(())
}

/// Decompresses `payload` (codec `h.codec`) into `out`, checking that it fills `out` exactly
/// (`out` is `h.decoded_len` bytes; nothing is written past it).
pub(crate) fn decompress_into(
    h: &FrameHeader,
    payload: &[u8],
    out: &mut [u8],
    zstd_ctx: &mut ZstdContext,
) -> Result<(), FrameError> {
    super::block::codec(h.codec).decompress_into(h, payload, out, zstd_ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A space holding `bytes` in its buffer of filtered bytes.
    fn holding(bytes: usize) -> Space {
        let mut s = Space::default();
        s.filtered.reserve_exact(bytes);
        s
    }

    #[test]
    fn kept_spaces_are_bounded_one_by_one_and_in_all() {
        let mut kept = Vec::new();
        keep(&mut kept, Space::default());
        assert!(kept.is_empty(), "an empty space is not kept");
        keep(&mut kept, holding(KEEP_SPACE + 1));
        assert!(kept.is_empty(), "a space over the bound is freed");
        let each = KEEP_ALL / 4;
        for _ in 0..6 {
            keep(&mut kept, holding(each));
        }
        assert_eq!(kept.len(), 4);
        assert!(kept.iter().map(Space::held).sum::<usize>() <= KEEP_ALL);
    }

    /// A decoding space a dropped scratch left serves the next one, whatever it decoded.
    #[test]
    fn a_scratch_reuses_a_dropped_one_s_space() {
        let mut s = DecodeScratch::new();
        s.space.filtered.reserve_exact(4096);
        drop(s);
        // (Other tests may take the kept space first; one of a few tries gets a kept one.)
        let got = (0..8).any(|_| DecodeScratch::new().space.held() > 0);
        assert!(got, "no kept space was handed out");
    }
}
