// MoeBenchWeights and BenchMoe (bench.h): the grouped MoE forward timed on synthetic experts.
#include <algorithm>
#include <array>
#include <set>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "quantpath/bench.h"
#include "quantpath/numeric.h"
#include "src/bench/bench_internal.h"

namespace quantpath {
namespace {

// Routings a cold row cycles through: each call reads the experts of its own, so that the
// experts one call reads were last read, if at all, several calls before.
constexpr int kColdRoutings = 16;
constexpr uint64_t kRoutingSeed = 0x6D6F65;

}  // namespace

Result<MoeBenchWeights> MoeBenchWeights::Make(std::string_view spec_id,
                                              const MoeBenchShape& shape) {
  if (shape.hidden < 1 || shape.intermediate < 1 || shape.top_k < 1 ||
      shape.top_k > shape.experts) {
    return InvalidInput(fmt::format(
        "MoE rows: {} experts of H = {}, I = {}, top-{}: expected H, I >= 1 and top_k in [1, "
        "experts]",
        shape.experts, shape.hidden, shape.intermediate, shape.top_k));
  }
  QP_ASSIGN_OR_RETURN(std::shared_ptr<Dispatcher> dispatcher, Dispatcher::Default());
  MoeBenchWeights w;
  w.spec_id_ = std::string(spec_id);
  w.shape_ = shape;
  const std::array<std::pair<const char*, std::array<int64_t, 2>>, 2> projections = {
      {{"w13", {2 * shape.intermediate, shape.hidden}},
       {"w2", {shape.hidden, shape.intermediate}}}};
  // Reserved, so that the layer's pointers stay where they were made.
  w.linears_.reserve(static_cast<size_t>(2 * shape.experts));
  for (int64_t e = 0; e < shape.experts; ++e) {
    for (const auto& [name, dims] : projections) {
      QP_ASSIGN_OR_RETURN(std::unique_ptr<WeightSpec> spec, bench_internal::BenchSpec(spec_id));
      AllocationRequest request;
      request.layer = fmt::format("bench experts, expert {} ({})", e, name);
      request.shape = dims;
      QP_ASSIGN_OR_RETURN(LinearParams params, spec->Allocate(request));
      bench_internal::FillSynthetic(&params, 0x9E3779B97F4A7C15u + w.linears_.size());
      QP_ASSIGN_OR_RETURN(Linear linear,
                          Linear::Create(std::move(spec), std::move(params), dispatcher));
      w.linears_.push_back(std::move(linear));
    }
  }
  w.expert_bytes_ = w.linears_[0].params().WeightBytes() + w.linears_[1].params().WeightBytes();
  w.layer_.name = "bench experts";
  for (int64_t e = 0; e < shape.experts; ++e) {
    w.layer_.experts.push_back({{&w.linears_[2 * e]}, &w.linears_[2 * e + 1]});
  }
  return w;
}

MoeBenchWeights::MoeBenchWeights(MoeBenchWeights&&) noexcept = default;
MoeBenchWeights& MoeBenchWeights::operator=(MoeBenchWeights&&) noexcept = default;
MoeBenchWeights::~MoeBenchWeights() = default;

Result<BenchRow> BenchMoe(const MoeBenchWeights& weights, int64_t m, int threads, bool cold,
                          const MachineLimits& limits) {
  const MoeBenchShape& shape = weights.shape();
  if (m < 1) return InvalidInput(fmt::format("MoE rows: M = {}: expected at least 1 token", m));
  const bool row_cold = cold && shape.experts * weights.expert_bytes() >= 4 * limits.llc_bytes;
  std::vector<RoutingTable> routings;
  double read_bytes = 0;  // the cycle's mean
  for (int r = 0; r < (row_cold ? kColdRoutings : 1); ++r) {
    routings.push_back(SeededRouting(kRoutingSeed + r, m, shape.top_k, shape.experts));
    const std::set<int32_t> active(routings.back().ids.begin(), routings.back().ids.end());
    read_bytes += static_cast<double>(active.size()) * static_cast<double>(weights.expert_bytes());
  }
  read_bytes /= static_cast<double>(routings.size());
  const std::vector<uint16_t> x(static_cast<size_t>(m * shape.hidden),
                                FloatToBf16(bench_internal::kSyntheticValue));
  std::vector<uint16_t> y(x.size());
  const ConstMatrix xm{QDType::kBF16, x.data(), m, shape.hidden};
  const MutableMatrix ym{QDType::kBF16, y.data(), m, shape.hidden};

  std::vector<const LinearKernel*> kernels;
  Status failure;
  size_t next = 0;
  const auto call = [&] {
    const RoutingTable& routing = routings[next];
    next = (next + 1) % routings.size();
    Result<MoeCall> done = MoeForward(weights.layer(), routing.View(), xm, ym, {threads});
    if (!done.ok()) {
      failure = done.status();
      return;
    }
    for (const LinearKernel* kernel : done->kernels) {
      if (std::find(kernels.begin(), kernels.end(), kernel) == kernels.end()) {
        kernels.push_back(kernel);
      }
    }
  };
  const double best = BestSecondsPerCall(call);
  if (!failure.ok()) return failure;

  BenchRow row;
  row.spec = weights.spec_id();
  row.m = m;
  row.n = shape.hidden;
  row.k = shape.intermediate;
  row.experts = shape.experts;
  row.top_k = shape.top_k;
  row.threads = threads;
  row.cold = row_cold;
  std::vector<std::string> names;
  std::optional<double> peak;
  for (const LinearKernel* kernel : kernels) {
    names.emplace_back(kernel->name());
    const std::optional<double> unit_peak = limits.PeakGflops(kernel->unit(), threads);
    if (unit_peak && (!peak || *unit_peak > *peak)) peak = unit_peak;
  }
  row.kernel = Join(names, "+");
  row.seconds = best;
  const double flops = 2.0 * static_cast<double>(m * shape.top_k) * 3.0 *
                       static_cast<double>(shape.intermediate) * static_cast<double>(shape.hidden);
  // The grouped forward's best unit: the best of its kernels' (each expert's rows are a
  // problem of their own).
  bench_internal::SetRates(&row, read_bytes, flops, peak, peak, limits);
  return row;
}

}  // namespace quantpath
