#!/usr/bin/env python3
"""Write the nc3pack benchmark corpus into a directory, deterministically (fixed seeds).

    python3 bench/make_corpus.py DIR [--big] [--force] [--tiny N]

Files (skipped when they already exist, unless --force; each is written to a temporary name and
renamed, so an interrupted run never leaves a half-written file behind):

  gridded.nc  CDF-2 (64-bit offset), ~156 MB: float t2m(time=UNLIMITED=120, lat=361, lon=720),
              a smooth temperature field (latitude gradient, travelling planetary waves, diurnal
              cycle over land) plus white noise, _FillValue over ice sheets (~9 %); float
              sst(time, lat1=181, lon1=360) with _FillValue over land and sea ice (~35 %);
              coordinate variables time, lat, lon, lat1, lon1.
  topo.nc     CDF-1, ~29 MB: short elevation(lat=2701, lon=5401) in whole metres (4 arc-minute
              grid), fractal (power-law spectrum) terrain with oceans and continents.
  points.nc   CDF-1, ~24 MB, record-heavy: 500,000 observations x 10 small record variables:
              char station_id(obs, 8), int time, float lat, lon, temp, dewpoint, pressure,
              short qc, byte flag, double obs_time. ~1,800 stations reporting hourly (each
              cycle a random ~85 % of them, station order fixed), times increasing, values at
              the 0.1 precision of real reports, a few missing (_FillValue).
  numeric.nc  CDF-1, ~72 MB, floats that byte filters see as noise but that hold few distinct
              values (the data properties of the numeric-codec issue): float height(y=1000,
              x=1200) in whole metres; float sst(time=4, y, x) in steps of 0.01 degC with
              _FillValue over land (~30 %); a rotated-pole grid's float lat(y, x), lon(y, x)
              and their corner bounds lat_bnds, lon_bnds(y, x, 4) (smooth, full precision).
  mesh.nc     CDF-2, ~36 MB, exact repeats far apart: an ICON-like icosahedral grid (327,680
              triangular cells): double clon, clat(cell) and the corners of each cell,
              clon_vertices, clat_vertices(cell, nv=3), where each vertex is repeated in the six
              cells around it; int vertex_of_cell(nv, cell); float ts(cell) in 0.1 K steps;
              char report(report=120,000, report_len=80), METAR-like text of 300 stations.
  tiny/       10,000 files of 0.6-4 KB (CDF-1, median 2 KB): a short sensor series each (time, value, status,
              a few attributes), some with an unlimited dimension, some without.
  big5.nc     only with --big: CDF-5, 4,320,133,120 + header bytes (> 4 GiB): float
              var(time=UNLIMITED=1030, y=1024, x=1024), a smooth field drifting in time plus
              quantized noise.

Needs python3 with numpy and netCDF4 (pip install numpy netCDF4).
"""

import argparse
import os
import sys
import time

import numpy as np

try:
    import netCDF4
except ImportError:  # pragma: no cover
    sys.exit("make_corpus.py needs the netCDF4 module: pip install netCDF4 numpy")

FILL_F = np.float32(netCDF4.default_fillvals["f4"])  # 9.96921e36, the netCDF default


def log(msg):
    print(f"make_corpus: {msg}", file=sys.stderr, flush=True)


def smooth_noise(rng, shape, scale, periodic_x=True):
    """Gaussian random field with a Gaussian spectrum of correlation length ~`scale` cells,
    normalized to zero mean and unit variance."""
    ny, nx = shape
    white = rng.standard_normal(shape)
    ky = np.fft.fftfreq(ny)[:, None]
    kx = np.fft.rfftfreq(nx)[None, :]
    filt = np.exp(-((ky**2 + kx**2) * (np.pi * scale) ** 2))
    f = np.fft.irfft2(np.fft.rfft2(white) * filt, s=shape)
    f -= f.mean()
    f /= f.std()
    return f


def land_mask(rng, ny, nx, frac):
    f = smooth_noise(rng, (ny, nx), scale=nx / 24)
    return f > np.quantile(f, 1.0 - frac)


def finish(tmp, path):
    os.replace(tmp, path)
    log(f"wrote {path} ({os.path.getsize(path):,} bytes)")


