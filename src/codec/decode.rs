//! Decoding a frame payload: the one path from a payload to the block, into the caller's
//! buffer.

use super::block::ZstdContext;
use super::error::FrameError;
use super::error::{FitError, LorenzoError, MaskError, PlaneError, RefsError};
use super::filter::undo_filter_into;
use crate::codec::word::be_to_native;
use crate::format::{crc, Codec, Filter, FrameHeader};

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

/// Decodes the payload of a `plane` frame (after its CRC check) into `out` (`h.decoded_len`
/// bytes): checks the codec (pco only), the element size and the prefix, decodes pco's
/// unsigned residuals in native order into `words` and rebuilds the elements from them.
pub(crate) fn decode_plane(
    h: &FrameHeader,
    payload: &[u8],
    out: &mut [u8],
    native: bool,
    words: &mut Vec<u64>,
    pco: &mut super::pco::PcoScratch,
) -> Result<(), FrameError> {
    if h.codec != Codec::Pco {
        return Err(PlaneError::Codec { codec: h.codec }.into());
    }
    let esize = usize::from(h.esize);
    if !super::plane::supports(esize) {
        return Err(PlaneError::ElementSize { esize: h.esize }.into());
    }
    let (params, payload) = super::plane::Params::decode(payload)?;
    let n = out.len();
    // The output's size is the frame's decoded length, already bounded by the layout; the
    // buffer grows once per thread, and pco overwrites all of it.
    grow(words, n.div_ceil(8))?;
    let z = &mut bytemuck::cast_slice_mut::<u64, u8>(words)[..n];
    super::pco::decompress_residuals_into(h.esize, payload, z, true, pco)?;
    super::plane::undo_into(z, esize, &params, out, native);
    Ok(())
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

/// Decodes the payload of a `mask` frame (after its CRC check) into `out` (`h.decoded_len`
/// bytes): checks the codec (pco only), the element size and the prefix, decodes pco's numbers
/// (exactly as many as the bitmap leaves, in native order when `native`) into the scratch
/// space and puts them and the fill element in place.
pub(crate) fn decode_mask(
    h: &FrameHeader,
    payload: &[u8],
    out: &mut [u8],
    native: bool,
    scratch: &mut DecodeScratch,
) -> Result<(), FrameError> {
    let esize = pco_filter_esize(
        h,
        out.len(),
        super::mask::supports,
        |codec| MaskError::Codec { codec }.into(),
        |esize| MaskError::ElementSize { esize }.into(),
    )?;
    let n = out.len() / esize;
    let mut bits = std::mem::take(&mut scratch.bits);
    let r = super::mask::decode(payload, esize, n, &mut bits)
        .map_err(FrameError::from)
        .and_then(|(fill, m, pco)| {
            // At most the block's decoded length, which the layout bounds.
            let rest = &mut scratch.filtered;
            rest.clear();
            grow(rest, m * esize)?;
            super::pco::decompress_into(h.esize, pco, rest, native, &mut scratch.pco)?;
            super::mask::undo_into(rest, &bits, fill, esize, out, native);
            Ok(())
        });
    scratch.bits = bits;
    r
}

/// Decodes the payload of a `fit` frame (after its CRC check) into `out` (`h.decoded_len`
/// bytes): checks the codec (pco only), the element size and the prefix, decodes pco's
/// residuals (exactly one per element the bitmap does not mark, or per element without one)
/// into the scratch space and rebuilds the elements from them.
pub(crate) fn decode_fit(
    h: &FrameHeader,
    payload: &[u8],
    out: &mut [u8],
    native: bool,
    scratch: &mut DecodeScratch,
) -> Result<(), FrameError> {
    let esize = pco_filter_esize(
        h,
        out.len(),
        super::fit::supports,
        |codec| FitError::Codec { codec }.into(),
        |esize| FitError::ElementSize { esize }.into(),
    )?;
    let n = out.len() / esize;
    let (params, has_fill, rest) = super::fit::Params::decode(payload)?;
    let mut bits = std::mem::take(&mut scratch.bits);
    let r = (|| {
        let (fill, m, pco) = if has_fill {
            let (fill, m, pco) = super::mask::decode(rest, esize, n, &mut bits)?;
            (Some(fill), m, pco)
        } else {
            (None, n, rest)
        };
        // At most the block's decoded length, which the layout bounds; pco overwrites it all.
        let words = &mut scratch.words;
        grow(words, (m * esize).div_ceil(8))?;
        let z = &mut bytemuck::cast_slice_mut::<u64, u8>(words)[..m * esize];
        super::pco::decompress_residuals_into(h.esize, pco, z, true, &mut scratch.pco)?;
        let fill = fill.map(|f| (f, &bits[..]));
        super::fit::undo_into(z, esize, &params, fill, out, native, &mut scratch.fit);
        Ok(())
    })();
    scratch.bits = bits;
    r
}

/// Decodes the payload of a `refs` frame (after its CRC check) into `out` (`h.decoded_len`
/// bytes): checks the codec, the element size and the table's entry count, decodes the codec's
/// data into `filtered` (exactly the length the count and the block's length give, at most
/// 1.5 times the block's for 8-byte elements, twice for 4-byte ones) and rebuilds the elements
/// from it, in native order when `native`.
pub(crate) fn decode_refs(
    h: &FrameHeader,
    payload: &[u8],
    out: &mut [u8],
    native: bool,
    filtered: &mut Vec<u8>,
    zstd_ctx: &mut Option<zstd::bulk::Decompressor<'static>>,
) -> Result<(), FrameError> {
    use super::refs;
    if !matches!(
        h.codec,
        Codec::None | Codec::Zstd | Codec::Deflate | Codec::Lzma
    ) {
        return Err(RefsError::Codec { codec: h.codec }.into());
    }
    let esize = usize::from(h.esize);
    if !refs::supports(esize) {
        return Err(RefsError::FrameElementSize { esize: h.esize }.into());
    }
    if !out.len().is_multiple_of(esize) {
        return Err(FrameError::FilterElementSize {
            esize: h.esize,
            decoded: h.decoded_len,
        });
    }
    let Some((count, payload)) = payload.split_first_chunk::<{ refs::PREFIX }>() else {
        return Err(RefsError::NoCount {
            stored: h.stored_len,
        }
        .into());
    };
    let d = u32::from_be_bytes(*count);
    let n = out.len() / esize;
    // Bounded by the block's length before anything is allocated.
    let len = refs::filtered_len(out.len(), esize, d as usize)
        .filter(|_| d as usize <= n)
        .ok_or(RefsError::Entries {
            entries: d as usize,
            elements: n,
        })?;
    // Grows once per thread, then reused: decompression overwrites all of it.
    grow(filtered, len)?;
    let f = &mut filtered[..len];
    decompress_into(h, payload, f, zstd_ctx)?;
    refs::undo(f, esize, d, out)?;
    if native {
        be_to_native(out, esize);
    }
    Ok(())
}

/// The row length that starts the payload of a `lorenzo` frame, and the codec's part of the
/// payload after it; for any other filter, 0 and the whole payload.
pub(crate) fn split_row<'p>(
    h: &FrameHeader,
    payload: &'p [u8],
) -> Result<(usize, &'p [u8]), FrameError> {
    use super::lorenzo::{supports, ROW_PREFIX};
    if h.filter != Filter::Lorenzo {
        return Ok((0, payload));
    }
    if !supports(usize::from(h.esize)) {
        return Err(LorenzoError::ElementSize { esize: h.esize }.into());
    }
    let Some((prefix, rest)) = payload.split_first_chunk::<ROW_PREFIX>() else {
        return Err(LorenzoError::NoRow {
            stored: h.stored_len,
        }
        .into());
    };
    match u32::from_be_bytes(*prefix) {
        0 => Err(LorenzoError::ZeroRow.into()),
        row => Ok((row as usize, rest)),
    }
}

