//! Hyperslab reads through the `Dataset` API, from archives and original files alike.
//!
//! - Random datasets written with the `netcdf3` crate: every read path (`read`, `read_into`,
//!   `read_raw`, `read_values`; `Archive`, `NcFile`, `nc3pack::open`) gives what netCDF's
//!   `nc_get_vars` would, computed from `netcdf3`'s full read, with the cache on and off.
//! - Bad selections give the matching `SlabError` inside `Error::Slab`.
//! - The block cache: hits and misses, the byte budget, eviction counts and LRU order.
//! - An `Archive` shared by threads gives what one thread gets.
//! - `nc3pack slice` agrees with `ncdump` (golden files under tests/golden/) in all three
//!   output formats.

use crate::util::Rng;
use crate::util::{sample, temp_dir, BIN};
use nc3pack::format::Codec;
use nc3pack::nc3::Values;
use nc3pack::{pack_file, Archive, Error, Hyperslab, PackOptions, SlabError};
use nc3pack::{Dataset, Element, NcFile};
use quickcheck::{Arbitrary, Gen, QuickCheck};
use std::path::{Path, PathBuf};
use std::process::Command;

fn golden(name: &str) -> PathBuf {
    crate::util::root().join("tests").join("golden").join(name)
}

fn pack_with(input: &Path, output: &Path, codec: Codec, block_size: u32, threads: usize) {
    let opts = PackOptions::default()
        .with_codec(codec)
        .with_block_size(block_size)
        .with_threads(threads)
        .with_filter(crate::filters(true))
        .with_thorough(false)
        .with_fast_blocks(threads == 1);
    pack_file(input, output, &opts).unwrap_or_else(|e| panic!("packing {}: {e}", input.display()));
}

// ---------------------------------------------------------------------------------------------
// Typed comparison helpers
// ---------------------------------------------------------------------------------------------

/// An element type the tests compare bit for bit (NaNs included).
trait Elem: Element + std::fmt::Debug {
    /// Big-endian bytes, as netCDF stores them.
    fn be_bytes(xs: &[Self]) -> Vec<u8>;
    /// The values of `v` if it is a variant this type reads.
    fn of_values(v: &Values) -> Option<&[Self]>;
}

macro_rules! elem {
    ($t:ty, $($variant:ident)|+) => {
        impl Elem for $t {
            fn be_bytes(xs: &[Self]) -> Vec<u8> {
                xs.iter().flat_map(|x| x.to_be_bytes()).collect()
            }
            fn of_values(v: &Values) -> Option<&[Self]> {
                match v {
                    $(Values::$variant(x) => Some(x),)+
                    _ => None,
                }
            }
        }
    };
}

elem!(i8, Byte);
elem!(u8, Char | UByte);
elem!(i16, Short);
elem!(u16, UShort);
elem!(i32, Int);
elem!(u32, UInt);
elem!(i64, Int64);
elem!(u64, UInt64);
elem!(f32, Float);
elem!(f64, Double);

