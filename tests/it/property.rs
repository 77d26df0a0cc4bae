//! Property test: random netCDF-3 datasets, written by the `netcdf3` crate, pack and unpack to
//! the same bytes with random options, and the archive decodes every variable to the values
//! that were written.
//!
//! Every dataset comes from one 64-bit seed, printed (with a CDL-like description) when a case
//! fails. To rerun one case: `NC3PACK_PROPERTY_SEED=0x... cargo test --test it property`; to
//! run more cases: `QUICKCHECK_TESTS=5000 cargo test --test it property`.

use crate::roundtrip::Typed;
use nc3pack::format::{Codec, Filter};
use nc3pack::nc3::{NcType, Variant};
use nc3pack::FilterMode;
use nc3pack::{pack_file, unpack_file, Archive, PackOptions};
use quickcheck::{Arbitrary, Gen, QuickCheck, TestResult};
use std::fmt;

/// Number of random datasets per run.
const CASES: u64 = 60;

/// splitmix64: small, seedable, and independent of quickcheck's generator.
#[derive(Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }
    fn upto(&mut self, hi: usize) -> usize {
        self.range(0, hi as i64) as usize
    }
    /// True with probability 1/n.
    fn one_in(&mut self, n: u64) -> bool {
        self.next().is_multiple_of(n)
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.upto(xs.len() - 1)]
    }
}

/// The classic types, the ones the `netcdf3` crate writes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Ty {
    Byte,
    Char,
    Short,
    Int,
    Float,
    Double,
}

const TYPES: [Ty; 6] = [
    Ty::Byte,
    Ty::Char,
    Ty::Short,
    Ty::Int,
    Ty::Float,
    Ty::Double,
];

impl Ty {
    fn nc(self) -> NcType {
        match self {
            Ty::Byte => NcType::Byte,
            Ty::Char => NcType::Char,
            Ty::Short => NcType::Short,
            Ty::Int => NcType::Int,
            Ty::Float => NcType::Float,
            Ty::Double => NcType::Double,
        }
    }
    fn dt(self) -> netcdf3::DataType {
        use netcdf3::DataType as D;
        match self {
            Ty::Byte => D::I8,
            Ty::Char => D::U8,
            Ty::Short => D::I16,
            Ty::Int => D::I32,
            Ty::Float => D::F32,
            Ty::Double => D::F64,
        }
    }
}

const SPECIAL_F32: [u32; 12] = [
    0x0000_0000, // 0
    0x8000_0000, // -0
    0x7f80_0000, // inf
    0xff80_0000, // -inf
    0x7fc0_0000, // quiet NaN
    0x7fc0_0001, // NaN with a payload
    0xff80_0001, // negative signaling NaN
    0x0000_0001, // smallest subnormal
    0x7f7f_ffff, // MAX
    0x0080_0000, // MIN_POSITIVE
    0x7cf0_0000, // 9.96921e36, netCDF's default float fill
    0x4049_0fdb, // pi
];

const SPECIAL_F64: [u64; 11] = [
    0,
    0x8000_0000_0000_0000,
    0x7ff0_0000_0000_0000,
    0xfff0_0000_0000_0000,
    0x7ff8_0000_0000_0000,
    0x7ff8_0000_dead_beef,
    0xfff0_0000_0000_0001,
    1,
    0x7fef_ffff_ffff_ffff,
    0x479e_0000_0200_0000, // 9.969209968386869e36, netCDF's default double fill
    0x4009_21fb_5444_2d18,
];

