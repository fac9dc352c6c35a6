// Decoding and encoding of the formats in kFloatFormats, driven by the table alone: one decoder and
// one encoder for every format, so a new format is a new table row.
#include "quantpath/numeric.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace quantpath {
namespace {

using numeric_internal::MaxFiniteMagnitude;

struct Layout {
  uint32_t sign_bit;        // 0 when the format is unsigned
  uint32_t magnitude_mask;  // exponent and mantissa fields
  uint32_t mantissa_mask;
  uint32_t exponent_max;  // the all-ones exponent field
};

constexpr Layout LayoutOf(const FloatFormatInfo& f) {
  uint32_t magnitude_bits = static_cast<uint32_t>(f.exponent_bits + f.mantissa_bits);
  return {f.has_sign ? 1u << magnitude_bits : 0u, (1u << magnitude_bits) - 1,
          (1u << f.mantissa_bits) - 1, (1u << f.exponent_bits) - 1};
}

// The canonical NaN pattern (quiet, for IEEE formats), without its sign.
constexpr uint32_t NanMagnitude(const FloatFormatInfo& f) {
  Layout l = LayoutOf(f);
  if (f.nan == NanRule::kIeee) {
    // Exponent all ones with the top mantissa bit set: the quiet NaN of IEEE 754.
    return (l.exponent_max << f.mantissa_bits) | (1u << (f.mantissa_bits - 1));
  }
  return l.magnitude_mask;  // kAllOnes; kNone never asks for it
}

float Decode(const FloatFormatInfo& f, uint32_t bits) {
  Layout l = LayoutOf(f);
  bool negative = (bits & l.sign_bit) != 0;
  uint32_t magnitude = bits & l.magnitude_mask;
  uint32_t e = magnitude >> f.mantissa_bits;
  uint32_t m = magnitude & l.mantissa_mask;
  float value;
  if (f.nan == NanRule::kIeee && e == l.exponent_max) {
    value = m == 0 ? INFINITY : NAN;
  } else if (f.nan == NanRule::kAllOnes && magnitude == l.magnitude_mask) {
    value = NAN;
  } else if (e == 0 && f.has_subnormals) {
    // 0.M × 2^(1 - bias): an integer times a power of two, so ldexp is exact.
    value = std::ldexp(static_cast<float>(m), 1 - f.bias - f.mantissa_bits);
  } else {
    int exponent = static_cast<int>(e) - f.bias;
    if (exponent >= -126 && exponent <= 127) {
      // A float32 normal: move the fields into float32's S EEEEEEEE M(23) layout.
      uint32_t f32 = (static_cast<uint32_t>(exponent + 127) << 23) | (m << (23 - f.mantissa_bits));
      value = std::bit_cast<float>(f32);
    } else {
      // Only e8m0's 2^-127 lands here: a float32 subnormal.
      value =
          std::ldexp(static_cast<float>((1u << f.mantissa_bits) + m), exponent - f.mantissa_bits);
    }
  }
  return negative ? -value : value;
}

uint32_t Encode(const FloatFormatInfo& f, float value) {
  Layout l = LayoutOf(f);
  uint32_t nan = NanMagnitude(f);
  if (std::isnan(value)) {
    if (f.nan == NanRule::kNone) return 0;
    return (std::signbit(value) ? l.sign_bit : 0) | nan;
  }
  // An unsigned format cannot hold negatives; one without subnormals cannot hold zero.
  if ((!f.has_sign && value < 0) || (!f.has_subnormals && value == 0)) return nan;
  uint32_t sign = std::signbit(value) ? l.sign_bit : 0;
  float magnitude = std::fabs(value);
  if (magnitude == 0) return sign;

  uint32_t max_finite = MaxFiniteMagnitude(f);
  auto overflow = [&]() -> uint32_t {
    switch (f.overflow) {
      case OverflowRule::kInfinity:
        return sign | (l.exponent_max << f.mantissa_bits);
      case OverflowRule::kSaturate:
        return sign | max_finite;
      case OverflowRule::kNan:
        return nan;
    }
    return nan;
  };
  if (std::isinf(magnitude)) return overflow();

  // Magnitude patterns are ordered like the values they stand for, and consecutive within a
  // binade: pattern = ((e - e_min) << mantissa_bits) + q, where q is the value in units of the
  // binade's spacing (the implicit leading 1 included). q rounding up to 2^(mantissa_bits + 1)
  // therefore carries into the next binade by itself, and past the largest binade into overflow.
  int e_min = f.has_subnormals ? 1 - f.bias : -f.bias;
  int e = std::max(std::ilogb(magnitude), e_min);
  // Exact in double: float32 has a 24-bit significand and the scale is a power of two.
  double scaled = std::ldexp(static_cast<double>(magnitude), f.mantissa_bits - e);
  double q = std::floor(scaled);
  double remainder = scaled - q;
  if (remainder > 0.5 || (remainder == 0.5 && std::fmod(q, 2.0) != 0)) q += 1;
  int64_t pattern = (static_cast<int64_t>(e - e_min) << f.mantissa_bits) + static_cast<int64_t>(q);
  // Without subnormals the smallest binade starts at pattern 0 with q = 2^mantissa_bits.
  if (!f.has_subnormals) pattern -= int64_t{1} << f.mantissa_bits;
  // Below the smallest value of a format without zero: the smallest value is the nearest.
  if (pattern < 0) pattern = 0;
  if (pattern > static_cast<int64_t>(max_finite)) return overflow();
  return sign | static_cast<uint32_t>(pattern);
}

// Decoded values of every pattern of a narrow format, built once.
template <FloatFormat kFormat>
const std::array<float, 256>& DecodeTable() {
  static_assert(FormatInfo(kFormat).bits <= 8);
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (uint32_t i = 0; i < t.size(); ++i) t[i] = Decode(FormatInfo(kFormat), i);
    return t;
  }();
  return table;
}

