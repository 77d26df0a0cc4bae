//! Codecs and filters: turning a block of variable data into a frame payload and back.
//!
//! Encoding applies the filter (byte shuffle for multi-byte elements) and then the codec; if the
//! result is not smaller than the input, the block is stored raw (codec `none`, filter `none`),
//! so a stored payload is never larger than the block.

//! Each codec (`zstd`, `deflate`, `lzma`, `pco`, `context`) and each filter (`shuffle` and the
//! byte deltas, `lorenzo`, `plane`, `fit`, `mask`, `refs`) has its own file here; the wire ids
//! that name them in a frame header are [`crate::format::Codec`] and [`crate::format::Filter`].
//! [`encoder`] chooses a block's filter and codec (its thresholds are in [`tuning`]) and
//! [`decode`] turns a frame payload back into the block.

pub(crate) mod block;
pub(crate) mod context;
pub(crate) mod decode;
pub(crate) mod deflate;
pub(crate) mod encoder;
pub(crate) mod error;
pub(crate) mod filter;
pub(crate) mod fit;
pub(crate) mod front;
pub(crate) mod lorenzo;
pub(crate) mod lzma;
pub(crate) mod mask;
pub(crate) mod pages;
pub(crate) mod pcodec;
pub(crate) mod plane;
pub(crate) mod raw;
pub(crate) mod refs;
pub(crate) mod registry;
pub(crate) mod shuffle;
pub(crate) mod space;
#[cfg(test)]
mod tests;
pub(crate) mod tuning;
pub(crate) mod word;
pub(crate) mod zstd;

pub use decode::{decode_payload, decode_payload_into, DecodeScratch};
pub(crate) use decode::{decode_payload_part, PartDecoder};
#[cfg(any(test, feature = "testing"))]
pub use encoder::ConstantBlock;
pub use encoder::{Encoded, Encoder};
pub use error::{
    CodecError, ContextError, FitError, FrameError, LorenzoError, LzmaError, MaskError, PlaneError,
    RefsError,
};
#[cfg(any(test, feature = "testing"))]
pub use filter::{
    apply_filter, apply_lorenzo, context_payload, fit_payload, mask_payload, plane_payload,
    undo_filter, undo_lorenzo,
};
pub use filter::{member_decode, member_encode, FilterMode};
pub(crate) use pages::prefault;
pub use registry::{check_level, default_level, max_level};
#[cfg(any(test, feature = "testing"))]
pub use shuffle::{shuffle, unshuffle};
pub(crate) use zstd::{block_sizes_frame, constants_frame, header_frame};
