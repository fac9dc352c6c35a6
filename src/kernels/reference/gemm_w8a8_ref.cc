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
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/int_family.h"
#include "src/specs/w8a8_family.h"

namespace quantpath {
namespace {

int8_t ToCode(float v) {
  if (std::isnan(v)) return 0;
  return static_cast<int8_t>(
      std::clamp(v, static_cast<float>(kInt8Min), static_cast<float>(kInt8Max)));
}

class GemmW8a8Ref final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmW8A8Int8_Ref"; }
  CpuFeatures features() const override { return {}; }
  int priority() const override { return kReferencePriority; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return (key.family == kIntChannelFamily || key.family == kIntTensorFamily) && key.bits == 8 &&
           !key.zero_point && device.is_cpu();
  }
  bool CanHandle(const KernelProbe& probe) const override {
    const ActivationQuant& act = probe.act;
    const bool mode =
        act.mode == ActMode::kDynamicPerToken || act.mode == ActMode::kStaticPerTensor;
    return Serves(probe.spec, probe.device) && act.dtype == QDType::kINT8 && mode &&
           reference::CanHandleIo(probe);
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

    std::vector<int8_t> qx(static_cast<size_t>(m * k));
    std::vector<float> sx(static_cast<size_t>(m));
    std::vector<int32_t> zx(static_cast<size_t>(m), 0);  // per-token zero points
    for (int64_t i = 0; i < m; ++i) {
      std::vector<float> row(static_cast<size_t>(k));
      for (int64_t c = 0; c < k; ++c) {
        row[c] = x.dtype == QDType::kBF16
                     ? Bf16ToFloat(static_cast<const uint16_t*>(x.data)[i * k + c])
                     : static_cast<const float*>(x.data)[i * k + c];
      }
      if (act.mode == ActMode::kStaticPerTensor) {
        const float s = params.tensor(Slot::kInputScale).data<float>()[0];
        const ParamTensor& offset = params.tensor(Slot::kInputOffset);
        const int32_t z = offset.empty() ? 0 : offset.data<int32_t>()[0];
        sx[i] = s;
        for (int64_t c = 0; c < k; ++c) {
          qx[i * k + c] = ToCode(std::nearbyint(row[c] / s) + static_cast<float>(z));
        }
      } else if (!act.symmetric) {
        float lo = std::numeric_limits<float>::infinity();
        float hi = -lo;
        for (float v : row) {  // NaN elements take no part
          if (v < lo) lo = v;
          if (v > hi) hi = v;
        }
        if (!(hi - lo >= static_cast<float>(kActAbsMaxFloor))) {
          lo = std::min(lo, 0.0f);
          hi = std::max(hi, 0.0f);
        }
        const float range = std::max(hi - lo, static_cast<float>(kActAbsMaxFloor));
        sx[i] = range / static_cast<float>(kInt8Max - kInt8Min);
        const float z = std::nearbyint(static_cast<float>(kInt8Min) - lo / sx[i]);
        zx[i] = std::isfinite(z) ? static_cast<int32_t>(std::clamp(z, -1e9f, 1e9f)) : 0;
        for (int64_t c = 0; c < k; ++c) {
          qx[i * k + c] = ToCode(std::nearbyint(row[c] / sx[i]) + static_cast<float>(zx[i]));
        }
      } else {
        float absmax = 0.0f;
        for (float v : row) absmax = std::max(absmax, std::fabs(v));
        absmax = std::max(absmax, static_cast<float>(kActAbsMaxFloor));
        sx[i] = absmax / static_cast<float>(kInt8Max);
        const float inv = static_cast<float>(kInt8Max) / absmax;
        for (int64_t c = 0; c < k; ++c) qx[i * k + c] = ToCode(std::nearbyint(row[c] * inv));
      }
    }

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
