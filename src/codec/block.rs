//! The traits of a frame's chain, one kind each: every codec of a frame header's codec id
//! implements [`BlockCodec`] in its own file, every byte filter (bytes to bytes after a codec
//! of bytes) [`ByteFilter`], every numeric front-end (array to array before a codec)
//! [`NumericFront`]. The registries that map a wire id to its implementation, and say which
//! kind a filter is, are in [`super::registry`] (their lines in `src/format/codecs.rs` and
//! `src/format/filters.rs`); [`super::decode`] runs the chain. This file names no codec.

use std::ops::RangeInclusive;

use super::error::{CodecError, FrameError};
use super::space::{Scratch, Space};
use super::word::be_to_native;
use crate::format::{Codec, FrameHeader};

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
    /// Decodes `payload` into `out` (room for the whole block, `h.decoded_len` bytes, the
    /// stored byte order) until at least `want` bytes are written, or to the end of the
    /// payload: the bytes written, and whether the payload ended. By default the whole block
    /// ([`BlockCodec::decompress_into`]); a codec that stops early (zstd) has `PART` on its
    /// registry line, so that a small read asks it for part of a block.
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
    /// Decodes `payload` of a frame `h` with filter `none` into `out` (`h.decoded_len` bytes),
    /// elements of 2, 4 or 8 bytes in native order when `native`, reusing `space`: by default,
    /// [`BlockCodec::decompress_into`] and a byte swap (a codec of numbers decodes them in the
    /// order asked for).
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
    /// Decodes `payload`, the codec's part of a frame `h` whose numeric front-end asks for
    /// numbers (`form`: [`Form::Numbers`], in native order when `native`, or
    /// [`Form::Residuals`]), into `out` (exactly the length the front-end gave), for a codec
    /// with `NUMBERS` on its registry line (pco). By default [`BlockCodec::wrong_filter`]'s
    /// error.
    ///
    /// # Errors
    ///
    /// A [`FrameError`] saying what is wrong with the payload.
    fn decode_numbers(
        &self,
        h: &FrameHeader,
        payload: &[u8],
        out: &mut [u8],
        form: Form,
        native: bool,
        scratch: &mut Scratch,
    ) -> Result<(), FrameError> {
        let _ = (payload, out, form, native, scratch);
        Err(self.wrong_filter(h))
    }
    /// The error for a frame `h` whose filter does not go with this codec (design/FORMAT.md,
    /// "Valid pairs"), when the filter has no error of its own for it
    /// ([`NumericFront::wrong_codec`]): a codec of numbers names the filters it goes with. By
    /// default [`CodecError::Refused`] naming the filter.
    fn wrong_filter(&self, h: &FrameHeader) -> FrameError {
        CodecError::Refused {
            codec: h.codec,
            message: format!("filter {} does not go with this codec", h.filter.name()),
        }
        .into()
    }
}

/// A byte filter (shuffle, the deltas, `none`): bytes to bytes, applied to a block's bytes
/// before a codec of bytes and undone on what the codec decodes.
pub(crate) trait ByteFilter: Sync {
    /// Applies the filter to `data` (big-endian elements of `esize` bytes) into `out`, replacing
    /// its contents.
    fn apply(&self, data: &[u8], esize: usize, out: &mut Vec<u8>);
    /// Reverses [`ByteFilter::apply`]: `data` is what it wrote, `out` (its contents replaced)
    /// the block.
    fn undo(&self, data: &[u8], esize: usize, out: &mut Vec<u8>);
    /// Reverses the filter on a frame's decompressed payload `src` (which it may use as
    /// scratch space) into `dst` (the same length), elements of 2, 4 or 8 bytes in native order
    /// when `native`. By default a copy.
    fn undo_into(&self, src: &mut [u8], esize: usize, dst: &mut [u8], native: bool) {
        dst.copy_from_slice(src);
        if native {
            be_to_native(dst, esize);
        }
    }
    /// Reverses the filter on the bytes `from..from + dst.len()` of the block only (big-endian
    /// elements) from the start of a frame's decompressed payload `src`: the filter's bytes of
    /// a block of `len` bytes with elements of `esize` bytes, of which `src` holds at least
    /// the first [`ByteFilter::part_needs`] (`from + dst.len() <= len`), for a filter with
    /// `PART` on its registry line. A small read then needs no buffer for the whole block, and
    /// its codec can stop early. False, `dst` untouched, for a filter that cannot (the block
    /// is then decoded whole) or a `src` too short. By default false.
    fn undo_part(&self, src: &[u8], len: usize, esize: usize, from: usize, dst: &mut [u8]) -> bool {
        let _ = (src, len, esize, from, dst);
        false
    }
    /// How many bytes from the start of the decompressed payload [`ByteFilter::undo_part`]
    /// reads to give the block's bytes before `end`, of a block of `len` bytes with elements
    /// of `esize` bytes. By default all of them.
    fn part_needs(&self, len: usize, esize: usize, end: usize) -> usize {
        let _ = (esize, end);
        len
    }
}

