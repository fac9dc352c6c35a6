"""Inputs of the recorded cases (configs, model mappings, layers).

Only inputs live here; `record_cases.py` executes the engines to produce the
expected decisions.  `code` names the engine files whose logic a case
exercises (recorded in `engine_commit`).
"""

from oracle_cases_sglang import SGLANG_FP8_CODE, add_sglang_cases

FP8 = {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True, "lm_head": False}
AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}
BNB = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
       "bnb_4bit_compute_dtype": "bfloat16", "bnb_4bit_use_double_quant": True}
CT_FP8_ARGS = {
    "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True, "dynamic": False},
    "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "symmetric": True, "dynamic": True},
}
CT_W4A16_ARGS = {
    "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": True,
                "dynamic": False},
    "input_activations": None,
}
QWEN3MOE_PMM = {"qkv_proj": ["q_proj", "k_proj", "v_proj"], "gate_up_proj": ["gate_proj", "up_proj"],
                "experts": ["experts.0.gate_proj", "experts.0.up_proj", "experts.0.down_proj"]}


def ct_config(groups, ignore=None, fmt="float-quantized", kv=None):
    cfg = {"quant_method": "compressed-tensors", "format": fmt, "quantization_status": "compressed",
           "config_groups": groups, "ignore": ignore or []}
    if kv is not None:
        cfg["kv_cache_scheme"] = kv
    return cfg


