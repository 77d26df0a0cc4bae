"""`nc3pack serve`: the originals served over HTTP read by fsspec's HTTP file object (range
requests through aiohttp) and opened by xarray's scipy engine as the originals."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import pytest
from conftest import SAMPLES, cli

import nc3pack

#: CDF-1 with records, CDF-1 fixed-size, CDF-2 (6 MB), CDF-5, 64-bit offsets. scipy reads
#: CDF-1 and CDF-2 only: the CDF-5 file is compared byte for byte.
CASES = [
    "classic_records.nc",
    "obs_points.nc",
    "gridded_sst.nc",
    "cdf5_types.nc",
    "offset64_mixed.nc",
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`nc3pack serve` of the CASES packed (one in a subdirectory), on a free loopback port:
    its base URL. Killed at the end whatever happened."""
    tool = cli()
    if tool is None:
        pytest.skip("the nc3pack CLI is not built (cargo build)")
    root = tmp_path_factory.mktemp("served")
    (root / "sub").mkdir()
    for name in CASES:
        where = root / "sub" if name == "gridded_sst.nc" else root
        nc3pack.pack(SAMPLES / name, where / f"{name}.nc3z", block_size=4096)
    log = root / "serve.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [str(tool), "serve", str(root), "--listen", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        deadline = time.monotonic() + 20
        while True:
            text = log.read_text()
            if "http://" in text:
                addr = text.split("http://", 1)[1].split("/", 1)[0]
                break
            assert proc.poll() is None, f"nc3pack serve ended:\n{text}"
            assert time.monotonic() < deadline, f"no address after 20 s:\n{text}"
            time.sleep(0.02)
        yield f"http://{addr}"
    finally:
        proc.kill()
        proc.wait(10)


@pytest.mark.parametrize("name", CASES)
def test_xarray_opens_the_served_original_through_fsspec(
    server: str, name: str
) -> None:
    fsspec = pytest.importorskip("fsspec")
    pytest.importorskip("aiohttp")
    pytest.importorskip("scipy")
    xr = pytest.importorskip("xarray")
    path = f"sub/{name}" if name == "gridded_sst.nc" else name
    url = f"{server}/{path}"
    want = (SAMPLES / name).read_bytes()
    with fsspec.open(url, block_size=64 << 10).open() as f:
        assert f.size == len(want)
        f.seek(len(want) // 3)
        assert f.read(5000) == want[len(want) // 3 : len(want) // 3 + 5000]
    if want[3] != 5:
        with (
            fsspec.open(url, block_size=64 << 10).open() as f,
            xr.open_dataset(f, engine="scipy") as got,
            xr.open_dataset(SAMPLES / name, engine="scipy") as orig,
        ):
            xr.testing.assert_identical(got.load(), orig.load())
    with fsspec.open(url).open() as f:
        assert f.read() == want
