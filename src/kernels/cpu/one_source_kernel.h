// What the weight-only kernels made of one Source on a level's GEMM share (StepKernel on AVX2,
// SourceKernel on AVX-512 BF16): a name, the level, priority and dot unit, and which problems they
// take, given as two functions. Defined in portable code, so that no level's flags compile it.
#pragma once

#include <string_view>

#include "quantpath/cpu_features.h"
#include "quantpath/kernels.h"

namespace quantpath::cpu {

class OneSourceKernel : public LinearKernel {
 public:
  using ServesFn = bool (*)(const SpecKey&, const DeviceCaps&);
  using TakesFn = bool (*)(const KernelProbe&);
  struct Traits {
    std::string_view name;
    CpuLevel level;
    int priority;
    DotUnit unit;
  };
  OneSourceKernel(const Traits& traits, ServesFn serves, TakesFn takes);

  std::string_view name() const final;
  CpuFeatures features() const final;
  int priority() const final;
  DotUnit unit() const final;
  bool Serves(const SpecKey& key, const DeviceCaps& device) const final;
  bool CanHandle(const KernelProbe& probe) const final;

 private:
  Traits traits_;
  ServesFn serves_;
  TakesFn takes_;
};

}  // namespace quantpath::cpu
