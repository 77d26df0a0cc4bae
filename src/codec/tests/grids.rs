//! The 2-D predictors (`lorenzo`, `plane`), the context codec, lzma and `refs`, and the
//! levels of fast blocks.

use super::*;

/// A smooth 2-D float field (waves whose phase and amplitude drift from row to row: rows of
/// `w`), big-endian.
fn grid(w: usize, h: usize, double: bool) -> Vec<u8> {
    (0..w * h)
        .flat_map(|i| {
            let (r, c) = ((i / w) as f64, (i % w) as f64);
            let v = 30.0 * (0.05 * c + 0.01 * r).sin() * (1.0 + 0.003 * r);
            if double {
                v.to_be_bytes().to_vec()
            } else {
                (v as f32).to_be_bytes().to_vec()
            }
        })
        .collect()
}

#[test]
fn float_grids_use_the_2d_predictor_with_their_row_length() {
    for thorough in [false, true] {
        for (double, kind) in [(false, NumKind::F32), (true, NumKind::F64)] {
            let e = kind.esize();
            // 300 rows of 120, cut so that the last row is partial.
            let data = &grid(120, 300, double)[..(120 * 299 + 17) * e];
            for pco in [false, true] {
                let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, thorough)
                    .unwrap()
                    .numeric(pco);
                let mut frame = Vec::new();
                let h = enc
                    .encode_block_numeric(0, 0, e, (Some(kind), 120), data, &mut frame)
                    .frame()
                    .unwrap();
                let ctx = format!("thorough {thorough} {kind:?} pco {pco}");
                // With pco, the weighted predictor `plane` may do better still.
                let two_d = [Filter::Lorenzo, Filter::Plane];
                assert_eq!(h.filter, two_d[usize::from(h.codec == Codec::Pco)], "{ctx}");
                let payload = &frame[FRAME_HEADER_LEN..];
                assert_eq!(payload[..4], 120u32.to_be_bytes(), "{ctx}");
                let mut back = Vec::new();
                decode_payload(&h, payload, &mut back).unwrap();
                assert!(back == data, "{ctx}");
                // Without a row length (a 1-D variable), or as integers: never.
                for (kind, row) in [(Some(kind), 0), (None, 120)] {
                    frame.clear();
                    let h = enc
                        .encode_block_numeric(0, 0, e, (kind, row), data, &mut frame)
                        .frame()
                        .unwrap();
                    assert!(!two_d.contains(&h.filter), "{ctx} {kind:?} {row}");
                }
            }
        }
    }
}

/// A fixed `lorenzo` filter (`--filter lorenzo`) is the 2-D predictor on float blocks with
/// rows (with the row length in the payload), and the 1-D difference on every other
/// block: 1-D or integer variables, one-byte elements. Each frame decodes to its block.
#[test]
fn a_fixed_lorenzo_filter_falls_back_to_a_1d_difference_without_rows() {
    let floats: Vec<u8> = (0..4096)
        .flat_map(|i| (280.0f32 + (i % 64) as f32 * 0.25 + (i / 64) as f32).to_be_bytes())
        .collect();
    let ints: Vec<u8> = (0..4096i32)
        .flat_map(|i| (i * 7 % 300).to_be_bytes())
        .collect();
    let bytes: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8).collect();
    type Case<'a> = (&'a [u8], usize, Option<NumKind>, usize, Filter);
    let cases: [Case; 5] = [
        (&floats, 4, Some(NumKind::F32), 64, Filter::Lorenzo),
        (&floats, 4, Some(NumKind::F32), 0, Filter::ZigZagDelta),
        (&floats, 4, None, 64, Filter::ZigZagDelta),
        (&ints, 4, Some(NumKind::I32), 64, Filter::ZigZagDelta),
        (&bytes, 1, None, 64, Filter::ByteDelta),
    ];
    for (data, esize, kind, row, want) in cases {
        let mode = FilterMode::Fixed(Filter::Lorenzo);
        let mut enc = Encoder::new(Codec::Zstd, 3, mode, false)
            .unwrap()
            .numeric(false);
        let mut frame = Vec::new();
        let done = enc.encode_block_numeric(0, 0, esize, (kind, row), data, &mut frame);
        let Encoded::Frame(h) = done else {
            panic!("{kind:?} row {row}: not a frame")
        };
        assert_eq!(
            (h.codec, h.filter),
            (Codec::Zstd, want),
            "{kind:?} row {row}"
        );
        if want == Filter::Lorenzo {
            // The row length leads the payload (after the frame header).
            let at = FRAME_HEADER_LEN;
            assert_eq!(frame[at..at + 4], (row as u32).to_be_bytes());
        }
        let mut out = Vec::new();
        decode_payload(&h, &frame[FRAME_HEADER_LEN..], &mut out).unwrap();
        assert!(out == data, "{kind:?} row {row}");
    }
}

