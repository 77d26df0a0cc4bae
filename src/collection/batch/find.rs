//! Finding a batch's inputs: the given paths resolved, the root found, and the directories
//! walked in the byte order of the paths, twice. The first walk checks the whole batch before
//! any work starts (every name under the root; no file whose archive would be a directory
//! that another input's archive needs) and counts the share, keeping no path; the second
//! hands the share out in chunks of a bounded number of paths while it walks
//! ([`Inputs::chunks`]), so that what a batch holds does not grow with the collection. A
//! walk holds the entries of the directories it is in (one per level of the tree), not the
//! paths it has found.

use super::{BatchPlan, Shard, GIVEN};
use crate::collection::leftovers::{self, Leftover};
use crate::error::{io_err, Error, Refusal, Result};
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// Paths, in the order pushed: their bytes one after another, and where each ends (with the
/// [`GIVEN`] flag).
#[derive(Debug, Default)]
pub(super) struct List {
    pub(super) bytes: Vec<u8>,
    pub(super) ends: Vec<u64>,
}

impl List {
    fn push(&mut self, p: &Path, given: bool) {
        self.push_bytes(p.as_os_str().as_bytes(), given);
    }

    /// [`List::push`] of a path's bytes.
    fn push_bytes(&mut self, p: &[u8], given: bool) {
        self.bytes.extend_from_slice(p);
        self.ends
            .push(self.bytes.len() as u64 | if given { GIVEN } else { 0 });
    }

    pub(super) fn len(&self) -> usize {
        self.ends.len()
    }

    fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub(super) fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 {
            0
        } else {
            (self.ends[i - 1] & !GIVEN) as usize
        };
        &self.bytes[start..(self.ends[i] & !GIVEN) as usize]
    }

    /// Where `p` is in the list, which is in byte order.
    fn position(&self, p: &[u8]) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.get(mid).cmp(p) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// The entries in byte order, once each (the first of equal paths kept, given if any of
    /// them was); empty when the list is in that order already, with no path twice.
    pub(super) fn order_once(&mut self) -> Vec<usize> {
        let all = self.len();
        if (1..all).all(|i| self.get(i - 1) < self.get(i)) {
            return Vec::new();
        }
        let mut order: Vec<usize> = (0..all).collect();
        order.sort_unstable_by(|&a, &b| self.get(a).cmp(self.get(b)).then(a.cmp(&b)));
        let mut kept = 0;
        for k in 0..order.len() {
            let i = order[k];
            if kept > 0 && self.get(order[kept - 1]) == self.get(i) {
                if self.ends[i] & GIVEN != 0 {
                    self.ends[order[kept - 1]] |= GIVEN;
                }
                continue;
            }
            order[kept] = i;
            kept += 1;
        }
        order.truncate(kept);
        order.shrink_to_fit();
        order
    }
}

/// Appends the bytes of `dir` joined with the relative `name` to `buf`, as [`Path::join`]
/// joins them: a `/` between, unless `dir` ends with one.
pub(super) fn push_joined(buf: &mut Vec<u8>, dir: &[u8], name: &[u8]) {
    buf.extend_from_slice(dir);
    if dir.last().is_some_and(|&c| c != b'/') {
        buf.push(b'/');
    }
    buf.extend_from_slice(name);
}

/// A given path's path in the tree: its directory resolved (`realpath`), its own name kept (a
/// path ending in `.` or `..`, or `/`, is resolved whole). `cache` holds the last directory
/// resolved: lists are mostly grouped by directory.
fn tree_path(p: &Path, cache: &mut Option<(PathBuf, PathBuf)>) -> std::io::Result<PathBuf> {
    let Some(Component::Normal(name)) = p.components().next_back() else {
        return std::fs::canonicalize(p);
    };
    let parent = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if let Some((raw, resolved)) = cache {
        if raw == parent {
            return Ok(resolved.join(name));
        }
    }
    let resolved = std::fs::canonicalize(parent)?;
    let path = resolved.join(name);
    *cache = Some((parent.to_path_buf(), resolved));
    Ok(path)
}

/// Whether `path` is a file (or a link to one) that a scan of one of `dirs` finds: below it,
/// with no hidden name between.
fn found_below(path: &Path, dirs: &[(PathBuf, std::fs::Metadata)]) -> bool {
    let pb = path.as_os_str().as_bytes();
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
        && dirs.iter().any(|(d, _)| {
            let d = d.as_os_str().as_bytes();
            let from = if d == b"/" { 1 } else { d.len() + 1 };
            pb.len() > from
                && pb.starts_with(d)
                && pb[from - 1] == b'/'
                && pb[from..]
                    .split(|&c| c == b'/')
                    .all(|c| c.first() != Some(&b'.'))
        })
}