/// Per-thread state of [`decode_payload_into`]: a zstd context and the buffer a filtered
/// payload is decompressed into, both reused from block to block.
#[derive(Default)]
pub struct DecodeScratch {
    zstd: Option<zstd::bulk::Decompressor<'static>>,
    filtered: Vec<u8>,
    pco: super::pco::PcoScratch,
    /// The residuals of a `plane` frame, as native numbers (aligned).
    words: Vec<u64>,
    /// The bitmap of a `mask` or `fit` frame.
    bits: Vec<u8>,
    /// The working values of a `fit` frame.
    fit: super::fit::Work,
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
    let n = h.decoded_len as usize;
    if out.len() != n {
        return Err(FrameError::DecodedLength {
            got: out.len(),
            decoded: h.decoded_len,
        });
    }
    if h.filter == Filter::Plane {
        let s = &mut *scratch;
        return decode_plane(h, payload, out, native, &mut s.words, &mut s.pco);
    }
    if h.filter == Filter::Refs {
        let s = &mut *scratch;
        return decode_refs(h, payload, out, native, &mut s.filtered, &mut s.zstd);
    }
    if h.filter == Filter::Mask {
        return decode_mask(h, payload, out, native, scratch);
    }
    if h.filter == Filter::Fit {
        return decode_fit(h, payload, out, native, scratch);
    }
    let (row, payload) = split_row(h, payload)?;
    let esize = usize::from(h.esize);
    if h.codec == Codec::Pco {
        // Numbers decode in native order: the swap to big-endian, if any, is pco's last pass.
        super::pco::check_pco_filter(h)?;
        return super::pco::decompress_into(h.esize, payload, out, native, &mut scratch.pco)
            .map_err(FrameError::from);
    }
    if h.codec == Codec::Context {
        super::context::check_context_filter(h)?;
        return Ok(super::context::decompress_into(
            payload, esize, out, native,
        )?);
    }
    if h.filter == Filter::None {
        decompress_into(h, payload, out, &mut scratch.zstd)?;
        if native {
            be_to_native(out, esize);
        }
        return Ok(());
    }
    if esize == 0 || !n.is_multiple_of(esize) {
        return Err(FrameError::FilterElementSize {
            esize: h.esize,
            decoded: h.decoded_len,
        });
    }
    // Grows once per thread, then reused: decompression overwrites all of it.
    grow(&mut scratch.filtered, n)?;
    let filtered = &mut scratch.filtered[..n];
    decompress_into(h, payload, filtered, &mut scratch.zstd)?;
    undo_filter_into(h.filter, filtered, esize, row, out, native);
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
