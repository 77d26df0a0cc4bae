#!/usr/bin/env bash
# Round-trip conformance test for nc3pack against the netcdf-c CDL corpus.
#
# Usage: scripts/conformance.sh [NC3PACK_BIN]
#
#   NC3PACK_BIN   nc3pack binary (default: <repo root>/target/release/nc3pack)
#
# For every *.cdl in CONFORMANCE_DIR and each netCDF-3 kind (classic = CDF-1,
# 64-bit-offset = CDF-2, cdf5 = CDF-5) this generates a file with ncgen, then
# checks   pack -q IN OUT.nc3z ; unpack -q OUT.nc3z BACK.nc ; cmp IN BACK.nc ;
#          info OUT.nc3z
# Each file x kind combination counts once as passed, failed or skipped.
# Skipped = ncgen cannot produce that kind from the CDL (netCDF-4-only
# features, CDF-5-only types, format size limits, ...), ncgen timed out, or
# the generated file is larger than CONFORMANCE_MAX_BYTES.
#
# Environment:
#   CONFORMANCE_DIR        CDL directory (default: <repo root>/../shared/conformance/netcdf-c-cdl)
#   CONFORMANCE_MAX_BYTES  largest generated .nc file to test (default: 268435456 = 256 MiB)
#   CONFORMANCE_JOBS       parallel workers (default: 2)
#   CONFORMANCE_NCGEN_TIMEOUT  seconds per ncgen run (default: 60)
#   CONFORMANCE_STEP_TIMEOUT   seconds per nc3pack step (default: 300)
#   CONFORMANCE_VERBOSE=1  also print PASS lines and every SKIP line
#   CONFORMANCE_KEEP=1     keep the work directory (and artifacts of failures)
#
# Output: FAIL lines as "FAIL <cdl> <kind>: <step>: <first line of stderr>",
# SKIP lines for oversize/timeout cases, then exactly one summary line
#   conformance: N passed, M failed, K skipped
# Exit status: 0 if nothing failed, 1 otherwise (or on setup errors).

set -euo pipefail

script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
repo_root=$(cd -- "$script_dir/.." && pwd -P)

die() { printf 'conformance.sh: %s\n' "$*" >&2; exit 1; }

