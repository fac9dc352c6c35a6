// The fp8 e4m3 families (fp8_per_tensor, fp8_per_channel, fp8_block_<bn>_<bk>): identities and
// layouts, for the spec, its kernels and tests.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "quantpath/specs.h"

namespace quantpath {

inline constexpr SpecFamily kFp8PerTensorFamily{"fp8_per_tensor"};
inline constexpr SpecFamily kFp8PerChannelFamily{"fp8_per_channel"};
inline constexpr SpecFamily kFp8BlockFamily{"fp8_block"};

inline constexpr SpecKey Fp8BlockKey(int64_t block_n, int64_t block_k) {
  SpecKey key{kFp8BlockFamily};
  key.block = {block_n, block_k};
  return key;
}
// The activation modes the fp8 kernels run: X as it is (weight-only), or rounded to symmetric
// e4m3 per token, per tensor, per 1 × group (group > 0) or by the static input scale.
inline bool Fp8KernelTakes(const ActivationQuant& act) {
  if (act.mode == ActMode::kNone) return true;
  return act.dtype == QDType::kFP8E4M3 && act.symmetric &&
         (act.mode != ActMode::kDynamicGroup || act.group_size > 0);
}

inline constexpr SpecKey kFp8PerTensorKey{kFp8PerTensorFamily};
inline constexpr SpecKey kFp8PerChannelKey{kFp8PerChannelFamily};

// fp8 e4m3fn element (OCP): bit 7 sign, bits 6..3 exponent (bias 7), bits 2..0 mantissa;
// S.0000.MMM are subnormals M × 2^-9; S.1111.111 (0x7F / 0xFF) is NaN; there is no infinity and
// the largest finite value is S.1111.110 = ±448. 8 bits per weight.

// fp8_per_tensor / fp8_per_channel: W [N, K] fp8 + S [N, 1] fp32, one scale per output row
// (8 + 32 / K bits per weight). Per-tensor checkpoint scales are broadcast to the rows of their
// leg after loading; the spec_id stays fp8_per_tensor.
struct Fp8RowScaledLayout {
  static constexpr int64_t kScaleBytes = 4;
  constexpr int64_t ScaleCount(int64_t rows) const { return rows; }
  constexpr int64_t BytesFor(int64_t rows, int64_t cols) const {
    return rows * cols + ScaleCount(rows) * kScaleBytes;
  }
};
static_assert(Fp8RowScaledLayout{}.BytesFor(4, 8) == 32 + 16);

// fp8_block_<bn>_<bk>: W [N, K] fp8 (bytes, row-major) + S fp32, one grid per fused leg (one leg
// when not fused), the legs' grids stacked in leg order: leg l of r_l rows (this rank's) has
// ceil(r_l / bn) grid rows of ceil(K / bk) scales, starting at grid row
// sum_{m < l} ceil(r_m / bn). Its cell [i][j] scales the leg's rows [i·bn, (i+1)·bn) and columns
// [j·bk, (j+1)·bk), clipped at the leg's last row and at K. So W[n][c] = e4m3(w[n][c]) ×
// S[g_l + (n − o_l) / bn][c / bk] for n in leg l (o_l its first row, g_l its first grid row);
// 8 + 32 / (bn·bk) bits per weight, plus the partial block rows of legs that are not multiples
// of bn. Why one grid per leg: checkpoints store one per leg (q/k/v of 128 + 64 + 64 rows with
// 128-row blocks), and vLLM's BlockQuantScaleParameter concatenates them the same way; a shared
// grid cannot hold a block row that straddles two legs. Legs that are multiples of bn (all but
// the last) give exactly the shared grid of ceil(N / bn) rows.
struct Fp8BlockLayout {
  static constexpr int64_t kScaleBytes = 4;
  int64_t block_n = 128;
  int64_t block_k = 128;
  constexpr int64_t ScaleRows(int64_t rows) const { return (rows + block_n - 1) / block_n; }
  constexpr int64_t ScaleCols(int64_t cols) const { return (cols + block_k - 1) / block_k; }
  // Grid rows of legs of `leg_rows` rows each.
  constexpr int64_t ScaleRowsOfLegs(std::span<const int64_t> leg_rows) const {
    int64_t grid_rows = 0;
    for (int64_t rows : leg_rows) grid_rows += ScaleRows(rows);
    return grid_rows;
  }
  constexpr int64_t BytesFor(int64_t rows, int64_t cols) const {
    return rows * cols + ScaleRows(rows) * ScaleCols(cols) * kScaleBytes;
  }
  constexpr int64_t BytesForLegs(std::span<const int64_t> leg_rows, int64_t cols) const {
    int64_t rows = 0;
    for (int64_t r : leg_rows) rows += r;
    return rows * cols + ScaleRowsOfLegs(leg_rows) * ScaleCols(cols) * kScaleBytes;
  }
};
// Per row of `params` (an fp8_block layer), the row of its scale grid: legs keep grids of their own
// (parameters built by hand may list no legs: one leg).
std::vector<int64_t> Fp8BlockGridRows(const Fp8BlockLayout& layout, const LinearParams& params);

// DESIGN.md's fused_qkv_a_proj: [168, 256] = 43008 fp8 bytes + 2 × 2 blocks × 4 bytes.
static_assert(Fp8BlockLayout{128, 128}.BytesFor(168, 256) == 43024);
// q/k/v of 128 + 64 + 64 rows, K 128: 3 grid rows (a shared grid would have 2).
static_assert([] {
  constexpr int64_t kLegs[] = {128, 64, 64};
  return Fp8BlockLayout{128, 128}.BytesForLegs(kLegs, 128);
}() == 256 * 128 + 3 * 4);

}  // namespace quantpath
