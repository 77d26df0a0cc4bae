//! The encoding side of the numeric front-ends whose codec decodes numbers (pco; `NUMBERS` on
//! their line in `src/format/filters.rs`): [`FrontEncode`], which such a front-end implements
//! in its own file beside its `NumericFront`. The `max` preset's search offers each block of
//! numbers to every one of them, in the registry's order, and keeps the smallest payload
//! (`Encoder::pco_block`, which names none of them: they come from
//! [`super::registry::front_encoders`]). So a new front-end of numbers is tried by `max` once it
//! has its file and its registry line. The default preset judges its front-ends on a sample of
//! the block instead, each by a rule of its own tuned on real files
//! (`codec/encoder/numeric.rs`): a new front-end joins that search by hand.

use super::pcodec::{Mode, NumKind};
use super::space::Scratch;

/// A block of numbers offered to the front-ends.
#[derive(Clone, Copy)]
pub(crate) struct Numbers<'d> {
    /// The number type.
    pub(crate) kind: NumKind,
    /// The block: whole numbers of `kind`, big-endian.
    pub(crate) data: &'d [u8],
    /// The length of the variable's innermost dimension when it has two or more (two rows at
    /// least are not promised).
    pub(crate) row: Option<usize>,
    /// The float mode pco finds over the block (`pcodec::block_float_mode`): `None` for
    /// integers, or floats where pco finds none.
    pub(crate) mode: Option<Mode>,
}

/// A numeric front-end's encoder: the front-end and pco on a whole block.
pub(crate) trait FrontEncode: Sync {
    /// Encodes `block` with the front-end and pco into `out` (its contents replaced): the
    /// payload its `NumericFront::open` reads, its prefix then pco's data. False (and `out`
    /// unspecified) when the front-end does not apply to the block, pco fails, or the payload
    /// would not be smaller than the block. What it reuses from block to block it keeps in
    /// `scratch`, by its type.
    fn encode(&self, block: &Numbers<'_>, scratch: &mut Scratch, out: &mut Vec<u8>) -> bool;
}

/// A block's residuals as native numbers of its element size, packed (as
/// `pcodec::compress_residuals_native` takes them): the scratch the front-ends that hand pco
/// residuals share (`plane`, `fit`), one buffer for them all.
#[derive(Default)]
pub(crate) struct Residuals(pub(crate) Vec<u64>);

impl super::space::KeptScratch for Residuals {
    #[cfg(test)]
    fn held(&self) -> usize {
        8 * self.0.capacity()
    }
}
