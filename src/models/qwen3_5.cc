// Qwen3_5ForConditionalGeneration and Qwen3_5MoeForConditionalGeneration (Qwen3.5, Qwen3.6): a
// hybrid language model (Gated DeltaNet linear-attention layers interleaved with gated full
// attention), a ViT vision tower, and a multi-token-prediction module.
//
// Follows vLLM's qwen3_5.py, qwen3_next.py, qwen3_vl.py, qwen3_5_mtp.py and the Gated DeltaNet
// layer (0.33), in construction order:
// - the vision tower `model.visual`: patch embedding (Conv3d), position table, `merger`
//   (`linear_fc1`, `linear_fc2`), deepstack mergers, then `blocks.N.attn.qkv` (packed in the
//   checkpoint too), `attn.proj`, `mlp.linear_fc1`, `mlp.linear_fc2`, all biased;
// - the language model `model.language_model`: `embed_tokens`; per layer, as `layer_types` says,
//   either `linear_attn.in_proj_qkvz` (legs in_proj_qkv, in_proj_z), `linear_attn.in_proj_ba`
//   (legs in_proj_b, in_proj_a) and `linear_attn.out_proj`, or `self_attn.qkv_proj` (q_proj also
//   emits the output gate when `attn_output_gate`), `o_proj` and the attention module; then a gated
//   MLP, or a sparse MoE block (`gate`, `shared_expert_gate`, `shared_expert`, `experts`) when the
//   text config's model_type is qwen3_5_moe_text (vLLM's rule);
// - `lm_head`, then the MTP module `mtp`: `fc`, `layers.J` (full attention), norms; it shares the
//   main model's embedding and head unless `mtp_use_dedicated_embeddings`.
// The Gated DeltaNet's causal conv1d is a ColumnParallelLinear in both engines, built without a
// quantization config (a convolution kernel, never a GEMM): a site that no format quantizes and
// no engine asks get_quant_method about. Its dt_bias, A_log and gated norm are non-site tensors.
//
// Names: native keeps the checkpoint's prefixes (`model.language_model.`, `model.visual.`,
// `mtp.`), which quantization configs name. vLLM builds `language_model.model.*`,
// `language_model.lm_head` and `visual.*`. SGLang builds `model.layers.*` but passes the
// checkpoint's `model.language_model.*` prefixes, and builds the vision tower (`visual.*`, a
// block's qkv as `attn.qkv_proj`) without a quantization config (dialect table). Both build the
// embedding without one.
// The MTP module keeps the checkpoint's `mtp.` names in every dialect; vLLM 0.33's draft model
// adds its own head `lm_head` after it. SGLang's MTP names are not reproduced (not verified).
//
// Non-goals: rope sections, EVS pruning, the vision tower's attention backend.
#include <string>

#include "fmt/format.h"
#include "src/models/model_builder.h"

