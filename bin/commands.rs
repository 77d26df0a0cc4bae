//! One function per command: each calls the library and prints what it returns.

use crate::cli::*;
use crate::text::{human, pack_summary, shown};
use anyhow::Context;
use indicatif::ProgressBar;
use nc3pack::collection::{CollectionEvent, CollectionOptions, FileOutcome};
use nc3pack::error::OptionError;
use nc3pack::remote::RemoteOptions;
use nc3pack::{PackOptions, UnpackOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

pub(super) fn run(cli: Cli) -> anyhow::Result<()> {
    // How URLs are reached: the environment, and `--anon`; given to every call that may read or
    // write one (the library keeps nothing process-wide).
    let remote = RemoteOptions::from_env();
    let anon = remote.anon() || cli.anon;
    let remote = remote.with_anon(anon);
    match cli.command {
        Command::Pack(a) => pack(a, &remote),
        Command::Unpack(a) => unpack(a, &remote),
        Command::Verify(a) => verify(a, &remote),
        Command::Reindex(a) => reindex(a),
        Command::Slice(a) => slice(a, &remote),
        Command::NetcdfPlugin(a) => netcdf_plugin(&a),
        Command::Info(a) => info(a, &remote),
        Command::Mount(a) => mount(&a),
        Command::Serve(a) => serve(&a),
    }
}

/// `nc3pack serve ARCHIVES --listen ADDR:PORT`: serves in the foreground until the process
/// ends (Ctrl-C, SIGTERM).
fn serve(a: &ServeArgs) -> anyhow::Result<()> {
    one_malloc_arena();
    let mut opts = nc3pack::serve::ServeOptions::default()
        .with_listen(a.listen)
        .with_public(a.public)
        .with_max_requests(a.max_requests as usize)
        .with_send_timeout(std::time::Duration::from_secs(u64::from(a.send_timeout)));
    if let Some(c) = a.cache {
        opts = opts.with_cache_bytes(u64::from(c));
    }
    let server = nc3pack::serve::Server::bind(&a.archives, &opts)?;
    eprintln!(
        "nc3pack: serving {} at http://{}/ (NAME.nc3z as /NAME); Ctrl-C stops",
        shown(&a.archives),
        server.local_addr()
    );
    Ok(server.run()?)
}

/// `nc3pack mount` where there is no FUSE mount (Android): says so.
#[cfg(not(target_os = "linux"))]
fn mount(_: &MountArgs) -> anyhow::Result<()> {
    anyhow::bail!("nc3pack mount needs Linux (FUSE); use `nc3pack serve` or `nc3pack unpack`")
}

/// `nc3pack mount ARCHIVES MOUNTPOINT`: serves the mount in the foreground until unmounted.
#[cfg(target_os = "linux")]
fn mount(a: &MountArgs) -> anyhow::Result<()> {
    one_malloc_arena();
    let mut opts = nc3pack::mount::MountOptions::default().with_allow_other(a.allow_other);
    opts = opts.with_stats(a.stats);
    if let Some(j) = a.threads {
        opts = opts.with_threads(j);
    }
    if let Some(c) = a.cache {
        opts = opts.with_cache_bytes(u64::from(c));
    }
    let m = nc3pack::mount::mount(&a.archives, &a.mountpoint, &opts)?;
    let (from, to) = (shown(&a.archives), shown(&a.mountpoint));
    eprintln!("nc3pack: {from} mounted on {to}; Ctrl-C or `fusermount3 -u {to}` unmounts");
    Ok(m.wait()?)
}

/// Gives glibc's malloc one arena, before the threads of a long-running server start: by
/// default each thread gets an arena of its own, and the decoded blocks (a MiB each) one thread
/// frees stay in its arena, out of reach of the others. With 8 readers of a mount (cache
/// 256 MiB), peak resident memory went from 328-353 MiB to 249 MiB (two arenas: 273-307 MiB);
/// the threads allocate a block's buffers once per decode, so they hardly wait for one another.
/// Other C libraries: nothing to do.
fn one_malloc_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a tunable of glibc's allocator; it is called before this
    // process starts other threads, and M_ARENA_MAX takes any positive count.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// `-j`, or the library's default (all cores).
fn threads(j: Option<usize>) -> usize {
    j.unwrap_or_else(|| UnpackOptions::default().threads())
}

/// The packing options the arguments give.
fn pack_options(a: &PackArgs) -> PackOptions {
    let opts = match a.level.unwrap_or(Level::Fast) {
        Level::Fast => PackOptions::fast().with_codec(a.codec),
        Level::Max => PackOptions::max().with_codec(a.codec),
        Level::Number(n) => PackOptions::fast().with_codec(a.codec).with_level(n),
    };
    // An explicit block size applies to every variable; without one, the preset's.
    let opts = match a.block_size {
        Some(b) => opts.with_block_size(b),
        None => opts,
    }
    .with_filter(a.filter)
    .with_pco(!a.no_pco)
    .with_compact(!a.no_compact)
    .with_force(a.common.force);
    // Without `-j`, the library's default: the cores, looked up only if the file needs them.
    let opts = match a.common.threads {
        Some(j) => opts.with_threads(j),
        None => opts,
    };
    let opts = a.vars.iter().cloned().fold(opts, PackOptions::with_var);
    a.quantize
        .iter()
        .cloned()
        .fold(opts, PackOptions::with_quantize)
}

/// `nc3pack pack IN OUT` (a file, a pipe or a URL; to a file or an s3:// URL).
fn pack(a: PackArgs, remote: &RemoteOptions) -> anyhow::Result<()> {
    let opts = pack_options(&a);
    if let Some(dir) = &a.output_dir {
        return pack_collection(&a, dir, opts, remote);
    }
    let [input, output] = a.paths.as_slice() else {
        let given = a.paths.len();
        return Err(nc3pack::Error::from(OptionError::PackPaths { given }).into());
    };
    let t = Instant::now();
    // An input URL is read as a stream, in one pass, as a pipe is.
    let input_url = input.to_str().filter(|s| nc3pack::is_url(s));
    let quiet = a.common.quiet;
    if let Some(url) = output.to_str().filter(|s| nc3pack::is_url(s)) {
        let s = match input_url {
            Some(from) => {
                let stream = nc3pack::remote::open_stream(from, remote)?;
                nc3pack::pack_reader_to_url(stream, input, url, &opts, remote)?
            }
            None => nc3pack::pack_to_url(input, url, &opts, remote)?,
        };
        warn_moved_outside(&input.display().to_string(), &s, None);
        let (what, secs) = (pack_summary(&s, ", uploaded"), t.elapsed().as_secs_f64());
        let (i, o) = (shown(input), shown(output));
        (!quiet).then(|| eprintln!("{i} -> {o}: {what}, {secs:.2} s"));
        return Ok(());
    }
    if output.as_os_str() == "-" {
        return Err(nc3pack::Error::from(OptionError::PackToStdout).into());
    }
    let stdin = input.as_os_str() == "-";
    let name = if stdin {
        "<stdin>".into()
    } else {
        shown(input)
    };
    // A pipe given as a path (`<(...)`, /dev/stdin, a FIFO) is read as a stream too.
    let meta = (!stdin && input_url.is_none()).then(|| std::fs::metadata(input));
    let pb = match meta {
        None => stream_spinner(quiet, if stdin { "standard input" } else { &name }),
        Some(Ok(m)) if !m.is_file() => stream_spinner(quiet, &input.display().to_string()),
        Some(m) => progress_bar(m.map_or(0, |m| m.len()), quiet, "packing"),
    };
    let opts = match pb.clone() {
        Some(pb) => opts.with_progress(move |n| {
            if pb.is_hidden() && n >= 64 << 20 {
                pb.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            }
            pb.set_position(n);
        }),
        None => opts,
    };
    let s = match input_url {
        _ if stdin => {
            // (`nc3pack -f - x.nc < x.nc`: packing would replace its own input.)
            if is_file(output, std_file(0)?) {
                return Err(nc3pack::Error::Refused {
                    path: output.to_path_buf(),
                    what: nc3pack::error::Refusal::IsInput,
                }
                .into());
            }
            nc3pack::pack_reader(std::io::stdin().lock(), "<stdin>".as_ref(), output, &opts)?
        }
        Some(url) => nc3pack::pack_reader(
            nc3pack::remote::open_stream(url, remote)?,
            input,
            output,
            &opts,
        )?,
        None => nc3pack::pack_file(input, output, &opts)?,
    };
    pb.inspect(ProgressBar::finish_and_clear);
    warn_moved_outside(&name, &s, None);
    let (what, secs) = (pack_summary(&s, ""), t.elapsed().as_secs_f64());
    (!quiet).then(|| eprintln!("{name} -> {}: {what}, {secs:.2} s", output.display()));
    Ok(())
}

/// `nc3pack pack IN... -o OUT`: one progress bar, failures (and what could not be read while
/// looking for files) listed at the end, then a summary.
fn pack_collection(
    a: &PackArgs,
    dir: &Path,
    opts: PackOptions,
    remote: &RemoteOptions,
) -> anyhow::Result<()> {
    // A batch's worker threads are started afresh for every chunk of inputs, each taking
    // whichever arena is free: with one arena a shard's resident memory stays level over a
    // long batch (17 MiB at 12,500 and at 100,000 files) instead of creeping up (24-38 MiB).
    one_malloc_arena();
    let (t, quiet) = (Instant::now(), a.common.quiet);
    let bar: Arc<OnceLock<ProgressBar>> = Arc::default();
    let b = bar.clone();
    let show = move |e: &CollectionEvent| match e {
        CollectionEvent::Planned { inputs } if !quiet && *inputs > 1 && stderr_is_terminal() => {
            let style = "packing [{bar:40}] {pos}/{len} files, {per_sec}, eta {eta}";
            b.get_or_init(|| styled(ProgressBar::new(*inputs as u64), style));
        }
        CollectionEvent::Finished {
            finished,
            input,
            outcome,
            ..
        } => {
            if let FileOutcome::Packed { summary } = outcome {
                warn_moved_outside(&shown(input), summary, b.get());
            }
            b.get().inspect(|pb| pb.set_position(*finished as u64));
        }
        _ => {}
    };
    let mut copts = CollectionOptions::default()
        .with_pack(opts)
        .with_progress(show)
        .with_remote(remote.clone());
    copts = copts
        .with_shard(a.shard.unwrap_or_default())
        .with_delete_input(a.delete_input);
    copts = copts.with_manifest_copy_every(a.manifest_copy_every);
    // For bench/collection.sh only: packing without the manifest, to measure what it costs.
    if std::env::var_os("NC3PACK_BENCH_NO_MANIFEST").is_some() {
        copts = copts.with_write_manifest(false);
    }
    copts = a.files_from.iter().fold(copts, |o, f| o.with_files_from(f));
    copts = a.root.iter().fold(copts, |o, r| o.with_root(r));
    copts = a.manifest.iter().fold(copts, |o, m| o.with_manifest(m));
    let r = nc3pack::pack_collection(&a.paths, dir, &copts)?;
    bar.get().inspect(|pb| pb.finish_and_clear());
    r.unreadable.iter().for_each(|e| eprintln!("nc3pack: {e}"));
    r.leftovers.iter().for_each(|l| eprintln!("nc3pack: {l}"));
    let files = |n: usize| format!("{n} temporary file{}", if n == 1 { "" } else { "s" });
    if r.temporaries_removed > 0 {
        let n = files(r.temporaries_removed);
        eprintln!("nc3pack: removed {n} of killed runs from {}", dir.display());
    }
    if r.temporaries_left > 0 {
        let n = files(r.temporaries_left);
        eprintln!(
            "nc3pack: left {n} in {} whose process may be at work (running here, or of another host)",
            dir.display()
        );
    }
    for (input, why) in &r.kept {
        eprintln!("nc3pack: {}: kept: {why}", input.display());
    }
    for (input, e) in &r.failures {
        match e {
            // An option that does not fit this file (a --quantize name it lacks): which file.
            nc3pack::Error::Option(_) => eprintln!("nc3pack: {}: {e}", input.display()),
            _ => eprintln!("nc3pack: {e}"),
        }
    }
    (!quiet).then(|| eprintln!("{}", crate::text::collection(&r, t.elapsed().as_secs_f64())));
    if let Some(e) = r.manifest_error {
        return Err(e.into());
    }
    let hidden = r.leftovers.iter().filter(|l| l.needs_attention()).count();
    if hidden > 0 && r.failures.is_empty() && r.unreadable.is_empty() {
        anyhow::bail!(
            "{hidden} original{} moved aside by a killed run could not be put back (listed above)",
            if hidden == 1 { "" } else { "s" }
        );
    }
    match (r.failures.len(), r.unreadable.len(), r.files) {
        (0, 0, _) => Ok(()),
        (f, 0, n) => anyhow::bail!("{f} of {n} files failed (listed above)"),
        (f, u, n) => anyhow::bail!(
            "{f} of {n} files failed, {u} path{} could not be read (listed above)",
            if u == 1 { "" } else { "s" }
        ),
    }
}

/// `nc3pack unpack ARCHIVE OUT` (OUT `-`: standard output).
fn unpack(a: UnpackArgs, remote: &RemoteOptions) -> anyhow::Result<()> {
    let t = Instant::now();
    let pb = progress_bar(file_len(&a.input), a.common.quiet, "unpacking");
    let mut opts = UnpackOptions::default()
        .with_threads(threads(a.common.threads))
        .with_force(a.common.force)
        .with_remote(remote.clone());
    if let Some(pb) = pb.clone() {
        opts = opts.with_progress(move |n| {
            pb.set_length(n.max(pb.length().unwrap_or(0)));
            pb.set_position(n);
        });
    }
    let to_stdout = a.output.as_os_str() == "-";
    // (`nc3pack unpack x.nc3z - >> x.nc3z` would append the file to its own archive.)
    if to_stdout && is_file(&a.input, std_file(1)?) {
        anyhow::bail!(
            "{}: standard output is this archive; refusing to write to it",
            a.input.display()
        );
    }
    let n = if to_stdout {
        let stdout = Path::new("<stdout>");
        match nc3pack::unpack_to_writer(&a.input, std::io::stdout(), stdout, &opts) {
            Ok(n) => n,
            // A reader that stops early (`| head`) is not an error: stop quietly.
            Err(nc3pack::Error::Io { source, .. })
                if source.kind() == std::io::ErrorKind::BrokenPipe =>
            {
                return Ok(());
            }
            Err(e @ nc3pack::Error::HashMismatch { .. }) => anyhow::bail!(
                "{e}; the bytes written to standard output are not the original: discard them"
            ),
            Err(e) => return Err(e.into()),
        }
    } else {
        nc3pack::unpack_file(&a.input, &a.output, &opts)?
    };
    pb.inspect(ProgressBar::finish_and_clear);
    let out = if to_stdout {
        "<stdout>".into()
    } else {
        a.output.display().to_string()
    };
    let (i, n, secs) = (shown(&a.input), human(n), t.elapsed().as_secs_f64());
    (!a.common.quiet).then(|| eprintln!("{i} -> {out}: {n} restored and verified, {secs:.2} s"));
    Ok(())
}

/// `nc3pack verify ARCHIVE` and `nc3pack verify --manifest M...`: exit 1 when damaged.
fn verify(a: VerifyArgs, remote: &RemoteOptions) -> anyhow::Result<()> {
    let (against, threads) = (a.against.as_deref(), threads(a.threads));
    let Some(archive) = &a.archive else {
        let (manifests, nothing) = (&a.manifest, &|_| {});
        let mut opts = nc3pack::collection::VerifyCollectionOptions::default()
            .with_threads(threads)
            .with_shard(a.shard.unwrap_or_default());
        if let Some(root) = against {
            opts = opts.with_against(root);
        }
        let r = nc3pack::collection::verify_collection_with(manifests, &opts, remote, nothing)?;
        write_stdout(crate::text::verify_collection(&r, against.is_some()).as_bytes())?;
        if !r.is_ok() {
            std::process::exit(1);
        }
        return Ok(());
    };
    let mut opts = nc3pack::VerifyOptions::default()
        .with_threads(threads)
        .with_remote(remote.clone());
    if let Some(original) = against {
        opts = opts.with_against(original);
    }
    let r = nc3pack::verify(archive, &opts)?;
    let lossy = nc3pack::open_with(archive, remote)
        .ok()
        .and_then(|z| nc3pack::quantize::Lossy::of(z.header()));
    let text = crate::text::verify(archive, a.against.as_deref(), &r, lossy.as_ref());
    write_stdout(text.as_bytes())?;
    if !r.is_intact() {
        std::process::exit(1);
    }
    Ok(())
}

/// `nc3pack reindex DAMAGED OUT`: exit 1 when a block was lost.
fn reindex(a: ReindexArgs) -> anyhow::Result<()> {
    let opts = nc3pack::ReindexOptions::default().with_force(a.common.force);
    let r = nc3pack::reindex(&a.input, &a.output, &opts)?;
    if !a.common.quiet {
        let (i, o) = (a.input.display(), a.output.display());
        eprintln!(
            "{i} -> {o}: recovered {} of {} blocks",
            r.recovered, r.blocks
        );
        for (var, b) in r.lost.iter().take(20) {
            eprintln!("  lost: block {b} of {var}");
        }
        if r.lost.len() > 20 {
            eprintln!("  ... and {} more lost blocks", r.lost.len() - 20);
        }
    }
    if !r.lost.is_empty() {
        std::process::exit(1);
    }
    Ok(())
}

/// `nc3pack slice FILE VAR`: a hyperslab on standard output.
fn slice(a: SliceArgs, remote: &RemoteOptions) -> anyhow::Result<()> {
    use nc3pack::dump::{Format, SliceError};
    use nc3pack::Dataset;
    let ds = nc3pack::open_with(&a.file, remote)?;
    let (start, count, stride) = (a.start.as_deref(), a.count.as_deref(), a.stride.as_deref());
    let slab = ds.slab(&a.var, start, count, stride)?;
    let format = match a.format {
        SliceFormat::Json => Format::Json,
        SliceFormat::Raw => Format::Raw,
        SliceFormat::Text => Format::Text,
    };
    match nc3pack::dump::write_slice(&ds, &a.var, &slab, format, std::io::stdout().lock()) {
        Err(SliceError::Read(e)) => Err(e.into()),
        // A reader that stops early (`| head`) is not an error.
        Err(SliceError::Write(e)) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).context("writing to standard output")
        }
        _ => Ok(()),
    }
}

