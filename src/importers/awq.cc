// AWQ: `quantization_config` with quant_method "awq", or AutoAWQ's standalone quant_config.json
// (legacy keys w_bit, q_group_size, zero_point, version).
//
// Goals: bits, group_size, zero_point (asymmetric when true, zero points stored as is), version
// (how the checkpoint packs the weights: a LoadFacts fact, never the kernel choice), lm_head and
// modules_to_not_convert, as each dialect's reference reads them:
//   native — transformers' AWQ quantizer (quantizers/quantizer_awq.py): lm_head and tied output
//     embeddings are always kept (add_default_skips), every other module is tested with
//     should_convert_module on its Hugging Face name (AppendTransformersSkipRules); defaults from
//     transformers' AwqConfig.
//   vllm — AWQConfig / AWQMarlinConfig (vllm/model_executor/layers/quantization/awq*.py):
//     is_layer_skipped(prefix, modules_to_not_convert, packed_modules_mapping,
//     skip_with_substr=True), i.e. `entry in name` per shard of a fused layer (shards must agree),
//     the same substring test on FusedMoE prefixes, `lm_head` read; bits must be 4.
//   sglang — sglang/srt/layers/quantization/awq.py is_layer_skipped_awq: `entry in prefix` on the
//     execution name, no shard expansion (seed 000 §3.3); LinearBase only.
// Non-goals: tensor layouts beyond naming them; kernels.
#include "src/importers/awq.h"

#include <utility>

#include "fmt/format.h"
#include "quantpath/importers.h"
#include "src/importers/common.h"

