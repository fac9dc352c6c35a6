// The W8A8 int8 activations of gemm_w8a8_ref.cc's step 1, shared by the reference kernel and the
// fast ones (so a fast kernel multiplies the very codes its oracle does): X [m, k] in fp32 or bf16
// quantized row by row to int8 codes with a scale and a zero point per row.
#pragma once

#include <cstdint>
#include <vector>

#include "quantpath/kernels.h"

namespace quantpath::reference {

struct Int8Activations {
  std::vector<int8_t> codes;  // [m, k]
  std::vector<float> scale;   // per row
  std::vector<int32_t> zero;  // per row (0 where symmetric)
};

// `act`: kDynamicPerToken (symmetric or not) or kStaticPerTensor (the layer's input scale and
// offset).
Int8Activations QuantizeInt8Activations(const LinearParams& params, const ActivationQuant& act,
                                        const ConstMatrix& x);

// The mixed int4 specs' activations (w4a_family.h's QuantizeActRow, int4 or int8 codes by
// act.dtype, one code per byte, zero points 0), for gemm_w4a_ref.cc and the fast kernels alike.
Int8Activations QuantizeW4aActivations(const ActivationQuant& act, const ConstMatrix& x);

}  // namespace quantpath::reference
