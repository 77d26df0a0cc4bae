//! Packing with `--quantize`: the archive is the lossless archive of a *new* netCDF-3 file,
//! written here to an anonymous temporary file: the original's header plus netCDF-C's and CF's
//! quantization attributes, the CF quantization variable(s), and a global attribute with the
//! original's xxh3-128 and length ([`ORIGINAL_ATTR`]); its data laid out as netCDF-C lays out a
//! new file of the same variant ([`crate::nc3::NewHeader`]), the quantized variables' values
//! quantized, every other byte of every variable copied. Gaps and trailing bytes of the original
//! that belong to no variable are not part of the new file.

use crate::error::{io_err, Error, OptionError, Result};
use crate::io::ReadAt;
use crate::nc3::{Header, Layout, NcType, NewAttr, NewHeader, NewVar};
use crate::quantize::{
    Algorithm, Keep, MovedCount, MovedOutside, QuantizeError, QuantizeRule, ValidRange,
    IMPLEMENTATION, ORIGINAL_ATTR,
};
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::Path;
use xxhash_rust::xxh3::Xxh3;

/// Bytes read or written at a time.
const CHUNK: usize = 4 << 20;

/// Per variable of the header: the quantization to apply, the values to keep and the valid
/// range, or `None`.
pub(crate) type QuantizePlan = Vec<Option<Quantized>>;

/// How one variable is quantized: the quantization, the values to keep and its valid range.
pub(crate) type Quantized = (crate::quantize::Quantization, Keep, Option<ValidRange>);

/// Which variables of `h` the rules quantize, and how: every name or pattern must match a
/// variable, every variable named literally be `float` or `double` (a glob selects the float and
/// double variables it matches, and must match one), each with a parameter in range, and no
/// variable named twice.
pub(crate) fn plan(
    h: &Header,
    rules: &[QuantizeRule],
) -> std::result::Result<QuantizePlan, QuantizeError> {
    let mut plan: QuantizePlan = vec![None; h.var_count()];
    for rule in rules {
        let names: Vec<&str> = h.vars().map(|v| v.name()).collect();
        if let Some(pattern) = rule.vars.unmatched(&names) {
            return Err(QuantizeError::NoMatch {
                pattern: pattern.to_string(),
                known: names.join(", "),
            });
        }
        for v in h.vars() {
            if !rule.vars.matches(v.name()) || !(is_float(v.nc_type()) || rule.vars.names(v.name()))
            {
                continue;
            }
            rule.quantization.check(v.name(), v.nc_type())?;
            if plan[v.id()].is_some() {
                return Err(QuantizeError::Twice {
                    var: v.name().to_string(),
                });
            }
            plan[v.id()] = Some((rule.quantization, Keep::of(v), ValidRange::of(v)));
        }
        let floats: Vec<&str> = h
            .vars()
            .filter(|v| is_float(v.nc_type()))
            .map(|v| v.name())
            .collect();
        if let Some(pattern) = rule.vars.unmatched(&floats) {
            return Err(QuantizeError::NoFloatMatch {
                pattern: pattern.to_string(),
                known: floats.join(", "),
            });
        }
    }
    Ok(plan)
}

fn is_float(t: NcType) -> bool {
    matches!(t, NcType::Float | NcType::Double)
}

/// The name of the CF quantization variable for `alg`: `quantization_info` when the file uses
/// one algorithm, else one per algorithm.
fn container_name(alg: Algorithm, algorithms: usize) -> String {
    if algorithms == 1 {
        "quantization_info".into()
    } else {
        format!("quantization_info_{}", alg.cf_name())
    }
}

