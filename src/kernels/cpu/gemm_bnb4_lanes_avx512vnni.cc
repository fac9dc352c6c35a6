// GemmBnb4Lanes_Avx512Bf16: bitsandbytes' nf4_block_<b> / fp4_block_<b> (b a power of two of at
// least 8 dividing K) for decode batches (M ≤ 16) on the rows-in-lanes GEMM
// (lanes_bf16_avx512vnni.h): each 16-bit lane's low nibble looked up in the family's map rounded
// to bf16 (bnb4_tables_avx512vnni.h), as GemmBnb4_Avx512Bf16's decode rows take it (one rounding
// of at most 2^-9 of each code's value), each block's sum scaled by its fp32 absmax. Prefill runs
// GemmBnb4_Avx512Bf16's tiled GEMM.
#include "src/base/avx512_intrinsics.h"

#include <bit>
#include <memory>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/bnb4_tables_avx512vnni.h"
#include "src/kernels/cpu/e2m1_quads_avx512vnni.h"
#include "src/kernels/cpu/lanes_bf16_avx512vnni.h"
#include "src/kernels/cpu/nibble_lanes_avx512vnni.h"
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/bnb_family.h"

namespace quantpath {
namespace {

using avx512vnni::LanePack;

struct Bnb4Lanes : avx512vnni::NibbleChunks, avx512vnni::NoOffsets {
  const avx512vnni::Bnb4Tables* tables;
  float output_scale = 1.0f;

  void Pairs(const uint8_t* vector, __m512i out[avx512vnni::kLanePairs]) const {
    avx512vnni::LoadNibbleQuads(vector, tables->bf16, out);
  }
  __m512 Scales(const LanePack& pack, int64_t b, int64_t g, int v) const {
    return _mm512_loadu_ps(pack.Scales(b, g, v));
  }
};

class GemmBnb4LanesAvx512Bf16 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmBnb4Lanes_Avx512Bf16"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx512Vnni); }
  int priority() const override { return kReferencePriority + 25; }
  DotUnit unit() const override { return DotUnit::kBf16Pair; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return (key.family == kNf4Family || key.family == kFp4Family) && device.is_cpu();
  }
  bool CanHandle(const KernelProbe& probe) const override {
    const int64_t block = probe.spec.group;
    return Serves(probe.spec, probe.device) && probe.m <= avx512vnni::kLanesMaxM && block >= 8 &&
           std::has_single_bit(static_cast<uint64_t>(block)) && probe.k % block == 0 &&
           probe.act.mode == ActMode::kNone && reference::CanHandleIo(probe);
  }
  void Prepare(const LinearParams& params) const override { Packed(params); }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const Bnb4Lanes w{
        {},
        {},
        params.key.family == kNf4Family ? &avx512vnni::kNf4Tables : &avx512vnni::kFp4Tables};
    avx512vnni::LanesGemm(w, Packed(params), params, act, x, y);
  }

 private:
  // The absmax of block j of row n is element (n · K + c) / b = n · K / b + j.
  const LanePack& Packed(const LinearParams& params) const {
    return params.packs.Get<LanePack>(this, [&] {
      const ParamTensor& w = params.tensor(Slot::kWeight);
      const ParamTensor& s = params.tensor(Slot::kWeightScale);
      const avx512vnni::NibbleSource source{
          w.data<uint8_t>(), w.row_bytes(), s.raw(), params.cols / params.key.group, 4,
          params.key.group};
      return std::make_unique<LanePack>(avx512vnni::PackNibbleLanes<false>(
          source, params.rows, params.cols, [](int64_t, int64_t) { return 0; }));
    });
  }
};

const KernelRegistrar kRegisterGemmBnb4LanesAvx512Bf16(std::make_unique<GemmBnb4LanesAvx512Bf16>());

}  // namespace
}  // namespace quantpath
