#!/usr/bin/env bash
# Peer benchmark: nc3pack (default and --level max) against `nccopy -k nc4 -d1 -s`,
# `nccopy -k nc4 -d5 -s`, Zarr v3 (pcodec; Blosc zstd 5 shuffle), HDF5 with Blosc2 (zstd 5
# shuffle), `zstd -3`, `zstd -19` and `xz -6` on a generated corpus (bench/make_corpus.py):
# ratio, pack time, unpack time and peak RSS per tool and file, a batch of 10,000 tiny files,
# optionally a CDF-5 file over 4 GiB (--big), then PASS/FAIL per target.
#
#   bench/compare.sh [CORPUS_DIR] [--big]        (default CORPUS_DIR: target/bench-corpus)
#
# Needs: cargo, python3 with numpy, netCDF4, zarr (3.x), numcodecs, pcodec, h5py and hdf5plugin
# ($PYTHON, default python3), and the Debian packages netcdf-bin (nccopy), zstd, xz-utils and
# time (/usr/bin/time). hyperfine is not needed: the script times each run itself, so that wall
# time and peak RSS (/usr/bin/time -f %M) come from the same run. NC3PACK_BIN=path benchmarks
# that binary instead of building one.
#
# Method: warm page cache (the corpus was just written or read), outputs on the corpus file
# system. Wall time is the median of 3 runs for inputs under 200 MB, except that a command
# whose first run takes under $SHORT_S seconds (default 0.5) is run 9 times (on a shared
# machine, a 0.1 s run varies by 10-20 % from run to run) and one whose first run takes over
# $SLOW_S seconds (default 10) is run once; inputs of 200 MB or more are run once. nc3pack
# runs with its defaults (-j = all cores); zstd with -T2, xz with -T1 (single-threaded: xz's
# multi-threaded mode splits the input into blocks and loses ratio).
# "unpack" restores a netCDF-3 file: nc3pack unpack, `nccopy -k <original kind>`, zstd -d,
# xz -d; "exact" says whether the restored file is byte-identical to the original (cmp). The
# Zarr and HDF5 peers (bench/peers.py; ~1 MiB chunks like nc3pack's blocks) write one file per
# input and cannot restore a netCDF-3 file: their "unpack" reads every variable back into memory
# and "exact" says "values" when every variable's values hash the same as the original's.
# The full report is printed and written to CORPUS_DIR/report.md.
set -euo pipefail

usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CORPUS="" BIG=0
for a in "$@"; do
  case $a in
    --big) BIG=1 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "compare.sh: unknown option $a" >&2; usage >&2; exit 2 ;;
    *) [ -z "$CORPUS" ] || { echo "compare.sh: one CORPUS_DIR only" >&2; exit 2; }; CORPUS=$a ;;
  esac
done
CORPUS=${CORPUS:-$ROOT/target/bench-corpus}
SLOW_S=${SLOW_S:-10}
SHORT_S=${SHORT_S:-0.5}
SHORT_RUNS=9
T0=$(date +%s)

say() { echo "compare.sh: $*" >&2; }

