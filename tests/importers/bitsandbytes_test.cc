// bitsandbytes importer: the corpus' NF4 configs, 4-bit vs 8-bit, double quant, compute vs storage
// dtype, and llm_int8_skip_modules in transformers' and vLLM's semantics.
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

const LayerSite kHead = Site("lm_head", SiteKind::kLmHead);

std::string Nf4(std::string_view skips) {
  return R"({"quant_method": "bitsandbytes", "load_in_4bit": true, "bnb_4bit_quant_type": "nf4",
      "bnb_4bit_compute_dtype": "bfloat16", "llm_int8_skip_modules": )" +
         std::string(skips) + "}";
}

TEST(BitsAndBytesCorpus, MolmoNf4) {
  for (std::string_view dialect : {"native", "vllm@helpers"}) {
    QuantPlan plan = MustImport(Corpus("reubzdubz__Molmo7B_D_NF4Quant"), dialect);
    EXPECT_EQ(plan.importer, "bitsandbytes");
    ASSERT_TRUE(plan.default_action.scheme);
    const TensorQuant& w = plan.default_action.scheme->weight;
    EXPECT_EQ(plan.default_action.scheme->CanonicalName(), "w4a16-nf4");
    EXPECT_EQ(w.group_size, 64);
    EXPECT_EQ(w.load.layout, SourceLayout::kBnb4bit);
    EXPECT_FALSE(w.load.double_quant);
    EXPECT_TRUE(HasNote(plan, "block size 64 assumed"));
    EXPECT_TRUE(HasNote(plan, "bnb_4bit_compute_dtype float16"));
    EXPECT_TRUE(HasNote(plan, "bnb_4bit_quant_storage uint8"));
    // A leading path in both semantics.
    EXPECT_EQ(
        Kind(plan, Site("model.vision_backbone.image_vit.transformer.resblocks.0.attention.wq")),
        "unquantized")
        << dialect;
    EXPECT_EQ(Kind(plan, Site("model.transformer.blocks.0.att_proj")), "quantized") << dialect;
  }
}

TEST(BitsAndBytesCorpus, OrpheusDoubleQuantAndALayerSpecificSkip) {
  ConfigSources sources = Corpus("DocWobble__Orpheus_3B_Quantized-bnb-nf4");
  for (std::string_view dialect : {"native", "vllm@helpers"}) {
    QuantPlan plan = MustImport(sources, dialect);
    ASSERT_TRUE(plan.default_action.scheme);
    EXPECT_TRUE(plan.default_action.scheme->weight.load.double_quant);
    EXPECT_EQ(Kind(plan, Qkv("model.layers.0")), "unquantized") << dialect;
    EXPECT_EQ(Kind(plan, Qkv("model.layers.1")), "quantized") << dialect;
    EXPECT_EQ(Kind(plan, Qkv("model.layers.10")), "quantized") << dialect;
    EXPECT_EQ(Kind(plan, kHead), "unquantized") << dialect;
  }
}

TEST(BitsAndBytesSkips, VllmComponentsAndLeadingPaths) {
  QuantPlan plan = MustImport(
      Embedded(Nf4(R"(["down_proj", "mlp.gate_up_proj", "layers.1.self_attn", "model.layers.2"])")),
      "vllm@helpers");
  EXPECT_EQ(Kind(plan, Site("model.layers.0.mlp.down_proj")), "unquantized");
  // A dotted fragment in the middle of the path never matches.
  EXPECT_EQ(Kind(plan, GateUp("model.layers.0")), "quantized");
  EXPECT_EQ(Kind(plan, Qkv("model.layers.1")), "quantized");
  EXPECT_EQ(Kind(plan, Qkv("model.layers.2")), "unquantized");
  EXPECT_EQ(DecideSite(plan, Qkv("model.layers.3")).detail, "BitsAndBytesLinearMethod");
  // Experts and the head get no bitsandbytes method in vLLM.
  EXPECT_EQ(Kind(plan, Experts("model.layers.0.mlp.experts")), "unquantized");
  EXPECT_EQ(Kind(plan, kHead), "unquantized");
  // SGLang quantizes every FusedMoE, whatever the list says.
  QuantPlan sglang = MustImport(Embedded(Nf4(R"(["experts"])")), "sglang@helpers");
  EXPECT_EQ(Kind(sglang, Experts("model.layers.0.mlp.experts")), "quantized");
}

TEST(BitsAndBytesSkips, NativeFollowsShouldConvertModuleOnLegs) {
  QuantPlan plan =
      MustImport(Embedded(Nf4(R"(["gate_proj", "up_proj", "model.layers.2"])")), "native");
  // The legs gate_proj and up_proj both end with a listed name.
  EXPECT_EQ(Kind(plan, GateUp("model.layers.0")), "unquantized");
  EXPECT_EQ(Kind(plan, Qkv("model.layers.2")), "unquantized");
  EXPECT_EQ(Kind(plan, Qkv("model.layers.20")), "quantized");
  // An explicit list replaces transformers' default skips: the head is converted unless listed.
  EXPECT_EQ(Kind(plan, kHead), "quantized");
  EXPECT_EQ(Kind(MustImport(Embedded(Nf4("null")), "native"), kHead), "unquantized");
}

