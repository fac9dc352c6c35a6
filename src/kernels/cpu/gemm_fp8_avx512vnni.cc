// The fp8 specs on the AVX-512 BF16 GEMM (bf16_dot_avx512vnni.h), e4m3 codes as bf16 values
// (fp8_bf16_avx512vnni.h):
//   GemmFp8Row_Avx512Bf16    fp8_per_tensor and fp8_per_channel (one fp32 scale per output row)
//   GemmFp8Block_Avx512Bf16  fp8_block_<bn>_<bk> with bk a multiple of 64 (a step)
#include <optional>
#include <vector>

#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "src/kernels/cpu/bf16_dot_avx512vnni.h"
#include "src/kernels/cpu/bf16_rows.h"
#include "src/kernels/cpu/fp8_bf16_avx512vnni.h"
#include "src/kernels/cpu/fp8_codes.h"
#include "src/kernels/cpu_problems.h"
#include "src/specs/fp8_family.h"

namespace quantpath {
namespace {

// The layouts (fp8_codes.h), 64 columns a step.
template <typename Codes>
struct Steps : Codes {
  static constexpr bool kZeros = false;
  static constexpr int64_t kStep = 64;
  static constexpr int64_t kStepBytes = 64;
  static constexpr cpu::XOrder kXOrder = cpu::XOrder::kNatural;
  void Load(const uint8_t* p, __m512i out[2]) const {
    const __m512i codes = avx512vnni::LoadOnce(p);
    out[0] = avx512vnni::Fp8ToBf16(_mm512_castsi512_si256(codes));
    out[1] = avx512vnni::Fp8ToBf16(_mm512_extracti64x4_epi64(codes, 1));
  }
  float Scale(int64_t row, int64_t g) const { return this->RunScale(row, g); }
  float Zero(int64_t, int64_t) const { return 0.0f; }
};
using RowCodes = cpu::Fp8RowCodes<CpuLevel::kAvx512Vnni>;
using BlockCodes = cpu::Fp8BlockCodes<CpuLevel::kAvx512Vnni>;
using ScaledRows = Steps<RowCodes>;
using ScaledBlocks = Steps<BlockCodes>;

// Y for `w` (its prepack `packed`). Where X is rounded to e4m3 with one scale per run of columns
// that each run of W's scales lies within, X's e4m3 values are multiplied as they are (bf16
// values) and its scale joins W's per run; otherwise X's values q · s go in (split into two bf16
// halves, twice the dot products).
template <typename Source>
void Fp8Gemm(const Source& w, const cpu::RowInterleave& packed, const LinearParams& params,
             const ActivationQuant& act, const ConstMatrix& x, const MutableMatrix& y) {
  const std::optional<reference::Fp8Codes> codes = reference::PrepareFp8Codes(params, act, x);
  const bool runs_nest =
      codes && (codes->runs == 1 || (w.group <= codes->group && codes->group % w.group == 0));
  if (!runs_nest) {
    return avx512vnni::Gemm(w, packed, params, reference::PrepareActivations(params, act, x),
                            x.rows, y);
  }
  avx512vnni::Gemm(w, packed, params, codes->values, x.rows, y,
                   {codes->scales.data(), codes->runs, codes->group});
}

class GemmFp8RowAvx512Bf16 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmFp8Row_Avx512Bf16"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx512Vnni); }
  int priority() const override { return kReferencePriority + 20; }
  DotUnit unit() const override { return DotUnit::kBf16Pair; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return cpu_problems::ServesFp8Row(key, device);
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return cpu_problems::TakesFp8Row(probe);
  }
  void Prepare(const LinearParams& params) const override {
    avx512vnni::Packed<ScaledRows>(this, params);
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    Fp8Gemm(ScaledRows{RowCodes::Of(params)}, avx512vnni::Packed<ScaledRows>(this, params), params,
            act, x, y);
  }
};

class GemmFp8BlockAvx512Bf16 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmFp8Block_Avx512Bf16"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx512Vnni); }
  int priority() const override { return kReferencePriority + 20; }
  DotUnit unit() const override { return DotUnit::kBf16Pair; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return cpu_problems::ServesFp8Block(key, device);
  }
  // A step of 64 columns shares a scale.
  bool CanHandle(const KernelProbe& probe) const override {
    return cpu_problems::TakesFp8Block(probe) && probe.spec.block[1] % ScaledBlocks::kStep == 0;
  }
  void Prepare(const LinearParams& params) const override {
    avx512vnni::Packed<ScaledBlocks>(this, params);
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const std::vector<int64_t> grid_row =
        Fp8BlockGridRows({params.key.block[0], params.key.block[1]}, params);
    Fp8Gemm(ScaledBlocks{BlockCodes::Of(params, grid_row)},
            avx512vnni::Packed<ScaledBlocks>(this, params), params, act, x, y);
  }
};

const KernelRegistrar kRegisterGemmFp8RowAvx512Bf16(std::make_unique<GemmFp8RowAvx512Bf16>());
const KernelRegistrar kRegisterGemmFp8BlockAvx512Bf16(std::make_unique<GemmFp8BlockAvx512Bf16>());

}  // namespace
}  // namespace quantpath
