"""Shared fixtures: the repository's samples, packed once per test session."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import nc3pack

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
