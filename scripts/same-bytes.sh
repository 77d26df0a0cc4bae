#!/usr/bin/env bash
# Do two builds of nc3pack write the same archives? Packs every netCDF-3 file under the given
# paths with both binaries, with the default settings and with `--level max`, and compares the
# archives byte for byte (cmp). Use it before and after a change that must not change the format:
#
#   git worktree add /tmp/base main && (cd /tmp/base && cargo build --release)
#   cargo build --release
#   scripts/same-bytes.sh /tmp/base/target/release/nc3pack target/release/nc3pack \
#       samples fuzz/seeds target/bench-corpus
#
# Files are found by their first bytes (CDF\1, CDF\2, CDF\5); a path may be a file or a directory
# (searched recursively). Extra settings to try besides the default and max can be given in
# SAME_BYTES_SETTINGS, one setting per line, e.g. $'--codec lzma\n--block-size 64KiB'.
# Output: one line per difference, then "same-bytes: N same, M differ, K failed to pack".
# Exit status: 0 if every archive is the same, 1 otherwise.

set -euo pipefail

[[ $# -ge 3 ]] || { echo "usage: scripts/same-bytes.sh OLD_BIN NEW_BIN PATH..." >&2; exit 2; }
old=$1 new=$2
shift 2
for b in "$old" "$new"; do
  [[ -x $b ]] || { echo "same-bytes.sh: not an executable: $b" >&2; exit 2; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/same-bytes.XXXXXX")
trap 'rm -rf "$work"' EXIT

settings=$'\n--level max'
[[ -n ${SAME_BYTES_SETTINGS:-} ]] && settings+=$'\n'"$SAME_BYTES_SETTINGS"

same=0 differ=0 failed=0
while IFS= read -r -d '' f; do
  magic=$(head -c 4 -- "$f" | od -An -tx1 | tr -d ' \n')
  case $magic in 43444601 | 43444602 | 43444605) ;; *) continue ;; esac
  while IFS= read -r setting; do
    # shellcheck disable=SC2086 # a setting is a list of words
    if ! "$old" pack -q -f $setting -- "$f" "$work/old.nc3z" 2>"$work/err" ||
      ! "$new" pack -q -f $setting -- "$f" "$work/new.nc3z" 2>>"$work/err"; then
      # Both refusing the file the same way is "same"; anything else is a failure.
      if ! "$old" pack -q -f $setting -- "$f" "$work/old.nc3z" 2>/dev/null &&
        ! "$new" pack -q -f $setting -- "$f" "$work/new.nc3z" 2>/dev/null; then
        same=$((same + 1))
      else
        echo "FAILED $f [${setting:-default}]: $(head -n1 "$work/err")"
        failed=$((failed + 1))
      fi
      continue
    fi
    if cmp -s "$work/old.nc3z" "$work/new.nc3z"; then
      same=$((same + 1))
    else
      echo "DIFFER $f [${setting:-default}]: $(cmp "$work/old.nc3z" "$work/new.nc3z" 2>&1 | head -n1)"
      differ=$((differ + 1))
    fi
  done <<<"$settings"
done < <(find -L "$@" -type f -print0 | sort -z)

echo "same-bytes: $same same, $differ differ, $failed failed to pack"
[[ $differ -eq 0 && $failed -eq 0 ]]
