//! Shared code of the nc3pack fuzz targets (see ../README.md).
//!
//! Every function here must never panic on any input, except through the `assert!`s that state
//! an invariant of nc3pack: those are findings, as a crash of the library is.

use nc3pack::archive::Archive;
use nc3pack::nc3::{self, Header, Layout, ParseError};
use nc3pack::read::{Dataset, NcFile};
use nc3pack::slab::Hyperslab;
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
    let hl = h.len as usize;
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
    let nvars = ds.header().vars.len();
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
        let name = ds.header().vars[r.u8() as usize % nvars].name.clone();
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
            h.len <= len,
            "header length {} beyond the input {len}",
            h.len
        );
        check_prefixes(data, h);
        if let Ok(l) = Layout::new(h, len) {
            assert_eq!(l.vars.len(), h.vars.len());
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
        let mut r = Bytes::new(&data[h.len as usize..]);
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
    let _ = nc3pack::repair::scan(&v, 0, len);
    let _ = nc3pack::repair::scan(&v, 52.min(len), len);

    let threads = 1 + data.last().map_or(0, |&b| b as usize % 3);
    if let Ok(mut a) = Archive::from_reader(data.to_vec(), path) {
        a.set_threads(threads);
        if data.first().is_some_and(|b| b & 1 == 1) {
            a.set_cache_budget(0);
        }
        assert_eq!(a.header().len, a.lead().header_len);
        assert_eq!(a.header_bytes().len() as u64, a.lead().header_len);
        assert!(a.data_start() <= a.index_offset() && a.index_offset() <= len);
        let _ = nc3pack::repair::scan(&v, a.data_start(), a.index_offset());
        // Every block, bypassing the cache; keep the variables' blocks to check reads against.
        let ns = a.stream_count();
        let mut streams: Vec<Option<Vec<u8>>> = vec![Some(Vec::new()); ns];
        for s in 0..ns {
            let bb = a.block_bytes(s);
            assert!(bb > 0);
            if bb > MAX_BLOCK_BYTES {
                streams[s] = None;
                continue;
            }
            for b in 0..a.block_count(s) {
                let checked = a.check_block(s, b);
                match a.read_block(s, b) {
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
        }
        // Reads through the Dataset API must give the concatenated blocks.
        for vi in 0..a.header().vars.len() {
            let total = a.layout().vars[vi].total;
            if total > MAX_VAR_BYTES || a.block_bytes(vi) > MAX_BLOCK_BYTES {
                continue;
            }
            match a.read_var_bytes(vi) {
                Ok(got) => {
                    assert_eq!(got.len() as u64, total);
                    if let Some(want) = &streams[vi] {
                        assert!(&got == want, "read_var_bytes of var {vi} != its blocks");
                    }
                }
                Err(_) => assert!(
                    streams[vi].is_none(),
                    "var {vi}: its blocks decode, the read fails"
                ),
            }
        }
        let mut r = Bytes::new(&data[data.len().min(48 + a.lead().header_len as usize + 4)..]);
        read_everything(&a, &mut r, false);
        // Restore the original (if small) and check it against the archive's own reads.
        // Bounded work per input: small originals only.
        let small = a.lead().file_len <= MAX_UNPACK_BYTES
            && a.layout().numrecs <= MAX_UNPACK_BYTES
            && (0..ns).all(|s| a.block_bytes(s) <= MAX_BLOCK_BYTES);
        if small {
            let mut out = Vec::new();
            if nc3pack::unpack::unpack_to(&a, &mut out, Path::new("(fuzz)"), threads, &|_| {})
                .is_ok()
            {
                assert_eq!(out.len() as u64, a.lead().file_len, "restored length");
                assert_eq!(&out[..a.header_bytes().len()], a.header_bytes());
                if let Ok(f) = NcFile::from_reader(out, Path::new("(restored)")) {
                    if f.layout() == a.layout() {
                        for vi in 0..a.header().vars.len() {
                            if let (Some(want), Ok(got)) = (&streams[vi], f.read_var_bytes(vi)) {
                                assert!(&got == want, "restored file's var {vi} != the archive's");
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
    let _ = nc3pack::repair::verify(&input, None, 1);
    match nc3pack::repair::reindex(&input, &output, true) {
        Ok(rep) => {
            let a = Archive::open(&output);
            assert!(
                a.is_ok(),
                "reindex wrote an archive that does not open: {}",
                a.err().map(|e| e.to_string()).unwrap_or_default()
            );
            let a = a.unwrap();
            assert_eq!(a.lost_blocks().len(), rep.lost.len(), "lost blocks");
            let vr = nc3pack::repair::verify(&output, None, 1).expect("verify the reindexed file");
            // Reindex checks CRCs but does not decompress, so a frame with intact CRCs and a
            // payload that does not decode (possible here only because fix_crcs forges CRCs) is
            // kept and verify reports it; the hash may not match either. But the structure it
            // wrote (lead, header copy, frame tiling, index, footer) must be sound.
            for d in &vr.damage {
                assert!(
                    matches!(d.part, "block" | "hash" | "metadata frame"),
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

/// The number of blocks and of records the lead and header copy of `data` declare (what
/// verify and reindex iterate over), if they decode.
pub fn declared(data: &[u8]) -> Option<(u64, u64)> {
    use nc3pack::format::{block_count, var_block_bytes, Lead};
    let lead = Lead::decode(data.get(..48)?).ok()?;
    let end = usize::try_from(lead.header_len).ok()?.checked_add(48)?;
    let header = Header::parse(data.get(48..end)?, lead.header_len).ok()?;
    let layout = Layout::with_numrecs(&header, lead.file_len, lead.numrecs).ok()?;
    let mut n = block_count(layout.residual_len, var_block_bytes(lead.block_size, 1));
    for v in &layout.vars {
        n = n.saturating_add(block_count(
            v.total,
            var_block_bytes(lead.block_size, v.esize),
        ));
    }
    Some((n, layout.numrecs))
}

/// Recomputes every checksum an archive has where its structure can be found, so that a
/// mutation reaches the checks behind the CRCs: frames (walking from the end of the header
/// copy, and wherever the index points), the header copy, the lead, the index and the footer.
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
        if p.checked_add(36)? > limit || buf[p..p + 4] != *b"\xb7N3B" {
            return None;
        }
        let n = u32_at(buf, p + 4)? as usize;
        let end = (p + 36).checked_add(n)?;
        if end > limit {
            return None;
        }
        let c = crc32c::crc32c(&buf[p + 36..end]);
        put(buf, p + 28, c);
        let c = crc32c::crc32c(&buf[p..p + 32]);
        put(buf, p + 32, c);
        Some(end)
    }
    let len = buf.len();
    if len < 48 {
        return;
    }
    // Frames (the header frame first) start right after the 48-byte lead.
    let data_start = Some(48);
    let footer = len.checked_sub(48).filter(|&f| f >= 48);
    let index = footer.and_then(|f| {
        let off = usize::try_from(u64_at(buf, f)?).ok()?;
        let il = usize::try_from(u64_at(buf, f + 8)?).ok()?;
        (off.checked_add(il)? <= f).then_some((off, il))
    });
    // Frames, hopping from the first.
    if let Some(ds) = data_start {
        let limit = index.map_or(len, |(o, _)| o.max(ds));
        let mut p = ds;
        while let Some(next) = fix_frame(buf, p, limit) {
            p = next;
        }
    }
    // Frames the index points to.
    if let Some((off, il)) = index {
        if il >= 16 {
            let n = (il - 16) / 16;
            for i in 0..n {
                let at = off + 16 + i * 16;
                if let Some(fo) = u64_at(buf, at).and_then(|o| usize::try_from(o).ok()) {
                    fix_frame(buf, fo, len);
                }
            }
        }
    }
    let c = crc32c::crc32c(&buf[..44]);
    put(buf, 44, c);
    if let Some(f) = footer {
        if let Some((off, il)) = index {
            let c = crc32c::crc32c(&buf[off..off + il]);
            put(buf, f + 16, c);
        }
        let c = crc32c::crc32c(&buf[f..f + 40]);
        put(buf, f + 40, c);
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
        end: 44,
        crc_at: 44,
    }];
    let f = a.len() - 48;
    let (io, il) = (u64_at(f), u64_at(f + 8));
    out.push(Region {
        start: io,
        end: io + il,
        crc_at: f + 16,
    });
    out.push(Region {
        start: f,
        end: f + 40,
        crc_at: f + 40,
    });
    // Frames tile everything from the end of the lead to the index: the header frame, the
    // metadata frame and the blocks (as `verify` checks).
    let mut p = 48;
    while p < io {
        let n = u32_at(p + 4);
        out.push(Region {
            start: p,
            end: p + 32,
            crc_at: p + 32,
        });
        out.push(Region {
            start: p + 36,
            end: p + 36 + n,
            crc_at: p + 28,
        });
        p += 36 + n;
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
