// The rows-in-lanes layout of 4-bit integer weights (int_family.h) that the AVX-512 kernels on
// int4 codes share, with int8 activations (vpdpbusd) or bf16 ones (vdpbf16ps): W prepacked once
// into blocks of 32 rows; per 8 columns c … c + 7 a block holds two 64-byte vectors of 16 rows, row
// j's 4 bytes at 4j holding columns c … c + 3 in their low nibbles and c + 4 … c + 7 in their high
// ones. A lane is a row of W, so a product is 16 rows' sums against one broadcast piece of X, a
// group's scale is one vector product per 16 rows however long the group, and nothing is summed
// across lanes. The scales stay in their stored type beside the block's codes (fp32 ones in fp32),
// the zero points in bytes, so a decode row reads about the bytes the layer stores.
//
// Included only by *_avx512vnni.cc files, which are all compiled with the same flags.
#pragma once

#include "src/base/avx512_intrinsics.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/int_codes.h"
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/int_family.h"

namespace quantpath::avx512vnni {

inline constexpr int64_t kLaneChunk = 8;  // columns of a chunk: a quad in each nibble
inline constexpr int kLaneVectors = 2;    // vectors of 16 rows in a block
inline constexpr int64_t kLaneBlockRows = 16 * kLaneVectors;
inline constexpr int64_t kLaneChunkBytes = 64 * kLaneVectors;

// W's prepack: blocks of kLaneBlockRows rows (rows past N zero), each chunk's kLaneChunkBytes,
// and per group the rows' scales and zero points.
struct Int4Lanes {
  ParamTensor codes;       // [blocks, chunks · kLaneChunkBytes]
  int64_t chunks = 0;      // ⌈K / 8⌉, the last one zero-padded
  int64_t run_chunks = 0;  // a group's (the last group's may be fewer)
  int64_t groups = 0;
  QDType scale_dtype = QDType::kFP32;  // as stored: fp16, bf16 or fp32
  ParamTensor scales;                  // [blocks, groups · kLaneBlockRows] of scale_dtype
  ParamTensor zeros;                   // [blocks, groups · kLaneBlockRows] codes, if any

  int64_t scale_bytes() const { return scale_dtype == QDType::kFP32 ? 4 : 2; }
  const uint8_t* Block(int64_t b) const { return codes.data<uint8_t>() + b * codes.row_bytes(); }

  // 16 rows' scales of group g of block b (vector v), widened to fp32.
  __m512 Scales(int64_t b, int64_t g, int v) const {
    const std::byte* at =
        scales.raw() + b * scales.row_bytes() + (g * kLaneBlockRows + v * 16) * scale_bytes();
    if (scale_dtype == QDType::kFP32) return _mm512_loadu_ps(at);
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at));
    if (scale_dtype == QDType::kFP16) return _mm512_cvtph_ps(bits);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
  }
  // Their zero points as int32 (the layout has them).
  __m512i Zeros(int64_t b, int64_t g, int v) const {
    const uint8_t* at = zeros.data<uint8_t>() + b * zeros.row_bytes() + g * kLaneBlockRows + v * 16;
    return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(at)));
  }
};

