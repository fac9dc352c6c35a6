// GemmIntW16_Avx512Bf16: the 4- and 8-bit integer weight-only specs (int<b>_group_<g>[_zp] with g a
// multiple of 32, int<b>_channel[_zp], int<b>_tensor; act-order stays with the reference kernel)
// on the AVX-512 BF16 GEMM (bf16_dot_avx512vnni.h), from int_family.h's layout. The codes
// themselves (0 … 255) are the bf16 values multiplied; the zero point, or 2^(b−1) without one, is
// taken off per run as z · Σ x. 16 bytes of 4-bit codes widen to 16 lanes, each lane's two nibbles
// become the indexes of its two 16-bit halves into a table of bf16 0 … 15; 8-bit codes go
// through fp32.
#include <bit>
#include <vector>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/bf16_dot_avx512vnni.h"
#include "src/kernels/cpu/bf16_rows.h"
#include "src/kernels/cpu/int_codes.h"
#include "src/specs/int_family.h"

namespace quantpath {
namespace {

// bf16 bits of i mod 16 at index i (vpermw reads 5 index bits; a lane's low half carries bit 0
// of its high nibble in bit 4).
struct NibbleTable {
  alignas(64) uint16_t bits[32] = {};
  constexpr NibbleTable() {
    for (int i = 0; i < 32; ++i) bits[i] = std::bit_cast<uint32_t>(static_cast<float>(i % 16)) >> 16;
  }
};
constexpr NibbleTable kNibbles;

template <int kBits, bool kZero>
struct IntPairs : cpu::IntCodes<CpuLevel::kAvx512Vnni, kBits, kZero> {
  static constexpr bool kZeros = true;
  __m512i Load32(int64_t row, int64_t col) const {
    const uint8_t* p = this->codes + row * this->row_bytes;
    if constexpr (kBits == 4) {
      const __m512i bytes =
          _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + col / 2)));
      const __m512i nibbles = _mm512_or_si512(bytes, _mm512_slli_epi32(bytes, 12));
      return _mm512_permutexvar_epi16(nibbles, _mm512_load_si512(kNibbles.bits));
    } else {
      const __m512 low = _mm512_cvtepi32_ps(
          _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + col))));
      const __m512 high = _mm512_cvtepi32_ps(
          _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + col + 16))));
      return (__m512i)_mm512_cvtne2ps_pbh(high, low);
    }
  }
};

template <int kBits, bool kZero>
void Run(const LinearParams& params, const cpu::Bf16Rows& xr, const MutableMatrix& y) {
  const IntPairs<kBits, kZero> w{cpu::IntCodes<CpuLevel::kAvx512Vnni, kBits, kZero>::Of(params)};
  avx512vnni::Gemm(w, params, xr, y);
}

class GemmIntAvx512Bf16 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmIntW16_Avx512Bf16"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx512Vnni); }
  int priority() const override { return kReferencePriority + 20; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return IsIntFamily(key.family) && (key.bits == 4 || key.bits == 8) && !key.act_order &&
           device.is_cpu();
  }
  bool CanHandle(const KernelProbe& probe) const override {
    const SpecKey& key = probe.spec;
    return Serves(key, probe.device) &&
           (key.family != kIntGroupFamily ||
            (key.group % avx512vnni::kWidth == 0 &&
             std::has_single_bit(static_cast<uint64_t>(key.group)))) &&
           probe.act.mode == ActMode::kNone && reference::CanHandleIo(probe);
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const std::vector<float> xs = reference::PrepareActivations(params, act, x);
    const int64_t group = params.key.family == kIntGroupFamily ? params.key.group : params.cols;
    const cpu::Bf16Rows xr = cpu::ToBf16Rows(xs, x.rows, x.cols, group, avx512vnni::kWidth);
    const bool zero = !params.tensor(Slot::kWeightZero).empty();
    if (params.key.bits == 4) {
      return zero ? Run<4, true>(params, xr, y) : Run<4, false>(params, xr, y);
    }
    return zero ? Run<8, true>(params, xr, y) : Run<8, false>(params, xr, y);
  }
};

const KernelRegistrar kRegisterGemmIntAvx512Bf16(std::make_unique<GemmIntAvx512Bf16>());

}  // namespace
}  // namespace quantpath
