// quant_method "fp8" as DeepSeek-V3 publishes it: e4m3 weights with `weight_scale_inv` per
// [bn, bk] block (`weight_block_size`), or one `weight_scale` per tensor without it; activations
// quantized at run time. The unquantized modules go to `ignored_layers` (what vLLM's and SGLang's
// Fp8Config read) and `modules_to_not_convert` (what transformers' FineGrainedFP8Config reads), as
// module names: neither engine reads "re:" patterns there, so they are spelled out.
#include "fmt/format.h"
#include "src/export/format_row.h"

namespace quantpath::export_internal {
namespace {

Result<SourceLayout> Layout(const QuantScheme& scheme) {
  const TensorQuant& w = scheme.weight;
  const std::string name = scheme.CanonicalName();
  if (w.dtype != QDType::kFP8E4M3) {
    return Unsupported(fmt::format("{}: quant_method fp8 stores fp8 e4m3 weights only", name));
  }
  if (!scheme.input || scheme.input->dtype != QDType::kFP8E4M3 ||
      scheme.input->dynamic != Dynamic::kDynamic) {
    return Unsupported(fmt::format(
        "{}: quant_method fp8 here writes dynamic fp8 activations (activation_scheme dynamic)",
        name));
  }
  if (w.granularity == Granularity::kBlock) return SourceLayout::kFp8ScaleInv;
  if (w.granularity == Granularity::kPerTensor) return SourceLayout::kFp8Scale;
  return Unsupported(fmt::format(
      "{}: quant_method fp8 has per-tensor and block scales only; compressed-tensors stores "
      "per-channel scales",
      name));
}

Json Config(const QuantScheme& scheme, SourceLayout, const std::vector<std::string>& ignore) {
  std::vector<Json> names;
  for (const std::string& module : ignore) names.push_back(Json::String(module));
  std::vector<Json::Member> members = {{"activation_scheme", Json::String("dynamic")},
                                       {"fmt", Json::String("e4m3")},
                                       {"ignored_layers", Json::Array(names)},
                                       {"modules_to_not_convert", Json::Array(names)},
                                       {"quant_method", Json::String("fp8")}};
  if (scheme.weight.block_shape) {
    const auto& b = *scheme.weight.block_shape;
    members.emplace_back("weight_block_size", Json::Array({Json::Int(b[0]), Json::Int(b[1])}));
  }
  return Json::Object(std::move(members));
}

const FormatRegistrar kRegister({CheckpointFormat::kNativeFp8, "native-fp8", Layout, Config});

}  // namespace
}  // namespace quantpath::export_internal
