//! Damage: `verify` reports every damaged byte, `reindex` recovers every intact block, and no
//! read of a damaged archive returns wrong data or panics.

use crate::util::{sample, temp_dir};
use nc3pack::error::{ArchiveError, BlockError, FooterError, FrameError};
use nc3pack::Dataset;
use nc3pack::{pack_file, unpack_file, Archive, Error, PackOptions};
use nc3pack::{reindex, verify, Problem};
use std::path::{Path, PathBuf};

/// Packs `name` with small blocks (so there are many frames) into `dir`; returns the path.
fn packed(dir: &Path, name: &str, block_size: u32) -> PathBuf {
    let out = dir.join(format!("{name}.nc3z"));
    // The full form: repair's tests cut and damage its frames and index at their offsets.
    let opts = PackOptions::default()
        .with_compact(false)
        .with_block_size(block_size);
    pack_file(&sample(name), &out, &opts.clone().with_force(true)).unwrap();
    out
}

/// (stream, block, frame end offset) of every block of an intact archive.
/// Where the bytes a scan needs to recover each block end, as (stream, block, end): the block's
/// frame, or for a constant block (index only) the constants frame that lists it.
fn frame_ends(a: &Archive) -> Vec<(usize, u64, u64)> {
    let mut listed = std::collections::HashMap::new();
    for (k, t) in a.constants_frames().iter().enumerate() {
        for r in a.constant_runs(k).unwrap() {
            for b in r.first..r.first + r.count {
                listed.insert((r.stream, b), t.offset + 36 + u64::from(t.stored_len));
            }
        }
    }
    let mut v = vec![];
    for s in 0..a.stream_count() {
        for b in 0..a.block_count(s) {
            let e = a.entry(s, b);
            let end = if e.is_constant() {
                listed[&(a.stream_id(s), b)]
            } else {
                e.offset + 36 + u64::from(e.stored_len)
            };
            v.push((s, b, end));
        }
    }
    v
}

#[test]
fn intact_archive_verifies_and_matches_its_original() {
    let dir = temp_dir();
    let z = packed(dir.path(), "classic_records.nc", 16);
    let r = verify(
        &z,
        &nc3pack::VerifyOptions::default()
            .with_against(sample("classic_records.nc"))
            .with_threads(2),
    )
    .unwrap();
    assert!(r.is_intact() && r.hash_checked, "{r:?}");
    assert_eq!(r.original_matches, Some(true));
    let r = verify(
        &z,
        &nc3pack::VerifyOptions::default()
            .with_against(sample("scalars.nc"))
            .with_threads(2),
    )
    .unwrap();
    assert_eq!(r.original_matches, Some(false));
    assert!(!r.is_intact());
}

#[test]
fn index_and_footer_cut_off_recovers_everything_byte_exactly() {
    let dir = temp_dir();
    for name in ["classic_records.nc", "gridded_sst.nc", "cdf5_types.nc"] {
        let z = packed(dir.path(), name, 4096);
        let a = Archive::open(&z).unwrap();
        let bytes = std::fs::read(&z).unwrap();
        let cut = dir.path().join("cut.nc3z");
        std::fs::write(&cut, &bytes[..a.index_offset() as usize]).unwrap();
        let fixed = dir.path().join("fixed.nc3z");
        let r = reindex(
            &cut,
            &fixed,
            &nc3pack::ReindexOptions::default().with_force(true),
        )
        .unwrap();
        assert!(r.lost.is_empty(), "{name}: {r:?}");
        assert!(
            verify(&fixed, &nc3pack::VerifyOptions::default().with_threads(2))
                .unwrap()
                .is_intact()
        );
        let back = dir.path().join("back.nc");
        unpack_file(
            &fixed,
            &back,
            &nc3pack::UnpackOptions::default()
                .with_force(true)
                .with_threads(2),
        )
        .unwrap();
        assert_eq!(
            std::fs::read(&back).unwrap(),
            std::fs::read(sample(name)).unwrap(),
            "{name}"
        );
    }
}

