// w4afp8 as vLLM 0.34 reads it: the experts' scheme and the group it asserts, Fp8Config's reading
// of the rest (block 128 by default, activations always dynamic), and what the dialects that do
// not register the name say. The decisions themselves are held to the recording
// (tests/data/oracle/releases/vllm-0.34.0/cases/vllm-w4afp8.json).
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "quantpath/importers.h"
#include "quantpath/planner.h"
#include "tests/importers/gptq_family_test_util.h"

namespace quantpath {
namespace {

using family_test::Embedded;

Result<QuantPlan> Build(std::string_view config, std::string_view dialect) {
  const Importer* importer = FindImporter("w4afp8");
  EXPECT_NE(importer, nullptr);
  return importer->BuildPlan(Embedded(config), *ParseDialect(dialect));
}

LayerSite Site(std::string path, SiteKind kind) {
  LayerSite site;
  site.path = std::move(path);
  site.kind = kind;
  return site;
}

TEST(W4afp8, DetectedByQuantMethod) {
  const Importer* importer = FindImporter("w4afp8");
  ASSERT_NE(importer, nullptr);
  EXPECT_TRUE(importer->Detect(Embedded(R"({"quant_method": "W4AFP8"})")));
  EXPECT_FALSE(importer->Detect(Embedded(R"({"quant_method": "fp8"})")));
}

TEST(W4afp8, ExpertsAreInt4GroupsWithFp8TokenActivations) {
  Result<QuantPlan> plan =
      Build(R"({"quant_method": "w4afp8", "activation_scheme": "static"})", "vllm@0.34");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->quant_method, "w4afp8");
  const Decision experts = DecideSite(*plan, Site("model.layers.1.mlp.experts", SiteKind::kMoe));
  ASSERT_EQ(experts.kind, DecisionKind::kQuantized) << experts.detail;
  EXPECT_EQ(experts.detail, "CompressedTensorsW4A8Fp8MoEMethod");
  ASSERT_TRUE(experts.scheme.has_value());
  EXPECT_EQ(experts.scheme->weight.dtype, QDType::kINT4);
  EXPECT_EQ(experts.scheme->weight.group_size, 128);
  EXPECT_EQ(experts.scheme->weight.load.layout, SourceLayout::kW4afp8Experts);
  ASSERT_TRUE(experts.scheme->input.has_value());
  EXPECT_EQ(experts.scheme->input->dtype, QDType::kFP8E4M3);
  EXPECT_EQ(experts.scheme->input->granularity, Granularity::kPerToken);
  EXPECT_EQ(experts.scheme->input->dynamic, Dynamic::kDynamic);
  // The rest is Fp8Config with 128 x 128 blocks, dynamic whatever activation_scheme says.
  const Decision linear =
      DecideSite(*plan, Site("model.layers.1.self_attn.o_proj", SiteKind::kLinear));
  ASSERT_EQ(linear.kind, DecisionKind::kQuantized) << linear.detail;
  EXPECT_EQ(linear.scheme->weight.block_shape, (std::array<int64_t, 2>{128, 128}));
  EXPECT_EQ(linear.scheme->input->dynamic, Dynamic::kDynamic);
  bool noted = false;
  for (const std::string& note : plan->notes)
    noted = noted || note.find("always dynamic") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(W4afp8, AnotherGroupFailsTheExpertsOnly) {
  Result<QuantPlan> plan = Build(R"({"quant_method": "w4afp8", "group_size": 64,
                                     "modules_to_not_convert": ["model.layers.0.mlp.experts"]})",
                                 "vllm@0.34");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const Decision one = DecideSite(*plan, Site("model.layers.1.mlp.experts", SiteKind::kMoe));
  EXPECT_EQ(one.kind, DecisionKind::kError);
  EXPECT_EQ(one.detail, "AssertionError: Only group size 128 supported for W4A8 MoE");
  // An experts layer the list skips never reaches the W4A8 method.
  const Decision skipped = DecideSite(*plan, Site("model.layers.0.mlp.experts", SiteKind::kMoe));
  EXPECT_EQ(skipped.kind, DecisionKind::kUnquantized) << skipped.detail;
  EXPECT_FALSE(Build(R"({"quant_method": "w4afp8", "group_size": 0})", "vllm@0.34").ok());
}

TEST(W4afp8, OnlyVllm034RegistersIt) {
  Result<QuantPlan> v33 = Build(R"({"quant_method": "w4afp8"})", "vllm@0.33");
  ASSERT_FALSE(v33.ok());
  EXPECT_NE(v33.status().message().find("Unknown quantization method: w4afp8. Must be one of "
                                        "['awq', 'auto_awq', 'fp8', 'fbgemm_fp8', 'fp_quant'"),
            std::string::npos)
      << v33.status().message();
  for (const char* dialect : {"native", "sglang@0.5.23", "vllm@helpers"}) {
    Result<QuantPlan> plan = Build(R"({"quant_method": "w4afp8"})", dialect);
    ASSERT_FALSE(plan.ok()) << dialect;
    EXPECT_NE(plan.status().message().find("config.json#/quantization_config"), std::string::npos)
        << plan.status().message();
  }
  // `vllm` is the newest release, which reads it.
  EXPECT_TRUE(Build(R"({"quant_method": "w4afp8"})", "vllm").ok());
}

}  // namespace
}  // namespace quantpath
