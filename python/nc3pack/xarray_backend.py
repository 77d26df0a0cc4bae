"""xarray backend for nc3pack archives: engine ``"nc3z"``.

Registered through the ``xarray.backends`` entry point, so ``xr.open_dataset("f.nc3z")``
recognizes archives by their magic bytes (or the ``.nc3z`` suffix). Original netCDF-3 files
open too with ``engine="nc3z"``.

- Lazy: opening reads the header only; indexing reads only the blocks that hold the
  selection (a :class:`~xarray.backends.BackendArray` indexed through
  ``explicit_indexing_adapter`` with ``IndexingSupport.BASIC``).
- CF decoding is xarray's own (``xarray.conventions.decode_cf_variables``, through
  ``StoreBackendEntrypoint`` as the ``netcdf4`` engine), on variables and attributes shaped
  exactly as the ``netcdf4`` engine presents them, so the result is identical to opening
  the original file with ``engine="netcdf4"``.
- ``encoding["preferred_chunks"]`` gives dask chunks made of whole blocks where the
  variable's shape allows it (see :func:`block_chunks`).
- Pickles for dask distributed: the store holds the path and options in xarray's
  ``CachingFileManager`` and each process opens the file itself (the pickle holds the
  storage options' credentials in clear).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np
import xarray as xr
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.backends.common import AbstractDataStore
from xarray.backends.file_manager import CachingFileManager
from xarray.backends.store import StoreBackendEntrypoint
from xarray.core import indexing
from xarray.core.utils import FrozenDict, close_on_error

from . import MAGIC
from ._dataset import Dataset
from ._remote import is_url, storage_pairs

#: Aim of the fallback chunks, in blocks, when no chunking of whole blocks exists.
FALLBACK_BLOCKS = 16


def block_chunks(
    shape: tuple[int, ...], itemsize: int, block_bytes: int, shared: bool
) -> tuple[int, ...]:
    """Dask chunks for a variable stored in blocks of ``block_bytes`` decoded bytes.

    Blocks are consecutive pieces of the variable's row-major data. A chunk shaped
    ``(1, ..., 1, c, n_{k+1}, ..., n_last)`` covers whole blocks when its byte length is a
    multiple of the block size and so is the length of the rows it tiles; the smallest such
    ``c`` along the outermost dimension that allows one is chosen, so no two chunks share a
    block. A variable of one block (or a small one sharing a block with others) is one
    chunk. When the shape allows no such chunks (e.g. rows of 4,000,000 bytes in blocks of
    1 MiB), the chunks hold about ``FALLBACK_BLOCKS`` blocks along the outermost dimension,
    so at most one block in ``FALLBACK_BLOCKS`` is decoded by two tasks.
    """
    shape = tuple(int(n) for n in shape)
    total = itemsize * math.prod(shape)
    if shared or not shape or total <= block_bytes or 0 in shape:
        return shape
    inner = [itemsize * math.prod(shape[k + 1 :]) for k in range(len(shape))]
    for k in range(len(shape)):
        if k > 0 and inner[k - 1] % block_bytes:
            break
        c = block_bytes // math.gcd(block_bytes, inner[k])
        if c < shape[k]:
            return (1,) * k + (c,) + shape[k + 1 :]
    target = FALLBACK_BLOCKS * block_bytes
    if total <= target:
        return shape
    k = next(k for k in range(len(shape)) if inner[k] <= target)
    c = max(1, target // inner[k])
    return (1,) * k + (min(c, shape[k]),) + shape[k + 1 :]


def _open(
    path: str,
    cache_budget: int | None = None,
    mode: Any = None,
    cache_whole_blocks: bool = False,
    storage_options: tuple[tuple[str, Any], ...] | None = None,
) -> Dataset:
    # `mode`: a CachingFileManager unpickled in another process may pass its (omitted)
    # mode; archives are read-only.
    return Dataset(
        path,
        cache_budget=cache_budget,
        cache_whole_blocks=cache_whole_blocks,
        storage_options=None if storage_options is None else _thaw(storage_options),
    )


def _freeze(options: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """storage_options as nested tuples: CachingFileManager hashes its arguments."""
    return tuple(
        (k, ("__dict__", _freeze(v)) if isinstance(v, Mapping) else v)
        for k, v in options.items()
    )


def _thaw(frozen: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    return {
        k: _thaw(v[1]) if isinstance(v, tuple) and v[:1] == ("__dict__",) else v
        for k, v in frozen
    }


class Nc3zBackendArray(BackendArray):
    """One variable, read lazily: xarray hands ``__getitem__`` explicit indexers, which
    ``explicit_indexing_adapter`` reduces to integers and positive-step slices (one
    hyperslab read); whatever else the indexer asks for is applied to that result."""

    def __init__(
        self, store: Nc3zDataStore, name: str, shape: tuple[int, ...], dtype: np.dtype
    ) -> None:
        self.store = store
        self.name = name
        self.shape = shape
        self.dtype = dtype

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        out: np.ndarray = indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.BASIC, self._raw_getitem
        )
        return out

    def _raw_getitem(self, key: tuple[Any, ...]) -> np.ndarray:
        with self.store.acquire_context() as ds:
            return ds.variables[self.name][key]


class Nc3zDataStore(AbstractDataStore):
    """The variables, attributes and dimensions of an archive (or netCDF-3 file), as the
    ``netcdf4`` engine's store presents them."""

    def __init__(self, manager: CachingFileManager[Dataset]) -> None:
        self._manager = manager
        self._filename: str = self.ds.path

    @classmethod
    def open(
        cls,
        filename: str | os.PathLike[str],
        cache_budget: int | None = None,
        cache_whole_blocks: bool = False,
        storage_options: Mapping[str, Any] | None = None,
    ) -> Nc3zDataStore:
        path = os.fspath(filename)
        # Checked here, so that bad options fail at open_dataset, not at a later read.
        storage_pairs(path, storage_options)
        kwargs = {
            "cache_budget": cache_budget,
            "cache_whole_blocks": cache_whole_blocks,
            "storage_options": None
            if storage_options is None
            else _freeze(storage_options),
        }
        manager = CachingFileManager(_open, path, kwargs=kwargs)
        return cls(manager)

    def acquire(self, needs_lock: bool = True) -> Dataset:
        ds: Dataset = self._manager.acquire(needs_lock)
        return ds

    @contextmanager
    def acquire_context(self, needs_lock: bool = True) -> Iterator[Dataset]:
        """The open dataset, kept open until the context exits."""
        with self._manager.acquire_context(needs_lock) as ds:
            yield ds

    @property
    def ds(self) -> Dataset:
        return self.acquire()

    def open_store_variable(self, name: str) -> xr.Variable:
        ds = self.ds
        var = ds.variables[name]
        data = indexing.LazilyIndexedArray(
            Nc3zBackendArray(self, name, var.shape, var.dtype)
        )
        attrs = dict(var.attrs)
        encoding: dict[str, Any] = {"dtype": var.dtype}
        # As xarray's netCDF4 backend: a char variable's _FillValue is a numpy bytes scalar.
        if var.dtype.kind == "S" and "_FillValue" in attrs:
            attrs["_FillValue"] = np.bytes_(attrs["_FillValue"])
        if "least_significant_digit" in attrs:
            encoding["least_significant_digit"] = attrs.pop("least_significant_digit")
        layout = ds.block_layout(name)
        if layout is not None and var.shape:
            block_bytes, _, shared = layout
            chunks = block_chunks(var.shape, var.dtype.itemsize, block_bytes, shared)
            encoding["preferred_chunks"] = dict(zip(var.dims, chunks))
        encoding["source"] = self._filename
        encoding["original_shape"] = var.shape
        return xr.Variable(var.dims, data, attrs, encoding)

    def get_variables(self) -> Mapping[str, xr.Variable]:
        return FrozenDict((k, self.open_store_variable(k)) for k in self.ds.variables)

    def get_attrs(self) -> Mapping[str, Any]:
        return FrozenDict(self.ds.attrs)

    def get_dimensions(self) -> Mapping[str, int]:
        return FrozenDict((k, d.size) for k, d in self.ds.dimensions.items())

    def get_encoding(self) -> dict[str, Any]:
        return {"unlimited_dims": self.ds.unlimited_dims}

    def close(self, **kwargs: Any) -> None:
        self._manager.close(**kwargs)


