// GPTQ `dynamic`: first hit in document order, "-:" vs "+:" vs no prefix, overrides, re.match
// anchoring, invalid regexes, and how each dialect treats fused layers and experts.
#include <gtest/gtest.h>

#include "tests/importers/gptq_family_test_util.h"

namespace quantpath {
namespace {

using family_test::Contains;
using family_test::Embedded;
using family_test::Experts;
using family_test::GateUp;
using family_test::HasNote;
using family_test::Import;
using family_test::Kind;
using family_test::MustImport;
using family_test::Qkv;
using family_test::Scheme;
using family_test::Site;

std::string WithDynamic(std::string_view dynamic, std::string_view extra = "") {
  std::string text = R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
      "desc_act": false, "sym": true, "dynamic": )" +
                     std::string(dynamic);
  if (!extra.empty()) text += ", " + std::string(extra);
  return text + "}";
}

const LayerSite kDown1 = Site("model.layers.1.mlp.down_proj");
const LayerSite kDown10 = Site("model.layers.10.mlp.down_proj");
const LayerSite kDown2 = Site("model.layers.2.mlp.down_proj");

TEST(GptqDynamic, FirstHitInDocumentOrderWins) {
  QuantPlan plus_first = MustImport(
      Embedded(WithDynamic(R"({"+:.*\\.1\\..*": {"bits": 8}, "-:.*\\.1\\..*": {}})")), "native");
  EXPECT_EQ(Scheme(plus_first, kDown1), "w8a16-int8-g128");
  QuantPlan minus_first = MustImport(
      Embedded(WithDynamic(R"({"-:.*\\.1\\..*": {}, "+:.*\\.1\\..*": {"bits": 8}})")), "native");
  EXPECT_EQ(Kind(minus_first, kDown1), "unquantized");
  EXPECT_EQ(Scheme(minus_first, kDown2), "w4a16-int4-g128");
}

TEST(GptqDynamic, NoPrefixMeansOverride) {
  QuantPlan plan = MustImport(
      Embedded(WithDynamic(R"({".*\\.1\\..*": {"group_size": 32, "sym": false}})")), "native");
  EXPECT_EQ(Scheme(plan, kDown1), "w4a16-int4-g32-asym");
  EXPECT_EQ(Scheme(plan, kDown2), "w4a16-int4-g128");
}

TEST(GptqDynamic, ReMatchAnchorsAtTheStartOnly) {
  // "model.layers.1" also reaches "model.layers.10…"; without ".*" the pattern must match from
  // the first character.
  QuantPlan plan = MustImport(
      Embedded(WithDynamic(R"({"-:model\\.layers\\.1": {}, "-:layers\\.2": {}})")), "native");
  EXPECT_EQ(Kind(plan, kDown1), "unquantized");
  EXPECT_EQ(Kind(plan, kDown10), "unquantized");
  EXPECT_EQ(Kind(plan, kDown2), "quantized");
}

TEST(GptqDynamic, OverridesChangeEveryField) {
  QuantPlan plan = MustImport(
      Embedded(WithDynamic(
          R"({"+:.*down_proj": {"bits": 8, "group_size": -1, "desc_act": true, "sym": true,
              "damp_percent": 0.05}})")),
      "native");
  Decision d = DecideSite(plan, kDown2);
  ASSERT_TRUE(d.scheme);
  EXPECT_EQ(d.scheme->CanonicalName(), "w8a16-int8-channel");
  EXPECT_TRUE(d.scheme->weight.load.act_order);
  EXPECT_TRUE(HasNote(plan, "damp_percent"));
}

