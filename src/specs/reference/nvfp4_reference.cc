// Reference entries of the NVFP4 source layouts (kModelOptNvfp4, kCtNvfp4PackQuantized), written
// from the format description, not from the spec:
//   W[r][c] = e2m1(nibble c of row r) × fp32(e4m3(weight_scale[r][c / 16]) × G), where nibble c
//   is the low half of byte c / 2 for even c and the high half for odd c, and G is the leg's own
//   global: ModelOpt `weight_scale_2` multiplies, compressed-tensors `weight_global_scale`
//   divides (fp32(scale / global)). The block's two-level scale is rounded to fp32 once, as the
//   producers' own dequantizations hold it (ModelOpt's NVFP4QTensor.dequantize: 1,346 of o_proj's
//   16,384 values differ from the unrounded product).
// The activation rounding of W4A4 (QuantizeNvfp4Reference) follows nvfp4_family.h's rule.
#include "src/specs/reference/nvfp4_reference.h"

#include <algorithm>
#include <cmath>

#include "fmt/format.h"
#include "src/specs/nvfp4_family.h"
#include "src/specs/reference/reference_io.h"

namespace quantpath {
namespace {

Result<double> ReadOne(const Checkpoint& checkpoint, std::string_view layer,
                       const std::string& name) {
  TensorInfo info;
  QP_ASSIGN_OR_RETURN(std::vector<double> v,
                      reference::ReadDoubles(checkpoint, layer, name, &info));
  if (v.size() != 1 || !(v[0] > 0.0) || !std::isfinite(v[0])) {
    return InvalidInput(
        fmt::format("{}: tensor {} is not one positive global scale", layer, info.name));
  }
  return v[0];
}

template <SourceLayout kLayout>
Result<ReferenceLeg> DequantizeNvfp4Leg(const Checkpoint& checkpoint, const QuantScheme& scheme,
                                        std::string_view layer, const std::string& prefix) {
  if (scheme.weight.dtype != QDType::kNVFP4) {
    return Unsupported(fmt::format("{}: the NVFP4 reference reads nvfp4 weights, not {}", layer,
                                   QDTypeName(scheme.weight.dtype)));
  }
  const int64_t group = scheme.weight.group_size.value_or(kNvfp4Group);
  const std::string weight_name = prefix + std::string(*SourceSuffix(kLayout, Slot::kWeight));
  Result<TensorView> packed = checkpoint.Get(weight_name);
  if (!packed.ok()) return packed.status().WithContext(layer);
  const std::vector<int64_t>& shape = packed->info->shape;
  if (packed->info->dtype != StDtype::kU8 || shape.size() != 2) {
    return InvalidInput(
        fmt::format("{}: tensor {} is not a U8 matrix of packed E2M1 codes", layer, weight_name));
  }
  const std::string scale_name = prefix + std::string(*SourceSuffix(kLayout, Slot::kWeightScale));
  TensorInfo info;
  QP_ASSIGN_OR_RETURN(std::vector<double> scales,
                      reference::ReadDoubles(checkpoint, layer, scale_name, &info));
  QP_ASSIGN_OR_RETURN(
      const double global,
      ReadOne(checkpoint, layer,
              prefix + std::string(*SourceSuffix(kLayout, Slot::kWeightGlobalScale))));
  ReferenceLeg leg;
  leg.rows = shape[0];
  leg.cols = shape[1] * 2;
  const int64_t groups = (leg.cols + group - 1) / group;
  if (static_cast<int64_t>(scales.size()) != leg.rows * groups) {
    return InvalidInput(fmt::format("{}: tensor {} has {} values, expected [{}, {}]", layer,
                                    info.name, scales.size(), leg.rows, groups));
  }
  leg.weight.resize(static_cast<size_t>(leg.rows * leg.cols));
  for (int64_t r = 0; r < leg.rows; ++r) {
    for (int64_t c = 0; c < leg.cols; ++c) {
      const auto byte = static_cast<unsigned>(packed->bytes[r * shape[1] + c / 2]);
      const double code = reference::DecodeE2M1(c % 2 == 0 ? byte & 0xF : byte >> 4);
      const double scale = scales[r * groups + c / group];
      // The two-level scale is one fp32 value per block, as both producers and the engines
      // compute it; code × that value is exact in double.
      const float block = kLayout == SourceLayout::kModelOptNvfp4
                              ? static_cast<float>(scale * static_cast<float>(global))
                              : static_cast<float>(scale / static_cast<float>(global));
      leg.weight[r * leg.cols + c] = code * block;
    }
  }
  return leg;
}

const ReferenceRegistrar kRegisterModelOpt(SourceLayout::kModelOptNvfp4,
                                           &DequantizeNvfp4Leg<SourceLayout::kModelOptNvfp4>);
const ReferenceRegistrar kRegisterCt(SourceLayout::kCtNvfp4PackQuantized,
                                     &DequantizeNvfp4Leg<SourceLayout::kCtNvfp4PackQuantized>);

}  // namespace

namespace reference {
namespace {

// OCP MX FP4 E2M1 magnitudes by the low three bits (exponent bits 2..1, mantissa bit 0).
constexpr double kE2M1Magnitudes[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};

}  // namespace

double DecodeE2M1(unsigned nibble) {
  const double magnitude = kE2M1Magnitudes[nibble & 7];
  return (nibble & 8) != 0 ? -magnitude : magnitude;
}

double RoundToE2M1(double v) {
  const double a = std::fabs(v);
  double best = 0.0;
  int best_code = 0;
  for (int code = 0; code < 8; ++code) {
    const double d = std::fabs(a - kE2M1Magnitudes[code]);
    const double best_d = std::fabs(a - best);
    if (d < best_d || (d == best_d && code % 2 == 0 && best_code % 2 == 1)) {
      best = kE2M1Magnitudes[code];
      best_code = code;
    }
  }
  return std::copysign(best, v);
}

std::vector<double> QuantizeNvfp4Reference(std::span<const double> x, int64_t m, int64_t k,
                                           int64_t group, std::optional<double> layer_divisor) {
  // Every step is an fp32 operation in the rule, so each is rounded to float here.
  const auto f = [](double v) { return static_cast<double>(static_cast<float>(v)); };
  std::vector<double> out(x.begin(), x.end());
  for (int64_t r = 0; r < m; ++r) {
    // Without a layer divisor the row's own: fp32(448 · 6 · fp32(1 / max |x_row|)), 1 where not
    // finite (nvfp4_family.h).
    double divisor = layer_divisor.value_or(0.0);
    if (!layer_divisor) {
      double row_amax = 0.0;
      for (int64_t c = 0; c < k; ++c) row_amax = std::max(row_amax, std::fabs(f(x[r * k + c])));
      const double g = f(448.0 * 6.0 * f(1.0 / row_amax));
      divisor = std::isfinite(g) ? g : 1.0;
    }
    for (int64_t begin = 0; begin < k; begin += group) {
      const int64_t end = std::min(k, begin + group);
      double amax = 0.0;
      for (int64_t c = begin; c < end; ++c) amax = std::max(amax, std::fabs(f(x[r * k + c])));
      const double s = RoundToE4M3(f(divisor * f(amax / kE2M1Max)));
      const double to_code = s == 0.0 ? 0.0 : f(divisor / s);
      for (int64_t c = begin; c < end; ++c) {
        out[r * k + c] = RoundToE2M1(f(f(x[r * k + c]) * to_code)) * s / divisor;
      }
    }
  }
  return out;
}

}  // namespace reference
}  // namespace quantpath
