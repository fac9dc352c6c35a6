// deepseek_v4_fp8 (`quant_method: "deepseek_v4_fp8"`, or `--quantization deepseek_v4_fp8` over an
// fp8 description): DeepSeek-V4's fp8 config as vLLM 0.34 reads it (DeepseekV4FP8Config, a
// subclass of Fp8Config: v4.1's on CUDA, v4's on a CPU).
//
// Fields read: everything Fp8Config reads (fp8.cc), and from the model config `expert_dtype`
// ("fp4" when absent). Routed experts that is_layer_skipped leaves quantized:
// - expert_dtype "fp4": MXFP4 weights with MXFP8 activations per 32 (Mxfp4MoEMethod); with
//   quantization_config.moe_quant_algo "NVFP4" (a ModelOpt NVFP4 export) ModelOpt's NVFP4 experts
//   instead, except (v4.1 only) layers `layers.N.ffn.experts` whose name (`mtp.K` past
//   num_hidden_layers) matches an fnmatch entry of the config's ModelOpt `ignore`, which keep
//   MXFP4;
// - expert_dtype "fp8": Fp8Config's own block-fp8 experts.
// Linear layers are Fp8Config's, except that 32 × 32 blocks with ue8m0 scales (expert_dtype fp4)
// are v4.1's MXFP8 linear layout (ModelOptLinearMethod). The checkpoint's MXFP4 experts layout is
// read by no loader yet.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "quantpath/importers.h"
#include "src/importers/common.h"
#include "src/importers/fp8.h"
#include "src/importers/modelopt.h"

