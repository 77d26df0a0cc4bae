//! Shared code of the nc3pack fuzz targets (see ../README.md).
//!
//! Every function here must never panic on any input, except through the `assert!`s that state
//! an invariant of nc3pack: those are findings, as a crash of the library is.

use nc3pack::format::{
    FLAG_CONSTANT, FLAG_LOST, FOOTER_LEN, FRAME_HEADER_LEN, FRAME_MAGIC, INDEX_ENTRY_LEN,
    INDEX_HEADER_LEN, LEAD_LEN,
};
use nc3pack::nc3::{self, Header, Layout, ParseError};
use nc3pack::Archive;
use nc3pack::Hyperslab;
use nc3pack::{Dataset, NcFile};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Largest variable the targets read whole (bigger ones are skipped: reading 2 GiB that a
/// 100-byte header declares is out of memory by design, not a bug).
pub const MAX_VAR_BYTES: u64 = 1 << 20;
/// Largest decoded block the archive targets decode (a 1 GiB block of zeros is a few bytes of
/// zstd: decoding it is slow by design).
pub const MAX_BLOCK_BYTES: u64 = 16 << 20;
/// Largest original file the archive targets restore with `unpack_to`.
pub const MAX_UNPACK_BYTES: u64 = 1 << 20;

/// Reads bytes from the fuzzer's input; zeros once it is used up.
pub struct Bytes<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Bytes<'a> {
    /// A reader of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Bytes { data, pos: 0 }
    }
    /// Whether all input has been used.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }
    /// The next byte, or 0.
    pub fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }
    /// The next two bytes as a little-endian u16.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    /// The next four bytes as a little-endian u32.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
}

/// The values a hyperslab selects, gathered element by element from the variable's whole
/// row-major bytes `all` (the slow, obviously right way).
pub fn naive_gather(shape: &[u64], esize: usize, slab: &Hyperslab, all: &[u8]) -> Vec<u8> {
    let n = slab.len();
    let mut out = Vec::with_capacity(n as usize * esize);
    for i in 0..n {
        let mut rem = i;
        let mut off = 0u64;
        let mut mult = 1u64;
        for k in (0..shape.len()).rev() {
            let c = rem % slab.count()[k];
            rem /= slab.count()[k];
            off += (slab.start()[k] + c * slab.stride()[k]) * mult;
            mult *= shape[k];
        }
        let at = off as usize * esize;
        out.extend_from_slice(&all[at..at + esize]);
    }
    out
}

/// A hyperslab of `shape` chosen by the input: usually valid, sometimes not (count past the end,
/// zero stride), sometimes with defaults (`count: None`).
pub fn choose_slab(
    ds: &impl Dataset,
    name: &str,
    shape: &[u64],
    r: &mut Bytes,
) -> nc3pack::Result<Hyperslab> {
    let mode = r.u8();
    let mut start = Vec::with_capacity(shape.len());
    let mut count = Vec::with_capacity(shape.len());
    let mut stride = Vec::with_capacity(shape.len());
    for &len in shape {
        let st = u64::from(r.u8()) % (len + 1);
        let sd = if mode & 0x80 != 0 {
            u64::from(r.u8() % 5) // 0 allowed: must be refused
        } else {
            1 + u64::from(r.u8() % 4)
        };
        let max_c = if st >= len || sd == 0 {
            0
        } else {
            (len - st - 1) / sd + 1
        };
        let c = u64::from(r.u8()) % (max_c + 2); // max_c + 1 is one too many
        start.push(st);
        count.push(c);
        stride.push(sd);
    }
    if mode & 1 != 0 {
        ds.slab(name, Some(&start), None, Some(&stride))
    } else {
        ds.slab(name, Some(&start), Some(&count), Some(&stride))
    }
}

/// Checks the prefix protocol `read_header` relies on: for a header that parses from the whole
/// input, every shorter prefix asks for more bytes (never `Bad`, never `Ok`), and asks for more
/// than it has, so the read loop (which caps the request at the file length) always progresses.
fn check_prefixes(data: &[u8], h: &Header) {
    let len = data.len() as u64;
    let hl = h.len() as usize;
    let mut cuts: Vec<usize> = vec![0, 1, 3, 4, hl / 2, hl.saturating_sub(1)];
    cuts.extend((0..hl).step_by(7));
    for k in cuts {
        if k >= hl {
            continue;
        }
        match Header::parse_prefix(&data[..k], len) {
            Err(ParseError::NeedMore(n)) => assert!(
                n > k as u64,
                "parse_prefix of {k} bytes asks for {n} (file {len}, header {hl})"
            ),
            Err(ParseError::Bad(e)) => panic!(
                "a {k}-byte prefix of a header that parses ({hl} bytes) is reported bad: {e}"
            ),
            Ok(_) => panic!("a {k}-byte prefix of a {hl}-byte header parses"),
        }
    }
    let again = Header::parse_prefix(&data[..hl], len).expect("the header's own bytes parse");
    // Compared as Debug text: float attributes may hold NaN, which is not == itself.
    assert_eq!(
        format!("{again:?}"),
        format!("{h:?}"),
        "parsing the header's own bytes gives another header"
    );
}

/// Reads every variable of `ds` that is at most [`MAX_VAR_BYTES`] whole, then hyperslabs chosen
/// by `r`, checking each slab read against the element-by-element gather from the whole read.
/// `must_succeed`: the data is known to be present (a netCDF file whose layout checked), so a
/// failing read is a finding.
pub fn read_everything(ds: &impl Dataset, r: &mut Bytes, must_succeed: bool) {
    let nvars = ds.header().var_count();
    let mut whole: Vec<Option<Vec<u8>>> = Vec::with_capacity(nvars);
    for v in 0..nvars {
        let lv = &ds.layout().vars[v];
        if lv.total > MAX_VAR_BYTES {
            whole.push(None);
            continue;
        }
        match ds.read_var_bytes(v) {
            Ok(b) => {
                assert_eq!(b.len() as u64, lv.total, "read_var_bytes length of var {v}");
                whole.push(Some(b));
            }
            Err(e) => {
                assert!(
                    !must_succeed,
                    "reading variable {v} of a checked layout failed: {e}"
                );
                whole.push(None);
            }
        }
    }
    // Hyperslabs, up to 8, as long as the input lasts.
    for _ in 0..8 {
        if r.is_empty() || nvars == 0 {
            break;
        }
        let name = ds.header().var(r.u8() as usize % nvars).name().to_string();
        // Reads go by name: with duplicate names, the first variable of that name.
        let Ok(v) = ds.var_id(&name) else { continue };
        let lv = ds.layout().vars[v].clone();
        if lv.total > MAX_VAR_BYTES {
            continue;
        }
        let Ok(slab) = choose_slab(ds, &name, &lv.shape, r) else {
            continue;
        };
        match ds.read_raw(&name, &slab) {
            Ok(got) => {
                if let Some(all) = &whole[v] {
                    let want = naive_gather(&lv.shape, lv.esize, &slab, all);
                    assert!(got == want, "hyperslab {slab:?} of {name:?} differs from the gather of the whole variable");
                }
            }
            Err(e) => assert!(!must_succeed, "hyperslab {slab:?} of {name:?} failed: {e}"),
        }
        // Duplicate names make read_raw read the first one; the typed API must agree on type.
        let _ = ds.read_values(&name, &slab);
    }
}

