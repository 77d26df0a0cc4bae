#!/usr/bin/env python3
"""Write the read benchmark's synthetic variable, deterministically (fixed seed).

    python3 bench/make_t2m.py OUT.nc [--records N]

OUT.nc is a CDF-2 (64-bit offset) file holding float t2m(time=UNLIMITED=N, lat=721, lon=1440), a
0.25-degree global grid: a smooth temperature field (latitude gradient, orography, travelling
planetary waves, a diurnal cycle over land) plus white noise of 0.25 K, with the coordinate
variables time, lat and lon. Each record is 4,152,960 bytes: 120 records (the default) make a
0.5 GB variable, 480 records a 2 GB one. The file is written to a temporary name and renamed, so
an interrupted run leaves nothing half-written.

Needs python3 with numpy and netCDF4 (pip install numpy netCDF4).
"""

import argparse
import os
import sys

import numpy as np

try:
    import netCDF4
except ImportError:  # pragma: no cover
    sys.exit("make_t2m.py needs the netCDF4 module: pip install netCDF4 numpy")

from make_corpus import smooth_noise  # bench/make_corpus.py, beside this script


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument(
        "--records", type=int, default=120, help="records along time (default 120)"
    )
    a = ap.parse_args()
    rng = np.random.default_rng(20261128)
    ny, nx = 721, 1440
    lat = np.linspace(-90.0, 90.0, ny)
    lon = np.arange(nx) * 0.25
    f = smooth_noise(rng, (ny, nx), scale=nx / 24)
    land = f > np.quantile(f, 0.7)
    latr = np.deg2rad(lat)[:, None]
    lonr = np.deg2rad(lon)[None, :]
    orog = np.where(land, np.abs(smooth_noise(rng, (ny, nx), scale=12)) * 6.0, 0.0)
    base = 300.0 - 48.0 * np.sin(latr) ** 2 - 4.0 * np.sin(latr) - orog
    waves = []
    for k in range(3, 9):
        amp = (
            rng.uniform(1.0, 3.5)
            * np.exp(-(((np.abs(lat) - 50.0) / 18.0) ** 2))[:, None]
        )
        waves.append((k, amp, rng.uniform(0, 2 * np.pi), rng.uniform(-0.25, 0.25)))
    tmp = a.out + ".tmp"
    with netCDF4.Dataset(tmp, "w", format="NETCDF3_64BIT_OFFSET") as ds:
        ds.title = "Synthetic 6-hourly 2 m temperature on a 0.25-degree grid (nc3pack read benchmark)"
        ds.Conventions = "CF-1.8"
        ds.createDimension("time", None)
        ds.createDimension("lat", ny)
        ds.createDimension("lon", nx)
        v = ds.createVariable("time", "f8", ("time",))
        v.units, v.calendar = "hours since 2020-01-01 00:00:00", "standard"
        v = ds.createVariable("lat", "f8", ("lat",))
        v.units, v[:] = "degrees_north", lat
        v = ds.createVariable("lon", "f8", ("lon",))
        v.units, v[:] = "degrees_east", lon
        t2m = ds.createVariable("t2m", "f4", ("time", "lat", "lon"))
        t2m.units, t2m.long_name = "K", "2 metre temperature"
        t2m.set_auto_mask(False)
        for t in range(a.records):
            hours = 6.0 * t
            ds["time"][t] = hours
            field = base.copy()
            for k, amp, ph, speed in waves:
                field += amp * np.cos(k * lonr + ph - speed * hours / 6.0)
            local = (hours + lon / 15.0) % 24.0
            field += np.where(
                land, 5.0 * np.cos(2 * np.pi * (local - 15.0) / 24.0)[None, :], 0.0
            )
            field += rng.normal(0.0, 0.25, field.shape)
            t2m[t] = field.astype(np.float32)
    os.replace(tmp, a.out)
    print(
        f"make_t2m: wrote {a.out} ({os.path.getsize(a.out):,} bytes)", file=sys.stderr
    )


if __name__ == "__main__":
    main()