#[test]
fn a_cut_at_any_byte_recovers_every_block_before_it() {
    let dir = temp_dir();
    let z = packed(dir.path(), "classic_records.nc", 16);
    let a = Archive::open(&z).unwrap();
    let ends = frame_ends(&a);
    let bytes = std::fs::read(&z).unwrap();
    let (cut, fixed) = (dir.path().join("cut.nc3z"), dir.path().join("fixed.nc3z"));
    let front = a.data_start() as usize;
    for len in (front..bytes.len()).step_by(3) {
        std::fs::write(&cut, &bytes[..len]).unwrap();
        let r = reindex(
            &cut,
            &fixed,
            &nc3pack::ReindexOptions::default().with_force(true),
        )
        .unwrap();
        let b = Archive::open(&fixed).unwrap();
        for &(s, blk, end) in &ends {
            let lost = b.entry(s, blk).is_lost();
            assert_eq!(
                lost,
                end > len as u64,
                "cut at {len}: block {blk} of stream {s} (ends at {end})"
            );
            if !lost {
                assert_eq!(b.read_block(s, blk).unwrap(), a.read_block(s, blk).unwrap());
            }
        }
        assert_eq!(
            r.recovered as usize,
            ends.iter().filter(|e| e.2 <= len as u64).count()
        );
    }
}

/// Flips each byte of a small archive in turn: `verify` reports every flip, and reading any
/// variable either fails or returns the right values.
#[test]
fn every_flipped_byte_is_detected_and_no_read_returns_wrong_data() {
    let dir = temp_dir();
    let name = "single_recvar_short.nc";
    let z = packed(dir.path(), name, 8);
    let good = Archive::open(&z).unwrap();
    let nvars = good.header().var_count();
    let truth: Vec<Vec<u8>> = (0..nvars)
        .map(|v| good.read_var_bytes(v).unwrap())
        .collect();
    let bytes = std::fs::read(&z).unwrap();
    let original = std::fs::read(sample(name)).unwrap();
    let bad = dir.path().join("bad.nc3z");
    for i in 0..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x10;
        std::fs::write(&bad, &b).unwrap();
        let r = verify(&bad, &nc3pack::VerifyOptions::default().with_threads(1)).unwrap();
        assert!(
            !r.is_intact(),
            "flip at byte {i} of {} not reported",
            bytes.len()
        );
        if let Ok(a) = Archive::open(&bad) {
            for (v, t) in truth.iter().enumerate() {
                if let Ok(got) = a.read_var_bytes(v) {
                    assert_eq!(&got, t, "flip at {i}: variable {v} read wrong data");
                }
            }
        }
        // Unpacking either fails and leaves nothing, or (damage outside what it reads, e.g. in
        // the index entry's reserved bits) restores the original exactly: it checks the hash.
        let out = dir.path().join("out.nc");
        match unpack_file(
            &bad,
            &out,
            &nc3pack::UnpackOptions::default()
                .with_force(true)
                .with_threads(1),
        ) {
            Ok(_) => assert_eq!(std::fs::read(&out).unwrap(), original, "flip at {i}"),
            Err(_) => assert!(!out.exists()),
        }
        let _ = std::fs::remove_file(&out);
    }
}

#[test]
fn lost_blocks_are_reported_everywhere() {
    let dir = temp_dir();
    let z = packed(dir.path(), "gridded_sst.nc", 64 << 10);
    let bytes = std::fs::read(&z).unwrap();
    let cut = dir.path().join("cut.nc3z");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let fixed = dir.path().join("fixed.nc3z");
    let r = reindex(&cut, &fixed, &nc3pack::ReindexOptions::default()).unwrap();
    assert!(!r.lost.is_empty() && r.recovered > 0);
    let a = Archive::open(&fixed).unwrap();
    let (s, b) = a.lost_blocks()[0];
    let e = a.read_block(s, b).unwrap_err();
    assert!(
        matches!(&e, Error::Block { block, source: BlockError::Lost, .. } if *block == b),
        "{e}"
    );
    let e = e.to_string();
    assert!(
        e.contains("lost") && e.contains(&format!("block {b}")),
        "{e}"
    );
    let v = verify(&fixed, &nc3pack::VerifyOptions::default().with_threads(2)).unwrap();
    assert!(
        v.damage
            .iter()
            .any(|d| d.what == Problem::Block(BlockError::Lost)),
        "{v:?}"
    );
    let e = unpack_file(
        &fixed,
        &dir.path().join("o.nc"),
        &nc3pack::UnpackOptions::default().with_threads(2),
    )
    .unwrap_err();
    assert!(
        matches!(&e, Error::Block { source: BlockError::Unrestorable { others }, .. }
            if *others == r.lost.len() - 1),
        "{e}"
    );
    assert!(e.to_string().contains("lost"), "{e}");
    // Reading a hyperslab that avoids the lost blocks still works and matches the original.
    let orig = nc3pack::NcFile::open(sample("gridded_sst.nc")).unwrap();
    let slab = a.slab("lat", None, None, None).unwrap();
    assert_eq!(
        a.read::<f32>("lat", &slab).unwrap(),
        orig.read::<f32>("lat", &slab).unwrap()
    );
    // reindex refuses an existing output without force.
    assert!(reindex(&cut, &fixed, &nc3pack::ReindexOptions::default()).is_err());
}

