#!/usr/bin/env python3
"""Lossy quantization benchmark: nc3pack lossless, nc3pack --quantize bitround:NSB, and netCDF-4
written by netCDF4-python (netCDF-C) with the same quantization and zlib complevel 5 + shuffle,
on the float fields of the benchmark corpus's gridded.nc (python3 bench/make_corpus.py DIR).

    python3 bench/quantize.py CORPUS/gridded.nc [NC3PACK] [NSB...]

Prints a Markdown table: ratio (original bytes / output bytes) and wall time of each.
"""

import os
import subprocess
import sys
import tempfile
import time

import netCDF4

src = sys.argv[1]
exe = sys.argv[2] if len(sys.argv) > 2 else "nc3pack"
nsbs = [int(x) for x in sys.argv[3:]] or [10, 7]
VARS = ["t2m", "sst"]
size = os.path.getsize(src)
rows = []
tmp = tempfile.mkdtemp()


def timed(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def nc3pack(out, extra):
    subprocess.run([exe, "pack", "-q", "-f", *extra, src, out], check=True)


def netcdf4(out, nsb):
    with netCDF4.Dataset(src) as s, netCDF4.Dataset(out, "w", format="NETCDF4") as d:
        s.set_auto_maskandscale(False)
        d.setncatts({a: s.getncattr(a) for a in s.ncattrs()})
        for name, dim in s.dimensions.items():
            d.createDimension(name, None if dim.isunlimited() else len(dim))
        for name, v in s.variables.items():
            attrs = {a: v.getncattr(a) for a in v.ncattrs()}
            fill = attrs.pop("_FillValue", None)
            q = {}
            if name in VARS and nsb:
                q = dict(significant_digits=nsb, quantize_mode="BitRound")
            w = d.createVariable(name, v.dtype, v.dimensions, fill_value=fill, zlib=True,
                                 complevel=5, shuffle=True, **q)
            w.set_auto_maskandscale(False)
            w.setncatts(attrs)
            w[:] = v[:]


out = os.path.join(tmp, "a.nc3z")
t = timed(lambda: nc3pack(out, []))
rows.append(("nc3pack, lossless", os.path.getsize(out), t))
out4 = os.path.join(tmp, "a.nc4")
t = timed(lambda: netcdf4(out4, 0))
rows.append(("netCDF-4 zlib 5 + shuffle, lossless", os.path.getsize(out4), t))
for nsb in nsbs:
    q = ",".join(VARS) + f"=bitround:{nsb}"
    t = timed(lambda: nc3pack(out, ["--quantize", q]))
    rows.append((f"nc3pack --quantize {q}", os.path.getsize(out), t))
    t = timed(lambda: netcdf4(out4, nsb))
    rows.append((f"netCDF-4 zlib 5 + shuffle, BitRound NSB {nsb}", os.path.getsize(out4), t))
print(f"{os.path.basename(src)}: {size} bytes\n")
print("| output | bytes | ratio | time |")
print("|---|---:|---:|---:|")
for name, n, t in rows:
    print(f"| {name} | {n} | {size / n:.2f} | {t:.2f} s |")
for f in os.listdir(tmp):
    os.remove(os.path.join(tmp, f))
os.rmdir(tmp)
