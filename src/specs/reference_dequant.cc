// The double-precision reference: checkpoint tensors → dequantized weights, and activation
// quantization, written from the format conventions without going through any spec, so that it
// can judge the specs and the kernels.
//
// What it does, exactly:
//   weights:  W = decode(weight) for bf16 / fp16 / fp32 schemes; for fp8 schemes
//             W[r][c] = decode(weight[r][c]) × s, where s is the leg's single `weight_scale`
//             (per-tensor), `weight_scale[r]` (per-channel), or S[r / bn][c / bk] of the leg's own
//             `weight_scale_inv` / `weight_scale` grid (block). Legs are stacked in order.
//   inputs:   the static activation scale is the max of the legs' `input_scale`.
//   X:        per ActivationQuant: scale = max(absmax, kActAbsMaxFloor) / 448 over the row, the
//             whole X, or each group of columns of a row, divided in fp32 because scales are fp32
//             values (or the static scale); X' = RoundToE4M3(X / scale) × scale in double.
#include <cmath>

#include "fmt/format.h"
#include "quantpath/specs.h"

namespace quantpath {
namespace {

Result<std::vector<double>> ReadDoubles(const Checkpoint& checkpoint, std::string_view layer,
                                        const std::string& name, TensorInfo* info) {
  Result<TensorView> view = checkpoint.Get(name);
  if (!view.ok()) return view.status().WithContext(layer);
  *info = *view->info;
  Result<std::vector<float>> values = TensorToFloat(*view);
  if (!values.ok()) return values.status().WithContext(layer);
  return std::vector<double>(values->begin(), values->end());
}

std::string ScaleNameFor(const Checkpoint& checkpoint, const QuantScheme& scheme,
                         const std::string& prefix) {
  if (scheme.weight.granularity == Granularity::kBlock &&
      checkpoint.Has(prefix + ".weight_scale_inv")) {
    return prefix + ".weight_scale_inv";
  }
  return prefix + ".weight_scale";
}

// Multiplies one leg's decoded fp8 weight [rows, cols] by its scales.
Status ApplyScales(const Checkpoint& checkpoint, const QuantScheme& scheme, std::string_view layer,
                   const std::string& prefix, int64_t rows, int64_t cols, double* w) {
  TensorInfo info;
  const std::string name = ScaleNameFor(checkpoint, scheme, prefix);
  QP_ASSIGN_OR_RETURN(std::vector<double> s, ReadDoubles(checkpoint, layer, name, &info));
  switch (scheme.weight.granularity) {
    case Granularity::kPerTensor:
      if (s.size() != 1) break;
      for (int64_t i = 0; i < rows * cols; ++i) w[i] *= s[0];
      return {};
    case Granularity::kPerChannel:
      if (static_cast<int64_t>(s.size()) != rows) break;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) w[r * cols + c] *= s[r];
      }
      return {};
    case Granularity::kBlock: {
      if (!scheme.weight.block_shape) break;
      const auto [bn, bk] = *scheme.weight.block_shape;
      const int64_t grid_cols = (cols + bk - 1) / bk;
      if (static_cast<int64_t>(s.size()) != (rows + bn - 1) / bn * grid_cols) break;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) w[r * cols + c] *= s[(r / bn) * grid_cols + c / bk];
      }
      return {};
    }
    default:
      return Unsupported(fmt::format("{}: the reference has no fp8 weights with {} scales", layer,
                                     GranularityName(scheme.weight.granularity)));
  }
  return InvalidInput(
      fmt::format("{}: tensor {} has {} values, which do not fit a [{}, {}] {} "
                  "weight",
                  layer, name, s.size(), rows, cols, GranularityName(scheme.weight.granularity)));
}

}  // namespace

double RoundToE4M3(double value) {
  if (std::isnan(value)) return value;
  const double a = std::fabs(value);
  if (a >= kFp8E4M3Max) return std::copysign(kFp8E4M3Max, value);
  int e2 = 0;
  std::frexp(a, &e2);  // a = f × 2^e2, f in [0.5, 1): the leading bit is 2^(e2 - 1)
  // Normals have 3 mantissa bits below the leading one; below 2^-6 the spacing stays 2^-9.
  const int quantum_exp = std::max(e2 - 1, -6) - 3;
  const double q = std::nearbyint(std::ldexp(a, -quantum_exp));  // ties to even
  return std::copysign(std::min(std::ldexp(q, quantum_exp), kFp8E4M3Max), value);
}

