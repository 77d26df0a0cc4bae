//! What is wrong with a `lzma` frame: [`LzmaError`] (the codec's or filter's file is `src/codec/lzma.rs`).

/// What is wrong with an lzma (codec 5) payload.
///
/// ```
/// use nc3pack::error::LzmaError;
/// assert_eq!(
///     LzmaError::Trailing { extra: 3 }.to_string(),
///     "3 bytes follow the end of the .xz stream"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LzmaError {
    /// liblzma refused the payload (its message: not an .xz stream, corrupt data, ...).
    #[error("{0}")]
    Xz(String),
    /// The stream needs a dictionary larger than a block of this length allows.
    #[error("the stream needs a dictionary larger than {limit} bytes (the most a block of its length may use)")]
    Dictionary {
        /// The largest dictionary allowed, in bytes.
        limit: u64,
    },
    /// The payload ends before the stream does.
    #[error("truncated .xz stream: the payload ends before the stream does ({got} of {decoded} bytes decoded)")]
    Truncated {
        /// Bytes decoded when the payload ran out.
        got: usize,
        /// Decoded length in the frame header.
        decoded: usize,
    },
    /// The stream decodes to more bytes than the block has.
    #[error("the .xz stream decodes to more than the frame's {decoded} bytes")]
    TooLong {
        /// Decoded length in the frame header.
        decoded: usize,
    },
    /// The stream ends before the block is complete.
    #[error("the .xz stream decodes to {got} bytes, the frame says {decoded}")]
    Short {
        /// Bytes decoded.
        got: usize,
        /// Decoded length in the frame header.
        decoded: usize,
    },
    /// Bytes follow the end of the stream inside the payload.
    #[error("{extra} bytes follow the end of the .xz stream")]
    Trailing {
        /// How many.
        extra: usize,
    },
}
