//! Programs that load netCDF-C late: R's ncdf4, Julia, Octave, any interpreter that loads
//! libnetcdf with a package, after the preloaded plugin's constructor has run (and found no
//! netCDF-C to register with).
//!
//! Under `LD_PRELOAD` the plugin also defines netCDF-C's open functions (`nc_open`,
//! `nc__open`, `nc_open_mem`, `nc_open_memio`). The dynamic linker finds a preloaded
//! library's definitions first, so a program's call to `nc_open` comes here: the plugin
//! registers with any netCDF-C loaded since (once per library: [`crate::register_all`] keeps
//! each library's table), then calls the library's own function with the same arguments and
//! returns what it returns. Loaded any other way (an RC file, Python's `register()`), the
//! plugin's definitions are local to it and nothing is redirected.

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many netCDF-C libraries were loaded when the plugin last registered.
static SEEN: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Registers with the netCDF-C libraries loaded since the last time (one line on stderr when
/// one of them cannot take the plugin, as the constructor says it).
fn register_new() {
    let n = crate::loaded_count();
    if SEEN.swap(n, Ordering::AcqRel) == n {
        return;
    }
    match crate::register_all() {
        Ok(_) | Err(crate::RegisterError::NoNetcdf) => {}
        Err(e) => eprintln!("nc3pack: {e}"),
    }
}

/// netCDF-C's definition of `name`, not this library's (`ours`): the next one after the
/// plugin in the global scope, else that of the first netCDF-C library loaded privately (R
/// loads a package's libraries with `RTLD_LOCAL`); null when there is none.
unsafe fn real(name: &CStr, ours: *mut c_void) -> *mut c_void {
    let next = libc::dlsym(libc::RTLD_NEXT, name.as_ptr());
    if !next.is_null() && next != ours {
        return next;
    }
    for lib in crate::library_names() {
        let h = libc::dlopen(lib.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY);
        if h.is_null() {
            continue;
        }
        let f = libc::dlsym(h, name.as_ptr());
        // The library stays loaded: NOLOAD only took another reference.
        libc::dlclose(h);
        if !f.is_null() && f != ours {
            return f;
        }
    }
    std::ptr::null_mut()
}

/// Registers, finds netCDF-C's `$name`, and calls it; `NC_ENOTBUILT`-like failure
/// (`NC_EINTERNAL`, with one line on stderr) when no netCDF-C defines it.
macro_rules! forward {
    ($name:ident ($($arg:ident: $t:ty),*)) => {
        /// netCDF-C's function of this name, reached through the plugin (see the module).
        ///
        /// # Safety
        ///
        /// As netCDF-C's own.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $t),*) -> c_int {
            type F = unsafe extern "C" fn($($t),*) -> c_int;
            let _ = std::panic::catch_unwind(register_new);
            let cname = CString::new(stringify!($name)).unwrap_or_default();
            let f = real(&cname, $name as F as *mut c_void);
            if f.is_null() {
                eprintln!("nc3pack: no netCDF-C library defines {} in this process", stringify!($name));
                return crate::nc::NC_EINTERNAL;
            }
            let f: F = std::mem::transmute::<*mut c_void, F>(f);
            f($($arg),*)
        }
    };
}

forward!(nc_open(path: *const c_char, mode: c_int, ncidp: *mut c_int));
forward!(nc__open(path: *const c_char, mode: c_int, chunk: *mut usize, ncidp: *mut c_int));
forward!(nc_open_mem(
    path: *const c_char,
    mode: c_int,
    size: usize,
    memory: *mut c_void,
    ncidp: *mut c_int
));
forward!(nc_open_memio(
    path: *const c_char,
    mode: c_int,
    params: *mut c_void,
    ncidp: *mut c_int
));
