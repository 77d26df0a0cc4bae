//! The compact form (format 1.2) of small files' archives: written by default (`pack
//! --no-compact` writes the full form), read, verified, reindexed and checked by a collection's
//! rerun as the full form is.

use crate::util::{sample, samples_dir, temp_dir, BIN};
use nc3pack::format::{
    compact, Codec, Footer, FrameHeader, FOOTER_LEN, FRAME_HEADER_LEN, LEAD_LEN,
};
use std::process::Command;

/// The header frame of the full archive `b`.
fn header_frame(b: &[u8]) -> FrameHeader {
    FrameHeader::decode(&b[LEAD_LEN..]).unwrap()
}

/// The bytes of the full archive `b` from the end of its header frame to its index: the frames
/// after the header frame.
fn after_header(b: &[u8]) -> &[u8] {
    let end = LEAD_LEN + FRAME_HEADER_LEN + header_frame(b).stored_len as usize;
    let f = Footer::decode(&b[b.len() - FOOTER_LEN..]).unwrap();
    &b[end..f.index_offset as usize]
}

/// The `ncdump` of `nc` without its first line (which names the file).
fn ncdump(nc: &std::path::Path) -> String {
    let o = Command::new("ncdump").arg(nc).output().unwrap();
    assert!(o.status.success(), "ncdump {}", nc.display());
    let text = String::from_utf8(o.stdout).unwrap();
    text.split_once('\n').unwrap().1.to_string()
}

/// Runs `nc3pack ARGS` (with `--compact` after the command when `compact`) and checks its
/// exit code; returns its stderr.
fn run(args: &[&std::ffi::OsStr], compact: bool, code: i32) -> String {
    let mut c = Command::new(BIN);
    c.args(&args[..1]);
    if compact {
        c.arg("--compact");
    }
    c.args(&args[1..]);
    let o = c.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(code), "nc3pack {args:?}: {err}");
    err
}

fn os(s: &str) -> &std::ffi::OsStr {
    s.as_ref()
}

/// The samples of at most 16 KiB.
fn small_samples() -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(samples_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "nc"))
        .filter(|p| std::fs::metadata(p).unwrap().len() <= compact::COMPACT_FILE_MAX)
        .collect();
    v.sort();
    assert!(v.len() >= 15, "{v:?}");
    v
}

#[test]
fn small_files_pack_compact_by_default_and_unpack_verify_and_reindex_byte_identical() {
    if !crate::util::have_tool("ncdump", "apt-get install netcdf-bin") {
        return;
    }
    let dir = temp_dir();
    let mut dict = 0;
    for nc in small_samples() {
        let (full, small) = (dir.path().join("full.nc3z"), dir.path().join("small.nc3z"));
        let flagged = dir.path().join("flagged.nc3z");
        let pack = [os("pack"), os("-q"), os("-f"), os("-j1"), nc.as_ref()];
        run(
            &[&pack[..], &[os("--no-compact"), full.as_ref()]].concat(),
            false,
            0,
        );
        run(&[&pack[..], &[small.as_ref()]].concat(), false, 0);
        run(&[&pack[..], &[flagged.as_ref()]].concat(), true, 0);
        let (fb, sb) = (
            std::fs::read(&full).unwrap(),
            std::fs::read(&small).unwrap(),
        );
        // `--compact` (the default) changes nothing.
        assert_eq!(std::fs::read(&flagged).unwrap(), sb, "{}", nc.display());
        assert!(compact::is_compact(&sb), "{}", nc.display());
        assert!(!compact::is_compact(&fb), "{}", nc.display());
        // The compact archive is a full one, each structure in fewer bytes: the `--no-compact`
        // archive but for the header frame, which may use the header dictionary (codec 7,
        // format 1.3), and the offsets after it.
        let ex = compact::expand(&sb).unwrap();
        assert_eq!(
            compact::compact(&ex).as_deref(),
            Some(&sb[..]),
            "{}",
            nc.display()
        );
        assert_eq!(after_header(&ex), after_header(&fb), "{}", nc.display());
        if header_frame(&ex).codec == Codec::ZstdDict {
            dict += 1;
            assert_eq!(
                &sb[10..13],
                &[3, 0, 6],
                "{}: version 1.3, flags",
                nc.display()
            );
            assert!(header_frame(&ex).stored_len < header_frame(&fb).stored_len);
        } else {
            assert_eq!(ex, fb, "{}", nc.display());
            assert_eq!(
                &sb[10..13],
                &[2, 0, 2],
                "{}: version 1.2, flags",
                nc.display()
            );
        }
        assert!(
            sb.len() + 80 <= fb.len(),
            "{}: {} -> {}",
            nc.display(),
            fb.len(),
            sb.len()
        );
        let out = dir.path().join("out.nc");
        run(
            &[
                os("unpack"),
                os("-q"),
                os("-f"),
                small.as_ref(),
                out.as_ref(),
            ],
            false,
            0,
        );
        assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&nc).unwrap());
        assert_eq!(ncdump(&out), ncdump(&nc), "{}", nc.display());
        run(&[os("verify"), small.as_ref()], false, 0);
        let a = nc3pack::Archive::open(&small).unwrap();
        assert_eq!(a.len(), sb.len() as u64);
        // Reindexing a compact archive writes its full form.
        let re = dir.path().join("re.nc3z");
        run(
            &[os("reindex"), os("-f"), small.as_ref(), re.as_ref()],
            false,
            0,
        );
        // (It writes the header frame again, without the header dictionary.)
        assert_eq!(std::fs::read(&re).unwrap(), fb, "{}", nc.display());
    }
    // Most small samples' headers are smaller with the header dictionary.
    assert!(dict >= 10, "{dict} archives with the header dictionary");
}

