// MolmoForCausalLM (Molmo-7B-D/O, MolmoE): a CLIP-style ViT whose features go through an attention
// pooling and a gated projector into a Qwen2/OLMo-style decoder.
//
// Follows vLLM's molmo.py (0.33), in construction order: the vision backbone (ViT blocks with
// separate wq/wk/wv/wo and a w1/w2 MLP, `image_pooling_2d`, and `image_projector`, whose w1 and w3
// vLLM merges into one `merged_linear`), then the decoder (`wte`, per block the already fused
// `att_proj` and `ff_proj`, `attn_out`, `ff_out`), then the head. The vision tower's sizes are not
// in config.json: vLLM hard-codes them (VisionBackboneConfig, the 336-pixel CLIP ViT-L/14 of the
// released models, pooling over two of its layers); so do these sites.
//
// Names: the sites keep the checkpoint's module paths, which `llm_int8_skip_modules` and other
// quantization configs name. vLLM renames them when it loads the checkpoint (`model.transformer.
// blocks.N.` → `model.layers.N.`, att_proj → self_attn.qkv_proj, attn_out → self_attn.o_proj,
// ff_proj → mlp.gate_up_proj, ff_out → mlp.down_proj, `model.transformer.ff_out` → lm_head,
// `model.vision_backbone.` → `vision_backbone.`, image_projector w1/w3/w2 → gate_proj/up_proj/
// down_proj).
//
// Non-goals: image preprocessing, MolmoE's experts (a different architecture name).
#include <string>

#include "fmt/format.h"
#include "src/models/model_builder.h"

