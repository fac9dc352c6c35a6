// The Llama family: LlamaForCausalLM, Qwen2ForCausalLM and Qwen3ForCausalLM.
//
// Goals: the sites vLLM builds for these decoder-only GQA models (embed_tokens; per layer fused
// qkv_proj, o_proj, attention, fused gate_up_proj, down_proj; lm_head) with the parameter counts
// the checkpoint stores. The three differ only in biases and Qwen3's per-head q/k norms, which a
// small traits record states. Non-goals: multimodal wrappers, sliding-window details, rope.
#include <string>

#include "fmt/format.h"
#include "src/models/model_builder.h"

namespace quantpath::models {
namespace {

// What sets the biases of the attention projections in the checkpoint.
enum class AttentionBias {
  kConfigField,  // `attention_bias` (Llama also honours the older `bias`) for q, k, v and o
  kQkvAlways,    // Qwen2: q, k, v always carry a bias, o_proj never
};

struct FamilyTraits {
  AttentionBias attention_bias;
  bool reads_mlp_bias;   // Llama's `mlp_bias` adds biases to gate, up and down
  bool legacy_bias_key;  // Llama: `bias` is an older spelling of `attention_bias`
  bool qk_norm;          // Qwen3: RMSNorm over each head of q and k (head_dim weights each)
  // vLLM's LlamaModel builds embed_tokens without a prefix (Qwen2Model passes one).
  bool unnamed_embedding_in_vllm;
};

constexpr FamilyTraits kLlamaTraits = {AttentionBias::kConfigField, true, true, false, true};
constexpr FamilyTraits kQwen2Traits = {AttentionBias::kQkvAlways, false, false, false, false};
constexpr FamilyTraits kQwen3Traits = {AttentionBias::kConfigField, false, false, true, false};

Status BuildFamily(const ArchInput& input, const FamilyTraits& traits, ModelSites* out) {
  const ConfigReader& c = input.config;
  QP_ASSIGN_OR_RETURN(GqaAttention attention, ReadGqaAttention(c));
  QP_ASSIGN_OR_RETURN(const int64_t layers, c.Positive("num_hidden_layers", kMaxLayers));
  QP_ASSIGN_OR_RETURN(const int64_t intermediate, c.Positive("intermediate_size"));
  QP_ASSIGN_OR_RETURN(const int64_t vocab, c.Positive("vocab_size"));
  QP_ASSIGN_OR_RETURN(const bool tied, c.BoolOr("tie_word_embeddings", false));

  if (traits.attention_bias == AttentionBias::kQkvAlways) {
    attention.qkv_bias = true;
  } else {
    QP_ASSIGN_OR_RETURN(bool attention_bias, c.BoolOr("attention_bias", false));
    if (traits.legacy_bias_key) {
      QP_ASSIGN_OR_RETURN(bool legacy, c.BoolOr("bias", false));
      attention_bias = attention_bias || legacy;
    }
    attention.qkv_bias = attention.o_bias = attention_bias;
  }
  bool mlp_bias = false;
  if (traits.reads_mlp_bias) {
    QP_ASSIGN_OR_RETURN(mlp_bias, c.BoolOr("mlp_bias", false));
  }

  out->packed_modules_mapping = {{"qkv_proj", {"q_proj", "k_proj", "v_proj"}},
                                 {"gate_up_proj", {"gate_proj", "up_proj"}}};
  const int64_t hidden = attention.hidden;
  SiteList list(out, input);
  AddTokenEmbedding(list, input, "model.embed_tokens", vocab, hidden);
  if (traits.unnamed_embedding_in_vllm && input.names.unnamed_llama_embedding) list.RenameLast("");
  for (int64_t i = 0; i < layers; ++i) {
    const std::string layer = fmt::format("model.layers.{}", i);
    AddGqaAttention(list, layer + ".self_attn", attention, input.names.attention_class);
    if (traits.qk_norm) AddQkNorms(list, layer + ".self_attn", attention.head_dim);
    AddGatedMlp(list, layer + ".mlp", hidden, intermediate, mlp_bias);
    AddDecoderNorms(list, layer, hidden);
  }
  list.Other("model.norm.weight", {hidden});
  // With tie_word_embeddings the head reuses embed_tokens' weight: still a site (both engines
  // build ParallelLMHead, calling get_quant_method, before tying it), no own params.
  AddLmHead(list, input, "lm_head", vocab, hidden, tied);
  return list.status();
}

}  // namespace

Status BuildLlama(const ArchInput& input, ModelSites* out) {
  return BuildFamily(input, kLlamaTraits, out);
}

Status BuildQwen2(const ArchInput& input, ModelSites* out) {
  return BuildFamily(input, kQwen2Traits, out);
}

Status BuildQwen3(const ArchInput& input, ModelSites* out) {
  return BuildFamily(input, kQwen3Traits, out);
}

}  // namespace quantpath::models