/// The worked example of design/FORMAT.md as a whole frame: the row length, then a zstd
/// frame of the filtered bytes (checked by hand in src/codec/lorenzo.rs).
#[test]
fn a_lorenzo_frame_decodes_and_bad_ones_are_refused() {
    let data: Vec<u8> = [1.0f32, 1.5, 2.0, -0.0]
        .iter()
        .flat_map(|x| x.to_be_bytes())
        .collect();
    let filtered = [
        0x7f, 0x00, 0x00, 0x80, 0x00, 0x80, 0x80, 0x80, 0, 0, 0, 0, 0, 0, 0, 1,
    ];
    // A raw zstd block is the bytes themselves: magic, frame header (single segment,
    // content size 16), block header (last, raw, 16 bytes), the bytes.
    let mut payload = vec![
        0, 0, 0, 2, 0x28, 0xb5, 0x2f, 0xfd, 0x20, 0x10, 0x81, 0x00, 0x00,
    ];
    payload.extend_from_slice(&filtered);
    let mk = |payload: &[u8], esize: u16| FrameHeader {
        stored_len: payload.len() as u32,
        decoded_len: 16,
        stream: 0,
        block: 0,
        codec: Codec::Zstd,
        filter: Filter::Lorenzo,
        esize,
        payload_crc: crc(payload),
    };
    let mut out = Vec::new();
    decode_payload(&mk(&payload, 4), &payload, &mut out).unwrap();
    assert_eq!(out, data);
    let mut scratch = DecodeScratch::default();
    let mut into = vec![0; 16];
    decode_payload_into(&mk(&payload, 4), &payload, &mut into, &mut scratch, false).unwrap();
    assert_eq!(into, data);
    // Row length 0, no room for the row length, and an element size it is not for.
    let mut zero = payload.clone();
    zero[3] = 0;
    let cases = [
        (mk(&zero, 4), zero.clone(), "lorenzo row length 0"),
        (
            mk(&payload[..3], 4),
            payload[..3].to_vec(),
            "no 4-byte row length",
        ),
        (mk(&payload, 2), payload.clone(), "element size 2"),
    ];
    for (h, p, want) in cases {
        let e = decode_payload(&h, &p, &mut out).unwrap_err();
        assert!(e.to_string().contains(want), "{e}");
        let e2 = decode_payload_into(&h, &p, &mut into, &mut scratch, true);
        assert_eq!(e2, Err(e));
    }
}

/// A topography-like field of `w` x `h` integers of `e` bytes (2, 4 or 8), big-endian:
/// smooth hills plus a little noise, scaled by `scale`.
fn int_grid(w: usize, h: usize, e: usize, scale: i64) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..w * h)
        .flat_map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (r, c) = ((i / w) as f64, (i % w) as f64);
            let v = 800.0 * (0.02 * c).sin() * (0.03 * r).cos() + 300.0 * (0.011 * (c + r)).sin();
            let v = (v as i64 + (x % 7) as i64 - 3) * scale;
            v.to_be_bytes()[8 - e..].to_vec()
        })
        .collect()
}

/// A `w` x `h` grid of shorts like an elevation field: smooth hills plus rough ground
/// correlated in both directions (each point the mean of its left and upper neighbours'
/// roughness plus a random step), where a 2-D predictor wins over byte filters but pco
/// alone does not win by much.
fn rough_terrain(w: usize, h: usize) -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut rough = vec![0i64; w * h];
    for i in 0..w * h {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let (r, c) = (i / w, i % w);
        let up = if r > 0 { rough[i - w] } else { 0 };
        let left = if c > 0 { rough[i - 1] } else { up };
        let up = if r > 0 { up } else { left };
        rough[i] = (up + left) / 2 + (x % 17) as i64 - 8;
    }
    (0..w * h)
        .flat_map(|i| {
            let (r, c) = ((i / w) as f64, (i % w) as f64);
            let v =
                900.0 * (c / 37.0).sin() * (r / 23.0).cos() + 250.0 * ((c + 2.0 * r) / 17.0).sin();
            ((v as i64 + rough[i]) as i16).to_be_bytes()
        })
        .collect()
}

