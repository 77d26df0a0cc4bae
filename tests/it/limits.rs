//! Limits on what a header may make nc3pack read or allocate, applied the same way when packing
//! (from a file or a stream) and when opening an archive.

use crate::util::{nc3pack, temp_dir, BIN};
use std::ffi::OsStr;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs the binary with `args`, standard input from `stdin` (a file) or empty; returns
/// (exit code, stdout, stderr).
fn run<S: AsRef<OsStr>>(args: &[S], stdin: Option<&Path>) -> (i32, String, String) {
    let mut r = nc3pack(args);
    if let Some(p) = stdin {
        r = r.stdin_file(p);
    }
    let o = r.output();
    let code = o.code.unwrap_or_else(|| panic!("killed by a signal:\n{o}"));
    (code, o.stdout, o.stderr)
}

/// Asserts `stderr` is one error line, no panic, that names `what`.
fn assert_one_line(stderr: &str, what: &str) {
    assert!(!stderr.contains("panicked"), "panic: {stderr}");
    assert!(stderr.starts_with("nc3pack: "), "{stderr:?}");
    assert_eq!(stderr.lines().count(), 1, "not one line: {stderr:?}");
    assert!(stderr.contains(what), "does not name {what:?}: {stderr:?}");
}

fn be32(v: u32) -> [u8; 4] {
    v.to_be_bytes()
}

/// A valid CDF-2 file whose header is `1 GiB + 28` bytes long: one global byte attribute of
/// 2^30 zero bytes (netCDF-C reads it), written sparse so that it costs no disk space.
fn huge_header_file(path: &Path) -> u64 {
    let n: u32 = 1 << 30;
    let mut b = b"CDF\x02".to_vec();
    b.extend_from_slice(&be32(0)); // numrecs
    b.extend_from_slice(&[0; 8]); // dimensions ABSENT
    b.extend_from_slice(&be32(0x0C)); // NC_ATTRIBUTE
    b.extend_from_slice(&be32(1));
    b.extend_from_slice(&be32(3));
    b.extend_from_slice(b"big\0");
    b.extend_from_slice(&be32(1)); // NC_BYTE
    b.extend_from_slice(&be32(n));
    let len = b.len() as u64 + u64::from(n) + 8; // the values, then variables ABSENT
    let mut f = std::fs::File::create(path).unwrap();
    f.write_all(&b).unwrap();
    f.seek(SeekFrom::Start(len - 8)).unwrap();
    f.write_all(&[0; 8]).unwrap();
    assert_eq!(f.metadata().unwrap().len(), len);
    len
}

/// A header over 1 GiB (the largest the format's header frame carries) used to pack from a
/// file with exit 0 into an archive that every reader refused; from a stream it was refused.
/// Both paths now refuse it, naming the limit, and leave no output.
#[test]
fn a_header_over_the_limit_is_refused_from_a_file_and_from_a_stream() {
    let dir = temp_dir();
    let input = dir.path().join("huge_header.nc");
    let len = huge_header_file(&input);
    assert!(len > 1 << 30);
    let out = dir.path().join("out.nc3z");
    let limit = "longer than 1073741824 bytes (1 GiB)";

    let (code, _, err) = run(
        &[OsStr::new("pack"), input.as_os_str(), out.as_os_str()],
        None,
    );
    assert_eq!(code, 1, "{err}");
    assert_one_line(&err, &input.to_string_lossy());
    assert!(err.contains(limit), "{err}");
    assert!(err.contains("attribute \"big\" values"), "{err}");
    assert!(!out.exists());

    let (code, _, err) = run(
        &[OsStr::new("pack"), OsStr::new("-"), out.as_os_str()],
        Some(&input),
    );
    assert_eq!(code, 1, "{err}");
    assert_one_line(&err, limit);
    assert!(!out.exists());

    // `info` of the file says the same (it reads headers under the same limit).
    let (code, _, err) = run(&[OsStr::new("info"), input.as_os_str()], None);
    assert_eq!(code, 1, "{err}");
    assert_one_line(&err, limit);

    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![OsStr::new("huge_header.nc")]);
}

/// A CDF-1 file with one scalar `int v = 42`, whose empty lists (dimensions, global attributes,
/// the attributes of `v`) carry the tags `tags` with a count of 0.
fn empty_lists_file(tags: [u32; 3]) -> Vec<u8> {
    let mut b = b"CDF\x01".to_vec();
    b.extend_from_slice(&be32(0)); // numrecs
    for t in &tags[..2] {
        b.extend_from_slice(&be32(*t));
        b.extend_from_slice(&be32(0));
    }
    b.extend_from_slice(&be32(0x0B)); // NC_VARIABLE
    b.extend_from_slice(&be32(1));
    b.extend_from_slice(&be32(1));
    b.extend_from_slice(b"v\0\0\0");
    b.extend_from_slice(&be32(0)); // no dimensions
    b.extend_from_slice(&be32(tags[2]));
    b.extend_from_slice(&be32(0));
    b.extend_from_slice(&be32(4)); // NC_INT
    b.extend_from_slice(&be32(4)); // vsize
    let begin = b.len() as u32 + 4;
    b.extend_from_slice(&be32(begin));
    b.extend_from_slice(&42i32.to_be_bytes());
    b
}

