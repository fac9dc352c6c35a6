// GemmIntW16_Avx2: the 4- and 8-bit integer weight-only specs (int<b>_group_<g>[_zp] with g a
// power of two of at least 8, int<b>_channel[_zp], int<b>_tensor; act-order stays with the
// reference kernel) on the AVX2 row-block GEMM (row_blocks_avx2.h), from int_family.h's layout:
// eight 4-bit codes are one 32-bit word shifted per lane, eight 8-bit codes one zero-extension;
// each group's (q − z) · x is summed before its scale multiplies it.
#include <vector>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/int_codes.h"
#include "src/kernels/cpu/row_blocks_avx2.h"
#include "src/specs/int_family.h"

namespace quantpath {
namespace {

// IntCodes plus eight codes at a time as fp32, less the zero.
template <int kBits, bool kZero>
struct IntRows : cpu::IntCodes<CpuLevel::kAvx2, kBits, kZero> {
  __m256 Load8Codes(int64_t row, int64_t col, __m256i zero) const {
    const uint8_t* p = this->codes + row * this->row_bytes;
    __m256i q;
    if constexpr (kBits == 4) {
      uint32_t word;
      __builtin_memcpy(&word, p + col / 2, 4);
      const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
      q = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(word)), shifts),
                           _mm256_set1_epi32(0xF));
    } else {
      q = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + col)));
    }
    return _mm256_cvtepi32_ps(_mm256_sub_epi32(q, zero));
  }
};

template <int kBits, bool kZero>
void Run(const LinearParams& params, const float* x, int64_t m, const MutableMatrix& y) {
  const IntRows<kBits, kZero> rows{cpu::IntCodes<CpuLevel::kAvx2, kBits, kZero>::Of(params)};
  avx2::RowBlockGemm(rows, params, x, m, y);
}

class GemmIntAvx2 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmIntW16_Avx2"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx2); }
  int priority() const override { return kReferencePriority + 10; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return IsIntFamily(key.family) && (key.bits == 4 || key.bits == 8) && !key.act_order &&
           device.is_cpu();
  }
  bool CanHandle(const KernelProbe& probe) const override {
    const SpecKey& key = probe.spec;
    return Serves(key, probe.device) &&
           (key.family != kIntGroupFamily ||
            (key.group >= 8 && std::has_single_bit(static_cast<uint64_t>(key.group)))) &&
           probe.act.mode == ActMode::kNone && reference::CanHandleIo(probe);
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const std::vector<float> xs = reference::PrepareActivations(params, act, x);
    const bool zero = !params.tensor(Slot::kWeightZero).empty();
    if (params.key.bits == 4) {
      return zero ? Run<4, true>(params, xs.data(), x.rows, y)
                  : Run<4, false>(params, xs.data(), x.rows, y);
    }
    return zero ? Run<8, true>(params, xs.data(), x.rows, y)
                : Run<8, false>(params, xs.data(), x.rows, y);
  }
};

const KernelRegistrar kRegisterGemmIntAvx2(std::make_unique<GemmIntAvx2>());

}  // namespace
}  // namespace quantpath
