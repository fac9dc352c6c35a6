// The double-precision reference: e4m3 rounding from the OCP definition, activation quantization,
// and dequantization straight from checkpoint tensors.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "quantpath/numeric.h"
#include "quantpath/specs.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

using testing::F32Tensor;
using testing::Fp8Tensor;

TEST(RoundToE4M3Test, EveryFiniteValueIsAFixedPoint) {
  for (int bits = 0; bits < 256; ++bits) {
    if ((bits & 0x7F) == 0x7F) continue;
    const double v = Fp8E4M3ToFloat(static_cast<uint8_t>(bits));
    EXPECT_EQ(RoundToE4M3(v), v) << bits;
  }
}

TEST(RoundToE4M3Test, TiesToEvenAndSaturates) {
  EXPECT_EQ(RoundToE4M3(std::ldexp(1.0, -10)), 0.0);  // between 0 and 2^-9: even is 0
  EXPECT_EQ(RoundToE4M3(3 * std::ldexp(1.0, -10)), std::ldexp(1.0, -8));  // 1×2^-9 | 2×2^-9
  EXPECT_EQ(RoundToE4M3(1.0625), 1.0);   // 1 + 1/16: between 1 and 1.125, 1 is even
  EXPECT_EQ(RoundToE4M3(1.1875), 1.25);  // between 1.125 and 1.25, 1.25 is even
  EXPECT_EQ(RoundToE4M3(-1.1875), -1.25);
  EXPECT_EQ(RoundToE4M3(440.0), 448.0);
  EXPECT_EQ(RoundToE4M3(464.0), 448.0);  // saturating, never NaN
  EXPECT_EQ(RoundToE4M3(-1e9), -448.0);
  EXPECT_TRUE(std::isnan(RoundToE4M3(NAN)));
}

TEST(RoundToE4M3Test, AgreesWithTheFloatEncoderOnFloats) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> exponent(-12.0f, 9.5f);
  std::bernoulli_distribution sign;
  for (int i = 0; i < 20000; ++i) {
    const float v = (sign(rng) ? -1.0f : 1.0f) * std::exp2(exponent(rng));
    ASSERT_EQ(RoundToE4M3(v), Fp8E4M3ToFloat(FloatToFp8E4M3(v))) << v;
  }
}

TEST(QuantizeActivationsReferenceTest, Modes) {
  // Row 0 has absmax 448 (scale 1); row 1 has absmax 4.48 (scale fp32(4.48) / 448 in fp32).
  const std::vector<double> x = {448, 1.0625, -3, 0.5, 4.48, 0.0106, -1, 0};
  auto q = [&](ActivationQuant act, std::optional<double> s = std::nullopt) {
    return QuantizeActivationsReference(x, 2, 4, act, s);
  };
  EXPECT_EQ(q({}), x);
  const std::vector<double> token = q({ActMode::kDynamicPerToken, 0});
  EXPECT_EQ(token[0], 448);
  EXPECT_EQ(token[1], 1.0);  // 1.0625 ties to 1
  const double s1 = 4.48f / 448.0f;
  EXPECT_EQ(token[4], 448 * s1);
  EXPECT_EQ(token[5], RoundToE4M3(0.0106 / s1) * s1);
  const std::vector<double> tensor = q({ActMode::kDynamicPerTensor, 0});
  EXPECT_EQ(tensor[5], RoundToE4M3(0.0106));  // the scale of all of X is 1
  const std::vector<double> group = q({ActMode::kDynamicGroup, 2});
  // Row 1, columns 2..3: absmax 1, scale fp32(1 / 448).
  EXPECT_EQ(group[6], -448.0 * (1.0f / 448.0f));
  EXPECT_EQ(group[7], 0.0);
  const std::vector<double> fixed = q({ActMode::kStaticPerTensor, 0}, 0.5);
  EXPECT_EQ(fixed[0], 224.0);  // 448 / 0.5 saturates at 448, times 0.5
  // All-zero rows get a finite scale.
  const std::vector<double> zeros(4, 0.0);
  EXPECT_EQ(QuantizeActivationsReference(zeros, 1, 4, {ActMode::kDynamicPerToken, 0}, {}), zeros);
}

