#!/usr/bin/env bash
# Runs one libFuzzer target for a fixed number of inputs with a fixed seed (-seed=1), starting from
# the repository files its source's `// seeds:` lines name (globs relative to the repository root).
# The seeds are copied to a temporary folder and what the run adds goes to another, so nothing is
# written into the tree; on a failure both, with the crashing input, are kept and named.
# Usage: run_target.sh BINARY SOURCE RUNS [LIBFUZZER_OPTION...]   (ctest's fuzz.* and scripts/fuzz)
set -euo pipefail
shopt -s globstar nullglob
if (($# < 3)); then
  echo "usage: $0 BINARY SOURCE RUNS [LIBFUZZER_OPTION...]" >&2
  exit 2
fi
binary=$1 source=$2 runs=$3
shift 3
root=$(cd "$(dirname "$0")/../.." && pwd)
name=$(basename "$source" .cc)
read -r -a globs <<<"$(sed -n 's|^// seeds: ||p' "$source" | tr '\n' ' ')"
if ((${#globs[@]} == 0)); then
  echo "$source: no '// seeds:' line" >&2
  exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/quantpath_$name.XXXXXX")
mkdir "$work/new" "$work/seeds" "$work/tmp"
count=0
for glob in "${globs[@]}"; do
  for f in $(cd "$root" && echo $glob); do
    cp "$root/$f" "$work/seeds/$(echo "$f" | tr / _)"
    count=$((count + 1))
  done
done
if ((count == 0)); then
  echo "$source: its seeds (${globs[*]}) match no file" >&2
  rm -rf "$work"
  exit 2
fi
# A target's own temporary files (fuzz_checkpoint_index writes a folder) go under $work as well.
# -timeout: an input this slow is a bug (the library is linear time), not a slow machine.
start=$SECONDS
if ! TMPDIR="$work/tmp" "$binary" -runs="$runs" -seed=1 -timeout=60 -print_final_stats=1 \
    -artifact_prefix="$work/" "$@" "$work/new" "$work/seeds" >"$work/log" 2>&1; then
  tail -n 80 "$work/log"
  echo "fuzz: $name failed; its log, the crashing input and the corpus are kept in $work" >&2
  exit 1
fi
echo "fuzz: $name: $count seeds, $runs runs, $((SECONDS - start)) s," \
  "$(ls "$work/new" | wc -l) new inputs," \
  "peak RSS $(sed -n 's/^stat::peak_rss_mb:[[:space:]]*//p' "$work/log") MB"
rm -rf "$work"
