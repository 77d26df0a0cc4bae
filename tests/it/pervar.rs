//! Per-variable settings (`--var`, `PackOptions::with_var`): the variables' blocks have the
//! block size, codec and filter asked for, the archive records its format version (1.1 only
//! with a per-variable block size), reads, unpack, verify and reindex work on it, and the data
//! read back equals what the `netcdf3` crate reads from the original. Without per-variable
//! block sizes an archive is the one packing made before they existed (byte for byte).

use crate::roundtrip::{var_values, Typed};
use crate::util::{nc3pack, sample, temp_dir};
use nc3pack::format::{Codec, Filter, FrameHeader, FRAME_HEADER_LEN};
use nc3pack::vars::VarRule;
use nc3pack::{pack_file, Archive, FilterMode, PackOptions};
use std::path::{Path, PathBuf};

fn rule(s: &str) -> VarRule {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn pack(input: &Path, out: &Path, opts: PackOptions) -> Archive {
    pack_file(input, out, &opts.with_force(true)).unwrap();
    Archive::open(out).unwrap()
}

fn var(a: &Archive, name: &str) -> usize {
    a.header().var_id(name).unwrap()
}

/// Every variable's values from the archive equal the netcdf3 crate's from `original`.
fn values_match_netcdf3(a: &Archive, original: &Path) {
    let mut r = netcdf3::FileReader::open(original).unwrap();
    for (i, v) in a.header().vars().enumerate() {
        let want = Typed::from_netcdf3(r.read_var(v.name()).unwrap());
        let got = var_values(a, i, "per-var archive");
        if let Some(d) = got.difference(&want) {
            panic!("{}: {d}", v.name());
        }
    }
}

/// The lead's version and flags fields (bytes 8..16), little-endian.
fn version_and_flags(z: &Path) -> (u16, u16, u32) {
    let b = std::fs::read(z).unwrap();
    (
        u16::from_le_bytes([b[8], b[9]]),
        u16::from_le_bytes([b[10], b[11]]),
        u32::from_le_bytes(b[12..16].try_into().unwrap()),
    )
}

#[test]
fn per_variable_block_size_codec_and_filter_apply_to_the_selected_variables_only() {
    let dir = temp_dir();
    let z = dir.path().join("g.nc3z");
    let orig = sample("gridded_sst.nc");
    let opts = PackOptions::fast()
        .with_threads(2)
        .with_block_size(256 << 10)
        .with_var(rule("sst:block-size=40000,filter=shuffle"))
        .with_var(rule("l?t,lon:codec=none"));
    let a = pack(&orig, &z, opts);
    assert_eq!(version_and_flags(&z), (1, 1, 1));
    let sst = var(&a, "sst");
    // 40000 is a whole number of floats: 10000 of them a block (18 blocks a 180 x 360 field).
    assert_eq!(a.block_bytes(sst), 40000);
    assert_eq!(a.block_sizes().var(sst), 40000);
    assert_eq!(a.block_count(sst), (24 * 180 * 360 * 4u64).div_ceil(40000));
    for b in 0..a.block_count(sst) {
        let e = a.entry(sst, b);
        assert!(e.is_constant() || e.filter == Filter::Shuffle, "block {b}");
    }
    // lat and lon are small: they share a block, with the archive-wide settings.
    assert!(a.shared_stream_of(var(&a, "lat")).is_some());
    // The other streams keep the archive's block size.
    assert_eq!(a.block_sizes().var(var(&a, "time")), 256 << 10);
    assert_eq!(a.lead().block_size, 256 << 10);
    values_match_netcdf3(&a, &orig);
    // The frames say the same as the index: read every frame header of sst.
    let bytes = std::fs::read(&z).unwrap();
    for b in 0..a.block_count(sst) {
        let e = a.entry(sst, b);
        if e.is_constant() {
            continue;
        }
        let at = e.offset as usize;
        let h = FrameHeader::decode(&bytes[at..at + FRAME_HEADER_LEN]).unwrap();
        assert_eq!((h.stream as usize, h.block), (sst, b));
        assert_eq!(
            u64::from(h.decoded_len),
            40000.min(a.stream_len(sst) - b * 40000)
        );
    }
}

#[test]
fn per_variable_codec_without_block_size_keeps_format_1_0() {
    let dir = temp_dir();
    let z = dir.path().join("o.nc3z");
    let orig = sample("obs_points.nc");
    let opts = PackOptions::fast()
        .with_threads(1)
        .with_var(rule("temp:codec=none"))
        .with_var(rule("lat*,lon*:codec=deflate,level=1"))
        .with_var(rule("*:block-size=1MiB")); // the default: no per-variable block size
    let a = pack(&orig, &z, opts);
    assert_eq!(version_and_flags(&z), (1, 0, 0));
    let temp = var(&a, "temp");
    for b in 0..a.block_count(temp) {
        assert_eq!(a.entry(temp, b).codec, Codec::None);
    }
    let lat = var(&a, "lat");
    assert!(a.block_count(lat) > 0);
    for b in 0..a.block_count(lat) {
        assert!(matches!(
            a.entry(lat, b).codec,
            Codec::Deflate | Codec::None
        ));
    }
    assert!((0..a.block_count(lat)).any(|b| a.entry(lat, b).codec == Codec::Deflate));
    values_match_netcdf3(&a, &orig);
}

#[test]
fn later_rules_override_earlier_ones_key_by_key() {
    let dir = temp_dir();
    let z = dir.path().join("o.nc3z");
    let opts = PackOptions::fast()
        .with_threads(1)
        .with_var(rule("temp,lat:block-size=8KiB,codec=none"))
        .with_var(rule("t*:block-size=16KiB"))
        .with_var(rule("lat:codec=zstd"));
    let a = pack(&sample("obs_points.nc"), &z, opts);
    let (temp, lat) = (var(&a, "temp"), var(&a, "lat"));
    // temp: block size from the second rule, codec from the first.
    assert_eq!(a.block_bytes(temp), 16 << 10);
    assert!((0..a.block_count(temp)).all(|b| a.entry(temp, b).codec == Codec::None));
    // lat: block size from the first rule, codec from the third.
    assert_eq!(a.block_bytes(lat), 8 << 10);
    assert!((0..a.block_count(lat)).any(|b| a.entry(lat, b).codec == Codec::Zstd));
    values_match_netcdf3(&a, &sample("obs_points.nc"));
}

/// Packing without per-variable block sizes gives the archives packing gave before they existed:
/// the same bytes as the archives of the hostile-archive registry's base (classic_records.nc
/// with 16-byte blocks, checked in hostile.rs) and the archives in samples/archives_1_0/, made by
/// the writer before per-variable settings existed (see samples/README.md), and before the pco
/// codec existed: these pack with `with_pco(false)`.
#[test]
fn archives_without_per_variable_block_sizes_are_unchanged() {
    let dir = temp_dir();
    let refs = sample("archives_1_0");
    let mut checked = 0;
    for entry in std::fs::read_dir(&refs).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().and_then(|e| e.to_str()) != Some("nc3z") {
            continue;
        }
        // NAME.nc3z: samples/NAME.nc packed with the defaults; NAME.bsN.nc3z: with
        // --block-size N.
        let stem = p.file_stem().unwrap().to_str().unwrap().to_string();
        let (name, bs) = match stem.split_once(".bs") {
            Some((n, bs)) => (n.to_string(), bs.parse::<u32>().unwrap()),
            None => (stem.clone(), 1 << 20),
        };
        let orig: PathBuf = sample(&format!("{name}.nc"));
        let want = std::fs::read(&p).unwrap();
        // The full form: the archives of format 1.0 it keeps byte for byte.
        let base = PackOptions::fast()
            .with_block_size(bs)
            .with_pco(false)
            .with_compact(false);
        for opts in [
            base.clone().with_threads(1),
            base.clone().with_threads(3),
            // Rules that change nothing: the archive is the same.
            base.clone()
                .with_threads(1)
                .with_var(rule(&format!("*:block-size={bs},codec=zstd,filter=auto"))),
        ] {
            let z = dir.path().join(format!("{stem}.nc3z"));
            pack(&orig, &z, opts);
            assert!(
                std::fs::read(&z).unwrap() == want,
                "{stem}: archive differs from samples/archives_1_0/{stem}.nc3z"
            );
        }
        checked += 1;
    }
    assert!(checked >= 3, "only {checked} reference archives");
}

