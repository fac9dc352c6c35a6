// e4m3 codes as bf16 values, for the AVX-512 BF16 kernels. Every e4m3 value is a bf16 value: a
// normal one keeps its mantissa and moves its exponent from bias 7 to bias 127 (bits shifted by 4,
// plus 120 << 7); the eight with a zero exponent (0 and the subnormals m · 2^-9) come from a
// table; the sign moves from bit 7 to bit 15.
//
// Included only by *_avx512vnni.cc files, which are all compiled with the same flags.
#pragma once

#include "src/base/avx512_intrinsics.h"

#include <bit>
#include <cstdint>

namespace quantpath::avx512vnni {

// bf16 bits of m · 2^-9 at index m < 8 (the rest unused).
struct SubnormalTable {
  alignas(64) uint16_t bits[32] = {};
  constexpr SubnormalTable() {
    for (int m = 0; m < 8; ++m) bits[m] = std::bit_cast<uint32_t>(m / 512.0f) >> 16;
  }
};
constexpr SubnormalTable kSubnormals;

// 32 e4m3 codes as bf16 values.
inline __m512i Fp8ToBf16(__m256i codes) {
  const __m512i w = _mm512_cvtepu8_epi16(codes);
  const __m512i normal =
      _mm512_add_epi16(_mm512_and_si512(_mm512_slli_epi16(w, 4), _mm512_set1_epi16(0x07F0)),
                       _mm512_set1_epi16(120 << 7));
  const __mmask32 subnormal = _mm512_testn_epi16_mask(w, _mm512_set1_epi16(0x78));
  const __m512i magnitude =
      _mm512_mask_permutexvar_epi16(normal, subnormal, w, _mm512_load_si512(kSubnormals.bits));
  // magnitude | (w << 8 & 0x8000)
  return _mm512_ternarylogic_epi32(magnitude, _mm512_slli_epi16(w, 8),
                                   _mm512_set1_epi16(static_cast<int16_t>(0x8000)), 0xF8);
}

}  // namespace quantpath::avx512vnni
