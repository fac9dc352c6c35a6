// deepseek_v4_fp8 as vLLM 0.34 reads it: MXFP4 experts with MXFP8 activations, Fp8Config's reading
// of the rest, --quantization over an fp8 description, and the model settings quantpath refuses
// by name because no recording covers them. The decisions themselves are held to the recording
// (tests/data/oracle/releases/vllm-0.34.0/cases/vllm-deepseek_v4_fp8.json and platforms/).
#include <gtest/gtest.h>

#include <string>

#include "quantpath/importers.h"
#include "quantpath/planner.h"
#include "tests/importers/gptq_family_test_util.h"

namespace quantpath {
namespace {

using family_test::D;
using family_test::Embedded;
using family_test::Files;
using family_test::Site;

constexpr std::string_view kDescription =
    R"({"quant_method": "deepseek_v4_fp8", "activation_scheme": "dynamic", "scale_fmt": "ue8m0",
        "weight_block_size": [128, 128]})";

TEST(DeepseekV4Fp8, ExpertsAreMxfp4WithMxfp8Activations) {
  Result<QuantPlan> plan = ImportPlan(Embedded(kDescription), D("vllm@0.34"));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->importer, "deepseek_v4_fp8");
  const Decision experts = DecideSite(*plan, Site("model.layers.1.mlp.experts", SiteKind::kMoe));
  ASSERT_EQ(experts.kind, DecisionKind::kQuantized) << experts.detail;
  EXPECT_EQ(experts.detail, "Mxfp4MoEMethod");
  ASSERT_TRUE(experts.scheme && experts.scheme->input);
  EXPECT_EQ(experts.scheme->weight.dtype, QDType::kMXFP4);
  EXPECT_EQ(experts.scheme->weight.group_size, 32);
  EXPECT_EQ(experts.scheme->input->dtype, QDType::kMXFP8);
  EXPECT_EQ(experts.scheme->input->dynamic, Dynamic::kDynamic);
  const Decision linear = DecideSite(*plan, Site("model.layers.1.self_attn.o_proj"));
  ASSERT_EQ(linear.kind, DecisionKind::kQuantized) << linear.detail;
  EXPECT_EQ(linear.scheme->weight.dtype, QDType::kFP8E4M3);
  EXPECT_EQ(linear.scheme->weight.block_shape, (std::array<int64_t, 2>{128, 128}));
}

TEST(DeepseekV4Fp8, TheQuantizationOptionReadsAnFp8Description) {
  Result<QuantPlan> plan =
      ImportPlan(Embedded(R"({"quant_method": "fp8", "activation_scheme": "dynamic",
                                 "weight_block_size": [128, 128]})"),
                 D("vllm@0.34"), std::string("deepseek_v4_fp8"));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->importer, "deepseek_v4_fp8");
  EXPECT_EQ(DecideSite(*plan, Site("model.layers.0.mlp.experts", SiteKind::kMoe)).detail,
            "Mxfp4MoEMethod");
}

TEST(DeepseekV4Fp8, UnrecordedSettingsAndDialectsAreRefusedByName) {
  Result<QuantPlan> fp8_experts = ImportPlan(
      Files({{"config.json", std::string(R"({"expert_dtype": "fp8", "quantization_config": )") +
                                 std::string(kDescription) + "}"}}),
      D("vllm@0.34"));
  ASSERT_FALSE(fp8_experts.ok());
  EXPECT_NE(fp8_experts.status().message().find("config.json#/expert_dtype"), std::string::npos)
      << fp8_experts.status().message();
  Result<QuantPlan> older = ImportPlan(Embedded(kDescription), D("vllm@0.33"));
  ASSERT_FALSE(older.ok());
  EXPECT_NE(older.status().message().find("as vLLM 0.34 reads it"), std::string::npos)
      << older.status().message();
}

}  // namespace
}  // namespace quantpath
