"""An archive's original file as a Python binary file object (:func:`open_original`)."""

from __future__ import annotations

import io
import os
from typing import Any

from . import _nc3pack
from ._dataset import PathLike
from ._remote import storage_pairs


class OriginalFile(io.RawIOBase):
    """The original netCDF-3 file of an archive, read-only and seekable: each read rebuilds
    the bytes it asks for from the archive (the header as kept, variable data from the blocks
    that cover it, through the archive's block cache). Made by :func:`open_original`."""

    def __init__(self, original: _nc3pack.Original, name: str) -> None:
        super().__init__()
        self._original = original
        self._size = original.size
        self._pos = 0
        self._name = name

    @property
    def name(self) -> str:
        """The archive's path or URL."""
        return self._name

    @property
    def size(self) -> int:
        """The original file's size in bytes."""
        return self._size

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on closed file")

    def readable(self) -> bool:
        self._check_open()
        return True

    def seekable(self) -> bool:
        self._check_open()
        return True

    def writable(self) -> bool:
        self._check_open()
        return False

    def write(self, b: Any) -> int:
        """Not supported: an archive's original is read-only."""
        raise io.UnsupportedOperation("write: the original of an archive is read-only")

    def read(self, size: int | None = -1) -> bytes:
        """Up to ``size`` bytes (all that is left when ``size`` is negative or None)."""
        return super().read(-1 if size is None else size) or b""

    def readinto(self, buffer: Any) -> int:
        self._check_open()
        view = memoryview(buffer).cast("B")
        if len(view) == 0 or self._pos >= self._size:
            return 0
        data = self._original.pread(self._pos, len(view))
        view[: len(data)] = data
        self._pos += len(data)
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._check_open()
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self._size + offset
        else:
            raise ValueError(f"whence must be 0, 1 or 2, not {whence!r}")
        if pos < 0:
            raise OSError(22, f"negative seek position {pos}")
        if pos > 2**63 - 1:
            raise OSError(22, f"seek position {pos} past the largest file offset")
        self._pos = pos
        return pos

    def tell(self) -> int:
        self._check_open()
        return self._pos


def open_original(
    path: PathLike, *, storage_options: dict[str, Any] | None = None
) -> OriginalFile:
    """Opens the original file of the archive at ``path`` (a path, or an ``s3://``,
    ``http(s)://`` or ``file://`` URL) as a read-only binary file object (``io.RawIOBase``:
    ``read``, ``readinto``, ``seek``, ``tell``), for programs that read netCDF-3 bytes
    themselves:

    >>> import scipy.io, xarray as xr                                  # doctest: +SKIP
    >>> scipy.io.netcdf_file(nc3pack.open_original("sst.nc3z"))      # doctest: +SKIP
    >>> xr.open_dataset(nc3pack.open_original("sst.nc3z"), engine="scipy")  # doctest: +SKIP

    Nothing is unpacked to disk: a read decodes only the blocks that cover it. Wrap it in
    ``io.BufferedReader`` for many small reads.

    Raises ValueError when ``path`` is not an archive, ArchiveError when it is damaged (a read
    that touches a damaged block raises it too, naming the block), OSError when it cannot be
    read.
    """
    name = os.fspath(path)
    original = _nc3pack.Original(name, storage_pairs(name, storage_options))
    return OriginalFile(original, name)
