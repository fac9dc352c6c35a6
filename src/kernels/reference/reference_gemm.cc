// Activation handling shared by the reference kernels.
#include "src/kernels/reference/reference_gemm.h"

#include <algorithm>
#include <optional>

#include "quantpath/activation_kinds.h"
#include "quantpath/numeric.h"

namespace quantpath::reference {
namespace {

// X [m, k] → fp32, multiplied by params.pre_quant_scale where the layer has one.
std::vector<float> ToFloats(const LinearParams& params, const ConstMatrix& x) {
  const int64_t m = x.rows;
  const int64_t k = x.cols;
  std::vector<float> xs(static_cast<size_t>(m * k));
  if (x.dtype == QDType::kBF16) {
    Bf16ToFloats(static_cast<const uint16_t*>(x.data), m * k, xs.data());
  } else {
    std::copy_n(static_cast<const float*>(x.data), m * k, xs.data());
  }
  // AWQ's input prescale (pre_quant_scale) multiplies X before it is quantized.
  if (const ParamTensor& prescale = params.tensor(Slot::kPreQuantScale); !prescale.empty()) {
    for (int64_t i = 0; i < m * k; ++i) xs[i] *= LoadFloat(prescale, i % k);
  }
  return xs;
}

}  // namespace

bool IsIoDtype(QDType dtype) { return dtype == QDType::kFP32 || dtype == QDType::kBF16; }

bool CanHandleIo(const KernelProbe& probe) {
  return probe.device.is_cpu() && IsIoDtype(probe.in) && IsIoDtype(probe.out) && probe.m > 0 &&
         probe.n > 0 && probe.k > 0;
}

std::vector<float> PrepareActivations(const LinearParams& params, const ActivationQuant& act,
                                      const ConstMatrix& x) {
  std::vector<float> xs = ToFloats(params, x);
  ActivationKindOf(act).RoundFloats(&xs, x.rows, x.cols, act, params);
  return xs;
}

std::optional<Fp8Codes> PrepareFp8Codes(const LinearParams& params, const ActivationQuant& act,
                                        const ConstMatrix& x) {
  const std::optional<E4m3Runs> runs = ActivationKindOf(act).RunsOf(act, x.cols, params);
  if (!runs) return std::nullopt;
  Fp8Codes out;
  out.values = ToFloats(params, x);
  out.scales = RoundToE4m3Runs(&out.values, x.rows, x.cols, *runs);
  out.group = runs->group;
  out.runs = (x.cols + runs->group - 1) / runs->group;
  return out;
}

void StoreOutput(const MutableMatrix& y, int64_t i, float value) {
  if (y.dtype == QDType::kBF16) {
    static_cast<uint16_t*>(y.data)[i] = FloatToBf16(value);
  } else {
    static_cast<float*>(y.data)[i] = value;
  }
}

}  // namespace quantpath::reference
