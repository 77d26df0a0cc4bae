//! netCDF-C's dispatch table (`struct NC_Dispatch`, version 5: netCDF-C 4.9.x and 4.10.x) and
//! the plugin's functions in it. Every function catches panics (nothing unwinds into C), finds
//! its file by ncid, accepts NULL for any out-parameter, and answers as netCDF-C's classic
//! library answers for a file opened read-only; every write or define call answers `NC_EPERM`.
//!
//! # Safety
//!
//! The table's functions are `unsafe extern "C" fn`s: only netCDF-C calls them, through the
//! table it was given ([`TABLES`]), with the arguments of the API call it dispatches (`nc_open`,
//! `nc_inq_var`, `nc_get_vara`, ...) after its own checks. Each function's own `# Safety`
//! section names the pointers it dereferences; for those, the caller (netCDF-C, and through it
//! the program) guarantees what netCDF-C's API documents, which is:
//!
//! 1. *Out-parameters* (`int *`, `size_t *`): NULL, or valid and aligned for a write of one
//!    value of their C type. The plugin skips NULL ones.
//! 2. *Name buffers* (`char *name` out): NULL, or valid for writes of `NC_MAX_NAME + 1` bytes,
//!    netCDF-C's documented size. The plugin writes the name cut to `NC_MAX_NAME` bytes and a
//!    NUL, no more.
//! 3. *Strings in* (`const char *name`, the path): NULL, or a NUL-terminated string valid for
//!    reads up to and including its NUL, not written while the call runs.
//! 4. *Arrays*: `start`, `count`, `stride` and `imap` NULL, or valid and aligned for reads of
//!    as many elements as the variable has dimensions; `dimids` and `ids` NULL, or valid and
//!    aligned for writes of as many `int`s as the function's section says.
//! 5. *Data buffers* (`value`, `fill_value`): valid for writes of the values the call
//!    delivers, in the memory type (`NC_NAT`: the variable's or attribute's own type); for
//!    `get_varm`, valid for reads and writes at every place the map names.
//! 6. *Lifetime and threads*: all of it stays valid for the duration of the call, and no other
//!    thread writes memory the plugin reads or touches memory it writes while the call runs;
//!    no buffer the plugin writes overlaps one it reads. The plugin keeps no pointer after the
//!    call returns. Any thread may call, several at once: the plugin's state (its open files)
//!    is behind a mutex, and a file is read through a shared, `Sync` `OpenFile`.
//!
//! No function unwinds into C: each does its work under `catch_unwind` and answers a panic
//! with `NC_EINTERNAL`.

use crate::convert::{convert_uninit, Erange, Mem};
use crate::file::{self, Att, Call, OpenFile};
use crate::nc::*;
use nc3pack::nc3::NcType;
use std::cell::UnsafeCell;
use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::os::raw::{c_char, c_int, c_longlong, c_uint, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};

type Table = NcDispatch;
type Sz = usize;
type Pd = isize;
/// A read's start, count and stride.
type Vectors = (Vec<Sz>, Vec<Sz>, Vec<Pd>);

/// `struct NC_Dispatch` of netCDF-C's include/netcdf_dispatch.h (version 5): two ints, then 77
/// function pointers, in its order.
#[repr(C)]
#[allow(missing_docs, clippy::type_complexity)]
pub struct NcDispatch {
    pub model: c_int,
    pub dispatch_version: c_int,
    pub create: unsafe extern "C" fn(
        *const c_char,
        c_int,
        Sz,
        c_int,
        *mut Sz,
        *mut c_void,
        *const Table,
        c_int,
    ) -> c_int,
    pub open: unsafe extern "C" fn(
        *const c_char,
        c_int,
        c_int,
        *mut Sz,
        *mut c_void,
        *const Table,
        c_int,
    ) -> c_int,
    pub redef: unsafe extern "C" fn(c_int) -> c_int,
    pub enddef: unsafe extern "C" fn(c_int, Sz, Sz, Sz, Sz) -> c_int,
    pub sync: unsafe extern "C" fn(c_int) -> c_int,
    pub abort: unsafe extern "C" fn(c_int) -> c_int,
    pub close: unsafe extern "C" fn(c_int, *mut c_void) -> c_int,
    pub set_fill: unsafe extern "C" fn(c_int, c_int, *mut c_int) -> c_int,
    pub inq_format: unsafe extern "C" fn(c_int, *mut c_int) -> c_int,
    pub inq_format_extended: unsafe extern "C" fn(c_int, *mut c_int, *mut c_int) -> c_int,
    pub inq: unsafe extern "C" fn(c_int, *mut c_int, *mut c_int, *mut c_int, *mut c_int) -> c_int,
    pub inq_type: unsafe extern "C" fn(c_int, c_int, *mut c_char, *mut Sz) -> c_int,
    pub def_dim: unsafe extern "C" fn(c_int, *const c_char, Sz, *mut c_int) -> c_int,
    pub inq_dimid: unsafe extern "C" fn(c_int, *const c_char, *mut c_int) -> c_int,
    pub inq_dim: unsafe extern "C" fn(c_int, c_int, *mut c_char, *mut Sz) -> c_int,
    pub inq_unlimdim: unsafe extern "C" fn(c_int, *mut c_int) -> c_int,
    pub rename_dim: unsafe extern "C" fn(c_int, c_int, *const c_char) -> c_int,
    pub inq_att: unsafe extern "C" fn(c_int, c_int, *const c_char, *mut c_int, *mut Sz) -> c_int,
    pub inq_attid: unsafe extern "C" fn(c_int, c_int, *const c_char, *mut c_int) -> c_int,
    pub inq_attname: unsafe extern "C" fn(c_int, c_int, c_int, *mut c_char) -> c_int,
    pub rename_att: unsafe extern "C" fn(c_int, c_int, *const c_char, *const c_char) -> c_int,
    pub del_att: unsafe extern "C" fn(c_int, c_int, *const c_char) -> c_int,
    pub get_att: unsafe extern "C" fn(c_int, c_int, *const c_char, *mut c_void, c_int) -> c_int,
    pub put_att:
        unsafe extern "C" fn(c_int, c_int, *const c_char, c_int, Sz, *const c_void, c_int) -> c_int,
    pub def_var:
        unsafe extern "C" fn(c_int, *const c_char, c_int, c_int, *const c_int, *mut c_int) -> c_int,
    pub inq_varid: unsafe extern "C" fn(c_int, *const c_char, *mut c_int) -> c_int,
    pub rename_var: unsafe extern "C" fn(c_int, c_int, *const c_char) -> c_int,
    pub get_vara:
        unsafe extern "C" fn(c_int, c_int, *const Sz, *const Sz, *mut c_void, c_int) -> c_int,
    pub put_vara:
        unsafe extern "C" fn(c_int, c_int, *const Sz, *const Sz, *const c_void, c_int) -> c_int,
    pub get_vars: unsafe extern "C" fn(
        c_int,
        c_int,
        *const Sz,
        *const Sz,
        *const Pd,
        *mut c_void,
        c_int,
    ) -> c_int,
    pub put_vars: unsafe extern "C" fn(
        c_int,
        c_int,
        *const Sz,
        *const Sz,
        *const Pd,
        *const c_void,
        c_int,
    ) -> c_int,
    pub get_varm: unsafe extern "C" fn(
        c_int,
        c_int,
        *const Sz,
        *const Sz,
        *const Pd,
        *const Pd,
        *mut c_void,
        c_int,
    ) -> c_int,
    pub put_varm: unsafe extern "C" fn(
        c_int,
        c_int,
        *const Sz,
        *const Sz,
        *const Pd,
        *const Pd,
        *const c_void,
        c_int,
    ) -> c_int,
    pub inq_var_all: unsafe extern "C" fn(
        c_int,
        c_int,
        *mut c_char,
        *mut c_int,
        *mut c_int,
        *mut c_int,
        *mut c_int,
        *mut c_int,
        *mut c_int,
        *mut c_int,
        *mut c_int,
        *mut c_int,
        *mut Sz,
        *mut c_int,
        *mut c_void,
        *mut c_int,
        *mut c_uint,
        *mut Sz,
        *mut c_uint,
    ) -> c_int,
    pub var_par_access: unsafe extern "C" fn(c_int, c_int, c_int) -> c_int,
    pub def_var_fill: unsafe extern "C" fn(c_int, c_int, c_int, *const c_void) -> c_int,
    pub show_metadata: unsafe extern "C" fn(c_int) -> c_int,
    pub inq_unlimdims: unsafe extern "C" fn(c_int, *mut c_int, *mut c_int) -> c_int,
    pub inq_ncid: unsafe extern "C" fn(c_int, *const c_char, *mut c_int) -> c_int,
    pub inq_grps: unsafe extern "C" fn(c_int, *mut c_int, *mut c_int) -> c_int,
    pub inq_grpname: unsafe extern "C" fn(c_int, *mut c_char) -> c_int,
    pub inq_grpname_full: unsafe extern "C" fn(c_int, *mut Sz, *mut c_char) -> c_int,
    pub inq_grp_parent: unsafe extern "C" fn(c_int, *mut c_int) -> c_int,
    pub inq_grp_full_ncid: unsafe extern "C" fn(c_int, *const c_char, *mut c_int) -> c_int,
    pub inq_varids: unsafe extern "C" fn(c_int, *mut c_int, *mut c_int) -> c_int,
    pub inq_dimids: unsafe extern "C" fn(c_int, *mut c_int, *mut c_int, c_int) -> c_int,
    pub inq_typeids: unsafe extern "C" fn(c_int, *mut c_int, *mut c_int) -> c_int,
    pub inq_type_equal: unsafe extern "C" fn(c_int, c_int, c_int, c_int, *mut c_int) -> c_int,
    pub def_grp: unsafe extern "C" fn(c_int, *const c_char, *mut c_int) -> c_int,
    pub rename_grp: unsafe extern "C" fn(c_int, *const c_char) -> c_int,
    pub inq_user_type: unsafe extern "C" fn(
        c_int,
        c_int,
        *mut c_char,
        *mut Sz,
        *mut c_int,
        *mut Sz,
        *mut c_int,
    ) -> c_int,
    pub inq_typeid: unsafe extern "C" fn(c_int, *const c_char, *mut c_int) -> c_int,
    pub def_compound: unsafe extern "C" fn(c_int, Sz, *const c_char, *mut c_int) -> c_int,
    pub insert_compound: unsafe extern "C" fn(c_int, c_int, *const c_char, Sz, c_int) -> c_int,
    pub insert_array_compound:
        unsafe extern "C" fn(c_int, c_int, *const c_char, Sz, c_int, c_int, *const c_int) -> c_int,
    pub inq_compound_field: unsafe extern "C" fn(
        c_int,
        c_int,
        c_int,
        *mut c_char,
        *mut Sz,
        *mut c_int,
        *mut c_int,
        *mut c_int,
    ) -> c_int,
    pub inq_compound_fieldindex:
        unsafe extern "C" fn(c_int, c_int, *const c_char, *mut c_int) -> c_int,
    pub def_vlen: unsafe extern "C" fn(c_int, *const c_char, c_int, *mut c_int) -> c_int,
    pub put_vlen_element:
        unsafe extern "C" fn(c_int, c_int, *mut c_void, Sz, *const c_void) -> c_int,
    pub get_vlen_element:
        unsafe extern "C" fn(c_int, c_int, *const c_void, *mut Sz, *mut c_void) -> c_int,
    pub def_enum: unsafe extern "C" fn(c_int, c_int, *const c_char, *mut c_int) -> c_int,
    pub insert_enum: unsafe extern "C" fn(c_int, c_int, *const c_char, *const c_void) -> c_int,
    pub inq_enum_member:
        unsafe extern "C" fn(c_int, c_int, c_int, *mut c_char, *mut c_void) -> c_int,
    pub inq_enum_ident: unsafe extern "C" fn(c_int, c_int, c_longlong, *mut c_char) -> c_int,
    pub def_opaque: unsafe extern "C" fn(c_int, Sz, *const c_char, *mut c_int) -> c_int,
    pub def_var_deflate: unsafe extern "C" fn(c_int, c_int, c_int, c_int, c_int) -> c_int,
    pub def_var_fletcher32: unsafe extern "C" fn(c_int, c_int, c_int) -> c_int,
    pub def_var_chunking: unsafe extern "C" fn(c_int, c_int, c_int, *const Sz) -> c_int,
    pub def_var_endian: unsafe extern "C" fn(c_int, c_int, c_int) -> c_int,
    pub def_var_filter: unsafe extern "C" fn(c_int, c_int, c_uint, Sz, *const c_uint) -> c_int,
    pub set_var_chunk_cache: unsafe extern "C" fn(c_int, c_int, Sz, Sz, f32) -> c_int,
    pub get_var_chunk_cache:
        unsafe extern "C" fn(c_int, c_int, *mut Sz, *mut Sz, *mut f32) -> c_int,
    pub inq_var_filter_ids: unsafe extern "C" fn(c_int, c_int, *mut Sz, *mut c_uint) -> c_int,
    pub inq_var_filter_info:
        unsafe extern "C" fn(c_int, c_int, c_uint, *mut Sz, *mut c_uint) -> c_int,
    pub def_var_quantize: unsafe extern "C" fn(c_int, c_int, c_int, c_int) -> c_int,
    pub inq_var_quantize: unsafe extern "C" fn(c_int, c_int, *mut c_int, *mut c_int) -> c_int,
    pub inq_filter_avail: unsafe extern "C" fn(c_int, c_uint) -> c_int,
}