def make_gridded(path):
    rng = np.random.default_rng(20240601)
    ntime, ny, nx = 120, 361, 720
    lat = np.linspace(-90.0, 90.0, ny)
    lon = np.arange(nx) * 0.5
    land = land_mask(rng, ny, nx, 0.30)
    latr = np.deg2rad(lat)[:, None]
    lonr = np.deg2rad(lon)[None, :]
    # Ice sheets: land poleward of 62 degrees (Antarctica, Greenland-like): t2m missing there.
    ice = land & (np.abs(lat)[:, None] > 62.0)
    orog = np.where(land, np.abs(smooth_noise(rng, (ny, nx), scale=6)) * 6.0, 0.0)
    base = 300.0 - 48.0 * np.sin(latr) ** 2 - 4.0 * np.sin(latr) - orog
    # Travelling planetary waves (wavenumbers 3-8), amplitude largest in mid-latitudes.
    waves = []
    for k in range(3, 9):
        amp = rng.uniform(1.0, 3.5) * np.exp(-(((np.abs(lat) - 50.0) / 18.0) ** 2))[:, None]
        waves.append((k, amp, rng.uniform(0, 2 * np.pi), rng.uniform(-0.25, 0.25)))

    # sst on a 1-degree grid: land from the 0.5-degree mask, sea ice where it would freeze.
    ny1, nx1 = 181, 360
    lat1 = np.linspace(-90.0, 90.0, ny1)
    lon1 = np.arange(nx1) * 1.0
    land1 = land[::2, ::2]
    lat1r = np.deg2rad(lat1)[:, None]
    eddies = smooth_noise(rng, (ny1, nx1), scale=4) * 0.6

    tmp = path + ".tmp"
    with netCDF4.Dataset(tmp, "w", format="NETCDF3_64BIT_OFFSET") as ds:
        ds.title = "Synthetic 6-hourly reanalysis-like fields (nc3pack benchmark corpus)"
        ds.institution = "nc3pack bench/make_corpus.py"
        ds.Conventions = "CF-1.8"
        ds.createDimension("time", None)
        ds.createDimension("lat", ny)
        ds.createDimension("lon", nx)
        ds.createDimension("lat1", ny1)
        ds.createDimension("lon1", nx1)
        v = ds.createVariable("time", "f8", ("time",))
        v.units, v.calendar = "hours since 2020-01-01 00:00:00", "standard"
        v = ds.createVariable("lat", "f8", ("lat",))
        v.units, v[:] = "degrees_north", lat
        v = ds.createVariable("lon", "f8", ("lon",))
        v.units, v[:] = "degrees_east", lon
        v = ds.createVariable("lat1", "f4", ("lat1",))
        v.units, v[:] = "degrees_north", lat1
        v = ds.createVariable("lon1", "f4", ("lon1",))
        v.units, v[:] = "degrees_east", lon1
        t2m = ds.createVariable("t2m", "f4", ("time", "lat", "lon"), fill_value=FILL_F)
        t2m.units, t2m.long_name, t2m.standard_name = "K", "2 metre temperature", "air_temperature"
        sst = ds.createVariable("sst", "f4", ("time", "lat1", "lon1"), fill_value=FILL_F)
        sst.units, sst.long_name = "K", "sea surface temperature"
        t2m.set_auto_mask(False)
        sst.set_auto_mask(False)
        for t in range(ntime):
            hours = 6.0 * t
            ds["time"][t] = hours
            field = base.copy()
            for k, amp, ph, speed in waves:
                field += amp * np.cos(k * lonr + ph - speed * hours / 6.0)
            # Diurnal cycle over land: warmest at 15h local solar time.
            local = (hours + lon / 15.0) % 24.0
            field += np.where(land, 5.0 * np.cos(2 * np.pi * (local - 15.0) / 24.0)[None, :], 0.0)
            field += rng.normal(0.0, 0.25, field.shape)
            t2m[t] = np.where(ice, FILL_F, field.astype(np.float32))

            s = 301.5 - 30.5 * np.sin(lat1r) ** 2 + eddies + 0.3 * np.sin(2 * np.pi * t / 120.0)
            s = s + rng.normal(0.0, 0.05, s.shape)
            frozen = s < 271.35
            sst[t] = np.where(land1 | frozen, FILL_F, s.astype(np.float32))
    finish(tmp, path)


