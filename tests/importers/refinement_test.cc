// An importer's refinement from the checkpoint (importers.h): SmallTensors hands out small tensors
// only and opens no checkpoint where there is none, and bitsandbytes' block size comes from the
// quant_state bitsandbytes wrote (tests/data/producers/bnb_llama_nf4_b128: blocks of 128, which
// config.json does not say).
#include <gtest/gtest.h>

#include <filesystem>

#include "quantpath/importers.h"

namespace quantpath {
namespace {

const std::string kB128 = std::string(QUANTPATH_TEST_DATA) + "/producers/bnb_llama_nf4_b128";

TEST(SmallTensors, ReadsSmallTensorsOnly) {
  const SmallTensors tensors(kB128, 1024);
  Result<std::vector<std::string>> names = tensors.Names();
  ASSERT_TRUE(names.ok()) << names.status().message();
  EXPECT_FALSE(names->empty());
  const std::string state = "model.layers.0.self_attn.k_proj.weight.quant_state.bitsandbytes__nf4";
  Result<TensorView> small = tensors.Read(state);
  ASSERT_TRUE(small.ok()) << small.status().message();
  EXPECT_EQ(small->bytes.size(), 80u);
  const std::string weight = "model.layers.0.mlp.down_proj.weight";
  Result<TensorView> bulk = tensors.Read(weight);
  ASSERT_FALSE(bulk.ok());
  EXPECT_EQ(bulk.status().code(), ErrorCode::kLimit);
  EXPECT_NE(bulk.status().message().find(weight), std::string::npos) << bulk.status().message();
}

TEST(SmallTensors, AFolderWithoutWeightsHasNoTensors) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "no_weights";
  std::filesystem::create_directories(dir);
  const SmallTensors tensors(dir.string(), 1024);
  Result<std::vector<std::string>> names = tensors.Names();
  ASSERT_TRUE(names.ok()) << names.status().message();
  EXPECT_TRUE(names->empty());
}

TEST(RefinePlan, BitsAndBytesTakesTheBlockSizeOfTheQuantState) {
  Result<ConfigSources> sources = ConfigSources::Load(kB128);
  ASSERT_TRUE(sources.ok()) << sources.status().message();
  Result<QuantPlan> plan = ImportPlan(*sources, *ParseDialect("native"));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_TRUE(plan->default_action.scheme.has_value());
  EXPECT_EQ(plan->default_action.scheme->weight.group_size, 64);  // config.json alone
  ASSERT_TRUE(RefinePlan(SmallTensors(kB128, 1 << 20), &*plan).ok());
  EXPECT_EQ(plan->default_action.scheme->weight.group_size, 128);
  EXPECT_NE(plan->notes.back().find("block size 128 read from "), std::string::npos)
      << plan->notes.back();
}

}  // namespace
}  // namespace quantpath
