//! Read benchmark: latency and throughput of hyperslab reads from an archive, next to the same
//! reads from the original netCDF-3 file. Prints a markdown table.
//!
//! Run: `cargo bench --bench read` (env `NC3PACK_BENCH_DIR` for where the generated files go,
//! default target/bench-data; `NC3PACK_BENCH_SMALL=1` for a 10x smaller gridded file;
//! `NC3PACK_BENCH_DECODE_ONLY=1` for the block decode table only: one thread decoding 32 blocks
//! of the gridded data stored with zstd, with pco, with lorenzo + zstd, with plane + pco, with
//! lzma and with context, the same blocks with 40 % of their rows filled with a fill value
//! with pco and with mask + pco, and 16 blocks of a topography-like int16 field;
//! `NC3PACK_BENCH_SERIES_ONLY=1` for the time-series table only).
//!
//! The time-series table packs the gridded file with per-variable block sizes for t2m (1 MiB,
//! the default, down to 4 KiB) and reads 100 values along the record dimension (one per record,
//! so one block per record whatever the block size) and one plane, cold.
//!
//! Files (generated once, deterministic):
//! - gridded.nc: CDF-2, float t2m(time=UNLIMITED 100, lat 1000, lon 1000), a smooth field plus
//!   noise (400 MB);
//! - points.nc: CDF-1, 1,000,000 records of 6 record variables (char station(obs, 8), int time,
//!   float lat, lon, temp, short qc) — the record-heavy case.

use nc3pack::{Archive, Hyperslab, PackOptions};
use nc3pack::{Dataset, NcFile};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

struct Var {
    name: &'static str,
    dims: Vec<usize>,
    nc_type: u32,
    esize: u64,
}

/// Writes a CDF-1 or CDF-2 header for dims (len 0 = unlimited) and variables without attributes;
/// returns the header bytes and each variable's begin.
fn header(version: u8, numrecs: u32, dims: &[(&str, u32)], vars: &[Var]) -> (Vec<u8>, Vec<u64>) {
    fn name(b: &mut Vec<u8>, s: &str) {
        b.extend_from_slice(&(s.len() as u32).to_be_bytes());
        b.extend_from_slice(s.as_bytes());
        b.resize(b.len().div_ceil(4) * 4, 0);
    }
    let build = |begins: &[u64]| {
        let mut b = b"CDF".to_vec();
        b.push(version);
        b.extend_from_slice(&numrecs.to_be_bytes());
        b.extend_from_slice(&0x0Au32.to_be_bytes());
        b.extend_from_slice(&(dims.len() as u32).to_be_bytes());
        for (n, l) in dims {
            name(&mut b, n);
            b.extend_from_slice(&l.to_be_bytes());
        }
        b.extend_from_slice(&[0u8; 8]);
        b.extend_from_slice(&0x0Bu32.to_be_bytes());
        b.extend_from_slice(&(vars.len() as u32).to_be_bytes());
        for (v, &begin) in vars.iter().zip(begins) {
            name(&mut b, v.name);
            b.extend_from_slice(&(v.dims.len() as u32).to_be_bytes());
            for &d in &v.dims {
                b.extend_from_slice(&(d as u32).to_be_bytes());
            }
            b.extend_from_slice(&[0u8; 8]);
            b.extend_from_slice(&v.nc_type.to_be_bytes());
            let n: u64 = v
                .dims
                .iter()
                .map(|&d| u64::from(dims[d].1.max(1)))
                .product::<u64>()
                * v.esize;
            b.extend_from_slice(&((n.div_ceil(4) * 4) as u32).to_be_bytes());
            if version == 1 {
                b.extend_from_slice(&(begin as u32).to_be_bytes());
            } else {
                b.extend_from_slice(&begin.to_be_bytes());
            }
        }
        b
    };
    let len = build(&vec![0; vars.len()]).len() as u64;
    // All variables here are record variables: begins follow each other with 4-byte padding.
    let mut begins = Vec::new();
    let mut at = len;
    for v in vars {
        begins.push(at);
        let n: u64 = v
            .dims
            .iter()
            .skip(1)
            .map(|&d| u64::from(dims[d].1))
            .product::<u64>()
            * v.esize;
        at += if vars.len() == 1 {
            n
        } else {
            n.div_ceil(4) * 4
        };
    }
    (build(&begins), begins)
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn noise(&mut self) -> f32 {
        (self.next() % 1000) as f32 / 1000.0 - 0.5
    }
}