# ---- requirements ---------------------------------------------------------------------------
missing=()
command -v nccopy >/dev/null || missing+=(netcdf-bin)
command -v zstd >/dev/null || missing+=(zstd)
command -v xz >/dev/null || missing+=(xz-utils)
[ -x /usr/bin/time ] || missing+=(time)
if [ ${#missing[@]} -gt 0 ]; then
  echo "compare.sh: missing Debian packages: ${missing[*]}" >&2
  echo "  install with: apt-get install -y ${missing[*]}" >&2
  exit 1
fi
command -v cargo >/dev/null || { echo "compare.sh: needs cargo (the Rust toolchain)" >&2; exit 1; }
PYTHON=${PYTHON:-python3}
"$PYTHON" -c 'import numpy, netCDF4, zarr, numcodecs, pcodec, h5py, hdf5plugin' 2>/dev/null || {
  echo "compare.sh: needs $PYTHON with numpy, netCDF4, zarr, numcodecs, pcodec, h5py and hdf5plugin:" >&2
  echo "  pip install numpy netCDF4 zarr numcodecs pcodec h5py hdf5plugin (or set PYTHON=...)" >&2
  exit 1
}
PEERS=$ROOT/bench/peers.py

# ---- build and corpus -----------------------------------------------------------------------
if [ -n "${NC3PACK_BIN:-}" ]; then
  BIN=$(realpath "$NC3PACK_BIN")
else
  say "building nc3pack (cargo build --release)"
  (cd "$ROOT" && cargo build --release -q)
  BIN=$ROOT/target/release/nc3pack
fi
mkdir -p "$CORPUS"
CORPUS=$(cd "$CORPUS" && pwd)

free_kb() { df -Pk "$1" | awk 'NR==2{print $4}'; }
if [ $BIG = 1 ]; then
  need=$((10 << 20)) # KiB: restored copy + archive + zstd output of a 4 GiB file
  [ -f "$CORPUS/big5.nc" ] || need=$((need + (5 << 20)))
  if [ "$(free_kb "$CORPUS")" -lt $need ]; then
    say "--big needs about $((need >> 20)) GiB free on $CORPUS; only $(($(free_kb "$CORPUS") >> 20)) GiB: skipping big5"
    BIG=0 BIG_SKIPPED="not enough disk space"
  fi
fi
say "generating the corpus in $CORPUS (reused when present)"
"$PYTHON" "$ROOT/bench/make_corpus.py" "$CORPUS" $([ $BIG = 1 ] && echo --big)

OUT=$CORPUS/out
rm -rf "$OUT"
mkdir -p "$OUT"
TIMEF=$OUT/.time ERRF=$OUT/.stderr
REPORT=$CORPUS/report.md
: >"$REPORT"
out() { printf '%s\n' "$*" | tee -a "$REPORT"; }

# ---- timing helpers -------------------------------------------------------------------------
# timed CMD...: runs CMD under /usr/bin/time; sets T (wall seconds) and M (peak RSS, KiB).
timed() {
  local s e rc=0
  s=$(date +%s%N)
  /usr/bin/time -f %M -o "$TIMEF" "$@" >/dev/null 2>"$ERRF" || rc=$?
  e=$(date +%s%N)
  T=$(awk -v a="$s" -v b="$e" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
  M=$(tail -n 1 "$TIMEF")
  [[ $M =~ ^[0-9]+$ ]] || M=0
  return $rc
}

# repeat RUNS OUTFILE CMD...: up to RUNS runs (OUTFILE removed before each; one run only when
# the first is slower than SLOW_S, SHORT_RUNS when RUNS > 1 and the first is faster than
# SHORT_S); sets MED (median seconds), RSS (max KiB), NRUN.
repeat() {
  local runs=$1 outf=$2 i rss=0
  shift 2
  local ts=()
  for ((i = 1; i <= runs; i++)); do
    rm -f "$outf"
    if ! timed "$@"; then
      say "FAILED: $* :: $(tail -n 3 "$ERRF" | tr '\n' ' ')"
      return 1
    fi
    ts+=("$T")
    ((M > rss)) && rss=$M
    ((i == 1)) && awk -v t="$T" -v s="$SLOW_S" 'BEGIN { exit !(t > s) }' && break
    ((i == 1 && runs > 1)) && awk -v t="$T" -v s="$SHORT_S" 'BEGIN { exit !(t < s) }' && runs=$SHORT_RUNS
  done
  NRUN=${#ts[@]}
  MED=$(printf '%s\n' "${ts[@]}" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
  RSS=$rss
}

size_of() { stat -L -c %s "$1"; }
mib() { awk -v k="$1" 'BEGIN { printf "%.0f", k / 1024 }'; }
f2() { awk -v x="$1" 'BEGIN { printf "%.2f", x }'; }
f3() { awk -v x="$1" 'BEGIN { printf "%.3f", x }'; }
commas() { echo "$1" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta'; }

# netCDF-3 kind of a file, as nccopy -k spells it.
kind_of() {
  case $(head -c 4 "$1" | od -An -tu1 | awk '{ print $4 }') in
    1) echo classic ;;
    2) echo "64-bit offset" ;;
    5) echo cdf5 ;;
    *) echo unknown ;;
  esac
}
label_of() {
  case $1 in classic) echo "CDF-1 (classic)" ;; "64-bit offset") echo "CDF-2 (64-bit offset)" ;; cdf5) echo "CDF-5 (64-bit data)" ;; *) echo "?" ;; esac
}

ZPCO="Zarr v3 pcodec" ZBLOSC="Zarr v3 Blosc zstd5 shuffle" H5B2="HDF5 Blosc2 zstd5 shuffle"
TOOLS=("nc3pack default" "nc3pack default, from a pipe" "nc3pack max" "nccopy -k nc4 -d1 -s" "nccopy -k nc4 -d5 -s"
  "$ZPCO" "$ZBLOSC" "$H5B2" "zstd -3 -T2" "zstd -19 -T2" "xz -6 -T1")
