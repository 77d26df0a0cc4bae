//! The encoder's choices and the decoders' answers, on blocks made to show each path.

use super::decode::*;
use super::default_level;
use super::encoder::repeats::*;
use super::encoder::whole::*;
use super::encoder::*;
use super::filter::*;
use super::pcodec::{pco_thorough, NumKind, PCO_HALF_CHUNK};
use super::shuffle::*;
use super::tuning::*;
use super::word::be_to_native;
use crate::codec::error::FrameError;
use crate::codec::error::{CodecError, MaskError, RefsError};
use crate::format::{crc, Codec, Filter, FrameHeader, FRAME_HEADER_LEN};

mod grids;
pub(crate) mod toy;
pub(crate) mod toy_filter;
pub(crate) mod toy_front;

/// Whether docs/development.md shows the code of a worked example: the text of `file` between
/// the line `marker` and the line `// [end]`.
pub(crate) fn docs_show(file: &str, marker: &str) -> bool {
    let code = file.split(&format!("{marker}\n")).nth(1).unwrap_or("");
    let code = code.split("// [end]").next().unwrap_or("");
    !code.is_empty() && include_str!("../../../docs/development.md").contains(code)
}

/// Encodes `data` as block 0 of stream 0 into `frame` (header then payload), a constant
/// block as the codec-3 frame a reader must still decode (the encoder puts those in the
/// index instead). Returns the frame's header.
fn encode_any(enc: &mut Encoder, esize: usize, data: &[u8], frame: &mut Vec<u8>) -> FrameHeader {
    match enc.encode_block(0, 0, esize, data, frame) {
        Encoded::Frame(h) => h,
        Encoded::Constant(c) => {
            let value = &c.value[..usize::from(c.esize)];
            let h = FrameHeader {
                stored_len: value.len() as u32,
                decoded_len: data.len() as u32,
                stream: 0,
                block: 0,
                codec: Codec::Constant,
                filter: Filter::None,
                esize: u16::from(c.esize),
                payload_crc: crate::format::crc(value),
            };
            frame.clear();
            frame.extend_from_slice(&h.encode());
            frame.extend_from_slice(value);
            h
        }
    }
}

fn roundtrip(codec: Codec, esize: usize, data: &[u8]) -> FrameHeader {
    let mut enc = Encoder::new(codec, default_level(codec), FilterMode::Auto, false).unwrap();
    let mut frame = vec![9u8; 3];
    let h = enc
        .encode_block(1, 2, esize, data, &mut frame)
        .frame()
        .unwrap();
    let h2 = FrameHeader::decode(&frame[3..]).unwrap();
    assert_eq!(h, h2);
    assert_eq!(frame.len(), 3 + FRAME_HEADER_LEN + h.stored_len as usize);
    let mut out = vec![1, 2, 3];
    decode_payload(&h2, &frame[3 + FRAME_HEADER_LEN..], &mut out).unwrap();
    assert_eq!(out, data);
    h
}

#[test]
fn every_codec_roundtrips_and_incompressible_data_is_stored_raw() {
    let smooth: Vec<u8> = (0..10000u32)
        .flat_map(|i| ((i as f32).sin()).to_be_bytes())
        .collect();
    let mut x = 12345u64;
    let noise: Vec<u8> = (0..5000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    for codec in [Codec::None, Codec::Zstd, Codec::Deflate] {
        for esize in [1, 2, 4, 8] {
            let h = roundtrip(codec, esize, &smooth);
            if codec != Codec::None {
                assert!(h.stored_len < smooth.len() as u32);
                assert_eq!(
                    h.filter == Filter::None,
                    esize == 1 && h.filter != Filter::ByteDelta
                );
            }
            let h = roundtrip(codec, esize, &noise);
            assert_eq!(
                (h.codec, h.filter, h.stored_len),
                (Codec::None, Filter::None, 5000)
            );
        }
        roundtrip(codec, 4, &[]);
    }
}

#[test]
fn shuffle_inverts_for_every_size_and_length() {
    for esize in [1, 2, 3, 4, 8] {
        for len in [0, 1, 7, 8, 9, 64, 1001] {
            let src: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            let (mut a, mut b) = (Vec::new(), Vec::new());
            shuffle(&src, esize, &mut a);
            unshuffle(&a, esize, &mut b);
            assert_eq!(b, src, "esize {esize} len {len}");
            if esize == 2 && len == 8 {
                assert_eq!(
                    a,
                    [src[0], src[2], src[4], src[6], src[1], src[3], src[5], src[7]]
                );
            }
        }
    }
}

const ALL_FILTERS: [Filter; 10] = [
    Filter::None,
    Filter::Shuffle,
    Filter::ByteDelta,
    Filter::Delta,
    Filter::ZigZagDelta,
    Filter::Lorenzo,
    Filter::Plane,
    Filter::Refs,
    Filter::Mask,
    Filter::Fit,
];

#[test]
fn every_filter_id_is_listed() {
    // (But the toy filter and front-end of the unit tests, `toy_filter.rs` and `toy_front.rs`.)
    let ids: Vec<Filter> = (0..=255)
        .filter_map(Filter::from_id)
        .filter(|&f| f != Filter::Toy && f != Filter::ToyFront)
        .collect();
    assert_eq!(ids, ALL_FILTERS);
}

/// The pairs of filter and codec the registries' lines allow are design/FORMAT.md's "Valid
/// pairs": pco with filters 0, 6, 8 and 9, and those with pco only; context with filter 0
/// only; refs with none, zstd, deflate and lzma; filters 0 to 5 with none, zstd, deflate,
/// constant and lzma (and the header frame's zstd-dict, a codec of bytes).
#[test]
fn the_registries_allow_the_valid_pairs_of_the_format() {
    use Codec::*;
    let bytes = [None, Zstd, Deflate, Constant, Lzma, ZstdDict];
    for f in ALL_FILTERS {
        let want: Vec<Codec> = match f {
            Filter::None => vec![None, Zstd, Deflate, Constant, Pco, Lzma, Context, ZstdDict],
            Filter::Plane | Filter::Mask | Filter::Fit => vec![Pco],
            Filter::Refs => vec![None, Zstd, Deflate, Lzma],
            _ => bytes.to_vec(),
        };
        let got: Vec<Codec> = (0..=255)
            .filter_map(Codec::from_id)
            .filter(|&c| c != Toy && f.goes_with(c))
            .collect();
        let mut want = want;
        want.sort_by_key(|&c| c as u8);
        assert_eq!(got, want, "{f:?}");
    }
}

/// `delta` and `zzdelta` as design/FORMAT.md defines them, one element at a time.
fn reference_delta(data: &[u8], esize: usize, zigzag: bool) -> Vec<u8> {
    if ![2, 4, 8].contains(&esize) {
        let mut out = data.to_vec();
        for i in 1..out.len() {
            out[i] = data[i].wrapping_sub(data[i - 1]);
        }
        return out;
    }
    let bits = 8 * esize as u32;
    let mask = u64::MAX >> (64 - bits);
    let n = data.len() / esize;
    let mut elements = Vec::new();
    let mut prev = 0u64;
    for e in data[..n * esize].chunks_exact(esize) {
        let x = e.iter().fold(0u64, |a, &b| a << 8 | u64::from(b));
        let mut d = x.wrapping_sub(prev) & mask;
        prev = x;
        if zigzag {
            let negative = d >> (bits - 1) == 1;
            d = ((d << 1) ^ if negative { u64::MAX } else { 0 }) & mask;
        }
        elements.extend_from_slice(&d.to_be_bytes()[8 - esize..]);
    }
    elements.extend_from_slice(&data[n * esize..]);
    let mut out = Vec::new();
    shuffle(&elements, esize, &mut out);
    out
}

#[test]
fn filters_invert_for_every_size_and_length_and_deltas_match_their_definition() {
    let mut x = 99u64;
    for esize in [1, 2, 3, 4, 8] {
        for len in [0, 1, 7, 8, 9, 64, 1001] {
            // Elements of either sign and mostly small (zigzag's case): random last bytes,
            // the other bytes mostly all 0x00 or 0xff, sometimes random (large jumps).
            let src: Vec<u8> = (0..len)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    match (i % esize == esize - 1, x % 8) {
                        (true, _) | (_, 0) => (x >> 8) as u8,
                        (false, r) => [0, 0xff][r as usize % 2],
                    }
                })
                .collect();
            for f in ALL_FILTERS {
                let (mut a, mut b) = (vec![7; 3], vec![7; 3]);
                apply_filter(f, &src, esize, &mut a);
                match f {
                    Filter::Delta => assert_eq!(a, reference_delta(&src, esize, false)),
                    Filter::ZigZagDelta => assert_eq!(a, reference_delta(&src, esize, true)),
                    // The element and entry counts, then 4 bytes a reference and the table.
                    Filter::Refs if [4, 8].contains(&esize) => {
                        let n = len / esize;
                        let d = u32::from_be_bytes(a[4..8].try_into().unwrap()) as usize;
                        assert_eq!(a[..4], (n as u32).to_be_bytes());
                        assert_eq!(a.len(), 8 + 4 * n + esize * d + len % esize);
                    }
                    // A flag byte, then the count and the prefix, or the bytes as they are.
                    Filter::Mask => assert!(a.len() > src.len(), "{esize} {len}"),
                    // A flag byte, then the prefix and a residual for each element.
                    Filter::Fit if [2, 4, 8].contains(&esize) && len % esize == 0 => {
                        let k = usize::from(a[4]);
                        assert_eq!(a.len(), 1 + 4 + 6 * k + len, "{esize} {len}");
                    }
                    Filter::Fit => assert_eq!(a.len(), 1 + src.len()),
                    _ => assert_eq!(a.len(), src.len()),
                }
                undo_filter(f, &a, esize, &mut b);
                assert_eq!(b, src, "{f:?} esize {esize} len {len}");
            }
        }
    }
    // Extremes of the signed range: 0 -> 0x8000 is -32768 (zigzag 0xffff), then +32767
    // (zigzag 0xfffe) to 0xffff, then +1 wrapping to 0 (zigzag 2).
    let src = [0, 0, 0x80, 0, 0xff, 0xff, 0, 0];
    let mut a = Vec::new();
    apply_filter(Filter::ZigZagDelta, &src, 2, &mut a);
    assert_eq!(a, [0, 0xff, 0xff, 0, 0, 0xff, 0xfe, 2]);
}

