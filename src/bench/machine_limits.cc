// MeasureMachine (bench.h): the last-level cache from sysfs, DRAM read bandwidth on a buffer of
// 4× that cache, and the dot-product peaks the CPU has, each the best of several passes.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "quantpath/bench.h"
#include "quantpath/cpu_features.h"
#include "quantpath/threads.h"
#include "src/bench/machine_loops.h"

namespace quantpath {
namespace {

using Clock = std::chrono::steady_clock;

// Passes of the read loop, the best kept: a neighbour's traffic on a shared host moves single
// passes by a third.
constexpr int kReadPasses = 16;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The size of the highest-level cache cpu0 reports ("32768K"), or 0.
int64_t LastLevelCacheBytes() {
  int64_t best = 0;
  int best_level = 0;
  for (int index = 0; index < 16; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::ifstream level_file(dir + "/level"), size_file(dir + "/size");
    int level = 0;
    std::string size;
    if (!(level_file >> level) || !(size_file >> size) || size.empty()) continue;
    int64_t bytes = 0;
    size_t i = 0;
    for (; i < size.size() && size[i] >= '0' && size[i] <= '9'; ++i)
      bytes = bytes * 10 + (size[i] - '0');
    const char unit = i < size.size() ? size[i] : 'B';
    bytes <<= unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0;
    if (level > best_level || (level == best_level && bytes > best)) {
      best_level = level;
      best = bytes;
    }
  }
  return best;
}

// GB/s of summing `words` 8-byte words on `threads` threads, the best of `passes`: at the widest
// vector width the CPU has (a scalar sum is bound by its adds on one thread), else 8 words a step.
double ReadGbps(const uint64_t* data, int64_t words, int threads, int passes) {
  const CpuFeatures cpu = DetectCpuFeatures();
  const bool avx512 = cpu.Covers(CpuLevelRequires(CpuLevel::kAvx512));
  const bool avx2 = cpu.Covers(CpuLevelRequires(CpuLevel::kAvx2));
  double best = 0;
  for (int pass = 0; pass < passes; ++pass) {
    uint64_t total = 0;
    const Clock::time_point start = Clock::now();
    if (avx512) {
      total = bench_internal::SumWordsAvx512(data, words, threads);
    } else if (avx2) {
      total = bench_internal::SumWordsAvx2(data, words, threads);
    } else {
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) reduction(+ : total) schedule(static)
#endif
      for (int64_t block = 0; block < words / 8; ++block) {
        const uint64_t* p = data + block * 8;
        total += (p[0] + p[1]) + (p[2] + p[3]) + (p[4] + p[5]) + (p[6] + p[7]);
      }
    }
    const double seconds = Seconds(start);
    volatile uint64_t sink = total;  // the sum is used, so the loads stay
    (void)sink;
    best = std::max(best, static_cast<double>(words) * 8 / seconds / 1e9);
  }
  (void)threads;
  return best;
}

// The best of 3 passes of `loop(rounds, threads)`, at `per_round` multiply-adds × 2 a round per
// thread, where the CPU has `level`.
template <typename Loop>
std::optional<double> PeakGflops(CpuLevel level, double per_round, int threads, Loop loop) {
  if (!DetectCpuFeatures().Covers(CpuLevelRequires(level))) return std::nullopt;
  constexpr int64_t kRounds = int64_t{1} << 24;
  double best = 0;
  for (int pass = 0; pass < 3; ++pass) {
    const Clock::time_point start = Clock::now();
    volatile auto sink = loop(kRounds, threads);
    (void)sink;
    best =
        std::max(best, per_round * static_cast<double>(kRounds) * threads / Seconds(start) / 1e9);
  }
  return best;
}

// How far a measured ratio may stray from the table's: the AVX2 integer loops' figures move by a
// third between runs on a shared host, and the errors worth catching are factors of 2.
constexpr double kUnitTableSlack = 1.5;

// Each measured unit's one-thread peak as a ratio to the fp32 FMA's, against the table's ratio.
std::vector<std::string> UnitTableDisagreements(const MachineLimits& limits) {
  std::vector<std::string> out;
  if (!limits.fma_gflops_one) return out;
  const UnitWidth fp32 = DetectCpuFeatures().Covers(CpuLevelRequires(CpuLevel::kAvx512))
                             ? UnitWidth::kFp32x512
                             : UnitWidth::kFp32x256;
  const std::pair<UnitWidth, std::optional<double>> measured[] = {
      {UnitWidth::kBf16Pair512, limits.bf16_dot_gflops_one},
      {UnitWidth::kInt8Quad512, limits.int8_dot_gops_one},
      {UnitWidth::kInt16Pair256, limits.int16_dot_gops_one},
      {UnitWidth::kInt4Pair256, limits.int4_dot_gops_one}};
  for (const auto& [unit, peak] : measured) {
    if (!peak) continue;
    const double table = limits.unit_table.Peak(unit) / limits.unit_table.Peak(fp32);
    const double ratio = *peak / *limits.fma_gflops_one;
    if (ratio > kUnitTableSlack * table || ratio < table / kUnitTableSlack) {
      out.push_back(fmt::format("{} / {}: table {:.2f}, measured {:.2f}", UnitWidthName(unit),
                                UnitWidthName(fp32), table, ratio));
    }
  }
  return out;
}

}  // namespace

