// The scalar side of the integer weight layout (int_family.h) that the per-level integer kernels
// share: a row's scales and zero points, and one dequantized value for the columns past the last
// full vector. Templated on the CPU level so that each level's translation unit has its own copy:
// one inline function compiled at two levels under one name would let the linker keep the wider
// build for a CPU without it.
// Only for the per-level translation units: F16C widens fp16 scales.
#pragma once

#include <immintrin.h>

#include <bit>
#include <cstdint>

#include "quantpath/cpu_features.h"
#include "quantpath/kernels.h"
#include "src/specs/int_family.h"
#include "src/specs/w4a8_awq_family.h"

namespace quantpath::cpu {

template <CpuLevel kLevel, int kBits, bool kZero>
struct IntCodes {
  const uint8_t* codes;
  int64_t row_bytes;
  const std::byte* scales;
  QDType scale_dtype;      // fp16, bf16 or fp32
  int64_t scale_stride;    // scales per row (0: one for the tensor)
  int group_shift;         // column → group; 63 for one group per row
  int64_t group;           // columns per scale: 2^group_shift, or the whole row
  const uint8_t* zeros;    // kZero: codes, per row (group) or one row of N (channel)
  int64_t zero_row_bytes;  // 0 for the channel layout's single row
  bool zero_per_group;

  // The layout of `params` (int_group, or int_group_prescaled, with a power-of-two group;
  // int_channel or int_tensor).
  static IntCodes Of(const LinearParams& params) {
    const SpecKey& key = params.key;
    const ParamTensor& w = params.tensor(Slot::kWeight);
    const ParamTensor& scales = params.tensor(Slot::kWeightScale);
    const ParamTensor& zeros = params.tensor(Slot::kWeightZero);
    const bool grouped = key.family == kIntGroupFamily || key.family == kIntGroupPrescaledFamily;
    return {w.data<uint8_t>(),
            w.row_bytes(),
            scales.raw(),
            scales.dtype(),
            key.family == kIntTensorFamily ? 0 : scales.cols(),
            grouped ? std::countr_zero(static_cast<uint64_t>(key.group)) : 63,
            grouped ? key.group : params.cols,
            kZero ? zeros.data<uint8_t>() : nullptr,
            kZero && grouped ? zeros.row_bytes() : 0,
            grouped};
  }

  float Scale(int64_t row, int64_t g) const {
    const int64_t i = row * scale_stride + g;
    if (scale_dtype == QDType::kFP32) {
      float value;
      __builtin_memcpy(&value, scales + i * 4, 4);
      return value;
    }
    uint16_t bits;
    __builtin_memcpy(&bits, scales + i * 2, 2);
    // Inline, not numeric.h's calls: a scale is read once per run of every row.
    return scale_dtype == QDType::kBF16 ? std::bit_cast<float>(uint32_t{bits} << 16)
                                        : _cvtsh_ss(bits);
  }
  int Zero(int64_t row, int64_t g) const {
    if constexpr (!kZero) {
      return 1 << (kBits - 1);
    } else {
      return static_cast<int>(zero_per_group ? ReadCode(zeros + row * zero_row_bytes, g, kBits)
                                             : ReadCode(zeros, row, kBits));
    }
  }
  float Load1(int64_t row, int64_t col) const {
    const int64_t g = col >> group_shift;
    const int q = static_cast<int>(ReadCode(codes + row * row_bytes, col, kBits));
    return static_cast<float>(q - Zero(row, g)) * Scale(row, g);
  }
};

}  // namespace quantpath::cpu
