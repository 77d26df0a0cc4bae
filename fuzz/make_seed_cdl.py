#!/usr/bin/env python3
"""Writes the CDL of a netCDF seed of the fuzz targets to stdout (fuzz/make_corpus.sh runs
ncgen on it; the .nc files are committed in fuzz/seeds/ for slab_read):

  smooth_grid   short elev(y, x), int temp(y, x), float sst(y, x) on a 24 x 32 grid, smooth in
                both directions (pco + `plane` blocks, filter 6, at block sizes 512 to 1024), and
                char notes(y, len) text
  mesh_repeats  double clon_vertices(cell, nv): random doubles from a pool of 1500, each
                repeated in a few cells far apart (the `max` preset packs them with lzma, codec
                5, at block size 8192)
  mesh_refs     a triangulated 30 x 20 grid: double clon_vertices(cell, nv) (a random double
                for each vertex, recurring in the cells around it) and int vertex_of_cell(nv,
                cell) (the vertices' numbers, shuffled): the `max` preset packs both with lzma
                after the `refs` filter (filter 7) at block size 65536
  ocean_land    float sst(y, x) in hundredths and short code(y, x) on a 30 x 40 grid, a third
                of whose rows (and a stretch of every other row) are land: -1e34 and -32767
                (pco + mask blocks)
  noisy_field   float t(y, x), double d(y, x) and short h(y, x) (in hundredths) on a 40 x 90
                grid: a smooth field with noise ten times larger in a band of columns than
                elsewhere and fill values in a corner (the `max` preset packs its blocks with
                the `context` codec, codec 6, at block sizes 2048 and 4096)

  fit_field     float t(y, x) and float s(y, x) on a 48 x 96 grid: t a smooth field with white
                noise, s eddies with a little noise and two blobs of land (fill values): the
                default preset packs both with pco after the `fit` filter (filter 9) at block
                sizes 4096 to 18432, s's blocks with land with fit's fill section

Usage: make_seed_cdl.py smooth_grid|mesh_repeats|mesh_refs|noisy_field|ocean_land|fit_field
"""
import math
import random
import sys


def grid_cdl(name, ny, nx, variables, data):
    """The CDL of a file of dimensions y = ny, x = nx: `variables` the declaration lines
    (attributes indented once more), `data` (variable name, comma-separated values) pairs."""
    decls = "".join(f"\t{line}\n" for line in variables)
    values = "".join(f" {v} = {vals} ;\n" for v, vals in data)
    return f"netcdf {name} {{\ndimensions:\n\ty = {ny} ;\n\tx = {nx} ;\nvariables:\n{decls}data:\n{values}}}"


def smooth_grid():
    ny, nx = 24, 32

    def grid(f):
        return ", ".join(str(f(j, i)) for j in range(ny) for i in range(nx))

    elev = grid(lambda j, i: int(round(1200 + 40 * math.sin(i / 5.0) * math.cos(j / 7.0) + 3 * i - 2 * j)))
    temp = grid(lambda j, i: 250000 + (i * 7919 % 4001) + 37 * j + int(round(20 * math.sin(j / 3.0))))
    sst = grid(lambda j, i: "%.3f" % (280 + 5 * math.sin(i / 6.0) + 3 * math.cos(j / 4.0)))
    words = "the quick brown fox jumps over the lazy dog ".split()
    notes = ", ".join(
        '"%s"' % " ".join(words[(k + m) % len(words)] for m in range(14))[:120] for k in range(ny)
    )
    return f"""netcdf smooth_grid {{
dimensions:
	y = {ny} ;
	x = {nx} ;
	len = 120 ;
variables:
	short elev(y, x) ;
		elev:units = "m" ;
	int temp(y, x) ;
	float sst(y, x) ;
	char notes(y, len) ;
data:
 elev = {elev} ;
 temp = {temp} ;
 sst = {sst} ;
 notes = {notes} ;
}}"""


def mesh_repeats():
    rnd = random.Random(11)
    pool = [rnd.uniform(-math.pi, math.pi) for _ in range(1500)]
    cells = 1200
    cv = ", ".join(repr(pool[rnd.randrange(len(pool))]) for _ in range(cells * 3))
    return f"""netcdf mesh_repeats {{
dimensions:
	cell = {cells} ;
	nv = 3 ;
variables:
	double clon_vertices(cell, nv) ;
data:
 clon_vertices = {cv} ;
}}"""


