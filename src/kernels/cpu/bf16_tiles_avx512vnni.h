// The prefill GEMM of the AVX-512 BF16 kernels (bf16_dot_avx512vnni.h's Sources, M of at least
// kTiledRows bf16 rows): W converted once per tile of kTileN rows × kTileK columns into bf16
// pairs laid out column-pair by column-pair (the 32-bit pair j of 16 rows side by side in a
// vector), so that a vector of W multiplies one broadcast pair of X into 16 outputs at once: no
// sum across lanes, and 6 rows of X × 4 vectors of W = 24 accumulators per pair of columns from 4
// loads and 6 broadcasts (oneDNN's AVX-512 BF16 layout). Rows of a tile are converted by the
// Source as the decode reads them and transposed 16 × 16 pairs at a time; each run of columns
// that shares a scale is summed on its own and scaled per row of W, lane by lane, into totals per
// row of X kept in memory (with the zero points' z · Σ x and X's scales). W is read from DRAM
// once per block of kTiledMaxRows rows of X; OpenMP splits N into tiles.
//
// Included only by *_avx512vnni.cc files, which are all compiled with the same flags.
#pragma once

#include "src/base/avx512_intrinsics.h"

#include <algorithm>
#include <cstdint>
#include <memory>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/bf16_rows.h"
#include "src/kernels/cpu/bf16_source_avx512vnni.h"
#include "src/kernels/cpu/row_interleave.h"
#include "src/kernels/cpu/tile_fetch_avx512vnni.h"
#include "src/kernels/cpu/transpose16_avx512vnni.h"
#include "src/kernels/reference/reference_gemm.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace quantpath::avx512vnni {

inline constexpr int64_t kTiledRows = 64;      // bf16 rows of X from which Gemm tiles
inline constexpr int64_t kTileN = 64;          // rows of W per tile: 4 vectors of 16
inline constexpr int64_t kTileK = 256;         // columns of W per tile: 128 pairs, 32 KiB
inline constexpr int64_t kTiledMaxRows = 512;  // bf16 rows of X per pass over W
inline constexpr int kMicroRows = 6;           // rows of X per microkernel
inline constexpr int kTileVectors = kTileN / 16;

// A tile of W: pairs [j][n] (bf16 pairs of columns 2j, 2j + 1 of the tile's first column, in
// the Source's X order, for rows n of the tile), and each run's scale and scale × zero per row.
template <PairSource S>
struct PairTile {
  alignas(64) uint32_t pairs[kTileK / 2][kTileN];
  alignas(64) float scale[kTileK / kWidth][kTileN];
  alignas(64) float scaled_zero[kTileK / kWidth][kTileN];
  int64_t run_begin[kTileK / kWidth + 1];  // columns of the tile where run i starts
  int64_t run_g[kTileK / kWidth];
  int runs = 0;
};

// Each bf16 value of `values` times the fp32 lane (32 bits: two values) it lies in, where the
// products are bf16 values.
inline __m512i TimesLanes(__m512i values, __m512 lanes) {
  const __m512i high_mask = _mm512_set1_epi32(static_cast<int32_t>(0xFFFF0000u));
  const __m512 low = _mm512_castsi512_ps(_mm512_slli_epi32(values, 16));
  const __m512 high = _mm512_castsi512_ps(_mm512_and_si512(values, high_mask));
  const __m512i low_product = _mm512_srli_epi32(_mm512_castps_si512(_mm512_mul_ps(low, lanes)), 16);
  const __m512i high_product = _mm512_castps_si512(_mm512_mul_ps(high, lanes));
  return _mm512_ternarylogic_epi32(high_product, high_mask, low_product, 0xEA);  // (h & m) | l
}

