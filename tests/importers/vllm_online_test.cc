// vLLM's online shorthands as --quantization names: what each quantizes at load, and the dialects
// that do not read them. The decisions are held to the recordings
// (tests/data/oracle/releases/vllm-*/cases/vllm-online.json).
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "quantpath/importers.h"
#include "quantpath/planner.h"
#include "tests/importers/gptq_family_test_util.h"

namespace quantpath {
namespace {

Result<std::optional<QuantPlan>> Online(std::string_view name, std::string_view dialect) {
  const Importer* importer = FindImporter(name);
  EXPECT_NE(importer, nullptr) << name;
  return importer->PlanWithoutDescription(ConfigSources::FromMemory({}), *ParseDialect(dialect));
}

LayerSite Site(std::string path, SiteKind kind) {
  LayerSite site;
  site.path = std::move(path);
  site.kind = kind;
  return site;
}

TEST(VllmOnline, EachShorthandQuantizesItsKindsAtLoad) {
  Result<std::optional<QuantPlan>> block = Online("fp8_per_block", "vllm");
  ASSERT_TRUE(block.ok() && block->has_value()) << block.status().message();
  const Decision linear =
      DecideSite(**block, Site("model.layers.0.mlp.down_proj", SiteKind::kLinear));
  ASSERT_EQ(linear.kind, DecisionKind::kQuantized);
  EXPECT_TRUE(linear.scheme->online);
  EXPECT_EQ(linear.scheme->weight.block_shape, (std::array<int64_t, 2>{128, 128}));
  EXPECT_EQ(linear.detail, "Fp8PerBlockOnlineLinearMethod");

  // Experts only: linear layers keep their weights.
  Result<std::optional<QuantPlan>> int8 = Online("int8_per_channel_weight_only", "vllm@0.33");
  ASSERT_TRUE(int8.ok() && int8->has_value());
  EXPECT_EQ(DecideSite(**int8, Site("model.layers.0.mlp.down_proj", SiteKind::kLinear)).kind,
            DecisionKind::kUnquantized);
  const Decision experts = DecideSite(**int8, Site("model.layers.1.mlp.experts", SiteKind::kMoe));
  ASSERT_EQ(experts.kind, DecisionKind::kQuantized);
  EXPECT_EQ(experts.scheme->weight.dtype, QDType::kINT8);
  EXPECT_FALSE(experts.scheme->input.has_value());

  // On the recordings' device (capability 9.0) nvfp4_per_token's experts method refuses.
  Result<std::optional<QuantPlan>> nvfp4 = Online("nvfp4_per_token", "vllm@0.34");
  ASSERT_TRUE(nvfp4.ok() && nvfp4->has_value());
  const Decision refused = DecideSite(**nvfp4, Site("model.layers.1.mlp.experts", SiteKind::kMoe));
  EXPECT_EQ(refused.kind, DecisionKind::kError);
  EXPECT_NE(refused.detail.find("requires a Blackwell (SM100) GPU"), std::string::npos);
}

// 0.34's two shorthands: MXFP4 linear layers behind a 32-wide block Hadamard (experts kept), and
// LUT-B experts (linear layers kept). No spec stores either yet, which the plan says per row.
TEST(VllmOnline, HadamardMxfp4AndLutBAreTheirOwnSchemes) {
  Result<std::optional<QuantPlan>> had = Online("mxfp4_hadamard32", "vllm@0.34");
  ASSERT_TRUE(had.ok() && had->has_value()) << had.status().message();
  const Decision linear =
      DecideSite(**had, Site("model.layers.0.mlp.down_proj", SiteKind::kLinear));
  ASSERT_EQ(linear.kind, DecisionKind::kQuantized);
  EXPECT_EQ(linear.detail, "InputHadamardLinearMethod");
  EXPECT_EQ(linear.scheme->input_hadamard, 32);
  EXPECT_EQ(linear.scheme->weight.dtype, QDType::kMXFP4);
  ASSERT_TRUE(linear.scheme->input.has_value());
  EXPECT_EQ(linear.scheme->input->dtype, QDType::kMXFP4);
  EXPECT_EQ(linear.scheme->CanonicalName(), "w4a4-mxfp4-had32-online");
  EXPECT_EQ(DecideSite(**had, Site("model.layers.1.mlp.experts", SiteKind::kMoe)).detail,
            "UnquantizedFusedMoEMethod");

  Result<std::optional<QuantPlan>> lut = Online("lut_b_moe", "vllm");
  ASSERT_TRUE(lut.ok() && lut->has_value()) << lut.status().message();
  EXPECT_EQ(DecideSite(**lut, Site("model.layers.0.mlp.down_proj", SiteKind::kLinear)).kind,
            DecisionKind::kUnquantized);
  const Decision experts = DecideSite(**lut, Site("model.layers.1.mlp.experts", SiteKind::kMoe));
  ASSERT_EQ(experts.kind, DecisionKind::kQuantized);
  EXPECT_EQ(experts.detail, "LutBOnlineMoEMethod");
  EXPECT_EQ(experts.scheme->weight.dtype, QDType::kLUTB);
  EXPECT_EQ(experts.scheme->weight.block_shape, (std::array<int64_t, 2>{8, 64}));
  EXPECT_EQ(experts.scheme->input->dtype, QDType::kMXFP8);
  EXPECT_EQ(experts.scheme->CanonicalName(), "w3a8-lutb-online");

  // 0.33 registers neither.
  Result<std::optional<QuantPlan>> old = Online("lut_b_moe", "vllm@0.33");
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.status().message().find("vllm@0.34 on"), std::string::npos)
      << old.status().message();
}

TEST(VllmOnline, OnlyTheVllmReleasesReadThem) {
  for (const char* dialect : {"native", "vllm@helpers", "sglang@0.5.23"}) {
    Result<std::optional<QuantPlan>> plan = Online("mxfp8", dialect);
    ASSERT_FALSE(plan.ok()) << dialect;
    EXPECT_NE(plan.status().message().find("vLLM's online shorthand"), std::string::npos)
        << plan.status().message();
  }
  // Never detected from files: they describe no checkpoint.
  EXPECT_FALSE(FindImporter("fp8_per_channel")
                   ->Detect(family_test::Embedded(R"({"quant_method": "fp8_per_channel"})")));
}

}  // namespace
}  // namespace quantpath