namespace quantpath {
namespace {

constexpr std::string_view kMethod = "deepseek_v4_fp8";
// The most decoder layers read, as the architecture builders bound num_hidden_layers.
constexpr int64_t kMaxDecoderLayers = 4096;

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

// Python's repr of a config value, as the engine's message prints it.
std::string PyRepr(const Json& v) {
  return v.is_string() ? "'" + v.string_value() + "'" : modelopt::PyStr(v);
}

// The model config's expert_dtype: "fp4" (absent) or "fp8"; anything else is the engine's error.
Result<bool> ExpertsAreFp4(const ConfigSources& sources) {
  const Json* config = sources.config();
  const Json* dtype = config != nullptr ? config->Find("expert_dtype") : nullptr;
  if (dtype == nullptr) return true;
  if (dtype->is_string() && (dtype->string_value() == "fp4" || dtype->string_value() == "fp8")) {
    return dtype->string_value() == "fp4";
  }
  return InvalidInput(fmt::format(
      "{}: ValueError: Unsupported DeepSeek V4 expert_dtype={}; expected one of ('fp4', 'fp8').",
      Where("config.json", *dtype), PyRepr(*dtype)));
}

// quantization_config.moe_quant_algo, upper-cased; "" when absent, null or empty.
Result<std::string> MoeQuantAlgo(const Located& embedded) {
  const Json* algo = embedded.value->FindNonNull("moe_quant_algo");
  if (algo == nullptr) return std::string();
  if (!algo->is_string()) {
    return InvalidInput(fmt::format("{}: moe_quant_algo must be a string, found {}",
                                    Where(embedded.where.file, *algo), ToJson(*algo)));
  }
  return modelopt::Upper(algo->string_value());
}

// The layer indices whose experts keep MXFP4 under moe_quant_algo NVFP4: those whose name
// (`layers.N.ffn.experts`, `mtp.K.ffn.experts` from num_hidden_layers on) matches an entry of
// `ignore`. Indices run over the decoder and its MTP layers.
Result<std::vector<int64_t>> Mxfp4ExpertLayers(const ConfigSources& sources,
                                               const Located& embedded) {
  std::vector<Matcher> ignore;
  if (const Json* list = embedded.value->FindNonNull("ignore");
      list != nullptr && list->is_array()) {
    for (const Json& entry : list->items()) {
      if (!entry.is_string()) continue;  // from_config keeps the strings
      QP_ASSIGN_OR_RETURN(Matcher m, Matcher::Create(MatchKind::kGlob, entry.string_value()));
      ignore.push_back(std::move(m));
    }
  }
  std::vector<int64_t> out;
  if (ignore.empty()) return out;
  const Json* text = sources.text_config();
  const Json* layers = text != nullptr ? text->FindNonNull("num_hidden_layers") : nullptr;
  if (layers == nullptr || !layers->is_int() || layers->int_value() < 0 ||
      layers->int_value() > kMaxDecoderLayers) {
    return InvalidInput(fmt::format(
        "config.json: num_hidden_layers must be an integer in [0, {}] to name the experts layers "
        "the ModelOpt ignore of {} keeps in MXFP4",
        kMaxDecoderLayers, embedded.where.ToString()));
  }
  const Json* mtp = text->FindNonNull("num_nextn_predict_layers");
  const int64_t extra = mtp != nullptr && mtp->is_int() && mtp->int_value() > 0
                            ? std::min<int64_t>(mtp->int_value(), kMaxDecoderLayers)
                            : 1;
  const int64_t n = layers->int_value();
  for (int64_t i = 0; i < n + extra; ++i) {
    const std::string name =
        i < n ? fmt::format("layers.{}.ffn.experts", i) : fmt::format("mtp.{}.ffn.experts", i - n);
    for (const Matcher& m : ignore) {
      QP_ASSIGN_OR_RETURN(const bool hit, m.Matches(name));
      if (hit) {
        out.push_back(i);
        break;
      }
    }
  }
  return out;
}

// The routed-experts group for expert_dtype fp4: MXFP4, or NVFP4 under moe_quant_algo NVFP4 except
// the layers v4.1's reading of its ignore keeps.
Result<RuleGroup> Fp4ExpertsGroup(const ConfigSources& sources, const Located& embedded, bool v41) {
  RuleGroup moe{"deepseek_v4_fp8 routed experts", {}, FusedPolicy::kFusedNameOnly, ""};
  const Action mxfp4{ActionKind::kQuantize, ExpertsScheme(),
                     "expert_dtype fp4: routed experts hold MXFP4 weights and take MXFP8 "
                     "activations",
                     "Mxfp4MoEMethod"};
  QP_ASSIGN_OR_RETURN(const std::string algo, MoeQuantAlgo(embedded));
  if (algo == "NVFP4") {
    std::vector<int64_t> kept;
    if (v41) {
      QP_ASSIGN_OR_RETURN(kept, Mxfp4ExpertLayers(sources, embedded));
    }
    for (const int64_t i : kept) {
      QP_ASSIGN_OR_RETURN(
          Rule rule,
          MakeRule(MatchKind::kRegexMatch, fmt::format(R"((?:.*\.)?layers\.{}\.ffn\.experts$)", i),
                   RegexFlavor::kPythonRe, KindBit(SiteKind::kMoe), mxfp4, embedded.where));
      moe.rules.push_back(std::move(rule));
    }
    QP_ASSIGN_OR_RETURN(
        const QuantScheme nvfp4,
        modelopt::AlgoScheme(*modelopt::FindAlgo("NVFP4"), 16, embedded.where.ToString()));
    QP_ASSIGN_OR_RETURN(
        Rule rule, MakeRule(MatchKind::kGlob, "*", RegexFlavor::kPythonRe, KindBit(SiteKind::kMoe),
                            {ActionKind::kQuantize, nvfp4,
                             "moe_quant_algo NVFP4: routed experts hold ModelOpt NVFP4 weights",
                             "ModelOptNvFp4FusedMoE"},
                            embedded.where));
    moe.rules.push_back(std::move(rule));
    return moe;
  }
  QP_ASSIGN_OR_RETURN(Rule rule, MakeRule(MatchKind::kGlob, "*", RegexFlavor::kPythonRe,
                                          KindBit(SiteKind::kMoe), mxfp4, embedded.where));
  moe.rules.push_back(std::move(rule));
  return moe;
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
    QP_ASSIGN_OR_RETURN(const bool fp4, ExpertsAreFp4(sources));
    Fp8Reading reading;
    reading.method = kMethod;
    QP_ASSIGN_OR_RETURN(QuantPlan plan, Fp8DescribedPlan(embedded, dialect, reading));
    const std::optional<QuantScheme>& linear = plan.default_action.scheme;
    // The v4.1 class is CUDA's (and ROCm's); a CPU builds the v4 one, which keeps Fp8Config's.
    // Its MXFP8 linear layout needs the ue8m0 scales of fp4-experts checkpoints.
    const bool v41 = sources.launch().platform == Platform::kCuda;
    if (fp4 && v41 && linear && linear->weight.block_shape == std::array<int64_t, 2>{32, 32}) {
      plan.default_action.detail = "ModelOptLinearMethod";
    }
    // expert_dtype fp8 leaves the experts to Fp8Config. After the exclusion group: a skipped
    // experts layer is Fp8Config's (unquantized).
    if (fp4) {
      QP_ASSIGN_OR_RETURN(RuleGroup moe, Fp4ExpertsGroup(sources, embedded, v41));
      plan.groups.push_back(std::move(moe));
    }
    return plan;
  }
};

}  // namespace

const Importer* DeepseekV4Fp8Importer() {
  static const DeepseekV4Fp8ImporterImpl kImporter;
  return &kImporter;
}

}  // namespace quantpath