/// What a numeric front-end's codec decodes its part of the payload into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// Bytes ([`BlockCodec::decompress_into`]; a codec with `BYTES`).
    Bytes,
    /// The numbers of the frame's element size, of the number type the codec's data records,
    /// in native order when the frame is decoded so, else big-endian
    /// ([`BlockCodec::decode_numbers`]; a codec with `NUMBERS`).
    Numbers,
    /// Unsigned numbers of the frame's element size (residuals), in native order, into a
    /// buffer aligned for them ([`BlockCodec::decode_numbers`]; a codec with `NUMBERS`).
    Residuals,
}

/// The part of a frame's payload a numeric front-end's codec decodes, after the front-end's
/// prefix ([`NumericFront::open`]).
pub(crate) struct Coded<'p> {
    /// The codec's data.
    pub(crate) payload: &'p [u8],
    /// The bytes it decodes to (checked against the block's length).
    pub(crate) len: usize,
    /// What it decodes to.
    pub(crate) form: Form,
}

/// A numeric front-end (lorenzo, plane, refs, mask, fit): array to array before the codec, its
/// frame payload a prefix of its own then the codec's data. Decoding runs in data order
/// ([`super::decode`]): [`NumericFront::open`] reads the prefix and says what the codec
/// decodes, the codec decodes it, and [`NumericFront::close`] rebuilds the block from that.
/// What the prefix says is kept between the two in the front-end's own scratch (by its type,
/// in the thread's [`Scratch`]).
pub(crate) trait NumericFront: Sync {
    /// Applies the front-end to a whole block `data` (big-endian elements of `esize` bytes)
    /// into `out`, replacing its contents, in a form of its own (as `apply_filter` gives it).
    fn apply(&self, data: &[u8], esize: usize, out: &mut Vec<u8>);
    /// Reverses [`NumericFront::apply`] into `out` (its contents replaced).
    fn undo(&self, data: &[u8], esize: usize, out: &mut Vec<u8>);
    /// Its error for a frame whose codec `codec` it does not go with (design/FORMAT.md, "Valid
    /// pairs"); None to let the codec name the pair ([`BlockCodec::wrong_filter`]). By default
    /// None.
    fn wrong_codec(&self, codec: Codec) -> Option<FrameError> {
        let _ = codec;
        None
    }
    /// Reads the prefix of `payload`, a frame `h`'s (its CRC and its pair of filter and codec
    /// checked), keeping what it says in `kept`: the codec's part of the payload and what the
    /// codec decodes it to.
    ///
    /// # Errors
    ///
    /// A [`FrameError`] saying what is wrong with the prefix or the frame's element size.
    fn open<'p>(
        &self,
        h: &FrameHeader,
        payload: &'p [u8],
        kept: &mut Scratch,
    ) -> Result<Coded<'p>, FrameError>;
    /// Rebuilds the block into `out` (`h.decoded_len` bytes; elements of 2, 4 or 8 bytes in
    /// native order when `native`) from `coded`, what the codec decoded (the length and form
    /// [`NumericFront::open`] gave; it may use it as scratch space), with what `open` kept.
    ///
    /// # Errors
    ///
    /// A [`FrameError`] when the codec's data do not make a block.
    fn close(
        &self,
        h: &FrameHeader,
        coded: &mut [u8],
        out: &mut [u8],
        native: bool,
        kept: &mut Scratch,
    ) -> Result<(), FrameError>;
}

/// The element size of a frame `h` whose numeric front-end is defined for the element sizes
/// `supports` allows: the front-end's own error (from `size`) for another, and
/// [`FrameError::FilterElementSize`] when the block is not whole elements.
pub(crate) fn front_esize(
    h: &FrameHeader,
    supports: fn(usize) -> bool,
    size: fn(u16) -> FrameError,
) -> Result<usize, FrameError> {
    let esize = usize::from(h.esize);
    if !supports(esize) {
        return Err(size(h.esize));
    }
    if !(h.decoded_len as usize).is_multiple_of(esize) {
        return Err(FrameError::FilterElementSize {
            esize: h.esize,
            decoded: h.decoded_len,
        });
    }
    Ok(esize)
}
