"""bench/remote.py runs end to end on a sample and prints the table docs/object-storage.md shows.

Skipped when a tool it needs is missing (s3s-fs: a failure under CI, as test_remote.py)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLES
from test_remote import _s3s_fs

import nc3pack


def test_bench_remote_prints_the_table(tmp_path: Path) -> None:
    missing = [
        m for m in ("s3fs", "h5netcdf", "h5py") if importlib.util.find_spec(m) is None
    ]
    missing += [t for t in ("nccopy", "curl") if shutil.which(t) is None]
    if _s3s_fs() is None:
        if os.environ.get("CI"):
            pytest.fail("s3s-fs is not installed: bench/remote.py cannot run")
        missing.append("s3s-fs")
    if missing:
        pytest.skip(f"bench/remote.py needs {', '.join(missing)}")
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "remote.py"), "--runs", "1"]
        + [f"{SAMPLES / 'gridded_sst.nc'}:sst"],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    ).stdout
    rows = [
        [c.strip() for c in line.strip("|").split("|")]
        for line in out.splitlines()
        if line.startswith("| gridded_sst.nc")
    ]
    by = {(r[1], r[2]): r for r in rows}
    assert int(by["cold open", "nc3pack"][3]) <= 2
    assert int(by["one value", "nc3pack"][3]) <= 3
    for read in ("cold open", "one value", "full variable"):
        assert int(by[read, "nc4 + s3fs + h5netcdf"][3]) >= 1
    # The plain GET received the whole archive: the sample packed with the same defaults.
    z = tmp_path / "sst.nc3z"
    nc3pack.pack(SAMPLES / "gridded_sst.nc", z)
    get = by["whole archive object", "one plain GET (curl)"]
    assert int(get[4].replace(",", "")) == z.stat().st_size
    assert "throughput" in by["full variable / plain GET", "nc3pack"][6]
