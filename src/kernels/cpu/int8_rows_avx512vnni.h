// W8A8's activations for the AVX-512 VNNI kernel, dynamic per token and symmetric (the common
// case): int8_activations.cc's rounding, 16 values at a time, written straight into the padded
// rows the kernel reads (w8a8_pack.h) with their sums. The same fp32 operations in the same order
// (the largest |x| is order-free; q = nearbyint(x · 127 / absmax), clamped, NaN to 0), so the
// codes are the reference's bit for bit; the reference's scalar loop cost a fifth of a prefill.
//
// Included only by *_avx512vnni.cc files, which are all compiled with the same flags.
#pragma once

#include "src/base/avx512_intrinsics.h"

#include <algorithm>
#include <cstdint>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/w8a8_pack.h"
#include "src/kernels/reference/int8_activations.h"
#include "src/specs/w8a8_family.h"

namespace quantpath::avx512vnni {

// Values [c, c + 16) of row r of X (fp32 or bf16), lanes past `k` zero.
inline __m512 LoadXRow(const ConstMatrix& x, int64_t r, int64_t c) {
  const int64_t left = x.cols - c;
  const __mmask16 in = left >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << left) - 1);
  if (x.dtype == QDType::kBF16) {
    const uint16_t* row = static_cast<const uint16_t*>(x.data) + r * x.cols;
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(in, row + c)), 16));
  }
  return _mm512_maskz_loadu_ps(in, static_cast<const float*>(x.data) + r * x.cols + c);
}

// X quantized per token, symmetric: the scales and zeros into `xq` (its codes left empty), the
// codes and sums into `padded`.
inline void QuantizeInt8PerToken(const ConstMatrix& x, reference::Int8Activations* xq,
                                 cpu::PaddedInt8Rows* padded) {
  const int64_t m = x.rows, k = x.cols;
  padded->stride = (k + cpu::kInt8Step - 1) / cpu::kInt8Step * cpu::kInt8Step;
  padded->codes = ParamTensor(QDType::kINT8, m, padded->stride);  // zeros past k
  padded->sums.assign(static_cast<size_t>(m), 0);
  xq->codes.clear();
  xq->scale.resize(static_cast<size_t>(m));
  xq->zero.assign(static_cast<size_t>(m), 0);
  const __m512 magnitude = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
  for (int64_t r = 0; r < m; ++r) {
    __m512 top = _mm512_setzero_ps();
    for (int64_t c = 0; c < k; c += 16) {
      // max_ps returns its second operand where either is NaN: NaN takes no part, as in std::max.
      top = _mm512_max_ps(_mm512_and_ps(LoadXRow(x, r, c), magnitude), top);
    }
    const float absmax = std::max(_mm512_reduce_max_ps(top), static_cast<float>(kActAbsMaxFloor));
    xq->scale[r] = absmax / static_cast<float>(kInt8Max);
    const __m512 inv = _mm512_set1_ps(static_cast<float>(kInt8Max) / absmax);
    int8_t* codes = padded->codes.data<int8_t>() + r * padded->stride;
    __m512i sums = _mm512_setzero_si512();
    for (int64_t c = 0; c < k; c += 16) {
      const __m512 v = _mm512_mul_ps(LoadXRow(x, r, c), inv);
      const __mmask16 number = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
      const __m512 rounded = _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      const __m512 clamped =
          _mm512_min_ps(_mm512_max_ps(rounded, _mm512_set1_ps(static_cast<float>(kInt8Min))),
                        _mm512_set1_ps(static_cast<float>(kInt8Max)));
      const __m512i q = _mm512_maskz_cvtps_epi32(number, clamped);
      sums = _mm512_add_epi32(sums, q);
      const int64_t left = k - c;
      const __mmask16 in = left >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << left) - 1);
      _mm_mask_storeu_epi8(codes + c, in, _mm512_cvtepi32_epi8(q));
    }
    padded->sums[r] = _mm512_reduce_add_epi32(sums);
  }
}

// X as the W8A8 kernels multiply it: per token and symmetric above, else as the reference
// quantizes it, padded.
inline void QuantizeW8a8X(const LinearParams& params, const ActivationQuant& act,
                          const ConstMatrix& x, reference::Int8Activations* xq,
                          cpu::PaddedInt8Rows* padded) {
  if (act.SymmetricPerToken(QDType::kINT8)) return QuantizeInt8PerToken(x, xq, padded);
  *xq = reference::QuantizeInt8Activations(params, act, x);
  *padded = cpu::PadInt8Rows(*xq, x.rows, x.cols);
}

}  // namespace quantpath::avx512vnni
