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

// W [N, K] e4m3 with one scale per row: one run of the whole row.
struct ScaledRows {
  const uint8_t* codes;
  const float* scale;
  int64_t k;
  int64_t group;  // k
  int Zero(int64_t, int64_t) const { return 0; }
  float Scale(int64_t row, int64_t) const { return scale[row] * kFp16Bias; }
  __m256 Load8Codes(int64_t row, int64_t col, __m256i) const {
    return Fp8Over256(codes + row * k + col);
  }
  float Load1(int64_t row, int64_t col) const {
    return Fp8E4M3ToFloat(codes[row * k + col]) * scale[row];
  }
};

// W [N, K] e4m3 with one scale per block_n × block_k tile (grid rows per leg): runs of block_k.
struct ScaledBlocks {
  const uint8_t* codes;
  const float* scale;
  const int64_t* grid_row;
  int64_t k, scale_cols;
  int64_t group;  // block_k
  int Zero(int64_t, int64_t) const { return 0; }
  float Scale(int64_t row, int64_t g) const {
    return scale[grid_row[row] * scale_cols + g] * kFp16Bias;
  }
  __m256 Load8Codes(int64_t row, int64_t col, __m256i) const {
    return Fp8Over256(codes + row * k + col);
  }
  float Load1(int64_t row, int64_t col) const {
    return Fp8E4M3ToFloat(codes[row * k + col]) * Scale(row, col / group) / kFp16Bias;
  }
};

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
    const ScaledRows w{params.tensor(Slot::kWeight).data<uint8_t>(),
                       params.tensor(Slot::kWeightScale).data<float>(), params.cols, params.cols};
    avx2::RowBlockGemm(w, params, xs.data(), x.rows, y);
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
    const Fp8BlockLayout layout{params.key.block[0], params.key.block[1]};
    const std::vector<int64_t> grid_row = Fp8BlockGridRows(layout, params);
    const std::vector<float> xs = reference::PrepareActivations(params, act, x);
    const ParamTensor& scales = params.tensor(Slot::kWeightScale);
    const ScaledBlocks w{params.tensor(Slot::kWeight).data<uint8_t>(),
                         scales.data<float>(),
                         grid_row.data(),
                         params.cols,
                         scales.cols(),
                         layout.block_k};
    avx2::RowBlockGemm(w, params, xs.data(), x.rows, y);
  }
};

const KernelRegistrar kRegisterGemmFp8RowAvx2(std::make_unique<GemmFp8RowAvx2>());
const KernelRegistrar kRegisterGemmFp8BlockAvx2(std::make_unique<GemmFp8BlockAvx2>());

}  // namespace
}  // namespace quantpath
