"""The recordings of record_models.py: which corpus folder, which edits, which engine inputs.

Inputs only.  Every corpus folder with a full `config.json` that has `architectures` is recorded
as it is, for both engines, except the folders in EXCLUDED.  EDITS adds recordings of edited
folders (`overrides`: file name -> JSON object written instead of / in addition to the corpus
file, or None to remove it) and of other engine inputs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ENGINES = ("vllm", "sglang")

# Folders whose config needs remote code that is not in the folder.
EXCLUDED = {
    "Qwen__Qwen-VL-Chat-Int4": "config.json `auto_map` names configuration_qwen.QWenConfig, which is "
    "not in the folder, and `model_type: qwen` is known to neither transformers nor the engines "
    "without remote code (QWenLMHeadModel)",
    "reubzdubz__Molmo7B_D_NF4Quant": "config.json `auto_map` names config_molmo.MolmoConfig, which is "
    "not in the folder, and `model_type: molmo` is not a transformers config type (the engines' "
    "Molmo classes need the remote configuration)",
}

DEFAULT_INPUTS = {"tp_size": 1, "dtype": "auto", "speculative": False, "quantization": None}

FP8_BLOCK = {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3",
             "weight_block_size": [128, 128]}


def short_name(folder: str) -> str:
    name = folder.split("__")[-1]
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def full_config_folders(corpus: Path) -> list[str]:
    out = []
    for d in sorted(p for p in corpus.iterdir() if p.is_dir()):
        cfg = d / "config.json"
        if not cfg.exists():
            continue
        c = json.loads(cfg.read_text())
        if c.get("architectures"):
            out.append(d.name)
    return out


def _read(corpus: Path, folder: str, name: str):
    return json.loads((corpus / folder / name).read_text())


def edits(corpus: Path) -> list[dict]:
    r1 = "deepseek-ai__DeepSeek-R1"
    r1_cfg = _read(corpus, r1, "config.json")
    nvfp4 = _read(corpus, "peaceh-nv__TensorRT-LLM__DeepSeek-R1-NVFP4", "hf_quant_config.json")
    r1_noq = {k: v for k, v in r1_cfg.items() if k != "quantization_config"}
    glm = "zai-org__GLM-4.5"
    glm_fp8 = dict(_read(corpus, glm, "config.json"), quantization_config=FP8_BLOCK)
    awq = "hualayn__ai-articles__Qwen3.6-27B-AutoRound-AWQ"
    q36 = "fantasylord__Qwen36"
    q36_fp8 = dict(_read(corpus, q36, "config.json"), quantization_config=FP8_BLOCK)
    out = [
        {"suffix": "nvfp4", "base": r1, "overrides": {"hf_quant_config.json": nvfp4},
         "note": "DeepSeek-R1 config.json (fp8 quantization_config kept) with the ModelOpt NVFP4 "
                 "hf_quant_config.json of peaceh-nv__TensorRT-LLM__DeepSeek-R1-NVFP4 added"},
        {"suffix": "nvfp4-only", "base": r1,
         "overrides": {"config.json": r1_noq, "hf_quant_config.json": nvfp4},
         "note": "DeepSeek-R1 config.json without quantization_config, with the ModelOpt NVFP4 "
                 "hf_quant_config.json of peaceh-nv__TensorRT-LLM__DeepSeek-R1-NVFP4"},
        {"suffix": "tp4", "base": r1, "inputs": {"tp_size": 4},
         "note": "fp8 block 128 at tensor-parallel size 4 (per-rank shapes of rank 0)"},
        {"suffix": "tp8", "base": r1, "inputs": {"tp_size": 8},
         "note": "fp8 block 128 at tensor-parallel size 8 (per-rank shapes of rank 0)"},
        {"suffix": "mtp", "base": r1, "inputs": {"speculative": True},
         "note": "speculative decoding with MTP: the engine builds the draft (NextN / MTP) model too"},
        {"suffix": "q-gptq", "base": "TheBloke__Llama-2-13B-chat-GPTQ", "inputs": {"quantization": "gptq"},
         "note": "--quantization gptq forced"},
        {"suffix": "q-gptq", "base": "TheBloke__wizard-mega-13B-GPTQ", "inputs": {"quantization": "gptq"},
         "note": "--quantization gptq forced; the method is only in quantize_config.json"},
        {"suffix": "q-gptq", "base": "TheBloke__WizardCoder-15B-1.0-GPTQ", "inputs": {"quantization": "gptq"},
         "note": "--quantization gptq forced; GPTBigCode, the method only in quantize_config.json"},
        {"suffix": "f16", "base": awq, "inputs": {"dtype": "float16"}, "note": "--dtype float16"},
        {"suffix": "q-awq", "base": awq, "inputs": {"quantization": "awq"},
         "note": "--quantization awq forced (dtype auto)"},
        {"suffix": "fp8", "base": glm, "overrides": {"config.json": glm_fp8},
         "note": "GLM-4.5 config.json with an fp8 block-128 quantization_config added"},
        {"suffix": "fp8", "base": q36, "overrides": {"config.json": q36_fp8},
         "note": "Qwen3.6 (Qwen3_5ForConditionalGeneration) config.json with its compressed-tensors "
                 "quantization_config replaced by an fp8 block-128 one"},
        {"suffix": "fp8-tp8", "base": glm, "overrides": {"config.json": glm_fp8}, "inputs": {"tp_size": 8},
         "note": "GLM-4.5 fp8 block-128 at tensor-parallel size 8"},
    ]
    # Architectures vLLM 0.34 serves only through its Transformers backend (Gemma v1, StableLM,
    # OLMoE), small configs of the published shapes carrying a corpus quantization config. quantpath
    # has no builders for them: match holds their layer lists (cases-models.json), plan does not.
    gptq = _read(corpus, "TheBloke__Llama-2-13B-chat-GPTQ", "config.json")["quantization_config"]
    llama_gptq = "TheBloke__Llama-2-13B-chat-GPTQ"
    backend = [
        ("gemma-gptq", {"architectures": ["GemmaForCausalLM"], "model_type": "gemma", "hidden_size": 2048,
                        "intermediate_size": 16384, "num_hidden_layers": 2, "num_attention_heads": 8,
                        "num_key_value_heads": 1, "head_dim": 256, "vocab_size": 256000,
                        "hidden_act": "gelu", "torch_dtype": "bfloat16", "quantization_config": gptq},
         "Gemma (v1, gemma-2b shapes, 2 layers) with the Llama-2-13B GPTQ quantization_config"),
        ("stablelm-gptq", {"architectures": ["StableLmForCausalLM"], "model_type": "stablelm",
                           "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 2,
                           "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 100352,
                           "partial_rotary_factor": 0.25, "use_qkv_bias": True, "torch_dtype": "bfloat16",
                           "quantization_config": gptq},
         "StableLM (stablelm-2-1_6b shapes, 2 layers) with the Llama-2-13B GPTQ quantization_config"),
        ("olmoe-fp8", {"architectures": ["OlmoeForCausalLM"], "model_type": "olmoe", "hidden_size": 2048,
                       "intermediate_size": 1024, "num_hidden_layers": 2, "num_attention_heads": 16,
                       "num_key_value_heads": 16, "num_experts": 64, "num_experts_per_tok": 8,
                       "vocab_size": 50304, "torch_dtype": "bfloat16", "quantization_config": FP8_BLOCK},
         "OLMoE (OLMoE-1B-7B shapes, 2 layers) with an fp8 block-128 quantization_config"),
    ]
    for suffix, config, note in backend:
        out.append({"suffix": suffix, "base": llama_gptq, "overrides": {"config.json": config},
                    "engines": ["vllm"], "since": {"vllm": "0.34.0"}, "planned": False,
                    "note": note + "; served through the Transformers backend"})
    return out


def recordings(corpus: Path) -> list[dict]:
    recs = []
    for folder in full_config_folders(corpus):
        if folder in EXCLUDED:
            continue
        for engine in ENGINES:
            recs.append({"id": f"{engine}-{short_name(folder)}", "engine": engine,
                         "base": f"tests/data/corpus/{folder}", "overrides": {},
                         "inputs": dict(DEFAULT_INPUTS), "note": "corpus folder as published"})
    for e in edits(corpus):
        for engine in e.get("engines", ENGINES):
            rec = {"id": f"{engine}-{short_name(e['base'])}-{e['suffix']}", "engine": engine,
                   "base": f"tests/data/corpus/{e['base']}", "overrides": e.get("overrides", {}),
                   "inputs": dict(DEFAULT_INPUTS, **e.get("inputs", {})), "note": e["note"]}
            for key in ("since", "planned"):
                if key in e:
                    rec[key] = e[key]
            recs.append(rec)
    ids = [r["id"] for r in recs]
    assert len(ids) == len(set(ids)), "duplicate recording ids"
    return recs
