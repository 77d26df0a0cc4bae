//! Verifying an archive: [`verify`] checks every checksum of the archive (lead, header frame,
//! every frame header and payload, index, footer), checks that the frames tile the data section
//! with no unaccounted bytes and that the constants frames list exactly the constant blocks, and
//! then decodes everything to compare the XXH3-128 of the restored file with the one recorded at
//! pack time. Damage is listed in a [`VerifyReport`], not returned as an error.

pub use crate::error::damage::{Damage, Problem, SharedError};
use crate::error::{io_err, worker_err, Error, Result};
use crate::format::streams::streams_with;
use crate::io::ReadAt;
use crate::parallel::WorkerError;
use crate::read::archive::{stream_name, Archive};
use crate::repair::{fits_layout, read_front_layout, scan_for, scanned_constants};
use std::collections::HashMap;
use std::path::Path;

/// What `verify` found.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-repair-VerifyReport", std::process::id()));
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
/// let report = nc3pack::verify(&z, &nc3pack::VerifyOptions::default())?;
/// assert!(!report.is_intact());
/// assert_eq!(report.damage.len(), 1);
/// assert_eq!(report.original_matches, None); // no original given
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Damaged parts; empty when the archive is intact.
    pub damage: Vec<Damage>,
    /// Blocks checked.
    pub blocks: u64,
    /// Whether the restored data was decoded and matched the recorded hash.
    pub hash_checked: bool,
    /// With `--against`: whether the original file matched (for a lossy archive: whether its
    /// hash is the one recorded, every quantized value is within its bound and everything else
    /// is equal; see `lossy`).
    pub original_matches: Option<bool>,
    /// With `--against`, for a lossy (quantized) archive: how its data compare with the
    /// original's.
    pub lossy: Option<crate::quantize::LossyComparison>,
}

impl VerifyReport {
    /// Whether nothing is damaged (and the original matches, if one was given).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-repair-is_intact", std::process::id()));
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
    /// let report = nc3pack::verify(&z, &nc3pack::VerifyOptions::default())?;
    /// assert!(!report.is_intact());
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_intact(&self) -> bool {
        self.damage.is_empty() && self.original_matches != Some(false)
    }
}

/// Damage lines listed one by one before the rest are summarized.
const MAX_LISTED: usize = 1000;

