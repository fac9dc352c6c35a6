// The integer weight layout (int_family.h) by whole steps for the prepacked AVX2 GEMM
// (f32_dot_avx2.h): a 4-bit step is 32 bytes, eight 32-bit words of eight codes, vector s every
// word shifted right by 4s and masked (X in the matching order, XOrder::kNibbleOctets); an 8-bit
// step is 32 codes widened eight at a time. The zero point (2^(b−1) where the layout has none)
// comes off as z · Σ x per run.
//
// Included only by *_avx2.cc files, which are all compiled with the same flags.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "quantpath/cpu_features.h"
#include "src/kernels/cpu/f32_dot_avx2.h"
#include "src/kernels/cpu/int_codes.h"
#include "src/kernels/cpu/x_order.h"

namespace quantpath::avx2 {

template <int kBits, bool kZero>
struct IntSteps : cpu::IntCodes<CpuLevel::kAvx2, kBits, kZero> {
  static constexpr bool kZeros = true;
  static constexpr int64_t kStep = kBits == 4 ? 64 : 32;
  static constexpr int64_t kStepBytes = 32;
  static constexpr cpu::XOrder kXOrder =
      kBits == 4 ? cpu::XOrder::kNibbleOctets : cpu::XOrder::kNatural;

  void Load(const uint8_t* p, __m256 out[kStep / 8]) const {
    if constexpr (kBits == 4) {
      const __m256i words = avx2::LoadOnce(p);
      const __m256i mask = _mm256_set1_epi32(0xF);
      for (int s = 0; s < 8; ++s) {
        out[s] = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(words, 4 * s), mask));
      }
    } else {
      for (int s = 0; s < 4; ++s) {
        out[s] = _mm256_cvtepi32_ps(
            _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * s))));
      }
    }
  }
  float Zero(int64_t row, int64_t g) const {
    return static_cast<float>(cpu::IntCodes<CpuLevel::kAvx2, kBits, kZero>::Zero(row, g));
  }
};

}  // namespace quantpath::avx2