#[test]
fn a_flipped_byte_in_a_compact_archive_is_damage_that_verify_and_unpack_report() {
    let dir = temp_dir();
    let z = dir.path().join("x.nc3z");
    let nc = sample("classic_records.nc");
    run(
        &[
            os("pack"),
            os("-q"),
            os("-f"),
            os("-j1"),
            nc.as_ref(),
            z.as_ref(),
        ],
        true,
        0,
    );
    let good = std::fs::read(&z).unwrap();
    let out = dir.path().join("out.nc");
    // Every 7th byte past the magic and version: each flip is found, none restores wrong data.
    for at in (12..good.len()).step_by(7) {
        let mut bad = good.clone();
        bad[at] ^= 0x04;
        std::fs::write(&z, &bad).unwrap();
        run(&[os("verify"), z.as_ref()], false, 1);
        run(
            &[os("unpack"), os("-q"), os("-f"), z.as_ref(), out.as_ref()],
            false,
            1,
        );
        assert!(!out.exists(), "byte {at}: a partial output was left");
    }
}

#[test]
fn a_collection_rerun_trusts_compact_archives_and_repacks_a_damaged_one() {
    let dir = temp_dir();
    let (src, dst) = (dir.path().join("in"), dir.path().join("out"));
    std::fs::create_dir_all(&src).unwrap();
    for name in ["scalars.nc", "fill_values.nc", "no_variables.nc"] {
        std::fs::copy(sample(name), src.join(name)).unwrap();
    }
    let pack = || {
        run(
            &[
                os("pack"),
                os("-q"),
                os("-j1"),
                src.as_ref(),
                os("-o"),
                dst.as_ref(),
            ],
            true,
            0,
        )
    };
    pack();
    let z = dst.join("scalars.nc.nc3z");
    let first = std::fs::read(&z).unwrap();
    assert!(compact::is_compact(&first));
    let stderr = pack();
    assert_eq!(std::fs::read(&z).unwrap(), first, "{stderr}");
    // A cut archive fails the cheap check of its ends and is packed again.
    std::fs::write(&z, &first[..first.len() - 3]).unwrap();
    pack();
    assert_eq!(std::fs::read(&z).unwrap(), first);
}

/// Packs `nc` with `args` after `pack -q -f -j1` from the file and from standard input (a
/// pipe); returns both archives.
fn from_file_and_pipe(
    nc: &std::path::Path,
    args: &[&str],
    dir: &std::path::Path,
) -> (Vec<u8>, Vec<u8>) {
    let (f, p) = (dir.join("file.nc3z"), dir.join("pipe.nc3z"));
    let base = ["pack", "-q", "-f", "-j1"];
    let o = Command::new(BIN)
        .args(base)
        .args(args)
        .arg(nc)
        .arg(&f)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new(BIN)
        .args(base)
        .args(args)
        .arg("-")
        .arg(&p)
        .stdin(std::fs::File::open(nc).unwrap())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (std::fs::read(f).unwrap(), std::fs::read(p).unwrap())
}

