"""nc3pack: block-compressed, randomly readable, byte-exact archives of netCDF-3 files.

>>> import nc3pack
>>> nc3pack.pack("sst.nc", "sst.nc3z")                     # doctest: +SKIP
>>> ds = nc3pack.open("sst.nc3z")                           # doctest: +SKIP
>>> ds["sst"][0, 10:20, ::2]                                # doctest: +SKIP
>>> import xarray as xr
>>> xr.open_dataset("sst.nc3z")                             # doctest: +SKIP

The xarray backend (engine ``"nc3z"``) lives in :mod:`nc3pack.xarray_backend`.
"""

from __future__ import annotations

import json
import operator
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import _nc3pack
from ._dataset import DTYPES, Dataset, Dimension, PathLike, Variable, open
from ._nc3pack import ArchiveError
from ._original import OriginalFile, open_original
from ._remote import is_url, storage_pairs

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "DTYPES",
    "MAGIC",
    "ArchiveError",
    "CollectionFailure",
    "CollectionResult",
    "CollectionSummary",
    "Damage",
    "Dataset",
    "Dimension",
    "OriginalFile",
    "PackResult",
    "Variable",
    "VerifyCollectionResult",
    "VerifyResult",
    "collection_summary",
    "info",
    "open",
    "open_original",
    "pack",
    "pack_collection",
    "unpack",
    "verify",
    "verify_collection",
]

__version__ = "0.1.0"

#: Decoded bytes per block when packing, unless told otherwise (1 MiB).
DEFAULT_BLOCK_SIZE: int = _nc3pack.DEFAULT_BLOCK_SIZE

#: The first 8 bytes of every archive.
MAGIC: bytes = b"\x89NC3Z\r\n\x1a"

_SIZE = re.compile(r"^\s*(\d+)\s*([A-Za-z]*)\s*$")
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "kb": 1 << 10}
_UNITS.update({"m": 1 << 20, "mib": 1 << 20, "mb": 1 << 20})
_UNITS.update({"g": 1 << 30, "gib": 1 << 30, "gb": 1 << 30})


def _block_size(value: int | str) -> int:
    """A block size in bytes from an int or a string like "256KiB" (as the CLI's)."""
    if isinstance(value, str):
        m = _SIZE.match(value)
        unit = m.group(2).lower() if m else None
        if m is None or unit not in _UNITS:
            raise ValueError(
                f"block_size {value!r} is not a size like 65536, '64KiB' or '1MiB'"
            )
        n = int(m.group(1)) * _UNITS[unit]
    elif isinstance(value, bool):
        raise ValueError(  # noqa: TRY004 (bad arguments are ValueErrors here)
            f"block_size must be an int or a size string, got {value!r}"
        )
    else:
        try:
            n = operator.index(value)
        except TypeError:
            raise ValueError(
                f"block_size must be an int or a size string, got {value!r}"
            ) from None
    if not 0 < n < 1 << 32:
        raise ValueError(f"block size {n} is out of range")
    return n


def _threads(threads: int | None) -> int | None:
    if threads is None:
        return None
    n = operator.index(threads)
    if n < 1:
        raise ValueError(f"threads must be at least 1, got {n}")
    return n


@dataclass(frozen=True)
class PackResult:
    """What :func:`pack` produced."""

    src: str
    dst: str
    #: Bytes of the original file.
    input_bytes: int
    #: Bytes of the archive.
    output_bytes: int
    #: Blocks in the archive's index.
    blocks: int
    #: XXH3-128 of the original file, hex.
    hash: str

    @property
    def ratio(self) -> float:
        """Original size / archive size."""
        return self.input_bytes / max(self.output_bytes, 1)


