"""Layer descriptions for the recorded cases: the case inputs' vocabulary.

Each helper returns one `layers` entry of the oracle case schema (tests/data/oracle/README.md),
with the engine layer class the engines would hand to `get_quant_method`.
"""

from __future__ import annotations

# ---------------------------------------------------------------------------
# Case inputs
# ---------------------------------------------------------------------------
LLAMA_PMM = {"qkv_proj": ["q_proj", "k_proj", "v_proj"], "gate_up_proj": ["gate_proj", "up_proj"]}

DEFAULT_CLASS = {
    "qkv_proj": "QKVParallelLinear",
    "gate_up_proj": "MergedColumnParallelLinear",
    "fused_qkv_a_proj": "MergedColumnParallelLinear",
    "fused_qkv_a_proj_with_mqa": "MergedColumnParallelLinear",
    "o_proj": "RowParallelLinear",
    "down_proj": "RowParallelLinear",
    "out_proj": "RowParallelLinear",
    "q_b_proj": "ColumnParallelLinear",
    "kv_b_proj": "ColumnParallelLinear",
}


def lin(prefix: str, module_class: str | None = None) -> dict:
    last = prefix.split(".")[-1]
    if module_class is None:
        module_class = DEFAULT_CLASS.get(last)
        if module_class is None:
            module_class = "ColumnParallelLinear" if last.endswith("_proj") else "ReplicatedLinear"
    return {"prefix": prefix, "kind": "linear", "module_class": module_class}


def lm_head(prefix: str = "lm_head") -> dict:
    return {"prefix": prefix, "kind": "lm_head", "module_class": "ParallelLMHead"}


def moe(prefix: str, engine: str) -> dict:
    # vLLM 0.33.0 hands the quant config a RoutedExperts module; SGLang a FusedMoE.
    return {"prefix": prefix, "kind": "moe", "module_class": "RoutedExperts" if engine == "vllm" else "FusedMoE"}


def attn(prefix: str, engine: str, module_class: str | None = None) -> dict:
    if module_class is None:
        module_class = "Attention" if engine == "vllm" else "RadixAttention"
    return {"prefix": prefix, "kind": "attention", "module_class": module_class}


def dense_block(i: int, root: str = "model") -> list[dict]:
    p = f"{root}.layers.{i}"
    return [lin(f"{p}.self_attn.qkv_proj"), lin(f"{p}.self_attn.o_proj"),
            lin(f"{p}.mlp.gate_up_proj"), lin(f"{p}.mlp.down_proj")]
