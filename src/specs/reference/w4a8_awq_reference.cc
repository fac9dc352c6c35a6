// Reference entry of ModelOpt's W4A8_AWQ source layout (kModelOptW4A8Awq), written from the
// export's description (modelopt 0.47.0 export/quant_utils.py, pack_int4_in_uint8 and
// to_quantized_weight), not from the spec:
//   weight U8 [N/2, K]: byte [j][k] holds row 2j's signed int4 code in bits 0–3 and row 2j + 1's
//   in bits 4–7 (two's complement); weight_scale [N, K/g] (g from the scheme, 128);
//   W[n][k] = code · weight_scale[n][k / g], exact in double. weight_scale_2 (the kernel's fp8
//   stage) does not enter W.
//   pre_quant_scale [K], where present, is read with the layer (reference_dequant.cc).
#include "fmt/format.h"
#include "quantpath/specs.h"
#include "src/specs/reference/reference_io.h"

namespace quantpath {
namespace {

Result<ReferenceLeg> DequantizeW4a8AwqLeg(const Checkpoint& checkpoint, const QuantScheme& scheme,
                                          std::string_view layer, const std::string& prefix) {
  if (scheme.weight.dtype != QDType::kINT4 || !scheme.weight.group_size ||
      *scheme.weight.group_size <= 0) {
    return Unsupported(
        fmt::format("{}: the W4A8_AWQ reference reads int4 weights with a group size, not {}",
                    layer, scheme.CanonicalName()));
  }
  const int64_t group = *scheme.weight.group_size;
  const std::string weight_name = prefix + ".weight";
  Result<TensorView> packed = checkpoint.Get(weight_name);
  if (!packed.ok()) return packed.status().WithContext(layer);
  const std::vector<int64_t>& shape = packed->info->shape;
  if (packed->info->dtype != StDtype::kU8 || shape.size() != 2) {
    return InvalidInput(
        fmt::format("{}: tensor {} is not a U8 matrix of int4 codes packed in pairs of rows", layer,
                    weight_name));
  }
  ReferenceLeg leg;
  leg.rows = shape[0] * 2;
  leg.cols = shape[1];
  TensorInfo info;
  QP_ASSIGN_OR_RETURN(std::vector<double> scales,
                      reference::ReadDoubles(checkpoint, layer, prefix + ".weight_scale", &info));
  const int64_t groups = (leg.cols + group - 1) / group;
  if (info.shape != std::vector<int64_t>{leg.rows, groups}) {
    return InvalidInput(
        fmt::format("{}: tensor {} is not [{}, {}]", layer, info.name, leg.rows, groups));
  }
  leg.weight.resize(static_cast<size_t>(leg.rows * leg.cols));
  for (int64_t r = 0; r < leg.rows; ++r) {
    for (int64_t c = 0; c < leg.cols; ++c) {
      const auto byte = static_cast<unsigned>(packed->bytes[(r / 2) * leg.cols + c]);
      const unsigned nibble = r % 2 == 0 ? byte & 0xF : byte >> 4;
      const int code = nibble >= 8 ? static_cast<int>(nibble) - 16 : static_cast<int>(nibble);
      leg.weight[r * leg.cols + c] = code * scales[r * groups + c / group];
    }
  }
  return leg;
}

const ReferenceRegistrar kRegister(SourceLayout::kModelOptW4A8Awq, &DequantizeW4a8AwqLeg);

}  // namespace
}  // namespace quantpath