/// `n` values of type `ty` from `seed`: noise, slowly varying, constant or mostly constant,
/// with special floats (NaNs with payloads, infinities, -0, subnormals) mixed in.
fn gen_values(ty: Ty, n: usize, seed: u64) -> Typed {
    let mut r = Rng(seed);
    let style = r.upto(3);
    let base = r.next();
    let raw = |i: usize, r: &mut Rng| -> u64 {
        match style {
            0 => r.next(),
            1 => base.wrapping_add(i as u64 / 3),
            2 => base,
            _ if r.one_in(4) => r.next(),
            _ => base,
        }
    };
    match ty {
        Ty::Byte => Typed::Byte((0..n).map(|i| raw(i, &mut r) as i8).collect()),
        Ty::Char => Typed::Char((0..n).map(|i| raw(i, &mut r) as u8).collect()),
        Ty::Short => Typed::Short((0..n).map(|i| raw(i, &mut r) as i16).collect()),
        Ty::Int => Typed::Int((0..n).map(|i| raw(i, &mut r) as i32).collect()),
        Ty::Float => Typed::Float(
            (0..n)
                .map(|i| {
                    let bits = raw(i, &mut r) as u32;
                    f32::from_bits(if style != 2 && r.one_in(6) {
                        r.pick(&SPECIAL_F32)
                    } else if style == 1 {
                        // A smooth field: nearby values of similar magnitude.
                        (bits & 0x00ff_ffff) | 0x4000_0000
                    } else {
                        bits
                    })
                })
                .collect(),
        ),
        Ty::Double => Typed::Double(
            (0..n)
                .map(|i| {
                    let bits = raw(i, &mut r);
                    f64::from_bits(if style != 2 && r.one_in(6) {
                        r.pick(&SPECIAL_F64)
                    } else if style == 1 {
                        (bits & 0x000f_ffff_ffff_ffff) | 0x4000_0000_0000_0000
                    } else {
                        bits
                    })
                })
                .collect(),
        ),
    }
}

#[derive(Clone)]
struct Att {
    name: String,
    values: Typed,
}

#[derive(Clone)]
struct Var {
    name: String,
    ty: Ty,
    record: bool,
    /// Indices into `Spec::dims` of the fixed dimensions (after the record dimension, if any).
    dims: Vec<usize>,
    attrs: Vec<Att>,
    /// Seed of the values.
    seed: u64,
}

#[derive(Clone)]
struct Dim {
    name: String,
    /// Length, or for the unlimited dimension the number of records.
    len: usize,
    unlimited: bool,
}

/// How to pack and unpack.
#[derive(Clone, Debug)]
struct Pack {
    codec: Codec,
    level: i32,
    block_size: u32,
    filter: FilterMode,
    threads: usize,
    unpack_threads: usize,
}

/// One random dataset and the options to pack it with.
#[derive(Clone)]
struct Spec {
    seed: u64,
    shrunk: bool,
    cdf2: bool,
    header_min_size: usize,
    dims: Vec<Dim>,
    gatts: Vec<Att>,
    vars: Vec<Var>,
    pack: Pack,
}

/// A name: `prefix` and a number, plus 0-5 more characters so names (and the header's
/// padding) vary in length.
fn gen_name(r: &mut Rng, prefix: &str, i: usize) -> String {
    let mut s = format!("{prefix}{i}");
    for _ in 0..r.upto(5) {
        s.push(r.pick(&['_', 'x', 'Y', 'z', '0', '.', '-', '@']));
    }
    s
}

/// Up to `max` attributes. Without `nan`, NaNs become infinities: the `netcdf3` crate finds a
/// variable's layout by comparing variables with `==`, which a NaN attribute makes false, so it
/// cannot write a variable that has a NaN attribute (its `write_var` fails with `Unexpected`).
fn gen_attrs(r: &mut Rng, max: usize, nan: bool) -> Vec<Att> {
    (0..r.upto(max))
        .map(|i| {
            let ty = r.pick(&TYPES);
            let n = r.upto(6);
            let seed = r.next();
            let values = match gen_values(ty, n, seed) {
                Typed::Float(v) if !nan => Typed::Float(
                    v.into_iter()
                        .map(|x| if x.is_nan() { f32::INFINITY } else { x })
                        .collect(),
                ),
                Typed::Double(v) if !nan => Typed::Double(
                    v.into_iter()
                        .map(|x| if x.is_nan() { f64::NEG_INFINITY } else { x })
                        .collect(),
                ),
                v => v,
            };
            Att {
                name: gen_name(r, "a", i),
                values,
            }
        })
        .collect()
}

