// The scalar side of the microscaling weight layout (mx_family.h) that the per-level MX kernels
// share: the codes, the E8M0 scales and one block's scale, for the columns past the last full
// step. Templated on the CPU level, as IntCodes is (int_codes.h), so each level's translation unit
// has its own copy.
#pragma once

#include <bit>
#include <cstdint>

#include "quantpath/cpu_features.h"
#include "quantpath/kernels.h"
#include "src/specs/mx_family.h"

namespace quantpath::cpu {

inline constexpr int32_t kE8M0Zero = 0x00400000;  // 2^-127, E8M0's e = 0

template <CpuLevel kLevel>
struct MxCodes {
  const uint8_t* codes;
  int64_t row_bytes;
  const uint8_t* scales;  // [N, ceil(K / 32)] E8M0
  int64_t scale_cols;

  static MxCodes Of(const LinearParams& params) {
    const ParamTensor& w = params.tensor(Slot::kWeight);
    const ParamTensor& s = params.tensor(Slot::kWeightScale);
    return {w.data<uint8_t>(), w.row_bytes(), s.data<uint8_t>(), s.cols()};
  }
  // 2^(e − 127): the fp32 with exponent field e, and the subnormal 2^-127 for e = 0.
  static float E8M0(uint8_t e) {
    return std::bit_cast<float>(e == 0 ? kE8M0Zero : static_cast<int32_t>(e) << 23);
  }
  float BlockScale(int64_t row, int64_t col) const {
    return E8M0(scales[row * scale_cols + col / kMxGroup]);
  }
};

}  // namespace quantpath::cpu
