//! What is wrong with a `lorenzo` frame: [`LorenzoError`] (the codec's or filter's file is `src/codec/lorenzo.rs`).

/// What is wrong with a `lorenzo` frame.
///
/// ```
/// use nc3pack::error::LorenzoError;
/// assert_eq!(
///     LorenzoError::NoRow { stored: 3 }.to_string(),
///     "lorenzo payload of 3 bytes has no 4-byte row length"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LorenzoError {
    /// A `lorenzo` frame whose element size is not 4 or 8.
    #[error("lorenzo filter with element size {esize} (it is defined for 4 and 8)")]
    ElementSize {
        /// Element size in the frame header.
        esize: u16,
    },
    /// A `lorenzo` frame whose payload is too short to hold the row length.
    #[error("lorenzo payload of {stored} bytes has no 4-byte row length")]
    NoRow {
        /// Stored (payload) length.
        stored: u32,
    },
    /// A `lorenzo` frame whose row length is 0.
    #[error("lorenzo row length 0")]
    ZeroRow,
}