#[test]
fn a_small_file_from_a_pipe_packs_to_the_compact_archive_of_the_file() {
    let dir = temp_dir();
    for nc in small_samples() {
        for args in [&[][..], &["--level", "max"][..], &["--no-compact"][..]] {
            let (file, pipe) = from_file_and_pipe(&nc, args, dir.path());
            assert!(
                pipe == file,
                "{} {args:?}: the pipe's archive differs",
                nc.display()
            );
            assert_eq!(
                compact::is_compact(&pipe),
                args != ["--no-compact"],
                "{}",
                nc.display()
            );
        }
    }
    // A file just over the limit is written in the full form from both.
    let big = sample("gridded_sst.nc");
    assert!(std::fs::metadata(&big).unwrap().len() > compact::COMPACT_FILE_MAX);
    let (file, pipe) = from_file_and_pipe(&big, &[], dir.path());
    assert!(pipe == file && !compact::is_compact(&file));
}

#[test]
fn info_names_the_format_version_of_a_compact_archive() {
    let dir = temp_dir();
    let z = dir.path().join("x.nc3z");
    let nc = sample("classic_records.nc");
    // classic_records.nc's header is smaller with the header dictionary: format 1.3.
    for (flag, version) in [("--compact", "1.3"), ("--no-compact", "1.0")] {
        let pack = [
            os("pack"),
            os("-q"),
            os("-f"),
            os(flag),
            nc.as_ref(),
            z.as_ref(),
        ];
        run(&pack, false, 0);
        let o = Command::new(BIN).arg("info").arg(&z).output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            text.contains(&format!("// nc3z archive (format {version}):")),
            "{flag}: {text}"
        );
        let o = Command::new(BIN)
            .args(["info", "--json"])
            .arg(&z)
            .output()
            .unwrap();
        let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(json["archive"]["format_version"], version, "{flag}");
    }
}

/// The `max` preset's 8 MiB blocks for record variables change nothing in a file smaller than a
/// block: its small files' archives have no block sizes frame (format 1.1), and read the same.
#[test]
fn the_max_preset_writes_no_block_sizes_frame_for_a_small_file() {
    let dir = temp_dir();
    let mut with_records = 0;
    for nc in small_samples() {
        let z = dir.path().join("max.nc3z");
        let opts = nc3pack::PackOptions::max().with_threads(1).with_force(true);
        nc3pack::pack_file(&nc, &z, &opts).unwrap();
        let full = compact::expand(&std::fs::read(&z).unwrap()).unwrap();
        assert_eq!(full[12] & 1, 0, "{}: a block sizes frame", nc.display());
        let a = nc3pack::Archive::open(&z).unwrap();
        with_records += usize::from(a.layout().numrecs > 0);
        let back = dir.path().join("back.nc");
        let u = nc3pack::UnpackOptions::default()
            .with_threads(1)
            .with_force(true);
        nc3pack::unpack_file(&z, &back, &u).unwrap();
        assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&nc).unwrap());
    }
    assert!(
        with_records >= 3,
        "{with_records} small samples with records"
    );
}

/// Reads a varint of a compact frame at `*at`.
fn varint(b: &[u8], at: &mut usize) -> u64 {
    let mut v = 0;
    for i in 0..10 {
        let byte = b[*at];
        *at += 1;
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            break;
        }
    }
    v
}

