// The integer weight-only families (int<b>_group_<g>[_zp][_actorder], int<b>_channel[_zp],
// int<b>_tensor, b = 2 … 8): identities and the canonical layout, for the spec, its kernels and
// tests. docs/spec_ids.md repeats the layout.
//
// Canonical layout of a [N, K] weight (this rank's rows and columns):
//   weight   ParamTensor(kINT<b>, N, K): b-bit unsigned codes q in [0, 2^b), packed along each row
//            low bits first: code c of row n starts at bit c·b of the row, counting from bit 0 of
//            the row's first byte, and may cross a byte (3-, 5-, 6-, 7-bit); each row starts on a
//            byte (ceil(K·b / 8) bytes).
//   scales   16-bit floats in the dtype the checkpoint stores them in (fp16 for GPTQ / AWQ,
//            the model's bf16 / fp16 for compressed-tensors): group [N, ceil(K / g)], channel
//            [N, 1]; tensor: one fp32 value [1, 1].
//   zeros    _zp only: the true zero point z as b-bit codes packed like the weight: group
//            ParamTensor(kINT<b>, N, ceil(K / g)), channel ParamTensor(kINT<b>, 1, N) (one row of
//            N codes). Without _zp, z = 2^(b-1) (the symmetric formats' offset).
//   perm     _actorder only (slot g_idx): [2, K] int32 values in a 32-bit slot. Row 0, perm:
//            canonical column j holds input column perm[j]; row 1, group: the group of
//            canonical column j (non-decreasing). At load the columns are sorted by their
//            act-order group (stable), so each group's columns are one run, and kernels read
//            X[:, perm[j]] for column j (or scatter the dequantized row back through perm).
//            Unsplit, and on column-parallel ranks, group[j] = j / g (every group holds exactly
//            g columns). A row-parallel rank sorts its own columns, whose groups are whatever
//            g_idx says (runs of any length, as vLLM splits g_idx with the rows), and stores the
//            scales and zeros of every group of the whole K: [N, ceil(K_full / g)].
//   W[n][perm[j]] = (q[n][j] − z[n][gi]) · s[n][gi], gi = group[j] with act-order, else j / g.
// Why sort instead of keeping g_idx: a group's scale then covers a contiguous run of columns,
// which fast kernels need, and the permutation of X is one gather per forward (vLLM's Marlin and
// exllama paths do the same). The price is that every act-order group must hold exactly g columns
// (the last one the remainder), which GPTQ and compressed-tensors always write; other g_idx are
// rejected at load.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "quantpath/specs.h"

namespace quantpath {

inline constexpr SpecFamily kIntGroupFamily{"int_group"};
inline constexpr SpecFamily kIntChannelFamily{"int_channel"};
inline constexpr SpecFamily kIntTensorFamily{"int_tensor"};

inline bool IsIntFamily(SpecFamily family) {
  return family == kIntGroupFamily || family == kIntChannelFamily || family == kIntTensorFamily;
}

// The element dtype of b-bit codes (kINT8 … kINT2).
inline QDType IntCodeDtype(int bits) {
  return static_cast<QDType>(static_cast<int>(QDType::kINT8) + (8 - bits));
}

// Code i of a row of b-bit codes packed low bits first (b ≤ 8, so a code spans at most 2 bytes).
inline uint32_t ReadCode(const uint8_t* row, int64_t i, int bits) {
  const int64_t bit = i * bits;
  const int64_t byte = bit >> 3;
  const int shift = static_cast<int>(bit & 7);
  uint32_t word = row[byte];
  if (shift + bits > 8) word |= static_cast<uint32_t>(row[byte + 1]) << 8;
  return (word >> shift) & ((1u << bits) - 1);
}

// Writes code i of such a row; the row's bits of code i must be zero (fresh ParamTensors are).
inline void WriteCode(uint8_t* row, int64_t i, int bits, uint32_t code) {
  const int64_t bit = i * bits;
  const int64_t byte = bit >> 3;
  const int shift = static_cast<int>(bit & 7);
  const uint32_t shifted = code << shift;
  row[byte] = static_cast<uint8_t>(row[byte] | (shifted & 0xFF));
  if (shift + bits > 8) row[byte + 1] = static_cast<uint8_t>(row[byte + 1] | (shifted >> 8));
}

// The 16-bit scale dtype a checkpoint's scales are kept in (fp16, bf16), or nullopt for others.
inline std::optional<QDType> SixteenBitScaleDtype(StDtype dtype) {
  if (dtype == StDtype::kF16) return QDType::kFP16;
  if (dtype == StDtype::kBF16) return QDType::kBF16;
  return std::nullopt;
}

// Elements per scale along K: the group size, or K for channel and tensor keys.
inline int64_t IntGroupOf(const SpecKey& key, int64_t cols) {
  return key.family == kIntGroupFamily ? key.group : cols;
}

namespace specs_internal {
// The integer spec of `key` (int_spec.cc): weight-only (ActMode::kNone), from the GPTQ v1 / v2,
// AWQ gemm and compressed-tensors pack-quantized layouts; any other layout is Unsupported.
Result<std::unique_ptr<WeightSpec>> MakeIntSpec(const SpecKey& key, const ActivationQuant& act,
                                                const LoadFacts& facts);
}  // namespace specs_internal

}  // namespace quantpath
