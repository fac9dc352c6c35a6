// int4_group_<g>_prescaled: int4 group weights with fp32 scales and an optional per-column
// prescale of the input, run with static fp8 activations (ModelOpt W4A8_AWQ), for the spec
// (w4a8_awq_spec.cc), its reference kernel (src/kernels/reference/gemm_w4a8_awq_ref.cc) and tests.
// docs/spec_ids.md repeats the layout.
//
// Canonical layout of this rank's [N, K]:
//   weight          ParamTensor(kINT4, N, K): codes q = w + 8 in [0, 16), two per byte along each
//                   row, column 2c in bits 0–3 of byte c, column 2c + 1 in bits 4–7 (int_family.h's
//                   int4 layout, z = 8 implied).
//   weight_scale    ParamTensor(kFP32, N, ceil(K / g)): s[n][j] scales columns [j·g, (j+1)·g) of
//                   row n, kept exactly as ModelOpt stores it (F32).
//   pre_quant_scale ParamTensor(dtype as stored: bf16, fp16 or fp32, 1, K), or empty where the
//                   checkpoint has none (ModelOpt folds it into the previous norm for q/k/v and
//                   gate/up and writes it for o_proj and down_proj).
//   input_scale     ParamTensor(kFP32, 1, 1): the static fp8 scale of X, the largest of the legs'.
//   bias            the layer's own, params dtype.
// W[n][c] = (q[n][c] − 8) · s[n][c / g]. The product, X' = X · P (P = 1 without pre_quant_scale):
//   x8[m][c] = e4m3(x'[m][c] / input_scale) (fp32, saturating at ±448, ties to even),
//   y[m][n]  = input_scale · Σ_c x8[m][c] · W[n][c] + bias[n].
// `weight_scale_2` (ModelOpt's second, fp8 stage: amax / 448 of q · s) is not kept: W is exact
// without it: TensorRT-LLM's W4A8_AWQ reference divides the weight by it (q · s / weight_scale_2,
// in the fp8 range of its kernel) and multiplies the output by it again.
#pragma once

#include <cstdint>

#include "quantpath/specs.h"

namespace quantpath {

inline constexpr SpecFamily kIntGroupPrescaledFamily{"int_group_prescaled"};

struct Int4GroupPrescaledLayout {
  int64_t group = 128;
  constexpr int64_t Groups(int64_t cols) const { return (cols + group - 1) / group; }
  // W (two codes per byte) and the fp32 scales; the input prescale and scale belong to the
  // activations (LinearParams::WeightBytes leaves them out).
  constexpr int64_t BytesFor(int64_t rows, int64_t cols) const {
    return rows * ((cols + 1) / 2) + rows * Groups(cols) * 4;
  }
};
static_assert(Int4GroupPrescaledLayout{}.BytesFor(128, 256) == 128 * 128 + 128 * 2 * 4);

}  // namespace quantpath
