//! Per-variable settings: which variables an option applies to (a [`VarSelection`]: names and
//! simple globs, as NCO's `-v` lists) and what it sets for them (a [`VarSettings`]: block size,
//! codec, level, filter). On the command line a rule is `VARS:KEY=VALUE[,KEY=VALUE...]`
//! (`--var 'u,v:block-size=64KiB' --var 'time*:codec=none'`), parsed by [`VarRule`]'s
//! [`FromStr`]; later rules override earlier ones, key by key, for the variables they both
//! select.
//!
//! The selection syntax stands alone ([`VarSelection::from_str`]) so that other per-variable
//! options can take the same lists.

use crate::format::{self, Codec};
use crate::nc3::Header;
use crate::FilterMode;
use std::fmt;
use std::str::FromStr;

/// Why a `--var` rule or a variable list does not parse.
///
/// ```
/// use nc3pack::vars::{VarRule, VarParseError};
/// let e = "u:speed=3".parse::<VarRule>().unwrap_err();
/// assert!(matches!(e, VarParseError::UnknownKey { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VarParseError {
    /// The variable list is empty, or one of its items is.
    #[error("{list:?}: empty variable name in the list (names are separated by commas; write \\, for a comma in a name)")]
    EmptyName {
        /// The list given.
        list: String,
    },
    /// The list ends with a lone backslash.
    #[error("{list:?}: ends with a lone backslash")]
    TrailingEscape {
        /// The list given.
        list: String,
    },
    /// No `:` between the variables and the settings.
    #[error("{rule:?}: expected VARS:KEY=VALUE[,KEY=VALUE...], e.g. 'u,v:block-size=64KiB'")]
    NoSettings {
        /// The rule given.
        rule: String,
    },
    /// A setting is not `KEY=VALUE`.
    #[error("{setting:?} is not KEY=VALUE (keys: block-size, codec, level, filter)")]
    NotKeyValue {
        /// The setting given.
        setting: String,
    },
    /// An unknown key.
    #[error("unknown setting {key:?} (keys: block-size, codec, level, filter)")]
    UnknownKey {
        /// The key given.
        key: String,
    },
    /// A value that does not parse for its key.
    #[error("{key}={value:?}: {why}")]
    BadValue {
        /// The key.
        key: &'static str,
        /// The value given.
        value: String,
        /// What is wrong.
        why: String,
    },
}

/// One item of a variable list: a name, or a glob with `*` (any run of characters) and `?` (any
/// one character).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pattern {
    /// The item as given (escapes kept), for messages.
    text: String,
    /// The item's characters, each with whether it is a wildcard.
    chars: Vec<(char, bool)>,
}

impl Pattern {
    fn matches(&self, name: &str) -> bool {
        let name: Vec<char> = name.chars().collect();
        // Iterative glob match with one backtrack point (the last `*`): linear in practice,
        // O(pattern * name) at worst, and bounded.
        let (p, n) = (&self.chars, &name);
        let (mut i, mut j) = (0usize, 0usize);
        let mut star: Option<(usize, usize)> = None;
        while j < n.len() {
            match p.get(i) {
                Some(&('*', true)) => {
                    star = Some((i, j));
                    i += 1;
                }
                Some(&(c, wild)) if (wild && c == '?') || (!wild && c == n[j]) => {
                    i += 1;
                    j += 1;
                }
                _ => match star {
                    Some((si, sj)) => {
                        i = si + 1;
                        j = sj + 1;
                        star = Some((si, sj + 1));
                    }
                    None => return false,
                },
            }
        }
        p[i..].iter().all(|&(c, wild)| wild && c == '*')
    }
}

/// A list of variable names and globs, comma-separated as NCO's `-v` lists: `u,v`, `time*`,
/// `lat?,lon?`. `*` matches any run of characters, `?` any one character; a backslash makes the
/// next character literal (`a\,b` is the name `a,b`, `x\*` the name `x*`).
///
/// ```
/// use nc3pack::vars::VarSelection;
/// let s: VarSelection = "u,v,time*".parse()?;
/// assert!(s.matches("u") && s.matches("time_bnds") && !s.matches("uu"));
/// assert_eq!(s.to_string(), "u,v,time*");
/// # Ok::<(), nc3pack::vars::VarParseError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarSelection {
    items: Vec<Pattern>,
}

