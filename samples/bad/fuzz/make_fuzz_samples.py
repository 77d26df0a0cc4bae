#!/usr/bin/env python3
"""Rebuilds the fuzzing findings in this directory (see fuzz/README.md, findings F1-F5).

Usage: python3 make_fuzz_samples.py [OUTDIR] [--nc3pack PATH]

The .nc files are written byte by byte. The archive findings (F2, F3, F4) were made in format
1.0 as of commit bccc96b (48-byte lead, header copy + CRC32C, 48-byte footer); the functions
`lead`, `f3_declares_2g_blocks` and `f4_header_len_longer_than_header` below document them in
that layout and are not run: the cases live on as generated archives in tests/it/hostile.rs.
The current layout (64-byte lead with the hash, header frame, 32-byte footer) is in
design/FORMAT.md; a new archive finding would be written in it.
"""
import os
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))

_T = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _T.append(_c)


def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = _T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283

be32 = lambda x: struct.pack(">I", x)
be64 = lambda x: struct.pack(">Q", x)


def lead(file_len, numrecs, header_len, block_size):
    b = bytearray(48)
    b[0:8] = b"\x89NC3Z\r\n\x1a"
    struct.pack_into("<HHIQQQI", b, 8, 1, 0, 0, file_len, numrecs, header_len, block_size)
    struct.pack_into("<I", b, 44, crc32c(b[:44]))
    return bytes(b)


def f1_fixed_var_end_wraps():
    """CDF-5, int x(n), n = 2^61+1 (2^63+4 bytes), begin 2^63-1: begin + size wraps u64."""
    h = b"CDF\x05" + be64(0)
    h += be32(0x0A) + be64(1) + be64(1) + b"n\0\0\0" + be64(2**61 + 1)
    h += be32(0) + be64(0)
    h += be32(0x0B) + be64(1)
    h += be64(1) + b"x\0\0\0" + be64(1) + be64(0) + be32(0) + be64(0) + be32(4) + be64(0)
    h += be64(2**63 - 1)
    return h + b"\0" * 16


def f1b_record_var_end_wraps():
    """CDF-5, int x(t, n), t unlimited, n = 2^61+1, begin 2^63-1: begin + slab wraps u64."""
    h = b"CDF\x05" + be64(0)
    h += be32(0x0A) + be64(2) + be64(1) + b"t\0\0\0" + be64(0) + be64(1) + b"n\0\0\0"
    h += be64(2**61 + 1)
    h += be32(0) + be64(0)
    h += be32(0x0B) + be64(1)
    h += be64(1) + b"x\0\0\0" + be64(2) + be64(0) + be64(1) + be32(0) + be64(0) + be32(4)
    h += be64(0) + be64(2**63 - 1)
    return h + b"\0" * 16


def f5_no_record_vars_streaming():
    """CDF-1, numrecs = 0xFFFFFFFF (streaming), no dimensions, attributes or variables."""
    return b"CDF\x01\xff\xff\xff\xff" + b"\0" * 24


def f3_declares_2g_blocks():
    """Lead + the 80-byte header of samples/bad/huge_dim.nc (byte x(2^31-1) at 80) + its CRC +
    a footer with only its magic: 2^28 blocks of 8 bytes declared, none present."""
    h = open(os.path.join(ROOT, "samples", "bad", "huge_dim.nc"), "rb").read()[:80]
    out = lead(80 + 0x7FFFFFFF, 0, 80, 8) + h + struct.pack("<I", crc32c(h))
    footer = bytearray(48)
    footer[44:48] = b"N3Z\xef"
    struct.pack_into("<I", footer, 40, crc32c(footer[:40]))
    return out + bytes(footer)


def f4_header_len_longer_than_header():
    """Lead saying the header is 33 bytes; the header copy is an empty CDF-1 header (32 bytes)
    plus one byte. Nothing else: reindex recovers nothing, but writes an archive."""
    h = b"CDF\x01" + b"\0" * 28 + b"Z"
    return lead(4096, 0, len(h), 64) + h + struct.pack("<I", crc32c(h))


def pack(nc3pack, src, dst):
    subprocess.run([nc3pack, "pack", "-f", "-q", "--codec", "zstd", "--block-size", "64",
                    src, dst], check=True)


def main():
    args = sys.argv[1:]
    nc3pack = os.path.join(ROOT, "target", "release", "nc3pack")
    if "--nc3pack" in args:
        i = args.index("--nc3pack")
        nc3pack = args[i + 1]
        del args[i:i + 2]
    elif not os.path.exists(nc3pack):
        subprocess.run(["cargo", "build", "--release", "--bin", "nc3pack"], cwd=ROOT, check=True)
    out = args[0] if args else HERE
    os.makedirs(out, exist_ok=True)
    p = lambda name: os.path.join(out, name)

    open(p("layout_begin_plus_size_wraps.nc"), "wb").write(f1_fixed_var_end_wraps())
    open(p("layout_recvar_begin_plus_slab_wraps.nc"), "wb").write(f1b_record_var_end_wraps())
    open(p("no_record_vars_streaming_numrecs.nc"), "wb").write(f5_no_record_vars_streaming())
    # The archive findings (F2: a lead declaring more records than the original holds; F3: a
    # lead declaring 2^28 blocks; F4: a lead whose header length exceeds the header) were made
    # in format 1.0 before the header became a frame; they live on as generated cases in
    # tests/it/hostile.rs (lead_numrecs_beyond_original, lead_declares_2e30_blocks,
    # header_frame_wrong_length), and the functions above document the originals.


if __name__ == "__main__":
    main()
