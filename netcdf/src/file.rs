//! The plugin's per-file state, keyed by the netCDF-C library that opened the file (its slot,
//! [`crate::dispatch::TABLES`]) and the `ncid` that library gave it (not kept in netCDF-C's own
//! structures, so the plugin works with any copy of the library: each copy numbers its files
//! from 65536), and the reads.

use crate::convert::{convert_uninit, Erange, Mem};
use crate::nc::*;
use nc3pack::nc3::{NcType, Variant};
use nc3pack::{Archive, Dataset, Hyperslab, Input};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::mem::MaybeUninit;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Which of netCDF-C's reads a call is: each checks its arguments in its own order
/// ([`OpenFile::check`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// `nc_get_vara` (and `nc_get_var1`, `nc_get_var`): `NC3_get_vara` (putget.m4).
    Vara,
    /// `nc_get_vars`: `NCDEFAULT_get_vars` (dvarget.c).
    Vars,
    /// `nc_get_varm` with a map or a stride other than 1: `NCDEFAULT_get_varm` (dvarget.c).
    Varm,
}

/// What a checked read reads ([`OpenFile::check`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// The memory type.
    pub mem: Mem,
    /// The selection is empty: nothing to read.
    pub empty: bool,
    /// A stride other than 1 (of `nc_get_vars` or `nc_get_varm`).
    pub strided: bool,
    /// A strided selection that runs past a dimension's end: read one value at a time.
    pub per_element: bool,
}

/// An attribute: name, type, number of values, big-endian bytes.
pub struct Att {
    /// Name.
    pub name: Vec<u8>,
    /// Type.
    pub xtype: NcType,
    /// Number of values.
    pub len: usize,
    /// The values as stored (big-endian).
    pub be: Vec<u8>,
}

/// A variable as netCDF-C describes it.
pub struct Var {
    /// Name.
    pub name: Vec<u8>,
    /// Type.
    pub xtype: NcType,
    /// Dimension ids, outermost first.
    pub dimids: Vec<c_int>,
    /// Shape, the record dimension with its number of records.
    pub shape: Vec<u64>,
    /// Attributes.
    pub atts: Vec<Att>,
}

/// An open archive.
pub struct OpenFile {
    /// The archive, read through the library's block cache.
    pub ds: Archive<Input>,
    /// The original file's kind.
    pub variant: Variant,
    /// Dimensions: name and length (the record dimension: its number of records).
    pub dims: Vec<(Vec<u8>, u64)>,
    /// The record dimension's id.
    pub unlim: Option<usize>,
    /// Variables.
    pub vars: Vec<Var>,
    /// Global attributes.
    pub gatts: Vec<Att>,
    /// What a conversion stores for a value out of range: as the netCDF-C that opened it.
    pub erange: Erange,
    /// The flags the file was opened with (`nc_open`'s mode, `NC_INMEMORY` for
    /// `nc_open_mem`), which netCDF-C reports back with the format's ([`OpenFile::mode`]).
    pub open_flags: c_int,
}

fn atts<'h>(it: impl Iterator<Item = nc3pack::nc3::Attr<'h>>) -> Vec<Att> {
    it.map(|a| Att {
        name: a.name().as_bytes().to_vec(),
        xtype: a.nc_type(),
        len: a.len(),
        be: a.be_bytes().to_vec(),
    })
    .collect()
}

impl OpenFile {
    /// Opens the archive at `path`.
    ///
    /// # Errors
    ///
    /// As [`Archive::open`].
    pub fn open(path: &std::path::Path) -> nc3pack::Result<OpenFile> {
        Ok(OpenFile::of(Archive::open(path)?))
    }

    /// Opens the archive held in `bytes` (netCDF-C's `nc_open_mem`); `name` names it in
    /// messages.
    ///
    /// # Errors
    ///
    /// As [`Archive::from_reader`].
    pub fn from_memory(bytes: Vec<u8>, name: &std::path::Path) -> nc3pack::Result<OpenFile> {
        Ok(OpenFile::of(Archive::from_reader(
            Input::Memory(bytes.into()),
            name,
        )?))
    }