/// `nc3pack info FILE [--json]`.
fn info(a: InfoArgs, remote: &RemoteOptions) -> anyhow::Result<()> {
    let Some(file) = &a.file else {
        let s = nc3pack::collection::summarize_collection_with(&a.manifest, remote)?;
        let text = if a.json {
            crate::text::collection_summary_json(&s)
        } else {
            crate::text::collection_summary(&s)
        };
        return write_stdout(text.as_bytes());
    };
    let name = file
        .file_stem()
        .map_or("file".into(), |s| s.to_string_lossy());
    let name = name.strip_suffix(".nc").unwrap_or(&name).to_string();
    // Written as it is made: memory stays that of the parsed header, whatever its size.
    let opts = nc3pack::info::InfoOptions::default().with_remote(remote.clone());
    let out = &mut std::io::stdout().lock();
    match nc3pack::info::write_with(file, &opts, a.json, &name, out) {
        Err(nc3pack::Error::Io { source, .. })
            if source.kind() == std::io::ErrorKind::BrokenPipe =>
        {
            Ok(())
        }
        Err(nc3pack::Error::Io {
            op: "write",
            source,
            ..
        }) => Err(source).context("writing to standard output"),
        r => Ok(r?),
    }
}

/// The netCDF-C plugin's library: `--library`, NC3PACK_NETCDF_PLUGIN, or beside this program.
fn plugin_library(a: &NetcdfPluginArgs) -> anyhow::Result<PathBuf> {
    const NAME: &str = "libnc3pack_netcdf.so";
    let env = std::env::var_os("NC3PACK_NETCDF_PLUGIN").map(PathBuf::from);
    if let Some(p) = a.library.clone().or(env) {
        let what = || format!("{}: the netCDF-C plugin library", p.display());
        return std::fs::canonicalize(&p).with_context(what);
    }
    let exe = std::env::current_exe().context("finding this program's directory")?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    for p in [dir.join(NAME), dir.join("../lib").join(NAME)] {
        if p.is_file() {
            return std::fs::canonicalize(&p).with_context(|| p.display().to_string());
        }
    }
    anyhow::bail!(
        "{NAME} not found beside {} nor in ../lib (scripts/install.sh in nc3pack's source installs \
         both; or build it with `cargo build --release -p nc3pack-netcdf` and give --library PATH)",
        exe.display()
    )
}

