// GemmW8A8Int8_Avx2: the W8A8 int8 specs (int8_channel / int8_tensor with int8 activations) on
// vpmaddwd (w8a8_loops_avx2.h). X is quantized as the reference kernel quantizes it
// (int8_activations.h) and padded with zeros to whole 64-column steps; the int32 sums are exact,
// so each output is the reference's bit for bit (w8a8_output.h). W is read from the prepack the
// AVX-512 kernel reads (w8a8_pack.h).
#include <memory>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/w8a8_loops_avx2.h"
#include "src/kernels/cpu_problems.h"
#include "src/kernels/reference/int8_activations.h"
#include "src/kernels/reference/reference_gemm.h"

namespace quantpath {
namespace {

class GemmW8a8Avx2 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmW8A8Int8_Avx2"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx2); }
  int priority() const override { return kReferencePriority + 15; }
  DotUnit unit() const override { return DotUnit::kInt16Pair; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return cpu_problems::ServesW8a8Int8(key, device);
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return cpu_problems::TakesW8a8Int8(probe) && probe.k <= avx2::kInt8MaxK;
  }
  void Prepare(const LinearParams& params) const override { Packed(params); }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const reference::Int8Activations xq = reference::QuantizeInt8Activations(params, act, x);
    const cpu::PaddedInt8Rows padded = cpu::PadInt8Rows(xq, x.rows, x.cols);
    const cpu::W8a8Problem problem{&Packed(params), &padded, &xq, &params, y};
    avx2::MultiplyAll<cpu::W8a8Outputs<CpuLevel::kAvx2>>(problem, x.rows);
  }

 private:
  const cpu::W8a8Pack& Packed(const LinearParams& params) const {
    return params.packs.Get<cpu::W8a8Pack>(this, [&] {
      return std::make_unique<cpu::W8a8Pack>(
          cpu::PackW8a8(params.tensor(Slot::kWeight), avx2::kInt8BlockRows));
    });
  }
};

const KernelRegistrar kRegisterGemmW8a8Avx2(std::make_unique<GemmW8a8Avx2>());

}  // namespace
}  // namespace quantpath
