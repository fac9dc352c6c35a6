// The GEMM the AVX-512 BF16 kernels share: Y [M, N] = X [M, K] · Wᵀ on vdpbf16ps, which multiplies
// 32 bf16 pairs into 16 fp32 sums per instruction. The spec's Source turns its codes into bf16
// values exactly (integers up to 256 and e4m3 values are bf16 values), unscaled; each run of codes
// that shares a scale is summed on its own and scaled once, and a zero point is taken off as
// z · Σ x over the run. X comes as bf16 rows (bf16_rows.h): exact, or split into high and low
// halves.
//
// W is read from the kernel's prepack (row_interleave.h): blocks of 4 rows, their steps side by
// side, one address range per thread. One row of X multiplies a block converted in registers, with
// an accumulator per row and vector. More rows convert a block once into a tile of up to
// kTileColumns columns that up to 64 rows of X pass over (X read from panels, Bf16Rows), 4 at a
// time: each run summed in 16 accumulators (vdpbf16ps needs 12 in flight: 2 a cycle, 6 cycles
// each) and scaled into 16 totals, some of which the compiler keeps on the stack (4 at a time
// measured 15–30 % faster than 2 or 3 with every total in a register). OpenMP splits N. From
// kTiledRows rows of X on, Sources with one scale a run go to the prefill GEMM
// (bf16_tiles_avx512vnni.h).
//
// Included only by *_avx512vnni.cc files, which are all compiled with the same flags.
#pragma once

#include "src/base/avx512_intrinsics.h"

#include <cstdint>
#include <vector>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/bf16_rows.h"
#include "src/kernels/cpu/bf16_source_avx512vnni.h"
#include "src/kernels/cpu/bf16_tiles_avx512vnni.h"
#include "src/kernels/cpu/row_interleave.h"
#include "src/kernels/reference/reference_gemm.h"