#[test]
fn constant_blocks_store_one_element_and_filters_invert() {
    let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false).unwrap();
    let data: Vec<u8> = std::iter::repeat_n([0x7f, 0x80, 0, 1], 500)
        .flatten()
        .collect();
    let mut frame = Vec::new();
    assert_eq!(
        enc.encode_block(5, 6, 4, &data, &mut frame),
        Encoded::Constant(ConstantBlock {
            stream: 5,
            block: 6,
            esize: 4,
            value: [0x7f, 0x80, 0, 1, 0, 0, 0, 0]
        })
    );
    assert!(frame.is_empty());
    // Not constant when elements differ only in their last byte.
    let mut d2 = data.clone();
    d2[1999] = 2;
    let h = enc.encode_block(0, 0, 4, &d2, &mut frame).frame().unwrap();
    assert_ne!(h.codec, Codec::Constant);
    let mut out = Vec::new();
    decode_payload(&h, &frame[FRAME_HEADER_LEN..], &mut out).unwrap();
    assert_eq!(out, d2);
    for f in ALL_FILTERS {
        for esize in [1, 2, 4, 8] {
            let src: Vec<u8> = (0..96u32).map(|i| (i * i % 251) as u8).collect();
            let (mut a, mut b) = (Vec::new(), Vec::new());
            apply_filter(f, &src, esize, &mut a);
            undo_filter(f, &a, esize, &mut b);
            assert_eq!(b, src, "{f:?} esize {esize}");
            let mut enc = Encoder::new(Codec::Deflate, 6, FilterMode::Fixed(f), false).unwrap();
            let mut frame = Vec::new();
            let h = enc
                .encode_block(0, 0, esize, &src, &mut frame)
                .frame()
                .unwrap();
            decode_payload(&h, &frame[FRAME_HEADER_LEN..], &mut out).unwrap();
            assert_eq!(out, src);
        }
    }
}