TEST(BitsAndBytesFields, EightBitIsInt8PerChannel) {
  QuantPlan plan = MustImport(Embedded(R"({"quant_method": "bitsandbytes", "load_in_8bit": true,
      "llm_int8_threshold": 5.0})"),
                              "native");
  ASSERT_TRUE(plan.default_action.scheme);
  EXPECT_EQ(plan.default_action.scheme->CanonicalName(), "w8a16-int8-channel");
  EXPECT_EQ(plan.default_action.scheme->weight.load.layout, SourceLayout::kBnb8bit);
  EXPECT_TRUE(HasNote(plan, "llm_int8_threshold 5"));
}

TEST(BitsAndBytesFields, WidthsAndStorage) {
  std::string both = R"({"quant_method": "bitsandbytes", "load_in_4bit": true,
      "load_in_8bit": true})";
  EXPECT_FALSE(Import(Embedded(both), "native").ok());
  EXPECT_EQ(Scheme(MustImport(Embedded(both), "vllm@helpers"), Site("a.b")), "w8a16-int8-channel");
  // Neither flag: 4-bit fp4, the default quant type.
  EXPECT_EQ(Scheme(MustImport(Embedded(R"({"quant_method": "bitsandbytes"})"), "vllm@helpers"),
                   Site("a.b")),
            "w4a16-fp4");
  std::string storage = R"({"quant_method": "bitsandbytes", "load_in_4bit": true,
      "bnb_4bit_quant_storage": "bfloat16"})";
  Result<QuantPlan> vllm = Import(Embedded(storage), "vllm@helpers");
  ASSERT_FALSE(vllm.ok());
  EXPECT_TRUE(Contains(vllm.status().message(), "Unsupported bnb_4bit_quant_storage: bfloat16"));
  EXPECT_TRUE(Import(Embedded(storage), "native").ok());
}

TEST(BitsAndBytesCurrent, VllmDroppedTheMethodSglangKeepsIt) {
  std::string config = Nf4(R"(["experts"])");
  Result<QuantPlan> vllm = Import(Embedded(config), "vllm@0.33");
  ASSERT_FALSE(vllm.ok());
  EXPECT_TRUE(Contains(vllm.status().message(),
                       "ValueError: Unknown quantization method: bitsandbytes. Must be one of "
                       "['awq', 'auto_awq', "));
  QuantPlan sglang = MustImport(Embedded(config), "sglang@0.5.23");
  Decision experts = DecideSite(sglang, Experts("model.layers.0.mlp.experts"));
  EXPECT_EQ(experts.kind, DecisionKind::kQuantized);
  EXPECT_EQ(experts.detail, "BitsAndBytesMoEMethod");
  EXPECT_EQ(DecideSite(sglang, Qkv("model.layers.0")).detail, "BitsAndBytesLinearMethod");
}

TEST(BitsAndBytesSkips, NativeRegexEndsAtAModuleBoundary) {
  // transformers 5.24 should_convert_module: re.match(rf"(?:{key})(?:(?<=\.)|(?=\.|$))", name)
  // or name.endswith(key).
  QuantPlan plan = MustImport(Embedded(Nf4(R"(["model.layers.1", "model.layers.2.", "mlp.gate",
      "layers.3.*"])")),
                              "native");
  EXPECT_EQ(Kind(plan, Qkv("model.layers.1")), "unquantized");
  EXPECT_EQ(Kind(plan, Qkv("model.layers.10")), "quantized");
  EXPECT_EQ(Kind(plan, Site("model.layers.10.mlp.down_proj")), "quantized");
  // The key's dots are regex wildcards: "model.layers.2." matches "model.layers.2." and also
  // "model.layers.20" (the last "." takes the "0", and a boundary follows).
  EXPECT_EQ(Kind(plan, Site("model.layers.2.mlp.down_proj")), "unquantized");
  EXPECT_EQ(Kind(plan, Site("model.layers.20.mlp.down_proj")), "unquantized");
  EXPECT_EQ(Kind(plan, Site("model.layers.200.mlp.down_proj")), "quantized");
  // "mlp.gate" neither starts the name nor ends it, and stops short of a boundary in gate_proj.
  EXPECT_EQ(Kind(plan, GateUp("model.layers.4")), "quantized");
  // Regex keys are anchored at the start only: "layers.3.*" does not start "model.layers.3…".
  EXPECT_EQ(Kind(plan, Site("model.layers.3.mlp.down_proj")), "quantized");
}

}  // namespace
}  // namespace quantpath
