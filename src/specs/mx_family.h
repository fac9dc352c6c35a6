// The OCP microscaling families mxfp4_block_<g> and mxfp8_block_<g> (g = 32): identity, layout
// and the activation rule, for the spec, its kernel, the reference and tests.
//
// mxfp4_block_32, bit by bit:
//   W  [N, K] E2M1 codes, ceil(K / 2) bytes per row: byte b of row n holds element 2b in bits
//      3..0 and element 2b + 1 in bits 7..4 (E2M1: bit 3 sign, bits 2..1 exponent, bit 0
//      mantissa; magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6).
//   S  [N, ceil(K / g)] E8M0 bytes, row-major: S[n][j] = e scales columns [j·g, (j+1)·g) of row
//      n by 2^(e − 127); 0xFF is NaN (never a valid scale), 0x00 is 2^−127.
//   W[n][c] = e2m1(W[n][c]) × 2^(S[n][c / g] − 127), exact in fp32.
// mxfp8_block_32: W [N, K] E4M3 (e4m3fn, fp8_family.h) bytes, one per element; S as above.
// Checkpoints: compressed-tensors mxfp4-pack-quantized (`weight_packed` U8 [N, K/2],
// `weight_scale` U8 [N, K/32]) and mxfp8-quantized (`weight` F8_E4M3 [N, K], `weight_scale` U8);
// ModelSlim W4A4_MXFP4 / W4A8_MXFP (`weight` U8 [N, K/2]) and W8A8_MXFP8 (`weight` F8_E4M3
// [N, K]), each with `weight_scale` U8 [N, K/32] (seed 003). All store the canonical layout, so
// Load copies bytes; tensor-parallel slices keep whole 32-blocks.
#pragma once

#include <cmath>
#include <cstdint>

#include "quantpath/ir.h"
#include "quantpath/specs.h"

namespace quantpath {

inline constexpr SpecFamily kMxfp4Family{"mxfp4_block"};
inline constexpr SpecFamily kMxfp8Family{"mxfp8_block"};
inline constexpr int64_t kMxGroup = 32;
inline constexpr uint8_t kE8M0Nan = 0xFF;
inline constexpr int kE8M0Bias = 127;

inline constexpr bool IsMxFamily(SpecFamily family) {
  return family == kMxfp4Family || family == kMxfp8Family;
}

struct MxLayout {
  bool fp4 = true;  // E2M1 codes two per byte; false: E4M3 bytes
  int64_t group = kMxGroup;
  constexpr int64_t WeightRowBytes(int64_t cols) const { return fp4 ? (cols + 1) / 2 : cols; }
  constexpr int64_t ScaleCols(int64_t cols) const { return (cols + group - 1) / group; }
  constexpr int64_t BytesFor(int64_t rows, int64_t cols) const {
    return rows * (WeightRowBytes(cols) + ScaleCols(cols));
  }
};
// q_proj of the producer fixtures: [128, 128] = 8192 code bytes + 512 scales.
static_assert(MxLayout{}.BytesFor(128, 128) == 8192 + 512);
static_assert(MxLayout{false}.BytesFor(128, 128) == 16384 + 512);

// The largest element exponent (OCP MX v1.0 §6.3 emax_elem): E2M1's 6 = 1.5 × 2^2, E4M3's
// 448 = 1.75 × 2^8.
inline constexpr int MxElementEmax(QDType element) { return element == QDType::kMXFP4 ? 2 : 8; }

// MX dynamic activations, per row and per g columns of X (OCP MX v1.0 §6.3, the conversion from
// a vector of floats): amax = max |x| over the block; the shared exponent is
// e = floor(log2(amax)) − emax_elem, clamped to E8M0's [−127, 127] (amax = 0 takes −127, and
// every element is 0); each element is x · 2^−e rounded to the element format to nearest even,
// saturating (E2M1 ±6, E4M3 ±448); X' = q · 2^e. Scaling by a power of two is exact, so fp32 and
// double agree on every step.
inline int MxSharedExponent(double amax, QDType element) {
  if (!std::isfinite(amax)) return kE8M0Bias;
  if (!(amax > 0.0)) return -kE8M0Bias;
  int e = 0;
  std::frexp(amax, &e);  // amax = f · 2^e, f in [0.5, 1): floor(log2(amax)) = e − 1
  const int shared = e - 1 - MxElementEmax(element);
  return shared < -kE8M0Bias ? -kE8M0Bias : (shared > kE8M0Bias ? kE8M0Bias : shared);
}

}  // namespace quantpath
