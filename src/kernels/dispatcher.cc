// The M-bucket policy, the packed shape key, and the caching dispatcher.
#include <functional>
#include <utility>

#include "fmt/format.h"
#include "quantpath/kernels.h"

namespace quantpath {
namespace {

constexpr int64_t kExactM = 16;  // M up to this stays exact
constexpr int64_t kFirstBucket = 128;

// The index of BucketM(m) (0..15 for M 1..16, then 16 + i for 128 · 4^i).
int64_t BucketIndex(int64_t m) {
  if (m <= kExactM) return m - 1;
  int64_t index = kExactM;
  for (int64_t bucket = kFirstBucket; bucket < m; bucket *= 4) ++index;
  return index;
}

std::string DtypeName(QDType dtype) { return std::string(QDTypeName(dtype)); }

// The cache key of `probe`, and what the candidates are asked: the probe with the bucket's largest
// M, since the bucket's kernel must serve every M of the bucket. Being the probe itself, the key
// holds every field a CanHandle may read.
Result<KernelProbe> BucketProbe(const KernelProbe& probe) {
  QP_RETURN_IF_ERROR(PackShapeKey(probe.m, probe.n, probe.k).status());  // in range
  KernelProbe bucket = probe;
  bucket.m = BucketM(probe.m);
  return bucket;
}

size_t Mix(size_t h, uint64_t v) {
  return h ^ (std::hash<uint64_t>()(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}

}  // namespace

int64_t BucketM(int64_t m) {
  if (m <= kExactM) return m;
  int64_t bucket = kFirstBucket;
  while (bucket < m) bucket *= 4;
  return bucket;
}

Result<uint64_t> PackShapeKey(int64_t m, int64_t n, int64_t k) {
  if (m < 1 || m > kMaxBucketM || n < 1 || n > kMaxDim || k < 1 || k > kMaxDim) {
    return InvalidInput(fmt::format(
        "matrix shape M = {}, N = {}, K = {} is outside the dispatcher's range (M in [1, {}], N "
        "and K in [1, {}])",
        m, n, k, kMaxBucketM, kMaxDim));
  }
  return (static_cast<uint64_t>(BucketIndex(m)) << 58) | (static_cast<uint64_t>(n) << 29) |
         static_cast<uint64_t>(k);
}

size_t Dispatcher::KeyHash::operator()(const KernelProbe& key) const {
  // Structured bindings name every field: one added to KernelProbe, DeviceCaps or ActivationQuant
  // stops this compiling until it is hashed too (== is defaulted, so it compares it already).
  const auto& [spec, m, n, k, in, out, device, act, weight] = key;
  const auto& [device_name, sm] = device;
  const auto& [mode, group_size, act_dtype, symmetric, kind] = act;
  size_t h = SpecKeyHash()(spec);
  h = Mix(h, *PackShapeKey(m, n, k));  // in range: keys are BucketProbe's
  h = Mix(h, (static_cast<uint64_t>(in) << 16) | (static_cast<uint64_t>(out) << 8) |
                 static_cast<uint64_t>(weight));
  h = Mix(h, std::hash<std::string>()(device_name));
  h = Mix(h, static_cast<uint64_t>(sm));
  h = Mix(h, (static_cast<uint64_t>(mode) << 32) ^ static_cast<uint64_t>(group_size));
  h = Mix(h, (static_cast<uint64_t>(act_dtype) << 1) | static_cast<uint64_t>(symmetric));
  h = Mix(h, kind.id());
  return h;
}

Dispatcher::Dispatcher(const KernelRegistry& registry, CpuFeatures allowed)
    : Dispatcher(registry, allowed, *DotUnitPeaksFor(DetectCpuModel(), "")) {}

Dispatcher::Dispatcher(const KernelRegistry& registry, CpuFeatures allowed, DotUnitPeaks peaks)
    : registry_(registry), allowed_(allowed), peaks_(std::move(peaks)) {}

Result<std::shared_ptr<Dispatcher>> Dispatcher::Default() {
  static const Result<std::shared_ptr<Dispatcher>>* instance = [] {
    Result<CpuFeatures> allowed = ResolveCpuFeatures();
    if (!allowed.ok()) return new Result<std::shared_ptr<Dispatcher>>(allowed.status());
    Result<DotUnitPeaks> peaks = ResolveDotUnitPeaks();
    if (!peaks.ok()) return new Result<std::shared_ptr<Dispatcher>>(peaks.status());
    return new Result<std::shared_ptr<Dispatcher>>(
        std::make_shared<Dispatcher>(KernelRegistry::Global(), *allowed, *std::move(peaks)));
  }();
  return *instance;
}

Result<const LinearKernel*> Dispatcher::Select(const KernelProbe& probe) {
  QP_ASSIGN_OR_RETURN(KernelProbe key, BucketProbe(probe));
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      ++stats_.hits;
      return it->second;
    }
  }
  // On the CPU, the unit's peak first: a kernel on a faster unit wins over a later one of a
  // higher priority on a slower unit.
  const auto rank = [&](const LinearKernel* kernel) {
    const double peak =
        key.device.is_cpu() ? peaks_.Peak(UnitWidthOf(kernel->unit(), kernel->features())) : 0.0;
    return std::pair<double, int>(peak, kernel->priority());
  };
  const LinearKernel* best = nullptr;
  for (const LinearKernel* kernel : registry_.kernels()) {
    if (key.device.is_cpu() && !allowed_.Covers(kernel->features())) continue;
    if (!kernel->Serves(key.spec, key.device) || !kernel->CanHandle(key)) continue;
    if (best == nullptr || rank(kernel) > rank(best)) best = kernel;
  }
  if (best == nullptr) {
    const std::vector<std::string> serving = registry_.KernelsFor(probe.spec, probe.device);
    // The one place a spec_id is formatted on the forward path: the error message.
    const std::string cpu =
        probe.device.is_cpu() ? fmt::format(" (CPU features {})", allowed_.ToString()) : "";
    return Unsupported(
        fmt::format("no kernel for spec {} on {}{}, M = {}, N = {}, K = {}, in {}, out {}, "
                    "activations {}; kernels serving it there: {}",
                    probe.spec.ToId(), probe.device.name, cpu, probe.m, probe.n, probe.k,
                    DtypeName(probe.in), DtypeName(probe.out), probe.act.ToString(),
                    serving.empty() ? std::string("none") : Join(serving, ", ")));
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.misses;
  cache_.emplace(std::move(key), best);
  stats_.entries = static_cast<int64_t>(cache_.size());
  return best;
}

Dispatcher::Stats Dispatcher::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace quantpath
