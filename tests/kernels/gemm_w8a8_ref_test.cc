// The W8A8 int8 kernel against the fp64 reference, on compressed-tensors int-quantized legs
// written here (fused, with different static grids per leg, so that CombineStaticInputs moves
// them), and the int8 activation rounding and leg combination on hand-computed values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <tuple>

#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "quantpath/specs.h"
#include "src/specs/w8a8_family.h"
#include "tests/kernels/cpu_levels.h"
#include "tests/kernels/random_layer.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

using testing::TestTensor;

ActivationQuant Int8(ActMode mode, bool symmetric) {
  ActivationQuant act;
  act.mode = mode;
  act.dtype = QDType::kINT8;
  act.symmetric = symmetric;
  return act;
}

TEST(Int8ActivationReference, DynamicPerTokenRoundsTiesToEven) {
  // absmax 127: 127 / absmax = 1 and s = 1, so x itself is rounded.
  const std::vector<double> x = {127, 2.5, 3.5, -2.5, -126.5, 0.25};
  const std::vector<double> q =
      QuantizeActivationsReference(x, 1, 6, Int8(ActMode::kDynamicPerToken, true), std::nullopt);
  EXPECT_EQ(q, (std::vector<double>{127, 2, 4, -2, -126, 0}));
  // Two rows, each its own scale: row 1's absmax is 2, so 127 / 2 and the scale 2 / 127 in fp32.
  const std::vector<double> two = {1, 0, 2, 1};
  const std::vector<double> q2 =
      QuantizeActivationsReference(two, 2, 2, Int8(ActMode::kDynamicPerToken, true), std::nullopt);
  const double s1 = static_cast<float>(2.0 / 127.0);
  EXPECT_EQ(q2[2], 127 * s1);
  EXPECT_EQ(q2[3], 64 * s1);  // 63.5 → 64
}

TEST(Int8ActivationReference, StaticSymmetricAndAsymmetricClamp) {
  const std::vector<double> x = {100, 0.25, 0.75, -100};
  EXPECT_EQ(QuantizeActivationsReference(x, 1, 4, Int8(ActMode::kStaticPerTensor, true), 0.5),
            (std::vector<double>{63.5, 0, 1, -64}));
  const std::vector<double> y = {300, -50, 0.5, 26.5};
  // z = −100: q = round(x) − 100 clamped to [−128, 127]; X' = (q + 100).
  EXPECT_EQ(
      QuantizeActivationsReference(y, 1, 4, Int8(ActMode::kStaticPerTensor, false), 1.0, -100.0),
      (std::vector<double>{227, -28, 0, 26}));
}

TEST(Int8ActivationReference, DynamicAsymmetricPerTokenZeroPoints) {
  // Row [−1, 3]: s = 4 / 255, z = round(−128 + 63.75) = −64; codes round(x / s) + z are
  // −128 (−63.75 → −64), −64, −32 (31.875 → 32), 127 (191.25 → 191): X' = (q − z) · s, and
  // zero stays exactly zero (the point of a zero point).
  const ActivationQuant act = Int8(ActMode::kDynamicPerToken, false);
  const double s = static_cast<float>(4.0 / 255.0);
  EXPECT_EQ(QuantizeActivationsReference(std::vector<double>{-1, 0, 0.5, 3}, 1, 4, act, {}),
            (std::vector<double>{-64 * s, 0, 32 * s, 191 * s}));
  // An all-positive row uses its own [min, max] as vLLM does, not one stretched to 0: [2, 4],
  // s = 2 / 255, z = round(−128 − 255) = −383, so 2 and 4 come back exactly.
  const double s2 = static_cast<float>(2.0 / 255.0);
  const std::vector<double> q2 =
      QuantizeActivationsReference(std::vector<double>{2, 4, 3}, 1, 3, act, {});
  EXPECT_EQ(q2[0], 255 * s2);
  EXPECT_EQ(q2[1], 510 * s2);
  EXPECT_NEAR(q2[2], 3, s2 / 2);
  // A constant row, where vLLM's scale would be 0, is stretched to [0, 5]: 5 comes back; an
  // all-zero row stays zero.
  const std::vector<double> q3 =
      QuantizeActivationsReference(std::vector<double>{5, 5, 0, 0}, 2, 2, act, {});
  EXPECT_EQ(q3[0], 255 * static_cast<double>(static_cast<float>(5.0 / 255.0)));
  EXPECT_EQ(q3[2], 0);
  EXPECT_EQ(q3[3], 0);
}

