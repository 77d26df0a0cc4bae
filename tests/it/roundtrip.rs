//! Every sample in `samples/` packs and unpacks to the same bytes, with every codec and a range
//! of block sizes; the data the archive decodes matches an independent reader (the `netcdf3`
//! crate for CDF-1/CDF-2) or hand-written values taken from the samples' `.cdl` sources (CDF-5,
//! and the single-record-variable files the `netcdf3` crate lays out differently from the spec);
//! and the archive keeps the original header verbatim.

use crate::util::{samples_dir, temp_dir};
use nc3pack::format::Codec;
use nc3pack::nc3::{NcType, Values};
use nc3pack::{pack_file, unpack_file, Archive, PackOptions};
use std::path::{Path, PathBuf};

/// Typed values of one variable, as decoded by the test itself (not by the library). Equality
/// ([`Typed::difference`]) compares bit patterns, so NaNs compare equal to themselves and -0.0
/// differs from 0.0.
#[derive(Debug, Clone)]
pub(crate) enum Typed {
    Byte(Vec<i8>),
    Char(Vec<u8>),
    Short(Vec<i16>),
    Int(Vec<i32>),
    Float(Vec<f32>),
    Double(Vec<f64>),
    UByte(Vec<u8>),
    UShort(Vec<u16>),
    UInt(Vec<u32>),
    Int64(Vec<i64>),
    UInt64(Vec<u64>),
}

macro_rules! be {
    ($b:expr, $t:ty) => {
        $b.chunks_exact(std::mem::size_of::<$t>())
            .map(|c| <$t>::from_be_bytes(c.try_into().unwrap()))
            .collect()
    };
}

impl Typed {
    /// Decodes big-endian bytes of type `t`; the length must be a whole number of elements.
    pub(crate) fn from_be(t: NcType, b: &[u8]) -> Result<Typed, String> {
        if !b.len().is_multiple_of(t.size()) {
            return Err(format!(
                "{} bytes are not a whole number of {} elements",
                b.len(),
                t.name()
            ));
        }
        Ok(match t {
            NcType::Byte => Typed::Byte(b.iter().map(|&x| x as i8).collect()),
            NcType::Char => Typed::Char(b.to_vec()),
            NcType::Short => Typed::Short(be!(b, i16)),
            NcType::Int => Typed::Int(be!(b, i32)),
            NcType::Float => Typed::Float(be!(b, f32)),
            NcType::Double => Typed::Double(be!(b, f64)),
            NcType::UByte => Typed::UByte(b.to_vec()),
            NcType::UShort => Typed::UShort(be!(b, u16)),
            NcType::UInt => Typed::UInt(be!(b, u32)),
            NcType::Int64 => Typed::Int64(be!(b, i64)),
            NcType::UInt64 => Typed::UInt64(be!(b, u64)),
        })
    }

    /// The values the `netcdf3` crate read.
    pub(crate) fn from_netcdf3(d: netcdf3::DataVector) -> Typed {
        use netcdf3::DataVector as D;
        match d {
            D::I8(v) => Typed::Byte(v),
            D::U8(v) => Typed::Char(v),
            D::I16(v) => Typed::Short(v),
            D::I32(v) => Typed::Int(v),
            D::F32(v) => Typed::Float(v),
            D::F64(v) => Typed::Double(v),
        }
    }

    /// Attribute values as the library parsed them from the header.
    pub(crate) fn from_values(v: &Values) -> Typed {
        match v.clone() {
            Values::Byte(v) => Typed::Byte(v),
            Values::Char(v) => Typed::Char(v),
            Values::Short(v) => Typed::Short(v),
            Values::Int(v) => Typed::Int(v),
            Values::Float(v) => Typed::Float(v),
            Values::Double(v) => Typed::Double(v),
            Values::UByte(v) => Typed::UByte(v),
            Values::UShort(v) => Typed::UShort(v),
            Values::UInt(v) => Typed::UInt(v),
            Values::Int64(v) => Typed::Int64(v),
            Values::UInt64(v) => Typed::UInt64(v),
        }
    }

    /// Number of values.
    pub(crate) fn len(&self) -> usize {
        self.bits().1.len()
    }

