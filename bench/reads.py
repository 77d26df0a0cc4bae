#!/usr/bin/env python3
"""Reads at the codec's limit: every comparison of the read-speed targets, in one run.

    python3 bench/reads.py [DIR] [--records N] [--bin PATH] [--runs N] [--tiny-dir DIR]
                           [--tiny-real DIR]

DIR (default target/bench-reads) receives the synthetic variable (bench/make_t2m.py: float
t2m(time=N, 721, 1440), 4.15 MB per record; N=480, the default, makes it 2 GB), its archives,
the peers' files and the copy of the binary that every nc3pack command runs (a binary the
linker has just written starts slower until the page cache lets it go; `cargo install` copies
one the same way). Every command is a fresh process timed by this script (wall time, user
and system time and peak RSS from wait4), warm page cache, interleaved (A, B, A, B, ...) so
that the noise of a shared machine falls on both sides; the median is reported. It measures:

  whole variable   `nc3pack slice A t2m --format raw` from the archive with default blocks
                   and with 64 KiB blocks, and from the original; `nc3pack unpack A -` of the
                   whole file; `zstd -d` of the file compressed with `zstd -3 -T2`
  unpack to file   `nc3pack unpack -f A out.nc` and `zstd -d -f in.zst -o out.nc`, on DIR
  cold open        a fresh process reading one value: the archive at each block size, the
                   original, `--version`; which block sizes are within 1.5x of the original
  time series      100 values along time at one point, archives with default, 256 KiB,
                   64 KiB and 16 KiB blocks, and the original
  pack             `nc3pack pack` with default and 64 KiB blocks; `zstd -3 -T2`
  tiny files       one `nc3pack pack` process per tiny file vs `zstd -3`, over 50 files
                   (--tiny-dir, default target/bench-corpus/tiny; skipped if missing)
  tiny real files  with --tiny-real DIR: bench/tiny.sh DIR (real netCDF-3 files of at most
                   16 KiB, gathered into DIR on the first run), nc3pack's total against
                   `xz -6`'s
  libraries        inside one Python process (no start, no import), the whole of t2m read
                   with the Python package (`nc3pack.open(A)["t2m"][...]`) and through the
                   netCDF-C plugin by netCDF4-python (target/release/libnc3pack_netcdf.so,
                   --plugin PATH), against `unpack -` of the same archive, if this Python
                   imports them; the best of the runs, as each read fills a new 0.5 GB
                   array, and on a virtual machine the first touch of memory the host has
                   taken back costs up to 0.7 s of system time, at random
  xarray           a full read of t2m through engine="nc3z" and engine="netcdf4" (the
                   original), if this Python imports nc3pack and xarray

then PASS/FAIL for each target of the read-speed issue. Needs the Debian packages zstd and
time, python3 with numpy and netCDF4 (to make the variable), and a release build
(cargo build --release; --bin picks another binary).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VAR = "t2m"
RECORD = 721 * 1440 * 4


def log(msg: str) -> None:
    print(f"reads.py: {msg}", file=sys.stderr, flush=True)


class Run:
    """One finished process: wall seconds, user + system seconds, system seconds, peak RSS."""

    def __init__(self, wall: float, cpu: float, sys_s: float, rss_mb: float) -> None:
        self.wall, self.cpu, self.sys, self.rss = wall, cpu, sys_s, rss_mb


def run_once(cmd: list[str], stdout: str | None = None) -> Run:
    with open(stdout or os.devnull, "wb") as out:
        t = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
    err = p.stderr.read().decode(errors="replace") if p.stderr else ""
    if status != 0:
        sys.exit(f"reads.py: {' '.join(cmd)} failed ({status}): {err.strip()}")
    return Run(wall, ru.ru_utime + ru.ru_stime, ru.ru_stime, ru.ru_maxrss / 1024)


def bench(cmds: dict[str, list[str]], runs: int, warmup: int = 1) -> dict[str, Run]:
    """The median run of each command, run interleaved `runs` times after `warmup` rounds."""
    got: dict[str, list[Run]] = {k: [] for k in cmds}
    for i in range(warmup + runs):
        for k, c in cmds.items():
            r = run_once(c)
            if i >= warmup:
                got[k].append(r)
    med = {}
    for k, rs in got.items():
        rs.sort(key=lambda r: r.wall)
        med[k] = rs[len(rs) // 2]
    return med


def table(title: str, rows: Sequence[tuple[str, ...]], head: tuple[str, ...]) -> None:
    print(f"\n### {title}\n")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


CHECKS: list[tuple[str, bool, str]] = []


def check(name: str, ok: bool, detail: str) -> None:
    CHECKS.append((name, ok, detail))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", nargs="?", default=str(ROOT / "target/bench-reads"))
    ap.add_argument("--records", type=int, default=480)
    ap.add_argument("--bin", default=str(ROOT / "target/release/nc3pack"))
    ap.add_argument(
        "--runs", type=int, default=5, help="runs of each big command (default 5)"
    )
    ap.add_argument("--tiny-dir", default=str(ROOT / "target/bench-corpus/tiny"))
    ap.add_argument(
        "--plugin",
        default=str(ROOT / "target/release/libnc3pack_netcdf.so"),
        help="the netCDF-C plugin (cargo build --release -p nc3pack-netcdf)",
    )
    ap.add_argument(
        "--tiny-real",
        metavar="DIR",
        help="also run bench/tiny.sh DIR: real files of at most 16 KiB against xz -6",
    )
    a = ap.parse_args()
    for tool in ("zstd",):
        if not shutil.which(tool):
            sys.exit(f"reads.py: needs {tool} (apt-get install zstd)")
    binp = a.bin
    if not os.access(binp, os.X_OK):
        sys.exit(
            f"reads.py: no nc3pack binary at {binp} (cargo build --release, or --bin)"
        )
    d = Path(a.dir)
    d.mkdir(parents=True, exist_ok=True)
    # Every command runs a copy of the binary, as `cargo install` makes one: a file the linker
    # has just written starts 0.1-0.3 ms slower a process (measured on ext4, Linux 6.18) until
    # its pages leave the page cache, which would fall on the fresh-process timings only.
    copy = d / "nc3pack-under-test"
    shutil.copyfile(binp, copy)
    copy.chmod(0o755)
    binp = str(copy)
    orig = d / f"t2m_{a.records}.nc"
    if not orig.exists():
        log(f"writing {orig}")
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "bench/make_t2m.py"),
                str(orig),
                "--records",
                str(a.records),
            ],
            check=True,
        )
    var_bytes = a.records * RECORD
    gb = var_bytes / 1e9
    cores = os.cpu_count() or 1
    runs = a.runs
    small_runs = max(20, runs * 4)

    # ---- pack ---------------------------------------------------------------------------------
    blocks = {
        "default (1 MiB)": None,
        "256 KiB": "256KiB",
        "64 KiB": "64KiB",
        "16 KiB": "16KiB",
    }
    arch: dict[str, Path] = {}
    pack_cmd: dict[str, list[str]] = {}
    for name, bs in blocks.items():
        p = d / f"t2m_{a.records}_{bs or 'default'}.nc3z"
        arch[name] = p
        c = [binp, "pack", "-q", "-f", str(orig), str(p)]
        if bs:
            c += ["--var", f"{VAR}:block-size={bs}"]
        pack_cmd[name] = c
    zst = d / f"t2m_{a.records}.nc.zst"
    log("packing (default, 256/64/16 KiB blocks) and zstd -3 -T2")
    pk = bench(
        {
            "nc3pack default": pack_cmd["default (1 MiB)"],
            "nc3pack 64 KiB blocks": pack_cmd["64 KiB"],
            "zstd -3 -T2": ["zstd", "-3", "-T2", "-q", "-f", str(orig), "-o", str(zst)],
        },
        runs=1,
        warmup=0,
    )
    for name in ("256 KiB", "16 KiB"):
        run_once(pack_cmd[name])
    size = orig.stat().st_size
    rows: list[tuple[str, ...]] = []
    for k, r in pk.items():
        out = {
            "nc3pack default": arch["default (1 MiB)"],
            "nc3pack 64 KiB blocks": arch["64 KiB"],
            "zstd -3 -T2": zst,
        }[k]
        rows.append(
            (
                k,
                f"{r.wall:.2f}",
                f"{size / r.wall / 1e9:.2f}",
                f"{size / out.stat().st_size:.3f}",
            )
        )
    table(
        f"Pack {orig.name} ({size / 1e9:.2f} GB), one run",
        rows,
        ("", "s", "GB/s", "ratio"),
    )
    r64 = pk["nc3pack 64 KiB blocks"].wall / pk["nc3pack default"].wall
    check(
        "pack with 64 KiB blocks <= 1.5x the default pack time",
        r64 <= 1.5,
        f"{r64:.2f}x",
    )

    # ---- whole variable -----------------------------------------------------------------------
    log("whole-variable reads")
    whole = bench(
        {
            "slice archive (1 MiB blocks)": [
                binp,
                "slice",
                str(arch["default (1 MiB)"]),
                VAR,
                "--format",
                "raw",
            ],
            "slice archive (64 KiB blocks)": [
                binp,
                "slice",
                str(arch["64 KiB"]),
                VAR,
                "--format",
                "raw",
            ],
            "slice original": [binp, "slice", str(orig), VAR, "--format", "raw"],
            "unpack archive to stdout": [
                binp,
                "unpack",
                "-q",
                str(arch["default (1 MiB)"]),
                "-",
            ],
            "zstd -d (zstd -3 file)": ["zstd", "-d", "-c", "-q", str(zst)],
        },
        runs=runs,
    )
    rows = [
        (k, f"{r.wall:.3f}", f"{gb / r.wall:.2f}", f"{r.cpu:.2f}", f"{r.rss:.0f}")
        for k, r in whole.items()
    ]
    table(
        f"Whole variable ({gb:.2f} GB), median of {runs}",
        rows,
        ("", "s", "GB/s", "CPU s", "peak RSS MB"),
    )
    s1 = whole["slice archive (1 MiB blocks)"].wall
    s64 = whole["slice archive (64 KiB blocks)"].wall
    un = whole["unpack archive to stdout"].wall
    zd = whole["zstd -d (zstd -3 file)"].wall
    check(
        "whole variable (1 MiB blocks) at least as fast as unpack",
        s1 <= un,
        f"slice {gb / s1:.2f} GB/s, unpack {gb / un:.2f} GB/s",
    )
    check(
        "whole variable (1 MiB blocks) >= 3x zstd -d", zd / s1 >= 3.0, f"{zd / s1:.2f}x"
    )
    check(
        "whole variable (64 KiB blocks) >= 3x zstd -d",
        zd / s64 >= 3.0,
        f"{zd / s64:.2f}x",
    )
    # A few blocks per thread: 8 blocks of 1 MiB per core over the original's own RSS.
    base_rss = whole["slice original"].rss
    rss = whole["slice archive (1 MiB blocks)"].rss
    check(
        "whole-variable memory bounded (<= original's + 8 MiB per core)",
        rss <= base_rss + 8 * cores,
        f"{rss:.0f} MB vs {base_rss:.0f} MB",
    )

    # ---- unpack to a file ---------------------------------------------------------------------
    log("unpack to a file")
    out_nc = d / "unpacked.nc"
    uf = bench(
        {
            "nc3pack unpack -f": [
                binp,
                "unpack",
                "-q",
                "-f",
                str(arch["default (1 MiB)"]),
                str(out_nc),
            ],
            "zstd -d -f": ["zstd", "-d", "-q", "-f", str(zst), "-o", str(out_nc)],
        },
        runs=max(3, runs // 2),
    )
    out_nc.unlink(missing_ok=True)
    rows = [(k, f"{r.wall:.3f}", f"{size / r.wall / 1e9:.2f}") for k, r in uf.items()]
    table(f"Unpack to a file on {d}", rows, ("", "s", "GB/s"))
    ru = uf["zstd -d -f"].wall / uf["nc3pack unpack -f"].wall
    check("unpack to a file >= 1.5x zstd -d to a file", ru >= 1.5, f"{ru:.2f}x")

    # ---- cold open + one value, time series ----------------------------------------------------
    log("cold open and time series")
    mid = f"{a.records // 2},360,720"
    ts_count = min(100, a.records)

    def point(path: Path, start: str, count: str) -> list[str]:
        """`nc3pack slice` of the values from `start` (count `count`) of t2m in `path`."""
        return [binp, "slice", str(path), VAR, "--start", start, "--count", count]

    cold = {f"archive, {k} blocks": point(p, mid, "1,1,1") for k, p in arch.items()}
    cold["original"] = point(orig, mid, "1,1,1")
    cold["--version"] = [binp, "--version"]
    one = bench(cold, runs=small_runs, warmup=3)
    o1 = one["original"].wall
    rows = [
        (
            k,
            f"{r.wall * 1e3:.2f}",
            f"{r.wall / o1:.2f}x",
            f"{r.sys * 1e3:.2f}",
            f"{r.rss:.0f}",
        )
        for k, r in one.items()
    ]
    table(
        f"Cold open + one value (fresh process), median of {small_runs}",
        rows,
        ("", "ms", "vs original", "sys ms", "peak RSS MB"),
    )
    rc = one["archive, default (1 MiB) blocks"].wall / o1
    check(
        "cold open + one value (1 MiB blocks) within 1.5x of the original",
        rc <= 1.5,
        f"{rc:.2f}x",
    )
    within = [k for k in arch if one[f"archive, {k} blocks"].wall / o1 <= 1.5]
    print(
        f"\nBlock sizes whose cold open + one value is within 1.5x of the original: {', '.join(within) or 'none'}"
    )

    series = {
        f"archive, {k} blocks": point(p, "0,360,720", f"{ts_count},1,1")
        for k, p in arch.items()
    }
    series["original"] = point(orig, "0,360,720", f"{ts_count},1,1")
    ts = bench(series, runs=small_runs, warmup=2)
    o = ts["original"].wall
    rows = []
    for k, r in ts.items():
        ratio = next(
            (f"{size / arch[n].stat().st_size:.3f}" for n in arch if n in k), "1"
        )
        rows.append((k, f"{r.wall * 1e3:.2f}", f"{r.wall / o:.2f}x", ratio))
    table(
        f"Time series of {ts_count} values along time at one point, median of {small_runs}",
        rows,
        ("", "ms", "vs original", "archive ratio"),
    )
    r_ts = ts["archive, 64 KiB blocks"].wall / o
    check(
        "time series with 64 KiB blocks within 3x of the original",
        r_ts <= 3.0,
        f"{r_ts:.2f}x",
    )
    within2 = [k for k in arch if ts[f"archive, {k} blocks"].wall / o <= 2.0]
    print(
        f"\nBlock sizes whose time series is within 2x of the original: {', '.join(within2) or 'none'}"
    )

    # ---- tiny files -----------------------------------------------------------------------------
    tiny = Path(a.tiny_dir)
    files = sorted(tiny.glob("*.nc"))[:50] if tiny.is_dir() else []
    if files:
        log(f"one process per tiny file ({len(files)} files)")
        tdir = d / "tiny-out"
        tdir.mkdir(exist_ok=True)
        rounds: dict[str, list[float]] = {"nc3pack pack": [], "zstd -3": []}
        for _ in range(
            3
        ):  # three rounds, interleaved file by file; the median round counts
            rnd = {k: 0.0 for k in rounds}
            for f in files:
                rnd["nc3pack pack"] += run_once(
                    [binp, "pack", "-q", "-f", str(f), str(tdir / (f.name + "z"))]
                ).wall
                rnd["zstd -3"] += run_once(
                    [
                        "zstd",
                        "-3",
                        "-q",
                        "-f",
                        str(f),
                        "-o",
                        str(tdir / (f.name + ".zst")),
                    ]
                ).wall
            for k, v in rnd.items():
                rounds[k].append(v)
        tot = {k: statistics.median(v) for k, v in rounds.items()}
        shutil.rmtree(tdir)
        per = {k: v / len(files) * 1e3 for k, v in tot.items()}
        table(
            f"One process per tiny file ({len(files)} files of {tiny})",
            [(k, f"{v:.2f}") for k, v in per.items()],
            ("", "ms per file"),
        )
        rt = per["nc3pack pack"] / per["zstd -3"]
        check(
            "one tiny file per process within 1.5x of zstd -3", rt <= 1.5, f"{rt:.2f}x"
        )

    # ---- tiny real files (bench/tiny.sh) -------------------------------------------------------
    if a.tiny_real:
        log(f"tiny real files: bench/tiny.sh {a.tiny_real}")
        rep = subprocess.run(
            ["bash", str(ROOT / "bench/tiny.sh"), a.tiny_real],
            env={**os.environ, "NC3PACK_BIN": binp},
            capture_output=True,
            text=True,
            check=False,
        )
        if rep.returncode != 0:
            sys.exit(f"reads.py: bench/tiny.sh failed: {rep.stderr.strip()[-500:]}")
        # The report's head and totals table (the per-file table follows a blank line).
        head = rep.stdout.split("\n\n| file |")[0]
        print("\n" + head.replace("## ", "### ", 1))
        totals = {
            cells[0]: int(cells[1])
            for line in head.splitlines()
            if line.startswith("| ")
            and len(cells := [c.strip() for c in line.strip("|").split("|")]) > 1
            and cells[1].isdigit()
        }
        nc, xz = totals["nc3pack default"], totals["xz -6"]
        check(
            "tiny real files: nc3pack's total no larger than xz -6's, all restored",
            nc <= xz and "all byte-identical" in head,
            f"{nc} against {xz} bytes, {nc / xz:.3f}x",
        )

    # ---- the libraries, inside one process ------------------------------------------------------
    lib_code = """
