// mxfp4 importer: gpt-oss' config from the corpus (experts MXFP4, everything else 16 bits) and the
// dialects' different use of modules_to_not_convert.
#include <gtest/gtest.h>

#include "tests/importers/gptq_family_test_util.h"

namespace quantpath {
namespace {

using family_test::Corpus;
using family_test::Embedded;
using family_test::Experts;
using family_test::HasNote;
using family_test::Kind;
using family_test::MustImport;
using family_test::Qkv;
using family_test::Scheme;
using family_test::Site;

TEST(Mxfp4Corpus, GptOssExpertsOnly) {
  for (std::string_view dialect : {"native", "vllm@helpers", "sglang@helpers"}) {
    QuantPlan plan = MustImport(Corpus("openai__gpt-oss-20b"), dialect);
    EXPECT_EQ(plan.importer, "mxfp4");
    LayerSite experts = Experts("model.layers.0.mlp.experts");
    EXPECT_EQ(Scheme(plan, experts), "w4a16-mxfp4") << dialect;
    Decision d = DecideSite(plan, experts);
    ASSERT_TRUE(d.scheme);
    EXPECT_EQ(d.scheme->weight.group_size, 32);
    EXPECT_TRUE(d.scheme->weight.micro_scaled);
    EXPECT_EQ(d.scheme->weight.load.layout, SourceLayout::kGptOssMxfp4);
    EXPECT_EQ(Kind(plan, Qkv("model.layers.0")), "unquantized") << dialect;
    EXPECT_EQ(Kind(plan, Site("model.layers.0.self_attn.o_proj")), "unquantized") << dialect;
    EXPECT_EQ(Kind(plan, Site("model.layers.0.mlp.router", SiteKind::kRouter)), "unquantized");
    EXPECT_EQ(Kind(plan, Site("lm_head", SiteKind::kLmHead)), "unquantized");
  }
  EXPECT_TRUE(HasNote(MustImport(Corpus("openai__gpt-oss-20b"), "vllm@helpers"),
                      "does not read modules_to_not_convert"));
}

TEST(Mxfp4Skips, OnlyTransformersReadsTheListForExperts) {
  std::string config = R"({"quant_method": "mxfp4",
      "modules_to_not_convert": ["model.layers.1.mlp.experts", "model.layers.*.self_attn"]})";
  LayerSite layer1 = Experts("model.layers.1.mlp.experts");
  LayerSite layer10 = Experts("model.layers.10.mlp.experts");
  QuantPlan native = MustImport(Embedded(config), "native");
  EXPECT_EQ(Kind(native, layer1), "unquantized");
  EXPECT_EQ(Kind(native, layer10), "quantized");
  EXPECT_EQ(Kind(MustImport(Embedded(config), "vllm@helpers"), layer1), "quantized");
}

}  // namespace
}  // namespace quantpath
