//! The `lzma` codec (codec id 5): a block as one .xz stream (LZMA2, integrity check none),
//! written and read by liblzma (the `liblzma` crate, its bundled xz 5.8 built statically).
//!
//! LZMA's literal and repeat-match modelling finds what zstd's does not: text and exact
//! repeats of multi-byte values (shared vertex coordinates, report text). It compresses and
//! decodes several times slower than zstd, so only the `max` preset tries it (on a sample
//! first), or `--codec lzma`. design/FORMAT.md specifies the payload.

use super::error::CodecError;
use super::error::LzmaError;
use liblzma::stream::{Action, Check, Filters, LzmaOptions, Status, Stream};

/// The level of `--codec lzma` (xz's default preset).
pub(crate) const DEFAULT_LEVEL: i32 = 6;
/// The highest level (xz preset 9).
pub(crate) const MAX_LEVEL: i32 = 9;
/// The level the `max` preset's zstd encoder tries lzma at. Presets 6 to 9 differ only in
/// their dictionary size, which the writer reduces to the block's size anyway (8 MiB at 6).
pub(crate) const AUTO_LEVEL: u32 = 6;

/// The writer's LZMA literal context bits, literal position bits and position bits: byte
/// positions modulo 8 (lp, pb 3) suit the 2-, 4- and 8-byte values of netCDF, and measured
/// smaller than xz's defaults (3, 0, 2) on numbers and on text alike (1 MiB pieces of
/// mesh.nc of the bench corpus: 1-4 %); no literal context (lc 0) rather than 1, on its
/// whole variables: 0.3 % to 1.1 % smaller on clon, clat and vertex_of_cell, 0.1 % and
/// 0.4 % larger on clon_vertices and clat_vertices, the same on report.
const LC_LP_PB: (u32, u32, u32) = (0, 3, 3);

/// The smallest dictionary LZMA2 has, 4 KiB.
const DICT_MIN: u32 = 4096;

/// The dictionary a reader accepts for a block of `decoded_len` bytes, at least:
/// the block's length, and never less than xz -6's 8 MiB (other writers' choice).
/// A payload needing more is refused (see [`decompress_into`]).
pub(crate) fn dict_limit(decoded_len: usize) -> u64 {
    (decoded_len as u64).max(8 << 20)
}

/// Memory liblzma may use beyond the dictionary when decoding (its decoder state is about
/// 30 KiB; the .xz stream and block decoders add a few KiB).
const DECODER_OVERHEAD: u64 = 1 << 20;

/// The dictionary size the writer uses for `len` bytes at xz preset `preset`: the preset's,
/// reduced to the smallest size LZMA2 can state (2^k or 3 * 2^(k-1), at least 4 KiB) that
/// holds `len` bytes (a larger one finds nothing more and costs memory on both sides).
pub(crate) fn dict_size(len: usize, preset: u32) -> u32 {
    // xz's presets 0 to 9 (xz(1), "Presets"); above 9 as 9.
    const PRESET_DICT: [u32; 10] = [
        256 << 10,
        1 << 20,
        2 << 20,
        4 << 20,
        4 << 20,
        8 << 20,
        8 << 20,
        16 << 20,
        32 << 20,
        64 << 20,
    ];
    let preset_dict = PRESET_DICT[(preset as usize).min(9)];
    let mut d = DICT_MIN;
    while (d as usize) < len && d < preset_dict {
        // 2^k -> 3 * 2^(k-1) -> 2^(k+1)
        d = if d.is_power_of_two() {
            d + d / 2
        } else {
            d / 3 * 4
        };
    }
    d.min(preset_dict)
}

/// Compresses `data` at xz preset `level` (0..=9) as one .xz stream with integrity check none
/// and one LZMA2 filter, appended to `out`; false (and `out` unchanged) when the stream would
/// not be smaller than `limit` bytes, or liblzma fails.
pub(crate) fn compress(data: &[u8], level: u32, limit: usize, out: &mut Vec<u8>) -> bool {
    let start = out.len();
    let ok = compress_inner(data, level, limit, out).unwrap_or(false);
    if !ok {
        out.truncate(start);
    }
    ok
}

