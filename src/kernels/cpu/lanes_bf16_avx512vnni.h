// The GEMM of decode batches (M ≤ 16) on vdpbf16ps from the rows-in-lanes prepack
// (lane_pack_avx512vnni.h). The Source turns each vector of a chunk into 16 rows' bf16 pairs of
// two columns, four pair vectors a chunk's 8 columns, each multiplied with the matching pair of X
// broadcast, X reordered per chunk as the Source's pairs take the columns. Per group, y += s · Σ x
// · v(q) − s · o · Σ x, where the Source's codes stand for values offset by o (integer codes as the
// bf16 values 128 + q: o = 128 + z); an output scale (NVFP4's global) multiplies the total. A
// group costs two vector products per 16 rows however long, where the kernels that sum rows across
// lanes paid a reduction and scalar scale reads per row and group, which bound their decode rows at
// half the memory's speed. X in bf16: exact from bf16 values; other fp32 values are split into a
// high and a low bf16 part, both multiplied into the same sums (as bf16_rows.h does).
//
// A Source S gives: `kVectorBytes`, a chunk's bytes for each vector of 16 rows;
// `kChunkPosition[i]`, where column c + i sits in X's reordered chunk; `void Pairs(const uint8_t*
// vector, __m512i out[4]) const`; `__m512 Scales(const LanePack&, int64_t b, int64_t g, int v)
// const`, 16 rows' scales of group g; `kOffsets` with `__m512 Offsets(const LanePack&, b, g, v)
// const`; `float output_scale`.
//
// Included only by *_avx512vnni.cc files, which are all compiled with the same flags.
#pragma once

#include "src/base/avx512_intrinsics.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "src/kernels/cpu/bf16_source_avx512vnni.h"
#include "src/kernels/cpu/lane_pack_avx512vnni.h"
#include "src/kernels/cpu/x_order.h"
#include "src/kernels/reference/reference_gemm.h"

namespace quantpath::avx512vnni {

inline constexpr int kLanePassRows = 4;
inline constexpr int64_t kLanePrefetchBytes = 4096;
inline constexpr int kLanePairs = 4;  // bf16 pair vectors a chunk vector gives

// X as bf16 rows in the chunks' order, one part (bf16 input, or fp32 values that are all bf16
// values) or two (high parts, then low parts), and, for a Source with offsets, Σ x per row and
// group.
struct LaneX {
  std::vector<uint16_t> bits;  // [parts, m, chunks · 8]
  int64_t stride = 0;
  int parts = 1;
  std::vector<float> group_sums;  // [m, groups]
};

template <typename S>
LaneX OrderLaneX(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
                 const LanePack& pack) {
  const std::vector<float> xs = reference::PrepareActivations(params, act, x);
  const int64_t m = x.rows, k = x.cols;
  LaneX out;
  out.stride = pack.chunks * kLaneChunk;
  bool exact = x.dtype == QDType::kBF16 && act.mode == ActMode::kNone;
  if (!exact) {
    exact = std::all_of(xs.begin(), xs.end(),
                        [](float v) { return std::isnan(v) || Bf16ToFloat(FloatToBf16(v)) == v; });
  }
  out.parts = exact ? 1 : 2;
  out.bits.assign(static_cast<size_t>(out.parts * m * out.stride), 0);
  for (int64_t t = 0; t < m; ++t) {
    for (int64_t c = 0; c < k; ++c) {
      const int64_t at =
          t * out.stride + c / kLaneChunk * kLaneChunk + S::kChunkPosition[c % kLaneChunk];
      const float v = xs[t * k + c];
      const uint16_t high = FloatToBf16(v);
      out.bits[at] = high;
      if (!exact) out.bits[m * out.stride + at] = FloatToBf16(v - Bf16ToFloat(high));
    }
  }
  if constexpr (!S::kOffsets) return out;  // only offsets take Σ x
  const int64_t run = pack.run_chunks * kLaneChunk;
  out.group_sums.resize(static_cast<size_t>(m * pack.groups));
  for (int64_t t = 0; t < m; ++t) {
    for (int64_t g = 0; g < pack.groups; ++g) {
      out.group_sums[t * pack.groups + g] =
          cpu::RunSum(xs.data() + t * k, g * run, std::min(k, (g + 1) * run));
    }
  }
  return out;
}

// What a Source whose codes' values carry no offset gives.
struct NoOffsets {
  static constexpr bool kOffsets = false;
  __m512 Offsets(const LanePack&, int64_t, int64_t, int) const { return _mm512_setzero_ps(); }
};

template <typename S>
struct LaneProblem {
  S w;
  const LanePack* pack;
  const LaneX* x;
  const LinearParams* params;
  MutableMatrix y;
};

// The sums of P rows of X from t0 over chunks [c0, c1) of the block at `block`, in A accumulators a
// row of X and vector. kParts is X's (a count known at run time kept the accumulators in memory,
// as did accumulators handed out of this function).
template <typename S, int kParts, int P, int A>
inline void LaneSums(const LaneProblem<S>& pr, const uint8_t* block, int64_t t0, int64_t c0,
                     int64_t c1, __m512 sums[P][kLaneVectors]) {
  const LaneX& x = *pr.x;
  const int64_t m = pr.y.rows;
  __m512 acc[P][kLaneVectors][A];  // local: handed out, GCC kept them in memory
  for (int p = 0; p < P; ++p) {
    for (int v = 0; v < kLaneVectors; ++v) {
      for (int a = 0; a < A; ++a) acc[p][v][a] = _mm512_setzero_ps();
    }
  }
  for (int64_t c = c0; c < c1; ++c) {
    const uint8_t* chunk = block + c * S::kVectorBytes * kLaneVectors;
    for (int64_t line = 0; line < S::kVectorBytes * kLaneVectors; line += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(chunk) + kLanePrefetchBytes + line, _MM_HINT_T0);
    }
    __m512i pairs[kLaneVectors][kLanePairs];
    for (int v = 0; v < kLaneVectors; ++v) pr.w.Pairs(chunk + v * S::kVectorBytes, pairs[v]);
    for (int p = 0; p < P; ++p) {
      for (int part = 0; part < kParts; ++part) {
        const uint16_t* xc = x.bits.data() + (part * m + t0 + p) * x.stride + c * kLaneChunk;
        for (int i = 0; i < kLanePairs; ++i) {
          const __m512i xv = avx512vnni::BroadcastPiece(xc + 2 * i);
          for (int v = 0; v < kLaneVectors; ++v) {
            acc[p][v][i % A] = Dot(acc[p][v][i % A], pairs[v][i], xv);
          }
        }
      }
    }
  }
  for (int p = 0; p < P; ++p) {
    for (int v = 0; v < kLaneVectors; ++v) {
      sums[p][v] = acc[p][v][0];
      for (int a = 1; a < A; ++a) sums[p][v] = _mm512_add_ps(sums[p][v], acc[p][v][a]);
    }
  }
}

