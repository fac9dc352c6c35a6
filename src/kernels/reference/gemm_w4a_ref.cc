// Reference kernel of the mixed int4 specs (int4_channel[_zp] or int4_group_<g>[_zp] with int4 or
// int8 dynamic per-token activations, w4a_family.h), X and Y in fp32 or bf16:
//   1. each row of X is quantized in fp32 (QuantizeW4aActivations, QuantizeActRow): absmax =
//      max(max |x|, kActAbsMaxFloor), s_x = absmax / qmax, qx = clamp(round(x · (qmax / absmax)),
//      −qmax − 1, qmax), qmax 7 (int4) or 127 (int8), ties to even; a NaN becomes code 0;
//   2. acc[m][n][g] = Σ_{k in group g} qx[m][k] · (q[n][k] − z[n][g]), in 64-bit integers
//      (exact), z = 8 without zero points;
//   3. one group (channel): y = float(acc) · (s_x · s_w[n]) + bias[n], the scale product in fp32,
//      once per output; several groups: y = s_x · Σ_g s_w[n][g] · acc[g] in double, rounded once,
//      plus bias[n].
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
    const SpecKey& key = params.key;
    const int64_t m = x.rows;
    const int64_t n = params.rows;
    const int64_t k = params.cols;
    const int64_t group = IntGroupOf(key, k);
    const int64_t groups = (k + group - 1) / group;
    const ParamTensor& w = params.tensor(Slot::kWeight);
    const ParamTensor& scales = params.tensor(Slot::kWeightScale);
    const ParamTensor& zeros = params.tensor(Slot::kWeightZero);
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
      const float b = bias.empty() ? 0.0f : LoadFloat(bias, j);
      for (int64_t i = 0; i < m; ++i) {
        const int8_t* xi = qx.data() + i * k;
        double total = 0;
        float one_group = 0;
        for (int64_t g = 0; g < groups; ++g) {
          int64_t z = 8;
          if (!zeros.empty()) {
            z = key.family == kIntChannelFamily
                    ? ReadCode(zeros.data<uint8_t>(), j, 4)
                    : ReadCode(zeros.data<uint8_t>() + j * zeros.row_bytes(), g, 4);
          }
          int64_t acc = 0;
          for (int64_t col = g * group; col < k && col < (g + 1) * group; ++col) {
            acc += int64_t{xi[col]} * (static_cast<int64_t>(ReadCode(codes, col, 4)) - z);
          }
          const float sw = LoadFloat(scales, j * scales.cols() + g);
          if (groups == 1) {
            one_group = static_cast<float>(acc) * (sx[i] * sw);
          } else {
            total += static_cast<double>(sw) * static_cast<double>(acc);
          }
        }
        const float product = groups == 1 ? one_group : static_cast<float>(sx[i] * total);
        reference::StoreOutput(y, i * n + j, product + b);
      }
    }
  }
};

const KernelRegistrar kRegisterGemmW4aRef(std::make_unique<GemmW4aRef>());

}  // namespace
}  // namespace quantpath