    fn of(ds: Archive<Input>) -> OpenFile {
        let h = ds.header();
        let numrecs = ds.layout().numrecs;
        let dims = h
            .dims()
            .map(|d| {
                let len = if d.is_record() { numrecs } else { d.len() };
                (d.name().as_bytes().to_vec(), len)
            })
            .collect();
        let vars = h
            .vars()
            .zip(&ds.layout().vars)
            .map(|(v, l)| Var {
                name: v.name().as_bytes().to_vec(),
                xtype: v.nc_type(),
                dimids: v.dim_ids().map(|d| d as c_int).collect(),
                shape: l.shape.clone(),
                atts: atts(v.attrs()),
            })
            .collect();
        let gatts = atts(h.global_attrs());
        OpenFile {
            variant: h.variant(),
            unlim: h.record_dim(),
            dims,
            vars,
            gatts,
            erange: Erange::Plain,
            open_flags: 0,
            ds,
        }
    }

    /// `nc_inq_format`'s answer.
    pub fn format(&self) -> c_int {
        match self.variant {
            Variant::Cdf1 => NC_FORMAT_CLASSIC,
            Variant::Cdf2 => NC_FORMAT_64BIT_OFFSET,
            Variant::Cdf5 => NC_FORMAT_64BIT_DATA,
        }
    }

    /// The mode flags netCDF-C reports (`nc_inq_format_extended`): those the file was opened
    /// with, and the original kind's.
    pub fn mode(&self) -> c_int {
        let kind = match self.variant {
            Variant::Cdf1 => 0,
            Variant::Cdf2 => NC_64BIT_OFFSET,
            Variant::Cdf5 => NC_64BIT_DATA,
        };
        self.open_flags | kind
    }

    /// The attributes of `varid` (`NC_GLOBAL`: the global ones), or `NC_ENOTVAR`.
    pub fn atts(&self, varid: c_int) -> Result<&[Att], c_int> {
        if varid == NC_GLOBAL {
            return Ok(&self.gatts);
        }
        self.var(varid).map(|v| &v.atts[..])
    }

    /// Variable `varid`, or `NC_ENOTVAR`.
    pub fn var(&self, varid: c_int) -> Result<&Var, c_int> {
        usize::try_from(varid)
            .ok()
            .and_then(|i| self.vars.get(i))
            .ok_or(NC_ENOTVAR)
    }

    /// Variable `varid` for `nc_get_vara`: `NC_EGLOBAL` for `NC_GLOBAL` (netCDF-C's classic
    /// library, `NC_lookupvar`), else as [`OpenFile::var`].
    pub fn var_for_vara(&self, varid: c_int) -> Result<&Var, c_int> {
        if varid == NC_GLOBAL {
            return Err(NC_EGLOBAL);
        }
        self.var(varid)
    }