/// The header target: parser, layout, prefix protocol, and reads through `NcFile`.
pub fn exercise_nc(data: &[u8]) {
    let len = data.len() as u64;
    let parsed = Header::parse(data, len);
    if let Ok(h) = &parsed {
        assert!(
            h.len() <= len,
            "header length {} beyond the input {len}",
            h.len()
        );
        check_prefixes(data, h);
        if let Ok(l) = Layout::new(h, len) {
            assert_eq!(l.vars.len(), h.var_count());
            // The segments tile the file exactly.
            let mut pos = 0u64;
            let mut var_bytes = vec![0u64; l.vars.len()];
            l.walk(|s| {
                assert_eq!(s.offset, pos, "segments are not contiguous");
                assert!(s.len > 0, "empty segment");
                if let nc3::Target::Var(i) = s.target {
                    var_bytes[i] += s.len;
                }
                pos += s.len;
                Ok::<(), ()>(())
            })
            .ok();
            assert_eq!(pos, len, "segments do not end at the end of the file");
            for (i, v) in l.vars.iter().enumerate() {
                assert_eq!(var_bytes[i], v.total, "segments of var {i} != its total");
            }
        }
    }
    let path = Path::new("fuzz.nc");
    let opened = NcFile::from_reader(data.to_vec(), path);
    if let Ok(f) = &opened {
        // What nc3::open accepts, Header::parse + Layout::new accept.
        let h = parsed
            .as_ref()
            .expect("nc3::open accepted a header Header::parse refuses");
        assert_eq!(format!("{:?}", f.header()), format!("{h:?}"));
        let mut r = Bytes::new(&data[h.len() as usize..]);
        read_everything(f, &mut r, true);
    }
}

/// A scratch directory for the targets that need files (verify, reindex), one per process, on
/// tmpfs when there is one.
pub fn scratch_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let d = base.join(format!("nc3pack-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("scratch dir");
        d
    })
}

/// Opens an archive from the bytes and reads everything it offers; `repair_too` also runs
/// `verify` and `reindex` on a copy in a scratch file.
pub fn exercise_archive(data: &[u8], repair_too: bool) {
    let path = Path::new("fuzz.nc3z");
    let v = data.to_vec();
    let len = data.len() as u64;
    // The scanner must cope with anything, from anywhere.
    let _ = nc3pack::__private::scan(&v, 0, len);
    let _ = nc3pack::__private::scan(&v, (LEAD_LEN as u64).min(len), len);

    let threads = 1 + data.last().map_or(0, |&b| b as usize % 3);
    if let Ok(mut a) = Archive::from_reader(data.to_vec(), path) {
        a.set_threads(threads);
        if data.first().is_some_and(|b| b & 1 == 1) {
            a.set_cache_budget(0);
        }
        assert_eq!(a.header().len(), a.lead().header_len);
        assert_eq!(a.header_bytes().len() as u64, a.lead().header_len);
        assert!(a.data_start() <= a.index_offset() && a.index_offset() <= len);
        let _ = nc3pack::__private::scan(&v, a.data_start(), a.index_offset());
        // Every block, bypassing the cache; keep each stream's blocks to check reads against.
        let ns = a.stream_count();
        let nvars = a.header().var_count();
        assert_eq!(
            ns,
            nvars + 3,
            "streams: variables, residual, early and late shared"
        );
        assert_eq!(a.residual_stream(), nvars);
        let mut streams: Vec<Option<Vec<u8>>> = vec![Some(Vec::new()); ns];
        for s in 0..ns {
            let bb = a.block_bytes(s);
            assert!(bb > 0);
            if a.is_member(s) {
                assert_eq!(
                    a.block_count(s),
                    0,
                    "a member of a shared stream has blocks"
                );
                assert!(s <= nvars, "a shared stream is a member");
                continue;
            }
            if bb > MAX_BLOCK_BYTES {
                streams[s] = None;
                check_large_constant_blocks(&a, s);
                continue;
            }
            for b in 0..a.block_count(s) {
                let checked = a.check_block(s, b);
                let entry = *a.entry(s, b);
                match a.read_block(s, b) {
                    Ok(d) if entry.is_constant() => {
                        // A constant block is its element (from the index entry) repeated.
                        let esize = stream_esize(&a, s);
                        let want = entry
                            .constant_value(esize)
                            .repeat(block_len(&a, s, b) as usize / esize.max(1));
                        assert!(
                            d == want,
                            "constant block {b} of stream {s} != its element repeated"
                        );
                        assert!(
                            checked.is_ok(),
                            "constant block {b} of stream {s}: {checked:?}"
                        );
                        if let Some(acc) = &mut streams[s] {
                            acc.extend_from_slice(&d);
                        }
                    }
                    Err(e) if entry.is_constant() => {
                        panic!("constant block {b} of stream {s} does not read: {e}")
                    }
                    Ok(d) => {
                        assert!(
                            checked.is_ok(),
                            "read_block ok, check_block not: {checked:?}"
                        );
                        assert!(d.len() as u64 <= bb, "block longer than the block size");
                        if let Some(acc) = &mut streams[s] {
                            acc.extend_from_slice(&d);
                        }
                    }
                    Err(_) => streams[s] = None,
                }
            }
            if let Some(acc) = &streams[s] {
                assert_eq!(
                    acc.len() as u64,
                    a.stream_len(s),
                    "blocks of stream {s} != its length"
                );
            }
        }
        check_constant_blocks(&a);
        // What each variable and the residual stream must read as: its blocks, or for a member
        // its bytes cut from its shared stream's blocks and decoded.
        let want = member_data(&a, &streams);
        // Reads through the Dataset API must give the concatenated blocks.
        for vi in 0..nvars {
            let total = a.layout().vars[vi].total;
            let sb = a.shared_stream_of(vi).unwrap_or(vi);
            if total > MAX_VAR_BYTES || a.block_bytes(sb) > MAX_BLOCK_BYTES {
                continue;
            }
            match a.read_var_bytes(vi) {
                Ok(got) => {
                    assert_eq!(got.len() as u64, total);
                    if let Some(w) = &want[vi] {
                        assert!(&got == w, "read_var_bytes of var {vi} != its blocks");
                    }
                }
                Err(e) => assert!(
                    want[vi].is_none(),
                    "var {vi}: its blocks decode, the read fails: {e}"
                ),
            }
        }
        let mut r = Bytes::new(&data[data.len().min(a.data_start() as usize)..]);
        read_everything(&a, &mut r, false);
        // Restore the original (if small) and check it against the archive's own reads.
        // Bounded work per input: small originals only.
        let small = a.lead().file_len <= MAX_UNPACK_BYTES
            && a.layout().numrecs <= MAX_UNPACK_BYTES
            && (0..ns).all(|s| a.block_bytes(s) <= MAX_BLOCK_BYTES);
        if small {
            let mut out = Vec::new();
            if nc3pack::__private::unpack_to(&a, &mut out, Path::new("(fuzz)"), threads, &|_| {})
                .is_ok()
            {
                assert_eq!(out.len() as u64, a.lead().file_len, "restored length");
                assert_eq!(&out[..a.header_bytes().len()], a.header_bytes());
                if let Ok(f) = NcFile::from_reader(out, Path::new("(restored)")) {
                    if f.layout() == a.layout() {
                        for vi in 0..a.header().var_count() {
                            if let (Some(w), Ok(got)) = (&want[vi], f.read_var_bytes(vi)) {
                                assert!(&got == w, "restored file's var {vi} != the archive's");
                            }
                        }
                    }
                }
            }
        }
    }
    if repair_too {
        exercise_repair(data);
    }
}

