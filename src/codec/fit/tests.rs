use super::undo::{undo_any, window_len};
use super::*;

use crate::codec::tests::xorshift;

/// Shares out over `taps` (the first takes the remainder) what makes their weights sum to 2^q.
fn sum_to_power(taps: &mut [Tap], q: u8) {
    let k = taps.len() as i64;
    let need = (1i64 << q) - taps.iter().map(|t| i64::from(t.weight)).sum::<i64>();
    for (j, t) in taps.iter_mut().enumerate() {
        let share = need / k + if j == 0 { need % k } else { 0 };
        t.weight = i16::try_from(i64::from(t.weight) + share).unwrap();
    }
}

/// The filter as FORMAT.md states it, one element at a time in i128 (then wrapped), with
/// the fill elements' working values carried: the residuals of the other elements.
fn reference(data: &[u8], e: usize, p: &FitParams, fill: Option<u64>) -> Vec<u64> {
    let bits = 8 * e as u32;
    let n = data.len() / e;
    let wrap = |x: i128| -> i128 {
        let m = x.rem_euclid(1i128 << bits);
        if m >= 1i128 << (bits - 1) {
            m - (1i128 << bits)
        } else {
            m
        }
    };
    let mut v = vec![0i128; n];
    let mut out = Vec::new();
    let r = p.taps.iter().map(|t| t.offset as usize).max().unwrap_or(1);
    for i in 0..n {
        let b = &data[i * e..i * e + e];
        let u = b.iter().fold(0u64, |w, &x| (w << 8) | u64::from(x));
        let mut m = wrap(i128::from(u));
        if p.float && m < 0 {
            m ^= (1i128 << (bits - 1)) - 1;
        }
        let prev = if i == 0 { 0 } else { v[i - 1] };
        if fill == Some(u) {
            v[i] = prev;
            continue;
        }
        let pred = if i < r {
            prev
        } else {
            let s: i128 = p
                .taps
                .iter()
                .map(|t| i128::from(t.weight) * (v[i - t.offset as usize] - prev))
                .sum();
            // 64-bit two's complement, as the format says.
            let s = s as i64 as i128;
            let h = if p.shift > 0 {
                1i128 << (p.shift - 1)
            } else {
                0
            };
            let s = ((s + h) as i64 as i128) >> p.shift;
            wrap((prev + s) as i64 as i128)
        };
        v[i] = m;
        let d = wrap(m - pred);
        out.push(((d << 1) ^ (d >> 127)) as u64 & (u64::MAX >> (64 - bits)));
    }
    out
}