/// The most netCDF-C libraries in one process the plugin serves at once (each has a table of its
/// own, so that each library's ncids, which all start at 65536, name that library's files).
pub const MAX_LIBRARIES: usize = 4;

/// The plugin's table for the netCDF-C library in slot `L` (`NC_FORMATX_UDF0`, version 5):
/// the same functions, each instantiated for `L`, so that a call knows which library made it.
const fn table<const L: usize>() -> NcDispatch {
    NcDispatch {
        model: NC_FORMATX_UDF0,
        dispatch_version: NC_DISPATCH_VERSION,
        create: create::<L>,
        open: open::<L>,
        redef: perm1::<L>,
        enddef: enddef::<L>,
        sync: sync::<L>,
        abort: abort::<L>,
        close: close::<L>,
        set_fill: set_fill::<L>,
        inq_format: inq_format::<L>,
        inq_format_extended: inq_format_extended::<L>,
        inq: inq::<L>,
        inq_type: inq_type::<L>,
        def_dim: def_dim::<L>,
        inq_dimid: inq_dimid::<L>,
        inq_dim: inq_dim::<L>,
        inq_unlimdim: inq_unlimdim::<L>,
        rename_dim: rename_dim::<L>,
        inq_att: inq_att::<L>,
        inq_attid: inq_attid::<L>,
        inq_attname: inq_attname::<L>,
        rename_att: rename_att::<L>,
        del_att: del_att::<L>,
        get_att: get_att::<L>,
        put_att: put_att::<L>,
        def_var: def_var::<L>,
        inq_varid: inq_varid::<L>,
        rename_var: rename_var::<L>,
        get_vara: get_vara::<L>,
        put_vara: put_vara::<L>,
        get_vars: get_vars::<L>,
        put_vars: put_vars::<L>,
        get_varm: get_varm::<L>,
        put_varm: put_varm::<L>,
        inq_var_all: inq_var_all::<L>,
        var_par_access: var_par_access::<L>,
        def_var_fill: def_var_fill::<L>,
        show_metadata: show_metadata::<L>,
        inq_unlimdims: inq_unlimdims::<L>,
        inq_ncid: inq_ncid::<L>,
        inq_grps: inq_grps::<L>,
        inq_grpname: inq_grpname::<L>,
        inq_grpname_full: inq_grpname_full::<L>,
        inq_grp_parent: inq_grp_parent::<L>,
        inq_grp_full_ncid: inq_grp_full_ncid::<L>,
        inq_varids: inq_varids::<L>,
        inq_dimids: inq_dimids::<L>,
        inq_typeids: inq_typeids::<L>,
        inq_type_equal: inq_type_equal::<L>,
        def_grp: def_grp::<L>,
        rename_grp: rename_grp::<L>,
        inq_user_type: inq_user_type::<L>,
        inq_typeid: inq_typeid::<L>,
        def_compound: def_compound::<L>,
        insert_compound: insert_compound::<L>,
        insert_array_compound: insert_array_compound::<L>,
        inq_compound_field: inq_compound_field::<L>,
        inq_compound_fieldindex: inq_compound_fieldindex::<L>,
        def_vlen: def_vlen::<L>,
        put_vlen_element: put_vlen_element::<L>,
        get_vlen_element: get_vlen_element::<L>,
        def_enum: def_enum::<L>,
        insert_enum: insert_enum::<L>,
        inq_enum_member: inq_enum_member::<L>,
        inq_enum_ident: inq_enum_ident::<L>,
        def_opaque: def_opaque::<L>,
        def_var_deflate: def_var_deflate::<L>,
        def_var_fletcher32: def_var_fletcher32::<L>,
        def_var_chunking: def_var_chunking::<L>,
        def_var_endian: def_var_endian::<L>,
        def_var_filter: def_var_filter::<L>,
        set_var_chunk_cache: set_var_chunk_cache::<L>,
        get_var_chunk_cache: get_var_chunk_cache::<L>,
        inq_var_filter_ids: inq_var_filter_ids::<L>,
        inq_var_filter_info: inq_var_filter_info::<L>,
        def_var_quantize: def_var_quantize::<L>,
        inq_var_quantize: inq_var_quantize::<L>,
        inq_filter_avail: inq_filter_avail::<L>,
    }
}

/// The plugin's dispatch tables, one per netCDF-C library (slot), [`MAX_LIBRARIES`] of them,
/// as netCDF-C takes them: `nc_def_user_format(int, NC_Dispatch *, char *)` and the RC-file
/// init function (`NC_Dispatch *(*)(void)`) both want a mutable pointer, so the tables live in
/// an [`UnsafeCell`] and [`Tables::get`] hands out pointers that may be written through,
/// rather than a `*mut` cast from an immutable static (whose memory Rust may place read-only
/// and assume never changes).
///
/// netCDF-C does not write through the pointer: `nc_def_user_format` reads the table's
/// `dispatch_version` and keeps the pointer (`UDF_dispatch_tables[]`, 4.9's
/// `UDF0_dispatch_table`), and a file opened with it keeps it as `const NC_Dispatch *` to call
/// its functions. The plugin never writes them either; Rust code only takes pointers.
pub struct Tables(UnsafeCell<[NcDispatch; MAX_LIBRARIES]>);

// SAFETY: `Tables` is shared between threads only as the `TABLES` static. Rust code never reads or
// writes the tables through it, it only hands out raw pointers (`Tables::get`, which creates no
// reference); the only accesses are netCDF-C's reads of the function pointers (and
// `dispatch_version`), from whatever threads call it, and concurrent reads do not race. The
// contents are plain integers and `fn` pointers, which are `Send` and `Sync` themselves.
unsafe impl Sync for Tables {}

impl Tables {
    /// The table for the library in slot `slot`, as netCDF-C takes it (`NC_Dispatch *`): valid
    /// for the life of the process (the static is never dropped or moved).
    ///
    /// # Panics
    ///
    /// When `slot` is not below [`MAX_LIBRARIES`].
    pub fn get(&self, slot: usize) -> *mut NcDispatch {
        // SAFETY: `UnsafeCell::get` gives a pointer to the static's array, valid and aligned for
        // the life of the process; `&raw mut` of one element (indexing an array place,
        // bounds-checked) takes its address without creating a reference, so no aliasing claim is
        // made over memory that netCDF-C holds pointers into.
        unsafe { &raw mut (*self.0.get())[slot] }
    }
}

/// One table per netCDF-C library (slot), [`MAX_LIBRARIES`] of them.
pub static TABLES: Tables = Tables(UnsafeCell::new([
    table::<0>(),
    table::<1>(),
    table::<2>(),
    table::<3>(),
]));

/// What each library (slot) stores for a value out of range: `true` for
/// [`Erange::Fill`](crate::convert::Erange::Fill), found out when the plugin registers with it.
static ERANGE_FILL: [AtomicBool; MAX_LIBRARIES] = [const { AtomicBool::new(false) }; MAX_LIBRARIES];

/// Keeps what the library in slot `slot` stores for a value out of range (its files opened from
/// now on convert so).
///
/// # Panics
///
/// When `slot` is not below [`MAX_LIBRARIES`].
pub fn set_erange(slot: usize, e: Erange) {
    ERANGE_FILL[slot].store(e == Erange::Fill, Ordering::Relaxed);
}

