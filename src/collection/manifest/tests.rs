//! Tests of the manifest: record format, scanner, resume set, appender and verification.

use super::*;
use crate::format::FOOTER_LEN;
use serde_json::{Map, Value};
use std::ffi::OsStr;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

fn entry(name: &[u8]) -> Entry {
    Entry {
        status: Status::Packed,
        name: name.to_vec(),
        input: PathBuf::from(OsStr::from_bytes(&[b"/in/", name].concat())),
        output: PathBuf::from("/out/x.nc3z"),
        size: Some(1000),
        mtime_ns: Some(-5),
        hash: Some(0x0123_4567_89ab_cdef_0011_2233_4455_6677),
        output_size: Some(300),
        output_id: FileId::from_fields(Some(77), Some(1_700_000_000_123_456_789)),
        restored: None,
        seconds: 0.25,
        error: None,
        deleted: true,
        kept: None,
    }
}

#[test]
fn a_manifest_named_twice_counts_where_it_comes_last() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    for (path, size) in [(&a, 1), (&b, 2)] {
        let line = Entry {
            size: Some(size),
            ..entry(b"x.nc")
        };
        std::fs::write(path, line.to_json() + "\n").unwrap();
    }
    let size = |paths: &[PathBuf]| Done::load(paths).unwrap().get(b"x.nc").unwrap().size;
    let d = dir.path().to_path_buf();
    // The directory's files in order: b's line is the last.
    assert_eq!(size(std::slice::from_ref(&d)), 2);
    assert_eq!(size(&[d.clone(), b.clone()]), 2);
    // a named again after the directory: read after b (as it always was), so it wins.
    assert_eq!(size(&[d.clone(), a.clone()]), 1);
    assert_eq!(size(&[a.clone(), d.clone()]), 2);
    assert_eq!(size(&[b, d, a]), 1);
}

#[test]
fn the_short_skipped_line_is_written_as_its_entry_would_be() {
    let mut out = Vec::new();
    for name in [
        &b"a/2001/x.nc"[..],
        b"",
        b"q\"uote\\back\ttab\nnl\x7f.nc",
        b"\x1f.nc",
        b"caf\xe9/\xff\xfe.nc",
        "ü/ñ/日本.nc".as_bytes(),
    ] {
        out.clear();
        Entry::push_done_before(name, &mut out);
        let want = Entry::done_before(name.to_vec()).to_json() + "\n";
        assert_eq!(out, want.as_bytes(), "{}", want);
    }
    // Through the manifest, deferred: the same lines as `write_deferred` of the entries.
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    let (ma, mb) = (Manifest::new(&a), Manifest::new(&b));
    for name in [&b"x.nc"[..], b"y\\.nc", b"\xff.nc"] {
        ma.write_done_before(name).unwrap();
        mb.write_deferred(&Entry::done_before(name.to_vec()))
            .unwrap();
    }
    drop((ma, mb));
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}

#[test]
fn names_with_newlines_quotes_and_bytes_that_are_not_utf8_round_trip() {
    for name in [
        &b"a b/c\nd.nc"[..],
        b"q\"uote\\back\ttab.nc",
        b"caf\xe9/\xff\xfe.nc",
        "ü/ñ.nc".as_bytes(),
    ] {
        let e = entry(name);
        let line = e.to_json();
        assert!(!line.contains('\n'), "{line}");
        // Standard JSON: serde_json (independent of the writer's escaping) reads it.
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["status"], "packed");
        if std::str::from_utf8(name).is_err() {
            assert!(v.get("name_hex").is_some(), "{line}");
            assert!(v.get("input_hex").is_some(), "{line}");
        } else {
            assert_eq!(v["name"].as_str().unwrap().as_bytes(), name);
        }
        assert_eq!(Entry::parse(line.as_bytes()), Some(e));
    }
    // The hex of a non-UTF-8 name is its bytes.
    let v: Value = serde_json::from_str(&entry(b"\xe9").to_json()).unwrap();
    assert_eq!(v["name_hex"], "e9");
    assert_eq!(v["name"], "\u{fffd}");
}

#[test]
fn the_hash_is_written_as_32_hex_digits() {
    let mut e = entry(b"x");
    e.hash = Some(1);
    let v: Value = serde_json::from_str(&e.to_json()).unwrap();
    assert_eq!(v["xxh3"], "00000000000000000000000000000001");
}

