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
//   vllm@0.33 — auto_awq.py AutoAWQConfig (awq, awq_marlin, auto_awq and marlin all resolve to
//     it): from_config rejects any width but 4; is_layer_skipped(match_mode="substring") with the
//     packed mapping, which honours a listed fused name first and otherwise needs every shard to
//     agree; the same substring test on RoutedExperts (UnquantizedFusedMoEMethod); lm_head read.
//     Not reproduced: maybe_update_config, which fills an empty modules_to_not_convert from the
//     checkpoint's unquantized tensors (the cases have no checkpoint).
//   sglang@0.5.23 — awq/awq.py: a Marlin-compatible checkpoint (quant_method "awq", bits,
//     group_size and zero_point present and Marlin-supported) runs AWQMarlinConfig, which returns
//     AWQLinearMethod for LinearBase and for the LM head when lm_head is true, and AWQMoEMethod
//     for FusedMoE; any other checkpoint runs AWQConfig, which quantizes LinearBase only (None for
//     FusedMoE and the LM head). Both skip with is_layer_skipped_awq, a plain substring test on
//     the execution name without shard expansion ("mlp.gate" also skips gate_up_proj). Not
//     reproduced: `--quantization awq` on a Marlin-compatible checkpoint (the importer is not told
//     the user's method name), which keeps AWQConfig.
// Non-goals: tensor layouts beyond naming them; kernels.
#include "src/importers/awq.h"

#include <array>
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

// Everything that differs between dialects, as data.
struct AwqDialect {
  SkipStyle skip;
  FusedPolicy fused;
  SiteKindSet skip_kinds;  // decided by the skip list with `unquantized_detail`
  // When set, MoE sites are decided by the skip list too, with this detail.
  std::string_view moe_skip_detail;
  bool reads_lm_head;           // the engine's Marlin config reads `lm_head`
  bool engine_required_fields;  // get_from_keys: bits, group_size and zero_point must be present
  // Marlin compatibility is judged on the config's own "bits" / "group_size" keys (SGLang's
  // is_awq_marlin_compatible reads no legacy w_bit / q_group_size).
  bool marlin_needs_current_keys;
  // The --quantization name with which override_quantization_method keeps the plain AWQ method
  // for a Marlin-compatible config (the user asked for it explicitly); empty when none does.
  std::string_view bypasses_marlin;
  // The plain AWQ kernel quantizes LinearBase only: MoE and the LM head get no method.
  bool plain_linear_only;
  // The plain AWQ method accepts only float16 models (SGLang's AWQConfig off NPU).
  bool plain_fp16_only;
  std::string_view bits_error;  // {} = the width found; empty = the generic text
  std::string_view unquantized_detail, marlin_linear, plain_linear;
  std::string_view moe_method;  // empty: MoE sites get the linear method's detail
  bool has_marlin = true;       // off CUDA, SGLang's Marlin check fails: the plain AWQ config
  // The kernel path the platform's config attaches (layer.scheme), which the details name.
  std::string_view linear_scheme = {}, moe_scheme = {};
  // vLLM off CUDA: override_quantization_method never answers awq_marlin, so a user's
  // --quantization awq_marlin disagrees with the config's "awq".
  bool refuses_marlin_name = false;
};

// "AWQLinearMethod[scheme=AWQIntelAMXLinearScheme]", or the method alone without a scheme.
std::string WithScheme(std::string_view method, std::string_view scheme) {
  return scheme.empty() ? std::string(method) : fmt::format("{}[scheme={}]", method, scheme);
}

