// GemmW16A16_Avx512Bf16: the bf16 spec with bf16 weights on the AVX-512 BF16 GEMM
// (bf16_dot_avx512vnni.h), W's rows read in place. fp16 and fp32 weights, which are not bf16
// values, stay with the AVX2 kernel.
#include <vector>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/bf16_dot_avx512vnni.h"
#include "src/kernels/cpu/bf16_rows.h"
#include "src/kernels/cpu_problems.h"

namespace quantpath {
namespace {

struct Bf16Pairs {
  const uint16_t* data;
  int64_t row_elements;
  int64_t group;  // the row: bf16 weights have no scale
  static constexpr bool kZeros = false;

  const uint16_t* Row(int64_t row) const { return data + row * row_elements; }
  __m512i Load32(int64_t row, int64_t col) const { return _mm512_loadu_si512(Row(row) + col); }
  float Scale(int64_t, int64_t) const { return 1.0f; }
  float Zero(int64_t, int64_t) const { return 0.0f; }
  float Load1(int64_t row, int64_t col) const { return avx512vnni::Bf16Value(Row(row)[col]); }
};

class GemmW16A16Avx512Bf16 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmW16A16_Avx512Bf16"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx512Vnni); }
  int priority() const override { return kReferencePriority + 20; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return cpu_problems::ServesBf16(key, device);
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return cpu_problems::TakesBf16(probe) && probe.weight == QDType::kBF16;
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const std::vector<float> xs = reference::PrepareActivations(params, act, x);
    const cpu::Bf16Rows xr = cpu::ToBf16Rows(xs, x.rows, x.cols, 0, avx512vnni::kWidth);
    const ParamTensor& w = params.tensor(Slot::kWeight);
    avx512vnni::Gemm(Bf16Pairs{w.data<uint16_t>(), w.row_bytes() / 2, params.cols}, params, xr, y);
  }
};

const KernelRegistrar kRegisterGemmW16A16Avx512Bf16(std::make_unique<GemmW16A16Avx512Bf16>());

}  // namespace
}  // namespace quantpath
