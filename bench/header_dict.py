#!/usr/bin/env python3
"""What the built-in zstd dictionary saves on archives' header frames (format 1.3 uses it for
the header frame of compact archives: src/codec/header_dict.bin was written by --dict-out, and
its bytes never change).

The dictionary is raw content: netCDF-3 header bytes of the CF conventions' common names and
values (units, long_name, standard_name, axis, calendar, _FillValue, Conventions, the
time/lat/lon dimensions and coordinate variables), encoded as a netCDF-3 header encodes them,
built from those names only (not from the files measured). For each netCDF-3 file given, its
header is compressed as the header frame is (zstd level 19, no checksum, the 4-byte magic left
out as the compact form does) without and with the dictionary, and as raw LZMA2 (xz -6) for
comparison. Prints the totals.

    bench/header_dict.py FILE... [--dict-out PATH]

Needs the zstd and xz command-line tools.
"""
import argparse
import os
import struct
import subprocess
import sys
import tempfile

SIZES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 4, 6: 8, 7: 1, 8: 2, 9: 4, 10: 4, 11: 8, 12: 8}


def header_len(b):
    """Length of the netCDF-3 header at the start of `b` (classic, 64-bit offset or CDF-5)."""
    version, off = b[3], 4
    big = version == 5

    def count():
        nonlocal off
        if big:
            (x,) = struct.unpack(">Q", b[off : off + 8])
            off += 8
        else:
            (x,) = struct.unpack(">I", b[off : off + 4])
            off += 4
        return x

    def word():
        nonlocal off
        (x,) = struct.unpack(">I", b[off : off + 4])
        off += 4
        return x

    def name():
        nonlocal off
        n = count()
        off += (n + 3) // 4 * 4

    def attrs():
        nonlocal off
        word()
        for _ in range(count()):
            name()
            t = word()
            n = count()
            off += (n * SIZES[t] + 3) // 4 * 4

    count()  # numrecs
    word()
    for _ in range(count()):
        name()
        count()
    attrs()
    word()
    for _ in range(count()):
        name()
        ndims = count()
        off += ndims * (8 if big else 4)
        attrs()
        word()
        count()
        off += 4 if version == 1 else 8
    return off


def nc_name(s):
    b = s.encode()
    return struct.pack(">I", len(b)) + b + b"\0" * (-len(b) % 4)


def text_attr(k, v):
    b = v.encode()
    return nc_name(k) + struct.pack(">II", 2, len(b)) + b + b"\0" * (-len(b) % 4)


def num_attr(k, t, vals):
    b = b"".join(struct.pack({5: ">f", 6: ">d"}[t], x) for x in vals)
    return nc_name(k) + struct.pack(">II", t, len(vals)) + b + b"\0" * (-len(b) % 4)


def cf_dictionary():
    """The dictionary's bytes: the most common names last (nearest the data, cheapest)."""
    p = []
    for k, v in [("Conventions", "CF-1.6"), ("Conventions", "CF-1.8"), ("Conventions", "COARDS"),
                 ("title", ""), ("institution", ""), ("source", ""), ("history", "Created "),
                 ("references", ""), ("comment", "")]:
        p.append(text_attr(k, v))
    for v in ["days since 1970-01-01 00:00:00", "hours since 1900-01-01 00:00:00",
              "seconds since 1970-01-01", "days since 1850-01-01"]:
        p.append(text_attr("units", v))
    for k, v in [("calendar", "standard"), ("calendar", "gregorian"), ("calendar", "noleap"),
                 ("calendar", "365_day"), ("positive", "up"), ("positive", "down"),
                 ("cell_methods", "time: mean"), ("coordinates", "lat lon"),
                 ("grid_mapping", "crs")]:
        p.append(text_attr(k, v))
    for k in ["bounds", "missing_value", "valid_min", "valid_max", "valid_range", "scale_factor",
              "add_offset"]:
        p.append(nc_name(k))
    for t in (5, 6):
        p.append(num_attr("_FillValue", t, [9.969209968386869e36]))
        p.append(num_attr("missing_value", t, [1e20]))
    p.append(struct.pack(">I", 10))
    for d in ["time", "lat", "lon", "level", "lev", "depth", "height", "bnds", "nv", "x", "y",
              "station", "obs"]:
        p.append(nc_name(d))
    p.append(struct.pack(">I", 11))
    for var, units, long_name, standard_name, axis in [
            ("depth", "m", "depth", "depth", "Z"), ("lev", "hPa", "level", "air_pressure", "Z"),
            ("time", "days since 1970-01-01", "time", "time", "T"),
            ("lon", "degrees_east", "longitude", "longitude", "X"),
            ("lat", "degrees_north", "latitude", "latitude", "Y")]:
        p.append(nc_name(var) + struct.pack(">II", 1, 12))
        p.append(text_attr("units", units) + text_attr("long_name", long_name)
                 + text_attr("standard_name", standard_name) + text_attr("axis", axis))
        p.append(struct.pack(">I", 6))
    for sn, u in [("air_temperature", "K"), ("precipitation_flux", "kg m-2 s-1"),
                  ("sea_surface_temperature", "K"), ("eastward_wind", "m s-1"),
                  ("northward_wind", "m s-1"), ("air_pressure", "Pa"),
                  ("relative_humidity", "%"), ("specific_humidity", "1")]:
        p.append(text_attr("standard_name", sn) + text_attr("long_name", sn.replace("_", " "))
                 + text_attr("units", u))
    return b"".join(p)


def zstd_len(data, dict_path=None):
    cmd = ["zstd", "-q", "-19", "--no-check", "-c"] + (["-D", dict_path] if dict_path else [])
    out = subprocess.run(cmd, input=data, capture_output=True, check=True).stdout
    # The frame stores the header raw where zstd does not make it smaller; the compact form
    # leaves the zstd magic out.
    return min(len(out) - 4, len(data))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--dict-out")
    args = ap.parse_args()
    d = cf_dictionary()
    with tempfile.TemporaryDirectory() as tmp:
        dict_path = args.dict_out or os.path.join(tmp, "cf.dict")
        with open(dict_path, "wb") as f:
            f.write(d)
        n = raw = plain = with_dict = lzma = 0
        for path in args.files:
            with open(path, "rb") as f:
                b = f.read()
            try:
                h = b[: header_len(b)]
            except (struct.error, KeyError, IndexError):
                print(f"{path}: not a netCDF-3 header this script reads", file=sys.stderr)
                continue
            n += 1
            raw += len(h)
            plain += zstd_len(h)
            with_dict += zstd_len(h, dict_path)
            lzma += len(subprocess.run(["xz", "--format=raw", "--lzma2=preset=6", "-c"],
                                       input=h, capture_output=True, check=True).stdout)
    print(f"dictionary: {len(d)} bytes; {n} headers, {raw} bytes")
    print("| header frame payload | bytes | per file |")
    print("|---|---:|---:|")
    for what, v in [("zstd -19 (now)", plain), ("zstd -19 + CF dictionary", with_dict),
                    ("raw LZMA2 (xz -6)", lzma)]:
        print(f"| {what} | {v} | {v / max(n, 1):.1f} |")


if __name__ == "__main__":
    main()
