# Sourced by the scripted tests (tests/**/*.test.sh, run from the repository root): `fail WHY`
# records a failed check and goes on, so one run reports every failure; `finish NAME` ends the
# script, exit 1 when any check failed.
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$1: $failures failure(s)"
    exit 1
  fi
  echo "$1: all checks passed"
  exit 0
}
