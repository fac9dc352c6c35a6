// Mixed int4 with quantized activations: the int4_channel spec with int4 activations (ModelSlim
// W4A4_DYNAMIC) or int8 activations (ModelSlim W4A8_DYNAMIC), both dynamic per token, for the
// spec (w4a_spec.cc), its reference kernel (src/kernels/reference/gemm_w4a_ref.cc) and tests.
// int4_group_<g>[_zp] and int4_channel[_zp] of the weight-only layouts take int8 activations the
// same way (int_spec.cc: compressed-tensors' W4A8, --int8-activations), each group's sum with its
// own scale and zero point. docs/spec_ids.md repeats the layout.
//
// The weight storage is int_family.h's int4_channel, unchanged, so the spec_id keeps one layout
// whatever the activations (the activation mode is the dispatch key's, as for W8A8):
//   weight   ParamTensor(kINT4, N, K): codes q = w + 8 in [0, 16), two per byte along each row,
//            column 2c in the low nibble of byte c, column 2c + 1 in the high one.
//   scales   [N, 1] in the checkpoint's 16-bit dtype (ModelSlim stores the model dtype).
//   bias     the layer's own, in the params dtype.
// The product, X quantized per row to b-bit signed codes (b = 4 or 8, qmax = 2^(b-1) − 1):
//   absmax[m] = max(max_k |x[m][k]|, kActAbsMaxFloor), s_x[m] = absmax[m] / qmax,
//   qx[m][k]  = clamp(round(x[m][k] · (qmax / absmax[m])), −qmax − 1, qmax), ties to even,
//   y[m][n]   = s_x[m] · s_w[n] · Σ_k qx[m][k] · (q[n][k] − 8) + bias[n],
// the sum exact in integers, the two scales multiplied once per output in fp32 — the shape of
// Ascend's npu_dynamic_quant (quint4x2 for A4, int8 for A8) followed by npu_quant_matmul with
// the per-token scale, which SGLang's NPU W4A4 / W4A8 methods call.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>

#include "quantpath/specs.h"

namespace quantpath {

// The largest code of b-bit signed activations (7 for int4, 127 for int8).
inline int ActCodeMax(QDType dtype) { return dtype == QDType::kINT4 ? 7 : 127; }

// Quantizes one row of X as above: writes qx (one code per element) and returns s_x.
inline float QuantizeActRow(std::span<const float> x, int code_max, std::span<int8_t> qx) {
  float absmax = 0.0f;
  for (float v : x) absmax = std::max(absmax, std::fabs(v));
  absmax = std::max(absmax, static_cast<float>(kActAbsMaxFloor));
  const float inv = static_cast<float>(code_max) / absmax;
  const float lo = static_cast<float>(-code_max - 1);
  const float hi = static_cast<float>(code_max);
  for (size_t c = 0; c < x.size(); ++c) {
    const float v = std::nearbyint(x[c] * inv);
    qx[c] = std::isnan(v) ? int8_t{0} : static_cast<int8_t>(std::clamp(v, lo, hi));
  }
  return absmax / static_cast<float>(code_max);
}

namespace specs_internal {
// The spec of an int4_channel key with int4 or int8 dynamic per-token activations, from the
// ModelSlim layout in either 4-bit packing (LoadFacts::int4_pairs).
Result<std::unique_ptr<WeightSpec>> MakeW4aSpec(const SpecKey& key, const ActivationQuant& act,
                                                const LoadFacts& facts);
}  // namespace specs_internal

}  // namespace quantpath
