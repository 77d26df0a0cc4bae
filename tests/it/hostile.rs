//! The registry of damaged and hostile archives in samples/bad/archives/: each is made from
//! samples/classic_records.nc by one targeted change (with checksums recomputed where the point is
//! to get past them), and each must fail with the exact error kind, part and cause below — at open
//! or at the first read of the damaged block — while `verify` reports it and `unpack` refuses.
//! `NC3PACK_WRITE_BAD=1 cargo test hostile` rewrites the committed files from the generator.
//! Files found by fuzzing (samples/bad/fuzz/) are checked here too.

use crate::util::{sample, temp_dir};
use nc3pack::format::{crc, FOOTER_LEN, LEAD_LEN};
use nc3pack::{pack_file, Archive, Dataset, Error, PackOptions};
use std::path::Path;

/// Where the failure must show, and what it must say.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// `Archive::open` fails with `Error::Archive` for this part, the message containing this.
    Open(&'static str, &'static str),
    /// Opening works; reading block 0 of stream `s` fails with `Error::Block` containing this.
    Read(usize, &'static str),
    /// Opening and reading work (the damage is in what only a scan or `verify` reads); `verify`
    /// reports damage whose text contains this.
    Verify(&'static str),
}

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
fn fix_lead(b: &mut [u8]) {
    let c = crc(&b[..60]);
    put32(b, 60, c);
}
fn footer_at(b: &[u8]) -> usize {
    b.len() - FOOTER_LEN
}
fn index_range(b: &[u8]) -> (usize, usize) {
    let f = footer_at(b);
    let off = u64::from_le_bytes(b[f..f + 8].try_into().unwrap()) as usize;
    let len = u64::from_le_bytes(b[f + 8..f + 16].try_into().unwrap()) as usize;
    (off, len)
}
/// Recomputes the index CRC in the footer and the footer's own CRC.
fn fix_tail(b: &mut [u8]) {
    let (off, len) = index_range(b);
    let f = footer_at(b);
    let c = crc(&b[off..off + len]);
    put32(b, f + 16, c);
    let c = crc(&b[f..f + 24]);
    put32(b, f + 24, c);
}
/// Byte offset of index entry `i`.
fn entry_at(b: &[u8], i: usize) -> usize {
    index_range(b).0 + 16 + 16 * i
}
/// Index of the first block entry with the constant flag (index only).
fn first_constant(b: &[u8]) -> usize {
    let a = Archive::from_reader(b.to_vec(), Path::new("x")).unwrap();
    let n: u64 = (0..a.stream_count()).map(|s| a.block_count(s)).sum();
    (0..n as usize)
        .find(|&i| b[entry_at(b, i) + 14] == 2)
        .expect("the base archive has a constant block")
}
/// Byte offset of the index entry of constants frame 0.
fn constants_entry_at(b: &[u8]) -> usize {
    let a = Archive::from_reader(b.to_vec(), Path::new("x")).unwrap();
    let n: u64 = (0..a.stream_count()).map(|s| a.block_count(s)).sum();
    entry_at(b, n as usize)
}
fn frame_offset(b: &[u8], i: usize) -> usize {
    let e = entry_at(b, i);
    u64::from_le_bytes(b[e..e + 8].try_into().unwrap()) as usize
}

fn base_archive() -> Vec<u8> {
    let dir = temp_dir();
    let z = dir.path().join("base.nc3z");
    let opts = PackOptions::default()
        .with_compact(false)
        .with_block_size(16)
        .with_threads(1);
    pack_file(&sample("classic_records.nc"), &z, &opts).unwrap();
    std::fs::read(z).unwrap()
}

/// samples/obs_points.nc packed with the defaults, and the first stream whose block 0 is a pco
/// frame.
fn pco_archive() -> (Vec<u8>, usize) {
    let dir = temp_dir();
    let z = dir.path().join("pco.nc3z");
    let opts = PackOptions::default().with_compact(false).with_threads(1);
    pack_file(&sample("obs_points.nc"), &z, &opts).unwrap();
    let b = std::fs::read(z).unwrap();
    let a = Archive::from_reader(b.clone(), Path::new("x")).unwrap();
    let s = (0..a.stream_count())
        .find(|&s| a.block_count(s) > 0 && b[entry_at(&b, first_entry(&b, s)) + 12] == 4)
        .expect("obs_points.nc packs a block with pco");
    (b, s)
}
/// A small file of text (`char text(line, 64)`, 128 lines of a few words, written by the
/// `netcdf3` crate) packed with codec lzma, and the stream of `text` (its block 0 is an lzma
/// frame).
fn lzma_archive() -> (Vec<u8>, usize) {
    let dir = temp_dir();
    let nc = dir.path().join("text.nc");
    let words = [
        "wind", "calm", "gusts", "rain", "fog", "clear", "sky", "light",
    ];
    let text: Vec<u8> = (0..128 * 64)
        .map(|i| {
            let w = words[(i / 64 * 7 + i / 8) % 8].as_bytes();
            *w.get(i % 8).unwrap_or(&b' ')
        })
        .collect();
    let mut ds = netcdf3::DataSet::new();
    ds.add_fixed_dim("line", 128).unwrap();
    ds.add_fixed_dim("len", 64).unwrap();
    ds.add_var_u8("text", &["line", "len"]).unwrap();
    let mut w = netcdf3::FileWriter::open(&nc).unwrap();
    w.set_def(&ds, netcdf3::Version::Classic, 0).unwrap();
    w.write_var_u8("text", &text).unwrap();
    w.close().unwrap();
    let z = dir.path().join("text.nc3z");
    let opts = PackOptions::default()
        .with_compact(false)
        .with_codec(nc3pack::format::Codec::Lzma)
        .with_threads(1);
    pack_file(&nc, &z, &opts).unwrap();
    let b = std::fs::read(z).unwrap();
    assert_eq!(b[entry_at(&b, 0) + 12], 5, "text packs with lzma");
    (b, 0)
}
/// Makes a hostile payload from the frame's payload and the block it decodes to.
type ForgePayload = dyn Fn(&[u8], &[u8]) -> Vec<u8>;
/// `data` as one .xz stream with integrity check none (xz -6).
fn xz(data: &[u8]) -> Vec<u8> {
    use liblzma::stream::{Action, Check, Status, Stream};
    let mut s = Stream::new_easy_encoder(6, Check::None).unwrap();
    let mut out = Vec::with_capacity(data.len() + 1024);
    assert_eq!(
        s.process_vec(data, &mut out, Action::Finish).unwrap(),
        Status::StreamEnd
    );
    out
}
/// Replaces the payload of the frame at `f` by `payload`: the frame's lengths and CRCs, the
/// index entry of the frame, the offsets of the frames after it and the footer follow.
fn replace_payload(b: &mut Vec<u8>, f: usize, payload: &[u8]) {
    let stored = u32::from_le_bytes(b[f + 4..f + 8].try_into().unwrap()) as usize;
    let delta = payload.len() as i64 - stored as i64;
    let (index, _) = index_range(b);
    let c = u32::from_le_bytes(b[index + 4..index + 8].try_into().unwrap()) as usize;
    let n = u64::from_le_bytes(b[index + 8..index + 16].try_into().unwrap()) as usize;
    b.splice(f + 36..f + 36 + stored, payload.iter().copied());
    put32(b, f + 4, payload.len() as u32);
    fix_payload_crc(b, f);
    let index = (index as i64 + delta) as usize;
    for i in 0..n + c {
        let e = index + 16 + 16 * i;
        let off = u64::from_le_bytes(b[e..e + 8].try_into().unwrap()) as usize;
        let flags = u16::from_le_bytes([b[e + 14], b[e + 15]]);
        if flags == 0 && off == f {
            put32(b, e + 8, payload.len() as u32);
        } else if flags == 0 && off > f {
            put64(b, e, (off as i64 + delta) as u64);
        }
    }
    let foot = footer_at(b);
    put64(b, foot, index as u64);
    fix_tail(b);
}
/// The file `write` makes, packed with one thread and `opts`, and the first stream whose block 0
/// has filter `filter` (`what`: the file, for the message when none has).
fn archive_with_filter(
    write: fn(&Path),
    opts: PackOptions,
    filter: u8,
    what: &str,
) -> (Vec<u8>, usize) {
    let dir = temp_dir();
    let nc = dir.path().join("in.nc");
    write(&nc);
    let z = dir.path().join("in.nc3z");
    pack_file(&nc, &z, &opts.with_threads(1)).unwrap();
    let b = std::fs::read(z).unwrap();
    let a = Archive::from_reader(b.clone(), Path::new("x")).unwrap();
    let s = (0..a.stream_count())
        .find(|&s| a.block_count(s) > 0 && b[entry_at(&b, first_entry(&b, s)) + 13] == filter)
        .unwrap_or_else(|| panic!("{what} packs no block with filter {filter}"));
    (b, s)
}
/// The grid of tests/it/lorenzo.rs packed in 8 KiB blocks without pco, and the first stream
/// whose block 0 is a lorenzo frame (filter 5).
fn lorenzo_archive() -> (Vec<u8>, usize) {
    let opts = PackOptions::default()
        .with_compact(false)
        .with_block_size(8192)
        .with_pco(false);
    archive_with_filter(crate::lorenzo::grid_file, opts, 5, "the lorenzo grid")
}
/// The grid of tests/it/plane.rs packed in 16 KiB blocks, and the first stream whose block 0 is
/// a plane frame (filter 6, codec pco).
fn plane_archive() -> (Vec<u8>, usize) {
    let opts = PackOptions::default()
        .with_compact(false)
        .with_block_size(16 << 10);
    archive_with_filter(crate::plane::grid_file, opts, 6, "the plane grid")
}
/// The ocean file of tests/it/mask.rs packed in 16 KiB blocks, and the first stream whose
/// block 0 is a mask frame (filter 8, codec pco).
fn mask_archive() -> (Vec<u8>, usize) {
    let opts = PackOptions::default()
        .with_compact(false)
        .with_block_size(16 << 10);
    archive_with_filter(crate::mask::ocean_file, opts, 8, "the ocean file")
}
/// The noisy fields of tests/it/fit.rs packed in 16 KiB blocks, and the first stream whose
/// block 0 is a fit frame (filter 9, codec pco).
fn fit_archive() -> (Vec<u8>, usize) {
    let opts = PackOptions::default()
        .with_compact(false)
        .with_block_size(16 << 10);
    archive_with_filter(crate::fit::field_file, opts, 9, "the noisy fields")
}
/// A small mesh (see `refs::mesh_file`) packed with the `max` preset, and the stream of its
/// vertex coordinates, whose one block has the `refs` filter with lzma.
fn refs_archive() -> (Vec<u8>, usize) {
    let dir = temp_dir();
    let nc = dir.path().join("mesh.nc");
    crate::refs::mesh_file(&nc, 40, 30);
    let z = dir.path().join("mesh.nc3z");
    pack_file(
        &nc,
        &z,
        &PackOptions::max().with_compact(false).with_threads(1),
    )
    .unwrap();
    let b = std::fs::read(z).unwrap();
    let a = Archive::from_reader(b.clone(), Path::new("x")).unwrap();
    let s = a.var_id("clon_vertices").unwrap();
    assert_eq!(b[entry_at(&b, first_entry(&b, s)) + 13], 7, "no refs block");
    (b, s)
}
/// A small noisy field of tests/it/context.rs packed with the `max` preset, and the stream of its
/// first variable whose block 0 has codec context.
fn context_archive() -> (Vec<u8>, usize) {
    let dir = temp_dir();
    let nc = dir.path().join("field.nc");
    crate::context::field_file(&nc, 90, 180);
    let z = dir.path().join("field.nc3z");
    pack_file(
        &nc,
        &z,
        &PackOptions::max().with_compact(false).with_threads(1),
    )
    .unwrap();
    let b = std::fs::read(z).unwrap();
    let a = Archive::from_reader(b.clone(), Path::new("x")).unwrap();
    let s = (0..a.stream_count())
        .find(|&s| a.block_count(s) > 0 && b[entry_at(&b, first_entry(&b, s)) + 12] == 6)
        .expect("the field packs a block with context");
    (b, s)
}
/// `base` with the payload of block 0 of stream `s` (a frame of codec `codec`) replaced by what
/// `f` makes of it and of the decoded block, lengths, offsets and checksums recomputed.
fn forge_payload(base: &[u8], s: usize, codec: u8, f: &ForgePayload) -> Vec<u8> {
    let mut b = base.to_vec();
    let e = entry_at(&b, first_entry(&b, s));
    let frame = u64::from_le_bytes(b[e..e + 8].try_into().unwrap()) as usize;
    assert_eq!(b[frame + 24], codec);
    let stored = u32::from_le_bytes(b[frame + 4..frame + 8].try_into().unwrap()) as usize;
    let a = Archive::from_reader(b.clone(), Path::new("x")).unwrap();
    let block = a.read_block(s, 0).unwrap();
    let payload = f(&b[frame + 36..frame + 36 + stored], &block);
    replace_payload(&mut b, frame, &payload);
    b
}
/// Index of the entry of block 0 of stream `s`.
fn first_entry(b: &[u8], s: usize) -> usize {
    let a = Archive::from_reader(b.to_vec(), Path::new("x")).unwrap();
    (0..s).map(|t| a.block_count(t) as usize).sum()
}
/// Recomputes a frame's payload CRC, then its header CRC.
fn fix_payload_crc(b: &mut [u8], f: usize) {
    let stored = u32::from_le_bytes(b[f + 4..f + 8].try_into().unwrap()) as usize;
    let c = crc(&b[f + 36..f + 36 + stored]);
    put32(b, f + 28, c);
    let c = crc(&b[f..f + 32]);
    put32(b, f + 32, c);
}

/// The base archive with per-variable block sizes (format 1.1): `f3` (float, 84 bytes) in
/// blocks of 8 bytes, `d` (double, 56 bytes) in blocks of 24.
fn base_archive_1_1() -> Vec<u8> {
    let dir = temp_dir();
    let z = dir.path().join("base11.nc3z");
    let opts = PackOptions::default()
        .with_compact(false)
        .with_block_size(16)
        .with_threads(1)
        .with_var("f3:block-size=8".parse().unwrap())
        .with_var("d:block-size=24".parse().unwrap());
    pack_file(&sample("classic_records.nc"), &z, &opts).unwrap();
    std::fs::read(z).unwrap()
}

/// Offset of the block sizes frame (after the lead and the header frame) and of its payload.
fn block_sizes_at(b: &[u8]) -> (usize, usize) {
    let stored = u32::from_le_bytes(b[LEAD_LEN + 4..LEAD_LEN + 8].try_into().unwrap()) as usize;
    let at = LEAD_LEN + 36 + stored;
    assert_eq!(&b[at..at + 4], b"\xb7N3B");
    (at, at + 36)
}

/// Replaces the block sizes frame by one holding `edit` of its table, stored raw (codec 0),
/// with valid CRCs, and moves what follows: the index entries' frame offsets and the footer's
/// index offset follow the frame's new length.
fn rewrite_block_sizes(b: &mut Vec<u8>, edit: &dyn Fn(&mut Vec<u8>)) {
    let (at, p) = block_sizes_at(b);
    let stored = u32::from_le_bytes(b[at + 4..at + 8].try_into().unwrap()) as usize;
    let decoded = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
    let mut table = match b[at + 24] {
        0 => b[p..p + stored].to_vec(),
        1 => zstd::bulk::decompress(&b[p..p + stored], decoded).unwrap(),
        c => panic!("block sizes frame codec {c}"),
    };
    edit(&mut table);
    let mut frame = b[at..at + 36].to_vec();
    put32(&mut frame, 4, table.len() as u32);
    put32(&mut frame, 8, table.len() as u32);
    frame[24] = 0;
    put32(&mut frame, 28, crc(&table));
    let c = crc(&frame[..32]);
    put32(&mut frame, 32, c);
    frame.extend_from_slice(&table);
    let delta = frame.len() as i64 - (36 + stored) as i64;
    b.splice(at..p + stored, frame);
    let shift = |v: u64| (v as i64 + delta) as u64;
    let (off, len) = index_range(b);
    let (off, len) = (shift(off as u64) as usize, len);
    for e in (off + 16..off + len).step_by(16) {
        if b[e + 14] == 0 {
            let o = u64::from_le_bytes(b[e..e + 8].try_into().unwrap());
            put64(b, e, shift(o));
        }
    }
    let f = footer_at(b);
    put64(b, f, off as u64);
    fix_tail(b);
}

/// The registry: name, bytes, expected failure.
fn registry() -> Vec<(&'static str, Vec<u8>, Expect)> {
    let base = base_archive();
    let mut out = vec![];
    let mut variant = |name: &'static str, expect: Expect, f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = base.clone();
        f(&mut b);
        out.push((name, b, expect));
    };
    variant(
        "lead_bit_flip.nc3z",
        Expect::Open("lead", "checksum mismatch"),
        &|b| b[20] ^= 0x04,
    );
    variant(
        "lead_bad_magic.nc3z",
        Expect::Open("lead", "bad magic"),
        &|b| b[1] = b'X',
    );
    variant(
        "lead_major_version_2.nc3z",
        Expect::Open("lead", "format version 2.0 is not supported"),
        &|b| {
            b[8] = 2;
            fix_lead(b);
        },
    );
    variant(
        "lead_block_size_0.nc3z",
        Expect::Open("lead", "block size 0 is outside"),
        &|b| {
            put32(b, 40, 0);
            fix_lead(b);
        },
    );
    variant(
        "lead_header_len_huge.nc3z",
        Expect::Open("lead", "header length 1099511627776 exceeds"),
        &|b| {
            put64(b, 32, 1 << 40);
            put64(b, 16, 1 << 41);
            fix_lead(b);
        },
    );
    variant(
        "header_frame_bit_flip.nc3z",
        Expect::Open("netCDF header", "frame header checksum mismatch"),
        &|b| b[LEAD_LEN + 9] ^= 0x01,
    );
    variant(
        "header_payload_bit_flip.nc3z",
        Expect::Open("netCDF header", "payload checksum mismatch"),
        &|b| b[LEAD_LEN + 36 + 30] ^= 0x01,
    );
    variant(
        "header_frame_wrong_length.nc3z",
        Expect::Open("netCDF header", "not the header of"),
        &|b| {
            put32(b, LEAD_LEN + 8, 5000);
            let c = crc(&b[LEAD_LEN..LEAD_LEN + 32]);
            put32(b, LEAD_LEN + 32, c);
        },
    );
    variant(
        "lead_declares_2e30_blocks.nc3z",
        Expect::Open("footer", "does not fit the archive"),
        &|b| {
            // Found by fuzzing: a lead declaring a huge original made verify and reindex allocate
            // for every declared block.
            put64(b, 16, 1 << 42);
            put64(b, 24, 1 << 30);
            fix_lead(b);
        },
    );
    variant(
        "frame_header_bit_flip.nc3z",
        Expect::Read(0, "frame header checksum mismatch"),
        &|b| {
            let f = frame_offset(b, 0);
            b[f + 9] ^= 0x01;
        },
    );
    variant(
        "frame_sync_magic_gone.nc3z",
        Expect::Read(0, "no frame sync magic"),
        &|b| {
            let f = frame_offset(b, 0);
            b[f] = 0;
        },
    );
    variant(
        "payload_bit_flip.nc3z",
        Expect::Read(0, "payload checksum mismatch"),
        &|b| {
            let f = frame_offset(b, 0);
            b[f + 36] ^= 0x01;
        },
    );
    variant(
        "index_bit_flip.nc3z",
        Expect::Open("index", "checksum mismatch"),
        &|b| {
            let e = entry_at(b, 0);
            b[e + 2] ^= 0x01;
        },
    );
    variant(
        "footer_bit_flip.nc3z",
        Expect::Open("footer", "footer checksum mismatch"),
        &|b| {
            let f = footer_at(b);
            b[f + 3] ^= 0x01;
        },
    );
    variant(
        "truncated_by_10.nc3z",
        Expect::Open("footer", "no footer magic"),
        &|b| b.truncate(b.len() - 10),
    );
    variant(
        "truncated_to_lead.nc3z",
        Expect::Open("lead", "too short"),
        &|b| b.truncate(LEAD_LEN),
    );
    variant(
        "forged_huge_stored_len.nc3z",
        Expect::Open("index", "points outside the data section"),
        &|b| {
            let e = entry_at(b, 0);
            put32(b, e + 8, 0xFFFF_FFF0);
            fix_tail(b);
        },
    );
    variant(
        "index_offset_outside_file.nc3z",
        Expect::Open("index", "points outside the data section"),
        &|b| {
            let e = entry_at(b, 0);
            put64(b, e, 1 << 60);
            fix_tail(b);
        },
    );
    variant(
        "index_offset_into_header.nc3z",
        Expect::Open("index", "points outside the data section"),
        &|b| {
            let e = entry_at(b, 0);
            put64(b, e, 8);
            fix_tail(b);
        },
    );
    variant(
        "overlapping_blocks.nc3z",
        Expect::Read(1, "index expects id 1 block 0"),
        &|b| {
            // Stream 1's first block points at stream 0's first frame.
            let (first0, first1) = (entry_at(b, 0), {
                // Index slot of stream 1 block 0: after stream 0's blocks.
                let a = Archive::from_reader(b.clone(), Path::new("x")).unwrap();
                entry_at(b, a.block_count(0) as usize)
            });
            let src: [u8; 16] = b[first0..first0 + 16].try_into().unwrap();
            b[first1..first1 + 16].copy_from_slice(&src);
            fix_tail(b);
        },
    );
    variant(
        "zero_length_frame.nc3z",
        Expect::Read(0, "index expects"),
        &|b| {
            // The frame header claims an empty payload, with a valid header CRC.
            let f = frame_offset(b, 0);
            put32(b, f + 4, 0);
            let c = crc(&b[f..f + 32]);
            put32(b, f + 32, c);
        },
    );
    variant(
        "index_len_huge.nc3z",
        Expect::Open("footer", "does not fit the archive"),
        &|b| {
            let f = footer_at(b);
            put64(b, f + 8, 1 << 40);
            let c = crc(&b[f..f + 24]);
            put32(b, f + 24, c);
        },
    );
    variant(
        "footer_unknown_flags.nc3z",
        Expect::Open("footer", "unknown footer flags"),
        &|b| {
            let f = footer_at(b);
            put32(b, f + 20, 0x8000_0000);
            let c = crc(&b[f..f + 24]);
            put32(b, f + 24, c);
        },
    );
    variant(
        "lead_numrecs_beyond_original.nc3z",
        Expect::Open("lead", "do not fit in the file"),
        &|b| {
            put64(b, 24, 1000);
            fix_lead(b);
        },
    );
    variant(
        "constant_entry_padding_not_zero.nc3z",
        Expect::Open("index", "is not valid"),
        &|b| {
            // A constant block's element sits in the offset field; the bytes past it must be 0.
            let e = entry_at(b, first_constant(b));
            b[e + 7] = 0x55;
            fix_tail(b);
        },
    );
    variant(
        "constant_entry_also_lost.nc3z",
        Expect::Open("index", "is not valid"),
        &|b| {
            let e = entry_at(b, first_constant(b));
            b[e + 14] = 3;
            fix_tail(b);
        },
    );
    variant(
        "constant_entry_value_forged.nc3z",
        Expect::Verify("whose index entry is not that constant"),
        &|b| {
            // The index (CRC recomputed) gives a constant block another element: reads trust the
            // index, but verify finds the constants frame disagrees.
            let e = entry_at(b, first_constant(b));
            b[e] ^= 0x01;
            fix_tail(b);
        },
    );
    variant(
        "constants_frame_payload_flip.nc3z",
        Expect::Verify("payload checksum mismatch"),
        &|b| {
            let e = constants_entry_at(b);
            let f = u64::from_le_bytes(b[e..e + 8].try_into().unwrap()) as usize;
            b[f + 36] ^= 0x01;
        },
    );
    variant(
        "constants_frame_count_huge.nc3z",
        Expect::Open("index", "does not match"),
        &|b| {
            let (off, _) = index_range(b);
            put32(b, off + 4, 0xFFFF_FFFF);
            fix_tail(b);
        },
    );
    variant(
        "constants_frame_entry_outside.nc3z",
        Expect::Open("index", "constants frame 0 points outside"),
        &|b| {
            let e = constants_entry_at(b);
            put64(b, e, 1 << 50);
            fix_tail(b);
        },
    );
    variant(
        "lead_claims_block_sizes_frame.nc3z",
        Expect::Open("block sizes", "the lead says a block sizes frame follows"),
        &|b| {
            // A 1.0 archive whose lead (CRC recomputed) says 1.1 with a block sizes frame: the
            // frame after the header frame is a data frame.
            b[10] = 1;
            put32(b, 12, 1);
            fix_lead(b);
        },
    );
    // Damaged pco payloads (codec 4), in an archive of samples/obs_points.nc, whose float
    // coordinates pack with pco; `s` is the first stream whose block 0 is a pco frame. The
    // payload CRC is recomputed where the point is to reach the pco decoder.
    let (pco_base, s) = pco_archive();
    let mut pco_variant =
        |name: &'static str, what: &'static str, f: &dyn Fn(&mut Vec<u8>, usize)| {
            let mut b = pco_base.clone();
            let e = entry_at(&b, first_entry(&b, s));
            let frame = u64::from_le_bytes(b[e..e + 8].try_into().unwrap()) as usize;
            f(&mut b, frame);
            out.push((name, b, Expect::Read(s, what)));
        };
    pco_variant(
        "pco_payload_bit_flip.nc3z",
        "payload checksum mismatch",
        &|b, f| {
            b[f + 36 + 9] ^= 0x10;
        },
    );
    pco_variant(
        "pco_number_type_forged.nc3z",
        "pco: number type 2 has 8-byte elements, the frame's element size is 4",
        &|b, f| {
            // The standalone header's number type (byte 5): f32 (5) becomes u64 (2).
            assert_eq!(&b[f + 36..f + 42], b"pco!\x03\x05");
            b[f + 36 + 5] = 2;
            fix_payload_crc(b, f);
        },
    );
    pco_variant("pco_terminator_forged.nc3z", "pco: ", &|b, f| {
        // The last byte ends the pco data (0); a number type byte there starts a chunk that
        // is not there.
        let stored = u32::from_le_bytes(b[f + 4..f + 8].try_into().unwrap()) as usize;
        assert_eq!(b[f + 36 + stored - 1], 0);
        b[f + 36 + stored - 1] = 5;
        fix_payload_crc(b, f);
    });
    pco_variant(
        "pco_frame_with_filter.nc3z",
        "filter shuffle with codec pco",
        &|b, f| {
            // Frame and index agree on filter 1 (shuffle), which pco frames do not have.
            b[f + 25] = 1;
            let c = crc(&b[f..f + 32]);
            put32(b, f + 32, c);
            let e = entry_at(b, first_entry(b, s));
            b[e + 13] = 1;
            fix_tail(b);
        },
    );
    // A codec id this reader does not know, in frame and index alike, checksums recomputed:
    // what a reader that predates codec 6 meets in an archive with context frames (see
    // design/FORMAT.md, Versioning). It is refused at open, naming the id.
    let mut b = pco_base.clone();
    let e = entry_at(&b, first_entry(&b, s));
    let f = u64::from_le_bytes(b[e..e + 8].try_into().unwrap()) as usize;
    assert_eq!((b[f + 24], b[e + 12]), (4, 4));
    b[f + 24] = 7;
    let c = crc(&b[f..f + 32]);
    put32(&mut b, f + 32, c);
    b[e + 12] = 7;
    fix_tail(&mut b);
    out.push((
        "codec_id_unknown.nc3z",
        b,
        Expect::Open("index", "unknown codec id 7"),
    ));
    // Hostile lzma payloads (codec 5), in an archive of a small text file packed with
    // `--codec lzma`; `s` is the text's stream, whose block 0 is an lzma frame. Each payload is
    // a well-formed frame (lengths, offsets and checksums recomputed) around a bad .xz stream.
    let (xz_base, s) = lzma_archive();
    let mut xz_variant = |name: &'static str, what: &'static str, f: &ForgePayload| {
        let b = forge_payload(&xz_base, s, 5, f);
        out.push((name, b, Expect::Read(s, what)));
    };
    xz_variant(
        "lzma_truncated.nc3z",
        "lzma: truncated .xz stream",
        // Without its last 20 bytes (the stream footer and part of the index).
        &|p, _| p[..p.len() - 20].to_vec(),
    );
    xz_variant(
        "lzma_trailing_bytes.nc3z",
        "lzma: 3 bytes follow the end of the .xz stream",
        &|p, _| [p, &[0, 0, 0]].concat(),
    );
    xz_variant(
        "lzma_decodes_longer.nc3z",
        "lzma: the .xz stream decodes to more than the frame's",
        // A valid stream of the block and one byte more.
        &|_, block| xz(&[block, &[7]].concat()),
    );
    xz_variant(
        "lzma_decodes_shorter.nc3z",
        "lzma: the .xz stream decodes to",
        &|_, block| xz(&block[..block.len() - 1]),
    );
    xz_variant(
        "lzma_huge_dictionary.nc3z",
        "lzma: the stream needs a dictionary larger than 8388608 bytes",
        &|p, _| {
            // The block header after the 12-byte stream header: size 12, flags 0, filter
            // LZMA2 (0x21) with 1 property byte, the dictionary size: 40 is 4 GiB - 1 (the
            // .xz format, 5.3.1). Its CRC32 (of bytes 0..8, at 8..12) recomputed.
            let mut p = p.to_vec();
            assert_eq!(&p[12..16], &[0x02, 0x00, 0x21, 0x01]);
            p[16] = 40;
            let mut c = flate2::Crc::new();
            c.update(&p[12..20]);
            p[20..24].copy_from_slice(&c.sum().to_le_bytes());
            p
        },
    );
    xz_variant(
        "lzma_not_xz.nc3z",
        "lzma: stream/file format not recognized",
        // A zstd frame where the .xz stream should be.
        &|_, block| zstd::bulk::compress(block, 3).unwrap(),
    );
    // Damaged lorenzo frames (filter 5), payload CRCs recomputed so that the filter's own
    // checks are reached: the 4-byte row length that starts the payload set to 0, or the zstd
    // frame after it damaged.
    let (lz_base, s) = lorenzo_archive();
    let mut lz_variant =
        |name: &'static str, what: &'static str, f: &dyn Fn(&mut Vec<u8>, usize)| {
            let mut b = lz_base.clone();
            let e = entry_at(&b, first_entry(&b, s));
            let frame = u64::from_le_bytes(b[e..e + 8].try_into().unwrap()) as usize;
            assert_eq!(b[frame + 25], 5);
            f(&mut b, frame);
            out.push((name, b, Expect::Read(s, what)));
        };
    lz_variant("lorenzo_row_zero.nc3z", "lorenzo row length 0", &|b, f| {
        assert_eq!(&b[f + 36..f + 40], &150u32.to_be_bytes());
        b[f + 36 + 3] = 0;
        fix_payload_crc(b, f);
    });
    lz_variant("lorenzo_zstd_damaged.nc3z", "zstd: ", &|b, f| {
        // The zstd magic right after the row length.
        assert_eq!(&b[f + 40..f + 44], &[0x28, 0xb5, 0x2f, 0xfd]);
        b[f + 40] ^= 0x40;
        fix_payload_crc(b, f);
    });
    lz_variant(
        "lorenzo_payload_bit_flip.nc3z",
        "payload checksum mismatch",
        &|b, f| {
            b[f + 36 + 20] ^= 0x01;
        },
    );
    // A filter id this reader does not know, in frame and index alike: what a reader that
    // predates filters 5 to 9 meets in an archive with lorenzo, plane, refs, mask or fit
    // frames, here with id 10.
    let mut b = lz_base.clone();
    let e = entry_at(&b, first_entry(&b, s));
    let f = u64::from_le_bytes(b[e..e + 8].try_into().unwrap()) as usize;
    assert_eq!((b[f + 25], b[e + 13]), (5, 5));
    b[f + 25] = 10;
    let c = crc(&b[f..f + 32]);
    put32(&mut b, f + 32, c);
    b[e + 13] = 10;
    fix_tail(&mut b);
    out.push((
        "filter_id_unknown.nc3z",
        b,
        Expect::Open("index", "unknown filter id 10"),
    ));
    // Damaged mask frames (filter 8 with codec pco), checksums recomputed so that the filter's
    // own checks are reached: the mask's length past the payload, a bitmap of all fill, and a
    // bit past the block's last element.
    let (mk_base, s) = mask_archive();
    let mut mk_variant =
        |name: &'static str, what: &'static str, f: &dyn Fn(&mut Vec<u8>, usize)| {
            let mut b = mk_base.clone();
            let e = entry_at(&b, first_entry(&b, s));
            let frame = u64::from_le_bytes(b[e..e + 8].try_into().unwrap()) as usize;
            assert_eq!((b[frame + 24], b[frame + 25]), (4, 8));
            f(&mut b, frame);
            out.push((name, b, Expect::Read(s, what)));
        };
    mk_variant(
        "mask_length_past_payload.nc3z",
        "runs past the payload",
        &|b, f| {
            let e = usize::from(u16::from_le_bytes([b[f + 26], b[f + 27]]));
            b[f + 36 + e..f + 40 + e].copy_from_slice(&u32::MAX.to_be_bytes());
            fix_payload_crc(b, f);
        },
    );
    mk_variant("mask_bitmap_not_zstd.nc3z", "mask bitmap:", &|b, f| {
        // The zstd frame's magic number broken.
        let e = usize::from(u16::from_le_bytes([b[f + 26], b[f + 27]]));
        assert_eq!(&b[f + 40 + e..f + 44 + e], &[0x28, 0xb5, 0x2f, 0xfd]);
        b[f + 40 + e] ^= 0x40;
        fix_payload_crc(b, f);
    });
    // Damaged fit frames (filter 9 with codec pco), checksums recomputed so that the filter's
    // own checks are reached: each field of the prefix out of range, the prefix cut short, a
    // fill section whose mask runs past the payload, and the frame's codec changed to zstd.
    let (ft_base, s) = fit_archive();
    let mut ft_variant =
        |name: &'static str, what: &'static str, f: &dyn Fn(&mut Vec<u8>, usize, usize)| {
            let mut b = ft_base.clone();
            let e = entry_at(&b, first_entry(&b, s));
            let frame = u64::from_le_bytes(b[e..e + 8].try_into().unwrap()) as usize;
            assert_eq!((b[frame + 24], b[frame + 25]), (4, 9));
            // The prefix: floats, shift 12, a fill section.
            assert_eq!(&b[frame + 36..frame + 39], &[1, 12, 1]);
            f(&mut b, frame, e);
            out.push((name, b, Expect::Read(s, what)));
        };
    ft_variant(
        "fit_map_bad.nc3z",
        "fit map byte 2 (0 integers, 1 floats)",
        &|b, f, _| {
            b[f + 36] = 2;
            fix_payload_crc(b, f);
        },
    );
    ft_variant(
        "fit_shift_bad.nc3z",
        "fit shift 16 (at most 15)",
        &|b, f, _| {
            b[f + 37] = 16;
            fix_payload_crc(b, f);
        },
    );
    ft_variant("fit_flags_bad.nc3z", "fit flags 0x03", &|b, f, _| {
        b[f + 38] = 3;
        fix_payload_crc(b, f);
    });
    ft_variant(
        "fit_too_many_taps.nc3z",
        "fit prefix with 33 taps (at most 32)",
        &|b, f, _| {
            b[f + 39] = 33;
            fix_payload_crc(b, f);
        },
    );
    ft_variant(
        "fit_offset_bad.nc3z",
        "fit tap 0 has offset 1 (at least 2)",
        &|b, f, _| {
            b[f + 40..f + 44].copy_from_slice(&1u32.to_be_bytes());
            fix_payload_crc(b, f);
        },
    );
    ft_variant("fit_prefix_truncated.nc3z", "has no", &|b, f, e| {
        // Frame and index say 9 stored bytes: the head and a part of the first tap.
        put32(b, f + 4, 9);
        fix_payload_crc(b, f);
        put32(b, e + 8, 9);
        fix_tail(b);
    });
    ft_variant(
        "fit_mask_past_payload.nc3z",
        "runs past the payload",
        &|b, f, _| {
            let k = usize::from(b[f + 39]);
            let at = f + 40 + 6 * k + 4;
            b[at..at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
            fix_payload_crc(b, f);
        },
    );
    ft_variant(
        "fit_with_zstd.nc3z",
        "fit filter with codec zstd (fit is defined with codec pco only)",
        &|b, f, e| {
            b[f + 24] = 1;
            let c = crc(&b[f..f + 32]);
            put32(b, f + 32, c);
            b[e + 12] = 1;
            fix_tail(b);
        },
    );
    // Damaged plane frames (filter 6 with codec pco), checksums recomputed so that the
    // filter's own checks are reached: each field of the 9-byte prefix (row length, map,
    // weights, shift) out of range, the prefix cut short, pco residuals of a signed type, and
    // the frame's codec changed to zstd.
    let (pl_base, s) = plane_archive();
    let mut pl_variant =
        |name: &'static str, what: &'static str, f: &dyn Fn(&mut Vec<u8>, usize, usize)| {
            let mut b = pl_base.clone();
            let e = entry_at(&b, first_entry(&b, s));
            let frame = u64::from_le_bytes(b[e..e + 8].try_into().unwrap()) as usize;
            assert_eq!((b[frame + 24], b[frame + 25]), (4, 6));
            // The prefix: rows of 200 elements, integers.
            assert_eq!(&b[frame + 36..frame + 41], &[0, 0, 0, 200, 0]);
            f(&mut b, frame, e);
            out.push((name, b, Expect::Read(s, what)));
        };
    pl_variant("plane_row_zero.nc3z", "plane row length 0", &|b, f, _| {
        b[f + 36 + 3] = 0;
        fix_payload_crc(b, f);
    });
    pl_variant(
        "plane_map_bad.nc3z",
        "plane map byte 2 (0 integers, 1 floats)",
        &|b, f, _| {
            b[f + 36 + 4] = 2;
            fix_payload_crc(b, f);
        },
    );
    pl_variant(
        "plane_shift_bad.nc3z",
        "plane shift 9 (at most 6)",
        &|b, f, _| {
            b[f + 36 + 8] = 9;
            fix_payload_crc(b, f);
        },
    );
    pl_variant(
        "plane_prefix_truncated.nc3z",
        "plane payload of 5 bytes has no 9-byte prefix",
        &|b, f, e| {
            // Frame and index say 5 stored bytes (the rest of the old payload is a gap).
            put32(b, f + 4, 5);
            fix_payload_crc(b, f);
            put32(b, e + 8, 5);
            fix_tail(b);
        },
    );
    pl_variant(
        "plane_pco_signed.nc3z",
        "number type 8 for plane residuals",
        &|b, f, _| {
            // The pco file's number type: u16 (7) forged to i16 (8).
            assert_eq!(&b[f + 45..f + 51], &[0x70, 0x63, 0x6f, 0x21, 3, 7]);
            b[f + 50] = 8;
            fix_payload_crc(b, f);
        },
    );
    pl_variant(
        "plane_with_zstd.nc3z",
        "plane filter with codec zstd (plane is defined with codec pco only)",
        &|b, f, e| {
            b[f + 24] = 1;
            let c = crc(&b[f..f + 32]);
            put32(b, f + 32, c);
            b[e + 12] = 1;
            fix_tail(b);
        },
    );
    // Damaged refs frames (filter 7, here with codec lzma), checksums recomputed so that the
    // filter's own checks are reached: the table's entry count beyond the block's elements or
    // one too many (the .xz stream then decodes to fewer bytes than the count needs), the count
    // cut short, and the frame's codec changed to pco.
    let (rf_base, s) = refs_archive();
    let mut rf_variant =
        |name: &'static str, what: &'static str, f: &dyn Fn(&mut Vec<u8>, usize, usize)| {
            let mut b = rf_base.clone();
            let e = entry_at(&b, first_entry(&b, s));
            let frame = u64::from_le_bytes(b[e..e + 8].try_into().unwrap()) as usize;
            assert_eq!((b[frame + 24], b[frame + 25]), (5, 7));
            // The .xz stream's magic after the 4-byte count.
            assert_eq!(
                &b[frame + 40..frame + 46],
                &[0xfd, 0x37, 0x7a, 0x58, 0x5a, 0]
            );
            f(&mut b, frame, e);
            out.push((name, b, Expect::Read(s, what)));
        };
    rf_variant(
        "refs_count_too_large.nc3z",
        "refs: a table of 4294967295 entries for 6786 elements",
        &|b, f, _| {
            b[f + 36..f + 40].copy_from_slice(&[0xff; 4]);
            fix_payload_crc(b, f);
        },
    );
    rf_variant(
        "refs_count_one_more.nc3z",
        "lzma: the .xz stream decodes to 36744 bytes, the frame says 36752",
        &|b, f, _| {
            let d = u32::from_be_bytes(b[f + 36..f + 40].try_into().unwrap());
            b[f + 36..f + 40].copy_from_slice(&(d + 1).to_be_bytes());
            fix_payload_crc(b, f);
        },
    );
    rf_variant(
        "refs_count_truncated.nc3z",
        "refs payload of 3 bytes has no 4-byte table entry count",
        &|b, f, e| {
            // Frame and index say 3 stored bytes (the rest of the old payload is a gap).
            put32(b, f + 4, 3);
            fix_payload_crc(b, f);
            put32(b, e + 8, 3);
            fix_tail(b);
        },
    );
    rf_variant(
        "refs_with_pco.nc3z",
        "refs filter with codec pco (refs goes with none, zstd, deflate and lzma)",
        &|b, f, e| {
            b[f + 24] = 4;
            let c = crc(&b[f..f + 32]);
            put32(b, f + 32, c);
            b[e + 12] = 4;
            fix_tail(b);
        },
    );
    // Damaged context frames (codec 6), lengths and checksums recomputed so that the codec's
    // own checks are reached. The payload: type, predictor, row length, the range coder
    // stream's length L, L bytes, then the low bits.
    let (cx_base, s) = context_archive();
    let mut cx_variant = |name: &'static str, what: &'static str, f: &ForgePayload| {
        let b = forge_payload(&cx_base, s, 6, f);
        out.push((name, b, Expect::Read(s, what)));
    };
    cx_variant(
        "context_prefix_truncated.nc3z",
        "context: payload of 9 bytes has no 10-byte prefix",
        &|p, _| p[..9].to_vec(),
    );
    cx_variant(
        "context_number_type.nc3z",
        "context: number type 2 (0: integers, 1: floats)",
        &|p, _| [&[2], &p[1..]].concat(),
    );
    cx_variant(
        "context_predictor_unknown.nc3z",
        "context: predictor 3 (0: left, 1: mean, 2: lorenzo)",
        &|p, _| [&p[..1], &[3], &p[2..]].concat(),
    );
    cx_variant("context_row_zero.nc3z", "context: row length 0", &|p, _| {
        [&p[..2], &[0, 0, 0, 0], &p[6..]].concat()
    });
    cx_variant(
        "context_range_length_beyond.nc3z",
        "context: range coder stream of 4294967295 bytes, but",
        &|p, _| [&p[..6], &[0xff; 4], &p[10..]].concat(),
    );
    cx_variant(
        "context_range_cut.nc3z",
        "context: range coder stream of 5 bytes ends before the block",
        // L = 5: the rest of the range coder's bytes become low bits.
        &|p, _| [&p[..6], &[0, 0, 0, 5], &p[10..]].concat(),
    );
    cx_variant(
        "context_range_first_byte.nc3z",
        "context: range coder stream starts with 1 (not 0)",
        &|p, _| [&p[..10], &[1], &p[11..]].concat(),
    );
    cx_variant(
        "context_low_bits_cut.nc3z",
        "context: low-bits stream of",
        &|p, _| p[..p.len() - 1].to_vec(),
    );
    cx_variant(
        "context_low_bits_extra.nc3z",
        "context: the block uses",
        &|p, _| [p, &[0]].concat(),
    );
    cx_variant(
        "context_range_extra.nc3z",
        "context: the block uses",
        // One more byte in the range coder stream (L + 1), the low bits unchanged.
        &|p, _| {
            let l = u32::from_be_bytes(p[6..10].try_into().unwrap()) as usize;
            [
                &p[..6],
                &(l as u32 + 1).to_be_bytes(),
                &p[10..10 + l],
                &[0],
                &p[10 + l..],
            ]
            .concat()
        },
    );
    {
        let mut b = cx_base.clone();
        let e = entry_at(&b, first_entry(&b, s));
        let f = u64::from_le_bytes(b[e..e + 8].try_into().unwrap()) as usize;
        // Frame and index agree on filter 1 (shuffle), which context frames do not have.
        b[f + 25] = 1;
        let c = crc(&b[f..f + 32]);
        put32(&mut b, f + 32, c);
        b[e + 13] = 1;
        fix_tail(&mut b);
        out.push((
            "context_with_filter.nc3z",
            b,
            Expect::Read(
                s,
                "filter shuffle with codec context (its frames have filter none)",
            ),
        ));
    }
    // Format 1.1: per-variable block sizes.
    let base11 = base_archive_1_1();
    let mut variant11 = |name: &'static str, expect: Expect, f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = base11.clone();
        f(&mut b);
        out.push((name, b, expect));
    };
    variant11(
        "block_sizes_flag_in_1_0_lead.nc3z",
        Expect::Open("lead", "unknown flags 0x1 in a version 1.0 lead"),
        &|b| {
            b[10] = 0;
            fix_lead(b);
        },
    );
    variant11(
        "lead_unknown_flag.nc3z",
        Expect::Open("lead", "unknown flags 0x3 in a version 1.1 lead"),
        &|b| {
            put32(b, 12, 3);
            fix_lead(b);
        },
    );
    variant11(
        "block_sizes_frame_bit_flip.nc3z",
        Expect::Open("block sizes", "frame header checksum mismatch"),
        &|b| {
            let (at, _) = block_sizes_at(b);
            b[at + 13] ^= 0x01;
        },
    );
    variant11(
        "block_sizes_payload_bit_flip.nc3z",
        Expect::Open("block sizes", "payload checksum mismatch"),
        &|b| {
            let (_, p) = block_sizes_at(b);
            b[p + 1] ^= 0x01;
        },
    );
    variant11(
        "block_sizes_entry_0.nc3z",
        Expect::Open("block sizes", "variable id 7: block size 0 is outside"),
        &|b| {
            // f3 (variable 7)'s entry set to 0, CRCs recomputed.
            rewrite_block_sizes(b, &|t| put32(t, 4 * 7, 0));
        },
    );
    variant11(
        "block_sizes_entry_forged.nc3z",
        Expect::Open("index", "index has"),
        &|b| {
            // f3's block size forged from 8 to 12 bytes, CRCs recomputed: the layout now has
            // fewer blocks than the index lists.
            rewrite_block_sizes(b, &|t| {
                assert_eq!(t[4 * 7], 8);
                put32(t, 4 * 7, 12)
            });
        },
    );
    variant11(
        "block_sizes_table_short.nc3z",
        Expect::Open("block sizes", "4 bytes for each of the 17 variables"),
        &|b| {
            // A table of 16 variables' block sizes, CRCs recomputed.
            rewrite_block_sizes(b, &|t| t.truncate(4 * 16));
        },
    );
    out
}