/// Whether the path `p` is below `root`, whose path and `/` are `skip` bytes long.
fn is_under(p: &[u8], root: &[u8], skip: usize) -> bool {
    p.len() > skip && p.starts_with(root) && p[skip - 1] == b'/'
}

/// The deepest directory holding both.
fn common_dir(a: &Path, b: &Path) -> PathBuf {
    a.components()
        .zip(b.components())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x)
        .collect()
}

/// A batch's inputs, resolved and checked by a first walk ([`find`]), to be handed out in
/// chunks by a second ([`Inputs::chunks`]).
#[derive(Debug)]
pub(crate) struct Inputs {
    root: PathBuf,
    out: PathBuf,
    /// Length of the root's path and its `/`.
    skip: usize,
    shard: Shard,
    /// The files given by name, in byte order, once each.
    given: List,
    /// The directories given, to be searched.
    dirs: Vec<(PathBuf, std::fs::Metadata)>,
    /// Given inputs that could not be found.
    missing: Vec<Error>,
    /// What killed runs left among the inputs, and what was done with it (originals put back).
    pub(crate) leftovers: Vec<Leftover>,
    /// How many inputs the share has, as the first walk found them.
    pub(crate) count: usize,
}

/// What a walk finds: a file (its path), or something it could not read.
enum Walked<'a> {
    File(&'a [u8]),
    Unreadable(Error),
}

