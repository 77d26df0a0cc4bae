"""A collection packed and verified on a dask cluster (nc3pack.dask), with a worker process
killed by SIGKILL in the middle of the run."""

from __future__ import annotations

import json
import os
import signal
import struct
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

import nc3pack

distributed = pytest.importorskip("distributed")
if TYPE_CHECKING:
    from distributed import Client

import nc3pack.dask

TIMEOUT = 120  # seconds for any one cluster operation
FILES = 2000


def _name(s: str) -> bytes:
    """A netCDF-3 name: its length, its bytes padded to 4."""
    b = s.encode()
    return struct.pack(">i", len(b)) + b + b"\0" * (-len(b) % 4)


def write_cdf1(path: Path, title: str, data: np.ndarray) -> None:
    """A classic (CDF-1) netCDF file: one dimension ``x``, a global ``title`` and one
    float variable ``v`` over ``x`` holding ``data``."""
    t = title.encode()
    head = b"CDF\x01" + struct.pack(">i", 0)
    head += struct.pack(">ii", 0x0A, 1) + _name("x") + struct.pack(">i", len(data))
    head += struct.pack(">ii", 0x0C, 1) + _name("title") + struct.pack(">ii", 2, len(t))
    head += t + b"\0" * (-len(t) % 4)
    var = _name("v") + struct.pack(">ii", 1, 0) + struct.pack(">ii", 0, 0)
    var += struct.pack(">ii", 5, 4 * len(data))
    head += struct.pack(">ii", 0x0B, 1) + var
    begin = len(head) + 4
    path.write_bytes(head + struct.pack(">i", begin) + data.astype(">f4").tobytes())


def make_tree(root: Path, count: int, seed: int) -> list[str]:
    """``count`` files of 16-48 KiB of varied data (random walks, some quantized, some
    smooth) in a tree ``yYYYY/mMM/fieldK.nc``; returns their names, sorted."""
    rng = np.random.default_rng(seed)
    names = []
    for k in range(count):
        name = f"y{2000 + k % 5}/m{k // 5 % 12 + 1:02}/field{k}.nc"
        n = int(rng.integers(4096, 12288))
        walk = np.cumsum(rng.standard_normal(n)) * float(rng.uniform(0.1, 10))
        if k % 3 == 0:
            walk = np.round(walk, 1)
        elif k % 3 == 1:
            walk = np.sin(np.arange(n) / rng.uniform(5, 500)) * 100 + walk * 0.01
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        write_cdf1(p, f"field {k}", walk)
        names.append(name)
    return sorted(names)


def manifest_lines(out: Path) -> list[tuple[str, dict[str, Any]]]:
    """Every entry line of every manifest in ``out/.nc3pack``: (manifest, entry). A line
    cut short by a kill (no newline, or not JSON) is left out, as nc3pack reads them."""
    lines = []
    for m in sorted((out / ".nc3pack").glob("*.jsonl")):
        for line in m.read_text().split("\n"):
            try:
                lines.append((m.name, json.loads(line)))
            except ValueError:
                continue
    return lines


def recorded(out: Path) -> int:
    """Lines of the manifests ending with a newline: the files recorded so far."""
    return sum(m.read_bytes().count(b"\n") for m in (out / ".nc3pack").glob("*.jsonl"))


def temporaries(out: Path) -> list[Path]:
    return sorted(out.rglob(".nc3pack-*.part"))


