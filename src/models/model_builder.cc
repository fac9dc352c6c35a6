// Shared pieces of the architecture builders: the per-dialect name table, bounded config reads
// with pointer-naming errors, the overflow-checked site list, and the blocks (gated MLP, GQA
// attention, DeepSeek-style MoE and MTP layers) that several families build the same way.
#include "src/models/model_builder.h"

#include <algorithm>
#include <array>
#include <utility>

#include "fmt/format.h"

namespace quantpath::models {
namespace {

// The name table, one row per dialect. vLLM names the fused MLA projection `fused_qkv_a_proj`
// and builds one MLA attention module at `<self_attn>.attn` (MLAAttention); SGLang names it
// `fused_qkv_a_proj_with_mqa` and builds RadixAttention `attn_mqa` and `attn_mha`. The native
// dialect uses vLLM's execution names (DESIGN.md, "Dialects") for fused sites and their legs over
// the checkpoint's module paths and lists every site. The helper rows share their engine's
// layer lists (the same model code), except that vLLM 0.33 serves GPTBigCode and Phi through its
// Transformers backend where the helper recordings' code still had their own model files, and that
// only vLLM 0.33's Qwen3.5 prefixes (with the matching name mapper) are reproduced.
const std::array<DialectRow<DialectNames>, 5>& NameTable() {
  static const std::array<DialectRow<DialectNames>, 5> kTable = [] {
    const DialectNames native = {.mla_fused_qkv_a = "fused_qkv_a_proj",
                                 .mla_attention = {"attn"},
                                 .mla_attention_class = "MLAAttention",
                                 .attention_class = "Attention",
                                 .gpt_oss_attention = "self_attn"};
    DialectNames vllm = native;
    vllm.gpt_oss_attention = "attn";
    vllm.lists_unconfigured = false;
    vllm.mtp_needs_speculative = true;
    vllm.mtp_names = MtpNames::kVllm;
    vllm.unnamed_llama_embedding = true;
    vllm.embedding_without_quant_config = {"GptOssForCausalLM", "Glm4MoeForCausalLM",
                                           "Qwen3_5ForConditionalGeneration",
                                           "Qwen3_5MoeForConditionalGeneration"};
    DialectNames vllm_033 = vllm;
    vllm_033.transformers_backend = true;
    // vLLM 0.33's Qwen3_5ForConditionalGeneration prefixes, which its hf_to_vllm_mapper row in
    // name_mappers.cc maps config lists onto; the recorded dialect has neither.
    vllm_033.qwen3_5_language = "language_model.model";
    vllm_033.qwen3_5_lm_head = "language_model.lm_head";
    vllm_033.qwen3_5_visual = "visual";
    vllm_033.qwen3_5_mtp_head = true;
    vllm_033.experts_class = "RoutedExperts";
    DialectNames sglang = {
        .mla_fused_qkv_a = "fused_qkv_a_proj_with_mqa",
        .mla_fused_qkv_a_class = "ReplicatedLinear",
        .mla_attention = {"attn_mqa", "attn_mha"},
        .mla_attention_class = "RadixAttention",
        .attention_class = "RadixAttention",
        .gpt_oss_attention = "self_attn",
        .gpt_oss_attention_configured = false,
        .lists_unconfigured = false,
        .mtp_needs_speculative = true,
        .mtp_names = MtpNames::kSglang,
        .unnamed_phi_layers = true,
        .tied_head_reuses_embedding = true,
        .fuses_shared_experts = true,
        .shared_experts_after_routed = true,
        .glm4_moe_attention_configured = false,
        .qwen3_moe_attention_configured = false,
        .qwen3_5_language = "model.language_model",
        .qwen3_5_lm_head = "lm_head",
        .qwen3_5_visual = "visual",
        .qwen3_5_visual_qkv = "qkv_proj",
        .qwen3_5_visual_configured = false,
        .embedding_without_quant_config = {
            "DeepseekV3ForCausalLM", "Glm4MoeForCausalLM", "GptOssForCausalLM",
            "GPTBigCodeForCausalLM", "PhiForCausalLM", "Qwen3_5ForConditionalGeneration",
            "Qwen3_5MoeForConditionalGeneration", "Qwen3MoeForCausalLM"}};
    DialectNames sglang_0523 = sglang;
    return std::array<DialectRow<DialectNames>, 5>{{{DialectId::kNative, native},
                                                    {DialectId::kVllmHelpers, vllm},
                                                    {DialectId::kSglangHelpers, sglang},
                                                    {DialectId::kVllm033, vllm_033},
                                                    {DialectId::kSglang0523, sglang_0523}}};
  }();
  return kTable;
}

// "string \"4096\"", "number 0.5", "integer 0", "null", … for error messages.
std::string Describe(const Json& value) {
  switch (value.type()) {
    case Json::Type::kString:
      return fmt::format("string {}", JsonQuote(value.string_value()));
    case Json::Type::kInt:
      return fmt::format("integer {}", value.int_value());
    case Json::Type::kDouble:
      return fmt::format("number {}", value.number_value());
    case Json::Type::kBool:
      return value.bool_value() ? "boolean true" : "boolean false";
    default:
      return std::string(value.TypeName());
  }
}

}  // namespace

const DialectNames& NamesFor(const Dialect& dialect, Platform platform) {
  // SGLang fuses the shared experts into the routed ones on CUDA only (recorded on cpu and cpu-amx:
  // releases/sglang-0.5.23/platforms/*/models/sglang-glm-4-5-fp8.json).
  static const DialectNames kSglang0523OffCuda = [] {
    DialectNames names = RowFor(DialectAt(DialectId::kSglang0523), NameTable());
    names.fuses_shared_experts = false;
    return names;
  }();
  if (dialect.id == DialectId::kSglang0523 && platform != Platform::kCuda) {
    return kSglang0523OffCuda;
  }
  return RowFor(dialect, NameTable());
}

// ---------------------------------------------------------------------------------------------
// ConfigReader

std::string ConfigReader::Where(std::string_view key) const {
  return fmt::format("{}#{}", kConfigFile, JsonPointerChild(object_.pointer(), key));
}

Result<std::optional<int64_t>> ConfigReader::Int(std::string_view key, int64_t min,
                                                 int64_t max) const {
  const Json* v = object_.FindNonNull(key);
  if (v == nullptr) return std::optional<int64_t>();
  if (!v->is_int() || v->int_value() < min || v->int_value() > max) {
    return InvalidInput(fmt::format("{}: {} needs \"{}\" as an integer from {} to {}, found {}",
                                    Where(key), architecture_, key, min, max, Describe(*v)));
  }
  return std::optional<int64_t>(v->int_value());
}

Result<int64_t> ConfigReader::Positive(std::string_view key, int64_t max) const {
  QP_ASSIGN_OR_RETURN(std::optional<int64_t> v, Int(key, 1, max));
  if (!v) {
    return InvalidInput(fmt::format("{}: {} needs \"{}\" (an integer from 1 to {}); it is missing",
                                    Where(key), architecture_, key, max));
  }
  return *v;
}

Result<std::optional<int64_t>> ConfigReader::OptionalPositive(std::string_view key,
                                                              int64_t max) const {
  return Int(key, 1, max);
}

Result<int64_t> ConfigReader::PositiveOr(std::string_view key, int64_t fallback,
                                         int64_t max) const {
  QP_ASSIGN_OR_RETURN(std::optional<int64_t> v, Int(key, 1, max));
  return v.value_or(fallback);
}

Result<int64_t> ConfigReader::CountOr(std::string_view key, int64_t fallback, int64_t max) const {
  QP_ASSIGN_OR_RETURN(std::optional<int64_t> v, Int(key, 0, max));
  return v.value_or(fallback);
}

Result<bool> ConfigReader::BoolOr(std::string_view key, bool fallback) const {
  const Json* v = object_.FindNonNull(key);
  if (v == nullptr) return fallback;
  if (!v->is_bool()) {
    return InvalidInput(fmt::format("{}: {} needs \"{}\" as a boolean, found {}", Where(key),
                                    architecture_, key, Describe(*v)));
  }
  return v->bool_value();
}

Result<std::optional<std::string>> ConfigReader::OptionalString(std::string_view key) const {
  const Json* v = object_.FindNonNull(key);
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string()) {
    return InvalidInput(fmt::format("{}: {} needs \"{}\" as a string, found {}", Where(key),
                                    architecture_, key, Describe(*v)));
  }
  return std::optional<std::string>(v->string_value());
}

