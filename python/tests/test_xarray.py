"""The xarray backend (engine "nc3z") against xarray's own netcdf4 engine on the originals."""

from __future__ import annotations

import itertools
import math
import os
import pickle
import shutil
import subprocess
import warnings
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pytest
import xarray as xr
from conftest import GOOD, ROOT, SAMPLES

import nc3pack
from nc3pack.xarray_backend import Nc3zBackendArray, block_chunks

CONFORMANCE = Path(
    os.environ.get("CONFORMANCE_DIR", ROOT.parent / "shared/conformance/netcdf-c-cdl")
)
#: ncgen -k values: classic (CDF-1), 64-bit offset (CDF-2), 64-bit data (CDF-5).
KINDS = ["nc3", "nc6", "nc5"]
#: Conformance files larger than this are left out (test time).
MAX_BYTES = 8 << 20

#: Ways of opening, as xr.open_dataset keyword arguments.
MODES: list[dict[str, Any]] = [
    {},
    {"decode_cf": False},
    {"mask_and_scale": False},
    {"decode_times": False},
]

#: Encoding keys that describe the file rather than its contents.
FILE_KEYS = {"source", "preferred_chunks"}

#: Samples netCDF-C reads differently by design (see test_package.NETCDF_C_DIFFERS).
NETCDF_C_DIFFERS = {"streaming_numrecs.nc", "truncated_record.nc"}


def open_both(original: Path, archive: Path, mode: dict[str, Any]) -> tuple[Any, Any]:
    """(reference, ours): datasets, or the exception type each open raised."""
    out: list[Any] = []
    for path, engine in [(original, "netcdf4"), (archive, "nc3z")]:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ds = xr.open_dataset(path, engine=engine, **mode)
                ds.load()
            out.append(ds)
        except Exception as e:  # noqa: BLE001 - compared below
            out.append(type(e))
    return out[0], out[1]


def same(a: Any, b: Any) -> bool:
    """Same type and value (numpy values: same dtype; NaN equal to NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (np.ndarray, np.generic)):
        return bool(
            a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
        )
    return bool(a == b)


def assert_same(original: Path, archive: Path) -> None:
    for mode in MODES:
        ref, ours = open_both(original, archive, mode)
        if isinstance(ref, type):
            assert ours is ref, f"{mode}: netcdf4 raised {ref.__name__}, nc3z {ours}"
            continue
        assert not isinstance(ours, type), f"{mode}: nc3z raised {ours.__name__}"
        with ref, ours:
            xr.testing.assert_identical(ours, ref)
            assert ours.encoding["unlimited_dims"] == ref.encoding["unlimited_dims"]
            for name in ref.variables:
                want = {
                    k: v for k, v in ref[name].encoding.items() if k not in FILE_KEYS
                }
                got = {
                    k: v for k, v in ours[name].encoding.items() if k not in FILE_KEYS
                }
                assert got.keys() == want.keys(), (mode, name)
                for k, w in want.items():
                    assert same(got[k], w), (mode, name, k, got[k], w)


@pytest.mark.parametrize(
    "sample", [p.name for p in GOOD if p.name not in NETCDF_C_DIFFERS]
)
def test_samples_identical(sample: str, packed: dict[str, Path]) -> None:
    assert_same(SAMPLES / sample, packed[sample])


def conformance_cases() -> list[Any]:
    if not CONFORMANCE.is_dir():
        return [pytest.param(None, None, marks=pytest.mark.skip("no conformance dir"))]
    # The "big" CDLs are netCDF-C's large-file tests: ncgen writes gigabytes.
    cdls = sorted(p for p in CONFORMANCE.glob("*.cdl") if "big" not in p.stem)
    return [
        pytest.param(cdl, kind, id=f"{cdl.stem}-{kind}")
        for cdl, kind in itertools.product(cdls, KINDS)
    ]


@pytest.mark.parametrize(("cdl", "kind"), conformance_cases())
def test_conformance_identical(cdl: Path, kind: str, tmp_path: Path) -> None:
    if shutil.which("ncgen") is None:
        pytest.skip("ncgen is not installed")
    original = tmp_path / (cdl.stem + ".nc")
    try:
        subprocess.run(
            ["ncgen", "-k", kind, "-o", str(original), str(cdl)],
            check=True,
            capture_output=True,
            timeout=30,
            cwd=tmp_path,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
        pytest.skip("ncgen cannot make this kind of file from this CDL")
    if not original.is_file():
        pytest.skip("ncgen made no file from this CDL")
    if original.stat().st_size > MAX_BYTES:
        pytest.skip("larger than the test's limit")
    try:
        netCDF4.Dataset(original).close()
    except OSError:
        pytest.skip("netCDF4 cannot open the file")
    archive = tmp_path / (cdl.stem + ".nc3z")
    nc3pack.pack(original, archive, threads=1)
    assert_same(original, archive)


def backend_array(da: xr.DataArray) -> Nc3zBackendArray:
    """The backend array under xarray's wrappers."""
    a: Any = da.variable._data
    for _ in range(10):
        if isinstance(a, Nc3zBackendArray):
            return a
        a = a.array
    raise AssertionError("no Nc3zBackendArray found")


