// X as fp32 rows in a kernel's order (f32_rows.h).
#include "src/kernels/cpu/f32_rows.h"

#include <cstddef>
#include <utility>

namespace quantpath::cpu {

F32Rows ToF32Rows(std::vector<float> x, int64_t m, int64_t k, int64_t group, int64_t step,
                  XOrder order) {
  F32Rows out;
  out.rows = m;
  out.k = k;
  const int64_t full = k / step * step;
  if (order == XOrder::kNatural) {
    out.values = std::move(x);
  } else {
    out.values.resize(static_cast<size_t>(m * k));
    std::vector<int64_t> source(static_cast<size_t>(k));
    for (int64_t c = 0; c < k; ++c) source[c] = SourceColumn(c, full, order);
    for (int64_t t = 0; t < m; ++t) {
      for (int64_t c = 0; c < k; ++c) out.values[t * k + c] = x[t * k + source[c]];
    }
  }
  if (group <= 0) return out;
  out.runs = (full + group - 1) / group;
  out.run_sums.resize(static_cast<size_t>(m * out.runs));
  for (int64_t t = 0; t < m; ++t) {
    for (int64_t g = 0; g < out.runs; ++g) {
      const int64_t end = (g + 1) * group < full ? (g + 1) * group : full;
      out.run_sums[g * m + t] = RunSum(out.values.data() + t * k, g * group, end);
    }
  }
  return out;
}

}  // namespace quantpath::cpu