double MeasureReadGbps(int64_t llc_bytes, int threads, int passes) {
  const int64_t words = std::max<int64_t>(4 * llc_bytes, int64_t{64} << 20) / 128 * 16;
  // 64-byte aligned for the vector loads (operator new[] aligns to 16 only).
  struct Free {
    void operator()(uint64_t* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  const std::unique_ptr<uint64_t[], Free> buffer(new (std::align_val_t{64})
                                                     uint64_t[static_cast<size_t>(words)]);
  std::fill(buffer.get(), buffer.get() + words, uint64_t{1});  // every page present
  return ReadGbps(buffer.get(), words, threads, passes);
}

MachineLimits MeasureMachine() {
  MachineLimits limits;
  limits.llc_bytes = LastLevelCacheBytes();
  limits.llc_known = limits.llc_bytes > 0;
  if (!limits.llc_known) limits.llc_bytes = kAssumedLlcBytes;
  limits.threads = DefaultThreads();
  limits.read_gbps_one = MeasureReadGbps(limits.llc_bytes, 1, kReadPasses);
  limits.read_gbps_all = MeasureReadGbps(limits.llc_bytes, limits.threads, kReadPasses);
  for (const int threads : {1, limits.threads}) {
    const bool one = threads == 1;
    // fp32 FMA at the widest width.
    (one ? limits.fma_gflops_one : limits.fma_gflops_all) =
        DetectCpuFeatures().Covers(CpuLevelRequires(CpuLevel::kAvx512))
            ? PeakGflops(CpuLevel::kAvx512, 384, threads, bench_internal::FmaRoundsAvx512)
            : PeakGflops(CpuLevel::kAvx2, 160, threads, bench_internal::FmaRoundsAvx2);
    (one ? limits.bf16_dot_gflops_one : limits.bf16_dot_gflops_all) =
        PeakGflops(CpuLevel::kAvx512Vnni, 768, threads, bench_internal::Bf16DotRoundsAvx512);
    (one ? limits.int8_dot_gops_one : limits.int8_dot_gops_all) =
        PeakGflops(CpuLevel::kAvx512Vnni, 1536, threads, bench_internal::Int8DotRoundsAvx512);
    (one ? limits.int16_dot_gops_one : limits.int16_dot_gops_all) =
        PeakGflops(CpuLevel::kAvx2, 256, threads, bench_internal::Int16DotRoundsAvx2);
    (one ? limits.int4_dot_gops_one : limits.int4_dot_gops_all) =
        PeakGflops(CpuLevel::kAvx2, 1024, threads, bench_internal::Int4DotRoundsAvx2);
  }
  // An invalid QUANTPATH_DOT_UNITS leaves the table's row here; RunBenchTable refuses it first.
  Result<DotUnitPeaks> table = ResolveDotUnitPeaks();
  limits.unit_table = table.ok() ? *std::move(table) : *DotUnitPeaksFor(DetectCpuModel(), "");
  limits.unit_table_disagrees = UnitTableDisagreements(limits);
  return limits;
}

std::optional<double> MachineLimits::PeakGflops(DotUnit unit, int threads) const {
  const bool one = threads == 1;
  switch (unit) {
    case DotUnit::kFp32:
      return one ? fma_gflops_one : fma_gflops_all;
    case DotUnit::kBf16Pair:
      return one ? bf16_dot_gflops_one : bf16_dot_gflops_all;
    case DotUnit::kInt8Quad:
      return one ? int8_dot_gops_one : int8_dot_gops_all;
    case DotUnit::kInt16Pair:
      return one ? int16_dot_gops_one : int16_dot_gops_all;
    case DotUnit::kInt4Pair:
      return one ? int4_dot_gops_one : int4_dot_gops_all;
  }
  return std::nullopt;
}

Json MachineLimitsJson(const MachineLimits& limits) {
  std::vector<Json> disagrees;
  for (const std::string& d : limits.unit_table_disagrees) disagrees.push_back(Json::String(d));
  const auto optional = [](std::optional<double> v) { return v ? Json::Double(*v) : Json::Null(); };
  return Json::Object({{"llc_bytes", Json::Int(limits.llc_bytes)},
                       {"llc_known", Json::Bool(limits.llc_known)},
                       {"threads", Json::Int(limits.threads)},
                       {"read_gbps_one", Json::Double(limits.read_gbps_one)},
                       {"read_gbps_all", Json::Double(limits.read_gbps_all)},
                       {"fma_gflops_one", optional(limits.fma_gflops_one)},
                       {"fma_gflops_all", optional(limits.fma_gflops_all)},
                       {"bf16_dot_gflops_one", optional(limits.bf16_dot_gflops_one)},
                       {"bf16_dot_gflops_all", optional(limits.bf16_dot_gflops_all)},
                       {"int8_dot_gops_one", optional(limits.int8_dot_gops_one)},
                       {"int8_dot_gops_all", optional(limits.int8_dot_gops_all)},
                       {"int16_dot_gops_one", optional(limits.int16_dot_gops_one)},
                       {"int16_dot_gops_all", optional(limits.int16_dot_gops_all)},
                       {"int4_dot_gops_one", optional(limits.int4_dot_gops_one)},
                       {"int4_dot_gops_all", optional(limits.int4_dot_gops_all)},
                       {"unit_table", Json::String(limits.unit_table.row)},
                       {"unit_table_overridden", Json::Bool(limits.unit_table.overridden)},
                       {"unit_table_disagrees", Json::Array(std::move(disagrees))}});
}

}  // namespace quantpath
