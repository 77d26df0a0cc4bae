//! Options of the operations (unpacking, verifying, reindexing; packing's are in `pack`), the
//! progress callback they share, and the names of codecs, filters and filter modes (parsed with
//! [`FromStr`], printed with [`Display`](fmt::Display)).

use crate::codec::FilterMode;
use crate::format::{Codec, Filter};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

/// A progress callback: called with the bytes done so far (input bytes read when packing,
/// output bytes written when unpacking). The default reports nothing.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// let seen = Arc::new(AtomicU64::new(0));
/// let s = seen.clone();
/// let p = nc3pack::Progress::new(move |n| s.store(n, Ordering::Relaxed));
/// p.report(42);
/// assert_eq!(seen.load(Ordering::Relaxed), 42);
/// nc3pack::Progress::default().report(7); // does nothing
/// ```
#[derive(Clone, Default)]
pub struct Progress(Option<Arc<dyn Fn(u64) + Send + Sync>>);

impl Progress {
    /// A callback that calls `f` with the bytes done so far.
    ///
    /// ```
    /// let p = nc3pack::Progress::new(|n| eprintln!("{n} bytes"));
    /// # let _ = p;
    /// ```
    pub fn new(f: impl Fn(u64) + Send + Sync + 'static) -> Self {
        Progress(Some(Arc::new(f)))
    }

    /// Reports `n` bytes done (nothing for the default callback).
    ///
    /// ```
    /// nc3pack::Progress::default().report(1);
    /// ```
    pub fn report(&self, n: u64) {
        if let Some(f) = &self.0 {
            f(n)
        }
    }
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Progress(callback)"
        } else {
            "Progress(none)"
        })
    }
}

/// The number of cores (at least 1), bounded as thread counts are: looked up once per
/// process ([`crate::parallel::default_threads`]).
pub(crate) fn default_threads() -> usize {
    crate::parallel::default_threads()
}

/// How to unpack (see [`crate::unpack_file`]).
///
/// ```
/// let opts = nc3pack::UnpackOptions::default().with_force(true).with_threads(2);
/// assert!(opts.force());
/// assert_eq!(opts.threads(), 2);
/// ```
#[derive(Debug, Clone)]
pub struct UnpackOptions {
    /// Overwrite the output if it exists.
    pub(crate) force: bool,
    /// Decoder threads (bounded to 1..=1024); the default is the number of cores.
    pub(crate) threads: usize,
    /// Called with the output bytes written so far.
    pub(crate) progress: Progress,
    /// How an archive given by URL is reached (`None`: the environment's,
    /// [`crate::remote::RemoteOptions::from_env`], read at the call).
    pub(crate) remote: Option<crate::read::input::CallRemote>,
}

impl Default for UnpackOptions {
    fn default() -> Self {
        UnpackOptions {
            force: false,
            threads: default_threads(),
            progress: Progress::default(),
            remote: None,
        }
    }
}

impl UnpackOptions {
    /// These options, overwriting the output if `force`.
    ///
    /// ```
    /// assert!(nc3pack::UnpackOptions::default().with_force(true).force());
    /// ```
    pub fn with_force(mut self, force: bool) -> Self {
        self.force = force;
        self
    }

    /// These options with `threads` decoder threads.
    ///
    /// ```
    /// assert_eq!(nc3pack::UnpackOptions::default().with_threads(1).threads(), 1);
    /// ```
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// These options, reporting progress to `f`.
    ///
    /// ```
    /// let opts = nc3pack::UnpackOptions::default().with_progress(|n| eprintln!("{n}"));
    /// # let _ = opts;
    /// ```
    pub fn with_progress(mut self, f: impl Fn(u64) + Send + Sync + 'static) -> Self {
        self.progress = Progress::new(f);
        self
    }

    /// Whether an existing output is overwritten.
    ///
    /// ```
    /// assert!(!nc3pack::UnpackOptions::default().force());
    /// ```
    pub fn force(&self) -> bool {
        self.force
    }

