// Reference entries of the MX weights, written from OCP MX v1.0 and the producers' layouts, not
// from the spec:
//   W[r][c] = elem(r, c) × 2^(scale[r][c / 32] − 127), where elem is the E2M1 value of nibble c
//   of row r (the low half of byte c / 2 for even c, the high half for odd c) or the E4M3 value
//   of byte c; a scale byte of 0xFF (E8M0 NaN) is an error. Every product is exact in double.
// compressed-tensors mxfp4-pack-quantized registers here; its mxfp8-quantized (float-quantized
// names) and ModelSlim's MX types reach DequantizeMxLeg from the entries of those layouts.
// The activation rounding (QuantizeMxReference) follows mx_family.h's rule.
#include "src/specs/reference/mx_reference.h"

#include <algorithm>
#include <cmath>

#include "fmt/format.h"
#include "quantpath/numeric.h"
#include "src/specs/mx_family.h"
#include "src/specs/reference/nvfp4_reference.h"
#include "src/specs/reference/reference_io.h"

namespace quantpath {
namespace reference {

Result<ReferenceLeg> DequantizeMxLeg(const Checkpoint& checkpoint, const QuantScheme& scheme,
                                     SourceLayout layout, std::string_view layer,
                                     const std::string& prefix) {
  const QDType dtype = scheme.weight.dtype;
  if (dtype != QDType::kMXFP4 && dtype != QDType::kMXFP8) {
    return Unsupported(fmt::format("{}: the MX reference reads mxfp4 or mxfp8 weights, not {}",
                                   layer, QDTypeName(dtype)));
  }
  const bool fp4 = dtype == QDType::kMXFP4;
  const int64_t group = scheme.weight.group_size.value_or(kMxGroup);
  const std::string weight_name = prefix + std::string(*SourceSuffix(layout, Slot::kWeight));
  Result<TensorView> weight = checkpoint.Get(weight_name);
  if (!weight.ok()) return weight.status().WithContext(layer);
  const std::vector<int64_t>& shape = weight->info->shape;
  const StDtype expected = fp4 ? StDtype::kU8 : StDtype::kF8E4M3;
  if (weight->info->dtype != expected || shape.size() != 2) {
    return InvalidInput(fmt::format("{}: tensor {} is not a {} matrix of {} codes", layer,
                                    weight_name, StDtypeName(expected), fp4 ? "E2M1" : "E4M3"));
  }
  const std::string scale_name = prefix + std::string(*SourceSuffix(layout, Slot::kWeightScale));
  Result<TensorView> scale = checkpoint.Get(scale_name);
  if (!scale.ok()) return scale.status().WithContext(layer);
  ReferenceLeg leg;
  leg.rows = shape[0];
  leg.cols = fp4 ? shape[1] * 2 : shape[1];
  const int64_t groups = (leg.cols + group - 1) / group;
  if (scale->info->dtype != StDtype::kU8 ||
      scale->info->shape != std::vector<int64_t>{leg.rows, groups}) {
    return InvalidInput(fmt::format("{}: tensor {} is not U8 [{}, {}] of E8M0 scales", layer,
                                    scale_name, leg.rows, groups));
  }
  leg.weight.resize(static_cast<size_t>(leg.rows * leg.cols));
  for (int64_t r = 0; r < leg.rows; ++r) {
    for (int64_t c = 0; c < leg.cols; ++c) {
      const auto s = static_cast<unsigned>(scale->bytes[r * groups + c / group]);
      if (s == kE8M0Nan) {
        return InvalidInput(fmt::format("{}: tensor {} holds an E8M0 NaN at row {}, block {}",
                                        layer, scale_name, r, c / group));
      }
      const auto byte = static_cast<unsigned>(weight->bytes[r * shape[1] + (fp4 ? c / 2 : c)]);
      const double elem = fp4 ? DecodeE2M1(c % 2 == 0 ? byte & 0xF : byte >> 4)
                              : static_cast<double>(Fp8E4M3ToFloat(static_cast<uint8_t>(byte)));
      leg.weight[r * leg.cols + c] = std::ldexp(elem, static_cast<int>(s) - kE8M0Bias);
    }
  }
  return leg;
}

std::vector<double> QuantizeMxReference(std::span<const double> x, int64_t m, int64_t k,
                                        int64_t group, QDType element) {
  std::vector<double> out(x.begin(), x.end());
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t begin = 0; begin < k; begin += group) {
      const int64_t end = std::min(k, begin + group);
      double amax = 0.0;
      for (int64_t c = begin; c < end; ++c) amax = std::max(amax, std::fabs(x[r * k + c]));
      const int e = MxSharedExponent(amax, element);
      for (int64_t c = begin; c < end; ++c) {
        const double v = std::ldexp(x[r * k + c], -e);
        const double q = element == QDType::kMXFP4 ? RoundToE2M1(v) : RoundToE4M3(v);
        out[r * k + c] = std::ldexp(q, e);
      }
    }
  }
  return out;
}

}  // namespace reference

namespace {

Result<ReferenceLeg> DequantizeCtMxfp4Leg(const Checkpoint& checkpoint, const QuantScheme& scheme,
                                          std::string_view layer, const std::string& prefix) {
  return reference::DequantizeMxLeg(checkpoint, scheme, SourceLayout::kCtMxfp4PackQuantized, layer,
                                    prefix);
}

const ReferenceRegistrar kRegisterCt(SourceLayout::kCtMxfp4PackQuantized, &DequantizeCtMxfp4Leg);

}  // namespace
}  // namespace quantpath
