#!/usr/bin/env bash
# Whole-process time of reading one value: `nc3pack slice` on the archive (and on the original)
# versus `ncks -d` on the original netCDF-3 file. Needs hyperfine and nco (Debian packages).
# Uses the gridded file the read benchmark generates (cargo bench --bench read).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${NC3PACK_BENCH_DIR:-target/bench-data}
nc=$dir/gridded_100.nc
[ -f "$nc" ] || { echo "missing $nc: run 'cargo bench --bench read' first" >&2; exit 1; }
for t in hyperfine ncks; do command -v $t >/dev/null || { echo "needs $t (apt-get install hyperfine nco)" >&2; exit 1; }; done
cargo build --release -q
bin=target/release/nc3pack
$bin pack -q -f "$nc" "$dir/gridded_100.nc3z"
hyperfine -N --warmup 5 --runs 50 --export-markdown "$dir/slice.md" \
  -n "nc3pack slice (archive)" "$bin slice $dir/gridded_100.nc3z t2m --start 50,500,500 --count 1,1,1" \
  -n "nc3pack slice (original .nc)" "$bin slice $nc t2m --start 50,500,500 --count 1,1,1" \
  -n "ncks -d (original .nc)" "ncks -H -C -v t2m -d time,50 -d lat,500 -d lon,500 $nc"
cat "$dir/slice.md"