fn check(name: &str, path: &Path, bytes: Vec<u8>, expect: Expect) {
    let got = Archive::from_reader(bytes, path);
    match (expect, got) {
        (
            Expect::Open(part, what),
            Err(Error::Archive {
                part: p, source, ..
            }),
        ) => {
            let w = source.to_string();
            assert_eq!(p, part, "{name}: {w}");
            assert!(w.contains(what), "{name}: {w:?} lacks {what:?}");
        }
        (Expect::Read(s, what), Ok(a)) => match a.read_block(s, 0) {
            Err(Error::Block {
                source, block: 0, ..
            }) => {
                let w = source.to_string();
                assert!(w.contains(what), "{name}: {w:?} lacks {what:?}")
            }
            other => panic!("{name}: reading block 0 of stream {s} gave {other:?}"),
        },
        (Expect::Verify(what), Ok(a)) => {
            for s in 0..a.stream_count() {
                for blk in 0..a.block_count(s) {
                    a.read_block(s, blk).unwrap();
                }
            }
            let r =
                nc3pack::verify(path, &nc3pack::VerifyOptions::default().with_threads(1)).unwrap();
            assert!(
                r.damage.iter().any(|d| d.to_string().contains(what)),
                "{name}: verify found {:?}, not {what:?}",
                r.damage
            );
        }
        (e, Ok(_)) => panic!("{name}: opened, expected {e:?}"),
        (e, Err(other)) => panic!("{name}: expected {e:?}, got {other}"),
    }
    // Whatever the damage, verify reports it and unpack refuses, leaving nothing.
    let r = nc3pack::verify(path, &nc3pack::VerifyOptions::default().with_threads(1)).unwrap();
    assert!(!r.is_intact(), "{name}: verify says intact");
    let dir = temp_dir();
    // Reindex either recovers something or refuses, quickly and within bounded memory.
    let _ = nc3pack::reindex(path, &dir.path().join("re.nc3z"), &Default::default());
    let out = dir.path().join("out.nc");
    match nc3pack::unpack_file(
        path,
        &out,
        &nc3pack::UnpackOptions::default().with_threads(1),
    ) {
        // Damage to what only recovery reads (a constants frame) leaves the data intact.
        Ok(_) if matches!(expect, Expect::Verify(_)) => assert_eq!(
            std::fs::read(&out).unwrap(),
            std::fs::read(sample("classic_records.nc")).unwrap(),
            "{name}: unpacked to something else than the original"
        ),
        Ok(_) => panic!("{name}: unpacked"),
        Err(_) => assert!(!out.exists()),
    }
}