def pack(
    src: PathLike,
    dst: PathLike,
    *,
    level: str | int = "fast",
    codec: str = "zstd",
    block_size: int | str | None = None,
    threads: int | None = None,
    force: bool = False,
    filter: str = "auto",
    pco: bool = True,
    variables: Mapping[str, Mapping[str, str | int] | str]
    | Sequence[str]
    | None = None,
    quantize: Mapping[str, str] | Sequence[str] | None = None,
) -> PackResult:
    """Packs the netCDF-3 file ``src`` into the archive ``dst`` (as ``nc3pack pack``).

    ``level``: "fast" (default), "max" or a codec level; ``codec``: "zstd", "deflate",
    "lzma" or "none"; ``block_size``: decoded bytes per block (int, or a string like "4MiB";
    default 1 MiB, and with ``level="max"`` 8 MiB for variables over 1 MiB, as the CLI);
    ``threads``: encoder threads (default: all cores); ``force``: overwrite ``dst``;
    ``filter``: "auto", "none", "shuffle", "bytedelta", "delta", "zzdelta" or "lorenzo"
    (the 2-D predictor on float variables of 2+ dimensions, zzdelta elsewhere); ``pco``:
    whether numeric blocks may use the Pcodec codec (``--no-pco`` when false).

    ``variables``: per-variable settings as ``--var`` takes them, a mapping from names or
    globs to settings (``{"temp,rh": {"block-size": "64KiB", "level": 19}}``; keys
    ``block-size``, ``codec``, ``level``, ``filter``) or a list of rules
    (``["temp:block-size=64KiB"]``); a later rule overrides an earlier one key by key.

    ``quantize`` (LOSSY, opt-in, as ``--quantize``): a mapping from names or globs to
    ``"bitround:NSB"`` or ``"granularbr:NSD"`` (``{"sst": "bitround:10"}``), or a list of
    rules (``["sst,t*=bitround:10"]``). The archive then unpacks to the quantized file.

    The archive is written to a temporary file and renamed into place when complete. The
    GIL is released while packing. Raises ``ValueError`` for bad options,
    ``FileExistsError`` if ``dst`` exists (without ``force``), ``OSError`` for I/O errors
    and :class:`ArchiveError` if ``src`` is not a valid netCDF-3 file.
    """
    if isinstance(level, bool) or not isinstance(level, (str, int)):
        raise ValueError(  # noqa: TRY004 (bad arguments are ValueErrors here)
            f"level must be 'fast', 'max' or an int, got {level!r}"
        )
    s, d = os.fspath(src), os.fspath(dst)
    r = _nc3pack.pack(
        s,
        d,
        str(level),
        codec,
        filter,
        None if block_size is None else _block_size(block_size),
        _threads(threads),
        bool(force),
        bool(pco),
        _rules(variables, ":", _settings),
        _rules(quantize, "=", str),
    )
    return PackResult(s, d, *r)


