// GemmIntW16_Avx512Bf16: the 8-bit integer weight-only specs (int8_group_<g>[_zp] with g a power
// of two of at least 64, int8_channel[_zp], int8_tensor; act-order stays with the reference kernel)
// on the AVX-512 BF16 GEMM (bf16_dot_avx512vnni.h), from int_family.h's layout: the codes through
// fp32 (integers up to 255 are bf16 values), 64 columns a step, the zero point, or 128 without
// one, taken off per run as z · Σ x. 4-bit codes run on the rows-in-lanes kernels
// (gemm_int4_lanes_avx512vnni.cc, gemm_w4a_quads_avx512vnni.cc).
#include <type_traits>
#include <vector>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/bf16_dot_avx512vnni.h"
#include "src/kernels/cpu/bf16_rows.h"
#include "src/kernels/cpu/int_codes.h"
#include "src/specs/int_family.h"

namespace quantpath {
namespace {

template <int kBits, bool kZero>
using Codes = cpu::IntCodes<CpuLevel::kAvx512Vnni, kBits, kZero>;

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
  WithZero<Int8Pairs>(params, f);
}

class GemmIntAvx512Bf16 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmIntW16_Avx512Bf16"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx512Vnni); }
  int priority() const override { return kReferencePriority + 20; }
  DotUnit unit() const override { return DotUnit::kBf16Pair; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return IsIntFamily(key.family) && key.bits == 8 && !key.act_order && device.is_cpu();
  }
  // Groups of a power of two of at least a step.
  bool CanHandle(const KernelProbe& probe) const override {
    const SpecKey& key = probe.spec;
    return Serves(key, probe.device) &&
           (key.family != kIntGroupFamily ||
            (key.group >= Int8Pairs<false>::kStep &&
             std::has_single_bit(static_cast<uint64_t>(key.group)))) &&
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
