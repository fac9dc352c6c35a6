// The bitsandbytes families (bnb_family.h) on the prepacked AVX2 GEMM (f32_dot_avx2.h):
//   GemmBnb4_Avx2     nf4_block_<b> / fp4_block_<b> with b a power of two of at least a step (64)
//                     dividing K, so that each row holds whole blocks (block j of row n being
//                     absmax n · K / b + j): the codes looked up in the family's map in fp16, as
//                     bitsandbytes' own 4-bit GEMV takes it (at most 2^-11 of each value apart
//                     from the fp32 map), a block's sum scaled once by its absmax
//   GemmBnbInt8_Avx2  int8_rowwise_bnb: the int8 codes widened 8 at a time, the row's SCB / 127
//                     applied to its sum, exact products scaled once, where bitsandbytes rounds
//                     each weight to fp32 first: at most 2^-24 of each weight apart.
#include <array>
#include <bit>

#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "src/kernels/cpu/bnb_codes.h"
#include "src/kernels/cpu/f32_source_avx2.h"
#include "src/kernels/cpu/step_kernel_avx2.h"
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/bnb_family.h"
#include "src/specs/int_family.h"

namespace quantpath {
namespace {

// The family's map in fp16 (bitsandbytes' 4-bit GEMV keeps it in the model's 16-bit dtype), as the
// low and high bytes that vpshufb looks up (each table twice, once per 128-bit lane), and as fp32.
struct Bnb4HalfMap {
  alignas(32) uint8_t low[32], high[32];
  float values[16];
  explicit Bnb4HalfMap(const std::array<uint32_t, 16>& map) {
    for (int i = 0; i < 16; ++i) {
      const uint16_t half = FloatToFp16(std::bit_cast<float>(map[i]));
      low[i] = low[i + 16] = static_cast<uint8_t>(half & 0xFF);
      high[i] = high[i + 16] = static_cast<uint8_t>(half >> 8);
      values[i] = Fp16ToFloat(half);
    }
  }
};

// A step's 32 bytes of codes: both nibbles of every byte looked up as fp16 (vpshufb on the low and
// high bytes, interleaved) and widened by F16C, eight bytes' low nibbles a vector, then their high
// nibbles (X in the matching order, XOrder::kNibbleBytes): twice as fast as two vpermps of the fp32
// map and a blend a vector (13 against 6.5 G codes/s from L1, one thread of a 2-core AMD EPYC).
struct Bnb4Steps {
  static constexpr int64_t kStep = 64;
  static constexpr int64_t kStepBytes = 32;
  static constexpr cpu::XOrder kXOrder = cpu::XOrder::kNibbleBytes;
  int64_t group;  // the block
  static constexpr bool kZeros = false;
  const Bnb4HalfMap* map;
  const uint8_t* codes;
  int64_t row_bytes;
  const float* absmax;  // [N, K / block] as the rows hold whole blocks
  int64_t blocks_per_row;

  void Load(const uint8_t* p, __m256 out[8]) const {
    const __m256i low = _mm256_load_si256(reinterpret_cast<const __m256i*>(map->low));
    const __m256i high = _mm256_load_si256(reinterpret_cast<const __m256i*>(map->high));
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    const __m256i bytes = avx2::LoadOnce(p);
    const __m256i index[2] = {_mm256_and_si256(bytes, nibble),
                              _mm256_and_si256(_mm256_srli_epi32(bytes, 4), nibble)};
    for (int h = 0; h < 2; ++h) {
      const __m256i lows = _mm256_shuffle_epi8(low, index[h]);
      const __m256i highs = _mm256_shuffle_epi8(high, index[h]);
      // Bytes 0–7 and 16–23, and 8–15 and 24–31 (unpacking keeps to 128-bit lanes).
      const __m256i first = _mm256_unpacklo_epi8(lows, highs);
      const __m256i second = _mm256_unpackhi_epi8(lows, highs);
      out[4 * h + 0] = _mm256_cvtph_ps(_mm256_castsi256_si128(first));
      out[4 * h + 1] = _mm256_cvtph_ps(_mm256_castsi256_si128(second));
      out[4 * h + 2] = _mm256_cvtph_ps(_mm256_extracti128_si256(first, 1));
      out[4 * h + 3] = _mm256_cvtph_ps(_mm256_extracti128_si256(second, 1));
    }
  }
  float Scale(int64_t row, int64_t g) const { return absmax[row * blocks_per_row + g]; }
  float Zero(int64_t, int64_t) const { return 0.0f; }
  float Load1(int64_t row, int64_t col) const {
    return cpu::BnbRounding<CpuLevel::kAvx2>::Product(
        map->values[ReadCode(codes + row * row_bytes, col, 4)], Scale(row, col / group));
  }
  static Bnb4Steps Of(const LinearParams& params) {
    static const Bnb4HalfMap kNf4(kNf4Map), kFp4(kFp4Map);
    const ParamTensor& w = params.tensor(Slot::kWeight);
    return {params.key.group,
            params.key.family == kNf4Family ? &kNf4 : &kFp4,
            w.data<uint8_t>(),
            w.row_bytes(),
            params.tensor(Slot::kWeightScale).data<float>(),
            params.cols / params.key.group};
  }
};

using BnbInt8Codes = cpu::BnbInt8Codes<CpuLevel::kAvx2>;

struct BnbInt8Steps : BnbInt8Codes {
  static constexpr int64_t kStep = 32;
  static constexpr int64_t kStepBytes = 32;

  void Load(const uint8_t* p, __m256 out[4]) const {
    for (int s = 0; s < 4; ++s) {
      out[s] = _mm256_cvtepi32_ps(
          _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * s))));
    }
  }
  static BnbInt8Steps Of(const LinearParams& params) { return {BnbInt8Codes::Of(params)}; }
};

const KernelRegistrar kRegisterGemmBnb4Avx2(std::make_unique<avx2::StepKernel<Bnb4Steps>>(
    "GemmBnb4_Avx2",
    [](const SpecKey& key, const DeviceCaps& device) {
      return (key.family == kNf4Family || key.family == kFp4Family) && device.is_cpu();
    },
    [](const KernelProbe& probe) {
      const int64_t block = probe.spec.group;
      return block >= Bnb4Steps::kStep && std::has_single_bit(static_cast<uint64_t>(block)) &&
             probe.k % block == 0 && probe.act.mode == ActMode::kNone &&
             reference::CanHandleIo(probe);
    }));
const KernelRegistrar kRegisterGemmBnbInt8Avx2(std::make_unique<avx2::StepKernel<BnbInt8Steps>>(
    "GemmBnbInt8_Avx2",
    [](const SpecKey& key, const DeviceCaps& device) {
      return key.family == kBnbInt8Family && device.is_cpu();
    },
    [](const KernelProbe& probe) {
      return probe.act.mode == ActMode::kNone && reference::CanHandleIo(probe);
    }));

}  // namespace
}  // namespace quantpath
