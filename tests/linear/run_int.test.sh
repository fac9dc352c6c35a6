#!/usr/bin/env bash
# `quantpath run` on integer weight-only layers of the producer-written checkpoints
# (tests/data/producers: compressed-tensors pack-quantized, GPTQModel act-order, auto-round's
# gptq / awq / auto_round exports; 3-bit GPTQ and 8-bit pack-quantized among them): dense and
# fused layers run on the integer reference kernel and on the dispatcher's choice within tolerance (exit 0), and unusable layers
# exit 2 naming the tensor and the layer.
# Usage: run_int.test.sh PATH_TO_QUANTPATH (from the repository root).
set -uo pipefail
cli="$1"
. tests/script_lib.sh

# Each layer on the reference kernel (QUANTPATH_CPU_ISA=reference) and on the one the dispatcher
# picks for this CPU (a fast one where the CPU has its level).
check_run() {
  local dir="$1" layer="$2" spec="$3"
  local out rc isa kernel
  for isa in reference ""; do
    kernel=$([ -n "$isa" ] && echo "GemmIntW16_Ref" || echo "GemmIntW16")
    out=$(QUANTPATH_CPU_ISA="$isa" "$cli" run "$dir" --layer "$layer" --m 5 --seed 11 --json)
    rc=$?
    [ "$rc" -eq 0 ] || fail "run $dir --layer $layer (isa '$isa'): exit $rc: $out"
    echo "$out" | grep -q "\"spec_id\": \"$spec\"" || fail "run $dir --layer $layer: not $spec: $out"
    echo "$out" | grep -q "\"kernel\": \"$kernel" || fail "run $dir --layer $layer: kernel: $out"
    echo "$out" | grep -q '"pass": true' ||
      fail "run $dir --layer $layer (isa '$isa'): not within tolerance: $out"
  done
}

p=tests/data/producers
while read -r folder spec; do
  for layer in model.layers.0.self_attn.qkv_proj model.layers.1.self_attn.o_proj \
               model.layers.0.mlp.gate_up_proj model.layers.1.mlp.down_proj; do
    check_run "$p/$folder" "$layer" "$spec"
  done
done <<'LIST'
ct_llama_w4a16_g64_sym int4_group_64
ct_llama_w4a16_g64_asym int4_group_64_zp
ct_llama_w4a16_channel int4_channel
gm_llama_gptq_w4g64_sym_desc_act int4_group_64_actorder
ar_llama_auto_gptq_w4g64_sym int4_group_64
ar_llama_auto_gptq_w4g64_asym int4_group_64_zp
ar_llama_auto_awq_w4g64_asym int4_group_64_zp
ar_llama_auto_round_w4g64_sym int4_group_64
ar_llama_auto_round_w4g64_asym int4_group_64_zp
ar_llama_auto_gptq_w3g64_sym int3_group_64
ct_llama_w8a16_g64_sym int8_group_64
LIST

# tests/data/checkpoints/llama-tiny-gptq holds random bytes under real GPTQ headers: its
# symmetric layers store zero points other than 8, and layer 0's down_proj is stored in F16.
out=$("$cli" run tests/data/checkpoints/llama-tiny-gptq --layer model.layers.1.mlp.down_proj 2>&1)
rc=$?
[ "$rc" -eq 2 ] || fail "random zero points: exit $rc, expected 2: $out"
[[ $out == *"model.layers.1.mlp.down_proj: the scheme is symmetric, but tensor model.layers.1.mlp.down_proj.qzeros holds zero point"* ]] ||
  fail "random zero points should name the tensor and the layer: $out"
out=$("$cli" run tests/data/checkpoints/llama-tiny-gptq --layer model.layers.0.mlp.down_proj 2>&1)
rc=$?
[ "$rc" -eq 2 ] || fail "missing qweight: exit $rc, expected 2: $out"
[[ $out == *"model.layers.0.mlp.down_proj: tensor model.layers.0.mlp.down_proj.qweight is not in the checkpoint"* ]] ||
  fail "missing qweight should name the tensor and the layer: $out"

finish run_int
