// The bf16 family (unquantized weights): its identity and layout, for the spec, its kernels and
// tests.
#pragma once

#include <cstdint>

#include "quantpath/specs.h"

namespace quantpath {

inline constexpr SpecFamily kBf16Family{"bf16"};
inline constexpr SpecKey kBf16Key{kBf16Family};

// bf16 spec: W [N, K] in the params dtype (bf16 / fp16 = 16 bits per weight, fp32 = 32), no
// scales.
struct DenseLayout {
  int element_bits = 16;
  constexpr int64_t BytesFor(int64_t rows, int64_t cols) const {
    return rows * cols * element_bits / 8;
  }
};
static_assert(DenseLayout{16}.BytesFor(512, 256) == 262144);  // DESIGN.md's embed_tokens

}  // namespace quantpath
