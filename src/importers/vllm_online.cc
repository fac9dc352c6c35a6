// vLLM's online quantization shorthands (`--quantization fp8_per_block`, …): a bf16 / fp16 / fp32
// checkpoint quantized at load by vLLM's OnlineQuantizationConfig (config/quantization.py
// _ONLINE_SHORTHANDS, layers/quantization/online/*.py).
//
// Each shorthand names a linear spec, an experts spec, or both; a layer kind without one stays
// unquantized. Attention gets no KV-cache method and the LM head none (vLLM 0.33.0 and 0.34.0,
// recorded: releases/vllm-*/cases/vllm-online.json). `fp8` itself is the fp8 importer's (fp8.cc).
// Decisions are as on a device of capability 9.0, where nvfp4_per_token's experts method refuses
// and lut_b_moe's experts run LUT-B emulation with the same numerics as Rubin's native kernel.
// No spec stores LUT-B codes or rotates inputs yet: those rows plan with a spec_note.
#include <array>
#include <optional>
#include <string>

#include "fmt/format.h"
#include "quantpath/importers.h"
#include "src/importers/common.h"
#include "src/importers/importer_list.h"

namespace quantpath {
namespace {

// What a shorthand does to one layer kind: quantize with `scheme`, refuse with `failure`, or
// (neither) leave it unquantized.
struct KindSpec {
  std::optional<QuantScheme> scheme;
  std::string_view method;   // the engine's method class
  std::string_view failure;  // the engine's error text
};

struct Shorthand {
  std::string_view name;
  KindSpec linear;
  KindSpec experts;
  DialectId since = DialectId::kVllm033;
};

TensorQuant Fp8Weights(Granularity granularity) {
  TensorQuant t;
  t.dtype = QDType::kFP8E4M3;
  t.granularity = granularity;
  return t;
}

TensorQuant DynamicInput(QDType dtype, Granularity granularity,
                         std::optional<int64_t> group = std::nullopt) {
  TensorQuant t;
  t.dtype = dtype;
  t.granularity = granularity;
  t.group_size = group;
  t.dynamic = Dynamic::kDynamic;
  return t;
}

QuantScheme Online(TensorQuant weight, std::optional<TensorQuant> input) {
  QuantScheme s;
  s.weight = weight;
  s.weight.load.layout = SourceLayout::kDense;
  s.input = std::move(input);
  s.online = true;
  return s;
}

QuantScheme Fp8PerTensor() {
  return Online(Fp8Weights(Granularity::kPerTensor),
                DynamicInput(QDType::kFP8E4M3, Granularity::kPerToken));
}
QuantScheme Fp8PerBlock() {
  TensorQuant w = Fp8Weights(Granularity::kBlock);
  w.block_shape = std::array<int64_t, 2>{128, 128};
  return Online(w, DynamicInput(QDType::kFP8E4M3, Granularity::kGroup, 128));
}
QuantScheme Fp8PerChannel() {
  return Online(Fp8Weights(Granularity::kPerChannel),
                DynamicInput(QDType::kFP8E4M3, Granularity::kPerToken));
}
QuantScheme Int8ChannelWeightOnly() {
  TensorQuant w;
  w.dtype = QDType::kINT8;
  w.granularity = Granularity::kPerChannel;
  return Online(w, std::nullopt);
}
// Micro-scaled weights and dynamic activations of `dtype`, an E8M0 scale per 32 for each.
QuantScheme MicroScaled(QDType dtype) {
  TensorQuant w;
  w.dtype = dtype;
  w.granularity = Granularity::kGroup;
  w.group_size = 32;
  w.micro_scaled = true;
  TensorQuant x = DynamicInput(dtype, Granularity::kGroup, 32);
  x.micro_scaled = true;
  return Online(w, x);
}
QuantScheme Mxfp8() { return MicroScaled(QDType::kMXFP8); }
// mxfp4_hadamard32: MXFP4 weights and dynamic MXFP4 activations per 32 (Mxfp4OnlineLinearMethod),
// both rotated by a 32-wide block Hadamard first (InputHadamardLinearMethod, rotate_weight).
QuantScheme Mxfp4Hadamard32() {
  QuantScheme s = MicroScaled(QDType::kMXFP4);
  s.input_hadamard = 32;
  return s;
}
// lut_b_moe: per 8 (N) x 64 (K) tile, 3-bit indices into an 8-entry E4M3 codebook with a UE8M0
// exponent (utils/lut_b_utils.py); the experts quantize activations to MXFP8 themselves.
QuantScheme LutB() {
  TensorQuant w;
  w.dtype = QDType::kLUTB;
  w.granularity = Granularity::kBlock;
  w.block_shape = std::array<int64_t, 2>{8, 64};
  TensorQuant x = DynamicInput(QDType::kMXFP8, Granularity::kGroup, 32);
  x.micro_scaled = true;
  return Online(w, x);
}

// The shorthands the recorded releases register, in _ONLINE_SHORTHANDS order.
const std::vector<Shorthand>& Shorthands() {
  static const std::vector<Shorthand> kShorthands = {
      {"fp8_per_tensor",
       {Fp8PerTensor(), "Fp8PerTensorOnlineLinearMethod", ""},
       {Fp8PerTensor(), "Fp8PerTensorOnlineMoEMethod", ""}},
      {"fp8_per_block",
       {Fp8PerBlock(), "Fp8PerBlockOnlineLinearMethod", ""},
       {Fp8PerBlock(), "Fp8PerBlockOnlineMoEMethod", ""}},
      {"fp8_per_channel",
       {Fp8PerChannel(), "Fp8PtpcOnlineLinearMethod", ""},
       {Fp8PerChannel(), "Fp8PtpcOnlineMoEMethod", ""}},
      {"int8_per_channel_weight_only",
       {std::nullopt, "", ""},
       {Int8ChannelWeightOnly(), "Int8OnlineMoEMethod", ""}},
      {"nvfp4_per_token",
       {std::nullopt, "", ""},
       {std::nullopt, "",
        "ValueError: nvfp4_per_token online quantization requires a Blackwell (SM100) GPU."}},
      {"mxfp8", {Mxfp8(), "Mxfp8OnlineLinearMethod", ""}, {Mxfp8(), "Mxfp8OnlineMoEMethod", ""}},
      {"mxfp4_hadamard32",
       {Mxfp4Hadamard32(), "InputHadamardLinearMethod", ""},
       {std::nullopt, "", ""},
       DialectId::kVllm034},
      {"lut_b_moe",
       {std::nullopt, "", ""},
       {LutB(), "LutBOnlineMoEMethod", ""},
       DialectId::kVllm034},
  };
  return kShorthands;
}

Action ActionFor(const KindSpec& spec, std::string_view shorthand, std::string_view unquantized) {
  if (!spec.failure.empty()) {
    return {ActionKind::kFail, std::nullopt, std::string(spec.failure), ""};
  }
  if (!spec.scheme) {
    return {ActionKind::kSkip, std::nullopt,
            fmt::format("vLLM's {} shorthand has no spec for this kind of layer", shorthand),
            std::string(unquantized)};
  }
  return {ActionKind::kQuantize, spec.scheme,
          fmt::format("vLLM's {} shorthand quantizes it at load", shorthand),
          std::string(spec.method)};
}

class VllmOnlineImporter final : public Importer {
 public:
  explicit VllmOnlineImporter(const Shorthand& shorthand) : s_(shorthand) {}
  std::string_view name() const override { return s_.name; }
  // A shorthand describes no checkpoint: it only ever comes from --quantization.
  bool Detect(const ConfigSources&) const override { return false; }