fn make_gridded(path: &Path, nt: u32, ny: u32, nx: u32) {
    let dims = [("time", 0), ("lat", ny), ("lon", nx)];
    let vars = [Var {
        name: "t2m",
        dims: vec![0, 1, 2],
        nc_type: 5,
        esize: 4,
    }];
    let (h, _) = header(2, nt, &dims, &vars);
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    w.write_all(&h).unwrap();
    let mut rng = Rng(42);
    let mut row = Vec::with_capacity(nx as usize * 4);
    for t in 0..nt {
        for y in 0..ny {
            row.clear();
            for x in 0..nx {
                let (fy, fx) = (y as f32 / ny as f32 * 3.0, x as f32 / nx as f32 * 6.0);
                let v = 280.0 + 10.0 * (fx + t as f32 * 0.1).sin() * fy.cos() + 0.05 * rng.noise();
                row.extend_from_slice(&v.to_be_bytes());
            }
            w.write_all(&row).unwrap();
        }
    }
    w.flush().unwrap();
}

fn make_points(path: &Path, n: u32) {
    let dims = [("obs", 0), ("strlen", 8)];
    let vars = [
        Var {
            name: "station",
            dims: vec![0, 1],
            nc_type: 2,
            esize: 1,
        },
        Var {
            name: "time",
            dims: vec![0],
            nc_type: 4,
            esize: 4,
        },
        Var {
            name: "lat",
            dims: vec![0],
            nc_type: 5,
            esize: 4,
        },
        Var {
            name: "lon",
            dims: vec![0],
            nc_type: 5,
            esize: 4,
        },
        Var {
            name: "temp",
            dims: vec![0],
            nc_type: 5,
            esize: 4,
        },
        Var {
            name: "qc",
            dims: vec![0],
            nc_type: 3,
            esize: 2,
        },
    ];
    let (h, _) = header(1, n, &dims, &vars);
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    w.write_all(&h).unwrap();
    let mut rng = Rng(7);
    for i in 0..n {
        let st = rng.below(500);
        w.write_all(format!("ST{st:05}\0").as_bytes()).unwrap();
        w.write_all(&(i as i32 * 60).to_be_bytes()).unwrap();
        w.write_all(&(-60.0 + st as f32 * 0.24).to_be_bytes())
            .unwrap();
        w.write_all(&(st as f32 * 0.72 - 180.0).to_be_bytes())
            .unwrap();
        w.write_all(&(15.0 + (i as f32 / 5000.0).sin() * 8.0 + rng.noise()).to_be_bytes())
            .unwrap();
        w.write_all(&[0, (rng.below(10) == 0) as u8, 0, 0]).unwrap(); // short + 2 pad bytes
    }
    w.flush().unwrap();
}

/// Median time of `reps` runs of `f`.
fn time(reps: usize, mut f: impl FnMut()) -> Duration {
    let mut t: Vec<Duration> = (0..reps)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed()
        })
        .collect();
    t.sort();
    t[reps / 2]
}

fn fmt_lat(d: Duration) -> String {
    let ns = d.as_nanos() as f64;
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{:.2} ms", ns / 1e6)
    }
}

fn fmt_tp(bytes: u64, d: Duration) -> String {
    format!(
        "{:.2} GB/s ({})",
        bytes as f64 / d.as_secs_f64() / 1e9,
        fmt_lat(d)
    )
}

