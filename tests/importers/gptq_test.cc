// GPTQ importer: the corpus configs (embedded, standalone, both) and synthetic edge cases of
// bits / group_size / desc_act / sym, checkpoint_format, lm_head, modules_in_block_to_quantize
// and `dynamic`, decided on hand-built sites in every dialect.
#include <gtest/gtest.h>

#include "tests/importers/gptq_family_test_util.h"

namespace quantpath {
namespace {

using family_test::Contains;
using family_test::Corpus;
using family_test::Embedded;
using family_test::Files;
using family_test::GateUp;
using family_test::HasNote;
using family_test::Import;
using family_test::Kind;
using family_test::MustImport;
using family_test::Qkv;
using family_test::Scheme;
using family_test::Site;

constexpr char kBase[] =
    R"("quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": false, "sym": true)";

std::string Config(std::string_view extra = "") {
  std::string text = std::string("{") + kBase;
  if (!extra.empty()) text += ", " + std::string(extra);
  return text + "}";
}

const LayerSite kDown = Site("model.layers.0.mlp.down_proj");
const LayerSite kLmHead = Site("lm_head", SiteKind::kLmHead);

TEST(GptqCorpus, QwenVlChatInt4EmbeddedAndStandaloneAgree) {
  ConfigSources sources = Corpus("Qwen__Qwen-VL-Chat-Int4");
  QuantPlan plan = MustImport(sources, "native");
  EXPECT_EQ(plan.importer, "gptq");
  ASSERT_FALSE(plan.sources.empty());
  EXPECT_EQ(plan.sources[0].ToString(), "config.json#/quantization_config");
  ASSERT_TRUE(plan.default_action.scheme);
  const TensorQuant& w = plan.default_action.scheme->weight;
  EXPECT_EQ(plan.default_action.scheme->CanonicalName(), "w4a16-int4-g128");
  EXPECT_EQ(w.load.layout, SourceLayout::kGptqV1);
  EXPECT_EQ(w.load.zero_point, ZeroPointConvention::kStoredMinusOne);
  EXPECT_FALSE(w.load.act_order);
  // Quantization-time fields are shown, never decide.
  EXPECT_TRUE(HasNote(plan, "damp_percent"));
  EXPECT_TRUE(HasNote(plan, "static_groups"));
  EXPECT_FALSE(HasNote(plan, "warning"));
  EXPECT_EQ(Kind(plan, Site("transformer.h.0.attn.c_attn")), "quantized");
  EXPECT_EQ(Kind(plan, kLmHead), "unquantized");
}

TEST(GptqCorpus, Phi2OptimumDisagreementOnAKernelHintIsAWarning) {
  QuantPlan plan = MustImport(Corpus("KeshavArvindh__phi-2-GPTQ-optimum"), "native");
  EXPECT_TRUE(HasNote(plan, "warning: config.json#/quantization_config/disable_exllama = true"));
  EXPECT_TRUE(HasNote(plan, "quantize_config.json#/disable_exllama = false"));
  EXPECT_TRUE(HasNote(plan, "model_seqlen"));
  EXPECT_EQ(Scheme(plan, kDown), "w4a16-int4-g128");
}

TEST(GptqCorpus, StandaloneOnlyEightBitActOrder) {
  for (std::string_view dialect : {"native", "vllm@helpers", "sglang@helpers"}) {
    QuantPlan plan = MustImport(Corpus("sehyun66__kullm-GPTQ-8bit-standalone"), dialect);
    ASSERT_FALSE(plan.sources.empty());
    EXPECT_EQ(plan.sources[0].ToString(), "quantize_config.json") << dialect;
    ASSERT_TRUE(plan.default_action.scheme) << dialect;
    EXPECT_EQ(plan.default_action.scheme->CanonicalName(), "w8a16-int8-g128");
    EXPECT_TRUE(plan.default_action.scheme->weight.load.act_order);
  }
}

TEST(GptqCorpus, LegacyFoldersWithoutEmbeddedConfigReadTheStandaloneFile) {
  for (std::string_view folder :
       {"TheBloke__WizardCoder-15B-1.0-GPTQ", "TheBloke__wizard-mega-13B-GPTQ"}) {
    QuantPlan plan = MustImport(Corpus(folder), "native");
    ASSERT_FALSE(plan.sources.empty()) << folder;
    EXPECT_EQ(plan.sources[0].file, "quantize_config.json") << folder;
    EXPECT_EQ(Scheme(plan, kDown), "w4a16-int4-g128") << folder;
  }
}

TEST(GptqCorpus, EightBitBranchRunsOnMarlin) {
  ConfigSources sources =
      Corpus("TheBloke__Wizard-Vicuna-30B-Uncensored-GPTQ@gptq-8bit-128g-actorder_False");
  // vLLM reads the quantized layers from the checkpoint when the config does not list them.
  sources.set_checkpoint_quantized_params({"model.layers.0.mlp.down_proj.qweight"});
  EXPECT_EQ(DecideSite(MustImport(sources, "vllm@helpers"), kDown).detail,
            "GPTQMarlinLinearMethod[bits=8 group_size=128 desc_act=False sym=True]");
}

TEST(GptqCorpus, ThreeBitPerChannelActOrder) {
  ConfigSources sources = Corpus("TheBloke__Genz-70b-GPTQ");
  QuantPlan plan = MustImport(sources, "native");
  ASSERT_TRUE(plan.default_action.scheme);
  EXPECT_EQ(plan.default_action.scheme->CanonicalName(), "w3a16-int3-channel");
  EXPECT_TRUE(plan.default_action.scheme->weight.load.act_order);
  // The recorded vLLM cases run GPTQMarlinConfig, whose (bits, sym) table has no 3-bit entry.
  Result<QuantPlan> vllm = Import(sources, "vllm@helpers");
  ASSERT_FALSE(vllm.ok());
  EXPECT_TRUE(Contains(vllm.status().message(),
                       "ValueError: Unsupported quantization config: bits=3, sym=True"));
  // SGLang falls back to its GPTQ kernel for a config Marlin cannot run.
  QuantPlan sglang = MustImport(sources, "sglang@helpers");
  EXPECT_EQ(Kind(sglang, kDown), "quantized");
  EXPECT_TRUE(HasNote(sglang, "GPTQ kernel"));
}

TEST(GptqCorpus, MlxConfigIsNotMistakenForGptq) {
  Result<QuantPlan> plan = Import(Corpus("Qwen__Qwen3-14B-MLX-4bit"), "native");
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(Contains(plan.status().message(), "MLX"));
}

TEST(GptqFields, WidthsGroupsAndActOrder) {
  EXPECT_EQ(Scheme(MustImport(Embedded(R"({"quant_method": "gptq", "bits": 2, "group_size": 64,
      "desc_act": false, "sym": false})"),
                              "native"),
                   kDown),
            "w2a16-int2-g64-asym");
  QuantPlan channel = MustImport(Embedded(R"({"quant_method": "gptq", "bits": 8, "group_size": -1,
      "desc_act": true, "sym": true, "modules_in_block_to_quantize": ["mlp"]})"),
                                 "vllm@helpers");
  // Act-order with one group per channel is read as no act-order by Marlin.
  EXPECT_EQ(DecideSite(channel, kDown).detail,
            "GPTQMarlinLinearMethod[bits=8 group_size=-1 desc_act=False sym=True]");
  EXPECT_TRUE(HasNote(channel, "desc_act with group_size -1"));
  Result<QuantPlan> five = Import(Embedded(R"({"quant_method": "gptq", "bits": 5,
      "group_size": 128})"),
                                  "native");
  ASSERT_FALSE(five.ok());
  EXPECT_TRUE(Contains(five.status().message(), "config.json#/quantization_config/bits"));
  EXPECT_TRUE(Contains(five.status().message(), "found 5"));
}

