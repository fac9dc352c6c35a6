// X as fp32 rows in the order a kernel's loads want (x_order.h), with the per-run sums its zero
// points take off, for the AVX2 kernels that multiply on fp32 FMA. Built here, in portable code, so
// the per-level translation units only read it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "src/kernels/cpu/x_order.h"

namespace quantpath::cpu {

struct F32Rows {
  int64_t rows = 0, k = 0;
  std::vector<float> values;  // [rows, k], each full step's columns in the kernel's order
  // Where asked for (group > 0): Σ over each run of `group` columns of those before the tail (the
  // first k / step · step), [runs, rows].
  int64_t runs = 0;
  std::vector<float> run_sums;
};

// x [m, k] in fp32 (kept as the rows themselves in the natural order, not copied); `step` columns
// per load; group = 0 for no run sums (else a multiple of `step`, or k). Where `exponents` names
// one power of two per 8 positions of a step, the full steps' values at positions 8v … 8v + 7 are
// multiplied by 2^−exponents[v] (exact for values down to 2^(−126 + 24), far below any activation's
// scale; the loads that give those positions' weights times 2^exponents[v] need it), the run sums
// taken before.
F32Rows ToF32Rows(std::vector<float> x, int64_t m, int64_t k, int64_t group, int64_t step,
                  XOrder order, std::span<const int> exponents = {});

}  // namespace quantpath::cpu
