//! The original file's bytes read from an archive (`OriginalReader`), and the layout function
//! it rests on (`Layout::walk_range`).
//!
//! - `walk_range` gives the owners and offsets that `Layout::walk` gives, for the whole file and
//!   for random ranges, for every file read below.
//! - Every sample, each sample's CDL as CDF-1, CDF-2 and CDF-5 and every netcdf-c conformance
//!   CDL file (with `ncgen`), and a file of many record variables: the whole reader equals the
//!   original, and random reads (offsets near segment, block and end-of-file boundaries, some
//!   past the end) equal the original's slices; `Read + Seek` at the ends.
//! - Threads reading one reader at once get the original's bytes.
//! - A damaged block: every read that touches its bytes fails naming it, every other read is
//!   right.
//! - A sequential read of a file of interleaved records decodes each block once (counted by
//!   the archive), and with too small a cache many times.

use crate::util::Rng;
use crate::util::{sample, samples_dir, temp_dir};
use nc3pack::nc3::{Header, Layout, Span, Target};
use nc3pack::{pack_file, Archive, OriginalReader, PackOptions};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::Command;

fn pack(nc: &Path, z: &Path, block_size: u32) {
    let opts = PackOptions::default()
        .with_block_size(block_size)
        .with_threads(1)
        .with_force(true);
    pack_file(nc, z, &opts).unwrap_or_else(|e| panic!("packing {}: {e}", nc.display()));
}

/// The owners of the file's bytes as `Layout::walk` gives them, with where each run lies in its
/// owner's bytes (counted in walk order), merged where runs continue each other.
fn walked(l: &Layout) -> Vec<Span> {
    let mut seen: std::collections::HashMap<String, u64> = Default::default();
    let mut out = Vec::new();
    l.walk(|seg| -> Result<(), ()> {
        let at = seen.entry(format!("{:?}", seg.target)).or_insert(0);
        out.push(Span {
            offset: seg.offset,
            len: seg.len,
            target: seg.target,
            at: *at,
        });
        *at += seg.len;
        Ok(())
    })
    .unwrap();
    merged(out)
}

/// Runs merged where one continues the last (same owner, contiguous in the file and in the
/// owner's bytes): two lists of runs describe the same bytes exactly when they merge equal.
fn merged(spans: Vec<Span>) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    for s in spans {
        match out.last_mut() {
            Some(p)
                if p.target == s.target && p.offset + p.len == s.offset && p.at + p.len == s.at =>
            {
                p.len += s.len
            }
            _ => out.push(s),
        }
    }
    out
}

fn ranged(l: &Layout, a: u64, b: u64) -> Vec<Span> {
    let mut out = Vec::new();
    l.walk_range(a, b, |s| -> Result<(), ()> {
        assert!(s.len > 0);
        out.push(s);
        Ok(())
    })
    .unwrap();
    merged(out)
}

/// `all` (merged runs of the whole file) cut to `[a, b)`.
fn clipped(all: &[Span], a: u64, b: u64) -> Vec<Span> {
    all.iter()
        .filter(|s| s.offset + s.len > a && s.offset < b)
        .filter(|s| s.offset.max(a) < (s.offset + s.len).min(b))
        .map(|s| {
            let from = s.offset.max(a);
            let to = (s.offset + s.len).min(b);
            Span {
                offset: from,
                len: to - from,
                target: s.target,
                at: s.at + (from - s.offset),
            }
        })
        .collect()
}

/// A random range of a file of `len` bytes: offsets uniform, near one of `points` (segment
/// and block boundaries) or near the end (some past it); lengths short, about a block, or
/// long.
fn random_range(rng: &mut Rng, len: u64, points: &[u64], block: u64) -> (u64, usize) {
    let near = |rng: &mut Rng, p: u64| (p + rng.below(17)).saturating_sub(8);
    let off = match rng.below(6) {
        0 | 1 => rng.below(len + 1),
        2 | 3 if !points.is_empty() => {
            let p = points[rng.below(points.len() as u64) as usize];
            near(rng, p)
        }
        4 => len.saturating_sub(rng.below(64)) + rng.below(3) * rng.below(8),
        _ => {
            let p = rng.below(len / block + 2) * block;
            near(rng, p)
        }
    };
    let n = match rng.below(4) {
        0 => rng.below(17),
        1 => rng.below(2 * block + 1),
        2 => rng.below(4 * block + 64),
        _ => rng.below(len.min(256 << 10) + 1),
    };
    (off, n as usize)
}

