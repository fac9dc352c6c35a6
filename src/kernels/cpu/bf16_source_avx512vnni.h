// What the AVX-512 BF16 GEMMs (bf16_dot_avx512vnni.h for decode and small M,
// bf16_tiles_avx512vnni.h for prefill) share: the Source concept a spec's kernel implements, the
// kernel's prepack of W, and the dot product, loads and sums both use.
//
// Included only by *_avx512vnni.cc files, which are all compiled with the same flags.
#pragma once

#include "src/base/avx512_intrinsics.h"

#include <concepts>
#include <cstdint>
#include <memory>
#include <vector>

#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "src/kernels/cpu/bf16_rows.h"
#include "src/kernels/cpu/row_interleave.h"
#include "src/kernels/reference/reference_gemm.h"

namespace quantpath::avx512vnni {

inline constexpr int64_t kBlockRows = 4;       // rows of W per block
inline constexpr int64_t kWidth = 32;          // columns per vector
inline constexpr int64_t kTileColumns = 2048;  // columns of a block converted at once
inline constexpr int64_t kTileRows = 16;       // bf16 rows of X per panel (even: split pairs stay)
inline constexpr int64_t kXTileRows =
    64;                              // bf16 rows of X per pass over all of W: a multiple of it
inline constexpr int kPassRows = 4;  // rows of X per pass over a tile
inline constexpr int64_t kRegisterRows = 4;  // bf16 rows of X up to which W is not tiled

// A Source gives `int64_t group`, the columns of a run (a multiple of kStep, or the row); `kStep`,
// the columns one load covers (kStep / 32 vectors), stored in `kStepBytes` bytes of W's row;
// `Load(p, out)`: the codes of one step at `p` as bf16 values, exact and unscaled, vector v paired
// with X's values at positions 32v … of the step in the order `kXOrder` arranges X; `Scale(row, g)`
// for run g: a float where the run shares one scale, or (with `kLaneScales` true) an __m512 of
// one scale per lane where a run holds several groups, each in the same lanes of every vector
// (kXOrder puts them there);
// `float Zero(row, g)`, what the codes are offset by, taken off as Zero · Σ x (`kZeros` false
// where it is always 0; lane scales have none); `float Load1(row, col)`, the dequantized value,
// for the columns past the last full step.
template <typename S>
inline constexpr bool kLaneScales = requires {
  requires S::kLaneScales;
};

// Lane-scale Sources whose codes times `BlockScales(row, g)` are bf16 values (normal ones, which
// vdpbf16ps does not flush) where `folds`, leaving `RowScale(row)` for the whole row: the tiled
// GEMM converts them so, with one run a row.
template <typename S>
inline constexpr bool kFoldsScales = requires(const S& w, int64_t i) {
  requires kLaneScales<S>;
  { w.folds } -> std::convertible_to<bool>;
  {w.BlockScales(i, i)};
  { w.RowScale(i) } -> std::convertible_to<float>;
};

// Folding Sources whose codes times their block scales are not always bf16 values give
// `LoadFolded(p, lane_scales, out)`: Load's vectors with each product rounded once to bf16.
template <typename S>
inline constexpr bool kLoadsFolded = requires(const S& w, const uint8_t* p, __m512 lanes,
                                              __m512i* out) {
  requires kFoldsScales<S>;
  w.LoadFolded(p, lanes, out);
};

template <typename S>
concept PairSource = requires(const S& w, int64_t i, const uint8_t* p, __m512i* out) {
  { w.group } -> std::convertible_to<int64_t>;
  w.Load(p, out);
  w.Scale(i, i);
  requires(kLaneScales<S> ? !S::kZeros : std::same_as<decltype(w.Scale(i, i)), float>);
  { w.Zero(i, i) } -> std::convertible_to<float>;
  { w.Load1(i, i) } -> std::convertible_to<float>;
  { S::kZeros } -> std::convertible_to<bool>;
  { S::kStep } -> std::convertible_to<int64_t>;
  { S::kStepBytes } -> std::convertible_to<int64_t>;
  { S::kXOrder } -> std::convertible_to<cpu::XOrder>;
};

template <PairSource S>
inline constexpr int kVectors = static_cast<int>(S::kStep / kWidth);

// Run g's scale for W row `row` times X's scale, in every lane.
template <PairSource S>
inline __m512 RunScale(const S& w, int64_t row, int64_t g, float x_scale) {
  if constexpr (kLaneScales<S>) {
    return _mm512_mul_ps(w.Scale(row, g), _mm512_set1_ps(x_scale));
  } else {
    return _mm512_set1_ps(w.Scale(row, g) * x_scale);
  }
}

// The kernel's prepack of W for Source S (made on the first call, kept with the parameters).
template <PairSource S>
const cpu::RowInterleave& Packed(const LinearKernel* kernel, const LinearParams& params) {
  return params.packs.Get<cpu::RowInterleave>(kernel, [&] {
    return std::make_unique<cpu::RowInterleave>(cpu::InterleaveRows(
        params.tensor(Slot::kWeight), kBlockRows, S::kStepBytes, params.cols / S::kStep));
  });
}

// A block of the prepack: its first row, its rows, and step s of row r.
struct PackedBlock {
  const uint8_t* base;
  int64_t rows;
  int64_t step_bytes;
  const uint8_t* At(int64_t step, int64_t r) const { return base + (step * rows + r) * step_bytes; }
};
inline PackedBlock BlockAt(const cpu::RowInterleave& w, int64_t first, int64_t rows) {
  return {w.bytes.data<uint8_t>() + first * w.steps * w.step_bytes, rows, w.step_bytes};
}

// How far ahead of the step being read the prepack is fetched into L1: the hardware's prefetcher
// alone, or 1–4 KiB ahead, left a single thread at 75–85 % of its read bandwidth; 8 KiB ahead
// reached 90–100 % for bf16 and 8-bit codes (4096², M = 1, on a 32 MiB-L3 machine).
inline constexpr int64_t kPrefetchBytes = 8192;

// The lines kPrefetchBytes past step `step` of a block's R rows (past the prepack's end a
// prefetch is dropped, never a fault).
template <PairSource S, int R>
inline void PrefetchAhead(const PackedBlock& block, int64_t step) {
  const char* ahead = reinterpret_cast<const char*>(block.At(step, 0)) + kPrefetchBytes;
  for (int64_t line = 0; line < R * S::kStepBytes; line += 64) {
    _mm_prefetch(ahead + line, _MM_HINT_T0);
  }
}

// A Source whose scales lie in their own tensor, a row's bytes for each step (NVFP4, MXFP4),
// fetches them with `PrefetchScales(row, step)` as far ahead as the prepack is.
template <PairSource S, int R>
inline void PrefetchScalesAhead(const S& w, int64_t first, int64_t step) {
  if constexpr (requires { w.PrefetchScales(first, step); }) {
    for (int r = 0; r < R; ++r) w.PrefetchScales(first + r, step);
  }
}

// The 64 bytes at p in a register, loaded once: GCC otherwise folds the load into each instruction
// that reads the bytes, and each of those loads of a line not yet in L1 waits as one more miss (a
// decode of 4-bit codes streamed at a third of the bandwidth so).
inline __m512i LoadOnce(const uint8_t* p) {
  __m512i v = _mm512_loadu_si512(p);
  __asm__("" : "+v"(v));
  return v;
}

inline __m512 Dot(__m512 acc, __m512i w, __m512i x) {
  return _mm512_dpbf16_ps(acc, (__m512bh)w, (__m512bh)x);
}

// The sum of v's lanes (GCC 12's _mm512_reduce_add_ps trips -Wuninitialized on its own body).
inline float Sum(__m512 v) {
  const __m512 halves = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0x4E));
  const __m128 quarter =
      _mm_add_ps(_mm512_castps512_ps128(halves),
                 _mm512_castps512_ps128(_mm512_shuffle_f32x4(halves, halves, 0xB1)));
  const __m128 pairs = _mm_add_ps(quarter, _mm_movehl_ps(quarter, quarter));
  return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_shuffle_ps(pairs, pairs, 1)));
}

// Σ over the columns past the last full step of bf16 row x times W row `row`.
template <PairSource S>
inline float Tail(const S& w, int64_t row, const uint16_t* x, const float* x_scales,
                  int64_t x_group, int64_t full, int64_t k) {
  float sum = 0;
  for (int64_t c = full; c < k; ++c) {
    const float x_scale = x_scales ? x_scales[c / x_group] : 1.0f;
    sum += Bf16ToFloat(x[c]) * x_scale * w.Load1(row, c);
  }
  return sum;
}

// X's scale for weight run g of a row whose X scales are `x_scales` (nullptr: none).
template <PairSource S>
inline float XScale(const S& w, const float* x_scales, int64_t x_group, int64_t g) {
  return x_scales ? x_scales[g * w.group / x_group] : 1.0f;
}

}  // namespace quantpath::avx512vnni
