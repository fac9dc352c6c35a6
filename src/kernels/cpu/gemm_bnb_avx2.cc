// The bitsandbytes families (bnb_family.h) on the prepacked AVX2 GEMM (f32_dot_avx2.h):
//   GemmBnb4_Avx2     nf4_block_<b> / fp4_block_<b> with b a power of two of at least a step (64)
//                     dividing K, so that each row holds whole blocks (block j of row n being
//                     absmax n · K / b + j): the codes in octets (nibble_octets_avx2.h) looked up
//                     in the family's map in fp32, a block's sum scaled once by its absmax
//   GemmBnbInt8_Avx2  int8_rowwise_bnb: the int8 codes widened 8 at a time, the row's SCB / 127
//                     applied to its sum
// Both sum exact products of the codes' values and scale each run once, where bitsandbytes rounds
// each weight to fp32 first: at most 2^-24 of each weight apart.
#include <array>
#include <bit>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/bnb_codes.h"
#include "src/kernels/cpu/nibble_octets_avx2.h"
#include "src/kernels/cpu/step_kernel_avx2.h"
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/bnb_family.h"
#include "src/specs/int_family.h"

namespace quantpath {
namespace {

struct Bnb4Values {
  alignas(32) float values[16] = {};
  constexpr explicit Bnb4Values(const std::array<uint32_t, 16>& map) {
    for (int i = 0; i < 16; ++i) values[i] = std::bit_cast<float>(map[i]);
  }
};
constexpr Bnb4Values kNf4Values(kNf4Map);
constexpr Bnb4Values kFp4Values(kFp4Map);

struct Bnb4Octets : avx2::NibbleOctetSteps {
  int64_t group;  // the block
  static constexpr bool kZeros = false;
  const float* map;
  const uint8_t* codes;
  int64_t row_bytes;
  const float* absmax;  // [N, K / block] as the rows hold whole blocks
  int64_t blocks_per_row;

  __m256 Vector(__m256i words, int s) const {
    return avx2::TableVector(words, s, _mm256_load_ps(map), _mm256_load_ps(map + 8));
  }
  float Scale(int64_t row, int64_t g) const { return absmax[row * blocks_per_row + g]; }
  float Zero(int64_t, int64_t) const { return 0.0f; }
  float Load1(int64_t row, int64_t col) const {
    return cpu::BnbRounding<CpuLevel::kAvx2>::Product(
        map[ReadCode(codes + row * row_bytes, col, 4)], Scale(row, col / group));
  }
  static Bnb4Octets Of(const LinearParams& params) {
    const ParamTensor& w = params.tensor(Slot::kWeight);
    return {{},
            params.key.group,
            params.key.family == kNf4Family ? kNf4Values.values : kFp4Values.values,
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

const KernelRegistrar kRegisterGemmBnb4Avx2(std::make_unique<avx2::StepKernel<Bnb4Octets>>(
    "GemmBnb4_Avx2",
    [](const SpecKey& key, const DeviceCaps& device) {
      return (key.family == kNf4Family || key.family == kFp4Family) && device.is_cpu();
    },
    [](const KernelProbe& probe) {
      const int64_t block = probe.spec.group;
      return block >= avx2::NibbleOctetSteps::kStep &&
             std::has_single_bit(static_cast<uint64_t>(block)) && probe.k % block == 0 &&
             probe.act.mode == ActMode::kNone && reference::CanHandleIo(probe);
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
