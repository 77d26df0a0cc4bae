//! A share of a batch (`--shard I/N`): which inputs a shard packs.

/// A share of a batch: `I/N` on the command line, `index` from 0 to `count - 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which share, from 0.
    pub index: u64,
    /// How many shares.
    pub count: u64,
}

impl Default for Shard {
    fn default() -> Self {
        Shard { index: 0, count: 1 }
    }
}

impl Shard {
    /// Whether the input named `name` (its path relative to the root) is in this share: the
    /// shares are by a hash of the name (XXH3-128, the manifests' key), so that a shard
    /// keeps only its own inputs as it finds them, and only its own records of earlier runs,
    /// whatever the size of the collection. N shards given the same inputs (and root) cover
    /// each input exactly once.
    ///
    /// ```
    /// use nc3pack::collection::Shard;
    /// let shares = |name: &[u8]| (0..3).filter(|&i| Shard { index: i, count: 3 }.owns(name)).count();
    /// assert!(["a.nc", "b/c.nc", "d.nc"].iter().all(|n| shares(n.as_bytes()) == 1));
    /// assert!(Shard::default().owns(b"anything.nc"));
    /// ```
    pub fn owns(&self, name: &[u8]) -> bool {
        self.owns_key(crate::collection::manifest::key(name))
    }

    /// [`Shard::owns`] of the name whose key (XXH3-128) is `key`.
    pub(crate) fn owns_key(&self, key: u128) -> bool {
        self.count <= 1 || ((key >> 64) as u64) % self.count == self.index
    }
}

/// A `--shard` value that is not `I/N` with `0 <= I < N`.
///
/// ```
/// let e = "3/3".parse::<nc3pack::collection::Shard>().unwrap_err();
/// assert_eq!(e.to_string(), "\"3/3\" is not a shard I/N with 0 <= I < N (I counts from 0)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{given:?} is not a shard I/N with 0 <= I < N (I counts from 0)")]
pub struct ParseShardError {
    /// The text given.
    pub given: String,
}

impl std::str::FromStr for Shard {
    type Err = ParseShardError;

    /// Parses `I/N` with `0 <= I < N`.
    fn from_str(s: &str) -> std::result::Result<Shard, ParseShardError> {
        let bad = || ParseShardError { given: s.into() };
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (u64, u64) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-of-{}", self.index, self.count)
    }
}