TEST(CombineStaticInputs, FollowsVllmsRangeUnion) {
  const std::vector<float> s = {0.5f, 2.0f, 1.0f};
  const std::vector<int32_t> none = {0, 0, 0};
  EXPECT_EQ(CombineStaticInputs(s, none, true), (std::pair<float, int32_t>{2.0f, 0}));
  // (1, 0) and (2, 10): range [−276, 234] → s = 2, z = 10.
  const std::vector<float> s2 = {1.0f, 2.0f};
  const std::vector<int32_t> z2 = {0, 10};
  EXPECT_EQ(CombineStaticInputs(s2, z2, false), (std::pair<float, int32_t>{2.0f, 10}));
  // (1, 0) and (1, 10): range [−138, 127] → s = 265 / 255, z = round(−128 + 138 / s) = 5.
  const std::vector<float> s3 = {1.0f, 1.0f};
  const std::vector<int32_t> z3 = {0, 10};
  const auto [scale, zero] = CombineStaticInputs(s3, z3, false);
  EXPECT_EQ(scale, 265.0f / 255.0f);
  EXPECT_EQ(zero, 5);
  // One leg keeps its zero point; its scale moves by at most an ulp or two.
  const std::vector<float> s4 = {0.0123f};
  const std::vector<int32_t> z4 = {7};
  const auto [one_scale, one_zero] = CombineStaticInputs(s4, z4, false);
  EXPECT_EQ(one_zero, 7);
  EXPECT_NEAR(one_scale, 0.0123f, 2 * 0.0123f * 0x1p-23f);
}

// A compressed-tensors int-quantized leg: I8 weights, bf16 scales [N, 1], static inputs.
std::vector<TestTensor> CtLeg(std::mt19937* rng, const std::string& prefix, int64_t n, int64_t k,
                              float input_scale, int8_t zero) {
  std::uniform_int_distribution<int> code(-127, 127);
  TestTensor w{prefix + ".weight", "I8", {n, k}, std::vector<uint8_t>(static_cast<size_t>(n * k))};
  for (uint8_t& b : w.bytes) b = static_cast<uint8_t>(static_cast<int8_t>(code(*rng)));
  const std::vector<float> scales = testing::RandomScales(rng, n);
  TestTensor zp{prefix + ".input_zero_point", "I8", {1}, {static_cast<uint8_t>(zero)}};
  return {w, testing::Bf16Tensor(prefix + ".weight_scale", {n, 1}, scales),
          testing::Bf16Tensor(prefix + ".input_scale", {1}, {input_scale}), zp};
}

