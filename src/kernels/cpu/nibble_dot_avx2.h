// The AVX2 GEMM of 4-bit weight codes with int8 (or int4) activation codes on vpmaddubsw, which
// multiplies 32 unsigned bytes by 32 signed ones into 16 int16 sums of pairs. A 32-byte step of a
// row of W holds 64 columns, byte b columns 2b (low nibble) and 2b + 1 (high); the spec's codes
// policy turns each half into 32 bytes (Split) and multiplies them with X's codes of the even and
// of the odd columns (Pairs; X reordered so per step, OrderX). Up to kPairSteps steps add in int16
// before vpmaddwd widens them into int32 lanes, lane j holding columns 8j … 8j + 7 of each step. A
// run of steps shares its scales (one per row, or one per lane): its lanes are scaled into fp32
// totals; a policy whose codes are offset by a zero point takes z · Σ qx off lane 0 first, exact;
// one run over the whole row may be summed as integers instead (kExactOneRun), for the
// reference's bits.
//
// W is prepacked in blocks of 4 rows (row_interleave.h), each row's last step padded with zeros,
// and X with zero codes to whole steps, so the padding adds nothing. Two rows of X at a time pass
// over a block; OpenMP splits N.
//
// Included only by *_avx2.cc files, which are all compiled with the same flags.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <vector>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/f32_source_avx2.h"
#include "src/kernels/cpu/row_blocks_avx2.h"
#include "src/kernels/cpu/row_interleave.h"
#include "src/kernels/cpu/w8a8_loops_avx2.h"
#include "src/kernels/reference/int8_activations.h"
#include "src/kernels/reference/reference_gemm.h"