    /// Type name and the values' bit patterns.
    fn bits(&self) -> (&'static str, Vec<u64>) {
        match self {
            Typed::Byte(v) => ("byte", v.iter().map(|&x| x as u8 as u64).collect()),
            Typed::Char(v) => ("char", v.iter().map(|&x| u64::from(x)).collect()),
            Typed::Short(v) => ("short", v.iter().map(|&x| x as u16 as u64).collect()),
            Typed::Int(v) => ("int", v.iter().map(|&x| x as u32 as u64).collect()),
            Typed::Float(v) => ("float", v.iter().map(|x| u64::from(x.to_bits())).collect()),
            Typed::Double(v) => ("double", v.iter().map(|x| x.to_bits()).collect()),
            Typed::UByte(v) => ("ubyte", v.iter().map(|&x| u64::from(x)).collect()),
            Typed::UShort(v) => ("ushort", v.iter().map(|&x| u64::from(x)).collect()),
            Typed::UInt(v) => ("uint", v.iter().map(|&x| u64::from(x)).collect()),
            Typed::Int64(v) => ("int64", v.iter().map(|&x| x as u64).collect()),
            Typed::UInt64(v) => ("uint64", v.clone()),
        }
    }

    /// Value `i`, for messages.
    fn show(&self, i: usize) -> String {
        match self {
            Typed::Byte(v) => format!("{}", v[i]),
            Typed::Char(v) | Typed::UByte(v) => format!("{}", v[i]),
            Typed::Short(v) => format!("{}", v[i]),
            Typed::Int(v) => format!("{}", v[i]),
            Typed::Float(v) => format!("{:e} (bits {:#010x})", v[i], v[i].to_bits()),
            Typed::Double(v) => format!("{:e} (bits {:#018x})", v[i], v[i].to_bits()),
            Typed::UShort(v) => format!("{}", v[i]),
            Typed::UInt(v) => format!("{}", v[i]),
            Typed::Int64(v) => format!("{}", v[i]),
            Typed::UInt64(v) => format!("{}", v[i]),
        }
    }

    /// `None` if `self` and `other` have the same type and the same values bit for bit;
    /// otherwise what differs first.
    pub(crate) fn difference(&self, other: &Typed) -> Option<String> {
        let ((ta, a), (tb, b)) = (self.bits(), other.bits());
        if ta != tb {
            return Some(format!("type {ta} vs {tb}"));
        }
        if a.len() != b.len() {
            return Some(format!("{} values vs {}", a.len(), b.len()));
        }
        let i = a.iter().zip(&b).position(|(x, y)| x != y)?;
        Some(format!(
            "value [{i}] (of {}) is {} vs {}",
            a.len(),
            self.show(i),
            other.show(i)
        ))
    }
}

/// Every `samples/*.nc` (not `samples/bad/`), sorted.
fn samples() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(samples_dir())
        .expect("read samples/")
        .map(|e| e.expect("samples/ entry").path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "nc"))
        .collect();
    v.sort();
    let names: Vec<String> = v.iter().map(|p| name(p)).collect();
    for must in ["classic_records.nc", "cdf5_types.nc", "gridded_sst.nc"] {
        assert!(
            names.iter().any(|n| n == must),
            "samples/{must} missing; found {names:?}"
        );
    }
    v
}

fn name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

/// Files above this size get fewer, larger blocks.
const LARGE: u64 = 256 * 1024;

fn block_sizes(file_len: u64) -> &'static [u32] {
    if file_len > LARGE {
        &[4096, 1000, 65536, 1 << 20]
    } else {
        &[8, 64, 1000, 65536, 1 << 20]
    }
}

fn opts(codec: Codec, block_size: u32, shuffle: bool, threads: usize) -> PackOptions {
    PackOptions::default()
        .with_codec(codec)
        .with_block_size(block_size)
        .with_threads(threads)
        .with_filter(crate::filters(shuffle))
        .with_thorough(shuffle && threads == 2)
        .with_fast_blocks(threads == 1)
}

/// Packs `input` into `dir/NAME`, returning the archive's path.
fn pack(input: &Path, dir: &Path, o: &PackOptions) -> PathBuf {
    let z = dir.join(format!(
        "{}.{:?}.{}.{}.nc3z",
        name(input),
        o.codec(),
        o.block_size(),
        o.thorough()
    ));
    let s = pack_file(input, &z, o)
        .unwrap_or_else(|e| panic!("pack {} with {o:?}: {e}", input.display()));
    assert_eq!(s.input_len, std::fs::metadata(input).unwrap().len());
    assert_eq!(s.output_len, std::fs::metadata(&z).unwrap().len());
    z
}