/// The constant blocks of stream `s` (a variable's) whose blocks are too large to decode whole
/// here: a few elements at both ends of each of the first 64, read through `read_runs`, are the
/// element of its index entry. Reading them builds no block (a constant block is held as its
/// element), so this costs the same for a 1 GiB block as for a small one.
pub fn check_large_constant_blocks<R: nc3pack::ReadAt>(a: &Archive<R>, s: usize) {
    if s >= a.header().var_count() || a.is_member(s) {
        return;
    }
    let esize = stream_esize(a, s).clamp(1, 8) as u64;
    let bb = a.block_bytes(s);
    for b in 0..a.block_count(s).min(64) {
        let e = *a.entry(s, b);
        if !e.is_constant() {
            continue;
        }
        let len = block_len(a, s, b);
        let n = len.min(4 * esize) / esize * esize;
        if n == 0 {
            continue;
        }
        let start = b * bb;
        let runs: Vec<(u64, u64)> = if len >= 2 * n {
            vec![(start, n), (start + len - n, n)]
        } else {
            vec![(start, n)]
        };
        let total: u64 = runs.iter().map(|r| r.1).sum();
        let mut got = vec![0u8; total as usize];
        if let Err(err) = a.read_runs(s, &runs, &mut got) {
            panic!("constant block {b} of stream {s} ({len} bytes) does not read: {err}");
        }
        let want = e
            .constant_value(esize as usize)
            .repeat((total / esize) as usize);
        assert!(
            got == want,
            "constant block {b} of stream {s} ({len} bytes) reads other than its element"
        );
    }
}

/// Element size of stream `s` of `a`: a variable's, 1 for the residual and shared streams.
pub fn stream_esize<R: nc3pack::ReadAt>(a: &Archive<R>, s: usize) -> usize {
    a.layout().vars.get(s).map_or(1, |v| v.esize)
}

/// Decoded length of block `b` of stream `s`, as the layout says.
fn block_len<R: nc3pack::ReadAt>(a: &Archive<R>, s: usize, b: u64) -> u64 {
    let bb = a.block_bytes(s);
    bb.min(a.stream_len(s) - b * bb)
}

/// The constants frames of an archive that opens: every constants frame's runs are read
/// (`constant_runs`; they may fail on a damaged archive), and for the runs that decode, every
/// block a run lists whose entry is constant with the run's element reads (`block`, through the
/// cache) as that element repeated. (`exercise_archive` checks every constant block's
/// `read_block` against its entry.)
pub fn check_constant_blocks<R: nc3pack::ReadAt>(a: &Archive<R>) {
    let by_id: std::collections::HashMap<u32, usize> = (0..a.stream_count())
        .filter(|&s| a.block_count(s) > 0)
        .map(|s| (a.stream_id(s), s))
        .collect();
    for k in 0..a.constants_frames().len() {
        let Ok(runs) = a.constant_runs(k) else {
            continue;
        };
        assert!(
            !runs.is_empty() && runs.len() <= nc3pack::format::MAX_RUNS_PER_FRAME,
            "constants frame {k} decodes to {} runs",
            runs.len()
        );
        for r in runs {
            let Some(&s) = by_id.get(&r.stream) else {
                continue;
            };
            if a.is_member(s) || a.block_bytes(s) > MAX_BLOCK_BYTES {
                continue;
            }
            let esize = stream_esize(a, s);
            let end = r.first.saturating_add(r.count).min(a.block_count(s));
            // Bounded work: a hostile run may name 2^63 blocks.
            for b in r.first..end.min(r.first.saturating_add(64)) {
                let e = a.entry(s, b);
                if !e.is_constant() || e.offset.to_le_bytes() != r.value {
                    continue;
                }
                let want =
                    r.value[..esize.clamp(1, 8)].repeat(block_len(a, s, b) as usize / esize.max(1));
                let got = a.block(s, b).expect("a constant block reads");
                assert!(
                    *got == want,
                    "block {b} of stream {s}, listed constant, != the run's element repeated"
                );
            }
        }
    }
}

