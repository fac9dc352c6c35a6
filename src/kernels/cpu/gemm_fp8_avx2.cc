// The fp8 specs on the AVX2 row-block GEMM (row_blocks_avx2.h):
//   GemmFp8Row_Avx2    fp8_per_tensor and fp8_per_channel (one fp32 scale per output row)
//   GemmFp8Block_Avx2  fp8_block_<bn>_<bk> with bk a multiple of 8 (8 columns share a scale)
// Eight e4m3 codes become fp32 through fp16: the sign moved to bit 15 and exponent and mantissa
// to bits 7–14 make an fp16 of the same value over 2^8 (denormals included, the exponent biases
// being 7 and 15), which F16C widens; 2^8 is folded into the scale. X is taken as it is or
// quantized to e4m3 first, as the reference kernels do (reference::PrepareActivations).
#include <vector>

#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "src/kernels/cpu/fp8_codes.h"
#include "src/kernels/cpu/row_blocks_avx2.h"
#include "src/kernels/cpu_problems.h"
#include "src/specs/fp8_family.h"

namespace quantpath {
namespace {

constexpr float kFp16Bias = 256.0f;  // 2^(15 − 7)

// Eight e4m3 codes as fp32, over 2^8.
inline __m256 Fp8Over256(const uint8_t* p) {
  const __m128i codes = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  const __m128i sign = _mm_slli_epi16(_mm_and_si128(codes, _mm_set1_epi16(0x80)), 8);
  const __m128i rest = _mm_slli_epi16(_mm_and_si128(codes, _mm_set1_epi16(0x7F)), 7);
  return _mm256_cvtph_ps(_mm_or_si128(sign, rest));
}

// The layouts (fp8_codes.h), their scales times 2^8.
template <typename Codes>
struct Over256 : Codes {
  int Zero(int64_t, int64_t) const { return 0; }
  float Scale(int64_t row, int64_t g) const { return this->RunScale(row, g) * kFp16Bias; }
  __m256 Load8Codes(int64_t row, int64_t col, __m256i) const {
    return Fp8Over256(this->codes + row * this->k + col);
  }
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
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const std::vector<float> xs = reference::PrepareActivations(params, act, x);
    avx2::RowBlockGemm(ScaledRows{RowCodes::Of(params)}, params, xs.data(), x.rows, y);
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
  // 8 columns share a scale.
  bool CanHandle(const KernelProbe& probe) const override {
    return cpu_problems::TakesFp8Block(probe) && probe.spec.block[1] % 8 == 0;
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const std::vector<int64_t> grid_row =
        Fp8BlockGridRows({params.key.block[0], params.key.block[1]}, params);
    const std::vector<float> xs = reference::PrepareActivations(params, act, x);
    avx2::RowBlockGemm(ScaledBlocks{BlockCodes::Of(params, grid_row)}, params, xs.data(), x.rows,
                       y);
  }
};

const KernelRegistrar kRegisterGemmFp8RowAvx2(std::make_unique<GemmFp8RowAvx2>());
const KernelRegistrar kRegisterGemmFp8BlockAvx2(std::make_unique<GemmFp8BlockAvx2>());

}  // namespace
}  // namespace quantpath