/// The elements of `full` (row-major data of a variable of `shape`) that `slab` selects, in
/// result order: `nc_get_vars` computed the slow, obvious way.
fn reference<T: Copy>(full: &[T], shape: &[u64], slab: &Hyperslab) -> Vec<T> {
    let n = slab.len() as usize;
    let rank = shape.len();
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0u64; rank];
    for _ in 0..n {
        let mut flat = 0u64;
        for k in 0..rank {
            flat = flat * shape[k] + slab.start()[k] + idx[k] * slab.stride()[k];
        }
        out.push(full[flat as usize]);
        for k in (0..rank).rev() {
            idx[k] += 1;
            if idx[k] < slab.count()[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    out
}

/// Reads `slab` of `name` every way the API offers and checks each against `want`.
fn check_slab<D: Dataset, T: Elem>(ds: &D, name: &str, slab: &Hyperslab, want: &[T], ctx: &str) {
    let want_be = T::be_bytes(want);
    let got: Vec<T> = ds
        .read(name, slab)
        .unwrap_or_else(|e| panic!("{ctx}: read::<{}> {name} {slab:?}: {e}", T::NAME));
    assert_eq!(
        T::be_bytes(&got),
        want_be,
        "{ctx}: read::<{}> {name} {slab:?}\n got {got:?}\nwant {want:?}",
        T::NAME
    );
    let mut buf: Vec<T> = vec![T::zeroed(); want.len()];
    bytemuck::cast_slice_mut::<T, u8>(&mut buf).fill(0xa5);
    ds.read_into(name, slab, &mut buf)
        .unwrap_or_else(|e| panic!("{ctx}: read_into {name} {slab:?}: {e}"));
    assert_eq!(
        T::be_bytes(&buf),
        want_be,
        "{ctx}: read_into {name} {slab:?}"
    );
    // read_native_into: the native bytes of `want`, also into a buffer not aligned for `T`.
    let want_ne: &[u8] = bytemuck::cast_slice(want);
    let v = ds.var_id(name).unwrap();
    let mut unaligned = vec![0xa5u8; want_ne.len() + 1];
    ds.read_native_into(v, slab, &mut unaligned[1..])
        .unwrap_or_else(|e| panic!("{ctx}: read_native_into {name} {slab:?}: {e}"));
    assert_eq!(
        &unaligned[1..],
        want_ne,
        "{ctx}: read_native_into {name} {slab:?} (unaligned)"
    );
    let raw = ds
        .read_raw(name, slab)
        .unwrap_or_else(|e| panic!("{ctx}: read_raw {name} {slab:?}: {e}"));
    assert_eq!(raw, want_be, "{ctx}: read_raw {name} {slab:?}");
    let values = ds
        .read_values(name, slab)
        .unwrap_or_else(|e| panic!("{ctx}: read_values {name} {slab:?}: {e}"));
    let typed = T::of_values(&values)
        .unwrap_or_else(|| panic!("{ctx}: read_values {name}: unexpected variant {values:?}"));
    assert_eq!(
        T::be_bytes(typed),
        want_be,
        "{ctx}: read_values {name} {slab:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// 1. Property: random datasets, random hyperslabs, against the netcdf3 crate
// ---------------------------------------------------------------------------------------------

/// Values of one variable, in the types the `netcdf3` crate writes (CDF-1/CDF-2).
#[derive(Clone, Debug)]
enum Data {
    I8(Vec<i8>),
    U8(Vec<u8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

/// Runs `$body` with `$v` bound to the vector inside a `Data`, whatever its type.
macro_rules! with_data {
    ($data:expr, $v:ident => $body:expr) => {
        match $data {
            Data::I8($v) => $body,
            Data::U8($v) => $body,
            Data::I16($v) => $body,
            Data::I32($v) => $body,
            Data::F32($v) => $body,
            Data::F64($v) => $body,
        }
    };
}

impl Data {
    fn data_type(&self) -> netcdf3::DataType {
        match self {
            Data::I8(_) => netcdf3::DataType::I8,
            Data::U8(_) => netcdf3::DataType::U8,
            Data::I16(_) => netcdf3::DataType::I16,
            Data::I32(_) => netcdf3::DataType::I32,
            Data::F32(_) => netcdf3::DataType::F32,
            Data::F64(_) => netcdf3::DataType::F64,
        }
    }

    fn esize(&self) -> u64 {
        match self {
            Data::I8(_) | Data::U8(_) => 1,
            Data::I16(_) => 2,
            Data::I32(_) | Data::F32(_) => 4,
            Data::F64(_) => 8,
        }
    }

    fn be_bytes(&self) -> Vec<u8> {
        with_data!(self, v => Elem::be_bytes(v))
    }

    /// `n` random values of type number `ty` (0..6).
    fn random(g: &mut Gen, ty: u64, n: u64) -> Data {
        fn vals<T: Arbitrary>(g: &mut Gen, n: u64) -> Vec<T> {
            (0..n).map(|_| T::arbitrary(g)).collect()
        }
        match ty {
            0 => Data::I8(vals(g, n)),
            1 => Data::U8(vals(g, n)),
            2 => Data::I16(vals(g, n)),
            3 => Data::I32(vals(g, n)),
            // Arbitrary bit patterns too: NaN payloads, infinities, subnormals.
            4 => Data::F32(
                (0..n)
                    .map(|i| match i % 3 {
                        0 => f32::from_bits(u32::arbitrary(g)),
                        _ => f32::arbitrary(g),
                    })
                    .collect(),
            ),
            _ => Data::F64(
                (0..n)
                    .map(|i| match i % 3 {
                        0 => f64::from_bits(u64::arbitrary(g)),
                        _ => f64::arbitrary(g),
                    })
                    .collect(),
            ),
        }
    }

    /// This variable's data as the `netcdf3` crate reads it from `r`.
    fn read_like(&self, r: &mut netcdf3::FileReader, name: &str) -> Data {
        macro_rules! read {
            ($method:ident) => {
                r.$method(name)
                    .unwrap_or_else(|e| panic!("netcdf3 cannot read {name}: {e:?}"))
            };
        }
        match self {
            Data::I8(_) => Data::I8(read!(read_var_i8)),
            Data::U8(_) => Data::U8(read!(read_var_u8)),
            Data::I16(_) => Data::I16(read!(read_var_i16)),
            Data::I32(_) => Data::I32(read!(read_var_i32)),
            Data::F32(_) => Data::F32(read!(read_var_f32)),
            Data::F64(_) => Data::F64(read!(read_var_f64)),
        }
    }
}

#[derive(Clone, Debug)]
struct VarSpec {
    name: String,
    /// Indices into `Case::dims`.
    dims: Vec<usize>,
    data: Data,
}

#[derive(Clone, Debug)]
struct SlabSpec {
    var: usize,
    start: Vec<u64>,
    count: Vec<u64>,
    stride: Vec<u64>,
}

/// A random dataset, how to pack it, and hyperslabs to read from it.
#[derive(Clone, Debug)]
struct Case {
    /// (name, length); with `record`, `dims[0]` is the unlimited dimension and its length is the
    /// number of records.
    dims: Vec<(String, u64)>,
    record: bool,
    vars: Vec<VarSpec>,
    offset64: bool,
    codec: Codec,
    block_size: u32,
    shuffle: bool,
    pack_threads: usize,
    read_threads: usize,
    slabs: Vec<SlabSpec>,
}

fn below(g: &mut Gen, n: u64) -> u64 {
    u64::arbitrary(g) % n
}

/// A random selection that fits `shape`: sometimes empty, sometimes whole dimensions.
fn random_slab(g: &mut Gen, shape: &[u64]) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    let zero_dim = if !shape.is_empty() && below(g, 8) == 0 {
        Some(below(g, shape.len() as u64) as usize)
    } else {
        None
    };
    let (mut start, mut count, mut stride) = (vec![], vec![], vec![]);
    for (d, &len) in shape.iter().enumerate() {
        let sd = 1 + below(g, 3);
        let (st, c, sd) = if zero_dim == Some(d) {
            // count 0: start may be anything up to and including the length
            (below(g, len + 1), 0, sd)
        } else if len == 0 {
            (0, 0, sd)
        } else if below(g, 4) == 0 {
            (0, len, 1)
        } else {
            let st = below(g, len);
            let max_count = (len - 1 - st) / sd + 1;
            (st, 1 + below(g, max_count), sd)
        };
        start.push(st);
        count.push(c);
        stride.push(sd);
    }
    (start, count, stride)
}

impl Case {
    /// The shape of variable `v` with the record dimension materialized.
    fn shape(&self, v: usize) -> Vec<u64> {
        self.vars[v].dims.iter().map(|&d| self.dims[d].1).collect()
    }

    fn is_record(&self, v: usize) -> bool {
        self.record && self.vars[v].dims.first() == Some(&0)
    }

    fn write(&self, path: &Path) {
        let mut ds = netcdf3::DataSet::new();
        for (i, (name, len)) in self.dims.iter().enumerate() {
            if self.record && i == 0 {
                ds.set_unlimited_dim(name, *len as usize).unwrap();
            } else {
                ds.add_fixed_dim(name, *len as usize).unwrap();
            }
        }
        for v in &self.vars {
            let dims: Vec<&str> = v.dims.iter().map(|&d| self.dims[d].0.as_str()).collect();
            ds.add_var(&v.name, &dims, v.data.data_type()).unwrap();
        }
        let version = if self.offset64 {
            netcdf3::Version::Offset64Bit
        } else {
            netcdf3::Version::Classic
        };
        let mut w = netcdf3::FileWriter::open(path).unwrap();
        w.set_def(&ds, version, 0).unwrap();
        for v in &self.vars {
            let n = &v.name;
            match &v.data {
                Data::I8(x) => w.write_var_i8(n, x),
                Data::U8(x) => w.write_var_u8(n, x),
                Data::I16(x) => w.write_var_i16(n, x),
                Data::I32(x) => w.write_var_i32(n, x),
                Data::F32(x) => w.write_var_f32(n, x),
                Data::F64(x) => w.write_var_f64(n, x),
            }
            .unwrap_or_else(|e| panic!("netcdf3 cannot write {n}: {e:?}"));
        }
        w.close().unwrap();
    }
}

impl Arbitrary for Case {
    fn arbitrary(g: &mut Gen) -> Case {
        let record = bool::arbitrary(g);
        // 1 to 4 dimensions, mostly 3 or 4 so that variables span many blocks.
        let ndims = 4 - below(g, 4).min(below(g, 4));
        let mut dims = vec![];
        if record {
            dims.push(("rec".to_string(), below(g, 7)));
        }
        for i in 0..ndims - u64::from(record) {
            dims.push((format!("d{i}"), 1 + below(g, 7)));
        }
        let fixed: Vec<usize> = (usize::from(record)..dims.len()).collect();
        let mut vars = vec![];
        for k in 0..1 + below(g, 5) {
            let mut vd = vec![];
            if record && bool::arbitrary(g) {
                vd.push(0);
            }
            // Distinct fixed dimensions in random order (the netcdf3 crate refuses repeats).
            let mut pool = fixed.clone();
            // Mostly as many dimensions as there is room for, so variables span many blocks.
            let room = pool.len().min(4 - vd.len()) as u64;
            let rank = match below(g, 6) {
                0 => 0,
                1 => below(g, room + 1),
                _ => room,
            };
            for _ in 0..rank {
                let i = below(g, pool.len() as u64) as usize;
                vd.push(pool.remove(i));
            }
            let n = vd.iter().map(|&d| dims[d].1).product();
            let ty = below(g, 6);
            vars.push(VarSpec {
                name: format!("v{k}"),
                dims: vd,
                data: Data::random(g, ty, n),
            });
        }
        // netCDF's exception: with exactly ONE record variable, records are not padded to 4
        // bytes. The netcdf3 crate (0.6.1) pads them anyway, so its file would not be the
        // netCDF file it thinks it wrote; keep such cases out by adding a second record
        // variable.
        let rec_vars: Vec<usize> = (0..vars.len())
            .filter(|&v| record && vars[v].dims.first() == Some(&0))
            .collect();
        if let [v] = rec_vars[..] {
            let per_record: u64 = vars[v].dims[1..]
                .iter()
                .map(|&d| dims[d].1)
                .product::<u64>()
                * vars[v].data.esize();
            if !per_record.is_multiple_of(4) {
                let n = dims[0].1;
                vars.push(VarSpec {
                    name: "extra_rec".into(),
                    dims: vec![0],
                    data: Data::random(g, 3, n),
                });
            }
        }
        let small_blocks = if bool::arbitrary(g) { 57 } else { 505 };
        let mut case = Case {
            dims,
            record,
            vars,
            offset64: bool::arbitrary(g),
            codec: *g
                .choose(&[Codec::Zstd, Codec::Deflate, Codec::None])
                .unwrap(),
            // Half the time at most 64 bytes: blocks smaller than a row, rows across blocks.
            block_size: 8 + below(g, small_blocks) as u32,
            shuffle: bool::arbitrary(g),
            pack_threads: 1 + below(g, 3) as usize,
            read_threads: 1 + below(g, 4) as usize,
            slabs: vec![],
        };
        for v in 0..case.vars.len() {
            let shape = case.shape(v);
            for _ in 0..1 + below(g, 4) {
                let (start, count, stride) = random_slab(g, &shape);
                case.slabs.push(SlabSpec {
                    var: v,
                    start,
                    count,
                    stride,
                });
            }
        }
        case
    }
}

fn hyperslab_reads_match_netcdf3(case: Case) {
    let dir = temp_dir();
    let nc = dir.path().join("case.nc");
    let z = dir.path().join("case.nc3z");
    case.write(&nc);

    // The reference: what the netcdf3 crate reads back (and it must be what was written).
    let mut reader = netcdf3::FileReader::open(&nc).unwrap();
    let full: Vec<Data> = case
        .vars
        .iter()
        .map(|v| v.data.read_like(&mut reader, &v.name))
        .collect();
    for (v, f) in case.vars.iter().zip(&full) {
        assert_eq!(
            v.data.be_bytes(),
            f.be_bytes(),
            "netcdf3 round trip of {}",
            v.name
        );
    }

    let opts = PackOptions::default()
        .with_codec(case.codec)
        .with_block_size(case.block_size)
        .with_threads(case.pack_threads)
        .with_filter(crate::filters(case.shuffle))
        .with_thorough(case.shuffle && case.block_size % 2 == 1)
        .with_fast_blocks(!case.block_size.is_multiple_of(3));
    pack_file(&nc, &z, &opts).unwrap();

    let mut archive = Archive::open(&z).unwrap();
    archive.set_threads(case.read_threads);
    let ncfile = NcFile::open(&nc).unwrap();
    let boxed_z = nc3pack::open(&z).unwrap();
    let boxed_nc = nc3pack::open(&nc).unwrap();
    for (v, data) in full.iter().enumerate() {
        let shape = case.shape(v);
        assert_eq!(
            archive.layout().vars[v].shape,
            shape,
            "archive shape of v{v}"
        );
        assert_eq!(ncfile.layout().vars[v].shape, shape, "file shape of v{v}");
        assert_eq!(archive.layout().vars[v].is_record, case.is_record(v));
        let whole = data.be_bytes();
        assert_eq!(archive.read_var_bytes(v).unwrap(), whole, "archive v{v}");
        assert_eq!(ncfile.read_var_bytes(v).unwrap(), whole, "NcFile v{v}");
    }

    for cache_on in [true, false] {
        if !cache_on {
            archive.set_cache_budget(0);
            let s = archive.cache_stats();
            assert_eq!(
                (s.bytes, s.entries),
                (0, 0),
                "budget 0 must empty the cache"
            );
        }
        let before = archive.cache_stats();
        for s in &case.slabs {
            let name = &case.vars[s.var].name;
            let shape = case.shape(s.var);
            let slab = Hyperslab::new(&shape, &s.start, &s.count, &s.stride)
                .unwrap_or_else(|e| panic!("generated slab {s:?} of shape {shape:?}: {e}"));
            let via_ds = archive
                .slab(name, Some(&s.start), Some(&s.count), Some(&s.stride))
                .unwrap();
            assert_eq!(via_ds, slab);
            let ctx = if cache_on { "cache on" } else { "cache off" };
            with_data!(&full[s.var], vals => {
                let want = reference(vals, &shape, &slab);
                check_slab(&archive, name, &slab, &want, &format!("archive, {ctx}"));
                check_slab(&boxed_z, name, &slab, &want, "nc3pack::open(archive)");
                check_slab(&ncfile, name, &slab, &want, "NcFile");
                check_slab(&boxed_nc, name, &slab, &want, "nc3pack::open(nc)");
            });
        }
        let after = archive.cache_stats();
        if !cache_on {
            assert_eq!(after.hits, before.hits, "no hits without a cache");
            assert_eq!((after.bytes, after.entries), (0, 0), "nothing cached");
        } else {
            assert!(after.bytes <= after.budget);
        }
    }
}

#[test]
fn hyperslab_reads_match_netcdf3_reference() {
    QuickCheck::new()
        .tests(50)
        .max_tests(50)
        .rng(Gen::new(16))
        .quickcheck(hyperslab_reads_match_netcdf3 as fn(Case));
}

/// A fixed case of the property that covers what the generator only sometimes hits at once:
/// a record variable with 0 records next to one with data, scalars, count-0 selections with
/// start at the length, and strided reads across 8-byte blocks.
#[test]
fn hyperslab_edge_cases_match_netcdf3_reference() {
    let vars = vec![
        VarSpec {
            name: "grid".into(),
            dims: vec![0, 1, 2],
            data: Data::I16((0..5 * 7 * 3).map(|i| i as i16 * 3 - 50).collect()),
        },
        VarSpec {
            name: "series".into(),
            dims: vec![0],
            data: Data::F64((0..5).map(|i| f64::from(i) / 3.0).collect()),
        },
        VarSpec {
            name: "scalar".into(),
            dims: vec![],
            data: Data::F32(vec![-1.5]),
        },
        VarSpec {
            name: "label".into(),
            dims: vec![1, 2],
            data: Data::U8(b"abcdefghijklmnopqrstu".to_vec()),
        },
    ];
    let slab = |var: usize, start: &[u64], count: &[u64], stride: &[u64]| SlabSpec {
        var,
        start: start.to_vec(),
        count: count.to_vec(),
        stride: stride.to_vec(),
    };
    let slabs = vec![
        slab(0, &[0, 0, 0], &[5, 7, 3], &[1, 1, 1]),
        slab(0, &[1, 2, 0], &[2, 3, 3], &[3, 2, 1]),
        slab(0, &[4, 6, 2], &[1, 1, 1], &[1, 1, 1]),
        slab(0, &[5, 0, 0], &[0, 7, 3], &[1, 1, 1]),
        slab(0, &[0, 7, 0], &[5, 0, 3], &[1, 1, 1]),
        slab(0, &[0, 0, 2], &[5, 7, 1], &[1, 1, 1]),
        slab(0, &[0, 1, 0], &[5, 2, 2], &[1, 3, 2]),
        slab(1, &[1], &[2], &[3]),
        slab(1, &[5], &[0], &[1]),
        slab(2, &[], &[], &[]),
        slab(3, &[1, 0], &[6, 3], &[1, 1]),
        slab(3, &[0, 2], &[3, 1], &[3, 1]),
    ];
    for block_size in [8, 9, 24, 64] {
        let case = Case {
            dims: vec![("rec".into(), 5), ("y".into(), 7), ("x".into(), 3)],
            record: true,
            vars: vars.clone(),
            offset64: false,
            codec: Codec::Zstd,
            block_size,
            shuffle: true,
            pack_threads: 2,
            read_threads: 3,
            slabs: slabs.clone(),
        };
        hyperslab_reads_match_netcdf3(case);
    }
    // Zero records: every record variable is empty, fixed ones still read.
    let mut empty = vars.clone();
    empty[0].data = Data::I16(vec![]);
    empty[1].data = Data::F64(vec![]);
    hyperslab_reads_match_netcdf3(Case {
        dims: vec![("rec".into(), 0), ("y".into(), 7), ("x".into(), 3)],
        record: true,
        vars: empty,
        offset64: true,
        codec: Codec::Deflate,
        block_size: 8,
        shuffle: false,
        pack_threads: 1,
        read_threads: 1,
        slabs: vec![
            slab(0, &[0, 0, 0], &[0, 7, 3], &[1, 1, 1]),
            slab(0, &[0, 3, 1], &[0, 2, 1], &[2, 2, 2]),
            slab(1, &[0], &[0], &[1]),
            slab(2, &[], &[], &[]),
            slab(3, &[6, 2], &[1, 1], &[1, 1]),
        ],
    });
}

/// Real files with layout quirks (record padding, variables declared mixed, a gap after the
/// header, trailing bytes, zero records, scalars, 20000 records): every variable, whole and in
/// random selections, from the archive and the file, equals the netcdf3 crate's read. (The
/// single_recvar_* files, which the netcdf3 crate misreads, are checked against ncdump in
/// `slice_cli_matches_ncdump_golden`.)
#[test]
fn samples_match_netcdf3() {
    let dir = temp_dir();
    let mut rng = Rng(20240501);
    for name in [
        "classic_records",
        "offset64_mixed",
        "fill_values",
        "header_gap",
        "trailing_bytes",
        "zero_records",
        "scalars",
        "obs_points",
    ] {
        let nc = sample(&format!("{name}.nc"));
        let z = dir.path().join(format!("{name}.nc3z"));
        pack_with(&nc, &z, Codec::Deflate, 100, 2);
        let archive = Archive::open(&z).unwrap();
        let ncfile = NcFile::open(&nc).unwrap();
        let mut r = netcdf3::FileReader::open(&nc).unwrap();
        let numrecs = r.data_set().num_records().unwrap_or(0) as u64;
        let vars: Vec<(String, Vec<u64>)> = r
            .data_set()
            .get_vars()
            .iter()
            .map(|v| {
                let shape = v
                    .get_dims()
                    .iter()
                    .map(|d| {
                        if d.is_unlimited() {
                            numrecs
                        } else {
                            d.size() as u64
                        }
                    })
                    .collect();
                (v.name().to_string(), shape)
            })
            .collect();
        assert_eq!(vars.len(), archive.header().var_count(), "{name}");
        for (var, shape) in vars {
            let id = archive.var_id(&var).unwrap();
            assert_eq!(archive.layout().vars[id].shape, shape, "{name} {var}");
            let data = match r.read_var(&var).unwrap() {
                netcdf3::DataVector::I8(v) => Data::I8(v),
                netcdf3::DataVector::U8(v) => Data::U8(v),
                netcdf3::DataVector::I16(v) => Data::I16(v),
                netcdf3::DataVector::I32(v) => Data::I32(v),
                netcdf3::DataVector::F32(v) => Data::F32(v),
                netcdf3::DataVector::F64(v) => Data::F64(v),
            };
            let mut slabs = vec![Hyperslab::all(&shape)];
            for _ in 0..20 {
                let (mut st, mut c, mut sd) = (vec![], vec![], vec![]);
                for &len in &shape {
                    let stride = 1 + rng.below(4);
                    let start = rng.below(len + 1);
                    let max = if start == len {
                        0
                    } else {
                        (len - 1 - start) / stride + 1
                    };
                    st.push(start);
                    c.push(rng.below(max + 1));
                    sd.push(stride);
                }
                slabs.push(Hyperslab::new(&shape, &st, &c, &sd).unwrap());
            }
            with_data!(&data, vals => {
                for slab in &slabs {
                    let want = reference(vals, &shape, slab);
                    check_slab(&archive, &var, slab, &want, &format!("{name} archive"));
                    check_slab(&ncfile, &var, slab, &want, &format!("{name} NcFile"));
                }
            });
        }
    }
}

/// Reads whose selection is more than `RUN_BATCH` (65536) separate byte runs are handed to the
/// source in batches; the batches must join up.
#[test]
fn reads_of_many_runs_match_netcdf3() {
    let dir = temp_dir();
    let nc = sample("gridded_sst.nc");
    let z = packed_sst(dir.path());
    let full = netcdf3::FileReader::open(&nc)
        .unwrap()
        .read_var_f32("sst")
        .unwrap();
    let shape = [24u64, 180, 360];
    let mut archive = Archive::open(&z).unwrap();
    let ncfile = NcFile::open(&nc).unwrap();
    // 777600 one-element runs; 23 × 90 whole-row runs; 17 × 170 partial-row runs.
    let slabs = [
        Hyperslab::new(&shape, &[0, 0, 1], &[24, 180, 180], &[1, 1, 2]).unwrap(),
        Hyperslab::new(&shape, &[1, 1, 0], &[23, 90, 360], &[1, 2, 1]).unwrap(),
        Hyperslab::new(&shape, &[0, 5, 7], &[17, 170, 300], &[1, 1, 1]).unwrap(),
    ];
    for threads in [1, 3] {
        archive.set_threads(threads);
        for slab in &slabs {
            let want = reference(&full, &shape, slab);
            check_slab(
                &archive,
                "sst",
                slab,
                &want,
                &format!("archive, {threads} threads"),
            );
        }
    }
    let want = reference(&full, &shape, &slabs[0]);
    check_slab(&ncfile, "sst", &slabs[0], &want, "NcFile");
}

// ---------------------------------------------------------------------------------------------
// 2. Errors and read_values
// ---------------------------------------------------------------------------------------------

/// The `SlabError` inside the `Error::Slab` that `r` must be, checking the path and variable it
/// names.
fn slab_err<T: std::fmt::Debug>(r: Result<T, Error>, path: &Path, var: &str) -> SlabError {
    match r {
        Err(Error::Slab {
            path: p,
            var: v,
            source,
        }) => {
            assert_eq!(p, path, "error names the file");
            assert_eq!(v, var, "error names the variable");
            source
        }
        other => panic!("expected Error::Slab about {var:?}, got {other:?}"),
    }
}

/// Bad selections of classic_records.nc's variables (`s3` short(time=7, three=3), `f3`
/// float(time, three), `c5` char(time, five), `scalar_i` int) on `ds`.
fn check_errors<D: Dataset>(ds: &D, path: &Path) {
    let sl = |start: Option<&[u64]>, count: Option<&[u64]>, stride: Option<&[u64]>| {
        slab_err(ds.slab("s3", start, count, stride), path, "s3")
    };
    // Wrong rank, in each vector.
    assert_eq!(
        sl(Some(&[0]), None, None),
        SlabError::Rank {
            what: "start",
            got: 1,
            rank: 2
        }
    );
    assert_eq!(
        sl(None, Some(&[1, 1, 1]), None),
        SlabError::Rank {
            what: "count",
            got: 3,
            rank: 2
        }
    );
    assert_eq!(
        sl(None, None, Some(&[1])),
        SlabError::Rank {
            what: "stride",
            got: 1,
            rank: 2
        }
    );
    assert_eq!(
        slab_err(
            ds.slab("scalar_i", Some(&[0]), None, None),
            path,
            "scalar_i"
        ),
        SlabError::Rank {
            what: "start",
            got: 1,
            rank: 0
        }
    );
    // Start beyond the shape (with count 0, start may equal the length, not exceed it).
    let oob = |dim, start, count, stride, len| SlabError::OutOfBounds {
        dim,
        start,
        count,
        stride,
        len,
    };
    assert_eq!(sl(Some(&[8, 0]), None, None), oob(0, 8, 0, 1, 7));
    assert_eq!(sl(Some(&[0, 4]), Some(&[7, 0]), None), oob(1, 4, 0, 1, 3));
    assert_eq!(sl(Some(&[7, 0]), Some(&[1, 1]), None), oob(0, 7, 1, 1, 7));
    assert_eq!(sl(Some(&[0, 3]), Some(&[1, 1]), None), oob(1, 3, 1, 1, 3));
    let empty = ds.slab("s3", Some(&[7, 0]), None, None).unwrap();
    assert_eq!(empty.count(), &[0, 3]);
    assert_eq!(ds.read::<i16>("s3", &empty).unwrap(), Vec::<i16>::new());
    // start + (count - 1) * stride beyond.
    assert_eq!(
        sl(Some(&[1, 0]), Some(&[4, 1]), Some(&[2, 1])),
        oob(0, 1, 4, 2, 7)
    );
    assert_eq!(
        sl(Some(&[0, 1]), Some(&[1, 2]), Some(&[1, 2])),
        oob(1, 1, 2, 2, 3)
    );
    assert_eq!(
        sl(Some(&[0, 0]), Some(&[1, u64::MAX]), Some(&[1, u64::MAX])),
        oob(1, 0, u64::MAX, u64::MAX, 3)
    );
    let last = ds
        .slab("s3", Some(&[0, 2]), Some(&[3, 1]), Some(&[3, 1]))
        .unwrap();
    assert_eq!(ds.read::<i16>("s3", &last).unwrap(), [3, -12, -3]);
    // Zero stride.
    assert_eq!(
        sl(None, Some(&[1, 1]), Some(&[1, 0])),
        SlabError::ZeroStride { dim: 1 }
    );
    assert_eq!(
        sl(None, None, Some(&[0, 1])),
        SlabError::ZeroStride { dim: 0 }
    );
    // Unknown variable, from every entry point.
    let whole = ds.slab("s3", None, None, None).unwrap();
    let unknown = SlabError::UnknownVariable("nope".into());
    assert_eq!(
        slab_err(ds.slab("nope", None, None, None), path, "nope"),
        unknown
    );
    assert_eq!(
        slab_err(ds.read::<i16>("nope", &whole), path, "nope"),
        unknown
    );
    assert_eq!(slab_err(ds.read_raw("nope", &whole), path, "nope"), unknown);
    assert_eq!(
        slab_err(ds.read_values("nope", &whole), path, "nope"),
        unknown
    );
    assert_eq!(
        slab_err(ds.var_id("S3"), path, "S3"),
        SlabError::UnknownVariable("S3".into())
    );
    // Type mismatch.
    let f3 = ds.slab("f3", None, None, None).unwrap();
    assert_eq!(
        slab_err(ds.read::<f64>("f3", &f3), path, "f3"),
        SlabError::TypeMismatch {
            var: "f3".into(),
            var_type: "float",
            requested: "f64"
        }
    );
    assert_eq!(
        slab_err(ds.read::<i32>("f3", &f3), path, "f3"),
        SlabError::TypeMismatch {
            var: "f3".into(),
            var_type: "float",
            requested: "i32"
        }
    );
    let c5 = ds.slab("c5", None, None, None).unwrap();
    assert_eq!(
        slab_err(ds.read::<i8>("c5", &c5), path, "c5"),
        SlabError::TypeMismatch {
            var: "c5".into(),
            var_type: "char",
            requested: "i8"
        }
    );
    let b = ds.slab("b", None, None, None).unwrap();
    assert_eq!(
        slab_err(ds.read::<u8>("b", &b), path, "b"),
        SlabError::TypeMismatch {
            var: "b".into(),
            var_type: "byte",
            requested: "u8"
        }
    );
    assert_eq!(
        slab_err(ds.read::<u16>("s3", &whole), path, "s3"),
        SlabError::TypeMismatch {
            var: "s3".into(),
            var_type: "short",
            requested: "u16"
        }
    );
    // A slab checked against another shape is checked again against the variable's.
    let big = Hyperslab::new(&[100, 3], &[50, 0], &[1, 3], &[1, 1]).unwrap();
    assert_eq!(
        slab_err(ds.read::<i16>("s3", &big), path, "s3"),
        oob(0, 50, 1, 1, 7)
    );
    let rank1 = Hyperslab::new(&[7], &[0], &[7], &[1]).unwrap();
    assert_eq!(
        slab_err(ds.read::<i16>("s3", &rank1), path, "s3"),
        SlabError::Rank {
            what: "start",
            got: 1,
            rank: 2
        }
    );
    assert_eq!(
        slab_err(ds.read_raw("s3", &rank1), path, "s3"),
        SlabError::Rank {
            what: "start",
            got: 1,
            rank: 2
        }
    );
    // Wrong output buffer length.
    let mut short_buf = vec![0i16; 20];
    assert_eq!(
        slab_err(ds.read_into("s3", &whole, &mut short_buf), path, "s3"),
        SlabError::BufferLength { got: 20, want: 21 }
    );
    let mut long_buf = vec![0i16; 22];
    assert_eq!(
        slab_err(ds.read_into("s3", &whole, &mut long_buf), path, "s3"),
        SlabError::BufferLength { got: 22, want: 21 }
    );
    let mut ok_buf = vec![0i16; 21];
    ds.read_into("s3", &whole, &mut ok_buf).unwrap();
    assert_eq!(&ok_buf[..6], [1, 2, 3, 4, 5, 6]);
}

#[test]
fn bad_selections_give_the_matching_slab_error() {
    let dir = temp_dir();
    let nc = sample("classic_records.nc");
    let z = dir.path().join("classic_records.nc3z");
    pack_with(&nc, &z, Codec::Zstd, 16, 2);
    check_errors(&Archive::open(&z).unwrap(), &z);
    check_errors(&NcFile::open(&nc).unwrap(), &nc);
    check_errors(&nc3pack::open(&z).unwrap(), &z);
    check_errors(&nc3pack::open(&nc).unwrap(), &nc);
}

/// `read_values` gives the right variant and values for all 11 netCDF types, and the typed
/// reads agree; on `ds` opened from classic_records.nc (`cdf5 == false`) or cdf5_types.nc.
// classic_records.nc's f3 holds the literal 2.71828, not an approximation of e.
#[allow(clippy::approx_constant)]
fn check_every_type<D: Dataset>(ds: &D, cdf5: bool, ctx: &str) {
    let whole = |name: &str| ds.slab(name, None, None, None).unwrap();
    let vals = |name: &str| {
        ds.read_values(name, &whole(name))
            .unwrap_or_else(|e| panic!("{ctx}: read_values {name}: {e}"))
    };
    fn same<T: Elem + PartialEq>(ds: &impl Dataset, name: &str, v: &Values, want: &[T]) {
        assert_eq!(T::of_values(v), Some(want), "read_values {name}");
        let slab = ds.slab(name, None, None, None).unwrap();
        assert_eq!(ds.read::<T>(name, &slab).unwrap(), want, "read {name}");
    }
    if !cdf5 {
        let b = vals("b");
        assert!(matches!(b, Values::Byte(_)), "{ctx}: {b:?}");
        same(ds, "b", &b, &[-128i8, -1, 0, 1, 2, 127, 42]);
        let c5 = vals("c5");
        assert!(matches!(c5, Values::Char(_)), "{ctx}: {c5:?}");
        same(
            ds,
            "c5",
            &c5,
            b"alphabravocharldeltaecho\0fox\0\0g\0\0\0\0".as_slice(),
        );
        same(
            ds,
            "s",
            &vals("s"),
            &[-32768i16, -1, 0, 1, 32767, 1000, -1000],
        );
        same(
            ds,
            "i",
            &vals("i"),
            &[-2147483648i32, -1, 0, 1, 2147483647, 123456, -654321],
        );
        same(
            ds,
            "fixed_f",
            &vals("fixed_f"),
            &[1.25f32, -2.5, 3.75, 4.0, 5.0, 6.0],
        );
        same(
            ds,
            "d",
            &vals("d"),
            &[
                0.1f64,
                0.2,
                0.3,
                1e300,
                -1e-300,
                std::f64::consts::PI,
                -std::f64::consts::E,
            ],
        );
        same(ds, "scalar_d", &vals("scalar_d"), &[6.02214076e23f64]);
        same(ds, "scalar_c", &vals("scalar_c"), b"Z".as_slice());
        // A strided selection through read_values too.
        let s = ds
            .slab("f3", Some(&[1, 0]), Some(&[3, 2]), Some(&[2, 2]))
            .unwrap();
        assert_eq!(
            ds.read_values("f3", &s).unwrap(),
            Values::Float(vec![-0.25, 2.718_28, 7.0, 9.0, 13.0, 15.0])
        );
    } else {
        let ub = vals("ub");
        assert!(matches!(ub, Values::UByte(_)), "{ctx}: {ub:?}");
        same(ds, "ub", &ub, &[0u8, 128, 254, 1, 2, 3, 200, 100, 50]);
        same(ds, "us", &vals("us"), &[0u16, 65534, 12345]);
        same(
            ds,
            "ui",
            &vals("ui"),
            &[
                0u32, 4294967294, 2147483648, 1, 2, 3, 3000000000, 4000000000, 99,
            ],
        );
        same(ds, "i64", &vals("i64"), &[i64::MIN, i64::MAX, 0]);
        same(
            ds,
            "u64",
            &vals("u64"),
            &[0u64, u64::MAX, 9223372036854775808],
        );
        same(
            ds,
            "fixed_u64",
            &vals("fixed_u64"),
            &[1u64, 12345678901234567890, 18446744073709551613],
        );
        same(ds, "scalar_i64", &vals("scalar_i64"), &[i64::MIN]);
        same(ds, "f", &vals("f"), &[f32::MAX, -1.175_494_4e-38, 0.5]);
        same(ds, "d", &vals("d"), &[f64::MAX, 5e-324, -1.0]);
        let us = whole("us");
        assert_eq!(
            slab_err(ds.read::<i16>("us", &us), ds.path(), "us"),
            SlabError::TypeMismatch {
                var: "us".into(),
                var_type: "ushort",
                requested: "i16"
            }
        );
        let ub = whole("ub");
        assert_eq!(
            slab_err(ds.read::<i8>("ub", &ub), ds.path(), "ub"),
            SlabError::TypeMismatch {
                var: "ub".into(),
                var_type: "ubyte",
                requested: "i8"
            }
        );
        let s = ds
            .slab("ui", Some(&[0, 2]), Some(&[2, 1]), Some(&[2, 1]))
            .unwrap();
        assert_eq!(
            ds.read_values("ui", &s).unwrap(),
            Values::UInt(vec![2147483648, 99])
        );
    }
}

#[test]
fn read_values_covers_every_type() {
    let dir = temp_dir();
    for (name, cdf5) in [("classic_records.nc", false), ("cdf5_types.nc", true)] {
        let nc = sample(name);
        let z = dir.path().join(format!("{name}3z"));
        pack_with(&nc, &z, Codec::Deflate, 8, 2);
        check_every_type(&Archive::open(&z).unwrap(), cdf5, "archive");
        check_every_type(&NcFile::open(&nc).unwrap(), cdf5, "NcFile");
        check_every_type(&nc3pack::open(&z).unwrap(), cdf5, "open(archive)");
    }
}

// ---------------------------------------------------------------------------------------------
// 3. The block cache
// ---------------------------------------------------------------------------------------------

/// gridded_sst.nc packed with 64 KiB blocks: `sst` float(24, 180, 360) spans 95 blocks.
fn packed_sst(dir: &Path) -> PathBuf {
    let z = dir.join("sst.nc3z");
    pack_with(&sample("gridded_sst.nc"), &z, Codec::Zstd, 64 << 10, 4);
    z
}

/// A damaged block met by a large read (the threads sharing the blocks, each decoding
/// straight into the output) is reported exactly as a read of that block alone reports it,
/// whether the values are read as stored (big-endian) or in native order, with the cache on or
/// off, a whole or a partial first block.
#[test]
fn damage_in_a_large_read_is_reported_like_a_read_of_the_block() {
    let dir = tempfile::tempdir().unwrap();
    let z = packed_sst(dir.path());
    let a = Archive::open(&z).unwrap();
    let (v, bb, blocks) = sst_blocks(&a);
    assert!(blocks >= 6, "the test needs several blocks, got {blocks}");
    let b = 9;
    let e = *a.entry(v, b);
    assert!(!e.is_constant(), "block {b} must have a frame");
    let frame_at = e.offset;
    let payload_at = e.offset + nc3pack::format::FRAME_HEADER_LEN as u64;
    drop(a);
    let pristine = std::fs::read(&z).unwrap();
    let shape = [24u64, 180, 360];
    // The whole variable; one run from plane 2, which starts inside block 7 (a partial first
    // block); and many runs (read a window of blocks at a time, not shared by the threads).
    let slabs = [
        Hyperslab::all(&shape),
        Hyperslab::new(&shape, &[2, 0, 0], &[20, 180, 360], &[1, 1, 1]).unwrap(),
        Hyperslab::new(&shape, &[0, 0, 7], &[20, 180, 353], &[1, 1, 1]).unwrap(),
        // A time series through block 9 (record 2, row 49, column 216): one value of each of
        // 24 blocks.
        Hyperslab::new(&shape, &[0, 49, 216], &[24, 1, 1], &[1, 1, 1]).unwrap(),
    ];
    let plane = 180 * 360 * 4;
    assert_eq!((2 * plane + (49 * 360 + 216) * 4) / (64 << 10), 9);
    assert!(
        bb == 64 << 10 && (2 * plane) % bb != 0 && (2 * plane) / bb < b,
        "plane 2 starts inside a block before block {b}"
    );
    for (what, at) in [("payload", payload_at + 5), ("frame header", frame_at + 9)] {
        let mut bytes = pristine.clone();
        bytes[at as usize] ^= 0x10;
        std::fs::write(&z, &bytes).unwrap();
        // The reference: the damaged block read alone.
        let want = Archive::open(&z)
            .unwrap()
            .read_block(v, b)
            .expect_err("the damaged block must not read")
            .to_string();
        assert!(want.contains("block 9"), "{want}");
        for budget in [64 << 20, 0] {
            for slab in &slabs {
                let mut a = Archive::open(&z).unwrap();
                a.set_threads(2);
                a.set_cache_budget(budget);
                let n = (slab.len() * 4) as usize;
                let mut out = vec![0u8; n];
                let raw = a.read_raw_into(v, slab, &mut out).unwrap_err();
                assert!(
                    matches!(raw, Error::Block { block: 9, .. }),
                    "{what}: {raw}"
                );
                assert_eq!(
                    raw.to_string(),
                    want,
                    "{what}, budget {budget}: read_raw_into"
                );
                let mut typed = vec![0f32; n / 4];
                let native = a.read_into("sst", slab, &mut typed).unwrap_err();
                assert_eq!(
                    native.to_string(),
                    want,
                    "{what}, budget {budget}: read_into"
                );
            }
        }
    }
}

/// The id of `sst` and the decoded bytes per block of its stream.
fn sst_blocks(a: &Archive) -> (usize, u64, u64) {
    let v = a.var_id("sst").unwrap();
    (v, a.block_bytes(v), a.block_count(v))
}

/// A one-element selection of `sst` in block `b` (its first element plus `k`).
fn element_in_block(a: &Archive, b: u64, k: u64) -> Hyperslab {
    let (v, bb, _) = sst_blocks(a);
    let shape = &a.layout().vars[v].shape;
    let flat = b * bb / 4 + k;
    let (t, rest) = (flat / (shape[1] * shape[2]), flat % (shape[1] * shape[2]));
    Hyperslab::new(
        shape,
        &[t, rest / shape[2], rest % shape[2]],
        &[1, 1, 1],
        &[1, 1, 1],
    )
    .unwrap()
}

/// A first small read of a block decodes only its part and does not cache the block; the
/// second caches it, and the next ones are hits. The values are the file's every time
/// (elements at the start, middle and end of blocks, and a few across elements).
#[test]
fn a_first_small_read_decodes_its_part_and_the_second_caches_the_block() {
    let dir = temp_dir();
    let z = packed_sst(dir.path());
    let a = Archive::open(&z).unwrap();
    assert!(!a.caches_first_small_reads());
    let nc = NcFile::open(sample("gridded_sst.nc")).unwrap();
    let (v, bb, blocks) = sst_blocks(&a);
    let shape = a.layout().vars[v].shape.clone();
    for b in [0, 17, blocks / 2, blocks - 1] {
        if a.entry(v, b).is_constant() {
            continue;
        }
        let per_block = bb.min(a.stream_len(v) - b * bb) / 4;
        // (Not one element after the last read's: that is a sequential scan, read otherwise.)
        for k in [0, 2, per_block / 2, per_block - 1] {
            let slab = element_in_block(&a, b, k);
            let want = nc.read::<f32>("sst", &slab).unwrap();
            let s = a.cache_stats();
            assert_eq!(
                a.read::<f32>("sst", &slab).unwrap(),
                want,
                "block {b} + {k}"
            );
            let t = a.cache_stats();
            assert_eq!(
                (t.misses - s.misses, t.entries),
                (1, s.entries),
                "block {b}: {t:?}"
            );
            // Read again: decoded whole and cached; then from the cache.
            assert_eq!(a.read::<f32>("sst", &slab).unwrap(), want);
            let u = a.cache_stats();
            assert_eq!(
                (u.misses - t.misses, u.entries),
                (1, t.entries + 1),
                "{u:?}"
            );
            assert_eq!(a.read::<f32>("sst", &slab).unwrap(), want);
            assert_eq!(a.cache_stats().hits, u.hits + 1);
            a.clear_cache();
        }
    }
    // A few values across elements of one row, in native and big-endian order.
    let row = Hyperslab::new(&shape, &[3, 7, 11], &[1, 1, 9], &[1, 1, 1]).unwrap();
    let want = nc.read::<f32>("sst", &row).unwrap();
    assert_eq!(a.read::<f32>("sst", &row).unwrap(), want);
    assert_eq!(a.cache_stats().entries, 0);
    let mut raw = vec![0u8; 36];
    a.read_raw_into(v, &row, &mut raw).unwrap();
    let be: Vec<f32> = raw
        .chunks_exact(4)
        .map(|c| f32::from_be_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(be, want);
    assert_eq!(
        a.cache_stats().entries,
        1,
        "the block's second small read caches it"
    );
    assert!(bb > 36);
}

/// A first small read of a block whose frame is big (1 MiB blocks, zstd with a filter of the
/// shuffle family: the frame is read a piece at a time and zstd stops once it has what the
/// part needs) gives the file's values at the start, middle and end of the block, keeps
/// nothing, and still checks the whole frame: damage in the frame's last byte, after all that
/// a read of the block's first element needs, or in its header, is reported as a read of the
/// whole block reports it.
#[test]
fn a_first_small_read_of_a_big_frame_checks_all_of_it() {
    use nc3pack::format::Filter;
    let dir = temp_dir();
    for f in [Filter::ZigZagDelta, Filter::ByteDelta, Filter::None] {
        let z = dir.path().join(format!("sst-1m-{f:?}.nc3z"));
        let opts = PackOptions::default()
            .with_codec(Codec::Zstd)
            .with_block_size(1 << 20)
            .with_filter(nc3pack::FilterMode::Fixed(f));
        pack_file(&sample("gridded_sst.nc"), &z, &opts).unwrap();
        big_frames_read_in_part(&z, f);
    }
}

/// [`a_first_small_read_of_a_big_frame_checks_all_of_it`] on the archive `z`, whose blocks of
/// `sst` are zstd frames with filter `f`.
fn big_frames_read_in_part(z: &Path, f: nc3pack::format::Filter) {
    use nc3pack::format::Filter;
    let a = Archive::open(z).unwrap();
    let nc = NcFile::open(sample("gridded_sst.nc")).unwrap();
    let (v, bb, blocks) = sst_blocks(&a);
    assert_eq!(bb, 1 << 20);
    let big = (0..blocks)
        .filter(|&b| {
            let e = a.entry(v, b);
            !e.is_constant()
                && e.codec == Codec::Zstd
                && e.frame_len() >= 64 << 10
                && matches!(
                    e.filter,
                    Filter::None
                        | Filter::Shuffle
                        | Filter::ByteDelta
                        | Filter::Delta
                        | Filter::ZigZagDelta
                )
        })
        .collect::<Vec<_>>();
    assert!(
        big.len() >= 2,
        "the test needs big zstd frames with {f:?}: {big:?}"
    );
    for &b in &big {
        let per_block = bb.min(a.stream_len(v) - b * bb) / 4;
        // (Not one element after the last read's: that is a sequential scan, read otherwise.)
        for k in [2, per_block - 1, 0, per_block / 2] {
            let slab = element_in_block(&a, b, k);
            let want = nc.read::<f32>("sst", &slab).unwrap();
            assert_eq!(
                a.read::<f32>("sst", &slab).unwrap(),
                want,
                "block {b} + {k}"
            );
            assert_eq!(a.cache_stats().entries, 0, "block {b} + {k}");
            a.clear_cache();
        }
    }
    let b = big[0];
    let e = *a.entry(v, b);
    let first = element_in_block(&a, b, 0);
    drop(a);
    let pristine = std::fs::read(z).unwrap();
    for (what, at) in [
        ("the payload's last byte", e.offset + e.frame_len() - 1),
        (
            "the payload's first byte",
            e.offset + nc3pack::format::FRAME_HEADER_LEN as u64,
        ),
        ("the frame header", e.offset + 9),
    ] {
        let mut bytes = pristine.clone();
        bytes[at as usize] ^= 0x10;
        std::fs::write(z, &bytes).unwrap();
        let want = Archive::open(z)
            .unwrap()
            .read_block(v, b)
            .expect_err("the damaged block must not read")
            .to_string();
        assert!(want.contains(&format!("block {b} ")), "{want}");
        let a = Archive::open(z).unwrap();
        let got = a.read::<f32>("sst", &first).expect_err(what);
        assert!(
            matches!(got, Error::Block { block, .. } if block == b),
            "{what}: {got}"
        );
        assert_eq!(got.to_string(), want, "{what}");
    }
}

#[test]
fn cache_repeated_read_hits() {
    let dir = temp_dir();
    let z = packed_sst(dir.path());
    let a = Archive::open(&z).unwrap();
    // The cache's own policy: a block cached from its first small read.
    a.set_cache_first_small_reads(true);
    let nc = NcFile::open(sample("gridded_sst.nc")).unwrap();
    let (_, bb, blocks) = sst_blocks(&a);
    assert_eq!(bb, 64 << 10);
    assert!(blocks >= 90, "{blocks} blocks");
    let s0 = a.cache_stats();
    assert_eq!((s0.hits, s0.misses, s0.entries, s0.bytes), (0, 0, 0, 0));
    assert_eq!(s0.budget, nc3pack::DEFAULT_CACHE_BYTES);

    let slab = element_in_block(&a, 17, 5);
    let first: Vec<f32> = a.read("sst", &slab).unwrap();
    assert_eq!(first, nc.read::<f32>("sst", &slab).unwrap());
    let s1 = a.cache_stats();
    assert_eq!((s1.hits, s1.misses), (0, 1), "{s1:?}");
    assert_eq!((s1.entries, s1.bytes), (1, bb));
    for i in 1..=3 {
        let again: Vec<f32> = a.read("sst", &slab).unwrap();
        assert_eq!(again, first);
        let s = a.cache_stats();
        assert_eq!((s.hits, s.misses), (i, 1), "repeat {i}: {s:?}");
    }
    // Another element of the same block is a hit too; one of another block a miss.
    let same_block = element_in_block(&a, 17, 4000);
    a.read::<f32>("sst", &same_block).unwrap();
    let s = a.cache_stats();
    assert_eq!((s.hits, s.misses, s.entries), (4, 1, 1), "{s:?}");
    a.read::<f32>("sst", &element_in_block(&a, 18, 0)).unwrap();
    let s = a.cache_stats();
    assert_eq!(
        (s.hits, s.misses, s.entries, s.evictions),
        (4, 2, 2, 0),
        "{s:?}"
    );
    // clear_cache drops the blocks and zeroes the counters; the budget stays.
    a.clear_cache();
    let s = a.cache_stats();
    assert_eq!(
        (s.hits, s.misses, s.evictions, s.entries, s.bytes, s.budget),
        (0, 0, 0, 0, 0, nc3pack::DEFAULT_CACHE_BYTES)
    );
    a.read::<f32>("sst", &slab).unwrap();
    assert_eq!(a.cache_stats().misses, 1);
}

/// A large read (more than one block) caches every block it decodes by default; with
/// `set_cache_whole_blocks(false)` it caches only the partial blocks at its ends, still counts
/// a lookup per block, and reads the same values either way, on one thread or more.
#[test]
fn large_read_can_leave_the_blocks_it_covers_whole_out_of_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let z = packed_sst(dir.path());
    let nc = NcFile::open(sample("gridded_sst.nc")).unwrap();
    let shape = [24u64, 180, 360];
    // Planes 2..=21: from inside one block to inside another (checked below).
    let slab = Hyperslab::new(&shape, &[2, 0, 0], &[20, 180, 360], &[1, 1, 1]).unwrap();
    let want: Vec<f32> = nc.read("sst", &slab).unwrap();
    let plane = 180 * 360 * 4u64;
    let (from, to) = (2 * plane, 22 * plane);
    for (cache_whole, threads) in [(true, 1), (true, 2), (false, 1), (false, 2)] {
        let mut a = Archive::open(&z).unwrap();
        a.set_threads(threads);
        assert!(a.caches_whole_blocks(), "on by default");
        a.set_cache_whole_blocks(cache_whole);
        assert_eq!(a.caches_whole_blocks(), cache_whole);
        let (v, bb, _) = sst_blocks(&a);
        assert!(from % bb != 0 && to % bb != 0, "both ends inside a block");
        let (first, last) = (from / bb, (to - 1) / bb);
        let spanned = last - first + 1;
        assert!(spanned >= 5, "{spanned} blocks");

        let got: Vec<f32> = a.read("sst", &slab).unwrap();
        assert_eq!(
            got, want,
            "cache_whole_blocks {cache_whole}, {threads} threads"
        );
        let s = a.cache_stats();
        let cached = if cache_whole { spanned } else { 2 };
        assert_eq!(
            (s.hits, s.misses, s.entries),
            (0, spanned, cached),
            "cache_whole_blocks {cache_whole}, {threads} threads: {s:?}"
        );
        // Which blocks: the two partial ones are read again from the cache, a whole one is
        // decoded again only when it was not kept.
        for (b, kept) in [(first, true), (last, true), (first + 2, cache_whole)] {
            let before = a.cache_stats();
            a.read::<f32>("sst", &element_in_block(&a, b, 0)).unwrap();
            let after = a.cache_stats();
            assert_eq!(
                (after.hits - before.hits, after.misses - before.misses),
                if kept { (1, 0) } else { (0, 1) },
                "block {b}, cache_whole_blocks {cache_whole}, {threads} threads"
            );
        }
        // The same read again: from the cache, the blocks kept; big-endian reads too.
        a.clear_cache();
        let mut raw = vec![0u8; (slab.len() * 4) as usize];
        a.read_raw_into(v, &slab, &mut raw).unwrap();
        let be: Vec<f32> = raw
            .chunks_exact(4)
            .map(|c| f32::from_be_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(be, want);
        assert_eq!(a.cache_stats().entries, cached);
    }
}

/// A time series (one value of each record, so one value of each of many blocks) reads the
/// original's values on one thread or more, with the default cache budget and one that holds a
/// single block, big-endian or native. The blocks it takes one value of are decoded into a
/// reused buffer and not cached the first time (each would cost a fresh allocation), but are
/// the second time; cached blocks are used, and a series of few blocks is cached at once.
#[test]
fn time_series_of_many_blocks_matches_the_original_and_caches_blocks_read_twice() {
    let dir = tempfile::tempdir().unwrap();
    let z = packed_sst(dir.path());
    let nc = NcFile::open(sample("gridded_sst.nc")).unwrap();
    let shape = [24u64, 180, 360];
    let series_at =
        |y: u64, x: u64| Hyperslab::new(&shape, &[0, y, x], &[24, 1, 1], &[1, 1, 1]).unwrap();
    for threads in [1, 3] {
        for budget in [nc3pack::DEFAULT_CACHE_BYTES, 64 << 10] {
            let mut a = Archive::open(&z).unwrap();
            a.set_threads(threads);
            a.set_cache_budget(budget);
            let ctx = format!("{threads} threads, budget {budget}");
            // Once: nothing cached.
            let series = series_at(49, 216);
            let want: Vec<f32> = nc.read("sst", &series).unwrap();
            assert_eq!(a.read::<f32>("sst", &series).unwrap(), want, "{ctx}");
            let s = a.cache_stats();
            assert_eq!((s.hits, s.misses, s.entries), (0, 24, 0), "{ctx}: {s:?}");
            // Again, in every way of reading (and other points, every other record): the
            // same values, and the blocks read twice are cached, as the budget allows.
            for (y, x) in [(49, 216), (0, 0), (90, 180), (179, 359)] {
                let series = series_at(y, x);
                let want: Vec<f32> = nc.read("sst", &series).unwrap();
                check_slab(&a, "sst", &series, &want, &ctx);
                let strided = Hyperslab::new(&shape, &[1, y, x], &[12, 1, 1], &[2, 1, 1]).unwrap();
                let want: Vec<f32> = nc.read("sst", &strided).unwrap();
                check_slab(&a, "sst", &strided, &want, &ctx);
            }
            let s = a.cache_stats();
            if budget == nc3pack::DEFAULT_CACHE_BYTES {
                assert!(s.entries >= 24 && s.hits > 0, "{ctx}: {s:?}");
            } else {
                assert!(s.entries <= 1, "{ctx}: {s:?}");
            }
        }
    }
    // A block already cached is copied from; a series of a few blocks is cached at once.
    let a = Archive::open(&z).unwrap();
    let few = Hyperslab::new(&shape, &[0, 49, 216], &[3, 1, 1], &[1, 1, 1]).unwrap();
    let want: Vec<f32> = nc.read("sst", &few).unwrap();
    assert_eq!(a.read::<f32>("sst", &few).unwrap(), want);
    let s = a.cache_stats();
    assert_eq!((s.hits, s.misses, s.entries), (0, 3, 3), "{s:?}");
    let series = series_at(49, 216);
    let want: Vec<f32> = nc.read("sst", &series).unwrap();
    assert_eq!(a.read::<f32>("sst", &series).unwrap(), want);
    let t = a.cache_stats();
    assert_eq!(
        (t.hits - s.hits, t.misses - s.misses, t.entries),
        (3, 21, 3),
        "{t:?}"
    );
}

#[test]
fn cache_stays_within_budget_and_counts_evictions() {
    let dir = temp_dir();
    let z = packed_sst(dir.path());
    let a = Archive::open(&z).unwrap();
    // The cache's own policy: a block cached from its first small read.
    a.set_cache_first_small_reads(true);
    let nc = NcFile::open(sample("gridded_sst.nc")).unwrap();
    let (_, bb, blocks) = sst_blocks(&a);
    let n = 3;
    let budget = n * bb;
    a.set_cache_budget(budget);
    // One element of every block, in order: each a miss, each decoded block inserted.
    for b in 0..blocks {
        let slab = element_in_block(&a, b, 1);
        assert_eq!(
            a.read::<f32>("sst", &slab).unwrap(),
            nc.read::<f32>("sst", &slab).unwrap()
        );
        let s = a.cache_stats();
        assert!(s.bytes <= budget, "block {b}: {s:?}");
        assert!(s.entries <= n, "block {b}: {s:?}");
        assert_eq!(s.misses, b + 1, "block {b}: {s:?}");
        assert_eq!(s.evictions, (b + 1).saturating_sub(n), "block {b}: {s:?}");
    }
    // The last n blocks are the ones held.
    let s = a.cache_stats();
    for b in blocks - n..blocks {
        a.read::<f32>("sst", &element_in_block(&a, b, 2)).unwrap();
    }
    let t = a.cache_stats();
    assert_eq!((t.hits - s.hits, t.misses - s.misses), (n, 0), "{t:?}");

    // A large read touching many blocks at once (decoded in parallel) stays within budget,
    // and one larger than half the cache does not evict what it holds: its blocks would only
    // evict each other (scan resistance).
    let whole = a.slab("sst", None, None, None).unwrap();
    let before = a.cache_stats();
    let all: Vec<f32> = a.read("sst", &whole).unwrap();
    assert_eq!(all, nc.read::<f32>("sst", &whole).unwrap());
    let s = a.cache_stats();
    assert!(s.bytes <= budget && s.entries <= n, "{s:?}");
    assert_eq!(
        s.hits + s.misses - before.hits - before.misses,
        blocks,
        "{s:?}"
    );
    assert_eq!((s.evictions, s.entries), (before.evictions, n), "{s:?}");
    for b in blocks - n..blocks {
        a.read::<f32>("sst", &element_in_block(&a, b, 3)).unwrap();
    }
    let t = a.cache_stats();
    assert_eq!((t.hits - s.hits, t.misses - s.misses), (n, 0), "{t:?}");
    let strided = a
        .slab(
            "sst",
            Some(&[1, 3, 5]),
            Some(&[7, 30, 50]),
            Some(&[3, 5, 7]),
        )
        .unwrap();
    assert_eq!(
        a.read::<f32>("sst", &strided).unwrap(),
        nc.read::<f32>("sst", &strided).unwrap()
    );
    let s = a.cache_stats();
    assert!(s.bytes <= budget && s.entries <= n, "{s:?}");

    // A budget that is not a whole number of blocks.
    a.set_cache_budget(budget + bb / 2);
    for b in (0..blocks).step_by(7) {
        a.read::<f32>("sst", &element_in_block(&a, b, 0)).unwrap();
        let s = a.cache_stats();
        assert!(s.bytes <= budget + bb / 2 && s.entries <= n, "{s:?}");
    }
    // Shrinking the budget evicts down to it, least recently used first.
    let s = a.cache_stats();
    assert_eq!(s.entries, n);
    a.set_cache_budget(bb);
    let t = a.cache_stats();
    assert_eq!((t.entries, t.bytes), (1, bb), "{t:?}");
    assert_eq!(t.evictions, s.evictions + n - 1);
    let last = (0..blocks).step_by(7).last().unwrap();
    a.read::<f32>("sst", &element_in_block(&a, last, 9))
        .unwrap();
    assert_eq!(
        a.cache_stats().hits,
        t.hits + 1,
        "the most recent block stays"
    );
    // A budget smaller than one block caches nothing.
    a.set_cache_budget(bb - 1);
    let s = a.cache_stats();
    assert_eq!((s.entries, s.bytes), (0, 0));
    for _ in 0..2 {
        a.read::<f32>("sst", &element_in_block(&a, 3, 0)).unwrap();
    }
    let t = a.cache_stats();
    assert_eq!(
        (t.hits, t.misses - s.misses, t.entries),
        (s.hits, 2, 0),
        "{t:?}"
    );
}

#[test]
fn cache_evicts_least_recently_used() {
    let dir = temp_dir();
    let z = packed_sst(dir.path());
    let a = Archive::open(&z).unwrap();
    // The cache's own policy: a block cached from its first small read.
    a.set_cache_first_small_reads(true);
    let (_, bb, _) = sst_blocks(&a);
    a.set_cache_budget(2 * bb);
    let (ba, bb_, bc) = (10, 40, 70);
    let mut last = a.cache_stats();
    // (block, expected hit?, expected evictions so far)
    let steps = [
        (ba, false, 0),  // A
        (bb_, false, 0), // B
        (ba, true, 0),   // A again: now most recent
        (bc, false, 1),  // C evicts B, the least recently used
        (ba, true, 1),   // A is still there
        (bc, true, 1),   // and C
        (bb_, false, 2), // B was evicted; re-reading it evicts A (LRU now)
        (bc, true, 2),
        (ba, false, 3),
    ];
    for (i, (b, hit, evictions)) in steps.into_iter().enumerate() {
        a.read::<f32>("sst", &element_in_block(&a, b, i as u64))
            .unwrap();
        let s = a.cache_stats();
        assert_eq!(
            (s.hits - last.hits, s.misses - last.misses),
            if hit { (1, 0) } else { (0, 1) },
            "step {i} (block {b}): {s:?}"
        );
        assert_eq!(s.evictions, evictions, "step {i} (block {b}): {s:?}");
        assert!(s.entries <= 2 && s.bytes <= 2 * bb);
        last = s;
    }
}

#[test]
fn cache_budget_zero_disables_caching() {
    let dir = temp_dir();
    let z = packed_sst(dir.path());
    let a = Archive::open(&z).unwrap();
    // The cache's own policy: a block cached from its first small read.
    a.set_cache_first_small_reads(true);
    let nc = NcFile::open(sample("gridded_sst.nc")).unwrap();
    a.read::<f32>("sst", &element_in_block(&a, 5, 0)).unwrap();
    assert_eq!(a.cache_stats().entries, 1);
    a.set_cache_budget(0);
    let s = a.cache_stats();
    assert_eq!((s.entries, s.bytes, s.budget, s.evictions), (0, 0, 0, 1));
    let slab = a
        .slab(
            "sst",
            Some(&[2, 10, 20]),
            Some(&[3, 40, 100]),
            Some(&[5, 3, 2]),
        )
        .unwrap();
    let want = nc.read::<f32>("sst", &slab).unwrap();
    for _ in 0..3 {
        assert_eq!(a.read::<f32>("sst", &slab).unwrap(), want);
        let t = a.cache_stats();
        assert_eq!((t.hits, t.entries, t.bytes), (0, 0, 0), "{t:?}");
    }
    assert!(a.cache_stats().misses > s.misses);
    // Turning it back on caches again.
    a.set_cache_budget(1 << 20);
    a.read::<f32>("sst", &element_in_block(&a, 5, 0)).unwrap();
    a.read::<f32>("sst", &element_in_block(&a, 5, 0)).unwrap();
    assert_eq!(a.cache_stats().hits, 1);
}

// ---------------------------------------------------------------------------------------------
// 4. Sharing an archive between threads
// ---------------------------------------------------------------------------------------------

#[test]
fn archive_is_send_sync_and_threads_read_what_one_thread_reads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Archive>();
    send_sync::<NcFile>();
    send_sync::<Box<dyn Dataset>>();

    let dir = temp_dir();
    let z = packed_sst(dir.path());
    let nc = NcFile::open(sample("gridded_sst.nc")).unwrap();
    let shapes: Vec<(&str, Vec<u64>)> = ["sst", "time", "lat", "lon"]
        .into_iter()
        .map(|n| (n, nc.layout().vars[nc.var_id(n).unwrap()].shape.clone()))
        .collect();
    // 4 × 200 random selections, mostly of sst, of at most a few thousand elements.
    let mut rng = Rng(0x5eed_0f55);
    let work: Vec<Vec<(&str, Hyperslab)>> = (0..4)
        .map(|_| {
            (0..200)
                .map(|_| {
                    let (name, shape) = &shapes[if rng.below(5) == 0 {
                        1 + rng.below(3) as usize
                    } else {
                        0
                    }];
                    let caps = [4u64, 24, 90];
                    let (mut st, mut c, mut sd) = (vec![], vec![], vec![]);
                    for (d, &len) in shape.iter().enumerate() {
                        let cap = if shape.len() == 1 { 200 } else { caps[d] };
                        let stride = 1 + rng.below(3);
                        let start = rng.below(len);
                        let max = ((len - 1 - start) / stride + 1).min(cap);
                        st.push(start);
                        c.push(rng.below(max + 1));
                        sd.push(stride);
                    }
                    (*name, Hyperslab::new(shape, &st, &c, &sd).unwrap())
                })
                .collect()
        })
        .collect();
    // One thread, one archive: the expected bytes (and NcFile agrees).
    let single = Archive::open(&z).unwrap();
    let expected: Vec<Vec<Vec<u8>>> = work
        .iter()
        .map(|w| {
            w.iter()
                .map(|(name, s)| {
                    let got = single.read_raw(name, s).unwrap();
                    assert_eq!(got, nc.read_raw(name, s).unwrap(), "{name} {s:?}");
                    got
                })
                .collect()
        })
        .collect();
    // Four threads sharing one archive, with a default cache and with one small enough to
    // evict all the time.
    for budget in [nc3pack::DEFAULT_CACHE_BYTES, 4 * (64 << 10)] {
        let shared = Archive::open(&z).unwrap();
        shared.set_cache_budget(budget);
        std::thread::scope(|sc| {
            let handles: Vec<_> = work
                .iter()
                .zip(&expected)
                .enumerate()
                .map(|(t, (w, exp))| {
                    let shared = &shared;
                    sc.spawn(move || {
                        for (i, ((name, s), e)) in w.iter().zip(exp).enumerate() {
                            let got = shared.read_raw(name, s).unwrap();
                            assert!(
                                got == *e,
                                "thread {t}, read {i}: {name} {s:?} differs (budget {budget})"
                            );
                            if name == &"sst" && i % 10 == 0 {
                                let typed: Vec<f32> = shared.read(name, s).unwrap();
                                assert_eq!(f32::be_bytes(&typed), *e);
                            }
                        }
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
        });
        let s = shared.cache_stats();
        assert!(s.bytes <= budget, "{s:?}");
        assert!(s.hits + s.misses > 0);
    }
}

// ---------------------------------------------------------------------------------------------
// 5. `nc3pack slice` against ncdump
// ---------------------------------------------------------------------------------------------
//
// The golden files are ncdump's output, made from the repository root with netcdf-bin 4.9.0:
//
//   ncdump -v time,c5,b,b5,s,s3,i,f3,d,fixed_s,fixed_b,fixed_c,fixed_f,scalar_i,scalar_d,scalar_c,scalar_b \
//       samples/classic_records.nc > tests/golden/slice_classic_records.cdl
//   ncdump -v time,lat,lon samples/gridded_sst.nc > tests/golden/slice_gridded_sst.cdl
//   ncdump -v time,temp,qc,flag,code,counts,fixed_f,fixed_d,fixed_default,fixed_default_f \
//       samples/fill_values.nc > tests/golden/slice_fill_values.cdl
//   ncdump -v time,ub,us,ui,i64,u64,b,c,sh,f,d,fixed_ub,fixed_us,fixed_ui,fixed_i64,fixed_u64,scalar_i64,scalar_u64 \
//       samples/cdf5_types.nc > tests/golden/slice_cdf5_types.cdl
//   for f in single_recvar_byte single_recvar_short single_recvar_char header_gap trailing_bytes \
//       offset64_mixed zero_records scalars; do ncdump samples/$f.nc > tests/golden/slice_$f.cdl; done
//
// (`sst` itself is too big to dump whole, and ncks is not available for a slice; the sst
// slices are checked against the netcdf3 crate's read instead.)

/// One value of the data section: a number as printed, `_` (the fill value), or a string.
#[derive(Debug, Clone)]
enum Tok {
    Num(String),
    Fill,
    Str(Vec<u8>),
}

/// A value to compare: an integer, a real, or one row of chars.
#[derive(Debug, Clone, PartialEq)]
enum Val {
    Int(i128),
    Real(f64),
    Text(Vec<u8>),
}

/// A variable as the golden dump declares it.
#[derive(Debug)]
struct Declared {
    ty: String,
    shape: Vec<u64>,
    fill: Option<String>,
}

/// Unescapes the body of a CDL string (between the quotes).
fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        i += 1;
        match b.get(i) {
            Some(b'n') => out.push(b'\n'),
            Some(b't') => out.push(b'\t'),
            Some(c @ b'0'..=b'7') => {
                let mut v = u32::from(c - b'0');
                let mut j = 1;
                while j < 3 && matches!(b.get(i + j), Some(b'0'..=b'7')) {
                    v = v * 8 + u32::from(b[i + j] - b'0');
                    j += 1;
                }
                out.push(v as u8);
                i += j - 1;
            }
            Some(&c) => out.push(c),
            None => break,
        }
        i += 1;
    }
    out
}

/// The data-section values of `var` in `text` (an ncdump output or `nc3pack slice` text):
/// everything between ` var =` at the start of a line and the `;` that ends it.
fn data_tokens(text: &str, var: &str) -> Vec<Tok> {
    let data = text.find("\ndata:\n").map_or(text, |i| &text[i..]);
    let key = format!(" {var} =");
    let at = data
        .match_indices(&key)
        .map(|(i, _)| i)
        .find(|&i| {
            (i == 0 || data.as_bytes()[i - 1] == b'\n')
                && matches!(data.as_bytes().get(i + key.len()), Some(b' ' | b'\n'))
        })
        .unwrap_or_else(|| panic!("no data for {var} in:\n{text}"));
    let body = &data[at + key.len()..];
    let mut toks = vec![];
    let mut cur = String::new();
    let mut strs: Option<Vec<u8>> = None;
    let mut chars = body.char_indices();
    let flush = |cur: &mut String, strs: &mut Option<Vec<u8>>, toks: &mut Vec<Tok>| {
        let t = cur.trim();
        if let Some(s) = strs.take() {
            toks.push(Tok::Str(s));
        } else if t == "_" {
            toks.push(Tok::Fill);
        } else if !t.is_empty() {
            toks.push(Tok::Num(t.to_string()));
        }
        cur.clear();
    };
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                // A quoted string (adjacent strings concatenate).
                let rest = &body[i + 1..];
                let mut end = 0;
                let rb = rest.as_bytes();
                while end < rb.len() && rb[end] != b'"' {
                    end += if rb[end] == b'\\' { 2 } else { 1 };
                }
                strs.get_or_insert_with(Vec::new)
                    .extend(unescape(&rest[..end]));
                for _ in 0..rest[..=end].chars().count() {
                    chars.next();
                }
            }
            ',' => flush(&mut cur, &mut strs, &mut toks),
            ';' => {
                flush(&mut cur, &mut strs, &mut toks);
                return toks;
            }
            c => cur.push(c),
        }
    }
    panic!("unterminated data for {var}");
}

/// The declaration of `var` in an ncdump header: type, shape, `_FillValue` as printed.
fn declaration(cdl: &str, var: &str) -> Declared {
    let mut dims: Vec<(String, u64)> = vec![];
    let mut section = "";
    let mut decl: Option<Declared> = None;
    for line in cdl.lines() {
        match line {
            "dimensions:" | "variables:" | "data:" => {
                section = line;
                continue;
            }
            _ => {}
        }
        if section == "dimensions:" && line.starts_with('\t') {
            let (name, rest) = line.trim().split_once(" = ").unwrap();
            let len = if rest.starts_with("UNLIMITED") {
                let n = rest.split('(').nth(1).unwrap();
                n.split(' ').next().unwrap().parse().unwrap()
            } else {
                rest.trim_end_matches(" ;").parse().unwrap()
            };
            dims.push((name.to_string(), len));
        } else if section == "variables:" && line.starts_with("\t\t") {
            let attr = format!("{var}:_FillValue = ");
            if let (Some(rest), Some(d)) = (line.trim().strip_prefix(&attr), decl.as_mut()) {
                d.fill = Some(rest.trim_end_matches(" ;").to_string());
            }
        } else if section == "variables:" && line.starts_with('\t') {
            let l = line.trim().trim_end_matches(" ;");
            let (ty, rest) = l.split_once(' ').unwrap();
            let (name, dim_list) = match rest.split_once('(') {
                Some((n, d)) => (n, d.trim_end_matches(')')),
                None => (rest, ""),
            };
            if name == var {
                let shape = dim_list
                    .split(", ")
                    .filter(|d| !d.is_empty())
                    .map(|d| dims.iter().find(|(n, _)| n == d).unwrap().1)
                    .collect();
                decl = Some(Declared {
                    ty: ty.to_string(),
                    shape,
                    fill: None,
                });
            } else if let Some(d) = decl.take() {
                // The attributes that follow belong to another variable.
                return d;
            }
        }
    }
    decl.unwrap_or_else(|| panic!("{var} is not declared"))
}

fn elem_size(ty: &str) -> usize {
    match ty {
        "byte" | "char" | "ubyte" => 1,
        "short" | "ushort" => 2,
        "int" | "uint" | "float" => 4,
        "int64" | "uint64" | "double" => 8,
        t => panic!("unknown type {t}"),
    }
}

/// netCDF's default fill value of a type, as ncdump would print it.
fn default_fill(ty: &str) -> &'static str {
    match ty {
        "byte" => "-127",
        "short" => "-32767",
        "int" => "-2147483647",
        "float" => "9.96921e+36",
        "double" => "9.969209968386869e+36",
        "ubyte" => "255",
        "ushort" => "65535",
        "uint" => "4294967295",
        "int64" => "-9223372036854775806",
        "uint64" => "18446744073709551614",
        t => panic!("no default fill for {t}"),
    }
}

/// A number as printed by ncdump (`1e+30`, `-999.f`, `99b`, `-1s`, `0LL`) or by nc3pack.
fn number(ty: &str, s: &str) -> Val {
    let s = s.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    match ty {
        "float" | "double" => Val::Real(
            s.parse()
                .unwrap_or_else(|e| panic!("{s:?} is not a number: {e}")),
        ),
        _ => Val::Int(
            s.parse()
                .unwrap_or_else(|e| panic!("{s:?} is not an integer: {e}")),
        ),
    }
}

fn to_vals(d: &Declared, toks: &[Tok], ctx: &str) -> Vec<Val> {
    toks.iter()
        .map(|t| match t {
            Tok::Num(s) => number(&d.ty, s),
            Tok::Fill => number(&d.ty, d.fill.as_deref().unwrap_or(default_fill(&d.ty))),
            Tok::Str(s) if d.ty == "char" => Val::Text(s.clone()),
            t => panic!("{ctx}: unexpected {t:?} for a {}", d.ty),
        })
        .collect()
}

/// Compares values: integers and chars exactly, floats to ncdump's 7 significant digits,
/// doubles to its 15.
fn assert_close(ty: &str, got: &[Val], want: &[Val], ctx: &str) {
    assert_eq!(got.len(), want.len(), "{ctx}: {got:?} vs {want:?}");
    let tol = if ty == "float" { 1e-6 } else { 1e-14 };
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = match (g, w) {
            (Val::Real(a), Val::Real(b)) => a == b || (a - b).abs() <= tol * a.abs().max(b.abs()),
            (a, b) => a == b,
        };
        assert!(ok, "{ctx}: value {i}: got {g:?}, want {w:?}");
    }
}

/// Strips trailing NULs, as ncdump and nc3pack print char rows.
fn trim_nul(b: &[u8]) -> Vec<u8> {
    let end = b.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
    b[..end].to_vec()
}

/// Decodes `nc3pack slice --format raw` output (native order) into values.
fn raw_vals(d: &Declared, raw: &[u8]) -> Vec<Val> {
    macro_rules! dec {
        ($t:ty, $mk:expr) => {
            raw.chunks_exact(std::mem::size_of::<$t>())
                .map(|c| $mk(<$t>::from_ne_bytes(c.try_into().unwrap())))
                .collect()
        };
    }
    match d.ty.as_str() {
        "char" => {
            let row = d.shape.last().copied().unwrap_or(1).max(1) as usize;
            raw.chunks(row).map(|r| Val::Text(trim_nul(r))).collect()
        }
        "byte" => dec!(i8, |x| Val::Int(i128::from(x))),
        "ubyte" => dec!(u8, |x| Val::Int(i128::from(x))),
        "short" => dec!(i16, |x| Val::Int(i128::from(x))),
        "ushort" => dec!(u16, |x| Val::Int(i128::from(x))),
        "int" => dec!(i32, |x| Val::Int(i128::from(x))),
        "uint" => dec!(u32, |x| Val::Int(i128::from(x))),
        "int64" => dec!(i64, |x| Val::Int(i128::from(x))),
        "uint64" => dec!(u64, |x| Val::Int(i128::from(x))),
        "float" => dec!(f32, |x| Val::Real(f64::from(x))),
        "double" => dec!(f64, Val::Real),
        t => panic!("unknown type {t}"),
    }
}

/// Values of `nc3pack slice --format json` output's data array.
fn json_vals(d: &Declared, data: &serde_json::Value, ctx: &str) -> Vec<Val> {
    data.as_array()
        .unwrap_or_else(|| panic!("{ctx}: data is not an array"))
        .iter()
        .map(|x| match d.ty.as_str() {
            "char" => Val::Text(x.as_str().unwrap().as_bytes().to_vec()),
            "float" | "double" => Val::Real(
                x.as_f64()
                    .unwrap_or_else(|| panic!("{ctx}: {x} is not a number")),
            ),
            _ => Val::Int(
                x.as_i64()
                    .map(i128::from)
                    .or_else(|| x.as_u64().map(i128::from))
                    .unwrap_or_else(|| panic!("{ctx}: {x} is not an integer")),
            ),
        })
        .collect()
}

fn slice(file: &Path, var: &str, extra: &[&str]) -> Vec<u8> {
    let out = Command::new(BIN)
        .arg("slice")
        .arg(file)
        .arg(var)
        .args(extra)
        .output()
        .expect("cannot run nc3pack");
    assert!(
        out.status.success(),
        "nc3pack slice {} {var} {extra:?}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Every variable in the data section of a golden dump, in order.
fn dumped_vars(cdl: &str) -> Vec<String> {
    let data = &cdl[cdl.find("\ndata:\n").expect("no data section")..];
    data.lines()
        .filter_map(|l| {
            l.strip_prefix(' ')?
                .split_once(" =")
                .map(|(n, _)| n.to_string())
        })
        .filter(|n| !n.contains(' ') && !n.is_empty())
        .collect()
}

#[test]
fn slice_cli_matches_ncdump_golden() {
    let dir = temp_dir();
    // (sample, variables in its golden's data section)
    let cases = [
        ("classic_records", 17),
        ("gridded_sst", 3),
        ("fill_values", 10),
        ("cdf5_types", 18),
        ("single_recvar_byte", 2),
        ("single_recvar_short", 2),
        ("single_recvar_char", 1),
        ("header_gap", 3),
        ("trailing_bytes", 2),
        ("offset64_mixed", 9),
        ("zero_records", 1),
        ("scalars", 6),
    ];
    for (name, nvars) in cases {
        let nc = sample(&format!("{name}.nc"));
        let z = dir.path().join(format!("{name}.nc3z"));
        pack_with(&nc, &z, Codec::Zstd, 64, 2);
        let cdl = std::fs::read_to_string(golden(&format!("slice_{name}.cdl"))).unwrap();
        let vars = dumped_vars(&cdl);
        assert_eq!(vars.len(), nvars, "{name}: {vars:?}");
        for var in &vars {
            let decl = declaration(&cdl, var);
            let want = to_vals(
                &decl,
                &data_tokens(&cdl, var),
                &format!("golden {name} {var}"),
            );
            let n: u64 = decl.shape.iter().product();
            let rows = if decl.ty == "char" {
                n / decl.shape.last().copied().unwrap_or(1).max(1)
            } else {
                n
            };
            assert_eq!(want.len() as u64, rows, "golden {name} {var}: {decl:?}");
            for file in [&nc, &z] {
                let ctx = format!("{} {var}", file.display());
                let text = String::from_utf8(slice(file, var, &[])).unwrap();
                let got = to_vals(&decl, &data_tokens(&text, var), &ctx);
                assert_close(&decl.ty, &got, &want, &format!("{ctx} (text)"));

                let json: serde_json::Value =
                    serde_json::from_slice(&slice(file, var, &["--format", "json"])).unwrap();
                assert_eq!(json["shape"], serde_json::json!(decl.shape), "{ctx} (json)");
                let got = json_vals(&decl, &json["data"], &ctx);
                assert_close(&decl.ty, &got, &want, &format!("{ctx} (json)"));

                let raw = slice(file, var, &["--format", "raw"]);
                assert_eq!(
                    raw.len() as u64,
                    n * elem_size(&decl.ty) as u64,
                    "{ctx} (raw length)"
                );
                assert_close(
                    &decl.ty,
                    &raw_vals(&decl, &raw),
                    &want,
                    &format!("{ctx} (raw)"),
                );
            }
        }
    }
}

/// ncdump leaves out record variables with no records; `slice` prints them empty.
#[test]
fn slice_cli_prints_zero_record_variables_empty() {
    let dir = temp_dir();
    let nc = sample("zero_records.nc");
    let z = dir.path().join("zero_records.nc3z");
    pack_with(&nc, &z, Codec::Zstd, 64, 1);
    for file in [&nc, &z] {
        for (var, shape) in [("time", vec![0]), ("s", vec![0, 3]), ("c", vec![0, 3])] {
            let text = String::from_utf8(slice(file, var, &[])).unwrap();
            assert_eq!(text, format!(" {var} = ;\n"), "{}", file.display());
            let json: serde_json::Value =
                serde_json::from_slice(&slice(file, var, &["--format", "json"])).unwrap();
            assert_eq!(json, serde_json::json!({"shape": shape, "data": []}));
            assert!(slice(file, var, &["--format", "raw"]).is_empty());
        }
    }
}

#[test]
fn slice_cli_sst_slices_match_netcdf3() {
    let dir = temp_dir();
    let nc = sample("gridded_sst.nc");
    let z = packed_sst(dir.path());
    let full = netcdf3::FileReader::open(&nc)
        .unwrap()
        .read_var_f32("sst")
        .unwrap();
    let shape = [24u64, 180, 360];
    let cases: [(&[u64], &[u64], &[u64]); 4] = [
        (&[3, 90, 180], &[1, 2, 4], &[1, 1, 1]),
        (&[0, 0, 0], &[3, 4, 5], &[7, 45, 71]),
        (&[23, 179, 359], &[1, 1, 1], &[1, 1, 1]),
        (&[5, 0, 100], &[2, 0, 3], &[1, 1, 1]),
    ];
    let csv = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
    for (start, count, stride) in cases {
        let slab = Hyperslab::new(&shape, start, count, stride).unwrap();
        let want = reference(&full, &shape, &slab);
        let args = [
            "--start".to_string(),
            csv(start),
            "--count".into(),
            csv(count),
            "--stride".into(),
            csv(stride),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        for file in [&nc, &z] {
            let ctx = format!("{} sst {args:?}", file.display());
            let text = String::from_utf8(slice(file, "sst", &args)).unwrap();
            let got: Vec<f32> = data_tokens(&text, "sst")
                .iter()
                .map(|t| match t {
                    Tok::Num(s) => s.parse().unwrap(),
                    t => panic!("{ctx}: {t:?}"),
                })
                .collect();
            assert_eq!(got, want, "{ctx} (text)");
            let rows = text.lines().count();
            assert_eq!(
                rows as u64,
                if slab.is_empty() {
                    1
                } else {
                    1 + count[0] * count[1]
                },
                "{ctx}: one line per row of the last dimension:\n{text}"
            );

            let json: serde_json::Value = serde_json::from_slice(&slice(
                file,
                "sst",
                &[&args[..], &["--format", "json"]].concat(),
            ))
            .unwrap();
            assert_eq!(json["shape"], serde_json::json!(count), "{ctx} (json)");
            let got: Vec<f32> = json["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap() as f32)
                .collect();
            assert_eq!(got, want, "{ctx} (json)");

            let raw = slice(file, "sst", &[&args[..], &["--format", "raw"]].concat());
            assert_eq!(raw.len() as u64, slab.len() * 4, "{ctx} (raw length)");
            let want_raw: Vec<u8> = want.iter().flat_map(|x| x.to_ne_bytes()).collect();
            assert_eq!(raw, want_raw, "{ctx} (raw)");
        }
    }
}

/// The metadata accessors agree between an archive and its original, and with the CDL.
#[test]
fn metadata_accessors_report_the_materialized_record_dimension() {
    use nc3pack::Dataset;
    let dir = temp_dir();
    let nc = crate::util::root().join("samples/classic_records.nc");
    let z = dir.path().join("c.nc3z");
    nc3pack::pack_file(&nc, &z, &PackOptions::default()).unwrap();
    let (a, f) = (nc3pack::open(&z).unwrap(), nc3pack::open(&nc).unwrap());
    assert_eq!(a.dimensions(), f.dimensions());
    assert_eq!(a.variables(), f.variables());
    assert_eq!(a.global_attributes(), f.global_attributes());
    // classic_records.cdl: time = UNLIMITED (7 records), three = 3; short s3(time, three).
    let dims = a.dimensions();
    assert_eq!(
        (dims[0].name.as_str(), dims[0].len, dims[0].unlimited),
        ("time", 7, true)
    );
    assert_eq!(
        (dims[1].name.as_str(), dims[1].len, dims[1].unlimited),
        ("three", 3, false)
    );
    let s3 = a.variables().into_iter().find(|v| v.name == "s3").unwrap();
    assert_eq!(s3.dims, ["time", "three"]);
    assert_eq!(s3.shape, [7, 3]);
    assert_eq!(s3.nc_type, nc3pack::nc3::NcType::Short);
    assert_eq!(s3.attrs[0].name, "long_name");
}

/// `Archive::block` serves one decoded block through the cache: the second call hits.
#[test]
fn single_block_reads_go_through_the_cache() {
    let dir = temp_dir();
    let nc = crate::util::root().join("samples/gridded_sst.nc");
    let z = dir.path().join("g.nc3z");
    let opts = PackOptions::default().with_block_size(64 << 10);
    nc3pack::pack_file(&nc, &z, &opts).unwrap();
    let a = Archive::open(&z).unwrap();
    let s = a.header().var_id("sst").unwrap();
    let first = a.block(s, 3).unwrap();
    assert_eq!(*first, a.read_block(s, 3).unwrap());
    let before = a.cache_stats();
    let again = a.block(s, 3).unwrap();
    assert_eq!(first, again);
    assert_eq!(a.cache_stats().hits, before.hits + 1);
}
