//! The command line's arguments: what `nc3pack` accepts, as clap types (the types' doc
//! comments are the command line's help texts: clap reads them), and its progress bars.

use clap::builder::TypedValueParser;
use clap::{Args, Parser, Subcommand};
use indicatif::ProgressBar;
use nc3pack::format::Codec;
use nc3pack::FilterMode;
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "nc3pack",
    version,
    about = "Block-compressed, randomly readable, byte-exact archives of netCDF-3 files",
    after_help = "`nc3pack IN.nc OUT.nc3z` is short for `nc3pack pack IN.nc OUT.nc3z`.\nExit codes: 0 success, 1 error, 2 usage error (including out-of-range option values)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Read s3:// URLs anonymously (public buckets; also NC3PACK_ANON=1). Without it, requests
    /// are signed with the credentials of the environment (AWS_ACCESS_KEY_ID, ...).
    #[arg(long, global = true)]
    pub anon: bool,
}

#[derive(Subcommand)]
pub enum Command {
    /// Pack a netCDF-3 file (CDF-1, CDF-2 or CDF-5) into an archive.
    Pack(PackArgs),
    /// Restore the original netCDF-3 file from an archive, byte for byte (checked by hash).
    Unpack(UnpackArgs),
    /// Describe a netCDF-3 file or an archive (dimensions, variables, attributes, ratios), or
    /// with --manifest a packed collection (files, bytes, ratio, failures).
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
    /// Mount a directory of archives, read-only (FUSE, Linux), as the directory of their
    /// originals: NAME.nc3z appears as NAME, read on demand. In the foreground until Ctrl-C,
    /// SIGTERM or `fusermount3 -u MOUNTPOINT` (docs/mount.md).
    Mount(MountArgs),
    /// Serve a directory of archives read-only over HTTP (GET, HEAD, byte ranges) as the
    /// directory of their originals: NAME.nc3z at /NAME, read on demand. Loopback only unless
    /// --public (docs/mount.md).
    Serve(ServeArgs),
}

#[derive(Args)]
pub struct ServeArgs {
    /// The directory of archives (NAME.nc3z, in subdirectories too; other files are not served).
    pub archives: PathBuf,
    /// The address and port to listen on (port 0: any free port; the address bound is printed).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8080")]
    pub listen: std::net::SocketAddr,
    /// Allow an address other than loopback (anyone who reaches the port reads every archive:
    /// there is no authentication and no TLS).
    #[arg(long)]
    pub public: bool,
    /// Most responses served at once; further requests wait.
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub max_requests: u32,
    /// Close the connection of a client that takes no data of a response for this many
    /// seconds (its place goes to a waiting request).
    #[arg(long, value_name = "SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..=86400))]
    pub send_timeout: u32,
    /// Decoded blocks kept in memory by the open archives together; accepts K/KiB/M/MiB/G/GiB
    /// suffixes [default: 512MiB].
    #[arg(long, value_parser = nc3pack::vars::parse_size)]
    pub cache: Option<u32>,
}

#[derive(Args)]
pub struct MountArgs {
    /// The directory of archives (NAME.nc3z, in subdirectories too; other files are hidden).
    pub archives: PathBuf,
    /// An existing directory to mount them on.
    pub mountpoint: PathBuf,
    /// Threads serving reads [default: the cores, 2 to 16].
    #[arg(short = 'j', long, value_parser = threads_parser())]
    pub threads: Option<usize>,
    /// Decoded blocks kept in memory by the open archives together; accepts K/KiB/M/MiB/G/GiB
    /// suffixes [default: 512MiB].
    #[arg(long, value_parser = nc3pack::vars::parse_size)]
    pub cache: Option<u32>,
    /// Let other users read the mount (a non-root user needs user_allow_other in
    /// /etc/fuse.conf).
    #[arg(long)]
    pub allow_other: bool,
    /// When unmounted, print the read requests served, their mean size and the blocks decoded.
    #[arg(long)]
    pub stats: bool,
}

#[derive(Args)]
pub struct NetcdfPluginArgs {
    /// The plugin library (default: libnc3pack_netcdf.so beside this program, or in ../lib
    /// from it; or NC3PACK_NETCDF_PLUGIN).
    #[arg(long, value_name = "PATH")]
    pub library: Option<PathBuf>,
    /// Print only the two RC file lines (`nc3pack netcdf-plugin --rc >> ~/.ncrc`).
    #[arg(long)]
    pub rc: bool,
}

