// FmaRoundsAvx2, Int16DotRoundsAvx2 and SumWordsAvx2 (machine_loops.h). FMA: ten independent
// accumulators hide the FMA latency (4–5 cycles at two issues a cycle), so the loop runs at the
// units' throughput.
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

// Ten independent vpmaddwd chains (as many as stay in registers beside the multiplier), each
// multiplying its own last result (read as 16-bit pairs), so no two share a product and the
// compiler cannot fold the rounds. The W8A8 kernels add each product into an int32 sum with vpaddd,
// which issues beside it: the multiply is the limit.
int32_t Int16Rounds(int64_t rounds) {
  constexpr int kChains = 10;
  __m256i acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_epi32(i);
  const __m256i b = _mm256_set1_epi16(3);
  for (int64_t r = 0; r < rounds; ++r) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_madd_epi16(acc[i], b);
  }
  __m256i sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = _mm256_add_epi32(sum, acc[i]);
  return _mm_cvtsi128_si32(_mm256_castsi256_si128(sum));
}

}  // namespace

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