ext_of() {
  case $1 in nc3pack*) echo nc3z ;; nccopy*) echo nc4 ;; Zarr*pcodec) echo pco.zarr.zip ;; Zarr*) echo blosc.zarr.zip ;;
    HDF5*) echo h5 ;; zstd*) echo zst ;; xz*) echo xz ;; esac
}
# peer_of TOOL: bench/peers.py's name for a Zarr/HDF5 tool.
peer_of() {
  case $1 in "$ZPCO") echo zarr-pcodec ;; "$ZBLOSC") echo zarr-blosc ;; "$H5B2") echo hdf5-blosc2 ;; esac
}
# pack_cmd TOOL IN OUT / unpack_cmd TOOL ARCHIVE RESTORED KIND: set the array CMD.
pack_cmd() {
  case $1 in
    "nc3pack default") CMD=("$BIN" pack -q -f "$2" "$3") ;;
    "nc3pack default, from a pipe") CMD=(sh -c 'cat -- "$1" | exec "$2" pack -q -f - "$3"' sh "$2" "$BIN" "$3") ;;
    "nc3pack max") CMD=("$BIN" pack -q -f --level max "$2" "$3") ;;
    "nccopy -k nc4 -d1 -s") CMD=(nccopy -k nc4 -d1 -s "$2" "$3") ;;
    "nccopy -k nc4 -d5 -s") CMD=(nccopy -k nc4 -d5 -s "$2" "$3") ;;
    "zstd -3 -T2") CMD=(zstd -q -f -3 -T2 "$2" -o "$3") ;;
    "zstd -19 -T2") CMD=(zstd -q -f -19 -T2 "$2" -o "$3") ;;
    "xz -6 -T1") CMD=(sh -c 'exec xz -6 -T1 -c -- "$1" >"$2"' sh "$2" "$3") ;;
    Zarr* | HDF5*) CMD=("$PYTHON" "$PEERS" pack "$(peer_of "$1")" "$2" "$3") ;;
  esac
}
unpack_cmd() {
  case $1 in
    nc3pack*) CMD=("$BIN" unpack -q -f "$2" "$3") ;;
    nccopy*) CMD=(nccopy -k "$4" "$2" "$3") ;;
    zstd*) CMD=(zstd -q -f -d "$2" -o "$3") ;;
    xz*) CMD=(sh -c 'exec xz -d -T1 -c -- "$1" >"$2"' sh "$2" "$3") ;;
    Zarr* | HDF5*) CMD=("$PYTHON" "$PEERS" digest "$(peer_of "$1")" "$2" "$3") ;;
  esac
}

declare -A RATIO PACK UNPACK PRSS URSS EXACT SIZE ORIG
ERRORS=0

# bench_file FILE TOOL...: measures each TOOL on FILE, prints the table.
bench_file() {
  local f=$1 name base orig kind runs tool a r start
  shift
  start=$(date +%s)
  name=$(basename "$f")
  base=${name%.nc}
  orig=$(size_of "$f")
  ORIG[$base]=$orig
  kind=$(kind_of "$f")
  runs=3
  [ "$orig" -ge 200000000 ] && runs=1
  out ""
  out "### $name — $(commas "$orig") bytes, $(label_of "$kind")"
  out ""
  out "| tool | ratio | pack s | unpack s | pack peak RSS MiB | unpack peak RSS MiB | exact | runs |"
  out "|---|---:|---:|---:|---:|---:|:-:|:-:|"
  for tool in "$@"; do
    a=$OUT/$base.$(ext_of "$tool")
    r=$OUT/$base.restored.nc
    say "$name: $tool: pack"
    pack_cmd "$tool" "$f" "$a"
    if ! repeat $runs "$a" "${CMD[@]}"; then
      out "| $tool | error | | | | | | |"
      continue
    fi
    local pmed=$MED prss=$RSS pn=$NRUN psize
    psize=$(size_of "$a")
    say "$name: $tool: unpack"
    unpack_cmd "$tool" "$a" "$r" "$kind"
    local umed="error" urss=0 un=0 exact="?"
    if repeat $runs "$r" "${CMD[@]}"; then
      umed=$MED urss=$RSS un=$NRUN
      if [[ $tool == Zarr* || $tool == HDF5* ]]; then
        # The peers restore values, not a netCDF-3 file: compare digests of the values.
        [ -s "$OUT/$base.digest" ] || "$PYTHON" "$PEERS" digest nc "$f" "$OUT/$base.digest"
        if cmp -s "$OUT/$base.digest" "$r"; then exact=values; else exact=no; fi
      elif cmp -s "$f" "$r"; then exact=yes; else exact=no; fi
    fi
    if [[ $tool == nc3pack* && $exact != yes ]]; then
      say "ERROR: $tool did not restore $name byte for byte"
      ERRORS=$((ERRORS + 1))
    fi
    rm -f "$r"
    local key="$base|$tool"
    SIZE[$key]=$psize
    RATIO[$key]=$(awk -v o="$orig" -v p="$psize" 'BEGIN { printf "%.3f", o / p }')
    PACK[$key]=$pmed UNPACK[$key]=$umed PRSS[$key]=$prss URSS[$key]=$urss EXACT[$key]=$exact
    out "| $tool | ${RATIO[$key]} | $(f2 "$pmed") | $([ "$umed" = error ] && echo error || f2 "$umed") | $(mib "$prss") | $(mib "$urss") | $exact | $pn/$un |"
    # Keep nc3pack archives (small, useful to inspect); drop the peers' outputs.
    [[ $tool == nc3pack* ]] || rm -f "$a"
  done
  out ""
  out "($name: $(($(date +%s) - start)) s of benchmarking.)"
}

