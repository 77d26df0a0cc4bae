#!/usr/bin/env bash
# The netCDF-C plugin (libnc3pack_netcdf.so) against Debian's netCDF-C tools, under LD_PRELOAD:
# for every sample (samples/*.nc) and every conformance CDL as CDF-1, CDF-2 and CDF-5, the
# archive must read through netCDF-C exactly as the original does:
#   ncdump, ncdump -s -h, ncdump -v FIRSTVAR,LASTVAR  : the same text, line for line
#   nccopy ARCHIVE out.nc                             : the same bytes as nccopy ORIGINAL out.nc
#   ncks -h -d DIM,0,1 (NCO, a hyperslab)             : the same bytes
#   scripts/plugin-convert.c (a C program)            : the same text: the conversion matrix
#       (every variable and attribute read as every memory type: values and return codes),
#       strided and mapped reads, the answers of bad reads, of writes and of inquiries;
#       then the same from memory (nc_open_mem) under the name of another archive on disk
# and the same exit status for each; with PLUGIN_TEST_LIBNETCDF2, the C program again, built
# against that netCDF-C (another version or build: netCDF4-python's wheel bundles 4.10, built
# with ERANGE_FILL, which stores other values out of range). Then every damaged or hostile archive of
# samples/bad/archives through ncdump and the C program: an error answer, no crash, no hang,
# bounded memory. Two copies of libnetcdf in one process, each with an archive open
# (scripts/plugin-twolibs.c). Last, a Fortran program (scripts/plugin-fortran.f90) reads a
# hyperslab.
#
# Usage: scripts/plugin-test.sh [NC3PACK_BIN [PLUGIN_SO]]
#   defaults: target/release/nc3pack and target/release/libnc3pack_netcdf.so (built here when
#   missing: cargo build --release)
#
# Environment:
#   CONFORMANCE_DIR   CDL directory (default: <repo root>/../shared/conformance/netcdf-c-cdl;
#                     skipped when absent)
#   PLUGIN_TEST_JOBS  parallel workers (default: 2)
#   PLUGIN_TEST_MAX_BYTES  largest generated file to test (default: 67108864)
#   PLUGIN_TEST_VERBOSE=1  print PASS lines too
#   PLUGIN_TEST_LIBNETCDF2  a second libnetcdf shared library (e.g. the one netCDF4-python's
#                     wheel bundles: .../site-packages/netcdf4.libs/libnetcdf-*.so.*) to run
#                     the C program against too
#
# Needs: ncgen, ncdump, nccopy (netcdf-bin), ncks (nco), gcc and libnetcdf-dev (the C program),
# gfortran and libnetcdff-dev (the Fortran program).
# Output: FAIL lines, then one summary line "plugin: N passed, M failed, K skipped".
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

bin=${1:-$root/target/release/nc3pack}
so=${2:-$root/target/release/libnc3pack_netcdf.so}
if [[ ! -x $bin ]]; then
    cargo build --release --locked --bin nc3pack
fi
if [[ ! -f $so ]]; then
    cargo build --release --locked -p nc3pack-netcdf
fi
bin=$(cd "$(dirname "$bin")" && pwd -P)/$(basename "$bin")
so=$(cd "$(dirname "$so")" && pwd -P)/$(basename "$so")
for tool in ncgen ncdump nccopy ncks gcc gfortran; do
    command -v "$tool" >/dev/null || {
        echo "plugin-test.sh: $tool not found (apt-get install netcdf-bin nco libnetcdf-dev libnetcdff-dev gcc gfortran)" >&2
        exit 1
    }
done

cdl_dir=${CONFORMANCE_DIR:-$root/../shared/conformance/netcdf-c-cdl}
jobs=${PLUGIN_TEST_JOBS:-2}
max_bytes=${PLUGIN_TEST_MAX_BYTES:-67108864}

work=$(mktemp -d "${TMPDIR:-/tmp}/nc3pack-plugin.XXXXXX")
trap 'rm -rf -- "$work"' EXIT
mkdir -p "$work/results"
gcc -O1 -o "$work/plugin-convert" scripts/plugin-convert.c -lnetcdf
lib2=${PLUGIN_TEST_LIBNETCDF2:-}
if [[ -n $lib2 ]]; then
    lib2=$(cd "$(dirname "$lib2")" && pwd -P)/$(basename "$lib2")
    # netCDF-C's API is the same from 4.9 on: Debian's header serves.
    gcc -O1 -o "$work/plugin-convert2" scripts/plugin-convert.c "$lib2" \
        -Wl,-rpath,"$(dirname "$lib2")"
