use super::*;

/// The old full-form archives of samples/archives_1_0.
fn old_archives() -> Vec<(String, Vec<u8>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/archives_1_0");
    let mut v: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "nc3z"))
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect();
    v.sort();
    assert!(v.len() >= 8, "{v:?}");
    v
}

#[test]
fn compact_then_expand_gives_the_full_archive_back_byte_for_byte() {
    for (name, full) in old_archives() {
        let small = compact(&full).unwrap_or_else(|| panic!("{name}: not compacted"));
        assert!(is_compact(&small), "{name}");
        assert!(
            small.len() + 100 < full.len(),
            "{name}: {} -> {}",
            full.len(),
            small.len()
        );
        assert_eq!(expand(&small).unwrap(), full, "{name}");
    }
}

#[test]
fn a_compact_archive_is_not_compacted_again_and_a_damaged_full_one_is_not_compacted() {
    let (_, full) = old_archives().remove(0);
    let small = compact(&full).unwrap();
    assert_eq!(compact(&small), None);
    let mut bad = full.clone();
    let n = bad.len();
    bad[n - 40] ^= 1; // in the index: its checksum fails
    assert_eq!(compact(&bad), None);
}

#[test]
fn a_damaged_compact_frame_expands_to_a_frame_whose_payload_checksum_fails() {
    for (name, full) in old_archives() {
        let small = compact(&full).unwrap();
        let (_, lead_len) = decode_lead(&small).unwrap();
        // The last byte of the first compact frame (the header frame's checksum).
        let mut c = Cur {
            b: &small,
            at: lead_len,
        };
        compact_frame(&mut c).unwrap();
        let mut bad = small.clone();
        bad[c.at] ^= 0x10;
        let out = expand(&bad).unwrap();
        assert_eq!(out.len(), full.len(), "{name}");
        let diff: Vec<usize> = (0..out.len()).filter(|&i| out[i] != full[i]).collect();
        // Only the header frame's payload_crc (bytes 28..32 of the frame at 64) and its header_crc.
        assert!(
            diff.iter().all(|&i| (64 + 28..64 + 36).contains(&i)),
            "{name}: {diff:?}"
        );
        let h = FrameHeader::decode(&out[LEAD_LEN..]).unwrap();
        assert_ne!(
            h.payload_crc,
            crc(&out[100..100 + h.stored_len as usize]),
            "{name}"
        );
    }
}

#[test]
fn a_cut_compact_archive_expands_to_a_cut_full_archive_without_footer() {
    for (name, full) in old_archives() {
        let small = compact(&full).unwrap();
        let cut = &small[..small.len() - 5];
        let out = expand(cut).unwrap();
        assert!(full.starts_with(&out), "{name}");
        assert!(out.len() < full.len() - FOOTER_LEN, "{name}");
        // A cut in the lead is an error naming the lead.
        assert!(
            matches!(expand(&small[..30]), Err(LeadError::TooShort { .. })),
            "{name}"
        );
    }
}

#[test]
fn a_forged_compact_lead_is_refused_before_anything_is_read() {
    let (_, full) = old_archives().remove(0);
    let mut small = compact(&full).unwrap();
    small[14] ^= 1;
    assert_eq!(expand(&small), Err(LeadError::Checksum));
    small[14] ^= 1;
    small[12] |= 4; // an unknown flag
    assert!(matches!(
        expand(&small),
        Err(LeadError::Flags { flags: 6, minor: 2 })
    ));
    let big = vec![0u8; COMPACT_MAX as usize + 1];
    assert_eq!(
        expand(&big),
        Err(LeadError::CompactTooLong {
            len: COMPACT_MAX + 1,
            max: COMPACT_MAX,
        })
    );
}

#[test]
fn varints_round_trip_and_overlong_ones_are_refused() {
    for v in [
        0u64,
        1,
        127,
        128,
        300,
        16383,
        16384,
        u64::from(u32::MAX),
        u64::MAX,
    ] {
        let mut b = Vec::new();
        put_varint(&mut b, v);
        let mut c = Cur { b: &b, at: 0 };
        assert_eq!(c.varint(), Some(v));
        assert_eq!(c.at, b.len());
    }
    let mut c = Cur {
        b: &[0xff; 11],
        at: 0,
    };
    assert_eq!(c.varint(), None);
    let mut c = Cur {
        b: &[0x80, 0x80],
        at: 0,
    };
    assert_eq!(c.varint(), None);
}

