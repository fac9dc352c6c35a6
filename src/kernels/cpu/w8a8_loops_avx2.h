// The int8 loops of the AVX2 kernels on W8A8's prepack (w8a8_pack.h), on vpmaddwd, which
// multiplies 16 int16 pairs into 8 int32 sums of two: W's stored codes q widen to int16 as they are
// (unsigned) and X's codes with their sign, so acc = Σ qx · q is exact in int32 (K ≤ kInt8MaxK:
// |qx · q| < 2^15 each). W in blocks of 4 rows, their 64-byte steps side by side, fetched 8 KiB
// ahead; two rows of X at a time pass over a block (8 accumulators). What an output is made of
// its sum is the kernel's (Outputs::Store). For *_avx2.cc files only.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <vector>

#include "src/kernels/cpu/w8a8_output.h"
#include "src/kernels/cpu/w8a8_pack.h"

namespace quantpath::avx2 {

inline constexpr int64_t kInt8BlockRows = 4;
inline constexpr int kInt8PassRows = 2;
inline constexpr int64_t kInt8TileRows = 64;
inline constexpr int64_t kInt8PrefetchBytes = 8192;  // as f32_dot_avx2.h
inline constexpr int64_t kInt8MaxK = int64_t{1} << 16;

inline int32_t SumLanes(__m256i v) {
  const __m128i half = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i pairs = _mm_add_epi32(half, _mm_shuffle_epi32(half, 0x4E));
  return _mm_cvtsi128_si32(_mm_add_epi32(pairs, _mm_shuffle_epi32(pairs, 0xB1)));
}

// P rows of X (at `x`, `stride` bytes apart) against the R rows of a block (its steps at `w`).
template <int R, int P>
inline void Pass(const uint8_t* w, int64_t steps, const int8_t* x, int64_t stride,
                 int32_t out[kInt8PassRows][kInt8BlockRows]) {
  __m256i acc[P][R];
  for (int p = 0; p < P; ++p) {
    for (int r = 0; r < R; ++r) acc[p][r] = _mm256_setzero_si256();
  }
  for (int64_t s = 0; s < steps; ++s) {
    const uint8_t* step = w + s * R * cpu::kInt8Step;
    for (int64_t line = 0; line < R * cpu::kInt8Step; line += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(step) + kInt8PrefetchBytes + line, _MM_HINT_T0);
    }
    for (int64_t h = 0; h < cpu::kInt8Step; h += 16) {
      __m256i xv[P];
      for (int p = 0; p < P; ++p) {
        xv[p] = _mm256_cvtepi8_epi16(_mm_load_si128(
            reinterpret_cast<const __m128i*>(x + p * stride + s * cpu::kInt8Step + h)));
      }
      for (int r = 0; r < R; ++r) {
        const __m256i wv = _mm256_cvtepu8_epi16(
            _mm_load_si128(reinterpret_cast<const __m128i*>(step + r * cpu::kInt8Step + h)));
        for (int p = 0; p < P; ++p) {
          acc[p][r] = _mm256_add_epi32(acc[p][r], _mm256_madd_epi16(wv, xv[p]));
        }
      }
    }
  }
  for (int p = 0; p < P; ++p) {
    for (int r = 0; r < R; ++r) out[p][r] = SumLanes(acc[p][r]);
  }
}

// X rows [t0, t1) against the R rows of W from `first` into Y (Outputs::Store).
template <typename Outputs, int R>
inline void Block(const cpu::W8a8Problem& pr, int64_t first, int64_t t0, int64_t t1) {
  const cpu::RowInterleave& codes = pr.pack->codes;
  const uint8_t* w = codes.bytes.data<uint8_t>() + first * codes.steps * codes.step_bytes;
  const int8_t* x = pr.x->codes.data<int8_t>();
  const int64_t stride = pr.x->stride;
  for (int64_t t = t0; t < t1; t += kInt8PassRows) {
    int32_t acc[kInt8PassRows][kInt8BlockRows];
    const int64_t rows = t1 - t < kInt8PassRows ? t1 - t : kInt8PassRows;
    if (rows == kInt8PassRows) {
      Pass<R, kInt8PassRows>(w, codes.steps, x + t * stride, stride, acc);
    } else {
      Pass<R, 1>(w, codes.steps, x + t * stride, stride, acc);
    }
    for (int64_t p = 0; p < rows; ++p) {
      for (int r = 0; r < R; ++r) {
        Outputs::Store(pr, t + p, first + r, acc[p][r]);
      }
    }
  }
}

