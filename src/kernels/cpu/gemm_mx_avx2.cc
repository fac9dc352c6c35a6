// The OCP microscaling specs (mx_family.h) on the prepacked AVX2 GEMM (f32_dot_avx2.h),
// weight-only, with MX activations, and MXFP4 with int8 ones (X rounded to its codes, for the
// prefill of --int8-activations):
//   GemmMxfp4_Avx2  mxfp4_block_32: E2M1 codes in octets, a run a step of 64 columns, two blocks:
//                   lanes 0–3 of its sum scaled by the first, 4–7 by the second (Mxfp4Octets,
//                   e2m1_octets_avx2.h)
//   GemmMxfp8_Avx2  mxfp8_block_32: E4M3 codes over 2^8 (fp8_steps_avx2.h), a run a step of 32
//                   columns, one block, its scale times 2^8
#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "src/kernels/cpu/e2m1_octets_avx2.h"
#include "src/kernels/cpu/fp8_steps_avx2.h"
#include "src/kernels/cpu/mx_codes.h"
#include "src/kernels/cpu/step_kernel_avx2.h"
#include "src/kernels/cpu_problems.h"
#include "src/specs/int_family.h"
#include "src/specs/mx_family.h"

namespace quantpath {
namespace {

using MxCodes = cpu::MxCodes<CpuLevel::kAvx2>;

struct Mxfp8Steps : MxCodes {
  int64_t group = kMxGroup;
  static constexpr bool kZeros = false;
  static constexpr int64_t kStep = kMxGroup;
  static constexpr int64_t kStepBytes = kMxGroup;
  static constexpr cpu::XOrder kXOrder = cpu::XOrder::kNatural;

  void Load(const uint8_t* p, __m256 out[4]) const { avx2::LoadE4M3Over256(p, out); }
  float Scale(int64_t row, int64_t g) const {
    return E8M0(scales[row * scale_cols + g]) * avx2::kE4M3Over;
  }
  float Zero(int64_t, int64_t) const { return 0.0f; }
  float Load1(int64_t row, int64_t col) const {
    return Fp8E4M3ToFloat(codes[row * row_bytes + col]) * BlockScale(row, col);
  }
  static Mxfp8Steps Of(const LinearParams& params) { return {MxCodes::Of(params)}; }
};

bool TakesMxBlocks(const KernelProbe& probe) {
  return probe.spec.group == kMxGroup &&
         (cpu_problems::TakesMx(probe) || cpu_problems::TakesMxInt8(probe));
}

const KernelRegistrar kRegisterGemmMxfp4Avx2(std::make_unique<avx2::StepKernel<avx2::Mxfp4Octets>>(
    "GemmMxfp4_Avx2",
    [](const SpecKey& key, const DeviceCaps& device) {
      return key.family == kMxfp4Family && device.is_cpu();
    },
    &TakesMxBlocks));
const KernelRegistrar kRegisterGemmMxfp8Avx2(std::make_unique<avx2::StepKernel<Mxfp8Steps>>(
    "GemmMxfp8_Avx2",
    [](const SpecKey& key, const DeviceCaps& device) {
      return key.family == kMxfp8Family && device.is_cpu();
    },
    &TakesMxBlocks));

}  // namespace
}  // namespace quantpath
