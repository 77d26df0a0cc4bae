"""Reading: :func:`open` gives a :class:`Dataset` of an archive or an original netCDF-3 file."""

from __future__ import annotations

import operator
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from . import _nc3pack
from ._remote import storage_pairs

PathLike = Union[str, "os.PathLike[str]"]

#: numpy dtype of each netCDF type, as netCDF4-python gives them (native byte order).
DTYPES: Mapping[str, np.dtype[Any]] = {
    "byte": np.dtype("i1"),
    "char": np.dtype("S1"),
    "short": np.dtype("i2"),
    "int": np.dtype("i4"),
    "float": np.dtype("f4"),
    "double": np.dtype("f8"),
    "ubyte": np.dtype("u1"),
    "ushort": np.dtype("u2"),
    "uint": np.dtype("u4"),
    "int64": np.dtype("i8"),
    "uint64": np.dtype("u8"),
}


def _attr_value(name: str, raw: Any) -> Any:
    """An attribute value as netCDF4-python's ``getncattr`` returns it.

    ``char`` values become ``str`` (UTF-8, NUL bytes removed), except ``_FillValue``, which
    stays ``bytes``; one number becomes a numpy scalar, several a 1-D numpy array.
    """
    if isinstance(raw, bytes):
        if name == "_FillValue":
            return raw
        return raw.decode("utf-8", "replace").replace("\x00", "")
    if raw.shape == (1,):
        return raw[0]
    return raw