/// Decodes the first 32 blocks (1 MiB) of the gridded file's data one at a time on one thread,
/// each stored the ways the default preset may store it: the chosen filter with zstd, pco, and
/// the 2-D lorenzo filter (rows of `row` elements) with zstd. Prints each way's ratio and decode speed (CRC check and decode into a buffer,
/// big-endian).
fn block_decode(grid: &Path, row: usize) {
    use nc3pack::format::{Codec, Filter, FRAME_HEADER_LEN};
    use nc3pack::testing::{decode_payload_into, DecodeScratch, Encoder};
    let file = std::fs::read(grid).unwrap();
    let data_len = (file.len() as u64 / (1 << 20)).min(32) << 20;
    // t2m is the only variable: its data is the end of the file.
    let data = &file[file.len() - data_len as usize..];
    let blocks: Vec<&[u8]> = data.chunks(1 << 20).collect();
    let mut zstd_frames = Vec::new();
    let mut pco_frames = Vec::new();
    let mut lorenzo_frames = Vec::new();
    let mut plane_frames = Vec::new();
    let mut lzma_frames = Vec::new();
    let mut context_frames = Vec::new();
    let mut land_pco_frames = Vec::new();
    let mut land_mask_frames = Vec::new();
    let mut fit_frames = Vec::new();
    let mut land_fit_frames = Vec::new();
    let mut enc = Encoder::new(Codec::Zstd, 3, nc3pack::FilterMode::Auto, false)
        .unwrap()
        .fast_blocks(true)
        .unwrap();
    let mut lzma = Encoder::new(Codec::Lzma, 6, nc3pack::FilterMode::Auto, false).unwrap();
    for (i, b) in blocks.iter().enumerate() {
        let mut frame = Vec::new();
        let h = enc
            .encode_block(0, i as u64, 4, b, &mut frame)
            .frame()
            .expect("t2m blocks are not constant");
        zstd_frames.push((h, frame[FRAME_HEADER_LEN..].to_vec()));
        let mut frame = Vec::new();
        let h = lzma
            .encode_block(0, i as u64, 4, b, &mut frame)
            .frame()
            .expect("t2m blocks are not constant");
        lzma_frames.push((h, frame[FRAME_HEADER_LEN..].to_vec()));
        let nums: Vec<f32> = b
            .chunks_exact(4)
            .map(|c| f32::from_be_bytes(c.try_into().unwrap()))
            .collect();
        let cfg = pco::ChunkConfig::default().with_compression_level(8);
        let mut payload = Vec::new();
        pco::standalone::simple_compress_into(&nums, &cfg, &mut payload).unwrap();
        let h = frame_header(&payload, b.len(), i, Codec::Pco, Filter::None, 4);
        pco_frames.push((h, payload));
        // The 2-D lorenzo filter along t2m's rows (nx elements), then zstd level 3.
        let mut f = Vec::new();
        nc3pack::testing::apply_lorenzo(b, 4, row, &mut f);
        let mut payload = (row as u32).to_be_bytes().to_vec();
        payload.extend_from_slice(&zstd::bulk::compress(&f, 3).unwrap());
        let h = frame_header(&payload, b.len(), i, Codec::Zstd, Filter::Lorenzo, 4);
        lorenzo_frames.push((h, payload));
        // The weighted 2-D predictor with pco along t2m's rows.
        plane_frames.push(plane_frame(b, NumKind::F32, row, i));
        // The predictor fitted to the block with pco along t2m's rows.
        let payload = nc3pack::testing::fit_payload(b, NumKind::F32, row).unwrap();
        let h = frame_header(&payload, b.len(), i, Codec::Pco, Filter::Fit, 4);
        fit_frames.push((h, payload));
        // The context codec along t2m's rows.
        let payload = nc3pack::testing::context_payload(b, NumKind::F32, row).unwrap();
        let h = frame_header(&payload, b.len(), i, Codec::Context, Filter::None, 4);
        context_frames.push((h, payload));
        // The same block with 40 % of its rows land (the fill value -1e34), with pco alone and
        // with its fill values set apart (mask + pco).
        let land: Vec<u8> = b
            .chunks_exact(4)
            .enumerate()
            .flat_map(|(k, c)| {
                let land = (k / row * 7919) % 100 < 40;
                if land {
                    (-1e34f32).to_be_bytes()
                } else {
                    [c[0], c[1], c[2], c[3]]
                }
            })
            .collect();
        let nums: Vec<f32> = land
            .chunks_exact(4)
            .map(|c| f32::from_be_bytes(c.try_into().unwrap()))
            .collect();
        let mut payload = Vec::new();
        pco::standalone::simple_compress_into(&nums, &cfg, &mut payload).unwrap();
        let h = frame_header(&payload, b.len(), i, Codec::Pco, Filter::None, 4);
        land_pco_frames.push((h, payload));
        let payload = nc3pack::testing::mask_payload(&land, NumKind::F32).unwrap();
        let h = frame_header(&payload, b.len(), i, Codec::Pco, Filter::Mask, 4);
        land_mask_frames.push((h, payload));
        let payload = nc3pack::testing::fit_payload(&land, NumKind::F32, row).unwrap();
        let h = frame_header(&payload, b.len(), i, Codec::Pco, Filter::Fit, 4);
        land_fit_frames.push((h, payload));
    }
    println!();
    println!(
        "Block decode, one thread ({} MB of t2m, 1 MiB blocks, CRC checked, into a buffer):",
        data_len >> 20
    );
    println!();
    println!("| codec | ratio | decode |");
    println!("|---|---|---|");
    for (label, frames) in [
        ("filter + zstd (default)", &zstd_frames),
        ("pco (level 8)", &pco_frames),
        ("lorenzo + zstd", &lorenzo_frames),
        ("plane + pco", &plane_frames),
        ("fit + pco", &fit_frames),
        ("filter + lzma (6; `max` where it pays)", &lzma_frames),
        ("context (`max` where it pays)", &context_frames),
        ("pco, 40 % of rows land (fill values)", &land_pco_frames),
        ("mask + pco, 40 % of rows land", &land_mask_frames),
        ("fit + pco, 40 % of rows land", &land_fit_frames),
    ] {
        let stored: usize = frames.iter().map(|(_, p)| p.len()).sum();
        // One thread's scratch, reused from block to block, as the reader keeps it.
        let mut scratch = DecodeScratch::default();
        let mut out = Vec::new();
        let t = time(5, || {
            for (h, p) in frames.iter() {
                out.resize(h.decoded_len as usize, 0);
                decode_payload_into(h, p, &mut out, &mut scratch, false).unwrap();
                std::hint::black_box(&out);
            }
        });
        println!(
            "| {label} | {:.3} | {} |",
            data_len as f64 / stored as f64,
            fmt_tp(data_len, t)
        );
    }
    println!();
}