/// What the library in slot `slot` stores for a value out of range.
fn erange(slot: usize) -> Erange {
    if ERANGE_FILL[slot].load(Ordering::Relaxed) {
        Erange::Fill
    } else {
        Erange::Plain
    }
}

/// Runs `f`, turning a panic into `NC_EINTERNAL`: nothing unwinds into C.
fn guard(f: impl FnOnce() -> c_int) -> c_int {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(NC_EINTERNAL)
}

/// Runs `f` on the file of `ncid` of the library in slot `L` (`NC_EBADID` when the plugin has
/// none).
fn with<const L: usize>(ncid: c_int, f: impl FnOnce(&OpenFile) -> c_int) -> c_int {
    guard(|| file::with((L, ncid), f).unwrap_or(NC_EBADID))
}

/// Writes `v` to the out-parameter `p`, unless it is NULL.
///
/// # Safety
///
/// `p` is NULL, or valid and aligned for a write of one `T` (the module's rule 1).
unsafe fn put<T>(p: *mut T, v: T) {
    if !p.is_null() {
        // SAFETY: not NULL, so valid and aligned for one `T` (this function's contract).
        unsafe { p.write(v) };
    }
}

/// Copies a name and its NUL into a caller's buffer of `NC_MAX_NAME + 1` bytes (the name cut
/// to `NC_MAX_NAME` bytes), unless it is NULL.
///
/// # Safety
///
/// `p` is NULL, or valid for writes of `min(name.len(), NC_MAX_NAME) + 1` bytes (a buffer of
/// `NC_MAX_NAME + 1` bytes always is: the module's rule 2) and not overlapping `name`.
unsafe fn put_name(p: *mut c_char, name: &[u8]) {
    if p.is_null() {
        return;
    }
    let n = name.len().min(NC_MAX_NAME);
    // SAFETY: bytes `0..=n` of the buffer are writable, `n` being `min(name.len(), NC_MAX_NAME)`
    // (this function's contract); `name` has at least `n` bytes and does not overlap the buffer (it
    // is the plugin's own memory); bytes need no alignment.
    unsafe {
        std::ptr::copy_nonoverlapping(name.as_ptr(), p.cast::<u8>(), n);
        p.add(n).write(0);
    }
}

/// The bytes of a C string in (without its NUL), or `None` for NULL.
///
/// # Safety
///
/// `p` is NULL, or a NUL-terminated string valid for reads up to its NUL, not written or
/// freed while the returned slice (lifetime `'a`, which the caller chooses: at most the
/// dispatch call's) is in use (the module's rule 3).
unsafe fn cstr<'a>(p: *const c_char) -> Option<&'a [u8]> {
    // SAFETY: not NULL, so a NUL-terminated string that outlives `'a` unchanged (this function's
    // contract).
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_bytes())
}

fn find_att<'a>(atts: &'a [Att], name: Option<&[u8]>) -> Option<(usize, &'a Att)> {
    let name = name?;
    atts.iter().enumerate().find(|(_, a)| a.name == name)
}

// ---- opening and closing --------------------------------------------------------------------

/// `nc_create`: an archive is not created here, `NC_EPERM`.
///
/// # Safety
///
/// It reads and writes through no pointer: nothing to guarantee beyond the module's rule 6
/// (it is `unsafe` for the table's type).
unsafe extern "C" fn create<const L: usize>(
    _: *const c_char,
    _: c_int,
    _: Sz,
    _: c_int,
    _: *mut Sz,
    _: *mut c_void,
    _: *const Table,
    _: c_int,
) -> c_int {
    NC_EPERM
}

/// `nc_open`, `nc__open`, `nc_open_mem` and `nc_open_memio` of an archive: opens it
/// read-only and keeps it under the `ncid` netCDF-C gave it (library slot `L`).
///
/// # Safety
///
/// `path` is NULL or a NUL-terminated string (the module's rule 3). When `mode` has
/// `NC_INMEMORY`, `parameters` is NULL or points to a valid, aligned `NC_memio` (netCDF-C
/// passes that of `nc_open_mem` or `nc_open_memio`) whose `memory` is NULL or valid for reads
/// of its `size` bytes, unchanged during the call; otherwise `parameters` is not read. The
/// other pointers are not read.
unsafe extern "C" fn open<const L: usize>(
    path: *const c_char,
    mode: c_int,
    _: c_int,
    _: *mut Sz,
    parameters: *mut c_void,
    _: *const Table,
    ncid: c_int,
) -> c_int {
    use std::os::unix::ffi::OsStrExt;
    guard(|| {
        // SAFETY: `path` is NULL or a NUL-terminated string that outlives the call (this function's
        // contract); the bytes are used only during it.
        let Some(p) = (unsafe { cstr(path) }) else {
            return NC_EINVAL;
        };
        let p = std::path::Path::new(std::ffi::OsStr::from_bytes(p));
        if mode & NC_WRITE != 0 {
            eprintln!(
                "nc3pack: {}: an nc3pack archive opens read-only (unpack it with `nc3pack unpack` to write)",
                p.display()
            );
            return NC_EPERM;
        }
        let opened = if mode & NC_INMEMORY != 0 {
            // nc_open_mem and nc_open_memio: the archive is the caller's buffer, whatever file
            // the name may also name on disk.
            if parameters.is_null() {
                eprintln!(
                    "nc3pack: {}: an in-memory open without its memory",
                    p.display()
                );
                return NC_EINMEMORY;
            }
            // SAFETY: with NC_INMEMORY, a non-NULL `parameters` points to a valid, aligned
            // `NC_memio` (this function's contract; `NcMemio` has its layout), not written during
            // the call; the reference ends with it.
            let memio = unsafe { &*parameters.cast::<NcMemio>() };
            if memio.memory.is_null() {
                eprintln!(
                    "nc3pack: {}: an in-memory open without its memory",
                    p.display()
                );
                return NC_EINMEMORY;
            }
            // SAFETY: a non-NULL `memory` is valid for reads of `size` bytes, unchanged during the
            // call (this function's contract); the bytes are copied before it returns.
            let bytes =
                unsafe { std::slice::from_raw_parts(memio.memory.cast::<u8>(), memio.size) };
            let name = format!("{} (in memory)", p.display());
            OpenFile::from_memory(bytes.to_vec(), name.as_ref())
        } else {
            // NC_DISKLESS and NC_MMAP read the file at the path, as a plain open does: an
            // archive is read-only, so there is nothing a copy in memory would change.
            OpenFile::open(&file_path(p))
        };
        match opened {
            Ok(mut f) => {
                f.erange = erange(L);
                // As the caller gave them: netCDF-C 4.9 adds NC_NETCDF4 on its way to a
                // user-defined format (4.10 does not), which no netCDF-3 original reports.
                f.open_flags = mode & !(NC_NETCDF4 | NC_UDF0 | NC_UDF1);
                file::insert((L, ncid), f);
                NC_NOERR
            }
            Err(e) => {
                eprintln!("nc3pack: {e}");
                NC_ENOTNC
            }
        }
    })
}

/// The file a path netCDF-C hands over names: the path itself, or the file of a `file://` URL.
/// CDO passes `file:///data/x.nc3z#mode=udf0` to make netCDF-C skip its own magic check, and
/// netCDF-C hands the URL on with its fragment (`...#mode=udf0,udf0`): the fragment is cut, a
/// `localhost` host dropped and `%XX` escapes decoded.
fn file_path(p: &std::path::Path) -> std::path::PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let b = p.as_os_str().as_bytes();
    let Some(rest) = b
        .get(..7)
        .filter(|s| s.eq_ignore_ascii_case(b"file://"))
        .map(|_| &b[7..])
    else {
        return p.to_path_buf();
    };
    let rest = rest.strip_prefix(b"localhost").unwrap_or(rest);
    let rest = &rest[..rest.iter().position(|&c| c == b'#').unwrap_or(rest.len())];
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(rest.len());
    let mut i = 0;
    while i < rest.len() {
        let decoded = (rest[i] == b'%')
            .then(|| Some(hex(*rest.get(i + 1)?)? * 16 + hex(*rest.get(i + 2)?)?))
            .flatten();
        match decoded {
            Some(c) => {
                out.push(c);
                i += 3;
            }
            None => {
                out.push(rest[i]);
                i += 1;
            }
        }
    }
    std::ffi::OsStr::from_bytes(&out).into()
}

/// `nc_close`: forgets the file.
///
/// # Safety
///
/// It reads and writes through no pointer (the `void *` of `nc_close_memio` is ignored):
/// nothing to guarantee beyond the module's rule 6.
unsafe extern "C" fn close<const L: usize>(ncid: c_int, _: *mut c_void) -> c_int {
    guard(|| {
        if file::remove((L, ncid)) {
            NC_NOERR
        } else {
            NC_EBADID
        }
    })
}

/// `nc_abort`: forgets the file, as `nc_close`.
///
/// # Safety
///
/// It reads and writes through no pointer: nothing to guarantee beyond the module's rule 6
/// (it is `unsafe` for the table's type).
unsafe extern "C" fn abort<const L: usize>(ncid: c_int) -> c_int {
    // SAFETY: `close` dereferences no pointer; its second argument is ignored.
    unsafe { close::<L>(ncid, std::ptr::null_mut()) }
}

/// `nc_sync`: nothing to write, `NC_NOERR`.
///
/// # Safety
///
/// It reads and writes through no pointer: nothing to guarantee beyond the module's rule 6
/// (it is `unsafe` for the table's type).
unsafe extern "C" fn sync<const L: usize>(ncid: c_int) -> c_int {
    with::<L>(ncid, |_| NC_NOERR)
}

/// `nc_show_metadata`: nothing to show, `NC_NOERR`.
///
/// # Safety
///
/// It reads and writes through no pointer: nothing to guarantee beyond the module's rule 6
/// (it is `unsafe` for the table's type).
unsafe extern "C" fn show_metadata<const L: usize>(ncid: c_int) -> c_int {
    with::<L>(ncid, |_| NC_NOERR)
}

// ---- the file and its dimensions ------------------------------------------------------------

/// `nc_inq_format`: the original file's format into `f`.
///
/// # Safety
///
/// `f` is NULL or an `int` out-parameter (the module's rule 1).
unsafe extern "C" fn inq_format<const L: usize>(ncid: c_int, f: *mut c_int) -> c_int {
    with::<L>(ncid, |fl| {
        // SAFETY: `f` is NULL or an out-parameter valid for the write (this function's `# Safety`).
        unsafe { put(f, fl.format()) };
        NC_NOERR
    })
}

