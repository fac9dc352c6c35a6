// 4-bit codes by steps of 64 columns for the prepacked AVX2 GEMM (f32_dot_avx2.h): a step is 32
// bytes, eight 32-bit words of eight codes each (code c of the step in bits 4(c % 8) … of word
// c / 8, low nibble first as every 4-bit layout here packs them), and vector s is nibble s of every
// word, so lane i of each vector holds columns 8i … 8i + 7 of the step (X in the matching order,
// XOrder::kNibbleOctets). Codes that index a table of values look their low three bits up with
// vpermps, which reads no more of its index, and take bit 3 from the word shifted to bit 31.
//
// Included only by *_avx2.cc files, which are all compiled with the same flags.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "src/kernels/cpu/f32_dot_avx2.h"
#include "src/kernels/cpu/x_order.h"

namespace quantpath::avx2 {

// What the steps of a Source of 4-bit codes in octets are (f32_dot_avx2.h).
struct NibbleOctetSteps {
  static constexpr int64_t kStep = 64;
  static constexpr int64_t kStepBytes = 32;
  static constexpr cpu::XOrder kXOrder = cpu::XOrder::kNibbleOctets;
};

// Nibble s of every word in the low bits (the bits above it left as they are).
inline __m256i NibbleAt(__m256i words, int s) {
  return s == 0 ? words : _mm256_srli_epi32(words, 4 * s);
}
// Bit 3 of nibble s of every word at bit 31 (the bits below it left as they are).
inline __m256i NibbleTopBit(__m256i words, int s) {
  return s == 7 ? words : _mm256_slli_epi32(words, 28 - 4 * s);
}

// The E2M1 values of the step at p: the magnitude of the low three bits, bit 3 its sign.
inline void LoadE2M1Octets(const uint8_t* p, __m256 out[8]) {
  const __m256i words = LoadOnce(p);
  const __m256 magnitudes = _mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f);
  const __m256i sign = _mm256_set1_epi32(static_cast<int32_t>(0x80000000u));
  for (int s = 0; s < 8; ++s) {
    const __m256 magnitude = _mm256_permutevar8x32_ps(magnitudes, NibbleAt(words, s));
    out[s] = _mm256_xor_ps(magnitude,
                           _mm256_castsi256_ps(_mm256_and_si256(NibbleTopBit(words, s), sign)));
  }
}

// The values of a 16-entry table (`low`: codes 0–7, `high`: codes 8–15) for the step at p.
inline void LoadTableOctets(const uint8_t* p, __m256 low, __m256 high, __m256 out[8]) {
  const __m256i words = LoadOnce(p);
  for (int s = 0; s < 8; ++s) {
    const __m256i index = NibbleAt(words, s);
    out[s] = _mm256_blendv_ps(_mm256_permutevar8x32_ps(low, index),
                              _mm256_permutevar8x32_ps(high, index),
                              _mm256_castsi256_ps(NibbleTopBit(words, s)));
  }
}

}  // namespace quantpath::avx2
