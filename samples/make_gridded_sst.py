#!/usr/bin/env python3
"""Generate gridded_sst.nc: a realistic CDF-2 (64-bit offset) gridded demo.

float sst(time=UNLIMITED[24], lat=180, lon=360), ~6.2 MB: a smooth
latitude/season-dependent field plus small noise, with an idealised land mask
stored as _FillValue. Reproducible: fixed numpy seed, fixed history string,
and no time-dependent metadata.

Usage: python3 make_gridded_sst.py [output.nc]   (default: next to this script)
Then:  ncdump -h gridded_sst.nc > gridded_sst.cdl
Needs: pip install netCDF4 numpy
"""
import os
import sys

import numpy as np
import netCDF4

FILL = np.float32(-999.0)
NT, NLAT, NLON = 24, 180, 360


def land_mask(lat2d, lon2d):
    """Idealised continents: a few smooth blobs plus polar caps."""
    def blob(lat0, lon0, rlat, rlon):
        dlon = (lon2d - lon0 + 180.0) % 360.0 - 180.0
        return ((lat2d - lat0) / rlat) ** 2 + (dlon / rlon) ** 2 < 1.0
    land = (
        blob(45, 90, 30, 70)      # "Eurasia"
        | blob(5, 20, 30, 22)     # "Africa"
        | blob(45, -100, 22, 30)  # "North America"
        | blob(-15, -60, 25, 18)  # "South America"
        | blob(-25, 135, 12, 20)  # "Australia"
        | (lat2d < -70)           # "Antarctica"
        | (lat2d > 82)            # polar cap
    )
    return land


def main(path):
    rng = np.random.default_rng(20240501)
    lat = np.linspace(-89.5, 89.5, NLAT, dtype=np.float32)
    lon = np.linspace(-179.5, 179.5, NLON, dtype=np.float32)
    time = np.arange(NT, dtype=np.float64) * 30.0 + 15.0  # mid-month, days
    lat2d, lon2d = np.meshgrid(lat.astype(np.float64), lon.astype(np.float64), indexing="ij")
    land = land_mask(lat2d, lon2d)

    ds = netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_OFFSET")
    ds.Conventions = "CF-1.8"
    ds.title = "Synthetic monthly sea surface temperature (nc3pack demo)"
    ds.institution = "nc3pack samples"
    ds.source = "make_gridded_sst.py: analytic field + N(0, 0.15 K) noise, seed 20240501"
    ds.history = "2024-05-01T00:00:00Z created by samples/make_gridded_sst.py"
    ds.references = "none; synthetic data"

    ds.createDimension("time", None)
    ds.createDimension("lat", NLAT)
    ds.createDimension("lon", NLON)

    vt = ds.createVariable("time", "f8", ("time",))
    vt.units = "days since 2000-01-01 00:00:00"
    vt.calendar = "360_day"
    vt.standard_name = "time"
    vt.long_name = "time"
    vt.axis = "T"

    vlat = ds.createVariable("lat", "f4", ("lat",))
    vlat.units = "degrees_north"
    vlat.standard_name = "latitude"
    vlat.long_name = "latitude"
    vlat.axis = "Y"

    vlon = ds.createVariable("lon", "f4", ("lon",))
    vlon.units = "degrees_east"
    vlon.standard_name = "longitude"
    vlon.long_name = "longitude"
    vlon.axis = "X"

    vsst = ds.createVariable("sst", "f4", ("time", "lat", "lon"), fill_value=FILL)
    vsst.units = "K"
    vsst.standard_name = "sea_surface_temperature"
    vsst.long_name = "sea surface temperature"
    vsst.valid_min = np.float32(268.0)
    vsst.valid_max = np.float32(310.0)
    vsst.comment = "land points are _FillValue"

    vlat[:] = lat
    vlon[:] = lon
    vt[:] = time

    phi = np.deg2rad(lat2d)
    lam = np.deg2rad(lon2d)
    base = 271.5 + 30.0 * np.cos(phi) ** 2 + 1.5 * np.sin(2 * lam) * np.cos(phi) ** 3
    for t in range(NT):
        season = np.sin(2 * np.pi * t / 12.0)
        field = base + 3.0 * season * np.sin(phi) * np.cos(phi)
        field = field + rng.normal(0.0, 0.15, size=field.shape)
        field = np.maximum(field, 271.35)  # sea water freezing point
        field = np.where(land, FILL, field).astype(np.float32)
        vsst[t, :, :] = field
    ds.close()


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "gridded_sst.nc")
    main(out)
