// QWenLMHeadModel: the first Qwen generation (Qwen-7B/14B/72B) and Qwen-VL, whose config.json names
// the same architecture and adds a `visual` block.
//
// Follows vLLM 0.23's qwen.py and qwen_vl.py, the last releases that carried them (vLLM serves a
// config with `visual` as QwenVLForConditionalGeneration). Language model, in construction order:
// `transformer.wte`; per block `transformer.h.N.attn.c_attn` (fused q/k/v in the checkpoint too,
// biased), `attn.c_proj`, the attention module, `mlp.gate_up_proj` (vLLM stacks the checkpoint's
// w2 as the gate and w1 as the up projection, so those are the legs, in that order) and
// `mlp.c_proj`; then `lm_head`. The MLP is half of `intermediate_size` wide, as both the reference
// code and vLLM read it. Vision tower (Qwen-VL): a ViT (`transformer.visual.transformer.
// resblocks.N.attn.in_proj`, `attn.out_proj`, `mlp.c_fc`, `mlp.c_proj`) and a one-layer
// cross-attention resampler (`attn_pool.kv_proj` and the out_proj of a torch MultiheadAttention,
// whose packed in_proj weight is a bare parameter), all named as the checkpoint names them.
//
// GPTQ exports store zero `bias` tensors for every quantized linear; those are not the model's and
// are not counted (vLLM skips them too).
//
// Non-goals: dynamic NTK / logn attention scaling, the tokenizer's image markers.
#include <cmath>
#include <string>

#include "fmt/format.h"
#include "src/models/model_builder.h"