/// `decode_payload_into` gives what `decode_payload` gives (big-endian, or each element's
/// bytes reversed for native order on a little-endian machine) for every codec, filter and
/// element size, into aligned and unaligned outputs, and refuses exactly what it refuses.
#[test]
fn decoding_into_a_slice_matches_decode_payload() {
    let mut x = 7u64;
    let mut scratch = DecodeScratch::default();
    for esize in [1usize, 2, 4, 8] {
        // Smooth elements (the filters pay) with noisy low bytes, and a constant block.
        let smooth: Vec<u8> = (0..3000u64)
            .flat_map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let v = (i * i / 7) << 8 | (x & 0xff);
                v.to_be_bytes()[8 - esize..].to_vec()
            })
            .collect();
        let constant: Vec<u8> = std::iter::repeat_n(&smooth[..esize], 500)
            .flatten()
            .copied()
            .collect();
        for codec in [Codec::None, Codec::Zstd, Codec::Deflate] {
            for f in ALL_FILTERS {
                for data in [&smooth, &constant] {
                    let level = default_level(codec);
                    let mut enc = Encoder::new(codec, level, FilterMode::Fixed(f), false).unwrap();
                    let mut frame = Vec::new();
                    let h = encode_any(&mut enc, esize, data, &mut frame);
                    let payload = &frame[FRAME_HEADER_LEN..];
                    let ctx = format!("{:?}/{:?} esize {esize}", h.codec, h.filter);
                    let mut want = Vec::new();
                    decode_payload(&h, payload, &mut want).unwrap();
                    assert_eq!(&want, data, "{ctx}");
                    let mut native = want.clone();
                    if cfg!(target_endian = "little") && esize > 1 {
                        for e in native.chunks_exact_mut(esize) {
                            e.reverse();
                        }
                    }
                    // Aligned for u64 (so for every element size), and one byte off.
                    let mut words = vec![0u64; data.len() / 8 + 2];
                    let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
                    for at in [0, 1] {
                        let out = &mut bytes[at..at + data.len()];
                        for (order, expect) in [(false, &want), (true, &native)] {
                            out.fill(0xa5);
                            decode_payload_into(&h, payload, out, &mut scratch, order).unwrap();
                            assert_eq!(out, &expect[..], "{ctx} at {at} native {order}");
                        }
                    }
                    parts_match(&h, payload, data, &mut scratch);
                    // Damage: the same error as decode_payload, and a wrong-length output.
                    let mut bad = payload.to_vec();
                    let mid = bad.len() / 2;
                    bad[mid] ^= 4;
                    let mut out = vec![0u8; data.len()];
                    assert_eq!(
                        decode_payload_into(&h, &bad, &mut out, &mut scratch, true),
                        decode_payload(&h, &bad, &mut Vec::new()),
                        "{ctx}"
                    );
                    assert_eq!(
                        decode_payload_part(&h, &bad, 1, &mut out[..3], &mut scratch),
                        decode_payload(&h, &bad, &mut Vec::new()),
                        "{ctx}"
                    );
                    // Streamed: damage anywhere, even after what the part needs, fails the
                    // CRC; a payload cut short is refused.
                    for at in [mid, bad.len() - 1] {
                        let mut bad = payload.to_vec();
                        bad[at] ^= 4;
                        if let Some(r) = streamed_part(&h, &bad, 0, 1, &mut scratch) {
                            assert_eq!(r, Err(FrameError::PayloadChecksum), "{ctx} at {at}");
                        }
                    }
                    // A frame cut short (its header saying so, CRC and all): refused by a
                    // part that needs its end.
                    let cut = &payload[..payload.len() - 1];
                    let h_cut = FrameHeader {
                        stored_len: cut.len() as u32,
                        payload_crc: crate::format::crc(cut),
                        ..h
                    };
                    let end = data.len() - 1;
                    if let Some(r) = streamed_part(&h_cut, cut, end, 1, &mut scratch) {
                        assert!(matches!(r, Err(FrameError::Codec(_))), "{ctx}: {r:?}");
                    }
                    let mut short = vec![0u8; data.len() - 1];
                    assert!(
                        decode_payload_into(&h, payload, &mut short, &mut scratch, false).is_err(),
                        "{ctx}"
                    );
                }
            }
        }
    }
    // A frame that lies about its decoded length (CRC intact) fails the same way.
    let data: Vec<u8> = (0..4000u32).flat_map(|i| (i / 3).to_be_bytes()).collect();
    let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false).unwrap();
    let mut frame = Vec::new();
    let h = encode_any(&mut enc, 4, &data, &mut frame);
    for decoded in [h.decoded_len - 4, h.decoded_len + 4] {
        let lying = FrameHeader {
            decoded_len: decoded,
            ..h
        };
        let mut out = vec![0u8; decoded as usize];
        let got = decode_payload_into(
            &lying,
            &frame[FRAME_HEADER_LEN..],
            &mut out,
            &mut scratch,
            false,
        );
        let want = decode_payload(&lying, &frame[FRAME_HEADER_LEN..], &mut Vec::new());
        assert!(want.is_err() && got.is_err(), "{decoded}: {got:?} {want:?}");
    }
}

/// A random walk in steps of 0.01 stored as floats: byte filters see noisy mantissas,
/// pco finds the multiplier (pco's case).
fn decimal_walk(n: u32) -> Vec<u8> {
    let (mut k, mut x) = (2000i64, 0x9E37_79B9_7F4A_7C15u64);
    (0..n)
        .flat_map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            k += (x % 7) as i64 - 3;
            ((k as f64 * 0.01) as f32).to_be_bytes()
        })
        .collect()
}

/// A block's sample moves past fill values heading it: to 3/8 of the block, or 5/8 if
/// that is fill too, and stays at the start when every window is (or none is) mostly
/// fill. "Mostly": more than half the elements equal the window's first.
#[test]
fn samples_skip_fill_values_heading_a_block() {
    let n = 262_144usize;
    let len = FILTER_SAMPLE;
    let fill = (-1e10f32).to_be_bytes();
    let block = |fill_at: &dyn Fn(usize) -> bool| -> Vec<u8> {
        (0..n)
            .flat_map(|i| {
                if fill_at(i) {
                    fill
                } else {
                    ((i % 1000) as f32 * 0.01).to_be_bytes()
                }
            })
            .collect()
    };
    let at = |num: usize, den: usize| n * num / den * 4;
    assert_eq!(sample_start(&block(&|i| i < 8192), 4, len), at(3, 8));
    assert_eq!(sample_start(&block(&|i| i < n / 2), 4, len), at(5, 8));
    assert_eq!(sample_start(&block(&|_| true), 4, len), 0);
    assert_eq!(sample_start(&block(&|_| false), 4, len), 0);
    // Half fill is not "mostly": more than half of the 8,192 elements must be.
    assert_eq!(sample_start(&block(&|i| i < 4096), 4, len), 0);
    assert_eq!(sample_start(&block(&|i| i <= 4096), 4, len), at(3, 8));
    // A block no longer than a sample has only the one.
    assert_eq!(sample_start(&fill.repeat(8192), 4, len), 0);
}

/// A block of decimals (steps of 0.0001) whose first 32 KiB is mostly fill values: pco's
/// own choice on that sample misses the decimal multiplier, which the block's mode (found
/// over the whole block) has, so the block is pco's and a quarter smaller than zstd makes it.
#[test]
fn a_block_of_decimals_behind_fill_values_uses_pco_in_the_block_s_mode() {
    let data: Vec<u8> = crate::codec::pcodec::tests::decimals_behind_fill()
        .iter()
        .flat_map(|v| v.to_be_bytes())
        .collect();
    let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false)
        .unwrap()
        .fast_blocks(true)
        .unwrap()
        .numeric(true);
    let mut frame = Vec::new();
    let h = enc
        .encode_block_numeric(0, 0, 4, (Some(NumKind::F32), 0), &data, &mut frame)
        .frame()
        .unwrap();
    assert_eq!((h.codec, h.filter), (Codec::Pco, Filter::None));
    let mut back = Vec::new();
    decode_payload(&h, &frame[FRAME_HEADER_LEN..], &mut back).unwrap();
    assert_eq!(back, data);
    let zstd = zstd::bulk::compress(&data, 3).unwrap().len();
    assert!(
        h.stored_len as usize * 4 < zstd * 3,
        "{} {zstd}",
        h.stored_len
    );
    // The `max` preset's pco is never larger than pco's own choice on the whole block.
    let mut own = Vec::new();
    let pco_level = crate::codec::pcodec::LEVEL;
    assert!(crate::codec::pcodec::compress(
        NumKind::F32,
        &data,
        pco_level,
        &mut own
    ));
    let mut max = Encoder::new(Codec::Zstd, 19, FilterMode::Auto, true)
        .unwrap()
        .numeric(true);
    frame.clear();
    let h = max
        .encode_block_numeric(0, 0, 4, (Some(NumKind::F32), 0), &data, &mut frame)
        .frame()
        .unwrap();
    assert!(
        h.stored_len as usize <= own.len(),
        "{} {}",
        h.stored_len,
        own.len()
    );
    back.clear();
    decode_payload(&h, &frame[FRAME_HEADER_LEN..], &mut back).unwrap();
    assert_eq!(back, data);
}

