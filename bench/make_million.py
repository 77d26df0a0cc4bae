#!/usr/bin/env python3
"""Write N small netCDF-3 files of realistic shapes into a tree like a model's output.

    python bench/make_million.py N DIR [--seed S] [--jobs J] [--check K]

Files of 1-64 KiB (a skewed distribution: median about 4 KiB, a tail to 64 KiB) under
DIR/MODEL/EXPERIMENT/MEMBER/VARIABLE/YEAR/VARIABLE_YYYYMMDD.nc, at most 365 files a
directory (one a day), from five CF-like templates, each a directory's variable:

  station     CDF-1: time(time=UNLIMITED) double, station_name(name_strlen) char, lat, lon,
              and three or four float/short record variables (a station's hourly series)
  tile        CDF-1 or CDF-2: time(1), lat, lon coordinates and a float field(time, lat, lon)
              with _FillValue over land (a small lat/lon tile of a 2-D field)
  tile_short  CDF-1: the same tile packed into shorts with scale_factor and add_offset
  profile     CDF-2: depth or pressure levels, temperature and salinity (or t, q) profiles
  trajectory  CDF-1, and CDF-5 in a few directories (int64 time, ushort qc, uint id): a
              float's or a balloon's track as record variables of obs=UNLIMITED

with units, long_name, standard_name, calendar, _FillValue, and smooth data plus noise
(so that they compress as real data does). The bytes are written directly (the netCDF
classic format specification: CDF-1, CDF-2 and CDF-5 headers, record variables), by
`--jobs` processes (default: all cores); a directory's files come from one random
generator seeded by (S, directory), so the tree depends on N and S only. Each file is
written under a temporary name and renamed; an existing DIR with a complete tree of N
files (its DIR/.complete-N-S marker) is left as it is.

--check K reads K random files with `ncdump -h` and `ncdump` (each template and format
at least once when the tree has them) and exits 1 on any failure; with netCDF4-python
installed, also checks that each reads there with the values written.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import struct
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

PER_DIR = 365
MODELS = ["ACME-CM1", "BORA-2", "CORAL-ESM", "DRIFT-LR", "EUREKA-HR", "FJORD-1"]
EXPERIMENTS = ["historical", "ssp245", "ssp585", "piControl"]
MEMBERS = [f"r{i}i1p1f1" for i in range(1, 6)]
YEARS = 30
# (directory's variable, template, format): most CDF-1, some CDF-2, a few CDF-5.
VARIABLES: list[tuple[str, str, int]] = [
    ("tas", "station", 1),
    ("pr", "station", 1),
    ("ts", "tile", 1),
    ("psl", "tile_short", 1),
    ("thetao", "profile", 2),
    ("zg", "tile", 2),
    ("sfcWind", "station", 1),
    ("ta", "profile", 2),
    ("traj", "trajectory", 1),
    ("uas", "tile_short", 1),
    ("hurs", "station", 1),
    ("sos", "tile", 1),
    ("drifter", "trajectory", 5),
    ("hus", "profile", 2),
]

# netCDF types: (code, numpy big-endian dtype, default fill value)
NC_BYTE, NC_CHAR, NC_SHORT, NC_INT, NC_FLOAT, NC_DOUBLE = 1, 2, 3, 4, 5, 6
NC_UBYTE, NC_USHORT, NC_UINT, NC_INT64, NC_UINT64 = 7, 8, 9, 10, 11
DTYPE = {
    NC_BYTE: ">i1",
    NC_CHAR: "S1",
    NC_SHORT: ">i2",
    NC_INT: ">i4",
    NC_FLOAT: ">f4",
    NC_DOUBLE: ">f8",
    NC_UBYTE: ">u1",
    NC_USHORT: ">u2",
    NC_UINT: ">u4",
    NC_INT64: ">i8",
    NC_UINT64: ">u8",
}
DEFAULT_FILL: dict[int, float | int | bytes] = {
    NC_BYTE: -127,
    NC_CHAR: b"\0",
    NC_SHORT: -32767,
    NC_INT: -2147483647,
    NC_FLOAT: 9.9692099683868690e36,
    NC_DOUBLE: 9.9692099683868690e36,
    NC_UBYTE: 255,
    NC_USHORT: 65535,
    NC_UINT: 4294967295,
    NC_INT64: -9223372036854775806,
    NC_UINT64: 18446744073709551614,
}
FILL_F = np.float32(9.9692099683868690e36)


@dataclass
class Var:
    name: str
    nc_type: int
    dims: list[str]
    attrs: list[tuple[str, int, object]]
    data: np.ndarray  # the values, shaped by dims (records first for a record variable)


@dataclass
class File:
    version: int  # 1, 2 or 5
    dims: list[tuple[str, int]]  # length 0: the unlimited dimension
    gatts: list[tuple[str, int, object]]
    vars: list[Var] = field(default_factory=list)
    numrecs: int = 0


def pad4(n: int) -> int:
    return (n + 3) & ~3


_CACHE: dict[object, bytes] = {}


class Header:
    """The netCDF classic header's encoding for one format version (names and attributes
    encoded once, then taken from a cache: most repeat from file to file)."""

    def __init__(self, version: int) -> None:
        self.version = version
        self.nonneg = ">q" if version == 5 else ">i"
        self.offset = ">i" if version == 1 else ">q"
        self.parts: list[bytes] = []

    def n(self, v: int) -> None:
        self.parts.append(struct.pack(self.nonneg, v))

    def name(self, s: str) -> None:
        key = (self.version, s)
        b = _CACHE.get(key)
        if b is None:
            e = s.encode()
            b = struct.pack(self.nonneg, len(e)) + e + b"\0" * (pad4(len(e)) - len(e))
            _CACHE[key] = b
        self.parts.append(b)

    def tag(self, t: int, count: int) -> None:
        if count == 0:  # ABSENT: ZERO ZERO (ZERO ZERO64 in CDF-5)
            self.parts.append(b"\0\0\0\0")
            self.n(0)
        else:
            self.parts.append(struct.pack(">i", t))
            self.n(count)

    def attrs(self, attrs: Sequence[tuple[str, int, object]]) -> None:
        self.tag(0x0C, len(attrs))
        for a in attrs:
            try:
                key: object = (self.version, a)
                b = _CACHE.get(key)
            except TypeError:  # a list value: not hashable
                key, b = None, None
            if b is None:
                b = self.attr(*a)
                if key is not None:
                    _CACHE[key] = b
            self.parts.append(b)

    def attr(self, name: str, t: int, value: object) -> bytes:
        if t == NC_CHAR:
            v = value.encode() if isinstance(value, str) else bytes(value)  # type: ignore[call-overload]
            count = len(v)
        else:
            arr = np.atleast_1d(np.asarray(value, dtype=DTYPE[t]))
            v = arr.tobytes()
            count = arr.size
        e = name.encode()
        return b"".join(
            [
                struct.pack(self.nonneg, len(e)),
                e + b"\0" * (pad4(len(e)) - len(e)),
                struct.pack(">i", t),
                struct.pack(self.nonneg, count),
                v + b"\0" * (pad4(len(v)) - len(v)),
            ]
        )


def fill_bytes(v: Var) -> bytes:
    """One element of the variable's fill value (its _FillValue, or the type's default)."""
    for name, _t, value in v.attrs:
        if name == "_FillValue":
            return np.asarray(value, dtype=DTYPE[v.nc_type]).reshape(1).tobytes()
    d = DEFAULT_FILL[v.nc_type]
    if isinstance(d, bytes):
        return d
    return np.asarray(d, dtype=DTYPE[v.nc_type]).reshape(1).tobytes()


def encode(f: File) -> bytes:
    """The whole file: header, then the non-record variables, then the records."""
    dimlen = dict(f.dims)
    dimid = {name: i for i, (name, _) in enumerate(f.dims)}
    rec_dim = next((name for name, n in f.dims if n == 0), None)
    is_rec = [bool(v.dims) and v.dims[0] == rec_dim for v in f.vars]
    # vsize: bytes of the variable (a record variable: of one record), padded to 4 bytes;
    # a lone record variable's records are not padded (the format's exception).
    sizes: list[int] = []
    for v, rec in zip(f.vars, is_rec):
        n = np.dtype(DTYPE[v.nc_type]).itemsize
        for d in v.dims[1:] if rec else v.dims:
            n *= dimlen[d]
        sizes.append(n)
    nrec_vars = sum(is_rec)
    vsizes = [
        s if (rec and nrec_vars == 1) else pad4(s) for s, rec in zip(sizes, is_rec)
    ]

    h = Header(f.version)
    h.parts.append(b"CDF" + bytes([f.version]))
    h.n(f.numrecs)
    h.tag(0x0A, len(f.dims))
    for name, n in f.dims:
        h.name(name)
        h.n(n)
    h.attrs(f.gatts)
    h.tag(0x0B, len(f.vars))
    slots = []  # where each variable's begin goes (offsets have a fixed width)
    for v, vsize in zip(f.vars, vsizes):
        h.name(v.name)
        h.n(len(v.dims))
        for d in v.dims:
            h.n(dimid[d])
        h.attrs(v.attrs)
        h.parts.append(struct.pack(">i", v.nc_type))
        h.n(vsize if vsize < 2**32 - 4 else 2**32 - 1)
        slots.append(len(h.parts))
        h.parts.append(b"")
    width = 4 if f.version == 1 else 8
    hlen = sum(len(p) for p in h.parts) + width * len(f.vars)
    begins: list[int] = [0] * len(f.vars)
    pos = hlen
    for i, rec in enumerate(is_rec):
        if not rec:
            begins[i] = pos
            pos += vsizes[i]
    recsize = 0
    for i, rec in enumerate(is_rec):
        if rec:
            begins[i] = pos + recsize
            recsize += vsizes[i]
    for slot, begin in zip(slots, begins):
        h.parts[slot] = struct.pack(h.offset, begin)
    out = [b"".join(h.parts)]
    for v, s, vs, rec in zip(f.vars, sizes, vsizes, is_rec):
        if not rec:
            b = np.ascontiguousarray(v.data, dtype=DTYPE[v.nc_type]).tobytes()
            assert len(b) == s, (v.name, len(b), s)
            out.append(b + (fill_bytes(v) * 4)[: vs - s])
    if nrec_vars:
        slabs = []
        for v, s, vs, rec in zip(f.vars, sizes, vsizes, is_rec):
            if rec:
                b = np.ascontiguousarray(v.data, dtype=DTYPE[v.nc_type]).tobytes()
                assert len(b) == s * f.numrecs, (v.name, len(b), s, f.numrecs)
                a = np.frombuffer(b, dtype=np.uint8).reshape(f.numrecs, s)
                if vs > s:
                    padding = np.frombuffer((fill_bytes(v) * 4)[: vs - s], np.uint8)
                    a = np.hstack([a, np.broadcast_to(padding, (f.numrecs, vs - s))])
                slabs.append(a)
        out.append(np.hstack(slabs).tobytes())
    return b"".join(out)


# --- the templates -------------------------------------------------------------------------


def attr_s(name: str, value: str) -> tuple[str, int, object]:
    return (name, NC_CHAR, value)


def attr_f(name: str, value: float | Sequence[float]) -> tuple[str, int, object]:
    return (name, NC_FLOAT, value)


def attr_d(name: str, value: float | Sequence[float]) -> tuple[str, int, object]:
    return (name, NC_DOUBLE, value)


def gatts(ctx: Ctx, extra: str) -> list[tuple[str, int, object]]:
    return [
        attr_s("Conventions", "CF-1.8"),
        attr_s("title", f"{ctx.model} {ctx.experiment} {ctx.var} {extra}"),
        attr_s("institution", "nc3pack benchmark collection (bench/make_million.py)"),
        attr_s("source", ctx.model),
        attr_s("experiment_id", ctx.experiment),
        attr_s("variant_label", ctx.member),
        attr_s("history", f"{ctx.date} created by make_million.py"),
        ("realization", NC_INT, int(ctx.member[1:].split("i")[0])),
    ]


@dataclass
class Ctx:
    rng: np.random.Generator
    model: str
    experiment: str
    member: str
    var: str
    year: int
    day: int
    date: str
    version: int


def smooth(rng: np.random.Generator, n: int, scale: float) -> np.ndarray:
    """A smooth random series: a few sines plus a random walk, unit-ish amplitude."""
    x = np.arange(n, dtype=np.float64)
    k = rng.uniform(0.5, 3.0, 3) * 2 * np.pi / max(n, 2)
    ph = rng.uniform(0, 2 * np.pi, 3)
    s = (np.sin(np.outer(x, k) + ph) * (1.0, 0.5, 0.25)).sum(axis=1)
    return s + np.cumsum(rng.normal(0.0, scale, n))


def t_size(rng: np.random.Generator) -> int:
    """A file's target size: log-normal, median ~4 KiB, 1-64 KiB."""
    return int(min(max(rng.lognormal(np.log(4096), 0.9), 1024), 65536))


