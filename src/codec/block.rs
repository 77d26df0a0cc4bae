//! The codec and filter traits: every codec of a frame header's codec id implements
//! [`BlockCodec`] in its own file, every filter [`BlockFilter`]. The registries that map a wire
//! id to its implementation are in [`super::registry`] (the codecs' lines in
//! `src/format/codecs.rs`): this file names no codec.

use std::ops::RangeInclusive;

use super::error::{CodecError, FrameError};
use super::space::{grow, Scratch, Space};
use crate::codec::word::be_to_native;
use crate::format::FrameHeader;

/// A codec's compressor, made by [`BlockCodec::compressor`] at a level, owning its state.
pub(crate) trait Compress: Send {
    /// Compresses `input` into `out` (appended) if the result is smaller than `limit` bytes;
    /// false (and `out` as it was) if not.
    fn compress(&mut self, input: &[u8], limit: usize, out: &mut Vec<u8>) -> bool;
}

/// One codec: its levels, how it compresses a block's (filtered) bytes, and how it turns a
/// frame payload back into them.
pub(crate) trait BlockCodec: Sync {
    /// The levels it accepts (`0..=0` for a codec without levels).
    fn levels(&self) -> RangeInclusive<i32> {
        0..=0
    }
    /// Its default level.
    fn default_level(&self) -> i32 {
        0
    }
    /// The level of the `max` preset.
    fn max_level(&self) -> i32 {
        0
    }
    /// The codec's compressor at `level` (checked), which owns what it keeps between blocks
    /// (zstd its context): None for a codec whose payloads the encoder makes itself (none,
    /// constant, pco, context, zstd-dict). By default None.
    ///
    /// # Errors
    ///
    /// [`CodecError`] when the compressor cannot be made (zstd's context).
    fn compressor(&self, level: i32) -> Result<Option<Box<dyn Compress>>, CodecError> {
        let _ = level;
        Ok(None)
    }
    /// Decodes `payload` of the frame `h` into `out` (`h.decoded_len` bytes; the stored byte
    /// order, no filter undone), which it must fill exactly.
    ///
    /// # Errors
    ///
    /// A [`FrameError`] saying what is wrong with the payload.
    fn decompress_into(
        &self,
        h: &FrameHeader,
        payload: &[u8],
        out: &mut [u8],
        scratch: &mut Scratch,
    ) -> Result<(), FrameError>;
    /// Whether [`BlockCodec::decompress_upto`] stops once it has the bytes asked for, so that a
    /// small read of the start of a block decodes only that (zstd). By default false.
    fn decodes_part(&self) -> bool {
        false
    }
    /// Decodes `payload` into `out` (room for the whole block, `h.decoded_len` bytes, the
    /// stored byte order) until at least `want` bytes are written, or to the end of the
    /// payload: the bytes written, and whether the payload ended. By default the whole block
    /// ([`BlockCodec::decompress_into`]).
    ///
    /// # Errors
    ///
    /// A [`FrameError`] saying what is wrong with the payload.
    fn decompress_upto(
        &self,
        h: &FrameHeader,
        payload: &[u8],
        out: &mut [u8],
        want: usize,
        scratch: &mut Scratch,
    ) -> Result<(usize, bool), FrameError> {
        let _ = want;
        self.decompress_into(h, payload, out, scratch)?;
        Ok((out.len(), true))
    }
    /// Whether the codec decodes a frame's numbers itself (pco, context): it then checks the
    /// frame's filter in [`BlockCodec::decode_into`], and no filter is undone after it.
    fn decodes_numbers(&self) -> bool {
        false
    }
    /// Decodes `payload` of the frame `h` (with filter `none`, or any filter for a codec that
    /// [`BlockCodec::decodes_numbers`]) into `out` (`h.decoded_len` bytes), elements of 2, 4
    /// or 8 bytes in native order when `native`, reusing `space`: by default,
    /// [`BlockCodec::decompress_into`] and a byte swap.
    ///
    /// # Errors
    ///
    /// A [`FrameError`] saying what is wrong with the payload.
    fn decode_into(
        &self,
        h: &FrameHeader,
        payload: &[u8],
        out: &mut [u8],
        native: bool,
        space: &mut Space,
    ) -> Result<(), FrameError> {
        self.decompress_into(h, payload, out, &mut space.codecs)?;
        if native {
            be_to_native(out, usize::from(h.esize));
        }
        Ok(())
    }
}

