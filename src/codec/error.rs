//! One error type for every codec and filter: [`CodecError`] wraps the error of each codec's
//! and filter's own file (`FitError` in `fit.rs`, `MaskError` in `mask.rs`, ...), and
//! [`crate::format::error::FrameError`] wraps it, transparently, as `FrameError::Codec`.

use crate::format::error::FrameError;
use crate::format::Codec;

pub use super::context::ContextError;
pub use super::fit::FitError;
pub use super::lorenzo::LorenzoError;
pub use super::lzma::LzmaError;
pub use super::mask::MaskError;
pub use super::plane::PlaneError;
pub use super::refs::RefsError;

/// What a codec or filter refuses: a level out of range when an encoder is made, or a payload
/// that does not decode (each codec's and filter's own error, its message unchanged).
///
/// ```
/// use nc3pack::{error::{CodecError, FitError}, format::Codec};
/// let e = CodecError::Level { codec: Codec::Deflate, level: 12, min: 0, max: 9 };
/// assert_eq!(e.to_string(), "level 12 is outside 0..=9 for codec deflate");
/// let e = CodecError::from(FitError::Shift { shift: 16 });
/// assert_eq!(e.to_string(), "fit shift 16 (at most 15)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// The level is outside the codec's range.
    #[error("level {level} is outside {min}..={max} for codec {}", codec.name())]
    Level {
        /// The codec.
        codec: Codec,
        /// The level asked for.
        level: i32,
        /// Least level.
        min: i32,
        /// Greatest level.
        max: i32,
    },
    /// zstd could not make a compression context, or refused a payload (its message).
    #[error("zstd: {0}")]
    Zstd(String),
    /// DEFLATE refused the payload (its message).
    #[error("deflate: {0}")]
    Deflate(String),
    /// A DEFLATE stream that ends early, runs past the payload or decodes to another length.
    #[error("deflate stream does not decode to exactly {decoded} bytes")]
    DeflateLength {
        /// Decoded length in the frame header.
        decoded: u32,
    },
    /// A pco payload that pco refuses or that does not decode to exactly the block (what is
    /// wrong).
    #[error("pco: {0}")]
    Pco(String),
    /// An lzma payload that is not one .xz stream decoding to exactly the block.
    #[error("lzma: {0}")]
    Lzma(#[from] LzmaError),
    /// A `context` (codec 6) frame that is wrong.
    #[error(transparent)]
    Context(#[from] ContextError),
    /// A `lorenzo` frame that is wrong.
    #[error(transparent)]
    Lorenzo(#[from] LorenzoError),
    /// A `plane` frame that is wrong.
    #[error(transparent)]
    Plane(#[from] PlaneError),
    /// A `mask` frame that is wrong.
    #[error(transparent)]
    Mask(#[from] MaskError),
    /// A `fit` frame that is wrong.
    #[error(transparent)]
    Fit(#[from] FitError),
    /// A `refs` frame that is wrong.
    #[error(transparent)]
    Refs(#[from] RefsError),
}

/// `?` from a codec's own error straight to a [`FrameError`] (through [`CodecError`]).
macro_rules! frame_error_from {
    ($($t:ty),*) => {$(
        impl From<$t> for FrameError {
            fn from(e: $t) -> FrameError {
                FrameError::Codec(CodecError::from(e))
            }
        }
    )*};
}
frame_error_from!(
    LzmaError,
    ContextError,
    LorenzoError,
    PlaneError,
    MaskError,
    FitError,
    RefsError
);
