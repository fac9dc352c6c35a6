// The rows-in-lanes layout of 4-bit weight codes that the AVX-512 kernels on them share (integer
// codes with int8 activations on vpdpbusd or bf16 ones on vdpbf16ps, E2M1 codes on vdpbf16ps):
// W prepacked once into blocks of 32 rows; per 8 columns c … c + 7 a block holds two 64-byte
// vectors of 16 rows, row j's 4 bytes at 4j holding columns c … c + 3 in their low nibbles and c +
// 4 … c + 7 in their high ones. A lane is a row of W, so a product is 16 rows' sums against one
// broadcast piece of X, a group's scale is one vector product per 16 rows however long the group,
// and nothing is summed across lanes. The scales stay in their stored type beside the block's
// codes, the zero points in bytes, so a decode row reads about the bytes the layer stores.
//
// Included only by *_avx512vnni.cc files, which are all compiled with the same flags.
#pragma once

#include "src/base/avx512_intrinsics.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "quantpath/kernels.h"
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/int_family.h"

namespace quantpath::avx512vnni {

inline constexpr int64_t kLaneChunk = 8;  // columns of a chunk: a quad in each nibble
inline constexpr int kLaneVectors = 2;    // vectors of 16 rows in a block
inline constexpr int64_t kLaneBlockRows = 16 * kLaneVectors;
inline constexpr int64_t kLaneChunkBytes = 64 * kLaneVectors;

// Where a layer keeps its 4-bit codes (packed low nibble first) and their scales.
struct NibbleSource {
  const uint8_t* codes;
  int64_t row_bytes;
  const std::byte* scales;  // scale_stride a row, scale_bytes each
  int64_t scale_stride;
  int64_t scale_bytes;
  int64_t group;  // columns a scale covers (K or more: one a row)
};

// W's prepack: blocks of kLaneBlockRows rows (rows past N zero), each chunk's kLaneChunkBytes,
// and per group the rows' scales (as stored) and zero points (codes, where the layout has them).
struct NibbleLanes {
  ParamTensor codes;       // [blocks, chunks · kLaneChunkBytes]
  int64_t chunks = 0;      // ⌈K / 8⌉, the last one zero-padded
  int64_t run_chunks = 0;  // a group's (the last group's may be fewer)
  int64_t groups = 0;
  int64_t scale_bytes = 0;
  ParamTensor scales;  // [blocks, groups · kLaneBlockRows · scale_bytes] bytes
  ParamTensor zeros;   // [blocks, groups · kLaneBlockRows] codes, if any

  const uint8_t* Block(int64_t b) const { return codes.data<uint8_t>() + b * codes.row_bytes(); }
  // The stored scales of 16 rows of block b (vector v) in group g.
  const std::byte* Scales(int64_t b, int64_t g, int v) const {
    return scales.raw() + b * scales.row_bytes() + (g * kLaneBlockRows + v * 16) * scale_bytes;
  }
  // Their zero points as int32 (the layout has them).
  __m512i Zeros(int64_t b, int64_t g, int v) const {
    const uint8_t* at = zeros.data<uint8_t>() + b * zeros.row_bytes() + g * kLaneBlockRows + v * 16;
    return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(at)));
  }
};

// The prepack of an N × K layer; `zero(row, g)` gives a zero point code where the layout has them
// (kZero).
template <bool kZero, typename ZeroOf>
NibbleLanes PackNibbleLanes(const NibbleSource& w, int64_t n, int64_t k, ZeroOf zero) {
  NibbleLanes pack;
  pack.chunks = (k + kLaneChunk - 1) / kLaneChunk;
  pack.run_chunks = w.group >= k ? pack.chunks : w.group / kLaneChunk;
  pack.groups = (pack.chunks + pack.run_chunks - 1) / pack.run_chunks;
  pack.scale_bytes = w.scale_bytes;
  const int64_t blocks = (n + kLaneBlockRows - 1) / kLaneBlockRows;
  const int64_t per_block = pack.groups * kLaneBlockRows;
  pack.codes = ParamTensor(QDType::kINT8, blocks, pack.chunks * kLaneChunkBytes);
  pack.scales = ParamTensor(QDType::kINT8, blocks, per_block * w.scale_bytes);
  if constexpr (kZero) pack.zeros = ParamTensor(QDType::kINT8, blocks, per_block);
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t* codes = pack.codes.data<uint8_t>() + b * pack.codes.row_bytes();
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
        std::memcpy(pack.scales.raw() + b * pack.scales.row_bytes() + at * w.scale_bytes,
                    w.scales + (row * w.scale_stride + g) * w.scale_bytes,
                    static_cast<size_t>(w.scale_bytes));
        if constexpr (kZero) pack.zeros.data<uint8_t>()[b * per_block + at] = zero(row, g);
      }
    }
  }
  return pack;
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
void ForEachLaneBlock(const NibbleLanes& pack, int64_t m, Rows rows) {
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
