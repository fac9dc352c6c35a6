// DeepseekV3ForCausalLM (DeepSeek-V3 / R1, and Kimi-K2, whose `model_type kimi_k2` uses the same
// architecture): multi-head latent attention, dense first layers, routed + shared experts, and
// multi-token-prediction (MTP) layers after the main stack.
//
// Goals: the sites vLLM builds (SGLang's where the dialect table says so), with the parameter
// counts of the HF checkpoint, MTP layers included. Non-goals: DeepSeek-V2's grouped routing
// details, V3.2's sparse indexer, rope scaling, expert parallelism.
#include <string>

#include "fmt/format.h"
#include "src/models/model_builder.h"

namespace quantpath::models {
namespace {

// Bound on num_nextn_predict_layers: published models use 1.
constexpr int64_t kMaxMtpLayers = 64;

struct DeepseekDims {
  int64_t hidden = 0;
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t vocab = 0;
  int64_t intermediate = 0;            // dense MLP layers
  std::optional<int64_t> q_lora_rank;  // null: q_proj straight from hidden
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
  std::optional<int64_t> routed_experts;  // null: every layer is dense
  int64_t moe_intermediate = 0;
  int64_t shared_experts = 0;
  int64_t first_k_dense_replace = 0;
  int64_t moe_layer_freq = 1;
  int64_t mtp_layers = 0;
  bool tied = false;
  bool score_correction_bias = true;
  int64_t fused_shared_experts = 0;  // SGLang's shared-experts fusion
};

// SGLang 0.5.23's DeepseekV3ForCausalLM.shared_experts_fusion_disable_reason on a CUDA device of
// compute capability 8.0 or newer without expert parallelism (its default serving setup): only
// the DeepSeek-V3/R1 layout (256 routed experts, one shared expert; Kimi-K2's 384 only with
// quark) fuses, and not with w4afp8. Not reproduced: compressed-tensors W4A16/W4AFP8 and
// ModelOpt exclusions of the shared experts, which also keep them apart.
Result<int64_t> FusedSharedExperts(const ArchInput& input, const DeepseekDims& d) {
  if (!input.names.fuses_shared_experts || !d.routed_experts) return 0;
  QP_ASSIGN_OR_RETURN(const std::optional<std::string> method, ReadQuantMethod(input));
  const bool layout = d.shared_experts == 1 &&
                      (*d.routed_experts == 256 || (*d.routed_experts == 384 && method == "quark"));
  if (!layout || method == "w4afp8") return 0;
  return d.shared_experts;
}

Result<DeepseekDims> ReadDims(const ConfigReader& c) {
  DeepseekDims d;
  QP_ASSIGN_OR_RETURN(d.hidden, c.Positive("hidden_size"));
  QP_ASSIGN_OR_RETURN(d.layers, c.Positive("num_hidden_layers", kMaxLayers));
  QP_ASSIGN_OR_RETURN(d.heads, c.Positive("num_attention_heads", kMaxHeads));
  QP_ASSIGN_OR_RETURN(d.vocab, c.Positive("vocab_size"));
  QP_ASSIGN_OR_RETURN(d.intermediate, c.Positive("intermediate_size"));
  QP_ASSIGN_OR_RETURN(d.q_lora_rank, c.OptionalPositive("q_lora_rank"));
  QP_ASSIGN_OR_RETURN(d.kv_lora_rank, c.Positive("kv_lora_rank"));
  QP_ASSIGN_OR_RETURN(d.qk_nope_head_dim, c.Positive("qk_nope_head_dim"));
  QP_ASSIGN_OR_RETURN(d.qk_rope_head_dim, c.Positive("qk_rope_head_dim"));
  QP_ASSIGN_OR_RETURN(d.v_head_dim, c.Positive("v_head_dim"));
  QP_ASSIGN_OR_RETURN(d.routed_experts, c.OptionalPositive("n_routed_experts", kMaxExperts));
  if (d.routed_experts) {
    QP_ASSIGN_OR_RETURN(d.moe_intermediate, c.Positive("moe_intermediate_size"));
    QP_ASSIGN_OR_RETURN(d.shared_experts, c.CountOr("n_shared_experts", 0, kMaxExperts));
    QP_ASSIGN_OR_RETURN(d.first_k_dense_replace,
                        c.CountOr("first_k_dense_replace", 0, kMaxLayers + kMaxMtpLayers));
    QP_ASSIGN_OR_RETURN(d.moe_layer_freq, c.PositiveOr("moe_layer_freq", 1, kMaxLayers));
    // The router's e_score_correction_bias exists for noaux_tc routing, which is what
    // DeepSeek-V3's own config class assumes when the field is absent.
    QP_ASSIGN_OR_RETURN(std::optional<std::string> topk_method, c.OptionalString("topk_method"));
    d.score_correction_bias = !topk_method || *topk_method == "noaux_tc";
  }
  QP_ASSIGN_OR_RETURN(d.mtp_layers, c.CountOr("num_nextn_predict_layers", 0, kMaxMtpLayers));
  QP_ASSIGN_OR_RETURN(d.tied, c.BoolOr("tie_word_embeddings", false));
  return d;
}

// Whether layer `index` (MTP layers continue the numbering) has routed experts; the engines'
// rule: index >= first_k_dense_replace and index % moe_layer_freq == 0.
bool IsMoeLayer(const DeepseekDims& d, int64_t index) {
  return d.routed_experts && index >= d.first_k_dense_replace && index % d.moe_layer_freq == 0;
}

void AddAttention(SiteList& list, const DeepseekDims& d, const DialectNames& names,
                  const std::string& prefix) {
  const int64_t q_head_dim = d.qk_nope_head_dim + d.qk_rope_head_dim;
  const int64_t kv_a_rows = d.kv_lora_rank + d.qk_rope_head_dim;
  if (d.q_lora_rank) {
    // q_a_proj and kv_a_proj_with_mqa read the same input and are fused into one GEMM.
    list.Linear(fmt::format("{}.{}", prefix, names.mla_fused_qkv_a), names.mla_fused_qkv_a_class,
                *d.q_lora_rank + kv_a_rows, d.hidden, false,
                {{"q_a_proj", *d.q_lora_rank}, {"kv_a_proj_with_mqa", kv_a_rows}});
    list.Other(prefix + ".q_a_layernorm.weight", {*d.q_lora_rank});
    list.Linear(prefix + ".q_b_proj", "ColumnParallelLinear", d.heads * q_head_dim, *d.q_lora_rank,
                false);
  } else {
    // vLLM builds kv_a_proj_with_mqa first when there is no q LoRA.
    list.Linear(prefix + ".kv_a_proj_with_mqa", "ReplicatedLinear", kv_a_rows, d.hidden, false);
    list.Linear(prefix + ".q_proj", "ColumnParallelLinear", d.heads * q_head_dim, d.hidden, false);
  }
  list.Other(prefix + ".kv_a_layernorm.weight", {d.kv_lora_rank});
  list.Linear(prefix + ".kv_b_proj", "ColumnParallelLinear",
              d.heads * (d.qk_nope_head_dim + d.v_head_dim), d.kv_lora_rank, false);
  list.Linear(prefix + ".o_proj", "RowParallelLinear", d.hidden, d.heads * d.v_head_dim, false);
  for (std::string_view attn : names.mla_attention) {
    list.Attention(fmt::format("{}.{}", prefix, attn), names.mla_attention_class);
  }
}

void AddDecoderLayer(SiteList& list, const DeepseekDims& d, const DialectNames& names,
                     int64_t index) {
  const std::string layer = fmt::format("model.layers.{}", index);
  AddAttention(list, d, names, layer + ".self_attn");
  if (IsMoeLayer(d, index)) {
    AddRoutedMoe(list, names, layer + ".mlp",
                 {.hidden = d.hidden,
                  .experts = *d.routed_experts,
                  .moe_intermediate = d.moe_intermediate,
                  .shared_intermediate = d.shared_experts * d.moe_intermediate,
                  .score_correction_bias = d.score_correction_bias,
                  .fused_shared_experts = d.fused_shared_experts});
  } else {
    AddGatedMlp(list, layer + ".mlp", d.hidden, d.intermediate, false);
  }
  AddDecoderNorms(list, layer, d.hidden);
}

}  // namespace

Status BuildDeepseekV3(const ArchInput& input, ModelSites* out) {
  const ConfigReader& c = input.config;
  QP_ASSIGN_OR_RETURN(DeepseekDims d, ReadDims(c));
  QP_ASSIGN_OR_RETURN(d.fused_shared_experts, FusedSharedExperts(input, d));

  out->packed_modules_mapping = {{"gate_up_proj", {"gate_proj", "up_proj"}}};
  if (d.q_lora_rank) {
    out->packed_modules_mapping.push_back(
        {std::string(input.names.mla_fused_qkv_a), {"q_a_proj", "kv_a_proj_with_mqa"}});
  }

  SiteList list(out, input);
  AddTokenEmbedding(list, input, "model.embed_tokens", d.vocab, d.hidden);
  for (int64_t i = 0; i < d.layers; ++i) AddDecoderLayer(list, d, input.names, i);
  list.Other("model.norm.weight", {d.hidden});
  // With tie_word_embeddings the head reuses embed_tokens' weight: still a site, no own params.
  AddLmHead(list, input, "lm_head", d.vocab, d.hidden, d.tied);
  // MTP layers come last and continue the layer numbering.
  for (int64_t j = 0; j < d.mtp_layers; ++j) {
    const int64_t index = d.layers + j;
    AddMtpLayer(list, input.names, fmt::format("model.layers.{}", index), d.vocab, d.hidden,
                [&] { AddDecoderLayer(list, d, input.names, index); });
  }
  return list.status();
}

}  // namespace quantpath::models
