// AutoRound (Intel): quant_method "auto-round" in config.json or AutoRound's standalone
// quantization_config.json, and AutoRound checkpoints exported under quant_method "awq" / "gptq"
// (they carry provider "auto-round" / autoround_version, as the corpus' Qwen3.6-27B AutoRound-AWQ).
//
// Goals:
//   - quant_method "awq" / "gptq" with AutoRound keys: every dialect loads them with that method's
//     reader (vLLM AWQ/GPTQ configs, transformers' AWQ/GPTQ quantizers), so the plan is the AWQ or
//     GPTQ plan (awq.h, gptq.h); the AutoRound-only fields are noted.
//   - quant_method "auto-round": bits, group_size, sym, data_type ("int"), packing_format
//     ("auto_round:auto_gptq" → GPTQ v1 packing, "auto_round:auto_awq" → AWQ gemm packing),
//     to_quant_block_names / block_name_to_quantize, extra_config (per-layer bits / group_size /
//     sym; bits ≥ 16 = unquantized):
//       native — auto_round/inference/convert_model.py get_layer_config: layers inside the
//         quantized blocks (a block string expands to its numbered children) plus layers named in
//         extra_config; modules_to_not_convert (exact names) and modules_in_block_to_quantize
//         (substring) keep layers in 16 bits.
//       vllm / sglang — vLLM's AutoRoundConfig (vllm/model_executor/layers/quantization/
//         auto_round.py, read at 04aa528e): extra_config exact name first, else quantized when
//         the name starts with a block name (the LM head only then), fused layers need one config
//         across their shards.
// Non-goals: AutoRound's non-integer data types (mx_fp, nv_fp, fp8), which are rejected saying
// which engine reads them (RefuseDataType).
#include <utility>

#include "fmt/format.h"
#include "quantpath/importers.h"
#include "src/importers/awq.h"
#include "src/importers/common.h"
#include "src/importers/gptq.h"

