// X as rows of bf16 for dot products on bf16 pairs (vdpbf16ps, AMX-BF16): each row of X, or, where
// some value of X is not a bf16 value, each row's high and low bf16 halves (x ≈ hi + lo to 2^-17
// of |x|) as two rows whose outputs the kernel adds. Built here, in portable code, so the per-level
// translation units only read it.
#pragma once

#include <cstdint>
#include <vector>

#include "quantpath/specs.h"
#include "src/kernels/cpu/x_order.h"

namespace quantpath::cpu {

struct Bf16Rows {
  int64_t rows = 0;  // m, or 2m when split: row 2t is the high half of X row t, 2t + 1 the low
  int64_t k = 0;
  bool split = false;
  ParamTensor bits;  // bf16 [rows, k], 64-byte aligned
  // Where asked for (group > 0): per row, Σ over each run of `group` columns of those before
  // the tail (the first k / step · step), in fp32 from fp64 sums, for the zero points a kernel
  // subtracts once per run: [runs, rows], so that a run's sums for rows side by side are one
  // vector.
  int64_t runs = 0;
  std::vector<float> run_sums;
  // Where asked for and rows > 1: the first k / step · step columns again, in panels a tiled
  // kernel reads from one address range each: the rows in groups of `panel.rows` (the last group
  // the rows left, g of them), each group's columns in chunks of `panel.cols` (the last chunk
  // shorter, w wide), each chunk's g rows side by side. Column c of row t sits at
  //   t0 · full + c0 · g + (t − t0) · w + (c − c0),  t0 = t / panel.rows · panel.rows,
  //   c0 = c / panel.cols · panel.cols, full = k / step · step.
  ParamTensor panels;
  // Where X holds fp8 codes (XScales): their scales, x_runs per row, each over x_group columns.
  const float* x_scales = nullptr;
  int64_t x_runs = 0, x_group = 0;
};

// The scales of X's codes, where a kernel multiplies codes and applies their scales per run:
// x = code · scales[row · runs + c / group]. Empty: X holds values.
struct XScales {
  const float* scales = nullptr;
  int64_t runs = 0, group = 0;
};

struct PanelShape {
  int64_t rows = 0, cols = 0;  // 0: no panels
};

// x [m, k] in fp32; `step` columns per load (128 for kNibbleQuads); group = 0 for no run sums
// (else a multiple of `step`, or k).
Bf16Rows ToBf16Rows(const std::vector<float>& x, int64_t m, int64_t k, int64_t group, int64_t step,
                    XOrder order = XOrder::kNatural, PanelShape panel = {});

}  // namespace quantpath::cpu