Result<double> ConfigReader::PositiveNumber(std::string_view key, double max) const {
  const Json* v = object_.FindNonNull(key);
  if (v == nullptr) {
    return InvalidInput(fmt::format("{}: {} needs \"{}\" (a number above 0); it is missing",
                                    Where(key), architecture_, key));
  }
  if (!v->is_number() || !(v->number_value() > 0) || v->number_value() > max) {
    return InvalidInput(
        fmt::format("{}: {} needs \"{}\" as a number above 0 and at most {}, found {}", Where(key),
                    architecture_, key, max, Describe(*v)));
  }
  return v->number_value();
}

Result<double> ConfigReader::PositiveNumberOr(std::string_view key, double fallback,
                                              double max) const {
  if (object_.FindNonNull(key) == nullptr) return fallback;
  return PositiveNumber(key, max);
}

Result<std::optional<std::vector<std::string>>> ConfigReader::OptionalStringList(
    std::string_view key) const {
  const Json* v = object_.FindNonNull(key);
  if (v == nullptr) return std::optional<std::vector<std::string>>();
  if (!v->is_array()) {
    return InvalidInput(fmt::format("{}: {} needs \"{}\" as a list of strings, found {}",
                                    Where(key), architecture_, key, Describe(*v)));
  }
  std::vector<std::string> items;
  for (const Json& item : v->items()) {
    if (!item.is_string()) {
      return InvalidInput(fmt::format("{}#{}: {} needs \"{}\" as a list of strings, found {}",
                                      kConfigFile, item.pointer(), architecture_, key,
                                      Describe(item)));
    }
    items.push_back(item.string_value());
  }
  return std::optional<std::vector<std::string>>(std::move(items));
}