def mesh_refs():
    rnd = random.Random(7)
    w, h = 30, 20
    lon = [rnd.uniform(-math.pi, math.pi) for _ in range(w * h)]
    ids = list(range(1, w * h + 1))
    rnd.shuffle(ids)
    cells = []
    for parity in range(2):
        for r in range(parity, h - 1, 2):
            for c in range(w - 1):
                a, b = r * w + c, (r + 1) * w + c
                cells += [(a, a + 1, b), (a + 1, b + 1, b)]
    cv = ", ".join(repr(lon[v]) for t in cells for v in t)
    voc = ", ".join(str(ids[t[k]]) for k in range(3) for t in cells)
    return f"""netcdf mesh_refs {{
dimensions:
	cell = {len(cells)} ;
	nv = 3 ;
variables:
	double clon_vertices(cell, nv) ;
	int vertex_of_cell(nv, cell) ;
data:
 clon_vertices = {cv} ;
 vertex_of_cell = {voc} ;
}}"""


def noisy_field():
    rnd = random.Random(17)
    ny, nx = 40, 90
    vals = []
    for j in range(ny):
        for i in range(nx):
            smooth = 280 + 30 * j / ny + 3 * math.sin(6 * 2 * math.pi * i / nx)
            land = nx * 5 // 18 <= i < nx * 11 // 18
            noise = sum(rnd.random() - 0.5 for _ in range(4)) * (2.0 if land else 0.2)
            ice = j < ny // 9 and i < nx // 4
            vals.append(9.969209968386869e36 if ice else smooth + noise)
    t = ", ".join("%.9g" % v for v in vals)
    d = ", ".join(repr(v) for v in vals)
    h = ", ".join(str(-32767 if v > 1e30 else int((v - 280) * 100)) for v in vals)
    return grid_cdl(
        "noisy_field",
        ny,
        nx,
        ["float t(y, x) ;", "double d(y, x) ;", "short h(y, x) ;"],
        [("t", t), ("d", d), ("h", h)],
    )


def fit_field():
    rnd = random.Random(23)
    ny, nx = 48, 96
    t, s = [], []
    for j in range(ny):
        for i in range(nx):
            smooth = 250 + 40 * math.sin(math.pi * j / ny) + 5 * math.cos(4 * math.pi * i / nx)
            noise = sum(rnd.random() - 0.5 for _ in range(6)) * 0.8
            t.append("%.9g" % (smooth + noise))
            eddies = 2 * math.sin(i / 3) * math.cos(j / 4) + 1.5 * math.sin((i + j) / 5)
            small = sum(rnd.random() - 0.5 for _ in range(6)) * 0.05
            land = (i - 30) ** 2 / 120 + (j - 20) ** 2 / 40 < 1
            land = land or (i - 75) ** 2 / 60 + (j - 35) ** 2 / 90 < 1
            sea = 290 + eddies - 8 * (j / ny) ** 2 + small
            s.append("9.96921e+36" if land else "%.9g" % sea)
    return grid_cdl(
        "fit_field",
        ny,
        nx,
        ["float t(y, x) ;", "float s(y, x) ;", "\ts:_FillValue = 9.96921e+36f ;"],
        [("t", ", ".join(t)), ("s", ", ".join(s))],
    )


def ocean_land():
    ny, nx = 30, 40
    sst, code = [], []
    for j in range(ny):
        for i in range(nx):
            land = (j * 7919) % 100 < 35 or (j % 2 == 0 and 10 < i < 20)
            v = round(15 + 10 * math.sin(j / 5) * math.cos(i / 7), 2)
            sst.append("-1e+34" if land else "%.2f" % v)
            code.append(str(-32767 if land else int(v * 50)))
    return grid_cdl(
        "ocean_land",
        ny,
        nx,
        ["float sst(y, x) ;", "short code(y, x) ;"],
        [("sst", ", ".join(sst)), ("code", ", ".join(code))],
    )


print(
    {
        "ocean_land": ocean_land,
        "smooth_grid": smooth_grid,
        "mesh_repeats": mesh_repeats,
        "mesh_refs": mesh_refs,
        "noisy_field": noisy_field,
        "fit_field": fit_field,
    }[sys.argv[1]]()
)