/// netCDF-C reads a list with a count of 0 as empty whatever its tag (the list's own tag, another
/// list's, or any value): nc3pack used to refuse a non-zero tag with a count of 0. Checked against
/// `ncdump` when it is installed; packs and unpacks byte for byte, from a file and a stream.
#[test]
fn empty_lists_with_any_tag_read_as_netcdf_c_reads_them() {
    let dir = temp_dir();
    let cases = [
        ("own_tags", [0x0A, 0x0C, 0x0C]),
        ("other_tags", [0x0B, 0x0A, 0x0B]),
        ("any_tags", [0x1234, 0xFFFF_FFFF, 7]),
    ];
    let ncdump = Command::new("ncdump").arg("-k").output().is_ok();
    for (name, tags) in cases {
        let input = dir.path().join(format!("{name}.nc"));
        let bytes = empty_lists_file(tags);
        std::fs::write(&input, &bytes).unwrap();
        if ncdump {
            let out = Command::new("ncdump").arg(&input).output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "ncdump {name}: {out:?}");
            assert!(
                text.contains("\tint v ;") && text.contains("v = 42 ;"),
                "{text}"
            );
        }
        let (code, text, err) = run(&[OsStr::new("info"), input.as_os_str()], None);
        assert_eq!(code, 0, "{name}: {err}");
        assert!(text.contains("\tint v ;"), "{name}: {text}");
        let (code, text, err) = run(
            &[OsStr::new("slice"), input.as_os_str(), OsStr::new("v")],
            None,
        );
        assert_eq!(code, 0, "{name}: {err}");
        assert!(text.contains("42"), "{name}: {text}");

        let archive = dir.path().join(format!("{name}.nc3z"));
        let (code, _, err) = run(
            &[OsStr::new("pack"), input.as_os_str(), archive.as_os_str()],
            None,
        );
        assert_eq!(code, 0, "{name}: {err}");
        let back = dir.path().join(format!("{name}.back.nc"));
        let (code, _, err) = run(
            &[OsStr::new("unpack"), archive.as_os_str(), back.as_os_str()],
            None,
        );
        assert_eq!(code, 0, "{name}: {err}");
        assert_eq!(std::fs::read(&back).unwrap(), bytes, "{name}");

        let piped = dir.path().join(format!("{name}.piped.nc3z"));
        let (code, _, err) = run(
            &[OsStr::new("pack"), OsStr::new("-"), piped.as_os_str()],
            Some(&input),
        );
        assert_eq!(code, 0, "{name}: {err}");
        assert_eq!(
            std::fs::read(&piped).unwrap(),
            std::fs::read(&archive).unwrap(),
            "{name}"
        );
    }
}

/// Runs `nc3pack ARGS...` with its address space limited to `kib` KiB (`ulimit -v`).
fn run_limited(kib: u64, args: &[&OsStr]) -> (Option<i32>, String, String) {
    run_under(&format!("ulimit -v {kib}"), args)
}

/// Runs `nc3pack ARGS...` under the shell's resource limits `limits` (`ulimit ...` commands).
fn run_under(limits: &str, args: &[&OsStr]) -> (Option<i32>, String, String) {
    run_under_env(limits, &[], args)
}

/// [`run_under`] with the environment variables `env` set.
fn run_under_env(
    limits: &str,
    env: &[(&str, &str)],
    args: &[&OsStr],
) -> (Option<i32>, String, String) {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("{limits} && exec \"$0\" \"$@\""))
        .arg(BIN)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("cannot start sh");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A CDF-1 header of `n` dimensions, all named "d" with length 1 (12 bytes each), and no
/// attributes or variables: `32 + 12 n` bytes, passed to `sink` in pieces.
fn dims_header(n: u64, sink: &mut dyn FnMut(&[u8])) -> u64 {
    let mut head = b"CDF\x01".to_vec();
    head.extend_from_slice(&be32(0));
    head.extend_from_slice(&be32(0x0A));
    head.extend_from_slice(&be32(n as u32));
    sink(&head);
    let dim: Vec<u8> = [be32(1), *b"d\0\0\0", be32(1)].concat();
    let chunk = dim.repeat(1 << 16);
    let mut left = n;
    while left > 0 {
        let k = left.min(1 << 16);
        sink(&chunk[..(k * 12) as usize]);
        left -= k;
    }
    sink(&[0; 16]); // global attributes and variables ABSENT
    32 + 12 * n
}

/// A header frame's payload that decodes to a header of `header_len - 8` bytes of dimensions
/// ([`dims_header`]), compressed as a run of zstd frames (a zstd payload may hold several,
/// decoded one after the other), the repeated piece compressed once: (header length, payload).
fn dims_bomb(header_len: u64) -> (u64, Vec<u8>) {
    let n = (header_len - 32) / 12;
    let mut payload = Vec::new();
    let mut last: (Vec<u8>, Vec<u8>) = (Vec::new(), Vec::new());
    let len = dims_header(n, &mut |b| {
        if last.0 != b {
            last = (b.to_vec(), zstd::bulk::compress(b, 1).unwrap());
        }
        payload.extend_from_slice(&last.1);
    });
    assert_eq!(len, header_len - 8);
    (len, payload)
}