template <typename Outputs, int R>
inline void TailBlock(const cpu::W8a8Problem& pr, int64_t first, int64_t t0, int64_t t1) {
  if constexpr (R > 0) {
    if (pr.params->rows - first == R) return Block<Outputs, R>(pr, first, t0, t1);
    TailBlock<Outputs, R - 1>(pr, first, t0, t1);
  }
}

// From kInt8WideRows rows of X on, both sides are widened to int16 once, a chunk of
// kInt8ChunkSteps steps at a time: X's rows of a tile into one buffer (128 KiB, in L2), each block
// of W into its thread's (8 KiB, in L1), so that the inner loop is loads, vpmaddwd and adds alone
// (widening each pair's codes as they were multiplied cost six shuffles per eight vpmaddwd: 40 %
// of the vpmaddwd peak at M = 512). The chunks' int32 sums add up exactly in `sums`.
inline constexpr int64_t kInt8WideRows = 16;
inline constexpr int64_t kInt8ChunkSteps = 16;  // 1024 columns
inline constexpr int64_t kInt8ChunkColumns = kInt8ChunkSteps * cpu::kInt8Step;

// P rows of widened X (at `x`, kInt8ChunkColumns apart) against the R widened rows of a block (at
// `w`, as far apart) over `columns`, into out[p][r].
template <int R, int P>
inline void WidePass(const int16_t* w, const int16_t* x, int64_t columns,
                     int32_t out[kInt8PassRows][kInt8BlockRows]) {
  __m256i acc[P][R];
  for (int p = 0; p < P; ++p) {
    for (int r = 0; r < R; ++r) acc[p][r] = _mm256_setzero_si256();
  }
#pragma GCC unroll 2
  for (int64_t h = 0; h < columns; h += 16) {
    __m256i xv[P];
    for (int p = 0; p < P; ++p) {
      xv[p] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + p * kInt8ChunkColumns + h));
    }
    for (int r = 0; r < R; ++r) {
      const __m256i wv =
          _mm256_load_si256(reinterpret_cast<const __m256i*>(w + r * kInt8ChunkColumns + h));
      for (int p = 0; p < P; ++p)
        acc[p][r] = _mm256_add_epi32(acc[p][r], _mm256_madd_epi16(wv, xv[p]));
    }
  }
  for (int p = 0; p < P; ++p) {
    for (int r = 0; r < R; ++r) out[p][r] = SumLanes(acc[p][r]);
  }
}

// Codes 16 at a time into int16 (W's unsigned, X's signed).
inline void WidenCodes(const uint8_t* from, int64_t count, bool is_signed, int16_t* to) {
  for (int64_t i = 0; i < count; i += 16) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(to + i),
                        is_signed ? _mm256_cvtepi8_epi16(bytes) : _mm256_cvtepu8_epi16(bytes));
  }
}

// The R rows of W from `first` against `rows` rows of widened X (from row t0), steps [s0, s0 +
// count): the block widened, its sums added to sums[t][first + r] (n apart), and on the last chunk
// the outputs stored (Outputs::Store).
template <typename Outputs, int R>
inline void WideBlock(const cpu::W8a8Problem& pr, int64_t first, const int16_t* x, int64_t t0,
                      int64_t rows, int64_t s0, int64_t count, int32_t* sums) {
  const cpu::RowInterleave& codes = pr.pack->codes;
  const int64_t n = pr.params->rows;
  const uint8_t* block = codes.bytes.data<uint8_t>() + first * codes.steps * codes.step_bytes;
  alignas(32) int16_t w[kInt8BlockRows][kInt8ChunkColumns];
  for (int64_t s = 0; s < count; ++s) {
    const uint8_t* step = block + (s0 + s) * R * cpu::kInt8Step;
    for (int r = 0; r < R; ++r) {
      WidenCodes(step + r * cpu::kInt8Step, cpu::kInt8Step, false, w[r] + s * cpu::kInt8Step);
    }
  }
  const int64_t columns = count * cpu::kInt8Step;
  const bool last = s0 + count == codes.steps;
  for (int64_t t = 0; t < rows; t += kInt8PassRows) {
    int32_t acc[kInt8PassRows][kInt8BlockRows];
    const int64_t pass = rows - t < kInt8PassRows ? rows - t : kInt8PassRows;
    const int16_t* xt = x + t * kInt8ChunkColumns;
    if (pass == kInt8PassRows) {
      WidePass<R, kInt8PassRows>(w[0], xt, columns, acc);
    } else {
      WidePass<R, 1>(w[0], xt, columns, acc);
    }
    for (int64_t p = 0; p < pass; ++p) {
      for (int r = 0; r < R; ++r) {
        int32_t& sum = sums[(t + p) * n + first + r];
        sum = s0 == 0 ? acc[p][r] : sum + acc[p][r];
        if (last) Outputs::Store(pr, t0 + t + p, first + r, sum);
      }
    }
  }
}