TEST(DequantizeReferenceTest, BlockLegsUseTheirOwnGrids) {
  // Leg a: [3, 4] with 2 × 2 blocks → grid [2, 2]; leg b: [1, 4] → grid [1, 2].
  const std::vector<uint8_t> ones(12, 0x38);  // e4m3 1.0
  Checkpoint checkpoint = testing::OpenTestCheckpoint({
      Fp8Tensor("a.weight", {3, 4}, ones),
      F32Tensor("a.weight_scale_inv", {2, 2}, {1, 2, 3, 4}),
      Fp8Tensor("b.weight", {1, 4}, std::vector<uint8_t>(4, 0x40)),  // 2.0
      F32Tensor("b.weight_scale_inv", {1, 2}, {5, 6}),
  });
  QuantScheme scheme;
  scheme.weight.dtype = QDType::kFP8E4M3;
  scheme.weight.load.layout = SourceLayout::kFp8ScaleInv;
  scheme.weight.granularity = Granularity::kBlock;
  scheme.weight.block_shape = std::array<int64_t, 2>{2, 2};
  Result<ReferenceLayer> layer = DequantizeReference(checkpoint, scheme, "l", {"a", "b"}, false);
  ASSERT_TRUE(layer.ok()) << layer.status().message();
  EXPECT_EQ(layer->rows, 4);
  EXPECT_EQ(layer->cols, 4);
  const std::vector<double> expected = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 10, 10, 12, 12};
  EXPECT_EQ(layer->weight, expected);
}

TEST(DequantizeReferenceTest, PerTensorWithStaticInputs) {
  Checkpoint checkpoint = testing::OpenTestCheckpoint({
      Fp8Tensor("a.weight", {1, 2}, {0x38, 0xB8}),  // 1, -1
      F32Tensor("a.weight_scale", {}, {0.5}),
      F32Tensor("a.input_scale", {}, {0.25}),
      Fp8Tensor("b.weight", {1, 2}, {0x38, 0x38}),
      F32Tensor("b.weight_scale", {1}, {2}),
      F32Tensor("b.input_scale", {1}, {0.75}),
      F32Tensor("a.bias", {1}, {3}),
      F32Tensor("b.bias", {1}, {4}),
  });
  QuantScheme scheme;
  scheme.weight.dtype = QDType::kFP8E4M3;
  scheme.weight.load.layout = SourceLayout::kFp8Scale;
  scheme.input = TensorQuant();
  scheme.input->dtype = QDType::kFP8E4M3;
  scheme.input->dynamic = Dynamic::kStatic;
  Result<ReferenceLayer> layer = DequantizeReference(checkpoint, scheme, "l", {"a", "b"}, true);
  ASSERT_TRUE(layer.ok()) << layer.status().message();
  EXPECT_EQ(layer->weight, (std::vector<double>{0.5, -0.5, 2, 2}));
  EXPECT_EQ(layer->input_scale, 0.75);
  EXPECT_EQ(layer->bias, (std::vector<double>{3, 4}));
}

TEST(DequantizeReferenceTest, MismatchedScalesAreErrors) {
  Checkpoint checkpoint = testing::OpenTestCheckpoint({
      Fp8Tensor("a.weight", {2, 2}, {0x38, 0x38, 0x38, 0x38}),
      F32Tensor("a.weight_scale", {3}, {1, 1, 1}),
  });
  QuantScheme scheme;
  scheme.weight.dtype = QDType::kFP8E4M3;
  scheme.weight.load.layout = SourceLayout::kFp8Scale;
  scheme.weight.granularity = Granularity::kPerChannel;
  Result<ReferenceLayer> layer = DequantizeReference(checkpoint, scheme, "lay", {"a"}, false);
  ASSERT_FALSE(layer.ok());
  EXPECT_NE(layer.status().message().find("lay: tensor a.weight_scale has 3 values"),
            std::string::npos)
      << layer.status().message();
}

TEST(DequantizeReferenceTest, TheSourceLayoutChoosesTheEntry) {
  Checkpoint checkpoint = testing::OpenTestCheckpoint({
      Fp8Tensor("a.weight", {1, 2}, {0x38, 0x38}),
      F32Tensor("a.weight_scale", {}, {3}),
      F32Tensor("a.weight_scale_inv", {}, {5}),
  });
  QuantScheme scheme;
  scheme.weight.dtype = QDType::kFP8E4M3;
  // Both scale names exist: the layout, not the names present, says which one multiplies.
  scheme.weight.load.layout = SourceLayout::kFp8ScaleInv;
  EXPECT_EQ(DequantizeReference(checkpoint, scheme, "l", {"a"}, false)->weight,
            (std::vector<double>{5, 5}));
  scheme.weight.load.layout = SourceLayout::kModelOptFp8;
  EXPECT_EQ(DequantizeReference(checkpoint, scheme, "l", {"a"}, false)->weight,
            (std::vector<double>{3, 3}));
  // A layout without an entry is an error naming it.
  scheme.weight.load.layout = SourceLayout::kAwqGemv;
  Result<ReferenceLayer> none = DequantizeReference(checkpoint, scheme, "l", {"a"}, false);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(none.status().message().find("source layout awq-gemv"), std::string::npos);
}

}  // namespace
}  // namespace quantpath
