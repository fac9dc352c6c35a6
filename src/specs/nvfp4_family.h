// The NVFP4 family (nvfp4_block_<g>_linear, nvfp4_block_<g>_128x4, g = 16): identity, layout and
// the global-scale conventions, for the spec, its kernels, the reference and tests.
//
// nvfp4_block_16_linear, bit by bit (the CPU and reference layout):
//   W       [N, K] E2M1 codes, ceil(K / 2) bytes per row: byte b of row n holds element 2b in bits
//           3..0 and element 2b + 1 in bits 7..4. E2M1 (OCP MX FP4): bit 3 sign, bits 2..1
//           exponent (bias 1), bit 0 mantissa: magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6.
//   S       [N, ceil(K / g)] E4M3 (e4m3fn, fp8_family.h) bytes, row-major: S[n][j] scales columns
//           [j·g, (j+1)·g) of row n.
//   G       one fp32 global *multiplier*: W[n][c] = e2m1(W[n][c]) × e4m3(S[n][c / g]) × G.
//   D       W4A4 only: one fp32 activation divisor (the input slot; see the W4A4 rule below).
// Checkpoints: ModelOpt `weight_scale_2` is G itself; compressed-tensors `weight_global_scale` is
// 1 / G (it divides); ModelOpt `input_scale` is 1 / D, compressed-tensors `input_global_scale`
// is D. Both pack W the same way (ModelOpt `weight`,
// compressed-tensors `weight_packed`, U8 [N, K/2]) with `weight_scale` F8_E4M3 [N, K/16].
// Fused legs: each leg stores its own global; the layer keeps one, chosen as the engines do
// (Nvfp4WeightMultiplier, Nvfp4InputDivisor), without touching the block scales, so a leg whose own
// global differs is scaled by chosen / own. Producers write fused legs with one global (ModelOpt
// and llmcompressor both harmonise q/k/v and gate/up before export), so real checkpoints lose
// nothing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "quantpath/ir.h"
#include "quantpath/specs.h"

namespace quantpath {

inline constexpr SpecFamily kNvfp4Family{"nvfp4_block"};
inline constexpr int64_t kNvfp4Group = 16;
inline constexpr float kE2M1Max = 6.0f;  // the largest E2M1 magnitude

inline constexpr SpecKey Nvfp4LinearKey(int64_t group = kNvfp4Group) {
  SpecKey key{kNvfp4Family};
  key.group = group;
  key.scales = ScaleVariant::kLinear;
  return key;
}

struct Nvfp4LinearLayout {
  int64_t group = kNvfp4Group;
  constexpr int64_t WeightRowBytes(int64_t cols) const { return (cols + 1) / 2; }
  constexpr int64_t ScaleCols(int64_t cols) const { return (cols + group - 1) / group; }
  // W, S and the 4-byte global.
  constexpr int64_t BytesFor(int64_t rows, int64_t cols) const {
    return rows * (WeightRowBytes(cols) + ScaleCols(cols)) + 4;
  }
};
// q_proj of the producer fixtures: [128, 128] = 8192 code bytes + 1024 scales + the global.
static_assert(Nvfp4LinearLayout{}.BytesFor(128, 128) == 8192 + 1024 + 4);

// The layer's weight multiplier G from its legs' stored globals, in fp32 as the engines compute
// it: ModelOpt takes the max of the legs' `weight_scale_2` (vLLM / SGLang
// `weight_scale_2.max()`); compressed-tensors the max of the legs' `weight_global_scale`
// divisors, inverted (`1 / weight_global_scale.max()`), that is the smallest multiplier.
inline float Nvfp4WeightMultiplier(SourceLayout layout, std::span<const float> stored) {
  const float top = *std::max_element(stored.begin(), stored.end());
  return layout == SourceLayout::kModelOptNvfp4 ? top : 1.0f / top;
}

// The layer's activation divisor 1 / A (what X is multiplied by before its block scales are
// taken), in fp32: ModelOpt `1 / input_scale.max()` (vLLM's input_scale_inv), compressed-tensors
// `input_global_scale.max()`.
inline float Nvfp4InputDivisor(SourceLayout layout, std::span<const float> stored) {
  const float top = *std::max_element(stored.begin(), stored.end());
  return layout == SourceLayout::kModelOptNvfp4 ? 1.0f / top : top;
}

// W4A4 activations, per row and per g columns of X, with d = the layer's input divisor (fp32
// operations, as vLLM's scaled_fp4_quant; E2M1 and E4M3 rounding to nearest even, saturating):
//   amax = max |x| over the block;  s = e4m3(d · (amax / 6));  q = e2m1(x · (d / s)), 0 when
//   s = 0;  X' = q · s / d.
// The reference kernel computes it in fp32, the double reference (QuantizeActivationsReference)
// with the same fp32 roundings.

}  // namespace quantpath