/// The default preset checks a `plane` choice of the sample on the whole block, unless a
/// spread sample already shows it well below the block codec's result: a terrain block
/// keeps `plane` without a block-codec run; a block whose first rows are terrain but whose
/// rest is exact repeats far apart (zstd's case, not pco's) is checked, and drops `plane`.
#[test]
fn the_plane_check_runs_only_where_the_spread_sample_is_not_sure() {
    let mk = || {
        Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false)
            .unwrap()
            .numeric(true)
            .fast_blocks(true)
            .unwrap()
    };
    let (w, h) = (1000, 500);
    let terrain = rough_terrain(w, h);
    let mut enc = mk();
    let mut frame = Vec::new();
    let hd = enc
        .encode_block_numeric(0, 0, 2, (Some(NumKind::I16), w), &terrain, &mut frame)
        .frame()
        .unwrap();
    assert_eq!((hd.codec, hd.filter), (Codec::Pco, Filter::Plane));
    assert!(enc.plane_checked, "the sample did not ask for the check");
    assert_eq!(enc.codec_runs, 0, "zstd ran on the whole terrain block");
    decodes_every_way(&hd, &frame[FRAME_HEADER_LEN..], &terrain);
    // Well below zstd's best on the whole block: what the check would have said.
    let p = &frame[FRAME_HEADER_LEN..];
    let mut z3 = zstd::bulk::Compressor::new(3).unwrap();
    for f in [Filter::Shuffle, Filter::ByteDelta, Filter::ZigZagDelta] {
        let mut x = Vec::new();
        apply_filter(f, &terrain, 2, &mut x);
        let z = z3.compress(&x).unwrap().len();
        assert!(
            (p.len() as f64) < PLANE_MARGIN * z as f64,
            "{f:?}: {} {z}",
            p.len()
        );
    }

    // Terrain rows first, then 64 KiB of noise repeated: zstd finds the repeats.
    let mut noise = Vec::new();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..(64 << 10) / 8 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        noise.extend_from_slice(&x.to_be_bytes());
    }
    let mut mixed = terrain[..64 << 10].to_vec();
    while mixed.len() < terrain.len() {
        mixed.extend_from_slice(&noise);
    }
    mixed.truncate(terrain.len());
    let mut enc = mk();
    let mut frame = Vec::new();
    let hd = enc
        .encode_block_numeric(0, 0, 2, (Some(NumKind::I16), w), &mixed, &mut frame)
        .frame()
        .unwrap();
    assert!(enc.plane_checked, "the sample did not ask for the check");
    assert_eq!(enc.codec_runs, 1);
    assert_eq!(hd.codec, Codec::Zstd);
    decodes_every_way(&hd, &frame[FRAME_HEADER_LEN..], &mixed);
    let p = plane_payload(&mixed, NumKind::I16, w).unwrap();
    assert!(hd.stored_len as f64 * 2.0 < p.len() as f64);
}

/// A smooth field with noise ten times larger in a band of columns (as land against sea),
/// `ny` rows of `nx`, as floats of `e` bytes (big-endian).
fn patchy_field(ny: usize, nx: usize, e: usize) -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..ny * nx)
        .flat_map(|i| {
            let (r, c) = (i / nx, i % nx);
            let noise: f64 = (0..4)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5
                })
                .sum();
            let scale = if c % 100 < 40 { 2.0 } else { 0.2 };
            let v = 280.0 + 0.1 * r as f64 + 3.0 * (c as f64 * 0.05).sin() + noise * scale;
            if e == 4 {
                (v as f32).to_be_bytes().to_vec()
            } else {
                v.to_be_bytes().to_vec()
            }
        })
        .collect()
}

/// After a `context` result above [`NOISE_SHARE`] of its block, `max` tries lzma on the
/// whole block unfiltered and keeps it where smaller (values from a small set, repeated one
/// by one), and the frame decodes; not after another codec, nor after a small result, nor
/// in the default preset.
#[test]
fn lzma_is_tried_after_a_poor_context_result() {
    let mut rnd = xorshift(0x51_7cc1_b727_220a);
    let pool: Vec<f32> = (0..256).map(|_| (rnd() % 100_000) as f32 * 0.37).collect();
    let data: Vec<u8> = (0..1usize << 18)
        .flat_map(|_| pool[(rnd() % 256) as usize].to_be_bytes())
        .collect();
    let poor = vec![7u8; data.len() * 9 / 10];
    let mut enc = Encoder::new(Codec::Zstd, 19, FilterMode::Auto, true).unwrap();
    let (mut f, mut c) = (Vec::new(), poor.clone());
    let got = enc.lzma_after_context(&data, 4, (Codec::Context, Filter::None), &mut f, &mut c);
    assert_eq!(got, (Codec::Lzma, Filter::None));
    assert!(c.len() < data.len() / 2, "{}", c.len());
    let h = FrameHeader {
        codec: Codec::Lzma,
        filter: Filter::None,
        esize: 4,
        stored_len: c.len() as u32,
        decoded_len: data.len() as u32,
        stream: 0,
        block: 0,
        payload_crc: crate::format::crc(&c),
    };
    let mut back = Vec::new();
    decode_payload(&h, &c, &mut back).unwrap();
    assert_eq!(back, data);
    // Left alone: another codec's result, a result below the share, the default preset.
    for (current, len, thorough) in [
        ((Codec::Pco, Filter::None), poor.len(), true),
        ((Codec::Context, Filter::None), data.len() / 2, true),
        ((Codec::Context, Filter::None), poor.len(), false),
    ] {
        let mut enc = Encoder::new(Codec::Zstd, 19, FilterMode::Auto, thorough).unwrap();
        let mut c = vec![7u8; len];
        assert_eq!(
            enc.lzma_after_context(&data, 4, current, &mut f, &mut c),
            current
        );
        assert_eq!(c, vec![7u8; len]);
    }
}

