//! Damage: [`crate::verify`] finds it (see `verify.rs`), [`reindex`] recovers what is intact;
//! the scan of a data section frame by frame serves both.
//!
//! Reindexing rebuilds the index and footer without them: from the end of the header frame it hops
//! from one frame to the next using each frame's stored length, checking each frame's header and
//! payload CRCs (it decompresses only the small constants frames, which list the constant blocks
//! that have no frame). After a damaged frame it resynchronizes on the next sync
//! magic whose header CRC checks. Every intact block is kept; blocks not found are marked lost in
//! the new index, so reading them is an error, `verify` reports them and `unpack` refuses.

pub use crate::error::damage::{ConstantsProblem, ScanProblem};
use crate::error::{io_err, ArchiveError, Error, Result};
use crate::format::streams::{streams_with, Stream};
use crate::format::{self, ConstantRun, FrameHeader, Lead, FRAME_HEADER_LEN, FRAME_MAGIC};
use crate::io::ReadAt;
use crate::nc3::{Header, Layout};
use crate::pack::writer::Sink;
use crate::read::archive::stream_name;
use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::Path;

/// The result of scanning an archive's data section frame by frame.
#[derive(Debug, Default)]
pub struct Scan {
    /// Intact frames found: (stream id, block) -> (offset, frame header).
    pub frames: HashMap<(u32, u64), (u64, FrameHeader)>,
    /// Damaged or unreadable regions.
    pub damaged: Vec<Scanned>,
}

/// A region of an archive's data section that a scan could not use.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-repair-Scanned", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let z = dir.join("obs.nc3z");
/// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
/// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
/// use nc3pack::format::FRAME_HEADER_LEN;
/// // Pack samples/obs_points.nc, then flip a byte in the payload of the block of "temp".
/// let a = nc3pack::Archive::open(&z)?;
/// let temp = a.header().var_id("temp").unwrap();
/// let at = a.entry(temp, 0).offset as usize + FRAME_HEADER_LEN + 10;
/// drop(a);
/// let mut bytes = std::fs::read(&z)?;
/// bytes[at] ^= 0xff;
/// std::fs::write(&z, &bytes)?;
/// let report = nc3pack::reindex(&z, &dir.join("fixed.nc3z"), &nc3pack::ReindexOptions::default())?;
/// let s = &report.damaged[0];
/// assert_eq!(s.offset as usize, at - 10 - FRAME_HEADER_LEN);
/// assert_eq!(s.what, nc3pack::ScanProblem::PayloadChecksum { stream: temp as u32, block: 0 });
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scanned {
    /// Archive offset of the region (0 for a problem of the constants frames as a whole).
    pub offset: u64,
    /// Its length in bytes (0 for a problem of the constants frames as a whole).
    pub len: u64,
    /// What is wrong there.
    pub what: ScanProblem,
}

/// Most blocks a repair indexes for a short archive (4 Mi blocks: 4 TiB of data in 1 MiB blocks).
const MAX_REPAIR_BLOCKS: u64 = 1 << 22;

/// Reads the lead and header frame, which a scan needs to know the layout, and bounds the
/// number of blocks the lead declares.
pub(crate) fn read_front_layout(
    r: &impl ReadAt,
    path: &Path,
    len: u64,
) -> Result<(Lead, Vec<u8>, Header, format::BlockSizes, Layout, u64)> {
    let bad = |part: &'static str, offset: u64, source: ArchiveError| Error::Archive {
        path: path.to_path_buf(),
        part,
        offset,
        source,
    };
    let (lead, hb, header, sizes, start) = crate::read::archive::read_front(r, path, len)?;
    let layout = Layout::with_numrecs(&header, lead.file_len, lead.numrecs)
        .map_err(|e| bad("lead", 24, ArchiveError::Layout(Box::new(e))))?;
    // The lead is untrusted: bound the index a repair would build (16 bytes a block).
    let blocks: u64 = streams_with(&layout, &sizes)
        .iter()
        .map(Stream::blocks)
        .sum();
    if blocks > len.max(MAX_REPAIR_BLOCKS) {
        return Err(bad("lead", 16, ArchiveError::TooManyBlocks { blocks, len }));
    }
    Ok((lead, hb, header, sizes, layout, start))
}

