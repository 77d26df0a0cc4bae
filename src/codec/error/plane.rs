//! What is wrong with a `plane` frame: [`PlaneError`] (the codec's or filter's file is `src/codec/plane.rs`).

/// What is wrong with a `plane` frame.
///
/// ```
/// use nc3pack::error::PlaneError;
/// assert_eq!(PlaneError::Shift { shift: 7 }.to_string(), "plane shift 7 (at most 6)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlaneError {
    /// A `plane` frame whose element size is not 2, 4 or 8.
    #[error("plane filter with element size {esize} (it is defined for 2, 4 and 8)")]
    ElementSize {
        /// Element size in the frame header.
        esize: u16,
    },
    /// A `plane` frame with a codec other than pco.
    #[error("plane filter with codec {} (plane is defined with codec pco only)", codec.name())]
    Codec {
        /// Codec in the frame header.
        codec: crate::format::Codec,
    },
    /// A `plane` frame whose payload is too short to hold the 9-byte prefix.
    #[error(
        "plane payload of {stored} bytes has no 9-byte prefix (row length, map, weights, shift)"
    )]
    Prefix {
        /// Stored (payload) length.
        stored: usize,
    },
    /// A `plane` frame whose row length is 0.
    #[error("plane row length 0")]
    ZeroRow,
    /// A `plane` frame whose map byte is not 0 (integers) or 1 (floats).
    #[error("plane map byte {map} (0 integers, 1 floats)")]
    Map {
        /// The map byte.
        map: u8,
    },
    /// A `plane` frame whose shift exceeds 6.
    #[error("plane shift {shift} (at most 6)")]
    Shift {
        /// The shift byte.
        shift: u8,
    },
}