namespace quantpath::avx2 {

inline constexpr int64_t kNibbleStep = 64;       // columns of a step
inline constexpr int64_t kNibbleStepBytes = 32;  // its bytes of 4-bit codes

// X's codes, each step's even columns then its odd ones, zero-padded to whole steps, with each
// row's scale and the sum of its codes over each run of `run` columns (a multiple of a step, or
// at least K).
struct NibbleX {
  ParamTensor codes;  // [m, steps · kNibbleStep]
  int64_t stride = 0;
  int64_t runs = 0;
  std::vector<int32_t> sums;  // [m, runs]
  std::vector<float> scale;   // per row
};

inline NibbleX OrderX(const reference::Int8Activations& xq, int64_t m, int64_t k, int64_t run) {
  NibbleX out;
  const int64_t steps = (k + kNibbleStep - 1) / kNibbleStep;
  out.stride = steps * kNibbleStep;
  out.runs = (k + run - 1) / run;
  out.codes = ParamTensor(QDType::kINT8, m, out.stride);
  out.sums.assign(static_cast<size_t>(m * out.runs), 0);
  out.scale = xq.scale;
  // A run is whole steps or the whole row, so each step's sum adds to one run's.
  for (int64_t t = 0; t < m; ++t) {
    const int8_t* src = xq.codes.data() + t * k;
    int8_t* dst = out.codes.data<int8_t>() + t * out.stride;
    for (int64_t c0 = 0; c0 < k; c0 += kNibbleStep) {
      const int64_t width = k - c0 < kNibbleStep ? k - c0 : kNibbleStep;
      int8_t* step = dst + c0;
      int32_t sum = 0;
      for (int64_t i = 0; i < width; ++i) {
        step[(i % 2) * (kNibbleStep / 2) + i / 2] = src[c0 + i];
        sum += src[c0 + i];
      }
      out.sums[t * out.runs + c0 / run] += sum;
    }
  }
  return out;
}

// W's prepack for the nibble GEMM: blocks of 4 rows, every step of a row, the last zero-padded.
inline cpu::RowInterleave NibbleSteps(const LinearParams& params) {
  return cpu::InterleaveRows(params.tensor(Slot::kWeight), kBlockRows, kNibbleStepBytes,
                             (params.cols + kNibbleStep - 1) / kNibbleStep);
}

// A codes policy C gives: `Halves Split(const uint8_t* step)`; `__m256i Pairs(const Halves&,
// __m256i even, __m256i odd)`, the step's products in int16 pairs; `int64_t run_steps`;
// `kPairSteps`, the steps whose pairs stay below 2^15; `kZeros` with `int32_t Zero(row, g)`;
// `__m256 RunScales(row, g)`, the lanes' scales of run g; `kValueScale`, what the codes' values
// are multiplied by (E2M1 looked up doubled: 1/2); `kExactOneRun` with `float Scale(row, g)`.
template <typename C>
struct NibbleProblem {
  C w;
  const cpu::RowInterleave* packed;
  const NibbleX* x;
  const LinearParams* params;
  MutableMatrix y;
};

// P rows of X from row t0 against the R rows of W from `first` (their steps at `block`):
// out[p][r] is the product before the bias.
template <typename C, int R, int P>
void NibblePass(const NibbleProblem<C>& pr, const uint8_t* block, int64_t first, int64_t t0,
                float out[kPassRows][kBlockRows]) {
  const C& w = pr.w;
  const NibbleX& x = *pr.x;
  const int64_t steps = pr.packed->steps;
  const bool one_run = w.run_steps >= steps;
  const bool exact_sum = C::kExactOneRun && one_run;
  const int8_t* xs = x.codes.data<int8_t>() + t0 * x.stride;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 total[P][R];
  int32_t exact[P][R] = {};
  for (int p = 0; p < P; ++p) {
    for (int r = 0; r < R; ++r) total[p][r] = _mm256_setzero_ps();
  }
  for (int64_t s0 = 0, g = 0; s0 < steps; s0 += w.run_steps, ++g) {
    const int64_t s1 = s0 + w.run_steps < steps ? s0 + w.run_steps : steps;
    __m256i acc[P][R];
    for (int p = 0; p < P; ++p) {
      for (int r = 0; r < R; ++r) acc[p][r] = _mm256_setzero_si256();
    }
    for (int64_t c0 = s0; c0 < s1; c0 += C::kPairSteps) {
      const int64_t c1 = c0 + C::kPairSteps < s1 ? c0 + C::kPairSteps : s1;
      __m256i pairs[P][R];
      for (int p = 0; p < P; ++p) {
        for (int r = 0; r < R; ++r) pairs[p][r] = _mm256_setzero_si256();
      }
      for (int64_t s = c0; s < c1; ++s) {
        const uint8_t* step = block + s * R * kNibbleStepBytes;
        for (int64_t line = 0; line < R * kNibbleStepBytes; line += 64) {
          _mm_prefetch(reinterpret_cast<const char*>(step) + kPrefetchBytes + line, _MM_HINT_T0);
        }
        for (int r = 0; r < R; ++r) {
          const auto halves = w.Split(step + r * kNibbleStepBytes);
          for (int p = 0; p < P; ++p) {
            const int8_t* xp = xs + p * x.stride + s * kNibbleStep;
            const __m256i even = _mm256_load_si256(reinterpret_cast<const __m256i*>(xp));
            const __m256i odd = _mm256_load_si256(reinterpret_cast<const __m256i*>(xp + 32));
            pairs[p][r] = _mm256_add_epi16(pairs[p][r], w.Pairs(halves, even, odd));
          }
        }
      }
      for (int p = 0; p < P; ++p) {
        for (int r = 0; r < R; ++r) {
          acc[p][r] = _mm256_add_epi32(acc[p][r], _mm256_madd_epi16(pairs[p][r], ones));
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      if constexpr (C::kZeros) {
        // Σ qx · (q − z) = Σ qx · q − z · Σ qx, the second term off lane 0: exact.
        const int32_t z = w.Zero(first + r, g);
        for (int p = 0; p < P; ++p) {
          const int32_t zero_term = z * x.sums[(t0 + p) * x.runs + g];
          acc[p][r] =
              _mm256_sub_epi32(acc[p][r], _mm256_setr_epi32(zero_term, 0, 0, 0, 0, 0, 0, 0));
        }
      }
      if (exact_sum) {
        for (int p = 0; p < P; ++p) exact[p][r] = SumLanes(acc[p][r]);
        continue;
      }
      const __m256 scales = w.RunScales(first + r, g);
      for (int p = 0; p < P; ++p) {
        total[p][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[p][r]), scales, total[p][r]);
      }
    }
  }
  for (int p = 0; p < P; ++p) {
    const float sx = x.scale[t0 + p];
    for (int r = 0; r < R; ++r) {
      if constexpr (C::kExactOneRun) {
        if (exact_sum) {
          // Multiplied apart from the bias's add, as the reference does (no FMA contraction).
          float product = static_cast<float>(exact[p][r]) * (sx * w.Scale(first + r, 0));
          __asm__("" : "+v"(product));
          out[p][r] = product;
          continue;
        }
      }
      out[p][r] = sx * C::kValueScale * Sum(total[p][r]);
    }
  }
}

// Every row of X against the R rows of W from `first`, into Y with the bias.
template <typename C, int R>
void NibbleRowBlock(const NibbleProblem<C>& pr, int64_t first) {
  const int64_t n = pr.params->rows;
  const cpu::RowInterleave& packed = *pr.packed;
  const uint8_t* block = packed.bytes.data<uint8_t>() + first * packed.steps * packed.step_bytes;
  const ParamTensor& bias = pr.params->tensor(Slot::kBias);
  const int64_t m = pr.y.rows;
  for (int64_t t = 0; t < m; t += kPassRows) {
    float out[kPassRows][kBlockRows];
    const int64_t rows = m - t < kPassRows ? m - t : kPassRows;
    if (rows == kPassRows) {
      NibblePass<C, R, kPassRows>(pr, block, first, t, out);
    } else {
      NibblePass<C, R, 1>(pr, block, first, t, out);
    }
    for (int64_t p = 0; p < rows; ++p) {
      for (int r = 0; r < R; ++r) {
        const float b = bias.empty() ? 0.0f : LoadFloat(bias, first + r);
        reference::StoreOutput(pr.y, (t + p) * n + first + r, out[p][r] + b);
      }
    }
  }
}

template <typename C, int R>
void NibbleTailBlock(const NibbleProblem<C>& pr, int64_t first) {
  if constexpr (R > 0) {
    if (pr.params->rows - first == R) return NibbleRowBlock<C, R>(pr, first);
    NibbleTailBlock<C, R - 1>(pr, first);
  }
}

template <typename C>
void NibbleGemm(const NibbleProblem<C>& pr) {
  const int64_t blocks = pr.params->rows / kBlockRows;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
  for (int64_t block = 0; block < blocks; ++block) {
    NibbleRowBlock<C, kBlockRows>(pr, block * kBlockRows);
  }
  if (blocks * kBlockRows < pr.params->rows) {
    NibbleTailBlock<C, kBlockRows - 1>(pr, blocks * kBlockRows);
  }
}

}  // namespace quantpath::avx2