namespace quantpath::models {
namespace {

constexpr std::string_view kVisual = "transformer.visual";
// The ViT's learned position table has 256 rows whatever the image size (the reference code and
// vLLM hard-code it and interpolate).
constexpr int64_t kVitPositions = 256;
// The resampler's attention heads are 128 wide.
constexpr int64_t kResamplerHeadDim = 128;

Status AddVisual(const ConfigReader& v, SiteList& list) {
  QP_ASSIGN_OR_RETURN(const int64_t width, v.Positive("width"));
  QP_ASSIGN_OR_RETURN(const int64_t layers, v.Positive("layers", kMaxLayers));
  QP_ASSIGN_OR_RETURN(const int64_t patch, v.Positive("patch_size"));
  QP_ASSIGN_OR_RETURN(const double mlp_ratio, v.PositiveNumber("mlp_ratio"));
  QP_ASSIGN_OR_RETURN(const int64_t output_dim, v.Positive("output_dim"));
  QP_ASSIGN_OR_RETURN(const int64_t queries, v.PositiveOr("n_queries", 256));
  if (output_dim % kResamplerHeadDim != 0) {
    return InvalidInput(fmt::format("{}: {} needs output_dim to be a multiple of {}, found {}",
                                    v.Where("output_dim"), v.architecture(), kResamplerHeadDim,
                                    output_dim));
  }
  // Python's int(width * mlp_ratio): 1664 × 4.9231 = 8192.04 → 8192.
  const auto mlp_width = static_cast<int64_t>(std::floor(static_cast<double>(width) * mlp_ratio));
  if (mlp_width < 1 || mlp_width > kMaxDim) {
    return InvalidInput(fmt::format("{}: {} gives an MLP width of {} for width {}",
                                    v.Where("mlp_ratio"), v.architecture(), mlp_width, width));
  }

  const std::string visual(kVisual);
  list.Other(visual + ".conv1.weight", {width, 3, patch, patch});  // no bias
  list.Other(visual + ".positional_embedding", {kVitPositions, width});
  AddLayerNorm(list, visual + ".ln_pre", width);
  for (int64_t i = 0; i < layers; ++i) {
    const std::string block = fmt::format("{}.transformer.resblocks.{}", kVisual, i);
    AddLayerNorm(list, block + ".ln_1", width);
    AddLayerNorm(list, block + ".ln_2", width);
    list.Linear(block + ".attn.in_proj", "ReplicatedLinear", 3 * width, width, true);
    list.Linear(block + ".attn.out_proj", "ReplicatedLinear", width, width, true);
    list.Linear(block + ".mlp.c_fc", "ColumnParallelLinear", mlp_width, width, true);
    list.Linear(block + ".mlp.c_proj", "RowParallelLinear", width, mlp_width, true);
  }
  const std::string pool = fmt::format("{}.attn_pool", kVisual);
  list.Other(pool + ".query", {queries, output_dim});
  // Keys and values come from the ViT's width; a projection exists only when it differs.
  if (width != output_dim) {
    list.Linear(pool + ".kv_proj", "ReplicatedLinear", output_dim, width, false);
  }
  // A torch MultiheadAttention's packed q, k, v: bare parameters, not a module.
  list.Other(pool + ".attn.in_proj_weight", {3 * output_dim, output_dim});
  list.Other(pool + ".attn.in_proj_bias", {3 * output_dim});
  list.Linear(pool + ".attn.out_proj", "NonDynamicallyQuantizableLinear", output_dim, output_dim,
              true);
  AddLayerNorm(list, pool + ".ln_q", output_dim);
  AddLayerNorm(list, pool + ".ln_kv", output_dim);
  list.Other(pool + ".pos_embed", {queries, output_dim});  // a 2-D sin-cos table
  AddLayerNorm(list, visual + ".ln_post", output_dim);
  list.Other(visual + ".proj", {output_dim, output_dim});  // a bare parameter
  return Status();
}

}  // namespace

Status BuildQwenV1(const ArchInput& input, ModelSites* out) {
  const ConfigReader& c = input.config;
  QP_ASSIGN_OR_RETURN(const int64_t hidden, c.Positive("hidden_size"));
  QP_ASSIGN_OR_RETURN(const int64_t layers, c.Positive("num_hidden_layers", kMaxLayers));
  QP_ASSIGN_OR_RETURN(const int64_t heads, c.Positive("num_attention_heads", kMaxHeads));
  QP_ASSIGN_OR_RETURN(const int64_t intermediate, c.Positive("intermediate_size"));
  QP_ASSIGN_OR_RETURN(const int64_t vocab, c.Positive("vocab_size"));
  QP_ASSIGN_OR_RETURN(const bool tied, c.BoolOr("tie_word_embeddings", false));
  QP_ASSIGN_OR_RETURN(const Json* visual, c.OptionalObject("visual"));
  // vLLM's head size is hidden_size / num_attention_heads (the config's kv_channels agrees in
  // every release); multi-head attention, so c_attn is three hidden-wide blocks.
  if (hidden % heads != 0) {
    return InvalidInput(
        fmt::format("{}: {} needs num_attention_heads to divide hidden_size ({}), "
                    "found {}",
                    c.Where("num_attention_heads"), c.architecture(), hidden, heads));
  }
  // w1 and w2 are each half of intermediate_size.
  if (intermediate % 2 != 0) {
    return InvalidInput(
        fmt::format("{}: {} needs an even intermediate_size (w1 and w2 are half of "
                    "it each), found {}",
                    c.Where("intermediate_size"), c.architecture(), intermediate));
  }
  const int64_t mlp = intermediate / 2;

  out->packed_modules_mapping = {{"c_attn", {"c_attn"}}, {"gate_up_proj", {"w2", "w1"}}};
  SiteList list(out, input);
  list.Embedding("transformer.wte", vocab, hidden);
  for (int64_t i = 0; i < layers; ++i) {
    const std::string block = fmt::format("transformer.h.{}", i);
    list.Other(block + ".ln_1.weight", {hidden});  // RMSNorm
    list.Linear(block + ".attn.c_attn", "QKVParallelLinear", 3 * hidden, hidden, true);
    list.Linear(block + ".attn.c_proj", "RowParallelLinear", hidden, hidden, false);
    list.Attention(block + ".attn.attn", input.names.attention_class);
    list.Other(block + ".ln_2.weight", {hidden});
    list.Linear(block + ".mlp.gate_up_proj", "MergedColumnParallelLinear", 2 * mlp, hidden, false,
                {{"w2", mlp}, {"w1", mlp}});
    list.Linear(block + ".mlp.c_proj", "RowParallelLinear", hidden, mlp, false);
  }
  list.Other("transformer.ln_f.weight", {hidden});
  if (visual != nullptr)
    QP_RETURN_IF_ERROR(AddVisual(ConfigReader(*visual, c.architecture()), list));
  list.LmHead("lm_head", vocab, hidden, tied);
  return list.status();
}

}  // namespace quantpath::models
