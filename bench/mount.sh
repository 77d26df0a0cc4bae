#!/usr/bin/env bash
# nc3pack mount against the other ways of reading the same bytes, one run side by side. Prints
# a markdown table with each figure's target:
# - a cold sequential read of a mounted file (`cat > /dev/null`, a fresh mount and the page
#   cache dropped) against `nc3pack unpack - > /dev/null` of the same archive (page cache
#   dropped too), and a warm re-read of the mounted file (from the kernel's page cache, kept
#   across opens) against `cat` of the original from the page cache; best of RUNS (default 3);
#   the mount's own count of read requests (their mean size) and blocks decoded per block;
# - a full `ncdump` of a mounted file against `ncdump` of the original, and `cdo timmean` of a
#   file of 24 record variables the same way, each cold (a fresh mount, the page cache dropped
#   before each run; best of RUNS);
# - two concurrent cold readers of different mounted files against one;
# - the mount's peak resident memory while 8 readers read random ranges of 4 files for SOAK
#   seconds (default 60) with a cache of 256 MiB (each range's pages dropped after it is read,
#   so that every read reaches the mount);
# - `ls -l` of a fresh mount of 1,000 archives.
#
# Needs root (FUSE mount, and /proc/sys/vm/drop_caches; without the latter, "cold" means the
# archive is in the page cache), fusermount3 (apt-get install fuse3), ncdump (netcdf-bin), cdo,
# bc, and python3 with numpy and netCDF4 to make the data (bench/make_t2m.py and
# bench/make_records.py; the test venv target/pyvenv has them). RECORDS (default 60: a 250 MB
# original) sets the size of the file read sequentially.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${NC3PACK_BENCH_DIR:-target/bench-data}
runs=${RUNS:-3}
records=${RECORDS:-60}
soak=${SOAK:-60}
for tool in fusermount3 ncdump cdo bc; do
    command -v "$tool" >/dev/null || { echo "needs $tool (apt-get install fuse3 netcdf-bin cdo bc)" >&2; exit 1; }
done
py=target/pyvenv/bin/python
[ -x "$py" ] || py=python3
arch=$dir/mount-archives
many=$dir/mount-many
mnt=$dir/mnt
mkdir -p "$arch" "$many" "$mnt"
nc=$dir/t2m_$records.nc
rec=$dir/records_24x120.nc
small=$dir/records_24x24.nc
[ -f "$nc" ] || "$py" bench/make_t2m.py "$nc" --records "$records"
[ -f "$rec" ] || "$py" bench/make_records.py "$rec" --records 120
[ -f "$small" ] || "$py" bench/make_records.py "$small" --records 24
cargo build --release -q
bin=target/release/nc3pack
# The archives the mount shows: t2m.nc (and a copy, t2m_b.nc), rec.nc, small.nc.
packed() { [ "$2" -nt "$1" ] && [ "$2" -nt "$bin" ] || "$bin" pack -q -f "$1" "$2"; }
z=$arch/t2m.nc.nc3z
packed "$nc" "$z"
[ "$arch/t2m_b.nc.nc3z" -nt "$z" ] || cp "$z" "$arch/t2m_b.nc.nc3z"
packed "$rec" "$arch/rec.nc.nc3z"
packed "$small" "$arch/small.nc.nc3z"
if [ ! -f "$many/0999.nc.nc3z" ]; then
    "$bin" pack -q -f samples/obs_points.nc "$many/0000.nc.nc3z"
    for i in $(seq -f %04g 1 999); do cp "$many/0000.nc.nc3z" "$many/$i.nc.nc3z"; done
fi
log=$dir/mount.log
home=$(mktemp -d)
trap 'mountpoint -q "$mnt" && fusermount3 -u -z "$mnt"; rm -rf "$home"; true' EXIT

