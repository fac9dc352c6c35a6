#!/usr/bin/env bash
# The CLI's surface as a shell user meets it: `quantpath` alone (the command list, exit 2),
# `--version` (exit 0), every command's --help, and the completion scripts generated from the
# command definitions: bash's completes commands, options and the values each option accepts
# (every dialect, the versioned ones included), zsh's parses (where zsh is installed).
# Usage: completion.test.sh PATH_TO_QUANTPATH (from the repository root).
set -uo pipefail
cli="$1"
. tests/script_lib.sh

rc=0
bare="$("$cli" 2>&1)" || rc=$?
[ "$rc" -eq 2 ] || fail "quantpath alone exits $rc, expected 2"
commands="$(sed -n '/^Subcommands:/,/^$/p' <<< "$bare" | awk 'NF && !/Subcommands:/ {print $1}')"
for c in plan explain load check run match diff bench completion; do
  grep -qx "$c" <<< "$commands" || fail "quantpath alone does not list '$c'"
done

version="$("$cli" --version)" || fail "--version exits $?"
[[ "$version" =~ ^quantpath\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "--version prints '$version'"

for c in $commands; do
  help="$("$cli" "$c" --help)" || fail "$c --help exits $?"
  # A user of an installed CLI has no docs/ folder to look in.
  grep -q 'docs/' <<< "$help" && fail "$c --help points at docs/"
done
grep -q 'vllm@0.33' <<< "$("$cli" plan --help)" || fail "plan --help does not list vllm@0.33"

# bash: complete COMP_WORDS as the shell would and print COMPREPLY.
script="$("$cli" completion bash)" || fail "completion bash exits $?"
complete_words() {
  bash -c "$script"'
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
    _quantpath
    printf "%s\n" "${COMPREPLY[@]}"' _ "$@"
}
for c in $commands; do
  grep -qx "$c" <<< "$(complete_words quantpath '')" || fail "bash does not complete '$c'"
done
got="$(complete_words quantpath plan --engine v | sort | tr '\n' ' ')"
[ "$got" = "vllm vllm@0.33 vllm@0.34 vllm@helpers " ] || fail "bash completes 'plan --engine v' to '$got'"
got="$(complete_words quantpath check --dev)"
[ -z "$got" ] || fail "check has no --device, bash completes it to '$got'"
got="$(complete_words quantpath load --dev)"
[ "$got" = "--device" ] || fail "bash completes 'load --dev' to '$got'"
got="$(complete_words quantpath run x --device sm1)"
[ "$got" = "sm100" ] || fail "bash completes 'run --device sm1' to '$got'"
got="$(complete_words quantpath plan examples/llama-tiny)"
[ "$got" = "examples/llama-tiny-fp8" ] || fail "bash completes a model folder to '$got'"
got="$(complete_words quantpath completion z)"
[ "$got" = "zsh" ] || fail "bash completes 'completion z' to '$got'"

if command -v zsh >/dev/null; then
  zsh -n <("$cli" completion zsh) || fail "the zsh completion does not parse"
else
  echo "zsh is not installed: its script's syntax is not checked"
fi

finish completion
