//! The reading API: the [`Dataset`] trait, which archives and original files both implement,
//! and the element types values are read into.

use crate::error::{Error, Result};
use crate::nc3::slab::{Hyperslab, SlabError};
use crate::nc3::{self, Header, Layout, NcType, Values};
use std::path::Path;

/// A Rust type that netCDF values can be read into.
///
/// `i8` reads `byte`; `u8` reads `char` and `ubyte`; `i16` `short`; `u16` `ushort`; `i32` `int`;
/// `u32` `uint`; `i64` `int64`; `u64` `uint64`; `f32` `float`; `f64` `double`.
///
/// ```
/// use nc3pack::{Dataset, Hyperslab};
/// let ds = nc3pack::open("samples/scalars.nc")?;
/// let c: Vec<u8> = ds.read("sc", &Hyperslab::all(&[]))?; // char reads as u8
/// assert_eq!(c, b"x");
/// let d: Vec<f64> = ds.read("sd", &Hyperslab::all(&[]))?;
/// assert_eq!(d, [-1e-10]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Element: bytemuck::Pod + Send + Sync {
    /// Name for messages.
    ///
    /// ```
    /// use nc3pack::Element;
    /// assert_eq!(<f32 as Element>::NAME, "f32");
    /// ```
    const NAME: &'static str;
    /// Whether values of netCDF type `t` read as this type.
    ///
    /// ```
    /// use nc3pack::{nc3::NcType, Element};
    /// assert!(u8::accepts(NcType::Char) && u8::accepts(NcType::UByte));
    /// assert!(!i16::accepts(NcType::Int));
    /// ```
    fn accepts(t: NcType) -> bool;
    /// Converts big-endian values in place to native order.
    ///
    /// ```
    /// use nc3pack::Element;
    /// let mut xs = [i32::from_ne_bytes(7i32.to_be_bytes()), i32::from_ne_bytes((-2i32).to_be_bytes())];
    /// i32::from_be_in_place(&mut xs);
    /// assert_eq!(xs, [7, -2]);
    /// ```
    fn from_be_in_place(xs: &mut [Self]);
}

macro_rules! int_element {
    ($t:ty, $name:literal, $($nc:ident)|+) => {
        impl Element for $t {
            const NAME: &'static str = $name;
            fn accepts(t: NcType) -> bool {
                matches!(t, $(NcType::$nc)|+)
            }
            fn from_be_in_place(xs: &mut [Self]) {
                for x in xs {
                    *x = <$t>::from_be(*x);
                }
            }
        }
    };
}

int_element!(i8, "i8", Byte);
int_element!(u8, "u8", Char | UByte);
int_element!(i16, "i16", Short);
int_element!(u16, "u16", UShort);
int_element!(i32, "i32", Int);
int_element!(u32, "u32", UInt);
int_element!(i64, "i64", Int64);
int_element!(u64, "u64", UInt64);

impl Element for f32 {
    const NAME: &'static str = "f32";
    fn accepts(t: NcType) -> bool {
        t == NcType::Float
    }
    fn from_be_in_place(xs: &mut [Self]) {
        for x in xs {
            *x = f32::from_bits(u32::from_be(x.to_bits()));
        }
    }
}

impl Element for f64 {
    const NAME: &'static str = "f64";
    fn accepts(t: NcType) -> bool {
        t == NcType::Double
    }
    fn from_be_in_place(xs: &mut [Self]) {
        for x in xs {
            *x = f64::from_bits(u64::from_be(x.to_bits()));
        }
    }
}

/// A dimension as a reader sees it: the record dimension has its materialized length.
///
/// ```
/// use nc3pack::{Dataset, Hyperslab};
/// let ds = nc3pack::open("samples/classic_records.nc")?;
/// let dims = ds.dimensions();
/// assert_eq!(dims[1], nc3pack::DimInfo { name: "three".into(), len: 3, unlimited: false });
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DimInfo {
    /// Name.
    pub name: String,
    /// Length (for the record dimension: the number of records).
    pub len: u64,
    /// Whether it is the record (unlimited) dimension of the original file.
    pub unlimited: bool,
}

