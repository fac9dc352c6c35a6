// The LinearKernel of the weight-only specs whose kernel on the prepacked AVX2 GEMM
// (f32_dot_avx2.h) is one Source: MXFP4, MXFP8, NVFP4 and the bitsandbytes families differ only in
// their Source (`static Source Of(params)`) and in which problems they take (one_source_kernel.h).
//
// Included only by *_avx2.cc files, which are all compiled with the same flags.
#pragma once

#include <string_view>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/f32_dot_avx2.h"
#include "src/kernels/cpu/one_source_kernel.h"
#include "src/kernels/reference/reference_gemm.h"

namespace quantpath::avx2 {

template <StepSource Source>
class StepKernel final : public cpu::OneSourceKernel {
 public:
  StepKernel(std::string_view name, ServesFn serves, TakesFn takes)
      : OneSourceKernel({name, CpuLevel::kAvx2, kReferencePriority + 15, DotUnit::kFp32}, serves,
                        takes) {}

  void Prepare(const LinearParams& params) const override { Packed<Source>(this, params); }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    PackedGemm(Source::Of(params), Packed<Source>(this, params), params,
               reference::PrepareActivations(params, act, x), x.rows, y);
  }
};

}  // namespace quantpath::avx2
