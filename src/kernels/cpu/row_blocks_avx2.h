// The decode GEMM the AVX2 kernels share: Y [M, N] = X [M, K] · Wᵀ with W read once. Each block of
// 4 rows of W is loaded 8 columns at a time as fp32 (the spec's Source widens and scales its
// codes), and multiplied into 2 rows of X at once: 8 accumulators, 4 weight and 1 activation
// register of the 16, the block staying in L1/L2 while the other rows of X pass over it. OpenMP
// splits N.
//
// Included only by *_avx2.cc files, which are all compiled with the same flags.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "quantpath/kernels.h"
#include "src/kernels/reference/reference_gemm.h"

namespace quantpath::avx2 {

inline constexpr int64_t kBlockRows = 4;  // rows of W per block
inline constexpr int64_t kPassRows = 2;   // rows of X per pass over a block

inline float Sum(__m256 v) {
  const __m128 half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 pairs = _mm_add_ps(half, _mm_movehl_ps(half, half));
  return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_shuffle_ps(pairs, pairs, 1)));
}

inline float Bf16Bits(uint16_t bits) {
  const uint32_t wide = uint32_t{bits} << 16;
  float value;
  __builtin_memcpy(&value, &wide, 4);
  return value;
}

// out[t][r] = X row t · W row first + r, for R rows of W and T rows of X (at `x`, k apart).
// Source: `__m256 Load8(row, col)` (columns col … col + 7 as fp32) and `float Load1(row, col)`.
template <typename Source, int R, int T>
inline void Block(const Source& w, int64_t first, const float* x, int64_t k,
                  float out[kPassRows][kBlockRows]) {
  __m256 acc[T][R];
  for (int t = 0; t < T; ++t) {
    for (int r = 0; r < R; ++r) acc[t][r] = _mm256_setzero_ps();
  }
  int64_t c = 0;
  for (; c + 8 <= k; c += 8) {
    __m256 wv[R];
    for (int r = 0; r < R; ++r) wv[r] = w.Load8(first + r, c);
    for (int t = 0; t < T; ++t) {
      const __m256 xv = _mm256_loadu_ps(x + t * k + c);
      for (int r = 0; r < R; ++r) acc[t][r] = _mm256_fmadd_ps(xv, wv[r], acc[t][r]);
    }
  }
  for (int t = 0; t < T; ++t) {
    for (int r = 0; r < R; ++r) {
      float sum = Sum(acc[t][r]);
      for (int64_t tail = c; tail < k; ++tail) sum += x[t * k + tail] * w.Load1(first + r, tail);
      out[t][r] = sum;
    }
  }
}

// A Source whose codes share a scale (and zero) over runs of `group` columns (a multiple of 8, or
// the whole row) gives instead `int Zero(row, g)`, `float Scale(row, g)` and
// `__m256 Load8Codes(row, col, __m256i zero)` (the codes minus the zero, unscaled): a run's
// products are summed unscaled and scaled once, so the inner loop is a conversion and an FMA.
// One row of X: 4 sums, 4 run sums and 4 weights in registers (GroupedTile below for more).
template <typename Source>
concept GroupedSource = requires(const Source& w) {
  w.group;
};