fn compress_inner(
    data: &[u8],
    level: u32,
    limit: usize,
    out: &mut Vec<u8>,
) -> Result<bool, liblzma::stream::Error> {
    let mut opts = LzmaOptions::new_preset(level)?;
    let (lc, lp, pb) = LC_LP_PB;
    opts.dict_size(dict_size(data.len(), level))
        .literal_context_bits(lc)
        .literal_position_bits(lp)
        .position_bits(pb);
    let mut filters = Filters::new();
    filters.lzma2(&opts);
    let mut s = Stream::new_stream_encoder(&filters, Check::None)?;
    // liblzma writes into the spare capacity only: at most `cap` bytes, and a stream that
    // reaches `limit` is given up.
    let cap = limit.min(data.len() + data.len() / 64 + 256);
    let mut buf = Vec::with_capacity(cap);
    loop {
        let (used, made) = (s.total_in(), s.total_out());
        let rest = &data[(used as usize).min(data.len())..];
        if s.process_vec(rest, &mut buf, Action::Finish)? == Status::StreamEnd {
            break;
        }
        let stuck = s.total_in() == used && s.total_out() == made;
        if buf.len() >= buf.capacity() || stuck {
            return Ok(false);
        }
    }
    if buf.len() >= limit {
        return Ok(false);
    }
    out.extend_from_slice(&buf);
    Ok(true)
}

/// Decodes an lzma payload into `out` (exactly the block's decoded length), checking that it
/// is one .xz stream that decodes to exactly `out.len()` bytes with nothing after its end, and
/// whose dictionary is at most [`dict_limit`] of the block (liblzma's memory limit).
///
/// # Errors
///
/// [`CodecError::Lzma`] saying what is wrong.
pub(crate) fn decompress_into(payload: &[u8], out: &mut [u8]) -> Result<(), CodecError> {
    decompress_inner(payload, out).map_err(CodecError::Lzma)
}

fn decompress_inner(payload: &[u8], out: &mut [u8]) -> Result<(), LzmaError> {
    let n = out.len();
    let dict = dict_limit(n);
    let xerr = |e: liblzma::stream::Error| match e {
        liblzma::stream::Error::MemLimit => LzmaError::Dictionary { limit: dict },
        e => LzmaError::Xz(e.to_string()),
    };
    let mut s = Stream::new_stream_decoder(dict + DECODER_OVERHEAD, 0).map_err(xerr)?;
    let mut status = s.process(payload, out, Action::Finish).map_err(xerr)?;
    // `out` is full (or the stream ended): what is left must be the end of the stream (its
    // index and footer), with no more data. A few calls suffice: each one either ends the
    // stream, yields a byte too many or stops for want of input.
    let mut extra = [0u8; 1];
    for _ in 0..4 {
        if status == Status::StreamEnd {
            break;
        }
        let got = s.total_out() as usize;
        if got < n {
            return Err(LzmaError::Truncated { got, decoded: n });
        }
        let used = s.total_in() as usize;
        status = s
            .process(
                &payload[used.min(payload.len())..],
                &mut extra,
                Action::Finish,
            )
            .map_err(xerr)?;
        if s.total_out() as usize > n {
            return Err(LzmaError::TooLong { decoded: n });
        }
    }
    let got = s.total_out() as usize;
    if status != Status::StreamEnd {
        return Err(LzmaError::Truncated { got, decoded: n });
    }
    if got != n {
        return Err(LzmaError::Short { got, decoded: n });
    }
    let used = s.total_in() as usize;
    if used != payload.len() {
        return Err(LzmaError::Trailing {
            extra: payload.len() - used,
        });
    }
    Ok(())
}

/// Codec `lzma`: one .xz stream.
pub(crate) struct Lzma;

/// lzma's compressor: its preset.
struct LzmaCompressor(u32);

impl super::block::Compress for LzmaCompressor {
    fn compress(&mut self, input: &[u8], limit: usize, out: &mut Vec<u8>) -> bool {
        compress(input, self.0, limit, out)
    }
}

