// quantpath numeric: the small floating formats of quantized checkpoints, to and from float32.
//
// Goals: exact decoding of every bit pattern of bf16, fp16, fp8 (e4m3fn, e5m2), the MX scale e8m0
// and the fp4 element e2m1; encoding with round-to-nearest-even; one constexpr table holding the
// facts of each format (widths, bias, largest value, NaN and overflow rules) that every other stage
// reads instead of repeating them.
// Non-goals: vectorised bulk conversion (kernels own that); the FNUZ fp8 variants and fp6, which no
// supported format stores yet.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace quantpath {

enum class FloatFormat : uint8_t { kBF16, kFP16, kFP8E4M3, kFP8E5M2, kE8M0, kE2M1 };
inline constexpr size_t kFloatFormatCount = 6;

// What the patterns with an all-ones exponent mean.
enum class NanRule : uint8_t {
  kIeee,     // exponent all ones: mantissa 0 is ±infinity, anything else NaN
  kAllOnes,  // only the all-ones magnitude is NaN and there is no infinity (e4m3fn, e8m0)
  kNone,     // every pattern is a finite number (e2m1)
};

// What encoding does with ±infinity and with finite values that round past the largest finite one.
enum class OverflowRule : uint8_t {
  kInfinity,  // IEEE 754: ±infinity
  kSaturate,  // ±max_finite (the OCP "saturating" conversion; quantizers rely on it)
  kNan,       // NaN: the format has neither infinity nor a reason to clamp (e8m0 scales)
};

// One floating format, laid out as [sign][exponent][mantissa] from the most significant bit.
// A pattern with exponent field E and mantissa field M means:
//   E == 0 and has_subnormals:  (-1)^S × 0.M × 2^(1 - bias)       (zero and subnormals)
//   otherwise:                  (-1)^S × 1.M × 2^(E - bias)       (normals)
// except for the NaN / infinity patterns described by `nan`.
struct FloatFormatInfo {
  FloatFormat format;
  std::string_view name;
  int bits;
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool has_sign;
  bool has_subnormals;  // false: E == 0 is the normal 2^(-bias) and there is no zero (e8m0)
  NanRule nan;
  OverflowRule overflow;
  double max_finite;    // largest finite value
  double min_positive;  // smallest positive value (a subnormal where the format has them)
};

inline constexpr std::array<FloatFormatInfo, kFloatFormatCount> kFloatFormats = {{
    // bfloat16: S EEEEEEEE MMMMMMM, the upper half of an IEEE float32.
    {FloatFormat::kBF16, "bf16", 16, 8, 7, 127, true, true, NanRule::kIeee, OverflowRule::kInfinity,
     3.3895313892515355e38, 0x1p-133},
    // IEEE binary16: S EEEEE MMMMMMMMMM.
    {FloatFormat::kFP16, "fp16", 16, 5, 10, 15, true, true, NanRule::kIeee, OverflowRule::kInfinity,
     65504.0, 0x1p-24},
    // OCP FP8 E4M3 ("e4m3fn"): S EEEE MMM; S.1111.111 is NaN, no infinity, max 1.75 × 2^8.
    {FloatFormat::kFP8E4M3, "fp8_e4m3fn", 8, 4, 3, 7, true, true, NanRule::kAllOnes,
     OverflowRule::kSaturate, 448.0, 0x1p-9},
    // OCP FP8 E5M2: S EEEEE MM, IEEE-like with infinities and NaNs, max 1.75 × 2^15.
    {FloatFormat::kFP8E5M2, "fp8_e5m2", 8, 5, 2, 15, true, true, NanRule::kIeee,
     OverflowRule::kInfinity, 57344.0, 0x1p-16},
    // OCP MX E8M0 scale: EEEEEEEE = 2^(E - 127), unsigned, no zero, 0xFF is NaN.
    {FloatFormat::kE8M0, "e8m0", 8, 8, 0, 127, false, false, NanRule::kAllOnes, OverflowRule::kNan,
     0x1p127, 0x1p-127},
    // OCP MX FP4 E2M1: S EE M, values ±{0, 0.5, 1, 1.5, 2, 3, 4, 6}, no NaN or infinity.
    {FloatFormat::kE2M1, "e2m1", 4, 2, 1, 1, true, true, NanRule::kNone, OverflowRule::kSaturate,
     6.0, 0.5},
}};