/// Two pco chunks (2 MiB) of a smooth field in rows of 360, in whole thousandths
/// (`k as f32 * 0.001`), plus noise of `noise` thousandths; from number `fill_from` on,
/// about `fill_pct` % of the rows are all the fill value -1e34.
fn thousandths_in_fill_rows(noise: f64, fill_pct: u32, fill_from: u32) -> Vec<u8> {
    let mut x = 3u64;
    (0..2u32 << 18)
        .flat_map(|i| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let (row, col) = (i / 360, i % 360);
            let wave = (f64::from(row) * 0.02).sin() * (f64::from(col) * 0.03).cos();
            let jitter = ((x >> 40) as f64 / f64::from(1u32 << 24) - 0.5) * 0.001 * noise;
            let k = ((15.0 + 10.0 * wave + jitter) * 1000.0).round() as i32;
            let v = if i >= fill_from && (row * 7919) % 100 < fill_pct {
                -1e34f32
            } else {
                k as f32 * 0.001f32
            };
            v.to_be_bytes()
        })
        .collect()
}

/// Damaged `mask` payloads (every byte of the prefix and bytes through the pco file
/// changed, the payload cut at every prefix length) decode to an error or to some block,
/// never a panic, in both decoders.
#[test]
fn damaged_fit_payloads_fail_cleanly() {
    // Floats with land (a fill section) and shorts without: every byte of the prefix and of
    // the fill section flipped, a spread of the pco file's bytes, every truncation of the
    // prefix; decoding gives an error or some bytes, never a panic, and both decoders agree.
    let floats = field_with_land()[..4 << 16].to_vec();
    let shorts: Vec<u8> = (0..40_000u32)
        .flat_map(|i| {
            ((i / 200 * 3 + i % 200 * 7 + (i.wrapping_mul(2_654_435_761) >> 28)) as i16)
                .to_be_bytes()
        })
        .collect();
    for (data, kind, row, e) in [
        (floats, NumKind::F32, 360, 4u16),
        (shorts, NumKind::I16, 200, 2),
    ] {
        let payload = fit_payload(&data, kind, row).unwrap();
        let h = FrameHeader {
            stored_len: payload.len() as u32,
            decoded_len: data.len() as u32,
            stream: 0,
            block: 0,
            codec: Codec::Pco,
            filter: Filter::Fit,
            esize: e,
            payload_crc: crc(&payload),
        };
        let mut back = Vec::new();
        decode_payload(&h, &payload, &mut back).unwrap();
        assert!(back == data);
        let mut scratch = DecodeScratch::default();
        let mut out = vec![0u8; data.len()];
        let mut try_one = |p: &[u8]| {
            let h = FrameHeader {
                stored_len: p.len() as u32,
                payload_crc: crc(p),
                ..h
            };
            let mut v = Vec::new();
            let a = decode_payload(&h, p, &mut v);
            let b = decode_payload_into(&h, p, &mut out, &mut scratch, true);
            assert_eq!(a.is_ok(), b.is_ok());
        };
        let k = usize::from(payload[3]);
        let mut end = 4 + 6 * k;
        if payload[2] & 1 == 1 {
            let e = usize::from(e);
            end += e
                + 4
                + u32::from_be_bytes(payload[end + e..end + e + 4].try_into().unwrap()) as usize;
        }
        for at in (0..end + 64).chain((0..200).map(|j| j * payload.len() / 200)) {
            for flip in [0x01u8, 0x80, 0xFF] {
                let mut p = payload.clone();
                p[at] ^= flip;
                try_one(&p);
            }
        }
        for len in 0..end + 8 {
            try_one(&payload[..len]);
        }
    }
}

#[test]
fn damaged_mask_payloads_fail_cleanly() {
    let data = field_with_land();
    let payload = mask_payload(&data, NumKind::F32).unwrap();
    let h = FrameHeader {
        stored_len: payload.len() as u32,
        decoded_len: data.len() as u32,
        stream: 0,
        block: 0,
        codec: Codec::Pco,
        filter: Filter::Mask,
        esize: 4,
        payload_crc: crc(&payload),
    };
    let mut scratch = DecodeScratch::default();
    let mut out = vec![0u8; data.len()];
    let mut try_one = |p: &[u8]| {
        let h = FrameHeader {
            stored_len: p.len() as u32,
            payload_crc: crc(p),
            ..h
        };
        let mut v = Vec::new();
        let a = decode_payload(&h, p, &mut v);
        let b = decode_payload_into(&h, p, &mut out, &mut scratch, true);
        assert_eq!(a.is_ok(), b.is_ok());
    };
    let prefix_end = 8 + u32::from_be_bytes(payload[4..8].try_into().unwrap()) as usize;
    let mut x = 1u64;
    for at in (0..prefix_end + 64).chain((0..200).map(|k| k * payload.len() / 200)) {
        for flip in [0x01u8, 0x80, 0xFF] {
            let mut p = payload.clone();
            p[at] ^= flip;
            try_one(&p);
        }
    }
    for len in 0..prefix_end + 8 {
        try_one(&payload[..len]);
    }
    for _ in 0..200 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        let mut p = payload.clone();
        p[(x >> 33) as usize % payload.len()] = (x >> 13) as u8;
        try_one(&p);
    }
}

/// The `max` preset packs decimals among fill values with pco in the mode found over the
/// block (see `pco::block_float_mode`), no larger than pco in that mode alone: where lzma's
/// sample looked sure to beat the block codec (noisy, 60 % fill: lzma was 37 % larger),
/// and where pco's own choice took the mode for the first chunk but not the second (the
/// fill values starting there: 14 % larger).
#[test]
fn max_packs_decimals_among_fill_values_with_pco_in_the_block_s_mode() {
    let pco_level = crate::codec::pcodec::LEVEL;
    for (noise, fill_pct, fill_from) in [(100.0, 60, 0), (0.0, 20, 1 << 18)] {
        let data = thousandths_in_fill_rows(noise, fill_pct, fill_from);
        let mode = crate::codec::pcodec::block_float_mode(NumKind::F32, &data).unwrap();
        assert_eq!(
            mode,
            crate::codec::pcodec::Mode::FloatMult(f64::from(0.001f32))
        );
        let mut in_mode = Vec::new();
        crate::codec::pcodec::compress_choosing_in(
            NumKind::F32,
            &data,
            pco_level,
            mode,
            &mut in_mode,
        )
        .unwrap();
        let (h, frame) = encode_floats(true, &data, 360);
        assert_eq!(h.codec, Codec::Pco, "{noise} {fill_pct} {fill_from}");
        let stored = h.stored_len as usize;
        assert!(stored <= in_mode.len(), "{stored} {}", in_mode.len());
        let mut back = Vec::new();
        decode_payload(&h, &frame[FRAME_HEADER_LEN..], &mut back).unwrap();
        assert_eq!(back, data);
    }
}

/// pco on big-endian f32 `data` at nc3pack's level, as one standalone file.
fn pco_f32(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    assert!(crate::codec::pcodec::compress(
        NumKind::F32,
        data,
        crate::codec::pcodec::LEVEL,
        &mut out
    ));
    out
}

