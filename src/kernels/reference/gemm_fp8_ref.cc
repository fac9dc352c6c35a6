// Reference kernels of the fp8 specs, X and Y in fp32 or bf16, products in fp32:
//   GemmFp8Row_Ref    fp8_per_tensor and fp8_per_channel: after loading both hold one fp32 scale
//                     per output row (Fp8RowScaledLayout), so W[n][c] = e4m3(w[n][c]) × S[n].
//   GemmFp8Block_Ref  fp8_block_<bn>_<bk> (Fp8BlockLayout): W[n][c] = e4m3(w[n][c]) ×
//                     S[g_l + (n − o_l) / bn][c / bk], one grid per fused leg l.
// Both take X as it is (weight-only schemes) or quantize it to fp8 first, per the spec's
// activation mode (per token, per tensor, per 1 × group, or the static input scale).
// Non-goals: speed.
#include <cassert>
#include <vector>

#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "src/kernels/cpu_problems.h"
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/fp8_family.h"

namespace quantpath {
namespace {

class GemmFp8RowRef final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmFp8Row_Ref"; }
  CpuFeatures features() const override { return {}; }
  int priority() const override { return kReferencePriority; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return cpu_problems::ServesFp8Row(key, device);
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return cpu_problems::TakesFp8Row(probe);
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const ParamTensor& scales = params.tensor(Slot::kWeightScale);
    assert(scales.rows() == params.rows && scales.cols() == 1);
    const int64_t k = params.cols;
    const uint8_t* w = params.tensor(Slot::kWeight).data<uint8_t>();
    const float* scale = scales.data<float>();
    reference::GemmRowwise(params, act, x, y, [&](int64_t n, float* row) {
      for (int64_t c = 0; c < k; ++c) row[c] = Fp8E4M3ToFloat(w[n * k + c]) * scale[n];
    });
  }
};

class GemmFp8BlockRef final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmFp8Block_Ref"; }
  CpuFeatures features() const override { return {}; }
  int priority() const override { return kReferencePriority; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return cpu_problems::ServesFp8Block(key, device);
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return cpu_problems::TakesFp8Block(probe);
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    assert(params.key.family == kFp8BlockFamily);
    const Fp8BlockLayout layout{params.key.block[0], params.key.block[1]};
    const int64_t k = params.cols;
    const ParamTensor& scales = params.tensor(Slot::kWeightScale);
    const std::vector<int64_t> grid_row = Fp8BlockGridRows(layout, params);
    assert(scales.cols() == layout.ScaleCols(k) &&
           (grid_row.empty() || grid_row.back() < scales.rows()));
    const uint8_t* w = params.tensor(Slot::kWeight).data<uint8_t>();
    const float* scale = scales.data<float>();
    const int64_t scale_cols = scales.cols();
    reference::GemmRowwise(params, act, x, y, [&](int64_t n, float* row) {
      const float* s = scale + grid_row[n] * scale_cols;
      for (int64_t c = 0; c < k; ++c) row[c] = Fp8E4M3ToFloat(w[n * k + c]) * s[c / layout.block_k];
    });
  }
};

const KernelRegistrar kRegisterGemmFp8RowRef(std::make_unique<GemmFp8RowRef>());
const KernelRegistrar kRegisterGemmFp8BlockRef(std::make_unique<GemmFp8BlockRef>());

}  // namespace
}  // namespace quantpath
