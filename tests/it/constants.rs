//! Constant blocks live in the index only (design/FORMAT.md, "Constant blocks"): their entries
//! hold the element, they have no frame, and constants frames list their runs so that a scan
//! recovers them. Checked against files written by the `netcdf3` crate, whose values are the
//! truth, and against runs worked out by hand from those values.

use crate::util::temp_dir;
use nc3pack::format::{crc, ConstantRun, FrameHeader, CONSTANTS_ID};
use nc3pack::testing::scan;
use nc3pack::{pack_file, unpack_file, Archive, PackOptions};
use nc3pack::{reindex, verify};
use std::path::{Path, PathBuf};

const FILL_F32: f32 = 9.969_21e36;

/// `float z(n320)`: 64-byte blocks 0..10 are 0.0, block 10 varies, blocks 11..20 are 1.5.
/// `float r(time, x16)` over 100 records: records 0..50 vary, records 50..100 are the fill value
/// (one 64-byte block per record). Returns the values of z and r.
fn write(path: &Path) -> (Vec<f32>, Vec<f32>) {
    let mut ds = netcdf3::DataSet::new();
    ds.add_fixed_dim("n320", 320).unwrap();
    ds.add_fixed_dim("x16", 16).unwrap();
    ds.set_unlimited_dim("time", 100).unwrap();
    ds.add_var_f32("z", &["n320"]).unwrap();
    ds.add_var_f32("r", &["time", "x16"]).unwrap();
    let z: Vec<f32> = (0..320)
        .map(|i| match i / 16 {
            0..=9 => 0.0,
            10 => i as f32 * 0.25,
            _ => 1.5,
        })
        .collect();
    let r: Vec<f32> = (0..1600)
        .map(|i| if i < 800 { (i as f32).sqrt() } else { FILL_F32 })
        .collect();
    let mut w = netcdf3::FileWriter::open(path).unwrap();
    w.set_def(&ds, netcdf3::Version::Classic, 0).unwrap();
    w.write_var_f32("z", &z).unwrap();
    w.write_var_f32("r", &r).unwrap();
    w.close().unwrap();
    (z, r)
}

fn value(x: f32) -> [u8; 8] {
    let mut v = [0u8; 8];
    v[..4].copy_from_slice(&x.to_be_bytes());
    v
}

fn pack(nc: &Path, threads: usize, block_size: u32) -> PathBuf {
    let z = nc.with_extension(format!("{threads}.nc3z"));
    // The full form: these tests read and patch its index and frames at their offsets.
    let opts = PackOptions::default()
        .with_compact(false)
        .with_block_size(block_size)
        .with_threads(threads);
    pack_file(nc, &z, &opts.clone().with_force(true)).unwrap();
    z
}

fn be(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_be_bytes()).collect()
}

