#!/usr/bin/env bash
# Tiny real files: every netCDF-3 file under 16 KiB (by magic, any name) that other projects
# ship as sample or test data, packed one by one by nc3pack (default and --level max, each in
# the compact form of format 1.2, the default for such files, and in the full form, `pack
# --no-compact`),
# `xz -6`, `zstd -19` and `zstd -3`: each tool's total, the number of files each tool makes
# smallest (ties count for every tool that ties), and a check that every nc3pack archive
# unpacks byte-identical.
#
#   bench/tiny.sh [DIR]
#
# Gathers the files into DIR (default /tmp/nc3pack-tiny; kept for reruns) from Debian packages
# (downloaded with `apt-get download`, not installed: ferret-vis's journal examples and
# r-cran-stars's sample data), the wheels of scipy and xarray (`pip download --no-deps
# --only-binary :all:`: their io test data) and the Rust crate netcdf3 (a dependency in
# Cargo.lock: `cargo fetch` puts it in the cargo registry). Duplicates (same bytes) count once.
# Extra files: EXTRA=dir (every netCDF-3 file under 16 KiB below it joins the set).
#
# Needs: apt-get, dpkg-deb, python3 with pip, cargo, zstd, xz-utils. NC3PACK_BIN=path uses that
# binary instead of building one. Prints a Markdown report.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:-/tmp/nc3pack-tiny}
PYTHON=${PYTHON:-python3}
MAX=16384
for c in zstd xz apt-get dpkg-deb cargo; do
  command -v $c >/dev/null || { echo "tiny.sh: needs $c" >&2; exit 1; }
done
if [ -z "${NC3PACK_BIN:-}" ]; then
  (cd "$ROOT" && cargo build --release -q)
  NC3PACK_BIN=$ROOT/target/release/nc3pack
fi
BIN=$NC3PACK_BIN

