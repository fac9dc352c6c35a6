// The ModelOpt importer: NVIDIA TensorRT Model Optimizer exports, as hf_quant_config.json
// ({"producer", "quantization": {...}}) or embedded in config.json ({"quant_method": "modelopt",
// "quant_algo", ...}).
//
// Goals: FP8, FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO, NVFP4, W4A8_AWQ and MIXED_PRECISION
// (quantized_layers), exclude_modules / ignore, kv_cache_quant_algo, each read and matched as the
// dialect does (modelopt_config.cc, modelopt_rules.cc). Non-goals: the engines' later registries
// (modelopt_mixed, W4A16_NVFP4, MXFP8 in current releases), tensor layouts.
// Documentation followed: vLLM ModelOptQuantConfigBase.get_quant_method @c9a59901; SGLang
// ModelOptQuantConfig._get_quant_method (newest read); the recorded cases in
// tests/data/oracle/cases/{vllm,sglang}-modelopt.json.
#include <utility>

#include "fmt/format.h"
#include "quantpath/importers.h"
#include "src/importers/modelopt.h"

namespace quantpath {
namespace {

using modelopt::Description;

constexpr std::string_view kKvMethod = "ModelOptFp8KVCacheMethod";

// How the dialect decides attention sites.
void DecideAttention(const Description& d, const Dialect& dialect, QuantPlan* plan) {
  plan->kv_cache = d.kv;
  std::string scheme = d.kv ? d.kv->CanonicalName() : "no KV scheme";
  switch (dialect.engine) {
    case Engine::kNative:
      break;  // kv_cache_quant_algo alone decides
    case Engine::kVllm:
      plan->attention = Action{
          ActionKind::kQuantize, d.kv,
          fmt::format("vLLM attaches {} to every attention layer, whatever kv_cache_quant_algo "
                      "says ({}; the cache is fp8 only with --kv-cache-dtype fp8 or a kv algo)",
                      kKvMethod, scheme),
          std::string(kKvMethod)};
      break;
    case Engine::kSglang:
      plan->attention = d.kv_method
                            ? Action{ActionKind::kQuantize, d.kv,
                                     fmt::format("kv cache algorithm set: SGLang attaches {} ({})",
                                                 kKvMethod, scheme),
                                     std::string(kKvMethod)}
                            : Action{ActionKind::kSkip, std::nullopt,
                                     "no kv cache algorithm: SGLang attaches no KV-cache method",
                                     "get_quant_method returned None"};
      break;
  }
}

// The engine's method classes for linear layers and experts; native names the algorithm.
std::pair<std::string_view, std::string_view> Methods(const modelopt::AlgoInfo& info,
                                                      const Dialect& dialect) {
  switch (dialect.engine) {
    case Engine::kVllm:
      return {info.vllm_linear, info.vllm_moe};
    case Engine::kSglang:
      return {info.sglang_linear, info.sglang_moe};
    case Engine::kNative:
      break;
  }
  return {info.name, info.name};
}

class ModelOptImporterImpl : public Importer {
 public:
  std::string_view name() const override { return "modelopt"; }
  std::vector<std::string_view> aliases() const override {
    return {"modelopt_fp8", "modelopt_fp4", "modelopt_mixed"};
  }

  bool Detect(const ConfigSources& sources) const override {
    return modelopt::FindDescription(sources).has_value();
  }

  Result<QuantPlan> BuildPlan(const ConfigSources& sources, const Dialect& dialect) const override {
    std::optional<Located> located = modelopt::FindDescription(sources);
    if (!located) {
      return InvalidInput(fmt::format(
          "the model's files ({}) hold no ModelOpt description (hf_quant_config.json, or a "
          "quantization_config with quant_method \"modelopt\")",
          Join(sources.FileNames(), ", ")));
    }
    QP_ASSIGN_OR_RETURN(Description d, modelopt::ReadDescription(sources, *located, dialect));
    QuantPlan plan;
    plan.quant_method = "modelopt";
    plan.dialect = dialect;
    plan.sources.push_back(d.where);
    plan.notes = d.notes;
    QP_ASSIGN_OR_RETURN(plan.groups, modelopt::ExclusionGroups(d, dialect));
    plan.linear = KindPolicy::kRules;
    plan.moe = KindPolicy::kRules;
    // Router gates are built without a quantization config; the engines return no method for
    // ParallelLMHead, and ModelOpt's default configuration leaves lm_head unquantized.
    plan.router = KindPolicy::kUnquantized;
    plan.embedding = KindPolicy::kUnquantized;
    plan.lm_head = KindPolicy::kUnquantized;
    if (d.mixed) {
      QP_ASSIGN_OR_RETURN(RuleGroup table, modelopt::QuantizedLayersGroup(d));
      plan.groups.push_back(std::move(table));
      plan.default_action = {ActionKind::kSkip, std::nullopt,
                             "MIXED_PRECISION: not listed in quantized_layers, so unquantized",
                             "not listed"};
      plan.lm_head = KindPolicy::kRules;  // quantized only when the table names it
    } else {
      QP_ASSIGN_OR_RETURN(QuantScheme scheme,
                          modelopt::AlgoScheme(*d.info, d.group_size, d.where.ToString()));
      auto [linear, moe] = Methods(*d.info, dialect);
      std::string message = fmt::format("quant_algo {} applies to every layer", d.algo);
      plan.default_action = {ActionKind::kQuantize, scheme, message, std::string(linear)};
      if (moe != linear) {
        // Experts get their own method class; a catch-all rule for MoE sites carries it.
        RuleGroup experts{"experts method", {}, FusedPolicy::kFusedNameOnly, ""};
        QP_ASSIGN_OR_RETURN(
            Rule rule,
            MakeRule(MatchKind::kGlob, "*", RegexFlavor::kPythonRe, KindBit(SiteKind::kMoe),
                     {ActionKind::kQuantize, scheme, message, std::string(moe)}, d.where));
        experts.rules.push_back(std::move(rule));
        plan.groups.push_back(std::move(experts));
      }
    }
    DecideAttention(d, dialect, &plan);
    return plan;
  }
};

}  // namespace

const Importer* ModelOptImporter() {
  static const ModelOptImporterImpl importer;
  return &importer;
}

}  // namespace quantpath
