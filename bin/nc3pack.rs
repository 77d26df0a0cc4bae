//! The nc3pack command line: parses arguments and calls the library.

use anyhow::Context;
use clap::builder::TypedValueParser;
use clap::{Args, Parser, Subcommand};
use nc3pack::error::OptionError;
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
    /// Read s3:// URLs anonymously (public buckets; also NC3PACK_ANON=1). Without it, requests
    /// are signed with the credentials of the environment (AWS_ACCESS_KEY_ID, ...).
    #[arg(long, global = true)]
    anon: bool,
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
    /// Print how netCDF-C tools (ncdump, NCO, nccopy, netCDF4-python, ...) read archives here:
    /// the RC file lines for netCDF-C 4.10 and later, the LD_PRELOAD line for 4.9.
    NetcdfPlugin(NetcdfPluginArgs),
}

#[derive(Args)]
struct NetcdfPluginArgs {
    /// The plugin library (default: libnc3pack_netcdf.so beside this program, or in ../lib
    /// from it; or NC3PACK_NETCDF_PLUGIN).
    #[arg(long, value_name = "PATH")]
    library: Option<PathBuf>,
    /// Print only the two RC file lines (`nc3pack netcdf-plugin --rc >> ~/.ncrc`).
    #[arg(long)]
    rc: bool,
}

