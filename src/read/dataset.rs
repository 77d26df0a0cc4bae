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
pub trait Element: bytemuck::Pod + Send + Sync {
    /// Name for messages.
    const NAME: &'static str;
    /// Whether values of netCDF type `t` read as this type.
    fn accepts(t: NcType) -> bool;
    /// Converts big-endian values in place to native order.
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
pub trait Dataset: Send + Sync {
    /// The file's name, for messages.
    fn path(&self) -> &Path;
    /// The netCDF-3 header.
    fn header(&self) -> &Header;
    /// The data layout, with the record dimension materialized.
    fn layout(&self) -> &Layout;
    /// Fills `out` with bytes of variable `v`'s row-major big-endian data: the runs `(offset,
    /// len)`, in order, back to back. `out.len()` is the runs' total length.
    ///
    /// # Errors
    ///
    /// A read error, or (an archive) a damaged or lost block, naming the file.
    fn read_runs(&self, v: usize, runs: &[(u64, u64)], out: &mut [u8]) -> Result<()>;

    /// As [`Dataset::read_runs`], but elements in native byte order (a source may convert
    /// while it decodes; by default the bytes are converted after reading them).
    ///
    /// # Errors
    ///
    /// As [`Dataset::read_runs`].
    fn read_runs_native(&self, v: usize, runs: &[(u64, u64)], out: &mut [u8]) -> Result<()> {
        self.read_runs(v, runs, out)?;
        crate::format::codec::be_to_native(out, self.layout().vars[v].esize);
        Ok(())
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
}
