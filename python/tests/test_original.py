"""nc3pack.open_original: an archive's original file as a binary file object, byte for byte,
and read by scipy's netCDF-3 reader and xarray's scipy engine as the original."""

from __future__ import annotations

import io
import random
from pathlib import Path

import numpy as np
import pytest
from conftest import GOOD

import nc3pack


@pytest.mark.parametrize("src", GOOD, ids=[p.name for p in GOOD])
def test_the_original_bytes_whole_and_at_random(
    src: Path, packed: dict[str, Path]
) -> None:
    want = src.read_bytes()
    with nc3pack.open_original(packed[src.name]) as f:
        assert f.size == len(want)
        assert f.readable() and f.seekable() and not f.writable()
        assert f.read() == want
        assert f.read() == b""
        rng = random.Random(src.name)
        for _ in range(300):
            at = rng.randrange(0, len(want) + 8)
            n = rng.choice([0, 1, 3, 4, 100, 4096, 70_000, len(want)])
            assert f.seek(at) == at
            assert f.read(n) == want[at : at + n], (at, n)
            assert f.tell() == min(at + n, max(at, len(want)))
        assert f.seek(-4, io.SEEK_END) == len(want) - 4
        assert f.read() == want[-4:]
        f.seek(0)
        assert f.seek(5, io.SEEK_CUR) == 5
        buf = bytearray(10)
        assert f.readinto(buf) == min(10, max(len(want) - 5, 0))
        assert bytes(buf[: min(10, len(want) - 5)]) == want[5:15]
        with pytest.raises(OSError):
            f.seek(-1)
        with pytest.raises(OSError):
            f.seek(2**63)
        f.seek(0)
        assert f.read(None) == want
        with pytest.raises(io.UnsupportedOperation):
            f.write(b"x")
    assert f.closed
    # As io.FileIO answers once closed.
    for op in (f.read, f.readable, f.seekable, f.writable, f.tell):
        with pytest.raises(ValueError):
            op()


def test_a_file_that_is_no_archive_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not an nc3pack archive"):
        nc3pack.open_original(GOOD[0])


def test_a_damaged_block_raises_for_the_reads_that_touch_it(tmp_path: Path) -> None:
    src = Path(__file__).resolve().parents[2] / "samples" / "gridded_sst.nc"
    z = tmp_path / "sst.nc3z"
    nc3pack.pack(src, z, block_size="64KiB")
    data = bytearray(z.read_bytes())
    # A byte in the middle of the archive, inside some block's compressed bytes.
    data[len(data) // 2] ^= 0xFF
    bad = tmp_path / "bad.nc3z"
    bad.write_bytes(bytes(data))
    want = src.read_bytes()
    f = nc3pack.open_original(bad)
    failed = 0
    for at in range(0, len(want), 65536):
        f.seek(at)
        try:
            got = f.read(65536)
        except nc3pack.ArchiveError as e:
            assert "block" in str(e)
            failed += 1
        else:
            assert got == want[at : at + 65536], at  # never wrong bytes
    assert 0 < failed < len(want) // 65536


def scipy_readable() -> list[Path]:
    """The samples scipy's netCDF-3 reader opens (it knows no CDF-5)."""
    scipy_io = pytest.importorskip("scipy.io")
    out = []
    for p in GOOD:
        try:
            with scipy_io.netcdf_file(p, mmap=False) as f:
                _ = {k: v.data.copy() for k, v in f.variables.items()}
        except Exception:  # noqa: BLE001, S112 (scipy refuses the file: not a case)
            continue
        out.append(p)
    return out


def same_attributes(a: dict[str, object], b: dict[str, object]) -> None:
    assert list(a) == list(b)
    for k, v in a.items():
        x, y = np.asarray(v), np.asarray(b[k])
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), k


def test_scipy_reads_the_original_of_an_archive(packed: dict[str, Path]) -> None:
    scipy_io = pytest.importorskip("scipy.io")
    cases = scipy_readable()
    assert len(cases) >= 5
    for src in cases:
        with (
            scipy_io.netcdf_file(src, mmap=False) as o,
            scipy_io.netcdf_file(nc3pack.open_original(packed[src.name])) as z,
        ):
            assert z.version_byte == o.version_byte
            assert z.dimensions == o.dimensions, src.name
            same_attributes(z._attributes, o._attributes)
            assert list(z.variables) == list(o.variables)
            for k, ov in o.variables.items():
                zv = z.variables[k]
                assert zv.data.dtype == ov.data.dtype and zv.shape == ov.shape, k
                assert zv.data.tobytes() == ov.data.tobytes(), (src.name, k)
                same_attributes(zv._attributes, ov._attributes)


def test_xarray_scipy_engine_reads_the_original_of_an_archive(
    packed: dict[str, Path],
) -> None:
    xr = pytest.importorskip("xarray")
    pytest.importorskip("scipy.io")
    for src in scipy_readable():
        want = xr.open_dataset(src, engine="scipy").load()
        got = xr.open_dataset(nc3pack.open_original(packed[src.name]), engine="scipy")
        xr.testing.assert_identical(got.load(), want)