// P rows of X from t0 against block b: out[p][v] holds the products of 16 rows before the bias.
template <typename S, int kParts, int P>
void LanePass(const LaneProblem<S>& pr, int64_t b, int64_t t0, __m512 out[][kLaneVectors]) {
  // Two accumulators a row of X and vector whatever P: a row's products are added in the same
  // order alone as in a batch (the same bits), with enough of them in flight at P = 1.
  constexpr int A = 2;
  const LanePack& pack = *pr.pack;
  const LaneX& x = *pr.x;
  const uint8_t* block = pack.Block(b);
  __m512 total[P][kLaneVectors];
  for (int p = 0; p < P; ++p) {
    for (int v = 0; v < kLaneVectors; ++v) total[p][v] = _mm512_setzero_ps();
  }
  for (int64_t g = 0; g < pack.groups; ++g) {
    const int64_t c0 = g * pack.run_chunks;
    __m512 sums[P][kLaneVectors];
    LaneSums<S, kParts, P, A>(pr, block, t0, c0, std::min(pack.chunks, c0 + pack.run_chunks), sums);
    for (int v = 0; v < kLaneVectors; ++v) {
      const __m512 s = pr.w.Scales(pack, b, g, v);
      for (int p = 0; p < P; ++p) total[p][v] = _mm512_fmadd_ps(sums[p][v], s, total[p][v]);
      if constexpr (S::kOffsets) {
        const __m512 offset_scale = _mm512_mul_ps(s, pr.w.Offsets(pack, b, g, v));
        for (int p = 0; p < P; ++p) {
          const __m512 sum_x = _mm512_set1_ps(x.group_sums[(t0 + p) * pack.groups + g]);
          total[p][v] = _mm512_fnmadd_ps(offset_scale, sum_x, total[p][v]);
        }
      }
    }
  }
  const __m512 output_scale = _mm512_set1_ps(pr.w.output_scale);
  for (int p = 0; p < P; ++p) {
    for (int v = 0; v < kLaneVectors; ++v) out[p][v] = _mm512_mul_ps(total[p][v], output_scale);
  }
}

template <typename S, int kParts, int P>
void LanePassOf(const LaneProblem<S>& pr, int64_t b, int64_t t0, int rows,
                __m512 out[][kLaneVectors]) {
  if constexpr (P > 0) {
    if (rows == P) return LanePass<S, kParts, P>(pr, b, t0, out);
    LanePassOf<S, kParts, P - 1>(pr, b, t0, rows, out);
  }
}

// Rows [t0, t1) of X against block b, into Y with the bias.
template <typename S, int kParts>
void LaneBlock(const LaneProblem<S>& pr, int64_t b, int64_t t0, int64_t t1) {
  for (int64_t t = t0; t < t1; t += kLanePassRows) {
    __m512 out[kLanePassRows][kLaneVectors];
    const int64_t rows = std::min<int64_t>(kLanePassRows, t1 - t);
    LanePassOf<S, kParts, kLanePassRows>(pr, b, t, static_cast<int>(rows), out);
    for (int64_t p = 0; p < rows; ++p) StoreLaneRow(*pr.params, pr.y, b, t + p, out[p]);
  }
}

// Y = X · Wᵀ (+ bias) for the Source `w` over `pack`.
template <typename S>
void LanesGemm(const S& w, const LanePack& pack, const LinearParams& params,
               const ActivationQuant& act, const ConstMatrix& x, const MutableMatrix& y) {
  const LaneX xb = OrderLaneX<S>(params, act, x, pack);
  const LaneProblem<S> pr{w, &pack, &xb, &params, y};
  ForEachLaneBlock(pack, x.rows, [&](int64_t b, int64_t t0, int64_t t1) {
    if (xb.parts == 1) return LaneBlock<S, 1>(pr, b, t0, t1);
    LaneBlock<S, 2>(pr, b, t0, t1);
  });
}

}  // namespace quantpath::avx512vnni
