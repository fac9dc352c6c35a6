// GemmW16A16_Avx2: the bf16 spec (W [N, K] in bf16, fp16 or fp32) on the AVX2 row-block GEMM
// (row_blocks_avx2.h): bf16 widened by a shift, fp16 by F16C.
#include <vector>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/row_blocks_avx2.h"
#include "src/kernels/cpu_problems.h"

namespace quantpath {
namespace {

// W's rows in its element type.
template <QDType kW>
struct DenseRows {
  const std::byte* data;
  int64_t row_bytes;
  static constexpr int64_t kBytes = kW == QDType::kFP32 ? 4 : 2;

  __m256 Load8(int64_t row, int64_t col) const {
    const std::byte* p = data + row * row_bytes + col * kBytes;
    if constexpr (kW == QDType::kBF16) {
      const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
    } else if constexpr (kW == QDType::kFP16) {
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    } else {
      return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
    }
  }
  float Load1(int64_t row, int64_t col) const {
    const std::byte* p = data + row * row_bytes + col * kBytes;
    if constexpr (kW == QDType::kFP32) {
      float value;
      __builtin_memcpy(&value, p, 4);
      return value;
    } else {
      uint16_t bits;
      __builtin_memcpy(&bits, p, 2);
      return kW == QDType::kBF16 ? avx2::Bf16Bits(bits) : _cvtsh_ss(bits);
    }
  }
};

class GemmW16A16Avx2 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmW16A16_Avx2"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx2); }
  int priority() const override { return kReferencePriority + 10; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return cpu_problems::ServesBf16(key, device);
  }
  bool CanHandle(const KernelProbe& probe) const override { return cpu_problems::TakesBf16(probe); }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const std::vector<float> xs = reference::PrepareActivations(params, act, x);
    const ParamTensor& w = params.tensor(Slot::kWeight);
    switch (w.dtype()) {
      case QDType::kBF16:
        return avx2::RowBlockGemm(DenseRows<QDType::kBF16>{w.raw(), w.row_bytes()}, params,
                                  xs.data(), x.rows, y);
      case QDType::kFP16:
        return avx2::RowBlockGemm(DenseRows<QDType::kFP16>{w.raw(), w.row_bytes()}, params,
                                  xs.data(), x.rows, y);
      default:
        return avx2::RowBlockGemm(DenseRows<QDType::kFP32>{w.raw(), w.row_bytes()}, params,
                                  xs.data(), x.rows, y);
    }
  }
};

const KernelRegistrar kRegisterGemmW16A16Avx2(std::make_unique<GemmW16A16Avx2>());

}  // namespace
}  // namespace quantpath
