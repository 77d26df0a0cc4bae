//! The codec and filter traits and their registries: every codec of a frame header's codec id
//! implements [`BlockCodec`] in its own file, and [`codec`] maps the wire id to it; every filter
//! implements [`BlockFilter`], and [`filter`] maps its wire id to it. Adding a codec is its file
//! with an implementation, one line in [`codec`], and its wire id in [`crate::format::Codec`]
//! (and FORMAT.md); a filter likewise, with [`filter`] and [`crate::format::Filter`].

use std::ops::RangeInclusive;

use super::error::FrameError;
use crate::format::{Codec, Filter, FrameHeader};

/// The zstd decompression context a decoding thread keeps between frames (made at the first
/// zstd frame).
pub(crate) type ZstdContext = Option<zstd::bulk::Decompressor<'static>>;

/// The zstd compression context an encoder keeps (`None` when the encoder's codec is not zstd).
pub(crate) type ZstdCompressor<'a> = Option<&'a mut zstd::bulk::Compressor<'static>>;

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
    /// Compresses `input` at `level` into `out` (empty) if the result is smaller than `limit`
    /// bytes; false if not, or if the encoder makes this codec's payloads itself (none,
    /// constant, pco, context). `zstd` is the encoder's zstd context, for zstd.
    fn compress(
        &self,
        _zstd: ZstdCompressor<'_>,
        _level: i32,
        _input: &[u8],
        _limit: usize,
        _out: &mut Vec<u8>,
    ) -> bool {
        false
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
        zstd: &mut ZstdContext,
    ) -> Result<(), FrameError>;
}

/// The codec of a wire id: the one place that names every codec.
pub(crate) fn codec(id: Codec) -> &'static dyn BlockCodec {
    match id {
        Codec::None => &super::raw::Raw,
        Codec::Constant => &super::raw::Constant,
        Codec::Zstd => &super::zstd::Zstd,
        Codec::Deflate => &super::deflate::Deflate,
        Codec::Pco => &super::pco::Pco,
        Codec::Lzma => &super::lzma::Lzma,
        Codec::Context => &super::context::Context,
    }
}

/// One filter, applied to and undone on a whole block (big-endian elements of `esize` bytes).
pub(crate) trait BlockFilter: Sync {
    /// Applies the filter to `data` into `out`, replacing its contents.
    fn apply(&self, data: &[u8], esize: usize, out: &mut Vec<u8>);
    /// Reverses [`BlockFilter::apply`]: `data` is what it wrote, `out` (its contents replaced)
    /// the block.
    fn undo(&self, data: &[u8], esize: usize, out: &mut Vec<u8>);
}

/// The filter of a wire id: the one place that names every filter.
pub(crate) fn filter(id: Filter) -> &'static dyn BlockFilter {
    use super::shuffle::{ByteDelta, Delta, NoFilter, Shuffle, ZigZagDelta};
    match id {
        Filter::None => &NoFilter,
        Filter::Shuffle => &Shuffle,
        Filter::ByteDelta => &ByteDelta,
        Filter::Delta => &Delta,
        Filter::ZigZagDelta => &ZigZagDelta,
        Filter::Lorenzo => &super::lorenzo::Lorenzo,
        Filter::Plane => &super::plane::Plane,
        Filter::Refs => &super::refs::Refs,
        Filter::Mask => &super::mask::Mask,
        Filter::Fit => &super::fit::Fit,
    }
}
