// X as bf16 rows (bf16_rows.h).
#include "src/kernels/cpu/bf16_rows.h"

#include <cstddef>

#include "quantpath/numeric.h"

namespace quantpath::cpu {

namespace {

// The column of X whose value sits at `position` (kNibbleQuads: within the full steps).
int64_t SourceColumn(int64_t position, int64_t full, XOrder order) {
  if (order == XOrder::kNatural || position >= full) return position;
  const int64_t base = position / 128 * 128, offset = position % 128;
  return base + offset % 32 * 4 + offset / 32;
}

}  // namespace

Bf16Rows ToBf16Rows(const std::vector<float>& x, int64_t m, int64_t k, int64_t group, int64_t step,
                    XOrder order) {
  Bf16Rows out;
  out.k = k;
  for (int64_t i = 0; i < m * k && !out.split; ++i) {
    out.split = Bf16ToFloat(FloatToBf16(x[i])) != x[i];
  }
  out.rows = out.split ? 2 * m : m;
  out.bits = ParamTensor(QDType::kBF16, out.rows, k);
  uint16_t* bits = out.bits.data<uint16_t>();
  const int64_t full = k / step * step;
  for (int64_t t = 0; t < m; ++t) {
    for (int64_t c = 0; c < k; ++c) {
      const float value = x[t * k + SourceColumn(c, full, order)];
      const uint16_t hi = FloatToBf16(value);
      if (!out.split) {
        bits[t * k + c] = hi;
        continue;
      }
      bits[2 * t * k + c] = hi;
      bits[(2 * t + 1) * k + c] = FloatToBf16(value - Bf16ToFloat(hi));
    }
  }
  if (group <= 0) return out;
  out.runs = (full + group - 1) / group;
  out.run_sums.resize(static_cast<size_t>(out.rows * out.runs));
  for (int64_t t = 0; t < out.rows; ++t) {
    for (int64_t g = 0; g < out.runs; ++g) {
      double sum = 0;
      const int64_t end = (g + 1) * group < full ? (g + 1) * group : full;
      for (int64_t c = g * group; c < end; ++c) sum += Bf16ToFloat(bits[t * k + c]);
      out.run_sums[t * out.runs + g] = static_cast<float>(sum);
    }
  }
  return out;
}

}  // namespace quantpath::cpu