fn roundtrip(data: &[u8], e: usize, p: &FitParams, fill: Option<u64>) {
    let mut work = Work::default();
    let mut words = Vec::new();
    let m = apply_native(data, e, p, fill, &mut words, &mut work);
    let z: Vec<u64> = match e {
        2 => bytemuck::cast_slice::<u64, u16>(&words)[..m]
            .iter()
            .map(|&x| u64::from(x))
            .collect(),
        4 => bytemuck::cast_slice::<u64, u32>(&words)[..m]
            .iter()
            .map(|&x| u64::from(x))
            .collect(),
        _ => words[..m].to_vec(),
    };
    assert!(
        z == reference(data, e, p, fill),
        "residuals differ: e {e} {p:?}"
    );
    // The version for any CPU, whichever `residuals` chose here.
    let mut any_words = Vec::new();
    let mut any_work = Work::default();
    load(data, e, p.float, fill, &mut any_work);
    let k = residuals_any::<false>(e, p, 0..data.len() / e, &mut any_words, &mut any_work);
    assert!(
        k == m && any_words == words,
        "e {e} {p:?}: the portable residuals differ"
    );
    let n = data.len() / e;
    let mut bits = vec![0u8; n.div_ceil(8)];
    if let Some(f) = fill {
        for i in 0..n {
            let b = &data[i * e..i * e + e];
            if b.iter().fold(0u64, |w, &x| (w << 8) | u64::from(x)) == f {
                bits[i / 8] |= 0x80 >> (i % 8);
            }
        }
    }
    let zb = &bytemuck::cast_slice::<u64, u8>(&words)[..m * e];
    let mut out = vec![0u8; data.len()];
    undo_into(
        zb,
        e,
        p,
        fill.map(|f| (f, &bits[..])),
        &mut out,
        false,
        &mut work,
    );
    let bad = out.iter().zip(data).position(|(a, b)| a != b);
    assert!(
        bad.is_none(),
        "e {e} {p:?} fill {fill:?}: first difference at byte {bad:?} of {}",
        data.len()
    );
    // The version for any CPU, whichever `undo_into` chose here.
    let mut any = vec![0u8; data.len()];
    let bits_of = fill.map(|f| (f, &bits[..]));
    undo_any::<false>(zb, e, p, bits_of, &mut any, false, &mut Work::default());
    assert!(
        any == data,
        "e {e} {p:?} fill {fill:?}: the portable version differs"
    );
    let mut native = vec![0u8; data.len()];
    undo_into(
        zb,
        e,
        p,
        fill.map(|f| (f, &bits[..])),
        &mut native,
        true,
        &mut work,
    );
    for (a, b) in native.chunks_exact(e).zip(data.chunks_exact(e)) {
        let mut b = b.to_vec();
        if cfg!(target_endian = "little") {
            b.reverse();
        }
        assert_eq!(a, &b[..]);
    }
    // Too few residuals: nothing claimed, no panic.
    if m > 0 {
        undo_into(
            &zb[..(m - 1) * e],
            e,
            p,
            fill.map(|f| (f, &bits[..])),
            &mut out,
            false,
            &mut work,
        );
    }
}

#[test]
fn the_filter_is_the_formula_and_undoes_itself_for_any_weights_and_fill() {
    let mut rnd = xorshift(0x9E37_79B9_7F4A_7C15);
    for round in 0..300 {
        let e = [2, 4, 8][round % 3];
        let n = 1 + (rnd() % 3000) as usize;
        let row = 1 + (rnd() % 70) as usize;
        let smooth = round % 2 == 0;
        let mut data = Vec::with_capacity(n * e);
        let fill_word = rnd() >> (64 - 8 * e);
        // Fill elements scattered, or in stretches (rows of land) of up to 300.
        let land = 1 + (rnd() % 300) as usize;
        let lands = round % 10 >= 5;
        for i in 0..n {
            let fill_here = if lands {
                (i / land * 7919 + round) % 5 < 2
            } else {
                rnd().is_multiple_of(7)
            };
            let x = if fill_here && round % 5 != 0 {
                fill_word
            } else if smooth {
                let (r, c) = ((i / row) as f64, (i % row) as f64);
                let f = 1000.0 * (r * 0.1).sin() + 700.0 * (c * 0.2).cos() + (rnd() % 50) as f64;
                match e {
                    2 => f as i16 as u16 as u64,
                    4 => u64::from((f as f32 + 3.0e5).to_bits()),
                    _ => (f - 1.0e9).to_bits(),
                }
            } else {
                rnd() >> (64 - 8 * e)
            };
            data.extend_from_slice(&x.to_be_bytes()[8 - e..]);
        }
        let k = (rnd() % 12) as usize;
        let big = round % 4 == 1;
        let taps = (0..k)
            .map(|_| Tap {
                offset: 2 + (rnd() % (2 * row as u64 + 3)) as u32,
                weight: if big {
                    rnd() as i16
                } else {
                    (rnd() % 2001) as i16 - 1000
                },
            })
            .collect();
        let p = FitParams {
            float: round % 3 != 0,
            shift: (rnd() % 16) as u8,
            taps,
        };
        let fill = (round % 5 != 0).then_some(fill_word);
        roundtrip(&data, e, &p, fill);
        // And the weights the writer fits.
        let fitted = fit(
            &data,
            e,
            p.float,
            fill,
            &offsets_for(row, n),
            &mut Work::default(),
        );
        roundtrip(&data, e, &fitted, fill);
    }
}

