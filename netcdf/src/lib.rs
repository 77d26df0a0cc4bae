//! # nc3pack-netcdf: netCDF-C reads nc3pack archives
//!
//! `libnc3pack_netcdf.so` is a netCDF-C *user-defined format* (UDF) plugin: a dispatch table
//! that netCDF-C chooses for files that start with the archive magic (`\x89NC3Z\r\n\x1a`), so
//! that `ncdump`, NCO, `nccopy`, C and Fortran programs and netCDF4-python read an archive as
//! the original netCDF-3 file, block by block, through nc3pack's block cache. It is read-only.
//!
//! It does not link libnetcdf: it finds `nc_def_user_format` at run time in the netCDF-C
//! libraries the process has loaded (every copy, so a Python process with netCDF4-python's own
//! copy works too), gives each library a dispatch table of its own, and keeps its per-file
//! state itself, by library and ncid (each library numbers its files from 65536).
//!
//! Three ways in (docs/netcdf-plugin.md):
//! - netCDF-C 4.9.x: `LD_PRELOAD=/path/libnc3pack_netcdf.so ncdump a.nc3z` (an ELF
//!   constructor registers the format when the process has netCDF-C, silently nothing
//!   otherwise);
//! - netCDF-C 4.10 and later: an RC file entry (`NETCDF.UDF0.LIBRARY=/path/libnc3pack_netcdf.so`
//!   and `NETCDF.UDF0.INIT=nc3pack_netcdf_init`);
//! - Python: `nc3pack.netcdf4.register()` calls [`nc3pack_netcdf_register`].
//!
//! A program that loads netCDF-C only later (R's ncdf4, any interpreter) is served under
//! `LD_PRELOAD` too: the plugin registers at its first `nc_open` (the `late` module).
//!
//! ```no_run
//! // From Rust: register with every netCDF-C loaded in this process.
//! let n = nc3pack_netcdf::register_all()?;
//! println!("registered with {n} netCDF-C libraries");
//! # Ok::<(), nc3pack_netcdf::RegisterError>(())
//! ```

#![warn(missing_docs)]
// The plugin is C's to call: every unsafe operation sits in its own `unsafe {}` block with a
// `// SAFETY:` comment, and every `unsafe fn` says what its caller guarantees.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

pub mod convert;
pub mod dispatch;
mod file;
mod late;
pub mod nc;

use dispatch::{NcDispatch, MAX_LIBRARIES, TABLES};
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_void};

/// The magic netCDF-C matches archives by, with its terminating NUL (netCDF-C takes a C string).
const MAGIC_C: [u8; 9] = {
    let m = nc3pack::format::LEAD_MAGIC;
    [m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], 0]
};

/// The oldest netCDF-C with dispatch table version 5.
pub const MIN_VERSION: (u32, u32) = (4, 9);

/// Why the plugin could not register.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    /// No netCDF-C library is loaded in this process.
    #[error("no netCDF-C library (libnetcdf) is loaded in this process")]
    NoNetcdf,
    /// The loaded netCDF-C is older than 4.9 (another dispatch table version).
    #[error(
        "netCDF-C {version} is too old for the nc3pack plugin: it needs netCDF-C 4.9 or newer \
         (or run `nc3pack unpack` on the archive first)"
    )]
    TooOld {
        /// What `nc_inq_libvers` says.
        version: String,
    },
    /// More netCDF-C libraries in the process than the plugin has tables for.
    #[error(
        "more than {max} netCDF-C libraries are loaded in this process: the nc3pack plugin \
         serves the first {max} (netCDF-C {version} is not served)"
    )]
    TooMany {
        /// What `nc_inq_libvers` says of the library left out.
        version: String,
        /// How many the plugin serves.
        max: usize,
    },
    /// `nc_def_user_format` refused the table.
    #[error("netCDF-C {version} refused the nc3pack format (nc_def_user_format: error {code})")]
    Refused {
        /// What `nc_inq_libvers` says.
        version: String,
        /// netCDF-C's error code.
        code: c_int,
    },
}

