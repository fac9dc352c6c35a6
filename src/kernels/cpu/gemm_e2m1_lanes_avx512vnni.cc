// The E2M1 weight specs for decode batches (M ≤ 16) on the rows-in-lanes GEMM
// (lanes_bf16_avx512vnni.h), each 16-bit lane's low nibble looked up in a table of the codes'
// bf16 values (e2m1_quads_avx512vnni.h: vpermw reads 5 index bits, the table holds the 16 values
// twice), a scale per 16 rows and block:
//   GemmMxfp4Lanes_Avx512Bf16  mxfp4_block_32, weight-only and with MX activations: E8M0 scales,
//                              2^(e − 127) (mx_codes.h)
//   GemmNvfp4Lanes_Avx512Bf16  nvfp4_block_16_linear, W4A16 and W4A4: E4M3 scales kept as bf16
//                              values, the global scale once on the total
// Prefill runs the tiled GEMM of GemmMxfp4_Avx512Bf16 and GemmNvfp4_Avx512Bf16.
#include "src/base/avx512_intrinsics.h"

#include <memory>
#include <vector>

#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "src/kernels/cpu/e2m1_quads_avx512vnni.h"
#include "src/kernels/cpu/lanes_bf16_avx512vnni.h"
#include "src/kernels/cpu/mx_codes.h"
#include "src/kernels/cpu/nibble_lanes_avx512vnni.h"
#include "src/kernels/cpu_problems.h"
#include "src/specs/mx_family.h"
#include "src/specs/nvfp4_family.h"

namespace quantpath {
namespace {

using avx512vnni::LanePack;

// 16 bytes of one-byte scales at `at`, one to each lane.
__m512i ScaleBytes(const std::byte* at) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(at)));
}

// E2M1 codes as bf16 values; no offset.
struct E2M1Pairs : avx512vnni::NibbleChunks, avx512vnni::NoOffsets {
  void Pairs(const uint8_t* vector, __m512i out[avx512vnni::kLanePairs]) const {
    avx512vnni::LoadNibbleQuads(vector, avx512vnni::kE2M1.bits, out);
  }
};

struct Mxfp4Lanes : E2M1Pairs {
  float output_scale = 1.0f;
  __m512 Scales(const LanePack& pack, int64_t b, int64_t g, int v) const {
    const __m512i e = ScaleBytes(pack.Scales(b, g, v));
    return _mm512_castsi512_ps(_mm512_mask_mov_epi32(_mm512_slli_epi32(e, 23),
                                                     _mm512_testn_epi32_mask(e, e),
                                                     _mm512_set1_epi32(cpu::kE8M0Zero)));
  }
};

// NVFP4's E4M3 block scales are kept as bf16 values (every E4M3 value is one): widening 16 of
// them is then a shift, where decoding E4M3 in the lanes every 16 columns bound a decode row on one
// thread at half the memory's speed; the extra byte a block costs 1/9 more bytes read.
struct Nvfp4Lanes : E2M1Pairs {
  float output_scale;  // the global scale
  __m512 Scales(const LanePack& pack, int64_t b, int64_t g, int v) const {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pack.Scales(b, g, v)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
  }
};

// The prepack of an E2M1 layer whose one-byte scales cover `group` columns; `e4m3_as_bf16`: each
// scale kept as its bf16 value.
const LanePack& PackedE2M1Lanes(const LinearKernel* kernel, const LinearParams& params,
                                int64_t group, bool e4m3_as_bf16) {
  return params.packs.Get<LanePack>(kernel, [&] {
    const ParamTensor& w = params.tensor(Slot::kWeight);
    const ParamTensor& s = params.tensor(Slot::kWeightScale);
    std::vector<uint16_t> bf16;
    if (e4m3_as_bf16) {
      bf16.resize(static_cast<size_t>(s.elements()));
      for (int64_t i = 0; i < s.elements(); ++i) {
        bf16[i] = FloatToBf16(Fp8E4M3ToFloat(s.data<uint8_t>()[i]));
      }
    }
    const avx512vnni::NibbleSource source{
        w.data<uint8_t>(),
        w.row_bytes(),
        e4m3_as_bf16 ? reinterpret_cast<const std::byte*>(bf16.data()) : s.raw(),
        s.cols(),
        e4m3_as_bf16 ? 2 : 1,
        group};
    return std::make_unique<LanePack>(avx512vnni::PackNibbleLanes<false>(
        source, params.rows, params.cols, [](int64_t, int64_t) { return 0; }));
  });
}

class GemmMxfp4LanesAvx512Bf16 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmMxfp4Lanes_Avx512Bf16"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx512Vnni); }
  int priority() const override { return kReferencePriority + 25; }
  DotUnit unit() const override { return DotUnit::kBf16Pair; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return key.family == kMxfp4Family && device.is_cpu();
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return Serves(probe.spec, probe.device) && probe.spec.group == kMxGroup &&
           probe.m <= avx512vnni::kLanesMaxM && cpu_problems::TakesMx(probe);
  }
  void Prepare(const LinearParams& params) const override {
    PackedE2M1Lanes(this, params, kMxGroup, false);
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    avx512vnni::LanesGemm(Mxfp4Lanes{}, PackedE2M1Lanes(this, params, kMxGroup, false), params, act,
                          x, y);
  }
};

class GemmNvfp4LanesAvx512Bf16 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmNvfp4Lanes_Avx512Bf16"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx512Vnni); }
  int priority() const override { return kReferencePriority + 25; }
  DotUnit unit() const override { return DotUnit::kBf16Pair; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return key.family == kNvfp4Family && key.scales == ScaleVariant::kLinear && device.is_cpu();
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return Serves(probe.spec, probe.device) && probe.spec.group == kNvfp4Group &&
           probe.m <= avx512vnni::kLanesMaxM && cpu_problems::TakesNvfp4(probe);
  }
  void Prepare(const LinearParams& params) const override {
    PackedE2M1Lanes(this, params, kNvfp4Group, true);
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const Nvfp4Lanes w{{}, params.tensor(Slot::kWeightGlobalScale).data<float>()[0]};
    avx512vnni::LanesGemm(w, PackedE2M1Lanes(this, params, kNvfp4Group, true), params, act, x, y);
  }
};

const KernelRegistrar kRegisterGemmMxfp4LanesAvx512Bf16(
    std::make_unique<GemmMxfp4LanesAvx512Bf16>());
const KernelRegistrar kRegisterGemmNvfp4LanesAvx512Bf16(
    std::make_unique<GemmNvfp4LanesAvx512Bf16>());

}  // namespace
}  // namespace quantpath
