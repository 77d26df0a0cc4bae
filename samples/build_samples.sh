#!/usr/bin/env bash
# Regenerate every sample .nc in this folder (or into OUTDIR) from its source:
#   *.cdl   -> ncgen with the kind listed below
#   make_*.py scripts for the generated files, bad/make_bad.py for bad/.
# Usage: samples/build_samples.sh [OUTDIR]
# Needs: netcdf-bin (ncgen, nccopy); python3 with netCDF4 + numpy.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${1:-$HERE}"
mkdir -p "$OUT" "$OUT/bad"

# name:kind  (kind as given to ncgen -k)
CDL_SAMPLES="
classic_records:classic
offset64_mixed:64-bit-offset
cdf5_types:cdf5
single_recvar_byte:classic
single_recvar_short:classic
single_recvar_char:classic
zero_records:classic
scalars:classic
attrs_all_types:classic
attrs_all_types_cdf5:cdf5
no_variables:classic
empty:classic
fill_values:classic
"

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

for entry in $CDL_SAMPLES; do
  name="${entry%%:*}"; kind="${entry##*:}"
  if [ "$name" = cdf5_types ]; then
    # ncgen 4.9.0 -k cdf5 truncates int64 DATA values to 32 bits
    # (-9223372036854775808 -> 0, 9223372036854775807 -> -1), so go through
    # netCDF-4 and convert; int64 attributes are fine either way.
    ncgen -k nc4 -o "$TMP/$name.nc4" "$HERE/$name.cdl"
    nccopy -k cdf5 "$TMP/$name.nc4" "$OUT/$name.nc"
  else
    ncgen -k "$kind" -o "$OUT/$name.nc" "$HERE/$name.cdl"
  fi
done

python3 "$HERE/make_empty_attrs.py" "$OUT"
python3 "$HERE/make_layout_quirks.py" "$OUT"
python3 "$HERE/make_gridded_sst.py" "$OUT/gridded_sst.nc"
python3 "$HERE/make_obs_points.py" "$OUT/obs_points.nc"
python3 "$HERE/bad/make_bad.py" "$OUT/bad"