/// One filter: applied to and undone on a whole block (big-endian elements of `esize` bytes),
/// and undone on a frame's payload.
pub(crate) trait BlockFilter: Sync {
    /// Applies the filter to `data` into `out`, replacing its contents.
    fn apply(&self, data: &[u8], esize: usize, out: &mut Vec<u8>);
    /// Reverses [`BlockFilter::apply`]: `data` is what it wrote, `out` (its contents replaced)
    /// the block.
    fn undo(&self, data: &[u8], esize: usize, out: &mut Vec<u8>);
    /// Decodes the payload of a frame `h` with this filter and `codec`, the frame's (its CRC
    /// checked), into `out` (`h.decoded_len` bytes, checked), elements of 2, 4 or 8 bytes in
    /// native order when `native`, reusing `space`. By default the codec's output goes to
    /// `space` and [`BlockFilter::undo_into`] turns it into `out` (see [`codec_then_undo`]).
    ///
    /// # Errors
    ///
    /// A [`FrameError`] saying what is wrong with the payload.
    fn decode_frame(
        &self,
        codec: &dyn BlockCodec,
        h: &FrameHeader,
        payload: &[u8],
        out: &mut [u8],
        native: bool,
        space: &mut Space,
    ) -> Result<(), FrameError> {
        codec_then_undo(self, codec, h, payload, 0, out, native, space)
    }
    /// Reverses the filter on a frame's decompressed payload `src` (which it may use as
    /// scratch space) into `dst` (the same length), `row` being the row length the frame
    /// gives (lorenzo's; 0 for the others), elements of 2, 4 or 8 bytes in native order when
    /// `native`. By default a copy.
    fn undo_into(&self, src: &mut [u8], esize: usize, row: usize, dst: &mut [u8], native: bool) {
        let _ = row;
        dst.copy_from_slice(src);
        if native {
            be_to_native(dst, esize);
        }
    }
    /// Reverses the filter on the bytes `from..from + dst.len()` of the block only (big-endian
    /// elements) from the start of a frame's decompressed payload `src`: the filter's bytes of
    /// a block of `len` bytes with elements of `esize` bytes, of which `src` holds at least
    /// the first [`BlockFilter::part_needs`] (`from + dst.len() <= len`). A small read then
    /// needs no buffer for the whole block, and its codec can stop early. False, `dst`
    /// untouched, for a filter that cannot (the block is then decoded whole) or a `src` too
    /// short. By default false.
    fn undo_part(&self, src: &[u8], len: usize, esize: usize, from: usize, dst: &mut [u8]) -> bool {
        let _ = (src, len, esize, from, dst);
        false
    }
    /// How many bytes from the start of the decompressed payload [`BlockFilter::undo_part`]
    /// reads to give the block's bytes before `end`, of a block of `len` bytes with elements
    /// of `esize` bytes. By default all of them.
    fn part_needs(&self, len: usize, esize: usize, end: usize) -> usize {
        let _ = (esize, end);
        len
    }
    /// Whether [`BlockFilter::undo_part`] may succeed: the filter decodes its frames as the
    /// codec's bytes then the filter undone (or, `none`, the codec's bytes as they are), and
    /// undoes a part of a block. By default false.
    fn undoes_part(&self) -> bool {
        false
    }
}

/// The decoding of a frame with filter `f` whose codec, `codec`, decompresses bytes that `f` then turns
/// into the block (the default of [`BlockFilter::decode_frame`]): the codec's output goes to
/// `space.filtered` and [`BlockFilter::undo_into`] (with the frame's row length `row`) makes
/// `out` of it. A codec that decodes numbers itself (pco, context) decodes straight into `out`
/// instead, refusing a filter other than `none`.
#[allow(clippy::too_many_arguments)] // the frame's decoding: what `decode_frame` gets, and the row
pub(crate) fn codec_then_undo<F: BlockFilter + ?Sized>(
    f: &F,
    codec: &dyn BlockCodec,
    h: &FrameHeader,
    payload: &[u8],
    row: usize,
    out: &mut [u8],
    native: bool,
    space: &mut Space,
) -> Result<(), FrameError> {
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
    codec.decompress_into(h, payload, filtered, &mut space.codecs)?;
    f.undo_into(filtered, esize, row, out, native);
    Ok(())
}