/// A variable as a reader sees it.
///
/// ```
/// use nc3pack::{Dataset, Hyperslab};
/// let ds = nc3pack::open("samples/classic_records.nc")?;
/// let f3 = ds.variables().into_iter().find(|v| v.name == "f3").unwrap();
/// assert_eq!(f3.nc_type, nc3pack::nc3::NcType::Float);
/// assert_eq!((f3.dims, f3.shape), (vec!["time".to_string(), "three".to_string()], vec![7, 3]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct VarInfo {
    /// Name.
    pub name: String,
    /// Element type.
    pub nc_type: NcType,
    /// Dimension names, outermost first.
    pub dims: Vec<String>,
    /// Shape, with the record dimension materialized.
    pub shape: Vec<u64>,
    /// Attributes with typed values.
    pub attrs: Vec<crate::nc3::Attribute>,
}

/// Runs handed to a source at once: bounds the memory of the run list for huge strided reads.
const RUN_BATCH: usize = 1 << 16;

/// A readable netCDF-3 dataset: an archive or an original file.
///
/// ```
/// use nc3pack::{Dataset, Hyperslab};
/// let ds = nc3pack::open("samples/scalars.nc")?;
/// let si: Vec<i32> = ds.read("si", &ds.slab("si", None, None, None)?)?;
/// assert_eq!(si, [987654321]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Dataset: Send + Sync {
    /// The file's name, for messages.
    ///
    /// ```
    /// use nc3pack::{Dataset, Hyperslab};
    /// let ds = nc3pack::open("samples/scalars.nc")?;
    /// assert_eq!(ds.path(), std::path::Path::new("samples/scalars.nc"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn path(&self) -> &Path;
    /// The netCDF-3 header.
    ///
    /// ```
    /// use nc3pack::{Dataset, Hyperslab};
    /// let ds = nc3pack::open("samples/scalars.nc")?;
    /// assert_eq!(ds.header().var_count(), 6);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn header(&self) -> &Header;
    /// The data layout, with the record dimension materialized.
    ///
    /// ```
    /// use nc3pack::{Dataset, Hyperslab};
    /// let ds = nc3pack::open("samples/scalars.nc")?;
    /// assert_eq!(ds.layout().vars.len(), 6);
    /// assert_eq!(ds.layout().numrecs, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn layout(&self) -> &Layout;
    /// Fills `out` with bytes of variable `v`'s row-major big-endian data: the runs `(offset,
    /// len)`, in order, back to back. `out.len()` is the runs' total length.
    ///
    /// ```
    /// use nc3pack::{Dataset, Hyperslab};
    /// let ds = nc3pack::open("samples/scalars.nc")?;
    /// let v = ds.var_id("si")?;
    /// let mut out = [0u8; 2];
    /// ds.read_runs(v, &[(1, 1), (3, 1)], &mut out)?; // bytes 1 and 3 of the int
    /// let be = 987654321i32.to_be_bytes();
    /// assert_eq!(out, [be[1], be[3]]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A read error, or (an archive) a damaged or lost block, naming the file.
    fn read_runs(&self, v: usize, runs: &[(u64, u64)], out: &mut [u8]) -> Result<()>;

    /// As [`Dataset::read_runs`], but elements in native byte order (a source may convert
    /// while it decodes; by default the bytes are converted after reading them).
    ///
    /// ```
    /// use nc3pack::{Dataset, Hyperslab};
    /// let ds = nc3pack::open("samples/scalars.nc")?;
    /// let v = ds.var_id("ss")?;
    /// let mut out = [0u8; 2];
    /// ds.read_runs_native(v, &[(0, 2)], &mut out)?;
    /// assert_eq!(out, 1234i16.to_ne_bytes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Dataset::read_runs`].
    fn read_runs_native(&self, v: usize, runs: &[(u64, u64)], out: &mut [u8]) -> Result<()> {
        self.read_runs(v, runs, out)?;
        crate::codec::word::be_to_native(out, self.layout().vars[v].esize);
        Ok(())
    }

    /// Announces that the values `slab` of variable `v` are about to be read, in pieces (as
    /// [`crate::dump::write_slice`] reads a large selection): an archive in object storage
    /// then fetches the blocks of the whole selection ahead of the reads, a few large requests
    /// at a time, instead of piece by piece. Other sources ignore it (the default), and so
    /// does any source for a selection that does not fit the variable (the read reports it).
    ///
    /// ```
    /// use nc3pack::{Dataset, Hyperslab};
    /// let ds = nc3pack::open("samples/gridded_sst.nc")?;
    /// let v = ds.var_id("sst")?;
    /// let slab = Hyperslab::all(&ds.layout().vars[v].shape);
    /// ds.plan_slab(v, &slab)?; // a local file: nothing to do
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A read error of the source, when fetching ahead failed at once.
    fn plan_slab(&self, v: usize, slab: &Hyperslab) -> Result<()> {
        let _ = (v, slab);
        Ok(())
    }

    /// Reads the hyperslab `slab` of variable `v` in native byte order (as
    /// [`Dataset::read_native_into`] does) and hands it to `put` in order, a piece at a time:
    /// each piece is whole elements, aligned for the element type, and the pieces make up the
    /// selection. `put` returns false to stop the read (which then returns `Ok`). Memory stays
    /// a few pieces however large the selection. By default the pieces are at most
    /// `piece_bytes` (at least one element), read one after the other into one buffer; an
    /// archive hands a selection of one run of bytes over several blocks block by block, as its
    /// threads decode them (into buffers of their own, in native order: no copy).
    ///
    /// ```
    /// use nc3pack::{Dataset, Hyperslab};
    /// let ds = nc3pack::open("samples/classic_records.nc")?;
    /// let v = ds.var_id("s3")?;
    /// let slab = Hyperslab::all(&ds.layout().vars[v].shape);
    /// let mut got = Vec::new();
    /// ds.read_native_pieces(v, &slab, 4, &mut |piece| {
    ///     got.extend_from_slice(piece);
    ///     true
    /// })?;
    /// let mut whole = vec![0u8; got.len()];
    /// ds.read_native_into(v, &slab, &mut whole)?;
    /// assert_eq!(got, whole);
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Dataset::read_raw_into`] (but for the buffer's length): a hyperslab that does not
    /// fit the variable, a read error, or (an archive) a damaged or lost block; pieces before
    /// the failing one may have been handed over.
    fn read_native_pieces(
        &self,
        v: usize,
        slab: &Hyperslab,
        piece_bytes: usize,
        put: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<()> {
        read_pieces(self, v, slab, piece_bytes, put)
    }

    /// The dimensions, the record dimension with its number of records.
    ///
    /// ```no_run
    /// use nc3pack::Dataset;
    /// let ds = nc3pack::open("samples/classic_records.nc")?;
    /// let time = &ds.dimensions()[0];
    /// assert!(time.unlimited && time.len == 7);
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    fn dimensions(&self) -> Vec<DimInfo> {
        self.header()
            .dims()
            .map(|d| DimInfo {
                name: d.name().to_string(),
                len: if d.is_record() {
                    self.layout().numrecs
                } else {
                    d.len()
                },
                unlimited: d.is_record(),
            })
            .collect()
    }

    /// The variables: name, type, dimensions, materialized shape, attributes.
    ///
    /// ```
    /// use nc3pack::{Dataset, Hyperslab};
    /// let ds = nc3pack::open("samples/scalars.nc")?;
    /// let vars = ds.variables();
    /// assert_eq!(vars[2].name, "ss");
    /// assert_eq!(vars[2].nc_type, nc3pack::nc3::NcType::Short);
    /// assert!(vars[2].shape.is_empty()); // a scalar
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn variables(&self) -> Vec<VarInfo> {
        let h = self.header();
        h.vars()
            .zip(&self.layout().vars)
            .map(|(v, l)| VarInfo {
                name: v.name().to_string(),
                nc_type: v.nc_type(),
                dims: v.dims().map(|d| d.name().to_string()).collect(),
                shape: l.shape.clone(),
                attrs: v.attrs().map(nc3::Attr::to_owned).collect(),
            })
            .collect()
    }

    /// The global attributes, with their values decoded (see [`Header::global_attrs`] for
    /// views that decode nothing).
    ///
    /// ```no_run
    /// use nc3pack::Dataset;
    /// let ds = nc3pack::open("samples/classic_records.nc")?;
    /// assert_eq!(ds.global_attributes()[0].name, "title");
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    fn global_attributes(&self) -> Vec<crate::nc3::Attribute> {
        self.header()
            .global_attrs()
            .map(nc3::Attr::to_owned)
            .collect()
    }

    /// The id of the variable `name`.
    ///
    /// ```
    /// use nc3pack::{Dataset, Hyperslab};
    /// let ds = nc3pack::open("samples/scalars.nc")?;
    /// assert_eq!(ds.var_id("sf")?, 4);
    /// assert!(matches!(ds.var_id("nope"), Err(nc3pack::Error::Slab { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Slab`](crate::Error::Slab) ([`SlabError::UnknownVariable`]) when the file has no
    /// variable `name`.
    fn var_id(&self, name: &str) -> Result<usize> {
        self.header()
            .var_id(name)
            .ok_or_else(|| self.slab_error(name, SlabError::UnknownVariable(name.into())))
    }

    /// An error about reading `var`.
    ///
    /// ```
    /// use nc3pack::{Dataset, Hyperslab};
    /// let ds = nc3pack::open("samples/scalars.nc")?;
    /// let e = ds.slab_error("nope", nc3pack::SlabError::UnknownVariable("nope".into()));
    /// assert_eq!(e.to_string(), r#"samples/scalars.nc: reading "nope": no variable named "nope""#);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn slab_error(&self, var: &str, source: SlabError) -> Error {
        Error::Slab {
            path: self.path().to_path_buf(),
            var: var.into(),
            source,
        }
    }

    /// A checked hyperslab of variable `name`, with defaults for what is `None` (start 0,
    /// stride 1, count: all that fits).
    ///
    /// ```
    /// use nc3pack::{Dataset, Hyperslab};
    /// let ds = nc3pack::open("samples/classic_records.nc")?;
    /// let s = ds.slab("s3", Some(&[2, 0]), None, None)?;
    /// assert_eq!(s.count(), &[5, 3]); // records 2 to 6, all of "three"
    /// assert!(ds.slab("s3", Some(&[8, 0]), None, None).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Dataset::var_id`], and [`Error::Slab`](crate::Error::Slab) naming the variable when
    /// the selection does not fit it (see [`Hyperslab::new`]).
    fn slab(
        &self,
        name: &str,
        start: Option<&[u64]>,
        count: Option<&[u64]>,
        stride: Option<&[u64]>,
    ) -> Result<Hyperslab> {
        let v = self.var_id(name)?;
        Hyperslab::with_defaults(&self.layout().vars[v].shape, start, count, stride)
            .map_err(|e| self.slab_error(name, e))
    }

    /// Reads a hyperslab of variable id `v` as big-endian bytes into `out` (exactly
    /// `slab.len() * element size` bytes).
    ///
    /// ```
    /// use nc3pack::{Dataset, Hyperslab};
    /// let ds = nc3pack::open("samples/scalars.nc")?;
    /// let mut out = [0u8; 4];
    /// ds.read_raw_into(ds.var_id("si")?, &Hyperslab::all(&[]), &mut out)?;
    /// assert_eq!(out, 987654321i32.to_be_bytes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A hyperslab that does not fit the variable or an `out` of the wrong length, a read
    /// error, or (an archive) a damaged or lost block.
    fn read_raw_into(&self, v: usize, slab: &Hyperslab, out: &mut [u8]) -> Result<()> {
        read_slab(self, v, slab, out, false)
    }

    /// As [`Dataset::read_raw_into`], but elements in native byte order (what
    /// [`Dataset::read_into`] reads, without a type check): the bytes of a `&mut [T]` of the
    /// variable's element type, for callers that learn the type at run time.
    ///
    /// ```no_run
    /// use nc3pack::{Dataset, Hyperslab};
    /// let ds = nc3pack::open("samples/gridded_sst.nc")?;
    /// let v = ds.var_id("sst")?;
    /// let slab = Hyperslab::all(&ds.layout().vars[v].shape);
    /// let mut sst = vec![0f32; slab.len() as usize];
    /// ds.read_native_into(v, &slab, bytemuck::cast_slice_mut(&mut sst))?;
    /// # Ok::<(), nc3pack::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Dataset::read_raw_into`].
    fn read_native_into(&self, v: usize, slab: &Hyperslab, out: &mut [u8]) -> Result<()> {
        read_slab(self, v, slab, out, true)
    }

    /// Reads a hyperslab of variable `name` as big-endian bytes, as stored in netCDF-3.
    ///
    /// ```
    /// use nc3pack::{Dataset, Hyperslab};
    /// let ds = nc3pack::open("samples/scalars.nc")?;
    /// assert_eq!(ds.read_raw("sd", &Hyperslab::all(&[]))?, (-1e-10f64).to_be_bytes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Dataset::read_raw_into`], and an unknown variable name.
    fn read_raw(&self, name: &str, slab: &Hyperslab) -> Result<Vec<u8>> {
        let v = self.var_id(name)?;
        let mut out = vec![0u8; (slab.len() * self.layout().vars[v].esize as u64) as usize];
        self.read_raw_into(v, slab, &mut out)?;
        Ok(out)
    }

    /// Reads a hyperslab of variable `name` into `out` (exactly `slab.len()` elements), in
    /// native byte order. No allocation.
    ///
    /// ```
    /// use nc3pack::{Dataset, Hyperslab};
    /// let ds = nc3pack::open("samples/scalars.nc")?;
    /// let mut out = [0f32; 1];
    /// ds.read_into("sf", &Hyperslab::all(&[]), &mut out)?;
    /// assert_eq!(out, [273.15]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Dataset::read_raw`], and a `T` that is not the variable's type.
    fn read_into<T: Element>(&self, name: &str, slab: &Hyperslab, out: &mut [T]) -> Result<()>
    where
        Self: Sized,
    {
        let v = self.var_id(name)?;
        let t = self.header().var(v).nc_type();
        if !T::accepts(t) {
            return Err(self.slab_error(
                name,
                SlabError::TypeMismatch {
                    var: name.into(),
                    var_type: t.name(),
                    requested: T::NAME,
                },
            ));
        }
        self.read_native_into(v, slab, bytemuck::cast_slice_mut(out))
    }

    /// Reads a hyperslab of variable `name` in native byte order.
    ///
    /// ```
    /// use nc3pack::{Dataset, Hyperslab};
    /// let ds = nc3pack::open("samples/scalars.nc")?;
    /// let sb: Vec<i8> = ds.read("sb", &Hyperslab::all(&[]))?;
    /// assert_eq!(sb, [-5]);
    /// assert!(ds.read::<f64>("sb", &Hyperslab::all(&[])).is_err()); // byte is not double
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Dataset::read_into`].
    fn read<T: Element>(&self, name: &str, slab: &Hyperslab) -> Result<Vec<T>>
    where
        Self: Sized,
    {
        let mut out = vec![T::zeroed(); slab.len() as usize];
        self.read_into(name, slab, &mut out)?;
        Ok(out)
    }

    /// Reads a hyperslab of variable `name` as typed [`Values`], for callers who learn the type
    /// at run time.
    ///
    /// ```
    /// use nc3pack::{Dataset, Hyperslab};
    /// let ds = nc3pack::open("samples/scalars.nc")?;
    /// use nc3pack::nc3::Values;
    /// assert_eq!(ds.read_values("sc", &Hyperslab::all(&[]))?, Values::Char(b"x".to_vec()));
    /// assert_eq!(ds.read_values("ss", &Hyperslab::all(&[]))?, Values::Short(vec![1234]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Dataset::read_raw`].
    fn read_values(&self, name: &str, slab: &Hyperslab) -> Result<Values> {
        let v = self.var_id(name)?;
        let raw = self.read_raw(name, slab)?;
        Ok(Values::from_be_bytes(self.header().var(v).nc_type(), &raw))
    }

    /// Reads the whole of variable `v` as big-endian bytes (records de-interleaved).
    ///
    /// ```
    /// use nc3pack::{Dataset, Hyperslab};
    /// let ds = nc3pack::open("samples/scalars.nc")?;
    /// assert_eq!(ds.read_var_bytes(ds.var_id("ss")?)?, 1234i16.to_be_bytes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Dataset::read_raw_into`] for the whole variable.
    fn read_var_bytes(&self, v: usize) -> Result<Vec<u8>> {
        let lv = &self.layout().vars[v];
        let mut out = vec![0u8; lv.total as usize];
        self.read_raw_into(v, &Hyperslab::all(&lv.shape), &mut out)?;
        Ok(out)
    }
}