#[derive(Args)]
pub struct VerifyArgs {
    /// The archive (a path, or an s3://, http(s):// or file:// URL).
    #[arg(required_unless_present = "manifest", conflicts_with = "manifest")]
    pub archive: Option<PathBuf>,
    /// Verify every archive these manifests (files, or directories of *.jsonl such as
    /// OUT/.nc3pack) list, in parallel, against the recorded hashes; prints the failures and a
    /// summary. A manifest in OUT/.nc3pack finds its archives in that OUT (a moved collection
    /// verifies where it is); another by their recorded paths (relative ones from its
    /// directory). A manifest may be an s3:// URL, or s3://BUCKET/PREFIX/.nc3pack/ for every
    /// shard's: the archives are then the objects under PREFIX. A directory or prefix with no
    /// manifest, or manifests with no line, is an error (exit 1): nothing is vouched for.
    #[arg(long, num_args = 1.., value_name = "MANIFEST")]
    pub manifest: Vec<PathBuf>,
    /// Also check that this original netCDF-3 file is what the archive restores; with
    /// --manifest, the directory the names are relative to (ROOT/NAME is each original).
    #[arg(long)]
    pub against: Option<PathBuf>,
    /// Worker threads, 1 to 1024 [default: all cores].
    #[arg(short = 'j', long, value_parser = threads_parser())]
    pub threads: Option<usize>,
    /// With --manifest: verify only share I of N (I from 0 to N-1) of the names the manifests
    /// list, those whose names hash to I, as pack --shard shares the inputs;
    /// N runs, one for each I, verify every archive once (lines that are not entries are
    /// reported by share 0).
    #[arg(long, value_name = "I/N", conflicts_with = "archive")]
    pub shard: Option<nc3pack::collection::Shard>,
}

#[derive(Args)]
pub struct ReindexArgs {
    /// The damaged archive.
    pub input: PathBuf,
    /// The repaired archive to write.
    pub output: PathBuf,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args, Debug)]
pub struct Common {
    /// Overwrite the output if it exists.
    #[arg(short, long)]
    pub force: bool,
    /// Print nothing but errors.
    #[arg(short, long)]
    pub quiet: bool,
    /// Worker threads, 1 to 1024 [default: all cores].
    #[arg(short = 'j', long, value_parser = threads_parser())]
    pub threads: Option<usize>,
}