// Rows [n0, n0 + kTileN) ∩ [0, N) of W, columns [c0, c0 + width) (whole steps), into `tile`.
template <PairSource S>
void ConvertTile(const S& w, const cpu::RowInterleave& packed, int64_t n_rows, int64_t n0,
                 int64_t c0, int64_t width, PairTile<S>* tile) {
  alignas(64) uint16_t rows[16][S::kStep];
  for (int64_t q = 0; q < kTileVectors; ++q) {
    for (int64_t c = 0; c < width; c += S::kStep) {
      for (int i = 0; i < 16; ++i) {
        const int64_t n = n0 + q * 16 + i;
        if (n >= n_rows) {
          std::fill(rows[i], rows[i] + S::kStep, uint16_t{0});
          continue;
        }
        const int64_t first = n / kBlockRows * kBlockRows;
        const PackedBlock block = BlockAt(packed, first, std::min(kBlockRows, n_rows - first));
        __m512i wv[kVectors<S>];
        const uint8_t* codes = block.At((c0 + c) / S::kStep, n - first);
        if constexpr (kLoadsFolded<S>) {
          w.LoadFolded(codes, w.BlockScales(n, (c0 + c) / S::kStep), wv);
        } else if constexpr (kFoldsScales<S>) {
          w.Load(codes, wv);
          const __m512 scales = w.BlockScales(n, (c0 + c) / S::kStep);
          for (int v = 0; v < kVectors<S>; ++v) wv[v] = TimesLanes(wv[v], scales);
        } else {
          w.Load(codes, wv);
        }
        for (int v = 0; v < kVectors<S>; ++v) _mm512_store_si512(rows[i] + v * kWidth, wv[v]);
      }
      for (int v = 0; v < kVectors<S>; ++v) {
        __m512i block16[16];
        for (int i = 0; i < 16; ++i) block16[i] = _mm512_load_si512(rows[i] + v * kWidth);
        Transpose16(block16);
        const int64_t j0 = (c + v * kWidth) / 2;
        for (int i = 0; i < 16; ++i) {
          _mm512_store_si512(tile->pairs[j0 + i] + q * 16, block16[i]);
        }
      }
    }
  }
  if constexpr (kFoldsScales<S>) {
    // One run: what the codes leave of the scale is the row's.
    tile->runs = 1;
    tile->run_begin[0] = 0;
    tile->run_begin[1] = width;
    tile->run_g[0] = 0;
    for (int64_t n = 0; n < kTileN; ++n) {
      tile->scale[0][n] = n0 + n < n_rows ? w.RowScale(n0 + n) : 0.0f;
    }
  } else {
    tile->runs = 0;
    for (int64_t begin = c0; begin < c0 + width; ++tile->runs) {
      const int64_t g = begin / w.group;
      const int64_t end = std::min((g + 1) * w.group, c0 + width);
      const int i = tile->runs;
      tile->run_begin[i] = begin - c0;
      tile->run_g[i] = g;
      for (int64_t n = 0; n < kTileN; ++n) {
        const bool in = n0 + n < n_rows;
        tile->scale[i][n] = in ? w.Scale(n0 + n, g) : 0.0f;
        if constexpr (S::kZeros) {
          tile->scaled_zero[i][n] = in ? tile->scale[i][n] * w.Zero(n0 + n, g) : 0.0f;
        }
      }
      begin = end;
    }
    tile->run_begin[tile->runs] = width;
  }
}

// Rows [m0, m0 + MR) of X (bf16 rows of `xr`) over every run of `tile` (columns from c0 of W,
// runs of `group` columns), into totals[m · kTileVectors + v] (16 outputs each).
// Not inlined: inside TiledGemm GCC kept some of the 24 accumulators on the stack.
template <PairSource S, int MR>
[[gnu::noinline]] void Micro(const PairTile<S>& tile, const cpu::Bf16Rows& xr, int64_t m0,
                             int64_t c0, int64_t group, __m512* totals) {
  const uint16_t* xm[MR];
  for (int m = 0; m < MR; ++m) xm[m] = xr.bits.data<uint16_t>() + (m0 + m) * xr.k + c0;
  for (int i = 0; i < tile.runs; ++i) {
    __m512 acc[MR][kTileVectors];
    for (int m = 0; m < MR; ++m) {
      for (int v = 0; v < kTileVectors; ++v) acc[m][v] = _mm512_setzero_ps();
    }
    for (int64_t j = tile.run_begin[i] / 2; j < tile.run_begin[i + 1] / 2; ++j) {
      __m512i wv[kTileVectors];
      for (int v = 0; v < kTileVectors; ++v) wv[v] = _mm512_load_si512(tile.pairs[j] + v * 16);
      for (int m = 0; m < MR; ++m) {
        int32_t pair;
        __builtin_memcpy(&pair, xm[m] + 2 * j, sizeof pair);
        __m512i xv = _mm512_set1_epi32(pair);
        // Opaque to the optimizer: clang 16 recursed without end folding the broadcast into
        // vdpbf16ps's bf16 operand (a crash at -O1 and above).
        __asm__("" : "+v"(xv));
        for (int v = 0; v < kTileVectors; ++v) acc[m][v] = Dot(acc[m][v], wv[v], xv);
      }
    }
    const int64_t g = tile.run_g[i];
    // The zero point once per run, in the tile where the run starts.
    const bool zero_here = S::kZeros && c0 + tile.run_begin[i] == g * group;
    for (int m = 0; m < MR; ++m) {
      const int64_t row = m0 + m;
      const __m512 x_scale = _mm512_set1_ps(
          xr.x_scales ? xr.x_scales[row * xr.x_runs + g * group / xr.x_group] : 1.0f);
      const __m512 x_sum = _mm512_set1_ps(zero_here ? xr.run_sums[g * xr.rows + row] : 0.0f);
      for (int v = 0; v < kTileVectors; ++v) {
        __m512 total = totals[m * kTileVectors + v];
        const __m512 scale = _mm512_mul_ps(_mm512_load_ps(tile.scale[i] + v * 16), x_scale);
        total = _mm512_fmadd_ps(acc[m][v], scale, total);
        if constexpr (S::kZeros) {
          total = _mm512_fnmadd_ps(_mm512_load_ps(tile.scaled_zero[i] + v * 16), x_sum, total);
        }
        totals[m * kTileVectors + v] = total;
      }
    }
  }
}

