#!/usr/bin/env bash
# Builds the seed corpora of the fuzz targets under fuzz/corpus/ (not committed) from samples/:
#   nc3_header      every samples/*.nc and samples/bad/*.nc (files over 64 KiB: their first
#                   4 KiB, which hold the header), and samples/bad/fuzz/* (past findings)
#   archive_open    archives of the small samples/*.nc, block sizes 64 (so that every variable
#                   has several blocks) and 16 (so that blocks of fill values or zeros are
#                   constant: index entries and constants frames), codecs zstd, deflate and none
#                   in turn, shuffle on and off; and of each, a format 1.1 archive (a block
#                   size per variable), one with pco blocks (block size 256) and a quantized one
#                   and an archive of large constant blocks (a sparse 96 MiB variable, 32 MiB
#                   blocks: below)
#   archive_fixcrc  the same archives
#   slab_read       a few inputs that pick each seed archive with no mutation
#   header allocation cases (below): headers of thousands of small items, a count past the bytes
#                   present, empty lists with any tag, for nc3_header and pack_stream, and
#                   archives of three of them for archive_open and archive_fixcrc
#   pack_stream     every samples/*.nc and samples/bad/*.nc up to 64 KiB and samples/bad/fuzz/*.nc,
#                   each behind two option bytes (block size, codec/filter; see src/lib.rs
#                   `exercise_pack`), the options varying from file to file; and record files
#                   made with ncgen from fuzz/cdl/*.cdl, whole and cut at many places (below)
# With --seeds it also rewrites fuzz/seeds/*.nc3z, the archives slab_read embeds (committed;
# slab_read's findings are only reproducible with the same seeds).
# Usage: fuzz/make_corpus.sh [--seeds]    (from anywhere; builds the CLI if needed)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
fuzz="$root/fuzz"
cd "$root"
cargo build --release --quiet --bin nc3pack
bin="$root/target/release/nc3pack"

mkdir -p "$fuzz"/corpus/{nc3_header,archive_open,archive_fixcrc,slab_read,pack_stream}

