// Shared pieces of the architecture builders: the per-dialect name table, bounded config reads
// with pointer-naming errors, and the overflow-checked site list.
#include "src/models/model_builder.h"

#include <array>
#include <utility>

#include "fmt/format.h"

namespace quantpath::models {
namespace {

// The name table. vLLM names the fused MLA projection `fused_qkv_a_proj` and builds one MLA
// attention module at `<self_attn>.attn` (MLAAttention); SGLang names it
// `fused_qkv_a_proj_with_mqa` and builds RadixAttention `attn_mqa` and `attn_mha`. The native
// dialect uses vLLM's execution names (DESIGN.md, "Dialects").
const std::array<DialectNames, 3>& NameTable() {
  static const std::array<DialectNames, 3> kTable = {{
      {Engine::kNative, "fused_qkv_a_proj", {"attn"}, "MLAAttention", "Attention"},
      {Engine::kVllm, "fused_qkv_a_proj", {"attn"}, "MLAAttention", "Attention"},
      {Engine::kSglang,
       "fused_qkv_a_proj_with_mqa",
       {"attn_mqa", "attn_mha"},
       "RadixAttention",
       "RadixAttention"},
  }};
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

const DialectNames& NamesFor(Engine engine) {
  for (const DialectNames& names : NameTable()) {
    if (names.engine == engine) return names;
  }
  return NameTable()[0];
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

// ---------------------------------------------------------------------------------------------
// SiteList

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
  site.kind = kind;
  site.module_class = std::string(module_class);
  site.mtp = mtp_;
  return site;
}

void SiteList::Embedding(std::string path, int64_t vocab, int64_t hidden) {
  LayerSite& site = Add(std::move(path), SiteKind::kEmbedding, "VocabParallelEmbedding");
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

void SiteList::Router(std::string path, int64_t experts, int64_t hidden) {
  // The engines build the router without a quantization config (ReplicatedLinear).
  LayerSite& site = Add(std::move(path), SiteKind::kRouter, "ReplicatedLinear");
  site.shape = {experts, hidden};
  site.params = Product({experts, hidden});
}

void SiteList::Moe(std::string path, int64_t experts, int64_t intermediate, int64_t hidden) {
  LayerSite& site = Add(std::move(path), SiteKind::kMoe, "FusedMoE");
  site.shape = {intermediate, hidden};
  site.experts = experts;
  // Legs of one expert: gate and up produce `intermediate` rows, down produces `hidden`.
  site.legs = {{"gate_proj", intermediate}, {"up_proj", intermediate}, {"down_proj", hidden}};
  site.params = Product({experts, 3, hidden, intermediate});
}

void SiteList::LmHead(std::string path, int64_t vocab, int64_t hidden, bool tied) {
  LayerSite& site = Add(std::move(path), SiteKind::kLmHead, "ParallelLMHead");
  site.shape = {vocab, hidden};
  site.params = tied ? 0 : Product({vocab, hidden});
}

void SiteList::Other(std::initializer_list<int64_t> factors) {
  out_->other_params = Sum(out_->other_params, Product(factors));
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

void AddGatedMlp(SiteList& list, const std::string& prefix, int64_t hidden, int64_t intermediate,
                 bool bias) {
  list.Linear(prefix + ".gate_up_proj", "MergedColumnParallelLinear", 2 * intermediate, hidden,
              bias, {{"gate_proj", intermediate}, {"up_proj", intermediate}});
  list.Linear(prefix + ".down_proj", "RowParallelLinear", hidden, intermediate, bias);
}

}  // namespace quantpath::models