template <PairSource S, int MR>
inline void MicroTail(const PairTile<S>& tile, const cpu::Bf16Rows& xr, int64_t m0, int rows,
                      int64_t c0, int64_t group, __m512* totals) {
  if constexpr (MR > 0) {
    if (rows == MR) return Micro<S, MR>(tile, xr, m0, c0, group, totals);
    MicroTail<S, MR - 1>(tile, xr, m0, rows, c0, group, totals);
  }
}

// `count` ≤ kTileN outputs from Y's element `at` on (fp32, or bf16 rounded as StoreOutput).
inline void StoreRow(const MutableMatrix& y, int64_t at, int64_t count, const float* values) {
  if (y.dtype == QDType::kFP32) {
    std::copy(values, values + count, static_cast<float*>(y.data) + at);
    return;
  }
  FloatsToBf16(values, count, static_cast<uint16_t*>(y.data) + at);
}

// Y = X · Wᵀ (+ bias) for X as bf16 rows (xr.rows ≥ kTiledRows), W from `packed`.
template <PairSource S>
void TiledGemm(const S& w, const cpu::RowInterleave& packed, const LinearParams& params,
               const cpu::Bf16Rows& xr, const MutableMatrix& y) {
  static_assert(kTileK % S::kStep == 0 && (!kLaneScales<S> || kFoldsScales<S>));
  const int64_t n_rows = params.rows, k = xr.k;
  const int64_t full = k / S::kStep * S::kStep;
  const int64_t per_row = xr.split ? 2 : 1;  // bf16 rows per row of X
  const int64_t tiles = (n_rows + kTileN - 1) / kTileN;
  const ParamTensor& bias = params.tensor(Slot::kBias);
#ifdef _OPENMP
#pragma omp parallel
#endif
  {
    const std::unique_ptr<PairTile<S>> tile = std::make_unique<PairTile<S>>();
    ParamTensor totals_bytes(QDType::kFP32, kTiledMaxRows * kTileVectors, 16);  // 64-byte aligned
    __m512* totals = reinterpret_cast<__m512*>(totals_bytes.data<float>());
    for (int64_t x0 = 0; x0 < xr.rows; x0 += kTiledMaxRows) {
      const int64_t x1 = std::min(xr.rows, x0 + kTiledMaxRows);
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t n0 = t * kTileN;
        std::fill(totals, totals + (x1 - x0) * kTileVectors, _mm512_setzero_ps());
        for (int64_t c0 = 0; c0 < full; c0 += kTileK) {
          ConvertTile(w, packed, n_rows, n0, c0, std::min(kTileK, full - c0), tile.get());
          // The next tile: this one's next columns, or the next rows' first.
          const bool last = c0 + kTileK >= full;
          const int64_t next_n0 = last ? n0 + kTileN : n0, next_c0 = last ? 0 : c0 + kTileK;
          TileFetch fetch;
          if (next_n0 < n_rows) {
            fetch = TileFetch(packed, kBlockRows, kTileN, n_rows, next_n0, next_c0 / S::kStep,
                              std::min(kTileK, full - next_c0) / S::kStep,
                              (x1 - x0 + kMicroRows - 1) / kMicroRows);
          }
          for (int64_t m = x0; m < x1; m += kMicroRows) {
            fetch.Next();
            const int rows = static_cast<int>(std::min<int64_t>(kMicroRows, x1 - m));
            MicroTail<S, kMicroRows>(*tile, xr, m, rows, c0, w.group,
                                     totals + (m - x0) * kTileVectors);
          }
        }
        const int64_t count = std::min(kTileN, n_rows - n0);
        alignas(64) float bias_values[kTileN] = {};
        for (int64_t r = 0; r < count && !bias.empty(); ++r)
          bias_values[r] = LoadFloat(bias, n0 + r);
        for (int64_t m = x0; m < x1; m += per_row) {
          alignas(64) float values[kTileN];
          for (int v = 0; v < kTileVectors; ++v) {
            __m512 sum = _mm512_load_ps(bias_values + v * 16);
            for (int64_t h = 0; h < per_row; ++h)
              sum = _mm512_add_ps(sum, totals[(m + h - x0) * kTileVectors + v]);
            _mm512_store_ps(values + v * 16, sum);
          }
          if (full < k) {
            for (int64_t r = 0; r < count; ++r) {
              for (int64_t h = 0; h < per_row; ++h) {
                const int64_t row = m + h;
                const float* x_scales = xr.x_scales ? xr.x_scales + row * xr.x_runs : nullptr;
                values[r] += Tail(w, n0 + r, xr.bits.data<uint16_t>() + row * k, x_scales,
                                  xr.x_group, full, k);
              }
            }
          }
          StoreRow(y, m / per_row * n_rows + n0, count, values);
        }
      }
    }
  }
}

}  // namespace quantpath::avx512vnni