namespace quantpath::avx512vnni {

// One bf16 row of X (`x`, its run sums at `sums`, its scales at `x_scales` where X holds codes)
// against the R rows of a block from `first`: an accumulator per row and vector, so that no two
// dot products in a step wait on each other.
template <PairSource S, int R>
inline void RowOfX(const S& w, const PackedBlock& block, int64_t first, const uint16_t* x,
                   const float* sums, const float* x_scales, int64_t x_group, int64_t k,
                   float out[kBlockRows]) {
  constexpr int V = kVectors<S>;
  __m512 total[R];
  float zero_terms[R] = {};
  for (int r = 0; r < R; ++r) total[r] = _mm512_setzero_ps();
  const int64_t full = k / S::kStep * S::kStep;
  for (int64_t start = 0, g = 0; start < full; start += w.group, ++g) {
    const int64_t end = start + w.group < full ? start + w.group : full;
    __m512 run[R][V];
    for (int r = 0; r < R; ++r) {
      for (int v = 0; v < V; ++v) run[r][v] = _mm512_setzero_ps();
    }
    for (int64_t c = start; c < end; c += S::kStep) {
      __m512i xv[V];
      for (int v = 0; v < V; ++v) xv[v] = _mm512_loadu_si512(x + c + v * kWidth);
      PrefetchAhead<S, R>(block, c / S::kStep);
      PrefetchScalesAhead<S, R>(w, first, c / S::kStep);
      for (int r = 0; r < R; ++r) {
        __m512i wv[V];
        w.Load(block.At(c / S::kStep, r), wv);
        for (int v = 0; v < V; ++v) run[r][v] = Dot(run[r][v], wv[v], xv[v]);
      }
    }
    for (int r = 0; r < R; ++r) {
      __m512 sum = run[r][0];
      for (int v = 1; v < V; ++v) sum = _mm512_add_ps(sum, run[r][v]);
      total[r] = _mm512_fmadd_ps(sum, RunScale(w, first + r, g, XScale(w, x_scales, x_group, g)),
                                 total[r]);
      if constexpr (S::kZeros) {
        zero_terms[r] += w.Scale(first + r, g) * w.Zero(first + r, g) * sums[g];
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    out[r] = Sum(total[r]) - zero_terms[r] + Tail(w, first + r, x, x_scales, x_group, full, k);
  }
}

// 2 ≤ P ≤ 4 bf16 rows of X from row t0 of `xr` against the R rows of a block from `first` (one
// row: RowOfX, whose accumulators a row of W are the vectors of a step), the block converted in
// registers once for all of them: 16 accumulators (vdpbf16ps needs 12 in flight),
// each row of X and W with its own and the vectors of a step split among 4 / P of them; each
// run's scale and zero point taken once a row of W for every row of X. X is loaded for each row
// of W, from L1 (held in registers through a step, it pushed the accumulators onto the stack).
template <PairSource S, int R, int P>
inline void RowsInRegisters(const S& w, const PackedBlock& block, int64_t first,
                            const cpu::Bf16Rows& xr, int64_t t0, float out[4][kBlockRows]) {
  constexpr int V = kVectors<S>;
  constexpr int A = P >= 4 ? 1 : 4 / P;  // accumulators a row of X and W
  const int64_t k = xr.k;
  const uint16_t* x[P];
  const float* x_scales[P];
  for (int p = 0; p < P; ++p) {
    x[p] = xr.bits.data<uint16_t>() + (t0 + p) * k;
    x_scales[p] = xr.x_scales ? xr.x_scales + (t0 + p) * xr.x_runs : nullptr;
  }
  __m512 total[P][R];
  float zero_terms[P][R] = {};
  for (int p = 0; p < P; ++p) {
    for (int r = 0; r < R; ++r) total[p][r] = _mm512_setzero_ps();
  }
  const int64_t full = k / S::kStep * S::kStep;
  for (int64_t start = 0, g = 0; start < full; start += w.group, ++g) {
    const int64_t end = start + w.group < full ? start + w.group : full;
    __m512 run[P][R][A];
    for (int p = 0; p < P; ++p) {
      for (int r = 0; r < R; ++r) {
        for (int a = 0; a < A; ++a) run[p][r][a] = _mm512_setzero_ps();
      }
    }
    for (int64_t c = start; c < end; c += S::kStep) {
      PrefetchAhead<S, R>(block, c / S::kStep);
      PrefetchScalesAhead<S, R>(w, first, c / S::kStep);
      for (int r = 0; r < R; ++r) {
        __m512i wv[V];
        w.Load(block.At(c / S::kStep, r), wv);
        for (int v = 0; v < V; ++v) {
          for (int p = 0; p < P; ++p) {
            const __m512i xpv = _mm512_loadu_si512(x[p] + c + v * kWidth);
            run[p][r][v % A] = Dot(run[p][r][v % A], wv[v], xpv);
          }
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      float zero = 0.0f;
      if constexpr (S::kZeros) zero = w.Scale(first + r, g) * w.Zero(first + r, g);
      for (int p = 0; p < P; ++p) {
        __m512 sum = run[p][r][0];
        for (int a = 1; a < A; ++a) sum = _mm512_add_ps(sum, run[p][r][a]);
        total[p][r] = _mm512_fmadd_ps(
            sum, RunScale(w, first + r, g, XScale(w, x_scales[p], xr.x_group, g)), total[p][r]);
        if constexpr (S::kZeros) zero_terms[p][r] += zero * xr.run_sums[g * xr.rows + t0 + p];
      }
    }
  }
  for (int p = 0; p < P; ++p) {
    for (int r = 0; r < R; ++r) {
      out[p][r] = Sum(total[p][r]) - zero_terms[p][r] +
                  Tail(w, first + r, x[p], x_scales[p], xr.x_group, full, k);
    }
  }
}

template <PairSource S, int R, int P>
inline void RowsInRegistersTail(const S& w, const PackedBlock& block, int64_t first,
                                const cpu::Bf16Rows& xr, int64_t t0, int rows,
                                float out[4][kBlockRows]) {
  if constexpr (P >= 2) {
    if (rows == P) return RowsInRegisters<S, R, P>(w, block, first, xr, t0, out);
    if constexpr (P > 2) RowsInRegistersTail<S, R, P - 1>(w, block, first, xr, t0, rows, out);
  }
}

// A run of a tile: its columns [begin, end) of the tile, all in run g, and the R rows' scales.
struct TileRun {
  int64_t begin, end, g;
  __m512 scale[kBlockRows];
  int64_t x_run;  // X's scale run for it, where X holds codes
};

// P rows of X (at `x`, `k` apart, from the tile's first column) over the runs of R tile rows, into
// total[0 … P): each run summed in registers and scaled once into the totals.
template <int R, int P>
inline void Pass(const uint16_t (*tile)[kTileColumns], const TileRun* runs, int n_runs,
                 const uint16_t* x, int64_t k, const float* x_scales, int64_t x_runs,
                 __m512 total[][kBlockRows]) {
  __m512 sums[P][R];
  for (int p = 0; p < P; ++p) {
    for (int r = 0; r < R; ++r) sums[p][r] = total[p][r];
  }
  for (int i = 0; i < n_runs; ++i) {
    __m512 acc[P][R];
    for (int p = 0; p < P; ++p) {
      for (int r = 0; r < R; ++r) acc[p][r] = _mm512_setzero_ps();
    }
    for (int64_t c = runs[i].begin; c < runs[i].end; c += kWidth) {
      __m512i wv[R];
      for (int r = 0; r < R; ++r) wv[r] = _mm512_load_si512(tile[r] + c);
      for (int p = 0; p < P; ++p) {
        const __m512i xv = _mm512_loadu_si512(x + p * k + c);
        for (int r = 0; r < R; ++r) acc[p][r] = Dot(acc[p][r], wv[r], xv);
      }
    }
    for (int p = 0; p < P; ++p) {
      for (int r = 0; r < R; ++r) {
        const __m512 scale =
            x_scales ? _mm512_mul_ps(runs[i].scale[r],
                                     _mm512_set1_ps(x_scales[p * x_runs + runs[i].x_run]))
                     : runs[i].scale[r];
        sums[p][r] = _mm512_fmadd_ps(acc[p][r], scale, sums[p][r]);
      }
    }
  }
  for (int p = 0; p < P; ++p) {
    for (int r = 0; r < R; ++r) total[p][r] = sums[p][r];
  }
}

// t_rows ≤ kXTileRows bf16 rows of X from row `x0` (a multiple of kTileRows) against the R rows
// of a block from `first`: each chunk of the block converted once for all of them.
// The block is converted a tile of up to kTileColumns columns at a time, cut into its runs (a run
// of a whole row spans tiles: scaled per tile by the same scale, it adds up the same).
template <PairSource S, int R>
inline void RowsOfX(const S& w, const PackedBlock& block, int64_t first, const cpu::Bf16Rows& xr,
                    int64_t x0, int64_t t_rows, float out[kXTileRows][kBlockRows]) {
  const int64_t k = xr.k;
  const uint16_t* x = xr.bits.data<uint16_t>() + x0 * k;
  alignas(64) uint16_t tile[R][kTileColumns];
  __m512 total[kXTileRows][kBlockRows];
  float zero_terms[kBlockRows][kXTileRows] = {};
  for (int64_t t = 0; t < t_rows; ++t) {
    for (int r = 0; r < R; ++r) total[t][r] = _mm512_setzero_ps();
  }
  const int64_t full = k / S::kStep * S::kStep;
  for (int64_t chunk = 0; chunk < full; chunk += kTileColumns) {
    const int64_t width = full - chunk < kTileColumns ? full - chunk : kTileColumns;
    for (int64_t c = 0; c < width; c += S::kStep) {
      PrefetchAhead<S, R>(block, (chunk + c) / S::kStep);
      PrefetchScalesAhead<S, R>(w, first, (chunk + c) / S::kStep);
      for (int r = 0; r < R; ++r) {
        __m512i wv[kVectors<S>];
        w.Load(block.At((chunk + c) / S::kStep, r), wv);
        for (int v = 0; v < kVectors<S>; ++v) {
          _mm512_store_si512(tile[r] + c + v * kWidth, wv[v]);
        }
      }
    }
    // The next chunk (of this block, or the next block's first) is fetched into L2 a share at a
    // time while X passes over this one: fetched only just ahead of the conversion, its lines came
    // from DRAM as it read them.
    const char* next = reinterpret_cast<const char*>(block.At((chunk + width) / S::kStep, 0));
    const int64_t next_lines = width / S::kStep * R * S::kStepBytes / 64;
    const int64_t passes = (t_rows + kPassRows - 1) / kPassRows;
    const int64_t lines_per_pass = (next_lines + passes - 1) / passes;
    int64_t fetched = 0;
    const auto fetch_share = [&] {
      for (int64_t i = 0; i < lines_per_pass && fetched < next_lines; ++i, ++fetched) {
        _mm_prefetch(next + fetched * 64, _MM_HINT_T1);
      }
    };
    TileRun runs[kTileColumns / kWidth];
    int n_runs = 0;
    for (int64_t begin = chunk; begin < chunk + width; ++n_runs) {
      const int64_t g = begin / w.group;
      const int64_t run_end = (g + 1) * w.group;
      const int64_t end = run_end < chunk + width ? run_end : chunk + width;
      TileRun& run = runs[n_runs];  // each field set: a zeroed array was a memset per chunk
      run.begin = begin - chunk;
      run.end = end - chunk;
      run.g = g;
      run.x_run = xr.x_scales ? g * w.group / xr.x_group : 0;
      for (int r = 0; r < R; ++r) run.scale[r] = RunScale(w, first + r, g, 1.0f);
      begin = end;
    }
    // Each group of kTileRows rows reads its columns of the chunk from its panel, side by side.
    for (int64_t t0 = 0; t0 < t_rows; t0 += kTileRows) {
      const int64_t g = t_rows - t0 < kTileRows ? t_rows - t0 : kTileRows;
      const uint16_t* panel = xr.panels.data<uint16_t>() + (x0 + t0) * full + chunk * g;
      const auto x_scales = [&](int64_t t) {
        return xr.x_scales ? xr.x_scales + (x0 + t0 + t) * xr.x_runs : nullptr;
      };
      int64_t t = 0;
      for (; t + kPassRows <= g; t += kPassRows) {
        fetch_share();
        Pass<R, kPassRows>(tile, runs, n_runs, panel + t * width, width, x_scales(t), xr.x_runs,
                           total + t0 + t);
      }
      for (; t < g; ++t) {
        fetch_share();
        Pass<R, 1>(tile, runs, n_runs, panel + t * width, width, x_scales(t), xr.x_runs,
                   total + t0 + t);
      }
    }
    if constexpr (S::kZeros) {
      // Once per run, where the run starts, 16 rows of X at a time.
      for (int i = 0; i < n_runs; ++i) {
        if (chunk + runs[i].begin != runs[i].g * w.group) continue;
        const float* sums = xr.run_sums.data() + runs[i].g * xr.rows + x0;
        for (int r = 0; r < R; ++r) {
          const __m512 scaled_zero =
              _mm512_set1_ps(w.Scale(first + r, runs[i].g) * w.Zero(first + r, runs[i].g));
          for (int64_t t = 0; t < t_rows; t += 16) {
            const __mmask16 rows = t_rows - t >= 16 ? 0xFFFF : (1u << (t_rows - t)) - 1;
            const __m512 terms = _mm512_maskz_loadu_ps(rows, zero_terms[r] + t);
            _mm512_mask_storeu_ps(
                zero_terms[r] + t, rows,
                _mm512_fmadd_ps(scaled_zero, _mm512_maskz_loadu_ps(rows, sums + t), terms));
          }
        }
      }
    }
  }
  for (int64_t t = 0; t < t_rows; ++t) {
    for (int r = 0; r < R; ++r) {
      const float* x_scales = xr.x_scales ? xr.x_scales + (x0 + t) * xr.x_runs : nullptr;
      out[t][r] = Sum(total[t][r]) - zero_terms[r][t] +
                  Tail(w, first + r, x + t * k, x_scales, xr.x_group, full, k);
    }
  }
}

// The R rows of W from `first` against every row of X into Y, with the bias.
template <PairSource S, int R>
void RowBlock(const S& w, const cpu::RowInterleave& packed, const LinearParams& params,
              const cpu::Bf16Rows& xr, int64_t first, int64_t x0, int64_t x1,
              const MutableMatrix& y) {
  const int64_t n = params.rows;
  const PackedBlock block = BlockAt(packed, first, R);
  const ParamTensor& bias = params.tensor(Slot::kBias);
  float b[kBlockRows] = {};
  if (!bias.empty()) {
    for (int r = 0; r < R; ++r) b[r] = LoadFloat(bias, first + r);
  }
  const int64_t per_row = xr.split ? 2 : 1;  // bf16 rows per row of X
  if (xr.rows == 1) {
    float out[kBlockRows];
    const float* sums = S::kZeros ? xr.run_sums.data() : nullptr;
    RowOfX<S, R>(w, block, first, xr.bits.data<uint16_t>(), sums, xr.x_scales, xr.x_group, xr.k,
                 out);
    for (int r = 0; r < R; ++r) reference::StoreOutput(y, first + r, out[r] + b[r]);
    return;
  }
  if (xr.rows <= kRegisterRows) {
    for (int64_t t0 = 0; t0 < xr.rows; t0 += 4) {
      const int rows = static_cast<int>(xr.rows - t0 < 4 ? xr.rows - t0 : 4);
      float out[4][kBlockRows];
      RowsInRegistersTail<S, R, 4>(w, block, first, xr, t0, rows, out);
      for (int t = 0; t < rows; t += static_cast<int>(per_row)) {
        for (int r = 0; r < R; ++r) {
          const float value = per_row == 2 ? out[t][r] + out[t + 1][r] : out[t][r];
          reference::StoreOutput(y, (t0 + t) / per_row * n + first + r, value + b[r]);
        }
      }
    }
    return;
  }
  float out[kXTileRows][kBlockRows];
  RowsOfX<S, R>(w, block, first, xr, x0, x1 - x0, out);
  for (int64_t t = 0; t < x1 - x0; t += per_row) {
    for (int r = 0; r < R; ++r) {
      const float value = per_row == 2 ? out[t][r] + out[t + 1][r] : out[t][r];
      reference::StoreOutput(y, (x0 + t) / per_row * n + first + r, value + b[r]);
    }
  }
}

template <PairSource S, int R>
void TailRows(const S& w, const cpu::RowInterleave& packed, const LinearParams& params,
              const cpu::Bf16Rows& xr, int64_t first, int64_t x0, int64_t x1,
              const MutableMatrix& y) {
  if constexpr (R > 0) {
    if (params.rows - first == R) return RowBlock<S, R>(w, packed, params, xr, first, x0, x1, y);
    TailRows<S, R - 1>(w, packed, params, xr, first, x0, x1, y);
  }
}

// Y = X · Wᵀ (+ bias) for every row of W, X [m, k] in fp32 (and quantized where the spec's
// activation mode says so; or e4m3 codes with `x_scales`), taken as bf16 rows in the Source's
// order; W from `packed`.
template <PairSource S>
void Gemm(const S& w, const cpu::RowInterleave& packed, const LinearParams& params,
          const std::vector<float>& x, int64_t m, const MutableMatrix& y,
          const cpu::XScales& x_scales = {}) {
  bool tiled = m >= kTiledRows;
  if constexpr (kFoldsScales<S>) {
    tiled = tiled && w.folds;
  } else if constexpr (kLaneScales<S>) {
    tiled = false;
  }
  cpu::Bf16Rows xr =
      cpu::ToBf16Rows(x, m, params.cols, S::kZeros ? w.group : 0, S::kStep, S::kXOrder,
                      tiled ? cpu::PanelShape{} : cpu::PanelShape{kTileRows, kTileColumns});
  xr.x_scales = x_scales.scales;
  xr.x_runs = x_scales.runs;
  xr.x_group = x_scales.group;
  if constexpr (!kLaneScales<S> || kFoldsScales<S>) {
    if (tiled) return TiledGemm(w, packed, params, xr, y);
  }
  // X in tiles of kXTileRows bf16 rows, each kept in L2 while every block of W passes over it.
  const int64_t blocks = params.rows / kBlockRows;
  for (int64_t x0 = 0; x0 < xr.rows; x0 += kXTileRows) {
    const int64_t x1 = xr.rows - x0 < kXTileRows ? xr.rows : x0 + kXTileRows;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t block = 0; block < blocks; ++block) {
      RowBlock<S, kBlockRows>(w, packed, params, xr, block * kBlockRows, x0, x1, y);
    }
    // The rows past the last full block are one block of fewer rows in the prepack.
    if (blocks * kBlockRows < params.rows) {
      TailRows<S, kBlockRows - 1>(w, packed, params, xr, blocks * kBlockRows, x0, x1, y);
    }
  }
}

}  // namespace quantpath::avx512vnni
