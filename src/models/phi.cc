// PhiForCausalLM (phi-1, phi-1.5, phi-2): parallel attention and MLP after one LayerNorm, biases
// everywhere, a biased LM head.
//
// Follows vLLM 0.23's phi.py, the last release with a native implementation (later ones serve it
// through the Transformers backend, which keeps Hugging Face's unfused q/k/v). Sites in
// construction order: `model.embed_tokens`; per layer `self_attn.qkv_proj` (legs q_proj, k_proj,
// v_proj), `self_attn.dense`, the attention module, `mlp.fc1`, `mlp.fc2`; then `lm_head` with a
// bias. vLLM sizes fc1 as 4 × hidden_size; the checkpoints' `intermediate_size` is what their
// tensors hold, and every released Phi config has the two equal.
//
// Engines: SGLang's phi.py builds qkv_proj, dense, fc1, fc2 and the head without a prefix (their
// engine path is "", so no name-based rule reaches them) and the embedding without a quantization
// config. vLLM 0.33 serves Phi through its Transformers backend: the same module paths (its QKV
// fuser names the fused projection qkv_proj), with every attention module built after the last
// layer.
//
// Non-goals: partial rotary embedding, `qk_layernorm` (no released Phi checkpoint sets it, and
// vLLM's implementation does not build it).
#include <string>

#include "fmt/format.h"
#include "src/models/model_builder.h"

namespace quantpath::models {

Status BuildPhi(const ArchInput& input, ModelSites* out) {
  const ConfigReader& c = input.config;
  QP_ASSIGN_OR_RETURN(GqaAttention attention, ReadGqaAttention(c));
  QP_ASSIGN_OR_RETURN(const int64_t layers, c.Positive("num_hidden_layers", kMaxLayers));
  QP_ASSIGN_OR_RETURN(const int64_t vocab, c.Positive("vocab_size"));
  const int64_t hidden = attention.hidden;
  QP_ASSIGN_OR_RETURN(const int64_t intermediate, c.PositiveOr("intermediate_size", 4 * hidden));
  QP_ASSIGN_OR_RETURN(const bool tied, c.BoolOr("tie_word_embeddings", false));
  // The head has a bias the embedding lacks, so the engines cannot tie them.
  if (tied) {
    return Unsupported(
        fmt::format("{}: {} has a biased lm_head and cannot tie it to the "
                    "embedding; found tie_word_embeddings true",
                    c.Where("tie_word_embeddings"), c.architecture()));
  }
  attention.qkv_bias = attention.o_bias = true;
  attention.o_name = "dense";

  out->packed_modules_mapping = {{"qkv_proj", {"q_proj", "k_proj", "v_proj"}}};
  SiteList list(out, input);
  const bool unnamed = input.names.unnamed_phi_layers;
  AddTokenEmbedding(list, input, "model.embed_tokens", vocab, hidden);
  const size_t first_layer = list.size();
  for (int64_t i = 0; i < layers; ++i) {
    const std::string layer = fmt::format("model.layers.{}", i);
    // One LayerNorm before the parallel attention and MLP.
    AddLayerNorm(list, layer + ".input_layernorm", hidden);
    const size_t first = list.size();
    AddGqaAttention(list, layer + ".self_attn", attention, input.names.attention_class);
    if (unnamed) list.RenamePrefix(first, layer + ".self_attn.qkv_proj", "");
    if (unnamed) list.RenamePrefix(first, layer + ".self_attn.dense", "");
    list.Linear(layer + ".mlp.fc1", "ColumnParallelLinear", intermediate, hidden, true);
    if (unnamed) list.RenameLast("");
    list.Linear(layer + ".mlp.fc2", "RowParallelLinear", hidden, intermediate, true);
    if (unnamed) list.RenameLast("");
  }
  if (input.names.transformers_backend) list.MoveAttentionLast(first_layer);
  AddLayerNorm(list, "model.final_layernorm", hidden);
  list.LmHead("lm_head", vocab, hidden, /*tied=*/false, /*bias=*/true);
  if (unnamed) list.RenameLast("");
  return list.status();
}

}  // namespace quantpath::models
