// PackW8a8 and PadInt8Rows (w8a8_pack.h).
#include "src/kernels/cpu/w8a8_pack.h"

#include <cstring>

namespace quantpath::cpu {

W8a8Pack PackW8a8(const ParamTensor& w, int64_t block_rows) {
  W8a8Pack pack;
  const int64_t steps = (w.row_bytes() + kInt8Step - 1) / kInt8Step;
  pack.codes = InterleaveRows(w, block_rows, kInt8Step, steps);
  pack.row_sums.assign(static_cast<size_t>(w.rows()), 0);
  for (int64_t r = 0; r < w.rows(); ++r) {
    const uint8_t* q = w.data<uint8_t>() + r * w.row_bytes();
    int64_t sum = 0;
    for (int64_t c = 0; c < w.cols(); ++c) sum += int64_t{q[c]} - 128;
    pack.row_sums[r] = sum;
  }
  return pack;
}

PaddedInt8Rows PadInt8Rows(const reference::Int8Activations& x, int64_t m, int64_t k) {
  PaddedInt8Rows out;
  out.stride = (k + kInt8Step - 1) / kInt8Step * kInt8Step;
  out.codes = ParamTensor(QDType::kINT8, m, out.stride);
  out.sums.assign(static_cast<size_t>(m), 0);
  for (int64_t t = 0; t < m; ++t) {
    std::memcpy(out.codes.data<int8_t>() + t * out.stride, x.codes.data() + t * k,
                static_cast<size_t>(k));
    int32_t sum = 0;
    for (int64_t c = 0; c < k; ++c) sum += x.codes[t * k + c];
    out.sums[t] = sum;
  }
  return out;
}

}  // namespace quantpath::cpu
