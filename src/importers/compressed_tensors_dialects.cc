// compressed-tensors dialects: which matchers and policies reproduce the library (native), vLLM and
// SGLang as recorded in oracle/cases/ (the helper dialects), and the releases since vLLM 0.33.0 and
// SGLang 0.5.23 (oracle/releases/*/cases/). One row per dialect; the plan builder reads only this
// table.
//
// Goals: every per-dialect choice as data, with the engines' own error texts. Non-goals: the
// engines' device-dependent scheme classes (only the MoE method's checks that do not depend on the
// device are reproduced, on a CUDA device of compute capability 9.0).
// Documentation followed: vLLM 0.33.0 compressed_tensors/compressed_tensors.py, utils.py,
// compressed_tensors_moe/compressed_tensors_moe.py (get_moe_method),
// quantization/utils/config_utils.py (find_matching_patterns); SGLang 0.5.23
// compressed_tensors/compressed_tensors.py (get_moe_scheme, get_lm_head_scheme), utils.py,
// schemes/compressed_tensors_wNa16_moe.py; the recorded rows as in compressed_tensors_targets.cc.
#include <array>
#include <utility>

#include "fmt/format.h"
#include "src/importers/compressed_tensors.h"

namespace quantpath::ct {
namespace {

// The engines' text for fused shards that disagree on `ignore` in the recorded code (SGLang keeps
// the word "vLLM").
constexpr std::string_view kRecordedShardsText =
    "ValueError: Found a different quantization schemes for {legs} in {prefix}. vLLM requires "
    "all to use the same scheme.";

// get_moe_method / get_moe_scheme: expert 0's three projections must resolve to equal dicts.
constexpr std::string_view kExpertsDisagree =
    "ValueError: All MoE projections need to have same quantization scheme but found multiple";

// Readings of a config group: the library validates; the engines read the raw dict.
constexpr GroupReading kLibraryReading = {
    .validate_scheme = true, .presets = true, .weights_required = false, .parse_output = true};
constexpr GroupReading kEngineReading = {
    .validate_scheme = false, .presets = false, .weights_required = true, .parse_output = false};

const Action kVllmNoTarget{ActionKind::kSkip, std::nullopt,
                           "no target matches: vLLM falls back to UnquantizedLinearMethod",
                           "UnquantizedLinearMethod"};
const Action kSglangNoTarget{ActionKind::kFail, std::nullopt,
                             "ValueError: Unable to find matching target for {prefix} in the "
                             "compressed-tensors config.",
                             ""};

// The helper recordings' rows; the releases are derived from them below.
const CtDialect kVllmHelpers{
    .engine = Engine::kVllm,
    .regex = RegexFlavor::kPythonRegexModule,
    .ignore_shape = IgnoreShape::kListedFusedName,
    .ignore_plain = MatchKind::kExact,
    .ignore_plain_words = "exact name",
    .ignore_classes = false,
    .ignore_disagree = kRecordedShardsText,
    .ignore_detail = "UnquantizedLinearMethod",
    .lm_head_unquantized_detail = "",
    .target_order = TargetOrder::kNameClassFused,
    .target_fused = FusedPolicy::kAllLegsFirstRule,
    .target_disagree = "",
    .target_detail = "CompressedTensorsLinearMethod[target={0} group={1}]",
    .lm_head_by_name_only = false,
    .no_target = kVllmNoTarget,
    .reading = kEngineReading,
    .drop_attention_groups = true,
    .moe_alias = "FusedMoE",
    .experts_through_legs = false,
    .experts = {},
    .sparsity_fails = true,
    .kv = KvPolicy::kEngineMethod,
    .attention_detail = "CompressedTensorsKVCacheMethod",
    .lm_head = KindPolicy::kRules,
    .router = KindPolicy::kUnquantized,
    .embedding = KindPolicy::kUnquantized,
};
const CtDialect kSglangHelpers{
    .engine = Engine::kSglang,
    .regex = RegexFlavor::kPythonRe,
    .ignore_shape = IgnoreShape::kSglangShouldIgnore,
    .ignore_plain = MatchKind::kSubstringIgnoreCase,
    .ignore_plain_words = "case-insensitive substring",
    .ignore_classes = false,
    .ignore_disagree = kRecordedShardsText,
    .ignore_detail = "Unquantized: helpers: should_ignore_layer=True",
    .lm_head_unquantized_detail = "",
    .target_order = TargetOrder::kNameClassFused,
    .target_fused = FusedPolicy::kAllLegsFirstRule,
    .target_disagree = "",
    .target_detail = "helpers: find_matched_target={0} (group={1})",
    .lm_head_by_name_only = false,
    .no_target = kSglangNoTarget,
    .reading = kEngineReading,
    .drop_attention_groups = false,
    .moe_alias = "FusedMoE",
    .experts_through_legs = false,
    .experts = {},
    .sparsity_fails = false,
    .kv = KvPolicy::kEngineMethod,
    .attention_detail = "CompressedTensorsKVCacheMethod",
    .lm_head = KindPolicy::kRules,
    .router = KindPolicy::kUnquantized,
    .embedding = KindPolicy::kUnquantized,
};

// vLLM 0.33.0 differs from the recorded code in: find_matching_patterns tries every entry (exact
// or regex) on a fused name before its shards; targets are tried by name, then through the fused
// shards, then by class; experts layers are RoutedExperts and are looked up through expert 0's
// projections.
CtDialect Vllm033() {
  CtDialect d = kVllmHelpers;
  d.ignore_shape = IgnoreShape::kFusedNameThenLegs;
  d.ignore_disagree =
      "ValueError: Found different quantization schemes for the shards of {prefix}. vLLM requires "
      "all to use the same scheme.";
  // An unquantized ParallelLMHead falls through to the embedding branch, which returns None.
  d.lm_head_unquantized_detail = "get_quant_method returned None";
  d.target_order = TargetOrder::kNameFusedClass;
  // get_quant_method tests `Attention`: MLAAttention gets no KV-cache method.
  d.attention_classes = &VllmAttentionClasses();
  d.moe_alias = "RoutedExperts";
  d.experts_through_legs = true;
  d.experts = {.disagree = kExpertsDisagree,
               .ignored_detail = "UnquantizedFusedMoEMethod",
               .no_target = {ActionKind::kSkip, std::nullopt,
                             "no target matches expert 0's projections: vLLM falls back to "
                             "UnquantizedFusedMoEMethod",
                             "UnquantizedFusedMoEMethod"},
               .method_class = "",
               .detail = "{2}[target={0} group={1}]",
               .wna16_global_format = false,
               .wna16_error =
                   "ValueError: For Fused MoE layers, only format: pack-quantized "
                   "and bits: [4, 8] is supported but got format: pack-quantized "
                   "and bits: {1}"};
  return d;
}

// SGLang 0.5.23 differs from the recorded code in: check_equal_or_regex_match takes a plain entry
// as a dotted suffix; the LM head is matched by name only (get_lm_head_scheme) and is None when
// nothing names it; experts layers are looked up through expert 0's projections, and the WNA16
// MoE scheme checks the config's top-level format.
CtDialect Sglang0523() {
  CtDialect d = kSglangHelpers;
  d.ignore_plain = MatchKind::kDottedSuffix;
  d.ignore_plain_words = "exact name or dotted suffix";
  d.ignore_disagree =
      "ValueError: Found different quantization schemes for {legs} in {prefix}. SGLang requires "
      "all to use the same scheme.";
  d.ignore_detail = "UnquantizedLinearMethod";
  d.lm_head_unquantized_detail = "get_quant_method returned None";
  d.target_detail = "CompressedTensorsLinearMethod[target={0} group={1}]";
  d.lm_head_by_name_only = true;
  d.kv = KvPolicy::kEngineMethodWhenSupported;
  d.experts_through_legs = true;
  // get_moe_scheme raises for the first projection no target reaches: gate_proj unless an
  // earlier one was ignored.
  d.experts = {.disagree = kExpertsDisagree,
               .ignored_detail = "UnquantizedFusedMoEMethod",
               .no_target = {ActionKind::kFail, std::nullopt,
                             "ValueError: Unable to find matching target for "
                             "{prefix}.0.gate_proj in the compressed-tensors config.",
                             ""},
               .method_class = "CompressedTensorsFusedMoEMethod",
               .detail = "{2}[target={0} group={1}]",
               .wna16_global_format = true,
               .wna16_error =
                   "ValueError: ('For Fused MoE layers, only ', 'pack-quantized ', "
                   "'is supported for the following bits: ', '[4, 8]')"};
  return d;
}

const std::array<DialectRow<CtDialect>, 5> kDialects = {{
    {DialectId::kNative,
     {
         .engine = Engine::kNative,
         .regex = RegexFlavor::kPythonRe,
         .ignore_shape = IgnoreShape::kLegs,
         .ignore_plain = MatchKind::kExact,
         .ignore_plain_words = "exact name",
         .ignore_classes = true,
         .ignore_disagree = "compressed-tensors ignores some legs of this fused layer and not "
                            "others; one fused layer cannot hold both precisions",
         .ignore_detail = "ignored",
         .lm_head_unquantized_detail = "",
         .target_order = TargetOrder::kLibrary,
         .target_fused = FusedPolicy::kLegsMustAgree,
         .target_disagree = "the legs of this fused layer fall in config groups with different "
                            "schemes; one fused layer cannot hold both",
         .target_detail = "config group {1} (target {0})",
         .lm_head_by_name_only = false,
         .no_target = {ActionKind::kSkip, std::nullopt,
                       "no target matches: compressed-tensors leaves the module as it is",
                       "not targeted"},
         .reading = kLibraryReading,
         .drop_attention_groups = false,
         .moe_alias = "",
         .experts_through_legs = false,
         .experts = {},
         .sparsity_fails = false,
         .kv = KvPolicy::kSchemeOnly,
         .attention_detail = "",
         .lm_head = KindPolicy::kRules,
         .router = KindPolicy::kRules,
         .embedding = KindPolicy::kRules,
     }},
    {DialectId::kVllmHelpers, kVllmHelpers},
    {DialectId::kSglangHelpers, kSglangHelpers},
    {DialectId::kVllm033, Vllm033()},
    {DialectId::kSglang0523, Sglang0523()},
}};

// WNA16_SUPPORTED_BITS of both engines.
bool Wna16Bits(int64_t bits) { return bits == 4 || bits == 8; }

// _is_wNa16_group_channel: static channel or group weights, no input activations.
bool IsWna16(const Group& g) {
  return g.weights && !g.input && g.weights->dynamic == Dynamic::kStatic &&
         (g.weights->strategy == Strategy::kChannel || g.weights->strategy == Strategy::kGroup);
}

// vLLM get_moe_method's choice by scheme, for the schemes quantpath names (details only: the
// decision is the same for every quantizing method).
std::string_view VllmMoeMethodClass(const Group& g) {
  if (IsWna16(g)) return "CompressedTensorsWNA16MoEMethod";
  const Args& w = *g.weights;
  if (w.is_float && w.num_bits == 4 && w.strategy == Strategy::kTensorGroup) {
    return "CompressedTensorsW4A4Nvfp4MoEMethod";
  }
  if (g.input && w.num_bits == 8 && g.input->num_bits == 8) {
    if (w.is_float && g.input->is_float) return "CompressedTensorsW8A8Fp8MoEMethod";
    if (!w.is_float && !g.input->is_float) return "CompressedTensorsW8A8Int8MoEMethod";
  }
  return "CompressedTensorsMoEMethod";
}

}  // namespace

const CtDialect& DialectFor(const Dialect& dialect) { return RowFor(dialect, kDialects); }

Action ExpertsAction(const Group& g, const Action& linear,
                     const std::optional<std::string>& global_format, const CtDialect& dialect) {
  const CtExperts& e = dialect.experts;
  if (linear.kind != ActionKind::kQuantize || !g.weights) {
    Action a = linear;
    a.detail = std::string(e.ignored_detail);
    return a;
  }
  if (IsWna16(g)) {
    std::string format = e.wna16_global_format ? global_format.value_or("None")
                                               : g.format.value_or(global_format.value_or("None"));
    if (format != "pack-quantized" || !Wna16Bits(g.weights->num_bits)) {
      return {ActionKind::kFail, std::nullopt,
              fmt::format(fmt::runtime(e.wna16_error), format, g.weights->num_bits), ""};
    }
  }
  Action a = linear;
  a.detail = e.method_class.empty() ? VllmMoeMethodClass(g) : e.method_class;
  return a;
}

}  // namespace quantpath::ct
