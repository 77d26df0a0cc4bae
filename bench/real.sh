#!/usr/bin/env bash
# Ratio check on real netCDF-3 files (a second check next to compare.sh's generated corpus):
# every netCDF-3 file in DIR (by magic, any name; default: the files of Debian's
# ferret-datasets package, /usr/share/ferret-vis/data) packed by nc3pack (default and
# --level max) and by `nccopy -k nc4 -d5 -s`, Zarr v3 pcodec and Blosc zstd 5 shuffle
# (bench/peers.py), `zstd -3 -T2` and `xz -6 -T1`: ratio per file and over all files, and each
# tool's total pack time (one run each, warm page cache). nc3pack's archives are unpacked and
# compared with the originals byte for byte.
#
#   bench/real.sh [DIR]
#
# Needs: cargo, the Debian packages netcdf-bin, zstd, xz-utils (and ferret-datasets for the
# default DIR), and python3 with numpy, netCDF4, zarr, numcodecs and pcodec ($PYTHON, default
# python3). NC3PACK_BIN=path uses that binary instead of building one. Prints a Markdown report.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:-/usr/share/ferret-vis/data}
PYTHON=${PYTHON:-python3}
[ -d "$DIR" ] || { echo "real.sh: no directory $DIR (apt-get install ferret-datasets, or give one)" >&2; exit 1; }
for c in nccopy zstd xz; do
  command -v $c >/dev/null || { echo "real.sh: needs $c (apt-get install netcdf-bin zstd xz-utils)" >&2; exit 1; }
done
"$PYTHON" -c 'import numpy, netCDF4, zarr, numcodecs, pcodec' 2>/dev/null ||
  { echo "real.sh: needs $PYTHON with numpy, netCDF4, zarr, numcodecs and pcodec" >&2; exit 1; }
if [ -z "${NC3PACK_BIN:-}" ]; then
  (cd "$ROOT" && cargo build --release -q)
  NC3PACK_BIN=$ROOT/target/release/nc3pack
fi
BIN=$NC3PACK_BIN
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

mapfile -t FILES < <(find "$DIR" -maxdepth 1 -type f -print0 | sort -z |
  while IFS= read -r -d '' f; do
    case $(head -c 4 "$f" | od -An -tx1 | tr -d ' \n') in 43444601 | 43444602 | 43444605) echo "$f" ;; esac
  done)
[ ${#FILES[@]} -gt 0 ] || { echo "real.sh: no netCDF-3 file in $DIR" >&2; exit 1; }
TOOLS=("nc3pack default" "nc3pack max" "nccopy -k nc4 -d5 -s" "Zarr v3 pcodec" "Zarr v3 Blosc zstd5 shuffle"
  "zstd -3 -T2" "xz -6 -T1")
pack() { # pack TOOL IN OUT
  case $1 in
    "nc3pack default") "$BIN" pack -q -f "$2" "$3" ;;
    "nc3pack max") "$BIN" pack -q -f --level max "$2" "$3" ;;
    nccopy*) nccopy -k nc4 -d5 -s "$2" "$3" ;;
    "Zarr v3 pcodec") "$PYTHON" "$ROOT/bench/peers.py" pack zarr-pcodec "$2" "$3" ;;
    Zarr*) "$PYTHON" "$ROOT/bench/peers.py" pack zarr-blosc "$2" "$3" ;;
    zstd*) zstd -q -f -3 -T2 "$2" -o "$3" ;;
    xz*) xz -6 -T1 -c -- "$2" >"$3" ;;
  esac
}
declare -A SIZE SECS
total=0 bad=0
header="| file | bytes |" sep="|---|---:|"
for t in "${TOOLS[@]}"; do header="$header $t |" sep="$sep---:|"; done
rows=()
for f in "${FILES[@]}"; do
  n=$(stat -c %s "$f")
  total=$((total + n))
  row="| $(basename "$f") | $n |"
  for t in "${TOOLS[@]}"; do
    a=$OUT/archive
    s0=$(date +%s.%N)
    pack "$t" "$f" "$a"
    s1=$(date +%s.%N)
    p=$(stat -c %s "$a")
    if [[ $t == nc3pack* ]]; then
      "$BIN" unpack -q -f "$a" "$OUT/restored.nc"
      cmp -s "$f" "$OUT/restored.nc" || { echo "real.sh: $t did not restore $f byte for byte" >&2; bad=$((bad + 1)); }
    fi
    rm -f "$a" "$OUT/restored.nc"
    SIZE[$t]=$((${SIZE[$t]:-0} + p))
    SECS[$t]=$(awk -v a="${SECS[$t]:-0}" -v b="$s0" -v c="$s1" 'BEGIN { printf "%.3f", a + c - b }')
    row="$row $(awk -v o="$n" -v p="$p" 'BEGIN { printf "%.3f", o / p }') |"
  done
  rows+=("$row")
done
echo "## Real netCDF-3 files: $DIR"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); nc3pack $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo ?); ${#FILES[@]} files, $total bytes; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- ratio = original bytes / packed bytes; one run each, warm page cache; nc3pack round trips: $([ $bad -eq 0 ] && echo "all byte-identical" || echo "$bad NOT byte-identical")"
echo
echo "$header"
echo "$sep"
printf '%s\n' "${rows[@]}"
all="| all files | $total |" secs="| pack time, all files (s) | |"
for t in "${TOOLS[@]}"; do
  all="$all $(awk -v o="$total" -v p="${SIZE[$t]}" 'BEGIN { printf "%.3f", o / p }') |"
  secs="$secs ${SECS[$t]} |"
done
echo "$all"
echo "$secs"
[ $bad -eq 0 ]
