#!/usr/bin/env python3
"""Reading archives from object storage: requests, bytes and time, against the anchor users
have today (the netCDF-4 copy read with xarray + s3fs + h5netcdf) and one plain GET.

    python bench/remote.py [--corpus DIR] [--runs N] [FILE:VAR ...]

Starts ``s3s-fs`` (a real S3 implementation that checks request signatures; ``cargo install
s3s-fs --version 0.14.1 --features binary``) on 127.0.0.1 over a temporary directory. For each
FILE:VAR (default: DIR/gridded.nc:t2m, from ``bench/make_corpus.py DIR``, and
samples/gridded_sst.nc:sst) it packs FILE with the default options, converts it with
``nccopy -k nc4 -d5 -s``, uploads both with PUT requests (s3fs), and measures, each from a
fresh reader (new connection pool, empty caches), medians of N runs:

- nc3pack: ``nc3pack.open(url, storage_options=...)``; requests and bytes from the reader's
  own counters (``Dataset.request_stats()``: GETs sent, body bytes received).
- nc4 + s3fs + h5netcdf: ``xr.open_dataset(fs.open(key), engine="h5netcdf")`` as xarray's
  documentation shows (s3fs defaults: 50 MiB read-ahead blocks); requests are the S3 API calls
  s3fs makes (``S3FileSystem._call_s3``: HeadObject, GetObject...), bytes what its file object's
  range reads return (``S3File._fetch_range``).
- one plain GET of the whole archive object: ``curl`` of a presigned URL to /dev/null.

"open" is opening (lazy: header and index); "one value" opens and reads one value of VAR;
"full variable" opens and reads all of VAR. Values are read raw (``mask_and_scale=False`` for
xarray; nc3pack returns the stored values) so that neither pays for masking. Throughput is
bytes received per second; the ratio compares nc3pack's full-variable throughput to the plain
GET's (the issue's target: >= 0.8x).

Needs: numpy, netCDF4, xarray, h5netcdf, h5py, s3fs, nc3pack (pip install ./python), nccopy, curl.
Loopback has no network latency: this shows client overhead and request counts, not what a
real store costs per request.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
KEY, SECRET, BUCKET = "benchkey", "benchsecret", "bench"


def s3s_fs() -> str:
    found = shutil.which("s3s-fs")
    if found:
        return found
    for d in (os.environ.get("CARGO_HOME"), str(Path.home() / ".cargo")):
        if d and (Path(d) / "bin" / "s3s-fs").is_file():
            return str(Path(d) / "bin" / "s3s-fs")
    sys.exit("bench/remote.py: s3s-fs is not installed (cargo install s3s-fs --version 0.14.1 "
             "--features binary)")


def start_server(root: Path) -> tuple[subprocess.Popen[bytes], str]:
    (root / BUCKET).mkdir()
    for _ in range(5):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        proc = subprocess.Popen(
            [s3s_fs(), "--host", "127.0.0.1", "--port", str(port), "--access-key", KEY,
             "--secret-key", SECRET, str(root)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):  # up to 10 s
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return proc, f"http://127.0.0.1:{port}"
            except OSError:
                if proc.poll() is not None:
                    break
                time.sleep(0.05)
        proc.kill()
        proc.wait(timeout=10)
    sys.exit("bench/remote.py: s3s-fs did not start listening")


class Counter:
    """Counts s3fs's S3 API calls and the bytes its file objects' range reads return."""

    requests = 0
    bytes = 0

    @classmethod
    def install(cls) -> None:
        import s3fs.core

        call, fetch = s3fs.core.S3FileSystem._call_s3, s3fs.core.S3File._fetch_range

        async def counted_call(self: Any, method: Any, *a: Any, **kw: Any) -> Any:
            cls.requests += 1
            return await call(self, method, *a, **kw)

        def counted_fetch(self: Any, start: int, end: int) -> bytes:
            out: bytes = fetch(self, start, end)
            cls.bytes += len(out)
            return out

        s3fs.core.S3FileSystem._call_s3 = counted_call
        s3fs.core.S3File._fetch_range = counted_fetch

    @classmethod
    def reset(cls) -> None:
        cls.requests = cls.bytes = 0


def median_run(runs: int, f: Callable[[], tuple[int, int]]) -> tuple[int, int, float]:
    """(requests, bytes) of the first timed run, median seconds of ``runs``, after one
    untimed run (imports, first connections of the process)."""
    f()
    times, first = [], None
    for _ in range(runs):
        t = time.perf_counter()
        got = f()
        times.append(time.perf_counter() - t)
        first = first or got
    assert first is not None
    return first[0], first[1], statistics.median(times)


def middle(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(n // 2 for n in shape)


def bench_file(src: Path, var: str, endpoint: str, work: Path, runs: int) -> list[list[str]]:
    import s3fs
    import xarray as xr

    import nc3pack

    z, nc4 = work / (src.stem + ".nc3z"), work / (src.stem + ".nc4")
    nc3pack.pack(src, z, force=True)
    subprocess.run(["nccopy", "-k", "nc4", "-d5", "-s", str(src), str(nc4)], check=True)
    fs_opts = {"key": KEY, "secret": SECRET,
               "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}
    up = s3fs.S3FileSystem(skip_instance_cache=True, **fs_opts)
    for p in (z, nc4):
        up.put_file(str(p), f"{BUCKET}/{p.name}")
    url, url4 = f"s3://{BUCKET}/{z.name}", f"{BUCKET}/{nc4.name}"
    opts = {"key": KEY, "secret": SECRET, "endpoint_url": endpoint, "region_name": "us-east-1"}

    def z_run(what: str) -> tuple[int, int]:
        with nc3pack.open(url, storage_options=opts) as ds:
            v = ds[var]
            if what == "one":
                v[middle(v.shape)]
            elif what == "full":
                v[...]
            s = ds.request_stats()
            assert s is not None
            return s["requests"], s["bytes"]

    def nc4_run(what: str) -> tuple[int, int]:
        Counter.reset()
        fs = s3fs.S3FileSystem(skip_instance_cache=True, **fs_opts)
        with fs.open(url4, "rb") as f, xr.open_dataset(
            f, engine="h5netcdf", mask_and_scale=False, decode_times=False
        ) as ds:
            v = ds[var]
            if what == "one":
                v[middle(v.shape)].values
            elif what == "full":
                v.values
        return Counter.requests, Counter.bytes

    # A presigned URL (signed by s3fs, outside the timing): curl then sends one plain GET.
    signed = up.sign(f"{BUCKET}/{z.name}", expiration=3600)

    def get_run() -> tuple[int, int]:
        out = subprocess.run(
            ["curl", "-sS", "--fail", "-o", "/dev/null", "-w", "%{size_download}", signed],
            check=True, capture_output=True, text=True)
        return 1, int(out.stdout)

    with nc3pack.open(src) as ds:
        v = ds.variables[var]
        vbytes = v.dtype.itemsize * v.size
    label = (f"{src.name} `{var}` {tuple(v.shape)}, {vbytes / 1e6:.1f} MB; "
             f".nc3z {z.stat().st_size / 1e6:.1f} MB, nc4 {nc4.stat().st_size / 1e6:.1f} MB")
    rows, full = [], {}
    for what, name in (("open", "cold open"), ("one", "one value"), ("full", "full variable")):
        for who, f in (("nc3pack", z_run), ("nc4 + s3fs + h5netcdf", nc4_run)):
            n, b, t = median_run(runs, lambda f=f, what=what: f(what))
            rows.append([label, name, who, str(n), f"{b:,}", f"{t * 1e3:.0f} ms",
                         f"{b / t / 1e6:.0f} MB/s" if what == "full" else ""])
            if what == "full":
                full[who] = (b, t)
    n, b, t = median_run(runs, get_run)
    rows.append([label, "whole archive object", "one plain GET (curl)", str(n), f"{b:,}",
                 f"{t * 1e3:.0f} ms", f"{b / t / 1e6:.0f} MB/s"])
    zb, zt = full["nc3pack"]
    ratio = (zb / zt) / (b / t)
    rows.append([label, "full variable / plain GET", "nc3pack", "", "", "",
                 f"**{ratio:.2f}x** throughput ({zt / t:.2f}x the time)"])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="FILE:VAR (default: corpus gridded.nc:t2m and "
                    "samples/gridded_sst.nc:sst)")
    ap.add_argument("--corpus", default=str(ROOT / "target" / "bench-corpus"))
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    files = args.files or [f"{args.corpus}/gridded.nc:t2m",
                           str(ROOT / "samples" / "gridded_sst.nc") + ":sst"]
    pairs = []
    for fv in files:
        path, _, var = fv.rpartition(":")
        if not Path(path).is_file():
            sys.exit(f"bench/remote.py: {path}: no such file (python3 bench/make_corpus.py "
                     f"{args.corpus} makes the corpus)")
        pairs.append((Path(path), var))
    Counter.install()
    with tempfile.TemporaryDirectory(prefix="nc3pack-bench-remote-") as tmp:
        root, work = Path(tmp) / "s3", Path(tmp) / "work"
        root.mkdir()
        work.mkdir()
        proc, endpoint = start_server(root)
        try:
            rows = [r for src, var in pairs
                    for r in bench_file(src, var, endpoint, work, args.runs)]
        finally:
            proc.kill()
            proc.wait(timeout=10)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"s3s-fs on 127.0.0.1, {os.cpu_count()} cores, load average {load}; "
          f"medians of {args.runs} runs, each from a fresh reader\n")
    print("| file | read (cold) | reader | requests | bytes | time | throughput |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
