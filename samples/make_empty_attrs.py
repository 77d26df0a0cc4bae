#!/usr/bin/env python3
"""Write empty_attrs.nc (CDF-1) and empty_attrs_cdf5.nc (CDF-5) by hand.

These hold attributes with nelems = 0 for every type, which ncgen cannot
produce (ncgen stores "" as one NUL char) and netCDF4-python can only produce
for numeric types. A zero-length attribute has no value bytes and no padding.
ncdump prints every zero-length attribute as `= "" ;`, whatever its type, so
the CDL next to these files (ncdump output) does NOT round-trip through ncgen.

Layout (all big-endian):
  magic "CDF" ver | numrecs | dim_list | gatt_list | var_list | data
Usage: python3 make_empty_attrs.py [OUTDIR]   (default: next to this script)
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
NC_DIMENSION, NC_VARIABLE, NC_ATTRIBUTE = 0x0A, 0x0B, 0x0C
CLASSIC = {"byte": 1, "char": 2, "short": 3, "int": 4, "float": 5, "double": 6}
EXT = {"ubyte": 7, "ushort": 8, "uint": 9, "int64": 10, "uint64": 11}


def pad4(b):
    return b + b"\0" * (-len(b) % 4)


def build(version, types):
    cnt = (lambda n: struct.pack(">Q", n)) if version == 5 else (lambda n: struct.pack(">I", n))
    off = (lambda n: struct.pack(">I", n)) if version == 1 else (lambda n: struct.pack(">Q", n))

    def name(s):
        b = s.encode()
        return cnt(len(b)) + pad4(b)

    def att(nm, t, nelems, raw):
        return name(nm) + struct.pack(">I", t) + cnt(nelems) + pad4(raw)

    def att_list(atts):
        return struct.pack(">I", NC_ATTRIBUTE) + cnt(len(atts)) + b"".join(atts)

    gatts = [att("e_" + tn, t, 0, b"") for tn, t in types.items()]
    gatts.append(att("title", 2, 22, b"zero-length attributes"))
    vatts = [att("e_char", 2, 0, b""), att("e_double", 6, 0, b""), att("units", 2, 1, b"1")]

    dims = struct.pack(">I", NC_DIMENSION) + cnt(1) + name("n") + cnt(2)
    data = struct.pack(">ii", 1, 2)

    def header(begin):
        var = (name("v") + cnt(1) + cnt(0) + att_list(vatts)
               + struct.pack(">I", 4) + cnt(len(data)) + off(begin))
        vl = struct.pack(">I", NC_VARIABLE) + cnt(1) + var
        return b"CDF" + bytes([version]) + cnt(0) + dims + att_list(gatts) + vl

    h = header(0)
    h = header(len(h))  # begin = header length (same size on both passes)
    return h + data


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    with open(os.path.join(out, "empty_attrs.nc"), "wb") as f:
        f.write(build(1, CLASSIC))
    with open(os.path.join(out, "empty_attrs_cdf5.nc"), "wb") as f:
        f.write(build(5, {**CLASSIC, **EXT}))


if __name__ == "__main__":
    main()