/// Regression: a frame's element size field, changed (header checksum recomputed) in a block
/// whose filter does not use it, went unnoticed by `verify` and reads. The writer always writes
/// the stream's element size; anything else is damage, and a scan does not take such a frame.
#[test]
fn a_frame_whose_element_size_is_not_its_streams_is_damage() {
    use nc3pack::format::{Codec, FrameHeader};
    let dir = temp_dir();
    let out = dir.path().join("none.nc3z");
    let opts = PackOptions::default()
        .with_compact(false)
        .with_codec(Codec::None)
        .with_block_size(64)
        .with_filter(crate::filters(false));
    let nc = sample("classic_records.nc");
    pack_file(&nc, &out, &opts.clone().with_force(true)).unwrap();
    let a = Archive::open(&out).unwrap();
    // The first block with a frame of a stream of 4-byte elements.
    let (s, b) = (0..a.stream_count())
        .flat_map(|s| (0..a.block_count(s)).map(move |b| (s, b)))
        .find(|&(s, b)| a.stream_name(s).contains("f3") && !a.entry(s, b).is_constant())
        .unwrap();
    let at = a.entry(s, b).offset as usize;
    let name = a.stream_name(s);
    let mut bytes = std::fs::read(&out).unwrap();
    let mut h = FrameHeader::decode(&bytes[at..at + 36]).unwrap();
    assert_eq!(h.esize, 4, "{name}");
    h.esize = 2;
    bytes[at..at + 36].copy_from_slice(&h.encode());
    let forged = dir.path().join("forged.nc3z");
    std::fs::write(&forged, &bytes).unwrap();
    let r = verify(&forged, &nc3pack::VerifyOptions::default().with_threads(1)).unwrap();
    assert!(
        r.damage.iter().any(|d| d.block == Some((name.clone(), b))
            && d.what
                == Problem::Block(BlockError::ElementSize {
                    frame: 2,
                    stream: 4
                })),
        "{r:?}"
    );
    let e = Archive::open(&forged)
        .unwrap()
        .read_block(s, b)
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Block {
                source: BlockError::ElementSize {
                    frame: 2,
                    stream: 4
                },
                ..
            }
        ),
        "{e}"
    );
    // A scan does not take the frame: reindex marks the block lost.
    let fixed = dir.path().join("fixed.nc3z");
    let rep = reindex(
        &forged,
        &fixed,
        &nc3pack::ReindexOptions::default().with_force(true),
    )
    .unwrap();
    assert_eq!(rep.lost, vec![(name, b)]);
}

/// Regression: the lead's record count, changed (lead checksum recomputed) in an archive of a
/// file without record variables, changes no block, and `verify` said the archive was intact.
#[test]
fn verify_checks_the_leads_record_count_against_the_header() {
    let dir = temp_dir();
    let out = packed(dir.path(), "scalars.nc", 1 << 20);
    assert!(
        verify(&out, &nc3pack::VerifyOptions::default().with_threads(1))
            .unwrap()
            .is_intact()
    );
    let mut bytes = std::fs::read(&out).unwrap();
    assert_eq!(u64::from_le_bytes(bytes[24..32].try_into().unwrap()), 0);
    bytes[24..32].copy_from_slice(&7u64.to_le_bytes());
    let c = nc3pack::format::crc(&bytes[..60]);
    bytes[60..64].copy_from_slice(&c.to_le_bytes());
    let forged = dir.path().join("forged.nc3z");
    std::fs::write(&forged, &bytes).unwrap();
    let r = verify(&forged, &nc3pack::VerifyOptions::default().with_threads(1)).unwrap();
    assert!(
        r.damage.iter().any(|d| d.part == "lead"
            && matches!(
                d.what,
                Problem::RecordCount {
                    stored: 7,
                    expected: 0,
                    ..
                }
            )),
        "{r:?}"
    );
}