/// A preset's encoder of numeric blocks (`max`: thorough, zstd 19; else the default: zstd 3
/// with fast blocks), and the frame it makes of the floats `data` (rows of `row`).
fn encode_floats(max: bool, data: &[u8], row: usize) -> (FrameHeader, Vec<u8>) {
    let enc = Encoder::new(Codec::Zstd, if max { 19 } else { 3 }, FilterMode::Auto, max)
        .unwrap()
        .fast_blocks(!max)
        .unwrap();
    let mut enc = enc.numeric(true);
    let mut frame = Vec::new();
    let h = enc
        .encode_block_numeric(0, 0, 4, (Some(NumKind::F32), row), data, &mut frame)
        .frame()
        .unwrap();
    (h, frame)
}

/// Station latitudes, one per observation (`n` big-endian floats): 1,800 stations at
/// random places (4 decimals) report in cycles, a random 85 % of them each cycle, in a fixed
/// order; a point-observation file in time order stores its coordinates so.
fn station_lats(n: usize) -> Vec<u8> {
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
    let lats: Vec<f32> = (0..1800)
        .map(|_| ((next() % 1_350_000) as f32 * 1e-4) - 60.0)
        .collect();
    let mut out = Vec::with_capacity(4 * n);
    while out.len() < 4 * n {
        for &lat in &lats {
            if next() % 100 < 85 && out.len() < 4 * n {
                out.extend_from_slice(&lat.to_be_bytes());
            }
        }
    }
    out
}

#[test]
fn station_coordinates_take_refs_with_zstd_in_the_default_preset() {
    let data = station_lats(1 << 18);
    let (h, frame) = encode_floats(false, &data, 0);
    assert_eq!((h.codec, h.filter), (Codec::Zstd, Filter::Refs));
    let p = &frame[FRAME_HEADER_LEN..];
    decodes_every_way(&h, p, &data);
    // Less than half of zstd 3 after each 1-D filter on the whole block, and below pco.
    let mut z3 = zstd::bulk::Compressor::new(3).unwrap();
    for f in [Filter::Shuffle, Filter::ByteDelta, Filter::ZigZagDelta] {
        let mut x = Vec::new();
        apply_filter(f, &data, 4, &mut x);
        let z = z3.compress(&x).unwrap().len();
        assert!((p.len() as f64) < 0.5 * z as f64, "{f:?}: {} {z}", p.len());
    }
    assert!(p.len() < pco_f32(&data).len());

    // Values that keep changing (noise) do not try it.
    let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false)
        .unwrap()
        .numeric(true)
        .fast_blocks(true)
        .unwrap();
    let mut x = 1u64;
    let noise: Vec<u8> = (0..1u32 << 18)
        .flat_map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            (280.0 + (x >> 40) as f32 * 1e-6).to_be_bytes()
        })
        .collect();
    let mut frame = Vec::new();
    let h = enc
        .encode_block_numeric(0, 0, 4, (Some(NumKind::F32), 0), &noise, &mut frame)
        .frame()
        .unwrap();
    assert!(
        enc.last_plan.is_some_and(|p| p.refs_est.is_none()) && h.filter != Filter::Refs,
        "{h:?}"
    );
    let (new, half) = crate::codec::refs::late_new(&noise[..32 << 10], 4).unwrap();
    assert!(new * REFS_LATE_NEW >= half, "{new} of {half}");
}

#[test]
fn late_new_counts_the_values_new_in_the_second_half() {
    let be = |v: &[u32]| v.iter().flat_map(|x| x.to_be_bytes()).collect::<Vec<u8>>();
    let late = crate::codec::refs::late_new;
    assert_eq!(late(&be(&[5, 7, 5, 9, 7, 5, 8, 5]), 4), Some((1, 4)));
    // An odd count: the second half (3, 1, 4) is the longer; 3 and 4 are new.
    assert_eq!(late(&be(&[1, 2, 3, 1, 4]), 4), Some((2, 3)));
    assert_eq!(late(&be(&[1]), 4), None);
    assert_eq!(late(&[0; 16], 2), None);
    let eight: Vec<u8> = [3u64, 3, 4, 3]
        .iter()
        .flat_map(|x| x.to_be_bytes())
        .collect();
    assert_eq!(late(&eight, 8), Some((1, 2)));
}

/// A block (1 MiB) of a smooth field in hundredths (`k as f32 * 0.01`, as sea surface
/// temperatures often are) in rows of 360 with noise, where whole rows and a stretch of
/// every other row are land, the fill value -1e34.
fn field_with_land() -> Vec<u8> {
    let mut x = 5u64;
    (0..1u32 << 18)
        .flat_map(|i| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let (row, col) = (i / 360, i % 360);
            let land = (row * 7919) % 100 < 30 || (row % 2 == 0 && (100..160).contains(&col));
            let wave = (f64::from(row) * 0.02).sin() * (f64::from(col) * 0.03).cos();
            let noise = (x >> 40) as f64 / f64::from(1u32 << 24) - 0.5;
            let k = ((15.0 + 10.0 * wave + 0.2 * noise) * 100.0).round() as i32;
            let v = if land { -1e34f32 } else { k as f32 * 0.01f32 };
            v.to_be_bytes()
        })
        .collect()
}

/// Both presets set the fill values of a field with land apart (filter `mask`), which pco
/// then codes far smaller than with them, and the frames decode back bit for bit, to
/// big-endian and native numbers.
#[test]
fn fill_values_are_set_apart_for_pco() {
    let data = field_with_land();
    let own = pco_f32(&data);
    let mut scratch = DecodeScratch::default();
    for thorough in [false, true] {
        let (h, frame) = encode_floats(thorough, &data, 360);
        assert_eq!(
            (h.codec, h.filter),
            (Codec::Pco, Filter::Mask),
            "{thorough}"
        );
        let stored = h.stored_len as usize;
        assert!(
            stored * 10 < own.len() * 8,
            "{thorough}: {stored} {}",
            own.len()
        );
        let payload = &frame[FRAME_HEADER_LEN..];
        let mut back = Vec::new();
        decode_payload(&h, payload, &mut back).unwrap();
        assert_eq!(back, data);
        let mut native = vec![0u8; data.len()];
        decode_payload_into(&h, payload, &mut native, &mut scratch, true).unwrap();
        let want: Vec<u8> = data
            .chunks_exact(4)
            .flat_map(|b| f32::from_be_bytes([b[0], b[1], b[2], b[3]]).to_ne_bytes())
            .collect();
        assert_eq!(native, want);
        // Another codec with the filter, or another element size, is refused.
        let pco_only = FrameHeader {
            codec: Codec::Zstd,
            ..h
        };
        assert!(matches!(
            decode_payload_into(&pco_only, payload, &mut native, &mut scratch, false),
            Err(FrameError::Codec(CodecError::Mask(MaskError::Codec {
                codec: Codec::Zstd
            })))
        ));
        let three = FrameHeader { esize: 3, ..h };
        assert!(matches!(
            decode_payload_into(&three, payload, &mut native, &mut scratch, false),
            Err(FrameError::Codec(CodecError::Mask(
                MaskError::ElementSize { esize: 3 }
            )))
        ));
        // A pco file of one number fewer than the bitmap leaves is refused.
        let mut bits = Vec::new();
        let (_, m, pco) =
            crate::codec::mask::decode(payload, 4, data.len() / 4, &mut bits).unwrap();
        let mut shorter = payload[..payload.len() - pco.len()].to_vec();
        let rest: Vec<u8> = {
            let mut r = vec![0u8; m * 4];
            crate::codec::pcodec::decompress_into(4, pco, &mut r, false, &mut Default::default())
                .unwrap();
            r
        };
        shorter.extend_from_slice(&pco_f32(&rest[4..]));
        let short = FrameHeader {
            stored_len: shorter.len() as u32,
            payload_crc: crc(&shorter),
            ..h
        };
        let e = decode_payload_into(&short, &shorter, &mut native, &mut scratch, false);
        assert!(
            matches!(e, Err(FrameError::Codec(CodecError::Pco(_)))),
            "{e:?}"
        );
    }
}

