// Weights of 1 or 2 bytes (e4m3 codes, bf16 values) in the rows-in-lanes prepack
// (lane_pack_avx512vnni.h), for the rows-in-lanes GEMM (lanes_bf16_avx512vnni.h): a chunk's bytes
// for 16 rows are four pieces of 32 elements, piece h holding each row's columns c + 2h and c + 2h
// + 1 side by side, so that each piece, widened to bf16 where it is not, gives a row's pair in each
// 32-bit lane; X in natural order. Each run's fp32 scale, where there is one, beside the codes.
//
// Included only by *_avx512vnni.cc files, which are all compiled with the same flags.
#pragma once

#include "src/base/avx512_intrinsics.h"

#include <cstdint>
#include <cstring>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/lane_pack_avx512vnni.h"

namespace quantpath::avx512vnni {

// The chunk geometry of a Source of kElementBytes-byte weights.
template <int64_t kElementBytes>
struct PairChunks {
  static constexpr int64_t kPieceBytes = 32 * kElementBytes;
  static constexpr int64_t kVectorBytes = 4 * kPieceBytes;
  static constexpr int kChunkPosition[kLaneChunk] = {0, 1, 2, 3, 4, 5, 6, 7};
};

// An N × K layer's `weights` (kElementBytes each, row-major) in the lanes' layout, with each run of
// `group` columns' scale `scale(row, g)` (kScales) as fp32.
template <int64_t kElementBytes, bool kScales, typename ScaleOf>
LanePack PackPairLanes(const std::byte* weights, int64_t n, int64_t k, int64_t group,
                       ScaleOf scale) {
  using Chunks = PairChunks<kElementBytes>;
  LanePack pack =
      LanePack::Empty(n, k, group, Chunks::kVectorBytes, kScales ? sizeof(float) : 0, false);
  for (int64_t b = 0; b < pack.blocks(); ++b) {
    std::byte* block = pack.codes.raw() + b * pack.codes.row_bytes();
    for (int64_t i = 0; i < kLaneBlockRows && b * kLaneBlockRows + i < n; ++i) {
      const int64_t row = b * kLaneBlockRows + i;
      const int64_t v = i / 16, r = i % 16;
      for (int64_t col = 0; col < k; ++col) {
        const int64_t c = col / kLaneChunk, h = col % kLaneChunk / 2, e = col % 2;
        std::memcpy(block + (c * kLaneVectors + v) * Chunks::kVectorBytes +
                        h * Chunks::kPieceBytes + (r * 2 + e) * kElementBytes,
                    weights + (row * k + col) * kElementBytes, kElementBytes);
      }
      if constexpr (kScales) {
        for (int64_t g = 0; g < pack.groups; ++g) {
          const float s = scale(row, g);
          std::memcpy(pack.ScaleAt(b, g, i), &s, sizeof s);
        }
      }
    }
  }
  return pack;
}

}  // namespace quantpath::avx512vnni
