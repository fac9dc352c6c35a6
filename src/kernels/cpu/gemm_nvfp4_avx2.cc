// GemmNvfp4_Avx2: nvfp4_block_16_linear (nvfp4_family.h), W4A16, W4A4 and with int8 activations
// (X rounded to its codes, for the prefill of --int8-activations), on the prepacked AVX2
// GEMM (f32_dot_avx2.h) with the E2M1 codes in octets, each lane scaled by its block's scale
// (Nvfp4Octets, e2m1_octets_avx2.h). The 128x4 layout stays with the reference (sm100's).
#include "quantpath/kernels.h"
#include "src/kernels/cpu/e2m1_octets_avx2.h"
#include "src/kernels/cpu/step_kernel_avx2.h"
#include "src/kernels/cpu_problems.h"
#include "src/specs/nvfp4_family.h"

namespace quantpath {
namespace {

const KernelRegistrar kRegisterGemmNvfp4Avx2(std::make_unique<avx2::StepKernel<avx2::Nvfp4Octets>>(
    "GemmNvfp4_Avx2",
    [](const SpecKey& key, const DeviceCaps& device) {
      return key.family == kNvfp4Family && key.scales == ScaleVariant::kLinear && device.is_cpu();
    },
    [](const KernelProbe& probe) {
      return probe.spec.group == kNvfp4Group &&
             (cpu_problems::TakesNvfp4(probe) || cpu_problems::TakesNvfp4Int8(probe));
    }));

}  // namespace
}  // namespace quantpath
