// Reading the producers' saved dequantizations (tests/data/producers/*/dequant.safetensors), shared
// by the producer-fixture tests.
#pragma once

#include <cstdint>
#include <cstring>

#include "quantpath/checkpoint.h"
#include "quantpath/numeric.h"

namespace quantpath::testing {

// Element i of a saved dequantization (bf16, fp16 or fp32) as float.
inline float SavedValue(const TensorView& view, int64_t i) {
  if (view.info->dtype == StDtype::kF32) {
    float value;
    std::memcpy(&value, view.bytes.data() + 4 * i, 4);
    return value;
  }
  uint16_t bits;
  std::memcpy(&bits, view.bytes.data() + 2 * i, 2);
  return view.info->dtype == StDtype::kBF16 ? Bf16ToFloat(bits) : Fp16ToFloat(bits);
}

// Our double rounded to the saved dtype (once: the reference values are exact in fp32).
inline float Rounded(StDtype dtype, double value) {
  const float f = static_cast<float>(value);
  if (dtype == StDtype::kBF16) return Bf16ToFloat(FloatToBf16(f));
  if (dtype == StDtype::kF16) return Fp16ToFloat(FloatToFp16(f));
  return f;
}

}  // namespace quantpath::testing