#[test]
fn noisy_fields_use_the_context_codec_with_max_only() {
    for kind in [NumKind::F32, NumKind::F64] {
        let e = kind.esize();
        let data = patchy_field(200, 300, e);
        for (thorough, numeric) in [(true, true), (false, true), (true, false)] {
            let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, thorough)
                .unwrap()
                .numeric(numeric);
            let mut frame = Vec::new();
            let h = enc
                .encode_block_numeric(0, 0, e, (Some(kind), 300), &data, &mut frame)
                .frame()
                .unwrap();
            let ctx = format!("{kind:?} thorough {thorough} numeric {numeric}");
            let payload = &frame[FRAME_HEADER_LEN..];
            if thorough && numeric {
                assert_eq!((h.codec, h.filter), (Codec::Context, Filter::None), "{ctx}");
                // Floats, row 300.
                assert_eq!(
                    (payload[0], &payload[2..6]),
                    (1, &[0, 0, 1, 44][..]),
                    "{ctx}"
                );
            } else {
                assert_ne!(h.codec, Codec::Context, "{ctx}");
            }
            decodes_every_way(&h, payload, &data);
        }
    }
}

#[test]
fn integer_grids_use_the_plane_predictor_with_pco() {
    for (kind, scale) in [(NumKind::I16, 1), (NumKind::I32, 1000), (NumKind::I64, -1)] {
        let e = kind.esize();
        let data = int_grid(300, 200, e, scale);
        for thorough in [false, true] {
            let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, thorough)
                .unwrap()
                .numeric(true);
            let mut frame = Vec::new();
            let h = enc
                .encode_block_numeric(0, 0, e, (Some(kind), 300), &data, &mut frame)
                .frame()
                .unwrap();
            let ctx = format!("{kind:?} thorough {thorough}");
            let payload = &frame[FRAME_HEADER_LEN..];
            if thorough && h.codec == Codec::Context {
                // `max` may find the context codec smaller still (with the same rows).
                assert_eq!(&payload[2..6], &[0, 0, 1, 44], "{ctx}: row 300");
            } else if h.filter == Filter::Fit {
                // Or the predictor fitted to the block (at least 3 % below plane's).
                assert_eq!(h.codec, Codec::Pco, "{ctx}");
                assert_eq!(payload[0], 0, "{ctx}: map 0");
                let plane = plane_payload(&data, kind, 300).unwrap();
                assert!(h.stored_len as usize * 100 < plane.len() * 97, "{ctx}");
            } else {
                assert_eq!((h.codec, h.filter), (Codec::Pco, Filter::Plane), "{ctx}");
                assert_eq!(&payload[..5], &[0, 0, 1, 44, 0], "{ctx}: row 300, map 0");
            }
            decodes_every_way(&h, payload, &data);
            // Without a row length (a 1-D variable) the block does not use it.
            let mut frame = Vec::new();
            let h = enc
                .encode_block_numeric(0, 0, e, (Some(kind), 0), &data, &mut frame)
                .frame()
                .unwrap();
            assert!(!matches!(h.filter, Filter::Plane | Filter::Fit), "{ctx}");
        }
    }
    // Nor without pco.
    let data = int_grid(300, 200, 2, 1);
    let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false).unwrap();
    let mut frame = Vec::new();
    let h = enc
        .encode_block_numeric(0, 0, 2, (Some(NumKind::I16), 300), &data, &mut frame)
        .frame()
        .unwrap();
    assert_ne!(h.codec, Codec::Pco);
}

#[test]
fn plane_payloads_of_floats_with_special_values_decode_every_way() {
    let specials = [
        0x7fc0_1234u32,
        0xffa0_0001,
        0x8000_0000,
        1,
        0x7f80_0000,
        0xff80_0000,
    ];
    let vals: Vec<u32> = (0..5000u32)
        .map(|i| match i % 53 {
            k @ 0..=5 => specials[k as usize],
            _ => (280.0f32 + 10.0 * (0.05 * (i % 70) as f32).sin() + 0.01 * (i / 70) as f32)
                .to_bits(),
        })
        .collect();
    let f32s: Vec<u8> = vals.iter().flat_map(|x| x.to_be_bytes()).collect();
    let f64s: Vec<u8> = vals
        .iter()
        .flat_map(|&x| (f64::from(f32::from_bits(x)) * -3.0).to_be_bytes())
        .collect();
    for (kind, data) in [(NumKind::F32, f32s), (NumKind::F64, f64s)] {
        for row in [1, 69, 70, 5000, 9999] {
            let payload = plane_payload(&data, kind, row).unwrap();
            assert_eq!(payload[4], 1, "map 1 for floats");
            let h = FrameHeader {
                stored_len: payload.len() as u32,
                decoded_len: data.len() as u32,
                stream: 0,
                block: 0,
                codec: Codec::Pco,
                filter: Filter::Plane,
                esize: kind.esize() as u16,
                payload_crc: crc(&payload),
            };
            decodes_every_way(&h, &payload, &data);
        }
    }
}

