//! What is wrong with a `context` frame: [`ContextError`] (the codec's or filter's file is `src/codec/context.rs`).

/// What is wrong with a `context` (codec 6) payload.
///
/// ```
/// use nc3pack::error::ContextError;
/// assert_eq!(
///     ContextError::BitLength { element: 7, bits: 40, width: 32 }.to_string(),
///     "context: element 7 has a residual of 40 bits (numbers of 32 bits)"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ContextError {
    /// An element size other than 2, 4 or 8.
    #[error("context: element size {esize} (context is defined for 2, 4 and 8)")]
    ElementSize {
        /// The element size.
        esize: usize,
    },
    /// A block that is not a whole number of elements.
    #[error("context: {len} bytes are not whole elements of {esize} bytes")]
    PartialElement {
        /// Decoded length.
        len: usize,
        /// The element size.
        esize: usize,
    },
    /// A payload shorter than its 10-byte prefix.
    #[error("context: payload of {len} bytes has no 10-byte prefix")]
    Prefix {
        /// Payload length.
        len: usize,
    },
    /// A number type byte other than 0 (integers) or 1 (floats).
    #[error("context: number type {byte} (0: integers, 1: floats)")]
    NumberType {
        /// The byte.
        byte: u8,
    },
    /// A predictor byte other than 0, 1 or 2.
    #[error("context: predictor {byte} (0: left, 1: mean, 2: lorenzo)")]
    Predictor {
        /// The byte.
        byte: u8,
    },
    /// A row length of 0.
    #[error("context: row length 0")]
    ZeroRow,
    /// A range coder stream length beyond the payload.
    #[error("context: range coder stream of {stated} bytes, but {left} bytes follow the prefix")]
    RangeLength {
        /// Stated length.
        stated: usize,
        /// Bytes after the prefix.
        left: usize,
    },
    /// A range coder stream that ends before the block does.
    #[error("context: range coder stream of {len} bytes ends before the block")]
    RangeShort {
        /// Stream length.
        len: usize,
    },
    /// A range coder stream that does not start with a 0 byte.
    #[error("context: range coder stream starts with {byte} (not 0)")]
    RangeFirstByte {
        /// The first byte.
        byte: u8,
    },
    /// A range coder stream with bytes the block does not use.
    #[error("context: the block uses {used} of the range coder stream's {len} bytes")]
    RangeTrailing {
        /// Bytes used.
        used: usize,
        /// Stream length.
        len: usize,
    },
    /// A residual bit length greater than the numbers' width.
    #[error("context: element {element} has a residual of {bits} bits (numbers of {width} bits)")]
    BitLength {
        /// The element's index in the block.
        element: usize,
        /// The decoded bit length.
        bits: u32,
        /// The numbers' width in bits.
        width: u32,
    },
    /// A low-bits stream that ends before the block does.
    #[error("context: low-bits stream of {len} bytes ends before the block")]
    RawShort {
        /// Stream length.
        len: usize,
    },
    /// A low-bits stream with bytes (or nonzero padding bits) the block does not use.
    #[error(
        "context: the block uses {used} of the low-bits stream's {len} bytes (or its padding is not zero)"
    )]
    RawTrailing {
        /// Bytes used.
        used: usize,
        /// Stream length.
        len: usize,
    },
    /// A `context` (codec 6) frame with a filter (its frames have none).
    #[error("filter {} with codec context (its frames have filter none)", filter.name())]
    Filter {
        /// Filter in the frame header.
        filter: crate::format::Filter,
    },
}
