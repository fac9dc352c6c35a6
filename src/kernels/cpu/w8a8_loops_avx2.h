// The int8 loops of the AVX2 kernels on W8A8's prepack (w8a8_pack.h), on vpmaddwd, which
// multiplies 16 int16 pairs into 8 int32 sums of two: W's stored codes q widen to int16 as they are
// (unsigned) and X's codes with their sign, so acc = Σ qx · q is exact in int32 (K ≤ kInt8MaxK:
// |qx · q| < 2^15 each). W in blocks of 4 rows, their 64-byte steps side by side, fetched 8 KiB
// ahead; two rows of X at a time pass over a block (8 accumulators). What an output is made of
// its sum is the kernel's (Outputs::Store). For *_avx2.cc files only.
#pragma once

#include <immintrin.h>

#include <cstdint>

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

// Every row of X (m of them) against every row of W, in tiles of kInt8TileRows rows of X that stay
// in L2 while every block of W passes; OpenMP splits the blocks.
template <typename Outputs>
inline void MultiplyAll(const cpu::W8a8Problem& pr, int64_t m) {
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
