#!/usr/bin/env bash
# Packing a collection into a bucket, next to packing the same files into a directory: N tiny
# files packed by one process on all cores into a local s3s-fs server (started on 127.0.0.1
# by this script, and stopped at its end), and into a directory; each rerun with everything
# done; seconds, files/s and peak RSS of each.
#
#   bench/collection_s3.sh [DIR] [N]
#
# Uses the tiny files (0.6-4 KB) of DIR/tiny, written by bench/collection.sh's generator when
# missing (default DIR: /tmp/nc3pack-collection; TINY=2000 of them), copied into a tree
# DIR/tree-s3 of N files (default 10,000; N/TINY copies, set0/ ... set4/). Needs `s3s-fs`
# (`cargo install s3s-fs --version 0.14.1 --features binary`, found on PATH or in
# ~/.cargo/bin), GNU time (/usr/bin/time), curl, and a release build with the remote feature
# (cargo build --release). The server runs on the same cores as nc3pack and stores each object
# as a file (plus its metadata) on the same disk: the table is what a local store costs, not a
# network's latency.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DIR=${1:-/tmp/nc3pack-collection}
N=${2:-10000}
TINY=${TINY:-2000}
NC3PACK=${NC3PACK:-$here/../target/release/nc3pack}
S3S=${S3S:-$(command -v s3s-fs || echo "$HOME/.cargo/bin/s3s-fs")}
cores=$(nproc)
[ -x "$S3S" ] || { echo "s3s-fs not found (cargo install s3s-fs --version 0.14.1 --features binary)" >&2; exit 2; }
mkdir -p "$DIR"
if [ ! -d "$DIR/tiny" ]; then
    python3 -c "import sys; sys.path.insert(0, '$here'); import make_corpus as m; m.make_tiny('$DIR/tiny', $TINY)"
fi
tiny=$(find "$DIR/tiny" -type f | wc -l)
copies=$(( (N + tiny - 1) / tiny ))
tree="$DIR/tree-s3"
if [ ! -d "$tree" ] || [ "$(find "$tree" -type f | wc -l)" -ne "$N" ]; then
    rm -rf "$tree" "$tree.tmp"
    mkdir -p "$tree.tmp"
    left=$N
    for k in $(seq 0 $((copies - 1))); do
        mkdir -p "$tree.tmp/set$k"
        find "$DIR/tiny" -type f | sort | head -n "$(( left < tiny ? left : tiny ))" |
            xargs cp -t "$tree.tmp/set$k"
        left=$(( left - tiny ))
    done
    mv "$tree.tmp" "$tree"
fi
files=$(find "$tree" -type f | wc -l)
bytes=$(du -sb "$tree" | cut -f1)

work=$(mktemp -d "$DIR/s3bench.XXXXXX")
server=""
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

# The server: loopback only, its own credentials, one bucket.
mkdir -p "$work/store/bench" "$work/here" "$work/there"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$S3S" --host 127.0.0.1 --port "$port" --access-key benchkey --secret-key benchsecret \
    "$work/store" >/dev/null 2>&1 &
server=$!
for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:$port/" && break
    sleep 0.1
done
curl -s -o /dev/null "http://127.0.0.1:$port/" || { echo "s3s-fs did not start" >&2; exit 1; }
export AWS_ACCESS_KEY_ID=benchkey AWS_SECRET_ACCESS_KEY=benchsecret AWS_REGION=us-east-1
export AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_ALLOW_HTTP=true
unset AWS_SESSION_TOKEN NC3PACK_ANON

sync
find "$tree" -type f -exec cat {} + >/dev/null   # the tree in the page cache for every run

# Runs nc3pack (in directory $1) with the rest as arguments; prints "seconds peak_rss_kib".
measure() {
    local cwd=$1 t0 t1
    shift
    t0=$(date +%s.%N)
    (cd "$cwd" && /usr/bin/time -f %M -o "$work/rss" "$NC3PACK" "$@" >/dev/null)
    t1=$(date +%s.%N)
    echo "$(echo "$t1 - $t0" | bc) $(cat "$work/rss")"
}
url=s3://bench/coll/
read -r t_local rss_local < <(measure "$work" pack -q "$tree" -o "$work/out")
read -r t_local_re rss_local_re < <(measure "$work" pack -q "$tree" -o "$work/out")
read -r t_s3 rss_s3 < <(measure "$work/here" pack -q "$tree" -o "$url")
read -r t_s3_re rss_s3_re < <(measure "$work/here" pack -q "$tree" -o "$url")
# Another machine (or working directory): only the bucket's copy of the manifest.
read -r t_s3_there rss_s3_there < <(measure "$work/there" pack -q "$tree" -o "$url")
objects=$(find "$work/store/bench/coll" -name '*.nc3z' | wc -l)
[ "$objects" -eq "$files" ] || { echo "expected $files objects, found $objects" >&2; exit 1; }

rate() { echo "scale=0; $files / $1" | bc; }
row() { printf "| %s | %.2f | %s | %s MiB |\n" "$1" "$2" "$(rate "$2")" $(($3 / 1024)); }
echo
echo "$files files, $bytes bytes; $cores cores; nc3pack and s3s-fs on the same cores"
echo
echo "| run ($files files) | seconds | files/s | peak RSS |"
echo "|---|---:|---:|---:|"
row "pack -o DIR" "$t_local" "$rss_local"
row "pack -o DIR, rerun, everything done" "$t_local_re" "$rss_local_re"
row "pack -o s3://... (s3s-fs on 127.0.0.1)" "$t_s3" "$rss_s3"
row "pack -o s3://..., rerun, everything done" "$t_s3_re" "$rss_s3_re"
row "pack -o s3://..., rerun from another directory (the bucket's manifest)" "$t_s3_there" "$rss_s3_there"
