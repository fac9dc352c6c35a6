// What every W8A8 int8 output needs beside its products, shared by the per-level W8A8 kernels,
// which sum Σ qx · q over W's stored, unsigned codes in int32: the buffers they read
// (w8a8_pack.h) and the output made from that sum exactly as the reference kernel makes it
// (gemm_w8a8_ref.cc). Templated on the CPU level, as IntCodes is (int_codes.h), so each level's
// translation unit has its own inlined copy.
#pragma once

#include <cstdint>

#include "quantpath/cpu_features.h"
#include "quantpath/kernels.h"
#include "src/kernels/cpu/w8a8_pack.h"
#include "src/kernels/reference/int8_activations.h"
#include "src/kernels/reference/reference_gemm.h"

namespace quantpath::cpu {

struct W8a8Problem {
  const W8a8Pack* pack;
  const PaddedInt8Rows* x;
  const reference::Int8Activations* xq;
  const LinearParams* params;
  MutableMatrix y;
};

template <CpuLevel kLevel>
struct W8a8Outputs {
  // Y[i][j] from Σ_k qx · q of row i of X and row j of W.
  static void Store(const W8a8Problem& pr, int64_t i, int64_t j, int32_t acc) {
    const LinearParams& params = *pr.params;
    const ParamTensor& scales = params.tensor(Slot::kWeightScale);
    const ParamTensor& quant_bias = params.tensor(Slot::kQuantBias);
    const ParamTensor& bias = params.tensor(Slot::kBias);
    const bool one_scale = scales.rows() == 1;  // int8_tensor (w8a8_family.h)
    const int64_t c = quant_bias.empty() ? 0 : quant_bias.data<int32_t>()[j];
    const int64_t exact = int64_t{acc} - 128 * int64_t{pr.x->sums[i]} + c -
                          int64_t{pr.xq->zero[i]} * pr.pack->row_sums[j];
    const float sw = LoadFloat(scales, one_scale ? 0 : j);
    const float b = bias.empty() ? 0.0f : LoadFloat(bias, j);
    // Multiplied and added apart, as the reference does (no FMA contraction: same bits).
    float product = static_cast<float>(exact) * (pr.xq->scale[i] * sw);
    __asm__("" : "+v"(product));
    reference::StoreOutput(pr.y, i * params.rows + j, product + b);
  }
};

}  // namespace quantpath::cpu
