// AWQ importer: the legacy AutoAWQ standalone file, embedded configs, version and zero_point
// facts, and modules_to_not_convert in each dialect's semantics.
#include <gtest/gtest.h>

#include "tests/importers/gptq_family_test_util.h"

namespace quantpath {
namespace {

using family_test::Contains;
using family_test::Corpus;
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

// Qwen2.5-7B-Instruct-AWQ's block (seed 000 §1.2).
constexpr char kQwenAwq[] = R"({"quant_method": "awq", "bits": 4, "group_size": 128,
    "zero_point": true, "version": "gemm", "modules_to_not_convert": null})";

std::string WithSkips(std::string_view skips) {
  return R"({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": true,
      "version": "gemm", "modules_to_not_convert": )" +
         std::string(skips) + "}";
}

const LayerSite kDown = Site("model.layers.0.mlp.down_proj");

TEST(AwqCorpus, LegacyStandaloneQuantConfig) {
  for (std::string_view dialect : {"native", "vllm@helpers", "sglang@helpers"}) {
    QuantPlan plan = MustImport(Corpus("Weni__ZeroShot-Agents-Llama3-4.0.24-DPO-AWQ"), dialect);
    EXPECT_EQ(plan.importer, "awq");
    ASSERT_FALSE(plan.sources.empty());
    EXPECT_EQ(plan.sources[0].ToString(), "quant_config.json");
    ASSERT_TRUE(plan.default_action.scheme);
    const TensorQuant& w = plan.default_action.scheme->weight;
    EXPECT_EQ(plan.default_action.scheme->CanonicalName(), "w4a16-int4-g128-asym") << dialect;
    EXPECT_EQ(w.load.layout, SourceLayout::kAwqGemm);
    EXPECT_EQ(w.load.zero_point, ZeroPointConvention::kStored);
  }
  EXPECT_EQ(
      DecideSite(MustImport(Corpus("Weni__ZeroShot-Agents-Llama3-4.0.24-DPO-AWQ"), "vllm@helpers"),
                 kDown)
          .detail,
      "AWQMarlinLinearMethod");
}

TEST(AwqFields, VersionIsALoaderFactNotAKernel) {
  QuantPlan gemm = MustImport(Embedded(kQwenAwq), "native");
  EXPECT_TRUE(HasNote(gemm, "does not choose the kernel"));
  QuantPlan gemv = MustImport(Embedded(R"({"quant_method": "awq", "bits": 4, "group_size": 64,
      "zero_point": false, "version": "GEMV"})"),
                              "native");
  ASSERT_TRUE(gemv.default_action.scheme);
  EXPECT_EQ(gemv.default_action.scheme->weight.load.layout, SourceLayout::kAwqGemv);
  EXPECT_EQ(gemv.default_action.scheme->CanonicalName(), "w4a16-int4-g64");
  Result<QuantPlan> marlin = Import(Embedded(R"({"quant_method": "awq", "bits": 4,
      "group_size": 128, "zero_point": false, "version": "marlin"})"),
                                    "native");
  ASSERT_FALSE(marlin.ok());
  EXPECT_EQ(marlin.status().code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(Contains(marlin.status().message(), "config.json#/quantization_config/version"));
}

TEST(AwqFields, OnlyFourBits) {
  std::string eight =
      R"({"quant_method": "awq", "bits": 8, "group_size": 128, "zero_point": true})";
  Result<QuantPlan> vllm = Import(Embedded(eight), "vllm@helpers");
  ASSERT_FALSE(vllm.ok());
  EXPECT_TRUE(Contains(vllm.status().message(),
                       "Currently, only 4-bit weight quantization is supported for AWQ, but got 8 "
                       "bits."));
  EXPECT_FALSE(Import(Embedded(eight), "native").ok());
  Result<QuantPlan> missing = Import(Embedded(R"({"quant_method": "awq", "bits": 4,
      "group_size": 128})"),
                                     "vllm@helpers");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(Contains(missing.status().message(), "Cannot find any of ['zero_point']"));
}