/// `nc_inq_format_extended`: `NC_FORMATX_NC3` into `f`, the original's mode flags into `m`.
///
/// # Safety
///
/// `f` and `m` are each NULL or an `int` out-parameter (the module's rule 1).
unsafe extern "C" fn inq_format_extended<const L: usize>(
    ncid: c_int,
    f: *mut c_int,
    m: *mut c_int,
) -> c_int {
    with::<L>(ncid, |fl| {
        // SAFETY: `f` and `m` are each NULL or an out-parameter valid for the write (this
        // function's `# Safety`).
        unsafe {
            put(f, NC_FORMATX_NC3);
            put(m, fl.mode());
        }
        NC_NOERR
    })
}

/// `nc_inq`: the numbers of dimensions, variables and global attributes, and the record
/// dimension's id (-1: none).
///
/// # Safety
///
/// `nd`, `nv`, `na` and `ud` are each NULL or an `int` out-parameter (the module's rule 1).
unsafe extern "C" fn inq<const L: usize>(
    ncid: c_int,
    nd: *mut c_int,
    nv: *mut c_int,
    na: *mut c_int,
    ud: *mut c_int,
) -> c_int {
    with::<L>(ncid, |fl| {
        // SAFETY: `nd`, `nv`, `na` and `ud` are each NULL or an out-parameter valid for the write
        // (this function's `# Safety`).
        unsafe {
            put(nd, fl.dims.len() as c_int);
            put(nv, fl.vars.len() as c_int);
            put(na, fl.gatts.len() as c_int);
            put(ud, fl.unlim.map_or(-1, |u| u as c_int));
        }
        NC_NOERR
    })
}

/// `nc_inq_type` of a type netCDF-C does not answer itself: `NC_EBADTYPE`.
///
/// # Safety
///
/// It reads and writes through no pointer: nothing to guarantee beyond the module's rule 6
/// (it is `unsafe` for the table's type).
unsafe extern "C" fn inq_type<const L: usize>(
    ncid: c_int,
    _: c_int,
    _: *mut c_char,
    _: *mut Sz,
) -> c_int {
    // netCDF-C answers for the atomic types itself; anything else is no type of a classic file.
    with::<L>(ncid, |_| NC_EBADTYPE)
}

/// `nc_inq_dimid`: the id of the dimension named `name`.
///
/// # Safety
///
/// `name` is NULL or a NUL-terminated string (the module's rule 3); `id` is NULL or an `int`
/// out-parameter (rule 1).
unsafe extern "C" fn inq_dimid<const L: usize>(
    ncid: c_int,
    name: *const c_char,
    id: *mut c_int,
) -> c_int {
    with::<L>(ncid, |fl| {
        // SAFETY: `name` is NULL or a NUL-terminated string that outlives the call (this function's
        // `# Safety`); the bytes are used only during it.
        let name = unsafe { cstr(name) };
        match fl.dims.iter().position(|(n, _)| Some(&n[..]) == name) {
            Some(i) => {
                // SAFETY: `id` is NULL or an out-parameter valid for the write (this function's
                // `# Safety`).
                unsafe { put(id, i as c_int) };
                NC_NOERR
            }
            None => NC_EBADDIM,
        }
    })
}

/// `nc_inq_dim`: a dimension's name and length.
///
/// # Safety
///
/// `name` is NULL or a name buffer (the module's rule 2); `len` is NULL or a `size_t`
/// out-parameter (rule 1).
unsafe extern "C" fn inq_dim<const L: usize>(
    ncid: c_int,
    dimid: c_int,
    name: *mut c_char,
    len: *mut Sz,
) -> c_int {
    with::<L>(ncid, |fl| {
        match usize::try_from(dimid).ok().and_then(|i| fl.dims.get(i)) {
            Some((n, l)) => {
                // SAFETY: `len` is NULL or an out-parameter valid for the write; `name` is NULL or
                // a name buffer (this function's `# Safety`).
                unsafe {
                    put_name(name, n);
                    put(len, *l as Sz);
                }
                NC_NOERR
            }
            None => NC_EBADDIM,
        }
    })
}

/// `nc_inq_unlimdim`: the record dimension's id (-1: none).
///
/// # Safety
///
/// `id` is NULL or an `int` out-parameter (the module's rule 1).
unsafe extern "C" fn inq_unlimdim<const L: usize>(ncid: c_int, id: *mut c_int) -> c_int {
    with::<L>(ncid, |fl| {
        // SAFETY: `id` is NULL or an out-parameter valid for the write (this function's
        // `# Safety`).
        unsafe { put(id, fl.unlim.map_or(-1, |u| u as c_int)) };
        NC_NOERR
    })
}

/// `nc_inq_unlimdims`: how many record dimensions (0 or 1) and their ids.
///
/// # Safety
///
/// `n` is NULL or an `int` out-parameter (the module's rule 1); `ids` is NULL or valid for a
/// write of one `int` (it gets at most one: a classic file has at most one record dimension).
unsafe extern "C" fn inq_unlimdims<const L: usize>(
    ncid: c_int,
    n: *mut c_int,
    ids: *mut c_int,
) -> c_int {
    with::<L>(ncid, |fl| {
        // SAFETY: `n` is NULL or an out-parameter valid for the write, `ids` NULL or valid for one
        // `int`, all it gets (this function's `# Safety`).
        unsafe {
            match fl.unlim {
                Some(u) => {
                    put(n, 1);
                    put(ids, u as c_int);
                }
                None => put(n, 0),
            }
        }
        NC_NOERR
    })
}

/// `nc_inq_dimids`: the number of dimensions and their ids, `0..n`.
///
/// # Safety
///
/// `n` is NULL or an `int` out-parameter (the module's rule 1); `ids` is NULL or valid and
/// aligned for writes of as many `int`s as the file has dimensions (rule 4).
unsafe extern "C" fn inq_dimids<const L: usize>(
    ncid: c_int,
    n: *mut c_int,
    ids: *mut c_int,
    _: c_int,
) -> c_int {
    with::<L>(ncid, |fl| {
        // SAFETY: `n` is NULL or an out-parameter valid for the write (this function's `# Safety`).
        unsafe { put(n, fl.dims.len() as c_int) };
        if !ids.is_null() {
            for i in 0..fl.dims.len() {
                // SAFETY: not NULL, so valid and aligned for as many `int`s as the file has
                // dimensions (this function's `# Safety`), and `i` is below that.
                unsafe { ids.add(i).write(i as c_int) };
            }
        }
        NC_NOERR
    })
}

/// `nc_inq_varids`: the number of variables and their ids, `0..n`.
///
/// # Safety
///
/// `n` is NULL or an `int` out-parameter (the module's rule 1); `ids` is NULL or valid and
/// aligned for writes of as many `int`s as the file has variables (rule 4).
unsafe extern "C" fn inq_varids<const L: usize>(
    ncid: c_int,
    n: *mut c_int,
    ids: *mut c_int,
) -> c_int {
    with::<L>(ncid, |fl| {
        // SAFETY: `n` is NULL or an out-parameter valid for the write (this function's `# Safety`).
        unsafe { put(n, fl.vars.len() as c_int) };
        if !ids.is_null() {
            for i in 0..fl.vars.len() {
                // SAFETY: not NULL, so valid and aligned for as many `int`s as the file has
                // variables (this function's `# Safety`), and `i` is below that.
                unsafe { ids.add(i).write(i as c_int) };
            }
        }
        NC_NOERR
    })
}

// ---- groups and types: a classic file has the root group and the atomic types ----------------

/// `nc_inq_ncid`: a classic file's only group is the file itself.
///
/// # Safety
///
/// `grp` is NULL or an `int` out-parameter (the module's rule 1); the name is not read.
unsafe extern "C" fn inq_ncid<const L: usize>(
    ncid: c_int,
    _: *const c_char,
    grp: *mut c_int,
) -> c_int {
    with::<L>(ncid, |_| {
        // SAFETY: `grp` is NULL or an out-parameter valid for the write (this function's
        // `# Safety`).
        unsafe { put(grp, ncid) };
        NC_NOERR
    })
}

/// `nc_inq_grps`: no groups below the root.
///
/// # Safety
///
/// `n` is NULL or an `int` out-parameter (the module's rule 1); the ids are not written.
unsafe extern "C" fn inq_grps<const L: usize>(ncid: c_int, n: *mut c_int, _: *mut c_int) -> c_int {
    with::<L>(ncid, |_| {
        // SAFETY: `n` is NULL or an out-parameter valid for the write (this function's `# Safety`).
        unsafe { put(n, 0) };
        NC_NOERR
    })
}

/// `nc_inq_grpname`: the root group's name, `/`.
///
/// # Safety
///
/// `name` is NULL or valid for writes of 2 bytes (`/` and its NUL; a name buffer of the
/// module's rule 2 is).
unsafe extern "C" fn inq_grpname<const L: usize>(ncid: c_int, name: *mut c_char) -> c_int {
    with::<L>(ncid, |_| {
        // SAFETY: `name` is NULL or valid for writes of 2 bytes (this function's `# Safety`),
        // all `put_name` writes of `/`.
        unsafe { put_name(name, b"/") };
        NC_NOERR
    })
}

/// `nc_inq_grpname_full`: the root group's full name, `/`, and its length.
///
/// # Safety
///
/// `len` is NULL or a `size_t` out-parameter (the module's rule 1); `name` is NULL or valid
/// for writes of 2 bytes (`/` and its NUL: the length this call gives plus one).
unsafe extern "C" fn inq_grpname_full<const L: usize>(
    ncid: c_int,
    len: *mut Sz,
    name: *mut c_char,
) -> c_int {
    with::<L>(ncid, |_| {
        // SAFETY: `len` is NULL or an out-parameter valid for the write; `name` is NULL or valid
        // for writes of 2 bytes, all `put_name` writes of `/` (this function's `# Safety`).
        unsafe {
            put(len, 1);
            put_name(name, b"/");
        }
        NC_NOERR
    })
}

/// `nc_inq_grp_parent`: the root group has none, `NC_ENOGRP`.
///
/// # Safety
///
/// It reads and writes through no pointer: nothing to guarantee beyond the module's rule 6
/// (it is `unsafe` for the table's type).
unsafe extern "C" fn inq_grp_parent<const L: usize>(ncid: c_int, _: *mut c_int) -> c_int {
    with::<L>(ncid, |_| NC_ENOGRP)
}