template <typename Outputs, int R>
inline void WideTailBlock(const cpu::W8a8Problem& pr, int64_t first, const int16_t* x, int64_t t0,
                          int64_t rows, int64_t s0, int64_t count, int32_t* sums) {
  if constexpr (R > 0) {
    if (pr.params->rows - first == R) {
      return WideBlock<Outputs, R>(pr, first, x, t0, rows, s0, count, sums);
    }
    WideTailBlock<Outputs, R - 1>(pr, first, x, t0, rows, s0, count, sums);
  }
}

// Every row of X (m ≥ kInt8WideRows) against every row of W on widened chunks.
template <typename Outputs>
inline void MultiplyWide(const cpu::W8a8Problem& pr, int64_t m) {
  const int64_t n = pr.params->rows, steps = pr.pack->codes.steps;
  const int64_t blocks = n / kInt8BlockRows;
  const int8_t* x_codes = pr.x->codes.data<int8_t>();
  std::vector<int16_t> x(static_cast<size_t>(kInt8TileRows * kInt8ChunkColumns));
  std::vector<int32_t> sums(static_cast<size_t>(kInt8TileRows * n));
  for (int64_t t0 = 0; t0 < m; t0 += kInt8TileRows) {
    const int64_t rows = m - t0 < kInt8TileRows ? m - t0 : kInt8TileRows;
    for (int64_t s0 = 0; s0 < steps; s0 += kInt8ChunkSteps) {
      const int64_t count = steps - s0 < kInt8ChunkSteps ? steps - s0 : kInt8ChunkSteps;
#ifdef _OPENMP
#pragma omp parallel
#endif
      {
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t t = 0; t < rows; ++t) {
          const auto* from = reinterpret_cast<const uint8_t*>(x_codes + (t0 + t) * pr.x->stride +
                                                              s0 * cpu::kInt8Step);
          WidenCodes(from, count * cpu::kInt8Step, true, x.data() + t * kInt8ChunkColumns);
        }
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t block = 0; block < blocks; ++block) {
          WideBlock<Outputs, kInt8BlockRows>(pr, block * kInt8BlockRows, x.data(), t0, rows, s0,
                                             count, sums.data());
        }
      }
      // The rows past the last full block are one block of fewer rows in the prepack.
      WideTailBlock<Outputs, kInt8BlockRows - 1>(pr, blocks * kInt8BlockRows, x.data(), t0, rows,
                                                 s0, count, sums.data());
    }
  }
}

// Every row of X (m of them) against every row of W: from kInt8WideRows rows on widened
// (MultiplyWide); below, in tiles of kInt8TileRows rows of X that stay in L2 while every block of
// W passes, each pair of codes widened as it is multiplied; OpenMP splits the blocks.
template <typename Outputs>
inline void MultiplyAll(const cpu::W8a8Problem& pr, int64_t m) {
  if (m >= kInt8WideRows) return MultiplyWide<Outputs>(pr, m);
  const int64_t blocks = pr.params->rows / kInt8BlockRows;
  for (int64_t t0 = 0; t0 < m; t0 += kInt8TileRows) {
    const int64_t t1 = m - t0 < kInt8TileRows ? m : t0 + kInt8TileRows;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t block = 0; block < blocks; ++block) {
      Block<Outputs, kInt8BlockRows>(pr, block * kInt8BlockRows, t0, t1);
    }
    // The rows past the last full block are one block of fewer rows in the prepack.
    TailBlock<Outputs, kInt8BlockRows - 1>(pr, blocks * kInt8BlockRows, t0, t1);
  }
}

}  // namespace quantpath::avx2