impl Spec {
    fn from_seed(seed: u64) -> Spec {
        let mut r = Rng(seed);
        let nfixed = r.upto(4);
        let mut dims: Vec<Dim> = (0..nfixed)
            .map(|i| Dim {
                name: gen_name(&mut r, "d", i),
                len: r.range(1, 6) as usize,
                unlimited: false,
            })
            .collect();
        if r.one_in(4) {
            // No record dimension.
        } else {
            let at = r.upto(dims.len());
            let numrecs = r.upto(5);
            dims.insert(
                at,
                Dim {
                    name: "rec".into(),
                    len: numrecs,
                    unlimited: true,
                },
            );
        }
        let has_rec = dims.iter().any(|d| d.unlimited);
        let fixed: Vec<usize> = (0..dims.len()).filter(|&i| !dims[i].unlimited).collect();
        let nvars = r.range(1, 6) as usize;
        let vars = (0..nvars)
            .map(|i| {
                let mut pool = fixed.clone();
                let mut vd = Vec::new();
                for _ in 0..r.upto(pool.len().min(3)) {
                    vd.push(pool.remove(r.upto(pool.len() - 1)));
                }
                Var {
                    name: gen_name(&mut r, "v", i),
                    ty: r.pick(&TYPES),
                    record: has_rec && !r.one_in(3),
                    dims: vd,
                    attrs: gen_attrs(&mut r, 3, false),
                    seed: r.next(),
                }
            })
            .collect();
        let gatts = gen_attrs(&mut r, 4, true);
        let codec = r.pick(&[Codec::Zstd, Codec::Deflate, Codec::None]);
        let level = match codec {
            Codec::Zstd => r.range(-7, 9) as i32,
            Codec::Deflate => r.range(0, 9) as i32,
            // The codec's default level (none's only level).
            _ => PackOptions::fast().with_codec(codec).level(),
        };
        let block_size = match r.upto(2) {
            0 => r.range(8, 64),
            1 => r.range(65, 512),
            _ => r.range(513, 4096),
        } as u32;
        Spec {
            seed,
            shrunk: false,
            cdf2: r.one_in(2),
            header_min_size: if r.one_in(3) { r.upto(600) } else { 0 },
            dims,
            gatts,
            vars,
            pack: Pack {
                codec,
                level,
                block_size,
                filter: if r.one_in(2) {
                    FilterMode::Auto
                } else {
                    FilterMode::Fixed(r.pick(&[
                        Filter::None,
                        Filter::Shuffle,
                        Filter::ByteDelta,
                        Filter::Delta,
                        Filter::ZigZagDelta,
                    ]))
                },
                threads: r.range(1, 4) as usize,
                unpack_threads: r.range(1, 4) as usize,
            },
        }
    }

    fn numrecs(&self) -> Option<usize> {
        self.dims.iter().find(|d| d.unlimited).map(|d| d.len)
    }

    /// The materialized shape of variable `v`.
    fn shape(&self, v: &Var) -> Vec<u64> {
        let mut s: Vec<u64> = Vec::new();
        if v.record {
            s.push(self.numrecs().unwrap() as u64);
        }
        s.extend(v.dims.iter().map(|&d| self.dims[d].len as u64));
        s
    }

    /// Bytes of one record of record variable `v`.
    fn slab(&self, v: &Var) -> usize {
        self.shape(v)[1..].iter().product::<u64>() as usize * v.ty.nc().size()
    }

    fn values(&self, v: &Var) -> Typed {
        let n = self.shape(v).iter().product::<u64>() as usize;
        gen_values(v.ty, n, v.seed)
    }
}

