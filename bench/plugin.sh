#!/usr/bin/env bash
# The netCDF-C plugin's speed: for each file of the benchmark corpus (bench/make_corpus.py), its
# largest variable VAR read through netCDF-C from the archive (the plugin), the original, and an
# `nccopy -k nc4 -d5 -s` copy (netCDF-4/HDF5, deflate level 5, shuffle):
#   ncdump -v VAR                      (text of one variable)
#   nccopy -k classic FILE out.nc      (the whole file to a classic file)
#   a full-variable netCDF4-python read (ds[VAR][...], no masking or scaling)
# Each time is the best of RUNS runs (wall clock). Then the targets: a full-variable read of the
# archive at >= 0.7x the original's speed and faster than the netCDF-4 copy's; nccopy of the
# archive to classic within 1.5x of the original's.
#
# Usage: bench/plugin.sh [CORPUS_DIR]     (default: target/bench-corpus; made when missing)
# Environment: RUNS (default 3); PYTHON with numpy and netCDF4 (default: target/pyvenv/bin/python,
# else python3); NC3PACK, PLUGIN (default: target/release/nc3pack, libnc3pack_netcdf.so).
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:-target/bench-corpus}
runs=${RUNS:-3}
python=${PYTHON:-target/pyvenv/bin/python}
[[ -x $python ]] || python=python3
bin=${NC3PACK:-target/release/nc3pack}
so=${PLUGIN:-target/release/libnc3pack_netcdf.so}
[[ -x $bin ]] || cargo build --release --locked --bin nc3pack
[[ -f $so ]] || cargo build --release --locked -p nc3pack-netcdf
so=$(realpath "$so")
for tool in ncdump nccopy; do
    command -v "$tool" >/dev/null || { echo "bench/plugin.sh: $tool not found (apt-get install netcdf-bin)" >&2; exit 1; }
done
"$python" -c "import netCDF4, numpy" 2>/dev/null || {
    echo "bench/plugin.sh: $python lacks netCDF4 or numpy (pip install netCDF4 numpy)" >&2
    exit 1
}
mkdir -p "$corpus"
"$python" bench/make_corpus.py "$corpus" --tiny 0 >/dev/null

work=$(mktemp -d "${TMPDIR:-/tmp}/nc3pack-plugin-bench.XXXXXX")
trap 'rm -rf -- "$work"' EXIT
# netCDF4-python's own netCDF-C (4.10) loads the plugin from an RC file.
printf 'NETCDF.UDF0.LIBRARY=%s\nNETCDF.UDF0.INIT=nc3pack_netcdf_init\n' "$so" >"$work/ncrc"

# best SECONDS of RUNS runs of a command (its output discarded)
best() {
    local b= t0 t1 t
    for ((i = 0; i < runs; i++)); do
        t0=$(date +%s.%N)
        "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; echo nan; return; }
        t1=$(date +%s.%N)
        t=$(echo "$t1 - $t0" | bc -l)
        if [[ -z $b ]] || (($(echo "$t < $b" | bc -l))); then b=$t; fi
    done
    printf '%.3f' "$b"
}
plugged() { LD_PRELOAD="$so" "$@"; }
pyread() {
    NCRCENV_RC="$work/ncrc" "$python" -c '
import sys, netCDF4
ds = netCDF4.Dataset(sys.argv[1]); ds.set_auto_maskandscale(False)
ds[sys.argv[2]][...]' "$1" "$2"
}

declare -A VAR=([gridded]=t2m [topo]=elevation [points]=temp [numeric]=sst [mesh]=clon_vertices)
pass=0 fail=0
check() {  # description, condition (bc)
    if (($(echo "$2" | bc -l))); then
        echo "PASS $1"
        pass=$((pass + 1))
    else
        echo "FAIL $1"
        fail=$((fail + 1))
    fi
}
printf '| file | var | ncdump -v: nc3z / nc / nc4 (s) | nccopy -k classic: nc3z / nc / nc4 (s) | netCDF4-python read: nc3z / nc / nc4 (s) |\n|---|---|---|---|---|\n'
results=()
for name in gridded topo points numeric mesh; do
    o="$corpus/$name.nc"
    [[ -f $o ]] || continue
    v=${VAR[$name]}
    z="$work/$name.nc3z"
    n4="$work/$name.nc4"
    "$bin" pack -q "$o" "$z"
    nccopy -k nc4 -d5 -s "$o" "$n4"
    dz=$(best plugged ncdump -v "$v" "$z")
    do_=$(best ncdump -v "$v" "$o")
    d4=$(best ncdump -v "$v" "$n4")
    cz=$(best plugged nccopy -k classic "$z" "$work/out.nc")
    co=$(best nccopy -k classic "$o" "$work/out.nc")
    c4=$(best nccopy -k classic "$n4" "$work/out.nc")
    rz=$(best pyread "$z" "$v")
    ro=$(best pyread "$o" "$v")
    r4=$(best pyread "$n4" "$v")
    printf '| %s | %s | %s / %s / %s | %s / %s / %s | %s / %s / %s |\n' "$name" "$v" \
        "$dz" "$do_" "$d4" "$cz" "$co" "$c4" "$rz" "$ro" "$r4"
    results+=("$name $rz $ro $r4 $cz $co")
    rm -f "$z" "$n4" "$work/out.nc"
done
echo
for r in "${results[@]}"; do
    read -r name rz ro r4 cz co <<<"$r"
    check "$name: netCDF4-python full read of the archive at >= 0.7x the original's speed ($rz s vs $ro s)" "$rz * 0.7 <= $ro"
    check "$name: ... and faster than the nccopy -k nc4 -d5 -s copy's ($rz s vs $r4 s)" "$rz < $r4"
    check "$name: nccopy -k classic of the archive within 1.5x of the original's ($cz s vs $co s)" "$cz <= 1.5 * $co"
done
echo "plugin bench: $pass passed, $fail failed"
