#!/usr/bin/env bash
# Check the samples: every good .nc reads with ncdump and has the expected
# kind, every .cdl goes through ncgen, everything regenerates byte-exactly
# from its source (build_samples.sh into a temp dir + cmp), and the files in
# bad/ are rejected by `ncdump -h` except the ones known to be accepted.
# Usage: samples/check_samples.sh     (exit 0 = all good)
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail=0; ok=0
pass() { ok=$((ok+1)); }
bad()  { echo "FAIL: $*"; fail=$((fail+1)); }

# name:expected `ncdump -k` output
GOOD="
classic_records:classic
offset64_mixed:64-bit offset
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
empty_attrs:classic
empty_attrs_cdf5:cdf5
header_gap:classic
trailing_bytes:classic
gridded_sst:64-bit offset
obs_points:classic
"
IFS=$'\n'
for entry in $GOOD; do
  name="${entry%%:*}"; kind="${entry#*:}"
  f="$HERE/$name.nc"
  [ -f "$f" ] || { bad "$name.nc missing"; continue; }
  k="$(ncdump -k "$f" 2>&1)"; [ "$k" = "$kind" ] && pass || bad "$name.nc kind '$k' != '$kind'"
  ncdump "$f" > /dev/null 2>"$TMP/err" && pass || bad "ncdump $name.nc: $(cat "$TMP/err")"
  [ -f "$HERE/$name.cdl" ] && pass || bad "$name.cdl missing"
done
unset IFS

# every .cdl goes through ncgen with its file's kind (header-only CDLs too)
for c in "$HERE"/*.cdl; do
  nc="${c%.cdl}.nc"
  case "$(ncdump -k "$nc" 2>/dev/null)" in
    "64-bit offset") kind=64-bit-offset ;; cdf5) kind=cdf5 ;; *) kind=classic ;;
  esac
  ncgen -k "$kind" -o "$TMP/roundtrip.nc" "$c" 2>"$TMP/err" && pass || bad "ncgen $(basename "$c"): $(cat "$TMP/err")"
done

# byte-exact regeneration
if "$HERE/build_samples.sh" "$TMP/regen" > "$TMP/build.log" 2>&1; then
  for f in "$HERE"/*.nc "$HERE"/bad/*.nc; do
    rel="${f#"$HERE"/}"
    cmp -s "$f" "$TMP/regen/$rel" && pass || bad "$rel does not regenerate byte-exactly"
  done
else
  bad "build_samples.sh failed: $(tail -5 "$TMP/build.log")"
fi

# bad files: ncdump -h must fail, except these known-accepted ones
ACCEPTED=" bad_utf8_name.nc huge_dim.nc hdf5.nc "
for f in "$HERE"/bad/*.nc; do
  b="$(basename "$f")"
  if ncdump -h "$f" > /dev/null 2>&1; then
    case "$ACCEPTED" in *" $b "*) pass ;; *) bad "ncdump -h accepted bad/$b" ;; esac
  else
    case "$ACCEPTED" in *" $b "*) bad "ncdump -h now rejects bad/$b (update README)" ;; *) pass ;; esac
  fi
done

echo "$ok passed, $fail failed"
[ "$fail" -eq 0 ]