/// Checks an archive completely (see the module docs), and compares it with the original file
/// if `opts.against` names it. Returns the report: damage is listed there, not returned as an
/// error.
///
/// ```no_run
/// use nc3pack::{verify, VerifyOptions};
/// let report = verify("/tmp/sst.nc3z".as_ref(), &VerifyOptions::default().with_threads(2))?;
/// assert!(report.is_intact());
/// let opts = VerifyOptions::default().with_against("/tmp/sst.nc");
/// assert_eq!(verify("/tmp/sst.nc3z".as_ref(), &opts)?.original_matches, Some(true));
/// # Ok::<(), nc3pack::Error>(())
/// ```
///
/// # Errors
///
/// Only when the archive cannot be checked at all: [`Error::Io`] when it (or the original)
/// cannot be opened or read, [`Error::NotSeekable`] for an archive that is a pipe or device,
/// [`Error::Thread`] when a worker thread cannot be started, [`Error::NoMemory`] when a block
/// or frame does not fit in memory.
pub fn verify(path: &Path, opts: &crate::VerifyOptions) -> Result<VerifyReport> {
    let (against, threads) = (opts.against.as_deref(), opts.threads);
    let f = crate::read::input::open_input_with(path, opts.remote.as_ref(), "verify")?;
    let mut report = VerifyReport::default();
    // Damage from the error's variant: the part, block and offset it names, and its cause.
    let to_damage = |e: Error| match e {
        Error::Archive {
            part,
            offset,
            source,
            ..
        } => Damage {
            part,
            block: None,
            offset,
            what: source.into(),
        },
        Error::Block {
            var,
            block,
            offset,
            source,
            ..
        } => Damage {
            part: "block",
            block: Some((var, block)),
            offset,
            what: source.into(),
        },
        other => Damage {
            part: "archive",
            block: None,
            offset: 0,
            what: Problem::Other(SharedError::new(other)),
        },
    };
    match Archive::from_reader(f, path) {
        Ok(mut a) => {
            a.set_threads(threads);
            a.set_cache_budget(0);
            verify_open(&a, &mut report, threads, &to_damage)?;
        }
        Err(Error::Io { path, op, source }) => return Err(Error::Io { path, op, source }),
        Err(e) => {
            report.damage.push(to_damage(e));
            // Without a usable index, scan the frames to list what else is damaged or missing.
            let f = crate::read::input::open_input_with(path, opts.remote.as_ref(), "verify")?;
            let f = crate::format::compact::Expanded::new(f).map_err(io_err(path, "read"))?;
            let len = f.size().map_err(io_err(path, "stat"))?;
            if let Ok((_, _, header, sizes, layout, start)) = read_front_layout(&f, path, len) {
                let all = streams_with(&layout, &sizes);
                let sc =
                    scan_for(&f, start, len, fits_layout(&all)).map_err(io_err(path, "read"))?;
                let mut damaged = sc.damaged.clone();
                let constants =
                    scanned_constants(&f, &sc, &all, &mut damaged).map_err(io_err(path, "read"))?;
                for d in damaged {
                    report.damage.push(Damage {
                        part: "data section",
                        block: None,
                        offset: d.offset,
                        what: Problem::Scanned {
                            what: d.what,
                            len: d.len,
                        },
                    });
                }
                let mut missing = 0u64;
                for s in all {
                    for b in 0..s.blocks() {
                        report.blocks += 1;
                        if !sc.frames.contains_key(&(s.id, b)) && constants.value(s.id, b).is_none()
                        {
                            missing += 1;
                            if report.damage.len() < MAX_LISTED {
                                report.damage.push(Damage {
                                    part: "block",
                                    block: Some((stream_name(&header, s.id), b)),
                                    offset: 0,
                                    what: Problem::NoIntactFrame,
                                });
                            }
                        }
                    }
                }
                let listed = report.damage.iter().filter(|d| d.block.is_some()).count() as u64;
                if missing > listed {
                    report.damage.push(Damage {
                        part: "data section",
                        block: None,
                        offset: start,
                        what: Problem::MoreMissing {
                            count: missing - listed,
                        },
                    });
                }
            }
        }
    }
    if let Some(orig) = against {
        if let Ok(a) = Archive::open(path) {
            if let Some(lossy) = crate::quantize::Lossy::of(a.header()) {
                let cmp = crate::pack::lossy::compare_with_original(&a, &lossy, orig)?;
                report.original_matches = Some(
                    cmp.original_recorded
                        && cmp.others_equal
                        && cmp.vars.iter().all(|v| v.within_bound),
                );
                report.lossy = Some(cmp);
                return Ok(report);
            }
        }
        let stored = Archive::open(path)
            .ok()
            .map(|a| (a.original_hash(), a.layout().file_len));
        // Read in order: the original may be a pipe.
        let of = std::fs::File::open(orig).map_err(io_err(orig, "open"))?;
        let (h, olen) = hash_stream(of).map_err(io_err(orig, "read"))?;
        report.original_matches = Some(stored == Some((h, olen)));
    }
    Ok(report)
}

fn verify_open<R: ReadAt>(
    a: &Archive<R>,
    report: &mut VerifyReport,
    threads: usize,
    to_damage: &dyn Fn(Error) -> Damage,
) -> Result<()> {
    // 1. Every frame's checksums (read, no decompression), in parallel.
    let blocks: Vec<(usize, u64)> = a.blocks().collect();
    report.blocks = blocks.len() as u64;
    a.prefetch_blocks(blocks.iter().copied())?;
    let mut damaged = Vec::new();
    let threads = crate::parallel::bound_threads(threads);
    crate::parallel::ordered_map(
        &blocks,
        threads,
        threads * 4,
        |&(s, b)| a.check_block(s, b),
        |_, r| {
            if let Err(e) = r {
                damaged.push(e);
            }
            Ok::<(), WorkerError>(())
        },
    )
    .map_err(worker_err(a.path()))?;
    // Not damage: a frame the machine has no memory for cannot be checked.
    if let Some(i) = damaged
        .iter()
        .position(|e| matches!(e, Error::NoMemory { .. }))
    {
        return Err(damaged.swap_remove(i));
    }
    report.damage.extend(damaged.into_iter().map(to_damage));
    // 2. The frames tile the data section, from the header frame to the index.
    let mut spans: Vec<(u64, u64)> = blocks
        .iter()
        .map(|&(s, b)| a.entry(s, b))
        .chain(a.constants_frames())
        .filter(|e| !e.is_lost() && !e.is_constant())
        .map(|e| (e.offset, e.frame_len()))
        .collect();
    spans.sort_unstable();
    let mut pos = a.data_start();
    for (off, n) in spans {
        if off != pos {
            report.damage.push(Damage {
                part: "data section",
                block: None,
                offset: pos.min(off),
                what: if off > pos {
                    Problem::Unindexed { len: off - pos }
                } else {
                    Problem::Overlap
                },
            });
        }
        pos = pos.max(off + n);
    }
    if pos != a.index_offset() {
        report.damage.push(Damage {
            part: "data section",
            block: None,
            offset: pos,
            what: Problem::BeforeIndex,
        });
    }
    // 3. The constants frames list exactly the constant blocks, with their elements, so that
    // a scan would find them.
    check_constants(a, report, to_damage);
    // 4. The lead's record count is the one the header and the file length give (as the writer
    // counts them, for a file or a stream); where it changes no block, nothing else would notice.
    let lead = a.lead();
    match crate::nc3::Layout::new(a.header(), lead.file_len) {
        Ok(l) if l.numrecs == lead.numrecs => {}
        Ok(l) => report.damage.push(Damage {
            part: "lead",
            block: None,
            offset: 24,
            what: Problem::RecordCount {
                stored: lead.numrecs,
                expected: l.numrecs,
                file_len: lead.file_len,
            },
        }),
        Err(e) => report.damage.push(Damage {
            part: "lead",
            block: None,
            offset: 0,
            what: Problem::HeaderVsLength {
                file_len: lead.file_len,
                source: e,
            },
        }),
    }
    // 5. Decode everything and compare the restored file's hash.
    if report.damage.is_empty() {
        match crate::read::unpack::unpack_to(
            a,
            std::io::sink(),
            Path::new("(verify)"),
            threads,
            &|_| {},
        ) {
            Ok(h) if h == a.original_hash() => report.hash_checked = true,
            Ok(h) => report.damage.push(Damage {
                part: "hash",
                block: None,
                offset: 0,
                what: Problem::Hash {
                    got: h,
                    expected: a.original_hash(),
                },
            }),
            // Not damage: the check could not run (no thread, no memory), or nc3pack has a bug.
            Err(e @ (Error::Thread { .. } | Error::NoMemory { .. } | Error::Internal(_))) => {
                return Err(e)
            }
            Err(e) => report.damage.push(to_damage(e)),
        }
    }
    Ok(())
}

