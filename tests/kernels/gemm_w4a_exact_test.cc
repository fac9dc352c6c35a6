// The mixed int4 specs (int4_channel with int4 or int8 dynamic per-token activations, ModelSlim
// W4A4 / W4A8): every kernel at every CPU level this machine has against the reference kernel,
// which sums in exact integers (its fp64 oracle is reference_kernels_test.cc's), so the outputs
// must be equal: M across the fast kernel's passes and 64-row tiles, N with rows past the last
// block of 4, K odd and past 64-column steps, X in fp32 and bf16, a NaN in X.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <tuple>

#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "quantpath/specs.h"
#include "tests/kernels/cpu_levels.h"
#include "tests/kernels/random_layer.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

class GemmW4aExactTest : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, int64_t>> {};

TEST_P(GemmW4aExactTest, EveryKernelMatchesTheReferenceExactly) {
  std::mt19937 rng(11);
  const auto [n, k, m] = GetParam();
  const KernelRegistry& registry = KernelRegistry::Global();
  const LinearKernel* reference = nullptr;
  for (const LinearKernel* kernel : registry.kernels()) {
    if (kernel->name() == "GemmW4A4A8Int_Ref") reference = kernel;
  }
  ASSERT_NE(reference, nullptr);
  for (const QDType act_dtype : {QDType::kINT8, QDType::kINT4}) {
    SCOPED_TRACE(std::string(QDTypeName(act_dtype)) + " activations, m " + std::to_string(m));
    ActivationQuant act;
    act.mode = ActMode::kDynamicPerToken;
    act.dtype = act_dtype;
    LoadFacts facts;
    facts.layout = SourceLayout::kModelSlim;
    Result<std::unique_ptr<WeightSpec>> spec = MakeSpec(*ParseSpecId("int4_channel"), act, facts);
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
    const KernelProbe probe{(*spec)->key(), m, n, k, xm.dtype, QDType::kFP32, DeviceCaps{}, act};
    for (const CpuLevel level : testing::SupportedCpuLevels()) {
      const CpuFeatures allowed = testing::FeaturesAt(level);
      for (const LinearKernel* kernel : registry.kernels()) {
        if (!allowed.Covers(kernel->features()) || !kernel->CanHandle(probe)) continue;
        kernel->Prepare(*params);
        std::vector<float> y(expected.size());
        kernel->Apply(*params, act, xm, MutableMatrix{QDType::kFP32, y.data(), m, n});
        for (size_t i = 0; i < y.size(); ++i) {
          ASSERT_EQ(y[i], expected[i]) << kernel->name() << " at " << CpuLevelName(level)
                                       << ", output " << i / n << ", " << i % n;
        }
      }
      // From AVX2 on, the dispatcher picks a fast kernel over the reference.
      Result<const LinearKernel*> chosen = Dispatcher(registry, allowed).Select(probe);
      ASSERT_TRUE(chosen.ok()) << chosen.status().message();
      if (level >= CpuLevel::kAvx2) {
        EXPECT_NE((*chosen)->name(), "GemmW4A4A8Int_Ref");
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, GemmW4aExactTest,
                         ::testing::Values(std::tuple<int64_t, int64_t, int64_t>{61, 201, 1},
                                           std::tuple<int64_t, int64_t, int64_t>{61, 200, 5},
                                           std::tuple<int64_t, int64_t, int64_t>{64, 130, 70},
                                           std::tuple<int64_t, int64_t, int64_t>{130, 1100, 530}));

}  // namespace
}  // namespace quantpath
