// GPTQ importer: the decoder-block scope of the native dialect (optimum's convert_model), and the
// rows of the current engine releases (vllm@0.33, sglang@0.5.23) that the recorded cases in
// tests/data/oracle/releases/ do not reach.
#include <gtest/gtest.h>

#include "tests/importers/gptq_family_test_util.h"

namespace quantpath {
namespace {

using family_test::Contains;
using family_test::Embedded;
using family_test::Experts;
using family_test::Import;
using family_test::Kind;
using family_test::MustImport;
using family_test::Qkv;
using family_test::Site;

std::string Config(std::string_view fields) {
  return R"({"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": true, )" +
         std::string(fields) + "}";
}

const std::string kPlain = Config(R"("desc_act": false)");
const LayerSite kDown = Site("model.layers.0.mlp.down_proj");
const LayerSite kHead = Site("lm_head", SiteKind::kLmHead);

LayerSite OutsideBlocks(std::string path) {
  LayerSite site = Site(std::move(path));
  site.in_decoder_block = false;
  return site;
}

TEST(GptqNativeBlocks, OnlyTheDecoderBlocksAreQuantized) {
  QuantPlan plan = MustImport(Embedded(kPlain), "native");
  ASSERT_TRUE(plan.blocks_only);
  EXPECT_EQ(*plan.blocks_only, "");
  EXPECT_EQ(Kind(plan, kDown), "quantized");
  // A vision tower's linear layers sit outside the blocks optimum converts.
  EXPECT_EQ(Kind(plan, OutsideBlocks("visual.blocks.0.attn.qkv")), "unquantized");
  // The engines quantize every linear layer the config reaches (the recorded vLLM, without a
  // block list, reaches none).
  for (std::string_view dialect : {"sglang@helpers", "vllm@0.33", "sglang@0.5.23"}) {
    QuantPlan engine = MustImport(Embedded(kPlain), dialect);
    EXPECT_FALSE(engine.blocks_only) << dialect;
    EXPECT_EQ(Kind(engine, OutsideBlocks("visual.blocks.0.attn.qkv")), "quantized") << dialect;
  }
}

TEST(GptqNativeBlocks, BlockNameToQuantizeNamesTheBlocks) {
  std::string config = Config(R"("desc_act": false, "block_name_to_quantize": "transformer.h")");
  QuantPlan plan = MustImport(Embedded(config), "native");
  ASSERT_TRUE(plan.blocks_only);
  EXPECT_EQ(*plan.blocks_only, "transformer.h");
  EXPECT_EQ(Kind(plan, Site("transformer.h.0.attn.c_attn")), "quantized");
  EXPECT_EQ(Kind(plan, Site("transformer.visual.attn_pool.kv_proj")), "unquantized");
  // A prefix of the block name is not the block ("transformer.h" vs "transformer.hx").
  EXPECT_EQ(Kind(plan, Site("transformer.hx.0.attn.c_attn")), "unquantized");
  Result<QuantPlan> bad =
      Import(Embedded(Config(R"("desc_act": false, "block_name_to_quantize": ["model.layers"])")),
             "native");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Contains(bad.status().message(), "block_name_to_quantize"));
}

TEST(GptqSglangCurrent, OnlyMarlinCompatibleCheckpointsLoad) {
  for (std::string_view config : {
           R"({"quant_method": "gptq", "bits": 3, "group_size": 128, "sym": true,
               "desc_act": false})",
           R"({"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": false,
               "desc_act": false})",
           R"({"quant_method": "gptq", "bits": 4, "group_size": 256, "sym": true,
               "desc_act": false})",
           // No desc_act: is_gptq_marlin_compatible needs every field.
           R"({"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": true})",
       }) {
    Result<QuantPlan> plan = Import(Embedded(config), "sglang@0.5.23");
    ASSERT_FALSE(plan.ok()) << config;
    EXPECT_TRUE(Contains(plan.status().message(),
                         "ValueError: Unknown quantization method: gptq. Must be "
                         "one of ['fp8', "))
        << plan.status().message();
  }
  // The older SGLang code ran those on its plain GPTQ kernel.
  EXPECT_TRUE(Import(Embedded(R"({"quant_method": "gptq", "bits": 3, "group_size": 128,
      "sym": true, "desc_act": false})"),
                     "sglang@helpers")
                  .ok());
}