@dataclass(frozen=True)
class CollectionFailure:
    """One input of :func:`pack_collection` that failed."""

    #: The input's path.
    input: str
    #: Why, as ``nc3pack pack -o`` prints it.
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class CollectionResult:
    """What :func:`pack_collection` did."""

    #: The output directory.
    output_dir: str
    #: The manifest appended to.
    manifest: str
    #: Inputs looked at that are (or may be) netCDF files: packed, skipped and failed.
    files: int
    #: Inputs packed by this call.
    packed: int
    #: Inputs found packed already (recorded by a manifest), not packed again.
    skipped: int
    #: Bytes of the inputs packed by this call.
    input_bytes: int
    #: Bytes of their archives.
    output_bytes: int
    #: Inputs that failed, in name order.
    failures: list[CollectionFailure] = field(default_factory=list)
    #: Paths that could not be read while looking for inputs (one message each).
    unreadable: list[str] = field(default_factory=list)
    #: Inputs ``delete_input`` kept (symbolic links, pipes): (path, why).
    kept: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every input was packed (or found packed) and every path read."""
        return not self.failures and not self.unreadable

    @property
    def ratio(self) -> float | None:
        """Input bytes / archive bytes of the files packed by this call, if any was."""
        if self.packed == 0:
            return None
        return self.input_bytes / max(self.output_bytes, 1)


def pack_collection(
    inputs: PathLike | Sequence[PathLike],
    output_dir: PathLike,
    *,
    root: PathLike | None = None,
    shard: str | tuple[int, int] | None = None,
    manifest: PathLike | None = None,
    threads: int | None = None,
    delete_input: bool = False,
    force: bool = False,
    files_from: PathLike | None = None,
    level: str | int = "fast",
    codec: str = "zstd",
    block_size: int | str | None = None,
    filter: str = "auto",
    pco: bool = True,
    variables: Mapping[str, Mapping[str, str | int] | str]
    | Sequence[str]
    | None = None,
    quantize: Mapping[str, str] | Sequence[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> CollectionResult:
    """Packs many netCDF-3 files into ``output_dir`` as ``nc3pack pack IN... -o OUT`` does:
    ``inputs`` are files and directories (searched for netCDF files by their first bytes);
    each archive is ``output_dir/NAME.nc3z``, NAME the input's path relative to ``root``
    (default: the deepest directory holding every input). Files are packed in parallel
    (``threads`` at once, default all cores), and a line per file is appended to the
    manifest (default ``output_dir/.nc3pack/manifest-I-of-N.jsonl``): a second call skips
    what the first packed (``force=True`` packs everything again). ``shard``: ``"I/N"`` or
    ``(I, N)``, this call's share of the inputs. ``files_from``: a file listing more inputs,
    one a line. ``delete_input``: delete each original once its archive is written, synced,
    verified and recorded (symbolic links are kept). The packing options are
    :func:`pack`'s. ``output_dir`` may be an S3 prefix (``s3://BUCKET/PREFIX/``), written
    with ``storage_options`` (s3fs-style, as :func:`open`; default: the environment's).

    A file that fails does not stop the others: it is listed in the result's ``failures``.
    Raises ``ValueError`` for bad options (no inputs, a bad shard, an input outside
    ``root``), ``OSError`` when the output directory or the manifest cannot be written or
    a list read. The GIL is released while packing.
    """
    if isinstance(level, bool) or not isinstance(level, (str, int)):
        raise ValueError(  # noqa: TRY004 (bad arguments are ValueErrors here)
            f"level must be 'fast', 'max' or an int, got {level!r}"
        )
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    if isinstance(shard, tuple):
        shard = f"{shard[0]}/{shard[1]}"
    r = _nc3pack.pack_collection(
        [os.fspath(p) for p in inputs],
        os.fspath(output_dir),
        str(level),
        codec,
        filter,
        None if block_size is None else _block_size(block_size),
        _threads(threads),
        bool(force),
        bool(pco),
        _rules(variables, ":", _settings),
        _rules(quantize, "=", str),
        None if root is None else os.fspath(root),
        shard,
        None if manifest is None else os.fspath(manifest),
        bool(delete_input),
        None if files_from is None else os.fspath(files_from),
        storage_pairs(os.fspath(output_dir), storage_options),
    )
    out, man, files, packed, skipped, inb, outb, failures, unreadable, kept = r
    return CollectionResult(
        os.fspath(out),
        os.fspath(man),
        files,
        packed,
        skipped,
        inb,
        outb,
        [CollectionFailure(os.fspath(p), m) for p, m in failures],
        list(unreadable),
        [(os.fspath(p), why) for p, why in kept],
    )


def _settings(v: Mapping[str, str | int] | str) -> str:
    """``block-size=64KiB,level=19`` from a mapping of settings (a string as it is)."""
    if isinstance(v, Mapping):
        return ",".join(f"{k}={x}" for k, x in v.items())
    return str(v)


def _rules(
    given: Mapping[str, Any] | Sequence[str] | None,
    sep: str,
    value: Callable[[Any], str],
) -> list[str]:
    """Rules as the command line takes them, from a mapping (``VARS`` to what to do) or a
    list of rule strings."""
    if given is None:
        return []
    if isinstance(given, str):
        return [given]
    if isinstance(given, Mapping):
        return [f"{k}{sep}{value(v)}" for k, v in given.items()]
    return [str(r) for r in given]


def unpack(
    src: PathLike,
    dst: PathLike,
    *,
    force: bool = False,
    threads: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> int:
    """Restores the original netCDF-3 file from the archive ``src`` (a path or a URL, with
    ``storage_options`` as :func:`open`) into ``dst``, checked against the hash recorded at
    pack time before it is renamed into place. Returns the bytes written. Raises
    :class:`ArchiveError` if the archive is damaged."""
    s = os.fspath(src)
    return _nc3pack.unpack(
        s,
        os.fspath(dst),
        bool(force),
        _threads(threads),
        storage_pairs(s, storage_options),
    )


@dataclass(frozen=True)
class Damage:
    """One damaged part of an archive."""

    #: "lead", "netCDF header", "block", "data section", "index", "footer", "hash", ...
    part: str
    #: For a block: the variable (or "residual bytes").
    variable: str | None
    #: For a block: its number within the variable.
    block: int | None
    #: Byte offset in the archive.
    offset: int
    #: What is wrong.
    what: str
    #: One line, as ``nc3pack verify`` prints it.
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class VerifyResult:
    """What :func:`verify` found."""

    path: str
    #: Blocks checked.
    blocks: int
    #: Whether the restored data was decoded and matched the recorded hash.
    hash_checked: bool
    #: With ``against``: whether the original file matched.
    original_matches: bool | None
    damage: list[Damage] = field(default_factory=list)

    def __repr__(self) -> str:
        # A URL's password and query string hidden, as in errors.
        return (
            f"VerifyResult(path={_nc3pack.redact_url(self.path)!r}, blocks={self.blocks!r}, "
            f"hash_checked={self.hash_checked!r}, "
            f"original_matches={self.original_matches!r}, damage={self.damage!r})"
        )

    @property
    def intact(self) -> bool:
        return not self.damage and self.original_matches is not False


def verify(
    path: PathLike,
    *,
    against: PathLike | None = None,
    threads: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> VerifyResult:
    """Checks every checksum of an archive and the restored data's hash (and, with
    ``against``, that the original file matches). ``path`` may be a URL, with
    ``storage_options`` as :func:`open`.

    Returns a :class:`VerifyResult` when the archive is intact; raises
    :class:`ArchiveError` otherwise, with the damage list as its ``damage`` attribute (and
    the whole result as ``result``). ``OSError`` if the archive cannot be read at all.
    """
    p = os.fspath(path)
    damage, blocks, hash_checked, matches = _nc3pack.verify(
        p,
        None if against is None else os.fspath(against),
        _threads(threads),
        storage_pairs(p, storage_options),
    )
    result = VerifyResult(
        p, blocks, hash_checked, matches, [Damage(*d) for d in damage]
    )
    if not result.intact:
        lines = [str(d) for d in result.damage]
        if matches is False:
            lines.append(f"does not match {os.fspath(against)!s}")  # type: ignore[arg-type]
        err = ArchiveError(f"{_nc3pack.redact_url(p)}: damaged: " + "; ".join(lines))
        err.damage = result.damage  # type: ignore[attr-defined]
        err.result = result  # type: ignore[attr-defined]
        raise err
    return result


def info(
    path: PathLike, *, storage_options: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Describes a netCDF-3 file or an archive: the same dict as ``nc3pack info --json``.
    ``path`` may be a URL, with ``storage_options`` as :func:`open`."""
    p = os.fspath(path)
    result: dict[str, Any] = json.loads(
        _nc3pack.info_json(p, storage_pairs(p, storage_options))
    )
    return result