fi

# One case: NAME, a netCDF-3 file. Writes results/NAME (PASS/FAIL/SKIP), prints a FAIL line.
case_worker() {
    set -u
    local tag=$1 src=$2
    local d="$W_WORK/c/$tag"
    mkdir -p "$d/o" "$d/z"
    # The same base name on both sides: ncdump prints it.
    local base
    base=$(basename "$src" .nc)
    local o="$d/o/$base.nc" z="$d/z/$base.nc3z"
    cp -- "$src" "$o"
    fail() {
        printf 'FAIL %s: %s\n' "$tag" "$1"
        echo FAIL >"$W_WORK/results/$tag"
        return 0
    }
    if ! "$W_BIN" pack -q "$o" "$z" 2>"$d/pack.err"; then
        # A file nc3pack refuses (a damaged sample) has no archive to read.
        echo SKIP >"$W_WORK/results/$tag"
        rm -rf -- "$d"
        return 0
    fi
    # run SIDE NAME CMD...: stdout to $d/SIDE.NAME.out, exit status to $d/SIDE.NAME.rc
    run() {
        local side=$1 name=$2
        shift 2
        local rc=0
        if [[ $side == z ]]; then
            timeout -k 5 120 env LD_PRELOAD="$W_SO" "$@" >"$d/$side.$name.out" 2>"$d/$side.$name.err" || rc=$?
        else
            timeout -k 5 120 "$@" >"$d/$side.$name.out" 2>"$d/$side.$name.err" || rc=$?
        fi
        echo "$rc" >"$d/$side.$name.rc"
    }
    same() {  # NAME [FILE-SUFFIX]: outputs (or written files) and exit status equal
        local name=$1
        if ! cmp -s "$d/o.$name.rc" "$d/z.$name.rc"; then
            fail "$name: exit status $(cat "$d/o.$name.rc") on the original, $(cat "$d/z.$name.rc") on the archive ($(head -c 200 "$d/z.$name.err"))"
            return 1
        fi
        if ! cmp -s "$d/o.$name.out" "$d/z.$name.out"; then
            fail "$name: output differs: $(diff "$d/o.$name.out" "$d/z.$name.out" | head -3 | tr '\n' ' ')"
            return 1
        fi
    }
    local vars first last dim
    run o dump ncdump "$o"
    run z dump ncdump "$z"
    same dump || return 0
    run o dumps ncdump -s -h "$o"
    run z dumps ncdump -s -h "$z"
    same dumps || return 0
    vars=$(ncdump -h "$o" | awk '/^variables:/{v=1;next} /^(data|\/\/ global)/{v=0} v && /^\t[a-z]/ {s=$0; sub(/\(.*/,"",s); sub(/ ;$/,"",s); n=split(s,w," "); print w[n]}')
    first=$(head -n1 <<<"$vars")
    last=$(tail -n1 <<<"$vars")
    if [[ -n $first ]]; then
        run o dumpv ncdump -v "$first,$last" "$o"
        run z dumpv ncdump -v "$first,$last" "$z"
        same dumpv || return 0
    fi
    run o copy nccopy "$o" "$d/o/copy.nc"
    run z copy nccopy "$z" "$d/z/copy.nc"
    same copy || return 0
    if [[ -f $d/o/copy.nc ]] && ! cmp -s "$d/o/copy.nc" "$d/z/copy.nc"; then
        fail "nccopy: the copies differ"
        return 0
    fi
    dim=$(ncdump -h "$o" | awk '/^dimensions:/{v=1;next} /^variables:/{v=0} v && /=/ {print $1; exit}')
    if [[ -n $dim ]]; then
        run o ncks ncks -h -O -d "$dim,0,1" "$o" "$d/o/ncks.nc"
        run z ncks ncks -h -O -d "$dim,0,1" "$z" "$d/z/ncks.nc"
        same ncks || return 0
        if [[ -f $d/o/ncks.nc ]] && ! cmp -s "$d/o/ncks.nc" "$d/z/ncks.nc"; then
            fail "ncks -d $dim,0,1: the outputs differ"
            return 0
        fi
    fi
    # The conversion matrix and the API's answers (scripts/plugin-convert.c).
    run o conv "$W_WORK/plugin-convert" "$o"
    run z conv "$W_WORK/plugin-convert" "$z"
    same conv || return 0
    if [[ -x $W_WORK/plugin-convert2 ]]; then
        run o conv2 "$W_WORK/plugin-convert2" "$o"
        run z conv2 "$W_WORK/plugin-convert2" "$z"
        same conv2 || return 0
    fi
    # The archive from memory (nc_open_mem), under the name of another archive that is on
    # disk: what is read is the buffer, never the file of that name. Compared with the plain
    # open of the original (netCDF-C's own in-memory open refuses some small classic files).
    run z convmem "$W_WORK/plugin-convert" "$z" "$W_DECOY"
    if ! cmp -s "$d/o.conv.rc" "$d/z.convmem.rc" || ! cmp -s "$d/o.conv.out" "$d/z.convmem.out"; then
        fail "nc_open_mem: the archive in memory reads otherwise than the original: $(diff "$d/o.conv.out" "$d/z.convmem.out" | head -3 | tr '\n' ' ')"
        return 0
    fi
    echo PASS >"$W_WORK/results/$tag"
    [[ $W_VERBOSE == 1 ]] && printf 'PASS %s\n' "$tag"
    rm -rf -- "$d"
    return 0
}