#[derive(Args)]
struct VerifyArgs {
    /// The archive (a path, or an s3://, http(s):// or file:// URL).
    #[arg(required_unless_present = "manifest", conflicts_with = "manifest")]
    archive: Option<PathBuf>,
    /// Verify every archive these manifests (files, or directories of *.jsonl such as
    /// OUT/.nc3pack) list, in parallel, against the recorded hashes; prints the failures and a
    /// summary. A manifest in OUT/.nc3pack finds its archives in that OUT (a moved collection
    /// verifies where it is); another by their recorded paths (relative ones from its
    /// directory). A manifest may be an s3:// URL, or s3://BUCKET/PREFIX/.nc3pack/ for every
    /// shard's: the archives are then the objects under PREFIX. A directory or prefix with no
    /// manifest, or manifests with no line, is an error (exit 1): nothing is vouched for.
    #[arg(long, num_args = 1.., value_name = "MANIFEST")]
    manifest: Vec<PathBuf>,
    /// Also check that this original netCDF-3 file is what the archive restores; with
    /// --manifest, the directory the names are relative to (ROOT/NAME is each original).
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
    /// IN.nc OUT.nc3z (IN `-`, a pipe, a FIFO or a URL: read as a stream, in one pass; OUT a
    /// file or an s3:// URL); or, with -o,
    /// the netCDF-3 files and directories to pack. Directories are searched for netCDF-3 files
    /// by their first bytes, following symbolic links (each directory once); what cannot be
    /// read is reported at the end and the rest is packed.
    #[arg(num_args = 0..)]
    paths: Vec<PathBuf>,
    /// Pack every input into this directory, in parallel, as OUT/NAME.nc3z where NAME is the
    /// input's path relative to the root; a bad file, or a path that cannot be read, is
    /// reported at the end and does not stop the others. A manifest of what was done is
    /// appended to OUT/.nc3pack/, and a rerun skips what it records as packed. OUT may be an
    /// S3 prefix, s3://BUCKET/PREFIX/: each archive is then the object PREFIX/NAME.nc3z
    /// (uploaded complete or not at all), and the manifest is kept locally (see --manifest)
    /// and copied to PREFIX/.nc3pack/ every 30 s (see --manifest-copy-every) and at the end.
    #[arg(short = 'o', long = "output-dir")]
    output_dir: Option<PathBuf>,
    /// With -o: also pack the paths listed in this file, one a line (`-`: standard input).
    /// A name holding a newline cannot be listed (give its directory instead); a line's final
    /// carriage return (a list written on Windows) is not part of the name.
    #[arg(long, value_name = "LIST", requires = "output_dir")]
    files_from: Option<PathBuf>,
    /// With -o: the directory the outputs' names are relative to [default: the deepest
    /// directory holding every input].
    #[arg(long, value_name = "DIR", requires = "output_dir")]
    root: Option<PathBuf>,
    /// With -o: pack only share I of N of the inputs (sorted by name, every Nth from the Ith;
    /// I counts from 0), so that N processes cover each file once.
    #[arg(long, value_name = "I/N", requires = "output_dir")]
    shard: Option<nc3pack::__private::Shard>,
    /// With -o: append the manifest here [default: OUT/.nc3pack/manifest-I-of-N.jsonl; with
    /// an s3:// OUT, ./.nc3pack/BUCKET/PREFIX/manifest-I-of-N.jsonl, copied to
    /// s3://BUCKET/PREFIX/.nc3pack/manifest-I-of-N.jsonl].
    #[arg(long, value_name = "PATH", requires = "output_dir")]
    manifest: Option<PathBuf>,
    /// With an s3:// OUT: seconds between the copies of the manifest to the bucket while
    /// lines are written (a copy is one PUT of the whole manifest; 0: after every line). The
    /// last copy is made at the end whatever this is.
    #[arg(long, value_name = "SECS", default_value = "30", requires = "output_dir",
          value_parser = copy_interval)]
    manifest_copy_every: std::time::Duration,
    /// With -o: DELETE each input once its archive is written, synced, renamed into place and
    /// verified by decoding it back to the input's hash (a rerun deletes those of archives
    /// already done, once verified). Symbolic links, pipes and devices are never deleted
    /// (kept and listed; not a failure). Not with an s3:// OUT (a usage error): verify the
    /// collection with verify --manifest, then delete.
    #[arg(long, requires = "output_dir")]
    delete_input: bool,
    /// Block codec (lzma: an .xz stream per block, levels 0 to 9 as xz's presets; smallest,
    /// slowest to pack and decode).
    #[arg(long, default_value = "zstd", value_parser = names_parser::<Codec>(Codec::NAMES))]
    codec: Codec,
    /// Codec level, or a preset: `fast` (the default: zstd 3, or zstd 1 for blocks where 3
    /// does not pay on a sample; deflate 6; lzma 6; filters judged on a sample) or `max` (zstd
    /// 19 / deflate 9 / lzma 9, filters judged on whole blocks, and with zstd lzma for the
    /// blocks where it is 3 % smaller, judged on a sample or, where values repeat far apart,
    /// on the whole block, and the context codec for numeric blocks where it is smaller;
    /// blocks of 8 MiB for variables over 1 MiB unless --block-size is given, so a read of
    /// one value decodes up to 8 MiB, at ~0.1 GB/s for lzma and context; for cold archives).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_level)]
    level: Option<Level>,
    /// Filter before the codec: auto (per block, the best of shuffle, bytedelta and zzdelta,
    /// and for float variables of 2+ dimensions the 2-D predictor lorenzo; with `--level max`
    /// also none and delta), none, shuffle, bytedelta, delta, zzdelta or lorenzo (on every
    /// block of float variables of 2+ dimensions, zzdelta on other blocks).
    #[arg(long, default_value = "auto", value_parser = names_parser::<FilterMode>(FilterMode::NAMES))]
    filter: FilterMode,
    /// Never use the pco codec for numeric blocks (by default, with `--filter auto`, blocks of
    /// 16-, 32- and 64-bit numbers use it where it compresses better, for variables of 2+
    /// dimensions also after the 2-D predictor plane or a predictor fitted to the block (the fit
    /// filter: noisy fields such as air temperature), and for blocks with a fill value on the
    /// other elements, with the fill values' places in a bitmap: the mask filter).
    #[arg(long)]
    no_pco: bool,
    /// Decoded bytes per block; accepts K/KiB/M/MiB/G/GiB suffixes [default: 1MiB; with
    /// `--level max`, 8MiB for variables over 1 MiB].
    #[arg(long, value_parser = nc3pack::vars::parse_size)]
    block_size: Option<u32>,
    /// Per-variable settings, VARS:KEY=VALUE[,KEY=VALUE...]: VARS is a comma-separated list of
    /// names and globs (`*` any run of characters, `?` one character, `\` makes the next
    /// character literal), as NCO's -v; keys are block-size, codec, level and filter, with the
    /// values of the options of the same names. Repeatable: later --var options override
    /// earlier ones, key by key, for the variables they both select. A name or glob matching
    /// no variable is an error listing the file's variables. E.g. --var 'u,v:block-size=64KiB'
    /// --var 'time*:codec=none'. A block size other than --block-size makes a format 1.1
    /// archive. Variables of at most 4 KiB share blocks and keep the archive-wide settings.
    #[arg(long = "var", value_name = "VARS:KEY=VALUE,...")]
    vars: Vec<nc3pack::vars::VarRule>,
    /// LOSSY, opt-in: quantize the named float/double variables before packing, as netCDF-C
    /// does: `VARS=bitround:NSB` keeps NSB mantissa bits (1..=23 float, 1..=52 double),
    /// `VARS=granularbr:NSD` NSD significant digits (1..=6 float, 1..=15 double). VARS: names
    /// and globs (`t*`), comma-separated. Fill values, NaN and infinities are kept. The archive
    /// then restores a new netCDF-3 file recording the quantization (netCDF-C and CF 1.12
    /// attributes) and the original's hash. Repeatable. With -o, every file of the batch: a
    /// name that matches no variable of a file fails that file; the manifest records the
    /// restored file's size and hash beside the input's. Not with --delete-input.
    #[arg(long, value_name = "VARS=ALG:N", value_parser = parse_quantize, conflicts_with = "delete_input")]
    quantize: Vec<nc3pack::quantize::QuantizeRule>,
    #[command(flatten)]
    common: Common,
}