/// The lead and header frame of an archive whose header is `header` compressed (zstd) to
/// `payload`: what opening reads first, before the footer and index (which are left out).
fn front_only_archive(header_len: u64, payload: &[u8]) -> Vec<u8> {
    use nc3pack::format::{crc, Codec, Filter, FrameHeader, Lead, HEADER_ID};
    let lead = Lead {
        file_len: header_len,
        numrecs: 0,
        header_len,
        block_size: 1 << 20,
        hash: 0,
        block_sizes_frame: false,
    };
    let h = FrameHeader {
        stored_len: payload.len() as u32,
        decoded_len: header_len as u32,
        stream: HEADER_ID,
        block: 0,
        codec: Codec::Zstd,
        filter: Filter::None,
        esize: 1,
        payload_crc: crc(payload),
    };
    [&lead.encode()[..], &h.encode()[..], payload].concat()
}

/// Header bombs under `ulimit -v`: a small archive listing 10^5 dimensions used to make `info`
/// take 166 MB (a JSON tree of the whole header, 1.6 KB per dimension; 1.6 GB for 10^6) and now
/// runs in 100 MB of address space; 100 KB archives whose header frame decodes to 1 GiB or
/// 256 MiB of dimensions used to abort (SIGABRT) under a limit and now fail with one line saying
/// what memory they lacked; a lead declaring a header past the 1 GiB limit is refused naming the
/// limit.
#[test]
fn header_bombs_fail_cleanly_under_an_address_space_limit() {
    let dir = temp_dir();

    // 10^5 dimensions, a real archive (packed from a 1.6 MB file).
    let nc = dir.path().join("many_dims.nc");
    let mut bytes = Vec::new();
    dims_header(100_000, &mut |b| bytes.extend_from_slice(b));
    std::fs::write(&nc, &bytes).unwrap();
    drop(bytes);
    let archive = dir.path().join("many_dims.nc3z");
    let (code, _, err) = run(
        &[
            OsStr::new("pack"),
            OsStr::new("-q"),
            nc.as_os_str(),
            archive.as_os_str(),
        ],
        None,
    );
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::metadata(&archive).unwrap().len() < 10_000);
    for json in [false, true] {
        let mut args = vec![OsStr::new("info")];
        if json {
            args.push(OsStr::new("--json"));
        }
        args.push(archive.as_os_str());
        let (code, out, err) = run_limited(100_000, &args);
        assert_eq!(code, Some(0), "json {json}: {err}");
        assert!(
            out.contains("d = 1") || out.contains("\"name\": \"d\""),
            "json {json}"
        );
    }

    // Header frames that decode to many dimensions: 1 GiB - 8 bytes (89,478,482 dimensions)
    // under a 1 GiB limit: no room for the decoded header; 256 MiB - 8 bytes (22 million
    // dimensions) under a 640 MiB limit: room for the header but not for its parsed items. Each
    // is compressed as a run of zstd frames (a zstd payload may hold several, decoded one after
    // the other), the repeated piece compressed once. (With the header limit raised to its
    // most: under the default one they are refused before anything is allocated, below.)
    let mut last_payload = Vec::new();
    for (name, header_len, limit_kib, message) in [
        (
            "bomb_1g.nc3z",
            1u64 << 30,
            1u64 << 20,
            "cannot allocate 1073741816 bytes of memory for the header",
        ),
        (
            "bomb_256m.nc3z",
            1 << 28,
            640 << 10,
            "no memory left to hold the parsed header",
        ),
    ] {
        let (len, payload) = dims_bomb(header_len);
        let bomb = dir.path().join(name);
        std::fs::write(&bomb, front_only_archive(len, &payload)).unwrap();
        assert!(std::fs::metadata(&bomb).unwrap().len() < 200_000);
        let (code, _, err) = run_under_env(
            &format!("ulimit -v {limit_kib}"),
            &[("NC3PACK_MAX_HEADER_BYTES", "1G")],
            &[OsStr::new("info"), bomb.as_os_str()],
        );
        assert_eq!(code, Some(1), "{name}: {err}");
        assert_one_line(&err, &bomb.to_string_lossy());
        assert!(err.contains("netCDF header at byte 64"), "{name}: {err}");
        assert!(err.contains(message), "{name}: {err}");
        last_payload = payload;
    }
    let payload = last_payload;

    // A lead declaring a header one byte over the limit.
    let over = dir.path().join("over.nc3z");
    std::fs::write(&over, front_only_archive((1 << 30) + 1, &payload)).unwrap();
    let (code, _, err) = run_limited(2 << 20, &[OsStr::new("info"), over.as_os_str()]);
    assert_eq!(code, Some(1), "{err}");
    assert_one_line(&err, &over.to_string_lossy());
    assert!(err.contains("exceeds 1073741824 bytes (1 GiB)"), "{err}");
}

