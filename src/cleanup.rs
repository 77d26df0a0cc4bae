//! Temporary outputs removed when the process is interrupted.
//!
//! Every temporary file that the safe output writer creates is registered here, from before it exists
//! until it is renamed into place or removed. [`install_signal_handlers`] (called by the command
//! line) makes SIGINT, SIGTERM and SIGHUP, SIGABRT (what an allocation failure raises), and
//! the other signals that end a process (SIGQUIT, SIGUSR1, SIGUSR2, SIGXCPU, SIGXFSZ), remove
//! every registered file, then die by the same signal, so that the shell sees the usual
//! status (128 + the signal number) and nothing partial is left, as gzip does.
//!
//! What a signal handler does must be async-signal-safe: the registry is a fixed array of
//! atomic pointers to NUL-terminated paths allocated beforehand, and the handler only loads them
//! and calls `unlink(2)`, `signal(2)` and `raise(3)`. SIGKILL cannot be caught: it (or a power
//! loss) leaves the temporary files, named `.nc3pack-*.part`, beside the outputs.
//!
//! An operation that must undo something remote before the process dies (a multipart upload,
//! whose parts would otherwise stay in the bucket) cannot do it from a handler: network I/O is
//! not async-signal-safe. While such an operation is registered (`Abortable`), SIGINT,
//! SIGTERM and SIGHUP only record the signal (`pending_signal`) and start an alarm of
//! `ABORT_GRACE_SECS` (10 s); the operation notices, undoes its work and calls `die`, which
//! removes the registered files and re-raises the signal (with several such operations at once,
//! the uploads of a batch, the last one to finish undoing does). A second signal, or the alarm, does that at
//! once, undone or not.

use std::ffi::{c_char, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicUsize, Ordering::SeqCst};

/// How many temporary files can be registered at once. A batch holds at most a few commit
/// groups of finished archives plus one file per worker; beyond this, files are still written
/// and removed normally, only not on a signal.
const SLOTS: usize = 4096;

static REGISTRY: [AtomicPtr<c_char>; SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

/// Set by the handler before it reads the registry: from then on, a path taken out of the
/// registry is not freed (the handler may be reading it; the process is about to die anyway).
static DYING: AtomicBool = AtomicBool::new(false);

/// A path in the registry, taken out when dropped. Drop it only once the file is gone from that
/// path (renamed or removed), so that no moment is left where the file exists unregistered.
#[derive(Debug)]
pub(crate) struct Registered {
    slot: Option<usize>,
}

impl Registered {
    /// Registers `path` (best absolute: the handler does not know the working directory of the
    /// moment). When the registry is full, or the path holds a NUL byte, nothing is registered.
    pub(crate) fn new(path: &Path) -> Registered {
        let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
            return Registered { slot: None };
        };
        let p = c.into_raw();
        for (i, s) in REGISTRY.iter().enumerate() {
            if s.load(SeqCst).is_null()
                && s.compare_exchange(std::ptr::null_mut(), p, SeqCst, SeqCst)
                    .is_ok()
            {
                return Registered { slot: Some(i) };
            }
        }
        // SAFETY: `p` came from `CString::into_raw` above and was never published.
        drop(unsafe { CString::from_raw(p) });
        Registered { slot: None }
    }

    /// Creates the file at `path` with `create`, registered from before it exists. A signal
    /// handler that ran while it was being created (its loop over the registry may have passed
    /// this slot, or unlinked the path before the file was there) is caught by checking
    /// [`DYING`] after the file exists: the file is then removed here, and an
    /// [`std::io::ErrorKind::Interrupted`] error returned (the process is about to die).
    /// Without this, worker threads that go on creating files while the handler unlinks
    /// hundreds of others leave some behind.
    ///
    /// # Errors
    ///
    /// What `create` returns, or `Interrupted` when the process is dying on a signal.
    pub(crate) fn create<T>(
        path: &Path,
        create: impl FnOnce() -> std::io::Result<T>,
    ) -> std::io::Result<(Registered, T)> {
        let interrupted = || {
            std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                "the process is ending on a signal",
            )
        };
        if DYING.load(SeqCst) {
            return Err(interrupted());
        }
        let r = Registered::new(path);
        let made = create()?;
        // SeqCst: either the handler set DYING after this load, and so reads this slot after
        // the file exists, or this sees it set.
        if DYING.load(SeqCst) {
            let _ = std::fs::remove_file(path);
            return Err(interrupted());
        }
        Ok((r, made))
    }

    /// Whether the path is in the registry (false when the registry was full).
    #[cfg(test)]
    pub(crate) fn is_registered(&self) -> bool {
        self.slot.is_some()
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let Some(i) = self.slot else { return };
        let p = REGISTRY[i].swap(std::ptr::null_mut(), SeqCst);
        // A handler that read the pointer set DYING before reading it (both SeqCst), so either
        // it is seen here, or the handler will find the slot empty.
        if !p.is_null() && !DYING.load(SeqCst) {
            // SAFETY: the slot held a pointer from `CString::into_raw` in `new`, now taken out.
            drop(unsafe { CString::from_raw(p) });
        }
    }
}

/// The signals that remove the registered files before the process dies (SIGALRM: the end of
/// the grace an [`Abortable`] operation gets): those that end a process by default and that a
/// user, a shell or a batch system sends (SIGQUIT: Ctrl-\; SIGUSR1 and SIGUSR2: SLURM's
/// `--signal` warning; SIGXCPU and SIGXFSZ: a CPU-time or file-size limit, `ulimit -t`/`-f`).
const SIGNALS: [libc::c_int; 10] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGABRT,
    libc::SIGALRM,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGXCPU,
    libc::SIGXFSZ,
];