/// The lines `verify --against` prints for a lossy archive: the largest error per quantized
/// variable, and whether the rest equals the original.
fn lossy_verdict(
    text: &mut String,
    archive: &Path,
    orig: &Path,
    c: &nc3pack::quantize::LossyComparison,
) {
    let z = shown(archive);
    let o = shown(orig);
    let recorded = if c.original_recorded {
        "is the original recorded in the archive"
    } else {
        "is NOT the original recorded in the archive"
    };
    *text += &format!("{z}: lossy archive; {o} {recorded}\n");
    for v in &c.vars {
        let verdict = if v.within_bound {
            "within the bound".to_string()
        } else if v.kept_changed > 0 {
            format!("{} fill/NaN/infinite values changed", v.kept_changed)
        } else {
            "OUTSIDE the bound".to_string()
        };
        let subnormal = match (v.subnormal, v.quantization.algorithm) {
            (0, _) => String::new(),
            (n, nc3pack::quantize::Algorithm::BitRound) => {
                format!("; {n} subnormal values, held to the bound of the least normal value")
            }
            (n, nc3pack::quantize::Algorithm::GranularBitRound) => format!(
                "; {n} subnormal values, not held to a bound: Granular BitRound keeps fewer \
                 digits of them"
            ),
        };
        let moved: String = v
            .moved_outside_valid
            .iter()
            .map(|m| format!("; {}", m.outside()))
            .collect();
        *text += &format!(
            "{z}: {} ({}): largest error {:e} (relative {:e}{subnormal}), {verdict}{moved}\n",
            v.name, v.quantization, v.max_abs, v.max_rel
        );
    }
    if c.others_equal {
        *text += &format!("{z}: every other variable equals {o}'s\n");
    } else {
        *text += &format!(
            "{z}: variables that differ from {o}'s though not quantized: {}\n",
            c.differing.join(", ")
        );
    }
}