TEST(GemmW8a8RefTest, FusedLegsWithDifferentGridsMatchTheReference) {
  std::mt19937 rng(42);
  const int64_t k = 96;
  const std::vector<int64_t> legs = {32, 16, 16};
  std::vector<TestTensor> tensors;
  const std::vector<float> in_scales = {0.0078125f, 0.01171875f, 0.005859375f};
  const std::vector<int8_t> zeros = {0, 12, -7};
  std::vector<std::string> prefixes;
  for (size_t leg = 0; leg < legs.size(); ++leg) {
    prefixes.push_back("m.l" + std::to_string(leg));
    for (TestTensor& t : CtLeg(&rng, prefixes.back(), legs[leg], k, in_scales[leg], zeros[leg])) {
      tensors.push_back(std::move(t));
    }
  }
  const Checkpoint checkpoint = testing::OpenTestCheckpoint(tensors);
  for (bool symmetric : {true, false}) {
    SCOPED_TRACE(symmetric ? "symmetric" : "asymmetric");
    QuantScheme scheme;
    scheme.weight.dtype = QDType::kINT8;
    scheme.weight.granularity = Granularity::kPerChannel;
    scheme.weight.load.layout = SourceLayout::kCtNaiveQuantized;
    TensorQuant in;
    in.dtype = QDType::kINT8;
    in.symmetric = symmetric;
    scheme.input = in;
    const ActivationQuant act = Int8(ActMode::kStaticPerTensor, symmetric);
    Result<SpecKey> key = ParseSpecId("int8_channel");
    ASSERT_TRUE(key.ok());
    Result<std::unique_ptr<WeightSpec>> spec = MakeSpec(*key, act, scheme.weight.load);
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    AllocationRequest request;
    request.layer = "m";
    request.shape = {64, k};
    request.leg_rows = legs;
    Result<LinearParams> params = (*spec)->Allocate(request);
    ASSERT_TRUE(params.ok()) << params.status().message();
    EXPECT_EQ(*(*spec)->StorageBytes(request), params->WeightBytes());
    ASSERT_TRUE((*spec)->Load(checkpoint, prefixes, &*params).ok());
    ASSERT_TRUE((*spec)->ProcessAfterLoading(&*params).ok());
    Result<ReferenceLayer> ref = DequantizeReference(checkpoint, scheme, "m", prefixes, false);
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    EXPECT_EQ(*ref->input_scale, params->tensor(Slot::kInputScale).data<float>()[0]);
    if (!symmetric) {
      EXPECT_EQ(*ref->input_zero_point, params->tensor(Slot::kInputOffset).data<int32_t>()[0]);
      EXPECT_NE(*ref->input_zero_point, 0);  // the legs' zero points combined to a new one
    }

    const int64_t m = 9;
    std::uniform_real_distribution<float> value(-1.5f, 1.5f);
    std::vector<float> x(static_cast<size_t>(m * k));
    for (float& v : x) v = Bf16ToFloat(FloatToBf16(value(rng)));
    std::vector<double> xd(x.begin(), x.end());
    const std::vector<double> xq =
        QuantizeActivationsReference(xd, m, k, act, ref->input_scale, ref->input_zero_point);
    KernelProbe probe{*key, m, 64, k, QDType::kFP32, QDType::kFP32, DeviceCaps{}, act};
    std::vector<double> expected(static_cast<size_t>(m * 64));
    double max_ref = 0;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t n = 0; n < 64; ++n) {
        double acc = 0;
        for (int64_t c = 0; c < k; ++c) acc += xq[i * k + c] * ref->weight[n * k + c];
        expected[i * 64 + n] = acc;
        max_ref = std::max(max_ref, std::fabs(acc));
      }
    }
    // Every kernel that takes the problem, at every CPU level this machine has.
    for (const CpuLevel level : testing::SupportedCpuLevels()) {
      const CpuFeatures allowed = testing::FeaturesAt(level);
      std::vector<const LinearKernel*> tested;
      for (const LinearKernel* kernel : KernelRegistry::Global().kernels()) {
        if (!allowed.Covers(kernel->features()) || !kernel->CanHandle(probe)) continue;
        SCOPED_TRACE(std::string(kernel->name()) + " at " + std::string(CpuLevelName(level)));
        tested.push_back(kernel);
        std::vector<float> y(static_cast<size_t>(m * 64));
        kernel->Apply(*params, act, ConstMatrix{QDType::kFP32, x.data(), m, k},
                      MutableMatrix{QDType::kFP32, y.data(), m, 64});
        double max_diff = 0;
        for (size_t i = 0; i < y.size(); ++i) {
          max_diff = std::max(max_diff, std::fabs(expected[i] - y[i]));
        }
        EXPECT_LT(max_diff / max_ref, 1e-6);
        // The zero point's row correction matters: without it (z moved, quant_bias kept) the
        // kernel is off by s_x · s_w · Σ (q − 128) per output, far beyond the reference's 1e-6.
        if (!symmetric) {
          params->tensor(Slot::kInputOffset).data<int32_t>()[0] += 1;
          std::vector<float> moved(y.size());
          kernel->Apply(*params, act, ConstMatrix{QDType::kFP32, x.data(), m, k},
                        MutableMatrix{QDType::kFP32, moved.data(), m, 64});
          params->tensor(Slot::kInputOffset).data<int32_t>()[0] -= 1;
          double worst = 0;
          for (size_t i = 0; i < y.size(); ++i)
            worst = std::max(worst, double{std::fabs(moved[i] - y[i])});
          EXPECT_GT(worst / max_ref, 1e-3);
        }
      }
      ASSERT_FALSE(tested.empty());
      Result<const LinearKernel*> chosen =
          Dispatcher(KernelRegistry::Global(), allowed).Select(probe);
      ASSERT_TRUE(chosen.ok()) << chosen.status().message();
      EXPECT_NE(std::find(tested.begin(), tested.end(), *chosen), tested.end());
    }
  }
}

