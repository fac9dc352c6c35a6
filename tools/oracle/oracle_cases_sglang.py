"""Inputs of the recorded cases of SGLang's own fp8, gptq, awq, bitsandbytes and w8a8 methods
(oracle_case_table.py holds the rest and calls add_sglang_cases first)."""


# The files whose logic SGLang's fp8 cases exercise (also the Qwen3.5 mapper case's).
SGLANG_FP8_CODE = ["layers/quantization/fp8.py", "layers/quantization/utils.py"]


def add_sglang_cases(add, *, lin, lm_head, moe, attn, dense_block, LLAMA_PMM, FP8, GPTQ, AWQ, BNB,
                     CT_FP8_ARGS, ct_config):
    # ------------------------------------------------------------------
    # SGLang fp8
    # ------------------------------------------------------------------
    sg_fp8 = SGLANG_FP8_CODE
    add(id="sglang-fp8-ignored-module-path", engine="sglang", format="fp8", code=sg_fp8,
        config={**FP8, "ignored_layers": ["model.layers.0.self_attn", "mlp.gate", "layers.1.mlp.down_proj",
                                          "lm_head"]},
        packed_modules_mapping=LLAMA_PMM,
        layers=dense_block(0) + dense_block(1) + [lin("model.layers.1.mlp.gate"), attn("model.layers.0.self_attn.attn", "sglang"), lm_head()],
        note="ignored_layers are matched on dotted module-path boundaries (entry == prefix, prefix starts with "
             "entry + '.', or '.entry.' inside '.prefix.'); from_config adds a 'model.'-prefixed and a "
             "'model.'-stripped copy of every entry")
    add(id="sglang-fp8-fused-legs", engine="sglang", format="fp8", code=sg_fp8,
        config={**FP8, "ignored_layers": [
            "model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.k_proj",
            "model.layers.1.self_attn.q_proj", "model.layers.1.self_attn.k_proj", "model.layers.1.self_attn.v_proj",
            "model.layers.0.mlp.gate_proj", "model.layers.1.mlp.gate_up_proj"]},
        packed_modules_mapping=LLAMA_PMM,
        layers=dense_block(0) + dense_block(1),
        note="fused qkv_proj / gate_up_proj: every leg is looked up; some-but-not-all legs raise; the fused name "
             "itself listed is not consulted when the mapping has the fused name")
    add(id="sglang-fp8-no-packed-mapping", engine="sglang", format="fp8", code=sg_fp8,
        config={**FP8, "ignored_layers": [
            "model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.k_proj", "model.layers.0.self_attn.v_proj",
            "model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj",
            "model.layers.1.self_attn.qkv_proj", "model.layers.1.mlp.gate_proj"]},
        packed_modules_mapping={},
        layers=dense_block(0) + dense_block(1),
        note="SGLang's Llama defines no packed_modules_mapping; is_layer_skipped then falls back to the built-in "
             "qkv_proj/gate_up_proj shard table")
    add(id="sglang-fp8-moe-experts", engine="sglang", format="fp8", code=sg_fp8,
        config={**FP8, "ignored_layers": ["model.layers.0.mlp.experts", "model.layers.1.mlp.experts.0.gate_proj",
                                          "layers.3", "shared_experts", "model.layers.4.mlp.gate"]},
        packed_modules_mapping={"qkv_proj": ["q_proj", "k_proj", "v_proj"], "gate_up_proj": ["gate_proj", "up_proj"]},
        layers=[moe(f"model.layers.{i}.mlp.experts", "sglang") for i in range(5)] + [
            lin("model.layers.2.mlp.shared_experts.gate_up_proj"), lin("model.layers.2.mlp.shared_experts.down_proj"),
            lin("model.layers.4.mlp.gate"), lin("model.layers.3.self_attn.o_proj"), lin("model.layers.2.self_attn.o_proj")],
        note="FusedMoE layers use the same skip test; an entry naming one expert projection skips the whole "
             "experts layer (reverse substring among entries containing 'experts')")
    add(id="sglang-fp8-modules-to-not-convert-kv", engine="sglang", format="fp8", code=sg_fp8,
        config={"quant_method": "fp8", "activation_scheme": "static",
                "modules_to_not_convert": ["layers.0.self_attn.o_proj", "model.layers.1.mlp"]},
        packed_modules_mapping=LLAMA_PMM,
        layers=dense_block(0) + dense_block(1) + [attn("model.layers.0.self_attn.attn", "sglang"), lm_head()],
        note="modules_to_not_convert is read when ignored_layers is absent; RadixAttention always gets the fp8 "
             "KV-cache method")
    add(id="sglang-fp8-qwen2_5_vl-mapper", engine="sglang", format="fp8", code=sg_fp8 + ["models/qwen2_5_vl.py"],
        config={**FP8, "ignored_layers": ["model.visual.blocks.0.attn.qkv", "model.language_model.layers.0.mlp.down_proj",
                                          "lm_head", "model.visual.merger.mlp.0"]},
        model_class="qwen2_5_vl.Qwen2_5_VLForConditionalGeneration",
        packed_modules_mapping={"gate_up_proj": ["gate_proj", "up_proj"]},
        layers=[lin("visual.blocks.0.attn.qkv_proj", "QKVParallelLinear"), lin("visual.blocks.1.attn.qkv_proj", "QKVParallelLinear"),
                lin("visual.merger.mlp.0", "ColumnParallelLinear"),
                lin("model.layers.0.mlp.down_proj"), lin("model.layers.0.self_attn.qkv_proj"),
                lin("model.layers.1.mlp.down_proj"), lm_head()],
        note="Qwen2.5-VL hf_to_sglang_mapper applied to ignored_layers (after the fp8 'model.' normalisation); "
             "SGLang's text stack keeps the 'model.' prefix while the mapper rewrites 'model.' to "
             "'language_model.model.'")

    # ------------------------------------------------------------------
    # SGLang gptq
    # ------------------------------------------------------------------
    sg_gptq = ["layers/quantization/gptq/gptq.py", "layers/quantization/utils.py"]
    add(id="sglang-gptq-dynamic-first-hit", engine="sglang", format="gptq", code=sg_gptq,
        config={**GPTQ, "dynamic": {
            "-:.*\\.layers\\.1\\..*": {},
            "+:.*\\.layers\\.1\\.mlp\\..*": {"bits": 8},
            "+:.*\\.layers\\.2\\..*": {"bits": 8, "group_size": 32},
            "+:.*\\.layers\\.2\\.mlp\\..*": {"bits": 8, "group_size": 64},
            ".*\\.layers\\.3\\..*": {"desc_act": True, "group_size": 64}}},
        packed_modules_mapping=LLAMA_PMM,
        layers=dense_block(0) + dense_block(1) + dense_block(2) + dense_block(3),
        note="dynamic is walked in order and the first matching key wins; '-:' skips, '+:' or no sign overrides")
    add(id="sglang-gptq-dynamic-anchoring", engine="sglang", format="gptq", code=sg_gptq,
        config={**GPTQ, "dynamic": {"-:model.layers.1": {}, "+:layers\\.0\\..*": {"bits": 8},
                                    "+:.*down_proj$": {"group_size": 32}}},
        packed_modules_mapping=LLAMA_PMM,
        layers=dense_block(0) + dense_block(1) + [lin("model.layers.10.self_attn.o_proj"), lin("model.layers.2.mlp.down_proj")],
        note="re.match anchors at the start only: '-:model.layers.1' also hits model.layers.10; a pattern "
             "without a leading '.*' never matches a 'model.'-prefixed name")
    add(id="sglang-gptq-dynamic-bad-override", engine="sglang", format="gptq", code=sg_gptq,
        config={**GPTQ, "dynamic": {"+:.*\\.down_proj": {"bits": 3}, "+:.*\\.o_proj": {"sym": False},
                                    "+:.*\\.gate_up_proj": {"bits": "8", "group_size": 64}}},
        packed_modules_mapping=LLAMA_PMM,
        layers=dense_block(0),
        note="per-layer overrides are validated against gptq_marlin's (bits, sym) table; values of the wrong "
             "type are ignored")
    add(id="sglang-gptq-lm-head-moe", engine="sglang", format="gptq", code=sg_gptq,
        config={**GPTQ, "lm_head": True, "dynamic": {"-:.*experts.*": {}, "-:model\\.layers\\.1\\..*": {}}},
        packed_modules_mapping=LLAMA_PMM,
        layers=[lm_head(), moe("model.layers.0.mlp.experts", "sglang"), moe("model.layers.1.mlp.experts", "sglang"),
                lin("model.layers.0.mlp.gate"), lin("model.layers.1.self_attn.o_proj")],
        note="lm_head: true quantizes ParallelLMHead; FusedMoE under gptq_marlin ignores dynamic")
    add(id="sglang-gptq-lm-head-dynamic-skip", engine="sglang", format="gptq", code=sg_gptq,
        config={**GPTQ, "lm_head": True, "dynamic": {"-:lm_head": {}}},
        packed_modules_mapping=LLAMA_PMM,
        layers=[lm_head(), lin("model.layers.0.self_attn.o_proj")])
    add(id="sglang-gptq-not-marlin-compatible", engine="sglang", format="gptq", code=sg_gptq,
        config={**GPTQ, "bits": 3, "dynamic": {"-:.*\\.o_proj": {}}},
        packed_modules_mapping=LLAMA_PMM,
        layers=dense_block(0) + [moe("model.layers.0.mlp.experts", "sglang"), lm_head()],
        note="bits=3 is not gptq_marlin compatible: the checkpoint stays on plain gptq, which refuses FusedMoE")
    add(id="sglang-gptq-user-gptq", engine="sglang", format="gptq", code=sg_gptq,
        config={**GPTQ, "dynamic": {"+:.*\\.down_proj": {"bits": 8}}},
        extra_inputs={"user_quantization": "gptq"},
        packed_modules_mapping=LLAMA_PMM,
        layers=dense_block(0),
        note="--quantization gptq keeps the plain GPTQ method although the checkpoint is marlin-compatible")

    # ------------------------------------------------------------------
    # SGLang awq
    # ------------------------------------------------------------------
    sg_awq = ["layers/quantization/awq/awq.py"]
    add(id="sglang-awq-modules-to-not-convert", engine="sglang", format="awq", code=sg_awq,
        config={**AWQ, "modules_to_not_convert": ["visual", "mlp.gate", "layers.1.self_attn.q_proj", "experts"]},
        packed_modules_mapping=LLAMA_PMM,
        layers=dense_block(0) + dense_block(1) + [lin("model.layers.1.mlp.gate"), lin("visual.blocks.0.attn.qkv_proj", "QKVParallelLinear"),
                                                  moe("model.layers.1.mlp.experts", "sglang"), lm_head()],
        note="modules_to_not_convert is a plain substring test with no fused-leg expansion ('mlp.gate' also "
             "skips gate_up_proj); awq resolves to awq_marlin on the CUDA stand-in")
    add(id="sglang-awq-moe-and-lm-head", engine="sglang", format="awq", code=sg_awq,
        config={**AWQ, "lm_head": True, "modules_to_not_convert": ["model.layers.0.mlp.experts"]},
        packed_modules_mapping=LLAMA_PMM,
        layers=[moe("model.layers.0.mlp.experts", "sglang"), moe("model.layers.1.mlp.experts", "sglang"), lm_head(),
                lin("model.layers.1.self_attn.qkv_proj")])
    add(id="sglang-awq-user-awq", engine="sglang", format="awq", code=sg_awq,
        config={**AWQ, "lm_head": True, "modules_to_not_convert": ["down_proj"]},
        extra_inputs={"user_quantization": "awq"},
        packed_modules_mapping=LLAMA_PMM,
        layers=dense_block(0) + [moe("model.layers.0.mlp.experts", "sglang"), lm_head()],
        note="--quantization awq keeps AWQConfig: no MoE method and no lm_head quantization off NPU")
    add(id="sglang-awq-group-size-not-marlin", engine="sglang", format="awq", code=sg_awq,
        config={**AWQ, "group_size": 256, "modules_to_not_convert": None},
        packed_modules_mapping=LLAMA_PMM,
        layers=dense_block(0) + [moe("model.layers.0.mlp.experts", "sglang")])

    # ------------------------------------------------------------------
    # SGLang bitsandbytes
    # ------------------------------------------------------------------
    sg_bnb = ["layers/quantization/bitsandbytes.py"]
    add(id="sglang-bnb-skip-modules", engine="sglang", format="bitsandbytes", code=sg_bnb,
        config={**BNB, "llm_int8_skip_modules": ["lm_head", "mlp", "model.layers.0.self_attn", "self_attn.o_proj",
                                                 "q_proj", "re:.*down_proj"]},
        packed_modules_mapping=LLAMA_PMM,
        layers=dense_block(0) + dense_block(1) + [lin("model.layers.1.mlp.gate"), lm_head()],
        note="entries match a whole dot-separated component or a leading dotted prefix; no fused expansion")
    add(id="sglang-bnb-moe-not-skipped", engine="sglang", format="bitsandbytes", code=sg_bnb,
        config={**BNB, "llm_int8_skip_modules": ["experts", "gate"]},
        packed_modules_mapping=LLAMA_PMM,
        layers=[moe("model.layers.0.mlp.experts", "sglang"), lin("model.layers.0.mlp.gate"),
                lin("model.layers.0.mlp.shared_experts.down_proj"), lin("model.layers.0.self_attn.o_proj")],
        note="FusedMoE always gets the bitsandbytes MoE method; llm_int8_skip_modules is not consulted for it")
    add(id="sglang-bnb-skip-null", engine="sglang", format="bitsandbytes", code=sg_bnb,
        config={**BNB, "load_in_4bit": False, "load_in_8bit": True, "llm_int8_skip_modules": None},
        packed_modules_mapping=LLAMA_PMM,
        layers=dense_block(0) + [lm_head()])

    # ------------------------------------------------------------------
    # SGLang w8a8_int8 / w8a8_fp8
    # ------------------------------------------------------------------
    sg_w8i8 = ["layers/quantization/w8a8_int8.py", "layers/quantization/compressed_tensors/utils.py"]
    add(id="sglang-w8a8-int8-ignore", engine="sglang", format="w8a8_int8", code=sg_w8i8,
        config={"quant_method": "w8a8_int8", "is_dynamic": True,
                "ignore": ["lm_head", "re:.*mlp\\.gate$", "model.layers.0.self_attn", "Down_Proj"]},
        packed_modules_mapping=LLAMA_PMM,
        layers=dense_block(0) + dense_block(1) + [lin("model.layers.1.mlp.gate"), attn("model.layers.0.self_attn.attn", "sglang"),
                                                  attn("model.layers.1.self_attn.attn", "sglang"),
                                                  moe("model.layers.1.mlp.experts", "sglang"), lm_head()],
        note="ignore uses the compressed-tensors should_ignore_layer (case-insensitive substring for plain "
             "entries, re.match for 're:'); the test runs before the layer type is looked at, so an ignored "
             "attention or lm_head gets UnquantizedLinearMethod")
    add(id="sglang-w8a8-int8-partial-fused", engine="sglang", format="w8a8_int8", code=sg_w8i8,
        config={"quant_method": "w8a8_int8", "ignore": ["model.layers.0.self_attn.q_proj", "model.layers.0.mlp.gate_up_proj",
                                                        "re:.*layers\\.1\\.self_attn\\.[qkv]_proj"]},
        packed_modules_mapping=LLAMA_PMM,
        layers=dense_block(0) + dense_block(1))
    add(id="sglang-w8a8-int8-user-over-ct", engine="sglang", format="w8a8_int8", code=sg_w8i8,
        config=ct_config({"group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "int", "strategy": "channel",
                                                                          "symmetric": True, "dynamic": False},
                                      "input_activations": {"num_bits": 8, "type": "int", "strategy": "token",
                                                            "symmetric": True, "dynamic": True}}},
                         ignore=["lm_head", "model.layers.1.mlp.down_proj"], fmt="int-quantized"),
        extra_inputs={"user_quantization": "w8a8_int8"},
        packed_modules_mapping=LLAMA_PMM,
        layers=dense_block(0) + dense_block(1) + [lm_head()],
        note="--quantization w8a8_int8 on a compressed-tensors checkpoint: W8A8Int8Config reads the CT 'ignore' list")
    sg_w8f8 = ["layers/quantization/w8a8_fp8.py"]
    add(id="sglang-w8a8-fp8-no-skip", engine="sglang", format="w8a8_fp8", code=sg_w8f8,
        config={"quant_method": "w8a8_fp8", "ignore": ["lm_head", "model.layers.0.mlp.down_proj"]},
        packed_modules_mapping=LLAMA_PMM,
        layers=dense_block(0) + [moe("model.layers.0.mlp.experts", "sglang"), attn("model.layers.0.self_attn.attn", "sglang"), lm_head()],
        note="W8A8Fp8Config has no skip list: every LinearBase and FusedMoE is quantized")
    add(id="sglang-w8a8-fp8-user-over-ct", engine="sglang", format="w8a8_fp8", code=sg_w8f8,
        config=ct_config({"group_0": {"targets": ["Linear"], **CT_FP8_ARGS}}, ignore=["lm_head", "re:.*down_proj"]),
        extra_inputs={"user_quantization": "w8a8_fp8"},
        packed_modules_mapping=LLAMA_PMM,
        layers=dense_block(0) + [lm_head()],
        note="--quantization w8a8_fp8 on a compressed-tensors FP8 checkpoint: the CT ignore list is not used")