def _is_archive(path: str | os.PathLike[str]) -> bool:
    if isinstance(path, str) and is_url(path):
        return False  # not worth a request: a URL is recognized by its suffix
    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except (OSError, TypeError, ValueError):
        return False


class Nc3zBackendEntrypoint(BackendEntrypoint):
    """``xr.open_dataset(path, engine="nc3z")``: nc3pack archives (and netCDF-3 files).

    Takes xarray's usual decoding options, ``cache_budget``: the decoded-block cache's
    budget in bytes per open archive (default 64 MiB), and ``cache_whole_blocks``: whether
    a read that spans several blocks also caches the blocks it covers whole (default
    False: xarray keeps an array it loaded, with ``cache=True``, its default, and dask
    chunks of whole blocks are each read once, so such blocks are not read again; the
    partial blocks at a read's ends are cached, for the neighbouring reads that share them).

    URLs (``s3://``, ``http(s)://``, ``file://``) open too, with ``storage_options`` as
    s3fs takes them (``backend_kwargs={"storage_options": {...}}``, see
    :func:`nc3pack.open`); a URL is recognized by its ``.nc3z`` suffix.
    """

    description = "Open nc3pack archives (.nc3z) of netCDF-3 files, lazily"
    url = "https://github.com/nc3pack/nc3pack#python"
    open_dataset_parameters = (
        "filename_or_obj",
        "mask_and_scale",
        "decode_times",
        "concat_characters",
        "decode_coords",
        "drop_variables",
        "use_cftime",
        "decode_timedelta",
        "cache_budget",
        "cache_whole_blocks",
        "storage_options",
    )

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        if not isinstance(filename_or_obj, (str, os.PathLike)):
            return False
        path = os.fspath(filename_or_obj)
        if isinstance(path, bytes):
            return False
        return path.endswith(".nc3z") or _is_archive(path)

    def open_dataset(
        self,
        filename_or_obj: Any,
        *,
        mask_and_scale: Any = True,
        decode_times: Any = True,
        concat_characters: Any = True,
        decode_coords: Any = True,
        drop_variables: str | Iterable[str] | None = None,
        use_cftime: Any = None,
        decode_timedelta: Any = None,
        cache_budget: int | None = None,
        cache_whole_blocks: bool = False,
        storage_options: Mapping[str, Any] | None = None,
    ) -> xr.Dataset:
        if not isinstance(filename_or_obj, (str, os.PathLike)):
            raise TypeError(
                "the nc3z engine opens files by path; "
                f"got {type(filename_or_obj).__name__}"
            )
        store = Nc3zDataStore.open(
            filename_or_obj,
            cache_budget=cache_budget,
            cache_whole_blocks=cache_whole_blocks,
            storage_options=storage_options,
        )
        with close_on_error(store):
            return StoreBackendEntrypoint().open_dataset(
                store,
                mask_and_scale=mask_and_scale,
                decode_times=decode_times,
                concat_characters=concat_characters,
                decode_coords=decode_coords,
                drop_variables=drop_variables,
                use_cftime=use_cftime,
                decode_timedelta=decode_timedelta,
            )
