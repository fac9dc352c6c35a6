// bitsandbytes: `quantization_config` with quant_method "bitsandbytes" (transformers'
// BitsAndBytesConfig serialised into config.json).
//
// Goals: 4-bit NF4 / FP4 (one absmax per 64-value block; bitsandbytes keeps the block size in each
// tensor's quant_state, so a config-only plan states the assumed 64), double quantization
// (LoadFacts.double_quant), 8-bit LLM.int8 (int8 per output channel), and llm_int8_skip_modules:
//   native — transformers' bitsandbytes quantizer (quantizers/quantizer_bnb_4bit.py,
//     integrations/bitsandbytes.py replace_with_bnb_linear): every nn.Linear whose Hugging Face
//     name passes should_convert_module (AppendTransformersSkipRules); without
//     llm_int8_skip_modules the output embedding (lm_head) is kept, with the list only what it
//     names is kept.
//   vllm — BitsAndBytesConfig (vllm/model_executor/layers/quantization/bitsandbytes.py, recorded
//     in oracle/ at 5a6541db; ENGINES.md 3.5): LinearBase only, is_layer_skipped_bnb = an entry
//     equal to one dotted component of the execution name or to a leading dotted path
//     (MatchKind::kLeadingPath), no shard expansion; lm_head, experts and attention get no method.
//   sglang, sglang@0.5.23 — sglang/srt/layers/quantization/bitsandbytes.py (read at 50e143a6,
//     unchanged in 0.5.23): the same helper for LinearBase, and BitsAndBytesMoEMethod for every
//     FusedMoE, whose create_weights raises NotImplementedError for 8-bit.
//   vllm@0.33 — vLLM 0.33.0 no longer registers a bitsandbytes method (QUANTIZATION_METHODS in
//     vllm/model_executor/layers/quantization/__init__.py): ModelConfig._verify_quantization
//     raises "Unknown quantization method: bitsandbytes".
// bnb_4bit_compute_dtype (the matmul dtype) and bnb_4bit_quant_storage (the container the packed
// bytes are stored in) are kept apart in the notes; neither changes a decision, except that vLLM
// rejects a storage other than uint8.
// Non-goals: tensor layouts beyond naming them (kBnb4bit / kBnb8bit).
#include <array>
#include <utility>

#include "fmt/format.h"
#include "quantpath/importers.h"
#include "src/importers/common.h"
#include "src/importers/engine_methods.h"
#include "src/importers/gptq_family.h"

