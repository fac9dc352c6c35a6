// Reference entries of the int8 layouts, written from the formats' own dequantization:
//   compressed-tensors int-quantized (compressed-tensors' `dequantize`, also SGLang w8a8_int8's
//   tensors): W[r][c] = (weight[r][c] − zp) · scale, `weight` I8 [N, K], `weight_scale` [N, 1]
//   (channel), [N, K / g] (group) or [1] (tensor), `weight_zero_point` I8 like the scale when
//   asymmetric (zp = 0 otherwise);
//   ModelSlim W8A8 / W8A8_DYNAMIC (msmodelslim's fake-quantization): W[r][c] = (weight[r][c] −
//   weight_offset[r]) · weight_scale[r], both [N, 1] in the model dtype.
// And the int8 activations: QuantizeInt8Reference, and the static input grid of the legs (the
// spec's rule, CombineStaticInputs, for compressed-tensors; ModelSlim's legs must agree).
#include "src/specs/reference/int8_reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "fmt/format.h"
#include "src/specs/reference/int4_reference.h"
#include "src/specs/reference/mx_reference.h"
#include "src/specs/reference/reference_io.h"
#include "src/specs/w8a8_family.h"

namespace quantpath {
namespace {

// An integer tensor (I8, I32) or a float one holding integers, as doubles.
Result<std::vector<double>> ReadIntegers(const Checkpoint& checkpoint, std::string_view layer,
                                         const std::string& name, TensorInfo* info) {
  Result<TensorView> view = checkpoint.Get(name);
  if (!view.ok()) return view.status().WithContext(layer);
  *info = *view->info;
  const int64_t n = view->info->Elements();
  std::vector<double> out(static_cast<size_t>(std::max<int64_t>(n, 0)));
  if (view->info->dtype == StDtype::kI8) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int8_t>(view->bytes[i]);
    return out;
  }
  if (view->info->dtype == StDtype::kI32) {
    for (int64_t i = 0; i < n; ++i) {
      int32_t v;
      std::memcpy(&v, view->bytes.data() + 4 * i, 4);
      out[i] = v;
    }
    return out;
  }
  QP_ASSIGN_OR_RETURN(out, reference::ReadDoubles(checkpoint, layer, name, info));
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] != std::nearbyint(out[i])) {
      return InvalidInput(fmt::format("{}: tensor {} holds {} at index {}, not an integer", layer,
                                      name, out[i], i));
    }
  }
  return out;
}

Status CheckInt8(const QuantScheme& scheme, std::string_view layer) {
  if (scheme.weight.dtype == QDType::kINT8) return {};
  return Unsupported(fmt::format("{}: the int8 reference reads int8 weights, not {}", layer,
                                 QDTypeName(scheme.weight.dtype)));
}

Result<ReferenceLeg> DequantizeCtInt8Leg(const Checkpoint& checkpoint, const QuantScheme& scheme,
                                         std::string_view layer, const std::string& prefix) {
  QP_RETURN_IF_ERROR(CheckInt8(scheme, layer));
  QP_ASSIGN_OR_RETURN(ReferenceLeg leg,
                      reference::ReadInt8Weight(checkpoint, layer, prefix + ".weight"));
  const int64_t rows = leg.rows;
  const int64_t cols = leg.cols;
  TensorInfo info;
  QP_ASSIGN_OR_RETURN(std::vector<double> s,
                      reference::ReadDoubles(checkpoint, layer, prefix + ".weight_scale", &info));
  int64_t per_row = 0;  // scales per row; 0: one for the tensor
  int64_t group = cols;
  switch (scheme.weight.granularity) {
    case Granularity::kPerTensor:
      break;
    case Granularity::kPerChannel:
      per_row = 1;
      break;
    case Granularity::kGroup:
      if (!scheme.weight.group_size || *scheme.weight.group_size <= 0) break;
      group = *scheme.weight.group_size;
      per_row = (cols + group - 1) / group;
      break;
    default:
      return Unsupported(fmt::format("{}: the reference has no int8 weights with {} scales", layer,
                                     GranularityName(scheme.weight.granularity)));
  }
  const size_t expected = per_row == 0 ? 1 : static_cast<size_t>(rows * per_row);
  if (s.size() != expected) {
    return InvalidInput(fmt::format("{}: tensor {} has {} values, not {} for a [{}, {}] weight",
                                    layer, info.name, s.size(), expected, rows, cols));
  }
  std::vector<double> zp(expected, 0.0);
  if (!scheme.weight.symmetric) {
    QP_ASSIGN_OR_RETURN(zp, ReadIntegers(checkpoint, layer, prefix + ".weight_zero_point", &info));
    if (zp.size() != expected) {
      return InvalidInput(fmt::format("{}: tensor {} has {} values, not {}", layer, info.name,
                                      zp.size(), expected));
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = per_row == 0 ? 0 : static_cast<size_t>(r * per_row + c / group);
      double& v = leg.weight[r * cols + c];
      v = (v - zp[i]) * s[i];
    }
  }
  return leg;
}

