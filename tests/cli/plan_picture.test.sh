#!/usr/bin/env bash
# `quantpath plan --svg/--html` rendered by headless Chromium (Debian's chromium-headless-shell,
# installed by scripts/setup): the PNG has the SVG's size, and its pixels hold the first scheme's
# colour, the error outline's red and the unquantized hatching, in the cells the SVG places them.
# The page renders too. Usage: plan_picture.test.sh PATH_TO_QUANTPATH (from the repository root).
set -uo pipefail
cli="$1"
. tests/script_lib.sh
browser=$(command -v chromium-headless-shell || command -v chromium || true)
if [ -z "$browser" ]; then
  echo "FAIL: no chromium-headless-shell or chromium on PATH (scripts/setup installs it)"
  exit 1
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# render FILE PNG WIDTH HEIGHT
render() {
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$out/profile" \
    --window-size="$3,$4" --screenshot="$2" "file://$1" >"$out/chromium.log" 2>&1 ||
    fail "chromium on $1: $(tail -3 "$out/chromium.log")"
}

"$cli" plan tests/data/producers/bnb_qwen3moe_int8 --engine sglang --svg "$out/plan.svg" \
  --html "$out/plan.html" >/dev/null
rc=$?
[ "$rc" -eq 1 ] || fail "plan exits $rc, expected 1 (two experts decided error)"
[ -s "$out/plan.svg" ] && [ -s "$out/plan.html" ] || fail "plan wrote no picture"
size=$(grep -o '^<svg[^>]*' "$out/plan.svg" | sed -E 's/.* width="([0-9]+)" height="([0-9]+)".*/\1 \2/')
read -r width height <<<"$size"
render "$out/plan.svg" "$out/plan.png" "$width" "$height"
render "$out/plan.html" "$out/page.png" 1200 800
python3 tests/cli/png_colours.py "$out/plan.svg" "$out/plan.png" || fail "the SVG's PNG"
python3 tests/cli/png_colours.py --size-only "$out/page.png" 1200 800 || fail "the page's PNG"
finish plan_picture