impl fmt::Debug for Spec {
    /// A CDL-like description, so a failing case can be read (and rerun from its seed).
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let show = |t: &Typed| {
            let s = format!("{t:?}");
            if s.len() > 160 {
                format!("{}... ({} values)", &s[..160], t.len())
            } else {
                s
            }
        };
        writeln!(f)?;
        writeln!(
            f,
            "seed {:#018x}{} (rerun with NC3PACK_PROPERTY_SEED={:#x})",
            self.seed,
            if self.shrunk {
                ", then shrunk: the seed alone gives the case before shrinking"
            } else {
                ""
            },
            self.seed
        )?;
        writeln!(
            f,
            "netcdf {} {{  // header_min_size {}",
            if self.cdf2 {
                "64-bit offset"
            } else {
                "classic"
            },
            self.header_min_size
        )?;
        writeln!(f, "dimensions:")?;
        for d in &self.dims {
            if d.unlimited {
                writeln!(f, "  {} = UNLIMITED ; // ({} currently)", d.name, d.len)?;
            } else {
                writeln!(f, "  {} = {} ;", d.name, d.len)?;
            }
        }
        writeln!(f, "variables:")?;
        for v in &self.vars {
            let mut names: Vec<&str> = Vec::new();
            if v.record {
                names.push("rec");
            }
            names.extend(v.dims.iter().map(|&d| self.dims[d].name.as_str()));
            writeln!(
                f,
                "  {:?} {}({}) ; // values seed {:#x}: {}",
                v.ty,
                v.name,
                names.join(", "),
                v.seed,
                show(&self.values(v))
            )?;
            for a in &v.attrs {
                writeln!(f, "    {}:{} = {} ;", v.name, a.name, show(&a.values))?;
            }
        }
        for a in &self.gatts {
            writeln!(f, "  :{} = {} ;", a.name, show(&a.values))?;
        }
        writeln!(f, "}}")?;
        write!(f, "pack with {:?}", self.pack)
    }
}

impl Arbitrary for Spec {
    fn arbitrary(g: &mut Gen) -> Spec {
        Spec::from_seed(u64::arbitrary(g))
    }

    /// Smaller cases that keep everything else: one variable fewer, no attributes, fewer
    /// records, no header padding, simpler pack options.
    fn shrink(&self) -> Box<dyn Iterator<Item = Spec>> {
        let mut out = Vec::new();
        let mut push = |f: &dyn Fn(&mut Spec)| {
            let mut s = self.clone();
            s.shrunk = true;
            f(&mut s);
            out.push(s);
        };
        if self.vars.len() > 1 {
            for i in 0..self.vars.len() {
                push(&|s| {
                    s.vars.remove(i);
                });
            }
        }
        if !self.gatts.is_empty() || self.vars.iter().any(|v| !v.attrs.is_empty()) {
            push(&|s| {
                s.gatts.clear();
                s.vars.iter_mut().for_each(|v| v.attrs.clear());
            });
        }
        if let Some(n) = self.numrecs().filter(|&n| n > 0) {
            push(&|s| {
                s.dims
                    .iter_mut()
                    .filter(|d| d.unlimited)
                    .for_each(|d| d.len = n - 1)
            });
        }
        if self.header_min_size > 0 {
            push(&|s| s.header_min_size = 0);
        }
        if self.pack.threads > 1 || self.pack.unpack_threads > 1 {
            push(&|s| {
                s.pack.threads = 1;
                s.pack.unpack_threads = 1;
            });
        }
        Box::new(out.into_iter())
    }
}

/// Adds `att` with the right typed call.
fn add_attr(
    ds: &mut netcdf3::DataSet,
    var: Option<&str>,
    att: &Att,
) -> Result<(), netcdf3::InvalidDataSet> {
    let n = att.name.as_str();
    match (var, att.values.clone()) {
        (None, Typed::Byte(v)) => ds.add_global_attr_i8(n, v),
        (None, Typed::Char(v)) => ds.add_global_attr_u8(n, v),
        (None, Typed::Short(v)) => ds.add_global_attr_i16(n, v),
        (None, Typed::Int(v)) => ds.add_global_attr_i32(n, v),
        (None, Typed::Float(v)) => ds.add_global_attr_f32(n, v),
        (None, Typed::Double(v)) => ds.add_global_attr_f64(n, v),
        (Some(w), Typed::Byte(v)) => ds.add_var_attr_i8(w, n, v),
        (Some(w), Typed::Char(v)) => ds.add_var_attr_u8(w, n, v),
        (Some(w), Typed::Short(v)) => ds.add_var_attr_i16(w, n, v),
        (Some(w), Typed::Int(v)) => ds.add_var_attr_i32(w, n, v),
        (Some(w), Typed::Float(v)) => ds.add_var_attr_f32(w, n, v),
        (Some(w), Typed::Double(v)) => ds.add_var_attr_f64(w, n, v),
        (_, other) => panic!("not a classic type: {other:?}"),
    }
}