use nc3pack::testing::NumKind;

/// The header of a frame of block `i` (stream 0) with `payload`, decoding to `len` bytes.
fn frame_header(
    payload: &[u8],
    len: usize,
    i: usize,
    codec: nc3pack::format::Codec,
    filter: nc3pack::format::Filter,
    esize: u16,
) -> nc3pack::format::FrameHeader {
    nc3pack::format::FrameHeader {
        stored_len: payload.len() as u32,
        decoded_len: len as u32,
        stream: 0,
        block: i as u64,
        codec,
        filter,
        esize,
        payload_crc: nc3pack::format::crc(payload),
    }
}

/// Block `i` as a `plane` + pco frame (header and payload), rows of `row` elements.
fn plane_frame(
    b: &[u8],
    kind: NumKind,
    row: usize,
    i: usize,
) -> (nc3pack::format::FrameHeader, Vec<u8>) {
    use nc3pack::format::{Codec, Filter};
    let payload = nc3pack::testing::plane_payload(b, kind, row).unwrap();
    let h = frame_header(
        &payload,
        b.len(),
        i,
        Codec::Pco,
        Filter::Plane,
        kind.esize() as u16,
    );
    (h, payload)
}

/// Decodes 16 blocks (1 MiB) of a topography-like int16 field (rows of 1000: hills plus a
/// little noise, as elevation grids are) stored the ways the default preset may store it: the
/// best filter with zstd (as the encoder chooses without pco), pco, plane + pco and fit + pco.
fn int16_decode() {
    use nc3pack::format::{Codec, Filter, FRAME_HEADER_LEN};
    use nc3pack::testing::{decode_payload_into, DecodeScratch, Encoder};
    let (nx, blocks) = (1000usize, 16usize);
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let data: Vec<u8> = (0..blocks << 19)
        .flat_map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (r, c) = ((i / nx) as f64, (i % nx) as f64);
            let v = 900.0 * (c / 97.0).sin() * (r / 131.0).cos()
                + 250.0 * ((c + 2.0 * r) / 37.0).sin()
                + 40.0 * ((3.0 * c - r) / 11.0).cos();
            (v as i16 + (x % 9) as i16 - 4).to_be_bytes()
        })
        .collect();
    let mut enc = Encoder::new(Codec::Zstd, 3, nc3pack::FilterMode::Auto, false)
        .unwrap()
        .fast_blocks(true)
        .unwrap();
    let (mut zstd_frames, mut pco_frames, mut plane_frames) = (Vec::new(), Vec::new(), Vec::new());
    let mut fit_frames = Vec::new();
    for (i, b) in data.chunks(1 << 20).enumerate() {
        let mut frame = Vec::new();
        let h = enc
            .encode_block(0, i as u64, 2, b, &mut frame)
            .frame()
            .unwrap();
        zstd_frames.push((h, frame[FRAME_HEADER_LEN..].to_vec()));
        let nums: Vec<i16> = b
            .chunks_exact(2)
            .map(|c| i16::from_be_bytes([c[0], c[1]]))
            .collect();
        let cfg = pco::ChunkConfig::default().with_compression_level(8);
        let mut payload = Vec::new();
        pco::standalone::simple_compress_into(&nums, &cfg, &mut payload).unwrap();
        let h = frame_header(&payload, b.len(), i, Codec::Pco, Filter::None, 2);
        pco_frames.push((h, payload));
        plane_frames.push(plane_frame(b, NumKind::I16, nx, i));
        let payload = nc3pack::testing::fit_payload(b, NumKind::I16, nx).unwrap();
        let h = frame_header(&payload, b.len(), i, Codec::Pco, Filter::Fit, 2);
        fit_frames.push((h, payload));
    }
    println!(
        "Block decode, one thread ({blocks} MB of a topography-like int16 field, rows of {nx}):"
    );
    println!();
    println!("| codec | ratio | decode |");
    println!("|---|---|---|");
    for (label, frames) in [
        ("filter + zstd (default without pco)", &zstd_frames),
        ("pco (level 8)", &pco_frames),
        ("plane + pco", &plane_frames),
        ("fit + pco", &fit_frames),
    ] {
        let stored: usize = frames.iter().map(|(_, p)| p.len()).sum();
        // One thread's scratch, reused from block to block, as the reader keeps it.
        let mut scratch = DecodeScratch::default();
        let mut out = Vec::new();
        let t = time(5, || {
            for (h, p) in frames.iter() {
                out.resize(h.decoded_len as usize, 0);
                decode_payload_into(h, p, &mut out, &mut scratch, false).unwrap();
                std::hint::black_box(&out);
            }
        });
        println!(
            "| {label} | {:.3} | {} |",
            data.len() as f64 / stored as f64,
            fmt_tp(data.len() as u64, t)
        );
    }
    println!();
}