    /// Decoder threads (bounded to 1..=1024 when unpacking); the default is the number of
    /// cores.
    ///
    /// ```
    /// assert_eq!(nc3pack::UnpackOptions::default().with_threads(4).threads(), 4);
    /// ```
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The callback given the output bytes written so far.
    ///
    /// ```
    /// nc3pack::UnpackOptions::default().progress().report(1); // no callback: nothing
    /// ```
    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    /// These options, reaching an archive given by URL (`s3://`, `http(s)://`) with `remote`
    /// (credentials, endpoint, region, anonymous access) instead of the environment's
    /// ([`crate::remote::RemoteOptions::from_env`]): the call goes by `remote` alone (it reads
    /// the environment only if `remote` was made by `from_env`), nothing process-wide, so calls
    /// on different threads with different credentials do not meet.
    ///
    /// ```
    /// use nc3pack::{remote::RemoteOptions, UnpackOptions};
    /// let opts = UnpackOptions::default()
    ///     .with_remote(RemoteOptions::default().with_endpoint("http://127.0.0.1:9000"));
    /// assert!(opts.remote().is_some());
    /// ```
    #[cfg(feature = "remote")]
    pub fn with_remote(mut self, remote: crate::remote::RemoteOptions) -> Self {
        self.remote = Some(remote);
        self
    }

    /// The remote options given with [`UnpackOptions::with_remote`], if any.
    ///
    /// ```
    /// assert!(nc3pack::UnpackOptions::default().remote().is_none());
    /// ```
    #[cfg(feature = "remote")]
    pub fn remote(&self) -> Option<&crate::remote::RemoteOptions> {
        self.remote.as_ref()
    }
}

/// How to verify an archive (see [`crate::verify`]).
///
/// ```
/// let opts = nc3pack::VerifyOptions::default().with_against("sst.nc").with_threads(2);
/// assert_eq!(opts.against(), Some("sst.nc".as_ref()));
/// assert_eq!(opts.threads(), 2);
/// ```
#[derive(Debug, Clone)]
pub struct VerifyOptions {
    /// The original netCDF-3 file, if at hand: its hash is compared with the one the archive
    /// recorded ([`crate::VerifyReport::original_matches`]). It is read once, in order (it may
    /// be a pipe).
    pub(crate) against: Option<PathBuf>,
    /// Threads checking and decoding blocks (bounded to 1..=1024); the default is the number
    /// of cores.
    pub(crate) threads: usize,
    /// How an archive given by URL is reached (`None`: the environment's,
    /// [`crate::remote::RemoteOptions::from_env`], read at the call).
    pub(crate) remote: Option<crate::read::input::CallRemote>,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            against: None,
            threads: default_threads(),
            remote: None,
        }
    }
}

impl VerifyOptions {
    /// These options, comparing the archive with the original file `original` too.
    ///
    /// ```
    /// let opts = nc3pack::VerifyOptions::default().with_against("/tmp/sst.nc");
    /// assert!(opts.against().is_some());
    /// ```
    pub fn with_against(mut self, original: impl Into<PathBuf>) -> Self {
        self.against = Some(original.into());
        self
    }

    /// These options with `threads` threads.
    ///
    /// ```
    /// assert_eq!(nc3pack::VerifyOptions::default().with_threads(1).threads(), 1);
    /// ```
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// The original file the archive is compared with, if any.
    ///
    /// ```
    /// assert_eq!(nc3pack::VerifyOptions::default().against(), None);
    /// ```
    pub fn against(&self) -> Option<&std::path::Path> {
        self.against.as_deref()
    }

    /// Threads checking and decoding blocks (bounded to 1..=1024 when verifying); the default
    /// is the number of cores.
    ///
    /// ```
    /// assert_eq!(nc3pack::VerifyOptions::default().with_threads(2).threads(), 2);
    /// ```
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// These options, reaching an archive given by URL (`s3://`, `http(s)://`) with `remote`
    /// (credentials, endpoint, region, anonymous access) instead of the environment's
    /// ([`crate::remote::RemoteOptions::from_env`]): the call goes by `remote` alone (it reads
    /// the environment only if `remote` was made by `from_env`), nothing process-wide, so calls
    /// on different threads with different credentials do not meet.
    ///
    /// ```
    /// use nc3pack::{remote::RemoteOptions, VerifyOptions};
    /// let opts = VerifyOptions::default().with_remote(RemoteOptions::default().with_anon(true));
    /// assert!(opts.remote().is_some_and(|r| r.anon()));
    /// ```
    #[cfg(feature = "remote")]
    pub fn with_remote(mut self, remote: crate::remote::RemoteOptions) -> Self {
        self.remote = Some(remote);
        self
    }

    /// The remote options given with [`VerifyOptions::with_remote`], if any.
    ///
    /// ```
    /// assert!(nc3pack::VerifyOptions::default().remote().is_none());
    /// ```
    #[cfg(feature = "remote")]
    pub fn remote(&self) -> Option<&crate::remote::RemoteOptions> {
        self.remote.as_ref()
    }
}

