#!/usr/bin/env bash
# `quantpath plan` with what the model folder's checkpoint says: vLLM's derived GPTQ
# modules_in_block_to_quantize on config-only corpus folders and on a checkpoint whose shards hold
# I32 qweights, and an unknown architecture whose sites take their shapes from the shard headers.
# Usage: plan_checkpoint_facts.test.sh PATH_TO_QUANTPATH (from the repository root).
set -uo pipefail
cli="$1"
. tests/script_lib.sh

# summary_field JSON FIELD: the integer value of summary.FIELD.
summary_field() {
  python3 -c 'import json, sys; print(json.load(sys.stdin)["summary"][sys.argv[1]])' "$2" <<< "$1"
}

expect_quantized() {
  local dir="$1" engine="$2" want="$3" out rc
  out=$("$cli" plan "$dir" --engine "$engine" --json)
  rc=$?
  [ "$rc" -eq 0 ] || fail "plan $dir --engine $engine: exit $rc"
  local got
  got=$(summary_field "$out" quantized)
  [ "$got" = "$want" ] || fail "plan $dir --engine $engine: $got layers quantized, expected $want"
}

for engine in vllm vllm@0.33; do
  # 40 blocks × (qkv_proj, o_proj, gate_up_proj, down_proj); the LM head stays unquantized.
  expect_quantized tests/data/corpus/TheBloke__Llama-2-13B-chat-GPTQ "$engine" 160
  expect_quantized tests/data/corpus/TheBloke__MythoMax-L2-13B-GPTQ "$engine" 160
  # 2 blocks × 4 sites, less layer 0's down_proj, stored in f16.
  expect_quantized tests/data/checkpoints/llama-tiny-gptq "$engine" 7
done
out=$("$cli" plan tests/data/corpus/TheBloke__Llama-2-13B-chat-GPTQ --engine vllm)
echo "$out" | grep -q "assumed the GPTQ exporters' standard layout" ||
  fail "no note saying the layout was assumed: $out"

out=$("$cli" plan tests/data/models/unknown-arch-tiny --json)
rc=$?
[ "$rc" -eq 0 ] || fail "plan unknown-arch-tiny: exit $rc"
[ "$(summary_field "$out" errors)" = "0" ] || fail "unknown-arch-tiny: errors in $out"
echo "$out" | grep -q "is not positive" && fail "unknown-arch-tiny: a [0, 0] shape: $out"
[ "$(summary_field "$out" quantized)" = "3" ] ||
  fail "unknown-arch-tiny: wqkv, wo and the experts should be fp8: $out"

finish plan_checkpoint_facts