drop() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true; }
now() { date +%s.%N; }
# mount_it DIR [FLAGS...]: a fresh mount of DIR on $mnt; its pid in $pid.
mount_it() {
    local d=$1
    shift
    "$bin" mount "$d" "$mnt" --stats "$@" 2>"$log" &
    pid=$!
    for _ in $(seq 200); do mountpoint -q "$mnt" && return; sleep 0.05; done
    echo "not mounted:" >&2; cat "$log" >&2; exit 1
}
unmount_it() { fusermount3 -u "$mnt"; wait "$pid" || true; }
# timed CMD...: runs CMD, prints its seconds.
timed() { local t0 t1; t0=$(now); "$@"; t1=$(now); echo "$t1 - $t0" | bc -l; }
best() { sort -g | head -1; }
# netCDF-C's tools without the plugin: no LD_PRELOAD, a HOME without an .ncrc.
nc_tool() { env -u LD_PRELOAD HOME="$home" "$@"; }
catnull() { cat "$1" > /dev/null; }
# cpu_of PID: the CPU seconds (user and system) process PID has used so far.
tick=$(getconf CLK_TCK)
cpu_of() { awk -v t="$tick" '{printf "%.3f", ($14 + $15) / t}' "/proc/$1/stat"; }
# cpu CMD...: runs CMD, prints the CPU seconds (user and system) it and its children used.
cpu() { local TIMEFORMAT='%U %S'; { time "$@" 2>/dev/null; } 2>&1 | awk '{printf "%.3f", $1 + $2}'; }
ncdumpnull() { nc_tool ncdump "$1" > /dev/null; }
timmean() { nc_tool cdo -s -O timmean "$1" "$home/timmean.nc"; }
unpacknull() { "$bin" unpack -q "$1" - > /dev/null; }

cold=() unpack=() warm=() orig=() dump_m=() dump_o=() cdo_m=() cdo_o=() cpu_m=() cpu_u=()
for _ in $(seq "$runs"); do
    mount_it "$arch"
    drop
    cold+=("$(timed catnull "$mnt/t2m.nc")")
    warm+=("$(timed catnull "$mnt/t2m.nc")")
    unmount_it
    stats=$(grep 'read requests' "$log" || true)
    drop
    unpack+=("$(timed unpacknull "$z")")
    # The CPU a cold read costs: the mount's and cat's, against unpack's (a run of its own,
    # so that the timed runs above are not slowed by the accounting).
    mount_it "$arch"
    drop
    m0=$(cpu_of "$pid")
    c_cat=$(cpu catnull "$mnt/t2m.nc")
    cpu_m+=("$(echo "$(cpu_of "$pid") - $m0 + $c_cat" | bc -l)")
    unmount_it
    drop
    cpu_u+=("$(cpu unpacknull "$z")")
    cat "$nc" > /dev/null
    orig+=("$(timed catnull "$nc")")

    mount_it "$arch"
    drop
    dump_m+=("$(timed ncdumpnull "$mnt/small.nc")")
    drop
    cdo_m+=("$(timed timmean "$mnt/rec.nc")")
    unmount_it
    drop
    dump_o+=("$(timed ncdumpnull "$small")")
    drop
    cdo_o+=("$(timed timmean "$rec")")
done

# Two cold readers of different files at once against one.
mount_it "$arch"
drop
one=$(timed catnull "$mnt/t2m.nc")
unmount_it
two_readers() { catnull "$mnt/t2m.nc" & catnull "$mnt/t2m_b.nc" & wait; }
mount_it "$arch"
drop
two=$(timed two_readers)
unmount_it

# 8 readers for $soak seconds, the mount's resident memory sampled every 0.2 s.
cache_mib=256
mount_it "$arch" --cache "${cache_mib}MiB"
drop
"$py" - "$soak" "$mnt/t2m.nc" "$mnt/t2m_b.nc" "$mnt/rec.nc" "$mnt/small.nc" <<'PY' &
import os, random, sys, threading, time
secs, files = float(sys.argv[1]), sys.argv[2:]
end = time.monotonic() + secs
total = [0] * 8
def reader(k: int) -> None:
    rng = random.Random(k)
    fds = [os.open(f, os.O_RDONLY) for f in files]
    sizes = [os.fstat(fd).st_size for fd in fds]
    while time.monotonic() < end:
        i = rng.randrange(len(fds))
        n = rng.choice([4096, 65536, 1 << 20, 4 << 20])
        off = rng.randrange(max(1, sizes[i] - n))
        total[k] += len(os.pread(fds[i], n, off))
        os.posix_fadvise(fds[i], off, n, os.POSIX_FADV_DONTNEED)