namespace quantpath {
namespace {

// bitsandbytes' default (and only common) 4-bit block size.
constexpr int64_t kAssumedBlockSize = 64;

constexpr std::string_view kReadKeys[] = {
    "quant_method",           "load_in_4bit",           "load_in_8bit",
    "_load_in_4bit",          "_load_in_8bit",          "bnb_4bit_quant_type",
    "bnb_4bit_compute_dtype", "bnb_4bit_quant_storage", "bnb_4bit_use_double_quant",
    "llm_int8_threshold",     "llm_int8_skip_modules"};

struct BnbDialect {
  bool transformers_skip;  // should_convert_module on HF names; else is_layer_skipped_bnb
  FusedPolicy fused;
  SiteKindSet skip_kinds;
  bool lm_head_by_skip_list;  // transformers converts the head unless a default skip keeps it
  bool moe_quantized;
  bool moe_8bit_fails;         // SGLang's BitsAndBytesMoEMethod builds 4-bit experts only
  bool both_widths_error;      // transformers' BitsAndBytesConfig refuses 4-bit and 8-bit at once
  bool storage_must_be_uint8;  // vLLM's from_config check
  bool unknown_method;         // the engine has no bitsandbytes method at all
  std::string_view quantized_detail, unquantized_detail, moe_detail;
};

const BnbDialect& DialectFor(const Dialect& dialect) {
  static const BnbDialect kNative{.transformers_skip = true,
                                  .fused = FusedPolicy::kLegsMustAgree,
                                  .skip_kinds = KindBit(SiteKind::kLinear) |
                                                KindBit(SiteKind::kLmHead) |
                                                KindBit(SiteKind::kMoe),
                                  .lm_head_by_skip_list = true,
                                  .moe_quantized = true,
                                  .moe_8bit_fails = false,
                                  .both_widths_error = true,
                                  .storage_must_be_uint8 = false,
                                  .unknown_method = false,
                                  .quantized_detail = "",
                                  .unquantized_detail = "",
                                  .moe_detail = ""};
  static const BnbDialect kVllm{.transformers_skip = false,
                                .fused = FusedPolicy::kFusedNameOnly,
                                .skip_kinds = KindBit(SiteKind::kLinear),
                                .lm_head_by_skip_list = false,
                                .moe_quantized = false,
                                .moe_8bit_fails = false,
                                .both_widths_error = false,
                                .storage_must_be_uint8 = true,
                                .unknown_method = false,
                                .quantized_detail = "BitsAndBytesLinearMethod",
                                .unquantized_detail = "UnquantizedLinearMethod",
                                .moe_detail = ""};
  static const BnbDialect kVllm033{.transformers_skip = false,
                                   .fused = FusedPolicy::kFusedNameOnly,
                                   .skip_kinds = 0,
                                   .lm_head_by_skip_list = false,
                                   .moe_quantized = false,
                                   .moe_8bit_fails = false,
                                   .both_widths_error = false,
                                   .storage_must_be_uint8 = false,
                                   .unknown_method = true,
                                   .quantized_detail = "",
                                   .unquantized_detail = "",
                                   .moe_detail = ""};
  // SGLang gives every FusedMoE BitsAndBytesMoEMethod, without consulting the skip list.
  static const BnbDialect kSglang{.transformers_skip = false,
                                  .fused = FusedPolicy::kFusedNameOnly,
                                  .skip_kinds = KindBit(SiteKind::kLinear),
                                  .lm_head_by_skip_list = false,
                                  .moe_quantized = true,
                                  .moe_8bit_fails = true,
                                  .both_widths_error = false,
                                  .storage_must_be_uint8 = true,
                                  .unknown_method = false,
                                  .quantized_detail = "BitsAndBytesLinearMethod",
                                  .unquantized_detail = "UnquantizedLinearMethod",
                                  .moe_detail = "BitsAndBytesMoEMethod"};
  // sglang@0.5.23 reads bitsandbytes as the helper recording does.
  static const std::array<DialectRow<BnbDialect>, 5> kRows = {{
      {DialectId::kNative, kNative},
      {DialectId::kVllmHelpers, kVllm},
      {DialectId::kSglangHelpers, kSglang},
      {DialectId::kVllm033, kVllm033},
      {DialectId::kSglang0523, kSglang},
  }};
  return RowFor(dialect, kRows);
}

bool AcceptsBnb(const Json& config, bool /*standalone*/) {
  return QuantMethod(config) == "bitsandbytes";
}

// A boolean under its public name, else under the serialised private copy ("_load_in_4bit").
Result<std::optional<bool>> Flag(const ConfigCopy& copy, std::string_view key) {
  QP_ASSIGN_OR_RETURN(std::optional<bool> v, OptionalBool(*copy.json, key, copy.file()));
  if (v) return v;
  return OptionalBool(*copy.json, "_" + std::string(key), copy.file());
}

Result<QuantScheme> FourBitScheme(const ConfigCopy& copy, std::vector<std::string>* notes) {
  QP_ASSIGN_OR_RETURN(std::optional<std::string> type,
                      OptionalString(*copy.json, "bnb_4bit_quant_type", copy.file()));
  QP_ASSIGN_OR_RETURN(std::optional<bool> double_quant,
                      OptionalBool(*copy.json, "bnb_4bit_use_double_quant", copy.file()));
  // Both transformers and vLLM default to fp4.
  std::string t = type.value_or("fp4");
  QuantScheme scheme;
  if (t == "nf4") {
    scheme.weight.dtype = QDType::kNF4;
  } else if (t == "fp4") {
    scheme.weight.dtype = QDType::kFP4;
  } else {
    const Json* at = copy.json->Find("bnb_4bit_quant_type");
    return InvalidInput(
        fmt::format("{}: bnb_4bit_quant_type must be \"nf4\" or \"fp4\", found \"{}\"",
                    Where(copy.file(), *at), t));
  }
  scheme.weight.granularity = Granularity::kGroup;
  scheme.weight.group_size = kAssumedBlockSize;
  scheme.weight.load.layout = SourceLayout::kBnb4bit;
  scheme.weight.load.double_quant = double_quant.value_or(false);
  notes->push_back(fmt::format(
      "block size {} assumed: bitsandbytes keeps it in each tensor's quant_state, not in "
      "config.json",
      kAssumedBlockSize));
  QP_ASSIGN_OR_RETURN(std::optional<std::string> compute,
                      OptionalString(*copy.json, "bnb_4bit_compute_dtype", copy.file()));
  QP_ASSIGN_OR_RETURN(std::optional<std::string> storage,
                      OptionalString(*copy.json, "bnb_4bit_quant_storage", copy.file()));
  notes->push_back(fmt::format(
      "bnb_4bit_compute_dtype {}: the dtype the 4-bit weights are dequantized to for the matmul",
      compute.value_or("float32 (default)")));
  notes->push_back(
      fmt::format("bnb_4bit_quant_storage {}: the container dtype the packed bytes are stored in",
                  storage.value_or("uint8 (default)")));
  return scheme;
}

Result<QuantScheme> EightBitScheme(const ConfigCopy& copy, std::vector<std::string>* notes) {
  QP_ASSIGN_OR_RETURN(std::optional<double> threshold,
                      OptionalNumber(*copy.json, "llm_int8_threshold", copy.file()));
  QuantScheme scheme;
  scheme.weight.dtype = QDType::kINT8;
  scheme.weight.granularity = Granularity::kPerChannel;
  scheme.weight.load.layout = SourceLayout::kBnb8bit;
  notes->push_back(fmt::format(
      "LLM.int8: activation columns with a magnitude above llm_int8_threshold {} are multiplied "
      "in 16 bits, the rest in int8",
      threshold.value_or(6.0)));
  return scheme;
}

class BitsAndBytesFormat final : public Importer {
 public:
  std::string_view name() const override { return "bitsandbytes"; }
  bool Detect(const ConfigSources& sources) const override {
    Result<std::optional<FamilyConfig>> found = FindFamilyConfig(sources, {}, AcceptsBnb);
    return !found.ok() || found->has_value();
  }
  Result<QuantPlan> BuildPlan(const ConfigSources& sources, const Dialect& dialect) const override;
  Status Refine(const SmallTensors& tensors, QuantPlan* plan) const override;
};

// The `blocksize` of a serialized 4-bit quant state (QuantState.as_dict(packed=True): a JSON
// object stored as U8 bytes), or nullopt when the tensor is not one: a malformed state is its
// own layer's load error, not the plan's.
std::optional<int64_t> QuantStateBlockSize(const TensorView& view) {
  if (view.info->dtype != StDtype::kU8 || view.info->shape.size() != 1) return std::nullopt;
  const std::string_view text(reinterpret_cast<const char*>(view.bytes.data()), view.bytes.size());
  Result<Json> state = ParseJson(text, view.file);
  if (!state.ok() || !state->is_object()) return std::nullopt;
  const Json* block = state->Find("blocksize");
  if (block == nullptr || !block->is_int() || block->int_value() <= 0) return std::nullopt;
  return block->int_value();
}

// bitsandbytes' 4-bit block size is the checkpoint's to say (each quant_state), so every 4-bit
// scheme takes it from the first state that gives one instead of the 64 config.json implies.
Status BitsAndBytesFormat::Refine(const SmallTensors& tensors, QuantPlan* plan) const {
  bool four_bit = false;
  plan->ForEachScheme([&](const QuantScheme& s) {
    four_bit = four_bit || s.weight.load.layout == SourceLayout::kBnb4bit;
  });
  if (!four_bit) return {};
  QP_ASSIGN_OR_RETURN(const std::vector<std::string> names, tensors.Names());
  for (const std::string& name : names) {
    if (name.find(".weight.quant_state.bitsandbytes__") == std::string::npos) continue;
    Result<TensorView> view = tensors.Read(name);
    if (!view.ok()) continue;
    const std::optional<int64_t> block = QuantStateBlockSize(*view);
    if (!block) continue;
    plan->ForEachScheme([&](QuantScheme& s) {
      if (s.weight.load.layout == SourceLayout::kBnb4bit) s.weight.group_size = *block;
    });
    plan->notes.push_back(
        fmt::format("block size {} read from {}, replacing the assumed one", *block, name));
    return {};
  }
  return {};
}

Result<QuantPlan> BitsAndBytesFormat::BuildPlan(const ConfigSources& sources,
                                                const Dialect& dialect) const {
  QP_ASSIGN_OR_RETURN(std::optional<FamilyConfig> found, FindFamilyConfig(sources, {}, AcceptsBnb));
  if (!found) return InvalidInput("config.json has no bitsandbytes quantization_config");
  const BnbDialect& d = DialectFor(dialect);
  const ConfigCopy& copy = found->primary;
  if (d.unknown_method) {
    return InvalidInput(fmt::format(
        "{}: ValueError: Unknown quantization method: bitsandbytes. Must be one of {}. ({} has "
        "no bitsandbytes support)",
        copy.where.ToString(), RegisteredMethodsText(dialect, sources.launch().platform),
        dialect.name));
  }
  QuantPlan plan;
  plan.quant_method = "bitsandbytes";
  plan.sources.push_back(copy.where);

  QP_ASSIGN_OR_RETURN(std::optional<bool> four, Flag(copy, "load_in_4bit"));
  QP_ASSIGN_OR_RETURN(std::optional<bool> eight, Flag(copy, "load_in_8bit"));
  if (d.both_widths_error && four.value_or(false) && eight.value_or(false)) {
    return InvalidInput(
        fmt::format("{}: load_in_4bit and load_in_8bit are both true, but only one "
                    "can be used",
                    copy.where.ToString()));
  }
  QP_ASSIGN_OR_RETURN(std::optional<std::string> storage,
                      OptionalString(*copy.json, "bnb_4bit_quant_storage", copy.file()));
  if (d.storage_must_be_uint8 && storage && *storage != "uint8") {
    return InvalidInput(fmt::format("{}: ValueError: Unsupported bnb_4bit_quant_storage: {}",
                                    copy.where.ToString(), *storage));
  }
  // Neither flag set reads as 4-bit in both transformers (AutoHfQuantizer) and vLLM.
  QuantScheme scheme;
  if (eight.value_or(false)) {
    QP_ASSIGN_OR_RETURN(scheme, EightBitScheme(copy, &plan.notes));
  } else {
    QP_ASSIGN_OR_RETURN(scheme, FourBitScheme(copy, &plan.notes));
  }
  plan.default_action = {ActionKind::kQuantize, scheme,
                         fmt::format("bitsandbytes {} applies to every linear layer no rule names",
                                     scheme.CanonicalName()),
                         std::string(d.quantized_detail)};

  QP_ASSIGN_OR_RETURN(std::optional<std::vector<ListEntry>> skip_entries,
                      ReadEntryList(*copy.json, "llm_int8_skip_modules", copy.file()));
  if (skip_entries && !skip_entries->empty()) {
    RuleGroup group;
    group.name = "llm_int8_skip_modules";
    group.fused = d.fused;
    group.disagree_message = "the shards of a fused layer disagree on llm_int8_skip_modules";
    SkipList list{"llm_int8_skip_modules", std::move(*skip_entries)};
    if (d.transformers_skip) {
      std::vector<SkipOutcome> outcomes = {{d.skip_kinds, std::string(d.unquantized_detail)}};
      QP_RETURN_IF_ERROR(
          AppendTransformersSkipRules(list, outcomes, RegexFlavor::kPythonRe, &group.rules));
    } else {
      for (const ListEntry& entry : list.entries) {
        Action skip{ActionKind::kSkip, std::nullopt,
                    fmt::format("llm_int8_skip_modules \"{}\" is a component or leading path of "
                                "the name",
                                entry.value),
                    std::string(d.unquantized_detail)};
        QP_ASSIGN_OR_RETURN(Rule rule,
                            MakeRule(MatchKind::kLeadingPath, entry.value, RegexFlavor::kPythonRe,
                                     d.skip_kinds, std::move(skip), entry.where));
        group.rules.push_back(std::move(rule));
      }
    }
    plan.groups.push_back(std::move(group));
  }
  if (d.moe_quantized && !d.moe_detail.empty()) {
    Action experts = plan.default_action;
    experts.detail = std::string(d.moe_detail);
    // create_weights calls _create_weights_8bit, which raises a bare NotImplementedError.
    if (eight.value_or(false) && d.moe_8bit_fails) {
      experts = {ActionKind::kFail, std::nullopt,
                 "NotImplementedError: BitsAndBytesMoEMethod has no 8-bit experts "
                 "(_create_weights_8bit)",
                 std::string(d.moe_detail)};
    }
    QP_ASSIGN_OR_RETURN(RuleGroup group,
                        KindMethodGroup(KindBit(SiteKind::kMoe), std::move(experts), copy.where));
    plan.groups.push_back(std::move(group));
  }
  plan.linear = KindPolicy::kRules;
  plan.lm_head =
      d.lm_head_by_skip_list && skip_entries ? KindPolicy::kRules : KindPolicy::kUnquantized;
  plan.moe = d.moe_quantized ? KindPolicy::kRules : KindPolicy::kUnquantized;
  NoteOtherFields(copy, kReadKeys, &plan.notes);
  return plan;
}

}  // namespace

const Importer* BitsAndBytesImporter() {
  static const BitsAndBytesFormat kImporter;
  return &kImporter;
}

}  // namespace quantpath
