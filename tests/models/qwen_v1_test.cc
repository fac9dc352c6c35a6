// QWenLMHeadModel: Qwen-VL-Chat-Int4 from the corpus against its checkpoint index (GPTQ language
// model, unquantized vision tower) and the published sizes, plus the text-only form.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "fmt/format.h"
#include "quantpath/models.h"
#include "tests/models/models_test_util.h"

namespace quantpath {
namespace {

using models_test::IndexTensorNames;
using models_test::LinearModulePaths;
using models_test::RelativeError;
using models_test::SiteOrLegOf;
using models_test::SiteParamsWhere;
using models_test::SitesFromCorpus;
using models_test::SitesFromText;
using ::testing::HasSubstr;

constexpr const char* kFolder = "Qwen__Qwen-VL-Chat-Int4";

bool IsVisual(const LayerSite& s) { return s.path.starts_with("transformer.visual."); }

TEST(QwenV1, LanguageModelSites) {
  auto r = SitesFromCorpus(kFolder);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelSites& m = *r;
  EXPECT_EQ(m.architecture, "QWenLMHeadModel");
  EXPECT_EQ(m.torch_dtype, QDType::kFP16);
  // config.json: hidden 4096, 32 layers, 32 heads, intermediate 22016 (w1, w2: 11008 each).
  const LayerSite* c_attn = m.Find("transformer.h.31.attn.c_attn");
  ASSERT_NE(c_attn, nullptr);
  EXPECT_EQ(c_attn->module_class, "QKVParallelLinear");
  EXPECT_TRUE(c_attn->legs.empty());
  EXPECT_TRUE(c_attn->bias);
  EXPECT_EQ(*c_attn->shape, (std::array<int64_t, 2>{3 * 4096, 4096}));
  EXPECT_FALSE(m.Find("transformer.h.0.attn.c_proj")->bias);
  const LayerSite* gate_up = m.Find("transformer.h.0.mlp.gate_up_proj");
  ASSERT_NE(gate_up, nullptr);
  ASSERT_EQ(gate_up->legs.size(), 2u);
  // vLLM stacks w2 as the gate (shard 0) and w1 as the up projection.
  EXPECT_EQ(gate_up->LegPath(0), "transformer.h.0.mlp.w2");
  EXPECT_EQ(gate_up->LegPath(1), "transformer.h.0.mlp.w1");
  EXPECT_EQ(gate_up->legs[0].rows, 22016 / 2);
  EXPECT_EQ(*m.Find("transformer.h.0.mlp.c_proj")->shape, (std::array<int64_t, 2>{4096, 11008}));
  EXPECT_EQ(m.Find("transformer.h.0.attn.attn")->kind, SiteKind::kAttention);
  EXPECT_EQ(m.sites.front().path, "transformer.wte");
  EXPECT_EQ(m.sites.back().path, "lm_head");
  ASSERT_EQ(m.packed_modules_mapping.size(), 2u);
  EXPECT_EQ(m.packed_modules_mapping[1].second, (std::vector<std::string>{"w2", "w1"}));
}

TEST(QwenV1, VisionTowerSites) {
  auto r = SitesFromCorpus(kFolder);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // visual: width 1664, 48 layers, mlp_ratio 4.9231 (int(1664 × 4.9231) = 8192), output_dim 4096.
  const std::string block = "transformer.visual.transformer.resblocks.47";
  EXPECT_EQ(*r->Find(block + ".attn.in_proj")->shape, (std::array<int64_t, 2>{3 * 1664, 1664}));
  EXPECT_EQ(*r->Find(block + ".mlp.c_fc")->shape, (std::array<int64_t, 2>{8192, 1664}));
  EXPECT_EQ(*r->Find(block + ".mlp.c_proj")->shape, (std::array<int64_t, 2>{1664, 8192}));
  const LayerSite* kv = r->Find("transformer.visual.attn_pool.kv_proj");
  ASSERT_NE(kv, nullptr);
  EXPECT_FALSE(kv->bias);
  EXPECT_EQ(*kv->shape, (std::array<int64_t, 2>{4096, 1664}));
  EXPECT_EQ(r->Find("transformer.visual.attn_pool.attn.out_proj")->params, 4096 * 4096 + 4096);
  // The tower comes after the language model's blocks and before the head.
  const std::vector<std::string> paths = models_test::Paths(*r);
  EXPECT_EQ(paths[paths.size() - 2], "transformer.visual.attn_pool.attn.out_proj");
  EXPECT_EQ(std::count_if(r->sites.begin(), r->sites.end(), IsVisual), 48 * 4 + 2);
}

// Every GPTQ-quantized tensor belongs to a site or a leg; every linear site's weight (quantized
// or not) is in the checkpoint.
TEST(QwenV1, SitesAgreeWithTheCheckpointIndex) {
  auto r = SitesFromCorpus(kFolder);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto names = IndexTensorNames(kFolder);
  ASSERT_TRUE(names.ok()) << names.status().message();
  std::set<std::string> tensors(names->begin(), names->end());
  int quantized = 0;
  for (const std::string& name : *names) {
    if (!name.ends_with(".qweight")) continue;
    ++quantized;
    const std::string module(ParentPath(name));
    const LayerSite* site = SiteOrLegOf(*r, module);
    ASSERT_NE(site, nullptr) << name;
    EXPECT_FALSE(IsVisual(*site)) << name;
  }
  EXPECT_EQ(quantized, 32 * 5);  // c_attn, c_proj, w1, w2, mlp.c_proj per block
  for (const std::string& path : LinearModulePaths(*r)) {
    EXPECT_TRUE(tensors.contains(path + ".qweight") || tensors.contains(path + ".weight")) << path;
  }
  for (const char* path : {"transformer.wte", "lm_head"}) {
    EXPECT_TRUE(tensors.contains(std::string(path) + ".weight")) << path;
  }
}

TEST(QwenV1, PublishedSizes) {
  auto r = SitesFromCorpus(kFolder);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Qwen-VL paper, table 1: language model 7.7B, vision encoder 1.9B, adapter 0.08B; their sum is
  // 9.68B (the paper rounds the total to 9.6B).
  EXPECT_LT(RelativeError(r->TotalParams(), 9.68e9), 0.005) << r->TotalParams();
  const int64_t language = SiteParamsWhere(*r, [](const LayerSite& s) { return !IsVisual(s); });
  EXPECT_LT(RelativeError(language, 7.7e9), 0.005) << language;
}

TEST(QwenV1, TextOnlyConfigHasNoVisionTower) {
  const std::string config = R"({"architectures": ["QWenLMHeadModel"], "hidden_size": 64,
      "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 96,
      "vocab_size": 100, "kv_channels": 16})";
  auto r = SitesFromText(config);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(std::count_if(r->sites.begin(), r->sites.end(), IsVisual), 0);
  EXPECT_EQ(r->sites.size(), 2u + 2 * 5);
  const int64_t h = 64;
  const int64_t per_layer = 3 * h * h + 3 * h + h * h + 3 * h * 48;
  EXPECT_EQ(r->SiteParams(), 2 * per_layer + 2 * 100 * h);
  EXPECT_EQ(r->other_params, 2 * 2 * h + h);  // ln_1, ln_2 per block, ln_f

  auto odd = SitesFromText(R"({"architectures": ["QWenLMHeadModel"], "hidden_size": 64,
      "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 97,
      "vocab_size": 100})");
  ASSERT_FALSE(odd.ok());
  EXPECT_THAT(odd.status().message(), HasSubstr("config.json#/intermediate_size"));
  auto ratio = SitesFromText(R"({"architectures": ["QWenLMHeadModel"], "hidden_size": 64,
      "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 96,
      "vocab_size": 100, "visual": {"width": 32, "layers": 1, "patch_size": 14,
      "mlp_ratio": "4", "output_dim": 128}})");
  ASSERT_FALSE(ratio.ok());
  EXPECT_THAT(ratio.status().message(), HasSubstr("config.json#/visual/mlp_ratio"));
}

}  // namespace
}  // namespace quantpath
