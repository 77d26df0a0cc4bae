//! The batch's own unit tests: names joined as paths, shares of the inputs.

use super::*;

/// Paths joined as bytes are the paths `Path::join` makes (the walk's file names and the
/// archive names of a rerun's skip path are joined so).
#[test]
fn paths_join_as_path_join_does() {
    for dir in ["/", "/out", "/out/", "out", "/a b/c"] {
        for name in ["x.nc", "set00/x.nc", ".hidden", "\u{e9}t\u{e9}.nc"] {
            let mut buf = Vec::new();
            push_joined(&mut buf, dir.as_bytes(), name.as_bytes());
            let want = Path::new(dir).join(name);
            assert_eq!(buf, want.as_os_str().as_bytes(), "{dir} + {name}");
        }
    }
    let p = plan(
        [Ok("samples".into())],
        "/tmp/out/".as_ref(),
        None,
        Shard::default(),
    )
    .unwrap();
    assert!(!p.is_empty());
    for i in 0..p.len() {
        let mut want = Path::new("/tmp/out/").join(OsStr::from_bytes(p.name(i)));
        want.as_mut_os_string().push(".nc3z");
        assert_eq!(p.output(i), want);
    }
}

/// A shard's share is the inputs whose names it owns ([`Shard::owns`]), in byte order, once
/// each, whether the paths come in order (a sorted list: no order is made) or not, with
/// duplicates, given by name or found; the shares of N shards cover every input exactly once.
#[test]
fn shares_are_the_owned_names_in_byte_order_however_the_paths_come() {
    let dir = tempfile::tempdir().unwrap();
    let mut names: Vec<String> = (0..60).map(|k| format!("d{}/f{k:02}.nc", k % 3)).collect();
    for n in &names {
        let p = dir.path().join(n);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, b"CDF\x01").unwrap();
    }
    names.sort();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let paths = |names: &[String]| -> Vec<Result<PathBuf>> {
        names.iter().map(|n| Ok(root.join(n))).collect()
    };
    let mut reversed = names.clone();
    reversed.reverse();
    let mut twice = names.clone();
    twice.extend(names.iter().step_by(4).cloned());
    let tree = || vec![Ok(root.clone())];
    for count in [1u64, 2, 3] {
        let mut covered = vec![0; names.len()];
        for index in 0..count {
            let shard = Shard { index, count };
            let want: Vec<&[u8]> = names
                .iter()
                .map(|n| n.as_bytes())
                .filter(|n| shard.owns(n))
                .collect();
            // 60 names in 3 shares: none is empty (a share by hash, not a fixed count).
            assert!(!want.is_empty(), "{index}/{count}");
            for (k, n) in names.iter().enumerate() {
                covered[k] += usize::from(shard.owns(n.as_bytes()));
            }
            for (what, inputs) in [
                ("sorted", paths(&names)),
                ("reversed", paths(&reversed)),
                ("twice", paths(&twice)),
                ("found", tree()),
            ] {
                let p = plan(inputs, "/tmp/out".as_ref(), Some(&root), shard).unwrap();
                let got: Vec<&[u8]> = (0..p.len()).map(|i| p.name(i)).collect();
                assert_eq!(got, want, "{what}, shard {index}/{count}");
                let given = (0..p.len()).all(|i| p.given(i));
                assert_eq!(given, what != "found", "{what}");
            }
        }
        assert!(covered.iter().all(|&c| c == 1), "{count}: {covered:?}");
    }
}

/// A file `root/n` (its directories made) that starts as a netCDF file does.
fn stub(root: &Path, n: &str) {
    let p = root.join(n);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, b"CDF\x01").unwrap();
}

