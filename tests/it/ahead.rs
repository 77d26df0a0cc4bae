//! Sequential readers (a variable read in consecutive slabs, as nccopy, ncdump, xarray and
//! `nc3pack slice` do): the blocks after each slab are decoded ahead on the pool's threads;
//! the values, the errors and the cache are as a reader that reads each slab on its own
//! expects, and memory stays bounded.

use crate::util::{sample, temp_dir};
use nc3pack::{pack_file, Archive, Dataset, Error, Hyperslab, NcFile, PackOptions};
use std::path::{Path, PathBuf};

/// `gridded_sst.nc` (sst: 24 x 180 x 360 floats) packed with blocks of 64 KiB.
fn packed(dir: &Path) -> PathBuf {
    let z = dir.join("sst.nc3z");
    let opts = PackOptions::default()
        .with_block_size(64 << 10)
        .with_threads(2);
    pack_file(&sample("gridded_sst.nc"), &z, &opts).unwrap();
    z
}

/// `sst` read in consecutive slabs of `planes` planes (the last one shorter), each slab's
/// values appended.
fn scan(a: &Archive, planes: u64) -> Vec<f32> {
    let shape = [24u64, 180, 360];
    let mut all = Vec::new();
    let mut t = 0;
    while t < shape[0] {
        let n = planes.min(shape[0] - t);
        let slab = Hyperslab::new(&shape, &[t, 0, 0], &[n, 180, 360], &[1, 1, 1]).unwrap();
        all.extend(a.read::<f32>("sst", &slab).unwrap());
        t += n;
    }
    all
}

/// A sequential scan reads the same values with one thread or two, in slabs of one plane (a
/// plane is not a whole number of blocks: the slabs start and end inside blocks) or several,
/// and caches none of the blocks it reads whole (it will not come back to them: before,
/// each slab that fitted in half the cache put its blocks there, so a scan of a variable
/// filled the cache with blocks read once).
#[test]
fn a_sequential_scan_reads_the_same_values_and_leaves_the_cache_alone() {
    let dir = temp_dir();
    let z = packed(dir.path());
    let nc = NcFile::open(sample("gridded_sst.nc")).unwrap();
    let want: Vec<f32> = nc
        .read("sst", &nc.slab("sst", None, None, None).unwrap())
        .unwrap();
    for threads in [1, 2] {
        for planes in [1, 3, 5] {
            let mut a = Archive::open(&z).unwrap();
            a.set_threads(threads);
            let got = scan(&a, planes);
            assert!(got == want, "{threads} threads, slabs of {planes} planes");
            let s = a.cache_stats();
            // The first slab is not known to be part of a scan: it may cache its blocks.
            let first = (planes * 180 * 360 * 4).div_ceil(64 << 10) + 1;
            assert!(
                s.entries <= first,
                "{threads} threads, slabs of {planes} planes: {s:?}"
            );
        }
    }
}

/// A damaged block ahead of a sequential reader: the slabs before it read, and the slab that
/// holds it fails naming that block, as a read of the block alone does, whether a thread
/// decoding ahead met the damage first or not.
#[test]
fn a_damaged_block_ahead_of_a_scan_is_reported_by_the_read_that_needs_it() {
    let dir = temp_dir();
    let z = packed(dir.path());
    let a = Archive::open(&z).unwrap();
    let v = a.var_id("sst").unwrap();
    let bb = a.block_bytes(v);
    let b = 30;
    let e = *a.entry(v, b);
    assert!(!e.is_constant(), "block {b} must have a frame");
    drop(a);
    let mut bytes = std::fs::read(&z).unwrap();
    bytes[(e.offset + nc3pack::format::FRAME_HEADER_LEN as u64 + 3) as usize] ^= 0x20;
    std::fs::write(&z, &bytes).unwrap();
    let want = Archive::open(&z)
        .unwrap()
        .read_block(v, b)
        .expect_err("the damaged block must not read")
        .to_string();
    let plane = 180 * 360 * 4u64;
    let bad_plane = b * bb / plane;
    for threads in [1, 2] {
        let mut a = Archive::open(&z).unwrap();
        a.set_threads(threads);
        let shape = [24u64, 180, 360];
        for t in 0..24 {
            let slab = Hyperslab::new(&shape, &[t, 0, 0], &[1, 180, 360], &[1, 1, 1]).unwrap();
            let r = a.read::<f32>("sst", &slab);
            let touches = (t * plane..(t + 1) * plane).contains(&(b * bb))
                || (t * plane..(t + 1) * plane).contains(&((b + 1) * bb - 1));
            match r {
                Ok(_) => assert!(!touches, "plane {t} holds block {b}: it must fail"),
                Err(e) => {
                    assert!(touches, "plane {t} ({threads} threads): {e}");
                    assert!(matches!(e, Error::Block { block: 30, .. }), "{e}");
                    assert_eq!(e.to_string(), want, "plane {t}");
                }
            }
        }
        assert!(bad_plane < 24);
    }
}

