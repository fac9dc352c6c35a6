// The ModelOpt importer: NVIDIA TensorRT Model Optimizer exports, as hf_quant_config.json
// ({"producer", "quantization": {...}}) or embedded in config.json ({"quant_method": "modelopt",
// "quant_algo", ...}).
//
// Goals: FP8, FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO, NVFP4, W4A8_AWQ and MIXED_PRECISION
// (quantized_layers), exclude_modules / ignore, kv_cache_quant_algo, each read and matched as the
// dialect does (modelopt_config.cc, modelopt_rules.cc). Non-goals: tensor layouts.
// The releases (since vllm@0.33, sglang@0.5.23) add W4A16_NVFP4, MXFP8 and the engines'
// MIXED_PRECISION lookup (modelopt_current.cc, modelopt_mixed.cc).
// Documentation followed: vLLM ModelOptQuantConfigBase.get_quant_method @c9a59901 and 0.33.0;
// SGLang ModelOptQuantConfig._get_quant_method (newest read) and 0.5.23; the recorded cases in
// tests/data/oracle/cases/{vllm,sglang}-modelopt.json and releases/*/cases/.
#include <array>
#include <utility>

#include "fmt/format.h"
#include "quantpath/importers.h"
#include "src/importers/modelopt.h"

namespace quantpath {
namespace {

using modelopt::AlgoMethods;
using modelopt::Description;
using modelopt::EngineConfig;

// How a dialect attaches its KV-cache method to attention layers.
enum class KvAttach : uint8_t {
  kScheme,        // native: kv_cache_quant_algo alone decides
  kAlways,        // every attention layer, whatever the KV algorithm says
  kWhenKvMethod,  // only when the description names a KV algorithm (Description::kv_method)
};

// One dialect's choices: method classes per algorithm, KV-cache method, LM head.
struct ModelOptRow {
  std::vector<AlgoMethods> methods;        // empty: native (the detail names the algorithm)
  std::vector<AlgoMethods> mixed_methods;  // MIXED_PRECISION (the releases)
  std::string_view kv_method;
  KvAttach attach;
  KvAttach mixed_attach;
  bool lm_head_as_linear;  // the LM head goes through the linear path (and the exclusion list)
};

const ModelOptRow& ModelOptRowFor(const Dialect& dialect) {
  static const ModelOptRow kNative{{}, {}, "", KvAttach::kScheme, KvAttach::kScheme, false};
  // Recorded code: ModelOptFp8Config / ModelOptNvFp4Config with one method class per algorithm.
  static const ModelOptRow kVllm{
      {{"FP8", "ModelOptFp8LinearMethod", "ModelOptFp8MoEMethod"},
       {"FP8_PER_CHANNEL_PER_TOKEN", "ModelOptFp8PcPtLinearMethod", "ModelOptFp8MoEMethod"},
       {"FP8_PB_WO", "ModelOptFp8PbWoLinearMethod", "ModelOptFp8MoEMethod"},
       {"NVFP4", "ModelOptNvFp4LinearMethod", "ModelOptNvFp4FusedMoE"}},
      {},
      "ModelOptFp8KVCacheMethod",
      KvAttach::kAlways,
      KvAttach::kAlways,
      false};
  static const ModelOptRow kSglang{
      {{"FP8", "ModelOptFp8LinearMethod", "ModelOptFp8MoEMethod"},
       {"FP8_PER_CHANNEL_PER_TOKEN", "ModelOptFp8LinearMethod", "ModelOptFp8MoEMethod"},
       {"FP8_PB_WO", "ModelOptFp8LinearMethod", "ModelOptFp8MoEMethod"},
       {"NVFP4", "ModelOptFp4LinearMethod", "ModelOptNvFp4FusedMoEMethod"}},
      {},
      "ModelOptFp8KVCacheMethod",
      KvAttach::kWhenKvMethod,
      KvAttach::kWhenKvMethod,
      false};
  // vLLM 0.33: one generic ModelOptLinearMethod; each config's FusedMoEMethodCls for experts; the
  // mixed config picks the expert method per algorithm (none for FP8_PER_CHANNEL_PER_TOKEN).
  static const ModelOptRow kVllm033{
      {{"FP8", "ModelOptLinearMethod[algo=FP8]", "ModelOptFp8MoEMethod"},
       {"FP8_PER_CHANNEL_PER_TOKEN", "ModelOptLinearMethod[algo=FP8_PER_CHANNEL_PER_TOKEN]",
        "ModelOptFp8MoEMethod"},
       {"FP8_PB_WO", "ModelOptLinearMethod[algo=FP8_PB_WO]", "ModelOptFp8MoEMethod"},
       {"NVFP4", "ModelOptLinearMethod[algo=NVFP4]", "ModelOptNvFp4FusedMoE"},
       {"W4A16_NVFP4", "ModelOptLinearMethod[algo=W4A16_NVFP4]", "ModelOptNvFp4FusedMoE"},
       {"MXFP8", "ModelOptLinearMethod[algo=MXFP8]", "ModelOptMxFp8FusedMoE"}},
      {{"FP8", "ModelOptLinearMethod[algo=FP8]", "ModelOptFp8MoEMethod"},
       {"FP8_PER_CHANNEL_PER_TOKEN", "ModelOptLinearMethod[algo=FP8_PER_CHANNEL_PER_TOKEN]", ""},
       {"FP8_PB_WO", "ModelOptLinearMethod[algo=FP8_PB_WO]", "Fp8MoEMethod"},
       {"NVFP4", "ModelOptLinearMethod[algo=NVFP4]", "ModelOptNvFp4FusedMoE"},
       {"W4A16_NVFP4", "ModelOptLinearMethod[algo=W4A16_NVFP4]", "ModelOptNvFp4FusedMoE"},
       {"MXFP8", "ModelOptLinearMethod[algo=MXFP8]", "ModelOptMxFp8FusedMoE"}},
      "ModelOptKVCacheMethod",
      KvAttach::kAlways,
      KvAttach::kWhenKvMethod,
      true};
  // SGLang 0.5.23: ModelOptFp8Config / ModelOptFp4Config, and the mixed config's per-algorithm
  // classes (block and MX FP8 through the plain Fp8 methods).
  static const ModelOptRow kSglang0523{
      {{"FP8", "ModelOptFp8LinearMethod", "ModelOptFp8MoEMethod"},
       {"NVFP4", "ModelOptFp4LinearMethod", "ModelOptNvFp4FusedMoEMethod"},
       {"W4A16_NVFP4", "ModelOptNvFp4A16LinearMethod", "ModelOptNvFp4FusedMoEMethod"}},
      {{"FP8", "ModelOptFp8LinearMethod", "ModelOptFp8MoEMethod"},
       {"FP8_PB_WO", "Fp8LinearMethod", "Fp8MoEMethod"},
       {"MXFP8", "Fp8LinearMethod", "Fp8MoEMethod"},
       {"NVFP4", "ModelOptFp4LinearMethod", "ModelOptNvFp4FusedMoEMethod"},
       {"W4A16_NVFP4", "ModelOptNvFp4A16LinearMethod", "ModelOptNvFp4FusedMoEMethod"}},
      "ModelOptFp8KVCacheMethod",
      KvAttach::kWhenKvMethod,
      KvAttach::kWhenKvMethod,
      true};
  static const std::array<DialectRow<ModelOptRow>, 5> kRows = {{
      {DialectId::kNative, kNative},
      {DialectId::kVllmHelpers, kVllm},
      {DialectId::kSglangHelpers, kSglang},
      {DialectId::kVllm033, kVllm033},
      {DialectId::kSglang0523, kSglang0523},
  }};
  return RowFor(dialect, kRows);
}

// The name SGLang's method resolution gives the description (ModelConfig.quantization), which its
// dtype and platform checks print.
std::string_view SglangMethodName(const Description& d) {
  switch (d.engine_config) {
    case EngineConfig::kW4AFp8:
      return "w4afp8";
    case EngineConfig::kMxfp8:
      return "mxfp8";
    case EngineConfig::kMixed:
      return "modelopt_mixed";
    case EngineConfig::kSingle:
      break;
  }
  if (d.mixed) return "modelopt_mixed";
  return d.info != nullptr && d.info->name.ends_with("NVFP4") ? "modelopt_fp4" : "modelopt_fp8";
}

// How the dialect decides attention sites.
void DecideAttention(const Description& d, const ModelOptRow& row, QuantPlan* plan) {
  plan->kv_cache = d.kv;
  std::string scheme = d.kv ? d.kv->CanonicalName() : "no KV scheme";
  switch (d.mixed ? row.mixed_attach : row.attach) {
    case KvAttach::kScheme:
      break;
    case KvAttach::kAlways:
      plan->attention = Action{
          ActionKind::kQuantize, d.kv,
          fmt::format("the engine attaches {} to every attention layer, whatever the KV algorithm "
                      "says ({}; the cache is fp8 only with --kv-cache-dtype fp8 or a kv algo)",
                      row.kv_method, scheme),
          std::string(row.kv_method)};
      break;
    case KvAttach::kWhenKvMethod:
      // vLLM 0.33.0's mixed config tests `Attention` only (its base configs test Attention and
      // MLAAttention), so MLAAttention gets no KV-cache method there.
      if (d.mixed && Since(plan->dialect, DialectId::kVllm033)) {
        plan->attention_classes = VllmAttentionClasses();
      }
      plan->attention =
          d.kv_method ? Action{ActionKind::kQuantize, d.kv,
                               fmt::format("kv cache algorithm set: the engine attaches {} ({})",
                                           row.kv_method, scheme),
                               std::string(row.kv_method)}
                      : Action{ActionKind::kSkip, std::nullopt,
                               "no kv cache algorithm: the engine attaches no KV-cache method",
                               "get_quant_method returned None"};
      break;
  }
}

// A catch-all rule for one site kind.
Result<RuleGroup> CatchAll(std::string name, SiteKindSet kinds, Action action,
                           const Provenance& where) {
  RuleGroup group{std::move(name), {}, FusedPolicy::kFusedNameOnly, ""};
  QP_ASSIGN_OR_RETURN(Rule rule, MakeRule(MatchKind::kGlob, "*", RegexFlavor::kPythonRe, kinds,
                                          std::move(action), where));
  group.rules.push_back(std::move(rule));
  return group;
}

// SGLang's w4afp8: fp8 block-scaled linear layers, int4 experts with fp8 activations, no LM head.
Status W4AFp8Plan(const Description& d, QuantPlan* plan) {
  QP_ASSIGN_OR_RETURN(QuantScheme linear, modelopt::AlgoScheme(*modelopt::FindAlgo("FP8_PB_WO"),
                                                               std::nullopt, d.where.ToString()));
  QP_ASSIGN_OR_RETURN(QuantScheme experts, modelopt::AlgoScheme(*modelopt::FindAlgo("W4A8_AWQ"),
                                                                std::nullopt, d.where.ToString()));
  const std::string message = "w4afp8 quantizes every linear layer and the experts";
  plan->default_action = {ActionKind::kQuantize, linear, message, "Fp8LinearMethod"};
  QP_ASSIGN_OR_RETURN(
      RuleGroup moe,
      CatchAll("experts method", KindBit(SiteKind::kMoe),
               {ActionKind::kQuantize, experts, message, "W4AFp8MoEMethod"}, d.where));
  QP_ASSIGN_OR_RETURN(RuleGroup head, CatchAll("lm head", KindBit(SiteKind::kLmHead),
                                               {ActionKind::kSkip, std::nullopt,
                                                "w4afp8 has no method for the LM head",
                                                "get_quant_method returned None"},
                                               d.where));
  plan->groups = {std::move(moe), std::move(head)};
  plan->lm_head = KindPolicy::kRules;
  return {};
}

// SGLang's mxfp8 for a nested MXFP8 description: Fp8Config (get_quant_method of fp8.py) over the
// description's exclude_modules, MX blocks fixed at [1, 32], Fp8KVCacheMethod on attention and no
// method for the LM head.
// On an NPU, Fp8Config hands MXFP8 linear layers and experts its NPU methods.
Status SglangMxfp8Plan(const Description& d, Platform platform, QuantPlan* plan) {
  QP_ASSIGN_OR_RETURN(QuantScheme scheme, modelopt::AlgoScheme(*d.info, 32, d.where.ToString()));
  const std::string message = "SGLang's mxfp8 (Fp8Config) quantizes every linear layer";
  plan->default_action = {ActionKind::kQuantize, scheme, message,
                          platform == Platform::kNpu ? "NPUMXFP8LinearMethod" : "Fp8LinearMethod"};
  // from_config keeps a "model."-stripped and a "model."-prefixed copy of every entry.
  SkipList list{d.exclude_key, {}};
  for (const ListEntry& e : d.exclude) {
    const std::string base = e.value.starts_with("model.") ? e.value.substr(6) : e.value;
    list.entries.push_back({base, e.where});
    list.entries.push_back({"model." + base, e.where});
  }
  RuleGroup skipped{"exclude (Fp8Config is_layer_skipped)",
                    {},
                    FusedPolicy::kLegsMustAgree,
                    std::string(kShardsDisagreeText)};
  QP_RETURN_IF_ERROR(AppendSglangSkipRules(list,
                                           {{KindBit(SiteKind::kLinear), "UnquantizedLinearMethod"},
                                            {KindBit(SiteKind::kMoe), "UnquantizedFusedMoEMethod"}},
                                           SglangShardTable::kBuiltInFallback, &skipped.rules));
  QP_ASSIGN_OR_RETURN(
      RuleGroup moe,
      CatchAll("experts method", KindBit(SiteKind::kMoe),
               {ActionKind::kQuantize, scheme, message,
                platform == Platform::kNpu ? "NPUMXFP8OnlineMoEMethod" : "Fp8MoEMethod"},
               d.where));
  plan->groups = {std::move(skipped), std::move(moe)};
  plan->lm_head = KindPolicy::kUnquantized;
  plan->attention = Action{ActionKind::kQuantize, std::nullopt,
                           "SGLang's Fp8Config attaches Fp8KVCacheMethod to every attention layer",
                           "Fp8KVCacheMethod"};
  return {};
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

  // The shell form ({"quantization": …}) is hf_quant_config.json's, the flat form config.json's
  // quantization_config; SGLang's ModelOpt config reads packed_modules_mapping from the config
  // object, where the model's mapping stands in for one the description lacks.
  DescriptionPlacement PlaceDescription(const Json& description,
                                        const Dialect& /*dialect*/) const override {
    DescriptionPlacement placement;
    if (description.Find("quantization") != nullptr) placement.file = "hf_quant_config.json";
    placement.packed_mapping = DescriptionPlacement::PackedMapping::kAddIfAbsent;
    return placement;
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
    if (dialect.engine == Engine::kSglang && dialect.is_release()) {
      plan.engine_method = std::string(SglangMethodName(d));
      plan.act_dtypes = {QDType::kBF16, QDType::kFP16};
    }
    const ModelOptRow& row = ModelOptRowFor(dialect);
    plan.linear = KindPolicy::kRules;
    plan.moe = KindPolicy::kRules;
    // Router gates are built without a quantization config. The recorded engine code returns no
    // method for ParallelLMHead, and ModelOpt's default configuration leaves lm_head unquantized;
    // the releases send the LM head through the linear path.
    plan.router = KindPolicy::kUnquantized;
    plan.embedding = KindPolicy::kUnquantized;
    plan.lm_head = row.lm_head_as_linear ? KindPolicy::kRules : KindPolicy::kUnquantized;
    if (d.engine_config == EngineConfig::kW4AFp8) {
      QP_RETURN_IF_ERROR(W4AFp8Plan(d, &plan));
      DecideAttention(d, row, &plan);
      return plan;
    }
    if (d.engine_config == EngineConfig::kMxfp8) {
      QP_RETURN_IF_ERROR(SglangMxfp8Plan(d, sources.launch().platform, &plan));
      return plan;
    }
    QP_ASSIGN_OR_RETURN(std::vector<RuleGroup> exclusion, modelopt::ExclusionGroups(d, dialect));
    if (d.engine_config == EngineConfig::kMixed) {
      QP_ASSIGN_OR_RETURN(plan.groups, modelopt::EngineMixedGroups(d, dialect, std::move(exclusion),
                                                                   row.mixed_methods));
      plan.default_action = {ActionKind::kSkip, std::nullopt, "not in quantized_layers",
                             "UnquantizedLinearMethod"};
    } else if (d.mixed) {
      plan.groups = std::move(exclusion);
      QP_ASSIGN_OR_RETURN(RuleGroup table, modelopt::QuantizedLayersGroup(d));
      plan.groups.push_back(std::move(table));
      plan.default_action = {ActionKind::kSkip, std::nullopt,
                             "MIXED_PRECISION: not listed in quantized_layers, so unquantized",
                             "not listed"};
      plan.lm_head = KindPolicy::kRules;  // quantized only when the table names it
    } else {
      plan.groups = std::move(exclusion);
      QP_ASSIGN_OR_RETURN(QuantScheme scheme,
                          modelopt::AlgoScheme(*d.info, d.group_size, d.where.ToString()));
      std::string_view linear = d.info->name;
      std::string_view moe = d.info->name;
      if (!row.methods.empty()) {
        const AlgoMethods* methods = modelopt::FindMethods(row.methods, d.info->name);
        if (methods == nullptr) {
          return InternalError(
              fmt::format("no {} method for quant_algo {}", dialect.name, d.info->name));
        }
        linear = methods->linear;
        moe = methods->moe;
      }
      std::string message = fmt::format("quant_algo {} applies to every layer", d.algo);
      plan.default_action = {ActionKind::kQuantize, scheme, message, std::string(linear)};
      if (moe != linear) {
        // Experts get their own method class; a catch-all rule for MoE sites carries it.
        QP_ASSIGN_OR_RETURN(
            RuleGroup experts,
            CatchAll("experts method", KindBit(SiteKind::kMoe),
                     {ActionKind::kQuantize, scheme, message, std::string(moe)}, d.where));
        plan.groups.push_back(std::move(experts));
      }
    }
    DecideAttention(d, row, &plan);
    return plan;
  }
};

}  // namespace

const Importer* ModelOptImporter() {
  static const ModelOptImporterImpl importer;
  return &importer;
}

}  // namespace quantpath