def test_lazy_reads_only_needed_blocks(packed: dict[str, Path]) -> None:
    with xr.open_dataset(packed["gridded_sst.nc"]) as ds:  # engine guessed by magic
        store = backend_array(ds["sst"]).store
        with store.acquire_context() as nds:
            opened = nds.cache_stats()["misses"]
            layout = nds.block_layout("sst")
            assert layout is not None
            block_bytes, nblocks, _ = layout
        assert nblocks > 2
        # Opening decodes what reading the coordinates decodes, no block of sst.
        with nc3pack.open(packed["gridded_sst.nc"]) as coords:
            for name in ["time", "lat", "lon"]:
                coords[name][:]
            assert opened == coords.cache_stats()["misses"]
        sel = ds["sst"].isel(time=5, lat=slice(100, 102))
        with store.acquire_context() as nds:
            assert nds.cache_stats()["misses"] == opened  # still lazy
        values = sel.values
        first = (5 * 180 + 100) * 360 * 4
        last = (5 * 180 + 102) * 360 * 4 - 1
        want_blocks = last // block_bytes - first // block_bytes + 1
        with store.acquire_context() as nds:
            assert nds.cache_stats()["misses"] - opened == want_blocks
    with xr.open_dataset(SAMPLES / "gridded_sst.nc", engine="netcdf4") as ref:
        xr.testing.assert_identical(
            sel.load(), ref["sst"].isel(time=5, lat=slice(100, 102))
        )
        assert np.array_equal(values, ref["sst"].values[5, 100:102], equal_nan=True)


def test_full_read_leaves_whole_blocks_out_of_the_cache(tmp_path: Path) -> None:
    """xarray keeps what it loads, so the backend's reads do not also cache the blocks they
    cover whole (only the partial ones at their ends); cache_whole_blocks=True restores it."""
    z = tmp_path / "sst.nc3z"
    nc3pack.pack(SAMPLES / "gridded_sst.nc", z, block_size=64 << 10)
    bb, nblocks = 64 << 10, math.ceil(24 * 180 * 360 * 4 / (64 << 10))
    with xr.open_dataset(SAMPLES / "gridded_sst.nc", engine="netcdf4") as ref:
        options: list[dict[str, Any]] = [{}, {"cache_whole_blocks": True}]
        for option in options:
            kept = bool(option)
            with xr.open_dataset(z, engine="nc3z", **option) as ds:
                store = backend_array(ds["sst"]).store
                with store.acquire_context() as nds:
                    assert nds.cache_whole_blocks is kept
                    assert nds.block_layout("sst") == (bb, nblocks, False)
                    before = nds.cache_stats()
                xr.testing.assert_identical(ds["sst"].load(), ref["sst"])
                with store.acquire_context() as nds:
                    s = nds.cache_stats()
                assert s["misses"] - before["misses"] == nblocks
                assert s["entries"] - before["entries"] == (nblocks if kept else 0)
                # A selection from inside one block to inside another: its end blocks kept.
                if not kept:
                    plane = 180 * 360 * 4
                    first, last = 2 * plane // bb, (22 * plane - 1) // bb
                    assert (2 * plane) % bb and (22 * plane) % bb
                    with xr.open_dataset(z, engine="nc3z", cache=False) as again:
                        store = backend_array(again["sst"]).store
                        with store.acquire_context() as nds:
                            nds.clear_cache()
                        sel = again["sst"].isel(time=slice(2, 22))
                        xr.testing.assert_identical(
                            sel.load(), ref["sst"].isel(time=slice(2, 22))
                        )
                        with store.acquire_context() as nds:
                            s2 = nds.cache_stats()
                        assert (s2["misses"], s2["entries"]) == (last - first + 1, 2)


