"""nc3pack.collection_summary: what a collection's manifests record, checked against the
files on disk."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import GOOD

import nc3pack

#: A few small samples of each kind (CDF-1, CDF-2, CDF-5, records).
SOME = [p for p in GOOD if p.stat().st_size < (1 << 20)][:6]


def test_a_summary_sums_the_inputs_and_archives_on_disk(tmp_path: Path) -> None:
    assert len(SOME) >= 4, "too few small samples"
    src = tmp_path / "in"
    for k, p in enumerate(SOME):
        d = src / f"d{k % 2}"
        d.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, d / p.name)
    bad = src / "d0" / "bad.nc"
    bad.write_bytes(b"CDF\x07 no such version")
    inputs = sorted(p for p in src.rglob("*.nc") if p != bad)
    out = tmp_path / "out"
    for i in range(2):
        nc3pack.pack_collection(src, out, shard=(i, 2), threads=1)
    archives = sorted(out.rglob("*.nc3z"))
    assert len(archives) == len(inputs)

    s = nc3pack.collection_summary(out)
    assert (s.manifests, s.files, s.packed) == (2, len(inputs) + 1, len(inputs)), s
    assert s.input_bytes == sum(p.stat().st_size for p in inputs)
    assert s.output_bytes == sum(p.stat().st_size for p in archives)
    assert s.ratio == pytest.approx(s.input_bytes / s.output_bytes)
    assert [f[0] for f in s.failures] == [str(bad)]
    assert (s.unknown_size, s.lossy, s.deleted, s.bad_lines) == (0, 0, 0, [])
    # The manifests' directory and its files give the same.
    files = sorted(str(m) for m in (out / ".nc3pack").glob("*.jsonl"))
    assert nc3pack.collection_summary(out / ".nc3pack") == s
    assert nc3pack.collection_summary(files) == s


def test_a_directory_without_manifests_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no manifest found"):
        nc3pack.collection_summary(tmp_path)
