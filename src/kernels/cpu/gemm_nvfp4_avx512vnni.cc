// GemmNvfp4_Avx512Bf16: nvfp4_block_16_linear (nvfp4_family.h), W4A16 and W4A4, on the AVX-512
// BF16 GEMM (bf16_dot_avx512vnni.h) with the E2M1 codes as bf16 values (e2m1_quads_avx512vnni.h).
// A run is a step of 128 columns, 8 blocks of 16: lane i of its sum holds columns 8i … 8i + 7, so
// it is scaled by block i / 2's E4M3 scale, widened in the lanes (e4m3_scales_avx512vnni.h), times
// the global in fp32 as the reference multiplies them. The 128x4 layout stays with the reference
// (sm100's).
#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "src/kernels/cpu/bf16_dot_avx512vnni.h"
#include "src/kernels/cpu/e2m1_quads_avx512vnni.h"
#include "src/kernels/cpu/e4m3_scales_avx512vnni.h"
#include "src/kernels/cpu/source_kernel_avx512vnni.h"
#include "src/kernels/cpu_problems.h"
#include "src/specs/nvfp4_family.h"

namespace quantpath {
namespace {

struct Nvfp4Quads : avx512vnni::E2M1QuadSteps {
  const uint8_t* codes;
  int64_t row_bytes;
  const uint8_t* scales;  // [N, K / 16] E4M3
  int64_t scale_cols;
  float global;
  bool folds = true;  // e2m1 × e4m3 is a normal bf16 value: the tiled GEMM multiplies them
  // Lane i: block 8g + i / 2 of the row.
  __m512 Scale(int64_t row, int64_t g) const {
    return _mm512_mul_ps(BlockScales(row, g), _mm512_set1_ps(global));
  }
  float RowScale(int64_t) const { return global; }
  __m512 BlockScales(int64_t row, int64_t g) const {
    const __m128i bytes = _mm_loadl_epi64(
        reinterpret_cast<const __m128i*>(scales + row * scale_cols + g * kStep / kNvfp4Group));
    return avx512vnni::E4M3AsFloat(_mm512_cvtepu8_epi32(_mm_unpacklo_epi8(bytes, bytes)));
  }
  void PrefetchScales(int64_t row, int64_t step) const {
    avx512vnni::PrefetchScaleLine(scales + row * scale_cols, step, kStep / kNvfp4Group);
  }
  float Zero(int64_t, int64_t) const { return 0.0f; }
  float Load1(int64_t row, int64_t col) const {
    const uint8_t scale = scales[row * scale_cols + col / kNvfp4Group];
    return E2M1ToFloat(avx512vnni::NibbleCode(codes + row * row_bytes, col)) *
           (Fp8E4M3ToFloat(scale) * global);
  }

  static Nvfp4Quads Of(const LinearParams& params) {
    const ParamTensor& w = params.tensor(Slot::kWeight);
    const ParamTensor& s = params.tensor(Slot::kWeightScale);
    return {{},
            w.data<uint8_t>(),
            w.row_bytes(),
            s.data<uint8_t>(),
            s.cols(),
            params.tensor(Slot::kWeightGlobalScale).data<float>()[0]};
  }
};

const KernelRegistrar kRegisterGemmNvfp4Avx512Bf16(
    std::make_unique<avx512vnni::SourceKernel<Nvfp4Quads>>(
        "GemmNvfp4_Avx512Bf16",
        [](const SpecKey& key, const DeviceCaps& device) {
          return key.family == kNvfp4Family && key.scales == ScaleVariant::kLinear &&
                 device.is_cpu();
        },
        [](const KernelProbe& probe) {
          return probe.spec.group == kNvfp4Group && cpu_problems::TakesNvfp4(probe);
        }));

}  // namespace
}  // namespace quantpath
