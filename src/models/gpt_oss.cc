// GptOssForCausalLM (gpt-oss-20b / 120b): GQA attention with biases and per-head attention sinks,
// a biased router and experts stored as fused tensors per layer.
//
// Follows vLLM's gpt_oss.py (0.33): per layer `self_attn.qkv_proj` (legs q_proj, k_proj, v_proj)
// and `o_proj`, both biased; the attention module; `mlp.router` (built without a quantization
// config, with a bias); `mlp.experts` (FusedMoE with biases). The checkpoint stores each layer's
// experts as `gate_up_proj` (gate and up rows interleaved) and `down_proj`, plus their biases, so
// the moe site's legs are those two, stacked over the experts. The experts' activation is the
// clamped SwiGLU of transformers' GptOssExperts (`swiglu_limit`). `layer_types` (sliding / full
// attention) changes no site.
//
// Names: vLLM builds the attention block as `attn` (`model.layers.N.attn.qkv_proj`, its attention
// module `…attn.attn`) and the embedding as `embedding`, renaming the checkpoint's `self_attn` and
// `embed_tokens` when it loads; native and SGLang keep the checkpoint's paths, and every site keeps
// them as its checkpoint_path. Both engines build the embedding and the router without a
// quantization config, and so the head, so their dialects list none of them; SGLang builds the
// attention block without one too (its get_quant_method calls are the experts only).
//
// Non-goals: rope (yarn) parameters, sliding windows, expert parallelism.
#include <string>

#include "fmt/format.h"
#include "src/models/model_builder.h"

namespace quantpath::models {

Status BuildGptOss(const ArchInput& input, ModelSites* out) {
  const ConfigReader& c = input.config;
  QP_ASSIGN_OR_RETURN(GqaAttention attention, ReadGqaAttention(c));
  QP_ASSIGN_OR_RETURN(const int64_t layers, c.Positive("num_hidden_layers", kMaxLayers));
  QP_ASSIGN_OR_RETURN(const int64_t intermediate, c.Positive("intermediate_size"));
  QP_ASSIGN_OR_RETURN(const int64_t experts, c.Positive("num_local_experts", kMaxExperts));
  QP_ASSIGN_OR_RETURN(const int64_t vocab, c.Positive("vocab_size"));
  QP_ASSIGN_OR_RETURN(const bool tied, c.BoolOr("tie_word_embeddings", false));
  // The experts' clamped SwiGLU: alpha is fixed in both engines' kernels, the limit is the
  // config's (GptOssConfig's default 7.0).
  QP_ASSIGN_OR_RETURN(const double limit, c.PositiveNumberOr("swiglu_limit", 7.0));
  const ExpertActivation activation{ExpertActivation::Kind::kSwigluOai, 1.702, limit};
  // vLLM builds q/k/v and o with biases whatever the config says; the released configs say
  // `attention_bias: true` and the checkpoints store them.
  attention.qkv_bias = attention.o_bias = true;

  out->packed_modules_mapping = {{"qkv_proj", {"q_proj", "k_proj", "v_proj"}}};
  const int64_t hidden = attention.hidden;
  SiteList list(out, input);
  AddTokenEmbedding(list, input, "model.embed_tokens", vocab, hidden);
  for (int64_t i = 0; i < layers; ++i) {
    const std::string layer = fmt::format("model.layers.{}", i);
    const size_t first = list.size();
    list.set_no_engine_call(!input.names.gpt_oss_attention_configured);
    AddGqaAttention(list, layer + ".self_attn", attention, input.names.attention_class);
    list.set_no_engine_call(false);
    list.RenamePrefix(first, layer + ".self_attn.",
                      fmt::format("{}.{}.", layer, input.names.gpt_oss_attention));
    // One learned logit per head, under the checkpoint's `self_attn` whatever the dialect.
    list.Other(layer + ".self_attn.sinks", {attention.heads});
    list.Router(layer + ".mlp.router", experts, hidden, /*bias=*/true);
    list.Moe(layer + ".mlp.experts", input.names.experts_class, experts, intermediate, hidden,
             {.fused_gate_up = true, .bias = true, .activation = activation});
    AddDecoderNorms(list, layer, hidden);
  }
  list.Other("model.norm.weight", {hidden});
  list.set_no_engine_call(true);  // both engines build the head without a quantization config
  list.LmHead("lm_head", vocab, hidden, tied);
  list.set_no_engine_call(false);
  return list.status();
}

}  // namespace quantpath::models