/// A file `x` beside a directory `x.nc3z` of inputs is refused by every shard, whichever
/// holds `x` or the files below `x.nc3z` (each shard finds the same), found or given; a
/// file `x` that is not among the inputs is no conflict.
#[test]
fn an_archive_and_a_directory_are_refused_by_every_shard() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let write = |n: &str| stub(&root, n);
    for k in 0..8 {
        write(&format!("a/x.nc3z/y{k}.nc"));
    }
    write("a/x");
    write("a/z.nc");
    for count in [1u64, 2, 5] {
        for index in 0..count {
            let shard = Shard { index, count };
            for inputs in [
                vec![Ok(root.join("a"))],
                vec![Ok(root.join("a/x")), Ok(root.join("a/x.nc3z"))],
            ] {
                let e = plan(inputs, "/tmp/out".as_ref(), Some(&root), shard).unwrap_err();
                let Error::Refused { path, what } = &e else {
                    panic!("{e}")
                };
                assert_eq!(path, Path::new("/tmp/out/a/x.nc3z"), "{e}");
                let Refusal::ArchiveAndDirectory { file, .. } = what else {
                    panic!("{e}")
                };
                assert_eq!(file, &root.join("a/x"));
            }
            // x not among the inputs: no conflict.
            let p = plan(
                [Ok(root.join("a/x.nc3z"))],
                "/tmp/out".as_ref(),
                Some(&root),
                shard,
            );
            assert!(p.is_ok(), "{index}/{count}");
        }
    }
}

/// A file given by name where another input's archive goes (`OUT/x.nc.nc3z` given with
/// `x.nc`, given or found) refuses the batch before it starts, whatever the share; the same
/// file given without its input, or an archive found by a scan, is no conflict.
#[test]
fn an_input_where_another_inputs_archive_goes_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let write = |n: &str| stub(&root, n);
    write("a/x.nc");
    write("a/x.nc.nc3z");
    write("a/y.nc");
    let g = |n: &str| Ok(root.join(n));
    for count in [1u64, 3] {
        for index in 0..count {
            let shard = Shard { index, count };
            for inputs in [
                vec![g("a/x.nc.nc3z"), g("a")],
                vec![g("a/x.nc"), g("a/x.nc.nc3z")],
                vec![g("a/y.nc"), g("a/x.nc.nc3z"), g("a/x.nc")],
            ] {
                let e = plan(inputs, &root, Some(&root), shard).unwrap_err();
                let Error::Refused { path, what } = &e else {
                    panic!("{e}")
                };
                assert_eq!(path, &root.join("a/x.nc.nc3z"), "{e}");
                let Refusal::InputIsOutput { of } = what else {
                    panic!("{e}")
                };
                assert_eq!(of, &root.join("a/x.nc"));
            }
            for inputs in [
                vec![g("a/x.nc.nc3z"), g("a/y.nc")],
                vec![g("a")],
                // Another OUT: the archive of x.nc goes elsewhere.
                vec![g("a/x.nc"), g("a/x.nc.nc3z")],
            ] {
                let out = if inputs.len() == 2 && inputs[0].as_ref().unwrap().ends_with("x.nc") {
                    root.join("elsewhere")
                } else {
                    root.clone()
                };
                let p = plan(inputs, &out, Some(&root), shard);
                assert!(p.is_ok(), "{index}/{count}");
            }
        }
    }
}