/// The recovery invariant of an archive written by nc3pack (pack or reindex), which must be
/// intact structurally: a scan of its data section (`repair::scan`, then
/// `repair::scanned_constants`, as `reindex` does without the index) finds every frame the index
/// points to where it points, and exactly its constant blocks with their elements; every
/// constants frame the index lists decodes.
pub fn check_recoverable(bytes: &[u8]) {
    use nc3pack::format::FrameHeader;
    let a = Archive::from_reader(bytes.to_vec(), Path::new("(written)"))
        .unwrap_or_else(|e| panic!("an archive nc3pack wrote does not open: {e}"));
    let sc = nc3pack::__private::scan(&bytes.to_vec(), a.data_start(), a.index_offset())
        .expect("scan an in-memory archive");
    assert!(
        sc.damaged.is_empty(),
        "scan of a written archive finds damage: {:?}",
        sc.damaged
    );
    let all = nc3pack::__private::streams_with(a.layout(), a.block_sizes());
    let mut damaged = Vec::new();
    let constants = nc3pack::__private::scanned_constants(&bytes.to_vec(), &sc, &all, &mut damaged)
        .expect("read an in-memory archive");
    assert!(
        damaged.is_empty(),
        "the constants frames of a written archive do not fit its layout: {damaged:?}"
    );
    for k in 0..a.constants_frames().len() {
        let runs = a
            .constant_runs(k)
            .unwrap_or_else(|e| panic!("constants frame {k} of a written archive: {e}"));
        assert!(!runs.is_empty(), "constants frame {k} lists no run");
        let t = a.constants_frames()[k];
        let found = sc.frames.get(&(nc3pack::format::CONSTANTS_ID, k as u64));
        assert!(
            found.is_some_and(|(off, _): &(u64, FrameHeader)| *off == t.offset),
            "the scan does not find constants frame {k} at {}",
            t.offset
        );
    }
    let mut frames = 0usize;
    for s in 0..a.stream_count() {
        let id = a.stream_id(s);
        for b in 0..a.block_count(s) {
            let e = a.entry(s, b);
            let scanned = constants.value(id, b);
            if e.is_constant() {
                assert_eq!(
                    scanned,
                    Some(&e.offset.to_le_bytes()),
                    "constant block {b} of stream {s}: a scan recovers {scanned:?}"
                );
            } else {
                assert!(
                    scanned.is_none(),
                    "block {b} of stream {s} has a frame, a run lists it"
                );
                if !e.is_lost() {
                    frames += 1;
                    let found = sc.frames.get(&(id, b)).map(|f| f.0);
                    assert_eq!(
                        found,
                        Some(e.offset),
                        "block {b} of stream {s}: scan finds {found:?}"
                    );
                }
            }
        }
    }
    assert_eq!(
        sc.frames.len(),
        frames + a.constants_frames().len(),
        "the scan finds frames the index does not list"
    );
}

/// For each variable and the residual stream of `a` (indexed as streams), what it must read as:
/// its own blocks (`streams[s]`, the concatenated decoded blocks, `None` if one failed), or for a
/// member of a shared stream its slice of that stream's blocks, decoded with
/// `codec::member_decode`. Checks on the way that membership follows design/FORMAT.md (streams
/// of 1 to `shared_max` bytes; record and residual members in the late stream) and that the
/// members, in their order (fixed variables by begin, record variables by begin, residual
/// bytes), fill their shared streams exactly.
pub fn member_data<R: nc3pack::ReadAt>(
    a: &Archive<R>,
    streams: &[Option<Vec<u8>>],
) -> Vec<Option<Vec<u8>>> {
    let nvars = a.header().var_count();
    let residual = a.residual_stream();
    let mut out: Vec<Option<Vec<u8>>> = streams[..=residual].to_vec();
    let order = a
        .layout()
        .fixed_order()
        .iter()
        .chain(a.layout().rec_order())
        .copied()
        .chain(std::iter::once(residual));
    let mut filled = [0u64; 2];
    let sizes = a.block_sizes();
    for s in order {
        let len = a.stream_len(s);
        let member = a.shared_stream_of(s);
        // Format 1.1: a variable's own block size bounds its membership (design/FORMAT.md).
        let small = nc3pack::format::shared_max(if s == residual {
            sizes.default
        } else {
            sizes.var(s)
        });
        assert_eq!(
            member.is_some(),
            (1..=small).contains(&len),
            "stream {s} of {len} bytes: member of {member:?}, shared max {small}"
        );
        let Some(sh) = member else { continue };
        assert!(
            sh == nvars + 1 || sh == nvars + 2,
            "stream {s} is a member of stream {sh}, not of a shared one"
        );
        if s == residual || a.layout().vars[s].is_record {
            assert_eq!(
                sh,
                nvars + 2,
                "record or residual member {s} in the early shared stream"
            );
        }
        let k = sh - nvars - 1;
        let at = filled[k];
        filled[k] += len;
        out[s] = streams[sh].as_ref().map(|enc| {
            let part = enc
                .get(at as usize..(at + len) as usize)
                .expect("member lies inside its shared stream");
            let esize = if s == residual {
                1
            } else {
                a.layout().vars[s].esize
            };
            let mut dec = Vec::new();
            nc3pack::__private::member_decode(esize, part, &mut dec);
            assert_eq!(
                dec.len() as u64,
                len,
                "member {s} decodes to another length"
            );
            dec
        });
    }
    assert_eq!(
        filled[0],
        a.stream_len(nvars + 1),
        "early shared stream != its members"
    );
    assert_eq!(
        filled[1],
        a.stream_len(nvars + 2),
        "late shared stream != its members"
    );
    out
}

