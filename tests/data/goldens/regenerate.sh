#!/usr/bin/env bash
# Rewrites every golden plan in tests/data/goldens/ from the current CLI.
#
# Usage: tests/data/goldens/regenerate.sh PATH_TO_QUANTPATH
#
# One golden per model folder:
#   tests/data/corpus/<name>/        → tests/data/goldens/<name>.plan.json or <name>.rejected.txt
#   tests/data/reconstructed/<name>/ → tests/data/goldens/reconstructed/<name>.plan.json or .rejected.txt
# A `.plan.json` is the output of `quantpath plan DIR --json` (exit 0, or 1 when some layer decided
# error) with "model" normalised to DIR relative to the repository root. A `.rejected.txt` holds,
# for exit 2, the line `exit code: 2` followed by stderr exactly as printed.
#
# After regenerating, review `git diff tests/data/goldens` and update CHECKED.md for every
# decision that changed.
set -euo pipefail
cli="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root"
. tests/data/goldens/golden_lib.sh

rm -f tests/data/goldens/*.plan.json tests/data/goldens/*.rejected.txt \
      tests/data/goldens/reconstructed/*.plan.json tests/data/goldens/reconstructed/*.rejected.txt
mkdir -p tests/data/goldens/reconstructed
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
status=0
for dir in $(golden_folders); do
  rc=0
  golden_plan "$cli" "$dir" "$tmp/out" "$tmp/err" || rc=$?
  base="$(golden_base "$dir")"
  case "$rc" in
    0|1) cp "$tmp/out" "$base.plan.json" ;;
    2) cp "$tmp/err" "$base.rejected.txt" ;;
    *) echo "$dir: exit $rc (crash or hang); no golden written" >&2; status=1 ;;
  esac
  echo "$dir: exit $rc"
done
exit "$status"
