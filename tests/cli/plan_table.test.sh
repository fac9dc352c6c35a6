#!/usr/bin/env bash
# `quantpath plan`'s table as a terminal shows it: rows that fit COLUMNS (the least needed columns
# left out, long layer names cut in the middle), every column with --wide or when the width is
# unknown, one spelling of shapes (the JSON's), humanised bytes, the roll-up by scheme adding up to
# the summary, the index's total_size beside the planned bytes, and colour only on a terminal
# without NO_COLOR.
# Usage: plan_table.test.sh PATH_TO_QUANTPATH (from the repository root).
set -uo pipefail
cli="$1"
. tests/script_lib.sh
r1=tests/data/corpus/deepseek-ai__DeepSeek-R1

# The widest line, in characters (the ellipsis is one).
widest() { python3 -c 'import sys; print(max(len(l.rstrip("\n")) for l in sys.stdin))'; }
header() { grep -m1 '^layer ' <<< "$1" | tr -s ' ' | tr ' ' ','; }

for width in 80 100 140; do
  out="$(COLUMNS=$width "$cli" plan "$r1")"
  [ "$(widest <<< "$out")" -le "$width" ] || fail "COLUMNS=$width: a line of $(widest <<< "$out")"
done
out="$(COLUMNS=100 "$cli" plan "$r1")"
[ "$(header "$out")" = "layer,shape,scheme,bytes" ] || fail "COLUMNS=100 shows $(header "$out")"
grep -q '^model.layers.61.mlp.s…' <<< "$out" || fail "long names are not cut in the middle"
grep -qE '^model.layers.3.mlp.experts +\[256, 2048, 7168\] +w8a8-fp8-block128x128-dyn +1[0-9.]+ GiB$' \
  <<< "$out" || fail "the experts row is not [E, N, K] with humanised bytes"
all="layer,checkpoint_path,kind,shape,decision,scheme,spec_id,bytes"
[ "$(header "$(COLUMNS=80 "$cli" plan "$r1" --wide)")" = "$all" ] || fail "--wide leaves columns out"
[ "$(header "$(env -u COLUMNS "$cli" plan "$r1")")" = "$all" ] ||
  fail "an unknown width leaves columns out"

# The roll-up's layers add up to the summary's.
python3 - "$out" <<'PY' || fail "the roll-up does not add up"
import re, sys
text = sys.argv[1]
rows = text.split("by scheme", 1)[1].split("summary:", 1)[0].strip().splitlines()[1:]
counts = {re.split(r"\s{2,}", r.strip())[0]: int(re.split(r"\s{2,}", r.strip())[1]) for r in rows}
total = int(re.search(r"summary: (\d+) layers", text).group(1))
assert sum(counts.values()) == total, (counts, total)
assert counts["w8a8-fp8-block128x128-dyn"] == int(re.search(r"(\d+) quantized", text).group(1))
PY

grep -q '^index:   total_size 12.82 GiB; planned 12.82 GiB' <<< "$("$cli" plan tests/data/corpus/openai__gpt-oss-20b)" ||
  fail "gpt-oss-20b's index total_size is not beside the planned bytes"

# Colour: a pseudo-terminal (script) gets it, unless NO_COLOR; a pipe never does.
esc=$'\x1b['
if command -v script >/dev/null; then
  tty_out="$(script -qec "COLUMNS=100 $cli plan $r1" /dev/null)"
  [[ "$tty_out" == *"$esc"* ]] || fail "no colour on a terminal"
  tty_out="$(NO_COLOR=1 script -qec "COLUMNS=100 $cli plan $r1" /dev/null)"
  [[ "$tty_out" != *"$esc"* ]] || fail "colour with NO_COLOR set"
fi
[[ "$out" != *"$esc"* ]] || fail "colour in a pipe"

finish plan_table