/// `verify` and `reindex` on the bytes, written to a scratch file; whatever `reindex` writes
/// must open as an archive.
pub fn exercise_repair(data: &[u8]) {
    // Bounded work per input (F3 and F5 are fixed; this keeps executions fast).
    if declared(data)
        .is_some_and(|(blocks, recs)| blocks > MAX_REPAIR_BLOCKS || recs > MAX_UNPACK_BYTES)
    {
        return;
    }
    let dir = scratch_dir();
    let input = dir.join("in.nc3z");
    let output = dir.join("out.nc3z");
    std::fs::write(&input, data).expect("write scratch input");
    let _ = nc3pack::verify(&input, &nc3pack::VerifyOptions::default().with_threads(1));
    match nc3pack::reindex(
        &input,
        &output,
        &nc3pack::ReindexOptions::default().with_force(true),
    ) {
        Ok(rep) => {
            let a = Archive::open(&output);
            assert!(
                a.is_ok(),
                "reindex wrote an archive that does not open: {}",
                a.err().map(|e| e.to_string()).unwrap_or_default()
            );
            let a = a.unwrap();
            assert_eq!(a.lost_blocks().len(), rep.lost.len(), "lost blocks");
            check_constant_blocks(&a);
            check_recoverable(&std::fs::read(&output).expect("read the reindexed archive"));
            let vr = nc3pack::verify(&output, &nc3pack::VerifyOptions::default().with_threads(1))
                .expect("verify the reindexed file");
            // Reindex checks CRCs but does not decompress, so a frame with intact CRCs and a
            // payload that does not decode (possible here only because fix_crcs forges CRCs) is
            // kept and verify reports it; the hash may not match either. But the structure it
            // wrote (lead, header frame, frame tiling, index, footer) must be sound.
            for d in &vr.damage {
                assert!(
                    matches!(d.part, "block" | "hash"),
                    "verify of a reindexed archive reports damage: {} {d}",
                    d.part
                );
            }
        }
        Err(_) => {}
    }
}

/// Blocks above which `exercise_repair` skips an input (see finding F3 in the README).
pub const MAX_REPAIR_BLOCKS: u64 = 1 << 16;

/// The number of blocks and of records the lead and header frame of `data` declare (what
/// verify and reindex iterate over), if they decode. Members of the shared streams have no
/// blocks; the shared streams hold at most their bytes.
pub fn declared(data: &[u8]) -> Option<(u64, u64)> {
    use nc3pack::format::{
        block_count, shared_max, var_block_bytes, BlockSizes, FrameHeader, Lead,
    };
    let lead = Lead::decode(data.get(..LEAD_LEN)?).ok()?;
    let fh = FrameHeader::decode(data.get(LEAD_LEN..LEAD_LEN + FRAME_HEADER_LEN)?).ok()?;
    if u64::from(fh.decoded_len) != lead.header_len || u64::from(fh.decoded_len) > MAX_VAR_BYTES {
        return None;
    }
    let start = LEAD_LEN + FRAME_HEADER_LEN;
    let payload = data.get(start..start.checked_add(fh.stored_len as usize)?)?;
    let mut hb = Vec::new();
    nc3pack::__private::decode_payload(&fh, payload, &mut hb).ok()?;
    let header = Header::parse(&hb, lead.header_len).ok()?;
    let layout = Layout::with_numrecs(&header, lead.file_len, lead.numrecs).ok()?;
    // Format 1.1: per-variable block sizes in the frame after the header frame.
    let sizes = if lead.block_sizes_frame {
        let at = start + fh.stored_len as usize;
        let bh = FrameHeader::decode(data.get(at..at.checked_add(FRAME_HEADER_LEN)?)?).ok()?;
        BlockSizes::check_frame(&bh, header.var_count()).ok()?;
        let p = at + FRAME_HEADER_LEN;
        let payload = data.get(p..p.checked_add(bh.stored_len as usize)?)?;
        let mut table = Vec::new();
        nc3pack::__private::decode_payload(&bh, payload, &mut table).ok()?;
        BlockSizes::decode(&table, lead.block_size).ok()?
    } else {
        BlockSizes::uniform(lead.block_size)
    };
    let mut shared = 0u64;
    let mut n = 0u64;
    let totals = layout
        .vars
        .iter()
        .enumerate()
        .map(|(i, v)| (v.total, v.esize, sizes.var(i)))
        .chain(std::iter::once((layout.residual_len, 1, sizes.default)));
    for (total, esize, block_size) in totals {
        if (1..=shared_max(block_size)).contains(&total) {
            shared += total;
        } else {
            n = n.saturating_add(block_count(total, var_block_bytes(block_size, esize)));
        }
    }
    // Split over two shared streams: at most one block more than in one.
    n = n.saturating_add(block_count(shared, var_block_bytes(sizes.default, 1)) + 1);
    Some((n, layout.numrecs))
}

/// Recomputes every checksum an archive has where its structure can be found, so that a
/// mutation reaches the checks behind the CRCs: frames (hopping from the end of the lead, where
/// the header frame is, and wherever the index points), the lead, the index and the footer
/// (design/FORMAT.md: lead CRC at 60 over 0..60; footer of 32 bytes with the index CRC at 16
/// and its own CRC at 24 over 0..24).
pub fn fix_crcs(buf: &mut [u8]) {
    fn put(buf: &mut [u8], at: usize, v: u32) {
        if let Some(d) = buf.get_mut(at..at + 4) {
            d.copy_from_slice(&v.to_le_bytes());
        }
    }
    fn u32_at(buf: &[u8], at: usize) -> Option<u32> {
        Some(u32::from_le_bytes(buf.get(at..at + 4)?.try_into().ok()?))
    }
    fn u64_at(buf: &[u8], at: usize) -> Option<u64> {
        Some(u64::from_le_bytes(buf.get(at..at + 8)?.try_into().ok()?))
    }
    fn fix_frame(buf: &mut [u8], p: usize, limit: usize) -> Option<usize> {
        if p.checked_add(FRAME_HEADER_LEN)? > limit || buf[p..p + 4] != FRAME_MAGIC {
            return None;
        }
        let n = u32_at(buf, p + 4)? as usize;
        let end = (p + FRAME_HEADER_LEN).checked_add(n)?;
        if end > limit {
            return None;
        }
        let c = crc32c::crc32c(&buf[p + FRAME_HEADER_LEN..end]);
        put(buf, p + 28, c);
        let c = crc32c::crc32c(&buf[p..p + 32]);
        put(buf, p + 32, c);
        Some(end)
    }
    let len = buf.len();
    if len < LEAD_LEN {
        return;
    }
    // Frames (the header frame first) start right after the lead.
    let data_start = LEAD_LEN;
    let footer = len.checked_sub(FOOTER_LEN).filter(|&f| f >= LEAD_LEN);
    let index = footer.and_then(|f| {
        let off = usize::try_from(u64_at(buf, f)?).ok()?;
        let il = usize::try_from(u64_at(buf, f + 8)?).ok()?;
        (off.checked_add(il)? <= f).then_some((off, il))
    });
    // Frames, hopping from the first.
    let limit = index.map_or(len, |(o, _)| o.max(data_start));
    let mut p = data_start;
    while let Some(next) = fix_frame(buf, p, limit) {
        p = next;
    }
    // Frames the index points to: the N block entries (a constant entry, flag bit 1, holds an
    // element, not an offset; a lost one, bit 0, points nowhere), then the entries of the
    // constants frames, which follow them.
    if let Some((off, il)) = index {
        if il >= INDEX_HEADER_LEN {
            let total = (il - INDEX_HEADER_LEN) / INDEX_ENTRY_LEN;
            let n = u64_at(buf, off + 8).map_or(total, |n| usize::try_from(n).unwrap_or(total));
            for i in 0..total {
                let at = off + INDEX_HEADER_LEN + i * INDEX_ENTRY_LEN;
                let flags = buf
                    .get(at + 14..at + 16)
                    .map_or(0, |f| u16::from_le_bytes([f[0], f[1]]));
                if i < n && flags & (FLAG_CONSTANT | FLAG_LOST) != 0 {
                    continue;
                }
                if let Some(fo) = u64_at(buf, at).and_then(|o| usize::try_from(o).ok()) {
                    fix_frame(buf, fo, len);
                }
            }
        }
    }
    let c = crc32c::crc32c(&buf[..60]);
    put(buf, 60, c);
    if let Some(f) = footer {
        if let Some((off, il)) = index {
            let c = crc32c::crc32c(&buf[off..off + il]);
            put(buf, f + 16, c);
        }
        let c = crc32c::crc32c(&buf[f..f + 24]);
        put(buf, f + 24, c);
    }
}

