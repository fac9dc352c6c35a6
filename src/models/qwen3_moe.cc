// Qwen3MoeForCausalLM (Qwen3-30B-A3B, Qwen3-235B-A22B, Qwen3-Coder): Qwen3's attention (fused
// qkv_proj with per-head q/k norms) with a sparse MoE block in place of the MLP.
//
// Follows vLLM's qwen3_moe.py: per layer `self_attn.qkv_proj` (legs q_proj, k_proj, v_proj),
// `o_proj`, the attention module; then either the sparse block — router `mlp.gate`, a shared
// expert when `shared_expert_intermediate_size` > 0 (`mlp.shared_expert_gate`, a one-output gate
// built without a quantization config, and `mlp.shared_expert`; Qwen3-MoE configs have none, the
// field comes from Qwen2-MoE), then `mlp.experts` — or a gated MLP of `intermediate_size`. The
// block is sparse when the layer is not in `mlp_only_layers`, there are experts and
// (index + 1) % decoder_sparse_step == 0. Each expert is stored as
// `mlp.experts.N.{gate,up,down}_proj` [moe_intermediate_size, hidden] / [hidden, moe_intermediate].
// transformers 5 writes the expert count as `num_local_experts` (its attribute map reads
// `num_experts` from it); older configs say `num_experts`.
//
// Names: every dialect uses the checkpoint's prefixes (vLLM and SGLang pass them as they are).
// SGLang's qwen3_moe.py builds the attention module (RadixAttention) and, through Qwen2MoeModel,
// the embedding without a quantization config (dialect table). SGLang builds `experts` before the
// router and vLLM 0.33 gives its router (GateLinear) the quantization config; the router is kept
// here as every other MoE model's is (a site without an engine call, decided unquantized), so
// neither difference shows in the engines' lists.
//
// Non-goals: expert parallelism and redundant experts, dual-chunk attention, rope scaling.
#include <string>
#include <vector>

#include "fmt/format.h"
#include "src/models/model_builder.h"

namespace quantpath::models {
namespace {

struct Qwen3MoeDims {
  GqaAttention attention;
  int64_t layers = 0;
  int64_t vocab = 0;
  int64_t intermediate = 0;  // dense layers (mlp_only_layers, decoder_sparse_step)
  int64_t experts = 0;
  int64_t moe_intermediate = 0;
  int64_t shared_intermediate = 0;
  int64_t sparse_step = 1;
  std::vector<bool> mlp_only;  // per layer
  bool tied = false;
};

// `mlp_only_layers`: layer indices that keep a dense MLP. Absent or null: none.
Result<std::vector<bool>> ReadMlpOnlyLayers(const ConfigReader& c, int64_t layers) {
  std::vector<bool> dense(static_cast<size_t>(layers), false);
  const Json* list = c.object().FindNonNull("mlp_only_layers");
  if (list == nullptr) return dense;
  if (!list->is_array()) {
    return InvalidInput(fmt::format("{}: {} needs a list of layer indices, found {}",
                                    c.Where("mlp_only_layers"), c.architecture(),
                                    list->TypeName()));
  }
  for (size_t i = 0; i < list->items().size(); ++i) {
    const Json& item = list->items()[i];
    if (!item.is_int() || item.int_value() < 0 || item.int_value() >= layers) {
      return InvalidInput(fmt::format(
          "{}/{}: {} needs a layer index from 0 to {}, found {}", c.Where("mlp_only_layers"), i,
          c.architecture(), layers - 1,
          item.is_int() ? std::to_string(item.int_value()) : std::string(item.TypeName())));
    }
    dense[static_cast<size_t>(item.int_value())] = true;
  }
  return dense;
}

Result<Qwen3MoeDims> ReadDims(const ConfigReader& c) {
  Qwen3MoeDims d;
  QP_ASSIGN_OR_RETURN(d.attention, ReadGqaAttention(c));
  // transformers' Qwen3MoeAttention biases q, k, v and o alike.
  QP_ASSIGN_OR_RETURN(d.attention.qkv_bias, c.BoolOr("attention_bias", false));
  d.attention.o_bias = d.attention.qkv_bias;
  QP_ASSIGN_OR_RETURN(d.layers, c.Positive("num_hidden_layers", kMaxLayers));
  QP_ASSIGN_OR_RETURN(d.vocab, c.Positive("vocab_size"));
  QP_ASSIGN_OR_RETURN(d.intermediate, c.Positive("intermediate_size"));
  QP_ASSIGN_OR_RETURN(std::optional<int64_t> experts,
                      c.OptionalPositive("num_experts", kMaxExperts));
  if (!experts) {
    QP_ASSIGN_OR_RETURN(d.experts, c.Positive("num_local_experts", kMaxExperts));
  } else {
    d.experts = *experts;
  }
  QP_ASSIGN_OR_RETURN(d.moe_intermediate, c.Positive("moe_intermediate_size"));
  QP_ASSIGN_OR_RETURN(d.shared_intermediate,
                      c.CountOr("shared_expert_intermediate_size", 0, kMaxDim));
  QP_ASSIGN_OR_RETURN(d.sparse_step, c.PositiveOr("decoder_sparse_step", 1, kMaxLayers));
  QP_ASSIGN_OR_RETURN(d.mlp_only, ReadMlpOnlyLayers(c, d.layers));
  QP_ASSIGN_OR_RETURN(d.tied, c.BoolOr("tie_word_embeddings", false));
  return d;
}

void AddSparseBlock(SiteList& list, const Qwen3MoeDims& d, const std::string& prefix,
                    std::string_view experts_class) {
  const int64_t hidden = d.attention.hidden;
  list.Router(prefix + ".gate", d.experts, hidden);
  if (d.shared_intermediate > 0) {
    list.Router(prefix + ".shared_expert_gate", 1, hidden);
    AddGatedMlp(list, prefix + ".shared_expert", hidden, d.shared_intermediate, false);
  }
  list.Moe(prefix + ".experts", experts_class, d.experts, d.moe_intermediate, hidden);
}

}  // namespace

Status BuildQwen3Moe(const ArchInput& input, ModelSites* out) {
  QP_ASSIGN_OR_RETURN(const Qwen3MoeDims d, ReadDims(input.config));
  const int64_t hidden = d.attention.hidden;
  out->packed_modules_mapping = {{"qkv_proj", {"q_proj", "k_proj", "v_proj"}},
                                 {"gate_up_proj", {"gate_proj", "up_proj"}}};
  SiteList list(out, input);
  AddTokenEmbedding(list, input, "model.embed_tokens", d.vocab, hidden);
  for (int64_t i = 0; i < d.layers; ++i) {
    const std::string layer = fmt::format("model.layers.{}", i);
    AddGqaAttention(list, layer + ".self_attn", d.attention, input.names.attention_class);
    // AddGqaAttention adds the attention module last.
    if (!input.names.qwen3_moe_attention_configured) list.NoEngineCallForLast();
    AddQkNorms(list, layer + ".self_attn", d.attention.head_dim);
    const bool sparse = !d.mlp_only[static_cast<size_t>(i)] && (i + 1) % d.sparse_step == 0;
    if (sparse) {
      AddSparseBlock(list, d, layer + ".mlp", input.names.experts_class);
    } else {
      AddGatedMlp(list, layer + ".mlp", hidden, d.intermediate, false);
    }
    AddDecoderNorms(list, layer, hidden);
  }
  list.Other("model.norm.weight", {hidden});
  AddLmHead(list, input, "lm_head", d.vocab, hidden, d.tied);
  return list.status();
}

}  // namespace quantpath::models
