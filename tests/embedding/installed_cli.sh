#!/usr/bin/env bash
# The installed CLI as a user runs it, away from the source tree: `plan` without a folder plans
# the example installed beside it, --version matches the package, and the bash and zsh
# completions are installed where those shells look.
# Usage: installed_cli.sh PREFIX
set -euo pipefail
prefix="$1"
cli="$prefix/bin/quantpath"
cd "$(mktemp -d)"
trap 'rm -rf "$PWD"' EXIT
"$cli" --version
"$cli" plan --json | python3 -c '
import json, sys
plan = json.load(sys.stdin)
assert plan["model"].startswith(sys.argv[1] + "/share/quantpath/examples/"), plan["model"]
assert plan["summary"]["layers"] > 0, plan["summary"]
' "$prefix"
grep -q '^complete -o filenames -F _quantpath quantpath' "$prefix/share/bash-completion/completions/quantpath"
grep -q '^#compdef quantpath' "$prefix/share/zsh/site-functions/_quantpath"
echo "installed CLI: plan, --version and completions work"