  Result<QuantPlan> BuildPlan(const ConfigSources& sources, const Dialect&) const override {
    return InvalidInput(fmt::format(
        "--quantization {} quantizes a high-precision checkpoint at load; the model's files ({}) "
        "describe a quantization of their own",
        s_.name, Join(sources.FileNames(), ", ")));
  }

  Result<std::optional<QuantPlan>> PlanWithoutDescription(const ConfigSources&,
                                                          const Dialect& dialect) const override {
    if (!Since(dialect, s_.since)) {
      return Unsupported(fmt::format(
          "--quantization {}: quantpath reproduces it as vLLM's online shorthand ({} on), not as "
          "{} reads it",
          s_.name, DialectAt(s_.since).name, dialect.name));
    }
    QuantPlan plan;
    plan.quant_method = std::string(s_.name);
    plan.dialect = dialect;
    plan.default_action = ActionFor(s_.linear, s_.name, "UnquantizedLinearMethod");
    plan.linear = KindPolicy::kRules;
    plan.moe = KindPolicy::kRules;
    plan.router = KindPolicy::kUnquantized;
    plan.embedding = KindPolicy::kUnquantized;
    plan.lm_head = KindPolicy::kUnquantized;
    RuleGroup experts{"online experts spec", {}, FusedPolicy::kFusedNameOnly, ""};
    QP_ASSIGN_OR_RETURN(
        Rule rule, MakeRule(MatchKind::kGlob, "*", RegexFlavor::kPythonRe, KindBit(SiteKind::kMoe),
                            ActionFor(s_.experts, s_.name, "UnquantizedFusedMoEMethod"),
                            {"--quantization " + std::string(s_.name), ""}));
    experts.rules.push_back(std::move(rule));
    plan.groups.push_back(std::move(experts));
    plan.notes.push_back(fmt::format(
        "--quantization {} without a description: vLLM's OnlineQuantizationConfig quantizes the "
        "weights at load and attaches no KV-cache method",
        s_.name));
    return std::optional<QuantPlan>(std::move(plan));
  }

 private:
  Shorthand s_;
};

}  // namespace

std::vector<const Importer*> VllmOnlineImporters() {
  static const std::vector<VllmOnlineImporter> kImporters = [] {
    std::vector<VllmOnlineImporter> importers;
    for (const Shorthand& s : Shorthands()) importers.emplace_back(s);
    return importers;
  }();
  std::vector<const Importer*> out;
  for (const VllmOnlineImporter& i : kImporters) out.push_back(&i);
  return out;
}

}  // namespace quantpath