/// The header of the quantized file: `h` with the attributes and quantization variables added.
pub(crate) fn new_header(
    h: &Header,
    plan: &QuantizePlan,
    numrecs: u64,
    original: (u128, u64),
) -> std::result::Result<NewHeader, QuantizeError> {
    let mut new = NewHeader::from_header(h);
    new.numrecs = numrecs;
    let mut algorithms: Vec<Algorithm> = Vec::new();
    for (q, _, _) in plan.iter().flatten() {
        if !algorithms.contains(&q.algorithm) {
            algorithms.push(q.algorithm);
        }
    }
    for (v, p) in new.vars.iter_mut().zip(plan) {
        if let Some((q, _, _)) = p {
            let n = q.nsb_or_nsd as i32;
            v.attrs.push(NewAttr::int(q.algorithm.netcdf_attr(), n));
            v.attrs.push(NewAttr::text(
                "quantization",
                &container_name(q.algorithm, algorithms.len()),
            ));
            v.attrs.push(NewAttr::int(q.algorithm.cf_param(), n));
        }
    }
    for &alg in &algorithms {
        let name = container_name(alg, algorithms.len());
        if new.vars.iter().any(|v| v.name == name) {
            return Err(QuantizeError::NameTaken { name });
        }
        new.vars.push(NewVar {
            name,
            nc_type: NcType::Char,
            dims: vec![],
            attrs: vec![
                NewAttr::text("algorithm", alg.cf_name()),
                NewAttr::text("implementation", IMPLEMENTATION),
            ],
        });
    }
    new.attrs.push(NewAttr::text(
        ORIGINAL_ATTR,
        &format!("{:032x} {}", original.0, original.1),
    ));
    Ok(new)
}

/// Hashes all of `file` (xxh3-128), reporting progress; returns the hash and the length.
fn hash_file(file: &File, path: &Path, progress: &(dyn Fn(u64) + Sync)) -> Result<(u128, u64)> {
    let mut h = Xxh3::new();
    let mut buf = vec![0u8; CHUNK];
    let mut n = 0u64;
    let mut r = file;
    loop {
        let k = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err(path, "read")(e)),
        };
        h.update(&buf[..k]);
        n += k as u64;
        progress(n);
    }
    Ok((h.digest128(), n))
}

/// The original file's bytes copied to the quantized file, a piece at a time.
struct Copier<'a, W: Write> {
    /// The original file, its name and length.
    file: &'a File,
    path: &'a Path,
    file_len: u64,
    /// The quantized file, and the error of a write to it.
    w: W,
    werr: &'a dyn Fn(std::io::Error) -> Error,
    /// A piece of at most [`CHUNK`] bytes, and a copy of it before quantizing (for a
    /// variable with a valid range).
    buf: Vec<u8>,
    before: Vec<u8>,
}

impl<W: Write> Copier<'_, W> {
    /// Copies `len` bytes at `src` of the original, quantizing the first `data` of them as
    /// values of type `t` with `q` (counting in `moved` the values moved out of the valid
    /// range); bytes past the end of the original are written as zeros.
    fn copy(
        &mut self,
        src: u64,
        len: u64,
        data: u64,
        t: NcType,
        q: Option<&Quantized>,
        moved: Option<&mut MovedCount>,
    ) -> Result<()> {
        let mut moved = moved;
        let esize = t.size() as u64;
        let step = (CHUNK as u64 / esize).max(1) * esize;
        let mut done = 0u64;
        while done < len {
            let n = step.min(len - done);
            let buf = &mut self.buf;
            buf.clear();
            buf.resize(n as usize, 0);
            let at = src + done;
            let avail = self.file_len.saturating_sub(at).min(n) as usize;
            self.file
                .read_exact_at(&mut buf[..avail], at)
                .map_err(io_err(self.path, "read"))?;
            if let Some((q, keep, _)) = q {
                let qn = data.saturating_sub(done).min(n) as usize;
                if let Some(m) = moved.as_deref_mut() {
                    self.before.clear();
                    self.before.extend_from_slice(&buf[..qn]);
                    q.apply_be(t, &mut buf[..qn], keep);
                    count_moved(t, &self.before, &buf[..qn], m);
                } else {
                    q.apply_be(t, &mut buf[..qn], keep);
                }
            }
            self.w.write_all(buf).map_err(self.werr)?;
            done += n;
        }
        Ok(())
    }
}