// Encode's rounding for bf16 on the bits themselves (nearest, ties to even; bf16 keeps float32's
// exponent, so carries land where they should, up to infinity), as X is converted per call; a NaN
// becomes the quiet one with its sign.
uint16_t RoundToBf16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const bool nan = (bits & 0x7FFFFFFFu) > 0x7F800000u;
  const uint32_t rounded = (bits + 0x7FFFu + (bits >> 16 & 1)) >> 16;
  return static_cast<uint16_t>(nan ? (bits >> 16 & 0x8000) | 0x7FC0 : rounded);
}

}  // namespace

float DecodeFloat(FloatFormat format, uint32_t bits) {
  const FloatFormatInfo& f = FormatInfo(format);
  return Decode(f, bits & ((1u << f.bits) - 1));
}

uint32_t EncodeFloat(FloatFormat format, float value) { return Encode(FormatInfo(format), value); }

float Bf16ToFloat(uint16_t bits) {
  // bfloat16 is the upper half of a float32.
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}
uint16_t FloatToBf16(float value) { return RoundToBf16(value); }
void Bf16ToFloats(const uint16_t* bits, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = Bf16ToFloat(bits[i]);
}
void FloatsToBf16(const float* values, int64_t n, uint16_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = RoundToBf16(values[i]);
}
float Fp16ToFloat(uint16_t bits) { return Decode(FormatInfo(FloatFormat::kFP16), bits); }
uint16_t FloatToFp16(float value) {
  return static_cast<uint16_t>(Encode(FormatInfo(FloatFormat::kFP16), value));
}
float Fp8E4M3ToFloat(uint8_t bits) { return DecodeTable<FloatFormat::kFP8E4M3>()[bits]; }
uint8_t FloatToFp8E4M3(float value) {
  // Encode's rounding for e4m3fn on the bits (activations are rounded to it on every call):
  // nearest, ties to even; below 2^-6 in steps of 2^-9 (exact in fp32: |v| · 512 < 8, rounded by
  // adding 2^23); above, the mantissa cut to 3 bits, a carry moving into the exponent; past 448,
  // and infinities, 448 (saturation); NaN the format's NaN with its sign.
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint8_t sign = static_cast<uint8_t>(bits >> 24 & 0x80);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return sign | 0x7F;
  if (magnitude < 0x3C800000u) {  // below 2^-6
    const float steps = std::bit_cast<float>(magnitude) * 512.0f + 0x1p23f;
    return sign | static_cast<uint8_t>(std::bit_cast<uint32_t>(steps) - 0x4B000000u);
  }
  if (magnitude >= 0x43E00000u) return sign | 0x7E;  // 448 and above
  const uint32_t rounded = magnitude + 0x7FFFFu + (magnitude >> 20 & 1);
  const uint32_t pattern = ((rounded >> 23) - 120) << 3 | (rounded >> 20 & 7);
  return sign | static_cast<uint8_t>(pattern > 0x7E ? 0x7E : pattern);
}
float Fp8E5M2ToFloat(uint8_t bits) { return DecodeTable<FloatFormat::kFP8E5M2>()[bits]; }
uint8_t FloatToFp8E5M2(float value) {
  return static_cast<uint8_t>(Encode(FormatInfo(FloatFormat::kFP8E5M2), value));
}
float E8M0ToFloat(uint8_t bits) { return DecodeTable<FloatFormat::kE8M0>()[bits]; }
uint8_t FloatToE8M0(float value) {
  return static_cast<uint8_t>(Encode(FormatInfo(FloatFormat::kE8M0), value));
}
float E2M1ToFloat(uint8_t nibble) { return DecodeTable<FloatFormat::kE2M1>()[nibble & 0xF]; }
uint8_t FloatToE2M1(float value) {
  // Encode's rounding for E2M1 by counting the midpoints below |value| (it runs once per weight
  // when quantizing, on values no branch predicts): the magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6 are
  // codes 0–7, a midpoint goes to the even code (hence > before an odd code, >= before an even
  // one), and past 6 saturates; the sign bit is kept, even for a value rounding to zero; NaN is 0.
  if (std::isnan(value)) return 0;
  const float m = std::fabs(value);
  const int code = (m > 0.25f) + (m >= 0.75f) + (m > 1.25f) + (m >= 1.75f) + (m > 2.5f) +
                   (m >= 3.5f) + (m > 5.0f);
  return static_cast<uint8_t>(code | (std::signbit(value) ? 0x8 : 0));
}

}  // namespace quantpath
