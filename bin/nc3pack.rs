//! The nc3pack command line: parses arguments and calls the library.

use anyhow::Context;
use clap::builder::TypedValueParser;
use clap::{Args, Parser, Subcommand};
use nc3pack::format::Codec;
use nc3pack::FilterMode;
use nc3pack::{PackOptions, UnpackOptions};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "nc3pack",
    version,
    about = "Block-compressed, randomly readable, byte-exact archives of netCDF-3 files",
    after_help = "`nc3pack IN.nc OUT.nc3z` is short for `nc3pack pack IN.nc OUT.nc3z`.\nExit codes: 0 success, 1 error, 2 usage error (including out-of-range option values)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Pack a netCDF-3 file (CDF-1, CDF-2 or CDF-5) into an archive.
    Pack(PackArgs),
    /// Restore the original netCDF-3 file from an archive, byte for byte (checked by hash).
    Unpack(UnpackArgs),
    /// Describe a netCDF-3 file or an archive (dimensions, variables, attributes, ratios).
    Info(InfoArgs),
    /// Print a hyperslab of one variable of a netCDF-3 file or an archive.
    Slice(SliceArgs),
    /// Check every checksum of an archive and the hash of its restored data; list damage.
    /// Exit 0 when intact, 1 when damaged.
    Verify(VerifyArgs),
    /// Rebuild a damaged or truncated archive's index by scanning its block frames; lost
    /// blocks are marked lost. Exit 0 when every block was recovered, 1 otherwise.
    Reindex(ReindexArgs),
}

#[derive(Args)]
struct VerifyArgs {
    /// The archive.
    archive: PathBuf,
    /// Also check that this original netCDF-3 file is what the archive restores.
    #[arg(long)]
    against: Option<PathBuf>,
    /// Worker threads, 1 to 1024 [default: all cores].
    #[arg(short = 'j', long, value_parser = threads_parser())]
    threads: Option<usize>,
}

#[derive(Args)]
struct ReindexArgs {
    /// The damaged archive.
    input: PathBuf,
    /// The repaired archive to write.
    output: PathBuf,
    #[command(flatten)]
    common: Common,
}

#[derive(Args)]
struct Common {
    /// Overwrite the output if it exists.
    #[arg(short, long)]
    force: bool,
    /// Print nothing but errors.
    #[arg(short, long)]
    quiet: bool,
    /// Worker threads, 1 to 1024 [default: all cores].
    #[arg(short = 'j', long, value_parser = threads_parser())]
    threads: Option<usize>,
}

#[derive(Args)]
struct PackArgs {
    /// IN.nc OUT.nc3z (IN `-`, a pipe or a FIFO: read as a stream, in one pass); or, with -o,
    /// the netCDF-3 files and directories to pack. Directories are searched for *.nc files,
    /// following symbolic links (each directory once); what cannot be read is reported at the
    /// end and the rest is packed.
    #[arg(required = true, num_args = 1..)]
    paths: Vec<PathBuf>,
    /// Pack every input into this directory (as NAME.nc3z, keeping directory structure), in
    /// parallel; a bad file, or a path that cannot be read, is reported at the end and does not
    /// stop the others.
    #[arg(short = 'o', long = "output-dir")]
    output_dir: Option<PathBuf>,
    /// Block codec.
    #[arg(long, default_value = "zstd", value_parser = names_parser::<Codec>(Codec::NAMES))]
    codec: Codec,
    /// Codec level, or a preset: `fast` (the default: zstd 3, or zstd 1 for blocks where 3
    /// does not pay on a sample; deflate 6; filters judged on a sample) or `max` (zstd 19 /
    /// deflate 9, filters judged on whole blocks; for cold archives).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_level)]
    level: Option<Level>,
    /// Filter before the codec: auto (per block, the best of shuffle, bytedelta and zzdelta;
    /// with `--level max` also none and delta), none, shuffle, bytedelta, delta or zzdelta.
    #[arg(long, default_value = "auto", value_parser = names_parser::<FilterMode>(FilterMode::NAMES))]
    filter: FilterMode,
    /// Never use the pco codec for numeric blocks (by default, with `--filter auto`, blocks of
    /// 16-, 32- and 64-bit numbers use it where it compresses better).
    #[arg(long)]
    no_pco: bool,
    /// Decoded bytes per block; accepts K/KiB/M/MiB/G/GiB suffixes.
    #[arg(long, default_value = "1MiB", value_parser = parse_size)]
    block_size: u32,
    #[command(flatten)]
    common: Common,
}

#[derive(Args)]
struct UnpackArgs {
    /// Archive to read.
    input: PathBuf,
    /// netCDF-3 file to write (`-`: standard output; the hash is checked at the end, and on a
    /// mismatch the exit code is 1 and what was written must be discarded).
    output: PathBuf,
    #[command(flatten)]
    common: Common,
}

