//! An S3 prefix as a collection's output: its manifests fetched before packing, this shard's
//! copied back to it.

use super::Shard;
use crate::collection::manifest::Manifest;
use crate::error::io_err as io;
use crate::remote::{Prefix, RemoteOptions};
use crate::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The object-store prefix of `pack IN... -o s3://BUCKET/PREFIX/`, with its manifests.
pub(super) struct Bucket {
    pub(super) prefix: Prefix,
    /// The manifests of every shard, as uploaded, in local copies (removed when dropped).
    pub(super) records: Vec<PathBuf>,
    _copies: Vec<tempfile::TempPath>,
    /// This shard's manifest, kept locally.
    pub(super) manifest: PathBuf,
    /// Its key under the prefix: `.nc3pack/manifest-I-of-N.jsonl`.
    key: String,
}

impl Bucket {
    /// Checks the URL and the credentials (listing the uploaded manifests, which also checks
    /// that the bucket exists and the credentials are accepted), fetches the manifests, and
    /// starts this shard's local manifest (`manifest`, or the default) from its uploaded copy
    /// if it has none.
    ///
    /// # Errors
    ///
    /// [`Error::Remote`] for a bad URL, a listing or a fetch that fails; [`Error::Io`] when a
    /// local copy cannot be written.
    pub(super) fn open(
        url: &str,
        manifest: Option<&Path>,
        shard: Shard,
        remote: &RemoteOptions,
    ) -> Result<Bucket> {
        let prefix = Prefix::new(url, remote)?;
        let name = format!("manifest-{shard}.jsonl");
        let key = format!(".nc3pack/{name}");
        let given = manifest;
        let manifest = given.map_or_else(
            || {
                // .nc3pack/BUCKET/PREFIX/ under the working directory: per collection.
                let mut p = PathBuf::from(".nc3pack").join(prefix.bucket());
                p.push(prefix.prefix());
                p.join(&name)
            },
            Path::to_path_buf,
        );
        let mut records = Vec::new();
        let mut copies = Vec::new();
        let temp = Path::new("(a temporary manifest copy)");
        for k in prefix.list(".nc3pack/")? {
            if !k.ends_with(".jsonl") || k[".nc3pack/".len()..].contains('/') {
                continue;
            }
            let Some(bytes) = prefix.get(&k)? else {
                continue;
            };
            if k == key && !manifest.exists() {
                if let Some(d) = manifest.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(d).map_err(io(d, "create directory"))?;
                }
                std::fs::write(&manifest, &bytes).map_err(io(&manifest, "write"))?;
            }
            let mut f = tempfile::NamedTempFile::new().map_err(io(temp, "create"))?;
            f.write_all(&bytes).map_err(io(temp, "write"))?;
            let copy = f.into_temp_path();
            records.push(copy.to_path_buf());
            copies.push(copy);
        }
        // This collection's other local manifests (shards run from the same directory): newer
        // than their uploaded copies.
        if given.is_none() {
            if let Some(d) = manifest.parent() {
                records.push(d.to_path_buf());
            }
        }
        Ok(Bucket {
            prefix,
            records,
            _copies: copies,
            manifest,
            key,
        })
    }

    /// Makes the local manifest durable and copies it to the bucket with one PUT (the object
    /// is replaced whole or not at all).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when the manifest cannot be synced or read; [`Error::Remote`] when the
    /// PUT fails.
    pub(super) fn copy_manifest(&self, m: &Manifest) -> Result<()> {
        m.sync()?;
        match std::fs::read(&self.manifest) {
            Ok(bytes) => self.prefix.put(&self.key, bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(Error::Io {
                path: self.manifest.clone(),
                op: "read",
                source,
            }),
        }
    }
}