/// A header bomb: a 100 KB archive whose header frame decodes to 89 million dimensions (1 GiB)
/// made `info` take 3.5 GB, and a netCDF-C program through the plugin 8 GB. Headers are now
/// held to the header limit (64 MiB unless NC3PACK_MAX_HEADER_BYTES says otherwise): the
/// archive is refused from its lead's header length, before anything is read or allocated for
/// the header (here under a 100 MB address space limit, in well under a second), and a netCDF-3
/// file being packed or read is refused at the count that cannot fit in the limit, naming it.
#[test]
fn a_header_bomb_is_refused_at_the_header_limit_before_anything_is_allocated() {
    let dir = temp_dir();
    let (len, payload) = dims_bomb(1 << 30);
    let bomb = dir.path().join("bomb.nc3z");
    std::fs::write(&bomb, front_only_archive(len, &payload)).unwrap();
    assert!(std::fs::metadata(&bomb).unwrap().len() < 200_000);
    let started = std::time::Instant::now();
    let (code, _, err) = run_limited(100_000, &[OsStr::new("info"), bomb.as_os_str()]);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(code, Some(1), "{err}");
    assert_one_line(&err, &bomb.to_string_lossy());
    let want = format!(
        "the header is {len} bytes long (as the archive's lead records it), more than the \
         header limit of 67108864 bytes"
    );
    assert!(err.contains(&want), "{err}");
    assert!(err.contains("NC3PACK_MAX_HEADER_BYTES"), "{err}");
    // A limit that is not a byte count is refused, naming it.
    let (code, _, err) = run_under_env(
        "true",
        &[("NC3PACK_MAX_HEADER_BYTES", "lots")],
        &[OsStr::new("info"), bomb.as_os_str()],
    );
    assert_eq!(code, Some(1), "{err}");
    assert_one_line(
        &err,
        "NC3PACK_MAX_HEADER_BYTES=\"lots\" is not a byte count",
    );

    // A netCDF-3 file of 100,000 dimensions (a 1.2 MB header) under a 1 MiB limit: packing it
    // and reading it are refused at its dimension count, before its dimensions are read.
    let nc = dir.path().join("many_dims.nc");
    let mut bytes = Vec::new();
    let header_len = dims_header(100_000, &mut |b| bytes.extend_from_slice(b));
    std::fs::write(&nc, &bytes).unwrap();
    let out = dir.path().join("many_dims.nc3z");
    let limit = [("NC3PACK_MAX_HEADER_BYTES", "1M")];
    for args in [
        vec![OsStr::new("pack"), nc.as_os_str(), out.as_os_str()],
        vec![OsStr::new("info"), nc.as_os_str()],
    ] {
        let (code, _, err) = run_under_env("true", &limit, &args);
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert_one_line(&err, &nc.to_string_lossy());
        assert!(
            err.contains(
                "invalid netCDF-3 header at byte 12: dimension count 100000: 100000 items take \
                 at least 1200000 bytes of header, more than the header limit of 1048576 bytes"
            ),
            "{args:?}: {err}"
        );
        assert!(!out.exists());
    }
    // Raised, the same file packs and its archive reads; under a limit below its header's
    // length, the archive is refused from its lead.
    let raised = [("NC3PACK_MAX_HEADER_BYTES", "2MiB")];
    let pack = [OsStr::new("pack"), nc.as_os_str(), out.as_os_str()];
    let (code, _, err) = run_under_env("true", &raised, &pack);
    assert_eq!(code, Some(0), "{err}");
    let info = [OsStr::new("info"), out.as_os_str()];
    let (code, _, err) = run_under_env("true", &raised, &info);
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = run_under_env("true", &limit, &info);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(&format!("the header is {header_len} bytes long")),
        "{err}"
    );
}

/// `info::write` (what the CLI prints, made item by item) says exactly what `describe` and
/// `to_text` say, for a file and an archive with constant blocks, shared streams and attributes.
#[test]
fn info_written_item_by_item_matches_the_whole_description() {
    let dir = temp_dir();
    let nc = crate::util::root().join("samples/fill_values.nc");
    let archive = dir.path().join("f.nc3z");
    let (code, _, err) = run(
        &[
            OsStr::new("pack"),
            OsStr::new("-q"),
            OsStr::new("--block-size"),
            OsStr::new("16"),
            nc.as_os_str(),
            archive.as_os_str(),
        ],
        None,
    );
    assert_eq!(code, 0, "{err}");
    for path in [nc.as_path(), archive.as_path()] {
        let whole = nc3pack::info::describe(path).unwrap();
        let mut text = Vec::new();
        nc3pack::info::write(path, false, "f", &mut text).unwrap();
        assert_eq!(String::from_utf8(text).unwrap(), whole.to_text("f"));
        let mut json = Vec::new();
        nc3pack::info::write(path, true, "f", &mut json).unwrap();
        assert_eq!(
            String::from_utf8(json).unwrap(),
            serde_json::to_string_pretty(&whole).unwrap() + "\n"
        );
    }
}