#[derive(Args, Debug)]
pub struct PackArgs {
    /// IN.nc OUT.nc3z (IN `-`, a pipe, a FIFO or a URL: read as a stream, in one pass; OUT a
    /// file or an s3:// URL); or, with -o,
    /// the netCDF-3 files and directories to pack. Directories are searched for netCDF-3 files
    /// by their first bytes, following symbolic links (each directory once); what cannot be
    /// read is reported at the end and the rest is packed.
    #[arg(num_args = 0..)]
    pub paths: Vec<PathBuf>,
    /// Pack every input into this directory, in parallel, as OUT/NAME.nc3z where NAME is the
    /// input's path relative to the root; a bad file, or a path that cannot be read, is
    /// reported at the end and does not stop the others. A manifest of what was done is
    /// appended to OUT/.nc3pack/, and a rerun skips what it records as packed. OUT may be an
    /// S3 prefix, s3://BUCKET/PREFIX/: each archive is then the object PREFIX/NAME.nc3z
    /// (uploaded complete or not at all), and the manifest is kept locally (see --manifest)
    /// and copied to PREFIX/.nc3pack/ every 30 s (see --manifest-copy-every) and at the end.
    #[arg(short = 'o', long = "output-dir")]
    pub output_dir: Option<PathBuf>,
    /// With -o: also pack the paths listed in this file, one a line (`-`: standard input).
    /// A name holding a newline cannot be listed (give its directory instead); a line's final
    /// carriage return (a list written on Windows) is not part of the name.
    #[arg(long, value_name = "LIST", requires = "output_dir")]
    pub files_from: Option<PathBuf>,
    /// With -o: the directory the outputs' names are relative to [default: the deepest
    /// directory holding every input].
    #[arg(long, value_name = "DIR", requires = "output_dir")]
    pub root: Option<PathBuf>,
    /// With -o: pack only share I of N of the inputs (those whose names hash to I; I counts
    /// from 0), so that N processes cover each file once.
    #[arg(long, value_name = "I/N", requires = "output_dir")]
    pub shard: Option<nc3pack::collection::Shard>,
    /// With -o: append the manifest here [default: OUT/.nc3pack/manifest-I-of-N.jsonl; with
    /// an s3:// OUT, ./.nc3pack/BUCKET/PREFIX/manifest-I-of-N.jsonl, copied to
    /// s3://BUCKET/PREFIX/.nc3pack/manifest-I-of-N.jsonl].
    #[arg(long, value_name = "PATH", requires = "output_dir")]
    pub manifest: Option<PathBuf>,
    /// With an s3:// OUT: seconds between the copies of the manifest to the bucket while
    /// lines are written (a copy is one PUT of the whole manifest; 0: after every line). The
    /// last copy is made at the end whatever this is.
    #[arg(long, value_name = "SECS", default_value = "30", requires = "output_dir",
          value_parser = copy_interval)]
    pub manifest_copy_every: std::time::Duration,
    /// With -o: DELETE each input once its archive is written, synced, renamed into place and
    /// verified by decoding it back to the input's hash (a rerun deletes those of archives
    /// already done, once verified). Symbolic links, pipes and devices are never deleted
    /// (kept and listed; not a failure). Not with an s3:// OUT (a usage error): verify the
    /// collection with verify --manifest, then delete.
    #[arg(long, requires = "output_dir")]
    pub delete_input: bool,
    /// Block codec (lzma: an .xz stream per block, levels 0 to 9 as xz's presets; smallest,
    /// slowest to pack and decode).
    #[arg(long, default_value = "zstd", value_parser = names_parser::<Codec>(Codec::NAMES))]
    pub codec: Codec,
    /// Codec level, or a preset: `fast` (the default: zstd 3, or zstd 1 for blocks where 3
    /// does not pay on a sample; deflate 6; lzma 6; filters judged on a sample) or `max` (zstd
    /// 19 / deflate 9 / lzma 9, filters judged on whole blocks, and with zstd lzma for the
    /// blocks where it is 3 % smaller, judged on a sample or, where values repeat far apart,
    /// on the whole block, and the context codec for numeric blocks where it is smaller;
    /// blocks of 8 MiB for variables over 1 MiB unless --block-size is given, so a read of
    /// one value decodes up to 8 MiB, at ~0.1 GB/s for lzma and context; for cold archives).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_level)]
    pub level: Option<Level>,
    /// Filter before the codec: auto (per block, the best of shuffle, bytedelta and zzdelta,
    /// and for float variables of 2+ dimensions the 2-D predictor lorenzo; with `--level max`
    /// also none and delta), none, shuffle, bytedelta, delta, zzdelta or lorenzo (on every
    /// block of float variables of 2+ dimensions, zzdelta on other blocks).
    #[arg(long, default_value = "auto", value_parser = names_parser::<FilterMode>(FilterMode::NAMES))]
    pub filter: FilterMode,
    /// Never use the pco codec for numeric blocks (by default, with `--filter auto`, blocks of
    /// 16-, 32- and 64-bit numbers use it where it compresses better, for variables of 2+
    /// dimensions also after the 2-D predictor plane or a predictor fitted to the block (the fit
    /// filter: noisy fields such as air temperature), and for blocks with a fill value on the
    /// other elements, with the fill values' places in a bitmap: the mask filter).
    #[arg(long)]
    pub no_pco: bool,
    /// Write the archives of files of at most 16 KiB in the compact form (the default: format
    /// 1.2, the same frames, index and hashes in about 125 fewer bytes; 1.3 where the header
    /// is smaller with the built-in dictionary of CF names).
    #[arg(long, overrides_with = "no_compact")]
    pub compact: bool,
    /// Write every archive in the full form, which nc3pack versions before 1.2 read too
    /// (by default the archives of files of at most 16 KiB are written in the compact form).
    #[arg(long, overrides_with = "compact")]
    pub no_compact: bool,
    /// Decoded bytes per block; accepts K/KiB/M/MiB/G/GiB suffixes [default: 1MiB; with
    /// `--level max`, 8MiB for variables over 1 MiB].
    #[arg(long, value_parser = nc3pack::vars::parse_size)]
    pub block_size: Option<u32>,
    /// Per-variable settings, VARS:KEY=VALUE[,KEY=VALUE...]: VARS is a comma-separated list of
    /// names and globs (`*` any run of characters, `?` one character, `\` makes the next
    /// character literal), as NCO's -v; keys are block-size, codec, level and filter, with the
    /// values of the options of the same names. Repeatable: later --var options override
    /// earlier ones, key by key, for the variables they both select. A name or glob matching
    /// no variable is an error listing the file's variables. E.g. --var 'u,v:block-size=64KiB'
    /// --var 'time*:codec=none'. A block size other than --block-size makes a format 1.1
    /// archive. Variables of at most 4 KiB share blocks and keep the archive-wide settings.
    #[arg(long = "var", value_name = "VARS:KEY=VALUE,...")]
    pub vars: Vec<nc3pack::vars::VarRule>,
    /// LOSSY, opt-in: quantize the named float/double variables before packing, as netCDF-C
    /// does: `VARS=bitround:NSB` keeps NSB mantissa bits (1..=23 float, 1..=52 double),
    /// `VARS=granularbr:NSD` NSD significant digits (1..=6 float, 1..=15 double). VARS: names
    /// and globs (`t*`), comma-separated. Fill values, NaN and infinities are kept. The archive
    /// then restores a new netCDF-3 file recording the quantization (netCDF-C and CF 1.12
    /// attributes) and the original's hash. Repeatable. With -o, every file of the batch: a
    /// name that matches no variable of a file fails that file; the manifest records the
    /// restored file's size and hash beside the input's. Not with --delete-input.
    #[arg(long, value_name = "VARS=ALG:N", value_parser = parse_quantize, conflicts_with = "delete_input")]
    pub quantize: Vec<nc3pack::quantize::QuantizeRule>,
    #[command(flatten)]
    pub common: Common,
}

