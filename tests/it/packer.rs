//! `Packer`: packing from any reader, or a file, into any writer gives the archive `pack_file`
//! writes.

use crate::util::{sample, samples_dir, temp_dir};
use nc3pack::{pack_file, PackOptions, Packer};
use std::io::{Cursor, Read, Seek, Write};
use std::path::PathBuf;

/// A reader that is only a reader (no seek, no length): the packer must take it as a stream.
struct Pipe(std::fs::File);

impl Read for Pipe {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // Short reads, as a pipe gives.
        let n = buf.len().min(4093);
        self.0.read(&mut buf[..n])
    }
}

fn samples() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(samples_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "nc"))
        .collect();
    v.sort();
    assert!(v.len() >= 10, "{v:?}");
    v
}

#[test]
fn a_packer_writes_the_archive_pack_file_writes_from_a_reader_or_a_file() {
    let dir = temp_dir();
    let quantized = PackOptions::default().with_quantize("sst=bitround:8".parse().unwrap());
    for (k, opts) in [
        PackOptions::default(),
        PackOptions::max().with_block_size(4096),
    ]
    .into_iter()
    .enumerate()
    {
        for input in samples() {
            let z = dir.path().join(format!("{k}.nc3z"));
            pack_file(&input, &z, &opts.clone().with_force(true)).unwrap();
            let want = std::fs::read(&z).unwrap();
            let name = input.display().to_string();
            let packer = Packer::new(opts.clone()).with_names(&input, "out.nc3z");
            let mut out = Cursor::new(Vec::new());
            let s = packer
                .pack(Pipe(std::fs::File::open(&input).unwrap()), &mut out)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(out.get_ref() == &want, "{name}: pack from a reader differs");
            assert_eq!(s.output_len, want.len() as u64, "{name}");
            let mut out = Cursor::new(Vec::new());
            packer.pack_file(&input, &mut out).unwrap();
            assert!(
                out.get_ref() == &want,
                "{name}: pack_file into a writer differs"
            );
        }
    }
    // A quantized file: the same lossy archive, from a reader too.
    let input = sample("gridded_sst.nc");
    let z = dir.path().join("q.nc3z");
    pack_file(&input, &z, &quantized).unwrap();
    let want = std::fs::read(&z).unwrap();
    let packer = Packer::new(quantized).with_names(&input, dir.path().join("out.nc3z"));
    let mut out = Cursor::new(Vec::new());
    let s = packer
        .pack(Pipe(std::fs::File::open(&input).unwrap()), &mut out)
        .unwrap();
    assert!(
        out.get_ref() == &want,
        "quantized: pack from a reader differs"
    );
    assert!(s.original.is_some());
}

#[test]
fn a_packer_writes_from_the_writers_position_on() {
    let input = sample("classic_records.nc");
    let dir = temp_dir();
    let z = dir.path().join("a.nc3z");
    pack_file(&input, &z, &PackOptions::default()).unwrap();
    let want = std::fs::read(&z).unwrap();
    let mut out = Cursor::new(Vec::new());
    out.write_all(b"something before the archive").unwrap();
    let start = out.stream_position().unwrap() as usize;
    Packer::new(PackOptions::default().with_compact(false))
        .pack_file(&input, &mut out)
        .unwrap();
    pack_file(
        &input,
        &z,
        &PackOptions::default().with_compact(false).with_force(true),
    )
    .unwrap();
    let full = std::fs::read(&z).unwrap();
    assert_ne!(full, want, "the full form differs from the compact form");
    assert_eq!(&out.get_ref()[..start], b"something before the archive");
    assert!(
        out.get_ref()[start..] == full[..],
        "the archive after the prefix differs"
    );
}

#[test]
fn a_packer_names_its_input_in_errors() {
    let mut out = Cursor::new(Vec::new());
    let e = Packer::new(PackOptions::default())
        .with_names("stdin.nc", "out.nc3z")
        .pack(&b"CDF\x01\x00\x00"[..], &mut out)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("stdin.nc: "), "{e}");
    let e = Packer::new(PackOptions::default())
        .pack(&b"not netCDF at all"[..], &mut out)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("<input>: not a netCDF-3 file"), "{e}");
}
