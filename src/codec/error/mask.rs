//! What is wrong with a `mask` frame: [`MaskError`] (the codec's or filter's file is `src/codec/mask.rs`).

/// What is wrong with a `mask` frame.
///
/// ```
/// use nc3pack::error::MaskError;
/// assert_eq!(
///     MaskError::AllFill { n: 5 }.to_string(),
///     "mask marks all 5 elements as the fill value"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MaskError {
    /// A `mask` frame whose element size is not 2, 4 or 8.
    #[error("mask filter with element size {esize} (it is defined for 2, 4 and 8)")]
    ElementSize {
        /// Element size in the frame header.
        esize: u16,
    },
    /// A `mask` frame with a codec other than pco.
    #[error("mask filter with codec {} (mask is defined with codec pco only)", codec.name())]
    Codec {
        /// Codec in the frame header.
        codec: crate::format::Codec,
    },
    /// A `mask` frame whose payload is too short to hold the fill element and the mask's
    /// length.
    #[error("mask payload of {stored} bytes has no fill element and mask length")]
    Prefix {
        /// Stored (payload) length.
        stored: usize,
    },
    /// A `mask` frame whose mask runs past the payload.
    #[error("mask of {len} bytes runs past the payload of {stored} bytes")]
    Length {
        /// The mask's length in the prefix.
        len: u32,
        /// Stored (payload) length.
        stored: usize,
    },
    /// A `mask` frame whose mask is not a zstd frame of the block's bitmap.
    #[error("mask bitmap: {0}")]
    Bits(String),
    /// A `mask` frame whose bitmap marks every element as the fill (no frame needs that: such
    /// a block is a constant block).
    #[error("mask marks all {n} elements as the fill value")]
    AllFill {
        /// Elements in the block.
        n: usize,
    },
}
