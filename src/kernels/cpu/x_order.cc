// X's column orders and run sums (x_order.h).
#include "src/kernels/cpu/x_order.h"

namespace quantpath::cpu {

int64_t SourceColumn(int64_t position, int64_t full, XOrder order) {
  if (order == XOrder::kNatural || position >= full) return position;
  if (order == XOrder::kNibbleQuads) {
    const int64_t base = position / 128 * 128, offset = position % 128;
    return base + offset % 32 * 4 + offset / 32;
  }
  const int64_t base = position / 64 * 64, offset = position % 64;
  if (order == XOrder::kNibbleBytes) {
    const int64_t v = offset / 8, j = offset % 8;
    return base + 2 * (8 * (v % 4) + j) + v / 4;
  }
  return base + offset % 8 * 8 + offset / 8;
}

float RunSum(const float* values, int64_t begin, int64_t end) {
  double sums[8] = {};
  int64_t c = begin;
  for (; c + 8 <= end; c += 8) {
    for (int i = 0; i < 8; ++i) sums[i] += values[c + i];
  }
  for (; c < end; ++c) sums[0] += values[c];
  double sum = 0;
  for (double part : sums) sum += part;
  return static_cast<float>(sum);
}

}  // namespace quantpath::cpu