#[test]
fn every_registered_hostile_archive_fails_as_expected() {
    let dir = sample("bad/archives");
    let write = std::env::var_os("NC3PACK_WRITE_BAD").is_some();
    let reg = registry();
    for (name, bytes, expect) in &reg {
        let committed = dir.join(name);
        if write {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&committed, bytes).unwrap();
        }
        // The generator and the committed file agree, and both fail as expected.
        let on_disk = std::fs::read(&committed).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (regenerate with NC3PACK_WRITE_BAD=1)",
                committed.display()
            )
        });
        assert!(on_disk == *bytes, "{name}: committed file differs from the generator (regenerate with NC3PACK_WRITE_BAD=1)");
        check(name, &committed, on_disk, *expect);
    }
    // No stray files in the registry.
    let mut listed: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    listed.sort();
    let mut names: Vec<String> = reg.iter().map(|r| r.0.to_string()).collect();
    names.sort();
    assert_eq!(listed, names);
}

/// Inputs found by fuzzing: each gives a clean error, never a panic or an allocation the file
/// cannot back.
#[test]
fn fuzz_findings_fail_cleanly() {
    let dir = sample("bad/fuzz");
    let expect: &[(&str, &str)] = &[
        (
            "layout_begin_plus_size_wraps.nc",
            "extends past the end of the file",
        ),
        ("layout_recvar_begin_plus_slab_wraps.nc", "overflows"),
    ];
    // Streaming record count and no record variables: the count is 0 (it was 2^64-1, and the
    // walk over records never ended in a debug build).
    let p = dir.join("no_record_vars_streaming_numrecs.nc");
    let out = temp_dir();
    let z = out.path().join("x.nc3z");
    pack_file(&p, &z, &PackOptions::default()).unwrap();
    assert_eq!(Archive::open(&z).unwrap().layout().numrecs, 0);
    let back = out.path().join("x.nc");
    nc3pack::unpack_file(
        &z,
        &back,
        &nc3pack::UnpackOptions::default().with_threads(1),
    )
    .unwrap();
    assert_eq!(std::fs::read(back).unwrap(), std::fs::read(&p).unwrap());
    for (name, what) in expect {
        let p = dir.join(name);
        let e = match nc3pack::open(&p) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{name}: opened"),
        };
        assert!(e.contains(what), "{name}: {e}");
        if name.ends_with(".nc") {
            let out = temp_dir();
            let e = pack_file(&p, &out.path().join("x.nc3z"), &PackOptions::default()).unwrap_err();
            assert!(e.to_string().contains(what), "{name}: {e}");
        } else {
            let r =
                nc3pack::verify(&p, &nc3pack::VerifyOptions::default().with_threads(1)).unwrap();
            assert!(!r.is_intact());
            let out = temp_dir();
            assert!(
                nc3pack::reindex(&p, &out.path().join("x.nc3z"), &Default::default()).is_err(),
                "{name}"
            );
        }
    }
}