TEST(AwqSkips, TransformersSemanticsInNative) {
  QuantPlan plan = MustImport(
      Embedded(WithSkips(R"(["visual", "self_attn.o_proj", "mlp.gate", "model.layers.1"])")),
      "native");
  // Suffix: "…self_attn.o_proj" ends with the entry.
  EXPECT_EQ(Kind(plan, Site("model.layers.0.self_attn.o_proj")), "unquantized");
  // Regex from the start of the name, ending at a module boundary.
  EXPECT_EQ(Kind(plan, Site("model.layers.1.mlp.down_proj")), "unquantized");
  EXPECT_EQ(Kind(plan, Site("model.layers.10.mlp.down_proj")), "quantized");
  // "visual" neither starts nor ends "model.visual.blocks.0.attn.qkv".
  EXPECT_EQ(Kind(plan, Site("model.visual.blocks.0.attn.qkv")), "quantized");
  // "mlp.gate" does not reach gate_proj / up_proj (the legs of gate_up_proj).
  EXPECT_EQ(Kind(plan, GateUp("model.layers.0")), "quantized");
  EXPECT_EQ(Kind(plan, Site("lm_head", SiteKind::kLmHead)), "unquantized");
}

TEST(AwqSkips, VllmSubstringPerShard) {
  QuantPlan plan = MustImport(Embedded(WithSkips(R"(["visual", "self_attn.o_proj", "mlp.gate"])")),
                              "vllm@helpers");
  EXPECT_EQ(Kind(plan, Site("model.visual.blocks.0.attn.qkv")), "unquantized");
  EXPECT_EQ(DecideSite(plan, Site("model.layers.0.self_attn.o_proj")).detail,
            "UnquantizedLinearMethod");
  // "mlp.gate" is part of the gate_proj shard only: the shards disagree.
  Decision gate_up = DecideSite(plan, GateUp("model.layers.0"));
  EXPECT_EQ(gate_up.kind, DecisionKind::kError);
  EXPECT_TRUE(Contains(gate_up.detail, "Detected some but not all shards"));
  EXPECT_EQ(Kind(plan, Qkv("model.layers.0")), "quantized");
  EXPECT_EQ(Kind(plan, Experts("model.layers.0.mlp.experts")), "quantized");
}

TEST(AwqSkips, SglangSubstringOnTheExecutionName) {
  QuantPlan plan =
      MustImport(Embedded(WithSkips(R"(["visual", "q_proj", "mlp.gate"])")), "sglang@helpers");
  EXPECT_EQ(Kind(plan, Site("model.visual.blocks.0.attn.qkv")), "unquantized");
  // No shard expansion: "q_proj" is not part of "qkv_proj", "mlp.gate" is part of
  // "mlp.gate_up_proj".
  EXPECT_EQ(Kind(plan, Qkv("model.layers.0")), "quantized");
  EXPECT_EQ(Kind(plan, GateUp("model.layers.0")), "unquantized");
}

TEST(AwqFields, LmHeadOnlyInVllmWhenAsked) {
  std::string config = R"({"quant_method": "awq", "bits": 4, "group_size": 128,
      "zero_point": true, "lm_head": true})";
  LayerSite head = Site("lm_head", SiteKind::kLmHead);
  EXPECT_EQ(Kind(MustImport(Embedded(config), "vllm@helpers"), head), "quantized");
  EXPECT_EQ(Kind(MustImport(Embedded(config), "native"), head), "unquantized");
  EXPECT_EQ(Scheme(MustImport(Embedded(kQwenAwq), "vllm@helpers"), kDown), "w4a16-int4-g128-asym");
}

TEST(AwqVllmCurrent, ListedFusedNameFirstThenShardsMustAgree) {
  EXPECT_EQ(FindImporter("auto_awq"), FindImporter("awq"));
  QuantPlan plan = MustImport(
      Embedded(WithSkips(R"(["mlp.gate", "layers.1.self_attn.q_proj", "layers.2.self_attn.qkv_proj",
          "model.layers.3.mlp.experts"])")),
      "vllm@0.33");
  // "mlp.gate" is part of the fused name itself: skipped before the shards are looked at.
  Decision gate_up = DecideSite(plan, GateUp("model.layers.0"));
  EXPECT_EQ(gate_up.kind, DecisionKind::kUnquantized);
  EXPECT_EQ(gate_up.detail, "UnquantizedLinearMethod");
  EXPECT_EQ(Kind(plan, Qkv("model.layers.2")), "unquantized");
  Decision partial = DecideSite(plan, Qkv("model.layers.1"));
  EXPECT_EQ(partial.kind, DecisionKind::kError);
  EXPECT_EQ(partial.detail,
            "ValueError: Detected some but not all shards of model.layers.1.self_attn.qkv_proj are "
            "quantized. All shards of fused layers to have the same precision.");
  EXPECT_EQ(DecideSite(plan, kDown).detail, "AutoAWQMarlinLinearMethod");
  EXPECT_EQ(DecideSite(plan, Experts("model.layers.3.mlp.experts")).detail,
            "UnquantizedFusedMoEMethod");
  EXPECT_EQ(DecideSite(plan, Experts("model.layers.4.mlp.experts")).detail, "AutoAWQMoEMethod");
  // A group size Marlin cannot run stays on the plain AutoAWQ kernel.
  QuantPlan g256 = MustImport(Embedded(R"({"quant_method": "awq", "bits": 4, "group_size": 256,
      "zero_point": true})"),
                              "vllm@0.33");
  EXPECT_EQ(DecideSite(g256, kDown).detail, "AutoAWQLinearMethod");
}

