#!/usr/bin/env python3
"""Regenerate the malformed netCDF inputs in this folder.

Every file is tiny and built byte by byte here (except hdf5.nc, which comes
from `ncgen -k nc4`, so it needs netcdf-bin). Running it twice gives the same
bytes (hdf5.nc comes from the installed netCDF/HDF5 library, so another
version of it may write different bytes).

Usage: python3 make_bad.py [OUTDIR] [--offsets]
  OUTDIR defaults to this script's folder; --offsets also prints the byte
  offsets of the corrupted fields (as listed in README.md).
"""
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
NC_DIMENSION, NC_VARIABLE, NC_ATTRIBUTE = 0x0A, 0x0B, 0x0C
NC_BYTE, NC_CHAR, NC_SHORT, NC_INT = 1, 2, 3, 4
OFFSETS = {}


def u32(n):
    return struct.pack(">I", n & 0xFFFFFFFF)


def pad4(b):
    return b + b"\0" * (-len(b) % 4)


def name(raw):
    return u32(len(raw)) + pad4(raw)


class Buf:
    """Byte builder that can remember where named fields start."""

    def __init__(self):
        self.b = bytearray()

    def put(self, data, mark=None):
        if mark:
            OFFSETS.setdefault(mark, len(self.b))
        self.b += data
        return self

    def __len__(self):
        return len(self.b)


def valid_classic(dim_name=b"n", fixed_begin=None, tag=None):
    """A small valid CDF-1 file:

    dims n=3, time=UNLIMITED (2 records); global att title;
    int v(n) (fixed) = 1,2,3 ; short r(time) = 7,8 (only record var).
    If fixed_begin is given, v's begin field is set to it instead.
    """
    def header(v_begin, r_begin):
        h = Buf()
        h.put(b"CDF\x01", tag and tag + ".magic")
        h.put(u32(2), tag and tag + ".numrecs")
        h.put(u32(NC_DIMENSION) + u32(2), tag and tag + ".dim_list")
        h.put(u32(len(dim_name)), tag and tag + ".dim0.name_len")
        h.put(pad4(dim_name), tag and tag + ".dim0.name")
        h.put(u32(3))
        h.put(name(b"time") + u32(0))
        h.put(u32(NC_ATTRIBUTE) + u32(1), tag and tag + ".gatt_list")
        h.put(name(b"title") + u32(NC_CHAR) + u32(5) + pad4(b"tiny!"))
        h.put(u32(NC_VARIABLE) + u32(2), tag and tag + ".var_list")
        h.put(name(b"v") + u32(1) + u32(0) + u32(0) + u32(0), tag and tag + ".var0")
        h.put(u32(NC_INT) + u32(12))
        h.put(u32(v_begin), tag and tag + ".var0.begin")
        h.put(name(b"r") + u32(1) + u32(1) + u32(0) + u32(0))
        h.put(u32(NC_SHORT) + u32(4) + u32(r_begin))
        return h

    hlen = len(header(0, 0))
    v_begin = hlen if fixed_begin is None else fixed_begin
    h = header(v_begin, hlen + 12)
    OFFSETS.setdefault((tag or "valid") + ".header_len", len(h))
    data = struct.pack(">3i", 1, 2, 3) + struct.pack(">2h", 7, 8)
    return bytes(h.b) + data


ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
OUT = ARGS[0] if ARGS else HERE


def write(fname, data):
    with open(os.path.join(OUT, fname), "wb") as f:
        f.write(data)


