//! One error type for every codec and filter: [`CodecError`] wraps the error of each codec
//! and filter that has its own (`FitError` in `error/fit.rs`, `MaskError` in `error/mask.rs`,
//! ...: files that import no codec, so that the codecs import this file and not the reverse), and
//! [`FrameError`], what is wrong with a frame, wraps it, transparently, as `FrameError::Codec`,
//! beside the wire format's [`FrameHeaderError`] (in `crate::format`, which knows nothing of
//! codecs).

use crate::format::error::FrameHeaderError;
use crate::format::Codec;

mod context;
pub use context::ContextError;
mod fit;
pub use fit::FitError;
mod lorenzo;
pub use lorenzo::LorenzoError;
mod lzma;
pub use lzma::LzmaError;
mod mask;
pub use mask::MaskError;
mod plane;
pub use plane::PlaneError;
mod refs;
pub use refs::RefsError;

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
#[non_exhaustive]
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
    /// A codec without an error type of its own here refuses the payload (the codec, and what
    /// it says): a new codec needs no variant of its own.
    #[error("{}: {message}", codec.name())]
    Refused {
        /// The codec.
        codec: Codec,
        /// What it says.
        message: String,
    },
}

/// What is wrong with a frame: its header ([`crate::format::FrameHeader::decode`], as
/// [`FrameError::Header`]) or its payload ([`crate::codec::decode_payload`]).
///
/// ```
/// use nc3pack::{error::FrameError, format::{error::FrameHeaderError, FrameHeader}};
/// let e = FrameError::from(FrameHeader::decode(&[0u8; 36]).unwrap_err());
/// assert_eq!(e, FrameError::Header(FrameHeaderError::NoMagic));
/// assert_eq!(e.to_string(), "no frame sync magic");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The frame header is damaged.
    #[error(transparent)]
    Header(#[from] FrameHeaderError),
    /// The payload given is not as long as the frame header says.
    #[error("payload is {got} bytes, the frame says {stored}")]
    PayloadLength {
        /// Bytes given.
        got: usize,
        /// Stored length in the frame header.
        stored: u32,
    },
    /// The payload's CRC does not match.
    #[error("payload checksum mismatch")]
    PayloadChecksum,
    /// A raw (codec none) payload whose length is not the decoded length.
    #[error("raw payload is {got} bytes, the frame says {decoded} decoded")]
    RawLength {
        /// Payload length.
        got: usize,
        /// Decoded length in the frame header.
        decoded: u32,
    },
    /// A constant payload that is not one element of a length dividing the block.
    #[error(
        "constant block of {decoded} bytes with a {value_len}-byte value and element size {esize}"
    )]
    Constant {
        /// Decoded length in the frame header.
        decoded: u32,
        /// Payload length.
        value_len: usize,
        /// Element size in the frame header.
        esize: u16,
    },
    /// The payload decoded to another length than the frame says.
    #[error("decoded to {got} bytes, the frame says {decoded}")]
    DecodedLength {
        /// Bytes decoded.
        got: usize,
        /// Decoded length in the frame header.
        decoded: u32,
    },
    /// A filtered block whose length is not whole elements.
    #[error("filter element size {esize} does not divide the block length {decoded}")]
    FilterElementSize {
        /// Element size in the frame header.
        esize: u16,
        /// Decoded length in the frame header.
        decoded: u32,
    },
    /// A codec or filter refuses the payload (its own error, see [`CodecError`]).
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// A buffer of `len` bytes that decoding the frame needs cannot be allocated.
    #[error("cannot allocate {len} bytes of memory to decode the frame")]
    NoMemory {
        /// Bytes asked for.
        len: u64,
    },
    /// The netCDF header frame's decoded length cannot be allocated.
    #[error("cannot allocate {len} bytes of memory for the header")]
    HeaderNoMemory {
        /// Decoded length in the frame header.
        len: u32,
    },
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