/// Scans the frames of `r` from `start` to `end`, hopping by stored lengths and resynchronizing
/// on the sync magic after damage. Reads frame headers and payloads (to check their CRCs), never
/// decompresses.
pub fn scan(r: &impl ReadAt, start: u64, end: u64) -> std::io::Result<Scan> {
    scan_for(r, start, end, |_| true)
}

/// Like [`scan`], but keeps only the intact frames that `accept` takes: for each (stream id,
/// block) the first one it takes wins, so a frame that does not fit the layout cannot hide a good
/// one found after it.
///
/// ```
/// let bytes: Vec<u8> = Vec::new();
/// let sc = nc3pack::testing::scan_for(&bytes, 0, 0, |h| h.stream == 0).unwrap();
/// assert!(sc.frames.is_empty());
/// ```
///
/// # Errors
///
/// An I/O error reading `r`.
pub fn scan_for(
    r: &impl ReadAt,
    start: u64,
    end: u64,
    accept: impl Fn(&FrameHeader) -> bool,
) -> std::io::Result<Scan> {
    let mut out = Scan::default();
    let mut pos = start;
    let mut hb = [0u8; FRAME_HEADER_LEN];
    let mut payload = Vec::new();
    while pos + FRAME_HEADER_LEN as u64 <= end {
        r.read_exact_at(&mut hb, pos)?;
        let frame = FrameHeader::decode(&hb)
            .ok()
            .filter(|h| pos + FRAME_HEADER_LEN as u64 + u64::from(h.stored_len) <= end);
        if let Some(h) = frame {
            payload.resize(h.stored_len as usize, 0);
            r.read_exact_at(&mut payload, pos + FRAME_HEADER_LEN as u64)?;
            let next = pos + FRAME_HEADER_LEN as u64 + u64::from(h.stored_len);
            if format::crc(&payload) == h.payload_crc {
                if accept(&h) {
                    out.frames.entry((h.stream, h.block)).or_insert((pos, h));
                }
            } else {
                out.damaged.push(Scanned {
                    offset: pos,
                    len: next - pos,
                    what: ScanProblem::PayloadChecksum {
                        stream: h.stream,
                        block: h.block,
                    },
                });
            }
            pos = next;
            continue;
        }
        // Resynchronize: the next sync magic whose frame header checks.
        let from = pos;
        match find_next_frame(r, pos + 1, end)? {
            Some(p) => {
                out.damaged.push(Scanned {
                    offset: from,
                    len: p - from,
                    what: ScanProblem::NotAFrame,
                });
                pos = p;
            }
            None => {
                out.damaged.push(Scanned {
                    offset: from,
                    len: end - from,
                    what: ScanProblem::NotAFrame,
                });
                break;
            }
        }
    }
    if pos < end && out.damaged.last().is_none_or(|d| d.offset + d.len != end) {
        out.damaged.push(Scanned {
            offset: pos,
            len: end - pos,
            what: ScanProblem::Trailing,
        });
    }
    Ok(out)
}

fn find_next_frame(r: &impl ReadAt, from: u64, end: u64) -> std::io::Result<Option<u64>> {
    const CHUNK: u64 = 1 << 20;
    let mut at = from;
    let mut buf = Vec::new();
    while at + FRAME_HEADER_LEN as u64 <= end {
        let n = CHUNK.min(end - at);
        buf.resize(n as usize, 0);
        r.read_exact_at(&mut buf, at)?;
        for i in 0..buf.len().saturating_sub(3) {
            if buf[i..i + 4] == FRAME_MAGIC {
                let p = at + i as u64;
                if p + FRAME_HEADER_LEN as u64 > end {
                    return Ok(None);
                }
                let mut hb = [0u8; FRAME_HEADER_LEN];
                r.read_exact_at(&mut hb, p)?;
                if FrameHeader::decode(&hb).is_ok() {
                    return Ok(Some(p));
                }
            }
        }
        // Overlap by 3 bytes so a magic across chunks is found.
        at += n.saturating_sub(3).max(1);
    }
    Ok(None)
}

