// The GEMM the quantized AVX2 kernels share: Y [M, N] = X [M, K] · Wᵀ on fp32 FMA, W read from the
// kernel's prepack (row_interleave.h): blocks of 4 rows, their steps side by side, so that a
// thread reads one address range, fetched kPrefetchBytes ahead (on a 32 MiB-L3 AMD EPYC the four
// rows of a block read as four streams, with the hardware's prefetcher alone, left a 4-bit decode
// at 30 % of one thread's read bandwidth).
//
// The spec's Source turns one step of codes into fp32 vectors, exact (times a power of two where
// it says so) and unscaled; each run of codes that shares a scale is summed on its own and scaled
// once, and a zero point is taken off as z · Σ x over the run (f32_rows.h), so that a code costs
// its conversion and one FMA. Up to kRegisterRows<S> rows of X (one for most Sources) multiply a
// block converted in registers, two rows at a time; more rows convert each run of a block once
// into a tile of up to kStepTileColumns columns that 2 rows of X at a time pass over (8
// accumulators, 4 tile vectors and an X vector of the 16 registers). Both sum each output in the
// same order (RunTotals), so that below kTiledRows rows outputs are the same bits whatever the
// batch. From kTiledRows rows on, the tiled GEMM (f32_tiles_avx2.h). OpenMP splits N.
//
// Included only by *_avx2.cc files, which are all compiled with the same flags.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/f32_rows.h"
#include "src/kernels/cpu/f32_source_avx2.h"
#include "src/kernels/cpu/f32_tiles_avx2.h"
#include "src/kernels/cpu/row_blocks_avx2.h"
#include "src/kernels/cpu/row_interleave.h"
#include "src/kernels/reference/reference_gemm.h"

namespace quantpath::avx2 {

inline constexpr int64_t kStepTileColumns = 512;  // columns of a block's run converted at once

// What both decode paths keep for T rows of X (from row t0, `rows` of them in use) against the R
// rows of W from `first`: each run's sums scaled into the totals with the run's zero terms, then
// the totals summed, the zero terms taken off and the tail added. One place, so that both sum an
// output in the same order.
template <StepSource S, int T, int R>
struct RunTotals {
  __m256 total[T][R];
  float zero_terms[T][R] = {};
  int64_t t0, rows, first;

