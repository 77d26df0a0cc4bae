"""Archives in object storage from Python: ``nc3pack.open`` and the xarray backend on
``s3://`` URLs served by a real S3 implementation (``s3s-fs``, which checks request
signatures) on 127.0.0.1, and on ``http://`` URLs served by a small Range-honouring HTTP
server; values checked against xarray's netcdf4 engine (netCDF4-python) on the original file.

Without ``s3s-fs`` (``cargo install s3s-fs --version 0.14.1 --features binary``) the S3 tests
are skipped, saying why, except under CI (env ``CI`` set), where they fail.
"""

from __future__ import annotations

import http.server
import os
import pickle
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr
from conftest import SAMPLES, in_forked_child

import nc3pack
from nc3pack.xarray_backend import Nc3zBackendEntrypoint

KEY = "nc3pytestkey"
SECRET = "nc3pytestsecret"
#: The credentials of a second server (``s3_other``).
OTHER_KEY = "nc3othertestkey"
OTHER_SECRET = "nc3othertestsecret"
BUCKET = "bkt"

#: Samples read through the server: records, CDF-5 types, fill values, a gridded field.
REMOTE_SAMPLES = [
    "gridded_sst.nc",
    "classic_records.nc",
    "cdf5_types.nc",
    "fill_values.nc",
]


def _s3s_fs() -> Path | None:
    found = shutil.which("s3s-fs")
    if found:
        return Path(found)
    dirs = []
    if os.environ.get("CARGO_HOME"):
        dirs.append(Path(os.environ["CARGO_HOME"]) / "bin")
    dirs.append(Path.home() / ".cargo" / "bin")
    for d in dirs:
        p = d / "s3s-fs"
        if p.is_file() and os.access(p, os.X_OK):
            return p
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class S3Server:
    """A running ``s3s-fs`` over a directory with one bucket, signed for with ``key`` and
    ``secret``."""

    def __init__(
        self,
        root: Path,
        port: int,
        proc: subprocess.Popen[bytes],
        key: str = KEY,
        secret: str = SECRET,
    ) -> None:
        self.root = root
        self.port = port
        self.proc = proc
        self.key = key
        self.secret = secret

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def put(self, key: str, data: bytes) -> str:
        """Stores an object (the server keeps objects as files); returns its URL."""
        (self.root / BUCKET / key).write_bytes(data)
        return f"s3://{BUCKET}/{key}"

    def options(self, **more: Any) -> dict[str, Any]:
        """storage_options as an s3fs user passes them."""
        opts: dict[str, Any] = {
            "key": self.key,
            "secret": self.secret,
            "endpoint_url": self.endpoint,
            "region_name": "us-east-1",
        }
        opts.update(more)
        return opts


def environment_names(monkeypatch: pytest.MonkeyPatch, server: S3Server) -> None:
    """Sets the environment's S3 endpoint and credentials to ``server``'s (what a call
    without ``storage_options`` uses)."""
    for var in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "NC3PACK_ANON"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", server.key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", server.secret)
    monkeypatch.setenv("AWS_ENDPOINT_URL", server.endpoint)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    yield from _serve(tmp_path_factory, KEY, SECRET)


