#!/usr/bin/env python3
"""Zarr v3 and HDF5 peers for bench/compare.sh: pack a netCDF-3 file's variables into one archive
file, read them back, or print a digest of every variable's values.

    python3 bench/peers.py pack TOOL IN.nc OUT        write OUT (one file) from IN.nc
    python3 bench/peers.py digest TOOL ARCHIVE OUT    read every variable back, write its digest
    python3 bench/peers.py digest nc IN.nc OUT        the same digest of the netCDF-3 original

TOOL is one of
  zarr-pcodec     Zarr v3 (zarr-python 3), `pcodec` array-to-bytes codec (numcodecs' PCodec,
                  level 8, pco's default) for 16/32/64-bit numbers; 1-byte variables (char,
                  byte) with the Blosc zstd 5 shuffle codec, which pcodec cannot take.
  zarr-blosc      Zarr v3, bytes codec + Blosc zstd level 5, byte shuffle.
  hdf5-blosc2     HDF5 (h5py) with the Blosc2 filter from hdf5plugin: zstd level 5, byte shuffle.

Chunks: about 1 MiB of values each, like nc3pack's blocks: whole trailing dimensions, the
leading dimension(s) cut so that a chunk holds at most 1 MiB (a row larger than 1 MiB is cut in
its next dimension, and so on). Zarr writes into a ZipStore (one uncompressed zip file, so that
the size is one file's); attributes are kept (as JSON); char variables are stored as uint8.
The digest is a BLAKE2b hash of every variable's (in name order) name, dtype, shape and raw values in C order
(fill values unmasked): equal digests mean the values came back bit for bit.

Needs: pip install numpy netCDF4 zarr numcodecs pcodec h5py hdf5plugin
"""

import hashlib
import json
import sys
import warnings

import numpy as np

CHUNK_BYTES = 1 << 20
TOOLS = ("zarr-pcodec", "zarr-blosc", "hdf5-blosc2")


def chunks_for(shape, itemsize):
    """About CHUNK_BYTES per chunk: trailing dimensions whole, leading ones cut."""
    chunk = list(shape)
    for d in range(len(chunk)):
        inner = itemsize
        for n in chunk[d + 1:]:
            inner *= max(n, 1)
        if inner * chunk[d] <= CHUNK_BYTES:
            break
        chunk[d] = max(1, CHUNK_BYTES // inner)
        if inner <= CHUNK_BYTES:
            break
        chunk[d] = 1
    return tuple(max(1, c) for c in chunk)


def jsonable(v):
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, bytes):
        return v.decode("latin-1")
    return v


def read_nc(path):
    """(global attributes, [(name, array, attributes)]) of a netCDF-3 file, raw values."""
    import netCDF4

    with netCDF4.Dataset(path) as ds:
        ds.set_auto_maskandscale(False)
        ds.set_always_mask(False)
        gattrs = {k: jsonable(ds.getncattr(k)) for k in ds.ncattrs()}
        out = []
        for name, v in ds.variables.items():
            v.set_auto_chartostring(False)
            a = np.asarray(v[...])
            if a.dtype.kind == "S":
                a = a.view(np.uint8).reshape(a.shape)
            attrs = {k: jsonable(v.getncattr(k)) for k in v.ncattrs()}
            out.append((name, np.ascontiguousarray(a), attrs))
    return gattrs, out


def pack(tool, src, dst):
    gattrs, vars_ = read_nc(src)
    if tool.startswith("zarr"):
        import zarr
        from zarr.codecs import BloscCodec

        blosc = BloscCodec(cname="zstd", clevel=5, shuffle="shuffle")
        store = zarr.storage.ZipStore(dst, mode="w")
        # Attributes given at creation: each later update would add a zarr.json to the zip.
        root = zarr.group(store=store, zarr_format=3, attributes=gattrs)
        for name, a, attrs in vars_:
            kw = {"compressors": blosc}
            if tool == "zarr-pcodec" and a.dtype.itemsize in (2, 4, 8):
                from zarr.codecs.numcodecs import PCodec

                kw = {"serializer": PCodec(level=8), "compressors": None}
            z = root.create_array(name, shape=a.shape, dtype=a.dtype,
                                  chunks=chunks_for(a.shape, a.dtype.itemsize) if a.ndim else (),
                                  fill_value=0, attributes=attrs, **kw)
            z[...] = a
        store.close()
    elif tool == "hdf5-blosc2":
        import h5py
        import hdf5plugin

        filt = hdf5plugin.Blosc2(cname="zstd", clevel=5, filters=hdf5plugin.Blosc2.SHUFFLE)
        with h5py.File(dst, "w") as f:
            for k, v in gattrs.items():
                f.attrs[k] = json.dumps(v)
            for name, a, attrs in vars_:
                if a.ndim == 0 or a.size == 0:
                    d = f.create_dataset(name, data=a)
                else:
                    d = f.create_dataset(name, data=a, chunks=chunks_for(a.shape, a.dtype.itemsize),
                                         **filt)
                for k, v in attrs.items():
                    d.attrs[k] = json.dumps(v)
    else:
        sys.exit(f"peers.py: unknown tool {tool!r} (one of {', '.join(TOOLS)})")


def digest(tool, path, dst):
    h = hashlib.blake2b(digest_size=20)

    def add(name, a):
        a = np.ascontiguousarray(a)
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())

    if tool == "nc":
        for name, a, _ in sorted(read_nc(path)[1], key=lambda v: v[0]):
            add(name, a)
    elif tool.startswith("zarr"):
        import zarr

        store = zarr.storage.ZipStore(path, mode="r")
        root = zarr.open_group(store=store, mode="r", zarr_format=3)
        for name in sorted(root.array_keys()):
            add(name, root[name][...])
        store.close()
    elif tool == "hdf5-blosc2":
        import h5py
        import hdf5plugin  # noqa: F401 (registers the filters)

        with h5py.File(path, "r") as f:
            for name in sorted(f.keys()):
                add(name, f[name][...])
    else:
        sys.exit(f"peers.py: unknown tool {tool!r}")
    with open(dst, "w") as out:
        out.write(h.hexdigest() + "\n")


def main():
    warnings.simplefilter("ignore")  # numcodecs' "not in the Zarr v3 specification" notice
    if len(sys.argv) != 5 or sys.argv[1] not in ("pack", "digest"):
        sys.exit(__doc__.split("\n\n")[1])
    cmd, tool, a, b = sys.argv[1:]
    if cmd == "pack":
        pack(tool, a, b)
    else:
        digest(tool, a, b)


if __name__ == "__main__":
    main()