/// Checks the reader of `z` against `original`: whole, `reads` random reads, `Read + Seek` at
/// the ends, and the layout's ranges against its walk.
fn check_file(original: &[u8], z: &Path, reads: usize, seed: u64, block: u64) {
    let name = z.display();
    let r = OriginalReader::open(z).unwrap_or_else(|e| panic!("{name}: {e}"));
    let len = original.len() as u64;
    assert_eq!(r.len(), len, "{name}");
    assert_eq!(
        r.archive().blocks_decoded(),
        0,
        "{name}: opening decodes no block"
    );

    // Whole, in one read (with room to spare) and through the cursor.
    let mut all = vec![0u8; original.len() + 10];
    assert_eq!(r.read_at(0, &mut all).unwrap(), original.len(), "{name}");
    assert!(
        all[..original.len()] == *original,
        "{name}: whole read differs"
    );
    let mut c = r.cursor();
    let mut back = Vec::new();
    c.read_to_end(&mut back).unwrap();
    assert!(back == original, "{name}: cursor read differs");

    // The layout's ranges, as its walk gives them.
    let l = r.archive().layout();
    let walk = walked(l);
    assert_eq!(
        ranged(l, 0, len),
        walk,
        "{name}: walk_range of the whole file"
    );
    assert_eq!(
        l.owned_before(Target::Residual, len),
        l.residual_len,
        "{name}"
    );
    let points: Vec<u64> = walk.iter().map(|s| s.offset).collect();

    let mut rng = Rng(seed);
    for _ in 0..reads {
        let (off, n) = random_range(&mut rng, len, &points, block);
        let mut buf = vec![0xAAu8; n];
        let got = r
            .read_at(off, &mut buf)
            .unwrap_or_else(|e| panic!("{name}: read of {n} at {off}: {e}"));
        let want = if off >= len {
            &[][..]
        } else {
            &original[off as usize..(off as usize + n).min(original.len())]
        };
        assert_eq!(got, want.len(), "{name}: read of {n} at {off}");
        assert!(buf[..got] == *want, "{name}: read of {n} at {off} differs");
        let end = off.saturating_add(n as u64);
        assert_eq!(
            ranged(l, off, end),
            merged(clipped(&walk, off, end.min(len))),
            "{name}: walk_range({off}, {end})"
        );
    }

    // Read + Seek at the ends.
    let mut c = r.cursor();
    let tail = 10.min(len) as i64;
    assert_eq!(c.seek(SeekFrom::End(-tail)).unwrap(), len - tail as u64);
    let mut t = Vec::new();
    c.read_to_end(&mut t).unwrap();
    assert!(t == original[original.len() - tail as usize..], "{name}");
    assert_eq!(c.seek(SeekFrom::Current(5)).unwrap(), len + 5);
    assert_eq!(
        c.read(&mut [0u8; 8]).unwrap(),
        0,
        "{name}: read past the end"
    );
    assert_eq!(c.seek(SeekFrom::Start(1)).unwrap(), 1);
    let mut two = [0u8; 2];
    c.read_exact(&mut two).unwrap();
    assert_eq!(two[..], original[1..3], "{name}");
    assert!(c.seek(SeekFrom::Current(-4)).is_err(), "{name}: before 0");
}