/// What `reindex` recovered.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-repair-ReindexReport", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let z = dir.join("obs.nc3z");
/// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
/// # nc3pack::pack_file("samples/obs_points.nc".as_ref(), &z, &opts)?;
/// use nc3pack::format::FRAME_HEADER_LEN;
/// // Pack samples/obs_points.nc, then flip a byte in the payload of the block of "temp".
/// let a = nc3pack::Archive::open(&z)?;
/// let temp = a.header().var_id("temp").unwrap();
/// let at = a.entry(temp, 0).offset as usize + FRAME_HEADER_LEN + 10;
/// drop(a);
/// let mut bytes = std::fs::read(&z)?;
/// bytes[at] ^= 0xff;
/// std::fs::write(&z, &bytes)?;
/// let report = nc3pack::reindex(&z, &dir.join("fixed.nc3z"), &nc3pack::ReindexOptions::default())?;
/// assert_eq!(report.lost, [(r#"variable "temp""#.to_string(), 0)]);
/// assert_eq!(report.recovered, report.blocks - 1);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReindexReport {
    /// Blocks the layout needs.
    pub blocks: u64,
    /// Blocks recovered intact.
    pub recovered: u64,
    /// Blocks lost: (stream name, `variable "x"`, `residual bytes`, ...; block number).
    pub lost: Vec<(String, u64)>,
    /// Damaged regions skipped while scanning.
    pub damaged: Vec<Scanned>,
}

/// Rebuilds `input`'s index and footer by scanning its frames, writing a valid archive to
/// `output` (atomically; refuses an existing `output` unless `opts.force`). Needs the lead and
/// header copy to be intact. Blocks not found are marked lost (listed in the report).
///
/// ```no_run
/// use nc3pack::{reindex, ReindexOptions};
/// let r = reindex("cut.nc3z".as_ref(), "fixed.nc3z".as_ref(), &ReindexOptions::default())?;
/// println!("{} of {} blocks recovered", r.recovered, r.blocks);
/// # Ok::<(), nc3pack::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::Archive`] when the lead or header frame is damaged (nothing to scan against), or
/// the lead's record count is not the one its header and original length give
/// ([`crate::error::ArchiveError::RecordCount`]), [`Error::Io`] when `input` cannot be read or `output` written, [`Error::NotSeekable`] for an
/// `input` that is a pipe or device, [`Error::OutputExists`] for an existing `output` without
/// `force`, [`Error::Refused`] for an `output` that is the input or a directory. On an error no
/// output is left behind.
pub fn reindex(input: &Path, output: &Path, opts: &crate::ReindexOptions) -> Result<ReindexReport> {
    let force = opts.force;
    let f = crate::read::open_seekable(input, "reindex")?;
    let f = crate::read::open_expanded(f, input)?;
    let len = f.size().map_err(io_err(input, "stat"))?;
    let (lead, hb, header, sizes, layout, start) = read_front_layout(&f, input, len)?;
    // The lead is copied to the output as it is: one whose record count the writer would not
    // have recorded (intact checksum, wrong count) cannot be repaired here, and an archive
    // rebuilt around it would not verify.
    let bad_lead = |source| Error::Archive {
        path: input.to_path_buf(),
        part: "lead",
        offset: 24,
        source,
    };
    match Layout::new(&header, lead.file_len) {
        Ok(l) if l.numrecs == lead.numrecs => {}
        Ok(l) => {
            return Err(bad_lead(ArchiveError::RecordCount {
                stored: lead.numrecs,
                expected: l.numrecs,
                file_len: lead.file_len,
            }))
        }
        Err(e) => return Err(bad_lead(ArchiveError::Layout(Box::new(e)))),
    }
    let all = streams_with(&layout, &sizes);
    let sc = scan_for(&f, start, len, fits_layout(&all)).map_err(io_err(input, "read"))?;
    let mut report = ReindexReport {
        damaged: sc.damaged.clone(),
        ..ReindexReport::default()
    };
    let constants =
        scanned_constants(&f, &sc, &all, &mut report.damaged).map_err(io_err(input, "read"))?;
    crate::atomic::write_atomically(output, force, Some(input), |out| {
        let mut w = BufWriter::with_capacity(1 << 20, out);
        let werr = |source| Error::Io {
            path: output.to_path_buf(),
            op: "write",
            source,
        };
        let mut head = lead.encode().to_vec();
        head.extend_from_slice(&crate::codec::header_frame(&hb, false));
        if lead.block_sizes_frame {
            head.extend_from_slice(&crate::codec::block_sizes_frame(&sizes, header.var_count()));
        }
        w.write_all(&head).map_err(io_err(output, "write"))?;
        let mut sink = Sink::new(head.len() as u64);
        let mut frame = Vec::new();
        for (si, s) in all.iter().enumerate() {
            for b in 0..s.blocks() {
                report.blocks += 1;
                let found = sc
                    .frames
                    .get(&(s.id, b))
                    .filter(|(_, h)| frame_fits(s, b, h));
                if let Some(&(off, h)) = found {
                    frame.resize(FRAME_HEADER_LEN + h.stored_len as usize, 0);
                    f.read_exact_at(&mut frame, off)
                        .map_err(io_err(input, "read"))?;
                    sink.frame(&mut w, si, &h, &frame).map_err(werr)?;
                    report.recovered += 1;
                } else if let Some(v) = constants.value(s.id, b) {
                    let esize = s.esize.clamp(1, 8);
                    sink.constant(&mut w, si, s.id, b, &v[..esize])
                        .map_err(werr)?;
                    report.recovered += 1;
                } else {
                    sink.lost(si, b);
                    report.lost.push((stream_name(&header, s.id), b));
                }
            }
        }
        sink.finish(&mut w, &all, output)?;
        w.flush().map_err(io_err(output, "write"))?;
        Ok(())
    })?;
    Ok(report)
}

