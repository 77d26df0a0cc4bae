"""nc3pack.pack_collection against real files: resume, failures, deletion, shards."""

from __future__ import annotations

import filecmp
import json
import shutil
from pathlib import Path

import pytest
from conftest import GOOD

import nc3pack

#: A few small samples of each kind (CDF-1, CDF-2, CDF-5, records).
SOME = [p for p in GOOD if p.stat().st_size < (1 << 20)][:6]


def tree(base: Path) -> Path:
    """Copies SOME into ``base/in``, half in a subdirectory; returns ``base/in``."""
    src = base / "in"
    (src / "sub").mkdir(parents=True)
    for k, p in enumerate(SOME):
        shutil.copyfile(p, src / ("sub" if k % 2 else ".") / p.name)
    return src


def originals(src: Path) -> list[Path]:
    return sorted(p for p in src.rglob("*.nc") if p.is_file())


def unpacks_to_originals(src: Path, out: Path, copies: Path) -> None:
    """Every archive under ``out`` restores its original (kept in ``copies``) byte for
    byte."""
    for orig in originals(copies):
        name = orig.relative_to(copies)
        back = out.parent / "back" / name
        back.parent.mkdir(parents=True, exist_ok=True)
        nc3pack.unpack(out / f"{name}.nc3z", back, force=True)
        assert filecmp.cmp(back, orig, shallow=False), name


def test_packs_resumes_and_unpacks_byte_for_byte(tmp_path: Path) -> None:
    assert len(SOME) >= 4, "too few small samples"
    src = tree(tmp_path)
    out = tmp_path / "out"
    first = nc3pack.pack_collection(src, out, threads=2)
    n = len(originals(src))
    assert (first.files, first.packed, first.skipped) == (n, n, 0), first
    assert first.ok and first.failures == [] and first.unreadable == []
    assert first.output_dir == str(out)
    assert first.ratio is not None and first.input_bytes > 0
    unpacks_to_originals(src, out, src)
    lines = [json.loads(x) for x in Path(first.manifest).read_text().splitlines()]
    assert sorted(x["name"] for x in lines) == sorted(
        str(p.relative_to(src)) for p in originals(src)
    )
    assert {x["status"] for x in lines} == {"packed"}
    # A second call skips what the first packed, and packs a file added since.
    shutil.copyfile(SOME[0], src / "sub" / "added.nc")
    second = nc3pack.pack_collection([src], out, threads=2)
    assert (second.packed, second.skipped) == (1, n), second
    assert second.ratio is not None
    third = nc3pack.pack_collection(str(src), out)
    assert (third.packed, third.skipped, third.ratio) == (0, n + 1, None), third
    # force packs everything again.
    again = nc3pack.pack_collection(src, out, force=True)
    assert (again.packed, again.skipped) == (n + 1, 0), again


def test_a_bad_file_is_reported_not_fatal(tmp_path: Path) -> None:
    src = tree(tmp_path)
    # Found in a directory and starting with CDF, so meant to be packed: a failure.
    bad = src / "sub" / "broken.nc"
    bad.write_bytes(b"CDF\x01" + b"\x00" * 3)
    # Given by name and not netCDF at all: a failure too.
    text = tmp_path / "notes.txt"
    text.write_text("not netCDF\n")
    out = tmp_path / "out"
    r = nc3pack.pack_collection([src, text], out, root=tmp_path)
    good = len(originals(src)) - 1
    assert r.packed == good, r
    assert sorted(f.input for f in r.failures) == sorted([str(bad), str(text)])
    assert all(f.message for f in r.failures) and not r.ok
    assert "broken.nc" in str([str(f) for f in r.failures])
    assert not (out / "in" / "sub" / "broken.nc.nc3z").exists()
    lines = [json.loads(x) for x in Path(r.manifest).read_text().splitlines()]
    failed = sorted(x["name"] for x in lines if x["status"] == "failed")
    assert failed == ["in/sub/broken.nc", "notes.txt"]
    # The good archives restore their originals.
    bad.unlink()
    unpacks_to_originals(src, out / "in", src)


def test_delete_input_deletes_originals_once_packed(tmp_path: Path) -> None:
    src = tree(tmp_path)
    copies = tmp_path / "copies"
    shutil.copytree(src, copies)
    out = tmp_path / "out"
    r = nc3pack.pack_collection(src, out, delete_input=True, threads=2)
    assert r.ok and r.packed == len(originals(copies)), r
    assert originals(src) == []
    unpacks_to_originals(src, out, copies)


def test_shards_cover_each_file_once(tmp_path: Path) -> None:
    src = tree(tmp_path)
    out = tmp_path / "out"
    a = nc3pack.pack_collection(src, out, shard="0/2")
    b = nc3pack.pack_collection(src, out, shard=(1, 2))
    assert a.packed + b.packed == len(originals(src)) and a.packed and b.packed
    assert Path(a.manifest).name == "manifest-0-of-2.jsonl"
    assert Path(b.manifest).name == "manifest-1-of-2.jsonl"
    unpacks_to_originals(src, out, src)


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs inputs"):
        nc3pack.pack_collection([], tmp_path / "out")
    with pytest.raises(ValueError, match="shard"):
        nc3pack.pack_collection(SOME[0], tmp_path / "out", shard="2/2")
    with pytest.raises(ValueError, match="level"):
        nc3pack.pack_collection(SOME[0], tmp_path / "out", level=True)
    with pytest.raises(ValueError, match="root"):
        nc3pack.pack_collection(SOME[0], tmp_path / "out", root=tmp_path)
    assert not (tmp_path / "out").exists()
