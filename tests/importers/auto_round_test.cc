// AutoRound importer: the corpus' Qwen3.6 AutoRound-AWQ export (embedded + standalone copies in
// different key order), and quant_method "auto-round" configs with blocks and extra_config.
#include <gtest/gtest.h>

#include "fmt/format.h"

#include "tests/importers/gptq_family_test_util.h"

namespace quantpath {
namespace {

using family_test::Contains;
using family_test::Corpus;
using family_test::Embedded;
using family_test::Files;
using family_test::HasNote;
using family_test::Import;
using family_test::Kind;
using family_test::MustImport;
using family_test::Qkv;
using family_test::Scheme;
using family_test::Site;

constexpr char kQwen36[] = "hualayn__ai-articles__Qwen3.6-27B-AutoRound-AWQ";

TEST(AutoRoundCorpus, Qwen36CopiesInAnotherKeyOrderAgree) {
  for (std::string_view dialect : {"native", "vllm@helpers", "sglang@helpers"}) {
    Result<QuantPlan> plan = Import(Corpus(kQwen36), dialect);
    ASSERT_TRUE(plan.ok()) << dialect << ": " << plan.status().message();
    EXPECT_EQ(plan->importer, "auto-round");
    EXPECT_EQ(plan->quant_method, "awq");
    ASSERT_TRUE(plan->default_action.scheme);
    EXPECT_EQ(plan->default_action.scheme->CanonicalName(), "w4a16-int4-g128-asym");
    EXPECT_FALSE(HasNote(*plan, "warning")) << dialect;
    EXPECT_TRUE(HasNote(*plan, "written by AutoRound"));
    EXPECT_TRUE(HasNote(*plan, "autoround_version"));
  }
}

TEST(AutoRoundCorpus, Qwen36ModulesToNotConvert) {
  LayerSite listed = Site("model.language_model.layers.43.mlp.gate_proj");
  LayerSite bare_suffix = Site("model.language_model.layers.3.self_attn.o_proj");
  LayerSite vision = Site("model.visual.blocks.0.attn.qkv");
  LayerSite plain = Site("model.language_model.layers.0.mlp.down_proj");
  for (std::string_view dialect : {"native", "vllm@helpers", "sglang@helpers"}) {
    QuantPlan plan = MustImport(Corpus(kQwen36), dialect);
    EXPECT_EQ(Kind(plan, listed), "unquantized") << dialect;
    EXPECT_EQ(Kind(plan, bare_suffix), "unquantized") << dialect;
    EXPECT_EQ(Kind(plan, vision), "unquantized") << dialect;
    EXPECT_EQ(Kind(plan, plain), "quantized") << dialect;
  }
}

TEST(AutoRoundCorpus, DisagreeingCopiesAreAnError) {
  std::string embedded = R"({"quantization_config": {"quant_method": "awq", "bits": 4,
      "group_size": 128, "zero_point": true, "provider": "auto-round"}})";
  std::string standalone = R"({"bits": 4, "group_size": 32, "zero_point": true,
      "quant_method": "awq", "provider": "auto-round"})";
  Result<QuantPlan> plan = Import(
      Files({{"config.json", embedded}, {"quantization_config.json", standalone}}), "native");
  ASSERT_FALSE(plan.ok());
  EXPECT_TRUE(Contains(plan.status().message(), "quantization_config.json#/group_size"));
  EXPECT_TRUE(Contains(plan.status().message(), "config.json#/quantization_config/group_size"));
}

std::string AutoRound(std::string_view extra) {
  return R"({"quant_method": "auto-round", "bits": 4, "group_size": 128, "sym": true,
      "packing_format": "auto_round:auto_gptq", )" +
         std::string(extra) + "}";
}

TEST(AutoRoundMethod, BlocksAndExtraConfig) {
  std::string config = AutoRound(R"("to_quant_block_names": "model.layers.1",
      "extra_config": {"model.layers.1.mlp.down_proj": {"bits": 8},
                       "model.layers.1.self_attn.o_proj": {"bits": 16},
                       "lm_head": {"bits": 4, "group_size": 32}})");
  LayerSite head = Site("lm_head", SiteKind::kLmHead);
  for (std::string_view dialect : {"native", "vllm@helpers"}) {
    QuantPlan plan = MustImport(Embedded(config), dialect);
    EXPECT_EQ(Scheme(plan, Site("model.layers.1.mlp.down_proj")), "w8a16-int8-g128") << dialect;
    EXPECT_EQ(Kind(plan, Site("model.layers.1.self_attn.o_proj")), "unquantized") << dialect;
    EXPECT_EQ(Scheme(plan, Site("model.layers.1.mlp.up_proj")), "w4a16-int4-g128") << dialect;
    EXPECT_EQ(Kind(plan, Site("model.layers.2.mlp.up_proj")), "unquantized") << dialect;
    EXPECT_EQ(Scheme(plan, head), "w4a16-int4-g32") << dialect;
  }
  // vLLM tests name.startswith(block); AutoRound expands a block string into its numbered children.
  LayerSite layer10 = Site("model.layers.10.mlp.up_proj");
  EXPECT_EQ(Kind(MustImport(Embedded(config), "vllm@helpers"), layer10), "quantized");
  EXPECT_EQ(Kind(MustImport(Embedded(config), "native"), layer10), "unquantized");
}