/// A child of `fork()` (a Python multiprocessing or dask worker) reads with threads of its own:
/// the parent's pool, started before the fork, has no threads there, and must not be waited
/// for.
#[test]
fn a_forked_child_reads_in_parallel() {
    let dir = temp_dir();
    let z = packed(dir.path());
    let nc = NcFile::open(sample("gridded_sst.nc")).unwrap();
    let want: Vec<f32> = nc
        .read("sst", &nc.slab("sst", None, None, None).unwrap())
        .unwrap();
    let mut a = Archive::open(&z).unwrap();
    a.set_threads(2);
    a.set_cache_budget(0);
    // Starts the pool in this process, and decodes ahead of a scan.
    assert!(scan(&a, 2) == want);
    // SAFETY: the child only reads, then leaves with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // Bounded: a child that hangs is killed by the alarm.
        unsafe { libc::alarm(60) };
        let ok = scan(&a, 2) == want
            && a.read::<f32>("sst", &a.slab("sst", None, None, None).unwrap())
                .is_ok_and(|v| v == want);
        unsafe { libc::_exit(if ok { 0 } else { 3 }) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked.
    let got = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(got, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child failed or hung: status {status:#x}"
    );
}

/// `sst`'s selection `slab` through [`Dataset::read_native_pieces`] (pieces of at most 1000
/// bytes the default way): the pieces, each checked to be whole aligned floats.
fn pieces(a: &Archive, slab: &Hyperslab) -> Vec<Vec<u8>> {
    let v = a.var_id("sst").unwrap();
    let mut got = Vec::new();
    a.read_native_pieces(v, slab, 1000, &mut |p| {
        assert!(
            p.len() % 4 == 0 && p.as_ptr().align_offset(4) == 0,
            "{}",
            p.len()
        );
        got.push(p.to_vec());
        true
    })
    .unwrap();
    got
}

/// A large selection of one run of bytes (the whole variable, consecutive planes that start
/// and end inside blocks) is handed over block by block on two threads, these 64 KiB blocks
/// in groups of 16 (a megabyte): every piece but the first and the last is such a group,
/// none goes into the cache, and the values are the original's. With one thread, or a
/// selection of several runs or a few blocks, the pieces are at most the size asked for. The
/// values are the same every way, and with a block of a group in the cache (the group then
/// read block by block).
#[test]
fn a_large_selection_is_handed_over_block_by_block() {
    let dir = temp_dir();
    let z = packed(dir.path());
    let nc = NcFile::open(sample("gridded_sst.nc")).unwrap();
    let v = nc.var_id("sst").unwrap();
    let shape = [24u64, 180, 360];
    let bb = 64 << 10;
    let slabs = [
        (Hyperslab::all(&shape), true),
        (
            Hyperslab::new(&shape, &[3, 0, 0], &[7, 180, 360], &[1, 1, 1]).unwrap(),
            true,
        ),
        (
            Hyperslab::new(&shape, &[3, 0, 0], &[1, 50, 360], &[1, 1, 1]).unwrap(),
            false,
        ),
        (
            Hyperslab::new(&shape, &[0, 5, 0], &[24, 100, 360], &[1, 1, 1]).unwrap(),
            false,
        ),
    ];
    for threads in [1, 2] {
        for (slab, one_run) in &slabs {
            let mut want = vec![0u8; slab.len() as usize * 4];
            nc.read_native_into(v, slab, &mut want).unwrap();
            let mut a = Archive::open(&z).unwrap();
            a.set_threads(threads);
            let got = pieces(&a, slab);
            let ctx = format!("{threads} threads, {slab:?}");
            assert!(got.concat() == want, "{ctx}");
            if threads == 2 && *one_run {
                assert!(got.len() >= 2, "{ctx}");
                assert!(got.iter().all(|p| p.len() <= 16 * bb), "{ctx}");
                let inner = &got[1..got.len() - 1];
                assert!(inner.iter().all(|p| p.len() == 16 * bb), "{ctx}");
                assert_eq!(a.cache_stats().entries, 0, "{ctx}");
                // A block of the second group cached (a value of block 20: element 327,680,
                // [5, 10, 80]): the same values.
                a.set_cache_first_small_reads(true);
                let one = Hyperslab::new(&shape, &[5, 10, 80], &[1, 1, 1], &[1, 1, 1]).unwrap();
                a.read_native_into(v, &one, &mut [0u8; 4]).unwrap();
                assert_eq!(a.cache_stats().entries, 1, "{ctx}");
                assert!(pieces(&a, slab).concat() == want, "{ctx}, a block cached");
            } else {
                assert!(got.iter().all(|p| p.len() <= 1000), "{ctx}");
            }
        }
    }
}

/// A reader that stops taking pieces stops the read: no piece is handed over after it said
/// so, and the read is not an error.
#[test]
fn a_reader_that_stops_gets_no_more_pieces() {
    let dir = temp_dir();
    let z = packed(dir.path());
    let mut a = Archive::open(&z).unwrap();
    a.set_threads(2);
    let v = a.var_id("sst").unwrap();
    let slab = a.slab("sst", None, None, None).unwrap();
    let mut calls = 0;
    a.read_native_pieces(v, &slab, 1000, &mut |_| {
        calls += 1;
        calls < 3
    })
    .unwrap();
    assert_eq!(calls, 3);
}

/// A damaged block in a selection handed over block by block (64 KiB blocks, in groups of 16):
/// the groups before its group are handed over, then the read fails naming that block, as a
/// read of the block alone does.
#[test]
fn a_damaged_block_in_a_large_selection_fails_the_read_there() {
    let dir = temp_dir();
    let z = packed(dir.path());
    let a = Archive::open(&z).unwrap();
    let v = a.var_id("sst").unwrap();
    let bb = a.block_bytes(v);
    let b = 30;
    let e = *a.entry(v, b);
    assert!(!e.is_constant(), "block {b} must have a frame");
    drop(a);
    let mut bytes = std::fs::read(&z).unwrap();
    bytes[(e.offset + nc3pack::format::FRAME_HEADER_LEN as u64 + 3) as usize] ^= 0x20;
    std::fs::write(&z, &bytes).unwrap();
    let want = Archive::open(&z)
        .unwrap()
        .read_block(v, b)
        .expect_err("the damaged block must not read")
        .to_string();
    let mut a = Archive::open(&z).unwrap();
    a.set_threads(2);
    let slab = a.slab("sst", None, None, None).unwrap();
    let mut handed = 0u64;
    let e = a
        .read_native_pieces(v, &slab, 1000, &mut |p| {
            handed += p.len() as u64;
            true
        })
        .expect_err("a damaged block must fail the read");
    assert!(matches!(e, Error::Block { block: 30, .. }), "{e}");
    assert_eq!(e.to_string(), want);
    assert_eq!(handed, b / 16 * 16 * bb);
}
