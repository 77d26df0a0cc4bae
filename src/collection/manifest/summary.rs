//! What a collection holds, from its manifests alone ([`summarize_collection`]): files, bytes
//! in and out, the ratio, failures. Nothing but the manifests is read.

use super::*;
use crate::error::Result;
use crate::read::input::CallRemote;
use std::collections::HashMap;
use std::path::PathBuf;

/// A collection as its manifests record it, summed over names: a name is packed when a line
/// records its archive (a short `skipped` line refers to an earlier one's record; of several
/// records, the last read counts), failed when none does and a line records a failure. Made
/// by [`summarize_collection`].
#[derive(Debug, Default, Clone, PartialEq)]
#[non_exhaustive]
pub struct CollectionSummary {
    /// Manifest files read.
    pub manifests: usize,
    /// Entry lines read (all of them, every run's).
    pub lines: u64,
    /// Names recorded (inputs, each counted once however many runs recorded it).
    pub files: usize,
    /// Names with an archive recorded: packed by a run, or found packed.
    pub packed: usize,
    /// Sum of the recorded input sizes of the names with an archive.
    pub input_bytes: u64,
    /// Sum of the recorded archive sizes.
    pub output_bytes: u64,
    /// Names with an archive whose line records no size (a `skipped` line whose earlier
    /// `packed` line is in a manifest not given): not in the sums.
    pub unknown_size: usize,
    /// Archives of quantized (lossy) files.
    pub lossy: usize,
    /// Names whose originals were deleted once their archives were proven (`--delete-input`:
    /// a line of any run says so, and no `failed` line after it in the same manifest says the
    /// original was kept after all: a deletion is recorded before it is made).
    pub deleted: usize,
    /// Seconds the runs spent on the names' last recorded packing, summed over files (the
    /// work, not the wall time: files are packed in parallel).
    pub seconds: f64,
    /// Names with no archive recorded whose entries record a failure: (the input, the last
    /// recorded error), in input order. A name a run failed and another packed counts as
    /// packed (as [`verify_collection`] vouches for its archive), in whichever order the
    /// manifests were written: their lines say which run came first only within one file.
    pub failures: Vec<(PathBuf, String)>,
    /// Manifest lines that are not entries: (manifest, line number).
    pub bad_lines: Vec<(PathBuf, u64)>,
}

impl CollectionSummary {
    /// The compression ratio of the archives whose sizes are recorded (input bytes over
    /// archive bytes), `None` when nothing is recorded.
    ///
    /// ```
    /// let s = nc3pack::collection::CollectionSummary::default();
    /// assert_eq!(s.ratio(), None);
    /// ```
    pub fn ratio(&self) -> Option<f64> {
        (self.output_bytes > 0).then(|| self.input_bytes as f64 / self.output_bytes as f64)
    }
}

/// What one name's entries say, held compactly (a collection may list millions of names).
#[derive(Debug, Default)]
struct Name {
    /// Input and archive sizes of the recorded archive (`None`: none recorded, or no sizes).
    sizes: Option<(u64, u64)>,
    /// Whether a line records an archive.
    archived: bool,
    lossy: bool,
    /// The manifest (its place in the list read) whose line last recorded the original's
    /// deletion, unless a failure after it there says it was kept.
    deleted: Option<usize>,
    seconds: f32,
    /// The last failure read: the input and the error.
    failed: Option<Box<(PathBuf, Box<str>)>>,
}

/// Sums what the manifests record of a collection: files, bytes in and out, failures. Only the
/// manifests are read (never an archive or an input): run [`verify_collection`] to prove what
/// they say. `manifests` are manifest files or directories of them (`OUT/.nc3pack`); a
/// directory holding a `.nc3pack` directory (`OUT`) stands for it. Memory grows with the
/// number of names, by under 128 bytes a name.
///
/// ```
/// use nc3pack::collection::{pack_collection, summarize_collection, CollectionOptions};
/// let dir = tempfile::tempdir()?;
/// std::fs::copy("samples/classic_records.nc", dir.path().join("a.nc"))?;
/// let out = dir.path().join("out");
/// pack_collection(&[dir.path().join("a.nc")], &out, &CollectionOptions::default())?;
/// let s = summarize_collection(&[out])?;
/// assert_eq!((s.files, s.packed), (1, 1));
/// assert!(s.ratio().unwrap() > 1.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) when a manifest cannot be read;
/// [`Error::NothingToSummarize`](crate::Error::NothingToSummarize) when one of `manifests` (a
/// directory or an object-storage prefix) holds no manifest. Manifests given by URL are read
/// with [`RemoteOptions::from_env`](crate::remote::RemoteOptions::from_env)'s options
/// ([`summarize_collection_with`] takes them).
pub fn summarize_collection(manifests: &[PathBuf]) -> Result<CollectionSummary> {
    summarize(manifests, None)
}

