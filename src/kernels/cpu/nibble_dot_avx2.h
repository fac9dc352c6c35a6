// The AVX2 GEMM of 4-bit weight codes with int8 (or int4) activation codes on vpmaddubsw, which
// multiplies 32 unsigned bytes by 32 signed ones into 16 int16 sums of pairs. A 32-byte step of a
// row of W holds 64 columns, byte b columns 2b (low nibble) and 2b + 1 (high); the spec's codes
// policy turns each half into 32 bytes (Split) and multiplies them with X's codes of the even and
// of the odd columns (Pairs; X reordered so per step, OrderX). Up to kPairSteps steps add in int16
// before vpmaddwd widens them into int32 lanes, lane j holding columns 8j … 8j + 7 of each step. A
// run of steps shares its scales (one per row, or one per lane): its lanes are scaled into fp32
// totals; a policy whose codes are offset by a zero point takes z · Σ qx off lane 0 first, exact;
// one run over the whole row may be summed as integers instead (kExactOneRun), for the
// reference's bits. Several runs of one scale a row (kRowScales) sum a block's four rows into the
// lanes of one vector per row of X and scale them together (NibblePassRows).
//
// W is prepacked in blocks of 4 rows (row_interleave.h), each row's last step padded with zeros,
// and X with zero codes to whole steps, so the padding adds nothing. Two rows of X at a time pass
// over a block; OpenMP splits N.
//
// Included only by *_avx2.cc files, which are all compiled with the same flags.
#pragma once

#include <immintrin.h>

#include <algorithm>
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

// A policy whose runs are always the same steps gives them as `kRunSteps` (and `run_steps`).
template <typename C>
inline constexpr int64_t kConstantRunSteps = 0;
template <typename C>
requires requires { C::kRunSteps; }
inline constexpr int64_t kConstantRunSteps<C> = C::kRunSteps;