/// The second walk hands out the share in the byte order of the paths, depth first, in chunks
/// of the size asked (a file `x` before `x-1`, `x.nc` and then the files under a directory
/// `x`), a path given and found once, as given, counted as the first walk counted; it stops
/// when told to.
#[test]
fn chunks_hand_out_the_share_in_byte_order() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let names = [
        "x/a.nc", "x/b/c.nc", "x.nc", "x-1", "x0/y", "w", "x/b.nc", "x/b-c.nc", "y/x", "x/b/.h",
    ];
    for n in names {
        let p = root.join(n);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, b"CDF\x01").unwrap();
    }
    let mut all: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !n.contains("/."))
        .collect();
    all.sort();
    for count in [1u64, 2] {
        for index in 0..count {
            let shard = Shard { index, count };
            let want: Vec<(Vec<u8>, bool)> = all
                .iter()
                .filter(|n| shard.owns(n.as_bytes()))
                .map(|n| (n.as_bytes().to_vec(), *n == "x.nc"))
                .collect();
            for size in [1, 2, 3, 100] {
                let inputs = vec![Ok(root.clone()), Ok(root.join("x.nc"))];
                let found = find(inputs, "/tmp/out".as_ref(), Some(&root), shard).unwrap();
                assert_eq!(found.count, want.len());
                let (mut got, mut sizes) = (Vec::new(), Vec::new());
                let unreadable = found.chunks(size, &mut |p| {
                    sizes.push(p.len());
                    got.extend((0..p.len()).map(|i| (p.name(i).to_vec(), p.given(i))));
                    true
                });
                assert!(unreadable.is_empty());
                assert_eq!(got, want, "{index}/{count}, chunks of {size}");
                let (last, full) = sizes.split_last().unwrap();
                assert!(
                    full.iter().all(|&s| s == size) && *last <= size,
                    "{sizes:?}"
                );
                // Told to stop after the first chunk: no second.
                let found = find(
                    vec![Ok(root.clone())],
                    "/tmp/out".as_ref(),
                    Some(&root),
                    shard,
                );
                let mut chunks = 0;
                found.unwrap().chunks(size, &mut |_| {
                    chunks += 1;
                    false
                });
                assert_eq!(chunks, 1);
            }
        }
    }
}

/// However many workers look at inputs, no more than the permits pack at once, and every
/// permit is given back.
#[test]
fn no_more_workers_pack_at_once_than_there_are_permits() {
    let permits = Permits(Mutex::new(2), Condvar::new());
    let (now, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..200 {
                    let _packing = permits.take();
                    let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(n, Ordering::SeqCst);
                    std::thread::yield_now();
                    now.fetch_sub(1, Ordering::SeqCst);
                }
            });
        }
    });
    let most = most.into_inner();
    assert!((1..=2).contains(&most), "{most} packing at once");
    assert_eq!(*permits.0.lock().unwrap(), 2);
}

/// Archives as a rerun's [`decide`] sees them, made up: the identity a stat finds, whether
/// the ends check passes, and how often the ends were read.
struct Seen {
    id: Option<(u64, FileId)>,
    ends_intact: bool,
    ends_read: AtomicUsize,
}

impl Archives for Seen {
    fn recorded_ends(
        &self,
        _: &BatchPlan,
        _: usize,
        len: u64,
        _: u64,
        hash: u128,
    ) -> std::result::Result<u128, EndsError> {
        self.ends_read.fetch_add(1, Ordering::Relaxed);
        match self.ends_intact {
            true => Ok(hash),
            false => Err(EndsError::TooShort { len }),
        }
    }

    fn id(&self, _: &BatchPlan, _: usize) -> Option<(u64, FileId)> {
        self.id
    }

    fn exists(&self, _: &BatchPlan, _: usize) -> Result<bool> {
        Ok(true)
    }

    fn ends(
        &self,
        _: &BatchPlan,
        _: usize,
        _: u64,
    ) -> Option<std::result::Result<(u64, u128), EndsError>> {
        None
    }

    fn lossy_original(&self, _: &BatchPlan, _: usize) -> Option<LossyArchive> {
        None
    }
}

