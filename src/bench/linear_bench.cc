// BenchLinear (bench.h): a kernel timed on synthetic parameters, cold or warm, and its row.
#include <algorithm>
#include <chrono>
#include <vector>

#include "quantpath/bench.h"
#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "quantpath/specs.h"
#include "quantpath/threads.h"
#include "src/bench/bench_internal.h"

namespace quantpath {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kMinSeconds = 0.2;    // timed per row at the least, after one untimed call
constexpr double kPassSeconds = 0.02;  // per pass at the least
constexpr int kMinPasses = 3;
// Rows whose passes reach this much together stop before kMinPasses, and a first call this long is
// the measure itself: a call that long averages a neighbour's traffic within itself, and the
// prefill rows of a CPU without a matrix unit (seconds a call at M = 2048) would otherwise take
// most of the table's time.
constexpr double kEnoughSeconds = 1.0;

}  // namespace

Result<BenchWeights> BenchWeights::Make(std::string_view spec_id, int64_t n, int64_t k, bool cold,
                                        const MachineLimits& limits) {
  BenchWeights w;
  w.spec_id_ = std::string(spec_id);
  w.n_ = n;
  w.k_ = k;
  w.cold_ = cold;
  QP_ASSIGN_OR_RETURN(w.spec_, bench_internal::BenchSpec(spec_id));
  AllocationRequest allocation;
  allocation.layer = "bench";
  allocation.shape = {n, k};
  QP_ASSIGN_OR_RETURN(LinearParams first, w.spec_->Allocate(allocation));
  w.weight_bytes_ = first.WeightBytes();
  const int64_t copies = cold ? ColdCopies(w.weight_bytes_, limits.llc_bytes) : 1;
  w.copies_.push_back(std::move(first));
  for (int64_t c = 1; c < copies; ++c) {
    QP_ASSIGN_OR_RETURN(LinearParams copy, w.spec_->Allocate(allocation));
    w.copies_.push_back(std::move(copy));
  }
  for (size_t c = 0; c < w.copies_.size(); ++c) {
    bench_internal::FillSynthetic(&w.copies_[c], 0x9E3779B97F4A7C15u + c);
  }
  return w;
}

int64_t ColdCopies(int64_t bytes, int64_t llc_bytes) {
  return std::max<int64_t>(2, (4 * llc_bytes + bytes - 1) / bytes);
}

BenchWeights::BenchWeights(BenchWeights&&) noexcept = default;
BenchWeights& BenchWeights::operator=(BenchWeights&&) noexcept = default;
BenchWeights::~BenchWeights() = default;

const LinearParams& BenchWeights::Next() {
  const LinearParams& p = copies_[next_];
  next_ = (next_ + 1) % copies_.size();
  return p;
}

double BestSecondsPerCall(const std::function<void()>& call) {
  const Clock::time_point first = Clock::now();
  call();
  const double first_seconds = std::chrono::duration<double>(Clock::now() - first).count();
  if (first_seconds >= kEnoughSeconds) return first_seconds;
  double best = 0, total = 0;
  for (int pass = 0; (pass < kMinPasses && total < kEnoughSeconds) || total < kMinSeconds; ++pass) {
    int64_t calls = 0;
    const Clock::time_point start = Clock::now();
    double seconds = 0;
    do {
      call();
      ++calls;
      seconds = std::chrono::duration<double>(Clock::now() - start).count();
    } while (seconds < kPassSeconds);
    total += seconds;
    const double per_call = seconds / static_cast<double>(calls);
    best = pass == 0 ? per_call : std::min(best, per_call);
  }
  return best;
}

Result<BenchRow> BenchLinear(BenchWeights& weights, int64_t m, int threads,
                             const MachineLimits& limits) {
  const WeightSpec& spec = weights.spec();
  const int64_t n = weights.n(), k = weights.k();
  const KernelProbe probe{spec.key(),
                          m,
                          n,
                          k,
                          QDType::kBF16,
                          QDType::kBF16,
                          DeviceCaps{},
                          spec.activation(),
                          weights.copies().front().tensor(Slot::kWeight).dtype()};
  QP_ASSIGN_OR_RETURN(std::shared_ptr<Dispatcher> dispatcher, Dispatcher::Default());
  QP_ASSIGN_OR_RETURN(const LinearKernel* kernel, dispatcher->Select(probe));
  const std::vector<uint16_t> x(static_cast<size_t>(m * k),
                                FloatToBf16(bench_internal::kSyntheticValue));
  std::vector<uint16_t> y(static_cast<size_t>(m * n));
  const ConstMatrix xm{QDType::kBF16, x.data(), m, k};
  const MutableMatrix ym{QDType::kBF16, y.data(), m, n};

  const ThreadCount team(threads);
  // Untimed: every copy's prepack.
  for (const LinearParams& p : weights.copies()) kernel->Prepare(p);
  // Cold: each call's weights were last read copies − 1 calls ago, by then evicted.
  const double best =
      BestSecondsPerCall([&] { kernel->Apply(weights.Next(), spec.activation(), xm, ym); });

  BenchRow row;
  row.spec = weights.spec_id();
  row.m = m;
  row.n = n;
  row.k = k;
  row.threads = threads;
  row.cold = weights.cold();
  row.kernel = std::string(kernel->name());
  row.seconds = best;
  bench_internal::SetRates(&row, static_cast<double>(weights.weight_bytes()),
                           2.0 * static_cast<double>(m * n) * static_cast<double>(k),
                           limits.PeakGflops(kernel->unit(), threads),
                           bench_internal::BestPeakGflops(probe, threads, limits), limits);
  return row;
}

Result<BenchRow> BenchLinear(const BenchRequest& request, const MachineLimits& limits) {
  QP_ASSIGN_OR_RETURN(BenchWeights weights, BenchWeights::Make(request.spec_id, request.n,
                                                               request.k, request.cold, limits));
  return BenchLinear(weights, request.m, request.threads, limits);
}

Json BenchRowJson(const BenchRow& row) {
  const auto number = [](std::optional<double> v) { return v ? Json::Double(*v) : Json::Null(); };
  const auto integer = [](std::optional<int64_t> v) { return v ? Json::Int(*v) : Json::Null(); };
  return Json::Object({{"spec", Json::String(row.spec)},
                       {"m", Json::Int(row.m)},
                       {"n", Json::Int(row.n)},
                       {"k", Json::Int(row.k)},
                       {"experts", integer(row.experts)},
                       {"top_k", integer(row.top_k)},
                       {"threads", Json::Int(row.threads)},
                       {"cold", Json::Bool(row.cold)},
                       {"kernel", Json::String(row.kernel)},
                       {"seconds", Json::Double(row.seconds)},
                       {"weight_gbps", Json::Double(row.weight_gbps)},
                       {"bandwidth_gbps", Json::Double(row.bandwidth_gbps)},
                       {"pct_bandwidth", number(row.pct_bandwidth)},
                       {"gflops", Json::Double(row.gflops)},
                       {"peak_gflops", number(row.peak_gflops)},
                       {"pct_peak", number(row.pct_peak)},
                       {"best_peak_gflops", number(row.best_peak_gflops)},
                       {"roofline_gflops", Json::Double(row.roofline_gflops)},
                       {"pct_roofline", Json::Double(row.pct_roofline)},
                       {"peer", row.peer ? Json::String(*row.peer) : Json::Null()},
                       {"peer_gflops", number(row.peer_gflops)},
                       {"ratio_to_peer", number(row.ratio_to_peer)}});
}

}  // namespace quantpath
