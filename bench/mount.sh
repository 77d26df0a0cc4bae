#!/usr/bin/env bash
# nc3pack mount against the other ways of reading the same bytes: a cold sequential read of a
# mounted file (`cat > /dev/null`, a fresh mount and the page cache dropped) against
# `nc3pack unpack - > /dev/null` of the same archive (page cache dropped too), and a warm
# re-read of the mounted file (from the kernel's page cache, kept across opens) against `cat` of
# the original from the page cache. Prints a markdown table: best of RUNS (default 3) runs, and
# the mount's own count of read requests (their mean size) and blocks decoded.
#
# Needs root (FUSE mount, and /proc/sys/vm/drop_caches; without the latter, "cold" means the
# archive is in the page cache), fusermount3 (apt-get install fuse3), and python3 with numpy and
# netCDF4 to make the data (bench/make_t2m.py; the test venv target/pyvenv has them).
# RECORDS (default 60: a 250 MB original) sets its size.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${NC3PACK_BENCH_DIR:-target/bench-data}
runs=${RUNS:-3}
records=${RECORDS:-60}
command -v fusermount3 >/dev/null || { echo "needs fusermount3 (apt-get install fuse3)" >&2; exit 1; }
mkdir -p "$dir/mount-archives" "$dir/mnt"
nc=$dir/t2m_$records.nc
py=target/pyvenv/bin/python
[ -x "$py" ] || py=python3
[ -f "$nc" ] || "$py" bench/make_t2m.py "$nc" --records "$records"
cargo build --release -q
bin=target/release/nc3pack
z=$dir/mount-archives/t2m.nc.nc3z
[ "$z" -nt "$nc" ] && [ "$z" -nt "$bin" ] || "$bin" pack -q -f "$nc" "$z"
mnt=$dir/mnt
log=$dir/mount.log

drop() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true; }
now() { date +%s.%N; }
mount_it() {
    "$bin" mount "$dir/mount-archives" "$mnt" --stats 2>"$log" &
    pid=$!
    for _ in $(seq 200); do mountpoint -q "$mnt" && return; sleep 0.05; done
    echo "not mounted:" >&2; cat "$log" >&2; exit 1
}
unmount_it() { fusermount3 -u "$mnt"; wait "$pid" || true; }
trap 'mountpoint -q "$mnt" && fusermount3 -u -z "$mnt"; true' EXIT

best() { sort -g | head -1; }
cold=() unpack=() warm=() orig=()
for _ in $(seq "$runs"); do
    mount_it
    drop
    t0=$(now); cat "$mnt/t2m.nc" > /dev/null; t1=$(now)
    cold+=("$(echo "$t1 - $t0" | bc -l)")
    t0=$(now); cat "$mnt/t2m.nc" > /dev/null; t1=$(now)
    warm+=("$(echo "$t1 - $t0" | bc -l)")
    unmount_it
    stats=$(grep 'read requests' "$log" || true)
    drop
    t0=$(now); "$bin" unpack -q "$z" - > /dev/null; t1=$(now)
    unpack+=("$(echo "$t1 - $t0" | bc -l)")
    cat "$nc" > /dev/null
    t0=$(now); cat "$nc" > /dev/null; t1=$(now)
    orig+=("$(echo "$t1 - $t0" | bc -l)")
done
size=$(stat -c %s "$nc")
c=$(printf '%s\n' "${cold[@]}" | best)
u=$(printf '%s\n' "${unpack[@]}" | best)
w=$(printf '%s\n' "${warm[@]}" | best)
o=$(printf '%s\n' "${orig[@]}" | best)
mbs() { echo "scale=0; $size / $1 / 1000000" | bc -l; }
echo "$(nproc) cores; $(basename "$nc"), $((size / 1000000)) MB, archive $(($(stat -c %s "$z") / 1000000)) MB; best of $runs"
echo
echo "| read | s | MB/s | ratio (target) |"
echo "|---|---:|---:|---|"
printf '| cold `cat` of the mounted file | %.3f | %s | %.2fx unpack (>= 0.8) |\n' "$c" "$(mbs "$c")" "$(echo "$u / $c" | bc -l)"
printf '| `nc3pack unpack - > /dev/null` | %.3f | %s | |\n' "$u" "$(mbs "$u")"
printf '| warm re-read of the mounted file | %.3f | %s | %.2fx the original (>= 0.7) |\n' "$w" "$(mbs "$w")" "$(echo "$o / $w" | bc -l)"
printf '| `cat` of the original, page cache | %.3f | %s | |\n' "$o" "$(mbs "$o")"
echo
echo "last cold run's mount: ${stats#nc3pack mount: }"