/// Writes the dataset with the `netcdf3` crate and returns the file's bytes. Checks first that
/// the `netcdf3` crate reads back what it wrote (a check of the test's generator, not of
/// nc3pack).
fn write_dataset(spec: &Spec, path: &std::path::Path) -> Result<Vec<u8>, String> {
    let e = |what: &str, err: &dyn fmt::Debug| format!("netcdf3 crate: {what}: {err:?}");
    let mut ds = netcdf3::DataSet::new();
    for d in &spec.dims {
        if d.unlimited {
            ds.set_unlimited_dim(&d.name, d.len)
        } else {
            ds.add_fixed_dim(&d.name, d.len)
        }
        .map_err(|x| e("add dimension", &x))?;
    }
    for a in &spec.gatts {
        add_attr(&mut ds, None, a).map_err(|x| e("add global attribute", &x))?;
    }
    for v in &spec.vars {
        let mut names: Vec<&str> = Vec::new();
        if v.record {
            names.push("rec");
        }
        names.extend(v.dims.iter().map(|&d| spec.dims[d].name.as_str()));
        ds.add_var(&v.name, &names, v.ty.dt())
            .map_err(|x| e("add variable", &x))?;
        for a in &v.attrs {
            add_attr(&mut ds, Some(&v.name), a).map_err(|x| e("add attribute", &x))?;
        }
    }
    let version = if spec.cdf2 {
        netcdf3::Version::Offset64Bit
    } else {
        netcdf3::Version::Classic
    };
    {
        let mut w = netcdf3::FileWriter::open(path).map_err(|x| e("open", &x))?;
        w.set_def(&ds, version, spec.header_min_size)
            .map_err(|x| e("set_def", &x))?;
        for v in &spec.vars {
            let n = v.name.as_str();
            match spec.values(v) {
                Typed::Byte(x) => w.write_var_i8(n, &x),
                Typed::Char(x) => w.write_var_u8(n, &x),
                Typed::Short(x) => w.write_var_i16(n, &x),
                Typed::Int(x) => w.write_var_i32(n, &x),
                Typed::Float(x) => w.write_var_f32(n, &x),
                Typed::Double(x) => w.write_var_f64(n, &x),
                other => panic!("not a classic type: {other:?}"),
            }
            .map_err(|x| e("write variable", &x))?;
        }
        w.close().map_err(|x| e("close", &x))?;
    }
    match netcdf3::FileReader::open(path) {
        Ok(mut r) => {
            for v in &spec.vars {
                let back = r.read_var(&v.name).map_err(|x| e("read back", &x))?;
                if let Some(d) = Typed::from_netcdf3(back).difference(&spec.values(v)) {
                    return Err(format!(
                        "netcdf3 crate reads back variable {:?} differently: {d}",
                        v.name
                    ));
                }
            }
        }
        // The netcdf3 crate's writer pads byte and short attribute values with fill bytes
        // (0x81, 0x8001) where the spec says zeros, and its reader then refuses the header.
        // netCDF-C (and nc3pack) skip padding without looking at it, so the file is still a
        // good test input; only this sanity check is skipped.
        Err(x) if format!("{x:?}").contains("ZeroPadding") => {}
        Err(x) => return Err(e("reopen", &x)),
    }
    let mut bytes = std::fs::read(path).map_err(|x| x.to_string())?;

    // The netcdf3 crate pads every record slab to 4 bytes. The spec (and netCDF-C) do not pad
    // when there is exactly one record variable: records are then back to back. Rewrite such a
    // file the way netCDF-C lays it out (the header, including vsize, stays the same), so that
    // the values written are the values the file holds.
    let recs: Vec<&Var> = spec.vars.iter().filter(|v| v.record).collect();
    if let ([v], Some(numrecs)) = (recs.as_slice(), spec.numrecs()) {
        let slab = spec.slab(v);
        let padded = slab.div_ceil(4) * 4;
        if padded != slab && numrecs > 0 {
            // netcdf3 puts the record section last and ends the file with the last record.
            let begin = bytes
                .len()
                .checked_sub(numrecs * padded)
                .ok_or("file shorter than its records")?;
            for k in 1..numrecs {
                let from = begin + k * padded;
                bytes.copy_within(from..from + slab, begin + k * slab);
            }
            bytes.truncate(begin + numrecs * slab);
            std::fs::write(path, &bytes).map_err(|x| x.to_string())?;
        }
    }
    Ok(bytes)
}