def _attrs(pairs: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """The attributes by name; of two with one name (a hostile file), the first, as
    netCDF-C answers."""
    out: dict[str, Any] = {}
    for name, raw in pairs:
        if name not in out:
            out[name] = _attr_value(name, raw)
    return out


@dataclass(frozen=True)
class Dimension:
    """A dimension; the record (unlimited) dimension has its number of records."""

    name: str
    size: int
    unlimited: bool

    def __len__(self) -> int:
        return self.size

    def isunlimited(self) -> bool:
        """Whether this is the record dimension (as netCDF4-python's method)."""
        return self.unlimited


def _as_counts(name: str, xs: Sequence[int] | None) -> list[int] | None:
    if xs is None:
        return None
    try:
        out = [operator.index(x) for x in xs]
    except TypeError:
        raise ValueError(f"{name} must be a sequence of integers, got {xs!r}") from None
    if any(x < 0 for x in out):
        raise ValueError(f"{name} must not be negative, got {out}")
    return out


class Variable:
    """A variable of a :class:`Dataset`: metadata, and numpy-style reads.

    ``var[0, 10:20, ::2]`` reads only what the selection needs. Integers, slices (any
    step), ``...`` and integer or boolean arrays index as numpy does; an integer index
    drops its dimension, and the result is always a numpy array (0-d for a single value).
    """

    def __init__(
        self,
        dataset: Dataset,
        name: str,
        nc_type: str,
        dims: Sequence[str],
        shape: Sequence[int],
        attrs: Sequence[tuple[str, Any]],
    ) -> None:
        self._dataset = dataset
        self.name: str = name
        #: netCDF type name: "byte", "char", "short", ..., "uint64".
        self.nc_type: str = nc_type
        self.dtype: np.dtype[Any] = DTYPES[nc_type]
        self.dims: tuple[str, ...] = tuple(dims)
        self.shape: tuple[int, ...] = tuple(int(n) for n in shape)
        self.attrs: dict[str, Any] = _attrs(attrs)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a scalar variable")
        return self.shape[0]

    def __repr__(self) -> str:
        dims = ", ".join(f"{d}={n}" for d, n in zip(self.dims, self.shape))
        return f"<nc3pack.Variable {self.name!r} {self.nc_type} ({dims})>"

    def read(
        self,
        start: Sequence[int] | None = None,
        count: Sequence[int] | None = None,
        stride: Sequence[int] | None = None,
    ) -> np.ndarray:
        """Reads a hyperslab, as :meth:`Dataset.read`."""
        return self._dataset.read(self.name, start, count, stride)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        a = self.read()
        return a if dtype is None else a.astype(dtype, copy=False)

    @property
    def values(self) -> np.ndarray:
        """The whole variable."""
        return self.read()

    def __getitem__(self, key: Any) -> np.ndarray:
        start, count, stride, post = _plan(key, self.shape)
        if 0 in count:
            box = np.empty(count, dtype=self.dtype)
        else:
            box = self.read(start, count, stride)
        if all(isinstance(p, slice) and p == slice(None) for p in post):
            return box
        return np.asarray(box[tuple(post)])


def _plan(
    key: Any, shape: tuple[int, ...]
) -> tuple[list[int], list[int], list[int], list[Any]]:
    """Splits a numpy-style key into one hyperslab read (start, count, stride: the bounding
    box of the selection, positive steps only) and the key that picks the selection out of
    that box (0 for an integer, a reversal for a negative step, shifted arrays)."""
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is None for k in key):
        raise IndexError("np.newaxis (None) is not supported when reading a variable")
    n_ellipsis = sum(1 for k in key if k is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_ellipsis:
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        fill = (slice(None),) * (len(shape) - (len(key) - 1))
        key = key[:i] + fill + key[i + 1 :]
    if len(key) > len(shape):
        raise IndexError(
            f"too many indices: the variable is {len(shape)}-dimensional, "
            f"but {len(key)} were indexed"
        )
    key = key + (slice(None),) * (len(shape) - len(key))
    start: list[int] = []
    count: list[int] = []
    stride: list[int] = []
    post: list[Any] = []
    for axis, (k, n) in enumerate(zip(key, shape)):
        if isinstance(k, slice):
            b, e, step = k.indices(n)
            r = range(b, e, step)
            if len(r) == 0:
                start.append(0)
                count.append(0)
                stride.append(1)
                post.append(slice(None))
            elif step > 0:
                start.append(r[0])
                count.append(len(r))
                stride.append(step)
                post.append(slice(None))
            else:
                start.append(r[-1])
                count.append(len(r))
                stride.append(-step)
                post.append(slice(None, None, -1))
            continue
        if isinstance(k, (bool, np.bool_)):
            raise IndexError(
                f"axis {axis}: a boolean scalar is not a valid index for a variable"
            )
        if isinstance(k, (int, np.integer)):
            i = int(k)
            j = i + n if i < 0 else i
            if not 0 <= j < n:
                raise IndexError(
                    f"index {i} is out of bounds for axis {axis} with size {n}"
                )
            start.append(j)
            count.append(1)
            stride.append(1)
            post.append(0)
            continue
        a = np.asarray(k)
        if a.dtype == np.bool_:
            if a.shape != (n,):
                raise IndexError(
                    f"axis {axis}: a boolean index must be 1-D of length {n}, "
                    f"got shape {a.shape}"
                )
            a = np.flatnonzero(a)
        elif a.dtype.kind not in "iu" and not (a.size == 0 and a.dtype.kind == "f"):
            raise IndexError(
                "only integers, slices, '...' and integer or boolean arrays are valid "
                f"indices (axis {axis}: got {k!r})"
            )
        a = a.astype(np.int64)
        if a.size and (a.min() < -n or a.max() >= n):
            bad = a[(a < -n) | (a >= n)][0]
            raise IndexError(
                f"index {bad} is out of bounds for axis {axis} with size {n}"
            )
        a = np.where(a < 0, a + n, a)
        if a.size == 0:
            start.append(0)
            count.append(0)
            stride.append(1)
            post.append(a)
            continue
        lo, hi = int(a.min()), int(a.max())
        start.append(lo)
        count.append(hi - lo + 1)
        stride.append(1)
        post.append(a - lo)
    return start, count, stride, post


class Dataset:
    """An nc3pack archive or an original netCDF-3 file, open for reading.

    Thread-safe: many threads may read at once (reads release the GIL). Pickles as its
    path and storage options: unpickling opens the file again. The pickle holds the
    storage options' credentials (``secret`` included) in clear: keep it as private as
    they are.

    After ``os.fork`` (``multiprocessing``'s ``fork`` start method), the child may read a
    dataset opened in the parent, or open one itself: reads by URL make their own
    connections in the child.

    >>> ds = nc3pack.open("sst.nc3z")                  # doctest: +SKIP
    >>> ds["sst"][0, 10:20, ::2]                        # doctest: +SKIP
    """

    def __init__(
        self,
        path: PathLike,
        *,
        cache_budget: int | None = None,
        cache_whole_blocks: bool = True,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        self._path = os.fspath(path)
        self._storage_options = (
            None if storage_options is None else dict(storage_options)
        )
        pairs = storage_pairs(self._path, storage_options)
        self._reader: _nc3pack.Reader | None = _nc3pack.Reader(self._path, pairs)
        if cache_budget is not None:
            self.set_cache_budget(cache_budget)
        if not cache_whole_blocks:
            self.set_cache_whole_blocks(False)
        r = self._reader
        #: Dimensions in header order.
        self.dimensions: dict[str, Dimension] = {
            name: Dimension(name, int(n), bool(u)) for name, n, u in r.dimensions()
        }
        #: Variables in header order.
        self.variables: dict[str, Variable] = {
            v[0]: Variable(self, *v) for v in r.variables()
        }
        #: Global attributes.
        self.attrs: dict[str, Any] = _attrs(r.global_attributes())
        #: "CDF-1", "CDF-2" or "CDF-5".
        self.format: str = r.variant
        #: Whether the file is an nc3pack archive (rather than an original netCDF-3 file).
        self.is_archive: bool = r.is_archive

    @property
    def path(self) -> str:
        return self._path

    def _r(self) -> _nc3pack.Reader:
        r = self._reader
        if r is None:
            raise ValueError(
                f"{_nc3pack.redact_url(self._path)}: the dataset is closed"
            )
        return r

    def __repr__(self) -> str:
        kind = "archive" if self.is_archive else self.format
        return (
            f"<nc3pack.Dataset {_nc3pack.redact_url(self._path)!r} ({kind}): "
            f"{len(self.dimensions)} dimensions, {len(self.variables)} variables>"
        )

    def __getitem__(self, name: str) -> Variable:
        return self.variables[name]

    def __contains__(self, name: object) -> bool:
        return name in self.variables

    def __iter__(self) -> Iterator[str]:
        return iter(self.variables)

    def __len__(self) -> int:
        return len(self.variables)

    @property
    def unlimited_dims(self) -> set[str]:
        """Names of the record (unlimited) dimension, if any."""
        return {d.name for d in self.dimensions.values() if d.unlimited}

    def read(
        self,
        name: str,
        start: Sequence[int] | None = None,
        count: Sequence[int] | None = None,
        stride: Sequence[int] | None = None,
    ) -> np.ndarray:
        """Reads a hyperslab of variable ``name`` as netCDF's ``nc_get_vars`` does.

        ``start`` defaults to 0, ``stride`` to 1 and ``count`` to all that fits, per
        dimension. Returns a numpy array shaped ``count`` in native byte order (a 0-d array
        for a scalar variable; ``char`` as ``S1``).

        Raises ``KeyError`` for an unknown variable, ``ValueError`` for a hyperslab outside
        the variable, ``OSError`` for I/O errors and :class:`ArchiveError` for damage.
        """
        var = self.variables[name]
        a = self._r().read(
            name,
            _as_counts("start", start),
            _as_counts("count", count),
            _as_counts("stride", stride),
        )
        if var.dtype.kind == "S":
            a = a.view("S1")
        return a

    def cache_stats(self) -> dict[str, int]:
        """The block cache's counters: hits, misses, evictions, bytes, entries, budget.

        A miss is a block decoded. All zero for an original netCDF-3 file."""
        return dict(self._r().cache_stats())

    def set_cache_budget(self, nbytes: int) -> None:
        """Sets the block cache's budget in decoded bytes (0 disables caching)."""
        n = operator.index(nbytes)
        if n < 0:
            raise ValueError(f"cache budget must not be negative, got {n}")
        self._r().set_cache_budget(n)

    def set_cache_whole_blocks(self, on: bool) -> None:
        """Sets whether a read that spans several blocks of a variable also caches the blocks
        it covers whole (on by default). Such a read decodes those blocks straight into the
        array it returns; caching them too costs a copy of each, which only pays if the same
        blocks are read again. The partial blocks at the read's ends are cached either way."""
        self._r().set_cache_whole_blocks(bool(on))

    @property
    def cache_whole_blocks(self) -> bool:
        """Whether a read that spans several blocks also caches the blocks it covers whole
        (False for an original netCDF-3 file, which has no cache)."""
        return self._r().cache_whole_blocks

    def request_stats(self) -> dict[str, int] | None:
        """For an object read by an ``s3://`` or ``http(s)://`` URL: the GET requests sent
        so far (opening included; retries not counted again) and the bytes received, as
        ``{"requests": n, "bytes": n}``. ``None`` for a local file."""
        s = self._r().request_stats()
        return None if s is None else {"requests": s[0], "bytes": s[1]}

    def clear_cache(self) -> None:
        """Empties the block cache and zeroes its counters."""
        self._r().clear_cache()

    def block_layout(self, name: str) -> tuple[int, int, bool] | None:
        """How variable ``name`` is cut into blocks in an archive: (decoded bytes per block,
        number of blocks, whether it lives in a block shared with other small variables).
        ``None`` for an original netCDF-3 file."""
        if name not in self.variables:
            raise KeyError(name)
        return self._r().block_layout(name)

    def close(self) -> None:
        """Closes the file (reads then raise ``ValueError``)."""
        self._reader = None

    def __enter__(self) -> Dataset:  # noqa: PYI034 (no typing_extensions dependency)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # The copy (dask pickles datasets to its workers) opens the file again with the
        # same storage options (credentials in clear) and cache settings; its cache starts
        # empty.
        budget, whole = None, True
        r = self._reader
        if r is not None and r.is_archive:
            budget, whole = int(r.cache_stats()["budget"]), bool(r.cache_whole_blocks)
        return (_reopen, (self._path, self._storage_options, budget, whole))


def _reopen(
    path: str,
    storage_options: dict[str, Any] | None,
    cache_budget: int | None = None,
    cache_whole_blocks: bool = True,
) -> Dataset:
    return Dataset(
        path,
        storage_options=storage_options,
        cache_budget=cache_budget,
        cache_whole_blocks=cache_whole_blocks,
    )


def open(
    path: PathLike,
    *,
    cache_budget: int | None = None,
    cache_whole_blocks: bool = True,
    storage_options: Mapping[str, Any] | None = None,
) -> Dataset:
    """Opens an nc3pack archive or an original netCDF-3 file (told apart by content).

    ``path`` may be a URL: ``s3://BUCKET/KEY``, ``http(s)://...`` (read by range requests:
    opening costs two concurrent requests, a read the blocks it needs, coalesced) or
    ``file://...``. ``storage_options`` take the names s3fs users pass (``key``,
    ``secret``, ``token``, ``anon``, ``endpoint_url``, ``region_name``,
    ``client_kwargs={"endpoint_url": ..., "region_name": ...}``), set over the standard
    ``AWS_*`` environment; an unknown name is a ``ValueError``. A missing object raises
    ``FileNotFoundError``, refused or missing credentials ``PermissionError``, a failed
    request ``OSError``.

    ``cache_budget`` sets the decoded-block cache's budget in bytes (default 64 MiB);
    ``cache_whole_blocks=False`` keeps a read that spans several blocks from caching the
    blocks it covers whole (see :meth:`Dataset.set_cache_whole_blocks`).
    Raises ``OSError`` if the file cannot be read and :class:`ArchiveError` if it is neither
    a valid archive nor a valid netCDF-3 file.
    """
    return Dataset(
        path,
        cache_budget=cache_budget,
        cache_whole_blocks=cache_whole_blocks,
        storage_options=storage_options,
    )