/// A lead whose record count (checksum intact) is not the one its header and original length
/// give: `reindex` refuses it in one error naming the lead and the counts, and writes nothing
/// (it used to copy the lead into an archive that `verify` then reported damaged). Found by the
/// `archive_fixcrc` fuzz target.
#[test]
fn reindex_refuses_a_lead_with_another_record_count() {
    let mut b = base_archive();
    let numrecs = u64::from_le_bytes(b[24..32].try_into().unwrap());
    assert!(numrecs >= 2, "the base archive has records");
    put64(&mut b, 24, numrecs - 1);
    fix_lead(&mut b);
    let dir = temp_dir();
    let (z, out) = (dir.path().join("z.nc3z"), dir.path().join("out.nc3z"));
    std::fs::write(&z, &b).unwrap();
    let e = nc3pack::reindex(&z, &out, &nc3pack::ReindexOptions::default()).unwrap_err();
    assert!(
        matches!(
            &e,
            Error::Archive {
                part: "lead",
                offset: 24,
                ..
            }
        ),
        "{e:?}"
    );
    let want = format!("record count {} is not the {numrecs}", numrecs - 1);
    assert!(e.to_string().contains(&want), "{e}");
    assert!(!out.exists());
}

/// An index longer than one of the 64 KiB pieces a local archive's index is read in (6,250
/// blocks of 128 bytes): the archive opened from its file unpacks to the original, and an entry damaged in
/// the last piece (with the index checksum recomputed) fails the open as one in the first
/// does; with the checksum left alone, the checksum is what is named.
#[test]
fn an_index_of_several_pieces_opens_and_names_a_damaged_entry() {
    let dir = temp_dir();
    let z = dir.path().join("many.nc3z");
    let opts = PackOptions::default().with_block_size(128).with_threads(2);
    pack_file(&sample("obs_points.nc"), &z, &opts).unwrap();
    let good = std::fs::read(&z).unwrap();
    let (_, len) = index_range(&good);
    assert!(len > 64 << 10, "index of {len} bytes");
    let out = dir.path().join("back.nc");
    nc3pack::unpack_file(&z, &out, &nc3pack::UnpackOptions::default()).unwrap();
    assert!(std::fs::read(&out).unwrap() == std::fs::read(sample("obs_points.nc")).unwrap());

    let a = Archive::open(&z).unwrap();
    let blocks: u64 = (0..a.stream_count()).map(|s| a.block_count(s)).sum();
    for (entry, fix) in [
        (3, true),
        (blocks as usize - 2, true),
        (blocks as usize - 2, false),
    ] {
        let mut b = good.clone();
        let at = entry_at(&b, entry) + 12;
        b[at] = 200;
        if fix {
            fix_tail(&mut b);
        }
        let bad = dir.path().join(format!("bad-{entry}-{fix}.nc3z"));
        std::fs::write(&bad, &b).unwrap();
        match Archive::open(&bad) {
            Err(Error::Archive { part, source, .. }) => {
                let w = source.to_string();
                assert_eq!(part, "index", "entry {entry}: {w}");
                let want = if fix {
                    "unknown codec id 200"
                } else {
                    "checksum mismatch"
                };
                assert!(w.contains(want), "entry {entry}: {w:?} lacks {want:?}");
            }
            other => panic!("entry {entry}: {:?}", other.map(|_| "opened")),
        }
    }
}