fn parse_quantize(s: &str) -> Result<nc3pack::quantize::QuantizeRule, String> {
    s.parse()
        .map_err(|e: nc3pack::quantize::QuantizeError| e.to_string())
}

#[derive(Args)]
pub struct UnpackArgs {
    /// Archive to read (a path, or an s3://, http(s):// or file:// URL).
    pub input: PathBuf,
    /// netCDF-3 file to write (`-`: standard output; the hash is checked at the end, and on a
    /// mismatch the exit code is 1 and what was written must be discarded).
    pub output: PathBuf,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args)]
pub struct InfoArgs {
    /// A netCDF-3 file or an archive (a path, or an s3://, http(s):// or file:// URL).
    #[arg(required_unless_present = "manifest", conflicts_with = "manifest")]
    pub file: Option<PathBuf>,
    /// Summarize a collection from these manifests (files, or directories of *.jsonl such as
    /// OUT/.nc3pack; OUT stands for OUT/.nc3pack; s3:// URLs and prefixes too): files, bytes in
    /// and out, the ratio, the failures. Reads only the manifests (`verify --manifest` proves
    /// the archives).
    #[arg(long, num_args = 1.., value_name = "MANIFEST")]
    pub manifest: Vec<PathBuf>,
    /// Print JSON instead of CDL-like text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct SliceArgs {
    /// A netCDF-3 file or an archive (a path, or an s3://, http(s):// or file:// URL).
    pub file: PathBuf,
    /// Variable name.
    pub var: String,
    /// First index per dimension, comma-separated [default: 0,...].
    #[arg(long, value_delimiter = ',')]
    pub start: Option<Vec<u64>>,
    /// Number of values per dimension [default: all that fit].
    #[arg(long, value_delimiter = ',')]
    pub count: Option<Vec<u64>>,
    /// Step per dimension [default: 1,...].
    #[arg(long, value_delimiter = ',')]
    pub stride: Option<Vec<u64>>,
    /// Output: text (like ncdump's data section), json ({"shape", "data"}), or raw (native-order
    /// values in C order on stdout).
    #[arg(long, value_enum, default_value_t = SliceFormat::Text)]
    pub format: SliceFormat,
}