namespace quantpath::models {
namespace {

constexpr std::string_view kVisual = "model.visual";
constexpr std::string_view kLanguage = "model.language_model";
constexpr int64_t kMaxMtpLayers = 64;

struct LinearAttention {
  int64_t k_heads = 0;
  int64_t v_heads = 0;
  int64_t k_head_dim = 0;
  int64_t v_head_dim = 0;
  int64_t conv_kernel = 0;
};

struct Mlp {
  int64_t hidden = 0;
  int64_t intermediate = 0;  // dense
  int64_t experts = 0;       // 0: dense
  int64_t moe_intermediate = 0;
  int64_t shared_intermediate = 0;
};

// `layer_types`, or its default: every `full_attention_interval`-th layer is full attention.
Result<std::vector<bool>> ReadFullAttentionLayers(const ConfigReader& c, int64_t layers) {
  QP_ASSIGN_OR_RETURN(std::optional<std::vector<std::string>> types,
                      c.OptionalStringList("layer_types"));
  std::vector<bool> full(static_cast<size_t>(layers));
  if (!types) {
    QP_ASSIGN_OR_RETURN(const int64_t interval,
                        c.PositiveOr("full_attention_interval", 4, kMaxLayers));
    for (int64_t i = 0; i < layers; ++i) full[static_cast<size_t>(i)] = (i + 1) % interval == 0;
    return full;
  }
  if (types->size() != full.size()) {
    return InvalidInput(fmt::format("{}: {} needs one entry per layer ({}), found {}",
                                    c.Where("layer_types"), c.architecture(), layers,
                                    types->size()));
  }
  for (size_t i = 0; i < full.size(); ++i) {
    const std::string& type = (*types)[i];
    if (type != "linear_attention" && type != "full_attention") {
      return InvalidInput(fmt::format(
          "{}/{}: {} knows the layer types \"linear_attention\" and \"full_attention\", found {}",
          c.Where("layer_types"), i, c.architecture(), JsonQuote(type)));
    }
    full[i] = type == "full_attention";
  }
  return full;
}

void AddMlp(SiteList& list, const std::string& prefix, const Mlp& m,
            std::string_view experts_class) {
  if (m.experts == 0) {
    AddGatedMlp(list, prefix, m.hidden, m.intermediate, false);
    return;
  }
  list.Router(prefix + ".gate", m.experts, m.hidden);
  // A one-output gate on the shared expert, built without a quantization config like the router.
  list.Router(prefix + ".shared_expert_gate", 1, m.hidden);
  if (m.shared_intermediate > 0) {
    AddGatedMlp(list, prefix + ".shared_expert", m.hidden, m.shared_intermediate, false);
  }
  list.Moe(prefix + ".experts", experts_class, m.experts, m.moe_intermediate, m.hidden);
}

void AddLinearAttention(SiteList& list, const std::string& prefix, int64_t hidden,
                        const LinearAttention& la) {
  const int64_t key_dim = la.k_heads * la.k_head_dim;
  const int64_t value_dim = la.v_heads * la.v_head_dim;
  list.set_without_quant_config(true);  // conv1d over q, k and v
  list.Linear(prefix + ".conv1d", "ColumnParallelLinear", 2 * key_dim + value_dim, la.conv_kernel,
              false);
  list.set_without_quant_config(false);
  list.Linear(prefix + ".in_proj_qkvz", "MergedColumnParallelLinear", 2 * key_dim + 2 * value_dim,
              hidden, false, {{"in_proj_qkv", 2 * key_dim + value_dim}, {"in_proj_z", value_dim}});
  list.Linear(prefix + ".in_proj_ba", "MergedColumnParallelLinear", 2 * la.v_heads, hidden, false,
              {{"in_proj_b", la.v_heads}, {"in_proj_a", la.v_heads}});
  list.Other(prefix + ".dt_bias", {la.v_heads});
  list.Other(prefix + ".A_log", {la.v_heads});
  // A gated RMSNorm over one value head.
  list.Other(prefix + ".norm.weight", {la.v_head_dim});
  list.Linear(prefix + ".out_proj", "RowParallelLinear", hidden, value_dim, false);
}

Status AddVisual(const ConfigReader& v, const DialectNames& names, SiteList& list) {
  QP_ASSIGN_OR_RETURN(const int64_t depth, v.Positive("depth", kMaxLayers));
  QP_ASSIGN_OR_RETURN(const int64_t hidden, v.Positive("hidden_size"));
  QP_ASSIGN_OR_RETURN(const int64_t intermediate, v.Positive("intermediate_size"));
  QP_ASSIGN_OR_RETURN(const int64_t out_hidden, v.Positive("out_hidden_size"));
  QP_ASSIGN_OR_RETURN(const int64_t positions, v.Positive("num_position_embeddings"));
  QP_ASSIGN_OR_RETURN(const int64_t patch, v.Positive("patch_size"));
  QP_ASSIGN_OR_RETURN(const int64_t temporal, v.PositiveOr("temporal_patch_size", 2));
  QP_ASSIGN_OR_RETURN(const int64_t channels, v.PositiveOr("in_channels", 3));
  QP_ASSIGN_OR_RETURN(const int64_t merge, v.PositiveOr("spatial_merge_size", 2));
  QP_ASSIGN_OR_RETURN(const int64_t deepstack, v.ListLength("deepstack_visual_indexes", depth));
  // The merger concatenates merge × merge neighbouring patches.
  const int64_t merged = hidden * merge * merge;

  const std::string visual(kVisual);
  // The patch embedding is a Conv3d.
  list.Other(visual + ".patch_embed.proj.weight", {hidden, channels, temporal, patch, patch});
  list.Other(visual + ".patch_embed.proj.bias", {hidden});
  list.Embedding(visual + ".pos_embed", positions, hidden, "Embedding");
  const auto add_merger = [&](const std::string& prefix, int64_t norm_width) {
    AddLayerNorm(list, prefix + ".norm", norm_width);
    list.Linear(prefix + ".linear_fc1", "ColumnParallelLinear", merged, merged, true);
    list.Linear(prefix + ".linear_fc2", "RowParallelLinear", out_hidden, merged, true);
  };
  add_merger(visual + ".merger", hidden);
  // Deepstack mergers normalise after the patch shuffle, over the merged width.
  for (int64_t k = 0; k < deepstack; ++k) {
    add_merger(fmt::format("{}.deepstack_merger_list.{}", kVisual, k), merged);
  }
  for (int64_t i = 0; i < depth; ++i) {
    const std::string block = fmt::format("{}.blocks.{}", kVisual, i);
    AddLayerNorm(list, block + ".norm1", hidden);
    AddLayerNorm(list, block + ".norm2", hidden);
    list.Linear(block + ".attn.qkv", "QKVParallelLinear", 3 * hidden, hidden, true);
    list.RenameLast(fmt::format("{}.attn.{}", block, names.qwen3_5_visual_qkv));
    list.Linear(block + ".attn.proj", "RowParallelLinear", hidden, hidden, true);
    list.Linear(block + ".mlp.linear_fc1", "ColumnParallelLinear", intermediate, hidden, true);
    list.Linear(block + ".mlp.linear_fc2", "RowParallelLinear", hidden, intermediate, true);
  }
  return Status();
}

}  // namespace

Status BuildQwen3_5(const ArchInput& input, ModelSites* out) {
  const ConfigReader& c = input.config;
  QP_ASSIGN_OR_RETURN(GqaAttention attention, ReadGqaAttention(c));
  // vLLM gates the attention output unless the config says otherwise.
  QP_ASSIGN_OR_RETURN(attention.output_gate, c.BoolOr("attn_output_gate", true));
  QP_ASSIGN_OR_RETURN(attention.qkv_bias, c.BoolOr("attention_bias", false));
  QP_ASSIGN_OR_RETURN(const int64_t layers, c.Positive("num_hidden_layers", kMaxLayers));
  QP_ASSIGN_OR_RETURN(const int64_t vocab, c.Positive("vocab_size"));
  QP_ASSIGN_OR_RETURN(const bool tied, c.BoolOr("tie_word_embeddings", false));
  QP_ASSIGN_OR_RETURN(const std::vector<bool> full, ReadFullAttentionLayers(c, layers));
  LinearAttention la;
  QP_ASSIGN_OR_RETURN(la.k_heads, c.Positive("linear_num_key_heads", kMaxHeads));
  QP_ASSIGN_OR_RETURN(la.v_heads, c.Positive("linear_num_value_heads", kMaxHeads));
  QP_ASSIGN_OR_RETURN(la.k_head_dim, c.Positive("linear_key_head_dim"));
  QP_ASSIGN_OR_RETURN(la.v_head_dim, c.Positive("linear_value_head_dim"));
  QP_ASSIGN_OR_RETURN(la.conv_kernel, c.Positive("linear_conv_kernel_dim"));
  const int64_t hidden = attention.hidden;
  Mlp mlp{.hidden = hidden};
  QP_ASSIGN_OR_RETURN(std::optional<std::string> model_type, c.OptionalString("model_type"));
  if (model_type == "qwen3_5_moe_text") {
    QP_ASSIGN_OR_RETURN(mlp.experts, c.Positive("num_experts", kMaxExperts));
    QP_ASSIGN_OR_RETURN(mlp.moe_intermediate, c.Positive("moe_intermediate_size"));
    QP_ASSIGN_OR_RETURN(mlp.shared_intermediate,
                        c.CountOr("shared_expert_intermediate_size", 0, kMaxDim));
  } else {
    QP_ASSIGN_OR_RETURN(mlp.intermediate, c.Positive("intermediate_size"));
  }
  QP_ASSIGN_OR_RETURN(const int64_t mtp_layers,
                      c.CountOr("mtp_num_hidden_layers", 0, kMaxMtpLayers));
  QP_ASSIGN_OR_RETURN(const bool mtp_embeddings, c.BoolOr("mtp_use_dedicated_embeddings", false));
  QP_ASSIGN_OR_RETURN(const Json* vision, input.root.OptionalObject("vision_config"));

  out->packed_modules_mapping = {{"qkv_proj", {"q_proj", "k_proj", "v_proj"}},
                                 {"gate_up_proj", {"gate_proj", "up_proj"}},
                                 {"qkv", {"qkv"}},
                                 {"in_proj_qkvz", {"in_proj_qkv", "in_proj_z"}},
                                 {"in_proj_ba", {"in_proj_b", "in_proj_a"}}};
  SiteList list(out, input);
  if (vision != nullptr) {
    list.set_no_engine_call(!input.names.qwen3_5_visual_configured);
    QP_RETURN_IF_ERROR(AddVisual(ConfigReader(*vision, c.architecture()), input.names, list));
    list.set_no_engine_call(false);
  }
  const auto add_full_attention = [&](const std::string& layer) {
    AddGqaAttention(list, layer + ".self_attn", attention, input.names.attention_class);
    AddQkNorms(list, layer + ".self_attn", attention.head_dim);
  };
  AddTokenEmbedding(list, input, fmt::format("{}.embed_tokens", kLanguage), vocab, hidden);
  for (int64_t i = 0; i < layers; ++i) {
    const std::string layer = fmt::format("{}.layers.{}", kLanguage, i);
    if (full[static_cast<size_t>(i)]) {
      add_full_attention(layer);
    } else {
      AddLinearAttention(list, layer + ".linear_attn", hidden, la);
    }
    AddMlp(list, layer + ".mlp", mlp, input.names.experts_class);
    AddDecoderNorms(list, layer, hidden);
  }
  list.Other(fmt::format("{}.norm.weight", kLanguage), {hidden});
  AddLmHead(list, input, "lm_head", vocab, hidden, tied);
  list.RenameLast(std::string(input.names.qwen3_5_lm_head));
  list.RenamePrefix(0, fmt::format("{}.", kVisual), fmt::format("{}.", input.names.qwen3_5_visual));
  list.RenamePrefix(0, fmt::format("{}.", kLanguage),
                    fmt::format("{}.", input.names.qwen3_5_language));

  if (mtp_layers > 0) {
    list.BeginMtp("mtp");
    // Both engines build the MTP embedding without a quantization config.
    list.set_no_engine_call(true);
    if (mtp_embeddings) list.Embedding("mtp.embed_tokens", vocab, hidden);
    list.set_no_engine_call(false);
    // Mixes [embedding; previous hidden state] back to the hidden size.
    list.Linear("mtp.fc", "ColumnParallelLinear", hidden, 2 * hidden, false);
    for (int64_t j = 0; j < mtp_layers; ++j) {
      const std::string layer = fmt::format("mtp.layers.{}", j);
      add_full_attention(layer);
      AddMlp(list, layer + ".mlp", mlp, input.names.experts_class);
      AddDecoderNorms(list, layer, hidden);
    }
    for (std::string_view norm : {"norm", "pre_fc_norm_hidden", "pre_fc_norm_embedding"}) {
      list.Other(fmt::format("mtp.{}.weight", norm), {hidden});
    }
    // vLLM's Qwen3_5MTP builds its own ParallelLMHead `lm_head` after the MTP module; it loads the
    // checkpoint's lm_head, so it stores nothing of its own here.
    if (input.names.qwen3_5_mtp_head) list.LmHead("lm_head", vocab, hidden, /*tied=*/true);
    list.EndMtp();
  }
  return list.status();
}

}  // namespace quantpath::models
