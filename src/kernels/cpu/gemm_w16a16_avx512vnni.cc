// GemmW16A16_Avx512Bf16: the bf16 spec with bf16 weights on the AVX-512 BF16 GEMM
// (bf16_dot_avx512vnni.h). fp16 and fp32 weights, which are not bf16
// values, stay with the AVX2 kernel.
#include <vector>

#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "src/kernels/cpu/bf16_dot_avx512vnni.h"
#include "src/kernels/cpu/bf16_rows.h"
#include "src/kernels/cpu_problems.h"

namespace quantpath {
namespace {

// W's rows: 64 columns (two vectors) a step.
struct Bf16Pairs {
  const uint16_t* data;
  int64_t row_elements;
  int64_t group;  // the row: bf16 weights have no scale
  static constexpr bool kZeros = false;
  static constexpr int64_t kStep = 64;
  static constexpr int64_t kStepBytes = 128;
  static constexpr cpu::XOrder kXOrder = cpu::XOrder::kNatural;

  void Load(const uint8_t* p, __m512i out[2]) const {
    out[0] = _mm512_loadu_si512(p);
    out[1] = _mm512_loadu_si512(p + 64);
  }
  float Scale(int64_t, int64_t) const { return 1.0f; }
  float Zero(int64_t, int64_t) const { return 0.0f; }
  float Load1(int64_t row, int64_t col) const {
    return Bf16ToFloat(data[row * row_elements + col]);
  }
};

class GemmW16A16Avx512Bf16 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmW16A16_Avx512Bf16"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx512Vnni); }
  int priority() const override { return kReferencePriority + 20; }
  DotUnit unit() const override { return DotUnit::kBf16Pair; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return cpu_problems::ServesBf16(key, device);
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return cpu_problems::TakesBf16(probe) && probe.weight == QDType::kBF16;
  }
  void Prepare(const LinearParams& params) const override {
    avx512vnni::Packed<Bf16Pairs>(this, params);
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const std::vector<float> xs = reference::PrepareActivations(params, act, x);
    const ParamTensor& w = params.tensor(Slot::kWeight);
    avx512vnni::Gemm(Bf16Pairs{w.data<uint16_t>(), w.row_bytes() / 2, params.cols},
                     avx512vnni::Packed<Bf16Pairs>(this, params), params, xs, x.rows, y);
  }
};

const KernelRegistrar kRegisterGemmW16A16Avx512Bf16(std::make_unique<GemmW16A16Avx512Bf16>());

}  // namespace
}  // namespace quantpath