/// `slice --format`.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum SliceFormat {
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

#[derive(Clone, Copy, Debug)]
pub enum Level {
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

/// The command line's arguments with `pack` put in front of `nc3pack IN OUT` (global flags may
/// come first), ready for [`Cli`]'s parser (what [`parse`] parses faster; the tests compare).
#[cfg(test)]
pub fn arguments(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    with_pack(&<Cli as clap::CommandFactory>::command(), args)
}

/// The command line `args` parsed as [`Cli`], `pack` put in front of `nc3pack IN OUT` as
/// [`arguments`] does: what `Cli::try_parse_from(arguments(args))` returns, the description
/// of the command line (every command's arguments) built once instead of twice, which was
/// about a tenth of a millisecond of packing a tiny file. A `pack` command line is parsed
/// with the pack command's arguments alone (half the time again); any other, and one that
/// does not parse so, with the whole description (which makes the error).
///
/// # Errors
///
/// clap's error for a command line it refuses, or for `--help` and `--version` (whose text it
/// prints), as [`clap::Parser::try_parse_from`] returns it.
pub fn parse(args: Vec<std::ffi::OsString>) -> Result<Cli, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    if let Some(cli) = parse_pack(&args) {
        return Ok(cli);
    }
    let cmd = Cli::command();
    let args = with_pack(&cmd, args);
    let mut matches = cmd.try_get_matches_from(args)?;
    Cli::from_arg_matches_mut(&mut matches).map_err(|e| e.format(&mut Cli::command()))
}

/// The names of [`Command`]'s commands as clap spells them, and `help` (a test checks them).
const COMMANDS: [&str; 10] = [
    "pack",
    "unpack",
    "info",
    "slice",
    "verify",
    "reindex",
    "netcdf-plugin",
    "mount",
    "serve",
    "help",
];

/// A `pack` command line (`nc3pack [--anon] pack ARGS` or `nc3pack [--anon] IN ...`), parsed
/// with [`PackArgs`] and `--anon` alone; `None` for any other, or when that fails (the whole
/// parser then answers).
fn parse_pack(args: &[std::ffi::OsString]) -> Option<Cli> {
    use clap::{Arg, ArgAction, FromArgMatches};
    let first_at = 1 + args.iter().skip(1).take_while(|a| *a == "--anon").count();
    // (A name that is not UTF-8 is no command's: an input.)
    let first = args.get(first_at)?.to_string_lossy();
    let rest = match first.as_ref() {
        "pack" => first_at + 1,
        f if f.starts_with('-') || COMMANDS.contains(&f) => return None,
        _ => first_at,
    };
    let anon = Arg::new("anon").long("anon").action(ArgAction::SetTrue);
    let cmd = PackArgs::augment_args(clap::Command::new("pack").arg(anon));
    let line = args[1..first_at].iter().chain(&args[rest..]);
    let mut m = cmd
        .try_get_matches_from(std::iter::once(&args[0]).chain(line))
        .ok()?;
    let anon = m.get_flag("anon");
    let pack = PackArgs::from_arg_matches_mut(&mut m).ok()?;
    Some(Cli {
        command: Command::Pack(pack),
        anon,
    })
}

/// [`arguments`] with the command line's description `cmd` (of [`Cli`]).
fn with_pack(cmd: &clap::Command, mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let first_at = 1 + args.iter().skip(1).take_while(|a| *a == "--anon").count();
    if let Some(first) = args.get(first_at).map(|a| a.to_string_lossy().into_owned()) {
        let first = first.as_str();
        // The commands' names (and `help`), and the flags that need no command.
        let mut known = cmd.get_subcommands().map(|c| c.get_name()).chain(["help"]);
        let flag = ["-h", "--help", "-V", "--version"].contains(&first);
        if !flag && !known.any(|k| k == first) {
            args.insert(first_at, "pack".into());
        }
    }
    args
}

/// A progress bar on stderr for `total` bytes, only when stderr is a terminal, `total` is at
/// least 64 MiB and not `quiet`.
pub fn progress_bar(total: u64, quiet: bool, what: &str) -> Option<ProgressBar> {
    if quiet || total < (64 << 20) || !stderr_is_terminal() {
        return None;
    }
    let style = "{msg} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}";
    Some(styled(ProgressBar::new(total), style).with_message(what.to_string()))
}

