//! Multipart uploads: one object made from a local file, parts in parallel, aborted on an
//! error or a signal.

use super::classify::classify;
use super::options::RemoteOptions;
use super::runtime::runtime;
use super::store::store_for;
use crate::error::{Error, RemoteError, Result};
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt};
use std::io;
use std::sync::Arc;
use std::time::Duration;

/// Size of the parts of a multipart upload (S3 wants at least 5 MiB but for the last).
const PART_BYTES: usize = 8 << 20;

/// Parts uploaded at once.
const PARTS_IN_FLIGHT: usize = 4;

/// Most time an upload interrupted by a signal waits for its parts in flight, and then for the
/// abort request, before the process dies (within [`crate::cleanup`]'s grace).
const ABORT_WAIT: Duration = Duration::from_secs(4);

/// Why an upload stopped before completing.
enum UploadStop {
    Failed(Error),
    /// A signal arrived (see [`crate::cleanup`]): abort, then die by it.
    Signal,
}

/// Ends once a signal is pending ([`crate::cleanup::pending_signal`]); looks every 20 ms.
async fn signal_noticed() {
    while crate::cleanup::pending_signal().is_none() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `f`'s output, or None if a signal arrives first.
async fn unless_signalled<F: std::future::Future>(f: F) -> Option<F::Output> {
    use futures_util::future::{select, Either};
    match select(Box::pin(f), Box::pin(signal_noticed())).await {
        Either::Left((v, _)) => Some(v),
        Either::Right(_) => None,
    }
}

/// Reads up to a full part from `f`.
fn read_part(f: &mut std::fs::File, buf: &mut [u8]) -> io::Result<usize> {
    use std::io::Read;
    let mut n = 0;
    // Bounded: each turn reads at least a byte or ends.
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Sends the parts of `f`, `PARTS_IN_FLIGHT` at once, and completes the upload; stops at the
/// first failure or at a signal (after letting the parts in flight end, for a while).
async fn send_parts(
    up: &mut dyn object_store::MultipartUpload,
    f: &mut std::fs::File,
    local: &std::path::Path,
    url: &str,
) -> std::result::Result<u64, UploadStop> {
    let failed = |e: object_store::Error| {
        UploadStop::Failed(Error::Remote {
            url: url.to_string(),
            source: classify(&e),
        })
    };
    let joined = |r: std::result::Result<object_store::Result<()>, tokio::task::JoinError>| {
        r.map_err(|e| {
            UploadStop::Failed(Error::Remote {
                url: url.to_string(),
                source: RemoteError::Request { why: e.to_string() },
            })
        })?
        .map_err(failed)
    };
    let mut in_flight = tokio::task::JoinSet::new();
    let mut total = 0u64;
    let stop = loop {
        if crate::cleanup::pending_signal().is_some() {
            break UploadStop::Signal;
        }
        let mut buf = vec![0u8; PART_BYTES];
        let n = match read_part(f, &mut buf) {
            Ok(n) => n,
            Err(e) => return Err(UploadStop::Failed(crate::error::io_err(local, "read")(e))),
        };
        if n == 0 {
            // Every part sent: wait for them, then complete.
            loop {
                match unless_signalled(in_flight.join_next()).await {
                    None => break,
                    Some(None) => {
                        up.complete().await.map_err(failed)?;
                        return Ok(total);
                    }
                    Some(Some(r)) => joined(r)?,
                }
            }
            break UploadStop::Signal;
        }
        buf.truncate(n);
        let mut signalled = false;
        // Bounded: each turn ends one part in flight, or stops.
        while in_flight.len() >= PARTS_IN_FLIGHT {
            match unless_signalled(in_flight.join_next()).await {
                None => {
                    signalled = true;
                    break;
                }
                Some(Some(r)) => joined(r)?,
                Some(None) => {}
            }
        }
        if signalled {
            break UploadStop::Signal;
        }
        in_flight.spawn(up.put_part(buf.into()));
        total += n as u64;
    };
    // A signal: parts still arriving would be refused after the abort, or, on some servers,
    // stored after it; let them end first (for a while).
    let _ = tokio::time::timeout(ABORT_WAIT, async {
        // Bounded by the parts in flight.
        while in_flight.join_next().await.is_some() {}
    })
    .await;
    Err(stop)
}

/// Writing goes to S3 only (plain HTTP servers take range GETs, not uploads).
pub(super) fn check_writable(url: &str) -> std::result::Result<(), RemoteError> {
    if url.to_ascii_lowercase().starts_with("s3://") {
        Ok(())
    } else {
        Err(RemoteError::InvalidUrl {
            why: "writing needs an s3:// URL".into(),
        })
    }
}

/// Uploads the local file `local` to the object at `url` (`s3://BUCKET/KEY`) with a multipart
/// upload, parts in parallel: the object appears only when the upload completes; on any error
/// the upload is aborted, which removes its parts. An existing object is refused unless
/// `force`. Returns the bytes uploaded.
///
/// In a program that installed [`crate::cleanup::install_signal_handlers`], SIGINT, SIGTERM
/// and SIGHUP during the upload abort it (no parts left in the bucket), remove the registered
/// temporary files, and then end the process by the signal; if aborting takes more than 10
/// seconds, the process ends anyway.
///
/// ```no_run
/// let opts = nc3pack::remote::RemoteOptions::from_env();
/// let n = nc3pack::remote::upload_file("/tmp/sst.nc3z".as_ref(), "s3://bucket/sst.nc3z", &opts, false)?;
/// println!("{n} bytes uploaded");
/// # Ok::<(), nc3pack::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::Remote`] naming the URL (not an `s3://` URL, no credentials, access denied, a
/// request that failed after its retries), [`Error::OutputExists`] for an existing object
/// without `force`, [`Error::Io`] when `local` cannot be read.
pub fn upload_file(
    local: &std::path::Path,
    url: &str,
    opts: &RemoteOptions,
    force: bool,
) -> Result<u64> {
    let err = |source: RemoteError| Error::Remote {
        url: url.to_string(),
        source,
    };
    check_writable(url).map_err(err)?;
    let (store, location) = store_for(url, opts).map_err(err)?;
    upload_to(&store, &location, local, url, force)
}

/// [`upload_file`] to `location` of `store` (`url` names it in errors).
pub(super) fn upload_to(
    store: &Arc<dyn ObjectStore>,
    location: &StorePath,
    local: &std::path::Path,
    url: &str,
    force: bool,
) -> Result<u64> {
    let err = |source: RemoteError| Error::Remote {
        url: url.to_string(),
        source,
    };
    let mut f = std::fs::File::open(local).map_err(crate::error::io_err(local, "open"))?;
    let rt = runtime().map_err(|e| err(RemoteError::Request { why: e.to_string() }))?;
    // From here on a signal lets the upload abort before the process dies.
    let abortable = crate::cleanup::Abortable::new();
    // A signal already received (another upload of a batch is aborting): start nothing.
    if crate::cleanup::pending_signal().is_some() {
        drop(abortable);
        return Ok(0);
    }
    let location = location.clone();
    let r = rt.block_on(async {
        match store.head(&location).await {
            Ok(_) if !force => return Err(Error::OutputExists { path: url.into() }),
            Ok(_) => {}
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(err(classify(&e))),
        }
        let mut up = store
            .put_multipart(&location)
            .await
            .map_err(|e| err(classify(&e)))?;
        match send_parts(up.as_mut(), &mut f, local, url).await {
            Ok(total) => Ok(total),
            Err(stop) => {
                // Bounded: a server that does not answer is not waited for long.
                let _ = tokio::time::timeout(ABORT_WAIT, up.abort()).await;
                match stop {
                    UploadStop::Failed(e) => Err(e),
                    UploadStop::Signal => Ok(0),
                }
            }
        }
    });
    // Dies by a signal that came during the upload, now that it is aborted.
    drop(abortable);
    r
}

/// Checks that `url` can be uploaded to: an `s3://` URL, and no object there unless `force`
/// (one HEAD request). For packing into object storage, before the packing starts.
///
/// # Errors
///
/// [`Error::Remote`] naming the URL (not an `s3://` URL, no credentials, access denied, a
/// request that failed after its retries), [`Error::OutputExists`] for an existing object
/// without `force`.
pub(crate) fn check_upload_target(url: &str, remote: &RemoteOptions, force: bool) -> Result<()> {
    let err = |source: RemoteError| Error::Remote {
        url: url.to_string(),
        source,
    };
    check_writable(url).map_err(err)?;
    if !force {
        let (store, location) = store_for(url, remote).map_err(err)?;
        let rt = runtime().map_err(|e| err(RemoteError::Request { why: e.to_string() }))?;
        match rt.block_on(store.head(&location)) {
            Ok(_) => return Err(Error::OutputExists { path: url.into() }),
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(err(classify(&e))),
        }
    }
    Ok(())
}
