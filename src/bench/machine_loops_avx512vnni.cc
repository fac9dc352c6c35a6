// Bf16DotRoundsAvx512 and Int8DotRoundsAvx512 (machine_loops.h): twelve independent accumulators
// hide the dot products' latency, so the loops run at the units' throughput.
#include "src/base/avx512_intrinsics.h"

#include "src/bench/machine_loops.h"

namespace quantpath::bench_internal {
namespace {

constexpr int kChains = 12;

float Bf16Rounds(int64_t rounds) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512i a = _mm512_set1_epi16(0x3F80), b = _mm512_set1_epi16(0x3380);  // 1, 2^-24
  for (int64_t r = 0; r < rounds; ++r) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], (__m512bh)a, (__m512bh)b);
  }
  __m512 sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  return _mm512_cvtss_f32(sum);
}

int32_t Int8Rounds(int64_t rounds) {
  __m512i acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_epi32(i);
  const __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(-1);
  for (int64_t r = 0; r < rounds; ++r) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
  }
  __m512i sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = _mm512_add_epi32(sum, acc[i]);
  return _mm_cvtsi128_si32(_mm512_castsi512_si128(sum));
}

}  // namespace

float Bf16DotRoundsAvx512(int64_t rounds, int threads) {
  return SumOverThreads<float>(threads, [&] { return Bf16Rounds(rounds); });
}

int32_t Int8DotRoundsAvx512(int64_t rounds, int threads) {
  return SumOverThreads<int32_t>(threads, [&] { return Int8Rounds(rounds); });
}

}  // namespace quantpath::bench_internal