/// The property: byte-exact round trip, and the archive decodes the written values.
fn check(spec: &Spec) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let nc = dir.path().join("in.nc");
    let z = dir.path().join("a.nc3z");
    let back = dir.path().join("back.nc");
    let orig = write_dataset(spec, &nc)?;

    let p = &spec.pack;
    let opts = PackOptions::default()
        .with_codec(p.codec)
        .with_level(p.level)
        .with_block_size(p.block_size)
        .with_threads(p.threads)
        .with_filter(p.filter)
        .with_thorough(p.filter == FilterMode::Auto && p.block_size % 2 == 1)
        .with_fast_blocks(!p.block_size.is_multiple_of(3));
    let summary = pack_file(&nc, &z, &opts).map_err(|e| format!("pack: {e}"))?;
    if summary.input_len != orig.len() as u64 {
        return Err(format!(
            "pack summary says {} input bytes, the file has {}",
            summary.input_len,
            orig.len()
        ));
    }
    let n = unpack_file(
        &z,
        &back,
        &nc3pack::UnpackOptions::default().with_threads(p.unpack_threads),
    )
    .map_err(|e| format!("unpack: {e}"))?;
    let got = std::fs::read(&back).map_err(|e| e.to_string())?;
    if got != orig || n != orig.len() as u64 {
        let at = got.iter().zip(&orig).position(|(a, b)| a != b);
        return Err(format!(
            "unpacked bytes differ: {} bytes (reported {n}) vs {} original, first difference at {at:?}",
            got.len(),
            orig.len()
        ));
    }

    check_stream_input(spec, &opts, &orig, &z, dir.path())?;

    let a = Archive::open(&z).map_err(|e| format!("open archive: {e}"))?;
    let h = a.header();
    let hl = a.layout().header_len as usize;
    if hl > orig.len() || a.header_bytes() != &orig[..hl] {
        return Err(format!("header bytes ({hl}) are not the original's prefix"));
    }
    let want_variant = if spec.cdf2 {
        Variant::Cdf2
    } else {
        Variant::Cdf1
    };
    if h.variant() != want_variant {
        return Err(format!("variant {:?}, wrote {want_variant:?}", h.variant()));
    }
    if let Some(n) = spec.numrecs() {
        if a.layout().numrecs != n as u64 {
            return Err(format!(
                "archive has {} records, wrote {n}",
                a.layout().numrecs
            ));
        }
    }
    let attrs_match = |what: &str, got: &[nc3pack::nc3::Attribute], want: &[Att]| {
        let names: Vec<&str> = got.iter().map(|g| g.name.as_str()).collect();
        let want_names: Vec<&str> = want.iter().map(|w| w.name.as_str()).collect();
        if names != want_names {
            return Err(format!(
                "{what}: attribute names {names:?}, wrote {want_names:?}"
            ));
        }
        for (g, w) in got.iter().zip(want) {
            if let Some(d) = Typed::from_values(&g.values).difference(&w.values) {
                return Err(format!("{what}: attribute {:?}: {d}", w.name));
            }
        }
        Ok(())
    };
    let gatts: Vec<_> = h.global_attrs().map(|a| a.to_owned()).collect();
    attrs_match("global", &gatts, &spec.gatts)?;
    if h.var_count() != spec.vars.len() {
        return Err(format!(
            "archive has {} variables, wrote {}",
            h.var_count(),
            spec.vars.len()
        ));
    }
    for (i, v) in spec.vars.iter().enumerate() {
        let hv = h.var(i);
        let what = format!("variable {i} {:?}", v.name);
        if hv.name() != v.name || hv.nc_type() != v.ty.nc() {
            return Err(format!(
                "{what}: archive says {:?} of type {}",
                hv.name(),
                hv.nc_type().name()
            ));
        }
        let attrs: Vec<_> = hv.attrs().map(|a| a.to_owned()).collect();
        attrs_match(&what, &attrs, &v.attrs)?;
        let shape = &a.layout().vars[i].shape;
        if shape != &spec.shape(v) {
            return Err(format!(
                "{what}: shape {shape:?}, wrote {:?}",
                spec.shape(v)
            ));
        }
        let bytes = a
            .read_var_bytes(i)
            .map_err(|e| format!("{what}: read_var_bytes: {e}"))?;
        let values = Typed::from_be(hv.nc_type(), &bytes).map_err(|e| format!("{what}: {e}"))?;
        if let Some(d) = values.difference(&spec.values(v)) {
            return Err(format!("{what}: archive vs written: {d}"));
        }
    }
    Ok(())
}