#[test]
fn constant_blocks_are_index_only_and_listed_in_a_constants_frame() {
    let dir = temp_dir();
    let nc = dir.path().join("c.nc");
    let (zv, rv) = write(&nc);
    let path = pack(&nc, 1, 64);
    let a = Archive::open(&path).unwrap();
    let (z, r) = (0usize, 1usize);
    assert_eq!((a.block_count(z), a.block_count(r)), (20, 100));
    // Exactly the blocks worked out above are constant, with their element in the entry.
    for b in 0..20 {
        let e = a.entry(z, b);
        assert_eq!(e.is_constant(), b != 10, "z block {b}");
        if b < 10 {
            assert_eq!(e.constant_value(4), 0f32.to_be_bytes());
        } else if b > 10 {
            assert_eq!(e.constant_value(4), 1.5f32.to_be_bytes());
        }
    }
    for b in 0..100 {
        let e = a.entry(r, b);
        assert_eq!(e.is_constant(), b >= 50, "r block {b}");
        assert_eq!((e.stored_len == 0), b >= 50);
    }
    // One constants frame, listing the three runs in the order the blocks were written.
    assert_eq!(a.constants_frames().len(), 1);
    let runs = a.constant_runs(0).unwrap();
    let run = |stream, first, count, v| ConstantRun {
        stream,
        first,
        count,
        value: value(v),
    };
    assert_eq!(
        runs,
        vec![
            run(0, 0, 10, 0.0),
            run(0, 11, 9, 1.5),
            run(1, 50, 50, FILL_F32)
        ]
    );
    // No frame in the file is a constant block: a scan finds the data frames and the table.
    let f = std::fs::File::open(&path).unwrap();
    let sc = scan(&f, a.data_start(), a.index_offset()).unwrap();
    assert!(sc.damaged.is_empty());
    assert_eq!(sc.frames.len(), 1 + 1 + 50);
    assert!(sc.frames.contains_key(&(CONSTANTS_ID, 0)));
    // The constants frame is a frame like the others: its bytes check by hand.
    let t = a.constants_frames()[0];
    let bytes = std::fs::read(&path).unwrap();
    let at = t.offset as usize;
    let h = FrameHeader::decode(&bytes[at..at + 36]).unwrap();
    assert_eq!((h.stream, h.block, h.decoded_len), (CONSTANTS_ID, 0, 96));
    assert_eq!(
        crc(&bytes[at + 36..at + 36 + h.stored_len as usize]),
        h.payload_crc
    );
    // Reads and unpacking give the original values and bytes.
    assert!(a.read_var_bytes(z).unwrap() == be(&zv));
    assert!(a.read_var_bytes(r).unwrap() == be(&rv));
    let back = dir.path().join("back.nc");
    unpack_file(
        &path,
        &back,
        &nc3pack::UnpackOptions::default()
            .with_force(true)
            .with_threads(2),
    )
    .unwrap();
    assert!(std::fs::read(&back).unwrap() == std::fs::read(&nc).unwrap());
    let report = verify(
        &path,
        &nc3pack::VerifyOptions::default()
            .with_against(&nc)
            .with_threads(2),
    )
    .unwrap();
    assert!(report.is_intact() && report.hash_checked, "{report:?}");
    // The netcdf3 crate reads the restored file's fill records as written.
    let mut rd = netcdf3::FileReader::open(&back).unwrap();
    let got = rd.read_var_f32("r").unwrap();
    assert_eq!(got[799..801], [rv[799], FILL_F32]);
}

/// Files over 4 MiB go through the encoder threads, which finish blocks in any order.
#[test]
fn the_parallel_pipeline_writes_a_consistent_archive() {
    let dir = temp_dir();
    let nc = dir.path().join("big.nc");
    // 64 KiB blocks of 16384 floats. z: blocks 0..10 are 0.0, block 10 varies, blocks 11..70
    // are 1.5. r(time, x): one block a record, records 0..10 vary, 10..20 are the fill value.
    let n = 16384;
    let mut ds = netcdf3::DataSet::new();
    ds.add_fixed_dim("nz", 70 * n).unwrap();
    ds.add_fixed_dim("x", n).unwrap();
    ds.set_unlimited_dim("time", 20).unwrap();
    ds.add_var_f32("z", &["nz"]).unwrap();
    ds.add_var_f32("r", &["time", "x"]).unwrap();
    let z: Vec<f32> = (0..70 * n)
        .map(|i| match i / n {
            0..=9 => 0.0,
            10 => i as f32 * 0.25,
            _ => 1.5,
        })
        .collect();
    let r: Vec<f32> = (0..20 * n)
        .map(|i| {
            if i < 10 * n {
                (i as f32).sqrt()
            } else {
                FILL_F32
            }
        })
        .collect();
    let mut w = netcdf3::FileWriter::open(&nc).unwrap();
    w.set_def(&ds, netcdf3::Version::Classic, 0).unwrap();
    w.write_var_f32("z", &z).unwrap();
    w.write_var_f32("r", &r).unwrap();
    w.close().unwrap();
    assert!(std::fs::metadata(&nc).unwrap().len() > 4 << 20);
    let path = pack(&nc, 2, 65536);
    let a = Archive::open(&path).unwrap();
    let constant = (0..a.stream_count())
        .flat_map(|s| (0..a.block_count(s)).map(move |b| (s, b)))
        .filter(|&(s, b)| a.entry(s, b).is_constant())
        .count();
    assert_eq!(constant, 10 + 59 + 10);
    // Whatever order the encoder threads finished in, the frame's runs are sorted and merged.
    assert_eq!(a.constants_frames().len(), 1);
    let runs: Vec<(u32, u64, u64)> = a
        .constant_runs(0)
        .unwrap()
        .iter()
        .map(|r| (r.stream, r.first, r.count))
        .collect();
    assert_eq!(runs, [(0, 0, 10), (0, 11, 59), (1, 10, 10)]);
    assert!(a.read_var_bytes(0).unwrap() == be(&z));
    assert!(a.read_var_bytes(1).unwrap() == be(&r));
    assert!(verify(
        &path,
        &nc3pack::VerifyOptions::default()
            .with_against(&nc)
            .with_threads(2)
    )
    .unwrap()
    .is_intact());
}