/// Most seconds an [`Abortable`] operation gets, after a signal, to undo its work before the
/// process dies anyway.
pub(crate) const ABORT_GRACE_SECS: u32 = 10;

/// How many [`Abortable`] operations are running.
static ABORTABLE: AtomicUsize = AtomicUsize::new(0);

/// The signal received while an [`Abortable`] operation ran, not acted on yet (0: none).
static PENDING: AtomicI32 = AtomicI32::new(0);

/// An operation that, on SIGINT, SIGTERM or SIGHUP, undoes its work and then calls [`die`]
/// (checking [`pending_signal`] often enough). Dropping it with a signal pending dies too.
#[derive(Debug)]
#[cfg_attr(not(feature = "remote"), allow(dead_code))] // only uploads (remote) abort
pub(crate) struct Abortable(());

impl Abortable {
    #[cfg_attr(not(feature = "remote"), allow(dead_code))]
    pub(crate) fn new() -> Abortable {
        ABORTABLE.fetch_add(1, SeqCst);
        Abortable(())
    }
}

impl Drop for Abortable {
    /// With a signal pending, the last operation to end dies by it; one that ends while others
    /// (uploads of a batch, in parallel) are still undoing theirs waits for the last one (or
    /// the alarm) to end the process, so that none is cut short.
    fn drop(&mut self) {
        let last = ABORTABLE.fetch_sub(1, SeqCst) == 1;
        if let Some(sig) = pending_signal() {
            if last {
                die(sig);
            }
            // Bounded: the alarm set when the signal came ends the process.
            loop {
                std::thread::sleep(std::time::Duration::from_millis(50));
                if ABORTABLE.load(SeqCst) == 0 {
                    die(sig);
                }
            }
        }
    }
}

/// The signal received while an [`Abortable`] operation was running, if any: the operation
/// should undo its work and call [`die`].
#[cfg_attr(not(feature = "remote"), allow(dead_code))] // only uploads (remote) abort
pub(crate) fn pending_signal() -> Option<libc::c_int> {
    match PENDING.load(SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Removes every registered file and dies by `sig` (default action), as the handler does.
#[cfg_attr(not(feature = "remote"), allow(dead_code))] // only uploads (remote) abort
pub(crate) fn die(sig: libc::c_int) -> ! {
    remove_registered_and_raise(sig);
    // Not reached: the signal's default action ends the process.
    std::process::exit(128 + sig)
}

extern "C" fn on_signal(sig: libc::c_int) {
    let deferrable = matches!(sig, libc::SIGINT | libc::SIGTERM | libc::SIGHUP);
    if deferrable
        && ABORTABLE.load(SeqCst) > 0
        && PENDING.compare_exchange(0, sig, SeqCst, SeqCst).is_ok()
    {
        // SAFETY: alarm is async-signal-safe; it bounds the time the operation takes to abort.
        unsafe { libc::alarm(ABORT_GRACE_SECS) };
        return;
    }
    let pending = PENDING.load(SeqCst);
    let sig = if sig == libc::SIGALRM && pending != 0 {
        pending
    } else if deferrable && pending != 0 {
        // A second signal while aborting: the first one's status.
        pending
    } else {
        sig
    };
    remove_registered_and_raise(sig);
}

/// Async-signal-safe: unlinks every registered path and raises `sig` with its default action.
fn remove_registered_and_raise(sig: libc::c_int) {
    DYING.store(true, SeqCst);
    for s in &REGISTRY {
        let p = s.load(SeqCst);
        if !p.is_null() {
            // SAFETY: a registered pointer is a NUL-terminated path that is never freed once
            // DYING is set; unlink is async-signal-safe.
            unsafe { libc::unlink(p) };
        }
    }
    // SAFETY: signal and raise are async-signal-safe. The signal is blocked while its handler
    // runs, so the raised one is delivered, with the default action, when the handler returns.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// Installs the handlers for SIGINT, SIGTERM, SIGHUP, SIGABRT, SIGALRM, SIGQUIT, SIGUSR1,
/// SIGUSR2, SIGXCPU and SIGXFSZ that remove every
/// registered temporary file, then re-raise the signal with its default action (while an
/// upload runs, SIGINT, SIGTERM and SIGHUP first let it abort, for at most 10 seconds). A signal that was ignored
/// when the process started (`nohup`, a background job) stays ignored. For programs, not
/// libraries: it replaces the process's handlers.
///
/// ```no_run
/// nc3pack::cleanup::install_signal_handlers().unwrap();
/// ```
///
/// # Errors
///
/// The operating system's error if a handler cannot be read or installed.
pub fn install_signal_handlers() -> std::io::Result<()> {
    for sig in SIGNALS {
        // SAFETY: sigaction structures are plain data, zero is a valid start; the calls only
        // read and write them.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if old.sa_sigaction == libc::SIG_IGN {
                continue;
            }
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESTART;
            // While one handler runs on a thread, the other signals wait.
            libc::sigemptyset(&mut sa.sa_mask);
            for other in SIGNALS {
                libc::sigaddset(&mut sa.sa_mask, other);
            }
            if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_path_is_registered_until_dropped() {
        let r = super::Registered::new("/tmp/.nc3pack-example.part".as_ref());
        assert!(r.is_registered());
        drop(r);
    }
}