impl super::block::BlockCodec for Lzma {
    fn levels(&self) -> std::ops::RangeInclusive<i32> {
        0..=MAX_LEVEL
    }
    fn default_level(&self) -> i32 {
        DEFAULT_LEVEL
    }
    fn max_level(&self) -> i32 {
        MAX_LEVEL
    }
    fn compressor(
        &self,
        level: i32,
    ) -> Result<Option<Box<dyn super::block::Compress>>, super::error::CodecError> {
        Ok(Some(Box::new(LzmaCompressor(level as u32))))
    }
    fn decompress_into(
        &self,
        _h: &crate::format::FrameHeader,
        payload: &[u8],
        out: &mut [u8],
        _scratch: &mut super::space::Scratch,
    ) -> Result<(), super::error::FrameError> {
        Ok(decompress_into(payload, out)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `nc3pack lzma\n` as `xz --check=none --lzma2=preset=6,dict=4KiB` (xz 5.4.1) wrote it:
    /// stream header (check none), block header (LZMA2, dictionary 4 KiB), one uncompressed
    /// LZMA2 chunk, index, stream footer.
    const XZ_HELLO: [u8; 64] = [
        0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00, 0x00, 0x00, 0xff, 0x12, 0xd9, 0x41, 0x02, 0x00, 0x21,
        0x01, 0x00, 0x00, 0x00, 0x00, 0x37, 0x27, 0x97, 0xd6, 0x01, 0x00, 0x0c, 0x6e, 0x63, 0x33,
        0x70, 0x61, 0x63, 0x6b, 0x20, 0x6c, 0x7a, 0x6d, 0x61, 0x0a, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x01, 0x1d, 0x0d, 0x8a, 0xa5, 0x5b, 0xa1, 0x06, 0x72, 0x9e, 0x7a, 0x01, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x59, 0x5a,
    ];

    #[test]
    fn another_writers_stream_decodes() {
        let mut out = [0u8; 13];
        decompress_into(&XZ_HELLO, &mut out).unwrap();
        assert_eq!(&out, b"nc3pack lzma\n");
        // One byte short of the block, one byte more, and with a byte after the stream.
        let mut short = [0u8; 12];
        let e = decompress_into(&XZ_HELLO, &mut short).unwrap_err();
        assert_eq!(e, CodecError::Lzma(LzmaError::TooLong { decoded: 12 }));
        let mut long = [0u8; 14];
        let e = decompress_into(&XZ_HELLO, &mut long).unwrap_err();
        assert_eq!(
            e,
            CodecError::Lzma(LzmaError::Short {
                got: 13,
                decoded: 14
            })
        );
        let e = decompress_into(&[&XZ_HELLO[..], &[0]].concat(), &mut out).unwrap_err();
        assert_eq!(e, CodecError::Lzma(LzmaError::Trailing { extra: 1 }));
        for cut in [1, 12, 30, 63] {
            let e = decompress_into(&XZ_HELLO[..cut], &mut out).unwrap_err();
            assert!(
                matches!(
                    e,
                    CodecError::Lzma(LzmaError::Truncated { .. } | LzmaError::Xz(_))
                ),
                "{cut}: {e:?}"
            );
        }
    }

    #[test]
    fn the_writers_stream_starts_as_specified() {
        // A 16-byte block: dictionary 4 KiB (property byte 0), check none.
        let data = b"ABABABABABABABAB";
        let mut out = Vec::new();
        assert!(compress(data, 6, usize::MAX, &mut out));
        assert_eq!(&out[..24], &XZ_HELLO[..24]);
        assert_eq!(&out[out.len() - 2..], b"YZ");
        let mut back = [0u8; 16];
        decompress_into(&out, &mut back).unwrap();
        assert_eq!(&back, data);
        // Not smaller than the limit: nothing.
        let mut none = vec![1u8];
        assert!(!compress(data, 6, out.len(), &mut none));
        assert_eq!(none, [1]);
    }

    quickcheck::quickcheck! {
        fn round_trips_at_every_level(data: Vec<u8>, level: u8, repeat: u8) -> bool {
            // Repeats far apart, so that matches happen too.
            let data = data.repeat(usize::from(repeat % 4) + 1);
            let level = u32::from(level % 10);
            let mut out = vec![9u8];
            if !compress(&data, level, usize::MAX, &mut out) || out[0] != 9 {
                return false;
            }
            let mut back = vec![0u8; data.len()];
            decompress_into(&out[1..], &mut back).is_ok() && back == data
        }
    }

    #[test]
    fn dictionary_sizes_are_lzma2_sizes_covering_the_block() {
        // LZMA2 states 2^k and 3 * 2^(k-1) (xz's file format spec, section 5.3.1).
        assert_eq!(dict_size(0, 6), 4096);
        assert_eq!(dict_size(4096, 6), 4096);
        assert_eq!(dict_size(4097, 6), 6144);
        assert_eq!(dict_size(6145, 6), 8192);
        assert_eq!(dict_size(1 << 20, 6), 1 << 20);
        assert_eq!(dict_size(1_000_000, 6), 1 << 20);
        assert_eq!(dict_size(700_000, 6), 786_432);
        // Capped at the preset's: 8 MiB at 6, 256 KiB at 0, 64 MiB at 9.
        assert_eq!(dict_size(100 << 20, 6), 8 << 20);
        assert_eq!(dict_size(1 << 20, 0), 256 << 10);
        assert_eq!(dict_size(100 << 20, 9), 64 << 20);
    }
}
