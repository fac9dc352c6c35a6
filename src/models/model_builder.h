// Internal to src/models: what an architecture file needs to turn config fields into sites.
//
// Goals: typed, bounded reads of config.json fields whose errors name `config.json#/<pointer>` and
// the architecture; a site list that computes parameter counts with overflow checks (the config is
// untrusted); the per-dialect names kept as one table. Non-goals: any particular architecture
// (those live in one file per family) and any quantization format.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/ir.h"
#include "quantpath/models.h"

namespace quantpath::models {

inline constexpr std::string_view kConfigFile = "config.json";

// Bounds on config values. They are far above every published model and keep a hostile config from
// asking for billions of sites; parameter products are overflow-checked separately.
inline constexpr int64_t kMaxDim = int64_t{1} << 24;  // hidden, vocab, intermediate, ranks
inline constexpr int64_t kMaxLayers = 4096;           // num_hidden_layers, MTP layers
inline constexpr int64_t kMaxHeads = int64_t{1} << 16;
inline constexpr int64_t kMaxExperts = int64_t{1} << 16;

// ---------------------------------------------------------------------------------------------
// Names that differ between dialects, as data: an architecture file asks for a name, it never
// branches on the engine.
struct DialectNames {
  Engine engine;
  // DeepSeek MLA: the fused q_a_proj + kv_a_proj_with_mqa site.
  std::string_view mla_fused_qkv_a;
  // Attention sites of an MLA layer, in construction order (SGLang builds two RadixAttention
  // modules, one for the absorbed MQA path and one for the MHA prefill path).
  std::vector<std::string_view> mla_attention;
  std::string_view mla_attention_class;
  // Attention site class of a standard (GQA) layer.
  std::string_view attention_class;
};
const DialectNames& NamesFor(Engine engine);

// ---------------------------------------------------------------------------------------------
// Reads fields of one config object (config.json itself, or its `text_config`). Every error names
// the field as `config.json#/<pointer>` and says which architecture needed it and what it expected.
class ConfigReader {
 public:
  ConfigReader(const Json& object, std::string_view architecture)
      : object_(object), architecture_(architecture) {}

  const Json& object() const { return object_; }
  std::string_view architecture() const { return architecture_; }
  // "config.json#/text_config/hidden_size" for `key`, whether or not it is present.
  std::string Where(std::string_view key) const;

  // A required integer in [1, max].
  Result<int64_t> Positive(std::string_view key, int64_t max = kMaxDim) const;
  // An integer in [1, max]; absent or null gives nullopt (e.g. `q_lora_rank: null`).
  Result<std::optional<int64_t>> OptionalPositive(std::string_view key,
                                                  int64_t max = kMaxDim) const;
  // An integer in [1, max]; absent or null gives `fallback`.
  Result<int64_t> PositiveOr(std::string_view key, int64_t fallback, int64_t max = kMaxDim) const;
  // An integer in [0, max]; absent or null gives `fallback`.
  Result<int64_t> CountOr(std::string_view key, int64_t fallback, int64_t max) const;
  // A boolean; absent or null gives `fallback`.
  Result<bool> BoolOr(std::string_view key, bool fallback) const;
  // A string; absent or null gives nullopt.
  Result<std::optional<std::string>> OptionalString(std::string_view key) const;

 private:
  Result<std::optional<int64_t>> Int(std::string_view key, int64_t min, int64_t max) const;

  const Json& object_;
  std::string architecture_;
};

// ---------------------------------------------------------------------------------------------
// Appends sites to a ModelSites in construction order. Parameter products are checked: the first
// overflow is kept and reported by status(), so architecture code can add sites without testing
// each product.
class SiteList {
 public:
  SiteList(ModelSites* out, std::string_view architecture)
      : out_(out), architecture_(architecture) {}

  // Sites added from now on belong to a multi-token-prediction layer.
  void set_mtp(bool mtp) { mtp_ = mtp; }

  void Embedding(std::string path, int64_t vocab, int64_t hidden);
  // A linear site of logical shape [out_rows, in_cols]; with legs, out_rows must be their sum.
  void Linear(std::string path, std::string_view module_class, int64_t out_rows, int64_t in_cols,
              bool bias, std::vector<Leg> legs = {});
  void Attention(std::string path, std::string_view module_class);
  void Router(std::string path, int64_t experts, int64_t hidden);
  // All routed experts of one layer: shape is one expert's [intermediate, hidden].
  void Moe(std::string path, int64_t experts, int64_t intermediate, int64_t hidden);
  // A tied head is still a site (the engines build ParallelLMHead and tie its weight), but it
  // stores no parameters of its own.
  void LmHead(std::string path, int64_t vocab, int64_t hidden, bool tied);
  // Tensors that are not sites (norms, router biases): the product of `factors`.
  void Other(std::initializer_list<int64_t> factors);

  // Ok, or the first parameter count that did not fit in 64 bits.
  Status status() const;

 private:
  int64_t Product(std::initializer_list<int64_t> factors);
  int64_t Sum(int64_t a, int64_t b);
  LayerSite& Add(std::string path, SiteKind kind, std::string_view module_class);

  ModelSites* out_;
  std::string architecture_;
  bool mtp_ = false;
  bool overflow_ = false;
};

// The gated MLP every family here uses: `<prefix>.gate_up_proj` (legs gate_proj, up_proj) and
// `<prefix>.down_proj`.
void AddGatedMlp(SiteList& list, const std::string& prefix, int64_t hidden, int64_t intermediate,
                 bool bias);

// ---------------------------------------------------------------------------------------------
// One architecture family's builder: reads its fields from `config` and appends its sites.
struct ArchInput {
  const ConfigReader& config;
  const DialectNames& names;
};
using ArchBuilder = Status (*)(const ArchInput& input, ModelSites* out);

Status BuildLlama(const ArchInput& input, ModelSites* out);
Status BuildQwen2(const ArchInput& input, ModelSites* out);
Status BuildQwen3(const ArchInput& input, ModelSites* out);
Status BuildDeepseekV3(const ArchInput& input, ModelSites* out);

}  // namespace quantpath::models
