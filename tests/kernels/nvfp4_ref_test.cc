// NVFP4 element conversions and the W4A4 activation rounding against vectors computed by numpy and
// ml_dtypes (tests/data/numeric/nvfp4_vectors.txt, written by
// tools/fixtures/write_nvfp4_vectors.py), and the double reference's activation rounding against
// the kernel's fp32 one.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "quantpath/numeric.h"
#include "quantpath/specs.h"
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/reference/nvfp4_reference.h"

namespace quantpath {
namespace {

const std::string kVectors = std::string(QUANTPATH_TEST_DATA) + "/numeric/nvfp4_vectors.txt";

float FromHex(const std::string& hex) {
  return std::bit_cast<float>(static_cast<uint32_t>(std::stoul(hex, nullptr, 16)));
}

std::vector<std::vector<std::string>> Lines(const std::string& tag) {
  std::ifstream in(kVectors);
  EXPECT_TRUE(in.good()) << kVectors;
  std::vector<std::vector<std::string>> out;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::vector<std::string> fields;
    for (std::string w; words >> w;) fields.push_back(w);
    if (!fields.empty() && fields[0] == tag) {
      fields.erase(fields.begin());
      out.push_back(fields);
    }
  }
  return out;
}

TEST(Nvfp4Vectors, DecodeEveryCode) {
  const auto e2m1 = Lines("e2m1_decode");
  ASSERT_EQ(e2m1.size(), 1u);
  ASSERT_EQ(e2m1[0].size(), 16u);
  for (uint8_t code = 0; code < 16; ++code) {
    EXPECT_EQ(std::bit_cast<uint32_t>(E2M1ToFloat(code)),
              std::bit_cast<uint32_t>(FromHex(e2m1[0][code])))
        << int(code);
  }
  const auto e4m3 = Lines("e4m3_decode");
  ASSERT_EQ(e4m3.size(), 1u);
  ASSERT_EQ(e4m3[0].size(), 256u);
  for (int code = 0; code < 256; ++code) {
    const float expected = FromHex(e4m3[0][code]);
    const float got = Fp8E4M3ToFloat(static_cast<uint8_t>(code));
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(got)) << code;
    } else {
      EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(expected)) << code;
    }
  }
}

TEST(Nvfp4Vectors, EncodeRoundsToNearestEvenAndSaturates) {
  const auto e2m1 = Lines("e2m1_encode");
  ASSERT_GT(e2m1.size(), 50u);
  for (const auto& f : e2m1) {
    const float x = FromHex(f[0]);
    EXPECT_EQ(FloatToE2M1(x), std::stoul(f[1], nullptr, 16)) << x;
  }
  const auto e4m3 = Lines("e4m3_encode");
  ASSERT_GT(e4m3.size(), 50u);
  for (const auto& f : e4m3) {
    const float x = FromHex(f[0]);
    EXPECT_EQ(FloatToFp8E4M3(x), std::stoul(f[1], nullptr, 16)) << x;
    EXPECT_EQ(RoundToE4M3(x), Fp8E4M3ToFloat(static_cast<uint8_t>(std::stoul(f[1], nullptr, 16))))
        << x;
  }
}

// The W4A4 rule (nvfp4_family.h): the kernel's fp32 rounding equals numpy's bit for bit, and the
// double reference rounded to fp32 equals it too (a double quotient of two floats rounds to the
// fp32 quotient), all-zero blocks included.
TEST(Nvfp4Vectors, ActivationRoundingMatchesNumpy) {
  const auto cases = Lines("act");
  ASSERT_EQ(cases.size(), 2u);
  for (const auto& f : cases) {
    const int64_t m = std::stoll(f[0]);
    const int64_t k = std::stoll(f[1]);
    const float divisor = FromHex(f[2]);
    ASSERT_EQ(static_cast<int64_t>(f.size()), 3 + 2 * m * k);
    std::vector<float> x(static_cast<size_t>(m * k));
    std::vector<double> xd(x.size());
    for (int64_t i = 0; i < m * k; ++i) xd[i] = x[i] = FromHex(f[3 + i]);
    std::vector<float> kernel = x;
    reference::QuantizeNvfp4Activations(&kernel, m, k, 16, divisor);
    const std::vector<double> ref = reference::QuantizeNvfp4Reference(xd, m, k, 16, divisor);
    int64_t nonzero = 0;
    for (int64_t i = 0; i < m * k; ++i) {
      const float expected = FromHex(f[3 + m * k + i]);
      EXPECT_EQ(std::bit_cast<uint32_t>(kernel[i]), std::bit_cast<uint32_t>(expected)) << i;
      EXPECT_EQ(static_cast<float>(ref[i]), expected) << i;
      if (expected != 0.0f) ++nonzero;
    }
    EXPECT_GT(nonzero, m * k / 2);
  }
}

}  // namespace
}  // namespace quantpath
