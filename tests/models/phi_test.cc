// PhiForCausalLM: phi-2 from the corpus (an exact published count) and the config rules.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fmt/format.h"
#include "quantpath/models.h"
#include "tests/models/models_test_util.h"

namespace quantpath {
namespace {

using models_test::Paths;
using models_test::SitesFromCorpus;
using models_test::SitesFromText;
using ::testing::HasSubstr;

TEST(Phi, Phi2) {
  auto r = SitesFromCorpus("KeshavArvindh__phi-2-GPTQ-optimum");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelSites& m = *r;
  EXPECT_EQ(m.architecture, "PhiForCausalLM");
  // phi-2: 2,779,683,840 parameters (Microsoft's model card). The count is exact.
  EXPECT_EQ(m.TotalParams(), 2'779'683'840);
  const LayerSite* qkv = m.Find("model.layers.31.self_attn.qkv_proj");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->LegPath(2), "model.layers.31.self_attn.v_proj");
  EXPECT_TRUE(qkv->bias);
  const LayerSite* dense = m.Find("model.layers.31.self_attn.dense");
  ASSERT_NE(dense, nullptr);
  EXPECT_EQ(dense->module_class, "RowParallelLinear");
  EXPECT_TRUE(dense->bias);
  EXPECT_EQ(m.Find("model.layers.31.self_attn.o_proj"), nullptr);
  const LayerSite* head = m.Find("lm_head");
  EXPECT_TRUE(head->bias);
  EXPECT_EQ(head->params, 51200 * 2560 + 51200);
}

TEST(Phi, SitesInConstructionOrder) {
  auto r = SitesFromText(R"({"architectures": ["PhiForCausalLM"], "hidden_size": 64,
      "num_hidden_layers": 1, "num_attention_heads": 4, "intermediate_size": 96,
      "vocab_size": 100})");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Paths(*r), (std::vector<std::string>{
                           "model.embed_tokens", "model.layers.0.self_attn.qkv_proj",
                           "model.layers.0.self_attn.dense", "model.layers.0.self_attn.attn",
                           "model.layers.0.mlp.fc1", "model.layers.0.mlp.fc2", "lm_head"}));
  const int64_t h = 64;
  const int64_t i = 96;
  EXPECT_EQ(r->SiteParams(), (3 * h * h + 3 * h) + (h * h + h) + (i * h + i) + (h * i + h) +
                                 100 * h + (100 * h + 100));
  EXPECT_EQ(r->other_params, 2 * h + 2 * h);  // input_layernorm, final_layernorm (with biases)
}

TEST(Phi, TiedHeadIsUnsupported) {
  auto r = SitesFromText(R"({"architectures": ["PhiForCausalLM"], "hidden_size": 64,
      "num_hidden_layers": 1, "num_attention_heads": 4, "vocab_size": 100,
      "tie_word_embeddings": true})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
  EXPECT_THAT(r.status().message(), HasSubstr("config.json#/tie_word_embeddings"));
}

}  // namespace
}  // namespace quantpath
