// The fp32 FMA peak loop, in its own AVX2 translation unit (fma_peak_avx2.cc).
#pragma once

#include <cstdint>

namespace quantpath::bench_internal {

// Runs `rounds` rounds of 10 independent 8-wide fp32 FMA chains on each of `threads` threads (160
// FLOP per round per thread) and returns the chains' sum, for the caller to keep. Needs AVX2 and
// FMA; timed by the caller, so that nothing but the loop is compiled for AVX2.
float FmaRoundsAvx2(int64_t rounds, int threads);

}  // namespace quantpath::bench_internal