    /// Checks a read of `count` values from `start` with `stride` (all in elements; `stride`
    /// is read only for [`Call::Vars`] and [`Call::Varm`]) of variable `varid` as memory type
    /// `memtype`, in the order netCDF-C checks them for `call`: the first error it answers, or
    /// what to read. `start`, `count` and `stride` have the variable's rank.
    pub fn check(
        &self,
        varid: c_int,
        start: &[usize],
        count: &[usize],
        stride: &[isize],
        memtype: c_int,
        call: Call,
    ) -> Result<Plan, c_int> {
        let var = match call {
            Call::Vara => self.var_for_vara(varid)?,
            Call::Vars | Call::Varm => self.var(varid)?,
        };
        let code = if memtype == NC_NAT {
            var.xtype.code() as c_int
        } else {
            memtype
        };
        // nc_get_vars refuses a type beyond the atomic ones first (NCDEFAULT_get_vars).
        if call == Call::Vars && code > NC_MAX_ATOMIC_TYPE {
            return Err(NC_EBADTYPE);
        }
        // Text against numbers, then the dimensions; a memory type netCDF-C's classic library
        // cannot convert to (NC_STRING) is refused only when it comes to read (`readNCv`).
        if (code == NC_CHAR) != (var.xtype == NcType::Char) {
            return Err(NC_ECHAR);
        }
        let mem = Mem::from_code(code);
        let rank = var.shape.len();
        let plan = |empty: bool, strided: bool, per_element: bool| match mem {
            Some(mem) => Ok(Plan {
                mem,
                empty,
                strided,
                per_element,
            }),
            None if empty && call != Call::Vara => Ok(Plan {
                mem: Mem::of(var.xtype),
                empty,
                strided,
                per_element,
            }),
            // netCDF-C reads such a selection a value at a time and answers the last error;
            // the last value is past a dimension's end.
            None if per_element => Err(NC_EINVALCOORDS),
            None => Err(NC_EBADTYPE),
        };
        if rank == 0 {
            return plan(false, false, false);
        }
        let len = |d: usize| var.shape[d];
        // A start at a dimension's end selects nothing (count 0) or is wrong.
        let past = |d: usize| start[d] as u64 > len(d);
        let at_end = |d: usize| start[d] as u64 == len(d) && count[d] > 0;
        let over = |d: usize| {
            (start[d] as u64)
                .checked_add(count[d] as u64)
                .is_none_or(|e| e > len(d))
        };
        let bad_stride = |d: usize| stride[d] <= 0 || stride[d] as u64 >= X_INT_MAX;
        let edge = |d: usize| {
            if at_end(d) {
                Err(NC_EINVALCOORDS)
            } else if over(d) {
                Err(NC_EEDGE)
            } else {
                Ok(())
            }
        };
        match call {
            // NC3_get_vara: every start (NCcoordck), then each dimension's start at its end and
            // count (NCedgeck), where a record variable's count of records comes last.
            Call::Vara => {
                if (0..rank).any(past) {
                    return Err(NC_EINVALCOORDS);
                }
                let record = self
                    .unlim
                    .is_some_and(|u| var.dimids.first() == Some(&(u as c_int)));
                if record {
                    if at_end(0) {
                        return Err(NC_EINVALCOORDS);
                    }
                    (1..rank).try_for_each(edge)?;
                    if over(0) {
                        return Err(NC_EEDGE);
                    }
                } else {
                    (0..rank).try_for_each(edge)?;
                }
            }
            // NCDEFAULT_get_vars: each dimension's start, count and stride in turn.
            Call::Vars => {
                for d in 0..rank {
                    if past(d) {
                        return Err(NC_EINVALCOORDS);
                    }
                    edge(d)?;
                    if bad_stride(d) {
                        return Err(NC_ESTRIDE);
                    }
                }
            }
            // NCDEFAULT_get_varm: every stride, then each dimension's start and count from the
            // last dimension to the first.
            Call::Varm => {
                if (0..rank).any(bad_stride) {
                    return Err(NC_ESTRIDE);
                }
                for d in (0..rank).rev() {
                    if past(d) {
                        return Err(NC_EINVALCOORDS);
                    }
                    edge(d)?;
                }
            }
        }
        if call == Call::Vara && mem.is_none() {
            // NC_STRING is refused where the value is read (readNCv). NC3_get_vara reads through
            // its ripple counter, which runs no step when no index of the first dimension is
            // selected, unless the selection is contiguous (NCiocount: a fixed variable whose
            // other counts are whole) or the variable the only record variable of rank 1.
            let record = self
                .unlim
                .is_some_and(|u| var.dimids.first() == Some(&(u as c_int)));
            let ripple = if record {
                let lone = rank == 1
                    && self.vars.iter().all(|w| {
                        std::ptr::eq(w, var)
                            || w.dimids.first() != var.dimids.first()
                            || w.shape[1..].contains(&0)
                    });
                !lone
            } else {
                (1..rank).any(|d| (count[d] as u64) < len(d))
            };
            if count[0] == 0 && ripple {
                return Ok(Plan {
                    mem: Mem::of(var.xtype),
                    empty: true,
                    strided: false,
                    per_element: false,
                });
            }
            return Err(NC_EBADTYPE);
        }
        let empty = count.contains(&0);
        let strided = call != Call::Vara && stride.iter().any(|&s| s != 1);
        // A strided selection whose last index runs past a dimension's end is read one value
        // at a time, as netCDF-C does.
        let per_element = strided
            && !empty
            && (0..rank).any(|d| {
                let (st, c) = (start[d] as u64, count[d] as u64);
                st + (c - 1).saturating_mul(stride[d] as u64) >= len(d)
            });
        plan(empty, strided, per_element)
    }

