// X as bf16 rows (bf16_rows.h).
#include "src/kernels/cpu/bf16_rows.h"

#include <bit>
#include <cstddef>
#include <cstring>

#include "quantpath/numeric.h"

namespace quantpath::cpu {

Bf16Rows ToBf16Rows(const std::vector<float>& x, int64_t m, int64_t k, int64_t group, int64_t step,
                    XOrder order, PanelShape panel) {
  Bf16Rows out;
  out.k = k;
  // A float is a bf16 value where its low 16 bits are zero.
  uint32_t low_bits = 0;
  for (int64_t i = 0; i < m * k; ++i) low_bits |= std::bit_cast<uint32_t>(x[i]) & 0xFFFFu;
  out.split = low_bits != 0;
  out.rows = out.split ? 2 * m : m;
  out.bits = ParamTensor(QDType::kBF16, out.rows, k);
  uint16_t* bits = out.bits.data<uint16_t>();
  const int64_t full = k / step * step;
  std::vector<float> ordered(order == XOrder::kNatural ? 0 : static_cast<size_t>(k));
  std::vector<int64_t> source(ordered.size());
  for (size_t c = 0; c < source.size(); ++c) {
    source[c] = SourceColumn(static_cast<int64_t>(c), full, order);
  }
  std::vector<float> high(out.split ? static_cast<size_t>(k) : 0);
  for (int64_t t = 0; t < m; ++t) {
    const float* row = x.data() + t * k;
    if (order != XOrder::kNatural) {
      for (int64_t c = 0; c < k; ++c) ordered[c] = row[source[c]];
      row = ordered.data();
    }
    uint16_t* hi = bits + (out.split ? 2 * t : t) * k;
    FloatsToBf16(row, k, hi);
    if (!out.split) continue;
    // x − hi is exact in fp32; its bf16 is the low half.
    Bf16ToFloats(hi, k, high.data());
    for (int64_t c = 0; c < k; ++c) high[c] = row[c] - high[c];
    FloatsToBf16(high.data(), k, hi + k);
  }
  if (panel.rows > 0 && out.rows > 1 && full > 0) {
    out.panels = ParamTensor(QDType::kBF16, out.rows, full);
    uint16_t* panels = out.panels.data<uint16_t>();
    for (int64_t t0 = 0; t0 < out.rows; t0 += panel.rows) {
      const int64_t g = out.rows - t0 < panel.rows ? out.rows - t0 : panel.rows;
      for (int64_t c0 = 0; c0 < full; c0 += panel.cols) {
        const int64_t w = full - c0 < panel.cols ? full - c0 : panel.cols;
        for (int64_t t = 0; t < g; ++t) {
          std::memcpy(panels + t0 * full + c0 * g + t * w, bits + (t0 + t) * k + c0,
                      static_cast<size_t>(w) * 2);
        }
      }
    }
  }
  if (group <= 0) return out;
  out.runs = (full + group - 1) / group;
  out.run_sums.resize(static_cast<size_t>(out.rows * out.runs));
  std::vector<float> values(static_cast<size_t>(full));
  for (int64_t t = 0; t < out.rows; ++t) {
    Bf16ToFloats(bits + t * k, full, values.data());
    for (int64_t g = 0; g < out.runs; ++g) {
      const int64_t end = (g + 1) * group < full ? (g + 1) * group : full;
      out.run_sums[g * out.rows + t] = RunSum(values.data(), g * group, end);
    }
  }
  return out;
}

}  // namespace quantpath::cpu
