#!/usr/bin/env python3
"""Write a model-output-like file of many record variables, deterministically (fixed seed).

    python3 bench/make_records.py OUT.nc [--records N] [--vars V]

OUT.nc is a CDF-2 (64-bit offset) file on a 2-degree grid (lat=91, lon=180) holding V (default
24) record variables var00.. float(time=UNLIMITED=N, lat, lon), each a smooth field of its own
that drifts from record to record, plus noise, with the coordinate variables time, lat and lon:
what `cdo timmean` of a file with many record variables reads (the original interleaves the
variables record by record). Each record is V * 65,520 bytes: 120 records (the default) of 24
variables make a 189 MB file. Written to a temporary name and renamed.

Needs python3 with numpy and netCDF4 (pip install numpy netCDF4).
"""

import argparse
import os
import sys

import numpy as np

try:
    import netCDF4
except ImportError:  # pragma: no cover
    sys.exit("make_records.py needs the netCDF4 module: pip install netCDF4 numpy")

from make_corpus import smooth_noise  # bench/make_corpus.py, beside this script


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--records", type=int, default=120, help="records (default 120)")
    ap.add_argument("--vars", type=int, default=24, help="record variables (default 24)")
    a = ap.parse_args()
    rng = np.random.default_rng(20261206)
    ny, nx = 91, 180
    bases = [
        200.0 * k + 10.0 * smooth_noise(rng, (ny, nx), scale=nx / 12)
        for k in range(a.vars)
    ]
    drifts = [smooth_noise(rng, (ny, nx), scale=nx / 8) for _ in range(a.vars)]
    tmp = a.out + ".tmp"
    with netCDF4.Dataset(tmp, "w", format="NETCDF3_64BIT_OFFSET") as ds:
        ds.title = "Synthetic model output, many record variables (nc3pack mount benchmark)"
        ds.Conventions = "CF-1.8"
        ds.createDimension("time", None)
        ds.createDimension("lat", ny)
        ds.createDimension("lon", nx)
        v = ds.createVariable("time", "f8", ("time",))
        v.units, v.calendar = "days since 2000-01-01 00:00:00", "standard"
        v = ds.createVariable("lat", "f8", ("lat",))
        v.units, v[:] = "degrees_north", np.linspace(-90.0, 90.0, ny)
        v = ds.createVariable("lon", "f8", ("lon",))
        v.units, v[:] = "degrees_east", np.arange(nx) * 2.0
        out = []
        for k in range(a.vars):
            v = ds.createVariable(f"var{k:02d}", "f4", ("time", "lat", "lon"))
            v.units = "1"
            v.set_auto_mask(False)
            out.append(v)
        for t in range(a.records):
            ds["time"][t] = float(t)
            for k, v in enumerate(out):
                field = bases[k] + np.sin(0.1 * t + k) * drifts[k]
                field += rng.normal(0.0, 0.05, field.shape)
                v[t] = field.astype(np.float32)
    os.replace(tmp, a.out)
    print(
        f"make_records: wrote {a.out} ({os.path.getsize(a.out):,} bytes)",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