/// `nc3pack netcdf-plugin`: the lines that make this installation's netCDF-C read archives.
fn netcdf_plugin(a: &NetcdfPluginArgs) -> anyhow::Result<()> {
    let lib = plugin_library(a)?;
    let lib = lib.display();
    let rc = format!("NETCDF.UDF0.LIBRARY={lib}\nNETCDF.UDF0.INIT=nc3pack_netcdf_init\n");
    if a.rc {
        print!("{rc}");
        return Ok(());
    }
    let version = std::process::Command::new("nc-config")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "not found by nc-config".into());
    print!(
        "# nc3pack's netCDF-C plugin: {lib}
# netCDF-C here: {version}
#
# netCDF-C 4.10 and later (netCDF4-python's wheels bundle 4.10): these two lines in ~/.ncrc,
# ./.ncrc, or a file named by NCRCENV_RC (netCDF4-python reads it at `import netCDF4`):
{rc}#
# netCDF-C 4.9 (no plugin loading): run each tool with the library preloaded:
#   LD_PRELOAD={lib} ncdump archive.nc3z
#
# Python, any netCDF-C from 4.9: import nc3pack.netcdf4; nc3pack.netcdf4.register()
# netCDF-C 4.8 and older cannot load the plugin: `nc3pack unpack` the archive instead.
"
    );
    Ok(())
}