/// Resolves the inputs (files and directories, as given on the command line or in a list) to
/// pack into `out`, relative to `root` (default: the deepest directory holding them all), and
/// walks the directories once to check them and count `shard`'s share (see the module docs);
/// the files put back from where killed runs moved them aside are in
/// [`Inputs::leftovers`].
///
/// # Errors
///
/// An error of `inputs` (reading a list); `root` or `out` that cannot be resolved
/// ([`Error::Io`]); an input outside the root, or a file whose archive would be where another
/// input's archive needs a directory ([`Error::Refused`] naming both).
pub(crate) fn find(
    inputs: impl IntoIterator<Item = Result<PathBuf>>,
    out: &Path,
    root: Option<&Path>,
    shard: Shard,
) -> Result<Inputs> {
    // The files given by name, all of them (the root, which the shares depend on, is known
    // once every input has been seen); the directories, searched once the root is known.
    let mut given = List::default();
    let mut dirs: Vec<(PathBuf, std::fs::Metadata)> = Vec::new();
    let mut missing = Vec::new();
    let mut common: Option<PathBuf> = None;
    let mut cache = None;
    let mut leftovers = Vec::new();
    let mut looked_beside = HashSet::new();
    for input in inputs {
        let input = input?;
        // nc3pack's own temporary files are never inputs, even given by name.
        if leftovers::is_temporary_path(&input) {
            leftovers.push(Leftover::Ignored { path: input });
            continue;
        }
        let find = |cache: &mut _| {
            tree_path(&input, cache).and_then(|t| std::fs::metadata(&t).map(|m| (t, m)))
        };
        let mut found = find(&mut cache);
        // Not there: perhaps moved aside by a run killed while deleting it.
        if found
            .as_ref()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
            && leftovers::put_back_beside(&input, &mut looked_beside, &mut leftovers)
        {
            found = find(&mut cache);
        }
        let (tree, meta) = match found {
            Ok(found) => found,
            Err(e) => {
                missing.push(io_err(&input, "stat")(e));
                continue;
            }
        };
        let anchor = if meta.is_dir() {
            dirs.push((tree.clone(), meta));
            tree
        } else {
            given.push(&tree, true);
            tree.parent().unwrap_or(Path::new("/")).to_path_buf()
        };
        common = Some(match common {
            None => anchor,
            Some(c) => common_dir(&c, &anchor),
        });
    }
    let root = match root {
        Some(r) => std::fs::canonicalize(r).map_err(io_err(r, "resolve the root"))?,
        None => common.unwrap_or_else(|| PathBuf::from("/")),
    };
    let rb = root.as_os_str().as_bytes();
    let skip = if rb == b"/" { 1 } else { rb.len() + 1 };
    let under = |p: &[u8]| is_under(p, rb, skip);
    // The given files in byte order, once each (a path given twice is given once).
    let order = given.order_once();
    if !order.is_empty() {
        let mut sorted = List::default();
        for &i in &order {
            sorted.push_bytes(given.get(i), true);
        }
        given = sorted;
    }
    // The first walk. Every path under the root, in any share (every shard refuses alike); a
    // found path that is also given counted once, as given.
    let mut outside: Option<Vec<u8>> = None;
    let mut count = 0;
    // Every input's name with a directory `X.nc3z/` in it, by X (the first such name): a file
    // X among the inputs would have its archive where these need a directory. Seen for every
    // input, in any share, so that every shard finds the same.
    let mut suspects: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut note = |p: &[u8]| {
        if !under(p) {
            outside.get_or_insert_with(|| p.to_vec());
            return;
        }
        let name = &p[skip..];
        for at in memchr::memmem::find_iter(name, b".nc3z/") {
            let file = &name[..at];
            if !file.is_empty() && file.last() != Some(&b'/') && !suspects.contains_key(file) {
                suspects.insert(file.to_vec(), name.to_vec());
            }
        }
        if shard.owns(name) {
            count += 1;
        }
    };
    for i in 0..given.len() {
        note(given.get(i));
    }
    let mut visited = HashSet::new();
    for (tree, meta) in &dirs {
        walk(tree, meta, &mut visited, Some(&mut leftovers), &mut |f| {
            if let Walked::File(p) = f {
                if given.position(p).is_none() {
                    note(p);
                }
            }
            true
        });
    }
    if let Some(p) = outside {
        return Err(Error::Refused {
            path: PathBuf::from(OsStr::from_bytes(&p)),
            what: Refusal::OutsideRoot {
                root: root.to_path_buf(),
            },
        });
    }
    // A file `x` whose archive `x.nc3z` is a directory another input's archive needs
    // (`x.nc3z/y` goes to `x.nc3z/y.nc3z`): `x` is an input if given, or if it is a file
    // (or a link to one) below a directory searched, with no hidden name between.
    let is_input = |path: &Path| {
        given.position(path.as_os_str().as_bytes()).is_some() || found_below(path, &dirs)
    };
    for (file, below) in &suspects {
        let path = root.join(OsStr::from_bytes(file));
        if is_input(&path) {
            let mut dir = file.clone();
            dir.extend_from_slice(b".nc3z");
            return Err(Error::Refused {
                path: out.join(OsStr::from_bytes(&dir)),
                what: Refusal::ArchiveAndDirectory {
                    file: path,
                    below: root.join(OsStr::from_bytes(below)),
                },
            });
        }
    }
    // An object-store prefix (`s3://...`) is kept as given: archives are named by joining.
    let remote = out.to_str().is_some_and(|s| s.contains("://"));
    // A file given by name that is where another input's archive goes (`OUT/x.nc.nc3z` given
    // with `x.nc`): packing that input would replace it, with `--force` (this refuses it even
    // without: it is no netCDF file to pack). (Found files are never archives: a directory's
    // scan takes netCDF files only.)
    if let Some(real_out) = (!remote).then(|| std::fs::canonicalize(out).ok()).flatten() {
        let ob = real_out.as_os_str().as_bytes();
        let from = if ob == b"/" { 1 } else { ob.len() + 1 };
        for i in 0..given.len() {
            let g = given.get(i);
            let Some(name) = g
                .strip_suffix(b".nc3z")
                .filter(|n| n.len() > from && n.starts_with(ob) && n[from - 1] == b'/')
                .map(|n| &n[from..])
            else {
                continue;
            };
            let input = root.join(OsStr::from_bytes(name));
            if is_input(&input) {
                return Err(Error::Refused {
                    path: PathBuf::from(OsStr::from_bytes(g)),
                    what: Refusal::InputIsOutput { of: input },
                });
            }
        }
    }
    let out = if remote {
        out.to_path_buf()
    } else {
        std::path::absolute(out).map_err(io_err(out, "resolve"))?
    };
    Ok(Inputs {
        root,
        out,
        skip,
        shard,
        given,
        dirs,
        missing,
        leftovers,
        count,
    })
}