impl VarSelection {
    /// Whether the variable `name` is selected.
    ///
    /// ```
    /// let s: nc3pack::vars::VarSelection = "t?mp".parse().unwrap();
    /// assert!(s.matches("temp") && !s.matches("tmp"));
    /// ```
    pub fn matches(&self, name: &str) -> bool {
        self.items.iter().any(|p| p.matches(name))
    }

    /// Whether the list names `name` literally: by an item without wildcards, not only through
    /// a glob.
    ///
    /// ```
    /// let s: nc3pack::vars::VarSelection = "t*,u,x\\*".parse().unwrap();
    /// assert!(s.names("u") && s.names("x*"));
    /// assert!(s.matches("temp") && !s.names("temp"));
    /// ```
    pub fn names(&self, name: &str) -> bool {
        self.items
            .iter()
            .any(|p| p.chars.iter().all(|&(_, wild)| !wild) && p.matches(name))
    }

    /// The first item of the list (as given) that matches none of `names`, if one does not.
    ///
    /// ```
    /// let s: nc3pack::vars::VarSelection = "t*,u,w".parse().unwrap();
    /// assert_eq!(s.unmatched(&["temp", "u", "v"]), Some("w"));
    /// assert_eq!(s.unmatched(&["temp", "u", "w"]), None);
    /// ```
    pub fn unmatched(&self, names: &[&str]) -> Option<&str> {
        self.items
            .iter()
            .find(|p| !names.iter().any(|n| p.matches(n)))
            .map(|p| p.text.as_str())
    }

    /// The ids of the variables of `header` that the selection matches, in header order.
    ///
    /// ```
    /// let f = std::fs::File::open("samples/obs_points.nc")?;
    /// let (header, _, _) = nc3pack::nc3::open(&f, "obs_points.nc".as_ref())?;
    /// let s: nc3pack::vars::VarSelection = "temp,lat*".parse()?;
    /// assert_eq!(s.select(&header, "obs_points.nc".as_ref())?.len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`NoSuchVar`] when an item of the list (a name or a glob) matches no variable of the
    /// file: the error lists the file's variables.
    pub fn select(&self, header: &Header, file: &std::path::Path) -> Result<Vec<usize>, NoSuchVar> {
        let names: Vec<&str> = (0..header.var_count())
            .map(|i| header.var(i).name())
            .collect();
        if let Some(pattern) = self.unmatched(&names) {
            const LISTED: usize = 100;
            let mut vars: Vec<String> = names.iter().take(LISTED).map(|s| s.to_string()).collect();
            if names.len() > LISTED {
                vars.push(format!("... ({} more)", names.len() - LISTED));
            }
            return Err(NoSuchVar {
                file: file.to_path_buf(),
                pattern: pattern.to_string(),
                vars,
            });
        }
        Ok((0..names.len())
            .filter(|&i| self.matches(names[i]))
            .collect())
    }
}

/// A name or glob of a variable selection that matches no variable of a file (in
/// [`OptionError::NoSuchVar`](crate::error::OptionError::NoSuchVar) when packing).
///
/// ```
/// let f = std::fs::File::open("samples/obs_points.nc")?;
/// let (header, _, _) = nc3pack::nc3::open(&f, "obs_points.nc".as_ref())?;
/// let s: nc3pack::vars::VarSelection = "temp,nope*".parse()?;
/// let e = s.select(&header, "obs_points.nc".as_ref()).unwrap_err();
/// assert_eq!(e.pattern, "nope*");
/// assert!(e.to_string().starts_with("--var: no variable of obs_points.nc matches \"nope*\""));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--var: no variable of {} matches {pattern:?} (its variables: {})", file.display(), if vars.is_empty() { "none".to_string() } else { vars.join(", ") })]
pub struct NoSuchVar {
    /// The file.
    pub file: std::path::PathBuf,
    /// The name or glob.
    pub pattern: String,
    /// The file's variables (the first 100, then a count of the rest).
    pub vars: Vec<String>,
}