def build_cases(*, lin, lm_head, moe, attn, dense_block, LLAMA_PMM):
    cases = []

    def add(**c):
        cases.append(c)

    add_sglang_cases(add, lin=lin, lm_head=lm_head, moe=moe, attn=attn, dense_block=dense_block,
                     LLAMA_PMM=LLAMA_PMM, FP8=FP8, GPTQ=GPTQ, AWQ=AWQ, BNB=BNB,
                     CT_FP8_ARGS=CT_FP8_ARGS, ct_config=ct_config)

    # ------------------------------------------------------------------
    # AutoRound's MX export (SGLang only: vLLM reads it through INCConfig, not reproduced)
    # ------------------------------------------------------------------
    add(id="sglang-auto-round-mx-fp-export", engine="sglang", format="auto-round",
        code=["layers/quantization/auto_round.py", "configs/model_config.py"],
        config={"quant_method": "auto-round", "packing_format": "auto_round:llm_compressor", "bits": 4,
                "group_size": 32, "sym": True, "data_type": "mx_fp", "iters": 0, "model_free": True,
                "autoround_version": "0.15.1", "block_name_to_quantize": "model.layers", "act_bits": 4,
                "act_data_type": "mx_fp", "act_dynamic": True, "act_group_size": 32, "act_sym": True,
                "extra_config": {"lm_head": {"bits": 16, "data_type": "float", "act_bits": 16,
                                             "act_data_type": "float"}}},
        packed_modules_mapping=LLAMA_PMM, layers=dense_block(0) + [lm_head()],
        note="auto-round 0.15.1's MXFP4 export (format auto_round) as written into config.json")

    # ------------------------------------------------------------------
    # ModelOpt NVFP4 / MIXED_PRECISION
    # ------------------------------------------------------------------
    v_mo = ["model_executor/layers/quantization/modelopt.py", "model_executor/layers/quantization/utils/quant_utils.py"]
    s_mo = ["layers/quantization/modelopt_quant.py", "layers/quantization/utils.py", "configs/model_config.py"]
    nvfp4_nested = {"producer": {"name": "modelopt", "version": "0.37.0"},
                    "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": None, "group_size": 16,
                                     "exclude_modules": ["lm_head", "model.layers.0.self_attn*", "model.layers.1.mlp.gate"]}}
    nvfp4_layers = lambda e: dense_block(0) + dense_block(1) + [
        lin("model.layers.1.mlp.gate"), moe("model.layers.1.mlp.experts", e), attn("model.layers.1.self_attn.attn", e),
        lin("vision_tower.blocks.0.attn.qkv_proj", "QKVParallelLinear"), lm_head()]
    nvfp4_flat = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
                  "kv_cache_scheme": {"type": "float", "num_bits": 8, "dynamic": False},
                  "ignore": ["model.layers.0.self_attn*", "model.layers.1.mlp.gate"]}
    for e, code, pfx in (("vllm", v_mo, "vllm"), ("sglang", s_mo, "sglang")):
        add(id=f"{pfx}-modelopt-nvfp4-nested", engine=e, format="modelopt", code=code, config=nvfp4_nested,
            config_source="hf_quant_config.json", packed_modules_mapping=LLAMA_PMM, layers=nvfp4_layers(e),
            note="NVFP4 from a standalone hf_quant_config.json (nested form, no kv-cache algo)")
        add(id=f"{pfx}-modelopt-nvfp4-flat", engine=e, format="modelopt", code=code, config=nvfp4_flat,
            packed_modules_mapping=LLAMA_PMM, layers=nvfp4_layers(e),
            note="NVFP4 embedded in config.json (flat form); lm_head not excluded")
        add(id=f"{pfx}-modelopt-fp8-per-channel-written", engine=e, format="modelopt", code=code,
            config={"ignore": ["lm_head"], "quant_algo": "FP8_PER_CHANNEL_PER_TOKEN",
                    "producer": {"name": "modelopt", "version": "0.47.0"}, "quant_method": "modelopt"},
            packed_modules_mapping=LLAMA_PMM, layers=dense_block(0) + [lm_head()],
            note="the config.json `quantize --format modelopt --scheme w8a8-fp8-channel-dyn` writes")
        add(id=f"{pfx}-modelopt-nvfp4-nested-missing-fields", engine=e, format="modelopt", code=code,
            config={"producer": {"name": "modelopt", "version": "0.29.0"},
                    "quantization": {"quant_algo": "NVFP4", "exclude_modules": ["lm_head"]}},
            config_source="hf_quant_config.json", packed_modules_mapping=LLAMA_PMM,
            layers=dense_block(0)[:2] + [lm_head()])
        add(id=f"{pfx}-modelopt-nvfp4-weight-only-groups", engine=e, format="modelopt", code=code,
            config={"quant_method": "modelopt", "quant_algo": "NVFP4", "ignore": ["lm_head"],
                    "config_groups": {"group_0": {"targets": ["Linear"], "input_activations": None,
                                                  "weights": {"num_bits": 4, "type": "float", "group_size": 16}}}},
            packed_modules_mapping=LLAMA_PMM,
            layers=dense_block(0)[:2] + [moe("model.layers.0.mlp.experts", e), lm_head()],
            note="quant_algo NVFP4 whose config groups quantize weights only")
        mixed_layers = {
            "model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"},
            "model.layers.0.self_attn.k_proj": {"quant_algo": "FP8"},
            "model.layers.0.self_attn.v_proj": {"quant_algo": "FP8"},
            "model.layers.0.mlp.gate_proj": {"quant_algo": "NVFP4", "group_size": 16},
            "model.layers.0.mlp.up_proj": {"quant_algo": "NVFP4", "group_size": 16},
            "model.layers.1.self_attn.q_proj": {"quant_algo": "FP8"},
            "model.layers.1.self_attn.k_proj": {"quant_algo": "NVFP4", "group_size": 16},
            "model.layers.1.self_attn.v_proj": {"quant_algo": "NVFP4", "group_size": 16},
            "model.layers.1.mlp.gate_up_proj": {"quant_algo": "fp8"},
            "model.layers.1.mlp.experts.0.gate_proj": {"quant_algo": "NVFP4", "group_size": 16},
            "model.layers.1.mlp.experts.0.up_proj": {"quant_algo": "NVFP4", "group_size": 16},
            "model.layers.1.mlp.experts.0.down_proj": {"quant_algo": "NVFP4", "group_size": 16},
            "model.layers.2.mlp.gate_proj": {"quant_algo": "NVFP4", "group_size": 16},
        }
        add(id=f"{pfx}-modelopt-mixed-precision", engine=e, format="modelopt", code=code,
            config={"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "kv_cache_quant_algo": "FP8",
                    "ignore": ["lm_head", "model.layers.2.self_attn*"], "quantized_layers": mixed_layers},
            packed_modules_mapping=LLAMA_PMM,
            layers=dense_block(0) + dense_block(1) + dense_block(2) + [
                moe("model.layers.1.mlp.experts", e), moe("model.layers.2.mlp.experts", e),
                attn("model.layers.0.self_attn.attn", e), lm_head()],
            note="per-layer quant_algo from quantized_layers: fused layers look up their legs (same algo, "
                 "conflicting algos, a fused key listed directly, a leg missing), experts by key prefix")
        add(id=f"{pfx}-modelopt-mixed-nested-file", engine=e, format="modelopt", code=code,
            config={"producer": {"name": "modelopt", "version": "0.33.0"},
                    "quantization": {"quant_algo": "MIXED_PRECISION", "kv_cache_quant_algo": None,
                                     "exclude_modules": ["lm_head"], "quantized_layers": {
                                         "model.language_model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"},
                                         "model.language_model.layers.0.self_attn.k_proj": {"quant_algo": "FP8"},
                                         "model.language_model.layers.0.self_attn.v_proj": {"quant_algo": "FP8"},
                                         "model.language_model.layers.0.mlp.down_proj": {"quant_algo": "NVFP4", "group_size": 16},
                                         "language_model.model.layers.1.mlp.down_proj": {"quant_algo": "W4A16_NVFP4", "group_size": 16}}}},
            config_source="hf_quant_config.json", packed_modules_mapping=LLAMA_PMM,
            layers=[lin("language_model.model.layers.0.self_attn.qkv_proj"), lin("language_model.model.layers.0.mlp.down_proj"),
                    lin("model.layers.0.mlp.down_proj"), lin("language_model.model.layers.1.mlp.down_proj"),
                    lin("model.language_model.layers.1.mlp.down_proj"), lin("language_model.model.layers.0.self_attn.o_proj"),
                    attn("language_model.model.layers.0.self_attn.attn", e)],
            note="MIXED_PRECISION from hf_quant_config.json; quantized_layers keys are tried with the "
                 "language_model.model. / model.language_model. prefix swap")
        add(id=f"{pfx}-modelopt-mixed-fp8-only", engine=e, format="modelopt", code=code,
            config={"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "ignore": [],
                    "quantized_layers": {"model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"},
                                         "model.layers.0.self_attn.k_proj": {"quant_algo": "FP8"},
                                         "model.layers.0.self_attn.v_proj": {"quant_algo": "FP8"},
                                         "model.layers.0.mlp.down_proj": {"quant_algo": "W4A8_AWQ"}}},
            packed_modules_mapping=LLAMA_PMM,
            layers=dense_block(0) + [lm_head()],
            note="MIXED_PRECISION without any NVFP4 layer")
    add(id="sglang-modelopt-qwen2_5_vl-mapper", engine="sglang", format="modelopt", code=s_mo + ["models/qwen2_5_vl.py"],
        config={"quant_method": "modelopt", "quant_algo": "FP8",
                "ignore": ["model.visual*", "model.language_model.layers.0.self_attn*", "lm_head"]},
        model_class="qwen2_5_vl.Qwen2_5_VLForConditionalGeneration",
        packed_modules_mapping={"gate_up_proj": ["gate_proj", "up_proj"]},
        layers=[lin("visual.blocks.0.attn.qkv_proj", "QKVParallelLinear"), lin("visual.merger.mlp.0", "ColumnParallelLinear"),
                lin("model.layers.0.self_attn.qkv_proj"), lin("model.layers.0.self_attn.o_proj"),
                lin("model.layers.1.self_attn.qkv_proj"), lm_head()],
        note="apply_weight_name_mapper maps exclude_modules with the Qwen2.5-VL mapper and adds a copy of each "
             "'language_model.'-prefixed result with that prefix removed")
    add(id="vllm-modelopt-qwen2_5_vl-mapper", engine="vllm", format="modelopt", code=v_mo + ["model_executor/models/qwen2_5_vl.py"],
        config={"quant_method": "modelopt", "quant_algo": "FP8",
                "ignore": ["model.visual*", "model.language_model.layers.0.self_attn*", "lm_head"]},
        model_class="qwen2_5_vl.Qwen2_5_VLForConditionalGeneration",
        packed_modules_mapping=LLAMA_PMM,
        layers=[lin("visual.blocks.0.attn.qkv", "QKVParallelLinear"), lin("visual.merger.mlp.0", "ColumnParallelLinear"),
                lin("language_model.model.layers.0.self_attn.qkv_proj"), lin("language_model.model.layers.0.self_attn.o_proj"),
                lin("language_model.model.layers.1.self_attn.qkv_proj"), lm_head("language_model.lm_head")],
        note="apply_vllm_mapper splits 'path*' into 'path' and 'path.*' and maps the list with the Qwen2.5-VL "
             "hf_to_vllm_mapper (renames only)")

    # ------------------------------------------------------------------
    # compressed-tensors MoE
    # ------------------------------------------------------------------
    v_ct = ["model_executor/layers/quantization/compressed_tensors/compressed_tensors.py",
            "compressed_tensors/compressed_tensors_moe/compressed_tensors_moe.py", "compressed_tensors/utils.py"]
    s_ct = ["layers/quantization/compressed_tensors/compressed_tensors.py", "compressed_tensors/utils.py"]
    for e, code in (("vllm", v_ct), ("sglang", s_ct)):
        add(id=f"{e}-ct-moe-linear-target", engine=e, format="compressed-tensors", code=code,
            config=ct_config({"group_0": {"targets": ["Linear"], **CT_FP8_ARGS}}, ignore=["lm_head", "re:.*mlp.gate$"]),
            packed_modules_mapping=LLAMA_PMM,
            layers=[moe("model.layers.0.mlp.experts", e), moe("model.layers.1.mlp.experts", e),
                    lin("model.layers.0.mlp.gate"), lin("model.layers.0.self_attn.qkv_proj"), lm_head()],
            note="a 'Linear' target also covers FusedMoE (the Linear scheme is copied to the FusedMoE class name); "
                 "experts are matched through their expert-0 projection names")
        add(id=f"{e}-ct-moe-ignore-experts", engine=e, format="compressed-tensors", code=code,
            config=ct_config({"group_0": {"targets": ["Linear"], **CT_FP8_ARGS}},
                             ignore=["lm_head", "re:.*layers\\.1\\.mlp\\.experts.*", "re:.*layers\\.2\\.mlp\\.experts\\.0\\.down_proj$",
                                     "model.layers.3.mlp.experts"]),
            packed_modules_mapping=LLAMA_PMM,
            layers=[moe(f"model.layers.{i}.mlp.experts", e) for i in range(4)],
            note="ignoring all expert projections leaves the layer unquantized; ignoring only one projection "
                 "gives projections with different schemes; the experts module name itself is not looked up")
        add(id=f"{e}-ct-moe-regex-groups", engine=e, format="compressed-tensors", code=code,
            config=ct_config({"group_0": {"targets": ["re:.*self_attn.*"], **CT_FP8_ARGS, "format": "float-quantized"},
                              "group_1": {"targets": ["re:.*mlp\\.experts.*"], **CT_W4A16_ARGS, "format": "pack-quantized"}},
                             ignore=["lm_head"], fmt="mixed-precision"),
            packed_modules_mapping=LLAMA_PMM,
            layers=[moe("model.layers.0.mlp.experts", e), lin("model.layers.0.self_attn.qkv_proj"),
                    lin("model.layers.0.self_attn.o_proj"), lin("model.layers.0.mlp.gate"),
                    lin("model.layers.0.mlp.shared_experts.down_proj")],
            note="regex targets per group: experts get the W4A16 group, attention the FP8 group; a layer no "
                 "target matches")
    # The linear kernel each scheme gets, which differs by platform (a CPU picks among its own).
    ct_schemes = {
        "w8a8-int8": {"weights": {"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": True,
                                  "dynamic": False},
                      "input_activations": {"num_bits": 8, "type": "int", "strategy": "token",
                                            "symmetric": True, "dynamic": True}, "format": "int-quantized"},
        "w4a16-int4": {**CT_W4A16_ARGS, "format": "pack-quantized"},
        "w8a16-fp8": {"weights": CT_FP8_ARGS["weights"], "input_activations": None,
                      "format": "float-quantized"},
        "w4a4-nvfp4": {"weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16,
                                   "symmetric": True, "dynamic": False},
                       "input_activations": {"num_bits": 4, "type": "float", "strategy": "tensor_group",
                                             "group_size": 16, "symmetric": True, "dynamic": "local"},
                       "format": "nvfp4-pack-quantized"},
        "w4a16-mxfp4": {"weights": {"num_bits": 4, "type": "float", "strategy": "group", "group_size": 32,
                                    "symmetric": True, "dynamic": False, "scale_dtype": "torch.uint8"},
                        "input_activations": None, "format": "mxfp4-pack-quantized"},
    }
    for scheme_id, args in ct_schemes.items():
        add(id=f"vllm-ct-kernel-{scheme_id}", engine="vllm", format="compressed-tensors", code=v_ct,
            since={"vllm": "0.34.0"},
            config=ct_config({"group_0": {"targets": ["Linear"], **args}}, ignore=["lm_head"],
                             fmt=args["format"]),
            packed_modules_mapping=LLAMA_PMM, layers=dense_block(0),
            note=f"one {scheme_id} group over every linear layer: the method and, off cuda, the kernel the "
                 "platform picks for it")
    add(id="vllm-ct-qwen2_5_vl-mapper", engine="vllm", format="compressed-tensors",
        code=v_ct + ["model_executor/models/qwen2_5_vl.py"],
        config=ct_config({"group_0": {"targets": ["Linear"], **CT_FP8_ARGS}},
                         ignore=["lm_head", "re:model.visual.*", "model.language_model.layers.0.mlp.down_proj", "re:.*merger.*"]),
        model_class="qwen2_5_vl.Qwen2_5_VLForConditionalGeneration",
        packed_modules_mapping=LLAMA_PMM,
        layers=[lin("visual.blocks.0.attn.qkv", "QKVParallelLinear"), lin("visual.merger.mlp.0", "ColumnParallelLinear"),
                lin("language_model.model.layers.0.mlp.down_proj"), lin("language_model.model.layers.1.mlp.down_proj"),
                lm_head("language_model.lm_head")],
        note="apply_vllm_mapper maps dotted non-regex ignore entries and targets; regex entries and entries "
             "without a '.' stay as written")
    add(id="sglang-ct-qwen2_5_vl-mapper", engine="sglang", format="compressed-tensors",
        code=s_ct + ["models/qwen2_5_vl.py"],
        config=ct_config({"group_0": {"targets": ["Linear"], **CT_FP8_ARGS}},
                         ignore=["lm_head", "re:model.visual.*", "model.language_model.layers.0.mlp.down_proj", "re:.*merger.*"]),
        model_class="qwen2_5_vl.Qwen2_5_VLForConditionalGeneration",
        packed_modules_mapping={"gate_up_proj": ["gate_proj", "up_proj"]},
        layers=[lin("visual.blocks.0.attn.qkv_proj", "QKVParallelLinear"), lin("visual.merger.mlp.0", "ColumnParallelLinear"),
                lin("model.layers.0.mlp.down_proj"), lin("model.layers.1.mlp.down_proj"), lm_head()],
        note="apply_weight_name_mapper maps the ignore list and target map with the Qwen2.5-VL mapper")

    # ------------------------------------------------------------------
    # vLLM awq
    # ------------------------------------------------------------------
    v_awq = ["model_executor/layers/quantization/auto_awq.py", "model_executor/layers/quantization/utils/quant_utils.py",
             "config/model.py"]
    add(id="vllm-awq-modules-to-not-convert", engine="vllm", format="awq", code=v_awq,
        config={**AWQ, "modules_to_not_convert": ["visual", "mlp.gate", "layers.1.self_attn.q_proj", "experts"]},
        packed_modules_mapping=LLAMA_PMM,
        layers=dense_block(0) + dense_block(1) + [lin("model.layers.1.mlp.gate"), lin("visual.blocks.0.attn.qkv", "QKVParallelLinear"),
                                                  moe("model.layers.1.mlp.experts", "vllm"), lm_head()],
        note="modules_to_not_convert is tested with is_layer_skipped in substring mode (fused legs expanded)")
    add(id="vllm-awq-fused-legs", engine="vllm", format="awq", code=v_awq,
        config={**AWQ, "modules_to_not_convert": ["layers.0.self_attn.q_proj", "layers.0.self_attn.k_proj", "layers.0.self_attn.v_proj",
                                                  "layers.1.self_attn.q_proj", "layers.1.self_attn.k_proj", "layers.2.self_attn.qkv_proj"]},
        packed_modules_mapping=LLAMA_PMM,
        layers=[lin("model.layers.0.self_attn.qkv_proj"), lin("model.layers.1.self_attn.qkv_proj"),
                lin("model.layers.2.self_attn.qkv_proj"), lin("model.layers.2.self_attn.o_proj")])
    add(id="vllm-awq-lm-head-moe", engine="vllm", format="awq", code=v_awq,
        config={**AWQ, "lm_head": True, "modules_to_not_convert": ["model.layers.0.mlp.experts"]},
        packed_modules_mapping=LLAMA_PMM,
        layers=[lm_head(), moe("model.layers.0.mlp.experts", "vllm"), moe("model.layers.1.mlp.experts", "vllm"),
                lin("model.layers.1.mlp.down_proj")])
    add(id="vllm-awq-user-quantization", engine="vllm", format="awq", code=v_awq,
        config={**AWQ, "modules_to_not_convert": None},
        extra_inputs={"user_quantization": "awq_marlin"},
        packed_modules_mapping=LLAMA_PMM,
        layers=dense_block(0),
        note="awq, awq_marlin and auto_awq all name AutoAWQConfig; the method name resolves to auto_awq")
    add(id="vllm-awq-8bit", engine="vllm", format="awq", code=v_awq,
        config={**AWQ, "bits": 8},
        packed_modules_mapping=LLAMA_PMM,
        layers=dense_block(0)[:1])

    # ------------------------------------------------------------------
    # vLLM fp8 with a multimodal mapper
    # ------------------------------------------------------------------
    add(id="vllm-fp8-qwen2_5_vl-mapper", engine="vllm", format="fp8",
        code=["model_executor/layers/quantization/fp8.py", "model_executor/models/qwen2_5_vl.py"],
        config={**FP8, "ignored_layers": ["model.visual.blocks.0.attn.qkv", "model.language_model.layers.0.mlp.down_proj",
                                          "lm_head", "model.layers.1.self_attn.o_proj"]},
        model_class="qwen2_5_vl.Qwen2_5_VLForConditionalGeneration",
        packed_modules_mapping=LLAMA_PMM,
        layers=[lin("visual.blocks.0.attn.qkv", "QKVParallelLinear"), lin("visual.blocks.1.attn.qkv", "QKVParallelLinear"),
                lin("language_model.model.layers.0.mlp.down_proj"), lin("language_model.model.layers.1.self_attn.o_proj"),
                lin("language_model.model.layers.0.self_attn.o_proj"), lm_head("language_model.lm_head")],
        note="Fp8Config.apply_vllm_mapper maps ignored_layers with the Qwen2.5-VL hf_to_vllm_mapper (prefix "
             "renames); both HF layouts (model.language_model.* and model.*) map to language_model.model.*")

    # ModelOpt MXFP8 (vLLM's ModelOptMxFp8Config, SGLang's reading of the algorithm)
    mxfp8_nested = {"producer": {"name": "modelopt", "version": "0.41.0"},
                    "quantization": {"quant_algo": "MXFP8", "kv_cache_quant_algo": None,
                                     "exclude_modules": ["lm_head", "model.layers.0.self_attn*"]}}
    mxfp8_flat = {"quant_method": "modelopt", "quant_algo": "MXFP8",
                  "ignore": ["lm_head", "model.layers.1.mlp.gate"]}
    for e, code, pfx in (("vllm", v_mo, "vllm"), ("sglang", s_mo, "sglang")):
        add(id=f"{pfx}-modelopt-mxfp8-nested", engine=e, format="modelopt", code=code, config=mxfp8_nested,
            config_source="hf_quant_config.json", packed_modules_mapping=LLAMA_PMM, layers=nvfp4_layers(e),
            note="MXFP8 from a standalone hf_quant_config.json (nested form)")
        add(id=f"{pfx}-modelopt-mxfp8-flat", engine=e, format="modelopt", code=code, config=mxfp8_flat,
            packed_modules_mapping=LLAMA_PMM, layers=nvfp4_layers(e),
            note="MXFP8 embedded in config.json (flat form)")

    # ------------------------------------------------------------------
    # vLLM online shorthands: --quantization on a folder without a description
    # ------------------------------------------------------------------
    online_layers = dense_block(0)[:2] + [moe("model.layers.1.mlp.experts", "vllm"),
                                          attn("model.layers.0.self_attn.attn", "vllm"), lm_head()]
    for q, since in (("fp8_per_tensor", None), ("fp8_per_block", None), ("fp8_per_channel", None),
                     ("int8_per_channel_weight_only", None), ("nvfp4_per_token", None), ("mxfp8", None),
                     ("mxfp4_hadamard32", {"vllm": "0.34.0"}), ("lut_b_moe", {"vllm": "0.34.0"})):
        add(id=f"vllm-online-{q}", engine="vllm", format="online", since=since,
            code=["config/quantization.py", "model_executor/layers/quantization/online/"],
            config={"note": "unrelated"}, config_source="generation_config.json",
            extra_inputs={"user_quantization": q}, packed_modules_mapping=LLAMA_PMM, layers=online_layers,
            note="OnlineQuantizationConfig from the shorthand's linear and experts specs")

    # ------------------------------------------------------------------
    # vLLM 0.34: methods and fields the release adds or removes
    # ------------------------------------------------------------------
    v34 = {"vllm": "0.34.0"}
    v_w4afp8 = ["model_executor/layers/quantization/w4afp8.py", "model_executor/layers/quantization/fp8.py",
                "model_executor/layers/quantization/utils/quant_utils.py"]
    w4afp8_layers = dense_block(0) + dense_block(1) + [
        lin("model.layers.1.mlp.gate", "ReplicatedLinear"), moe("model.layers.0.mlp.experts", "vllm"),
        moe("model.layers.1.mlp.experts", "vllm"), lin("model.layers.1.mlp.shared_experts.gate_up_proj"),
        attn("model.layers.0.self_attn.attn", "vllm"), attn("model.layers.1.self_attn.attn", "vllm", "MLAAttention"),
        lm_head()]
    add(id="vllm-w4afp8-moe", engine="vllm", format="w4afp8", code=v_w4afp8, since=v34,
        config={"quant_method": "w4afp8", "ignored_layers": ["model.layers.0.self_attn", "lm_head"]},
        packed_modules_mapping=LLAMA_PMM, layers=w4afp8_layers,
        note="W4AFP8Config(Fp8Config): routed experts that is_layer_skipped leaves quantized get the "
             "compressed-tensors W4A8 FP8 MoE method; everything else is Fp8Config's (block 128 by default)")
    add(id="vllm-w4afp8-skip-experts", engine="vllm", format="w4afp8", code=v_w4afp8, since=v34,
        config={"quant_method": "w4afp8", "group_size": 64, "weight_block_size": [64, 64],
                "modules_to_not_convert": ["model.layers.0.mlp.experts", "model.layers.1.self_attn.o_proj"]},
        packed_modules_mapping=LLAMA_PMM, layers=w4afp8_layers,
        note="modules_to_not_convert is read when ignored_layers is absent; a skipped experts layer falls "
             "through to Fp8Config, which leaves it unquantized")
    add(id="vllm-w4afp8-both-lists", engine="vllm", format="w4afp8", code=v_w4afp8, since=v34,
        config={"quant_method": "w4afp8", "ignored_layers": [], "activation_scheme": "static",
                "modules_to_not_convert": ["model.layers.1.mlp.experts"]},
        packed_modules_mapping=LLAMA_PMM, layers=w4afp8_layers,
        note="an empty ignored_layers is falsy, so modules_to_not_convert is read; activation_scheme is "
             "always dynamic")
    # DeepSeek-V4's fp8 config (models/deepseek_v41 on CUDA), with the default expert_dtype "fp4"
    # (the case's hf_config carries none).
    v_dsv4 = ["models/deepseek_v41/quant_config.py", "models/deepseek_v4/quant_config.py",
              "model_executor/layers/quantization/fp8.py"]
    dsv4_fp8 = {"activation_scheme": "dynamic", "fmt": "e4m3", "scale_fmt": "ue8m0",
                "weight_block_size": [128, 128]}
    add(id="vllm-deepseek_v4_fp8-method", engine="vllm", format="deepseek_v4_fp8", code=v_dsv4, since=v34,
        config={"quant_method": "deepseek_v4_fp8", **dsv4_fp8,
                "ignored_layers": ["model.layers.0.self_attn.o_proj", "model.layers.1.mlp.experts"]},
        packed_modules_mapping=LLAMA_PMM, layers=w4afp8_layers,
        note="quant_method deepseek_v4_fp8: Fp8Config's linear layers; routed experts not skipped get "
             "MXFP4 weights with MXFP8 activations (expert_dtype fp4)")
    add(id="vllm-deepseek_v4_fp8-user", engine="vllm", format="deepseek_v4_fp8", code=v_dsv4, since=v34,
        config={"quant_method": "fp8", **dsv4_fp8}, extra_inputs={"user_quantization": "deepseek_v4_fp8"},
        packed_modules_mapping=LLAMA_PMM, layers=w4afp8_layers,
        note="--quantization deepseek_v4_fp8 over an fp8 description (the override a deepseek_v4 model_type "
             "would also make)")
    add(id="vllm-deepseek_v4_fp8-mxfp8-linear", engine="vllm", format="deepseek_v4_fp8", code=v_dsv4,
        since=v34, config={"quant_method": "deepseek_v4_fp8", **dsv4_fp8, "weight_block_size": [32, 32]},
        packed_modules_mapping=LLAMA_PMM, layers=w4afp8_layers,
        note="32 × 32 blocks with ue8m0 scales: the v4.1 class's MXFP8 linear layout")
    add(id="vllm-deepseek_v4_fp8-expert-fp8", engine="vllm", format="deepseek_v4_fp8", code=v_dsv4,
        since=v34, config={"quant_method": "deepseek_v4_fp8", **dsv4_fp8,
                           "ignored_layers": ["model.layers.0.self_attn.o_proj", "model.layers.1.mlp.experts"]},
        extra_inputs={"config_json": {"expert_dtype": "fp8"}},
        packed_modules_mapping=LLAMA_PMM, layers=w4afp8_layers,
        note="expert_dtype fp8 (DeepSeek-V4-Flash-Base): routed experts are Fp8Config's block-fp8 experts")
    add(id="vllm-deepseek_v4_fp8-expert-fp8-32x32", engine="vllm", format="deepseek_v4_fp8", code=v_dsv4,
        since=v34, config={"quant_method": "deepseek_v4_fp8", **dsv4_fp8, "weight_block_size": [32, 32]},
        extra_inputs={"config_json": {"expert_dtype": "fp8"}},
        packed_modules_mapping=LLAMA_PMM, layers=w4afp8_layers,
        note="32 × 32 blocks without ue8m0 scales (expert_dtype fp8): Fp8Config's linear method, not MXFP8")
    for model_type in ("deepseek_v4", "deepseek_v41"):
        add(id=f"vllm-deepseek_v4_fp8-model-type-{model_type}", engine="vllm", format="deepseek_v4_fp8",
            code=v_dsv4, since=v34, config={"quant_method": "fp8", **dsv4_fp8},
            extra_inputs={"config_json": {"model_type": model_type}},
            packed_modules_mapping=LLAMA_PMM, layers=w4afp8_layers,
            note=f"an fp8 description in a {model_type} model: the config's override picks deepseek_v4_fp8")
    dsv4_experts = [moe(f"model.layers.{i}.ffn.experts", "vllm") for i in range(3)]
    add(id="vllm-deepseek_v4_fp8-moe-nvfp4", engine="vllm", format="deepseek_v4_fp8", code=v_dsv4,
        since=v34, config={"quant_method": "deepseek_v4_fp8", **dsv4_fp8, "moe_quant_algo": "nvfp4",
                           "ignore": ["layers.1.ffn.experts", "mtp.*"],
                           "ignored_layers": ["model.layers.1.mlp.experts"]},
        extra_inputs={"config_json": {"num_hidden_layers": 2}},
        packed_modules_mapping=LLAMA_PMM, layers=w4afp8_layers + dsv4_experts,
        note="moe_quant_algo NVFP4 (a ModelOpt NVFP4 export): routed experts get NVFP4 unless the "
             "ModelOpt `ignore` names them as layers.N.ffn.experts (or mtp.K past num_hidden_layers), "
             "which keep MXFP4")
    add(id="vllm-deepseek_v4_fp8-moe-nvfp4-no-ignore", engine="vllm", format="deepseek_v4_fp8", code=v_dsv4,
        since=v34, config={"quant_method": "deepseek_v4_fp8", **dsv4_fp8, "moe_quant_algo": "NVFP4"},
        extra_inputs={"config_json": {"num_hidden_layers": 2}},
        packed_modules_mapping=LLAMA_PMM, layers=w4afp8_layers + dsv4_experts,
        note="moe_quant_algo NVFP4 without an ignore list: every routed experts layer gets NVFP4")
    add(id="vllm-fp-quant-removed", engine="vllm", format="fp_quant", since=v34,
        code=["model_executor/layers/quantization/__init__.py", "config/model.py"],
        config={"quant_method": "fp_quant", "forward_dtype": "mxfp4", "hadamard_group_size": 32,
                "modules_to_not_convert": ["lm_head"]},
        packed_modules_mapping=LLAMA_PMM, layers=dense_block(0)[:1],
        note="0.34 no longer registers fp_quant")
    nvfp4_csf = lambda enc: {"producer": {"name": "modelopt", "version": "0.41.0"},
                             "quantization": {"quant_algo": "NVFP4", "group_size": 16, "kv_cache_quant_algo": None,
                                              "exclude_modules": ["lm_head"],
                                              "weight_scale_encoding": enc}}
    add(id="vllm-modelopt-nvfp4-csf", engine="vllm", format="modelopt", code=v_mo, since=v34,
        config=nvfp4_csf("csf_32x2_v1"), config_source="hf_quant_config.json",
        packed_modules_mapping=LLAMA_PMM, layers=nvfp4_layers("vllm"),
        note="weight_scale_encoding names how the block scales are stored (compressed streams); the "
             "decisions are NVFP4's")
    add(id="vllm-modelopt-nvfp4-csf-unknown", engine="vllm", format="modelopt", code=v_mo, since=v34,
        config=nvfp4_csf("zstd"), config_source="hf_quant_config.json",
        packed_modules_mapping=LLAMA_PMM, layers=dense_block(0)[:1],
        note="an encoding other than csf / csf_32x2_v1 is refused when the config is created")

    # ------------------------------------------------------------------
    # Config-file search order
    # ------------------------------------------------------------------
    v_ld = ["model_executor/model_loader/weight_utils.py", "config/model.py"]
    s_ld = ["model_loader/weight_utils.py", "configs/model_config.py"]
    gptq8 = {**GPTQ, "bits": 8}
    for e, code in (("vllm", v_ld), ("sglang", s_ld)):
        fmtc = "quantize_config.json"
        gq = "gptq" if e == "vllm" else "gptq_marlin"  # SGLang on CUDA registers no plain "gptq"
        add(id=f"{e}-loader-embedded-wins", engine=e, format="loader", code=code,
            config=GPTQ, extra_inputs={"files": {"quantize_config.json": gptq8}},
            packed_modules_mapping=LLAMA_PMM, layers=dense_block(0)[:1],
            note="config.json quantization_config is used; quantize_config.json (8-bit here) is not read")
        add(id=f"{e}-loader-standalone-gptq", engine=e, format="loader", code=code,
            config=gptq8, config_source=fmtc, extra_inputs={"user_quantization": gq},
            packed_modules_mapping=LLAMA_PMM, layers=dense_block(0)[:1],
            note="no quantization_config in config.json: with --quantization set the loader reads quantize_config.json")
        add(id=f"{e}-loader-awq-two-files", engine=e, format="loader", code=code,
            config=AWQ, config_source="quant_config.json",
            extra_inputs={"user_quantization": "awq", "files": {"quantize_config.json": AWQ}},
            packed_modules_mapping=LLAMA_PMM, layers=dense_block(0)[:1],
            note="two candidate files for one method")
        add(id=f"{e}-loader-suffix-match", engine=e, format="loader", code=code,
            config=gptq8, config_source="my_quantize_config.json", extra_inputs={"user_quantization": gq},
            packed_modules_mapping=LLAMA_PMM, layers=dense_block(0)[:1],
            note="candidate files are matched with str.endswith on the path")
        add(id=f"{e}-loader-no-file", engine=e, format="loader", code=code,
            config={"note": "unrelated"}, config_source="generation_config.json",
            extra_inputs={"user_quantization": gq},
            packed_modules_mapping=LLAMA_PMM, layers=dense_block(0)[:1])
        add(id=f"{e}-loader-modelopt-producer", engine=e, format="loader", code=code,
            config={"producer": {"name": "other"}, "quantization": {"quant_algo": "FP8", "exclude_modules": []}},
            config_source="hf_quant_config.json", extra_inputs={"user_quantization": "modelopt"},
            packed_modules_mapping=LLAMA_PMM, layers=dense_block(0)[:1],
            note="hf_quant_config.json whose producer is not modelopt")
        add(id=f"{e}-loader-mixed-falls-through", engine=e, format="loader", code=code,
            config={"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "kv_cache_quant_algo": "FP8",
                    "ignore": ["lm_head"]},
            extra_inputs={"files": {"hf_quant_config.json": {
                "producer": {"name": "modelopt", "version": "0.33.0"},
                "quantization": {"quant_algo": "MIXED_PRECISION", "kv_cache_quant_algo": "FP8", "exclude_modules": [],
                                 "quantized_layers": {"model.layers.0.mlp.down_proj": {"quant_algo": "NVFP4", "group_size": 16}}}}}},
            packed_modules_mapping=LLAMA_PMM,
            layers=[lin("model.layers.0.mlp.down_proj"), lin("model.layers.0.self_attn.o_proj"), lm_head()],
            note="MIXED_PRECISION in config.json without quantized_layers: the loader falls through to "
                 "hf_quant_config.json")

    # ------------------------------------------------------------------
    # KV-cache methods per attention class
    # ------------------------------------------------------------------
    mla = "model.layers.0.self_attn.attn"
    gqa = "model.layers.1.self_attn.attn"
    v_attn = ["model_executor/layers/attention/attention.py", "model_executor/layers/attention/mla_attention.py"]
    ct_kv = {"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": True, "dynamic": False}
    ct_groups = {"group_0": {"targets": ["Linear"], **CT_FP8_ARGS}}
    add(id="vllm-fp8-kv-per-attention-class", engine="vllm", format="fp8",
        code=["model_executor/layers/quantization/fp8.py"] + v_attn, config=FP8, packed_modules_mapping=LLAMA_PMM,
        layers=[attn(mla, "vllm", "MLAAttention"), attn(gqa, "vllm")],
        note="Fp8Config.get_quant_method tests isinstance(layer, Attention); MLAAttention is not an Attention")
    for kv_id, kv in (("no-kv-scheme", None), ("kv-scheme", ct_kv)):
        add(id=f"vllm-ct-{kv_id}-per-attention-class", engine="vllm", format="compressed-tensors",
            code=[v_ct[0]] + v_attn, config=ct_config(ct_groups, ignore=["lm_head"], kv=kv),
            packed_modules_mapping=LLAMA_PMM,
            layers=[attn(mla, "vllm", "MLAAttention"), attn(gqa, "vllm")],
            note="CompressedTensorsConfig.get_quant_method tests isinstance(layer, Attention)")
    for algo_id, cfg in (("fp8", {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8",
                                  "ignore": []}),
                         ("mixed", {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
                                    "kv_cache_quant_algo": "FP8", "ignore": [],
                                    "quantized_layers": {"model.layers.0.mlp.down_proj": {"quant_algo": "FP8"}}})):
        add(id=f"vllm-modelopt-{algo_id}-kv-per-attention-class", engine="vllm", format="modelopt",
            code=[v_mo[0]] + v_attn, config=cfg, packed_modules_mapping=LLAMA_PMM,
            layers=[attn(mla, "vllm", "MLAAttention"), attn(gqa, "vllm")],
            note="the ModelOpt base config tests (Attention, MLAAttention); the mixed-precision config Attention only")
    for kv_id, kv in (("no-kv-scheme", None), ("kv-scheme", ct_kv), ("dynamic-kv-scheme", {**ct_kv, "dynamic": True}),
                      ("channel-kv-scheme", {**ct_kv, "strategy": "channel"})):
        add(id=f"sglang-ct-{kv_id}-radix-attention", engine="sglang", format="compressed-tensors", code=[s_ct[0]],
            config=ct_config(ct_groups, ignore=["lm_head"], kv=kv), packed_modules_mapping=LLAMA_PMM,
            layers=[attn(mla, "sglang"), lin("model.layers.0.self_attn.o_proj")],
            note="RadixAttention gets CompressedTensorsKVCacheMethod only for a static symmetric per-tensor fp8 "
                 "kv_cache_scheme; None otherwise")

    # ------------------------------------------------------------------
    # Qwen3.5: the mapper is inherited from Qwen3-VL in vLLM; SGLang sets none
    # ------------------------------------------------------------------
    q35_ignore = ["model.visual.blocks.0.attn.qkv", "model.language_model.layers.0.mlp.down_proj", "lm_head"]
    add(id="vllm-fp8-qwen3_5-mapper", engine="vllm", format="fp8",
        code=["model_executor/layers/quantization/fp8.py", "model_executor/models/qwen3_5.py",
              "model_executor/models/qwen3_vl.py"],
        config={**FP8, "ignored_layers": q35_ignore},
        model_class="qwen3_5.Qwen3_5ForConditionalGeneration", packed_modules_mapping=LLAMA_PMM,
        layers=[lin("visual.blocks.0.attn.qkv", "QKVParallelLinear"), lin("visual.blocks.1.attn.qkv", "QKVParallelLinear"),
                lin("language_model.model.layers.0.mlp.down_proj"), lin("language_model.model.layers.1.mlp.down_proj")],
        note="Qwen3_5ForConditionalGeneration's mapper is Qwen3VLForConditionalGeneration's plus mtp. -> None, "
             "which get_rename_mapper drops")
    add(id="vllm-fp8-qwen3_5_moe-mapper", engine="vllm", format="fp8",
        code=["model_executor/layers/quantization/fp8.py", "model_executor/models/qwen3_5.py"],
        config={**FP8, "ignored_layers": q35_ignore},
        model_class="qwen3_5.Qwen3_5MoeForConditionalGeneration", packed_modules_mapping=LLAMA_PMM,
        layers=[lin("visual.blocks.0.attn.qkv", "QKVParallelLinear"), lin("language_model.model.layers.0.mlp.down_proj")],
        note="the MoE class inherits Qwen3_5ForConditionalGeneration's mapper")
    add(id="sglang-fp8-qwen3_5-no-mapper", engine="sglang", format="fp8",
        code=SGLANG_FP8_CODE + ["models/qwen3_5.py"],
        config={**FP8, "ignored_layers": q35_ignore},
        model_class="qwen3_5.Qwen3_5ForConditionalGeneration", packed_modules_mapping=LLAMA_PMM,
        layers=[lin("model.visual.blocks.0.attn.qkv_proj", "QKVParallelLinear"),
                lin("visual.blocks.0.attn.qkv_proj", "QKVParallelLinear"),
                lin("model.language_model.layers.0.mlp.down_proj"), lin("language_model.model.layers.0.mlp.down_proj")],
        note="SGLang's Qwen3_5ForConditionalGeneration sets hf_to_sglang_mapper = None")

    # ------------------------------------------------------------------
    # MLX (mlx-lm's {group_size, bits} without quant_method)
    # ------------------------------------------------------------------
    add(id="sglang-mlx-affine", engine="sglang", format="mlx",
        code=["layers/quantization/mlx.py", "configs/model_config.py"],
        config={"group_size": 64, "bits": 4}, packed_modules_mapping=LLAMA_PMM, layers=dense_block(0),
        note="mlx-lm's description has no quant_method: MlxQuantizationConfig claims it as mlx_q4 where "
             "MPS registers it, and its PyTorch config then refuses to build (SGLANG_USE_MLX serves it "
             "through mlx-lm instead)")

    # ------------------------------------------------------------------
    # SGLang ModelSlim on an NPU stand-in (npu_standin.py)
    # ------------------------------------------------------------------
    s_ms = ["layers/quantization/modelslim/modelslim.py", "model_loader/loader.py", "model_loader/weight_utils.py"]

    def slim(id, keys, layers, note, pmm=None, code=()):
        add(id=f"sglang-modelslim-npu-{id}", engine="sglang", format="modelslim", code=s_ms + list(code),
            config=keys, config_source="quant_model_description.json", platforms=("npu",),
            packed_modules_mapping=LLAMA_PMM if pmm is None else pmm, layers=layers, note=note)

    def w(prefix, **projs):
        return {f"{prefix}.{k}.weight": v for k, v in projs.items()}

    L = "model.layers"
    slim("linear-types", {
        **w(f"{L}.0.self_attn", q_proj="W8A8_DYNAMIC", k_proj="W8A8_DYNAMIC", v_proj="W8A8_DYNAMIC", o_proj="W8A8"),
        **w(f"{L}.0.mlp", gate_proj="W4A4_DYNAMIC", up_proj="W4A4_DYNAMIC", down_proj="W8A8_MXFP8"),
        **w(f"{L}.1.self_attn", q_proj="FLOAT", k_proj="FLOAT", v_proj="FLOAT", o_proj="W4A8_MXFP"),
        **w(f"{L}.1.mlp", gate_proj="FLOAT", up_proj="W8A8", down_proj="W4A4_MXFP4"),
        **w(f"{L}.2.self_attn", q_proj="W4A8_DYNAMIC", k_proj="W4A8_DYNAMIC", v_proj="W4A8_DYNAMIC", o_proj="INT3"),
        "lm_head.weight": "FLOAT", "ignore": [f"{L}.0.self_attn.o_proj"], "model_quant_type": "W8A8_DYNAMIC"},
        dense_block(0) + dense_block(1) + dense_block(2) + dense_block(3)
        + [lm_head(), attn(f"{L}.0.self_attn.attn", "sglang")],
        note="the six linear types; FLOAT legs skip a fused layer and must agree; W4A8_DYNAMIC, an unknown type "
             "or no key fall back to UnquantizedLinearMethod; ignore is not consulted; the LM head and attention "
             "get no method")
    moe_types = ["W4A4_MXFP4", "W4A8_MXFP", "W4A4_DYNAMIC", "W4A8_DYNAMIC", "W8A8_DYNAMIC", "W8A8_MXFP8"]
    moe_keys = {}
    for i, t in enumerate(moe_types):
        moe_keys.update(w(f"{L}.{i}.mlp.experts.0", gate_proj=t, up_proj=t, down_proj=moe_types[-1 - i]))
    moe_keys.update(w(f"{L}.6.mlp.experts.0", gate_proj="W8A8_DYNAMIC", up_proj="W4A8_DYNAMIC", down_proj="W8A8_DYNAMIC"))
    moe_keys.update(w(f"{L}.8.mlp.experts.0", w1="W4A8_DYNAMIC", w3="W4A8_DYNAMIC", w2="W4A8_DYNAMIC"))
    moe_keys.update(w(f"{L}.9.mlp.experts.0", gate_proj="FLOAT", up_proj="FLOAT", down_proj="FLOAT"))
    moe_keys.update(w(f"{L}.10.mlp.experts.0", up_proj="W8A8_DYNAMIC", down_proj="W8A8_DYNAMIC"))
    moe_keys.update(w(f"{L}.11.block_sparse_moe.experts.0", gate_proj="W8A8_DYNAMIC", up_proj="W8A8_DYNAMIC",
                      down_proj="W8A8_DYNAMIC"))
    moe_keys.update(w(f"language_model.{L}.12.mlp.experts.0", gate_proj="W4A4_DYNAMIC", up_proj="W4A4_DYNAMIC",
                      down_proj="W4A4_DYNAMIC"))
    moe_keys.update(w(f"{L}.13.mlp.experts.0", gate_proj="W8A8", up_proj="W8A8", down_proj="W8A8_DYNAMIC"))
    slim("moe-schemes", moe_keys, [moe(f"{L}.{i}.mlp.experts", "sglang") for i in range(14)],
         note="expert 0's w13 (gate, up) and w2 (down) keys: the six MoE types in pairs; W13 mismatch; a layer "
              "without keys lists every pattern tried; w1/w3/w2 names; FLOAT and W8A8 are not MoE types; only one "
              "w13 key; block_sparse_moe keys reach mlp; a language_model. prefix is tried")
    slim("dspark-mtp", {
        **w("mtp.0.attn", q_proj="W8A8_DYNAMIC", o_proj="FLOAT"),
        **w("mtp.0.ffn.experts.0", w1="W8A8_DYNAMIC", w3="W8A8_DYNAMIC", w2="W4A8_DYNAMIC"),
        **w("mtp.0.ffn.shared_experts", w1="W8A8_DYNAMIC", w3="W8A8_DYNAMIC", w2="W8A8_DYNAMIC"),
        "mtp.0.head.weight": "W8A8_DYNAMIC", "mtp.0.embed.weight": "W8A8_DYNAMIC",
        "mtp.0.e_proj.weight": "W8A8_DYNAMIC", "mtp.x.attn.k_proj.weight": "W8A8_DYNAMIC"},
        [lin("stages.0.self_attn.q_proj"), lin("stages.0.self_attn.o_proj"), moe("stages.0.mlp.experts", "sglang"),
         lin("stages.0.mlp.shared_experts.gate_up_proj"), lin("stages.0.mlp.shared_experts.down_proj"),
         lin("stages.0.head", "ColumnParallelLinear"), lin("stages.0.embed", "ColumnParallelLinear"),
         lin("stages.0.e_proj", "ReplicatedLinear"), lin("mtp.0.attn.q_proj"), lin("stages.x.self_attn.k_proj")],
        note="DSpark mtp.<stage>.* keys gain stages.<stage>.* aliases (attn -> self_attn, ffn -> mlp, w1/w2/w3 -> "
             "gate/down/up_proj); the stage's own head and embedding copies get none; a non-numeric stage none")
    slim("deepseek-v4", {
        "hc_head_fn.weight": "FLOAT", "embed.weight": "FLOAT", "head.weight": "W8A8_DYNAMIC",
        **w("layers.0.attn", wq_a="W8A8_DYNAMIC", wkv="FLOAT", wo_a="W8A8"),
        **w("layers.0.ffn.experts.0", w1="W4A8_DYNAMIC", w3="W4A8_DYNAMIC", w2="W4A8_DYNAMIC"),
        **w("layers.0.ffn.shared_experts", w1="W8A8_DYNAMIC", w2="W8A8_DYNAMIC", w3="W8A8_DYNAMIC")},
        [lin(f"{L}.0.self_attn.wq_a", "ReplicatedLinear"), lin(f"{L}.0.self_attn.wkv", "ReplicatedLinear"),
         lin(f"{L}.0.self_attn.wo_a", "ColumnParallelLinear"), moe(f"{L}.0.mlp.experts", "sglang"),
         lin(f"{L}.0.mlp.shared_experts.gate_up_proj"), lin(f"{L}.0.mlp.shared_experts.down_proj"),
         lin("layers.0.attn.wq_a", "ReplicatedLinear"), lm_head()],
        note="hc_head_ keys mark DeepSeek-V4: every key is renamed to Hugging Face names before any lookup",
        code=["models/deepseek_v4.py"])
    slim("norm-bias", {
        **w(f"{L}.0.self_attn", q_proj="W8A8", k_proj="W8A8", v_proj="W8A8", o_proj="W8A8"),
        f"{L}.0.input_layernorm.bias": "W8A8", f"{L}.0.input_layernorm.weight": "FLOAT"},
        dense_block(0)[:2],
        note="a norm.bias key makes ModelSlimConfig patch RMSNorm (__init__ adds a zero bias, forward_npu adds it)")
    slim("language-model-and-visual", {
        **w(f"language_model.{L}.0.self_attn", q_proj="W8A8_DYNAMIC", k_proj="W8A8_DYNAMIC", v_proj="W8A8_DYNAMIC"),
        **w(f"{L}.1.mlp", gate_proj="W4A4_DYNAMIC", up_proj="W4A4_DYNAMIC"),
        "visual.blocks.0.attn.qkv.weight": "W8A8", "visual.blocks.0.mlp.gate_proj.weight": "FLOAT",
        "visual.blocks.0.mlp.up_proj.weight": "W8A8",
        "vision_tower.blocks.0.wqkv.weight": "W8A8_DYNAMIC"},
        [lin(f"{L}.0.self_attn.qkv_proj"), lin(f"language_model.{L}.1.mlp.gate_up_proj"),
         lin("visual.blocks.0.attn.qkv_proj", "QKVParallelLinear"), lin("visual.blocks.0.mlp.gate_up_proj"),
         lin("vision_tower.blocks.0.attn.qkv_proj", "QKVParallelLinear")],
        note="language_model. is added or removed when looking keys up; the loader's NPU sections map visual "
             "qkv_proj to qkv; vision_tower attn.qkv_proj is looked up as wqkv")
    return cases
