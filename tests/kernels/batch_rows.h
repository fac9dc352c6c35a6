// What the AVX2 kernels promise of a small batch (f32_dot_avx2.h): below the tiled GEMM's rows
// (16), each row of X gives the same output bits alone as among the others, whatever its
// neighbours. Activations quantized per tensor depend on every row, so they are left out.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "quantpath/cpu_features.h"
#include "quantpath/kernels.h"
#include "quantpath/numeric.h"

namespace quantpath::testing {

inline constexpr int64_t kAvx2TiledRows = 16;

inline bool PromisesBatchBits(const LinearKernel& kernel, const ActivationQuant& act, int64_t m) {
  return kernel.features() == CpuLevelRequires(CpuLevel::kAvx2) && m >= 2 &&
         m < kAvx2TiledRows && act.mode != ActMode::kDynamicPerTensor &&
         act.mode != ActMode::kStaticPerTensor;
}

// `x` holds m rows in x's dtype (fp32 or bf16); Y in fp32.
inline void ExpectRowsAloneAsInBatch(const LinearKernel& kernel, const LinearParams& params,
                                     const ActivationQuant& act, const ConstMatrix& x) {
  const int64_t n = params.rows, k = x.cols;
  const size_t row_bytes = static_cast<size_t>(k) * (x.dtype == QDType::kBF16 ? 2 : 4);
  std::vector<float> batch(static_cast<size_t>(x.rows * n));
  kernel.Apply(params, act, x, MutableMatrix{QDType::kFP32, batch.data(), x.rows, n});
  for (int64_t t = 0; t < x.rows; ++t) {
    const void* row = static_cast<const uint8_t*>(x.data) + t * row_bytes;
    std::vector<float> alone(static_cast<size_t>(n));
    kernel.Apply(params, act, ConstMatrix{x.dtype, row, 1, k},
                 MutableMatrix{QDType::kFP32, alone.data(), 1, n});
    EXPECT_EQ(std::memcmp(alone.data(), batch.data() + t * n, alone.size() * sizeof(float)), 0)
        << kernel.name() << ": row " << t << " of " << x.rows;
  }
}

}  // namespace quantpath::testing
