#!/usr/bin/env python3
"""Reading from Python: xarray on an nc3pack archive vs netCDF-4 vs the original netCDF-3.

    python bench/python_read.py [CORPUS_DIR] [--repeat N]

For each file of the benchmark corpus (bench/make_corpus.py; default CORPUS_DIR:
target/bench-corpus, generated without the tiny files when missing) and
samples/gridded_sst.nc, the same data three ways:

  .nc3z    packed with nc3pack.pack (default options), read with engine="nc3z"
  nc4 -d5  converted with `nccopy -k nc4 -d5 -s`, read with engine="netcdf4"
  .nc      the original netCDF-3 file, read with engine="netcdf4"

and two reads, warm page cache (every file is read once before timing):

  full variable   xr.open_dataset(path, engine=...)[v].values, opened afresh each time (so
                  nc3pack's decoded-block cache starts empty); median of N runs
  one value       a fresh Python process that imports xarray, opens the file and reads
                  ds[v].isel(...).values at the middle of every dimension; median of N runs
                  (the process's whole wall time)

Prints a Markdown table and the issue's targets: full variable from the archive at least as
fast as from nc4 -d5 and at least 0.5x the speed of the original; one value in a fresh
process at most 1.5x the time of the original. Needs nc3pack (pip install ./python),
xarray, netCDF4 and nccopy (netcdf-bin).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import nc3pack
import xarray as xr

ROOT = Path(__file__).resolve().parents[1]

#: (file, variable) pairs read, when present in the corpus.
FILES = [("gridded.nc", "t2m"), ("topo.nc", "elevation"), ("points.nc", "temp")]

ONE_VALUE = """
import sys, xarray as xr
path, engine, var = sys.argv[1:4]
ds = xr.open_dataset(path, engine=engine)
v = ds[var]
v.isel({d: n // 2 for d, n in zip(v.dims, v.shape)}).values
"""


def full_read(path: Path, engine: str, var: str) -> float:
    t = time.perf_counter()
    with xr.open_dataset(path, engine=engine) as ds:
        ds[var].values  # noqa: B018
    return time.perf_counter() - t


def one_value(path: Path, engine: str, var: str) -> float:
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", ONE_VALUE, str(path), engine, var],
        check=True,
        timeout=120,
    )
    return time.perf_counter() - t


def median(f: object, repeat: int, *args: object) -> float:
    f(*args)  # type: ignore[operator]  # warm-up: page cache, imports
    return statistics.median(f(*args) for _ in range(repeat))  # type: ignore[operator]


def fmt(seconds: float) -> str:
    return f"{seconds * 1e3:.0f} ms" if seconds >= 0.1 else f"{seconds * 1e3:.1f} ms"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", nargs="?", default=str(ROOT / "target" / "bench-corpus"))
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    corpus = Path(a.corpus)
    if not all((corpus / f).exists() for f, _ in FILES):
        print(f"generating the corpus in {corpus} (no tiny files)", file=sys.stderr)
        subprocess.run(
            [sys.executable, str(ROOT / "bench" / "make_corpus.py"), str(corpus)]
            + ["--tiny", "0"],
            check=True,
        )
    work = corpus / "python-bench"
    work.mkdir(exist_ok=True)
    cases = [(corpus / f, v) for f, v in FILES if (corpus / f).exists()]
    cases.append((ROOT / "samples" / "gridded_sst.nc", "sst"))
    rows = []
    ok = True
    for original, var in cases:
        arc = work / (original.stem + ".nc3z")
        nc4 = work / (original.stem + ".d5.nc4")
        if not arc.exists() or arc.stat().st_mtime < original.stat().st_mtime:
            nc3pack.pack(original, arc, force=True)
        if not nc4.exists() or nc4.stat().st_mtime < original.stat().st_mtime:
            tmp = nc4.with_suffix(".tmp")
            subprocess.run(
                ["nccopy", "-k", "nc4", "-d5", "-s", str(original), str(tmp)],
                check=True,
                timeout=1200,
            )
            os.replace(tmp, nc4)
        with xr.open_dataset(original, engine="netcdf4") as ds:
            v = ds[var]
            desc = (
                f"{original.name} `{var}` {v.dtype} {v.shape}, {v.nbytes / 1e6:.0f} MB"
            )
        full = [
            median(full_read, a.repeat, arc, "nc3z", var),
            median(full_read, a.repeat, nc4, "netcdf4", var),
            median(full_read, a.repeat, original, "netcdf4", var),
        ]
        one = [
            median(one_value, a.repeat, arc, "nc3z", var),
            median(one_value, a.repeat, nc4, "netcdf4", var),
            median(one_value, a.repeat, original, "netcdf4", var),
        ]
        checks = [
            full[0] <= full[1],
            full[0] <= 2 * full[2],
            one[0] <= 1.5 * one[2],
        ]
        ok = ok and all(checks)
        rows.append((desc, "full variable", full, checks[:2]))
        rows.append((desc, "one value, fresh process", one, checks[2:]))
        print(f"done: {original.name}", file=sys.stderr)
    print(
        "| file | read | .nc3z (nc3z) | nc4 -d5 -s (netcdf4) | original .nc (netcdf4) | targets |"
    )
    print("|---|---|---|---|---|---|")
    for desc, what, t, checks in rows:
        if what == "full variable":
            target = (
                f"{'met' if checks[0] else 'MISSED'} (≤ nc4: {t[0] / t[1]:.2f}×), "
                f"{'met' if checks[1] else 'MISSED'} (≥ 0.5× .nc speed: {t[2] / t[0]:.2f}×)"
            )
        else:
            target = (
                f"{'met' if checks[0] else 'MISSED'} (≤ 1.5× .nc: {t[0] / t[2]:.2f}×)"
            )
        print(
            f"| {desc} | {what} | {fmt(t[0])} | {fmt(t[1])} | {fmt(t[2])} | {target} |"
        )
    print(f"\nall targets met: {'yes' if ok else 'no'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
