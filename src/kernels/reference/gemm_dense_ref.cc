// GemmW16A16_Ref: the reference kernel of the bf16 spec. W is stored in the params dtype (bf16,
// fp16 or fp32, DenseLayout in specs.h); X and Y are fp32 or bf16; products accumulate in fp32.
// Non-goals: speed.
#include "quantpath/kernels.h"
#include "src/kernels/cpu_problems.h"
#include "src/kernels/reference/reference_gemm.h"

namespace quantpath {
namespace {

class GemmW16A16Ref final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmW16A16_Ref"; }
  CpuFeatures features() const override { return {}; }
  int priority() const override { return kReferencePriority; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return cpu_problems::ServesBf16(key, device);
  }
  bool CanHandle(const KernelProbe& probe) const override { return cpu_problems::TakesBf16(probe); }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const int64_t k = params.cols;
    const ParamTensor& w = params.tensor(Slot::kWeight);
    reference::GemmRowwise(params, act, x, y, [&](int64_t n, float* row) {
      for (int64_t c = 0; c < k; ++c) row[c] = LoadFloat(w, n * k + c);
    });
  }
};

const KernelRegistrar kRegisterGemmW16A16Ref(std::make_unique<GemmW16A16Ref>());

}  // namespace
}  // namespace quantpath