TEST(GptqSglangCurrent, UserGptqBypassesMarlinAndNamesAnUnknownMethod) {
  // override_quantization_method picks gptq_marlin only without a name or with marlin /
  // gptq_marlin; an explicit "gptq" keeps a method SGLang 0.5.23 no longer registers.
  Result<QuantPlan> plan = ImportPlan(Embedded(kPlain), family_test::D("sglang@0.5.23"), "gptq");
  ASSERT_FALSE(plan.ok());
  EXPECT_TRUE(Contains(plan.status().message(),
                       "Unknown quantization method: gptq. Must be one "
                       "of ['fp8', "))
      << plan.status().message();
  EXPECT_TRUE(Contains(plan.status().message(), "--quantization gptq"));
  // "gptq_marlin" (an alias of the same importer) is the name that keeps Marlin.
  EXPECT_TRUE(ImportPlan(Embedded(kPlain), family_test::D("sglang@0.5.23"), "gptq_marlin").ok());
}

TEST(GptqSglangCurrent, MarlinMoeMethodAndEmbeddingMethodForASkippedHead) {
  QuantPlan plan =
      MustImport(Embedded(Config(R"("desc_act": false, "lm_head": true, "dynamic": {"-:lm_head": {},
          "-:.*experts.*": {}})")),
                 "sglang@0.5.23");
  Decision head = DecideSite(plan, kHead);
  EXPECT_EQ(head.kind, DecisionKind::kUnquantized);
  EXPECT_EQ(head.detail, "UnquantizedEmbeddingMethod");
  // FusedMoE gets GPTQMarlinMoEMethod before `dynamic` is consulted.
  Decision experts = DecideSite(plan, Experts("model.layers.0.mlp.experts"));
  EXPECT_EQ(experts.kind, DecisionKind::kQuantized);
  EXPECT_EQ(experts.detail, "GPTQMarlinMoEMethod[bits=4 group_size=128 desc_act=False sym=True]");
}

TEST(GptqVllmCurrent, ActOrderIsRejectedUnlessOneGroupPerChannel) {
  Result<QuantPlan> act_order = Import(Embedded(Config(R"("desc_act": true)")), "vllm@0.33");
  ASSERT_FALSE(act_order.ok());
  EXPECT_TRUE(Contains(act_order.status().message(),
                       "GPTQ group activation ordering (desc_act=True) is no longer supported"));
  EXPECT_TRUE(Import(Embedded(Config(R"("desc_act": true)")), "vllm@helpers").ok());
  std::string channel = R"({"quant_method": "gptq", "bits": 4, "group_size": -1, "sym": true,
      "desc_act": true})";
  EXPECT_TRUE(Import(Embedded(channel), "vllm@0.33").ok());
  // A "+:" override inherits the base desc_act as written and may not give it groups.
  std::string override = R"({"quant_method": "gptq", "bits": 4, "group_size": -1, "sym": true,
      "desc_act": true, "dynamic": {"-:.*gate.*": {"group_size": 32},
      "+:.*down_proj": {"group_size": 64}}})";
  Result<QuantPlan> bad = Import(Embedded(override), "vllm@0.33");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Contains(bad.status().message(), "enabled by dynamic rule '+:.*down_proj'"));
}

TEST(GptqVllmCurrent, AutoGptqMethodsAndAnEmptyBlockListQuantizesEverything) {
  EXPECT_EQ(FindImporter("auto_gptq"), FindImporter("gptq"));
  std::string config = Config(R"("desc_act": false, "dynamic": {"-:.*experts.*": {}})");
  QuantPlan plan = MustImport(Embedded(config), "vllm@0.33");
  Decision down = DecideSite(plan, kDown);
  EXPECT_EQ(down.kind, DecisionKind::kQuantized);
  EXPECT_EQ(down.detail, "AutoGPTQLinearMethod[bits=4 group_size=128 desc_act=False sym=True]");
  EXPECT_EQ(Kind(plan, Qkv("model.layers.0")), "quantized");
  Decision experts = DecideSite(plan, Experts("model.layers.0.mlp.experts"));
  EXPECT_EQ(experts.kind, DecisionKind::kUnquantized);
  EXPECT_EQ(experts.detail, "UnquantizedFusedMoEMethod");
  // The recorded vLLM quantized no linear layer when the list stayed empty.
  EXPECT_EQ(Kind(MustImport(Embedded(config), "vllm@helpers"), kDown), "unquantized");
}

}  // namespace
}  // namespace quantpath
