#!/usr/bin/env bash
# Packing a collection at scale: many tiny files in one tree, packed by one process on all
# cores, by two shards in parallel, and rerun with everything done; peak RSS of each run.
#
#   bench/collection.sh [DIR] [TINY] [COPIES]
#
# Writes TINY (default 2,000) tiny files (0.6-4 KB) with bench/make_corpus.py's generator into
# DIR/tiny (default DIR: /tmp/nc3pack-collection), then a tree DIR/tree of COPIES (default 50)
# copies of them (set00/ ... set49/: 100,000 files), and prints a Markdown table. Needs python3
# with numpy and netCDF4, GNU time (/usr/bin/time), and a release build (cargo build --release).
#
# The cost of the manifest and of resuming is measured by packing the tree (twice, alternating
# with the runs with a manifest; the faster of each pair counts) with the environment variable
# NC3PACK_BENCH_NO_MANIFEST=1, which is for this script only: nc3pack then
# writes no manifest line (and a rerun of such a collection would find nothing recorded). The
# share printed is (pack - pack without manifest) / pack without manifest, in wall time and in
# CPU time (user + system, steadier on a shared machine).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DIR=${1:-/tmp/nc3pack-collection}
TINY=${2:-2000}
COPIES=${3:-50}
NC3PACK=${NC3PACK:-$here/../target/release/nc3pack}
cores=$(nproc)
mkdir -p "$DIR"
if [ ! -d "$DIR/tiny" ]; then
    python3 -c "import sys; sys.path.insert(0, '$here'); import make_corpus as m; m.make_tiny('$DIR/tiny', $TINY)"
fi
if [ ! -d "$DIR/tree" ]; then
    mkdir -p "$DIR/tree.tmp"
    for k in $(seq -w 0 $((COPIES - 1))); do
        cp -r "$DIR/tiny" "$DIR/tree.tmp/set$k"
    done
    mv "$DIR/tree.tmp" "$DIR/tree"
fi
files=$(find "$DIR/tree" -type f | wc -l)
bytes=$(du -sb "$DIR/tree" | cut -f1)
sync

# The tree read once, so that every run finds it in the page cache.
find "$DIR/tree" -type f -exec cat {} + >/dev/null

# Runs a command, prints "seconds peak_rss_kib" (several processes: the largest RSS).
measure() {
    local t0 t1 rss
    t0=$(date +%s.%N)
    rss=$("$@")
    t1=$(date +%s.%N)
    echo "$(echo "$t1 - $t0" | bc) $rss"
}
one() { # one nc3pack process; prints its peak RSS (KiB); its CPU seconds go to $DIR/cpu.$$
    /usr/bin/time -f "%M %U %S" -o "$DIR/rss.$$" "$NC3PACK" "$@" >/dev/null
    awk '{print $2 + $3}' "$DIR/rss.$$" >"$DIR/cpu.$$"
    cut -d' ' -f1 "$DIR/rss.$$"
}
two_shards() { # two shards in parallel, one core each
    /usr/bin/time -f %M -o "$DIR/rss0.$$" "$NC3PACK" pack -q -j $((cores / 2 > 0 ? cores / 2 : 1)) \
        --shard 0/2 "$DIR/tree" -o "$DIR/out-shards" &
    /usr/bin/time -f %M -o "$DIR/rss1.$$" "$NC3PACK" pack -q -j $((cores / 2 > 0 ? cores / 2 : 1)) \
        --shard 1/2 "$DIR/tree" -o "$DIR/out-shards" &
    wait
    sort -n "$DIR/rss0.$$" "$DIR/rss1.$$" | tail -1
}

# Every run writes into its own new directory, and nothing is deleted until the end: ext4
# allocates inodes several times slower for minutes after many files were deleted (its
# `recently_deleted` check), which would charge one run for the deletions of another.
outs="out-bare1 out-pack1 out-bare2 out-pack2 out-shards out-tenth"
for o in $outs; do
    if [ -e "$DIR/$o" ]; then
        echo "note: removing $DIR/$o of an earlier run; the runs below may be slowed by it (ext4)" >&2
        rm -rf "${DIR:?}/$o"
    fi
