// MXFP4 weights quantized at load (w4a16-mxfp4), written as compressed-tensors'
// mxfp4-pack-quantized layout (`weight_packed` E2M1 pairs, `weight_scale` E8M0 bytes) for
// mxfp4_block_32.
//
// The rule of compressed-tensors 0.19's MXFP4 preset (generate_mx_scales, _quantize), per row and
// 32 columns:
//   scale   the block's largest magnitude rounded to a power of two p the way round_to_power_2
//           does it (add a quarter of the exponent's step to the bits, keep sign and exponent: up
//           from 1.75 · 2^e), then e8m0 = 127 + log2(p) − 2, 2 being E2M1's largest exponent
//           (OCP MX v1.0 §6.3 takes ⌊log2(amax)⌋ − 2 instead, so a block whose largest value is
//           1.75 · 2^e or more gets twice OCP's scale here); clamped to [0, 254] (0xFF is NaN),
//           an all-zero block 0;
//   weight  q = e2m1(w / 2^(e8m0 − 127)), nearest even, saturating at ±6, a negative value that
//           rounds to zero keeping its sign bit.
// Dividing by a power of two is exact, so fp32 and the weights' own dtype agree on every code.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quantpath/numeric.h"
#include "src/specs/mx_family.h"
#include "src/specs/online/online_quantizer.h"

namespace quantpath::specs_internal {
namespace {

// E2M1's largest exponent: 6 = 1.5 · 2^2.
constexpr int kE2M1MaxExponent = 2;

uint8_t SharedExponent(float amax) {
  uint32_t bits;
  std::memcpy(&bits, &amax, sizeof bits);
  bits = (bits + (1u << 21)) & 0xFF800000u;  // round_to_power_2 on fp32: 23 mantissa bits
  float power;
  std::memcpy(&power, &bits, sizeof power);
  if (power == 0.0f) return 0;
  // An amax from 1.75 · 2^127 up rounds past fp32's largest power of two: E8M0's largest scale,
  // as the clamp gives every exponent above it.
  if (std::isinf(power)) return 254;
  const int e = 127 + std::ilogb(power) - kE2M1MaxExponent;
  return static_cast<uint8_t>(std::clamp(e, 0, 254));
}

Result<QuantizedLayer> QuantizeMxfp4(const SpecKey& key, const DenseLayer& layer) {
  QuantizedLayer out;
  for (size_t l = 0; l < layer.legs.size(); ++l) {
    WriteE2M1Leg(layer.legs[l], layer.prefixes[l], key.group, StDtype::kU8, SharedExponent,
                 E8M0ToFloat, &out);
  }
  return out;
}

std::vector<TensorHeader> Mxfp4Headers(const SpecKey& key, const std::string& prefix, int64_t rows,
                                       int64_t cols, QDType) {
  return E2M1LegHeaders(prefix, rows, cols, key.group, StDtype::kU8);
}

// MX activations are scaled at run time from X alone, so every activation mode of the family is
// served.
bool Accepts(const SpecKey& key, const ActivationQuant&) { return key.group == kMxGroup; }

TensorQuant Mxfp4Weight() {
  TensorQuant t;
  t.dtype = QDType::kMXFP4;
  t.granularity = Granularity::kGroup;
  t.group_size = kMxGroup;
  t.micro_scaled = true;
  return t;
}

const OnlineQuantizerRegistrar kRegister({kMxfp4Family, SourceLayout::kCtMxfp4PackQuantized,
                                          Accepts, QuantizeMxfp4, Mxfp4Headers},
                                         {Served(OnlineScheme(Mxfp4Weight(), std::nullopt))});

}  // namespace
}  // namespace quantpath::specs_internal
