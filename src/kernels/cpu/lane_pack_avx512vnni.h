// The rows-in-lanes prepack that the AVX-512 decode kernels share: W in blocks of 32 rows, each
// 64-byte vector holding 16 rows side by side, a row's 4 bytes at 4j of its vector; per 8 columns
// (a chunk) two vectors' worth of bytes a block (the codes' layout within them is the packer's:
// nibble_lanes_avx512vnni.h for 4-bit codes). A lane is a row of W, so a product is 16 rows' sums
// against one broadcast piece of X, a group's scale is one vector product per 16 rows however long
// the group, and nothing is summed across lanes. The scales stay in their stored type beside the
// block's codes, the zero points in bytes, so a decode row reads about the bytes the layer stores.
//
// Included only by *_avx512vnni.cc files, which are all compiled with the same flags.
#pragma once

#include "src/base/avx512_intrinsics.h"

#include <algorithm>
#include <cstdint>

#include "quantpath/kernels.h"
#include "src/kernels/reference/reference_gemm.h"

namespace quantpath::avx512vnni {

// The rows of X up to which the kernels whose codes take more than a mask to become bf16 values
// (fp8, E2M1, bitsandbytes' maps) run on this prepack: from there their tiled GEMMs, which convert
// W once per tile of 64 rows of X rather than once per pass of 4, are faster (1.25-1.7x at M =
// 512 on a Zen 4). bf16, int4 and W8A8 run on it at every M (0.94-1.5x their tiled GEMMs there),
// so their layers keep one prepack.
inline constexpr int64_t kLanesMaxM = 16;
inline constexpr int64_t kLaneChunk = 8;  // columns of a chunk: a quad in each nibble
inline constexpr int kLaneVectors = 2;    // vectors of 16 rows in a block
inline constexpr int64_t kLaneBlockRows = 16 * kLaneVectors;

// W's prepack: blocks of kLaneBlockRows rows (rows past N zero), per chunk a vector's bytes for
// each kLaneVectors (the codes' layout within them is the packer's), and per group the rows'
// scales and zero points (codes, where the layout has them).
struct LanePack {
  ParamTensor codes;       // [blocks, chunks · kLaneVectors · vector_bytes]
  int64_t chunks = 0;      // ⌈K / 8⌉, the last one zero-padded
  int64_t run_chunks = 0;  // a group's (the last group's may be fewer)
  int64_t groups = 0;
  int64_t vector_bytes = 0;  // of a chunk: 64 for 4-bit codes, 128 for bytes, 256 for bf16
  int64_t scale_bytes = 0;
  ParamTensor scales;  // [blocks, groups · kLaneBlockRows · scale_bytes] bytes
  ParamTensor zeros;   // [blocks, groups · kLaneBlockRows] codes, if any

  const uint8_t* Block(int64_t b) const { return codes.data<uint8_t>() + b * codes.row_bytes(); }
  int64_t chunk_bytes() const { return vector_bytes * kLaneVectors; }
  int64_t blocks() const { return codes.rows(); }

  // An N × K layer's pack with its geometry set and its buffers zeroed: groups of `group`
  // columns (K or more: one a row).
  static LanePack Empty(int64_t n, int64_t k, int64_t group, int64_t vector_bytes,
                        int64_t scale_bytes, bool zeros) {
    LanePack pack;
    pack.chunks = (k + kLaneChunk - 1) / kLaneChunk;
    pack.run_chunks = group >= k ? pack.chunks : group / kLaneChunk;
    pack.groups = (pack.chunks + pack.run_chunks - 1) / pack.run_chunks;
    pack.vector_bytes = vector_bytes;
    pack.scale_bytes = scale_bytes;
    const int64_t blocks = (n + kLaneBlockRows - 1) / kLaneBlockRows;
    const int64_t per_block = pack.groups * kLaneBlockRows;
    pack.codes = ParamTensor(QDType::kINT8, blocks, pack.chunks * pack.chunk_bytes());
    pack.scales = ParamTensor(QDType::kINT8, blocks, per_block * scale_bytes);
    if (zeros) pack.zeros = ParamTensor(QDType::kINT8, blocks, per_block);
    return pack;
  }
  // Where row i of block b keeps its scale of group g.
  std::byte* ScaleAt(int64_t b, int64_t g, int64_t i) {
    return scales.raw() + b * scales.row_bytes() + (g * kLaneBlockRows + i) * scale_bytes;
  }
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
void ForEachLaneBlock(const LanePack& pack, int64_t m, Rows rows) {
  constexpr int64_t kTileRows = 64;
  const int64_t blocks = pack.blocks();
  for (int64_t t0 = 0; t0 < m; t0 += kTileRows) {
    const int64_t t1 = std::min(m, t0 + kTileRows);
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t b = 0; b < blocks; ++b) rows(b, t0, t1);
  }
}

}  // namespace quantpath::avx512vnni
