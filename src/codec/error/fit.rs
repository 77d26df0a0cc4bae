//! What is wrong with a `fit` frame: [`FitError`] (the codec's or filter's file is `src/codec/fit.rs`).

/// What is wrong with a `fit` frame.
///
/// ```
/// use nc3pack::error::FitError;
/// assert_eq!(FitError::Taps { count: 33 }.to_string(), "fit prefix with 33 taps (at most 32)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FitError {
    /// A `fit` frame whose element size is not 2, 4 or 8.
    #[error("fit filter with element size {esize} (it is defined for 2, 4 and 8)")]
    ElementSize {
        /// Element size in the frame header.
        esize: u16,
    },
    /// A `fit` frame with a codec other than pco.
    #[error("fit filter with codec {} (fit is defined with codec pco only)", codec.name())]
    Codec {
        /// Codec in the frame header.
        codec: crate::format::Codec,
    },
    /// A `fit` frame whose payload is too short for its prefix (the head, then the taps its
    /// head counts).
    #[error("fit payload of {stored} bytes has no {need}-byte prefix (map, shift, flags, taps)")]
    Prefix {
        /// Stored (payload) length.
        stored: usize,
        /// The prefix's length as far as it was read.
        need: usize,
    },
    /// A `fit` frame whose map byte is not 0 (integers) or 1 (floats).
    #[error("fit map byte {map} (0 integers, 1 floats)")]
    Map {
        /// The map byte.
        map: u8,
    },
    /// A `fit` frame whose shift exceeds 15.
    #[error("fit shift {shift} (at most 15)")]
    Shift {
        /// The shift byte.
        shift: u8,
    },
    /// A `fit` frame whose flags set a bit other than bit 0 (a fill section).
    #[error("fit flags {flags:#04x} (only bit 0, a fill section, is defined)")]
    Flags {
        /// The flags byte.
        flags: u8,
    },
    /// A `fit` frame with more than 32 taps.
    #[error("fit prefix with {count} taps (at most 32)")]
    Taps {
        /// The tap count.
        count: u8,
    },
    /// A `fit` tap whose offset is below 2.
    #[error("fit tap {tap} has offset {offset} (at least 2)")]
    Offset {
        /// The tap's position in the prefix, from 0.
        tap: usize,
        /// Its offset.
        offset: u32,
    },
}