TEST(AutoRoundMethod, FusedShardsNeedOneConfigInVllm) {
  QuantPlan plan = MustImport(
      Embedded(AutoRound(R"("extra_config": {"model.layers.0.self_attn.q_proj": {"bits": 8}})")),
      "vllm@helpers");
  EXPECT_EQ(DecideSite(plan, Qkv("model.layers.0")).detail,
            "ValueError: Fused module 'model.layers.0.self_attn.qkv_proj' requires consistent "
            "quant config for ['q_proj', 'k_proj', 'v_proj']");
  EXPECT_EQ(Kind(plan, Qkv("model.layers.1")), "quantized");
  EXPECT_EQ(Kind(plan, Site("lm_head", SiteKind::kLmHead)), "unquantized");
}

TEST(AutoRoundMethod, PackingSetsTheLayout) {
  QuantPlan awq = MustImport(Embedded(R"({"quant_method": "auto-round", "bits": 4,
      "group_size": 128, "sym": false, "packing_format": "auto_round:auto_awq"})"),
                             "native");
  ASSERT_TRUE(awq.default_action.scheme);
  EXPECT_EQ(awq.default_action.scheme->weight.load.layout, SourceLayout::kAwqGemm);
  EXPECT_EQ(awq.default_action.scheme->CanonicalName(), "w4a16-int4-g128-asym");
  QuantPlan gptq = MustImport(Embedded(AutoRound(R"("backend": "auto")")), "native");
  ASSERT_TRUE(gptq.default_action.scheme);
  EXPECT_EQ(gptq.default_action.scheme->weight.load.layout, SourceLayout::kGptqV1);
}

// auto-round's MX exports (data_type mx_fp, packing auto_round:llm_compressor) natively:
// compressed-tensors' MX tensors, MX activations per 32 where act_bits is under 16; extra_config's
// 16 bits leave a layer unquantized.
TEST(AutoRoundMethod, MxExportsAreCompressedTensorsMxNatively) {
  const auto mx = [](std::string_view fields) {
    return fmt::format(R"({{"quant_method": "auto-round", "data_type": "mx_fp",
        "packing_format": "auto_round:llm_compressor", "sym": true, {}}})",
                       fields);
  };
  QuantPlan w4a4 = MustImport(
      Embedded(mx(R"("bits": 4, "group_size": 32, "act_bits": 4, "act_data_type": "mx_fp")")),
      "native");
  ASSERT_TRUE(w4a4.default_action.scheme);
  EXPECT_EQ(w4a4.default_action.scheme->CanonicalName(), "w4a4-mxfp4");
  EXPECT_EQ(w4a4.default_action.scheme->weight.load.layout, SourceLayout::kCtMxfp4PackQuantized);
  QuantPlan w8a16 = MustImport(Embedded(mx(R"("bits": 8, "group_size": 32)")), "native");
  ASSERT_TRUE(w8a16.default_action.scheme);
  EXPECT_EQ(w8a16.default_action.scheme->CanonicalName(), "w8a16-mxfp8");
  EXPECT_EQ(w8a16.default_action.scheme->weight.load.layout, SourceLayout::kCtFloatQuantized);
  Result<QuantPlan> group64 = Import(Embedded(mx(R"("bits": 4, "group_size": 64)")), "native");
  ASSERT_FALSE(group64.ok());
  EXPECT_TRUE(Contains(group64.status().message(), "groups of 32")) << group64.status().message();
}

// Under vLLM (whose INCConfig reads mx_fp and fp), and natively without the llm_compressor
// packing: not supported, saying who reads it and that auto-round's llm_compressor export is
// read. SGLang 0.5.23's AutoRoundConfig raises on any type but int, and vLLM's INCConfig on
// nv_fp: their errors.
TEST(AutoRoundMethod, NonIntegerDataTypesAreRejected) {
  for (const char* dialect : {"native", "vllm@0.33", "vllm@0.34"}) {
    Result<QuantPlan> plan = Import(Embedded(AutoRound(R"("data_type": "mx_fp")")), dialect);
    ASSERT_FALSE(plan.ok());
    EXPECT_EQ(plan.status().code(), ErrorCode::kUnsupported) << dialect;
    EXPECT_TRUE(Contains(plan.status().message(), "data_type \"mx_fp\""));
    EXPECT_TRUE(Contains(plan.status().message(), "through INCConfig"));
    EXPECT_TRUE(Contains(plan.status().message(), "format \"llm_compressor\""));
  }
  Result<QuantPlan> sglang =
      Import(Embedded(AutoRound(R"("data_type": "mx_fp")")), "sglang@0.5.23");
  ASSERT_FALSE(sglang.ok());
  EXPECT_EQ(sglang.status().code(), ErrorCode::kInvalidInput);
  EXPECT_TRUE(Contains(sglang.status().message(),
                       "ValueError: Unsupported data_type: mx_fp, currently only support  {'int'}"))
      << sglang.status().message();
  Result<QuantPlan> nv_fp = Import(Embedded(AutoRound(R"("data_type": "nv_fp")")), "vllm@0.34");
  ASSERT_FALSE(nv_fp.ok());
  EXPECT_TRUE(Contains(nv_fp.status().message(), "ValueError: Unsupported data_type: nv_fp"))
      << nv_fp.status().message();
}

}  // namespace
}  // namespace quantpath
