#!/usr/bin/env bash
# `quantpath run` on the bundled checkpoints: dense and fused layers within tolerance (exit 0),
# the JSON object's keys, leg names resolving to their fused site, and exit 2 for unusable input.
# Usage: run_command.test.sh PATH_TO_QUANTPATH (from the repository root).
set -uo pipefail
cli="$1"
. tests/script_lib.sh

layers="model.layers.0.self_attn.qkv_proj model.layers.0.self_attn.o_proj
        model.layers.0.mlp.gate_up_proj model.layers.0.mlp.down_proj lm_head"
for dir in examples/llama-tiny-fp8 tests/data/checkpoints/llama-tiny-fp8-sharded \
           tests/data/checkpoints/llama-tiny-fp8-static; do
  for layer in $layers; do
    for m in 1 33; do
      out=$("$cli" run "$dir" --layer "$layer" --m "$m" --seed 7 --json)
      rc=$?
      [ "$rc" -eq 0 ] || fail "run $dir --layer $layer --m $m: exit $rc: $out"
      for key in layer spec_id kernel m max_abs mean_abs rel tol time_ms; do
        echo "$out" | grep -q "\"$key\":" || fail "run $dir --layer $layer: no \"$key\" in $out"
      done
    done
  done
done

out=$("$cli" run examples/llama-tiny-fp8 --layer model.layers.1.self_attn.k_proj)
[ $? -eq 0 ] || fail "a leg name: exit $?"
echo "$out" | grep -q "^note: .*model.layers.1.self_attn.qkv_proj" || fail "no note for a leg: $out"
echo "$out" | grep -q "^spec_id  fp8_block_128_128" || fail "block spec expected: $out"
echo "$out" | grep -q "^ok$" || fail "ok expected: $out"

static=$("$cli" run tests/data/checkpoints/llama-tiny-fp8-static --layer model.layers.0.mlp.up_proj)
echo "$static" | grep -q "^spec_id  fp8_per_tensor" || fail "per-tensor spec expected: $static"
echo "$static" | grep -q "^act      fp8 static per-tensor" || fail "static activations: $static"

expect_exit() {
  local want="$1"
  shift
  "$cli" "$@" > /dev/null 2>&1
  local rc=$?
  [ "$rc" -eq "$want" ] || fail "quantpath $*: exit $rc, expected $want"
}
expect_exit 2 run examples/llama-tiny-fp8 --layer model.layers.9.mlp.down_proj
expect_exit 2 run examples/llama-tiny-fp8 --layer model.layers.0.self_attn.attn
expect_exit 2 run examples/llama-tiny-fp8 --layer model.embed_tokens
expect_exit 2 run examples/llama-tiny-fp8 --layer lm_head --m 0
expect_exit 2 run examples/does-not-exist --layer lm_head
expect_exit 2 run examples/llama-tiny-fp8
QUANTPATH_CPU_ISA=bogus "$cli" run examples/llama-tiny-fp8 --layer lm_head > /dev/null 2>&1
[ $? -eq 2 ] || fail "QUANTPATH_CPU_ISA=bogus should exit 2"
out=$(QUANTPATH_CPU_DISABLE=amx,sse9 "$cli" run examples/llama-tiny-fp8 --layer lm_head 2>&1)
rc=$?
[ $rc -eq 2 ] || fail "QUANTPATH_CPU_DISABLE=amx,sse9: exit $rc, expected 2"
[[ $out == *"QUANTPATH_CPU_DISABLE = 'amx,sse9': 'sse9' is not a CPU feature"* ]] ||
  fail "QUANTPATH_CPU_DISABLE=amx,sse9 should name the unknown feature: $out"
QUANTPATH_CPU_ISA=reference QUANTPATH_CPU_DISABLE=amx,avx512bf16 "$cli" run examples/llama-tiny-fp8 \
  --layer lm_head > /dev/null 2>&1 || fail "QUANTPATH_CPU_ISA=reference with features disabled should run"

finish run_command
