// A layer of `spec` with random contents for the exact-kernel tests: every byte of W and of the
// weight zero points random (any byte is valid codes for the integer layouts), random positive
// weight scales (fp32 or bf16 as the
// spec stores them), a random bf16 bias, marked loaded and processed.
#pragma once

#include <random>
#include <string>

#include "quantpath/numeric.h"
#include "quantpath/specs.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath::testing {

inline Result<LinearParams> RandomLayer(const WeightSpec& spec, int64_t n, int64_t k,
                                        std::mt19937* rng) {
  AllocationRequest request;
  request.layer = "m";
  request.shape = {n, k};
  request.bias = true;
  Result<LinearParams> params = spec.Allocate(request);
  if (!params.ok()) return params;
  std::uniform_int_distribution<int> byte(0, 255);
  ParamTensor& w = params->tensor(Slot::kWeight);
  for (int64_t i = 0; i < w.bytes(); ++i) w.data<uint8_t>()[i] = static_cast<uint8_t>(byte(*rng));
  ParamTensor& zeros = params->tensor(Slot::kWeightZero);
  for (int64_t i = 0; i < zeros.bytes(); ++i) {
    zeros.data<uint8_t>()[i] = static_cast<uint8_t>(byte(*rng));
  }
  ParamTensor& scale = params->tensor(Slot::kWeightScale);
  const std::vector<float> scales = RandomScales(rng, scale.elements());
  for (size_t i = 0; i < scales.size(); ++i) {
    if (scale.dtype() == QDType::kFP32) {
      scale.data<float>()[i] = scales[i];
    } else if (scale.dtype() == QDType::kBF16) {
      scale.data<uint16_t>()[i] = FloatToBf16(scales[i]);
    } else {
      return InternalError("RandomLayer: weight scales of " +
                           std::string(QDTypeName(scale.dtype())));
    }
  }
  ParamTensor& bias = params->tensor(Slot::kBias);
  if (bias.dtype() != QDType::kBF16) return InternalError("RandomLayer: a bias not in bf16");
  const std::vector<float> values = RandomBf16Values(rng, n);
  for (int64_t i = 0; i < n; ++i) bias.data<uint16_t>()[i] = FloatToBf16(values[i]);
  params->loaded = params->processed = true;
  return params;
}

}  // namespace quantpath::testing