fn main() {
    let dir = std::env::var_os("NC3PACK_BENCH_DIR")
        .map_or_else(|| PathBuf::from("target/bench-data"), PathBuf::from);
    std::fs::create_dir_all(&dir).unwrap();
    let small = std::env::var_os("NC3PACK_BENCH_SMALL").is_some();
    let (nt, ny, nx) = if small {
        (10, 1000, 1000)
    } else {
        (100, 1000, 1000)
    };
    let grid = dir.join(format!("gridded_{nt}.nc"));
    let points = dir.join("points.nc");
    if !grid.exists() {
        eprintln!("generating {}", grid.display());
        make_gridded(&grid, nt, ny, nx);
    }
    if !points.exists() {
        eprintln!("generating {}", points.display());
        make_points(&points, 1_000_000);
    }
    let only_series = std::env::var_os("NC3PACK_BENCH_SERIES_ONLY").is_some();
    if !only_series {
        block_decode(&grid, nx as usize);
        int16_decode();
        if std::env::var_os("NC3PACK_BENCH_DECODE_ONLY").is_some() {
            return;
        }
        main_table(&grid, &points, nt);
    }
    series_vs_block_size(&grid);
}

/// The time-series case: values along the record dimension, one per record, of the gridded
/// variable, packed with the default block size and with a per-variable block size for it
/// (`--var t2m:block-size=N`): read time, plane read time and what the archive costs.
fn series_vs_block_size(grid: &Path) {
    let z = grid.with_extension("series.nc3z");
    let nc_len = std::fs::metadata(grid).unwrap().len();
    println!();
    println!("Time series of t2m (all records x 1 x 1), cold, per block size of t2m:");
    println!();
    println!("| t2m block size | pack | archive | ratio | ratio cost | time series, cold | plane, cold |");
    println!("|---|---|---|---|---|---|---|");
    let mut base_len = 0u64;
    for bs in [1u32 << 20, 256 << 10, 64 << 10, 16 << 10, 4 << 10] {
        let mut opts = PackOptions::default().with_force(true);
        if bs != nc3pack::DEFAULT_BLOCK_SIZE {
            opts = opts.with_var(format!("t2m:block-size={bs}").parse().unwrap());
        }
        let s = Instant::now();
        let sum = nc3pack::pack_file(grid, &z, &opts).unwrap();
        let pack_t = s.elapsed();
        if base_len == 0 {
            base_len = sum.output_len;
        }
        let a = Archive::open(&z).unwrap();
        let shape = a.layout().vars[a.var_id("t2m").unwrap()].shape.clone();
        let mut rng = Rng(7);
        let series: Vec<Hyperslab> = (0..9)
            .map(|_| {
                let (y, x) = (rng.below(shape[1]), rng.below(shape[2]));
                Hyperslab::new(&shape, &[0, y, x], &[shape[0], 1, 1], &[1, 1, 1]).unwrap()
            })
            .collect();
        let mut buf = vec![0f32; shape[0] as usize];
        let mut i = 0;
        let ts = time(9, || {
            a.clear_cache();
            a.read_into("t2m", &series[i % 9], &mut buf).unwrap();
            i += 1;
        });
        let plane = Hyperslab::new(
            &shape,
            &[shape[0] / 2, 0, 0],
            &[1, shape[1], shape[2]],
            &[1, 1, 1],
        )
        .unwrap();
        let mut pbuf = vec![0f32; plane.len() as usize];
        let tp = time(3, || {
            a.clear_cache();
            a.read_into("t2m", &plane, &mut pbuf).unwrap();
        });
        println!(
            "| {} KiB | {:.2} s | {:.1} MB | {:.3} | {:+.2} % | {} | {} |",
            bs >> 10,
            pack_t.as_secs_f64(),
            sum.output_len as f64 / 1e6,
            nc_len as f64 / sum.output_len as f64,
            (sum.output_len as f64 / base_len as f64 - 1.0) * 100.0,
            fmt_lat(ts),
            fmt_lat(tp)
        );
    }
    let _ = std::fs::remove_file(&z);
}