def test_a_worker_killed_mid_run_loses_nothing_and_packs_nothing_twice(
    client: Client, tmp_path: Path
) -> None:
    root, out = tmp_path / "in", tmp_path / "out"
    names = make_tree(root, FILES, seed=51)
    workers = client.run(os.getpid)
    assert len(workers) == 2
    # 500 files a share: a share renames its archives into place and records them 256 at
    # a time (a commit group), so a share killed after its first group and before its
    # last has files recorded, files packed into temporaries not yet renamed, and files
    # not yet packed.
    shards = 4
    pool = ThreadPoolExecutor(1)
    run = pool.submit(
        nc3pack.dask.pack_collection,
        client,
        [root],
        out,
        shards=shards,
        root=root,
        level="max",
    )
    # Wait, boundedly, until a worker is in the middle of a share (its first group
    # recorded, some temporaries of the next written), then kill that worker's process.
    start, seen, share_lines = time.monotonic(), 0, 0
    victim_pid, killed_share = 0, -1
    for _ in range(20000):
        assert time.monotonic() - start < TIMEOUT, f"no kill in time ({seen} recorded)"
        assert not run.done(), f"the run finished before the kill ({seen} recorded)"
        seen = recorded(out) if (out / ".nc3pack").is_dir() else 0
        for addr, keys in client.processing().items() if seen else ():
            for k in map(str, keys):
                if "pack-" not in k or addr not in workers:
                    continue
                i = int(k.split("pack-")[1].split("-of-")[0])
                m = out / ".nc3pack" / f"manifest-{i}-of-{shards}.jsonl"
                share_lines = m.read_bytes().count(b"\n") if m.exists() else 0
                pid = workers[addr]
                parts = [p for p in temporaries(out) if f"@{pid}-" in p.name]
                if 256 <= share_lines < FILES // shards and len(parts) >= 5:
                    victim_pid, killed_share = pid, i
                    break
            if victim_pid:
                break
        if victim_pid:
            break
        time.sleep(0.01)
    assert victim_pid, f"no worker was in the middle of a share ({seen} recorded)"
    os.kill(victim_pid, signal.SIGKILL)
    at_kill = recorded(out)
    left_at_kill = [p for p in temporaries(out) if f"@{victim_pid}-" in p.name]
    # The kill landed mid-run, mid-share: some files recorded, not all, and the killed
    # process's temporaries left.
    assert 0 < at_kill < FILES, at_kill
    assert left_at_kill, "no temporary of the killed process"
    assert not run.done()

    result = run.result(timeout=4 * TIMEOUT)
    pool.shutdown()
    # The killed worker is gone (the nanny started another process).
    assert victim_pid not in client.run(os.getpid).values()

    # The merged result accounts for every input, once.
    assert isinstance(result, nc3pack.CollectionResult)
    assert result.ok, (result.failures, result.unreadable)
    assert result.files == FILES
    assert result.packed + result.skipped == FILES
    assert result.packed > 0
    assert result.output_dir == os.fspath(out)
    assert result.manifest == os.fspath(out / ".nc3pack")
    assert sorted(m.name for m in (out / ".nc3pack").glob("*.jsonl")) == sorted(
        f"manifest-{i}-of-{shards}.jsonl" for i in range(shards)
    )

    # Every input has exactly one `packed` line across all manifests, and an archive.
    lines = manifest_lines(out)
    packed = Counter(e["name"] for _, e in lines if e["status"] == "packed")
    assert sorted(packed) == names
    assert set(packed.values()) == {1}, [n for n, c in packed.items() if c > 1]
    assert not [e for _, e in lines if e["status"] == "failed"]
    for n in names:
        assert (out / (n + ".nc3z")).is_file(), n
    # The killed share was run again, and resumed from its manifest: the files its first
    # run recorded have `skipped` lines of its rerun after their `packed` lines.
    mine = [e for m, e in lines if m == f"manifest-{killed_share}-of-{shards}.jsonl"]
    first = [e["name"] for e in mine if e["status"] == "packed"]
    assert first, mine
    skipped = {e["name"] for e in mine if e["status"] == "skipped"}
    assert len(skipped) >= share_lines, "the killed share's rerun did not resume"
    assert skipped <= set(first)
    # No temporary file is left anywhere under the output (the killed process's are
    # removed by the shares that ran after it).
    assert temporaries(out) == []
    print(
        f"killed pid {victim_pid} at {at_kill}/{FILES} recorded, share {killed_share} "
        f"in flight with {share_lines} lines, {len(left_at_kill)} of its temporaries "
        f"seen; the rerun skipped "
        f"{len(skipped)}"
    )

    # Verified on the cluster against the originals: clean, every archive once.
    v = nc3pack.dask.verify_collection(client, out / ".nc3pack", against=root)
    assert v.ok, v.failures[:5]
    assert v.checked == FILES
    # One archive damaged: reported once, by the share owning it.
    victim = out / (names[1234] + ".nc3z")
    good = victim.read_bytes()
    bad = bytearray(good)
    bad[len(bad) // 2] ^= 0x40
    victim.write_bytes(bytes(bad))
    v = nc3pack.dask.verify_collection(client, out / ".nc3pack", shards=7)
    assert v.checked == FILES
    assert [p for p, _ in v.failures] == [os.fspath(victim)]
    victim.write_bytes(good)

    # Again: nothing to do.
    again = nc3pack.dask.pack_collection(client, root, out, root=root)
    assert again.ok
    assert (again.files, again.packed, again.skipped) == (FILES, 0, FILES)
    assert temporaries(out) == []


def test_verify_collection_by_shares(tmp_path: Path) -> None:
    root, out = tmp_path / "in", tmp_path / "out"
    names = make_tree(root, 30, seed=7)
    # Packed in 4 shares: share i's names are those of its manifest.
    for i in range(4):
        r = nc3pack.pack_collection(root, out, threads=2, shard=(i, 4))
        assert r.failures == []
    assert sum(1 for _ in manifest_lines(out)) == 30
    shares = [
        sorted(
            e["name"] for m, e in manifest_lines(out) if m.endswith(f"-{i}-of-4.jsonl")
        )
        for i in range(4)
    ]
    assert sorted(n for share in shares for n in share) == names
    whole = nc3pack.verify_collection(out / ".nc3pack", against=root)
    assert isinstance(whole, nc3pack.VerifyCollectionResult)
    assert (whole.ok, whole.checked, whole.failures) == (True, 30, [])
    # Every archive damaged: each share of verify reports exactly the archives of the names
    # pack's share of the same number packed (in byte order), so the shares together report
    # each once.
    archives = [out / (n + ".nc3z") for n in names]
    for a in archives:
        b = bytearray(a.read_bytes())
        b[len(b) // 2] ^= 1
        a.write_bytes(bytes(b))
    got: list[str] = []
    for i in range(4):
        v = nc3pack.verify_collection(
            [out / ".nc3pack"], shard=(i, 4) if i % 2 else f"{i}/4", threads=1
        )
        mine = [os.fspath(out / (n + ".nc3z")) for n in shares[i]]
        assert v.checked == len(mine)
        assert [p for p, _ in v.failures] == mine
        assert all("damaged" in m for _, m in v.failures)
        assert not v.ok
        got.extend(p for p, _ in v.failures)
    assert sorted(got) == sorted(os.fspath(a) for a in archives)
    with pytest.raises(ValueError, match="shard"):
        nc3pack.verify_collection(out / ".nc3pack", shard="4/4")
    with pytest.raises(ValueError):
        nc3pack.verify_collection(tmp_path / "in")
