#!/usr/bin/env python3
"""Writes tiny fp8 LlamaForCausalLM checkpoints: the bundled example and its test variants.

Goal: small, deterministic model folders whose tensors follow the conventions real fp8
checkpoints use, so that `quantpath plan` / `run` and the tests exercise real loading paths.
Non-goal: a model that generates text (weights are seeded noise).

Variants (all: hidden 256, 4 heads / 2 kv heads of 64, intermediate 512, bf16 embeddings, norms
and lm_head, `quant_method: fp8`):
  block    (default; this folder) 2 layers, vocab 512, one model.safetensors.
           DeepSeek-style: `weight_block_size: [128, 128]`, `activation_scheme: dynamic`;
           per linear `weight` (F8_E4M3) and `weight_scale_inv` (F32 [ceil(N/128), ceil(K/128)]),
           where W ≈ weight × weight_scale_inv (the "inverse" scale multiplies) and each block's
           scale is its absmax / 448.
  sharded  1 layer, vocab 256, the block variant split into two shards with
           model.safetensors.index.json; q_proj sits in the first shard and k_proj / v_proj in
           the second, so a fused qkv_proj reads both.
  static   1 layer, vocab 256, per-tensor fp8 with `activation_scheme: static`: per linear
           `weight` (F8_E4M3), `weight_scale` and `input_scale` (F32 scalars, shape []);
           the legs of each fused site get different input scales.

Usage (from the repository root):
  python3 examples/llama-tiny-fp8/generate.py
  python3 examples/llama-tiny-fp8/generate.py --variant sharded \
      --out tests/data/checkpoints/llama-tiny-fp8-sharded
  python3 examples/llama-tiny-fp8/generate.py --variant static \
      --out tests/data/checkpoints/llama-tiny-fp8-static
Needs numpy and ml_dtypes; writes safetensors directly (8-byte little-endian header length, JSON
header padded with spaces to a multiple of 8, then the data, as the reference writer does).
"""

import argparse
import json
import os
import struct

import ml_dtypes
import numpy as np

FP8_MAX = 448.0
HIDDEN = 256
INTERMEDIATE = 512
HEADS = 4
KV_HEADS = 2
HEAD_DIM = 64

ST_DTYPES = {
    np.dtype(ml_dtypes.float8_e4m3fn): "F8_E4M3",
    np.dtype(ml_dtypes.bfloat16): "BF16",
    np.dtype(np.float32): "F32",
}


def config(variant, layers, vocab):
    quant = {"quant_method": "fp8", "fmt": "e4m3"}
    if variant == "static":
        quant["activation_scheme"] = "static"
    else:
        quant["activation_scheme"] = "dynamic"
        quant["weight_block_size"] = [128, 128]
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE,
        "num_hidden_layers": layers,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "head_dim": HEAD_DIM,
        "vocab_size": vocab,
        "max_position_embeddings": 2048,
        "hidden_act": "silu",
        "rms_norm_eps": 1e-05,
        "rope_theta": 10000.0,
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": False,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.46.0",
        "quantization_config": quant,
    }


def dense_weight(rng, rows, cols):
    """Noise with per-row gains, so that scales differ from block to block."""
    gains = np.exp(rng.normal(0.0, 0.5, size=(rows, 1)))
    return (rng.normal(0.0, 0.02, size=(rows, cols)) * gains).astype(np.float32)


def to_fp8(values):
    return np.clip(values, -FP8_MAX, FP8_MAX).astype(ml_dtypes.float8_e4m3fn)


