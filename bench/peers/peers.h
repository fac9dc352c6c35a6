// The named peers bench_linear times beside quantpath's kernels, each on a dense weight of the
// layer's shape (a weight's values do not change a dense GEMM's speed), in `copies` copies cycled
// (bench_linear passes ColdCopies of the peer's own weight bytes for a cold row), timed as
// quantpath's kernels are (BestSecondsPerCall):
//   onednn-bf16   oneDNN's matmul, bf16 in and out, its weights reordered ahead of time to the
//                 layout it picks (format any), as an engine does once at load
//   onednn-int8   the same with u8 activations, s8 weights and s32 out (int8-path specs)
//   openblas-sgemm  OpenBLAS sgemm in fp32 on W as stored ([N, K], transposed in the call)
// A peer the library has no kernel for on this CPU (oneDNN's bf16 matmul below AVX-512) is
// ErrorCode::kUnsupported: its rows are left out, and bench_linear says so on stderr.
#pragma once

#include <cstdint>
#include <string>

#include "quantpath/base.h"

namespace quantpath::peers {

Result<double> OneDnnSeconds(bool int8, int64_t m, int64_t n, int64_t k, int threads,
                             int64_t copies);
Result<double> OpenBlasSeconds(int64_t m, int64_t n, int64_t k, int threads, int64_t copies);

// What each peer library is, as it says at run time (version, build, threading), for the lines
// bench_linear prints before its rows.
std::string OneDnnConfiguration();
std::string OpenBlasConfiguration();

}  // namespace quantpath::peers
