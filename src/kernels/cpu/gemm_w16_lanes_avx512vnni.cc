// GemmW16A16Lanes_Avx512Bf16: the bf16 spec with bf16 weights for decode batches (M ≤ 16) on the
// rows-in-lanes GEMM (lanes_bf16_avx512vnni.h): a chunk's 256 bytes for 16 rows are four vectors,
// vector h holding each row's columns c + 2h and c + 2h + 1 in a 32-bit lane, multiplied as they
// are; X in natural order. Prefill runs GemmW16A16_Avx512Bf16's tiled GEMM.
#include "src/base/avx512_intrinsics.h"

#include <cstring>
#include <memory>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/bf16_source_avx512vnni.h"
#include "src/kernels/cpu/lane_pack_avx512vnni.h"
#include "src/kernels/cpu/lanes_bf16_avx512vnni.h"
#include "src/kernels/cpu_problems.h"

namespace quantpath {
namespace {

using avx512vnni::kLaneBlockRows;
using avx512vnni::kLaneChunk;
using avx512vnni::LanePack;

constexpr int64_t kVectorBytes = 256;

struct Bf16Lanes {
  static constexpr int64_t kVectorBytes = ::quantpath::kVectorBytes;
  static constexpr int kChunkPosition[kLaneChunk] = {0, 1, 2, 3, 4, 5, 6, 7};
  static constexpr bool kOffsets = false;
  float output_scale = 1.0f;

  void Pairs(const uint8_t* vector, __m512i out[avx512vnni::kLanePairs]) const {
    for (int h = 0; h < avx512vnni::kLanePairs; ++h) out[h] = avx512vnni::LoadOnce(vector + h * 64);
  }
  __m512 Scales(const LanePack&, int64_t, int64_t, int) const { return _mm512_set1_ps(1.0f); }
  __m512 Offsets(const LanePack&, int64_t, int64_t, int) const { return _mm512_setzero_ps(); }
};

LanePack PackBf16Lanes(const LinearParams& params) {
  const int64_t n = params.rows, k = params.cols;
  const uint16_t* w = params.tensor(Slot::kWeight).data<uint16_t>();
  LanePack pack = LanePack::Empty(n, k, k, kVectorBytes, 0, false);
  for (int64_t b = 0; b < pack.blocks(); ++b) {
    uint16_t* block =
        reinterpret_cast<uint16_t*>(pack.codes.data<uint8_t>() + b * pack.codes.row_bytes());
    for (int64_t i = 0; i < kLaneBlockRows && b * kLaneBlockRows + i < n; ++i) {
      const int64_t row = b * kLaneBlockRows + i;
      const int64_t v = i / 16, r = i % 16;
      for (int64_t col = 0; col < k; ++col) {
        const int64_t c = col / kLaneChunk, h = col % kLaneChunk / 2, e = col % 2;
        block[((c * avx512vnni::kLaneVectors + v) * kVectorBytes + h * 64) / 2 + r * 2 + e] =
            w[row * k + col];
      }
    }
  }
  return pack;
}

class GemmW16LanesAvx512Bf16 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmW16A16Lanes_Avx512Bf16"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx512Vnni); }
  int priority() const override { return kReferencePriority + 25; }
  DotUnit unit() const override { return DotUnit::kBf16Pair; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return cpu_problems::ServesBf16(key, device);
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return cpu_problems::TakesBf16(probe) && probe.weight == QDType::kBF16 &&
           probe.m <= avx512vnni::kLanesMaxM;
  }
  void Prepare(const LinearParams& params) const override { Packed(params); }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    avx512vnni::LanesGemm(Bf16Lanes{}, Packed(params), params, act, x, y);
  }

 private:
  const LanePack& Packed(const LinearParams& params) const {
    return params.packs.Get<LanePack>(
        this, [&] { return std::make_unique<LanePack>(PackBf16Lanes(params)); });
  }
};

const KernelRegistrar kRegisterGemmW16LanesAvx512Bf16(std::make_unique<GemmW16LanesAvx512Bf16>());

}  // namespace
}  // namespace quantpath