/// A CRC-protected region of an archive: the bytes and where their CRC32C is stored.
struct Region {
    start: usize,
    end: usize,
    crc_at: usize,
}

/// The CRC-protected regions of an intact archive (from its own structures).
fn regions(a: &[u8]) -> Vec<Region> {
    let u64_at = |at: usize| u64::from_le_bytes(a[at..at + 8].try_into().unwrap()) as usize;
    let u32_at = |at: usize| u32::from_le_bytes(a[at..at + 4].try_into().unwrap()) as usize;
    let mut out = vec![Region {
        start: 0,
        end: 60,
        crc_at: 60,
    }];
    let f = a.len() - FOOTER_LEN;
    let (io, il) = (u64_at(f), u64_at(f + 8));
    out.push(Region {
        start: io,
        end: io + il,
        crc_at: f + 16,
    });
    out.push(Region {
        start: f,
        end: f + 24,
        crc_at: f + 24,
    });
    // Frames tile everything from the end of the lead to the index: the header frame and the
    // blocks (as `verify` checks).
    let mut p = LEAD_LEN;
    while p < io {
        let n = u32_at(p + 4);
        out.push(Region {
            start: p,
            end: p + 32,
            crc_at: p + 32,
        });
        out.push(Region {
            start: p + FRAME_HEADER_LEN,
            end: p + FRAME_HEADER_LEN + n,
            crc_at: p + 28,
        });
        p += FRAME_HEADER_LEN + n;
    }
    assert_eq!(p, io, "seed archive frames do not tile the data section");
    out
}

/// Whether `mutated` (same length as the intact `orig`) changed some CRC-protected region of
/// `orig` in a way that keeps its CRC valid: a forgery (or a CRC32C collision), which checksums
/// cannot be expected to catch.
pub fn crc_forged(orig: &[u8], mutated: &[u8]) -> bool {
    regions(orig).iter().any(|r| {
        let changed = orig[r.start..r.end] != mutated[r.start..r.end]
            || orig[r.crc_at..r.crc_at + 4] != mutated[r.crc_at..r.crc_at + 4];
        let stored = u32::from_le_bytes(mutated[r.crc_at..r.crc_at + 4].try_into().unwrap());
        changed && crc32c::crc32c(&mutated[r.start..r.end]) == stored
    })
}

/// Largest netCDF input the `pack_stream` target packs.
pub const MAX_PACK_INPUT: usize = 1 << 20;

/// The block size byte 0 of a `pack_stream` input chooses: 8 ..= 135 one by one (odd sizes,
/// sizes below an element's), then up to 4073 in steps of 31, and 4096 for 255. Always small, so
/// that streams have several blocks and small ones share.
pub fn pack_block_size(b: u8) -> u32 {
    match b {
        0..=127 => 8 + u32::from(b),
        128..=254 => 136 + u32::from(b - 128) * 31,
        255 => 4096,
    }
}

/// The options bytes 0 and 1 of a `pack_stream` input choose (see the target), with 1 thread.
pub fn pack_options(b0: u8, b1: u8) -> nc3pack::PackOptions {
    use nc3pack::format::{Codec, Filter};
    use nc3pack::FilterMode;
    // 3 was zstd (as 0) before codec 5: old inputs with it now pack with lzma.
    let codec = match b1 & 3 {
        0 => Codec::Zstd,
        1 => Codec::Deflate,
        2 => Codec::None,
        _ => Codec::Lzma,
    };
    let filter = match (b1 >> 2) & 7 {
        1 => FilterMode::Fixed(Filter::None),
        2 => FilterMode::Fixed(Filter::Shuffle),
        3 => FilterMode::Fixed(Filter::ByteDelta),
        4 => FilterMode::Fixed(Filter::Delta),
        _ => FilterMode::Auto,
    };
    // Bit 5: the `max` preset (its level for the codec, filters judged on whole blocks), else
    // the `fast` one; the block size given replaces the presets' large blocks.
    let preset = if b1 & 0x20 != 0 {
        nc3pack::PackOptions::max()
    } else {
        nc3pack::PackOptions::fast()
    };
    preset
        .with_codec(codec)
        .with_block_size(pack_block_size(b0))
        .with_threads(1)
        .with_filter(filter)
}

/// A reader that returns at most `chunk` bytes a read, as a pipe may.
pub struct ShortReads<'a> {
    data: &'a [u8],
    chunk: usize,
}

impl std::io::Read for ShortReads<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.chunk).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// The files in `dir` whose names start with `.nc3pack-` (temporary files of an atomic write).
fn temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(".nc3pack-"))
                .collect()
        })
        .unwrap_or_default()
}