import sys, time
kind, path, var, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
if kind == "nc3pack":
    import nc3pack
    def read():
        return nc3pack.open(path)[var][...]
else:
    import netCDF4
    def read():
        with netCDF4.Dataset(path) as ds:
            ds.set_auto_maskandscale(False)
            return ds[var][...]
read()
times = []
for _ in range(n):
    t = time.perf_counter()
    a = read()
    times.append(time.perf_counter() - t)
    del a
print(min(times))
"""
    readers: dict[str, tuple[str, Path, dict[str, str]]] = {}
    if (
        subprocess.run(
            [sys.executable, "-c", "import nc3pack, numpy"],
            check=False,
            capture_output=True,
        ).returncode
        == 0
    ):
        readers["Python package (nc3pack.open), archive"] = (
            "nc3pack",
            arch["default (1 MiB)"],
            {},
        )
    plugin = Path(a.plugin)
    if (
        plugin.is_file()
        and subprocess.run(
            [sys.executable, "-c", "import netCDF4"], check=False, capture_output=True
        ).returncode
        == 0
    ):
        ncrc = d / "ncrc"
        ncrc.write_text(
            f"NETCDF.UDF0.LIBRARY={plugin.resolve()}\n"
            "NETCDF.UDF0.INIT=nc3pack_netcdf_init\n"
        )
        env = {"NCRCENV_RC": str(ncrc)}
        readers["netCDF4-python through the plugin, archive"] = (
            "netcdf4",
            arch["default (1 MiB)"],
            env,
        )
        readers["netCDF4-python, original"] = ("netcdf4", orig, env)
    if readers:
        log("whole-variable reads inside a Python process")
        lib: dict[str, float] = {}
        for k, (kind, src, env) in readers.items():
            res = subprocess.run(
                [sys.executable, "-c", lib_code, kind, str(src), VAR, str(runs)],
                env={**os.environ, **env},
                capture_output=True,
                text=True,
                check=False,
            )
            if res.returncode != 0:
                sys.exit(f"reads.py: {k}: {res.stderr.strip()[-500:]}")
            lib[k] = float(res.stdout.split()[-1])
        lib["unpack archive to stdout (a process)"] = un
        table(
            f"Whole variable inside a Python process, best of {runs}",
            [(k, f"{v:.3f}", f"{gb / v:.2f}") for k, v in lib.items()],
            ("", "s", "GB/s"),
        )
        for k in readers:
            if "archive" in k:
                check(
                    f"whole variable, {k}, at least as fast as unpack",
                    lib[k] <= un,
                    f"{gb / lib[k]:.2f} against {gb / un:.2f} GB/s",
                )

    # ---- xarray --------------------------------------------------------------------------------
    probe = subprocess.run(
        [sys.executable, "-c", "import nc3pack, xarray, netCDF4"],
        capture_output=True,
        check=False,
    )
    if probe.returncode == 0:
        log("xarray full reads")
        code = (
            "import sys, xarray as xr; ds = xr.open_dataset(sys.argv[1], engine=sys.argv[2]);"
            " ds['t2m'].values; ds.close()"
        )
        xa = bench(
            {
                'engine="nc3z" (archive)': [
                    sys.executable,
                    "-c",
                    code,
                    str(arch["default (1 MiB)"]),
                    "nc3z",
                ],
                'engine="netcdf4" (original)': [
                    sys.executable,
                    "-c",
                    code,
                    str(orig),
                    "netcdf4",
                ],
            },
            runs=runs,
        )
        rows = [(k, f"{r.wall:.2f}", f"{r.rss:.0f}") for k, r in xa.items()]
        table(
            f"xarray, full read of t2m in a fresh process, median of {runs}",
            rows,
            ("", "s", "peak RSS MB"),
        )
        rx = xa['engine="nc3z" (archive)'].wall / xa['engine="netcdf4" (original)'].wall
        check(
            "xarray full read from the archive no slower than netcdf4 from the original",
            rx <= 1.0,
            f"{rx:.2f}x",
        )
    else:
        log("skipping xarray (this Python lacks nc3pack, xarray or netCDF4)")

    print("\n### Targets\n")
    for name, ok, detail in CHECKS:
        print(f"- {'PASS' if ok else 'FAIL'}: {name} ({detail})")
    print(
        f"\n{cores} cores; load average before the run's end: {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