/// A rerun skips an input whose archive a stat finds as recorded (its length, inode and
/// change time) without reading it; it reads the ends when the stat finds another file, or
/// the record has no identity (an older manifest), or a stat cannot tell (objects), and then
/// records the identity found (a full line) if it has one; an archive whose ends fail is
/// packed again; an input gone (deleted by `--delete-input`) is judged the same way.
#[test]
fn a_rerun_trusts_a_stat_that_finds_the_recorded_archive_and_reads_the_ends_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let input = root.join("x.nc");
    std::fs::write(&input, b"CDF\x01 a netCDF file").unwrap();
    let meta = std::fs::metadata(&input).unwrap();
    let out = root.join("out");
    let p = plan([Ok(input.clone())], &out, Some(&root), Shard::default()).unwrap();
    let id = |ino: u64, ctime_ns: i64| FileId {
        ino: std::num::NonZeroU64::new(ino).unwrap(),
        ctime_ns,
    };
    let record = Record {
        size: meta.len(),
        mtime_ns: mtime_ns(&meta),
        hash: 0xfeed,
        output_size: 300,
        restored_size: None,
        output_id: Some(id(5, 1_000)),
    };
    let done_of = |r: Record| {
        let m = root.join(format!("m{}.jsonl", r.output_id.map_or(0, |i| i.ctime_ns)));
        let e = crate::collection::manifest::Entry {
            size: Some(r.size),
            mtime_ns: Some(r.mtime_ns),
            hash: Some(r.hash),
            output_size: Some(r.output_size),
            output_id: r.output_id,
            ..crate::collection::manifest::Entry::new(
                crate::collection::manifest::Status::Packed,
                b"x.nc".to_vec(),
            )
        };
        std::fs::write(&m, e.to_json() + "\n").unwrap();
        Done::load(&[m]).unwrap()
    };
    let recorded = done_of(record);
    let older = done_of(Record {
        output_id: None,
        ..record
    });
    assert_eq!(recorded.get(b"x.nc"), Some(&record));
    // (what a stat finds, ends intact, the record) → (ends read, the outcome: how found
    // and the identity recorded, or packed again)
    type Want = Option<(Found, Option<FileId>)>;
    type Stat = Option<(u64, FileId)>;
    let cases: [(Stat, bool, &Done, usize, Want); 8] = [
        (
            Some((300, id(5, 1_000))),
            false,
            &recorded,
            0,
            Some((Found::AsRecorded, Some(id(5, 1_000)))),
        ),
        (
            Some((300, id(5, 1_001))),
            true,
            &recorded,
            1,
            Some((Found::Rechecked, Some(id(5, 1_001)))),
        ),
        (
            Some((300, id(6, 1_000))),
            true,
            &recorded,
            1,
            Some((Found::Rechecked, Some(id(6, 1_000)))),
        ),
        (
            Some((301, id(5, 1_000))),
            true,
            &recorded,
            1,
            Some((Found::AsRecorded, None)),
        ),
        (Some((300, id(5, 1_001))), false, &recorded, 1, None),
        (None, true, &recorded, 1, Some((Found::AsRecorded, None))),
        (
            Some((300, id(5, 1_000))),
            true,
            &older,
            1,
            Some((Found::Rechecked, Some(id(5, 1_000)))),
        ),
        (Some((300, id(5, 1_000))), false, &older, 1, None),
    ];
    // What decide makes of input 0 with those archives, and how often it read their ends.
    let run = |id, ends_intact, done: &Done| {
        let archives = Seen {
            id,
            ends_intact,
            ends_read: AtomicUsize::new(0),
        };
        let mut inputs = OpenDir::default();
        let step = decide(&p, &archives, &mut inputs, 0, done, false, Instant::now());
        (step, archives.ends_read.into_inner())
    };
    for (k, (seen, ends_intact, done, reads, want)) in cases.into_iter().enumerate() {
        let (step, read) = run(seen, ends_intact, done);
        let got = match step {
            Decision::Finished(Outcome::Skipped {
                record: r, found, ..
            }) => {
                assert_eq!((r.size, r.hash, r.output_size), (record.size, 0xfeed, 300));
                Some((found, r.output_id))
            }
            Decision::Pack { force: true, .. } => None,
            Decision::Pack { .. } => panic!("case {k}: packed as new"),
            Decision::Finished(o) => panic!("case {k}: {o:?}"),
        };
        assert_eq!((got, read), (want, reads), "case {k}");
        // The input gone: the same, with no packing again (it is a failure then).
        std::fs::rename(&input, root.join("away")).unwrap();
        let (step, read) = run(seen, ends_intact, done);
        let got = match step {
            Decision::Finished(Outcome::Skipped {
                record: r, found, ..
            }) => Some((found, r.output_id)),
            Decision::Finished(Outcome::Failed { .. }) => None,
            _ => panic!("case {k}, gone: packed"),
        };
        assert_eq!((got, read), (want, reads), "case {k}, gone");
        std::fs::rename(root.join("away"), &input).unwrap();
    }
}
