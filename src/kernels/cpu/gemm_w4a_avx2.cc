// GemmW4A4A8Int_Avx2: the mixed int4 specs (int4_channel with int4 or int8 dynamic per-token
// activations: ModelSlim W4A4_DYNAMIC / W4A8_DYNAMIC, w4a_family.h) on W8A8's vpmaddwd loops
// (w8a8_loops_avx2.h). X is quantized by the reference kernel's own function
// (QuantizeW4aActivations), W's 4-bit codes are unpacked once into W8A8's prepack (PackW4a), and
// Σ qx · (q − 8) = Σ qx · q − 8 · Σ qx is exact in int32, so each output is the reference's bit for
// bit (W4aOutputs).
#include <memory>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/w8a8_loops_avx2.h"
#include "src/kernels/cpu_problems.h"
#include "src/kernels/reference/int8_activations.h"
#include "src/kernels/reference/reference_gemm.h"

namespace quantpath {
namespace {

class GemmW4aAvx2 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmW4A4A8Int_Avx2"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx2); }
  int priority() const override { return kReferencePriority + 15; }
  DotUnit unit() const override { return DotUnit::kInt16Pair; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return cpu_problems::ServesW4a(key, device);
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return cpu_problems::TakesW4a(probe) && probe.k <= avx2::kInt8MaxK;
  }
  void Prepare(const LinearParams& params) const override { Packed(params); }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const reference::Int8Activations xq = reference::QuantizeW4aActivations(act, x);
    const cpu::PaddedInt8Rows padded = cpu::PadInt8Rows(xq, x.rows, x.cols);
    const cpu::W8a8Problem problem{&Packed(params), &padded, &xq, &params, y};
    avx2::MultiplyAll<cpu::W4aOutputs<CpuLevel::kAvx2>>(problem, x.rows);
  }

 private:
  const cpu::W8a8Pack& Packed(const LinearParams& params) const {
    return params.packs.Get<cpu::W8a8Pack>(this, [&] {
      return std::make_unique<cpu::W8a8Pack>(
          cpu::PackW4a(params.tensor(Slot::kWeight), avx2::kInt8BlockRows));
    });
  }
};

const KernelRegistrar kRegisterGemmW4aAvx2(std::make_unique<GemmW4aAvx2>());

}  // namespace
}  // namespace quantpath
