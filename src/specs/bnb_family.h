// The bitsandbytes families: nf4_block_<b> and fp4_block_<b> (4-bit codes with an fp32 absmax per
// block of b values of the flattened weight) and int8_rowwise_bnb (LLM.int8 weights, int8 with
// an fp32 absmax per row), for the specs, their kernels, the reference and tests.
//
// nf4_block_<b> / fp4_block_<b>, bit by bit (this rank's [N, K]):
//   W   [N, K] 4-bit codes, indices into the family's 16-entry map (kNf4Map / kFp4Map), packed
//       along each row low nibble first: byte i of row n holds element 2i in bits 3..0 and
//       element 2i + 1 in bits 7..4 (K must be even). bitsandbytes stores the flattened weight
//       the other way round (element 2i in bits 7..4), so the loader swaps the nibbles.
//   S   [1, ceil(N·K / b)] fp32 absmax: block j scales the elements f = n·K + c of the flattened
//       [N, K] with f / b = j; the last block may be short.
//   W[n][c] = fp32(map[code] × S[(n·K + c) / b]).
// Double quantization (quant_state's nested_*) is resolved at load, as vLLM's bitsandbytes
// loader does: S[j] = fp32(fp32(nested_quant_map[absmax8[j]] × nested_absmax[j / nb]) + offset),
// bitsandbytes' own dequantize_4bit order, with nb = nested_blocksize and offset =
// nested_offset, so one kernel serves both and the checkpoint's nested_quant_map is honoured.
// The block size b comes from each tensor's quant_state JSON; the checkpoint's quant_map must be
// the family's map bit for bit (bitsandbytes' own kernels ignore the stored map and use theirs).
// Fused legs and tensor-parallel slices stack whole blocks only: a leg's slice must start on a
// block and hold whole blocks (the last leg may end with its partial tail block), a row-parallel
// slice needs K and its own K to be multiples of b; anything else is an error naming the layer.
//
// int8_rowwise_bnb, bit by bit:
//   W   [N, K] int8, as stored (bitsandbytes' "row" weight_format).
//   S   [N, 1] fp32, SCB as stored: the absmax of each row.
//   W[n][c] = fp32(fp32(W[n][c] × S[n]) × kInv127), bitsandbytes' int8_vectorwise_dequant.
// Activations stay in high precision (W8A16): LLM.int8's outlier threshold only decides which
// activation columns bitsandbytes multiplies in int8 and which in 16 bits, and weight-only
// dequantization is its all-16-bit limit; the threshold is noted, not applied.
#pragma once

#include <array>
#include <cstdint>

#include "quantpath/ir.h"
#include "quantpath/specs.h"

namespace quantpath {

inline constexpr SpecFamily kNf4Family{"nf4_block"};
inline constexpr SpecFamily kFp4Family{"fp4_block"};
inline constexpr SpecFamily kBnbInt8Family{"int8_rowwise_bnb"};

// bitsandbytes' code maps as fp32 bit patterns, by code (functional.get_4bit_type): NF4 is the
// normal-float table of QLoRA, FP4 one sign bit, two exponent bits and one mantissa bit,
// normalized by 12 (code 8 is +0, as bitsandbytes builds it).
inline constexpr std::array<uint32_t, 16> kNf4Map = {
    0xBF800000, 0xBF3239B1, 0xBF066B30, 0xBECA32A0, 0xBE91A24D, 0xBE3D353F, 0xBDBA7871, 0x00000000,
    0x3DA2FAFF, 0x3E24CAE3, 0x3E7C04DD, 0x3EAD033A, 0x3EE1A4B8, 0x3F1007AB, 0x3F3913B3, 0x3F800000};
inline constexpr std::array<uint32_t, 16> kFp4Map = {
    0x00000000, 0x3BAAAAAB, 0x3F2AAAAB, 0x3F800000, 0x3EAAAAAB, 0x3F000000, 0x3E2AAAAB, 0x3E800000,
    0x00000000, 0xBBAAAAAB, 0xBF2AAAAB, 0xBF800000, 0xBEAAAAAB, 0xBF000000, 0xBE2AAAAB, 0xBE800000};

inline const std::array<uint32_t, 16>& Bnb4Map(SpecFamily family) {
  return family == kNf4Family ? kNf4Map : kFp4Map;
}

// 1/127 in fp32 (0x3C010204), the factor bitsandbytes multiplies SCB products by.
inline constexpr float kInv127 = 7.874015718698502e-3f;

// fp32 products and sums computed in double and rounded once: correctly rounded like the fp32
// operation (double holds twice float's precision and more), and never contracted into an FMA,
// which would skip bitsandbytes' rounding of the product.
inline float RoundedProduct(float a, float b) {
  return static_cast<float>(static_cast<double>(a) * static_cast<double>(b));
}
inline float RoundedSum(float a, float b) {
  return static_cast<float>(static_cast<double>(a) + static_cast<double>(b));
}
// One LLM.int8 weight: fp32(fp32(q × scb) × kInv127).
inline float BnbInt8Value(int8_t q, float scb) {
  return RoundedProduct(RoundedProduct(static_cast<float>(q), scb), kInv127);
}

struct Bnb4Layout {
  int64_t block = 64;
  constexpr int64_t Blocks(int64_t rows, int64_t cols) const {
    return (rows * cols + block - 1) / block;
  }
  constexpr int64_t BytesFor(int64_t rows, int64_t cols) const {
    return rows * ((cols + 1) / 2) + Blocks(rows, cols) * 4;
  }
};
// q_proj of the producer fixtures: [128, 128] = 8192 code bytes + 256 absmax.
static_assert(Bnb4Layout{}.BytesFor(128, 128) == 8192 + 256 * 4);

}  // namespace quantpath