#[derive(Args)]
struct InfoArgs {
    /// A netCDF-3 file or an archive.
    file: PathBuf,
    /// Print JSON instead of CDL-like text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct SliceArgs {
    /// A netCDF-3 file or an archive.
    file: PathBuf,
    /// Variable name.
    var: String,
    /// First index per dimension, comma-separated [default: 0,...].
    #[arg(long, value_delimiter = ',')]
    start: Option<Vec<u64>>,
    /// Number of values per dimension [default: all that fit].
    #[arg(long, value_delimiter = ',')]
    count: Option<Vec<u64>>,
    /// Step per dimension [default: 1,...].
    #[arg(long, value_delimiter = ',')]
    stride: Option<Vec<u64>>,
    /// Output: text (like ncdump's data section), json ({"shape", "data"}), or raw (native-order
    /// values in C order on stdout).
    #[arg(long, value_enum, default_value_t = SliceFormat::Text)]
    format: SliceFormat,
}

/// `slice --format`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum SliceFormat {
    Text,
    Json,
    Raw,
}

/// A value parser for a type named on the command line: its names are listed in `--help` and
/// completions, and parsed with its `FromStr`.
fn names_parser<T>(
    names: &'static [&'static str],
) -> impl clap::builder::TypedValueParser<Value = T>
where
    T: std::str::FromStr<Err = nc3pack::ParseNameError> + Clone + Send + Sync + 'static,
{
    clap::builder::PossibleValuesParser::new(names).try_map(|s| s.parse::<T>())
}

#[derive(Clone, Copy)]
enum Level {
    Number(i32),
    Fast,
    Max,
}

fn parse_level(s: &str) -> Result<Level, String> {
    match s {
        "fast" => Ok(Level::Fast),
        "max" => Ok(Level::Max),
        _ => s
            .parse()
            .map(Level::Number)
            .map_err(|_| format!("{s:?} is not a level number, `fast` or `max`")),
    }
}

fn parse_size(s: &str) -> Result<u32, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size like 65536, 64KiB or 1MiB"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" | "kb" => 1 << 10,
        "m" | "mib" | "mb" => 1 << 20,
        "g" | "gib" | "gb" => 1 << 30,
        u => return Err(format!("unknown size unit {u:?} (use KiB, MiB or GiB)")),
    };
    n.checked_mul(mult)
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| format!("{s:?} is too large"))
}

/// `-j`: 1..=MAX_THREADS (the help text says 1024), else a usage error.
fn threads_parser() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::new().range(1..=nc3pack::MAX_THREADS as u64)
}

/// `-j`, or the library's default (all cores).
fn threads(j: Option<usize>) -> usize {
    j.unwrap_or_else(|| UnpackOptions::default().threads)
}

/// A progress bar on stderr, only when it is a terminal, the file is large and not quiet.
fn progress_bar(total: u64, quiet: bool, what: &str) -> Option<indicatif::ProgressBar> {
    if quiet || total < (64 << 20) || !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = indicatif::ProgressBar::new(total);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{msg} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    ) {
        pb.set_style(style.progress_chars("=> "));
    }
    pb.set_message(what.to_string());
    Some(pb)
}

/// For input of unknown length: a line counting the bytes read, shown once 64 MiB have been
/// read, only when stderr is a terminal and not quiet.
fn stream_spinner(quiet: bool, what: &str) -> Option<indicatif::ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = indicatif::ProgressBar::hidden();
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{msg} {bytes} read, {bytes_per_sec} {spinner}")
    {
        pb.set_style(style);
    }
    pb.set_message(format!("packing {what}:"));
    Some(pb)
}