/// Counts in `m` the big-endian values of type `t` (`float` or `double`) moved from inside the
/// valid range in `before` to outside it in `after`.
fn count_moved(t: NcType, before: &[u8], after: &[u8], m: &mut MovedCount) {
    match t {
        NcType::Float => {
            for (a, b) in before.chunks_exact(4).zip(after.chunks_exact(4)) {
                let x = f32::from_be_bytes([a[0], a[1], a[2], a[3]]);
                let y = f32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                m.count(x as f64, y as f64);
            }
        }
        NcType::Double => {
            for (a, b) in before.chunks_exact(8).zip(after.chunks_exact(8)) {
                let mut x = [0u8; 8];
                x.copy_from_slice(a);
                let mut y = [0u8; 8];
                y.copy_from_slice(b);
                m.count(f64::from_be_bytes(x), f64::from_be_bytes(y));
            }
        }
        _ => {}
    }
}

/// Writes the quantized netCDF-3 file of `file` (parsed as `h`, laid out as `layout`) to `out`.
/// Returns the values moved outside a variable's valid range, per variable and attribute;
/// `out` holds a complete file when this succeeds.
pub(crate) fn write_quantized(
    file: &File,
    path: &Path,
    h: &Header,
    layout: &Layout,
    plan: &QuantizePlan,
    original: (u128, u64),
    out: &mut File,
) -> Result<Vec<MovedOutside>> {
    let new = new_header(h, plan, layout.numrecs, original).map_err(OptionError::from)?;
    let (bytes, places) = new
        .encode()
        .map_err(|e| OptionError::from(QuantizeError::from(e)))?;
    let werr = |e: std::io::Error| Error::Io {
        path: Path::new("(temporary quantized file)").to_path_buf(),
        op: "write",
        source: e,
    };
    let mut c = Copier {
        file,
        path,
        file_len: layout.file_len,
        w: BufWriter::with_capacity(1 << 20, out),
        werr: &werr,
        buf: Vec::new(),
        before: Vec::new(),
    };
    let mut moved: Vec<Option<MovedCount>> = plan
        .iter()
        .map(|p| p.as_ref().and_then(|(_, _, r)| r.map(MovedCount::new)))
        .collect();
    c.w.write_all(&bytes).map_err(werr)?;
    let nvars = h.var_count();
    // Fixed variables, in header order (so in order of `begin` in the new file); then the
    // added quantization variables (one `char`, padded to 4 bytes, filled with NC_FILL_CHAR).
    for (i, p) in places.iter().enumerate() {
        if p.is_record {
            continue;
        }
        if i >= nvars {
            c.w.write_all(&[0u8; 4]).map_err(werr)?;
            continue;
        }
        let v = &layout.vars[i];
        c.copy(
            v.begin,
            p.vsize,
            v.slab,
            h.var(i).nc_type(),
            plan[i].as_ref(),
            moved[i].as_mut(),
        )?;
    }
    // Records: each record variable's slab, in header order, record after record. With one
    // record variable a record is its slab, unpadded; else each slab padded to 4 bytes.
    let recs: Vec<usize> = (0..nvars).filter(|&i| places[i].is_record).collect();
    let single = recs.len() == 1;
    for r in 0..layout.numrecs {
        for &i in &recs {
            let v = &layout.vars[i];
            let len = if single { v.slab } else { places[i].vsize };
            c.copy(
                v.begin + r * layout.recsize,
                len,
                v.slab,
                h.var(i).nc_type(),
                plan[i].as_ref(),
                moved[i].as_mut(),
            )?;
        }
    }
    c.w.flush().map_err(werr)?;
    Ok(plan
        .iter()
        .zip(&moved)
        .enumerate()
        .filter_map(|(i, (p, m))| Some((i, p.as_ref()?, m.as_ref()?)))
        .flat_map(|(i, (q, _, _), m)| m.finish(h.var(i).name(), *q))
        .collect())
}

