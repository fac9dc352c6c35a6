// Reference entries of the fp8 source layouts (kFp8ScaleInv, kFp8Scale, kCtFloatQuantized,
// kModelOptFp8): W[r][c] = decode_e4m3(weight[r][c]) × s, where s is the leg's single scale
// (per-tensor), scale[r] (per-channel), or S[r / bn][c / bk] of the leg's own grid (block). The
// scale tensor is the one SourceTensors names for the layout (`weight_scale_inv` multiplies too).
// MXFP8 weights under the float-quantized names go to the MX reference (mx_reference.cc).
#include "fmt/format.h"
#include "quantpath/specs.h"
#include "src/specs/reference/mx_reference.h"
#include "src/specs/reference/reference_io.h"

namespace quantpath {
namespace {

template <SourceLayout kLayout>
Result<ReferenceLeg> DequantizeFp8Leg(const Checkpoint& checkpoint, const QuantScheme& scheme,
                                      std::string_view layer, const std::string& prefix) {
  const TensorQuant& w = scheme.weight;
  // compressed-tensors mxfp8-quantized writes the float-quantized names.
  if (w.dtype == QDType::kMXFP8) {
    return reference::DequantizeMxLeg(checkpoint, scheme, kLayout, layer, prefix);
  }
  if (w.dtype != QDType::kFP8E4M3) {
    return Unsupported(fmt::format("{}: the fp8 reference reads e4m3 weights, not {}", layer,
                                   QDTypeName(w.dtype)));
  }
  QP_ASSIGN_OR_RETURN(ReferenceLeg leg, reference::ReadWeight(checkpoint, kLayout, layer, prefix));
  const std::string name = prefix + std::string(*SourceSuffix(kLayout, Slot::kWeightScale));
  TensorInfo info;
  QP_ASSIGN_OR_RETURN(std::vector<double> s,
                      reference::ReadDoubles(checkpoint, layer, name, &info));
  const int64_t rows = leg.rows;
  const int64_t cols = leg.cols;
  double* v = leg.weight.data();
  switch (w.granularity) {
    case Granularity::kPerTensor:
      if (s.size() != 1) break;
      for (int64_t i = 0; i < rows * cols; ++i) v[i] *= s[0];
      return leg;
    case Granularity::kPerChannel:
      if (static_cast<int64_t>(s.size()) != rows) break;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) v[r * cols + c] *= s[r];
      }
      return leg;
    case Granularity::kBlock: {
      if (!w.block_shape) break;
      const auto [bn, bk] = *w.block_shape;
      const int64_t grid_cols = (cols + bk - 1) / bk;
      if (static_cast<int64_t>(s.size()) != (rows + bn - 1) / bn * grid_cols) break;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) v[r * cols + c] *= s[(r / bn) * grid_cols + c / bk];
      }
      return leg;
    }
    default:
      return Unsupported(fmt::format("{}: the reference has no fp8 weights with {} scales", layer,
                                     GranularityName(w.granularity)));
  }
  return InvalidInput(
      fmt::format("{}: tensor {} has {} values, which do not fit a [{}, {}] {} "
                  "weight",
                  layer, name, s.size(), rows, cols, GranularityName(w.granularity)));
}

const ReferenceRegistrar kRegisterScaleInv(SourceLayout::kFp8ScaleInv,
                                           &DequantizeFp8Leg<SourceLayout::kFp8ScaleInv>);
const ReferenceRegistrar kRegisterScale(SourceLayout::kFp8Scale,
                                        &DequantizeFp8Leg<SourceLayout::kFp8Scale>);
const ReferenceRegistrar kRegisterCtFloat(SourceLayout::kCtFloatQuantized,
                                          &DequantizeFp8Leg<SourceLayout::kCtFloatQuantized>);
const ReferenceRegistrar kRegisterModelOpt(SourceLayout::kModelOptFp8,
                                           &DequantizeFp8Leg<SourceLayout::kModelOptFp8>);

}  // namespace
}  // namespace quantpath
