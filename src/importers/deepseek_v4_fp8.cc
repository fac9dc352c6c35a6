// deepseek_v4_fp8 (`quant_method: "deepseek_v4_fp8"`, or `--quantization deepseek_v4_fp8` over an
// fp8 description): DeepSeek-V4's fp8 config as vLLM 0.34 reads it (DeepseekV4FP8Config, a
// subclass of Fp8Config: v4.1's on CUDA, v4's on a CPU).
//
// Fields read: everything Fp8Config reads (fp8.cc). Routed experts that is_layer_skipped leaves
// quantized follow the model config's expert_dtype, "fp4" when absent: MXFP4 weights with MXFP8
// activations per 32 (Mxfp4MoEMethod). Linear layers are Fp8Config's, except that 32 × 32 blocks
// with ue8m0 scales (expert_dtype fp4) are v4.1's MXFP8 linear layout (ModelOptLinearMethod).
//
// Recorded with the default expert_dtype only: expert_dtype "fp8" (Fp8Config's own experts) and
// quantization_config.moe_quant_algo "NVFP4" (ModelOpt NVFP4 experts) are refused by name rather
// than guessed. The checkpoint's MXFP4 experts layout is read by no loader yet.
#include <array>
#include <string>

#include "fmt/format.h"
#include "quantpath/importers.h"
#include "src/importers/common.h"
#include "src/importers/fp8.h"

namespace quantpath {
namespace {

constexpr std::string_view kMethod = "deepseek_v4_fp8";

// MXFP4 weights (E2M1, an E8M0 scale per 32) with MXFP8 activations quantized per 32 at run time.
QuantScheme ExpertsScheme() {
  QuantScheme s;
  s.weight.dtype = QDType::kMXFP4;
  s.weight.granularity = Granularity::kGroup;
  s.weight.group_size = 32;
  s.weight.micro_scaled = true;
  TensorQuant input = s.weight;
  input.dtype = QDType::kMXFP8;
  input.dynamic = Dynamic::kDynamic;
  s.input = input;
  return s;
}

// What the model config says beyond the recorded default, as an error naming the key.
Status CheckRecordedDefaults(const ConfigSources& sources, const Located& embedded) {
  for (const Json* root : {sources.text_config(), sources.config()}) {
    const Json* dtype = root != nullptr ? root->FindNonNull("expert_dtype") : nullptr;
    if (dtype != nullptr && !(dtype->is_string() && dtype->string_value() == "fp4")) {
      return Unsupported(fmt::format(
          "{}: expert_dtype {}: quantpath reproduces deepseek_v4_fp8 with fp4 (MXFP4) experts "
          "only, as recorded",
          Where("config.json", *dtype), ToJson(*dtype)));
    }
  }
  if (const Json* algo = embedded.value->FindNonNull("moe_quant_algo")) {
    return Unsupported(fmt::format(
        "{}: moe_quant_algo {}: quantpath reproduces deepseek_v4_fp8's MXFP4 experts only, as "
        "recorded",
        Where(embedded.where.file, *algo), ToJson(*algo)));
  }
  return {};
}

class DeepseekV4Fp8ImporterImpl final : public Importer {
 public:
  std::string_view name() const override { return kMethod; }
  // --quantization deepseek_v4_fp8 reads an fp8 description (vLLM's override accepts both).
  std::vector<std::string_view> forced_over() const override { return {"fp8"}; }

  bool Detect(const ConfigSources& sources) const override {
    return EmbeddedMethodIs(sources, kMethod);
  }

  Result<QuantPlan> BuildPlan(const ConfigSources& sources, const Dialect& dialect) const override {
    QP_ASSIGN_OR_RETURN(Located embedded, EmbeddedObject(sources, kMethod));
    if (!Since(dialect, DialectId::kVllm034)) {
      return Unsupported(fmt::format(
          "{}: quantpath reproduces deepseek_v4_fp8 as vLLM 0.34 reads it (--engine vllm@0.34), "
          "not as {} does",
          embedded.where.ToString(), dialect.name));
    }
    QP_RETURN_IF_ERROR(CheckRecordedDefaults(sources, embedded));
    Fp8Reading reading;
    reading.method = kMethod;
    QP_ASSIGN_OR_RETURN(QuantPlan plan, Fp8DescribedPlan(embedded, dialect, reading));
    const std::optional<QuantScheme>& linear = plan.default_action.scheme;
    // The v4.1 class is CUDA's (and ROCm's); a CPU builds the v4 one, which keeps Fp8Config's.
    if (linear && linear->weight.block_shape == std::array<int64_t, 2>{32, 32} &&
        sources.launch().platform == Platform::kCuda) {
      plan.default_action.detail = "ModelOptLinearMethod";
    }
    // After the exclusion group: a skipped experts layer is Fp8Config's (unquantized).
    RuleGroup moe{"deepseek_v4_fp8 routed experts", {}, FusedPolicy::kFusedNameOnly, ""};
    QP_ASSIGN_OR_RETURN(
        Rule rule,
        MakeRule(MatchKind::kGlob, "*", RegexFlavor::kPythonRe, KindBit(SiteKind::kMoe),
                 {ActionKind::kQuantize, ExpertsScheme(),
                  "expert_dtype fp4: routed experts hold MXFP4 weights and take MXFP8 activations",
                  "Mxfp4MoEMethod"},
                 embedded.where));
    moe.rules.push_back(std::move(rule));
    plan.groups.push_back(std::move(moe));
    return plan;
  }
};

}  // namespace

const Importer* DeepseekV4Fp8Importer() {
  static const DeepseekV4Fp8ImporterImpl kImporter;
  return &kImporter;
}

}  // namespace quantpath
