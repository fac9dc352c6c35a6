// Reference kernel of the W8A8 int8 specs (int8_channel / int8_tensor with int8 activations,
// w8a8_family.h), X and Y in fp32 or bf16:
//   1. X is quantized to int8 codes in fp32, as vLLM's scaled_int8_quant does:
//      dynamic per token  absmax = max(max |x| of the row, kActAbsMaxFloor), s_x = absmax / 127,
//                         qx = clamp(round(x · (127 / absmax)), −128, 127);
//      dynamic per token, asymmetric (vLLM's azp path), over the row's min and max (NaN left
//                         out; a constant row's range stretched to include 0, where vLLM's
//                         scale would be 0): s_x = max(max − min, kActAbsMaxFloor) / 255,
//                         z_x = round(−128 − min / s_x), qx = clamp(round(x / s_x) + z_x);
//      static             qx = clamp(round(x / s_x) + z_x, −128, 127), with the spec's s_x, z_x;
//      round = to nearest, ties to even (nearbyint, CUDA's __float2int_rn, torch.round). A NaN
//      element becomes code 0 (there is no int8 NaN).
//   2. acc[m][n] = Σ_k qx[m][k] · (q[n][k] − 128) + quant_bias[n], in 64-bit integers (exact;
//      the engines' int32 suffices for K < 2^17, but a checkpoint's quant_bias is untrusted);
//      with per-token zero points also − z_x[m] · Σ_k (q[n][k] − 128) (vLLM's azp_adj, the
//      weight's sum over K, multiplied by each token's own zero point).
//   3. y = float(acc) · (s_x · s_w[n]) + bias[n], the scale product in fp32, once per output.
// Non-goals: speed.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <vector>

#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "src/kernels/cpu_problems.h"
#include "src/kernels/reference/int8_activations.h"
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/int_family.h"
#include "src/specs/w8a8_family.h"

namespace quantpath {
namespace {

using reference::Int8Activations;
using reference::QuantizeInt8Activations;

class GemmW8a8Ref final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmW8A8Int8_Ref"; }
  CpuFeatures features() const override { return {}; }
  int priority() const override { return kReferencePriority; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return cpu_problems::ServesW8a8Int8(key, device);
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return cpu_problems::TakesW8a8Int8(probe);
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const int64_t m = x.rows;
    const int64_t n = params.rows;
    const int64_t k = params.cols;
    const ParamTensor& w = params.tensor(Slot::kWeight);
    const ParamTensor& scales = params.tensor(Slot::kWeightScale);
    const ParamTensor& quant_bias = params.tensor(Slot::kQuantBias);
    const ParamTensor& bias = params.tensor(Slot::kBias);
    assert(w.rows() == n && w.cols() == k);
    // int8_tensor holds one scale, or one per row for fused legs (w8a8_family.h).
    const bool one_scale = scales.rows() == 1;

    const Int8Activations xq = QuantizeInt8Activations(params, act, x);
    const std::vector<int8_t>& qx = xq.codes;
    const std::vector<float>& sx = xq.scale;
    const std::vector<int32_t>& zx = xq.zero;

#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t j = 0; j < n; ++j) {
      const uint8_t* codes = w.data<uint8_t>() + j * w.row_bytes();
      const float sw = LoadFloat(scales, one_scale ? 0 : j);
      const int32_t c = quant_bias.empty() ? 0 : quant_bias.data<int32_t>()[j];
      const float b = bias.empty() ? 0.0f : LoadFloat(bias, j);
      int64_t row_sum = 0;
      for (int64_t col = 0; col < k; ++col) row_sum += int64_t{codes[col]} - 128;
      for (int64_t i = 0; i < m; ++i) {
        const int8_t* xi = qx.data() + i * k;
        int64_t acc = c - int64_t{zx[i]} * row_sum;
        for (int64_t col = 0; col < k; ++col) {
          acc += int64_t{xi[col]} * (int64_t{codes[col]} - 128);
        }
        reference::StoreOutput(y, i * n + j, static_cast<float>(acc) * (sx[i] * sw) + b);
      }
    }
  }
};

const KernelRegistrar kRegisterGemmW8a8Ref(std::make_unique<GemmW8a8Ref>());

}  // namespace
}  // namespace quantpath