namespace quantpath {
namespace {

// vLLM's AWQConfig.get_config_filenames, in its order.
constexpr std::string_view kStandaloneFiles[] = {"quant_config.json", "quantize_config.json"};

constexpr DecisionField kDecisionFields[] = {
    {"bits", std::nullopt},       {"w_bit", std::nullopt},
    {"group_size", std::nullopt}, {"q_group_size", std::nullopt},
    {"zero_point", "true"},       {"version", "\"gemm\""},
    {"lm_head", "false"},         {"modules_to_not_convert", "null"}};

constexpr std::string_view kReadKeys[] = {"quant_method", "bits",         "w_bit",
                                          "group_size",   "q_group_size", "zero_point",
                                          "version",      "lm_head",      "modules_to_not_convert"};

enum class SkipStyle {
  kTransformers,  // should_convert_module on Hugging Face names
  kSubstring,     // `entry in prefix`
};

struct AwqDialect {
  SkipStyle skip;
  FusedPolicy fused;
  SiteKindSet skip_kinds;
  bool reads_lm_head;           // vLLM's AWQMarlinConfig reads `lm_head`
  bool engine_required_fields;  // get_from_keys: bits, group_size and zero_point must be present
  std::string_view unquantized_detail;
};

const AwqDialect& DialectFor(const Dialect& dialect) {
  constexpr SiteKindSet kLinearMoe = KindBit(SiteKind::kLinear) | KindBit(SiteKind::kMoe);
  static const AwqDialect kNative{.skip = SkipStyle::kTransformers,
                                  .fused = FusedPolicy::kLegsMustAgree,
                                  .skip_kinds = kLinearMoe,
                                  .reads_lm_head = false,
                                  .engine_required_fields = false,
                                  .unquantized_detail = ""};
  static const AwqDialect kVllm{.skip = SkipStyle::kSubstring,
                                .fused = FusedPolicy::kLegsMustAgree,
                                .skip_kinds = kLinearMoe | KindBit(SiteKind::kLmHead),
                                .reads_lm_head = true,
                                .engine_required_fields = true,
                                .unquantized_detail = "UnquantizedLinearMethod"};
  // SGLang tests the execution name itself, and only for linear layers.
  static const AwqDialect kSglang{.skip = SkipStyle::kSubstring,
                                  .fused = FusedPolicy::kFusedNameOnly,
                                  .skip_kinds = KindBit(SiteKind::kLinear),
                                  .reads_lm_head = false,
                                  .engine_required_fields = true,
                                  .unquantized_detail = "UnquantizedLinearMethod"};
  switch (dialect.engine) {
    case Engine::kNative:
      return kNative;
    case Engine::kVllm:
      return kVllm;
    case Engine::kSglang:
      return kSglang;
  }
  return kNative;
}

// quant_method "awq", or a standalone AutoAWQ file without quant_method (it has zero_point or
// w_bit, which GPTQ files do not).
bool AcceptsAwq(const Json& config, bool standalone) {
  std::optional<std::string> method = QuantMethod(config);
  if (method) return *method == "awq";
  return standalone && config.FindNonNull("quant_method") == nullptr &&
         (config.Find("zero_point") != nullptr || config.Find("w_bit") != nullptr);
}

// The first of `keys` present (current name first, AutoAWQ's legacy name second).
Result<std::optional<int64_t>> IntEither(const ConfigCopy& copy, std::string_view key,
                                         std::string_view legacy) {
  QP_ASSIGN_OR_RETURN(std::optional<int64_t> v, OptionalInt(*copy.json, legacy, copy.file()));
  if (v) return v;
  return OptionalInt(*copy.json, key, copy.file());
}

// version → how the checkpoint packs qweight / qzeros.
Result<SourceLayout> ReadVersion(const ConfigCopy& copy, std::vector<std::string>* notes) {
  QP_ASSIGN_OR_RETURN(std::optional<std::string> version,
                      OptionalString(*copy.json, "version", copy.file()));
  std::string v = ToLower(version.value_or("gemm"));
  if (v == "gemm") return SourceLayout::kAwqGemm;
  if (v == "gemv") return SourceLayout::kAwqGemv;
  if (v == "exllama" || v == "ipex") {
    // transformers' runtime backends over a gemm-packed checkpoint.
    notes->push_back(
        fmt::format("version \"{}\" names a runtime backend; the checkpoint is read "
                    "as gemm-packed",
                    v));
    return SourceLayout::kAwqGemm;
  }
  const Json* at = copy.json->Find("version");
  return Unsupported(fmt::format(
      "{}: AWQ version \"{}\" (weights packed for that kernel) is recognised but not supported; "
      "quantpath loads the gemm and gemv layouts",
      at ? Where(copy.file(), *at) : copy.where.ToString(), v));
}

class AwqFormat final : public Importer {
 public:
  std::string_view name() const override { return "awq"; }
  std::vector<std::string_view> aliases() const override { return {"awq_marlin"}; }
  bool Detect(const ConfigSources& sources) const override {
    Result<std::optional<FamilyConfig>> found =
        FindFamilyConfig(sources, kStandaloneFiles, AcceptsAwq);
    return !found.ok() || found->has_value();
  }
  Result<QuantPlan> BuildPlan(const ConfigSources& sources, const Dialect& dialect) const override {
    QP_ASSIGN_OR_RETURN(std::optional<FamilyConfig> found,
                        FindFamilyConfig(sources, kStandaloneFiles, AcceptsAwq));
    if (!found) {
      return InvalidInput(fmt::format("no AWQ description in {}", Join(sources.FileNames(), ", ")));
    }
    return BuildAwqPlan(dialect, *found);
  }
};

}  // namespace

Result<QuantPlan> BuildAwqPlan(const Dialect& dialect, const FamilyConfig& config) {
  const AwqDialect& d = DialectFor(dialect);
  const ConfigCopy& copy = config.primary;
  QuantPlan plan;
  plan.quant_method = "awq";
  plan.sources.push_back(copy.where);
  QP_RETURN_IF_ERROR(CompareCopies(config, kDecisionFields, &plan.notes));

  QP_ASSIGN_OR_RETURN(std::optional<int64_t> bits, IntEither(copy, "bits", "w_bit"));
  QP_ASSIGN_OR_RETURN(std::optional<int64_t> group, IntEither(copy, "group_size", "q_group_size"));
  QP_ASSIGN_OR_RETURN(std::optional<bool> zero_point,
                      OptionalBool(*copy.json, "zero_point", copy.file()));
  struct Missing {
    bool absent;
    std::string_view keys;
    std::string_view assumed;
  };
  for (const Missing& m : {Missing{!bits, "'w_bit', 'bits'", "4"},
                           Missing{!group, "'q_group_size', 'group_size'", "128"},
                           Missing{!zero_point, "'zero_point'", "true"}}) {
    if (!m.absent) continue;
    if (d.engine_required_fields) {
      return InvalidInput(
          fmt::format("{}: ValueError: Cannot find any of [{}] in the model's quantization config.",
                      copy.where.ToString(), m.keys));
    }
    plan.notes.push_back(fmt::format("{}: no {}; assumed {} (transformers' AwqConfig default)",
                                     copy.where.ToString(), m.keys, m.assumed));
  }
  IntWeight weight{bits.value_or(4), group.value_or(128), !zero_point.value_or(true), {}};
  if (weight.bits != 4) {
    std::string text =
        d.engine_required_fields
            ? fmt::format(
                  "ValueError: Currently, only 4-bit weight quantization is supported for "
                  "AWQ, but got {} bits.",
                  weight.bits)
            : fmt::format(
                  "AWQ packs 4 bits per weight (AutoAWQ: \"Only 4-bit are supported for "
                  "now.\"), found {}",
                  weight.bits);
    const Json* at = copy.json->Find("w_bit") ? copy.json->Find("w_bit") : copy.json->Find("bits");
    return InvalidInput(fmt::format("{}: {}", Where(copy.file(), *at), text));
  }
  if (weight.group_size != -1 && weight.group_size <= 0) {
    return InvalidInput(fmt::format("{}: group_size must be -1 or positive, found {}",
                                    copy.where.ToString(), weight.group_size));
  }
  QP_ASSIGN_OR_RETURN(weight.load.layout, ReadVersion(copy, &plan.notes));
  weight.load.zero_point =
      zero_point.value_or(true) ? ZeroPointConvention::kStored : ZeroPointConvention::kNone;
  plan.notes.push_back(
      "version describes how the checkpoint packs the weights; it does not "
      "choose the kernel");
  std::optional<QuantScheme> scheme = IntScheme(weight);
  if (!scheme) return InternalError("no int4 type");

  // vLLM and SGLang run Marlin when it supports the scheme (4 bits with zero points, a Marlin
  // group size), the plain AWQ kernel otherwise.
  bool marlin = zero_point.value_or(true) && (weight.group_size == -1 || weight.group_size == 32 ||
                                              weight.group_size == 64 || weight.group_size == 128);
  std::string detail;
  if (d.engine_required_fields) detail = marlin ? "AWQMarlinLinearMethod" : "AWQLinearMethod";
  plan.default_action = {
      ActionKind::kQuantize, scheme,
      fmt::format("awq {} applies to every layer no rule names", scheme->CanonicalName()), detail};

  QP_ASSIGN_OR_RETURN(std::optional<std::vector<ListEntry>> skip_entries,
                      ReadEntryList(*copy.json, "modules_to_not_convert", copy.file()));
  if (skip_entries && !skip_entries->empty()) {
    RuleGroup group;
    group.name = "modules_to_not_convert";
    group.fused = d.fused;
    group.disagree_message = d.skip == SkipStyle::kSubstring
                                 ? "ValueError: " + std::string(kShardsDisagreeText)
                                 : "the shards of a fused layer disagree on modules_to_not_convert";
    SkipList list{"modules_to_not_convert", std::move(*skip_entries)};
    std::vector<SkipOutcome> outcomes = {{d.skip_kinds, std::string(d.unquantized_detail)}};
    if (d.skip == SkipStyle::kTransformers) {
      QP_RETURN_IF_ERROR(
          AppendTransformersSkipRules(list, outcomes, RegexFlavor::kPythonRe, &group.rules));
    } else {
      for (const ListEntry& entry : list.entries) {
        Action skip{ActionKind::kSkip, std::nullopt,
                    fmt::format("modules_to_not_convert \"{}\" is part of the name", entry.value),
                    std::string(d.unquantized_detail)};
        QP_ASSIGN_OR_RETURN(Rule rule,
                            MakeRule(MatchKind::kSubstring, entry.value, RegexFlavor::kPythonRe,
                                     d.skip_kinds, std::move(skip), entry.where));
        group.rules.push_back(std::move(rule));
      }
    }
    plan.groups.push_back(std::move(group));
  }

  QP_ASSIGN_OR_RETURN(std::optional<bool> lm_head,
                      OptionalBool(*copy.json, "lm_head", copy.file()));
  plan.linear = KindPolicy::kRules;
  plan.lm_head =
      d.reads_lm_head && lm_head.value_or(false) ? KindPolicy::kRules : KindPolicy::kUnquantized;
  plan.moe = KindPolicy::kRules;
  NoteOtherFields(copy, kReadKeys, &plan.notes);
  return plan;
}

const Importer* AwqImporter() {
  static const AwqFormat kImporter;
  return &kImporter;
}

}  // namespace quantpath
