// The benchmark's synthetic parameters and the figures of a row (bench_internal.h), shared by the
// dense rows and the MoE rows.
#include <algorithm>

#include "fmt/format.h"
#include "quantpath/cpu_features.h"
#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "src/bench/bench_internal.h"

namespace quantpath::bench_internal {
namespace {

constexpr int kRowReadPasses = 4;  // the read bandwidth measured again beside each decode row

// The spec of `key` from the first source layout its family reads.
Result<std::unique_ptr<WeightSpec>> AnyLayoutSpec(const SpecKey& key, const ActivationQuant& act) {
  Result<std::unique_ptr<WeightSpec>> first = MakeSpec(key, act);
  if (first.ok()) return first;
  for (int layout = 0; layout <= static_cast<int>(SourceLayout::kModelSlim); ++layout) {
    LoadFacts facts;
    facts.layout = static_cast<SourceLayout>(layout);
    Result<std::unique_ptr<WeightSpec>> spec = MakeSpec(key, act, facts);
    if (spec.ok()) return spec;
  }
  return first;
}

// The activation forms a benchmark spec may name after a colon ("int8_channel:int8-token").
struct NamedActivation {
  std::string_view name;
  ActivationQuant act;
};
const NamedActivation kActivations[] = {
    {"int8-token", {ActMode::kDynamicPerToken, 0, QDType::kINT8}},
    {"fp8-token", {ActMode::kDynamicPerToken, 0, QDType::kFP8E4M3}},
    {"fp8-tensor", {ActMode::kDynamicPerTensor, 0, QDType::kFP8E4M3}},
    {"fp8-group128", {ActMode::kDynamicGroup, 128, QDType::kFP8E4M3}},
};

Result<ActivationQuant> ParseBenchActivation(std::string_view name) {
  std::string names;
  for (const NamedActivation& a : kActivations) {
    if (a.name == name) return a.act;
    names += names.empty() ? "" : ", ";
    names += a.name;
  }
  return InvalidInput(fmt::format("unknown activation '{}' (expected one of {})", name, names));
}

}  // namespace

Result<std::unique_ptr<WeightSpec>> BenchSpec(std::string_view spec_id) {
  const size_t colon = spec_id.find(':');
  QP_ASSIGN_OR_RETURN(SpecKey key, ParseSpecId(spec_id.substr(0, colon)));
  ActivationQuant act;
  if (colon != std::string_view::npos) {
    QP_ASSIGN_OR_RETURN(act, ParseBenchActivation(spec_id.substr(colon + 1)));
  }
  return AnyLayoutSpec(key, act);
}

void FillSynthetic(LinearParams* params, uint64_t seed) {
  for (size_t slot = 0; slot < params->slots.size(); ++slot) {
    ParamTensor& t = params->slots[slot];
    if (t.empty()) continue;
    const int64_t count = t.elements();
    // Block scales of one byte (E4M3, E8M0) as a checkpoint holds them: positive normal values
    // near 1 (0x30 … 0x4F and 2^-8 … 2^7), not NaN, not random exponents.
    if (static_cast<Slot>(slot) == Slot::kWeightScale && Info(t.dtype()).bits == 8) {
      const bool e4m3 = t.dtype() == QDType::kFP8E4M3;
      const uint8_t base = e4m3 ? 0x30 : 119;
      uint64_t state = seed;
      for (int64_t i = 0; i < count; ++i) {
        state = state * 6364136223846793005u + 1442695040888963407u;
        t.data<uint8_t>()[i] = static_cast<uint8_t>(base + (state >> (e4m3 ? 59 : 60)));
      }
      continue;
    }
    switch (t.dtype()) {
      case QDType::kFP32:
        std::fill(t.data<float>(), t.data<float>() + count, kSyntheticValue);
        break;
      case QDType::kBF16:
        std::fill(t.data<uint16_t>(), t.data<uint16_t>() + count, FloatToBf16(kSyntheticValue));
        break;
      case QDType::kFP16:
        std::fill(t.data<uint16_t>(), t.data<uint16_t>() + count, FloatToFp16(kSyntheticValue));
        break;
      default: {
        uint64_t state = seed;
        std::byte* bytes = t.raw();
        for (int64_t i = 0; i < t.bytes(); ++i) {
          state = state * 6364136223846793005u + 1442695040888963407u;
          bytes[i] = static_cast<std::byte>(state >> 56);
        }
      }
    }
  }
  params->loaded = params->processed = true;
}

void SetRates(BenchRow* row, double weight_bytes, double flops, std::optional<double> peak,
              std::optional<double> best_peak, const MachineLimits& limits) {
  row->weight_gbps = weight_bytes / row->seconds / 1e9;
  // The read bandwidth at this moment as well as at the start (a shared host's moves by half
  // between minutes), the higher of the two, so that a decode row is paired with what the
  // machine could read around it.
  row->bandwidth_gbps = limits.ReadGbps(row->threads);
  if (row->m <= 16 && row->cold) {
    row->bandwidth_gbps = std::max(row->bandwidth_gbps,
                                   MeasureReadGbps(limits.llc_bytes, row->threads, kRowReadPasses));
  }
  if (row->m <= 16) row->pct_bandwidth = 100 * row->weight_gbps / row->bandwidth_gbps;
  row->gflops = flops / row->seconds / 1e9;
  row->peak_gflops = peak;
  if (row->m >= 64 && peak) row->pct_peak = 100 * row->gflops / *peak;
  row->best_peak_gflops = best_peak;
  row->roofline_gflops = row->bandwidth_gbps * flops / weight_bytes;
  if (best_peak) row->roofline_gflops = std::min(row->roofline_gflops, *best_peak);
  row->pct_roofline = 100 * row->gflops / row->roofline_gflops;
}

std::optional<double> BestPeakGflops(const KernelProbe& probe, int threads,
                                     const MachineLimits& limits) {
  Result<CpuFeatures> allowed = ResolveCpuFeatures();
  std::optional<double> best;
  for (const LinearKernel* kernel : KernelRegistry::Global().kernels()) {
    if (!allowed.ok() || !allowed->Covers(kernel->features())) continue;
    if (!kernel->Serves(probe.spec, probe.device) || !kernel->CanHandle(probe)) continue;
    const std::optional<double> peak = limits.PeakGflops(kernel->unit(), threads);
    if (peak && (!best || *peak > *best)) best = peak;
  }
  return best;
}

}  // namespace quantpath::bench_internal