is_nc3() { case $(head -c 4 "$1" | od -An -tx1 | tr -d ' \n') in 43444601 | 43444602 | 43444605) return 0 ;; esac; return 1; }
# collect SRC NAME-PREFIX: copies every netCDF-3 file of at most MAX bytes under SRC to
# DIR/files, named PREFIX-<path with / as _>.
collect() {
  find "$1" -type f -size -$((MAX + 1))c -print0 | sort -z | while IFS= read -r -d '' f; do
    if is_nc3 "$f"; then
      rel=${f#"$1"/}
      cp "$f" "$DIR/files/$2-${rel//\//_}"
    fi
  done
}
if [ ! -d "$DIR/files" ]; then
  rm -rf "$DIR/src" "$DIR/files.tmp"
  mkdir -p "$DIR/src/deb" "$DIR/src/whl" "$DIR/files"
  (cd "$DIR/src/deb" && apt-get download -q ferret-vis r-cran-stars >/dev/null 2>&1) ||
    { echo "tiny.sh: apt-get download ferret-vis r-cran-stars failed (run apt-get update first)" >&2; exit 1; }
  for d in "$DIR"/src/deb/*.deb; do
    n=$(basename "$d" | cut -d_ -f1)
    mkdir -p "$DIR/src/deb/$n" && dpkg-deb -x "$d" "$DIR/src/deb/$n"
    collect "$DIR/src/deb/$n" "$n"
  done
  "$PYTHON" -m pip download -q --no-deps --only-binary :all: scipy xarray -d "$DIR/src/whl"
  for w in "$DIR"/src/whl/*.whl; do
    n=$(basename "$w" | cut -d- -f1)
    mkdir -p "$DIR/src/whl/$n"
    "$PYTHON" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$w" "$DIR/src/whl/$n"
    collect "$DIR/src/whl/$n" "$n"
  done
  (cd "$ROOT" && cargo fetch --locked -q)
  crate=$(find "${CARGO_HOME:-$HOME/.cargo}/registry/src" -maxdepth 2 -type d -name 'netcdf3-*' | sort | tail -1)
  [ -n "$crate" ] || { echo "tiny.sh: the netcdf3 crate is not in the cargo registry" >&2; exit 1; }
  collect "$crate" netcdf3
  # Same bytes count once (scipy and xarray both ship example_1.nc).
  declare -A seen
  for f in "$DIR"/files/*; do
    h=$(sha256sum <"$f" | cut -d' ' -f1)
    if [ -n "${seen[$h]:-}" ]; then rm "$f"; else seen[$h]=1; fi
  done
fi
if [ -n "${EXTRA:-}" ]; then
  mkdir -p "$DIR/extra" && rm -f "$DIR"/extra/*
  find "$EXTRA" -type f -size -$((MAX + 1))c -print0 | sort -z | while IFS= read -r -d '' f; do
    if is_nc3 "$f"; then cp "$f" "$DIR/extra/$(echo "${f#"$EXTRA"/}" | tr / _)"; fi
  done
fi
mapfile -t FILES < <(find "$DIR/files" ${EXTRA:+"$DIR/extra"} -type f | sort)
[ ${#FILES[@]} -gt 0 ] || { echo "tiny.sh: no files in $DIR/files" >&2; exit 1; }

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
TOOLS=("nc3pack default" "nc3pack max" "nc3pack full" "nc3pack max full" "xz -6" "zstd -19" "zstd -3")
pack() { # pack TOOL IN OUT
  case $1 in
    "nc3pack default") "$BIN" pack -q -f "$2" "$3" ;;
    "nc3pack max") "$BIN" pack -q -f --level max "$2" "$3" ;;
    "nc3pack full") "$BIN" pack -q -f --no-compact "$2" "$3" ;;
    "nc3pack max full") "$BIN" pack -q -f --no-compact --level max "$2" "$3" ;;
    "xz -6") xz -6 -c -- "$2" >"$3" ;;
    "zstd -19") zstd -q -19 -c -- "$2" >"$3" ;;
    "zstd -3") zstd -q -3 -c -- "$2" >"$3" ;;
  esac
}
declare -A SIZE WINS
total=0 bad=0
rows=()
for f in "${FILES[@]}"; do
  n=$(stat -c %s "$f")
  total=$((total + n))
  row="| $(basename "$f") | $n |"
  best=
  declare -A P=()
  for t in "${TOOLS[@]}"; do
    a=$OUT/archive
    pack "$t" "$f" "$a"
    p=$(stat -c %s "$a")
    if [[ $t == nc3pack* ]]; then
      "$BIN" unpack -q -f "$a" "$OUT/restored.nc"
      cmp -s "$f" "$OUT/restored.nc" || { echo "tiny.sh: $t did not restore $f byte for byte" >&2; bad=$((bad + 1)); }
    fi
    rm -f "$a" "$OUT/restored.nc"
    P[$t]=$p
    SIZE[$t]=$((${SIZE[$t]:-0} + p))
    if [ -z "$best" ] || [ "$p" -lt "$best" ]; then best=$p; fi
    row="$row $p |"
  done
  for t in "${TOOLS[@]}"; do
    if [ "${P[$t]}" -eq "$best" ]; then WINS[$t]=$((${WINS[$t]:-0} + 1)); fi
  done
  rows+=("$row")
done
echo "## Tiny real netCDF-3 files (at most $MAX bytes), packed one by one"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); nc3pack $("$BIN" --version | cut -d' ' -f2) ($(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo ?)); ${#FILES[@]} files, $total bytes"
echo "- nc3pack round trips: $([ $bad -eq 0 ] && echo "all byte-identical" || echo "$bad NOT byte-identical")"
echo
echo "| tool | total bytes | ratio | bytes over xz -6 per file | smallest on |"
echo "|---|---:|---:|---:|---:|"
for t in "${TOOLS[@]}"; do
  echo "| $t | ${SIZE[$t]} | $(awk -v o=$total -v p="${SIZE[$t]}" 'BEGIN { printf "%.3f", o / p }') | $(awk -v a="${SIZE[$t]}" -v x="${SIZE["xz -6"]}" -v n=${#FILES[@]} 'BEGIN { printf "%+.1f", (a - x) / n }') | ${WINS[$t]:-0} of ${#FILES[@]} |"
done
echo
h="| file | bytes |" s="|---|---:|"
for t in "${TOOLS[@]}"; do h="$h $t |" s="$s---:|"; done
echo "$h"
echo "$s"
printf '%s\n' "${rows[@]}"
[ $bad -eq 0 ]
