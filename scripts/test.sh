#!/usr/bin/env bash
# All of nc3pack's tests, in one command. Suites, in order:
#   rust           the Rust tests (cargo test; arguments of this script are passed on)
#   pco            the vendored Pcodec fork's own tests (cargo test -p nc3pack-pco)
#   plugin-unit    the netCDF-C plugin's Rust tests (cargo test -p nc3pack-netcdf)
#   plugin-tools   the plugin under netCDF-C's own tools (scripts/plugin-test.sh)
#   python-sdist   the Python source distribution carries the vendored crates
#   python         the Python package, built from python/ into a virtual environment, and its
#                  pytest suite (against netCDF4-python, xarray, dask, s3fs)
#   conformance    every netcdf-c test CDL as CDF-1, CDF-2, CDF-5 (scripts/conformance.sh)
#
# Usage: scripts/test.sh [CARGO TEST ARGS...]   e.g. scripts/test.sh --test it batch
#
# Needs only Rust (cargo) and Python 3 with its venv module (the pinned Python dependencies,
# python/constraints.txt, are verified with Python 3.11); pip fetches those into the
# environment (so system pip restrictions, PEP 668, do not apply). A suite whose tools are
# missing is skipped and says what to install; so is a Rust test that needs a missing tool or
# server (it appends a line to the file NC3PACK_SKIP_LOG names: tests/it/util.rs, `skip`).
# The script ends with one line per suite, then "N passed, N failed, N skipped" (suites), then
# one line per skipped suite and per reason tests were skipped.
#
# Exit status: 0 when no suite failed; under CI (env CI set) a skipped suite or test fails too.
#
# Environment:
#   NC3PACK_TEST_SUITES  the suites to run, comma-separated (default: all of them)
#   NC3PACK_VENV         the virtual environment (default: target/pyvenv; created if missing)
#   PYTHON               interpreter to create it with (default: python3)
#   CONFORMANCE_DIR      the netcdf-c CDL files (default: ../shared/conformance/netcdf-c-cdl)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

all_suites=(rust pco plugin-unit plugin-tools python-sdist python conformance)
IFS=, read -r -a suites <<<"${NC3PACK_TEST_SUITES:-$(IFS=,; echo "${all_suites[*]}")}"
for s in "${suites[@]}"; do
    [[ " ${all_suites[*]} " == *" $s "* ]] || {
        echo "scripts/test.sh: unknown suite '$s' in NC3PACK_TEST_SUITES (suites: ${all_suites[*]})" >&2
        exit 2
    }
done
wanted() { [[ " ${suites[*]} " == *" $1 "* ]]; }

work=$(mktemp -d "${TMPDIR:-/tmp}/nc3pack-test.XXXXXX")
trap 'rm -rf -- "$work"' EXIT
export NC3PACK_SKIP_LOG=$work/skipped-tests
: >"$NC3PACK_SKIP_LOG"

summary=()   # one line per suite
skips=()     # one line per skipped suite
passed=0 failed=0 skipped=0
started=$SECONDS

