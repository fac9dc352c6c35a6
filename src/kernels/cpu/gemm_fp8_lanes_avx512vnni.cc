// GemmFp8Lanes_Avx512Bf16: the fp8 weight-only specs (fp8_per_tensor, fp8_per_channel,
// fp8_block_<bn>_<bk> with bk a multiple of 8) for decode batches (M ≤ 16) on the rows-in-lanes
// GEMM (lanes_bf16_avx512vnni.h). A chunk's 128 bytes for 16 rows are four halves of 32, half h
// holding each row's columns c + 2h and c + 2h + 1 side by side, so that widening a half's e4m3
// codes to bf16 (fp8_bf16_avx512vnni.h) gives a row's pair in each 32-bit lane; X in natural order.
// Each run's fp32 scale (the row's, or the block's) is kept beside the block's codes. Prefill and
// fp8 activations run GemmFp8Row_Avx512Bf16 and GemmFp8Block_Avx512Bf16.
#include "src/base/avx512_intrinsics.h"

#include <memory>
#include <vector>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/fp8_bf16_avx512vnni.h"
#include "src/kernels/cpu/fp8_codes.h"
#include "src/kernels/cpu/lane_pack_avx512vnni.h"
#include "src/kernels/cpu/lanes_bf16_avx512vnni.h"
#include "src/kernels/cpu_problems.h"
#include "src/specs/fp8_family.h"

namespace quantpath {
namespace {

using avx512vnni::kLaneBlockRows;
using avx512vnni::kLaneChunk;
using avx512vnni::LanePack;

constexpr int64_t kVectorBytes = 128;
constexpr int64_t kHalfBytes = 32;

struct Fp8Lanes {
  static constexpr int64_t kVectorBytes = ::quantpath::kVectorBytes;
  static constexpr int kChunkPosition[kLaneChunk] = {0, 1, 2, 3, 4, 5, 6, 7};
  static constexpr bool kOffsets = false;
  float output_scale = 1.0f;

  void Pairs(const uint8_t* vector, __m512i out[avx512vnni::kLanePairs]) const {
    for (int h = 0; h < avx512vnni::kLanePairs; ++h) {
      out[h] = avx512vnni::Fp8ToBf16(
          _mm256_load_si256(reinterpret_cast<const __m256i*>(vector + h * kHalfBytes)));
    }
  }
  __m512 Scales(const LanePack& pack, int64_t b, int64_t g, int v) const {
    return _mm512_loadu_ps(pack.Scales(b, g, v));
  }
  __m512 Offsets(const LanePack&, int64_t, int64_t, int) const { return _mm512_setzero_ps(); }
};

// W's codes and each run's scale (`scale(row, g)`, runs of `group` columns) in the lanes' layout.
template <typename ScaleOf>
LanePack PackFp8Lanes(const LinearParams& params, int64_t group, ScaleOf scale) {
  const int64_t n = params.rows, k = params.cols;
  const uint8_t* codes = params.tensor(Slot::kWeight).data<uint8_t>();
  LanePack pack = LanePack::Empty(n, k, group, kVectorBytes, sizeof(float), false);
  for (int64_t b = 0; b < pack.blocks(); ++b) {
    uint8_t* block = pack.codes.data<uint8_t>() + b * pack.codes.row_bytes();
    for (int64_t i = 0; i < kLaneBlockRows && b * kLaneBlockRows + i < n; ++i) {
      const int64_t row = b * kLaneBlockRows + i;
      const int64_t v = i / 16, r = i % 16;
      for (int64_t col = 0; col < k; ++col) {
        const int64_t c = col / kLaneChunk, h = col % kLaneChunk / 2, e = col % 2;
        block[(c * avx512vnni::kLaneVectors + v) * kVectorBytes + h * kHalfBytes + r * 2 + e] =
            codes[row * k + col];
      }
      for (int64_t g = 0; g < pack.groups; ++g) {
        const float s = scale(row, g);
        __builtin_memcpy(pack.ScaleAt(b, g, i), &s, sizeof s);
      }
    }
  }
  return pack;
}

class GemmFp8LanesAvx512Bf16 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmFp8Lanes_Avx512Bf16"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx512Vnni); }
  int priority() const override { return kReferencePriority + 25; }
  DotUnit unit() const override { return DotUnit::kBf16Pair; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return cpu_problems::ServesFp8Row(key, device) || cpu_problems::ServesFp8Block(key, device);
  }
  bool CanHandle(const KernelProbe& probe) const override {
    const bool takes =
        probe.spec.family == kFp8BlockFamily
            ? cpu_problems::TakesFp8Block(probe) && probe.spec.block[1] % kLaneChunk == 0
            : cpu_problems::TakesFp8Row(probe);
    return takes && probe.m <= avx512vnni::kLanesMaxM && probe.act.mode == ActMode::kNone;
  }
  void Prepare(const LinearParams& params) const override { Packed(params); }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    avx512vnni::LanesGemm(Fp8Lanes{}, Packed(params), params, act, x, y);
  }

 private:
  const LanePack& Packed(const LinearParams& params) const {
    return params.packs.Get<LanePack>(this, [&] {
      if (params.key.family != kFp8BlockFamily) {
        const auto codes = cpu::Fp8RowCodes<CpuLevel::kAvx512Vnni>::Of(params);
        return std::make_unique<LanePack>(PackFp8Lanes(
            params, params.cols, [&](int64_t row, int64_t g) { return codes.RunScale(row, g); }));
      }
      const std::vector<int64_t> grid_row =
          Fp8BlockGridRows({params.key.block[0], params.key.block[1]}, params);
      const auto codes = cpu::Fp8BlockCodes<CpuLevel::kAvx512Vnni>::Of(params, grid_row);
      return std::make_unique<LanePack>(
          PackFp8Lanes(params, params.key.block[1],
                       [&](int64_t row, int64_t g) { return codes.RunScale(row, g); }));
    });
  }
};

const KernelRegistrar kRegisterGemmFp8LanesAvx512Bf16(std::make_unique<GemmFp8LanesAvx512Bf16>());

}  // namespace
}  // namespace quantpath