/// `nc_inq_grp_full_ncid`: the file itself for `/`, else `NC_ENOGRP`.
///
/// # Safety
///
/// `name` is NULL or a NUL-terminated string (the module's rule 3); `grp` is NULL or an
/// `int` out-parameter (rule 1).
unsafe extern "C" fn inq_grp_full_ncid<const L: usize>(
    ncid: c_int,
    name: *const c_char,
    grp: *mut c_int,
) -> c_int {
    with::<L>(ncid, |_| {
        // SAFETY: `name` is NULL or a NUL-terminated string that outlives the call (this function's
        // `# Safety`); the bytes are used only during it.
        if unsafe { cstr(name) } == Some(b"/") {
            // SAFETY: `grp` is NULL or an out-parameter valid for the write (this function's
            // `# Safety`).
            unsafe { put(grp, ncid) };
            NC_NOERR
        } else {
            NC_ENOGRP
        }
    })
}

/// `nc_inq_typeids`: a classic file defines no types.
///
/// # Safety
///
/// `n` is NULL or an `int` out-parameter (the module's rule 1); the ids are not written.
unsafe extern "C" fn inq_typeids<const L: usize>(
    ncid: c_int,
    n: *mut c_int,
    _: *mut c_int,
) -> c_int {
    with::<L>(ncid, |_| {
        // SAFETY: `n` is NULL or an out-parameter valid for the write (this function's `# Safety`).
        unsafe { put(n, 0) };
        NC_NOERR
    })
}

/// `nc_inq_type_equal` of two atomic types.
///
/// # Safety
///
/// `eq` is NULL or an `int` out-parameter (the module's rule 1).
unsafe extern "C" fn inq_type_equal<const L: usize>(
    _: c_int,
    t1: c_int,
    _: c_int,
    t2: c_int,
    eq: *mut c_int,
) -> c_int {
    guard(|| {
        let atomic = |t: c_int| (1..=NC_MAX_ATOMIC_TYPE).contains(&t);
        if !atomic(t1) || !atomic(t2) {
            return NC_EBADTYPE;
        }
        // SAFETY: `eq` is NULL or an out-parameter valid for the write (this function's
        // `# Safety`).
        unsafe { put(eq, (t1 == t2) as c_int) };
        NC_NOERR
    })
}

/// `nc_inq_typeid`: the id of an atomic type by its CDL name.
///
/// # Safety
///
/// `name` is NULL or a NUL-terminated string (the module's rule 3); `id` is NULL or an `int`
/// out-parameter (rule 1).
unsafe extern "C" fn inq_typeid<const L: usize>(
    ncid: c_int,
    name: *const c_char,
    id: *mut c_int,
) -> c_int {
    const NAMES: [&[u8]; 12] = [
        b"byte", b"char", b"short", b"int", b"float", b"double", b"ubyte", b"ushort", b"uint",
        b"int64", b"uint64", b"string",
    ];
    with::<L>(ncid, |_| {
        // SAFETY: `name` is NULL or a NUL-terminated string that outlives the call (this function's
        // `# Safety`); the bytes are used only during it.
        let name = unsafe { cstr(name) };
        match NAMES.iter().position(|n| Some(*n) == name) {
            Some(i) => {
                // SAFETY: `id` is NULL or an out-parameter valid for the write (this function's
                // `# Safety`).
                unsafe { put(id, i as c_int + 1) };
                NC_NOERR
            }
            None => NC_EBADTYPE,
        }
    })
}

/// `nc_inq_user_type`: a classic file has none, `NC_ENOTNC4`.
///
/// # Safety
///
/// It reads and writes through no pointer: nothing to guarantee beyond the module's rule 6
/// (it is `unsafe` for the table's type).
unsafe extern "C" fn inq_user_type<const L: usize>(
    ncid: c_int,
    _: c_int,
    _: *mut c_char,
    _: *mut Sz,
    _: *mut c_int,
    _: *mut Sz,
    _: *mut c_int,
) -> c_int {
    with::<L>(ncid, |_| NC_ENOTNC4)
}

/// `nc_inq_compound_field`: a classic file has no compound types, `NC_ENOTNC4`.
///
/// # Safety
///
/// It reads and writes through no pointer: nothing to guarantee beyond the module's rule 6
/// (it is `unsafe` for the table's type).
unsafe extern "C" fn inq_compound_field<const L: usize>(
    ncid: c_int,
    _: c_int,
    _: c_int,
    _: *mut c_char,
    _: *mut Sz,
    _: *mut c_int,
    _: *mut c_int,
    _: *mut c_int,
) -> c_int {
    with::<L>(ncid, |_| NC_ENOTNC4)
}

/// `nc_inq_compound_fieldindex`: a classic file has no compound types, `NC_ENOTNC4`.
///
/// # Safety
///
/// It reads and writes through no pointer: nothing to guarantee beyond the module's rule 6
/// (it is `unsafe` for the table's type).
unsafe extern "C" fn inq_compound_fieldindex<const L: usize>(
    ncid: c_int,
    _: c_int,
    _: *const c_char,
    _: *mut c_int,
) -> c_int {
    with::<L>(ncid, |_| NC_ENOTNC4)
}

/// `nc_get_vlen_element`: a classic file has no vlen types, `NC_ENOTNC4`.
///
/// # Safety
///
/// It reads and writes through no pointer: nothing to guarantee beyond the module's rule 6
/// (it is `unsafe` for the table's type).
unsafe extern "C" fn get_vlen_element<const L: usize>(
    ncid: c_int,
    _: c_int,
    _: *const c_void,
    _: *mut Sz,
    _: *mut c_void,
) -> c_int {
    with::<L>(ncid, |_| NC_ENOTNC4)
}

/// `nc_inq_enum_member`: a classic file has no enum types, `NC_ENOTNC4`.
///
/// # Safety
///
/// It reads and writes through no pointer: nothing to guarantee beyond the module's rule 6
/// (it is `unsafe` for the table's type).
unsafe extern "C" fn inq_enum_member<const L: usize>(
    ncid: c_int,
    _: c_int,
    _: c_int,
    _: *mut c_char,
    _: *mut c_void,
) -> c_int {
    with::<L>(ncid, |_| NC_ENOTNC4)
}

/// `nc_inq_enum_ident`: a classic file has no enum types, `NC_ENOTNC4`.
///
/// # Safety
///
/// It reads and writes through no pointer: nothing to guarantee beyond the module's rule 6
/// (it is `unsafe` for the table's type).
unsafe extern "C" fn inq_enum_ident<const L: usize>(
    ncid: c_int,
    _: c_int,
    _: c_longlong,
    _: *mut c_char,
) -> c_int {
    with::<L>(ncid, |_| NC_ENOTNC4)
}

/// `nc_var_par_access`: no parallel access, `NC_ENOTNC4`.
///
/// # Safety
///
/// It reads and writes through no pointer: nothing to guarantee beyond the module's rule 6
/// (it is `unsafe` for the table's type).
unsafe extern "C" fn var_par_access<const L: usize>(ncid: c_int, _: c_int, _: c_int) -> c_int {
    with::<L>(ncid, |_| NC_ENOTNC4)
}

/// `nc_get_var_chunk_cache`: no chunks, `NC_ENOTNC4`.
///
/// # Safety
///
/// It reads and writes through no pointer: nothing to guarantee beyond the module's rule 6
/// (it is `unsafe` for the table's type).
unsafe extern "C" fn get_var_chunk_cache<const L: usize>(
    ncid: c_int,
    _: c_int,
    _: *mut Sz,
    _: *mut Sz,
    _: *mut f32,
) -> c_int {
    with::<L>(ncid, |_| NC_ENOTNC4)
}

/// `nc_inq_var_filter_ids`: no filters.
///
/// # Safety
///
/// `n` is NULL or a `size_t` out-parameter (the module's rule 1); the ids are not written.
unsafe extern "C" fn inq_var_filter_ids<const L: usize>(
    ncid: c_int,
    _: c_int,
    n: *mut Sz,
    _: *mut c_uint,
) -> c_int {
    with::<L>(ncid, |_| {
        // SAFETY: `n` is NULL or an out-parameter valid for the write (this function's `# Safety`).
        unsafe { put(n, 0) };
        NC_NOERR
    })
}

/// `nc_inq_var_filter_info`: no filters, `NC_ENOFILTER`.
///
/// # Safety
///
/// It reads and writes through no pointer: nothing to guarantee beyond the module's rule 6
/// (it is `unsafe` for the table's type).
unsafe extern "C" fn inq_var_filter_info<const L: usize>(
    ncid: c_int,
    _: c_int,
    _: c_uint,
    _: *mut Sz,
    _: *mut c_uint,
) -> c_int {
    with::<L>(ncid, |_| NC_ENOFILTER)
}

/// `nc_inq_var_quantize`: no quantization, `NC_ENOTNC4`.
///
/// # Safety
///
/// It reads and writes through no pointer: nothing to guarantee beyond the module's rule 6
/// (it is `unsafe` for the table's type).
unsafe extern "C" fn inq_var_quantize<const L: usize>(
    ncid: c_int,
    _: c_int,
    _: *mut c_int,
    _: *mut c_int,
) -> c_int {
    with::<L>(ncid, |_| NC_ENOTNC4)
}

/// `nc_inq_filter_avail`: no filters, `NC_ENOFILTER`.
///
/// # Safety
///
/// It reads and writes through no pointer: nothing to guarantee beyond the module's rule 6
/// (it is `unsafe` for the table's type).
unsafe extern "C" fn inq_filter_avail<const L: usize>(ncid: c_int, _: c_uint) -> c_int {
    with::<L>(ncid, |_| NC_ENOFILTER)
}

// ---- attributes ------------------------------------------------------------------------------

/// `nc_inq_att`: an attribute's type and number of values.
///
/// # Safety
///
/// `name` is NULL or a NUL-terminated string (the module's rule 3); `t` is NULL or an `int`
/// out-parameter and `len` NULL or a `size_t` one (rule 1).
unsafe extern "C" fn inq_att<const L: usize>(
    ncid: c_int,
    varid: c_int,
    name: *const c_char,
    t: *mut c_int,
    len: *mut Sz,
) -> c_int {
    // SAFETY: `name` is NULL or a NUL-terminated string that outlives the call (this function's
    // `# Safety`); the bytes are used only during it.
    let name = unsafe { cstr(name) };
    with::<L>(ncid, |fl| match fl.atts(varid) {
        Err(e) => e,
        Ok(atts) => match find_att(atts, name) {
            Some((_, a)) => {
                // SAFETY: `t` and `len` are each NULL or an out-parameter valid for the write (this
                // function's `# Safety`).
                unsafe {
                    put(t, a.xtype.code() as c_int);
                    put(len, a.len);
                }
                NC_NOERR
            }
            None => NC_ENOTATT,
        },
    })
}

