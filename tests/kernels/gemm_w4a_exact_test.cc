// The mixed int4 specs (int4 weights with int4 or int8 dynamic per-token activations: ModelSlim
// W4A4 / W4A8 on int4_channel, and int4_channel_zp / int4_group_<g>[_zp] from the weight-only
// layouts with int8 activations): every kernel at every CPU level this machine has against the
// reference kernel, which sums each group in exact integers. With one group the outputs must be
// equal; with several, the reference sums the groups in double and a kernel in fp32, within 1e-5
// of the largest output. The AVX2 kernel gives a row of a small batch the same bits alone
// (batch_rows.h). M across the fast kernels' passes and 64-row tiles, N with rows past the
// last block of 4, K odd and past 64-column steps, groups of 1, 2 and 4 steps and cut short, X in
// fp32 and bf16, a NaN in X.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>

#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "quantpath/specs.h"
#include "src/specs/int_family.h"
#include "tests/kernels/batch_rows.h"
#include "tests/kernels/cpu_levels.h"
#include "tests/kernels/random_layer.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

struct Weights {
  std::string spec_id;
  SourceLayout layout;
  std::vector<QDType> activations;
};

void PrintTo(const Weights& w, std::ostream* os) { *os << w.spec_id; }

class GemmW4aExactTest
    : public ::testing::TestWithParam<std::tuple<Weights, std::tuple<int64_t, int64_t, int64_t>>> {
};

TEST_P(GemmW4aExactTest, EveryKernelMatchesTheReferenceExactly) {
  std::mt19937 rng(11);
  const Weights& weights = std::get<0>(GetParam());
  const auto [n, k, m] = std::get<1>(GetParam());
  const KernelRegistry& registry = KernelRegistry::Global();
  const LinearKernel* reference = nullptr;
  for (const LinearKernel* kernel : registry.kernels()) {
    if (kernel->name() == "GemmW4A4A8Int_Ref") reference = kernel;
  }
  ASSERT_NE(reference, nullptr);
  for (const QDType act_dtype : weights.activations) {
    SCOPED_TRACE(std::string(QDTypeName(act_dtype)) + " activations, m " + std::to_string(m));
    ActivationQuant act;
    act.mode = ActMode::kDynamicPerToken;
    act.dtype = act_dtype;
    LoadFacts facts;
    facts.layout = weights.layout;
    Result<std::unique_ptr<WeightSpec>> spec = MakeSpec(*ParseSpecId(weights.spec_id), act, facts);
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    Result<LinearParams> params = testing::RandomLayer(**spec, n, k, &rng);
    ASSERT_TRUE(params.ok()) << params.status().message();

    std::vector<float> x = testing::RandomBf16Values(&rng, m * k);
    if (m > 1) x[k + 17] = std::numeric_limits<float>::quiet_NaN();  // becomes code 0
    std::vector<uint16_t> x16(x.size());
    for (size_t i = 0; i < x.size(); ++i) x16[i] = FloatToBf16(x[i]);
    const bool bf16_in = m % 2 == 0;
    const ConstMatrix xm = bf16_in ? ConstMatrix{QDType::kBF16, x16.data(), m, k}
                                   : ConstMatrix{QDType::kFP32, x.data(), m, k};
    std::vector<float> expected(static_cast<size_t>(m * n));
    reference->Apply(*params, act, xm, MutableMatrix{QDType::kFP32, expected.data(), m, n});
    const SpecKey& key = (*spec)->key();
    const bool one_group = key.family != kIntGroupFamily || key.group >= k;
    double largest = 0;
    for (const float v : expected) largest = std::max(largest, double{std::fabs(v)});
    const KernelProbe probe{(*spec)->key(), m, n, k, xm.dtype, QDType::kFP32, DeviceCaps{}, act};
    for (const CpuLevel level : testing::SupportedCpuLevels()) {
      const CpuFeatures allowed = testing::FeaturesAt(level);
      for (const LinearKernel* kernel : registry.kernels()) {
        if (!allowed.Covers(kernel->features()) || !kernel->CanHandle(probe)) continue;
        kernel->Prepare(*params);
        std::vector<float> y(expected.size());
        kernel->Apply(*params, act, xm, MutableMatrix{QDType::kFP32, y.data(), m, n});
        for (size_t i = 0; i < y.size(); ++i) {
          if (one_group) {
            ASSERT_EQ(y[i], expected[i]) << kernel->name() << " at " << CpuLevelName(level)
                                         << ", output " << i / n << ", " << i % n;
          } else {
            ASSERT_LE(std::fabs(double{y[i]} - expected[i]), 1e-5 * largest)
                << kernel->name() << " at " << CpuLevelName(level) << ", output " << i / n << ", "
                << i % n;
          }
        }
        if (testing::PromisesBatchBits(*kernel, act, m)) {
          testing::ExpectRowsAloneAsInBatch(*kernel, *params, act, xm);
        }
      }
      // From AVX2 on, the dispatcher picks a fast kernel over the reference (groups of whole
      // 64-column steps).
      Result<const LinearKernel*> chosen = Dispatcher(registry, allowed).Select(probe);
      ASSERT_TRUE(chosen.ok()) << chosen.status().message();
      if (level >= CpuLevel::kAvx2 && (key.family != kIntGroupFamily || key.group % 64 == 0)) {
        EXPECT_NE((*chosen)->name(), "GemmW4A4A8Int_Ref");
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GemmW4aExactTest,
    ::testing::Combine(
        ::testing::Values(
            Weights{"int4_channel", SourceLayout::kModelSlim, {QDType::kINT8, QDType::kINT4}},
            Weights{"int4_channel_zp", SourceLayout::kCtPackQuantized, {QDType::kINT8}},
            Weights{"int4_group_64", SourceLayout::kGptqV1, {QDType::kINT8}},
            Weights{"int4_group_128_zp", SourceLayout::kCtPackQuantized, {QDType::kINT8}},
            Weights{"int4_group_256", SourceLayout::kGptqV1, {QDType::kINT8}},
            Weights{"int4_group_32", SourceLayout::kAwqGemm, {QDType::kINT8}}),
        ::testing::Values(std::tuple<int64_t, int64_t, int64_t>{61, 201, 1},
                          std::tuple<int64_t, int64_t, int64_t>{61, 200, 5},
                          std::tuple<int64_t, int64_t, int64_t>{64, 130, 70},
                          std::tuple<int64_t, int64_t, int64_t>{130, 1100, 530})));

}  // namespace
}  // namespace quantpath