/// The runs of constant blocks that the constants frames found by a scan list, by stream id,
/// sorted by first block, without overlaps.
#[derive(Debug, Default)]
pub struct ScannedConstants(HashMap<u32, Vec<ConstantRun>>);

impl ScannedConstants {
    /// The element of block `b` of the stream with frame id `id`, if a run lists it.
    pub fn value(&self, id: u32, b: u64) -> Option<&[u8; 8]> {
        let runs = self.0.get(&id)?;
        let r = &runs[runs.partition_point(|r| r.first <= b).checked_sub(1)?];
        (b - r.first < r.count).then_some(&r.value)
    }
}

/// Reads the constants frames a scan found (in frame order) and keeps the runs that fit the
/// layout's streams `all`; what does not fit is added to `damaged`. Keeps at most as many runs as
/// the layout has blocks, so a hostile archive cannot make it allocate more than its index.
pub fn scanned_constants(
    r: &impl ReadAt,
    sc: &Scan,
    all: &[Stream],
    damaged: &mut Vec<Scanned>,
) -> std::io::Result<ScannedConstants> {
    let by_id: HashMap<u32, &Stream> = all.iter().map(|s| (s.id, s)).collect();
    let max_runs: u64 = all.iter().map(Stream::blocks).sum();
    let mut frames: Vec<(u64, u64, FrameHeader)> = sc
        .frames
        .iter()
        .filter(|((id, _), _)| *id == format::CONSTANTS_ID)
        .map(|(&(_, k), &(off, h))| (k, off, h))
        .collect();
    frames.sort_unstable_by_key(|t| t.0);
    let mut per: HashMap<u32, Vec<ConstantRun>> = HashMap::new();
    let mut kept = 0u64;
    let mut payload = Vec::new();
    let mut table = Vec::new();
    for (k, off, h) in frames {
        let frame_len = FRAME_HEADER_LEN as u64 + u64::from(h.stored_len);
        let mut bad = |problem: ConstantsProblem| {
            damaged.push(Scanned {
                offset: off,
                len: frame_len,
                what: ScanProblem::ConstantsFrame { k, problem },
            })
        };
        if h.decoded_len as usize > format::MAX_RUNS_PER_FRAME * format::RUN_LEN {
            bad(ConstantsProblem::TooLarge {
                decoded: h.decoded_len,
            });
            continue;
        }
        payload.resize(h.stored_len as usize, 0);
        r.read_exact_at(&mut payload, off + FRAME_HEADER_LEN as u64)?;
        let runs = crate::codec::decode_payload(&h, &payload, &mut table)
            .map_err(ConstantsProblem::Frame)
            .and_then(|()| ConstantRun::decode_all(&table).map_err(ConstantsProblem::Damaged));
        let runs = match runs {
            Ok(runs) => runs,
            Err(problem) => {
                bad(problem);
                continue;
            }
        };
        for run in runs {
            let Some(s) = by_id.get(&run.stream) else {
                bad(ConstantsProblem::NoSuchStream { stream: run.stream });
                continue;
            };
            let esize = s.esize.clamp(1, 8);
            if run.first + run.count > s.blocks() || run.value[esize..].iter().any(|&x| x != 0) {
                bad(ConstantsProblem::RunMisfit {
                    stream: s.id,
                    first: run.first,
                    end: run.first + run.count,
                    blocks: s.blocks(),
                });
                continue;
            }
            if kept >= max_runs {
                bad(ConstantsProblem::TooManyRuns);
                break;
            }
            kept += 1;
            per.entry(run.stream).or_default().push(run);
        }
    }
    for (id, runs) in &mut per {
        runs.sort_by_key(|r| r.first);
        let mut end = 0u64;
        runs.retain(|r| {
            let keep = r.first >= end;
            if keep {
                end = r.first + r.count;
            } else {
                damaged.push(Scanned {
                    offset: 0,
                    len: 0,
                    what: ScanProblem::RunOverlap {
                        stream: *id,
                        first: r.first,
                        end: r.first + r.count,
                    },
                });
            }
            keep
        });
    }
    Ok(ScannedConstants(per))
}

