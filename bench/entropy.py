#!/usr/bin/env python3
"""How far a variable could compress: the empirical entropy of its prediction residuals.

    python3 bench/entropy.py FILE VAR [--records N] [--pco]

Reads VAR (its first N records if it has a record dimension) with netCDF4-python, maps the
values to integers as nc3pack's filters do (floats by the order-preserving map of their bits,
integers as they are), and prints, for a few 2-D predictors on rows of the innermost dimension,
the entropy of the residuals in bits per value and the ratio an ideal entropy coder of those
residuals would reach (element bits / entropy). This is a bound for coders that code each
residual alone, not for every coder. With --noise SIGMA, also the entropy of the noise the corpus
generator added (Gaussian of that standard deviation, rounded to the values' float spacing; fill
values cost nothing): a floor below which no lossless coder can go. With --pco, also what Pcodec (level 8, no delta of its own)
makes of the zigzagged residuals. Needs numpy and netCDF4 (and pcodec with --pco).

Predictors (L = left, U = up one row, UL = up-left): none; left (L); lorenzo (L + U - UL);
avg ((L + U) / 2); plane ((3L + 3U - 2UL) / 4).
"""

from __future__ import annotations

import argparse

import netCDF4
import numpy as np


def mapped(a: np.ndarray) -> np.ndarray:
    """Values as int64: floats by the order-preserving map of their bits (negative values get
    their magnitude bits flipped, as nc3pack's lorenzo and plane filters do)."""
    if a.dtype.kind != "f":
        return a.astype(np.int64)
    s = a.view(np.int32 if a.itemsize == 4 else np.int64).astype(np.int64)
    magnitude = np.int64((1 << (8 * a.itemsize - 1)) - 1)
    return np.where(s < 0, s ^ magnitude, s)


def entropy(r: np.ndarray) -> float:
    _, counts = np.unique(r, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    ap.add_argument("var")
    ap.add_argument(
        "--records", type=int, default=10, help="records to read (default 10)"
    )
    ap.add_argument(
        "--pco", action="store_true", help="also compress the residuals with pcodec"
    )
    ap.add_argument(
        "--noise",
        type=float,
        metavar="SIGMA",
        help="the data holds Gaussian noise of this standard deviation (as bench/make_corpus.py adds): "
        "also print the noise's own entropy at each value's float spacing, a floor for any lossless coder",
    )
    a = ap.parse_args()
    with netCDF4.Dataset(a.file) as ds:
        ds.set_auto_maskandscale(False)
        v = ds[a.var]
        if v.ndim < 2:
            raise SystemExit(f"{a.var}: needs 2 or more dimensions, has {v.ndim}")
        record = ds.dimensions[v.dimensions[0]].isunlimited()
        x = v[: a.records] if record else v[:]
        fill = v.getncattr("_FillValue") if "_FillValue" in v.ncattrs() else None
        fill = v.getncattr("_FillValue") if "_FillValue" in v.ncattrs() else None
    x = np.asarray(x)
    bits = 8 * x.itemsize
    m = mapped(x).reshape(-1, x.shape[-2], x.shape[-1])
    left = np.zeros_like(m)
    left[:, :, 1:] = m[:, :, :-1]
    up = np.zeros_like(m)
    up[:, 1:, :] = m[:, :-1, :]
    ul = np.zeros_like(m)
    ul[:, 1:, 1:] = m[:, :-1, :-1]
    preds = {
        "none": np.zeros_like(m),
        "left": left,
        "lorenzo": left + up - ul,
        "avg": (left + up) // 2,
        "plane": (3 * left + 3 * up - 2 * ul) // 4,
    }
    print(f"{a.file} {a.var}: {m.size:,} values of {bits} bits")
    print(
        "| predictor | entropy bits/value | ideal ratio |"
        + (" pco ratio |" if a.pco else "")
    )
    print("|---|---:|---:|" + ("---:|" if a.pco else ""))
    for name, p in preds.items():
        r = (m - p)[:, 1:, 1:].ravel()
        h = entropy(r)
        row = f"| {name} | {h:.2f} | {bits / h:.3f} |"
        if a.pco:
            import pcodec

            w = ((r + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))
            z = ((w << 1) ^ (w >> 63)).astype(
                np.uint64 if bits == 64 else np.uint32 if bits == 32 else np.uint16
            )
            cfg = pcodec.ChunkConfig(
                compression_level=8, delta_spec=pcodec.DeltaSpec.no_op()
            )
            c = pcodec.standalone.simple_compress(np.ascontiguousarray(z), cfg)
            row += f" {r.size * x.itemsize / len(c):.3f} |"
        print(row)
    if a.noise is not None and x.dtype.kind == "f":
        vals = x.ravel() if fill is None else x.ravel()[x.ravel() != fill]
        spacing = np.spacing(np.abs(vals)).astype(np.float64)
        h = np.log2(a.noise * np.sqrt(2 * np.pi * np.e)) - np.log2(spacing)
        total = float(h.sum())
        print(
            f"noise floor: {total / vals.size:.2f} bits per non-fill value ({vals.size:,} of {x.size:,}), "
            f"{total / x.size:.2f} per value: no lossless coder beats ratio {bits * x.size / total:.3f}"
        )


if __name__ == "__main__":
    main()