/// Parses a comma-separated list of names and globs (see [`VarSelection`]).
///
/// ```
/// use nc3pack::vars::VarSelection;
/// assert!("a,,b".parse::<VarSelection>().is_err());
/// assert!(r"a\,b".parse::<VarSelection>()?.matches("a,b"));
/// # Ok::<(), nc3pack::vars::VarParseError>(())
/// ```
impl FromStr for VarSelection {
    type Err = VarParseError;
    fn from_str(list: &str) -> Result<Self, VarParseError> {
        let mut items = Vec::new();
        let mut cur = Pattern {
            text: String::new(),
            chars: Vec::new(),
        };
        let mut it = list.chars();
        let empty = || VarParseError::EmptyName {
            list: list.to_string(),
        };
        while let Some(c) = it.next() {
            match c {
                '\\' => {
                    let next = it.next().ok_or_else(|| VarParseError::TrailingEscape {
                        list: list.to_string(),
                    })?;
                    cur.text.push('\\');
                    cur.text.push(next);
                    cur.chars.push((next, false));
                }
                ',' => {
                    if cur.chars.is_empty() {
                        return Err(empty());
                    }
                    items.push(std::mem::replace(
                        &mut cur,
                        Pattern {
                            text: String::new(),
                            chars: Vec::new(),
                        },
                    ));
                }
                '*' | '?' => {
                    cur.text.push(c);
                    cur.chars.push((c, true));
                }
                _ => {
                    cur.text.push(c);
                    cur.chars.push((c, false));
                }
            }
        }
        if cur.chars.is_empty() {
            return Err(empty());
        }
        items.push(cur);
        Ok(VarSelection { items })
    }
}

impl fmt::Display for VarSelection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.items.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(&p.text)?;
        }
        Ok(())
    }
}

/// What a rule sets for its variables; `None` leaves the setting to earlier rules or to the
/// archive-wide options.
///
/// ```
/// use nc3pack::{format::Codec, vars::VarSettings};
/// let s = VarSettings { codec: Some(Codec::None), ..VarSettings::default() };
/// assert_eq!(s.block_size, None);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VarSettings {
    /// Nominal block size of the variable's stream, in decoded bytes (8 B..=1 GiB). A block
    /// size other than the archive's makes the archive format 1.1 (design/FORMAT.md).
    pub block_size: Option<u32>,
    /// Codec of the variable's blocks. Without a `level`, the codec's level for the preset
    /// (default or `max`).
    pub codec: Option<Codec>,
    /// Codec level (of the variable's codec); setting it turns off the `fast` preset's per-block
    /// choice of zstd level 1 for the variable.
    pub level: Option<i32>,
    /// How the variable's blocks choose their filter.
    pub filter: Option<FilterMode>,
}

impl VarSettings {
    /// These settings, overridden by the ones `later` sets.
    ///
    /// ```
    /// use nc3pack::vars::VarSettings;
    /// let a = VarSettings { block_size: Some(64), level: Some(5), ..Default::default() };
    /// let b = VarSettings { level: Some(7), ..Default::default() };
    /// assert_eq!(a.then(&b), VarSettings { block_size: Some(64), level: Some(7), ..Default::default() });
    /// ```
    pub fn then(&self, later: &VarSettings) -> VarSettings {
        VarSettings {
            block_size: later.block_size.or(self.block_size),
            codec: later.codec.or(self.codec),
            level: later.level.or(self.level),
            filter: later.filter.or(self.filter),
        }
    }
}

/// A per-variable rule: the variables it applies to and what it sets, as given to
/// `pack --var`: `VARS:KEY=VALUE[,KEY=VALUE...]` with keys `block-size` (bytes, with an optional
/// K/KiB/M/MiB/G/GiB suffix), `codec` (zstd, deflate, lzma, none), `level` (a number) and `filter`
/// (auto, none, shuffle, bytedelta, delta, zzdelta). The settings follow the last `:` (names
/// may hold colons).
///
/// ```
/// use nc3pack::{format::Codec, vars::VarRule};
/// let r: VarRule = "u,v:block-size=64KiB,codec=deflate".parse()?;
/// assert_eq!(r.settings.block_size, Some(65536));
/// assert_eq!(r.settings.codec, Some(Codec::Deflate));
/// assert!(r.vars.matches("v"));
/// assert_eq!(r.to_string(), "u,v:block-size=65536,codec=deflate");
/// # Ok::<(), nc3pack::vars::VarParseError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarRule {
    /// The variables.
    pub vars: VarSelection,
    /// What it sets for them.
    pub settings: VarSettings,
}

