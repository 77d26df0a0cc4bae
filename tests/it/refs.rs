//! The `refs` filter (design/FORMAT.md, filter 7) on whole archives: the `max` preset uses it
//! before lzma on values repeated far apart (a mesh's vertex coordinates and numbers), the
//! default preset never does, and such archives unpack byte for byte and read back as the
//! `netcdf3` crate reads the original.

use crate::util::{nc3pack, preset_options, temp_dir};
use nc3pack::format::{Codec, Filter};
use nc3pack::{pack_file, unpack_file, Archive, Dataset, Hyperslab, UnpackOptions};
use std::path::Path;

/// Vertices of the grid the mesh triangulates, in rows of `W`.
const W: usize = 240;
const H: usize = 160;
/// Triangles: two a quad of the grid.
const CELLS: usize = 2 * (W - 1) * (H - 1);

/// The cells of [`mesh_file`] with a grid of `w` x `h` vertices.
pub fn mesh_cells(w: usize, h: usize) -> usize {
    2 * (w - 1) * (h - 1)
}

/// A triangulated w x h grid of vertices, each with random coordinate bits (no byte filter
/// helps) and a number (the numbers shuffled): `double clon_vertices(cell, nv)` and
/// `int vertex_of_cell(nv, cell)`. The cells go
/// row of quads by row, the even rows first and then the odd ones, so a vertex recurs in the
/// cells next to it and again about half the variable away. Returns the two variables.
pub fn mesh_file(path: &Path, w: usize, h: usize) -> (Vec<f64>, Vec<i32>) {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let lon: Vec<f64> = (0..w * h)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            f64::from_bits(x >> 2)
        })
        .collect();
    let mut cells: Vec<[usize; 3]> = Vec::with_capacity(mesh_cells(w, h));
    for parity in 0..2 {
        for r in (parity..h - 1).step_by(2) {
            for c in 0..w - 1 {
                let (a, b) = (r * w + c, (r + 1) * w + c);
                cells.push([a, a + 1, b]);
                cells.push([a + 1, b + 1, b]);
            }
        }
    }
    let cv: Vec<f64> = cells.iter().flat_map(|t| t.map(|v| lon[v])).collect();
    // Vertex numbers in no order (a shuffle): no delta of them is small.
    let mut id: Vec<i32> = (1..=(w * h) as i32).collect();
    for i in (1..id.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        id.swap(i, (x % (i as u64 + 1)) as usize);
    }
    let voc: Vec<i32> = (0..3)
        .flat_map(|k| cells.iter().map(|t| id[t[k]]).collect::<Vec<_>>())
        .collect();
    let mut ds = netcdf3::DataSet::new();
    ds.add_fixed_dim("cell", mesh_cells(w, h)).unwrap();
    ds.add_fixed_dim("nv", 3).unwrap();
    ds.add_var_f64("clon_vertices", &["cell", "nv"]).unwrap();
    ds.add_var_i32("vertex_of_cell", &["nv", "cell"]).unwrap();
    let mut w = netcdf3::FileWriter::open(path).unwrap();
    w.set_def(&ds, netcdf3::Version::Classic, 0).unwrap();
    w.write_var_f64("clon_vertices", &cv).unwrap();
    w.write_var_i32("vertex_of_cell", &voc).unwrap();
    w.close().unwrap();
    (cv, voc)
}

#[test]
fn max_uses_refs_on_far_repeats_and_reads_back_exactly() {
    let dir = temp_dir();
    let nc = dir.path().join("mesh.nc");
    let (cv, voc) = mesh_file(&nc, W, H);
    let original = std::fs::read(&nc).unwrap();
    // Whole variables in one block each (the `max` preset's), and blocks of 512 KiB.
    for (max, block_size, threads) in [
        (true, None, 2),
        (true, Some(512 << 10), 1),
        (false, None, 2),
    ] {
        let ctx = format!("max {max} block size {block_size:?}");
        let z = dir.path().join(format!("m{max}{block_size:?}.nc3z"));
        pack_file(&nc, &z, &preset_options(max, block_size, threads)).unwrap();
        let a = Archive::open(&z).unwrap();
        let refs = |name: &str| {
            let s = a.var_id(name).unwrap();
            (0..a.block_count(s))
                .filter(|&b| {
                    (a.entry(s, b).codec, a.entry(s, b).filter) == (Codec::Lzma, Filter::Refs)
                })
                .count()
        };
        let info = nc3pack(&["info".as_ref(), z.as_os_str()]).expect(0).stdout;
        if max {
            assert!(refs("clon_vertices") > 0, "{ctx}: {info}");
            assert!(refs("vertex_of_cell") > 0, "{ctx}: {info}");
        } else {
            assert_eq!(refs("clon_vertices") + refs("vertex_of_cell"), 0, "{ctx}");
        }
        assert_eq!(info.contains("\"lzma+refs\""), max, "{ctx}: {info}");
        // Byte for byte, and values as the netcdf3 crate reads them (across blocks).
        let back = dir.path().join(format!("m{max}{block_size:?}.nc"));
        unpack_file(&z, &back, &UnpackOptions::default()).unwrap();
        assert!(std::fs::read(&back).unwrap() == original, "{ctx}");
        let slab = Hyperslab::new(&[CELLS as u64, 3], &[1_234, 0], &[60_000, 2], &[1, 1]).unwrap();
        let got: Vec<f64> = a.read("clon_vertices", &slab).unwrap();
        let want: Vec<f64> = (1_234..61_234)
            .flat_map(|c| [cv[3 * c], cv[3 * c + 1]])
            .collect();
        assert!(
            got.iter()
                .map(|x| x.to_bits())
                .eq(want.iter().map(|x| x.to_bits())),
            "{ctx}"
        );
        let slab = Hyperslab::new(&[3, CELLS as u64], &[1, 5], &[2, 70_000], &[1, 1]).unwrap();
        let got: Vec<i32> = a.read("vertex_of_cell", &slab).unwrap();
        let want: Vec<i32> = (1..3)
            .flat_map(|k| voc[k * CELLS + 5..k * CELLS + 70_005].to_vec())
            .collect();
        assert!(got == want, "{ctx}");
    }
}