# ---- report header --------------------------------------------------------------------------
cpu=$(lscpu 2>/dev/null | awk -F: '/Model name/ { gsub(/^ +/, "", $2); print $2; exit }')
mem=$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)
fs=$(df -PT "$CORPUS" | awk 'NR==2 { print $2 }')
rev=$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo "?")
dirty=$(cd "$ROOT" && git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo " + uncommitted changes" || true)
ncver=$(nc-config --version 2>/dev/null || ncdump 2>&1 | awk '/library version/ { print "netCDF " $4 }')
out "## nc3pack peer benchmark"
out ""
out "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
out "- machine: ${cpu:-unknown CPU}, $(nproc) cores visible, $mem RAM, Linux $(uname -r), corpus on $fs; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
out "- nc3pack $rev$dirty (release build, -j $(nproc)); $ncver (nccopy); $(zstd --version | sed 's/^\*\*\* //; s/, by.*//'); $(xz --version | head -1)"
out "- method: warm page cache; wall time = median of 3 runs for inputs < 200 MB (${SHORT_RUNS} runs when the first run takes < ${SHORT_S} s; 1 run when it takes > ${SLOW_S} s, and for inputs ≥ 200 MB); peak RSS = max of /usr/bin/time %M over the runs; ratio = original bytes / packed bytes; unpack restores a netCDF-3 file (nccopy: \`-k\` the original kind); exact = restored file byte-identical (cmp); runs = pack/unpack runs."
out "- zstd runs with -T2, xz with -T1 (single-threaded), nc3pack with all cores; nc3pack fsyncs its output before renaming it into place, the other tools do not."
out "- Zarr v3 / HDF5 (bench/peers.py, $("$PYTHON" -c 'import zarr, numcodecs, pcodec, h5py, hdf5plugin; from importlib.metadata import version as v; print(", ".join(f"{m} {v(m)}" for m in ("zarr", "numcodecs", "pcodec", "h5py", "hdf5plugin")))' 2>/dev/null)): one Python process per run (its start-up and netCDF4 reading of the input included in the time); chunks of ~1 MiB (whole trailing dimensions, the leading ones cut), as nc3pack's blocks; Zarr in one uncompressed zip file (ZipStore); Zarr pcodec = numcodecs' PCodec level 8 for 16/32/64-bit variables, Blosc zstd 5 shuffle for 1-byte ones (char stored as uint8); unpack = read every variable back, exact = \`values\` when all values hash as the original's."

# ---- the corpus files -----------------------------------------------------------------------
FILES=(gridded topo points numeric mesh)
for f in "${FILES[@]}"; do
  bench_file "$CORPUS/$f.nc" "${TOOLS[@]}"
done

# ---- ratios side by side -------------------------------------------------------------------
out ""
out "### Ratios side by side"
out ""
hdr="| tool |" sep="|---|"
for f in "${FILES[@]}"; do hdr="$hdr $f.nc |" sep="$sep---:|"; done
out "$hdr corpus |"
out "$sep---:|"
for tool in "${TOOLS[@]}"; do
  row="| $tool |" o=0 p=0 ok=1
  for f in "${FILES[@]}"; do
    k="$f|$tool"
    row="$row ${RATIO[$k]:-error} |"
    if [ -n "${SIZE[$k]:-}" ]; then so=${ORIG[$f]} sp=${SIZE[$k]}; o=$((o + so)) p=$((p + sp)); else ok=0; fi
  done
  out "$row $([ $ok = 1 ] && awk -v o="$o" -v p="$p" 'BEGIN { printf "%.3f", o / p }' || echo error) |"
