// The GEMM of the prepacked AVX2 kernels (f32_dot_avx2.h) from kTiledRows rows of X: W is
// converted once per tile of 16 rows × 256 columns into fp32 weights, scale and zero point folded
// in, laid out column by column (16 rows of W side by side, through 8 × 8 transposes), and 5 rows
// of X multiply a tile as broadcasts against its two vectors: 10 accumulators, two weight vectors
// and a broadcast, 7 loads per 10 FMAs. Each thread takes whole columns of tiles (16 rows of W
// through all of K) and keeps their sums for each row of a block of X in a buffer.
//
// The folded weight is the reference's dequantized value, rounded once as it rounds it; the sums
// run in another order than the decode paths', so a row's output may differ in its last bits
// between a batch of fewer than kTiledRows rows and one of more.
//
// Included only by *_avx2.cc files, which are all compiled with the same flags.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <vector>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/f32_rows.h"
#include "src/kernels/cpu/f32_source_avx2.h"
#include "src/kernels/cpu/row_interleave.h"
#include "src/kernels/reference/reference_gemm.h"

namespace quantpath::avx2 {

// Rows of X from which W is tiled: from 16 rows on the tiles ran faster than the row blocks of
// f32_dot_avx2.h for every Source measured (4096², one thread: int4 group 128 at 16 / 32 / 48
// rows 43 → 56, 38 → 67, 40 → 72 GFLOP/s; fp8 block 41 → 50, 45 → 64, 42 → 71), below it not
// for all (fp8 block at 4 and 8 rows slower).
inline constexpr int64_t kTiledRows = 16;
inline constexpr int64_t kTileN = 16;        // rows of W per tile: two vectors of outputs
inline constexpr int64_t kTileK = 256;       // columns per tile (positions of X's order)
inline constexpr int kMicroRows = 5;         // rows of X per pass over a tile
inline constexpr int64_t kXBlockRows = 240;  // rows of X per pass over all of W

struct WeightTile {
  alignas(32) float w[kTileK][kTileN];  // w[c][r]: row n0 + r of W, column k0 + c
};
struct TileSums {
  alignas(32) float v[kTileN];  // one row of X against the 16 rows of a tile
};

// The 8 × 8 square v transposed in place: v[j] becomes column j (lane i of it, lane j of v[i]).
inline void Transpose8(__m256 v[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
  const __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
  const __m256 t4 = _mm256_unpacklo_ps(v[4], v[5]), t5 = _mm256_unpackhi_ps(v[4], v[5]);
  const __m256 t6 = _mm256_unpacklo_ps(v[6], v[7]), t7 = _mm256_unpackhi_ps(v[6], v[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  v[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  v[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  v[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  v[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  v[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  v[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  v[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  v[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// Rows [n0, n0 + 16) of W (zeros past N), full-step columns [k0, k0 + width), as dequantized
// weights column by column: 8 rows at a time, each row's step converted and scaled into `rows`,
// then each 8 × 8 square of them transposed into the tile.
template <StepSource S>
void ConvertTile(const S& w, const cpu::RowInterleave& packed, int64_t n0, int64_t k0,
                 int64_t width, WeightTile* tile) {
  constexpr int V = kVectors<S>;
  alignas(32) float rows[8][S::kStep];
  for (int64_t half = 0; half < kTileN; half += 8) {
    for (int64_t c = 0; c < width; c += S::kStep) {
      const int64_t step = (k0 + c) / S::kStep;
      for (int i = 0; i < 8; ++i) {
        const int64_t n = n0 + half + i;
        if (n >= packed.rows) {
          for (int v = 0; v < V; ++v) _mm256_store_ps(rows[i] + 8 * v, _mm256_setzero_ps());
          continue;
        }
        const int64_t first = n / kBlockRows * kBlockRows;
        const int64_t in_block =
            packed.rows - first < kBlockRows ? packed.rows - first : kBlockRows;
        const uint8_t* p = packed.bytes.data<uint8_t>() + first * packed.steps * packed.step_bytes +
                           (step * in_block + (n - first)) * S::kStepBytes;
        __m256 codes[V];
        LoadStep(w, p, codes);
        const int64_t g = (k0 + c) / w.group;  // a step lies in one run, or is one (lane scales)
        const __m256 scale = ScaleVector(w, n, g);
        const __m256 zero = _mm256_set1_ps(S::kZeros ? w.Zero(n, g) : 0.0f);
        for (int v = 0; v < V; ++v) {
          if constexpr (!LoadExponents<S>().empty()) {
            codes[v] = _mm256_mul_ps(codes[v], _mm256_set1_ps(TwoToThe(-S::kLoadExponents[v])));
          }
          _mm256_store_ps(rows[i] + 8 * v, _mm256_mul_ps(_mm256_sub_ps(codes[v], zero), scale));
        }
      }
      for (int v = 0; v < V; ++v) {
        __m256 square[8];
        for (int i = 0; i < 8; ++i) square[i] = _mm256_load_ps(rows[i] + 8 * v);
        Transpose8(square);
        for (int j = 0; j < 8; ++j) _mm256_store_ps(tile->w[c + 8 * v + j] + half, square[j]);
      }
    }
  }
}

// P rows of X (at `x`, k apart, from the tile's first column) over `width` columns of the tile,
// adding to their sums. Not inlined and its loops over rows unrolled: inlined into the driver,
// or with the loops left rolled, GCC kept accumulators on the stack for some Sources (fp8's,
// NVFP4's: half the integer kernels' speed); with 6 rows, 15 of the 16 registers, it did too.
template <int P>
[[gnu::noinline]] void TileRows(const WeightTile& tile, int64_t width, const float* x, int64_t k,
                                TileSums* sums) {
  __m256 acc[P][2];
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p) {
    acc[p][0] = _mm256_load_ps(sums[p].v);
    acc[p][1] = _mm256_load_ps(sums[p].v + 8);
  }
  for (int64_t c = 0; c < width; ++c) {
    const __m256 w0 = _mm256_load_ps(tile.w[c]);
    const __m256 w1 = _mm256_load_ps(tile.w[c] + 8);
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) {
      const __m256 xb = _mm256_broadcast_ss(x + p * k + c);
      acc[p][0] = _mm256_fmadd_ps(xb, w0, acc[p][0]);
      acc[p][1] = _mm256_fmadd_ps(xb, w1, acc[p][1]);
    }
  }
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p) {
    _mm256_store_ps(sums[p].v, acc[p][0]);
    _mm256_store_ps(sums[p].v + 8, acc[p][1]);
  }
}

template <int P>
inline void TileRowsTail(const WeightTile& tile, int64_t width, const float* x, int64_t k, int rows,
                         TileSums* sums) {
  if constexpr (P > 0) {
    if (rows == P) return TileRows<P>(tile, width, x, k, sums);
    TileRowsTail<P - 1>(tile, width, x, k, rows, sums);
  }
}

// Y = X · Wᵀ (+ bias) for every row of W, from xr's rows (m ≥ kTiledRows), kXBlockRows rows of
// X at a time: their columns of a tile (240 KiB) stay in L2 while the tile's rows of X pass, and
// the block in the last-level cache while every tile does (with all 2048 rows of a 4096-column X
// at once, 32 MiB, each tile read X from DRAM: 55 % of the FMA peak instead of 75 %).
template <StepSource S>
void TiledGemm(const S& w, const cpu::RowInterleave& packed, const LinearParams& params,
               const cpu::F32Rows& xr, const MutableMatrix& y) {
  const int64_t n_rows = params.rows, k = xr.k;
  const int64_t full = k / S::kStep * S::kStep;
  const ParamTensor& bias = params.tensor(Slot::kBias);
  const int64_t tiles = (n_rows + kTileN - 1) / kTileN;
  for (int64_t x0 = 0; x0 < xr.rows; x0 += kXBlockRows) {
    const int64_t m = xr.rows - x0 < kXBlockRows ? xr.rows - x0 : kXBlockRows;
    const float* x = xr.values.data() + x0 * k;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t n0 = t * kTileN;
      std::vector<TileSums> sums(static_cast<size_t>(m));
      WeightTile tile;
      for (int64_t k0 = 0; k0 < full; k0 += kTileK) {
        const int64_t width = full - k0 < kTileK ? full - k0 : kTileK;
        ConvertTile(w, packed, n0, k0, width, &tile);
        for (int64_t i = 0; i < m; i += kMicroRows) {
          const int rows = static_cast<int>(m - i < kMicroRows ? m - i : kMicroRows);
          TileRowsTail<kMicroRows>(tile, width, x + i * k + k0, k, rows, sums.data() + i);
        }
      }
      const int64_t count = n_rows - n0 < kTileN ? n_rows - n0 : kTileN;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t r = 0; r < count; ++r) {
          const float b = bias.empty() ? 0.0f : LoadFloat(bias, n0 + r);
          const float value = sums[i].v[r] + Tail(w, n0 + r, x + i * k, full, k);
          reference::StoreOutput(y, (x0 + i) * n_rows + n0 + r, value + b);
        }
      }
    }
  }
}

}  // namespace quantpath::avx2
