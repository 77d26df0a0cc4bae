"""nc3pack's Python API checked against netCDF4-python reading the original files."""

from __future__ import annotations

import filecmp
import json
import pickle
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pytest
from conftest import GOOD, SAMPLES, cli, in_forked_child

import nc3pack

#: Samples that netCDF-C reads differently, by design of the sample.
NETCDF_C_DIFFERS = {
    # netCDF-C takes the STREAMING marker (0xFFFFFFFF) as the number of records.
    "streaming_numrecs.nc",
    # Cut inside its last record: netCDF-C counts that record, nc3pack reads only the
    # complete ones (the partial record is kept as residual bytes).
    "truncated_record.nc",
}


def reference(path: Path) -> netCDF4.Dataset | None:
    """The original opened with netCDF4-python, raw (no masking, scaling or char
    conversion); None if netCDF-C refuses the file or reads it differently."""
    if path.name in NETCDF_C_DIFFERS:
        return None
    try:
        nc = netCDF4.Dataset(path)
    except OSError:
        return None
    nc.set_auto_maskandscale(False)
    nc.set_always_mask(False)
    nc.set_auto_chartostring(False)
    return nc


def same_value(a: Any, b: Any) -> bool:
    """Same type, dtype and value (NaN equal to NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (str, bytes)):
        return a == b
    a, b = np.asarray(a), np.asarray(b)
    return (
        a.dtype == b.dtype
        and a.shape == b.shape
        and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    )


def assert_same_attrs(ours: dict[str, Any], ref: dict[str, Any]) -> None:
    assert list(ours) == list(ref)
    for k, want in ref.items():
        assert same_value(ours[k], want), (k, ours[k], want)


@pytest.mark.parametrize("sample", [p.name for p in GOOD])
@pytest.mark.parametrize("kind", ["archive", "original"])
def test_matches_netcdf4(sample: str, kind: str, packed: dict[str, Path]) -> None:
    ref = reference(SAMPLES / sample)
    if ref is None:
        pytest.skip("netCDF4 cannot open this sample")
    path = packed[sample] if kind == "archive" else SAMPLES / sample
    with ref, nc3pack.open(path) as ds:
        assert ds.is_archive == (kind == "archive")
        assert {k: (len(d), d.isunlimited()) for k, d in ref.dimensions.items()} == {
            k: (len(d), d.unlimited) for k, d in ds.dimensions.items()
        }
        assert_same_attrs(ds.attrs, {k: ref.getncattr(k) for k in ref.ncattrs()})
        assert list(ds.variables) == list(ref.variables)
        for name, rv in ref.variables.items():
            v = ds.variables[name]
            assert v.dims == rv.dimensions
            assert v.shape == rv.shape
            assert v.dtype == rv.dtype, name
            assert_same_attrs(v.attrs, {k: rv.getncattr(k) for k in rv.ncattrs()})
            want = np.asarray(rv[...])
            got = ds.read(name)
            assert got.dtype == want.dtype and got.dtype.isnative
            assert got.shape == want.shape
            assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f"), name


def test_dtypes_cdf5(packed: dict[str, Path]) -> None:
    ds = nc3pack.open(packed["cdf5_types.nc"])
    got = {v.nc_type: v.dtype for v in ds.variables.values()}
    for t in ["ubyte", "ushort", "uint", "int64", "uint64", "byte", "short", "int"]:
        assert got[t] == nc3pack.DTYPES[t]
    assert nc3pack.DTYPES["char"] == np.dtype("S1")
    assert nc3pack.DTYPES["uint64"] == np.dtype(np.uint64)


def test_scalars_are_0d(packed: dict[str, Path]) -> None:
    ds = nc3pack.open(packed["scalars.nc"])
    ref = reference(SAMPLES / "scalars.nc")
    assert ref is not None
    for name, v in ds.variables.items():
        a = ds.read(name)
        assert isinstance(a, np.ndarray) and a.shape == () == v.shape
        assert a == np.asarray(ref[name][...])
        assert isinstance(v[...], np.ndarray) and v[()].shape == ()


KEYS: list[Any] = [
    (0, slice(10, 20), slice(None, None, 2)),
    (-1, -1, -1),
    (slice(None, None, -1), 5, slice(3, 300, 7)),
    (slice(20, 2, -3), slice(None), slice(-5, None)),
    (Ellipsis, 7),
    (3, Ellipsis),
    (slice(5, 5),),
    ([0, 5, 2, 2], slice(0, 3), 4),
    (np.array([-1, 0]), np.array([3, 4]), slice(None, 10)),
    (slice(None), np.arange(180) % 7 == 0, 0),
    (np.int64(2), np.int32(3), np.uint8(4)),
    (slice(0, 2), [], slice(0, 2)),
    2,
]


@pytest.mark.parametrize("key", KEYS, ids=[repr(k)[:40] for k in KEYS])
def test_numpy_indexing(key: Any, packed: dict[str, Path]) -> None:
    ref = reference(SAMPLES / "gridded_sst.nc")
    assert ref is not None
    with ref:
        full = np.asarray(ref["sst"][...])
    ds = nc3pack.open(packed["gridded_sst.nc"])
    want = np.asarray(full[key])
    got = ds["sst"][key]
    assert isinstance(got, np.ndarray)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(got, want)


@pytest.mark.parametrize(
    "key",
    [(24,), (0, -181), (0, 0, 0, 0), (None,), (..., ...), ([0, 24],), (True,), (1.5,)],
    ids=repr,
)
def test_bad_indices_raise_index_error(key: Any, packed: dict[str, Path]) -> None:
    ds = nc3pack.open(packed["gridded_sst.nc"])
    with pytest.raises(IndexError):
        ds["sst"][key]


def test_read_hyperslab(packed: dict[str, Path]) -> None:
    ref = reference(SAMPLES / "gridded_sst.nc")
    assert ref is not None
    with ref:
        full = np.asarray(ref["sst"][...])
    ds = nc3pack.open(packed["gridded_sst.nc"])
    got = ds.read("sst", start=[1, 2, 3], count=[4, 5, 6], stride=[5, 3, 2])
    assert np.array_equal(got, full[1:20:5, 2:15:3, 3:14:2])
    assert np.array_equal(ds.read("sst", start=[23, 0, 0]), full[23:])
    assert np.array_equal(ds["sst"].read(count=[1, 1, 3]), full[:1, :1, :3])


def test_char_is_s1(packed: dict[str, Path]) -> None:
    ds = nc3pack.open(packed["obs_points.nc"])
    a = ds["station_id"][0:3]
    assert a.dtype == np.dtype("S1") and a.shape == (3, 8)


def test_bad_arguments(packed: dict[str, Path]) -> None:
    ds = nc3pack.open(packed["gridded_sst.nc"])
    with pytest.raises(KeyError):
        ds.read("no_such_variable")
    with pytest.raises(ValueError, match="beyond its length"):
        ds.read("sst", start=[0, 0, 0], count=[25, 1, 1])
    with pytest.raises(ValueError):
        ds.read("sst", start=[-1, 0, 0])
    with pytest.raises(ValueError):
        ds.read("sst", start=[0, 0])
    with pytest.raises(ValueError):
        ds.set_cache_budget(-1)


def test_open_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        nc3pack.open(tmp_path / "missing.nc3z")
    with pytest.raises(nc3pack.ArchiveError, match="not a netCDF-3 file"):
        nc3pack.open(SAMPLES / "bad" / "text_file.nc")
    with pytest.raises(nc3pack.ArchiveError, match="damaged archive"):
        nc3pack.open(SAMPLES / "bad" / "archives" / "index_bit_flip.nc3z")


def test_cache(packed: dict[str, Path]) -> None:
    ds = nc3pack.open(packed["gridded_sst.nc"], cache_budget=1 << 30)
    assert ds.cache_stats()["budget"] == 1 << 30
    # A first small read of a block decodes its part and keeps nothing; the second keeps it.
    ds["sst"][0, 0, 0]
    s = ds.cache_stats()
    assert (s["misses"], s["hits"], s["entries"]) == (1, 0, 0)
    ds["sst"][0, 0, 1]
    s = ds.cache_stats()
    assert (s["misses"], s["hits"], s["entries"]) == (2, 0, 1)
    ds["sst"][0, 0, 2]
    assert ds.cache_stats()["hits"] == 1
    ds.set_cache_budget(0)
    assert ds.cache_stats()["entries"] == 0
    ds.clear_cache()
    assert ds.cache_stats()["misses"] == 0
    plain = nc3pack.open(SAMPLES / "gridded_sst.nc")
    plain["sst"][0, 0, 0]
    assert plain.cache_stats()["misses"] == 0


def test_cache_whole_blocks(tmp_path: Path) -> None:
    """A read spanning several blocks decodes the blocks it covers whole straight into its
    result; with cache_whole_blocks=False it caches only the partial blocks at its ends."""
    z = tmp_path / "sst.nc3z"
    nc3pack.pack(SAMPLES / "gridded_sst.nc", z, block_size=64 << 10)
    with netCDF4.Dataset(SAMPLES / "gridded_sst.nc") as nc:
        nc.set_auto_maskandscale(False)
        want = nc["sst"][2:22]
    plane = 180 * 360 * 4
    start, end = 2 * plane, 22 * plane  # bytes of planes 2..21 within sst
    bb = 64 << 10
    assert start % bb and end % bb, "both ends inside a block"
    spanned = (end - 1) // bb - start // bb + 1
    for cache_whole in (True, False):
        ds = nc3pack.open(z, cache_whole_blocks=cache_whole)
        assert ds.cache_whole_blocks is cache_whole
        layout = ds.block_layout("sst")
        assert layout is not None and layout[0] == bb
        got = ds["sst"][2:22]
        assert np.array_equal(got, want, equal_nan=True)
        s = ds.cache_stats()
        cached = spanned if cache_whole else 2
        assert (s["misses"], s["hits"], s["entries"]) == (spanned, 0, cached), s
        # The whole blocks, read again, are decoded again only when they were not kept.
        ds["sst"][10, 0, 0]
        s = ds.cache_stats()
        assert (s["hits"], s["misses"]) == (
            (1, spanned) if cache_whole else (0, spanned + 1)
        )
    ds.set_cache_whole_blocks(True)
    assert ds.cache_whole_blocks
    plain = nc3pack.open(SAMPLES / "gridded_sst.nc", cache_whole_blocks=False)
    assert not plain.cache_whole_blocks
    assert np.array_equal(plain["sst"][2:22], want, equal_nan=True)


def test_threads_match_serial(packed: dict[str, Path]) -> None:
    """Many threads reading one archive (small cache: blocks are evicted and decoded again
    while other threads read) give what one thread reads."""
    ds = nc3pack.open(packed["obs_points.nc"], cache_budget=3 << 20)
    rng = np.random.default_rng(12)
    jobs = []
    for _ in range(200):
        name = rng.choice(["temp", "time", "station_id", "quality_flag", "obs_time"])
        n = ds[name].shape[0]
        a = int(rng.integers(0, n))
        b = int(rng.integers(a, min(n, a + 5000))) + 1
        jobs.append((str(name), a, b))
    serial = [ds[name][a:b] for name, a, b in jobs]
    ds.clear_cache()
    with ThreadPoolExecutor(8) as pool:
        parallel = list(pool.map(lambda j: ds[j[0]][j[1] : j[2]], jobs))
    for s, p in zip(serial, parallel):
        assert np.array_equal(s, p)
    assert ds.cache_stats()["misses"] > 0


def test_pickle_and_close(packed: dict[str, Path]) -> None:
    ds = nc3pack.open(packed["gridded_sst.nc"])
    again = pickle.loads(pickle.dumps(ds))
    assert np.array_equal(again["lat"][:], ds["lat"][:])
    # The copy keeps the cache settings (dask pickles datasets to its workers).
    tuned = nc3pack.open(
        packed["gridded_sst.nc"], cache_budget=12345, cache_whole_blocks=False
    )
    copy = pickle.loads(pickle.dumps(tuned))
    assert copy.cache_stats()["budget"] == 12345
    assert copy.cache_whole_blocks is False
    orig = pickle.loads(pickle.dumps(nc3pack.open(SAMPLES / "gridded_sst.nc")))
    assert not orig.is_archive
    ds.close()
    with pytest.raises(ValueError, match="closed"):
        ds["lat"][:]


def test_pack_unpack_roundtrip(tmp_path: Path) -> None:
    src = SAMPLES / "classic_records.nc"
    cases: list[dict[str, Any]] = [
        {},
        {"level": "max"},
        {"level": 5, "codec": "deflate", "block_size": "64KiB", "threads": 1},
        {"codec": "none", "block_size": 4096, "filter": "shuffle"},
    ]
    for i, opts in enumerate(cases):
        arc = tmp_path / f"{i}.nc3z"
        r = nc3pack.pack(src, arc, **opts)
        assert r.input_bytes == src.stat().st_size == nc3pack.info(arc)["file_bytes"]
        assert r.output_bytes == arc.stat().st_size and r.ratio > 0
        back = tmp_path / f"{i}.nc"
        assert nc3pack.unpack(arc, back) == src.stat().st_size
        assert filecmp.cmp(src, back, shallow=False)


def test_pack_max_gives_large_variables_large_blocks(tmp_path: Path) -> None:
    """``level="max"`` without a block size gives variables over 1 MiB 8 MiB blocks, as the
    CLI's ``--level max`` does; an explicit block size wins; values read back as
    netCDF4-python wrote them."""
    src = tmp_path / "big.nc"
    rng = np.random.default_rng(7)
    big = rng.integers(0, 1000, size=(600, 1000)).astype("f4")
    with netCDF4.Dataset(src, "w", format="NETCDF3_CLASSIC") as ds:
        ds.createDimension("y", 600)
        ds.createDimension("x", 1000)
        ds.createVariable("big", "f4", ("y", "x"))[:] = big
        ds.createVariable("x", "i4", ("x",))[:] = np.arange(1000)
    sizes = {}
    for name, opts in {
        "max": {"level": "max"},
        "max1": {"level": "max", "block_size": "1MiB"},
        "fast": {},
    }.items():
        arc = tmp_path / f"{name}.nc3z"
        nc3pack.pack(src, arc, **opts)  # type: ignore[arg-type]
        streams = nc3pack.info(arc)["archive"]["streams"]
        sizes[name] = {
            s["name"]: s["block_bytes"] for s in streams if s["name"] == "big"
        }
        assert np.array_equal(nc3pack.open(arc)["big"][...], big)
    assert sizes == {
        "max": {"big": 8 << 20},
        "max1": {"big": 1 << 20},
        "fast": {"big": 1 << 20},
    }


def test_pack_errors(tmp_path: Path) -> None:
    src = SAMPLES / "classic_records.nc"
    dst = tmp_path / "out.nc3z"
    bads: list[dict[str, Any]] = [
        {"level": "fastest"},
        {"level": True},
        {"codec": "lz4"},
        {"filter": "zip"},
        {"block_size": "1 parsec"},
        {"block_size": 0},
        {"block_size": 4},
        {"block_size": 1 << 40},
        {"threads": 0},
        {"level": 99},
    ]
    for bad in bads:
        with pytest.raises(ValueError):
            nc3pack.pack(src, dst, **bad)
        assert not dst.exists()
    nc3pack.pack(src, dst)
    with pytest.raises(FileExistsError, match="output exists"):
        nc3pack.pack(src, dst)
    nc3pack.pack(src, dst, force=True)
    with pytest.raises(FileNotFoundError):
        nc3pack.pack(tmp_path / "missing.nc", tmp_path / "x.nc3z")
    with pytest.raises(nc3pack.ArchiveError, match="HDF5"):
        nc3pack.pack(SAMPLES / "bad" / "hdf5.nc", tmp_path / "x.nc3z")
    assert not (tmp_path / "x.nc3z").exists()


def test_verify(packed: dict[str, Path]) -> None:
    r = nc3pack.verify(packed["gridded_sst.nc"], against=SAMPLES / "gridded_sst.nc")
    assert r.intact and r.hash_checked and r.original_matches and r.blocks > 0
    with pytest.raises(nc3pack.ArchiveError) as e:
        nc3pack.verify(packed["gridded_sst.nc"], against=SAMPLES / "scalars.nc")
    assert e.value.result.original_matches is False  # type: ignore[attr-defined]
    with pytest.raises(nc3pack.ArchiveError, match="block") as e:
        nc3pack.verify(SAMPLES / "bad" / "archives" / "payload_bit_flip.nc3z")
    damage = e.value.damage  # type: ignore[attr-defined]
    assert damage and damage[0].part == "block" and damage[0].variable is not None


def test_info_is_cli_json(packed: dict[str, Path]) -> None:
    tool = cli()
    if tool is None:
        pytest.skip("the nc3pack CLI is not built")
    for path in [packed["cdf5_types.nc"], SAMPLES / "attrs_all_types.nc"]:
        out = subprocess.run(
            [str(tool), "info", "--json", str(path)],
            check=True,
            capture_output=True,
            timeout=60,
        ).stdout
        assert nc3pack.info(path) == json.loads(out)


def test_pack_per_variable_settings_and_pco(tmp_path: Path) -> None:
    """``variables`` sets a variable's block size as ``--var`` does (a mapping and a rule
    list give the same archive); ``pco=False`` keeps pco out; values read back as
    netCDF4-python reads the original."""
    src = SAMPLES / "gridded_sst.nc"
    a, b, c = tmp_path / "a.nc3z", tmp_path / "b.nc3z", tmp_path / "c.nc3z"
    nc3pack.pack(src, a, variables={"sst": {"block-size": "4KiB", "level": 5}})
    nc3pack.pack(src, b, variables=["sst:block-size=4KiB,level=5"])
    assert a.read_bytes() == b.read_bytes()
    info = nc3pack.info(a)["archive"]
    assert info["format_version"] == "1.1"
    sizes = {s["name"]: s["block_bytes"] for s in info["streams"]}
    assert sizes["sst"] == 4096 and sizes["lat"] == 1 << 20
    nc3pack.pack(SAMPLES / "obs_points.nc", c, pco=False)
    assert "pco" not in nc3pack.info(c)["archive"]["blocks_by_method"]
    ref = reference(src)
    assert ref is not None
    assert np.array_equal(nc3pack.open(a)["sst"][...], ref["sst"][...])
    with pytest.raises(ValueError, match="no_such"):
        nc3pack.pack(src, tmp_path / "d.nc3z", variables={"no_such": {"level": 3}})
    assert not (tmp_path / "d.nc3z").exists()
    # The 2-D predictor forced on the float grid (sst), whole or for one variable.
    e, f = tmp_path / "e.nc3z", tmp_path / "f.nc3z"
    nc3pack.pack(src, e, filter="lorenzo", block_size="64KiB")
    nc3pack.pack(src, f, variables={"sst": {"filter": "lorenzo"}})
    for z in (e, f):
        streams = {s["name"]: s for s in nc3pack.info(z)["archive"]["streams"]}
        methods = set(streams["sst"]["blocks_by_method"])
        assert "zstd+lorenzo" in methods and methods <= {"zstd+lorenzo", "constant"}, z
        assert np.array_equal(nc3pack.open(z)["sst"][...], ref["sst"][...])


def test_pack_quantize(tmp_path: Path) -> None:
    """``quantize`` as ``--quantize``: the archive unpacks to a file netCDF4-python reads
    with netCDF-C's quantization attribute and values within the BitRound bound; a bad
    rule is a ValueError and writes nothing."""
    src = SAMPLES / "gridded_sst.nc"
    z, out = tmp_path / "q.nc3z", tmp_path / "q.nc"
    nc3pack.pack(src, z, quantize={"sst": "bitround:7"})
    assert nc3pack.info(z)["archive"]["lossy"]["variables"] == {"sst": "bitround:7"}
    nc3pack.unpack(z, out)
    ref, got = reference(src), reference(out)
    assert ref is not None and got is not None
    assert got["sst"].getncattr("_QuantizeBitRoundNumberOfSignificantBits") == 7
    fill = ref["sst"].getncattr("_FillValue")
    x = np.asarray(ref["sst"][...], dtype=np.float64)
    y = np.asarray(got["sst"][...], dtype=np.float64)
    keep = x == fill
    assert np.array_equal(x[keep], y[keep])
    assert not np.array_equal(x, y)
    assert np.all(np.abs(y[~keep] - x[~keep]) <= np.abs(x[~keep]) * 2.0**-8)
    with pytest.raises(ValueError, match="bitround"):
        nc3pack.pack(src, tmp_path / "bad.nc3z", quantize={"sst": "bitround:99"})
    with pytest.raises(ValueError, match="VARS=bitround:NSB"):
        nc3pack.pack(src, tmp_path / "bad.nc3z", quantize=["sst"])
    assert not (tmp_path / "bad.nc3z").exists()


def test_local_dataset_reads_in_a_forked_child(packed: dict[str, Path]) -> None:
    """Opened and read in the parent, read in a forked child; and opened in the child."""
    path = packed["gridded_sst.nc"]
    ds = nc3pack.open(path)
    want = ds["sst"][:]
    ds.clear_cache()

    def inherit() -> None:
        np.testing.assert_array_equal(ds["sst"][:], want)

    def reopen() -> None:
        with nc3pack.open(path) as again:
            np.testing.assert_array_equal(again["sst"][:], want)

    in_forked_child(inherit)
    in_forked_child(reopen)
    np.testing.assert_array_equal(ds["sst"][:], want)
    ds.close()


def test_of_two_attributes_with_one_name_the_first_counts_as_in_netcdf_c(
    tmp_path: Path,
) -> None:
    """A hostile file whose variable has ``_FillValue`` twice (a byte, then a short): the
    package, its xarray backend and netCDF-C all take the first."""
    import struct

    def name(s: str) -> bytes:
        b = s.encode()
        return struct.pack(">i", len(b)) + b + b"\0" * (-len(b) % 4)

    fill_b = struct.pack(">ii", 1, 1) + b"\xfd\0\0\0"  # NC_BYTE, 1 value: -3
    fill_s = struct.pack(">ii", 3, 1) + struct.pack(">h", -4) + b"\0\0"  # NC_SHORT: -4
    head = b"CDF\x01" + struct.pack(">i", 0)
    head += struct.pack(">ii", 0x0A, 1) + name("x") + struct.pack(">i", 4)
    head += struct.pack(">ii", 0, 0)  # no global attributes
    var = name("v") + struct.pack(">ii", 1, 0)
    var += struct.pack(">ii", 0x0C, 2) + name("_FillValue") + fill_b
    var += name("_FillValue") + fill_s
    var += struct.pack(">ii", 1, 4)  # NC_BYTE, vsize 4
    head += struct.pack(">ii", 0x0B, 1) + var
    begin = len(head) + 4
    data = bytes([1, 0xFD, 3, 0xFC])
    src = tmp_path / "dup.nc"
    src.write_bytes(head + struct.pack(">i", begin) + data)
    with netCDF4.Dataset(src) as nc:
        want = nc.variables["v"].getncattr("_FillValue")
    assert want == -3
    z = tmp_path / "dup.nc3z"
    nc3pack.pack(src, z)
    with nc3pack.open(z) as ds:
        assert ds.variables["v"].attrs["_FillValue"] == want
    import xarray as xr

    with xr.open_dataset(z, engine="nc3z", mask_and_scale=False) as x:
        assert x["v"].encoding.get("_FillValue", x["v"].attrs.get("_FillValue")) == want
