// deepseek_v4_fp8 as vLLM 0.34 reads it: MXFP4 experts with MXFP8 activations, Fp8Config's reading
// of the rest, --quantization over an fp8 description, fp8 experts (expert_dtype), NVFP4 experts
// (moe_quant_algo) and the engine's error for another expert_dtype. The decisions themselves are
// held to the recording
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

// The description inside config.json with model fields beside it.
ConfigSources WithModel(std::string_view model_fields, std::string_view description) {
  return Files({{"config.json", "{" + std::string(model_fields) + R"(, "quantization_config": )" +
                                    std::string(description) + "}"}});
}

TEST(DeepseekV4Fp8, Fp8ExpertsAreFp8ConfigsAndAnotherDtypeIsTheEnginesError) {
  Result<QuantPlan> fp8 =
      ImportPlan(WithModel(R"("expert_dtype": "fp8")", kDescription), D("vllm@0.34"));
  ASSERT_TRUE(fp8.ok()) << fp8.status().message();
  const Decision experts = DecideSite(*fp8, Site("model.layers.1.mlp.experts", SiteKind::kMoe));
  ASSERT_EQ(experts.kind, DecisionKind::kQuantized) << experts.detail;
  EXPECT_NE(experts.detail.find("Fp8MoEMethod"), std::string::npos) << experts.detail;
  EXPECT_EQ(experts.scheme->weight.dtype, QDType::kFP8E4M3);

  // Without ue8m0 scales (fp8 experts) 32 x 32 blocks stay Fp8Config's linear method.
  Result<QuantPlan> small_blocks =
      ImportPlan(WithModel(R"("expert_dtype": "fp8")",
                           R"({"quant_method": "deepseek_v4_fp8", "activation_scheme": "dynamic",
                    "weight_block_size": [32, 32]})"),
                 D("vllm@0.34"));
  ASSERT_TRUE(small_blocks.ok()) << small_blocks.status().message();
  EXPECT_TRUE(DecideSite(*small_blocks, Site("model.layers.0.self_attn.o_proj"))
                  .detail.starts_with("Fp8LinearMethod"));

  Result<QuantPlan> other =
      ImportPlan(WithModel(R"("expert_dtype": "int4")", kDescription), D("vllm@0.34"));
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().message(),
            "config.json#/expert_dtype: ValueError: Unsupported DeepSeek V4 expert_dtype='int4'; "
            "expected one of ('fp4', 'fp8').");
}

TEST(DeepseekV4Fp8, Nvfp4ExpertsExceptThoseTheModelOptIgnoreKeeps) {
  const std::string description =
      R"({"quant_method": "deepseek_v4_fp8", "activation_scheme": "dynamic",
          "weight_block_size": [128, 128], "moe_quant_algo": "nvfp4", "ignore": ["layers.1.ffn.experts", "mtp.*"]})";
  Result<QuantPlan> plan =
      ImportPlan(WithModel(R"("num_hidden_layers": 2)", description), D("vllm@0.34"));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const auto detail = [&](const char* path) {
    return DecideSite(*plan, Site(path, SiteKind::kMoe)).detail;
  };
  EXPECT_EQ(detail("model.layers.0.ffn.experts"), "ModelOptNvFp4FusedMoE");
  EXPECT_EQ(detail("model.layers.1.ffn.experts"), "Mxfp4MoEMethod");
  EXPECT_EQ(detail("model.layers.2.ffn.experts"), "Mxfp4MoEMethod");         // mtp.0
  EXPECT_EQ(detail("model.layers.1.mlp.experts"), "ModelOptNvFp4FusedMoE");  // not layers.N.ffn
  const Decision nvfp4 = DecideSite(*plan, Site("model.layers.0.ffn.experts", SiteKind::kMoe));
  EXPECT_EQ(nvfp4.scheme->weight.dtype, QDType::kNVFP4);

  Result<QuantPlan> no_count = ImportPlan(Embedded(description), D("vllm@0.34"));
  ASSERT_FALSE(no_count.ok());
  EXPECT_NE(no_count.status().message().find("num_hidden_layers"), std::string::npos)
      << no_count.status().message();
}

TEST(DeepseekV4Fp8, OlderDialectsAreRefusedByName) {
  Result<QuantPlan> older = ImportPlan(Embedded(kDescription), D("vllm@0.33"));
  ASSERT_FALSE(older.ok());
  EXPECT_NE(older.status().message().find("as vLLM 0.34 reads it"), std::string::npos)
      << older.status().message();
}

}  // namespace
}  // namespace quantpath