fn human(n: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = n as f64;
    let mut u = 0;
    while x >= 1024.0 && u + 1 < units.len() {
        x /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{x:.1} {}", units[u])
    }
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map_or(0, |m| m.len())
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Pack(a) => {
            let opts = match a.level.unwrap_or(Level::Fast) {
                Level::Fast => PackOptions::fast().with_codec(a.codec),
                Level::Max => PackOptions::max().with_codec(a.codec),
                Level::Number(n) => PackOptions::fast().with_codec(a.codec).with_level(n),
            }
            .with_block_size(a.block_size)
            .with_filter(a.filter)
            .with_pco(!a.no_pco)
            .with_threads(threads(a.common.threads))
            .with_force(a.common.force);
            if let Some(dir) = &a.output_dir {
                return pack_batch(&a.paths, dir, &opts, a.common.quiet);
            }
            let [input, output] = a.paths.as_slice() else {
                return Err(nc3pack::Error::Option(format!(
                    "pack takes IN OUT, or IN... -o OUTDIR ({} paths given)",
                    a.paths.len()
                ))
                .into());
            };
            if output.as_os_str() == "-" {
                return Err(nc3pack::Error::Option(
                    "pack writes an archive to a file, not to standard output (`-`): its lead is \
                     rewritten when packing ends, which needs a seekable file"
                        .into(),
                )
                .into());
            }
            let t = Instant::now();
            let stdin = input.as_os_str() == "-";
            // A pipe given as a path (`<(...)`, /dev/stdin, a FIFO) is read as a stream too.
            let pb = if stdin {
                stream_spinner(a.common.quiet, "standard input")
            } else if std::fs::metadata(input).is_ok_and(|m| !m.is_file()) {
                stream_spinner(a.common.quiet, &input.display().to_string())
            } else {
                progress_bar(file_len(input), a.common.quiet, "packing")
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
            let s = if stdin {
                let input = std::io::stdin().lock();
                nc3pack::pack_reader(input, Path::new("<stdin>"), output, &opts)?
            } else {
                nc3pack::pack_file(input, output, &opts)?
            };
            if let Some(pb) = pb {
                pb.finish_and_clear();
            }
            if !a.common.quiet {
                let name = if stdin {
                    "<stdin>".into()
                } else {
                    input.display().to_string()
                };
                eprintln!(
                    "{} -> {}: {} -> {} (ratio {:.2}), {} block{}, {:.2} s",
                    name,
                    output.display(),
                    human(s.input_len),
                    human(s.output_len),
                    s.input_len as f64 / s.output_len.max(1) as f64,
                    s.blocks,
                    if s.blocks == 1 { "" } else { "s" },
                    t.elapsed().as_secs_f64()
                );
            }
        }
        Command::Unpack(a) => {
            let t = Instant::now();
            let pb = progress_bar(file_len(&a.input), a.common.quiet, "unpacking");
            let mut opts = UnpackOptions::default()
                .with_threads(threads(a.common.threads))
                .with_force(a.common.force);
            if let Some(pb) = pb.clone() {
                opts = opts.with_progress(move |n| {
                    pb.set_length(n.max(pb.length().unwrap_or(0)));
                    pb.set_position(n);
                });
            }
            let n = if a.output.as_os_str() == "-" {
                let stdout = Path::new("<stdout>");
                nc3pack::unpack_to_writer(&a.input, std::io::stdout(), stdout, &opts)
                .map_err(|e| match e {
                    e @ nc3pack::Error::HashMismatch { .. } => anyhow::anyhow!(
                        "{e}; the bytes written to standard output are not the original: discard them"
                    ),
                    e => e.into(),
                })?
            } else {
                nc3pack::unpack_file(&a.input, &a.output, &opts)?
            };
            if let Some(pb) = pb {
                pb.finish_and_clear();
            }
            if !a.common.quiet {
                eprintln!(
                    "{} -> {}: {} restored and verified, {:.2} s",
                    a.input.display(),
                    if a.output.as_os_str() == "-" {
                        "<stdout>".into()
                    } else {
                        a.output.display().to_string()
                    },
                    human(n),
                    t.elapsed().as_secs_f64()
                );
            }
        }
        Command::Verify(a) => {
            let r = nc3pack::verify(&a.archive, a.against.as_deref(), threads(a.threads))?;
            let mut text = String::new();
            for d in &r.damage {
                text += &format!("{}: damaged: {d}\n", a.archive.display());
            }
            if let (Some(orig), Some(m)) = (&a.against, r.original_matches) {
                let verdict = if m { "matches" } else { "does NOT match" };
                text += &format!("{}: {verdict} {}\n", a.archive.display(), orig.display());
            }
            if r.damage.is_empty() {
                text += &format!(
                    "{}: ok: {} blocks, every checksum matches, restored data matches the original's hash\n",
                    a.archive.display(),
                    r.blocks
                );
            }
            write_stdout(text.as_bytes())?;
            if !r.is_intact() {
                std::process::exit(1);
            }
        }
        Command::Reindex(a) => {
            let r = nc3pack::reindex(&a.input, &a.output, a.common.force)?;
            if !a.common.quiet {
                eprintln!(
                    "{} -> {}: recovered {} of {} blocks",
                    a.input.display(),
                    a.output.display(),
                    r.recovered,
                    r.blocks,
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
        }
        Command::Slice(a) => {
            use nc3pack::Dataset;
            let ds = nc3pack::open(&a.file)?;
            let slab = ds.slab(
                &a.var,
                a.start.as_deref(),
                a.count.as_deref(),
                a.stride.as_deref(),
            )?;
            use nc3pack::dump::{Format, SliceError};
            let format = match a.format {
                SliceFormat::Json => Format::Json,
                SliceFormat::Raw => Format::Raw,
                SliceFormat::Text => Format::Text,
            };
            let out = std::io::stdout().lock();
            match nc3pack::dump::write_slice(&ds, &a.var, &slab, format, out) {
                Err(SliceError::Read(e)) => return Err(e.into()),
                // A reader that stops early (`| head`) is not an error.
                Err(SliceError::Write(e)) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    return Err(e).context("writing to standard output")
                }
                _ => {}
            }
        }
        Command::Info(a) => {
            let name = a
                .file
                .file_stem()
                .map_or_else(|| "file".into(), |s| s.to_string_lossy().into_owned());
            let name = name.strip_suffix(".nc").unwrap_or(&name).to_string();
            // Written as it is made: memory stays that of the parsed header, whatever its size.
            match nc3pack::info::write(&a.file, a.json, &name, &mut std::io::stdout().lock()) {
                Err(nc3pack::Error::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::BrokenPipe => {}
                Err(nc3pack::Error::Io {
                    op: "write",
                    source,
                    ..
                }) => return Err(source).context("writing to standard output"),
                r => r?,
            }
        }
    }
    Ok(())
}

/// `nc3pack pack IN... -o OUTDIR`: every file, one progress bar, failures (and what could not
/// be read while looking for files) listed at the end.
fn pack_batch(
    inputs: &[PathBuf],
    dir: &Path,
    opts: &PackOptions,
    quiet: bool,
) -> anyhow::Result<()> {
    let t = Instant::now();
    let nc3pack::__private::Plan { jobs, unreadable } = nc3pack::__private::plan(inputs, dir)?;
    let pb = (!quiet && std::io::stderr().is_terminal() && jobs.len() > 1).then(|| {
        let pb = indicatif::ProgressBar::new(jobs.len() as u64);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "packing [{bar:40}] {pos}/{len} files, {per_sec}, eta {eta}",
        ) {
            pb.set_style(style.progress_chars("=> "));
        }
        pb
    });
    let progress = |n: usize| {
        if let Some(pb) = &pb {
            pb.set_position(n as u64);
        }
    };
    let results = nc3pack::__private::pack_all(&jobs, opts, &progress)?;
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    for e in &unreadable {
        eprintln!("nc3pack: {e}");
    }
    let (mut inb, mut outb, mut failed) = (0u64, 0u64, 0usize);
    for r in &results {
        match r {
            Ok(s) => {
                inb += s.input_len;
                outb += s.output_len;
            }
            Err(e) => {
                failed += 1;
                eprintln!("nc3pack: {e}");
            }
        }
    }
    if !quiet {
        eprintln!(
            "packed {} of {} files into {}: {} -> {} (ratio {:.2}), {:.2} s",
            results.len() - failed,
            results.len(),
            dir.display(),
            human(inb),
            human(outb),
            inb as f64 / outb.max(1) as f64,
            t.elapsed().as_secs_f64()
        );
    }
    match (failed, unreadable.len()) {
        (0, 0) => Ok(()),
        (f, 0) => anyhow::bail!("{f} of {} files failed (listed above)", results.len()),
        (f, u) => anyhow::bail!(
            "{f} of {} files failed, {u} path{} could not be read (listed above)",
            results.len(),
            if u == 1 { "" } else { "s" }
        ),
    }
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

fn main() {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // `nc3pack IN OUT` means `nc3pack pack IN OUT`.
    if let Some(first) = args.get(1).and_then(|a| a.to_str()) {
        let known = [
            "pack",
            "unpack",
            "info",
            "slice",
            "verify",
            "reindex",
            "help",
            "-h",
            "--help",
            "-V",
            "--version",
        ];
        if !known.contains(&first) {
            args.insert(1, "pack".into());
        }
    }
    // Ctrl-C, SIGTERM, SIGHUP and an allocation failure remove the temporary outputs.
    if let Err(e) = nc3pack::cleanup::install_signal_handlers() {
        eprintln!("nc3pack: cannot install signal handlers: {e}");
        std::process::exit(1);
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    if let Err(e) = run(cli) {
        // nc3pack's errors already say their cause; for others add causes that say something new.
        let (msg, code) = match e.downcast_ref::<nc3pack::Error>() {
            Some(ne @ nc3pack::Error::Option(_)) => (ne.to_string(), 2),
            Some(ne) => (ne.to_string(), 1),
            None => {
                let mut msg = e.to_string();
                for cause in e.chain().skip(1) {
                    let c = cause.to_string();
                    if !msg.contains(&c) {
                        msg = format!("{msg}: {c}");
                    }
                }
                (msg, 1)
            }
        };
        eprintln!("nc3pack: {msg}");
        std::process::exit(code);
    }
}
