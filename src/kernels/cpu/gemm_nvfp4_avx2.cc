// GemmNvfp4_Avx2: nvfp4_block_16_linear (nvfp4_family.h), W4A16 and W4A4, on the prepacked AVX2
// GEMM (f32_dot_avx2.h) with the E2M1 codes in octets (nibble_octets_avx2.h). A run is a step of 64
// columns, four blocks of 16: lanes 2j and 2j + 1 of its sum hold columns 16j … 16j + 15, so they
// are scaled by block j's E4M3 scale, widened through fp16 as the codes of fp8_steps_avx2.h are,
// times 2^8 · G: the fp32 product e4m3 × G that the reference multiplies each code by. The 128x4
// layout stays with the reference (sm100's).
#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "src/kernels/cpu/fp8_steps_avx2.h"
#include "src/kernels/cpu/nibble_octets_avx2.h"
#include "src/kernels/cpu/step_kernel_avx2.h"
#include "src/kernels/cpu_problems.h"
#include "src/specs/int_family.h"
#include "src/specs/nvfp4_family.h"

namespace quantpath {
namespace {

struct Nvfp4Octets : avx2::E2M1Octets {
  int64_t group = kStep;
  static constexpr bool kZeros = false;
  static constexpr bool kLaneScales = true;
  const uint8_t* codes;
  int64_t row_bytes;
  const uint8_t* scales;  // [N, K / 16] E4M3
  int64_t scale_cols;
  float global;

  __m256 Scale(int64_t row, int64_t g) const {
    return _mm256_mul_ps(avx2::E4M3PairsOver256(scales + row * scale_cols + g * 4),
                         _mm256_set1_ps(global * avx2::kE4M3Over));
  }
  float Zero(int64_t, int64_t) const { return 0.0f; }
  float Load1(int64_t row, int64_t col) const {
    const uint8_t scale = scales[row * scale_cols + col / kNvfp4Group];
    return E2M1ToFloat(static_cast<uint8_t>(ReadCode(codes + row * row_bytes, col, 4))) *
           (Fp8E4M3ToFloat(scale) * global);
  }

  static Nvfp4Octets Of(const LinearParams& params) {
    const ParamTensor& w = params.tensor(Slot::kWeight);
    const ParamTensor& s = params.tensor(Slot::kWeightScale);
    return {{},
            kStep,
            w.data<uint8_t>(),
            w.row_bytes(),
            s.data<uint8_t>(),
            s.cols(),
            params.tensor(Slot::kWeightGlobalScale).data<float>()[0]};
  }
};

const KernelRegistrar kRegisterGemmNvfp4Avx2(std::make_unique<avx2::StepKernel<Nvfp4Octets>>(
    "GemmNvfp4_Avx2",
    [](const SpecKey& key, const DeviceCaps& device) {
      return key.family == kNvfp4Family && key.scales == ScaleVariant::kLinear && device.is_cpu();
    },
    [](const KernelProbe& probe) {
      return probe.spec.group == kNvfp4Group && cpu_problems::TakesNvfp4(probe);
    }));

}  // namespace
}  // namespace quantpath
