#!/usr/bin/env bash
# Golden plans: every model folder in tests/data/corpus/ and tests/data/reconstructed/ is planned
# again and compared with its committed golden in tests/data/goldens/ (`<name>.plan.json` for a
# plan, `<name>.rejected.txt` for a folder rejected with exit 2). A difference fails with the diff;
# so do a folder without a golden, a golden without a folder, a crash, and a plan taking over 10 s.
# Also: a plan's exit status is 1 exactly when its summary counts errors.
# Regenerate with tests/data/goldens/regenerate.sh after an intended change (see CHECKED.md there).
# Usage: goldens.test.sh PATH_TO_QUANTPATH (from the repository root).
set -uo pipefail
cli="$1"
. tests/data/goldens/golden_lib.sh
. tests/script_lib.sh
checked=0
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

declare -A expected
for dir in $(golden_folders); do
  base="$(golden_base "$dir")"
  expected["$base"]=1
  rc=0
  golden_plan "$cli" "$dir" "$tmp/out" "$tmp/err" || rc=$?
  checked=$((checked + 1))
  case "$rc" in
    0|1)
      if [ ! -f "$base.plan.json" ]; then
        if [ -f "$base.rejected.txt" ]; then
          fail "$dir: planned (exit $rc) but its golden says rejected:"; cat "$base.rejected.txt"
        else
          fail "$dir: no golden ($base.plan.json); run tests/data/goldens/regenerate.sh"
        fi
        continue
      fi
      if ! diff -u --label "$base.plan.json" --label "quantpath plan $dir --json" \
          "$base.plan.json" "$tmp/out" > "$tmp/diff"; then
        fail "$dir: plan differs from $base.plan.json ($(grep -c '^[-+][^-+]' "$tmp/diff") lines):"
        head -n 200 "$tmp/diff"
      fi
      if grep -q '^  "errors": 0,$' "$tmp/out"; then want=0; else want=1; fi
      [ "$rc" -eq "$want" ] || fail "$dir: exit $rc but the summary implies $want"
      ;;
    2)
      if [ ! -f "$base.rejected.txt" ]; then
        fail "$dir: rejected (exit 2) but has no $base.rejected.txt:"; cat "$tmp/err"
        continue
      fi
      if ! diff -u --label "$base.rejected.txt" --label "quantpath plan $dir --json (exit, stderr)" \
          "$base.rejected.txt" "$tmp/err"; then
        fail "$dir: rejection differs from $base.rejected.txt"
      fi
      ;;
    124) fail "$dir: plan ran past 10 s" ;;
    *) fail "$dir: exit $rc (crash?):"; cat "$tmp/err" ;;
  esac
done

for golden in tests/data/goldens/*.plan.json tests/data/goldens/*.rejected.txt \
              tests/data/goldens/reconstructed/*.plan.json \
              tests/data/goldens/reconstructed/*.rejected.txt; do
  [ -f "$golden" ] || continue
  base="${golden%.plan.json}"
  base="${base%.rejected.txt}"
  [ -n "${expected[$base]:-}" ] || fail "$golden: no model folder for this golden"
  [ -f "$base.plan.json" ] && [ -f "$base.rejected.txt" ] && fail "$base: both a plan and a rejection"
  grep -qF "$(basename "$base")" tests/data/goldens/CHECKED.md ||
    fail "$golden: not listed in tests/data/goldens/CHECKED.md"
done

[ "$checked" -gt 0 ] || fail "no model folders found (run from the repository root)"
if [ "$failures" -eq 0 ]; then
  echo "goldens: $checked folders match"
  exit 0
fi
echo "goldens: $failures failure(s) over $checked folders"
exit 1
