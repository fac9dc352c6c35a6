// NVFP4 (nvfp4_block_16_linear) and MXFP4 (mxfp4_block_32) weights with int8 activations per
// token (--int8-activations) on the nibble GEMM (nibble_dot_avx2.h):
//   GemmNvfp4A8_Avx2, GemmMxfp4A8_Avx2
// Each half of a step is looked up (vpshufb) as twice its E2M1 values, integers in [−12, 12];
// vpmaddubsw takes their magnitudes as its unsigned operand and X's codes with their signs
// (vpsignb, exact: the codes lie in [−127, 127]), so each pair is |2w| · ±x = 2w · x, at most 2 ·
// 12 · 127 (no saturation). A run is one step, whose int32 lanes are scaled by their blocks' scales
// (e2m1_octets_avx2.h); the values' factor 2 comes off once per output. The last step of a row
// whose K ends inside it gets scales for its blocks past K of 0 (their products are 0 anyway),
// so that nothing is read past a row's scales.
//
// Decode batches only (M < kTiledRows): each pair costs a vpsignb more than int4's, and from 16
// rows of X on the fp32 tiled GEMM of GemmNvfp4_Avx2 / GemmMxfp4_Avx2 on X rounded to the same
// codes is faster (4096², one thread, M = 512: 63–64 against 38–40 GOP/s).
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/e2m1_octets_avx2.h"
#include "src/kernels/cpu/f32_tiles_avx2.h"
#include "src/kernels/cpu/nibble_dot_avx2.h"
#include "src/kernels/cpu_problems.h"
#include "src/kernels/reference/int8_activations.h"

namespace quantpath {
namespace {

// Source: Nvfp4Octets or Mxfp4Octets, whose Scale(row, step) reads `kBlocks` one-byte scales.
template <typename Source, int kBlocks>
struct E2M1Nibbles {
  static constexpr int64_t kPairSteps = 1;
  static constexpr bool kZeros = false;
  static constexpr bool kExactOneRun = false;
  static constexpr float kValueScale = 0.5f;
  Source w;
  static constexpr int64_t kRunSteps = 1;  // a run is a step
  static constexpr int64_t run_steps = kRunSteps;
  int64_t full_steps;  // steps whose blocks all lie inside K

  struct Halves {
    __m256i low, high, low_size, high_size;
  };
  static Halves Split(const uint8_t* step) {
    const avx2::E2M1Bytes twice = avx2::E2M1Octets::Words(step);
    return {twice.low, twice.high, _mm256_abs_epi8(twice.low), _mm256_abs_epi8(twice.high)};
  }
  static __m256i Pairs(const Halves& h, __m256i even, __m256i odd) {
    return _mm256_add_epi16(_mm256_maddubs_epi16(h.low_size, _mm256_sign_epi8(even, h.low)),
                            _mm256_maddubs_epi16(h.high_size, _mm256_sign_epi8(odd, h.high)));
  }
  __m256 RunScales(int64_t row, int64_t g) const {
    if (g < full_steps) return w.Scale(row, g);
    uint8_t scales[kBlocks] = {};
    const int64_t have = w.scale_cols - g * kBlocks;
    std::memcpy(scales, w.scales + row * w.scale_cols + g * kBlocks, static_cast<size_t>(have));
    Source last = w;
    last.scales = scales;
    last.scale_cols = 0;
    return last.Scale(0, 0);
  }
};

template <typename Source, int kBlocks>
class GemmE2M1A8Avx2 final : public LinearKernel {
 public:
  using Takes = bool (*)(const KernelProbe&);
  GemmE2M1A8Avx2(std::string_view name, SpecFamily family, Takes takes)
      : name_(name), family_(family), takes_(takes) {}

  std::string_view name() const override { return name_; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx2); }
  int priority() const override { return kReferencePriority + 20; }
  DotUnit unit() const override { return DotUnit::kInt4Pair; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return key.family == family_ &&
           (key.family != kNvfp4Family || key.scales == ScaleVariant::kLinear) && device.is_cpu();
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return Serves(probe.spec, probe.device) && probe.spec.group * kBlocks == avx2::kNibbleStep &&
           probe.m < avx2::kTiledRows && takes_(probe);
  }
  void Prepare(const LinearParams& params) const override { Packed(params); }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const reference::Int8Activations xq = reference::QuantizeW4aActivations(act, x);
    const avx2::NibbleX ordered = avx2::OrderX(xq, x.rows, x.cols, x.cols);
    const E2M1Nibbles<Source, kBlocks> codes{Source::Of(params), params.cols / avx2::kNibbleStep};
    avx2::NibbleGemm(avx2::NibbleProblem<E2M1Nibbles<Source, kBlocks>>{codes, &Packed(params),
                                                                       &ordered, &params, y});
  }

 private:
  const cpu::RowInterleave& Packed(const LinearParams& params) const {
    return params.packs.Get<cpu::RowInterleave>(
        this, [&] { return std::make_unique<cpu::RowInterleave>(avx2::NibbleSteps(params)); });
  }

  std::string_view name_;
  SpecFamily family_;
  Takes takes_;
};

const KernelRegistrar kRegisterGemmNvfp4A8Avx2(
    std::make_unique<GemmE2M1A8Avx2<avx2::Nvfp4Octets, 4>>("GemmNvfp4A8_Avx2", kNvfp4Family,
                                                           &cpu_problems::TakesNvfp4Int8));
const KernelRegistrar kRegisterGemmMxfp4A8Avx2(
    std::make_unique<GemmE2M1A8Avx2<avx2::Mxfp4Octets, 2>>("GemmMxfp4A8_Avx2", kMxfp4Family,
                                                           &cpu_problems::TakesMxInt8));

}  // namespace
}  // namespace quantpath