/// `int nc_def_user_format(int mode_flag, NC_Dispatch *dispatch_table, char *magic_number)`
/// (netcdf.h, 4.9 and 4.10).
type DefUserFormat = unsafe extern "C" fn(c_int, *mut NcDispatch, *mut c_char) -> c_int;
/// `const char *nc_inq_libvers(void)` (netcdf.h).
type InqLibvers = unsafe extern "C" fn() -> *const c_char;
/// `int ncx_getn_int_schar(const void **xpp, size_t nelems, schar *tp)` (libsrc/ncx.h, the same
/// in 4.9 and 4.10): netCDF-C's conversion of `nelems` big-endian `int`s at `*xpp` to `signed
/// char`s at `tp`, which advances `*xpp`; exported by netCDF-C's shared library.
type GetnIntSchar = unsafe extern "C" fn(*mut *const c_void, usize, *mut i8) -> c_int;

/// A netCDF-C library loaded in this process.
struct Library {
    version: String,
    def: DefUserFormat,
    erange: convert::Erange,
}

/// What netCDF-C stores for a value out of range ([`convert::Erange`]): its `ERANGE_FILL`
/// build option. The library's own conversion says: an `int` 1000 read as `signed char` is
/// the C cast -24 without it, `NC_FILL_BYTE` (-127) with it. `getn` is that library's
/// `ncx_getn_int_schar`, or NULL when it does not export it: then the version decides, as the
/// builds go (4.10's CMake build turns the option on unless told not to; 4.9's CMake build
/// never applies it, its `config.h` defining no `ERANGE_FILL`).
///
/// # Safety
///
/// `getn` is NULL, or netCDF-C's `ncx_getn_int_schar` ([`GetnIntSchar`]), loaded during the call.
unsafe fn erange_rule(getn: *mut c_void, version: &str) -> convert::Erange {
    use convert::Erange;
    if !getn.is_null() {
        // SAFETY: not NULL, so netCDF-C's `ncx_getn_int_schar` (this function's contract), whose
        // prototype `int (const void **, size_t, schar *)` is `GetnIntSchar`; data and function
        // pointers convert as for `nc_inq_libvers` (`library_at`).
        let f = unsafe { std::mem::transmute::<*mut c_void, GetnIntSchar>(getn) };
        let be = 1000i32.to_be_bytes();
        let mut xp = be.as_ptr().cast::<c_void>();
        let mut out: i8 = 0;
        // SAFETY: netCDF-C's function reads `nelems` (1) external `int`s, 4 bytes, at `*xpp`
        // (`be`, 4 bytes), writes `nelems` `signed char`s at `tp` (`out`, one) and advances
        // `*xpp` (`xp`, a local pointer) past what it read; it keeps no pointer and touches
        // nothing else (a pure conversion, no state): callable at any time, from any thread.
        let status = unsafe { f(&mut xp, 1, &mut out) };
        match (status, out) {
            (nc::NC_ERANGE, -24) => return Erange::Plain,
            (nc::NC_ERANGE, -127) => return Erange::Fill,
            _ => {}
        }
    }
    if parse_version(version).is_some_and(|v| v >= (4, 10)) {
        Erange::Fill
    } else {
        Erange::Plain
    }
}

