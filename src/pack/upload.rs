//! Packing into object storage: [`pack_to_url`] and [`pack_reader_to_url`] pack into a
//! temporary archive and upload it with [`crate::remote::upload_file`].

use crate::error::Result;
use crate::remote::{check_upload_target, upload_file, RemoteOptions};
use crate::{PackOptions, PackSummary};
use std::io;
use std::path::Path;

/// Packs the netCDF-3 file `input` into an archive at `url` (`s3://BUCKET/KEY`): into a
/// temporary file first (in the temporary directory, `TMPDIR`), then uploaded with
/// [`crate::remote::upload_file`]. An existing object is refused unless `opts.force` (checked before packing,
/// and again before uploading).
///
/// ```no_run
/// let remote = nc3pack::remote::RemoteOptions::from_env();
/// let s = nc3pack::pack_to_url("in.nc".as_ref(), "s3://bucket/out.nc3z",
///     &nc3pack::PackOptions::default(), &remote)?;
/// println!("{} bytes", s.output_len);
/// # Ok::<(), nc3pack::Error>(())
/// ```
///
/// # Errors
///
/// As [`crate::pack_file`] for the packing, as [`crate::remote::upload_file`] for the upload.
pub fn pack_to_url(
    input: &Path,
    url: &str,
    opts: &PackOptions,
    remote: &RemoteOptions,
) -> Result<PackSummary> {
    pack_then_upload(url, opts, remote, |tmp, opts| {
        crate::pack_file(input, tmp, opts)
    })
}

/// Packs a netCDF-3 file arriving on `reader` (in one pass, as [`crate::pack_reader`] does;
/// `input` names it in errors) into an archive at `url` (`s3://BUCKET/KEY`), as
/// [`pack_to_url`] does.
///
/// ```no_run
/// let remote = nc3pack::remote::RemoteOptions::from_env();
/// let input = nc3pack::remote::open_stream("https://example.org/in.nc", &remote)?;
/// let s = nc3pack::pack_reader_to_url(input, "https://example.org/in.nc".as_ref(),
///     "s3://bucket/out.nc3z", &nc3pack::PackOptions::default(), &remote)?;
/// println!("{} bytes", s.output_len);
/// # Ok::<(), nc3pack::Error>(())
/// ```
///
/// # Errors
///
/// As [`crate::pack_reader`] for the packing, as [`crate::remote::upload_file`] for the upload.
pub fn pack_reader_to_url<R: io::Read>(
    reader: R,
    input: &Path,
    url: &str,
    opts: &PackOptions,
    remote: &RemoteOptions,
) -> Result<PackSummary> {
    pack_then_upload(url, opts, remote, |tmp, opts| {
        crate::pack_reader(reader, input, tmp, opts)
    })
}

/// Checks `url` (an `s3://` URL, no object there unless `opts.force`), packs with `pack` into
/// a temporary archive, and uploads it.
fn pack_then_upload(
    url: &str,
    opts: &PackOptions,
    remote: &RemoteOptions,
    pack: impl FnOnce(&Path, &PackOptions) -> Result<PackSummary>,
) -> Result<PackSummary> {
    check_upload_target(url, remote, opts.force)?;
    let tmp = temp_archive()?;
    let summary = pack(&tmp.path, &opts.clone().with_force(true))?;
    upload_file(&tmp.path, url, remote, opts.force)?;
    Ok(summary)
}

/// A temporary archive in the temporary directory, removed when dropped, and by the signal
/// handlers of [`crate::cleanup`] (a signal must not leave it behind). Named as every temporary
/// file is, `.nc3pack-*.part` (`.nc3pack-upload-XXXXXX.part`), so that what SIGKILL leaves is
/// found by one `find -name '.nc3pack-*.part'`.
struct TempArchive {
    path: std::path::PathBuf,
    // Dropped in this order: the file removed, then taken out of the registry.
    _file: tempfile::TempPath,
    _registered: Option<crate::cleanup::Registered>,
}

fn temp_archive() -> Result<TempArchive> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = std::env::temp_dir();
    // Absolute: the signal handler does not know the working directory of the moment.
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    // Registered before the file is created, so a signal never misses it.
    let mut registered = None;
    let file = tempfile::Builder::new()
        .prefix(".nc3pack-upload-")
        .suffix(".part")
        .make_in(&dir, |path| {
            let (r, f) = crate::cleanup::Registered::create(path, || {
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(path)
            })?;
            registered = Some(r);
            Ok(f)
        })
        .map_err(crate::error::io_err(&dir, "create a temporary file in"))?
        .into_temp_path();
    Ok(TempArchive {
        path: file.to_path_buf(),
        _file: file,
        _registered: registered,
    })
}