def station(ctx: Ctx, target: int) -> File:
    rng = ctx.rng
    four = rng.random() < 0.5
    per_rec = 8 + 4 * 3 + (4 if four else 0)
    nt = max(4, (target - 1400) // per_rec)
    base = {"tas": 285.0, "pr": 0.0, "sfcWind": 5.0, "hurs": 70.0}.get(ctx.var, 280.0)
    t0 = (ctx.year - 1850) * 365.0 + ctx.day
    time = t0 + np.arange(nt) / 24.0
    diurnal = np.cos(2 * np.pi * (np.arange(nt) % 24 - 15) / 24.0)
    v1 = base + 4.0 * diurnal + 2.0 * smooth(rng, nt, 0.05) + rng.normal(0, 0.1, nt)
    v1 = np.round(v1, 1).astype(np.float32)
    if ctx.var == "pr":
        v1 = np.maximum(v1, 0).astype(np.float32)
    ps = np.round(101325.0 + 300 * smooth(rng, nt, 0.02) + rng.normal(0, 5, nt))
    ps = ps.astype(np.float32)
    missing = rng.random(nt) < 0.01
    ps[missing] = FILL_F
    td = np.round(v1 - 3.0 - np.abs(smooth(rng, nt, 0.05)), 1).astype(np.float32)
    lat = np.float32(rng.uniform(-60, 75))
    lon = np.float32(rng.uniform(-180, 180))
    sid = f"ST{rng.integers(10000, 99999)}"
    f = File(
        1,
        [("time", 0), ("name_strlen", 12)],
        gatts(ctx, "station series") + [attr_s("featureType", "timeSeries")],
        numrecs=nt,
    )
    f.vars = [
        Var(
            "time",
            NC_DOUBLE,
            ["time"],
            [
                attr_s("standard_name", "time"),
                attr_s("long_name", "time"),
                attr_s("units", "days since 1850-01-01 00:00:00"),
                attr_s("calendar", "noleap"),
                attr_s("axis", "T"),
            ],
            time,
        ),
        Var(
            "station_name",
            NC_CHAR,
            ["name_strlen"],
            [attr_s("long_name", "station name"), attr_s("cf_role", "timeseries_id")],
            np.frombuffer(sid.encode().ljust(12, b"\0"), "S1"),
        ),
        Var(
            "lat",
            NC_FLOAT,
            [],
            [attr_s("standard_name", "latitude"), attr_s("units", "degrees_north")],
            np.array(lat),
        ),
        Var(
            "lon",
            NC_FLOAT,
            [],
            [attr_s("standard_name", "longitude"), attr_s("units", "degrees_east")],
            np.array(lon),
        ),
        Var(
            ctx.var,
            NC_FLOAT,
            ["time"],
            [
                attr_s("standard_name", STD.get(ctx.var, ctx.var)),
                attr_s("long_name", LONG.get(ctx.var, ctx.var)),
                attr_s("units", UNITS.get(ctx.var, "1")),
                attr_s("coordinates", "lat lon station_name"),
            ],
            v1,
        ),
        Var(
            "ps",
            NC_FLOAT,
            ["time"],
            [
                attr_s("standard_name", "surface_air_pressure"),
                attr_s("long_name", "Surface Air Pressure"),
                attr_s("units", "Pa"),
                attr_f("_FillValue", FILL_F),
            ],
            ps,
        ),
        Var(
            "tdps",
            NC_FLOAT,
            ["time"],
            [
                attr_s("standard_name", "dew_point_temperature"),
                attr_s("units", "K"),
            ],
            td,
        ),
    ]
    if four:
        qc = rng.choice(np.array([0, 0, 0, 0, 0, 0, 1, 2], np.int16), nt)
        f.vars.append(
            Var(
                "qc",
                NC_SHORT,
                ["time"],
                [
                    attr_s("long_name", "quality flag"),
                    ("flag_values", NC_SHORT, [0, 1, 2]),
                    attr_s("flag_meanings", "good suspect bad"),
                ],
                # two shorts a record (flag and count), so that the slab is 4 bytes
                np.stack([qc, np.zeros(nt, np.int16)], axis=1),
            )
        )
        f.dims.append(("two", 2))
        f.vars[-1].dims = ["time", "two"]
    return f


def tile(ctx: Ctx, target: int, packed: bool) -> File:
    rng = ctx.rng
    item = 2 if packed else 4
    cells = max(16, (target - 1600) // item)
    ny = int(np.clip(np.sqrt(cells * rng.uniform(0.5, 2.0)), 4, 256))
    nx = max(4, cells // ny)
    if packed and (ny * nx) % 2:
        nx += 1
    lat0 = rng.uniform(-80, 80 - ny * 0.25)
    lon0 = rng.uniform(0, 360 - nx * 0.25)
    lat = lat0 + 0.25 * np.arange(ny)
    lon = lon0 + 0.25 * np.arange(nx)
    ky, kx = rng.uniform(0.5, 2.5, 2) * 2 * np.pi
    phy, phx = rng.uniform(0, 2 * np.pi, 2)
    yy = np.sin(ky * np.arange(ny) / ny + phy)[:, None]
    xx = np.cos(kx * np.arange(nx) / nx + phx)[None, :]
    base, amp, unit = FIELDS.get(ctx.var, (280.0, 10.0, "K"))
    field = base - 0.3 * amp * np.sin(np.deg2rad(lat))[:, None] + amp * yy * xx
    field = field + np.cumsum(rng.normal(0, 0.02 * amp, (ny, nx)), axis=1) * 0.3
    field = field + rng.normal(0, 0.01 * amp, (ny, nx))
    land = (yy * 0.7 + xx * 0.6 + rng.normal(0, 0.05, (ny, nx))) > 0.6
    f = File(
        ctx.version,
        [("time", 1), ("lat", ny), ("lon", nx), ("bnds", 2)],
        gatts(ctx, "daily mean tile") + [attr_s("frequency", "day")],
    )
    t0 = (ctx.year - 1850) * 365.0 + ctx.day + 0.5
    f.vars = [
        Var(
            "time",
            NC_DOUBLE,
            ["time"],
            [
                attr_s("standard_name", "time"),
                attr_s("units", "days since 1850-01-01"),
                attr_s("calendar", "noleap"),
                attr_s("bounds", "time_bnds"),
            ],
            np.array([t0]),
        ),
        Var(
            "time_bnds",
            NC_DOUBLE,
            ["time", "bnds"],
            [],
            np.array([[t0 - 0.5, t0 + 0.5]]),
        ),
        Var(
            "lat",
            NC_DOUBLE,
            ["lat"],
            [
                attr_s("standard_name", "latitude"),
                attr_s("units", "degrees_north"),
                attr_s("axis", "Y"),
            ],
            lat,
        ),
        Var(
            "lon",
            NC_DOUBLE,
            ["lon"],
            [
                attr_s("standard_name", "longitude"),
                attr_s("units", "degrees_east"),
                attr_s("axis", "X"),
            ],
            lon,
        ),
    ]
    common = [
        attr_s("standard_name", STD.get(ctx.var, ctx.var)),
        attr_s("long_name", LONG.get(ctx.var, ctx.var)),
        attr_s("units", unit),
        attr_s("cell_methods", "time: mean"),
    ]
    if packed:
        lo, hi = field.min() - 1, field.max() + 1
        scale = (hi - lo) / 65000.0
        offset = (hi + lo) / 2
        q = np.round((field - offset) / scale).astype(np.int16)
        q[land & (rng.random() < 0.5)] = -32767
        attrs = common + [
            ("_FillValue", NC_SHORT, -32767),
            attr_f("scale_factor", np.float32(scale)),
            attr_f("add_offset", np.float32(offset)),
        ]
        f.vars.append(Var(ctx.var, NC_SHORT, ["time", "lat", "lon"], attrs, q[None]))
    else:
        v = field.astype(np.float32)
        v[land] = FILL_F
        attrs = common + [attr_f("_FillValue", FILL_F), attr_f("missing_value", FILL_F)]
        f.vars.append(Var(ctx.var, NC_FLOAT, ["time", "lat", "lon"], attrs, v[None]))
    return f


def profile(ctx: Ctx, target: int) -> File:
    rng = ctx.rng
    ocean = ctx.var in ("thetao", "so")
    nprof = int(rng.integers(1, 9))
    nz = int(np.clip((target - 2200) // (8 * nprof + 8), 4, 400))
    if ocean:
        z = np.round(np.cumsum(np.geomspace(1.0, 50.0, nz)), 2)
        zname, zunits, zstd, positive = "depth", "m", "depth", "down"
    else:
        z = np.round(np.geomspace(100000.0, 1000.0, nz), 1)
        zname, zunits, zstd, positive = "plev", "Pa", "air_pressure", "down"
    frac = np.linspace(0, 1, nz)[None, :]
    wob = np.cumsum(rng.normal(0, 0.05, (nprof, nz)), axis=1)
    if ocean:
        a = 2.0 + 24.0 * np.exp(-4 * frac) + wob + rng.uniform(-2, 2, (nprof, 1))
        b = 34.5 + 0.8 * frac + 0.1 * wob
        an, bn = ("thetao", "so")
        at = (STD["thetao"], "degC", "Sea Water Potential Temperature")
        bt = ("sea_water_salinity", "0.001", "Sea Water Salinity")
    else:
        a = 290.0 - 70.0 * frac + 2 * wob + rng.uniform(-5, 5, (nprof, 1))
        b = 0.012 * np.exp(-5 * frac) * (1 + 0.1 * wob)
        an, bn = ("ta", "hus")
        at = ("air_temperature", "K", "Air Temperature")
        bt = ("specific_humidity", "1", "Specific Humidity")
    a = a + rng.normal(0, 0.01, a.shape)
    f = File(
        ctx.version,
        [("profile", nprof), (zname, nz)],
        gatts(ctx, "profiles") + [attr_s("featureType", "profile")],
    )
    t0 = (ctx.year - 1850) * 365.0 + ctx.day
    f.vars = [
        Var(
            zname,
            NC_DOUBLE,
            [zname],
            [
                attr_s("standard_name", zstd),
                attr_s("units", zunits),
                attr_s("positive", positive),
                attr_s("axis", "Z"),
            ],
            z,
        ),
        Var(
            "time",
            NC_DOUBLE,
            ["profile"],
            [
                attr_s("standard_name", "time"),
                attr_s("units", "days since 1850-01-01"),
                attr_s("calendar", "proleptic_gregorian"),
            ],
            t0 + np.sort(rng.uniform(0, 1, nprof)),
        ),
        Var(
            "lat",
            NC_FLOAT,
            ["profile"],
            [attr_s("standard_name", "latitude"), attr_s("units", "degrees_north")],
            rng.uniform(-70, 70, nprof).astype(np.float32),
        ),
        Var(
            "lon",
            NC_FLOAT,
            ["profile"],
            [attr_s("standard_name", "longitude"), attr_s("units", "degrees_east")],
            rng.uniform(-180, 180, nprof).astype(np.float32),
        ),
        Var(
            an,
            NC_FLOAT,
            ["profile", zname],
            [
                attr_s("standard_name", at[0]),
                attr_s("units", at[1]),
                attr_s("long_name", at[2]),
                attr_f("_FillValue", FILL_F),
                attr_s("coordinates", "time lat lon"),
            ],
            a.astype(np.float32),
        ),
        Var(
            bn,
            NC_FLOAT,
            ["profile", zname],
            [
                attr_s("standard_name", bt[0]),
                attr_s("units", bt[1]),
                attr_s("long_name", bt[2]),
                attr_f("_FillValue", FILL_F),
                attr_s("coordinates", "time lat lon"),
            ],
            b.astype(np.float32),
        ),
    ]
    return f


def trajectory(ctx: Ctx, target: int) -> File:
    rng = ctx.rng
    cdf5 = ctx.version == 5
    per_rec = 8 + 4 * 4 + (4 if cdf5 else 0)
    n = max(4, (target - 1800) // per_rec)
    lat = rng.uniform(-60, 60) + np.cumsum(rng.normal(0, 0.01, n))
    lon = rng.uniform(-180, 180) + np.cumsum(rng.normal(0.005, 0.01, n))
    alt = np.maximum(0, 500 + 300 * smooth(rng, n, 0.01))
    temp = 288.0 - 0.0065 * alt + 0.5 * smooth(rng, n, 0.05) + rng.normal(0, 0.05, n)
    f = File(
        ctx.version,
        [("obs", 0), ("trajectory", 1)],
        gatts(ctx, "trajectory") + [attr_s("featureType", "trajectory")],
        numrecs=n,
    )
    t0 = (ctx.year - 1970) * 365 * 86400 + ctx.day * 86400
    times = t0 + np.cumsum(rng.integers(50, 70, n))
    f.vars = [
        Var(
            "time",
            NC_INT64 if cdf5 else NC_DOUBLE,
            ["obs"],
            [
                attr_s("standard_name", "time"),
                attr_s("units", "seconds since 1970-01-01 00:00:00"),
                attr_s("calendar", "standard"),
            ],
            times if cdf5 else times.astype(np.float64),
        ),
        Var(
            "lat",
            NC_FLOAT,
            ["obs"],
            [attr_s("standard_name", "latitude"), attr_s("units", "degrees_north")],
            lat.astype(np.float32),
        ),
        Var(
            "lon",
            NC_FLOAT,
            ["obs"],
            [attr_s("standard_name", "longitude"), attr_s("units", "degrees_east")],
            lon.astype(np.float32),
        ),
        Var(
            "alt",
            NC_FLOAT,
            ["obs"],
            [
                attr_s("standard_name", "altitude"),
                attr_s("units", "m"),
                attr_s("positive", "up"),
            ],
            np.round(alt, 1).astype(np.float32),
        ),
        Var(
            "ta",
            NC_FLOAT,
            ["obs"],
            [
                attr_s("standard_name", "air_temperature"),
                attr_s("units", "K"),
                attr_f("_FillValue", FILL_F),
                attr_s("coordinates", "time lat lon alt"),
            ],
            temp.astype(np.float32),
        ),
    ]
    if cdf5:
        f.vars.append(
            Var(
                "qc",
                NC_USHORT,
                ["obs"],
                [
                    attr_s("long_name", "quality flags"),
                    ("_FillValue", NC_USHORT, 65535),
                    ("valid_max", NC_USHORT, 4095),
                ],
                rng.choice(np.array([0, 0, 0, 1, 16], np.uint16), n),
            )
        )
        f.vars.append(
            Var(
                "trajectory_id",
                NC_UINT,
                ["trajectory"],
                [attr_s("cf_role", "trajectory_id"), ("valid_min", NC_UINT64, 0)],
                np.array([rng.integers(0, 2**32 - 1)], np.uint32),
            )
        )
    return f


STD = {
    "tas": "air_temperature",
    "pr": "precipitation_flux",
    "sfcWind": "wind_speed",
    "hurs": "relative_humidity",
    "ts": "surface_temperature",
    "psl": "air_pressure_at_mean_sea_level",
    "zg": "geopotential_height",
    "uas": "eastward_wind",
    "sos": "sea_surface_salinity",
    "thetao": "sea_water_potential_temperature",
}
LONG = {
    "tas": "Near-Surface Air Temperature",
    "pr": "Precipitation",
    "sfcWind": "Near-Surface Wind Speed",
    "hurs": "Near-Surface Relative Humidity",
    "ts": "Surface Temperature",
    "psl": "Sea Level Pressure",
    "zg": "Geopotential Height at 500 hPa",
    "uas": "Eastward Near-Surface Wind",
    "sos": "Sea Surface Salinity",
}
UNITS = {"tas": "K", "pr": "kg m-2 s-1", "sfcWind": "m s-1", "hurs": "%"}
FIELDS = {
    "ts": (285.0, 15.0, "K"),
    "psl": (101300.0, 1500.0, "Pa"),
    "zg": (5600.0, 150.0, "m"),
    "uas": (0.0, 8.0, "m s-1"),
    "sos": (34.5, 1.5, "0.001"),
}


def make(ctx: Ctx, template: str) -> bytes:
    target = t_size(ctx.rng)
    if template == "station":
        f = station(ctx, target)
    elif template == "tile":
        f = tile(ctx, target, packed=False)
    elif template == "tile_short":
        f = tile(ctx, target, packed=True)
    elif template == "profile":
        f = profile(ctx, target)
    else:
        f = trajectory(ctx, target)
    return encode(f)


# --- the tree ------------------------------------------------------------------------------


def leaf(k: int) -> tuple[str, str, str, str, int, str, int]:
    """Directory k: (model, experiment, member, variable, year, template, format)."""
    var, template, version = VARIABLES[k % len(VARIABLES)]
    k //= len(VARIABLES)
    year = 1990 + k % YEARS
    k //= YEARS
    member = MEMBERS[k % len(MEMBERS)]
    k //= len(MEMBERS)
    experiment = EXPERIMENTS[k % len(EXPERIMENTS)]
    k //= len(EXPERIMENTS)
    model = MODELS[k % len(MODELS)] + (
        "" if k < len(MODELS) else f"-{k // len(MODELS)}"
    )
    if template == "tile" and version == 1 and (k + year) % 4 == 0:
        version = 2  # some tiles as CDF-2 too
    return model, experiment, member, var, year, template, version


DAYS = np.cumsum([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])


def write_dir(job: tuple[str, int, int, int]) -> tuple[int, int]:
    """Writes directory k's first `count` files; returns (files, bytes)."""
    root, seed, k, count = job
    model, experiment, member, var, year, template, version = leaf(k)
    d = os.path.join(root, model, experiment, member, var, str(year))
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng([seed, k])
    total = 0
    for day in range(count):
        month = int(np.searchsorted(DAYS, day, side="right"))
        date = f"{year}{month:02d}{day - DAYS[month - 1] + 1:02d}"
        ctx = Ctx(rng, model, experiment, member, var, year, day, date, version)
        data = make(ctx, template)
        path = os.path.join(d, f"{var}_{date}.nc")
        tmp = os.path.join(d, f".{var}_{date}.nc.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.rename(tmp, path)
        total += len(data)
    return count, total


def generate(n: int, root: str, seed: int, jobs: int) -> None:
    marker = os.path.join(root, f".complete-{n}-{seed}")
    if os.path.exists(marker):
        print(f"make_million: {root} holds {n:,} files already", file=sys.stderr)
        return
    os.makedirs(root, exist_ok=True)
    dirs = (n + PER_DIR - 1) // PER_DIR
    work = [(root, seed, k, min(PER_DIR, n - k * PER_DIR)) for k in range(dirs)]
    t0 = time.monotonic()
    files = total = 0
    with multiprocessing.Pool(jobs) as pool:
        for i, (c, b) in enumerate(pool.imap_unordered(write_dir, work, chunksize=1)):
            files += c
            total += b
            if (i + 1) % 200 == 0:
                print(
                    f"make_million: {files:,} files, {total / 2**20:,.0f} MiB, "
                    f"{time.monotonic() - t0:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
    dt = time.monotonic() - t0
    with open(marker, "w") as m:
        m.write(f"{files} {total}\n")
    print(
        f"make_million: wrote {files:,} files ({total:,} bytes, {total / files / 1024:.1f} KiB "
        f"on average) into {root} in {dt:.1f} s ({files / dt:,.0f} files/s)",
        file=sys.stderr,
    )


# --- the check ---------------------------------------------------------------------------


def check(n: int, root: str, seed: int, k: int) -> int:
    """ncdump -h and ncdump of k random files, every template and format among them."""
    rnd = random.Random(seed)
    dirs = (n + PER_DIR - 1) // PER_DIR
    picks: list[tuple[int, int]] = []
    seen: set[tuple[str, int]] = set()
    for d in range(dirs):  # one file of each template and format first
        *_, template, version = leaf(d)
        if (template, version) not in seen:
            seen.add((template, version))
            picks.append((d, rnd.randrange(min(PER_DIR, n - d * PER_DIR))))
    while len(picks) < k:
        d = rnd.randrange(dirs)
        picks.append((d, rnd.randrange(min(PER_DIR, n - d * PER_DIR))))
    try:
        import netCDF4
    except ImportError:
        netCDF4 = None
    bad = 0
    sizes = []
    for d, day in picks:
        model, experiment, member, var, year, template, version = leaf(d)
        dd = os.path.join(root, model, experiment, member, var, str(year))
        month = int(np.searchsorted(DAYS, day, side="right"))
        path = os.path.join(
            dd, f"{var}_{year}{month:02d}{day - DAYS[month - 1] + 1:02d}.nc"
        )
        sizes.append(os.path.getsize(path))
        for args in (["ncdump", "-h", path], ["ncdump", path]):
            r = subprocess.run(args, capture_output=True, text=True, check=False)
            if r.returncode != 0 or "data:" not in r.stdout and "-h" not in args:
                bad += 1
                print(f"make_million: FAILED {' '.join(args)}: {r.stderr.strip()}")
        if netCDF4 is not None:
            try:
                with netCDF4.Dataset(path) as ds:
                    fmt = ds.data_model
                    want = {
                        1: "NETCDF3_CLASSIC",
                        2: "NETCDF3_64BIT_OFFSET",
                        5: "NETCDF3_64BIT_DATA",
                    }
                    assert fmt == want[version], (fmt, version)
                    v = (
                        ds.variables.get(var)
                        or ds.variables.get("ta")
                        or ds.variables.get("thetao")
                    )
                    assert v is not None, list(ds.variables)
                    a = np.ma.filled(v[:].astype(np.float64), np.nan)
                    assert np.isfinite(a).any(), "no valid values"
            except Exception as e:  # noqa: BLE001 (every failure is reported)
                bad += 1
                print(f"make_million: FAILED netCDF4 {path}: {e!r}")
    kinds = ", ".join(f"{t} CDF-{v}" for t, v in sorted(seen))
    print(
        f"make_million: checked {len(picks)} files ({kinds}; {min(sizes):,}-{max(sizes):,} "
        f"bytes) with ncdump{' and netCDF4' if netCDF4 else ''}: {bad} failures",
        file=sys.stderr,
    )
    return 1 if bad else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("n", type=int, help="number of files")
    p.add_argument("dir", help="root of the tree")
    p.add_argument("--seed", type=int, default=51)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument(
        "--check", type=int, default=0, metavar="K", help="check K random files"
    )
    a = p.parse_args()
    if a.n < 1:
        p.error("N must be at least 1")
    generate(a.n, a.dir, a.seed, a.jobs)
    if a.check:
        return check(a.n, a.dir, a.seed, a.check)
    return 0


if __name__ == "__main__":
    sys.exit(main())