/// `max`'s pco tries chunks of half pco's default size: on a block whose spread changes
/// along it (four stretches of noise, each ten times the last), their bins fit each
/// stretch and the result is smaller than pco's default chunks, and decodes.
#[test]
fn max_tries_pco_chunks_of_half_the_size() {
    let n = 4 * PCO_HALF_CHUNK;
    let mut rnd = xorshift(0x9e37_79b9_7f4a_7c15);
    let data: Vec<u8> = (0..n)
        .flat_map(|i| {
            let noise = (rnd() >> 40) as f32 / (1u32 << 24) as f32 - 0.5;
            let spread = [0.001f32, 0.01, 0.1, 1.0][i / PCO_HALF_CHUNK];
            (100.0 + spread * noise).to_be_bytes()
        })
        .collect();
    let default = pco_f32(&data);
    let mut c = Vec::new();
    assert!(pco_thorough(NumKind::F32, &data, None, &mut c));
    assert!(
        c.len() * 100 < default.len() * 99,
        "{} {}",
        c.len(),
        default.len()
    );
    let mut back = vec![0u8; data.len()];
    crate::codec::pcodec::decompress_into(4, &c, &mut back, false, &mut Default::default())
        .unwrap();
    assert_eq!(back, data);
}

/// A block whose sample (its first 32 KiB) is half fill values (a polar row's ice) and the
/// rest of it one fifteenth, in short runs (islands): `mask` is judged on the elements
/// that are not the fill value, and taken where it beats the filters and zstd on the whole
/// block. Judged
/// against the sample's zstd result as it stood, the sample's cheap fill values made zstd
/// look twice as good and kept the block from `mask`.
#[test]
fn mask_is_judged_on_the_elements_that_are_not_fill_values() {
    let mut rnd = xorshift(0x2545_f491_4f6c_dd1d);
    let mut noise = || {
        // The sum of four uniform numbers: near-Gaussian, variance 1/3.
        (0..4)
            .map(|_| (rnd() >> 40) as f64 / f64::from(1u32 << 24) - 0.5)
            .sum::<f64>()
    };
    let data: Vec<u8> = (0..1u32 << 18)
        .flat_map(|i| {
            let (row, col) = (i / 720, i % 720);
            let ice = (row < 12 && col < 280) || (col + row % 7) % 120 < 8;
            let wave = (f64::from(row) * 0.05).sin() * (f64::from(col) * 0.02).cos();
            let v = 285.0 + 8.0 * wave + 0.1 * noise();
            if ice { 9.96921e36f32 } else { v as f32 }.to_be_bytes()
        })
        .collect();
    let fill = data
        .chunks_exact(4)
        .filter(|b| *b == 9.96921e36f32.to_be_bytes())
        .count();
    assert!(
        fill * 20 > data.len() / 4 && fill * 10 < data.len() / 4,
        "{fill}"
    );
    let first = &data[..32 << 10];
    let ice = first.chunks_exact(4).filter(|b| *b == &data[..4]).count();
    assert!(
        ice * 5 > 2 * first.len() / 4 && ice * 2 < first.len() / 4,
        "{ice}"
    );
    // As a variable of one dimension (no rows for `fit`).
    let (h, frame) = encode_floats(false, &data, 0);
    assert_eq!((h.codec, h.filter), (Codec::Pco, Filter::Mask));
    // Smaller than the filters with zstd on the whole block (by at least 3 %).
    let mut best = usize::MAX;
    for filter in [Filter::Shuffle, Filter::ByteDelta, Filter::ZigZagDelta] {
        let mut f = Vec::new();
        apply_filter(filter, &data, 4, &mut f);
        best = best.min(zstd::bulk::compress(&f, 3).unwrap().len());
    }
    assert!(
        h.stored_len as usize * 100 < best * 97,
        "{} {best}",
        h.stored_len
    );
    decodes_every_way(&h, &frame[FRAME_HEADER_LEN..], &data);
    // In rows of 720 the fitted predictor, with the same fill section, is smaller still:
    // judged the same way (its window widened past the sample's ice).
    let (hf, frame) = encode_floats(false, &data, 720);
    assert_eq!((hf.codec, hf.filter), (Codec::Pco, Filter::Fit));
    assert!(
        hf.stored_len < h.stored_len,
        "{} {}",
        hf.stored_len,
        h.stored_len
    );
    let payload = &frame[FRAME_HEADER_LEN..];
    assert_eq!(payload[..3], [1, 12, 1], "floats, shift 12, a fill section");
    decodes_every_way(&hf, payload, &data);
}

/// A climatology of sparse observations (as COADS): a field of monthly means on a 2-degree
/// grid, noisy, with a fill value wherever no ship passed — 45 % of the cells, scattered.
/// The fitted predictor finds few whole neighbourhoods there, and pco on the other elements
/// (`mask`) is smaller: the writer must see that, not take `fit` for being below zstd.
#[test]
fn scattered_fill_values_keep_mask_where_it_beats_fit() {
    let mut rnd = xorshift(0x1234_5678_9abc_def1);
    let data: Vec<u8> = (0..12 * 90 * 180u32)
        .flat_map(|i| {
            let (row, col) = ((i / 180) % 90, i % 180);
            let r = rnd();
            let gap = r % 100 < 45;
            let noise = ((r >> 20) % 2001) as f64 / 1000.0 - 1.0;
            let v = 15.0 * (f64::from(row) * 0.03).cos() + (f64::from(col) * 0.05).sin() + noise;
            if gap { -1e34f32 } else { v as f32 }.to_be_bytes()
        })
        .collect();
    let (h, frame) = encode_floats(false, &data, 180);
    let fit = fit_payload(&data, NumKind::F32, 180).unwrap();
    let mask = mask_payload(&data, NumKind::F32).unwrap();
    assert!(mask.len() < fit.len(), "{} {}", mask.len(), fit.len());
    assert_eq!((h.codec, h.filter), (Codec::Pco, Filter::Mask));
    decodes_every_way(&h, &frame[FRAME_HEADER_LEN..], &data);
}