/// Packs and unpacks every sample with `codec` at every block size; the result must be the
/// original bytes. Shuffle and thread counts alternate between combinations.
fn roundtrip_all(codec: Codec) {
    let dir = temp_dir();
    let mut combo = 0usize;
    for path in samples() {
        let orig = std::fs::read(&path).unwrap();
        for &bs in block_sizes(orig.len() as u64) {
            combo += 1;
            let o = opts(codec, bs, combo.is_multiple_of(2), 1 + combo % 3);
            let what = format!("{} with {o:?}", name(&path));
            let z = pack(&path, dir.path(), &o);
            let back = dir.path().join("back.nc");
            let n = unpack_file(
                &z,
                &back,
                &nc3pack::UnpackOptions::default()
                    .with_force(true)
                    .with_threads(1 + (combo + 1) % 4),
            )
            .unwrap_or_else(|e| panic!("unpack {what}: {e}"));
            assert_eq!(n, orig.len() as u64, "{what}: unpacked length");
            let got = std::fs::read(&back).unwrap();
            if got != orig {
                let at = got.iter().zip(&orig).position(|(a, b)| a != b);
                panic!(
                    "{what}: unpacked bytes differ (lengths {} vs {}, first difference at {at:?})",
                    got.len(),
                    orig.len()
                );
            }
            std::fs::remove_file(&z).unwrap();
        }
    }
}

#[test]
fn every_sample_roundtrips_with_zstd() {
    roundtrip_all(Codec::Zstd);
}

#[test]
fn every_sample_roundtrips_with_deflate() {
    roundtrip_all(Codec::Deflate);
}

#[test]
fn every_sample_roundtrips_stored() {
    roundtrip_all(Codec::None);
}

/// Packs a sample with small blocks (so variables span many blocks) and opens the archive.
fn packed(path: &Path, dir: &Path, codec: Codec) -> Archive {
    let len = std::fs::metadata(path).unwrap().len();
    let bs = if len > LARGE { 4096 } else { 64 };
    let z = pack(path, dir, &opts(codec, bs, codec != Codec::Deflate, 2));
    Archive::open(&z).unwrap_or_else(|e| panic!("open archive of {}: {e}", name(path)))
}

pub(crate) fn var_values(a: &Archive, i: usize, file: &str) -> Typed {
    let v = a.header().var(i);
    let bytes = a
        .read_var_bytes(i)
        .unwrap_or_else(|e| panic!("{file}: read variable {:?}: {e}", v.name()));
    assert_eq!(
        bytes.len() as u64,
        a.layout().vars[i].total,
        "{file}: {:?} decoded length",
        v.name()
    );
    Typed::from_be(v.nc_type(), &bytes).unwrap_or_else(|e| panic!("{file}: {:?}: {e}", v.name()))
}

fn nc_type_of(t: &netcdf3::DataType) -> NcType {
    use netcdf3::DataType as D;
    match t {
        D::I8 => NcType::Byte,
        D::U8 => NcType::Char,
        D::I16 => NcType::Short,
        D::I32 => NcType::Int,
        D::F32 => NcType::Float,
        D::F64 => NcType::Double,
    }
}

/// Hand-written values (from the `.cdl` files and `samples/README.md`) of record variables that
/// the `netcdf3` crate cannot read: with exactly one record variable whose slab is not a
/// multiple of 4 bytes, the spec (and netCDF-C) packs records back to back, while the
/// `netcdf3` crate assumes 4-byte padding. Returns the shape and the values.
fn single_recvar_truth(file: &str, var: &str) -> Option<(Vec<u64>, Typed)> {
    Some(match (file, var) {
        ("single_recvar_byte.nc", "v") => (
            vec![5, 3],
            Typed::Byte(vec![
                1, 2, 3, -1, -2, -3, 127, -128, 0, 10, 20, 30, -10, -20, -30,
            ]),
        ),
        ("single_recvar_short.nc", "v") => (
            vec![4, 3],
            Typed::Short(vec![1, 2, 3, -32768, 32767, 0, 100, -100, 1000, 4, 5, 6]),
        ),
        ("single_recvar_char.nc", "label") => (
            vec![6, 7],
            Typed::Char(b"monday\0tuesdaywed\0\0\0\0thurs\0\0fri\0\0\0\0sat\0\0\0\0".to_vec()),
        ),
        // The base file of bad/make_bad.py: `short r(time)` = 7, 8; numrecs is the streaming
        // marker, so the record count comes from the file length.
        ("streaming_numrecs.nc", "r") => (vec![2], Typed::Short(vec![7, 8])),
        // The same file cut 2 bytes short: only the first record is complete.
        ("truncated_record.nc", "r") => (vec![1], Typed::Short(vec![7])),
        _ => return None,
    })
}

