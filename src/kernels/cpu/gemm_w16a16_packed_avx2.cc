// GemmW16A16Packed_Avx2: the bf16 spec with bf16 weights on the prepacked AVX2 GEMM
// (f32_dot_avx2.h, f32_tiles_avx2.h): 32 columns a step, each bf16 widened to fp32 by a shift, one
// run a row with no scale. fp16 and fp32 weights stay with GemmW16A16_Avx2.
#include "quantpath/kernels.h"
#include "src/kernels/cpu/row_blocks_avx2.h"
#include "src/kernels/cpu/step_kernel_avx2.h"
#include "src/kernels/cpu_problems.h"

namespace quantpath {
namespace {

struct Bf16Steps {
  int64_t group;  // the row: bf16 weights have no scale
  const uint16_t* data;
  int64_t row_elements;
  static constexpr bool kZeros = false;
  static constexpr int64_t kStep = 32;
  static constexpr int64_t kStepBytes = 64;
  static constexpr cpu::XOrder kXOrder = cpu::XOrder::kNatural;

  void Load(const uint8_t* p, __m256 out[4]) const {
    for (int v = 0; v < 4; ++v) {
      const __m256i words =
          _mm256_cvtepu16_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(p + 16 * v)));
      out[v] = _mm256_castsi256_ps(_mm256_slli_epi32(words, 16));
    }
  }
  float Scale(int64_t, int64_t) const { return 1.0f; }
  float Zero(int64_t, int64_t) const { return 0.0f; }
  float Load1(int64_t row, int64_t col) const {
    return avx2::Bf16Bits(data[row * row_elements + col]);
  }
  static Bf16Steps Of(const LinearParams& params) {
    const ParamTensor& w = params.tensor(Slot::kWeight);
    return {params.cols, w.data<uint16_t>(), w.row_bytes() / 2};
  }
};

const KernelRegistrar kRegisterGemmW16A16PackedAvx2(std::make_unique<avx2::StepKernel<Bf16Steps>>(
    "GemmW16A16Packed_Avx2", &cpu_problems::ServesBf16, [](const KernelProbe& probe) {
      return cpu_problems::TakesBf16(probe) && probe.weight == QDType::kBF16;
    }));

}  // namespace
}  // namespace quantpath