#[test]
fn numeric_blocks_use_pco_where_it_pays_and_decode_every_way() {
    let data = decimal_walk(65536);
    let smooth: Vec<u8> = (0..65536u32)
        .flat_map(|i| (1000.0 + (i as f32 * 0.001).sin()).to_be_bytes())
        .collect();
    let mut scratch = DecodeScratch::default();
    for thorough in [false, true] {
        let level = if thorough { 19 } else { 3 };
        let mk = || Encoder::new(Codec::Zstd, level, FilterMode::Auto, thorough).unwrap();
        let mut frame = Vec::new();
        let h = mk()
            .numeric(true)
            .encode_block_numeric(0, 0, 4, (Some(NumKind::F32), 0), &data, &mut frame)
            .frame()
            .unwrap();
        assert_eq!((h.codec, h.filter), (Codec::Pco, Filter::None));
        let payload = &frame[FRAME_HEADER_LEN..];
        // Smaller than the best the filters and zstd give for the same block.
        let mut other = Vec::new();
        let h0 = mk()
            .encode_block(0, 0, 4, &data, &mut other)
            .frame()
            .unwrap();
        assert!(
            h.stored_len < h0.stored_len,
            "{} {}",
            h.stored_len,
            h0.stored_len
        );
        let mut out = Vec::new();
        decode_payload(&h, payload, &mut out).unwrap();
        assert_eq!(out, data);
        let mut native = vec![0u8; data.len()];
        decode_payload_into(&h, payload, &mut native, &mut scratch, true).unwrap();
        let want: Vec<u8> = data
            .chunks_exact(4)
            .flat_map(|c| f32::from_be_bytes(c.try_into().unwrap()).to_ne_bytes())
            .collect();
        assert_eq!(native, want);
        // Off: no kind, another element size, numeric(false), a fixed filter.
        for (enc, kind, esize) in [
            (mk().numeric(true), None, 4),
            (mk().numeric(true), Some(NumKind::I16), 4),
            (mk().numeric(false), Some(NumKind::F32), 4),
            (
                Encoder::new(Codec::Zstd, 3, FilterMode::Fixed(Filter::Shuffle), thorough)
                    .unwrap()
                    .numeric(true),
                Some(NumKind::F32),
                4,
            ),
        ] {
            let mut enc = enc;
            frame.clear();
            let h = enc
                .encode_block_numeric(0, 0, esize, (kind, 0), &data, &mut frame)
                .frame()
                .unwrap();
            assert_ne!(h.codec, Codec::Pco);
        }
        // A smooth field where byte filters do well: the default keeps zstd (pco does not
        // win by its margin on the sample).
        frame.clear();
        let h = mk()
            .numeric(true)
            .encode_block_numeric(0, 0, 4, (Some(NumKind::F32), 0), &smooth, &mut frame)
            .frame()
            .unwrap();
        let mut out = Vec::new();
        decode_payload(&h, &frame[FRAME_HEADER_LEN..], &mut out).unwrap();
        assert_eq!(out, smooth);
        if !thorough {
            assert_eq!(h.codec, Codec::Zstd);
        }
    }
}

/// The `max` preset's slow level runs only where it can change the choice: a block where
/// pco is far below zstd 3's result skips it (and stays pco), a block where they are close
/// gets both and keeps the smaller, which is never larger than the zstd 19 frame alone.
#[test]
fn thorough_encoders_skip_the_slow_level_where_pco_wins_clearly() {
    let mk = || {
        Encoder::new(Codec::Zstd, 19, FilterMode::Auto, true)
            .unwrap()
            .numeric(true)
    };
    let walk = decimal_walk(65536);
    let mut enc = mk();
    let mut frame = Vec::new();
    let h = enc
        .encode_block_numeric(0, 0, 4, (Some(NumKind::F32), 0), &walk, &mut frame)
        .frame()
        .unwrap();
    assert_eq!(h.codec, Codec::Pco);
    assert_eq!(enc.codec_runs, 0, "zstd 19 ran on a block pco wins clearly");
    // pco's result, computed apart, against zstd 3 of every filter: far below.
    let p = pco_f32(&walk);
    assert_eq!(p.len(), h.stored_len as usize);
    let mut z3 = zstd::bulk::Compressor::new(3).unwrap();
    for f in [
        Filter::None,
        Filter::Shuffle,
        Filter::ByteDelta,
        Filter::Delta,
    ] {
        let mut x = Vec::new();
        apply_filter(f, &walk, 4, &mut x);
        let z = z3.compress(&x).unwrap().len();
        assert!((p.len() as f64) < 0.85 * z as f64, "{f:?}: {} {z}", p.len());
    }
    // Integers 0..n as shorts with a period: pco and zstd close; both run, smaller kept.
    let ramp: Vec<u8> = (0..262144u32)
        .flat_map(|i| ((i % 4099) as i16).to_be_bytes())
        .collect();
    let mut enc = mk();
    frame.clear();
    let h = enc
        .encode_block_numeric(0, 0, 2, (Some(NumKind::I16), 0), &ramp, &mut frame)
        .frame()
        .unwrap();
    let mut plain = Vec::new();
    let h19 = Encoder::new(Codec::Zstd, 19, FilterMode::Auto, true)
        .unwrap()
        .encode_block(0, 0, 2, &ramp, &mut plain)
        .frame()
        .unwrap();
    assert!(h.stored_len <= h19.stored_len, "{h:?} {h19:?}");
    let mut out = Vec::new();
    decode_payload(&h, &frame[FRAME_HEADER_LEN..], &mut out).unwrap();
    assert_eq!(out, ramp);
}

#[test]
fn pco_frames_with_a_filter_or_a_wrong_length_are_refused() {
    let data = decimal_walk(4096);
    let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false)
        .unwrap()
        .numeric(true);
    let mut frame = Vec::new();
    let h = enc
        .encode_block_numeric(0, 0, 4, (Some(NumKind::F32), 0), &data, &mut frame)
        .frame()
        .unwrap();
    assert_eq!(h.codec, Codec::Pco);
    let payload = &frame[FRAME_HEADER_LEN..];
    let mut scratch = DecodeScratch::default();
    let filtered = FrameHeader {
        filter: Filter::Shuffle,
        ..h
    };
    let mut out = vec![0u8; data.len()];
    let e = decode_payload(&filtered, payload, &mut Vec::new()).unwrap_err();
    assert!(
        e.to_string().contains("filter shuffle with codec pco"),
        "{e}"
    );
    let e2 = decode_payload_into(&filtered, payload, &mut out, &mut scratch, false);
    assert_eq!(e2, Err(e));
    for decoded in [h.decoded_len - 4, h.decoded_len + 4] {
        let lying = FrameHeader {
            decoded_len: decoded,
            ..h
        };
        let mut out = vec![0u8; decoded as usize];
        let got = decode_payload_into(&lying, payload, &mut out, &mut scratch, true);
        let want = decode_payload(&lying, payload, &mut Vec::new());
        assert!(got.is_err() && want.is_err(), "{decoded}: {got:?} {want:?}");
        assert_eq!(got, want);
    }
}

/// The part `from..from + len` of the block of frame `h` by a [`PartDecoder`] given
/// `payload`: None when the frame is not one it decodes, `Ok(None)` when its filter leaves the
/// part to the whole block's decoding.
fn streamed_part(
    h: &FrameHeader,
    payload: &[u8],
    from: usize,
    len: usize,
    scratch: &mut DecodeScratch,
) -> Option<Result<Option<Vec<u8>>, FrameError>> {
    let mut d = match PartDecoder::new(h, from, len, scratch) {
        Ok(Some(d)) => d,
        Ok(None) => return None,
        Err(e) => return Some(Err(e)),
    };
    d.payload_mut().copy_from_slice(payload);
    let mut got = vec![0x5au8; len];
    Some(d.finish(&mut got).map(|done| done.then_some(got)))
}