/// For every CDF-1/CDF-2 sample: each variable's type, materialized shape and values, decoded
/// from the archive, equal what the `netcdf3` crate reads from the original file.
#[test]
fn values_match_the_netcdf3_crate() {
    let dir = temp_dir();
    let mut checked_vars = 0;
    let mut checked_files = Vec::new();
    for path in samples() {
        let file = name(&path);
        let orig = std::fs::read(&path).unwrap();
        if orig[3] == 5 {
            continue; // CDF-5: see cdf5_values_match_the_cdl
        }
        let open = || {
            netcdf3::FileReader::open(&path)
                .unwrap_or_else(|e| panic!("netcdf3 cannot open {file}: {e:?}"))
        };
        let (ds, _) = open().close();
        let mut r = open();
        let nc3_names = ds.get_var_names();
        let rec_vars: Vec<&netcdf3::Variable> = ds
            .get_vars()
            .into_iter()
            .filter(|v| v.is_record_var())
            .collect();
        // The variable the netcdf3 crate lays out with a padded stride, unlike the spec.
        let misread = match rec_vars.as_slice() {
            [v] if !(v.chunk_len() * v.data_type().size_of()).is_multiple_of(4) => Some(v.name()),
            _ => None,
        };
        for codec in [Codec::Zstd, Codec::Deflate, Codec::None] {
            let a = packed(&path, dir.path(), codec);
            let h = a.header();
            let names: Vec<&str> = h.vars().map(|v| v.name()).collect();
            assert_eq!(names, nc3_names, "{file}: variable names and order");
            if misread.is_none() && ds.has_unlimited_dim() {
                assert_eq!(
                    Some(a.layout().numrecs as usize),
                    ds.num_records(),
                    "{file}: number of records"
                );
            }
            for (i, hv) in h.vars().enumerate() {
                let what = format!("{file} ({codec:?}): variable {:?}", hv.name());
                let nv = ds.get_var(hv.name()).unwrap();
                assert_eq!(hv.nc_type(), nc_type_of(&nv.data_type()), "{what}: type");
                let got = var_values(&a, i, &file);
                let shape = &a.layout().vars[i].shape;
                let (want_shape, want) = if Some(hv.name()) == misread {
                    single_recvar_truth(&file, hv.name()).unwrap_or_else(|| {
                        panic!(
                            "{what} is the only record variable and is not a multiple of 4 \
                             bytes a record, so the netcdf3 crate misreads it: add its values \
                             to single_recvar_truth"
                        )
                    })
                } else {
                    let dims = nv.get_dims().iter().map(|d| d.size() as u64).collect();
                    let data = r
                        .read_var(hv.name())
                        .unwrap_or_else(|e| panic!("{what}: netcdf3 read_var: {e:?}"));
                    (dims, Typed::from_netcdf3(data))
                };
                assert_eq!(shape, &want_shape, "{what}: shape");
                if let Some(d) = got.difference(&want) {
                    panic!("{what}: archive vs reference: {d}");
                }
                checked_vars += 1;
            }
        }
        checked_files.push(file);
    }
    // Make sure the loop really covered the classic samples.
    for must in [
        "classic_records.nc",
        "offset64_mixed.nc",
        "fill_values.nc",
        "header_gap.nc",
        "obs_points.nc",
        "gridded_sst.nc",
        "single_recvar_byte.nc",
        "zero_records.nc",
    ] {
        assert!(
            checked_files.iter().any(|f| f == must),
            "{must} not checked"
        );
    }
    assert!(checked_vars > 100, "only {checked_vars} variables checked");
}

fn find_var(a: &Archive, name: &str) -> usize {
    a.header()
        .var_id(name)
        .unwrap_or_else(|| panic!("no variable {name:?}"))
}

fn gatt(a: &Archive, name: &str) -> Values {
    a.header()
        .global_attrs()
        .find(|g| g.name() == name)
        .unwrap_or_else(|| panic!("no global attribute {name:?}"))
        .values()
}

fn vatt(a: &Archive, var: &str, name: &str) -> Values {
    a.header()
        .var(find_var(a, var))
        .attrs()
        .find(|g| g.name() == name)
        .unwrap_or_else(|| panic!("no attribute {var}:{name}"))
        .values()
}

/// A variable's expected type, shape and values.
struct Want {
    var: &'static str,
    t: NcType,
    shape: Vec<u64>,
    values: Typed,
}

fn want(var: &'static str, t: NcType, shape: &[u64], values: Typed) -> Want {
    Want {
        var,
        t,
        shape: shape.to_vec(),
        values,
    }
}

