// The OCP microscaling specs (mx_family.h) on the AVX-512 BF16 GEMM (bf16_dot_avx512vnni.h),
// weight-only and with MX activations:
//   GemmMxfp4_Avx512Bf16  mxfp4_block_32: E2M1 codes as bf16 values (e2m1_quads_avx512vnni.h), a
//                         run a step of 128 columns, 4 blocks: lane i of its sum holds columns
//                         8i … 8i + 7, scaled by block i / 4's power of two
//   GemmMxfp8_Avx512Bf16  mxfp8_block_32: E4M3 codes as bf16 values (fp8_bf16_avx512vnni.h), a run
//                         a step of 32 columns, one block
// An E8M0 scale e is 2^(e − 127) (mx_codes.h).
#include <algorithm>
#include <bit>
#include <cstring>

#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "src/kernels/cpu/bf16_dot_avx512vnni.h"
#include "src/kernels/cpu/e2m1_quads_avx512vnni.h"
#include "src/kernels/cpu/fp8_bf16_avx512vnni.h"
#include "src/kernels/cpu/mx_codes.h"
#include "src/kernels/cpu/source_kernel_avx512vnni.h"
#include "src/kernels/cpu_problems.h"
#include "src/specs/mx_family.h"

namespace quantpath {
namespace {

using MxCodes = cpu::MxCodes<CpuLevel::kAvx512Vnni>;
using cpu::kE8M0Zero;

struct Mxfp4Quads : MxCodes, avx512vnni::E2M1QuadSteps {
  // e2m1 × 2^(e − 127) is a normal bf16 value for e ≥ 2: the tiled GEMM multiplies them where
  // every scale is.
  bool folds = false;
  // Lane i: block 4g + i / 4 of the row.
  __m512 Scale(int64_t row, int64_t g) const { return BlockScales(row, g); }
  float RowScale(int64_t) const { return 1.0f; }
  __m512 BlockScales(int64_t row, int64_t g) const {
    int32_t four;
    std::memcpy(&four, scales + row * scale_cols + g * kStep / kMxGroup, sizeof four);
    const __m128i spread = _mm_shuffle_epi8(
        _mm_cvtsi32_si128(four), _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3));
    const __m512i e = _mm512_cvtepu8_epi32(spread);
    const __m512i bits = _mm512_mask_mov_epi32(
        _mm512_slli_epi32(e, 23), _mm512_testn_epi32_mask(e, e), _mm512_set1_epi32(kE8M0Zero));
    return _mm512_castsi512_ps(bits);
  }
  void PrefetchScales(int64_t row, int64_t step) const {
    avx512vnni::PrefetchScaleLine(scales + row * scale_cols, step, kStep / kMxGroup);
  }
  static Mxfp4Quads Of(const LinearParams& params) {
    Mxfp4Quads w{MxCodes::Of(params), {}};
    const ParamTensor& s = params.tensor(Slot::kWeightScale);
    const uint8_t* bytes = s.data<uint8_t>();
    w.folds = std::all_of(bytes, bytes + s.elements(), [](uint8_t e) { return e >= 2; });
    return w;
  }
  float Zero(int64_t, int64_t) const { return 0.0f; }
  float Load1(int64_t row, int64_t col) const {
    return E2M1ToFloat(avx512vnni::NibbleCode(codes + row * row_bytes, col)) * BlockScale(row, col);
  }
};

struct Mxfp8Steps : MxCodes {
  int64_t group = kMxGroup;
  static constexpr bool kZeros = false;
  static constexpr int64_t kStep = kMxGroup;
  static constexpr int64_t kStepBytes = kMxGroup;
  static constexpr cpu::XOrder kXOrder = cpu::XOrder::kNatural;

  void Load(const uint8_t* p, __m512i out[1]) const {
    out[0] = avx512vnni::Fp8ToBf16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  float Scale(int64_t row, int64_t g) const { return E8M0(scales[row * scale_cols + g]); }
  float Zero(int64_t, int64_t) const { return 0.0f; }
  float Load1(int64_t row, int64_t col) const {
    return Fp8E4M3ToFloat(codes[row * row_bytes + col]) * BlockScale(row, col);
  }
  static Mxfp8Steps Of(const LinearParams& params) { return {MxCodes::Of(params)}; }
};

const KernelRegistrar kRegisterGemmMxfp4Avx512Bf16(
    std::make_unique<avx512vnni::SourceKernel<Mxfp4Quads>>(
        "GemmMxfp4_Avx512Bf16",
        [](const SpecKey& key, const DeviceCaps& device) {
          return key.family == kMxfp4Family && device.is_cpu();
        },
        [](const KernelProbe& probe) {
          return probe.spec.group == kMxGroup && cpu_problems::TakesMx(probe);
        }));
const KernelRegistrar kRegisterGemmMxfp8Avx512Bf16(
    std::make_unique<avx512vnni::SourceKernel<Mxfp8Steps>>(
        "GemmMxfp8_Avx512Bf16",
        [](const SpecKey& key, const DeviceCaps& device) {
          return key.family == kMxfp8Family && device.is_cpu();
        },
        [](const KernelProbe& probe) {
          return probe.spec.group == kMxGroup && cpu_problems::TakesMx(probe);
        }));

}  // namespace
}  // namespace quantpath
