// Reference kernel of nvfp4_block_16_linear and nvfp4_block_16_128x4, X and Y in fp32 or bf16,
// products in fp32:
//   GemmNvfp4_Ref  W[n][c] = e2m1(W[n][c]) × e4m3(S[n][c / g]) × G (nvfp4_family.h), X as it is
//                  (W4A16), rounded to NVFP4 per 16 columns against the input divisor (W4A4,
//                  the layer's or each row's own) or to int8 codes per row (--int8-activations
//                  on the linear layout: qx · s_x, PrepareActivations);
//                  S[n][j] read where its layout stores it (Nvfp4Layout::ScaleOffset), so both
//                  layouts give the same products.
// The 128x4 layout is Blackwell's (materialize picks it for sm100); this build has no CUDA kernel,
// so the reference serves it there too, run on the host, which lets `run --device sm100` check the
// layout a Blackwell GEMM reads. Non-goals: speed.
#include <cassert>
#include <vector>

#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "src/kernels/cpu_problems.h"
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/nvfp4_family.h"

namespace quantpath {
namespace {

class GemmNvfp4Ref final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmNvfp4_Ref"; }
  CpuFeatures features() const override { return {}; }
  int priority() const override { return kReferencePriority; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    if (key.family != kNvfp4Family) return false;
    return key.scales == ScaleVariant::kLinear
               ? device.is_cpu()
               : key.scales == ScaleVariant::kTiled128x4 && (device.is_cpu() || device.sm >= 100);
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return Serves(probe.spec, probe.device) &&
           (cpu_problems::TakesNvfp4(probe) || cpu_problems::TakesNvfp4Int8(probe));
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const Nvfp4Layout layout{params.key.group, params.key.scales == ScaleVariant::kTiled128x4};
    const int64_t k = params.cols;
    const ParamTensor& codes = params.tensor(Slot::kWeight);
    const ParamTensor& scales = params.tensor(Slot::kWeightScale);
    assert(scales.rows() == layout.StoredScaleRows(params.rows) &&
           scales.cols() == layout.StoredScaleCols(k));
    const uint8_t* w = codes.data<uint8_t>();
    const uint8_t* s = scales.data<uint8_t>();
    const float global = params.tensor(Slot::kWeightGlobalScale).data<float>()[0];
    const int64_t row_bytes = codes.row_bytes();
    const int64_t scale_cols = scales.cols();
    reference::GemmRowwise(params, act, x, y, [&](int64_t n, float* row) {
      const uint8_t* wn = w + n * row_bytes;
      for (int64_t c = 0; c < k; ++c) {
        const uint8_t nibble = c % 2 == 0 ? wn[c / 2] & 0xF : wn[c / 2] >> 4;
        const uint8_t scale = s[layout.ScaleOffset(n, c / layout.group, scale_cols)];
        row[c] = E2M1ToFloat(nibble) * (Fp8E4M3ToFloat(scale) * global);
      }
    });
  }
};

const KernelRegistrar kRegisterGemmNvfp4Ref(std::make_unique<GemmNvfp4Ref>());

}  // namespace
}  // namespace quantpath