template <bool kZero>
Int4Lanes PackInt4Lanes(const LinearParams& params) {
  const auto w = cpu::IntCodes<CpuLevel::kAvx512Vnni, 4, kZero>::Of(params);
  const int64_t n = params.rows, k = params.cols;
  Int4Lanes pack;
  pack.chunks = (k + kLaneChunk - 1) / kLaneChunk;
  pack.run_chunks = w.group >= k ? pack.chunks : w.group / kLaneChunk;
  pack.groups = (pack.chunks + pack.run_chunks - 1) / pack.run_chunks;
  pack.scale_dtype = w.scale_dtype;
  const int64_t blocks = (n + kLaneBlockRows - 1) / kLaneBlockRows;
  const int64_t per_block = pack.groups * kLaneBlockRows;
  pack.codes = ParamTensor(QDType::kINT8, blocks, pack.chunks * kLaneChunkBytes);
  pack.scales = ParamTensor(w.scale_dtype, blocks, per_block);
  if constexpr (kZero) pack.zeros = ParamTensor(QDType::kINT8, blocks, per_block);
  const int64_t scale_bytes = pack.scale_bytes();
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t* codes = pack.codes.data<uint8_t>() + b * pack.codes.row_bytes();
    std::byte* scales = pack.scales.raw() + b * pack.scales.row_bytes();
    for (int64_t i = 0; i < kLaneBlockRows && b * kLaneBlockRows + i < n; ++i) {
      const int64_t row = b * kLaneBlockRows + i;
      const uint8_t* src = w.codes + row * w.row_bytes;
      for (int64_t c = 0; c < pack.chunks; ++c) {
        for (int64_t s = 0; s < 4; ++s) {
          const int64_t col = c * kLaneChunk + s;
          const uint32_t low = col < k ? ReadCode(src, col, 4) : 0;
          const uint32_t high = col + 4 < k ? ReadCode(src, col + 4, 4) : 0;
          codes[c * kLaneChunkBytes + i * 4 + s] = static_cast<uint8_t>(low | high << 4);
        }
      }
      for (int64_t g = 0; g < pack.groups; ++g) {
        const int64_t at = g * kLaneBlockRows + i;
        std::memcpy(scales + at * scale_bytes, w.scales + (row * w.scale_stride + g) * scale_bytes,
                    static_cast<size_t>(scale_bytes));
        if constexpr (kZero) pack.zeros.data<uint8_t>()[b * per_block + at] = w.Zero(row, g);
      }
    }
  }
  return pack;
}

// The prepack of `params` (with zero points or without), kept with them for `kernel`.
inline const Int4Lanes& PackedInt4Lanes(const LinearKernel* kernel, const LinearParams& params) {
  return params.packs.Get<Int4Lanes>(kernel, [&] {
    return std::make_unique<Int4Lanes>(params.tensor(Slot::kWeightZero).empty()
                                           ? PackInt4Lanes<false>(params)
                                           : PackInt4Lanes<true>(params));
  });
}

// 4 bytes at `at` in every lane, loaded by the broadcast itself: GCC merges two adjacent pieces
// into one 8-byte load and broadcasts each from a general register, which cost a third of the GEMM.
inline __m512i BroadcastPiece(const void* at) {
  __m512i v;
  __asm__("vpbroadcastd %1, %0" : "=v"(v) : "m"(*static_cast<const int32_t*>(at)));
  return v;
}

// Row t of Y for block b: `values` (kLaneBlockRows of them, rows past N ignored) plus the bias.
inline void StoreLaneRow(const LinearParams& params, const MutableMatrix& y, int64_t b, int64_t t,
                         const __m512 values[kLaneVectors]) {
  const int64_t n = params.rows, first = b * kLaneBlockRows;
  alignas(64) float row[kLaneBlockRows];
  for (int v = 0; v < kLaneVectors; ++v) _mm512_store_ps(row + v * 16, values[v]);
  const ParamTensor& bias = params.tensor(Slot::kBias);
  for (int64_t r = 0; r < std::min(kLaneBlockRows, n - first); ++r) {
    reference::StoreOutput(y, t * n + first + r,
                           row[r] + (bias.empty() ? 0.0f : LoadFloat(bias, first + r)));
  }
}

// Calls rows(b, t0, t1) for every block b of `pack` and rows of X [t0, t1) in tiles of 64, which
// stay in L2 while W passes; OpenMP splits the blocks.
template <typename Rows>
void ForEachLaneBlock(const Int4Lanes& pack, int64_t m, Rows rows) {
  constexpr int64_t kTileRows = 64;
  const int64_t blocks = pack.codes.rows();
  for (int64_t t0 = 0; t0 < m; t0 += kTileRows) {
    const int64_t t1 = std::min(m, t0 + kTileRows);
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t b = 0; b < blocks; ++b) rows(b, t0, t1);
  }
}

}  // namespace quantpath::avx512vnni
