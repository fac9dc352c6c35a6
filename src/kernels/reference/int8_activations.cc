// QuantizeInt8Activations (int8_activations.h): vLLM's scaled_int8_quant, as gemm_w8a8_ref.cc's
// header gives it.
#include "src/kernels/reference/int8_activations.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "quantpath/numeric.h"
#include "src/specs/w4a_family.h"
#include "src/specs/w8a8_family.h"

namespace quantpath::reference {
namespace {

// Rounded values to codes: clamped to int8, NaN to 0 (there is no int8 NaN).
int8_t ToCode(float v) {
  if (std::isnan(v)) return 0;
  return static_cast<int8_t>(
      std::clamp(v, static_cast<float>(kInt8Min), static_cast<float>(kInt8Max)));
}

}  // namespace

Int8Activations QuantizeInt8Activations(const LinearParams& params, const ActivationQuant& act,
                                        const ConstMatrix& x) {
  const int64_t m = x.rows;
  const int64_t k = x.cols;
  Int8Activations out;
  std::vector<int8_t>& qx = out.codes;
  std::vector<float>& sx = out.scale;
  std::vector<int32_t>& zx = out.zero;
  qx.resize(static_cast<size_t>(m * k));
  sx.resize(static_cast<size_t>(m));
  zx.assign(static_cast<size_t>(m), 0);  // per-token zero points
  for (int64_t i = 0; i < m; ++i) {
    std::vector<float> row(static_cast<size_t>(k));
    for (int64_t c = 0; c < k; ++c) {
      row[c] = x.dtype == QDType::kBF16
                   ? Bf16ToFloat(static_cast<const uint16_t*>(x.data)[i * k + c])
                   : static_cast<const float*>(x.data)[i * k + c];
    }
    if (act.mode == ActMode::kStaticPerTensor) {
      const float s = params.tensor(Slot::kInputScale).data<float>()[0];
      const ParamTensor& offset = params.tensor(Slot::kInputOffset);
      const int32_t z = offset.empty() ? 0 : offset.data<int32_t>()[0];
      sx[i] = s;
      for (int64_t c = 0; c < k; ++c) {
        qx[i * k + c] = ToCode(std::nearbyint(row[c] / s) + static_cast<float>(z));
      }
    } else if (!act.symmetric) {
      float lo = std::numeric_limits<float>::infinity();
      float hi = -lo;
      for (float v : row) {  // NaN elements take no part
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
      if (!(hi - lo >= static_cast<float>(kActAbsMaxFloor))) {
        lo = std::min(lo, 0.0f);
        hi = std::max(hi, 0.0f);
      }
      const float range = std::max(hi - lo, static_cast<float>(kActAbsMaxFloor));
      sx[i] = range / static_cast<float>(kInt8Max - kInt8Min);
      const float z = std::nearbyint(static_cast<float>(kInt8Min) - lo / sx[i]);
      zx[i] = std::isfinite(z) ? static_cast<int32_t>(std::clamp(z, -1e9f, 1e9f)) : 0;
      for (int64_t c = 0; c < k; ++c) {
        qx[i * k + c] = ToCode(std::nearbyint(row[c] / sx[i]) + static_cast<float>(zx[i]));
      }
    } else {
      float absmax = 0.0f;
      for (float v : row) absmax = std::max(absmax, std::fabs(v));
      absmax = std::max(absmax, static_cast<float>(kActAbsMaxFloor));
      sx[i] = absmax / static_cast<float>(kInt8Max);
      const float inv = static_cast<float>(kInt8Max) / absmax;
      for (int64_t c = 0; c < k; ++c) qx[i * k + c] = ToCode(std::nearbyint(row[c] * inv));
    }
  }
  return out;
}

Int8Activations QuantizeW4aActivations(const ActivationQuant& act, const ConstMatrix& x) {
  const int64_t m = x.rows;
  const int64_t k = x.cols;
  Int8Activations out;
  out.codes.resize(static_cast<size_t>(m * k));
  out.scale.resize(static_cast<size_t>(m));
  out.zero.assign(static_cast<size_t>(m), 0);
  std::vector<float> row(static_cast<size_t>(k));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t c = 0; c < k; ++c) {
      row[c] = x.dtype == QDType::kBF16
                   ? Bf16ToFloat(static_cast<const uint16_t*>(x.data)[i * k + c])
                   : static_cast<const float*>(x.data)[i * k + c];
    }
    out.scale[i] =
        QuantizeActRow(row, ActCodeMax(act.dtype), std::span<int8_t>(out.codes.data() + i * k, k));
  }
  return out;
}

}  // namespace quantpath::reference
