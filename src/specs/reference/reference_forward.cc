// ReferenceForward (specs.h): a layer's product in double from its dequantized weights, X taken
// as its kernels take it. `run` and the MoE reference measure kernels against it.
#include <vector>

#include "quantpath/specs.h"

namespace quantpath {

std::vector<double> ReferenceForward(const ReferenceLayer& ref, const ActivationQuant& act,
                                     std::span<const double> x, int64_t m) {
  std::vector<double> scaled;
  if (!ref.input_prescale.empty()) {
    scaled.assign(x.begin(), x.end());
    for (int64_t i = 0; i < m * ref.cols; ++i) {
      scaled[i] = static_cast<float>(scaled[i] * ref.input_prescale[i % ref.cols]);
    }
    x = scaled;
  }
  const std::vector<double> xq =
      QuantizeActivationsReference(x, m, ref.cols, act, ref.input_scale, ref.input_zero_point);
  std::vector<double> y(static_cast<size_t>(m * ref.rows));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ref.rows; ++j) {
      double acc = ref.bias.empty() ? 0.0 : ref.bias[j];
      for (int64_t c = 0; c < ref.cols; ++c) {
        acc += xq[i * ref.cols + c] * ref.weight[j * ref.cols + c];
      }
      y[i * ref.rows + j] = acc;
    }
  }
  return y;
}

}  // namespace quantpath