#[test]
fn a_scan_recovers_constant_blocks_once_their_constants_frame_is_written() {
    let dir = temp_dir();
    let nc = dir.path().join("c.nc");
    write(&nc);
    let path = pack(&nc, 1, 64);
    let a = Archive::open(&path).unwrap();
    let t = a.constants_frames()[0];
    let bytes = std::fs::read(&path).unwrap();
    let cut = dir.path().join("cut.nc3z");
    let fixed = dir.path().join("fixed.nc3z");
    // Cut just before the constants frame: the 69 constant blocks are lost, nothing else.
    std::fs::write(&cut, &bytes[..t.offset as usize]).unwrap();
    let rep = reindex(
        &cut,
        &fixed,
        &nc3pack::ReindexOptions::default().with_force(true),
    )
    .unwrap();
    assert_eq!((rep.blocks, rep.lost.len()), (120, 69));
    assert!(rep
        .lost
        .iter()
        .all(|(v, b)| (v == "variable \"z\"" && *b != 10) || (v == "variable \"r\"" && *b >= 50)));
    // Cut after it (the index and footer gone): everything, byte for byte.
    let end = t.offset as usize + 36 + t.stored_len as usize;
    std::fs::write(&cut, &bytes[..end]).unwrap();
    let rep = reindex(
        &cut,
        &fixed,
        &nc3pack::ReindexOptions::default().with_force(true),
    )
    .unwrap();
    assert!(rep.lost.is_empty(), "{rep:?}");
    let b = Archive::open(&fixed).unwrap();
    assert_eq!(b.constants_frames().len(), 1);
    assert_eq!(b.constant_runs(0).unwrap(), a.constant_runs(0).unwrap());
    assert!(verify(
        &fixed,
        &nc3pack::VerifyOptions::default()
            .with_against(&nc)
            .with_threads(2)
    )
    .unwrap()
    .is_intact());
    let back = dir.path().join("back.nc");
    unpack_file(
        &fixed,
        &back,
        &nc3pack::UnpackOptions::default()
            .with_force(true)
            .with_threads(2),
    )
    .unwrap();
    assert!(std::fs::read(&back).unwrap() == std::fs::read(&nc).unwrap());
}

