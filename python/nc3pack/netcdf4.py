"""Reading archives through netCDF-C: netCDF4-python and xarray's ``engine="netcdf4"``.

:func:`register` registers nc3pack's netCDF-C plugin (built into this package) with the
netCDF-C library that netCDF4-python loaded, so that ``netCDF4.Dataset("a.nc3z")`` and
``xr.open_dataset("a.nc3z", engine="netcdf4")`` read an archive as its original file:

>>> import nc3pack.netcdf4
>>> nc3pack.netcdf4.register()                              # doctest: +SKIP
>>> import netCDF4
>>> netCDF4.Dataset("sst.nc3z")["sst"][0, :2, :2]          # doctest: +SKIP

The archive is read-only; netCDF-C 4.9 or newer is needed (docs/netcdf-plugin.md).

Without importing nc3pack: ``python -m nc3pack.netcdf4 --rc`` prints the two RC-file lines
that make netCDF4-python's netCDF-C 4.10 load the plugin built into this package at
``import netCDF4`` (in Python processes only: the library it names is this package's
extension module).
"""

from __future__ import annotations

import re
import sys

from . import _nc3pack

__all__ = ["MIN_NETCDF_C", "rc_lines", "register"]

#: The oldest netCDF-C the plugin works with (its dispatch table, version 5).
MIN_NETCDF_C = (4, 9)


def register() -> int:
    """Register archives with netCDF4-python's netCDF-C; returns how many netCDF-C libraries
    in this process accepted (1, or more when several copies are loaded).

    Imports netCDF4 first (so its netCDF-C is loaded). Calling it again is harmless.

    Raises ImportError when netCDF4-python is not installed, RuntimeError when its netCDF-C
    is older than 4.9 (unpack the archive with ``nc3pack unpack`` then) or refuses the
    plugin.
    """
    try:
        import netCDF4
    except ImportError as e:
        raise ImportError(
            "nc3pack.netcdf4.register() needs netCDF4-python (pip install netCDF4)"
        ) from e
    version = str(getattr(netCDF4, "__netcdf4libversion__", ""))
    m = re.match(r"(\d+)\.(\d+)", version)
    if m is None or (int(m.group(1)), int(m.group(2))) < MIN_NETCDF_C:
        raise RuntimeError(
            f"netCDF4-python's netCDF-C {version or '(unknown version)'} is too old for the "
            "nc3pack plugin: it needs netCDF-C 4.9 or newer (or run `nc3pack unpack` on the "
            "archive first)"
        )
    return _nc3pack.netcdf_register()


def rc_lines() -> str:
    """The RC-file lines (``NETCDF.UDF0.LIBRARY`` and ``NETCDF.UDF0.INIT``) that make a
    netCDF-C 4.10 or newer loaded in a Python process (netCDF4-python's wheels) read archives,
    through the plugin built into this package's extension module. Put them in ``~/.ncrc``,
    ``./.ncrc`` or a file named by ``NCRCENV_RC``; netCDF4-python reads it at ``import
    netCDF4``. Programs that are not Python cannot load this library: for them, install the
    plugin library with nc3pack's ``scripts/install.sh`` (docs/netcdf-plugin.md).
    """
    lib = _nc3pack.__file__
    return f"NETCDF.UDF0.LIBRARY={lib}\nNETCDF.UDF0.INIT=nc3pack_netcdf_init\n"


def _main(argv: list[str]) -> int:
    if argv not in ([], ["--rc"]):
        print("usage: python -m nc3pack.netcdf4 [--rc]", file=sys.stderr)
        return 2
    if argv == ["--rc"]:
        sys.stdout.write(rc_lines())
        return 0
    sys.stdout.write(
        "# netCDF4-python reads archives after nc3pack.netcdf4.register(), or, without\n"
        "# importing nc3pack, with these lines in ~/.ncrc, ./.ncrc or the file NCRCENV_RC\n"
        "# names (netCDF-C 4.10+, Python processes only; `--rc` prints just the lines):\n"
        + rc_lines()
    )
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
