// Glm4MoeForCausalLM (GLM-4.5, GLM-4.5-Air, GLM-4.6): DeepSeek-style MoE layers (sigmoid router
// with a score-correction bias, shared experts, dense first layers, MTP layers after the stack)
// around standard grouped-query attention with q/k/v biases and per-head q/k norms.
//
// Follows vLLM's glm4_moe.py and glm4_moe_mtp.py (0.33): per layer `self_attn.qkv_proj` (legs
// q_proj, k_proj, v_proj; biased when `attention_bias`), `o_proj` (never biased), the attention
// module; then a gated MLP for the first `first_k_dense_replace` layers and a routed MoE block
// (`mlp.gate`, `mlp.shared_experts`, `mlp.experts`) after. The checkpoint stores each MTP layer as
// `model.layers.<num_hidden_layers + j>` with its own embedding and head, like DeepSeek-V3; the
// sites keep those names (vLLM's MTP model calls the decoder part `mtp_block`).
//
// Non-goals: partial rotary embedding, grouped top-k routing parameters, expert parallelism.
#include <string>

#include "fmt/format.h"
#include "src/models/model_builder.h"

namespace quantpath::models {
namespace {

// Bound on num_nextn_predict_layers: published models use 1.
constexpr int64_t kMaxMtpLayers = 64;

struct GlmDims {
  GqaAttention attention;
  int64_t layers = 0;
  int64_t vocab = 0;
  int64_t intermediate = 0;               // dense layers
  std::optional<int64_t> routed_experts;  // null: every layer is dense
  int64_t moe_intermediate = 0;
  int64_t shared_experts = 0;
  int64_t first_k_dense_replace = 0;
  int64_t mtp_layers = 0;
  bool qk_norm = false;
  bool tied = false;
  int64_t fused_shared_experts = 0;  // SGLang's shared-experts fusion
};

// SGLang 0.5.23's Glm4MoeForCausalLM.shared_experts_fusion_disable_reason on a CUDA device of
// compute capability 8.0 or newer without expert parallelism: every shared expert fuses, except
// with w4afp8.
Result<int64_t> FusedSharedExperts(const ArchInput& input, const GlmDims& d) {
  if (!input.names.fuses_shared_experts || !d.routed_experts) return 0;
  QP_ASSIGN_OR_RETURN(const std::optional<std::string> method, ReadQuantMethod(input));
  return method == "w4afp8" ? 0 : d.shared_experts;
}

Result<GlmDims> ReadDims(const ConfigReader& c) {
  GlmDims d;
  QP_ASSIGN_OR_RETURN(d.attention, ReadGqaAttention(c));
  QP_ASSIGN_OR_RETURN(d.attention.qkv_bias, c.BoolOr("attention_bias", false));
  QP_ASSIGN_OR_RETURN(d.layers, c.Positive("num_hidden_layers", kMaxLayers));
  QP_ASSIGN_OR_RETURN(d.vocab, c.Positive("vocab_size"));
  QP_ASSIGN_OR_RETURN(d.intermediate, c.Positive("intermediate_size"));
  QP_ASSIGN_OR_RETURN(d.routed_experts, c.OptionalPositive("n_routed_experts", kMaxExperts));
  if (d.routed_experts) {
    QP_ASSIGN_OR_RETURN(d.moe_intermediate, c.Positive("moe_intermediate_size"));
    QP_ASSIGN_OR_RETURN(d.shared_experts, c.CountOr("n_shared_experts", 0, kMaxExperts));
    QP_ASSIGN_OR_RETURN(d.first_k_dense_replace,
                        c.CountOr("first_k_dense_replace", 0, kMaxLayers + kMaxMtpLayers));
  }
  QP_ASSIGN_OR_RETURN(d.mtp_layers, c.CountOr("num_nextn_predict_layers", 0, kMaxMtpLayers));
  QP_ASSIGN_OR_RETURN(d.qk_norm, c.BoolOr("use_qk_norm", false));
  QP_ASSIGN_OR_RETURN(d.tied, c.BoolOr("tie_word_embeddings", false));
  return d;
}

void AddDecoderLayer(SiteList& list, const GlmDims& d, const DialectNames& names, int64_t index) {
  const std::string layer = fmt::format("model.layers.{}", index);
  AddGqaAttention(list, layer + ".self_attn", d.attention, names.attention_class);
  // AddGqaAttention adds the attention module last.
  if (!names.glm4_moe_attention_configured) list.NoEngineCallForLast();
  if (d.qk_norm) AddQkNorms(list, layer + ".self_attn", d.attention.head_dim);
  // vLLM's rule: routed experts from layer first_k_dense_replace on (MTP layers included).
  if (d.routed_experts && index >= d.first_k_dense_replace) {
    // The router always carries e_score_correction_bias in GLM-4.5.
    AddRoutedMoe(list, names, layer + ".mlp",
                 {.hidden = d.attention.hidden,
                  .experts = *d.routed_experts,
                  .moe_intermediate = d.moe_intermediate,
                  .shared_intermediate = d.shared_experts * d.moe_intermediate,
                  .score_correction_bias = true,
                  .fused_shared_experts = d.fused_shared_experts});
  } else {
    AddGatedMlp(list, layer + ".mlp", d.attention.hidden, d.intermediate, false);
  }
  AddDecoderNorms(list, layer, d.attention.hidden);
}

}  // namespace

Status BuildGlm4Moe(const ArchInput& input, ModelSites* out) {
  const ConfigReader& c = input.config;
  QP_ASSIGN_OR_RETURN(GlmDims d, ReadDims(c));
  QP_ASSIGN_OR_RETURN(d.fused_shared_experts, FusedSharedExperts(input, d));
  const int64_t hidden = d.attention.hidden;

  out->packed_modules_mapping = {{"qkv_proj", {"q_proj", "k_proj", "v_proj"}},
                                 {"gate_up_proj", {"gate_proj", "up_proj"}}};
  SiteList list(out, input);
  AddTokenEmbedding(list, input, "model.embed_tokens", d.vocab, hidden);
  for (int64_t i = 0; i < d.layers; ++i) AddDecoderLayer(list, d, input.names, i);
  list.Other("model.norm.weight", {hidden});
  AddLmHead(list, input, "lm_head", d.vocab, hidden, d.tied);
  // MTP layers come last and continue the layer numbering.
  for (int64_t j = 0; j < d.mtp_layers; ++j) {
    const int64_t index = d.layers + j;
    AddMtpLayer(list, input.names, fmt::format("model.layers.{}", index), d.vocab, hidden,
                [&] { AddDecoderLayer(list, d, input.names, index); });
  }
  return list.status();
}

}  // namespace quantpath::models