/// `major.minor` of an `nc_inq_libvers` string ("4.9.0 of ...").
///
/// ```
/// assert_eq!(nc3pack_netcdf::parse_version("4.9.0 of Jan  1 2023 $"), Some((4, 9)));
/// assert_eq!(nc3pack_netcdf::parse_version("4.10.1-development"), Some((4, 10)));
/// assert_eq!(nc3pack_netcdf::parse_version("x"), None);
/// ```
pub fn parse_version(s: &str) -> Option<(u32, u32)> {
    let mut it = s.split(|c: char| !c.is_ascii_digit());
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

/// The netCDF-C library `handle` names (its `nc_def_user_format` and version), or `None` when
/// it defines no `nc_def_user_format`.
///
/// # Safety
///
/// `handle` is `RTLD_DEFAULT`, or a handle from `dlopen` that stays open during the call. The
/// objects it reaches that define `nc_def_user_format`, `nc_inq_libvers` and
/// `ncx_getn_int_schar` are netCDF-C libraries, whose functions of those names have netCDF-C's
/// prototypes ([`DefUserFormat`], [`InqLibvers`], [`GetnIntSchar`]); the `nc_def_user_format` returned is called only while its library stays
/// loaded.
unsafe fn library_at(handle: *mut c_void) -> Option<Library> {
    // SAFETY: `handle` is valid for `dlsym` (this function's contract) and the name is a
    // NUL-terminated literal.
    let def = unsafe { libc::dlsym(handle, c"nc_def_user_format".as_ptr()) };
    if def.is_null() {
        return None;
    }
    // SAFETY: as for `nc_def_user_format`.
    let vers = unsafe { libc::dlsym(handle, c"nc_inq_libvers".as_ptr()) };
    let version = if vers.is_null() {
        String::from("(unknown version)")
    } else {
        // SAFETY: `dlsym` found a function named `nc_inq_libvers` through the handle that
        // reaches netCDF-C's `nc_def_user_format`, so netCDF-C's
        // `const char *nc_inq_libvers(void)` (this function's contract), which is
        // `InqLibvers`; on the platforms with `dlsym` a data pointer and a function pointer
        // have the same size and representation (POSIX requires `dlsym`'s result to
        // convert), and it is not NULL.
        let f = unsafe { std::mem::transmute::<*mut c_void, InqLibvers>(vers) };
        // SAFETY: netCDF-C's `nc_inq_libvers` takes nothing and only returns a pointer to its
        // static version string (`return nc_libvers;`): callable at any time, from any thread.
        let p = unsafe { f() };
        if p.is_null() {
            String::from("(unknown version)")
        } else {
            // SAFETY: not NULL: netCDF-C's version string, NUL-terminated, static in the
            // library (loaded during the call), never written; it is copied right away.
            unsafe { CStr::from_ptr(p) }
                .to_string_lossy()
                .trim()
                .to_string()
        }
    };
    // SAFETY: as for `nc_def_user_format`.
    let getn = unsafe { libc::dlsym(handle, c"ncx_getn_int_schar".as_ptr()) };
    // SAFETY: a function named `ncx_getn_int_schar` that the handle reaching netCDF-C's
    // `nc_def_user_format` finds is netCDF-C's own (this function's contract: its functions
    // have netCDF-C's prototypes), loaded during the call.
    let erange = unsafe { erange_rule(getn, &version) };
    Some(Library {
        version,
        erange,
        // SAFETY: `def` is not NULL and is netCDF-C's `nc_def_user_format` (this function's
        // contract), whose prototype `int (int, NC_Dispatch *, char *)` is `DefUserFormat`;
        // data and function pointers convert as for `nc_inq_libvers`.
        def: unsafe { std::mem::transmute::<*mut c_void, DefUserFormat>(def) },
    })
}

/// `dl_iterate_phdr`'s callback for [`library_names`]: adds the name of each loaded object
/// named like libnetcdf to the `Vec<CString>` behind `data`; 0 to go on.
///
/// # Safety
///
/// Called by `dl_iterate_phdr` only (in the thread that called it, before it returns), with
/// `info` pointing to a valid `dl_phdr_info` whose `dlpi_name` is NULL or a NUL-terminated
/// string, and `data` the pointer [`library_names`] passed: its `Vec<CString>`, exclusively
/// borrowed for the call.
unsafe extern "C" fn collect_name(
    info: *mut libc::dl_phdr_info,
    _: libc::size_t,
    data: *mut c_void,
) -> c_int {
    // SAFETY: `data` is `library_names`'s `&mut Vec<CString>`, which nothing else uses while
    // `dl_iterate_phdr` runs (this function's contract).
    let names = unsafe { &mut *data.cast::<Vec<CString>>() };
    // SAFETY: `info` points to a valid `dl_phdr_info` for the call (this function's contract).
    let name = unsafe { (*info).dlpi_name };
    if !name.is_null() {
        // SAFETY: a non-NULL `dlpi_name` is a NUL-terminated string, valid during the call (the
        // loader's; this function's contract); it is copied before the call returns.
        let n = unsafe { CStr::from_ptr(name) };
        if n.to_bytes().windows(9).any(|w| w == b"libnetcdf") {
            names.push(n.to_owned());
        }
    }
    0
}

/// The names of the loaded objects named like libnetcdf, in load order.
fn library_names() -> Vec<CString> {
    let mut names: Vec<CString> = Vec::new();
    // SAFETY: `collect_name` has the callback type `dl_iterate_phdr` wants and upholds its
    // contract: `dl_iterate_phdr` calls it synchronously with a valid `dl_phdr_info` and the
    // `data` given, here `names`, exclusively borrowed until `dl_iterate_phdr` returns.
    unsafe {
        libc::dl_iterate_phdr(
            Some(collect_name),
            (&mut names as *mut Vec<CString>).cast::<c_void>(),
        );
    }
    names
}

/// How many netCDF-C libraries this process has loaded.
fn loaded_count() -> usize {
    loaded_libraries().len()
}

/// The netCDF-C libraries in this process: the one the global scope finds, and every loaded
/// object named like libnetcdf (copies loaded with RTLD_LOCAL, as netCDF4-python's), each once.
fn loaded_libraries() -> Vec<Library> {
    let mut libs: Vec<Library> = Vec::new();
    let mut add = |l: Option<Library>| {
        if let Some(l) = l {
            if !libs.iter().any(|x| x.def as usize == l.def as usize) {
                libs.push(l);
            }
        }
    };
    // SAFETY: `RTLD_DEFAULT` is a valid handle for `dlsym`; an object that defines
    // `nc_def_user_format` is taken to be netCDF-C (no other library defines netCDF-C's
    // functions), as `library_at` requires. Its `def` is called right after, in
    // `register_all`: the plugin assumes the program does not unload netCDF-C meanwhile, from
    // another thread (a library the executable links is never unloaded).
    add(unsafe { library_at(libc::RTLD_DEFAULT) });
    for n in library_names() {
        // SAFETY: `n` is a NUL-terminated name; with `RTLD_NOLOAD`, `dlopen` only finds an
        // object already loaded (it loads nothing, so runs no constructor) and takes a
        // reference to it.
        let h = unsafe { libc::dlopen(n.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY) };
        if !h.is_null() {
            // SAFETY: `h` is a handle from `dlopen`, open during the call; the object is named
            // like libnetcdf and, if it defines `nc_def_user_format`, is netCDF-C, as
            // `library_at` requires. The library stays loaded after `dlclose` (see below), so
            // its `def` may be called right after, as for `RTLD_DEFAULT`.
            add(unsafe { library_at(h) });
            // SAFETY: `h` is the handle `dlopen` just gave, closed once. The library stays
            // loaded: NOLOAD only took another reference, and this drops only that one.
            unsafe { libc::dlclose(h) };
        }
    }
    libs
}

/// Registers the archive format (`NC_UDF0` with the archive magic) with every netCDF-C library
/// loaded in this process; returns how many accepted it.
///
/// ```no_run
/// match nc3pack_netcdf::register_all() {
///     Ok(n) => println!("{n} netCDF-C libraries read archives now"),
///     Err(e) => eprintln!("{e}"),
/// }
/// ```
///
/// # Errors
///
/// [`RegisterError::NoNetcdf`] when no netCDF-C is loaded, [`RegisterError::TooOld`] when the
/// only ones are older than 4.9, [`RegisterError::Refused`] when `nc_def_user_format` failed.
pub fn register_all() -> Result<usize, RegisterError> {
    let libs = loaded_libraries();
    // Each library keeps the slot (and so the table) it got first: registering again, from the
    // constructor and then from Python, gives it the same table.
    static SLOTS: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());
    let mut slots = SLOTS.lock().unwrap_or_else(|e| e.into_inner());
    let mut first_err = None;
    let mut n = 0;
    for l in &libs {
        let ok = parse_version(&l.version).is_some_and(|v| v >= MIN_VERSION);
        if !ok {
            first_err.get_or_insert(RegisterError::TooOld {
                version: l.version.clone(),
            });
            continue;
        }
        let key = l.def as usize;
        let slot = match slots.iter().position(|&k| k == key) {
            Some(i) => i,
            None if slots.len() < MAX_LIBRARIES => {
                slots.push(key);
                slots.len() - 1
            }
            None => {
                first_err.get_or_insert(RegisterError::TooMany {
                    version: l.version.clone(),
                    max: MAX_LIBRARIES,
                });
                continue;
            }
        };
        dispatch::set_erange(slot, l.erange);
        let table = TABLES.get(slot);
        // SAFETY: `l.def` is the `nc_def_user_format` of a netCDF-C library found just now
        // and still loaded (`loaded_libraries`), with that prototype. `table` points to a
        // dispatch table with the layout of netCDF-C's `NC_Dispatch` version 5 (4.9 and 4.10;
        // netCDF-C compares `dispatch_version` with its own and refuses another) that lives
        // for the whole process, as netCDF-C, which keeps the pointer, needs; it may be
        // written through (`Tables`), although netCDF-C only reads it. The magic is a
        // NUL-terminated string of 8 bytes, within `NC_MAX_MAGIC_NUMBER_LEN` (8); netCDF-C
        // only reads it (`strlen`, then `strncpy` into its own array) and keeps no pointer to
        // it, so the `*mut` (netCDF-C's missing `const`) is never written through.
        let code = unsafe { (l.def)(nc::NC_UDF0, table, MAGIC_C.as_ptr().cast_mut().cast()) };
        if code == nc::NC_NOERR {
            n += 1;
        } else {
            first_err.get_or_insert(RegisterError::Refused {
                version: l.version.clone(),
                code,
            });
        }
    }
    match (n, first_err) {
        (0, Some(e)) => Err(e),
        (0, None) => Err(RegisterError::NoNetcdf),
        (n, _) => Ok(n),
    }
}