def make_topo(path):
    rng = np.random.default_rng(20240602)
    ny, nx = 2701, 5401  # 4 arc-minutes, poles and date line included
    white = rng.standard_normal((ny, nx))
    ky = np.fft.fftfreq(ny)[:, None]
    kx = np.fft.rfftfreq(nx)[None, :]
    k = np.sqrt(ky**2 + kx**2)
    k[0, 0] = 1.0
    # Power-law spectrum (fractal terrain), with large scales damped below ~1/40 of the grid.
    filt = k ** -1.6 * (1.0 - np.exp(-((k * 40.0) ** 2)))
    f = np.fft.irfft2(np.fft.rfft2(white) * filt, s=(ny, nx))
    del white
    f = (f - f.mean()) / f.std()
    # Continents: a broad field decides land/sea; relief on top, steeper on land.
    cont = smooth_noise(rng, (ny, nx), scale=nx / 20)
    sea_level = np.quantile(cont, 0.70)
    elev = np.where(cont > sea_level, 400.0 + (cont - sea_level) * 1500.0 + f * 700.0,
                    -3800.0 + (cont - sea_level) * 1200.0 + f * 500.0)
    elev = np.clip(np.rint(elev), -10900, 8848).astype(np.int16)
    tmp = path + ".tmp"
    with netCDF4.Dataset(tmp, "w", format="NETCDF3_CLASSIC") as ds:
        ds.title = "Synthetic global relief, 4 arc-minutes (nc3pack benchmark corpus)"
        ds.createDimension("lat", ny)
        ds.createDimension("lon", nx)
        v = ds.createVariable("lat", "f8", ("lat",))
        v.units, v[:] = "degrees_north", np.linspace(-90.0, 90.0, ny)
        v = ds.createVariable("lon", "f8", ("lon",))
        v.units, v[:] = "degrees_east", np.linspace(-180.0, 180.0, nx)
        v = ds.createVariable("elevation", "i2", ("lat", "lon"))
        v.units, v.long_name = "m", "height above mean sea level"
        v.actual_range = np.array([elev.min(), elev.max()], dtype=np.int16)
        v[:] = elev
    finish(tmp, path)


def make_numeric(path):
    rng = np.random.default_rng(20240605)
    ny, nx, nt = 1000, 1200, 4
    rough = smooth_noise(rng, (ny, nx), scale=30) * 0.6 + smooth_noise(rng, (ny, nx), scale=4) * 0.4
    height = np.rint(np.clip(800.0 + rough * 900.0, -50.0, 4800.0)).astype(np.float32)
    land = land_mask(rng, ny, nx, 0.30)
    base = 12.0 + 14.0 * np.cos(np.linspace(-1.2, 1.2, ny))[:, None] + smooth_noise(rng, (ny, nx), 40) * 2.0
    # Rotated pole (north pole at 40 N, 170 W): the grid's own coordinates, rotated back.
    rlat = np.linspace(-25.0, 25.0, ny + 1)
    rlon = np.linspace(-30.0, 30.0, nx + 1)

    def unrotate(rlat_d, rlon_d, plat=40.0, plon=-170.0):
        phi, lam = np.radians(rlat_d), np.radians(rlon_d)
        p = np.radians(plat)
        sphi = np.sin(p) * np.sin(phi) + np.cos(p) * np.cos(phi) * np.cos(lam)
        lat = np.degrees(np.arcsin(np.clip(sphi, -1.0, 1.0)))
        y = np.cos(phi) * np.sin(lam)
        x = np.sin(p) * np.cos(phi) * np.cos(lam) - np.cos(p) * np.sin(phi)
        lon = np.degrees(np.arctan2(y, x)) + plon + 180.0
        return lat, (lon + 180.0) % 360.0 - 180.0

    clat, clon = unrotate(*np.meshgrid(rlat, rlon, indexing="ij"))
    mlat, mlon = unrotate(*np.meshgrid((rlat[1:] + rlat[:-1]) / 2, (rlon[1:] + rlon[:-1]) / 2,
                                       indexing="ij"))
    tmp = path + ".tmp"
    with netCDF4.Dataset(tmp, "w", format="NETCDF3_CLASSIC") as ds:
        ds.title = "Numeric-codec cases (nc3pack benchmark corpus)"
        ds.createDimension("time", nt)
        ds.createDimension("y", ny)
        ds.createDimension("x", nx)
        ds.createDimension("nv", 4)
        v = ds.createVariable("lat", "f4", ("y", "x"))
        v.units, v.bounds, v[:] = "degrees_north", "lat_bnds", mlat.astype(np.float32)
        v = ds.createVariable("lon", "f4", ("y", "x"))
        v.units, v.bounds, v[:] = "degrees_east", "lon_bnds", mlon.astype(np.float32)
        corners = lambda c: np.stack([c[:-1, :-1], c[:-1, 1:], c[1:, 1:], c[1:, :-1]], axis=-1)
        ds.createVariable("lat_bnds", "f4", ("y", "x", "nv"))[:] = corners(clat).astype(np.float32)
        ds.createVariable("lon_bnds", "f4", ("y", "x", "nv"))[:] = corners(clon).astype(np.float32)
        v = ds.createVariable("height", "f4", ("y", "x"))
        v.units, v[:] = "m", height
        v = ds.createVariable("sst", "f4", ("time", "y", "x"), fill_value=FILL_F)
        v.units = "degC"
        for t in range(nt):
            field = base + smooth_noise(rng, (ny, nx), 8) * 0.3 + 0.5 * t
            field = (np.rint(field * 100.0) / 100.0).astype(np.float32)
            v[t] = np.ma.masked_array(field, mask=land)
    finish(tmp, path)


