//! Small streams share: variables of at most `min(4096, block size)` bytes (and small residual
//! bytes) live in a shared stream, the early one for the small fixed variables of a file whose
//! header declares more than 4 MiB, else the late one (design/FORMAT.md, "Small streams share").
//! Checked against files written by the `netcdf3` crate, whose values are the truth.

use crate::util::temp_dir;
use nc3pack::{pack_file, unpack_file, Archive, PackOptions};
use std::path::Path;

/// Writes a classic file: fixed `float f(n1024)` (4096 bytes), `char c(n4097)` (4097 bytes),
/// `byte b(big)` of `big` bytes, record `int t(time)` and `double d(time)` over 1024 records
/// (4096 and 8192 bytes). Returns each variable's values as big-endian bytes.
fn write(path: &Path, big: usize) -> Vec<(&'static str, Vec<u8>)> {
    let mut ds = netcdf3::DataSet::new();
    ds.add_fixed_dim("n1024", 1024).unwrap();
    ds.add_fixed_dim("n4097", 4097).unwrap();
    ds.add_fixed_dim("big", big).unwrap();
    ds.set_unlimited_dim("time", 1024).unwrap();
    ds.add_var_f32("f", &["n1024"]).unwrap();
    ds.add_var_u8("c", &["n4097"]).unwrap();
    ds.add_var_i8("b", &["big"]).unwrap();
    ds.add_var_i32("t", &["time"]).unwrap();
    ds.add_var_f64("d", &["time"]).unwrap();
    let f: Vec<f32> = (0..1024).map(|i| (i as f32 * 0.37).sin() * 20.0).collect();
    let c: Vec<u8> = (0..4097).map(|i| b"ABCDEFGH"[i % 8]).collect();
    let b: Vec<i8> = (0..big).map(|i| ((i * 7) % 13) as i8).collect();
    let t: Vec<i32> = (0..1024).map(|i| 3600 * i).collect();
    let d: Vec<f64> = (0..1024).map(|i| i as f64 / 24.0).collect();
    let mut w = netcdf3::FileWriter::open(path).unwrap();
    w.set_def(&ds, netcdf3::Version::Classic, 0).unwrap();
    w.write_var_f32("f", &f).unwrap();
    w.write_var_u8("c", &c).unwrap();
    w.write_var_i8("b", &b).unwrap();
    w.write_var_i32("t", &t).unwrap();
    w.write_var_f64("d", &d).unwrap();
    w.close().unwrap();
    vec![
        ("f", f.iter().flat_map(|x| x.to_be_bytes()).collect()),
        ("c", c),
        ("b", b.iter().map(|&x| x as u8).collect()),
        ("t", t.iter().flat_map(|x| x.to_be_bytes()).collect()),
        ("d", d.iter().flat_map(|x| x.to_be_bytes()).collect()),
    ]
}

/// Packs `nc` with `block_size`, checks that it restores byte for byte and that every variable
/// reads back as written; returns the archive.
fn pack_and_check(nc: &Path, block_size: u32, truth: &[(&str, Vec<u8>)]) -> Archive {
    let dir = nc.parent().unwrap();
    let z = dir.join(format!("{block_size}.nc3z"));
    // One thread: frames are written in the order blocks complete, which the cut test relies on.
    let opts = PackOptions::default()
        .with_block_size(block_size)
        .with_threads(1);
    pack_file(nc, &z, &opts.clone().with_force(true)).unwrap();
    let back = dir.join("back.nc");
    unpack_file(
        &z,
        &back,
        &nc3pack::UnpackOptions::default()
            .with_force(true)
            .with_threads(2),
    )
    .unwrap();
    assert!(std::fs::read(&back).unwrap() == std::fs::read(nc).unwrap());
    let a = Archive::open(&z).unwrap();
    for (name, want) in truth {
        let v = a.header().var_id(name).unwrap();
        assert!(
            a.read_var_bytes(v).unwrap() == *want,
            "{name} (block size {block_size})"
        );
    }
    a
}

fn var(a: &Archive, name: &str) -> usize {
    a.header().var_id(name).unwrap()
}