threads = [threading.Thread(target=reader, args=(k,)) for k in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print(sum(total))
PY
readers=$!
peak=0
while kill -0 "$readers" 2>/dev/null; do
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    [ "${rss:-0}" -gt "$peak" ] && peak=$rss
    sleep 0.2
done
wait "$readers"
unmount_it
soak_stats=$(grep 'read requests' "$log" || true)

# ls -l of 1,000 archives, a fresh mount.
mount_it "$many"
lsnull() { ls -l "$1" > /dev/null; }
ls_t=$(timed lsnull "$mnt")
listed=$(ls "$mnt" | wc -l)
unmount_it

size=$(stat -c %s "$nc")
blocks=$("$bin" info "$z" | sed -n 's/.* \([0-9]*\) blocks, original.*/\1/p')
pick() { printf '%s\n' "$@" | best; }
c=$(pick "${cold[@]}") u=$(pick "${unpack[@]}") w=$(pick "${warm[@]}") o=$(pick "${orig[@]}")
cpm=$(pick "${cpu_m[@]}") cpu_=$(pick "${cpu_u[@]}")
dm=$(pick "${dump_m[@]}") do_=$(pick "${dump_o[@]}") cm=$(pick "${cdo_m[@]}") co=$(pick "${cdo_o[@]}")
mbs() { echo "scale=0; $size / $1 / 1000000" | bc -l; }
decoded=$(sed -n 's/.* \([0-9]*\) blocks decoded.*/\1/p' <<<"$stats")
mean=$(sed -n 's/.*mean \([0-9]*\) KiB.*/\1/p' <<<"$stats")
echo "$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg); best of $runs"
echo "$(basename "$nc"): $((size / 1000000)) MB, archive $(($(stat -c %s "$z") / 1000000)) MB, $blocks blocks;" \
    "$(basename "$rec") and $(basename "$small"): 24 record variables, $(($(stat -c %s "$rec") / 1000000)) and $(($(stat -c %s "$small") / 1000000)) MB"
echo
echo "| what | mount | other | ratio | target |"
echo "|---|---:|---:|---:|---|"
printf '| cold `cat` of the mounted file / `nc3pack unpack - > /dev/null` (s) | %.3f | %.3f | %.2fx the speed | >= 0.8x |\n' "$c" "$u" "$(echo "$u / $c" | bc -l)"
printf '| CPU of a cold read: mount and `cat` / `unpack` (s) | %.3f | %.3f | %.2fx the CPU | (bounds the above on busy cores) |\n' "$cpm" "$cpu_" "$(echo "$cpu_ / $cpm" | bc -l)"
printf '| warm re-read / `cat` of the original, page cache (s) | %.3f | %.3f | %.2fx the speed | >= 0.7x |\n' "$w" "$o" "$(echo "$o / $w" | bc -l)"
printf '| full `ncdump` of %s / of the original, cold (s) | %.2f | %.2f | %.2fx the time | <= 1.5x |\n' "$(basename "$small")" "$dm" "$do_" "$(echo "$dm / $do_" | bc -l)"
printf '| `cdo timmean` of %s / of the original, cold (s) | %.2f | %.2f | %.2fx the time | <= 2x |\n' "$(basename "$rec")" "$cm" "$co" "$(echo "$cm / $co" | bc -l)"
printf '| blocks decoded per block, cold `cat` | %s / %s | | %.2f | <= 1.1 |\n' "$decoded" "$blocks" "$(echo "$decoded / $blocks" | bc -l)"
printf '| mean read request, cold `cat` (KiB) | %s | | | >= 128 |\n' "$mean"
printf '| two cold readers of different files / one (s) | %.3f | %.3f | %.2fx the throughput | >= 1.6x |\n' "$two" "$one" "$(echo "2 * $one / $two" | bc -l)"
printf '| peak RSS, 8 readers for %s s, cache %s MiB (MiB) | %s | | | <= %s |\n' "$soak" "$cache_mib" "$((peak / 1024))" "$((cache_mib + 64))"
printf '| `ls -l` of %s archives, fresh mount (s) | %.3f | | | < 1 |\n' "$listed" "$ls_t"
echo
echo "cold cat: $(mbs "$c") MB/s, unpack: $(mbs "$u") MB/s; the mount in the last cold run: ${stats#nc3pack mount: }"
echo "the soak: ${soak_stats#nc3pack mount: }"