TEST(GptqDynamic, InvalidRegexNamesTheKeysPointer) {
  Result<QuantPlan> plan =
      Import(Embedded(WithDynamic(R"({"+:model.(layers": {"bits": 8}})")), "native");
  ASSERT_FALSE(plan.ok());
  EXPECT_TRUE(
      Contains(plan.status().message(), "config.json#/quantization_config/dynamic/+:model.(layers"))
      << plan.status().message();
}

TEST(GptqDynamic, NativeRejectsAnOverrideOfTheWrongTypeEnginesIgnoreIt) {
  std::string config = WithDynamic(R"({"+:.*": {"bits": "8"}})");
  Result<QuantPlan> native = Import(Embedded(config), "native");
  ASSERT_FALSE(native.ok());
  EXPECT_TRUE(Contains(native.status().message(), "/dynamic/+:.*/bits"));
  QuantPlan vllm = MustImport(
      Embedded(WithDynamic(R"({"+:.*": {"bits": "8"}})", R"("modules_in_block_to_quantize":
          ["mlp"])")),
      "vllm@helpers");
  EXPECT_EQ(DecideSite(vllm, kDown2).detail,
            "GPTQMarlinLinearMethod[bits=4 group_size=128 desc_act=False sym=True]");
}

TEST(GptqDynamic, NativeMatchesLegsVllmMatchesTheFusedName) {
  // GPTQModel sees q_proj, k_proj and v_proj on their own: a skip of one leg is a fused layer
  // whose legs disagree.
  Decision native =
      DecideSite(MustImport(Embedded(WithDynamic(R"({"-:.*\\.q_proj": {}})")), "native"),
                 Qkv("model.layers.0"));
  EXPECT_EQ(native.kind, DecisionKind::kError);
  // vLLM and SGLang test the execution name, which this pattern does not reach.
  std::string listed = R"("modules_in_block_to_quantize": ["self_attn", "mlp"])";
  std::string q_proj = WithDynamic(R"({"-:.*\\.q_proj": {}})", listed);
  EXPECT_EQ(Kind(MustImport(Embedded(q_proj), "vllm@helpers"), Qkv("model.layers.0")), "quantized");
  EXPECT_EQ(Kind(MustImport(Embedded(q_proj), "sglang@helpers"), Qkv("model.layers.0")),
            "quantized");
  // A pattern written for the fused name reaches it in the engines only.
  EXPECT_EQ(
      Kind(MustImport(Embedded(WithDynamic(R"({"-:.*gate_up_proj": {}})", listed)), "vllm@helpers"),
           GateUp("model.layers.0")),
      "unquantized");
  EXPECT_EQ(Kind(MustImport(Embedded(WithDynamic(R"({"-:.*gate_up_proj": {}})")), "native"),
                 GateUp("model.layers.0")),
            "quantized");
}

TEST(GptqDynamic, VllmRaisesForOverridesMarlinCannotRun) {
  QuantPlan plan = MustImport(
      Embedded(WithDynamic(R"({"+:.*self_attn.*": {"bits": 3}, "+:.*mlp.*": {"group_size": 256}})",
                           R"("modules_in_block_to_quantize": ["self_attn", "mlp"])")),
      "vllm@helpers");
  Decision attn = DecideSite(plan, Site("model.layers.0.self_attn.o_proj"));
  EXPECT_EQ(attn.kind, DecisionKind::kError);
  EXPECT_EQ(attn.detail, "ValueError: Unsupported quantization config: bits=3, sym=True");
  Decision mlp = DecideSite(plan, kDown2);
  EXPECT_EQ(mlp.kind, DecisionKind::kError);
  EXPECT_TRUE(Contains(mlp.detail, "Marlin does not support group_size = 256"));
  // The same 3-bit override is a valid GPTQModel config.
  QuantPlan native =
      MustImport(Embedded(WithDynamic(R"({"+:.*self_attn.*": {"bits": 3}})")), "native");
  EXPECT_EQ(Scheme(native, Site("model.layers.0.self_attn.o_proj")), "w3a16-int3-g128");
}

TEST(GptqDynamic, ExpertsFollowDynamicExceptInSglang) {
  std::string config = WithDynamic(R"({"-:.*experts.*": {}})", R"("modules_in_block_to_quantize":
      ["self_attn"])");
  LayerSite experts = Experts("model.layers.1.mlp.experts");
  EXPECT_EQ(Kind(MustImport(Embedded(config), "native"), experts), "unquantized");
  EXPECT_EQ(Kind(MustImport(Embedded(config), "vllm@helpers"), experts), "unquantized");
  // SGLang returns GPTQMarlinMoEMethod before it looks at `dynamic`.
  EXPECT_EQ(Kind(MustImport(Embedded(config), "sglang@helpers"), experts), "quantized");
}

TEST(GptqDynamic, ANegativeRuleCanSkipTheHead) {
  QuantPlan plan =
      MustImport(Embedded(WithDynamic(R"({"-:lm_head": {}})", R"("lm_head": true)")), "native");
  EXPECT_EQ(Kind(plan, Site("lm_head", SiteKind::kLmHead)), "unquantized");
  EXPECT_EQ(Kind(plan, kDown2), "quantized");
}

}  // namespace
}  // namespace quantpath
