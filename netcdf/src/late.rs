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
/// loads a package's libraries with `RTLD_LOCAL`); null when there is none. The address stays
/// valid while that library stays loaded (this function takes no reference to it).
fn real(name: &CStr, ours: *mut c_void) -> *mut c_void {
    // SAFETY: `RTLD_NEXT` is a valid pseudo-handle for `dlsym` from a shared object, and
    // `name` is NUL-terminated; the lookup only reads the loader's tables.
    let next = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    if !next.is_null() && next != ours {
        return next;
    }
    for lib in crate::library_names() {
        // SAFETY: `lib` is NUL-terminated; with `RTLD_NOLOAD`, `dlopen` only finds an object
        // already loaded (it loads nothing, so runs no constructor) and takes a reference.
        let h = unsafe { libc::dlopen(lib.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY) };
        if h.is_null() {
            continue;
        }
        // SAFETY: `h` is an open handle from `dlopen`, `name` NUL-terminated.
        let f = unsafe { libc::dlsym(h, name.as_ptr()) };
        // SAFETY: `h` is the handle `dlopen` just gave, closed once. The library stays
        // loaded: NOLOAD only took another reference, and this drops only that one.
        unsafe { libc::dlclose(h) };
        if !f.is_null() && f != ours {
            return f;
        }
    }
    std::ptr::null_mut()
}

/// Registers, finds netCDF-C's `$name`, and calls it; `NC_ENOTBUILT`-like failure
/// (`NC_EINTERNAL`, with one line on stderr) when no netCDF-C defines it. The parameter types
/// are those of netCDF-C's prototype of `$name` (netcdf.h, netcdf_mem.h), and the `# Safety`
/// given with each says what that function of netCDF-C dereferences.
macro_rules! forward {
    ($(#[$safety:meta])* $name:ident ($($arg:ident: $t:ty),*)) => {
        /// netCDF-C's function of this name, reached through the plugin (see the module).
        ///
        /// # Safety
        ///
        /// As netCDF-C's own, which gets the arguments unchanged (the plugin reads none of
        /// them):
        $(#[$safety])*
        ///
        /// The symbol is exported under netCDF-C's name on purpose (`no_mangle`): under
        /// `LD_PRELOAD` it takes the program's calls of netCDF-C's function, with the same
        /// prototype and contract, and hands them on.
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
            // SAFETY: `f` is not NULL: the address of the symbol `$name` in another object
            // than the plugin (`real` skips ours), which is netCDF-C's function of that name
            // (no other library defines netCDF-C's functions), with netCDF-C's prototype,
            // which is `F`; a data and a function pointer have the same size and
            // representation on the platforms with `dlsym` (POSIX requires the conversion).
            let f: F = unsafe { std::mem::transmute::<*mut c_void, F>(f) };
            // SAFETY: the caller upholds netCDF-C's contract for these arguments (this
            // function's `# Safety`), and they reach netCDF-C's function unchanged. Its
            // library is loaded: `real` just found it, and a program does not unload
            // netCDF-C while it calls it.
            unsafe { f($($arg),*) }
        }
    };
}

forward!(
    /// `path` is NULL or a NUL-terminated string; `ncidp` is NULL or valid for a write of an
    /// `int`.
    nc_open(path: *const c_char, mode: c_int, ncidp: *mut c_int)
);
forward!(
    /// `path` is NULL or a NUL-terminated string; `chunk` is NULL or valid for reads and
    /// writes of a `size_t` (the format's open may use it); `ncidp` is NULL or valid for a
    /// write of an `int`.
    nc__open(path: *const c_char, mode: c_int, chunk: *mut usize, ncidp: *mut c_int)
);
forward!(
    /// `path` is NULL or a NUL-terminated string (the file's name in messages); `memory` is
    /// NULL or valid for reads of `size` bytes, unchanged while netCDF-C may read it (its
    /// classic library keeps the pointer: until the file is closed); `ncidp` is NULL or valid
    /// for a write of an `int`.
    nc_open_mem(
        path: *const c_char,
        mode: c_int,
        size: usize,
        memory: *mut c_void,
        ncidp: *mut c_int
    )
);
forward!(
    /// `path` is NULL or a NUL-terminated string; `params` is NULL or points to a valid
    /// `NC_memio` (`size`, `memory`, `flags`) whose memory is as `nc_open_mem`'s (netCDF-C may
    /// also take it over, as `NC_memio`'s flags say); `ncidp` is NULL or valid for a write of
    /// an `int`.
    nc_open_memio(
        path: *const c_char,
        mode: c_int,
        params: *mut c_void,
        ncidp: *mut c_int
    )
);