/// Warns of the values quantization moved outside a variable's valid range, a line each
/// (printed with `-q` too: the archive is not what the input's readers would read).
fn warn_moved_outside(input: &str, s: &nc3pack::PackSummary, pb: Option<&indicatif::ProgressBar>) {
    for m in &s.moved_outside_valid {
        let line = format!("nc3pack: warning: {input}: {m}; netCDF readers take them as missing");
        match pb {
            Some(pb) => pb.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }
}

fn parse_quantize(s: &str) -> Result<nc3pack::quantize::QuantizeRule, String> {
    s.parse()
        .map_err(|e: nc3pack::quantize::QuantizeError| e.to_string())
}

#[derive(Args)]
struct UnpackArgs {
    /// Archive to read (a path, or an s3://, http(s):// or file:// URL).
    input: PathBuf,
    /// netCDF-3 file to write (`-`: standard output; the hash is checked at the end, and on a
    /// mismatch the exit code is 1 and what was written must be discarded).
    output: PathBuf,
    #[command(flatten)]
    common: Common,
}

#[derive(Args)]
struct InfoArgs {
    /// A netCDF-3 file or an archive (a path, or an s3://, http(s):// or file:// URL).
    file: PathBuf,
    /// Print JSON instead of CDL-like text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct SliceArgs {
    /// A netCDF-3 file or an archive (a path, or an s3://, http(s):// or file:// URL).
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

/// A packed file's summary: sizes, ratio and blocks, then `extra`.
fn summary(s: &nc3pack::PackSummary, extra: &str) -> String {
    format!(
        "{} -> {} (ratio {:.2}), {} block{}{extra}",
        human(s.input_len),
        human(s.output_len),
        s.input_len as f64 / s.output_len.max(1) as f64,
        s.blocks,
        if s.blocks == 1 { "" } else { "s" },
    )
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

/// A path or URL as printed: a URL's password and query string hidden
/// ([`nc3pack::error::redact_url`]).
fn shown(p: &Path) -> String {
    nc3pack::error::redact_url(&p.to_string_lossy()).into_owned()
}

/// Whether a path given on the command line is a URL (`s3://`, `http(s)://`, `file://`).
fn is_url(p: &Path) -> bool {
    p.to_str().is_some_and(|s| {
        ["s3://", "http://", "https://", "file://"]
            .iter()
            .any(|u| s.len() > u.len() && s[..u.len()].eq_ignore_ascii_case(u))
    })
}

/// The netCDF-C plugin's library: `--library`, NC3PACK_NETCDF_PLUGIN, or beside this program.
fn plugin_library(a: &NetcdfPluginArgs) -> anyhow::Result<PathBuf> {
    const NAME: &str = "libnc3pack_netcdf.so";
    let given = a
        .library
        .clone()
        .or_else(|| std::env::var_os("NC3PACK_NETCDF_PLUGIN").map(PathBuf::from));
    if let Some(p) = given {
        return std::fs::canonicalize(&p)
            .with_context(|| format!("{}: the netCDF-C plugin library", p.display()));
    }
    let exe = std::env::current_exe().context("finding this program's directory")?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    for p in [dir.join(NAME), dir.join("../lib").join(NAME)] {
        if p.is_file() {
            return std::fs::canonicalize(&p).with_context(|| p.display().to_string());
        }
    }
    anyhow::bail!(
        "{NAME} not found beside {} (build it with `cargo build --release -p nc3pack-netcdf`, \
         or give --library PATH)",
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

fn run(cli: Cli) -> anyhow::Result<()> {
    let remote = nc3pack::remote::RemoteOptions::from_env();
    let anon = remote.anon() || cli.anon;
    nc3pack::remote::set_default_options(remote.with_anon(anon));
    match cli.command {
        Command::Pack(a) => {
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
            .with_threads(threads(a.common.threads))
            .with_force(a.common.force);
            let opts = a.vars.iter().cloned().fold(opts, PackOptions::with_var);
            let opts = a
                .quantize
                .iter()
                .cloned()
                .fold(opts, PackOptions::with_quantize);
            if let Some(dir) = &a.output_dir {
                if a.paths.is_empty() && a.files_from.is_none() {
                    return Err(nc3pack::Error::from(OptionError::BatchInputs).into());
                }
                let batch = Batch {
                    files_from: a.files_from.as_deref(),
                    root: a.root.as_deref(),
                    shard: a.shard.unwrap_or_default(),
                    manifest: a.manifest.as_deref(),
                    delete_input: a.delete_input,
                    copy_every: a.manifest_copy_every,
                };
                return pack_batch(&a.paths, &batch, dir, &opts, a.common.quiet);
            }
            let [input, output] = a.paths.as_slice() else {
                return Err(nc3pack::Error::from(OptionError::PackPaths {
                    given: a.paths.len(),
                })
                .into());
            };
            // An input URL is read as a stream, in one pass, as a pipe is.
            let input_url = input.to_str().filter(|_| is_url(input));
            if let (true, Some(url)) = (is_url(output), output.to_str()) {
                let t = Instant::now();
                let remote = nc3pack::remote::default_options();
                let s = match input_url {
                    Some(from) => {
                        let stream = nc3pack::remote::open_stream(from, &remote)?;
                        nc3pack::pack_reader_to_url(stream, input, url, &opts, &remote)?
                    }
                    None => nc3pack::pack_to_url(input, url, &opts, &remote)?,
                };
                warn_moved_outside(&input.display().to_string(), &s, None);
                if !a.common.quiet {
                    let what = summary(&s, ", uploaded");
                    eprintln!(
                        "{} -> {}: {what}, {:.2} s",
                        shown(input),
                        shown(output),
                        t.elapsed().as_secs_f64()
                    );
                }
                return Ok(());
            }
            if output.as_os_str() == "-" {
                return Err(nc3pack::Error::from(OptionError::PackToStdout).into());
            }
            let t = Instant::now();
            let stdin = input.as_os_str() == "-";
            // A pipe given as a path (`<(...)`, /dev/stdin, a FIFO) is read as a stream too.
            let pb = if stdin {
                stream_spinner(a.common.quiet, "standard input")
            } else if input_url.is_some() {
                stream_spinner(a.common.quiet, &shown(input))
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
            } else if let Some(url) = input_url {
                let stream =
                    nc3pack::remote::open_stream(url, &nc3pack::remote::default_options())?;
                nc3pack::pack_reader(stream, input, output, &opts)?
            } else {
                nc3pack::pack_file(input, output, &opts)?
            };
            if let Some(pb) = pb {
                pb.finish_and_clear();
            }
            let name = if stdin {
                "<stdin>".into()
            } else {
                shown(input)
            };
            warn_moved_outside(&name, &s, None);
            if !a.common.quiet {
                let what = summary(&s, "");
                eprintln!(
                    "{name} -> {}: {what}, {:.2} s",
                    output.display(),
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
                match nc3pack::unpack_to_writer(&a.input, std::io::stdout(), stdout, &opts) {
                    Ok(n) => n,
                    // A reader that stops early (`| head`) is not an error: stop quietly.
                    Err(nc3pack::Error::Io { source, .. })
                        if source.kind() == std::io::ErrorKind::BrokenPipe =>
                    {
                        return Ok(());
                    }
                    Err(e @ nc3pack::Error::HashMismatch { .. }) => {
                        return Err(anyhow::anyhow!(
                            "{e}; the bytes written to standard output are not the original: discard them"
                        ))
                    }
                    Err(e) => return Err(e.into()),
                }
            } else {
                nc3pack::unpack_file(&a.input, &a.output, &opts)?
            };
            if let Some(pb) = pb {
                pb.finish_and_clear();
            }
            if !a.common.quiet {
                eprintln!(
                    "{} -> {}: {} restored and verified, {:.2} s",
                    shown(&a.input),
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
            let Some(archive) = &a.archive else {
                return verify_collection(&a.manifest, a.against.as_deref(), threads(a.threads));
            };
            let opts = nc3pack::VerifyOptions {
                against: a.against.clone(),
                threads: threads(a.threads),
            };
            let r = nc3pack::verify(archive, &opts)?;
            let mut text = String::new();
            for d in &r.damage {
                text += &format!("{}: damaged: {d}\n", shown(archive));
            }
            if let (Some(orig), Some(c)) = (&a.against, &r.lossy) {
                lossy_verdict(&mut text, archive, orig, c);
            } else if let (Some(orig), Some(m)) = (&a.against, r.original_matches) {
                let verdict = if m { "matches" } else { "does NOT match" };
                text += &format!("{}: {verdict} {}\n", shown(archive), shown(orig));
            } else if let Some(l) = nc3pack::Archive::open(archive)
                .ok()
                .and_then(|z| nc3pack::quantize::Lossy::of(z.header()))
            {
                text += &format!("{}: lossy archive: {l}\n", shown(archive));
            }
            if r.damage.is_empty() {
                text += &format!(
                    "{}: ok: {} blocks, every checksum matches, restored data matches the original's hash\n",
                    shown(archive),
                    r.blocks
                );
            }
            write_stdout(text.as_bytes())?;
            if !r.is_intact() {
                std::process::exit(1);
            }
        }
        Command::Reindex(a) => {
            let opts = nc3pack::ReindexOptions::default().with_force(a.common.force);
            let r = nc3pack::reindex(&a.input, &a.output, &opts)?;
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
        Command::NetcdfPlugin(a) => netcdf_plugin(&a)?,
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

/// The options of `nc3pack pack ... -o OUT` beyond the inputs.
struct Batch<'a> {
    files_from: Option<&'a Path>,
    root: Option<&'a Path>,
    shard: nc3pack::__private::Shard,
    manifest: Option<&'a Path>,
    delete_input: bool,
    /// With an object-store OUT: the time between copies of the manifest to it.
    copy_every: std::time::Duration,
}

/// A `--manifest-copy-every` value: a number of seconds, 0 or more (fractions allowed).
fn copy_interval(s: &str) -> Result<std::time::Duration, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .and_then(|x| std::time::Duration::try_from_secs_f64(x).ok())
        .ok_or_else(|| format!("{s:?} is not a number of seconds (0 or more)"))
}

/// The lines of `--files-from` (empty ones skipped, a line's final CR dropped), read as they
/// are needed.
fn list_lines(
    list: Option<&Path>,
) -> anyhow::Result<Box<dyn Iterator<Item = nc3pack::Result<PathBuf>>>> {
    use std::io::BufRead;
    use std::os::unix::ffi::OsStringExt;
    let Some(list) = list else {
        return Ok(Box::new(std::iter::empty()));
    };
    let reader: Box<dyn BufRead> = if list.as_os_str() == "-" {
        Box::new(std::io::BufReader::new(std::io::stdin()))
    } else {
        let f = std::fs::File::open(list).map_err(|source| nc3pack::Error::Io {
            path: list.to_path_buf(),
            op: "open",
            source,
        })?;
        Box::new(std::io::BufReader::new(f))
    };
    let list = list.to_path_buf();
    Ok(Box::new(reader.split(b'\n').filter_map(
        move |line| match line {
            Ok(l) if l.is_empty() || l == b"\r" => None,
            // A list written on Windows: its lines end in CR LF.
            Ok(mut l) => {
                if l.last() == Some(&b'\r') {
                    l.pop();
                }
                Some(Ok(PathBuf::from(std::ffi::OsString::from_vec(l))))
            }
            Err(source) => Some(Err(nc3pack::Error::Io {
                path: list.clone(),
                op: "read",
                source,
            })),
        },
    )))
}

/// The object-store prefix of `pack IN... -o s3://BUCKET/PREFIX/`, with its manifests.
struct Bucket {
    prefix: nc3pack::remote::Prefix,
    /// The manifests of every shard, as uploaded, in local copies (removed when dropped).
    records: Vec<PathBuf>,
    _copies: Vec<tempfile::TempPath>,
    /// This shard's manifest, kept locally.
    manifest: PathBuf,
    /// Its key under the prefix: `.nc3pack/manifest-I-of-N.jsonl`.
    key: String,
}

impl Bucket {
    /// Checks the URL and the credentials (listing the uploaded manifests, which also checks
    /// that the bucket exists and the credentials are accepted), fetches the manifests, and
    /// starts this shard's local manifest from its uploaded copy if it has none.
    fn open(url: &str, batch: &Batch) -> anyhow::Result<Bucket> {
        let prefix = nc3pack::remote::Prefix::new(url, &nc3pack::remote::default_options())?;
        let name = format!("manifest-{}.jsonl", batch.shard);
        let key = format!(".nc3pack/{name}");
        let manifest = batch.manifest.map_or_else(
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
        for k in prefix.list(".nc3pack/")? {
            if !k.ends_with(".jsonl") || k[".nc3pack/".len()..].contains('/') {
                continue;
            }
            let Some(bytes) = prefix.get(&k)? else {
                continue;
            };
            if k == key && !manifest.exists() {
                if let Some(d) = manifest.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(d).map_err(|source| nc3pack::Error::Io {
                        path: d.to_path_buf(),
                        op: "create directory",
                        source,
                    })?;
                }
                std::fs::write(&manifest, &bytes).map_err(|source| nc3pack::Error::Io {
                    path: manifest.clone(),
                    op: "write",
                    source,
                })?;
            }
            let mut f = tempfile::NamedTempFile::new().context("a temporary manifest copy")?;
            f.write_all(&bytes).context("a temporary manifest copy")?;
            let copy = f.into_temp_path();
            records.push(copy.to_path_buf());
            copies.push(copy);
        }
        // This collection's other local manifests (shards run from the same directory): newer
        // than their uploaded copies.
        if batch.manifest.is_none() {
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
    fn copy_manifest(&self, m: &nc3pack::__private::manifest::Manifest) -> nc3pack::Result<()> {
        m.sync()?;
        match std::fs::read(&self.manifest) {
            Ok(bytes) => self.prefix.put(&self.key, bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(nc3pack::Error::Io {
                path: self.manifest.clone(),
                op: "read",
                source,
            }),
        }
    }
}

/// `nc3pack pack IN... -o OUT`: every file, one progress bar, a manifest line per file as it
/// finishes, failures (and what could not be read while looking for files) listed at the end.
fn pack_batch(
    inputs: &[PathBuf],
    batch: &Batch,
    dir: &Path,
    opts: &PackOptions,
    quiet: bool,
) -> anyhow::Result<()> {
    use nc3pack::__private::manifest::{Done, Entry, Manifest, Status};
    use nc3pack::__private::Outcome;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
    use std::sync::Mutex;
    let t = Instant::now();
    // An object-store prefix: checked (URL, credentials, bucket) before any work, and its
    // uploaded manifests fetched.
    let bucket = match dir.to_str().filter(|_| is_url(dir)) {
        Some(url) => {
            if batch.delete_input {
                return Err(nc3pack::Error::from(OptionError::DeleteInputToUrl {
                    url: url.to_string(),
                })
                .into());
            }
            Some(Bucket::open(url, batch)?)
        }
        None => None,
    };
    let out_dir = bucket
        .as_ref()
        .map_or_else(|| dir.to_path_buf(), |b| PathBuf::from(b.prefix.url()));
    let dir = out_dir.as_path();
    let inputs = inputs
        .iter()
        .cloned()
        .map(Ok)
        .chain(list_lines(batch.files_from)?);
    let (records, manifest_path) = match &bucket {
        Some(b) => (b.records.clone(), b.manifest.clone()),
        None => {
            let records = dir.join(".nc3pack");
            let manifest = batch.manifest.map_or_else(
                || records.join(format!("manifest-{}.jsonl", batch.shard)),
                Path::to_path_buf,
            );
            (vec![records], manifest)
        }
    };
    // The manifests of earlier runs are read while the inputs are found.
    let load = || {
        if opts.force {
            Ok(Done::default())
        } else {
            let mut all = records.clone();
            all.push(manifest_path.clone());
            Done::load(&all)
        }
    };
    let (plan, done) = std::thread::scope(|s| {
        let loading = std::thread::Builder::new().spawn_scoped(s, load);
        let plan = nc3pack::__private::plan(inputs, dir, batch.root, batch.shard);
        let done = match loading {
            Ok(h) => h.join().unwrap_or_else(|_| load()),
            Err(_) => load(),
        };
        (plan, done)
    });
    let (plan, done) = (plan?, done?);
    // For bench/collection.sh only: measures packing without the manifest (see there).
    let bench_no_manifest = std::env::var_os("NC3PACK_BENCH_NO_MANIFEST").is_some();
    let manifest = Manifest::new(&manifest_path);
    let pb = (!quiet && std::io::stderr().is_terminal() && plan.len() > 1).then(|| {
        let pb = indicatif::ProgressBar::new(plan.len() as u64);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "packing [{bar:40}] {pos}/{len} files, {per_sec}, eta {eta}",
        ) {
            pb.set_style(style.progress_chars("=> "));
        }
        pb
    });
    let [packed, skipped, ignored, finished] = [(); 4].map(|()| AtomicUsize::new(0));
    let (inb, outb) = (AtomicU64::new(0), AtomicU64::new(0));
    let failures: Mutex<Vec<(usize, nc3pack::Error)>> = Mutex::new(Vec::new());
    let write_error: Mutex<Option<nc3pack::Error>> = Mutex::new(None);
    // A `skipped` line of a recorded archive only repeats what an earlier line recorded: a
    // kill may lose it, so such lines are written hundreds at a time.
    let note_write = |written: nc3pack::Result<()>| {
        if let Err(err) = written {
            write_error
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_or_insert(err);
        }
    };
    let write_line = |e: Entry, deferred: bool| {
        if bench_no_manifest {
            return;
        }
        note_write(if deferred {
            manifest.write_deferred(&e)
        } else {
            manifest.write(&e)
        });
    };
    // With an object-store output, the manifest is copied to the bucket every
    // `--manifest-copy-every` (and at the end).
    let last_copy = Mutex::new(Instant::now());
    let copy_if_due = || {
        let Some(b) = &bucket else { return };
        let Ok(mut last) = last_copy.try_lock() else {
            return;
        };
        if last.elapsed() >= batch.copy_every {
            // A failed copy is tried again later, and at the end, where it is an error.
            let _ = b.copy_manifest(&manifest);
            *last = Instant::now();
        }
    };
    let write = |e: Entry| {
        write_line(e, false);
        copy_if_due();
    };
    // Inputs `--delete-input` kept (symbolic links, pipes, devices): listed at the end.
    let kept_inputs: Mutex<Vec<(usize, nc3pack::__private::Kept)>> = Mutex::new(Vec::new());
    let note_kept = |i: usize, kept: Option<nc3pack::__private::Kept>| {
        if let Some(k) = kept {
            kept_inputs
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((i, k));
        }
    };
    // The manifest line of an outcome (a `skipped` one in full, not referring to an earlier).
    let entry_of = |i: usize, outcome: &Outcome| -> Option<Entry> {
        let entry = |status, seconds| Entry {
            input: plan.input(i),
            output: plan.output(i),
            seconds,
            ..Entry::new(status, plan.name(i).to_vec())
        };
        Some(match outcome {
            Outcome::Packed {
                summary,
                mtime_ns,
                seconds,
                deleted,
                kept,
            } => {
                // A lossy archive restores another file than its input: both recorded.
                let (size, hash) = summary
                    .original
                    .unwrap_or((summary.input_len, summary.hash));
                Entry {
                    size: Some(size),
                    mtime_ns: Some(*mtime_ns),
                    hash: Some(hash),
                    output_size: Some(summary.output_len),
                    restored: summary.original.map(|_| (summary.input_len, summary.hash)),
                    deleted: *deleted,
                    kept: kept.map(|k| k.to_string()),
                    ..entry(Status::Packed, *seconds)
                }
            }
            Outcome::Skipped {
                record,
                recorded,
                seconds,
                deleted,
                kept,
                input_hash,
            } => Entry {
                size: Some(record.size),
                mtime_ns: Some(record.mtime_ns),
                hash: Some(input_hash.unwrap_or(record.hash)),
                output_size: Some(record.output_size),
                // A lossy archive's record holds the quantized file's hash.
                restored: record.restored_size.map(|r| (r.get(), record.hash)),
                deleted: *deleted,
                kept: kept.map(|k| k.to_string()),
                ..entry(
                    if *recorded {
                        Status::Skipped
                    } else {
                        Status::Packed
                    },
                    *seconds,
                )
            },
            Outcome::Failed { error, input } => Entry {
                size: input.map(|x| x.0),
                mtime_ns: input.map(|x| x.1),
                error: Some(error.to_string()),
                ..entry(Status::Failed, 0.0)
            },
            Outcome::NotNetcdf => return None,
        })
    };
    // With `--delete-input`: the records of a group of archives, written and synced before
    // their inputs are deleted (the outcomes then reported say `deleted` and are not written
    // again).
    let record = |group: &[(usize, &Outcome)]| -> nc3pack::Result<()> {
        for (i, o) in group {
            if let Some(e) = entry_of(*i, o) {
                manifest.write(&e)?;
            }
        }
        manifest.sync()
    };
    let on_done = |i: usize, outcome: Outcome| {
        match &outcome {
            Outcome::Packed {
                summary,
                deleted,
                kept,
                ..
            } => {
                note_kept(i, *kept);
                warn_moved_outside(&shown(&plan.input(i)), summary, pb.as_ref());
                packed.fetch_add(1, Relaxed);
                outb.fetch_add(summary.output_len, Relaxed);
                inb.fetch_add(summary.original.map_or(summary.input_len, |o| o.0), Relaxed);
                if !deleted {
                    if let Some(e) = entry_of(i, &outcome) {
                        write(e);
                    }
                }
            }
            Outcome::Skipped {
                recorded,
                deleted,
                kept,
                ..
            } => {
                note_kept(i, *kept);
                skipped.fetch_add(1, Relaxed);
                // Found done as recorded, and nothing else to say: a short line that refers
                // to the earlier one (written later, with others: a kill may lose it).
                // (A lossy archive's is always short: it is never deleted nor kept, since
                // `--delete-input` fails it instead.)
                if *recorded && !deleted && kept.is_none() {
                    // `Entry::done_before`'s line, written without building the entry.
                    if !bench_no_manifest {
                        note_write(manifest.write_done_before(plan.name(i)));
                    }
                } else if !deleted {
                    if let Some(e) = entry_of(i, &outcome) {
                        write_line(e, false);
                    }
                }
            }
            Outcome::NotNetcdf => {
                ignored.fetch_add(1, Relaxed);
            }
            Outcome::Failed { .. } => {
                if let Some(e) = entry_of(i, &outcome) {
                    write(e);
                }
                if let Outcome::Failed { error, .. } = outcome {
                    failures
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((i, error));
                }
            }
        }
        let n = finished.fetch_add(1, Relaxed) + 1;
        if let Some(pb) = &pb {
            pb.set_position(n as u64);
        }
    };
    match &bucket {
        Some(b) => nc3pack::__private::pack_all_to_prefix(&plan, opts, &done, &b.prefix, &on_done)?,
        None => nc3pack::__private::pack_all(
            &plan,
            opts,
            &done,
            batch
                .delete_input
                .then_some(&record as &nc3pack::__private::RecordFn<'_>),
            &on_done,
        )?,
    }
    // What could not be read while finding the inputs: one line each, written by the first
    // shard only (every shard finds the same).
    if batch.shard.index == 0 {
        for e in &plan.unreadable {
            if let nc3pack::Error::Io { path, .. } = e {
                let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str());
                let name = path.strip_prefix(plan.root()).map_or(bytes, |r| {
                    std::os::unix::ffi::OsStrExt::as_bytes(r.as_os_str())
                });
                write(Entry {
                    input: path.clone(),
                    error: Some(e.to_string()),
                    ..Entry::new(Status::Failed, name.to_vec())
                });
            }
        }
    }
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    let synced = match &bucket {
        Some(b) if !bench_no_manifest => b.copy_manifest(&manifest),
        _ => manifest.sync(),
    };
    for e in &plan.unreadable {
        eprintln!("nc3pack: {e}");
    }
    let mut kept = kept_inputs.into_inner().unwrap_or_else(|p| p.into_inner());
    kept.sort_by_key(|k| k.0);
    for (i, why) in &kept {
        eprintln!("nc3pack: {}: kept: {why}", plan.input(*i).display());
    }
    let mut failures = failures.into_inner().unwrap_or_else(|p| p.into_inner());
    failures.sort_by_key(|f| f.0);
    for (i, e) in &failures {
        match e {
            // An option that does not fit this file (a --quantize name it lacks): which file.
            nc3pack::Error::Option(_) => {
                eprintln!("nc3pack: {}: {e}", plan.input(*i).display())
            }
            _ => eprintln!("nc3pack: {e}"),
        }
    }
    let failed = failures.len();
    let files = plan.len() - ignored.into_inner();
    let (packed, skipped) = (packed.into_inner(), skipped.into_inner());
    let (inb, outb) = (inb.into_inner(), outb.into_inner());
    if !quiet {
        let note = if skipped > 0 {
            format!(", {skipped} already packed (skipped)")
        } else {
            String::new()
        };
        let sizes = if packed > 0 {
            format!(
                ": {} -> {} (ratio {:.2})",
                human(inb),
                human(outb),
                inb as f64 / outb.max(1) as f64
            )
        } else {
            String::new()
        };
        eprintln!(
            "packed {packed} of {files} files{note} into {}{sizes}, {:.2} s",
            dir.display(),
            t.elapsed().as_secs_f64()
        );
    }
    if let Some(e) = write_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e.into());
    }
    synced?;
    match (failed, plan.unreadable.len()) {
        (0, 0) => Ok(()),
        (f, 0) => anyhow::bail!("{f} of {files} files failed (listed above)"),
        (f, u) => anyhow::bail!(
            "{f} of {files} files failed, {u} path{} could not be read (listed above)",
            if u == 1 { "" } else { "s" }
        ),
    }
}

/// `nc3pack verify --manifest M...`: every archive of a collection; failures, then a summary.
fn verify_collection(
    manifests: &[PathBuf],
    against: Option<&Path>,
    threads: usize,
) -> anyhow::Result<()> {
    let r = nc3pack::__private::manifest::verify_collection(manifests, against, threads, &|_| {})?;
    let mut text = String::new();
    for (m, n) in &r.bad_lines {
        text += &format!("{}: line {n}: not a manifest entry\n", m.display());
    }
    for (p, what) in &r.failures {
        text += &format!("{}: {what}\n", p.display());
    }
    text += &format!(
        "verified {} archives{}: {} failed{}\n",
        r.checked,
        if against.is_some() {
            " against the originals"
        } else {
            ""
        },
        r.failures.len(),
        if r.bad_lines.is_empty() {
            String::new()
        } else {
            format!(", {} manifest lines unreadable", r.bad_lines.len())
        }
    );
    write_stdout(text.as_bytes())?;
    if !r.is_ok() {
        std::process::exit(1);
    }
    Ok(())
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

/// glibc's allocator, left to itself, returns the memory of each block's buffers (several MiB
/// of pco's work space per block) to the system and takes it back, zeroed, for the next block:
/// page faults and page clearing were 10-15 % of packing mesh.nc's CPU. Keeping allocations up
/// to 32 MiB on the heap and trimming it only above 64 MiB free avoids that, for a few MiB more
/// peak memory.
fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; called before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
    }
}

fn main() {
    tune_allocator();
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // `nc3pack IN OUT` means `nc3pack pack IN OUT`.
    // (Global flags may come before the command.)
    let first_at = 1 + args.iter().skip(1).take_while(|a| *a == "--anon").count();
    if let Some(first) = args.get(first_at).and_then(|a| a.to_str()) {
        let known = [
            "pack",
            "unpack",
            "info",
            "slice",
            "verify",
            "reindex",
            "netcdf-plugin",
            "help",
            "-h",
            "--help",
            "-V",
            "--version",
        ];
        if !known.contains(&first) {
            args.insert(first_at, "pack".into());
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
        // Any URL in it (a cause's text may quote one) without its password or query string.
        eprintln!("nc3pack: {}", nc3pack::error::redact_url(&msg));
        std::process::exit(code);
    }
}
