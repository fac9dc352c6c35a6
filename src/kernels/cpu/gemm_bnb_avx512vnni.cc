// The bitsandbytes families (bnb_family.h) on the AVX-512 BF16 GEMM (bf16_dot_avx512vnni.h):
//   GemmBnb4_Avx512Bf16     nf4_block_<b> / fp4_block_<b> with b a power of two of at least 8
//                           dividing K (each row then holds whole blocks, block j of row n being
//                           absmax (n · K + c) / b): the codes in quads as E2M1's
//                           (e2m1_quads_avx512vnni.h), looked up in the family's map rounded to
//                           bf16, lane i of a 128-column step scaled by its block's absmax. The
//                           maps' values are not bf16 values, so each code carries one rounding
//                           of at most 2^-9 of itself (the tolerance of the family says so); the
//                           prefill tiles hold bf16(map × absmax), rounded once from the fp32
//                           product, the weights bitsandbytes' dequantize_4bit gives a bf16 model.
//   GemmBnbInt8_Avx512Bf16  int8_rowwise_bnb: the int8 codes as exact bf16 values, 64 columns a
//                           step, the row's SCB / 127 applied to its sum.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/bf16_dot_avx512vnni.h"
#include "src/kernels/cpu/bnb4_tables_avx512vnni.h"
#include "src/kernels/cpu/bnb_codes.h"
#include "src/kernels/cpu/e2m1_quads_avx512vnni.h"
#include "src/kernels/cpu/source_kernel_avx512vnni.h"
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/bnb_family.h"

namespace quantpath {
namespace {

// Products of a map value and an absmax at least this large are normal bf16 values.
constexpr float kSmallestFoldedAbsmax = 0x1p-96f;

struct Bnb4Quads : avx512vnni::NibbleQuadSteps {
  const avx512vnni::Bnb4Tables* tables;
  const uint8_t* codes;
  int64_t row_bytes;
  const float* absmax;  // [N, K / block] as the rows hold whole blocks
  int64_t blocks_per_row;
  int log2_block;
  bool folds = true;
  // For blocks narrower than a step, the block of each lane among the step's (lane i holds
  // columns 8i … 8i + 7), set once as a division per step would cost more than its dots.
  __m512i lane_block = _mm512_setzero_si512();