/// Warns of the values quantization moved outside a variable's valid range, a line each
/// (printed with `-q` too: the archive is not what the input's readers would read).
fn warn_moved_outside(input: &str, s: &nc3pack::PackSummary, pb: Option<&ProgressBar>) {
    for m in &s.moved_outside_valid {
        let line = format!("nc3pack: warning: {input}: {m}; netCDF readers take them as missing");
        match pb {
            Some(pb) => pb.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map_or(0, |m| m.len())
}

/// The file open as standard input or output (`fd` 0 or 1): its device and inode when it is
/// a regular file. (A descriptor closed when the program started, `>&-`, is /dev/null here:
/// Rust's runtime opens it there.)
fn std_file(fd: libc::c_int) -> anyhow::Result<Option<(u64, u64)>> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat only writes a `stat` into the buffer it is given, whatever `fd` is (a
    // closed descriptor fails with EBADF).
    if unsafe { libc::fstat(fd, st.as_mut_ptr()) } != 0 {
        let name = if fd == 0 { "input" } else { "output" };
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("standard {name} is not open"));
    }
    // SAFETY: fstat succeeded, so it filled the buffer.
    let st = unsafe { st.assume_init() };
    let regular = st.st_mode & libc::S_IFMT == libc::S_IFREG;
    Ok(regular.then_some((st.st_dev, st.st_ino)))
}

/// Whether `path` (followed through symbolic links) is the file `id` ([`std_file`]).
fn is_file(path: &Path, id: Option<(u64, u64)>) -> bool {
    use std::os::unix::fs::MetadataExt;
    id.is_some_and(|id| std::fs::metadata(path).is_ok_and(|m| (m.dev(), m.ino()) == id))
}

/// Writes to stdout; a closed pipe (`| head`) is not an error.
fn write_stdout(bytes: &[u8]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).context("writing to standard output")
        }
        _ => Ok(()),
    }
}