/// A CDF-1 file of `n` variables `int vK(x)` (x = 1) holding K, each with `nattrs` int
/// attributes `aJ = J`.
fn many_vars_file(n: u32, nattrs: u32) -> Vec<u8> {
    fn name(b: &mut Vec<u8>, s: &str) {
        b.extend_from_slice(&be32(s.len() as u32));
        b.extend_from_slice(s.as_bytes());
        b.resize(b.len().next_multiple_of(4), 0);
    }
    let mut attrs = Vec::new();
    if nattrs > 0 {
        attrs.extend_from_slice(&be32(0x0C));
        attrs.extend_from_slice(&be32(nattrs));
    } else {
        attrs.extend_from_slice(&[0; 8]);
    }
    for j in 0..nattrs {
        name(&mut attrs, &format!("a{j}"));
        for v in [4, 1, j] {
            attrs.extend_from_slice(&be32(v)); // NC_INT, one value, J
        }
    }
    let mut b = b"CDF\x01".to_vec();
    b.extend_from_slice(&be32(0)); // numrecs
    for v in [0x0A, 1, 1] {
        b.extend_from_slice(&be32(v));
    }
    b.extend_from_slice(b"x\0\0\0");
    b.extend_from_slice(&be32(1));
    b.extend_from_slice(&[0; 8]); // global attributes ABSENT
    b.extend_from_slice(&be32(0x0B));
    b.extend_from_slice(&be32(n));
    let var = |b: &mut Vec<u8>, k: u32, begin: u32| {
        name(b, &format!("v{k}"));
        b.extend_from_slice(&be32(1)); // one dimension: x
        b.extend_from_slice(&be32(0));
        b.extend_from_slice(&attrs);
        for v in [4, 4, begin] {
            b.extend_from_slice(&be32(v)); // NC_INT, vsize 4, begin
        }
    };
    let mut one = Vec::new();
    let header_len = b.len()
        + (0..n)
            .map(|k| {
                one.clear();
                var(&mut one, k, 0);
                one.len()
            })
            .sum::<usize>();
    for k in 0..n {
        var(&mut b, k, (header_len + 4 * k as usize) as u32);
    }
    assert_eq!(b.len(), header_len);
    for k in 0..n {
        b.extend_from_slice(&be32(k));
    }
    b
}

/// Many variables cost little memory and linear time. The parsed header held a heap object per
/// name, per attribute and per variable's lists: `info` and `slice` of a file of 50,000
/// variables of 16 attributes each (an 18 MB header) needed 140 MB of address space, and now
/// fit in about 80 MB (under the 110 MB given here). And unpacking, which `verify` runs,
/// decoded a whole shared block again for every small variable stored in it: `verify` of
/// 50,000 one-value variables took 7 s of CPU (quadratic: 58 s for 100,000) and now takes a
/// few hundredths, far under the 2 s of CPU allowed here.
#[test]
fn many_variables_cost_little_memory_and_linear_time() {
    let dir = temp_dir();
    let nc = dir.path().join("many_attrs.nc");
    std::fs::write(&nc, many_vars_file(50_000, 16)).unwrap();
    let (code, out, err) = run_limited(110_000, &[OsStr::new("info"), nc.as_os_str()]);
    assert_eq!(code, Some(0), "info: {err}");
    assert!(
        out.contains("\tint v49999(x) ;\n\t\tv49999:a0 = 0 ;"),
        "info"
    );
    assert!(out.contains("\t\tv49999:a15 = 15 ;\n"), "info");
    let args = [OsStr::new("slice"), nc.as_os_str(), OsStr::new("v49999")];
    let (code, out, err) = run_limited(110_000, &args);
    assert_eq!(code, Some(0), "slice: {err}");
    assert_eq!(out, " v49999 =\n  49999 ;\n");

    let nc = dir.path().join("many_vars.nc");
    std::fs::write(&nc, many_vars_file(50_000, 0)).unwrap();
    let archive = dir.path().join("many_vars.nc3z");
    let (code, _, err) = run(
        &[
            OsStr::new("pack"),
            OsStr::new("-q"),
            nc.as_os_str(),
            archive.as_os_str(),
        ],
        None,
    );
    assert_eq!(code, 0, "{err}");
    let args = [
        OsStr::new("verify"),
        OsStr::new("-j"),
        OsStr::new("1"),
        archive.as_os_str(),
    ];
    let (code, out, err) = run_under("ulimit -t 2", &args);
    assert_eq!(code, Some(0), "verify (killed by a signal if None): {err}");
    assert!(
        out.contains("restored data matches the original's hash"),
        "{out}"
    );
}

