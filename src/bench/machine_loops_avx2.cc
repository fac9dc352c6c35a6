// FmaRoundsAvx2, Int16DotRoundsAvx2, Int4DotRoundsAvx2 and SumWordsAvx2 (machine_loops.h). FMA: ten
// independent accumulators hide the FMA latency (4–5 cycles at two issues a cycle), so the loop
// runs at the units' throughput.
#include <immintrin.h>

#include "src/bench/machine_loops.h"

namespace quantpath::bench_internal {
namespace {

float Rounds(int64_t rounds, float seed) {
  __m256 acc[10];
  for (int i = 0; i < 10; ++i) acc[i] = _mm256_set1_ps(seed + static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t r = 0; r < rounds; ++r) {
    for (int i = 0; i < 10; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 sum = acc[0];
  for (int i = 1; i < 10; ++i) sum = _mm256_add_ps(sum, acc[i]);
  return _mm256_cvtss_f32(sum);
}

// The AVX2 int8 dot as the W8A8 kernels run it (w8a8_loops_avx2.h): int16 pairs multiplied by
// vpmaddwd and each product added into an int32 sum by vpaddd, two rows of X against four of W
// (eight sums), every operand loaded from L1. AVX2 has no accumulating form, so the add is part of
// the unit: on a 2-core AMD EPYC it halved the rate of vpmaddwd alone (about 100 against 196 GOP/s
// a thread). One round is 16 columns: eight vpmaddwd.
int32_t Int16Rounds(int64_t rounds) {
  constexpr int kColumns = 512;
  alignas(32) int16_t x[2][kColumns], w[4][kColumns];
  for (int c = 0; c < kColumns; ++c) {
    for (int p = 0; p < 2; ++p) x[p][c] = static_cast<int16_t>(c % 251 - 125 + p);
    for (int r = 0; r < 4; ++r) w[r][c] = static_cast<int16_t>(c % 241 + r);
  }
  __m256i acc[2][4];
  for (auto& row : acc) {
    for (__m256i& a : row) a = _mm256_setzero_si256();
  }
  for (int64_t round = 0; round < rounds; round += kColumns / 16) {
    for (int c = 0; c < kColumns; c += 16) {
      const __m256i x0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(x[0] + c));
      const __m256i x1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(x[1] + c));
      for (int r = 0; r < 4; ++r) {
        const __m256i wv = _mm256_load_si256(reinterpret_cast<const __m256i*>(w[r] + c));
        acc[0][r] = _mm256_add_epi32(acc[0][r], _mm256_madd_epi16(wv, x0));
        acc[1][r] = _mm256_add_epi32(acc[1][r], _mm256_madd_epi16(wv, x1));
      }
    }
    // The buffers may have changed (for all the compiler knows), so no round folds into another.
    __asm__("" : : "r"(&x[0][0]), "r"(&w[0][0]) : "memory");
  }
  __m256i sum = _mm256_setzero_si256();
  for (const auto& row : acc) {
    for (const __m256i& a : row) sum = _mm256_add_epi32(sum, a);
  }
  return _mm_cvtsi128_si32(_mm256_castsi256_si128(sum));
}

// The AVX2 int4 × int8 dot as GemmW4A4A8Nibbles_Avx2 runs it: per round, a 32-byte step of each
// of four rows of 4-bit codes is split into its low and high nibbles, each multiplied with a row
// of X's int8 codes (two rows) by vpmaddubsw and summed into int16 by vpaddw; every 4 rounds
// vpmaddwd widens the sums into int32. Operands from L1.
int32_t Int4Rounds(int64_t rounds) {
  constexpr int kSteps = 16;
  alignas(32) uint8_t w[kSteps][4][32];
  alignas(32) int8_t x[kSteps][2][64];
  for (int s = 0; s < kSteps; ++s) {
    for (int r = 0; r < 4; ++r) {
      for (int b = 0; b < 32; ++b) w[s][r][b] = static_cast<uint8_t>(s * 37 + r * 11 + b);
    }
    for (int p = 0; p < 2; ++p) {
      for (int c = 0; c < 64; ++c)
        x[s][p][c] = static_cast<int8_t>((s * 13 + p * 7 + c) % 255 - 127);
    }
  }
  const __m256i nibble = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  __m256i acc[2][4];
  for (auto& row : acc) {
    for (__m256i& a : row) a = _mm256_setzero_si256();
  }
  for (int64_t round = 0; round < rounds; round += kSteps) {
    for (int s0 = 0; s0 < kSteps; s0 += 4) {
      __m256i pairs[2][4];
      for (auto& row : pairs) {
        for (__m256i& a : row) a = _mm256_setzero_si256();
      }
      for (int s = s0; s < s0 + 4; ++s) {
        for (int r = 0; r < 4; ++r) {
          const __m256i codes = _mm256_load_si256(reinterpret_cast<const __m256i*>(w[s][r]));
          const __m256i low = _mm256_and_si256(codes, nibble);
          const __m256i high = _mm256_and_si256(_mm256_srli_epi16(codes, 4), nibble);
          for (int p = 0; p < 2; ++p) {
            const __m256i even = _mm256_load_si256(reinterpret_cast<const __m256i*>(x[s][p]));
            const __m256i odd = _mm256_load_si256(reinterpret_cast<const __m256i*>(x[s][p] + 32));
            pairs[p][r] = _mm256_add_epi16(
                pairs[p][r],
                _mm256_add_epi16(_mm256_maddubs_epi16(low, even), _mm256_maddubs_epi16(high, odd)));
          }
        }
      }
      for (int p = 0; p < 2; ++p) {
        for (int r = 0; r < 4; ++r) {
          acc[p][r] = _mm256_add_epi32(acc[p][r], _mm256_madd_epi16(pairs[p][r], ones));
        }
      }
    }
    __asm__("" : : "r"(&x[0][0][0]), "r"(&w[0][0][0]) : "memory");
  }
  __m256i sum = _mm256_setzero_si256();
  for (const auto& row : acc) {
    for (const __m256i& a : row) sum = _mm256_add_epi32(sum, a);
  }
  return _mm_cvtsi128_si32(_mm256_castsi256_si128(sum));
}

}  // namespace

int32_t Int4DotRoundsAvx2(int64_t rounds, int threads) {
  return SumOverThreads<int32_t>(threads, [&] { return Int4Rounds(rounds); });
}

int32_t Int16DotRoundsAvx2(int64_t rounds, int threads) {
  return SumOverThreads<int32_t>(threads, [&] { return Int16Rounds(rounds); });
}

float FmaRoundsAvx2(int64_t rounds, int threads) {
  return SumOverThreads<float>(threads, [&] { return Rounds(rounds, 1.0f); });
}

uint64_t SumWordsAvx2(const uint64_t* data, int64_t words, int threads) {
  uint64_t total = 0;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) reduction(+ : total) schedule(static)
#endif
  for (int64_t block = 0; block < words / 16; ++block) {
    const auto* p = reinterpret_cast<const __m256i*>(data + block * 16);
    const __m256i sum =
        _mm256_add_epi64(_mm256_add_epi64(_mm256_load_si256(p), _mm256_load_si256(p + 1)),
                         _mm256_add_epi64(_mm256_load_si256(p + 2), _mm256_load_si256(p + 3)));
    alignas(32) uint64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), sum);
    total += lanes[0] + lanes[1] + lanes[2] + lanes[3];
  }
  (void)threads;
  return total;
}

}  // namespace quantpath::bench_internal