/// Checks that [`decode_payload_part`] gives the bytes of `data` (the frame's block) it is
/// asked for: single bytes and elements, parts across elements, at the start, the middle and
/// the end of the block; and refuses a part that ends after the block.
fn parts_match(h: &FrameHeader, payload: &[u8], data: &[u8], scratch: &mut DecodeScratch) {
    let n = data.len();
    let e = usize::from(h.esize).max(1);
    let ctx = format!("{:?}/{:?} esize {e} of {n} bytes", h.codec, h.filter);
    for len in [1, e, e + 3, 3 * e, 100, n / 2, n] {
        for from in [
            0,
            1,
            e,
            e + 1,
            n / 3,
            n / 2 + 1,
            n.saturating_sub(len + 1),
            n - len.min(n),
        ] {
            let len = len.min(n - from.min(n));
            let from = from.min(n - len);
            let mut got = vec![0xa5u8; len];
            decode_payload_part(h, payload, from, &mut got, scratch).unwrap();
            assert!(got == data[from..from + len], "{ctx}: {from}+{len}");
            // Decoded only as far as the part needs (zstd frames only).
            if let Some(r) = streamed_part(h, payload, from, len, scratch) {
                assert_eq!(
                    r,
                    Ok(Some(data[from..from + len].to_vec())),
                    "{ctx}: {from}+{len}"
                );
            }
        }
    }
    let mut two = [0u8; 2];
    assert!(matches!(
        decode_payload_part(h, payload, n - 1, &mut two, scratch),
        Err(FrameError::DecodedLength { .. })
    ));
}

/// Decodes a frame every way (into a vector; into aligned and unaligned slices, big-endian
/// and native; parts of it) and checks each against `data`.
fn decodes_every_way(h: &FrameHeader, payload: &[u8], data: &[u8]) {
    let e = usize::from(h.esize);
    let mut out = Vec::new();
    decode_payload(h, payload, &mut out).unwrap();
    assert!(out == data);
    if !data.is_empty() {
        parts_match(h, payload, data, &mut DecodeScratch::default());
    }
    let mut native = data.to_vec();
    be_to_native(&mut native, e);
    let mut words = vec![0u64; data.len() / 8 + 2];
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
    let mut scratch = DecodeScratch::default();
    for at in [0, 1] {
        for (nat, want) in [(false, data), (true, &native[..])] {
            let out = &mut bytes[at..at + data.len()];
            out.fill(0x5a);
            decode_payload_into(h, payload, out, &mut scratch, nat).unwrap();
            assert!(out == want, "at {at} native {nat}");
        }
    }
}

/// xorshift64 values from `seed` (the codecs' tests' random numbers).
pub(crate) fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// A payload of several zstd frames (a skippable one first, then the block in two frames) is
/// decoded by a small read as the whole-frame decoding reads it: the frames' outputs one
/// after the other; bytes after the last frame that are not a frame fail both ways.
#[test]
fn a_small_read_reads_a_payload_of_several_frames_as_the_whole_decoding_does() {
    let data: Vec<u8> = (0..200_000u32)
        .flat_map(|i| (i / 3).to_be_bytes())
        .collect();
    let mut payload = Vec::new();
    payload.extend_from_slice(&0x184D_2A50u32.to_le_bytes());
    payload.extend_from_slice(&5u32.to_le_bytes());
    payload.extend_from_slice(b"skip!");
    let half = data.len() / 2;
    payload.extend_from_slice(&zstd::bulk::compress(&data[..half], 3).unwrap());
    payload.extend_from_slice(&zstd::bulk::compress(&data[half..], 3).unwrap());
    let frame = |payload: &[u8]| FrameHeader {
        stream: 0,
        block: 0,
        codec: Codec::Zstd,
        filter: Filter::None,
        esize: 4,
        decoded_len: data.len() as u32,
        stored_len: payload.len() as u32,
        payload_crc: crate::format::crc(payload),
    };
    let h = frame(&payload);
    let mut whole = Vec::new();
    decode_payload(&h, &payload, &mut whole).unwrap();
    assert!(whole == data);
    let mut scratch = DecodeScratch::default();
    for (from, len) in [(0, 4), (half - 2, 4), (data.len() - 4, 4), (0, data.len())] {
        let got = streamed_part(&h, &payload, from, len, &mut scratch);
        assert_eq!(
            got,
            Some(Ok(Some(data[from..from + len].to_vec()))),
            "{from}+{len}"
        );
    }
    let mut bad = payload.clone();
    bad.extend_from_slice(b"not a frame");
    let h = frame(&bad);
    assert!(decode_payload(&h, &bad, &mut whole).is_err());
    let got = streamed_part(&h, &bad, data.len() - 4, 4, &mut scratch);
    assert!(matches!(got, Some(Err(FrameError::Codec(_)))), "{got:?}");
}

/// A small read of a block of several zstd blocks (1 MiB: eight of them), decoded only as far
/// as the part needs, one buffer reused from read to read: every part it is asked for, at the start,
/// the middle and the end of the block, for each filter of the shuffle family and element
/// size, matches the block; damage in the last byte of the payload, after all that a part at
/// the block's start needs, fails the CRC; a frame that says it decodes to more than it does
/// is refused.
#[test]
fn a_part_of_a_big_zstd_frame_streamed_matches_its_block() {
    let mut next = xorshift(11);
    for esize in [2usize, 4, 8] {
        let n = (1 << 20) / esize;
        let data: Vec<u8> = (0..n as u64)
            .flat_map(|i| {
                let v = ((i % 1440) * 37 + (i / 1440) * 11) << 4 | (next() & 0xf);
                v.to_be_bytes()[8 - esize..].to_vec()
            })
            .collect();
        for f in [
            Filter::None,
            Filter::Shuffle,
            Filter::ByteDelta,
            Filter::Delta,
            Filter::ZigZagDelta,
        ] {
            let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Fixed(f), false).unwrap();
            let mut frame = Vec::new();
            let h = encode_any(&mut enc, esize, &data, &mut frame);
            assert_eq!((h.codec, h.filter), (Codec::Zstd, f));
            let payload = &frame[FRAME_HEADER_LEN..];
            let ctx = format!("{f:?} esize {esize}");
            let mut scratch = DecodeScratch::default();
            let len = data.len();
            for (from, part) in [
                (0, 4),
                (esize, 1),
                (len / 3, 3 * esize),
                (len / 2 + 1, 5),
                (len - 4, 4),
            ] {
                let got = streamed_part(&h, payload, from, part, &mut scratch);
                assert_eq!(
                    got,
                    Some(Ok(Some(data[from..from + part].to_vec()))),
                    "{ctx}: {from}+{part}"
                );
            }
            let mut bad = payload.to_vec();
            *bad.last_mut().unwrap() ^= 1;
            let got = streamed_part(&h, &bad, 0, 4, &mut scratch);
            assert_eq!(got, Some(Err(FrameError::PayloadChecksum)), "{ctx}");
            let lying = FrameHeader {
                decoded_len: h.decoded_len + 8 * esize as u32,
                ..h
            };
            let got = streamed_part(&lying, payload, len, 4, &mut scratch);
            assert!(
                matches!(
                    got,
                    Some(Err(FrameError::DecodedLength { .. } | FrameError::Codec(_)))
                ),
                "{ctx}: {got:?}"
            );
        }
    }
}