done
out ""
out "(corpus = total original bytes / total packed bytes over the ${#FILES[@]} files.)"

# ---- what nc3pack chose ---------------------------------------------------------------------
# `nc3pack info` counts the blocks by codec and filter, for the whole archive and per variable.
out ""
out "### nc3pack's choices: blocks by codec+filter (from \`nc3pack info\`)"
out ""
out "| file | preset | whole archive | per variable (ratio, blocks by codec+filter) |"
out "|---|---|---|---|"
for f in "${FILES[@]}"; do
  for preset in default max; do
    # bench_file left the last nc3pack tool's archive, "nc3pack max", in $OUT/$f.nc3z.
    a=$OUT/$f.nc3z
    if [ $preset = default ]; then
      a=$OUT/$f.default.nc3z
      "$BIN" pack -q -f "$CORPUS/$f.nc" "$a" 2>/dev/null || continue
    fi
    [ -f "$a" ] || continue
    info=$("$BIN" info "$a" 2>/dev/null) || continue
    whole=$(printf '%s\n' "$info" | sed -n 's|^// blocks by codec+filter: ||p')
    # Per-variable lines: "//   NAME: N blocks of B, RAW -> STORED (RATIO), {COUNTS}".
    vars=$(printf '%s\n' "$info" | sed -n 's|^//   \([^(][^:]*\): [0-9]* blocks of [0-9]*, [0-9]* -> [0-9]* (\([0-9.]*\)), \(.*\)$|\1 \2 \3|p' |
      awk '{ n = $1; r = $2; $1 = ""; $2 = ""; sub(/^  /, ""); printf "%s%s %s %s", (NR > 1 ? "; " : ""), n, r, $0 }')
    out "| $f.nc | $preset | \`$whole\` | ${vars//|/\\|} |"
  done
done

