// GemmIntW16_Avx512Bf16: the 4- and 8-bit integer weight-only specs (int<b>_group_<g>[_zp] with g a
// power of two of at least 32 (4-bit) or 64 (8-bit), int<b>_channel[_zp], int<b>_tensor; act-order
// stays with the reference kernel) on the AVX-512 BF16 GEMM (bf16_dot_avx512vnni.h), from
// int_family.h's layout. The codes are multiplied as exact bf16 values and the zero point, or
// 2^(b−1) without one, is taken off per run as z · Σ x.
//   4-bit: a 4-bit code q under the exponent and leading mantissa bits of 128 is the bf16 value
//          128 + q (bits 0x4300 | q), so a code becomes a bf16 value with one mask-and-or and the
//          128 joins the zero point. With runs of 128 columns (or the whole row), 64 bytes hold
//          128 codes, 4 to each 16-bit word, and the four vectors of a load are that word shifted
//          by 0, 4, 8 and 12 (X in the matching order, XOrder::kNibbleQuads); shorter runs widen 16
//          bytes to 16 lanes whose two halves take the two nibbles of a byte.
//   8-bit: codes through fp32 (integers up to 255 are bf16 values), 64 columns a step.
#include <type_traits>
#include <vector>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/bf16_dot_avx512vnni.h"
#include "src/kernels/cpu/bf16_rows.h"
#include "src/kernels/cpu/int_codes.h"
#include "src/specs/int_family.h"

namespace quantpath {
namespace {

constexpr float kMagic = 128.0f;  // the bf16 value 0x4300: 4-bit codes fill its low mantissa bits

// The low 4 bits of each 16-bit lane of `words` as the bf16 value 128 + q.
inline __m512i NibblesAsBf16(__m512i words) {
  return _mm512_ternarylogic_epi32(words, _mm512_set1_epi16(0x000F), _mm512_set1_epi16(0x4300),
                                   0xEA);  // (words & 0xF) | 0x4300
}

template <int kBits, bool kZero>
using Codes = cpu::IntCodes<CpuLevel::kAvx512Vnni, kBits, kZero>;

// 4-bit codes, runs of a multiple of 128 columns or the whole row: 128 columns per load.
template <bool kZero>
struct Int4Quads : Codes<4, kZero> {
  static constexpr int kBits = 4;
  static constexpr bool kZeros = true;
  static constexpr int64_t kStep = 128;
  static constexpr int64_t kStepBytes = 64;
  static constexpr cpu::XOrder kXOrder = cpu::XOrder::kNibbleQuads;
  void Load(const uint8_t* p, __m512i out[4]) const {
    const __m512i words = avx512vnni::LoadOnce(p);
    out[0] = NibblesAsBf16(words);
    out[1] = NibblesAsBf16(_mm512_srli_epi16(words, 4));
    out[2] = NibblesAsBf16(_mm512_srli_epi16(words, 8));
    out[3] = NibblesAsBf16(_mm512_srli_epi16(words, 12));
  }
  float Zero(int64_t row, int64_t g) const { return Codes<4, kZero>::Zero(row, g) + kMagic; }
};

// 4-bit codes, runs of 32 or 64 columns: 32 columns per load, in order.
template <bool kZero>
struct Int4Pairs : Codes<4, kZero> {
  static constexpr int kBits = 4;
  static constexpr bool kZeros = true;
  static constexpr int64_t kStep = 32;
  static constexpr int64_t kStepBytes = 16;
  static constexpr cpu::XOrder kXOrder = cpu::XOrder::kNatural;
  void Load(const uint8_t* p, __m512i out[1]) const {
    const __m512i bytes =
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    out[0] = NibblesAsBf16(_mm512_or_si512(bytes, _mm512_slli_epi32(bytes, 12)));
  }
  float Zero(int64_t row, int64_t g) const { return Codes<4, kZero>::Zero(row, g) + kMagic; }
};

inline __m512 BytesAsFloat(__m128i bytes) {
  return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes));
}

template <bool kZero>
struct Int8Pairs : Codes<8, kZero> {
  static constexpr int kBits = 8;
  static constexpr bool kZeros = true;
  static constexpr int64_t kStep = 64;
  static constexpr int64_t kStepBytes = 64;
  static constexpr cpu::XOrder kXOrder = cpu::XOrder::kNatural;
  void Load(const uint8_t* p, __m512i out[2]) const {
    const __m512i bytes = avx512vnni::LoadOnce(p);
    const __m512 q0 = BytesAsFloat(_mm512_castsi512_si128(bytes));
    const __m512 q1 = BytesAsFloat(_mm512_extracti32x4_epi32(bytes, 1));
    const __m512 q2 = BytesAsFloat(_mm512_extracti32x4_epi32(bytes, 2));
    const __m512 q3 = BytesAsFloat(_mm512_extracti32x4_epi32(bytes, 3));
    out[0] = (__m512i)_mm512_cvtne2ps_pbh(q1, q0);
    out[1] = (__m512i)_mm512_cvtne2ps_pbh(q3, q2);
  }
};

// Calls f(Source<kZero>{…}) with the Source for params' layout.
template <template <bool> class Source, typename F>
void WithZero(const LinearParams& params, F f) {
  if (params.tensor(Slot::kWeightZero).empty())
    return f(Source<false>{{Codes<Source<false>::kBits, false>::Of(params)}});
  f(Source<true>{{Codes<Source<true>::kBits, true>::Of(params)}});
}
template <typename F>
void WithSource(const LinearParams& params, F f) {
  if (params.key.bits == 8) return WithZero<Int8Pairs>(params, f);
  const bool row_runs = params.key.family != kIntGroupFamily;
  if (row_runs || params.key.group % Int4Quads<false>::kStep == 0) {
    return WithZero<Int4Quads>(params, f);
  }
  WithZero<Int4Pairs>(params, f);
}

class GemmIntAvx512Bf16 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmIntW16_Avx512Bf16"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx512Vnni); }
  int priority() const override { return kReferencePriority + 20; }
  DotUnit unit() const override { return DotUnit::kBf16Pair; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return IsIntFamily(key.family) && (key.bits == 4 || key.bits == 8) && !key.act_order &&
           device.is_cpu();
  }
  // Groups of a power of two of at least a step (32 columns of 4-bit codes, 64 of 8-bit).
  bool CanHandle(const KernelProbe& probe) const override {
    const SpecKey& key = probe.spec;
    const int64_t step = key.bits == 4 ? Int4Pairs<false>::kStep : Int8Pairs<false>::kStep;
    return Serves(key, probe.device) &&
           (key.family != kIntGroupFamily ||
            (key.group >= step && std::has_single_bit(static_cast<uint64_t>(key.group)))) &&
           probe.act.mode == ActMode::kNone && reference::CanHandleIo(probe);
  }
  void Prepare(const LinearParams& params) const override {
    WithSource(params, [&](const auto& w) {
      avx512vnni::Packed<std::remove_cvref_t<decltype(w)>>(this, params);
    });
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const std::vector<float> xs = reference::PrepareActivations(params, act, x);
    WithSource(params, [&](const auto& w) {
      using Source = std::remove_cvref_t<decltype(w)>;
      avx512vnni::Gemm(w, avx512vnni::Packed<Source>(this, params), params, xs, x.rows, y);
    });
  }
};

const KernelRegistrar kRegisterGemmIntAvx512Bf16(std::make_unique<GemmIntAvx512Bf16>());

}  // namespace
}  // namespace quantpath