/// The main table: reads from the archive (default options) next to the original.
fn main_table(grid: &Path, points: &Path, nt: u32) {
    println!("| file | read | archive (zstd 3, 1 MiB blocks) | original .nc |");
    println!("|---|---|---|---|");
    for (nc, var) in [(grid, "t2m"), (points, "temp")] {
        let z = nc.with_extension("nc3z");
        let s = Instant::now();
        let sum = nc3pack::pack_file(nc, &z, &PackOptions::default().with_force(true)).unwrap();
        let pack_t = s.elapsed();
        let a = Archive::open(&z).unwrap();
        let f = NcFile::open(nc).unwrap();
        let fname = nc.file_name().unwrap().to_string_lossy().into_owned();
        println!(
            "| {fname} | pack: {} MB → {} MB (ratio {:.2}) | {:.2} s | |",
            sum.input_len / 1_000_000,
            sum.output_len / 1_000_000,
            sum.input_len as f64 / sum.output_len as f64,
            pack_t.as_secs_f64()
        );
        let shape = a.layout().vars[a.var_id(var).unwrap()].shape.clone();
        let mut rng = Rng(99);
        let point = |rng: &mut Rng| {
            let start: Vec<u64> = shape.iter().map(|&n| rng.below(n)).collect();
            Hyperslab::new(&shape, &start, &vec![1; shape.len()], &vec![1; shape.len()]).unwrap()
        };
        let one = |ds: &dyn Fn(&Hyperslab) -> f32, s: &Hyperslab| std::hint::black_box(ds(s));
        let ra = |s: &Hyperslab| a.read::<f32>(var, s).unwrap()[0];
        let rf = |s: &Hyperslab| f.read::<f32>(var, s).unwrap()[0];

        // Cold: decoded-block cache emptied before each read (the OS page cache is warm).
        let slabs: Vec<Hyperslab> = (0..50).map(|_| point(&mut rng)).collect();
        let mut i = 0;
        let cold_a = time(50, || {
            a.clear_cache();
            one(&ra, &slabs[i % 50]);
            i += 1;
        });
        let mut i = 0;
        let cold_f = time(50, || {
            one(&rf, &slabs[i % 50]);
            i += 1;
        });
        println!(
            "| {fname} | one value, cold cache | {} | {} |",
            fmt_lat(cold_a),
            fmt_lat(cold_f)
        );
        // Warm: the block is cached; time a batch of 10,000 reads.
        let s0 = &slabs[0];
        one(&ra, s0);
        let warm_a = time(5, || {
            for _ in 0..10_000 {
                one(&ra, s0);
            }
        }) / 10_000;
        let warm_f = time(5, || {
            for _ in 0..10_000 {
                one(&rf, s0);
            }
        }) / 10_000;
        println!(
            "| {fname} | one value, warm cache | {} | {} |",
            fmt_lat(warm_a),
            fmt_lat(warm_f)
        );

        let rank = shape.len();
        let bench_slab = |label: &str, start: Vec<u64>, count: Vec<u64>, cold: bool| {
            let s = Hyperslab::new(&shape, &start, &count, &vec![1; rank]).unwrap();
            let bytes = s.len() * 4;
            let mut buf = vec![0f32; s.len() as usize];
            let ta = time(3, || {
                if cold {
                    a.clear_cache();
                }
                a.read_into(var, &s, &mut buf).unwrap();
            });
            let tf = time(3, || f.read_into(var, &s, &mut buf).unwrap());
            println!(
                "| {fname} | {label} | {} | {} |",
                fmt_tp(bytes, ta),
                fmt_tp(bytes, tf)
            );
        };
        if rank == 3 {
            bench_slab(
                "row (1 × 1 × 1000), cold",
                vec![nt as u64 / 2, 500, 0],
                vec![1, 1, shape[2]],
                true,
            );
            bench_slab(
                "plane (1 × 1000 × 1000), cold",
                vec![nt as u64 / 2, 0, 0],
                vec![1, shape[1], shape[2]],
                true,
            );
            bench_slab(
                "time series (all × 1 × 1), cold",
                vec![0, 500, 500],
                vec![shape[0], 1, 1],
                true,
            );
        } else {
            bench_slab(
                "1000 consecutive records, cold",
                vec![500_000],
                vec![1000],
                true,
            );
        }
        bench_slab("full variable, cold", vec![0; rank], shape.clone(), true);
        bench_slab(
            "full variable, warm (fits in a 1 GiB cache)",
            vec![0; rank],
            shape.clone(),
            {
                a.set_cache_budget(1 << 30);
                false
            },
        );
        a.set_cache_budget(nc3pack::DEFAULT_CACHE_BYTES);
        let _ = std::fs::remove_file(&z);
    }
    println!();
    println!(
        "(median of repeated runs; cold = decoded-block cache emptied first, OS page cache warm)"
    );
}