/// For input of unknown length: a line counting the bytes read, shown once 64 MiB have been
/// read, only when stderr is a terminal and not `quiet`.
pub fn stream_spinner(quiet: bool, what: &str) -> Option<ProgressBar> {
    if quiet || !stderr_is_terminal() {
        return None;
    }
    let pb = styled(
        ProgressBar::hidden(),
        "{msg} {bytes} read, {bytes_per_sec} {spinner}",
    );
    Some(pb.with_message(format!("packing {what}:")))
}

/// `pb` with an indicatif `template` and nc3pack's bar characters (unchanged if the template
/// does not parse).
pub fn styled(pb: ProgressBar, template: &str) -> ProgressBar {
    match indicatif::ProgressStyle::with_template(template) {
        Ok(style) => pb.with_style(style.progress_chars("=> ")),
        Err(_) => pb,
    }
}

/// Whether standard error is a terminal (progress is drawn only there).
pub fn stderr_is_terminal() -> bool {
    std::io::stderr().is_terminal()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// `parse` (one description of the command line) gives what clap's own parser gives after
    /// `arguments`: the same command, or the same error with the same text.
    #[test]
    fn parse_gives_what_try_parse_from_gives() {
        let lines: &[&[&str]] = &[
            &["a.nc", "a.nc3z"],
            &["--anon", "a.nc", "a.nc3z", "-q", "-f"],
            &["pack", "a.nc", "a.nc3z", "-j", "2"],
            &["pack", "-qf", "a.nc", "a.nc3z", "--anon"],
            &["--anon", "pack", "a.nc", "a.nc3z", "--anon"],
            &["--anon", "--anon", "a.nc", "a.nc3z"],
            &[
                "pack", "--level", "max", "--codec", "lzma", "--filter", "shuffle", "a", "b",
            ],
            &[
                "pack",
                "--level",
                "-3",
                "--block-size",
                "64KiB",
                "--no-pco",
                "a",
                "b",
            ],
            &[
                "a.nc",
                "--var",
                "t:block-size=64KiB",
                "--var",
                "u*:codec=none",
                "o",
            ],
            &["pack", "--compact", "--no-compact", "a", "b"],
            &["pack", "--no-compact", "--compact", "a", "b"],
            &["pack", "--quantize", "t=bitround:5", "a", "b"],
            &[
                "pack", "-o", "out", "a", "b", "--shard", "1/3", "--root", "r",
            ],
            &[
                "pack",
                "-o",
                "out",
                "a",
                "--delete-input",
                "--manifest-copy-every",
                "2.5",
            ],
            &["pack", "--files-from", "list", "a", "b"],
            &[
                "pack",
                "-o",
                "out",
                "--delete-input",
                "--quantize",
                "t=bitround:5",
                "a",
            ],
            &["pack", "--level", "99", "a", "b"],
            &["pack", "--codec", "nope", "a", "b"],
            &["pack", "-j", "2000", "a", "b"],
            &["pack", "--help"],
            &["pack", "-h"],
            &["pack", "-V"],
            &["pack"],
            &["a.nc", "--", "-weird"],
            &["a.nc", "b", "c"],
            &["pack", "a", "b", "--anon", "--anon"],
            &["unpack", "a.nc3z", "a.nc", "-f"],
            &["info", "a.nc3z"],
            &["verify", "a.nc3z"],
            &["slice", "a.nc3z", "t", "--start", "0"],
            &["netcdf-plugin", "--rc"],
            &["pack", "a.nc", "a.nc3z", "-j", "0"],
            &["pack", "a.nc", "a.nc3z", "--level", "fastest"],
            &["unpack"],
            &["--bogus"],
            &["--version"],
            &["--help"],
            &["help", "pack"],
            &[],
        ];
        let mut fast = 0;
        for line in lines {
            let args: Vec<std::ffi::OsString> = std::iter::once("nc3pack")
                .chain(line.iter().copied())
                .map(Into::into)
                .collect();
            fast += usize::from(parse_pack(&args).is_some());
            let ours = parse(args.clone());
            let clap = Cli::try_parse_from(arguments(args));
            match (ours, clap) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(
                        std::mem::discriminant(&a.command),
                        std::mem::discriminant(&b.command),
                        "{line:?}"
                    );
                    assert_eq!(a.anon, b.anon, "{line:?}");
                    if let (Command::Pack(a), Command::Pack(b)) = (a.command, b.command) {
                        assert_eq!(format!("{a:?}"), format!("{b:?}"), "{line:?}");
                    }
                }
                (Err(a), Err(b)) => {
                    assert_eq!(a.kind(), b.kind(), "{line:?}");
                    assert_eq!(a.render().to_string(), b.render().to_string(), "{line:?}");
                }
                (a, b) => panic!("{line:?}: {} vs {}", a.is_ok(), b.is_ok()),
            }
        }
        // The pack lines that parse took the fast path (and gave what clap gives).
        assert!(
            fast >= 12,
            "{fast} lines parsed by the pack arguments alone"
        );
    }

    /// The fast path's list of command names is clap's.
    #[test]
    fn the_command_names_are_the_commands_of_the_command_line() {
        let cmd = <Cli as clap::CommandFactory>::command();
        let mut names: Vec<&str> = cmd.get_subcommands().map(|c| c.get_name()).collect();
        names.push("help");
        names.sort_unstable();
        let mut ours = COMMANDS.to_vec();
        ours.sort_unstable();
        assert_eq!(names, ours);
    }
}