/// The worked example of design/FORMAT.md as a frame, and frames a reader refuses.
#[test]
fn a_plane_frame_decodes_and_bad_ones_are_refused() {
    let data: Vec<u8> = [10i16, 12, 15, 11, 14, -4, 0]
        .iter()
        .flat_map(|x| x.to_be_bytes())
        .collect();
    let p = crate::codec::plane::Params {
        row: 3,
        float: false,
        pred: crate::codec::plane::PREDICTORS[0],
    };
    let mut payload = p.encode().to_vec();
    let residuals = [0, 20, 0, 4, 0, 6, 0, 7, 0, 4, 0, 39, 0, 4];
    assert!(crate::codec::pcodec::compress(
        NumKind::U16,
        &residuals,
        8,
        &mut payload
    ));
    // The pco file: magic, standalone version 3, number type u16 (7).
    assert_eq!(&payload[9..15], &[0x70, 0x63, 0x6f, 0x21, 0x03, 0x07]);
    let mk = |payload: &[u8], codec: Codec, esize: u16| FrameHeader {
        stored_len: payload.len() as u32,
        decoded_len: 14,
        stream: 0,
        block: 0,
        codec,
        filter: Filter::Plane,
        esize,
        payload_crc: crc(payload),
    };
    decodes_every_way(&mk(&payload, Codec::Pco, 2), &payload, &data);
    let with = |at: usize, v: u8| {
        let mut b = payload.clone();
        b[at] = v;
        b
    };
    let mut signed = p.encode().to_vec();
    assert!(crate::codec::pcodec::compress(
        NumKind::I16,
        &residuals,
        8,
        &mut signed
    ));
    let cases = [
        (
            Codec::Zstd,
            2,
            payload.clone(),
            "plane filter with codec zstd",
        ),
        (
            Codec::None,
            2,
            payload.clone(),
            "plane filter with codec none",
        ),
        (
            Codec::Pco,
            1,
            payload.clone(),
            "plane filter with element size 1",
        ),
        (Codec::Pco, 2, payload[..8].to_vec(), "no 9-byte prefix"),
        (Codec::Pco, 2, with(3, 0), "plane row length 0"),
        (Codec::Pco, 2, with(4, 2), "plane map byte 2"),
        (Codec::Pco, 2, with(8, 7), "plane shift 7"),
        (Codec::Pco, 2, signed, "number type 8 for plane residuals"),
        (Codec::Pco, 4, payload.clone(), "pco: "),
    ];
    let mut scratch = DecodeScratch::default();
    for (codec, esize, p, want) in cases {
        let h = mk(&p, codec, esize);
        let e = decode_payload(&h, &p, &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains(want), "{e}");
        let mut into = vec![0; 14];
        let e2 = decode_payload_into(&h, &p, &mut into, &mut scratch, true);
        assert_eq!(e2, Err(e));
    }
}

#[test]
fn corrupt_payload_is_reported() {
    let data: Vec<u8> = (0..1000).map(|i| (i / 10) as u8).collect();
    let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false).unwrap();
    let mut frame = Vec::new();
    let h = enc
        .encode_block(0, 0, 1, &data, &mut frame)
        .frame()
        .unwrap();
    let mut payload = frame[FRAME_HEADER_LEN..].to_vec();
    payload[0] ^= 1;
    let mut out = Vec::new();
    assert_eq!(
        decode_payload(&h, &payload, &mut out),
        Err(FrameError::PayloadChecksum)
    );
    // A frame that lies about its decoded length, with a matching CRC.
    let mut lying = h;
    lying.decoded_len = 999;
    let e = decode_payload(&lying, &frame[FRAME_HEADER_LEN..], &mut out).unwrap_err();
    assert!(
        matches!(
            e,
            FrameError::Codec(CodecError::Zstd(_)) | FrameError::DecodedLength { decoded: 999, .. }
        ),
        "{e}"
    );
}

