// The skeleton every reference kernel shares: read X into fp32, quantize it as the spec's
// activation mode says, then for each output row n dequantize W's row n to fp32 and take fp32 dot
// products with every row of X, add the bias and store Y.
//
// Goals: obviously correct, the oracle of the fast kernels. Non-goals: speed beyond threading the
// N loop.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "quantpath/kernels.h"
// The kinds' fp32 roundings (QuantizeNvfp4Activations, QuantizeMxActivations, …), which the
// kernels' tests call as the reference kernels' own.
#include "src/specs/activations/activation_rounding.h"

namespace quantpath::reference {

// True for the dtypes reference kernels read and write (fp32, bf16).
bool IsIoDtype(QDType dtype);
// Whether the probe's shape, dtypes and device suit a reference kernel.
bool CanHandleIo(const KernelProbe& probe);

// X [m, k] → fp32, multiplied by params.pre_quant_scale where the layer has one, quantized as the
// kind of `act` rounds it (ActivationKindRow::RoundFloats: values are q × scale, as the products
// see them), its static inputs from params' input slots.
std::vector<float> PrepareActivations(const LinearParams& params, const ActivationQuant& act,
                                      const ConstMatrix& x);

// X as PrepareActivations makes it where the kind of `act` rounds it to e4m3 with one scale per
// row and run of columns (ActivationKindRow::RunsOf: fp8 dynamic per token, per tensor or per
// group; static per tensor), the e4m3 values and the scales kept apart: X' = values[r · k + c] ·
// scales[r · runs + c / group], group = k where one scale covers a row. nullopt for any other
// kind.
struct Fp8Codes {
  std::vector<float> values;
  std::vector<float> scales;
  int64_t group = 0, runs = 0;
};
std::optional<Fp8Codes> PrepareFp8Codes(const LinearParams& params, const ActivationQuant& act,
                                        const ConstMatrix& x);

// Runs the skeleton. `dequantize_row(n, row)` writes W's row n as fp32 into row[0..k).
template <typename DequantizeRow>
void GemmRowwise(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
                 const MutableMatrix& y, DequantizeRow dequantize_row);

// Stores y[i] (fp32 or bf16).
void StoreOutput(const MutableMatrix& y, int64_t i, float value);

template <typename DequantizeRow>
void GemmRowwise(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
                 const MutableMatrix& y, DequantizeRow dequantize_row) {
  const int64_t m = x.rows;
  const int64_t n = params.rows;
  const int64_t k = params.cols;
  const std::vector<float> xq = PrepareActivations(params, act, x);
  const ParamTensor& bias = params.tensor(Slot::kBias);
  // Without OpenMP (QUANTPATH_OPENMP=OFF) the loop runs on one thread, with the same results.
#ifdef _OPENMP
#pragma omp parallel
#endif
  {
    std::vector<float> row(static_cast<size_t>(k));
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
    for (int64_t j = 0; j < n; ++j) {
      dequantize_row(j, row.data());
      const float b = bias.empty() ? 0.0f : LoadFloat(bias, j);
      for (int64_t i = 0; i < m; ++i) {
        const float* xi = xq.data() + i * k;
        float acc = 0.0f;
        for (int64_t c = 0; c < k; ++c) acc += xi[c] * row[c];
        StoreOutput(y, i * n + j, acc + b);
      }
    }
  }
}

}  // namespace quantpath::reference
