// Bf16Spec: the params dtype decides the stored dtype; fused legs; quantized legs are an error.
#include <gtest/gtest.h>

#include <random>

#include "quantpath/numeric.h"
#include "quantpath/specs.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

using testing::Bf16Tensor;
using testing::F32Tensor;
using testing::OpenTestCheckpoint;
using testing::TestSpec;

AllocationRequest Request(QDType dtype, std::vector<int64_t> legs, int64_t k, bool bias = false) {
  AllocationRequest r;
  r.layer = "model.layers.0.self_attn.qkv_proj";
  r.shape = {0, k};
  for (int64_t rows : legs) r.shape[0] += rows;
  if (legs.size() > 1) r.leg_rows = legs;
  r.params_dtype = dtype;
  r.bias = bias;
  return r;
}

TEST(Bf16SpecTest, StoresTheRequestedDtype) {
  const auto spec = TestSpec(kBf16Key);
  EXPECT_EQ(spec->key().ToId(), "bf16");
  EXPECT_EQ(spec->activation().mode, ActMode::kNone);
  for (QDType dtype : {QDType::kBF16, QDType::kFP16, QDType::kFP32}) {
    const AllocationRequest request = Request(dtype, {4, 2}, 8, true);
    Result<LinearParams> params = spec->Allocate(request);
    ASSERT_TRUE(params.ok());
    EXPECT_EQ(params->tensor(Slot::kWeight).dtype(), dtype);
    EXPECT_EQ(params->tensor(Slot::kBias).dtype(), dtype);
    EXPECT_TRUE(params->tensor(Slot::kWeightScale).empty());
    EXPECT_EQ(*spec->StorageBytes(request), params->WeightBytes());
    EXPECT_EQ(params->WeightBytes(), (6 * 8 + 6) * Info(dtype).bits / 8);
  }
}

TEST(Bf16SpecTest, LoadsFusedLegsAndConverts) {
  std::mt19937 rng(1);
  std::vector<float> q(4 * 8), k(2 * 8);
  std::normal_distribution<float> dist;
  for (float& v : q) v = dist(rng);
  for (float& v : k) v = dist(rng);
  Checkpoint checkpoint = OpenTestCheckpoint(
      {F32Tensor("a.q_proj.weight", {4, 8}, q), Bf16Tensor("a.k_proj.weight", {2, 8}, k),
       F32Tensor("a.q_proj.bias", {4}, {1, 2, 3, 4}), F32Tensor("a.k_proj.bias", {2}, {5, 6})});
  const auto spec = TestSpec(kBf16Key);
  for (QDType dtype : {QDType::kBF16, QDType::kFP32}) {
    Result<LinearParams> params = spec->Allocate(Request(dtype, {4, 2}, 8, true));
    Status status = spec->Load(checkpoint, {"a.q_proj", "a.k_proj"}, &*params);
    ASSERT_TRUE(status.ok()) << status.message();
    ASSERT_TRUE(spec->ProcessAfterLoading(&*params).ok());
    for (int64_t i = 0; i < 48; ++i) {
      const float source = i < 32 ? q[i] : Bf16ToFloat(FloatToBf16(k[i - 32]));
      const float expected = dtype == QDType::kBF16 ? Bf16ToFloat(FloatToBf16(source)) : source;
      ASSERT_EQ(LoadFloat(params->tensor(Slot::kWeight), i), expected) << i;
    }
    for (int64_t r = 0; r < 6; ++r) EXPECT_EQ(LoadFloat(params->tensor(Slot::kBias), r), r + 1.0f);
  }
}

TEST(Bf16SpecTest, QuantizedCheckpointIsAnError) {
  Checkpoint checkpoint =
      OpenTestCheckpoint({testing::Fp8Tensor("lm_head.weight", {2, 2}, {1, 2, 3, 4})});
  const auto spec = TestSpec(kBf16Key);
  Result<LinearParams> params = spec->Allocate(Request(QDType::kBF16, {2}, 2));
  Status status = spec->Load(checkpoint, {"lm_head"}, &*params);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("tensor lm_head.weight is stored as F8_E4M3, but the layer is "
                                  "unquantized"),
            std::string::npos)
      << status.message();
}

TEST(Bf16SpecTest, MissingTensorNamesIt) {
  Checkpoint checkpoint = OpenTestCheckpoint({Bf16Tensor("x.weight", {2, 2}, {1, 2, 3, 4})});
  const auto spec = TestSpec(kBf16Key);
  Result<LinearParams> params = spec->Allocate(Request(QDType::kBF16, {2}, 2, true));
  Status status = spec->Load(checkpoint, {"x"}, &*params);
  EXPECT_EQ(status.code(), ErrorCode::kNotFound);
  EXPECT_NE(status.message().find("model.layers.0.self_attn.qkv_proj: tensor x.bias is not in the "
                                  "checkpoint"),
            std::string::npos)
      << status.message();
}

}  // namespace
}  // namespace quantpath
