// The LinearKernel of the weight-only specs whose kernel on the AVX-512 BF16 GEMM
// (bf16_dot_avx512vnni.h) is one Source: NVFP4, MXFP4, MXFP8 and the bitsandbytes families differ
// only in their Source (`static Source Of(params)`) and in which problems they take
// (one_source_kernel.h).
//
// Included only by *_avx512vnni.cc files, which are all compiled with the same flags.
#pragma once

#include <string_view>
#include <vector>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/bf16_dot_avx512vnni.h"
#include "src/kernels/cpu/one_source_kernel.h"
#include "src/kernels/reference/reference_gemm.h"

namespace quantpath::avx512vnni {

template <PairSource Source>
class SourceKernel final : public cpu::OneSourceKernel {
 public:
  SourceKernel(std::string_view name, ServesFn serves, TakesFn takes)
      : OneSourceKernel({name, CpuLevel::kAvx512Vnni, kReferencePriority + 20, DotUnit::kBf16Pair},
                        serves, takes) {}

  void Prepare(const LinearParams& params) const override { Packed<Source>(this, params); }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const std::vector<float> xs = reference::PrepareActivations(params, act, x);
    Gemm(Source::Of(params), Packed<Source>(this, params), params, xs, x.rows, y);
  }
};

}  // namespace quantpath::avx512vnni
