// Reference kernel of int4_group_<g>_prescaled (w4a8_awq_family.h), X and Y in fp32 or bf16:
// X is multiplied by the layer's pre_quant_scale where it has one and rounded to e4m3 against
// the static input scale (reference_gemm.h), W's row n is dequantized to
// (q[n][c] − 8) · s[n][c / g] in fp32, products in fp32. Non-goals: speed.
#include "quantpath/kernels.h"
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/int_family.h"
#include "src/specs/w4a8_awq_family.h"

namespace quantpath {
namespace {

class GemmW4a8AwqRef final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmW4a8Awq_Ref"; }
  CpuFeatures features() const override { return {}; }
  int priority() const override { return kReferencePriority; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return key.family == kIntGroupPrescaledFamily && key.group > 0 && device.is_cpu();
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return Serves(probe.spec, probe.device) && probe.act.mode == ActMode::kStaticPerTensor &&
           probe.act.dtype == QDType::kFP8E4M3 && probe.act.symmetric &&
           reference::CanHandleIo(probe);
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const ParamTensor& weight = params.tensor(Slot::kWeight);
    const ParamTensor& scales = params.tensor(Slot::kWeightScale);
    const int64_t group = params.key.group;
    const int64_t k = params.cols;
    reference::GemmRowwise(params, act, x, y, [&](int64_t n, float* row) {
      const uint8_t* codes = weight.data<uint8_t>() + n * weight.row_bytes();
      const float* s = scales.data<float>() + n * scales.cols();
      for (int64_t c = 0; c < k; ++c) {
        row[c] = static_cast<float>(static_cast<int>(ReadCode(codes, c, 4)) - 8) * s[c / group];
      }
    });
  }
};

const KernelRegistrar kRegister(std::make_unique<GemmW4a8AwqRef>());

}  // namespace
}  // namespace quantpath