/// `nc_inq_attid`: an attribute's number.
///
/// # Safety
///
/// `name` is NULL or a NUL-terminated string (the module's rule 3); `id` is NULL or an `int`
/// out-parameter (rule 1).
unsafe extern "C" fn inq_attid<const L: usize>(
    ncid: c_int,
    varid: c_int,
    name: *const c_char,
    id: *mut c_int,
) -> c_int {
    // SAFETY: `name` is NULL or a NUL-terminated string that outlives the call (this function's
    // `# Safety`); the bytes are used only during it.
    let name = unsafe { cstr(name) };
    with::<L>(ncid, |fl| match fl.atts(varid) {
        Err(e) => e,
        Ok(atts) => match find_att(atts, name) {
            Some((i, _)) => {
                // SAFETY: `id` is NULL or an out-parameter valid for the write (this function's
                // `# Safety`).
                unsafe { put(id, i as c_int) };
                NC_NOERR
            }
            None => NC_ENOTATT,
        },
    })
}

/// `nc_inq_attname`: the name of attribute number `num`.
///
/// # Safety
///
/// `name` is NULL or a name buffer (the module's rule 2).
unsafe extern "C" fn inq_attname<const L: usize>(
    ncid: c_int,
    varid: c_int,
    num: c_int,
    name: *mut c_char,
) -> c_int {
    with::<L>(ncid, |fl| match fl.atts(varid) {
        Err(e) => e,
        Ok(atts) => match usize::try_from(num).ok().and_then(|i| atts.get(i)) {
            Some(a) => {
                // SAFETY: `name` is NULL or a name buffer (this function's `# Safety`).
                unsafe { put_name(name, &a.name) };
                NC_NOERR
            }
            None => NC_ENOTATT,
        },
    })
}

/// An attribute's values as memory type `memtype` (`NC_NAT`: its own type) into `value`.
///
/// # Safety
///
/// `value` is NULL, or valid for writes of `a.len` values of the memory type (`a.len` times
/// its size in bytes; no alignment needed: the values are written as bytes).
unsafe fn att_values(fl: &OpenFile, a: &Att, memtype: c_int, value: *mut c_void) -> c_int {
    // netCDF-C answers an empty attribute before it looks at the types.
    if a.len == 0 {
        return NC_NOERR;
    }
    let mem = match Mem::for_read(memtype, a.xtype) {
        Ok(m) => m,
        Err(e) => return e,
    };
    if value.is_null() {
        return NC_NOERR;
    }
    // SAFETY: not NULL, so valid for writes of `a.len` values of `mem` (this function's contract),
    // which no other thread touches during the call (the module's rule 6); as `MaybeUninit<u8>`
    // it may be uninitialised, and the conversion only writes it.
    let out = unsafe {
        std::slice::from_raw_parts_mut(value.cast::<MaybeUninit<u8>>(), a.len * mem.size())
    };
    // As for variables, CDF-1 and CDF-2 read `byte` as `unsigned char` unchecked.
    let cdf5 = fl.variant == nc3pack::nc3::Variant::Cdf5;
    convert_uninit(a.xtype, &a.be, mem, out, !cdf5, fl.erange)
}

/// `nc_get_att` (and the typed `nc_get_att_*`): an attribute's values as `memtype`.
///
/// # Safety
///
/// `name` is NULL or a NUL-terminated string (the module's rule 3); `value` is NULL or valid
/// for writes of all the attribute's values in the memory type (`NC_NAT`: its own type), the
/// number `nc_inq_attlen` gives (rule 5); no alignment is needed, they are written as bytes.
unsafe extern "C" fn get_att<const L: usize>(
    ncid: c_int,
    varid: c_int,
    name: *const c_char,
    value: *mut c_void,
    memtype: c_int,
) -> c_int {
    // SAFETY: `name` is NULL or a NUL-terminated string that outlives the call (this function's
    // `# Safety`); the bytes are used only during it.
    let name = unsafe { cstr(name) };
    with::<L>(ncid, |fl| match fl.atts(varid) {
        Err(e) => e,
        Ok(atts) => match find_att(atts, name) {
            // SAFETY: `value` is NULL or valid for writes of the attribute's values in the memory
            // type (this function's `# Safety`), what `att_values` needs.
            Some((_, a)) => unsafe { att_values(fl, a, memtype, value) },
            None => NC_ENOTATT,
        },
    })
}

// ---- variables -------------------------------------------------------------------------------

/// `nc_inq_varid`: the id of the variable named `name`.
///
/// # Safety
///
/// `name` is NULL or a NUL-terminated string (the module's rule 3); `id` is NULL or an `int`
/// out-parameter (rule 1).
unsafe extern "C" fn inq_varid<const L: usize>(
    ncid: c_int,
    name: *const c_char,
    id: *mut c_int,
) -> c_int {
    with::<L>(ncid, |fl| {
        // SAFETY: `name` is NULL or a NUL-terminated string that outlives the call (this function's
        // `# Safety`); the bytes are used only during it.
        let name = unsafe { cstr(name) };
        match fl.vars.iter().position(|v| Some(&v.name[..]) == name) {
            Some(i) => {
                // SAFETY: `id` is NULL or an out-parameter valid for the write (this function's
                // `# Safety`).
                unsafe { put(id, i as c_int) };
                NC_NOERR
            }
            None => NC_ENOTVAR,
        }
    })
}

/// The default fill value of a type, native order, as netCDF-C's classic library gives it.
fn default_fill(t: NcType) -> Vec<u8> {
    match t {
        NcType::Byte => (-127i8).to_ne_bytes().to_vec(),
        NcType::Char => vec![0],
        NcType::Short => (-32767i16).to_ne_bytes().to_vec(),
        NcType::Int => (-2147483647i32).to_ne_bytes().to_vec(),
        NcType::Float => 9.969_21e36_f32.to_ne_bytes().to_vec(),
        NcType::Double => 9.969_209_968_386_869e36_f64.to_ne_bytes().to_vec(),
        NcType::UByte => vec![255],
        NcType::UShort => 65535u16.to_ne_bytes().to_vec(),
        NcType::UInt => 4294967295u32.to_ne_bytes().to_vec(),
        NcType::Int64 => (-9223372036854775806i64).to_ne_bytes().to_vec(),
        NcType::UInt64 => 18446744073709551614u64.to_ne_bytes().to_vec(),
    }
}

/// `nc_inq_var` and its relatives: all that netCDF-C tells of a variable.
///
/// # Safety
///
/// `name` is NULL or a name buffer (the module's rule 2). `xtype`, `ndims`, `natts`,
/// `shuffle`, `deflate`, `deflate_level`, `fletcher32`, `contiguous` and `no_fill` are each
/// NULL or an `int` out-parameter (rule 1). `dimids` is NULL or valid and aligned for writes
/// of as many `int`s as the variable has dimensions (rule 4). `fill_value` is NULL or valid
/// for writes of one value of the variable's type (rule 5): a `_FillValue` attribute of
/// another type or length is refused with `NC_EBADTYPE` and nothing is written (netCDF-C's
/// classic library copies it as it is, past the end of such a buffer). `endian`, `id`,
/// `nparams`, `params` and the chunk sizes are only compared with NULL, never dereferenced.
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn inq_var_all<const L: usize>(
    ncid: c_int,
    varid: c_int,
    name: *mut c_char,
    xtype: *mut c_int,
    ndims: *mut c_int,
    dimids: *mut c_int,
    natts: *mut c_int,
    shuffle: *mut c_int,
    deflate: *mut c_int,
    deflate_level: *mut c_int,
    fletcher32: *mut c_int,
    contiguous: *mut c_int,
    _chunks: *mut Sz,
    no_fill: *mut c_int,
    fill_value: *mut c_void,
    endian: *mut c_int,
    id: *mut c_uint,
    nparams: *mut Sz,
    params: *mut c_uint,
) -> c_int {
    with::<L>(ncid, |fl| {
        let v = match fl.var(varid) {
            Ok(v) => v,
            Err(e) => return e,
        };
        // SAFETY: `xtype` and `ndims` are each NULL or an out-parameter valid for the write; `name`
        // is NULL or a name buffer (this function's `# Safety`).
        unsafe {
            put_name(name, &v.name);
            put(xtype, v.xtype.code() as c_int);
            put(ndims, v.dimids.len() as c_int);
        }
        if !dimids.is_null() {
            for (i, d) in v.dimids.iter().enumerate() {
                // SAFETY: not NULL, so valid and aligned for as many `int`s as the variable has
                // dimensions (this function's `# Safety`), and `i` is below that.
                unsafe { dimids.add(i).write(*d) };
            }
        }
        // SAFETY: `natts`, `shuffle`, `deflate`, `deflate_level`, `fletcher32`, `contiguous` and
        // `no_fill` are each NULL or an out-parameter valid for the write (this function's
        // `# Safety`).
        unsafe {
            put(natts, v.atts.len() as c_int);
            put(shuffle, 0);
            put(deflate, 0);
            put(deflate_level, 0);
            put(fletcher32, 0);
            put(contiguous, NC_CONTIGUOUS);
            put(no_fill, 0);
        }
        if !fill_value.is_null() {
            match find_att(&v.atts, Some(b"_FillValue")) {
                // A `_FillValue` of another type than the variable's, or not of one value, is
                // refused: the caller's buffer holds one value of the variable's type, and
                // netCDF-C's classic library, which copies the attribute as it is, would write
                // past it or another type into it.
                Some((_, a)) if a.xtype != v.xtype || a.len != 1 => return NC_EBADTYPE,
                Some((_, a)) => {
                    // SAFETY: `fill_value` is valid for writes of one value of the variable's
                    // type (this function's `# Safety`): the attribute's one value, of that type,
                    // what `NC_NAT` asks.
                    let s = unsafe { att_values(fl, a, NC_NAT, fill_value) };
                    if s != NC_NOERR {
                        return s;
                    }
                }
                None => {
                    let f = default_fill(v.xtype);
                    // SAFETY: without the attribute, `fill_value` is valid for writes of one value
                    // of the variable's type (this function's `# Safety`), `f.len()` bytes; `f` is
                    // the plugin's own, so they do not overlap; bytes need no alignment.
                    unsafe {
                        std::ptr::copy_nonoverlapping(f.as_ptr(), fill_value.cast::<u8>(), f.len())
                    };
                }
            }
        }
        // netCDF-C's classic library has no endianness or filters to tell.
        if !endian.is_null() || !id.is_null() || !nparams.is_null() || !params.is_null() {
            return NC_ENOTNC4;
        }
        NC_NOERR
    })
}

