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
#include <limits>
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

// nvfp4_block_16_128x4 keeps W, G and D as above and stores S as Blackwell's block-scaled GEMMs
// read it: cuBLASLt's "1D block scaling factors layout" (the cuBLAS documentation of
// cublasLtMatmul block scaling; nvmath-python's get_block_scale_offset documents the same offsets,
// vLLM's swizzle_blockscale and FlashInfer's nvfp4_block_scale_interleave write it). S is padded
// with zero bytes to Np = ceil(N / 128)·128 rows and Bp = ceil(ceil(K / g) / 4)·4 columns and cut
// into tiles of 128 rows × 4 blocks (512 bytes), row tile after row tile, the Bp / 4 tiles of a
// row tile in column order. Inside its tile, row r and block b sit at byte
// 16·(r mod 32) + 4·(r div 32) + b: the four 32-row quarters of the tile interleave, so that the
// 4 scales of one row are contiguous and rows r, r + 32, r + 64, r + 96 follow each other.
inline constexpr int64_t kNvfp4TileRows = 128;
inline constexpr int64_t kNvfp4TileBlocks = 4;

// Where S[row][block] lies in the 128x4 scale bytes of a matrix whose padded width is
// `padded_blocks` (Bp, a multiple of 4).
inline constexpr int64_t Nvfp4TiledScaleOffset(int64_t row, int64_t block, int64_t padded_blocks) {
  const int64_t tile =
      row / kNvfp4TileRows * (padded_blocks / kNvfp4TileBlocks) + block / kNvfp4TileBlocks;
  const int64_t r = row % kNvfp4TileRows;
  return tile * kNvfp4TileRows * kNvfp4TileBlocks + r % 32 * 16 + r / 32 * 4 +
         block % kNvfp4TileBlocks;
}
// nvmath-python's example, a [128, 128] NVFP4 operand (8 blocks a row, two tiles): block 2 of
// row 5 at 82, block 5 of row 5 at 593.
static_assert(Nvfp4TiledScaleOffset(5, 2, 8) == 82);
static_assert(Nvfp4TiledScaleOffset(5, 5, 8) == 593);

// Both layouts' bytes: W, S (as its layout stores it) and the 4-byte global.
struct Nvfp4Layout {
  int64_t group = kNvfp4Group;
  bool tiled = false;  // 128x4
  constexpr int64_t WeightRowBytes(int64_t cols) const { return (cols + 1) / 2; }
  // Blocks of one row: ceil(K / g).
  constexpr int64_t ScaleCols(int64_t cols) const { return (cols + group - 1) / group; }
  // The stored scale matrix: [N, blocks] linear, [Np, Bp] tiled.
  constexpr int64_t StoredScaleRows(int64_t rows) const {
    return tiled ? RoundUpTo(rows, kNvfp4TileRows) : rows;
  }
  constexpr int64_t StoredScaleCols(int64_t cols) const {
    return tiled ? RoundUpTo(ScaleCols(cols), kNvfp4TileBlocks) : ScaleCols(cols);
  }
  // Where S[row][block] lies in the stored scale bytes of a matrix with `stored_cols` columns.
  constexpr int64_t ScaleOffset(int64_t row, int64_t block, int64_t stored_cols) const {
    return tiled ? Nvfp4TiledScaleOffset(row, block, stored_cols) : row * stored_cols + block;
  }
  constexpr int64_t BytesFor(int64_t rows, int64_t cols) const {
    return rows * WeightRowBytes(cols) + StoredScaleRows(rows) * StoredScaleCols(cols) + 4;
  }

 private:
  static constexpr int64_t RoundUpTo(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
};
// q_proj of the producer fixtures: [128, 128] = 8192 code bytes + 1024 scales + the global, in
// either layout; tiled, a [200, 80] weight pads its [200, 5] scales to [256, 8].
static_assert(Nvfp4Layout{}.BytesFor(128, 128) == 8192 + 1024 + 4);
static_assert(Nvfp4Layout{kNvfp4Group, true}.BytesFor(128, 128) == 8192 + 1024 + 4);
static_assert(Nvfp4Layout{kNvfp4Group, true}.BytesFor(200, 80) == 200 * 40 + 256 * 8 + 4);

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

// MoE experts, as vLLM's FusedMoE NVFP4 methods convert them after loading
// (CompressedTensorsW4A4MoeMethod, ModelOptNvFp4FusedMoE): an expert's gate and up run as one
// w13 GEMM with one weight global, gate's (compressed-tensors `w13_weight_global_scale[:, 0]`,
// ModelOpt `w13_weight_scale_2[:, 0]`), and the block scales untouched, so up comes out scaled
// by gate's multiplier over its own; down keeps its own. W4A4: on FlashInfer's kernels (sm100's
// default) one input global serves every expert's w13 and one every expert's w2, the coarsest of
// the stored ones: ModelOpt the largest `input_scale` (`w13_input_scale.max()`),
// compressed-tensors the smallest divisor (`w13_input_global_scale.min()`), where a dense fused
// layer takes the largest divisor. The stored value returned gives the divisor through
// Nvfp4InputDivisor.
inline float Nvfp4SharedExpertInput(SourceLayout layout, std::span<const float> stored) {
  return layout == SourceLayout::kModelOptNvfp4 ? *std::max_element(stored.begin(), stored.end())
                                                : *std::min_element(stored.begin(), stored.end());
}

// W4A4 activations, per row and per g columns of X, with d = the layer's input divisor (fp32
// operations, as vLLM's scaled_fp4_quant; E2M1 and E4M3 rounding to nearest even, saturating):
//   amax = max |x| over the block;  s = e4m3(d · (amax / 6));  q = e2m1(x · (d / s)), 0 when
//   s = 0;  X' = q · s / d.
// The reference kernel computes it in fp32, the double reference (QuantizeActivationsReference)
// with the same fp32 roundings. Quantized at load (`--online w4a4-nvfp4`) no calibrated input
// global exists, so each row of X takes its own, d = Nvfp4GlobalFor(max |x_row|) in fp32 (the
// activation kind nvfp4_per_token_global): a row's result does not depend on the rows batched with
// it. Against the checkpoint's global, the kind is nvfp4_local_global (src/specs/activations/).
inline constexpr ActivationKind kNvfp4PerTokenGlobal{"nvfp4_per_token_global"};

// The global a tensor of largest magnitude `amax` is divided by so that its largest block scale is
// E4M3's largest (compressed-tensors' generate_gparam): 448 · 6 / amax, computed as torch divides
// a number by a tensor, fp32(448 · 6 · fp32(1 / amax)) (an ulp or two from the rounded quotient
// for some amax), and 1 where that is not finite (amax = 0).
inline float Nvfp4GlobalFor(float amax) {
  const float g = 448.0f * kE2M1Max * (1.0f / amax);
  return g <= std::numeric_limits<float>::max() ? g : 1.0f;
}

}  // namespace quantpath