/// A reader that hands out at most a few bytes at a time, as a pipe may.
struct Trickle<'a> {
    data: &'a [u8],
    rng: Rng,
}

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let most = if self.rng.one_in(2) { 7 } else { 70_000 };
        let n = buf.len().min(self.data.len()).min(1 + self.rng.upto(most));
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// Packing from a stream (as `nc3pack - OUT`), in pieces of random size, gives an archive that
/// unpacks to the same bytes, and with one thread the very archive packing the file gives. The
/// same holds for the file cut at a random point after its header: records the cut leaves
/// incomplete become residual bytes in both.
fn check_stream_input(
    spec: &Spec,
    opts: &PackOptions,
    orig: &[u8],
    file_archive: &std::path::Path,
    dir: &std::path::Path,
) -> Result<(), String> {
    let mut rng = Rng(spec.seed ^ 0x5eed_5eed);
    let header_len = nc3pack::nc3::Header::parse(orig, orig.len() as u64)
        .map_err(|e| format!("header: {e}"))?
        .len() as usize;
    let cut = header_len + rng.upto(orig.len() - header_len);
    let cases: [(&[u8], Option<&std::path::Path>); 2] =
        [(orig, Some(file_archive)), (&orig[..cut], None)];
    for (k, (input, packed_from_file)) in cases.into_iter().enumerate() {
        let what = if k == 0 { "stream" } else { "cut stream" };
        let z = dir.join(format!("stream{k}.nc3z"));
        let from_file = match packed_from_file {
            Some(p) => Ok(p.to_path_buf()),
            None => {
                let nc = dir.join("cut.nc");
                std::fs::write(&nc, input).map_err(|e| e.to_string())?;
                let p = dir.join("cut.nc3z");
                pack_file(&nc, &p, opts).map(|_| p)
            }
        };
        let reader = Trickle {
            data: input,
            rng: rng.clone(),
        };
        let streamed = nc3pack::pack_reader(reader, "-".as_ref(), &z, opts);
        let (s, from_file) = match (streamed, from_file) {
            (Ok(s), Ok(f)) => (s, f),
            // A cut inside a fixed variable: both refuse the file.
            (Err(nc3pack::Error::Layout { .. }), Err(nc3pack::Error::Layout { .. })) => continue,
            (a, b) => {
                return Err(format!(
                    "{what} (cut at {cut}): pack_reader gave {:?}, pack_file {:?}",
                    a.map(|_| ()),
                    b.map(|_| ())
                ))
            }
        };
        if s.input_len != input.len() as u64 {
            return Err(format!(
                "{what}: {} input bytes, not {}",
                s.input_len,
                input.len()
            ));
        }
        let (a, b) = (std::fs::read(&z), std::fs::read(&from_file));
        if opts.threads() == 1 && a.map_err(|e| e.to_string())? != b.map_err(|e| e.to_string())? {
            return Err(format!(
                "{what}: archive differs from the file's (cut at {cut})"
            ));
        }
        let back = dir.join(format!("stream{k}.nc"));
        unpack_file(
            &z,
            &back,
            &nc3pack::UnpackOptions::default().with_threads(2),
        )
        .map_err(|e| format!("{what}: unpack (cut at {cut}): {e}"))?;
        if std::fs::read(&back).map_err(|e| e.to_string())? != input {
            return Err(format!("{what}: unpacked bytes differ (cut at {cut})"));
        }
    }
    Ok(())
}

