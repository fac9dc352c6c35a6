// A kernel prepack (ParamPacks): W's codes with the rows of each block side by side, step by step,
// so that a kernel reading a block of rows at once reads one address range from start to end
// (this CPU's prefetchers keep far fewer lines in flight for several interleaved streams than for
// one). Built here, in portable code; the per-level kernels only read it.
#pragma once

#include <cstdint>

#include "quantpath/specs.h"

namespace quantpath::cpu {

// Block b holds rows [b·block_rows, …) (the last block the rows left); within it, step s of row r
// (step_bytes bytes: the row's bytes [s·step_bytes, (s + 1)·step_bytes)) sits at
//   block_offset(b) + (s · rows_in_block + r) · step_bytes,  block_offset(b) =
//   b·block_rows·steps·step_bytes.
// The first `steps` steps of each row are kept: kernels read the columns past them from W itself,
// or ask for the row's last partial step too, which keeps the row's bytes and zeros after them.
struct RowInterleave {
  ParamTensor bytes;  // one row of bytes (kINT8), 64-byte aligned as the loads want
  int64_t rows = 0, block_rows = 0, steps = 0, step_bytes = 0;
};

RowInterleave InterleaveRows(const ParamTensor& w, int64_t block_rows, int64_t step_bytes,
                             int64_t steps);

}  // namespace quantpath::cpu