[[ $# -le 1 ]] || die "usage: scripts/conformance.sh [NC3PACK_BIN]"

bin=${1:-$repo_root/target/release/nc3pack}
[[ -e $bin ]] || die "nc3pack binary not found: $bin (build it with 'cargo build --release' or pass a path)"
[[ -f $bin && -x $bin ]] || die "nc3pack binary is not an executable file: $bin"
# Absolute path: workers run inside the work directory.
bin=$(cd -- "$(dirname -- "$bin")" && pwd -P)/$(basename -- "$bin")

cdl_dir=${CONFORMANCE_DIR:-$repo_root/../shared/conformance/netcdf-c-cdl}
[[ -d $cdl_dir ]] || die "CDL directory not found: $cdl_dir (set CONFORMANCE_DIR to override)"
cdl_dir=$(cd -- "$cdl_dir" && pwd -P)

command -v ncgen >/dev/null 2>&1 || die "ncgen not found in PATH (install it, e.g. 'apt-get install netcdf-bin')"
command -v timeout >/dev/null 2>&1 || die "timeout (GNU coreutils) not found in PATH"
command -v cmp >/dev/null 2>&1 || die "cmp (diffutils) not found in PATH"

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
max_bytes=${CONFORMANCE_MAX_BYTES:-268435456}
jobs=${CONFORMANCE_JOBS:-2}
ncgen_timeout=${CONFORMANCE_NCGEN_TIMEOUT:-60}
step_timeout=${CONFORMANCE_STEP_TIMEOUT:-300}
is_uint "$max_bytes" && (( max_bytes > 0 )) || die "CONFORMANCE_MAX_BYTES must be a positive integer"
is_uint "$jobs" && (( jobs > 0 )) || die "CONFORMANCE_JOBS must be a positive integer"
is_uint "$ncgen_timeout" && (( ncgen_timeout > 0 )) || die "CONFORMANCE_NCGEN_TIMEOUT must be a positive integer"
is_uint "$step_timeout" && (( step_timeout > 0 )) || die "CONFORMANCE_STEP_TIMEOUT must be a positive integer"

shopt -s nullglob
cdls=("$cdl_dir"/*.cdl)
shopt -u nullglob
(( ${#cdls[@]} > 0 )) || die "no *.cdl files in $cdl_dir"

# ncgen -k spellings accepted by netcdf-c 4.9 ncgen (numeric 1/2/5 also work),
# with the version byte each must produce: "CDF\001", "CDF\002", "CDF\005".
kinds=(classic 64-bit-offset cdf5)

work=$(mktemp -d "${TMPDIR:-/tmp}/nc3pack-conformance.XXXXXX")
cleanup() {
    if [[ ${CONFORMANCE_KEEP:-0} == 1 ]]; then
        printf '# work directory kept: %s\n' "$work" >&2
    else
        rm -rf -- "$work"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir -p -- "$work/results"

# Worker: one CDL file x one kind. Never aborts; always writes exactly one
# result file (PASS / FAIL / SKIP) and prints at most one line (single
# printf, so lines from parallel workers do not interleave).
worker() {
    set -u
    local cdl=$1 kind=$2
    local name cdlname expect tag in z back res
    cdlname=$(basename -- "$cdl")
    name=${cdlname%.cdl}
    tag="$name.$kind"
    in="$tag.nc" z="$tag.nc3z" back="$tag.back.nc"
    res="results/$tag"
    case $kind in
        classic) expect=1 ;;
        64-bit-offset) expect=2 ;;
        cdf5) expect=5 ;;
        *) expect=? ;;
    esac
    cd -- "$W_WORK" || return 0

    first_line() {  # first non-empty line of the given files, trimmed
        local f l
        for f in "$@"; do
            [[ -s $f ]] || continue
            l=$(grep -m1 -v '^[[:space:]]*$' -- "$f" 2>/dev/null | tr -d '\r') || true
            if [[ -n $l ]]; then printf '%.300s' "$l"; return; fi
        done
    }
    report() {  # PASS | FAIL msg | SKIP msg (always shown) | SKIPQ msg (verbose only)
        local status=$1 msg=${2:-}
        printf '%s\n' "${status%Q}" >"$res"
        case $status in
            FAIL|SKIP) printf '%s %s %s: %s\n' "$status" "$cdlname" "$kind" "$msg" ;;
            PASS) if [[ $W_VERBOSE == 1 ]]; then printf 'PASS %s %s\n' "$cdlname" "$kind"; fi ;;
            SKIPQ) if [[ $W_VERBOSE == 1 ]]; then printf 'SKIP %s %s: %s\n' "$cdlname" "$kind" "$msg"; fi ;;
        esac
        return 0
    }
    tidy() {
        if [[ $1 == FAIL && $W_KEEP == 1 ]]; then return 0; fi
        rm -f -- "$in" "$z" "$back" "$tag".*.err "$tag".*.out
    }

    # 1. Generate. ulimit -f stops runaway multi-GB outputs early (the
    # process dies with SIGXFSZ); the size check below is authoritative.
    local rc=0 size magic
    { ( ulimit -f $(( W_MAX_BYTES / 1024 + 1 )) 2>/dev/null
        exec timeout --foreground -k 5 "$W_NCGEN_TIMEOUT" ncgen -k "$kind" -o "$in" "$cdl"
      ) >"$tag.ncgen.out" 2>"$tag.ncgen.err"; } 2>/dev/null || rc=$?
    if (( rc == 124 || rc == 137 )); then
        report SKIP "ncgen timed out after ${W_NCGEN_TIMEOUT}s"; tidy SKIP; return 0
    fi
    size=$(stat -c %s -- "$in" 2>/dev/null) || size=
    if (( rc == W_XFSZ_RC )) || { [[ -n $size ]] && (( size > W_MAX_BYTES )); }; then
        report SKIP "generated file exceeds CONFORMANCE_MAX_BYTES=$W_MAX_BYTES bytes"; tidy SKIP; return 0
    fi
    if (( rc != 0 )); then
        report SKIPQ "ncgen failed: $(first_line "$tag.ncgen.err" "$tag.ncgen.out")"; tidy SKIP; return 0
    fi
    # ncgen exits 0 without writing anything when asked for a netCDF-3 kind
    # from enhanced (netCDF-4) CDL, so check the output exists and has the
    # expected magic ("CDF" + version byte).
    if [[ -z $size ]]; then
        report SKIPQ "ncgen wrote no output: $(first_line "$tag.ncgen.err" "$tag.ncgen.out")"; tidy SKIP; return 0
    fi
    magic=$(head -c 4 -- "$in" | od -An -tx1 | tr -d ' \n')
    if [[ $magic != "4344460$expect" ]]; then
        report SKIP "ncgen output has magic '${magic}', expected CDF version $expect"; tidy SKIP; return 0
    fi

    # 2. Round trip. Steps stop at the first failure.
    step() {  # name, command...
        local sname=$1; shift
        local src=0
        # Outer 2>/dev/null hides bash's "Segmentation fault ..." job notices.
        { timeout --foreground -k 5 "$W_STEP_TIMEOUT" "$@" >"$tag.$sname.out" 2>"$tag.$sname.err"; } 2>/dev/null || src=$?
        (( src == 0 )) && return 0
        local msg sig
        if (( src == 124 || src == 137 )); then
            msg="timed out after ${W_STEP_TIMEOUT}s"
        else
            msg=$(first_line "$tag.$sname.err" "$tag.$sname.out")
            msg=${msg#"$in $back "}   # cmp: "A B differ: byte N, line M"
            if (( src > 128 && src < 160 )); then
                sig=$(kill -l $(( src - 128 )) 2>/dev/null) || sig=$(( src - 128 ))
                if [[ -n $msg ]]; then msg="$msg (killed by SIG$sig)"; else msg="killed by SIG$sig"; fi
            fi
            [[ -n $msg ]] || msg="exit status $src (no output)"
        fi
        report FAIL "$sname: $msg"
        return 1
    }
    produced() {  # step, file: a zero exit status must come with an output file
        [[ -f $2 ]] && return 0
        report FAIL "$1: exit status 0 but no output file written"
        return 1
    }
    if step pack "$W_BIN" pack -q "$in" "$z" && produced pack "$z" &&
       step unpack "$W_BIN" unpack -q "$z" "$back" && produced unpack "$back" &&
       step cmp cmp -- "$in" "$back" &&
       step info "$W_BIN" info "$z"
    then
        report PASS; tidy PASS
    else
        tidy FAIL
    fi
    return 0
}
export -f worker
export W_WORK="$work" W_BIN="$bin" W_MAX_BYTES="$max_bytes" \
    W_NCGEN_TIMEOUT="$ncgen_timeout" W_STEP_TIMEOUT="$step_timeout" \
    W_VERBOSE="${CONFORMANCE_VERBOSE:-0}" W_KEEP="${CONFORMANCE_KEEP:-0}" \
    W_XFSZ_RC=$(( 128 + $(kill -l XFSZ) ))

printf '# nc3pack conformance: %s\n# CDL dir: %s (%d files x %d kinds), %d jobs\n' \
    "$bin" "$cdl_dir" "${#cdls[@]}" "${#kinds[@]}" "$jobs"
start=$SECONDS

# Workers always exit 0; a nonzero xargs status means something broke in the
# harness itself. Missing result files are counted as failures below.
xargs_rc=0
for cdl in "${cdls[@]}"; do
    for kind in "${kinds[@]}"; do
        printf '%s\0%s\0' "$cdl" "$kind"
    done
done | xargs -0 -n 2 -P "$jobs" bash -c 'worker "$@"' worker || xargs_rc=$?

passed=0 failed=0 skipped=0
for cdl in "${cdls[@]}"; do
    name=$(basename -- "$cdl" .cdl)
    for kind in "${kinds[@]}"; do
        status=$(cat -- "$work/results/$name.$kind" 2>/dev/null) || status=
        case $status in
            PASS) passed=$(( passed + 1 )) ;;
            FAIL) failed=$(( failed + 1 )) ;;
            SKIP) skipped=$(( skipped + 1 )) ;;
            *) failed=$(( failed + 1 ))
               printf 'FAIL %s %s: harness: no result recorded\n' "$(basename -- "$cdl")" "$kind" ;;
        esac
    done
done
(( xargs_rc == 0 )) || printf '# warning: xargs exited with status %d\n' "$xargs_rc" >&2
printf '# elapsed: %ds\n' $(( SECONDS - start ))
printf 'conformance: %d passed, %d failed, %d skipped\n' "$passed" "$failed" "$skipped"
(( failed == 0 ))
