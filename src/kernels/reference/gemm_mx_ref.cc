// Reference kernel of mxfp4_block_32 and mxfp8_block_32, X and Y in fp32 or bf16, products in
// fp32:
//   GemmMx_Ref  W[n][c] = elem(W[n][c]) × 2^(S[n][c / g] − 127) (mx_family.h), X as it is
//               (weight-only), rounded to MXFP4 / MXFP8 per 32 columns (MX activations) or, for
//               MXFP4, to int8 codes per row (--int8-activations: qx · s_x, PrepareActivations).
// Non-goals: speed.
#include <cassert>
#include <cmath>
#include <vector>

#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "src/kernels/cpu_problems.h"
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/mx_family.h"

namespace quantpath {
namespace {

class GemmMxRef final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmMx_Ref"; }
  CpuFeatures features() const override { return {}; }
  int priority() const override { return kReferencePriority; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return IsMxFamily(key.family) && device.is_cpu();
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return Serves(probe.spec, probe.device) &&
           (cpu_problems::TakesMx(probe) || cpu_problems::TakesMxInt8(probe));
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const bool fp4 = params.key.family == kMxfp4Family;
    const MxLayout layout{fp4, params.key.group};
    const int64_t k = params.cols;
    const ParamTensor& codes = params.tensor(Slot::kWeight);
    const ParamTensor& scales = params.tensor(Slot::kWeightScale);
    assert(scales.rows() == params.rows && scales.cols() == layout.ScaleCols(k));
    const uint8_t* w = codes.data<uint8_t>();
    const uint8_t* s = scales.data<uint8_t>();
    const int64_t row_bytes = codes.row_bytes();
    const int64_t scale_cols = scales.cols();
    reference::GemmRowwise(params, act, x, y, [&](int64_t n, float* row) {
      const uint8_t* wn = w + n * row_bytes;
      const uint8_t* sn = s + n * scale_cols;
      for (int64_t c = 0; c < k; ++c) {
        const float elem = fp4 ? E2M1ToFloat(c % 2 == 0 ? wn[c / 2] & 0xF : wn[c / 2] >> 4)
                               : Fp8E4M3ToFloat(wn[c]);
        row[c] = std::ldexp(elem, static_cast<int>(sn[c / layout.group]) - kE8M0Bias);
      }
    });
  }
};

const KernelRegistrar kRegisterGemmMxRef(std::make_unique<GemmMxRef>());

}  // namespace
}  // namespace quantpath
