//! Hyperslab reads of a real archive with a few bytes changed at fuzzer-chosen offsets.
//!
//! The checksums must make wrong data impossible: any read that succeeds on the mutated archive
//! must return exactly what the intact archive returns, which must be what the original netCDF
//! file holds. The only exception is a mutation that rewrote a protected region *and* its CRC to
//! match (a forgery; the harness checks for that before calling a difference a finding).
//!
//! Input: byte 0 picks the seed archive; byte 1 flags (bits 0-1: decode threads - 1, bit 2: no
//! cache); byte 2 the number of mutations (mod 9); then 7 bytes per mutation (u16 offset mod the
//! archive's length, op, u32 value; op mod 4: 0 xor a byte, 1 set a byte, 2 write the u32
//! little-endian, 3 add to a byte); the rest chooses hyperslabs (see `choose_slab`).
#![no_main]
use libfuzzer_sys::fuzz_target;
use nc3pack::Archive;
use nc3pack::{Dataset, NcFile};
use nc3pack_fuzz::{choose_slab, crc_forged, Bytes};
use std::path::Path;

/// (archive made by `nc3pack pack` (fuzz/make_corpus.sh --seeds), the netCDF file it was made
/// from). Byte 0 of an input picks one modulo 10: inputs saved when there were 4 or 7 seeds keep
/// their seed for byte 0 values 0 to 3 or 0 to 6.
const SEEDS: [(&[u8], &[u8]); 10] = [
    (
        include_bytes!("../seeds/classic_records_zstd_b64.nc3z"),
        include_bytes!("../../samples/classic_records.nc"),
    ),
    (
        include_bytes!("../seeds/cdf5_types_deflate_b64.nc3z"),
        include_bytes!("../../samples/cdf5_types.nc"),
    ),
    (
        include_bytes!("../seeds/offset64_mixed_none_b64.nc3z"),
        include_bytes!("../../samples/offset64_mixed.nc"),
    ),
    // Block size 16: constant blocks in the index and a constants frame.
    (
        include_bytes!("../seeds/fill_values_zstd_b16.nc3z"),
        include_bytes!("../../samples/fill_values.nc"),
    ),
    // Codec lzma (codec 5) with filters, and pco + plane (filter 6) blocks, block size 512.
    (
        include_bytes!("../seeds/smooth_grid_lzma_b512.nc3z"),
        include_bytes!("../seeds/smooth_grid.nc"),
    ),
    // The `max` preset: pco + plane, pco and zstd blocks, block size 1024.
    (
        include_bytes!("../seeds/smooth_grid_max_b1024.nc3z"),
        include_bytes!("../seeds/smooth_grid.nc"),
    ),
    // The `max` preset choosing lzma for far-apart repeats, block size 8192.
    (
        include_bytes!("../seeds/mesh_repeats_max_b8192.nc3z"),
        include_bytes!("../seeds/mesh_repeats.nc"),
    ),
    // The mask filter (8) with pco: a field with land, block size 1024.
    (
        include_bytes!("../seeds/ocean_land_b1024.nc3z"),
        include_bytes!("../seeds/ocean_land.nc"),
    ),
    // The `max` preset's refs filter (7) before lzma: a mesh, block size 16384.
    (
        include_bytes!("../seeds/mesh_refs_max_b16384.nc3z"),
        include_bytes!("../seeds/mesh_refs.nc"),
    ),
    // The `max` preset's context codec (6): a noisy field with fill values, block size 4096.
    (
        include_bytes!("../seeds/noisy_field_max_b4096.nc3z"),
        include_bytes!("../seeds/noisy_field.nc"),
    ),
];

fuzz_target!(|data: &[u8]| {
    let mut r = Bytes::new(data);
    let (orig, nc_bytes) = SEEDS[r.u8() as usize % SEEDS.len()];
    let flags = r.u8();
    let threads = 1 + (flags & 3) as usize;
    let mut m = orig.to_vec();
    let nmut = r.u8() % 9;
    for _ in 0..nmut {
        let at = r.u16() as usize % m.len();
        let op = r.u8() % 4;
        let val = r.u32();
        match op {
            0 => m[at] ^= val as u8,
            1 => m[at] = val as u8,
            2 => {
                for (i, b) in val.to_le_bytes().into_iter().enumerate() {
                    if let Some(x) = m.get_mut(at + i) {
                        *x = b;
                    }
                }
            }
            _ => m[at] = m[at].wrapping_add(val as u8),
        }
    }
    let path = Path::new("seed.nc3z");
    let nc = NcFile::from_reader(nc_bytes.to_vec(), Path::new("seed.nc")).expect("seed .nc opens");
    let intact = Archive::from_reader(orig.to_vec(), path)
        .expect("seed archive opens (after a format change: fuzz/make_corpus.sh --seeds)");
    let mutated = Archive::from_reader(m.clone(), path);
    if orig == &m[..] {
        assert!(mutated.is_ok(), "an unchanged archive fails to open");
    }
    let Ok(mut mutated) = mutated else { return };
    mutated.set_threads(threads);
    if flags & 4 != 0 {
        mutated.set_cache_budget(0);
    }
    let forged = || crc_forged(orig, &m);
    // Metadata comes from the CRC-checked header copy: it must be the original's.
    // (Debug text: float attributes may hold NaN, which is not == itself.)
    let same_header = format!("{:?}", mutated.header()) == format!("{:?}", nc.header());
    if !same_header || mutated.layout() != nc.layout() {
        assert!(
            forged(),
            "mutated archive opens with another header or layout"
        );
        return;
    }
    let nvars = nc.header().var_count();
    for _ in 0..8 {
        if nvars == 0 || r.is_empty() {
            break;
        }
        let name = nc.header().var(r.u8() as usize % nvars).name().to_string();
        let v = nc.var_id(&name).unwrap();
        let shape = nc.layout().vars[v].shape.clone();
        let Ok(slab) = choose_slab(&nc, &name, &shape, &mut r) else {
            continue;
        };
        let want = nc.read_raw(&name, &slab).expect("the original file reads");
        let from_intact = intact
            .read_raw(&name, &slab)
            .expect("the intact archive reads");
        assert!(
            from_intact == want,
            "intact archive: {name:?} {slab:?} differs from the netCDF file"
        );
        match mutated.read_raw(&name, &slab) {
            Ok(got) if got != want => {
                assert!(
                    forged(),
                    "mutated archive returned wrong data for {name:?} {slab:?} without an error"
                );
                return;
            }
            _ => {}
        }
        // A whole-variable read now and then (through the cache, after the slab).
        if r.u8() & 7 == 0 {
            if let Ok(got) = mutated.read_var_bytes(v) {
                let want = nc.read_var_bytes(v).unwrap();
                assert!(
                    got == want || forged(),
                    "read_var_bytes of {name:?} is wrong"
                );
            }
        }
    }
});