for f in samples/*.nc samples/bad/*.nc samples/bad/fuzz/*; do
    [ -f "$f" ] || continue
    out="$fuzz/corpus/nc3_header/$(echo "$f" | tr / _)"
    if [ "$(stat -c %s "$f")" -gt 65536 ]; then
        head -c 4096 "$f" > "$out"
    else
        cp "$f" "$out"
    fi
done

codecs=(zstd deflate none)
i=0
for f in samples/*.nc; do
    [ "$(stat -c %s "$f")" -le 65536 ] || continue
    name=$(basename "$f" .nc)
    codec=${codecs[$((i % 3))]}
    shuffle=""
    [ $((i % 2)) -eq 1 ] && shuffle="--filter none"
    out="$fuzz/corpus/archive_open/${name}_${codec}_b64.nc3z"
    "$bin" pack -f -q --codec "$codec" --block-size 64 $shuffle "$f" "$out"
    cp "$out" "$fuzz/corpus/archive_fixcrc/"
    # Block size 16 too: blocks of fill values or zeros are constant (index entries and a
    # constants frame, no block frame).
    out="$fuzz/corpus/archive_open/${name}_${codec}_b16.nc3z"
    "$bin" pack -f -q --codec "$codec" --block-size 16 $shuffle "$f" "$out"
    cp "$out" "$fuzz/corpus/archive_fixcrc/"
    # Format 1.1 (every variable's block size differs from the lead's: a block sizes frame),
    # pco where it wins (block size 256: numeric blocks of 32 to 128 elements), and quantized
    # floats. A file without variables refuses --var '*', one without float variables
    # --quantize: no seed then.
    "$bin" pack -f -q --block-size 4096 --var '*:block-size=48' "$f" \
        "$fuzz/corpus/archive_open/${name}_b4096_v48.nc3z" 2>/dev/null || true
    "$bin" pack -f -q --block-size 256 "$f" "$fuzz/corpus/archive_open/${name}_b256.nc3z"
    "$bin" pack -f -q --block-size 256 --quantize '*=bitround:9' "$f" \
        "$fuzz/corpus/archive_open/${name}_b256_q9.nc3z" 2>/dev/null || true
    for z in "$fuzz/corpus/archive_open/${name}"_b4096_v48.nc3z "$fuzz/corpus/archive_open/${name}"_b256*.nc3z; do
        if [ -f "$z" ]; then cp "$z" "$fuzz/corpus/archive_fixcrc/"; fi
    done
    i=$((i + 1))
done

# Archives of the newer decoders (archive_open, archive_fixcrc): codec lzma (5) and pco + plane
# blocks (filter 6) from fuzz/seeds/smooth_grid.nc (a smooth 2-D short, int and float grid and
# text), made with --codec lzma (lzma with and without a byte filter, pco + plane) and the max
# preset (pco + plane, pco, zstd) at small block sizes; the max preset choosing lzma on
# fuzz/seeds/mesh_repeats.nc (far-apart repeats of random doubles). Each checked to hold what
# it is there for (`nc3pack info` lists blocks by codec+filter).
new_seed() {  # new_seed NC NAME EXPECT OPTIONS...
    local nc=$1 name=$2 expect=$3
    shift 3
    "$bin" pack -f -q "$@" "$nc" "$fuzz/corpus/archive_open/$name.nc3z"
    "$bin" info "$fuzz/corpus/archive_open/$name.nc3z" | grep "blocks by codec+filter" | grep -q "$expect" \
        || { echo "$name.nc3z has no $expect blocks" >&2; exit 1; }
    cp "$fuzz/corpus/archive_open/$name.nc3z" "$fuzz/corpus/archive_fixcrc/"
}
for bs in 256 512 1024; do
    new_seed fuzz/seeds/smooth_grid.nc "smooth_grid_lzma_b$bs" '"lzma' --codec lzma --block-size $bs
done
for bs in 512 1024; do
    new_seed fuzz/seeds/smooth_grid.nc "smooth_grid_b$bs" '"pco+plane"' --block-size $bs
done
# At block size 512 the max preset now codes the grids with context (codec 6) instead.
new_seed fuzz/seeds/smooth_grid.nc smooth_grid_max_b512 '"context"' --level max --block-size 512
new_seed fuzz/seeds/smooth_grid.nc smooth_grid_max_b1024 '"pco+plane"' --level max --block-size 1024
new_seed fuzz/seeds/smooth_grid.nc smooth_grid_lzma_max_b1024 '"pco+plane"' --codec lzma --level max --block-size 1024
new_seed fuzz/seeds/mesh_repeats.nc mesh_repeats_max_b8192 '"lzma"' --level max --block-size 8192
# The refs filter (7) before lzma: a mesh's vertex coordinates and numbers, max preset.
for bs in 16384 65536; do
    new_seed fuzz/seeds/mesh_refs.nc "mesh_refs_max_b$bs" '"lzma+refs"' --level max --block-size $bs
done

# The context codec (6): a noisy field, max preset.
for bs in 2048 4096; do
    new_seed fuzz/seeds/noisy_field.nc "noisy_field_max_b$bs" '"context"' --level max --block-size $bs
done

# The mask filter (8) with pco: a field with land, default and max presets.
for bs in 512 1024; do
    new_seed fuzz/seeds/ocean_land.nc "ocean_land_b$bs" '"pco+mask"' --block-size $bs
    new_seed fuzz/seeds/ocean_land.nc "ocean_land_max_b$bs" '"pco+mask"' --level max --block-size $bs
done

# The fit filter (9) with pco, with and without its fill section: default preset.
for bs in 4096 8192; do
    new_seed fuzz/seeds/fit_field.nc "fit_field_b$bs" '"pco+fit"' --block-size $bs
done

# slab_read: seed k, flags 0, no mutations, then a few hyperslab choices.
for k in 0 1 2 3 4 5 6 7 8 9; do
    printf "\\x$(printf %02x $k)\\x00\\x00\\x01\\x00\\x00\\x03\\x02\\x01\\x01\\x01\\x05\\x01\\x00\\x02\\x01\\x03" \
        > "$fuzz/corpus/slab_read/seed$k"
done

# pack_stream: option bytes (block size byte, options byte) in turn: block 64 zstd auto;
# block 8 deflate no filter; block 4096 none, 2 threads too; block 136 zstd delta; block 23
# zstd max preset; block 40 deflate shuffle, 2 threads too; block 64 zstd auto, short reads.
opts=("\x38\x00" "\x00\x05" "\xff\x42" "\x80\x10" "\x0f\x20" "\x20\x49" "\x38\x80")
i=0
for f in samples/*.nc samples/bad/*.nc samples/bad/fuzz/*.nc; do
    [ -f "$f" ] || continue
    [ "$(stat -c %s "$f")" -le 65536 ] || continue
    o=${opts[$((i % ${#opts[@]}))]}
    out="$fuzz/corpus/pack_stream/$(echo "$f" | tr / _)"
    { printf "$o"; cat "$f"; } > "$out"
    i=$((i + 1))
done

# pack_stream: the two netCDF seeds of the newer decoders, with lzma (options byte 0x03: block
# 508 lzma; 0x23: block 1004 lzma max preset; 0x43: block 260 lzma, 2 threads too), the max
# preset with zstd (0x20, block 1004: pco + plane; lzma on mesh_repeats, block 4096) and the
# default preset (0x00, block 508: pco + plane; fit_field, block 4096: pco + fit).
for spec in "\x8c\x03:smooth_grid:lzma_b508" "\x9c\x23:smooth_grid:lzma_max_b1004" \
    "\x84\x43:smooth_grid:lzma_b260_2t" "\x9c\x20:smooth_grid:max_b1004" \
    "\x8c\x00:smooth_grid:b508" "\xff\x03:mesh_repeats:lzma_b4096" \
    "\xff\x20:mesh_repeats:max_b4096" "\xff\x20:mesh_refs:max_b4096" \
    "\xff\x20:noisy_field:max_b4096" "\xff\x00:fit_field:b4096"; do
    o=${spec%%:*}
    rest=${spec#*:}
    name=${rest%%:*}
    { printf "$o"; cat "fuzz/seeds/$name.nc"; } > "$fuzz/corpus/pack_stream/seed_${name}_${rest#*:}"
done

# pack_stream: record files from fuzz/cdl/*.cdl (several small record variables with padding
# after the odd-sized ones: the chunked-record path of route.rs and unpack.rs), whole and cut at
# every byte of their last record (inside a variable, inside padding, at a record's end) and
# inside the one before it, plus copies whose header says streaming numrecs (0xFFFFFFFF) or more
# records than the file holds, whole and cut. A chunk holds 4 MiB of records, so a 16 KiB input
# never reaches a chunk's end (tests/it/roundtrip.rs covers that), but cuts end the input inside
# the first chunk, which a pipe must take as residual bytes like a file.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
i=0
for spec in small_records_classic:classic wide_records_64bit:64-bit-offset small_records_cdf5:cdf5; do
    name=${spec%%:*}
    ncgen -k "${spec#*:}" -o "$tmp/$name.nc" "$fuzz/cdl/$name.cdl"
    len=$(stat -c %s "$tmp/$name.nc")
    # numrecs: 4 bytes at 4 (CDF-1, CDF-2), 8 bytes at 4 (CDF-5).
    if [ "$name" = small_records_cdf5 ]; then nr=8; else nr=4; fi
    python3 - "$tmp/$name.nc" "$nr" <<'PY'
import sys
path, nr = sys.argv[1], int(sys.argv[2])
b = bytearray(open(path, "rb").read())
b[4:4 + nr] = b"\xff" * nr
open(path[:-3] + "_streaming.nc", "wb").write(b)
b[4:4 + nr] = (40).to_bytes(nr, "big")
open(path[:-3] + "_numrecs40.nc", "wb").write(b)
PY
    # Record sizes 48, 1236, 56: cut at each of the last 64 bytes (every place of a small
    # record), and for the wide records at places in the float slab and before the last record.
    cuts="$(seq 1 64)"
    [ "$name" = wide_records_64bit ] && cuts="$cuts 100 601 1199 1236 1237 1240 2472 2473"
    for v in "" _streaming _numrecs40; do
        f="$tmp/$name$v.nc"
        o=${opts[$((i % ${#opts[@]}))]}
        { printf "$o"; cat "$f"; } > "$fuzz/corpus/pack_stream/cdl_$name$v"
        cp "$f" "$fuzz/corpus/nc3_header/cdl_$name$v"
        i=$((i + 1))
        for k in $cuts; do
            # The plain file at every cut; the other two at every fourth.
            [ -z "$v" ] || [ $((k % 4)) -eq 1 ] || continue
            o=${opts[$((i % ${#opts[@]}))]}
            { printf "$o"; head -c $((len - k)) "$f"; } > "$fuzz/corpus/pack_stream/cdl_${name}${v}_cut$k"
            i=$((i + 1))
        done
    done
done

# Large constant blocks (archive_open, archive_fixcrc): a CDF-2 file of one float variable, 96 MiB
# of zeros (sparse: no disk space) then 256 values 1.0, 2.0, ..., packed in blocks of 32 MiB:
# three constant blocks larger than the targets decode whole (MAX_BLOCK_BYTES, 16 MiB), of
# which they read a few elements (`check_large_constant_blocks`), and one small frame; an
# archive of about 400 bytes.
python3 - "$tmp/sparse.nc" <<'PY'
import struct, sys
zeros, tail = 24 << 20, 256
n = zeros + tail
be = lambda *v: b"".join(struct.pack(">I", x) for x in v)
head = b"CDF\x02" + be(0, 0x0A, 1, 1) + b"x\0\0\0" + be(n, 0, 0, 0x0B, 1, 1) + b"v\0\0\0"
head += be(1, 0, 0, 0, 5, 4 * n)
begin = len(head) + 8
with open(sys.argv[1], "wb") as f:
    f.write(head + struct.pack(">Q", begin))
    f.seek(begin + 4 * zeros)
    f.write(b"".join(struct.pack(">f", i) for i in range(1, tail + 1)))
PY
"$bin" pack -f -q --block-size 32MiB "$tmp/sparse.nc" "$fuzz/corpus/archive_open/sparse_b32m.nc3z"
"$bin" info "$fuzz/corpus/archive_open/sparse_b32m.nc3z" | grep -q "constant blocks (in the index only)" \
    || { echo "sparse_b32m.nc3z has no constant blocks" >&2; exit 1; }
cp "$fuzz/corpus/archive_open/sparse_b32m.nc3z" "$fuzz/corpus/archive_fixcrc/"

# Header allocation cases (nc3_header, pack_stream, archive_open, archive_fixcrc): headers of
# many small items (4096 dimensions; 512 variables of 8 dimension ids; 2048 attributes of one
# value), whose parse allocates per item; a count far past the bytes present; empty lists with
# any tag and a count of 0 (read as empty, as netCDF-C does); and their archives, whose header
# frame decodes to many times its stored size.
python3 - "$fuzz/corpus" <<'PY'
import os, struct, sys
corpus = sys.argv[1]
be = lambda *v: b"".join(struct.pack(">I", x) for x in v)
name = lambda s: be(len(s)) + s + b"\0" * (-len(s) % 4)
def cdf1(dims=b"", gatts=b"", vars_=b"", tags=(0x0A, 0x0C, 0x0B), counts=(0, 0, 0)):
    out = b"CDF\x01" + be(0)
    for t, c, body in zip(tags, counts, (dims, gatts, vars_)):
        out += be(t if c or t else 0, c) + body
    return out
cases = {
    "alloc_4096_dims.nc": cdf1(b"".join(name(b"d") + be(1) for _ in range(4096)), counts=(4096, 0, 0)),
    "alloc_512_vars_8_dims.nc": cdf1(
        name(b"d") + be(1), b"",
        b"".join(name(b"v") + be(8) + be(*[0] * 8) + be(0, 0) + be(4, 4, 0) for _ in range(512)),
        counts=(1, 0, 512)),
    "alloc_2048_attrs.nc": cdf1(b"", b"".join(name(b"a") + be(4, 1, 7) for _ in range(2048)), counts=(0, 2048, 0)),
    "alloc_count_past_bytes.nc": cdf1(name(b"d") + be(1), counts=(0x7FFFFFFF, 0, 0)),
    "empty_lists_any_tag.nc": cdf1(tags=(0x0B, 0x1234, 0xFFFFFFFF)),
}
for f, b in cases.items():
    for target in ("nc3_header", "pack_stream"):
        prefix = b"\x38\x00" if target == "pack_stream" else b""
        with open(os.path.join(corpus, target, f), "wb") as out:
            out.write(prefix + b)
PY
for f in "$fuzz"/corpus/nc3_header/alloc_4096_dims.nc "$fuzz"/corpus/nc3_header/alloc_2048_attrs.nc \
    "$fuzz"/corpus/nc3_header/empty_lists_any_tag.nc; do
    out="$fuzz/corpus/archive_open/$(basename "$f" .nc).nc3z"
    "$bin" pack -f -q --block-size 64 "$f" "$out"
    cp "$out" "$fuzz/corpus/archive_fixcrc/"
done

if [ "${1:-}" = "--seeds" ]; then
    "$bin" pack -f -q --codec zstd --block-size 64 samples/classic_records.nc \
        "$fuzz/seeds/classic_records_zstd_b64.nc3z"
    "$bin" pack -f -q --codec deflate --block-size 64 samples/cdf5_types.nc \
        "$fuzz/seeds/cdf5_types_deflate_b64.nc3z"
    "$bin" pack -f -q --codec none --block-size 64 samples/offset64_mixed.nc \
        "$fuzz/seeds/offset64_mixed_none_b64.nc3z"
    # Block size 16: constant blocks (fill values, zeros) and a constants frame.
    "$bin" pack -f -q --codec zstd --block-size 16 samples/fill_values.nc \
        "$fuzz/seeds/fill_values_zstd_b16.nc3z"
    "$bin" info "$fuzz/seeds/fill_values_zstd_b16.nc3z" | grep -q "constant blocks (in the index only)" \
        || { echo "fill_values_zstd_b16.nc3z has no constant blocks" >&2; exit 1; }
    # Large constant blocks (above): for the harness's own tests (`cargo test --lib`).
    cp "$fuzz/corpus/archive_open/sparse_b32m.nc3z" "$fuzz/seeds/"
    # The netCDF seeds of the newer decoders, and their archives: lzma with filters and
    # pco + plane; the max preset's pco + plane; the max preset's lzma.
    for n in smooth_grid mesh_repeats mesh_refs noisy_field ocean_land fit_field; do
        python3 "$fuzz/make_seed_cdl.py" $n > "$tmp/$n.cdl"
        ncgen -k classic -o "$fuzz/seeds/$n.nc" "$tmp/$n.cdl"
    done
    "$bin" pack -f -q --codec lzma --block-size 512 fuzz/seeds/smooth_grid.nc \
        "$fuzz/seeds/smooth_grid_lzma_b512.nc3z"
    "$bin" pack -f -q --level max --block-size 1024 fuzz/seeds/smooth_grid.nc \
        "$fuzz/seeds/smooth_grid_max_b1024.nc3z"
    "$bin" pack -f -q --level max --block-size 8192 fuzz/seeds/mesh_repeats.nc \
        "$fuzz/seeds/mesh_repeats_max_b8192.nc3z"
    "$bin" info "$fuzz/seeds/smooth_grid_lzma_b512.nc3z" | grep "blocks by codec+filter" \
        | grep '"lzma+' | grep -q '"pco+plane"' \
        || { echo "smooth_grid_lzma_b512.nc3z has no lzma+filter or pco+plane blocks" >&2; exit 1; }
    "$bin" info "$fuzz/seeds/smooth_grid_max_b1024.nc3z" | grep "blocks by codec+filter" | grep -q '"pco+plane"' \
        || { echo "smooth_grid_max_b1024.nc3z has no pco+plane blocks" >&2; exit 1; }
    "$bin" info "$fuzz/seeds/mesh_repeats_max_b8192.nc3z" | grep "blocks by codec+filter" | grep -q '"lzma"' \
        || { echo "mesh_repeats_max_b8192.nc3z has no lzma blocks" >&2; exit 1; }
    # mask + pco (default preset), refs + lzma and context (max preset).
    "$bin" pack -f -q --block-size 1024 fuzz/seeds/ocean_land.nc \
        "$fuzz/seeds/ocean_land_b1024.nc3z"
    "$bin" pack -f -q --level max --block-size 16384 fuzz/seeds/mesh_refs.nc \
        "$fuzz/seeds/mesh_refs_max_b16384.nc3z"
    "$bin" pack -f -q --level max --block-size 4096 fuzz/seeds/noisy_field.nc \
        "$fuzz/seeds/noisy_field_max_b4096.nc3z"
    for s in ocean_land_b1024:pco+mask mesh_refs_max_b16384:lzma+refs noisy_field_max_b4096:context; do
        "$bin" info "$fuzz/seeds/${s%%:*}.nc3z" | grep "blocks by codec+filter" | grep -q "\"${s#*:}\"" \
            || { echo "${s%%:*}.nc3z has no ${s#*:} blocks" >&2; exit 1; }
    done
fi
for d in "$fuzz"/corpus/*/; do
    echo "$(basename "$d"): $(ls "$d" | wc -l) files"
done
