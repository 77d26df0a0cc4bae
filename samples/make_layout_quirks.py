#!/usr/bin/env python3
"""Generate two valid classic files whose byte layout has bytes that no
variable or header field accounts for (a byte-exact packer must keep them):

header_gap.nc   : written, then reopened and a long global attribute deleted,
                  the way `ncatted -a history,global,d` edits a file in place.
                  netCDF-C rewrites the shorter header but does not move the
                  data, so between the end of the header and the first
                  variable's begin there is a gap still holding the stale
                  bytes of the old header (the deleted attribute's text).
trailing_bytes.nc: a normal file followed by 24 extra bytes after the end of
                  the last record (as left by a writer that crashed or an
                  append that was rolled back). ncdump ignores them.

Usage: python3 make_layout_quirks.py [OUTDIR]   (default: next to this script)
Needs: pip install netCDF4 numpy
"""
import os
import sys

import numpy as np
import netCDF4

HERE = os.path.dirname(os.path.abspath(__file__))


def header_gap(path):
    ds = netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC")
    ds.title = "header gap left by an in-place attribute delete"
    ds.history = ("2024-05-01 ncgen ...; 2024-05-02 ncks -O ...; " * 5).strip()
    ds.createDimension("time", None)
    ds.createDimension("n", 3)
    v = ds.createVariable("fixed", "i4", ("n",))
    v.long_name = "fixed int"
    v[:] = np.array([1, 2, 3], dtype=np.int32)
    t = ds.createVariable("time", "f8", ("time",))
    t.units = "days since 2000-01-01"
    q = ds.createVariable("q", "i2", ("time", "n"))  # 6 bytes/record, padded to 8
    t[:] = np.arange(4, dtype=np.float64)
    q[:] = np.arange(12, dtype=np.int16).reshape(4, 3)
    ds.close()
    ds = netCDF4.Dataset(path, "a")
    ds.delncattr("history")
    ds.close()


def trailing_bytes(path):
    ds = netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC")
    ds.title = "extra bytes after the last record"
    ds.createDimension("time", None)
    v = ds.createVariable("v", "f4", ("time",))
    w = ds.createVariable("w", "i1", ("time",))
    v[:] = np.array([1.5, 2.5, 3.5], dtype=np.float32)
    w[:] = np.array([-1, 0, 1], dtype=np.int8)
    ds.close()
    with open(path, "ab") as f:
        f.write(b"\x00\x01\x02\x03TRAILING JUNK BYTES!")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    header_gap(os.path.join(out, "header_gap.nc"))
    trailing_bytes(os.path.join(out, "trailing_bytes.nc"))


if __name__ == "__main__":
    main()
