// GemmIntW16Lanes_Avx512Bf16: the 4-bit integer weight-only specs (int4_channel[_zp] and
// int4_group_<g>[_zp], g a multiple of 8; act-order stays with the reference kernel), every M, on
// the rows-in-lanes GEMM (lanes_bf16_avx512vnni.h). A code q under the
// exponent and leading mantissa bits of 128 is the bf16 value 128 + q (bits 0x4300 | q), so one
// shift and one mask-and-or turn a 16-bit lane into a code's value, offset by 128 + z with the
// zero point z (2^3 without one).
#include "src/base/avx512_intrinsics.h"

#include <memory>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/int4_lanes_avx512vnni.h"
#include "src/kernels/cpu/lanes_bf16_avx512vnni.h"
#include "src/kernels/cpu/nibble_lanes_avx512vnni.h"
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/int_family.h"

namespace quantpath {
namespace {

using avx512vnni::LanePack;

constexpr float kMagic = 128.0f;  // the bf16 value 0x4300: 4-bit codes fill its low mantissa bits

// The low 4 bits of each 16-bit lane of `words` as the bf16 value 128 + q.
inline __m512i NibblesAsBf16(__m512i words) {
  return _mm512_ternarylogic_epi32(words, _mm512_set1_epi16(0x000F), _mm512_set1_epi16(0x4300),
                                   0xEA);  // (words & 0xF) | 0x4300
}

template <bool kZero>
struct Int4Lanes : avx512vnni::NibbleChunks {
  static constexpr bool kOffsets = true;
  QDType scale_dtype;
  float output_scale = 1.0f;

  void Pairs(const uint8_t* vector, __m512i out[avx512vnni::kLanePairs]) const {
    const __m512i words = avx512vnni::LoadOnce(vector);
    out[0] = NibblesAsBf16(words);
    out[1] = NibblesAsBf16(_mm512_srli_epi16(words, 4));
    out[2] = NibblesAsBf16(_mm512_srli_epi16(words, 8));
    out[3] = NibblesAsBf16(_mm512_srli_epi16(words, 12));
  }
  __m512 Scales(const LanePack& pack, int64_t b, int64_t g, int v) const {
    return avx512vnni::WidenScales(pack.Scales(b, g, v), scale_dtype);
  }
  __m512 Offsets(const LanePack& pack, int64_t b, int64_t g, int v) const {
    if constexpr (kZero) {
      return _mm512_add_ps(_mm512_cvtepi32_ps(pack.Zeros(b, g, v)), _mm512_set1_ps(kMagic));
    }
    return _mm512_set1_ps(kMagic + 8.0f);
  }
};

class GemmIntLanesAvx512Bf16 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmIntW16Lanes_Avx512Bf16"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx512Vnni); }
  int priority() const override { return kReferencePriority + 25; }
  DotUnit unit() const override { return DotUnit::kBf16Pair; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return (key.family == kIntChannelFamily || key.family == kIntGroupFamily) && key.bits == 4 &&
           !key.act_order && device.is_cpu();
  }
  bool CanHandle(const KernelProbe& probe) const override {
    const SpecKey& key = probe.spec;
    return Serves(key, probe.device) &&
           (key.family != kIntGroupFamily ||
            (key.group > 0 && key.group % avx512vnni::kLaneChunk == 0)) &&
           probe.act.mode == ActMode::kNone && reference::CanHandleIo(probe);
  }
  void Prepare(const LinearParams& params) const override {
    avx512vnni::PackedInt4Lanes(this, params);
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const LanePack& pack = avx512vnni::PackedInt4Lanes(this, params);
    const QDType scale_dtype = params.tensor(Slot::kWeightScale).dtype();
    if (params.tensor(Slot::kWeightZero).empty()) {
      return avx512vnni::LanesGemm(Int4Lanes<false>{{}, scale_dtype}, pack, params, act, x, y);
    }
    avx512vnni::LanesGemm(Int4Lanes<true>{{}, scale_dtype}, pack, params, act, x, y);
  }
};

const KernelRegistrar kRegisterGemmIntLanesAvx512Bf16(std::make_unique<GemmIntLanesAvx512Bf16>());

}  // namespace
}  // namespace quantpath
