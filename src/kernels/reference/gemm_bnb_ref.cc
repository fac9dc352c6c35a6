// Reference kernels of the bitsandbytes families (bnb_family.h), X and Y in fp32 or bf16,
// products in fp32, X as it is (W16 activations):
//   GemmBnb4_Ref     nf4_block_<b> / fp4_block_<b>: W[n][c] = fp32(map[code] × S[(n·K + c) / b]).
//   GemmBnbInt8_Ref  int8_rowwise_bnb: W[n][c] = fp32(fp32(q × S[n]) × 1/127).
// Non-goals: speed.
#include <bit>

#include "quantpath/kernels.h"
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/bnb_family.h"

namespace quantpath {
namespace {

class GemmBnb4Ref final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmBnb4_Ref"; }
  CpuFeatures features() const override { return {}; }
  int priority() const override { return kReferencePriority; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return (key.family == kNf4Family || key.family == kFp4Family) && device.is_cpu();
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return Serves(probe.spec, probe.device) && probe.spec.group > 0 &&
           probe.act.mode == ActMode::kNone && reference::CanHandleIo(probe);
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const int64_t k = params.cols;
    const int64_t block = params.key.group;
    const ParamTensor& codes = params.tensor(Slot::kWeight);
    const uint8_t* w = codes.data<uint8_t>();
    const float* absmax = params.tensor(Slot::kWeightScale).data<float>();
    const int64_t row_bytes = codes.row_bytes();
    std::array<float, 16> map;
    for (size_t i = 0; i < 16; ++i) map[i] = std::bit_cast<float>(Bnb4Map(params.key.family)[i]);
    reference::GemmRowwise(params, act, x, y, [&](int64_t n, float* row) {
      const uint8_t* wn = w + n * row_bytes;
      for (int64_t c = 0; c < k; ++c) {
        const uint8_t code = c % 2 == 0 ? wn[c / 2] & 0xF : wn[c / 2] >> 4;
        row[c] = RoundedProduct(map[code], absmax[(n * k + c) / block]);
      }
    });
  }
};

class GemmBnbInt8Ref final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmBnbInt8_Ref"; }
  CpuFeatures features() const override { return {}; }
  int priority() const override { return kReferencePriority; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return key.family == kBnbInt8Family && device.is_cpu();
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return Serves(probe.spec, probe.device) && probe.act.mode == ActMode::kNone &&
           reference::CanHandleIo(probe);
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const int64_t k = params.cols;
    const int8_t* w = params.tensor(Slot::kWeight).data<int8_t>();
    const float* scb = params.tensor(Slot::kWeightScale).data<float>();
    reference::GemmRowwise(params, act, x, y, [&](int64_t n, float* row) {
      for (int64_t c = 0; c < k; ++c) row[c] = BnbInt8Value(w[n * k + c], scb[n]);
    });
  }
};

const KernelRegistrar kRegisterGemmBnb4Ref(std::make_unique<GemmBnb4Ref>());
const KernelRegistrar kRegisterGemmBnbInt8Ref(std::make_unique<GemmBnbInt8Ref>());

}  // namespace
}  // namespace quantpath