# One conformance CDL as one kind: generate with ncgen, then case_worker.
cdl_worker() {
    set -u
    local cdl=$1 kind=$2
    local name tag f
    name=$(basename "$cdl" .cdl)
    tag="$name.$kind"
    mkdir -p "$W_WORK/g/$tag"
    f="$W_WORK/g/$tag/$name.nc"
    # The outer 2>/dev/null hides bash's notice when ulimit -f stops a huge output.
    if ! { (ulimit -f $((W_MAX_BYTES / 1024 + 1)) 2>/dev/null; exec timeout -k 5 60 ncgen -k "$kind" -o "$f" "$cdl") >/dev/null 2>&1; } 2>/dev/null ||
        [[ ! -s $f ]] || (($(stat -c %s "$f") > W_MAX_BYTES)); then
        echo SKIP >"$W_WORK/results/$tag"
        rm -rf -- "$W_WORK/g/$tag"
        return 0
    fi
    case_worker "$tag" "$f"
    rm -rf -- "$W_WORK/g/$tag"
}
export -f case_worker cdl_worker
# The decoy an in-memory open is named after: an archive of another file, on disk.
"$bin" pack -q samples/scalars.nc "$work/decoy.nc3z"
export W_DECOY="$work/decoy.nc3z"
export W_WORK="$work" W_BIN="$bin" W_SO="$so" W_MAX_BYTES="$max_bytes" \
    W_VERBOSE="${PLUGIN_TEST_VERBOSE:-0}"

echo "# plugin: $so"
if [[ -n $lib2 ]]; then
    echo "# and the C program against $lib2"