/// [`Dataset::read_raw_into`] (`native` false) and [`Dataset::read_native_into`] (true).
fn read_slab<D: Dataset + ?Sized>(
    ds: &D,
    v: usize,
    slab: &Hyperslab,
    out: &mut [u8],
    native: bool,
) -> Result<()> {
    let lv = &ds.layout().vars[v];
    let name = ds.header().var(v).name();
    let slab = Hyperslab::new(&lv.shape, slab.start(), slab.count(), slab.stride())
        .map_err(|e| ds.slab_error(name, e))?;
    let esize = lv.esize as u64;
    let want = slab.len() * esize;
    if out.len() as u64 != want {
        return Err(ds.slab_error(
            name,
            SlabError::BufferLength {
                got: out.len() / lv.esize,
                want: slab.len(),
            },
        ));
    }
    let read = |runs: &[(u64, u64)], out: &mut [u8]| {
        if native {
            ds.read_runs_native(v, runs, out)
        } else {
            ds.read_runs(v, runs, out)
        }
    };
    let mut runs = Vec::with_capacity(RUN_BATCH.min(slab.len() as usize));
    let mut batch_start = 0usize;
    let mut batch_len = 0usize;
    slab.for_each_run(&lv.shape, esize, |o, n| {
        runs.push((o, n));
        batch_len += n as usize;
        if runs.len() == RUN_BATCH {
            read(&runs, &mut out[batch_start..batch_start + batch_len])?;
            runs.clear();
            batch_start += batch_len;
            batch_len = 0;
        }
        Ok::<_, Error>(())
    })?;
    if !runs.is_empty() {
        read(&runs, &mut out[batch_start..batch_start + batch_len])?;
    }
    Ok(())
}