/// Regression: a scan kept the first intact frame of each (stream, block) whatever its length,
/// so an intact frame that does not fit the layout, found before the block's good frame, made
/// reindex lose the block (design/FORMAT.md, "Recovery": a frame is accepted only if it fits).
#[test]
fn a_frame_that_does_not_fit_does_not_hide_a_good_one_found_after_it() {
    use nc3pack::format::{crc, Codec, Filter, FrameHeader};
    let dir = temp_dir();
    let out = packed(dir.path(), "classic_records.nc", 64);
    let a = Archive::open(&out).unwrap();
    let s = (0..a.stream_count())
        .find(|&s| a.stream_name(s).contains("f3"))
        .unwrap();
    let id = a.stream_id(s);
    let start = a.data_start() as usize;
    let end = a.index_offset() as usize;
    drop(a);
    let bytes = std::fs::read(&out).unwrap();
    // An intact frame for block 0 of f3 whose decoded length (3) is not the block's (64),
    // inserted before every block frame; the index and footer are cut off.
    let payload = [1u8, 2, 3];
    let h = FrameHeader {
        stored_len: 3,
        decoded_len: 3,
        stream: id,
        block: 0,
        codec: Codec::None,
        filter: Filter::None,
        esize: 4,
        payload_crc: crc(&payload),
    };
    let mut forged = bytes[..start].to_vec();
    forged.extend_from_slice(&h.encode());
    forged.extend_from_slice(&payload);
    forged.extend_from_slice(&bytes[start..end]);
    let input = dir.path().join("forged.nc3z");
    std::fs::write(&input, &forged).unwrap();
    let fixed = dir.path().join("fixed.nc3z");
    let rep = reindex(
        &input,
        &fixed,
        &nc3pack::ReindexOptions::default().with_force(true),
    )
    .unwrap();
    assert!(rep.lost.is_empty(), "{rep:?}");
    let back = dir.path().join("back.nc");
    unpack_file(
        &fixed,
        &back,
        &nc3pack::UnpackOptions::default()
            .with_force(true)
            .with_threads(1),
    )
    .unwrap();
    assert!(std::fs::read(&back).unwrap() == std::fs::read(sample("classic_records.nc")).unwrap());
}

/// Errors carry the offending values as variants: a cut archive's footer and a flipped payload
/// byte are told apart by matching, with the offsets where they apply.
#[test]
fn damage_is_reported_as_typed_variants() {
    let dir = temp_dir();
    let z = packed(dir.path(), "gridded_sst.nc", 64 << 10);
    let bytes = std::fs::read(&z).unwrap();
    // Cut the last byte: the footer magic is gone.
    let cut = dir.path().join("cut.nc3z");
    std::fs::write(&cut, &bytes[..bytes.len() - 1]).unwrap();
    match Archive::open(&cut) {
        Err(Error::Archive {
            part: "footer",
            offset,
            source: ArchiveError::Footer(FooterError::NoMagic),
            ..
        }) => assert_eq!(offset, bytes.len() as u64 - 1 - 32),
        other => panic!("{:?}", other.err()),
    }
    // Flip a payload byte of a block's frame: its payload checksum no longer matches.
    let a = Archive::open(&z).unwrap();
    let (s, b) = (0..a.stream_count())
        .flat_map(|s| (0..a.block_count(s)).map(move |b| (s, b)))
        .find(|&(s, b)| !a.entry(s, b).is_constant() && a.entry(s, b).stored_len > 0)
        .unwrap();
    let at = a.entry(s, b).offset;
    let mut flipped = bytes.clone();
    flipped[at as usize + 36] ^= 0x10;
    let f = dir.path().join("flipped.nc3z");
    std::fs::write(&f, &flipped).unwrap();
    let e = Archive::open(&f).unwrap().read_block(s, b).unwrap_err();
    match e {
        Error::Block {
            block,
            offset,
            source: BlockError::Frame(FrameError::PayloadChecksum),
            ..
        } => assert_eq!((block, offset), (b, at)),
        other => panic!("{other}"),
    }
}
