#!/usr/bin/env python3
"""Generate obs_points.nc: a record-heavy CDF-1 (classic) point-observation file.

20000 records along the unlimited dimension `obs`, 8 record variables, 40
bytes per record (one of them a short, padded 2 -> 4 bytes in each record):
  char station_id(obs, 8); int time(obs); float lat, lon, temp, pressure (obs);
  short quality_flag(obs); double obs_time(obs)
About 0.8 MB. Some temp/pressure values are missing (_FillValue).
Reproducible: fixed numpy seed and fixed metadata.

Usage: python3 make_obs_points.py [output.nc]   (default: next to this script)
Then:  ncdump -h obs_points.nc > obs_points.cdl
Needs: pip install netCDF4 numpy
"""
import os
import sys

import numpy as np
import netCDF4

NOBS = 20000
NSTATIONS = 60


def main(path):
    rng = np.random.default_rng(7)
    st_lat = rng.uniform(-60, 75, NSTATIONS).astype(np.float32)
    st_lon = rng.uniform(-180, 180, NSTATIONS).astype(np.float32)
    st_elev = rng.uniform(0, 2500, NSTATIONS)
    st_ids = np.array(["ST%04d%s" % (1000 + 37 * i, "ABCDEFGHIJ"[i % 10] if i % 3 else "")
                       for i in range(NSTATIONS)])

    station = rng.integers(0, NSTATIONS, NOBS)
    # observation times: sorted seconds over 30 days
    secs = np.sort(rng.integers(0, 30 * 86400, NOBS)).astype(np.int32)
    frac = rng.integers(0, 1000, NOBS) / 1000.0
    obs_time = 8766.0 + (secs + frac) / 86400.0  # days since 2000-01-01

    hour = (secs % 86400) / 3600.0
    lat = st_lat[station]
    lon = st_lon[station]
    temp = (288.0 - 0.4 * np.abs(lat) - 0.0065 * st_elev[station]
            + 5.0 * np.sin(2 * np.pi * (hour - 9) / 24.0)
            + rng.normal(0, 1.0, NOBS)).astype(np.float32)
    pressure = (1013.25 * np.exp(-st_elev[station] / 8434.0)
                + rng.normal(0, 3.0, NOBS)).astype(np.float32)
    qc = rng.choice(np.array([0, 1, 2, 3, 9], dtype=np.int16), NOBS,
                    p=[0.85, 0.08, 0.04, 0.02, 0.01])
    missing_t = rng.random(NOBS) < 0.02
    missing_p = rng.random(NOBS) < 0.05
    temp[missing_t] = np.float32(-9999.0)
    pressure[missing_p] = np.float32(-9999.0)
    qc[missing_t] = 9

    ds = netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC")
    ds.Conventions = "CF-1.8"
    ds.featureType = "point"
    ds.title = "Synthetic surface station observations (nc3pack demo)"
    ds.institution = "nc3pack samples"
    ds.history = "2024-05-01T00:00:00Z created by samples/make_obs_points.py"

    ds.createDimension("obs", None)
    ds.createDimension("id_len", 8)

    v = ds.createVariable("station_id", "S1", ("obs", "id_len"))
    v.long_name = "station identifier"
    v.cf_role = "timeseries_id"

    v = ds.createVariable("time", "i4", ("obs",))
    v.units = "seconds since 2024-01-01 00:00:00"
    v.standard_name = "time"
    v.long_name = "observation time (integer seconds)"

    v = ds.createVariable("lat", "f4", ("obs",))
    v.units = "degrees_north"
    v.standard_name = "latitude"

    v = ds.createVariable("lon", "f4", ("obs",))
    v.units = "degrees_east"
    v.standard_name = "longitude"

    v = ds.createVariable("temp", "f4", ("obs",), fill_value=np.float32(-9999.0))
    v.units = "K"
    v.standard_name = "air_temperature"
    v.coordinates = "time lat lon"

    v = ds.createVariable("pressure", "f4", ("obs",), fill_value=np.float32(-9999.0))
    v.units = "hPa"
    v.standard_name = "surface_air_pressure"
    v.coordinates = "time lat lon"

    v = ds.createVariable("quality_flag", "i2", ("obs",))
    v.long_name = "quality flag"
    v.flag_values = np.array([0, 1, 2, 3, 9], dtype=np.int16)
    v.flag_meanings = "good probably_good suspect bad missing"

    v = ds.createVariable("obs_time", "f8", ("obs",))
    v.units = "days since 2000-01-01 00:00:00"
    v.standard_name = "time"
    v.long_name = "observation time (fractional days)"

    ids = netCDF4.stringtochar(st_ids[station].astype("S8"))
    ds["station_id"][:NOBS] = ids
    ds["time"][:] = secs
    ds["lat"][:] = lat
    ds["lon"][:] = lon
    ds["temp"].set_auto_mask(False)
    ds["pressure"].set_auto_mask(False)
    ds["temp"][:] = temp
    ds["pressure"][:] = pressure
    ds["quality_flag"][:] = qc
    ds["obs_time"][:] = obs_time
    ds.close()


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "obs_points.nc")
    main(out)
