// The buffers the W8A8 int8 kernels read, built in portable code: W's codes as a
// prepack (row_interleave.h, 64-column steps, the last one zero-padded) with each row's Σ (q −
// 128), and X's int8 codes padded with zeros to whole steps, with each row's Σ qx.
#pragma once

#include <cstdint>
#include <vector>

#include "quantpath/specs.h"
#include "src/kernels/cpu/row_interleave.h"
#include "src/kernels/reference/int8_activations.h"

namespace quantpath::cpu {

inline constexpr int64_t kInt8Step = 64;  // columns (bytes) a vpdpbusd multiplies

struct W8a8Pack {
  RowInterleave codes;
  std::vector<int64_t> row_sums;  // Σ_k (q − 128) per row of W
};
W8a8Pack PackW8a8(const ParamTensor& w, int64_t block_rows);

struct PaddedInt8Rows {
  ParamTensor codes;  // [m, steps · kInt8Step], zeros past k
  int64_t stride = 0;
  std::vector<int32_t> sums;  // Σ_k qx per row
};
PaddedInt8Rows PadInt8Rows(const reference::Int8Activations& x, int64_t m, int64_t k);

}  // namespace quantpath::cpu