def quantize_block(w, block=128):
    rows, cols = w.shape
    grid = np.zeros(((rows + block - 1) // block, (cols + block - 1) // block), np.float32)
    q = np.zeros_like(w)
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            tile = w[i * block:(i + 1) * block, j * block:(j + 1) * block]
            scale = np.float32(max(float(np.abs(tile).max()), 1e-12) / FP8_MAX)
            grid[i, j] = scale
            q[i * block:(i + 1) * block, j * block:(j + 1) * block] = tile / scale
    return {"weight": to_fp8(q), "weight_scale_inv": grid}


def quantize_tensor(w, input_scale):
    scale = np.float32(float(np.abs(w).max()) / FP8_MAX)
    return {
        "weight": to_fp8(w / scale),
        "weight_scale": np.array(scale, np.float32),
        "input_scale": np.array(input_scale, np.float32),
    }


def linears(layer):
    """(module prefix, [rows, cols], static input scale) of one decoder layer's linears."""
    attn = f"model.layers.{layer}.self_attn"
    mlp = f"model.layers.{layer}.mlp"
    return [
        (f"{attn}.q_proj", (HEADS * HEAD_DIM, HIDDEN), 1.10 / FP8_MAX),
        (f"{attn}.k_proj", (KV_HEADS * HEAD_DIM, HIDDEN), 1.00 / FP8_MAX),
        (f"{attn}.v_proj", (KV_HEADS * HEAD_DIM, HIDDEN), 1.25 / FP8_MAX),
        (f"{attn}.o_proj", (HIDDEN, HEADS * HEAD_DIM), 0.90 / FP8_MAX),
        (f"{mlp}.gate_proj", (INTERMEDIATE, HIDDEN), 1.05 / FP8_MAX),
        (f"{mlp}.up_proj", (INTERMEDIATE, HIDDEN), 1.30 / FP8_MAX),
        (f"{mlp}.down_proj", (HIDDEN, INTERMEDIATE), 0.80 / FP8_MAX),
    ]


def build_tensors(variant, layers, vocab, seed):
    rng = np.random.default_rng(seed)
    bf16 = ml_dtypes.bfloat16
    tensors = {"model.embed_tokens.weight": rng.normal(0.0, 0.02, (vocab, HIDDEN)).astype(bf16)}
    for layer in range(layers):
        for norm in ("input_layernorm", "post_attention_layernorm"):
            tensors[f"model.layers.{layer}.{norm}.weight"] = (
                1.0 + rng.normal(0.0, 0.05, HIDDEN)).astype(bf16)
        for prefix, shape, input_scale in linears(layer):
            w = dense_weight(rng, *shape)
            parts = quantize_tensor(w, input_scale) if variant == "static" else quantize_block(w)
            for suffix, value in parts.items():
                tensors[f"{prefix}.{suffix}"] = value
    tensors["model.norm.weight"] = (1.0 + rng.normal(0.0, 0.05, HIDDEN)).astype(bf16)
    tensors["lm_head.weight"] = rng.normal(0.0, 0.02, (vocab, HIDDEN)).astype(bf16)
    return tensors


def write_safetensors(path, tensors):
    header = {"__metadata__": {"format": "pt"}}
    offset = 0
    blobs = []
    for name in sorted(tensors):
        array = np.ascontiguousarray(tensors[name])
        data = array.tobytes()
        header[name] = {
            "dtype": ST_DTYPES[array.dtype],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)
    return offset


def shard_of(name):
    """The sharded variant: embeddings, q_proj and o_proj first; everything else second."""
    first = ("model.embed_tokens.", ".q_proj.", ".o_proj.", "input_layernorm")
    return 1 if any(part in name for part in first) else 2


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=["block", "sharded", "static"], default="block")
    parser.add_argument("--out", default=here)
    parser.add_argument("--seed", type=int, default=20240601)
    args = parser.parse_args()

    layers, vocab = (2, 512) if args.variant == "block" else (1, 256)
    tensors = build_tensors(args.variant, layers, vocab, args.seed)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config(args.variant, layers, vocab), f, indent=2)
        f.write("\n")
    if args.variant != "sharded":
        write_safetensors(os.path.join(args.out, "model.safetensors"), tensors)
        return
    weight_map = {}
    total = 0
    for shard in (1, 2):
        file = f"model-{shard:05d}-of-00002.safetensors"
        part = {name: t for name, t in tensors.items() if shard_of(name) == shard}
        total += write_safetensors(os.path.join(args.out, file), part)
        weight_map.update({name: file for name in part})
    index = {"metadata": {"total_size": total},
             "weight_map": dict(sorted(weight_map.items()))}
    with open(os.path.join(args.out, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