/// The zstd level a frame was compressed at, told by recompressing its filtered block at
/// `levels` and comparing bytes (zstd output is deterministic for a level).
fn level_of(frame: &[u8], data: &[u8], esize: usize, levels: &[i32]) -> Option<i32> {
    let h = FrameHeader::decode(frame).unwrap();
    assert_eq!(h.codec, Codec::Zstd);
    let mut f = Vec::new();
    apply_filter(h.filter, data, esize, &mut f);
    let payload = &frame[FRAME_HEADER_LEN..];
    levels
        .iter()
        .copied()
        .find(|&l| zstd::bulk::compress(&f, l).unwrap() == payload)
}

#[test]
fn fast_blocks_use_level_1_only_where_level_3_does_not_pay() {
    // Noise in the low bytes of floats: level 3 gains nothing over level 1.
    let mut rnd = xorshift(0x9E37_79B9_7F4A_7C15);
    let noisy: Vec<u8> = (0..65536)
        .flat_map(|i| {
            (20.0 + (i as f32 * 0.001).sin() + (rnd() % 1000) as f32 * 1e-4).to_be_bytes()
        })
        .collect();
    // 5-byte station codes drawn from 2000, in random order: level 3 matches 5 bytes,
    // level 1 needs 6, so level 3 pays.
    let stations: Vec<[u8; 5]> = (0..2000)
        .map(|_| rnd().to_le_bytes()[..5].try_into().unwrap())
        .collect();
    let records: Vec<u8> = (0..40000)
        .flat_map(|_| stations[(rnd() % 2000) as usize])
        .collect();
    for (data, esize, fast_level) in [(&noisy, 4, 1), (&records, 1, 3)] {
        let mut frame = Vec::new();
        let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false)
            .unwrap()
            .fast_blocks(true)
            .unwrap();
        enc.encode_block(0, 0, esize, data, &mut frame);
        assert_eq!(level_of(&frame, data, esize, &[1, 3]), Some(fast_level));
        // Without fast blocks, or with a fixed filter, the level is the encoder's.
        frame.clear();
        let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false).unwrap();
        enc.encode_block(0, 0, esize, data, &mut frame);
        assert_eq!(level_of(&frame, data, esize, &[1, 3]), Some(3));
        frame.clear();
        let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Fixed(Filter::Shuffle), false)
            .unwrap()
            .fast_blocks(true)
            .unwrap();
        enc.encode_block(0, 0, esize, data, &mut frame);
        assert_eq!(level_of(&frame, data, esize, &[1, 3]), Some(3));
    }
}

#[test]
fn repeat_set_finds_exactly_the_repeats_a_hash_set_finds() {
    let mut rnd = xorshift(0x2545_f491_4f6c_dd1d);
    // Few distinct values (many repeats), the extremes among them.
    let mut values: Vec<u64> = (0..50_000).map(|_| rnd() % 20_000).collect();
    values.extend([
        0,
        u64::MAX,
        u64::MAX - 1,
        0,
        u64::MAX,
        u64::MAX - 1,
        1 << 63,
    ]);
    let mut set = RepeatSet::with_capacity(values.len());
    let mut truth = std::collections::HashSet::new();
    for v in values {
        assert_eq!(set.insert(v), truth.insert(v), "{v}");
    }
}

#[test]
fn far_repeats_are_repeats_the_sample_does_not_show() {
    let mut rnd = xorshift(0x9e37_79b9_7f4a_7c15);
    let pool: Vec<u64> = (0..40_000).map(|_| rnd()).collect();
    let n = LZMA_SAMPLE;
    // The pool in order (the sample sees no repeat), then picks from it: 60 % repeats.
    let far: Vec<u8> = pool
        .iter()
        .copied()
        .chain((0..60_000).map(|_| pool[(rnd() % 40_000) as usize]))
        .flat_map(u64::to_be_bytes)
        .collect();
    assert!(far_repeats(repeat_shares(&far, n, 8)));
    // 4-byte floats are judged in pairs: repeated pairs count, lone repeated values do
    // not (each value of a pool of 4-byte values repeated, never beside the same one);
    // 4-byte integers one by one; 2-byte values are not judged.
    let unit = |e, k| repeat_unit(e, Some(k)).unwrap();
    assert!(far_repeats(repeat_shares(&far, n, unit(4, NumKind::F32))));
    let lone4: Vec<u8> = pool
        .iter()
        .map(|&v| v as u32)
        .chain((0..120_000).map(|_| pool[(rnd() % 40_000) as usize] as u32))
        .flat_map(u32::to_be_bytes)
        .collect();
    assert!(!far_repeats(repeat_shares(
        &lone4,
        n,
        unit(4, NumKind::F32)
    )));
    assert_eq!(repeat_unit(4, None), Some(8));
    assert!(far_repeats(repeat_shares(&lone4, n, unit(4, NumKind::I32))));
    assert_eq!(repeat_unit(2, Some(NumKind::I16)), None);
    assert!(!far_repeats(repeat_shares(&far, n, 2)));
    // Runs of one value (fill values) after distinct values: not far repeats.
    let runs: Vec<u8> = pool
        .iter()
        .copied()
        .chain(std::iter::repeat_n(pool[7], 60_000))
        .flat_map(u64::to_be_bytes)
        .collect();
    assert!(!far_repeats(repeat_shares(&runs, n, 8)));
    // Every value twice in a row: as many repeats in the sample as in the block.
    let near: Vec<u8> = pool
        .iter()
        .flat_map(|&v| [v, v])
        .flat_map(u64::to_be_bytes)
        .collect();
    assert!(!far_repeats(repeat_shares(&near, n, 8)));
    // No repeats at all, and a block too short to have a sample.
    let unique: Vec<u8> = pool.iter().copied().flat_map(u64::to_be_bytes).collect();
    assert!(!far_repeats(repeat_shares(&unique, n, 8)));
    assert!(!far_repeats(repeat_shares(&far[..2 * n - 8], n, 8)));
}