#[test]
fn the_runs_of_elements_that_are_not_the_fill_are_the_bitmap_s() {
    let mut rnd = xorshift(0x2545_F491_4F6C_DD1D);
    for round in 0..400 {
        let n = (rnd() % 700) as usize;
        // Bits in stretches of up to 150 (across bytes and words), or scattered; the
        // bitmap sometimes short (nothing is the fill beyond it).
        let stretch = 1 + (rnd() % 150) as usize;
        let mut bits = vec![0u8; n.div_ceil(8) - (round % 7 == 0 && n > 8) as usize];
        let mut fill = vec![false; n];
        for (i, f) in fill.iter_mut().enumerate() {
            let on = if round % 2 == 0 {
                (i / stretch + round).is_multiple_of(3)
            } else {
                rnd().is_multiple_of(3)
            };
            if on && i / 8 < bits.len() {
                bits[i / 8] |= 0x80 >> (i % 8);
                *f = true;
            }
        }
        let mut want = Vec::new();
        let mut i = 0;
        while i < n {
            if fill[i] {
                i += 1;
                continue;
            }
            let start = i;
            while i < n && !fill[i] {
                i += 1;
            }
            want.push((start, i));
        }
        let mut runs = vec![(9, 9)];
        runs_of(&bits, n, &mut runs);
        assert_eq!(runs, want, "round {round}: n {n}, stretch {stretch}");
    }
}

/// A block of `n` elements of `e` bytes for the decoder's tests: `fill_word` where
/// `is_fill(i, rnd)` says, else full-range words (`wide`) or a smooth field in rows of `row`
/// with noise (its floats' bits for 4-byte elements).
fn test_block(
    rnd: &mut dyn FnMut() -> u64,
    e: usize,
    n: usize,
    row: usize,
    wide: bool,
    fill_word: u64,
    is_fill: impl Fn(usize, &mut dyn FnMut() -> u64) -> bool,
) -> Vec<u8> {
    let mut data = Vec::with_capacity(n * e);
    for i in 0..n {
        let x = if is_fill(i, &mut *rnd) {
            fill_word
        } else if wide {
            rnd() >> (64 - 8 * e)
        } else {
            let f = 3000.0 * ((i / row) as f64 * 0.05).sin() + (rnd() % 300) as f64;
            match e {
                2 => f as i16 as u16 as u64,
                _ => u64::from((f as f32).to_bits()),
            }
        };
        data.extend_from_slice(&x.to_be_bytes()[8 - e..]);
    }
    data
}

