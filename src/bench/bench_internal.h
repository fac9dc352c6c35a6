// Internal to src/bench: what the dense rows (linear_bench.cc) and the MoE rows (moe_bench.cc)
// share, so that both make their synthetic parameters and derive their figures the same way.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "quantpath/bench.h"
#include "quantpath/specs.h"

namespace quantpath::bench_internal {

// Every float tensor of the synthetic parameters, and every value of X: no denormal, no overflow
// in the sums.
inline constexpr float kSyntheticValue = 1.0f / 64;

// The spec of a benchmark spec id ("id" or "id:ACT", BenchWeights::Make): the spec of the first
// source layout its family reads, as the parameters are synthetic and every layout's loader ends
// in the same canonical layout. Errors: an unknown spec id or activation form.
Result<std::unique_ptr<WeightSpec>> BenchSpec(std::string_view spec_id);

// Every float tensor kSyntheticValue, every other byte pseudo-random from `seed` (codes of every
// kind, as real weights); marked loaded and processed.
void FillSynthetic(LinearParams* params, uint64_t seed);

// The row's rates from its seconds, m, threads and cold: weight_gbps (`weight_bytes` a call),
// bandwidth_gbps (for a cold decode row the higher of the machine's figure and one measured again
// now) and pct_bandwidth (M <= 16), gflops (`flops` a call), peak_gflops (`peak`) and pct_peak
// (M >= 64), best_peak_gflops (`best_peak`), roofline_gflops and pct_roofline.
void SetRates(BenchRow* row, double weight_bytes, double flops, std::optional<double> peak,
              std::optional<double> best_peak, const MachineLimits& limits);

// The highest peak on `threads` threads among the units of the kernels that dispatch could pick
// for `probe` on this CPU (whatever their priority), or none where no unit's peak is measured.
std::optional<double> BestPeakGflops(const KernelProbe& probe, int threads,
                                     const MachineLimits& limits);

}  // namespace quantpath::bench_internal