Result<ReferenceLeg> DequantizeModelSlimInt8Leg(const Checkpoint& checkpoint,
                                                const QuantScheme& scheme, std::string_view layer,
                                                const std::string& prefix) {
  // One entry per source layout: ModelSlim's int4 types are read apart (int4_reference.cc).
  if (scheme.weight.dtype == QDType::kINT4) {
    return reference::DequantizeModelSlimInt4Leg(checkpoint, scheme, layer, prefix);
  }
  if (scheme.weight.dtype == QDType::kMXFP4 || scheme.weight.dtype == QDType::kMXFP8) {
    return reference::DequantizeMxLeg(checkpoint, scheme, SourceLayout::kModelSlim, layer, prefix);
  }
  QP_RETURN_IF_ERROR(CheckInt8(scheme, layer));
  QP_ASSIGN_OR_RETURN(ReferenceLeg leg,
                      reference::ReadInt8Weight(checkpoint, layer, prefix + ".weight"));
  TensorInfo info;
  QP_ASSIGN_OR_RETURN(std::vector<double> s,
                      reference::ReadDoubles(checkpoint, layer, prefix + ".weight_scale", &info));
  std::vector<double> offset(s.size(), 0.0);
  if (checkpoint.Has(prefix + ".weight_offset")) {
    QP_ASSIGN_OR_RETURN(offset, ReadIntegers(checkpoint, layer, prefix + ".weight_offset", &info));
  }
  QP_RETURN_IF_ERROR(reference::ApplyRowScaleAndOffset(layer, prefix, s, offset, &leg));
  return leg;
}

const ReferenceRegistrar kRegisterCt(SourceLayout::kCtNaiveQuantized, &DequantizeCtInt8Leg);
const ReferenceRegistrar kRegisterModelSlim(SourceLayout::kModelSlim, &DequantizeModelSlimInt8Leg);

// The fp32 value of a double that holds an fp32 operation's exact result (or its rounding).
double F32(double v) { return static_cast<double>(static_cast<float>(v)); }

double ToCode(double v) {
  if (std::isnan(v)) return 0;
  return std::clamp(v, static_cast<double>(kInt8Min), static_cast<double>(kInt8Max));
}

}  // namespace