@dataclass(frozen=True)
class CollectionSummary:
    """What the manifests of a collection record (:func:`collection_summary`)."""

    #: Manifest files read.
    manifests: int
    #: Entry lines read (every run's).
    lines: int
    #: Inputs recorded, each once however many runs recorded it.
    files: int
    #: Inputs with an archive recorded.
    packed: int
    #: Bytes of those inputs (as recorded).
    input_bytes: int
    #: Bytes of their archives.
    output_bytes: int
    #: Archives whose records are in manifests not given (short ``skipped`` lines only):
    #: not in the sums.
    unknown_size: int
    #: Archives of quantized (lossy) files.
    lossy: int
    #: Originals deleted once their archives were proven (``delete_input``).
    deleted: int
    #: Seconds spent packing, summed over files (work, not wall time).
    seconds: float
    #: Inputs with no archive recorded whose lines record a failure: (input, error).
    failures: list[tuple[str, str]] = field(default_factory=list)
    #: Manifest lines that are not entries: (manifest, line number).
    bad_lines: list[tuple[str, int]] = field(default_factory=list)

    @property
    def ratio(self) -> float | None:
        """Input bytes / archive bytes of the archives whose sizes are recorded."""
        if self.output_bytes == 0:
            return None
        return self.input_bytes / self.output_bytes