const AwqDialect& DialectFor(const Dialect& dialect, Platform platform) {
  constexpr SiteKindSet kLinearMoe = KindBit(SiteKind::kLinear) | KindBit(SiteKind::kMoe);
  constexpr SiteKindSet kLinearHead = KindBit(SiteKind::kLinear) | KindBit(SiteKind::kLmHead);
  constexpr std::string_view kOnlyFourBits =
      "ValueError: Currently, only 4-bit weight quantization is supported for AWQ, but got {} "
      "bits.";
  static const AwqDialect kNative{.skip = SkipStyle::kTransformers,
                                  .fused = FusedPolicy::kLegsMustAgree,
                                  .skip_kinds = kLinearMoe,
                                  .moe_skip_detail = "",
                                  .reads_lm_head = false,
                                  .engine_required_fields = false,
                                  .marlin_needs_current_keys = false,
                                  .bypasses_marlin = "",
                                  .plain_linear_only = false,
                                  .plain_fp16_only = false,
                                  .bits_error = "",
                                  .unquantized_detail = "",
                                  .marlin_linear = "",
                                  .plain_linear = "",
                                  .moe_method = ""};
  static const AwqDialect kVllm{.skip = SkipStyle::kSubstring,
                                .fused = FusedPolicy::kLegsMustAgree,
                                .skip_kinds = kLinearMoe | KindBit(SiteKind::kLmHead),
                                .moe_skip_detail = "",
                                .reads_lm_head = true,
                                .engine_required_fields = true,
                                .marlin_needs_current_keys = false,
                                .bypasses_marlin = "",
                                .plain_linear_only = false,
                                .plain_fp16_only = false,
                                .bits_error = kOnlyFourBits,
                                .unquantized_detail = "UnquantizedLinearMethod",
                                .marlin_linear = "AWQMarlinLinearMethod",
                                .plain_linear = "AWQLinearMethod",
                                .moe_method = ""};
  // SGLang: vLLM's row, but it tests the execution name itself, and only for linear layers.
  static const AwqDialect kSglang = [] {
    AwqDialect d = kVllm;
    d.fused = FusedPolicy::kFusedNameOnly;
    d.skip_kinds = KindBit(SiteKind::kLinear);
    d.reads_lm_head = false;
    return d;
  }();
  static const AwqDialect kVllm033{
      .skip = SkipStyle::kSubstring,
      .fused = FusedPolicy::kFusedNameThenLegs,
      .skip_kinds = kLinearHead,
      .moe_skip_detail = "UnquantizedFusedMoEMethod",
      .reads_lm_head = true,
      .engine_required_fields = true,
      .marlin_needs_current_keys = false,
      .bypasses_marlin = "",
      .plain_linear_only = false,
      .plain_fp16_only = false,
      .bits_error =
          "ValueError: Unsupported num_bits = {}. Supported: 4. For 8-bit AWQ, use Marlin backend "
          "by setting backend='awq:marlin' or backend='marlin'.",
      .unquantized_detail = "UnquantizedLinearMethod",
      .marlin_linear = "AutoAWQMarlinLinearMethod",
      .plain_linear = "AutoAWQLinearMethod",
      .moe_method = "AutoAWQMoEMethod"};
  // AWQMarlinConfig hands linear layers AWQLinearMethod (with a Marlin scheme attached).
  static const AwqDialect kSglang0523{.skip = SkipStyle::kSubstring,
                                      .fused = FusedPolicy::kFusedNameOnly,
                                      .skip_kinds = kLinearHead,
                                      .moe_skip_detail = "get_quant_method returned None",
                                      .reads_lm_head = true,
                                      .engine_required_fields = true,
                                      .marlin_needs_current_keys = true,
                                      .bypasses_marlin = "awq",
                                      .plain_linear_only = true,
                                      .plain_fp16_only = true,
                                      .bits_error = kOnlyFourBits,
                                      .unquantized_detail = "UnquantizedLinearMethod",
                                      .marlin_linear = "AWQLinearMethod",
                                      .plain_linear = "AWQLinearMethod",
                                      .moe_method = "AWQMoEMethod"};
  // SGLang 0.5.23 off CUDA resolves "awq": AWQConfig on MPS and a CPU without AMX (linear layers
  // only),
  // AWQCPUConfig with AMX and AWQConfig's NPU branch (MoE too, never the LM head, fp16 or bf16).
  static const AwqDialect kSglang0523Cpu = [] {
    AwqDialect d = kSglang0523;
    d.has_marlin = false;
    d.linear_scheme = "AWQLinearScheme";
    return d;
  }();
  static const AwqDialect kSglang0523Amx = [] {
    AwqDialect d = kSglang0523Cpu;
    d.plain_linear_only = false;
    d.plain_fp16_only = false;
    d.reads_lm_head = false;
    d.linear_scheme = "AWQIntelAMXLinearScheme";
    d.moe_scheme = "AWQIntelAMXMoEScheme";
    return d;
  }();
  static const AwqDialect kSglang0523Npu = [] {
    AwqDialect d = kSglang0523Amx;
    d.linear_scheme = "AWQAscendLinearScheme";
    d.moe_scheme = "AWQAscendMoEScheme";
    return d;
  }();
  if (dialect.id == DialectId::kSglang0523 && platform != Platform::kCuda) {
    if (platform == Platform::kCpu || platform == Platform::kMps) return kSglang0523Cpu;
    return platform == Platform::kNpu ? kSglang0523Npu : kSglang0523Amx;
  }
  static const AwqDialect kVllm034Cpu = [] {
    AwqDialect d = kVllm033;
    d.refuses_marlin_name = true;
    return d;
  }();
  if (Since(dialect, DialectId::kVllm034) && platform != Platform::kCuda) return kVllm034Cpu;
  static const std::array<DialectRow<AwqDialect>, 5> kRows = {{
      {DialectId::kNative, kNative},
      {DialectId::kVllmHelpers, kVllm},
      {DialectId::kSglangHelpers, kSglang},
      {DialectId::kVllm033, kVllm033},
      {DialectId::kSglang0523, kSglang0523},
  }};
  return RowFor(dialect, kRows);
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
  std::vector<std::string_view> aliases() const override { return {"awq_marlin", "auto_awq"}; }
  // An AutoRound export packed as AWQ says quant_method "awq": --quantization awq reads it as AWQ.
  std::vector<std::string_view> forced_over() const override { return {"auto-round"}; }
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
    return BuildAwqPlan(sources, dialect, *found);
  }
};

}  // namespace