/// The `pack_stream` target: byte 0 the block size ([`pack_block_size`]), byte 1 options
/// (bits 0-1 codec: 0 zstd, 1 deflate, 2 none, 3 lzma; bits 2-4 filter: 1 none, 2 shuffle,
/// 3 bytedelta, 4 delta, else auto; bit 5 the `max` preset (max level, thorough filter choice,
/// with zstd lzma where it pays, pco and `plane` tried on whole blocks; without it the `fast`
/// preset, zstd level per block); bit 6 also pack with 2 threads; bit 7 the reader returns at most 1 to 61 bytes a read, by
/// the input's length), the rest a netCDF-3 file of at most [`MAX_PACK_INPUT`] bytes.
///
/// Packs the file from a reader (`pack_reader`, as `nc3pack - OUT` does) and from a file
/// (`pack_file`), both with 1 thread: both must succeed or both fail, with a clean error and
/// no file left behind (except where the input ends inside a record too large for a stream to
/// buffer: the reader fails and the file's archive must restore it); when they succeed the archives must be byte-identical, unpack
/// (`unpack_file`) to exactly the input, and read back consistently (`exercise_archive`).
pub fn exercise_pack(data: &[u8]) {
    if data.len() < 2 || data.len() - 2 > MAX_PACK_INPUT {
        return;
    }
    let opts = pack_options(data[0], data[1]);
    let two_threads = data[1] & 0x40 != 0;
    let input = &data[2..];
    let dir = scratch_dir().join("pack");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let in_path = dir.join("in.nc");
    let from_reader = dir.join("reader.nc3z");
    let from_file = dir.join("file.nc3z");
    let back = dir.join("back.nc");
    for p in [&from_reader, &from_file, &back] {
        let _ = std::fs::remove_file(p);
    }
    std::fs::write(&in_path, input).expect("write scratch input");

    let one_thread = nc3pack::UnpackOptions::default().with_threads(1);
    let two_threads_unpack = nc3pack::UnpackOptions::default().with_threads(2);
    let chunk = if data[1] & 0x80 != 0 {
        1 + data.len() % 61
    } else {
        usize::MAX
    };
    let r = nc3pack::pack_reader(
        ShortReads { data: input, chunk },
        Path::new("-"),
        &from_reader,
        &opts,
    );
    let f = nc3pack::pack_file(&in_path, &from_file, &opts);
    let leftovers = temp_files(&dir);
    assert!(
        leftovers.is_empty(),
        "temporary files left behind: {leftovers:?}"
    );
    match (&r, &f) {
        (Ok(rs), Ok(fs)) => {
            let ra = std::fs::read(&from_reader).expect("read the archive pack_reader wrote");
            let fa = std::fs::read(&from_file).expect("read the archive pack_file wrote");
            assert_eq!(rs, fs, "pack_reader and pack_file summaries differ");
            assert_eq!(rs.input_len, input.len() as u64, "summary input length");
            assert_eq!(rs.output_len, ra.len() as u64, "summary output length");
            assert!(
                ra == fa,
                "pack_reader and pack_file (1 thread) write different archives ({} and {} bytes)",
                ra.len(),
                fa.len()
            );
            let n = nc3pack::unpack_file(&from_reader, &back, &one_thread)
                .unwrap_or_else(|e| panic!("the packed archive does not unpack: {e}"));
            assert_eq!(n, input.len() as u64, "unpack_file's length");
            let got = std::fs::read(&back).expect("read the unpacked file");
            assert!(got == input, "unpacking does not restore the input");
            // Reads of the archive must agree with its blocks and the restored file.
            exercise_archive(&ra, false);
            // A packed archive is intact (constants frames listing exactly its constant
            // blocks included), and a scan recovers all of it without the index.
            let vr = nc3pack::verify(
                &from_reader,
                &nc3pack::VerifyOptions::default().with_threads(1),
            )
            .unwrap_or_else(|e| panic!("verify of a packed archive fails: {e}"));
            assert!(
                vr.is_intact() && vr.hash_checked,
                "verify of a packed archive: {:?}",
                vr.damage
                    .iter()
                    .map(|d| format!("{} {d}", d.part))
                    .collect::<Vec<_>>()
            );
            check_recoverable(&ra);
            if two_threads {
                let _ = std::fs::remove_file(&from_reader);
                let _ = std::fs::remove_file(&back);
                let opts2 = opts.with_threads(2);
                nc3pack::pack_reader(
                    ShortReads { data: input, chunk },
                    Path::new("-"),
                    &from_reader,
                    &opts2,
                )
                .unwrap_or_else(|e| panic!("packing with 2 threads fails, with 1 not: {e}"));
                nc3pack::unpack_file(&from_reader, &back, &two_threads_unpack)
                    .unwrap_or_else(|e| panic!("the 2-thread archive does not unpack: {e}"));
                let got = std::fs::read(&back).expect("read the unpacked file");
                assert!(
                    got == input,
                    "unpacking the 2-thread archive does not restore the input"
                );
                check_recoverable(&std::fs::read(&from_reader).expect("read the 2-thread archive"));
            }
        }
        (Err(re), Err(fe)) => {
            // Clean errors: something to say, and no output.
            assert!(!re.to_string().is_empty() && !fe.to_string().is_empty());
            assert!(
                !from_reader.exists(),
                "pack_reader failed but left its output"
            );
            assert!(!from_file.exists(), "pack_file failed but left its output");
        }
        (
            Err(nc3pack::Error::Layout {
                source: nc3pack::error::LayoutError::IncompleteRecord { .. },
                ..
            }),
            Ok(_),
        ) => {
            // A limit of streams alone (README): a record too large to buffer that the input
            // ends inside. The file, whose length is known, packs; its archive must restore it.
            assert!(
                !from_reader.exists(),
                "pack_reader failed but left its output"
            );
            nc3pack::unpack_file(&from_file, &back, &one_thread)
                .unwrap_or_else(|e| panic!("the archive pack_file wrote does not unpack: {e}"));
            let got = std::fs::read(&back).expect("read the unpacked file");
            assert!(got == input, "unpacking does not restore the input");
        }
        (Ok(_), Err(e)) => panic!("pack_reader succeeds, pack_file fails: {e}"),
        (Err(e), Ok(_)) => panic!("pack_file succeeds, pack_reader fails: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEEDS: [&[u8]; 7] = [
        include_bytes!("../seeds/classic_records_zstd_b64.nc3z"),
        include_bytes!("../seeds/cdf5_types_deflate_b64.nc3z"),
        include_bytes!("../seeds/offset64_mixed_none_b64.nc3z"),
        include_bytes!("../seeds/fill_values_zstd_b16.nc3z"),
        include_bytes!("../seeds/smooth_grid_lzma_b512.nc3z"),
        include_bytes!("../seeds/smooth_grid_max_b1024.nc3z"),
        include_bytes!("../seeds/mesh_repeats_max_b8192.nc3z"),
    ];

    /// `fix_crcs` rewrites every CRC at the place the format puts it: an intact archive is left
    /// as it is, and a damaged one is made to pass its checksums again.
    #[test]
    fn fix_crcs_knows_where_the_checksums_are() {
        for seed in SEEDS {
            let mut a = seed.to_vec();
            fix_crcs(&mut a);
            assert!(a == seed, "fix_crcs changed an intact archive");
            // Zero every CRC field fix_crcs knows of; it must restore them all.
            let mut z = seed.to_vec();
            let n = z.len();
            for r in regions(seed) {
                z[r.crc_at..r.crc_at + 4].fill(0);
            }
            assert!(Archive::from_reader(z.clone(), Path::new("z")).is_err());
            fix_crcs(&mut z);
            assert!(z == seed, "fix_crcs did not restore the CRCs");
            assert_eq!(z.len(), n);
            assert!(!crc_forged(seed, seed));
            assert!(
                declared(seed).is_some(),
                "declared() reads the lead and header frame"
            );
        }
    }

    /// The last seed has constant blocks and a constants frame; `fix_crcs` skips constant
    /// entries (their offset field is an element) and fixes the constants frame's CRCs; the
    /// seeds are recoverable by a scan.
    #[test]
    fn constants_in_the_seeds() {
        let seed = SEEDS[3];
        let a = Archive::from_reader(seed.to_vec(), Path::new("s")).unwrap();
        assert!(
            !a.constants_frames().is_empty(),
            "seed has no constants frame"
        );
        let constant = (0..a.stream_count())
            .flat_map(|s| (0..a.block_count(s)).map(move |b| (s, b)))
            .filter(|&(s, b)| a.entry(s, b).is_constant())
            .count();
        assert!(constant > 0, "seed has no constant block");
        // Break the constants frame's payload CRC only: fix_crcs must restore it.
        let t = a.constants_frames()[0].offset as usize;
        let mut z = seed.to_vec();
        z[t + 28] ^= 0xff;
        assert!(a.constant_runs(0).is_ok());
        fix_crcs(&mut z);
        assert!(
            z == seed,
            "fix_crcs did not restore the constants frame's CRC"
        );
        for seed in SEEDS {
            check_recoverable(seed);
        }
    }

    /// `seeds/sparse_b32m.nc3z` (96 MiB of zeros and 1 KiB of values, `make_corpus.sh --seeds`)
    /// has constant blocks too large for the harness to decode whole, and
    /// `check_large_constant_blocks` reads them (as `exercise_archive` does).
    #[test]
    fn large_constant_blocks_in_the_seed() {
        let seed = include_bytes!("../seeds/sparse_b32m.nc3z");
        let a = Archive::from_reader(seed.to_vec(), Path::new("s")).unwrap();
        assert!(a.block_bytes(0) > MAX_BLOCK_BYTES);
        let constant: Vec<bool> = (0..a.block_count(0))
            .map(|b| a.entry(0, b).is_constant())
            .collect();
        assert_eq!(constant, [true, true, true, false]);
        check_large_constant_blocks(&a, 0);
        exercise_archive(seed, false);
        check_recoverable(seed);
    }

    /// The member bookkeeping of the harness agrees with the library's reads on real archives.
    #[test]
    fn member_data_matches_reads() {
        for (i, seed) in SEEDS.iter().enumerate() {
            let a = Archive::from_reader(seed.to_vec(), Path::new("s")).unwrap();
            // The first four (block size 64 or 16) share their small variables.
            assert!(
                i >= 4 || (0..a.stream_count()).any(|s| a.is_member(s)),
                "seed {i} has no members"
            );
            exercise_archive(seed, false);
        }
    }

    /// The last three seeds hold the newer decoders' frames: lzma blocks (codec 5, with and
    /// without a byte filter) and pco + plane blocks (filter 6).
    #[test]
    fn lzma_and_plane_in_the_seeds() {
        use nc3pack::format::{Codec, Filter};
        let blocks = |seed: &[u8]| {
            let a = Archive::from_reader(seed.to_vec(), Path::new("s")).unwrap();
            (0..a.stream_count())
                .flat_map(|s| (0..a.block_count(s)).map(move |b| (s, b)))
                .map(|(s, b)| {
                    let e = a.entry(s, b);
                    (e.codec, e.filter)
                })
                .collect::<Vec<_>>()
        };
        let lzma = blocks(SEEDS[4]);
        assert!(lzma.contains(&(Codec::Lzma, Filter::None)), "{lzma:?}");
        assert!(
            lzma.iter()
                .any(|&(c, f)| c == Codec::Lzma && f != Filter::None),
            "{lzma:?}"
        );
        assert!(lzma.contains(&(Codec::Pco, Filter::Plane)), "{lzma:?}");
        let max = blocks(SEEDS[5]);
        assert!(max.contains(&(Codec::Pco, Filter::Plane)), "{max:?}");
        assert!(max.contains(&(Codec::Pco, Filter::None)), "{max:?}");
        let mesh = blocks(SEEDS[6]);
        assert!(mesh.contains(&(Codec::Lzma, Filter::None)), "{mesh:?}");
    }

    /// The pack target's checks hold on the samples, with every option byte pattern in turn.
    #[test]
    fn exercise_pack_on_samples() {
        let samples: [&[u8]; 4] = [
            include_bytes!("../../samples/classic_records.nc"),
            include_bytes!("../../samples/cdf5_types.nc"),
            include_bytes!("../../samples/truncated_record.nc"),
            include_bytes!("../seeds/smooth_grid.nc"),
        ];
        for (i, nc) in samples.iter().enumerate() {
            // The last two: lzma (codec bits 3), alone and with the max preset and 2 threads.
            for (b0, b1) in [
                (0x38, 0x00),
                (0x00, 0x05),
                (0xff, 0x42),
                (0x0f, 0xa0 + i as u8),
                (0x20, 0x03),
                (0x9c, 0x63),
            ] {
                let mut input = vec![b0, b1];
                input.extend_from_slice(nc);
                exercise_pack(&input);
            }
        }
        // Not netCDF: both packers refuse it.
        exercise_pack(b"\x38\x00not a netCDF file");
    }
}