fn property(spec: Spec) -> TestResult {
    match check(&spec) {
        Ok(()) => TestResult::passed(),
        Err(e) => TestResult::error(e),
    }
}

#[test]
fn random_datasets_roundtrip_and_decode_to_the_written_values() {
    if let Ok(s) = std::env::var("NC3PACK_PROPERTY_SEED") {
        let seed = match s.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => s.parse(),
        }
        .expect("NC3PACK_PROPERTY_SEED: a decimal or 0x-hex u64");
        let spec = Spec::from_seed(seed);
        if let Err(e) = check(&spec) {
            panic!("{spec:?}\n{e}");
        }
        return;
    }
    let cases = std::env::var("QUICKCHECK_TESTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(CASES);
    QuickCheck::new()
        .tests(cases)
        .max_tests(cases)
        .quickcheck(property as fn(Spec) -> TestResult);
}

/// The generator covers what it should: over many seeds, every type, records and no records,
/// a single record variable with unpadded records, both variants, and every codec appear.
#[test]
fn generator_covers_the_interesting_cases() {
    let specs: Vec<Spec> = (0..400u64)
        .map(|s| Spec::from_seed(s.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
        .collect();
    let any = |f: &dyn Fn(&Spec) -> bool| specs.iter().any(f);
    for t in TYPES {
        assert!(any(&|s| s.vars.iter().any(|v| v.ty == t)), "type {t:?}");
        assert!(
            any(&|s| s
                .gatts
                .iter()
                .any(|a| format!("{:?}", a.values).starts_with(&format!("{t:?}")))),
            "attribute type {t:?}"
        );
    }
    assert!(any(&|s| s.numrecs().is_none()));
    assert!(any(
        &|s| s.numrecs() == Some(0) && s.vars.iter().any(|v| v.record)
    ));
    assert!(any(&|s| s.numrecs() == Some(5)));
    assert!(any(&|s| {
        let recs: Vec<&Var> = s.vars.iter().filter(|v| v.record).collect();
        recs.len() == 1 && s.numrecs() > Some(1) && !s.slab(recs[0]).is_multiple_of(4)
    }));
    assert!(any(&|s| s.cdf2) && any(&|s| !s.cdf2));
    assert!(any(&|s| s.header_min_size > 0));
    assert!(any(&|s| s
        .vars
        .iter()
        .any(|v| v.dims.is_empty() && !v.record)));
    assert!(any(&|s| s.vars.iter().any(|v| v.dims.len() == 3)));
    for c in [Codec::Zstd, Codec::Deflate, Codec::None] {
        assert!(any(&|s| s.pack.codec == c), "codec {c:?}");
    }
    assert!(any(&|s| s.pack.block_size == 8) || any(&|s| s.pack.block_size < 12));
    assert!(any(&|s| s.gatts.iter().any(|a| a.values.len() == 0)));
}