// Every kernel against the reference kernel, which is exact in integers (checked against fp64
// above): dynamic per-token activations, symmetric and not, M across the fast kernel's 64-row
// tiles, N with rows past the last block of 4, K not a multiple of 64. The outputs must agree
// exactly.
// Decode and prefill M, a partial row block and column step, and (at the last shape) N past
// one 64-row tile, K past a 512-column tile, more rows of X than one pass over W takes.
class GemmW8a8ExactTest : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, int64_t>> {};

TEST_P(GemmW8a8ExactTest, EveryKernelMatchesTheReferenceExactly) {
  std::mt19937 rng(7);
  const auto [n, k, m] = GetParam();
  const KernelRegistry& registry = KernelRegistry::Global();
  const LinearKernel* reference = nullptr;
  for (const LinearKernel* kernel : registry.kernels()) {
    if (kernel->name() == "GemmW8A8Int8_Ref") reference = kernel;
  }
  ASSERT_NE(reference, nullptr);
  for (bool symmetric : {true, false}) {
    const ActivationQuant act = Int8(ActMode::kDynamicPerToken, symmetric);
    LoadFacts facts;
    facts.layout = SourceLayout::kCtNaiveQuantized;
    Result<std::unique_ptr<WeightSpec>> spec = MakeSpec(*ParseSpecId("int8_channel"), act, facts);
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    Result<LinearParams> params = testing::RandomLayer(**spec, n, k, &rng);
    ASSERT_TRUE(params.ok()) << params.status().message();
    {
      SCOPED_TRACE(std::string(symmetric ? "symmetric" : "asymmetric") + " m " + std::to_string(m));
      std::vector<float> x = testing::RandomBf16Values(&rng, m * k);
      // A NaN takes no part in its row's scale and becomes code 0.
      if (m > 1) x[k + 17] = std::numeric_limits<float>::quiet_NaN();
      std::vector<uint16_t> x16(x.size());
      for (size_t i = 0; i < x.size(); ++i) x16[i] = FloatToBf16(x[i]);
      const bool bf16_in = m % 2 == 0;  // X read as bf16 at even M
      const ConstMatrix xm = bf16_in ? ConstMatrix{QDType::kBF16, x16.data(), m, k}
                                     : ConstMatrix{QDType::kFP32, x.data(), m, k};
      std::vector<float> expected(static_cast<size_t>(m * n));
      reference->Apply(*params, act, xm, MutableMatrix{QDType::kFP32, expected.data(), m, n});
      const KernelProbe probe{(*spec)->key(), m, n, k, xm.dtype, QDType::kFP32, DeviceCaps{}, act};
      for (const CpuLevel level : testing::SupportedCpuLevels()) {
        const CpuFeatures allowed = testing::FeaturesAt(level);
        for (const LinearKernel* kernel : registry.kernels()) {
          if (!allowed.Covers(kernel->features()) || !kernel->CanHandle(probe)) continue;
          std::vector<float> y(expected.size());
          kernel->Apply(*params, act, xm, MutableMatrix{QDType::kFP32, y.data(), m, n});
          for (size_t i = 0; i < y.size(); ++i) {
            ASSERT_EQ(y[i], expected[i]) << kernel->name() << " at " << CpuLevelName(level)
                                         << ", output " << i / n << ", " << i % n;
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, GemmW8a8ExactTest,
                         ::testing::Values(std::tuple<int64_t, int64_t, int64_t>{61, 200, 1},
                                           std::tuple<int64_t, int64_t, int64_t>{61, 200, 5},
                                           std::tuple<int64_t, int64_t, int64_t>{61, 200, 70},
                                           std::tuple<int64_t, int64_t, int64_t>{130, 1100, 530}));

}  // namespace
}  // namespace quantpath
