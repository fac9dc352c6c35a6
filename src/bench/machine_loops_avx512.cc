// FmaRoundsAvx512 and SumWordsAvx512 (machine_loops.h): the same loops as machine_loops_avx2.cc at
// 512 bits, the read one fetching 8 KiB ahead as the AVX-512 kernels do (bf16_dot_avx512vnni.h),
// so that the bandwidth a kernel is measured against is the best this core reads at.
#include "src/base/avx512_intrinsics.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include "src/bench/machine_loops.h"

namespace quantpath::bench_internal {
namespace {

constexpr int kChains = 12;
constexpr int64_t kAheadBytes = 8192;

float Rounds(int64_t rounds, float seed) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(seed + static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t r = 0; r < rounds; ++r) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  __m512 sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  return _mm512_cvtss_f32(sum);
}

}  // namespace

float FmaRoundsAvx512(int64_t rounds, int threads) {
  return SumOverThreads<float>(threads, [&] { return Rounds(rounds, 1.0f); });
}

uint64_t SumWordsAvx512(const uint64_t* data, int64_t words, int threads) {
  uint64_t total = 0;
  const int64_t blocks = words / 16;  // 128 bytes each
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) reduction(+ : total)
#endif
  {
#ifdef _OPENMP
    const int64_t team = omp_get_num_threads(), me = omp_get_thread_num();
#else
    const int64_t team = 1, me = 0;
#endif
    // One contiguous range per thread, summed in vector lanes and reduced once.
    const int64_t first = blocks * me / team, last = blocks * (me + 1) / team;
    __m512i a = _mm512_setzero_si512(), b = _mm512_setzero_si512();
    for (int64_t block = first; block < last; ++block) {
      const auto* p = reinterpret_cast<const char*>(data + block * 16);
      _mm_prefetch(p + kAheadBytes, _MM_HINT_T0);
      _mm_prefetch(p + kAheadBytes + 64, _MM_HINT_T0);
      a = _mm512_add_epi64(a, _mm512_load_si512(p));
      b = _mm512_add_epi64(b, _mm512_load_si512(p + 64));
    }
    alignas(64) uint64_t lanes[8];
    _mm512_store_si512(lanes, _mm512_add_epi64(a, b));
    for (const uint64_t lane : lanes) total += lane;
  }
  (void)threads;
  return total;
}

}  // namespace quantpath::bench_internal
