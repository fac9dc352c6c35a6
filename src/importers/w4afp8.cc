// w4afp8 (`quant_method: "w4afp8"`): int4 routed experts with fp8 activations, fp8 blocks
// everywhere else, as vLLM 0.34's W4AFP8Config (a subclass of Fp8Config) reads it.
//
// Fields read: everything Fp8Config reads (fp8.cc), with activation_scheme fixed to dynamic and
// weight_block_size defaulting to [128, 128]; group_size (default 128) for the experts. A routed
// experts layer that is_layer_skipped leaves quantized gets CompressedTensorsW4A8Fp8MoEMethod:
// symmetric int4 weights per group, fp8 activations per token, dynamic; its constructor asserts a
// group of 128. Everything else is Fp8Config's decision.
//
// Checkpoint: the experts store `.weight` as signed int4 codes two per int8 and `.weight_scale_inv`
// per group; vLLM's checkpoint mapper renames them to compressed-tensors' weight_packed /
// weight_scale, XORs each byte with 0x88 (signed to uint4b8) and drops `.input_scale`.
//
// Only vLLM 0.34 registers the name. Earlier vLLM releases raise "Unknown quantization method";
// SGLang 0.5.23's own W4AFp8Config is not reproduced; transformers has no such quantizer.
#include <array>
#include <string>

#include "fmt/format.h"
#include "quantpath/importers.h"
#include "src/importers/common.h"
#include "src/importers/engine_methods.h"
#include "src/importers/fp8.h"

namespace quantpath {
namespace {

constexpr std::string_view kMethod = "w4afp8";
constexpr int64_t kSupportedGroup = 128;
constexpr std::string_view kOwnKeys[] = {"group_size"};

// The experts' scheme: int4 per group of `group` along K, fp8 per-token dynamic activations.
QuantScheme ExpertsScheme(int64_t group) {
  QuantScheme s;
  s.weight.dtype = QDType::kINT4;
  s.weight.granularity = Granularity::kGroup;
  s.weight.group_size = group;
  s.weight.load.layout = SourceLayout::kW4afp8Experts;
  TensorQuant input;
  input.dtype = QDType::kFP8E4M3;
  input.granularity = Granularity::kPerToken;
  input.dynamic = Dynamic::kDynamic;
  s.input = input;
  return s;
}

// from_config: config.get("group_size", 128), handed to QuantizationArgs (a positive integer).
Result<int64_t> ReadGroupSize(const Json& q, const std::string& file) {
  const Json* g = q.Find("group_size");
  if (g == nullptr) return kSupportedGroup;
  if (!g->is_int() || g->int_value() <= 0) {
    return InvalidInput(fmt::format("{}: group_size must be a positive integer, found {}",
                                    Where(file, *g), ToJson(*g)));
  }
  return g->int_value();
}

class W4afp8ImporterImpl final : public Importer {
 public:
  std::string_view name() const override { return kMethod; }

  bool Detect(const ConfigSources& sources) const override {
    return EmbeddedMethodIs(sources, kMethod);
  }

  Result<QuantPlan> BuildPlan(const ConfigSources& sources, const Dialect& dialect) const override {
    QP_ASSIGN_OR_RETURN(Located embedded, EmbeddedObject(sources, kMethod));
    const std::string where = embedded.where.ToString();
    if (!Since(dialect, DialectId::kVllm034)) {
      return NotRegistered(where, dialect, sources.launch().platform);
    }
    const std::string& file = embedded.where.file;
    QP_ASSIGN_OR_RETURN(int64_t group, ReadGroupSize(*embedded.value, file));
    const Fp8Reading reading{.method = kMethod,
                             .dynamic_activations_only = true,
                             .default_block = std::array<int64_t, 2>{128, 128},
                             .more_keys = kOwnKeys};
    QP_ASSIGN_OR_RETURN(QuantPlan plan, Fp8DescribedPlan(embedded, dialect, reading));
    // After the exclusion group: a skipped experts layer is Fp8Config's (unquantized).
    Action experts =
        group == kSupportedGroup
            ? Action{ActionKind::kQuantize, ExpertsScheme(group),
                     "w4afp8 gives routed experts int4 weights per group of 128 and fp8 "
                     "activations per token",
                     "CompressedTensorsW4A8Fp8MoEMethod"}
            : Action{ActionKind::kFail, std::nullopt,
                     "AssertionError: Only group size 128 supported for W4A8 MoE", ""};
    RuleGroup moe{"w4afp8 routed experts", {}, FusedPolicy::kFusedNameOnly, ""};
    QP_ASSIGN_OR_RETURN(
        Rule rule, MakeRule(MatchKind::kGlob, "*", RegexFlavor::kPythonRe, KindBit(SiteKind::kMoe),
                            std::move(experts), embedded.where));
    moe.rules.push_back(std::move(rule));
    plan.groups.push_back(std::move(moe));
    return plan;
  }

 private:
  static Status NotRegistered(const std::string& where, const Dialect& dialect, Platform platform) {
    if (dialect.engine == Engine::kNative) {
      return Unsupported(fmt::format(
          "{}: quant_method \"w4afp8\" has no transformers quantizer; vLLM 0.34 reads it "
          "(--engine vllm@0.34)",
          where));
    }
    const std::string_view methods = RegisteredMethodsText(dialect, platform);
    if (methods.empty() || dialect.engine == Engine::kSglang) {
      return Unsupported(
          fmt::format("{}: quantpath reproduces w4afp8 as vLLM 0.34 reads it, not as {} does",
                      where, dialect.name));
    }
    return InvalidInput(
        fmt::format("{}: ValueError: Unknown quantization method: w4afp8. Must be one of {}. ({} "
                    "has no w4afp8; vLLM registers it from 0.34)",
                    where, methods, dialect.name));
  }
};

}  // namespace

const Importer* W4afp8Importer() {
  static const W4afp8ImporterImpl kImporter;
  return &kImporter;
}

}  // namespace quantpath