Result<int64_t> ConfigReader::ListLength(std::string_view key, int64_t max) const {
  const Json* v = object_.FindNonNull(key);
  if (v == nullptr) return int64_t{0};
  if (!v->is_array() || v->items().size() > static_cast<size_t>(max)) {
    return InvalidInput(fmt::format("{}: {} needs \"{}\" as a list of at most {} items, found {}",
                                    Where(key), architecture_, key, max, Describe(*v)));
  }
  return static_cast<int64_t>(v->items().size());
}

Result<const Json*> ConfigReader::OptionalObject(std::string_view key) const {
  const Json* v = object_.FindNonNull(key);
  if (v == nullptr || v->is_object()) return v;
  return InvalidInput(fmt::format("{}: {} needs \"{}\" as an object, found {}", Where(key),
                                  architecture_, key, Describe(*v)));
}

// ---------------------------------------------------------------------------------------------
// SiteList

SiteList::SiteList(ModelSites* out, const ArchInput& input)
    : out_(out), architecture_(input.config.architecture()), builds_mtp_(input.builds_mtp) {}

void SiteList::BeginMtp(std::string module) {
  mtp_ = true;
  if (!builds_mtp_) out_->skipped_modules.push_back(std::move(module));
}

int64_t SiteList::Product(std::initializer_list<int64_t> factors) {
  int64_t p = 1;
  for (int64_t f : factors) {
    if (__builtin_mul_overflow(p, f, &p)) {
      overflow_ = true;
      return 0;
    }
  }
  return p;
}

int64_t SiteList::Sum(int64_t a, int64_t b) {
  int64_t s = 0;
  if (__builtin_add_overflow(a, b, &s)) {
    overflow_ = true;
    return 0;
  }
  return s;
}