/// A file cut while open: a read past its new end said "read: failed to fill whole buffer";
/// it now says the file got shorter since it was opened, with its old and new lengths, for an
/// archive and for an original netCDF-3 file.
#[test]
fn a_file_cut_while_open_says_it_got_shorter_with_both_lengths() {
    let dir = temp_dir();
    let z = dir.path().join("obs.nc3z");
    let opts = PackOptions::default()
        .with_threads(1)
        .with_compact(false)
        .with_block_size(64 << 10);
    pack_file(&sample("obs_points.nc"), &z, &opts).unwrap();
    let a = Archive::open(&z).unwrap();
    let (was, now) = (a.len(), a.data_start());
    std::fs::OpenOptions::new()
        .write(true)
        .open(&z)
        .unwrap()
        .set_len(now)
        .unwrap();
    let e = (0..a.header().var_count())
        .find_map(|v| a.read_var_bytes(v).err())
        .expect("a read past the cut failed");
    let want = format!("got shorter since it was opened: it was {was} bytes long and is now {now}");
    let msg = e.to_string();
    assert!(msg.contains(&want), "{msg}");
    assert!(msg.starts_with(&z.display().to_string()), "{msg}");
    match &e {
        Error::Io {
            op: "read", source, ..
        } => {
            let s = source
                .get_ref()
                .and_then(|s| s.downcast_ref::<nc3pack::error::Shrunk>());
            assert!(
                matches!(s, Some(s) if s.was == was && s.now == now),
                "{e:?}"
            );
        }
        other => panic!("{other:?}"),
    }

    let nc = dir.path().join("obs.nc");
    std::fs::copy(sample("obs_points.nc"), &nc).unwrap();
    let f = nc3pack::NcFile::open(&nc).unwrap();
    let was = std::fs::metadata(&nc).unwrap().len();
    let now = f.header().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&nc)
        .unwrap()
        .set_len(now)
        .unwrap();
    let e = (0..f.header().var_count())
        .find_map(|v| f.read_var_bytes(v).err())
        .expect("a read past the cut failed");
    let want = format!("got shorter since it was opened: it was {was} bytes long and is now {now}");
    assert!(e.to_string().contains(&want), "{e}");
}
