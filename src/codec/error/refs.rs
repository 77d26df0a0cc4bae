//! What is wrong with a `refs` frame: [`RefsError`] (the codec's or filter's file is `src/codec/refs.rs`).

/// What is wrong with the filtered bytes of a `refs` (filter 7) frame.
///
/// ```
/// use nc3pack::error::RefsError;
/// assert_eq!(
///     RefsError::Reference { element: 4, reference: 9, entries: 2 }.to_string(),
///     "refs: element 4 refers 9 entries back, but the table has 2 so far"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RefsError {
    /// An element size other than 4 or 8.
    #[error("refs: element size {esize} (refs is defined for 4 and 8)")]
    ElementSize {
        /// The element size.
        esize: usize,
    },
    /// Filtered bytes of another length than 4 n + e d + t (n elements of e bytes, t trailing
    /// bytes, d table entries).
    #[error(
        "refs: {got} filtered bytes do not hold {elements} references and a table of {entries} entries"
    )]
    Length {
        /// Filtered bytes.
        got: usize,
        /// Table entries the frame states.
        entries: usize,
        /// Elements of the block.
        elements: usize,
    },
    /// More table entries than the block has elements.
    #[error("refs: a table of {entries} entries for {elements} elements")]
    Entries {
        /// Table entries the frame states.
        entries: usize,
        /// Elements of the block.
        elements: usize,
    },
    /// A reference to an entry before the table's first.
    #[error(
        "refs: element {element} refers {reference} entries back, but the table has {entries} so far"
    )]
    Reference {
        /// The element's index in the block.
        element: usize,
        /// The reference.
        reference: u32,
        /// Table entries before the element.
        entries: usize,
    },
    /// More zero references (new entries) than the table has.
    #[error("refs: more new values than the table's {entries} entries")]
    TableShort {
        /// Table entries the frame states.
        entries: usize,
    },
    /// Fewer zero references than table entries.
    #[error("refs: {used} new values, but the table has {entries} entries")]
    TableLong {
        /// Zero references.
        used: usize,
        /// Table entries the frame states.
        entries: usize,
    },
    /// A `refs` frame whose element size is not 4 or 8.
    #[error("refs filter with element size {esize} (it is defined for 4 and 8)")]
    FrameElementSize {
        /// Element size in the frame header.
        esize: u16,
    },
    /// A `refs` frame with a codec it does not go with (constant or pco).
    #[error("refs filter with codec {} (refs goes with none, zstd, deflate and lzma)", codec.name())]
    Codec {
        /// Codec in the frame header.
        codec: crate::format::Codec,
    },
    /// A `refs` frame whose payload is too short to hold the table's entry count.
    #[error("refs payload of {stored} bytes has no 4-byte table entry count")]
    NoCount {
        /// Stored (payload) length.
        stored: u32,
    },
}
