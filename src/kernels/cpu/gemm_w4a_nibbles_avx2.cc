// GemmW4A4A8Nibbles_Avx2: the mixed int4 specs (w4a_family.h: int4_channel[_zp] and
// int4_group_<g>[_zp], g a power-of-two multiple of 64, with int4 or int8 activations per token)
// on the nibble GEMM (nibble_dot_avx2.h), straight from the 4-bit codes: each half of a step,
// masked, is 32 unsigned codes q ∈ [0, 16) that vpmaddubsw multiplies with X's codes (|pair| ≤
// 2 · 15 · 128), a run is a group, and z · Σ qx comes off each group's sum. One group (channel):
// the sum is exact and the output is the reference's bit for bit (gemm_w4a_ref.cc); several: each
// group's lanes are scaled into fp32 totals, within 1e-5 of the reference's double sum.
#include <immintrin.h>

#include <bit>
#include <cstdint>
#include <memory>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/int_codes.h"
#include "src/kernels/cpu/nibble_dot_avx2.h"
#include "src/kernels/cpu_problems.h"
#include "src/kernels/reference/int8_activations.h"
#include "src/specs/int_family.h"

namespace quantpath {
namespace {

// An int16 lane gains at most 2 · 2 · 15 · 128 = 7680 a step, so 4 steps stay below 2^15; a whole
// row's sum stays below 2^31 up to 2^20 columns (|qx · (q − z)| ≤ 128 · 15).
constexpr int64_t kMaxK = int64_t{1} << 20;

template <bool kZero>
struct Int4Nibbles : cpu::IntCodes<CpuLevel::kAvx2, 4, kZero> {
  static constexpr int64_t kPairSteps = 4;
  static constexpr bool kZeros = true;
  static constexpr bool kExactOneRun = true;
  static constexpr bool kRowScales = true;
  static constexpr float kValueScale = 1.0f;
  int64_t run_steps;  // a group's steps, or the row's

  struct Halves {
    __m256i low, high;
  };
  static Halves Split(const uint8_t* step) {
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    const __m256i codes = avx2::LoadOnce(step);
    return {_mm256_and_si256(codes, nibble), _mm256_and_si256(_mm256_srli_epi16(codes, 4), nibble)};
  }
  static __m256i Pairs(const Halves& h, __m256i even, __m256i odd) {
    return _mm256_add_epi16(_mm256_maddubs_epi16(h.low, even), _mm256_maddubs_epi16(h.high, odd));
  }
  __m256 RunScales(int64_t row, int64_t g) const { return _mm256_set1_ps(this->Scale(row, g)); }

  static Int4Nibbles Of(const LinearParams& params) {
    const auto codes = cpu::IntCodes<CpuLevel::kAvx2, 4, kZero>::Of(params);
    const int64_t steps = (params.cols + avx2::kNibbleStep - 1) / avx2::kNibbleStep;
    return {codes, codes.group_shift == 63 ? steps : codes.group / avx2::kNibbleStep};
  }
};

class GemmW4aNibblesAvx2 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmW4A4A8Nibbles_Avx2"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx2); }
  int priority() const override { return kReferencePriority + 20; }
  DotUnit unit() const override { return DotUnit::kInt4Pair; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return cpu_problems::ServesW4a(key, device);
  }
  bool CanHandle(const KernelProbe& probe) const override {
    const SpecKey& key = probe.spec;
    return cpu_problems::TakesW4a(probe) && probe.k <= kMaxK &&
           (key.family != kIntGroupFamily ||
            (key.group % avx2::kNibbleStep == 0 &&
             std::has_single_bit(static_cast<uint64_t>(key.group))));
  }
  void Prepare(const LinearParams& params) const override { Packed(params); }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const reference::Int8Activations xq = reference::QuantizeW4aActivations(act, x);
    const avx2::NibbleX ordered =
        avx2::OrderX(xq, x.rows, x.cols, IntGroupOf(params.key, params.cols));
    if (!params.tensor(Slot::kWeightZero).empty()) {
      return avx2::NibbleGemm(avx2::NibbleProblem<Int4Nibbles<true>>{
          Int4Nibbles<true>::Of(params), &Packed(params), &ordered, &params, y});
    }
    avx2::NibbleGemm(avx2::NibbleProblem<Int4Nibbles<false>>{
        Int4Nibbles<false>::Of(params), &Packed(params), &ordered, &params, y});
  }

 private:
  const cpu::RowInterleave& Packed(const LinearParams& params) const {
    return params.packs.Get<cpu::RowInterleave>(
        this, [&] { return std::make_unique<cpu::RowInterleave>(avx2::NibbleSteps(params)); });
  }
};

const KernelRegistrar kRegisterGemmW4aNibblesAvx2(std::make_unique<GemmW4aNibblesAvx2>());

}  // namespace
}  // namespace quantpath
