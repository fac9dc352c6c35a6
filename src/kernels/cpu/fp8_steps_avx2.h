// e4m3 codes by steps of 32 for the prepacked AVX2 GEMM (f32_dot_avx2.h): each byte unpacked into
// the high half of a 16-bit word and shifted right by one with its sign, masked to the sign and
// bits 7–13, is an fp16 of the same value over 2^8 (denormals included, the exponent biases being
// 7 and 15), which F16C widens; the Sources fold 2^8 into their scales.
//
// Included only by *_avx2.cc files, which are all compiled with the same flags.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "src/kernels/cpu/f32_dot_avx2.h"

namespace quantpath::avx2 {

inline constexpr float kE4M3Over = 256.0f;  // 2^(15 − 7)

// The 32 codes at p as fp32 values over 2^8, in order.
inline void LoadE4M3Over256(const uint8_t* p, __m256 out[4]) {
  const __m256i bytes = LoadOnce(p);
  const __m256i zero = _mm256_setzero_si256();
  const __m256i mask = _mm256_set1_epi16(static_cast<int16_t>(0xBF80));
  // Bytes 0–7 and 16–23, and 8–15 and 24–31 (unpacking keeps to 128-bit lanes).
  const __m256i low =
      _mm256_and_si256(_mm256_srai_epi16(_mm256_unpacklo_epi8(zero, bytes), 1), mask);
  const __m256i high =
      _mm256_and_si256(_mm256_srai_epi16(_mm256_unpackhi_epi8(zero, bytes), 1), mask);
  out[0] = _mm256_cvtph_ps(_mm256_castsi256_si128(low));
  out[1] = _mm256_cvtph_ps(_mm256_castsi256_si128(high));
  out[2] = _mm256_cvtph_ps(_mm256_extracti128_si256(low, 1));
  out[3] = _mm256_cvtph_ps(_mm256_extracti128_si256(high, 1));
}

// Eight e4m3 scales, code `codes[i / 2]` in lane i (four codes, each for two lanes), as fp32 over
// 2^8: the same conversion, the codes spread by a byte shuffle.
inline __m256 E4M3PairsOver256(const uint8_t* codes) {
  uint32_t four;
  __builtin_memcpy(&four, codes, 4);
  const __m128i words =
      _mm_shuffle_epi8(_mm_cvtsi32_si128(static_cast<int>(four)),
                       _mm_setr_epi8(-1, 0, -1, 0, -1, 1, -1, 1, -1, 2, -1, 2, -1, 3, -1, 3));
  return _mm256_cvtph_ps(
      _mm_and_si128(_mm_srai_epi16(words, 1), _mm_set1_epi16(static_cast<int16_t>(0xBF80))));
}

}  // namespace quantpath::avx2