def collection_summary(
    manifests: PathLike | Sequence[PathLike],
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> CollectionSummary:
    """Sums what a collection's manifests record, as ``nc3pack info --manifest`` does:
    files, bytes in and out, the ratio, the failures. ``manifests`` are manifest files,
    directories of them (``OUT/.nc3pack``; ``OUT`` stands for it) or URLs (an object, or
    a ``s3://BUCKET/PREFIX/.nc3pack/`` prefix, read with ``storage_options`` as
    :func:`open`). Only the manifests are read: :func:`verify` proves the archives.

    Raises ``OSError`` when a manifest cannot be read and ``ValueError`` when a directory
    or prefix holds no manifest.
    """
    if isinstance(manifests, (str, os.PathLike)):
        manifests = [manifests]
    paths = [os.fspath(m) for m in manifests]
    url = next((p for p in paths if is_url(p)), paths[0] if paths else "")
    r = _nc3pack.collection_summary(paths, storage_pairs(url, storage_options))
    files, packed, inb, outb, unknown, lossy, deleted = r[2:9]
    return CollectionSummary(
        r[0],
        r[1],
        files,
        packed,
        inb,
        outb,
        unknown,
        lossy,
        deleted,
        r[9],
        [(os.fspath(p), e) for p, e in r[10]],
        [(os.fspath(m), n) for m, n in r[11]],
    )


@dataclass(frozen=True)
class VerifyCollectionResult:
    """What :func:`verify_collection` found."""

    #: Archives checked (of the share asked for).
    checked: int
    #: Archives (or inputs never packed) that failed, in name order: (path, what is wrong,
    #: as ``nc3pack verify --manifest`` prints it).
    failures: list[tuple[str, str]] = field(default_factory=list)
    #: Manifest lines that are not entries: (manifest, line number); reported by share 0
    #: only.
    bad_lines: list[tuple[str, int]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every archive verified and every manifest line was read."""
        return not self.failures and not self.bad_lines


def verify_collection(
    manifests: PathLike | Sequence[PathLike],
    *,
    against: PathLike | None = None,
    threads: int | None = None,
    shard: str | tuple[int, int] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> VerifyCollectionResult:
    """Verifies every archive a collection's manifests list, as ``nc3pack verify
    --manifest`` does: each name's last entry, completely (every checksum and the restored
    data's hash), and that the archive records the manifest's size and hash; with
    ``against`` (the directory the names are relative to) also that ``against/NAME`` is
    still the original. ``manifests`` are manifest files, directories of them
    (``OUT/.nc3pack``) or URLs (read with ``storage_options`` as :func:`open`).
    ``threads``: archives verified at once (default all cores). ``shard``: ``"I/N"`` or
    ``(I, N)``, only that share of the names (those whose names hash to I, as
    :func:`pack_collection`'s shard shares them): N calls, one for each I, verify every
    archive once.

    What is wrong with an archive is listed in the result's ``failures``, not raised.
    Raises ``OSError`` when a manifest cannot be read and ``ValueError`` for a bad shard
    or when a directory or prefix holds no manifest (nothing is vouched for). The GIL is
    released while verifying.
    """
    if isinstance(manifests, (str, os.PathLike)):
        manifests = [manifests]
    paths = [os.fspath(m) for m in manifests]
    if isinstance(shard, tuple):
        shard = f"{shard[0]}/{shard[1]}"
    url = next((p for p in paths if is_url(p)), paths[0] if paths else "")
    checked, failures, bad_lines = _nc3pack.verify_collection(
        paths,
        None if against is None else os.fspath(against),
        _threads(threads),
        shard,
        storage_pairs(url, storage_options),
    )
    return VerifyCollectionResult(
        checked,
        [(os.fspath(p), m) for p, m in failures],
        [(os.fspath(m), n) for m, n in bad_lines],
    )
