// quantpath kernels: Y = X · Wᵀ for every spec, a registry the kernel files fill themselves, and a
// caching dispatcher.
//
// Goals: kernels register themselves (adding one means adding a file, never editing a switch);
// "is (spec, device) supported?" is a registry query answered before any forward; the dispatcher
// picks a kernel per probe with M rounded to its bucket (every field a kernel may read) once and
// caches it; a reference kernel per spec (dequantize, accumulate in fp32) is the oracle of the
// fast ones; a kernel declares the CPU features it needs, and QUANTPATH_CPU_ISA /
// QUANTPATH_CPU_DISABLE narrow what dispatch may use (cpu_features.h).
// Non-goals: config files and formats, loading weights (specs), CUDA kernels without
// QUANTPATH_CUDA.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/cpu_features.h"
#include "quantpath/dot_units.h"
#include "quantpath/ir.h"
#include "quantpath/specs.h"

namespace quantpath {

// ---------------------------------------------------------------------------------------------
// Row-major matrices handed to kernels (fp32 or bf16).
struct ConstMatrix {
  QDType dtype = QDType::kFP32;
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
};
struct MutableMatrix {
  QDType dtype = QDType::kFP32;
  void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
};

// What the dispatcher asks a kernel before choosing it. With M rounded to its bucket it is also the
// dispatcher's cache key, so a field added here is one the cache tells apart.
struct KernelProbe {
  SpecKey spec;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  QDType in = QDType::kFP32;
  QDType out = QDType::kFP32;
  DeviceCaps device;
  ActivationQuant act;
  QDType weight = QDType::kBF16;  // W's stored element type (the bf16 spec keeps the params dtype)
  bool operator==(const KernelProbe&) const = default;
};

// The priority of portable reference kernels; a fast kernel declares a higher one.
inline constexpr int kReferencePriority = 0;

class LinearKernel {
 public:
  virtual ~LinearKernel() = default;
  // Names encode both operands: "GemmFp8BlockA8_Ref", "GemmW16A16_Ref", ….
  virtual std::string_view name() const = 0;
  // The CPU features the kernel's code needs: at least those its translation unit is compiled for
  // (*_avx2.cc needs CpuLevelRequires(CpuLevel::kAvx2), …); empty for portable code.
  virtual CpuFeatures features() const = 0;
  // Among the kernels that can run a problem, the dispatcher takes the highest priority (then the
  // first registered); reference kernels have kReferencePriority.
  virtual int priority() const = 0;
  virtual DotUnit unit() const { return DotUnit::kFp32; }
  // Coarse capability, for registry queries: whether the kernel serves specs of `key` on `device`
  // (any shape, dtype and activation mode).
  virtual bool Serves(const SpecKey& key, const DeviceCaps& device) const = 0;
  // Whether the kernel runs this exact problem (shape, dtypes, activation mode).
  virtual bool CanHandle(const KernelProbe& probe) const = 0;
  // Derives what the kernel keeps with `params` (its prepack, LinearParams::packs) ahead of the
  // first Apply, which would otherwise make it; by default nothing.
  virtual void Prepare(const LinearParams& params) const { (void)params; }
  // y [M, N] = x [M, K] · Wᵀ (+ bias), W and its scales in `params`. Preconditions, checked by
  // the dispatcher and Linear: CanHandle(probe of these arguments), params processed,
  // x.cols == params.cols, y.cols == params.rows, x.rows == y.rows.
  virtual void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
                     const MutableMatrix& y) const = 0;
};

// Kernels, in registration order. The global registry is filled before main() by the kernel
// files (KernelRegistrar); tests may build their own.
class KernelRegistry {
 public:
  static KernelRegistry& Global();
  void Register(std::unique_ptr<LinearKernel> kernel);
  std::vector<const LinearKernel*> kernels() const;
  // Names of the kernels that serve `key` on `device`.
  std::vector<std::string> KernelsFor(const SpecKey& key, const DeviceCaps& device) const;
  // Whether any kernel serves `key` on `device`: "is (spec, device) supported?" before a forward.
  bool Supports(const SpecKey& key, const DeviceCaps& device) const;
  // Whether a kernel above the reference's priority runs `key` with activations `act` on `device`
  // for a decode row (M = 1) of a 4096 × 4096 layer, whatever this CPU's features: which groups,
  // layouts and activation modes the fast kernels take is theirs to say (CanHandle), so that a
  // choice made for speed asks them rather than repeating their limits.
  bool HasFastKernel(const SpecKey& key, const ActivationQuant& act,
                     const DeviceCaps& device) const;

 private:
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<LinearKernel>> kernels_;
};

// Registers a kernel with the global registry from a kernel file:
//   const KernelRegistrar kRegister(std::make_unique<GemmFp8A8_Ref>());
struct KernelRegistrar {
  explicit KernelRegistrar(std::unique_ptr<LinearKernel> kernel);
};

// ---------------------------------------------------------------------------------------------
// Shape buckets and the dispatch key.

// The M-bucket policy: M ≤ 16 stays exact (decode batches), larger M rounds up to 128 · 4^i
// (128, 512, 2048, …; prefill). Kernels are chosen per bucket, so a bucket's kernel must handle
// every M in it. M must be in [1, kMaxBucketM].
int64_t BucketM(int64_t m);
inline constexpr int64_t kMaxBucketM = int64_t{128} << 24;  // 128 · 4^12 = 2^31
inline constexpr int64_t kMaxDim = (int64_t{1} << 29) - 1;  // N and K

// Packs (BucketM(m), n, k) into one integer: bits 58..63 the bucket's index (0..15 for M 1..16,
// then 16 + i for 128 · 4^i), bits 29..57 N, bits 0..28 K. Out-of-range values are an error
// naming them.
Result<uint64_t> PackShapeKey(int64_t m, int64_t n, int64_t k);

// ---------------------------------------------------------------------------------------------
// Dispatcher

class Dispatcher {
 public:
  struct Stats {
    int64_t hits = 0;
    int64_t misses = 0;
    int64_t entries = 0;
  };

  // Dispatches among `registry`'s kernels (which must outlive the dispatcher): on the CPU only
  // kernels whose features `allowed` covers are candidates, ranked by `peaks` (by default this
  // CPU's row of the unit table, without QUANTPATH_DOT_UNITS).
  Dispatcher(const KernelRegistry& registry, CpuFeatures allowed);
  Dispatcher(const KernelRegistry& registry, CpuFeatures allowed, DotUnitPeaks peaks);
  // The process-wide dispatcher over the global registry, with ResolveCpuFeatures() and
  // ResolveDotUnitPeaks().
  static Result<std::shared_ptr<Dispatcher>> Default();

  // The kernel for `probe`: among the candidates that can handle it, on the CPU the one whose unit
  // has the highest peak (dot_units.h), then the highest priority (then the first registered).
  // Cached by the probe with M rounded to BucketM(M), which is also the probe the candidates'
  // CanHandle sees. No kernel is an error naming the spec, device, dtypes and mode.
  Result<const LinearKernel*> Select(const KernelProbe& probe);
  CpuFeatures allowed() const { return allowed_; }
  Stats stats() const;

 private:
  // Hashes every field of a bucketed probe.
  struct KeyHash {
    size_t operator()(const KernelProbe& key) const;
  };

  const KernelRegistry& registry_;
  const CpuFeatures allowed_;
  const DotUnitPeaks peaks_;
  mutable std::mutex mu_;
  std::unordered_map<KernelProbe, const LinearKernel*, KeyHash> cache_;
  Stats stats_;
};

}  // namespace quantpath