#[test]
fn a_cut_last_line_is_skipped_and_the_next_write_starts_a_new_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.jsonl");
    let full = entry(b"one").to_json();
    let cut = &entry(b"two").to_json()[..20];
    std::fs::write(&p, format!("{full}\n{cut}")).unwrap();
    let mut seen = vec![];
    read(&p, |n, e| seen.push((n, e.map(|e| e.name)))).unwrap();
    assert_eq!(seen, [(1, Some(b"one".to_vec()))]);
    let m = Manifest::new(&p);
    m.write(&entry(b"three")).unwrap();
    drop(m);
    let mut seen = vec![];
    read(&p, |n, e| seen.push((n, e.map(|e| e.name)))).unwrap();
    assert_eq!(
        seen,
        [
            (1, Some(b"one".to_vec())),
            (2, None),
            (3, Some(b"three".to_vec()))
        ]
    );
}

/// Lines are read across the reads' boundaries, longer than a read, blank, or ended by
/// CRLF, with their numbers; the whole file split at newlines is the reference.
#[test]
fn lines_longer_than_a_read_and_across_reads_come_whole_and_numbered() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.jsonl");
    let long = |n: usize, c: u8| vec![c; n];
    let mut lines: Vec<Vec<u8>> = vec![
        b"first".to_vec(),
        long((1 << 20) - 3, b'a'),
        b"".to_vec(),
        long(3 << 20, b'b'),
        b"  \t".to_vec(),
        b"crlf\r".to_vec(),
    ];
    lines.extend((0..20_000).map(|k| format!("line {k}").into_bytes()));
    lines.push(long(5 << 20, b'c'));
    let mut text = lines.join(&b'\n');
    text.extend_from_slice(b"\ncut short");
    std::fs::write(&p, &text).unwrap();
    let mut seen = vec![];
    read_lines(&p, |n, l| seen.push((n, l.to_vec()))).unwrap();
    let want: Vec<(u64, Vec<u8>)> = (1..)
        .zip(lines)
        .filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace))
        .collect();
    assert_eq!(seen.len(), want.len());
    assert!(seen == want);
}

/// Ranges that meet, cut anywhere (inside a line, at a newline, just after one, inside
/// a line longer than a read), read every line once and in order, as the whole file does.
#[test]
fn ranges_that_meet_read_each_line_once() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.jsonl");
    let mut lines: Vec<Vec<u8>> = vec![b"a".to_vec(), b"".to_vec(), vec![b'x'; 3 << 20]];
    lines.extend((0..5000).map(|k| format!("line {k}").into_bytes()));
    lines.push(b"z".to_vec());
    let mut text = lines.join(&b'\n');
    text.extend_from_slice(b"\ncut short");
    std::fs::write(&p, &text).unwrap();
    let mut want = vec![];
    read_lines(&p, |_, l| want.push(l.to_vec())).unwrap();
    assert_eq!(want.len(), lines.len() - 1, "the blank line is left out");
    let file = std::fs::File::open(&p).unwrap();
    let len = text.len() as u64;
    let newline = 2 + (3 << 20) + 1; // the offset of the newline after the long line
    let cuts: Vec<Vec<u64>> = vec![
        vec![1],
        vec![2],
        vec![3],
        vec![4],
        vec![100],
        vec![newline, newline + 1, newline + 2],
        vec![newline - 1, len - 10, len - 1],
        vec![len / 3, len / 2, 2 * len / 3],
        (1..64).map(|k| len * k / 64).collect(),
        vec![len],
        vec![len + 5],
    ];
    for cut in cuts {
        let bounds: Vec<u64> = std::iter::once(0)
            .chain(cut.iter().copied())
            .chain(std::iter::once(u64::MAX))
            .collect();
        let mut seen = vec![];
        for w in bounds.windows(2) {
            read_line_range(&p, &file, w[0], w[1], |_, l| seen.push(l.to_vec())).unwrap();
        }
        assert_eq!(seen.len(), want.len(), "cut at {cut:?}");
        assert!(seen == want, "cut at {cut:?}");
    }
}

