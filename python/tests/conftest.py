"""Shared fixtures: the repository's samples, packed once per test session."""

from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import nc3pack

if TYPE_CHECKING:
    from distributed import Client

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"

#: Every good sample (samples/README.md), the originals the archives are checked against.
GOOD = sorted(p for p in SAMPLES.glob("*.nc"))


def cli() -> Path | None:
    """The nc3pack command-line tool, if built (target/release or target/debug)."""
    for kind in ("release", "debug"):
        p = ROOT / "target" / kind / "nc3pack"
        if p.is_file() and os.access(p, os.X_OK):
            return p
    found = shutil.which("nc3pack")
    return Path(found) if found else None


@pytest.fixture(scope="session")
def packed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every good sample packed with the default options: sample name -> archive path."""
    out = tmp_path_factory.mktemp("packed")
    archives = {}
    for src in GOOD:
        dst = out / (src.stem + ".nc3z")
        nc3pack.pack(src, dst)
        archives[src.name] = dst
    return archives


#: Seconds for any one operation of the dask cluster the ``client`` fixture starts.
DASK_TIMEOUT = 120


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    """A dask client of a local cluster of two worker processes of one thread each (one
    cluster per test module, stopped after its last test); its logs are silenced, as a
    test may kill a worker."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2,
        processes=True,
        threads_per_worker=1,
        dashboard_address=None,
        silence_logs=logging.CRITICAL,
    )
    with cluster, distributed.Client(cluster, timeout=DASK_TIMEOUT) as c:
        yield c


def in_forked_child(target: Callable[[], None]) -> None:
    """Runs ``target`` in a child process started with the ``fork`` method (as
    ``multiprocessing.Pool`` and many data loaders start theirs on Linux); fails unless it
    ends without an exception within 20 s (a child still running then is killed)."""
    ctx = multiprocessing.get_context("fork")
    p = ctx.Process(target=target)
    p.start()
    p.join(20)
    if p.is_alive():
        p.kill()
        p.join(10)
        pytest.fail("the forked child was still running after 20 s")
    assert p.exitcode == 0, f"the forked child failed (exit code {p.exitcode})"
