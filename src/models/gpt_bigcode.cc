// GPTBigCodeForCausalLM (StarCoder, SantaCoder, WizardCoder-15B): GPT-2-style blocks with
// multi-query attention and a learned position table.
//
// Follows vLLM 0.23's gpt_bigcode.py, the last release with a native implementation (later ones
// serve it through the Transformers backend, which keeps Hugging Face's unfused modules). Sites in
// construction order: `transformer.wte`, `transformer.wpe` (a plain nn.Embedding); per block
// `transformer.h.N.attn.c_attn` (q plus one shared k/v head with `multi_query`, one module in the
// checkpoint too), `attn.c_proj`, the attention module, `mlp.c_fc`, `mlp.c_proj`, all biased; then
// `lm_head`, which the released checkpoints tie to wte (the config omits tie_word_embeddings, and
// transformers' default is true).
//
// Engines: vLLM 0.33 serves it through its Transformers backend (registry.py), which wraps
// transformers' GPTBigCodeModel as `model`: `model.wte`, `model.h.N.attn.c_attn` (its packed-QKV
// fuser builds a QKVParallelLinear under the same name), `attn.c_proj`, `mlp.c_fc`, `mlp.c_proj`,
// then every attention module `model.h.N.attn.attn`, then `lm_head` (a ParallelLMHead tied to
// wte). The position table stays a plain nn.Embedding there, built without a quantization config.
// SGLang's gpt_bigcode.py keeps the checkpoint's `transformer.` names, builds wte without a
// quantization config and reuses it as the head. Every site's checkpoint_path is the checkpoint's
// `transformer.` name.
//
// The config uses GPT-2 field names: n_embd, n_layer, n_head, n_inner, n_positions.
// Non-goals: the activation function, attention scaling flags.
#include <string>

#include "fmt/format.h"
#include "src/models/model_builder.h"

namespace quantpath::models {

Status BuildGptBigCode(const ArchInput& input, ModelSites* out) {
  const ConfigReader& c = input.config;
  QP_ASSIGN_OR_RETURN(const int64_t hidden, c.Positive("n_embd"));
  QP_ASSIGN_OR_RETURN(const int64_t layers, c.Positive("n_layer", kMaxLayers));
  QP_ASSIGN_OR_RETURN(const int64_t heads, c.Positive("n_head", kMaxHeads));
  QP_ASSIGN_OR_RETURN(const int64_t positions, c.Positive("n_positions"));
  QP_ASSIGN_OR_RETURN(const int64_t vocab, c.Positive("vocab_size"));
  // transformers' GPTBigCodeConfig defaults: multi-query attention, n_inner = 4 × n_embd, and the
  // head tied to the token embedding.
  QP_ASSIGN_OR_RETURN(const bool multi_query, c.BoolOr("multi_query", true));
  QP_ASSIGN_OR_RETURN(const int64_t inner, c.PositiveOr("n_inner", 4 * hidden));
  QP_ASSIGN_OR_RETURN(const bool tied, c.BoolOr("tie_word_embeddings", true));
  if (hidden % heads != 0) {
    return InvalidInput(fmt::format("{}: {} needs n_head to divide n_embd ({}), found {}",
                                    c.Where("n_head"), c.architecture(), hidden, heads));
  }
  const int64_t head_dim = hidden / heads;
  const int64_t kv_rows = (multi_query ? 1 : heads) * head_dim;

  out->packed_modules_mapping = {{"c_attn", {"c_attn"}}};
  SiteList list(out, input);
  AddTokenEmbedding(list, input, "transformer.wte", vocab, hidden);
  list.Embedding("transformer.wpe", positions, hidden, "Embedding");
  for (int64_t i = 0; i < layers; ++i) {
    const std::string block = fmt::format("transformer.h.{}", i);
    AddLayerNorm(list, block + ".ln_1", hidden);
    list.Linear(block + ".attn.c_attn", "QKVParallelLinear", hidden + 2 * kv_rows, hidden, true);
    list.Linear(block + ".attn.c_proj", "RowParallelLinear", hidden, hidden, true);
    list.Attention(block + ".attn.attn", input.names.attention_class);
    AddLayerNorm(list, block + ".ln_2", hidden);
    // The Transformers backend replicates what the model's tensor-parallel plan does not name.
    const bool replicated = input.names.transformers_backend;
    list.Linear(block + ".mlp.c_fc", replicated ? "ReplicatedLinear" : "ColumnParallelLinear",
                inner, hidden, true);
    list.Linear(block + ".mlp.c_proj", replicated ? "ReplicatedLinear" : "RowParallelLinear",
                hidden, inner, true);
  }
  AddLayerNorm(list, "transformer.ln_f", hidden);
  if (input.names.transformers_backend) {
    list.MoveAttentionLast(0);
    list.RenamePrefix(0, "transformer.", "model.");
  }
  AddLmHead(list, input, "lm_head", vocab, hidden, tied);
  return list.status();
}

}  // namespace quantpath::models