done
# Without and with the manifest, alternating, twice each; the faster run of each counts (wall
# and CPU apart), so that a burst of load on a shared machine does not decide the comparison.
min() { echo "if ($1 < $2) $1 else $2" | bc -l; }
t_bare=999999 cpu_bare=999999 t_pack=999999 cpu_pack=999999
for round in 1 2; do
    read -r t rss_bare < <(NC3PACK_BENCH_NO_MANIFEST=1 measure one pack -q "$DIR/tree" -o "$DIR/out-bare$round")
    t_bare=$(min "$t" "$t_bare") cpu_bare=$(min "$(cat "$DIR/cpu.$$")" "$cpu_bare")
    sync
    read -r t rss_pack < <(measure one pack -q "$DIR/tree" -o "$DIR/out-pack$round")
    t_pack=$(min "$t" "$t_pack") cpu_pack=$(min "$(cat "$DIR/cpu.$$")" "$cpu_pack")
    sync
done
# Reruns with everything done: three, the fastest counts (as for the packs above); each
# appends its short `skipped` lines to the manifest, as reruns do.
manifest_packed=$(du -cb "$DIR/out-pack2/.nc3pack"/*.jsonl | tail -1 | cut -f1)
t_rerun=999999 rss_rerun=0
for round in 1 2 3; do
    read -r t rss < <(measure one pack -q "$DIR/tree" -o "$DIR/out-pack2")
    t_rerun=$(min "$t" "$t_rerun") rss_rerun=$((rss > rss_rerun ? rss : rss_rerun))
done
read -r t_shard rss_shard < <(measure two_shards)
sync
read -r t_verify rss_verify < <(measure one verify --manifest "$DIR/out-pack2/.nc3pack")
# Memory with a tenth of the files: RSS should not grow with the number of files (beyond the
# list and the manifest records, ~100 bytes a file plus the paths).
small=$(ls "$DIR/tree" | head -n $(( (COPIES + 9) / 10 )) | sed "s|^|$DIR/tree/|")
# shellcheck disable=SC2086
read -r t_small rss_small < <(measure one pack -q $small -o "$DIR/out-tenth")
small_files=$(find "$DIR/out-tenth" -name '*.nc3z' | wc -l)
out_bytes=$(find "$DIR/out-pack2" -name '*.nc3z' -printf '%s\n' | awk '{s += $1} END {print s}')
manifest_rerun=$(( ($(du -cb "$DIR/out-pack2/.nc3pack"/*.jsonl | tail -1 | cut -f1) - manifest_packed) / 3 ))
rm -f "$DIR"/rss*.$$ "$DIR"/cpu.$$

rate() { echo "scale=0; $files / $1" | bc; }
echo
echo "$files files, $bytes bytes in, $out_bytes out (ratio $(echo "scale=2; $bytes / $out_bytes" | bc)); $cores cores; manifest $manifest_packed bytes after packing, $manifest_rerun more a rerun"
echo
echo "| run | seconds | files/s | peak RSS |"
echo "|---|---:|---:|---:|"
printf "| pack, one process, -j %s | %.1f | %s | %s MiB |\n" "$cores" "$t_pack" "$(rate "$t_pack")" $((rss_pack / 1024))
printf "| pack, one process, no manifest (bench only) | %.1f | %s | %s MiB |\n" "$t_bare" "$(rate "$t_bare")" $((rss_bare / 1024))
printf "| pack, 2 shards in parallel, -j %s each | %.1f | %s | %s MiB |\n" $((cores / 2 > 0 ? cores / 2 : 1)) "$t_shard" "$(rate "$t_shard")" $((rss_shard / 1024))
printf "| rerun, everything done (fastest of 3) | %.2f | %s | %s MiB |\n" "$t_rerun" "$(rate "$t_rerun")" $((rss_rerun / 1024))
printf "| verify --manifest | %.1f | %s | %s MiB |\n" "$t_verify" "$(rate "$t_verify")" $((rss_verify / 1024))
printf "| pack, %s files (a tenth) | %.1f | %s | %s MiB |\n" "$small_files" "$t_small" "$(echo "scale=0; $small_files / $t_small" | bc)" $((rss_small / 1024))
echo
printf "rerun %.0fx faster than the first run\n" "$(echo "$t_pack / $t_rerun" | bc -l)"
printf "manifest and resume: %+.1f %% of the packing time without them (wall), %+.1f %% (CPU: %.1f s against %.1f s)\n" \
    "$(echo "100 * ($t_pack - $t_bare) / $t_bare" | bc -l)" \
    "$(echo "100 * ($cpu_pack - $cpu_bare) / $cpu_bare" | bc -l)" "$cpu_pack" "$cpu_bare"
# The outputs (several times the tree) go; the tree stays for the next run.
for o in $outs; do rm -rf "${DIR:?}/$o"; done