#[test]
fn max_tries_lzma_on_blocks_whose_values_repeat_beyond_the_sample() {
    // Random bits (no filter helps), the first 48,000 values distinct (more than the
    // sample's 16,384), then 150,000 picks among them: LZMA codes each repeat as a
    // match, several times smaller than zstd's.
    let mut rnd = xorshift(0x0123_4567_89ab_cdef);
    let pool: Vec<u64> = (0..48_000).map(|_| rnd()).collect();
    let data: Vec<u8> = pool
        .iter()
        .copied()
        .chain((0..150_000).map(|_| pool[(rnd() % 48_000) as usize]))
        .flat_map(u64::to_be_bytes)
        .collect();
    let mut enc = Encoder::new(Codec::Zstd, 19, FilterMode::Auto, true).unwrap();
    let mut frame = Vec::new();
    enc.encode_block(0, 0, 8, &data, &mut frame);
    let h = FrameHeader::decode(&frame[..FRAME_HEADER_LEN]).unwrap();
    // Random picks: the references are as random as the matches' distances; either form.
    assert!(
        h.codec == Codec::Lzma && matches!(h.filter, Filter::None | Filter::Refs),
        "{h:?}"
    );
    let mut back = Vec::new();
    decode_payload(&h, &frame[FRAME_HEADER_LEN..], &mut back).unwrap();
    assert!(back == data);
}

/// The vertex coordinates of a triangulated grid (random bits a vertex), its cells in rows
/// of quads, the even rows first, then the odd ones: each vertex recurs in the cells next to
/// it and again half the block away.
fn mesh_vertices(w: usize, h: usize) -> Vec<u8> {
    let mut rnd = xorshift(0x5eed_1234_abcd_0001);
    let lon: Vec<u64> = (0..w * h).map(|_| rnd()).collect();
    let mut out = Vec::new();
    for parity in 0..2 {
        for r in (parity..h - 1).step_by(2) {
            for c in 0..w - 1 {
                let (a, b) = (r * w + c, (r + 1) * w + c);
                for v in [a, a + 1, b, a + 1, b + 1, b] {
                    out.extend_from_slice(&lon[v].to_be_bytes());
                }
            }
        }
    }
    out
}

#[test]
fn max_uses_refs_where_it_beats_plain_lzma() {
    // 1.6 MiB of far and near repeats: refs with lzma, smaller than lzma alone.
    let data = mesh_vertices(200, 180);
    let mut enc = Encoder::new(Codec::Zstd, 19, FilterMode::Auto, true).unwrap();
    let mut frame = Vec::new();
    let h = enc
        .encode_block(0, 0, 8, &data, &mut frame)
        .frame()
        .unwrap();
    assert_eq!((h.codec, h.filter), (Codec::Lzma, Filter::Refs));
    let (mut f, mut plain) = (Vec::new(), Vec::new());
    assert!(lzma_payload(
        Filter::None,
        &data,
        8,
        &mut f,
        usize::MAX,
        &mut plain
    ));
    assert!(
        (h.stored_len as usize) < plain.len(),
        "{h:?} {}",
        plain.len()
    );
    let payload = &frame[FRAME_HEADER_LEN..];
    let mut back = Vec::new();
    decode_payload(&h, payload, &mut back).unwrap();
    assert!(back == data);
    // Straight into a buffer, big-endian and native.
    let mut out = vec![0u8; data.len()];
    let mut scratch = DecodeScratch::default();
    decode_payload_into(&h, payload, &mut out, &mut scratch, false).unwrap();
    assert!(out == data);
    decode_payload_into(&h, payload, &mut out, &mut scratch, true).unwrap();
    assert!(out
        .chunks_exact(8)
        .zip(data.chunks_exact(8))
        .all(|(a, b)| u64::from_ne_bytes(a.try_into().unwrap())
            == u64::from_be_bytes(b.try_into().unwrap())));
    // The default preset never writes refs.
    let mut fast = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false).unwrap();
    let h = fast
        .encode_block(0, 0, 8, &data, &mut frame)
        .frame()
        .unwrap();
    assert_ne!(h.filter, Filter::Refs);
}

