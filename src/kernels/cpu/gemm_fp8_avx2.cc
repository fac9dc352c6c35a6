// The fp8 specs on the prepacked AVX2 GEMM (f32_dot_avx2.h), 32 codes a step:
//   GemmFp8Row_Avx2    fp8_per_tensor and fp8_per_channel (one fp32 scale per output row)
//   GemmFp8Block_Avx2  fp8_block_<bn>_<bk> with bk a multiple of 32
// e4m3 codes become fp32 through fp16: each byte unpacked into the high half of a 16-bit word and
// shifted right by one with its sign, masked to the sign and bits 7–13, is an fp16 of the same
// value over 2^8 (denormals included, the exponent biases being 7 and 15), which F16C widens; 2^8
// is folded into the scale. X is taken as it is or quantized to e4m3 first, as the reference
// kernels do (reference::PrepareActivations).
#include <vector>

#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "src/kernels/cpu/f32_dot_avx2.h"
#include "src/kernels/cpu/fp8_codes.h"
#include "src/kernels/cpu_problems.h"
#include "src/specs/fp8_family.h"

namespace quantpath {
namespace {

constexpr float kFp16Bias = 256.0f;  // 2^(15 − 7)

// The layouts (fp8_codes.h) by steps of 32 codes, their scales times 2^8.
template <typename Codes>
struct Over256 : Codes {
  static constexpr bool kZeros = false;
  static constexpr int64_t kStep = 32;
  static constexpr int64_t kStepBytes = 32;
  static constexpr cpu::XOrder kXOrder = cpu::XOrder::kNatural;
  float Zero(int64_t, int64_t) const { return 0.0f; }
  float Scale(int64_t row, int64_t g) const { return this->RunScale(row, g) * kFp16Bias; }
  void Load(const uint8_t* p, __m256 out[4]) const {
    const __m256i bytes = avx2::LoadOnce(p);
    const __m256i zero = _mm256_setzero_si256();
    const __m256i mask = _mm256_set1_epi16(static_cast<int16_t>(0xBF80));
    // Bytes 0–7 and 16–23, and 8–15 and 24–31 (unpacking keeps to 128-bit lanes).
    const __m256i low =
        _mm256_and_si256(_mm256_srai_epi16(_mm256_unpacklo_epi8(zero, bytes), 1), mask);
    const __m256i high =
        _mm256_and_si256(_mm256_srai_epi16(_mm256_unpackhi_epi8(zero, bytes), 1), mask);
    out[0] = _mm256_cvtph_ps(_mm256_castsi256_si128(low));
    out[1] = _mm256_cvtph_ps(_mm256_castsi256_si128(high));
    out[2] = _mm256_cvtph_ps(_mm256_extracti128_si256(low, 1));
    out[3] = _mm256_cvtph_ps(_mm256_extracti128_si256(high, 1));
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
  void Prepare(const LinearParams& params) const override {
    avx2::Packed<ScaledRows>(this, params);
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const std::vector<float> xs = reference::PrepareActivations(params, act, x);
    avx2::PackedGemm(ScaledRows{RowCodes::Of(params)}, avx2::Packed<ScaledRows>(this, params),
                     params, xs, x.rows, y);
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
    const std::vector<float> xs = reference::PrepareActivations(params, act, x);
    avx2::PackedGemm(ScaledBlocks{BlockCodes::Of(params, grid_row)},
                     avx2::Packed<ScaledBlocks>(this, params), params, xs, x.rows, y);
  }
};

const KernelRegistrar kRegisterGemmFp8RowAvx2(std::make_unique<GemmFp8RowAvx2>());
const KernelRegistrar kRegisterGemmFp8BlockAvx2(std::make_unique<GemmFp8BlockAvx2>());

}  // namespace
}  // namespace quantpath