/// [`summarize_collection`] reading manifests given by URL (`s3://`, `http(s)://`, an object
/// or a `.../.nc3pack/` prefix) with `remote`.
///
/// # Errors
///
/// As [`summarize_collection`]; [`Error::Remote`](crate::Error::Remote) when a manifest given
/// by URL cannot be read.
#[cfg(feature = "remote")]
pub fn summarize_collection_with(
    manifests: &[PathBuf],
    remote: &crate::remote::RemoteOptions,
) -> Result<CollectionSummary> {
    summarize(manifests, Some(remote))
}

fn summarize(manifests: &[PathBuf], remote: Option<&CallRemote>) -> Result<CollectionSummary> {
    let mut s = CollectionSummary::default();
    let mut names: HashMap<u128, Name, std::hash::BuildHasherDefault<KeyHasher>> =
        HashMap::default();
    // Each argument's manifests (those in object storage read from local copies), each file
    // once: a manifest given twice (a file and its directory) would count its lines twice.
    let mut listed: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut _copies = Vec::new();
    for p in manifests {
        let found = if verify::url_of(p).is_some() {
            let mut got = Vec::new();
            _copies.extend(verify::fetch_remote_manifests(
                std::slice::from_ref(p),
                remote,
                &mut got,
            )?);
            let n = got.len();
            listed.extend(got.into_iter().map(|(m, local, _)| (m, local)));
            n
        } else {
            let dot = p.join(".nc3pack");
            let dir = if dot.is_dir() { dot } else { p.clone() };
            let files = manifest_files(std::slice::from_ref(&dir))?;
            let n = files.len();
            for m in files {
                if seen.insert(std::fs::canonicalize(&m).unwrap_or_else(|_| m.clone())) {
                    listed.push((m.clone(), m));
                }
            }
            n
        };
        if found == 0 {
            return Err(crate::Error::NothingToSummarize {
                what: p.display().to_string(),
                why: crate::error::NothingFound::NoManifest {
                    prefix: verify::url_of(p).is_some(),
                },
            });
        }
    }
    s.manifests = listed.len();
    for (k, (m, local)) in listed.iter().enumerate() {
        read(local, |n, e| {
            s.lines += 1;
            let Some(e) = e else {
                s.bad_lines.push((m.clone(), n));
                return;
            };
            let slot = names.entry(key(&e.name)).or_default();
            // A deletion is recorded before it is made; a failure after it means the
            // original was kept (its bytes changed, it could not be unlinked).
            // (Only in the same manifest: lines say which came first within one file.)
            if e.deleted {
                slot.deleted = Some(k);
            } else if e.status == Status::Failed && slot.deleted == Some(k) {
                slot.deleted = None;
            }
            if e.is_done_before() {
                // Refers to an earlier line's record.
                slot.archived = true;
                return;
            }
            if e.status == Status::Failed {
                let error = e
                    .error
                    .unwrap_or_else(|| "failed (no error recorded)".into());
                slot.failed = Some(Box::new((e.input, error.into_boxed_str())));
                return;
            }
            // A full `skipped` line repeats the record; its seconds are the rerun's check.
            if e.status == Status::Packed || !slot.archived {
                slot.seconds = e.seconds as f32;
            }
            slot.archived = true;
            slot.sizes = e.size.zip(e.output_size);
            slot.lossy = e.restored.is_some();
        })?;
    }
    s.files = names.len();
    for n in names.into_values() {
        if n.archived {
            s.packed += 1;
            match n.sizes {
                Some((i, o)) => {
                    s.input_bytes += i;
                    s.output_bytes += o;
                }
                None => s.unknown_size += 1,
            }
            s.lossy += usize::from(n.lossy);
            s.deleted += usize::from(n.deleted.is_some());
            s.seconds += f64::from(n.seconds);
        }
        if let (false, Some(f)) = (n.archived, n.failed) {
            let (input, error) = *f;
            s.failures.push((input, error.into()));
        }
    }
    s.failures.sort();
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(json: &str) -> String {
        format!("{json}\n")
    }

    #[test]
    fn a_names_last_entry_counts_and_a_short_skipped_line_keeps_the_earlier_record() {
        let dir = tempfile::tempdir().unwrap();
        let m = dir.path().join("m.jsonl");
        let text = [
            line(r#"{"name":"a","status":"packed","size":100,"output_size":40,"xxh3":"01","mtime_ns":1,"seconds":0.5}"#),
            line(r#"{"name":"b","status":"failed","input":"/in/b","error":"not netCDF"}"#),
            line(r#"{"name":"c","status":"packed","size":10,"output_size":5,"xxh3":"02","mtime_ns":1,"seconds":0.25}"#),
            line(r#"{"name":"a","status":"skipped","deleted":true}"#),
            line(r#"{"name":"c","status":"failed","input":"/in/c","error":"changed"}"#),
            line(r#"{"name":"c","status":"packed","size":12,"output_size":6,"xxh3":"03","mtime_ns":2,"seconds":0.25}"#),
            line(r#"{"name":"d","status":"skipped"}"#),
            "not json\n".to_string(),
            r#"{"name":"e","status":"packed","size":1"#.to_string(),
        ]
        .concat();
        std::fs::write(&m, text).unwrap();
        let s = summarize_collection(&[dir.path().to_path_buf()]).unwrap();
        assert_eq!((s.manifests, s.lines, s.files, s.packed), (1, 8, 4, 3));
        assert_eq!(
            (s.input_bytes, s.output_bytes, s.unknown_size),
            (112, 46, 1)
        );
        assert_eq!((s.deleted, s.lossy), (1, 0));
        assert_eq!(s.seconds, 0.75);
        assert_eq!(
            s.failures,
            vec![(PathBuf::from("/in/b"), "not netCDF".into())]
        );
        assert_eq!(s.bad_lines, vec![(m.clone(), 8)]);
        assert_eq!(s.ratio(), Some(112.0 / 46.0));
        // A manifest given twice (in its directory and by name) is read once.
        let twice = summarize_collection(&[dir.path().to_path_buf(), m.clone()]).unwrap();
        assert_eq!(twice, s);

        // A failure in a manifest read after the one that packed the name: packed.
        let later = dir.path().join("n.jsonl");
        std::fs::write(
            &later,
            line(r#"{"name":"a","status":"failed","input":"/in/a","error":"x"}"#),
        )
        .unwrap();
        let s = summarize_collection(&[dir.path().to_path_buf()]).unwrap();
        assert_eq!((s.manifests, s.files, s.packed, s.deleted), (2, 4, 3, 1));
        assert_eq!(s.failures.len(), 1);

        // A deletion recorded, then a failure in the same manifest (the original was read
        // again and had changed): kept, not deleted; a later deletion counts again.
        // (After the line cut short.)
        let mut text = std::fs::read_to_string(&m).unwrap() + "\n";
        text.push_str(&line(
            r#"{"name":"a","status":"failed","input":"/in/a","error":"/in/a: not deleted: its bytes changed"}"#,
        ));
        std::fs::write(&m, &text).unwrap();
        let s = summarize_collection(std::slice::from_ref(&m)).unwrap();
        assert_eq!((s.packed, s.deleted), (3, 0));
        text.push_str(&line(r#"{"name":"a","status":"skipped","deleted":true}"#));
        std::fs::write(&m, &text).unwrap();
        let s = summarize_collection(std::slice::from_ref(&m)).unwrap();
        assert_eq!((s.packed, s.deleted), (3, 1));
    }

    #[test]
    fn a_directory_without_a_manifest_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let e = summarize_collection(&[dir.path().to_path_buf()]).unwrap_err();
        assert!(e.to_string().contains("no manifest found"), "{e}");
    }
}