template <GroupedSource Source, int R>
inline void GroupedBlock(const Source& w, int64_t first, const float* x, int64_t k,
                         float out[kBlockRows]) {
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  const int64_t full = k / 8 * 8;
  for (int64_t start = 0, g = 0; start < full; start += w.group, ++g) {
    const int64_t end = start + w.group < full ? start + w.group : full;
    __m256i zero[R];
    __m256 run[R];
    for (int r = 0; r < R; ++r) {
      zero[r] = _mm256_set1_epi32(w.Zero(first + r, g));
      run[r] = _mm256_setzero_ps();
    }
    for (int64_t c = start; c < end; c += 8) {
      const __m256 xv = _mm256_loadu_ps(x + c);
      for (int r = 0; r < R; ++r) {
        run[r] = _mm256_fmadd_ps(xv, w.Load8Codes(first + r, c, zero[r]), run[r]);
      }
    }
    for (int r = 0; r < R; ++r) {
      acc[r] = _mm256_fmadd_ps(run[r], _mm256_set1_ps(w.Scale(first + r, g)), acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    float sum = Sum(acc[r]);
    for (int64_t tail = full; tail < k; ++tail) sum += x[tail] * w.Load1(first + r, tail);
    out[r] = sum;
  }
}

inline constexpr int64_t kTileColumns = 256;  // columns of a block converted at once
inline constexpr int64_t kTileRows = 16;      // rows of X that share one conversion

// GroupedBlock for T ≤ kTileRows rows of X: each run of the block's codes is converted once into a
// tile of up to kTileColumns columns, which every row of X then multiplies (an activation vector
// reused over 4 tile rows), so the conversion is paid once per block, not once per row of X. Each
// output is summed as GroupedBlock sums it (vector by vector through a run, runs scaled into the
// total, the tail after), so a row's output does not depend on the rows batched with it.
template <GroupedSource Source, int R>
inline void GroupedTile(const Source& w, int64_t first, const float* x, int64_t t_rows, int64_t k,
                        float out[kTileRows][kBlockRows]) {
  __m256 acc[kTileRows][kBlockRows];
  for (int64_t t = 0; t < t_rows; ++t) {
    for (int r = 0; r < R; ++r) acc[t][r] = _mm256_setzero_ps();
  }
  alignas(32) float tile[R][kTileColumns];
  const int64_t full = k / 8 * 8;
  for (int64_t start = 0, g = 0; start < full; start += w.group, ++g) {
    const int64_t end = start + w.group < full ? start + w.group : full;
    __m256 run[kTileRows][kBlockRows];
    for (int64_t t = 0; t < t_rows; ++t) {
      for (int r = 0; r < R; ++r) run[t][r] = _mm256_setzero_ps();
    }
    for (int64_t chunk = start; chunk < end; chunk += kTileColumns) {
      const int64_t width = end - chunk < kTileColumns ? end - chunk : kTileColumns;
      for (int r = 0; r < R; ++r) {
        const __m256i zero = _mm256_set1_epi32(w.Zero(first + r, g));
        for (int64_t c = 0; c < width; c += 8) {
          _mm256_store_ps(tile[r] + c, w.Load8Codes(first + r, chunk + c, zero));
        }
      }
      for (int64_t t = 0; t < t_rows; ++t) {
        const float* xt = x + t * k + chunk;
        __m256 sum[R];
        for (int r = 0; r < R; ++r) sum[r] = run[t][r];
        for (int64_t c = 0; c < width; c += 8) {
          const __m256 xv = _mm256_loadu_ps(xt + c);
          for (int r = 0; r < R; ++r)
            sum[r] = _mm256_fmadd_ps(xv, _mm256_load_ps(tile[r] + c), sum[r]);
        }
        for (int r = 0; r < R; ++r) run[t][r] = sum[r];
      }
    }
    for (int r = 0; r < R; ++r) {
      const __m256 scale = _mm256_set1_ps(w.Scale(first + r, g));
      for (int64_t t = 0; t < t_rows; ++t) acc[t][r] = _mm256_fmadd_ps(run[t][r], scale, acc[t][r]);
    }
  }
  for (int64_t t = 0; t < t_rows; ++t) {
    for (int r = 0; r < R; ++r) {
      float sum = Sum(acc[t][r]);
      for (int64_t tail = full; tail < k; ++tail) sum += x[t * k + tail] * w.Load1(first + r, tail);
      out[t][r] = sum;
    }
  }
}

// Rows [first, first + R) of W against every row of X (fp32, [m, k]) into Y, with the bias.
template <typename Source, int R>
void RowBlock(const Source& w, const LinearParams& params, const float* x, int64_t m, int64_t first,
              const MutableMatrix& y) {
  const int64_t n = params.rows;
  const int64_t k = params.cols;
  const ParamTensor& bias = params.tensor(Slot::kBias);
  float b[kBlockRows] = {};
  if (!bias.empty()) {
    for (int r = 0; r < R; ++r) b[r] = LoadFloat(bias, first + r);
  }
  if constexpr (GroupedSource<Source>) {
    if (m == 1) {
      float out[kBlockRows];
      GroupedBlock<Source, R>(w, first, x, k, out);
      for (int r = 0; r < R; ++r) reference::StoreOutput(y, first + r, out[r] + b[r]);
      return;
    }
    float out[kTileRows][kBlockRows];
    for (int64_t i = 0; i < m; i += kTileRows) {
      const int64_t rows = m - i < kTileRows ? m - i : kTileRows;
      GroupedTile<Source, R>(w, first, x + i * k, rows, k, out);
      for (int64_t t = 0; t < rows; ++t) {
        for (int r = 0; r < R; ++r) {
          reference::StoreOutput(y, (i + t) * n + first + r, out[t][r] + b[r]);
        }
      }
    }
  } else {
    float out[kPassRows][kBlockRows];
    for (int64_t i = 0; i < m; i += kPassRows) {
      const int64_t rows = m - i < kPassRows ? m - i : kPassRows;
      if (rows == kPassRows) {
        Block<Source, R, kPassRows>(w, first, x + i * k, k, out);
      } else {
        Block<Source, R, 1>(w, first, x + i * k, k, out);
      }
      for (int64_t t = 0; t < rows; ++t) {
        for (int r = 0; r < R; ++r) {
          reference::StoreOutput(y, (i + t) * n + first + r, out[t][r] + b[r]);
        }
      }
    }
  }
}

// Y = X · Wᵀ (+ bias) for every row of W, X already in fp32 (and quantized where the spec's
// activation mode says so).
template <typename Source>
void RowBlockGemm(const Source& w, const LinearParams& params, const float* x, int64_t m,
                  const MutableMatrix& y) {
  const int64_t blocks = params.rows / kBlockRows;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
  for (int64_t block = 0; block < blocks; ++block) {
    RowBlock<Source, kBlockRows>(w, params, x, m, block * kBlockRows, y);
  }
  for (int64_t row = blocks * kBlockRows; row < params.rows; ++row) {
    RowBlock<Source, 1>(w, params, x, m, row, y);
  }
}

}  // namespace quantpath::avx2