LayerSite& SiteList::Add(std::string path, SiteKind kind, std::string_view module_class) {
  LayerSite& site = out_->sites.emplace_back();
  site.path = std::move(path);
  site.checkpoint_path = site.path;
  site.kind = kind;
  site.module_class = std::string(module_class);
  site.tp_style = TpStyleOf(module_class);
  site.mtp = mtp_;
  site.quant_config_applies = !without_quant_config_;
  // Routers and plain nn.Embedding position tables are built without a quantization config in
  // both engines.
  site.engine_quant_call = !without_quant_config_ && !no_engine_call_ &&
                           kind != SiteKind::kRouter && module_class != "Embedding";
  return site;
}

void SiteList::Embedding(std::string path, int64_t vocab, int64_t hidden,
                         std::string_view module_class) {
  LayerSite& site = Add(std::move(path), SiteKind::kEmbedding, module_class);
  site.shape = {vocab, hidden};
  site.params = Product({vocab, hidden});
}

void SiteList::Linear(std::string path, std::string_view module_class, int64_t out_rows,
                      int64_t in_cols, bool bias, std::vector<Leg> legs) {
  LayerSite& site = Add(std::move(path), SiteKind::kLinear, module_class);
  site.shape = {out_rows, in_cols};
  site.legs = std::move(legs);
  site.bias = bias;
  site.params = Sum(Product({out_rows, in_cols}), bias ? out_rows : 0);
}

void SiteList::Attention(std::string path, std::string_view module_class) {
  // Attention holds no weights; the site exists for the KV-cache scheme.
  Add(std::move(path), SiteKind::kAttention, module_class);
}

void SiteList::Router(std::string path, int64_t experts, int64_t hidden, bool bias) {
  // The engines build the router without a quantization config (ReplicatedLinear).
  LayerSite& site = Add(std::move(path), SiteKind::kRouter, "ReplicatedLinear");
  site.shape = {experts, hidden};
  site.bias = bias;
  site.params = Sum(Product({experts, hidden}), bias ? experts : 0);
}

void SiteList::Moe(std::string path, std::string_view module_class, int64_t experts,
                   int64_t intermediate, int64_t hidden, const ExpertLayout& layout) {
  LayerSite& site = Add(std::move(path), SiteKind::kMoe, module_class);
  site.shape = {intermediate, hidden};
  site.experts = experts;
  // Legs of one expert: gate and up produce `intermediate` rows each, down produces `hidden`.
  if (layout.fused_gate_up) {
    site.legs = {{"gate_up_proj", 2 * intermediate}, {"down_proj", hidden}};
  } else {
    site.legs = {{"gate_proj", intermediate}, {"up_proj", intermediate}, {"down_proj", hidden}};
  }
  site.stacked_experts = layout.fused_gate_up;
  site.expert_activation = layout.activation;
  site.bias = layout.bias;
  const int64_t bias_per_expert = layout.bias ? 2 * intermediate + hidden : 0;
  site.params = Product({experts, Sum(Product({3, hidden, intermediate}), bias_per_expert)});
}

void SiteList::LmHead(std::string path, int64_t vocab, int64_t hidden, bool tied, bool bias) {
  LayerSite& site = Add(std::move(path), SiteKind::kLmHead, "ParallelLMHead");
  site.shape = {vocab, hidden};
  site.bias = bias;
  site.params = tied ? 0 : Sum(Product({vocab, hidden}), bias ? vocab : 0);
}

void SiteList::Other(std::string name, std::initializer_list<int64_t> shape) {
  out_->other_params = Sum(out_->other_params, Product(shape));
  // A skipped MTP layer's tensors belong to its skipped module, which load does not read.
  if (mtp_ && !builds_mtp_) return;
  out_->other_tensors.push_back({std::move(name), std::vector<int64_t>(shape)});
}

void SiteList::RenameLast(std::string path) {
  if (!out_->sites.empty()) out_->sites.back().path = std::move(path);
}

void SiteList::NoEngineCallForLast() {
  if (!out_->sites.empty()) out_->sites.back().engine_quant_call = false;
}

void SiteList::RenamePrefix(size_t first, std::string_view from, std::string_view to) {
  for (size_t i = first; i < out_->sites.size(); ++i) {
    std::string& path = out_->sites[i].path;
    if (path.starts_with(from)) path = std::string(to) + path.substr(from.size());
  }
}