// The int32 lanes of P rows of X and R rows of W over `count` steps from s0 (kSteps of them where
// kSteps > 0: a constant the loops unroll for; a run's steps known only at run time cost int4
// group 128 a sixth of its time at 8 rows of X).
template <typename C, int R, int P, int64_t kSteps>
inline void RunOfRows(const NibbleProblem<C>& pr, const uint8_t* block, const int8_t* xs,
                      int64_t s0, int64_t count, __m256i acc[P][R]) {
  const NibbleX& x = *pr.x;
  const int64_t steps = kSteps > 0 ? kSteps : count;
  const __m256i ones = _mm256_set1_epi16(1);
  for (int p = 0; p < P; ++p) {
    for (int r = 0; r < R; ++r) acc[p][r] = _mm256_setzero_si256();
  }
  for (int64_t c0 = 0; c0 < steps; c0 += C::kPairSteps) {
    const int64_t c1 = c0 + C::kPairSteps < steps ? c0 + C::kPairSteps : steps;
    __m256i pairs[P][R];
    for (int p = 0; p < P; ++p) {
      for (int r = 0; r < R; ++r) pairs[p][r] = _mm256_setzero_si256();
    }
    for (int64_t s = s0 + c0; s < s0 + c1; ++s) {
      const uint8_t* step = block + s * R * kNibbleStepBytes;
      for (int64_t line = 0; line < R * kNibbleStepBytes; line += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(step) + kPrefetchBytes + line, _MM_HINT_T0);
      }
      for (int r = 0; r < R; ++r) {
        const auto halves = pr.w.Split(step + r * kNibbleStepBytes);
        for (int p = 0; p < P; ++p) {
          const int8_t* xp = xs + p * x.stride + s * kNibbleStep;
          const __m256i even = _mm256_load_si256(reinterpret_cast<const __m256i*>(xp));
          const __m256i odd = _mm256_load_si256(reinterpret_cast<const __m256i*>(xp + 32));
          pairs[p][r] = _mm256_add_epi16(pairs[p][r], pr.w.Pairs(halves, even, odd));
        }
      }
    }
    for (int p = 0; p < P; ++p) {
      for (int r = 0; r < R; ++r) {
        acc[p][r] = _mm256_add_epi32(acc[p][r], _mm256_madd_epi16(pairs[p][r], ones));
      }
    }
  }
}

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
  __m256 total[P][R];
  int32_t exact[P][R] = {};
  for (int p = 0; p < P; ++p) {
    for (int r = 0; r < R; ++r) total[p][r] = _mm256_setzero_ps();
  }
  for (int64_t s0 = 0, g = 0; s0 < steps; s0 += w.run_steps, ++g) {
    constexpr int64_t kRun = kConstantRunSteps<C>;
    __m256i acc[P][R];
    if (kRun > 0 && s0 + kRun <= steps) {
      RunOfRows<C, R, P, kRun>(pr, block, xs, s0, kRun, acc);
    } else {
      RunOfRows<C, R, P, 0>(pr, block, xs, s0, std::min(w.run_steps, steps - s0), acc);
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

// A policy whose runs each have one scale a row (`float Scale(row, g)`, kRowScales) and several
// runs a row is taken by NibblePassRows.
template <typename C>
inline constexpr bool kRowScales = requires {
  requires C::kRowScales;
};

// The four sums of a block's rows, one per lane, twice: [r0 r1 r2 r3 | r0 r1 r2 r3], each row's
// total the sum of its two lanes.
inline __m256i SumsOfRows(const __m256i acc[kBlockRows]) {
  return _mm256_hadd_epi32(_mm256_hadd_epi32(acc[0], acc[1]), _mm256_hadd_epi32(acc[2], acc[3]));
}

// NibblePass for a whole block with several runs of row scales: each run's int32 lanes of the
// four rows are summed into one vector per row of X (SumsOfRows), its zero terms come off as one
// vector product, and it is scaled by one vector of the rows' scales into one fp32 total per row
// of X. Scaling each row's lanes apart took a widening, a conversion and an FMA per row of W and
// run, on the ports vpmaddubsw needs, and 8 totals that did not fit in registers beside the sums.
template <typename C, int P, int64_t kSteps>
void NibblePassRows(const NibbleProblem<C>& pr, const uint8_t* block, int64_t first, int64_t t0,
                    float out[kPassRows][kBlockRows]) {
  constexpr int R = kBlockRows;
  const C& w = pr.w;
  const NibbleX& x = *pr.x;
  const int64_t steps = pr.packed->steps;
  const int8_t* xs = x.codes.data<int8_t>() + t0 * x.stride;
  __m256 total[P];
  for (int p = 0; p < P; ++p) total[p] = _mm256_setzero_ps();
  for (int64_t s0 = 0, g = 0; s0 < steps; s0 += w.run_steps, ++g) {
    __m256i acc[P][R];
    if (kSteps > 0 && s0 + kSteps <= steps) {
      RunOfRows<C, R, P, kSteps>(pr, block, xs, s0, kSteps, acc);
    } else {
      RunOfRows<C, R, P, 0>(pr, block, xs, s0, std::min(w.run_steps, steps - s0), acc);
    }
    // z · Σ qx off the first copy of each row's lane, exact; the scales in both copies.
    __m256i zeros = _mm256_setzero_si256();
    if constexpr (C::kZeros) {
      zeros = _mm256_setr_epi32(w.Zero(first, g), w.Zero(first + 1, g), w.Zero(first + 2, g),
                                w.Zero(first + 3, g), 0, 0, 0, 0);
    }
    const __m128 scales4 = _mm_setr_ps(w.Scale(first, g), w.Scale(first + 1, g),
                                       w.Scale(first + 2, g), w.Scale(first + 3, g));
    const __m256 scales = _mm256_set_m128(scales4, scales4);
    for (int p = 0; p < P; ++p) {
      const __m256i sum_x = _mm256_set1_epi32(x.sums[(t0 + p) * x.runs + g]);
      const __m256i sums = _mm256_sub_epi32(SumsOfRows(acc[p]), _mm256_mullo_epi32(zeros, sum_x));
      total[p] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), scales, total[p]);
    }
  }
  for (int p = 0; p < P; ++p) {
    const __m128 rows =
        _mm_add_ps(_mm256_castps256_ps128(total[p]), _mm256_extractf128_ps(total[p], 1));
    alignas(16) float values[R];
    _mm_store_ps(values, _mm_mul_ps(rows, _mm_set1_ps(x.scale[t0 + p] * C::kValueScale)));
    for (int r = 0; r < R; ++r) out[p][r] = values[r];
  }
}

// NibblePassRows where the policy and the row's runs take it, else NibblePass.
template <typename C, int R, int P>
void PassOfBlock(const NibbleProblem<C>& pr, const uint8_t* block, int64_t first, int64_t t0,
                 float out[kPassRows][kBlockRows]) {
  if constexpr (kRowScales<C> && R == kBlockRows) {
    if (pr.w.run_steps < pr.packed->steps) {
      if (pr.w.run_steps == 2) return NibblePassRows<C, P, 2>(pr, block, first, t0, out);
      if (pr.w.run_steps == 4) return NibblePassRows<C, P, 4>(pr, block, first, t0, out);
      return NibblePassRows<C, P, 0>(pr, block, first, t0, out);
    }
  }
  NibblePass<C, R, P>(pr, block, first, t0, out);
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
      PassOfBlock<C, R, kPassRows>(pr, block, first, t, out);
    } else {
      PassOfBlock<C, R, 1>(pr, block, first, t, out);
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
