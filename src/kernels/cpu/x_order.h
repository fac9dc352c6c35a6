// How a kernel's loads arrange X's columns within each full step, and the per-run sums of X that
// kernels with zero points take off once per run. Portable code, shared by the bf16 rows of the
// AVX-512 kernels (bf16_rows.h) and the fp32 rows of the AVX2 ones (f32_rows.h).
#pragma once

#include <cstdint>

namespace quantpath::cpu {

// How X's columns are arranged within each full step of a kernel's loads:
//   kNatural       in order
//   kNibbleQuads   per 128 columns, position 32s + j holds column 4j + s (s < 4, j < 32): the
//                  order in which 16-bit words of packed 4-bit codes give up their four nibbles
//   kNibbleOctets  per 64 columns, position 8s + j holds column 8j + s (s < 8, j < 8): the order
//                  in which 32-bit words of packed 4-bit codes give up their eight nibbles
//   kNibbleBytes   per 64 columns, position 8v + j holds column 2(8(v % 4) + j) + v / 4 (v < 8,
//                  j < 8): the low nibbles of 32 bytes of packed codes eight bytes at a time, then
//                  their high nibbles
enum class XOrder : uint8_t { kNatural, kNibbleQuads, kNibbleOctets, kNibbleBytes };

// The column of X whose value sits at `position` (past `full`, the full steps, columns keep
// their place).
int64_t SourceColumn(int64_t position, int64_t full, XOrder order);

// Σ values[begin, end) in fp64, eight sums side by side (one chain of dependent adds cost as
// much as the GEMM at M = 8), rounded once to fp32.
float RunSum(const float* values, int64_t begin, int64_t end);

}  // namespace quantpath::cpu
