//! The filter registry: one line per filter, the one place that names every filter. Each line
//! gives the filter's doc, its [`super::Filter`] variant and wire id (design/FORMAT.md, "Block
//! frames"), its name (in messages and `--filter`), its kind and implementation (a path under
//! `crate::codec`), what its codec must do, and its capabilities.
//!
//! The kinds, in the order a frame decodes (the codec first, then the filter undone):
//!
//! - `Bytes`: a byte filter, bytes to bytes after a codec of bytes (a type implementing
//!   `ByteFilter`): the shuffles and the deltas;
//! - `Front`: a numeric front-end, array to array before the codec (a type implementing
//!   `NumericFront`): its payload starts with a prefix of its own, then the codec's data.
//!
//! What its codec must do is one capability of the codec registry (`src/format/codecs.rs`):
//! `BYTES` (a codec of bytes), `REFS` (a codec of bytes that may follow the refs prefix),
//! `NUMBERS` (a codec that decodes a front-end's numbers), or `ANY` (every codec: filter
//! `none`). That is design/FORMAT.md's "Valid pairs"; a reader refuses any other pair.
//!
//! Its capabilities:
//!
//! - `USER`: a `--filter` choice (`FilterMode::NAMES`, in the order of the lines; plane, refs,
//!   mask and fit are the encoder's choice, never the user's);
//! - `PART`: it undoes a part of a block from the start of the codec's bytes, so that a small
//!   read decodes only what it needs (with a codec of bytes);
//! - `SAME`: it leaves the bytes as they are (filter `none`): the codec decodes straight into
//!   the block.
//!
//! Everything else is derived from these lines: [`super::Filter`], its `from_id`, `name` and
//! capabilities (here, in `crate::format`, which resolves no implementation), and the
//! registry of implementations (`crate::codec::registry`, which does). A line with
//! `#[cfg(test)]` exists in the unit tests only (the toy filter of docs/development.md).

/// Calls the macro `$then` with the registry's lines (see the module doc).
macro_rules! filters {
    ($then:ident) => {
        $then! {
            /// No transform.
            None = 0, "none", Bytes shuffle::NoFilter, ANY, [USER, PART, SAME];
            /// Byte shuffle by element size: all first bytes of the elements, then all second
            /// bytes, ...
            Shuffle = 1, "shuffle", Bytes shuffle::Shuffle, BYTES, [USER, PART];
            /// Byte shuffle, then each byte stream replaced by its differences (Blosc2's
            /// "bytedelta").
            ByteDelta = 2, "bytedelta", Bytes shuffle::ByteDelta, BYTES, [USER, PART];
            /// Each element replaced by its difference from the previous one (as an unsigned
            /// big-endian integer of the element size, wrapping), then byte shuffle.
            Delta = 3, "delta", Bytes shuffle::Delta, BYTES, [USER, PART];
            /// Like [`Filter::Delta`], but each difference, viewed as a signed integer of the
            /// element size, is zigzag-encoded (0, -1, 1, -2, ... become 0, 1, 2, 3, ...) before
            /// the shuffle, so that small negative differences have small high bytes too.
            ZigZagDelta = 4, "zzdelta", Bytes shuffle::ZigZagDelta, BYTES, [USER, PART];
            /// A 2-D Lorenzo predictor on floats of 4 or 8 bytes (mapped to integers that keep
            /// their order): each element minus (left + up − up-left), with "up" one row of the
            /// variable's innermost dimension back, zigzag-encoded, then byte shuffle. The
            /// frame's payload starts with the row length (4 bytes, big-endian) before the
            /// codec's data.
            Lorenzo = 5, "lorenzo", Front lorenzo::Lorenzo, BYTES, [USER];
            /// A weighted 2-D predictor on the numbers of 2, 4 or 8 bytes (floats mapped to
            /// integers that keep their order): each element minus (wL·left + wU·up +
            /// wUL·up-left) / 2^s, the residuals zigzag-encoded as unsigned numbers, for codec
            /// pco only. The frame's payload starts with a 9-byte prefix (row length, map,
            /// weights, shift) before pco's data.
            Plane = 6, "plane", Front plane::Plane, NUMBERS, [];
            /// Each element of 4 or 8 bytes as a reference to an earlier equal value (0: the
            /// next entry of a table of the distinct values, else entries so far minus the
            /// entry's index), the references as big-endian u32 shuffled, then the table. The
            /// frame's payload starts with the table's entry count (4 bytes) before the codec's
            /// data, which decodes to the filtered length, not the block's.
            Refs = 7, "refs", Front refs::Refs, REFS, [];
            /// The elements of 2, 4 or 8 bytes equal to one value (a fill value) set apart, for
            /// codec pco only: the frame's payload starts with the fill element, the length of
            /// a mask and the mask (a zstd frame of a bitmap of the block's elements, 1 for the
            /// fill), followed by a pco file of the other elements.
            Mask = 8, "mask", Front mask::Mask, NUMBERS, [];
            /// A linear predictor fitted to the block on up to 32 earlier elements of 2, 4 or 8
            /// bytes (floats mapped to integers that keep their order), with the block's fill
            /// value set apart, for codec pco only: the frame's payload starts with a prefix
            /// (map, shift, flags, the taps' offsets and weights, then the fill element and
            /// mask when the block has one) before a pco file of the zigzag residuals of the
            /// elements that are not the fill.
            Fit = 9, "fit", Front fit::Fit, NUMBERS, [];
            /// A toy byte filter (each byte less the byte before it), registered in the unit
            /// tests only: the worked example of docs/development.md.
            #[cfg(test)]
            Toy = 251, "toy", Bytes tests::toy_filter::Toy, BYTES, [PART];
            /// A toy numeric front-end (each number XOR a pseudo-random key, then pco),
            /// registered in the unit tests only: the worked example of docs/development.md.
            #[cfg(test)]
            ToyFront = 252, "toyfront", Front tests::toy_front::ToyFront, NUMBERS, [];
        }
    };
}
pub(crate) use filters;
