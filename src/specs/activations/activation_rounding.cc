// The fp32 roundings of X (activation_rounding.h).
#include "src/specs/activations/activation_rounding.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "quantpath/numeric.h"
#include "src/specs/mx_family.h"
#include "src/specs/nvfp4_family.h"
#include "src/specs/w4a_family.h"

namespace quantpath::reference {
namespace {

// The scale of xs[row * k + c] for the rows [row_begin, row_end) and columns [begin, end): the
// given one, or max(absmax, floor) / 448 of the block (specs.h's convention).
float BlockScale(const std::vector<float>& xs, int64_t k, int64_t row_begin, int64_t row_end,
                 int64_t begin, int64_t end, std::optional<float> fixed_scale) {
  if (fixed_scale) return *fixed_scale;
  float absmax = 0.0f;
  for (int64_t r = row_begin; r < row_end; ++r) {
    for (int64_t c = begin; c < end; ++c) absmax = std::max(absmax, std::fabs(xs[r * k + c]));
  }
  return std::max(absmax, static_cast<float>(kActAbsMaxFloor)) / static_cast<float>(kFp8E4M3Max);
}

float Fp8Code(float v, float scale) { return Fp8E4M3ToFloat(FloatToFp8E4M3(v / scale)); }

}  // namespace

std::vector<float> RoundToE4m3Runs(std::vector<float>* xs, int64_t m, int64_t k,
                                   const E4m3Runs& runs) {
  const int64_t count = (k + runs.group - 1) / runs.group;
  std::vector<float> scales(static_cast<size_t>(m * count));
  std::optional<float> fixed = runs.fixed_scale;
  if (runs.whole_x) fixed = BlockScale(*xs, k, 0, m, 0, k, std::nullopt);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t g = 0; g < count; ++g) {
      const int64_t begin = g * runs.group, end = std::min(k, begin + runs.group);
      const float scale = BlockScale(*xs, k, r, r + 1, begin, end, fixed);
      scales[r * count + g] = scale;
      for (int64_t c = begin; c < end; ++c) (*xs)[r * k + c] = Fp8Code((*xs)[r * k + c], scale);
    }
  }
  return scales;
}

void QuantizeIntRows(std::vector<float>* xs, int64_t m, int64_t k, int code_max) {
  std::vector<int8_t> codes(static_cast<size_t>(k));
  for (int64_t r = 0; r < m; ++r) {
    const std::span<float> row(xs->data() + r * k, static_cast<size_t>(k));
    const float scale = QuantizeActRow(row, code_max, codes);
    for (int64_t c = 0; c < k; ++c) row[c] = static_cast<float>(codes[c]) * scale;
  }
}

void QuantizeNvfp4Activations(std::vector<float>* xs, int64_t m, int64_t k, int64_t group,
                              std::optional<float> layer_divisor) {
  for (int64_t r = 0; r < m; ++r) {
    float* row = xs->data() + r * k;
    float row_amax = 0.0f;
    if (!layer_divisor) {
      for (int64_t c = 0; c < k; ++c) row_amax = std::max(row_amax, std::fabs(row[c]));
    }
    const float divisor = layer_divisor ? *layer_divisor : Nvfp4GlobalFor(row_amax);
    for (int64_t begin = 0; begin < k; begin += group) {
      const int64_t end = std::min(k, begin + group);
      float amax = 0.0f;
      for (int64_t c = begin; c < end; ++c) amax = std::max(amax, std::fabs(row[c]));
      const float s = Fp8E4M3ToFloat(FloatToFp8E4M3(divisor * (amax / kE2M1Max)));
      const float to_code = s == 0.0f ? 0.0f : divisor / s;
      for (int64_t c = begin; c < end; ++c) {
        row[c] = E2M1ToFloat(FloatToE2M1(row[c] * to_code)) * s / divisor;
      }
    }
  }
}

void QuantizeMxActivations(std::vector<float>* xs, int64_t m, int64_t k, int64_t group,
                           QDType element) {
  for (int64_t r = 0; r < m; ++r) {
    float* row = xs->data() + r * k;
    for (int64_t begin = 0; begin < k; begin += group) {
      const int64_t end = std::min(k, begin + group);
      float amax = 0.0f;
      for (int64_t c = begin; c < end; ++c) amax = std::max(amax, std::fabs(row[c]));
      const int e = MxSharedExponent(amax, element);
      for (int64_t c = begin; c < end; ++c) {
        const float v = std::ldexp(row[c], -e);
        const float q = element == QDType::kMXFP4 ? E2M1ToFloat(FloatToE2M1(v))
                                                  : Fp8E4M3ToFloat(FloatToFp8E4M3(v));
        row[c] = std::ldexp(q, e);
      }
    }
  }
}

}  // namespace quantpath::reference