def main():
    # the valid file the corruptions start from (not written out; it is what
    # truncated_header.nc, bad_magic.nc and bad_version.nc were cut/patched from)
    good = valid_classic(tag="valid")

    # truncated_header.nc: cut in the middle of the global attribute list
    cut = OFFSETS["valid.gatt_list"] + 10
    OFFSETS["truncated_header.cut_at"] = cut
    write("truncated_header.nc", good[:cut])

    # bad_magic.nc: first 4 bytes 'CDX\x01'
    write("bad_magic.nc", b"CDX\x01" + good[4:])

    # bad_version.nc: 'CDF' + version byte 3
    write("bad_version.nc", b"CDF\x03" + good[4:])

    # huge_dim.nc: dim big = 0x7FFFFFFF and byte var x(big) whose data would
    # be 2 GiB; only 4 data bytes are present.
    h = Buf()
    h.put(b"CDF\x01" + u32(0))
    h.put(u32(NC_DIMENSION) + u32(1) + name(b"big"))
    h.put(u32(0x7FFFFFFF), "huge_dim.dim_length")
    h.put(u32(0) + u32(0))                       # gatt_list ABSENT
    h.put(u32(NC_VARIABLE) + u32(1) + name(b"x") + u32(1) + u32(0))
    h.put(u32(0) + u32(0))                       # vatt_list ABSENT
    h.put(u32(NC_BYTE))
    h.put(u32(0x80000000), "huge_dim.vsize")     # 0x7FFFFFFF rounded up to 4
    begin = len(h) + 4
    h.put(u32(begin), "huge_dim.begin")
    write("huge_dim.nc", bytes(h.b) + b"\x01\x02\x03\x04")

    # huge_name.nc: dimension name length 0x7FFFFFF0 in a 24-byte file
    h = Buf()
    h.put(b"CDF\x01" + u32(0) + u32(NC_DIMENSION) + u32(1))
    h.put(u32(0x7FFFFFF0), "huge_name.name_len")
    h.put(b"abcdefgh")
    write("huge_name.nc", bytes(h.b))

    # huge_nattrs.nc: global attribute count 0x7FFFFFFF, one attribute present
    h = Buf()
    h.put(b"CDF\x01" + u32(0) + u32(0) + u32(0))  # dim_list ABSENT
    h.put(u32(NC_ATTRIBUTE))
    h.put(u32(0x7FFFFFFF), "huge_nattrs.nelems")
    h.put(name(b"a") + u32(NC_INT) + u32(1) + u32(42))
    write("huge_nattrs.nc", bytes(h.b))

    # negative_count.nc: dimension count 0xFFFFFFF0 (-16 as int32)
    h = Buf()
    h.put(b"CDF\x01" + u32(0) + u32(NC_DIMENSION))
    h.put(u32(0xFFFFFFF0), "negative_count.nelems")
    h.put(name(b"n") + u32(3))
    h.put(u32(0) + u32(0) + u32(0) + u32(0))   # gatt_list, var_list ABSENT
    write("negative_count.nc", bytes(h.b))

    # bad_utf8_name.nc: the valid file with dimension "n" renamed to b"\xff\xfe"
    write("bad_utf8_name.nc", valid_classic(dim_name=b"\xff\xfe", tag="utf8"))

    # var_beyond_eof.nc: valid file whose fixed var v has begin = 1000000
    write("var_beyond_eof.nc", valid_classic(fixed_begin=1000000, tag="eof"))

    # truncated_data.nc: valid header and fixed data, but the file stops
    # 2 bytes short: the 2nd record of r (numrecs = 2) is missing
    OFFSETS["truncated_data.size"] = len(good) - 2
    write("../truncated_record.nc", good[:-2])  # valid for nc3pack: lives in samples/

    # streaming_numrecs.nc: numrecs = 0xFFFFFFFF, the spec's STREAMING marker
    # ("indeterminate length"); netCDF-C does not implement it and takes it as
    # 4294967295 records, far beyond the 2 records in the file
    write("../streaming_numrecs.nc", good[:4] + u32(0xFFFFFFFF) + good[8:])

    write("empty_file.nc", b"")
    write("text_file.nc", b"This is not a netCDF file.\nJust some ASCII text.\n")

    # hdf5.nc: a real netCDF-4 file
    cdl = "netcdf hdf5 {\ndimensions:\n\tn = 2 ;\nvariables:\n\tint v(n) ;\ndata:\n v = 1, 2 ;\n}\n"
    with tempfile.TemporaryDirectory() as td:
        p = os.path.join(td, "hdf5.cdl")
        with open(p, "w") as f:
            f.write(cdl)
        subprocess.run(["ncgen", "-k", "nc4", "-o", os.path.join(OUT, "hdf5.nc"), p], check=True)

    if "--offsets" in sys.argv:
        for k, v in OFFSETS.items():
            print(f"{k:32s} {v:6d}  0x{v:04x}")


if __name__ == "__main__":
    main()
