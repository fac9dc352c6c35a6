// quantpath linear: a layer's spec + loaded parameters + the dispatcher → Forward.
//
// Goals: one Linear for every format: Forward asks the dispatcher for the kernel of (SpecKey, M
// bucket, N, K, dtypes, device, activation mode) and applies it; there is no format branch here.
// Non-goals: choosing the spec (materialize), checkpoint layouts (specs), kernels themselves.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/checkpoint.h"
#include "quantpath/kernels.h"
#include "quantpath/specs.h"

namespace quantpath {

class Linear {
 public:
  // Takes processed parameters of `spec`, which layers of one scheme share (its methods are
  // const). Errors: parameters not processed, or of another spec.
  static Result<Linear> Create(std::shared_ptr<const WeightSpec> spec, LinearParams params,
                               std::shared_ptr<Dispatcher> dispatcher);

  const WeightSpec& spec() const { return *spec_; }
  const LinearParams& params() const { return params_; }
  int64_t in_features() const { return params_.cols; }
  int64_t out_features() const { return params_.rows; }

  // The kernel Forward uses for `m` rows from `in` to `out` (fp32 or bf16).
  Result<const LinearKernel*> KernelFor(int64_t m, QDType in, QDType out) const;
  // y [M, N] = x [M, K] · Wᵀ (+ bias). Shapes must agree (an error otherwise).
  Status Forward(const ConstMatrix& x, const MutableMatrix& y) const;
  // fp32 convenience: x holds m rows of in_features() values.
  Result<std::vector<float>> Forward(std::span<const float> x, int64_t m) const;

 private:
  Linear(std::shared_ptr<const WeightSpec> spec, LinearParams params,
         std::shared_ptr<Dispatcher> dispatcher);
  KernelProbe Probe(int64_t m, QDType in, QDType out) const;

  std::shared_ptr<const WeightSpec> spec_;
  LinearParams params_;
  std::shared_ptr<Dispatcher> dispatcher_;
};

// Allocates `request` with `spec`, loads it from `checkpoint` (one module prefix per fused leg),
// processes it, and wraps it in a Linear.
Result<Linear> LoadLinear(std::shared_ptr<const WeightSpec> spec, const AllocationRequest& request,
                          const Checkpoint& checkpoint,
                          const std::vector<std::string>& leg_prefixes,
                          std::shared_ptr<Dispatcher> dispatcher);

}  // namespace quantpath