/// Unpacking held on to the last decoded block of every stream until the end, so that it kept
/// about as much memory as the file has in variables of a block or less: `verify` of a 64 MB
/// file of 4,000 variables of 16 KiB needed about 100 MB of address space (each variable is
/// one block). A block used up is now released at once, and it runs in under 60 MB.
#[test]
fn unpacking_releases_each_block_once_used() {
    let (n, per) = (4000u32, 4096u32); // int v(x), x = 4096: 16 KiB each
    let mut b = b"CDF\x01".to_vec();
    for v in [0, 0x0A, 1, 1] {
        b.extend_from_slice(&be32(v));
    }
    b.extend_from_slice(b"x\0\0\0");
    b.extend_from_slice(&be32(per));
    b.extend_from_slice(&[0; 8]); // global attributes ABSENT
    b.extend_from_slice(&be32(0x0B));
    b.extend_from_slice(&be32(n));
    // Each variable: name (4 + 8 bytes for "vNNNN"), 2 dimension fields, ABSENT attributes,
    // type, vsize, begin: 40 bytes.
    let start = b.len() as u32 + 40 * n;
    for k in 0..n {
        let name = format!("v{k:04}");
        b.extend_from_slice(&be32(5));
        b.extend_from_slice(name.as_bytes());
        b.extend_from_slice(&[0; 3]);
        for v in [1, 0, 0, 0, 4, per * 4, start + per * 4 * k] {
            b.extend_from_slice(&be32(v));
        }
    }
    assert_eq!(b.len() as u32, start);
    // Incompressible values (an LCG), so that every variable is one full block.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..n * per {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        b.extend_from_slice(&((x >> 32) as u32).to_be_bytes());
    }
    let dir = temp_dir();
    let nc = dir.path().join("medium_vars.nc");
    std::fs::write(&nc, &b).unwrap();
    drop(b);
    let archive = dir.path().join("medium_vars.nc3z");
    let (code, _, err) = run(
        &[
            OsStr::new("pack"),
            OsStr::new("-q"),
            nc.as_os_str(),
            archive.as_os_str(),
        ],
        None,
    );
    assert_eq!(code, 0, "{err}");
    let args = [
        OsStr::new("verify"),
        OsStr::new("-j"),
        OsStr::new("1"),
        archive.as_os_str(),
    ];
    let (code, out, err) = run_limited(60_000, &args);
    assert_eq!(code, Some(0), "verify: {err}");
    assert!(out.contains(": ok: 4000 blocks"), "{out}");
}

/// Values in the sparse file of [`sparse_tail_file`]: 3 GiB of zeros, then [`TAIL`] values.
const ZEROS: u64 = 3 << 28;
/// The values written at the end of that file: 1.0, 2.0, ... (a block of their own).
const TAIL: u64 = 1024;

/// A CDF-2 file of one float variable `v(x)`, `x` = [`ZEROS`] + [`TAIL`]: sparse zeros (no disk
/// space) but for the last [`TAIL`] values, 1.0, 2.0, ...; returns where the data starts.
fn sparse_tail_file(path: &Path) -> u64 {
    let n = ZEROS + TAIL;
    let mut b = b"CDF\x02".to_vec();
    for v in [0, 0x0A, 1, 1] {
        b.extend_from_slice(&be32(v)); // numrecs, NC_DIMENSION, 1 dimension, name length
    }
    b.extend_from_slice(b"x\0\0\0");
    b.extend_from_slice(&be32(n as u32));
    b.extend_from_slice(&[0; 8]); // global attributes ABSENT
    for v in [0x0B, 1, 1] {
        b.extend_from_slice(&be32(v)); // NC_VARIABLE, 1 variable, name length
    }
    b.extend_from_slice(b"v\0\0\0");
    for v in [1, 0, 0, 0, 5, (4 * n) as u32] {
        b.extend_from_slice(&be32(v)); // 1 dimension: x; attributes ABSENT; NC_FLOAT; vsize
    }
    let begin = b.len() as u64 + 8;
    b.extend_from_slice(&begin.to_be_bytes());
    let mut f = std::fs::File::create(path).unwrap();
    f.write_all(&b).unwrap();
    f.seek(SeekFrom::Start(begin + 4 * ZEROS)).unwrap();
    let tail: Vec<u8> = (1..=TAIL).flat_map(|i| (i as f32).to_be_bytes()).collect();
    f.write_all(&tail).unwrap();
    assert_eq!(f.metadata().unwrap().len(), begin + 4 * n);
    begin
}

/// The values of `v` at `indices` in the file `nc`, as `ncks` (netCDF-C) reads them: one
/// hyperslab `first..=last` with a stride.
fn ncks_values(nc: &Path, first: u64, last: u64, stride: u64) -> Vec<f32> {
    let out = Command::new("ncks")
        .args(["-H", "-C", "-s", "%g\\n", "-v", "v", "-d"])
        .arg(format!("x,{first},{last},{stride}"))
        .arg(nc)
        .output()
        .expect("cannot run ncks");
    assert!(out.status.success(), "ncks: {:?}", out);
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(|w| w.parse().unwrap_or_else(|_| panic!("ncks printed {w:?}")))
        .collect()
}

/// Address-space limit of the runs on the 3 GiB file below: half of one of its blocks.
const CONSTANT_LIMIT_KIB: u64 = 512 << 10;