# The time since $1 (seconds), as "12 s" or "3 min 4 s".
took() {
    local s=$((SECONDS - $1))
    if ((s >= 60)); then echo "$((s / 60)) min $((s % 60)) s"; else echo "$s s"; fi
}
# pass|fail NAME START [DETAIL]
record() {
    local status=$1 name=$2 start=$3 detail=${4:-}
    summary+=("$(printf '%-24s %s, %s%s' "$name:" "$status" "$(took "$start")" "${detail:+; $detail}")")
    if [[ $status == passed ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
}
# skip NAME WHY
skip() {
    summary+=("$(printf '%-24s %s' "$1:" "skipped")")
    skips+=("skipped: $1 ($2)")
    skipped=$((skipped + 1))
    echo "== $1: skipped ($2)"
}
# suite NAME COMMAND...: runs it, records passed or failed.
suite() {
    local name=$1 start=$SECONDS
    shift
    echo "== $name"
    if "$@"; then record passed "$name" "$start"; else record failed "$name" "$start"; fi
}
# The packages of what is missing, in order, once each: "need ITEM PACKAGE".
missing=() packages=()
need() {
    missing+=("$1")
    [[ " ${packages[*]} " == *" $2 "* ]] || packages+=("$2")
}
have() { command -v "$1" >/dev/null 2>&1; }

# The Python environment: the Rust tests compare with netCDF-C through its netCDF4-python, the
# Python suites run in it.
venv=${NC3PACK_VENV:-target/pyvenv}
[[ $venv == /* ]] || venv=$PWD/$venv
python=${PYTHON:-python3}
pyenv_ok=0
setup_python() {
    echo "== Python environment $venv (test dependencies, pinned: python/constraints.txt)"
    if [[ ! -x $venv/bin/python ]]; then
        "$python" -m venv "$venv" || {
            echo "scripts/test.sh: '$python -m venv' failed (on Debian/Ubuntu: apt-get install python3-venv)" >&2
            return 1
        }
    fi
    "$venv/bin/python" -m pip install -q --upgrade pip &&
        "$venv/bin/python" -m pip install -q -c python/constraints.txt pytest numpy xarray \
            netCDF4 "dask[array]" distributed s3fs fsspec aiohttp h5netcdf h5py scipy maturin || {
        echo "scripts/test.sh: installing the Python test dependencies failed (python/constraints.txt pins them for Python 3.11)" >&2
        return 1
    }
}
if wanted rust || wanted python || wanted python-sdist; then
    start=$SECONDS
    if setup_python; then
        pyenv_ok=1
    else
        record failed "Python environment" "$start"
    fi
fi

if wanted rust; then
    # The Rust tests that compare with netCDF-C through netCDF4-python use this environment's.
    start=$SECONDS
    echo "== rust tests (cargo test --locked $*)"
    if [[ $pyenv_ok == 1 ]]; then export NC3PACK_TEST_PYTHON=$venv/bin/python; fi
    if cargo test --locked "$@"; then status=passed; else status=failed; fi
    n=$(sort -u "$NC3PACK_SKIP_LOG" | wc -l)
    record "$status" "rust tests" "$start" "$( ((n == 0)) || echo "$n tests skipped, named below")"
fi

wanted pco && suite "pco tests" cargo test --locked -p nc3pack-pco
wanted plugin-unit && suite "plugin unit tests" cargo test --locked -p nc3pack-netcdf

if wanted plugin-tools; then
    # What scripts/plugin-test.sh runs: netCDF-C's tools, NCO's ncks, a C program against
    # libnetcdf and a Fortran program against netCDF-Fortran (its netcdf.mod module).
    missing=() packages=()
    for t in ncgen ncdump nccopy; do have $t || need $t netcdf-bin; done
    have ncks || need ncks nco
    if ! have gcc; then
        need gcc gcc
    elif ! printf '#include <netcdf.h>\nint main(void) { return !nc_inq_libvers(); }\n' |
        gcc -x c -o "$work/nc-c" - -lnetcdf >/dev/null 2>&1; then
        need "netcdf.h and libnetcdf.so" libnetcdf-dev
    fi
    if ! have gfortran; then
        need gfortran gfortran
        # Without a compiler to ask, where Debian puts it.
        [[ -f /usr/include/netcdf.mod ]] || need "the netcdf.mod Fortran module" libnetcdff-dev
    elif ! printf 'program p\nuse netcdf\nprint *, trim(nf90_inq_libvers())\nend program p\n' \
        >"$work/nc-f.f90" || ! gfortran -o "$work/nc-f" "$work/nc-f.f90" -I/usr/include \
        -lnetcdff >/dev/null 2>&1; then
        need "the netcdf.mod Fortran module and libnetcdff.so" libnetcdff-dev
    fi
    if ((${#missing[@]} == 0)); then
        start=$SECONDS
        echo "== netCDF-C plugin tools: release builds, then scripts/plugin-test.sh"
        if cargo build --release --locked --bin nc3pack &&
            cargo build --release --locked -p nc3pack-netcdf &&
            bash scripts/plugin-test.sh; then
            record passed "netCDF-C plugin tools" "$start"
        else
            record failed "netCDF-C plugin tools" "$start"
        fi
        # Its CDO and R checks run where those are installed (under CI it fails without them).
        part=()
        have cdo || part+=("cdo")
        have Rscript && Rscript -e 'library(ncdf4)' >/dev/null 2>&1 || part+=("R with ncdf4")
        if ((${#part[@]} > 0)); then
            list=$(printf '%s, ' "${part[@]}")
            skips+=("skipped: part of netCDF-C plugin tools, its ${list%, } checks (apt-get install cdo r-cran-ncdf4)")
        fi
    else
        list=$(printf '%s, ' "${missing[@]}")
        skip "netCDF-C plugin tools" "needs ${list%, }: apt-get install ${packages[*]}"
    fi
fi

sdist() {
    [[ $pyenv_ok == 1 ]] || { echo "scripts/test.sh: no Python environment" >&2; return 1; }
    local dir=$work/sdist listing f
    mkdir -p "$dir"
    "$venv/bin/maturin" sdist -m python/Cargo.toml -o "$dir" >"$work/sdist.log" 2>&1 || {
        cat "$work/sdist.log" >&2
        echo "scripts/test.sh: maturin sdist failed" >&2
        return 1
    }
    listing=$(tar tzf "$dir"/nc3pack-*.tar.gz) || return 1
    for f in vendor/pco/Cargo.toml vendor/pco/src/lib.rs vendor/pco/LICENSE src/codec/header_dict.bin; do
        if ! grep -qx "nc3pack-[^/]*/$f" <<<"$listing"; then
            echo "scripts/test.sh: the Python sdist lacks $f" >&2
            return 1
        fi
    done
}
wanted python-sdist && suite "python sdist" sdist

if wanted python; then
    start=$SECONDS
    echo "== python tests: the package into $venv, then pytest"
    status=failed detail=
    if [[ $pyenv_ok == 1 ]] &&
        # Not editable: the tests run against the package as users install it.
        "$venv/bin/python" -m pip install -q --force-reinstall --no-deps ./python; then
        # Run from python/tests' parent with the pytest script (not `python -m pytest` in
        # python/), so that `import nc3pack` finds the installed package, not the source
        # directory. pytest exits 5 when it collects no tests: that fails like any failure.
        # -rs: the reason of every skipped test, listed at the end.
        "$venv/bin/pytest" -q -rs -p no:cacheprovider python/tests 2>&1 | tee "$work/pytest.log"
        [[ ${PIPESTATUS[0]} == 0 ]] && status=passed
        detail=$(grep -E '^=*.*[0-9]+ (passed|failed|error).* in [0-9.]+s' "$work/pytest.log" |
            tail -n1 | sed -E 's/^=+ //; s/ =+$//; s/ in [0-9.]+s.*//')
    fi
    record "$status" "python tests" "$start" "$detail"
fi

if wanted conformance; then
    cdl_dir=${CONFORMANCE_DIR:-$root/../shared/conformance/netcdf-c-cdl}
    missing=() packages=()
    have ncgen || need ncgen "apt-get install netcdf-bin"
    [[ -d $cdl_dir ]] ||
        need "the netcdf-c CDL files in $cdl_dir" "set CONFORMANCE_DIR to a copy of netcdf-c's CDL test files"
    if ((${#missing[@]} == 0)); then
        start=$SECONDS
        echo "== conformance: netcdf-c test CDL files as CDF-1, CDF-2, CDF-5"
        if cargo build --release --locked --bin nc3pack &&
            CONFORMANCE_DIR=$cdl_dir bash scripts/conformance.sh target/release/nc3pack; then
            record passed conformance "$start"
        else
            record failed conformance "$start"
        fi
    else
        list=$(printf '%s, ' "${missing[@]}")
        how=$(printf '%s; ' "${packages[@]}")
        skip conformance "needs ${list%, }: ${how%; }"
    fi
fi

echo
echo "== summary ($(took "$started"))"
printf '%s\n' "${summary[@]}"
echo "$passed passed, $failed failed, $skipped skipped"
if ((${#skips[@]} > 0)); then printf '%s\n' "${skips[@]}"; fi
# Rust tests that could not run, by reason: "nc3pack-skip: TEST: REASON" lines.
tests_skipped=$(sort -u "$NC3PACK_SKIP_LOG" | wc -l)
if ((tests_skipped > 0)); then
    sort -u "$NC3PACK_SKIP_LOG" | sed -E 's/^nc3pack-skip: ([^:]+(::[^:]+)*): /\1\t/' |
        awk -F'\t' '{ n[$2]++; t[$2] = t[$2] "\n    " $1 } END {
            for (r in n) printf "skipped: %d Rust test%s (%s):%s\n", n[r], n[r] == 1 ? "" : "s", r, t[r] }'
fi
# Python tests pytest skipped, by reason (some skip by design: a CDL file that ncgen cannot
# make as a given kind): pytest -rs prints "SKIPPED [COUNT] FILE:LINE: REASON".
if [[ -f $work/pytest.log ]] && grep -q '^SKIPPED ' "$work/pytest.log"; then
    grep '^SKIPPED ' "$work/pytest.log" |
        sed -E 's/^SKIPPED \[([0-9]+)\] ([^:]+):[0-9]+: /\1\t\2\t/' |
        awk -F'\t' '{ n[$3] += $1; if (!index(f[$3], $2)) f[$3] = f[$3] (f[$3] ? ", " : "") $2 }
            END { for (r in n) printf "skipped: %d Python test%s (%s): %s\n", n[r], n[r] == 1 ? "" : "s", f[r], r }'
fi

((failed == 0)) || exit 1
if [[ -n ${CI:-} ]] && ((skipped > 0 || tests_skipped > 0)); then
    echo "scripts/test.sh: CI is set: a skipped suite or test is a failure" >&2
    exit 1
fi
exit 0