  void Load(const uint8_t* p, __m512i out[4]) const {
    avx512vnni::LoadNibbleQuads(p, tables->bf16, out);
  }
  __m512 Scale(int64_t row, int64_t g) const { return BlockScales(row, g); }
  float RowScale(int64_t) const { return 1.0f; }
  __m512 BlockScales(int64_t row, int64_t g) const {
    const float* s = absmax + row * blocks_per_row + ((g * kStep) >> log2_block);
    // Plain loads of the step's absmax only: a masked load costs more than the step's dots.
    switch (log2_block) {
      case 3:
        return _mm512_permutexvar_ps(lane_block, _mm512_loadu_ps(s));
      case 4:
        return _mm512_permutexvar_ps(lane_block, _mm512_castps256_ps512(_mm256_loadu_ps(s)));
      case 5:
        return _mm512_permutexvar_ps(lane_block, _mm512_castps128_ps512(_mm_loadu_ps(s)));
      case 6:
        return _mm512_permutexvar_ps(
            lane_block,
            _mm512_castps128_ps512(_mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(s)))));
      default:
        return _mm512_set1_ps(*s);
    }
  }
  // Load's vectors with each value bf16(fp32(map[code] × absmax)): word j of a vector is lane
  // j / 2's, and _mm512_cvtne2ps_pbh puts its second operand's 16 values first.
  void LoadFolded(const uint8_t* p, __m512 lanes, __m512i out[4]) const {
    const __m512i words = avx512vnni::LoadOnce(p);
    const __m512 map = _mm512_load_ps(tables->fp32);
    const __m512 low_scales = _mm512_permutexvar_ps(
        _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7), lanes);
    const __m512 high_scales = _mm512_permutexvar_ps(
        _mm512_setr_epi32(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15), lanes);
    for (int v = 0; v < 4; ++v) {
      // vpermps reads the low 4 bits of each index: the nibble v of each word.
      const __m512i index = _mm512_srli_epi16(words, 4 * v);
      const __m512 low = _mm512_mul_ps(
          _mm512_permutexvar_ps(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(index)), map),
          low_scales);
      const __m512 high = _mm512_mul_ps(
          _mm512_permutexvar_ps(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(index, 1)), map),
          high_scales);
      out[v] = (__m512i)_mm512_cvtne2ps_pbh(high, low);
    }
  }
  void PrefetchScales(int64_t row, int64_t step) const {
    avx512vnni::PrefetchScaleLine(reinterpret_cast<const uint8_t*>(absmax + row * blocks_per_row),
                                  step, 4 * std::max<int64_t>(1, kStep >> log2_block));
  }
  float Zero(int64_t, int64_t) const { return 0.0f; }
  float Load1(int64_t row, int64_t col) const {
    return cpu::BnbRounding<CpuLevel::kAvx512Vnni>::Product(
        tables->fp32[avx512vnni::NibbleCode(codes + row * row_bytes, col)],
        absmax[row * blocks_per_row + (col >> log2_block)]);
  }

  static Bnb4Quads Of(const LinearParams& params) {
    const ParamTensor& w = params.tensor(Slot::kWeight);
    const ParamTensor& s = params.tensor(Slot::kWeightScale);
    const float* absmax = s.data<float>();
    const bool folds = std::all_of(absmax, absmax + s.elements(), [](float a) {
      return a == 0.0f || std::abs(a) >= kSmallestFoldedAbsmax;
    });
    const int log2_block = std::countr_zero(static_cast<uint64_t>(params.key.group));
    Bnb4Quads quads{
        {},
        params.key.family == kNf4Family ? &avx512vnni::kNf4Tables : &avx512vnni::kFp4Tables,
        w.data<uint8_t>(),
        w.row_bytes(),
        absmax,
        params.cols / params.key.group,
        log2_block,
        folds};
    if (params.key.group < kStep) {
      quads.lane_block = _mm512_srli_epi32(
          _mm512_setr_epi32(0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120),
          log2_block);
    }
    return quads;
  }
};

using BnbInt8Codes = cpu::BnbInt8Codes<CpuLevel::kAvx512Vnni>;

struct BnbInt8Steps : BnbInt8Codes {
  static constexpr int64_t kStep = 64;
  static constexpr int64_t kStepBytes = 64;

  void Load(const uint8_t* p, __m512i out[2]) const {
    const __m512i bytes = avx512vnni::LoadOnce(p);
    const auto floats = [](__m128i q) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)); };
    out[0] = (__m512i)_mm512_cvtne2ps_pbh(floats(_mm512_extracti32x4_epi32(bytes, 1)),
                                          floats(_mm512_castsi512_si128(bytes)));
    out[1] = (__m512i)_mm512_cvtne2ps_pbh(floats(_mm512_extracti32x4_epi32(bytes, 3)),
                                          floats(_mm512_extracti32x4_epi32(bytes, 2)));
  }
  static BnbInt8Steps Of(const LinearParams& params) { return {BnbInt8Codes::Of(params)}; }
};

const KernelRegistrar kRegisterGemmBnb4Avx512Bf16(
    std::make_unique<avx512vnni::SourceKernel<Bnb4Quads>>(
        "GemmBnb4_Avx512Bf16",
        [](const SpecKey& key, const DeviceCaps& device) {
          return (key.family == kNf4Family || key.family == kFp4Family) && device.is_cpu();
        },
        [](const KernelProbe& probe) {
          const int64_t block = probe.spec.group;
          return block >= 8 && std::has_single_bit(static_cast<uint64_t>(block)) &&
                 probe.k % block == 0 && probe.act.mode == ActMode::kNone &&
                 reference::CanHandleIo(probe);
        }));
const KernelRegistrar kRegisterGemmBnbInt8Avx512Bf16(
    std::make_unique<avx512vnni::SourceKernel<BnbInt8Steps>>(
        "GemmBnbInt8_Avx512Bf16",
        [](const SpecKey& key, const DeviceCaps& device) {
          return key.family == kBnbInt8Family && device.is_cpu();
        },
        [](const KernelProbe& probe) {
          return probe.act.mode == ActMode::kNone && reference::CanHandleIo(probe);
        }));

}  // namespace
}  // namespace quantpath