/// How to reindex an archive (see [`crate::reindex`]).
///
/// ```
/// let opts = nc3pack::ReindexOptions::default().with_force(true);
/// assert!(opts.force());
/// assert!(!nc3pack::ReindexOptions::default().force());
/// ```
#[derive(Debug, Clone, Default)]
pub struct ReindexOptions {
    /// Overwrite the output if it exists.
    pub(crate) force: bool,
}

impl ReindexOptions {
    /// These options, overwriting the output if `force`.
    ///
    /// ```
    /// assert!(nc3pack::ReindexOptions::default().with_force(true).force());
    /// ```
    pub fn with_force(mut self, force: bool) -> Self {
        self.force = force;
        self
    }

    /// Whether an existing output is overwritten.
    ///
    /// ```
    /// assert!(!nc3pack::ReindexOptions::default().force());
    /// ```
    pub fn force(&self) -> bool {
        self.force
    }
}

/// A name that is not one of a kind's valid names (a codec, a filter, a filter mode).
///
/// ```
/// let e = "lz4".parse::<nc3pack::format::Codec>().unwrap_err();
/// assert_eq!(e.value, "lz4");
/// assert_eq!(e.to_string(), "unknown codec \"lz4\" (valid: zstd, deflate, lzma, none)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} {value:?} (valid: {})", valid.join(", "))]
pub struct ParseNameError {
    /// What was being parsed: "codec", "filter" or "filter mode".
    pub kind: &'static str,
    /// The name given.
    pub value: String,
    /// The valid names.
    pub valid: &'static [&'static str],
}

/// The codecs a user may choose, in the registry's order: its lines marked `USER`
/// (`src/format/codecs.rs`; constant blocks are the encoder's choice, never the user's).
const CODECS: [Codec; user_codecs().1] = {
    let (all, n) = user_codecs();
    let mut out = [Codec::None; user_codecs().1];
    let mut i = 0;
    while i < n {
        out[i] = all[i];
        i += 1;
    }
    out
};
const CODEC_NAMES: &[&str] = &{
    let mut out = [""; CODECS.len()];
    let mut i = 0;
    while i < CODECS.len() {
        out[i] = CODECS[i].name();
        i += 1;
    }
    out
};

/// The codecs of the registry a user may choose, first in an array of every codec's length,
/// and their count.
const fn user_codecs() -> ([Codec; Codec::ALL.len()], usize) {
    let mut out = [Codec::None; Codec::ALL.len()];
    let (mut i, mut n) = (0, 0);
    while i < Codec::ALL.len() {
        if Codec::ALL[i].user_choice() {
            out[n] = Codec::ALL[i];
            n += 1;
        }
        i += 1;
    }
    (out, n)
}
/// The filters a user may choose, in the registry's order: its lines marked `USER`
/// (`src/format/filters.rs`; `plane`, `refs`, `mask` and `fit` are the encoder's choice, never
/// the user's).
const FILTERS: [Filter; user_filters().1] = {
    let (all, n) = user_filters();
    let mut out = [Filter::None; user_filters().1];
    let mut i = 0;
    while i < n {
        out[i] = all[i];
        i += 1;
    }
    out
};
const FILTER_NAMES: &[&str] = &{
    let mut out = [""; FILTERS.len()];
    let mut i = 0;
    while i < FILTERS.len() {
        out[i] = FILTERS[i].name();
        i += 1;
    }
    out
};

/// The filters of the registry a user may choose, first in an array of every filter's length,
/// and their count.
const fn user_filters() -> ([Filter; Filter::ALL.len()], usize) {
    let mut out = [Filter::None; Filter::ALL.len()];
    let (mut i, mut n) = (0, 0);
    while i < Filter::ALL.len() {
        if Filter::ALL[i].user_choice() {
            out[n] = Filter::ALL[i];
            n += 1;
        }
        i += 1;
    }
    (out, n)
}

/// `auto`, then the names of [`FILTERS`] (the `--filter` choices).
const MODE_NAMES: &[&str] = &{
    let mut out = ["auto"; FILTERS.len() + 1];
    let mut i = 0;
    while i < FILTERS.len() {
        out[i + 1] = FILTERS[i].name();
        i += 1;
    }
    out
};

