//! The tokio runtime that runs object storage I/O (made again after `fork`), and the TLS
//! crypto provider.

use std::io;
use std::sync::Mutex;

/// The process's tokio runtime for object storage I/O: two worker threads, made on first use,
/// and made again in a child process made by `fork` (as Python's `multiprocessing` makes its
/// workers): the child has none of its parent's threads, so the parent's runtime would never
/// run a task there. The parent's runtime is then left alone (dropping it would wait for
/// threads that do not exist in the child).
pub(super) fn runtime() -> io::Result<&'static tokio::runtime::Runtime> {
    static RT: Mutex<Option<(u32, &'static tokio::runtime::Runtime)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut rt = RT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((made_in, r)) = *rt {
        if made_in == pid {
            return Ok(r);
        }
    }
    let made = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("nc3pack-io")
        .enable_all()
        .build()
        .map_err(|e| io::Error::other(format!("cannot start the I/O runtime: {e}")))?;
    // One runtime per process, for the rest of its life.
    let made: &'static tokio::runtime::Runtime = Box::leak(Box::new(made));
    *rt = Some((pid, made));
    Ok(made)
}

/// Installs ring as the process's TLS crypto provider, once, before any client is built (an
/// application may have installed its own already, which is then used).
pub(super) fn install_crypto() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
