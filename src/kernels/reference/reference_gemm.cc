// Activation handling shared by the reference kernels.
#include "src/kernels/reference/reference_gemm.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "quantpath/numeric.h"
#include "src/specs/w4a_family.h"

namespace quantpath::reference {
namespace {

// The scale of xs[row * k + c] for the rows [row_begin, row_end) and columns [begin, end): the
// given one, or max(absmax, floor) / 448 of the block (specs.h's convention).
float BlockScale(const std::vector<float>& xs, int64_t k, int64_t row_begin, int64_t row_end,
                 int64_t begin, int64_t end, std::optional<float> fixed_scale) {
  if (fixed_scale) return *fixed_scale;
  float absmax = 0.0f;
  for (int64_t r = row_begin; r < row_end; ++r) {
    for (int64_t c = begin; c < end; ++c) absmax = std::max(absmax, std::fabs(xs[r * k + c]));
  }
  return std::max(absmax, static_cast<float>(kActAbsMaxFloor)) / static_cast<float>(kFp8E4M3Max);
}

float Fp8Code(float v, float scale) { return Fp8E4M3ToFloat(FloatToFp8E4M3(v / scale)); }

// Quantizes the block in place to code · scale.
void QuantizeBlock(std::vector<float>* xs, int64_t k, int64_t row_begin, int64_t row_end,
                   int64_t begin, int64_t end, std::optional<float> fixed_scale) {
  const float scale = BlockScale(*xs, k, row_begin, row_end, begin, end, fixed_scale);
  for (int64_t r = row_begin; r < row_end; ++r) {
    for (int64_t c = begin; c < end; ++c) {
      float& v = (*xs)[r * k + c];
      v = Fp8Code(v, scale) * scale;
    }
  }
}

// X [m, k] → fp32, multiplied by params.pre_quant_scale where the layer has one.
std::vector<float> ToFloats(const LinearParams& params, const ConstMatrix& x) {
  const int64_t m = x.rows;
  const int64_t k = x.cols;
  std::vector<float> xs(static_cast<size_t>(m * k));
  if (x.dtype == QDType::kBF16) {
    Bf16ToFloats(static_cast<const uint16_t*>(x.data), m * k, xs.data());
  } else {
    std::copy_n(static_cast<const float*>(x.data), m * k, xs.data());
  }
  // AWQ's input prescale (pre_quant_scale) multiplies X before it is quantized.
  if (const ParamTensor& prescale = params.tensor(Slot::kPreQuantScale); !prescale.empty()) {
    for (int64_t i = 0; i < m * k; ++i) xs[i] *= LoadFloat(prescale, i % k);
  }
  return xs;
}

}  // namespace

bool IsIoDtype(QDType dtype) { return dtype == QDType::kFP32 || dtype == QDType::kBF16; }

bool CanHandleIo(const KernelProbe& probe) {
  return probe.device.is_cpu() && IsIoDtype(probe.in) && IsIoDtype(probe.out) && probe.m > 0 &&
         probe.n > 0 && probe.k > 0;
}

std::vector<float> PrepareActivations(const LinearParams& params, const ActivationQuant& act,
                                      const ConstMatrix& x) {
  const int64_t m = x.rows;
  const int64_t k = x.cols;
  std::vector<float> xs = ToFloats(params, x);
  if (act.dtype == QDType::kNVFP4 && act.mode == ActMode::kDynamicGroup) {
    QuantizeNvfp4Activations(
        &xs, m, k, act.group_size,
        act.per_token_global ? std::nullopt
                             : std::optional(params.tensor(Slot::kInputScale).data<float>()[0]));
    return xs;
  }
  if ((act.dtype == QDType::kMXFP4 || act.dtype == QDType::kMXFP8) &&
      act.mode == ActMode::kDynamicGroup) {
    QuantizeMxActivations(&xs, m, k, act.group_size, act.dtype);
    return xs;
  }
  if (act.SymmetricPerToken(QDType::kINT8)) {
    std::vector<int8_t> codes(static_cast<size_t>(k));
    for (int64_t r = 0; r < m; ++r) {
      const std::span<float> row(xs.data() + r * k, static_cast<size_t>(k));
      const float scale = QuantizeActRow(row, ActCodeMax(act.dtype), codes);
      for (int64_t c = 0; c < k; ++c) row[c] = static_cast<float>(codes[c]) * scale;
    }
    return xs;
  }
  switch (act.mode) {
    case ActMode::kNone:
      break;
    case ActMode::kDynamicPerToken:
      for (int64_t r = 0; r < m; ++r) QuantizeBlock(&xs, k, r, r + 1, 0, k, std::nullopt);
      break;
    case ActMode::kDynamicPerTensor:
      QuantizeBlock(&xs, k, 0, m, 0, k, std::nullopt);
      break;
    case ActMode::kDynamicGroup:
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t c = 0; c < k; c += act.group_size) {
          QuantizeBlock(&xs, k, r, r + 1, c, std::min(k, c + act.group_size), std::nullopt);
        }
      }
      break;
    case ActMode::kStaticPerTensor:
      QuantizeBlock(&xs, k, 0, m, 0, k, params.tensor(Slot::kInputScale).data<float>()[0]);
      break;
  }
  return xs;
}

std::optional<Fp8Codes> PrepareFp8Codes(const LinearParams& params, const ActivationQuant& act,
                                        const ConstMatrix& x) {
  if (act.dtype != QDType::kFP8E4M3 || act.mode == ActMode::kNone) return std::nullopt;
  const int64_t m = x.rows;
  const int64_t k = x.cols;
  Fp8Codes out;
  out.values = ToFloats(params, x);
  std::vector<float>& xs = out.values;
  out.group = act.mode == ActMode::kDynamicGroup ? act.group_size : k;
  out.runs = (k + out.group - 1) / out.group;
  out.scales.resize(static_cast<size_t>(m * out.runs));
  std::optional<float> fixed;
  if (act.mode == ActMode::kStaticPerTensor)
    fixed = params.tensor(Slot::kInputScale).data<float>()[0];
  if (act.mode == ActMode::kDynamicPerTensor) fixed = BlockScale(xs, k, 0, m, 0, k, std::nullopt);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t g = 0; g < out.runs; ++g) {
      const int64_t begin = g * out.group, end = std::min(k, begin + out.group);
      const float scale = BlockScale(xs, k, r, r + 1, begin, end, fixed);
      out.scales[r * out.runs + g] = scale;
      for (int64_t c = begin; c < end; ++c) xs[r * k + c] = Fp8Code(xs[r * k + c], scale);
    }
  }
  return out;
}

void StoreOutput(const MutableMatrix& y, int64_t i, float value) {
  if (y.dtype == QDType::kBF16) {
    static_cast<uint16_t*>(y.data)[i] = FloatToBf16(value);
  } else {
    static_cast<float*>(y.data)[i] = value;
  }
}

}  // namespace quantpath::reference
