"""Dask distributed: archives opened and files packed on a cluster of worker processes."""

from __future__ import annotations

import filecmp
from pathlib import Path
from typing import TYPE_CHECKING

import netCDF4
import numpy as np
import pytest
import xarray as xr

import nc3pack

distributed = pytest.importorskip("distributed")
if TYPE_CHECKING:
    from distributed import Client

TIMEOUT = 120  # seconds for any one cluster operation


@pytest.fixture(scope="module")
def originals(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Three consecutive pieces of a time series (CDF-2), with CF packing and times."""
    out = tmp_path_factory.mktemp("originals")
    rng = np.random.default_rng(5)
    paths = []
    for i in range(3):
        p = out / f"part{i}.nc"
        with netCDF4.Dataset(p, "w", format="NETCDF3_64BIT_OFFSET") as nc:
            nc.title = f"part {i}"
            nc.createDimension("time", None)
            nc.createDimension("lat", 20)
            nc.createDimension("lon", 30)
            t = nc.createVariable("time", "f8", ("time",))
            t.units = "days since 2000-01-01"
            t.calendar = "standard"
            t[:] = np.arange(5) + 5 * i
            lat = nc.createVariable("lat", "f4", ("lat",))
            lat.units = "degrees_north"
            lat[:] = np.linspace(-45, 45, 20)
            lon = nc.createVariable("lon", "f4", ("lon",))
            lon[:] = np.linspace(0, 290, 30)
            v = nc.createVariable(
                "t2m", "i2", ("time", "lat", "lon"), fill_value=-32767
            )
            v.scale_factor = 0.01
            v.add_offset = 280.0
            v.units = "K"
            v.set_auto_maskandscale(False)
            data = rng.integers(-3000, 3000, size=(5, 20, 30), dtype="i2")
            data[0, 0, :5] = -32767
            v[:] = data
        paths.append(p)
    return paths


def test_pack_on_cluster(client: Client, originals: list[Path], tmp_path: Path) -> None:
    dsts = [tmp_path / (p.stem + ".nc3z") for p in originals]
    futures = client.map(nc3pack.pack, originals, dsts, threads=1, pure=False)
    distributed.wait(futures, timeout=TIMEOUT)
    results = client.gather(futures)
    assert [r.dst for r in results] == [str(d) for d in dsts]
    for src, dst in zip(originals, dsts):
        back = tmp_path / (src.stem + ".back.nc")
        nc3pack.unpack(dst, back)
        assert filecmp.cmp(src, back, shallow=False)


def test_open_mfdataset_parallel(
    client: Client, originals: list[Path], tmp_path: Path
) -> None:
    archives = []
    for p in originals:
        a = tmp_path / (p.stem + ".nc3z")
        nc3pack.pack(p, a, block_size=4096)
        archives.append(a)
    ds = xr.open_mfdataset(archives, engine="nc3z", parallel=True, combine="by_coords")
    with ds:
        assert ds["t2m"].chunks is not None  # dask arrays, computed on the workers
        got = client.compute(ds).result(timeout=TIMEOUT)
    # The reference is read in this process, without dask.
    with xr.open_mfdataset(
        originals, engine="netcdf4", combine="by_coords", chunks=None
    ) as ref:
        want = ref.load()
    xr.testing.assert_identical(got, want)
    assert int(got["t2m"].isnull().sum()) == 3 * 5
