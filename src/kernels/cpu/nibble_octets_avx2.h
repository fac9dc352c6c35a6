// 4-bit codes by steps of 64 columns for the prepacked AVX2 GEMM (f32_dot_avx2.h): a step is 32
// bytes, eight 32-bit words of eight codes each (code c of the step in bits 4(c % 8) … of word
// c / 8, low nibble first as every 4-bit layout here packs them), and vector s is nibble s of every
// word, so lane i of each vector holds columns 8i … 8i + 7 of the step (X in the matching order,
// XOrder::kNibbleOctets). E2M1 codes are looked up as bytes (E2M1Octets).
//
// Included only by *_avx2.cc files, which are all compiled with the same flags.
#pragma once

#include <immintrin.h>

#include <array>
#include <cstdint>

#include "src/kernels/cpu/f32_dot_avx2.h"
#include "src/kernels/cpu/x_order.h"

namespace quantpath::avx2 {

// What the steps of a Source of 4-bit codes in octets are (f32_dot_avx2.h): words, each of whose
// eight vectors is converted on its own (Vector, which the Source gives).
struct NibbleOctetSteps {
  static constexpr int64_t kStep = 64;
  static constexpr int64_t kStepBytes = 32;
  static constexpr cpu::XOrder kXOrder = cpu::XOrder::kNibbleOctets;
  static __m256i Words(const uint8_t* p) { return LoadOnce(p); }
};

// E2M1 codes by steps: the 32 bytes' low and high nibbles looked up (vpshufb, 32 at a time) as
// twice their values, which int8 holds exactly; byte b of each word of `low` is then twice the
// value of nibble 2b, of `high` of nibble 2b + 1.
struct E2M1Bytes {
  __m256i low, high;
};

// Twice each E2M1 value in a step (vector s: nibble s of every word, kLoadExponents of 1).
struct E2M1Octets : NibbleOctetSteps {
  static constexpr std::array<int, 8> kLoadExponents = {1, 1, 1, 1, 1, 1, 1, 1};
  // In registers for 2 rows of X 1.25× the tiles' speed, from 4 rows on no faster (4096 × 1024,
  // one thread).
  static constexpr int64_t kRegisterRows = 2;

  static E2M1Bytes Words(const uint8_t* p) {
    const __m256i table = _mm256_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12,
                                           0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    const __m256i words = LoadOnce(p);
    return {_mm256_shuffle_epi8(table, _mm256_and_si256(words, nibble)),
            _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi32(words, 4), nibble))};
  }
  // Byte s / 2 of each word, its sign extended.
  static __m256 Vector(const E2M1Bytes& bytes, int s) {
    const __m256i from = s % 2 == 0 ? bytes.low : bytes.high;
    const int byte = s / 2;
    const __m256i top = byte == 3 ? from : _mm256_slli_epi32(from, 24 - 8 * byte);
    return _mm256_cvtepi32_ps(_mm256_srai_epi32(top, 24));
  }
};

}  // namespace quantpath::avx2