def test_guess_can_open(packed: dict[str, Path], tmp_path: Path) -> None:
    from nc3pack.xarray_backend import Nc3zBackendEntrypoint

    e = Nc3zBackendEntrypoint()
    unsuffixed = tmp_path / "archive.bin"
    shutil.copy(packed["scalars.nc"], unsuffixed)
    assert e.guess_can_open(unsuffixed)
    assert e.guess_can_open(str(packed["scalars.nc"]))
    assert e.guess_can_open("not-there.nc3z")
    assert not e.guess_can_open(SAMPLES / "scalars.nc")
    assert not e.guess_can_open(tmp_path / "missing")
    with (
        xr.open_dataset(unsuffixed) as ds,
        xr.open_dataset(SAMPLES / "scalars.nc") as ref,
    ):
        xr.testing.assert_identical(ds, ref)
    assert "nc3z" in xr.backends.list_engines()
    # The original .nc opens through the engine too, on request.
    with xr.open_dataset(SAMPLES / "scalars.nc", engine="nc3z") as ds:
        assert ds.attrs == ref.attrs


def test_pickle(packed: dict[str, Path]) -> None:
    with xr.open_dataset(packed["obs_points.nc"], engine="nc3z") as ds:
        again = pickle.loads(pickle.dumps(ds))
        xr.testing.assert_identical(again.load(), ds.load())


def blocks_of_chunk(
    shape: tuple[int, ...], itemsize: int, block: int, lo: Any, hi: Any
) -> set[int]:
    """Blocks holding the elements of the chunk [lo, hi) (brute force)."""
    strides = [itemsize * math.prod(shape[k + 1 :]) for k in range(len(shape))]
    out = set()
    for idx in itertools.product(*(range(a, b) for a, b in zip(lo, hi))):
        off = sum(i * s for i, s in zip(idx, strides))
        out.add(off // block)
        out.add((off + itemsize - 1) // block)
    return out


def chunk_bounds(
    shape: tuple[int, ...], chunks: tuple[int, ...]
) -> list[tuple[Any, Any]]:
    ranges = [
        [(a, min(a + c, n)) for a in range(0, n, c)] for n, c in zip(shape, chunks)
    ]
    return [tuple(zip(*r)) for r in itertools.product(*ranges)]  # type: ignore[misc]


@pytest.mark.parametrize(
    ("shape", "itemsize", "block", "want", "aligned"),
    [
        ((40, 32, 64), 4, 16384, (2, 32, 64), True),  # rows of 8 KiB: 2 a block
        ((3, 64, 64), 8, 4096, (1, 64, 64), True),  # planes of 8 blocks
        ((1000,), 2, 256, (128,), True),
        ((6, 10, 10), 8, 64, (2, 10, 10), True),  # 800-byte rows: 2 rows, 25 blocks
        ((5, 3, 7), 1, 16, (5, 3, 7), True),  # small: one chunk
        # Rows of 20,000 bytes never end on an 8 KiB boundary before row 256: chunks
        # of about FALLBACK_BLOCKS blocks, one block shared at each boundary.
        ((64, 5, 1000), 4, 8192, (6, 5, 1000), False),
    ],
)
def test_block_chunks(
    shape: tuple[int, ...],
    itemsize: int,
    block: int,
    want: tuple[int, ...],
    aligned: bool,
) -> None:
    chunks = block_chunks(shape, itemsize, block, False)
    assert chunks == want
    assert block_chunks(shape, itemsize, block, True) == shape  # in a shared block
    bounds = chunk_bounds(shape, chunks)
    seen: set[int] = set()
    shared = 0
    for lo, hi in bounds:
        blocks = blocks_of_chunk(shape, itemsize, block, lo, hi)
        shared += len(blocks & seen)
        seen |= blocks
    if aligned:
        assert shared == 0
    else:
        assert 0 < shared <= len(bounds) - 1


def test_preferred_chunks_cover_whole_blocks(tmp_path: Path) -> None:
    src = tmp_path / "aligned.nc"
    with netCDF4.Dataset(src, "w", format="NETCDF3_CLASSIC") as nc:
        nc.createDimension("t", None)
        nc.createDimension("y", 32)
        nc.createDimension("x", 64)
        v = nc.createVariable("v", "f4", ("t", "y", "x"))
        v[:] = np.arange(40 * 32 * 64, dtype="f4").reshape(40, 32, 64)
    arc = tmp_path / "aligned.nc3z"
    nc3pack.pack(src, arc, block_size=16384)
    with xr.open_dataset(arc, chunks={}) as ds:
        assert ds["v"].encoding["preferred_chunks"] == {"t": 2, "y": 32, "x": 64}
        assert ds["v"].chunks == ((2,) * 20, (32,), (64,))
        total = 0
        for i in range(20):
            # A fresh archive per chunk: the blocks one dask task decodes.
            with nc3pack.open(arc) as one:
                part = one["v"][2 * i : 2 * i + 2]
                total += one.cache_stats()["misses"]
                assert one.cache_stats()["misses"] == 1
            assert np.array_equal(part, ds["v"][2 * i : 2 * i + 2].values)
        assert total == nc3pack.open(arc).block_layout("v")[1]  # type: ignore[index]