#[test]
fn more_runs_than_one_frame_holds_go_to_several_frames() {
    let dir = temp_dir();
    let nc = dir.path().join("steps.nc");
    // 5000 blocks of two equal ints, each block another value: 5000 runs of one block.
    let mut ds = netcdf3::DataSet::new();
    ds.add_fixed_dim("n", 10_000).unwrap();
    ds.add_var_i32("steps", &["n"]).unwrap();
    let v: Vec<i32> = (0..10_000).map(|i| i / 2 * 7 - 3000).collect();
    let mut w = netcdf3::FileWriter::open(&nc).unwrap();
    w.set_def(&ds, netcdf3::Version::Classic, 0).unwrap();
    w.write_var_i32("steps", &v).unwrap();
    w.close().unwrap();
    let path = pack(&nc, 1, 8);
    let a = Archive::open(&path).unwrap();
    assert_eq!(a.block_count(0), 5000);
    assert_eq!(a.constants_frames().len(), 2);
    let runs: Vec<ConstantRun> = (0..2).flat_map(|k| a.constant_runs(k).unwrap()).collect();
    assert_eq!(a.constant_runs(0).unwrap().len(), 4096);
    assert_eq!(runs.len(), 5000);
    for (b, r) in runs.iter().enumerate() {
        let x = (b as i32) * 7 - 3000;
        assert_eq!((r.stream, r.first, r.count), (0, b as u64, 1));
        assert_eq!(r.value[..4], x.to_be_bytes());
    }
    let want: Vec<u8> = v.iter().flat_map(|x| x.to_be_bytes()).collect();
    assert!(a.read_var_bytes(0).unwrap() == want);
    assert!(verify(
        &path,
        &nc3pack::VerifyOptions::default()
            .with_against(&nc)
            .with_threads(2)
    )
    .unwrap()
    .is_intact());
    // The whole archive but its index: both frames found, every block back.
    let bytes = std::fs::read(&path).unwrap();
    let cut = dir.path().join("cut.nc3z");
    std::fs::write(&cut, &bytes[..a.index_offset() as usize]).unwrap();
    let fixed = dir.path().join("fixed.nc3z");
    assert!(reindex(
        &cut,
        &fixed,
        &nc3pack::ReindexOptions::default().with_force(true)
    )
    .unwrap()
    .lost
    .is_empty());
    assert!(Archive::open(&fixed).unwrap().read_var_bytes(0).unwrap() == want);
}

/// A frame of codec constant found by a scan is either the block's element (an index entry, as
/// the writer makes it) or kept as a frame: reindex turned a constant frame whose element size is
/// not its stream's into an index entry that reads otherwise (2-byte element of a float
/// variable: padded with zeros) or that no reader opens (8-byte element of a float variable: its
/// high bytes are not zero), and indexed a constant frame with no payload (stored length 0),
/// which no reader opens either: "constant block entry without the constant flag".
#[test]
fn reindex_takes_constant_frames_only_with_their_streams_element_size() {
    use nc3pack::format::{Codec, Filter};
    let dir = temp_dir();
    let nc = dir.path().join("c.nc");
    write(&nc);
    let path = pack(&nc, 1, 64);
    let a = Archive::open(&path).unwrap();
    // Block 10 of z (64 bytes, not constant) has a frame; rewrite it in place as a constant
    // frame with element `value` of `esize` bytes (the bytes left after it are skipped by the
    // scan), CRCs fixed.
    let at = a.entry(0, 10).offset as usize;
    let bytes = std::fs::read(&path).unwrap();
    let forged = |esize: u16, value: &[u8]| {
        let mut b = bytes.clone();
        let h = FrameHeader {
            stored_len: value.len() as u32,
            decoded_len: 64,
            stream: 0,
            block: 10,
            codec: Codec::Constant,
            filter: Filter::None,
            esize,
            payload_crc: crc(value),
        };
        b[at..at + 36].copy_from_slice(&h.encode());
        b[at + 36..at + 36 + value.len()].copy_from_slice(value);
        b
    };
    /// (frame esize, payload, what block 10 reads as after reindex; None: lost). The writer
    /// writes every frame with its stream's element size: a frame with another one is not the
    /// block's (design/FORMAT.md, "Recovery"), even if it would decode to 64 bytes.
    type Case<'a> = (u16, &'a [u8], Option<Vec<u8>>);
    let cases: [Case; 4] = [
        (2, &[0x3f, 0xc0], None),
        (8, &[1, 2, 3, 4, 5, 6, 7, 8], None),
        (4, &[], None),
        // The stream's own element size: an index entry, as the writer makes it.
        (
            4,
            &[0x3f, 0xc0, 0, 0],
            Some(1.5f32.to_be_bytes().repeat(16)),
        ),
    ];
    for (esize, value, want) in cases {
        let input = dir.path().join("forged.nc3z");
        let fixed = dir.path().join("fixed.nc3z");
        std::fs::write(&input, forged(esize, value)).unwrap();
        let rep = reindex(
            &input,
            &fixed,
            &nc3pack::ReindexOptions::default().with_force(true),
        )
        .unwrap();
        let b = Archive::open(&fixed)
            .unwrap_or_else(|e| panic!("esize {esize}, {} bytes: {e}", value.len()));
        let r = verify(&fixed, &nc3pack::VerifyOptions::default().with_threads(1)).unwrap();
        assert!(
            r.damage
                .iter()
                .all(|d| d.part == "block" || d.part == "hash"),
            "{:?}",
            r.damage
        );
        match want {
            Some(w) => {
                assert!(rep.lost.is_empty(), "{rep:?}");
                assert_eq!(b.read_block(0, 10).unwrap(), w, "esize {esize}");
                assert!(b.entry(0, 10).is_constant());
            }
            None => assert_eq!(rep.lost, vec![("variable \"z\"".to_string(), 10)]),
        }
    }
}