#[test]
fn verify_unpack_and_reindex_work_on_a_1_1_archive() {
    let dir = temp_dir();
    let z = dir.path().join("g.nc3z");
    let orig = sample("gridded_sst.nc");
    let opts = PackOptions::fast()
        .with_threads(2)
        .with_var(rule("sst:block-size=64KiB"))
        .with_var(rule("time:block-size=8"));
    let a = pack(&orig, &z, opts);
    assert_eq!(a.block_bytes(var(&a, "time")), 8);
    assert_eq!(a.block_count(var(&a, "time")), 24);
    let vopts = nc3pack::VerifyOptions::default().with_threads(1);
    assert!(nc3pack::verify(&z, &vopts).unwrap().is_intact());
    let back = dir.path().join("back.nc");
    nc3pack::unpack_file(&z, &back, &Default::default()).unwrap();
    assert!(std::fs::read(&back).unwrap() == std::fs::read(&orig).unwrap());
    // Reindex of the whole archive and of one cut inside the sst blocks: the scan finds the
    // blocks by the per-variable block sizes.
    let bytes = std::fs::read(&z).unwrap();
    let cut = dir.path().join("cut.nc3z");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    for (src, whole) in [(&z, true), (&cut, false)] {
        let re = dir.path().join("re.nc3z");
        let rep = nc3pack::reindex(
            src,
            &re,
            &nc3pack::ReindexOptions::default().with_force(true),
        )
        .unwrap();
        let r = Archive::open(&re).unwrap();
        assert_eq!(r.block_sizes(), a.block_sizes());
        assert_eq!(version_and_flags(&re), (1, 1, 1));
        if whole {
            assert!(rep.lost.is_empty());
            assert!(nc3pack::verify(&re, &vopts).unwrap().is_intact());
            values_match_netcdf3(&r, &orig);
        } else {
            assert!(!rep.lost.is_empty() && rep.recovered > 0);
            // What was recovered reads back as the original's.
            let sst = var(&r, "sst");
            let want = a.read_var_bytes(sst).unwrap();
            for b in 0..r.block_count(sst) {
                if !r.entry(sst, b).is_lost() {
                    let got = r.read_block(sst, b).unwrap();
                    let at = (b * r.block_bytes(sst)) as usize;
                    assert!(got[..] == want[at..at + got.len()], "block {b}");
                }
            }
        }
    }
}

