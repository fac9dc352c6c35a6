// GemmW16A16Lanes_Avx512Bf16: the bf16 spec with bf16 weights, every M, on the rows-in-lanes GEMM
// (lanes_bf16_avx512vnni.h), its weights in pieces of 32 values (pair_lanes_avx512vnni.h)
// multiplied as they are. fp16 and fp32 weights run GemmW16A16_Avx512Bf16.
#include "src/base/avx512_intrinsics.h"

#include <memory>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/bf16_source_avx512vnni.h"
#include "src/kernels/cpu/lane_pack_avx512vnni.h"
#include "src/kernels/cpu/lanes_bf16_avx512vnni.h"
#include "src/kernels/cpu/pair_lanes_avx512vnni.h"
#include "src/kernels/cpu_problems.h"

namespace quantpath {
namespace {

using avx512vnni::LanePack;

struct Bf16Lanes : avx512vnni::PairChunks<2>, avx512vnni::NoOffsets {
  float output_scale = 1.0f;

  void Pairs(const uint8_t* vector, __m512i out[avx512vnni::kLanePairs]) const {
    for (int h = 0; h < avx512vnni::kLanePairs; ++h) {
      out[h] = avx512vnni::LoadOnce(vector + h * kPieceBytes);
    }
  }
  __m512 Scales(const LanePack&, int64_t, int64_t, int) const { return _mm512_set1_ps(1.0f); }
};

LanePack PackBf16Lanes(const LinearParams& params) {
  return avx512vnni::PackPairLanes<2, false>(params.tensor(Slot::kWeight).raw(), params.rows,
                                             params.cols, params.cols,
                                             [](int64_t, int64_t) { return 1.0f; });
}

class GemmW16LanesAvx512Bf16 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmW16A16Lanes_Avx512Bf16"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx512Vnni); }
  int priority() const override { return kReferencePriority + 25; }
  DotUnit unit() const override { return DotUnit::kBf16Pair; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return cpu_problems::ServesBf16(key, device);
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return cpu_problems::TakesBf16(probe) && probe.weight == QDType::kBF16;
  }
  void Prepare(const LinearParams& params) const override { Packed(params); }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    avx512vnni::LanesGemm(Bf16Lanes{}, Packed(params), params, act, x, y);
  }

 private:
  const LanePack& Packed(const LinearParams& params) const {
    return params.packs.Get<LanePack>(
        this, [&] { return std::make_unique<LanePack>(PackBf16Lanes(params)); });
  }
};

const KernelRegistrar kRegisterGemmW16LanesAvx512Bf16(std::make_unique<GemmW16LanesAvx512Bf16>());

}  // namespace
}  // namespace quantpath
