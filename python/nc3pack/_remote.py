"""URLs and ``storage_options``: archives in object storage (``s3://``, ``http(s)://``).

``storage_options`` take the names fsspec/s3fs users pass (``key``, ``secret``, ``token``,
``anon``, ``endpoint_url``, ``region_name``, ``client_kwargs={"endpoint_url": ...,
"region_name": ...}``); they are set over the standard environment (``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION``, ``AWS_ENDPOINT_URL``, ...),
as s3fs does. An ``endpoint_url`` starting with ``http://`` allows plain HTTP (a local
server). Any other name is a ``ValueError``: nc3pack does not use fsspec, and an option it
would silently ignore (``requester_pays``, ``config_kwargs``, ...) is better refused.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

_SCHEMES = ("s3://", "http://", "https://", "file://")

#: Top-level names and the ``RemoteOptions.set`` name each maps to.
_NAMES = {
    "key": "key",
    "secret": "secret",
    "token": "token",
    "anon": "anon",
    "endpoint_url": "endpoint_url",
    "region_name": "region",
    "region": "region",
    "allow_http": "allow_http",
    "aws_access_key_id": "key",
    "aws_secret_access_key": "secret",
    "aws_session_token": "token",
}

#: The ``client_kwargs`` names (botocore client arguments) nc3pack understands.
_CLIENT_NAMES = {"endpoint_url": "endpoint_url", "region_name": "region"}

_BOOLS = {"anon", "allow_http"}


def is_url(path: str) -> bool:
    """Whether ``path`` is a URL nc3pack reads: ``s3://``, ``http(s)://`` or ``file://``."""
    low = path[:8].lower()
    return any(low.startswith(s) and len(path) > len(s) for s in _SCHEMES)


def _value(name: str, v: Any) -> str:
    if name in _BOOLS:
        if not isinstance(v, bool):
            raise ValueError(
                f"storage option {name!r} must be True or False, got {v!r}"
            )
        return "true" if v else "false"
    if not isinstance(v, str):
        raise ValueError(  # noqa: TRY004 (bad arguments are ValueErrors here)
            f"storage option {name!r} must be a string, got {v!r}"
        )
    return v


def storage_pairs(
    path: str, storage_options: Mapping[str, Any] | None
) -> list[tuple[str, str]] | None:
    """The ``(name, value)`` pairs the compiled module takes, from s3fs-style options.

    ``None`` when no options are given. Raises ``ValueError`` for an unknown name, a value
    of the wrong type, or options given for a local path.
    """
    if storage_options is None:
        return None
    if not isinstance(storage_options, Mapping):
        raise ValueError(  # noqa: TRY004 (bad arguments are ValueErrors here)
            f"storage_options must be a dict, got {type(storage_options).__name__}"
        )
    if not storage_options:
        return None
    if not is_url(path):
        raise ValueError(
            f"{path}: storage_options apply to URLs (s3://, http(s)://), not to a local path"
        )
    pairs: list[tuple[str, str]] = []
    for name, v in storage_options.items():
        if name == "client_kwargs":
            if not isinstance(v, Mapping):
                raise ValueError(
                    f"storage option 'client_kwargs' must be a dict, got {v!r}"
                )
            for cname, cv in v.items():
                if cname not in _CLIENT_NAMES:
                    known = ", ".join(sorted(_CLIENT_NAMES))
                    raise ValueError(
                        f"unknown client_kwargs option {cname!r} (known: {known})"
                    )
                if cv is not None:
                    pairs.append((_CLIENT_NAMES[cname], _value(cname, cv)))
            continue
        if name not in _NAMES:
            known = ", ".join(sorted([*_NAMES, "client_kwargs"]))
            raise ValueError(f"unknown storage option {name!r} (known: {known})")
        if v is None:  # as s3fs: an option given as None is not set
            continue
        pairs.append((_NAMES[name], _value(name, v)))
    endpoints = [v for n, v in pairs if n == "endpoint_url"]
    given = {n for n, _ in pairs}
    if (
        endpoints
        and endpoints[-1].lower().startswith("http://")
        and "allow_http" not in given
    ):
        pairs.append(("allow_http", "true"))
    return pairs


def fspath(path: Any) -> str:
    """``os.fspath`` of a path, or a URL string as given."""
    p = os.fspath(path)
    if isinstance(p, bytes):
        raise TypeError(f"path must be str or os.PathLike[str], got bytes {p!r}")
    return p