#[test]
fn one_tap_two_back_takes_the_decoder_s_short_paths_and_agrees_with_the_formula() {
    // One near tap two back and a weights' sum of 2^q with q = s − 3 ..= s: the decoder's
    // specialized paths (for q = s without the element before at all), on full-range
    // words (the largest sums) and on a smooth field, with and without fill elements.
    let mut rnd = xorshift(0x2545_F491_4F6C_DD1D);
    for round in 0..96 {
        let e = [2, 4][round % 2];
        let shift = [3u8, 12, 15][(round / 2) % 3];
        let q = shift - (round / 6 % 4) as u8;
        let row = 9 + (rnd() % 40) as usize;
        let n = 4 * row + (rnd() % 2000) as usize;
        let fill_word = rnd() >> (64 - 8 * e);
        let data = test_block(&mut rnd, e, n, row, round % 4 < 2, fill_word, |_, r| {
            round % 3 == 2 && r().is_multiple_of(5)
        });
        let mut taps: Vec<Tap> = offsets_for(row, n)
            .into_iter()
            .map(|offset| Tap {
                offset,
                weight: (rnd() % 401) as i16 - 200,
            })
            .collect();
        sum_to_power(&mut taps, q);
        let p = FitParams {
            float: round % 5 != 0,
            shift,
            taps,
        };
        assert_eq!(p.weight_sum(), 1 << q);
        let fill = (round % 3 == 2).then_some(fill_word);
        roundtrip(&data, e, &p, fill);
        // A sum that is not a power of two (the path that multiplies by it), and the same
        // weights for 8-byte elements (whose sums wrap: the formula's own path).
        let mut other = p.clone();
        other.taps[0].weight += 3;
        roundtrip(&data, e, &other, fill);
        let wide: Vec<u8> = data
            .chunks_exact(e)
            .flat_map(|c| {
                let x = c.iter().fold(0u64, |w, &b| (w << 8) | u64::from(b));
                (x.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_be_bytes()
            })
            .collect();
        roundtrip(&wide, 8, &p, None);
    }
}

#[test]
fn the_format_s_example() {
    // design/FORMAT.md, filter 9: e = 2, map 0, shift 2, taps (3, 4) and (4, -2), the
    // shorts 10, 12, 15, 11, -1, 14, 16, 13 with fill -1.
    let data: Vec<u8> = [10i16, 12, 15, 11, -1, 14, 16, 13]
        .iter()
        .flat_map(|x| x.to_be_bytes())
        .collect();
    let p = FitParams {
        float: false,
        shift: 2,
        taps: vec![
            Tap {
                offset: 3,
                weight: 4,
            },
            Tap {
                offset: 4,
                weight: -2,
            },
        ],
    };
    let mut words = Vec::new();
    let m = apply_native(&data, 2, &p, Some(0xFFFF), &mut words, &mut Work::default());
    assert_eq!(
        &bytemuck::cast_slice::<u64, u16>(&words)[..m],
        [20, 4, 6, 7, 1, 10, 1]
    );
    let mut payload = Vec::new();
    p.encode(true, &mut payload);
    assert_eq!(
        payload,
        [0, 2, 1, 2, 0, 0, 0, 3, 0, 4, 0, 0, 0, 4, 0xFF, 0xFE]
    );
    // The fill section as the example writes it (a raw zstd block), then the pco file.
    payload.extend_from_slice(&[0xFF, 0xFF, 0, 0, 0, 10]);
    payload.extend_from_slice(&[0x28, 0xB5, 0x2F, 0xFD, 0x20, 0x01, 0x09, 0, 0, 0x08]);
    let mut file = Vec::new();
    let kind = crate::codec::pcodec::NumKind::I16.unsigned();
    assert!(crate::codec::pcodec::compress_residuals_native(
        kind, &words, m, 8, &mut file
    ));
    assert_eq!(file[..6], [0x70, 0x63, 0x6F, 0x21, 0x03, 0x07]);
    payload.extend_from_slice(&file);
    let h = crate::format::FrameHeader {
        stored_len: payload.len() as u32,
        decoded_len: 16,
        stream: 0,
        block: 0,
        codec: crate::format::Codec::Pco,
        filter: crate::format::Filter::Fit,
        esize: 2,
        payload_crc: crate::format::crc(&payload),
    };
    let mut back = Vec::new();
    crate::codec::decode_payload(&h, &payload, &mut back).unwrap();
    assert_eq!(back, data);
}

#[test]
fn special_floats_come_back_bit_for_bit() {
    let specials = [
        0.0f32,
        -0.0,
        f32::NAN,
        f32::from_bits(0x7FC0_1234),
        f32::from_bits(0xFFFF_FFFF),
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MIN_POSITIVE / 4.0,
        -f32::MIN_POSITIVE / 3.0,
        f32::MAX,
        f32::MIN,
        9.96921e36,
    ];
    let data: Vec<u8> = (0..5000)
        .flat_map(|i| {
            let x = if i % 13 == 0 {
                specials[i / 13 % specials.len()]
            } else {
                280.0 + (i as f32 * 0.01).sin()
            };
            x.to_be_bytes()
        })
        .collect();
    let fill = u64::from(9.96921e36f32.to_bits());
    let offsets = offsets_for(50, 5000);
    for fill in [None, Some(fill)] {
        let p = fit(&data, 4, true, fill, &offsets, &mut Work::default());
        assert!(!p.taps.is_empty());
        roundtrip(&data, 4, &p, fill);
    }
}

#[test]
fn the_fitted_weights_predict_a_noisy_field_better_than_one_neighbour() {
    // A smooth field plus white noise: the fitted predictor averages the noise out over
    // its neighbours, so its residuals are smaller than the difference to the left one.
    let mut rnd = xorshift(7);
    let (rows, w) = (60, 200);
    let data: Vec<u8> = (0..rows * w)
        .flat_map(|i| {
            let (r, c) = ((i / w) as f32, (i % w) as f32);
            let noise = ((rnd() % 2001) as f32 - 1000.0) * 2.5e-4;
            (280.0 + 10.0 * (r * 0.05).sin() + 5.0 * (c * 0.03).cos() + noise).to_be_bytes()
        })
        .collect();
    let mut work = Work::default();
    let p = fit(&data, 4, true, None, &offsets_for(w, rows * w), &mut work);
    assert!(p.taps.len() >= 8, "{p:?}");
    let cost = |p: &FitParams, work: &mut Work| {
        let mut words = Vec::new();
        let m = apply_native(&data, 4, p, None, &mut words, work);
        bytemuck::cast_slice::<u64, u32>(&words)[..m]
            .iter()
            .map(|&z| f64::from(z.max(1)).log2())
            .sum::<f64>()
    };
    let left = FitParams {
        float: true,
        ..FitParams::default()
    };
    let (fitted, one) = (cost(&p, &mut work), cost(&left, &mut work));
    assert!(fitted < one - 0.3 * (rows * w) as f64, "{fitted} {one}");
}

#[test]
fn the_prefix_round_trips_and_bad_fields_are_named() {
    let p = FitParams {
        float: true,
        shift: 12,
        taps: vec![
            Tap {
                offset: 2,
                weight: -300,
            },
            Tap {
                offset: 722,
                weight: 1200,
            },
        ],
    };
    let mut b = Vec::new();
    p.encode(true, &mut b);
    b.extend_from_slice(b"rest");
    assert_eq!(
        b[..16],
        [1, 12, 1, 2, 0, 0, 0, 2, 0xFE, 0xD4, 0, 0, 2, 0xD2, 0x04, 0xB0]
    );
    let (q, fill, rest) = FitParams::decode(&b).unwrap();
    assert_eq!((q, fill, rest), (p, true, &b"rest"[..]));
    let bad = |bytes: &[u8]| FitParams::decode(bytes).unwrap_err().to_string();
    assert!(bad(&[1, 12, 0]).contains("3 bytes"), "{}", bad(&[1, 12, 0]));
    assert!(bad(&[2, 12, 0, 0]).contains("map byte 2"));
    assert!(bad(&[1, 16, 0, 0]).contains("shift 16"));
    assert!(bad(&[1, 12, 2, 0]).contains("flags"));
    assert!(bad(&[1, 12, 0, 33]).contains("33 taps"));
    assert!(bad(&[1, 12, 0, 1, 0, 0, 0, 2]).contains("10-byte"));
    assert!(bad(&[1, 12, 0, 1, 0, 0, 0, 1, 0, 5]).contains("offset 1"));
}

#[test]
fn offsets_reach_two_rows_back_and_stay_inside_the_block() {
    assert_eq!(
        offsets_for(720, 1 << 18),
        vec![2, 718, 719, 720, 721, 722, 1438, 1439, 1440, 1441, 1442]
    );
    assert_eq!(offsets_for(2, 100), vec![2, 3, 4, 5, 6]);
    assert_eq!(offsets_for(720, 2000), vec![2, 718, 719, 720, 721, 722]);
    assert!(offsets_for(720, 3).is_empty());
}

/// Blocks longer than the decoder's window of working values (see `window_len`): the values
/// before the taps' reach are written out and the window moves on several times in a block,
/// for every element size, with and without a fill value, long and short rows, and one
/// `Work` kept across blocks of different lengths (as a decoding thread keeps it).
#[test]
fn blocks_longer_than_the_window_round_trip() {
    let mut rnd = xorshift(0xD1B5_4A32_D192_ED03);
    for round in 0..18 {
        let e = [2, 4, 8][round % 3];
        let row = [1440, 37, 700][(round / 3) % 3];
        let n = 20_000 + (rnd() % 30_000) as usize;
        let fill_word = rnd() >> (64 - 8 * e);
        let mut data = Vec::with_capacity(n * e);
        for i in 0..n {
            // Rows of land (fill) in some rounds, none in others.
            let land = round % 2 == 1 && (i / 3000 + i % row / 200).is_multiple_of(3);
            let (r, c) = ((i / row) as f64, (i % row) as f64);
            let f = 1000.0 * (r * 0.05).sin() + 700.0 * (c * 0.01).cos() + (rnd() % 50) as f64;
            let x = match (land, e) {
                (true, _) => fill_word,
                (false, 2) => f as i16 as u16 as u64,
                (false, 4) => u64::from((f as f32 + 3.0e5).to_bits()),
                (false, _) => (f - 1.0e9).to_bits(),
            };
            data.extend_from_slice(&x.to_be_bytes()[8 - e..]);
        }
        let fill = (round % 2 == 1).then_some(fill_word);
        let p = fit(
            &data,
            e,
            round % 4 != 0,
            fill,
            &offsets_for(row, n),
            &mut Work::default(),
        );
        assert!(
            window_len(&p, n) < n,
            "round {round}: one window holds the block"
        );
        roundtrip(&data, e, &p, fill);
        // A far tap alone, and near taps only.
        for taps in [
            vec![Tap {
                offset: 2 * row as u32 + 2,
                weight: 4096,
            }],
            vec![
                Tap {
                    offset: 2,
                    weight: 3000,
                },
                Tap {
                    offset: 5,
                    weight: 1096,
                },
            ],
        ] {
            let p = FitParams {
                float: false,
                shift: 12,
                taps,
            };
            roundtrip(&data, e, &p, fill);
        }
    }
}

/// The decoder's one pass over a stretch (far sums and serial loop together, values computed
/// without wrapping, see `Step`) against the formula: one near tap two back and a weights' sum
/// of 2^q (q = s − 3 ..= s), far taps from 8 back on (stretches of every length around the
/// group of elements summed at once), on smooth fields, on full-range words whose values leave
/// the range of the element (the stretch redone with wrapping), with fill elements scattered
/// and in runs, in blocks shorter and longer than the window.
#[test]
fn the_decoder_s_one_pass_over_a_stretch_agrees_with_the_formula() {
    let mut rnd = xorshift(0x5851_F42D_4C95_7F2D);
    for round in 0..120 {
        let e = [2, 4][round % 2];
        let shift = [12u8, 15, 4][(round / 2) % 3];
        let q = shift - (round / 6 % 4) as u8;
        // The shortest far offset is the stretch's length: 8 to a few groups.
        let near_far = 8 + (rnd() % 90) as usize;
        let n = [40, 700, 3000, 30_000][round / 24 % 4] + (rnd() % 300) as usize;
        let fill_word = rnd() >> (64 - 8 * e);
        let wide = round % 5 == 1;
        // Fill elements scattered, or in runs of 97.
        let data = test_block(&mut rnd, e, n, near_far, wide, fill_word, |i, r| {
            (round % 3 == 2 && r().is_multiple_of(4))
                || (round % 3 == 1 && (i / 97 + round).is_multiple_of(3))
        });
        let mut taps = vec![Tap {
            offset: 2,
            weight: (rnd() % 4001) as i16 - 2000,
        }];
        for k in 0..(1 + rnd() % 12) {
            taps.push(Tap {
                offset: (near_far as u64 + k * (1 + rnd() % 40)) as u32,
                weight: (rnd() % 4001) as i16 - 2000,
            });
        }
        sum_to_power(&mut taps, q);
        let p = FitParams {
            float: round % 7 != 0,
            shift,
            taps,
        };
        assert_eq!(p.weight_sum(), 1 << q);
        let fill = (round % 3 != 0).then_some(fill_word);
        roundtrip(&data, e, &p, fill);
    }
}

/// The element of `e` bytes whose working value is `m` (through the order map for floats).
fn element(m: i64, e: usize, float: bool) -> u64 {
    let bits = 8 * e as u32;
    let m = if float && m < 0 {
        m ^ ((1i64 << (bits - 1)) - 1)
    } else {
        m
    };
    (m as u64) & (u64::MAX >> (64 - bits))
}

/// Weights at the ends of their range on values at the ends of theirs: the largest sums the
/// format allows, which the encoder and decoder add in floats for elements of at most 4 bytes
/// (32 taps of weight −32768 on values of −2^31 sum to 2^51, the most `exact` reads; the
/// decoder's one pass over a stretch adds the residual times 2^s and the rounding term to
/// at most 31 far taps' products, up to 2^51 − 2^14). All taps far (shortest offset 8),
/// some near, and one near tap two back with 31 far ones and a weights' sum of 2^q (the
/// one-pass path, its stretches shorter and longer than its groups), on blocks of extreme
/// values, with and without a fill value.
#[test]
fn the_largest_weights_on_the_largest_values_agree_with_the_formula() {
    // `exact` reads [−2^51, 2^51], not past it.
    let top = 1i64 << 51;
    assert_eq!(exact(top as f64), top);
    assert_eq!(exact(-top as f64), -top);
    assert_ne!(exact((top + (1 << 14)) as f64), top + (1 << 14));
    let mut rnd = xorshift(0xD1B5_4A32_D192_ED03);
    let far = |w: i16| -> Vec<Tap> { (8..40).map(|offset| Tap { offset, weight: w }).collect() };
    // One near tap two back, 31 far ones: even offsets +32767, odd −32768, the sum 2^q.
    let one_pass = |q: u8, from: u32| -> Vec<Tap> {
        let mut taps: Vec<Tap> = (from..from + 31)
            .map(|offset| Tap {
                offset,
                weight: if offset % 2 == 0 { i16::MAX } else { i16::MIN },
            })
            .collect();
        let rest: i64 = taps.iter().map(|t| i64::from(t.weight)).sum();
        let weight = i16::try_from((1i64 << q) - rest).unwrap();
        taps.insert(0, Tap { offset: 2, weight });
        taps
    };
    for e in [2usize, 4] {
        let bits = 8 * e as u32;
        let (lo, hi) = (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1);
        for shift in [0u8, 1, 2, 14, 15] {
            let mut predictors = vec![
                far(i16::MIN),
                far(i16::MAX),
                (2..34)
                    .map(|offset| Tap {
                        offset,
                        weight: i16::MIN,
                    })
                    .collect(),
            ];
            for k in 0..4 {
                if shift >= k {
                    predictors.push(one_pass(shift - k, 8));
                    predictors.push(one_pass(shift - k, 64));
                }
            }
            for (t, taps) in predictors.into_iter().enumerate() {
                for kind in 0..5 {
                    let n = 300 + (rnd() % 3000) as usize;
                    let float = (kind + t) % 2 == 1;
                    let values: Vec<i64> = (0..n)
                        .map(|i| match kind {
                            // All the lowest (the largest sums of negative weights).
                            0 => lo,
                            // The lowest and the highest in turn (the one-pass predictor's
                            // largest sums), now and then another.
                            1 | 2 => {
                                let x = if i % 2 == 0 { hi } else { lo };
                                let x = if kind == 2 { lo + hi - x } else { x };
                                if rnd().is_multiple_of(13) {
                                    [lo, lo + 1, hi, hi - 1, 0, -1][(rnd() % 6) as usize]
                                } else {
                                    x
                                }
                            }
                            // Any of the extremes.
                            3 => [lo, lo + 1, hi, hi - 1, 0][(rnd() % 5) as usize],
                            // The lowest, now and then one near it.
                            _ => {
                                if rnd().is_multiple_of(5) {
                                    lo + (rnd() % 3) as i64
                                } else {
                                    lo
                                }
                            }
                        })
                        .collect();
                    let mut data = Vec::with_capacity(n * e);
                    for &m in &values {
                        data.extend_from_slice(&element(m, e, float).to_be_bytes()[8 - e..]);
                    }
                    let p = FitParams {
                        float,
                        shift,
                        taps: taps.clone(),
                    };
                    roundtrip(&data, e, &p, None);
                    // A fill value among them: one of the extremes, or one that is not there.
                    for f in [hi, lo + 1, 12345] {
                        roundtrip(&data, e, &p, Some(element(f, e, float)));
                    }
                }
            }
        }
    }
}