impl VarRule {
    /// A rule setting `settings` for the variables of the list `vars`.
    ///
    /// ```
    /// use nc3pack::vars::{VarRule, VarSettings};
    /// let r = VarRule::new("time*", VarSettings { block_size: Some(4096), ..Default::default() })?;
    /// assert!(r.vars.matches("time_bnds"));
    /// # Ok::<(), nc3pack::vars::VarParseError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A [`VarParseError`] when `vars` is not a valid list.
    pub fn new(vars: &str, settings: VarSettings) -> Result<VarRule, VarParseError> {
        Ok(VarRule {
            vars: vars.parse()?,
            settings,
        })
    }
}

/// Splits `s` at its last `:` that no backslash escapes.
fn split_last_colon(s: &str) -> Option<(&str, &str)> {
    let mut last = None;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ':' => last = Some(i),
            _ => {}
        }
    }
    last.map(|i| (&s[..i], &s[i + 1..]))
}

/// What is wrong with a size given as text (see [`parse_size`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SizeError {
    /// No number where one was expected.
    #[error("{0:?} is not a size like 65536, 64KiB or 1MiB")]
    NotASize(String),
    /// A suffix that is not a size unit.
    #[error("unknown size unit {0:?} (use KiB, MiB or GiB)")]
    UnknownUnit(String),
    /// More than `u32::MAX` bytes.
    #[error("{0:?} is too large")]
    TooLarge(String),
}

/// Parses a size: a number of bytes with an optional K/KiB/KB, M/MiB/MB or G/GiB/GB suffix
/// (all powers of 1024).
///
/// ```
/// use nc3pack::vars::{parse_size, SizeError};
/// assert_eq!(parse_size("64KiB"), Ok(65536));
/// assert_eq!(parse_size("64 parsecs"), Err(SizeError::UnknownUnit("parsecs".into())));
/// ```
///
/// # Errors
///
/// A [`SizeError`] saying what is wrong with `s`.
pub fn parse_size(s: &str) -> Result<u32, SizeError> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| SizeError::NotASize(s.into()))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" | "kb" => 1 << 10,
        "m" | "mib" | "mb" => 1 << 20,
        "g" | "gib" | "gb" => 1 << 30,
        _ => return Err(SizeError::UnknownUnit(unit.trim().into())),
    };
    n.checked_mul(mult)
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| SizeError::TooLarge(s.into()))
}

impl FromStr for VarRule {
    type Err = VarParseError;
    fn from_str(rule: &str) -> Result<Self, VarParseError> {
        let (vars, settings) = split_last_colon(rule).ok_or_else(|| VarParseError::NoSettings {
            rule: rule.to_string(),
        })?;
        let vars: VarSelection = vars.parse()?;
        let mut s = VarSettings::default();
        if settings.trim().is_empty() {
            return Err(VarParseError::NoSettings {
                rule: rule.to_string(),
            });
        }
        for kv in settings.split(',') {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| VarParseError::NotKeyValue {
                    setting: kv.to_string(),
                })?;
            let (k, v) = (k.trim(), v.trim());
            let bad = |key: &'static str, why: String| VarParseError::BadValue {
                key,
                value: v.to_string(),
                why,
            };
            match k {
                "block-size" | "block_size" => {
                    let n = parse_size(v).map_err(|w| bad("block-size", w.to_string()))?;
                    if !(format::MIN_BLOCK_SIZE..=format::MAX_BLOCK_SIZE).contains(&n) {
                        return Err(bad(
                            "block-size",
                            format!(
                                "outside {}..={} bytes",
                                format::MIN_BLOCK_SIZE,
                                format::MAX_BLOCK_SIZE
                            ),
                        ));
                    }
                    s.block_size = Some(n);
                }
                "codec" => s.codec = Some(v.parse().map_err(|e| bad("codec", format!("{e}")))?),
                "level" => {
                    s.level = Some(
                        v.parse()
                            .map_err(|_| bad("level", "not a level number".to_string()))?,
                    )
                }
                "filter" => s.filter = Some(v.parse().map_err(|e| bad("filter", format!("{e}")))?),
                _ => {
                    return Err(VarParseError::UnknownKey { key: k.to_string() });
                }
            }
        }
        Ok(VarRule { vars, settings: s })
    }
}

