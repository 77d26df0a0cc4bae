"""Packing and verifying a collection on a dask distributed cluster.

:func:`pack_collection` packs a collection as :func:`nc3pack.pack_collection` does, split
into N shares (``shard=(i, n)``), one dask task each, on the workers of a
``distributed.Client``; :func:`verify_collection` verifies it the same way. Each task is
a whole :func:`nc3pack.pack_collection` call, so everything it guarantees holds per
share: a worker that dies mid-share loses only the files not yet recorded (at most its
files in flight and a group of 256 packed files not yet renamed into place), and the
scheduler's rerun of its task (on any worker) resumes from that share's manifest. The archives and
manifests must be on a filesystem every worker sees, at the same path.

Needs ``distributed`` (imported here only: ``import nc3pack`` does not).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import distributed

import nc3pack

from ._dataset import PathLike

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["pack_collection", "verify_collection"]

#: Shares per worker thread when ``shards`` is not given: a worker that dies loses the
#: progress of one small share, not of a large part of the collection.
SHARES_PER_THREAD = 4


def _threads(client: Client) -> int:
    """The cluster's worker threads, all workers together (at least 1)."""
    workers = client.scheduler_info(n_workers=-1).get("workers", {})
    return max(1, sum(int(w.get("nthreads", 1)) for w in workers.values()))


def _shares(client: Client, shards: int | None) -> int:
    if shards is None:
        return SHARES_PER_THREAD * _threads(client)
    if isinstance(shards, bool) or int(shards) != shards or shards < 1:
        raise ValueError(f"shards must be a positive int, got {shards!r}")
    return int(shards)


def _pack_share(
    inputs: list[str], output_dir: str, i: int, n: int, options: dict[str, Any]
) -> nc3pack.CollectionResult:
    """One share, on a worker."""
    return nc3pack.pack_collection(inputs, output_dir, shard=(i, n), **options)


def _verify_share(
    manifests: list[str], i: int, n: int, options: dict[str, Any]
) -> nc3pack.VerifyCollectionResult:
    """One share, on a worker."""
    return nc3pack.verify_collection(manifests, shard=(i, n), **options)


def _paths(given: PathLike | Sequence[PathLike]) -> list[str]:
    if isinstance(given, (str, os.PathLike)):
        given = [given]
    return [os.fspath(p) for p in given]


def _run(client: Client, fn: Any, n: int, *args: Any, retries: int) -> list[Any]:
    """Submits ``fn(*args[:-1], i, n, args[-1])`` for every share i, one task each, waits
    for all of them, and returns their results in share order (raising the first error
    once every task is finished)."""
    *head, options = args
    token = os.urandom(4).hex()
    futures = [
        client.submit(
            fn,
            *head,
            i,
            n,
            options,
            pure=False,
            retries=retries,
            key=f"nc3pack{fn.__name__.removesuffix('_share')}-{i}-of-{n}-{token}",
        )
        for i in range(n)
    ]
    distributed.wait(futures)
    return list(client.gather(futures))


def pack_collection(
    client: Client,
    inputs: PathLike | Sequence[PathLike],
    output_dir: PathLike,
    *,
    shards: int | None = None,
    retries: int = 2,
    **options: Any,
) -> nc3pack.CollectionResult:
    """Packs the collection ``inputs`` into ``output_dir`` on ``client``'s cluster: share
    i of ``shards`` (``shard=(i, shards)``, for every i) is one task, which calls
    :func:`nc3pack.pack_collection` with ``options`` (its keyword arguments: ``root``,
    ``level``, ``files_from``, ...; ``threads`` defaults to 1, as each of a worker's
    threads runs a share of its own). Each share appends to its own manifest,
    ``output_dir/.nc3pack/manifest-I-of-N.jsonl``. ``shards`` defaults to
    :data:`SHARES_PER_THREAD` times the cluster's worker threads. Returns the shares'
    results merged into one: counts and bytes summed, failures concatenated (sorted by
    path), ``manifest`` the manifests' directory.

    A worker that dies mid-share (killed, out of memory) makes the scheduler run its task
    again on another worker (up to ``distributed.scheduler.allowed-failures`` times), which
    resumes from the share's manifest. A task that raises is retried ``retries`` times.
    Raises the first task's error once every task is finished (what the others packed is
    recorded: a second call finishes the rest), and ``ValueError`` for ``shard`` or
    ``manifest`` among ``options`` (each share has its own).
    """
    for own in ("shard", "manifest"):
        if own in options:
            raise ValueError(
                f"nc3pack.dask.pack_collection sets {own!r} for each share itself"
            )
    options.setdefault("threads", 1)
    if options.get("root") is not None:
        options["root"] = os.fspath(options["root"])
    if options.get("files_from") is not None:
        options["files_from"] = os.fspath(options["files_from"])
    n = _shares(client, shards)
    out = os.fspath(output_dir)
    results = _run(
        client, _pack_share, n, _paths(inputs), out, options, retries=retries
    )
    unreadable: list[str] = []
    for r in results:
        # Every share finds the same unreadable paths.
        unreadable.extend(u for u in r.unreadable if u not in unreadable)
    return nc3pack.CollectionResult(
        output_dir=results[0].output_dir if results else out,
        manifest=os.path.join(results[0].output_dir if results else out, ".nc3pack"),
        files=sum(r.files for r in results),
        packed=sum(r.packed for r in results),
        skipped=sum(r.skipped for r in results),
        input_bytes=sum(r.input_bytes for r in results),
        output_bytes=sum(r.output_bytes for r in results),
        failures=sorted(
            (f for r in results for f in r.failures), key=lambda f: f.input
        ),
        unreadable=unreadable,
        kept=[k for r in results for k in r.kept],
    )


def verify_collection(
    client: Client,
    manifests: PathLike | Sequence[PathLike],
    *,
    shards: int | None = None,
    against: PathLike | None = None,
    threads: int = 1,
    retries: int = 2,
    storage_options: dict[str, Any] | None = None,
) -> nc3pack.VerifyCollectionResult:
    """Verifies every archive the manifests list on ``client``'s cluster, as
    :func:`nc3pack.verify_collection` does: share i of ``shards`` (default
    :data:`SHARES_PER_THREAD` times the cluster's worker threads) is one task verifying
    ``threads`` archives at once. Returns the shares' results merged: ``checked`` summed,
    failures concatenated (sorted by path), bad lines (share 0's). A
    worker that dies mid-share makes the scheduler run its task again; raises the first
    task's error once every task is finished.
    """
    options: dict[str, Any] = {"threads": threads}
    if against is not None:
        options["against"] = os.fspath(against)
    if storage_options is not None:
        options["storage_options"] = storage_options
    n = _shares(client, shards)
    results = _run(
        client, _verify_share, n, _paths(manifests), options, retries=retries
    )
    return nc3pack.VerifyCollectionResult(
        checked=sum(r.checked for r in results),
        failures=sorted(f for r in results for f in r.failures),
        bad_lines=[b for r in results for b in r.bad_lines],
    )
