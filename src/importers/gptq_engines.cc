// The GPTQ dialect rows and the engine checks between them; see gptq_engines.h.
#include "src/importers/gptq_engines.h"

#include "fmt/format.h"
#include "src/importers/common.h"
#include "src/importers/engine_methods.h"

namespace quantpath {
namespace {

bool IsMarlinType(const GptqSettings& s) { return (s.bits == 4 || s.bits == 8) && s.sym; }
bool IsMarlinGroup(int64_t g) { return g == -1 || g == 32 || g == 64 || g == 128; }

// SGLang's is_gptq_marlin_compatible, on the config as written (absent fields are not compatible)
// together with check_marlin_format (a marlin-format checkpoint is never converted).
bool MarlinCompatible(const Json& config) {
  const Json* bits = config.FindNonNull("bits");
  const Json* group = config.FindNonNull("group_size");
  const Json* sym = config.FindNonNull("sym");
  const Json* desc_act = config.FindNonNull("desc_act");
  if (QuantMethod(config) != "gptq" || bits == nullptr || group == nullptr || sym == nullptr ||
      desc_act == nullptr || !bits->is_int() || !group->is_int() || !sym->is_bool()) {
    return false;
  }
  const Json* format = config.FindNonNull("checkpoint_format");
  const Json* marlin = config.FindNonNull("is_marlin_format");
  if ((format != nullptr && format->is_string() && format->string_value() == "marlin") ||
      (marlin != nullptr && marlin->is_bool() && marlin->bool_value())) {
    return false;
  }
  return IsMarlinType({bits->int_value(), group->int_value(), false, sym->bool_value()}) &&
         IsMarlinGroup(group->int_value());
}

constexpr SiteKindSet kLinearAndHead = KindBit(SiteKind::kLinear) | KindBit(SiteKind::kLmHead);

}  // namespace

const GptqDialect& GptqDialectFor(const Dialect& dialect, Platform platform) {
  static const GptqDialect kNative{.kernel = GptqKernel::kGptqModel,
                                   .not_marlin = GptqNotMarlin::kNotChecked,
                                   .bypasses_marlin = "",
                                   .engine_required_fields = false,
                                   .rejects_desc_act = false,
                                   .dynamic = {.regex = RegexFlavor::kPythonRe,
                                               .strict_values = true,
                                               .kinds = kAllKinds,
                                               .fused = FusedPolicy::kLegsMustAgree,
                                               .lm_head_skip_detail = "",
                                               .moe_skip_detail = ""},
                                   .block_list = GptqBlockList::kSuffix,
                                   .block_list_kinds = KindBit(SiteKind::kLinear),
                                   .block_list_from_checkpoint = false,
                                   .decoder_blocks_only = true,
                                   .empty_block_list_quantizes_all = false,
                                   .moe_method_first = false,
                                   .unquantized_detail = "",
                                   .names = {"", "", ""}};
  static const GptqDialect kVllm{.kernel = GptqKernel::kMarlin,
                                 .not_marlin = GptqNotMarlin::kNotChecked,
                                 .bypasses_marlin = "",
                                 .engine_required_fields = true,
                                 .rejects_desc_act = false,
                                 .dynamic = {.regex = RegexFlavor::kPythonRegexModule,
                                             .strict_values = false,
                                             .kinds = kAllKinds,
                                             .fused = FusedPolicy::kFusedNameOnly,
                                             .lm_head_skip_detail = "UnquantizedEmbeddingMethod",
                                             .moe_skip_detail = ""},
                                 .block_list = GptqBlockList::kSubstring,
                                 .block_list_kinds = kLinearAndHead,
                                 .block_list_from_checkpoint = true,
                                 .decoder_blocks_only = false,
                                 .empty_block_list_quantizes_all = false,
                                 .moe_method_first = false,
                                 .unquantized_detail = "UnquantizedLinearMethod",
                                 .names = {"GPTQMarlinLinearMethod", "", ""}};
  // SGLang returns GPTQMarlinMoEMethod before consulting `dynamic`, so its rules skip MoE sites.
  static const GptqDialect kSglang{.kernel = GptqKernel::kMarlin,
                                   .not_marlin = GptqNotMarlin::kGptqKernel,
                                   .bypasses_marlin = "",
                                   .engine_required_fields = true,
                                   .rejects_desc_act = false,
                                   .dynamic = {.regex = RegexFlavor::kPythonRe,
                                               .strict_values = false,
                                               .kinds = kLinearAndHead,
                                               .fused = FusedPolicy::kFusedNameOnly,
                                               .lm_head_skip_detail = "",
                                               .moe_skip_detail = ""},
                                   .block_list = GptqBlockList::kIgnored,
                                   .block_list_kinds = 0,
                                   .block_list_from_checkpoint = false,
                                   .decoder_blocks_only = false,
                                   .empty_block_list_quantizes_all = false,
                                   .moe_method_first = false,
                                   .unquantized_detail = "UnquantizedLinearMethod",
                                   .names = {"GPTQMarlinLinearMethod", "GPTQLinearMethod", ""}};
  // vLLM 0.33 differs from the recorded row in: desc_act rejected, the detail of an expert that
  // `dynamic` skips, an empty block list quantizing everything, and the class names.
  static const GptqDialect kVllm033 = [] {
    GptqDialect d = kVllm;
    d.rejects_desc_act = true;
    d.dynamic.moe_skip_detail = "UnquantizedFusedMoEMethod";
    d.empty_block_list_quantizes_all = true;
    d.names = {"AutoGPTQLinearMethod", "", "AutoGPTQMoEMethod"};
    return d;
  }();
  // SGLang 0.5.23 differs from the recorded row in: no plain GPTQ method for a non-Marlin config,
  // --quantization gptq keeping the plain method, the LM head's skip detail, the MoE method
  // ahead of `dynamic`, and the class names.
  static const GptqDialect kSglang0523 = [] {
    GptqDialect d = kSglang;
    d.not_marlin = GptqNotMarlin::kUnknownMethod;
    d.bypasses_marlin = "gptq";
    d.dynamic.lm_head_skip_detail = "UnquantizedEmbeddingMethod";
    d.moe_method_first = true;
    d.names = {"GPTQMarlinLinearMethod", "", "GPTQMarlinMoEMethod"};
    return d;
  }();
  // SGLang 0.5.23 off CUDA: the Marlin check fails, so the override keeps "gptq", which the CPU
  // registers as CPUGPTQConfig and the NPU as GPTQAscendConfig.
  static const GptqDialect kSglang0523Cpu = [] {
    GptqDialect d = kSglang0523;
    d.kernel = GptqKernel::kGptq;
    d.not_marlin = GptqNotMarlin::kNotChecked;
    d.bypasses_marlin = "";
    d.moe_method_first = true;
    d.names = {"", "GPTQLinearMethod", "GPTQMoEMethod"};
    d.platform_config = true;
    d.linear_scheme = "GPTQIntelAMXLinearScheme";
    d.moe_scheme = "GPTQIntelAMXMoEScheme";
    return d;
  }();
  static const GptqDialect kSglang0523Npu = [] {
    GptqDialect d = kSglang0523Cpu;
    d.linear_scheme = "GPTQAscendLinearScheme";
    d.moe_scheme = "GPTQMoEAscendScheme";
    return d;
  }();
  // MPS registers no plain GPTQ method.
  static const GptqDialect kSglang0523Mps = [] {
    GptqDialect d = kSglang0523;
    d.marlin_only_when_named = true;
    return d;
  }();
  if (dialect.id == DialectId::kSglang0523 && platform != Platform::kCuda) {
    if (platform == Platform::kMps) return kSglang0523Mps;
    return platform == Platform::kNpu ? kSglang0523Npu : kSglang0523Cpu;
  }
  static const GptqDialect kVllm034Cpu = [] {
    GptqDialect d = kVllm033;
    d.marlin_4bit_only = true;
    return d;
  }();
  if (Since(dialect, DialectId::kVllm034) && platform != Platform::kCuda) return kVllm034Cpu;
  static const std::array<DialectRow<GptqDialect>, 5> kRows = {{
      {DialectId::kNative, kNative},
      {DialectId::kVllmHelpers, kVllm},
      {DialectId::kSglangHelpers, kSglang},
      {DialectId::kVllm033, kVllm033},
      {DialectId::kSglang0523, kSglang0523},
  }};
  return RowFor(dialect, kRows);
}

Result<GptqKernel> ResolveKernel(const ConfigCopy& copy, const GptqDialect& d,
                                 const Dialect& dialect,
                                 const std::optional<std::string>& requested, Platform platform,
                                 std::vector<std::string>* notes) {
  const bool bypassed = !d.bypasses_marlin.empty() && requested == d.bypasses_marlin;
  const bool marlin = d.marlin_only_when_named ? requested == "gptq_marlin"
                                               : !bypassed && MarlinCompatible(*copy.json);
  if (d.not_marlin == GptqNotMarlin::kNotChecked || marlin) return d.kernel;
  if (d.not_marlin == GptqNotMarlin::kUnknownMethod) {
    std::string why;
    if (d.marlin_only_when_named) {
      why = fmt::format(
          "{} on {} registers no plain GPTQ method and its Marlin check fails off CUDA: only "
          "--quantization gptq_marlin reaches Marlin",
          dialect.name, PlatformName(platform));
    } else if (bypassed) {
      why = fmt::format(
          "--quantization {} keeps the plain GPTQ method, which {} does not register; "
          "gptq_marlin is chosen only without it",
          d.bypasses_marlin, dialect.name);
    } else {
      why = fmt::format("{} loads only Marlin-compatible GPTQ checkpoints, as gptq_marlin",
                        dialect.name);
    }
    return InvalidInput(
        fmt::format("{}: ValueError: Unknown quantization method: gptq. Must be one of {}. ({})",
                    copy.where.ToString(), RegisteredMethodsText(dialect, platform), why));
  }
  notes->push_back(
      fmt::format("{} runs this config on its GPTQ kernel (not Marlin)", dialect.name));
  return GptqKernel::kGptq;
}

std::optional<std::string> SchemeError(GptqKernel kernel, const GptqSettings& s) {
  bool width = s.bits == 2 || s.bits == 3 || s.bits == 4 || s.bits == 8;
  switch (kernel) {
    case GptqKernel::kGptqModel:
      if (!width) return fmt::format("GPTQ packs 2, 3, 4 or 8 bits per weight, found {}", s.bits);
      if (s.group_size != -1 && s.group_size <= 0) {
        return fmt::format(
            "group_size must be -1 (one group per output channel) or positive, "
            "found {}",
            s.group_size);
      }
      return std::nullopt;
    case GptqKernel::kGptq:
      if (width) return std::nullopt;
      return fmt::format(
          "ValueError: Currently, only 2/3/4/8-bit weight quantization is supported "
          "for GPTQ, but got {} bits.",
          s.bits);
    case GptqKernel::kMarlin:
      if (IsMarlinType(s)) return std::nullopt;
      return fmt::format("ValueError: Unsupported quantization config: bits={}, sym={}", s.bits,
                         PyBool(s.sym));
  }
  return std::nullopt;
}

std::optional<std::string> LayerError(GptqKernel kernel, const GptqDialect& d,
                                      const GptqSettings& s) {
  if (kernel != GptqKernel::kMarlin) return std::nullopt;
  if (!IsMarlinGroup(s.group_size)) {
    return fmt::format(
        "ValueError: Marlin does not support group_size = {}. Only group_sizes = "
        "[-1, 32, 64, 128] are supported.",
        s.group_size);
  }
  if (d.marlin_4bit_only && s.bits != 4) {
    return fmt::format(
        "ValueError: Marlin does not support weight_bits = uint{}b{}. Only types = "
        "[ScalarType.uint4b8] are supported (for group_size = {}, device_capability = -1, "
        "zp = False).",
        s.bits, int64_t{1} << (s.bits - 1), s.group_size);
  }
  return std::nullopt;
}

Status CheckDescAct(const ConfigCopy& copy, const GptqSettings& base) {
  constexpr std::string_view kText =
      "ValueError: GPTQ group activation ordering (desc_act=True) is no longer supported";
  if (base.desc_act && base.group_size != -1) {
    return InvalidInput(
        fmt::format("{}: {}. Use a checkpoint with static activation ordering or desc_act=False.",
                    Where(copy.file(), *copy.json->Find("desc_act")), kText));
  }
  const Json* dynamic = copy.json->FindNonNull("dynamic");
  if (dynamic == nullptr || !dynamic->is_object()) return {};
  for (const Json::Member& m : dynamic->members()) {
    if (m.first.starts_with("-:") || !m.second.is_object()) continue;
    const Json* desc = m.second.Find("desc_act");
    const Json* group = m.second.Find("group_size");
    bool act_order = desc == nullptr ? base.desc_act : desc->is_bool() && desc->bool_value();
    int64_t group_size = group != nullptr && group->is_int() ? group->int_value() : base.group_size;
    if (act_order && group_size != -1) {
      return InvalidInput(fmt::format(
          "{}: {}, but is enabled by dynamic rule '{}'. Use a checkpoint with static activation "
          "ordering or desc_act=False.",
          Where(copy.file(), m.second), kText, m.first));
    }
  }
  return {};
}

}  // namespace quantpath