@pytest.fixture(scope="module")
def s3_other(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A second server, with credentials of its own (``OTHER_KEY``, ``OTHER_SECRET``)."""
    yield from _serve(tmp_path_factory, OTHER_KEY, OTHER_SECRET)


def _serve(
    tmp_path_factory: pytest.TempPathFactory, key: str, secret: str
) -> Iterator[S3Server]:
    """Runs an ``s3s-fs`` with the bucket ``BUCKET``, signed for with ``key`` and
    ``secret``, for as long as the generator is not closed."""
    binary = _s3s_fs()
    if binary is None:
        why = (
            "s3s-fs is not installed (cargo install s3s-fs --version 0.14.1 "
            "--features binary): the object storage tests cannot run"
        )
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    root = tmp_path_factory.mktemp("s3")
    (root / BUCKET).mkdir()
    # A port taken between the probe and the server's bind: try another, a few times.
    for _ in range(5):
        port = _free_port()
        proc = subprocess.Popen(
            [str(binary), "--host", "127.0.0.1", "--port", str(port)]
            + ["--access-key", key, "--secret-key", secret, str(root)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        listening = False
        for _ in range(200):  # up to 10 s
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                listening = True
                break
            except OSError:
                if proc.poll() is not None:
                    break
                time.sleep(0.05)
        if listening:
            try:
                yield S3Server(root, port, proc, key, secret)
            finally:
                proc.kill()
                proc.wait(timeout=10)
            return
        proc.kill()
        proc.wait(timeout=10)
    pytest.fail("s3s-fs did not start listening on 127.0.0.1")


@pytest.fixture(scope="module")
def uploaded(s3: S3Server, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Each of REMOTE_SAMPLES packed (small blocks, so that reads span several) and put in
    the bucket: sample name -> URL."""
    out = tmp_path_factory.mktemp("remote-packed")
    urls = {}
    for name in REMOTE_SAMPLES:
        z = out / (Path(name).stem + ".nc3z")
        nc3pack.pack(SAMPLES / name, z, block_size="64KiB")
        urls[name] = s3.put(z.name, z.read_bytes())
    return urls


def _netcdf4(name: str) -> xr.Dataset:
    return xr.open_dataset(SAMPLES / name, engine="netcdf4").load()


@pytest.mark.parametrize("name", REMOTE_SAMPLES)
def test_xarray_s3_equals_netcdf4(
    s3: S3Server, uploaded: dict[str, str], name: str
) -> None:
    with xr.open_dataset(
        uploaded[name],
        engine="nc3z",
        backend_kwargs={"storage_options": s3.options()},
    ) as ds:
        got = ds.load()
    with _netcdf4(name) as want:
        xr.testing.assert_identical(got, want)


def test_xarray_s3_dask_chunks(s3: S3Server, uploaded: dict[str, str]) -> None:
    """A dask-chunked read: many chunks, each a read of its blocks from the server."""
    url = uploaded["gridded_sst.nc"]
    with xr.open_dataset(
        url, engine="nc3z", chunks={}, backend_kwargs={"storage_options": s3.options()}
    ) as ds:
        assert ds["sst"].chunks is not None
        assert len(ds["sst"].data.chunks[0]) > 1, "one chunk only: nothing tested"
        got = ds.compute()
    with _netcdf4("gridded_sst.nc") as want:
        xr.testing.assert_identical(got, want)


def test_client_kwargs_and_env_style_names(
    s3: S3Server, uploaded: dict[str, str]
) -> None:
    """endpoint and region given as s3fs users give them to botocore: client_kwargs."""
    opts = {
        "key": KEY,
        "secret": SECRET,
        "client_kwargs": {"endpoint_url": s3.endpoint, "region_name": "us-east-1"},
    }
    with nc3pack.open(uploaded["gridded_sst.nc"], storage_options=opts) as ds:
        got = ds["sst"][3, 10:20, 5:50:3]
    raw = xr.open_dataset(
        SAMPLES / "gridded_sst.nc", engine="netcdf4", mask_and_scale=False
    )
    with raw:
        np.testing.assert_array_equal(got, raw["sst"].values[3, 10:20, 5:50:3])


def test_open_reads_hyperslabs(s3: S3Server, uploaded: dict[str, str]) -> None:
    url = uploaded["gridded_sst.nc"]
    raw = xr.open_dataset(
        SAMPLES / "gridded_sst.nc", engine="netcdf4", mask_and_scale=False
    )
    with raw, nc3pack.open(url, storage_options=s3.options()) as ds:
        assert ds.is_archive and ds.path == url
        # The budget: open in 2 requests, one value in 3 in all.
        opened = ds.request_stats()
        assert opened is not None and opened["requests"] <= 2
        one = ds["sst"][5, 90, 180]
        after_one = ds.request_stats()
        assert after_one is not None and after_one["requests"] <= 3
        assert one == raw["sst"].values[5, 90, 180]
        whole = ds["sst"][:]
        np.testing.assert_array_equal(whole, raw["sst"].values)
        after_all = ds.request_stats()
        assert after_all is not None
        assert after_all["bytes"] > after_one["bytes"] > opened["bytes"] > 0
    local = nc3pack.open(SAMPLES / "gridded_sst.nc")
    assert local.request_stats() is None


def test_netcdf3_file_by_url(s3: S3Server) -> None:
    """An original netCDF-3 object (not an archive) opens too, read by ranges."""
    url = s3.put("plain.nc", (SAMPLES / "classic_records.nc").read_bytes())
    with xr.open_dataset(
        url, engine="nc3z", backend_kwargs={"storage_options": s3.options()}
    ) as ds:
        got = ds.load()
    with _netcdf4("classic_records.nc") as want:
        xr.testing.assert_identical(got, want)


def test_pickle_keeps_storage_options(s3: S3Server, uploaded: dict[str, str]) -> None:
    """dask distributed pickles the dataset: the copy opens the object again."""
    with nc3pack.open(uploaded["fill_values.nc"], storage_options=s3.options()) as ds:
        copy = pickle.loads(pickle.dumps(ds))
        for name, v in ds.variables.items():
            np.testing.assert_array_equal(copy[name][...], v[...])
        copy.close()


def test_info_and_verify_by_url(
    s3: S3Server, uploaded: dict[str, str], tmp_path: Path
) -> None:
    url = uploaded["gridded_sst.nc"]
    local = tmp_path / "sst.nc3z"
    nc3pack.pack(SAMPLES / "gridded_sst.nc", local, block_size="64KiB")
    assert nc3pack.info(url, storage_options=s3.options()) == nc3pack.info(local)
    r = nc3pack.verify(url, storage_options=s3.options())
    assert r.intact and r.hash_checked and r.blocks > 1
    out = tmp_path / "restored.nc"
    nc3pack.unpack(url, out, storage_options=s3.options())
    assert out.read_bytes() == (SAMPLES / "gridded_sst.nc").read_bytes()


def test_threads_keep_their_own_credentials(
    s3: S3Server,
    s3_other: S3Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two threads at once, each reaching its own server: one calls ``info``, ``verify`` and
    ``unpack`` with server A's ``storage_options``; the other calls them, and ``open``, with
    none, so that the environment (server B's endpoint and credentials) applies. Both servers
    hold an object at the same URL, a different archive each: a call that reached the other
    server would succeed with the other file's data. (Each call carries its own options: none
    is set process-wide for the length of another thread's call.)"""
    key = "same-name.nc3z"
    sources = {"a": SAMPLES / "classic_records.nc", "b": SAMPLES / "fill_values.nc"}
    url = ""
    for name, server in (("a", s3), ("b", s3_other)):
        z = tmp_path / f"{name}.nc3z"
        nc3pack.pack(sources[name], z)
        url = server.put(key, z.read_bytes())
    want_a = nc3pack.info(url, storage_options=s3.options())
    want_b = nc3pack.info(url, storage_options=s3_other.options())
    assert want_a != want_b
    blocks = {
        "a": nc3pack.verify(url, storage_options=s3.options()).blocks,
        "b": nc3pack.verify(url, storage_options=s3_other.options()).blocks,
    }
    # Calls without storage_options take the environment: server B.
    environment_names(monkeypatch, s3_other)
    assert nc3pack.info(url) == want_b

    wrong: list[str] = []
    done = threading.Event()
    deadline = time.monotonic() + 60

    def check(who: str, i: int, opts: dict[str, Any] | None) -> None:
        """One call of the three (by ``i``), checked against ``who``'s file."""
        want = want_a if who == "a" else want_b
        if i % 3 == 0:
            got = nc3pack.info(url, storage_options=opts)
            ok = got == want
        elif i % 3 == 1:
            r = nc3pack.verify(url, storage_options=opts)
            ok = r.intact and r.blocks == blocks[who]
        else:
            out = tmp_path / f"{who}.nc"
            nc3pack.unpack(url, out, force=True, storage_options=opts)
            ok = out.read_bytes() == sources[who].read_bytes()
        if not ok:
            wrong.append(
                f"call {i} for server {who.upper()} read the other server's file"
            )

    def with_options() -> None:
        try:
            for i in range(90):
                if time.monotonic() > deadline:
                    break
                check("a", i, s3.options())
        except Exception as e:  # noqa: BLE001 - reported by the test
            wrong.append(f"server A: {e!r}")
        finally:
            done.set()

    def from_env() -> None:
        i = 0
        try:
            while not done.is_set() and time.monotonic() < deadline:
                check("b", i, None)
                with nc3pack.open(url) as ds:
                    if set(ds.variables) != {v["name"] for v in want_b["variables"]}:
                        wrong.append(f"open {i} read server A's file")
                i += 1
        except Exception as e:  # noqa: BLE001 - reported by the test
            wrong.append(f"server B: {e!r}")

    threads = [threading.Thread(target=f) for f in (with_options, from_env)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    assert not any(t.is_alive() for t in threads), (
        "a thread was still running after 90 s"
    )
    assert not wrong, f"{len(wrong)} calls reached the wrong server: {wrong[:5]}"


def test_pack_collection_to_a_prefix_with_storage_options(
    s3: S3Server,
    s3_other: S3Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``pack_collection`` into an S3 prefix with ``storage_options`` writes to the server
    they name, not to the one the environment names; a rerun skips what is there; the
    collection verifies from its uploaded manifests; a wrong secret is a PermissionError
    before anything is written."""
    environment_names(monkeypatch, s3_other)
    src = tmp_path / "in"
    names = ["gridded_sst.nc", "obs_points.nc", "sub/classic_records.nc"]
    for n in names:
        (src / n).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SAMPLES / Path(n).name, src / n)
    url = f"s3://{BUCKET}/coll/"
    monkeypatch.chdir(tmp_path)  # the local manifest goes to the working directory
    r = nc3pack.pack_collection(src, url, threads=2, storage_options=s3.options())
    assert r.ok, r.failures
    assert (r.packed, r.skipped) == (3, 0)
    for i, n in enumerate(names):
        assert (s3.root / BUCKET / "coll" / f"{n}.nc3z").is_file(), n
        assert not (s3_other.root / BUCKET / "coll" / f"{n}.nc3z").exists(), n
        back = tmp_path / f"back{i}.nc"
        nc3pack.unpack(f"{url}{n}.nc3z", back, storage_options=s3.options())
        assert back.read_bytes() == (src / n).read_bytes(), n
    again = nc3pack.pack_collection(src, url, threads=2, storage_options=s3.options())
    assert (again.packed, again.skipped) == (0, 3)
    v = nc3pack.verify_collection(f"{url}.nc3pack/", storage_options=s3.options())
    assert (v.ok, v.checked) == (True, 3)
    with pytest.raises(PermissionError):
        nc3pack.pack_collection(
            src,
            f"s3://{BUCKET}/denied/",
            storage_options=s3.options(secret="not-the-secret"),
        )
    assert not (s3.root / BUCKET / "denied").exists()


def test_wrong_secret_is_permission_error(
    s3: S3Server, uploaded: dict[str, str]
) -> None:
    url = uploaded["gridded_sst.nc"]
    with pytest.raises(PermissionError, match=r"access denied") as e:
        nc3pack.open(url, storage_options=s3.options(secret="not-the-secret"))
    assert url in str(e.value)
    with pytest.raises(PermissionError):
        nc3pack.info(url, storage_options=s3.options(secret="not-the-secret"))


def test_missing_key_is_file_not_found(s3: S3Server) -> None:
    url = f"s3://{BUCKET}/no/such.nc3z"
    with pytest.raises(FileNotFoundError, match="no such object") as e:
        nc3pack.open(url, storage_options=s3.options())
    assert url in str(e.value)
    with pytest.raises(FileNotFoundError):
        xr.open_dataset(
            url, engine="nc3z", backend_kwargs={"storage_options": s3.options()}
        )


def test_not_an_archive_object(s3: S3Server) -> None:
    url = s3.put("junk.nc3z", b"this is not an archive, nor netCDF-3\n" * 10)
    with pytest.raises(nc3pack.ArchiveError) as e:
        nc3pack.open(url, storage_options=s3.options())
    assert url in str(e.value)


@pytest.mark.parametrize(
    ("opts", "match"),
    [
        ({"colour": "red"}, "unknown storage option 'colour'"),
        ({"requester_pays": True}, "unknown storage option 'requester_pays'"),
        ({"client_kwargs": {"verify": False}}, "unknown client_kwargs option 'verify'"),
        ({"anon": "yes"}, "'anon' must be True or False"),
        ({"key": 42}, "'key' must be a string"),
    ],
)
def test_bad_storage_options(opts: dict[str, Any], match: str) -> None:
    """Refused before any request (no server needed)."""
    with pytest.raises(ValueError, match=match):
        nc3pack.open(f"s3://{BUCKET}/x.nc3z", storage_options=opts)
    with pytest.raises(ValueError, match=match):
        xr.open_dataset(
            f"s3://{BUCKET}/x.nc3z",
            engine="nc3z",
            backend_kwargs={"storage_options": opts},
        )


def test_storage_options_on_a_local_path(packed: dict[str, Path]) -> None:
    with pytest.raises(ValueError, match="storage_options apply to URLs"):
        nc3pack.open(packed["scalars.nc"], storage_options={"anon": True})


def test_guess_can_open_urls() -> None:
    e = Nc3zBackendEntrypoint()
    assert e.guess_can_open("s3://bucket/dir/f.nc3z")
    assert e.guess_can_open("https://example.org/data/f.nc3z")
    assert not e.guess_can_open("s3://bucket/dir/f.nc")
    assert not e.guess_can_open("https://example.org/data/f.zarr")


class _RangeHandler(http.server.SimpleHTTPRequestHandler):
    """Serves files, honouring ``Range: bytes=A-B`` and ``bytes=-N`` with 206."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        rng = self.headers.get("Range")
        path = Path(self.translate_path(self.path))
        if not path.is_file():
            self.send_error(404)
            return
        data = path.read_bytes()
        if rng is None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        spec = rng.removeprefix("bytes=")
        a, _, b = spec.partition("-")
        if a == "":
            start, end = max(0, len(data) - int(b)), len(data)
        else:
            start, end = int(a), min(len(data), int(b) + 1 if b else len(data))
        if start >= len(data):
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{len(data)}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
        self.send_header("Content-Length", str(end - start))
        self.end_headers()
        self.wfile.write(data[start:end])


@pytest.fixture(scope="module")
def http_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    root = tmp_path_factory.mktemp("http")

    def handler(*args: Any) -> _RangeHandler:
        return _RangeHandler(*args, directory=str(root))

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        t.join(timeout=10)


def test_http_url(http_root: tuple[Path, str]) -> None:
    root, base = http_root
    nc3pack.pack(SAMPLES / "gridded_sst.nc", root / "sst.nc3z", block_size="64KiB")
    url = f"{base}/sst.nc3z"
    with xr.open_dataset(url, engine="nc3z", storage_options={}) as ds:
        got = ds.load()
    with _netcdf4("gridded_sst.nc") as want:
        xr.testing.assert_identical(got, want)
    with nc3pack.open(url) as ds:
        assert ds.is_archive
    with pytest.raises(FileNotFoundError):
        nc3pack.open(f"{base}/missing.nc3z")


def _check_fork(url: str, opts: dict[str, Any] | None) -> None:
    """A dataset opened by URL and read in the parent reads in a forked child (fork-inherit),
    and the child opens and reads the URL itself (fork-reopen); the parent still reads."""
    ds = nc3pack.open(url, storage_options=opts)
    want = ds["sst"][:]
    # Read again from the object in the child, not from the cache.
    ds.clear_cache()

    def inherit() -> None:
        np.testing.assert_array_equal(ds["sst"][:], want)

    def reopen() -> None:
        with nc3pack.open(url, storage_options=opts) as again:
            np.testing.assert_array_equal(again["sst"][:], want)

    in_forked_child(inherit)
    in_forked_child(reopen)
    ds.clear_cache()
    np.testing.assert_array_equal(ds["sst"][:], want)
    ds.close()


def test_s3_dataset_reads_in_a_forked_child(
    s3: S3Server, uploaded: dict[str, str]
) -> None:
    _check_fork(uploaded["gridded_sst.nc"], s3.options())


def test_http_dataset_reads_in_a_forked_child(http_root: tuple[Path, str]) -> None:
    root, base = http_root
    nc3pack.pack(SAMPLES / "gridded_sst.nc", root / "fork.nc3z", block_size="64KiB")
    _check_fork(f"{base}/fork.nc3z", None)


PASSWORD = "pw-7d1e93b0"
SIGNATURE = "sig-5c2a8f41"


def test_exceptions_and_reprs_hide_passwords_and_query_strings(
    http_root: tuple[Path, str],
) -> None:
    root, base = http_root
    nc3pack.pack(SAMPLES / "gridded_sst.nc", root / "redact.nc3z", block_size="64KiB")
    (root / "junk.nc3z").write_bytes(b"this is not an archive, nor netCDF-3\n" * 10)
    with_password = base.replace("http://", f"http://reader:{PASSWORD}@", 1)
    presigned = f"{base}/redact.nc3z?X-Amz-Signature={SIGNATURE}"

    def clean(text: str) -> None:
        assert PASSWORD not in text and SIGNATURE not in text, text

    ds = nc3pack.open(f"{with_password}/redact.nc3z")
    clean(repr(ds))
    assert "reader:***@127.0.0.1" in repr(ds)
    ds.close()
    with pytest.raises(ValueError, match="closed") as closed:
        ds.read("sst")
    clean(str(closed.value))
    clean(repr(nc3pack.verify(f"{with_password}/redact.nc3z")))
    with pytest.raises(FileNotFoundError) as missing:
        nc3pack.open(f"{with_password}/missing.nc3z")
    clean(str(missing.value))
    assert "reader:***@127.0.0.1" in str(missing.value)
    with pytest.raises(nc3pack.ArchiveError) as junk:
        nc3pack.open(f"{with_password}/junk.nc3z")
    clean(str(junk.value))
    with pytest.raises(ValueError) as query:
        nc3pack.open(presigned)
    clean(str(query.value))
    with pytest.raises(ValueError) as query:
        xr.open_dataset(presigned, engine="nc3z")
    clean(str(query.value))