/// The start, count and stride of a read as slices of the variable's rank (NULL: netCDF-C's
/// defaults, which it normally fills in itself before calling the table).
///
/// # Safety
///
/// `start`, `count` and `stride` are each NULL, or valid and aligned for reads of as many
/// elements as variable `varid` has dimensions (the module's rule 4); when `varid` names no
/// variable none is read.
unsafe fn vectors(
    fl: &OpenFile,
    varid: c_int,
    start: *const Sz,
    count: *const Sz,
    stride: *const Pd,
) -> Result<Vectors, c_int> {
    let v = fl.var(varid)?;
    let r = v.shape.len();
    let st: Vec<Sz> = if start.is_null() {
        vec![0; r]
    } else {
        // SAFETY: not NULL, so `r` readable elements (this function's contract).
        unsafe { std::slice::from_raw_parts(start, r) }.to_vec()
    };
    let ct: Vec<Sz> = if count.is_null() {
        v.shape
            .iter()
            .zip(&st)
            .map(|(&l, &s)| (l as Sz).saturating_sub(s))
            .collect()
    } else {
        // SAFETY: not NULL, so `r` readable elements (this function's contract).
        unsafe { std::slice::from_raw_parts(count, r) }.to_vec()
    };
    let sd: Vec<Pd> = if stride.is_null() {
        vec![1; r]
    } else {
        // SAFETY: not NULL, so `r` readable elements (this function's contract).
        unsafe { std::slice::from_raw_parts(stride, r) }.to_vec()
    };
    Ok((st, ct, sd))
}

/// `nc_get_vara` (and `nc_get_var`, `nc_get_var1`, the typed ones): the values of a
/// selection as `memtype`.
///
/// # Safety
///
/// `start` and `count` are each NULL or valid and aligned for reads of as many elements as
/// the variable has dimensions (the module's rule 4). `value` is valid for writes of the
/// selection's values (the product of the counts) in the memory type (`NC_NAT`: the
/// variable's own; rule 5); no alignment is needed, they are written as bytes.
unsafe extern "C" fn get_vara<const L: usize>(
    ncid: c_int,
    varid: c_int,
    start: *const Sz,
    count: *const Sz,
    value: *mut c_void,
    memtype: c_int,
) -> c_int {
    with::<L>(ncid, |fl| {
        // The usual call (netCDF-C fills in start and count): the caller's vectors as they
        // are, no copies. A read without stride never looks at one.
        if !start.is_null() && !count.is_null() {
            let r = match fl.var_for_vara(varid) {
                Ok(v) => v.shape.len(),
                Err(e) => return e,
            };
            // SAFETY: `start` and `count` are not NULL, so valid and aligned for reads of `r`
            // elements, the variable's rank (this function's `# Safety`), and not written during
            // the call; `value` holds the selection's values in the memory type, what `get` needs
            // of its `dst`, and does not overlap them (the module's rule 6).
            return unsafe {
                let st = std::slice::from_raw_parts(start, r);
                let ct = std::slice::from_raw_parts(count, r);
                fl.get(varid, st, ct, &[], memtype, value.cast(), Call::Vara)
            };
        }
        // SAFETY: `start` and `count` are NULL or hold the variable's rank of elements (this
        // function's `# Safety`), what `vectors` needs; a NULL stride is not read.
        match unsafe { vectors(fl, varid, start, count, std::ptr::null()) } {
            Err(e) => e,
            // SAFETY: `value` holds the selection's values in the memory type (this function's
            // `# Safety`), what `get` needs of its `dst`.
            Ok((st, ct, sd)) => unsafe {
                fl.get(varid, &st, &ct, &sd, memtype, value.cast(), Call::Vara)
            },
        }
    })
}

/// `nc_get_vars`: the values of a strided selection as `memtype`.
///
/// # Safety
///
/// `start`, `count` and `stride` are each NULL or valid and aligned for reads of as many
/// elements as the variable has dimensions (the module's rule 4). `value` is valid for writes
/// of the selection's values (the product of the counts) in the memory type (`NC_NAT`: the
/// variable's own; rule 5); no alignment is needed, they are written as bytes.
unsafe extern "C" fn get_vars<const L: usize>(
    ncid: c_int,
    varid: c_int,
    start: *const Sz,
    count: *const Sz,
    stride: *const Pd,
    value: *mut c_void,
    memtype: c_int,
) -> c_int {
    with::<L>(ncid, |fl| {
        // SAFETY: `start`, `count` and `stride` are NULL or hold the variable's rank of elements
        // (this function's `# Safety`), what `vectors` needs.
        match unsafe { vectors(fl, varid, start, count, stride) } {
            Err(e) => e,
            // SAFETY: `value` holds the selection's values in the memory type (this function's
            // `# Safety`), what `get` needs of its `dst`.
            Ok((st, ct, sd)) => unsafe {
                fl.get(varid, &st, &ct, &sd, memtype, value.cast(), Call::Vars)
            },
        }
    })
}