/// Whether a scanned frame is the block the layout expects (right decoded length), and one an
/// index entry can point to (a constant frame has a payload: its element).
/// Whether a scanned frame can be a block of one of the streams `all` (or a constants frame, whose
/// runs are checked when they are read).
pub(crate) fn fits_layout(all: &[Stream]) -> impl Fn(&FrameHeader) -> bool + '_ {
    let by_id: HashMap<u32, &Stream> = all.iter().map(|s| (s.id, s)).collect();
    move |h| {
        (h.stream == format::CONSTANTS_ID
            && h.esize == 1
            && format::is_constants_codec(h.codec, h.filter))
            || by_id
                .get(&h.stream)
                .is_some_and(|s| h.block < s.blocks() && frame_fits(s, h.block, h))
    }
}

fn frame_fits(s: &Stream, b: u64, h: &FrameHeader) -> bool {
    u64::from(h.decoded_len) == s.block_len(b)
        && usize::from(h.esize) == s.esize
        && !(h.codec == format::Codec::Constant && h.stored_len == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A raw frame of stream `stream`, block `block`, holding `payload`.
    fn frame(stream: u32, block: u64, payload: &[u8]) -> Vec<u8> {
        let h = FrameHeader {
            stored_len: payload.len() as u32,
            decoded_len: payload.len() as u32,
            stream,
            block,
            codec: format::Codec::None,
            filter: format::Filter::None,
            esize: 1,
            payload_crc: crc32c::crc32c(payload),
        };
        let mut f = h.encode().to_vec();
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn scan_reports_each_damaged_region_by_kind() {
        // good frame (0..44) | frame with a flipped payload byte (44..88) | 10 bytes of junk
        // (88..98) | good frame (98..142) | 20 trailing bytes (142..162).
        let mut b = frame(0, 0, b"abcdefgh");
        let mut bad = frame(3, 9, b"ijklmnop");
        bad[FRAME_HEADER_LEN + 2] ^= 1;
        b.extend_from_slice(&bad);
        b.extend_from_slice(&[0x55; 10]);
        b.extend_from_slice(&frame(0, 1, b"qrstuvwx"));
        b.extend_from_slice(&[0u8; 20]);
        let sc = scan(&b, 0, b.len() as u64).unwrap();
        assert_eq!(sc.frames.len(), 2);
        assert_eq!(
            sc.damaged,
            vec![
                Scanned {
                    offset: 44,
                    len: 44,
                    what: ScanProblem::PayloadChecksum {
                        stream: 3,
                        block: 9
                    },
                },
                Scanned {
                    offset: 88,
                    len: 10,
                    what: ScanProblem::NotAFrame,
                },
                Scanned {
                    offset: 142,
                    len: 20,
                    what: ScanProblem::Trailing,
                },
            ]
        );
    }
}
