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

/// The inputs in byte order, once each, a shard's share every Nth of them, whether the
/// paths come in order (a sorted list: no order is made) or not, with duplicates, given
/// by name or found.
#[test]
fn shares_are_every_nth_path_in_byte_order_however_the_paths_come() {
    let dir = tempfile::tempdir().unwrap();
    let mut names: Vec<String> = (0..23).map(|k| format!("d{}/f{k:02}.nc", k % 3)).collect();
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
        for index in 0..count {
            let shard = Shard { index, count };
            let want: Vec<&[u8]> = names
                .iter()
                .skip(index as usize)
                .step_by(count as usize)
                .map(|n| n.as_bytes())
                .collect();
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
    }
}