constexpr const FloatFormatInfo& FormatInfo(FloatFormat format) {
  return kFloatFormats[static_cast<size_t>(format)];
}

namespace numeric_internal {

constexpr double Pow2(int e) {
  double v = 1.0;
  for (; e > 0; --e) v *= 2.0;
  for (; e < 0; ++e) v /= 2.0;
  return v;
}

// The magnitude (sign excluded) of the largest finite pattern.
constexpr uint32_t MaxFiniteMagnitude(const FloatFormatInfo& f) {
  uint32_t all_ones = (1u << (f.bits - (f.has_sign ? 1 : 0))) - 1;
  switch (f.nan) {
    case NanRule::kIeee:
      return ((((1u << f.exponent_bits) - 1)) << f.mantissa_bits) - 1;
    case NanRule::kAllOnes:
      return all_ones - 1;
    case NanRule::kNone:
      return all_ones;
  }
  return 0;
}

// The value of a finite, non-negative magnitude pattern, from the layout rule above.
constexpr double MagnitudeValue(const FloatFormatInfo& f, uint32_t magnitude) {
  uint32_t e = magnitude >> f.mantissa_bits;
  uint32_t m = magnitude & ((1u << f.mantissa_bits) - 1);
  if (e == 0 && f.has_subnormals) return m * Pow2(1 - f.bias - f.mantissa_bits);
  return ((1u << f.mantissa_bits) + m) * Pow2(static_cast<int>(e) - f.bias - f.mantissa_bits);
}

constexpr bool TableAgreesWithLayouts() {
  for (size_t i = 0; i < kFloatFormats.size(); ++i) {
    const FloatFormatInfo& f = kFloatFormats[i];
    if (static_cast<size_t>(f.format) != i) return false;
    if (f.bits != (f.has_sign ? 1 : 0) + f.exponent_bits + f.mantissa_bits) return false;
    if (MagnitudeValue(f, MaxFiniteMagnitude(f)) != f.max_finite) return false;
    if (MagnitudeValue(f, f.has_subnormals ? 1 : 0) != f.min_positive) return false;
  }
  return true;
}
static_assert(TableAgreesWithLayouts(),
              "kFloatFormats disagrees with the bit layouts it describes");

}  // namespace numeric_internal

// Decodes the low FormatInfo(format).bits bits of `bits` (higher bits are ignored). Exact: every
// value of these formats is a float32.
float DecodeFloat(FloatFormat format, uint32_t bits);

// Encodes with round-to-nearest, ties to even (the even significand: for e8m0, which keeps no
// mantissa bit, a tie goes to the larger power of two). Overflow and ±infinity follow the format's
// OverflowRule. NaN encodes as the format's NaN with the input's sign (0x7F / 0xFF for e4m3fn);
// e2m1 has no NaN and encodes it as +0. Values e8m0 cannot hold (zero, negatives) encode as its
// NaN; positive values below 2^-127 encode as 2^-127, the nearest it has.
uint32_t EncodeFloat(FloatFormat format, float value);

// Named conversions for call sites that know the format (8-bit and 4-bit decodes are table
// lookups).
float Bf16ToFloat(uint16_t bits);
uint16_t FloatToBf16(float value);
float Fp16ToFloat(uint16_t bits);
uint16_t FloatToFp16(float value);
float Fp8E4M3ToFloat(uint8_t bits);
uint8_t FloatToFp8E4M3(float value);
float Fp8E5M2ToFloat(uint8_t bits);
uint8_t FloatToFp8E5M2(float value);
float E8M0ToFloat(uint8_t bits);
uint8_t FloatToE8M0(float value);
float E2M1ToFloat(uint8_t nibble);  // the low 4 bits
uint8_t FloatToE2M1(float value);   // in the low 4 bits

// Bf16ToFloat and FloatToBf16 over `n` values, in loops the compiler vectorizes (a kernel's
// activations are converted on every call).
void Bf16ToFloats(const uint16_t* bits, int64_t n, float* out);
void FloatsToBf16(const float* values, int64_t n, uint16_t* out);

}  // namespace quantpath