/// Expected data of the CDF-5 samples, transcribed from their `.cdl` files, and checks of some
/// header attributes with extreme values.
fn cdf5_truth(file: &str, a: &Archive) -> Option<Vec<Want>> {
    use NcType as T;
    use Typed as V;
    Some(match file {
        "cdf5_types.nc" => {
            assert_eq!(
                gatt(a, "g_int64"),
                Values::Int64(vec![i64::MIN, i64::MAX, 0])
            );
            assert_eq!(gatt(a, "g_uint64"), Values::UInt64(vec![0, u64::MAX]));
            assert_eq!(gatt(a, "g_uint"), Values::UInt(vec![0, 4294967294]));
            assert_eq!(
                gatt(a, "title"),
                Values::Char(b"CDF-5 extended types".to_vec())
            );
            assert_eq!(
                vatt(a, "i64", "bounds"),
                Values::Int64(vec![-9223372036854775807, i64::MAX])
            );
            assert_eq!(vatt(a, "u64", "max"), Values::UInt64(vec![u64::MAX]));
            assert_eq!(a.layout().numrecs, 3);
            vec![
                want("time", T::Int, &[3], V::Int(vec![0, 1, 2])),
                want(
                    "ub",
                    T::UByte,
                    &[3, 3],
                    V::UByte(vec![0, 128, 254, 1, 2, 3, 200, 100, 50]),
                ),
                want("us", T::UShort, &[3], V::UShort(vec![0, 65534, 12345])),
                want(
                    "ui",
                    T::UInt,
                    &[3, 3],
                    V::UInt(vec![
                        0, 4294967294, 2147483648, 1, 2, 3, 3000000000, 4000000000, 99,
                    ]),
                ),
                want("i64", T::Int64, &[3], V::Int64(vec![i64::MIN, i64::MAX, 0])),
                want(
                    "u64",
                    T::UInt64,
                    &[3],
                    V::UInt64(vec![0, u64::MAX, 9223372036854775808]),
                ),
                want("b", T::Byte, &[3], V::Byte(vec![-128, 127, 0])),
                want(
                    "c",
                    T::Char,
                    &[3, 5],
                    V::Char(b"abcdexyz\0\0q\0\0\0\0".to_vec()),
                ),
                want("sh", T::Short, &[3], V::Short(vec![-32768, 32767, 0])),
                want(
                    "f",
                    T::Float,
                    &[3],
                    V::Float(vec![3.4028235e38, -1.1754944e-38, 0.5]),
                ),
                want(
                    "d",
                    T::Double,
                    &[3],
                    V::Double(vec![f64::MAX, f64::from_bits(1), -1.0]),
                ),
                want("fixed_ub", T::UByte, &[5], V::UByte(vec![1, 2, 3, 4, 5])),
                want(
                    "fixed_us",
                    T::UShort,
                    &[3],
                    V::UShort(vec![1, 40000, 65534]),
                ),
                want(
                    "fixed_ui",
                    T::UInt,
                    &[3],
                    V::UInt(vec![1, 3000000000, 4294967294]),
                ),
                want(
                    "fixed_i64",
                    T::Int64,
                    &[3],
                    V::Int64(vec![-1, 1099511627776, -1099511627776]),
                ),
                want(
                    "fixed_u64",
                    T::UInt64,
                    &[3],
                    V::UInt64(vec![1, 12345678901234567890, 18446744073709551613]),
                ),
                want("scalar_i64", T::Int64, &[], V::Int64(vec![i64::MIN])),
                want("scalar_u64", T::UInt64, &[], V::UInt64(vec![u64::MAX])),
            ]
        }
        "attrs_all_types_cdf5.nc" => {
            assert_eq!(vatt(a, "v", "i64_one"), Values::Int64(vec![i64::MIN]));
            assert_eq!(
                vatt(a, "v", "u64_multi"),
                Values::UInt64(vec![0, 9223372036854775808, u64::MAX])
            );
            assert_eq!(vatt(a, "v", "ub_three"), Values::UByte(vec![0, 128, 255]));
            assert_eq!(vatt(a, "v", "us_three"), Values::UShort(vec![0, 1, 65535]));
            assert_eq!(
                gatt(a, "g_uint64"),
                Values::UInt64(vec![12345678901234567890])
            );
            assert_eq!(gatt(a, "g_c_empty"), Values::Char(vec![0]));
            vec![
                want("v", T::Int, &[2], V::Int(vec![10, 20])),
                want("w", T::Double, &[], V::Double(vec![0.25])),
            ]
        }
        "empty_attrs_cdf5.nc" => {
            assert_eq!(gatt(a, "e_uint64"), Values::UInt64(vec![]));
            assert_eq!(gatt(a, "e_int64"), Values::Int64(vec![]));
            assert_eq!(gatt(a, "e_ubyte"), Values::UByte(vec![]));
            assert_eq!(
                gatt(a, "title"),
                Values::Char(b"zero-length attributes".to_vec())
            );
            assert_eq!(vatt(a, "v", "units"), Values::Char(b"1".to_vec()));
            vec![want("v", T::Int, &[2], V::Int(vec![1, 2]))]
        }
        _ => return None,
    })
}