void SiteList::MoveAttentionLast(size_t first) {
  if (first >= out_->sites.size()) return;
  std::stable_partition(out_->sites.begin() + static_cast<std::ptrdiff_t>(first), out_->sites.end(),
                        [](const LayerSite& site) { return site.kind != SiteKind::kAttention; });
}

Status SiteList::status() const {
  // Each site's count was checked as it was added; the model's total must fit too.
  bool overflow = overflow_;
  int64_t total = out_->other_params;
  for (const LayerSite& site : out_->sites) {
    overflow = overflow || __builtin_add_overflow(total, site.params, &total);
  }
  if (!overflow) return Status();
  return InvalidInput(fmt::format(
      "{}: the parameter counts of this {} config do not fit in 64 bits; the sizes in it are "
      "not those of a real model",
      kConfigFile, architecture_));
}

// ---------------------------------------------------------------------------------------------
// Shared building blocks

void AddTokenEmbedding(SiteList& list, const ArchInput& input, std::string path, int64_t vocab,
                       int64_t hidden) {
  const std::vector<std::string_view>& without = input.names.embedding_without_quant_config;
  const bool no_call =
      std::find(without.begin(), without.end(), input.config.architecture()) != without.end();
  list.set_no_engine_call(no_call);
  list.Embedding(std::move(path), vocab, hidden);
  list.set_no_engine_call(false);
}

Result<std::optional<std::string>> ReadQuantMethod(const ArchInput& input) {
  QP_ASSIGN_OR_RETURN(const Json* quant, input.root.OptionalObject("quantization_config"));
  if (quant == nullptr) return std::optional<std::string>();
  return ConfigReader(*quant, input.root.architecture()).OptionalString("quant_method");
}

void AddLmHead(SiteList& list, const ArchInput& input, std::string path, int64_t vocab,
               int64_t hidden, bool tied, bool bias) {
  list.set_no_engine_call(tied && input.names.tied_head_reuses_embedding);
  list.LmHead(std::move(path), vocab, hidden, tied, bias);
  list.set_no_engine_call(false);
}

void AddDecoderNorms(SiteList& list, const std::string& layer, int64_t hidden) {
  list.Other(layer + ".input_layernorm.weight", {hidden});
  list.Other(layer + ".post_attention_layernorm.weight", {hidden});
}

void AddLayerNorm(SiteList& list, const std::string& module, int64_t width) {
  list.Other(module + ".weight", {width});
  list.Other(module + ".bias", {width});
}

void AddQkNorms(SiteList& list, const std::string& attention, int64_t head_dim) {
  list.Other(attention + ".q_norm.weight", {head_dim});
  list.Other(attention + ".k_norm.weight", {head_dim});
}

void AddGatedMlp(SiteList& list, const std::string& prefix, int64_t hidden, int64_t intermediate,
                 bool bias) {
  list.Linear(prefix + ".gate_up_proj", "MergedColumnParallelLinear", 2 * intermediate, hidden,
              bias, {{"gate_proj", intermediate}, {"up_proj", intermediate}});
  list.Linear(prefix + ".down_proj", "RowParallelLinear", hidden, intermediate, bias);
}

Result<GqaAttention> ReadGqaAttention(const ConfigReader& c) {
  GqaAttention a;
  QP_ASSIGN_OR_RETURN(a.hidden, c.Positive("hidden_size"));
  QP_ASSIGN_OR_RETURN(a.heads, c.Positive("num_attention_heads", kMaxHeads));
  QP_ASSIGN_OR_RETURN(a.kv_heads, c.PositiveOr("num_key_value_heads", a.heads, kMaxHeads));
  QP_ASSIGN_OR_RETURN(std::optional<int64_t> head_dim, c.OptionalPositive("head_dim"));
  // GQA shares each KV head among heads / kv_heads query heads; engines reject anything else.
  if (a.heads % a.kv_heads != 0) {
    return InvalidInput(
        fmt::format("{}: {} needs num_key_value_heads to divide num_attention_heads ({}), found {}",
                    c.Where("num_key_value_heads"), c.architecture(), a.heads, a.kv_heads));
  }
  // Without an explicit head_dim the engines use hidden_size / num_attention_heads.
  if (!head_dim && a.hidden % a.heads != 0) {
    return InvalidInput(fmt::format(
        "{}: {} has no head_dim, so num_attention_heads must divide hidden_size ({}), found {}",
        c.Where("num_attention_heads"), c.architecture(), a.hidden, a.heads));
  }
  a.head_dim = head_dim.value_or(a.hidden / a.heads);
  return a;
}

