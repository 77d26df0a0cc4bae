//! Archives in object storage: a [`ReadAt`](crate::ReadAt) source over `s3://`, `http(s)://` (and, through
//! [`crate::Input`], `file://`) URLs, with a sync API (the async runtime is internal).
//!
//! Reads cost few requests: opening fetches the front of the object (lead and header frame) and
//! its tail (footer and index) with two concurrent range requests ([`FRONT_BYTES`],
//! [`TAIL_BYTES`]), and a third only when the index is larger than the tail; a read that needs
//! many blocks tells the source its frames first ([`ReadAt::prefetch`](crate::ReadAt::prefetch)), which fetches them in
//! the background in windows (frames less than 1 MiB apart, up to 16 MiB: one range request
//! each), the next window requested as the last one's bytes arrive, and hands each frame to its
//! read as soon as its bytes have arrived.
//!
//! Credentials, region and endpoint come from [`RemoteOptions`]: by default the standard
//! environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`,
//! `AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`, as `object_store`'s `AmazonS3Builder::from_env` reads
//! them), anonymous access only when asked for (`anon`, or `NC3PACK_ANON=1`).
//!
//! Writing: [`upload_file`] makes one object with a multipart upload, aborted on an error or a
//! signal (packing straight into object storage packs into a temporary file and uploads it so);
//! [`Prefix`] is a bucket and key prefix with one client, which `pack IN... -o
//! s3://BUCKET/PREFIX/` packs a collection into (objects uploaded the same way, manifests put
//! whole, listed and read back, archives' ends checked by two range requests).
//!
//! ```no_run
//! use nc3pack::remote::{RemoteOptions, RemoteReader};
//! let opts = RemoteOptions::from_env().with_anon(true);
//! let r = RemoteReader::open("s3://bucket/sst.nc3z", &opts)?;
//! let a = nc3pack::Archive::from_reader(nc3pack::Input::Remote(r), "s3://bucket/sst.nc3z".as_ref())?;
//! println!("{} streams", a.stream_count());
//! # Ok::<(), nc3pack::Error>(())
//! ```

mod classify;
mod options;
mod prefix;
mod reader;
mod runtime;
mod store;
mod stream;
mod upload;
mod url;

pub use options::RemoteOptions;
pub use prefix::Prefix;
pub(crate) use prefix::{check_url_ends, fetch_manifests};
pub use reader::{RemoteReader, RequestStats, FRONT_BYTES, TAIL_BYTES};
pub use stream::{open_stream, ObjectStream};
pub(crate) use upload::check_upload_target;
pub use upload::upload_file;
pub(crate) use url::file_url_path;
