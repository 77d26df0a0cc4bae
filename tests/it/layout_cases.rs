//! Unusual but legal file shapes: the streaming numrecs marker, an incomplete last record,
//! trailing bytes, and a numrecs larger than the file holds. Each must round-trip byte-exactly,
//! with the record dimension materialized to the complete records the file really has.

use crate::util::{sample, temp_dir};
use nc3pack::{pack_file, unpack_file, Archive, PackOptions};
use std::path::PathBuf;

fn sample_bytes(name: &str) -> Vec<u8> {
    std::fs::read(sample(name)).unwrap()
}

/// Packs `bytes` (small blocks, so records span blocks), unpacks, checks byte equality, and
/// returns the archive's materialized record count.
fn roundtrip(bytes: &[u8]) -> u64 {
    let dir = temp_dir();
    let (nc, z, back): (PathBuf, PathBuf, PathBuf) = (
        dir.path().join("in.nc"),
        dir.path().join("a.nc3z"),
        dir.path().join("back.nc"),
    );
    std::fs::write(&nc, bytes).unwrap();
    let opts = PackOptions::default().with_block_size(16);
    pack_file(&nc, &z, &opts).unwrap();
    unpack_file(
        &z,
        &back,
        &nc3pack::UnpackOptions::default().with_threads(2),
    )
    .unwrap();
    assert_eq!(std::fs::read(&back).unwrap(), bytes);
    Archive::open(&z).unwrap().layout().numrecs
}

// classic_records.nc (see its .cdl): 7 records; the record variable with the highest begin is
// `d` (double), so a record's last 8 bytes are d's slab.
const RECORDS: u64 = 7;

#[test]
fn plain_file_materializes_all_records() {
    assert_eq!(roundtrip(&sample_bytes("classic_records.nc")), RECORDS);
}

#[test]
fn streaming_marker_counts_records_from_the_file_length() {
    let mut b = sample_bytes("classic_records.nc");
    b[4..8].copy_from_slice(&[0xff; 4]);
    assert_eq!(roundtrip(&b), RECORDS);
}

#[test]
fn incomplete_last_record_is_kept_as_residual_bytes() {
    let mut b = sample_bytes("classic_records.nc");
    b.truncate(b.len() - 3);
    assert_eq!(roundtrip(&b), RECORDS - 1);
}

#[test]
fn trailing_bytes_are_preserved() {
    let mut b = sample_bytes("classic_records.nc");
    b.extend_from_slice(b"trailing garbage, kept verbatim");
    // 31 extra bytes are less than a record, so no new record appears.
    assert_eq!(roundtrip(&b), RECORDS);
}

#[test]
fn numrecs_beyond_the_file_is_clamped() {
    let mut b = sample_bytes("classic_records.nc");
    b[4..8].copy_from_slice(&100u32.to_be_bytes());
    assert_eq!(roundtrip(&b), RECORDS);
}

#[test]
fn zero_numrecs_with_record_data_present() {
    let mut b = sample_bytes("classic_records.nc");
    b[4..8].copy_from_slice(&0u32.to_be_bytes());
    assert_eq!(roundtrip(&b), 0);
}
