// GemmW4a8Awq_Avx2: int4_group_<g>_prescaled (w4a8_awq_family.h, ModelOpt W4A8_AWQ) with g a
// power-of-two multiple of 64, on the prepacked AVX2 GEMM (f32_dot_avx2.h): the codes as the 4-bit
// integer kernels take them (int_steps_avx2.h, z = 8, fp32 scales), X multiplied by its prescale
// and rounded to e4m3 against the static input scale as the reference does
// (reference::PrepareActivations).
#include <bit>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/int_steps_avx2.h"
#include "src/kernels/cpu/step_kernel_avx2.h"
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/w4a8_awq_family.h"

namespace quantpath {
namespace {

struct PrescaledSteps : avx2::IntSteps<4, false> {
  static PrescaledSteps Of(const LinearParams& params) {
    return {cpu::IntCodes<CpuLevel::kAvx2, 4, false>::Of(params)};
  }
};

const KernelRegistrar kRegisterGemmW4a8AwqAvx2(std::make_unique<avx2::StepKernel<PrescaledSteps>>(
    "GemmW4a8Awq_Avx2",
    [](const SpecKey& key, const DeviceCaps& device) {
      return key.family == kIntGroupPrescaledFamily && device.is_cpu();
    },
    [](const KernelProbe& probe) {
      const int64_t group = probe.spec.group;
      return group % PrescaledSteps::kStep == 0 &&
             std::has_single_bit(static_cast<uint64_t>(group)) &&
             probe.act.mode == ActMode::kStaticPerTensor && probe.act.dtype == QDType::kFP8E4M3 &&
             probe.act.symmetric && reference::CanHandleIo(probe);
    }));

}  // namespace
}  // namespace quantpath