/// The netCDF-3 samples (not the malformed ones).
fn samples() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(samples_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "nc"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_sample_reads_back_whole_and_in_random_ranges() {
    let dir = temp_dir();
    for (k, nc) in samples().iter().enumerate() {
        let original = std::fs::read(nc).unwrap();
        // Small blocks: many block boundaries inside the records (fewer in the larger
        // samples, which take long to pack so); and the default.
        let small = if original.len() < 1 << 20 { 256 } else { 8192 };
        for block in [small, 1 << 20] {
            let z = dir.path().join(format!("{k}-{block}.nc3z"));
            pack(nc, &z, block);
            check_file(
                &original,
                &z,
                2000,
                k as u64 * 31 + block as u64,
                block as u64,
            );
        }
    }
}

/// Whether `ncgen` is on the PATH.
fn have_ncgen() -> bool {
    Command::new("ncgen")
        .arg("-h")
        .output()
        .is_ok_and(|o| o.status.code().is_some())
}

/// `ncgen -k KIND -o OUT CDL`, at most 64 MiB; false when it cannot make that kind.
fn ncgen(cdl: &Path, kind: &str, out: &Path) -> bool {
    crate::util::ncgen_at_most(cdl, kind, out, 64 << 20)
}

/// Every CDL file in `dir` made into CDF-1, CDF-2 and CDF-5 (what ncgen can make of it, at
/// most `max_len` bytes), packed, and checked with `reads` random reads each. Returns how many
/// files were checked.
fn check_cdl_dir(dir: &Path, max_len: u64, reads: usize) -> usize {
    let mut cdls: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cdl"))
        .collect();
    cdls.sort();
    let tmp = temp_dir();
    let mut checked = 0;
    for (k, cdl) in cdls.iter().enumerate() {
        for (kind, tag) in [("nc3", 1), ("nc6", 2), ("nc5", 5)] {
            let nc = tmp.path().join(format!("{k}-{tag}.nc"));
            if !ncgen(cdl, kind, &nc) {
                continue;
            }
            // (ncgen says nothing and makes nothing of a CDL file of only a name.)
            let Ok(original) = std::fs::read(&nc) else {
                continue;
            };
            if original.len() as u64 > max_len {
                continue;
            }
            let z = tmp.path().join(format!("{k}-{tag}.nc3z"));
            pack(&nc, &z, 512);
            let what = format!("{} as {kind}", cdl.display());
            let r = std::panic::catch_unwind(|| {
                check_file(&original, &z, reads, (k * 7 + tag) as u64, 512)
            });
            assert!(r.is_ok(), "{what}");
            checked += 1;
            std::fs::remove_file(&nc).ok();
            std::fs::remove_file(&z).ok();
        }
    }
    checked
}

#[test]
fn every_sample_cdl_as_cdf1_cdf2_and_cdf5() {
    if !have_ncgen() {
        crate::util::skip("needs ncgen (apt-get install netcdf-bin)");
        return;
    }
    let n = check_cdl_dir(&samples_dir(), 64 << 20, 1000);
    assert!(n >= 30, "only {n} files made");
}

#[test]
fn every_conformance_cdl_as_cdf1_cdf2_and_cdf5() {
    let dir = crate::util::root().join("../shared/conformance/netcdf-c-cdl");
    if !have_ncgen() || !dir.is_dir() {
        crate::util::skip(&format!(
            "needs ncgen (apt-get install netcdf-bin) and {}",
            dir.display()
        ));
        return;
    }
    let n = check_cdl_dir(&dir, 1 << 20, 200);
    assert!(n >= 100, "only {n} files made");
}

/// Writes a CDF-1 (or CDF-2) file of `records` records of 24 record variables of every type,
/// most of them with slabs that are not a multiple of 4 (padded), and two fixed variables.
fn write_records(path: &Path, records: usize, version: netcdf3::Version) {
    let mut ds = netcdf3::DataSet::new();
    ds.set_unlimited_dim("time", records).unwrap();
    for (d, n) in [
        ("two", 2),
        ("three", 3),
        ("five", 5),
        ("seven", 7),
        ("n50", 50),
        ("n40", 40),
    ] {
        ds.add_fixed_dim(d, n).unwrap();
    }
    ds.add_var_f32("grid", &["n50", "n40"]).unwrap();
    ds.add_var_i16("mask", &["seven"]).unwrap();
    let kinds = ["three", "five", "three", "seven", "two"];
    for k in 0..24 {
        let name = format!("v{k}");
        let dims = ["time", kinds[k % 5]];
        match k % 5 {
            0 => ds.add_var_i8(&name, &dims),
            1 => ds.add_var_i16(&name, &dims),
            2 => ds.add_var_i32(&name, &dims),
            3 => ds.add_var_f32(&name, &dims),
            _ => ds.add_var_f64(&name, &dims),
        }
        .unwrap();
    }
    let mut w = netcdf3::FileWriter::open(path).unwrap();
    w.set_def(&ds, version, 0).unwrap();
    let grid: Vec<f32> = (0..2000).map(|i| (i as f32 * 0.01).sin()).collect();
    w.write_var_f32("grid", &grid).unwrap();
    w.write_var_i16("mask", &[1, 0, 1, 1, 0, 0, 1]).unwrap();
    let mut rng = Rng(7);
    for k in 0..24 {
        let name = format!("v{k}");
        let per = [3, 5, 3, 7, 2][k % 5] * records;
        let walk: Vec<i64> = (0..per)
            .scan(0i64, |x, _| {
                *x += rng.below(9) as i64 - 4;
                Some(*x)
            })
            .collect();
        match k % 5 {
            0 => w.write_var_i8(&name, &walk.iter().map(|&x| x as i8).collect::<Vec<_>>()),
            1 => w.write_var_i16(&name, &walk.iter().map(|&x| x as i16).collect::<Vec<_>>()),
            2 => w.write_var_i32(&name, &walk.iter().map(|&x| x as i32).collect::<Vec<_>>()),
            3 => w.write_var_f32(
                &name,
                &walk.iter().map(|&x| x as f32 * 0.5).collect::<Vec<_>>(),
            ),
            _ => w.write_var_f64(
                &name,
                &walk.iter().map(|&x| x as f64 * 0.25).collect::<Vec<_>>(),
            ),
        }
        .unwrap();
    }
    w.close().unwrap();
}

#[test]
fn a_file_of_many_interleaved_record_variables_reads_back() {
    let dir = temp_dir();
    for (tag, version) in [
        (1, netcdf3::Version::Classic),
        (2, netcdf3::Version::Offset64Bit),
    ] {
        let nc = dir.path().join(format!("records{tag}.nc"));
        write_records(&nc, 1500, version);
        let original = std::fs::read(&nc).unwrap();
        for block in [1024u32, 16 << 10] {
            let z = dir.path().join(format!("records{tag}-{block}.nc3z"));
            pack(&nc, &z, block);
            check_file(&original, &z, 3000, tag * 1000 + block as u64, block as u64);
        }
    }
}

/// Blocks of `a` that need decoding (neither constant nor lost).
fn decodable_blocks(a: &Archive) -> u64 {
    a.blocks()
        .filter(|&(s, b)| !a.entry(s, b).is_constant() && !a.entry(s, b).is_lost())
        .count() as u64
}

/// Reads the whole original through `r` in pieces of `piece` bytes, and checks it.
fn read_in_pieces(r: &OriginalReader, piece: usize, original: &[u8]) {
    let mut c = r.cursor();
    let mut buf = vec![0u8; piece];
    let mut at = 0usize;
    loop {
        let n = c.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        assert!(buf[..n] == original[at..at + n], "piece at {at}");
        at += n;
    }
    assert_eq!(at, original.len());
}

#[test]
fn a_sequential_read_of_interleaved_records_decodes_each_block_once() {
    let dir = temp_dir();
    let nc = dir.path().join("records.nc");
    write_records(&nc, 1500, netcdf3::Version::Classic);
    let original = std::fs::read(&nc).unwrap();
    let z = dir.path().join("records.nc3z");
    pack(&nc, &z, 2048);
    for piece in [4 << 10, 64 << 10, 1 << 20] {
        // The cache too small for a block of each record variable: the reader raises it.
        let a = Archive::open(&z).unwrap();
        a.set_cache_budget(8 << 10);
        let need = decodable_blocks(&a);
        let r = OriginalReader::new(a);
        read_in_pieces(&r, piece, &original);
        let decoded = r.archive().blocks_decoded();
        eprintln!("pieces of {piece}: {decoded} decodes of {need} blocks");
        assert!(need > 100, "{need} blocks");
        assert!(
            decoded >= need && decoded as f64 <= need as f64 * 1.1,
            "pieces of {piece}: {decoded} decodes of {need} blocks"
        );
    }
    // Lowered again below a block of each record variable, the same read decodes blocks over
    // and over (which is what the reader's budget prevents).
    let r = OriginalReader::open(&z).unwrap();
    r.archive().set_cache_budget(8 << 10);
    let need = decodable_blocks(r.archive());
    read_in_pieces(&r, 4 << 10, &original);
    let decoded = r.archive().blocks_decoded();
    eprintln!("with an 8 KiB cache: {decoded} decodes of {need} blocks");
    assert!(decoded > 2 * need, "{decoded} decodes of {need} blocks");
}

#[test]
fn threads_reading_one_reader_at_once_get_the_original() {
    let dir = temp_dir();
    let nc = dir.path().join("records.nc");
    write_records(&nc, 800, netcdf3::Version::Classic);
    let original = std::fs::read(&nc).unwrap();
    let z = dir.path().join("records.nc3z");
    pack(&nc, &z, 1024);
    let r = OriginalReader::open(&z).unwrap();
    let len = original.len() as u64;
    std::thread::scope(|sc| {
        for t in 0..4u64 {
            let (r, original) = (r.clone(), &original);
            sc.spawn(move || {
                let mut rng = Rng(100 + t);
                for _ in 0..500 {
                    let (off, n) = random_range(&mut rng, len, &[], 1024);
                    let mut buf = vec![0u8; n];
                    let got = r.read_at(off, &mut buf).unwrap();
                    let from = off.min(len) as usize;
                    let want = &original[from..(from + n).min(original.len())];
                    assert_eq!(got, want.len());
                    assert!(buf[..got] == *want, "thread {t}: {n} at {off}");
                }
            });
        }
    });
}

/// Flips a byte in the middle of the payload of block `b` of stream `s` of the archive `z`.
fn damage(z: &Path, s: usize, b: u64) {
    let a = Archive::open(z).unwrap();
    let e = *a.entry(s, b);
    assert!(!e.is_constant());
    let at = e.offset as usize + nc3pack::format::FRAME_HEADER_LEN + e.stored_len as usize / 2;
    drop(a);
    let mut bytes = std::fs::read(z).unwrap();
    bytes[at] ^= 0x5A;
    std::fs::write(z, bytes).unwrap();
}

/// Whether the original's bytes `[off, off + n)` include a byte of block `b` of variable `v`
/// (of `bb`-byte blocks).
fn touches(l: &Layout, off: u64, n: u64, v: usize, b: u64, bb: u64) -> bool {
    let mut hit = false;
    l.walk_range(off, off + n, |s| -> Result<(), ()> {
        if s.target == Target::Var(v) && s.at < (b + 1) * bb && s.at + s.len > b * bb {
            hit = true;
        }
        Ok(())
    })
    .unwrap();
    hit
}

#[test]
fn a_damaged_block_fails_the_reads_that_touch_it_and_no_other() {
    let dir = temp_dir();
    let nc = dir.path().join("records.nc");
    write_records(&nc, 800, netcdf3::Version::Classic);
    let cases = [(nc, "v13"), (sample("gridded_sst.nc"), "sst")];
    for (k, (nc, var)) in cases.iter().enumerate() {
        let original = std::fs::read(nc).unwrap();
        let len = original.len() as u64;
        let z = dir.path().join(format!("damaged{k}.nc3z"));
        let bs = 4096u32;
        let opts = PackOptions::default()
            .with_block_size(bs)
            .with_threads(1)
            .with_compact(false)
            .with_force(true);
        pack_file(nc, &z, &opts).unwrap();
        let v = Header::parse(&original, len).unwrap().var_id(var).unwrap();
        let a = Archive::open(&z).unwrap();
        let bad = (a.block_count(v) / 2..a.block_count(v))
            .find(|&b| !a.entry(v, b).is_constant())
            .unwrap();
        drop(a);
        damage(&z, v, bad);
        let r = OriginalReader::open(&z).unwrap();
        let l = r.archive().layout().clone();
        let bb = r.archive().block_bytes(v);
        let mut rng = Rng(99 + k as u64);
        let (mut failed, mut fine) = (0, 0);
        for i in 0..1500 {
            let (off, n) = if i % 3 == 0 {
                // Around the damaged block's bytes.
                let mut first = None;
                l.walk_range(0, len, |s| -> Result<(), ()> {
                    if first.is_none() && s.target == Target::Var(v) && s.at + s.len > bad * bb {
                        first = Some(s.offset + (bad * bb).saturating_sub(s.at));
                    }
                    Ok(())
                })
                .unwrap();
                let p = first.unwrap();
                (
                    (p + rng.below(2 * bb)).saturating_sub(bb),
                    rng.below(bb) as usize + 1,
                )
            } else {
                random_range(&mut rng, len, &[], bb)
            };
            let mut buf = vec![0u8; n];
            match r.read_at(off, &mut buf) {
                Ok(got) => {
                    assert!(
                        !touches(&l, off, n as u64, v, bad, bb),
                        "{var}: a read of {n} at {off} touches the damaged block and gave bytes"
                    );
                    let from = off.min(len) as usize;
                    assert!(buf[..got] == original[from..from + got], "{n} at {off}");
                    fine += 1;
                }
                Err(e) => {
                    assert!(
                        touches(&l, off, n as u64, v, bad, bb),
                        "{var}: a read of {n} at {off} failed: {e}"
                    );
                    let msg = e.to_string();
                    assert!(
                        msg.contains(&format!("block {bad} of variable \"{var}\"")),
                        "{msg}"
                    );
                    failed += 1;
                }
            }
        }
        assert!(failed > 100 && fine > 100, "{failed} failed, {fine} fine");
        // The whole file cannot be read; the cursor says which block.
        let e = r.cursor().read_to_end(&mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains(&format!("block {bad}")), "{e}");
    }
}

#[test]
fn an_ncfile_over_the_reader_reads_the_values_of_the_original() {
    use nc3pack::{Dataset, NcFile};
    let dir = temp_dir();
    let nc = sample("obs_points.nc");
    let z = dir.path().join("obs.nc3z");
    pack(&nc, &z, 4096);
    let r = OriginalReader::open(&z).unwrap();
    let from_archive = NcFile::from_reader(r, "obs.nc3z".as_ref()).unwrap();
    let original = NcFile::open(&nc).unwrap();
    for v in 0..original.header().var_count() {
        assert_eq!(
            from_archive.read_var_bytes(v).unwrap(),
            original.read_var_bytes(v).unwrap(),
            "variable {v}"
        );
    }
}

/// An archive written over in place while a reader has it open (with its modification time
/// set back, as `rsync --inplace -t` leaves it): the reader's next read of the file fails
/// saying so, never giving bytes of the new archive as the old one's; a reader opened after
/// reads the new one. An archive renamed over (or deleted) while open reads on as the one
/// opened.
#[test]
fn an_archive_written_over_in_place_fails_the_next_read_and_one_renamed_over_reads_on() {
    use nc3pack::format::{Codec, Filter};
    let dir = temp_dir();
    let a = std::fs::read(sample("gridded_sst.nc")).unwrap();
    // The same file with other values in its last MiB: the archives are of one length.
    let mut b = a.clone();
    let n = b.len();
    b[n - (1 << 20)..].iter_mut().for_each(|x| *x ^= 0x55);
    let opts = PackOptions::default()
        .with_codec(Codec::None)
        .with_filter(nc3pack::FilterMode::Fixed(Filter::None))
        .with_pco(false)
        .with_block_size(64 << 10)
        .with_threads(1)
        .with_force(true);
    let (za, zb) = (dir.path().join("a.nc3z"), dir.path().join("b.nc3z"));
    for (bytes, z, name) in [(&a, &za, "a.nc"), (&b, &zb, "b.nc")] {
        let nc = dir.path().join(name);
        std::fs::write(&nc, bytes).unwrap();
        pack_file(&nc, z, &opts).unwrap();
    }
    let (za, zb) = (std::fs::read(&za).unwrap(), std::fs::read(&zb).unwrap());
    assert_eq!(za.len(), zb.len());
    assert_ne!(za, zb);
    let z = dir.path().join("x.nc3z");
    std::fs::write(&z, &za).unwrap();
    let r = OriginalReader::new(Archive::open(&z).unwrap());
    let mut buf = vec![0u8; 64 << 10];
    assert_eq!(r.read_at(0, &mut buf).unwrap(), buf.len());
    assert_eq!(buf, a[..buf.len()]);
    // In place, its modification time set back.
    let mtime = std::fs::metadata(&z).unwrap().modified().unwrap();
    std::fs::write(&z, &zb).unwrap();
    let f = std::fs::File::options().write(true).open(&z).unwrap();
    f.set_modified(mtime).unwrap();
    drop(f);
    assert_eq!(std::fs::metadata(&z).unwrap().modified().unwrap(), mtime);
    for at in [(n - 1000) as u64, (n / 2) as u64] {
        let e = r.read_at(at, &mut buf).unwrap_err();
        assert!(matches!(e, nc3pack::Error::Changed { .. }), "{e}");
        assert!(
            e.to_string()
                .contains("changed on disk since it was opened"),
            "{e}"
        );
    }
    // Opened again: the new one.
    let r = OriginalReader::new(Archive::open(&z).unwrap());
    let mut whole = Vec::new();
    r.cursor().read_to_end(&mut whole).unwrap();
    assert!(whole == b);
    // Renamed over while open: read on as the one opened (each block read after the rename).
    let r = OriginalReader::new(Archive::open(&z).unwrap());
    let tmp = dir.path().join("x.tmp");
    std::fs::write(&tmp, &za).unwrap();
    std::fs::rename(&tmp, &z).unwrap();
    let mut whole = Vec::new();
    r.cursor().read_to_end(&mut whole).unwrap();
    assert!(whole == b);
    // And deleted while open.
    let r = OriginalReader::new(Archive::open(&z).unwrap());
    std::fs::remove_file(&z).unwrap();
    let mut whole = Vec::new();
    r.cursor().read_to_end(&mut whole).unwrap();
    assert!(whole == a);
}