TEST(GptqFields, NativeDefaultsAreNotedAndEnginesRequireTheFields) {
  ConfigSources sources = Embedded(R"({"quant_method": "gptq", "bits": 4})");
  QuantPlan native = MustImport(sources, "native");
  EXPECT_EQ(Scheme(native, kDown), "w4a16-int4-g128");
  EXPECT_TRUE(HasNote(native, "no \"desc_act\"; assumed false"));
  Result<QuantPlan> vllm = Import(sources, "vllm@helpers");
  ASSERT_FALSE(vllm.ok());
  EXPECT_TRUE(Contains(vllm.status().message(),
                       "Cannot find any of ['group_size'] in the model's quantization config."));
}

TEST(GptqFields, CheckpointFormatSetsTheZeroPointConvention) {
  QuantPlan v2 = MustImport(Embedded(Config(R"("checkpoint_format": "gptq_v2")")), "native");
  ASSERT_TRUE(v2.default_action.scheme);
  EXPECT_EQ(v2.default_action.scheme->weight.load.layout, SourceLayout::kGptqV2);
  EXPECT_EQ(v2.default_action.scheme->weight.load.zero_point, ZeroPointConvention::kStored);
  Result<QuantPlan> marlin = Import(Embedded(Config(R"("checkpoint_format": "marlin")")), "native");
  ASSERT_FALSE(marlin.ok());
  EXPECT_EQ(marlin.status().code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(Contains(marlin.status().message(), "checkpoint_format \"marlin\""));
}

TEST(GptqFields, LmHeadIsQuantizedOnlyWhenAsked) {
  for (std::string_view dialect : {"native", "sglang@helpers"}) {
    EXPECT_EQ(Kind(MustImport(Embedded(Config()), dialect), kLmHead), "unquantized");
    EXPECT_EQ(Kind(MustImport(Embedded(Config(R"("lm_head": true)")), dialect), kLmHead),
              "quantized");
  }
  // vLLM also checks the head against modules_in_block_to_quantize.
  QuantPlan listed = MustImport(
      Embedded(Config(R"("lm_head": true, "modules_in_block_to_quantize": [["lm_head"]])")),
      "vllm@helpers");
  EXPECT_EQ(Kind(listed, kLmHead), "quantized");
}

TEST(GptqBlockList, NativeKeepsLayersWhoseNameEndsWithAnEntry) {
  QuantPlan plan = MustImport(
      Embedded(Config(R"("modules_in_block_to_quantize": [["self_attn.q_proj", "self_attn.k_proj",
          "self_attn.v_proj"], ["mlp.down_proj"]])")),
      "native");
  EXPECT_EQ(Kind(plan, Qkv("model.layers.0")), "quantized");
  EXPECT_EQ(Kind(plan, kDown), "quantized");
  EXPECT_EQ(Kind(plan, Site("model.layers.0.self_attn.o_proj")), "unquantized");
  EXPECT_EQ(Kind(plan, GateUp("model.layers.0")), "unquantized");
  // optimum tests name.endswith(entry): an entry that only occurs inside the name does not count.
  EXPECT_EQ(Kind(plan, Site("model.layers.0.mlp.down_proj.inner")), "unquantized");
}

