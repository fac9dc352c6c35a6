// W8A8 int8: the int8_channel and int8_tensor specs with int8 activations (ActMode
// kDynamicPerToken or kStaticPerTensor), for the spec (w8a8_spec.cc), its reference kernel
// (src/kernels/reference/gemm_w8a8_ref.cc) and tests. docs/spec_ids.md repeats the layout.
//
// The weight storage is int_family.h's for 8 bits, unchanged, so a SpecKey keeps one layout
// whatever the activations: weight codes q = w + 128 (unsigned, z = 128 implied), scales
// [N, 1] in the checkpoint's 16-bit dtype (int8_channel) or one fp32 value (int8_tensor; fused
// legs: fp32 [N, 1], each leg's scale on its rows, vLLM's convert_to_channelwise). The
// static modes add the activation's slots:
//   input_scale   [1, 1] fp32: s_x, the one scale X is quantized with (see CombineStaticInputs).
//   input_offset  [1, 1] int32 in a 32-bit slot: z_x, asymmetric activations only.
//   quant_bias    [1, N] int32 in a 32-bit slot: c[n], an integer added to row n's accumulator:
//                 −z_x · Σ_k (q[n][k] − 128) for compressed-tensors asymmetric inputs (vLLM's
//                 azp_adj), the checkpoint's own quant_bias for ModelSlim W8A8 (which folds the
//                 same correction and round(bias / deq_scale) into it); absent otherwise.
// The product, with X quantized per row (dynamic) or with (s_x, z_x) (static):
//   y[m][n] = s_x[m] · s_w[n] · (Σ_k (qx[m][k] − z_x) · (q[n][k] − 128)) + bias[n]
//           = s_x[m] · s_w[n] · (Σ_k qx[m][k] · (q[n][k] − 128) + c[n]) + bias[n],
// the sum in int32 (exact for K < 2^17), the scales applied once per output in fp32.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>

#include "quantpath/specs.h"

namespace quantpath {

// The int8 code range activations are clamped to.
inline constexpr int kInt8Min = -128;
inline constexpr int kInt8Max = 127;

// One static activation grid for all the legs of a layer, as vLLM's compressed-tensors W8A8 int8
// process_weights_after_loading makes it, in fp32: symmetric, the largest leg scale (and z = 0);
// asymmetric, the union of the legs' ranges, range_max = max s·(127 − z), range_min =
// min s·(−128 − z), s = (range_max − range_min) / 255 and z = round(−128 − range_min / s) (the
// rounding of vLLM's CPU path; its CUDA path truncates toward zero). vLLM does this even for one
// leg, where s may move by an ulp. The legs' spans must be non-empty and of equal length.
std::pair<float, int32_t> CombineStaticInputs(std::span<const float> scales,
                                              std::span<const int32_t> zero_points, bool symmetric);

namespace specs_internal {
// The W8A8 spec of an int8_channel / int8_tensor key with int8 activations (w8a8_spec.cc), from
// the compressed-tensors int-quantized (also SGLang w8a8_int8's) and ModelSlim layouts.
Result<std::unique_ptr<WeightSpec>> MakeW8a8Spec(const SpecKey& key, const ActivationQuant& act,
                                                 const LoadFacts& facts);
}  // namespace specs_internal

}  // namespace quantpath