void AddGqaAttention(SiteList& list, const std::string& prefix, const GqaAttention& a,
                     std::string_view attention_class) {
  const int64_t q_rows = (a.output_gate ? 2 : 1) * a.heads * a.head_dim;
  const int64_t kv_rows = a.kv_heads * a.head_dim;
  list.Linear(prefix + ".qkv_proj", "QKVParallelLinear", q_rows + 2 * kv_rows, a.hidden, a.qkv_bias,
              {{"q_proj", q_rows}, {"k_proj", kv_rows}, {"v_proj", kv_rows}});
  list.Linear(fmt::format("{}.{}", prefix, a.o_name), "RowParallelLinear", a.hidden,
              a.heads * a.head_dim, a.o_bias);
  list.Attention(prefix + ".attn", attention_class);
}

void AddRoutedMoe(SiteList& list, const DialectNames& names, const std::string& prefix,
                  const RoutedMoe& moe) {
  list.Router(prefix + ".gate", moe.experts, moe.hidden);
  if (moe.score_correction_bias)
    list.Other(prefix + ".gate.e_score_correction_bias", {moe.experts});
  const bool shared = moe.shared_intermediate > 0 && moe.fused_shared_experts == 0;
  const auto add_shared = [&] {
    AddGatedMlp(list, prefix + ".shared_experts", moe.hidden, moe.shared_intermediate, false);
  };
  if (shared && !names.shared_experts_after_routed) add_shared();
  list.Moe(prefix + ".experts", names.experts_class, moe.experts + moe.fused_shared_experts,
           moe.moe_intermediate, moe.hidden);
  if (shared && names.shared_experts_after_routed) add_shared();
}

void AddMtpLayer(SiteList& list, const DialectNames& names, const std::string& layer, int64_t vocab,
                 int64_t hidden, const std::function<void()>& add_decoder_layer) {
  list.BeginMtp(layer);
  // Both engines build the MTP layer's embedding without a quantization config.
  list.set_no_engine_call(true);
  list.Embedding(layer + ".embed_tokens", vocab, hidden);
  list.set_no_engine_call(false);
  list.Other(layer + ".enorm.weight", {hidden});
  list.Other(layer + ".hnorm.weight", {hidden});
  // A plain nn.Linear in both engines, built without the quantization config (DeepSeek's fp8
  // checkpoints store it in bf16, without weight_scale_inv).
  list.set_without_quant_config(true);
  list.Linear(layer + ".eh_proj", "Linear", hidden, 2 * hidden, false);
  list.set_without_quant_config(false);
  const auto add_head = [&] {
    list.Other(layer + ".shared_head.norm.weight", {hidden});
    list.LmHead(layer + ".shared_head.head", vocab, hidden, /*tied=*/false);
  };
  switch (names.mtp_names) {
    case MtpNames::kCheckpoint:
      add_decoder_layer();
      add_head();
      break;
    case MtpNames::kVllm:
      // SharedHead is built before the decoder block, with the layer's own prefix.
      add_head();
      list.RenameLast(layer + ".head");
      add_decoder_layer();
      break;
    case MtpNames::kSglang: {
      // The draft model's decoder block is `model.decoder` (its hf_to_sglang_mapper maps
      // model.layers.<L> there); its head is built after it, as `model.shared_head.head`.
      const size_t first = list.size();
      add_decoder_layer();
      list.RenamePrefix(first, layer + ".", "model.decoder.");
      add_head();
      list.RenameLast("model.shared_head.head");
      break;
    }
  }
  list.EndMtp();
}

}  // namespace quantpath::models
