"""Errors name the Python API's arguments (``force=True``), never the command line's flags
(``--force``), which a Python user does not pass."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import SAMPLES

import nc3pack

#: A command-line flag in a message: ``--force``, ``--delete-input``.
FLAG = re.compile(r"--[a-z]")


def test_an_existing_output_names_force_true(tmp_path: Path) -> None:
    src, dst = SAMPLES / "gridded_sst.nc", tmp_path / "sst.nc3z"
    nc3pack.pack(src, dst)
    with pytest.raises(FileExistsError) as e:
        nc3pack.pack(src, dst)
    assert "use force=True to overwrite" in str(e.value), e.value
    assert not FLAG.search(str(e.value)), e.value
    back = tmp_path / "back.nc"
    nc3pack.unpack(dst, back)
    with pytest.raises(FileExistsError) as e:
        nc3pack.unpack(dst, back)
    assert "force=True" in str(e.value) and not FLAG.search(str(e.value)), e.value


def test_quantize_errors_name_the_argument(tmp_path: Path) -> None:
    src = SAMPLES / "gridded_sst.nc"
    with pytest.raises(ValueError) as e:
        nc3pack.pack(src, tmp_path / "q.nc3z", quantize={"nothere": "bitround:7"})
    assert "quantize: " in str(e.value), e.value
    assert not FLAG.search(str(e.value)), e.value


def test_delete_input_with_quantize_names_the_arguments(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.nc").write_bytes((SAMPLES / "gridded_sst.nc").read_bytes())
    with pytest.raises(ValueError) as e:
        nc3pack.pack_collection(
            src,
            tmp_path / "out",
            delete_input=True,
            quantize={"sst": "bitround:7"},
        )
    assert "delete_input=True cannot be used with quantize" in str(e.value), e.value
    assert not FLAG.search(str(e.value)), e.value