def icosphere(level):
    """Vertices (unit vectors) and triangles of an icosahedron bisected `level` times; each
    triangle's four children follow it, so nearby cells are near in the list (as ICON's)."""
    t = (1.0 + 5 ** 0.5) / 2.0
    v = np.array([[-1, t, 0], [1, t, 0], [-1, -t, 0], [1, -t, 0], [0, -1, t], [0, 1, t],
                  [0, -1, -t], [0, 1, -t], [t, 0, -1], [t, 0, 1], [-t, 0, -1], [-t, 0, 1]], float)
    f = np.array([[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11], [1, 5, 9],
                  [5, 11, 4], [11, 10, 2], [10, 7, 6], [7, 1, 8], [3, 9, 4], [3, 4, 2],
                  [3, 2, 6], [3, 6, 8], [3, 8, 9], [4, 9, 5], [2, 4, 11], [6, 2, 10],
                  [8, 6, 7], [9, 8, 1]])
    v /= np.linalg.norm(v, axis=1)[:, None]
    for _ in range(level):
        edges = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1)
        uniq, inv = np.unique(edges, axis=0, return_inverse=True)
        mid = v[uniq[:, 0]] + v[uniq[:, 1]]
        mid /= np.linalg.norm(mid, axis=1)[:, None]
        m = inv.reshape(3, -1) + len(v)  # midpoints of edges ab, bc, ca of each face
        v = np.concatenate([v, mid])
        a, b, c = f[:, 0], f[:, 1], f[:, 2]
        ab, bc, ca = m
        f = np.stack([np.stack([a, ab, ca], 1), np.stack([ab, b, bc], 1),
                      np.stack([ca, bc, c], 1), np.stack([ab, bc, ca], 1)], 1).reshape(-1, 3)
    return v, f