/// CDF-5 samples, which the `netcdf3` crate cannot read: the values decoded from the archive
/// equal the values in the samples' CDL sources.
#[test]
fn cdf5_values_match_the_cdl() {
    let dir = temp_dir();
    let mut checked = Vec::new();
    for path in samples() {
        let file = name(&path);
        if std::fs::read(&path).unwrap()[3] != 5 {
            continue;
        }
        for codec in [Codec::Zstd, Codec::Deflate, Codec::None] {
            // Block size 8 holds one 64-bit value: every block boundary is exercised.
            let z = pack(&path, dir.path(), &opts(codec, 8, codec == Codec::Zstd, 3));
            let a = Archive::open(&z).unwrap();
            let wants = cdf5_truth(&file, &a).unwrap_or_else(|| {
                panic!("CDF-5 sample {file} has no expected values: add them to cdf5_truth")
            });
            assert_eq!(
                wants.len(),
                a.header().var_count(),
                "{file}: every variable has an expectation"
            );
            for w in wants {
                let i = find_var(&a, w.var);
                let what = format!("{file} ({codec:?}): variable {:?}", w.var);
                assert_eq!(a.header().var(i).nc_type(), w.t, "{what}: type");
                assert_eq!(a.layout().vars[i].shape, w.shape, "{what}: shape");
                if let Some(d) = var_values(&a, i, &file).difference(&w.values) {
                    panic!("{what}: archive vs CDL: {d}");
                }
            }
        }
        checked.push(file);
    }
    for must in ["cdf5_types.nc", "attrs_all_types_cdf5.nc"] {
        assert!(checked.iter().any(|f| f == must), "{must} not checked");
    }
}

/// Header lengths stated in samples/README.md and the `.cdl` comments (the offset of the first
/// data byte in files whose header ends where the data begins).
const KNOWN_HEADER_LEN: &[(&str, u64)] = &[
    ("empty.nc", 32),
    ("header_gap.nc", 320),
    ("single_recvar_byte.nc", 256),
    ("single_recvar_short.nc", 216),
    ("single_recvar_char.nc", 132),
    ("streaming_numrecs.nc", 156),
    ("truncated_record.nc", 156),
];

/// The archive keeps the original header verbatim: `header_bytes()` is the first header-length
/// bytes of the original file.
#[test]
fn header_bytes_are_the_original_prefix() {
    let dir = temp_dir();
    for path in samples() {
        let file = name(&path);
        let orig = std::fs::read(&path).unwrap();
        let a = packed(&path, dir.path(), Codec::Zstd);
        let hl = a.layout().header_len;
        assert_eq!(a.lead().header_len, hl, "{file}");
        assert_eq!(a.lead().file_len, orig.len() as u64, "{file}");
        assert!(
            (32..=orig.len() as u64).contains(&hl),
            "{file}: header length {hl}"
        );
        assert_eq!(a.header_bytes().len() as u64, hl, "{file}");
        assert!(
            a.header_bytes() == &orig[..hl as usize],
            "{file}: header bytes differ from the original's first {hl} bytes"
        );
        assert_eq!(a.header().len(), hl, "{file}");
        if let Some(&(_, want)) = KNOWN_HEADER_LEN.iter().find(|(n, _)| *n == file) {
            assert_eq!(hl, want, "{file}: header length");
        }
        // No variable's data starts inside the header.
        for (i, v) in a.layout().vars.iter().enumerate() {
            assert!(v.begin >= hl, "{file}: variable {i} begins at {}", v.begin);
        }
    }
}