impl Inputs {
    /// The root the inputs' names are relative to.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Walks the directories again and hands the share's inputs to `each` in chunks of `size`
    /// paths (the last one shorter; none when the share is empty): the files found, each
    /// directory's in the byte order of their paths, then the files given by name that were
    /// not found, in byte order. A path given and found is handed out once, as given. Stops
    /// when `each` says false. Returns what could not be read: given inputs not found, and
    /// directories and files in them (each error naming the path and the cause).
    pub(crate) fn chunks(self, size: usize, each: &mut dyn FnMut(BatchPlan) -> bool) -> Vec<Error> {
        let Inputs {
            root,
            out,
            skip,
            shard,
            given,
            dirs,
            missing: mut unreadable,
            ..
        } = self;
        let under = |p: &[u8]| is_under(p, root.as_os_str().as_bytes(), skip);
        let size = size.max(1);
        let mut seen = vec![false; given.len()];
        let mut list = List::default();
        let mut going = true;
        let mut hand = |list: &mut List, going: &mut bool| {
            let plan = BatchPlan {
                out: out.clone(),
                list: std::mem::take(list),
                order: Vec::new(),
                skip,
            };
            // The next chunk's room as this one's: paths of a tree are of about one length, and
            // room grown by doubling would be up to twice the chunk.
            list.bytes
                .reserve_exact(plan.list.bytes.len() + plan.list.bytes.len() / 8);
            list.ends.reserve_exact(plan.list.ends.len());
            *going = each(plan);
        };
        let mut visited = HashSet::new();
        for (tree, meta) in &dirs {
            if !going {
                break;
            }
            walk(tree, meta, &mut visited, None, &mut |f| {
                let p = match f {
                    Walked::File(p) => p,
                    Walked::Unreadable(e) => {
                        unreadable.push(e);
                        return going;
                    }
                };
                // (Not under the root: moved there since the first walk.)
                if !going || !under(p) || !shard.owns(&p[skip..]) {
                    return going;
                }
                let at = given.position(p);
                if let Some(k) = at {
                    seen[k] = true;
                }
                list.push_bytes(p, at.is_some());
                if list.len() >= size {
                    hand(&mut list, &mut going);
                }
                going
            });
        }
        for (k, &found) in seen.iter().enumerate() {
            if !going {
                break;
            }
            let p = given.get(k);
            if found || !shard.owns(&p[skip..]) {
                continue;
            }
            list.push_bytes(p, true);
            if list.len() >= size {
                hand(&mut list, &mut going);
            }
        }
        if going && !list.is_empty() {
            hand(&mut list, &mut going);
        }
        unreadable
    }
}

/// Lists the inputs (files and directories, as given on the command line or in a list) to pack
/// into `out`, relative to `root` (default: the deepest directory holding them all), keeping
/// `shard`'s share (see the module docs), all at once and in byte order: what
/// [`crate::collection::pack_collection`] hands out in chunks as it walks. What cannot be read
/// is left out (`pack_collection` reports it).
///
/// # Errors
///
/// An error of `inputs` (reading a list); `root` that cannot be resolved ([`Error::Io`]); an
/// input outside the root, or a file whose archive would be where another input's archive
/// needs a directory ([`Error::Refused`] naming both).
///
/// ```no_run
/// use nc3pack::testing::{plan, Shard};
/// let p = plan([Ok("samples".into())], "/tmp/out".as_ref(), None, Shard::default()).unwrap();
/// assert!((0..p.len()).all(|i| p.output(i).to_string_lossy().ends_with(".nc3z")));
/// ```
#[cfg(any(test, feature = "testing"))]
pub fn plan(
    inputs: impl IntoIterator<Item = Result<PathBuf>>,
    out: &Path,
    root: Option<&Path>,
    shard: Shard,
) -> Result<BatchPlan> {
    let inputs = find(inputs, out, root, shard)?;
    let mut plan = BatchPlan {
        out: inputs.out.clone(),
        skip: inputs.skip,
        ..BatchPlan::default()
    };
    inputs.chunks(usize::MAX, &mut |whole| {
        plan = whole;
        true
    });
    plan.order = plan.list.order_once();
    Ok(plan)
}

/// A directory's entries still to visit, in the byte order of the paths they lead to.
struct DirEntries {
    dir: PathBuf,
    /// The entries' names, one after another.
    names: Vec<u8>,
    /// Each entry: where its name is in `names`, and whether it is a directory (or a link to
    /// one).
    entries: Vec<(usize, usize, bool)>,
    /// The next entry to visit.
    next: usize,
}

/// The byte order of the paths of two entries of one directory, given their names and whether
/// each is a directory: a directory's paths continue with `/`, which sorts after `-` and `.`,
/// so a directory `x` comes after a file `x.nc` (`x.nc` < `x/y`) and a file `x` before both.
/// The entries sorted so, and walked depth first, give the paths in byte order.
fn path_order(a: &[u8], a_dir: bool, b: &[u8], b_dir: bool) -> Ordering {
    let n = a.len().min(b.len());
    a[..n].cmp(&b[..n]).then_with(|| {
        let next =
            |s: &[u8], dir: bool| s.get(n).copied().or((dir && s.len() == n).then_some(b'/'));
        next(a, a_dir)
            .cmp(&next(b, b_dir))
            .then(a.len().cmp(&b.len()))
    })
}

