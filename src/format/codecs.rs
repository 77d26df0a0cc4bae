//! The codec registry: one line per codec, the one place that names every codec. Each line
//! gives the codec's doc, its [`super::Codec`] variant and wire id (design/FORMAT.md, "Block
//! frames"), its name (on the command line and in messages), its implementation (a path under
//! `crate::codec`, a type implementing `BlockCodec`) and its capabilities:
//!
//! - `USER`: a `--codec` choice ([`super::Codec::NAMES`], in the order of the lines);
//! - `REFS`: its data may follow the refs filter's prefix (a codec of bytes that decode to the
//!   filtered length; FORMAT.md, "Valid pairs");
//! - `BYTES`: it decodes bytes (`BlockCodec::decompress_into`), which a byte filter or the
//!   lorenzo front-end then undoes; a codec without it (pco, context) decodes numbers, with
//!   filter `none` (or a front-end that asks for `NUMBERS`) only;
//! - `NUMBERS`: it decodes the numbers a numeric front-end leaves (`BlockCodec::decode_numbers`:
//!   plane, mask and fit ask for it);
//! - `PART`: it decodes the start of a block without the rest (`BlockCodec::decompress_upto`
//!   stops early), so that a small read decodes only what it needs.
//!
//! Which filters a codec goes with is these capabilities against what each filter's line asks
//! for (`src/format/filters.rs`).
//!
//! Everything else is derived from these lines: [`super::Codec`], its `from_id`, `name` and
//! capabilities (`user_choice`, `decodes_bytes`, `decodes_part`, `Filter::goes_with`; here, in
//! `crate::format`, which resolves no implementation), and the registry of implementations
//! (`crate::codec::registry`, which does). A line with
//! `#[cfg(test)]` exists in the unit tests only (the toy codec of docs/development.md).

/// Calls the macro `$then` with the registry's lines (see the module doc).
macro_rules! codecs {
    ($then:ident) => {
        $then! {
            /// Zstandard (RFC 8878) frame.
            Zstd = 1, "zstd", zstd::Zstd, [USER, REFS, BYTES, PART];
            /// Raw DEFLATE (RFC 1951) stream.
            Deflate = 2, "deflate", deflate::Deflate, [USER, REFS, BYTES];
            /// LZMA2 in one .xz stream (integrity check none), as liblzma writes it.
            Lzma = 5, "lzma", lzma::Lzma, [USER, REFS, BYTES];
            /// Stored as is.
            None = 0, "none", raw::Raw, [USER, REFS, BYTES];
            /// Every element of the block is the same: the payload is that one element.
            Constant = 3, "constant", raw::Constant, [BYTES];
            /// Pcodec: the block's numbers as one standalone pco file (numeric blocks only).
            Pco = 4, "pco", pcodec::Pco, [NUMBERS];
            /// Numbers of 2, 4 or 8 bytes as prediction residuals in an adaptive range coder
            /// whose probabilities depend on the neighbouring residuals' sizes (numeric blocks
            /// only).
            Context = 6, "context", context::Context, [];
            /// Zstandard frame compressed with the built-in header dictionary (raw content,
            /// 2,672 bytes of netCDF-3-encoded CF names and values; design/FORMAT.md, "The
            /// header dictionary"): the header frame of a compact archive only.
            ZstdDict = 7, "zstd-dict", zstd::ZstdDict, [BYTES];
            /// A toy codec (runs of equal bytes as (length, byte) pairs), registered in the unit
            /// tests only: the worked example of docs/development.md.
            #[cfg(test)]
            Toy = 250, "toy", tests::toy::Toy, [USER, REFS, BYTES];
        }
    };
}
pub(crate) use codecs;
