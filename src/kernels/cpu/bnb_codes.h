// The scalar side of the bitsandbytes layouts (bnb_family.h) that the per-level kernels share: the
// LLM.int8 codes with their SCB, and one dequantized weight rounded as bitsandbytes rounds it, for
// the columns past the last full step. Templated on the CPU level, as IntCodes is (int_codes.h):
// bnb_family.h's inline RoundedProduct compiled at two levels under one name would let the linker
// keep the wider build for a CPU without it.
#pragma once

#include <cstdint>

#include "quantpath/cpu_features.h"
#include "quantpath/kernels.h"
#include "src/kernels/cpu/x_order.h"
#include "src/specs/bnb_family.h"

namespace quantpath::cpu {

template <CpuLevel kLevel>
struct BnbRounding {
  // fp32(a × b) correctly rounded, never contracted into an FMA (bnb_family.h's RoundedProduct).
  static float Product(float a, float b) {
    return static_cast<float>(static_cast<double>(a) * static_cast<double>(b));
  }
};

template <CpuLevel kLevel>
struct BnbInt8Codes {
  int64_t group;  // the row
  const int8_t* codes;
  int64_t row_bytes;
  const float* scb;
  static constexpr bool kZeros = false;
  static constexpr XOrder kXOrder = XOrder::kNatural;

  float Scale(int64_t row, int64_t) const { return scb[row] * kInv127; }
  float Zero(int64_t, int64_t) const { return 0.0f; }
  // fp32(fp32(q × scb) × kInv127), bitsandbytes' int8_vectorwise_dequant.
  float Load1(int64_t row, int64_t col) const {
    using R = BnbRounding<kLevel>;
    return R::Product(R::Product(static_cast<float>(codes[row * row_bytes + col]), scb[row]),
                      kInv127);
  }
  static BnbInt8Codes Of(const LinearParams& params) {
    const ParamTensor& w = params.tensor(Slot::kWeight);
    return {params.cols, w.data<int8_t>(), w.row_bytes(),
            params.tensor(Slot::kWeightScale).data<float>()};
  }
};

}  // namespace quantpath::cpu