def make_mesh(path, level=7, nrep=120_000):
    rng = np.random.default_rng(20240606)
    v, f = icosphere(level)
    lon = np.arctan2(v[:, 1], v[:, 0])
    lat = np.arcsin(np.clip(v[:, 2], -1.0, 1.0))
    cen = v[f].sum(axis=1)
    cen /= np.linalg.norm(cen, axis=1)[:, None]
    clon = np.arctan2(cen[:, 1], cen[:, 0])
    clat = np.arcsin(np.clip(cen[:, 2], -1.0, 1.0))
    ncell = len(f)
    # A field on the cells: smooth in latitude plus a little noise, 0.1 K steps.
    ts = np.round(288.0 - 30.0 * np.sin(clat) ** 2 + 3.0 * np.cos(3 * clon) * np.cos(clat)
                  + rng.normal(0, 0.2, ncell), 1).astype(np.float32)

    # METAR-like report text: few stations, each with fixed words, hourly.
    nst = 300
    icao = [b"".join(rng.choice(np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", "S1"), 4)) for _ in range(nst)]
    st = np.arange(nrep) % nst
    hour = np.arange(nrep) // nst
    wdir = (np.round(rng.normal(250, 40, nrep) / 10) * 10 % 360).astype(int)
    wspd = np.abs(rng.normal(9, 4, nrep)).astype(int)
    temp = (15 + 8 * np.sin(2 * np.pi * (hour % 24) / 24) + rng.normal(0, 2, nrep)).astype(int)
    dew = temp - np.abs(rng.normal(5, 2, nrep)).astype(int)
    qnh = (1013 + rng.normal(0, 6, nrep)).astype(int)
    clouds = [b"FEW020", b"SCT035", b"BKN045", b"OVC008", b"NSC", b"FEW045 SCT250", b"CAVOK"]
    cl = rng.choice(len(clouds), nrep, p=[0.2, 0.2, 0.15, 0.1, 0.15, 0.1, 0.1])
    rep_len = 80
    text = np.zeros((nrep, rep_len), "S1")
    for i in range(nrep):
        day, hh = 1 + (hour[i] // 24) % 28, hour[i] % 24
        s = b"METAR %s %02d%02d50Z %03d%02dKT 9999 %s %s/%s Q%04d NOSIG=" % (
            icao[st[i]], day, hh, wdir[i], wspd[i], clouds[cl[i]],
            (b"M%02d" % -temp[i]) if temp[i] < 0 else (b"%02d" % temp[i]),
            (b"M%02d" % -dew[i]) if dew[i] < 0 else (b"%02d" % dew[i]), qnh[i])
        text[i, :len(s)] = np.frombuffer(s[:rep_len], "S1")

    tmp = path + ".tmp"
    with netCDF4.Dataset(tmp, "w", format="NETCDF3_64BIT_OFFSET") as ds:
        ds.title = "Unstructured (icosahedral) grid and station report text (nc3pack benchmark corpus)"
        ds.createDimension("cell", ncell)
        ds.createDimension("vertex", len(v))
        ds.createDimension("nv", 3)
        ds.createDimension("report", nrep)
        ds.createDimension("report_len", rep_len)
        for name, data, units in (("clon", clon, "radian"), ("clat", clat, "radian")):
            x = ds.createVariable(name, "f8", ("cell",))
            x.units, x.bounds, x[:] = units, name + "_vertices", data
        for name, data in (("clon_vertices", lon[f]), ("clat_vertices", lat[f])):
            x = ds.createVariable(name, "f8", ("cell", "nv"))
            x.units, x[:] = "radian", data
        x = ds.createVariable("vertex_of_cell", "i4", ("nv", "cell"))
        x.long_name, x.start_index, x[:] = "vertices of each cell", 1, f.T + 1
        x = ds.createVariable("ts", "f4", ("cell",))
        x.units, x.coordinates, x[:] = "K", "clon clat", ts
        x = ds.createVariable("report", "S1", ("report", "report_len"))
        x.long_name = "METAR report text"
        x.set_auto_chartostring(False)
        x[:] = text
    finish(tmp, path)


def station_ids(rng, n):
    letters = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", dtype="S1")
    wmo = np.sort(rng.choice(np.arange(1001, 99999), size=n, replace=False))
    ids = []
    for w in wmo:
        icao = b"".join(rng.choice(letters, 3))
        ids.append(b"%05d" % w + icao)
    return np.array(ids, dtype="S8")


def make_points(path, nobs=500_000):
    rng = np.random.default_rng(20240603)
    nst = 1800
    ids = station_ids(rng, nst)
    slat = rng.uniform(-60, 75, nst).round(4)
    slon = rng.uniform(-180, 180, nst).round(4)
    selev = np.abs(rng.normal(0, 600, nst))
    clim = 28.0 - 0.45 * np.abs(slat) - selev * 0.0065 + rng.normal(0, 2, nst)
    humid = rng.uniform(1.0, 12.0, nst)
    p0 = 1013.25 * (1 - 2.25577e-5 * selev) ** 5.25588

    st, hr = [], []
    h = 0
    total = 0
    while total < nobs:
        rep = np.flatnonzero(rng.random(nst) < 0.85)
        st.append(rep)
        hr.append(np.full(rep.size, h))
        total += rep.size
        h += 1
    st = np.concatenate(st)[:nobs]
    hr = np.concatenate(hr)[:nobs]
    minute = rng.choice([0, 0, 0, 50, 55, 20], size=nobs)  # synop on the hour, metar at :50/:55
    secs = (hr * 3600 + minute * 60 - np.where(minute > 0, 3600, 0)).astype(np.int64)
    secs = np.maximum.accumulate(np.maximum(secs, 0))  # file order = time order
    local = (hr + slon[st] / 15.0) % 24.0
    # Weather: slowly varying anomaly per station (random walk over the hours), plus noise.
    nh = int(hr.max()) + 1
    anom = np.cumsum(rng.normal(0, 0.35, (nh, nst)), axis=0)
    anom -= np.linspace(0, 1, nh)[:, None] * anom[-1][None, :]  # keep it bounded
    temp = clim[st] + 5.0 * np.cos(2 * np.pi * (local - 15.0) / 24.0) + anom[hr, st]
    temp += rng.normal(0, 0.3, nobs)
    spread = np.abs(humid[st] + 0.5 * anom[hr, st] * 0.2 + rng.normal(0, 0.8, nobs))
    dew = temp - spread
    pres = p0[st] + 6.0 * np.sin(2 * np.pi * hr / 96.0 + slon[st] / 30.0) + rng.normal(0, 0.4, nobs)
    temp = np.round(temp, 1).astype(np.float32)
    dew = np.round(dew, 1).astype(np.float32)
    pres = np.round(pres, 1).astype(np.float32)
    miss = rng.random(nobs)
    temp[miss < 0.015] = FILL_F
    dew[miss < 0.04] = FILL_F
    pres[(miss > 0.5) & (miss < 0.53)] = FILL_F
    qc = np.zeros(nobs, np.int16)
    r = rng.random(nobs)
    qc[r < 0.06] = 1
    qc[r < 0.02] = 3
    qc[r < 0.004] = 7
    flag = (rng.random(nobs) < 0.1).astype(np.int8) + (minute > 0).astype(np.int8) * 2
    epoch_days = 19723.0  # 2024-01-01 in days since 1970-01-01
    obs_time = epoch_days + secs / 86400.0

    tmp = path + ".tmp"
    with netCDF4.Dataset(tmp, "w", format="NETCDF3_CLASSIC") as ds:
        ds.title = "Synthetic surface station reports (nc3pack benchmark corpus)"
        ds.featureType = "point"
        ds.Conventions = "CF-1.8"
        ds.createDimension("obs", None)
        ds.createDimension("id_strlen", 8)
        v = ds.createVariable("station_id", "S1", ("obs", "id_strlen"))
        v.long_name, v.cf_role = "station identifier (WMO number + ICAO letters)", "timeseries_id"
        v.set_auto_chartostring(False)
        v[:] = ids[st].view("S1").reshape(nobs, 8)
        v = ds.createVariable("time", "i4", ("obs",))
        v.units, v[:] = "seconds since 2024-01-01 00:00:00", secs.astype(np.int32)
        v = ds.createVariable("lat", "f4", ("obs",))
        v.units, v[:] = "degrees_north", slat[st].astype(np.float32)
        v = ds.createVariable("lon", "f4", ("obs",))
        v.units, v[:] = "degrees_east", slon[st].astype(np.float32)
        for name, data, units in (("temp", temp, "degC"), ("dewpoint", dew, "degC"),
                                  ("pressure", pres, "hPa")):
            v = ds.createVariable(name, "f4", ("obs",), fill_value=FILL_F)
            v.set_auto_mask(False)
            v.units = units
            v[:] = data
        v = ds.createVariable("qc", "i2", ("obs",))
        v.flag_masks, v[:] = np.array([1, 2, 4], np.int16), qc
        v = ds.createVariable("flag", "i1", ("obs",))
        v.flag_values, v.flag_meanings = np.array([0, 1, 2, 3], np.int8), "synop synop_corr metar metar_corr"
        v[:] = flag
        v = ds.createVariable("obs_time", "f8", ("obs",))
        v.units, v[:] = "days since 1970-01-01 00:00:00", obs_time
    finish(tmp, path)


def make_tiny(dirpath, n):
    rng = np.random.default_rng(20240604)
    tmpdir = dirpath + ".tmp"
    os.makedirs(tmpdir, exist_ok=True)
    kinds = ["temperature", "humidity", "wind_speed", "water_level", "conductivity"]
    for i in range(n):
        npts = int(rng.integers(20, 300))
        kind = kinds[i % len(kinds)]
        path = os.path.join(tmpdir, f"sensor_{i:05d}.nc")
        with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
            ds.title = f"Sensor {i:05d} {kind} series"
            ds.station = f"ST{i % 997:04d}"
            ds.history = "generated by nc3pack bench/make_corpus.py"
            unlimited = i % 3 == 0
            ds.createDimension("time", None if unlimited else npts)
            t = ds.createVariable("time", "i4", ("time",))
            t.units = "seconds since 2024-03-01 00:00:00"
            start = int(rng.integers(0, 86400 * 30))
            t[:] = start + np.arange(npts, dtype=np.int32) * 600
            v = ds.createVariable("value", "f4", ("time",), fill_value=FILL_F)
            v.long_name, v.units = kind.replace("_", " "), "1"
            v.set_auto_mask(False)
            level = rng.uniform(0, 30)
            walk = np.cumsum(rng.normal(0, 0.1, npts))
            v[:] = np.round(level + walk, 2).astype(np.float32)
            s = ds.createVariable("status", "i1", ("time",))
            s[:] = (rng.random(npts) < 0.05).astype(np.int8)
            if i % 4 == 0:
                ds.createDimension("nv", 2)
                b = ds.createVariable("depth_bounds", "f8", ("nv",))
                b[:] = np.array([0.0, rng.uniform(0.5, 5.0)])
    os.replace(tmpdir, dirpath)
    log(f"wrote {n:,} files to {dirpath}")


def make_big5(path):
    rng = np.random.default_rng(20240605)
    ntime, ny, nx = 1030, 1024, 1024
    yy, xx = np.meshgrid(np.linspace(0, 1, ny), np.linspace(0, 1, nx), indexing="ij")
    base = (280.0 + 15.0 * np.cos(np.pi * yy) + 4.0 * smooth_noise(rng, (ny, nx), scale=40)).astype(np.float32)
    bank = [np.round(rng.normal(0, 0.3, (ny, nx)), 2).astype(np.float32) for _ in range(8)]
    tmp = path + ".tmp"
    with netCDF4.Dataset(tmp, "w", format="NETCDF3_64BIT_DATA") as ds:
        ds.title = "Synthetic CDF-5 file over 4 GiB (nc3pack benchmark corpus)"
        ds.createDimension("time", None)
        ds.createDimension("y", ny)
        ds.createDimension("x", nx)
        v = ds.createVariable("var", "f4", ("time", "y", "x"))
        v.units = "K"
        v.set_auto_mask(False)
        for t in range(ntime):
            rec = base + np.float32(0.01 * (t % 200)) + np.roll(bank[t % 8], t, axis=1)
            v[t] = rec
    finish(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--big", action="store_true", help="also write big5.nc (> 4 GiB, CDF-5)")
    ap.add_argument("--force", action="store_true", help="rewrite files that exist")
    ap.add_argument("--tiny", type=int, default=10_000, help="number of tiny files (default 10000)")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    jobs = [("gridded.nc", make_gridded), ("topo.nc", make_topo), ("points.nc", make_points),
            ("numeric.nc", make_numeric), ("mesh.nc", make_mesh), ("tiny", lambda p: make_tiny(p, a.tiny))]
    if a.big:
        jobs.append(("big5.nc", make_big5))
    for name, fn in jobs:
        path = os.path.join(a.dir, name)
        if os.path.exists(path) and not a.force:
            continue
        if os.path.isdir(path):
            import shutil
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)
        t = time.time()
        fn(path)
        log(f"  {name}: {time.time() - t:.1f} s")


if __name__ == "__main__":
    main()
