//! [`ObjectStream`]: an object read once from its start to its end, as from a pipe.

use super::classify::classify;
use super::options::RemoteOptions;
use super::runtime::runtime;
use super::store::store_for;
use super::url::file_url_path;
use crate::error::{Error, RemoteError, Result};
use bytes::Bytes;
use object_store::ObjectStoreExt;
use std::io;

/// An object read from its start to its end in one pass, as from a pipe: one GET for a remote
/// object (its body arrives as it is read), or the local file of a `file://` URL. Made by
/// [`open_stream`].
pub struct ObjectStream {
    inner: StreamInner,
}

enum StreamInner {
    File(std::fs::File),
    Remote {
        body:
            std::pin::Pin<Box<dyn futures_util::Stream<Item = object_store::Result<Bytes>> + Send>>,
        /// What is left of the last piece received.
        piece: Bytes,
    },
}

impl std::fmt::Debug for ObjectStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectStream").finish_non_exhaustive()
    }
}

/// Opens the object at `url` (`s3://`, `http(s)://`, `file://`) to be read once, in order:
/// one GET request, whose body is read as it arrives (what `pack` does with a URL input).
///
/// ```no_run
/// use std::io::Read;
/// let opts = nc3pack::remote::RemoteOptions::from_env();
/// let mut s = nc3pack::remote::open_stream("https://example.org/in.nc", &opts)?;
/// let mut magic = [0u8; 4];
/// s.read_exact(&mut magic).unwrap();
/// # Ok::<(), nc3pack::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::Remote`] naming the URL: a malformed URL, no credentials, access denied, no such
/// object, or a request that still failed after its retries; [`Error::Io`] for a `file://`
/// URL whose file cannot be opened. A failure later, while the body arrives, is an I/O error
/// of the read.
pub fn open_stream(url: &str, opts: &RemoteOptions) -> Result<ObjectStream> {
    let err = |source: RemoteError| Error::Remote {
        url: url.to_string(),
        source,
    };
    if url.len() > 7 && url[..7].eq_ignore_ascii_case("file://") {
        let p = file_url_path(url).map_err(err)?;
        let f = std::fs::File::open(&p).map_err(crate::error::io_err(&p, "open"))?;
        return Ok(ObjectStream {
            inner: StreamInner::File(f),
        });
    }
    let (store, location) = store_for(url, opts).map_err(err)?;
    let rt = runtime().map_err(|e| err(RemoteError::Request { why: e.to_string() }))?;
    let got = rt
        .block_on(store.get(&location))
        .map_err(|e| err(classify(&e)))?;
    Ok(ObjectStream {
        inner: StreamInner::Remote {
            body: got.into_stream(),
            piece: Bytes::new(),
        },
    })
}

impl io::Read for ObjectStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let (body, piece) = match &mut self.inner {
            StreamInner::File(f) => return f.read(buf),
            StreamInner::Remote { body, piece } => (body, piece),
        };
        if buf.is_empty() {
            return Ok(0);
        }
        // Bounded: each turn receives a piece; empty pieces are skipped.
        while piece.is_empty() {
            use futures_util::StreamExt;
            match runtime()?.block_on(body.next()) {
                None => return Ok(0),
                Some(Ok(b)) => *piece = b,
                Some(Err(e)) => return Err(io::Error::other(classify(&e))),
            }
        }
        let n = buf.len().min(piece.len());
        buf[..n].copy_from_slice(&piece.split_to(n));
        Ok(n)
    }
}
