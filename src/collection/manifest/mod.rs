//! The manifest of a collection: one JSON object a line, appended as each file of a batch
//! finishes (`OUT/.nc3pack/manifest-I-of-N.jsonl`, or `--manifest PATH`).
//!
//! A line is written with one `write` on a file opened for appending, as soon as the file's
//! outcome is final (for a packed file: once its archive is synced and renamed into place), so
//! a run that is killed loses at most the lines of the files in flight; a line cut short by a
//! kill (the last one, without its newline) is ignored when the manifest is read, and the next
//! run starts on a new line.
//!
//! Fields (see docs/collections.md, "The manifest"): `status` (`packed`, `skipped` or `failed`),
//! `name` (the input's path relative to the root, which is also the archive's path relative to
//! OUT, less `.nc3z`), `input`, `output` (absolute paths), `size` and `mtime_ns` of the input
//! when it was packed, `xxh3` (the XXH3-128 of the input, 32 hex digits, the hash the archive's
//! lead records), `output_size`, `output_ino` and `output_ctime_ns` (which file the archive is,
//! as a stat found it once in place: [`FileId`]), `ratio`, `seconds`, and `error` for a
//! failure. A lossy archive
//! (`--quantize`) restores a file other than its input: its line also has `restored_size` and
//! `restored_xxh3`, the length and hash of that file, which the archive's lead and footer
//! record. A path that is not valid UTF-8 is written as a string with U+FFFD for the bytes that
//! are not, and exactly, in hex, in a second field named after it with `_hex` (`name_hex`,
//! `input_hex`, `output_hex`); readers take the `_hex` field when there is one. A `skipped`
//! line of an input found done as recorded holds its name only (and `deleted` or `kept` when
//! set): its record is the earlier line's ([`Entry::done_before`]).
//!
//! A collection packed into object storage (`-o s3://BUCKET/PREFIX/`) has the same lines, with
//! its objects' URLs as `output`; its manifest is appended to locally and copied whole to
//! `PREFIX/.nc3pack/` in the bucket. [`verify_collection`] takes manifests by URL too (an
//! object, or a `.../.nc3pack/` prefix whose `*.jsonl` objects are read), and verifies the
//! archives they name in the bucket.

mod append;
mod done;
mod ends;
mod read;
mod record;
mod scan;
mod summary;
mod verify;

pub use append::*;
pub use done::*;
pub use ends::*;
pub use read::*;
pub use record::*;
use scan::*;
pub use summary::*;
pub use verify::*;

#[cfg(test)]
mod tests;
