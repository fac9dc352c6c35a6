// mxfp4 (gpt-oss): `quantization_config` with quant_method "mxfp4".
//
// Goals: the routed experts are MXFP4 (E2M1 values, one E8M0 scale per 32 along K, stored as
// gpt-oss `*_blocks` / `*_scales`); attention, router and head stay in 16 bits. Per dialect:
//   native — transformers' Mxfp4HfQuantizer (quantizers/quantizer_mxfp4.py,
//     integrations/mxfp4.py replace_with_mxfp4_linear): only the GptOssExperts modules are
//     converted, and only when should_convert_module(name, modules_to_not_convert) says so; the
//     list's wildcards ("model.layers.*.self_attn") are regexes in that test
//     (AppendTransformersSkipRules), so they keep attention and router, which are never converted
//     anyway.
//   vllm — Mxfp4Config (vllm/model_executor/layers/quantization/mxfp4.py): from_config ignores
//     every field, LinearBase gets UnquantizedLinearMethod, FusedMoE gets Mxfp4MoEMethod,
//     attention no method; modules_to_not_convert is never read.
//   sglang — the same split (LinearBase unquantized, FusedMoE Mxfp4MoEMethod).
// Non-goals: the MoE kernel backend (FlashInfer / Marlin / Triton) and activation formats that
// depend on the device; the gate/up row interleave of the checkpoint (the spec knows it).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "quantpath/importers.h"
#include "src/importers/common.h"
#include "src/importers/gptq_family.h"

namespace quantpath {
namespace {

constexpr int64_t kMxBlock = 32;
constexpr std::string_view kReadKeys[] = {"quant_method", "modules_to_not_convert"};

struct Mxfp4Dialect {
  bool reads_skip_list;
  std::string_view moe_detail;
  std::string_view linear_detail;
};

const Mxfp4Dialect& DialectFor(const Dialect& dialect) {
  static const Mxfp4Dialect kNative{.reads_skip_list = true, .moe_detail = "", .linear_detail = ""};
  static const Mxfp4Dialect kEngine{.reads_skip_list = false,
                                    .moe_detail = "Mxfp4MoEMethod",
                                    .linear_detail = "UnquantizedLinearMethod"};
  return dialect.engine == Engine::kNative ? kNative : kEngine;
}

// vLLM 0.33's GptOssMxfp4Config takes "gpt_oss_mxfp4" as well, its own name for the method.
bool AcceptsMxfp4(const Json& config, bool /*standalone*/) {
  std::optional<std::string> method = QuantMethod(config);
  return method == "mxfp4" || method == "gpt_oss_mxfp4";
}

QuantScheme ExpertScheme() {
  QuantScheme scheme;
  scheme.weight.dtype = QDType::kMXFP4;
  scheme.weight.granularity = Granularity::kGroup;
  scheme.weight.group_size = kMxBlock;
  scheme.weight.micro_scaled = true;
  scheme.weight.load.layout = SourceLayout::kGptOssMxfp4;
  return scheme;
}

class Mxfp4Format final : public Importer {
 public:
  std::string_view name() const override { return "mxfp4"; }
  std::vector<std::string_view> aliases() const override { return {"gpt_oss_mxfp4"}; }
  bool Detect(const ConfigSources& sources) const override {
    Result<std::optional<FamilyConfig>> found = FindFamilyConfig(sources, {}, AcceptsMxfp4);
    return !found.ok() || found->has_value();
  }
  Result<QuantPlan> BuildPlan(const ConfigSources& sources, const Dialect& dialect) const override;
};

Result<QuantPlan> Mxfp4Format::BuildPlan(const ConfigSources& sources,
                                         const Dialect& dialect) const {
  QP_ASSIGN_OR_RETURN(std::optional<FamilyConfig> found,
                      FindFamilyConfig(sources, {}, AcceptsMxfp4));
  if (!found) return InvalidInput("config.json has no mxfp4 quantization_config");
  const Mxfp4Dialect& d = DialectFor(dialect);
  const ConfigCopy& copy = found->primary;
  QuantPlan plan;
  plan.quant_method = "mxfp4";
  plan.sources.push_back(copy.where);
  QuantScheme scheme = ExpertScheme();
  plan.default_action = {
      ActionKind::kQuantize, scheme,
      fmt::format("mxfp4 {} applies to the routed experts", scheme.CanonicalName()),
      std::string(d.moe_detail)};

  // Linear layers are decided by a rule rather than a kind policy so that the trace says why.
  RuleGroup linear;
  linear.name = "linear layers";
  linear.fused = FusedPolicy::kFusedNameOnly;
  Action keep{ActionKind::kSkip, std::nullopt,
              "mxfp4 quantizes only the routed experts; linear layers keep 16 bits",
              std::string(d.linear_detail)};
  QP_ASSIGN_OR_RETURN(Rule all_linear,
                      MakeRule(MatchKind::kSubstring, "", RegexFlavor::kPythonRe,
                               KindBit(SiteKind::kLinear), std::move(keep), copy.where));
  linear.rules.push_back(std::move(all_linear));
  plan.groups.push_back(std::move(linear));

  QP_ASSIGN_OR_RETURN(std::optional<std::vector<ListEntry>> entries,
                      ReadEntryList(*copy.json, "modules_to_not_convert", copy.file()));
  if (entries && !entries->empty()) {
    if (d.reads_skip_list) {
      RuleGroup group;
      group.name = "modules_to_not_convert";
      group.fused = FusedPolicy::kFusedNameOnly;
      SkipList list{"modules_to_not_convert", std::move(*entries)};
      QP_RETURN_IF_ERROR(AppendTransformersSkipRules(list, {{KindBit(SiteKind::kMoe), ""}},
                                                     RegexFlavor::kPythonRe, &group.rules));
      plan.groups.push_back(std::move(group));
    } else {
      const Json* at = copy.json->Find("modules_to_not_convert");
      plan.notes.push_back(fmt::format("{}: {} does not read modules_to_not_convert for mxfp4",
                                       Where(copy.file(), *at), dialect.name));
    }
  }
  plan.linear = KindPolicy::kRules;
  plan.moe = KindPolicy::kRules;
  plan.lm_head = KindPolicy::kUnquantized;
  plan.router = KindPolicy::kUnquantized;
  NoteOtherFields(copy, kReadKeys, &plan.notes);
  return plan;
}

}  // namespace

const Importer* Mxfp4Importer() {
  static const Mxfp4Format kImporter;
  return &kImporter;
}

}  // namespace quantpath