    /// Reads `count` values from `start` with `stride` (all in elements) of variable `varid`
    /// as memory type `memtype` into `dst`, with netCDF-C's checks (in the order of `call`,
    /// [`OpenFile::check`]) and conversions. `stride` is read only for [`Call::Vars`] and
    /// [`Call::Varm`].
    ///
    /// # Safety
    ///
    /// `dst` is valid for writes of the selection's values (the product of `count`) in the
    /// memory type (`NC_NAT`: the variable's), written as bytes (no alignment needed), and
    /// nothing else reads or writes that memory during the call. `get` checks the type, every
    /// start, count and stride before it touches `dst`: when it answers an error for them, or
    /// the selection is empty, `dst` is not touched (and may be NULL).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn get(
        &self,
        varid: c_int,
        start: &[usize],
        count: &[usize],
        stride: &[isize],
        memtype: c_int,
        dst: *mut u8,
        call: Call,
    ) -> c_int {
        match self.check(varid, start, count, stride, memtype, call) {
            Err(e) => e,
            Ok(p) if p.empty => NC_NOERR,
            // SAFETY: checked, and `dst` holds the selection's values in the memory type (this
            // function's contract), what `read_checked` needs.
            Ok(p) => unsafe { self.read_checked(varid, start, count, stride, p, dst) },
        }
    }

    /// Reads a selection that [`OpenFile::check`] passed, as `plan` says, into `dst`; `stride`
    /// is read only when the plan is strided.
    ///
    /// # Safety
    ///
    /// `start`, `count` and `stride` are those that `check` answered `plan` for (with the
    /// variable's rank), and the selection is not empty; `dst` is valid for writes of the
    /// selection's values (the product of `count`) of the plan's memory type, written as bytes,
    /// untouched by anything else during the call.
    pub unsafe fn read_checked(
        &self,
        varid: c_int,
        start: &[usize],
        count: &[usize],
        stride: &[isize],
        plan: Plan,
        dst: *mut u8,
    ) -> c_int {
        let Ok(var) = self.var(varid) else {
            return NC_ENOTVAR;
        };
        let mem = plan.mem;
        let rank = var.shape.len();
        if rank == 0 {
            // SAFETY: a scalar's selection is its one value, which `dst` holds (this
            // function's contract), as `read` needs for this one-value slab.
            return unsafe { self.read(varid, var, &Hyperslab::all(&[]), mem, dst) };
        }
        // The usual small read (nccopy reads a record variable one record at a time): one run
        // of the variable's bytes, read without building a hyperslab.
        if !plan.strided {
            if let Some(run) = contiguous_run(&var.shape, start, count, var.xtype.size() as u64) {
                // SAFETY: the run's length is the selection's values (the product of `count`)
                // times the type's size, so `dst` holds the run's values (this function's
                // contract), as `read_run` needs.
                if let Some(status) = unsafe { self.read_run(varid, var, run, mem, dst) } {
                    return status;
                }
            }
        }
        let st: Vec<u64> = start.iter().map(|&x| x as u64).collect();
        let ct: Vec<u64> = count.iter().map(|&x| x as u64).collect();
        let sd: Vec<u64> = if plan.strided {
            stride.iter().map(|&x| x as u64).collect()
        } else {
            vec![1; rank]
        };
        if plan.per_element {
            // SAFETY: `dst` holds the product of the counts `ct` of values of `mem` (this
            // function's contract), as `get_per_element` needs.
            return unsafe { self.get_per_element(varid, var, &st, &ct, &sd, mem, dst) };
        }
        match Hyperslab::new(&var.shape, &st, &ct, &sd) {
            // SAFETY: the slab selects the product of the counts, the values `dst` holds
            // (this function's contract), as `read` needs.
            Ok(slab) => unsafe { self.read(varid, var, &slab, mem, dst) },
            Err(_) => NC_EEDGE,
        }
    }

    /// A strided selection that runs past a dimension's end: netCDF-C reads it one value at a
    /// time, storing those inside and answering the last error for those outside.
    ///
    /// # Safety
    ///
    /// `st`, `ct` and `sd` have the variable's rank; `dst` is valid for writes of the product
    /// of `ct` values of `mem` (as bytes), untouched by anything else during the call.
    #[allow(clippy::too_many_arguments)]
    unsafe fn get_per_element(
        &self,
        varid: c_int,
        var: &Var,
        st: &[u64],
        ct: &[u64],
        sd: &[u64],
        mem: Mem,
        dst: *mut u8,
    ) -> c_int {
        let rank = st.len();
        let mut idx = vec![0u64; rank];
        let mut status = NC_NOERR;
        let mut p = dst;
        loop {
            let coord: Vec<u64> = (0..rank).map(|d| st[d] + idx[d] * sd[d]).collect();
            // netCDF-C reads each value with nc_get_vara: an index past a dimension's end fails
            // NCcoordck, one at its end NCedgeck, both with NC_EINVALCOORDS.
            let local = if coord.iter().zip(&var.shape).any(|(&c, &l)| c >= l) {
                NC_EINVALCOORDS
            } else {
                match Hyperslab::new(&var.shape, &coord, &vec![1; rank], &vec![1; rank]) {
                    // SAFETY: the slab is one value; `p` is the place of this index's, one of
                    // the product of `ct` values `dst` holds (this function's contract; `p`
                    // moves one value per index), as `read` needs.
                    Ok(s) => unsafe { self.read(varid, var, &s, mem, p) },
                    Err(_) => NC_EEDGE,
                }
            };
            if local != NC_NOERR && (status == NC_NOERR || local != NC_ERANGE) {
                status = local;
            }
            // SAFETY: `p` stays within, or one past the end of, the product of `ct` values that
            // `dst` holds (this function's contract): it moves one value for each index of
            // the selection, of which there are that many.
            p = unsafe { p.add(mem.size()) };
            let mut d = rank;
            loop {
                if d == 0 {
                    return status;
                }
                d -= 1;
                idx[d] += 1;
                if idx[d] < ct[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
    }

    /// Reads a checked selection that is one run of the variable's bytes, `(offset, length)`,
    /// into `dst` as `mem`; `None` when it needs conversion and is larger than a small stack
    /// buffer (then [`OpenFile::read`] reads it).
    ///
    /// # Safety
    ///
    /// `dst` is valid for writes of the run's values (its length over the type's size) of
    /// `mem` (as bytes), untouched by anything else during the call.
    unsafe fn read_run(
        &self,
        varid: c_int,
        var: &Var,
        run: (u64, u64),
        mem: Mem,
        dst: *mut u8,
    ) -> Option<c_int> {
        const SMALL: usize = 256;
        let v = varid as usize;
        let xs = var.xtype.size();
        let n = run.1 as usize / xs;
        let cdf5 = self.variant == Variant::Cdf5;
        let same = unconverted(mem, var.xtype, cdf5);
        if !same && run.1 as usize > SMALL {
            return None;
        }
        let report = |e: nc3pack::Error| read_failed(var, e);
        if same {
            // SAFETY: `dst` is valid for writes of the run's `n` values of `mem` (this
            // function's contract), and nothing else touches it while `out` lives (until the
            // return). (The library's native reads take `&mut [u8]`: this is the one place a
            // caller's buffer, which C may not have initialised, is seen as bytes. The read
            // only writes it, never reads a byte it has not written; zeroing it first, which
            // `from_raw_parts_mut`'s documentation asks for, cost a 128 MiB read through
            // netCDF4-python 10-15 %, so it is not done.)
            let out = unsafe { std::slice::from_raw_parts_mut(dst, n * mem.size()) };
            return Some(match self.ds.read_runs_native(v, &[run], out) {
                Ok(()) => NC_NOERR,
                Err(e) => report(e),
            });
        }
        // SAFETY: `dst` is valid for writes of the run's `n` values of `mem` (this function's
        // contract), and nothing else touches it while `out` lives (until the return); as
        // `MaybeUninit<u8>` it may be uninitialised, and the conversion only writes it.
        let out = unsafe {
            std::slice::from_raw_parts_mut(dst.cast::<MaybeUninit<u8>>(), n * mem.size())
        };
        let mut buf = [0u8; SMALL];
        let raw = &mut buf[..run.1 as usize];
        if let Err(e) = self.ds.read_runs(v, &[run], raw) {
            return Some(report(e));
        }
        Some(convert_uninit(var.xtype, raw, mem, out, !cdf5, self.erange))
    }

    /// Reads a checked selection into `dst` as `mem`.
    ///
    /// # Safety
    ///
    /// `dst` is valid for writes of the slab's values (`slab.len()`) of `mem` (as bytes),
    /// untouched by anything else during the call.
    unsafe fn read(
        &self,
        varid: c_int,
        var: &Var,
        slab: &Hyperslab,
        mem: Mem,
        dst: *mut u8,
    ) -> c_int {
        let v = varid as usize;
        let n = slab.len() as usize;
        if n == 0 {
            return NC_NOERR;
        }
        let cdf5 = self.variant == Variant::Cdf5;
        let same = unconverted(mem, var.xtype, cdf5);
        let report = |e: nc3pack::Error| read_failed(var, e);
        if same {
            // SAFETY: `dst` is valid for writes of the slab's `n` values of `mem` (this
            // function's contract), and nothing else touches it while `out` lives (until the
            // return). (As in `read_run`, the library's native read takes `&mut [u8]`.)
            let out = unsafe { std::slice::from_raw_parts_mut(dst, n * mem.size()) };
            return match self.ds.read_native_into(v, slab, out) {
                Ok(()) => NC_NOERR,
                Err(e) => report(e),
            };
        }
        // SAFETY: `dst` is valid for writes of the slab's `n` values of `mem` (this function's
        // contract), and nothing else touches it while `out` lives (until the return); as
        // `MaybeUninit<u8>` it may be uninitialised, and the conversion only writes it.
        let out = unsafe {
            std::slice::from_raw_parts_mut(dst.cast::<MaybeUninit<u8>>(), n * mem.size())
        };
        // Converted: a piece at a time, so the big-endian copy stays small.
        let xs = var.xtype.size();
        let ms = mem.size();
        let mut status = NC_NOERR;
        let mut raw = Vec::new();
        let mut at = 0usize;
        for piece in slab.pieces(1 << 16) {
            let k = piece.len() as usize;
            raw.resize(k * xs, 0);
            if let Err(e) = self.ds.read_raw_into(v, &piece, &mut raw) {
                return report(e);
            }
            let s = convert_uninit(
                var.xtype,
                &raw,
                mem,
                &mut out[at..at + k * ms],
                !cdf5,
                self.erange,
            );
            if s != NC_NOERR {
                status = s;
            }
            at += k * ms;
        }
        status
    }
}

/// Whether values of file type `t` are read as `mem` without conversion: the same type, or
/// (outside CDF-5, as netCDF-C does) a byte read as an unsigned char.
fn unconverted(mem: Mem, t: NcType, cdf5: bool) -> bool {
    mem == Mem::of(t) || (!cdf5 && t == NcType::Byte && mem == Mem::UByte)
}

/// A read of `var` that failed (a damaged or lost block): one line on stderr naming the
/// variable and what the library says (the file and the block), and `NC_EIO` for the caller.
fn read_failed(var: &Var, e: nc3pack::Error) -> c_int {
    eprintln!(
        "nc3pack: variable {:?}: {e}",
        String::from_utf8_lossy(&var.name)
    );
    NC_EIO
}

/// A checked, non-empty selection without stride as one run of the variable's bytes (offset,
/// length), when it is one: the dimensions before the first with a count other than 1 have a
/// count of 1, those after it are selected whole.
fn contiguous_run(
    shape: &[u64],
    start: &[usize],
    count: &[usize],
    esize: u64,
) -> Option<(u64, u64)> {
    let rank = shape.len();
    let k = (0..rank).find(|&d| count[d] != 1).unwrap_or(rank);
    if (k + 1..rank).any(|d| start[d] != 0 || count[d] as u64 != shape[d]) {
        return None;
    }
    let (mut at, mut n) = (0u64, 1u64);
    for d in 0..rank {
        at = at * shape[d] + start[d] as u64;
        n *= count[d] as u64;
    }
    Some((at * esize, n * esize))
}

/// A file's key: the slot of the netCDF-C library that opened it, and the ncid it gave.
pub type Key = (usize, c_int);

/// The open files, by library and ncid.
static FILES: Mutex<BTreeMap<Key, Arc<OpenFile>>> = Mutex::new(BTreeMap::new());

/// Counts the changes to [`FILES`]: a thread's [`LAST`] is good while it is unchanged.
static CHANGES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The file this thread used last, with its ncid and the [`CHANGES`] count it was looked
    /// up at: `nccopy` of a record file calls the plugin several times a record, millions of
    /// times, and locking the table and counting references each time was a fifth of its time.
    static LAST: RefCell<Option<(u64, Key, Arc<OpenFile>)>> = const { RefCell::new(None) };
}

fn files() -> std::sync::MutexGuard<'static, BTreeMap<Key, Arc<OpenFile>>> {
    FILES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Keeps `f` as the file of `ncid` (the library and its ncid).
pub fn insert(ncid: Key, f: OpenFile) {
    let mut t = files();
    t.insert(ncid, Arc::new(f));
    CHANGES.fetch_add(1, Ordering::AcqRel);
}

/// What `f` returns for the file of `ncid`; `None` when the plugin has no such file.
pub fn with<R>(ncid: Key, f: impl FnOnce(&OpenFile) -> R) -> Option<R> {
    let now = CHANGES.load(Ordering::Acquire);
    LAST.with(|last| {
        // This thread's last file, when the table has not changed since (a call from inside
        // `f`, for the same file or another, still finds it borrowed only to read).
        if let Ok(l) = last.try_borrow() {
            if let Some((at, id, fl)) = l.as_ref() {
                if *at == now && *id == ncid {
                    return Some(f(fl));
                }
            }
        }
        let fl = files().get(&ncid).cloned()?;
        if let Ok(mut l) = last.try_borrow_mut() {
            *l = Some((now, ncid, Arc::clone(&fl)));
        }
        Some(f(&fl))
    })
}

/// Forgets the file of `ncid`; whether there was one. The file is closed once no thread
/// holds it: this thread lets it go here, another at its next call.
pub fn remove(ncid: Key) -> bool {
    let gone = {
        let mut t = files();
        let gone = t.remove(&ncid);
        CHANGES.fetch_add(1, Ordering::AcqRel);
        gone
    };
    LAST.with(|last| {
        if let Ok(mut l) = last.try_borrow_mut() {
            *l = None;
        }
    });
    gone.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};
    use std::sync::mpsc;

    /// samples/`name` packed into `dir`, opened as the plugin opens a file.
    fn opened(dir: &Path, name: &str) -> OpenFile {
        let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../samples")
            .join(name);
        let z = dir.join(format!("{name}.nc3z"));
        let opts = nc3pack::PackOptions::default()
            .with_threads(1)
            .with_force(true);
        nc3pack::pack_file(&src, &z, &opts).unwrap();
        OpenFile::open(&z).unwrap()
    }

    /// A thread keeps the file it used last: after a close, and after netCDF-C gives the same
    /// ncid to another file, every thread finds what the table holds, not what it kept.
    #[test]
    fn a_closed_ncid_is_gone_and_a_reused_one_is_the_new_file_on_every_thread() {
        let dir = std::env::temp_dir().join(format!("nc3pack-netcdf-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // An ncid netCDF-C does not give (the tests of this crate share the table).
        let ncid = (0, 0x5a5a_0001);
        let vars = move || with(ncid, |f| f.vars.len());
        insert(ncid, opened(&dir, "scalars.nc"));
        let scalars = vars().unwrap();
        let (ask, asked) = mpsc::channel::<()>();
        let (tell, told) = mpsc::channel::<Option<usize>>();
        let other = std::thread::spawn(move || {
            for () in asked {
                tell.send(vars()).unwrap();
            }
        });
        ask.send(()).unwrap();
        assert_eq!(told.recv().unwrap(), Some(scalars));
        assert!(remove(ncid));
        assert_eq!(vars(), None);
        ask.send(()).unwrap();
        assert_eq!(told.recv().unwrap(), None);
        insert(ncid, opened(&dir, "classic_records.nc"));
        let records = vars().unwrap();
        assert_ne!(records, scalars);
        ask.send(()).unwrap();
        assert_eq!(told.recv().unwrap(), Some(records));
        assert!(remove(ncid));
        assert!(!remove(ncid));
        drop(ask);
        other.join().unwrap();
        std::fs::remove_dir_all(&dir).ok();
    }
}