TEST(GptqBlockList, VllmSubstringWithShardAgreement) {
  QuantPlan plan = MustImport(
      Embedded(Config(R"("modules_in_block_to_quantize": ["self_attn.q_proj", "self_attn.k_proj",
          "mlp.down_proj"])")),
      "vllm@helpers");
  Decision qkv = DecideSite(plan, Qkv("model.layers.0"));
  EXPECT_EQ(qkv.kind, DecisionKind::kError);
  EXPECT_EQ(qkv.detail,
            "ValueError: Detected some but not all shards of model.layers.0.self_attn.qkv_proj are "
            "quantized. All shards of fused layers to have the same precision.");
  EXPECT_EQ(Kind(plan, Site("model.layers.0.mlp.down_proj.inner")), "quantized");
  EXPECT_EQ(DecideSite(plan, Site("model.layers.0.self_attn.o_proj")).detail,
            "UnquantizedLinearMethod");
  // MoE layers ignore the list.
  EXPECT_EQ(Kind(plan, family_test::Experts("model.layers.0.mlp.experts")), "quantized");
}

TEST(GptqBlockList, VllmDerivesTheListFromTheCheckpointWhenAbsent) {
  ConfigSources sources = Embedded(Config());
  QuantPlan unknown = MustImport(sources, "vllm@helpers");
  EXPECT_EQ(Kind(unknown, kDown), "unquantized");
  EXPECT_TRUE(HasNote(unknown, "tensor dtypes are unknown"));
  sources.set_checkpoint_quantized_params({"model.layers.0.mlp.down_proj.qweight"});
  QuantPlan derived = MustImport(sources, "vllm@helpers");
  EXPECT_EQ(Kind(derived, kDown), "quantized");
  EXPECT_EQ(Kind(derived, Site("model.layers.1.mlp.down_proj")), "unquantized");
  // SGLang does not read the list at all.
  EXPECT_EQ(Kind(MustImport(sources, "sglang@helpers"), Site("model.layers.1.mlp.down_proj")),
            "quantized");
}

TEST(GptqSources, EmbeddedAndStandaloneDisagreeingOnBitsIsAnError) {
  ConfigSources sources = Files({{"config.json", "{\"quantization_config\": " + Config() + "}"},
                                 {"quantize_config.json",
                                  R"({"bits": 8, "group_size": 128, "desc_act": false,
                                      "sym": true})"}});
  Result<QuantPlan> plan = Import(sources, "native");
  ASSERT_FALSE(plan.ok());
  const std::string& m = plan.status().message();
  EXPECT_TRUE(Contains(m, "config.json#/quantization_config/bits")) << m;
  EXPECT_TRUE(Contains(m, "quantize_config.json#/bits")) << m;
  EXPECT_TRUE(Contains(m, "\"bits\"")) << m;
}

TEST(GptqSources, AnAbsentFieldEqualToItsDefaultIsNoDisagreement) {
  ConfigSources sources =
      Files({{"config.json", "{\"quantization_config\": " + Config(R"("lm_head": false)") + "}"},
             {"quantize_config.json", R"({"bits": 4, "group_size": 128, "desc_act": false})"}});
  EXPECT_TRUE(Import(sources, "native").ok());
}

}  // namespace
}  // namespace quantpath
