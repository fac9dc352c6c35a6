// MX element and scale conversions and the MX activation rounding against vectors computed by
// numpy and ml_dtypes (tests/data/numeric/mx_vectors.txt, written by
// tools/fixtures/write_mx_vectors.py): the E8M0 decode of every code, the double reference's E2M1
// helpers, and the kernel's fp32 and the reference's double activation rounding (mx_family.h).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "quantpath/numeric.h"
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/mx_family.h"
#include "src/specs/reference/mx_reference.h"
#include "src/specs/reference/nvfp4_reference.h"

namespace quantpath {
namespace {

const std::string kVectors = std::string(QUANTPATH_TEST_DATA) + "/numeric/mx_vectors.txt";

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

TEST(MxVectors, E8M0DecodesEveryCodeAsMlDtypes) {
  const auto lines = Lines("e8m0_decode");
  ASSERT_EQ(lines.size(), 1u);
  ASSERT_EQ(lines[0].size(), 256u);
  for (int code = 0; code < 256; ++code) {
    const float expected = FromHex(lines[0][code]);
    const float got = E8M0ToFloat(static_cast<uint8_t>(code));
    if (code == kE8M0Nan) {
      EXPECT_TRUE(std::isnan(expected));
      EXPECT_TRUE(std::isnan(got));
      continue;
    }
    EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(expected)) << code;
    // The kernel and the reference scale by ldexp with the bias (mx_family.h).
    EXPECT_EQ(std::ldexp(1.0f, code - kE8M0Bias), expected) << code;
  }
}

TEST(MxVectors, ReferenceE2M1HelpersMatchMlDtypes) {
  const auto decode = Lines("e2m1_decode");
  ASSERT_EQ(decode.size(), 1u);
  ASSERT_EQ(decode[0].size(), 16u);
  for (unsigned code = 0; code < 16; ++code) {
    EXPECT_EQ(reference::DecodeE2M1(code), FromHex(decode[0][code])) << code;
  }
  const auto rounds = Lines("e2m1_round");
  ASSERT_GT(rounds.size(), 50u);
  for (const auto& f : rounds) {
    const float x = FromHex(f[0]);
    EXPECT_EQ(reference::RoundToE2M1(x), FromHex(f[1])) << x;
  }
}

TEST(MxVectors, SharedExponentFollowsTheOcpRule) {
  // floor(log2(amax)) − emax_elem: 6 = 1.5 · 2^2 takes 0 for E2M1; 448 = 1.75 · 2^8 takes 0 for
  // E4M3; a power of two is its own floor; zero and the range ends clamp.
  EXPECT_EQ(MxSharedExponent(6.0, QDType::kMXFP4), 0);
  EXPECT_EQ(MxSharedExponent(448.0, QDType::kMXFP8), 0);
  EXPECT_EQ(MxSharedExponent(4.0, QDType::kMXFP4), 0);
  EXPECT_EQ(MxSharedExponent(3.999, QDType::kMXFP4), -1);
  EXPECT_EQ(MxSharedExponent(1.0, QDType::kMXFP8), -8);
  EXPECT_EQ(MxSharedExponent(0.0, QDType::kMXFP4), -127);
  EXPECT_EQ(MxSharedExponent(1e-40, QDType::kMXFP8), -127);
  EXPECT_EQ(MxSharedExponent(1e300, QDType::kMXFP4), 127);
}

// The kernel's fp32 rounding and the double reference equal numpy's bit for bit: scaling by a
// power of two is exact, so the two precisions agree.
TEST(MxVectors, ActivationRoundingMatchesNumpy) {
  const auto cases = Lines("act");
  ASSERT_EQ(cases.size(), 2u);
  for (const auto& f : cases) {
    const QDType element = f[0] == "mxfp4" ? QDType::kMXFP4 : QDType::kMXFP8;
    const int64_t m = std::stoll(f[1]);
    const int64_t k = std::stoll(f[2]);
    ASSERT_EQ(static_cast<int64_t>(f.size()), 3 + 2 * m * k);
    std::vector<float> x(static_cast<size_t>(m * k));
    std::vector<double> xd(x.size());
    for (int64_t i = 0; i < m * k; ++i) xd[i] = x[i] = FromHex(f[3 + i]);
    std::vector<float> kernel = x;
    reference::QuantizeMxActivations(&kernel, m, k, kMxGroup, element);
    const std::vector<double> ref = reference::QuantizeMxReference(xd, m, k, kMxGroup, element);
    int64_t changed = 0;
    for (int64_t i = 0; i < m * k; ++i) {
      const float expected = FromHex(f[3 + m * k + i]);
      EXPECT_EQ(std::bit_cast<uint32_t>(kernel[i]), std::bit_cast<uint32_t>(expected))
          << f[0] << " " << i;
      EXPECT_EQ(ref[i], static_cast<double>(expected)) << f[0] << " " << i;
      if (expected != x[i]) ++changed;
    }
    // The rounding does something: most values move onto the coarser grid.
    EXPECT_GT(changed, m * k / 2) << f[0];
  }
}

}  // namespace
}  // namespace quantpath
