// The E2M1 weight codes of NVFP4 (nvfp4_block_16_linear) and MXFP4 (mxfp4_block_32) as Sources of
// the prepacked AVX2 GEMM (f32_dot_avx2.h), in octets (nibble_octets_avx2.h): a run is a step of
// 64 columns, its lane i (columns 8i … 8i + 7) scaled by its block's scale (Scale(row, step)).
// NVFP4: four blocks of 16 a step, lanes 2j and 2j + 1 scaled by block j's E4M3 scale, widened
// through fp16 as the codes of fp8_steps_avx2.h are, times 2^8 · G: the fp32 product e4m3 × G
// that the reference multiplies each code by. MXFP4: two blocks of 32, lanes 0–3 and 4–7, 2^(e −
// 127) each. Shared by the kernels with fp32 activations (gemm_nvfp4_avx2.cc, gemm_mx_avx2.cc) and
// with int8 ones (gemm_e2m1_a8_avx2.cc).
//
// Included only by *_avx2.cc files, which are all compiled with the same flags.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "src/kernels/cpu/fp8_steps_avx2.h"
#include "src/kernels/cpu/mx_codes.h"
#include "src/kernels/cpu/nibble_octets_avx2.h"
#include "src/specs/int_family.h"
#include "src/specs/mx_family.h"
#include "src/specs/nvfp4_family.h"

namespace quantpath::avx2 {

struct Nvfp4Octets : E2M1Octets {
  int64_t group = kStep;
  static constexpr bool kZeros = false;
  static constexpr bool kLaneScales = true;
  const uint8_t* codes;
  int64_t row_bytes;
  const uint8_t* scales;  // [N, K / 16] E4M3
  int64_t scale_cols;
  float global;

  __m256 Scale(int64_t row, int64_t g) const {
    return _mm256_mul_ps(E4M3PairsOver256(scales + row * scale_cols + g * 4),
                         _mm256_set1_ps(global * kE4M3Over));
  }
  float Zero(int64_t, int64_t) const { return 0.0f; }
  float Load1(int64_t row, int64_t col) const {
    const uint8_t scale = scales[row * scale_cols + col / kNvfp4Group];
    return E2M1ToFloat(static_cast<uint8_t>(ReadCode(codes + row * row_bytes, col, 4))) *
           (Fp8E4M3ToFloat(scale) * global);
  }

  static Nvfp4Octets Of(const LinearParams& params) {
    const ParamTensor& w = params.tensor(Slot::kWeight);
    const ParamTensor& s = params.tensor(Slot::kWeightScale);
    return {{},
            kStep,
            w.data<uint8_t>(),
            w.row_bytes(),
            s.data<uint8_t>(),
            s.cols(),
            params.tensor(Slot::kWeightGlobalScale).data<float>()[0]};
  }
};

struct Mxfp4Octets : cpu::MxCodes<CpuLevel::kAvx2>, E2M1Octets {
  int64_t group = kStep;
  static constexpr bool kZeros = false;
  static constexpr bool kLaneScales = true;

  // Lanes 0–3 hold columns 0–31 of step g, block 2g of the row; lanes 4–7 block 2g + 1.
  __m256 Scale(int64_t row, int64_t g) const {
    const uint8_t* e = scales + row * scale_cols + 2 * g;
    return _mm256_setr_m128(_mm_set1_ps(E8M0(e[0])), _mm_set1_ps(E8M0(e[1])));
  }
  float Zero(int64_t, int64_t) const { return 0.0f; }
  float Load1(int64_t row, int64_t col) const {
    return E2M1ToFloat(static_cast<uint8_t>(ReadCode(codes + row * row_bytes, col, 4))) *
           BlockScale(row, col);
  }
  static Mxfp4Octets Of(const LinearParams& params) {
    return {cpu::MxCodes<CpuLevel::kAvx2>::Of(params), {}};
  }
};

}  // namespace quantpath::avx2
