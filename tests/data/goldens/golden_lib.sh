# shellcheck shell=bash
# Shared by regenerate.sh and tests/cli/goldens.test.sh; sourced from the repository root.

# Every model folder that has a golden, relative to the repository root, one per line.
golden_folders() {
  local d
  for d in tests/data/corpus/*/ tests/data/reconstructed/*/; do
    [ -d "$d" ] && printf '%s\n' "${d%/}"
  done
}

# The golden's path without its extension, for a folder from golden_folders.
golden_base() {
  case "$1" in
    tests/data/corpus/*) printf 'tests/data/goldens/%s\n' "${1#tests/data/corpus/}" ;;
    tests/data/reconstructed/*) printf 'tests/data/goldens/reconstructed/%s\n' "${1#tests/data/reconstructed/}" ;;
  esac
}

# golden_plan CLI DIR OUT ERR: plans DIR (10 s limit) and writes what its golden holds: for exit
# 0/1 the JSON to OUT with "model" normalised to DIR; for exit 2 `exit code: 2` and stderr to ERR.
# Returns the CLI's exit status (124 when it ran past the limit).
golden_plan() {
  local cli="$1" dir="$2" out="$3" err="$4" rc=0
  timeout 10 "$cli" plan "$dir" --json > "$out.raw" 2> "$err.raw" || rc=$?
  sed "s|^ \"model\": \".*\",\$| \"model\": \"$dir\",|" "$out.raw" > "$out"
  { printf 'exit code: %s\n' "$rc"; cat "$err.raw"; } > "$err"
  rm -f "$out.raw" "$err.raw"
  return "$rc"
}
