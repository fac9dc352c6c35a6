// E2M1 codes (NVFP4, MXFP4) as bf16 values for the AVX-512 BF16 GEMM (bf16_dot_avx512vnni.h):
// every E2M1 value (0, ±0.5 … ±6) is a bf16 value. A step is 64 bytes, 128 codes, 4 to each
// 16-bit word; the four vectors of a load are that word shifted by 0, 4, 8 and 12, each looked up
// in a table of the 16 values (vpermw reads 5 index bits, so the table holds them twice and the
// next nibble's low bit is ignored), X in the matching order (XOrder::kNibbleQuads). Lane i of
// every vector then multiplies columns 8i … 8i + 7 of the step: groups of 16 (NVFP4) or 32 (MXFP4)
// columns are the same lanes of all four vectors, so one run of 128 columns is summed at once and
// scaled lane by lane (the Source's Scale returns one scale per lane). bitsandbytes' NF4 and FP4
// codes take the same steps with tables of their own (gemm_bnb_avx512vnni.cc).
//
// Included only by *_avx512vnni.cc files, which are all compiled with the same flags.
#pragma once

#include "src/base/avx512_intrinsics.h"

#include <bit>
#include <cstdint>

#include "src/kernels/cpu/bf16_source_avx512vnni.h"

namespace quantpath::avx512vnni {

// bf16 bits of E2M1 code i & 15 at index i < 32.
struct E2M1Table {
  alignas(64) uint16_t bits[32] = {};
  constexpr E2M1Table() {
    constexpr float kMagnitudes[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    for (int i = 0; i < 32; ++i) {
      const uint32_t magnitude = std::bit_cast<uint32_t>(kMagnitudes[i & 7]) >> 16;
      bits[i] = static_cast<uint16_t>(magnitude | (i & 8 ? 0x8000u : 0u));
    }
  }
};
constexpr E2M1Table kE2M1;

// The columns of a step, its bytes and the columns each lane multiplies.
inline constexpr int64_t kE2M1Step = 128;
inline constexpr int64_t kE2M1StepBytes = 64;
inline constexpr int64_t kE2M1LaneColumns = 8;

// The steps of a block of rows ahead that the prepack is fetched (kPrefetchBytes): a Source
// fetches its scales that far ahead too, one line in 64 bytes of each row's scales.
inline constexpr int64_t kE2M1StepsAhead = kPrefetchBytes / (kBlockRows * kE2M1StepBytes);
inline void PrefetchScaleLine(const uint8_t* row_scales, int64_t step, int64_t bytes_per_step) {
  const int64_t at = (step + kE2M1StepsAhead) * bytes_per_step;
  if (at % 64 < bytes_per_step) {
    _mm_prefetch(reinterpret_cast<const char*>(row_scales + at), _MM_HINT_T0);
  }
}

// The four vectors of the 64 bytes at p, each code looked up in `bits` (32 bf16 values: the 16
// codes' values twice).
inline void LoadNibbleQuads(const uint8_t* p, const uint16_t* bits, __m512i out[4]) {
  const __m512i table = _mm512_load_si512(bits);
  const __m512i words = LoadOnce(p);
  out[0] = _mm512_permutexvar_epi16(words, table);
  out[1] = _mm512_permutexvar_epi16(_mm512_srli_epi16(words, 4), table);
  out[2] = _mm512_permutexvar_epi16(_mm512_srli_epi16(words, 8), table);
  out[3] = _mm512_permutexvar_epi16(_mm512_srli_epi16(words, 12), table);
}

// What the steps of a Source of 4-bit codes in quads are (bf16_source_avx512vnni.h): a run a
// step, lane scales.
struct NibbleQuadSteps {
  int64_t group = kE2M1Step;
  static constexpr bool kZeros = false;
  static constexpr bool kLaneScales = true;
  static constexpr int64_t kStep = kE2M1Step;
  static constexpr int64_t kStepBytes = kE2M1StepBytes;
  static constexpr cpu::XOrder kXOrder = cpu::XOrder::kNibbleQuads;
};
struct E2M1QuadSteps : NibbleQuadSteps {
  void Load(const uint8_t* p, __m512i out[4]) const { LoadNibbleQuads(p, kE2M1.bits, out); }
};

// The code of column `col` of a row of packed 4-bit codes (element 2b in bits 3..0 of byte b).
inline uint8_t NibbleCode(const uint8_t* row, int64_t col) {
  return col % 2 == 0 ? row[col / 2] & 0xF : row[col / 2] >> 4;
}

}  // namespace quantpath::avx512vnni