#[test]
fn hostile_refs_frames_are_refused() {
    // The ints 5, 7, 5, 5, 9, 7 of design/FORMAT.md's example.
    let data: Vec<u8> = [5u32, 7, 5, 5, 9, 7]
        .iter()
        .flat_map(|x| x.to_be_bytes())
        .collect();
    let mut filtered = Vec::new();
    assert_eq!(crate::codec::refs::apply(&data, 4, &mut filtered), Some(3));
    let mk = |payload: &[u8], codec: Codec, esize: u16, decoded: u32| FrameHeader {
        stored_len: payload.len() as u32,
        decoded_len: decoded,
        stream: 0,
        block: 0,
        codec,
        filter: Filter::Refs,
        esize,
        payload_crc: crc(payload),
    };
    let decode = |payload: &[u8], codec: Codec, esize: u16, decoded: u32| {
        let h = mk(payload, codec, esize, decoded);
        let mut out = vec![1, 2];
        let r = decode_payload(&h, payload, &mut out);
        assert!(r.is_ok() || out.is_empty(), "{r:?}");
        let mut into = vec![0u8; decoded as usize];
        let r2 = decode_payload_into(&h, payload, &mut into, &mut DecodeScratch::default(), false);
        assert_eq!(r.is_ok(), r2.is_ok(), "{r:?} {r2:?}");
        r.map(|_| out)
    };
    // Codec none (only hand-made: 40 bytes for a block of 24), and lzma.
    let mut raw = 3u32.to_be_bytes().to_vec();
    raw.extend_from_slice(&filtered);
    assert_eq!(decode(&raw, Codec::None, 4, 24).unwrap(), data);
    let mut z = Vec::new();
    let mut f = Vec::new();
    assert!(lzma_payload(
        Filter::Refs,
        &data,
        4,
        &mut f,
        usize::MAX,
        &mut z
    ));
    assert_eq!(decode(&z, Codec::Lzma, 4, 24).unwrap(), data);
    // No entry count; an element size or a codec refs does not go with.
    assert!(matches!(
        decode(&raw[..3], Codec::None, 4, 24),
        Err(FrameError::Codec(CodecError::Refs(
            RefsError::NoCount { .. }
        )))
    ));
    assert!(matches!(
        decode(&raw, Codec::None, 2, 24),
        Err(FrameError::Codec(CodecError::Refs(
            RefsError::FrameElementSize { esize: 2 }
        )))
    ));
    for codec in [Codec::Pco, Codec::Constant] {
        assert!(matches!(
            decode(&raw, codec, 4, 24),
            Err(FrameError::Codec(CodecError::Refs(RefsError::Codec { .. })))
        ));
    }
    // Not whole elements.
    assert!(matches!(
        decode(&raw, Codec::None, 4, 22),
        Err(FrameError::FilterElementSize { .. })
    ));
    // More entries than elements (nothing allocated for it), one more or one fewer.
    let mut bad = raw.clone();
    bad[..4].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(matches!(
        decode(&bad, Codec::None, 4, 24),
        Err(FrameError::Codec(CodecError::Refs(
            RefsError::Entries { .. }
        )))
    ));
    for d in [2u32, 4] {
        bad[..4].copy_from_slice(&d.to_be_bytes());
        assert!(matches!(
            decode(&bad, Codec::None, 4, 24),
            Err(FrameError::RawLength { .. })
        ));
        let mut z2 = d.to_be_bytes().to_vec();
        z2.extend_from_slice(&z[4..]);
        assert!(matches!(
            decode(&z2, Codec::Lzma, 4, 24),
            Err(FrameError::Codec(CodecError::Lzma(_)))
        ));
    }
    // A reference past the table's start (the third, last bytes at 3 n + 2 = 20).
    let mut bad = raw.clone();
    bad[4 + 20] = 3;
    assert!(matches!(
        decode(&bad, Codec::None, 4, 24),
        Err(FrameError::Codec(CodecError::Refs(RefsError::Reference {
            element: 2,
            reference: 3,
            entries: 2
        })))
    ));
    // The lzma stream of other filtered bytes: it decodes, and refs refuses them.
    let mut wrong = filtered.clone();
    wrong[3 * 6 + 5] = 0;
    let mut z3 = 3u32.to_be_bytes().to_vec();
    assert!(crate::codec::lzma::compress(&wrong, 6, usize::MAX, &mut z3));
    assert!(matches!(
        decode(&z3, Codec::Lzma, 4, 24),
        Err(FrameError::Codec(CodecError::Refs(RefsError::TableShort {
            entries: 3
        })))
    ));
}
