// Reference kernel of the mixed int4 specs (int4_channel with int4 or int8 dynamic per-token
// activations, w4a_family.h), X and Y in fp32 or bf16:
//   1. each row of X is quantized in fp32 (QuantizeW4aActivations, QuantizeActRow): absmax =
//   max(max |x|,
//      kActAbsMaxFloor), s_x = absmax / qmax, qx = clamp(round(x · (qmax / absmax)),
//      −qmax − 1, qmax), qmax 7 (int4) or 127 (int8), ties to even; a NaN becomes code 0;
//   2. acc[m][n] = Σ_k qx[m][k] · (q[n][k] − 8), in 64-bit integers (exact);
//   3. y = float(acc) · (s_x · s_w[n]) + bias[n], the scale product in fp32, once per output.
// Non-goals: speed.
#include <cassert>
#include <vector>

#include "quantpath/kernels.h"
#include "src/kernels/cpu_problems.h"
#include "src/kernels/reference/int8_activations.h"
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/int_family.h"

namespace quantpath {
namespace {

class GemmW4aRef final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmW4A4A8Int_Ref"; }
  CpuFeatures features() const override { return {}; }
  int priority() const override { return kReferencePriority; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return cpu_problems::ServesW4a(key, device);
  }
  bool CanHandle(const KernelProbe& probe) const override { return cpu_problems::TakesW4a(probe); }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const int64_t m = x.rows;
    const int64_t n = params.rows;
    const int64_t k = params.cols;
    const ParamTensor& w = params.tensor(Slot::kWeight);
    const ParamTensor& scales = params.tensor(Slot::kWeightScale);
    const ParamTensor& bias = params.tensor(Slot::kBias);
    assert(w.rows() == n && w.cols() == k);
    const reference::Int8Activations xq = reference::QuantizeW4aActivations(act, x);
    const std::vector<int8_t>& qx = xq.codes;
    const std::vector<float>& sx = xq.scale;

#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t j = 0; j < n; ++j) {
      const uint8_t* codes = w.data<uint8_t>() + j * w.row_bytes();
      const float sw = LoadFloat(scales, j);
      const float b = bias.empty() ? 0.0f : LoadFloat(bias, j);
      for (int64_t i = 0; i < m; ++i) {
        const int8_t* xi = qx.data() + i * k;
        int64_t acc = 0;
        for (int64_t col = 0; col < k; ++col) {
          acc += int64_t{xi[col]} * (static_cast<int64_t>(ReadCode(codes, col, 4)) - 8);
        }
        reference::StoreOutput(y, i * n + j, static_cast<float>(acc) * (sx[i] * sw) + b);
      }
    }
  }
};

const KernelRegistrar kRegisterGemmW4aRef(std::make_unique<GemmW4aRef>());

}  // namespace
}  // namespace quantpath