/// Makes the quantized file of the regular file `file` (named `path`) in an anonymous temporary
/// file (beside `near` if possible, else in the temporary directory), hashing the original on
/// the way. Returns the temporary file, rewound, the original's length and hash, and the values
/// moved outside a valid range.
pub(crate) fn quantized_temp(
    file: &File,
    path: &Path,
    near: &Path,
    rules: &[QuantizeRule],
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(File, (u64, u128), Vec<MovedOutside>)> {
    let (h, _, layout) = crate::nc3::open(file, path)?;
    let plan = plan(&h, rules).map_err(OptionError::from)?;
    let original = hash_file(file, path, progress)?;
    let dir = match near.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::tempfile_in(dir)
        .or_else(|_| tempfile::tempfile())
        .map_err(io_err(near, "create a temporary file beside"))?;
    let moved = write_quantized(file, path, &h, &layout, &plan, original, &mut tmp)?;
    use std::io::Seek;
    tmp.rewind()
        .map_err(io_err(near, "rewind the temporary file for"))?;
    Ok((tmp, (original.1, original.0), moved))
}

/// Copies a stream to an anonymous temporary file (beside `near` if possible), rewound.
pub(crate) fn spool(reader: &mut impl Read, path: &Path, near: &Path) -> Result<File> {
    let dir = match near.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::tempfile_in(dir)
        .or_else(|_| tempfile::tempfile())
        .map_err(io_err(near, "create a temporary file beside"))?;
    std::io::copy(reader, &mut tmp).map_err(io_err(path, "read"))?;
    use std::io::Seek;
    tmp.rewind()
        .map_err(io_err(near, "rewind the temporary file for"))?;
    Ok(tmp)
}

/// Reads variable `v` of the netCDF-3 file `file` (laid out as `layout`), materialized: its
/// bytes, record after record for a record variable.
fn read_original_var(file: &File, path: &Path, layout: &Layout, v: usize) -> Result<Vec<u8>> {
    let vl = &layout.vars[v];
    let mut out = vec![
        0u8;
        usize::try_from(vl.total)
            .map_err(|_| Error::Internal("variable too large".into()))?
    ];
    if vl.is_record {
        for (r, chunk) in out.chunks_exact_mut(vl.slab.max(1) as usize).enumerate() {
            file.read_exact_at(chunk, vl.begin + r as u64 * layout.recsize)
                .map_err(io_err(path, "read"))?;
        }
    } else {
        file.read_exact_at(&mut out, vl.begin)
            .map_err(io_err(path, "read"))?;
    }
    Ok(out)
}

/// Compares the lossy archive `a` (recording `lossy`) with the original file `orig`: the
/// original's hash and length against the recorded ones, the largest error of each quantized
/// variable, and every other variable byte for byte. Holds one variable (of each) in memory at
/// a time.
pub(crate) fn compare_with_original<R: ReadAt>(
    a: &crate::Archive<R>,
    lossy: &crate::quantize::Lossy,
    orig: &Path,
) -> Result<crate::quantize::LossyComparison> {
    use crate::quantize::{LossyComparison, VarError};
    let file = File::open(orig).map_err(io_err(orig, "open"))?;
    let recorded = hash_file(&file, orig, &|_| {})?;
    let mut cmp = LossyComparison {
        original_recorded: lossy.original == Some(recorded),
        ..Default::default()
    };
    let (oh, _, olayout) = crate::nc3::open(&file, orig)?;
    let ah = a.header();
    for v in oh.vars() {
        let Some(aid) = ah.var_id(v.name()) else {
            cmp.differing.push(v.name().to_string());
            continue;
        };
        let ours = read_original_var(&file, orig, &olayout, v.id())?;
        let theirs = a.read_var_bytes(aid)?;
        match lossy.vars.iter().find(|(_, n, _)| n == v.name()) {
            Some((_, _, q)) if v.nc_type() == ah.var(aid).nc_type() => {
                cmp.vars.push(VarError::compare(
                    v.name(),
                    *q,
                    v.nc_type(),
                    (&ours, &theirs),
                    &Keep::of(v),
                    ValidRange::of(v),
                ));
            }
            _ => {
                if ours != theirs {
                    cmp.differing.push(v.name().to_string());
                }
            }
        }
    }
    cmp.others_equal = cmp.differing.is_empty();
    Ok(cmp)
}