/// A manifest parsed by several threads holds what one thread reads: each name's last
/// record, also when its lines lie in different parts.
#[test]
fn done_read_in_parts_equals_done_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.jsonl");
    let mut text = String::new();
    // 40,000 names, each packed twice far apart (the later wins), with short `skipped`
    // lines (no record of their own) between.
    for round in 0..2u64 {
        for k in 0..40_000u64 {
            let mut e = entry(format!("set/{k}.nc").as_bytes());
            e.size = Some(k + round);
            e.hash = Some(u128::from(k) << 64 | u128::from(round));
            text.push_str(&e.to_json());
            text.push('\n');
            if k % 7 == 0 {
                text.push_str(&Entry::done_before(format!("set/{k}.nc").into_bytes()).to_json());
                text.push('\n');
            }
        }
    }
    std::fs::write(&p, &text).unwrap();
    let file = std::fs::File::open(&p).unwrap();
    let len = text.len() as u64;
    assert!(
        len > 8 * PARALLEL_PART_BYTES,
        "{len} bytes: parts of 1 MiB and more"
    );
    let mut whole = Vec::new();
    read_lines(&p, |_, line| {
        if let Some((name, r)) = Done::parse(line) {
            whole.push((key(&name), r));
        }
    })
    .unwrap();
    let whole = Done::from_records(whole);
    assert_eq!(whole.len(), 40_000);
    for threads in [1, 2, 3, 8] {
        let mut found = Vec::new();
        let share = crate::collection::Shard::default();
        read_records(&p, &file, len, threads, share, &mut found).unwrap();
        assert_eq!(Done::from_records(found), whole, "{threads} threads");
    }
    let r = whole.get(b"set/123.nc").unwrap();
    assert_eq!((r.size, r.hash), (124, 123 << 64 | 1));
}

/// What the line says read through serde_json's own map of every field (independent of
/// the reader of a few fields): the fields an entry takes, the last when one is repeated.
fn through_value(line: &str) -> Option<Entry> {
    let Value::Object(m) = serde_json::from_str(line).ok()? else {
        return None;
    };
    let bytes = |k: &str| -> Option<Vec<u8>> {
        match m.get(&format!("{k}_hex")) {
            Some(h) => {
                let h = h.as_str()?;
                (0..h.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok())
                    .collect()
            }
            None => Some(m.get(k)?.as_str()?.as_bytes().to_vec()),
        }
    };
    // An absent path (no field, no `_hex` twin) is an empty one.
    let path = |k: &str| match (m.get(k), m.get(&format!("{k}_hex"))) {
        (None, None) => Some(PathBuf::new()),
        _ => bytes(k).map(|b| PathBuf::from(std::ffi::OsString::from_vec(b))),
    };
    Some(Entry {
        status: match m.get("status")?.as_str()? {
            "packed" => Status::Packed,
            "skipped" => Status::Skipped,
            "failed" => Status::Failed,
            _ => return None,
        },
        name: bytes("name")?,
        input: path("input")?,
        output: path("output")?,
        size: m.get("size").and_then(Value::as_u64),
        mtime_ns: m.get("mtime_ns").and_then(Value::as_i64),
        hash: match m.get("xxh3") {
            Some(v) => Some(u128::from_str_radix(v.as_str()?, 16).ok()?),
            None => None,
        },
        output_size: m.get("output_size").and_then(Value::as_u64),
        output_id: FileId::from_fields(
            m.get("output_ino").and_then(Value::as_u64),
            m.get("output_ctime_ns").and_then(Value::as_i64),
        ),
        restored: match (m.get("restored_size"), m.get("restored_xxh3")) {
            (None, None) => None,
            (Some(s), Some(h)) => Some((s.as_u64()?, u128::from_str_radix(h.as_str()?, 16).ok()?)),
            _ => return None,
        },
        seconds: m.get("seconds").and_then(Value::as_f64).unwrap_or(0.0),
        error: m.get("error").and_then(Value::as_str).map(String::from),
        deleted: m.get("deleted").and_then(Value::as_bool).unwrap_or(false),
        kept: m.get("kept").and_then(Value::as_str).map(String::from),
    })
}

