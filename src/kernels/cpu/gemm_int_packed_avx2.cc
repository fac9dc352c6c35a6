// GemmIntW16Packed_Avx2: the 4- and 8-bit integer weight-only specs whose runs are whole steps
// (int<b>_group_<g>[_zp] with g a power-of-two multiple of the step: 64 columns for 4-bit, 32 for
// 8-bit; int<b>_channel[_zp], int<b>_tensor) on the prepacked AVX2 GEMM (f32_dot_avx2.h), their
// codes by steps as int_steps_avx2.h takes them.
// Narrower groups and act-order stay with GemmIntW16_Avx2 and the reference.
#include <bit>
#include <utility>
#include <vector>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/f32_dot_avx2.h"
#include "src/kernels/cpu/int_codes.h"
#include "src/kernels/cpu/int_steps_avx2.h"
#include "src/specs/int_family.h"

namespace quantpath {
namespace {

class GemmIntPackedAvx2 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmIntW16Packed_Avx2"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx2); }
  int priority() const override { return kReferencePriority + 15; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return IsIntFamily(key.family) && (key.bits == 4 || key.bits == 8) && !key.act_order &&
           device.is_cpu();
  }
  bool CanHandle(const KernelProbe& probe) const override {
    const SpecKey& key = probe.spec;
    const int64_t step = key.bits == 4 ? 64 : 32;
    return Serves(key, probe.device) &&
           (key.family != kIntGroupFamily ||
            (key.group % step == 0 && std::has_single_bit(static_cast<uint64_t>(key.group)))) &&
           probe.act.mode == ActMode::kNone && reference::CanHandleIo(probe);
  }
  void Prepare(const LinearParams& params) const override {
    if (params.key.bits == 4) {
      avx2::Packed<avx2::IntSteps<4, false>>(this, params);
    } else {
      avx2::Packed<avx2::IntSteps<8, false>>(this, params);
    }
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    std::vector<float> xs = reference::PrepareActivations(params, act, x);
    const bool zero = !params.tensor(Slot::kWeightZero).empty();
    if (params.key.bits == 4) {
      return zero ? Run<4, true>(params, std::move(xs), x.rows, y)
                  : Run<4, false>(params, std::move(xs), x.rows, y);
    }
    return zero ? Run<8, true>(params, std::move(xs), x.rows, y)
                : Run<8, false>(params, std::move(xs), x.rows, y);
  }

 private:
  template <int kBits, bool kZero>
  void Run(const LinearParams& params, std::vector<float> x, int64_t m,
           const MutableMatrix& y) const {
    const avx2::IntSteps<kBits, kZero> w{cpu::IntCodes<CpuLevel::kAvx2, kBits, kZero>::Of(params)};
    avx2::PackedGemm(w, avx2::Packed<avx2::IntSteps<kBits, kZero>>(this, params), params,
                     std::move(x), m, y);
  }
};

const KernelRegistrar kRegisterGemmIntPackedAvx2(std::make_unique<GemmIntPackedAvx2>());

}  // namespace
}  // namespace quantpath
