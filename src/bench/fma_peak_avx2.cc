// FmaRoundsAvx2 (fma_peak.h): ten independent accumulators hide the FMA latency (4–5 cycles at
// two issues a cycle), so the loop runs at the units' throughput.
#include <immintrin.h>

#include "src/bench/fma_peak.h"

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

}  // namespace

float FmaRoundsAvx2(int64_t rounds, int threads) {
  float total = 0;
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) reduction(+ : total)
#endif
  total += Rounds(rounds, 1.0f);
  (void)threads;
  return total;
}

}  // namespace quantpath::bench_internal
