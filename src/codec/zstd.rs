//! The zstd codec: block compression and the header and constants frames.

use super::block::{BlockCodec, ZstdCompressor, ZstdContext};
use super::error::CodecError;
use crate::format::error::FrameError;
use crate::format::{Codec, FrameHeader};

/// Compresses into `out` if the result is smaller than `limit` bytes.
pub(crate) fn compress_zstd(
    c: Option<&mut zstd::bulk::Compressor<'static>>,
    input: &[u8],
    limit: usize,
    out: &mut Vec<u8>,
) -> bool {
    let Some(c) = c else { return false };
    let cap = limit.min(zstd::zstd_safe::compress_bound(input.len()));
    let mut buf = Vec::with_capacity(cap);
    match c.compress_to_buffer(input, &mut buf) {
        Ok(_) if buf.len() < limit => {
            out.extend_from_slice(&buf);
            true
        }
        _ => false,
    }
}

/// Level of the header frame's zstd compression.
pub(crate) const HEADER_LEVEL: i32 = 19;
/// Level of the constants frames' zstd compression.
pub(crate) const CONSTANTS_LEVEL: i32 = 3;

thread_local! {
    /// This thread's zstd contexts for header and constants frames, by level, kept between calls:
    /// setting up a zstd context (which probes the CPU with `cpuid`, slow in a virtual machine)
    /// costs more than compressing a small file's header. A reused context compresses to the same
    /// bytes as a fresh one (zstd resets the session at every one-shot compression; the tests
    /// check it).
    static BYTES_ZSTD: std::cell::RefCell<Vec<(i32, zstd::bulk::Compressor<'static>)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The payload and codec of a frame of bytes (the header frame, a constants frame): `data`
/// compressed by zstd at `level` (one zstd frame) when that is smaller, else `data` raw.
pub(crate) fn compress_bytes(data: &[u8], level: i32) -> (Codec, std::borrow::Cow<'_, [u8]>) {
    match zstd_if_smaller(data, level) {
        Some(c) => (Codec::Zstd, std::borrow::Cow::Owned(c)),
        None => (Codec::None, std::borrow::Cow::Borrowed(data)),
    }
}

/// `data` compressed by zstd at `level` if that is smaller than `data`; `None` if not, or on
/// failure.
pub(crate) fn zstd_if_smaller(data: &[u8], level: i32) -> Option<Vec<u8>> {
    BYTES_ZSTD.with(|cell| {
        let mut ctxs = cell.try_borrow_mut().ok()?;
        let k = match ctxs.iter().position(|(l, _)| *l == level) {
            Some(k) => k,
            None => {
                ctxs.push((level, zstd::bulk::Compressor::new(level).ok()?));
                ctxs.len() - 1
            }
        };
        let packed = ctxs[k].1.compress(data);
        if packed.is_err() {
            // Start the next frame from a fresh context.
            ctxs.swap_remove(k);
        }
        packed.ok().filter(|c| c.len() < data.len())
    })
}

/// Codec `zstd`: one zstd frame.
pub(crate) struct Zstd;

impl BlockCodec for Zstd {
    fn levels(&self) -> std::ops::RangeInclusive<i32> {
        -7..=22
    }
    fn default_level(&self) -> i32 {
        3
    }
    fn max_level(&self) -> i32 {
        19
    }
    fn compress(
        &self,
        zstd: ZstdCompressor<'_>,
        _level: i32,
        input: &[u8],
        limit: usize,
        out: &mut Vec<u8>,
    ) -> bool {
        compress_zstd(zstd, input, limit, out)
    }
    fn decompress_into(
        &self,
        h: &FrameHeader,
        payload: &[u8],
        out: &mut [u8],
        zstd_ctx: &mut ZstdContext,
    ) -> Result<(), FrameError> {
        let zerr = |e: std::io::Error| CodecError::Zstd(e.to_string());
        let d = match zstd_ctx {
            Some(d) => d,
            None => zstd_ctx.insert(zstd::bulk::Decompressor::new().map_err(zerr)?),
        };
        let got = d.decompress_to_buffer(payload, out).map_err(zerr)?;
        if got != out.len() {
            return Err(FrameError::DecodedLength {
                got,
                decoded: h.decoded_len,
            });
        }
        Ok(())
    }
}