/// Parses `zstd`, `deflate`, `lzma` or `none` (`constant` and `pco` are not codecs one
/// chooses for every block).
///
/// ```
/// use nc3pack::format::Codec;
/// assert_eq!("deflate".parse::<Codec>(), Ok(Codec::Deflate));
/// assert_eq!(Codec::Zstd.to_string(), "zstd");
/// assert!("constant".parse::<Codec>().is_err());
/// ```
impl FromStr for Codec {
    type Err = ParseNameError;
    fn from_str(s: &str) -> Result<Self, ParseNameError> {
        CODECS
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| ParseNameError {
                kind: "codec",
                value: s.to_string(),
                valid: CODEC_NAMES,
            })
    }
}

impl fmt::Display for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Parses `none`, `shuffle`, `bytedelta`, `delta`, `zzdelta` or `lorenzo` (`plane` is not a
/// filter one chooses for every block: it goes with the pco codec).
///
/// ```
/// use nc3pack::format::Filter;
/// assert_eq!("zzdelta".parse::<Filter>(), Ok(Filter::ZigZagDelta));
/// assert_eq!("lorenzo".parse::<Filter>(), Ok(Filter::Lorenzo));
/// assert!("plane".parse::<Filter>().is_err());
/// assert_eq!(Filter::ByteDelta.to_string(), "bytedelta");
/// ```
impl FromStr for Filter {
    type Err = ParseNameError;
    fn from_str(s: &str) -> Result<Self, ParseNameError> {
        FILTERS
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| ParseNameError {
                kind: "filter",
                value: s.to_string(),
                valid: FILTER_NAMES,
            })
    }
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Parses `auto` or a filter's name (a fixed filter).
///
/// ```
/// use nc3pack::{format::Filter, FilterMode};
/// assert_eq!("auto".parse::<FilterMode>(), Ok(FilterMode::Auto));
/// assert_eq!("shuffle".parse::<FilterMode>(), Ok(FilterMode::Fixed(Filter::Shuffle)));
/// assert_eq!(FilterMode::Fixed(Filter::None).to_string(), "none");
/// ```
impl FromStr for FilterMode {
    type Err = ParseNameError;
    fn from_str(s: &str) -> Result<Self, ParseNameError> {
        if s == "auto" {
            return Ok(FilterMode::Auto);
        }
        s.parse()
            .map(FilterMode::Fixed)
            .map_err(|_| ParseNameError {
                kind: "filter mode",
                value: s.to_string(),
                valid: MODE_NAMES,
            })
    }
}

impl fmt::Display for FilterMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FilterMode::Auto => f.write_str("auto"),
            FilterMode::Fixed(x) => x.fmt(f),
        }
    }
}

impl FilterMode {
    /// Every name [`FilterMode::from_str`] accepts (for command lines).
    ///
    /// ```
    /// assert_eq!(nc3pack::FilterMode::NAMES[0], "auto");
    /// ```
    pub const NAMES: &'static [&'static str] = MODE_NAMES;
}

impl Codec {
    /// Every name [`Codec::from_str`] accepts (for command lines).
    ///
    /// ```
    /// assert_eq!(nc3pack::format::Codec::NAMES, &["zstd", "deflate", "lzma", "none"]);
    /// ```
    pub const NAMES: &'static [&'static str] = CODEC_NAMES;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for c in CODECS {
            assert_eq!(c.to_string().parse::<Codec>(), Ok(c));
        }
        for f in FILTERS {
            assert_eq!(f.to_string().parse::<Filter>(), Ok(f));
            let m = FilterMode::Fixed(f);
            assert_eq!(m.to_string().parse::<FilterMode>(), Ok(m));
        }
        assert_eq!(CODEC_NAMES.len(), CODECS.len());
        assert_eq!(FILTER_NAMES.len(), FILTERS.len());
        // The `--filter` names, the registry's `USER` lines in their order.
        assert_eq!(
            FilterMode::NAMES,
            [
                "auto",
                "none",
                "shuffle",
                "bytedelta",
                "delta",
                "zzdelta",
                "lorenzo"
            ]
        );
    }

    #[test]
    fn bad_names_say_what_is_valid() {
        let e = "shuffel".parse::<FilterMode>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown filter mode \"shuffel\" (valid: auto, none, shuffle, bytedelta, delta, zzdelta, lorenzo)"
        );
        let e = "Zstd".parse::<Codec>().unwrap_err();
        assert_eq!((e.kind, e.value.as_str()), ("codec", "Zstd"));
        assert!("auto".parse::<Filter>().is_err());
    }
}
