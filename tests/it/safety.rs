//! Safe writes: a failing writer, a full disk and a killed process leave no output at the
//! destination and the input untouched.

use crate::util::{sample, temp_dir, BIN};
use nc3pack::{PackOptions, Packer};
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::process::Command;

/// A writer that fails once `limit` bytes have been written.
struct FailAfter {
    written: u64,
    limit: u64,
}

impl Write for FailAfter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.written + buf.len() as u64 > self.limit {
            return Err(std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                "disk full (test)",
            ));
        }
        self.written += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Seek for FailAfter {
    fn seek(&mut self, _: SeekFrom) -> std::io::Result<u64> {
        Ok(0)
    }
}

/// Packs `name` into writers that fail after each of `limits` bytes: every attempt must end in a
/// write error naming the output.
fn assert_write_failures_reported(name: &str, block_size: u32, limits: &[u64]) {
    let input = sample(name);
    for &limit in limits {
        let mut w = FailAfter { written: 0, limit };
        let opts = PackOptions::default().with_block_size(block_size);
        let r = Packer::new(opts)
            .with_names(&input, "out.nc3z")
            .pack_file(&input, &mut w);
        let e = r.unwrap_err().to_string();
        assert!(
            e.starts_with("out.nc3z: write: disk full"),
            "{name}, limit {limit}: {e}"
        );
    }
}

/// Large inputs go through the encoder pipeline; small ones are packed inline: both report.
#[test]
fn a_failing_writer_is_reported_as_a_write_error() {
    assert_write_failures_reported("gridded_sst.nc", 64 << 10, &[0, 100, 5000, 1 << 20]);
    assert_write_failures_reported("classic_records.nc", 16, &[0, 100, 1000]);
}

fn snapshot(p: &Path) -> (Vec<u8>, std::time::SystemTime) {
    (
        std::fs::read(p).unwrap(),
        std::fs::metadata(p).unwrap().modified().unwrap(),
    )
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A full disk (a 256 KiB tmpfs): pack fails with "No space left", nothing is left there.
/// Needs root to mount; skipped (with a message) where mounting is not allowed.
#[test]
fn a_full_disk_leaves_nothing_behind() {
    let dir = temp_dir();
    let mnt = dir.path().join("tiny");
    std::fs::create_dir(&mnt).unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(&mnt)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        crate::util::skip("cannot mount a tmpfs here (needs root)");
        return;
    }
    let input = sample("gridded_sst.nc");
    let before = snapshot(&input);
    let out = mnt.join("out.nc3z");
    let o = Command::new(BIN).arg(&input).arg(&out).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    let listing = entries(&mnt);
    let _ = Command::new("umount").arg(&mnt).status();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(listing.is_empty(), "left behind: {listing:?}");
    assert!(snapshot(&input) == before);
}

/// Killing pack midway leaves no file at the destination (only the hidden temporary file, which
/// a later run does not mistake for output) and the input untouched.
#[test]
fn killing_pack_midway_leaves_no_output() {
    let dir = temp_dir();
    // A 96 MiB classic file: header for one float record variable, then data.
    let input = dir.path().join("big.nc");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&input).unwrap());
        let mut h = b"CDF\x01".to_vec();
        h.extend_from_slice(&96u32.to_be_bytes()); // numrecs
        h.extend_from_slice(&[0, 0, 0, 0x0A, 0, 0, 0, 2]); // two dims
        h.extend_from_slice(&[0, 0, 0, 1, b't', 0, 0, 0, 0, 0, 0, 0]); // t = UNLIMITED
        h.extend_from_slice(&[0, 0, 0, 1, b'x', 0, 0, 0, 0, 4, 0, 0]); // x = 262144
        h.extend_from_slice(&[0; 8]); // no global attributes
        h.extend_from_slice(&[0, 0, 0, 0x0B, 0, 0, 0, 1]); // one variable
        h.extend_from_slice(&[
            0, 0, 0, 1, b'v', 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1,
        ]);
        h.extend_from_slice(&[0; 8]); // no attributes
        h.extend_from_slice(&[0, 0, 0, 5, 0, 0x10, 0, 0]); // float, vsize 1 MiB
        let begin = h.len() as u32 + 4;
        h.extend_from_slice(&begin.to_be_bytes());
        f.write_all(&h).unwrap();
        let mut x = 1u32;
        let rec: Vec<u8> = (0..262144)
            .flat_map(|_| {
                x = x.wrapping_mul(1664525).wrapping_add(1013904223);
                ((x >> 8) as f32).to_be_bytes()
            })
            .collect();
        for _ in 0..96 {
            f.write_all(&rec).unwrap();
        }
    }
    let before = snapshot(&input);
    let out = dir.path().join("out.nc3z");
    let mut child = Command::new(BIN)
        .args(["-q", "-j", "1"])
        .arg(&input)
        .arg(&out)
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(150));
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(
        !status.success(),
        "pack finished before it was killed; make the input larger"
    );
    assert!(
        !out.exists(),
        "a killed pack left output at the destination"
    );
    assert!(snapshot(&input) == before);
    for name in entries(dir.path()) {
        assert!(
            name == "big.nc" || name.starts_with(".nc3pack-"),
            "unexpected file {name}"
        );
    }
    // A new run is not disturbed by the leftover temporary file.
    let o = Command::new(BIN)
        .arg("-q")
        .arg(&input)
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// An input written to while it is packed (a program still appending to it, here from the
/// progress callback, so that the write surely falls inside the pack) gives no archive: an
/// error naming the file and what changed, and nothing at the output.
#[test]
fn an_input_written_to_while_it_is_packed_gives_no_archive() {
    let dir = crate::util::temp_dir();
    let nc = dir.path().join("growing.nc");
    std::fs::copy(crate::util::sample("gridded_sst.nc"), &nc).unwrap();
    let out = dir.path().join("growing.nc3z");
    let path = nc.clone();
    let done = std::sync::atomic::AtomicBool::new(false);
    let opts = nc3pack::PackOptions::default()
        .with_threads(1)
        .with_progress(move |_| {
            if !done.swap(true, std::sync::atomic::Ordering::SeqCst) {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .unwrap();
                f.write_all(&[0u8; 4]).unwrap();
            }
        });
    let e = nc3pack::pack_file(&nc, &out, &opts).unwrap_err();
    assert!(matches!(e, nc3pack::Error::ChangedWhileRead { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.starts_with(&format!(
            "{}: changed while it was packed (length ",
            nc.display()
        )),
        "{text}"
    );
    assert!(!out.exists());
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
    // Unchanged, it packs.
    let opts = nc3pack::PackOptions::default().with_threads(1);
    nc3pack::pack_file(&nc, &out, &opts).unwrap();
}
