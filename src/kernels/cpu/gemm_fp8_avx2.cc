// The fp8 specs on the prepacked AVX2 GEMM (f32_dot_avx2.h), 32 codes a step:
//   GemmFp8Row_Avx2    fp8_per_tensor and fp8_per_channel (one fp32 scale per output row)
//   GemmFp8Block_Avx2  fp8_block_<bn>_<bk> with bk a multiple of 32
// e4m3 codes become fp32 through fp16 (fp8_steps_avx2.h), 2^8 folded into the scale. X is taken as
// it is or quantized to e4m3 first, as the reference kernels do (reference::PrepareActivations).
#include <vector>

#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "src/kernels/cpu/f32_dot_avx2.h"
#include "src/kernels/cpu/fp8_codes.h"
#include "src/kernels/cpu/fp8_steps_avx2.h"
#include "src/kernels/cpu_problems.h"
#include "src/specs/fp8_family.h"

namespace quantpath {
namespace {

// The layouts (fp8_codes.h) by steps of 32 codes (fp8_steps_avx2.h), their scales times 2^8.
template <typename Codes>
struct Over256 : Codes {
  static constexpr bool kZeros = false;
  static constexpr int64_t kStep = 32;
  static constexpr int64_t kStepBytes = 32;
  static constexpr cpu::XOrder kXOrder = cpu::XOrder::kNatural;
  float Zero(int64_t, int64_t) const { return 0.0f; }
  float Scale(int64_t row, int64_t g) const { return this->RunScale(row, g) * avx2::kE4M3Over; }
  void Load(const uint8_t* p, __m256 out[4]) const { avx2::LoadE4M3Over256(p, out); }
};
using RowCodes = cpu::Fp8RowCodes<CpuLevel::kAvx2>;
using BlockCodes = cpu::Fp8BlockCodes<CpuLevel::kAvx2>;
using ScaledRows = Over256<RowCodes>;
using ScaledBlocks = Over256<BlockCodes>;

class GemmFp8RowAvx2 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmFp8Row_Avx2"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx2); }
  int priority() const override { return kReferencePriority + 10; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return cpu_problems::ServesFp8Row(key, device);
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return cpu_problems::TakesFp8Row(probe);
  }
  void Prepare(const LinearParams& params) const override {
    avx2::Packed<ScaledRows>(this, params);
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    avx2::PackedGemm(ScaledRows{RowCodes::Of(params)}, avx2::Packed<ScaledRows>(this, params),
                     params, reference::PrepareActivations(params, act, x), x.rows, y);
  }
};

class GemmFp8BlockAvx2 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmFp8Block_Avx2"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx2); }
  int priority() const override { return kReferencePriority + 10; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return cpu_problems::ServesFp8Block(key, device);
  }
  // A step's 32 columns share a scale.
  bool CanHandle(const KernelProbe& probe) const override {
    return cpu_problems::TakesFp8Block(probe) && probe.spec.block[1] % 32 == 0;
  }
  void Prepare(const LinearParams& params) const override {
    avx2::Packed<ScaledBlocks>(this, params);
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const std::vector<int64_t> grid_row =
        Fp8BlockGridRows({params.key.block[0], params.key.block[1]}, params);
    avx2::PackedGemm(ScaledBlocks{BlockCodes::Of(params, grid_row)},
                     avx2::Packed<ScaledBlocks>(this, params), params,
                     reference::PrepareActivations(params, act, x), x.rows, y);
  }
};

const KernelRegistrar kRegisterGemmFp8RowAvx2(std::make_unique<GemmFp8RowAvx2>());
const KernelRegistrar kRegisterGemmFp8BlockAvx2(std::make_unique<GemmFp8BlockAvx2>());

}  // namespace
}  // namespace quantpath