/// A 3 GiB sparse file packed with `--block-size 1GiB` makes an archive of three constant
/// blocks (no frames) and one small frame. Reading a value of a constant block used to decode
/// the whole block into 1 GiB of memory (1.8 s for one value), and under `ulimit -v 2G` a
/// strided slice aborted ("memory allocation of 1073741824 bytes failed"); `unpack` and
/// `verify` built every constant block whole too. Now a constant block costs only the values
/// asked for: all of these run in 512 MiB of address space, with the values netCDF-C reads.
/// Then the same archive with block 1 made a frame: see
/// [`a_block_too_large_for_memory_is_an_error_not_an_abort`] (one test, so that the 3 GiB file
/// is packed once: 10 to 30 s).
#[test]
fn constant_blocks_are_read_without_building_them() {
    // netCDF-C's values come from ncks: without NCO that part is skipped (and counted).
    let ncks = Command::new("ncks").arg("--version").output().is_ok();
    if !ncks {
        crate::util::skip("needs ncks for netCDF-C's values, the rest ran (apt-get install nco)");
    }
    let dir = temp_dir();
    let (nc, z) = packed_sparse_tail(dir.path());
    // One value of block 1; three values 1.5 GiB apart (blocks 0, 1 and 3).
    let stride = 3 << 27;
    let first = ZEROS + TAIL / 2 - 2 * stride;
    for (start, count, stride) in [(ONE_VALUE, 1, 1), (first, 3, stride)] {
        let got = slice_limited(&z, start, count, stride)
            .unwrap_or_else(|(code, err)| panic!("exit {code:?} (None: a signal): {err}"));
        if ncks {
            let want = ncks_values(&nc, start, start + (count - 1) * stride, stride);
            assert_eq!(got, want, "slice --start {start} --count {count}");
            assert_eq!(want.len() as u64, count);
        }
    }
    if ncks {
        assert_eq!(
            ncks_values(&nc, first, first + 2 * stride, stride),
            [0.0, 0.0, (TAIL / 2 + 1) as f32]
        );
    }
    // The library (which the Python package reads through): the same values, and the cache
    // holds the two constant blocks as their element (4 bytes each) beside the frame's block.
    let a = nc3pack::Archive::open(&z).unwrap();
    let slab =
        nc3pack::Dataset::slab(&a, "v", Some(&[first]), Some(&[3]), Some(&[stride])).unwrap();
    let got: Vec<f32> = nc3pack::Dataset::read(&a, "v", &slab).unwrap();
    assert_eq!(got, [0.0, 0.0, (TAIL / 2 + 1) as f32]);
    let stats = a.cache_stats();
    assert_eq!((stats.entries, stats.bytes), (3, 4 + 4 + 4 * TAIL));
    drop(a);
    // The whole file, restored to standard output and verified.
    let (code, out, err) = run_limited(CONSTANT_LIMIT_KIB, &[OsStr::new("verify"), z.as_os_str()]);
    assert_eq!(code, Some(0), "verify: {err}");
    assert!(
        out.contains("restored data matches the original's hash"),
        "{out}"
    );
    let unpack = run_under(
        &format!("exec >/dev/null && ulimit -v {CONSTANT_LIMIT_KIB}"),
        &[OsStr::new("unpack"), z.as_os_str(), OsStr::new("-")],
    );
    assert_eq!(unpack.0, Some(0), "unpack: {}", unpack.2);
    a_block_too_large_for_memory_is_an_error_not_an_abort(dir.path(), &z);
}

/// A value of block 1 of the file of [`sparse_tail_file`].
const ONE_VALUE: u64 = ZEROS / 3 + 7;