# ---- tiny files -----------------------------------------------------------------------------
TINY=$CORPUS/tiny
tstart=$(date +%s)
ntiny=$(find "$TINY" -maxdepth 1 -name '*.nc' | wc -l)
tiny_in=$(find "$TINY" -maxdepth 1 -name '*.nc' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
TOUT=$OUT/tiny
if "$BIN" pack --help 2>/dev/null | grep -qE -- '(^|[[:space:],])-o[,[:space:]]|--output-dir'; then
  BATCH=1 mode="nc3pack pack -o (batch mode)"
else
  BATCH=0 mode="nc3pack pack, one process per file (shell loop: no batch mode in this build)"
fi
say "tiny: $ntiny files: $mode"
tiny_ok=1
# Every run (of either tool) writes into a new directory, and the outputs are deleted only after
# all runs: on ext4, creating files soon after deleting thousands of others is several times
# slower (the allocator skips recently deleted inodes), which would measure the filesystem.
rm -rf "$TOUT" "$TOUT".? "$OUT"/tiny-zstd "$OUT"/tiny-zstd.?
if [ $BATCH = 1 ]; then
  tiny_run() { timed "$BIN" pack -q -o "$TOUT.$1" "$TINY"; }
else
  tiny_run() {
    mkdir -p "$TOUT.$1"
    timed sh -c 'for f in "$1"/*.nc; do "$2" pack -q -f "$f" "$3/${f##*/}.nc3z" || exit 1; done' sh "$TINY" "$BIN" "$TOUT.$1"
  }
fi
tts=() trss=0
for i in 1 2 3; do
  if ! tiny_run $i; then
    say "FAILED: tiny batch :: $(tail -n 3 "$ERRF" | tr '\n' ' ')"
    tiny_ok=0
    break
  fi
  tts+=("$T")
  ((M > trss)) && trss=$M
  ((i == 1)) && awk -v t="$T" -v s="$SLOW_S" 'BEGIN { exit !(t > s) }' && break
done
mv "$TOUT.1" "$TOUT" 2>/dev/null
if [ $tiny_ok = 1 ]; then
  tmed=$(printf '%s\n' "${tts[@]}" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
  narch=$(find "$TOUT" -name '*.nc3z' | wc -l)
  tiny_out=$(find "$TOUT" -name '*.nc3z' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
  tiny_fps=$(awk -v n="$ntiny" -v t="$tmed" 'BEGIN { printf "%.0f", n / t }')
  [ "$narch" -eq "$ntiny" ] || { say "ERROR: $narch archives for $ntiny tiny files"; tiny_ok=0; ERRORS=$((ERRORS + 1)); }
fi
# Reference: zstd -3 compressing the same files one by one, in one process.
ZOUT=$OUT/tiny-zstd
zts=() zrss=0
for i in 1 2 3; do
  mkdir -p "$ZOUT.$i"
  timed sh -c 'exec zstd -q -3 -T2 --output-dir-flat "$2" "$1"/*.nc' sh "$TINY" "$ZOUT.$i" || break
  zts+=("$T")
  ((M > zrss)) && zrss=$M
done
mv "$ZOUT.1" "$ZOUT" 2>/dev/null
rm -rf "$TOUT".? "$ZOUT".?
zmed=$(printf '%s\n' "${zts[@]:-0}" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
zout=$(find "$ZOUT" -name '*.zst' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')

out ""
tiny_range=$(find "$TINY" -maxdepth 1 -name '*.nc' -printf '%s\n' | sort -n |
  awk '{ a[NR] = $1 } END { printf "%d B to %.1f KB, median %.1f KB", a[1], a[NR] / 1000, a[int((NR + 1) / 2)] / 1000 }')
out "### tiny/ — $(commas "$ntiny") files, $(commas "$tiny_in") bytes (CDF-1, $tiny_range)"
out ""
out "| tool | files/s | total s | packed bytes | ratio | peak RSS MiB | runs |"
out "|---|---:|---:|---:|---:|---:|:-:|"
if [ $tiny_ok = 1 ]; then
  out "| $mode | $tiny_fps | $(f2 "$tmed") | $(commas "$tiny_out") | $(awk -v a="$tiny_in" -v b="$tiny_out" 'BEGIN { printf "%.3f", a / b }') | $(mib "$trss") | ${#tts[@]} |"
else
  out "| $mode | error | | | | | |"
fi
if [ "${#zts[@]}" -gt 0 ] && [ "$zout" -gt 0 ]; then
  out "| zstd -3 -T2, one process, one .zst per file (reference, no random access) | $(awk -v n="$ntiny" -v t="$zmed" 'BEGIN { printf "%.0f", n / t }') | $(f2 "$zmed") | $(commas "$zout") | $(awk -v a="$tiny_in" -v b="$zout" 'BEGIN { printf "%.3f", a / b }') | $(mib "$zrss") | ${#zts[@]} |"
fi
if [ $tiny_ok = 1 ]; then
  # Per-file overhead on the smallest inputs, and a round-trip check of a sample.
  out ""
  out "Per-file overhead (archive − original) of the 5 smallest files; mean over all files: $(awk -v a="$tiny_in" -v b="$tiny_out" -v n="$ntiny" 'BEGIN { printf "%+.0f", (b - a) / n }') bytes."
  out ""
  out "| file | original | nc3pack archive | overhead | zstd -3 file |"
  out "|---|---:|---:|---:|---:|"
  while read -r sz path; do
    nm=$(basename "$path")
    arch=$(find "$TOUT" -name "$nm.nc3z" -o -name "${nm%.nc}.nc3z" | head -n 1)
    asz=$(size_of "$arch")
    zsz=$(size_of "$ZOUT/$nm.zst" 2>/dev/null || echo "?")
    out "| $nm | $sz | $asz | $(printf '%+d' $((asz - sz))) | $zsz |"
  done < <(find "$TINY" -maxdepth 1 -name '*.nc' -printf '%s %p\n' | sort -n | head -n 5)
  bad=0
  while read -r path; do
    nm=$(basename "$path")
    arch=$(find "$TOUT" -name "$nm.nc3z" -o -name "${nm%.nc}.nc3z" | head -n 1)
    "$BIN" unpack -q -f "$arch" "$OUT/tiny.restored.nc" && cmp -s "$path" "$OUT/tiny.restored.nc" || bad=$((bad + 1))
  done < <(find "$TINY" -maxdepth 1 -name '*.nc' | sort | awk 'NR % 500 == 1')
  rm -f "$OUT/tiny.restored.nc"
  out ""
  out "Round trip of 20 sampled tiny archives: $([ $bad = 0 ] && echo "all byte-identical" || echo "$bad NOT byte-identical")."
  [ $bad = 0 ] || ERRORS=$((ERRORS + 1))
fi
rm -rf "$ZOUT"
out ""
out "(tiny/: $(($(date +%s) - tstart)) s of benchmarking.)"

# ---- the 4 GiB CDF-5 file -------------------------------------------------------------------
if [ $BIG = 1 ]; then
  bench_file "$CORPUS/big5.nc" "nc3pack default" "nc3pack default, from a pipe" "zstd -3 -T2"
  rm -f "$OUT/big5.nc3z"
fi

# ---- targets --------------------------------------------------------------------------------
PASSN=0 FAILN=0 SKIPN=0
verdict() { # verdict OK|FAIL|SKIP TEXT
  case $1 in
    1) out "- PASS — $2"; PASSN=$((PASSN + 1)) ;;
    0) out "- FAIL — $2"; FAILN=$((FAILN + 1)) ;;
    *) out "- SKIP — $2"; SKIPN=$((SKIPN + 1)) ;;
  esac
}
have() { [ -n "${RATIO[$1]:-}" ] && [ -n "${RATIO[$2]:-}" ]; }
# ratio_target FILE FACTOR PEER: default ratio >= FACTOR x PEER's ratio
ratio_target() {
  local d="$1|$4" p="$1|$3" ok
  if ! have "$d" "$p"; then verdict skip "$4 ratio ≥ $2 × \`$3\` on $1.nc: a run failed"; return; fi
  ok=$(awk -v a="${RATIO[$d]}" -v b="${RATIO[$p]}" -v k="$2" 'BEGIN { print (a >= k * b) ? 1 : 0 }')
  if [ "$2" = 1 ]; then
    verdict "$ok" "$4 ratio ≥ \`$3\` on $1.nc: ${RATIO[$d]} vs ${RATIO[$p]}"
  else
    verdict "$ok" "$4 ratio ≥ $2 × \`$3\` on $1.nc: ${RATIO[$d]} vs $2 × ${RATIO[$p]} = $(awk -v b="${RATIO[$p]}" -v k="$2" 'BEGIN { printf "%.3f", k * b }')"
  fi
}
# time_target FILE FACTOR PEER: default pack time <= FACTOR x PEER's pack time
time_target() {
  local d="$1|nc3pack default" p="$1|$3" ok
  if ! have "$d" "$p"; then verdict skip "pack time ≤ $2 × \`$3\` on $1.nc: a run failed"; return; fi
  ok=$(awk -v a="${PACK[$d]}" -v b="${PACK[$p]}" -v k="$2" 'BEGIN { print (a <= k * b) ? 1 : 0 }')
  verdict "$ok" "default pack time ≤ $2 × \`$3\` on $1.nc: $(f3 "${PACK[$d]}") s vs $2 × $(f3 "${PACK[$p]}") = $(awk -v b="${PACK[$p]}" -v k="$2" 'BEGIN { printf "%.3f", k * b }') s ($(awk -v a="${PACK[$d]}" -v b="${PACK[$p]}" 'BEGIN { printf "%.3g", a / b }') ×)"
}
out ""
out "### Targets"
out ""
ratio_target gridded 1.05 "nccopy -k nc4 -d5 -s" "nc3pack default"
ratio_target points 2 "nccopy -k nc4 -d5 -s" "nc3pack default"
time_target gridded 0.5 "nccopy -k nc4 -d1 -s"
time_target points 0.1 "nccopy -k nc4 -d1 -s"
for f in "${FILES[@]}"; do time_target $f 1.5 "zstd -3 -T2"; done
# The numeric-codec targets (issue 15): default ≥ 1.10 × the best of nccopy -d5 -s and Zarr
# Blosc per file and ≥ Zarr pcodec over the corpus; max ≥ 1.05 × xz -6 and ≥ 1.05 × Zarr pcodec
# per file, packing in at most xz -6's time.
for f in "${FILES[@]}"; do
  a="$f|nccopy -k nc4 -d5 -s" b="$f|$ZBLOSC"
  if have "$a" "$b"; then
    best=$(awk -v x="${RATIO[$a]}" -v y="${RATIO[$b]}" 'BEGIN { print (x >= y) ? 0 : 1 }')
    if [ "$best" = 0 ]; then ratio_target $f 1.10 "nccopy -k nc4 -d5 -s" "nc3pack default"; else ratio_target $f 1.10 "$ZBLOSC" "nc3pack default"; fi
  else
    verdict skip "nc3pack default ratio ≥ 1.10 × the best of nccopy -d5 -s and $ZBLOSC on $f.nc: a run failed"
  fi
done
# corpus_ratio TOOL: total original bytes / total packed bytes over FILES (empty if a run failed).
corpus_ratio() {
  local f o=0 p=0
  for f in "${FILES[@]}"; do
    local k="$f|$1"
    [ -n "${SIZE[$k]:-}" ] || return 0
    local so=${ORIG[$f]} sp=${SIZE[$k]}
    o=$((o + so)) p=$((p + sp))
  done
  awk -v o="$o" -v p="$p" 'BEGIN { printf "%.3f", o / p }'
}
cd_=$(corpus_ratio "nc3pack default") cz=$(corpus_ratio "$ZPCO")
if [ -n "$cd_" ] && [ -n "$cz" ]; then
  verdict "$(awk -v a="$cd_" -v b="$cz" 'BEGIN { print (a >= b) ? 1 : 0 }')" "nc3pack default ratio ≥ \`$ZPCO\` over the corpus (${FILES[*]}): $cd_ vs $cz"
else
  verdict skip "nc3pack default ratio ≥ \`$ZPCO\` over the corpus: a run failed"
fi
for f in "${FILES[@]}"; do ratio_target $f 1.05 "xz -6 -T1" "nc3pack max"; done
for f in "${FILES[@]}"; do ratio_target $f 1.05 "$ZPCO" "nc3pack max"; done
for f in "${FILES[@]}"; do
  d="$f|nc3pack max" p="$f|xz -6 -T1"
  if ! have "$d" "$p"; then verdict skip "max pack time ≤ \`xz -6 -T1\` on $f.nc: a run failed"; continue; fi
  verdict "$(awk -v a="${PACK[$d]}" -v b="${PACK[$p]}" 'BEGIN { print (a <= b) ? 1 : 0 }')" "max pack time ≤ \`xz -6 -T1\` on $f.nc: $(f2 "${PACK[$d]}") s vs $(f2 "${PACK[$p]}") s"
done
if [ -n "${PRSS[big5|nc3pack default]:-}" ]; then
  ok=$(awk -v m="${PRSS[big5|nc3pack default]}" 'BEGIN { print (m <= 256 * 1024) ? 1 : 0 }')
  verdict "$ok" "peak RSS packing the $(awk -v s="$(size_of "$CORPUS/big5.nc")" 'BEGIN { printf "%.2f", s / 2^30 }') GiB CDF-5 file ≤ 256 MiB: $(mib "${PRSS[big5|nc3pack default]}") MiB"
else
  verdict skip "peak RSS packing a 4 GiB CDF-5 file ≤ 256 MiB: ${BIG_SKIPPED:-run with --big}"
fi
if [ -n "${PRSS[big5|nc3pack default, from a pipe]:-}" ]; then
  ok=$(awk -v m="${PRSS[big5|nc3pack default, from a pipe]}" 'BEGIN { print (m <= 256 * 1024) ? 1 : 0 }')
  verdict "$ok" "peak RSS packing the same file from a pipe ≤ 256 MiB: $(mib "${PRSS[big5|nc3pack default, from a pipe]}") MiB"
fi
if [ $tiny_ok = 1 ]; then
  ok=$(awk -v r="$tiny_fps" 'BEGIN { print (r >= 2000) ? 1 : 0 }')
  verdict "$ok" "batch of $(commas "$ntiny") tiny files ≥ 2,000 files/s: $tiny_fps files/s ($([ $BATCH = 1 ] && echo "batch mode" || echo "shell loop, no batch mode"))"
else
  verdict 0 "batch of $(commas "$ntiny") tiny files ≥ 2,000 files/s: the run failed"
fi
out ""
out "Targets checked by the other scripts (too long to run here):"
out "- \`bench/reads.py\`: whole-variable \`slice\` ≥ \`unpack\` of the same archive and ≥ 3 × \`zstd -d\`'s speed; unpack to a file ≥ 1.5 × \`zstd -d\` to a file; a cold open + one value ≤ 1.5 × the original's time; a 100-value time series with 64 KiB blocks ≤ 3 × the original's; packing with 64 KiB blocks ≤ 1.5 × the default pack time; one pack process per tiny file ≤ 1.5 × \`zstd -3\`'s."
out "- \`bench/tiny.sh\`: over real netCDF-3 files of at most 16 KiB, nc3pack's total ≤ \`xz -6\`'s."
out "- \`bench/plugin.sh\`: through netCDF-C, a full-variable read of an archive ≥ 0.7 × the original's speed and faster than an \`nccopy -k nc4 -d5 -s\` copy's; \`nccopy -k classic\` of an archive ≤ 1.5 × the original's time."
out ""
out "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min; above $(nproc) means the benchmark shared the cores)."
out ""
out "$PASSN passed, $FAILN failed, $SKIPN skipped. nc3pack round trips: $([ $ERRORS = 0 ] && echo "all byte-identical" || echo "$ERRORS ERRORS"). Total benchmark time $(($(date +%s) - T0)) s."
say "report written to $REPORT"
[ $ERRORS = 0 ]
