// The scalar side of the fp8 weight layouts (fp8_family.h) that the per-level fp8 kernels share:
// W [N, K] e4m3 with one fp32 scale per row (per tensor and per channel: one run of the whole row)
// or per block_n × block_k tile (grid rows per leg: runs of block_k), and one dequantized value for
// the columns past the last full vector. Templated on the CPU level, as IntCodes is (int_codes.h),
// so each level's translation unit has its own copy.
#pragma once

#include <cstdint>
#include <vector>

#include "quantpath/cpu_features.h"
#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "src/specs/fp8_family.h"

namespace quantpath::cpu {

template <CpuLevel kLevel>
struct Fp8RowCodes {
  const uint8_t* codes;
  const float* scale;
  int64_t k;
  int64_t group;  // k

  static Fp8RowCodes Of(const LinearParams& params) {
    return {params.tensor(Slot::kWeight).data<uint8_t>(),
            params.tensor(Slot::kWeightScale).data<float>(), params.cols, params.cols};
  }
  float RunScale(int64_t row, int64_t) const { return scale[row]; }
  float Load1(int64_t row, int64_t col) const {
    return Fp8E4M3ToFloat(codes[row * k + col]) * scale[row];
  }
};

template <CpuLevel kLevel>
struct Fp8BlockCodes {
  const uint8_t* codes;
  const float* scale;
  const int64_t* grid_row;
  int64_t k, scale_cols;
  int64_t group;  // block_k

  // `grid_row`: Fp8BlockGridRows(the layout, params), kept by the caller.
  static Fp8BlockCodes Of(const LinearParams& params, const std::vector<int64_t>& grid_row) {
    const ParamTensor& scales = params.tensor(Slot::kWeightScale);
    return {params.tensor(Slot::kWeight).data<uint8_t>(),
            scales.data<float>(),
            grid_row.data(),
            params.cols,
            scales.cols(),
            params.key.block[1]};
  }
  float RunScale(int64_t row, int64_t g) const { return scale[grid_row[row] * scale_cols + g]; }
  float Load1(int64_t row, int64_t col) const {
    return Fp8E4M3ToFloat(codes[row * k + col]) * RunScale(row, col / group);
  }
};

}  // namespace quantpath::cpu