/// A compact archive whose header frame uses the header dictionary, damaged in that frame's
/// payload (with its checksum fixed, so that only decoding finds it, and without), or with a
/// lead that says version 1.2 (as a reader of 1.2 sees it): every reading command refuses it
/// with exit code 1, naming the file and what is wrong, and leaves no output.
#[test]
fn a_damaged_header_dictionary_frame_is_refused_naming_the_file_and_what_is_wrong() {
    let dir = temp_dir();
    let z = dir.path().join("dict.nc3z");
    let nc = sample("classic_records.nc");
    run(
        &[os("pack"), os("-q"), os("-f"), nc.as_ref(), z.as_ref()],
        false,
        0,
    );
    let good = std::fs::read(&z).unwrap();
    let (_, lead_len) = compact::decode_lead(&good).unwrap();
    let mut at = lead_len;
    let stored = varint(&good, &mut at) as usize;
    let decoded = varint(&good, &mut at);
    let (code, block) = (varint(&good, &mut at), varint(&good, &mut at));
    assert_eq!((code, block, good[at]), (5, 0, Codec::ZstdDict as u8));
    at += 2;
    assert_eq!(varint(&good, &mut at), 1);
    // The payload (without the zstd magic) and the frame's CRC32C.
    let (payload, end) = (at, at + stored - 4);
    assert!(decoded > stored as u64);
    let fix_crc = |b: &mut Vec<u8>| {
        let c = nc3pack::format::crc(&b[lead_len..end]);
        b[end..end + 4].copy_from_slice(&c.to_le_bytes());
    };
    let out = dir.path().join("out.nc");
    let check = |bad: &[u8], what: &str| {
        std::fs::write(&z, bad).unwrap();
        for cmd in ["unpack", "verify", "info"] {
            let mut args = vec![os(cmd), z.as_ref()];
            if cmd == "unpack" {
                args.push(out.as_ref());
            }
            let o = Command::new(BIN).args(&args).output().unwrap();
            // verify reports on standard output, the others on standard error.
            let err = String::from_utf8_lossy(&[o.stdout, o.stderr].concat()).into_owned();
            assert_eq!(o.status.code(), Some(1), "{cmd}: {err}");
            assert!(
                err.contains(&z.display().to_string()) && err.contains(what),
                "{cmd}: {err}"
            );
            assert!(!err.contains("panicked"), "{cmd}: {err}");
            assert!(!out.exists(), "{cmd}: a partial output was left");
        }
    };
    // Damage the checksum finds.
    let mut bad = good.clone();
    bad[payload + (end - payload) / 2] ^= 0x10;
    check(&bad, "netCDF header");
    // Damage only decoding finds: the frame's checksum made to match.
    for k in [0, (end - payload) / 2, end - payload - 1] {
        let mut bad = good.clone();
        bad[payload + k] ^= 0xff;
        fix_crc(&mut bad);
        check(&bad, "netCDF header");
    }
    // A lead of version 1.2 with the header dictionary's flag (a 1.2 reader knows no such
    // flag and refuses the archive at its lead).
    let mut bad = good.clone();
    bad[10] = 2;
    let c = nc3pack::format::crc(&bad[..lead_len - 4]);
    bad[lead_len - 4..lead_len].copy_from_slice(&c.to_le_bytes());
    check(&bad, "unknown flags 0x6 in a version 1.2 lead");
}

/// A one-bit flip in a compact archive's footer checksum said "no footer magic at the end of the
/// file (truncated archive?)" at an offset of the full form, past the end of the file; it now
/// says that the compact footer's checksum does not match, at the compact footer's offset.
#[test]
fn a_flipped_compact_footer_checksum_is_named_at_the_compact_footers_offset() {
    use nc3pack::error::{ArchiveError, FooterError};
    let dir = temp_dir();
    let z = dir.path().join("scalars.nc3z");
    let opts = nc3pack::PackOptions::default().with_threads(1);
    nc3pack::pack_file(&sample("scalars.nc"), &z, &opts).unwrap();
    let good = std::fs::read(&z).unwrap();
    assert!(compact::is_compact(&good));
    let n = good.len();
    // The compact footer: index length (4 bytes), CRC32C (4), magic (4).
    let footer_at = (n - compact::COMPACT_FOOTER_LEN) as u64;
    for (at, want) in [
        (n - 8, "compact footer's checksum"),
        (n - 5, "compact footer's checksum"),
        (n - 12, "compact footer's"),
        (n - 2, "no footer magic at the end of the compact archive"),
    ] {
        let mut b = good.clone();
        b[at] ^= 0x01;
        std::fs::write(&z, &b).unwrap();
        match nc3pack::Archive::open(&z) {
            Err(e @ nc3pack::Error::Archive { .. }) => {
                let msg = e.to_string();
                let nc3pack::Error::Archive {
                    part,
                    offset,
                    source,
                    ..
                } = e
                else {
                    unreachable!()
                };
                assert_eq!((part, offset), ("footer", footer_at), "byte {at}: {msg}");
                assert!(msg.contains(want), "byte {at}: {msg}");
                assert!(!msg.contains("end of the file"), "byte {at}: {msg}");
                if at == n - 8 {
                    assert!(
                        matches!(
                            source,
                            ArchiveError::Footer(FooterError::CompactChecksum { stored, computed })
                                if stored != computed
                        ),
                        "{msg}"
                    );
                }
            }
            other => panic!("byte {at}: {:?}", other.map(|_| "opened")),
        }
        // The command line says the same, at the same offset.
        let o = Command::new(BIN).arg("info").arg(&z).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!("footer at byte {footer_at}")),
            "{err}"
        );
        assert!(err.contains(want), "{err}");
    }
}