#[test]
fn info_counts_constant_blocks_and_constants_frames() {
    let dir = temp_dir();
    let nc = dir.path().join("c.nc");
    write(&nc);
    let path = pack(&nc, 1, 64);
    let a = Archive::open(&path).unwrap();
    let t = a.constants_frames()[0];
    let info = nc3pack::info::describe(&path).unwrap();
    let arch = info.archive().unwrap();
    assert_eq!(arch.constant_blocks, 69);
    assert_eq!(arch.constants_frames, 1);
    assert_eq!(arch.constants_frame_bytes, 36 + u64::from(t.stored_len));
    // z stores one frame (block 10), r fifty (records 0..50); stored bytes count frames only.
    let streams: Vec<_> = arch.streams().collect();
    assert_eq!(streams[0].blocks_by_codec["constant"], 19);
    assert_eq!(streams[1].blocks_by_codec["constant"], 50);
    assert_eq!(
        streams[0].stored_bytes,
        36 + u64::from(a.entry(0, 10).stored_len)
    );
    // The JSON says the same.
    let v = serde_json::to_value(&info).unwrap();
    assert_eq!(v["archive"]["constant_blocks"], 69);
    assert_eq!(
        v["archive"]["streams"][1]["blocks_by_codec"]["constant"],
        50
    );
    let text = info.to_text("c.nc3z");
    assert!(
        text.contains("constant blocks (in the index only): 69, listed in 1 constants frames"),
        "{text}"
    );
}

/// Regression: the index decoder took a constants frame entry with codec 2 (deflate), which
/// design/FORMAT.md does not allow (the writer uses none or zstd, with no filter).
#[test]
fn a_constants_frame_entry_with_another_codec_is_refused() {
    use nc3pack::format::{crc, FOOTER_LEN};
    let dir = temp_dir();
    let nc = dir.path().join("c.nc");
    write(&nc);
    let path = pack(&nc, 1, 64);
    let a = Archive::open(&path).unwrap();
    assert_eq!(a.constants_frames().len(), 1);
    let blocks: u64 = (0..a.stream_count()).map(|s| a.block_count(s)).sum();
    drop(a);
    let bytes = std::fs::read(&path).unwrap();
    let f = bytes.len() - FOOTER_LEN;
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    let (off, len) = (u64_at(f), u64_at(f + 8));
    // The constants frame's entry follows the block entries; byte 12 is its codec, 13 its filter.
    let entry = off + 16 + 16 * blocks as usize;
    for (at, value, what) in [(12, 2u8, "codec deflate"), (13, 1, "filter shuffle")] {
        let mut b = bytes.clone();
        b[entry + at] = value;
        let c = crc(&b[off..off + len]);
        b[f + 16..f + 20].copy_from_slice(&c.to_le_bytes());
        let c = crc(&b[f..f + 24]);
        b[f + 24..f + 28].copy_from_slice(&c.to_le_bytes());
        let forged = dir.path().join("forged.nc3z");
        std::fs::write(&forged, &b).unwrap();
        let e = match Archive::open(&forged) {
            Ok(_) => panic!("{what}: opened"),
            Err(e) => e.to_string(),
        };
        assert!(
            e.contains("constants frame entry") && e.contains(what),
            "{e}"
        );
    }
}
