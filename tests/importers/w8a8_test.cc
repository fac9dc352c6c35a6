// SGLang's w8a8_int8 and w8a8_fp8: detection, schemes, the `ignore` semantics of each SGLang
// dialect, the compressed-tensors configs these classes read under --quantization, and the
// rejection in the dialects that have no such method.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "quantpath/importers.h"
#include "quantpath/planner.h"
#include "tests/importers/gptq_family_test_util.h"

namespace quantpath {
namespace {

using family_test::Contains;
using family_test::Embedded;

// The plan of importer `name` for the description, as a forced --quantization would build it.
Result<QuantPlan> Build(std::string_view name, std::string_view config, std::string_view dialect) {
  const Importer* importer = FindImporter(name);
  EXPECT_NE(importer, nullptr) << name;
  return importer->BuildPlan(Embedded(config), *ParseDialect(dialect));
}

QuantPlan Plan(std::string_view name, std::string_view config,
               std::string_view dialect = "sglang@0.5.23") {
  Result<QuantPlan> plan = Build(name, config, dialect);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? *plan : QuantPlan{};
}

LayerSite Site(std::string path, SiteKind kind, std::vector<std::string> legs = {}) {
  LayerSite site;
  site.path = std::move(path);
  site.kind = kind;
  for (std::string& leg : legs) site.legs.push_back({std::move(leg), 128});
  return site;
}

LayerSite Qkv(std::string layer) {
  return Site(layer + ".self_attn.qkv_proj", SiteKind::kLinear, {"q_proj", "k_proj", "v_proj"});
}

constexpr std::string_view kCtInt8 = R"({"quant_method": "compressed-tensors",
    "format": "int-quantized", "config_groups": {"group_0": {"targets": ["Linear"],
    "weights": {"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": true}}},
    "ignore": ["lm_head", "model.layers.1.mlp.down_proj"]})";

TEST(W8a8Detect, ByQuantMethodOnly) {
  const Importer* int8 = FindImporter("w8a8_int8");
  const Importer* fp8 = FindImporter("w8a8_fp8");
  ASSERT_NE(int8, nullptr);
  ASSERT_NE(fp8, nullptr);
  EXPECT_TRUE(int8->Detect(Embedded(R"({"quant_method": "W8A8_INT8"})")));
  EXPECT_FALSE(int8->Detect(Embedded(R"({"quant_method": "w8a8_fp8"})")));
  EXPECT_TRUE(fp8->Detect(Embedded(R"({"quant_method": "w8a8_fp8"})")));
  // A compressed-tensors checkpoint is read by these classes only under --quantization.
  EXPECT_FALSE(int8->Detect(Embedded(kCtInt8)));
  EXPECT_FALSE(fp8->Detect(Embedded(kCtInt8)));
}

TEST(W8a8Scheme, Int8PerChannelWeightsAndDynamicPerTokenInput) {
  for (std::string_view dialect : {"sglang@helpers", "sglang@0.5.23"}) {
    QuantPlan plan = Plan("w8a8_int8", R"({"quant_method": "w8a8_int8"})", dialect);
    const QuantScheme& s = *plan.default_action.scheme;
    EXPECT_EQ(s.weight.dtype, QDType::kINT8);
    EXPECT_EQ(s.weight.granularity, Granularity::kPerChannel);
    EXPECT_TRUE(s.weight.symmetric);
    EXPECT_EQ(s.input->dtype, QDType::kINT8);
    EXPECT_EQ(s.input->granularity, Granularity::kPerToken);
    EXPECT_EQ(s.input->dynamic, Dynamic::kDynamic);
    EXPECT_FALSE(s.online);
  }
}

TEST(W8a8Scheme, Int8IsDynamicFalseChangesNothingAndIsNoted) {
  QuantPlan plan = Plan("w8a8_int8", R"({"quant_method": "w8a8_int8", "is_dynamic": false})");
  EXPECT_EQ(plan.default_action.scheme->input->dynamic, Dynamic::kDynamic);
  bool noted = false;
  for (const std::string& note : plan.notes) noted = noted || Contains(note, "is_dynamic false");
  EXPECT_TRUE(noted);
}

TEST(W8a8Scheme, Fp8PerChannelWeightsSerializedOrQuantizedAtLoad) {
  QuantPlan plan = Plan("w8a8_fp8", R"({"quant_method": "w8a8_fp8"})");
  const QuantScheme& s = *plan.default_action.scheme;
  EXPECT_EQ(s.weight.dtype, QDType::kFP8E4M3);
  EXPECT_EQ(s.weight.granularity, Granularity::kPerChannel);
  EXPECT_EQ(s.weight.load.layout, SourceLayout::kFp8Scale);
  EXPECT_EQ(s.input->dtype, QDType::kFP8E4M3);
  EXPECT_EQ(s.input->granularity, Granularity::kPerToken);
  EXPECT_EQ(s.input->dynamic, Dynamic::kDynamic);
  EXPECT_FALSE(s.online);
  EXPECT_FALSE(Plan("w8a8_fp8", kCtInt8).default_action.scheme->online);
  // W8A8Fp8Config tests for "compressed-tensors" (hyphen) only.
  QuantPlan underscore = Plan("w8a8_fp8", R"({"quant_method": "compressed_tensors"})");
  EXPECT_TRUE(underscore.default_action.scheme->online);
  EXPECT_EQ(underscore.default_action.scheme->weight.load.layout, SourceLayout::kDense);
}

