// E4M3 scales (NVFP4's block scales) widened to fp32 in the lanes of a vector, as
// fp8_bf16_avx512vnni.h widens codes: the exponent rebiased, the subnormals from a table
// (multiplying E4M3 bits placed as an fp32 subnormal by 2^120 instead halved the decode speed).
//
// Included only by *_avx512vnni.cc files, which are all compiled with the same flags.
#pragma once

#include "src/base/avx512_intrinsics.h"

#include <cstdint>

namespace quantpath::avx512vnni {

// m · 2^-9 at index m < 8: the E4M3 values with a zero exponent (the rest unused).
struct E4M3Subnormals {
  alignas(64) float values[16] = {};
  constexpr E4M3Subnormals() {
    for (int m = 0; m < 8; ++m) values[m] = m / 512.0f;
  }
};
inline constexpr E4M3Subnormals kE4M3Subnormals;

// The E4M3 code in the low byte of each 32-bit lane of `code` as fp32.
inline __m512 E4M3AsFloat(__m512i code) {
  const __m512i normal =
      _mm512_add_epi32(_mm512_and_si512(_mm512_slli_epi32(code, 20), _mm512_set1_epi32(0x07F00000)),
                       _mm512_set1_epi32(120 << 23));
  const __mmask16 subnormal = _mm512_testn_epi32_mask(code, _mm512_set1_epi32(0x78));
  const __m512 magnitude = _mm512_mask_permutexvar_ps(_mm512_castsi512_ps(normal), subnormal, code,
                                                      _mm512_load_ps(kE4M3Subnormals.values));
  // magnitude | (code << 24 & 0x80000000)
  return _mm512_castsi512_ps(
      _mm512_ternarylogic_epi32(_mm512_castps_si512(magnitude), _mm512_slli_epi32(code, 24),
                                _mm512_set1_epi32(static_cast<int32_t>(0x80000000u)), 0xF8));
}

}  // namespace quantpath::avx512vnni
