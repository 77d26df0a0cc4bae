//! The registries: a codec's wire id to its implementation, and a filter's wire id to its kind
//! and implementation. Their lines are in `src/format/codecs.rs` and `src/format/filters.rs`
//! (one line each: wire id, name, implementation, capabilities), which this file expands;
//! every codec's and filter's implementation is named here and nowhere else. The traits are in
//! [`super::block`], which imports no codec.

use super::block::{BlockCodec, ByteFilter, NumericFront};
use super::error::CodecError;
use super::front::FrontEncode;
use crate::format::{Codec, Filter};

/// Defines [`codec`] from the codec registry's lines (their capabilities are
/// [`Codec::user_choice`], [`Codec::decodes_bytes`] and [`Codec::decodes_part`], and which
/// filters it goes with, [`Filter::goes_with`], in `crate::format`).
macro_rules! codec_registry {
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
crate::format::codecs::codecs!(codec_registry);

/// A filter's implementation, of its kind.
#[derive(Clone, Copy)]
pub(crate) enum Stage {
    /// A byte filter: undone on the bytes a codec of bytes decodes.
    Bytes(&'static dyn ByteFilter),
    /// A numeric front-end: its prefix read before the codec decodes, the block rebuilt after.
    Front(&'static dyn NumericFront),
}

/// A registry line's encoder for [`front_encoder`]: its implementation where the line says
/// `NUMBERS`, else None.
macro_rules! numbers_front {
    (NUMBERS $imp:path) => {
        Some(&$imp as &'static dyn FrontEncode)
    };
    ($needs:ident $imp:path) => {
        None
    };
}

/// Defines [`filter`] from the filter registry's lines (their capabilities are
/// [`Filter::goes_with`], [`Filter::undoes_part`] and [`Filter::is_same`], in `crate::format`).
macro_rules! filter_registry {
    ($(
        $(#[doc = $doc:literal])*
        $(#[cfg($cfg:meta)])?
        $v:ident = $id:literal, $name:literal, $kind:ident $($imp:ident)::+, $needs:ident,
            [$($flag:ident),*];
    )*) => {
        /// The implementation of a filter, of the kind its registry line says.
        pub(crate) fn filter(id: Filter) -> Stage {
            match id {
                $($(#[cfg($cfg)])? Filter::$v => Stage::$kind(&crate::codec::$($imp)::+),)*
            }
        }

        /// The encoder of a numeric front-end whose codec decodes numbers (`NUMBERS` on its
        /// registry line: its implementation is also a [`FrontEncode`]); None for any other
        /// filter.
        pub(crate) fn front_encoder(id: Filter) -> Option<&'static dyn FrontEncode> {
            match id {
                $($(#[cfg($cfg)])? Filter::$v => numbers_front!($needs crate::codec::$($imp)::+),)*
            }
        }
    };
}
crate::format::filters::filters!(filter_registry);

/// The encoders of the numeric front-ends whose codec decodes numbers, with their filters, in
/// the registry's order: what the `max` preset's search tries on every block of numbers (see
/// [`super::front`]).
pub(crate) fn front_encoders() -> impl Iterator<Item = (Filter, &'static dyn FrontEncode)> {
    Filter::ALL
        .iter()
        .filter_map(|&f| Some((f, front_encoder(f)?)))
}

impl Stage {
    /// Applies the filter to a whole block `data` (big-endian elements of `esize` bytes) into
    /// `out`, replacing its contents.
    pub(crate) fn apply(self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        match self {
            Stage::Bytes(f) => f.apply(data, esize, out),
            Stage::Front(f) => f.apply(data, esize, out),
        }
    }

    /// Reverses [`Stage::apply`] into `out` (its contents replaced).
    pub(crate) fn undo(self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        match self {
            Stage::Bytes(f) => f.undo(data, esize, out),
            Stage::Front(f) => f.undo(data, esize, out),
        }
    }
}

/// The byte filter of a frame with filter `filter` and codec `codec` when a part of its block
/// decodes from the start of the codec's bytes: the filter undoes a part (`PART` on its line),
/// the codec decodes bytes (`BYTES` on its) and the two go together. None otherwise (the block
/// is decoded whole).
pub(crate) fn part_filter(filter: Filter, codec: Codec) -> Option<&'static dyn ByteFilter> {
    let part = filter.undoes_part() && codec.decodes_bytes() && filter.goes_with(codec);
    match self::filter(filter) {
        Stage::Bytes(f) if part => Some(f),
        _ => None,
    }
}

/// The byte filter of a frame with codec `codec` and filter `filter` when a small read of it
/// decodes only the start of the codec's bytes: the codec stops early (`PART` on its line:
/// zstd) and the filter undoes a part ([`part_filter`]). None otherwise.
pub(crate) fn early_part_filter(codec: Codec, filter: Filter) -> Option<&'static dyn ByteFilter> {
    part_filter(filter, codec).filter(|_| codec.decodes_part())
}

/// Whether a small read of a frame with codec `codec` and filter `filter` decodes only the
/// start of the codec's bytes ([`early_part_filter`]).
pub(crate) fn decodes_part(codec: Codec, filter: Filter) -> bool {
    early_part_filter(codec, filter).is_some()
}

/// The default compression level of a codec.
///
/// ```
/// use nc3pack::{testing::default_level, format::Codec};
/// assert_eq!(default_level(Codec::Zstd), 3);
/// ```
pub fn default_level(codec: Codec) -> i32 {
    self::codec(codec).default_level()
}

/// The level of the `max` preset: zstd 19, deflate 9, lzma 9.
///
/// ```
/// use nc3pack::{testing::max_level, format::Codec};
/// assert_eq!(max_level(Codec::Zstd), 19);
/// ```
pub fn max_level(codec: Codec) -> i32 {
    self::codec(codec).max_level()
}

/// Checks a level for a codec.
///
/// # Errors
///
/// [`CodecError::Level`], naming the valid range.
pub fn check_level(codec: Codec, level: i32) -> Result<(), CodecError> {
    let range = self::codec(codec).levels();
    if range.contains(&level) {
        Ok(())
    } else {
        Err(CodecError::Level {
            codec,
            level,
            min: *range.start(),
            max: *range.end(),
        })
    }
}