/// The RC-file entry point for netCDF-C 4.10 and later (`NETCDF.UDF0.INIT=nc3pack_netcdf_init`):
/// registers the archive magic with the loaded netCDF-C (the RC file cannot hold it: its parser
/// strips the magic's `\r`) and returns the dispatch table, as netCDF-C's plugin loader wants.
/// A netCDF-C older than 4.9 gets one line on stderr.
///
/// ```no_run
/// let table = nc3pack_netcdf::nc3pack_netcdf_init();
/// assert!(!table.is_null());
/// ```
#[no_mangle]
pub extern "C" fn nc3pack_netcdf_init() -> *const NcDispatch {
    let _ = std::panic::catch_unwind(|| {
        if let Err(
            e @ (RegisterError::TooOld { .. }
            | RegisterError::TooMany { .. }
            | RegisterError::Refused { .. }),
        ) = register_all()
        {
            eprintln!("nc3pack: {e}");
        }
    });
    TABLES.get(0).cast_const()
}

/// Registers the archive format with every netCDF-C loaded in this process (for Python's
/// ctypes, after `import netCDF4`): the number of libraries registered, or a negative number:
/// -1 no netCDF-C loaded, -2 too old (before 4.9), -3 more libraries than the plugin serves,
/// else netCDF-C's error code.
///
/// ```no_run
/// assert!(nc3pack_netcdf::nc3pack_netcdf_register() > 0);
/// ```
#[no_mangle]
pub extern "C" fn nc3pack_netcdf_register() -> c_int {
    std::panic::catch_unwind(|| match register_all() {
        Ok(n) => n as c_int,
        Err(RegisterError::NoNetcdf) => -1,
        Err(RegisterError::TooOld { .. }) => -2,
        Err(RegisterError::TooMany { .. }) => -3,
        Err(RegisterError::Refused { code, .. }) => code.min(-4),
    })
    .unwrap_or(nc::NC_EINTERNAL)
}

/// The ELF constructor: when the library is loaded (`LD_PRELOAD`), register with the process's
/// netCDF-C if it has one; silent when it has none (any other program under `LD_PRELOAD`).
extern "C" fn on_load() {
    let _ = std::panic::catch_unwind(|| match register_all() {
        Ok(_) | Err(RegisterError::NoNetcdf) => {}
        Err(e) => eprintln!("nc3pack: {e}"),
    });
}

// The dynamic loader runs the functions of `.init_array` when it loads the library, in the
// loading thread, before `dlopen` returns or `main` starts: `on_load` takes no arguments, as
// the loader calls them, and unwinds no panic into it (`catch_unwind`).
#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;