#[test]
fn a_line_reads_as_a_map_of_all_its_fields_would_give_it() {
    let lines = [
        entry(b"plain").to_json(),
        entry(b"caf\xe9\n\"q\"").to_json(),
        // Repeated fields (the last counts), unknown ones of every kind, odd types.
        r#"{"status":"failed","status":"packed","name":"a","name":"b","input":"/i","output":"/o","x":{"y":[1,{"z":null}]},"size":"12","mtime_ns":-3.5,"seconds":"no","deleted":1}"#.into(),
        r#"{"input":"/i\u00e9\n","output":"/o","name":"n","status":"skipped","size":7,"mtime_ns":-9,"xxh3":"ff","output_size":99,"ratio":0.07,"error":null,"deleted":true}"#.into(),
        r#"{"status":"packed","name":"n","name_hex":"6e0a","input":"/i","output":"/o","kept":"a link"}"#.into(),
        // No output (a path that could not be read), no paths (a short skipped line).
        r#"{"status":"packed","name":"n","input":"/i"}"#.into(),
        Entry::done_before(b"n\xff".to_vec()).to_json(),
        // A lossy archive's line: both of what it restores.
        Entry {
            restored: Some((1234, 0xabc << 64 | 0xdef)),
            ..entry(b"lossy")
        }
        .to_json(),
        // The archive's identity: an inode 0, or one of the two alone, is none.
        r#"{"status":"packed","name":"n","size":1,"mtime_ns":2,"xxh3":"ff","output_size":3,"output_ino":0,"output_ctime_ns":5}"#.into(),
        r#"{"status":"packed","name":"n","size":1,"mtime_ns":2,"xxh3":"ff","output_size":3,"output_ino":4}"#.into(),
        r#"{"status":"skipped","name":"n","size":1,"mtime_ns":2,"xxh3":"ff","output_size":3,"output_ctime_ns":-5,"output_ino":4}"#.into(),
        // Not entries: one of the two alone, or of another type.
        r#"{"status":"packed","name":"n","size":1,"mtime_ns":2,"xxh3":"ff","output_size":3,"restored_size":4}"#.into(),
        r#"{"status":"packed","name":"n","size":1,"mtime_ns":2,"xxh3":"ff","output_size":3,"restored_xxh3":"ee"}"#.into(),
        r#"{"status":"packed","name":"n","size":1,"mtime_ns":2,"xxh3":"ff","output_size":3,"restored_size":"4","restored_xxh3":"ee"}"#.into(),
        r#"{"status":"packed","name":"n","size":1,"mtime_ns":2,"xxh3":"ff","output_size":3,"restored_size":4,"restored_xxh3":"zz"}"#.into(),
        // Not entries.
        r#"{"status":"packed","name":"n","name_hex":"6","input":"/i","output":"/o"}"#.into(),
        r#"{"status":"packed","name":"n","input":"/i","output":"/o","xxh3":"zz"}"#.into(),
        r#"{"status":"done","name":"n","input":"/i","output":"/o"}"#.into(),
        r#"{"status":"packed","name":"n","input":"/i","output_hex":"zz"}"#.into(),
        r#"{"status":"packed","name":7,"input":"/i","output":"/o"}"#.into(),
        r#"["status","packed"]"#.into(),
        r#"{"status":"packed","name":"n","input":"/i","output":"/o"} trailing"#.into(),
        "".into(),
    ];
    let mut entries = 0;
    for line in &lines {
        let want = through_value(line);
        entries += usize::from(want.is_some());
        assert_eq!(Entry::parse(line.as_bytes()), want, "{line}");
    }
    assert_eq!(entries, 11);
    // A rerun reads the same records from each line (for a lossy archive, the hash and
    // length of what it restores, which its ends record).
    for line in &lines {
        let want = Entry::parse(line.as_bytes()).and_then(|e| {
            let (hash, restored_size) = match e.restored {
                Some((size, hash)) => (hash, Some(std::num::NonZeroU64::new(size)?)),
                None => (e.hash?, None),
            };
            e.hash?;
            let r = Record {
                size: e.size?,
                mtime_ns: e.mtime_ns?,
                hash,
                output_size: e.output_size?,
                restored_size,
                output_id: e.output_id,
            };
            (e.status != Status::Failed).then_some((e.name, r))
        });
        assert_eq!(Done::parse(line.as_bytes()), want, "{line}");
    }
}

