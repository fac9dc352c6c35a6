// The integer weight layout (int_family.h) by whole steps for the prepacked AVX2 GEMM
// (f32_dot_avx2.h): a 4-bit step is 32 bytes, eight 32-bit words of eight codes, vector s nibble s
// of every word (X in the matching order, XOrder::kNibbleOctets); an 8-bit
// step is 32 codes widened eight at a time. The zero point (2^(b−1) where the layout has none)
// comes off as z · Σ x per run.
//
// Included only by *_avx2.cc files, which are all compiled with the same flags.
#pragma once

#include <immintrin.h>

#include <array>
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
  // A 4-bit code s < 7 is converted where it sits (q · 2^4s: masked, not shifted down), the top
  // one shifted down (in place it would read as a negative int32).
  static constexpr std::array<int, kStep / 8> kLoadExponents = [] {
    std::array<int, kStep / 8> exponents{};
    if constexpr (kBits == 4) exponents = {0, 4, 8, 12, 16, 20, 24, 0};
    return exponents;
  }();

  // Two operations a vector are cheaper than a tile's store and load: every decode batch (4096 ×
  // 1024, one thread: 1.3–1.8× the tiles' speed from 2 to 8 rows).
  static constexpr int64_t kRegisterRows = kBits == 4 ? kTiledRows : 1;

  __m256i Words(const uint8_t* p) const requires(kBits == 4) { return avx2::LoadOnce(p); }
  __m256 Vector(__m256i words, int s) const requires(kBits == 4) {
    if (s == 7) return _mm256_cvtepi32_ps(_mm256_srli_epi32(words, 28));
    return _mm256_cvtepi32_ps(_mm256_and_si256(words, _mm256_set1_epi32(0xF << (4 * s))));
  }
  void Load(const uint8_t* p, __m256 out[kStep / 8]) const requires(kBits == 8) {
    for (int s = 0; s < 4; ++s) {
      out[s] = _mm256_cvtepi32_ps(
          _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * s))));
    }
  }
  float Zero(int64_t row, int64_t g) const {
    return static_cast<float>(cpu::IntCodes<CpuLevel::kAvx2, kBits, kZero>::Zero(row, g));
  }
};

}  // namespace quantpath::avx2
