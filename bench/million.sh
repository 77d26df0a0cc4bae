#!/usr/bin/env bash
# A collection of up to a million small netCDF-3 files: packed by shards in parallel, by a dask
# cluster, by shards killed at random and rerun, rerun with everything done, verified; peak RSS
# of every process (of the dask workers, not the client). One Markdown table per size, then the
# targets.
#
#   bench/million.sh [DIR] [SIZES...]          # default: /work/million 10000 100000 1000000
#
# For each size N: bench/make_million.py writes N files (1-64 KiB, a model's output tree) into
# DIR/in-N (kept for the next run of the script only with KEEP_INPUTS=1; a tree already there
# is reused), checks 30 of them with ncdump, then
#   a. pack: SHARDS (default 2) `nc3pack pack -q -j 1 --shard I/SHARDS` processes in parallel;
#   b. pack: nc3pack.dask.pack_collection on a dask LocalCluster of SHARDS worker processes of
#      one thread each (the cluster's start is not counted; the workers' peak RSS is read from
#      /proc/PID/status after resetting it through /proc/PID/clear_refs);
#   c. pack: SHARDS shard processes getting KILLS SIGKILLs at random moments (default 20 at
#      10^6, 20 * sqrt(N / 10^6) below, at least 3), each killed shard run again until all are
#      done; then every input must have exactly one `packed` line across the manifests, no
#      `.nc3pack-*.part` must be left, and `verify --manifest` must pass;
#   d. rerun of (a) with everything done (files/s of each process: its share / its seconds);
#   e. `verify --manifest` of (a), one process on all cores;
#   f. at N = 100,000 only (S3_SIZES to change): pack into a local s3s-fs server's bucket by
#      SHARDS shards, rerun, and `verify --manifest s3://...` (reads every object back).
# STEPS=abcdef (the default) runs them all; a subset, e.g. STEPS=b, runs those steps again on
# the inputs of an earlier run (KEEP_INPUTS=1) and takes the other figures from its results.
# Each size's outputs are deleted after its runs (they stay until then: ext4 creates files
# slower for minutes after many were deleted, which would charge a run for an earlier one's
# deletions). Disk: at 10^6 about 7 GB of inputs and three runs' archives of about 4 GB each.
#
# Needs GNU time (/usr/bin/time), bc, curl, the Python of
# target/pyvenv (numpy, netCDF4, dask.distributed, nc3pack; PYTHON= to change), ncdump, a
# release build (NC3PACK=, default target/release/nc3pack, copied into DIR first: another
# build may replace it meanwhile), and for (f) s3s-fs (cargo install s3s-fs --version 0.14.1
# --features binary). Everything it starts is stopped on exit, and every wait is bounded
# (LIMIT seconds a run, default 600 + N / 200).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DIR=${1:-/work/million}
if [ $# -gt 1 ]; then
    shift
    SIZES=("$@")
else
    SIZES=(10000 100000 1000000)
fi
PY=${PYTHON:-$here/../target/pyvenv/bin/python}
SHARDS=${SHARDS:-2}
S3_SIZES=${S3_SIZES:-100000}
S3S=${S3S:-$(command -v s3s-fs || echo "$HOME/.cargo/bin/s3s-fs")}
STEPS=${STEPS:-abcdef} # a subset (e.g. STEPS=b) reruns those steps of each size and keeps
step() { [[ $STEPS == *$1* ]]; } # the figures of the others from its last run
mkdir -p "$DIR/results"
NC3="$DIR/nc3pack"
cp "${NC3PACK:-$here/../target/release/nc3pack}" "$NC3.tmp" && mv "$NC3.tmp" "$NC3"
work=$(mktemp -d "$DIR/work.XXXXXX")
server=""
# Every process started is stopped on exit: each bounded run's `timeout` (the leader of its
# own process group: its group is killed) has a file $work/g.PID while it runs, each loop of
# (c) a file $work/loop.PID, each shard of (c) its PID in $work/pid.I.
cleanup() {
    local f
    for f in "$work"/loop.*; do [ -e "$f" ] && { kill -KILL "${f##*.}" 2>/dev/null || true; }; done
    for f in "$work"/pid.*; do [ -e "$f" ] && { kill -KILL "$(cat "$f")" 2>/dev/null || true; }; done
    for f in "$work"/g.*; do [ -e "$f" ] && { kill -TERM -- "-${f##*.}" 2>/dev/null || true; }; done
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
    rm -rf "$work"
    return 0
}
trap cleanup EXIT
# Runs a command under `timeout LIMIT` (which kills its whole process group when the time is
# up), recorded for the trap; returns its exit status.
bounded() {
    local limit=$1 p rc=0
    shift
    timeout "$limit" "$@" &
    p=$!
    : >"$work/g.$p"
    wait "$p" || rc=$?
    rm -f "$work/g.$p"
    return "$rc"
}
trap 'exit 130' INT TERM

now() { date +%s.%N; }
calc() { echo "$*" | bc -l; }
fmt0() { printf "%.0f" "$1"; }
mib() { echo $(($1 / 1024)); }
commit=$(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)
mem_gib=$(awk '/MemTotal/ {printf "%.0f", $2 / 1048576}' /proc/meminfo)
machine="$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), ${mem_gib} GiB, $(uname -sr)"
echo "machine: $machine; checkout $commit, $("$NC3" --version 2>/dev/null | head -1) built $(date -u -r "${NC3PACK:-$here/../target/release/nc3pack}" '+%Y-%m-%d %H:%M UTC'); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# Runs SHARDS shard processes of `nc3pack pack` in parallel (extra arguments after the
# output); prints "wall max_seconds min_seconds max_rss_kib cpu_seconds" (CPU: user + system,
# summed over the processes: steadier than wall time on a shared machine).
shards() {
    local out=$1 limit=$2 i t0 t1
    shift 2
    t0=$(now)
    for ((i = 0; i < SHARDS; i++)); do
        (
            s0=$(now)
            rc=0
            bounded "$limit" /usr/bin/time -f "%M %U %S" -o "$work/rss.$i" \
                "$NC3" pack -q -j 1 --shard "$i/$SHARDS" "$@" -o "$out" >"$work/log.$i" 2>&1 || rc=$?
            echo "$(calc "$(now) - $s0") $rc" >"$work/sec.$i"
        ) &
    done
    wait
    t1=$(now)
    local smax=0 smin=999999 rss=0 cpu=0 s rc r u y
    for ((i = 0; i < SHARDS; i++)); do
        read -r s rc <"$work/sec.$i"
        if [ "$rc" -ne 0 ]; then
            echo "shard $i/$SHARDS failed (exit $rc):" >&2
            tail -5 "$work/log.$i" >&2
            return 1
        fi
        read -r r u y < <(tail -1 "$work/rss.$i")
        cpu=$(calc "$cpu + $u + $y")
        smax=$(calc "if ($s > $smax) $s else $smax")
        smin=$(calc "if ($s < $smin) $s else $smin")
        rss=$((r > rss ? r : rss))
    done
    echo "$(calc "$t1 - $t0") $smax $smin $rss $cpu"
}

# The dask run: prints "seconds worker_peak_kib worker_start_kib startup_seconds cpu_seconds"
# (the workers' CPU, user + system, during the packing).
dask_pack() {
    local in=$1 out=$2 n=$3 limit=$4
    cat >"$work/dask_pack.py" <<'EOF'
import resource
import sys
import time

from dask.distributed import Client, LocalCluster

import nc3pack

SOURCE = ""
try:
    import nc3pack.dask
except ImportError:
    # Not installed yet: the checkout's python/nc3pack/dask.py, over the installed
    # package (its native module), in this process and in every worker.
    SOURCE = sys.argv[6]
    nc3pack.__path__.append(SOURCE)
    import nc3pack.dask


def from_source(source: str) -> None:
    import nc3pack

    if source not in nc3pack.__path__:
        nc3pack.__path__.append(source)


def status() -> dict[str, int]:
    d = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                d[k] = int(v.split()[0])
    ru = resource.getrusage(resource.RUSAGE_SELF)
    d["cpu"] = ru.ru_utime + ru.ru_stime
    return d


def reset() -> dict[str, int]:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM, the peak RSS, to the current RSS
    return status()


if __name__ == "__main__":
    inp, out, workers, n, shards = sys.argv[1:6]
    nshards = int(shards) if shards else nc3pack.dask.SHARES_PER_THREAD * int(workers)
    t0 = time.monotonic()
    with (
        LocalCluster(
            n_workers=int(workers),
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
        ) as cluster,
        Client(cluster) as client,
    ):
        startup = time.monotonic() - t0
        if SOURCE:
            client.run(from_source, SOURCE)
        before = client.run(reset)
        t1 = time.monotonic()
        r = nc3pack.dask.pack_collection(client, [inp], out, shards=nshards, threads=1)
        dt = time.monotonic() - t1
        after = client.run(status)
    if not r.ok or r.packed != int(n):
        sys.exit(f"dask: packed {r.packed} of {n}, {len(r.failures)} failures")
    peak = max(v["VmHWM"] for v in after.values())
    start = max(v["VmRSS"] for v in before.values())
    cpu = sum(after[w]["cpu"] - before[w]["cpu"] for w in after)
    where = "source" if SOURCE else "installed"
    print(f"{dt} {peak} {start} {startup} {cpu} {nshards} {where}")
EOF
    bounded "$limit" "$PY" "$work/dask_pack.py" "$in" "$out" "$SHARDS" "$n" "${DASK_SHARDS:-}" \
        "$here/../python/nc3pack"
}

# Reads every manifest of OUT: prints "inputs once missing twice extra failed" where once is
# the number of inputs with exactly one `packed` line, twice those with more.
packed_once() {
    local in=$1 out=$2
    "$PY" - "$in" "$out" <<'EOF'
import collections
import json
import os
import sys

root, out = sys.argv[1:3]
names = set()
for d, dirs, files in os.walk(root):
    dirs[:] = [x for x in dirs if not x.startswith(".")]
    rel = os.path.relpath(d, root)
    for f in files:
        if not f.startswith("."):
            names.add(f if rel == "." else f"{rel}/{f}")
count: collections.Counter[str] = collections.Counter()
failed = 0
mdir = os.path.join(out, ".nc3pack")
for m in os.listdir(mdir):
    if not m.endswith(".jsonl"):
        continue
    with open(os.path.join(mdir, m), "rb") as f:
        for line in f:
            try:
                o = json.loads(line)
            except ValueError:
                continue  # a line cut short by a kill
            name = bytes.fromhex(o["name_hex"]).decode() if "name_hex" in o else o["name"]
            if o.get("status") == "packed":
                count[name] += 1
            elif o.get("status") == "failed":
                failed += 1
once = sum(1 for x in names if count[x] == 1)
missing = sum(1 for x in names if count[x] == 0)
twice = sum(1 for x in names if count[x] > 1)
extra = sum(1 for x in count if x not in names)
print(len(names), once, missing, twice, extra, failed)
EOF
}

# (c): SHARDS shard loops, each rerunning its shard until it exits 0; KILLS SIGKILLs at random
# moments (uniform, mean `mean` seconds apart) to a running shard. Prints "seconds landed runs".
killed_run() {
    local in=$1 out=$2 kills=$3 mean=$4 limit=$5 i t0
    rm -f "$work"/done.* "$work"/pid.* "$work"/runs.*
    t0=$(now)
    for ((i = 0; i < SHARDS; i++)); do
        (
            : >"$work/loop.$BASHPID"
            runs=0
            while :; do
                runs=$((runs + 1))
                echo "$runs" >"$work/runs.$i"
                rc=0
                (
                    echo "$BASHPID" >"$work/pid.$i"
                    exec "$NC3" pack -q -j 1 --shard "$i/$SHARDS" "$in" -o "$out" >>"$work/klog.$i" 2>&1
                ) || rc=$?
                rm -f "$work/pid.$i"
                [ "$rc" -eq 0 ] && break
                [ "$rc" -eq 137 ] || { echo "shard $i exited $rc" >>"$work/klog.$i"; break; }
            done
            echo "$rc" >"$work/done.$i"
            rm -f "$work/loop.$BASHPID"
        ) 2>>"$work/kloop.$i" & # (bash's "Killed" lines go there)
    done
    local landed=0 deadline p alive pick
    deadline=$(calc "$(now) + $limit")
    while :; do
        alive=()
        for ((i = 0; i < SHARDS; i++)); do [ -e "$work/done.$i" ] || alive+=("$i"); done
        [ ${#alive[@]} -gt 0 ] || break
        if [ "$(calc "$(now) > $deadline")" -eq 1 ]; then
            echo "kills: not done after $limit s" >&2
            return 1
        fi
        if [ "$landed" -lt "$kills" ]; then
            sleep "$(calc "$mean * (0.2 + 1.6 * $RANDOM / 32767)")"
            pick=${alive[$((RANDOM % ${#alive[@]}))]}
            p=$(cat "$work/pid.$pick" 2>/dev/null || true)
            if [ -n "$p" ] && kill -KILL "$p" 2>/dev/null; then landed=$((landed + 1)); fi
        else
            sleep 0.2
        fi
    done
    wait
    local runs=0 rc
    for ((i = 0; i < SHARDS; i++)); do
        rc=$(cat "$work/done.$i")
        if [ "$rc" -ne 0 ]; then
            echo "kills: shard $i failed:" >&2
            tail -5 "$work/klog.$i" >&2
            return 1
        fi
        runs=$((runs + $(cat "$work/runs.$i")))
    done
    echo "$(calc "$(now) - $t0") $landed $runs"
}

start_s3() {
    [ -x "$S3S" ] || { echo "s3s-fs not found (cargo install s3s-fs --version 0.14.1 --features binary)" >&2; return 1; }
    mkdir -p "$work/store/bench"
    local port
    port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$S3S" --host 127.0.0.1 --port "$port" --access-key benchkey --secret-key benchsecret \
        "$work/store" >/dev/null 2>&1 &
    server=$!
    for _ in $(seq 100); do
        curl -s -o /dev/null "http://127.0.0.1:$port/" && break
        sleep 0.1
    done
    curl -s -o /dev/null "http://127.0.0.1:$port/" || { echo "s3s-fs did not start" >&2; return 1; }
    export AWS_ACCESS_KEY_ID=benchkey AWS_SECRET_ACCESS_KEY=benchsecret AWS_REGION=us-east-1
    export AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_ALLOW_HTTP=true
    unset AWS_SESSION_TOKEN NC3PACK_ANON
}
stop_s3() {
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=""
    rm -rf "$work/store"
}

# One timed command: prints "seconds peak_rss_kib cpu_seconds" (exits on failure).
one() {
    local limit=$1 t0 rc=0
    shift
    t0=$(now)
    bounded "$limit" /usr/bin/time -f "%M %U %S" -o "$work/rss" "$NC3" "$@" >"$work/log" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "nc3pack $* failed (exit $rc):" >&2
        tail -5 "$work/log" >&2
        return 1
    fi
    local m u y
    read -r m u y < <(tail -1 "$work/rss")
    echo "$(calc "$(now) - $t0") $m $(calc "$u + $y")"
}

for n in "${SIZES[@]}"; do
    in="$DIR/in-$n"
    res="$DIR/results/$n.env"
    limit=${LIMIT:-$((600 + n / 200))}
    t_a="" rss_a=0 t_b="" rss_b=0 rss_b0=0 up_b=0 t_f="" t_fr="" t_fv="" rss_f=0 rss_fr=0 rss_fv=0
    cpu_a=0 cpu_b=0 cpu_d=0 cpu_e=0 cpu_f=0 cpu_fr=0 cpu_fv=0
    shares_b=0 dask_from="" b_date="" t_gen=0
    if [ "$STEPS" != abcdef ]; then # the other steps' figures from this size's last run
        [ -f "$res" ] || { echo "STEPS=$STEPS: no earlier results in $res" >&2; exit 2; }
        eval "$(cat "$res")"
    fi
    load_now=$(cut -d' ' -f1-3 /proc/loadavg)
    if step a; then load=$load_now; fi # else the load of the run that ran (a)
    echo
    echo "== $n files ($(date -u '+%Y-%m-%d %H:%M UTC'), load average $load_now)" >&2
    made=$(ls "$in"/.complete-"$n"-* 2>/dev/null || true)
    t0=$(now)
    "$PY" "$here/make_million.py" "$n" "$in" --check 30 >&2
    if [ -z "$made" ]; then t_gen=$(calc "$(now) - $t0"); fi
    t_gen=${t_gen:-0}
    read -r files bytes <"$(ls "$in"/.complete-"$n"-*)"
    sync
    find "$in" -type f -name '*.nc' -print0 | xargs -0 cat >/dev/null # the inputs in the page cache

    for o in out-a out-b out-c; do rm -rf "${DIR:?}/$o-$n"; done
    if step a; then
        echo "a. $SHARDS shards" >&2
        r=$(shards "$DIR/out-a-$n" "$limit" "$in")
        read -r t_a _ _ rss_a cpu_a <<<"$r"
        out_bytes=$(find "$DIR/out-a-$n" -name '*.nc3z' -printf '%s\n' | awk '{s += $1} END {printf "%.0f\n", s}')
        sync
    fi

    if ! step b; then
        :
    elif "$PY" -c 'import nc3pack.dask' 2>/dev/null || [ -f "$here/../python/nc3pack/dask.py" ]; then
        echo "b. dask" >&2
        r=$(dask_pack "$in" "$DIR/out-b-$n" "$n" "$limit")
        read -r t_b rss_b rss_b0 up_b cpu_b shares_b dask_from <<<"$r"
        b_date=$(date -u '+%Y-%m-%d %H:%M')
        sync
    else
        echo "b. skipped: nc3pack.dask is not installed in $PY" >&2
        t_b="" rss_b=0 rss_b0=0 up_b=0
    fi

    if step c; then
        kills=${KILLS:-$(fmt0 "$(calc "k = 20 * sqrt($n / 1000000); if (k < 3) 3 else k")")}
        echo "c. $kills kills" >&2
        mean=$(calc "$t_a / ($kills + 2)")
        r=$(killed_run "$in" "$DIR/out-c-$n" "$kills" "$mean" "$limit")
        read -r t_c landed runs <<<"$r"
        r=$(packed_once "$in" "$DIR/out-c-$n")
        read -r c_inputs c_once c_missing c_twice c_extra c_failed <<<"$r"
        c_parts=$(find "$DIR/out-c-$n" -name '.nc3pack-*' | wc -l)
        c_archives=$(find "$DIR/out-c-$n" -name '*.nc3z' | wc -l)
        c_verify=clean
        bounded "$limit" "$NC3" verify --manifest "$DIR/out-c-$n/.nc3pack" >"$work/cverify" 2>&1 || c_verify="FAILED: $(tail -1 "$work/cverify")"
    fi

    if step a && step d; then # (d) and (e) on the archives of (a)
        echo "d. rerun" >&2
        r=$(shards "$DIR/out-a-$n" "$limit" "$in")
        read -r t_d smax_d smin_d rss_d cpu_d <<<"$r"
        rerun_per_proc=$(calc "($n / $SHARDS) / $smax_d")

        echo "e. verify" >&2
        r=$(one "$limit" verify --manifest "$DIR/out-a-$n/.nc3pack")
        read -r t_e rss_e cpu_e <<<"$r"
    fi

    if step f && [[ " $S3_SIZES " == *" $n "* ]]; then
        echo "f. s3" >&2
        start_s3
        mkdir -p "$work/s3here"
        url="s3://bench/million-$n/"
        r=$(cd "$work/s3here" && shards "$url" "$((limit * 4))" "$in")
        read -r t_f _ _ rss_f cpu_f <<<"$r"
        r=$(cd "$work/s3here" && shards "$url" "$((limit * 4))" "$in")
        read -r t_fr _ _ rss_fr cpu_fr <<<"$r"
        objects=$(find "$work/store/bench/million-$n" -name '*.nc3z' | wc -l)
        [ "$objects" -eq "$n" ] || { echo "s3: expected $n objects, found $objects" >&2; exit 1; }
        r=$(one "$((limit * 4))" verify --manifest "$url.nc3pack/")
        read -r t_fv rss_fv cpu_fv <<<"$r"
        stop_s3
        rm -rf "$work/s3here"
    fi

    # The results, for the summary (and for a later run's comparison).
    cat >"$res" <<EOF
n=$n files=$files bytes=$bytes out_bytes=$out_bytes load="$load" date="$(date -u '+%Y-%m-%d %H:%M')"
t_gen=$t_gen t_a=$t_a rss_a=$rss_a t_b=$t_b rss_b=$rss_b rss_b0=$rss_b0 up_b=$up_b b_date="${b_date:-}"
shares_b=${shares_b:-0} dask_from=${dask_from:-}
kills=$kills landed=$landed runs=$runs t_c=$t_c c_inputs=$c_inputs c_once=$c_once c_missing=$c_missing
c_twice=$c_twice c_extra=$c_extra c_failed=$c_failed c_parts=$c_parts c_archives=$c_archives c_verify="$c_verify"
t_d=$t_d smax_d=$smax_d smin_d=$smin_d rss_d=$rss_d rerun_per_proc=$rerun_per_proc t_e=$t_e rss_e=$rss_e
t_f=$t_f t_fr=$t_fr t_fv=$t_fv rss_f=$rss_f rss_fr=$rss_fr rss_fv=$rss_fv
cpu_a=$cpu_a cpu_b=$cpu_b cpu_d=$cpu_d cpu_e=$cpu_e cpu_f=$cpu_f cpu_fr=$cpu_fr cpu_fv=$cpu_fv
EOF
    # shellcheck disable=SC2086
    rate() { fmt0 "$(calc "$n / $1")"; }
    cpus() { if [ "$(calc "$1 > 0")" -eq 1 ]; then printf %.1f "$1"; fi; } # blank: not measured
    echo
    echo "$n files, $(fmt0 "$(calc "$bytes / 1000000")") MB ($(fmt0 "$(calc "$bytes / $n")") bytes on average), packed into $(fmt0 "$(calc "$out_bytes / 1000000")") MB (ratio $(printf %.2f "$(calc "$bytes / $out_bytes")")); $([ "$t_gen" = 0 ] || printf "generated in %.0f s; " "$t_gen")load average at the start of (a) $load"
    echo
    echo "| run ($n files) | seconds | files/s | CPU s | peak RSS a process |"
    echo "|---|---:|---:|---:|---:|"
    printf "| a. pack, %s shards in parallel, -j 1 each | %.1f | %s | %s | %s MiB |\n" "$SHARDS" "$t_a" "$(rate "$t_a")" "$(cpus "$cpu_a")" "$(mib "$rss_a")"
    if [ -n "$t_b" ]; then
        printf "| b. pack, dask LocalCluster, %s workers x 1 thread, %s shares (%.2fx a) | %.1f | %s | %s | %s MiB (%s MiB before) |\n" \
            "$SHARDS" "$shares_b" "$(calc "$t_a / $t_b")" "$t_b" "$(rate "$t_b")" "$(cpus "$cpu_b")" "$(mib "$rss_b")" "$(mib "$rss_b0")"
    else
        echo "| b. pack, dask LocalCluster (nc3pack.dask not installed) | | | | |"
    fi
    printf "| c. pack, %s shards, %s SIGKILLs, each killed shard rerun (%s runs) | %.1f | %s | | |\n" "$SHARDS" "$landed" "$runs" "$t_c" "$(rate "$t_c")"
    printf "| d. rerun, everything done, %s shards (files/s of each process) | %.2f | %s | %s | %s MiB |\n" "$SHARDS" "$smax_d" "$(fmt0 "$rerun_per_proc")" "$(cpus "$cpu_d")" "$(mib "$rss_d")"
    printf "| e. verify --manifest, one process, -j %s | %.1f | %s | %s | %s MiB |\n" "$(nproc)" "$t_e" "$(rate "$t_e")" "$(cpus "$cpu_e")" "$(mib "$rss_e")"
    if [ -n "$t_f" ]; then
        printf "| f. pack -o s3://... (s3s-fs on 127.0.0.1), %s shards | %.1f | %s | %s | %s MiB |\n" "$SHARDS" "$t_f" "$(rate "$t_f")" "$(cpus "$cpu_f")" "$(mib "$rss_f")"
        printf "| f. pack -o s3://..., rerun, everything done | %.1f | %s | %s | %s MiB |\n" "$t_fr" "$(rate "$t_fr")" "$(cpus "$cpu_fr")" "$(mib "$rss_fr")"
        printf "| f. verify --manifest s3://.../.nc3pack/ | %.1f | %s | %s | %s MiB |\n" "$t_fv" "$(rate "$t_fv")" "$(cpus "$cpu_fv")" "$(mib "$rss_fv")"
    fi
    echo
    if [ "$dask_from" = source ]; then
        echo "(b: nc3pack.dask from the checkout's python/nc3pack/dask.py, over the installed package; run $b_date)"
    fi
    echo "kills: $c_once of $c_inputs inputs with exactly one \`packed\` line ($c_missing with none, $c_twice with more, $c_extra names not inputs, $c_failed \`failed\` lines); $c_archives archives; $c_parts temporary files left; verify --manifest: $c_verify"

    for o in out-a out-b out-c; do rm -rf "${DIR:?}/$o-$n"; done
    if [ "${KEEP_INPUTS:-0}" != 1 ]; then rm -rf "$in"; fi
done

# The targets: the largest size of this run against the smallest (10^4 by default).
first=${SIZES[0]} last=${SIZES[-1]}
for s in "${SIZES[@]}"; do
    first=$((s < first ? s : first)) last=$((s > last ? s : last))
done
get() { (eval "$(cat "$DIR/results/$1.env")"; eval "echo \"\${$2:-}\""); }
ok() { if [ "$(calc "$1")" -eq 1 ]; then echo met; else echo "NOT MET"; fi; }
fa=$(calc "$first / $(get "$first" t_a)")
la=$(calc "$last / $(get "$last" t_a)")
ra0=$(get "$first" rss_a) ra1=$(get "$last" rss_a)
rb0=$(get "$first" rss_b) rb1=$(get "$last" rss_b)
tb1=$(get "$last" t_b)
echo
echo "| target ($last files against $first) | value | |"
echo "|---|---|---|"
echo "| files/s at $last >= 0.9x at $first (a) | $(fmt0 "$la") against $(fmt0 "$fa") ($(printf %.2f "$(calc "$la / $fa")")x) | $(ok "$la >= 0.9 * $fa") |"
fca=$(get "$first" cpu_a) lca=$(get "$last" cpu_a)
fca=${fca:-0} lca=${lca:-0}
if [ "$(calc "$fca > 0 && $lca > 0")" -eq 1 ]; then
    fc=$(calc "$first / $fca") lc=$(calc "$last / $lca")
    echo "| the same in files per CPU second (steadier when the machine is shared) | $(fmt0 "$lc") against $(fmt0 "$fc") ($(printf %.2f "$(calc "$lc / $fc")")x) | $(ok "$lc >= 0.9 * $fc") |"
fi
echo "| peak RSS a shard <= 150 MB at $last, within 20 % of $first's (a) | $(mib "$ra1") MiB against $(mib "$ra0") MiB ($(printf %+.0f "$(calc "100 * ($ra1 - $ra0) / $ra0")") %) | $(ok "$ra1 * 1024 <= 150000000 && $ra1 <= 1.2 * $ra0") |"
if [ -n "$tb1" ] && [ "$rb0" -gt 0 ]; then
    echo "| peak RSS a dask worker <= 150 MB at $last, within 20 % of $first's (b) | $(mib "$rb1") MiB against $(mib "$rb0") MiB ($(printf %+.0f "$(calc "100 * ($rb1 - $rb0) / $rb0")") %) | $(ok "$rb1 * 1024 <= 150000000 && $rb1 <= 1.2 * $rb0") |"
    lcb=$(get "$last" cpu_b) lca=$(get "$last" cpu_a)
    lcb=${lcb:-0} lca=${lca:-0}
    cpu_note=""
    if [ "$(calc "$lcb > 0 && $lca > 0")" -eq 1 ]; then
        cpu_note=" (CPU a file: $(printf %.2f "$(calc "$lcb / $lca")")x the shards')"
    fi
    echo "| dask >= 0.9x plain shards at $last (b / a) | $(printf %.2f "$(calc "$(get "$last" t_a) / $tb1")")x$cpu_note | $(ok "$(get "$last" t_a) / $tb1 >= 0.9") |"
else
    echo "| dask >= 0.9x plain shards (b / a) | not run (nc3pack.dask not installed) | |"
fi
for s in "${SIZES[@]}"; do
    r=$(get "$s" rerun_per_proc)
    echo "| rerun >= 50,000 files/s a process at $s (d) | $(fmt0 "$r") | $(ok "$r >= 50000") |"
done
for s in "${SIZES[@]}"; do
    c_ok=$(get "$s" c_once) c_in=$(get "$s" c_inputs) c_p=$(get "$s" c_parts) c_v=$(get "$s" c_verify)
    v="$c_ok of $c_in packed once, $c_p temporaries, verify $c_v, $(get "$s" landed) kills"
    echo "| kills at $s: every input packed once, no temporaries, verify clean (c) | $v | $(ok "$c_ok == $c_in && $c_p == 0 && $([ "$c_v" = clean ] && echo 1 || echo 0)") |"
done
echo
echo "machine: $machine; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