fi
{
    for f in samples/*.nc; do
        # netCDF-C misreads these two: it takes the header's record count (a truncated file's,
        # or the streaming marker 0xFFFFFFFF) as the dimension's length and reads past the end
        # of the data; nc3pack (and so the plugin) presents the records the file holds.
        case $(basename "$f") in truncated_record.nc | streaming_numrecs.nc) continue ;; esac
        printf 'case_worker\0sample.%s\0%s\0' "$(basename "$f" .nc)" "$root/$f"
    done
    if [[ -d $cdl_dir ]]; then
        for cdl in "$cdl_dir"/*.cdl; do
            for kind in classic 64-bit-offset cdf5; do
                printf 'cdl_worker\0%s\0%s\0' "$cdl" "$kind"
            done
        done
    else
        echo "# conformance CDLs skipped: $cdl_dir not found" >&2
    fi
} | xargs -0 -n 3 -P "$jobs" bash -c '"$@"' worker

# The damaged and hostile archives (samples/bad/archives, made by tests/it/hostile.rs) through
# the plugin: ncdump and the C program end with status 0 or 1 (netCDF-C's error answer, with
# nc3pack's line on stderr naming the file), within 60 s and 500 MB of address space: no crash,
# no hang, no allocation a forged size asks for.
for f in samples/bad/archives/*.nc3z; do
    name=$(basename "$f" .nc3z)
    bad=
    for prog in ncdump "$work/plugin-convert"; do
        rc=0
        (ulimit -v 512000; exec timeout -k 5 60 env LD_PRELOAD="$so" "$prog" "$f") \
            >"$work/hostile.out" 2>"$work/hostile.err" || rc=$?
        if ((rc > 1)); then
            bad="$(basename "$prog") exit status $rc: $(head -c 200 "$work/hostile.err" | tr '\n' ' ')"
        elif ((rc == 1)) && ! grep -q "^nc3pack: \|NetCDF: " "$work/hostile.err"; then
            bad="$(basename "$prog") failed without saying why"
        fi
    done
    if [[ -n $bad ]]; then
        printf 'FAIL hostile.%s: %s\n' "$name" "$bad"
        echo FAIL >"$work/results/hostile.$name"
    else
        echo PASS >"$work/results/hostile.$name"
    fi
done

# Two netCDF-C libraries in one process (netCDF4-python's copy beside the system's): two
# copies of Debian's libnetcdf, each opening an archive (both get ncid 65536): each library's
# answers are those for its own file, also after the other's file is closed
# (scripts/plugin-twolibs.c); the same program on the two originals is the reference.
libnc=$(gcc -print-file-name=libnetcdf.so)
libnc=$(readlink -f "$libnc")
gcc -O1 -o "$work/plugin-twolibs" scripts/plugin-twolibs.c -ldl
mkdir -p "$work/two"
cp -- "$libnc" "$work/two/libnetcdf-second-copy.so"
"$bin" pack -q samples/gridded_sst.nc "$work/two/a.nc3z"
"$bin" pack -q samples/classic_records.nc "$work/two/b.nc3z"
rc_o=0 rc_z=0
timeout 60 "$work/plugin-twolibs" "$libnc" "$work/two/libnetcdf-second-copy.so" "$so" \
    samples/gridded_sst.nc samples/classic_records.nc >"$work/two/o.out" 2>"$work/two/o.err" || rc_o=$?
timeout 60 "$work/plugin-twolibs" "$libnc" "$work/two/libnetcdf-second-copy.so" "$so" \
    "$work/two/a.nc3z" "$work/two/b.nc3z" >"$work/two/z.out" 2>"$work/two/z.err" || rc_z=$?
if ((rc_o == 0 && rc_z == 0)) && grep -q "same ncid 1" "$work/two/z.out" &&
    grep -q "registered with 2 libraries" "$work/two/z.err" &&
    cmp -s "$work/two/o.out" "$work/two/z.out"; then
    echo PASS >"$work/results/two-libraries"
else
    printf 'FAIL two-libraries: exit %s/%s: %s %s\n' "$rc_o" "$rc_z" \
        "$(diff "$work/two/o.out" "$work/two/z.out" | head -4 | tr '\n' ' ')" \
        "$(head -c 300 "$work/two/z.err" | tr '\n' ' ')"
    echo FAIL >"$work/results/two-libraries"
fi

# CDO: it refuses the archive magic itself, but hands netCDF-C a file:// URL with a #mode=
# fragment unchecked. `cdo -s sinfo` (but for its first line: for a URL, CDO names the format
# "NetCDF" whatever the kind), `cdo -s infon`, and `cdo timmean` (its output's values) through
# the plugin equal the original's, for a time series and a file of 17 record variables.
if command -v cdo >/dev/null; then
    mkdir -p "$work/cdo"
    for f in gridded_sst classic_records; do
        cp "samples/$f.nc" "$work/cdo/$f.nc"
        "$bin" pack -q "samples/$f.nc" "$work/cdo/$f.nc3z"
        url="file://$work/cdo/$f.nc3z#mode=udf0"
        bad=
        for op in sinfo infon timmean; do
            rc_o=0 rc_z=0
            if [[ $op == timmean ]]; then
                timeout 120 cdo -s -O timmean "$work/cdo/$f.nc" "$work/cdo/o.$f.tm.nc" 2>"$work/cdo/err" || rc_o=$?
                timeout 120 env LD_PRELOAD="$so" cdo -s -O timmean "$url" "$work/cdo/z.$f.tm.nc" 2>>"$work/cdo/err" || rc_z=$?
                cdo -s infon "$work/cdo/o.$f.tm.nc" >"$work/cdo/o.out" 2>/dev/null || rc_o=$?
                cdo -s infon "$work/cdo/z.$f.tm.nc" >"$work/cdo/z.out" 2>/dev/null || rc_z=$?
            else
                timeout 120 cdo -s "$op" "$work/cdo/$f.nc" 2>"$work/cdo/err" | sed '1{/File format/d}' >"$work/cdo/o.out" || rc_o=$?
                timeout 120 env LD_PRELOAD="$so" cdo -s "$op" "$url" 2>>"$work/cdo/err" | sed '1{/File format/d}' >"$work/cdo/z.out" || rc_z=$?
            fi
            if ((rc_o != 0 || rc_z != 0)) || [[ ! -s $work/cdo/o.out ]] || ! cmp -s "$work/cdo/o.out" "$work/cdo/z.out"; then
                bad+="$op (exit $rc_o/$rc_z: $(diff "$work/cdo/o.out" "$work/cdo/z.out" | head -3 | tr '\n' ' ') $(head -c 200 "$work/cdo/err" | tr '\n' ' ')) "
            fi
        done
        if [[ -n $bad ]]; then
            printf 'FAIL cdo.%s: %s\n' "$f" "$bad"
            echo FAIL >"$work/results/cdo.$f"
        else
            echo PASS >"$work/results/cdo.$f"
        fi
    done
else
    echo "# cdo not found: the CDO checks skipped (apt-get install cdo)" >&2
    # Under CI a missing tool fails the run.
    if [[ -n ${CI:-} ]]; then echo FAIL; else echo SKIP; fi >"$work/results/cdo"
fi

# R's ncdf4 loads netCDF-C with the package, after the preloaded plugin's constructor ran: the
# plugin registers at the first nc_open (netcdf/src/late.rs). Every dimension, attribute and
# value as R prints them (scripts/plugin-r.R), archive against original. (R's ncdf4 itself
# crashes on classic_records.nc and does not know CDF-5: those are left out.)
if command -v Rscript >/dev/null && Rscript -e 'library(ncdf4)' >/dev/null 2>&1; then
    mkdir -p "$work/r"
    for f in gridded_sst fill_values attrs_all_types obs_points; do
        cp "samples/$f.nc" "$work/r/$f.nc"
        "$bin" pack -q "samples/$f.nc" "$work/r/$f.nc3z"
        rc_o=0 rc_z=0
        timeout 120 Rscript scripts/plugin-r.R "$work/r/$f.nc" >"$work/r/o.out" 2>&1 || rc_o=$?
        timeout 120 env LD_PRELOAD="$so" Rscript scripts/plugin-r.R "$work/r/$f.nc3z" >"$work/r/z.out" 2>&1 || rc_z=$?
        if ((rc_o == 0 && rc_z == 0)) && grep -q "^var " "$work/r/o.out" && cmp -s "$work/r/o.out" "$work/r/z.out"; then
            echo PASS >"$work/results/r.$f"
        else
            printf 'FAIL r.%s: exit %s/%s: %s\n' "$f" "$rc_o" "$rc_z" "$(diff "$work/r/o.out" "$work/r/z.out" | head -3 | tr '\n' ' ')"
            echo FAIL >"$work/results/r.$f"
        fi
    done
else
    echo "# R's ncdf4 not found: the R checks skipped (apt-get install r-cran-ncdf4)" >&2
    # Under CI a missing tool fails the run.
    if [[ -n ${CI:-} ]]; then echo FAIL; else echo SKIP; fi >"$work/results/r"
fi

# Installed (scripts/install.sh, with the release profile this script's builds use): from
# another directory, `nc3pack netcdf-plugin` names the library installed beside the program,
# and the LD_PRELOAD line it prints makes ncdump read an archive.
rc=0
NC3PACK_PROFILE=release timeout 1800 scripts/install.sh "$work/prefix" >"$work/install.log" 2>&1 || rc=$?
line=$(cd / && "$work/prefix/bin/nc3pack" netcdf-plugin 2>&1 | sed -n 's/^#   //p' | head -n 1) || true
rc_dump=0
(cd "$work" && eval "${line/ncdump archive.nc3z/ncdump -h $work/two/a.nc3z}") >"$work/install.out" 2>&1 || rc_dump=$?
if ((rc == 0 && rc_dump == 0)) && [[ $line == "LD_PRELOAD=$work/prefix/lib/libnc3pack_netcdf.so ncdump archive.nc3z" ]] &&
    grep -q "^netcdf a {" "$work/install.out"; then
    echo PASS >"$work/results/install"
else
    printf 'FAIL install: exit %s/%s, line %q: %s\n' "$rc" "$rc_dump" "$line" "$(tail -c 300 "$work/install.log" "$work/install.out" | tr '\n' ' ')"
    echo FAIL >"$work/results/install"
fi

# The version check, in a program that plays a host netCDF-C of a given version
# (scripts/plugin-fakehost.c): 4.9 and later get the format registered (NC_UDF0, the archive
# magic) silently; older ones nothing registered, one line on stderr saying which version is
# needed and to unpack instead, and the host program runs on.
gcc -rdynamic -o "$work/fakehost" scripts/plugin-fakehost.c -ldl
want_magic=894e43335a0d0a1a # \x89NC3Z\r\n\x1a (design/FORMAT.md)
for v in "4.8.1 of Jun  2 2021 13:41:29 \$" "4.7.4 of Mar 23 2020 \$" "4.6.3" "3.6.3" \
    "4.9.0 of Jan  1 2023 \$" "4.9.2" "4.10.1-development" "5.0.0"; do
    rc=0
    FAKE_NC_VERSION="$v" LD_PRELOAD="$so" timeout 60 "$work/fakehost" \
        >"$work/fake.out" 2>"$work/fake.err" || rc=$?
    if [[ $(printf '%s\n4.9\n' "${v%% *}" | sort -V | head -n1) != 4.9 ]]; then
        want_out="register -2"
        want_err="nc3pack: netCDF-C $v is too old for the nc3pack plugin: it needs netCDF-C 4.9 or newer (or run \`nc3pack unpack\` on the archive first)"
    else
        want_out=$'def 64 '"$want_magic"$'\nregister 1'
        want_err=""
    fi
    tag="version.${v%% *}"
    if ((rc == 0)) && [[ $(cat "$work/fake.out") == "$want_out" && $(cat "$work/fake.err") == "$want_err" ]]; then
        echo PASS >"$work/results/$tag"
    else
        printf 'FAIL %s: exit %s, stdout %q, stderr %q\n' "$tag" "$rc" "$(cat "$work/fake.out")" "$(cat "$work/fake.err")"
        echo FAIL >"$work/results/$tag"
    fi
done

# Fortran: a hyperslab through netCDF-Fortran, from the archive and from the original.
gfortran -o "$work/plugin-fortran" scripts/plugin-fortran.f90 -I/usr/include -lnetcdff
mkdir -p "$work/fo" "$work/fz"
cp samples/classic_records.nc "$work/fo/"
"$bin" pack -q samples/classic_records.nc "$work/fz/classic_records.nc3z"
"$work/plugin-fortran" "$work/fo/classic_records.nc" >"$work/fortran.o" 2>&1 || true
LD_PRELOAD="$so" "$work/plugin-fortran" "$work/fz/classic_records.nc3z" >"$work/fortran.z" 2>&1 || true
if grep -q "E+01" "$work/fortran.o" && cmp -s "$work/fortran.o" "$work/fortran.z"; then
    echo PASS >"$work/results/fortran"
else
    printf 'FAIL fortran: %s\n' "$(diff "$work/fortran.o" "$work/fortran.z" | head -3 | tr '\n' ' ')"
    echo FAIL >"$work/results/fortran"
fi

# The header limit (NC3PACK_MAX_HEADER_BYTES, read by the library) holds through the plugin: an
# archive whose header is longer than the limit is refused at nc_open, at once, with one line
# naming the limit and how to raise it. (A header bomb, a small archive whose header decodes to
# millions of items, is refused the same way under the default limit of 64 MiB.)
rc=0
NC3PACK_MAX_HEADER_BYTES=64 LD_PRELOAD="$so" timeout 20 ncdump -h "$work/fz/classic_records.nc3z" \
    >"$work/limit.out" 2>"$work/limit.err" || rc=$?
if ((rc != 0)) && grep -q "more than the header limit of 64 bytes" "$work/limit.err" &&
    grep -q "set the environment variable NC3PACK_MAX_HEADER_BYTES" "$work/limit.err"; then
    echo PASS >"$work/results/header-limit"
else
    printf 'FAIL header-limit: exit %s, stderr %q\n' "$rc" "$(cat "$work/limit.err")"
    echo FAIL >"$work/results/header-limit"
fi

passed=0 failed=0 skipped=0
for r in "$work"/results/*; do
    case $(cat "$r") in
        PASS) passed=$((passed + 1)) ;;
        SKIP) skipped=$((skipped + 1)) ;;
        *) failed=$((failed + 1)) ;;
    esac
done
echo "plugin tools: $passed passed, $failed failed, $skipped skipped"
((passed > 0)) || { echo "plugin-test.sh: no case ran" >&2; exit 1; }
((failed == 0))