/// Lists `dir` for [`walk`]: its regular files, directories and links to either, not hidden,
/// in the order of their paths. With `aside`, what killed runs moved aside here
/// (`.nc3pack-deleting-*`) is put back and handed to `found` ([`leftovers::put_back`]).
fn list_dir(
    dir: PathBuf,
    aside: Option<&mut Vec<Leftover>>,
    found: &mut dyn FnMut(Walked<'_>) -> bool,
) -> DirEntries {
    let mut l = DirEntries {
        dir,
        names: Vec::new(),
        entries: Vec::new(),
        next: 0,
    };
    let entries = match std::fs::read_dir(&l.dir) {
        Ok(entries) => entries,
        Err(e) => {
            found(Walked::Unreadable(io_err(&l.dir, "read directory")(e)));
            return l;
        }
    };
    let mut aside = aside;
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                found(Walked::Unreadable(io_err(&l.dir, "read directory")(e)));
                break;
            }
        };
        let name = entry.file_name();
        let nb = name.as_bytes();
        if nb.first() == Some(&b'.') {
            if let Some(notes) = aside
                .as_deref_mut()
                .filter(|_| nb.starts_with(leftovers::ASIDE))
            {
                let mut put = |p: &Path| {
                    found(Walked::File(p.as_os_str().as_bytes()));
                };
                leftovers::put_back(&l.dir, &name, &mut put, notes);
            }
            continue;
        }
        let ft = match entry.file_type() {
            Ok(ft) => ft,
            Err(e) => {
                found(Walked::Unreadable(io_err(&entry.path(), "stat")(e)));
                continue;
            }
        };
        let is_dir = if ft.is_file() {
            false
        } else if ft.is_dir() {
            true
        } else if ft.is_symlink() {
            // Where the link leads (a broken link may have been a netCDF file: reported).
            match std::fs::metadata(entry.path()) {
                Ok(m) if m.is_dir() => true,
                Ok(m) if m.is_file() => false,
                Ok(_) => continue,
                Err(e) => {
                    found(Walked::Unreadable(io_err(&entry.path(), "follow link")(e)));
                    continue;
                }
            }
        } else {
            continue; // pipes, devices and sockets are packed only when given
        };
        let start = l.names.len();
        l.names.extend_from_slice(nb);
        l.entries.push((start, l.names.len(), is_dir));
    }
    let names = &l.names;
    l.entries
        .sort_unstable_by(|a, b| path_order(&names[a.0..a.1], a.2, &names[b.0..b.1], b.2));
    l
}

/// Hands `found` the regular files under `root` (whose metadata is `root_meta`), following
/// symbolic links and searching each directory once (`visited`, shared by the inputs), in the
/// byte order of their paths, depth first; and what cannot be read. Hidden files and
/// directories (a name starting with `.`) are not inputs; with `aside`, the directories a
/// killed run moved originals aside into (`.nc3pack-deleting-*`) are emptied and their files
/// put back and found ([`leftovers::put_back`]). Stops when `found` says false for a file
/// (false then).
fn walk(
    root: &Path,
    root_meta: &std::fs::Metadata,
    visited: &mut HashSet<(u64, u64)>,
    mut aside: Option<&mut Vec<Leftover>>,
    found: &mut dyn FnMut(Walked<'_>) -> bool,
) -> bool {
    if !visited.insert((root_meta.dev(), root_meta.ino())) {
        return true;
    }
    let mut stack = vec![list_dir(root.to_path_buf(), aside.as_deref_mut(), found)];
    let mut path = Vec::new();
    while let Some(top) = stack.last_mut() {
        let Some(&(start, end, is_dir)) = top.entries.get(top.next) else {
            stack.pop();
            continue;
        };
        top.next += 1;
        path.clear();
        push_joined(
            &mut path,
            top.dir.as_os_str().as_bytes(),
            &top.names[start..end],
        );
        if !is_dir {
            if !found(Walked::File(&path)) {
                return false;
            }
            continue;
        }
        // A directory's identity (a link's target's).
        let p = PathBuf::from(OsStr::from_bytes(&path));
        match std::fs::metadata(&p) {
            Ok(m) => {
                if m.is_dir() && visited.insert((m.dev(), m.ino())) {
                    let listing = list_dir(p, aside.as_deref_mut(), found);
                    stack.push(listing);
                }
            }
            Err(e) => {
                found(Walked::Unreadable(io_err(&p, "stat")(e)));
            }
        }
    }
    true
}