Result<ReferenceLayer> DequantizeReference(const Checkpoint& checkpoint, const QuantScheme& scheme,
                                           std::string_view layer,
                                           const std::vector<std::string>& leg_prefixes,
                                           bool bias) {
  const QDType dtype = scheme.weight.dtype;
  const bool fp8 = dtype == QDType::kFP8E4M3;
  if (!fp8 && dtype != QDType::kBF16 && dtype != QDType::kFP16 && dtype != QDType::kFP32) {
    return Unsupported(
        fmt::format("{}: the reference cannot dequantize {} weights", layer, QDTypeName(dtype)));
  }
  ReferenceLayer out;
  for (const std::string& prefix : leg_prefixes) {
    TensorInfo info;
    QP_ASSIGN_OR_RETURN(std::vector<double> w,
                        ReadDoubles(checkpoint, layer, prefix + ".weight", &info));
    if (info.shape.size() != 2 || (out.cols != 0 && info.shape[1] != out.cols)) {
      return InvalidInput(
          fmt::format("{}: tensor {} is not a [rows, {}] matrix", layer, info.name, out.cols));
    }
    const int64_t rows = info.shape[0];
    out.cols = info.shape[1];
    if (fp8) {
      QP_RETURN_IF_ERROR(ApplyScales(checkpoint, scheme, layer, prefix, rows, out.cols, w.data()));
    }
    out.weight.insert(out.weight.end(), w.begin(), w.end());
    out.rows += rows;
    if (scheme.input && scheme.input->dynamic == Dynamic::kStatic) {
      QP_ASSIGN_OR_RETURN(std::vector<double> s,
                          ReadDoubles(checkpoint, layer, prefix + ".input_scale", &info));
      if (s.size() != 1) {
        return InvalidInput(fmt::format("{}: tensor {} is not one value", layer, info.name));
      }
      out.input_scale = std::max(out.input_scale.value_or(s[0]), s[0]);
    }
    if (bias) {
      QP_ASSIGN_OR_RETURN(std::vector<double> b,
                          ReadDoubles(checkpoint, layer, prefix + ".bias", &info));
      if (static_cast<int64_t>(b.size()) != rows) {
        return InvalidInput(
            fmt::format("{}: tensor {} does not have {} values", layer, info.name, rows));
      }
      out.bias.insert(out.bias.end(), b.begin(), b.end());
    }
  }
  return out;
}

std::vector<double> QuantizeActivationsReference(std::span<const double> x, int64_t m, int64_t k,
                                                 const ActivationQuant& act,
                                                 std::optional<double> static_scale) {
  std::vector<double> out(x.begin(), x.end());
  if (act.mode == ActMode::kNone) return out;
  // Quantizes out[row * k + c] for c in [begin, end) of each row in [row_begin, row_end) with one
  // scale.
  auto quantize = [&](int64_t row_begin, int64_t row_end, int64_t begin, int64_t end,
                      std::optional<double> fixed) {
    double absmax = 0;
    for (int64_t r = row_begin; r < row_end; ++r) {
      for (int64_t c = begin; c < end; ++c) absmax = std::max(absmax, std::fabs(x[r * k + c]));
    }
    // Scales are fp32 values, as engines store them: the division is fp32's.
    const double scale =
        fixed ? *fixed
              : std::max(static_cast<float>(absmax), static_cast<float>(kActAbsMaxFloor)) /
                    static_cast<float>(kFp8E4M3Max);
    for (int64_t r = row_begin; r < row_end; ++r) {
      for (int64_t c = begin; c < end; ++c) {
        out[r * k + c] = RoundToE4M3(x[r * k + c] / scale) * scale;
      }
    }
  };
  switch (act.mode) {
    case ActMode::kDynamicPerToken:
      for (int64_t r = 0; r < m; ++r) quantize(r, r + 1, 0, k, std::nullopt);
      break;
    case ActMode::kDynamicPerTensor:
      quantize(0, m, 0, k, std::nullopt);
      break;
    case ActMode::kDynamicGroup:
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t c = 0; c < k; c += act.group_size) {
          quantize(r, r + 1, c, std::min(k, c + act.group_size), std::nullopt);
        }
      }
      break;
    case ActMode::kStaticPerTensor:
      quantize(0, m, 0, k, static_scale.value_or(1.0));
      break;
    case ActMode::kNone:
      break;
  }
  return out;
}

}  // namespace quantpath
