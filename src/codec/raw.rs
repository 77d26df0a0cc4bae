//! The two codecs without compression: `none` (the payload is the block) and `constant` (the
//! payload is one element, repeated to fill the block).

use super::block::BlockCodec;
use super::error::FrameError;
use super::space::Scratch;
use crate::format::FrameHeader;

/// Codec `none`: the payload is the block's bytes.
pub(crate) struct Raw;

impl BlockCodec for Raw {
    fn decompress_into(
        &self,
        h: &FrameHeader,
        payload: &[u8],
        out: &mut [u8],
        _scratch: &mut Scratch,
    ) -> Result<(), FrameError> {
        if payload.len() != out.len() {
            return Err(FrameError::RawLength {
                got: payload.len(),
                decoded: h.decoded_len,
            });
        }
        out.copy_from_slice(payload);
        Ok(())
    }
}

/// Codec `constant`: the payload is one element of `h.esize` bytes, the block that element
/// repeated.
pub(crate) struct Constant;

impl BlockCodec for Constant {
    fn decompress_into(
        &self,
        h: &FrameHeader,
        payload: &[u8],
        out: &mut [u8],
        _scratch: &mut Scratch,
    ) -> Result<(), FrameError> {
        let e = usize::from(h.esize);
        if e == 0 || payload.len() != e || !out.len().is_multiple_of(e) {
            return Err(FrameError::Constant {
                decoded: h.decoded_len,
                value_len: payload.len(),
                esize: h.esize,
            });
        }
        for c in out.chunks_exact_mut(e) {
            c.copy_from_slice(payload);
        }
        Ok(())
    }
}
