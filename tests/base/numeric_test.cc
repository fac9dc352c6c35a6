// Tests of the numeric conversions against references that share no code with
// src/base/numeric.cc: decoders written below from the specifications (OCP 8-bit Floating Point
// v1.0, OCP Microscaling Formats v1.0, bfloat16 as the upper half of IEEE 754 binary32, IEEE 754
// binary16), and Python's ml_dtypes / numpy when the machine has them.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "quantpath/numeric.h"

namespace quantpath {
namespace {

constexpr FloatFormat kAllFormats[] = {FloatFormat::kBF16,    FloatFormat::kFP16,
                                       FloatFormat::kFP8E4M3, FloatFormat::kFP8E5M2,
                                       FloatFormat::kE8M0,    FloatFormat::kE2M1};

// ---------------------------------------------------------------------------------------------
// Reference decoders, each written from its specification's definition of the value of a pattern.

double Sign(uint32_t bits, int sign_bit) { return (bits >> sign_bit) & 1 ? -1.0 : 1.0; }

// bfloat16: 1 sign, 8 exponent (bias 127), 7 mantissa bits; binary32's exponent rules.
double RefBf16(uint32_t b) {
  uint32_t e = (b >> 7) & 0xFF, m = b & 0x7F;
  if (e == 0xFF) return m == 0 ? Sign(b, 15) * INFINITY : NAN;
  if (e == 0) return Sign(b, 15) * std::ldexp(m / 128.0, -126);
  return Sign(b, 15) * std::ldexp(1.0 + m / 128.0, static_cast<int>(e) - 127);
}

// binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
double RefFp16(uint32_t b) {
  uint32_t e = (b >> 10) & 0x1F, m = b & 0x3FF;
  if (e == 0x1F) return m == 0 ? Sign(b, 15) * INFINITY : NAN;
  if (e == 0) return Sign(b, 15) * std::ldexp(m / 1024.0, -14);
  return Sign(b, 15) * std::ldexp(1.0 + m / 1024.0, static_cast<int>(e) - 15);
}

// OCP FP8 E4M3: bias 7; no infinities; S.1111.111 is NaN; S.1111.000-110 are normal numbers.
double RefE4M3(uint32_t b) {
  uint32_t e = (b >> 3) & 0xF, m = b & 0x7;
  if (e == 0xF && m == 0x7) return NAN;
  if (e == 0) return Sign(b, 7) * std::ldexp(m / 8.0, -6);
  return Sign(b, 7) * std::ldexp(1.0 + m / 8.0, static_cast<int>(e) - 7);
}

// OCP FP8 E5M2: bias 15; IEEE 754 conventions for infinities and NaNs.
double RefE5M2(uint32_t b) {
  uint32_t e = (b >> 2) & 0x1F, m = b & 0x3;
  if (e == 0x1F) return m == 0 ? Sign(b, 7) * INFINITY : NAN;
  if (e == 0) return Sign(b, 7) * std::ldexp(m / 4.0, -14);
  return Sign(b, 7) * std::ldexp(1.0 + m / 4.0, static_cast<int>(e) - 15);
}

// OCP MX E8M0: 8-bit exponent, bias 127, no sign, no zero; 0xFF is NaN.
double RefE8M0(uint32_t b) { return b == 0xFF ? NAN : std::ldexp(1.0, static_cast<int>(b) - 127); }

// OCP MX FP4 E2M1: bias 1; no infinities or NaN; E=0 is subnormal with 0.M × 2^0.
double RefE2M1(uint32_t b) {
  uint32_t e = (b >> 1) & 0x3, m = b & 0x1;
  if (e == 0) return Sign(b, 3) * (m / 2.0);
  return Sign(b, 3) * std::ldexp(1.0 + m / 2.0, static_cast<int>(e) - 1);
}

double Reference(FloatFormat f, uint32_t b) {
  switch (f) {
    case FloatFormat::kBF16:
      return RefBf16(b);
    case FloatFormat::kFP16:
      return RefFp16(b);
    case FloatFormat::kFP8E4M3:
      return RefE4M3(b);
    case FloatFormat::kFP8E5M2:
      return RefE5M2(b);
    case FloatFormat::kE8M0:
      return RefE8M0(b);
    case FloatFormat::kE2M1:
      return RefE2M1(b);
  }
  return NAN;
}

uint32_t PatternCount(FloatFormat f) { return 1u << FormatInfo(f).bits; }

bool IsNanPattern(FloatFormat f, uint32_t b) { return std::isnan(Reference(f, b)); }

// Equal as float32 values, telling -0 from +0; any NaN equals any NaN.
::testing::AssertionResult SameFloat(float expected, float actual) {
  if (std::isnan(expected) && std::isnan(actual)) return ::testing::AssertionSuccess();
  if (std::bit_cast<uint32_t>(expected) == std::bit_cast<uint32_t>(actual)) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "expected " << expected << " got " << actual;
}

std::string Hex(uint32_t v) {
  char buffer[16];
  std::snprintf(buffer, sizeof(buffer), "0x%x", v);
  return buffer;
}

// ---------------------------------------------------------------------------------------------
// Decoding

TEST(NumericTable, FactsMatchTheSpecifications) {
  EXPECT_EQ(FormatInfo(FloatFormat::kFP8E4M3).max_finite, 448.0);
  EXPECT_EQ(FormatInfo(FloatFormat::kFP8E5M2).max_finite, 57344.0);
  EXPECT_EQ(FormatInfo(FloatFormat::kFP16).max_finite, 65504.0);
  EXPECT_EQ(FormatInfo(FloatFormat::kE2M1).max_finite, 6.0);
  EXPECT_EQ(FormatInfo(FloatFormat::kE8M0).max_finite, std::ldexp(1.0, 127));
  EXPECT_EQ(FormatInfo(FloatFormat::kBF16).max_finite, RefBf16(0x7F7F));
  for (FloatFormat f : kAllFormats) {
    // The largest finite pattern (positive) decodes to max_finite in the reference too.
    double largest = 0;
    for (uint32_t b = 0; b < PatternCount(f); ++b) {
      double v = Reference(f, b);
      if (std::isfinite(v)) largest = std::max(largest, v);
    }
    EXPECT_EQ(largest, FormatInfo(f).max_finite) << FormatInfo(f).name;
  }
}

TEST(NumericDecode, EveryPatternMatchesTheSpecificationDecoder) {
  for (FloatFormat f : kAllFormats) {
    for (uint32_t b = 0; b < PatternCount(f); ++b) {
      float expected = static_cast<float>(Reference(f, b));
      ASSERT_TRUE(SameFloat(expected, DecodeFloat(f, b))) << FormatInfo(f).name << " " << Hex(b);
    }
  }
}

TEST(NumericDecode, NamedFunctionsAgreeWithTheGenericOne) {
  for (uint32_t b = 0; b < 65536; ++b) {
    auto b16 = static_cast<uint16_t>(b);
    ASSERT_TRUE(SameFloat(DecodeFloat(FloatFormat::kBF16, b), Bf16ToFloat(b16))) << Hex(b);
    ASSERT_TRUE(SameFloat(DecodeFloat(FloatFormat::kFP16, b), Fp16ToFloat(b16))) << Hex(b);
  }
  for (uint32_t b = 0; b < 256; ++b) {
    auto b8 = static_cast<uint8_t>(b);
    ASSERT_TRUE(SameFloat(DecodeFloat(FloatFormat::kFP8E4M3, b), Fp8E4M3ToFloat(b8))) << Hex(b);
    ASSERT_TRUE(SameFloat(DecodeFloat(FloatFormat::kFP8E5M2, b), Fp8E5M2ToFloat(b8))) << Hex(b);
    ASSERT_TRUE(SameFloat(DecodeFloat(FloatFormat::kE8M0, b), E8M0ToFloat(b8))) << Hex(b);
    // E2M1ToFloat reads the low nibble only.
    ASSERT_TRUE(SameFloat(DecodeFloat(FloatFormat::kE2M1, b & 0xF), E2M1ToFloat(b8))) << Hex(b);
  }
}

TEST(NumericDecode, ValuesFromTheSpecificationTables) {
  EXPECT_EQ(Bf16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(Bf16ToFloat(0xC000), -2.0f);
  EXPECT_EQ(Fp16ToFloat(0x3C00), 1.0f);
  EXPECT_EQ(Fp16ToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(Fp16ToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(Fp16ToFloat(0x7C00)));
  // OCP FP8 table 1: E4M3 max normal S.1111.110 = 448, min normal 2^-6, min subnormal 2^-9.
  EXPECT_EQ(Fp8E4M3ToFloat(0x7E), 448.0f);
  EXPECT_EQ(Fp8E4M3ToFloat(0xFE), -448.0f);
  EXPECT_EQ(Fp8E4M3ToFloat(0x08), std::ldexp(1.0f, -6));
  EXPECT_EQ(Fp8E4M3ToFloat(0x01), std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::isnan(Fp8E4M3ToFloat(0x7F)));
  EXPECT_TRUE(std::isnan(Fp8E4M3ToFloat(0xFF)));
  EXPECT_EQ(Fp8E4M3ToFloat(0x78), 256.0f);  // S.1111.000 is a number, not infinity
  // E5M2: max normal 57344, min subnormal 2^-16, S.11111.00 = infinity.
  EXPECT_EQ(Fp8E5M2ToFloat(0x7B), 57344.0f);
  EXPECT_EQ(Fp8E5M2ToFloat(0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(Fp8E5M2ToFloat(0xFC), -INFINITY);
  EXPECT_TRUE(std::isnan(Fp8E5M2ToFloat(0x7D)));
  // MX E8M0: 127 is 1.0; 0 is 2^-127; 254 is 2^127; 255 is NaN.
  EXPECT_EQ(E8M0ToFloat(127), 1.0f);
  EXPECT_EQ(E8M0ToFloat(0), std::ldexp(1.0f, -127));
  EXPECT_EQ(E8M0ToFloat(254), std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isnan(E8M0ToFloat(255)));
  // MX FP4 E2M1: the eight magnitudes.
  const float magnitudes[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (uint8_t b = 0; b < 8; ++b) {
    EXPECT_EQ(E2M1ToFloat(b), magnitudes[b]);
    EXPECT_EQ(E2M1ToFloat(static_cast<uint8_t>(b | 8)), -magnitudes[b]);
  }
  EXPECT_TRUE(std::signbit(E2M1ToFloat(0x8)));
}

// ---------------------------------------------------------------------------------------------
// Encoding

// FloatToBf16 rounds on the bits; the general encoder (EncodeFloat) is its reference on values
// between bf16 values: float patterns across the whole range, each bf16 value's halfway points
// (ties to even) and the values either side of them.
// FloatToFp8E4M3 rounds on the bits too: against the general encoder across the whole float range,
// at every e4m3 value's halfway points and either side of them (normal: the cut 20 bits at
// 0x80000; subnormal: (q + ½) · 2^-9), saturation and NaN.
TEST(NumericEncode, Fp8E4M3RoundingMatchesTheGeneralEncoder) {
  const auto check = [](float value) {
    ASSERT_EQ(FloatToFp8E4M3(value), EncodeFloat(FloatFormat::kFP8E4M3, value))
        << Hex(std::bit_cast<uint32_t>(value));
  };
  for (uint64_t wide = 0; wide <= 0xFFFFFFFFu; wide += 0xFFF1) {
    const uint32_t b = static_cast<uint32_t>(wide);
    for (const uint32_t bits : {b, (b & 0xFFF00000u) | 0x80000u, (b & 0xFFF00000u) | 0x7FFFFu,
                                (b & 0xFFF00000u) | 0x80001u}) {
      check(std::bit_cast<float>(bits));
    }
  }
  for (int q = 0; q <= 8; ++q) {
    const float tie = (static_cast<float>(q) + 0.5f) / 512.0f;
    for (const float v : {tie, std::nextafter(tie, 0.0f), std::nextafter(tie, 1.0f), -tie}) {
      check(v);
    }
  }
  for (const float v :
       {448.0f, 463.9f, 464.0f, 1e9f, INFINITY, -INFINITY, NAN, -NAN, 0.0f, -0.0f}) {
    check(v);
  }
}

TEST(NumericEncode, Bf16RoundingMatchesTheGeneralEncoder) {
  for (uint64_t wide = 0; wide <= 0xFFFFFFFFu; wide += 0xFFF1) {
    const uint32_t b = static_cast<uint32_t>(wide);
    for (const uint32_t bits : {b, (b & 0xFFFF0000u) | 0x8000u, (b & 0xFFFF0000u) | 0x7FFFu,
                                (b & 0xFFFF0000u) | 0x8001u}) {
      const float value = std::bit_cast<float>(bits);
      ASSERT_EQ(FloatToBf16(value), EncodeFloat(FloatFormat::kBF16, value)) << Hex(bits);
    }
  }
}

TEST(NumericEncode, EveryValueRoundTrips) {
  for (FloatFormat f : kAllFormats) {
    for (uint32_t b = 0; b < PatternCount(f); ++b) {
      if (IsNanPattern(f, b)) continue;
      ASSERT_EQ(EncodeFloat(f, DecodeFloat(f, b)), b) << FormatInfo(f).name << " " << Hex(b);
    }
  }
  // The named functions, each against its own format.
  auto check = [](FloatFormat f, auto decode, auto encode) {
    for (uint32_t b = 0; b < PatternCount(f); ++b) {
      if (IsNanPattern(f, b)) continue;
      using Bits = decltype(encode(0.0f));
      ASSERT_EQ(encode(decode(static_cast<Bits>(b))), b) << FormatInfo(f).name << " " << Hex(b);
    }
  };
  check(FloatFormat::kBF16, Bf16ToFloat, FloatToBf16);
  check(FloatFormat::kFP16, Fp16ToFloat, FloatToFp16);
  check(FloatFormat::kFP8E4M3, Fp8E4M3ToFloat, FloatToFp8E4M3);
  check(FloatFormat::kFP8E5M2, Fp8E5M2ToFloat, FloatToFp8E5M2);
  check(FloatFormat::kE8M0, E8M0ToFloat, FloatToE8M0);
  check(FloatFormat::kE2M1, E2M1ToFloat, FloatToE2M1);
}

// FloatToE2M1 decides by comparison; the generic encoder by the format's table. Every float
// whose magnitude lies in [0, 8] on a grid of 2^-10 (every E2M1 midpoint and its neighbours
// included), both signs, infinities and NaN agree.
TEST(NumericEncode, E2M1ByComparisonIsTheGenericRounding) {
  std::vector<float> values = {INFINITY, -INFINITY, NAN, -NAN, 0.0f, -0.0f};
  for (int i = 0; i <= 8 * 1024; ++i) {
    const float v = static_cast<float>(i) * 0x1p-10f;
    for (const float x : {v, std::nextafter(v, 0.0f), std::nextafter(v, 9.0f)}) {
      values.push_back(x);
      values.push_back(-x);
    }
  }
  for (const float x : values) {
    EXPECT_EQ(FloatToE2M1(x), EncodeFloat(FloatFormat::kE2M1, x)) << x;
  }
}

// Between two neighbours, the midpoint goes to the one with the even significand and anything
// off the midpoint to the nearer one. The patterns of one sign are ordered like their values, so
// neighbours are consecutive patterns.
TEST(NumericEncode, RoundsToNearestTiesToEven) {
  for (FloatFormat f : kAllFormats) {
    const FloatFormatInfo& info = FormatInfo(f);
    uint32_t sign_bit = info.has_sign ? 1u << (info.bits - 1) : 0;
    std::vector<uint32_t> signs = {0};
    if (info.has_sign) signs.push_back(sign_bit);
    uint32_t positive_patterns = info.has_sign ? sign_bit : PatternCount(f);
    for (uint32_t lo = 0; lo + 1 < positive_patterns; ++lo) {
      uint32_t hi = lo + 1;
      double a = Reference(f, lo), b = Reference(f, hi);
      if (!std::isfinite(a) || !std::isfinite(b)) continue;
      // Exact in float32: the neighbours differ in their last significand bit only.
      auto mid = static_cast<float>((a + b) / 2);
      // e8m0 keeps no mantissa bit: the significands are 1 (odd) and 2 (even), so ties go up.
      uint32_t even = f == FloatFormat::kE8M0 ? hi : (lo % 2 == 0 ? lo : hi);
      for (uint32_t sign : signs) {
        float s = sign != 0 ? -1.0f : 1.0f;
        std::string where =
            std::string(info.name) + " between " + Hex(lo | sign) + " and " + Hex(hi | sign);
        EXPECT_EQ(EncodeFloat(f, s * mid), even | sign) << where;
        EXPECT_EQ(EncodeFloat(f, s * std::nextafter(mid, 0.0f)), lo | sign) << where;
        EXPECT_EQ(EncodeFloat(f, s * std::nextafter(mid, INFINITY)), hi | sign) << where;
      }
    }
  }
}

TEST(NumericEncode, OverflowSaturatesOrGoesToInfinityAsTheFormatSays) {
  // e4m3fn saturates to ±448, infinities included (OCP saturating conversion).
  EXPECT_EQ(FloatToFp8E4M3(448.0f), 0x7E);
  EXPECT_EQ(FloatToFp8E4M3(464.0f), 0x7E);  // the midpoint to the missing 480 rounds to even
  EXPECT_EQ(FloatToFp8E4M3(465.0f), 0x7E);
  EXPECT_EQ(FloatToFp8E4M3(1e30f), 0x7E);
  EXPECT_EQ(FloatToFp8E4M3(INFINITY), 0x7E);
  EXPECT_EQ(FloatToFp8E4M3(-INFINITY), 0xFE);
  EXPECT_EQ(FloatToFp8E4M3(-1000.0f), 0xFE);
  // e5m2, fp16 and bf16 overflow to infinity once past the midpoint above their max.
  EXPECT_EQ(FloatToFp8E5M2(57344.0f), 0x7B);
  EXPECT_EQ(FloatToFp8E5M2(std::nextafter(61440.0f, 0.0f)), 0x7B);
  EXPECT_EQ(FloatToFp8E5M2(61440.0f), 0x7C);
  EXPECT_EQ(FloatToFp8E5M2(-INFINITY), 0xFC);
  EXPECT_EQ(FloatToFp16(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToFp16(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
  EXPECT_EQ(FloatToFp16(65520.0f), 0x7C00);
  EXPECT_EQ(FloatToBf16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(FloatToBf16(-INFINITY), 0xFF80);
  // e2m1 saturates to ±6.
  EXPECT_EQ(FloatToE2M1(6.0f), 0x7);
  EXPECT_EQ(FloatToE2M1(7.0f), 0x7);
  EXPECT_EQ(FloatToE2M1(INFINITY), 0x7);
  EXPECT_EQ(FloatToE2M1(-100.0f), 0xF);
  // e8m0: past 2^127 (the tie 1.5 × 2^127 rounds up) is NaN; zero and negatives are NaN; below
  // 2^-127 the nearest value is 2^-127.
  EXPECT_EQ(FloatToE8M0(std::ldexp(1.0f, 127)), 0xFE);
  EXPECT_EQ(FloatToE8M0(std::ldexp(1.4f, 127)), 0xFE);
  EXPECT_EQ(FloatToE8M0(std::ldexp(1.5f, 127)), 0xFF);
  EXPECT_EQ(FloatToE8M0(INFINITY), 0xFF);
  EXPECT_EQ(FloatToE8M0(0.0f), 0xFF);
  EXPECT_EQ(FloatToE8M0(-0.0f), 0xFF);
  EXPECT_EQ(FloatToE8M0(-1.0f), 0xFF);
  EXPECT_EQ(FloatToE8M0(std::ldexp(1.0f, -140)), 0x00);
  EXPECT_EQ(FloatToE8M0(std::numeric_limits<float>::denorm_min()), 0x00);
  // Underflow of signed formats keeps the sign.
  EXPECT_EQ(FloatToFp8E4M3(-1e-30f), 0x80);
  EXPECT_EQ(FloatToFp8E4M3(std::ldexp(1.0f, -10)), 0x00);  // half the smallest subnormal: even
  EXPECT_EQ(FloatToFp8E4M3(std::ldexp(1.5f, -10)), 0x01);
}

TEST(NumericEncode, NanEncodesAsTheFormatsNan) {
  EXPECT_EQ(FloatToFp8E4M3(NAN), 0x7F);
  EXPECT_EQ(FloatToFp8E4M3(-NAN), 0xFF);
  EXPECT_EQ(FloatToFp8E5M2(NAN), 0x7E);
  EXPECT_EQ(FloatToFp8E5M2(-NAN), 0xFE);
  EXPECT_EQ(FloatToFp16(NAN), 0x7E00);
  EXPECT_EQ(FloatToBf16(NAN), 0x7FC0);
  EXPECT_EQ(FloatToBf16(-NAN), 0xFFC0);
  EXPECT_EQ(FloatToE8M0(NAN), 0xFF);
  EXPECT_EQ(FloatToE2M1(NAN), 0x0);  // no NaN in e2m1
  for (FloatFormat f : kAllFormats) {
    if (FormatInfo(f).nan == NanRule::kNone) continue;
    EXPECT_TRUE(std::isnan(DecodeFloat(f, EncodeFloat(f, NAN)))) << FormatInfo(f).name;
  }
}

// ---------------------------------------------------------------------------------------------
// Python's ml_dtypes (and numpy's float16), when available.

constexpr const char* kMlDtypesScript = R"(import sys
import warnings
import numpy as np
import ml_dtypes as m
formats = [("bf16", m.bfloat16, np.uint16), ("fp16", np.float16, np.uint16),
           ("fp8_e4m3fn", m.float8_e4m3fn, np.uint8), ("fp8_e5m2", m.float8_e5m2, np.uint8),
           ("e8m0", m.float8_e8m0fnu, np.uint8), ("e2m1", m.float4_e2m1fn, np.uint8)]
warnings.simplefilter("ignore")  # overflow in casts is expected
bits = {"bf16": 16, "fp16": 16, "fp8_e4m3fn": 8, "fp8_e5m2": 8, "e8m0": 8, "e2m1": 4}
if sys.argv[1] == "decode":
    for name, t, raw in formats:
        values = np.arange(1 << bits[name], dtype=raw).view(t).astype(np.float32)
        print(name, " ".join("%x" % v for v in values.view(np.uint32)))
else:
    inputs = np.fromfile(sys.argv[2], dtype="<u4").view(np.float32)
    for name, t, raw in formats:
        print(name, " ".join("%x" % v for v in inputs.astype(t).view(raw)))
)";

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "quantpath_numeric_" + std::to_string(getpid()) + "_" + name;
}

bool PythonHasMlDtypes() {
  return std::system("python3 -c 'import ml_dtypes, numpy' > /dev/null 2>&1") == 0;
}

// Runs the script with `args`; returns "format → hex values" from its output.
std::map<std::string, std::vector<uint32_t>> RunMlDtypes(const std::string& args) {
  // Per process: ctest may run several of these tests at once.
  std::string script = TempPath("ml_dtypes.py");
  std::ofstream(script) << kMlDtypesScript;
  std::map<std::string, std::vector<uint32_t>> out;
  FILE* pipe = popen(("python3 " + script + " " + args).c_str(), "r");
  if (pipe == nullptr) return out;
  std::string text;
  char buffer[65536];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) text.append(buffer, n);
  pclose(pipe);
  std::remove(script.c_str());
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string name, word;
    words >> name;
    while (words >> word) out[name].push_back(static_cast<uint32_t>(std::stoul(word, nullptr, 16)));
  }
  return out;
}

TEST(NumericDecode, EveryPatternMatchesMlDtypes) {
  if (!PythonHasMlDtypes()) GTEST_SKIP() << "python3 with ml_dtypes is not available";
  auto table = RunMlDtypes("decode");
  for (FloatFormat f : kAllFormats) {
    const std::vector<uint32_t>& values = table[std::string(FormatInfo(f).name)];
    ASSERT_EQ(values.size(), PatternCount(f)) << FormatInfo(f).name;
    for (uint32_t b = 0; b < PatternCount(f); ++b) {
      ASSERT_TRUE(SameFloat(std::bit_cast<float>(values[b]), DecodeFloat(f, b)))
          << FormatInfo(f).name << " " << Hex(b);
    }
  }
}

TEST(NumericEncode, MatchesMlDtypesOnSampledInputs) {
  if (!PythonHasMlDtypes()) GTEST_SKIP() << "python3 with ml_dtypes is not available";
  // Every bf16 value, and random float32 patterns spread over all exponents (seeded).
  std::vector<uint32_t> inputs;
  for (uint32_t b = 0; b < 65536; ++b) inputs.push_back(b << 16);
  std::mt19937 rng(20240611);
  for (int i = 0; i < 65536; ++i) inputs.push_back(static_cast<uint32_t>(rng()));
  std::string path = TempPath("encode_inputs.bin");
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(inputs.data()),
             static_cast<std::streamsize>(inputs.size() * sizeof(uint32_t)));
  auto table = RunMlDtypes("encode " + path);
  std::remove(path.c_str());
  for (FloatFormat f : kAllFormats) {
    const FloatFormatInfo& info = FormatInfo(f);
    const std::vector<uint32_t>& expected = table[std::string(info.name)];
    ASSERT_EQ(expected.size(), inputs.size()) << info.name;
    int compared = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      float v = std::bit_cast<float>(inputs[i]);
      uint32_t ours = EncodeFloat(f, v);
      // Documented differences. e4m3fn: ml_dtypes turns overflow and infinity into NaN, quantpath
      // saturates (DESIGN.md). e2m1: ml_dtypes turns NaN into a zero of the opposite sign,
      // quantpath into +0. e8m0: ml_dtypes rounds float32 subnormal inputs as if on a coarser grid.
      if (f == FloatFormat::kFP8E4M3 && !std::isnan(v) && IsNanPattern(f, expected[i])) {
        EXPECT_EQ(ours & 0x7F, 0x7Eu) << Hex(inputs[i]);
        continue;
      }
      if (f == FloatFormat::kE2M1 && std::isnan(v)) continue;
      if (f == FloatFormat::kE8M0 && std::fpclassify(v) == FP_SUBNORMAL) continue;
      if (IsNanPattern(f, expected[i])) {
        ASSERT_TRUE(IsNanPattern(f, ours)) << info.name << " " << Hex(inputs[i]);
      } else {
        ASSERT_EQ(ours, expected[i]) << info.name << " input " << Hex(inputs[i]) << " = " << v;
      }
      ++compared;
    }
    EXPECT_GT(compared, 10000) << info.name;
  }
}

}  // namespace
}  // namespace quantpath
