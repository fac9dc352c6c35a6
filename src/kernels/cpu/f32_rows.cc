// X as fp32 rows in a kernel's order (f32_rows.h).
#include "src/kernels/cpu/f32_rows.h"

#include <cmath>
#include <cstddef>
#include <utility>

namespace quantpath::cpu {

namespace {

void ScalePositions(F32Rows& rows, int64_t full, int64_t step, std::span<const int> exponents) {
  std::vector<float> factors(static_cast<size_t>(step));
  for (int64_t c = 0; c < step; ++c) {
    factors[static_cast<size_t>(c)] = std::ldexp(1.0f, -exponents[static_cast<size_t>(c / 8)]);
  }
  for (int64_t t = 0; t < rows.rows; ++t) {
    float* row = rows.values.data() + t * rows.k;
    for (int64_t c = 0; c < full; c += step) {
      for (int64_t i = 0; i < step; ++i) row[c + i] *= factors[static_cast<size_t>(i)];
    }
  }
}

}  // namespace

F32Rows ToF32Rows(std::vector<float> x, int64_t m, int64_t k, int64_t group, int64_t step,
                  XOrder order, std::span<const int> exponents) {
  F32Rows out;
  out.rows = m;
  out.k = k;
  const int64_t full = k / step * step;
  if (order == XOrder::kNatural) {
    out.values = std::move(x);
  } else {
    // Every full step is arranged alike: the offsets of one, then the tail in place.
    std::vector<int64_t> offsets(static_cast<size_t>(step));
    for (int64_t i = 0; i < step; ++i)
      offsets[static_cast<size_t>(i)] = SourceColumn(i, step, order);
    out.values.resize(static_cast<size_t>(m * k));
    for (int64_t t = 0; t < m; ++t) {
      const float* from = x.data() + t * k;
      float* to = out.values.data() + t * k;
      for (int64_t c = 0; c < full; c += step) {
        for (int64_t i = 0; i < step; ++i) to[c + i] = from[c + offsets[static_cast<size_t>(i)]];
      }
      for (int64_t c = full; c < k; ++c) to[c] = from[c];
    }
  }
  if (group > 0) {
    out.runs = (full + group - 1) / group;
    out.run_sums.resize(static_cast<size_t>(m * out.runs));
    for (int64_t t = 0; t < m; ++t) {
      for (int64_t g = 0; g < out.runs; ++g) {
        const int64_t end = (g + 1) * group < full ? (g + 1) * group : full;
        out.run_sums[g * m + t] = RunSum(out.values.data() + t * k, g * group, end);
      }
    }
  }
  if (!exponents.empty()) ScalePositions(out, full, step, exponents);
  return out;
}

}  // namespace quantpath::cpu
