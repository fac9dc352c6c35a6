// The LinearKernel of the weight-only specs whose kernel on the prepacked AVX2 GEMM
// (f32_dot_avx2.h) is one Source: MXFP4, MXFP8, NVFP4 and the bitsandbytes families differ only in
// their Source (`static Source Of(params)`) and in which problems they take, given as two
// functions.
//
// Included only by *_avx2.cc files, which are all compiled with the same flags.
#pragma once

#include <string_view>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/f32_dot_avx2.h"
#include "src/kernels/reference/reference_gemm.h"

namespace quantpath::avx2 {

template <StepSource Source>
class StepKernel final : public LinearKernel {
 public:
  using ServesFn = bool (*)(const SpecKey&, const DeviceCaps&);
  using TakesFn = bool (*)(const KernelProbe&);
  StepKernel(std::string_view name, ServesFn serves, TakesFn takes)
      : name_(name), serves_(serves), takes_(takes) {}

  std::string_view name() const override { return name_; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx2); }
  int priority() const override { return kReferencePriority + 15; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return serves_(key, device);
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return serves_(probe.spec, probe.device) && takes_(probe);
  }
  void Prepare(const LinearParams& params) const override { Packed<Source>(this, params); }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    PackedGemm(Source::Of(params), Packed<Source>(this, params), params,
               reference::PrepareActivations(params, act, x), x.rows, y);
  }

 private:
  std::string_view name_;
  ServesFn serves_;
  TakesFn takes_;
};

}  // namespace quantpath::avx2