#[test]
fn deferred_lines_are_written_in_order_before_the_next_line_at_sync_and_on_drop() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("d/m.jsonl");
    let names = |p: &Path| {
        let mut seen = vec![];
        if p.exists() {
            read(p, |_, e| seen.push(e.unwrap().name)).unwrap();
        }
        seen
    };
    let m = Manifest::new(&p);
    m.write_deferred(&entry(b"1")).unwrap();
    m.write_deferred(&entry(b"2")).unwrap();
    assert_eq!(names(&p), Vec::<Vec<u8>>::new());
    m.write(&entry(b"3")).unwrap();
    assert_eq!(names(&p), [b"1", b"2", b"3"]);
    m.write_deferred(&entry(b"4")).unwrap();
    m.sync().unwrap();
    assert_eq!(names(&p), [b"1", b"2", b"3", b"4"]);
    m.write_deferred(&entry(b"5")).unwrap();
    drop(m);
    assert_eq!(names(&p), [b"1", b"2", b"3", b"4", b"5"]);
    // Many deferred lines are written once they fill the buffer, whole lines only.
    let m = Manifest::new(&p);
    let line = entry(b"6").to_json().len() + 1;
    let n = DEFERRED_BYTES / line + 1;
    for _ in 0..n {
        m.write_deferred(&entry(b"6")).unwrap();
    }
    assert_eq!(names(&p).len(), 5 + n);
    std::mem::forget(m);
}

/// An archive of `samples/NAME` packed into `dir`, and the sample's length.
fn packed(dir: &Path, name: &str) -> (PathBuf, u64) {
    let input = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(name);
    let out = dir.join(format!("{name}.nc3z"));
    crate::pack_file(&input, &out, &crate::PackOptions::fast().with_threads(1)).unwrap();
    (out, std::fs::metadata(&input).unwrap().len())
}

#[test]
fn the_recorded_length_check_takes_exactly_that_length_and_what_check_ends_takes() {
    let dir = tempfile::tempdir().unwrap();
    let mut lens = vec![];
    for sample in ["scalars.nc", "classic_records.nc", "obs_points.nc"] {
        let (z, size) = packed(dir.path(), sample);
        let bytes = std::fs::read(&z).unwrap();
        let len = bytes.len() as u64;
        lens.push(len);
        let (full_len, hash) = check_ends(&z, size, None).unwrap();
        assert_eq!(full_len, len);
        assert_eq!(
            check_recorded_ends(&z, len, size, Some(hash)).unwrap(),
            hash
        );
        assert!(matches!(
            check_recorded_ends(&z, len, size, Some(hash ^ 1)),
            Err(EndsError::Hash { .. })
        ));
        assert!(matches!(
            check_recorded_ends(&z, len, size + 1, None),
            Err(EndsError::Size { .. })
        ));
        // Another length recorded than the file has: longer, shorter.
        for recorded in [len + 1, len - 1] {
            assert!(
                matches!(
                    check_recorded_ends(&z, recorded, size, None),
                    Err(EndsError::Length { .. } | EndsError::Footer(_))
                ),
                "{sample} {recorded}"
            );
        }
        // Bytes appended after an intact footer: the footer is not at the end any more.
        let longer = dir.path().join("longer.nc3z");
        std::fs::write(
            &longer,
            [&bytes[..], &bytes[bytes.len() - FOOTER_LEN..]].concat(),
        )
        .unwrap();
        assert!(matches!(
            check_recorded_ends(&longer, len, size, None),
            Err(EndsError::Length { .. })
        ));
        // A flipped byte in the footer.
        let mut bad = bytes.clone();
        let i = bad.len() - 10;
        bad[i] ^= 0x40;
        std::fs::write(&longer, &bad).unwrap();
        assert!(check_recorded_ends(&longer, len, size, None).is_err());
        assert!(check_ends(&longer, size, None).is_err());
    }
    // Small (read whole) and large (read in two) archives both covered.
    assert!(lens.iter().any(|&l| l <= WHOLE_READ), "{lens:?}");
    assert!(lens.iter().any(|&l| l > WHOLE_READ), "{lens:?}");
    // Not a file: a directory, a FIFO (not waited on).
    let d = dir.path().join("dir.nc3z");
    std::fs::create_dir(&d).unwrap();
    assert!(check_recorded_ends(&d, 200, 1, None).is_err());
    let fifo = dir.path().join("fifo.nc3z");
    let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a plain system call on a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    assert!(check_recorded_ends(&fifo, 200, 1, None).is_err());
}