namespace quantpath::models {
namespace {

constexpr std::string_view kVision = "model.vision_backbone";
constexpr std::string_view kDecoder = "model.transformer";

// vLLM's VisionBackboneConfig and module constants.
constexpr int64_t kVitWidth = 1024;
constexpr int64_t kVitLayers = 23;
constexpr int64_t kVitMlp = 4096;
constexpr int64_t kVitPatch = 14;
constexpr int64_t kVitPositions = 577;     // 24 × 24 patches and the class token
constexpr int64_t kPooledVitLayers = 2;    // features of ViT layers -2 and -9, concatenated
constexpr int64_t kAdditionalVocab = 128;  // wte.new_embedding

// The ViT's attention (wq, wk, wv, wo) reading `in_width` features.
void AddVitAttention(SiteList& list, const std::string& prefix, int64_t in_width) {
  list.Linear(prefix + ".wq", "ColumnParallelLinear", kVitWidth, in_width, true);
  list.Linear(prefix + ".wk", "ColumnParallelLinear", kVitWidth, in_width, true);
  list.Linear(prefix + ".wv", "ColumnParallelLinear", kVitWidth, in_width, true);
  list.Linear(prefix + ".wo", "RowParallelLinear", kVitWidth, kVitWidth, true);
}

void AddVisionBackbone(SiteList& list, int64_t hidden, int64_t projector) {
  const std::string vit = fmt::format("{}.image_vit", kVision);
  list.Other(vit + ".class_embedding", {kVitWidth});
  list.Other(vit + ".positional_embedding", {kVitPositions, kVitWidth});
  // A plain nn.Linear over flattened RGB patches.
  list.Linear(vit + ".patch_embedding", "Linear", kVitWidth, kVitPatch * kVitPatch * 3, false);
  AddLayerNorm(list, vit + ".pre_ln", kVitWidth);
  for (int64_t i = 0; i < kVitLayers; ++i) {
    const std::string block = fmt::format("{}.transformer.resblocks.{}", vit, i);
    AddVitAttention(list, block + ".attention", kVitWidth);
    list.Linear(block + ".feed_forward.w1", "ColumnParallelLinear", kVitMlp, kVitWidth, true);
    list.Linear(block + ".feed_forward.w2", "RowParallelLinear", kVitWidth, kVitMlp, true);
    AddLayerNorm(list, block + ".attention_norm", kVitWidth);
    AddLayerNorm(list, block + ".ffn_norm", kVitWidth);
  }
  AddVitAttention(list, fmt::format("{}.image_pooling_2d", kVision), kPooledVitLayers * kVitWidth);
  const std::string proj = fmt::format("{}.image_projector", kVision);
  list.Linear(proj + ".merged_linear", "MergedColumnParallelLinear", 2 * projector, kVitWidth,
              false, {{"w1", projector}, {"w3", projector}});
  list.Linear(proj + ".w2", "RowParallelLinear", hidden, projector, false);
  list.Other(fmt::format("{}.pad_embed", kVision), {2, kPooledVitLayers * kVitWidth});
}

}  // namespace

Status BuildMolmo(const ArchInput& input, ModelSites* out) {
  const ConfigReader& c = input.config;
  // vLLM's head size is hidden_size / num_attention_heads.
  QP_ASSIGN_OR_RETURN(const GqaAttention attention, ReadGqaAttention(c));
  QP_ASSIGN_OR_RETURN(const int64_t layers, c.Positive("num_hidden_layers", kMaxLayers));
  QP_ASSIGN_OR_RETURN(const int64_t intermediate, c.Positive("intermediate_size"));
  QP_ASSIGN_OR_RETURN(const int64_t vocab, c.Positive("vocab_size"));
  QP_ASSIGN_OR_RETURN(const int64_t embedding_size, c.PositiveOr("embedding_size", vocab));
  QP_ASSIGN_OR_RETURN(const bool qkv_bias, c.BoolOr("qkv_bias", false));
  QP_ASSIGN_OR_RETURN(const bool qk_norm, c.BoolOr("attention_layer_norm", false));
  QP_ASSIGN_OR_RETURN(const bool tied, c.BoolOr("weight_tying", false));
  // ff_proj holds gate and up, each half of intermediate_size.
  if (intermediate % 2 != 0) {
    return InvalidInput(
        fmt::format("{}: {} needs an even intermediate_size (ff_proj holds two "
                    "halves), found {}",
                    c.Where("intermediate_size"), c.architecture(), intermediate));
  }
  const int64_t mlp = intermediate / 2;
  const int64_t hidden = attention.hidden;
  const int64_t kv_rows = attention.kv_heads * attention.head_dim;

  out->packed_modules_mapping = {{"qkv_proj", {"qkv_proj"}},
                                 {"gate_up_proj", {"gate_up_proj"}},
                                 {"merged_linear", {"gate_proj", "up_proj"}}};
  SiteList list(out, input);
  AddVisionBackbone(list, hidden, mlp);
  list.Embedding(fmt::format("{}.wte", kDecoder), embedding_size + kAdditionalVocab, hidden);
  for (int64_t i = 0; i < layers; ++i) {
    const std::string block = fmt::format("{}.blocks.{}", kDecoder, i);
    list.Linear(block + ".att_proj", "QKVParallelLinear", hidden + 2 * kv_rows, hidden, qkv_bias);
    // RMSNorms over all of k (the KV heads) and all of q.
    if (qk_norm) {
      list.Other(block + ".k_norm.weight", {kv_rows});
      list.Other(block + ".q_norm.weight", {hidden});
    }
    list.Attention(block + ".attn", input.names.attention_class);
    list.Linear(block + ".attn_out", "RowParallelLinear", hidden, hidden, false);
    list.Linear(block + ".ff_proj", "MergedColumnParallelLinear", 2 * mlp, hidden, false);
    list.Linear(block + ".ff_out", "RowParallelLinear", hidden, mlp, false);
    list.Other(block + ".attn_norm.weight", {hidden});
    list.Other(block + ".ff_norm.weight", {hidden});
  }
  list.Other(fmt::format("{}.ln_f.weight", kDecoder), {hidden});
  // The head is `model.transformer.ff_out` in the checkpoint, without the additional vocabulary.
  list.LmHead(fmt::format("{}.ff_out", kDecoder), embedding_size, hidden, tied);
  return list.status();
}

}  // namespace quantpath::models