namespace quantpath {
namespace {

constexpr std::string_view kStandaloneFiles[] = {"quantization_config.json"};

constexpr DecisionField kDecisionFields[] = {{"bits", std::nullopt},
                                             {"group_size", std::nullopt},
                                             {"sym", "true"},
                                             {"data_type", "\"int\""},
                                             {"packing_format", "\"auto_round:auto_gptq\""},
                                             {"to_quant_block_names", "null"},
                                             {"block_name_to_quantize", "null"},
                                             {"extra_config", "null"},
                                             {"modules_to_not_convert", "null"},
                                             {"modules_in_block_to_quantize", "null"}};

constexpr std::string_view kReadKeys[] = {"quant_method",
                                          "bits",
                                          "group_size",
                                          "sym",
                                          "data_type",
                                          "packing_format",
                                          "backend",
                                          "vllm_backend",
                                          "to_quant_block_names",
                                          "block_name_to_quantize",
                                          "extra_config",
                                          "modules_to_not_convert",
                                          "modules_in_block_to_quantize"};

bool IsAutoRoundMethod(std::string_view m) {
  return m == "auto-round" || m == "intel/auto-round" || m == "auto_round";
}

bool AcceptsAutoRound(const Json& config, bool /*standalone*/) {
  std::optional<std::string> method = QuantMethod(config);
  if (!method) return false;
  if (IsAutoRoundMethod(*method)) return true;
  const Json* provider = config.FindNonNull("provider");
  bool written_by_autoround =
      (provider != nullptr && provider->is_string() && provider->string_value() == "auto-round") ||
      config.FindNonNull("autoround_version") != nullptr;
  return (*method == "awq" || *method == "gptq") && written_by_autoround;
}

struct AutoRoundDialect {
  FusedPolicy extra_fused;
  std::string_view block_tail;  // after a block name: "\." for numbered children, "" for startswith
  bool reads_skip_lists;        // AutoRound's own loader reads the AWQ / GPTQ skip lists
  bool engine_texts;            // vLLM's validation texts and method names
};

const AutoRoundDialect& DialectFor(const Dialect& dialect) {
  static const AutoRoundDialect kNative{.extra_fused = FusedPolicy::kLegsMustAgree,
                                        .block_tail = "\\.",
                                        .reads_skip_lists = true,
                                        .engine_texts = false};
  static const AutoRoundDialect kEngine{.extra_fused = FusedPolicy::kFusedNameThenLegs,
                                        .block_tail = "",
                                        .reads_skip_lists = false,
                                        .engine_texts = true};
  return dialect.engine == Engine::kNative ? kNative : kEngine;
}

// How the export stores its layers: GPTQ or AWQ packed integers, or (data_type mx_fp, packing
// auto_round:llm_compressor) compressed-tensors' MX tensors, which auto-round packs with
// compressed-tensors' own compressors: MXFP4 as mxfp4-pack-quantized, MXFP8 as mxfp8-quantized,
// one E8M0 scale per 32 (auto_round/export/export_to_llmcompressor).
struct Packing {
  bool gptq = false;
  bool mx = false;
  int64_t act_bits = 16;  // mx: activations MX per 32 at run time below 16 bits
  LoadFacts Load(bool sym) const {
    LoadFacts load;
    if (gptq) {
      load.layout = SourceLayout::kGptqV1;
      load.zero_point = ZeroPointConvention::kStoredMinusOne;
    } else {
      load.layout = SourceLayout::kAwqGemm;
      load.zero_point = sym ? ZeroPointConvention::kNone : ZeroPointConvention::kStored;
    }
    return load;
  }
};

// An MX tensor of `bits` (4: E2M1, 8: E4M3) with one E8M0 scale per 32, or nullopt.
std::optional<TensorQuant> MxTensor(int64_t bits) {
  TensorQuant t;
  if (bits == 4) {
    t.dtype = QDType::kMXFP4;
  } else if (bits == 8) {
    t.dtype = QDType::kMXFP8;
  } else {
    return std::nullopt;
  }
  t.micro_scaled = true;
  t.granularity = Granularity::kGroup;
  t.group_size = 32;
  return t;
}

// An MX layer of the export: weights of `bits` in groups of 32 in compressed-tensors' layout.
std::optional<QuantScheme> MxScheme(int64_t bits, int64_t group_size, int64_t act_bits) {
  std::optional<TensorQuant> weight = MxTensor(bits);
  if (!weight || group_size != 32) return std::nullopt;
  weight->load.layout =
      bits == 4 ? SourceLayout::kCtMxfp4PackQuantized : SourceLayout::kCtFloatQuantized;
  QuantScheme scheme;
  scheme.weight = *weight;
  if (act_bits < 16) {
    scheme.input = MxTensor(act_bits);
    if (!scheme.input) return std::nullopt;
    scheme.input->dynamic = Dynamic::kDynamic;
  }
  return scheme;
}

// The action for a layer whose effective settings are (bits, group_size, sym).
Action LayerAction(int64_t bits, int64_t group_size, bool sym, const Packing& packing,
                   const AutoRoundDialect& d, std::string why) {
  if (bits >= 16) {
    return {ActionKind::kSkip, std::nullopt, why + ": 16 bits, not quantized",
            d.engine_texts ? "UnquantizedLinearMethod" : ""};
  }
  if (packing.mx) {
    std::optional<QuantScheme> mx = MxScheme(bits, group_size, packing.act_bits);
    if (!mx) {
      return {ActionKind::kFail, std::nullopt,
              fmt::format("AutoRound mx_fp with {} bits in groups of {} (act_bits {}) is not "
                          "MXFP4 or MXFP8: 4 or 8 bits, groups of 32",
                          bits, group_size, packing.act_bits),
              ""};
    }
    return {ActionKind::kQuantize, mx, fmt::format("{}: quantized as {}", why, mx->CanonicalName()),
            ""};
  }
  std::optional<QuantScheme> scheme = (bits == 2 || bits == 3 || bits == 4 || bits == 8)
                                          ? IntScheme({bits, group_size, sym, packing.Load(sym)})
                                          : std::nullopt;
  if (!scheme) {
    return {ActionKind::kFail, std::nullopt,
            fmt::format("ValueError: Unsupported weight_bits: {}, currently only support  "
                        "{{2, 3, 4, 8}}",
                        bits),
            ""};
  }
  std::string detail;
  if (d.engine_texts) {
    bool marlin = packing.gptq ? ((bits == 4 || bits == 8) && sym) : (bits == 4 || bits == 8);
    detail = fmt::format("{}{}LinearMethod", packing.gptq ? "GPTQ" : "AWQ", marlin ? "Marlin" : "");
  }
  return {ActionKind::kQuantize, scheme,
          fmt::format("{}: quantized as {}", why, scheme->CanonicalName()), detail};
}

// to_quant_block_names (AutoRound) or block_name_to_quantize (vLLM reads either): a
// comma-separated string or a list (of lists) of block names.
Result<std::optional<std::vector<std::string>>> ReadBlocks(const ConfigCopy& copy,
                                                           Provenance* where) {
  for (std::string_view key : {"block_name_to_quantize", "to_quant_block_names"}) {
    const Json* v = copy.json->FindNonNull(key);
    if (v == nullptr) continue;
    *where = ProvenanceOf(copy.file(), *v);
    std::vector<std::string> names;
    if (v->is_string())
      return std::optional<std::vector<std::string>>(Split(v->string_value(), ','));
    bool ok = v->is_array();
    for (const Json& item : v->items()) {
      if (item.is_string()) {
        names.push_back(item.string_value());
        continue;
      }
      ok = ok && item.is_array();
      for (const Json& inner : item.items()) {
        ok = ok && inner.is_string();
        names.push_back(inner.string_value());
      }
    }
    if (!ok) {
      return InvalidInput(
          fmt::format("{}: expected block names (a string or a list)", where->ToString()));
    }
    return std::optional<std::vector<std::string>>(std::move(names));
  }
  return std::optional<std::vector<std::string>>();
}

// A non-integer data_type: vLLM reads AutoRound through INCConfig (inc/inc.py, 0.33 and 0.34:
// data types int, mx_fp and fp; its constructor raises on the others), SGLang 0.5.23's
// AutoRoundConfig takes "int" only (SUPPORTED_DTYPES = {"int"}, raised in its constructor).
Status RefuseDataType(const Dialect& dialect, const ConfigCopy& copy, const std::string& type) {
  const std::string where = copy.where.ToString();
  if (dialect.is_release() && dialect.engine == Engine::kSglang) {
    // The engine's own text, as recorded (sglang-auto-round-mx-fp-export).
    return InvalidInput(fmt::format(
        "ValueError: Unsupported data_type: {}, currently only support  {{'int'}}", type));
  }
  const bool inc_reads = type.find("mx_fp") != std::string::npos || type == "fp" || type == "fp8";
  if (dialect.is_release() && dialect.engine == Engine::kVllm && !inc_reads) {
    return InvalidInput(fmt::format(
        "{}: ValueError: Unsupported data_type: {} ({}'s INCConfig, which reads AutoRound, takes "
        "int, mx_fp and fp)",
        where, type, dialect.name));
  }
  return Unsupported(fmt::format(
      "{}: AutoRound data_type \"{}\" is recognised but not supported: quantpath reads the "
      "integer (\"int\") AutoRound formats. vLLM 0.33 and 0.34 read mx_fp (MXFP4 and MXFP8 "
      "with packing_format auto_round:llm_compressor) and fp (fp8 blocks, auto_round:fp8) "
      "through INCConfig; SGLang 0.5.23 reads \"int\" only. auto-round's export with format "
      "\"llm_compressor\" writes the same MX tensors under quant_method compressed-tensors, "
      "which quantpath reads",
      where, type));
}

Result<QuantPlan> BuildAutoRoundPlan(const Dialect& dialect, const FamilyConfig& config) {
  const AutoRoundDialect& d = DialectFor(dialect);
  const ConfigCopy& copy = config.primary;
  QuantPlan plan;
  plan.quant_method = "auto-round";
  plan.sources.push_back(copy.where);
  QP_RETURN_IF_ERROR(CompareCopies(config, kDecisionFields, &plan.notes));

  QP_ASSIGN_OR_RETURN(int64_t bits, RequiredInt(copy, "bits", "AutoRound needs \"bits\""));
  QP_ASSIGN_OR_RETURN(int64_t group_size,
                      RequiredInt(copy, "group_size", "AutoRound needs \"group_size\""));
  QP_ASSIGN_OR_RETURN(std::optional<bool> sym_field, OptionalBool(*copy.json, "sym", copy.file()));
  QP_ASSIGN_OR_RETURN(std::optional<std::string> data_type,
                      OptionalString(*copy.json, "data_type", copy.file()));
  QP_ASSIGN_OR_RETURN(std::optional<std::string> packing_format,
                      OptionalString(*copy.json, "packing_format", copy.file()));
  bool sym = sym_field.value_or(true);
  std::string format = packing_format.value_or("auto_round:auto_gptq");
  // Natively, MX exports (the compressed-tensors layout); the engines' readings of them are not
  // reproduced (vLLM's INCConfig) or refuse them (SGLang).
  const bool mx = data_type && data_type->find("mx_fp") != std::string::npos &&
                  format == "auto_round:llm_compressor" && dialect.engine == Engine::kNative;
  if (data_type.value_or("int") != "int" && !mx) return RefuseDataType(dialect, copy, *data_type);
  Packing packing{.gptq = format == "auto_round:auto_gptq", .mx = mx};
  if (mx) {
    QP_ASSIGN_OR_RETURN(std::optional<int64_t> act_bits,
                        OptionalInt(*copy.json, "act_bits", copy.file()));
    QP_ASSIGN_OR_RETURN(std::optional<std::string> act_type,
                        OptionalString(*copy.json, "act_data_type", copy.file()));
    packing.act_bits = act_bits.value_or(16);
    if (packing.act_bits < 16 && act_type.value_or("mx_fp").find("mx_fp") == std::string::npos) {
      return Unsupported(
          fmt::format("{}: AutoRound mx_fp weights with act_data_type \"{}\" are not supported (MX "
                      "activations, act_data_type mx_fp, are)",
                      copy.where.ToString(), *act_type));
    }
  } else if (format != "auto_round:auto_gptq" && format != "auto_round:auto_awq") {
    return Unsupported(fmt::format(
        "{}: AutoRound packing_format \"{}\" is recognised but not supported; quantpath reads "
        "auto_round:auto_gptq and auto_round:auto_awq",
        copy.where.ToString(), format));
  }
  if (packing.gptq) {
    plan.notes.push_back(
        "auto_round:auto_gptq packing read as GPTQ v1 (zero points stored minus "
        "one)");
  }
  Action base = LayerAction(bits, group_size, sym, packing, d, "the AutoRound base config");
  if (base.kind == ActionKind::kFail) {
    return InvalidInput(fmt::format("{}: {}", copy.where.ToString(), base.message));
  }

  if (d.reads_skip_lists) {
    QP_ASSIGN_OR_RETURN(std::optional<std::vector<ListEntry>> not_convert,
                        ReadEntryList(*copy.json, "modules_to_not_convert", copy.file()));
    if (not_convert && !not_convert->empty()) {
      RuleGroup group{"modules_to_not_convert", {}, FusedPolicy::kLegsMustAgree, ""};
      for (const ListEntry& e : *not_convert) {
        Action skip{ActionKind::kSkip, std::nullopt,
                    fmt::format("modules_to_not_convert \"{}\": kept in 16 bits", e.value), ""};
        QP_ASSIGN_OR_RETURN(Rule rule, MakeRule(MatchKind::kExact, e.value, RegexFlavor::kPythonRe,
                                                kAllKinds, std::move(skip), e.where));
        group.rules.push_back(std::move(rule));
      }
      plan.groups.push_back(std::move(group));
    }
  }

  if (const Json* extra = copy.json->FindNonNull("extra_config")) {
    if (!extra->is_object()) {
      return InvalidInput(fmt::format("{}: expected an object of layer names for extra_config",
                                      Where(copy.file(), *extra)));
    }
    RuleGroup group{
        "extra_config",
        {},
        d.extra_fused,
        d.engine_texts
            ? fmt::format("ValueError: Fused module '{}' requires consistent quant config for {}",
                          kSitePathPlaceholder, kLegNamesPlaceholder)
            : "the shards of a fused layer have different extra_config settings"};
    for (const Json::Member& m : extra->members()) {
      if (!m.second.is_object()) {
        return InvalidInput(
            fmt::format("{}: expected an object of overrides", Where(copy.file(), m.second)));
      }
      QP_ASSIGN_OR_RETURN(std::optional<int64_t> b, OptionalInt(m.second, "bits", copy.file()));
      QP_ASSIGN_OR_RETURN(std::optional<int64_t> g,
                          OptionalInt(m.second, "group_size", copy.file()));
      QP_ASSIGN_OR_RETURN(std::optional<bool> s, OptionalBool(m.second, "sym", copy.file()));
      Provenance where = ProvenanceOf(copy.file(), m.second);
      Action action = LayerAction(b.value_or(bits), g.value_or(group_size), s.value_or(sym),
                                  packing, d, fmt::format("extra_config \"{}\"", m.first));
      if (action.kind == ActionKind::kFail && !d.engine_texts) {
        return InvalidInput(fmt::format("{}: {}", where.ToString(), action.message));
      }
      QP_ASSIGN_OR_RETURN(Rule rule, MakeRule(MatchKind::kExact, m.first, RegexFlavor::kPythonRe,
                                              kAllKinds, std::move(action), where));
      group.rules.push_back(std::move(rule));
    }
    plan.groups.push_back(std::move(group));
  }

  Provenance blocks_where = copy.where;
  QP_ASSIGN_OR_RETURN(std::optional<std::vector<std::string>> blocks,
                      ReadBlocks(copy, &blocks_where));
  if (blocks) {
    RuleGroup group{"to_quant_block_names", {}, FusedPolicy::kFusedNameOnly, ""};
    Action skip{ActionKind::kSkip, std::nullopt, "outside the quantized blocks",
                d.engine_texts ? "UnquantizedLinearMethod" : ""};
    QP_ASSIGN_OR_RETURN(Rule rule,
                        MakeNoneOfRule(*blocks, "", d.block_tail,
                                       KindBit(SiteKind::kLinear) | KindBit(SiteKind::kMoe),
                                       std::move(skip), blocks_where));
    group.rules.push_back(std::move(rule));
    plan.groups.push_back(std::move(group));
  }
  if (d.reads_skip_lists) {
    if (const Json* mib = copy.json->FindNonNull("modules_in_block_to_quantize")) {
      plan.notes.push_back(
          fmt::format("{}: read by AutoRound only for GPTQ exports; quantpath does not apply it to "
                      "auto-round configs",
                      Where(copy.file(), *mib)));
    }
  }
  plan.default_action = base;
  plan.default_action.message = "auto-round " + base.message.str();
  plan.linear = KindPolicy::kRules;
  plan.moe = KindPolicy::kRules;
  // The LM head is quantized only when a rule names it (extra_config), in both readers.
  plan.lm_head = KindPolicy::kRulesOnly;
  NoteOtherFields(copy, kReadKeys, &plan.notes);
  return plan;
}

class AutoRoundFormat final : public Importer {
 public:
  std::string_view name() const override { return "auto-round"; }
  std::vector<std::string_view> aliases() const override {
    return {"auto_round", "intel/auto-round"};
  }
  bool Detect(const ConfigSources& sources) const override {
    Result<std::optional<FamilyConfig>> found =
        FindFamilyConfig(sources, kStandaloneFiles, AcceptsAutoRound);
    return !found.ok() || found->has_value();
  }
  Result<QuantPlan> BuildPlan(const ConfigSources& sources, const Dialect& dialect) const override {
    QP_ASSIGN_OR_RETURN(std::optional<FamilyConfig> found,
                        FindFamilyConfig(sources, kStandaloneFiles, AcceptsAutoRound));
    if (!found) {
      return InvalidInput(
          fmt::format("no AutoRound description in {}", Join(sources.FileNames(), ", ")));
    }
    std::optional<std::string> method = QuantMethod(*found->primary.json);
    if (method && IsAutoRoundMethod(*method)) return BuildAutoRoundPlan(dialect, *found);
    Result<QuantPlan> plan = *method == "awq" ? BuildAwqPlan(sources, dialect, *found)
                                              : BuildGptqPlan(sources, dialect, *found);
    if (plan.ok()) {
      plan->notes.push_back(fmt::format(
          "written by AutoRound; {} reads it as quant_method \"{}\", so AutoRound's own fields "
          "(to_quant_block_names, extra_config, …) decide nothing",
          dialect.name, *method));
    }
    return plan;
  }
};

}  // namespace

const Importer* AutoRoundImporter() {
  static const AutoRoundFormat kImporter;
  return &kImporter;
}

}  // namespace quantpath