#[test]
fn streams_of_at_most_4096_bytes_share_and_larger_ones_do_not() {
    let dir = temp_dir();
    let nc = dir.path().join("small.nc");
    let truth = write(&nc, 100);
    let a = pack_and_check(&nc, 1 << 20, &truth);
    let late = a.residual_stream() + 2;
    assert_eq!(a.stream_count(), a.header().var_count() + 3);
    for (name, member) in [
        ("f", true),
        ("c", false),
        ("b", true),
        ("t", true),
        ("d", false),
    ] {
        let s = var(&a, name);
        assert_eq!(a.is_member(s), member, "{name}");
        // A small file (declaring under 4 MiB) has one shared stream: the late one.
        assert_eq!(a.shared_stream_of(s), member.then_some(late), "{name}");
        assert_eq!(a.block_count(s), if member { 0 } else { 1 }, "{name}");
    }
    // f, b and t (4096 + 100 + 4096 bytes) are stored together, in one block.
    assert_eq!(
        a.stream_len(late),
        4096 + 100 + 4096 + a.layout().residual_len
    );
    assert_eq!(a.block_count(late), 1);
    assert_eq!(a.block_count(late - 1), 0);

    // With 2 KiB blocks only streams of at most 2 KiB share.
    let a = pack_and_check(&nc, 2048, &truth);
    assert!(a.is_member(var(&a, "b")));
    assert!(!a.is_member(var(&a, "f")) && !a.is_member(var(&a, "t")));
}

#[test]
fn a_large_file_keeps_its_small_fixed_variables_in_the_early_stream() {
    let dir = temp_dir();
    let nc = dir.path().join("large.nc");
    let truth = write(&nc, 5 << 20);
    let a = pack_and_check(&nc, 1 << 20, &truth);
    let early = a.residual_stream() + 1;
    assert_eq!(a.shared_stream_of(var(&a, "f")), Some(early));
    assert_eq!(a.shared_stream_of(var(&a, "t")), Some(early + 1));
    assert_eq!(a.stream_len(early), 4096);
    // `nc3pack info --json` says where each small stream went.
    let info = nc3pack::info::describe(&dir.path().join("1048576.nc3z")).unwrap();
    let streams: Vec<_> = info.archive().unwrap().streams().collect();
    let shared_of = |name: &str| {
        streams
            .iter()
            .find(|s| s.name == name)
            .unwrap()
            .shared_stream
    };
    assert_eq!(shared_of("f"), Some("early"));
    assert_eq!(shared_of("t"), Some("late"));
    assert_eq!(shared_of("b"), None);
    let json = serde_json::to_value(&info).unwrap();
    assert_eq!(
        json["archive"]["streams"][var(&a, "f")]["shared_stream"],
        "early"
    );
    assert!(json["archive"]["streams"][var(&a, "b")]
        .get("shared_stream")
        .is_none());

    // Cut the archive right after the big variable's frames: the early shared stream was
    // written before them, so a reindex recovers f; t, written at the end, is lost.
    let z = dir.path().join("1048576.nc3z");
    let bytes = std::fs::read(&z).unwrap();
    let b = var(&a, "b");
    let last = a.entry(b, a.block_count(b) - 1);
    let cut = last.offset as usize + 36 + last.stored_len as usize;
    assert!(a.entry(early, 0).offset < last.offset);
    let cut_path = dir.path().join("cut.nc3z");
    std::fs::write(&cut_path, &bytes[..cut]).unwrap();
    let fixed = dir.path().join("fixed.nc3z");
    let r = nc3pack::reindex(&cut_path, &fixed, &nc3pack::ReindexOptions::default()).unwrap();
    assert!(!r.lost.is_empty());
    let a = Archive::open(&fixed).unwrap();
    assert!(a.read_var_bytes(var(&a, "f")).unwrap() == truth[0].1);
    assert!(a.read_var_bytes(var(&a, "b")).unwrap() == truth[2].1);
    assert!(a.read_var_bytes(var(&a, "t")).is_err());
}
