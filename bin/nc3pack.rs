//! The nc3pack command line: parses arguments and calls the library (`commands`: one
//! function per command).

use clap::builder::TypedValueParser;
use clap::{Args, Parser, Subcommand};
use nc3pack::format::Codec;
use nc3pack::FilterMode;
use std::path::PathBuf;

mod commands;

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
    shard: Option<nc3pack::collection::Shard>,
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

/// A `--manifest-copy-every` value: a number of seconds, 0 or more (fractions allowed).
fn copy_interval(s: &str) -> Result<std::time::Duration, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .and_then(|x| std::time::Duration::try_from_secs_f64(x).ok())
        .ok_or_else(|| format!("{s:?} is not a number of seconds (0 or more)"))
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

/// The arguments, with `pack` put in front of `nc3pack IN OUT` (global flags may come first).
fn arguments() -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let first_at = 1 + args.iter().skip(1).take_while(|a| *a == "--anon").count();
    if let Some(first) = args.get(first_at).and_then(|a| a.to_str()) {
        // The commands' names (and `help`), and the flags that need no command.
        let cmd = <Cli as clap::CommandFactory>::command();
        let mut known = cmd.get_subcommands().map(|c| c.get_name()).chain(["help"]);
        let flag = ["-h", "--help", "-V", "--version"].contains(&first);
        if !flag && !known.any(|k| k == first) {
            args.insert(first_at, "pack".into());
        }
    }
    args
}

fn main() {
    tune_allocator();
    let args = arguments();
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
    if let Err(e) = commands::run(cli) {
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
