// W's rows interleaved block by block (row_interleave.h).
#include "src/kernels/cpu/row_interleave.h"

#include <algorithm>
#include <cstring>

namespace quantpath::cpu {

RowInterleave InterleaveRows(const ParamTensor& w, int64_t block_rows, int64_t step_bytes,
                             int64_t steps) {
  RowInterleave out;
  out.rows = w.rows();
  out.block_rows = block_rows;
  out.steps = steps;
  out.step_bytes = step_bytes;
  out.bytes = ParamTensor(QDType::kINT8, 1, out.rows * steps * step_bytes);
  const auto* src = reinterpret_cast<const uint8_t*>(w.raw());
  for (int64_t first = 0; first < out.rows; first += block_rows) {
    const int64_t in_block = out.rows - first < block_rows ? out.rows - first : block_rows;
    uint8_t* block = out.bytes.data<uint8_t>() + first * steps * step_bytes;
    for (int64_t s = 0; s < steps; ++s) {
      // A step past the row's end keeps the row's last bytes and zeros (the buffer's).
      const int64_t bytes = std::min(step_bytes, w.row_bytes() - s * step_bytes);
      for (int64_t r = 0; r < in_block && bytes > 0; ++r) {
        std::memcpy(block + (s * in_block + r) * step_bytes,
                    src + (first + r) * w.row_bytes() + s * step_bytes, static_cast<size_t>(bytes));
      }
    }
  }
  return out;
}

}  // namespace quantpath::cpu