  RunTotals(int64_t t0_, int64_t rows_, int64_t first_) : t0(t0_), rows(rows_), first(first_) {
    for (int64_t t = 0; t < rows; ++t) {
      for (int r = 0; r < R; ++r) total[t][r] = _mm256_setzero_ps();
    }
  }
  // run[t][r]: the sums of run g.
  template <typename Runs>
  void AddRun(const S& w, int64_t g, const Runs& run, const cpu::F32Rows& xr) {
    for (int r = 0; r < R; ++r) {
      const __m256 scales = ScaleVector(w, first + r, g);
      for (int64_t t = 0; t < rows; ++t) {
        total[t][r] = _mm256_fmadd_ps(run[t][r], scales, total[t][r]);
      }
      if constexpr (S::kZeros) {
        const float zero = w.Scale(first + r, g) * w.Zero(first + r, g);
        for (int64_t t = 0; t < rows; ++t) {
          zero_terms[t][r] += zero * xr.run_sums[g * xr.rows + t0 + t];
        }
      }
    }
  }
  void Finish(const S& w, const cpu::F32Rows& xr, float out[][kBlockRows]) const {
    const int64_t k = xr.k, full = k / S::kStep * S::kStep;
    const float* x = xr.values.data() + t0 * k;
    for (int64_t t = 0; t < rows; ++t) {
      for (int r = 0; r < R; ++r) {
        out[t][r] = Sum(total[t][r]) - zero_terms[t][r] + Tail(w, first + r, x + t * k, full, k);
      }
    }
  }
};

// P rows of X from row t0 against the R rows of a block, one accumulator per row of each: each
// output is summed in the order RowsOfX sums it (vector by vector through a run, runs scaled into
// the total, the zero terms and the tail after), so a row's output does not depend on the rows
// batched with it. A Source of words converts each vector once for the P rows, which load each of
// theirs once for the block's R rows.
template <StepSource S, int R, int P>
inline void RowsInRegisters(const S& w, const uint8_t* block, int64_t first, const cpu::F32Rows& xr,
                            int64_t t0, float out[][kBlockRows]) {
  constexpr int V = kVectors<S>;
  const int64_t k = xr.k;
  const float* x = xr.values.data() + t0 * k;
  RunTotals<S, P, R> totals(t0, P, first);
  const int64_t full = k / S::kStep * S::kStep;
  for (int64_t start = 0, g = 0; start < full; start += w.group, ++g) {
    const int64_t end = start + w.group < full ? start + w.group : full;
    __m256 run[P][R];
    for (int p = 0; p < P; ++p) {
      for (int r = 0; r < R; ++r) run[p][r] = _mm256_setzero_ps();
    }
    for (int64_t c = start; c < end; c += S::kStep) {
      const uint8_t* step = StepOf<S, R>(block, c / S::kStep);
      PrefetchAhead<S, R>(step);
      if constexpr (kVectorLoads<S>) {
        decltype(w.Words(step)) words[R];
        for (int r = 0; r < R; ++r) words[r] = w.Words(step + r * S::kStepBytes);
        for (int v = 0; v < V; ++v) {
          __m256 xv[P];
          for (int p = 0; p < P; ++p) xv[p] = _mm256_loadu_ps(x + p * k + c + 8 * v);
          for (int r = 0; r < R; ++r) {
            const __m256 wv = w.Vector(words[r], v);
            for (int p = 0; p < P; ++p) run[p][r] = _mm256_fmadd_ps(xv[p], wv, run[p][r]);
          }
        }
      } else {
        static_assert(P == 1, "a Source loaded by steps passes one row of X at a time");
        for (int r = 0; r < R; ++r) {
          __m256 wv[V];
          LoadStep(w, step + r * S::kStepBytes, wv);
          for (int v = 0; v < V; ++v) {
            run[0][r] = _mm256_fmadd_ps(_mm256_loadu_ps(x + c + 8 * v), wv[v], run[0][r]);
          }
        }
      }
    }
    totals.AddRun(w, g, run, xr);
  }
  totals.Finish(w, xr, out);
}

// P rows of X (at `x`, k apart) over `width` columns of the tile's R rows, into run[0 … P).
template <int R, int P>
inline void TilePass(const float (*tile)[kStepTileColumns], int64_t width, const float* x,
                     int64_t k, __m256 run[][kBlockRows]) {
  __m256 acc[P][R];
  for (int p = 0; p < P; ++p) {
    for (int r = 0; r < R; ++r) acc[p][r] = run[p][r];
  }
  for (int64_t c = 0; c < width; c += 8) {
    __m256 wv[R];
    for (int r = 0; r < R; ++r) wv[r] = _mm256_load_ps(tile[r] + c);
    for (int p = 0; p < P; ++p) {
      const __m256 xv = _mm256_loadu_ps(x + p * k + c);
      for (int r = 0; r < R; ++r) acc[p][r] = _mm256_fmadd_ps(xv, wv[r], acc[p][r]);
    }
  }
  for (int p = 0; p < P; ++p) {
    for (int r = 0; r < R; ++r) run[p][r] = acc[p][r];
  }
}

// Up to kTileRows rows of X from row t0 against the R rows of a block: each run of the block
// converted once, a tile at a time, for all of them.
template <StepSource S, int R>
inline void RowsOfX(const S& w, const uint8_t* block, int64_t first, const cpu::F32Rows& xr,
                    int64_t t0, int64_t t_rows, float out[kTileRows][kBlockRows]) {
  constexpr int V = kVectors<S>;
  const int64_t k = xr.k;
  const float* x = xr.values.data() + t0 * k;
  alignas(32) float tile[R][kStepTileColumns];
  RunTotals<S, kTileRows, R> totals(t0, t_rows, first);
  const int64_t full = k / S::kStep * S::kStep;
  for (int64_t start = 0, g = 0; start < full; start += w.group, ++g) {
    const int64_t end = start + w.group < full ? start + w.group : full;
    __m256 run[kTileRows][kBlockRows];
    for (int64_t t = 0; t < t_rows; ++t) {
      for (int r = 0; r < R; ++r) run[t][r] = _mm256_setzero_ps();
    }
    for (int64_t chunk = start; chunk < end; chunk += kStepTileColumns) {
      const int64_t width = end - chunk < kStepTileColumns ? end - chunk : kStepTileColumns;
      for (int64_t c = 0; c < width; c += S::kStep) {
        const uint8_t* step = StepOf<S, R>(block, (chunk + c) / S::kStep);
        PrefetchAhead<S, R>(step);
        for (int r = 0; r < R; ++r) {
          __m256 wv[V];
          LoadStep(w, step + r * S::kStepBytes, wv);
          for (int v = 0; v < V; ++v) _mm256_store_ps(tile[r] + c + 8 * v, wv[v]);
        }
      }
      int64_t t = 0;
      for (; t + 2 <= t_rows; t += 2) TilePass<R, 2>(tile, width, x + t * k + chunk, k, run + t);
      if (t < t_rows) TilePass<R, 1>(tile, width, x + t * k + chunk, k, run + t);
    }
    totals.AddRun(w, g, run, xr);
  }
  totals.Finish(w, xr, out);
}

// The R rows of W from `first` against every row of X into Y, with the bias.
template <StepSource S, int R>
void PackedRowBlock(const S& w, const cpu::RowInterleave& packed, const LinearParams& params,
                    const cpu::F32Rows& xr, int64_t first, const MutableMatrix& y) {
  const int64_t n = params.rows;
  const uint8_t* block = packed.bytes.data<uint8_t>() + first * packed.steps * packed.step_bytes;
  const ParamTensor& bias = params.tensor(Slot::kBias);
  float b[kBlockRows] = {};
  if (!bias.empty()) {
    for (int r = 0; r < R; ++r) b[r] = LoadFloat(bias, first + r);
  }
  // Up to kRegisterRows<S> rows of X pass two at a time in registers (RowsInRegisters), more
  // through tiles (RowsOfX).
  if (xr.rows <= kRegisterRows<S>) {
    float out[kPassRows][kBlockRows];
    for (int64_t t = 0; t < xr.rows; t += kPassRows) {
      const int64_t rows = xr.rows - t < kPassRows ? xr.rows - t : kPassRows;
      if constexpr (kVectorLoads<S>) {
        if (rows == kPassRows) {
          RowsInRegisters<S, R, kPassRows>(w, block, first, xr, t, out);
        } else {
          RowsInRegisters<S, R, 1>(w, block, first, xr, t, out);
        }
      } else {
        RowsInRegisters<S, R, 1>(w, block, first, xr, t, out);
      }
      for (int64_t p = 0; p < rows; ++p) {
        for (int r = 0; r < R; ++r) {
          reference::StoreOutput(y, (t + p) * n + first + r, out[p][r] + b[r]);
        }
      }
    }
    return;
  }
  float out[kTileRows][kBlockRows];
  for (int64_t t0 = 0; t0 < xr.rows; t0 += kTileRows) {
    const int64_t rows = xr.rows - t0 < kTileRows ? xr.rows - t0 : kTileRows;
    RowsOfX<S, R>(w, block, first, xr, t0, rows, out);
    for (int64_t t = 0; t < rows; ++t) {
      for (int r = 0; r < R; ++r) {
        reference::StoreOutput(y, (t0 + t) * n + first + r, out[t][r] + b[r]);
      }
    }
  }
}

template <StepSource S, int R>
void PackedTailRows(const S& w, const cpu::RowInterleave& packed, const LinearParams& params,
                    const cpu::F32Rows& xr, int64_t first, const MutableMatrix& y) {
  if constexpr (R > 0) {
    if (params.rows - first == R) return PackedRowBlock<S, R>(w, packed, params, xr, first, y);
    PackedTailRows<S, R - 1>(w, packed, params, xr, first, y);
  }
}

// Y = X · Wᵀ (+ bias) for every row of W, X [m, k] in fp32 (and quantized where the spec's
// activation mode says so), taken in the Source's order; W from `packed`.
template <StepSource S>
void PackedGemm(const S& w, const cpu::RowInterleave& packed, const LinearParams& params,
                std::vector<float> x, int64_t m, const MutableMatrix& y) {
  const bool tiled = m >= kTiledRows;
  const cpu::F32Rows xr =
      cpu::ToF32Rows(std::move(x), m, params.cols, S::kZeros && !tiled ? w.group : 0, S::kStep,
                     S::kXOrder, tiled ? std::span<const int>() : LoadExponents<S>());
  if (tiled) return TiledGemm(w, packed, params, xr, y);
  const int64_t blocks = params.rows / kBlockRows;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
  for (int64_t block = 0; block < blocks; ++block) {
    PackedRowBlock<S, kBlockRows>(w, packed, params, xr, block * kBlockRows, y);
  }
  // The rows past the last full block are one block of fewer rows in the prepack.
  if (blocks * kBlockRows < params.rows) {
    PackedTailRows<S, kBlockRows - 1>(w, packed, params, xr, blocks * kBlockRows, y);
  }
}

}  // namespace quantpath::avx2