#[test]
fn cli_var_rules_apply_and_info_shows_them() {
    let dir = temp_dir();
    let z = dir.path().join("g.nc3z");
    let orig = sample("gridded_sst.nc");
    nc3pack(&[
        "pack".as_ref(),
        "-q".as_ref(),
        "--var".as_ref(),
        "sst:block-size=64KiB".as_ref(),
        "--var".as_ref(),
        "time*:codec=none,block-size=16".as_ref(),
        orig.as_os_str(),
        z.as_os_str(),
    ])
    .expect(0);
    let out = nc3pack(&["info".as_ref(), "--json".as_ref(), z.as_os_str()]).expect(0);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let arch = &v["archive"];
    assert_eq!(arch["format_version"], "1.1");
    let stream = |name: &str| {
        arch["streams"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(stream("sst")["block_bytes"], 65536);
    assert_eq!(stream("time")["block_bytes"], 16);
    assert_eq!(stream("time")["blocks"], 12);
    assert_eq!(stream("time")["blocks_by_codec"]["none"], 12);
    let text = nc3pack(&["info".as_ref(), z.as_os_str()]).expect(0).stdout;
    assert!(text.contains("(format 1.1)"), "{text}");
    assert!(text.contains("sst: 95 blocks of 65536,"), "{text}");
}

#[test]
fn cli_refuses_a_name_or_glob_that_matches_no_variable_listing_the_variables() {
    let dir = temp_dir();
    let z = dir.path().join("g.nc3z");
    let orig = sample("gridded_sst.nc");
    for bad in ["sst,temperature:codec=none", "x*:block-size=4KiB"] {
        let out = nc3pack(&[
            "pack".as_ref(),
            "--var".as_ref(),
            bad.as_ref(),
            orig.as_os_str(),
            z.as_os_str(),
        ])
        .expect(2);
        let pattern = bad
            .split(':')
            .next()
            .unwrap()
            .split(',')
            .next_back()
            .unwrap();
        assert!(
            out.stderr.contains(&format!(
                "matches \"{pattern}\" (its variables: time, lat, lon, sst)"
            )),
            "{}",
            out.stderr
        );
        assert!(out.stderr.contains("gridded_sst.nc"), "{}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(!z.exists());
    }
    // Malformed rules are usage errors too.
    for bad in [
        "sst",
        "sst:codec=lz4",
        "sst:block-size=4",
        ",:codec=none",
        "sst:colour=red",
    ] {
        nc3pack(&[
            "pack".as_ref(),
            "--var".as_ref(),
            bad.as_ref(),
            orig.as_os_str(),
            z.as_os_str(),
        ])
        .expect(2);
    }
    // A level the variable's codec does not take names the variable.
    let out = nc3pack(&[
        "pack".as_ref(),
        "--var".as_ref(),
        "lat:codec=deflate,level=12".as_ref(),
        orig.as_os_str(),
        z.as_os_str(),
    ])
    .expect(2);
    assert!(out.stderr.contains("variable \"lat\""), "{}", out.stderr);
    assert!(!z.exists());
}

#[test]
fn library_refuses_unknown_variables_with_a_typed_error() {
    let dir = temp_dir();
    let z = dir.path().join("g.nc3z");
    let e = pack_file(
        &sample("classic_records.nc"),
        &z,
        &PackOptions::fast().with_var(rule("nope:filter=none")),
    )
    .unwrap_err();
    match e {
        nc3pack::Error::Option(nc3pack::error::OptionError::NoSuchVar(
            nc3pack::vars::NoSuchVar { pattern, vars, .. },
        )) => {
            assert_eq!(pattern, "nope");
            assert_eq!(
                vars,
                [
                    "time", "c5", "b", "b5", "s", "s3", "i", "f3", "d", "fixed_s", "fixed_b",
                    "fixed_c", "fixed_f", "scalar_i", "scalar_d", "scalar_c", "scalar_b"
                ]
                .map(String::from)
            );
        }
        other => panic!("{other}"),
    }
    assert!(!z.exists());
    // A filter rule given as a FilterMode round-trips through the text form.
    let r = rule("a,b?:filter=zzdelta");
    assert_eq!(
        r.settings.filter,
        Some(FilterMode::Fixed(Filter::ZigZagDelta))
    );
    assert_eq!(rule(&r.to_string()), r);
}

/// A file of `records` record variables (`int`, `recs` records), a 2.4 MB `double` variable
/// and a 0.8 MB one, written by the `netcdf3` crate; the values are an arithmetic mess so that
/// nothing is constant.
fn large_and_small_file(path: &Path, records: usize, recs: usize) {
    let mut ds = netcdf3::DataSet::new();
    ds.set_unlimited_dim("time", recs).unwrap();
    ds.add_fixed_dim("cell", 300_000).unwrap();
    ds.add_fixed_dim("col", 100_000).unwrap();
    ds.add_var_f64("big", &["cell"]).unwrap();
    ds.add_var_f64("small", &["col"]).unwrap();
    for r in 0..records {
        ds.add_var_i32(&format!("r{r}"), &["time"]).unwrap();
    }
    let mut w = netcdf3::FileWriter::open(path).unwrap();
    w.set_def(&ds, netcdf3::Version::Offset64Bit, 0).unwrap();
    let f = |n: usize, k: usize| -> Vec<f64> {
        (0..n).map(|i| ((i * k) % 7919) as f64 * 0.25).collect()
    };
    w.write_var_f64("big", &f(300_000, 31)).unwrap();
    w.write_var_f64("small", &f(100_000, 17)).unwrap();
    for r in 0..records {
        let v: Vec<i32> = (0..recs).map(|i| ((i * (r + 3)) % 1009) as i32).collect();
        w.write_var_i32(&format!("r{r}"), &v).unwrap();
    }
    w.close().unwrap();
}

#[test]
fn max_gives_large_variables_8_mib_blocks_unless_a_block_size_is_given() {
    const MIB: u32 = 1 << 20;
    let dir = temp_dir();
    let nc = dir.path().join("ls.nc");
    large_and_small_file(&nc, 2, 300_000);
    let z = dir.path().join("ls.nc3z");
    // The preset: big and the record variables 8 MiB, small (under 1 MiB) and the shared and
    // residual streams 1 MiB; format 1.1.
    let a = pack(&nc, &z, PackOptions::max().with_threads(2));
    let sizes = a.block_sizes();
    let got: Vec<u32> = ["big", "small", "r0", "r1"]
        .iter()
        .map(|n| sizes.var(var(&a, n)))
        .collect();
    assert_eq!(got, [8 * MIB, MIB, 8 * MIB, 8 * MIB]);
    assert_eq!(sizes.default, MIB);
    assert_eq!(version_and_flags(&z), (1, 1, 1));
    assert_eq!(a.block_count(var(&a, "big")), 1);
    values_match_netcdf3(&a, &nc);
    let back = dir.path().join("ls.back.nc");
    nc3pack::unpack_file(&z, &back, &nc3pack::UnpackOptions::default()).unwrap();
    assert!(std::fs::read(&back).unwrap() == std::fs::read(&nc).unwrap());
    // A rule's block size wins for its variable; an explicit block size for all of them.
    let a = pack(
        &nc,
        &z,
        PackOptions::max().with_var(rule("big:block-size=64KiB")),
    );
    assert_eq!(a.block_sizes().var(var(&a, "big")), 64 << 10);
    assert_eq!(a.block_sizes().var(var(&a, "r0")), 8 * MIB);
    let a = pack(&nc, &z, PackOptions::max().with_block_size(MIB));
    assert!(a.block_sizes().is_uniform());
    assert_eq!(version_and_flags(&z), (1, 0, 0));
    // The default preset: 1 MiB everywhere.
    let a = pack(&nc, &z, PackOptions::fast());
    assert!(a.block_sizes().is_uniform());
    // The CLI: likewise with and without --block-size.
    for (args, want) in [(&[][..], 8 * MIB), (&["--block-size", "1MiB"][..], MIB)] {
        let mut argv = vec!["pack", "-f", "--level", "max"];
        argv.extend_from_slice(args);
        let mut argv: Vec<&std::ffi::OsStr> = argv.iter().map(|s| s.as_ref()).collect();
        argv.extend([nc.as_os_str(), z.as_os_str()]);
        nc3pack(&argv).expect(0);
        let a = Archive::open(&z).unwrap();
        assert_eq!(a.block_sizes().var(var(&a, "big")), want, "{args:?}");
    }
}

#[test]
fn max_keeps_record_variables_at_the_block_size_past_256_mib_of_open_blocks() {
    const MIB: u32 = 1 << 20;
    let dir = temp_dir();
    // 32 record variables: 32 x 8 MiB = 256 MiB, large blocks; 33: not.
    for (records, want) in [(32, 8 * MIB), (33, MIB)] {
        let nc = dir.path().join(format!("r{records}.nc"));
        large_and_small_file(&nc, records, 500);
        let z = dir.path().join(format!("r{records}.nc3z"));
        let a = pack(&nc, &z, PackOptions::max().with_threads(2));
        for r in 0..records {
            assert_eq!(
                a.block_sizes().var(var(&a, &format!("r{r}"))),
                want,
                "{records}"
            );
        }
        assert_eq!(a.block_sizes().var(var(&a, "big")), 8 * MIB, "{records}");
        values_match_netcdf3(&a, &nc);
    }
}