Result<QuantPlan> BuildAwqPlan(const ConfigSources& sources, const Dialect& dialect,
                               const FamilyConfig& config) {
  const std::optional<std::string>& requested = sources.requested_method();
  const AwqDialect& d = DialectFor(dialect, sources.launch().platform);
  const ConfigCopy& copy = config.primary;
  if (d.refuses_marlin_name && requested == "awq_marlin") {
    return InvalidInput(fmt::format(
        "{}: ValueError: Quantization method specified in the model config (awq) does not match "
        "the quantization method specified in the `quantization` argument (awq_marlin). ({} "
        "chooses awq_marlin on CUDA only)",
        copy.where.ToString(), dialect.name));
  }
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
        d.bits_error.empty()
            ? fmt::format(
                  "AWQ packs 4 bits per weight (AutoAWQ: \"Only 4-bit are supported for "
                  "now.\"), found {}",
                  weight.bits)
            : fmt::format(fmt::runtime(d.bits_error), weight.bits);
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
  bool marlin = d.has_marlin && zero_point.value_or(true) &&
                (weight.group_size == -1 || weight.group_size == 32 || weight.group_size == 64 ||
                 weight.group_size == 128);
  if (d.marlin_needs_current_keys &&
      (QuantMethod(*copy.json) != "awq" || copy.json->FindNonNull("bits") == nullptr ||
       copy.json->FindNonNull("group_size") == nullptr)) {
    marlin = false;
  }
  if (marlin && !d.bypasses_marlin.empty() && requested == d.bypasses_marlin) {
    marlin = false;
    plan.notes.push_back(fmt::format(
        "--quantization {} keeps the plain AWQ method; {} chooses awq_marlin only without it",
        d.bypasses_marlin, dialect.name));
  }
  if (d.plain_fp16_only && !marlin) {
    plan.engine_method = "awq";
    plan.act_dtypes = {QDType::kFP16};
  } else if (!d.has_marlin) {
    plan.engine_method = "awq";
    plan.act_dtypes = {QDType::kFP16, QDType::kBF16};
  }
  if (d.engine_required_fields && !marlin) {
    plan.notes.push_back(
        fmt::format("{} runs this config on its plain AWQ kernel (not Marlin)", dialect.name));
  }
  std::string_view detail = marlin ? d.marlin_linear : d.plain_linear;
  plan.default_action = {
      ActionKind::kQuantize, scheme,
      fmt::format("awq {} applies to every layer no rule names", scheme->CanonicalName()),
      WithScheme(detail, d.linear_scheme)};
  // Whether the chosen kernel also takes MoE experts and (when lm_head says so) the LM head.
  bool beyond_linear = marlin || !d.plain_linear_only;

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
    if (!d.moe_skip_detail.empty()) {
      outcomes.push_back({KindBit(SiteKind::kMoe), std::string(d.moe_skip_detail)});
    }
    if (d.skip == SkipStyle::kTransformers) {
      QP_RETURN_IF_ERROR(
          AppendTransformersSkipRules(list, outcomes, RegexFlavor::kPythonRe, &group.rules));
    } else {
      for (const ListEntry& entry : list.entries) {
        for (const SkipOutcome& outcome : outcomes) {
          Action skip{ActionKind::kSkip, std::nullopt,
                      fmt::format("modules_to_not_convert \"{}\" is part of the name", entry.value),
                      outcome.detail};
          QP_ASSIGN_OR_RETURN(Rule rule,
                              MakeRule(MatchKind::kSubstring, entry.value, RegexFlavor::kPythonRe,
                                       outcome.kinds, std::move(skip), entry.where));
          group.rules.push_back(std::move(rule));
        }
      }
    }
    plan.groups.push_back(std::move(group));
  }
  if (!d.moe_method.empty() && beyond_linear) {
    // The engine's MoE method for every experts site the skip list leaves quantized.
    Action experts = plan.default_action;
    experts.detail = WithScheme(d.moe_method, d.moe_scheme);
    QP_ASSIGN_OR_RETURN(RuleGroup group,
                        KindMethodGroup(KindBit(SiteKind::kMoe), std::move(experts), copy.where));
    plan.groups.push_back(std::move(group));
  }

  QP_ASSIGN_OR_RETURN(std::optional<bool> lm_head,
                      OptionalBool(*copy.json, "lm_head", copy.file()));
  plan.linear = KindPolicy::kRules;
  plan.lm_head = d.reads_lm_head && lm_head.value_or(false) && beyond_linear
                     ? KindPolicy::kRules
                     : KindPolicy::kUnquantized;
  plan.moe = beyond_linear ? KindPolicy::kRules : KindPolicy::kUnquantized;
  NoteOtherFields(copy, kReadKeys, &plan.notes);
  return plan;
}

const Importer* AwqImporter() {
  static const AwqFormat kImporter;
  return &kImporter;
}

}  // namespace quantpath
