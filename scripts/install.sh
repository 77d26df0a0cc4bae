#!/usr/bin/env bash
# Installs the nc3pack command and the netCDF-C plugin library side by side:
#   PREFIX/bin/nc3pack  and  PREFIX/lib/libnc3pack_netcdf.so
# where `nc3pack netcdf-plugin` finds the library (../lib beside the program), so the lines it
# prints (LD_PRELOAD=..., the RC file lines) name a file that stays when the build is cleaned.
#
# Usage: scripts/install.sh [PREFIX]
#   PREFIX defaults to cargo's install root ($CARGO_INSTALL_ROOT, else $CARGO_HOME, else
#   ~/.cargo), whose bin/ is on PATH after rustup's set-up.
#
# Environment:
#   NC3PACK_PROFILE  cargo profile to build (default: dist, release without debug info)
#
# Needs only Rust (cargo); a cold build takes about 15 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}}
profile=${NC3PACK_PROFILE:-dist}
# One target directory for both, so the library crates are built once.
cargo install --locked --profile "$profile" --target-dir target --path bin --root "$prefix" --force
cargo build --locked --profile "$profile" -p nc3pack-netcdf
dir=$profile
[[ $profile == dev ]] && dir=debug
install -D -m 755 "target/$dir/libnc3pack_netcdf.so" "$prefix/lib/libnc3pack_netcdf.so"
echo "installed $prefix/bin/nc3pack and $prefix/lib/libnc3pack_netcdf.so"
echo "netCDF-C tools read archives with:"
"$prefix/bin/nc3pack" netcdf-plugin | sed -n 's/^#   //p' | head -n 1
