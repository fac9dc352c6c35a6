#!/usr/bin/env bash
# Model folders named as Hugging Face tools name them: the bundled example copied into a hub cache
# as huggingface_hub lays it out (blobs/, snapshots/<commit>/ of symlinks, refs/main), then planned,
# checked, explained and diffed by repo id (HF_HUB_CACHE), by cache folder and by snapshot, each
# giving the example's own plan; a repo id not in the cache says where it looked (exit 2).
# Usage: hf_cache.test.sh PATH_TO_QUANTPATH (from the repository root).
set -uo pipefail
cli="$1"
. tests/script_lib.sh
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

example=examples/llama-tiny-fp8
commit=4f5e6d7c8b9a0f1e2d3c4b5a69788796a5b4c3d2
repo="$tmp/hub/models--quantpath--llama-tiny-fp8"
mkdir -p "$repo/blobs" "$repo/snapshots/$commit" "$repo/refs"
for f in "$example"/*; do
  blob="$(sha256sum "$f" | cut -c1-64)"
  cp "$f" "$repo/blobs/$blob"
  ln -s "../../blobs/$blob" "$repo/snapshots/$commit/$(basename "$f")"
done
printf '%s' "$commit" > "$repo/refs/main"

# The plan without its "model" field (the folder read), to compare plans of one model.
plan_body() {
  python3 -c 'import json, sys; p = json.load(sys.stdin); m = p.pop("model"); print(m); print(json.dumps(p, sort_keys=True))'
}
expected="$("$cli" plan "$example" --json | plan_body | tail -1)"
for name in quantpath/llama-tiny-fp8 "$repo" "$repo/snapshots/$commit"; do
  out="$(HF_HUB_CACHE="$tmp/hub" "$cli" plan "$name" --json)" || fail "plan $name exits $?"
  body="$(plan_body <<< "$out")"
  [ "$(head -1 <<< "$body")" = "$repo/snapshots/$commit" ] ||
    fail "plan $name reads $(head -1 <<< "$body")"
  [ "$(tail -1 <<< "$body")" = "$expected" ] || fail "plan $name differs from the example's plan"
done
HF_HUB_CACHE="$tmp/hub" "$cli" check quantpath/llama-tiny-fp8 >/dev/null ||
  fail "check by repo id exits $?"
HF_HUB_CACHE="$tmp/hub" "$cli" explain quantpath/llama-tiny-fp8 model.layers.0.mlp.down_proj \
  >/dev/null || fail "explain by repo id exits $?"
HF_HUB_CACHE="$tmp/hub" "$cli" diff quantpath/llama-tiny-fp8 >/dev/null ||
  fail "diff by repo id exits $?"
HF_HOME="$tmp" "$cli" run quantpath/llama-tiny-fp8 --layer model.layers.0.mlp.down_proj >/dev/null ||
  fail "run by repo id through HF_HOME exits $?"

rc=0
err="$(HF_HUB_CACHE="$tmp/hub" "$cli" plan quantpath/absent-model 2>&1)" || rc=$?
[ "$rc" -eq 2 ] || fail "a repo id not in the cache exits $rc"
grep -qF "$tmp/hub/models--quantpath--absent-model" <<< "$err" ||
  fail "the miss does not say where it looked: $err"

finish hf_cache