impl fmt::Display for VarRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.vars)?;
        let s = &self.settings;
        let mut parts = Vec::new();
        if let Some(b) = s.block_size {
            parts.push(format!("block-size={b}"));
        }
        if let Some(c) = s.codec {
            parts.push(format!("codec={c}"));
        }
        if let Some(l) = s.level {
            parts.push(format!("level={l}"));
        }
        if let Some(m) = s.filter {
            parts.push(format!("filter={m}"));
        }
        f.write_str(&parts.join(","))
    }
}

/// The settings of every variable of `header` under `rules` (in order, later ones overriding
/// earlier ones key by key): one entry per variable, in header order.
///
/// # Errors
///
/// [`NoSuchVar`] when an item of a rule's list matches no variable.
pub(crate) fn resolve(
    rules: &[VarRule],
    header: &Header,
    file: &std::path::Path,
) -> Result<Vec<VarSettings>, NoSuchVar> {
    let mut out = vec![
        VarSettings::default();
        if rules.is_empty() {
            0
        } else {
            header.var_count()
        }
    ];
    for r in rules {
        for v in r.vars.select(header, file)? {
            out[v] = out[v].then(&r.settings);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(s: &str) -> VarSelection {
        s.parse().unwrap()
    }

    #[test]
    fn globs_match_as_shell_globs_do() {
        let cases: &[(&str, &str, bool)] = &[
            ("u", "u", true),
            ("u", "uu", false),
            ("u", "", false),
            ("*", "", true),
            ("*", "anything", true),
            ("time*", "time", true),
            ("time*", "time_bnds", true),
            ("time*", "xtime", false),
            ("*_bnds", "lat_bnds", true),
            ("*_bnds", "lat_bnds2", false),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "abcbc", true),
            ("a*b*c", "acb", false),
            ("l?t", "lat", true),
            ("l?t", "lt", false),
            ("l?t", "lääät", false),
            ("l?t", "lät", true),
            (r"x\*", "x*", true),
            (r"x\*", "xy", false),
            (r"a\,b", "a,b", true),
            ("**a", "a", true),
        ];
        for &(p, n, want) in cases {
            assert_eq!(sel(p).matches(n), want, "{p:?} vs {n:?}");
        }
    }

    #[test]
    fn lists_split_on_unescaped_commas() {
        let s = sel(r"u,v\,w,t*");
        assert!(s.matches("u") && s.matches("v,w") && s.matches("tx"));
        assert!(!s.matches("v") && !s.matches("w"));
        for bad in ["", ",", "a,", ",a", "a,,b"] {
            assert!(
                matches!(
                    bad.parse::<VarSelection>(),
                    Err(VarParseError::EmptyName { .. })
                ),
                "{bad:?}"
            );
        }
        assert!(matches!(
            r"a\".parse::<VarSelection>(),
            Err(VarParseError::TrailingEscape { .. })
        ));
    }

    #[test]
    fn rules_parse_every_key_and_refuse_bad_ones() {
        let r: VarRule = "a:b:block-size=4KiB,codec=none,level=0,filter=shuffle"
            .parse()
            .unwrap();
        assert!(r.vars.matches("a:b"));
        assert_eq!(
            r.settings,
            VarSettings {
                block_size: Some(4096),
                codec: Some(Codec::None),
                level: Some(0),
                filter: Some(FilterMode::Fixed(format::Filter::Shuffle)),
            }
        );
        assert!(matches!(
            "u".parse::<VarRule>(),
            Err(VarParseError::NoSettings { .. })
        ));
        assert!(matches!(
            "u:".parse::<VarRule>(),
            Err(VarParseError::NoSettings { .. })
        ));
        assert!(matches!(
            "u:codec".parse::<VarRule>(),
            Err(VarParseError::NotKeyValue { .. })
        ));
        assert!(matches!(
            "u:size=3".parse::<VarRule>(),
            Err(VarParseError::UnknownKey { .. })
        ));
        for bad in [
            "u:block-size=4",
            "u:block-size=2GiB",
            "u:block-size=big",
            "u:codec=lz4",
            "u:level=x",
            "u:filter=fast",
        ] {
            assert!(
                matches!(bad.parse::<VarRule>(), Err(VarParseError::BadValue { .. })),
                "{bad}"
            );
        }
    }
}