/// Puts `bytes` under `key` as a string; when they are not UTF-8, lossily, and exactly in hex
/// under `key_hex`.
fn put_bytes(m: &mut Map<String, Value>, key: &str, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(s) => {
            m.insert(key.into(), s.into());
        }
        Err(_) => {
            m.insert(key.into(), String::from_utf8_lossy(bytes).into());
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            m.insert(format!("{key}_hex"), hex.into());
        }
    }
}

/// The line's JSON through a serde_json map of its fields (what `to_json` wrote before it
/// wrote them directly).
fn through_map(e: &Entry) -> String {
    let mut m = Map::new();
    m.insert("status".into(), e.status.name().into());
    put_bytes(&mut m, "name", &e.name);
    put_bytes(&mut m, "input", e.input.as_os_str().as_bytes());
    put_bytes(&mut m, "output", e.output.as_os_str().as_bytes());
    if let Some(s) = e.size {
        m.insert("size".into(), s.into());
    }
    if let Some(t) = e.mtime_ns {
        m.insert("mtime_ns".into(), t.into());
    }
    if let Some(h) = e.hash {
        m.insert("xxh3".into(), format!("{h:032x}").into());
    }
    if let Some(id) = e.output_id {
        m.insert("output_ino".into(), id.ino.get().into());
        m.insert("output_ctime_ns".into(), id.ctime_ns.into());
    }
    if let Some(o) = e.output_size {
        m.insert("output_size".into(), o.into());
        if let Some(s) = e.size {
            let ratio = s as f64 / o.max(1) as f64;
            m.insert("ratio".into(), ((ratio * 1000.0).round() / 1000.0).into());
        }
    }
    if let Some((size, hash)) = e.restored {
        m.insert("restored_size".into(), size.into());
        m.insert("restored_xxh3".into(), format!("{hash:032x}").into());
    }
    m.insert("seconds".into(), ((e.seconds * 1e6).round() / 1e6).into());
    if let Some(e) = &e.error {
        m.insert("error".into(), e.as_str().into());
    }
    if e.deleted {
        m.insert("deleted".into(), true.into());
    }
    if let Some(k) = &e.kept {
        m.insert("kept".into(), k.as_str().into());
    }
    Value::Object(m).to_string()
}

#[test]
fn lines_are_written_as_a_serde_json_map_of_the_fields_would_be() {
    let mut entries = vec![];
    for name in [
        &b"plain.nc"[..],
        b"a \"q\"\n\t\\/\x01.nc",
        b"caf\xe9/\xff.nc",
        "ü/ñ.nc".as_bytes(),
    ] {
        let mut e = entry(name);
        entries.push(e.clone());
        e.output = PathBuf::from(OsStr::from_bytes(&[b"/o/", name].concat()));
        e.deleted = false;
        e.kept = Some("a symbolic link: \"kept\"".into());
        e.error = Some("bad\nthing \u{7f}".into());
        entries.push(e.clone());
        e.size = None;
        e.mtime_ns = Some(i64::MIN);
        e.hash = None;
        e.seconds = 1e-9;
        entries.push(e.clone());
        e.restored = Some((u64::MAX, 7));
        entries.push(e.clone());
        e.output_size = None;
        e.size = Some(u64::MAX);
        e.seconds = 12_345.678_901_2;
        e.status = Status::Failed;
        entries.push(e.clone());
        e.output_size = Some(0);
        e.seconds = f64::NAN;
        entries.push(e);
    }
    for e in &entries {
        assert_eq!(e.to_json(), through_map(e));
    }
}

