// The loops that measure the machine at full vector width, in their own per-level translation
// units (machine_loops_avx2.cc, machine_loops_avx512vnni.cc), each timed by the caller so that
// nothing but the loop is compiled for the level.
#pragma once

#include <cstdint>

namespace quantpath::bench_internal {

// f() summed over `threads` OpenMP threads, each running it once (each caller's lambda makes its
// own instantiation, compiled at its file's level).
template <typename T, typename F>
T SumOverThreads(int threads, F f) {
  T total = 0;
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) reduction(+ : total)
#endif
  total += f();
  (void)threads;
  return total;
}

// Runs `rounds` rounds of 10 independent 8-wide fp32 FMA chains on each of `threads` threads (160
// FLOP per round per thread) and returns the chains' sum, for the caller to keep. Needs AVX2 and
// FMA; timed by the caller, so that nothing but the loop is compiled for AVX2.
float FmaRoundsAvx2(int64_t rounds, int threads);

// `rounds` rounds of the AVX2 int8 dot's inner loop (vpmaddwd products added by vpaddd into eight
// int32 sums, operands from L1: 256 OP a round per thread, 8 vpmaddwd of 8 lanes, 2 pairs, a
// multiply and an add each) on each of `threads` threads; the sums' total. Needs AVX2.
int32_t Int16DotRoundsAvx2(int64_t rounds, int threads);

// `rounds` rounds of the AVX2 int4 × int8 dot's inner loop (gemm_w4a_nibbles_avx2.cc: four rows
// of 4-bit codes unpacked by mask and shift, each half multiplied with two rows of int8 codes by
// vpmaddubsw and added into int16 sums by vpaddw, widened by vpmaddwd every 4 rounds; operands
// from L1: 1024 OP a round per thread, 4 · 2 · 64 pairs) on each of `threads` threads; the sums'
// total. Needs AVX2.
int32_t Int4DotRoundsAvx2(int64_t rounds, int threads);

// The 64-bit sum of `words` words at `data` (32-byte aligned, a multiple of 16 words) on `threads`
// threads, with 256-bit loads and four accumulators, so that the loads and not the adds bound it.
uint64_t SumWordsAvx2(const uint64_t* data, int64_t words, int threads);

// FmaRoundsAvx2 and SumWordsAvx2 at 512 bits (12 chains of 16 lanes: 384 FLOP a round per
// thread; 64-byte aligned data, the read fetching 8 KiB ahead). Need AVX-512 F (CpuLevel::kAvx512).
float FmaRoundsAvx512(int64_t rounds, int threads);
uint64_t SumWordsAvx512(const uint64_t* data, int64_t words, int threads);

// `rounds` rounds of 12 independent vdpbf16ps (768 FLOP a round per thread: 16 lanes, 2 pairs)
// or vpdpbusd (1536 OP: 16 lanes, 4 quads) chains on each of `threads` threads; the chains' sum.
// Need AVX512-BF16 and AVX512-VNNI (CpuLevel::kAvx512Vnni).
float Bf16DotRoundsAvx512(int64_t rounds, int threads);
int32_t Int8DotRoundsAvx512(int64_t rounds, int threads);

}  // namespace quantpath::bench_internal
