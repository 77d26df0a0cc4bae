//! Unpacking: .nc3z archive in, the original netCDF-3 file out, byte for byte.
//!
//! The output is written in file order by walking the same segment partition that packing
//! walked, pulling each variable's bytes from its decoded blocks; blocks are decoded in parallel,
//! a bounded number ahead, in the order the walk first needs them. The output is hashed as it is
//! written and compared with the hash recorded at pack time before it is renamed into place.

use crate::archive::Archive;
use crate::error::{io_err, Error, Result};
use crate::io::ReadAt;
use crate::nc3::Target;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::mpsc::sync_channel;
use std::sync::Arc;
use xxhash_rust::xxh3::Xxh3;

/// Restores the original file from the archive `input` into `output`, atomically (see
/// [`crate::pack_file`]), after checking the restored bytes against the recorded hash. Returns the
/// number of bytes written. `progress` is called with the bytes written so far.
///
/// ```no_run
/// let n = nc3pack::unpack_file("/tmp/sst.nc3z".as_ref(), "/tmp/sst.nc".as_ref(), false, 2, &|_| {}).unwrap();
/// println!("{n} bytes restored");
/// ```
pub fn unpack_file(
    input: &Path,
    output: &Path,
    force: bool,
    threads: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<u64> {
    let archive = Archive::open(input)?;
    let lost = archive.lost_blocks();
    if let Some(&(s, b)) = lost.first() {
        let more = if lost.len() > 1 {
            format!(" and {} more", lost.len() - 1)
        } else {
            String::new()
        };
        return Err(Error::Block {
            path: input.to_path_buf(),
            var: archive.stream_name(s),
            block: b,
            offset: 0,
            what: format!(
                "block was lost (marked by reindex){more}; the original cannot be restored exactly"
            ),
        });
    }
    crate::atomic::write_atomically(output, force, input, |f| {
        let hash = unpack_to(&archive, f, output, threads, progress)?;
        if hash != archive.original_hash() {
            return Err(Error::HashMismatch {
                path: input.to_path_buf(),
                expected: archive.original_hash(),
                actual: hash,
            });
        }
        Ok(archive.layout().file_len)
    })
}

/// Writes the original file's bytes to `out` (named `out_path` in errors); returns their xxh3-128 hash (the caller compares it
/// with [`Archive::original_hash`]).
pub fn unpack_to<R: ReadAt, W: Write + Send>(
    archive: &Archive<R>,
    out: W,
    out_path: &Path,
    threads: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<u128> {
    let layout = archive.layout();
    let residual = archive.residual_stream();
    let stream_of = |t: Target| match t {
        Target::Var(i) => Some(i),
        Target::Residual => Some(residual),
        Target::Header => None,
    };
    // The order in which the walk first needs each block.
    let mut order: Vec<(usize, u64)> = Vec::new();
    let mut consumed = vec![0u64; archive.stream_count()];
    layout
        .walk(|seg| {
            if let Some(s) = stream_of(seg.target).filter(|&s| !archive.is_member(s)) {
                let bb = archive.block_bytes(s);
                let first = consumed[s].div_ceil(bb);
                consumed[s] += seg.len;
                let last = consumed[s].div_ceil(bb);
                order.extend((first..last).map(|b| (s, b)));
            }
            Ok::<(), ()>(())
        })
        .ok();

    let (tx, rx) = sync_channel::<Result<Vec<u8>>>(1);
    std::thread::scope(|sc| {
        let writer = sc.spawn(move || -> Result<u128> {
            let mut w = BufWriter::with_capacity(
                4 << 20,
                HashingWriter {
                    inner: out,
                    hash: Xxh3::new(),
                    count: 0,
                },
            );
            let werr = || io_err(out_path, "write");
            let mut cur: Vec<(Arc<Vec<u8>>, usize)> =
                vec![(Arc::default(), 0); archive.stream_count()];
            let mut last_report = 0u64;
            layout.walk(|seg| -> Result<()> {
                let Some(s) = stream_of(seg.target) else {
                    return w.write_all(archive.header_bytes()).map_err(werr());
                };
                let mut left = seg.len as usize;
                while left > 0 {
                    let (buf, pos) = &mut cur[s];
                    if *pos == buf.len() {
                        // A small stream comes whole from the shared stream; the others block
                        // by block, decoded ahead in the order the walk needs them.
                        *buf = if archive.is_member(s) {
                            archive.member_bytes(s)?
                        } else {
                            Arc::new(
                                rx.recv()
                                    .map_err(|_| Error::Internal("decoder stopped".into()))??,
                            )
                        };
                        *pos = 0;
                        if buf.is_empty() {
                            return Err(Error::Internal(format!(
                                "{} has fewer bytes than the layout",
                                archive.stream_name(s)
                            )));
                        }
                    }
                    let take = left.min(buf.len() - *pos);
                    w.write_all(&buf[*pos..*pos + take]).map_err(werr())?;
                    *pos += take;
                    left -= take;
                }
                let count = w.get_ref().count;
                if count - last_report >= 8 << 20 {
                    last_report = count;
                    progress(count);
                }
                Ok(())
            })?;
            w.flush().map_err(werr())?;
            progress(layout.file_len);
            Ok(w.get_ref().hash.digest128())
        });
        let decode = crate::parallel::ordered_map(
            &order,
            threads,
            threads * 2,
            |&(s, b)| archive.read_block(s, b),
            |_, r| {
                let failed = r.is_err();
                tx.send(r).map_err(|_| ())?;
                if failed {
                    Err(())
                } else {
                    Ok(())
                }
            },
        );
        drop(tx);
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(Error::Internal("writer panicked".into())));
        let _ = decode;
        written
    })
}

struct HashingWriter<W> {
    inner: W,
    hash: Xxh3,
    count: u64,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}