/// `nc3pack slice ARCHIVE v --start --count --stride --format json` under
/// [`CONSTANT_LIMIT_KIB`]: the values, or its exit code (`None`: killed by a signal) and
/// standard error.
fn slice_limited(
    z: &Path,
    start: u64,
    count: u64,
    stride: u64,
) -> Result<Vec<f32>, (Option<i32>, String)> {
    let (start_arg, count_arg, stride_arg) =
        (start.to_string(), count.to_string(), stride.to_string());
    let args = [
        OsStr::new("slice"),
        z.as_os_str(),
        OsStr::new("v"),
        OsStr::new("--start"),
        OsStr::new(&start_arg),
        OsStr::new("--count"),
        OsStr::new(&count_arg),
        OsStr::new("--stride"),
        OsStr::new(&stride_arg),
        OsStr::new("--format"),
        OsStr::new("json"),
    ];
    let (code, out, err) = run_limited(CONSTANT_LIMIT_KIB, &args);
    if code != Some(0) {
        return Err((code, err));
    }
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    Ok(json["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect())
}

/// The file of [`sparse_tail_file`] in `dir` and its archive in blocks of 1 GiB: three
/// constant blocks and a frame.
fn packed_sparse_tail(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let nc = dir.join("sparse.nc");
    sparse_tail_file(&nc);
    let z = dir.join("sparse.nc3z");
    let (code, _, err) = run(
        &[
            OsStr::new("pack"),
            OsStr::new("-q"),
            OsStr::new("--block-size"),
            OsStr::new("1GiB"),
            nc.as_os_str(),
            z.as_os_str(),
        ],
        None,
    );
    assert_eq!(code, 0, "{err}");
    let a = nc3pack::Archive::open(&z).unwrap();
    let constant: Vec<bool> = (0..a.block_count(0))
        .map(|b| a.entry(0, b).is_constant())
        .collect();
    assert_eq!(constant, [true, true, true, false]);
    drop(a);
    (nc, z)
}

/// `archive` with block `b` of stream 0 (a constant block) made a zstd frame that decodes to
/// the whole block (zeros, as 1 MiB zstd frames one after the other: a few dozen KB), written
/// before the index; the index and footer follow.
fn with_zstd_block(archive: &[u8], b: u64) -> Vec<u8> {
    use nc3pack::format::{crc, encode_index, Codec, Filter, Footer, FrameHeader, IndexEntry};
    let a = nc3pack::Archive::from_reader(archive.to_vec(), Path::new("x")).unwrap();
    let len = a.block_bytes(0);
    assert!(a.entry(0, b).is_constant() && len <= u64::from(u32::MAX));
    let piece = zstd::bulk::compress(&vec![0u8; 1 << 20], 1).unwrap();
    let payload = piece.repeat((len >> 20) as usize);
    let at = a.index_offset();
    let h = FrameHeader {
        stored_len: payload.len() as u32,
        decoded_len: len as u32,
        stream: 0,
        block: b,
        codec: Codec::Zstd,
        filter: Filter::None,
        esize: 4,
        payload_crc: crc(&payload),
    };
    let mut entries: Vec<IndexEntry> = a.blocks().map(|(s, k)| *a.entry(s, k)).collect();
    entries[b as usize] = IndexEntry {
        offset: at,
        stored_len: h.stored_len,
        codec: Codec::Zstd,
        filter: Filter::None,
        flags: 0,
    };
    let index = encode_index(&entries, a.constants_frames());
    let mut out = archive[..at as usize].to_vec();
    out.extend_from_slice(&h.encode());
    out.extend_from_slice(&payload);
    let footer = Footer {
        index_offset: out.len() as u64,
        index_len: index.len() as u64,
        index_crc: crc(&index),
        flags: 0,
    };
    out.extend_from_slice(&index);
    out.extend_from_slice(&footer.encode());
    out
}

/// A frame whose block is 1 GiB, read under a 512 MiB limit: the block cannot be allocated, and
/// that is one line naming the archive, the variable and the block, exit 1 (it was an abort,
/// "memory allocation of 1073741824 bytes failed"). Without the limit, it decodes. `z`: the
/// archive of [`packed_sparse_tail`] in `dir`.
fn a_block_too_large_for_memory_is_an_error_not_an_abort(dir: &Path, z: &Path) {
    let big = dir.join("big_frame.nc3z");
    std::fs::write(&big, with_zstd_block(&std::fs::read(z).unwrap(), 1)).unwrap();
    let a = nc3pack::Archive::open(&big).unwrap();
    assert!(!a.entry(0, 1).is_constant());
    drop(a);
    let (code, err) = slice_limited(&big, ONE_VALUE, 1, 1).unwrap_err();
    assert_eq!(code, Some(1), "killed by a signal if None: {err}");
    assert_one_line(&err, &big.to_string_lossy());
    assert!(
        err.contains("cannot allocate 1073741824 bytes of memory for block 1 of variable \"v\""),
        "{err}"
    );
    let (code, out, err) = run(
        &[
            OsStr::new("slice"),
            big.as_os_str(),
            OsStr::new("v"),
            OsStr::new("--start"),
            OsStr::new(&ONE_VALUE.to_string()),
            OsStr::new("--count"),
            OsStr::new("1"),
        ],
        None,
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.split_whitespace().collect::<Vec<_>>(),
        ["v", "=", "0", ";"],
        "{out}"
    );
}

/// Unpacking into a file longer than the process may make (`ulimit -f`, with SIGXFSZ ignored so
/// that the write past the limit fails with EFBIG) fails after many blocks and a few chunks
/// were written, with a one-line error naming the output, and leaves neither the output nor a
/// temporary file; without the limit the same unpack restores the original.
#[test]
fn unpack_past_a_file_size_limit_fails_and_leaves_nothing() {
    let dir = temp_dir();
    let nc = crate::util::root().join("samples/gridded_sst.nc");
    let archive = dir.path().join("sst.nc3z");
    let pack = [
        OsStr::new("pack"),
        OsStr::new("-q"),
        OsStr::new("--block-size"),
        OsStr::new("64KiB"),
        nc.as_os_str(),
        archive.as_os_str(),
    ];
    let (code, _, err) = run(&pack, None);
    assert_eq!(code, 0, "{err}");
    let out = dir.path().join("sst.nc");
    let unpack = [
        OsStr::new("unpack"),
        OsStr::new("-q"),
        archive.as_os_str(),
        out.as_os_str(),
    ];
    // 4096 blocks of 512 bytes (dash) or 1 KiB (bash): 2 or 4 MiB of the 6.2 MB original.
    let (code, _, err) = run_under("trap '' XFSZ && ulimit -f 4096", &unpack);
    assert_eq!(code, Some(1), "{err}");
    assert_one_line(&err, &out.to_string_lossy());
    assert!(err.contains("too large"), "{err}");
    let mut left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["sst.nc3z"], "the failed unpack left files behind");
    let (code, _, err) = run_under("true", &unpack);
    assert_eq!(code, Some(0), "{err}");
    assert!(std::fs::read(&out).unwrap() == std::fs::read(&nc).unwrap());
}