/// Checks that every constant block is listed by exactly one run of a constants frame, with its
/// element, and that every run lists constant blocks.
fn check_constants<R: ReadAt>(
    a: &Archive<R>,
    report: &mut VerifyReport,
    to_damage: &dyn Fn(Error) -> Damage,
) {
    let by_id: HashMap<u32, usize> = (0..a.stream_count())
        .filter(|&s| a.block_count(s) > 0)
        .map(|s| (a.stream_id(s), s))
        .collect();
    let mut listed: std::collections::HashSet<(usize, u64)> = std::collections::HashSet::new();
    for k in 0..a.constants_frames().len() {
        let offset = a.constants_frames()[k].offset;
        let mut bad = |what: Problem| {
            report.damage.push(Damage {
                part: "constants frame",
                block: None,
                offset,
                what,
            })
        };
        let runs = match a.constant_runs(k) {
            Ok(runs) => runs,
            Err(e) => {
                report.damage.push(to_damage(e));
                continue;
            }
        };
        for r in runs {
            let Some(&s) = by_id.get(&r.stream) else {
                bad(Problem::RunOfNoStream {
                    k,
                    stream: r.stream,
                });
                continue;
            };
            if r.first + r.count > a.block_count(s) {
                bad(Problem::RunPastEnd {
                    k,
                    first: r.first,
                    end: r.first + r.count,
                    stream: a.stream_name(s),
                    blocks: a.block_count(s),
                });
                continue;
            }
            for b in r.first..r.first + r.count {
                let e = a.entry(s, b);
                if !e.is_constant() || e.offset.to_le_bytes() != r.value {
                    bad(Problem::NotThatConstant {
                        k,
                        block: b,
                        stream: a.stream_name(s),
                    });
                    break;
                }
                if !listed.insert((s, b)) {
                    bad(Problem::ListedTwice {
                        k,
                        block: b,
                        stream: a.stream_name(s),
                    });
                    break;
                }
            }
        }
    }
    let unlisted: Vec<(usize, u64)> = a
        .blocks()
        .filter(|&(s, b)| a.entry(s, b).is_constant() && !listed.contains(&(s, b)))
        .collect();
    if let Some(&(s, b)) = unlisted.first() {
        report.damage.push(Damage {
            part: "index",
            block: Some((a.stream_name(s), b)),
            offset: a.index_offset(),
            what: Problem::Unlisted {
                count: unlisted.len(),
            },
        });
    }
}

/// The xxh3-128 hash and the length of everything `r` yields.
fn hash_stream(mut r: impl std::io::Read) -> std::io::Result<(u128, u64)> {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 4 << 20];
    let mut len = 0u64;
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => return Ok((h.digest128(), len)),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        h.update(&buf[..n]);
        len += n as u64;
    }
}