#[cfg(test)]
mod examples {
    //! Command lines parsed.

    #[test]
    fn unpack_force() {
        use clap::Parser;
        let cli =
            crate::cli::Cli::try_parse_from(["nc3pack", "unpack", "a.nc3z", "a.nc", "-f"]).unwrap();
        let crate::cli::Command::Unpack(u) = cli.command else {
            panic!()
        };
        assert!(u.common.force);
        assert_eq!(u.output, std::path::Path::new("a.nc"));
    }

    #[test]
    fn arguments_put_pack_in_front() {
        use clap::Parser;
        let args = crate::cli::arguments(["nc3pack", "a.nc", "a.nc3z"].map(Into::into).to_vec());
        assert_eq!(args, ["nc3pack", "pack", "a.nc", "a.nc3z"]);
        let cli = crate::cli::Cli::try_parse_from(args).unwrap();
        assert!(matches!(cli.command, crate::cli::Command::Pack(_)));
    }

    #[test]
    fn parse_a_pack_command_line() {
        let cli = crate::cli::parse(["nc3pack", "a.nc", "a.nc3z", "-f"].map(Into::into).to_vec());
        let Ok(crate::cli::Cli {
            command: crate::cli::Command::Pack(p),
            ..
        }) = cli
        else {
            panic!("not a pack command line")
        };
        assert!(p.common.force);
        assert!(crate::cli::parse(["nc3pack", "unpack"].map(Into::into).to_vec()).is_err());
        // An input whose name is not UTF-8, in the short form.
        use std::os::unix::ffi::OsStringExt;
        let bad = std::ffi::OsString::from_vec(b"bad\xff.nc".to_vec());
        let cli = crate::cli::parse(vec!["nc3pack".into(), bad.clone(), "x.nc3z".into()]);
        let Ok(crate::cli::Cli {
            command: crate::cli::Command::Pack(p),
            ..
        }) = cli
        else {
            panic!("not a pack command line")
        };
        assert_eq!(p.paths[0], std::path::PathBuf::from(bad));
    }

    #[test]
    fn no_progress_bar_for_a_small_file() {
        // Not quiet, but small: no bar.
        assert!(crate::cli::progress_bar(1 << 20, false, "packing a.nc").is_none());
    }

    #[test]
    fn no_spinner_when_quiet() {
        assert!(crate::cli::stream_spinner(true, "a.nc").is_none());
    }

    #[test]
    fn styled_bar_stays_hidden() {
        let pb = crate::cli::styled(indicatif::ProgressBar::hidden(), "{msg} {bytes}");
        assert!(pb.is_hidden());
    }

    #[test]
    fn stderr_is_terminal_answers() {
        let _ = crate::cli::stderr_is_terminal();
    }
}
