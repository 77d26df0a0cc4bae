#!/usr/bin/env bash
# All of nc3pack's tests, in one command: the Rust tests (cargo test), then the Python
# package built from python/ into a virtual environment and its pytest suite (the package
# against netCDF4-python, the xarray backend against xarray's netcdf4 engine, dask).
#
# Usage: scripts/test.sh [CARGO TEST ARGS...]
#
# Needs only Rust (cargo) and Python >= 3.9 with its venv module; pip fetches the Python
# dependencies into the environment (so system pip restrictions, PEP 668, do not apply).
#
# Environment:
#   NC3PACK_VENV   the virtual environment (default: target/pyvenv; created if missing)
#   PYTHON         interpreter to create it with (default: python3)
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${NC3PACK_VENV:-target/pyvenv}
[[ $venv == /* ]] || venv=$PWD/$venv
python=${PYTHON:-python3}
echo "== Python environment $venv (test dependencies)"
if [[ ! -x $venv/bin/python ]]; then
    "$python" -m venv "$venv" || {
        echo "scripts/test.sh: '$python -m venv' failed (on Debian/Ubuntu: apt-get install python3-venv)" >&2
        exit 1
    }
fi
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q pytest numpy xarray netCDF4 "dask[array]" distributed s3fs h5netcdf h5py

echo "== Rust tests"
# The Rust tests that compare with netCDF-C through netCDF4-python use this environment's.
NC3PACK_TEST_PYTHON="$venv/bin/python" cargo test --locked "$@"

echo "== the vendored Pcodec fork (nc3pack-pco): its own tests"
cargo test --locked -p nc3pack-pco

echo "== netCDF-C plugin: unit tests, then Debian's ncdump, nccopy, ncks and a C program"
cargo test --locked -p nc3pack-netcdf
bash scripts/plugin-test.sh

echo "== Python source distribution (it must carry the vendored crates it builds with)"
"$venv/bin/python" -m pip install -q "maturin>=1.9.4,<2"
sdist_dir=$(mktemp -d)
trap 'rm -rf "$sdist_dir"' EXIT
"$venv/bin/maturin" sdist -m python/Cargo.toml -o "$sdist_dir" >/dev/null 2>&1 || {
    echo "scripts/test.sh: maturin sdist failed" >&2
    exit 1
}
listing=$(tar tzf "$sdist_dir"/nc3pack-*.tar.gz)
for f in vendor/pco/Cargo.toml vendor/pco/src/lib.rs vendor/pco/LICENSE src/codec/header_dict.bin; do
    if ! grep -qx "nc3pack-[^/]*/$f" <<<"$listing"; then
        echo "scripts/test.sh: the Python sdist lacks $f" >&2
        exit 1
    fi
done

echo "== Python package into $venv"
# Not editable: the tests run against the package as users install it.
"$venv/bin/python" -m pip install -q --force-reinstall --no-deps ./python

echo "== Python tests"
# Run from python/tests' parent with the pytest script (not `python -m pytest` in python/),
# so that `import nc3pack` finds the installed package, not the source directory. pytest
# exits 5 when it collects no tests: that fails this script like any other failure.
"$venv/bin/pytest" -q -p no:cacheprovider python/tests