TEST(AwqVllmCurrent, EightBitsRejectedWithTheAutoAwqText) {
  Result<QuantPlan> plan = Import(Embedded(R"({"quant_method": "awq", "bits": 8,
      "group_size": 128, "zero_point": true})"),
                                  "vllm@0.33");
  ASSERT_FALSE(plan.ok());
  EXPECT_TRUE(Contains(plan.status().message(),
                       "ValueError: Unsupported num_bits = 8. Supported: 4. For 8-bit AWQ, use "
                       "Marlin backend by setting backend='awq:marlin' or backend='marlin'."));
}

TEST(AwqSglangCurrent, MarlinTakesExpertsAndTheHeadThePlainKernelDoesNot) {
  std::string marlin = R"({"quant_method": "awq", "bits": 4, "group_size": 128,
      "zero_point": true, "lm_head": true, "modules_to_not_convert": ["layers.0.mlp.experts"]})";
  QuantPlan plan = MustImport(Embedded(marlin), "sglang@0.5.23");
  EXPECT_EQ(DecideSite(plan, kDown).detail, "AWQLinearMethod");
  EXPECT_EQ(Kind(plan, Site("lm_head", SiteKind::kLmHead)), "quantized");
  EXPECT_EQ(DecideSite(plan, Experts("model.layers.1.mlp.experts")).detail, "AWQMoEMethod");
  Decision skipped = DecideSite(plan, Experts("model.layers.0.mlp.experts"));
  EXPECT_EQ(skipped.kind, DecisionKind::kUnquantized);
  EXPECT_EQ(skipped.detail, "get_quant_method returned None");
  // Legacy keys (w_bit, q_group_size) are not Marlin-compatible for SGLang: plain AWQConfig,
  // which leaves experts and the head without a method.
  QuantPlan legacy = MustImport(Embedded(R"({"quant_method": "awq", "w_bit": 4,
      "q_group_size": 128, "zero_point": true, "lm_head": true})"),
                                "sglang@0.5.23");
  EXPECT_EQ(Kind(legacy, kDown), "quantized");
  EXPECT_EQ(Kind(legacy, Experts("model.layers.1.mlp.experts")), "unquantized");
  EXPECT_EQ(Kind(legacy, Site("lm_head", SiteKind::kLmHead)), "unquantized");
  EXPECT_TRUE(HasNote(legacy, "plain AWQ kernel"));
}

TEST(AwqSglangCurrent, UserAwqKeepsThePlainMethod) {
  std::string config = R"({"quant_method": "awq", "bits": 4, "group_size": 128,
      "zero_point": true, "lm_head": true})";
  const LayerSite head = Site("lm_head", SiteKind::kLmHead);
  const LayerSite experts = Experts("model.layers.0.mlp.experts");
  // An explicit "awq" stops override_quantization_method from choosing awq_marlin.
  Result<QuantPlan> plain = ImportPlan(Embedded(config), family_test::D("sglang@0.5.23"), "awq");
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(DecideSite(*plain, kDown).detail, "AWQLinearMethod");
  EXPECT_EQ(Kind(*plain, experts), "unquantized");
  EXPECT_EQ(Kind(*plain, head), "unquantized");
  EXPECT_TRUE(HasNote(*plain, "--quantization awq keeps the plain AWQ method"));
  // "awq_marlin" (an alias of the same importer) lets Marlin take the experts and the head.
  Result<QuantPlan> marlin =
      ImportPlan(Embedded(config), family_test::D("sglang@0.5.23"), "awq_marlin");
  ASSERT_TRUE(marlin.ok()) << marlin.status().message();
  EXPECT_EQ(DecideSite(*marlin, experts).detail, "AWQMoEMethod");
  EXPECT_EQ(Kind(*marlin, head), "quantized");
}

}  // namespace
}  // namespace quantpath