/// [`Dataset::read_native_pieces`] the default way: pieces of at most `piece_bytes` (at least
/// one element), read one after the other into one buffer (u64 storage: aligned for any
/// element type).
pub(crate) fn read_pieces<D: Dataset + ?Sized>(
    ds: &D,
    v: usize,
    slab: &Hyperslab,
    piece_bytes: usize,
    put: &mut dyn FnMut(&[u8]) -> bool,
) -> Result<()> {
    let lv = &ds.layout().vars[v];
    let slab = Hyperslab::new(&lv.shape, slab.start(), slab.count(), slab.stride())
        .map_err(|e| ds.slab_error(ds.header().var(v).name(), e))?;
    let esize = lv.esize.max(1);
    let per = (piece_bytes / esize).max(1) as u64;
    let mut buf = vec![0u64; (slab.len().min(per) as usize * esize).div_ceil(8)];
    for piece in slab.pieces(per) {
        let n = piece.len() as usize * esize;
        let bytes = &mut bytemuck::cast_slice_mut::<u64, u8>(&mut buf)[..n];
        ds.read_native_into(v, &piece, bytes)?;
        if !put(bytes) {
            break;
        }
    }
    Ok(())
}

impl Dataset for Box<dyn Dataset> {
    fn path(&self) -> &Path {
        (**self).path()
    }
    fn header(&self) -> &Header {
        (**self).header()
    }
    fn layout(&self) -> &Layout {
        (**self).layout()
    }
    fn read_runs(&self, v: usize, runs: &[(u64, u64)], out: &mut [u8]) -> Result<()> {
        (**self).read_runs(v, runs, out)
    }
    fn read_runs_native(&self, v: usize, runs: &[(u64, u64)], out: &mut [u8]) -> Result<()> {
        (**self).read_runs_native(v, runs, out)
    }
    fn plan_slab(&self, v: usize, slab: &Hyperslab) -> Result<()> {
        (**self).plan_slab(v, slab)
    }
    fn read_native_pieces(
        &self,
        v: usize,
        slab: &Hyperslab,
        piece_bytes: usize,
        put: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<()> {
        (**self).read_native_pieces(v, slab, piece_bytes, put)
    }
}
