//! The deflate codec (raw deflate, no zlib header).

use super::block::{BlockCodec, Compress};
use super::error::CodecError;
use super::error::FrameError;
use super::space::Scratch;
use crate::format::FrameHeader;

pub(crate) fn compress_deflate(level: i32, input: &[u8], limit: usize, out: &mut Vec<u8>) -> bool {
    let mut c = flate2::Compress::new(flate2::Compression::new(level as u32), false);
    let mut buf = Vec::with_capacity(limit.min(input.len() + input.len() / 100 + 1024));
    match c.compress_vec(input, &mut buf, flate2::FlushCompress::Finish) {
        Ok(flate2::Status::StreamEnd) if buf.len() < limit => {
            out.extend_from_slice(&buf);
            true
        }
        _ => false,
    }
}

/// DEFLATE's compressor: its level.
struct DeflateCompressor(i32);

impl Compress for DeflateCompressor {
    fn compress(&mut self, input: &[u8], limit: usize, out: &mut Vec<u8>) -> bool {
        compress_deflate(self.0, input, limit, out)
    }
}

/// Codec `deflate`: one raw DEFLATE stream.
pub(crate) struct Deflate;

impl BlockCodec for Deflate {
    fn levels(&self) -> std::ops::RangeInclusive<i32> {
        0..=9
    }
    fn default_level(&self) -> i32 {
        6
    }
    fn max_level(&self) -> i32 {
        9
    }
    fn compressor(&self, level: i32) -> Result<Option<Box<dyn Compress>>, CodecError> {
        Ok(Some(Box::new(DeflateCompressor(level))))
    }
    fn decompress_into(
        &self,
        h: &FrameHeader,
        payload: &[u8],
        out: &mut [u8],
        _scratch: &mut Scratch,
    ) -> Result<(), FrameError> {
        let mut dec = flate2::Decompress::new(false);
        let st = dec
            .decompress(payload, out, flate2::FlushDecompress::Finish)
            .map_err(|e| CodecError::Deflate(e.to_string()))?;
        if st != flate2::Status::StreamEnd
            || dec.total_out() != out.len() as u64
            || dec.total_in() != payload.len() as u64
        {
            return Err(CodecError::DeflateLength {
                decoded: h.decoded_len,
            }
            .into());
        }
        Ok(())
    }
}