/// The worked example of design/FORMAT.md ("The compact form"): the 1.0 archive
/// samples/archives_1_0/truncated_record.nc3z (299 bytes) in the compact form (175 bytes).
#[test]
fn the_worked_example_of_the_format_spec_has_these_bytes() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let full = std::fs::read(dir.join("samples/archives_1_0/truncated_record.nc3z")).unwrap();
    let small = compact(&full).unwrap();
    let hex = |b: &[u8]| {
        b.iter()
            .map(|x| format!("{x:02x}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(small.len(), 175, "{}", hex(&small));
    // The lead: magic, version 1.2, flags 2 (compact), file_len 170, numrecs 1, header_len 156,
    // block_size 1048576, the hash, the CRC.
    assert_eq!(
        hex(&small[..41]),
        "89 4e 43 33 5a 0d 0a 1a 01 00 02 00 02 aa 01 01 9c 01 80 80 40 \
         7f e9 80 72 93 00 16 ab c4 18 3d 3d 6d 9d a8 ad 37 69 2f a2"
            .replace("  ", "")
    );
    assert_eq!(crc(&small[..37]).to_le_bytes(), small[37..41]);
    // The header frame: stored_len 85, decoded_len 156, stream 0xFFFFFFFD + 8 = 5, block 0,
    // codec 1, filter 0, esize 1, then its 81 payload bytes (the zstd frame without its magic).
    assert_eq!(hex(&small[41..49]), "55 9c 01 05 00 01 00 01");
    assert_eq!(small[49..130], full[100 + 4..100 + 85]);
    assert_eq!(crc(&small[41..130]).to_le_bytes(), small[130..134]);
    // The late shared stream's frame: 14 bytes stored raw, stream 0xFFFFFFFB + 8 = 3.
    assert_eq!(hex(&small[134..141]), "0e 0e 03 00 00 00 01");
    assert_eq!(small[141..155], full[185 + 36..185 + 36 + 14]);
    assert_eq!(crc(&small[134..155]).to_le_bytes(), small[155..159]);
    // The index: 1 block entry, 0 constants frames; the entry: frame number 1. The footer.
    assert_eq!(
        hex(&small[159..175]),
        format!(
            "01 00 00 01 04 00 00 00 {} 4e 33 5a ef",
            hex(&crc(&small[159..167]).to_le_bytes())
        )
    );
    assert_eq!(expand(&small).unwrap(), full);
}

#[test]
fn the_worked_example_of_the_header_dictionary_has_these_bytes() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let z = dir.path().join("t.nc3z");
    let opts = crate::PackOptions::default().with_threads(1);
    crate::pack_file(&root.join("samples/truncated_record.nc"), &z, &opts).unwrap();
    let small = std::fs::read(&z).unwrap();
    let hex = |b: &[u8]| {
        b.iter()
            .map(|x| format!("{x:02x}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(small.len(), 162, "{}", hex(&small));
    // The lead: version 1.3, flags 6 (compact, header dictionary), then as in format 1.2.
    assert_eq!(
        hex(&small[..41]),
        "89 4e 43 33 5a 0d 0a 1a 01 00 03 00 06 aa 01 01 9c 01 80 80 40 \
         7f e9 80 72 93 00 16 ab c4 18 3d 3d 6d 9d a8 ad e3 d5 c2 44"
            .replace("  ", "")
    );
    // The header frame: stored_len 72, decoded_len 156, code 5, block 0, codec 7, filter 0,
    // esize 1, then the zstd frame without its magic: no dictionary id (a raw-content
    // dictionary), the content size 156, one compressed block of 63 bytes.
    assert_eq!(
        hex(&small[41..58]),
        "48 9c 01 05 00 07 00 01 20 9c fd 01 00 c8 43 44 46"
    );
    assert_eq!(hex(&small[117..121]), "ba b2 ca 6c");
    assert_eq!(crc(&small[41..117]).to_le_bytes(), small[117..121]);
    // The late shared stream's frame, the index and the footer: as in format 1.2.
    assert_eq!(hex(&small[121..128]), "0e 0e 03 00 00 00 01");
    assert_eq!(
        hex(&small[142..162]),
        "2a 36 32 01 01 00 00 01 04 00 00 00 f2 91 27 86 4e 33 5a ef"
    );
    // Its full form: the header frame with codec 7, which decodes to the header.
    let full = expand(&small).unwrap();
    let h = FrameHeader::decode(&full[LEAD_LEN..]).unwrap();
    assert_eq!((h.codec, h.stored_len), (Codec::ZstdDict, 72));
    let payload = &full[LEAD_LEN + FRAME_HEADER_LEN..][..72];
    assert_eq!(payload[..4], ZSTD_MAGIC);
    let mut header = Vec::new();
    crate::codec::decode_payload(&h, payload, &mut header).unwrap();
    let nc = std::fs::read(root.join("samples/truncated_record.nc")).unwrap();
    assert_eq!(header, nc[..156]);
    assert_eq!(compact(&full).as_deref(), Some(&small[..]));
}
