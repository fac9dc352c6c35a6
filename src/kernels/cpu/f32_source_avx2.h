// What the prepacked AVX2 GEMMs (f32_dot_avx2.h for decode and small M, f32_tiles_avx2.h for
// prefill) share: the Source concept a spec's kernel implements, the kernel's prepack of W, and
// the loads and sums both use.
//
// Included only by *_avx2.cc files, which are all compiled with the same flags.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <concepts>
#include <cstdint>
#include <memory>
#include <span>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/row_blocks_avx2.h"
#include "src/kernels/cpu/row_interleave.h"
#include "src/kernels/cpu/x_order.h"

namespace quantpath::avx2 {

// A Source gives `int64_t group`, the columns of a run (a multiple of kStep, or the row); `kStep`,
// the columns one load covers (kStep / 8 vectors), stored in `kStepBytes` bytes of W's row;
// `Load(p, out)`: the codes of one step at `p` (32-byte aligned) as fp32 values, exact and
// unscaled, vector v paired with X's values at positions 8v … 8v + 7 of the step in the order
// `kXOrder` arranges X; `float Scale(row, g)` for run g; `float Zero(row, g)`, what the codes are
// offset by (`kZeros` false where it is always 0); `float Load1(row, col)`, the dequantized value,
// for the columns past the last full step. A Source whose runs are narrower than a step sets
// `kLaneScales`: its runs are its steps, each vector's lane i in the same run of them, and
// `Scale(row, g)` is an __m256 of the lanes' scales (and it has no zero points).
template <typename S>
inline constexpr bool kLaneScales = requires {
  requires S::kLaneScales;
};

// A Source may also give `kLoadExponents`, one per vector of a step: its loads give vector v's
// values times 2^kLoadExponents[v] (a 4-bit code converted where it sits in its word costs one
// operation fewer than shifted down first; E2M1 values doubled are integers). The decode paths then
// take X's positions 8v … 8v + 7 times the inverse (F32Rows), so every product is the exact values'
// own, and the tiles scale the loads back.
template <typename S>
constexpr std::span<const int> LoadExponents() {
  if constexpr (requires { S::kLoadExponents; }) {
    if (std::ranges::any_of(S::kLoadExponents, [](int e) { return e != 0; })) {
      return S::kLoadExponents;
    }
  }
  return {};
}

// 2^e for a normal power (−126 ≤ e ≤ 127), built from its bits so that it folds at compile time.
constexpr float TwoToThe(int e) {
  return std::bit_cast<float>(static_cast<uint32_t>(127 + e) << 23);
}

// A Source whose vectors are each converted on their own from the step's words gives, instead of
// Load, `Words(p)`, the step's words in registers, and `Vector(words, v)`, vector v of them: one
// row of X then loads each of its vectors once for a block's rows (LoadStep makes the whole step).
template <typename S>
inline constexpr bool kVectorLoads = requires(const S& w, const uint8_t* p) {
  w.Vector(w.Words(p), 0);
};

// The rows of X up to which a Source of words converts each vector in registers for every pair of
// rows, not once into a tile for all of them (f32_dot_avx2.h): its `kRegisterRows`, else one.
template <typename S>
inline constexpr int64_t kRegisterRows = [] {
  if constexpr (requires { S::kRegisterRows; }) {
    return int64_t{S::kRegisterRows};
  } else {
    return int64_t{1};
  }
}();

template <typename S>
concept StepSource = requires(const S& w, int64_t i, const uint8_t* p, __m256* out) {
  { w.group } -> std::convertible_to<int64_t>;
  requires kVectorLoads<S> || requires { w.Load(p, out); };
  requires(kLaneScales<S> ? !S::kZeros : std::convertible_to<decltype(w.Scale(i, i)), float>);
  { w.Zero(i, i) } -> std::convertible_to<float>;
  { w.Load1(i, i) } -> std::convertible_to<float>;
  { S::kZeros } -> std::convertible_to<bool>;
  { S::kStep } -> std::convertible_to<int64_t>;
  { S::kStepBytes } -> std::convertible_to<int64_t>;
  { S::kXOrder } -> std::convertible_to<cpu::XOrder>;
};

template <StepSource S>
inline constexpr int kVectors = static_cast<int>(S::kStep / 8);

// The step at p as fp32 vectors (Load, or each Vector of its Words).
template <StepSource S>
inline void LoadStep(const S& w, const uint8_t* p, __m256 out[kVectors<S>]) {
  if constexpr (kVectorLoads<S>) {
    const auto words = w.Words(p);
    for (int v = 0; v < kVectors<S>; ++v) out[v] = w.Vector(words, v);
  } else {
    w.Load(p, out);
  }
}

inline constexpr int64_t kPrefetchBytes = 8192;  // how far ahead of its reads a block is fetched

// The 32 bytes at p in a register, loaded once: GCC otherwise folds the load into each instruction
// that reads the bytes, and each of those loads of a line not yet in L1 waits as one more miss.
inline __m256i LoadOnce(const uint8_t* p) {
  __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(p));
  __asm__("" : "+x"(v));
  return v;
}

// The kernel's prepack of W for Source S (made on the first call, kept with the parameters).
template <StepSource S>
const cpu::RowInterleave& Packed(const LinearKernel* kernel, const LinearParams& params) {
  return params.packs.Get<cpu::RowInterleave>(kernel, [&] {
    return std::make_unique<cpu::RowInterleave>(cpu::InterleaveRows(
        params.tensor(Slot::kWeight), kBlockRows, S::kStepBytes, params.cols / S::kStep));
  });
}

// Step s of a block of R rows from `block`: its rows' kStepBytes side by side.
template <StepSource S, int R>
inline const uint8_t* StepOf(const uint8_t* block, int64_t s) {
  return block + s * R * S::kStepBytes;
}

template <StepSource S, int R>
inline void PrefetchAhead(const uint8_t* step) {
  for (int64_t line = 0; line < R * S::kStepBytes; line += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(step) + kPrefetchBytes + line, _MM_HINT_T0);
  }
}

// Run g's scales for W row `row`, in every lane.
template <StepSource S>
inline __m256 ScaleVector(const S& w, int64_t row, int64_t g) {
  if constexpr (kLaneScales<S>) {
    return w.Scale(row, g);
  } else {
    return _mm256_set1_ps(w.Scale(row, g));
  }
}

// Σ over the columns [full, k) of X row x times W row `row`.
template <StepSource S>
inline float Tail(const S& w, int64_t row, const float* x, int64_t full, int64_t k) {
  float sum = 0;
  for (int64_t c = full; c < k; ++c) sum += x[c] * w.Load1(row, c);
  return sum;
}

}  // namespace quantpath::avx2
