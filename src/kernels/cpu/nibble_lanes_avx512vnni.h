// 4-bit codes (packed low nibble first) in the rows-in-lanes prepack (lane_pack_avx512vnni.h):
// a chunk's vector holds row j's columns c … c + 3 in the low nibbles of its 4 bytes at 4j and c +
// 4 … c + 7 in their high ones.
//
// Included only by *_avx512vnni.cc files, which are all compiled with the same flags.
#pragma once

#include "src/base/avx512_intrinsics.h"

#include <cstdint>
#include <cstring>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/lane_pack_avx512vnni.h"
#include "src/specs/int_family.h"

namespace quantpath::avx512vnni {

inline constexpr int64_t kNibbleVectorBytes = 64;
inline constexpr int64_t kNibbleChunkBytes = kNibbleVectorBytes * kLaneVectors;

// The chunk geometry of a Source of 4-bit codes for the rows-in-lanes GEMM
// (lanes_bf16_avx512vnni.h): the 16-bit lanes of a vector shifted by 0, 4, 8 and 12 give the column
// pairs (c, c + 2), (c + 4, c + 6), (c + 1, c + 3) and (c + 5, c + 7).
struct NibbleChunks {
  static constexpr int64_t kVectorBytes = kNibbleVectorBytes;
  static constexpr int kChunkPosition[kLaneChunk] = {0, 4, 1, 5, 2, 6, 3, 7};
};

// Where a layer keeps its 4-bit codes (packed low nibble first) and their scales.
struct NibbleSource {
  const uint8_t* codes;
  int64_t row_bytes;
  const std::byte* scales;  // scale_stride a row, scale_bytes each
  int64_t scale_stride;
  int64_t scale_bytes;
  int64_t group;  // columns a scale covers (K or more: one a row)
};

// The prepack of an N × K layer; `zero(row, g)` gives a zero point code where the layout has them
// (kZero).
template <bool kZero, typename ZeroOf>
LanePack PackNibbleLanes(const NibbleSource& w, int64_t n, int64_t k, ZeroOf zero) {
  LanePack pack = LanePack::Empty(n, k, w.group, kNibbleVectorBytes, w.scale_bytes, kZero);
  const int64_t blocks = pack.blocks();
  const int64_t per_block = pack.groups * kLaneBlockRows;
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
          codes[c * kNibbleChunkBytes + i * 4 + s] = static_cast<uint8_t>(low | high << 4);
        }
      }
      for (int64_t g = 0; g < pack.groups; ++g) {
        const int64_t at = g * kLaneBlockRows + i;
        std::memcpy(pack.ScaleAt(b, g, i), w.scales + (row * w.scale_stride + g) * w.scale_bytes,
                    static_cast<size_t>(w.scale_bytes));
        if constexpr (kZero) pack.zeros.data<uint8_t>()[b * per_block + at] = zero(row, g);
      }
    }
  }
  return pack;
}

}  // namespace quantpath::avx512vnni