TEST(W8a8Dialects, OnlySglangHasTheMethods) {
  for (std::string_view name : {"w8a8_int8", "w8a8_fp8"}) {
    for (std::string_view dialect : {"native", "vllm@helpers", "vllm@0.33"}) {
      std::string config = R"({"quant_method": ")" + std::string(name) + "\"}";
      Result<QuantPlan> plan = Build(name, config, dialect);
      ASSERT_FALSE(plan.ok()) << name << " " << dialect;
      EXPECT_EQ(plan.status().code(), ErrorCode::kUnsupported);
      EXPECT_TRUE(Contains(plan.status().message(), std::string(name) + " is a quantization "
                                                                        "method of SGLang only"))
          << plan.status().message();
      EXPECT_TRUE(Contains(plan.status().message(), "--engine sglang")) << plan.status().message();
    }
  }
}

TEST(W8a8Int8Ignore, DottedSuffixRegexAndFusedNameIn0523) {
  QuantPlan plan = Plan("w8a8_int8", R"({"quant_method": "w8a8_int8", "ignore": [
      "self_attn.o_proj", "model.layers.0.mlp", "Down_Proj", "re:.*mlp\\.gate$",
      "model.layers.2.self_attn.qkv_proj", "model.layers.3.self_attn.q_proj",
      "layers.1.mlp.experts"]})");
  auto decide = [&](const LayerSite& site) { return DecideSite(plan, site); };
  // A dotted suffix, never a parent module and never a different case.
  EXPECT_EQ(decide(Site("model.layers.0.self_attn.o_proj", SiteKind::kLinear)).kind,
            DecisionKind::kUnquantized);
  EXPECT_EQ(decide(Site("model.layers.0.mlp.down_proj", SiteKind::kLinear)).kind,
            DecisionKind::kQuantized);
  EXPECT_EQ(decide(Site("model.layers.0.mlp.gate", SiteKind::kLinear)).kind,
            DecisionKind::kUnquantized);
  // A listed fused name is ignored as itself; otherwise its shards must agree.
  Decision listed = decide(Qkv("model.layers.2"));
  EXPECT_EQ(listed.kind, DecisionKind::kUnquantized);
  EXPECT_EQ(listed.detail, "UnquantizedLinearMethod");
  Decision partial = decide(Qkv("model.layers.3"));
  EXPECT_EQ(partial.kind, DecisionKind::kError);
  EXPECT_EQ(partial.detail,
            "ValueError: Found different quantization schemes for ['q_proj', 'k_proj', 'v_proj'] "
            "in model.layers.3.self_attn.qkv_proj. SGLang requires all to use the same scheme.");
  // The test runs before the layer type: experts are ignored by the same entries.
  EXPECT_EQ(decide(Site("model.layers.0.mlp.experts", SiteKind::kMoe)).kind,
            DecisionKind::kQuantized);
  EXPECT_EQ(decide(Site("model.layers.1.mlp.experts", SiteKind::kMoe)).kind,
            DecisionKind::kUnquantized);
}

TEST(W8a8Int8Ignore, RecordedSglangIsACaseInsensitiveSubstring) {
  QuantPlan plan = Plan("w8a8_int8", R"({"quant_method": "w8a8_int8", "ignore": ["Down_Proj",
      "model.layers.3.self_attn.q_proj"]})",
                        "sglang@helpers");
  EXPECT_EQ(DecideSite(plan, Site("model.layers.0.mlp.down_proj", SiteKind::kLinear)).kind,
            DecisionKind::kUnquantized);
  Decision partial = DecideSite(plan, Qkv("model.layers.3"));
  EXPECT_EQ(partial.kind, DecisionKind::kError);
  EXPECT_TRUE(Contains(partial.detail, "vLLM requires all to use the same scheme"))
      << partial.detail;
}

TEST(W8a8OverCompressedTensors, Int8ReadsTheIgnoreListFp8ReadsNone) {
  const LayerSite down = Site("model.layers.1.mlp.down_proj", SiteKind::kLinear);
  Decision int8 = DecideSite(Plan("w8a8_int8", kCtInt8), down);
  EXPECT_EQ(int8.kind, DecisionKind::kUnquantized);
  EXPECT_TRUE(Contains(int8.rule, "config.json#/quantization_config/ignore/1")) << int8.rule;
  QuantPlan fp8 = Plan("w8a8_fp8", kCtInt8);
  EXPECT_TRUE(fp8.groups.empty());
  EXPECT_EQ(DecideSite(fp8, down).kind, DecisionKind::kQuantized);
  for (const LayerSite& site : {Site("lm_head", SiteKind::kLmHead),
                                Site("model.layers.0.self_attn.attn", SiteKind::kAttention),
                                Site("model.layers.0.mlp.gate", SiteKind::kRouter)}) {
    EXPECT_EQ(DecideSite(fp8, site).kind, DecisionKind::kUnquantized) << site.path;
  }
}

TEST(W8a8Errors, IgnoreMustBeAListOfStrings) {
  Result<QuantPlan> plan =
      Build("w8a8_int8", R"({"quant_method": "w8a8_int8", "ignore": [1]})", "sglang@0.5.23");
  ASSERT_FALSE(plan.ok());
  EXPECT_TRUE(Contains(plan.status().message(), "config.json#/quantization_config/ignore/0"))
      << plan.status().message();
}

}  // namespace
}  // namespace quantpath
