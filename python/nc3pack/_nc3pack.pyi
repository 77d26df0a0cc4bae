"""Type stubs of the compiled module (see python/src/lib.rs)."""

from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_BLOCK_SIZE: int

class ArchiveError(Exception): ...

def redact_url(text: str) -> str: ...

class Reader:
    def __init__(
        self, path: str, storage_options: list[tuple[str, str]] | None = None
    ) -> None: ...
    @property
    def path(self) -> str: ...
    @property
    def is_archive(self) -> bool: ...
    @property
    def variant(self) -> str: ...
    def dimensions(self) -> list[tuple[str, int, bool]]: ...
    def variables(
        self,
    ) -> list[tuple[str, str, list[str], list[int], list[tuple[str, Any]]]]: ...
    def global_attributes(self) -> list[tuple[str, Any]]: ...
    def read(
        self,
        name: str,
        start: list[int] | None = None,
        count: list[int] | None = None,
        stride: list[int] | None = None,
    ) -> np.ndarray: ...
    def block_layout(self, name: str) -> tuple[int, int, bool] | None: ...
    def cache_stats(self) -> dict[str, int]: ...
    def set_cache_budget(self, bytes: int) -> None: ...
    def clear_cache(self) -> None: ...
    def request_stats(self) -> tuple[int, int] | None: ...
    def set_cache_whole_blocks(self, on: bool) -> None: ...
    @property
    def cache_whole_blocks(self) -> bool: ...

class Original:
    def __init__(
        self, path: str, storage_options: list[tuple[str, str]] | None = None
    ) -> None: ...
    @property
    def size(self) -> int: ...
    def pread(self, offset: int, n: int) -> bytes: ...

def pack(
    src: str,
    dst: str,
    level: str,
    codec: str,
    filter: str,
    block_size: int | None,
    threads: int | None,
    force: bool,
    pco: bool = True,
    var_rules: list[str] = ...,
    quantize: list[str] = ...,
) -> tuple[int, int, int, str]: ...
def pack_collection(
    inputs: list[str],
    output_dir: str,
    level: str,
    codec: str,
    filter: str,
    block_size: int | None,
    threads: int | None,
    force: bool,
    pco: bool,
    var_rules: list[str],
    quantize: list[str],
    root: str | None = None,
    shard: str | None = None,
    manifest: str | None = None,
    delete_input: bool = False,
    files_from: str | None = None,
    storage_options: list[tuple[str, str]] | None = None,
) -> tuple[
    Path,
    Path,
    int,
    int,
    int,
    int,
    int,
    list[tuple[Path, str]],
    list[str],
    list[tuple[Path, str]],
]: ...
def unpack(
    src: str,
    dst: str,
    force: bool,
    threads: int | None,
    storage_options: list[tuple[str, str]] | None = None,
) -> int: ...
def verify(
    path: str,
    against: str | None,
    threads: int | None,
    storage_options: list[tuple[str, str]] | None = None,
) -> tuple[
    list[tuple[str, str | None, int | None, int, str, str]],
    int,
    bool,
    bool | None,
]: ...
def info_json(
    path: str, storage_options: list[tuple[str, str]] | None = None
) -> str: ...
def netcdf_register() -> int: ...
def collection_summary(
    manifests: list[str], storage_options: list[tuple[str, str]] | None = None
) -> tuple[
    int,
    int,
    int,
    int,
    int,
    int,
    int,
    int,
    int,
    float,
    list[tuple[Path, str]],
    list[tuple[Path, int]],
]: ...
def verify_collection(
    manifests: list[str],
    against: str | None = None,
    threads: int | None = None,
    shard: str | None = None,
    storage_options: list[tuple[str, str]] | None = None,
) -> tuple[int, list[tuple[Path, str]], list[tuple[Path, int]]]: ...
