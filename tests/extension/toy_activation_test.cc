// Adding an activation kind is one file: this file registers a toy kind (e5m2 inputs per token,
// X rounded to halves) and nothing else in the library names it. The test finds it through
// materialize's ActivationQuantFor, its name, the reference kernels' X and the fp64 reference; the
// kernels that multiply e4m3 values apart do not take it for one of theirs.
#include <gtest/gtest.h>

#include <cmath>

#include "quantpath/activation_kinds.h"
#include "quantpath/materialize.h"
#include "src/kernels/reference/reference_gemm.h"

namespace quantpath {
namespace {

constexpr ActivationKind kHalves{"toy_halves"};

class ToyHalves final : public ActivationKindRow {
 public:
  std::string_view name() const override { return "toy_halves"; }
  int priority() const override { return 20; }
  bool Claims(const TensorQuant& in) const override {
    return in.dtype == QDType::kFP8E5M2 && in.dynamic == Dynamic::kDynamic &&
           in.granularity == Granularity::kPerToken;
  }
  ActivationQuant Quant(const TensorQuant& in) const override {
    ActivationQuant act = ActivationFields(in, ActMode::kDynamicPerToken);
    act.kind = kHalves;
    return act;
  }
  std::string Text(const ActivationQuant&) const override { return "halves"; }
  void RoundFloats(std::vector<float>* x, int64_t, int64_t, const ActivationQuant&,
                   const LinearParams&) const override {
    for (float& v : *x) v = std::nearbyint(v * 2) / 2;
  }
  std::vector<double> RoundReference(std::span<const double> x, int64_t, int64_t,
                                     const ActivationQuant&, std::optional<double>,
                                     std::optional<double>) const override {
    std::vector<double> out;
    for (double v : x) out.push_back(std::nearbyint(v * 2) / 2);
    return out;
  }
};

const ActivationKindRegistrar kRegisterHalves(std::make_unique<ToyHalves>());

TEST(ToyActivationTest, ReachesEveryGenericPath) {
  QuantScheme scheme;
  scheme.weight.dtype = QDType::kFP8E4M3;
  scheme.input = TensorQuant();
  scheme.input->dtype = QDType::kFP8E5M2;
  scheme.input->granularity = Granularity::kPerToken;
  scheme.input->dynamic = Dynamic::kDynamic;
  Result<ActivationQuant> act = ActivationQuantFor(scheme);
  ASSERT_TRUE(act.ok()) << act.status().message();
  EXPECT_EQ(act->kind, kHalves);
  EXPECT_EQ(act->ToString(), "halves");

  const std::vector<float> x = {0.2f, 0.8f, -1.3f, 2.74f};
  LinearParams params;
  const ConstMatrix matrix{QDType::kFP32, x.data(), 2, 2};
  EXPECT_EQ(reference::PrepareActivations(params, *act, matrix),
            (std::vector<float>{0, 1, -1.5f, 2.5f}));
  EXPECT_FALSE(reference::PrepareFp8Codes(params, *act, matrix).has_value());
  EXPECT_EQ(QuantizeActivationsReference(std::vector<double>{0.2, 0.8, -1.3, 2.74}, 2, 2, *act,
                                         std::nullopt),
            (std::vector<double>{0, 1, -1.5, 2.5}));
}

}  // namespace
}  // namespace quantpath
