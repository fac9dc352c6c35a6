// GemmFp8Lanes_Avx512Bf16: the fp8 weight-only specs (fp8_per_tensor, fp8_per_channel,
// fp8_block_<bn>_<bk> with bk a multiple of 8) for decode batches (M ≤ 16) on the rows-in-lanes
// GEMM (lanes_bf16_avx512vnni.h), its codes in pieces of 32 (pair_lanes_avx512vnni.h) widened to
// bf16 (fp8_bf16_avx512vnni.h), each run's fp32 scale (the row's, or the block's) beside them.
// Prefill and fp8 activations run GemmFp8Row_Avx512Bf16 and GemmFp8Block_Avx512Bf16.
#include "src/base/avx512_intrinsics.h"

#include <memory>
#include <vector>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/fp8_bf16_avx512vnni.h"
#include "src/kernels/cpu/fp8_codes.h"
#include "src/kernels/cpu/lane_pack_avx512vnni.h"
#include "src/kernels/cpu/lanes_bf16_avx512vnni.h"
#include "src/kernels/cpu/pair_lanes_avx512vnni.h"
#include "src/kernels/cpu_problems.h"
#include "src/specs/fp8_family.h"

namespace quantpath {
namespace {

using avx512vnni::kLaneChunk;
using avx512vnni::LanePack;

struct Fp8Lanes : avx512vnni::PairChunks<1>, avx512vnni::NoOffsets {
  float output_scale = 1.0f;

  void Pairs(const uint8_t* vector, __m512i out[avx512vnni::kLanePairs]) const {
    for (int h = 0; h < avx512vnni::kLanePairs; ++h) {
      out[h] = avx512vnni::Fp8ToBf16(
          _mm256_load_si256(reinterpret_cast<const __m256i*>(vector + h * kPieceBytes)));
    }
  }
  __m512 Scales(const LanePack& pack, int64_t b, int64_t g, int v) const {
    return _mm512_loadu_ps(pack.Scales(b, g, v));
  }
};

// W's codes and each run's scale (`scale(row, g)`, runs of `group` columns).
template <typename ScaleOf>
LanePack PackFp8Lanes(const LinearParams& params, int64_t group, ScaleOf scale) {
  return avx512vnni::PackPairLanes<1, true>(params.tensor(Slot::kWeight).raw(), params.rows,
                                            params.cols, group, scale);
}

class GemmFp8LanesAvx512Bf16 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmFp8Lanes_Avx512Bf16"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx512Vnni); }
  int priority() const override { return kReferencePriority + 25; }
  DotUnit unit() const override { return DotUnit::kBf16Pair; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return cpu_problems::ServesFp8Row(key, device) || cpu_problems::ServesFp8Block(key, device);
  }
  bool CanHandle(const KernelProbe& probe) const override {
    const bool takes =
        probe.spec.family == kFp8BlockFamily
            ? cpu_problems::TakesFp8Block(probe) && probe.spec.block[1] % kLaneChunk == 0
            : cpu_problems::TakesFp8Row(probe);
    return takes && probe.m <= avx512vnni::kLanesMaxM && probe.act.mode == ActMode::kNone;
  }
  void Prepare(const LinearParams& params) const override { Packed(params); }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    avx512vnni::LanesGemm(Fp8Lanes{}, Packed(params), params, act, x, y);
  }

 private:
  const LanePack& Packed(const LinearParams& params) const {
    return params.packs.Get<LanePack>(this, [&] {
      if (params.key.family != kFp8BlockFamily) {
        const auto codes = cpu::Fp8RowCodes<CpuLevel::kAvx512Vnni>::Of(params);
        return std::make_unique<LanePack>(PackFp8Lanes(
            params, params.cols, [&](int64_t row, int64_t g) { return codes.RunScale(row, g); }));
      }
      const std::vector<int64_t> grid_row =
          Fp8BlockGridRows({params.key.block[0], params.key.block[1]}, params);
      const auto codes = cpu::Fp8BlockCodes<CpuLevel::kAvx512Vnni>::Of(params, grid_row);
      return std::make_unique<LanePack>(
          PackFp8Lanes(params, params.key.block[1],
                       [&](int64_t row, int64_t g) { return codes.RunScale(row, g); }));
    });
  }
};

const KernelRegistrar kRegisterGemmFp8LanesAvx512Bf16(std::make_unique<GemmFp8LanesAvx512Bf16>());

}  // namespace
}  // namespace quantpath