/// `nc_get_varm`: the values of a strided selection as `memtype`, placed in memory by the
/// map `imap` (in values of the memory type; NULL: packed, as `nc_get_vars`).
///
/// # Safety
///
/// `start`, `count`, `stride` and `imap` are each NULL or valid and aligned for reads of as
/// many elements as the variable has dimensions (the module's rule 4). Without `imap`,
/// `value` is as for [`get_vars`]. With it, for every index `i` of the selection (`0 <= i[d]
/// < count[d]`), `value` offset by `(sum over d of i[d] * imap[d]) * size` bytes (`size`: the
/// memory type's) is valid for writes of `size` bytes (rule 5); a value not read (out of
/// range) leaves its place as it was.
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn get_varm<const L: usize>(
    ncid: c_int,
    varid: c_int,
    start: *const Sz,
    count: *const Sz,
    stride: *const Pd,
    imap: *const Pd,
    value: *mut c_void,
    memtype: c_int,
) -> c_int {
    with::<L>(ncid, |fl| {
        // SAFETY: `start`, `count` and `stride` are NULL or hold the variable's rank of elements
        // (this function's `# Safety`), what `vectors` needs.
        let (st, ct, sd) = match unsafe { vectors(fl, varid, start, count, stride) } {
            Ok(x) => x,
            Err(e) => return e,
        };
        // netCDF-C (NCDEFAULT_get_varm) checks every stride first; with all strides 1 and no
        // map it reads as nc_get_vara does (and checks so), else it checks each dimension's
        // start and count from the last to the first.
        let call = if imap.is_null() && sd.iter().all(|&s| s == 1) {
            Call::Vara
        } else {
            Call::Varm
        };
        if imap.is_null() || ct.is_empty() {
            // SAFETY: without a map (or for a scalar, where it has no entries), `value` holds the
            // selection's values packed in the memory type (this function's `# Safety`), what `get`
            // needs of its `dst`.
            return unsafe { fl.get(varid, &st, &ct, &sd, memtype, value.cast(), call) };
        }
        let plan = match fl.check(varid, &st, &ct, &sd, memtype, Call::Varm) {
            Ok(p) if p.empty => return NC_NOERR,
            Ok(p) => p,
            Err(e) => return e,
        };
        // Read the selection packed, then place each value where the map says.
        let n: usize = ct.iter().product();
        let ms = plan.mem.size();
        let r = ct.len();
        // SAFETY: `imap` is not NULL, so valid and aligned for reads of `r` elements, the
        // variable's rank (this function's `# Safety`), and not written during the call.
        let map = unsafe { std::slice::from_raw_parts(imap, r) };
        // The memory offset (in bytes) of each value, in the selection's order.
        let mut offsets = Vec::with_capacity(n);
        let mut idx = vec![0usize; r];
        for _ in 0..n {
            offsets.push((0..r).map(|d| idx[d] as isize * map[d]).sum::<isize>() * ms as isize);
            for d in (0..r).rev() {
                idx[d] += 1;
                if idx[d] < ct[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        let base = value.cast::<u8>();
        let mut tmp = vec![0u8; n * ms];
        // SAFETY: `check` passed this selection and answered `plan`; it is not empty; `tmp`
        // holds its `n` values of the plan's memory type, what `read_checked` needs of `dst`.
        let s = unsafe { fl.read_checked(varid, &st, &ct, &sd, plan, tmp.as_mut_ptr()) };
        // Whatever the read answers, the values it stored are placed in the selection's order
        // (netCDF-C stores those of a strided selection inside the variable, and those in
        // range, and answers the error of the others), so that of two values the map sends to
        // one place, the later one stored is what remains there; a value not stored leaves the
        // caller's memory as it was (never read: C may not have initialised it). When the read
        // did not store every value, a second read into bytes all ones tells which it stored:
        // those it gives the same (the first read's bytes not stored are all zeros).
        let stored: Option<Vec<bool>> = if s != NC_NOERR {
            let mut again = vec![0xFFu8; n * ms];
            // SAFETY: as the first read, into `again`, which has the same `n * ms` bytes.
            let s2 = unsafe { fl.read_checked(varid, &st, &ct, &sd, plan, again.as_mut_ptr()) };
            debug_assert_eq!(s, s2, "the same read answers the same");
            Some(
                tmp.chunks_exact(ms)
                    .zip(again.chunks_exact(ms))
                    .map(|(a, b)| a == b)
                    .collect(),
            )
        } else {
            None
        };
        for (k, &o) in offsets.iter().enumerate() {
            if stored.as_ref().is_some_and(|st| !st[k]) {
                continue;
            }
            // SAFETY: `o` is the byte offset of the `k`th index of the selection by the map,
            // where `value` is valid for writes of `ms` bytes (this function's `# Safety`; the
            // offset stays inside the caller's buffer); `tmp` has `n * ms` bytes and `k < n`;
            // `tmp` is the plugin's own, so they do not overlap; bytes need no alignment.
            unsafe { std::ptr::copy_nonoverlapping(tmp.as_ptr().add(k * ms), base.offset(o), ms) };
        }
        s
    })
}

// ---- writes and definitions: an archive is read-only -----------------------------------------

// Defining a dimension or variable, deleting an attribute, or leaving define mode, outside define mode: what
// netCDF-C's classic library answers for a file opened read-only.
/// `nc_enddef`: outside define mode, `NC_ENOTINDEFINE`.
///
/// # Safety
///
/// It reads and writes through no pointer: nothing to guarantee beyond the module's rule 6
/// (it is `unsafe` for the table's type).
unsafe extern "C" fn enddef<const L: usize>(ncid: c_int, _: Sz, _: Sz, _: Sz, _: Sz) -> c_int {
    with::<L>(ncid, |_| NC_ENOTINDEFINE)
}

/// `nc_del_att`: outside define mode, `NC_ENOTINDEFINE`.
///
/// # Safety
///
/// It reads and writes through no pointer: nothing to guarantee beyond the module's rule 6
/// (it is `unsafe` for the table's type).
unsafe extern "C" fn del_att<const L: usize>(ncid: c_int, _: c_int, _: *const c_char) -> c_int {
    with::<L>(ncid, |_| NC_ENOTINDEFINE)
}

/// `nc_def_dim`: outside define mode, `NC_ENOTINDEFINE`.
///
/// # Safety
///
/// It reads and writes through no pointer: nothing to guarantee beyond the module's rule 6
/// (it is `unsafe` for the table's type).
unsafe extern "C" fn def_dim<const L: usize>(
    ncid: c_int,
    _: *const c_char,
    _: Sz,
    _: *mut c_int,
) -> c_int {
    with::<L>(ncid, |_| NC_ENOTINDEFINE)
}

/// `nc_def_var`: outside define mode, `NC_ENOTINDEFINE`.
///
/// # Safety
///
/// It reads and writes through no pointer: nothing to guarantee beyond the module's rule 6
/// (it is `unsafe` for the table's type).
unsafe extern "C" fn def_var<const L: usize>(
    ncid: c_int,
    _: *const c_char,
    _: c_int,
    _: c_int,
    _: *const c_int,
    _: *mut c_int,
) -> c_int {
    with::<L>(ncid, |_| NC_ENOTINDEFINE)
}

/// `nc_redef`: the file is read-only, `NC_EPERM`.
///
/// # Safety
///
/// It reads and writes through no pointer: nothing to guarantee beyond the module's rule 6
/// (it is `unsafe` for the table's type).
unsafe extern "C" fn perm1<const L: usize>(ncid: c_int) -> c_int {
    with::<L>(ncid, |_| NC_EPERM)
}

/// Table functions of writes and definitions, each answering `NC_EPERM` for an open file.
macro_rules! perm {
    ($($name:ident($($t:ty),*);)*) => {$(
        #[doc = concat!("`nc_", stringify!($name), "`: the file is read-only, `NC_EPERM`.")]
        ///
        /// # Safety
        ///
        /// It reads and writes through no pointer: nothing to guarantee beyond the module's
        /// rule 6 (it is `unsafe` for the table's type).
        unsafe extern "C" fn $name<const L: usize>(ncid: c_int, $(_: $t),*) -> c_int {
            with::<L>(ncid, |_| NC_EPERM)
        }
    )*};
}

perm! {
    set_fill(c_int, *mut c_int);
    rename_dim(c_int, *const c_char);
    rename_att(c_int, *const c_char, *const c_char);
    put_att(c_int, *const c_char, c_int, Sz, *const c_void, c_int);
    rename_var(c_int, *const c_char);
    put_vara(c_int, *const Sz, *const Sz, *const c_void, c_int);
    put_vars(c_int, *const Sz, *const Sz, *const Pd, *const c_void, c_int);
    put_varm(c_int, *const Sz, *const Sz, *const Pd, *const Pd, *const c_void, c_int);
    def_var_fill(c_int, c_int, *const c_void);
    def_grp(*const c_char, *mut c_int);
    rename_grp(*const c_char);
    def_compound(Sz, *const c_char, *mut c_int);
    insert_compound(c_int, *const c_char, Sz, c_int);
    insert_array_compound(c_int, *const c_char, Sz, c_int, c_int, *const c_int);
    def_vlen(*const c_char, c_int, *mut c_int);
    put_vlen_element(c_int, *mut c_void, Sz, *const c_void);
    def_enum(c_int, *const c_char, *mut c_int);
    insert_enum(c_int, *const c_char, *const c_void);
    def_opaque(Sz, *const c_char, *mut c_int);
    def_var_deflate(c_int, c_int, c_int, c_int);
    def_var_fletcher32(c_int, c_int);
    def_var_chunking(c_int, c_int, *const Sz);
    def_var_endian(c_int, c_int);
    def_var_filter(c_int, c_uint, Sz, *const c_uint);
    set_var_chunk_cache(c_int, Sz, Sz, f32);
    def_var_quantize(c_int, c_int, c_int);
}

#[cfg(test)]
mod tests {
    use super::{inq_var_all, NC_EBADTYPE, NC_NOERR};
    use std::ffi::c_int;
    use std::path::Path;

    #[test]
    fn a_file_url_names_its_file() {
        let f = |s: &str| super::file_path(Path::new(s));
        assert_eq!(f("/d/x.nc3z"), Path::new("/d/x.nc3z"));
        assert_eq!(f("/d/a#mode=udf0"), Path::new("/d/a#mode=udf0"));
        assert_eq!(f("file:///d/x.nc3z#mode=udf0,udf0"), Path::new("/d/x.nc3z"));
        assert_eq!(
            f("FILE://localhost/d/x%20y%23.nc3z"),
            Path::new("/d/x y#.nc3z")
        );
        assert_eq!(f("file:///d/100%.nc3z"), Path::new("/d/100%.nc3z"));
    }

    /// A CDF-1 file of three float variables of 2 values whose `_FillValue` attributes are
    /// two floats (`two`), one double (`wide`) and one float, 7.5 (`ok`): bytes by hand, as
    /// netCDF-C's own writer refuses the first two.
    fn odd_fill_values() -> Vec<u8> {
        let mut h: Vec<u8> = Vec::new();
        let be = |h: &mut Vec<u8>, v: u32| h.extend_from_slice(&v.to_be_bytes());
        let name = |h: &mut Vec<u8>, s: &str| {
            h.extend_from_slice(&(s.len() as u32).to_be_bytes());
            h.extend_from_slice(s.as_bytes());
            h.resize(h.len().next_multiple_of(4), 0);
        };
        h.extend_from_slice(b"CDF\x01");
        be(&mut h, 0);
        for v in [0x0A, 1] {
            be(&mut h, v);
        }
        name(&mut h, "n");
        be(&mut h, 2);
        h.extend_from_slice(&[0; 8]);
        for v in [0x0B, 3] {
            be(&mut h, v);
        }
        let fills: [(&str, u32, Vec<u8>); 3] = [
            (
                "two",
                5,
                [1f32, 2.0].iter().flat_map(|x| x.to_be_bytes()).collect(),
            ),
            ("wide", 6, 3f64.to_be_bytes().to_vec()),
            ("ok", 5, 7.5f32.to_be_bytes().to_vec()),
        ];
        let mut begins = Vec::new();
        for (var, xtype, bytes) in &fills {
            name(&mut h, var);
            for v in [1, 0, 0x0C, 1] {
                be(&mut h, v);
            }
            name(&mut h, "_FillValue");
            be(&mut h, *xtype);
            be(
                &mut h,
                (bytes.len() / if *xtype == 5 { 4 } else { 8 }) as u32,
            );
            h.extend_from_slice(bytes);
            for v in [5, 8] {
                be(&mut h, v);
            }
            begins.push(h.len());
            be(&mut h, 0);
        }
        let data = h.len() as u32;
        for (k, at) in begins.into_iter().enumerate() {
            h[at..at + 4].copy_from_slice(&(data + 8 * k as u32).to_be_bytes());
        }
        h.extend((0..6).flat_map(|i| (i as f32).to_be_bytes()));
        h
    }

    #[test]
    fn a_fill_value_of_another_type_or_length_is_refused_not_copied() {
        let dir = std::env::temp_dir().join(format!("nc3pack-netcdf-fill-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (nc, z) = (dir.join("fills.nc"), dir.join("fills.nc3z"));
        std::fs::write(&nc, odd_fill_values()).unwrap();
        let opts = nc3pack::PackOptions::default()
            .with_threads(1)
            .with_force(true);
        nc3pack::pack_file(&nc, &z, &opts).unwrap();
        // An ncid netCDF-C does not give (the tests of this crate share the table).
        let ncid = 0x5a5a_0f11;
        crate::file::insert((0, ncid), crate::file::OpenFile::open(&z).unwrap());
        let null = std::ptr::null_mut::<c_int>();
        for (varid, want, value) in [
            (0, NC_EBADTYPE, None),
            (1, NC_EBADTYPE, None),
            (2, NC_NOERR, Some(7.5f32)),
        ] {
            // One float, then bytes that must stay as they are.
            let mut buf = [0x55u8; 16];
            // SAFETY: every pointer is NULL but `fill_value`, valid for writes of one float
            // (and more); the ncid is in the table.
            let r = unsafe {
                inq_var_all::<0>(
                    ncid,
                    varid,
                    std::ptr::null_mut(),
                    null,
                    null,
                    null,
                    null,
                    null,
                    null,
                    null,
                    null,
                    null,
                    std::ptr::null_mut(),
                    null,
                    buf.as_mut_ptr().cast(),
                    null,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            };
            assert_eq!(r, want, "variable {varid}");
            assert!(
                buf[4..].iter().all(|&b| b == 0x55),
                "variable {varid}: {buf:?}"
            );
            if let Some(v) = value {
                assert_eq!(buf[..4], v.to_ne_bytes(), "variable {varid}");
            }
        }
        assert!(crate::file::remove((0, ncid)));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn table_has_netcdf_c_layout() {
        // Two ints and 77 function pointers: 624 bytes on a 64-bit target, as netCDF-C's
        // struct NC_Dispatch (version 5) in include/netcdf_dispatch.h.
        assert_eq!(std::mem::size_of::<super::NcDispatch>(), 8 + 77 * 8);
        assert_eq!(std::mem::size_of::<super::NcDispatch>(), 624);
        assert_eq!(std::mem::offset_of!(super::NcDispatch, create), 8);
        assert_eq!(
            std::mem::offset_of!(super::NcDispatch, inq_filter_avail),
            8 + 76 * 8
        );
    }
}