#[test]
fn the_scan_of_a_line_reads_what_serde_json_reads_or_leaves_it_to_serde_json() {
    fn serde(l: &[u8]) -> Option<DoneFields<'_>> {
        serde_json::from_slice(l).ok()
    }
    let mut e = entry(b"set00/caf\xc3\xa9 x.nc");
    e.size = Some(1588);
    e.mtime_ns = Some(1_795_408_855_757_575_307);
    e.hash = Some(0xa1e1_3234_c6b9_99ca_87ef_1066_7db9_e939);
    e.output_size = Some(788);
    e.restored = Some((1620, 0x5eed << 64 | 0xfeed));
    e.seconds = 0.001086;
    let written = e.to_json();
    // The lines a batch writes are read by the scan, as serde_json reads them.
    let scanned = scan_done_fields(written.as_bytes());
    assert!(scanned.is_some(), "{written}");
    assert_eq!(scanned, serde(written.as_bytes()));
    let scanned = scanned.unwrap();
    assert_eq!(scanned.size, Some(1588));
    assert_eq!(
        (scanned.output_ino, scanned.output_ctime_ns),
        (Some(77), Some(1_700_000_000_123_456_789))
    );
    let lines = [
        r#"{}"#,
        r#" { } "#,
        r#"{"status":"packed","size":0,"mtime_ns":-9,"output_size":18446744073709551615}"#,
        r#"{"size":18446744073709551616}"#,
        r#"{"mtime_ns":9223372036854775807,"x":-9223372036854775808}"#,
        r#"{"mtime_ns":9223372036854775808}"#,
        r#"{"mtime_ns":-9223372036854775808}"#,
        r#"{"mtime_ns":-9223372036854775809}"#,
        r#"{"size":-0,"mtime_ns":-0}"#,
        r#"{"size":1.0}"#,
        r#"{"size":1e3}"#,
        r#"{"size":-1}"#,
        r#"{"size":01}"#,
        r#"{"size":"7","mtime_ns":null,"output_size":true}"#,
        r#"{"size":7,"size":null}"#,
        r#"{"restored_size":7,"restored_xxh3":"ff"}"#,
        r#"{"restored_size":"7","restored_xxh3":7}"#,
        r#"{"restored_size":-7,"restored_xxh3":null}"#,
        r#"{"restored_size":true,"restored_xxh3":false}"#,
        r#"{"output_ino":1,"output_ctime_ns":-1}"#,
        r#"{"output_ino":-1,"output_ctime_ns":"1"}"#,
        r#"{"output_ino":1.0,"output_ctime_ns":9223372036854775808}"#,
        r#"{"output_ino":null,"output_ctime_ns":true}"#,
        r#"{"size":null,"size":7}"#,
        r#"{"ratio":1.5e-3,"seconds":-0.0,"x":1E+400,"y":0}"#,
        r#"{"ratio":1.}"#,
        r#"{"ratio":.5}"#,
        r#"{"ratio":1e}"#,
        r#"{"ratio":-}"#,
        r#"{"status":null}"#,
        r#"{"status":7}"#,
        r#"{"status":true}"#,
        r#"{"name":"a\"b"}"#,
        r#"{"name":"a\\b"}"#,
        r#"{"name":"\u0041"}"#,
        "{\"name\":\"a\tb\"}",
        r#"{"name":"a","name":"b","xxh3":"ff"}"#,
        r#"{"x":{"status":"failed"},"status":"packed"}"#,
        r#"{"x":[1,2],"status":"packed"}"#,
        r#"{"x":tru}"#,
        r#"{"x":nul,"y":1}"#,
        r#"{"x":true,"y":false,"z":null}"#,
        r#"{"status":"packed",}"#,
        r#"{"status":"packed""name":"n"}"#,
        r#"{"status" : "packed" , "name" :	"n"}"#,
        r#"{"status":"packed"} x"#,
        r#"{"status":"packed"}}"#,
        r#"{"status":"packed""#,
        r#"{"status":"packed"#,
        r#"{"status""#,
        r#"{"status"}"#,
        r#"{"#,
        r#"[]"#,
        r#""status""#,
        "",
        "   ",
    ];
    let mut scanned = 0;
    for l in lines {
        if let Some(f) = scan_done_fields(l.as_bytes()) {
            scanned += 1;
            assert_eq!(Some(f), serde(l.as_bytes()), "{l}");
        }
    }
    assert!(scanned >= 11, "{scanned}");
    // Bytes that are not UTF-8, in a field a rerun skips.
    assert_eq!(scan_done_fields(b"{\"x\":\"\xff\"}"), None);
    // Every line made by changing one byte of a written one, or cutting it short.
    let w = written.as_bytes();
    for at in 0..w.len() {
        for c in *b"\"\\{}[],:0-.e+ tfn\x01a\xff" {
            let mut l = w.to_vec();
            l[at] = c;
            if let Some(f) = scan_done_fields(&l) {
                assert_eq!(Some(f), serde(&l), "{}", String::from_utf8_lossy(&l));
            }
        }
        if let Some(f) = scan_done_fields(&w[..at]) {
            assert_eq!(Some(f), serde(&w[..at]), "{}", &written[..at]);
        }
    }
}