namespace reference {

std::vector<double> QuantizeInt8Reference(std::span<const double> x, int64_t m, int64_t k,
                                          const ActivationQuant& act, double static_scale,
                                          double static_zero_point) {
  std::vector<double> out(x.begin(), x.end());
  for (int64_t r = 0; r < m; ++r) {
    double* row = out.data() + r * k;
    if (act.mode == ActMode::kStaticPerTensor) {
      const double s = F32(static_scale);
      for (int64_t c = 0; c < k; ++c) {
        const double q = ToCode(std::nearbyint(F32(row[c] / s)) + static_zero_point);
        row[c] = (q - static_zero_point) * s;
      }
      continue;
    }
    if (!act.symmetric) {
      // vLLM's per-token zero point: the row's [min, max] on 255 steps, z = round(−128 − min / s)
      // (NaN left out; a constant row's range stretched to include 0, as the kernel does).
      double lo = std::numeric_limits<double>::infinity();
      double hi = -lo;
      for (int64_t c = 0; c < k; ++c) {
        if (F32(row[c]) < lo) lo = F32(row[c]);
        if (F32(row[c]) > hi) hi = F32(row[c]);
      }
      if (!(F32(hi - lo) >= F32(kActAbsMaxFloor))) {
        lo = std::min(lo, 0.0);
        hi = std::max(hi, 0.0);
      }
      const double range = std::max(F32(hi - lo), F32(kActAbsMaxFloor));
      const double s = F32(range / (kInt8Max - kInt8Min));
      double z = std::nearbyint(F32(kInt8Min - F32(lo / s)));
      z = std::isfinite(z) ? std::clamp(z, -1e9, 1e9) : 0;
      for (int64_t c = 0; c < k; ++c) {
        row[c] = (ToCode(std::nearbyint(F32(F32(row[c]) / s)) + z) - z) * s;
      }
      continue;
    }
    double absmax = 0;
    for (int64_t c = 0; c < k; ++c) absmax = std::max(absmax, std::fabs(F32(row[c])));
    absmax = std::max(F32(absmax), F32(kActAbsMaxFloor));
    const double s = F32(absmax / kInt8Max);
    const double inv = F32(kInt8Max / absmax);
    for (int64_t c = 0; c < k; ++c) row[c] = ToCode(std::nearbyint(F32(F32(row[c]) * inv))) * s;
  }
  return out;
}

Status ReadStaticInt8Inputs(const Checkpoint& checkpoint, const QuantScheme& scheme,
                            std::string_view layer_name,
                            const std::vector<std::string>& scale_names,
                            const std::vector<std::string>& zero_names, ReferenceLayer* layer) {
  const bool symmetric = scheme.input->symmetric;
  std::vector<float> scales;
  std::vector<int32_t> zeros;
  for (size_t leg = 0; leg < scale_names.size(); ++leg) {
    TensorInfo info;
    QP_ASSIGN_OR_RETURN(std::vector<double> s,
                        ReadDoubles(checkpoint, layer_name, scale_names[leg], &info));
    if (s.size() != 1) {
      return InvalidInput(fmt::format("{}: tensor {} is not one value", layer_name, info.name));
    }
    scales.push_back(static_cast<float>(s[0]));
    zeros.push_back(0);
    if (symmetric) continue;
    QP_ASSIGN_OR_RETURN(std::vector<double> z,
                        ReadIntegers(checkpoint, layer_name, zero_names[leg], &info));
    if (z.size() != 1 || z[0] < kInt8Min || z[0] > kInt8Max) {
      return InvalidInput(
          fmt::format("{}: tensor {} is not one int8 zero point", layer_name, info.name));
    }
    zeros.back() = static_cast<int32_t>(z[0]);
  }
  if (scheme.weight.load.layout == SourceLayout::kModelSlim) {
    for (size_t leg = 1; leg < scales.size(); ++leg) {
      if (scales[leg] != scales[0] || zeros[leg] != zeros[0]) {
        return InvalidInput(fmt::format("{}: tensor {} and its offset differ from the first leg's",
                                        layer_name, scale_names[leg]));
      }
    }
    layer->input_scale = scales[0];
    layer->input_zero_point = zeros[0];
    return {};
  }
  const auto [scale, zero] = CombineStaticInputs(scales, zeros, symmetric);
  layer->input_scale = scale;
  if (!symmetric) layer->input_zero_point = zero;
  return {};
}

}  // namespace reference
}  // namespace quantpath