/// Small records are routed a chunk at a time (4 MiB of whole records): with 32 KiB records a
/// chunk is 128 records, so 150 records make two chunks, the second partial. The values read
/// back match what the netcdf3 crate wrote, the file restores byte for byte, and the same bytes
/// from a pipe — whole, or cut inside the second chunk — pack to the same archive as the file
/// (cut to the same length). With 4 KiB blocks two variables fill blocks while routing, so the
/// order of the frames shows how records were chunked.
/// A stream cut inside a record over 64 MiB cannot hold that record until it is complete: it
/// is refused with `IncompleteRecord` (and leaves nothing), while the same bytes as a file,
/// whose length is known, pack and restore. The header is written by hand: CDF-1, one record of
/// float x(time, n) with n = 17,000,000 (68,000,000 bytes a record), numrecs 1, cut 4 KiB in.
#[test]
fn a_stream_cut_inside_a_record_too_large_to_buffer_is_refused_and_the_file_packs() {
    let dir = temp_dir();
    let n: u32 = 17_000_000;
    let mut h = Vec::new();
    h.extend_from_slice(b"CDF\x01");
    h.extend_from_slice(&1u32.to_be_bytes()); // numrecs
    h.extend_from_slice(&[0, 0, 0, 0x0a, 0, 0, 0, 2]); // NC_DIMENSION, 2
    h.extend_from_slice(&4u32.to_be_bytes());
    h.extend_from_slice(b"time");
    h.extend_from_slice(&0u32.to_be_bytes()); // unlimited
    h.extend_from_slice(&1u32.to_be_bytes());
    h.extend_from_slice(b"n\0\0\0");
    h.extend_from_slice(&n.to_be_bytes());
    h.extend_from_slice(&[0; 8]); // no global attributes
    h.extend_from_slice(&[0, 0, 0, 0x0b, 0, 0, 0, 1]); // NC_VARIABLE, 1
    h.extend_from_slice(&1u32.to_be_bytes());
    h.extend_from_slice(b"x\0\0\0");
    h.extend_from_slice(&2u32.to_be_bytes()); // 2 dimensions: time, n
    h.extend_from_slice(&0u32.to_be_bytes());
    h.extend_from_slice(&1u32.to_be_bytes());
    h.extend_from_slice(&[0; 8]); // no attributes
    h.extend_from_slice(&5u32.to_be_bytes()); // NC_FLOAT
    h.extend_from_slice(&(4 * n).to_be_bytes()); // vsize
    let begin = h.len() as u32 + 4;
    h.extend_from_slice(&begin.to_be_bytes());
    let mut bytes = h;
    // More than 16 KiB: a stream of at most 16 KiB is read whole and packed as the file.
    bytes.extend((0..8192u32).flat_map(|i| (i as f32 * 0.5).to_be_bytes()));
    assert!(bytes.len() as u64 > nc3pack::format::compact::COMPACT_FILE_MAX);
    let nc = dir.path().join("cut.nc");
    std::fs::write(&nc, &bytes).unwrap();
    let o = PackOptions::default().with_threads(1);

    let streamed = dir.path().join("stream.nc3z");
    let err = nc3pack::pack_reader(&bytes[..], "-".as_ref(), &streamed, &o).unwrap_err();
    assert!(
        matches!(
            &err,
            nc3pack::Error::Layout {
                source: nc3pack::error::LayoutError::IncompleteRecord { len, recsize, .. },
                ..
            } if *len == bytes.len() as u64 && *recsize == 4 * n as u64
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("pack the file instead"), "{err}");
    assert!(!streamed.exists());

    let z = dir.path().join("file.nc3z");
    pack_file(&nc, &z, &o).unwrap();
    let back = dir.path().join("back.nc");
    unpack_file(&z, &back, &nc3pack::UnpackOptions::default()).unwrap();
    assert!(std::fs::read(&back).unwrap() == bytes);

    // The same cut at 4 KiB: a stream that small is held whole and packs as its file does.
    let small = &bytes[..4096];
    std::fs::write(&nc, small).unwrap();
    pack_file(&nc, &z, &o.clone().with_force(true)).unwrap();
    nc3pack::pack_reader(small, "-".as_ref(), &streamed, &o).unwrap();
    assert!(std::fs::read(&streamed).unwrap() == std::fs::read(&z).unwrap());
}

#[test]
fn records_routed_in_chunks_match_the_written_values_and_the_pipe() {
    let dir = temp_dir();
    let nc = dir.path().join("chunks.nc");
    let mut ds = netcdf3::DataSet::new();
    ds.set_unlimited_dim("time", 150).unwrap();
    ds.add_fixed_dim("x", 8141).unwrap();
    ds.add_fixed_dim("y", 100).unwrap();
    ds.add_fixed_dim("three", 3).unwrap();
    ds.add_var_f32("field", &["time", "x"]).unwrap();
    ds.add_var_i16("qc", &["time", "y"]).unwrap();
    ds.add_var_i8("code", &["time", "three"]).unwrap();
    let field: Vec<f32> = (0..150 * 8141)
        .map(|i| (i as f32 * 0.001).sin() * 100.0)
        .collect();
    let qc: Vec<i16> = (0..15000).map(|i| (i * 37 % 1000) as i16).collect();
    let code: Vec<i8> = (0..450).map(|i| (i % 7) as i8 - 3).collect();
    let mut w = netcdf3::FileWriter::open(&nc).unwrap();
    w.set_def(&ds, netcdf3::Version::Classic, 0).unwrap();
    w.write_var_f32("field", &field).unwrap();
    w.write_var_i16("qc", &qc).unwrap();
    w.write_var_i8("code", &code).unwrap();
    w.close().unwrap();
    let bytes = std::fs::read(&nc).unwrap();
    let o = PackOptions::default().with_block_size(4096).with_threads(1);
    let z = dir.path().join("file.nc3z");
    pack_file(&nc, &z, &o).unwrap();
    let a = Archive::open(&z).unwrap();
    assert_eq!(a.layout().recsize, 32768);
    let field_be: Vec<u8> = field.iter().flat_map(|x| x.to_be_bytes()).collect();
    let qc_be: Vec<u8> = qc.iter().flat_map(|x| x.to_be_bytes()).collect();
    let code_be: Vec<u8> = code.iter().map(|&x| x as u8).collect();
    assert!(a.read_var_bytes(0).unwrap() == field_be);
    assert!(a.read_var_bytes(1).unwrap() == qc_be);
    assert!(a.read_var_bytes(2).unwrap() == code_be);
    let back = dir.path().join("back.nc");
    unpack_file(
        &z,
        &back,
        &nc3pack::UnpackOptions::default().with_threads(2),
    )
    .unwrap();
    assert!(std::fs::read(&back).unwrap() == bytes);
    // Whole, cut inside record 140's field, cut between record 130's last variable and its
    // padding (code is 3 bytes, padded to 4).
    let rec0 = a.layout().vars[0].begin as usize;
    for (cut, whole) in [
        (bytes.len(), 150),
        (rec0 + 140 * 32768 + 1000, 140),
        (rec0 + 130 * 32768 + 32767, 131),
    ] {
        let part = dir.path().join(format!("part{cut}.nc"));
        std::fs::write(&part, &bytes[..cut]).unwrap();
        let from_file = dir.path().join(format!("f{cut}.nc3z"));
        pack_file(&part, &from_file, &o).unwrap();
        let from_pipe = dir.path().join(format!("p{cut}.nc3z"));
        // A reader handing out odd-sized pieces, as a pipe may.
        struct Odd<'a>(&'a [u8], usize);
        impl std::io::Read for Odd<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                self.1 = self.1 % 7919 + 1;
                let n = self.1.min(buf.len()).min(self.0.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        nc3pack::pack_reader(Odd(&bytes[..cut], 0), "-".as_ref(), &from_pipe, &o).unwrap();
        assert!(
            std::fs::read(&from_pipe).unwrap() == std::fs::read(&from_file).unwrap(),
            "cut at {cut}"
        );
        let p = Archive::open(&from_pipe).unwrap();
        assert_eq!(p.layout().numrecs, whole, "cut at {cut}");
        unpack_file(
            &from_pipe,
            &back,
            &nc3pack::UnpackOptions::default()
                .with_force(true)
                .with_threads(2),
        )
        .unwrap();
        assert!(
            std::fs::read(&back).unwrap() == bytes[..cut],
            "cut at {cut}"
        );
    }
}

/// A file that turns out shorter than its layout while it is packed (it changed) is an error
/// naming the byte where it ended, whether it ends in a chunk of small records or in a fixed
/// variable.
#[test]
fn a_file_shorter_than_its_layout_is_an_error() {
    let dir = temp_dir();
    let nc = dir.path().join("r.nc");
    let mut ds = netcdf3::DataSet::new();
    ds.set_unlimited_dim("time", 50).unwrap();
    ds.add_fixed_dim("n", 5000).unwrap();
    ds.add_var_f64("fixed", &["n"]).unwrap();
    ds.add_var_i16("rec", &["time"]).unwrap();
    let mut w = netcdf3::FileWriter::open(&nc).unwrap();
    w.set_def(&ds, netcdf3::Version::Classic, 0).unwrap();
    w.write_var_f64("fixed", &(0..5000).map(f64::from).collect::<Vec<_>>())
        .unwrap();
    w.write_var_i16("rec", &(0..50).collect::<Vec<i16>>())
        .unwrap();
    w.close().unwrap();
    let bytes = std::fs::read(&nc).unwrap();
    let f = std::fs::File::open(&nc).unwrap();
    let (header, header_bytes, layout) = nc3pack::nc3::open(&f, &nc).unwrap();
    let rec0 = layout.vars[1].begin as usize;
    // Inside the fixed variable; inside the records (routed as one chunk).
    for cut in [rec0 - 1000, rec0 + 4 * 10 + 1] {
        let mut out = std::io::Cursor::new(Vec::new());
        let e = nc3pack::testing::pack_stream(
            std::io::Cursor::new(&bytes[..cut]),
            &nc,
            &header,
            &header_bytes,
            nc3pack::testing::Source::File(&layout),
            &PackOptions::default().with_threads(1),
            &mut out,
            "out.nc3z".as_ref(),
            &|_| {},
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains(&format!(
                "the file ended at byte {cut}, before its {} bytes",
                bytes.len()
            )),
            "cut at {cut}: {e}"
        );
    }
}