#[test]
fn only_lines_written_undeferred_make_sync_sync_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.jsonl");
    let m = Manifest::new(&p);
    let syncs = |m: &Manifest| m.state.lock().unwrap().syncs;
    m.write_deferred(&entry(b"1")).unwrap();
    m.write_deferred(&entry(b"2")).unwrap();
    m.sync().unwrap();
    // Written, not synced.
    assert_eq!(std::fs::read_to_string(&p).unwrap().lines().count(), 2);
    assert_eq!(syncs(&m), 0);
    m.write(&entry(b"3")).unwrap();
    m.write_deferred(&entry(b"4")).unwrap();
    m.sync().unwrap();
    assert_eq!(syncs(&m), 1);
    assert_eq!(std::fs::read_to_string(&p).unwrap().lines().count(), 4);
    m.write_deferred(&entry(b"5")).unwrap();
    m.sync().unwrap();
    assert_eq!(syncs(&m), 1);
    m.write(&entry(b"6")).unwrap();
    m.sync().unwrap();
    assert_eq!(syncs(&m), 2);
}

#[test]
fn the_resume_set_finds_each_names_last_record_and_no_other_name() {
    let record = |size: u64| Record {
        size,
        mtime_ns: 7,
        hash: u128::from(size) << 3,
        output_size: size / 2,
        restored_size: None,
        output_id: FileId::from_fields(Some(size + 1), Some(-1)),
    };
    for n in [0u64, 1, 15, 16, 17, 1000, 20_000] {
        // Every name once, then every third name again with another size (the later wins).
        let name = |i: u64| format!("d{}/f{i}.nc", i % 7).into_bytes();
        let mut records: Vec<(u128, Record)> = (0..n).map(|i| (key(&name(i)), record(i))).collect();
        records.extend(
            (0..n)
                .step_by(3)
                .map(|i| (key(&name(i)), record(i + 1_000_000))),
        );
        let done = Done::from_records(records);
        assert_eq!(done.len() as u64, n);
        for i in 0..n {
            let want = if i % 3 == 0 { i + 1_000_000 } else { i };
            assert_eq!(done.get(&name(i)), Some(&record(want)), "{n} names: {i}");
        }
        for i in n..n + 100 {
            assert_eq!(done.get(&name(i)), None, "{n} names: {i} is not one");
        }
    }
}

/// A batch refuses a manifest path that appending to would damage, or where an archive may go,
/// and takes a missing, empty or real manifest.
#[test]
fn a_manifest_path_that_is_no_manifest_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let at = |n: &str, bytes: Option<&[u8]>| {
        let p = dir.path().join(n);
        if let Some(b) = bytes {
            std::fs::write(&p, b).unwrap();
        }
        p
    };
    let mut archive = crate::format::LEAD_MAGIC.to_vec();
    archive.extend_from_slice(&[1, 0, 0, 0]);
    for (p, what) in [
        (at("a.nc.nc3z", None), "named like an archive"),
        (
            at("b.nc.nc3z", Some(b"{\"name\":\"x\"}\n")),
            "named like an archive",
        ),
        (at("archive.bin", Some(&archive)), "an nc3pack archive"),
        (at("x.nc", Some(b"CDF\x01\0\0\0\0")), "a netCDF file"),
        (at("y.nc", Some(b"\x89HDF\r\n\x1a\n")), "a netCDF file"),
        (at("notes.txt", Some(b"  some notes\n")), "JSON object"),
    ] {
        let before = std::fs::read(&p).ok();
        let e = check_manifest_path(&p).unwrap_err();
        let crate::Error::Refused { path, what: r } = &e else {
            panic!("{e}")
        };
        assert_eq!(path, &p);
        assert!(r.to_string().contains(what), "{e}");
        assert_eq!(std::fs::read(&p).ok(), before, "{e}");
    }
    for p in [
        at("new.jsonl", None),
        at("empty.jsonl", Some(b"")),
        at("blank.jsonl", Some(b"\n \n")),
        at("m.jsonl", Some(b"{\"name\":\"x\"}\n{\"na")),
    ] {
        check_manifest_path(&p).unwrap();
    }
}
