//! The registries: a codec's wire id to its implementation, and a filter's wire id to its
//! implementation. The codecs' lines are in `src/format/codecs.rs` (one line
//! each: wire id, name, implementation, capabilities), which this file expands; every codec's
//! implementation is named here and nowhere else. The traits are in [`super::block`], which
//! imports no codec.

use super::block::{BlockCodec, BlockFilter};
use crate::format::{Codec, Filter};

/// Defines [`codec`] from the registry's lines (their capabilities are
/// [`Codec::user_choice`] and [`Codec::follows_refs`], in `crate::format`).
macro_rules! registry {
    ($(
        $(#[doc = $doc:literal])*
        $(#[cfg($cfg:meta)])?
        $v:ident = $id:literal, $name:literal, $($imp:ident)::+, [$($flag:ident),*];
    )*) => {
        /// The implementation of a codec.
        pub(crate) fn codec(id: Codec) -> &'static dyn BlockCodec {
            match id {
                $($(#[cfg($cfg)])? Codec::$v => &crate::codec::$($imp)::+,)*
            }
        }
    };
}
crate::format::codecs::codecs!(registry);

impl Codec {
    /// Whether the codec decodes the start of a block without the rest (its implementation's
    /// [`BlockCodec::decodes_part`]), so that a small read stops early.
    pub(crate) fn decodes_part(self) -> bool {
        codec(self).decodes_part()
    }
}

/// The filter of a wire id: the one place that names every filter.
pub(crate) fn filter(id: Filter) -> &'static dyn BlockFilter {
    use super::shuffle::{ByteDelta, Delta, NoFilter, Shuffle, ZigZagDelta};
    match id {
        Filter::None => &NoFilter,
        Filter::Shuffle => &Shuffle,
        Filter::ByteDelta => &ByteDelta,
        Filter::Delta => &Delta,
        Filter::ZigZagDelta => &ZigZagDelta,
        Filter::Lorenzo => &super::lorenzo::Lorenzo,
        Filter::Plane => &super::plane::Plane,
        Filter::Refs => &super::refs::Refs,
        Filter::Mask => &super::mask::Mask,
        Filter::Fit => &super::fit::Fit,
    }
}
