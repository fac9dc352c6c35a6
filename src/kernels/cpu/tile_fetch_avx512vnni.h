// The lines of W the tiled GEMMs convert next (bf16_tiles_avx512vnni.h),
// fetched into L2 a share at a time while X passes over the tile before: read only when the
// conversion reached them, each block's lines waited on DRAM (a tenth of the prefill's time).
//
// Included only by *_avx512vnni.cc files, which are all compiled with the same flags.
#pragma once

#include "src/base/avx512_intrinsics.h"

#include <algorithm>
#include <cstdint>

#include "src/kernels/cpu/row_interleave.h"

namespace quantpath::avx512vnni {

class TileFetch {
 public:
  static constexpr int kMaxBlocks = 16;

  TileFetch() = default;
  // Rows [n0, n0 + tile_rows) ∩ [0, n_rows), steps [step0, step0 + steps) of `packed` (blocks of
  // `block_rows` rows, the last one shorter), in `shares` shares.
  TileFetch(const cpu::RowInterleave& packed, int64_t block_rows, int64_t tile_rows, int64_t n_rows,
            int64_t n0, int64_t step0, int64_t steps, int64_t shares) {
    int64_t total = 0;
    for (int64_t first = n0; first < std::min(n_rows, n0 + tile_rows) && blocks_ < kMaxBlocks;
         first += block_rows) {
      const int64_t rows = std::min(block_rows, n_rows - first);
      start_[blocks_] = reinterpret_cast<const char*>(packed.bytes.data<uint8_t>()) +
                        (first * packed.steps + step0 * rows) * packed.step_bytes;
      lines_[blocks_] = steps * rows * packed.step_bytes / 64;
      total += lines_[blocks_++];
    }
    per_share_ = shares > 0 ? (total + shares - 1) / shares : total;
  }
  void Next() {
    for (int64_t count = per_share_; count > 0 && block_ < blocks_; --count) {
      _mm_prefetch(start_[block_] + line_ * 64, _MM_HINT_T1);
      if (++line_ == lines_[block_]) line_ = 0, ++block_;
    }
  }

 private:
  const char* start_[kMaxBlocks] = {};
  int64_t lines_[kMaxBlocks] = {};
  int blocks_ = 0, block_ = 0;
  int64_t line_ = 0, per_share_ = 0;
};

}  // namespace quantpath::avx512vnni
